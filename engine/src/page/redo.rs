//! Redo operations: what a committed batch logs, in the frames of the hot log.
//! The one place that encodes and decodes them; see `format-spec/hot-log.md`.

use bytes::{Buf, BufMut, Bytes};

use crate::catalog::{CollectionId, CollectionInfo, CollectionSpec, Retired, SpecForm};
use crate::cold::ChunkLoc;
use crate::limits::MAX_RECORD_BYTES;
use crate::limits::widths::{u16_len, u32_len};
use crate::page::keys::MAX_TREE_KEY_BYTES;

const OP_CREATE_COLLECTION: u8 = 1;
const OP_PUT: u8 = 2;
const OP_DELETE: u8 = 3;
const OP_DELETE_RANGE: u8 = 4;
const OP_COLD_CHUNK: u8 = 5;
const OP_PATCH: u8 = 6;
const OP_COLD_BYTES: u8 = 7;
/// A collection created, its spec with its arrays' measures (op 1's spec lacks them: each
/// array has the default measure). Written in hot log version 3.
const OP_CREATE_MEASURED: u8 = 8;
/// A collection created, its spec with its arrays' measures and its document format (op 8's
/// lacks the format: `DocumentFormat::Bytes`). Written since hot log version 4.
const OP_CREATE_FORMATTED: u8 = 9;
/// A collection created, its spec with measures, document format and document map (op 9's
/// lacks the map: none). Written since hot log version 5.
const OP_CREATE_MAPPED: u8 = 10;
/// A collection's schema set (created, renamed, its arrays added or dropped, a measure
/// added): its id, spec and array slots. Written since hot log version 6, as are 12 to 14.
const OP_SET_COLLECTION: u8 = 11;
/// A collection dropped: gone from the catalog, its records retired.
const OP_DROP_COLLECTION: u8 = 12;
/// A collection's schema set, as op 11, each array's layout state after its slot. Written
/// since hot log version 7 (op 11 is read, no longer written).
const OP_SET_COLLECTION_MIGRATING: u8 = 15;
/// A collection created, its spec (op 10's) ending with its arrays' rollup spans. Written
/// since hot log version 8 (op 10 is read, no longer written).
const OP_CREATE_ROLLED_UP: u8 = 16;
/// A collection's schema set, as op 15, its spec ending with its arrays' rollup spans.
/// Written since hot log version 8 (op 15 is read, no longer written).
const OP_SET_COLLECTION_ROLLED_UP: u8 = 17;
/// An array slot of a collection retired (the array was dropped).
const OP_RETIRE_ARRAY: u8 = 13;
/// What a drop retired is reclaimed: off the retired list.
const OP_RECLAIMED: u8 = 14;
/// The slot a retired record of a whole collection carries in ops 13 and 14.
const WHOLE_COLLECTION: u16 = u16::MAX;

/// One change to the database. Physical at the record level (a patch edits bytes): replay
/// never recomputes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    CreateCollection {
        id: CollectionId,
        spec: CollectionSpec,
    },
    /// Sets the schema of collection `info.id` (adding it when the catalog lacks it).
    SetCollection(CollectionInfo),
    /// Drops collection `id`: its records are retired.
    DropCollection {
        id: CollectionId,
    },
    /// Retires what a dropped array left (`slot` is `Some`).
    Retire(Retired),
    /// Takes a retired collection or array off the list: its records are gone.
    Reclaimed(Retired),
    /// Sets the tree record under `key` (a full tree key) to `value`.
    Put {
        key: Bytes,
        value: Bytes,
    },
    Delete {
        key: Bytes,
    },
    /// Deletes every tree record with `start <= key < end`.
    DeleteRange {
        start: Bytes,
        end: Bytes,
    },
    /// The batch wrote this cold chunk; replay checks it survived. It was made durable
    /// before the redo, or a `ColdBytes` op earlier in the batch carries it.
    ColdChunk(ChunkLoc),
    /// The bytes the batch wrote to a cold segment at `loc` (its chunks, one after another),
    /// carried by the redo: they need not be durable before it, and replay writes them again
    /// where they did not survive.
    ColdBytes {
        loc: ChunkLoc,
        bytes: Bytes,
    },
    /// Sets the tree record under `key` to its present value changed by `edits`: what a
    /// write that changes a small part of a record logs instead of the whole value.
    Patch {
        key: Bytes,
        /// The length of the value the edits apply to.
        old_len: u32,
        edits: Vec<Edit>,
    },
}

/// One change of a [`Op::Patch`]: the `remove` bytes of the old value from `at` give way to
/// `insert`. A patch's edits are in order and do not overlap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub at: u32,
    pub remove: u32,
    pub insert: Bytes,
}

/// Bytes a patch edit adds to its inserted bytes: offset, removed and inserted lengths.
const EDIT_HEADER_BYTES: usize = 12;

/// A decoded op and, for `Put`, the offset of the value's bytes in the payload.
pub struct DecodedOp {
    pub op: Op,
    pub value_offset: usize,
}

fn put_key(out: &mut Vec<u8>, key: &[u8]) {
    out.put_u16_le(u16_len(key.len()));
    out.put_slice(key);
}

impl Op {
    /// Appends the op; returns the offset of a `Put`'s value bytes within `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> usize {
        match self {
            Op::CreateCollection { id, spec } => {
                out.put_u8(OP_CREATE_ROLLED_UP);
                out.put_u32_le(*id);
                spec.encode(out);
                0
            }
            Op::SetCollection(info) => {
                out.put_u8(OP_SET_COLLECTION_ROLLED_UP);
                out.put_u32_le(info.id);
                info.spec.encode(out);
                info.encode_slots(out);
                0
            }
            Op::DropCollection { id } => {
                out.put_u8(OP_DROP_COLLECTION);
                out.put_u32_le(*id);
                0
            }
            Op::Retire(retired) | Op::Reclaimed(retired) => {
                out.put_u8(match op_is_retire(self) {
                    true => OP_RETIRE_ARRAY,
                    false => OP_RECLAIMED,
                });
                out.put_u32_le(retired.collection);
                out.put_u16_le(retired.slot.unwrap_or(WHOLE_COLLECTION));
                0
            }
            Op::Put { key, value } => {
                out.put_u8(OP_PUT);
                put_key(out, key);
                out.put_u32_le(u32_len(value.len()));
                let offset = out.len();
                out.put_slice(value);
                offset
            }
            Op::Delete { key } => {
                out.put_u8(OP_DELETE);
                put_key(out, key);
                0
            }
            Op::DeleteRange { start, end } => {
                out.put_u8(OP_DELETE_RANGE);
                put_key(out, start);
                put_key(out, end);
                0
            }
            Op::ColdChunk(loc) => {
                out.put_u8(OP_COLD_CHUNK);
                loc.encode(out);
                0
            }
            Op::ColdBytes { loc, bytes } => {
                assert_eq!(
                    bytes.len(),
                    loc.len as usize,
                    "carried chunk bytes fill their location"
                );
                out.put_u8(OP_COLD_BYTES);
                loc.encode(out);
                out.put_slice(bytes);
                0
            }
            Op::Patch {
                key,
                old_len,
                edits,
            } => {
                out.put_u8(OP_PATCH);
                put_key(out, key);
                out.put_u32_le(*old_len);
                out.put_u16_le(u16_len(edits.len()));
                for edit in edits {
                    out.put_u32_le(edit.at);
                    out.put_u32_le(edit.remove);
                    out.put_u32_le(u32_len(edit.insert.len()));
                    out.put_slice(&edit.insert);
                }
                0
            }
        }
    }

    /// The bytes [`Op::encode`] appends.
    pub fn encoded_len(&self) -> usize {
        1 + match self {
            Op::CreateCollection { spec, .. } => 4 + spec.encoded_len(),
            Op::SetCollection(info) => {
                let mut slots = Vec::new();
                info.encode_slots(&mut slots);
                4 + info.spec.encoded_len() + slots.len()
            }
            Op::DropCollection { .. } => 4,
            Op::Retire(_) | Op::Reclaimed(_) => 6,
            Op::Put { key, value } => 2 + key.len() + 4 + value.len(),
            Op::Delete { key } => 2 + key.len(),
            Op::DeleteRange { start, end } => 4 + start.len() + end.len(),
            Op::ColdChunk(_) => ChunkLoc::ENCODED_BYTES,
            Op::ColdBytes { bytes, .. } => ChunkLoc::ENCODED_BYTES + bytes.len(),
            Op::Patch { key, edits, .. } => {
                2 + key.len()
                    + 4
                    + 2
                    + edits
                        .iter()
                        .map(|e| EDIT_HEADER_BYTES + e.insert.len())
                        .sum::<usize>()
            }
        }
    }

    /// Decodes every op of a frame payload, checking each length before slicing.
    pub fn decode_all(payload: Bytes) -> Result<Vec<DecodedOp>, String> {
        let total = payload.len();
        let mut bytes = payload;
        let mut ops = Vec::new();
        fn need(bytes: &Bytes, n: usize) -> Result<(), String> {
            if bytes.remaining() < n {
                Err("redo op truncated".to_string())
            } else {
                Ok(())
            }
        }
        fn key(bytes: &mut Bytes) -> Result<Bytes, String> {
            need(bytes, 2)?;
            let len = bytes.get_u16_le() as usize;
            if len > MAX_TREE_KEY_BYTES {
                return Err(format!("redo key of {len} bytes over the limit"));
            }
            need(bytes, len)?;
            Ok(bytes.split_to(len))
        }
        while bytes.has_remaining() {
            let tag = bytes.get_u8();
            let mut value_offset = 0;
            let op = match tag {
                OP_CREATE_COLLECTION | OP_CREATE_MEASURED | OP_CREATE_FORMATTED
                | OP_CREATE_MAPPED | OP_CREATE_ROLLED_UP => {
                    need(&bytes, 4)?;
                    let id = bytes.get_u32_le();
                    let form = match tag {
                        OP_CREATE_COLLECTION => SpecForm::Unmeasured,
                        OP_CREATE_MEASURED => SpecForm::Measured,
                        OP_CREATE_FORMATTED => SpecForm::Formatted,
                        OP_CREATE_MAPPED => SpecForm::Mapped,
                        _ => SpecForm::RolledUp,
                    };
                    Op::CreateCollection {
                        id,
                        spec: CollectionSpec::decode(&mut bytes, form)?,
                    }
                }
                OP_SET_COLLECTION | OP_SET_COLLECTION_MIGRATING | OP_SET_COLLECTION_ROLLED_UP => {
                    need(&bytes, 4)?;
                    let id = bytes.get_u32_le();
                    let form = match tag {
                        OP_SET_COLLECTION => SpecForm::Slotted,
                        OP_SET_COLLECTION_MIGRATING => SpecForm::Migrating,
                        _ => SpecForm::RolledUp,
                    };
                    let spec = CollectionSpec::decode(&mut bytes, form.of_spec())?;
                    Op::SetCollection(CollectionInfo::decode_slots(id, spec, &mut bytes, form)?)
                }
                OP_DROP_COLLECTION => {
                    need(&bytes, 4)?;
                    Op::DropCollection {
                        id: bytes.get_u32_le(),
                    }
                }
                OP_RETIRE_ARRAY | OP_RECLAIMED => {
                    need(&bytes, 6)?;
                    let collection = bytes.get_u32_le();
                    let slot = bytes.get_u16_le();
                    let retired = Retired {
                        collection,
                        slot: (slot != WHOLE_COLLECTION).then_some(slot),
                    };
                    match tag {
                        OP_RETIRE_ARRAY if retired.slot.is_none() => {
                            return Err("an array retired without its slot".to_string());
                        }
                        OP_RETIRE_ARRAY => Op::Retire(retired),
                        _ => Op::Reclaimed(retired),
                    }
                }
                OP_PUT => {
                    let key = key(&mut bytes)?;
                    need(&bytes, 4)?;
                    let len = bytes.get_u32_le() as usize;
                    if len > MAX_RECORD_BYTES {
                        return Err(format!("redo value of {len} bytes over the limit"));
                    }
                    need(&bytes, len)?;
                    value_offset = total - bytes.remaining();
                    Op::Put {
                        key,
                        value: bytes.split_to(len),
                    }
                }
                OP_DELETE => Op::Delete {
                    key: key(&mut bytes)?,
                },
                OP_DELETE_RANGE => Op::DeleteRange {
                    start: key(&mut bytes)?,
                    end: key(&mut bytes)?,
                },
                OP_COLD_CHUNK => Op::ColdChunk(ChunkLoc::decode(&mut bytes)?),
                OP_COLD_BYTES => {
                    let loc = ChunkLoc::decode(&mut bytes)?;
                    need(&bytes, loc.len as usize)?;
                    Op::ColdBytes {
                        loc,
                        bytes: bytes.split_to(loc.len as usize),
                    }
                }
                OP_PATCH => {
                    let key = key(&mut bytes)?;
                    need(&bytes, 6)?;
                    let old_len = bytes.get_u32_le();
                    let count = bytes.get_u16_le() as usize;
                    if count == 0 || count > bytes.remaining() / EDIT_HEADER_BYTES {
                        return Err(format!("patch of {count} edits"));
                    }
                    let mut edits = Vec::with_capacity(count);
                    for _ in 0..count {
                        need(&bytes, EDIT_HEADER_BYTES)?;
                        let (at, remove) = (bytes.get_u32_le(), bytes.get_u32_le());
                        let len = bytes.get_u32_le() as usize;
                        need(&bytes, len)?;
                        edits.push(Edit {
                            at,
                            remove,
                            insert: bytes.split_to(len),
                        });
                    }
                    patched_len(old_len, &edits)?;
                    Op::Patch {
                        key,
                        old_len,
                        edits,
                    }
                }
                tag => return Err(format!("unknown redo op {tag}")),
            };
            ops.push(DecodedOp { op, value_offset });
        }
        Ok(ops)
    }
}

fn op_is_retire(op: &Op) -> bool {
    matches!(op, Op::Retire(_))
}

/// The length of a value `old_len` long after `edits`, checking that they are in order,
/// apart (an edit that touches the next would be one edit), inside the old value, not empty,
/// and that the result is within the record limit.
fn patched_len(old_len: u32, edits: &[Edit]) -> Result<usize, String> {
    let old_len = old_len as usize;
    if old_len > MAX_RECORD_BYTES {
        return Err(format!("patch of a {old_len}-byte value over the limit"));
    }
    let mut end = None;
    let mut len = old_len;
    for edit in edits {
        let (at, remove) = (edit.at as usize, edit.remove as usize);
        if end.is_some_and(|end| at <= end) || at + remove > old_len {
            return Err(format!("patch edit at {at} out of order or past the value"));
        }
        if remove == 0 && edit.insert.is_empty() {
            return Err("empty patch edit".to_string());
        }
        end = Some(at + remove);
        len = len - remove + edit.insert.len();
        if len > MAX_RECORD_BYTES {
            return Err(format!("patch makes a value over {MAX_RECORD_BYTES} bytes"));
        }
    }
    Ok(len)
}

/// `old` changed by `edits`; fails when the edits do not fit it.
pub fn apply_patch(old: &[u8], old_len: u32, edits: &[Edit]) -> Result<Vec<u8>, String> {
    if old.len() != old_len as usize {
        return Err(format!(
            "patch for a value of {old_len} bytes applied to one of {}",
            old.len()
        ));
    }
    let mut out = Vec::with_capacity(patched_len(old_len, edits)?);
    let mut from = 0;
    for edit in edits {
        out.extend_from_slice(&old[from..edit.at as usize]);
        out.extend_from_slice(&edit.insert);
        from = (edit.at + edit.remove) as usize;
    }
    out.extend_from_slice(&old[from..]);
    Ok(out)
}

/// The most the part counts of a diff's two values may differ by: the diff's work grows
/// with the parts that differ (at least this many) times the parts, and a patch of many
/// is no saving.
const MAX_PART_COUNT_CHANGE: usize = 64;

/// Parts of the new value looked for in the old before a diff of a long value.
const PROBES: usize = 8;

/// Unequal pairs of parts that [`Edits::in_place`] always takes (an eighth of the pairs
/// when that is more).
const MIN_IN_PLACE_CHANGES: usize = 2;

/// The edits that turn `old` into `new`, found by a diff over their parts: `old_cuts` and
/// `new_cuts` are the end offsets of the parts (items, headers) each value is made of, the
/// last one its length. Parts equal in both are kept; runs of others become one edit each.
/// The parts are first compared in place (see [`Edits::in_place`]); a diff runs only when
/// that finds too many unequal. `None` when the part counts differ by more than
/// [`MAX_PART_COUNT_CHANGE`], or when fewer than half of [`PROBES`] parts spread over a long
/// new value are found in the old one.
pub fn diff(old: &[u8], old_cuts: &[usize], new: &[u8], new_cuts: &[usize]) -> Option<Vec<Edit>> {
    fn parts<'v>(value: &'v [u8], cuts: &[usize]) -> (Vec<&'v [u8]>, Vec<usize>) {
        let mut starts = Vec::with_capacity(cuts.len() + 1);
        starts.push(0);
        starts.extend_from_slice(cuts);
        let parts = starts.windows(2).map(|w| &value[w[0]..w[1]]).collect();
        (parts, starts)
    }
    let (old_parts, old_starts) = parts(old, old_cuts);
    let (new_parts, new_starts) = parts(new, new_cuts);
    if old_parts.len().abs_diff(new_parts.len()) > MAX_PART_COUNT_CHANGE {
        return None;
    }
    let mut edits = Edits {
        old_starts: &old_starts,
        new_starts: &new_starts,
        new,
        edits: Vec::new(),
    };
    if edits.in_place(&old_parts, &new_parts) {
        return Some(edits.edits);
    }
    // A value worth patching keeps most of its parts. A few parts spread over the new value
    // are looked for in the old one first, so that a value changed throughout (a tail
    // sealed and refilled in one batch) costs a few scans, not a diff of everything.
    if new_parts.len() >= 2 * PROBES {
        let found = (1..=PROBES)
            .map(|i| new_parts[i * new_parts.len() / (PROBES + 1)])
            .filter(|probe| old_parts.contains(probe))
            .count();
        if 2 * found < PROBES {
            return None;
        }
    }
    // The plain algorithm: `capture_diff_slices` compacts its ops afterwards, and the
    // compacted ops can name a wrong old position for an insertion.
    let Ok(()) = similar::algorithms::myers::diff(
        &mut edits,
        &old_parts,
        0..old_parts.len(),
        &new_parts,
        0..new_parts.len(),
    );
    Some(edits.edits)
}

/// Builds a patch's edits from a diff over parts, in old-value order; edits that touch
/// become one.
struct Edits<'a> {
    old_starts: &'a [usize],
    new_starts: &'a [usize],
    new: &'a [u8],
    edits: Vec<Edit>,
}

impl Edits<'_> {
    /// Most writes change a few parts where they are and add or drop parts at the end (a
    /// push to a tail: the array's header, its item count and one more item). Compared part
    /// by part in place, such a change shows as a few unequal pairs, and its edits follow
    /// without a diff. Builds them and returns true when at most
    /// [`MIN_IN_PLACE_CHANGES`] pairs, or an eighth of the pairs, differ; otherwise builds
    /// nothing.
    fn in_place(&mut self, old_parts: &[&[u8]], new_parts: &[&[u8]]) -> bool {
        let pairs = old_parts.len().min(new_parts.len());
        let allowed = MIN_IN_PLACE_CHANGES.max(pairs / 8);
        let mut unequal = Vec::new();
        for (index, (old, new)) in old_parts.iter().zip(new_parts).enumerate() {
            if old != new {
                if unequal.len() == allowed {
                    return false;
                }
                unequal.push(index);
            }
        }
        let mut runs = unequal.into_iter().peekable();
        while let Some(start) = runs.next() {
            let mut end = start + 1;
            while runs.next_if_eq(&end).is_some() {
                end += 1;
            }
            self.push(start..end, start..end);
        }
        if old_parts.len() != new_parts.len() {
            self.push(pairs..old_parts.len(), pairs..new_parts.len());
        }
        true
    }

    fn push(&mut self, old_parts: std::ops::Range<usize>, new_parts: std::ops::Range<usize>) {
        let at = self.old_starts[old_parts.start];
        let remove = self.old_starts[old_parts.end] - at;
        let insert = &self.new[self.new_starts[new_parts.start]..self.new_starts[new_parts.end]];
        match self.edits.last_mut() {
            Some(last) if (last.at + last.remove) as usize == at => {
                last.remove += u32_len(remove);
                let mut joined = last.insert.to_vec();
                joined.extend_from_slice(insert);
                last.insert = Bytes::from(joined);
            }
            _ => self.edits.push(Edit {
                at: u32_len(at),
                remove: u32_len(remove),
                insert: Bytes::copy_from_slice(insert),
            }),
        }
    }
}

impl similar::algorithms::DiffHook for Edits<'_> {
    type Error = std::convert::Infallible;

    fn delete(&mut self, old: usize, len: usize, new: usize) -> Result<(), Self::Error> {
        self.push(old..old + len, new..new);
        Ok(())
    }

    fn insert(&mut self, old: usize, new: usize, len: usize) -> Result<(), Self::Error> {
        self.push(old..old, new..new + len);
        Ok(())
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_with_value_offsets() {
        let ops = vec![
            Op::CreateCollection {
                id: 3,
                spec: CollectionSpec::new("users")
                    .array("f", crate::catalog::Layout::Subset { keep: 5 }),
            },
            Op::CreateCollection {
                id: 4,
                spec: CollectionSpec::new("sensors")
                    .stored_as(crate::catalog::DocumentFormat::Bson)
                    .array("r", crate::catalog::Layout::Embed)
                    .mapped(crate::catalog::DocumentMap::new("_id").array("r", Some("t"), true)),
            },
            Op::Put {
                key: Bytes::from_static(b"k"),
                value: Bytes::from_static(b"record"),
            },
            Op::Delete {
                key: Bytes::from_static(b"k"),
            },
            Op::DeleteRange {
                start: Bytes::from_static(b"a"),
                end: Bytes::from_static(b"b"),
            },
            Op::ColdChunk(ChunkLoc {
                segment_id: 2,
                offset: 64,
                len: 100,
            }),
            Op::ColdBytes {
                loc: ChunkLoc {
                    segment_id: 3,
                    offset: 32,
                    len: 5,
                },
                bytes: Bytes::from_static(b"chunk"),
            },
            Op::Patch {
                key: Bytes::from_static(b"k"),
                old_len: 10,
                edits: vec![
                    Edit {
                        at: 0,
                        remove: 2,
                        insert: Bytes::new(),
                    },
                    Edit {
                        at: 10,
                        remove: 0,
                        insert: Bytes::from_static(b"tail"),
                    },
                ],
            },
            Op::SetCollection(CollectionInfo {
                id: 5,
                spec: CollectionSpec::new("renamed")
                    .array("a", crate::catalog::Layout::Embed)
                    .array("b", crate::catalog::Layout::Reference),
                slots: vec![1, 3],
                next_slot: 4,
                layouts: vec![
                    crate::catalog::LayoutState::default(),
                    crate::catalog::LayoutState {
                        parity: true,
                        previous: Some(crate::catalog::Layout::Subset { keep: 2 }),
                    },
                ],
            }),
            Op::Retire(Retired {
                collection: 5,
                slot: Some(0),
            }),
            Op::DropCollection { id: 5 },
            Op::Reclaimed(Retired {
                collection: 5,
                slot: None,
            }),
            Op::Reclaimed(Retired {
                collection: 5,
                slot: Some(2),
            }),
        ];
        let mut payload = Vec::new();
        let mut offsets = Vec::new();
        let mut boundaries = vec![0];
        for op in &ops {
            let before = payload.len();
            offsets.push(op.encode(&mut payload));
            assert_eq!(payload.len() - before, op.encoded_len());
            boundaries.push(payload.len());
        }
        let decoded = Op::decode_all(Bytes::from(payload.clone())).unwrap();
        assert_eq!(
            decoded.iter().map(|d| d.op.clone()).collect::<Vec<_>>(),
            ops
        );
        assert_eq!(decoded[2].value_offset, offsets[2]);
        assert_eq!(&payload[offsets[2]..offsets[2] + 6], b"record");
        for len in 1..payload.len() {
            let cut = Op::decode_all(Bytes::copy_from_slice(&payload[..len]));
            assert_eq!(cut.is_ok(), boundaries.contains(&len), "cut at {len}");
        }
    }

    /// A set-collection op whose slots are out of order, or a retire op of a whole
    /// collection, is refused.
    #[test]
    fn schema_ops_with_bad_slots_are_refused() {
        let info = CollectionInfo {
            id: 1,
            spec: CollectionSpec::new("c")
                .array("a", crate::catalog::Layout::Embed)
                .array("b", crate::catalog::Layout::Embed),
            slots: vec![2, 1],
            next_slot: 3,
            layouts: vec![crate::catalog::LayoutState::default(); 2],
        };
        let mut payload = Vec::new();
        Op::SetCollection(info.clone()).encode(&mut payload);
        assert!(Op::decode_all(Bytes::from(payload)).is_err());
        for (slots, next_slot) in [(vec![0, 3], 3), (vec![0, 1], 0xff01)] {
            let mut payload = Vec::new();
            Op::SetCollection(CollectionInfo {
                slots,
                next_slot,
                ..info.clone()
            })
            .encode(&mut payload);
            assert!(Op::decode_all(Bytes::from(payload)).is_err());
        }
        let mut payload = Vec::new();
        Op::Retire(Retired {
            collection: 1,
            slot: None,
        })
        .encode(&mut payload);
        assert!(Op::decode_all(Bytes::from(payload)).is_err());
    }

    /// A create-collection op as hot log version 7 wrote it (op 10: the spec without its
    /// rollups) reads as the collection without rollups, and as version 4 wrote it (op 9:
    /// without its document map's tag either) as the collection with no map.
    #[test]
    fn a_collection_created_before_document_maps_reads_without_one() {
        let spec = CollectionSpec::new("users").array("f", crate::catalog::Layout::Embed);
        let op = Op::CreateCollection { id: 3, spec };
        let mut payload = Vec::new();
        op.encode(&mut payload);
        assert_eq!(payload[0], OP_CREATE_ROLLED_UP);
        assert_eq!(payload.split_off(payload.len() - 8), [0; 8], "no rollup");
        payload[0] = OP_CREATE_MAPPED;
        let decoded = Op::decode_all(Bytes::from(payload.clone())).unwrap();
        assert_eq!(decoded[0].op, op);
        assert_eq!(payload.pop(), Some(0), "no map");
        payload[0] = OP_CREATE_FORMATTED;
        let decoded = Op::decode_all(Bytes::from(payload)).unwrap();
        assert_eq!(decoded[0].op, op);
    }

    /// A collection whose bucket array keeps rollups: its span survives the op, and a
    /// schema op of hot log version 7 (op 15, without rollups) still reads.
    #[test]
    fn rollups_survive_the_schema_ops() {
        let hourly = crate::catalog::Layout::Bucket {
            max_items: 60,
            span: Some(3600),
        };
        let spec = CollectionSpec::new("sensors")
            .array("t", hourly)
            .array("u", hourly)
            .rollup("u", 86_400);
        let create = Op::CreateCollection {
            id: 3,
            spec: spec.clone(),
        };
        let set = Op::SetCollection(CollectionInfo::new(3, spec.clone()));
        for op in [create, set] {
            let mut payload = Vec::new();
            op.encode(&mut payload);
            let decoded = Op::decode_all(Bytes::from(payload)).unwrap();
            assert_eq!(decoded[0].op, op);
        }
        let plain = CollectionInfo::new(3, CollectionSpec::new("sensors").array("t", hourly));
        let mut payload = Vec::new();
        Op::SetCollection(plain.clone()).encode(&mut payload);
        assert_eq!(payload[0], OP_SET_COLLECTION_ROLLED_UP);
        // Op 15 had the layout states right after the map: take the rollup span out.
        let spec_end = 1 + 4 + plain.spec.encoded_len();
        payload.drain(spec_end - 8..spec_end);
        payload[0] = OP_SET_COLLECTION_MIGRATING;
        let decoded = Op::decode_all(Bytes::from(payload)).unwrap();
        assert_eq!(decoded[0].op, Op::SetCollection(plain));
    }

    fn patch_payload(old_len: u32, edits: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        Op::Patch {
            key: Bytes::from_static(b"k"),
            old_len,
            edits: edits
                .iter()
                .map(|&(at, remove, insert)| Edit {
                    at,
                    remove,
                    insert: Bytes::copy_from_slice(insert),
                })
                .collect(),
        }
        .encode(&mut out);
        out
    }

    #[test]
    fn patches_that_do_not_fit_their_value_are_refused() {
        let decode = |old_len, edits: &[(u32, u32, &[u8])]| {
            Op::decode_all(Bytes::from(patch_payload(old_len, edits)))
        };
        assert!(decode(10, &[(0, 2, b""), (4, 0, b"x"), (10, 0, b"end")]).is_ok());
        // No edit; an empty edit; out of order; touching the previous; past the end.
        assert!(decode(10, &[]).is_err());
        assert!(decode(10, &[(3, 0, b"")]).is_err());
        assert!(decode(10, &[(5, 1, b"a"), (2, 1, b"b")]).is_err());
        assert!(decode(10, &[(2, 2, b"a"), (4, 1, b"b")]).is_err());
        assert!(decode(10, &[(8, 3, b"")]).is_err());
        assert!(decode(MAX_RECORD_BYTES as u32 + 1, &[(0, 1, b"")]).is_err());
        assert!(decode(MAX_RECORD_BYTES as u32, &[(0, 0, b"x")]).is_err());
        let Op::Patch { edits, .. } = &decode(10, &[(1, 2, b"")]).unwrap()[0].op else {
            panic!("a patch");
        };
        assert_eq!(apply_patch(b"0123456789", 10, edits).unwrap(), b"03456789");
        assert!(apply_patch(b"012345678", 10, edits).is_err());
    }

    fn item(key: i64, payload: usize) -> crate::item::Stored {
        crate::item::Stored {
            item: crate::item::Item {
                key,
                value: (key % 3 == 0).then_some(key as f64),
                payload: Bytes::from(vec![key as u8; payload]),
                more: None,
            },
            seq: key as u64,
        }
    }

    fn items_plus(
        items: &[crate::item::Stored],
        last: crate::item::Stored,
    ) -> Vec<crate::item::Stored> {
        let mut all = items.to_vec();
        all.push(last);
        all
    }

    fn item_list(items: &[crate::item::Stored]) -> (Vec<u8>, Vec<usize>) {
        let mut value = Vec::new();
        crate::item::encode_items(items, &mut value);
        let mut ends = Vec::new();
        crate::item::part_ends(&mut Bytes::from(value.clone()), 0, &mut ends).unwrap();
        (value, ends)
    }

    #[test]
    fn a_window_that_slides_patches_the_items_that_changed() {
        let items: Vec<_> = (0..6).map(|k| item(k, 300)).collect();
        let (old, old_ends) = item_list(&items[..5]);
        let (new, new_ends) = item_list(&items[1..]);
        let edits = diff(&old, &old_ends, &new, &new_ends).unwrap();
        assert_eq!(apply_patch(&old, old.len() as u32, &edits).unwrap(), new);
        // The oldest item leaves, the newest comes: about one item's bytes.
        let inserted: usize = edits.iter().map(|e| e.insert.len()).sum();
        assert!(inserted < 350, "{edits:?}");
        assert_eq!(diff(&old, &old_ends, &old, &old_ends), Some(Vec::new()));
        // A long value changed throughout: no patch, whatever the counts.
        let firsts: Vec<_> = (0..40).map(|k| item(k, 1)).collect();
        let seconds: Vec<_> = (100..140).map(|k| item(k, 1)).collect();
        let (first, first_ends) = item_list(&firsts);
        let (second, second_ends) = item_list(&seconds);
        assert_eq!(diff(&first, &first_ends, &second, &second_ends), None);
        let (one_more, one_more_ends) = item_list(&items_plus(&firsts, item(40, 1)));
        assert_eq!(
            diff(&first, &first_ends, &one_more, &one_more_ends).map(|e| e.len()),
            Some(2)
        );
        // The part counts differ too much: no patch.
        let others: Vec<_> = (100..200).map(|k| item(k, 1)).collect();
        let (other, other_ends) = item_list(&others);
        assert_eq!(diff(&old, &old_ends, &other, &other_ends), None);
    }

    #[test]
    fn parts_changed_in_place_are_patched_where_they_are() {
        let old_items: Vec<_> = (0..40).map(|k| item(k, 20)).collect();
        let mut new_items = old_items.clone();
        new_items[10] = item(10, 21);
        new_items[30] = item(30, 19);
        new_items.push(item(40, 20));
        let (old, old_ends) = item_list(&old_items);
        let (new, new_ends) = item_list(&new_items);
        let edits = diff(&old, &old_ends, &new, &new_ends).unwrap();
        assert_eq!(apply_patch(&old, old.len() as u32, &edits).unwrap(), new);
        // The count, the two items and the one more at the end; each edit in its place.
        let starts: Vec<u32> = edits.iter().map(|e| e.at).collect();
        let item_start = |i: usize| old_ends[i] as u32;
        assert_eq!(
            starts,
            [0, item_start(10), item_start(30), old.len() as u32]
        );
        let inserted: Vec<usize> = edits.iter().map(|e| e.insert.len()).collect();
        let item_len = |i: usize| new_ends[i + 1] - new_ends[i];
        assert_eq!(inserted, [4, item_len(10), item_len(30), item_len(40)]);
    }

    /// The patch from `old` to `new` when the diff finds one: it round-trips through the
    /// decoder and rebuilds `new`.
    fn check_patch(old: &[crate::item::Stored], new: &[crate::item::Stored]) -> bool {
        let (old, old_ends) = item_list(old);
        let (new, new_ends) = item_list(new);
        let Some(edits) = diff(&old, &old_ends, &new, &new_ends) else {
            return false;
        };
        if !edits.is_empty() {
            let patch = Op::Patch {
                key: Bytes::from_static(b"k"),
                old_len: old.len() as u32,
                edits: edits.clone(),
            };
            let mut payload = Vec::new();
            patch.encode(&mut payload);
            // What the writer makes, the decoder takes back unchanged.
            let decoded = Op::decode_all(Bytes::from(payload)).unwrap();
            assert_eq!(&decoded[0].op, &patch);
        }
        assert_eq!(apply_patch(&old, old.len() as u32, &edits).unwrap(), new);
        true
    }

    proptest::proptest! {
        #[test]
        fn diff_then_patch_rebuilds_the_new_value(
            old_keys in proptest::collection::vec(0i64..40, 0..30),
            new_keys in proptest::collection::vec(0i64..40, 0..30),
            payload in 0usize..40,
        ) {
            let old_items: Vec<_> = old_keys.iter().map(|&k| item(k, payload)).collect();
            let new_items: Vec<_> = new_keys.iter().map(|&k| item(k, payload)).collect();
            check_patch(&old_items, &new_items);
        }

        #[test]
        fn items_replaced_where_they_are_and_a_changed_end_are_patched(
            old_keys in proptest::collection::vec(0i64..40, 0..60),
            replaced in proptest::collection::vec((0usize..60, 40i64..80), 0..4),
            end in proptest::collection::vec(80i64..90, 0..5),
            cut in 0usize..3,
        ) {
            let old_items: Vec<_> = old_keys.iter().map(|&k| item(k, 3)).collect();
            let mut new_items = old_items.clone();
            for &(at, key) in &replaced {
                if at < new_items.len() {
                    new_items[at] = item(key, 3);
                }
            }
            new_items.truncate(new_items.len().saturating_sub(cut));
            new_items.extend(end.iter().map(|&k| item(k, 3)));
            // Parts: the item count, then the items. Few enough unequal pairs: compared in
            // place, a patch must come; otherwise the diff decides. Either way, a patch
            // rebuilds the new value.
            let pairs = 1 + old_items.len().min(new_items.len());
            let unequal = usize::from(old_items.len() != new_items.len())
                + old_items.iter().zip(&new_items).filter(|(a, b)| a != b).count();
            let patched = check_patch(&old_items, &new_items);
            if unequal <= MIN_IN_PLACE_CHANGES.max(pairs / 8) {
                proptest::prop_assert!(patched);
            }
        }

        #[test]
        fn a_value_edited_in_places_is_patched(
            old_keys in proptest::collection::vec(0i64..40, 0..60),
            kept in proptest::collection::vec(proptest::bool::weighted(0.9), 60),
            inserted in proptest::collection::vec((0usize..60, 40i64..80), 0..6),
        ) {
            let old_items: Vec<_> = old_keys.iter().map(|&k| item(k, 3)).collect();
            let mut new_items: Vec<_> = old_items
                .iter()
                .zip(&kept)
                .filter(|(_, keep)| **keep)
                .map(|(item, _)| item.clone())
                .collect();
            for &(at, key) in &inserted {
                new_items.insert(at.min(new_items.len()), item(key, 3));
            }
            // Two parts or fewer gone and two or fewer new: at most two of the eight probes
            // miss, so a patch comes.
            let dropped = kept.iter().take(old_keys.len()).filter(|k| !**k).count();
            if dropped <= 2 && inserted.len() <= 2 {
                proptest::prop_assert!(check_patch(&old_items, &new_items));
            } else {
                check_patch(&old_items, &new_items);
            }
        }
    }
}
