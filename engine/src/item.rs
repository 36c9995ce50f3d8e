//! Items of array fields, their summaries, and the bytes of an item list: the one place
//! that encodes and decodes them (parent records, tail records and cold chunks all hold
//! item lists). See `format-spec/arrays.md`.

use bytes::{Buf, BufMut, Bytes};

use crate::MAX_RECORD_BYTES;

/// One item of an array field.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Orders the array: a time, a sequence, any order.
    pub key: i64,
    /// The measure summaries aggregate (a rating, a temperature), if any.
    pub value: Option<f64>,
    /// The user's bytes.
    pub payload: Bytes,
}

/// An item as stored: with its push sequence number within its array, which orders items
/// of equal key (push order) and identifies an item wherever it lives.
#[derive(Clone, Debug, PartialEq)]
#[doc(hidden)]
pub struct Stored {
    pub item: Item,
    pub seq: u64,
}

impl Stored {
    /// Sort order of reads: key, then push order.
    pub(crate) fn order(&self) -> (i64, u64) {
        (self.item.key, self.seq)
    }
}

/// Count, sum, min and max of the values of a set of items, and its key bounds.
///
/// Values may be infinite, and large ones overflow the sum: `sum` is then infinite, or NaN
/// once infinities of both signs meet. Summaries are equal when every field is, the sums
/// compared bit for bit, so a summary with a NaN sum equals itself (a chunk's stored
/// summary is checked against its items' this way).
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    /// Items in the set, with or without a value.
    pub items: u64,
    /// Items that carry a value; `sum`, `min` and `max` are over these.
    pub count: u64,
    /// Sum of the values.
    pub sum: f64,
    /// Smallest value.
    pub min: Option<f64>,
    /// Greatest value.
    pub max: Option<f64>,
    /// Smallest key.
    pub min_key: Option<i64>,
    /// Greatest key.
    pub max_key: Option<i64>,
}

impl PartialEq for Summary {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
            && self.count == other.count
            && self.sum.to_bits() == other.sum.to_bits()
            && self.min == other.min
            && self.max == other.max
            && self.min_key == other.min_key
            && self.max_key == other.max_key
    }
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            items: 0,
            count: 0,
            sum: 0.0,
            min: None,
            max: None,
            min_key: None,
            max_key: None,
        }
    }
}

/// Bytes of an encoded summary.
pub const SUMMARY_BYTES: usize = 8 * 7;

fn merge_option<T: Copy>(a: Option<T>, b: Option<T>, pick: fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(pick(a, b)),
        (a, b) => a.or(b),
    }
}

impl Summary {
    /// The average value, if any item has one.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// Adds one item.
    pub fn add(&mut self, item: &Item) {
        self.items += 1;
        self.min_key = merge_option(self.min_key, Some(item.key), i64::min);
        self.max_key = merge_option(self.max_key, Some(item.key), i64::max);
        if let Some(value) = item.value {
            self.count += 1;
            self.sum += value;
            self.min = merge_option(self.min, Some(value), f64::min);
            self.max = merge_option(self.max, Some(value), f64::max);
        }
    }

    /// Adds another summary's items (of a disjoint set).
    pub fn merge(&mut self, other: &Summary) {
        self.items += other.items;
        self.count += other.count;
        self.sum += other.sum;
        self.min = merge_option(self.min, other.min, f64::min);
        self.max = merge_option(self.max, other.max, f64::max);
        self.min_key = merge_option(self.min_key, other.min_key, i64::min);
        self.max_key = merge_option(self.max_key, other.max_key, i64::max);
    }

    /// The summary of `items`.
    pub fn of<'a>(items: impl IntoIterator<Item = &'a Item>) -> Summary {
        let mut summary = Summary::default();
        for item in items {
            summary.add(item);
        }
        summary
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64_le(self.items);
        out.put_u64_le(self.count);
        out.put_f64_le(self.sum);
        out.put_f64_le(self.min.unwrap_or(f64::INFINITY));
        out.put_f64_le(self.max.unwrap_or(f64::NEG_INFINITY));
        out.put_i64_le(self.min_key.unwrap_or(i64::MAX));
        out.put_i64_le(self.max_key.unwrap_or(i64::MIN));
    }

    pub(crate) fn decode(bytes: &mut impl Buf) -> Result<Summary, String> {
        if bytes.remaining() < SUMMARY_BYTES {
            return Err("summary truncated".to_string());
        }
        let items = bytes.get_u64_le();
        let count = bytes.get_u64_le();
        let sum = bytes.get_f64_le();
        let (min, max) = (bytes.get_f64_le(), bytes.get_f64_le());
        let (min_key, max_key) = (bytes.get_i64_le(), bytes.get_i64_le());
        // An empty set has exactly the stored form `encode` gives it, so that every summary
        // that decodes encodes back to the same bytes.
        let no_values = min == f64::INFINITY && max == f64::NEG_INFINITY && sum.to_bits() == 0;
        let no_keys = min_key == i64::MAX && max_key == i64::MIN;
        if count > items
            || (count == 0) != no_values
            || (count > 0 && min > max)
            || (items == 0) != no_keys
            || (items > 0 && min_key > max_key)
        {
            return Err("summary fields disagree".to_string());
        }
        Ok(Summary {
            items,
            count,
            sum,
            min: (count > 0).then_some(min),
            max: (count > 0).then_some(max),
            min_key: (items > 0).then_some(min_key),
            max_key: (items > 0).then_some(max_key),
        })
    }
}

const HAS_VALUE: u8 = 1;
/// Bytes an item adds to its payload when stored: key, seq, flags, payload length (and
/// 8 more when it has a value).
pub const ITEM_OVERHEAD_BYTES: usize = 8 + 8 + 1 + 4;

pub(crate) fn stored_len(item: &Item) -> usize {
    ITEM_OVERHEAD_BYTES + item.value.map_or(0, |_| 8) + item.payload.len()
}

pub(crate) fn encode_items(items: &[Stored], out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u32_le(items.len() as u32);
    for stored in items {
        let item = &stored.item;
        out.put_i64_le(item.key);
        out.put_u64_le(stored.seq);
        match item.value {
            Some(value) => {
                out.put_u8(HAS_VALUE);
                out.put_f64_le(value);
            }
            None => out.put_u8(0),
        }
        out.put_u32_le(item.payload.len() as u32);
        out.put_slice(&item.payload);
    }
    // Records and tails are sized (and checked against their limits) by `items_len`.
    assert_eq!(
        out.len() - start,
        items_len(items),
        "items encode to their length"
    );
}

pub(crate) fn items_len(items: &[Stored]) -> usize {
    4 + items.iter().map(|s| stored_len(&s.item)).sum::<usize>()
}

pub(crate) fn decode_items(bytes: &mut Bytes) -> Result<Vec<Stored>, String> {
    let mut items = Vec::new();
    let whole = bytes.clone();
    walk_items(bytes, |count, key, seq, value, payload| {
        if items.capacity() == 0 {
            items.reserve_exact(count);
        }
        items.push(Stored {
            item: Item {
                key,
                value,
                payload: whole.slice(payload),
            },
            seq,
        })
    })?;
    Ok(items)
}

/// The items of an encoded list as a reader sees them, in (key, push) order: built as
/// `Item`s straight away, and sorted only when the list is not in that order already (an
/// `Outlier`'s first N stay in push order, which is key order when keys grow with pushes).
pub(crate) fn decode_read_items(bytes: &mut Bytes) -> Result<Vec<Item>, String> {
    let whole = bytes.clone();
    let mut items = Vec::new();
    let mut last = None;
    let mut in_order = true;
    walk_items(bytes, |count, key, seq, value, payload| {
        if items.capacity() == 0 {
            items.reserve_exact(count);
        }
        in_order &= last.is_none_or(|last| last <= (key, seq));
        last = Some((key, seq));
        items.push(Item {
            key,
            value,
            payload: whole.slice(payload),
        })
    })?;
    if !in_order {
        let mut stored = decode_items(&mut whole.clone())?;
        stored.sort_by_key(Stored::order);
        items = items_of(stored);
    }
    Ok(items)
}

/// The items of `stored`, moved into a new vector of their own size. Collecting in place
/// would keep the stored items' larger buffer for as long as the document lives; measured on
/// the followers workload under Embed (100,000-item documents), that raised the process's
/// peak memory from 31 MB to 75-103 MB.
pub(crate) fn items_of(stored: Vec<Stored>) -> Vec<Item> {
    let mut items = Vec::with_capacity(stored.len());
    items.extend(stored.into_iter().map(|s| s.item));
    items
}

/// Checks an item list as [`decode_items`] does and moves past it without building the
/// items; returns how many it holds and their stored size.
pub(crate) fn skip_items(bytes: &mut Bytes) -> Result<(usize, usize), String> {
    let mut count = 0;
    let start = bytes.len();
    walk_items(bytes, |_, _, _, _, _| count += 1)?;
    Ok((count, start - bytes.len() - 4))
}

/// The item count of an encoded item list, checked against the bytes the list has, without
/// reading its items.
pub(crate) fn list_count(list: &[u8]) -> Result<usize, String> {
    let items = match list.first_chunk::<4>() {
        Some(items) => u32::from_le_bytes(*items) as usize,
        None => return Err("item list truncated".to_string()),
    };
    if items > (list.len() - 4) / ITEM_OVERHEAD_BYTES {
        return Err(format!("item count {items} larger than the bytes can hold"));
    }
    Ok(items)
}

/// Pushes the end offsets of an encoded item list's parts (its count, then each item),
/// plus `base`, and advances `bytes` past the list; for diffs of values made of items.
pub(crate) fn part_ends(
    bytes: &mut Bytes,
    base: usize,
    ends: &mut Vec<usize>,
) -> Result<(), String> {
    ends.push(base + 4);
    walk_items(bytes, |_, _, _, _, payload| ends.push(base + payload.end))
}

/// Reads an item list (checking every length and flag), calling `each` with the list's item
/// count and the key, seq, value and payload range (in `bytes` as given) of every item, then
/// advances `bytes` past it.
fn walk_items(
    bytes: &mut Bytes,
    mut each: impl FnMut(usize, i64, u64, Option<f64>, std::ops::Range<usize>),
) -> Result<(), String> {
    // Read through a plain slice and an offset.
    let data: &[u8] = bytes;
    let truncated = || "item truncated".to_string();
    let items = list_count(data)?;
    let mut at = 4;
    for _ in 0..items {
        let fixed: &[u8; 17] = data[at..]
            .first_chunk()
            .filter(|_| data.len() - at >= ITEM_OVERHEAD_BYTES)
            .ok_or_else(truncated)?;
        let key = i64::from_le_bytes(fixed[..8].try_into().expect("8 bytes"));
        let seq = u64::from_le_bytes(fixed[8..16].try_into().expect("8 bytes"));
        at += 17;
        let value = match fixed[16] {
            0 => None,
            HAS_VALUE => {
                let value = data[at..].first_chunk::<8>().ok_or_else(truncated)?;
                let value = f64::from_le_bytes(*value);
                if value.is_nan() {
                    return Err("item value is NaN".to_string());
                }
                at += 8;
                Some(value)
            }
            flags => return Err(format!("unknown item flags {flags}")),
        };
        let len = data[at..].first_chunk::<4>().ok_or_else(truncated)?;
        let len = u32::from_le_bytes(*len) as usize;
        at += 4;
        if len > MAX_RECORD_BYTES || data.len() - at < len {
            return Err(format!("item payload of {len} bytes past the end"));
        }
        each(items, key, seq, value, at..at + len);
        at += len;
    }
    bytes.advance(at);
    Ok(())
}

/// A new item as the API receives it; the key is assigned at commit when not given.
#[derive(Clone, Debug, PartialEq)]
pub struct NewItem {
    pub(crate) key: Option<i64>,
    pub(crate) value: Option<f64>,
    pub(crate) payload: Bytes,
}

impl NewItem {
    /// An item carrying `payload`, with the next key of its array and no value.
    pub fn new(payload: impl AsRef<[u8]>) -> Self {
        NewItem {
            key: None,
            value: None,
            payload: Bytes::copy_from_slice(payload.as_ref()),
        }
    }

    /// Sets the item's key (a time, a sequence, any order).
    pub fn key(mut self, key: i64) -> Self {
        self.key = Some(key);
        self
    }

    /// Sets the value that summaries aggregate.
    pub fn value(mut self, value: f64) -> Self {
        self.value = Some(value);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(key: i64, value: Option<f64>, payload: &'static [u8], seq: u64) -> Stored {
        Stored {
            item: Item {
                key,
                value,
                payload: Bytes::from_static(payload),
            },
            seq,
        }
    }

    #[test]
    fn a_reader_gets_the_items_in_key_then_push_order() {
        let read = |items: &[Stored]| {
            let mut bytes = Vec::new();
            encode_items(items, &mut bytes);
            let mut reader = Bytes::from(bytes);
            let read = decode_read_items(&mut reader).unwrap();
            assert!(!reader.has_remaining());
            read.into_iter()
                .map(|item| item.payload)
                .collect::<Vec<_>>()
        };
        // In order already (every layout but Outlier keeps them so).
        let sorted = [
            stored(1, None, b"a", 0),
            stored(1, None, b"b", 1),
            stored(2, None, b"c", 2),
        ];
        assert_eq!(read(&sorted), [&b"a"[..], b"b", b"c"]);
        // In push order with keys out of order (an Outlier's first N): sorted by key, and
        // equal keys by push order whatever their place in the list.
        let pushed = [
            stored(9, None, b"late", 0),
            stored(3, None, b"second", 5),
            stored(3, None, b"first", 4),
            stored(5, Some(1.0), b"mid", 2),
        ];
        assert_eq!(read(&pushed), [&b"first"[..], b"second", b"mid", b"late"]);
        assert_eq!(read(&[]), Vec::<Bytes>::new());
        let mut truncated = Vec::new();
        encode_items(&pushed, &mut truncated);
        truncated.pop();
        assert!(decode_read_items(&mut Bytes::from(truncated)).is_err());
    }

    #[test]
    fn items_and_summaries_round_trip() {
        let items = vec![
            stored(-5, Some(2.5), b"a", 0),
            stored(7, None, b"", 1),
            stored(7, Some(-1.0), b"xyz", 2),
        ];
        let mut bytes = Vec::new();
        encode_items(&items, &mut bytes);
        assert_eq!(bytes.len(), items_len(&items));
        let mut reader = Bytes::from(bytes.clone());
        assert_eq!(decode_items(&mut reader).unwrap(), items);
        assert!(!reader.has_remaining());
        for len in 0..bytes.len() {
            assert!(decode_items(&mut Bytes::copy_from_slice(&bytes[..len])).is_err());
        }
        let summary = Summary::of(items.iter().map(|s| &s.item));
        assert_eq!((summary.items, summary.count, summary.sum), (3, 2, 1.5));
        assert_eq!((summary.min, summary.max), (Some(-1.0), Some(2.5)));
        assert_eq!((summary.min_key, summary.max_key), (Some(-5), Some(7)));
        for summary in [summary, Summary::default()] {
            let mut out = Vec::new();
            summary.encode(&mut out);
            assert_eq!(out.len(), SUMMARY_BYTES);
            assert_eq!(Summary::decode(&mut Bytes::from(out)).unwrap(), summary);
        }
        // An empty set has one stored form: any other value in its unused fields is refused,
        // so that what decodes encodes back to the same bytes.
        let mut empty = Vec::new();
        Summary::default().encode(&mut empty);
        for (at, byte) in [(16, 1), (24, 0x3f), (32, 0x3f), (40, 0), (48, 1)] {
            let mut other = empty.clone();
            other[at] = byte;
            assert_ne!(other, empty);
            assert!(
                Summary::decode(&mut Bytes::from(other)).is_err(),
                "byte {at}"
            );
        }
    }

    #[test]
    fn merge_equals_summary_of_union() {
        let a = [Item {
            key: 1,
            value: Some(1.0),
            payload: Bytes::new(),
        }];
        let b = [
            Item {
                key: 9,
                value: None,
                payload: Bytes::new(),
            },
            Item {
                key: 3,
                value: Some(5.0),
                payload: Bytes::new(),
            },
        ];
        let mut merged = Summary::of(&a);
        merged.merge(&Summary::of(&b));
        assert_eq!(merged, Summary::of(a.iter().chain(&b)));
    }
}
