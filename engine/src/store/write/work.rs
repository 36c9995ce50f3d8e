//! What one batch does to one parent: its record, its arrays' tail records, the chunks it
//! writes or drops and its outlier markers, worked out in memory against the state the
//! batch starts from. The layouts' rules (`pattern`) decide where items go; this executes
//! the decision and, at the end, emits the parent's redo.
//!
//! The rules it executes: `format-spec/arrays.md`.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use crate::cache::Owner;
use crate::catalog::{CollectionInfo, Layout};
use crate::cold::{ChunkKind, ChunkRef, ColdGroup};
use crate::item::{self, Item, NewItem, Stored, Summary};
use crate::page::keys;
use crate::page::redo::Op;
use crate::pattern::{self, Refill};
use crate::record::{self, ArrayState, ParentRecord};
use crate::rollup::{Rollup, Windows};
use crate::store::read::decode::{decode_items, decode_record, decode_rollup};
use crate::store::shared::Shared;
use crate::store::write::apply::Txn;
use crate::store::write::ops::Expired;
use crate::store::write::patch::patch_or_put;
use crate::{
    error::{Error, Result},
    limits::MAX_RECORD_BYTES,
};

/// Whether an array state holds nothing, anywhere: every layout reads it alike.
pub(in crate::store) fn is_empty<T>(array: &ArrayState<T>) -> bool {
    array.total == 0 && !array.has_overflow && array.bucket_start.is_none()
}

/// Reads of the state a batch starts from: the group's transaction so far.
#[derive(Clone, Copy)]
pub(in crate::store) struct Base<'a> {
    pub shared: &'a Shared,
    pub txn: &'a Txn,
}

impl Base<'_> {
    /// `error` with the place of `key`'s value when it is a decoder's corruption error.
    fn placed(&self, error: crate::error::Error, key: &[u8]) -> crate::error::Error {
        self.shared.placed(error, &self.txn.tree, key)
    }

    fn read(&self, key: &[u8]) -> Result<Option<Bytes>> {
        let pages = &self.shared.pages.reading(keys::owner_of(key));
        self.txn.tree.get_bytes(pages, key)
    }
}

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

/// A chunk the batch wrote (a later remove in the batch reads its items back from the
/// group: a bulk load's chunks are not all held in memory).
struct PendingChunk {
    index: usize,
    number: u32,
    chunk: ChunkRef,
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
pub(in crate::store) struct ParentWork {
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
    /// Rollup records an expiry added to, by array field and window start, as the batch
    /// leaves them (the stored rollup merged in).
    rollups: BTreeMap<(usize, i64), Rollup>,
}

impl ParentWork {
    /// The work of parent `key` of `info`'s collection, starting from its stored record.
    pub fn load(base: Base, info: Arc<CollectionInfo>, key: &Bytes) -> Result<ParentWork> {
        // A collection without arrays has nothing in a stored record worth keeping: a put
        // replaces it whole and a delete leaves no array records behind. Skip the read.
        let stored_bytes = if info.spec.arrays().is_empty() {
            None
        } else {
            base.read(&keys::parent(info.id, key))?
        };
        let record = match &stored_bytes {
            Some(bytes) => Some(
                decode_record(bytes.clone(), &info, key)
                    .map_err(|e| base.placed(e, &keys::parent(info.id, key)))?,
            ),
            None => None,
        };
        // Only the markers are needed of the stored state: copying the record (up to
        // 16 MiB under Embed) to keep it beside the working one would be wasted.
        let stored_markers = record.as_ref().map_or_else(Vec::new, |record| {
            record
                .arrays
                .iter()
                .enumerate()
                .filter(|(_, a)| a.has_overflow)
                .map(|(i, _)| i)
                .collect()
        });
        Ok(ParentWork {
            info,
            key: key.clone(),
            record,
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
            rollups: BTreeMap::new(),
        })
    }

    /// The record as the batch leaves it, created empty if the parent has none.
    fn record_or_new(&mut self) -> &mut ParentRecord {
        let info = &self.info;
        self.record.get_or_insert_with(|| {
            let mut record = ParentRecord::new(Bytes::new(), info.spec.arrays().len());
            // A new parent's arrays are under their current layouts: a layout change
            // running has nothing of it to move.
            for (array, state) in record.arrays.iter_mut().zip(&info.layouts) {
                array.parity = state.parity;
            }
            record
        })
    }

    pub fn put(&mut self, body: Bytes) {
        self.record_or_new().body = body;
    }

    /// The parent and everything of its arrays go; later operations of the batch start
    /// from nothing.
    pub fn delete(&mut self) {
        self.record = None;
        self.deleted = true;
        self.tails.clear();
        self.dirty_tails.clear();
        self.chunks.clear();
        self.new_markers.clear();
        self.dropped_chunks.clear();
        self.dropped_markers.clear();
        self.rollups.clear();
    }

    /// Array `index` of a record that exists: the callers create it (a push) or return
    /// before when there is none (a remove, an expiry), so its absence is a bug here.
    fn array(&mut self, index: usize) -> &mut ArrayState {
        let record = self.record.as_mut();
        &mut record
            .expect("an array operation on a parent with a record")
            .arrays[index]
    }

    /// Writes `items` as a new chunk of array `index`, numbered from the array's next
    /// chunk, and lists it among the batch's chunks; returns what its index entry holds.
    fn add_chunk(
        &mut self,
        index: usize,
        kind: ChunkKind,
        items: Vec<Stored>,
        cold: &mut ColdGroup,
    ) -> ChunkRef {
        let array = self.array(index);
        let number = array.next_chunk;
        array.next_chunk += 1;
        let chunk = cold.add_kept(kind, &items, Owner::collection(self.info.id));
        self.chunks.push(PendingChunk {
            index,
            number,
            chunk: chunk.clone(),
        });
        chunk
    }

    /// The tail record of array `index`, read once per batch; a deleted parent starts with
    /// an empty tail.
    fn load_tail(&mut self, base: Base, index: usize) -> Result<&mut Tail> {
        match self.tails.entry(index) {
            Entry::Occupied(tail) => Ok(tail.into_mut()),
            Entry::Vacant(vacant) => {
                let tail_key = keys::tail(self.info.id, &self.key, self.info.slot(index));
                let stored = match base.read(&tail_key)? {
                    Some(bytes) if !self.deleted => Some(bytes),
                    _ => None,
                };
                let items = match &stored {
                    Some(bytes) => decode_items(bytes.clone(), &tail_key)
                        .map_err(|e| base.placed(e, &tail_key))?,
                    None => Vec::new(),
                };
                if let Some(bytes) = stored {
                    self.stored_tails.insert(index, bytes);
                }
                Ok(vacant.insert(Tail::new(items)))
            }
        }
    }

    /// Pushes `new` to array `index` by `layout`'s rule; an item the rule sends out goes to
    /// the tail, whose older items are written as a chunk when it would outgrow `tail_limit`.
    pub fn push(
        &mut self,
        base: Base,
        index: usize,
        layout: Layout,
        mut new: NewItem,
        cold: &mut ColdGroup,
    ) -> Result<()> {
        // Values given by measure name find their places in the array's measures.
        let spec = &self.info.spec.arrays()[index];
        new.resolve(&spec.measures)
            .map_err(|measure| Error::UnknownMeasure {
                collection: self.info.spec.name().to_string(),
                field: spec.field.clone(),
                measure,
            })?;
        let array = &mut self.record_or_new().arrays[index];
        // The next key after the greatest; none follows `i64::MAX` (the item would share its
        // key, and stand before items pushed before it only by push order).
        let item_key = match (new.key, array.summary.max_key) {
            (Some(key), _) => key,
            (None, None) => 0,
            (None, Some(max)) => max.checked_add(1).ok_or_else(|| Error::InvalidItem {
                reason: format!(
                    "no key follows the array's greatest, {max}: give the item its key"
                ),
            })?,
        };
        let item = Item {
            key: item_key,
            value: new.value,
            payload: new.payload,
            more: new.more,
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
        self.place(base, index, layout, stored, cold)
    }

    /// Puts `stored` (its seq assigned) into array `index` by `layout`'s push rule: an item
    /// the rule sends out goes to the tail, whose older items are written as a chunk when it
    /// would outgrow its bound; a bucket the rule seals is written as a chunk.
    fn place(
        &mut self,
        base: Base,
        index: usize,
        layout: Layout,
        stored: Stored,
        cold: &mut ColdGroup,
    ) -> Result<()> {
        let tail_limit = crate::page::max_inline_record(base.shared.pages.page_bytes);
        let array = self.array(index);
        let outcome = pattern::push(layout, array, stored);
        if outcome.overflowed {
            self.new_markers.insert(index);
        }
        if let Some(bucket) = outcome.sealed_bucket {
            self.add_chunk(index, ChunkKind::Bucket, bucket, cold);
        }
        let Some(stored) = outcome.to_tail else {
            return Ok(());
        };
        let len = item::stored_len(&stored.item);
        let tail = self.load_tail(base, index)?;
        let full = !tail.items.is_empty() && tail.bytes + len > tail_limit;
        let sealed = full.then(|| {
            let mut items = std::mem::take(&mut tail.items);
            let sealed = pattern::seal_tail(&mut items, tail_limit, len);
            *tail = Tail::new(items);
            sealed
        });
        tail.items.push(stored);
        tail.bytes += len;
        self.dirty_tails.insert(index);
        if let Some(items) = sealed {
            self.add_chunk(index, ChunkKind::Items, items, cold);
        }
        Ok(())
    }

    /// Removes every item keyed `item_key` (only the one pushed as `seq`, when given) from
    /// array `index`, wherever it lives. Chunks
    /// that held one are written again without it (their old bytes stay until compaction);
    /// the layout's refill rule brings items back into the parent; the summary is
    /// recomputed from the inline items, the tail and the chunk entries' summaries (no
    /// chunk is decoded for it).
    pub fn remove(
        &mut self,
        base: Base,
        index: usize,
        layout: Layout,
        item_key: i64,
        seq: Option<u64>,
        cold: &mut ColdGroup,
    ) -> Result<()> {
        let keep = |s: &Stored| s.item.key != item_key || seq.is_some_and(|seq| s.seq != seq);
        let Some(mut history) = self.open_history(base, index)? else {
            return Ok(());
        };
        let mut removed = 0;
        for chunk in history.iter_mut() {
            let summary = &chunk.chunk.summary;
            if summary.min_key.is_some_and(|min| min <= item_key)
                && summary.max_key.is_some_and(|max| max >= item_key)
            {
                let items = self.load_chunk(base, chunk, cold)?;
                let before = items.len();
                items.retain(keep);
                removed += before - items.len();
                chunk.changed |= items.len() < before;
            }
        }
        let tail = self.load_tail(base, index)?;
        let before = tail.items.len();
        tail.items.retain(keep);
        removed += before - tail.items.len();
        let array = self.array(index);
        let before = array.inline.len();
        array.inline.retain(keep);
        removed += before - array.inline.len();
        if removed == 0 {
            return Ok(());
        }
        match pattern::refill(layout, array.inline.len()) {
            Refill::Nothing => {}
            Refill::Greatest(need) => {
                let moved = self.take_greatest(base, index, need, &mut history, cold)?;
                let array = self.array(index);
                array.inline.extend(moved);
                array.inline.sort_by_key(Stored::order);
            }
        }
        self.settle(index, history, cold);
        Ok(())
    }

    /// Drops every sealed bucket of array `index` that the expiry rule names for `before`,
    /// from the chunk index alone (no bucket is read); returns what it dropped. Where the
    /// array keeps rollups, what it drops is first added to its windows' rollups (a bucket
    /// inside one window by its summary, any other read), and so are its late items below
    /// `before` (from the tail and the late item chunks), which go too.
    pub fn expire_buckets(
        &mut self,
        base: Base,
        index: usize,
        before: i64,
        cold: &mut ColdGroup,
    ) -> Result<Expired> {
        let mut expired = Expired::default();
        let Some(mut history) = self.open_history(base, index)? else {
            return Ok(expired);
        };
        let mut windows = self.info.spec.arrays()[index].rollup.map(Windows::new);
        let mut changed = false;
        for chunk in history.iter_mut() {
            let (kind, summary) = (chunk.chunk.kind, &chunk.chunk.summary);
            if pattern::expires(kind, summary, before) {
                if let Some(windows) = &mut windows
                    && !windows.fold_summary(summary)
                {
                    for stored in self.load_chunk(base, chunk, cold)?.iter() {
                        windows.fold_item(&stored.item);
                    }
                }
                expired.buckets += 1;
                expired.items += chunk.chunk.summary.items;
                chunk.items = Some(Vec::new());
                chunk.changed = true;
                changed = true;
            } else if let Some(windows) = &mut windows
                && pattern::rolls_up_late(kind, summary, before)
            {
                let items = self.load_chunk(base, chunk, cold)?;
                let late = take_late(items, before, windows);
                expired.items += late;
                chunk.changed |= late > 0;
                changed |= late > 0;
            }
        }
        if let Some(windows) = &mut windows {
            let tail = self.load_tail(base, index)?;
            let late = take_late(&mut tail.items, before, windows);
            expired.items += late;
            changed |= late > 0;
            expired.rolled_up = expired.items;
        }
        if changed {
            self.settle(index, history, cold);
        }
        if let Some(windows) = windows {
            self.add_rollups(base, index, windows)?;
        }
        Ok(expired)
    }

    /// Merges an expiry's windows into array `index`'s rollups: the batch's own, else the
    /// stored record of each window (of the declared span, or of one it was widened from).
    fn add_rollups(&mut self, base: Base, index: usize, windows: Windows) -> Result<()> {
        let span = windows.span();
        for (start, summary) in windows.into_windows() {
            let rollup = match self.rollups.entry((index, start)) {
                Entry::Occupied(rollup) => rollup.into_mut(),
                Entry::Vacant(vacant) => {
                    let key = keys::rollup(self.info.id, &self.key, self.info.slot(index), start);
                    let stored = match base.read(&key)? {
                        Some(bytes) if !self.deleted => Some(
                            decode_rollup(&bytes, &key, start).map_err(|e| base.placed(e, &key))?,
                        ),
                        _ => None,
                    };
                    vacant.insert(stored.unwrap_or(Rollup {
                        span,
                        summary: Summary::default(),
                    }))
                }
            };
            // A stored rollup of a narrower span (one the declared span was widened from)
            // lies inside this window, which starts where it does: the window takes it in.
            if span % rollup.span != 0 {
                let key = keys::rollup(self.info.id, &self.key, self.info.slot(index), start);
                let error = Error::corruption(
                    crate::store::read::decode::UNPLACED,
                    0,
                    format!(
                        "rollup record {key:x?} of span {}, which does not divide {span}",
                        rollup.span
                    ),
                );
                return Err(base.placed(error, &key));
            }
            rollup.span = span;
            rollup.summary.merge(&summary);
        }
        Ok(())
    }

    /// Moves array `index` to `layout` (see `format-spec/arrays.md`, layout changes): every
    /// item, wherever it lives, taken out and placed again in push order by `layout`'s rule,
    /// keeping its sequence number; the array's total, summary (to the bit), next sequence
    /// number and chunk numbering are kept, and its state takes `parity`. Its old chunk
    /// entries, tail and outlier marker go with this batch. Does nothing when the state is
    /// under `parity` already, or holds nothing.
    pub fn migrate(
        &mut self,
        base: Base,
        index: usize,
        layout: Layout,
        parity: bool,
        cold: &mut ColdGroup,
    ) -> Result<()> {
        let Some(record) = &mut self.record else {
            return Ok(());
        };
        let array = &mut record.arrays[index];
        if array.parity == parity || is_empty(array) {
            array.parity = parity;
            return Ok(());
        }
        let Some(mut history) = self.open_history(base, index)? else {
            return Ok(());
        };
        let mut items = Vec::new();
        let mut gone_pending = Vec::new();
        for chunk in &mut history {
            items.append(self.load_chunk(base, chunk, cold)?);
            match &chunk.source {
                ChunkSource::Stored(tree_key) => {
                    self.dropped_chunks.insert(tree_key.clone());
                }
                ChunkSource::Pending(at) => gone_pending.push(*at),
            }
        }
        gone_pending.sort_unstable();
        for at in gone_pending.into_iter().rev() {
            self.chunks.remove(at);
        }
        let tail = self.load_tail(base, index)?;
        items.append(&mut tail.items);
        *tail = Tail::new(Vec::new());
        self.dirty_tails.insert(index);
        self.new_markers.remove(&index);
        let array = self.array(index);
        items.append(&mut array.inline);
        items.sort_unstable_by_key(|s| s.seq);
        let kept = (array.total, array.summary.clone(), array.next_seq);
        *array = ArrayState {
            next_chunk: array.next_chunk,
            ..ArrayState::default()
        };
        for stored in items {
            self.place(base, index, layout, stored, cold)?;
        }
        let array = self.array(index);
        assert_eq!(array.total, kept.0, "a migration places every item");
        (array.summary, array.next_seq, array.parity) = (kept.1, kept.2, parity);
        if !array.has_overflow && self.stored_markers.contains(&index) {
            self.dropped_markers.insert(index);
        }
        Ok(())
    }

    /// Writes what a remove or an expiry left of array `index`: changed chunks lose their
    /// index entries and are written again when items are left; the tail is rewritten; the
    /// total, summary and overflow flag are computed again from the inline items, the tail
    /// and the chunks' summaries. The tail is loaded (by the remove or expiry).
    fn settle(&mut self, index: usize, history: Vec<HistoryChunk>, cold: &mut ColdGroup) {
        let tail_items = match self.tails.get_mut(&index) {
            Some(tail) => std::mem::take(&mut tail.items),
            None => Vec::new(),
        };
        let mut summary = Summary::of(self.array(index).inline.iter().map(|s| &s.item));
        summary.merge(&Summary::of(tail_items.iter().map(|s| &s.item)));
        let mut outside = !tail_items.is_empty();
        self.tails.insert(index, Tail::new(tail_items));
        self.dirty_tails.insert(index);
        let mut gone_pending = Vec::new();
        for chunk in history {
            if !chunk.changed {
                summary.merge(&chunk.chunk.summary);
                outside = true;
                continue;
            }
            match chunk.source {
                ChunkSource::Stored(tree_key) => {
                    self.dropped_chunks.insert(tree_key);
                }
                ChunkSource::Pending(at) => gone_pending.push(at),
            }
            // A changed chunk was read (a remove) or emptied (an expiry) before it changed.
            let items = chunk.items.expect("a changed chunk has its items");
            if items.is_empty() {
                continue;
            }
            let written = self.add_chunk(index, chunk.chunk.kind, items, cold);
            summary.merge(&written.summary);
            outside = true;
        }
        // Positions in `self.chunks` from before this call; new chunks went to the end.
        gone_pending.sort_unstable();
        for at in gone_pending.into_iter().rev() {
            self.chunks.remove(at);
        }
        let array = self.array(index);
        array.total = summary.items;
        array.summary = summary;
        array.inline_bytes = array.inline.iter().map(|s| item::stored_len(&s.item)).sum();
        if array.has_overflow && !outside {
            // Nothing of the array is outside the record any more.
            array.has_overflow = false;
            // (A marker this batch added may be one stored already: a layout change moved
            // the parent first.)
            self.new_markers.remove(&index);
            if self.stored_markers.contains(&index) {
                self.dropped_markers.insert(index);
            }
        }
    }

    /// Array `index`'s history with its tail loaded, for a removal or an expiry; `None`
    /// when the parent has no record, which leaves nothing to change.
    fn open_history(&mut self, base: Base, index: usize) -> Result<Option<Vec<HistoryChunk>>> {
        if self.record.is_none() {
            return Ok(None);
        }
        self.load_tail(base, index)?;
        self.history(base, index).map(Some)
    }

    /// Every chunk of array `index` as of this point in the batch (stored ones not dropped,
    /// and the batch's own), in max key order, not yet read.
    fn history(&self, base: Base, index: usize) -> Result<Vec<HistoryChunk>> {
        let mut chunks = Vec::new();
        if !self.deleted {
            base.shared.reads().for_each_chunk_entry(
                &base.txn.tree,
                &self.info,
                &self.key,
                index,
                Bound::Unbounded,
                |tree_key, entry| {
                    if !self.dropped_chunks.contains(tree_key) {
                        chunks.push(HistoryChunk::new(
                            ChunkSource::Stored(tree_key.clone()),
                            entry.clone(),
                        ));
                    }
                    Ok(true)
                },
            )?;
        }
        for (at, pending) in self.chunks.iter().enumerate() {
            if pending.index == index {
                chunks.push(HistoryChunk::new(
                    ChunkSource::Pending(at),
                    pending.chunk.clone(),
                ));
            }
        }
        chunks.sort_by_key(|c| c.chunk.summary.max_key);
        Ok(chunks)
    }

    /// Takes the `need` greatest items (by key, then push order) out of array `index`'s
    /// tail and chunks, reading chunks from the greatest max key down only as far as
    /// needed. The tail is loaded.
    fn take_greatest(
        &mut self,
        base: Base,
        index: usize,
        need: usize,
        history: &mut [HistoryChunk],
        cold: &ColdGroup,
    ) -> Result<Vec<Stored>> {
        let tail = self.load_tail(base, index)?;
        let mut candidates: Vec<(i64, u64)> = tail.items.iter().map(Stored::order).collect();
        // Chunks in descending max key; stop once `need` candidates all lie above the next.
        for at in (0..history.len()).rev() {
            candidates.sort_unstable_by(|a, b| b.cmp(a));
            let next_max = history[at].chunk.summary.max_key;
            let enough =
                candidates.len() >= need && next_max.is_none_or(|max| candidates[need - 1].0 > max);
            if enough {
                break;
            }
            let items = self.load_chunk(base, &mut history[at], cold)?;
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
        take(&mut self.load_tail(base, index)?.items);
        Ok(moved)
    }

    /// A chunk's items, read once: a stored chunk's through the cache, a chunk of this
    /// batch's from memory.
    fn load_chunk<'c>(
        &self,
        base: Base,
        chunk: &'c mut HistoryChunk,
        cold: &ColdGroup,
    ) -> Result<&'c mut Vec<Stored>> {
        let items = match chunk.items.take() {
            Some(items) => items,
            None => match &chunk.source {
                ChunkSource::Stored(_) => {
                    let owner = Owner::collection(self.info.id);
                    base.shared.cold.items(&chunk.chunk, owner)?.to_stored()
                }
                ChunkSource::Pending(at) => cold.items(&self.chunks[*at].chunk)?.to_stored(),
            },
        };
        Ok(chunk.items.insert(items))
    }

    /// Appends the parent's redo to `ops` (and the value of each `Patch` to `patched`);
    /// fails when its record would exceed the limit.
    pub fn emit(
        mut self,
        page_bytes: usize,
        ops: &mut Vec<Op>,
        patched: &mut Vec<Bytes>,
    ) -> Result<()> {
        let id = self.info.id;
        let parent_key = keys::parent(id, &self.key);
        let has_arrays = !self.info.spec.arrays().is_empty();
        if self.deleted && !has_arrays && self.record.is_none() {
            ops.push(Op::Delete {
                key: parent_key.clone(),
            });
        } else if self.deleted && has_arrays {
            ops.push(Op::Delete {
                key: parent_key.clone(),
            });
            ops.push(Op::DeleteRange {
                start: Bytes::from(keys::parent_arrays(id, &self.key)),
                end: keys::parent_arrays_end(id, &self.key),
            });
            for index in &self.stored_markers {
                ops.push(Op::Delete {
                    key: keys::outlier(id, self.info.slot(*index), &self.key),
                });
            }
        }
        // A state outside any migration, or one holding nothing (which every layout reads
        // alike), is under its array's current layout.
        if let Some(record) = &mut self.record {
            for (array, state) in record.arrays.iter_mut().zip(&self.info.layouts) {
                if state.previous.is_none() || is_empty(array) {
                    array.parity = state.parity;
                }
            }
        }
        let Some(record) = &self.record else {
            return Ok(());
        };
        for array in &record.arrays {
            assert_eq!(
                array.total, array.summary.items,
                "an array's total is its count"
            );
            assert!(
                array.has_overflow || array.inline.len() as u64 == array.total,
                "items outside a parent not flagged"
            );
        }
        let size = record.encoded_len(self.info.shape());
        if size > MAX_RECORD_BYTES as u64 {
            return Err(Error::RecordTooLarge {
                size,
                limit: MAX_RECORD_BYTES as u64,
            });
        }
        // What the batch's own delete left is gone from the tree: nothing to patch.
        let stored = |bytes: Option<&Bytes>| bytes.filter(|_| !self.deleted).cloned();
        let put = Op::Put {
            key: parent_key,
            value: Bytes::from(record.encode(self.info.shape())),
        };
        ops.push(patch_or_put(
            put,
            stored(self.stored_bytes.as_ref()),
            page_bytes,
            patched,
            record::part_ends,
        ));
        let tail_limit = crate::page::max_inline_record(page_bytes);
        for index in &self.dirty_tails {
            let key = keys::tail(id, &self.key, self.info.slot(*index));
            let Tail { items: tail, bytes } = &self.tails[index];
            assert_eq!(*bytes, item::items_len(tail), "a tail's size kept current");
            assert!(
                tail.len() <= 1 || *bytes <= tail_limit,
                "a tail record over its bound"
            );
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
                    stored(self.stored_tails.get(index)),
                    page_bytes,
                    patched,
                    |bytes| {
                        let mut ends =
                            Vec::with_capacity(1 + bytes.len() / item::ITEM_OVERHEAD_BYTES);
                        item::part_ends(&mut bytes.clone(), 0, &mut ends)?;
                        Ok(ends)
                    },
                ));
            }
        }
        for key in &self.dropped_chunks {
            ops.push(Op::Delete { key: key.clone() });
        }
        for pending in &self.chunks {
            let chunk = &pending.chunk;
            ops.push(Op::ColdChunk(chunk.loc));
            let max_key = chunk.summary.max_key.unwrap_or(i64::MIN);
            ops.push(Op::Put {
                key: keys::chunk(
                    id,
                    &self.key,
                    self.info.slot(pending.index),
                    max_key,
                    pending.number,
                ),
                value: chunk.encode(),
            });
        }
        for ((index, start), rollup) in &self.rollups {
            ops.push(Op::Put {
                key: keys::rollup(id, &self.key, self.info.slot(*index), *start),
                value: Bytes::from(rollup.encode()),
            });
        }
        for index in &self.dropped_markers {
            ops.push(Op::Delete {
                key: keys::outlier(id, self.info.slot(*index), &self.key),
            });
        }
        for index in &self.new_markers {
            ops.push(Op::Put {
                key: keys::outlier(id, self.info.slot(*index), &self.key),
                value: Bytes::new(),
            });
        }
        Ok(())
    }
}

/// Takes out of `items` those with keys below `before`, folding each into `windows`;
/// returns how many.
fn take_late(items: &mut Vec<Stored>, before: i64, windows: &mut Windows) -> u64 {
    let held = items.len();
    items.retain(|stored| {
        let late = stored.item.key < before;
        if late {
            windows.fold_item(&stored.item);
        }
        !late
    });
    (held - items.len()) as u64
}
