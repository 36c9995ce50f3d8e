//! Staging a batch: the API's operations resolved against the committed state into redo.
//! Everything a batch does to one parent (its record, its tail records, new chunks, outlier
//! markers) is worked out in memory first, every limit is checked, and only then is redo
//! emitted, so a refused batch leaves nothing behind.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use rustc_hash::FxHashMap;
use std::sync::Arc;

use bytes::Bytes;

use super::apply::Txn;
use super::commit::{BatchOp, check_key};
use super::decode::{decode_items, decode_record};
use super::patch::patch_or_put;
use super::shared::Shared;
use crate::catalog::{Catalog, CollectionId, CollectionInfo, Layout};
use crate::cold::{ChunkKind, ChunkRef, ColdGroup};
use crate::item::NewItem;
use crate::item::{self, Item, Stored, Summary};
use crate::page::keys;
use crate::page::max_inline_record;
use crate::page::redo::Op;
use crate::pattern::{self, Operation, Refill};
use crate::record::{self, ParentRecord};
use crate::{Error, MAX_RECORD_BYTES, Result};

/// An array's tail record as the batch changes it, with its encoded size kept current.
struct Tail {
    items: Vec<Stored>,
    bytes: usize,
}

impl Tail {
    fn new(items: Vec<Stored>) -> Self {
        Tail {
            bytes: item::items_len(&items),
            items,
        }
    }
}

/// A chunk the batch wrote, with its items (kept: a later remove in the batch may change it).
struct PendingChunk {
    index: usize,
    number: u32,
    chunk: ChunkRef,
    items: Vec<Stored>,
}

/// A chunk of one array as a remove sees it: stored (with its tree key) or new in this batch
/// (its place in `ParentWork::chunks`).
enum ChunkSource {
    Stored(Bytes),
    Pending(usize),
}

/// One chunk of an array while a remove works on it.
struct HistoryChunk {
    source: ChunkSource,
    chunk: ChunkRef,
    /// Read on demand.
    items: Option<Vec<Stored>>,
    /// Its items changed: it is dropped, and written again if any are left.
    changed: bool,
}

impl HistoryChunk {
    fn new(source: ChunkSource, chunk: ChunkRef) -> Self {
        HistoryChunk {
            source,
            chunk,
            items: None,
            changed: false,
        }
    }
}

/// What the batch does to one parent.
struct ParentWork {
    info: Arc<CollectionInfo>,
    key: Bytes,
    /// The array fields whose outlier markers exist in the tree (overflowed before the batch).
    stored_markers: Vec<usize>,
    /// The record as the batch leaves it.
    record: Option<ParentRecord>,
    /// The stored record's bytes, which a patch of it applies to.
    stored_bytes: Option<Bytes>,
    /// The stored tail records' bytes, by array field.
    stored_tails: BTreeMap<usize, Bytes>,
    /// The stored parent and all its array records go before the new state is written.
    deleted: bool,
    tails: BTreeMap<usize, Tail>,
    dirty_tails: BTreeSet<usize>,
    chunks: Vec<PendingChunk>,
    new_markers: BTreeSet<usize>,
    /// Stored chunk entries a remove rewrote or emptied, by tree key.
    dropped_chunks: BTreeSet<Bytes>,
    /// Arrays whose stored outlier marker goes: nothing of them is outside the record now.
    dropped_markers: BTreeSet<usize>,
}

impl ParentWork {
    /// Writes `items` as a new chunk of array `index`, numbered from the array's next
    /// chunk, and lists it among the batch's chunks; returns what its index entry holds.
    fn add_chunk(
        &mut self,
        index: usize,
        kind: ChunkKind,
        items: Vec<Stored>,
        cold: &mut ColdGroup,
    ) -> ChunkRef {
        let array = &mut self.record.as_mut().expect("a changed array").arrays[index];
        let number = array.next_chunk;
        array.next_chunk += 1;
        let chunk = cold.add(kind, &items);
        self.chunks.push(PendingChunk {
            index,
            number,
            chunk,
            items,
        });
        chunk
    }
}

pub(super) struct Stager<'a> {
    shared: &'a Shared,
    txn: &'a Txn,
    catalog: Arc<Catalog>,
    parents: FxHashMap<(CollectionId, Bytes), ParentWork>,
    /// The last collection looked up by name: batches mostly write to one.
    last_collection: Option<Arc<CollectionInfo>>,
    created: Vec<Op>,
}

impl<'a> Stager<'a> {
    pub fn new(shared: &'a Shared, txn: &'a Txn) -> Self {
        Stager {
            shared,
            txn,
            catalog: txn.catalog.clone(),
            parents: FxHashMap::default(),
            last_collection: None,
            created: Vec::new(),
        }
    }

    fn read(&self, key: &[u8]) -> Result<Option<Bytes>> {
        let _owner = keys::collection_of(key).map(crate::cache::attribute);
        let pages = &self.shared.pages;
        match self.txn.tree.get(pages, key)? {
            Some(value) => Ok(Some(pages.value_bytes(&value)?)),
            None => Ok(None),
        }
    }

    fn collection(&mut self, name: &str) -> Result<Arc<CollectionInfo>> {
        if let Some(info) = &self.last_collection
            && info.spec.name() == name
        {
            return Ok(info.clone());
        }
        let info = self.catalog.get(name)?.clone();
        self.last_collection = Some(info.clone());
        Ok(info)
    }

    fn work(&mut self, collection: &str, key: &Bytes) -> Result<&mut ParentWork> {
        let info = self.collection(collection)?;
        check_key(key)?;
        let id = (info.id, key.clone());
        if !self.parents.contains_key(&id) {
            // A collection without arrays has nothing in a stored record worth keeping: a put
            // replaces it whole and a delete leaves no array records behind. Skip the read.
            let stored_bytes = if info.spec.arrays().is_empty() {
                None
            } else {
                self.read(&keys::parent(info.id, key))?
            };
            let stored = match &stored_bytes {
                Some(bytes) => Some(decode_record(bytes.clone(), &info, key)?),
                None => None,
            };
            // Only the markers are needed of the stored state: copying the record (up to
            // 16 MiB under Embed) to keep it beside the working one would be wasted.
            let stored_markers = stored
                .as_ref()
                .map_or_else(Vec::new, |record: &ParentRecord| {
                    record
                        .arrays
                        .iter()
                        .enumerate()
                        .filter(|(_, a)| a.has_overflow)
                        .map(|(i, _)| i)
                        .collect()
                });
            let work = ParentWork {
                info,
                key: key.clone(),
                record: stored,
                stored_bytes,
                stored_tails: BTreeMap::new(),
                stored_markers,
                deleted: false,
                tails: BTreeMap::new(),
                dirty_tails: BTreeSet::new(),
                chunks: Vec::new(),
                new_markers: BTreeSet::new(),
                dropped_chunks: BTreeSet::new(),
                dropped_markers: BTreeSet::new(),
            };
            return Ok(self.parents.entry(id).or_insert(work));
        }
        Ok(self.parents.get_mut(&id).expect("present"))
    }

    pub fn apply(&mut self, op: BatchOp, cold: &mut ColdGroup) -> Result<()> {
        match op {
            BatchOp::CreateCollection(spec) => {
                spec.validate()?;
                match self.catalog.by_name.get(spec.name()) {
                    Some(info) if info.spec == spec => {}
                    Some(info) => {
                        return Err(Error::SchemaConflict {
                            name: spec.name().to_string(),
                            reason: format!("stored schema is {:?}", info.spec),
                        });
                    }
                    None => {
                        let info = CollectionInfo {
                            id: self.catalog.next_id,
                            spec: spec.clone(),
                        };
                        self.created.push(Op::CreateCollection {
                            id: info.id,
                            spec: spec.clone(),
                        });
                        Arc::make_mut(&mut self.catalog).insert(info);
                    }
                }
            }
            BatchOp::Put {
                collection,
                key,
                body,
            } => {
                let work = self.work(&collection, &key)?;
                let arrays = work.info.spec.arrays().len();
                work.record
                    .get_or_insert_with(|| ParentRecord::new(Bytes::new(), arrays))
                    .body = body;
            }
            BatchOp::Delete { collection, key } => {
                let work = self.work(&collection, &key)?;
                work.record = None;
                work.deleted = true;
                work.tails.clear();
                work.dirty_tails.clear();
                work.chunks.clear();
                work.new_markers.clear();
                work.dropped_chunks.clear();
                work.dropped_markers.clear();
            }
            BatchOp::Push {
                collection,
                key,
                field,
                item,
            } => self.push(&collection, &key, &field, item, cold)?,
            BatchOp::Remove {
                collection,
                key,
                field,
                item_key,
            } => self.remove(&collection, &key, &field, item_key, cold)?,
            BatchOp::ExpireBuckets {
                collection,
                key,
                field,
                before,
            } => self.expire_buckets(&collection, &key, &field, before, cold)?,
        }
        Ok(())
    }

    /// The array `field` of parent `key` ready to change: its collection, index and layout,
    /// with the parent's work loaded (once per batch). Its tail is read on demand
    /// (`load_tail`): most pushes leave it alone.
    fn load_array(
        &mut self,
        collection: &str,
        key: &Bytes,
        field: &str,
        operation: Operation,
    ) -> Result<(Arc<CollectionInfo>, usize, Layout)> {
        let info = self.collection(collection)?;
        let index = info
            .spec
            .field_index(field)
            .ok_or_else(|| Error::UnknownField {
                collection: collection.to_string(),
                field: field.to_string(),
            })?;
        let layout = info.spec.arrays()[index].layout;
        pattern::check_supports(layout, operation, collection, field)?;
        self.work(collection, key)?;
        Ok((info, index, layout))
    }

    /// Reads the tail record of array `index` of parent `id` into its work, once per batch;
    /// a deleted parent starts with an empty tail.
    fn load_tail(&mut self, id: &(CollectionId, Bytes), index: usize) -> Result<&mut Tail> {
        let work = &self.parents[id];
        if !work.tails.contains_key(&index) {
            let tail_key = keys::tail(id.0, &id.1, index);
            let stored = match self.read(&tail_key)? {
                Some(bytes) if !work.deleted => Some(bytes),
                _ => None,
            };
            let items = match &stored {
                Some(bytes) => decode_items(bytes.clone(), &tail_key)?,
                None => Vec::new(),
            };
            let work = self.parents.get_mut(id).expect("loaded above");
            work.tails.insert(index, Tail::new(items));
            if let Some(bytes) = stored {
                work.stored_tails.insert(index, bytes);
            }
        }
        let work = self.parents.get_mut(id).expect("loaded above");
        Ok(work.tails.get_mut(&index).expect("loaded above"))
    }

    fn push(
        &mut self,
        collection: &str,
        key: &Bytes,
        field: &str,
        new: NewItem,
        cold: &mut ColdGroup,
    ) -> Result<()> {
        if new.value.is_some_and(f64::is_nan) {
            return Err(Error::InvalidItem {
                reason: "value is NaN".to_string(),
            });
        }
        let tail_limit = max_inline_record(self.shared.pages.page_bytes);
        let (info, index, layout) = self.load_array(collection, key, field, Operation::Push)?;
        let work = self
            .parents
            .get_mut(&(info.id, key.clone()))
            .expect("loaded above");
        let arrays = info.spec.arrays().len();
        let record = work
            .record
            .get_or_insert_with(|| ParentRecord::new(Bytes::new(), arrays));
        let array = &mut record.arrays[index];
        let item_key = new
            .key
            .unwrap_or_else(|| array.summary.max_key.map_or(0, |max| max.saturating_add(1)));
        let item = Item {
            key: item_key,
            value: new.value,
            payload: new.payload,
        };
        let size = item::stored_len(&item) as u64 + 4;
        if size > MAX_RECORD_BYTES as u64 {
            return Err(Error::RecordTooLarge {
                size,
                limit: MAX_RECORD_BYTES as u64,
            });
        }
        let stored = Stored {
            item,
            seq: array.next_seq,
        };
        array.next_seq += 1;
        let outcome = pattern::push(layout, array, stored);
        if outcome.overflowed {
            work.new_markers.insert(index);
        }
        if let Some(bucket) = outcome.sealed_bucket {
            work.add_chunk(index, ChunkKind::Bucket, bucket, cold);
        }
        let Some(stored) = outcome.to_tail else {
            return Ok(());
        };
        let id = (info.id, key.clone());
        let len = item::stored_len(&stored.item);
        let tail = self.load_tail(&id, index)?;
        let full = !tail.items.is_empty() && tail.bytes + len > tail_limit;
        let sealed = full.then(|| {
            let mut items = std::mem::take(&mut tail.items);
            items.sort_by_key(Stored::order);
            *tail = Tail::new(Vec::new());
            items
        });
        tail.items.push(stored);
        tail.bytes += len;
        let work = self.parents.get_mut(&id).expect("loaded above");
        work.dirty_tails.insert(index);
        if let Some(items) = sealed {
            work.add_chunk(index, ChunkKind::Items, items, cold);
        }
        Ok(())
    }

    /// Removes every item keyed `item_key` from one array, wherever it lives. Chunks that
    /// held one are written again without it (their old bytes stay until compaction); a
    /// `Subset` window refills from history; the summary is recomputed from the inline
    /// items, the tail and the chunk entries' summaries (no chunk is decoded for it).
    fn remove(
        &mut self,
        collection: &str,
        key: &Bytes,
        field: &str,
        item_key: i64,
        cold: &mut ColdGroup,
    ) -> Result<()> {
        let (info, index, layout) = self.load_array(collection, key, field, Operation::Remove)?;
        let id = (info.id, key.clone());
        if self.parents[&id].record.is_none() {
            return Ok(());
        }
        self.load_tail(&id, index)?;
        let mut history = self.history(&info, &id, index)?;
        let mut removed = 0;
        for chunk in history.iter_mut() {
            let summary = &chunk.chunk.summary;
            if summary.min_key.is_some_and(|min| min <= item_key)
                && summary.max_key.is_some_and(|max| max >= item_key)
            {
                let items = self.load_chunk(&id, chunk)?;
                let before = items.len();
                items.retain(|s| s.item.key != item_key);
                removed += before - items.len();
                chunk.changed |= items.len() < before;
            }
        }
        let work = self.parents.get_mut(&id).expect("loaded above");
        let tail = work.tails.get_mut(&index).expect("loaded above");
        let before = tail.items.len();
        tail.items.retain(|s| s.item.key != item_key);
        removed += before - tail.items.len();
        let array = &mut work.record.as_mut().expect("checked above").arrays[index];
        let before = array.inline.len();
        array.inline.retain(|s| s.item.key != item_key);
        removed += before - array.inline.len();
        if removed == 0 {
            return Ok(());
        }
        match pattern::refill(layout, array.inline.len()) {
            Refill::Nothing => {}
            Refill::Greatest(need) => {
                let moved = self.take_greatest(&id, index, need, &mut history)?;
                let work = self.parents.get_mut(&id).expect("loaded above");
                let array = &mut work.record.as_mut().expect("checked above").arrays[index];
                array.inline.extend(moved);
                array.inline.sort_by_key(Stored::order);
            }
        }
        self.settle(&id, index, history, cold);
        Ok(())
    }

    /// Drops every sealed bucket of one `Bucket` array whose newest key is below `before`,
    /// from the chunk index alone (no bucket is read). The open bucket and late items in
    /// the tail stay.
    fn expire_buckets(
        &mut self,
        collection: &str,
        key: &Bytes,
        field: &str,
        before: i64,
        cold: &mut ColdGroup,
    ) -> Result<()> {
        let (info, index, _) = self.load_array(collection, key, field, Operation::ExpireBuckets)?;
        let id = (info.id, key.clone());
        if self.parents[&id].record.is_none() {
            return Ok(());
        }
        self.load_tail(&id, index)?;
        let mut history = self.history(&info, &id, index)?;
        let mut expired = false;
        for chunk in history.iter_mut() {
            if pattern::expires(chunk.chunk.kind, &chunk.chunk.summary, before) {
                chunk.items = Some(Vec::new());
                chunk.changed = true;
                expired = true;
            }
        }
        if expired {
            self.settle(&id, index, history, cold);
        }
        Ok(())
    }

    /// Writes what a remove or an expiry left of one array: changed chunks lose their index
    /// entries and are written again when items are left; the tail is rewritten; the total,
    /// summary and overflow flag are computed again from the inline items, the tail and the
    /// chunks' summaries.
    fn settle(
        &mut self,
        id: &(CollectionId, Bytes),
        index: usize,
        history: Vec<HistoryChunk>,
        cold: &mut ColdGroup,
    ) {
        let work = self.parents.get_mut(id).expect("loaded above");
        let tail = work.tails.get_mut(&index).expect("loaded above");
        *tail = Tail::new(std::mem::take(&mut tail.items));
        work.dirty_tails.insert(index);
        let array = &work.record.as_ref().expect("checked above").arrays[index];
        let mut summary = Summary::of(array.inline.iter().map(|s| &s.item));
        summary.merge(&Summary::of(tail.items.iter().map(|s| &s.item)));
        let mut gone_pending = Vec::new();
        let mut outside = !tail.items.is_empty();
        for chunk in history {
            if !chunk.changed {
                summary.merge(&chunk.chunk.summary);
                outside = true;
                continue;
            }
            match chunk.source {
                ChunkSource::Stored(tree_key) => {
                    work.dropped_chunks.insert(tree_key);
                }
                ChunkSource::Pending(at) => gone_pending.push(at),
            }
            let items = chunk.items.expect("changed chunks were read or emptied");
            if items.is_empty() {
                continue;
            }
            let written = work.add_chunk(index, chunk.chunk.kind, items, cold);
            summary.merge(&written.summary);
            outside = true;
        }
        // Positions in `work.chunks` from before this call; new chunks went to the end.
        gone_pending.sort_unstable();
        for at in gone_pending.into_iter().rev() {
            work.chunks.remove(at);
        }
        let array = &mut work.record.as_mut().expect("checked above").arrays[index];
        array.total = summary.items;
        array.summary = summary;
        array.inline_bytes = array.inline.iter().map(|s| item::stored_len(&s.item)).sum();
        if array.has_overflow && !outside {
            // Nothing of the array is outside the record any more.
            array.has_overflow = false;
            if !work.new_markers.remove(&index) && work.stored_markers.contains(&index) {
                work.dropped_markers.insert(index);
            }
        }
    }

    /// Every chunk of one array as of this point in the batch (stored ones not dropped, and
    /// the batch's own), in max key order, not yet read.
    fn history(
        &self,
        info: &CollectionInfo,
        id: &(CollectionId, Bytes),
        index: usize,
    ) -> Result<Vec<HistoryChunk>> {
        let work = &self.parents[id];
        let mut chunks = Vec::new();
        if !work.deleted {
            self.shared.for_each_chunk_entry(
                &self.txn.tree,
                info,
                &id.1,
                index,
                Bound::Unbounded,
                |tree_key, entry| {
                    if !work.dropped_chunks.contains(tree_key) {
                        chunks.push(HistoryChunk::new(
                            ChunkSource::Stored(tree_key.clone()),
                            *entry,
                        ));
                    }
                    Ok(true)
                },
            )?;
        }
        for (at, pending) in work.chunks.iter().enumerate() {
            if pending.index == index {
                chunks.push(HistoryChunk::new(ChunkSource::Pending(at), pending.chunk));
            }
        }
        chunks.sort_by_key(|c| c.chunk.summary.max_key);
        Ok(chunks)
    }

    /// Takes the `need` greatest items (by key, then push order) out of one array's tail
    /// and chunks, reading chunks from the greatest max key down only as far as needed.
    fn take_greatest(
        &mut self,
        id: &(CollectionId, Bytes),
        index: usize,
        need: usize,
        history: &mut [HistoryChunk],
    ) -> Result<Vec<Stored>> {
        let mut candidates: Vec<(i64, u64)> = self.parents[id].tails[&index]
            .items
            .iter()
            .map(Stored::order)
            .collect();
        // Chunks in descending max key; stop once `need` candidates all lie above the next.
        for at in (0..history.len()).rev() {
            candidates.sort_unstable_by(|a, b| b.cmp(a));
            let next_max = history[at].chunk.summary.max_key;
            let enough =
                candidates.len() >= need && next_max.is_none_or(|max| candidates[need - 1].0 > max);
            if enough {
                break;
            }
            let items = self.load_chunk(id, &mut history[at])?;
            candidates.extend(items.iter().map(Stored::order));
        }
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        candidates.truncate(need);
        let chosen: BTreeSet<(i64, u64)> = candidates.into_iter().collect();
        let mut moved = Vec::with_capacity(chosen.len());
        let mut take = |items: &mut Vec<Stored>| -> bool {
            let before = moved.len();
            let mut kept = Vec::with_capacity(items.len());
            for stored in items.drain(..) {
                if chosen.contains(&stored.order()) {
                    moved.push(stored);
                } else {
                    kept.push(stored);
                }
            }
            *items = kept;
            moved.len() > before
        };
        for chunk in history.iter_mut() {
            if let Some(items) = chunk.items.as_mut() {
                chunk.changed |= take(items);
            }
        }
        let tail = self
            .parents
            .get_mut(id)
            .expect("loaded above")
            .tails
            .get_mut(&index)
            .expect("loaded above");
        take(&mut tail.items);
        Ok(moved)
    }

    /// A chunk's items, read once: a stored chunk's through the cache, a chunk of this
    /// batch's from memory.
    fn load_chunk<'c>(
        &self,
        id: &(CollectionId, Bytes),
        chunk: &'c mut HistoryChunk,
    ) -> Result<&'c mut Vec<Stored>> {
        if chunk.items.is_none() {
            let items = match &chunk.source {
                ChunkSource::Stored(_) => self.shared.cold.items(&chunk.chunk)?.as_ref().clone(),
                ChunkSource::Pending(at) => self.parents[id].chunks[*at].items.clone(),
            };
            chunk.items = Some(items);
        }
        Ok(chunk.items.as_mut().expect("read above"))
    }

    /// The redo of the whole batch, and the value each `Patch` in it makes (in order); fails
    /// when any record would exceed the limit.
    pub fn finish(self) -> Result<(Vec<Op>, Vec<Bytes>)> {
        let page_bytes = self.shared.pages.page_bytes;
        let mut ops = self.created;
        let mut patched = Vec::new();
        // In key order: the same redo for the same batch, and tree inserts that walk forward.
        let mut parents: Vec<_> = self.parents.into_iter().collect();
        parents.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for ((id, _), work) in parents {
            let parent_key = keys::parent(id, &work.key);
            let has_arrays = !work.info.spec.arrays().is_empty();
            if work.deleted && !has_arrays && work.record.is_none() {
                ops.push(Op::Delete {
                    key: parent_key.clone(),
                });
            } else if work.deleted && has_arrays {
                ops.push(Op::Delete {
                    key: parent_key.clone(),
                });
                ops.push(Op::DeleteRange {
                    start: Bytes::from(keys::parent_arrays(id, &work.key)),
                    end: keys::parent_arrays_end(id, &work.key),
                });
                for index in &work.stored_markers {
                    ops.push(Op::Delete {
                        key: keys::outlier(id, *index, &work.key),
                    });
                }
            }
            let Some(record) = &work.record else {
                continue;
            };
            let size = record.encoded_len();
            if size > MAX_RECORD_BYTES as u64 {
                return Err(Error::RecordTooLarge {
                    size,
                    limit: MAX_RECORD_BYTES as u64,
                });
            }
            // What the batch's own delete left is gone from the tree: nothing to patch.
            let stored = |bytes: Option<&Bytes>| bytes.filter(|_| !work.deleted).cloned();
            let put = Op::Put {
                key: parent_key,
                value: Bytes::from(record.encode()),
            };
            ops.push(patch_or_put(
                put,
                stored(work.stored_bytes.as_ref()),
                page_bytes,
                &mut patched,
                record::part_ends,
            ));
            for index in &work.dirty_tails {
                let key = keys::tail(id, &work.key, *index);
                let tail = &work.tails[index].items;
                if tail.is_empty() {
                    ops.push(Op::Delete { key });
                } else {
                    let mut value = Vec::with_capacity(item::items_len(tail));
                    item::encode_items(tail, &mut value);
                    let put = Op::Put {
                        key,
                        value: Bytes::from(value),
                    };
                    ops.push(patch_or_put(
                        put,
                        stored(work.stored_tails.get(index)),
                        page_bytes,
                        &mut patched,
                        |bytes| {
                            let mut ends =
                                Vec::with_capacity(1 + bytes.len() / item::ITEM_OVERHEAD_BYTES);
                            item::part_ends(&mut bytes.clone(), 0, &mut ends)?;
                            Ok(ends)
                        },
                    ));
                }
            }
            for key in &work.dropped_chunks {
                ops.push(Op::Delete { key: key.clone() });
            }
            for pending in &work.chunks {
                let chunk = &pending.chunk;
                ops.push(Op::ColdChunk(chunk.loc));
                let max_key = chunk.summary.max_key.unwrap_or(i64::MIN);
                ops.push(Op::Put {
                    key: keys::chunk(id, &work.key, pending.index, max_key, pending.number),
                    value: chunk.encode(),
                });
            }
            for index in &work.dropped_markers {
                ops.push(Op::Delete {
                    key: keys::outlier(id, *index, &work.key),
                });
            }
            for index in &work.new_markers {
                ops.push(Op::Put {
                    key: keys::outlier(id, *index, &work.key),
                    value: Bytes::new(),
                });
            }
        }
        Ok((ops, patched))
    }
}
