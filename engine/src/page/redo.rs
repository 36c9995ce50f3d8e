//! Redo operations: what a committed batch logs, in the frames of the hot log.
//! The one place that encodes and decodes them; see `format-spec/hot-log.md`.

use bytes::{Buf, BufMut, Bytes};

use crate::catalog::{CollectionId, CollectionSpec};
use crate::{MAX_KEY_BYTES, MAX_RECORD_BYTES};

const OP_CREATE_COLLECTION: u8 = 1;
const OP_PUT_RECORD: u8 = 2;
const OP_DELETE_RECORD: u8 = 3;

/// One change to the database. Record-level and physical: replay never recomputes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    CreateCollection {
        id: CollectionId,
        spec: CollectionSpec,
    },
    /// Sets the parent record of `key` in `collection` to `record`.
    PutRecord {
        collection: CollectionId,
        key: Bytes,
        record: Bytes,
    },
    DeleteRecord {
        collection: CollectionId,
        key: Bytes,
    },
}

/// A decoded op and, for `PutRecord`, the offset of the record's bytes in the payload.
pub struct DecodedOp {
    pub op: Op,
    pub record_offset: usize,
}

impl Op {
    /// Appends the op; returns the offset of a `PutRecord`'s record bytes within `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> usize {
        match self {
            Op::CreateCollection { id, spec } => {
                out.put_u8(OP_CREATE_COLLECTION);
                out.put_u32_le(*id);
                spec.encode(out);
                0
            }
            Op::PutRecord {
                collection,
                key,
                record,
            } => {
                out.put_u8(OP_PUT_RECORD);
                out.put_u32_le(*collection);
                out.put_u16_le(key.len() as u16);
                out.put_slice(key);
                out.put_u32_le(record.len() as u32);
                let offset = out.len();
                out.put_slice(record);
                offset
            }
            Op::DeleteRecord { collection, key } => {
                out.put_u8(OP_DELETE_RECORD);
                out.put_u32_le(*collection);
                out.put_u16_le(key.len() as u16);
                out.put_slice(key);
                0
            }
        }
    }

    /// The bytes [`Op::encode`] appends.
    pub fn encoded_len(&self) -> usize {
        match self {
            Op::CreateCollection { spec, .. } => 1 + 4 + 1 + spec.name().len() + 2,
            Op::PutRecord { key, record, .. } => 1 + 4 + 2 + key.len() + 4 + record.len(),
            Op::DeleteRecord { key, .. } => 1 + 4 + 2 + key.len(),
        }
    }

    /// Decodes every op of a frame payload, checking each length before slicing.
    pub fn decode_all(payload: Bytes) -> Result<Vec<DecodedOp>, String> {
        let total = payload.len();
        let mut bytes = payload;
        let mut ops = Vec::new();
        let need = |bytes: &Bytes, n: usize| {
            if bytes.remaining() < n {
                Err("redo op truncated".to_string())
            } else {
                Ok(())
            }
        };
        while bytes.has_remaining() {
            need(&bytes, 5)?;
            let tag = bytes.get_u8();
            let collection = bytes.get_u32_le();
            let key = |bytes: &mut Bytes| -> Result<Bytes, String> {
                need(bytes, 2)?;
                let len = bytes.get_u16_le() as usize;
                if len > MAX_KEY_BYTES {
                    return Err(format!("redo key of {len} bytes over the limit"));
                }
                need(bytes, len)?;
                Ok(bytes.split_to(len))
            };
            let decoded = match tag {
                OP_CREATE_COLLECTION => DecodedOp {
                    op: Op::CreateCollection {
                        id: collection,
                        spec: CollectionSpec::decode(&mut bytes)?,
                    },
                    record_offset: 0,
                },
                OP_PUT_RECORD => {
                    let key = key(&mut bytes)?;
                    need(&bytes, 4)?;
                    let len = bytes.get_u32_le() as usize;
                    if len > MAX_RECORD_BYTES {
                        return Err(format!("redo record of {len} bytes over the limit"));
                    }
                    need(&bytes, len)?;
                    let record_offset = total - bytes.remaining();
                    DecodedOp {
                        op: Op::PutRecord {
                            collection,
                            key,
                            record: bytes.split_to(len),
                        },
                        record_offset,
                    }
                }
                OP_DELETE_RECORD => DecodedOp {
                    op: Op::DeleteRecord {
                        collection,
                        key: key(&mut bytes)?,
                    },
                    record_offset: 0,
                },
                tag => return Err(format!("unknown redo op {tag}")),
            };
            ops.push(decoded);
        }
        Ok(ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_with_record_offsets() {
        let ops = vec![
            Op::CreateCollection {
                id: 3,
                spec: CollectionSpec::new("users"),
            },
            Op::PutRecord {
                collection: 3,
                key: Bytes::from_static(b"k"),
                record: Bytes::from_static(b"record"),
            },
            Op::DeleteRecord {
                collection: 3,
                key: Bytes::from_static(b"k"),
            },
        ];
        let mut payload = Vec::new();
        let mut offsets = Vec::new();
        for op in &ops {
            let before = payload.len();
            offsets.push(op.encode(&mut payload));
            assert_eq!(payload.len() - before, op.encoded_len());
        }
        let decoded = Op::decode_all(Bytes::from(payload.clone())).unwrap();
        assert_eq!(
            decoded.iter().map(|d| d.op.clone()).collect::<Vec<_>>(),
            ops
        );
        assert_eq!(decoded[1].record_offset, offsets[1]);
        assert_eq!(&payload[offsets[1]..offsets[1] + 6], b"record");
        for len in 1..payload.len() {
            let cut = Op::decode_all(Bytes::copy_from_slice(&payload[..len]));
            let complete = [
                0usize,
                ops[0].encoded_len(),
                ops[0].encoded_len() + ops[1].encoded_len(),
            ];
            assert_eq!(cut.is_ok(), complete.contains(&len), "cut at {len}");
        }
    }
}
