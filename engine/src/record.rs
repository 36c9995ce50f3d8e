//! The parent record: what the tree holds for one parent document, its body and one array
//! state per array field of the schema. The one place that encodes and decodes it; see
//! `format-spec/records.md`.

use bytes::{Buf, BufMut, Bytes};

use crate::item::{self, Item, SUMMARY_BYTES, Stored, Summary};
use crate::limits::MAX_RECORD_BYTES;
use crate::limits::widths::{index, u8_len, u16_len, u32_len};

/// The version records of a collection whose arrays hold the slots 0, 1, 2, ... (every
/// collection whose arrays were never dropped) are written in: the array states in slot
/// order, each array's inline item list preceded by its length in bytes, so that a read can
/// step over an array it does not want, and its flags byte says how many further measures'
/// summaries its summary stores.
pub(crate) const RECORD_VERSION: u8 = 3;
/// The version records of other collections are written in: each array state begins with
/// its slot.
pub(crate) const RECORD_VERSION_SLOTTED: u8 = 4;
/// Records written before summaries had further measures: still read, never written.
const RECORD_VERSION_SIZED: u8 = 2;
/// Records written before item lists had a length: still read, never written.
const RECORD_VERSION_UNSIZED: u8 = 1;
/// Bytes a parent record adds to its body when its collection has no array fields:
/// version, body length, array count.
pub const RECORD_OVERHEAD_BYTES: usize = 1 + 4 + 2;
/// Bytes each array adds before its inline items: total, flags, next seq, next chunk,
/// bucket start, summary, the inline items' length in bytes, inline item count; its summary
/// of each further measure with values adds `MEASURE_SUMMARY_BYTES`.
pub const ARRAY_HEADER_BYTES: usize = 8 + 1 + 8 + 4 + 8 + SUMMARY_BYTES + 4 + 4;

/// The slots `Shape::identity` hands out: an array's slot is its index (as many as a
/// collection may declare, and more).
#[cfg(any(test, feature = "testing"))]
const IDENTITY_SLOTS: [u16; 256] = {
    let mut slots = [0; 256];
    let mut at: u16 = 0;
    while (at as usize) < slots.len() {
        slots[at as usize] = at;
        at += 1;
    }
    slots
};

/// Where the array states of a collection's records go: the slot of each of its array
/// fields, in field order (increasing: a field added later gets a new slot, past every
/// other), and the first slot never given out. A record holds a state per slot it was
/// written with; a state whose slot is no field's any more (a dropped array's) is stepped
/// over, and a field whose slot the record lacks (an array added after it was written) reads
/// as empty. See `format-spec/records.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape<'a> {
    pub slots: &'a [u16],
    pub next_slot: u16,
}

#[cfg(any(test, feature = "testing"))]
impl Shape<'static> {
    /// The shape of a collection of `arrays` array fields never changed: slots 0 to
    /// `arrays - 1`.
    pub fn identity(arrays: usize) -> Self {
        Shape {
            slots: &IDENTITY_SLOTS[..arrays],
            next_slot: u16_len(arrays),
        }
    }
}

impl Shape<'_> {
    /// Whether every field's slot is its index: records are then written positionally
    /// (version 3), as before arrays could be dropped.
    fn positional(&self) -> bool {
        self.slots
            .iter()
            .enumerate()
            .all(|(at, &slot)| slot as usize == at)
    }

    /// The bytes a record's array states add for their slots.
    fn slot_bytes(&self) -> usize {
        if self.positional() {
            0
        } else {
            2 * self.slots.len()
        }
    }
}

const HAS_OVERFLOW: u8 = 1;
const BUCKET_OPEN: u8 = 2;
/// Bit 7 of the flags: the state's layout parity (see `LayoutState`): which of an array's
/// two layouts it is under while a migration runs.
const LAYOUT_PARITY: u8 = 0x80;
/// Bits 4 to 6 of the flags: how many summaries of further measures follow the first's.
const MORE_SHIFT: u32 = 4;
const MORE_MASK: u8 = 0x70;

/// The state of one array field inside its parent record. Its inline items are `Stored`
/// (with their push sequence numbers) for the write rules and merged reads; a plain read of
/// the record builds `Item`s straight away (see [`ParentRecord::decode_read`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArrayState<T = Stored> {
    /// Items in the array, wherever they live.
    pub total: u64,
    /// Items exist outside the parent record.
    pub has_overflow: bool,
    /// Summary of all items.
    pub summary: Summary,
    /// The push sequence number the next item gets.
    pub next_seq: u64,
    /// The sequence number of the next cold chunk of this array (part of its index key).
    pub next_chunk: u32,
    /// `Bucket` layout: the start key of the open bucket, when one is open.
    pub bucket_start: Option<i64>,
    /// The items the layout keeps inline, in the layout's order.
    pub inline: Vec<T>,
    /// The stored size of the inline items (not encoded; kept current by the write rules).
    pub inline_bytes: usize,
    /// The layout parity the state was written under (see `catalog::LayoutState`).
    pub parity: bool,
}

impl<T> Default for ArrayState<T> {
    fn default() -> Self {
        ArrayState {
            total: 0,
            has_overflow: false,
            summary: Summary::default(),
            next_seq: 0,
            next_chunk: 0,
            bucket_start: None,
            inline: Vec::new(),
            inline_bytes: 0,
            parity: false,
        }
    }
}

/// A decoded parent record.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ParentRecord<T = Stored> {
    pub body: Bytes,
    pub arrays: Vec<ArrayState<T>>,
}

impl ParentRecord {
    /// A record with `body` and `arrays` empty arrays.
    pub fn new(body: Bytes, arrays: usize) -> Self {
        ParentRecord {
            body,
            arrays: vec![ArrayState::default(); arrays],
        }
    }

    /// The encoded size, to check against the limit before encoding.
    pub fn encoded_len(&self, shape: Shape<'_>) -> u64 {
        (RECORD_OVERHEAD_BYTES
            + shape.slot_bytes()
            + self.body.len()
            + self
                .arrays
                .iter()
                .map(|a| {
                    ARRAY_HEADER_BYTES - 4 - SUMMARY_BYTES
                        + a.summary.encoded_len()
                        + item::items_len(&a.inline)
                })
                .sum::<usize>()) as u64
    }

    /// Encodes the record, its states under the slots of `shape` (which has one per array).
    pub fn encode(&self, shape: Shape<'_>) -> Vec<u8> {
        assert_eq!(shape.slots.len(), self.arrays.len(), "a slot per array");
        let positional = shape.positional();
        let mut out = Vec::with_capacity(index(self.encoded_len(shape)));
        out.put_u8(match positional {
            true => RECORD_VERSION,
            false => RECORD_VERSION_SLOTTED,
        });
        out.put_u32_le(u32_len(self.body.len()));
        out.put_slice(&self.body);
        out.put_u16_le(u16_len(self.arrays.len()));
        for (array, &slot) in self.arrays.iter().zip(shape.slots) {
            if !positional {
                out.put_u16_le(slot);
            }
            out.put_u64_le(array.total);
            let mut flags = 0;
            if array.has_overflow {
                flags |= HAS_OVERFLOW;
            }
            if array.bucket_start.is_some() {
                flags |= BUCKET_OPEN;
            }
            if array.parity {
                flags |= LAYOUT_PARITY;
            }
            flags |= u8_len(array.summary.stored_more()) << MORE_SHIFT;
            out.put_u8(flags);
            out.put_u64_le(array.next_seq);
            out.put_u32_le(array.next_chunk);
            out.put_i64_le(array.bucket_start.unwrap_or(0));
            array.summary.encode(&mut out);
            out.put_u32_le(u32_len(item::items_len(&array.inline)));
            item::encode_items(&array.inline, &mut out);
        }
        // The record limit was checked against `encoded_len`: the bytes must be what it said.
        assert_eq!(
            out.len() as u64,
            self.encoded_len(shape),
            "a record encodes to its length"
        );
        assert!(
            out.len() <= crate::limits::MAX_RECORD_BYTES,
            "a record over the record limit"
        );
        out
    }

    #[cfg(any(test, feature = "testing"))]
    /// Decodes a record of a collection of `shape`.
    pub fn decode(bytes: Bytes, shape: Shape<'_>) -> Result<Self, String> {
        Self::decode_fields(bytes, shape, |_| true)
    }

    /// Decodes a record, building the inline items of the array fields `wanted` names (by
    /// index) only; the others are stepped over by their length, their item count checked
    /// against it but their items not read, their `inline` left empty. Only for reads: such
    /// a record must not be written back.
    pub fn decode_fields(
        bytes: Bytes,
        shape: Shape<'_>,
        wanted: impl Fn(usize) -> bool,
    ) -> Result<Self, String> {
        collected(bytes, shape, |bytes, push| {
            decode_with(bytes, shape, push, |field, list| {
                wanted(field).then(|| item::decode_items(list)).transpose()
            })
        })
    }

    /// [`ParentRecord::decode_fields`] building only array `field`'s inline items, with
    /// `build`, which reads the whole encoded list (checking it) and may keep only some of
    /// its items: for a page of one array. Only for reads.
    pub fn decode_field_with(
        bytes: Bytes,
        shape: Shape<'_>,
        field: usize,
        build: impl FnOnce(&mut Bytes) -> Result<Vec<Stored>, String>,
    ) -> Result<Self, String> {
        let mut build = Some(build);
        collected(bytes, shape, |bytes, push| {
            decode_with(bytes, shape, push, |at, list| {
                let build = if at == field { build.take() } else { None };
                build.map(|build| build(list)).transpose()
            })
        })
    }
}

impl ParentRecord<Item> {
    /// [`ParentRecord::decode_fields`] for a reader: the inline items come as `Item`s in
    /// (key, push) order, without their sequence numbers.
    pub fn decode_read(
        bytes: Bytes,
        shape: Shape<'_>,
        wanted: impl Fn(usize) -> bool,
    ) -> Result<Self, String> {
        collected(bytes, shape, |bytes, push| {
            decode_read_each(bytes, shape, wanted, push)
        })
    }
}

/// [`ParentRecord::decode_read`] handing each array's state to `push` in field order
/// instead of collecting them (a document builds its views from them); returns the body.
pub(crate) fn decode_read_each(
    bytes: Bytes,
    shape: Shape<'_>,
    wanted: impl Fn(usize) -> bool,
    push: impl FnMut(ArrayState<Item>),
) -> Result<Bytes, String> {
    decode_with(bytes, shape, push, |field, list| {
        wanted(field)
            .then(|| item::decode_read_items(list))
            .transpose()
    })
}

/// A record decoded by `decode` (as [`decode_with`] does) with its arrays collected.
fn collected<T>(
    bytes: Bytes,
    shape: Shape<'_>,
    decode: impl FnOnce(Bytes, &mut dyn FnMut(ArrayState<T>)) -> Result<Bytes, String>,
) -> Result<ParentRecord<T>, String> {
    let mut states = Vec::with_capacity(shape.slots.len());
    let body = decode(bytes, &mut |state| states.push(state))?;
    Ok(ParentRecord {
        body,
        arrays: states,
    })
}

/// Decodes a record: returns its body and hands each array's state to `push`, in field
/// order, one per field of `shape` (on an error, some may have been handed over).
/// `inline(field, list)` builds the inline items of array `field` from its encoded item list
/// and moves `list` past them, or returns `None` to leave them unread (the list is then
/// stepped over by its length, its count checked). A state whose slot is no field's is
/// checked and stepped over; a field whose slot the record lacks gets an empty state.
fn decode_with<T>(
    mut bytes: Bytes,
    shape: Shape<'_>,
    mut push: impl FnMut(ArrayState<T>),
    mut inline: impl FnMut(usize, &mut Bytes) -> Result<Option<Vec<T>>, String>,
) -> Result<Bytes, String> {
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(format!("record of {} bytes over the limit", bytes.len()));
    }
    if bytes.remaining() < RECORD_OVERHEAD_BYTES {
        return Err("record truncated".to_string());
    }
    let version = bytes.get_u8();
    if !(RECORD_VERSION_UNSIZED..=RECORD_VERSION_SLOTTED).contains(&version) {
        return Err(format!("unknown record version {version}"));
    }
    let sized = version != RECORD_VERSION_UNSIZED;
    let slotted = version == RECORD_VERSION_SLOTTED;
    let known_flags = HAS_OVERFLOW
        | BUCKET_OPEN
        | if version >= RECORD_VERSION {
            MORE_MASK | LAYOUT_PARITY
        } else {
            0
        };
    // An unsized record's arrays lack the items' length; a slotted one's begin with a slot.
    let header_bytes = ARRAY_HEADER_BYTES - if sized { 0 } else { 4 } + if slotted { 2 } else { 0 };
    let body_len = bytes.get_u32_le() as usize;
    if bytes.remaining() < body_len + 2 {
        return Err(format!(
            "record body of {body_len} bytes past the record's end"
        ));
    }
    let body = bytes.split_to(body_len);
    let count = bytes.get_u16_le() as usize;
    if count > shape.next_slot as usize {
        return Err(format!(
            "record has {count} arrays where the schema has given out {} slots",
            shape.next_slot
        ));
    }
    // The next field to hand a state to, and the slot of the state read last.
    let mut next_field = 0;
    let mut last_slot = None;
    for position in 0..count {
        if bytes.remaining() < header_bytes {
            return Err("array state truncated".to_string());
        }
        let slot = match slotted {
            true => bytes.get_u16_le(),
            false => u16_len(position),
        };
        if last_slot.is_some_and(|last| slot <= last) || slot >= shape.next_slot {
            return Err(format!("array slot {slot} out of order or never given out"));
        }
        last_slot = Some(slot);
        while shape.slots.get(next_field).is_some_and(|&s| s < slot) {
            push(ArrayState::default());
            next_field += 1;
        }
        let field = (shape.slots.get(next_field) == Some(&slot)).then_some(next_field);
        let total = bytes.get_u64_le();
        let flags = bytes.get_u8();
        if flags & !known_flags != 0 {
            return Err(format!("unknown array flags {flags}"));
        }
        let next_seq = bytes.get_u64_le();
        let next_chunk = bytes.get_u32_le();
        let bucket_start = bytes.get_i64_le();
        if flags & BUCKET_OPEN == 0 && bucket_start != 0 {
            return Err("a bucket start without an open bucket".to_string());
        }
        let summary = Summary::decode(&mut bytes, ((flags & MORE_MASK) >> MORE_SHIFT) as usize)?;
        // A dropped array's state is checked as an unwanted one is, then left out.
        let mut build = |list: &mut Bytes| match field {
            Some(field) => inline(field, list),
            None => Ok(None),
        };
        let (inline_items, inline_count, inline_bytes) = if sized {
            // The header's fixed part was checked; the summary's further measures may have
            // taken the rest.
            if bytes.remaining() < 4 {
                return Err("array state truncated".to_string());
            }
            let list_len = bytes.get_u32_le() as usize;
            if bytes.remaining() < list_len {
                return Err(format!(
                    "inline items of {list_len} bytes past the record's end"
                ));
            }
            let mut list = bytes.split_to(list_len);
            match build(&mut list)? {
                Some(items) => {
                    if list.has_remaining() {
                        return Err("inline items shorter than their length".to_string());
                    }
                    let count = items.len();
                    (items, count, list_len - 4)
                }
                None => (Vec::new(), item::list_count(&list)?, list_len - 4),
            }
        } else {
            let start = bytes.len();
            match build(&mut bytes)? {
                Some(items) => {
                    let count = items.len();
                    (items, count, start - bytes.len() - 4)
                }
                None => {
                    let (count, stored) = item::skip_items(&mut bytes)?;
                    (Vec::new(), count, stored)
                }
            }
        };
        if inline_count as u64 > total || summary.items != total {
            return Err("array counts disagree".to_string());
        }
        if field.is_none() {
            continue;
        }
        next_field += 1;
        push(ArrayState {
            inline_bytes,
            total,
            has_overflow: flags & HAS_OVERFLOW != 0,
            summary,
            next_seq,
            next_chunk,
            bucket_start: (flags & BUCKET_OPEN != 0).then_some(bucket_start),
            inline: inline_items,
            parity: flags & LAYOUT_PARITY != 0,
        });
    }
    if bytes.has_remaining() {
        return Err(format!(
            "{} trailing bytes after the record",
            bytes.remaining()
        ));
    }
    for _ in next_field..shape.slots.len() {
        push(ArrayState::default());
    }
    Ok(body)
}

/// The end offsets of the parts of an encoded record, for diffs: version, body and array
/// count as one part; per array its header (with the items' length), its item count and
/// each inline item.
pub(crate) fn part_ends(record: &Bytes) -> Result<Vec<usize>, String> {
    let mut bytes = record.clone();
    let at = |bytes: &Bytes| record.len() - bytes.len();
    if bytes.remaining() < RECORD_OVERHEAD_BYTES {
        return Err("record truncated".to_string());
    }
    let version = bytes.get_u8();
    let header_bytes = match version {
        RECORD_VERSION_SLOTTED => ARRAY_HEADER_BYTES + 2,
        RECORD_VERSION | RECORD_VERSION_SIZED => ARRAY_HEADER_BYTES,
        RECORD_VERSION_UNSIZED => ARRAY_HEADER_BYTES - 4,
        version => return Err(format!("unknown record version {version}")),
    };
    // Where the flags byte is in an array state.
    let flags_at = 8 + usize::from(version == RECORD_VERSION_SLOTTED) * 2;
    let body_len = bytes.get_u32_le() as usize;
    if bytes.remaining() < body_len + 2 {
        return Err("record body past the record's end".to_string());
    }
    bytes.advance(body_len);
    let count = bytes.get_u16_le() as usize;
    // One allocation, sized by the record's length (not by counts it claims): an item
    // takes at least its fixed bytes, an array's two parts at least its header.
    let capacity = 1 + record.len() / item::ITEM_OVERHEAD_BYTES + 2 * record.len() / header_bytes;
    let mut ends = Vec::with_capacity(capacity);
    ends.push(at(&bytes));
    for _ in 0..count {
        if bytes.remaining() < header_bytes {
            return Err("array state truncated".to_string());
        }
        // The flags byte, 8 bytes in, says how many further measure summaries there are
        // (always none before the current version).
        let more = match version {
            RECORD_VERSION | RECORD_VERSION_SLOTTED => {
                ((bytes[flags_at] & MORE_MASK) >> MORE_SHIFT) as usize
            }
            _ => 0,
        };
        let header_bytes = header_bytes + more * item::MEASURE_SUMMARY_BYTES;
        if bytes.remaining() < header_bytes {
            return Err("array state truncated".to_string());
        }
        bytes.advance(header_bytes - 4);
        ends.push(at(&bytes));
        let base = at(&bytes);
        item::part_ends(&mut bytes, base, &mut ends)?;
    }
    if bytes.has_remaining() {
        return Err("trailing bytes after the record".to_string());
    }
    Ok(ends)
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use super::*;
    use crate::item::Item;

    #[test]
    fn round_trip_and_truncation() {
        let mut record = ParentRecord::new(Bytes::from_static(b"hello"), 2);
        let item = Item {
            key: 4,
            value: Some(1.5),
            payload: Bytes::from_static(b"p"),
            more: None,
        };
        record.arrays[1].summary.add(&item);
        record.arrays[1].total = 3;
        record.arrays[1].summary.items = 3;
        record.arrays[1].has_overflow = true;
        record.arrays[1].bucket_start = Some(-60);
        record.arrays[1].inline_bytes = crate::item::stored_len(&item);
        record.arrays[1].inline.push(Stored { item, seq: 2 });
        let bytes = record.encode(Shape::identity(2));
        assert_eq!(bytes.len() as u64, record.encoded_len(Shape::identity(2)));
        assert_eq!(
            ParentRecord::decode(Bytes::from(bytes.clone()), Shape::identity(2)).unwrap(),
            record
        );
        assert!(ParentRecord::decode(Bytes::from(bytes.clone()), Shape::identity(1)).is_err());
        // The first array has no open bucket: its bucket start must be 0, so that every
        // record that decodes encodes back to the same bytes.
        let mut stray = bytes.clone();
        stray[1 + 4 + 5 + 2 + 8 + 1 + 8 + 4] = 1;
        assert!(ParentRecord::decode(Bytes::from(stray), Shape::identity(2)).is_err());
        for len in 0..bytes.len() {
            assert!(
                ParentRecord::decode(Bytes::copy_from_slice(&bytes[..len]), Shape::identity(2))
                    .is_err()
            );
        }
        let plain = ParentRecord::new(Bytes::from_static(b"x"), 0);
        assert_eq!(
            plain.encoded_len(Shape::identity(0)) as usize,
            1 + RECORD_OVERHEAD_BYTES
        );
    }

    /// A record with two arrays of `items` inline items each.
    fn two_arrays(items: i64) -> ParentRecord {
        let mut record = ParentRecord::new(Bytes::from_static(b"body"), 2);
        for array in &mut record.arrays {
            for key in 0..items {
                let item = Item {
                    key,
                    value: (key % 2 == 0).then_some(key as f64),
                    payload: Bytes::from(vec![b'p'; key as usize]),
                    more: None,
                };
                array.summary.add(&item);
                array.total += 1;
                array.inline_bytes += crate::item::stored_len(&item);
                array.inline.push(Stored {
                    item,
                    seq: key as u64,
                });
            }
        }
        record
    }

    /// The same record in the unsized version: no items' length before each item list.
    fn unsized_encoding(record: &ParentRecord) -> Vec<u8> {
        let sized = record.encode(Shape::identity(2));
        let mut out = vec![RECORD_VERSION_UNSIZED];
        let mut at = 1 + 4 + record.body.len() + 2;
        out.extend_from_slice(&sized[1..at]);
        for array in &record.arrays {
            let header = ARRAY_HEADER_BYTES - 8;
            out.extend_from_slice(&sized[at..at + header]);
            at += header + 4;
            let list = crate::item::items_len(&array.inline);
            out.extend_from_slice(&sized[at..at + list]);
            at += list;
        }
        assert_eq!(at, sized.len());
        out
    }

    #[test]
    fn unsized_records_still_read_and_are_written_sized() {
        let record = two_arrays(5);
        let old = unsized_encoding(&record);
        assert_eq!(old.len() + 8, record.encode(Shape::identity(2)).len());
        assert_eq!(
            ParentRecord::decode(Bytes::from(old.clone()), Shape::identity(2)).unwrap(),
            record
        );
        let projected =
            ParentRecord::decode_fields(Bytes::from(old.clone()), Shape::identity(2), |f| f == 1)
                .unwrap();
        assert!(projected.arrays[0].inline.is_empty());
        assert_eq!(projected.arrays[1], record.arrays[1]);
        assert_eq!(
            (projected.arrays[0].total, projected.arrays[0].inline_bytes),
            (5, record.arrays[0].inline_bytes)
        );
        let ends = part_ends(&Bytes::from(old.clone())).unwrap();
        assert_eq!(ends.last(), Some(&old.len()));
        for len in 0..old.len() {
            assert!(
                ParentRecord::decode(Bytes::copy_from_slice(&old[..len]), Shape::identity(2))
                    .is_err()
            );
        }
    }

    /// A projection steps over an unwanted item list by its length: it does not read the
    /// items (a damaged one goes unseen) but checks the count against the length.
    #[test]
    fn projections_step_over_unwanted_items() {
        let record = two_arrays(4);
        let mut bytes = record.encode(Shape::identity(2));
        let list_at = 1 + 4 + record.body.len() + 2 + ARRAY_HEADER_BYTES - 4;
        // The first item's flags byte of the first array.
        bytes[list_at + 4 + 16] = 0x7f;
        assert!(ParentRecord::decode(Bytes::from(bytes.clone()), Shape::identity(2)).is_err());
        assert!(
            ParentRecord::decode_fields(Bytes::from(bytes.clone()), Shape::identity(2), |f| f == 0)
                .is_err()
        );
        let projected =
            ParentRecord::decode_fields(Bytes::from(bytes.clone()), Shape::identity(2), |f| f == 1)
                .unwrap();
        assert_eq!(projected.arrays[0].total, 4);
        assert_eq!(projected.arrays[1], record.arrays[1]);
        // A count the length cannot hold is refused all the same.
        bytes[list_at..list_at + 4].copy_from_slice(&1000u32.to_le_bytes());
        assert!(
            ParentRecord::decode_fields(Bytes::from(bytes.clone()), Shape::identity(2), |f| f == 1)
                .is_err()
        );
        // So is a length past the record's end.
        let mut bytes = record.encode(Shape::identity(2));
        bytes[list_at - 4..list_at].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            ParentRecord::decode_fields(Bytes::from(bytes), Shape::identity(2), |f| f == 1)
                .is_err()
        );
    }

    /// A page of one array builds that array's items with the builder given, once, and
    /// steps over the others as a projection does.
    #[test]
    fn a_page_builds_one_arrays_items() {
        let record = two_arrays(4);
        let bytes = Bytes::from(record.encode(Shape::identity(2)));
        for field in 0..2 {
            let mut calls = 0;
            let page =
                ParentRecord::decode_field_with(bytes.clone(), Shape::identity(2), field, |list| {
                    calls += 1;
                    let mut items = crate::item::decode_items(list)?;
                    items.truncate(1);
                    Ok(items)
                })
                .unwrap();
            assert_eq!(calls, 1);
            assert_eq!(page.arrays[field].inline, record.arrays[field].inline[..1]);
            assert!(page.arrays[1 - field].inline.is_empty());
            assert_eq!(page.arrays[1 - field].total, record.arrays[1 - field].total);
        }
        // A builder that leaves bytes of its list unread is refused.
        let short =
            ParentRecord::decode_field_with(bytes, Shape::identity(2), 1, |_| Ok(Vec::new()));
        assert!(short.is_err());
    }

    /// A record keeps the states of the slots it was written with: a field added after it
    /// reads as empty, a dropped field's state is stepped over, and a record of a collection
    /// whose slots are not 0, 1, 2, ... says each state's slot.
    #[test]
    fn states_follow_their_slots() {
        let record = two_arrays(3);
        let positional = Bytes::from(record.encode(Shape::identity(2)));
        assert_eq!(positional[0], RECORD_VERSION);
        // Field 1 dropped, then a field added: slots 0 and 2 of 3.
        let later = Shape {
            slots: &[0, 2],
            next_slot: 3,
        };
        let read = ParentRecord::decode(positional.clone(), later).unwrap();
        assert_eq!(read.arrays[0], record.arrays[0]);
        let read_first_inline = read.arrays[0].inline.clone();
        assert_eq!(read.arrays[1], ArrayState::default());
        // Written again under that shape: slotted, and reads back the same.
        let slotted = read.encode(later);
        assert_eq!(slotted[0], RECORD_VERSION_SLOTTED);
        assert_eq!(slotted.len() as u64, read.encoded_len(later));
        assert_eq!(
            ParentRecord::decode(Bytes::from(slotted.clone()), later).unwrap(),
            read
        );
        let ends = part_ends(&Bytes::from(slotted.clone())).unwrap();
        assert_eq!(ends.last(), Some(&slotted.len()));
        // Only field 1 kept (slot 1): the other state is stepped over, even unwanted.
        let kept = Shape {
            slots: &[1],
            next_slot: 2,
        };
        let read = ParentRecord::decode(positional.clone(), kept).unwrap();
        assert_eq!(read.arrays, [record.arrays[1].clone()]);
        // No field left: the body alone.
        let none = Shape {
            slots: &[],
            next_slot: 3,
        };
        let read = ParentRecord::decode(Bytes::from(slotted.clone()), none).unwrap();
        assert_eq!((read.body, read.arrays.len()), (record.body.clone(), 0));
        // A slot never given out, or slots out of order, are refused.
        let older = Shape {
            slots: &[0],
            next_slot: 1,
        };
        assert!(ParentRecord::decode(positional, older).is_err());
        assert!(ParentRecord::decode(Bytes::from(slotted.clone()), older).is_err());
        let state_at = 1 + 4 + record.body.len() + 2;
        let second =
            state_at + 2 + ARRAY_HEADER_BYTES - 4 + crate::item::items_len(&read_first_inline);
        let mut swapped = slotted.clone();
        swapped[second..second + 2].copy_from_slice(&0u16.to_le_bytes());
        assert!(ParentRecord::decode(Bytes::from(swapped), later).is_err());
        for len in 0..slotted.len() {
            assert!(ParentRecord::decode(Bytes::copy_from_slice(&slotted[..len]), later).is_err());
        }
    }
}
