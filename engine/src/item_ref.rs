//! An item lent in place ([`ItemRef`]) from the bytes the engine holds: an encoded item
//! list's (a parent record's, a tail record's), a decoded list's, or a cold chunk's columns
//! as the cache holds them.

use bytes::Bytes;

use crate::cold::ChunkItems;
use crate::item::{Cursor, Item, MAX_MEASURES, Stored, Walked};

/// One item of an array, lent by [`crate::CollectionHandle::for_each_item`] for the length
/// of one call of its visitor: its key, values and payload are read in place from the
/// bytes the engine holds (the parent record, a tail record, a cold chunk in the cache),
/// and nothing is allocated unless [`ItemRef::to_item`] is asked for an owned copy.
#[derive(Clone, Copy)]
pub struct ItemRef<'a>(Repr<'a>);

#[derive(Clone, Copy)]
enum Repr<'a> {
    /// An item of an encoded list: `list` is the whole list's bytes, `walked` where the
    /// item is in them.
    Listed { list: &'a Bytes, walked: &'a Walked },
    /// An item of a decoded list.
    Stored(&'a Stored),
    /// Item `at` of a chunk, as the cache holds it.
    Column { chunk: &'a ChunkItems, at: usize },
}

impl<'a> ItemRef<'a> {
    pub(crate) fn listed(list: &'a Bytes, walked: &'a Walked) -> Self {
        ItemRef(Repr::Listed { list, walked })
    }

    pub(crate) fn stored(stored: &'a Stored) -> Self {
        ItemRef(Repr::Stored(stored))
    }

    pub(crate) fn column(chunk: &'a ChunkItems, at: usize) -> Self {
        ItemRef(Repr::Column { chunk, at })
    }

    /// The item's key.
    #[inline]
    pub fn key(&self) -> i64 {
        match self.0 {
            Repr::Listed { walked, .. } => walked.key(),
            Repr::Stored(stored) => stored.item.key,
            Repr::Column { chunk, at } => chunk.key(at),
        }
    }

    /// The item's value of its array's first measure, if it has one (see [`Item::value`]).
    #[inline]
    pub fn value(&self) -> Option<f64> {
        match self.0 {
            Repr::Listed { walked, .. } => walked.value(),
            Repr::Stored(stored) => stored.item.value,
            Repr::Column { chunk, at } => chunk.measure(at, 0),
        }
    }

    /// The item's value of measure `index` (0 is [`ItemRef::value`]), if it has one (see
    /// [`Item::measure`]).
    #[inline]
    pub fn measure(&self, index: usize) -> Option<f64> {
        if index == 0 {
            return self.value();
        }
        match self.0 {
            Repr::Listed { list, walked } => walked.measure(list, index),
            Repr::Stored(stored) => stored.item.measure(index),
            Repr::Column { chunk, at } => chunk.measure(at, index),
        }
    }

    /// The item's payload, in place.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        match self.0 {
            Repr::Listed { list, walked } => walked.payload(list),
            Repr::Stored(stored) => &stored.item.payload,
            Repr::Column { chunk, at } => chunk.payload(at),
        }
    }

    /// The item's identity: its key and push sequence, for [`crate::Batch::remove_item`]
    /// and as a cursor to page on after it ([`crate::ItemQuery::after`]).
    #[inline]
    pub fn id(&self) -> Cursor {
        let (key, seq) = self.order();
        Cursor { key, seq }
    }

    /// The item as an owned [`Item`]; its payload shares the engine's buffer (no copy of
    /// its bytes).
    pub fn to_item(&self) -> Item {
        match self.0 {
            Repr::Listed { list, walked } => walked.stored(list).item,
            Repr::Stored(stored) => stored.item.clone(),
            Repr::Column { chunk, at } => chunk.item(at),
        }
    }

    #[inline]
    pub(crate) fn order(&self) -> (i64, u64) {
        match self.0 {
            Repr::Listed { walked, .. } => walked.order(),
            Repr::Stored(stored) => stored.order(),
            Repr::Column { chunk, at } => chunk.order(at),
        }
    }
}

impl std::fmt::Debug for ItemRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let measures: Vec<Option<f64>> = (0..MAX_MEASURES).map(|i| self.measure(i)).collect();
        let held = measures
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |i| i + 1);
        f.debug_struct("ItemRef")
            .field("key", &self.key())
            .field("measures", &&measures[..held])
            .field("payload", &Bytes::copy_from_slice(self.payload()))
            .finish()
    }
}
