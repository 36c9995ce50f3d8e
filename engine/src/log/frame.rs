//! Record framing of the hot log: the one place that encodes and decodes frame headers and
//! segment headers. See `format-spec/hot-log.md`.

use crate::limits::widths::u32_len;
use crate::storage::Storage;
use crate::{
    error::{Error, Result},
    limits::MAX_RECORD_BYTES,
};

/// Bytes of a frame header: payload length, CRC32, kind, lsn, durable lsn.
pub const FRAME_HEADER_BYTES: usize = 4 + 4 + 1 + 8 + 8;
/// The largest frame payload: one record at the limit plus room for its key and framing.
pub const MAX_FRAME_PAYLOAD: usize = MAX_RECORD_BYTES + 64 * 1024;

/// Bytes of a segment header.
pub const SEGMENT_HEADER_BYTES: usize = 32;
const SEGMENT_MAGIC: &[u8; 8] = b"SKEWHOT\0";
/// The hot log format version this build writes.
pub const LOG_VERSION: u32 = 8;
/// The oldest version this build reads. Frames of every version are alike; a version marks
/// the redo a log may hold, so that a build from before it refuses such a log by its version
/// instead of failing on the first op or byte it does not know: 2, redo ops 6 (patch) and 7
/// (cold bytes) (logs of version 1 written before that bump may hold them too: they are read
/// alike); 3, op 8 (a collection with measures), and items, records and chunks with values
/// of several measures; 4, op 9 (a collection with its document format); 5, op 10 (a
/// collection with its document map); 6, ops 11 to 14 (schema changes) and parent records
/// whose array states carry their slots; 7, op 15 (a collection's schema with its arrays'
/// layout states) and array states with a layout parity; 8, ops 16 and 17 (specs with
/// their arrays' rollup spans) and rollup records (array record kind 2).
pub const OLDEST_LOG_VERSION: u32 = 1;

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// Operations of a batch that continues in the next frame.
    BatchPart = 1,
    /// The last (or only) frame of a batch: the batch commits when this frame is valid.
    BatchEnd = 2,
    /// A page image written by a checkpoint.
    Page = 3,
}

impl FrameKind {
    /// The kind a frame header's kind byte names, if any.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(FrameKind::BatchPart),
            2 => Some(FrameKind::BatchEnd),
            3 => Some(FrameKind::Page),
            _ => None,
        }
    }
}

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    pub payload_len: u32,
    pub crc: u32,
    pub kind: FrameKind,
    pub lsn: u64,
    /// Every frame with an lsn up to this one was durable when this frame was written.
    pub durable_lsn: u64,
}

fn frame_crc(header: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&header[0..4]);
    hasher.update(&header[8..FRAME_HEADER_BYTES]);
    hasher.update(payload);
    hasher.finalize()
}

/// Appends a frame header placeholder; returns its position for [`finish_frame`].
pub fn begin_frame(buf: &mut Vec<u8>) -> usize {
    let start = buf.len();
    buf.resize(start + FRAME_HEADER_BYTES, 0);
    start
}

/// Fills in the header of the frame begun at `start`, whose payload is the rest of `buf`.
pub fn finish_frame(buf: &mut [u8], start: usize, kind: FrameKind, lsn: u64, durable_lsn: u64) {
    let payload_len = buf.len() - start - FRAME_HEADER_BYTES;
    assert!(
        payload_len <= MAX_FRAME_PAYLOAD,
        "frame payload over the limit"
    );
    let (header, payload) = buf[start..].split_at_mut(FRAME_HEADER_BYTES);
    header[0..4].copy_from_slice(&u32_len(payload_len).to_le_bytes());
    header[8] = kind as u8;
    header[9..17].copy_from_slice(&lsn.to_le_bytes());
    header[17..25].copy_from_slice(&durable_lsn.to_le_bytes());
    let crc = frame_crc(header, payload);
    header[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// Why a frame could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadFrame {
    /// The header names a frame kind that does not exist.
    UnknownKind(u8),
    /// The header's payload length is over the limit.
    TooLong(u32),
    /// The header's durable lsn is not below its own lsn.
    DurableNotBelow { durable_lsn: u64, lsn: u64 },
    /// The frame would extend past the end of the file.
    Truncated,
    /// The checksum does not match.
    Checksum,
}

impl BadFrame {
    pub fn describe(&self) -> String {
        match self {
            BadFrame::UnknownKind(kind) => format!("bad frame header: unknown frame kind {kind}"),
            BadFrame::TooLong(len) => {
                format!("bad frame header: payload length {len} over the limit {MAX_FRAME_PAYLOAD}")
            }
            BadFrame::DurableNotBelow { durable_lsn, lsn } => {
                format!("bad frame header: durable lsn {durable_lsn} not below lsn {lsn}")
            }
            BadFrame::Truncated => "frame extends past the end of the file".to_string(),
            BadFrame::Checksum => "frame checksum mismatch".to_string(),
        }
    }
}

/// Decodes a header; `available` is how many bytes the file holds from the header's start.
pub fn decode_header(bytes: &[u8], available: u64) -> Result<FrameHeader, BadFrame> {
    if bytes.len() < FRAME_HEADER_BYTES || available < FRAME_HEADER_BYTES as u64 {
        return Err(BadFrame::Truncated);
    }
    let payload_len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    let kind = FrameKind::from_byte(bytes[8]).ok_or(BadFrame::UnknownKind(bytes[8]))?;
    let lsn = u64::from_le_bytes(bytes[9..17].try_into().expect("8 bytes"));
    let durable_lsn = u64::from_le_bytes(bytes[17..25].try_into().expect("8 bytes"));
    if payload_len as usize > MAX_FRAME_PAYLOAD {
        return Err(BadFrame::TooLong(payload_len));
    }
    if durable_lsn >= lsn {
        return Err(BadFrame::DurableNotBelow { durable_lsn, lsn });
    }
    if FRAME_HEADER_BYTES as u64 + payload_len as u64 > available {
        return Err(BadFrame::Truncated);
    }
    Ok(FrameHeader {
        payload_len,
        crc,
        kind,
        lsn,
        durable_lsn,
    })
}

/// Checks a payload against its header's checksum.
pub fn check_payload(header_bytes: &[u8], payload: &[u8]) -> Result<(), BadFrame> {
    let expected = u32::from_le_bytes(header_bytes[4..8].try_into().expect("4 bytes"));
    if frame_crc(header_bytes, payload) == expected {
        Ok(())
    } else {
        Err(BadFrame::Checksum)
    }
}

/// A decoded segment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    pub segment_id: u32,
    pub first_lsn: u64,
}

/// Reads and checks the header of segment file `name`, which must name segment `id`.
pub fn read_segment_header(storage: &dyn Storage, name: &str, id: u32) -> Result<SegmentHeader> {
    let len = storage.len(name)?;
    if len < SEGMENT_HEADER_BYTES as u64 {
        return Err(Error::corruption(name, 0, "segment header truncated"));
    }
    let bytes = storage.read_vec(name, 0, SEGMENT_HEADER_BYTES)?;
    let header = decode_segment_header(&bytes, name)?;
    if header.segment_id != id {
        return Err(Error::corruption(
            name,
            12,
            format!("segment header names segment {}", header.segment_id),
        ));
    }
    Ok(header)
}

pub fn encode_segment_header(header: SegmentHeader) -> [u8; SEGMENT_HEADER_BYTES] {
    let mut bytes = [0u8; SEGMENT_HEADER_BYTES];
    bytes[0..8].copy_from_slice(SEGMENT_MAGIC);
    bytes[8..12].copy_from_slice(&LOG_VERSION.to_le_bytes());
    bytes[12..16].copy_from_slice(&header.segment_id.to_le_bytes());
    bytes[16..24].copy_from_slice(&header.first_lsn.to_le_bytes());
    let crc = crc32fast::hash(&bytes[0..28]);
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
    bytes
}

pub fn decode_segment_header(bytes: &[u8], file: &str) -> Result<SegmentHeader, Error> {
    let bad = |reason: &str| Error::corruption(file, 0, reason);
    if bytes.len() < SEGMENT_HEADER_BYTES {
        return Err(bad("segment header truncated"));
    }
    let crc = u32::from_le_bytes(bytes[28..32].try_into().expect("4 bytes"));
    if crc32fast::hash(&bytes[0..28]) != crc {
        return Err(bad("segment header checksum mismatch"));
    }
    if &bytes[0..8] != SEGMENT_MAGIC {
        return Err(bad("not a hot log segment (bad magic)"));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if !(OLDEST_LOG_VERSION..=LOG_VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion {
            file: file.to_string(),
            found: version,
            supported: LOG_VERSION,
        });
    }
    Ok(SegmentHeader {
        segment_id: u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")),
        first_lsn: u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes")),
    })
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use super::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        let start = begin_frame(&mut buf);
        buf.extend_from_slice(payload);
        finish_frame(&mut buf, start, FrameKind::BatchEnd, 7, 3);
        buf
    }

    #[test]
    fn frame_round_trip() {
        let buf = frame(b"hello");
        let header = decode_header(&buf, buf.len() as u64).unwrap();
        assert_eq!(header.kind, FrameKind::BatchEnd);
        assert_eq!(
            (header.lsn, header.durable_lsn, header.payload_len),
            (7, 3, 5)
        );
        check_payload(&buf, &buf[FRAME_HEADER_BYTES..]).unwrap();
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        let buf = frame(b"some payload bytes");
        for byte in 0..buf.len() {
            for bit in 0..8 {
                let mut damaged = buf.clone();
                damaged[byte] ^= 1 << bit;
                let ok = decode_header(&damaged, damaged.len() as u64)
                    .is_ok_and(|_| check_payload(&damaged, &damaged[FRAME_HEADER_BYTES..]).is_ok());
                assert!(!ok, "flip of bit {bit} in byte {byte} went unnoticed");
            }
        }
    }

    #[test]
    fn length_over_limit_or_past_end_is_bad() {
        let mut buf = frame(b"x");
        assert_eq!(
            decode_header(&buf, buf.len() as u64 - 1),
            Err(BadFrame::Truncated)
        );
        buf[0..4].copy_from_slice(&(MAX_FRAME_PAYLOAD as u32 + 1).to_le_bytes());
        assert_eq!(
            decode_header(&buf, u64::MAX),
            Err(BadFrame::TooLong(MAX_FRAME_PAYLOAD as u32 + 1))
        );
    }

    #[test]
    fn impossible_header_fields_are_named() {
        let mut unknown = frame(b"x");
        unknown[8] = 0xEE;
        let bad = decode_header(&unknown, u64::MAX).unwrap_err();
        assert_eq!(bad, BadFrame::UnknownKind(0xEE));
        assert!(bad.describe().contains("unknown frame kind 238"));

        let mut backwards = frame(b"x");
        backwards[17..25].copy_from_slice(&7u64.to_le_bytes());
        let bad = decode_header(&backwards, u64::MAX).unwrap_err();
        assert_eq!(
            bad,
            BadFrame::DurableNotBelow {
                durable_lsn: 7,
                lsn: 7
            }
        );
        assert!(bad.describe().contains("durable lsn 7 not below lsn 7"));
    }

    #[test]
    fn segment_header_round_trip_and_damage() {
        let header = SegmentHeader {
            segment_id: 4,
            first_lsn: 99,
        };
        let bytes = encode_segment_header(header);
        assert_eq!(decode_segment_header(&bytes, "f").unwrap(), header);
        let mut damaged = bytes;
        damaged[13] ^= 1;
        assert!(
            decode_segment_header(&damaged, "f")
                .unwrap_err()
                .is_corruption()
        );
    }

    #[test]
    fn versions_one_to_eight_are_read_and_others_refused() {
        let header = SegmentHeader {
            segment_id: 4,
            first_lsn: 99,
        };
        let written = encode_segment_header(header);
        assert_eq!(u32::from_le_bytes(written[8..12].try_into().unwrap()), 8);
        let with_version = |version: u32| {
            let mut bytes = written;
            bytes[8..12].copy_from_slice(&version.to_le_bytes());
            let crc = crc32fast::hash(&bytes[0..28]);
            bytes[28..32].copy_from_slice(&crc.to_le_bytes());
            decode_segment_header(&bytes, "f")
        };
        assert_eq!(with_version(1).unwrap(), header);
        assert_eq!(with_version(2).unwrap(), header);
        assert_eq!(with_version(3).unwrap(), header);
        assert_eq!(with_version(4).unwrap(), header);
        assert_eq!(with_version(5).unwrap(), header);
        assert_eq!(with_version(6).unwrap(), header);
        assert_eq!(with_version(7).unwrap(), header);
        assert_eq!(with_version(8).unwrap(), header);
        for version in [0, 9, u32::MAX] {
            match with_version(version) {
                Err(Error::UnsupportedVersion {
                    found, supported, ..
                }) => assert_eq!((found, supported), (version, 8)),
                other => panic!("version {version}: {other:?}"),
            }
        }
    }
}
