//! The write path and the published versions: group commit of batches into the hot log,
//! checkpoints, and the state readers see.

pub(crate) mod background;
mod compact;
pub(crate) mod decode;
pub(crate) mod read;
mod recovery;
mod space;
pub(crate) mod stage;
mod verify;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use bytes::{BufMut, Bytes};
use parking_lot::{Mutex, RwLock};

use crate::item::NewItem;
pub use compact::CompactReport;
pub use space::{SegmentSpace, SpaceStats, TierSpace};
pub use verify::{Inspection, SegmentInfo, VerifyReport};

use crate::cache::{CacheKey, CacheStats, CacheValue, Tier};
use crate::catalog::{Catalog, CollectionInfo, CollectionSpec};
use crate::cold::{ColdGroup, ColdStore};
use crate::log::{FrameKind, Group, HotLog, LogTail};
use crate::page::checkpoint::Checkpoint;
use crate::page::node::{LargeRef, Node, PageId, Value};
use crate::page::redo::Op;
use crate::page::table::Slot;
use crate::page::tree::Tree;
use crate::page::{PageStore, max_inline_record};
use crate::storage::{LockGuard, Storage};
use crate::{Durability, Error, MAX_BATCH_BYTES, MAX_KEY_BYTES, Options, Result};

/// Redo frames are closed once their payload reaches this size.
const FRAME_TARGET_BYTES: usize = 1024 * 1024;
/// A checkpoint writes its page images in groups of about this size.
const CHECKPOINT_GROUP_BYTES: usize = 4 * 1024 * 1024;
/// A sealed log segment whose live pages fill less than this share of it is cleaned.
const CLEAN_BELOW: f64 = 0.5;
/// Page bytes a checkpoint copies out of sparse segments, at most (one segment at least).
const CLEAN_BYTES: u64 = 8 * 1024 * 1024;

/// What readers see: one committed state.
#[derive(Clone)]
pub(crate) struct Version {
    pub tree: Tree,
    pub catalog: Arc<Catalog>,
    /// Batches committed since the database was opened.
    pub commits: u64,
    /// Even, and grows by two with each commit group; a version that changes no record (a
    /// checkpoint's) keeps its predecessor's. The record tier keeps what readers read with
    /// the generation they read it at (see `record_bytes`, `publish_changes`).
    pub generation: u64,
}

/// A batch's operations as the API received them, before they are resolved to redo.
#[derive(Clone, Debug)]
pub(crate) enum BatchOp {
    CreateCollection(CollectionSpec),
    Put {
        collection: Arc<str>,
        key: Bytes,
        body: Bytes,
    },
    Delete {
        collection: Arc<str>,
        key: Bytes,
    },
    Push {
        collection: Arc<str>,
        key: Bytes,
        field: Arc<str>,
        item: NewItem,
    },
    Remove {
        collection: Arc<str>,
        key: Bytes,
        field: Arc<str>,
        item_key: i64,
    },
    ExpireBuckets {
        collection: Arc<str>,
        key: Bytes,
        field: Arc<str>,
        before: i64,
    },
}

struct Request {
    /// Taken by the group that stages them.
    ops: Mutex<Vec<BatchOp>>,
    result: Mutex<Option<Result<()>>>,
}

struct Writer {
    log: HotLog,
    /// Where the redo after the last checkpoint starts.
    checkpoint_tail: LogTail,
    bytes_since_checkpoint: u64,
    /// Cold chunk bytes written since the last checkpoint: the chunks they replace stay on
    /// disk until a checkpoint stops needing them, so these count towards the next one too.
    cold_since_checkpoint: u64,
    checkpoint_sequence: u64,
    counters: WriterCounters,
}

/// What the writer counts for `Db::stats`.
#[derive(Clone, Copy, Debug, Default)]
struct WriterCounters {
    checkpoints: u64,
    commit_groups: u64,
    /// Log bytes replayed when the database was opened.
    replayed_bytes: u64,
}

/// Counters shown by `Db::stats`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    pub cache: CacheStats,
    /// Batches committed since open.
    pub commits: u64,
    /// Groups the commits were written in (one write, and one sync under `Immediate`, each).
    pub commit_groups: u64,
    pub log_syncs: u64,
    pub checkpoints: u64,
    /// Log bytes replayed at open; bounded by `Options::checkpoint_bytes` plus one group.
    pub replayed_bytes: u64,
    pub dirty_pages: u64,
    /// Bytes of large records changed by patches and held in memory until they are logged
    /// whole (at most a quarter of `Options::cache_bytes` after any commit).
    pub held_bytes: u64,
    pub next_lsn: u64,
    pub durable_lsn: u64,
    pub log_segments: u64,
    pub log_bytes: u64,
}

/// The state shared by all clones of a `Db`.
pub(crate) struct Shared {
    pub pages: PageStore,
    pub cold: ColdStore,
    pub options: Options,
    current: RwLock<Arc<Version>>,
    writer: Mutex<Writer>,
    queue: Mutex<Vec<Arc<Request>>>,
    /// Replaced versions some reader still holds.
    retired: Mutex<Vec<Weak<Version>>>,
    /// The current version's generation, odd while a commit group removes the records it
    /// changes and publishes (see `publish_changes`).
    pub(crate) record_epoch: AtomicU64,
    /// Log segments no checkpoint needs any more, each removed once the readers that could
    /// still read from it are gone.
    doomed: Mutex<Vec<Doomed>>,
    pub(crate) maintenance: Arc<background::Maintenance>,
    _lock: Box<dyn LockGuard>,
}

/// A sealed log segment that is mostly dead: what of it the tree still needs.
struct Sparse {
    segment_id: u32,
    page_bytes: u64,
    pages: Vec<PageId>,
    /// Bytes of large records the tree refers to in it.
    large_bytes: u64,
}

impl Sparse {
    fn live_bytes(&self) -> u64 {
        self.page_bytes + self.large_bytes
    }
}

/// Segment files waiting for the versions that may refer to them.
struct Doomed {
    readers: Vec<Weak<Version>>,
    files: Vec<String>,
}

/// A version being changed by a group of batches (or by replay).
pub(crate) struct Txn {
    pub tree: Tree,
    pub catalog: Arc<Catalog>,
    /// Parent records the transaction put, patched or deleted: what its commit takes out of
    /// the record tier.
    pub written: Vec<Bytes>,
}

impl Txn {
    pub fn new(tree: Tree, catalog: Arc<Catalog>) -> Txn {
        Txn {
            tree,
            catalog,
            written: Vec::new(),
        }
    }

    /// Lists `key` among the records the commit changes, if it is a parent record's (the
    /// only records the record tier keeps).
    pub fn note_written(&mut self, key: &Bytes) {
        if crate::page::keys::is_parent(key) {
            self.written.push(key.clone());
        }
    }
}

/// Applies one redo op to a transaction; shared by commit and replay so both build the
/// same pages. `large` locates a `Put`'s value in the log when it is too big for a leaf.
pub(crate) fn apply(
    pages: &PageStore,
    txn: &mut Txn,
    op: &Op,
    large: Option<LargeRef>,
) -> Result<()> {
    let key = match op {
        Op::Put { key, .. }
        | Op::Delete { key }
        | Op::DeleteRange { start: key, .. }
        | Op::Patch { key, .. } => Some(key),
        Op::CreateCollection { .. } | Op::ColdChunk(_) | Op::ColdBytes { .. } => None,
    };
    let _owner = key
        .and_then(|key| crate::page::keys::collection_of(key))
        .map(crate::cache::attribute);
    if let Op::Put { key, .. } | Op::Delete { key } | Op::Patch { key, .. } = op {
        txn.note_written(key);
    }
    match op {
        Op::CreateCollection { id, spec } => {
            Arc::make_mut(&mut txn.catalog).insert(CollectionInfo {
                id: *id,
                spec: spec.clone(),
            });
        }
        Op::Put { key, value } => {
            let value = match large {
                Some(large) => Value::Large(large),
                None => Value::Inline(value.clone()),
            };
            txn.tree.insert(pages, key.clone(), value)?;
        }
        Op::Delete { key } => {
            txn.tree.remove(pages, key)?;
        }
        Op::DeleteRange { start, end } => {
            let mut doomed = Vec::new();
            let mut cursor = txn.tree.cursor(pages, std::ops::Bound::Included(start))?;
            while let Some((key, _)) = cursor.next(&txn.tree, pages)? {
                if key >= *end {
                    break;
                }
                doomed.push(key);
            }
            for key in doomed {
                txn.tree.remove(pages, &key)?;
                txn.note_written(&key);
            }
        }
        // The chunk is in its cold segment already; replay checks that it survived, or
        // writes it again from the redo that carries it.
        Op::ColdChunk(_) | Op::ColdBytes { .. } => {}
        Op::Patch {
            key,
            old_len,
            edits,
        } => {
            let bad = |reason: String| {
                Error::corruption("hot log", 0, format!("patch of {key:x?}: {reason}"))
            };
            let old = match txn.tree.get(pages, key)? {
                Some(value) => pages.value_bytes(&value)?,
                None => return Err(bad("no record to patch".to_string())),
            };
            let value = crate::page::redo::apply_patch(&old, *old_len, edits).map_err(bad)?;
            txn.tree
                .insert(pages, key.clone(), patched_value(pages, Bytes::from(value)))?;
        }
    }
    Ok(())
}

/// Held records (large records changed by patches, in memory until logged whole) are
/// logged once they hold more than this share of the cache's budget: memory outside the
/// cache stays in proportion with it.
const HELD_SHARE_OF_CACHE: usize = 4;

/// A patch's result as a leaf holds it: inline, or held until the next checkpoint when too
/// large for a leaf.
fn patched_value(pages: &PageStore, value: Bytes) -> Value {
    if value.len() > max_inline_record(pages.page_bytes) {
        Value::Held(value)
    } else {
        Value::Inline(value)
    }
}

/// True when a `Put` value of this length stays in the log rather than in a leaf.
pub(crate) fn is_large(op: &Op, max_inline: usize) -> bool {
    matches!(op, Op::Put { value, .. } if value.len() > max_inline)
}

pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::KeyTooLarge {
            size: key.len() as u64,
            limit: MAX_KEY_BYTES as u64,
        });
    }
    Ok(())
}

/// The most cold bytes a batch's redo carries (its sealed buckets and tails, typically a
/// few KiB); a batch that writes more syncs them before its redo.
const MAX_CARRIED_COLD_BYTES: usize = 256 * 1024;

/// How a group's redo refers to the cold chunks it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChunkRedo {
    /// The redo carries their bytes: they need not be durable before it (replay writes
    /// back those that were lost).
    Carried,
    /// The redo names where they are: they are made durable before it.
    Located,
}

impl Shared {
    pub fn open(storage: Arc<dyn Storage>, options: Options) -> Result<Shared> {
        recovery::open(storage, options)
    }

    pub fn current(&self) -> Arc<Version> {
        self.current.read().clone()
    }

    fn max_inline(&self) -> usize {
        max_inline_record(self.pages.page_bytes)
    }

    fn apply(&self, txn: &mut Txn, op: &Op, large: Option<LargeRef>) -> Result<()> {
        apply(&self.pages, txn, op, large)
    }

    /// Commits a batch: atomic, and durable on return under `Durability::Immediate`.
    /// Concurrent commits are grouped: one thread writes (and syncs) them all at once.
    pub fn commit(&self, ops: Vec<BatchOp>) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let request = Arc::new(Request {
            ops: Mutex::new(ops),
            result: Mutex::new(None),
        });
        self.queue.lock().push(request.clone());
        let mut writer = self.writer.lock();
        if let Some(result) = request.result.lock().take() {
            return result;
        }
        let requests = std::mem::take(&mut *self.queue.lock());
        self.commit_group(&mut writer, &requests);
        if self.current().tree.held_bytes > (self.options.cache_bytes / HELD_SHARE_OF_CACHE) as u64
        {
            // The batches are committed; a failed write makes the next write fail.
            let _ = self.write_held(&mut writer);
        }
        let pressure = self.checkpoint_pressure(&writer);
        if pressure >= self.options.checkpoint_bytes {
            if self.maintenance.running() && pressure < 2 * self.options.checkpoint_bytes {
                self.maintenance.wake();
            } else {
                // The batches are committed; a failed checkpoint makes the next write fail.
                let _ = self.checkpoint_locked(&mut writer, self.options.reclaim);
                drop(writer);
                if self.options.reclaim {
                    // The compaction step that follows a checkpoint: the thread's, if any.
                    if self.maintenance.running() {
                        self.maintenance.wake();
                    } else {
                        let _ = self.reclaim_step();
                    }
                }
            }
        }
        let result = request.result.lock().take();
        result.unwrap_or_else(|| {
            Err(Error::WriteFailed {
                reason: "batch was not processed by its group".to_string(),
            })
        })
    }

    fn commit_group(&self, writer: &mut Writer, requests: &[Arc<Request>]) {
        let base = self.current();
        let mut txn = Txn::new(base.tree.clone(), base.catalog.clone());
        let groups = self.cold_synced_before_roll(writer).and_then(|()| {
            let cold = self.cold.group()?;
            Ok((writer.log.group()?, cold))
        });
        let (mut group, mut cold) = match groups {
            Ok(groups) => groups,
            Err(error) => return fail_all(requests, error),
        };
        let mut accepted = Vec::with_capacity(requests.len());
        let mut chunks = ChunkRedo::Carried;
        for request in requests {
            let marks = (group.mark(), cold.mark());
            // A savepoint costs copies; only a group of several batches needs one.
            let savepoint = (requests.len() > 1).then(|| (txn.tree.clone(), txn.catalog.clone()));
            let ops = std::mem::take(&mut *request.ops.lock());
            match self.stage(&mut txn, &mut group, &mut cold, ops) {
                Ok(redo) => {
                    if redo == ChunkRedo::Located {
                        chunks = ChunkRedo::Located;
                    }
                    accepted.push(request.clone());
                }
                Err(error) => {
                    *request.result.lock() = Some(Err(error));
                    group.rollback(marks.0);
                    cold.rollback(marks.1);
                    match savepoint {
                        Some((tree, catalog)) => {
                            // The keys it wrote stay listed: removing a record from the
                            // record tier that did not change costs one read.
                            txn.tree = tree;
                            txn.catalog = catalog;
                        }
                        None => return,
                    }
                }
            }
        }
        if accepted.is_empty() {
            return;
        }
        let batches = accepted.len() as u64;
        let written = self.write_group(writer, &base, txn, (group, cold, chunks), batches);
        if let Err(error) = written {
            return fail_all(&accepted, error);
        }
        for request in accepted {
            *request.result.lock() = Some(Ok(()));
        }
    }

    /// Writes a group's chunks, then its redo (under `Immediate` the log is synced, and the
    /// chunks before it when the redo does not carry them),
    /// and publishes the transaction as the new version; `batches` counts the user batches
    /// in it.
    fn write_group(
        &self,
        writer: &mut Writer,
        base: &Version,
        txn: Txn,
        (group, cold, chunks): (Group, ColdGroup, ChunkRedo),
        batches: u64,
    ) -> Result<()> {
        let bytes = group.bytes() as u64;
        let cold_bytes = cold.mark() as u64;
        self.cold.append(cold)?;
        writer.log.append(group)?;
        if self.options.durability == Durability::Immediate {
            if chunks == ChunkRedo::Located {
                self.cold.sync()?;
            }
            writer.log.sync()?;
        }
        self.publish_changes(
            Version {
                tree: txn.tree.pin_root(&self.pages),
                catalog: txn.catalog,
                commits: base.commits + batches,
                // Set by `publish_changes`.
                generation: base.generation,
            },
            &txn.written,
        );
        writer.bytes_since_checkpoint += bytes;
        writer.cold_since_checkpoint += cold_bytes;
        writer.counters.commit_groups += 1;
        Ok(())
    }

    /// Moving to a new log segment syncs the old one; the chunks its redo refers to must
    /// be durable first.
    fn cold_synced_before_roll(&self, writer: &Writer) -> Result<()> {
        if writer.log.will_roll() {
            self.cold.sync()
        } else {
            Ok(())
        }
    }

    /// Resolves a batch into redo, encodes it into the group's frames and applies it to the
    /// transaction; returns how its redo refers to the cold chunks it wrote. Every limit is
    /// checked before anything is encoded.
    fn stage(
        &self,
        txn: &mut Txn,
        group: &mut Group,
        cold: &mut ColdGroup,
        ops: Vec<BatchOp>,
    ) -> Result<ChunkRedo> {
        let mut stager = stage::Stager::new(self, txn);
        let cold_mark = cold.mark();
        for op in ops {
            stager.apply(op, cold)?;
        }
        let (mut redo, patched) = stager.finish()?;
        let chunks = match cold.written_since(cold_mark) {
            None => ChunkRedo::Carried,
            // The chunks' bytes go first: replay puts back what was lost before it checks
            // them. Carried only where that spares a sync (an `Immediate` commit) and costs
            // little: a bulk load's chunks are written once, and synced.
            Some((loc, bytes))
                if self.options.durability == Durability::Immediate
                    && bytes.len() <= MAX_CARRIED_COLD_BYTES =>
            {
                redo.insert(0, Op::ColdBytes { loc, bytes });
                ChunkRedo::Carried
            }
            Some(_) => ChunkRedo::Located,
        };
        self.encode_redo(txn, group, &redo, &patched)?;
        Ok(chunks)
    }

    /// Encodes one batch's redo into the group's frames (a large value in a frame of its
    /// own) and applies it to the transaction. `patched` holds the value each `Patch` of the
    /// redo makes, in order: the transaction takes it as it is instead of patching.
    fn encode_redo(
        &self,
        txn: &mut Txn,
        group: &mut Group,
        redo: &[Op],
        patched: &[Bytes],
    ) -> Result<()> {
        let mut patched = patched.iter();
        let mut open_frame: Option<usize> = None;
        let start_bytes = group.bytes();
        for op in redo {
            let large = is_large(op, self.max_inline());
            if let Some(start) = open_frame
                && (large || group.payload_len(start) + op.encoded_len() > FRAME_TARGET_BYTES)
            {
                group.finish(start, FrameKind::BatchPart);
                open_frame = None;
            }
            let start = *open_frame.get_or_insert_with(|| group.begin());
            let value_at = op.encode(group.buf());
            if group.bytes() - start_bytes > MAX_BATCH_BYTES {
                return Err(Error::BatchTooLarge {
                    size: (group.bytes() - start_bytes) as u64,
                    limit: MAX_BATCH_BYTES as u64,
                });
            }
            let large_ref = large.then(|| LargeRef {
                segment_id: group.segment_id(),
                frame_offset: group.offset_of(start),
                value_offset: (value_at - start - crate::log::frame::FRAME_HEADER_BYTES) as u32,
                value_len: match op {
                    Op::Put { value, .. } => value.len() as u32,
                    _ => 0,
                },
            });
            let value = match op {
                Op::Patch { .. } => patched.next(),
                _ => None,
            };
            match (op, value) {
                (Op::Patch { key, .. }, Some(value)) => {
                    debug_assert!(self.patch_makes(txn, op, value).unwrap_or(true));
                    let value = patched_value(&self.pages, value.clone());
                    txn.tree.insert(&self.pages, key.clone(), value)?;
                    txn.note_written(key);
                }
                _ => self.apply(txn, op, large_ref)?,
            }
            if large {
                group.finish(start, FrameKind::BatchPart);
                open_frame = None;
            }
        }
        let start = open_frame.unwrap_or_else(|| group.begin());
        group.finish(start, FrameKind::BatchEnd);
        Ok(())
    }

    /// Whether applying `patch` to the transaction's record gives `value` (what replay will
    /// build from the log). A debug check: reading the record may fail with an I/O error
    /// (or a fault injected by a test), which says nothing about the patch and is returned
    /// as the error; any other failure (a patch that does not fit its record) is `false`.
    fn patch_makes(&self, txn: &Txn, patch: &Op, value: &Bytes) -> Result<bool> {
        let mut replayed = Txn::new(txn.tree.clone(), txn.catalog.clone());
        let Op::Patch { key, .. } = patch else {
            return Ok(false);
        };
        let rebuilt = self
            .apply(&mut replayed, patch, None)
            .and_then(|()| replayed.tree.get(&self.pages, key));
        match rebuilt {
            Ok(rebuilt) => Ok(matches!(
                rebuilt,
                Some(Value::Inline(bytes) | Value::Held(bytes)) if bytes == value
            )),
            Err(error @ Error::Io { .. }) => Err(error),
            Err(_) => Ok(false),
        }
    }

    /// Writes every held record to the log as a put of its present value, in a commit of
    /// its own (the frames a large put gets, which leaves references in its place), so that
    /// a checkpoint's pages refer to the log for them.
    fn write_held(&self, writer: &mut Writer) -> Result<()> {
        let base = self.current();
        let held = base.tree.held();
        if held.is_empty() {
            return Ok(());
        }
        let mut txn = Txn::new(base.tree.clone(), base.catalog.clone());
        let redo: Vec<Op> = held
            .into_iter()
            .map(|(key, value)| Op::Put { key, value })
            .collect();
        self.cold_synced_before_roll(writer)?;
        let cold = self.cold.group()?;
        let mut group = writer.log.group()?;
        self.encode_redo(&mut txn, &mut group, &redo, &[])?;
        self.write_group(writer, &base, txn, (group, cold, ChunkRedo::Located), 0)
    }

    /// How far the state is from the last checkpoint: the redo since, the pages changed
    /// since (counted at the page size) or the cold chunk bytes written since, whichever is
    /// most. A checkpoint is due once it reaches `checkpoint_bytes`: the first bounds
    /// recovery, the second the memory that changed pages hold, the third the cold space
    /// that waits for a checkpoint to be given back.
    fn checkpoint_pressure(&self, writer: &Writer) -> u64 {
        let tree = &self.current().tree;
        let dirty_bytes =
            tree.table.dirty_count() as u64 * self.pages.page_bytes as u64 + tree.held_bytes;
        writer
            .bytes_since_checkpoint
            .max(dirty_bytes)
            .max(writer.cold_since_checkpoint)
    }

    /// The maintenance thread's work: the checkpoint commits found due (if still due), then
    /// a cold compaction step.
    pub(crate) fn maintain(&self) -> Result<()> {
        {
            let mut writer = self.writer.lock();
            if self.checkpoint_pressure(&writer) >= self.options.checkpoint_bytes {
                self.checkpoint_locked(&mut writer, self.options.reclaim)?;
            }
        }
        if self.options.reclaim {
            self.reclaim_step()?;
        }
        Ok(())
    }

    /// Sealed log segments mostly dead (live page and large-record bytes under
    /// `CLEAN_BELOW` of the file), sparsest first.
    fn sparse_segments(&self, tree: &Tree, writer: &Writer) -> Result<Vec<Sparse>> {
        let storage = self.pages.storage.as_ref();
        let tail_segment = writer.log.tail().segment_id;
        let mut live: BTreeMap<u32, Sparse> = BTreeMap::new();
        fn entry(live: &mut BTreeMap<u32, Sparse>, segment_id: u32) -> &mut Sparse {
            live.entry(segment_id).or_insert_with(|| Sparse {
                segment_id,
                page_bytes: 0,
                pages: Vec::new(),
                large_bytes: 0,
            })
        }
        for (id, slot) in tree.table.iter() {
            if let Slot::Disk(loc) = slot
                && loc.segment_id < tail_segment
            {
                let sparse = entry(&mut live, loc.segment_id);
                sparse.page_bytes += loc.len as u64;
                sparse.pages.push(id);
            }
        }
        for (&segment_id, &bytes) in tree.large_live.iter() {
            if segment_id < tail_segment {
                entry(&mut live, segment_id).large_bytes += bytes;
            }
        }
        let mut sparse = Vec::new();
        for (segment_id, segment) in live {
            let file_bytes = storage.len(&crate::log::segment_name(segment_id))?;
            let ratio = segment.live_bytes() as f64 / file_bytes.max(1) as f64;
            if ratio < CLEAN_BELOW {
                sparse.push((ratio, segment));
            }
        }
        sparse.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(sparse.into_iter().map(|(_, segment)| segment).collect())
    }

    /// Log cleaning: the live pages of the sparsest segments become dirty in `tree`, so the
    /// checkpoint about to be written copies them to the tail and the segments stop being
    /// needed. At most `CLEAN_BYTES` of pages per checkpoint (one segment at least), which
    /// bounds the time commits wait. A segment still holding a large record the tree refers
    /// to waits until the record has moved (see `relocate_large`). Returns the page bytes
    /// it marked.
    fn clean_sparse_segments(&self, tree: &mut Tree, writer: &Writer) -> Result<u64> {
        let mut moved = 0;
        for segment in self.sparse_segments(tree, writer)? {
            if segment.large_bytes > 0 {
                continue;
            }
            if moved > 0 && moved + segment.page_bytes > CLEAN_BYTES {
                break;
            }
            for id in segment.pages {
                let node = tree.node(&self.pages, id)?;
                tree.table.set(id, Slot::Dirty(node));
            }
            moved += segment.page_bytes;
        }
        Ok(moved)
    }

    /// Publishes a version whose records differ from the current one's in (at most) the
    /// parent records `written`, which leave the record tier first, under the next
    /// generation. While the epoch is odd no reader adds a record to the tier, and a reader
    /// that read before it turned odd adds nothing after (its check of the epoch and its
    /// insertion are under a shard lock, as is each removal here): every record in the tier
    /// is the current version's, as of the generation it carries.
    fn publish_changes(&self, mut version: Version, written: &[Bytes]) {
        let records = &self.pages.cache.records;
        let epoch = self.record_epoch.fetch_add(1, Ordering::SeqCst) + 1;
        for key in written {
            if let Some((collection, key)) = crate::page::keys::split_parent(key) {
                records.remove(collection, key);
            }
        }
        version.generation = epoch + 1;
        self.publish(version);
        self.record_epoch.store(epoch + 1, Ordering::SeqCst);
    }

    /// Makes `version` the one readers see; the one it replaces is remembered while a
    /// reader still holds it, so that no segment it may read from is removed under it.
    fn publish(&self, version: Version) {
        let old = std::mem::replace(&mut *self.current.write(), Arc::new(version));
        let mut retired = self.retired.lock();
        retired.retain(|reader| reader.strong_count() > 0);
        if Arc::strong_count(&old) > 1 {
            retired.push(Arc::downgrade(&old));
        }
    }

    /// Dooms the files of either tier that the checkpoint just written does not need: log
    /// segments before the replay segment with no page image of its table and no large
    /// record of its tree, and cold segments before the cold tail's with no chunk of its
    /// chunk index.
    fn doom_unneeded(&self, checkpoint: &Checkpoint) -> Result<()> {
        let storage = self.pages.storage.as_ref();
        let needed = checkpoint.needed_segments();
        let mut files: Vec<String> = verify::segment_ids(storage)?
            .into_iter()
            .filter(|id| *id < checkpoint.replay_from.segment_id && !needed.contains(id))
            .map(crate::log::segment_name)
            .collect();
        files.extend(self.unneeded_cold(
            &checkpoint.needed_cold_segments(),
            checkpoint.cold_tail.segment_id,
        )?);
        let mut doomed = self.doomed.lock();
        let already: BTreeSet<&String> = doomed.iter().flat_map(|d| &d.files).collect();
        files.retain(|name| !already.contains(name));
        if !files.is_empty() {
            let readers = self.retired.lock().clone();
            doomed.push(Doomed { readers, files });
        }
        Ok(())
    }

    /// Removes the doomed segments no reader can reach any more.
    fn remove_doomed(&self) -> Result<()> {
        let storage = self.pages.storage.as_ref();
        let mut doomed = self.doomed.lock();
        let mut removed = false;
        let mut failed = None;
        doomed.retain(|d| {
            if d.readers.iter().any(|r| r.strong_count() > 0) || failed.is_some() {
                return true;
            }
            for file in &d.files {
                if let Some(id) = crate::cold::chunk::parse_segment_name(file) {
                    self.cold.forget_map(id);
                }
                if let Err(error) = storage.remove(file) {
                    failed = Some(error);
                    return true;
                }
            }
            removed = true;
            false
        });
        if let Some(error) = failed {
            return Err(error);
        }
        if removed {
            storage.sync_dir()?;
        }
        Ok(())
    }

    /// Writes every changed page to the log and a new checkpoint file.
    pub fn checkpoint(&self) -> Result<()> {
        let mut writer = self.writer.lock();
        self.checkpoint_locked(&mut writer, self.options.reclaim)
    }

    /// A checkpoint with the writer held; `clean` copies the live pages of sparse log
    /// segments out first.
    fn checkpoint_locked(&self, writer: &mut Writer, clean: bool) -> Result<()> {
        let result = self.write_checkpoint(writer, clean);
        if let Err(error) = &result {
            // Which of the checkpoint's writes reached the disk is unknown: refuse writes.
            writer.log.poison(error.to_string());
        }
        result
    }

    fn write_checkpoint(&self, writer: &mut Writer, clean: bool) -> Result<()> {
        self.write_held(writer)?;
        let version = self.current();
        // Chunks before the redo and pages that refer to them.
        self.cold.sync()?;
        self.cold_synced_before_roll(writer)?;
        let mut tree = version.tree.clone();
        if clean {
            self.clean_sparse_segments(&mut tree, writer)?;
        }
        if tree.table.dirty_count() == 0 && writer.log.tail() == writer.checkpoint_tail {
            writer.log.sync()?;
            return self.remove_doomed();
        }
        let dirty: Vec<(PageId, Arc<Node>)> = tree
            .table
            .iter()
            .filter_map(|(id, slot)| match slot {
                Slot::Dirty(node) => Some((id, node.clone())),
                _ => None,
            })
            .collect();
        let mut written = Vec::with_capacity(dirty.len());
        // Each group's buffer is sized once for the frames it will hold: grown by doubling
        // it would reach twice `CHECKPOINT_GROUP_BYTES`, and the allocator keeps what such
        // transient buffers freed.
        let frame_lens: Vec<usize> = dirty
            .iter()
            .map(|(_, node)| crate::log::frame::FRAME_HEADER_BYTES + 8 + node.encoded_len())
            .collect();
        let group_len = |from: usize| {
            let mut len = 0;
            for frame_len in &frame_lens[from..] {
                if len >= CHECKPOINT_GROUP_BYTES {
                    break;
                }
                len += frame_len;
            }
            len
        };
        let mut group = writer.log.group()?;
        group.buf().reserve_exact(group_len(0));
        for (index, (id, node)) in dirty.into_iter().enumerate() {
            if group.bytes() >= CHECKPOINT_GROUP_BYTES {
                writer.log.append(group)?;
                group = writer.log.group()?;
                group.buf().reserve_exact(group_len(index));
            }
            let start = group.begin();
            group.buf().put_u64_le(id);
            node.encode(group.buf());
            written.push((id, group.finish(start, FrameKind::Page), node));
        }
        writer.log.append(group)?;
        writer.log.sync()?;
        for (id, loc, node) in written {
            tree.table.set(id, Slot::Disk(loc));
            let key = CacheKey::Page {
                segment_id: loc.segment_id,
                offset: loc.offset,
            };
            let weight = loc.len as usize + node.decoded_overhead();
            self.pages
                .cache
                .insert(key, Tier::HotPage, CacheValue::Node(node), weight);
        }
        let tail = writer.log.tail();
        let checkpoint = Checkpoint {
            sequence: writer.checkpoint_sequence + 1,
            page_bytes: self.pages.page_bytes as u32,
            replay_from: tail,
            cold_tail: self.cold.tail(),
            root: tree.root,
            next_page_id: tree.next_page_id,
            catalog: version.catalog.as_ref().clone(),
            pages: tree
                .table
                .iter()
                .filter_map(|(id, slot)| match slot {
                    Slot::Disk(loc) => Some((id, *loc)),
                    _ => None,
                })
                .collect(),
            large_live: tree.large_live.iter().map(|(s, b)| (*s, *b)).collect(),
            cold_live: tree.cold_live.iter().map(|(s, b)| (*s, *b)).collect(),
        };
        checkpoint.write(self.pages.storage.as_ref())?;
        // The same records as the version it replaces: their generation too.
        self.publish(Version {
            tree: tree.pin_root(&self.pages),
            catalog: version.catalog.clone(),
            commits: version.commits,
            generation: version.generation,
        });
        drop(version);
        writer.checkpoint_sequence += 1;
        writer.counters.checkpoints += 1;
        writer.checkpoint_tail = tail;
        writer.bytes_since_checkpoint = 0;
        writer.cold_since_checkpoint = 0;
        self.doom_unneeded(&checkpoint)?;
        self.remove_doomed()
    }

    pub fn cache_stats(&self) -> CacheStats {
        let version = self.current();
        self.pages.cache.stats(|id| {
            version
                .catalog
                .by_name
                .values()
                .find(|info| info.id == id)
                .map(|info| info.spec.name().to_string())
        })
    }

    pub fn stats(&self) -> Result<Stats> {
        let (tail, durable_lsn, log_syncs, counters) = {
            let writer = self.writer.lock();
            (
                writer.log.tail(),
                writer.log.durable_lsn(),
                writer.log.syncs(),
                writer.counters,
            )
        };
        let next_lsn = tail.next_lsn;
        let version = self.current();
        let segments = verify::segment_files(self.pages.storage.as_ref(), tail)?;
        let log_bytes = segments.values().sum();
        Ok(Stats {
            cache: self.cache_stats(),
            commits: version.commits,
            commit_groups: counters.commit_groups,
            log_syncs,
            checkpoints: counters.checkpoints,
            replayed_bytes: counters.replayed_bytes,
            dirty_pages: version.tree.table.dirty_count() as u64,
            held_bytes: version.tree.held_bytes,
            next_lsn,
            durable_lsn,
            log_segments: segments.len() as u64,
            log_bytes,
        })
    }
}

fn fail_all(requests: &[Arc<Request>], error: Error) {
    let reason = error.to_string();
    let mut first = Some(error);
    for request in requests {
        let error = first.take().unwrap_or_else(|| Error::WriteFailed {
            reason: reason.clone(),
        });
        *request.result.lock() = Some(Err(error));
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let mut writer = self.writer.lock();
        if writer.log.failure().is_none() {
            // Closing: make everything durable; an error here has nowhere to go, and
            // recovery replays the redo in any case.
            let _ = self.checkpoint_locked(&mut writer, self.options.reclaim);
        }
    }
}
