//! Cold segment and chunk bytes: the one place that encodes and decodes them. See
//! `format-spec/cold.md`.

use crate::limits::widths::{u8_len, u32_len};
use bytes::{Buf, BufMut, Bytes};

use super::columns;
use super::items::ChunkItems;
use crate::item::{self, MEASURE_SUMMARY_BYTES, SUMMARY_BYTES, Stored, Summary};
use crate::{error::Error, limits::MAX_RECORD_BYTES};

pub const SEGMENT_HEADER_BYTES: usize = 32;
const SEGMENT_MAGIC: &[u8; 8] = b"SKEWCOLD";
/// The cold segment version this build writes: 3, whose sealed buckets are columnar (the
/// kind byte's bit 7). Version 2 segments (whose chunks' kind bytes may say that their
/// summaries hold further measures) and version 1 segments (whose chunks all have one
/// measure, the same bytes otherwise) are still read: their chunks are version 3 chunks.
pub const COLD_VERSION: u32 = 3;
const OLDEST_COLD_VERSION: u32 = 1;
/// Bytes of the fields every chunk header starts with: compressed length, CRC32, kind, raw
/// length. A columnar chunk's header is only these.
const HEADER_FIELDS_BYTES: usize = 4 + 4 + 1 + 4;
/// Bytes of a row chunk's header whose summary has one measure: the fields, then the
/// summary. Each further measure stored adds `MEASURE_SUMMARY_BYTES`.
pub const CHUNK_HEADER_BYTES: usize = HEADER_FIELDS_BYTES + SUMMARY_BYTES;
/// The kind byte of a chunk's header and index entry: the kind in its low 4 bits, the
/// number of further measures its summary stores in bits 4 to 6, and bit 7 set when the
/// payload is a columnar item list (`columns.rs`).
const MORE_SHIFT: u32 = 4;
const MORE_MASK: u8 = 0x70;
const COLUMNAR: u8 = 0x80;
/// zstd level for chunks: fast, and most of the gain.
const ZSTD_LEVEL: i32 = 3;

/// The file name of cold segment `segment_id`.
pub fn segment_name(segment_id: u32) -> String {
    crate::storage::segment_file_name("cold-", segment_id, ".seg")
}

pub fn parse_segment_name(name: &str) -> Option<u32> {
    crate::storage::parse_segment_file_name(name, "cold-", ".seg")
}

pub fn encode_segment_header(segment_id: u32) -> [u8; SEGMENT_HEADER_BYTES] {
    let mut bytes = [0u8; SEGMENT_HEADER_BYTES];
    bytes[0..8].copy_from_slice(SEGMENT_MAGIC);
    bytes[8..12].copy_from_slice(&COLD_VERSION.to_le_bytes());
    bytes[12..16].copy_from_slice(&segment_id.to_le_bytes());
    let crc = crc32fast::hash(&bytes[0..28]);
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
    bytes
}

/// Checks a cold segment's header; returns its version.
pub fn check_segment_header(bytes: &[u8], segment_id: u32) -> Result<u32, Error> {
    let name = segment_name(segment_id);
    let bad = |reason: &str| Error::corruption(&name, 0, reason);
    if bytes.len() < SEGMENT_HEADER_BYTES {
        return Err(bad("cold segment header truncated"));
    }
    let crc = u32::from_le_bytes(bytes[28..32].try_into().expect("4 bytes"));
    if crc32fast::hash(&bytes[0..28]) != crc || &bytes[0..8] != SEGMENT_MAGIC {
        return Err(bad("cold segment header damaged"));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if !(OLDEST_COLD_VERSION..=COLD_VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion {
            file: name,
            found: version,
            supported: COLD_VERSION,
        });
    }
    if u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) != segment_id {
        return Err(bad("cold segment header names another segment"));
    }
    Ok(version)
}

/// What a chunk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ChunkKind {
    /// Items on their way out of a parent: Subset history, Outlier overflow, Reference items,
    /// Bucket items older than the open bucket.
    Items = 1,
    /// A sealed bucket.
    Bucket = 2,
}

impl ChunkKind {
    /// The kind byte of a chunk with `summary`.
    fn byte(self, summary: &Summary, columnar: bool) -> u8 {
        self as u8
            | u8_len(summary.stored_more()) << MORE_SHIFT
            | if columnar { COLUMNAR } else { 0 }
    }

    /// The kind, the number of further measure summaries and the payload's form a kind
    /// byte says.
    fn from_byte(byte: u8) -> Result<KindByte, String> {
        let kind = match byte & !(MORE_MASK | COLUMNAR) {
            1 => ChunkKind::Items,
            2 => ChunkKind::Bucket,
            _ => return Err(format!("unknown chunk kind {byte:#04x}")),
        };
        Ok(KindByte {
            kind,
            more: ((byte & MORE_MASK) >> MORE_SHIFT) as usize,
            columnar: byte & COLUMNAR != 0,
        })
    }

    /// Whether this build writes chunks of this kind columnar.
    fn columnar(self) -> bool {
        self == ChunkKind::Bucket
    }
}

/// What a kind byte says.
struct KindByte {
    kind: ChunkKind,
    more: usize,
    columnar: bool,
}

/// Bytes of the header of a chunk whose summary stores `more` further measures: a row
/// chunk's repeats its summary, a columnar chunk's does not.
fn header_len(more: usize, columnar: bool) -> usize {
    if columnar {
        HEADER_FIELDS_BYTES
    } else {
        CHUNK_HEADER_BYTES + more * MEASURE_SUMMARY_BYTES
    }
}

/// The length of the chunk framed at the start of `bytes` (header and payload), as its
/// header says; `None` when too few bytes for its header or its kind byte is unknown.
pub fn framed_len(bytes: &[u8]) -> Option<usize> {
    let compressed = u32::from_le_bytes(bytes.get(..4)?.try_into().expect("4 bytes"));
    let kind = ChunkKind::from_byte(*bytes.get(8)?).ok()?;
    Some(compressed as usize + header_len(kind.more, kind.columnar))
}

/// Where a chunk is: segment, offset of its header, total length with header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChunkLoc {
    pub segment_id: u32,
    pub offset: u64,
    pub len: u32,
}

impl ChunkLoc {
    pub const ENCODED_BYTES: usize = 4 + 8 + 4;

    pub fn end(&self) -> u64 {
        self.offset + self.len as u64
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.segment_id);
        out.put_u64_le(self.offset);
        out.put_u32_le(self.len);
    }

    pub fn decode(bytes: &mut impl Buf) -> Result<Self, String> {
        if bytes.remaining() < Self::ENCODED_BYTES {
            return Err("chunk location truncated".to_string());
        }
        Ok(ChunkLoc {
            segment_id: bytes.get_u32_le(),
            offset: bytes.get_u64_le(),
            len: bytes.get_u32_le(),
        })
    }
}

/// A chunk's entry in the chunk index: where it is, what kind, and its summary (which holds
/// the item count and key bounds), so reads skip chunks and summaries skip decoding.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkRef {
    pub loc: ChunkLoc,
    pub kind: ChunkKind,
    /// Whether the payload is a columnar item list (and the header holds no summary).
    pub columnar: bool,
    pub summary: Summary,
}

impl ChunkRef {
    /// Bytes of an entry whose summary has one measure; each further measure stored adds
    /// `MEASURE_SUMMARY_BYTES`.
    pub const ENCODED_BYTES: usize = ChunkLoc::ENCODED_BYTES + 1 + SUMMARY_BYTES;

    pub fn encode(&self) -> Bytes {
        let mut out =
            Vec::with_capacity(Self::ENCODED_BYTES - SUMMARY_BYTES + self.summary.encoded_len());
        self.loc.encode(&mut out);
        out.put_u8(self.kind.byte(&self.summary, self.columnar));
        self.summary.encode(&mut out);
        Bytes::from(out)
    }

    pub fn decode(bytes: Bytes) -> Result<Self, String> {
        Self::decode_slice(&bytes)
    }

    pub fn decode_slice(mut bytes: &[u8]) -> Result<Self, String> {
        let loc = ChunkLoc::decode(&mut bytes)?;
        if !bytes.has_remaining() {
            return Err("chunk entry truncated".to_string());
        }
        let kind = ChunkKind::from_byte(bytes.get_u8())?;
        let summary = Summary::decode(&mut bytes, kind.more)?;
        if bytes.has_remaining() || summary.items == 0 {
            return Err("chunk entry malformed".to_string());
        }
        Ok(ChunkRef {
            loc,
            kind: kind.kind,
            columnar: kind.columnar,
            summary,
        })
    }
}

/// The CRC32 of a chunk: its header but the CRC itself, then its payload.
fn chunk_crc(header: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&header[0..4]);
    hasher.update(&header[8..]);
    hasher.update(payload);
    hasher.finalize()
}

/// Compressors handed back by closed cold stores, for the next one opened in this process.
static SPARE_COMPRESSORS: parking_lot::Mutex<Vec<zstd::bulk::Compressor<'static>>> =
    parking_lot::const_mutex(Vec::new());
/// The most compressors kept spare.
const SPARE_LIMIT: usize = 4;

/// A zstd compressor at the chunk level, to be reused: making one costs more than
/// compressing a small chunk. A spare one when there is one (see [`give_back`]).
pub fn compressor() -> zstd::bulk::Compressor<'static> {
    if let Some(compressor) = SPARE_COMPRESSORS.lock().pop() {
        return compressor;
    }
    // Creating a context only fails on allocation failure, which aborts anyway.
    zstd::bulk::Compressor::new(ZSTD_LEVEL).expect("zstd context")
}

/// Keeps a compressor no longer needed for the next [`compressor`] call (up to a few).
pub fn give_back(compressor: zstd::bulk::Compressor<'static>) {
    let mut spare = SPARE_COMPRESSORS.lock();
    if spare.len() < SPARE_LIMIT {
        spare.push(compressor);
    }
}

/// What [`encode_chunk`] wrote, for the chunk's index entry.
pub struct Encoded {
    pub summary: Summary,
    pub columnar: bool,
}

/// Encodes a chunk of items (sorted by key, then push order): sealed buckets as columnar
/// lists, stored as they are when zstd would not make them smaller; other kinds as item
/// lists, compressed.
pub fn encode_chunk(
    kind: ChunkKind,
    items: &[Stored],
    compressor: &mut zstd::bulk::Compressor<'static>,
    out: &mut Vec<u8>,
) -> Encoded {
    assert!(
        items.windows(2).all(|w| w[0].order() <= w[1].order()),
        "a chunk's items in (key, push) order"
    );
    let summary = Summary::of(items.iter().map(|s| &s.item));
    assert_eq!(
        summary.items,
        items.len() as u64,
        "a chunk's summary counts its items"
    );
    // The row form's length bounds the payload's raw length: a columnar list longer than
    // it (keys or sequences far apart: a varint takes up to 10 bytes where a row takes 8) is
    // written as rows instead.
    let row_len = item::items_len(items);
    assert!(row_len <= MAX_RECORD_BYTES, "a chunk over the record limit");
    // The payload is compressed where it goes, from the raw items encoded just past the
    // room it may take: no buffer of its own per chunk (a compaction seals thousands, and
    // the allocator keeps what such transient buffers freed).
    let bound = zstd::zstd_safe::compress_bound(row_len);
    let start = out.len();
    let header = |out: &mut Vec<u8>, columnar: bool| {
        out.put_u32_le(0); // the payload's length, once known
        out.put_u32_le(0); // the checksum, once the payload is there
        out.put_u8(kind.byte(&summary, columnar));
        out.put_u32_le(0); // the raw length, once encoded
        if !columnar {
            summary.encode(out);
        }
        let header_end = out.len();
        out.resize(header_end + bound, 0);
        header_end
    };
    let mut columnar = kind.columnar();
    let mut header_end = header(out, columnar);
    if columnar {
        columns::encode(items, out);
        if out.len() - header_end - bound > row_len {
            out.truncate(start);
            columnar = false;
            header_end = header(out, columnar);
        }
    }
    if !columnar {
        item::encode_items(items, out);
    }
    let raw_len = out.len() - header_end - bound;
    let (room, raw) = out[header_end..].split_at_mut(bound);
    // The room is zstd's bound for the input: compression cannot run out of it.
    let compressed_len = compressor
        .compress_to_buffer(raw, room)
        .expect("zstd compression within its bound");
    let payload_len = if columnar && compressed_len >= raw_len {
        // Stored as it is: a columnar payload as long as its raw length is not compressed.
        out.copy_within(header_end + bound.., header_end);
        raw_len
    } else {
        compressed_len
    };
    out.truncate(header_end + payload_len);
    out[start..start + 4].copy_from_slice(&u32_len(payload_len).to_le_bytes());
    out[start + 9..start + 13].copy_from_slice(&u32_len(raw_len).to_le_bytes());
    let crc = chunk_crc(&out[start..header_end], &out[header_end..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    Encoded { summary, columnar }
}

/// Checks a chunk's framing and header against its index entry without decompressing it
/// (enough to copy it elsewhere as it is); returns its raw length.
pub fn check_copy(bytes: &[u8], expected: &ChunkRef) -> Result<usize, String> {
    let header_bytes = header_len(expected.summary.stored_more(), expected.columnar);
    if bytes.len() < header_bytes || bytes.len() != expected.loc.len as usize {
        return Err("chunk length differs from its entry".to_string());
    }
    let (header, payload) = bytes.split_at(header_bytes);
    let mut fields = header;
    let compressed_len = fields.get_u32_le() as usize;
    let crc = fields.get_u32_le();
    if compressed_len != payload.len() {
        return Err("chunk payload length differs from its header".to_string());
    }
    if chunk_crc(header, payload) != crc {
        return Err("chunk checksum mismatch".to_string());
    }
    let kind_byte = fields.get_u8();
    let raw_len = fields.get_u32_le() as usize;
    if kind_byte != expected.kind.byte(&expected.summary, expected.columnar) {
        return Err("chunk kind differs from its index entry".to_string());
    }
    // A columnar chunk's summary is checked against its items once they are decoded.
    if !expected.columnar
        && Summary::decode(&mut fields, expected.summary.stored_more())? != expected.summary
    {
        return Err("chunk header differs from its index entry".to_string());
    }
    if raw_len > MAX_RECORD_BYTES {
        return Err(format!("chunk of {raw_len} raw bytes over the limit"));
    }
    Ok(raw_len)
}

/// Decompresses a chunk's payload, through a decompression context kept per thread:
/// making one costs more than decompressing a small chunk.
fn decompress(payload: &[u8], raw_len: usize) -> Result<Vec<u8>, String> {
    thread_local! {
        static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    DECOMPRESSOR.with_borrow_mut(|decompressor| {
        let decompressor = match decompressor {
            Some(decompressor) => decompressor,
            None => decompressor.insert(
                zstd::bulk::Decompressor::new()
                    .map_err(|e| format!("zstd decompression context: {e}"))?,
            ),
        };
        decompressor
            .decompress(payload, raw_len)
            .map_err(|e| format!("chunk does not decompress: {e}"))
    })
}

/// Decodes the chunk at the start of `bytes`, checking its checksum, its sizes against the
/// limits before decompressing, and that its items agree with its summary.
pub fn decode_chunk(bytes: &[u8], expected: &ChunkRef) -> Result<Vec<Stored>, String> {
    let items = stored_items(checked_raw(bytes, expected)?, expected.columnar)?;
    if Summary::of(items.iter().map(|s| &s.item)) != expected.summary {
        return Err("chunk items disagree with its summary".to_string());
    }
    Ok(items)
}

/// [`decode_chunk`], into the columns the cache holds: a columnar chunk's straight from its
/// columns, a chunk of rows' copied into them.
pub fn decode_chunk_items(bytes: &[u8], expected: &ChunkRef) -> Result<ChunkItems, String> {
    let raw = checked_raw(bytes, expected)?;
    let items = match expected.columnar {
        true => columns::decode_columns(&raw)?,
        false => ChunkItems::from_stored(&row_items(raw)?),
    };
    if items.summary() != expected.summary {
        return Err("chunk items disagree with its summary".to_string());
    }
    Ok(items)
}

/// The decompressed payload of the chunk at the start of `bytes`, once its checksum, header
/// and sizes hold against `expected`.
fn checked_raw(bytes: &[u8], expected: &ChunkRef) -> Result<Bytes, String> {
    let raw_len = check_copy(bytes, expected)?;
    let payload = &bytes[header_len(expected.summary.stored_more(), expected.columnar)..];
    raw_payload(payload, raw_len, expected.columnar)
}

/// The items of a decompressed payload, each built.
fn stored_items(raw: Bytes, columnar: bool) -> Result<Vec<Stored>, String> {
    match columnar {
        true => columns::decode(&raw),
        false => row_items(raw),
    }
}

/// A chunk's payload of `raw_len` bytes before compression, decompressed (a columnar
/// payload of that length is stored as it is).
fn raw_payload(payload: &[u8], raw_len: usize, columnar: bool) -> Result<Bytes, String> {
    let raw = if columnar && payload.len() == raw_len {
        payload.to_vec()
    } else {
        decompress(payload, raw_len)?
    };
    if raw.len() != raw_len {
        return Err("chunk decompresses to another length".to_string());
    }
    Ok(Bytes::from(raw))
}

/// The items of a chunk of rows, decompressed.
fn row_items(mut raw: Bytes) -> Result<Vec<Stored>, String> {
    let items = item::decode_items(&mut raw)?;
    if raw.has_remaining() {
        return Err("chunk items end before its payload".to_string());
    }
    Ok(items)
}

#[cfg(feature = "testing")]
/// Decodes a chunk against the kind and summary its own header claims (for the fuzz target;
/// reads check against the index entry instead).
pub fn decode_standalone(bytes: &[u8]) -> Result<Vec<Stored>, String> {
    if bytes.len() < HEADER_FIELDS_BYTES {
        return Err("chunk truncated".to_string());
    }
    let kind = ChunkKind::from_byte(bytes[8])?;
    let header_bytes = header_len(kind.more, kind.columnar);
    if bytes.len() < header_bytes {
        return Err("chunk truncated".to_string());
    }
    let mut entry = ChunkRef {
        loc: ChunkLoc {
            segment_id: 0,
            offset: 0,
            len: u32_len(bytes.len()),
        },
        kind: kind.kind,
        columnar: kind.columnar,
        summary: Summary::default(),
    };
    if !kind.columnar {
        entry.summary = Summary::decode(&mut &bytes[13..header_bytes], kind.more)?;
        return decode_chunk(bytes, &entry);
    }
    // No summary in the header: the items' own, with the measures the kind byte says, and
    // the rest checked as a read checks it.
    let raw_len = u32::from_le_bytes(bytes[9..13].try_into().expect("4 bytes")) as usize;
    if raw_len > MAX_RECORD_BYTES {
        return Err(format!("chunk of {raw_len} raw bytes over the limit"));
    }
    let items = stored_items(raw_payload(&bytes[header_bytes..], raw_len, true)?, true)?;
    entry.summary = Summary::of(items.iter().map(|s| &s.item));
    if entry.summary.stored_more() != kind.more {
        return Err("chunk kind byte disagrees with its items' measures".to_string());
    }
    check_copy(bytes, &entry)?;
    Ok(items)
}

/// True when `bytes` is exactly one chunk whose checksum holds.
pub fn check_framing(bytes: &[u8]) -> bool {
    let Some(len) = framed_len(bytes) else {
        return false;
    };
    let header_bytes = len - u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    if bytes.len() != len {
        return false;
    }
    let (header, payload) = bytes.split_at(header_bytes);
    let crc = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    chunk_crc(header, payload) == crc
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
    fn chunk_round_trip_and_damage() {
        let items: Vec<Stored> = (0..100)
            .map(|i| Stored {
                item: Item {
                    key: i,
                    value: (i % 3 != 0).then_some(i as f64 / 2.0),
                    payload: Bytes::from(format!("payload {i}")),
                    more: None,
                },
                seq: i as u64,
            })
            .collect();
        let mut bytes = vec![9u8; 5];
        let encoded = encode_chunk(ChunkKind::Bucket, &items, &mut compressor(), &mut bytes);
        assert!(encoded.columnar);
        let loc = ChunkLoc {
            segment_id: 1,
            offset: 5,
            len: (bytes.len() - 5) as u32,
        };
        let entry = ChunkRef {
            loc,
            kind: ChunkKind::Bucket,
            columnar: true,
            summary: encoded.summary,
        };
        assert_eq!(ChunkRef::decode(entry.encode()).unwrap(), entry);
        assert_eq!(decode_chunk(&bytes[5..], &entry).unwrap(), items);
        for index in 5..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[index] ^= 0x20;
            assert!(decode_chunk(&damaged[5..], &entry).is_err(), "byte {index}");
        }
    }

    /// Encodes `items` as one chunk of `kind`; returns its bytes and index entry.
    fn chunk_of(kind: ChunkKind, items: &[Stored]) -> (Vec<u8>, ChunkRef) {
        let mut bytes = Vec::new();
        let encoded = encode_chunk(kind, items, &mut compressor(), &mut bytes);
        let entry = ChunkRef {
            loc: ChunkLoc {
                segment_id: 1,
                offset: 0,
                len: bytes.len() as u32,
            },
            kind,
            columnar: encoded.columnar,
            summary: encoded.summary,
        };
        assert_eq!(decode_chunk(&bytes, &entry).unwrap(), items);
        assert_eq!(ChunkRef::decode(entry.encode()).unwrap(), entry);
        #[cfg(feature = "testing")]
        assert_eq!(decode_standalone(&bytes).unwrap(), items);
        assert!(check_framing(&bytes));
        (bytes, entry)
    }

    fn one(key: i64, seq: u64, payload: Vec<u8>) -> Stored {
        Stored {
            item: Item::new(key, &[Some(1.5)], payload),
            seq,
        }
    }

    #[test]
    fn buckets_are_columnar_and_other_chunks_rows() {
        let items: Vec<Stored> = (0..60).map(|i| one(i * 60, i as u64, Vec::new())).collect();
        let (bucket, entry) = chunk_of(ChunkKind::Bucket, &items);
        assert!(entry.columnar);
        assert_eq!(
            bucket[8], 0x82,
            "kind byte: columnar, no further measure, bucket"
        );
        let (rows, entry) = chunk_of(ChunkKind::Items, &items);
        assert!(!entry.columnar);
        assert_eq!(rows[8], 0x01);
        // The columnar chunk's header holds no summary (56 bytes), and its payload is smaller.
        assert!(
            bucket.len() + 56 < rows.len(),
            "{} {}",
            bucket.len(),
            rows.len()
        );
        // An entry that says rows for columnar bytes (or the other way) is refused.
        let wrong = ChunkRef {
            columnar: false,
            loc: ChunkLoc {
                len: bucket.len() as u32,
                ..entry.loc
            },
            ..entry
        };
        assert!(decode_chunk(&bucket, &wrong).is_err());
    }

    #[test]
    fn a_bucket_zstd_cannot_shrink_is_stored_as_it_is() {
        let (bytes, entry) = chunk_of(ChunkKind::Bucket, &[one(7, 0, b"x".to_vec())]);
        assert!(entry.columnar);
        let payload_len = u32::from_le_bytes(bytes[0..4].try_into().unwrap());
        let raw_len = u32::from_le_bytes(bytes[9..13].try_into().unwrap());
        assert_eq!(payload_len, raw_len);
        assert_eq!(bytes.len(), 13 + raw_len as usize);
        for index in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[index] ^= 0x01;
            assert!(decode_chunk(&damaged, &entry).is_err(), "byte {index}");
        }
    }

    #[test]
    fn a_bucket_whose_columns_would_be_longer_is_written_as_rows() {
        // No value; a key and a sequence of ten varint bytes each and a payload length of
        // four: with the count's byte and the (empty) measure columns' one, 26 bytes against
        // the row form's 4 + 8 + 8 + 1 + 4.
        let bare = |payload_len: usize| Stored {
            item: Item::new(i64::MIN, &[], vec![7; payload_len]),
            seq: 1 << 62,
        };
        let far = bare(1 << 21);
        let (bytes, entry) = chunk_of(ChunkKind::Bucket, std::slice::from_ref(&far));
        assert!(!entry.columnar);
        assert_eq!(bytes[8], 0x02);
        // A payload length of three bytes and the columns are no longer: columnar again.
        assert!(
            chunk_of(ChunkKind::Bucket, &[bare((1 << 21) - 1)])
                .1
                .columnar
        );
    }

    #[test]
    fn a_compressor_given_back_writes_the_same_chunks() {
        let items: Vec<Stored> = (0..50)
            .map(|i| Stored {
                item: Item {
                    key: i,
                    value: None,
                    payload: Bytes::from(vec![b'x'; i as usize]),
                    more: None,
                },
                seq: i as u64,
            })
            .collect();
        let (mut fresh, mut reused) = (Vec::new(), Vec::new());
        encode_chunk(ChunkKind::Items, &items, &mut compressor(), &mut fresh);
        let mut used = compressor();
        encode_chunk(ChunkKind::Items, &items[..7], &mut used, &mut Vec::new());
        give_back(used);
        encode_chunk(ChunkKind::Items, &items, &mut compressor(), &mut reused);
        assert_eq!(fresh, reused);
        // Only a few are kept.
        for _ in 0..2 * SPARE_LIMIT {
            give_back(compressor());
            give_back(zstd::bulk::Compressor::new(ZSTD_LEVEL).unwrap());
        }
        assert!(SPARE_COMPRESSORS.lock().len() <= SPARE_LIMIT);
    }
}
