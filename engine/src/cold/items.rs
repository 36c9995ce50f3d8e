//! A decoded chunk's items as the cache holds them: by columns (keys, push sequences, each
//! measure's values, the payloads end to end in one buffer). A read finds a key range by a
//! search over the key column and lends each item in place ([`super::ItemRef`]); a reading
//! of one measure without payload weighs 28 bytes here, against an [`Item`]'s 72 and the
//! box of further measures.

use std::ops::{Bound, Range};

use bytes::Bytes;

use crate::item::{Item, MAX_MEASURES, Stored, Summary, more_values};
use crate::limits::widths::u32_len;

/// The items of one chunk, in (key, push) order, column by column.
#[derive(Debug, Default)]
pub(crate) struct ChunkItems {
    keys: Vec<i64>,
    seqs: Vec<u64>,
    /// One column per measure, up to the last one some item has a value of; NaN where an
    /// item has none (no item's value is NaN: writes and decodes refuse it).
    measures: Vec<Vec<f64>>,
    /// Where each item's payload ends in `payloads`.
    ends: Vec<u32>,
    payloads: Bytes,
    /// The bytes `payloads` keeps alive (the buffer it is a slice of, when it is one).
    payload_held: usize,
}

impl ChunkItems {
    /// The columns of `items` (in (key, push) order), their payloads copied into one buffer
    /// of their own: the items' payloads may be slices of a batch's or a record's buffers,
    /// which the cache must not hold.
    pub(crate) fn from_stored(items: &[Stored]) -> ChunkItems {
        let measures = items
            .iter()
            .map(|s| (0..MAX_MEASURES).rposition(|m| s.item.measure(m).is_some()))
            .max()
            .flatten()
            .map_or(0, |last| last + 1);
        let mut payloads = Vec::with_capacity(items.iter().map(|s| s.item.payload.len()).sum());
        let mut ends = Vec::with_capacity(items.len());
        for stored in items {
            payloads.extend_from_slice(&stored.item.payload);
            ends.push(u32_len(payloads.len()));
        }
        let payload_held = payloads.len();
        ChunkItems {
            keys: items.iter().map(|s| s.item.key).collect(),
            seqs: items.iter().map(|s| s.seq).collect(),
            measures: (0..measures)
                .map(|m| {
                    let value = |s: &Stored| s.item.measure(m).unwrap_or(f64::NAN);
                    items.iter().map(value).collect()
                })
                .collect(),
            ends,
            payloads: Bytes::from(payloads),
            payload_held,
        }
    }

    /// Columns already decoded: `measures` each as long as `keys`, NaN where an item has no
    /// value; `ends` where each payload ends in `payloads`, which keeps `payload_held` bytes
    /// alive. The caller checks the order and the lengths.
    pub(crate) fn from_columns(
        keys: Vec<i64>,
        seqs: Vec<u64>,
        measures: Vec<Vec<f64>>,
        ends: Vec<u32>,
        payloads: Bytes,
        payload_held: usize,
    ) -> ChunkItems {
        debug_assert!(seqs.len() == keys.len() && ends.len() == keys.len());
        debug_assert!(measures.iter().all(|column| column.len() == keys.len()));
        ChunkItems {
            keys,
            seqs,
            measures,
            ends,
            payloads,
            payload_held,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The key column.
    #[inline]
    pub(crate) fn keys(&self) -> &[i64] {
        &self.keys
    }

    /// The push sequence column.
    #[inline]
    pub(crate) fn seqs(&self) -> &[u64] {
        &self.seqs
    }

    #[inline]
    pub(crate) fn key(&self, at: usize) -> i64 {
        self.keys[at]
    }

    #[inline]
    pub(crate) fn order(&self, at: usize) -> (i64, u64) {
        (self.keys[at], self.seqs[at])
    }

    /// Item `at`'s value of measure `m`, if it has one.
    #[inline]
    pub(crate) fn measure(&self, at: usize, m: usize) -> Option<f64> {
        let value = *self.measures.get(m)?.get(at)?;
        (!value.is_nan()).then_some(value)
    }

    /// Item `at`'s payload, in place.
    #[inline]
    pub(crate) fn payload(&self, at: usize) -> &[u8] {
        &self.payloads[self.payload_range(at)]
    }

    #[inline]
    fn payload_range(&self, at: usize) -> Range<usize> {
        let start = match at {
            0 => 0,
            at => self.ends[at - 1] as usize,
        };
        start..self.ends[at] as usize
    }

    /// Item `at` as an owned [`Item`], its payload a slice of the chunk's buffer.
    pub(crate) fn item(&self, at: usize) -> Item {
        let more = match self.measures.len() {
            0 | 1 => None,
            _ => more_values(&std::array::from_fn::<_, { MAX_MEASURES - 1 }, _>(|m| {
                self.measure(at, m + 1)
            })),
        };
        Item {
            key: self.keys[at],
            value: self.measure(at, 0),
            payload: self.payloads.slice(self.payload_range(at)),
            more,
        }
    }

    /// Item `at` with its push sequence.
    pub(crate) fn stored(&self, at: usize) -> Stored {
        Stored {
            item: self.item(at),
            seq: self.seqs[at],
        }
    }

    /// Every item, owned (for writes that change a chunk, and for checks).
    pub(crate) fn to_stored(&self) -> Vec<Stored> {
        (0..self.len()).map(|at| self.stored(at)).collect()
    }

    /// The items whose keys lie within `start` and `end`, found by a binary search of the
    /// key column.
    pub(crate) fn range(&self, start: Bound<i64>, end: Bound<i64>) -> Range<usize> {
        let keys = &self.keys;
        let from = match start {
            Bound::Included(start) => keys.partition_point(|&key| key < start),
            Bound::Excluded(start) => keys.partition_point(|&key| key <= start),
            Bound::Unbounded => 0,
        };
        let to = match end {
            Bound::Included(end) => keys.partition_point(|&key| key <= end),
            Bound::Excluded(end) => keys.partition_point(|&key| key < end),
            Bound::Unbounded => keys.len(),
        };
        from..to.max(from)
    }

    /// The items of `range` after `cursor` (a (key, push) order) in a read's order: those
    /// above it when `ascending`, else those below, found by a binary search.
    pub(crate) fn beyond(
        &self,
        range: Range<usize>,
        cursor: (i64, u64),
        ascending: bool,
    ) -> Range<usize> {
        let (mut low, mut high) = (range.start, range.end);
        // The first item of the range above the cursor when ascending, at or above it when
        // not.
        while low < high {
            let middle = low + (high - low) / 2;
            let order = self.order(middle);
            let before = if ascending {
                order <= cursor
            } else {
                order < cursor
            };
            if before {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        match ascending {
            true => low..range.end,
            false => range.start..low,
        }
    }

    /// Whether the items are in (key, push) order.
    pub(crate) fn in_order(&self) -> bool {
        (1..self.len()).all(|at| self.order(at - 1) <= self.order(at))
    }

    /// The summary of every item.
    pub(crate) fn summary(&self) -> Summary {
        let mut summary = Summary::default();
        self.add_to(0..self.len(), &mut summary);
        summary
    }

    /// Adds the items of `range` to `summary`, a column at a time.
    pub(crate) fn add_to(&self, range: Range<usize>, summary: &mut Summary) {
        summary.add_keys(&self.keys[range.clone()]);
        for (m, column) in self.measures.iter().enumerate() {
            summary.add_measure(m, &column[range.clone()]);
        }
    }

    /// What the chunk takes in memory, as the cache weighs it.
    pub(crate) fn weight(&self) -> usize {
        size_of::<ChunkItems>()
            + self.keys.capacity() * size_of::<i64>()
            + self.seqs.capacity() * size_of::<u64>()
            + self.measures.capacity() * size_of::<Vec<f64>>()
            + self
                .measures
                .iter()
                .map(|column| column.capacity() * size_of::<f64>())
                .sum::<usize>()
            + self.ends.capacity() * size_of::<u32>()
            + self.payload_held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::RangeBounds;

    /// Items keyed 0, 0, 1, 1, ..., 9, 9 (each key pushed twice), with a value on every
    /// other item and a payload naming the item.
    fn chunk() -> (Vec<Stored>, ChunkItems) {
        let items: Vec<Stored> = (0..20)
            .map(|i: i64| Stored {
                item: Item::new(
                    i / 2,
                    &[(i % 2 == 0).then_some(i as f64)],
                    format!("item {i}").into_bytes(),
                ),
                seq: i as u64,
            })
            .collect();
        let chunk = ChunkItems::from_stored(&items);
        (items, chunk)
    }

    #[test]
    fn columns_give_every_item_back() {
        let (items, chunk) = chunk();
        assert_eq!(chunk.to_stored(), items);
        assert_eq!(chunk.summary(), Summary::of(items.iter().map(|s| &s.item)));
        assert_eq!(chunk.payload(3), b"item 3");
        assert_eq!(
            (chunk.measure(2, 0), chunk.measure(3, 0)),
            (Some(2.0), None)
        );
        assert_eq!(chunk.measure(2, 1), None);
    }

    #[test]
    fn a_range_and_a_cursor_are_found_by_search_as_a_filter_finds_them() {
        let (items, chunk) = chunk();
        let bounds = |key: i64| [Bound::Unbounded, Bound::Included(key), Bound::Excluded(key)];
        for start in (-1..=10).flat_map(bounds) {
            for end in (-1..=10).flat_map(bounds) {
                let range = chunk.range(start, end);
                let filtered: Vec<usize> = (0..items.len())
                    .filter(|&at| RangeBounds::contains(&(start, end), &items[at].item.key))
                    .collect();
                assert_eq!(range.clone().collect::<Vec<_>>(), filtered);
                for cursor in (0..10).flat_map(|key| [(key, 2 * key as u64), (key, 99)]) {
                    for ascending in [true, false] {
                        let beyond = chunk.beyond(range.clone(), cursor, ascending);
                        let wanted: Vec<usize> = filtered
                            .iter()
                            .copied()
                            .filter(|&at| match ascending {
                                true => items[at].order() > cursor,
                                false => items[at].order() < cursor,
                            })
                            .collect();
                        assert_eq!(beyond.collect::<Vec<_>>(), wanted);
                    }
                }
            }
        }
    }
}
