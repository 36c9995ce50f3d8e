//! A read-only view of a database's directory as it was when pinned: each file pinned is
//! held open at the length it had then, and nothing is ever written, renamed or removed
//! in the directory. What the engine would change while opening (recovery's cut of a torn
//! tail, chunks restored from redo, a leftover file removed) is kept in memory over the
//! files instead, so that the view is what a writer opening at that moment would see.
//!
//! It rests on how the engine writes its files: only appended to, past every byte a
//! reader pinned, and replaced or removed whole. An open handle keeps a removed file's
//! bytes (Unix keeps an unlinked file until its last handle goes), and a pinned length
//! hides whatever a writer appends later.

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;

use super::seam::{LockGuard, Storage};
use crate::error::{Error, Result};
use crate::limits::widths::index;

/// A directory seen as it was when its files were pinned (see the module's comment).
pub struct Frozen {
    base: Arc<dyn Storage>,
    /// Shared, so that a read clones a pointer and reads without the lock.
    files: Mutex<BTreeMap<String, Arc<Overlay>>>,
}

/// One file of the view: a pinned file of the directory, or one made in memory.
#[derive(Clone)]
struct Overlay {
    /// The directory's file it reads below `base_len` (`None`: made in memory).
    base_name: Option<String>,
    /// How much of the directory's file shows through: its length when pinned, less
    /// any cut made since.
    base_len: u64,
    /// The file's length in the view.
    len: u64,
    /// Writes made in the view, in order (a later one wins where they overlap).
    patches: Vec<(u64, Vec<u8>)>,
}

/// The lock of a view that takes none: a reader beside a writer.
struct NoLock;

impl LockGuard for NoLock {}

fn not_found(name: &str) -> Error {
    Error::io("open", name, io::Error::from(io::ErrorKind::NotFound))
}

impl Frozen {
    /// A view over `base` with no file pinned yet.
    pub fn new(base: Arc<dyn Storage>) -> Self {
        Frozen {
            base,
            files: Mutex::new(BTreeMap::new()),
        }
    }

    /// Pins file `name` of the directory at its length now (the storage keeps it open);
    /// `false` when there is no such file (any more).
    pub fn pin(&self, name: &str) -> Result<bool> {
        let len = match self.base.len(name) {
            Ok(len) => len,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(false);
            }
            Err(error) => return Err(error),
        };
        let overlay = Overlay {
            base_name: Some(name.to_string()),
            base_len: len,
            len,
            patches: Vec::new(),
        };
        self.files
            .lock()
            .insert(name.to_string(), Arc::new(overlay));
        Ok(true)
    }

    /// The names in the directory now (not the view's: see [`Storage::list`]).
    pub fn list_directory(&self) -> Result<Vec<String>> {
        self.base.list()
    }

    fn with<T>(&self, name: &str, f: impl FnOnce(&mut Overlay) -> T) -> Result<T> {
        let mut files = self.files.lock();
        let overlay = files.get_mut(name).ok_or_else(|| not_found(name))?;
        Ok(f(Arc::make_mut(overlay)))
    }
}

impl Overlay {
    fn read_at(&self, base: &dyn Storage, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset + buf.len() as u64;
        if end > self.len {
            let name = self.base_name.as_deref().unwrap_or("file made in memory");
            return Err(Error::io(
                "read",
                name,
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("read to {end} past the end at {}", self.len),
                ),
            ));
        }
        let shown = self.base_len.clamp(offset, end);
        let (from_base, zeros) = buf.split_at_mut(index(shown - offset));
        if let Some(name) = &self.base_name
            && !from_base.is_empty()
        {
            base.read_at(name, offset, from_base)?;
        }
        zeros.fill(0);
        for (at, data) in &self.patches {
            let (from, to) = ((*at).max(offset), (*at + data.len() as u64).min(end));
            if from < to {
                buf[index(from - offset)..index(to - offset)]
                    .copy_from_slice(&data[index(from - at)..index(to - at)]);
            }
        }
        Ok(())
    }

    fn set_len(&mut self, len: u64) {
        self.base_len = self.base_len.min(len);
        for (at, data) in &mut self.patches {
            data.truncate(index(len.saturating_sub(*at)));
        }
        self.patches.retain(|(_, data)| !data.is_empty());
        self.len = len;
    }
}

impl Storage for Frozen {
    fn describe(&self) -> String {
        self.base.describe()
    }

    fn lock(&self) -> Result<Box<dyn LockGuard>> {
        Ok(Box::new(NoLock))
    }

    /// The view's files: those pinned, as the view has changed them.
    fn list(&self) -> Result<Vec<String>> {
        Ok(self.files.lock().keys().cloned().collect())
    }

    fn create(&self, name: &str) -> Result<()> {
        let overlay = Overlay {
            base_name: None,
            base_len: 0,
            len: 0,
            patches: Vec::new(),
        };
        self.files
            .lock()
            .insert(name.to_string(), Arc::new(overlay));
        Ok(())
    }

    fn len(&self, name: &str) -> Result<u64> {
        let files = self.files.lock();
        Ok(files.get(name).ok_or_else(|| not_found(name))?.len)
    }

    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<()> {
        let overlay = self.files.lock().get(name).cloned();
        overlay
            .ok_or_else(|| not_found(name))?
            .read_at(self.base.as_ref(), offset, buf)
    }

    fn write_at(&self, name: &str, offset: u64, data: &[u8]) -> Result<()> {
        self.with(name, |overlay| {
            overlay.len = overlay.len.max(offset + data.len() as u64);
            overlay.patches.push((offset, data.to_vec()));
        })
    }

    fn set_len(&self, name: &str, len: u64) -> Result<()> {
        self.with(name, |overlay| overlay.set_len(len))
    }

    fn sync(&self, name: &str) -> Result<()> {
        self.len(name).map(|_| ())
    }

    fn sync_dir(&self) -> Result<()> {
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let mut files = self.files.lock();
        let overlay = files.remove(from).ok_or_else(|| not_found(from))?;
        files.insert(to.to_string(), overlay);
        Ok(())
    }

    fn remove(&self, name: &str) -> Result<()> {
        self.files.lock().remove(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::SimStorage;

    /// The view reads what was there when pinned, with its own changes over it, and
    /// changes nothing below it.
    #[test]
    fn a_view_changes_nothing_below_it() {
        let sim = Arc::new(SimStorage::new());
        sim.create("a").unwrap();
        sim.write_at("a", 0, b"0123456789").unwrap();
        sim.create("b").unwrap();
        sim.write_at("b", 0, b"bb").unwrap();
        let view = Frozen::new(sim.clone());
        assert!(view.pin("a").unwrap());
        assert!(!view.pin("absent").unwrap());
        // Appended below after the pin: not in the view.
        sim.write_at("a", 10, b"later").unwrap();
        assert_eq!(view.len("a").unwrap(), 10);
        assert_eq!(view.read_vec("a", 0, 10).unwrap(), b"0123456789");
        assert!(view.read_vec("a", 8, 3).is_err(), "a read past the end");
        // Not pinned: not in the view, though in the directory.
        assert!(
            matches!(view.len("b"), Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound)
        );
        assert_eq!(view.list().unwrap(), ["a"]);
        let mut listed = view.list_directory().unwrap();
        listed.sort();
        assert_eq!(listed, ["a", "b"]);
        // Cut, written past the cut, removed, made, renamed: in the view only.
        view.set_len("a", 4).unwrap();
        view.write_at("a", 6, b"xy").unwrap();
        assert_eq!(view.read_vec("a", 0, 8).unwrap(), b"0123\0\0xy");
        view.write_at("a", 1, b"Z").unwrap();
        view.set_len("a", 7).unwrap();
        assert_eq!(view.read_vec("a", 0, 7).unwrap(), b"0Z23\0\0x");
        view.create("c").unwrap();
        view.write_at("c", 2, b"cc").unwrap();
        assert_eq!(view.read_vec("c", 0, 4).unwrap(), b"\0\0cc");
        view.rename("c", "d").unwrap();
        view.sync("d").unwrap();
        view.sync_dir().unwrap();
        view.remove("a").unwrap();
        assert_eq!(view.list().unwrap(), ["d"]);
        let _unlocked = view.lock().unwrap();
        let _again = view.lock().unwrap();
        assert_eq!(sim.read_vec("a", 0, 15).unwrap(), b"0123456789later");
        assert_eq!(sim.read_vec("b", 0, 2).unwrap(), b"bb");
        assert!(sim.len("c").is_err() && sim.len("d").is_err());
    }
}
