//! Items of array fields, their summaries, and the bytes of an item list: the one place
//! that encodes and decodes them (parent records, tail records and cold chunks all hold
//! item lists). See `format-spec/arrays.md`.

use bytes::{Buf, BufMut, Bytes};

use crate::limits::MAX_RECORD_BYTES;
use crate::limits::widths::u32_len;

/// Iteration order of `items`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    #[default]
    /// Smallest key first (ties in push order).
    Ascending,
    /// Greatest key first (ties in reverse push order).
    Descending,
}

/// The most named measures one array field declares.
pub const MAX_MEASURES: usize = 8;

/// One item of an array field.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Orders the array: a time, a sequence, any order.
    pub key: i64,
    /// The item's value of its array's first measure (a rating, a temperature), if it has
    /// one: the only measure of an array that declares none. Others: [`Item::measure`].
    pub value: Option<f64>,
    /// The user's bytes.
    pub payload: Bytes,
    /// Values of the measures after the first, in the array's order: `None` when the item
    /// has none of them (boxed, so that an item without them is no larger than one).
    pub(crate) more: More,
}

/// The values of an item's measures after the first, when it has any.
pub(crate) type More = Option<Box<[Option<f64>; MAX_MEASURES - 1]>>;

impl Item {
    /// An item as a read would return it: `values[i]` is its value of measure `i`, if any
    /// (for summaries and models built outside the engine: see [`Summary::add`]).
    ///
    /// # Panics
    /// When `values` has more than [`MAX_MEASURES`] entries.
    pub fn new(key: i64, values: &[Option<f64>], payload: impl Into<Bytes>) -> Item {
        assert!(values.len() <= MAX_MEASURES, "more values than measures");
        Item {
            key,
            value: values.first().copied().flatten(),
            payload: payload.into(),
            more: values.get(1..).and_then(more_values),
        }
    }

    /// The item's value of measure `index` (in the array's declared order; 0 is
    /// [`Item::value`]), if it has one. [`crate::ArraySpec::measure_index`] finds a
    /// measure's index by its name.
    pub fn measure(&self, index: usize) -> Option<f64> {
        match index {
            0 => self.value,
            _ => self.more.as_deref()?.get(index - 1).copied().flatten(),
        }
    }
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

/// Count, sum, min and max of one measure's values over a set of items.
///
/// Values may be infinite, and large ones overflow the sum: `sum` is then infinite, or NaN
/// once infinities of both signs meet. Equal when every field is, the sums compared bit for
/// bit, so a summary with a NaN sum equals itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct MeasureSummary {
    /// Items that carry a value of this measure; `sum`, `min` and `max` are over these.
    pub count: u64,
    /// Sum of the values.
    pub sum: f64,
    /// Smallest value.
    pub min: Option<f64>,
    /// Greatest value.
    pub max: Option<f64>,
}

impl PartialEq for MeasureSummary {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count
            && self.sum.to_bits() == other.sum.to_bits()
            && self.min == other.min
            && self.max == other.max
    }
}

/// Bytes of an encoded measure summary: count, sum, min, max.
pub const MEASURE_SUMMARY_BYTES: usize = 8 * 4;

impl MeasureSummary {
    /// The average value, if any item has one.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    fn add(&mut self, value: f64) {
        self.count += 1;
        self.sum += value;
        self.min = merge_option(self.min, Some(value), f64::min);
        self.max = merge_option(self.max, Some(value), f64::max);
    }

    fn merge(&mut self, other: &MeasureSummary) {
        self.count += other.count;
        self.sum += other.sum;
        self.min = merge_option(self.min, other.min, f64::min);
        self.max = merge_option(self.max, other.max, f64::max);
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64_le(self.count);
        out.put_f64_le(self.sum);
        out.put_f64_le(self.min.unwrap_or(f64::INFINITY));
        out.put_f64_le(self.max.unwrap_or(f64::NEG_INFINITY));
    }

    /// Decodes one measure's summary of a set of `items` items. The bytes are checked:
    /// `count <= items`, `min <= max`, and a measure without values has exactly the stored
    /// form `encode` gives it, so that what decodes encodes back to the same bytes.
    #[inline]
    fn decode(bytes: &mut impl Buf, items: u64) -> Result<MeasureSummary, String> {
        if bytes.remaining() < MEASURE_SUMMARY_BYTES {
            return Err("summary truncated".to_string());
        }
        let count = bytes.get_u64_le();
        let sum = bytes.get_f64_le();
        let (min, max) = (bytes.get_f64_le(), bytes.get_f64_le());
        let no_values = min == f64::INFINITY && max == f64::NEG_INFINITY && sum.to_bits() == 0;
        if count > items || (count == 0) != no_values || (count > 0 && min > max) {
            return Err("summary fields disagree".to_string());
        }
        Ok(MeasureSummary {
            count,
            sum,
            min: (count > 0).then_some(min),
            max: (count > 0).then_some(max),
        })
    }
}

/// The item count and key bounds of a set of items, and count, sum, min and max of each
/// of its measures' values: the first measure's in `count`, `sum`, `min` and `max` (an
/// array that declares no measures has just that one), every one's through
/// [`Summary::measure`].
///
/// Values may be infinite, and large ones overflow the sum: `sum` is then infinite, or NaN
/// once infinities of both signs meet. Summaries are equal when every field is, the sums
/// compared bit for bit, so a summary with a NaN sum equals itself (a chunk's stored
/// summary is checked against its items' this way).
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Items in the set, with or without values.
    pub items: u64,
    /// Items that carry a value of the first measure; `sum`, `min` and `max` are over these.
    pub count: u64,
    /// Sum of the first measure's values.
    pub sum: f64,
    /// Smallest value of the first measure.
    pub min: Option<f64>,
    /// Greatest value of the first measure.
    pub max: Option<f64>,
    /// Smallest key.
    pub min_key: Option<i64>,
    /// Greatest key.
    pub max_key: Option<i64>,
    /// Of `items`, how many a read counted from rollups (what a bucket expiry kept of the
    /// items it dropped, per window: `CollectionSpec::rollup`) rather than from items held:
    /// 0 when the summary comes from items alone. Never stored: a read sets it.
    pub rolled_up: u64,
    /// Summaries of the measures after the first, in the array's order, once any item of
    /// the set has a value of one (boxed, so that a summary of one measure stays small).
    pub(crate) more: MoreSummaries,
}

/// The summaries of the measures after the first, when a set has values of any.
pub(crate) type MoreSummaries = Option<Box<[MeasureSummary; MAX_MEASURES - 1]>>;

impl PartialEq for Summary {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
            && self.rolled_up == other.rolled_up
            && self.first() == other.first()
            && self.min_key == other.min_key
            && self.max_key == other.max_key
            && (self.more.is_none() && other.more.is_none()
                || (1..MAX_MEASURES).all(|at| self.measure(at) == other.measure(at)))
    }
}

/// Bytes of an encoded summary of an array with one measure; each further measure whose
/// summary is stored adds [`MEASURE_SUMMARY_BYTES`].
pub const SUMMARY_BYTES: usize = 8 * 7;

#[inline]
fn merge_option<T: Copy>(a: Option<T>, b: Option<T>, pick: fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(pick(a, b)),
        (a, b) => a.or(b),
    }
}

impl Summary {
    /// The average value of the first measure, if any item has one.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// The summary of measure `index`'s values (in the array's declared order; 0 is the
    /// first, also in `count`, `sum`, `min` and `max`). A measure no item has a value of,
    /// or an index past the array's measures, has an empty summary.
    /// [`crate::ArraySpec::measure_index`] finds a measure's index by its name.
    pub fn measure(&self, index: usize) -> MeasureSummary {
        match index {
            0 => self.first(),
            _ => self
                .more
                .as_ref()
                .and_then(|more| more.get(index - 1))
                .copied()
                .unwrap_or_default(),
        }
    }

    /// How many measures this summary may have values of: 1, or all when it holds others.
    pub(crate) fn measures_held(&self) -> usize {
        if self.more.is_some() { MAX_MEASURES } else { 1 }
    }

    fn first(&self) -> MeasureSummary {
        MeasureSummary {
            count: self.count,
            sum: self.sum,
            min: self.min,
            max: self.max,
        }
    }

    fn more_mut(&mut self) -> &mut [MeasureSummary; MAX_MEASURES - 1] {
        self.more
            .get_or_insert_with(|| Box::new([MeasureSummary::default(); MAX_MEASURES - 1]))
    }

    /// Adds one item.
    #[inline]
    pub fn add(&mut self, item: &Item) {
        self.add_key(item.key);
        if let Some(value) = item.value {
            self.add_value(0, value);
        }
        if let Some(more) = &item.more {
            self.add_more(more);
        }
    }

    /// Adds an item by its key and its values (`value(m)` of measure `m`), wherever it is
    /// held.
    pub(crate) fn add_values(&mut self, key: i64, value: impl Fn(usize) -> Option<f64>) {
        self.add_key(key);
        for m in 0..MAX_MEASURES {
            if let Some(value) = value(m) {
                self.add_value(m, value);
            }
        }
    }

    /// Adds items by their keys (their values are added a measure at a time:
    /// [`Summary::add_measure`]).
    pub(crate) fn add_keys(&mut self, keys: &[i64]) {
        for &key in keys {
            self.add_key(key);
        }
    }

    /// Adds the values of measure `m` of items added by their keys, in their order (as item
    /// by item, so the sum is the same to the bit); NaN stands for an item without one.
    pub(crate) fn add_measure(&mut self, m: usize, values: &[f64]) {
        for &value in values.iter().filter(|value| !value.is_nan()) {
            self.add_value(m, value);
        }
    }

    /// Counts one item and takes its key into the bounds.
    #[inline]
    fn add_key(&mut self, key: i64) {
        self.items += 1;
        self.min_key = merge_option(self.min_key, Some(key), i64::min);
        self.max_key = merge_option(self.max_key, Some(key), i64::max);
    }

    /// Adds one value of measure `m` (0 the first).
    #[inline]
    fn add_value(&mut self, m: usize, value: f64) {
        if m == 0 {
            self.count += 1;
            self.sum += value;
            self.min = merge_option(self.min, Some(value), f64::min);
            self.max = merge_option(self.max, Some(value), f64::max);
        } else {
            self.more_mut()[m - 1].add(value);
        }
    }

    #[inline(never)]
    fn add_more(&mut self, more: &[Option<f64>; MAX_MEASURES - 1]) {
        for (summary, value) in self.more_mut().iter_mut().zip(more.iter()) {
            if let Some(value) = value {
                summary.add(*value);
            }
        }
    }

    /// Adds another summary's items (of a disjoint set).
    #[inline]
    pub fn merge(&mut self, other: &Summary) {
        self.items += other.items;
        self.rolled_up += other.rolled_up;
        self.count += other.count;
        self.sum += other.sum;
        self.min = merge_option(self.min, other.min, f64::min);
        self.max = merge_option(self.max, other.max, f64::max);
        self.min_key = merge_option(self.min_key, other.min_key, i64::min);
        self.max_key = merge_option(self.max_key, other.max_key, i64::max);
        if let Some(others) = &other.more {
            self.merge_more(others);
        }
    }

    #[inline(never)]
    fn merge_more(&mut self, others: &[MeasureSummary; MAX_MEASURES - 1]) {
        for (summary, other) in self.more_mut().iter_mut().zip(others.iter()) {
            summary.merge(other);
        }
    }

    /// How many measure summaries past the first the stored form holds: up to the last one
    /// with a value (what the flags byte before a stored summary records).
    pub(crate) fn stored_more(&self) -> usize {
        self.more.as_ref().map_or(0, |more| {
            more.iter()
                .rposition(|m| !m.is_empty())
                .map_or(0, |at| at + 1)
        })
    }

    /// Bytes of the stored form.
    pub(crate) fn encoded_len(&self) -> usize {
        SUMMARY_BYTES + self.stored_more() * MEASURE_SUMMARY_BYTES
    }

    #[inline(never)]
    fn decode_more(
        bytes: &mut impl Buf,
        items: u64,
        more: usize,
    ) -> Result<Box<[MeasureSummary; MAX_MEASURES - 1]>, String> {
        let mut summaries = Box::new([MeasureSummary::default(); MAX_MEASURES - 1]);
        for summary in &mut summaries[..more] {
            *summary = MeasureSummary::decode(bytes, items)?;
        }
        if summaries[more - 1].is_empty() {
            return Err("summary stores a last measure without values".to_string());
        }
        Ok(summaries)
    }

    /// The summary of `items`.
    pub fn of<'a>(items: impl IntoIterator<Item = &'a Item>) -> Summary {
        let mut summary = Summary::default();
        for item in items {
            summary.add(item);
        }
        summary
    }

    /// Writes the stored form: items, the first measure's count, sum, min and max, the key
    /// bounds, then the [`Summary::stored_more`] further measures' summaries.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64_le(self.items);
        self.first().encode(out);
        out.put_i64_le(self.min_key.unwrap_or(i64::MAX));
        out.put_i64_le(self.max_key.unwrap_or(i64::MIN));
        if let Some(more) = &self.more {
            for summary in &more[..self.stored_more()] {
                summary.encode(out);
            }
        }
    }

    /// Reads a stored summary holding `more` measure summaries past the first (as the flags
    /// byte before it says). Every field is checked, and the last further measure must have
    /// values, so that every summary that decodes encodes back to the same bytes.
    // Always inlined: a chunk index entry's decode is mostly this, on every ranged summary's
    // path; called, it took twice the instructions (callgrind, BENCHMARKS.md).
    #[inline(always)]
    pub(crate) fn decode(bytes: &mut impl Buf, more: usize) -> Result<Summary, String> {
        if more >= MAX_MEASURES {
            return Err(format!("summary of {} measures", more + 1));
        }
        if bytes.remaining() < SUMMARY_BYTES + more * MEASURE_SUMMARY_BYTES {
            return Err("summary truncated".to_string());
        }
        let items = bytes.get_u64_le();
        let count = bytes.get_u64_le();
        let sum = bytes.get_f64_le();
        let (min, max) = (bytes.get_f64_le(), bytes.get_f64_le());
        let (min_key, max_key) = (bytes.get_i64_le(), bytes.get_i64_le());
        // An empty set has exactly the stored form `encode` gives it (and a measure without
        // values, as `MeasureSummary::decode` checks).
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
        let more = match more {
            0 => None,
            more => Some(Self::decode_more(bytes, items, more)?),
        };
        Ok(Summary {
            items,
            count,
            sum,
            min: (count > 0).then_some(min),
            max: (count > 0).then_some(max),
            min_key: (items > 0).then_some(min_key),
            max_key: (items > 0).then_some(max_key),
            rolled_up: 0,
            more,
        })
    }
}

const HAS_VALUE: u8 = 1;
/// The item has values of measures after the first: a presence mask and those values follow.
const HAS_MORE: u8 = 2;
/// Bytes an item adds to its payload when stored: key, seq, flags, payload length (and
/// 8 more when it has a value, and a mask byte and 8 per value of the further measures).
pub const ITEM_OVERHEAD_BYTES: usize = 8 + 8 + 1 + 4;

pub(crate) fn stored_len(item: &Item) -> usize {
    let more = item.more.as_deref().map_or(0, |more| {
        1 + 8 * more.iter().filter(|v| v.is_some()).count()
    });
    ITEM_OVERHEAD_BYTES + item.value.map_or(0, |_| 8) + more + item.payload.len()
}

/// The in-memory form of the further measures' values `values` (the first left out, at
/// most `MAX_MEASURES - 1`): `None` when none has a value.
pub(crate) fn more_values(values: &[Option<f64>]) -> More {
    values.iter().any(Option::is_some).then(|| {
        let mut more = Box::new([None; MAX_MEASURES - 1]);
        more[..values.len()].copy_from_slice(values);
        more
    })
}

pub(crate) fn encode_items(items: &[Stored], out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u32_le(u32_len(items.len()));
    for stored in items {
        let item = &stored.item;
        out.put_i64_le(item.key);
        out.put_u64_le(stored.seq);
        // Most items have at most the first measure's value: the bytes of before measures.
        let mask = item.more.as_deref().map_or(0, |more| {
            more.iter()
                .enumerate()
                .filter(|(_, v)| v.is_some())
                .fold(0u8, |mask, (at, _)| mask | 1 << at)
        });
        let flags = if item.value.is_some() { HAS_VALUE } else { 0 };
        out.put_u8(flags | if mask == 0 { 0 } else { HAS_MORE });
        if let Some(value) = item.value {
            out.put_f64_le(value);
        }
        if let Some(more) = item.more.as_deref().filter(|_| mask != 0) {
            out.put_u8(mask);
            for value in more.iter().flatten() {
                out.put_f64_le(*value);
            }
        }
        out.put_u32_le(u32_len(item.payload.len()));
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
    walk_items(bytes, |count, walked| {
        if items.capacity() == 0 {
            items.reserve_exact(count);
        }
        items.push(walked.stored(&whole))
    })?;
    Ok(items)
}

/// Appends to `out` the items of an encoded list that `wanted` picks, in the list's order,
/// built as `Stored` straight into it (the others are checked as [`decode_items`] checks
/// them, but never built).
pub(crate) fn decode_picked_items(
    bytes: &mut Bytes,
    wanted: impl Fn(i64, u64) -> bool,
    out: &mut Vec<Stored>,
) -> Result<(), String> {
    let whole = bytes.clone();
    let mut first = true;
    walk_items(bytes, |count, walked| {
        if std::mem::take(&mut first) {
            out.reserve(count);
        }
        if wanted(walked.key, walked.seq) {
            out.push(walked.stored(&whole));
        }
    })
}

/// Appends to `out` the first `limit` items of an encoded list in `order` among those
/// `wanted` picks, built as `Stored` (the others are checked as [`decode_items`] checks
/// them, but never built): a page of a long tail costs a walk of its bytes and `limit`
/// items.
pub(crate) fn decode_first_items(
    bytes: &mut Bytes,
    wanted: impl Fn(i64, u64) -> bool,
    order: Order,
    limit: usize,
    out: &mut Vec<Stored>,
) -> Result<(), String> {
    let whole = bytes.clone();
    PICKED.with_borrow_mut(|picked| {
        picked.clear();
        let mut in_order = true;
        let walked = walk_items(bytes, |count, walked| {
            if picked.capacity() < count.min(PICKED_KEPT) {
                picked.reserve(count.min(PICKED_KEPT));
            }
            if wanted(walked.key, walked.seq) {
                in_order &= picked
                    .last()
                    .is_none_or(|last: &Walked| last.order() <= walked.order());
                picked.push(walked);
            }
        });
        if walked.is_ok() {
            if !in_order {
                picked.sort_unstable_by_key(Walked::order);
            }
            let built = |walked: &Walked| walked.stored(&whole);
            match order {
                Order::Ascending => out.extend(picked.iter().take(limit).map(built)),
                Order::Descending => out.extend(picked.iter().rev().take(limit).map(built)),
            }
        }
        // Whether the walk ended or failed, a long list's room goes back.
        if picked.capacity() > PICKED_KEPT {
            *picked = Vec::new();
        }
        walked
    })
}

/// The most walk records [`decode_first_items`] keeps room for between calls: a page of a
/// long list (an `Embed` array's) frees what it needed beyond.
const PICKED_KEPT: usize = 4096;

thread_local! {
    /// The walk records of [`decode_first_items`], kept between calls: a page reads two
    /// lists (the parent's inline items and its tail), each walked into this.
    static PICKED: std::cell::RefCell<Vec<Walked>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The items of an encoded list as a reader sees them, in (key, push) order: built as
/// `Item`s straight away, and sorted only when the list is not in that order already (an
/// `Outlier`'s first N stay in push order, which is key order when keys grow with pushes).
pub(crate) fn decode_read_items(bytes: &mut Bytes) -> Result<Vec<Item>, String> {
    let whole = bytes.clone();
    let mut items = Vec::new();
    let mut last = None;
    let mut in_order = true;
    walk_items(bytes, |count, walked| {
        if items.capacity() == 0 {
            items.reserve_exact(count);
        }
        let order = (walked.key, walked.seq);
        in_order &= last.is_none_or(|last| last <= order);
        last = Some(order);
        items.push(walked.stored(&whole).item)
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
    walk_items(bytes, |_, _| count += 1)?;
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
    walk_items(bytes, |_, walked| ends.push(base + walked.payload.end))
}

/// One item as [`walk_items`] reads it: its fixed fields, and where the rest is in the
/// list's bytes (a borrowed read lends them from there: [`crate::ItemRef`]).
pub(crate) struct Walked {
    key: i64,
    seq: u64,
    value: Option<f64>,
    /// Where the further measures' stored form (mask, then values), checked, is in the
    /// list's bytes.
    more: Option<std::ops::Range<usize>>,
    /// Where the payload is in the list's bytes.
    payload: std::ops::Range<usize>,
}

impl Walked {
    pub(crate) fn order(&self) -> (i64, u64) {
        (self.key, self.seq)
    }

    pub(crate) fn key(&self) -> i64 {
        self.key
    }

    pub(crate) fn value(&self) -> Option<f64> {
        self.value
    }

    /// The item's value of measure `index`, `list` the list it was walked in.
    pub(crate) fn measure(&self, list: &[u8], index: usize) -> Option<f64> {
        match index {
            0 => self.value,
            index => more_measure(&list[self.more.clone()?], index - 1),
        }
    }

    /// The item's payload, `list` the list it was walked in.
    pub(crate) fn payload<'l>(&self, list: &'l [u8]) -> &'l [u8] {
        &list[self.payload.clone()]
    }

    /// The item, its payload a slice of `whole`, the list it was walked in.
    pub(crate) fn stored(&self, whole: &Bytes) -> Stored {
        Stored {
            item: Item {
                key: self.key,
                value: self.value,
                payload: whole.slice(self.payload.clone()),
                more: self.more.clone().map(|more| read_more(&whole[more])),
            },
            seq: self.seq,
        }
    }
}

/// Value `at` of the further measures' checked stored form `stored` (a mask, then the values
/// of the bits it sets, in bit order).
fn more_measure(stored: &[u8], at: usize) -> Option<f64> {
    let mask = stored[0];
    if at >= MAX_MEASURES - 1 || mask & 1 << at == 0 {
        return None;
    }
    let before = (mask & ((1u8 << at) - 1)).count_ones() as usize;
    let value = stored[1 + 8 * before..].first_chunk::<8>()?;
    Some(f64::from_le_bytes(*value))
}

/// The values of a checked stored form of further measures (mask, then values).
fn read_more(stored: &[u8]) -> Box<[Option<f64>; MAX_MEASURES - 1]> {
    let mask = stored[0];
    let mut values = stored[1..].chunks_exact(8);
    let mut more = Box::new([None; MAX_MEASURES - 1]);
    for (at, slot) in more.iter_mut().enumerate() {
        if mask & 1 << at != 0 {
            let value = values.next().expect("checked").try_into().expect("8 bytes");
            *slot = Some(f64::from_le_bytes(value));
        }
    }
    more
}

/// Reads an item list (checking every length, flag and value), calling `each` with the
/// list's item count and every item, then advances `bytes` past it.
pub(crate) fn walk_items(
    bytes: &mut Bytes,
    mut each: impl FnMut(usize, Walked),
) -> Result<(), String> {
    // Read through a plain slice and an offset.
    let data: &[u8] = bytes;
    let truncated = || "item truncated".to_string();
    let value_at = |at: usize| -> Result<f64, String> {
        let value = data[at..].first_chunk::<8>().ok_or_else(truncated)?;
        let value = f64::from_le_bytes(*value);
        if value.is_nan() {
            return Err("item value is NaN".to_string());
        }
        Ok(value)
    };
    let items = list_count(data)?;
    let mut at = 4;
    for _ in 0..items {
        let fixed: &[u8; 17] = data[at..]
            .first_chunk()
            .filter(|_| data.len() - at >= ITEM_OVERHEAD_BYTES)
            .ok_or_else(truncated)?;
        let key = i64::from_le_bytes(fixed[..8].try_into().expect("8 bytes"));
        let seq = u64::from_le_bytes(fixed[8..16].try_into().expect("8 bytes"));
        let flags = fixed[16];
        at += 17;
        if flags & !(HAS_VALUE | HAS_MORE) != 0 {
            return Err(format!("unknown item flags {flags}"));
        }
        let value = if flags & HAS_VALUE != 0 {
            at += 8;
            Some(value_at(at - 8)?)
        } else {
            None
        };
        let more = if flags & HAS_MORE == 0 {
            None
        } else {
            let mask = *data.get(at).ok_or_else(truncated)?;
            // Bit i: measure i + 1 has a value; at most the seven measures after the first,
            // and at least one (an item without any has no HAS_MORE flag).
            if mask == 0 || mask & 0x80 != 0 {
                return Err(format!("item measure mask {mask:#04x}"));
            }
            let len = 1 + 8 * mask.count_ones() as usize;
            for value in 0..mask.count_ones() as usize {
                value_at(at + 1 + 8 * value)?;
            }
            at += len;
            Some(at - len..at)
        };
        let len = data[at..].first_chunk::<4>().ok_or_else(truncated)?;
        let len = u32::from_le_bytes(*len) as usize;
        at += 4;
        if len > MAX_RECORD_BYTES || data.len() - at < len {
            return Err(format!("item payload of {len} bytes past the end"));
        }
        each(
            items,
            Walked {
                key,
                seq,
                value,
                more,
                payload: at..at + len,
            },
        );
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
    /// Values set by measure name, in the order set: resolved against the array's measures
    /// at commit (see [`NewItem::resolve`]).
    pub(crate) named: Vec<(String, f64)>,
    /// The further measures' values once resolved.
    pub(crate) more: More,
}

impl NewItem {
    /// An item carrying `payload`, with the next key of its array and no value.
    pub fn new(payload: impl AsRef<[u8]>) -> Self {
        NewItem {
            key: None,
            value: None,
            payload: Bytes::copy_from_slice(payload.as_ref()),
            named: Vec::new(),
            more: None,
        }
    }

    /// Sets the item's key (a time, a sequence, any order). Without one, a push takes the
    /// array's greatest key plus one (0 in an empty array), and is refused
    /// (`Error::InvalidItem`) after an item keyed `i64::MAX`.
    pub fn key(mut self, key: i64) -> Self {
        self.key = Some(key);
        self
    }

    /// Sets the value of the array's first measure (its only one when it declares none):
    /// what `Summary::count`, `sum`, `min` and `max` aggregate.
    pub fn value(mut self, value: f64) -> Self {
        self.value = Some(value);
        self
    }

    /// Sets the value of the measure named `name` (one the array's spec declares, see
    /// [`crate::ArraySpec::measures`]); a later value for the same measure replaces an
    /// earlier one. A name the array lacks fails the batch at commit with
    /// `Error::UnknownMeasure`.
    pub fn measure(mut self, name: impl Into<String>, value: f64) -> Self {
        self.named.push((name.into(), value));
        self
    }

    /// Places the values set by name by their index in `measures` (an array's declared
    /// measures): into `value` and `more`. `Err` names a measure `measures` lacks.
    pub(crate) fn resolve(&mut self, measures: &[String]) -> Result<(), String> {
        if self.named.is_empty() {
            return Ok(());
        }
        let mut values = [None; MAX_MEASURES];
        values[0] = self.value;
        for (name, value) in std::mem::take(&mut self.named) {
            let index = measures.iter().position(|m| *m == name).ok_or(name)?;
            values[index] = Some(value);
        }
        self.value = values[0];
        self.more = more_values(&values[1..measures.len().max(1)]);
        Ok(())
    }

    /// Whether any of the item's values is NaN.
    pub(crate) fn has_nan(&self) -> bool {
        self.value.is_some_and(f64::is_nan) || self.named.iter().any(|(_, v)| v.is_nan())
    }
}

mod cursor;
#[cfg(test)]
mod tests;

pub use cursor::Cursor;
