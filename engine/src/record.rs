//! The parent record: what a leaf (or a large record) holds for one parent document.
//! The one place that encodes and decodes it; see `format-spec/records.md`.

use bytes::{Buf, BufMut, Bytes};

use crate::MAX_RECORD_BYTES;

const RECORD_VERSION: u8 = 1;
/// Bytes a parent record adds to its body: version, body length, array count.
pub const RECORD_OVERHEAD_BYTES: usize = 1 + 4 + 2;

/// The bytes of the parent record holding `body`; the caller checks the limit.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORD_OVERHEAD_BYTES + body.len());
    out.put_u8(RECORD_VERSION);
    out.put_u32_le(body.len() as u32);
    out.put_slice(body);
    // Inline arrays come with the pattern layouts; none yet.
    out.put_u16_le(0);
    out
}

/// The size of the parent record holding a body of `body_len` bytes.
pub fn encoded_len(body_len: usize) -> u64 {
    (RECORD_OVERHEAD_BYTES + body_len) as u64
}

/// The body of a parent record.
pub fn decode_body(mut bytes: Bytes) -> Result<Bytes, String> {
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(format!("record of {} bytes over the limit", bytes.len()));
    }
    if bytes.remaining() < RECORD_OVERHEAD_BYTES {
        return Err("record truncated".to_string());
    }
    let version = bytes.get_u8();
    if version != RECORD_VERSION {
        return Err(format!("unknown record version {version}"));
    }
    let body_len = bytes.get_u32_le() as usize;
    if bytes.remaining() < body_len + 2 {
        return Err(format!(
            "record body of {body_len} bytes past the record's end"
        ));
    }
    let body = bytes.split_to(body_len);
    let arrays = bytes.get_u16_le();
    if arrays != 0 || bytes.has_remaining() {
        return Err("record has unknown trailing fields".to_string());
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let record = encode(b"hello");
        assert_eq!(record.len() as u64, encoded_len(5));
        assert_eq!(
            decode_body(Bytes::from(record.clone())).unwrap(),
            &b"hello"[..]
        );
        for len in 0..record.len() {
            assert!(decode_body(Bytes::copy_from_slice(&record[..len])).is_err());
        }
    }
}
