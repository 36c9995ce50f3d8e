//! The page store: parent records in B+tree pages, written copy-on-write to the hot log
//! through a page table, made durable by checkpoints.

pub mod checkpoint;
pub mod keys;
pub mod node;
mod range;
pub mod redo;
pub mod table;
pub mod tree;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use rustc_hash::FxHashSet;

use crate::cache::{CacheKey, Owner, Tier};
use crate::cached::{Cache, Cached, Loaded, Unkept};
use crate::error::{Error, Result};
use crate::limits::widths::u32_len;
use crate::log::{
    self, FrameKind, FrameLoc, ReadBuffers, frame::FRAME_HEADER_BYTES, is_page_file, segment_name,
};
use crate::storage::{Segment, SegmentMaps, Storage};
use node::{Checks, LargeRef, Node, PageId, Value};
use table::{PageTable, Slot};

/// The smallest and largest page sizes, and the default.
pub const MIN_PAGE_BYTES: usize = 4 * 1024;
pub const MAX_PAGE_BYTES: usize = 64 * 1024;
pub const DEFAULT_PAGE_BYTES: usize = 16 * 1024;

pub use keys::MAX_TREE_KEY_BYTES;

/// The largest record kept inside a leaf for a given page size: any two entries of at most
/// this size, with keys at the limit, fit one page, so a split always succeeds.
pub fn max_inline_record(page_bytes: usize) -> usize {
    (page_bytes - node::NODE_HEADER_BYTES) / 2 - (2 + MAX_TREE_KEY_BYTES + 1 + 4)
}

/// Reads pages and large records through the cache.
pub struct PageStore {
    pub storage: Arc<dyn Storage>,
    pub cache: Arc<Cache>,
    pub page_bytes: usize,
    /// Buffers for page reads that miss the cache.
    buffers: Arc<ReadBuffers>,
    /// Every hot segment below this id is sealed (see `HotLog::sealed_below`): a page read
    /// from one is a view of the segment's map, not a copy. 0 until a log is attached.
    sealed_below: Arc<AtomicU32>,
    /// Whether a log is attached: from then on the active segment is mapped too, where the
    /// storage maps in place (see [`PageStore::map_for`]).
    map_active: bool,
    /// Maps of hot segments (each held as one `Bytes`, which page views slice); forgotten
    /// before a segment is removed.
    maps: SegmentMaps,
    /// By segment, the offsets of the page frames this process read whole through the
    /// cache and found sound (checksum and key order). A frame below the log's tail is
    /// never written again, in the active segment as in a sealed one (however read: from
    /// a map, or into a buffer), so a page that leaves the cache and comes back is not checked
    /// again (a CRC over a whole page was a quarter of a page load, and checking a leaf's
    /// key order reads every entry where a lookup reads a few); its lengths and bounds
    /// are. Forgotten with the segment. Reads that bypass the cache (`verify`, space
    /// accounting) check every frame whole.
    checked: Mutex<HashMap<u32, FxHashSet<u64>>>,
}

/// Whether a page read may rely on an earlier check of the same frame.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reuse {
    /// A frame whose checksum and key order were found sound before (of a sealed segment,
    /// or of the segment read without a map) is not checked again, but for its lengths and
    /// bounds.
    CheckedFrames,
    /// Every frame is checked.
    Nothing,
}

/// The first bytes of a page frame's payload: the page id.
pub const PAGE_FRAME_PREFIX_BYTES: usize = 8;

/// How many page read buffers wait for reuse at most (a few hundred KiB at the default
/// page size: a bounded addition to the cache's budget).
const KEPT_READ_BUFFERS: usize = 32;

/// The cache's name for the page frame at `loc`.
fn page_key(loc: FrameLoc) -> CacheKey {
    CacheKey::Page {
        segment_id: loc.segment_id,
        offset: loc.offset,
    }
}

/// The page store as one request reads it: every page and large record it loads counts,
/// in the cache's statistics, for the request's owner. Cheap to copy; reads the store
/// through `Deref` for everything else.
#[derive(Clone, Copy)]
pub struct Pages<'a> {
    store: &'a PageStore,
    owner: Owner,
}

impl Pages<'_> {
    /// The node of page `id` in `table`.
    pub fn node(&self, table: &PageTable, id: PageId) -> Result<Arc<Node>> {
        self.store.node(table, id, self.owner)
    }

    /// [`Pages::node`], except that a page read from storage is not kept in the cache
    /// yet: it comes back beside the node (see [`Cache::get_or_read`]).
    pub fn node_or_read(
        &self,
        table: &PageTable,
        id: PageId,
    ) -> Result<(Arc<Node>, Option<Unkept>)> {
        self.store.node_or_read(table, id, self.owner)
    }

    /// The record bytes of a leaf value, reading a large record from the log if need be.
    pub fn value_bytes(&self, value: &Value) -> Result<Bytes> {
        self.store.value_bytes(value, self.owner)
    }

    /// Whom this request's reads count for.
    pub fn owner(&self) -> Owner {
        self.owner
    }
}

impl std::ops::Deref for Pages<'_> {
    type Target = PageStore;

    fn deref(&self) -> &PageStore {
        self.store
    }
}

impl PageStore {
    pub fn new(storage: Arc<dyn Storage>, cache: Arc<Cache>, page_bytes: usize) -> PageStore {
        let frame_bytes = FRAME_HEADER_BYTES + PAGE_FRAME_PREFIX_BYTES + page_bytes;
        PageStore {
            storage,
            cache,
            page_bytes,
            buffers: ReadBuffers::new(KEPT_READ_BUFFERS, frame_bytes),
            sealed_below: Arc::new(AtomicU32::new(0)),
            map_active: false,
            maps: SegmentMaps::default(),
            checked: Mutex::default(),
        }
    }

    /// Reads pages from maps of the hot segments: whole for those `sealed_below` says are
    /// sealed, as far as written for the active one. Called once the log is attached (its
    /// torn tail, if any, cut).
    pub fn map_segments(&mut self, sealed_below: Arc<AtomicU32>) {
        self.sealed_below = sealed_below;
        self.map_active = true;
    }

    /// Forgets the map of a hot segment about to be removed (views of it that pages in the
    /// cache still hold keep it until they go), and the frames found sound in it.
    pub fn forget_map(&self, segment_id: u32) {
        self.maps.forget(segment_id);
        self.checked.lock().remove(&segment_id);
    }

    /// A map of the hot segment holding the frame at `loc`, made on first use: of a sealed
    /// segment, the whole file; of the active one, the file as long as it is now, made
    /// again when a frame lies past the map held (the log extends its file a sixteenth of a
    /// segment at a time, so a segment is mapped at most about 17 times while active; maps
    /// replaced stay alive while pages read from them do). `None` for the active segment
    /// before a log is attached or where the storage cannot map in place, and for a frame
    /// past the active segment's file: the frame is then read into a buffer.
    fn map_for(&self, loc: FrameLoc) -> Result<Option<Bytes>> {
        // A page file is mapped as far as written (checkpoints append to the last one), once
        // the segments are: with `Options::memory_map`.
        let sealed = !is_page_file(loc.segment_id)
            && loc.segment_id < self.sealed_below.load(Ordering::Acquire);
        let segment = match sealed {
            true => Segment::Sealed,
            false if self.map_active => Segment::Growing { min_growth: 0 },
            false => return Ok(None),
        };
        let end = loc.offset.saturating_add(u64::from(loc.len));
        let name = || segment_name(loc.segment_id);
        self.maps.get(
            self.storage.as_ref(),
            loc.segment_id,
            name,
            segment,
            end,
            |_| Ok(()),
        )
    }

    /// Whether this process read the frame at `loc` whole and found it sound before.
    fn checked_before(&self, loc: FrameLoc) -> bool {
        self.checked
            .lock()
            .get(&loc.segment_id)
            .is_some_and(|offsets| offsets.contains(&loc.offset))
    }

    /// This store as a request for `owner` reads it.
    pub fn reading(&self, owner: Owner) -> Pages<'_> {
        Pages { store: self, owner }
    }

    /// This store as maintenance reads it: its requests count for no collection.
    pub fn maintaining(&self) -> Pages<'_> {
        self.reading(Owner::NONE)
    }

    fn node(&self, table: &PageTable, id: PageId, owner: Owner) -> Result<Arc<Node>> {
        match table.get(id) {
            Slot::Dirty(node) => Ok(node.clone()),
            Slot::Disk(loc) => self.load_page(id, *loc, owner),
            Slot::Free => Err(self.tree_corruption(id, "reference to a free page")),
        }
    }

    fn node_or_read(
        &self,
        table: &PageTable,
        id: PageId,
        owner: Owner,
    ) -> Result<(Arc<Node>, Option<Unkept>)> {
        match table.get(id) {
            Slot::Disk(loc) => {
                let loc = *loc;
                let (value, unkept) =
                    self.cache
                        .get_or_read(page_key(loc), Tier::HotPage, owner, || self.load(id, loc))?;
                Ok((self.page_node(id, value)?, unkept))
            }
            _ => Ok((self.node(table, id, owner)?, None)),
        }
    }

    fn load_page(&self, id: PageId, loc: FrameLoc, owner: Owner) -> Result<Arc<Node>> {
        let value = self
            .cache
            .get_or_load(page_key(loc), Tier::HotPage, owner, || self.load(id, loc))?;
        self.page_node(id, value)
    }

    /// Page `id`'s frame at `loc`, read and decoded for the cache.
    fn load(&self, id: PageId, loc: FrameLoc) -> Result<Loaded> {
        let (node, held) = self.read_page_held(id, loc, Reuse::CheckedFrames)?;
        Ok(Loaded {
            weight_bytes: held + node.decoded_overhead(),
            value: Cached::Node(node),
            read_bytes: loc.len as u64,
        })
    }

    #[inline(always)]
    fn page_node(&self, id: PageId, value: Cached) -> Result<Arc<Node>> {
        match value {
            Cached::Node(node) => Ok(node),
            _ => Err(self.tree_corruption(id, "cache holds another kind of object for a page")),
        }
    }

    /// Reads and decodes a page image, bypassing the cache; checks its checksum whatever
    /// was read before.
    pub fn read_page(&self, id: PageId, loc: FrameLoc) -> Result<Arc<Node>> {
        self.read_page_held(id, loc, Reuse::Nothing)
            .map(|(node, _)| node)
    }

    /// `read_page`, and the bytes of memory the page image takes.
    fn read_page_held(
        &self,
        id: PageId,
        loc: FrameLoc,
        reuse: Reuse,
    ) -> Result<(Arc<Node>, usize)> {
        let map = self.map_for(loc)?;
        let check = match reuse == Reuse::CheckedFrames && self.checked_before(loc) {
            true => log::Payload::CheckedBefore,
            false => log::Payload::Check,
        };
        let (header, payload, held) = match &map {
            Some(map) => log::read_frame_mapped(map, loc, check)?,
            None => log::read_frame_pooled(self.storage.as_ref(), loc, &self.buffers, check)?,
        };
        let bad =
            |reason: String| Error::corruption(segment_name(loc.segment_id), loc.offset, reason);
        if header.kind != FrameKind::Page || payload.len() < PAGE_FRAME_PREFIX_BYTES {
            return Err(bad(format!(
                "expected page {id}, found a {:?} frame",
                header.kind
            )));
        }
        let stored_id = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
        if stored_id != id {
            return Err(bad(format!("expected page {id}, found page {stored_id}")));
        }
        let body = payload.slice(PAGE_FRAME_PREFIX_BYTES..);
        if body.len() > self.page_bytes {
            return Err(bad(format!(
                "page of {} bytes over the page size",
                body.len()
            )));
        }
        let checks = match check {
            log::Payload::CheckedBefore => Checks::Structure,
            log::Payload::Check => Checks::All,
        };
        let node = Node::decode_checked(body, MAX_TREE_KEY_BYTES, checks).map_err(bad)?;
        if (reuse, check) == (Reuse::CheckedFrames, log::Payload::Check) {
            let mut checked = self.checked.lock();
            checked
                .entry(loc.segment_id)
                .or_default()
                .insert(loc.offset);
        }
        Ok((Arc::new(node), held))
    }

    fn value_bytes(&self, value: &Value, owner: Owner) -> Result<Bytes> {
        match value {
            Value::Inline(bytes) | Value::Held(bytes) => Ok(bytes.clone()),
            Value::Large(large) => self.read_large(*large, owner),
        }
    }

    /// A record's bytes for a maintenance copy: a large record is read from its segment
    /// and not kept in the cache, so moving records does not evict the readers' pages.
    pub fn value_bytes_uncached(&self, value: &Value) -> Result<Bytes> {
        match value {
            Value::Inline(bytes) | Value::Held(bytes) => Ok(bytes.clone()),
            Value::Large(large) => self.read_large_uncached(*large),
        }
    }

    fn read_large(&self, large: LargeRef, owner: Owner) -> Result<Bytes> {
        let key = CacheKey::Large {
            segment_id: large.segment_id,
            offset: large.frame_offset,
        };
        let value = self.cache.get_or_load(key, Tier::HotPage, owner, || {
            let bytes = self.read_large_uncached(large)?;
            Ok(Loaded {
                weight_bytes: bytes.len(),
                read_bytes: bytes.len() as u64,
                value: Cached::Bytes(bytes),
            })
        })?;
        match value {
            Cached::Bytes(bytes) => Ok(bytes),
            _ => Err(Error::corruption(
                segment_name(large.segment_id),
                large.frame_offset,
                "cache holds another kind of object for a large record",
            )),
        }
    }

    fn read_large_uncached(&self, large: LargeRef) -> Result<Bytes> {
        let name = segment_name(large.segment_id);
        let bad = |reason: String| Error::corruption(&name, large.frame_offset, reason);
        let file_len = self.storage.len(&name).map_err(|error| match error {
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                bad("the segment holding this large record is missing".to_string())
            }
            error => error,
        })?;
        let header_bytes =
            self.read_bounded(&name, large.frame_offset, FRAME_HEADER_BYTES, file_len)?;
        let available = file_len - large.frame_offset;
        let header =
            log::frame::decode_header(&header_bytes, available).map_err(|e| bad(e.describe()))?;
        let loc = large.frame(u32_len(FRAME_HEADER_BYTES) + header.payload_len);
        let (header, payload) = log::read_frame(self.storage.as_ref(), loc)?;
        if !matches!(header.kind, FrameKind::BatchPart | FrameKind::BatchEnd) {
            return Err(bad(format!("large record in a {:?} frame", header.kind)));
        }
        let start = large.value_offset as usize;
        let end = start + large.value_len as usize;
        if end > payload.len() {
            return Err(bad("large record extends past its frame".to_string()));
        }
        Ok(payload.slice(start..end))
    }

    fn read_bounded(&self, name: &str, offset: u64, len: usize, file_len: u64) -> Result<Vec<u8>> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > file_len)
        {
            return Err(Error::corruption(
                name,
                offset,
                "reference past the end of the file",
            ));
        }
        self.storage.read_vec(name, offset, len)
    }

    pub fn tree_corruption(&self, id: PageId, reason: &str) -> Error {
        Error::corruption("page table", id, format!("page {id}: {reason}"))
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use super::*;
    use crate::log::HotLog;
    use crate::storage::SimStorage;

    /// A sealed hot segment holding one page frame of page `id`; its location.
    fn sealed_page(id: PageId) -> (Arc<SimStorage>, HotLog, FrameLoc) {
        sealed_node(
            id,
            Node::leaf(
                (0..40u32)
                    .map(|i| {
                        let key = Bytes::from(format!("key{i:04}"));
                        (key, Value::Inline(Bytes::from(vec![b'v'; 50])))
                    })
                    .collect(),
            ),
        )
    }

    /// A sealed hot segment holding `node` as page `id`; its location.
    fn sealed_node(id: PageId, node: Node) -> (Arc<SimStorage>, HotLog, FrameLoc) {
        let sim = Arc::new(SimStorage::new());
        let mut log = HotLog::create(sim.clone(), 1, 1, 1 << 20).unwrap();
        let loc = append_node(&mut log, id, &node);
        log.seal().unwrap();
        (sim, log, loc)
    }

    /// Appends `node` as page `id` to the log's active segment; its location.
    fn append_node(log: &mut HotLog, id: PageId, node: &Node) -> FrameLoc {
        let mut group = log.group().unwrap();
        let start = group.begin();
        group.buf().extend_from_slice(&id.to_le_bytes());
        node.encode(group.buf());
        let loc = group.finish(start, FrameKind::Page);
        log.append(group).unwrap();
        loc
    }

    fn store(sim: &Arc<SimStorage>, log: &HotLog) -> PageStore {
        let mut pages = PageStore::new(sim.clone(), Arc::new(Cache::new(1 << 20)), 4096);
        pages.map_segments(log.sealed_below());
        pages
    }

    fn checked(pages: &PageStore, loc: FrameLoc) -> bool {
        pages.checked_before(loc)
    }

    /// Records the frame at `loc` as read and found sound before.
    fn mark_checked(pages: &PageStore, loc: FrameLoc) {
        let mut checked = pages.checked.lock();
        checked
            .entry(loc.segment_id)
            .or_default()
            .insert(loc.offset);
    }

    #[test]
    fn a_cached_page_frame_is_checked_once_and_read_page_checks_every_time() {
        let id = 7;
        let (sim, log, loc) = sealed_page(id);
        let pages = store(&sim, &log);
        assert!(!checked(&pages, loc));
        let node = pages.load_page(id, loc, Owner::NONE).unwrap();
        assert!(
            checked(&pages, loc),
            "a sound frame read through the cache is recorded"
        );
        assert_eq!(pages.read_page(id, loc).unwrap(), node);

        // A byte of the page's body damaged in the file: a store that recorded the frame as
        // checked (as if it had read it before the damage) reads it through the cache
        // without its checksum; a read that bypasses the cache still finds the damage.
        let name = segment_name(loc.segment_id);
        let mut bytes = sim.file_bytes(&name).unwrap();
        let at = loc.offset as usize + loc.len as usize - 3;
        bytes[at] ^= 0x01;
        sim.set_file_bytes(&name, bytes);
        let damaged = store(&sim, &log);
        assert!(matches!(
            damaged.read_page(id, loc),
            Err(Error::Corruption { .. })
        ));
        assert!(matches!(
            damaged.load_page(id, loc, Owner::NONE),
            Err(Error::Corruption { .. })
        ));
        assert!(!checked(&damaged, loc), "a damaged frame is not recorded");
        let trusting = store(&sim, &log);
        mark_checked(&trusting, loc);
        assert!(trusting.load_page(id, loc, Owner::NONE).is_ok());
        assert!(matches!(
            trusting.read_page(id, loc),
            Err(Error::Corruption { .. })
        ));
        // The header is checked every time: a frame said to be longer is refused.
        let longer = FrameLoc {
            len: loc.len + 1,
            ..loc
        };
        assert!(matches!(
            trusting.read_page_held(id, longer, Reuse::CheckedFrames),
            Err(Error::Corruption { .. })
        ));
    }

    /// Appends page `id` holding `entries` entries of `value_bytes` each to the log's active
    /// segment; its location.
    fn append_page(log: &mut HotLog, id: PageId, entries: u32, value_bytes: usize) -> FrameLoc {
        let node = Node::leaf(
            (0..entries)
                .map(|i| {
                    let key = Bytes::from(format!("page{id}-key{i:04}"));
                    (key, Value::Inline(Bytes::from(vec![b'v'; value_bytes])))
                })
                .collect(),
        );
        append_node(log, id, &node)
    }

    /// The length of the map held for `segment_id`, and whether it is of the whole
    /// (sealed) segment; `None` without one.
    fn map_held(pages: &PageStore, segment_id: u32) -> Option<(usize, bool)> {
        pages.maps.held(segment_id)
    }

    /// The active segment of a storage that maps in place is read from a map of the file as
    /// it is: frames appended within the map's length show through it, one past it gets a
    /// new, longer map (pages read from the old one stay sound), and once the segment is
    /// sealed (its zeros past the last frame cut) its whole map replaces them.
    #[test]
    fn the_active_segment_is_read_from_maps_that_grow_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(crate::storage::FsStorage::new(dir.path()).unwrap());
        // A 1 MiB segment: the file grows 64 KiB at a time.
        let mut log = HotLog::create(storage.clone(), 1, 1, 1 << 20).unwrap();
        let mut pages = PageStore::new(storage.clone(), Arc::new(Cache::new(1 << 20)), 4096);
        let segment = 1;
        let first = append_page(&mut log, 1, 20, 40);
        // Before a log is attached the active segment is read into a buffer.
        pages.read_page(1, first).unwrap();
        assert_eq!(map_held(&pages, segment), None);
        pages.map_segments(log.sealed_below());

        let node = pages.read_page(1, first).unwrap();
        let (len, whole) = map_held(&pages, segment).expect("the active segment mapped");
        assert!(!whole);
        assert_eq!(len as u64, storage.len(&segment_name(segment)).unwrap());
        assert!(len as u64 >= first.offset + u64::from(first.len));

        // A frame appended inside the file's length is read through the same map.
        let second = append_page(&mut log, 2, 20, 40);
        assert!(second.offset + u64::from(second.len) <= len as u64);
        pages.read_page(2, second).unwrap();
        assert_eq!(map_held(&pages, segment), Some((len, false)));

        // Frames past it: the file grew, and the page past the old map gets a new one.
        let mut last = second;
        let mut id = 3;
        while last.offset + u64::from(last.len) <= len as u64 {
            last = append_page(&mut log, id, 20, 150);
            id += 1;
        }
        let far = pages.read_page(id - 1, last).unwrap();
        let (longer, whole) = map_held(&pages, segment).unwrap();
        assert!(!whole && longer > len, "{longer} after {len}");
        assert_eq!(*pages.read_page(1, first).unwrap(), *node);

        // Sealed: the roll cuts the zeros past the last frame; the node read from the old
        // map is intact, and reads now use a map of the whole file.
        log.seal().unwrap();
        let file = storage.len(&segment_name(segment)).unwrap();
        assert_eq!(file, last.offset + u64::from(last.len));
        assert_eq!(*pages.read_page(1, first).unwrap(), *node);
        assert_eq!(*pages.read_page(id - 1, last).unwrap(), *far);
        assert_eq!(map_held(&pages, segment), Some((longer, false)));
        pages.forget_map(segment);
        assert_eq!(*pages.read_page(id - 1, last).unwrap(), *far);
        assert_eq!(map_held(&pages, segment), Some((file as usize, true)));
    }

    /// A storage that cannot map in place (the simulation) reads the active segment's
    /// frames into buffers.
    #[test]
    fn an_active_segment_that_cannot_be_mapped_is_read_into_buffers() {
        let sim = Arc::new(SimStorage::new());
        let mut log = HotLog::create(sim.clone(), 1, 1, 1 << 20).unwrap();
        let loc = append_page(&mut log, 1, 20, 40);
        let pages = store(&sim, &log);
        pages.read_page(1, loc).unwrap();
        assert_eq!(map_held(&pages, 1), None);
        log.seal().unwrap();
        pages.read_page(1, loc).unwrap();
        assert!(map_held(&pages, 1).is_some_and(|(_, whole)| whole));
    }

    /// A frame read without a map (every frame by default, `Options::memory_map` off) is
    /// checked once too, the record kept by segment; `read_page` checks every time.
    #[test]
    fn a_frame_read_into_a_buffer_is_checked_once() {
        let id = 7;
        let (sim, _log, loc) = sealed_page(id);
        // No map attached: every segment is read into a buffer.
        let pages = PageStore::new(sim.clone(), Arc::new(Cache::new(1 << 20)), 4096);
        let node = pages.load_page(id, loc, Owner::NONE).unwrap();
        assert!(checked(&pages, loc), "a sound frame read through the cache");

        let name = segment_name(loc.segment_id);
        let mut bytes = sim.file_bytes(&name).unwrap();
        let at = loc.offset as usize + loc.len as usize - 3;
        bytes[at] ^= 0x01;
        sim.set_file_bytes(&name, bytes);
        // Read again as after an eviction: trusted; bypassing the cache: the damage found.
        let (again, _) = pages.read_page_held(id, loc, Reuse::CheckedFrames).unwrap();
        assert_ne!(again, node, "the damaged byte is in a value");
        assert!(matches!(
            pages.read_page(id, loc),
            Err(Error::Corruption { .. })
        ));
        // The record is by segment: the same offset checked in another segment, and this
        // segment's forgotten with it, count for nothing here.
        pages.forget_map(loc.segment_id);
        mark_checked(
            &pages,
            FrameLoc {
                segment_id: loc.segment_id + 1,
                ..loc
            },
        );
        assert!(matches!(
            pages.read_page_held(id, loc, Reuse::CheckedFrames),
            Err(Error::Corruption { .. })
        ));
        assert!(!checked(&pages, loc));
    }

    /// A leaf's key order is checked with its checksum: on the first read through the
    /// cache, and by every read that bypasses it; a frame checked before is read without.
    #[test]
    fn key_order_is_checked_with_the_checksum() {
        let id = 9;
        let unsorted = Node::leaf(vec![
            (Bytes::from_static(b"b"), Value::Inline(Bytes::new())),
            (Bytes::from_static(b"a"), Value::Inline(Bytes::new())),
        ]);
        let (sim, log, loc) = sealed_node(id, unsorted.clone());
        let pages = store(&sim, &log);
        assert!(matches!(
            pages.load_page(id, loc, Owner::NONE),
            Err(Error::Corruption { .. })
        ));
        assert!(!checked(&pages, loc));
        mark_checked(&pages, loc);
        assert_eq!(*pages.load_page(id, loc, Owner::NONE).unwrap(), unsorted);
        assert!(matches!(
            pages.read_page(id, loc),
            Err(Error::Corruption { .. })
        ));
    }
}
