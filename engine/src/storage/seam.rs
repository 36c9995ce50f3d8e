//! The seam itself: the operations the engine performs on its directory, the views of whole
//! files they hand out, and the names of segment files.

use super::scratch::Scratch;
use crate::error::Result;
use crate::limits::widths::index;

/// The file name of segment `id` of a kind: `PREFIX` + 8 decimal digits + `SUFFIX`.
pub fn segment_file_name(prefix: &str, id: u32, suffix: &str) -> String {
    format!("{prefix}{id:08}{suffix}")
}

/// The id in a name made by [`segment_file_name`] with the same prefix and suffix.
pub fn parse_segment_file_name(name: &str, prefix: &str, suffix: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.len() != 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// An immutable view of a whole file: a memory map of a real file, or a copy.
pub enum Mapped {
    /// A memory map of a sealed file.
    Map(memmap2::Mmap),
    /// A copy of the file's bytes.
    Copy(Vec<u8>),
}

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        match self {
            Mapped::Map(map) => map,
            Mapped::Copy(bytes) => bytes,
        }
    }
}

/// A guard that holds the database's exclusive lock until dropped.
pub trait LockGuard: Send + Sync {}

/// The operations the engine performs on its directory.
///
/// Reads are exact: a read past the end of a file is an error. Writes past the end extend
/// the file, filling any gap with zeros. Nothing written is durable until `sync` of that file
/// returns; a file created or renamed is durable in the directory only after `sync_dir`.
pub trait Storage: Send + Sync + 'static {
    /// A name for this storage in messages (the directory path, or "simulation").
    fn describe(&self) -> String;
    /// Takes the database's exclusive lock; `Error::Locked` when someone else holds it.
    fn lock(&self) -> Result<Box<dyn LockGuard>>;
    /// The names of all files in the directory, in no particular order.
    fn list(&self) -> Result<Vec<String>>;
    /// Creates an empty file, replacing any file of that name.
    fn create(&self, name: &str) -> Result<()>;
    /// The file's length in bytes.
    fn len(&self, name: &str) -> Result<u64>;
    /// Fills `buf` from `offset`; an error if the file is shorter.
    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// Writes `data` at `offset`.
    fn write_at(&self, name: &str, offset: u64, data: &[u8]) -> Result<()>;
    /// Truncates or extends (with zeros) the file.
    fn set_len(&self, name: &str, len: u64) -> Result<()>;
    /// Makes the file's data durable.
    fn sync(&self, name: &str) -> Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self) -> Result<()>;
    /// Renames `from` to `to`, replacing `to` atomically.
    fn rename(&self, from: &str, to: &str) -> Result<()>;
    /// Removes the file.
    fn remove(&self, name: &str) -> Result<()>;

    /// The whole file, for files that are no longer written (sealed cold and hot segments).
    fn map(&self, name: &str) -> Result<Mapped> {
        let len = self.len(name)?;
        Ok(Mapped::Copy(self.read_vec(name, 0, index(len))?))
    }

    /// A map of a file still appended to (the active hot segment), as long as the file is
    /// now: the caller reads only bytes written before it mapped, which are never written
    /// again; appends past them show through it and a cut of zeros past the last frame
    /// takes none of them. `None` where the storage cannot map in place (a copy of a
    /// growing file would cost a read of all of it each time it grew).
    fn map_growing(&self, _name: &str) -> Result<Option<Mapped>> {
        Ok(None)
    }

    /// Whether a writer elsewhere may be appending to these files while they are read (a
    /// read-only open beside a live database): a read of a segment's growing end then waits
    /// a moment for bytes a file system shows late (`log::scan_segment`).
    fn beside_a_writer(&self) -> bool {
        false
    }

    /// Scratch space of a process's own for what it would otherwise hold in memory (see
    /// [`Scratch`]): a file beside the database where there is a directory, memory where
    /// there is none.
    fn scratch(&self) -> Result<Scratch> {
        Ok(Scratch::memory())
    }

    /// Reads `len` bytes at `offset` into a new buffer.
    fn read_vec(&self, name: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_at(name, offset, &mut buf)?;
        Ok(buf)
    }
}
