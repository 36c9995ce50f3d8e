//! Redo operations: what a committed batch logs, in the frames of the hot log.
//! The one place that encodes and decodes them; see `format-spec/hot-log.md`.

use bytes::{Buf, BufMut, Bytes};

use crate::MAX_RECORD_BYTES;
use crate::catalog::{CollectionId, CollectionSpec};
use crate::cold::ChunkLoc;
use crate::page::keys::MAX_TREE_KEY_BYTES;

const OP_CREATE_COLLECTION: u8 = 1;
const OP_PUT: u8 = 2;
const OP_DELETE: u8 = 3;
const OP_DELETE_RANGE: u8 = 4;
const OP_COLD_CHUNK: u8 = 5;

/// One change to the database. Physical at the record level: replay never recomputes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    CreateCollection {
        id: CollectionId,
        spec: CollectionSpec,
    },
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
    /// The batch wrote this cold chunk; replay checks it survived.
    ColdChunk(ChunkLoc),
}

/// A decoded op and, for `Put`, the offset of the value's bytes in the payload.
pub struct DecodedOp {
    pub op: Op,
    pub value_offset: usize,
}

fn put_key(out: &mut Vec<u8>, key: &[u8]) {
    out.put_u16_le(key.len() as u16);
    out.put_slice(key);
}

impl Op {
    /// Appends the op; returns the offset of a `Put`'s value bytes within `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> usize {
        match self {
            Op::CreateCollection { id, spec } => {
                out.put_u8(OP_CREATE_COLLECTION);
                out.put_u32_le(*id);
                spec.encode(out);
                0
            }
            Op::Put { key, value } => {
                out.put_u8(OP_PUT);
                put_key(out, key);
                out.put_u32_le(value.len() as u32);
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
        }
    }

    /// The bytes [`Op::encode`] appends.
    pub fn encoded_len(&self) -> usize {
        1 + match self {
            Op::CreateCollection { spec, .. } => 4 + spec.encoded_len(),
            Op::Put { key, value } => 2 + key.len() + 4 + value.len(),
            Op::Delete { key } => 2 + key.len(),
            Op::DeleteRange { start, end } => 4 + start.len() + end.len(),
            Op::ColdChunk(_) => ChunkLoc::ENCODED_BYTES,
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
                OP_CREATE_COLLECTION => {
                    need(&bytes, 4)?;
                    let id = bytes.get_u32_le();
                    Op::CreateCollection {
                        id,
                        spec: CollectionSpec::decode(&mut bytes)?,
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
                tag => return Err(format!("unknown redo op {tag}")),
            };
            ops.push(DecodedOp { op, value_offset });
        }
        Ok(ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_with_value_offsets() {
        let ops = vec![
            Op::CreateCollection {
                id: 3,
                spec: CollectionSpec::new("users").array("f", crate::Layout::Subset { keep: 5 }),
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
        assert_eq!(decoded[1].value_offset, offsets[1]);
        assert_eq!(&payload[offsets[1]..offsets[1] + 6], b"record");
        for len in 1..payload.len() {
            let cut = Op::decode_all(Bytes::copy_from_slice(&payload[..len]));
            assert_eq!(cut.is_ok(), boundaries.contains(&len), "cut at {len}");
        }
    }
}
