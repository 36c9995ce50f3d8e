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

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    pub(crate) fn key(&self, at: usize) -> i64 {
        self.keys[at]
    }

    pub(crate) fn seq(&self, at: usize) -> u64 {
        self.seqs[at]
    }

    pub(crate) fn order(&self, at: usize) -> (i64, u64) {
        (self.keys[at], self.seqs[at])
    }

    /// Item `at`'s value of measure `m`, if it has one.
    pub(crate) fn measure(&self, at: usize, m: usize) -> Option<f64> {
        let value = *self.measures.get(m)?.get(at)?;
        (!value.is_nan()).then_some(value)
    }

    /// Item `at`'s payload, in place.
    pub(crate) fn payload(&self, at: usize) -> &[u8] {
        &self.payloads[self.payload_range(at)]
    }

    fn payload_range(&self, at: usize) -> Range<usize> {
        let start = match at {
            0 => 0,
            at => self.ends[at - 1] as usize,
        };
        start..self.ends[at] as usize
    }

    /// Item `at` as an owned [`Item`], its payload a slice of the chunk's buffer.
    pub(crate) fn item(&self, at: usize) -> Item {
        let more: [Option<f64>; MAX_MEASURES - 1] =
            std::array::from_fn(|m| self.measure(at, m + 1));
        Item {
            key: self.keys[at],
            value: self.measure(at, 0),
            payload: self.payloads.slice(self.payload_range(at)),
            more: more_values(&more),
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

    /// Whether the items are in (key, push) order.
    pub(crate) fn in_order(&self) -> bool {
        (1..self.len()).all(|at| self.order(at - 1) <= self.order(at))
    }

    /// The summary of every item.
    pub(crate) fn summary(&self) -> Summary {
        let mut summary = Summary::default();
        for at in 0..self.len() {
            summary.add_values(self.keys[at], |m| self.measure(at, m));
        }
        summary
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
