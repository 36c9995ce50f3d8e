//! Cold compaction: the live chunks of mostly-dead cold segments move to the cold tail, and
//! runs of small chunks of one array merge into one, so a segment stops being needed and
//! long reads touch fewer chunks. Each step is an ordinary commit group (chunks written
//! first, then redo that points the chunk index at them), so recovery and the crash tests
//! treat it like any batch; the old segments go once a checkpoint that no longer needs them
//! is durable and no reader holds an older version.
//!
//! Cold compaction's rules: `format-spec/cold.md`.

use crate::events::span;
use std::collections::BTreeSet;
use std::ops::Bound;

use bytes::Bytes;

use crate::cold::chunk::{self as cold_chunk, ChunkKind, ChunkRef};
use crate::error::{Error, Result};
use crate::item::{self, Stored};
use crate::page::keys;
use crate::page::node::Value;
use crate::page::redo::Op;
use crate::page::tree::Tree;
use crate::store::jobs::mailbox::JobRun;
use crate::store::jobs::segments::{Clean, sparse_segments};
use crate::store::shared::Shared;
use crate::store::write::apply::Txn;
use crate::store::writer::Writer;

/// A sealed cold segment whose live chunks fill less than this share of it is compacted.
pub(in crate::store) const COMPACT_BELOW: f64 = 0.5;
/// Chunk bytes one step moves or merges, at most (one array's work at least); bounds the
/// time commits wait for a step.
pub(in crate::store) const STEP_BYTES: u64 = 8 * 1024 * 1024;

/// The least large-record bytes one automatic reclamation step moves (past its first
/// record); see `Shared::auto_relocate_bytes`.
const AUTO_RELOCATE_MIN_BYTES: u64 = 1024 * 1024;
/// A chunk of kind items holding fewer bytes of encoded items than this is small (a sealed
/// tail holds at most 7 KiB with 16 KiB pages).
const SMALL_RAW_BYTES: usize = 16 * 1024;
/// A merged chunk holds at most this many bytes of encoded items (9 sealed tails' worth):
/// large enough that a long read touches few chunks, small enough that a read of the newest
/// items does not decode much more than it returns.
const MERGED_RAW_BYTES: usize = 64 * 1024;

/// One piece of work, found in a version and checked again against the current one when
/// it runs (a commit in between may have changed or removed the entries).
#[derive(Clone, Debug)]
pub(in crate::store) enum Work {
    /// A live chunk in a segment being emptied: copied as it is to the tail.
    Move { key: Bytes, entry: ChunkRef },
    /// Adjacent small chunks of one array, in key order: merged into as few chunks as the
    /// size bound allows, each under the key of the last chunk it takes in.
    Merge { run: Vec<(Bytes, ChunkRef)> },
}

impl Work {
    pub(in crate::store) fn chunk_bytes(&self) -> u64 {
        match self {
            Work::Move { entry, .. } => entry.loc.len as u64,
            Work::Merge { run } => run.iter().map(|(_, e)| e.loc.len as u64).sum(),
        }
    }
}

/// What `Db::compact` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactReport {
    /// Bytes of the hot log's segment files before and after.
    pub hot_bytes_before: u64,
    /// Bytes of the hot log's segment files after.
    pub hot_bytes_after: u64,
    /// Bytes of the cold segment files before and after.
    pub cold_bytes_before: u64,
    /// Bytes of the cold segment files after.
    pub cold_bytes_after: u64,
    /// Chunks copied out of mostly-dead cold segments.
    pub chunks_moved: u64,
    /// Small chunks merged, and the chunks they became.
    pub chunks_merged: u64,
    /// The chunks the merged ones became.
    pub merged_into: u64,
}

/// What one step of cold work did.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::store) struct Done {
    pub(in crate::store) moved: u64,
    pub(in crate::store) merged: u64,
    pub(in crate::store) merged_into: u64,
}

/// What compaction found to do in one window of the chunk index.
#[derive(Debug, Default)]
pub(in crate::store) struct Plan {
    pub work: Vec<Work>,
    /// The chunk entry the next window starts at; `None` once the walk reached the end.
    pub resume: Option<Bytes>,
    /// The chunk bytes of `work`.
    bytes: u64,
}

/// The chunk bytes a compaction plans at a time (see [`Shared::plan_cold`]).
pub(in crate::store) const PLAN_WINDOW_BYTES: u64 = STEP_BYTES;

impl Plan {
    pub fn chunk_bytes(&self) -> u64 {
        self.bytes
    }

    fn push(&mut self, work: Work) {
        self.bytes += work.chunk_bytes();
        self.work.push(work);
    }
}

impl Shared {
    /// Sealed cold segments (before the tail's) whose live chunks fill less than
    /// `COMPACT_BELOW` of the file, from the tree's per-segment accounting.
    pub(in crate::store) fn sparse_cold_segments(&self, tree: &Tree) -> Result<BTreeSet<u32>> {
        let storage = self.pages.storage.as_ref();
        let tail_segment = self.cold.tail().segment_id;
        let mut sparse = BTreeSet::new();
        for name in storage.list()? {
            let Some(id) = cold_chunk::parse_segment_name(&name) else {
                continue;
            };
            if id >= tail_segment {
                continue;
            }
            let live = tree.cold_live.get(&id).copied().unwrap_or(0);
            let Some(file) = crate::store::jobs::segments::len_if_present(storage, &name)? else {
                continue;
            };
            if (live as f64) < COMPACT_BELOW * file as f64 {
                sparse.insert(id);
            }
        }
        Ok(sparse)
    }

    /// Walks the chunk index of `tree`: adjacent small item chunks of one array are grouped
    /// (in key order, while their items fit `MERGED_RAW_BYTES`), and each group of two or
    /// more that holds at least `SMALL_RAW_BYTES` is merged, so a merged chunk is not small
    /// again; every other chunk in a sparse segment is moved. An array's newest chunk, when
    /// small, is never merged: a page of the newest items, the read most made of a history,
    /// decompresses a sealed tail's few KiB instead of a merged chunk. `merge` off plans
    /// moves only.
    ///
    /// The walk starts at `from` (the first chunk entry when `None`) and stops at the first
    /// array boundary once the plan holds `window_bytes` of chunks: the plan holds a window
    /// and at most one array's chunks more, whatever the size of the index. The plan's
    /// `resume` says where the next window starts.
    pub(in crate::store) fn plan_cold(
        &self,
        tree: &Tree,
        merge: bool,
        from: Option<&Bytes>,
        window_bytes: u64,
    ) -> Result<Plan> {
        let sparse = self.sparse_cold_segments(tree)?;
        let mut plan = Plan::default();
        if sparse.is_empty() && !merge {
            return Ok(plan);
        }
        // Array records live in the key spaces with the top bit set.
        let start = [0x80u8];
        let start = from.map_or(&start[..], |key| key.as_ref());
        let mut cursor = tree.cursor_passing(&self.pages.maintaining(), Bound::Included(start))?;
        let mut array: Option<Bytes> = None;
        // The group being gathered, and its items' encoded bytes.
        let mut group: Vec<(Bytes, ChunkRef)> = Vec::new();
        let mut group_raw = 0;
        // The array's last small chunk so far, held back from the group until a later one
        // shows it is not the newest.
        let mut newest: Option<(Bytes, ChunkRef, usize)> = None;
        let move_if_sparse = |key: Bytes, entry: ChunkRef, plan: &mut Plan| {
            if sparse.contains(&entry.loc.segment_id) {
                plan.push(Work::Move { key, entry });
            }
        };
        let flush = |group: &mut Vec<(Bytes, ChunkRef)>, raw: &mut usize, plan: &mut Plan| {
            if group.len() >= 2 && *raw >= SMALL_RAW_BYTES {
                plan.push(Work::Merge {
                    run: std::mem::take(group),
                });
            } else {
                for (key, entry) in group.drain(..) {
                    move_if_sparse(key, entry, plan);
                }
            }
            *raw = 0;
        };
        let add = |group: &mut Vec<(Bytes, ChunkRef)>,
                   group_raw: &mut usize,
                   plan: &mut Plan,
                   (key, entry, raw): (Bytes, ChunkRef, usize)| {
            if *group_raw + raw > MERGED_RAW_BYTES {
                flush(group, group_raw, plan);
            }
            group.push((key, entry));
            *group_raw += raw;
        };
        while let Some((key, value)) = cursor.next(tree, &self.pages.maintaining())? {
            if !keys::is_chunk_entry(&key) {
                continue;
            }
            // The cursor's key is a view of its page's image: the plan keeps a copy, so that
            // it does not hold every page it walked outside the cache's budget.
            let key = Bytes::copy_from_slice(&key);
            let Value::Inline(bytes) = &value else {
                return Err(entry_corruption(
                    &key,
                    "chunk entry stored as a large record",
                ));
            };
            let entry =
                ChunkRef::decode_slice(bytes).map_err(|reason| entry_corruption(&key, &reason))?;
            // The array's prefix: everything before the max key and number.
            let prefix = key.slice(..key.len() - 12);
            if array.as_ref() != Some(&prefix) {
                flush(&mut group, &mut group_raw, &mut plan);
                if let Some((key, entry, _)) = newest.take() {
                    move_if_sparse(key, entry, &mut plan);
                }
                if plan.chunk_bytes() >= window_bytes {
                    plan.resume = Some(key);
                    return Ok(plan);
                }
                array = Some(prefix);
            }
            let raw = match merge && crate::pattern::merges(entry.kind) {
                true => self.cold.raw_len(entry.loc)? as usize,
                false => usize::MAX,
            };
            // Whatever comes next, the chunk held back is not the array's newest.
            if let Some(held) = newest.take() {
                add(&mut group, &mut group_raw, &mut plan, held);
            }
            if raw >= SMALL_RAW_BYTES {
                flush(&mut group, &mut group_raw, &mut plan);
                move_if_sparse(key, entry, &mut plan);
                continue;
            }
            newest = Some((key, entry, raw));
        }
        flush(&mut group, &mut group_raw, &mut plan);
        if let Some((key, entry, _)) = newest {
            move_if_sparse(key, entry, &mut plan);
        }
        Ok(plan)
    }

    /// Runs `work` as one commit group: each piece is checked against the current version
    /// (skipped when an entry changed since it was planned), its chunks are written to the
    /// cold tail, and the chunk index is pointed at them.
    pub(in crate::store) fn run_cold_work(
        &self,
        writer: &mut Writer,
        work: &[Work],
    ) -> Result<Done> {
        let base = self.current();
        let txn = Txn::new(base.tree.clone(), base.catalog.clone());
        self.cold_synced_before_roll(writer)?;
        let mut cold = self.cold.group()?;
        let group = writer.log.group()?;
        let mut redo = Vec::new();
        let mut done = Done::default();
        for piece in work {
            match piece {
                Work::Move { key, entry } => {
                    if !self.unchanged(&txn.tree, key, entry)? {
                        continue;
                    }
                    let bytes = self.cold.read_raw(entry)?;
                    done.moved += 1;
                    let moved = cold.add_raw(&bytes, entry);
                    redo.push(Op::ColdChunk(moved.loc));
                    redo.push(Op::Put {
                        key: key.clone(),
                        value: moved.encode(),
                    });
                }
                Work::Merge { run } => {
                    let mut still = Vec::with_capacity(run.len());
                    for (key, entry) in run {
                        if self.unchanged(&txn.tree, key, entry)? {
                            still.push((key, entry));
                        }
                    }
                    // Consecutive prefixes of the run, each within the size bound.
                    let mut part: Vec<&Bytes> = Vec::new();
                    let mut items: Vec<Stored> = Vec::new();
                    let mut raw = 0;
                    for (key, entry) in still {
                        let chunk = self.cold.read_uncached(entry)?;
                        let chunk_raw = item::items_len(&chunk);
                        if !part.is_empty() && raw + chunk_raw > MERGED_RAW_BYTES {
                            merge_part(&mut cold, &mut redo, &mut part, &mut items, &mut done);
                            raw = 0;
                        }
                        part.push(key);
                        items.extend(chunk);
                        raw += chunk_raw;
                    }
                    merge_part(&mut cold, &mut redo, &mut part, &mut items, &mut done);
                }
            }
        }
        if redo.is_empty() {
            return Ok(done);
        }
        self.write_own_redo(writer, &base, (txn, group, cold), &redo)?;
        Ok(done)
    }

    /// True when `key` still holds `entry` in `tree`.
    fn unchanged(&self, tree: &Tree, key: &Bytes, entry: &ChunkRef) -> Result<bool> {
        Ok(match tree.get(&self.pages.maintaining(), key)? {
            Some(Value::Inline(bytes)) => bytes == entry.encode(),
            _ => false,
        })
    }

    /// Moves the large records held by mostly-dead log segments to the tail (each written
    /// again, as a commit would), so that cleaning (`clean`) can empty those segments; at
    /// most about `limit` bytes of records. A record a commit changed since the walk is left alone.
    /// Returns the record bytes moved.
    pub(in crate::store) fn relocate_large(&self, limit: u64, clean: Clean) -> Result<u64> {
        let (version, segments) = {
            let writer = self.commits.lock();
            let version = self.current();
            let tail = writer.log.tail().segment_id;
            let storage = self.pages.storage.as_ref();
            let segments: BTreeSet<u32> = sparse_segments(
                storage,
                &version.tree,
                (tail, self.jobs.checkpoints.open_page_file()),
                clean,
            )?
            .into_iter()
            .filter(|segment| segment.large_bytes > 0)
            .map(|segment| segment.segment_id)
            .collect();
            (version, segments)
        };
        if segments.is_empty() {
            return Ok(0);
        }
        let mut found = Vec::new();
        let mut found_bytes = 0;
        let mut cursor = version
            .tree
            .cursor(&self.pages.maintaining(), Bound::Unbounded)?;
        while let Some((key, value)) = cursor.next(&version.tree, &self.pages.maintaining())? {
            if let Value::Large(large) = value
                && segments.contains(&large.segment_id)
            {
                found_bytes += large.value_len as u64;
                found.push((key, large));
                if found_bytes >= limit {
                    break;
                }
            }
        }
        drop(version);
        let mut writer = self.commits.lock();
        let base = self.current();
        let txn = Txn::new(base.tree.clone(), base.catalog.clone());
        let mut redo = Vec::new();
        let mut moved = 0;
        for (key, large) in found {
            if txn.tree.get(&self.pages.maintaining(), &key)? != Some(Value::Large(large)) {
                continue;
            }
            let value = self.pages.value_bytes_uncached(&Value::Large(large))?;
            moved += value.len() as u64;
            redo.push(Op::Put { key, value });
        }
        if redo.is_empty() {
            return Ok(0);
        }
        self.cold_synced_before_roll(&writer)?;
        let cold = self.cold.group()?;
        let group = writer.log.group()?;
        self.write_own_redo(&mut writer, &base, (txn, group, cold), &redo)?;
        Ok(moved)
    }

    /// The large-record bytes one automatic reclamation step moves (past its first record):
    /// an eighth of the cache budget, from 1 MiB to `STEP_BYTES`. The step holds the records
    /// and their encoded copy at once, so at most about a quarter of the budget; with
    /// `STEP_BYTES` whatever the budget, a reviews benchmark at an 8 MiB budget peaked at
    /// 77 MiB of process memory instead of about 52-59. Steps smaller than needed leave
    /// large records pinning their segments longer.
    fn auto_relocate_bytes(&self) -> u64 {
        (self.options.cache_bytes as u64 / 8).clamp(AUTO_RELOCATE_MIN_BYTES, STEP_BYTES)
    }

    /// The automatic reclamation step that follows a checkpoint: large records out of
    /// sparse log segments (for the next checkpoint's cleaning), then a cold compaction
    /// step.
    pub(in crate::store) fn reclaim_step(&self) -> Result<()> {
        debug_assert!(
            JobRun::here() || !self.maintenance.running(),
            "with the maintenance thread, no commit runs a reclamation step"
        );
        self.relocate_large(self.auto_relocate_bytes(), Clean::Sparse)?;
        self.cold_step()
    }

    /// One automatic step of cold compaction, when a sealed cold segment is mostly dead: the
    /// first `STEP_BYTES` of the plan, in one commit group. The emptied segments go at a
    /// later checkpoint.
    pub(in crate::store) fn cold_step(&self) -> Result<()> {
        let _span = span!(debug, "cold_compaction_step");
        {
            let _writer = self.commits.lock();
            self.seal_cold_if_sparse()?;
        }
        let version = self.current();
        if self.sparse_cold_segments(&version.tree)?.is_empty() {
            return Ok(());
        }
        let plan = self.plan_cold(&version.tree, true, None, STEP_BYTES)?;
        drop(version);
        let mut step_bytes = 0;
        let step: Vec<Work> = plan
            .work
            .into_iter()
            .take_while(|piece| {
                let take = step_bytes < STEP_BYTES;
                step_bytes += piece.chunk_bytes();
                take
            })
            .collect();
        if !step.is_empty() {
            self.run_cold_work(&mut self.commits.lock(), &step)?;
        }
        Ok(())
    }

    /// Makes the cold segment being appended to a sealed one when it holds dead chunks, so
    /// compaction can empty it too: the next chunk starts a new segment. With the writer
    /// held (commit groups append at the tail).
    pub(in crate::store) fn seal_cold_if_dead(&self, tree: &Tree) -> Result<()> {
        let (written, live) = self.cold_tail_use(tree);
        if written > live {
            self.cold.seal()?;
        }
        Ok(())
    }

    /// Seals the cold segment being appended to once it is half full and mostly dead, so
    /// that automatic compaction does not wait for it to fill: dead chunks in it stay below
    /// half a segment. With the writer held.
    fn seal_cold_if_sparse(&self) -> Result<()> {
        let (written, live) = self.cold_tail_use(&self.current().tree);
        if written >= self.options.segment_bytes / 2
            && (live as f64) < COMPACT_BELOW * written as f64
        {
            self.cold.seal()?;
        }
        Ok(())
    }

    /// Chunk bytes written to the cold segment being appended to, and live in it.
    fn cold_tail_use(&self, tree: &Tree) -> (u64, u64) {
        let tail = self.cold.tail();
        if tail.segment_id == 0 {
            return (0, 0);
        }
        let live = tree.cold_live.get(&tail.segment_id).copied().unwrap_or(0);
        (tail.offset - cold_chunk::SEGMENT_HEADER_BYTES as u64, live)
    }
}

/// Writes the merged items of `part` as one chunk under the key of its last chunk and
/// deletes the other keys; a part of one chunk stays as it is.
fn merge_part(
    cold: &mut crate::cold::ColdGroup,
    redo: &mut Vec<Op>,
    part: &mut Vec<&Bytes>,
    items: &mut Vec<Stored>,
    done: &mut Done,
) {
    if part.len() >= 2 {
        done.merged += part.len() as u64;
        done.merged_into += 1;
        items.sort_by_key(Stored::order);
        let merged = cold.add(ChunkKind::Items, items);
        redo.push(Op::ColdChunk(merged.loc));
        let (last, others) = part.split_last().expect("two keys at least");
        for key in others {
            redo.push(Op::Delete {
                key: (*key).clone(),
            });
        }
        redo.push(Op::Put {
            key: (*last).clone(),
            value: merged.encode(),
        });
    }
    part.clear();
    items.clear();
}

fn entry_corruption(key: &Bytes, reason: &str) -> Error {
    Error::corruption("page store", 0, format!("chunk entry {key:x?}: {reason}"))
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;
    use std::sync::Arc;

    use bytes::Bytes;

    use crate::storage::SimStorage;
    use crate::{
        api::Db,
        catalog::{CollectionSpec, Layout},
        document::ItemQuery,
        item::NewItem,
        options::Options,
    };

    /// The raw sizes of one array's chunks, oldest first, from the chunk index.
    fn chunk_raw_sizes(db: &Db) -> Vec<u32> {
        let shared = &db.engine.shared;
        let tree = &shared.current().tree;
        let start = [0x80u8];
        let mut cursor = tree
            .cursor(
                &shared.pages.maintaining(),
                std::ops::Bound::Included(&start[..]),
            )
            .unwrap();
        let mut sizes = Vec::new();
        while let Some((key, value)) = cursor.next(tree, &shared.pages.maintaining()).unwrap() {
            if !super::keys::is_chunk_entry(&key) {
                continue;
            }
            let super::Value::Inline(bytes) = &value else {
                panic!("chunk entry stored as a large record");
            };
            let entry = super::ChunkRef::decode_slice(bytes).unwrap();
            sizes.push(shared.cold.raw_len(entry.loc).unwrap());
        }
        sizes
    }

    /// Compaction merges a history's small chunks but its newest: a page of the newest
    /// items then decompresses one sealed tail, not a merged chunk.
    #[test]
    fn compaction_merges_small_chunks_but_the_newest() {
        let options = Options::new().page_bytes(4096).segment_bytes(64 * 1024);
        let db = Db::open_with_storage(Arc::new(SimStorage::new()), options).unwrap();
        db.create_collection(CollectionSpec::new("c").array("log", Layout::Subset { keep: 5 }))
            .unwrap();
        for n in 0..2_000 {
            let mut batch = db.batch();
            let item = NewItem::new(format!("{n} {}", "z".repeat(60))).key(n);
            batch.push("c", "a", "log", item);
            batch.commit().unwrap();
        }
        let before = chunk_raw_sizes(&db);
        assert!(before.len() > 10, "{before:?}");
        assert!(
            before
                .iter()
                .all(|&raw| (raw as usize) < super::SMALL_RAW_BYTES)
        );
        let report = db.compact().unwrap();
        assert!(report.chunks_merged > 0, "{report:?}");
        let after = chunk_raw_sizes(&db);
        let (&newest, older) = after.split_last().unwrap();
        assert_eq!(
            newest,
            *before.last().unwrap(),
            "the newest chunk is left as it was"
        );
        assert!(
            older
                .iter()
                .any(|&raw| raw as usize >= super::SMALL_RAW_BYTES),
            "{after:?}"
        );
        assert!(after.len() < before.len());
        // The newest page and the whole history read as before.
        let c = db.collection("c").unwrap();
        let page = c
            .items("a", "log", &ItemQuery::new().descending().limit(20))
            .unwrap()
            .unwrap()
            .items;
        let keys: Vec<i64> = page.iter().map(|item| item.key).collect();
        assert_eq!(keys, (1_980..2_000).rev().collect::<Vec<i64>>());
        let all = c
            .items("a", "log", &ItemQuery::new())
            .unwrap()
            .unwrap()
            .items;
        assert_eq!(all.len(), 2_000);
        // A second compaction finds nothing more to merge.
        assert_eq!(db.compact().unwrap().chunks_merged, 0);
        assert_eq!(chunk_raw_sizes(&db), after);
        db.verify().unwrap();
    }

    /// A compaction's plan walks the chunk index without keeping its leaves in the cache
    /// (only internal pages): after a reopen, planning over a hundred leaves and more leaves the
    /// cache about as empty as it was, where an ordinary walk of the same keys fills it.
    #[test]
    fn a_plan_walk_keeps_no_leaf_in_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let options = || {
            Options::new()
                .page_bytes(4096)
                .segment_bytes(64 * 1024)
                .record_cache_percent(0)
        };
        let db = Db::open(dir.path(), options()).unwrap();
        db.create_collection(CollectionSpec::new("c").array("log", Layout::Reference))
            .unwrap();
        for round in 0..10 {
            let mut batch = db.batch();
            for parent in 0..3_000 {
                let item = NewItem::new(format!("{round} {}", "z".repeat(40))).key(round);
                batch.push("c", format!("p{parent:04}"), "log", item);
            }
            batch.commit().unwrap();
        }
        db.close().unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        let shared = &db.engine.shared;
        let tree = shared.current().tree.clone();
        let resident = || db.cache_stats().hot.resident_bytes;
        let before = resident();
        // With `merge` the plan walks every chunk entry (these are too small to merge).
        shared.plan_cold(&tree, true, None, u64::MAX).unwrap();
        let after_plan = resident();
        let start = [0x80u8];
        let mut cursor = tree
            .cursor(&shared.pages.maintaining(), Bound::Included(&start[..]))
            .unwrap();
        let mut entries = 0;
        while cursor
            .next(&tree, &shared.pages.maintaining())
            .unwrap()
            .is_some()
        {
            entries += 1;
        }
        assert!(entries >= 3_000, "{entries} entries walked");
        let after_walk = resident();
        // The plan kept the internal pages above the leaves; the walk, every leaf too.
        let (planned, walked) = (after_plan - before, after_walk - after_plan);
        assert!(walked > 100 * 4096, "an ordinary walk kept {walked} bytes");
        assert!(
            planned * 10 < walked,
            "the plan kept {planned} bytes, an ordinary walk {walked} more"
        );
    }

    /// A plan made a window at a time holds at most about a window of chunks, stops only
    /// between arrays, and its windows together hold the work one walk of the whole index
    /// finds, in the same order.
    #[test]
    fn windows_of_the_plan_add_up_to_the_whole_plan() {
        let options = Options::new().page_bytes(4096).segment_bytes(64 * 1024);
        let db = Db::open_with_storage(Arc::new(SimStorage::new()), options).unwrap();
        db.create_collection(CollectionSpec::new("c").array("log", Layout::Reference))
            .unwrap();
        for round in 0..20 {
            let mut batch = db.batch();
            for parent in 0..30 {
                for n in round * 10..round * 10 + 10 {
                    let item = NewItem::new(format!("{parent} {n} {}", "z".repeat(200))).key(n);
                    batch.push("c", format!("p{parent:02}"), "log", item);
                }
            }
            batch.commit().unwrap();
        }
        let shared = &db.engine.shared;
        let tree = shared.current().tree.clone();
        let whole = shared.plan_cold(&tree, true, None, u64::MAX).unwrap();
        assert!(whole.resume.is_none());
        let keys = |work: &[super::Work]| -> Vec<Bytes> {
            work.iter()
                .flat_map(|w| match w {
                    super::Work::Move { key, .. } => vec![key.clone()],
                    super::Work::Merge { run } => run.iter().map(|(k, _)| k.clone()).collect(),
                })
                .collect()
        };
        let all = keys(&whole.work);
        assert!(all.len() > 100, "{} chunks planned", all.len());
        let largest = whole
            .work
            .iter()
            .map(super::Work::chunk_bytes)
            .max()
            .unwrap();
        let window = whole.chunk_bytes() / 7;
        let mut windows = Vec::new();
        let mut from: Option<Bytes> = None;
        loop {
            let plan = shared
                .plan_cold(&tree, true, from.as_ref(), window)
                .unwrap();
            windows.push(plan.chunk_bytes());
            let planned = keys(&plan.work);
            if let (Some(last), Some(next)) = (planned.last(), &plan.resume) {
                // Each window ends with a whole array: the next starts with another one.
                assert_ne!(last[..last.len() - 12], next[..next.len() - 12]);
            }
            from = plan.resume.clone();
            if from.is_none() {
                break;
            }
        }
        assert!(windows.len() >= 5, "{windows:?}");
        // A window stops at the first array boundary past its bytes: at most one array's
        // chunks more (each array here holds a few chunks of at most `largest` each).
        for bytes in &windows {
            assert!(
                *bytes <= window + 8 * largest,
                "{bytes} in a window of {window}"
            );
        }
        let mut joined = Vec::new();
        let mut from: Option<Bytes> = None;
        loop {
            let plan = shared
                .plan_cold(&tree, true, from.as_ref(), window)
                .unwrap();
            joined.extend(keys(&plan.work));
            match plan.resume {
                Some(key) => from = Some(key),
                None => break,
            }
        }
        assert_eq!(joined, all);
        // A compaction done a window at a time merges what the whole plan would.
        let before = db.collection("c").unwrap();
        let histories: Vec<_> = (0..30)
            .map(|p| {
                before
                    .items(format!("p{p:02}"), "log", &ItemQuery::new())
                    .unwrap()
            })
            .collect();
        let report = db.compact().unwrap();
        assert!(report.chunks_merged > 0, "{report:?}");
        let plan_after = shared
            .plan_cold(&shared.current().tree, true, None, u64::MAX)
            .unwrap();
        assert!(
            plan_after
                .work
                .iter()
                .all(|w| !matches!(w, super::Work::Merge { .. })),
            "merges left: {plan_after:?}"
        );
        let after = db.collection("c").unwrap();
        for (p, history) in histories.iter().enumerate() {
            let now = after
                .items(format!("p{p:02}"), "log", &ItemQuery::new())
                .unwrap();
            assert_eq!(
                now.map(|page| page.items),
                history.clone().map(|page| page.items)
            );
        }
    }

    /// Work planned before commits that changed its entries skips them: a chunk a removal
    /// rewrote, and the chunks of a deleted parent, are not brought back.
    #[test]
    fn work_planned_before_a_change_skips_changed_entries() {
        let options = Options::new().page_bytes(4096).segment_bytes(64 * 1024);
        let db = Db::open_with_storage(Arc::new(SimStorage::new()), options).unwrap();
        db.create_collection(CollectionSpec::new("c").array("log", Layout::Reference))
            .unwrap();
        for round in 0..40 {
            let mut batch = db.batch();
            for parent in ["a", "b"] {
                for n in round * 10..round * 10 + 10 {
                    let item = NewItem::new(format!("{parent} {n} {}", "z".repeat(30))).key(n);
                    batch.push("c", parent, "log", item);
                }
            }
            batch.commit().unwrap();
        }
        let shared = &db.engine.shared;
        let plan = shared
            .plan_cold(&shared.current().tree, true, None, u64::MAX)
            .unwrap();
        assert!(
            plan.work
                .iter()
                .any(|w| matches!(w, super::Work::Merge { .. })),
            "{plan:?}"
        );
        let mut batch = db.batch();
        batch.remove("c", "a", "log", 5);
        batch.delete("c", "b");
        batch.commit().unwrap();
        let done = shared
            .run_cold_work(&mut shared.commits.lock(), &plan.work)
            .unwrap();
        assert!(done.merged > 0, "the unchanged runs still merge: {done:?}");
        let items = db
            .collection("c")
            .unwrap()
            .items("a", "log", &ItemQuery::new())
            .unwrap()
            .unwrap()
            .items;
        let keys: Vec<i64> = items.iter().map(|item| item.key).collect();
        let expected: Vec<i64> = (0..400).filter(|k| *k != 5).collect();
        assert_eq!(keys, expected);
        assert!(db.collection("c").unwrap().get("b").unwrap().is_none());
        db.verify().unwrap();
    }
}
