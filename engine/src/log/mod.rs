//! The hot log: append-only segment files of framed records. Batches are logged here as
//! redo and page images are appended here by checkpoints; nothing is overwritten in place.
//!
//! The bytes: `format-spec/hot-log.md`.

pub mod frame;
mod group;
mod page_file;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;

use frame::{
    BadFrame, FRAME_HEADER_BYTES, SEGMENT_HEADER_BYTES, SegmentHeader, check_payload,
    decode_header, encode_segment_header,
};
pub use frame::{FrameHeader, FrameKind};
pub use group::{FrameLoc, Group};
pub use page_file::{
    PAGE_FILE_BIT, PageFile, check_page_file_header, is_page_file, page_file_name,
    parse_page_file_name,
};

use crate::error::{Error, Result};
use crate::limits::widths::{index, u32_len};
use crate::storage::Storage;

/// The file name of hot log segment `segment_id`, or of a page file when its top bit is set
/// ([`PAGE_FILE_BIT`]): the file a frame location names.
pub fn segment_name(segment_id: u32) -> String {
    if is_page_file(segment_id) {
        return page_file_name(segment_id);
    }
    crate::storage::segment_file_name("hot-", segment_id, ".log")
}

/// The segment id of a hot log segment's file name.
pub fn parse_segment_name(name: &str) -> Option<u32> {
    crate::storage::parse_segment_file_name(name, "hot-", ".log")
}

/// Why a log refuses writes.
enum Refusal {
    /// An earlier write or sync failed, with this error.
    Failed(String),
    /// The database was opened read-only, in this directory.
    ReadOnly(String),
}

/// The writer of the hot log. One exists per open database, used under the writer lock.
pub struct HotLog {
    storage: Arc<dyn Storage>,
    segment_id: u32,
    tail: u64,
    next_lsn: u64,
    durable_lsn: u64,
    segment_bytes: u64,
    /// The length of the segment file: zeros past the tail, extended ahead of the writes.
    allocated: u64,
    /// Set by the first failed write or sync, or for a database opened read-only; from
    /// then on every write is refused.
    refused: Option<Refusal>,
    syncs: u64,
    /// The active segment's id, published once a roll has sealed the one before it:
    /// every segment below it is complete and never written again, which readers may map.
    sealed_below: Arc<AtomicU32>,
}

/// How far ahead of the writes the segment file is extended, by writing zeros: syncing a
/// write into blocks the file already has is cheaper than one that makes it grow (the size
/// need not be logged with it) or fills a hole (the file system must allocate the block and
/// log that: on ext4 a sync that first touches a block of a sparse file took about twice as
/// long). A sixteenth of the segment, between 4 KiB and 1 MiB.
fn extend_step(segment_bytes: u64) -> u64 {
    (segment_bytes / 16).clamp(4096, 1 << 20)
}

/// Writes zeros over `from..to` of a file, from one static block (no buffer the size of
/// the range is allocated).
fn write_zeros(storage: &dyn Storage, name: &str, from: u64, to: u64) -> Result<()> {
    static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
    let mut at = from;
    while at < to {
        let len = (to - at).min(ZEROS.len() as u64);
        storage.write_at(name, at, &ZEROS[..index(len)])?;
        at += len;
    }
    Ok(())
}

/// Where the next frame will be written and the lsn it will carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogTail {
    pub segment_id: u32,
    pub offset: u64,
    pub next_lsn: u64,
}

impl HotLog {
    /// Creates segment `segment_id`, durably, and returns a writer at its start.
    pub fn create(
        storage: Arc<dyn Storage>,
        segment_id: u32,
        next_lsn: u64,
        segment_bytes: u64,
    ) -> Result<Self> {
        write_segment(storage.as_ref(), segment_id, next_lsn)?;
        Ok(HotLog {
            storage,
            segment_id,
            tail: SEGMENT_HEADER_BYTES as u64,
            next_lsn,
            durable_lsn: next_lsn - 1,
            segment_bytes,
            allocated: SEGMENT_HEADER_BYTES as u64,
            refused: None,
            syncs: 0,
            sealed_below: Arc::new(AtomicU32::new(segment_id)),
        })
    }

    /// A writer appending at `tail`, the end of its segment file, everything before which
    /// is durable.
    pub fn resume(storage: Arc<dyn Storage>, tail: LogTail, segment_bytes: u64) -> Self {
        HotLog {
            storage,
            segment_id: tail.segment_id,
            tail: tail.offset,
            next_lsn: tail.next_lsn,
            durable_lsn: tail.next_lsn - 1,
            segment_bytes,
            allocated: tail.offset,
            refused: None,
            syncs: 0,
            sealed_below: Arc::new(AtomicU32::new(tail.segment_id)),
        }
    }

    /// The id below which every segment is sealed, kept current as the log rolls.
    pub fn sealed_below(&self) -> Arc<AtomicU32> {
        self.sealed_below.clone()
    }

    pub fn tail(&self) -> LogTail {
        LogTail {
            segment_id: self.segment_id,
            offset: self.tail,
            next_lsn: self.next_lsn,
        }
    }

    /// Syncs of the log performed since open.
    pub fn syncs(&self) -> u64 {
        self.syncs
    }

    pub fn durable_lsn(&self) -> u64 {
        self.durable_lsn
    }

    /// Refuses every later write: used when a checkpoint failed part way.
    pub fn poison(&mut self, reason: String) {
        self.refused.get_or_insert(Refusal::Failed(reason));
    }

    /// Refuses every write with `Error::ReadOnly`: the log of a database opened read-only
    /// (in directory `path`).
    pub fn refuse_writes(&mut self, path: String) {
        self.refused = Some(Refusal::ReadOnly(path));
    }

    /// Whether the log takes writes, and if not why.
    pub fn check_writable(&self) -> Result<()> {
        match &self.refused {
            Some(Refusal::Failed(reason)) => Err(Error::WriteFailed {
                reason: reason.clone(),
            }),
            Some(Refusal::ReadOnly(path)) => Err(Error::ReadOnly { path: path.clone() }),
            None => Ok(()),
        }
    }

    fn fail<T>(&mut self, error: Error) -> Result<T> {
        self.refused = Some(Refusal::Failed(error.to_string()));
        Err(error)
    }

    /// True when the next group starts a new segment (which syncs this one).
    pub fn will_roll(&self) -> bool {
        self.tail >= self.segment_bytes
    }

    /// Starts a group at the tail, first moving to a new segment if this one is full.
    pub fn group(&mut self) -> Result<Group> {
        self.check_writable()?;
        if self.tail >= self.segment_bytes {
            self.roll()?;
        }
        Ok(Group {
            buf: Vec::new(),
            segment_id: self.segment_id,
            base_offset: self.tail,
            next_lsn: self.next_lsn,
            durable_lsn: self.durable_lsn,
            frames: 0,
        })
    }

    /// Writes a group built by [`HotLog::group`] since the last append.
    pub fn append(&mut self, group: Group) -> Result<()> {
        self.check_writable()?;
        // A group is built at the tail it is appended to, and numbers its frames on from the
        // log's last sequence number: frames reach the log in sequence order, without gaps.
        assert_eq!(
            group.base_offset, self.tail,
            "a group appended where it was begun"
        );
        assert_eq!(
            group.segment_id, self.segment_id,
            "a group appended to its segment"
        );
        assert_eq!(
            group.next_lsn,
            self.next_lsn + group.frames,
            "a group's frames follow the log's sequence numbers"
        );
        if group.buf.is_empty() {
            return Ok(());
        }
        let name = segment_name(self.segment_id);
        let end = self.tail + group.buf.len() as u64;
        if end > self.allocated {
            let step = extend_step(self.segment_bytes);
            let allocated = end.div_ceil(step) * step;
            if let Err(error) = write_zeros(self.storage.as_ref(), &name, self.allocated, allocated)
            {
                return self.fail(error);
            }
            self.allocated = allocated;
        }
        if let Err(error) = self.storage.write_at(&name, self.tail, &group.buf) {
            return self.fail(error);
        }
        self.tail = end;
        self.next_lsn = group.next_lsn;
        Ok(())
    }

    /// Makes everything appended so far durable. A failure is sticky.
    pub fn sync(&mut self) -> Result<()> {
        self.check_writable()?;
        if self.durable_lsn + 1 == self.next_lsn {
            return Ok(());
        }
        self.sync_segment()
    }

    /// Notes a sync of the active segment made without the writer (by a checkpoint, of
    /// page images it appended): every frame up to `through_lsn` is durable.
    pub fn synced_through(&mut self, through_lsn: u64) {
        assert!(through_lsn < self.next_lsn, "a sync of frames not appended");
        self.durable_lsn = self.durable_lsn.max(through_lsn);
        self.syncs += 1;
    }

    /// Syncs the segment file whatever changed in it (frames, or only its length).
    fn sync_segment(&mut self) -> Result<()> {
        if let Err(error) = self.storage.sync(&segment_name(self.segment_id)) {
            return self.fail(error);
        }
        assert!(
            self.next_lsn > self.durable_lsn,
            "the durable sequence number moves back"
        );
        self.durable_lsn = self.next_lsn - 1;
        self.syncs += 1;
        Ok(())
    }

    /// Moves to a new segment now if this one holds any frame, so that it can be cleaned
    /// and removed like any sealed segment.
    pub fn seal(&mut self) -> Result<()> {
        self.check_writable()?;
        if self.tail > SEGMENT_HEADER_BYTES as u64 {
            self.roll()?;
        }
        Ok(())
    }

    /// Cuts the segment back to its last frame (only the last segment may end in zeros) and
    /// syncs it, then starts the next one.
    fn roll(&mut self) -> Result<()> {
        if self.allocated > self.tail {
            self.check_writable()?;
            let cut = self
                .storage
                .set_len(&segment_name(self.segment_id), self.tail);
            if let Err(error) = cut {
                return self.fail(error);
            }
            self.allocated = self.tail;
            self.sync_segment()?;
        } else {
            self.sync()?;
        }
        let next = self.segment_id + 1;
        if let Err(error) = write_segment(self.storage.as_ref(), next, self.next_lsn) {
            return self.fail(error);
        }
        self.segment_id = next;
        self.tail = SEGMENT_HEADER_BYTES as u64;
        self.allocated = self.tail;
        // The old segment was cut to its last frame and synced above: sealed.
        self.sealed_below.store(next, Ordering::Release);
        Ok(())
    }
}

/// Creates a segment file with its header, durably, including its directory entry.
fn write_segment(storage: &dyn Storage, segment_id: u32, first_lsn: u64) -> Result<()> {
    let name = segment_name(segment_id);
    storage.create(&name)?;
    let header = encode_segment_header(SegmentHeader {
        segment_id,
        first_lsn,
    });
    storage.write_at(&name, 0, &header)?;
    storage.sync(&name)?;
    storage.sync_dir()
}

/// Reads and checks the header of segment `segment_id`.
pub fn read_segment_header(storage: &dyn Storage, segment_id: u32) -> Result<SegmentHeader> {
    frame::read_segment_header(storage, &segment_name(segment_id), segment_id)
}

/// Reads the frame at `loc`, checking its header, length and checksum; returns the payload.
pub fn read_frame(storage: &dyn Storage, loc: FrameLoc) -> Result<(FrameHeader, Bytes)> {
    let name = segment_name(loc.segment_id);
    let bytes = storage.read_vec(&name, loc.offset, frame_len(loc)?)?;
    let header = check_frame(loc, &bytes, Payload::Check)?;
    // A view past the header, not a copy.
    Ok((header, Bytes::from(bytes).slice(FRAME_HEADER_BYTES..)))
}

/// `read_frame` into a buffer taken from `buffers`; the buffer goes back to them when the
/// last view of the payload is dropped. Also returns the bytes the buffer holds in memory
/// (its size), for the cache to weigh.
pub fn read_frame_pooled(
    storage: &dyn Storage,
    loc: FrameLoc,
    buffers: &Arc<ReadBuffers>,
    payload: Payload,
) -> Result<(FrameHeader, Bytes, usize)> {
    let name = segment_name(loc.segment_id);
    let mut buffer = buffers.take(frame_len(loc)?);
    storage
        .read_at(&name, loc.offset, &mut buffer.bytes)
        .map_err(|error| match error {
            // A file cut short of a frame it was written with: damage, not an I/O failure.
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::UnexpectedEof => {
                Error::corruption(&name, loc.offset, "frame past the end of the file")
            }
            other => other,
        })?;
    let header = check_frame(loc, &buffer.bytes, payload)?;
    let held = ReadBuffers::size_for(buffer.bytes.len());
    Ok((
        header,
        Bytes::from_owner(buffer).slice(FRAME_HEADER_BYTES..),
        held,
    ))
}

/// Whether a frame read computes its payload's checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Computes it and compares it with the header's.
    Check,
    /// Skips it: this process checked the same frame before (a frame below the log's tail
    /// is never written again, and the map of a sealed segment does not change). The
    /// header is checked all the same.
    CheckedBefore,
}

/// `read_frame` from the bytes of the sealed segment holding the frame (its map, held as
/// one `Bytes`): the payload is a view of them, nothing is copied or allocated. Also returns
/// the bytes a pooled read would hold for the frame, for the cache to weigh it the same
/// however it was read.
pub fn read_frame_mapped(
    segment: &Bytes,
    loc: FrameLoc,
    payload: Payload,
) -> Result<(FrameHeader, Bytes, usize)> {
    let len = frame_len(loc)?;
    let end = loc
        .offset
        .checked_add(len as u64)
        .filter(|end| *end <= segment.len() as u64)
        .ok_or_else(|| {
            Error::corruption(
                segment_name(loc.segment_id),
                loc.offset,
                "frame extends past the end of its segment",
            )
        })?;
    let (start, end) = (index(loc.offset), index(end));
    let header = check_frame(loc, &segment[start..end], payload)?;
    Ok((
        header,
        segment.slice(start + FRAME_HEADER_BYTES..end),
        ReadBuffers::size_for(len),
    ))
}

/// The length of the frame at `loc`, at least a header's. (The segment's name is made only
/// for an error: a mapped page read builds no string.)
fn frame_len(loc: FrameLoc) -> Result<usize> {
    if (loc.len as usize) < FRAME_HEADER_BYTES {
        return Err(Error::corruption(
            segment_name(loc.segment_id),
            loc.offset,
            format!("frame length {} below the header size", loc.len),
        ));
    }
    Ok(loc.len as usize)
}

fn check_frame(loc: FrameLoc, bytes: &[u8], payload: Payload) -> Result<FrameHeader> {
    let bad = |reason: String| Error::corruption(segment_name(loc.segment_id), loc.offset, reason);
    let header = decode_header(bytes, bytes.len() as u64).map_err(|e| bad(e.describe()))?;
    if header.payload_len as usize + FRAME_HEADER_BYTES != loc.len as usize {
        return Err(bad(format!(
            "frame length {} differs from the expected {}",
            header.payload_len as usize + FRAME_HEADER_BYTES,
            loc.len
        )));
    }
    if payload == Payload::Check {
        check_payload(bytes, &bytes[FRAME_HEADER_BYTES..]).map_err(|e| bad(e.describe()))?;
    }
    Ok(header)
}

/// Read buffers kept for reuse. Every page read that misses the cache needs a buffer of
/// about a page, freed when the page leaves the cache: taking it from here instead of the
/// allocator spares a large allocation, its zeroing and its free per miss. At most
/// `keep` buffers, none larger than `largest`, wait here (the latest returned). Buffers come
/// in sizes of whole KiB, and a read takes one of the size its length rounds up to: what it
/// holds in memory is a function of the frame's length alone, which the cache weighs (so a
/// simulation of the cache on its trace decides as the cache did).
pub struct ReadBuffers {
    free: parking_lot::Mutex<Vec<Vec<u8>>>,
    keep: usize,
    largest: usize,
}

/// A buffer on loan from `ReadBuffers`; returned when dropped.
pub struct ReadBuffer {
    bytes: Vec<u8>,
    home: Arc<ReadBuffers>,
}

impl ReadBuffers {
    pub fn new(keep: usize, largest: usize) -> Arc<ReadBuffers> {
        Arc::new(ReadBuffers {
            free: parking_lot::Mutex::new(Vec::with_capacity(keep)),
            keep,
            largest: Self::size_for(largest),
        })
    }

    /// A buffer of exactly `len` bytes. Its contents are whatever an earlier read left
    /// (the caller overwrites all of them); only bytes past an earlier length are zeroed.
    pub fn take(self: &Arc<Self>, len: usize) -> ReadBuffer {
        let size = Self::size_for(len);
        let kept = {
            let mut free = self.free.lock();
            let at = free.iter().position(|buffer| buffer.capacity() == size);
            at.map(|at| free.swap_remove(at))
        };
        let mut bytes = kept.unwrap_or_else(|| Vec::with_capacity(size));
        if bytes.len() >= len {
            bytes.truncate(len);
        } else {
            bytes.resize(len, 0);
        }
        ReadBuffer {
            bytes,
            home: self.clone(),
        }
    }

    /// The size of the buffer a read of `len` bytes takes.
    pub fn size_for(len: usize) -> usize {
        len.next_multiple_of(1024)
    }

    /// How many buffers wait for reuse.
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.free.lock().len()
    }
}

impl AsRef<[u8]> for ReadBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        let bytes = std::mem::take(&mut self.bytes);
        // Buffers of unusually large frames are not kept.
        if bytes.capacity() <= self.home.largest {
            // When full, the buffer kept longest makes room: the kept sizes follow the
            // frames being read.
            let mut free = self.home.free.lock();
            if free.len() == self.home.keep {
                free.remove(0);
            }
            free.push(bytes);
        }
    }
}

/// Where a scan of a segment stopped.
#[derive(Debug)]
pub struct ScanStop {
    /// The offset just past the last good frame.
    pub end: u64,
    /// The bad frame that stopped the scan before the end of the file, if any (zeros up to
    /// the end are not one).
    pub bad: Option<BadFrame>,
    /// The highest durable lsn claimed by any valid frame after the bad one.
    pub durable_after_bad: Option<u64>,
}

/// Visits every valid frame of a segment from `offset` until the end of the file, zeros up to
/// its end, or the first bad frame. The visitor gets the header, the frame's location and its payload.
pub fn scan_segment(
    storage: &dyn Storage,
    segment_id: u32,
    offset: u64,
    mut visit: impl FnMut(&FrameHeader, FrameLoc, &[u8]) -> Result<()>,
) -> Result<ScanStop> {
    let name = segment_name(segment_id);
    let file_len = storage.len(&name)?;
    if offset > file_len {
        return Err(Error::corruption(
            &name,
            offset,
            format!("scan starts past the end of the file ({file_len} bytes)"),
        ));
    }
    let mut bytes = read_growing(storage, &name, offset, index(file_len - offset))?;
    let mut at = 0usize;
    let mut last_lsn = None;
    let mut rereads = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let checked = decode_header(rest, rest.len() as u64).and_then(|header| {
            let frame_len = FRAME_HEADER_BYTES + header.payload_len as usize;
            check_payload(rest, &rest[FRAME_HEADER_BYTES..frame_len]).map(|()| header)
        });
        let header = match checked {
            Ok(header) => header,
            // A frame that does not decode, with bytes written after it: on a file system
            // that shows a writer's bytes to a reader beside it out of order (FUSE, where a
            // read-only open found a frame header of zeros with the frames after it already
            // there), the frame is being written. Read again, a few times, before calling it
            // bad; bytes at rest read the same.
            Err(_)
                if storage.beside_a_writer()
                    && rereads < GROWING_TRIES
                    && !all_zero(&bytes[at..]) =>
            {
                rereads += 1;
                std::thread::sleep(std::time::Duration::from_millis(2));
                let from = offset + at as u64;
                let now_len = storage.len(&name)?.max(from);
                let fresh = read_growing(storage, &name, from, index(now_len - from))?;
                bytes.truncate(at);
                bytes.extend_from_slice(&fresh);
                continue;
            }
            Err(bad) => return Ok(stop_at(&bytes, at, offset, bad, last_lsn)),
        };
        let rest = &bytes[at..];
        let frame_len = FRAME_HEADER_BYTES + header.payload_len as usize;
        let payload = &rest[FRAME_HEADER_BYTES..frame_len];
        if let Some(last) = last_lsn
            && header.lsn != last + 1
        {
            let reason = format!("lsn {} follows lsn {last}", header.lsn);
            return Err(Error::corruption(&name, offset + at as u64, reason));
        }
        last_lsn = Some(header.lsn);
        let loc = FrameLoc {
            segment_id,
            offset: offset + at as u64,
            len: u32_len(frame_len),
        };
        visit(&header, loc, payload)?;
        at += frame_len;
    }
    Ok(ScanStop {
        end: offset + at as u64,
        bad: None,
        durable_after_bad: None,
    })
}

/// `len` bytes of segment `name` from `offset`, as far as its length said. Beside a writer
/// ([`Storage::beside_a_writer`]), a file system that shows a file's new length before it
/// shows the bytes (seen on FUSE: a read-only open found the active segment's length grown
/// and its read cut short) is read again: the bytes follow within moments.
fn read_growing(storage: &dyn Storage, name: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
    let mut tries = 0;
    loop {
        match storage.read_vec(name, offset, len) {
            Err(Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::UnexpectedEof
                    && storage.beside_a_writer()
                    && tries < GROWING_TRIES =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            read => return read,
        }
    }
}

/// How many times [`read_growing`] reads again (about 100 ms in all).
const GROWING_TRIES: u32 = 50;

/// The scan's stop at a frame that does not decode: the segment's unused space when every
/// byte from there on is zero (the writer extends the file ahead of its writes), else a bad
/// frame.
fn stop_at(bytes: &[u8], at: usize, base: u64, bad: BadFrame, last_lsn: Option<u64>) -> ScanStop {
    if all_zero(&bytes[at..]) {
        return ScanStop {
            end: base + at as u64,
            bad: None,
            durable_after_bad: None,
        };
    }
    ScanStop {
        end: base + at as u64,
        bad: Some(bad),
        durable_after_bad: durable_claimed_after(bytes, at + 1, last_lsn),
    }
}

/// True when every byte is zero. The bytes are OR-ed a block at a time, with one test per
/// block: the scan runs over the whole unused end of a segment (up to a sixteenth of it), and
/// under coverage tracing a test per byte took 11% of the model fuzzer's time (now 6%).
fn all_zero(bytes: &[u8]) -> bool {
    bytes
        .chunks(4096)
        .all(|block| block.iter().fold(0u8, |acc, byte| acc | byte) == 0)
}

/// Looks for valid frames at any offset from `from` on (a bad frame's length cannot be
/// trusted) and returns the highest durable lsn they claim. A frame counts only when its
/// lsn follows `last_lsn`, which keeps stale bytes from an older life of the file out.
fn durable_claimed_after(bytes: &[u8], from: usize, last_lsn: Option<u64>) -> Option<u64> {
    let min_lsn = last_lsn.map_or(0, |lsn| lsn + 1);
    let mut best = None;
    let mut at = from;
    while at + FRAME_HEADER_BYTES <= bytes.len() {
        let rest = &bytes[at..];
        if let Ok(header) = decode_header(rest, rest.len() as u64) {
            let frame_len = FRAME_HEADER_BYTES + header.payload_len as usize;
            if header.lsn > min_lsn
                && check_payload(rest, &rest[FRAME_HEADER_BYTES..frame_len]).is_ok()
            {
                best = best.max(Some(header.durable_lsn));
                at += frame_len;
                continue;
            }
        }
        at += 1;
    }
    best
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests;
