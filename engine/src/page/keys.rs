//! Tree keys: every record in the B+tree is found under one of these keys. The one place
//! that builds them; see `format-spec/pages.md`.
//!
//! - parent record: `collection id (u32 BE) || parent key`
//! - array records: `collection id | ARRAY_SPACE (u32 BE) || parent key length (u16 BE) ||
//!   parent key || field index (u16 BE) || kind (u8)`, then for a chunk entry
//!   `max key (i64, sign bit flipped, BE) || chunk number (u32 BE)`
//! - outlier markers: `collection id | OUTLIER_SPACE (u32 BE) || field index (u16 BE) ||
//!   parent key`

use bytes::{BufMut, Bytes};

use crate::cache::Owner;
use crate::catalog::CollectionId;
use crate::limits::MAX_KEY_BYTES;
use crate::limits::widths::u16_len;

/// High bits of the leading u32 that separate the key spaces; collection ids stay below.
pub const ARRAY_SPACE: u32 = 0x8000_0000;
pub const OUTLIER_SPACE: u32 = 0x4000_0000;

/// Kind byte of an array record key.
pub const KIND_TAIL: u8 = 0;
pub const KIND_CHUNK: u8 = 1;
pub const KIND_ROLLUP: u8 = 2;

/// The longest tree key: a chunk entry's.
pub const MAX_TREE_KEY_BYTES: usize = 4 + 2 + MAX_KEY_BYTES + 2 + 1 + 8 + 4;

/// An i64 as 8 bytes whose unsigned order is the signed order.
pub fn sortable(key: i64) -> [u8; 8] {
    ((key as u64) ^ (1 << 63)).to_be_bytes()
}

pub fn from_sortable(bytes: [u8; 8]) -> i64 {
    (u64::from_be_bytes(bytes) ^ (1 << 63)) as i64
}

/// `key` (any tree key) moved to collection `id`, in the same key space: what a restore
/// does to the keys of a backup, whose collections get new ids.
pub fn with_collection(key: &[u8], id: CollectionId) -> Option<Bytes> {
    let lead = u32::from_be_bytes(key.get(..4)?.try_into().ok()?);
    let mut moved = Vec::with_capacity(key.len());
    moved.put_u32(id | (lead & (ARRAY_SPACE | OUTLIER_SPACE)));
    moved.put_slice(&key[4..]);
    Some(Bytes::from(moved))
}

/// A tree key's leading 4 bytes: its collection and key space (parent records, array
/// records or outlier markers); `None` for a key shorter than that.
pub fn space_of(key: &[u8]) -> Option<&[u8]> {
    key.get(..4)
}

/// A tree key's leading 4 bytes as the number they hold: a collection id with the bit of
/// its key space ([`ARRAY_SPACE`], [`OUTLIER_SPACE`], neither for a parent record).
pub fn lead_of(key: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(key.get(..4)?.try_into().ok()?))
}

/// The collection a tree key belongs to, whatever its key space.
pub fn collection_of(key: &[u8]) -> Option<CollectionId> {
    let lead = u32::from_be_bytes(key.get(..4)?.try_into().ok()?);
    Some(lead & !(ARRAY_SPACE | OUTLIER_SPACE))
}

/// Whom the cache requests made for `key` count for: its collection.
pub fn owner_of(key: &[u8]) -> Owner {
    collection_of(key).map_or(Owner::NONE, Owner::collection)
}

/// A parent record's tree key as its collection and the parent's own key.
pub fn split_parent(key: &[u8]) -> Option<(CollectionId, &[u8])> {
    is_parent(key).then(|| {
        (
            collection_of(key).expect("a parent key has a collection"),
            &key[PARENT_PREFIX_BYTES..],
        )
    })
}

/// Whether a tree key is a parent record's (not an array record's or an outlier marker's).
pub fn is_parent(key: &[u8]) -> bool {
    key.get(..4)
        .is_some_and(|lead| lead[0] & ((ARRAY_SPACE | OUTLIER_SPACE) >> 24) as u8 == 0)
}

pub fn parent(collection: CollectionId, key: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(PARENT_PREFIX_BYTES + key.len());
    out.put_u32(collection);
    out.put_slice(key);
    Bytes::from(out)
}

/// Bytes a parent record's tree key puts before the parent's own key.
const PARENT_PREFIX_BYTES: usize = 4;

/// The longest tree key [`with_parent`] builds on the stack.
const STACK_KEY_BYTES: usize = 64;

/// Hands `with` a parent record's tree key (as [`parent`] builds it): a lookup of a key of
/// up to 60 bytes allocates nothing for it (the buffer is small: zeroing one of the longest
/// key's size would cost what the allocation does).
pub fn with_parent<T>(collection: CollectionId, key: &[u8], with: impl FnOnce(&[u8]) -> T) -> T {
    let len = PARENT_PREFIX_BYTES + key.len();
    if len > STACK_KEY_BYTES {
        return with(&parent(collection, key));
    }
    let mut buffer = [0u8; STACK_KEY_BYTES];
    buffer[..PARENT_PREFIX_BYTES].copy_from_slice(&collection.to_be_bytes());
    buffer[PARENT_PREFIX_BYTES..len].copy_from_slice(key);
    with(&buffer[..len])
}

/// The parent's own key in a parent record's tree key, sharing its bytes.
pub fn parent_key_of(tree_key: &Bytes) -> Bytes {
    tree_key.slice(PARENT_PREFIX_BYTES..)
}

/// The first key after every parent record of `collection`.
pub fn parents_end(collection: CollectionId) -> Bytes {
    parent(collection + 1, &[])
}

/// The prefix of every array record of one parent.
pub fn parent_arrays(collection: CollectionId, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 2 + key.len() + 16);
    put_parent_arrays(&mut out, collection, key);
    out
}

fn put_parent_arrays(out: &mut Vec<u8>, collection: CollectionId, key: &[u8]) {
    out.put_u32(collection | ARRAY_SPACE);
    out.put_u16(u16_len(key.len()));
    out.put_slice(key);
}

/// Appends an array record's key up to its kind: `ARRAY_KEY_FIXED` bytes and the parent key.
fn put_array(out: &mut Vec<u8>, collection: CollectionId, key: &[u8], field: usize, kind: u8) {
    put_parent_arrays(out, collection, key);
    out.put_u16(u16_len(field));
    out.put_u8(kind);
}

/// The bytes of an array record's key up to its kind besides the parent key: the
/// collection (4), the parent key's length (2), the field (2) and the kind (1).
const ARRAY_KEY_FIXED: usize = 4 + 2 + 2 + 1;

/// The range of one array slot's records of one parent: its tail, chunk entries and rollups.
pub fn array_slot(collection: CollectionId, key: &[u8], field: usize) -> (Bytes, Bytes) {
    let start = array(collection, key, field, KIND_TAIL, 0);
    let end = array(collection, key, field + 1, KIND_TAIL, 0);
    (Bytes::from(start), Bytes::from(end))
}

/// The three ranges of a collection's tree keys, in key order: its parent records, outlier
/// markers and array records, each `[start, end)`.
pub fn collection_spaces(collection: CollectionId) -> [(Bytes, Bytes); 3] {
    [0, OUTLIER_SPACE, ARRAY_SPACE].map(|space| {
        let lead = collection | space;
        let start = Bytes::copy_from_slice(&lead.to_be_bytes());
        let end = Bytes::copy_from_slice(&(lead + 1).to_be_bytes());
        (start, end)
    })
}

/// The first key after every array record of one parent.
pub fn parent_arrays_end(collection: CollectionId, key: &[u8]) -> Bytes {
    let mut out = parent_arrays(collection, key);
    out.put_u8(0xff);
    Bytes::from(out)
}

/// An array record's key up to its kind, in a buffer of exactly its length plus `extra`:
/// one that becomes `Bytes` at its full length takes no second allocation.
fn array(collection: CollectionId, key: &[u8], field: usize, kind: u8, extra: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(ARRAY_KEY_FIXED + key.len() + extra);
    put_array(&mut out, collection, key, field, kind);
    out
}

/// The keys a read of one array's newest items needs, in one buffer: its tail record's,
/// its chunk entries' prefix and the first key after them, which differ in the kind byte.
pub struct ArrayKeys {
    buf: Vec<u8>,
    len: usize,
}

impl ArrayKeys {
    pub fn new(collection: CollectionId, key: &[u8], field: usize) -> Self {
        let len = ARRAY_KEY_FIXED + key.len();
        let mut buf = Vec::with_capacity(3 * len);
        for kind in [KIND_TAIL, KIND_CHUNK, KIND_CHUNK + 1] {
            put_array(&mut buf, collection, key, field, kind);
        }
        ArrayKeys { buf, len }
    }

    /// As [`tail`] makes it.
    pub fn tail(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// As [`chunks`] makes it.
    pub fn chunks(&self) -> &[u8] {
        &self.buf[self.len..2 * self.len]
    }

    /// As [`chunks_end`] makes it.
    pub fn chunks_end(&self) -> &[u8] {
        &self.buf[2 * self.len..]
    }
}

/// The tail record of one array: items on their way to a cold chunk.
pub fn tail(collection: CollectionId, key: &[u8], field: usize) -> Bytes {
    Bytes::from(array(collection, key, field, KIND_TAIL, 0))
}

/// The prefix of the chunk entries of one array, sorted by their max key.
pub fn chunks(collection: CollectionId, key: &[u8], field: usize) -> Vec<u8> {
    array(collection, key, field, KIND_CHUNK, 0)
}

pub fn chunk(
    collection: CollectionId,
    key: &[u8],
    field: usize,
    max_key: i64,
    number: u32,
) -> Bytes {
    let mut out = array(collection, key, field, KIND_CHUNK, 8 + 4);
    out.put_slice(&sortable(max_key));
    out.put_u32(number);
    Bytes::from(out)
}

/// The first key after every chunk entry of one array.
pub fn chunks_end(collection: CollectionId, key: &[u8], field: usize) -> Bytes {
    Bytes::from(array(collection, key, field, KIND_CHUNK + 1, 0))
}

/// The rollup record of one array's window starting at `start`.
pub fn rollup(collection: CollectionId, key: &[u8], field: usize, start: i64) -> Bytes {
    let mut out = array(collection, key, field, KIND_ROLLUP, 8);
    out.put_slice(&sortable(start));
    Bytes::from(out)
}

/// The prefix of the rollup records of one array, sorted by their windows' starts.
pub fn rollups(collection: CollectionId, key: &[u8], field: usize) -> Bytes {
    Bytes::from(array(collection, key, field, KIND_ROLLUP, 0))
}

/// The first key after every rollup record of one array.
pub fn rollups_end(collection: CollectionId, key: &[u8], field: usize) -> Bytes {
    Bytes::from(array(collection, key, field, KIND_ROLLUP + 1, 0))
}

/// An array record key's parts after the leading u32: parent key, field index, kind and
/// what follows the kind (a chunk entry's max key and number); `None` when malformed. The
/// caller checks the key space.
pub fn split_array(key: &Bytes) -> Option<(Bytes, usize, u8, Bytes)> {
    let len = u16::from_be_bytes(key.get(4..6)?.try_into().ok()?) as usize;
    let rest = key.get(6 + len..)?;
    if rest.len() < 3 {
        return None;
    }
    let field = u16::from_be_bytes([rest[0], rest[1]]) as usize;
    Some((
        key.slice(6..6 + len),
        field,
        rest[2],
        key.slice(6 + len + 3..),
    ))
}

/// True for a chunk index entry's key.
pub fn is_chunk_entry(key: &Bytes) -> bool {
    let Some(lead) = key.get(..4) else {
        return false;
    };
    u32::from_be_bytes(lead.try_into().expect("4 bytes")) & ARRAY_SPACE != 0
        && split_array(key).is_some_and(|(_, _, kind, _)| kind == KIND_CHUNK)
}

/// An outlier marker's key. Sized exactly: the key lives as long as the page that holds it.
pub fn outlier(collection: CollectionId, field: usize, key: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(OUTLIERS_PREFIX_BYTES + key.len());
    put_outliers_prefix(&mut out, collection, field);
    out.put_slice(key);
    Bytes::from(out)
}

/// The prefix every outlier marker of `field` starts with, with room for a parent key after
/// it (a scan's bound, extended as it goes).
pub fn outliers(collection: CollectionId, field: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(OUTLIERS_PREFIX_BYTES + MAX_KEY_BYTES);
    put_outliers_prefix(&mut out, collection, field);
    out
}

/// Bytes of an outlier marker key before the parent key: collection and field.
const OUTLIERS_PREFIX_BYTES: usize = 6;

/// An outlier marker's key as its field index and the parent's own key, sharing its bytes;
/// `None` for a key that is not a marker's or is too short to be one.
pub fn split_outlier(key: &Bytes) -> Option<(usize, Bytes)> {
    let lead = u32::from_be_bytes(key.get(..4)?.try_into().ok()?);
    if lead & OUTLIER_SPACE == 0 || lead & ARRAY_SPACE != 0 || key.len() < OUTLIERS_PREFIX_BYTES {
        return None;
    }
    let field = u16::from_be_bytes([key[4], key[5]]) as usize;
    Some((field, key.slice(OUTLIERS_PREFIX_BYTES..)))
}

fn put_outliers_prefix(out: &mut Vec<u8>, collection: CollectionId, field: usize) {
    out.put_u32(collection | OUTLIER_SPACE);
    out.put_u16(u16_len(field));
}

pub fn outliers_end(collection: CollectionId, field: usize) -> Bytes {
    Bytes::from(outliers(collection, field + 1))
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_key_splits_into_its_collection_and_key() {
        assert_eq!(split_parent(&parent(7, b"p")), Some((7, &b"p"[..])));
        assert_eq!(split_parent(&parent(7, b"")), Some((7, &b""[..])));
        assert_eq!(split_parent(&tail(7, b"p", 0)), None);
        assert_eq!(split_parent(b"ab"), None);
    }

    #[test]
    fn an_outlier_marker_splits_into_its_field_and_parent_key() {
        let marker = outlier(7, 3, b"parent");
        assert_eq!(lead_of(&marker), Some(7 | OUTLIER_SPACE));
        assert_eq!(
            split_outlier(&marker),
            Some((3, Bytes::from_static(b"parent")))
        );
        assert_eq!(split_outlier(&outlier(7, 0, b"")), Some((0, Bytes::new())));
        // Not a marker: a parent record's key, an array record's, too short to hold a field.
        assert_eq!(split_outlier(&parent(7, b"parent")), None);
        assert_eq!(split_outlier(&tail(7, b"parent", 3)), None);
        assert_eq!(split_outlier(&marker.slice(..5)), None);
        assert_eq!(lead_of(b"abc"), None);
        // The parent's own key comes out of the parent record's tree key whole.
        assert_eq!(
            parent_key_of(&parent(7, b"parent")),
            Bytes::from_static(b"parent")
        );
    }

    #[test]
    fn a_parent_key_made_on_the_stack_or_not_is_the_one_parent_makes() {
        let short = STACK_KEY_BYTES - PARENT_PREFIX_BYTES;
        for len in [0, 1, short - 1, short, short + 1, MAX_KEY_BYTES] {
            let key: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let made = with_parent(0x0102_0304, &key, <[u8]>::to_vec);
            assert_eq!(made, parent(0x0102_0304, &key), "key of {len} bytes");
            assert_eq!(parent_key_of(&Bytes::from(made)), key);
        }
    }

    #[test]
    fn array_keys_are_the_ones_made_one_by_one() {
        for key in [&b""[..], b"p", &[0xff; 1024][..]] {
            let keys = ArrayKeys::new(7, key, 3);
            assert_eq!(keys.tail(), &tail(7, key, 3)[..]);
            assert_eq!(keys.chunks(), &chunks(7, key, 3)[..]);
            assert_eq!(keys.chunks_end(), &chunks_end(7, key, 3)[..]);
        }
    }

    #[test]
    fn sortable_keeps_signed_order() {
        let keys = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for pair in keys.windows(2) {
            assert!(sortable(pair[0]) < sortable(pair[1]));
        }
        for key in keys {
            assert_eq!(from_sortable(sortable(key)), key);
        }
    }

    #[test]
    fn key_spaces_do_not_mix() {
        let parent_key = parent(3, b"alice");
        let chunk_key = chunk(3, b"alice", 0, 5, 0);
        assert!(parent_key < parents_end(3));
        assert!(chunk_key.as_ref() >= parent_arrays(3, b"alice").as_slice());
        assert!(chunk_key < parent_arrays_end(3, b"alice"));
        assert!(chunk_key > tail(3, b"alice", 0));
        assert!(chunk_key < chunks_end(3, b"alice", 0));
        // A longer parent key sharing a prefix never lands inside another parent's range.
        assert!(chunk(3, b"alice2", 0, 5, 0) >= parent_arrays_end(3, b"alice"));
        assert!(outlier(3, 1, b"x") < outliers_end(3, 1));
        assert!(outlier(3, 1, b"x").as_ref() > outliers(3, 1).as_slice());
        assert_eq!(
            chunk(3, &[b'k'; MAX_KEY_BYTES], 63, 0, 0).len(),
            MAX_TREE_KEY_BYTES
        );
    }
}
