//! Cold segments: append-only files of zstd-compressed chunks (Outlier overflow, Subset
//! history, Reference items, sealed buckets). Chunks are written in groups, one write per
//! commit, through the storage seam; segments no longer written to are read through a
//! memory map.
//!
//! The bytes: `format-spec/cold.md`.

pub mod chunk;
mod columns;
pub(crate) mod items;

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

pub use chunk::{ChunkKind, ChunkLoc, ChunkRef};
use chunk::{SEGMENT_HEADER_BYTES, check_segment_header, encode_segment_header, segment_name};
pub(crate) use items::ChunkItems;

use crate::cache::{CacheKey, Owner, Tier};
use crate::cached::{Cache, Cached, Loaded};
use crate::error::{Error, Result};
use crate::item::Stored;
use crate::limits::widths::{index, u32_len};
use crate::storage::{Segment, SegmentMaps, Storage};

/// Where the next chunk goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct ColdTail {
    pub segment_id: u32,
    pub offset: u64,
}

/// Chunks built for one commit group: in memory, written with one write at the group's end,
/// except that a group that outgrows [`GROUP_FLUSH_BYTES`] (a bulk load's, a compaction's)
/// writes what it holds to its segment as it goes, past the store's tail, where nothing
/// refers to it until the group's redo does.
pub struct ColdGroup {
    /// The bytes not yet written, which follow the `flushed` ones.
    buf: Vec<u8>,
    tail: ColdTail,
    /// How many of the group's bytes are already in its segment (from `tail`).
    flushed: u64,
    /// Where a group too large for memory writes as it goes; `None` for a detached group.
    storage: Option<Arc<dyn Storage>>,
    /// Why a write as it went failed: the group's append fails with it.
    failed: Option<Error>,
    compressor: zstd::bulk::Compressor<'static>,
    /// The chunks a commit wrote whose items go into the cache once the group is written
    /// (see [`ColdGroup::add_kept`]), and the bytes they weigh there.
    kept: Vec<KeptChunk>,
    kept_bytes: u64,
    /// The most bytes of chunks one group puts into the cache.
    keep_limit: u64,
}

/// A group holds at most about this many bytes of chunks in memory before it writes them
/// to its segment.
pub const GROUP_FLUSH_BYTES: usize = 4 << 20;

/// A chunk a commit wrote, decoded as a read would find it, for the cache.
struct KeptChunk {
    offset: u64,
    owner: Owner,
    items: Arc<ChunkItems>,
    weight: u64,
}

/// The share of the cache's page budget one commit group's written chunks may take there (a
/// bulk load seals many chunks, and should not flush the cache with them).
const KEPT_SHARE_OF_BUDGET: u64 = 32;

/// The most chunks one commit group puts into the cache: a group that seals more keeps none.
const KEPT_CHUNKS_PER_GROUP: usize = 4;

impl ColdGroup {
    /// [`ColdGroup::add`], and once the group is written the chunk's items go into the
    /// cache for `owner`, as a read of the chunk would leave them (while the group's kept
    /// chunks stay within a share of the budget): a chunk a commit seals is the one the next
    /// reads want (a time series' newest sealed bucket, a history's newest chunk), and
    /// decoding it costs a read more than any page does.
    pub fn add_kept(&mut self, kind: ChunkKind, items: &[Stored], owner: Owner) -> ChunkRef {
        let entry = self.add(kind, items);
        // A group that seals more chunks than a live stream's commit does is a load: its
        // chunks are not the ones the next reads want, and would only evict what they do.
        if self.kept.len() >= KEPT_CHUNKS_PER_GROUP {
            self.kept.clear();
            self.kept_bytes = 0;
            self.keep_limit = 0;
        }
        if self.tail.segment_id != DETACHED_SEGMENT_ID && self.keep_limit > 0 {
            let owned = Arc::new(ChunkItems::from_stored(items));
            let weight = owned.weight() as u64;
            if self.kept_bytes + weight <= self.keep_limit {
                self.kept_bytes += weight;
                self.kept.push(KeptChunk {
                    offset: entry.loc.offset,
                    owner,
                    items: owned,
                    weight,
                });
            }
        }
        entry
    }

    /// Adds a chunk; returns its index entry.
    pub fn add(&mut self, kind: ChunkKind, items: &[Stored]) -> ChunkRef {
        let offset = self.end();
        let start = self.buf.len();
        let encoded = chunk::encode_chunk(kind, items, &mut self.compressor, &mut self.buf);
        let entry = ChunkRef {
            loc: ChunkLoc {
                segment_id: self.tail.segment_id,
                offset,
                len: u32_len(self.buf.len() - start),
            },
            kind,
            columnar: encoded.columnar,
            summary: encoded.summary,
        };
        self.flush_if_full();
        entry
    }

    /// Adds a chunk copied as it is from elsewhere (its bytes carry no location); returns
    /// its new index entry.
    pub fn add_raw(&mut self, bytes: &[u8], entry: &ChunkRef) -> ChunkRef {
        let offset = self.end();
        self.buf.extend_from_slice(bytes);
        let entry = ChunkRef {
            loc: ChunkLoc {
                segment_id: self.tail.segment_id,
                offset,
                len: u32_len(bytes.len()),
            },
            ..entry.clone()
        };
        self.flush_if_full();
        entry
    }

    /// Where the next chunk goes in the segment.
    fn end(&self) -> u64 {
        self.tail.offset + self.flushed + self.buf.len() as u64
    }

    /// Writes the bytes held to the segment once they outgrow [`GROUP_FLUSH_BYTES`].
    fn flush_if_full(&mut self) {
        let Some(storage) = &self.storage else {
            return;
        };
        if self.buf.len() < GROUP_FLUSH_BYTES || self.failed.is_some() {
            return;
        }
        let name = segment_name(self.tail.segment_id);
        match storage.write_at(&name, self.tail.offset + self.flushed, &self.buf) {
            Ok(()) => {
                self.flushed += self.buf.len() as u64;
                self.buf.clear();
            }
            Err(error) => self.failed = Some(error),
        }
    }

    /// The items of a chunk this group added (in memory, or written as it went).
    pub fn items(&self, entry: &ChunkRef) -> Result<Arc<ChunkItems>> {
        let name = segment_name(entry.loc.segment_id);
        let bad = |reason: &str| Error::corruption(&name, entry.loc.offset, reason);
        let written = self.tail.offset + self.flushed;
        let start = entry.loc.offset;
        let end = start + entry.loc.len as u64;
        if entry.loc.segment_id != self.tail.segment_id || start < self.tail.offset {
            return Err(bad("chunk not of its group"));
        }
        let read;
        let bytes = if start >= written {
            let at = index(start - written);
            self.buf
                .get(at..at + entry.loc.len as usize)
                .ok_or_else(|| bad("chunk past its group"))?
        } else if end <= written {
            let storage = self
                .storage
                .as_ref()
                .ok_or_else(|| bad("chunk not written"))?;
            read = storage.read_vec(&name, start, entry.loc.len as usize)?;
            &read[..]
        } else {
            return Err(bad("chunk across a group's write"));
        };
        chunk::decode_chunk_items(bytes, entry)
            .map(Arc::new)
            .map_err(|reason| bad(&reason))
    }

    /// Where the bytes added since `mark` go; `None` when none were.
    pub fn written_since(&self, mark: usize) -> Option<ChunkLoc> {
        let len = self.mark() - mark;
        (len > 0).then(|| ChunkLoc {
            segment_id: self.tail.segment_id,
            offset: self.tail.offset + mark as u64,
            len: u32_len(len),
        })
    }

    /// A copy of the bytes added since `mark`, for redo that carries them: `None` when
    /// some of them are written already (a group that large is not carried).
    pub fn bytes_since(&self, mark: usize) -> Option<Bytes> {
        let from = (mark as u64).checked_sub(self.flushed)?;
        Some(Bytes::copy_from_slice(&self.buf[index(from)..]))
    }

    /// The group's length in bytes so far, as a mark to roll back to.
    pub fn mark(&self) -> usize {
        index(self.flushed) + self.buf.len()
    }

    /// Drops what was added since `mark`. Bytes already written stay in the segment past
    /// the store's tail, where the next group writes over them.
    pub fn rollback(&mut self, mark: usize) {
        match (mark as u64).checked_sub(self.flushed) {
            Some(in_memory) => self.buf.truncate(index(in_memory)),
            None => {
                self.buf.clear();
                self.flushed = mark as u64;
            }
        }
        let end = self.tail.offset + mark as u64;
        self.kept.retain(|chunk| chunk.offset < end);
        self.kept_bytes = self.kept.iter().map(|chunk| chunk.weight).sum();
    }
}

/// The segment id the chunks of a detached group name: no segment file has it (segments are
/// numbered from 1 and a database would need 2^32 of them to reach it).
pub const DETACHED_SEGMENT_ID: u32 = u32::MAX;

impl ColdGroup {
    /// A group whose chunks are never written: a transaction's own view of what its writes
    /// send to cold chunks. Its chunks' locations name `DETACHED_SEGMENT_ID` and offsets
    /// into its buffer.
    pub fn detached() -> ColdGroup {
        ColdGroup {
            buf: Vec::new(),
            tail: ColdTail {
                segment_id: DETACHED_SEGMENT_ID,
                offset: 0,
            },
            flushed: 0,
            storage: None,
            failed: None,
            compressor: chunk::compressor(),
            kept: Vec::new(),
            kept_bytes: 0,
            keep_limit: 0,
        }
    }

    /// The chunks of a detached group, to read back.
    pub fn into_detached(self) -> DetachedChunks {
        debug_assert_eq!(self.tail.segment_id, DETACHED_SEGMENT_ID);
        DetachedChunks(self.buf)
    }
}

/// The chunks a detached group encoded, read back by their entries.
pub struct DetachedChunks(Vec<u8>);

impl DetachedChunks {
    /// The items of a chunk of this group.
    pub fn items(&self, entry: &ChunkRef) -> Result<Arc<ChunkItems>> {
        let (start, len) = (index(entry.loc.offset), entry.loc.len as usize);
        let bytes = start
            .checked_add(len)
            .and_then(|end| self.0.get(start..end))
            .ok_or_else(|| {
                Error::corruption("transaction", entry.loc.offset, "chunk past its group")
            })?;
        chunk::decode_chunk_items(bytes, entry)
            .map(Arc::new)
            .map_err(|reason| Error::corruption("transaction", entry.loc.offset, reason))
    }
}

/// A group's bytes, once its compressor is handed back.
struct ColdGroupBytes {
    buf: Vec<u8>,
    tail: ColdTail,
}

/// The cold store: the writer's position and the maps of its segments.
pub struct ColdStore {
    storage: Arc<dyn Storage>,
    /// Decompressed chunks are cached beside the hot pages, under one budget.
    cache: Arc<Cache>,
    segment_bytes: u64,
    tail: Mutex<ColdTail>,
    /// Set when a write or sync failed: the writer's position is unknown from then on.
    failed: Mutex<Option<String>>,
    unsynced: Mutex<bool>,
    /// Of a segment no longer written, the whole file; of the one written, the file as
    /// long as it was when mapped (see [`ColdStore::map_for`]). Used only once
    /// [`ColdStore::map_segments`] is called.
    maps: SegmentMaps,
    /// Whether chunks are read through `maps` (else each is read into a buffer of its own).
    map: bool,
    /// The compressor of the last group, handed to the next.
    compressor: Mutex<Option<zstd::bulk::Compressor<'static>>>,
    /// Whether the segment at the tail was made by this build's version (checked before
    /// the first chunk is appended to a segment this store did not create).
    tail_current: Mutex<bool>,
}

impl Drop for ColdStore {
    fn drop(&mut self) {
        if let Some(compressor) = self.compressor.get_mut().take() {
            chunk::give_back(compressor);
        }
    }
}

impl ColdStore {
    /// A cold store appending at `tail`; segment 0 means none was ever created.
    pub fn new(
        storage: Arc<dyn Storage>,
        cache: Arc<Cache>,
        segment_bytes: u64,
        tail: ColdTail,
    ) -> Self {
        ColdStore {
            storage,
            cache,
            segment_bytes,
            tail: Mutex::new(tail),
            failed: Mutex::new(None),
            unsynced: Mutex::new(false),
            maps: SegmentMaps::default(),
            map: false,
            compressor: Mutex::new(None),
            tail_current: Mutex::new(tail.segment_id == 0),
        }
    }

    /// Reads chunks through memory maps of their segments from now on
    /// (`Options::memory_map`).
    pub fn map_segments(&mut self) {
        self.map = true;
    }

    pub fn tail(&self) -> ColdTail {
        *self.tail.lock()
    }

    /// `Error::WriteFailed` once a write or sync of the cold store failed.
    pub fn check_writable(&self) -> Result<()> {
        match self.failed.lock().as_ref() {
            Some(reason) => Err(Error::WriteFailed {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn fail<T>(&self, error: Error) -> Result<T> {
        self.failed.lock().get_or_insert(error.to_string());
        Err(error)
    }

    /// Starts a group at the tail, first moving to a new segment when the current one is
    /// full (or none exists).
    pub fn group(&self) -> Result<ColdGroup> {
        self.check_writable()?;
        let tail = self.tail();
        if tail.segment_id == 0 || tail.offset >= self.segment_bytes || !self.tail_is_current()? {
            self.roll(tail)?;
        }
        Ok(ColdGroup {
            buf: Vec::new(),
            tail: self.tail(),
            flushed: 0,
            storage: Some(self.storage.clone()),
            failed: None,
            compressor: self
                .compressor
                .lock()
                .take()
                .unwrap_or_else(chunk::compressor),
            kept: Vec::new(),
            kept_bytes: 0,
            keep_limit: self.cache.page_budget_bytes() / KEPT_SHARE_OF_BUDGET,
        })
    }

    /// Whether the tail segment has this build's version. Chunks of a newer version are not
    /// appended to an older segment, so that a build from before it refuses the segment
    /// by its version instead of finding chunks it does not know.
    fn tail_is_current(&self) -> Result<bool> {
        let mut current = self.tail_current.lock();
        if !*current {
            let segment_id = self.tail().segment_id;
            let name = segment_name(segment_id);
            let header = self.storage.read_vec(&name, 0, SEGMENT_HEADER_BYTES)?;
            *current = check_segment_header(&header, segment_id)? == chunk::COLD_VERSION;
        }
        Ok(*current)
    }

    fn roll(&self, tail: ColdTail) -> Result<()> {
        if tail.segment_id != 0 {
            self.sync()?;
        }
        let next = tail.segment_id + 1;
        let name = segment_name(next);
        let created = self
            .storage
            .create(&name)
            .and_then(|()| {
                self.storage
                    .write_at(&name, 0, &encode_segment_header(next))
            })
            .and_then(|()| self.storage.sync(&name))
            .and_then(|()| self.storage.sync_dir());
        if let Err(error) = created {
            return self.fail(error);
        }
        *self.tail.lock() = ColdTail {
            segment_id: next,
            offset: SEGMENT_HEADER_BYTES as u64,
        };
        *self.tail_current.lock() = true;
        Ok(())
    }

    /// Writes a group's chunks (those it has not written as it went).
    pub fn append(&self, group: ColdGroup) -> Result<()> {
        self.check_writable()?;
        let ColdGroup {
            buf,
            tail: group_tail,
            flushed,
            failed,
            compressor,
            kept,
            ..
        } = group;
        *self.compressor.lock() = Some(compressor);
        if let Some(error) = failed {
            return self.fail(error);
        }
        let group = ColdGroupBytes {
            buf,
            tail: group_tail,
        };
        if group.buf.is_empty() && flushed == 0 {
            return Ok(());
        }
        let mut tail = self.tail.lock();
        assert_eq!(*tail, group.tail, "a cold group written where it was begun");
        let name = segment_name(tail.segment_id);
        if let Err(error) = self
            .storage
            .write_at(&name, tail.offset + flushed, &group.buf)
        {
            drop(tail);
            return self.fail(error);
        }
        tail.offset += flushed + group.buf.len() as u64;
        *self.unsynced.lock() = true;
        drop(tail);
        for chunk in kept {
            let key = CacheKey::Chunk {
                segment_id: group.tail.segment_id,
                offset: chunk.offset,
            };
            let value = Cached::Items(chunk.items);
            self.cache
                .keep_written(key, Tier::ColdChunk, chunk.owner, value, chunk.weight);
        }
        Ok(())
    }

    /// Makes every chunk written so far durable. Called before the hot log is synced for
    /// chunks its redo does not carry, and before checkpoints and log rollovers, so a
    /// durable batch never refers to a chunk that is neither durable nor in its redo.
    pub fn sync(&self) -> Result<()> {
        self.check_writable()?;
        let mut unsynced = self.unsynced.lock();
        if !*unsynced {
            return Ok(());
        }
        let tail = self.tail();
        if let Err(error) = self.storage.sync(&segment_name(tail.segment_id)) {
            drop(unsynced);
            return self.fail(error);
        }
        *unsynced = false;
        Ok(())
    }

    /// The bytes of a chunk, from a map of its segment, else by a read; with the bytes read
    /// from the file (0 from a map).
    fn chunk_bytes(&self, loc: ChunkLoc) -> Result<(Vec<u8>, u64)> {
        let name = segment_name(loc.segment_id);
        let bad = |reason: &str| Error::corruption(&name, loc.offset, reason);
        let Some(end) = loc.offset.checked_add(loc.len as u64) else {
            return Err(bad("chunk extends past the end of its segment"));
        };
        if let Some(bytes) = self.map_for(loc.segment_id, end)? {
            if end > bytes.len() as u64 {
                return Err(bad("chunk extends past the end of its segment"));
            }
            return Ok((bytes[index(loc.offset)..index(end)].to_vec(), 0));
        }
        let file_len = self.storage.len(&name).map_err(|e| missing(e, &name))?;
        if end > file_len {
            return Err(bad("chunk extends past the end of its segment"));
        }
        let bytes = self.storage.read_vec(&name, loc.offset, loc.len as usize)?;
        Ok((bytes, loc.len as u64))
    }

    /// A map of segment `segment_id` reaching `end` (see [`SegmentMaps`]), or `None` (the
    /// chunk is read from the file): always `None` unless the store maps its segments. A
    /// segment no longer written is mapped whole; the one written, once its file has grown
    /// a sixteenth of a segment (at least 64 KiB) past the map held: so a chunk read soon
    /// after it was written is read from the file, and the segment is mapped at most about
    /// 17 times while written. Sound as the hot log's (see `format-spec/cold.md`): a chunk
    /// is read only once written, and nothing below the tail is written again. Every new
    /// map's segment header is checked.
    fn map_for(&self, segment_id: u32, end: u64) -> Result<Option<Bytes>> {
        if !self.map {
            return Ok(None);
        }
        let segment = match segment_id == self.tail().segment_id {
            true => Segment::Growing {
                min_growth: (self.segment_bytes / 16).max(64 * 1024),
            },
            false => Segment::Sealed,
        };
        let name = || segment_name(segment_id);
        let check = |bytes: &[u8]| check_segment_header(bytes, segment_id).map(|_| ());
        self.maps
            .get(self.storage.as_ref(), segment_id, name, segment, end, check)
            .map_err(|e| missing(e, &segment_name(segment_id)))
    }

    /// Reads and decodes a chunk, checking it against its index entry.
    /// A chunk's items, through the cache, read for `owner`.
    pub fn items(&self, entry: &ChunkRef, owner: Owner) -> Result<Arc<ChunkItems>> {
        let key = CacheKey::Chunk {
            segment_id: entry.loc.segment_id,
            offset: entry.loc.offset,
        };
        let value = self.cache.get_or_load(key, Tier::ColdChunk, owner, || {
            let items = self.read_checked(entry, chunk::decode_chunk_items)?;
            Ok(Loaded {
                weight_bytes: items.weight(),
                value: Cached::Items(Arc::new(items)),
                read_bytes: entry.loc.len as u64,
            })
        })?;
        match value {
            Cached::Items(items) => Ok(items),
            _ => Err(Error::corruption(
                segment_name(entry.loc.segment_id),
                entry.loc.offset,
                "cache holds another kind of object for a chunk",
            )),
        }
    }

    /// A chunk's items read from its segment, bypassing the cache (for maintenance copies,
    /// which should not evict what readers use).
    pub fn read_uncached(&self, entry: &ChunkRef) -> Result<Vec<Stored>> {
        self.read_checked(entry, chunk::decode_chunk)
    }

    /// What `decode` reads of a chunk's bytes, checked against its entry; its complaint a
    /// corruption at the chunk's place.
    fn read_checked<T>(
        &self,
        entry: &ChunkRef,
        decode: impl FnOnce(&[u8], &ChunkRef) -> std::result::Result<T, String>,
    ) -> Result<T> {
        let (bytes, _) = self.chunk_bytes(entry.loc)?;
        decode(&bytes, entry).map_err(|reason| {
            Error::corruption(segment_name(entry.loc.segment_id), entry.loc.offset, reason)
        })
    }

    /// A chunk's stored bytes, checked against its entry (length, checksum, header) without
    /// decompressing, to be copied elsewhere as they are.
    pub fn read_raw(&self, entry: &ChunkRef) -> Result<Vec<u8>> {
        let (bytes, _) = self.chunk_bytes(entry.loc)?;
        chunk::check_copy(&bytes, entry).map_err(|reason| {
            Error::corruption(segment_name(entry.loc.segment_id), entry.loc.offset, reason)
        })?;
        Ok(bytes)
    }

    /// The raw (decompressed) length a chunk's header claims, read without the rest of the
    /// chunk; for planning only (a read of the chunk checks it).
    pub fn raw_len(&self, loc: ChunkLoc) -> Result<u32> {
        let head = ChunkLoc {
            len: u32_len(chunk::CHUNK_HEADER_BYTES.min(loc.len as usize)),
            ..loc
        };
        let (bytes, _) = self.chunk_bytes(head)?;
        match bytes.get(9..13) {
            Some(raw) => Ok(u32::from_le_bytes(raw.try_into().expect("4 bytes"))),
            None => Err(Error::corruption(
                segment_name(loc.segment_id),
                loc.offset,
                "chunk shorter than its header",
            )),
        }
    }

    /// Ends the segment being appended to (synced) and starts the next, so that the one
    /// ended can be compacted like any sealed segment.
    pub fn seal(&self) -> Result<()> {
        self.check_writable()?;
        let tail = self.tail();
        if tail.segment_id != 0 {
            self.roll(tail)?;
        }
        Ok(())
    }

    /// Forgets the map of a segment about to be removed.
    pub fn forget_map(&self, segment_id: u32) {
        self.maps.forget(segment_id);
    }

    /// Checks that a chunk written by a replayed batch survived (its bytes and checksum),
    /// without knowing its index entry.
    pub fn survived(&self, loc: ChunkLoc) -> bool {
        let name = segment_name(loc.segment_id);
        let Ok(file_len) = self.storage.len(&name) else {
            return false;
        };
        if loc
            .offset
            .checked_add(loc.len as u64)
            .is_none_or(|end| end > file_len)
        {
            return false;
        }
        match self.storage.read_vec(&name, loc.offset, loc.len as usize) {
            Ok(bytes) => chunk::check_framing(&bytes),
            Err(_) => false,
        }
    }

    /// Writes cold bytes that replayed redo carries back where the segment does not hold
    /// them (they were written after the segment's last sync and lost). Returns whether it
    /// wrote. The segment must exist and reach their start: segments are created durably
    /// before anything is written into them, and what a batch wrote before these bytes is
    /// durable or was restored first (replay goes in log order).
    pub fn restore(&self, loc: ChunkLoc, bytes: &[u8]) -> Result<bool> {
        let name = segment_name(loc.segment_id);
        let file_len = match self.storage.len(&name) {
            Ok(len) => len,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::corruption(
                    &name,
                    loc.offset,
                    "cold segment of replayed chunks is missing",
                ));
            }
            Err(error) => return Err(error),
        };
        if file_len < loc.offset {
            return Err(Error::corruption(
                &name,
                file_len,
                format!("cold segment ends before replayed chunks at {}", loc.offset),
            ));
        }
        if file_len >= loc.end() && self.storage.read_vec(&name, loc.offset, bytes.len())? == bytes
        {
            return Ok(false);
        }
        self.storage.write_at(&name, loc.offset, bytes)?;
        Ok(true)
    }
}

fn missing(error: Error, name: &str) -> Error {
    match error {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::corruption(name, 0, "cold segment is missing")
        }
        error => error,
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use super::*;
    use crate::item::Item;
    use crate::storage::{FsStorage, SimStorage};

    /// A chunk of 40 items whose payloads hardly compress, written as one group; its entry.
    fn write_chunk(cold: &ColdStore, first_key: i64) -> ChunkRef {
        let mut state = first_key as u64 ^ 0x9e37_79b9_7f4a_7c15;
        let items: Vec<Stored> = (0..40)
            .map(|i| {
                let payload: Vec<u8> = (0..200)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                        (state >> 56) as u8
                    })
                    .collect();
                Stored {
                    item: Item::new(first_key + i, &[], payload),
                    seq: (first_key + i) as u64,
                }
            })
            .collect();
        let mut group = cold.group().unwrap();
        let entry = group.add(ChunkKind::Items, &items);
        cold.append(group).unwrap();
        entry
    }

    /// Items keyed from `first_key`, each with a payload of its own buffer.
    fn items_from(first_key: i64, count: i64) -> Vec<Stored> {
        (first_key..first_key + count)
            .map(|key| Stored {
                item: Item::new(key, &[Some(key as f64)], format!("item {key}").into_bytes()),
                seq: key as u64,
            })
            .collect()
    }

    /// A chunk a commit wrote is in the cache once its group is written, read back as its
    /// decode would give it: the next read of it is a hit and reads nothing. A chunk rolled
    /// back with its batch is not; nor is one past the group's share of the budget; a
    /// transaction's own (detached) chunks never are.
    #[test]
    fn chunks_a_commit_writes_are_kept_in_the_cache() {
        let sim = Arc::new(SimStorage::new());
        let cache = Arc::new(Cache::new(1 << 20));
        let cold = ColdStore::new(sim, cache.clone(), 1 << 20, ColdTail::default());
        let owner = Owner::collection(7);
        let stats = || cache.stats(|_| None).cold;
        let mut group = cold.group().unwrap();
        let kept = group.add_kept(ChunkKind::Bucket, &items_from(0, 40), owner);
        let mark = group.mark();
        let rolled_back = group.add_kept(ChunkKind::Bucket, &items_from(40, 40), owner);
        group.rollback(mark);
        // Past the group's share of the budget (a thirty-second of it): written, not kept.
        let large = items_from(100, 2_000);
        let over = group.add_kept(ChunkKind::Items, &large, owner);
        cold.append(group).unwrap();
        assert!(stats().resident_bytes > 0);
        let read = cold.items(&kept, owner).unwrap();
        assert_eq!(read.to_stored(), cold.read_uncached(&kept).unwrap());
        assert_eq!(
            (stats().requests, stats().misses, stats().bytes_read),
            (1, 0, 0)
        );
        // The rolled-back chunk's place holds the next chunk written, not its items.
        assert_eq!(rolled_back.loc.offset, over.loc.offset);
        assert_eq!(cold.items(&over, owner).unwrap().len(), 2_000);
        assert_eq!((stats().requests, stats().misses), (2, 1));

        let mut detached = ColdGroup::detached();
        detached.add_kept(ChunkKind::Items, &items_from(0, 10), owner);
        assert!(detached.kept.is_empty());

        // A group sealing more chunks than a live commit does (a load) keeps none of them.
        let mut group = cold.group().unwrap();
        let loaded: Vec<ChunkRef> = (0..=KEPT_CHUNKS_PER_GROUP as i64)
            .map(|at| group.add_kept(ChunkKind::Bucket, &items_from(1_000 * at, 10), owner))
            .collect();
        assert!(group.kept.is_empty());
        cold.append(group).unwrap();
        let misses = stats().misses;
        for entry in &loaded {
            cold.items(entry, owner).unwrap();
        }
        assert_eq!(stats().misses, misses + loaded.len() as u64);
    }

    /// A chunk's weight in the cache is its columns' (a key, a sequence and a payload end
    /// an item, a column per measure) and its payloads' bytes.
    #[test]
    fn a_chunks_weight_is_its_columns_and_payloads() {
        let plain = items_from(0, 10);
        let mut measured = plain.clone();
        for stored in &mut measured {
            stored.item = Item::new(stored.item.key, &[Some(1.0), Some(2.0)], "p");
        }
        let payloads: usize = plain.iter().map(|s| s.item.payload.len()).sum();
        let columns = |measures: usize| {
            size_of::<ChunkItems>() + 10 * (8 + 8 + 4) + measures * (size_of::<Vec<f64>>() + 10 * 8)
        };
        let weight = |items: &[Stored]| ChunkItems::from_stored(items).weight();
        assert_eq!(weight(&plain), columns(1) + payloads);
        assert_eq!(weight(&measured), columns(2) + 10);
        // A chunk decoded from its columns weighs what one built from items does, plus the
        // rest of the buffer its payloads share.
        let bucket: Vec<Stored> = (0..60)
            .map(|i| Stored {
                item: Item::new(i * 60, &[Some(i as f64 / 10.0)], Vec::new()),
                seq: i as u64,
            })
            .collect();
        let mut encoded = Vec::new();
        crate::cold::columns::encode(&bucket, &mut encoded);
        let decoded = crate::cold::columns::decode_columns(&Bytes::from(encoded)).unwrap();
        assert_eq!(decoded.weight(), ChunkItems::from_stored(&bucket).weight());
        assert_eq!(decoded.to_stored(), bucket);
    }

    fn map_held(cold: &ColdStore, segment_id: u32) -> Option<(usize, bool)> {
        cold.maps.held(segment_id)
    }

    /// The segment being written is read from the file until it has grown a step (a
    /// sixteenth of a segment, at least 64 KiB) past the map held; then from a map of the
    /// file as it is, which later chunks past it do not replace until the file has grown a
    /// step again; once sealed, from a map of the whole file.
    #[test]
    fn the_segment_being_written_is_mapped_as_it_grows() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(FsStorage::new(dir.path()).unwrap());
        let mut cold = ColdStore::new(
            storage.clone(),
            Arc::new(Cache::new(1 << 20)),
            1 << 20,
            ColdTail::default(),
        );
        cold.map_segments();
        let first = write_chunk(&cold, 0);
        let segment = first.loc.segment_id;
        let items = cold.read_uncached(&first).unwrap();
        assert_eq!(
            map_held(&cold, segment),
            None,
            "under a step: read from the file"
        );

        let mut entries = vec![first];
        while storage.len(&segment_name(segment)).unwrap() < 64 * 1024 {
            entries.push(write_chunk(&cold, 100 * entries.len() as i64));
        }
        let last = entries.last().unwrap().clone();
        let last_items = cold.read_uncached(&last).unwrap();
        let (len, whole) = map_held(&cold, segment).expect("a step grown: mapped");
        assert!(!whole);
        assert_eq!(len as u64, storage.len(&segment_name(segment)).unwrap());
        assert_eq!(cold.read_uncached(&entries[0]).unwrap(), items);

        // A chunk past the map, less than a step later: read from the file.
        let next = write_chunk(&cold, 1_000_000);
        let next_items = cold.read_uncached(&next).unwrap();
        assert_eq!(map_held(&cold, segment), Some((len, false)));
        assert_eq!(next_items.len(), 40);

        cold.seal().unwrap();
        assert_eq!(cold.read_uncached(&next).unwrap(), next_items);
        let file = storage.len(&segment_name(segment)).unwrap();
        assert_eq!(map_held(&cold, segment), Some((file as usize, true)));
        assert_eq!(cold.read_uncached(&last).unwrap(), last_items);
    }

    /// A storage that cannot map in place reads the segment being written from the file,
    /// however much it grew.
    #[test]
    fn a_segment_that_cannot_be_mapped_in_place_is_read_from_the_file() {
        let sim = Arc::new(SimStorage::new());
        let mut cold = ColdStore::new(
            sim.clone(),
            Arc::new(Cache::new(1 << 20)),
            1 << 20,
            ColdTail::default(),
        );
        cold.map_segments();
        let mut entries = Vec::new();
        while entries.is_empty() || sim.len(&segment_name(1)).unwrap() < 128 * 1024 {
            entries.push(write_chunk(&cold, 100 * entries.len() as i64));
        }
        for entry in &entries {
            assert_eq!(cold.read_uncached(entry).unwrap().len(), 40);
        }
        assert_eq!(map_held(&cold, 1), None);
    }

    /// By default (`Options::memory_map` off) no segment is mapped, the one written nor a
    /// sealed one: every chunk is read from its file.
    #[test]
    fn chunks_are_read_from_the_file_unless_maps_are_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(FsStorage::new(dir.path()).unwrap());
        let cold = ColdStore::new(
            storage.clone(),
            Arc::new(Cache::new(1 << 20)),
            1 << 20,
            ColdTail::default(),
        );
        let mut entries = Vec::new();
        while entries.is_empty() || storage.len(&segment_name(1)).unwrap() < 128 * 1024 {
            entries.push(write_chunk(&cold, 100 * entries.len() as i64));
        }
        cold.seal().unwrap();
        for entry in &entries {
            assert_eq!(cold.read_uncached(entry).unwrap().len(), 40);
        }
        assert_eq!(map_held(&cold, 1), None);
    }
}
