//! Decoding what the page store holds for a parent: its record (for the stager, with
//! `Stored` items; for readers, with `Item`s and only the fields they want), its tail
//! records, and the errors that name the parent when the bytes are damaged. The read path,
//! the stager and `verify` all decode through here.

use std::sync::Arc;

use bytes::Bytes;

use crate::catalog::CollectionInfo;
use crate::document::{Document, ItemQuery};
use crate::error::{Error, Result};
use crate::item::{self, Item, Stored};
use crate::page::PageStore;
use crate::page::tree::Tree;
use crate::record::{self, ParentRecord};
use crate::rollup::Rollup;

pub(crate) fn decode_record(
    bytes: Bytes,
    info: &CollectionInfo,
    key: &[u8],
) -> Result<ParentRecord> {
    decode_record_fields(bytes, info, key, |_| true)
}

/// [`decode_record`] building the inline items of the fields `wanted` names only (for reads).
pub(crate) fn decode_record_fields(
    bytes: Bytes,
    info: &CollectionInfo,
    key: &[u8],
    wanted: impl Fn(usize) -> bool,
) -> Result<ParentRecord> {
    ParentRecord::decode_fields(bytes, info.shape(), wanted)
        .map_err(|reason| record_corruption(info, key, reason))
}

/// The file a decoder names in its corruption errors: it has the record's bytes, not their
/// place. The caller, who has the tree, puts the place in ([`placed`]).
pub(crate) const UNPLACED: &str = "page store";

/// `error` with the place of `tree_key`'s value in `tree` (its leaf's frame, or a large
/// record's) when it is a decoder's corruption error, which does not know the place.
pub(crate) fn placed(mut error: Error, tree: &Tree, pages: &PageStore, tree_key: &[u8]) -> Error {
    if let Error::Corruption { file, offset, .. } = &mut error
        && file == UNPLACED
        && let Some(place) = tree.locate(&pages.maintaining(), tree_key)
    {
        (*file, *offset) = place;
    }
    error
}

/// A parent record of `key` in `info`'s collection that did not decode.
pub(crate) fn record_corruption(info: &CollectionInfo, key: &[u8], reason: String) -> Error {
    Error::corruption(
        UNPLACED,
        0,
        format!(
            "record of {:?} in {}: {reason}",
            String::from_utf8_lossy(key),
            info.spec.name()
        ),
    )
}

/// The rollup record `tree_key` of the window starting at `start`.
pub(crate) fn decode_rollup(bytes: &[u8], tree_key: &[u8], start: i64) -> Result<Rollup> {
    Rollup::decode(bytes, start).map_err(|reason| {
        Error::corruption(
            UNPLACED,
            0,
            format!("rollup record {tree_key:x?}: {reason}"),
        )
    })
}

pub(crate) fn decode_items(mut bytes: Bytes, tree_key: &[u8]) -> Result<Vec<Stored>> {
    let items = item::decode_items(&mut bytes);
    tail_checked(items, &bytes, tree_key)
}

/// Appends to `out` the items of a tail record on `query`'s pages: with a limit, only the
/// first `limit` of them in the query's order are built (see [`item::decode_first_items`]).
pub(crate) fn decode_wanted_items(
    mut bytes: Bytes,
    tree_key: &[u8],
    query: &ItemQuery,
    out: &mut Vec<Stored>,
) -> Result<()> {
    let items = wanted_items(&mut bytes, query, out);
    tail_checked(items, &bytes, tree_key)
}

/// Appends to `out` the items of an encoded item list on `query`'s pages, the list walked
/// whole: with a limit, only the first `limit` of them in the query's order are built.
fn wanted_items(
    list: &mut Bytes,
    query: &ItemQuery,
    out: &mut Vec<Stored>,
) -> std::result::Result<(), String> {
    let wanted = |key, seq| query.wanted_at(key, seq);
    match query.limit {
        Some(limit) => item::decode_first_items(list, wanted, query.order, limit, out),
        None => item::decode_picked_items(list, wanted, out),
    }
}

/// A parent record whose array `field`'s encoded inline list goes to `list` (which walks it
/// whole, checking it, and builds nothing the record keeps: its `inline` stays empty); the
/// other arrays' items are stepped over. For borrowed reads, which lend the list in place.
pub(crate) fn decode_record_list(
    bytes: Bytes,
    info: &CollectionInfo,
    key: &[u8],
    field: usize,
    list: impl FnOnce(&mut Bytes) -> std::result::Result<(), String>,
) -> Result<ParentRecord> {
    let walk = |bytes: &mut Bytes| list(bytes).map(|()| Vec::new());
    ParentRecord::decode_field_with(bytes, info.shape(), field, walk)
        .map_err(|reason| record_corruption(info, key, reason))
}

/// A tail record's item list, walked by `walk` (which must read the list whole), or the
/// corruption that names the tail.
pub(crate) fn walk_tail(
    mut bytes: Bytes,
    tree_key: &[u8],
    walk: impl FnOnce(&mut Bytes) -> std::result::Result<(), String>,
) -> Result<()> {
    let walked = walk(&mut bytes);
    tail_checked(walked, &bytes, tree_key)
}

/// A tail record's decode, or the corruption that names the tail: `rest` is what the
/// decode left of its bytes (nothing, when they were all items).
fn tail_checked<T>(
    decoded: std::result::Result<T, String>,
    rest: &[u8],
    tree_key: &[u8],
) -> Result<T> {
    let reason = match decoded {
        Ok(decoded) if rest.is_empty() => return Ok(decoded),
        Ok(_) => "trailing bytes".to_string(),
        Err(reason) => reason,
    };
    Err(Error::corruption(
        UNPLACED,
        0,
        format!("tail record {tree_key:x?}: {reason}"),
    ))
}

/// A parent record as a reader sees it: the inline items of the fields `wanted` names, as
/// `Item`s in (key, push) order.
pub(crate) fn decode_read_record(
    bytes: Bytes,
    info: &CollectionInfo,
    key: &[u8],
    wanted: impl Fn(usize) -> bool,
) -> Result<ParentRecord<Item>> {
    ParentRecord::decode_read(bytes, info.shape(), wanted)
        .map_err(|reason| record_corruption(info, key, reason))
}

/// The document of an encoded parent record, every array with its inline items.
pub(crate) fn decode_document(
    info: &Arc<CollectionInfo>,
    key: Bytes,
    bytes: Bytes,
) -> Result<Document> {
    let decoded = Document::build(info, key.clone(), |push| {
        record::decode_read_each(bytes, info.shape(), |_| true, push)
    });
    decoded.map_err(|reason| record_corruption(info, &key, reason))
}
