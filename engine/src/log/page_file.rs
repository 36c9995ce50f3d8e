//! Page files: the page images checkpoints write, in files of their own beside the hot
//! log's segments (`pages-0000000001.log`, ...), so that a commit's sync never waits for
//! them. A page file has a hot segment's header and frames (page images only, their lsns
//! counting from 1 within the file); each checkpoint appends its images and syncs them (and
//! the directory entry of a new file) before the checkpoint file that refers to them, and
//! a file is appended to until it reaches the segment size, by one process only. A frame's
//! location names it by its number with the top bit of the segment id set
//! ([`PAGE_FILE_BIT`]), so that every page read goes through one path. The bytes:
//! `format-spec/hot-log.md`, "Page files".

use super::frame::{self, SEGMENT_HEADER_BYTES, SegmentHeader, encode_segment_header};
use super::group::Group;
use crate::error::{Error, Result};
use crate::storage::Storage;

/// The top bit of a frame location's segment id: set, the rest is a page file's number.
pub const PAGE_FILE_BIT: u32 = 1 << 31;

/// Whether segment id `id` names a page file.
pub fn is_page_file(id: u32) -> bool {
    id & PAGE_FILE_BIT != 0
}

/// The file name of the page file with segment id `id` (its number with the top bit set).
pub fn page_file_name(id: u32) -> String {
    format!("pages-{:010}.log", id & !PAGE_FILE_BIT)
}

/// The segment id (the number with the top bit set) of a page file's name.
pub fn parse_page_file_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("pages-")?.strip_suffix(".log")?;
    if digits.len() != 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number: u32 = digits.parse().ok()?;
    (number != 0 && !is_page_file(number)).then_some(number | PAGE_FILE_BIT)
}

/// Checks the header of page file `id` (its segment id with the top bit set): sound, naming
/// the file, its first lsn 1.
pub fn check_page_file_header(storage: &dyn Storage, id: u32) -> Result<()> {
    let name = page_file_name(id);
    let header = frame::read_segment_header(storage, &name, id)?;
    if header.first_lsn != 1 {
        return Err(Error::corruption(
            &name,
            16,
            "page file's first lsn is not 1",
        ));
    }
    Ok(())
}

/// A page file being written by checkpoints.
pub struct PageFile {
    id: u32,
    name: String,
    offset: u64,
    next_lsn: u64,
    /// Whether its directory entry is still to be synced.
    new: bool,
}

impl PageFile {
    /// Creates page file `number` (replacing a file of that name no checkpoint refers to,
    /// which a crash left) and writes its header.
    pub fn create(storage: &dyn Storage, number: u32) -> Result<PageFile> {
        if number == 0 || is_page_file(number) {
            return Err(Error::WriteFailed {
                reason: format!("page file number {number} out of range"),
            });
        }
        let id = number | PAGE_FILE_BIT;
        let name = page_file_name(id);
        storage.create(&name)?;
        let header = encode_segment_header(SegmentHeader {
            segment_id: id,
            first_lsn: 1,
        });
        storage.write_at(&name, 0, &header)?;
        Ok(PageFile {
            id,
            name,
            offset: SEGMENT_HEADER_BYTES as u64,
            next_lsn: 1,
            new: true,
        })
    }

    /// Its segment id (its number with the top bit set).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Its length: the end of its last frame.
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// An empty group of frames to append next (frames at the file's end).
    pub fn group(&self) -> Group {
        Group {
            buf: Vec::new(),
            segment_id: self.id,
            base_offset: self.offset,
            next_lsn: self.next_lsn,
            durable_lsn: 0,
            frames: 0,
        }
    }

    /// Writes `group` (from [`PageFile::group`]) at the file's end.
    pub fn append(&mut self, storage: &dyn Storage, group: Group) -> Result<()> {
        debug_assert_eq!(
            (group.segment_id, group.base_offset),
            (self.id, self.offset)
        );
        storage.write_at(&self.name, self.offset, &group.buf)?;
        self.offset += group.buf.len() as u64;
        self.next_lsn = group.next_lsn;
        Ok(())
    }

    /// Makes what was appended durable, and the file's directory entry when it is new.
    pub fn sync(&mut self, storage: &dyn Storage) -> Result<()> {
        storage.sync(&self.name)?;
        if self.new {
            storage.sync_dir()?;
            self.new = false;
        }
        Ok(())
    }
}
