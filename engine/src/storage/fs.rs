//! Real files in a directory.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::scratch::Scratch;
use super::seam::{LockGuard, Mapped, Storage};
use crate::error::{Error, Result};

const LOCK_FILE: &str = "LOCK";

/// Files in one directory, opened once and kept open.
pub struct FsStorage {
    dir: PathBuf,
    handles: Mutex<HashMap<String, Arc<File>>>,
    /// Files are opened for reading only, and every change is refused (for
    /// `Db::open_read_only`, whose changes stay in memory: `storage::Frozen`).
    read_only: bool,
}

/// Both locks of an open database: the directory's own (which no file deletion can take
/// away) and the `LOCK` file's (which older builds take).
struct FsLock {
    _dir: File,
    _file: File,
}

impl LockGuard for FsLock {}

impl FsStorage {
    /// Storage over `dir`, creating the directory (and any missing parent) when it does not
    /// exist, each new one made durable in its parent before this returns.
    pub fn new(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        create_dir_durably(&dir, &mut |parent| File::open(parent)?.sync_all())
            .map_err(|e| Error::io("create directory", dir.display().to_string(), e))?;
        Ok(FsStorage {
            dir,
            handles: Mutex::new(HashMap::new()),
            read_only: false,
        })
    }

    /// Storage over `dir` that opens files for reading only and refuses every change; the
    /// directory must exist (`Error::NoDatabase` if not).
    pub fn read_only(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        if !dir.is_dir() {
            return Err(Error::NoDatabase {
                path: dir.display().to_string(),
            });
        }
        Ok(FsStorage {
            dir,
            handles: Mutex::new(HashMap::new()),
            read_only: true,
        })
    }

    /// `Error::ReadOnly` for a change asked of a read-only storage.
    fn writable(&self) -> Result<()> {
        match self.read_only {
            true => Err(Error::ReadOnly {
                path: self.describe(),
            }),
            false => Ok(()),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn name(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    fn handle(&self, name: &str) -> Result<Arc<File>> {
        let mut handles = self.handles.lock();
        if let Some(file) = handles.get(name) {
            return Ok(file.clone());
        }
        let file = OpenOptions::new()
            .read(true)
            .write(!self.read_only)
            .open(self.path(name))
            .map_err(|e| Error::io("open", self.name(name), e))?;
        Ok(keep(&mut handles, name, file))
    }
}

/// Keeps `file` as `name`'s handle, a segment's advised random first.
fn keep(handles: &mut HashMap<String, Arc<File>>, name: &str, file: File) -> Arc<File> {
    if is_segment(name) {
        advise_random(&file);
    }
    let file = Arc::new(file);
    handles.insert(name.to_string(), file.clone());
    file
}

/// Whether `name` is a hot log segment, a page file or a cold segment: files read a page or
/// a chunk at a time, wherever the reads go (scans read a whole segment in one call).
fn is_segment(name: &str) -> bool {
    name.starts_with("hot-") || name.starts_with("pages-") || name.starts_with("cold-")
}

/// Tells the kernel that `file` is read at random, so that a miss reads what was asked
/// for and not the readahead window around it (tens of KiB that the next point read rarely
/// wants, and that evict what it will want when memory is short). Advice only: where the
/// call is missing or fails, reads are the same, with readahead.
#[allow(unsafe_code)]
fn advise_random(file: &File) {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: the descriptor belongs to `file`, open for the whole call; the call sets
        // the advice of its open file description and touches no memory.
        let _ = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let _ = file;
}

/// Creates `dir` and every missing ancestor, outermost first, calling `sync_dir` on the
/// parent of each directory it creates once that directory exists: a new directory's entry
/// lives in its parent, and a file system that keeps only what was synced may otherwise lose
/// a database whose creation returned. A directory that exists is left as it is.
fn create_dir_durably(
    dir: &Path,
    sync_dir: &mut dyn FnMut(&Path) -> io::Result<()>,
) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = dir;
    while !at.is_dir() {
        missing.push(at);
        match at.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => at = parent,
            _ => break,
        }
    }
    for new in missing.into_iter().rev() {
        match fs::create_dir(new) {
            Ok(()) => {}
            // Made by someone else meanwhile: theirs to sync.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && new.is_dir() => continue,
            Err(e) => return Err(e),
        }
        let parent = match new.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        sync_dir(parent)?;
    }
    Ok(())
}

impl Storage for FsStorage {
    fn describe(&self) -> String {
        self.dir.display().to_string()
    }

    fn scratch(&self) -> Result<Scratch> {
        self.writable()?;
        Scratch::in_dir(&self.dir)
    }

    fn lock(&self) -> Result<Box<dyn LockGuard>> {
        self.writable()?;
        // The directory is locked first: a `LOCK` file deleted while a writer holds it (by a
        // stale-lock cleanup, say) would otherwise let a second writer in.
        let dir = File::open(&self.dir).map_err(|e| Error::io("open", self.describe(), e))?;
        match dir.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(Error::Locked {
                    path: self.describe(),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io("lock", self.describe(), e)),
        }
        let path = self.path(LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io("open", self.name(LOCK_FILE), e))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(FsLock {
                _dir: dir,
                _file: file,
            })),
            Err(fs::TryLockError::WouldBlock) => Err(Error::Locked {
                path: self.describe(),
            }),
            Err(fs::TryLockError::Error(e)) => Err(Error::io("lock", self.name(LOCK_FILE), e)),
        }
    }

    fn list(&self) -> Result<Vec<String>> {
        let entries = fs::read_dir(&self.dir).map_err(|e| Error::io("list", self.describe(), e))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("list", self.describe(), e))?;
            if let Some(name) = entry.file_name().to_str()
                && name != LOCK_FILE
            {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    fn create(&self, name: &str) -> Result<()> {
        self.writable()?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(self.path(name))
            .map_err(|e| Error::io("create", self.name(name), e))?;
        keep(&mut self.handles.lock(), name, file);
        Ok(())
    }

    fn len(&self, name: &str) -> Result<u64> {
        let file = self.handle(name)?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io("stat", self.name(name), e))?;
        Ok(meta.len())
    }

    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<()> {
        let file = self.handle(name)?;
        file.read_exact_at(buf, offset)
            .map_err(|e| Error::io("read", self.name(name), e))
    }

    fn write_at(&self, name: &str, offset: u64, data: &[u8]) -> Result<()> {
        self.writable()?;
        let file = self.handle(name)?;
        file.write_all_at(data, offset)
            .map_err(|e| Error::io("write", self.name(name), e))
    }

    fn set_len(&self, name: &str, len: u64) -> Result<()> {
        self.writable()?;
        let file = self.handle(name)?;
        file.set_len(len)
            .map_err(|e| Error::io("set length", self.name(name), e))
    }

    fn sync(&self, name: &str) -> Result<()> {
        self.writable()?;
        let file = self.handle(name)?;
        file.sync_data()
            .map_err(|e| Error::io("sync", self.name(name), e))
    }

    fn sync_dir(&self) -> Result<()> {
        self.writable()?;
        let dir = File::open(&self.dir).map_err(|e| Error::io("open", self.describe(), e))?;
        dir.sync_all()
            .map_err(|e| Error::io("sync directory", self.describe(), e))
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.writable()?;
        let mut handles = self.handles.lock();
        fs::rename(self.path(from), self.path(to))
            .map_err(|e| Error::io("rename", self.name(from), e))?;
        handles.remove(to);
        if let Some(file) = handles.remove(from) {
            handles.insert(to.to_string(), file);
        }
        Ok(())
    }

    #[allow(unsafe_code)]
    fn map(&self, name: &str) -> Result<Mapped> {
        let file = self.handle(name)?;
        // SAFETY: the engine maps sealed segments (cold segments no longer written, hot log
        // segments below the active one), which it never writes or truncates again, and
        // the active hot segment (`map_growing`), of which it reads only frames written
        // before the map was made: the log never writes below its tail again, and the one
        // cut it makes (at a roll, of the zeros it wrote ahead of the tail) leaves every
        // frame in place. A segment is removed only after its map is forgotten, and a
        // removed file's pages stay valid for the views still held (Unix keeps an unlinked
        // file until its last map goes). The database lock keeps other skewdb processes
        // out. A change by a foreign process is outside what any mmap user can guard
        // against.
        let map = unsafe { memmap2::Mmap::map(file.as_ref()) }
            .map_err(|e| Error::io("map", self.name(name), e))?;
        // As for reads (`advise_random`): a fault reads its page, not its neighbours. Advice
        // only; a failure changes nothing a read returns.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        Ok(Mapped::Map(map))
    }

    fn map_growing(&self, name: &str) -> Result<Option<Mapped>> {
        self.map(name).map(Some)
    }

    fn remove(&self, name: &str) -> Result<()> {
        self.writable()?;
        self.handles.lock().remove(name);
        match fs::remove_file(self.path(name)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io("remove", self.name(name), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Segments are advised random (a point read's miss reads what it asks for); the
    /// checkpoint and anything else is read whole and keeps the kernel's readahead.
    #[test]
    fn segments_and_only_segments_are_advised_random() {
        assert!(is_segment(&crate::log::segment_name(7)));
        assert!(is_segment(&crate::cold::chunk::segment_name(7)));
        for other in ["checkpoint", "checkpoint.tmp", LOCK_FILE, "notes"] {
            assert!(!is_segment(other), "{other}");
        }
    }

    /// Every directory made is synced into its parent, outermost first; nothing is synced
    /// for a directory that was there; a file in the way is an error.
    #[test]
    fn a_new_directory_is_synced_into_its_parent() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a").join("b").join("db");
        let mut synced = Vec::new();
        create_dir_durably(&dir, &mut |parent| {
            synced.push(parent.to_path_buf());
            Ok(())
        })
        .unwrap();
        assert!(dir.is_dir());
        let a = root.path().join("a");
        assert_eq!(
            synced,
            vec![root.path().to_path_buf(), a.clone(), a.join("b")]
        );

        synced.clear();
        create_dir_durably(&dir, &mut |parent| {
            synced.push(parent.to_path_buf());
            Ok(())
        })
        .unwrap();
        assert!(
            synced.is_empty(),
            "an existing directory is not created again"
        );

        // A sync that fails is the creation's error.
        let failing = root.path().join("c");
        let error = create_dir_durably(&failing, &mut |_| Err(io::Error::other("no sync")));
        assert_eq!(error.unwrap_err().to_string(), "no sync");

        let file = root.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        assert!(create_dir_durably(&file.join("db"), &mut |_| Ok(())).is_err());
        // Through the storage: the directory is there and usable.
        let storage = FsStorage::new(root.path().join("d").join("db")).unwrap();
        storage.create("f").unwrap();
        assert_eq!(storage.len("f").unwrap(), 0);
    }
}
