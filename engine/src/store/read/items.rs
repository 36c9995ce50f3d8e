//! Reads of one array's items at a version, merged from wherever they live (the parent
//! record's inline items, the array's tail record, its cold chunks) in the query's order and
//! lent in place: an item of an encoded list is read from the list's bytes, one of a cold
//! chunk from the chunk's items as the cache holds them. What a read gathers is a list of
//! picks (key, push sequence, where the item is) in a buffer kept per thread, so a read
//! allocates nothing per item; `items` builds its owned page on top.
//!
//! The read rules: `format-spec/arrays.md`.

use std::cell::Cell;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use crate::cache::Owner;
use crate::catalog::CollectionInfo;
use crate::cold::ChunkItems;
use crate::cold::ChunkRef;
use crate::document::{Cursor, ItemPage, ItemQuery};
use crate::error::Result;
use crate::item::{Order, Walked, walk_items};
use crate::item_ref::ItemRef;
use crate::page::keys;
use crate::store::read::decode::{decode_record_list, walk_tail};
use crate::store::read::reads::{Reads, decode_chunk_entry, pages_for};
use crate::store::versions::Version;

/// The most picks (and walked items, chunk entries) a thread's buffers keep room for between
/// reads (about 800 KiB in all): a read of a long array frees what it needed beyond, which
/// costs it a few allocations, not one per item.
const PICKS_KEPT: usize = 4_096;

/// One item a read found, and where it is.
#[derive(Clone, Copy)]
struct Pick {
    key: i64,
    seq: u64,
    at: At,
}

impl Pick {
    fn order(&self) -> (i64, u64) {
        (self.key, self.seq)
    }
}

#[derive(Clone, Copy)]
enum At {
    /// `Gathered::listed[index]`.
    Listed(u32),
    /// Item `index` of `Gathered::chunks[chunk]`.
    Chunk { chunk: u32, index: u32 },
}

/// What one read gathered: the encoded lists and chunks its items are in, and its picks.
#[derive(Default)]
pub(in crate::store) struct Gathered {
    /// The encoded item lists read: the record's inline list, the tail record's.
    lists: Vec<Bytes>,
    /// Items walked in those lists (the list's index in `lists`, the item).
    listed: Vec<(u32, Walked)>,
    /// The chunks read, as the cache holds their items.
    chunks: Vec<Arc<ChunkItems>>,
    picks: Vec<Pick>,
    /// The chunk index entries a read in key order walks.
    entries: Vec<ChunkRef>,
}

thread_local! {
    /// Each thread's buffers for its reads, lent to one read at a time (a read that a
    /// visitor starts while another lends it items finds none here and makes its own).
    static GATHERED: Cell<Gathered> = Cell::new(Gathered::default());
}

impl Gathered {
    fn take() -> Gathered {
        GATHERED.with(Cell::take)
    }

    /// Gives the buffers back to the thread, emptied: what the read held (lists, chunks)
    /// is released now, not at the thread's next read.
    fn give_back(mut self) {
        self.lists.clear();
        self.chunks.clear();
        let kept = [
            self.picks.capacity(),
            self.listed.capacity(),
            self.entries.capacity(),
        ];
        if kept.into_iter().any(|capacity| capacity > PICKS_KEPT) {
            self = Gathered::default();
        }
        self.listed.clear();
        self.picks.clear();
        self.entries.clear();
        GATHERED.with(|kept| kept.set(self));
    }

    /// Walks an encoded item list (the whole of it, checking it) and picks the items on
    /// `query`'s pages.
    fn add_list(&mut self, list: &mut Bytes, query: &ItemQuery) -> std::result::Result<(), String> {
        let whole = list.clone();
        let at = u32_index(self.lists.len());
        let (listed, picks) = (&mut self.listed, &mut self.picks);
        walk_items(list, |_, walked| {
            let (key, seq) = walked.order();
            if query.wanted_at(key, seq) {
                picks.push(Pick {
                    key,
                    seq,
                    at: At::Listed(u32_index(listed.len())),
                });
                listed.push((at, walked));
            }
        })?;
        self.lists.push(whole);
        Ok(())
    }

    /// Picks the items of a chunk (in (key, push) order) on `query`'s pages: the range's
    /// ends (and the cursor's place) found by a search, and with a limit only the first
    /// `limit` in `order`.
    fn add_chunk(&mut self, items: Arc<ChunkItems>, query: &ItemQuery, limit: Option<usize>) {
        let chunk = u32_index(self.chunks.len());
        let range = on_pages(&items, query);
        let count = limit.unwrap_or(usize::MAX).min(range.len());
        let (keys, seqs) = (items.keys(), items.seqs());
        let pick = |at: usize| Pick {
            key: keys[at],
            seq: seqs[at],
            at: At::Chunk {
                chunk,
                index: u32_index(at),
            },
        };
        match query.order {
            Order::Ascending => {
                let picked = range.start..range.start + count;
                self.picks.extend(picked.map(pick));
            }
            Order::Descending => {
                let picked = range.end - count..range.end;
                self.picks.extend(picked.rev().map(pick));
            }
        }
        self.chunks.push(items);
    }

    /// Puts the picks in `order` and keeps the first `limit`.
    fn cut(&mut self, order: Order, limit: usize) {
        arrange(&mut self.picks, order);
        self.picks.truncate(limit);
    }

    fn item(&self, pick: &Pick) -> ItemRef<'_> {
        match pick.at {
            At::Listed(index) => {
                let (list, walked) = &self.listed[index as usize];
                ItemRef::listed(&self.lists[*list as usize], walked)
            }
            At::Chunk { chunk, index } => {
                ItemRef::column(&self.chunks[chunk as usize], index as usize)
            }
        }
    }
}

/// The items of a chunk on `query`'s pages: its range, and past its cursor, found by
/// search.
pub(in crate::store) fn on_pages(items: &ChunkItems, query: &ItemQuery) -> std::ops::Range<usize> {
    let range = items.range(query.start, query.end);
    match query.after {
        Some(after) => {
            let ascending = query.order == Order::Ascending;
            items.beyond(range, (after.key, after.seq), ascending)
        }
        None => range,
    }
}

/// A read's items, in the query's order, lent in place.
pub(crate) struct Picked<'a> {
    gathered: &'a Gathered,
    /// Where the next page starts, when the limit cut this one.
    pub next: Option<Cursor>,
}

impl<'a> Picked<'a> {
    pub fn len(&self) -> usize {
        self.gathered.picks.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = ItemRef<'a>> + use<'a> {
        let gathered = self.gathered;
        gathered.picks.iter().map(|pick| gathered.item(pick))
    }
}

/// Puts `picks` in `order`. A read gathers parts each in order (inline items, a tail,
/// chunks), most often in the page's order end to end, or as two runs of which the second
/// lies wholly before the first (a Bucket's sealed buckets after its open one): those are
/// put in order in one pass; anything else is sorted. (key, seq) is unique: no ties.
fn arrange(picks: &mut [Pick], order: Order) {
    match order {
        Order::Ascending => arrange_ascending(picks),
        Order::Descending => {
            if !picks.is_sorted_by(|a, b| a.order() >= b.order()) {
                arrange_ascending(picks);
                picks.reverse();
            }
        }
    }
}

fn arrange_ascending(picks: &mut [Pick]) {
    let descent = picks
        .windows(2)
        .position(|pair| pair[0].order() > pair[1].order());
    let Some(descent) = descent.map(|at| at + 1) else {
        return;
    };
    let (first, second) = picks.split_at(descent);
    if second.is_sorted_by_key(Pick::order) && second[second.len() - 1].order() < first[0].order() {
        picks.rotate_left(descent);
    } else {
        picks.sort_unstable_by_key(Pick::order);
    }
}

/// An index into one of a read's buffers, which never hold more entries than a record or a
/// chunk has items (each far below `u32::MAX`: an item takes at least
/// `ITEM_OVERHEAD_BYTES` of a record of at most `MAX_RECORD_BYTES`).
fn u32_index(index: usize) -> u32 {
    u32::try_from(index).expect("a read's buffers hold fewer than 2^32 entries")
}

impl Reads<'_> {
    /// Reads array `field`'s items of parent `key` on `query`'s page and hands them, in
    /// place and in the query's order, to `then`; `None` when the parent does not exist.
    pub(crate) fn read_items<R>(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
        then: impl FnOnce(Picked<'_>) -> R,
    ) -> Result<Option<R>> {
        let mut gathered = Gathered::take();
        let read = self.gather(version, info, key, field, query, &mut gathered);
        let result = read.map(|found| {
            found.map(|next| {
                then(Picked {
                    gathered: &gathered,
                    next,
                })
            })
        });
        gathered.give_back();
        result
    }

    /// The owned page of [`Reads::read_items`]: every item built, with its identity.
    pub fn items(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
    ) -> Result<Option<ItemPage>> {
        self.read_items(version, info, key, field, query, |picked| {
            let mut page = ItemPage {
                items: Vec::with_capacity(picked.len()),
                ids: Vec::with_capacity(picked.len()),
                next: picked.next,
            };
            for item in picked.iter() {
                page.ids.push(item.id());
                page.items.push(item.to_item());
            }
            page
        })
    }

    /// Gathers the picks of [`Reads::read_items`] in order, cut to the limit; `None` when
    /// the parent does not exist, else the cursor the page continues from.
    fn gather(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
        gathered: &mut Gathered,
    ) -> Result<Option<Option<Cursor>>> {
        let read = |bytes| {
            decode_record_list(bytes, info, key, field, |list| {
                gathered.add_list(list, query)
            })
        };
        let Some(record) = self.parent_record_with(version, info, key, read)? else {
            return Ok(None);
        };
        if record.arrays[field].has_overflow {
            if let Some(limit) = query.limit {
                gathered.cut(query.order, limit);
            }
            match (query.order, query.limit) {
                (Order::Descending, Some(limit)) => {
                    self.gather_newest(version, info, key, field, query, limit, gathered)?
                }
                _ => self.gather_overflow(version, info, key, field, query, gathered)?,
            }
        }
        arrange(&mut gathered.picks, query.order);
        let next = match query.limit {
            Some(limit) if gathered.picks.len() >= limit => {
                gathered.picks.truncate(limit);
                gathered.picks.last().map(|pick| Cursor {
                    key: pick.key,
                    seq: pick.seq,
                })
            }
            _ => None,
        };
        Ok(Some(next))
    }

    /// Gathers the items of the array's tail and of its chunks in the range.
    fn gather_overflow(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
        gathered: &mut Gathered,
    ) -> Result<()> {
        let owner = Owner::collection(info.id);
        let tail_key = keys::tail(info.id, key, info.slot(field));
        if let Some(bytes) = self.read_tree(version, &tail_key, owner)? {
            walk_tail(bytes, &tail_key, |list| gathered.add_list(list, query))
                .map_err(|e| self.placed(e, &version.tree, &tail_key))?;
        }
        // The entries' buffer is the thread's too, taken out while the chunks are read.
        let mut entries = std::mem::take(&mut gathered.entries);
        let read = self.gather_chunks(version, info, key, field, query, &mut entries, gathered);
        entries.clear();
        gathered.entries = entries;
        read
    }

    /// Gathers the items of the array's chunks in the range, in min key order: with a
    /// limit, stopping at the first chunk that starts after the limit-th item found
    /// (ascending).
    #[allow(clippy::too_many_arguments)]
    fn gather_chunks(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
        entries: &mut Vec<ChunkRef>,
        gathered: &mut Gathered,
    ) -> Result<()> {
        let owner = Owner::collection(info.id);
        self.chunk_entries(version, info, key, field, query, entries)?;
        entries.sort_by_key(|e| e.summary.min_key);
        for entry in entries.iter() {
            if let Some(limit) = query.limit
                && gathered.picks.len() >= limit
            {
                // Every unread chunk starts after the limit-th item found: stop.
                gathered.cut(query.order, limit);
                let boundary = gathered.picks[limit - 1].key;
                if entry.summary.min_key.is_some_and(|min| min > boundary) {
                    break;
                }
            }
            let items = self.chunk_items(version, entry, owner)?;
            gathered.add_chunk(items, query, query.limit);
        }
        Ok(())
    }

    /// Gathers the greatest items of the tail and the chunks, walking the chunk index
    /// backwards (by max key) and stopping once no unread chunk can hold an item among the
    /// first `limit`: the first page of a long history reads only its newest chunks. The
    /// tail's key comes just before the array's chunk entries, so the leaf the walk starts
    /// in usually holds it too: it is read from there when it does, with no second descent.
    #[allow(clippy::too_many_arguments)]
    fn gather_newest(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
        limit: usize,
        gathered: &mut Gathered,
    ) -> Result<()> {
        let keys = keys::ArrayKeys::new(info.id, key, info.slot(field));
        let pages = pages_for(self.pages, info);
        let mut cursor = version
            .tree
            .cursor_back(&pages, Bound::Excluded(keys.chunks_end()))?;
        let tail = match cursor.find_behind(keys.tail()) {
            Some(Some(value)) => Some(pages.value_bytes(&value)?),
            Some(None) => None,
            None => self.read_tree(version, keys.tail(), pages.owner())?,
        };
        if let Some(bytes) = tail {
            walk_tail(bytes, keys.tail(), |list| gathered.add_list(list, query))
                .map_err(|e| self.placed(e, &version.tree, keys.tail()))?;
        }
        while let Some((tree_key, value)) = cursor.prev(&version.tree, &pages)? {
            if !tree_key.starts_with(keys.chunks()) {
                break;
            }
            let entry = decode_chunk_entry(&tree_key, &value, &pages)
                .map_err(|e| self.placed(e, &version.tree, &tree_key))?;
            if gathered.picks.len() >= limit {
                gathered.cut(Order::Descending, limit);
                let boundary = gathered.picks[limit - 1].key;
                // This chunk and every one before it end below the limit-th item.
                if entry.summary.max_key.is_some_and(|max| max < boundary) {
                    break;
                }
            }
            if !query.overlaps(&entry.summary) {
                continue;
            }
            let items = self.chunk_items(version, &entry, pages.owner())?;
            gathered.add_chunk(items, query, Some(limit));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picks(orders: &[(i64, u64)]) -> Vec<Pick> {
        let pick = |&(key, seq): &(i64, u64)| Pick {
            key,
            seq,
            at: At::Listed(0),
        };
        orders.iter().map(pick).collect()
    }

    fn arranged(orders: &[(i64, u64)], order: Order) -> Vec<(i64, u64)> {
        let mut picks = picks(orders);
        arrange(&mut picks, order);
        picks.iter().map(Pick::order).collect()
    }

    #[test]
    fn gathered_parts_end_in_order_whichever_way_they_came() {
        let keys = |orders: Vec<(i64, u64)>| orders.iter().map(|o| o.0).collect::<Vec<_>>();
        let ascending = Order::Ascending;
        // In order, or a second run wholly before the first: put in order in one pass.
        assert_eq!(
            keys(arranged(&[(1, 0), (2, 1), (5, 2)], ascending)),
            [1, 2, 5]
        );
        let swapped = [(5, 0), (6, 1), (1, 2), (2, 3)];
        assert_eq!(keys(arranged(&swapped, ascending)), [1, 2, 5, 6]);
        // Overlapping runs, a run out of order: sorted.
        let overlapping = [(5, 0), (1, 1), (6, 2), (2, 3)];
        assert_eq!(keys(arranged(&overlapping, ascending)), [1, 2, 5, 6]);
        let interleaved = [(2, 0), (6, 1), (1, 2), (5, 3)];
        assert_eq!(keys(arranged(&interleaved, ascending)), [1, 2, 5, 6]);
        // Descending: whatever way the parts came, newest first.
        for orders in [&swapped, &overlapping, &interleaved] {
            assert_eq!(keys(arranged(orders, Order::Descending)), [6, 5, 2, 1]);
        }
        let descending = [(6, 2), (5, 3), (2, 0), (1, 1)];
        assert_eq!(keys(arranged(&descending, Order::Descending)), [6, 5, 2, 1]);
        // Equal keys order by push sequence across the parts, either way.
        let ties = [(3, 5), (4, 6), (3, 1), (3, 2)];
        assert_eq!(arranged(&ties, ascending), [(3, 1), (3, 2), (3, 5), (4, 6)]);
        assert_eq!(
            arranged(&ties, Order::Descending),
            [(4, 6), (3, 5), (3, 2), (3, 1)]
        );
        assert!(arranged(&[], ascending).is_empty());
        assert_eq!(arranged(&[(7, 0)], Order::Descending), [(7, 0)]);
    }
}
