//! Summaries of an array's items over a range, whole or per window: the parent's stored
//! summary, inline and tail items, chunks by their stored summaries read in place from the
//! chunk index (decoded only where they straddle a range's or a window's end), and the
//! rollups an expiry kept (`format-spec/arrays.md`, reads and rollups).

use std::ops::{Bound, Range};

use crate::cache::Owner;
use crate::catalog::CollectionInfo;
use crate::cold::ChunkItems;
use crate::document::ItemQuery;
use crate::error::{Error, Result};
use crate::item::Summary;
use crate::item_ref::ItemRef;
use crate::page::keys;
use crate::page::node::Node;
use crate::record::ArrayState;
use crate::rollup::{Windows, window_of};
use crate::store::read::decode::decode_rollup;
use crate::store::read::reads::{InRange, Reads, pages_for};
use crate::store::versions::Version;

impl Reads<'_> {
    /// The summary of array `field`'s items in `range`, with the rollups it holds whole.
    pub fn summary(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        range: (Bound<i64>, Bound<i64>),
    ) -> Result<Option<Summary>> {
        let whole = range == (Bound::Unbounded, Bound::Unbounded);
        let Some(record) = self.parent_record(version, info, key, |f| f == field && !whole)? else {
            return Ok(None);
        };
        let array = &record.arrays[field];
        let query = ItemQuery::new().range(range);
        let mut summary = match whole {
            true => array.summary.clone(),
            false => {
                let mut held = Summary::default();
                self.gather_held(version, info, key, field, array, &query, &mut held)?;
                held
            }
        };
        self.gather_rollups(version, info, key, field, &query, &mut summary)?;
        Ok(Some(summary))
    }

    /// Array `field`'s items in `range` and the rollups it holds whole, summarized per
    /// window of `span` (aligned to its multiples) that holds any, in one walk of the
    /// items' chunk index and rollup records: a chunk or rollup inside one window adds its
    /// summary, a chunk across windows is decoded. `None` when the parent does not exist.
    #[allow(
        clippy::too_many_arguments,
        reason = "one read's parts, as `summary` has them"
    )]
    pub fn summary_windows(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        range: (Bound<i64>, Bound<i64>),
        span: i64,
    ) -> Result<Option<Vec<(i64, Summary)>>> {
        let Some(record) = self.parent_record(version, info, key, |f| f == field)? else {
            return Ok(None);
        };
        let query = ItemQuery::new().range(range);
        let mut windows = Windows::new(span);
        let array = &record.arrays[field];
        self.gather_held(version, info, key, field, array, &query, &mut windows)?;
        self.gather_rollups(version, info, key, field, &query, &mut windows)?;
        Ok(Some(windows.into_windows().into_iter().collect()))
    }

    /// Gives `sink` array `field`'s held items in `query`'s range (of parent record
    /// `array`): inline and tail items one by one, chunks by their stored summaries read in
    /// place from the index leaves where the sink takes them whole (a leaf of this array's
    /// entries alone, all inside the range, by the summary of all of them, made once per
    /// cached leaf); other chunks in the range are decoded.
    #[allow(
        clippy::too_many_arguments,
        reason = "one read's parts, as `summary` has them"
    )]
    fn gather_held(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        array: &ArrayState,
        query: &ItemQuery,
        sink: &mut impl Gather,
    ) -> Result<()> {
        for stored in array.inline.iter().filter(|s| query.wanted(s)) {
            sink.item(ItemRef::stored(stored));
        }
        if !array.has_overflow {
            return Ok(());
        }
        let mut tail = Vec::new();
        self.tail_items(version, info, key, field, query, &mut tail)?;
        for stored in &tail {
            sink.item(ItemRef::stored(stored));
        }
        let mut straddling = Vec::new();
        self.for_each_chunk_in(version, info, key, field, query, |found| match found {
            InRange::Leaf(whole) => sink.whole(whole),
            InRange::Entry(entry) => {
                if !(query.covers(&entry.summary) && sink.whole(&entry.summary)) {
                    straddling.push(entry);
                }
                true
            }
        })?;
        for entry in straddling {
            let items = self.chunk_items(version, &entry, Owner::collection(info.id))?;
            sink.items(&items, crate::store::read::items::on_pages(&items, query));
        }
        Ok(())
    }

    /// Gives `sink`, whole, every rollup of array `field` whose items `query`'s range
    /// holds (none for an array without rollups), in key order, read in place from their
    /// leaves (a year of hourly rollups is 8,760 records); `Error::RangeCutsRollup` for one
    /// the range holds part of, or the sink cannot take whole (one across its windows).
    fn gather_rollups(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
        sink: &mut impl Gather,
    ) -> Result<()> {
        let Some(span) = info.spec.arrays()[field].rollup else {
            return Ok(());
        };
        let slot = info.slot(field);
        // Every rollup's span divides the declared one (it is that span, or one the
        // declared span was widened from): none before the declared window of the range's
        // lower bound holds a key of it.
        let first = match query.start {
            Bound::Included(at) | Bound::Excluded(at) => {
                keys::rollup(info.id, key, slot, window_of(at, span))
            }
            Bound::Unbounded => keys::rollups(info.id, key, slot),
        };
        let end = keys::rollups_end(info.id, key, slot);
        let pages = pages_for(self.pages, info);
        let tree = &version.tree;
        let mut cursor = tree.cursor(&pages, Bound::Included(&first))?;
        cursor.for_each_leaf(tree, &pages, |leaf, from| {
            let Node::Leaf { entries, .. } = leaf else {
                return Ok(false);
            };
            for index in from..entries.len() {
                let (tree_key, inline) = entries.in_place(index);
                if tree_key >= end.as_ref() {
                    return Ok(false);
                }
                let at = tree_key.len() - 8;
                let start = keys::from_sortable(tree_key[at..].try_into().expect("8 bytes"));
                let decoded = match inline {
                    Some(bytes) => decode_rollup(bytes, tree_key, start),
                    None => pages
                        .value_bytes(&entries.value(index))
                        .and_then(|bytes| decode_rollup(&bytes, tree_key, start)),
                };
                let rollup = decoded.map_err(|e| self.placed(e, tree, tree_key))?;
                let span = rollup.span;
                if query.covers(&rollup.summary) {
                    if !sink.whole(&rollup.counted()) {
                        return Err(cut_rollup(info, field, start, span));
                    }
                } else if query.overlaps(&rollup.summary) {
                    return Err(cut_rollup(info, field, start, span));
                } else if query.end_below(start) {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }
}

/// Where a ranged summary's parts go: one summary, or one per window.
trait Gather {
    /// Adds one item in range.
    fn item(&mut self, item: ItemRef<'_>);
    /// Adds the items of `range` of a chunk, all in range.
    fn items(&mut self, chunk: &ChunkItems, range: Range<usize>) {
        for at in range {
            self.item(ItemRef::column(chunk, at));
        }
    }
    /// Adds a set of items in range by its summary; false when it cannot take it whole
    /// (the caller then adds its items one by one).
    fn whole(&mut self, summary: &Summary) -> bool;
}

impl Gather for Summary {
    fn item(&mut self, item: ItemRef<'_>) {
        self.add_values(item.key(), |m| item.measure(m));
    }

    fn items(&mut self, chunk: &ChunkItems, range: Range<usize>) {
        chunk.add_to(range, self);
    }

    fn whole(&mut self, summary: &Summary) -> bool {
        self.merge(summary);
        true
    }
}

impl Gather for Windows {
    fn item(&mut self, item: ItemRef<'_>) {
        self.fold_ref(item);
    }

    fn whole(&mut self, summary: &Summary) -> bool {
        self.fold_summary(summary)
    }
}

/// The error of a range that holds part of array `field`'s rollup of the window at `start`.
fn cut_rollup(info: &CollectionInfo, field: usize, start: i64, span: i64) -> Error {
    Error::RangeCutsRollup {
        field: info.spec.arrays()[field].field.clone(),
        start,
        span,
    }
}
