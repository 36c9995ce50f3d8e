//! Scratch space: a file of a process's own beside the database, for what would otherwise
//! be held in memory while it is built (a batch's queued operations past their share of
//! the budget). Never part of the database: anonymous where the system allows (nothing is
//! left behind by a crash), and gone when dropped.

use std::fs::File;
use std::path::Path;

use crate::error::{Error, Result};

/// An append-only scratch file, read back by position.
pub struct Scratch {
    inner: Inner,
    len: u64,
}

enum Inner {
    /// A file in the database's directory (so that it is on the database's device, not in
    /// a temporary directory that may be memory), deleted when dropped.
    File(File),
    /// Memory, for storage that has no directory (the simulation).
    Memory(Vec<u8>),
}

impl Scratch {
    /// A scratch file in `dir`.
    pub fn in_dir(dir: &Path) -> Result<Scratch> {
        let file = tempfile::tempfile_in(dir)
            .map_err(|e| Error::io("create scratch file", dir.display().to_string(), e))?;
        Ok(Scratch {
            inner: Inner::File(file),
            len: 0,
        })
    }

    /// Scratch space in memory.
    pub fn memory() -> Scratch {
        Scratch {
            inner: Inner::Memory(Vec::new()),
            len: 0,
        }
    }

    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Appends `data`.
    pub fn append(&mut self, data: &[u8]) -> Result<()> {
        match &mut self.inner {
            Inner::File(file) => write_all_at(file, self.len, data)
                .map_err(|e| Error::io("write scratch file", "scratch", e))?,
            Inner::Memory(bytes) => bytes.extend_from_slice(data),
        }
        self.len += data.len() as u64;
        Ok(())
    }

    /// Reads from `offset` into `buf`, as much as there is up to its length; returns how
    /// much.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let available = self.len.saturating_sub(offset);
        let want = buf
            .len()
            .min(usize::try_from(available).unwrap_or(usize::MAX));
        let buf = &mut buf[..want];
        if want == 0 {
            return Ok(0);
        }
        match &self.inner {
            Inner::File(file) => {
                read_exact_at(file, offset, buf)
                    .map_err(|e| Error::io("read scratch file", "scratch", e))?;
            }
            Inner::Memory(bytes) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                buf.copy_from_slice(&bytes[start..start + want]);
            }
        }
        Ok(want)
    }
}

#[cfg(unix)]
fn write_all_at(file: &File, offset: u64, data: &[u8]) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, data, offset)
}

#[cfg(unix)]
fn read_exact_at(file: &File, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn write_all_at(file: &File, mut offset: u64, mut data: &[u8]) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !data.is_empty() {
        let written = file.seek_write(data, offset)?;
        data = &data[written..];
        offset += written as u64;
    }
    Ok(())
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut offset: u64, mut buf: &mut [u8]) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        let read = file.seek_read(buf, offset)?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[read..];
        offset += read as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(mut scratch: Scratch) {
        scratch.append(b"hello ").expect("append");
        scratch.append(b"world").expect("append");
        assert_eq!(scratch.len(), 11);
        let mut buf = [0u8; 8];
        assert_eq!(scratch.read_at(0, &mut buf).expect("read"), 8);
        assert_eq!(&buf, b"hello wo");
        assert_eq!(scratch.read_at(6, &mut buf).expect("read"), 5);
        assert_eq!(&buf[..5], b"world");
        assert_eq!(scratch.read_at(11, &mut buf).expect("read"), 0);
        assert_eq!(scratch.read_at(40, &mut buf).expect("read"), 0);
    }

    #[test]
    fn a_scratch_file_reads_back_what_was_appended_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("dir");
        round_trip(Scratch::in_dir(dir.path()).expect("scratch"));
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
        round_trip(Scratch::memory());
    }
}
