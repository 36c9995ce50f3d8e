//! Reads of array fields: `items` merges inline, tail and cold chunks in key order; `summary`
//! answers from chunk summaries, decoding only chunks that straddle the range's ends;
//! `outliers` lists the parents whose array overflowed.
//!
//! The read rules: `format-spec/arrays.md`.

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use crate::cache::Owner;
use crate::cache::point_read::{FoundRecord, LeafKeeping, RecordAt, RecordSource};
use crate::cached::{Cached, Unkept};
use crate::store::read::decode::{
    UNPLACED, decode_document, decode_read_record, decode_record_fields, decode_wanted_items,
    placed,
};
use crate::store::versions::{Version, Versions};

use crate::catalog::CollectionInfo;
use crate::cold::ChunkItems;
use crate::cold::{ChunkRef, ColdStore, DETACHED_SEGMENT_ID};
use crate::document::{Document, ItemQuery, Outlier};
use crate::error::{Error, Result};
use crate::item::{Item, Stored, Summary};
use crate::page::node::{Node, Value};
use crate::page::tree::{LeafEntry, Tree};
use crate::page::{PageStore, Pages, keys};
use crate::record::ParentRecord;

/// Reads at one version, and what they touch of the engine: the page store (with the
/// cache and its record tier), the cold store, and the versions' record epoch. Nothing of
/// the writer: a read never waits for a commit, and cannot change what one does.
#[derive(Clone, Copy)]
pub(crate) struct Reads<'a> {
    pub(in crate::store) pages: &'a PageStore,
    cold: &'a ColdStore,
    versions: &'a Versions,
}

impl<'a> Reads<'a> {
    pub(in crate::store) fn new(
        pages: &'a PageStore,
        cold: &'a ColdStore,
        versions: &'a Versions,
    ) -> Self {
        Reads {
            pages,
            cold,
            versions,
        }
    }
}

impl Reads<'_> {
    /// A chunk's items: through the cache, or from a transaction's own chunks.
    pub(in crate::store) fn chunk_items(
        &self,
        version: &Version,
        entry: &ChunkRef,
        owner: Owner,
    ) -> Result<Arc<ChunkItems>> {
        match &version.own_chunks {
            Some(own) if entry.loc.segment_id == DETACHED_SEGMENT_ID => own.items(entry),
            _ => self.cold.items(entry, owner),
        }
    }

    /// The value of `key` in the tree at `version`, read for `owner`.
    pub(crate) fn read_tree(
        &self,
        version: &Version,
        key: &[u8],
        owner: Owner,
    ) -> Result<Option<Bytes>> {
        version.tree.get_bytes(&self.pages.reading(owner), key)
    }

    /// A parent's whole document at `version`, asked of the cache in one request (see
    /// `cache::point_read`): the record tier keeps it with the record it was built from, and
    /// a read that finds it there builds nothing.
    pub(crate) fn document(
        &self,
        version: &Version,
        info: &Arc<CollectionInfo>,
        key: &[u8],
    ) -> Result<Option<Document>> {
        let source = TreeRecord::new(self.pages, version, info, key);
        let epoch = || self.versions.record_epoch();
        let at = record_at(version, info, key, &epoch);
        let build = |parent_key: Bytes, record: Bytes| {
            decode_document(info, parent_key, record)
                .map_err(|e| self.placed(e, &version.tree, &keys::parent(info.id, key)))
        };
        self.pages
            .cache
            .read_document(&at, &source, build, Document::memory_bytes)
    }

    /// A parent's key and record as `get_projected` returns them (see
    /// [`decode_read_record`]). The key is a slice of the record tier's buffer when the tier
    /// holds the record.
    pub(crate) fn read_record(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        wanted: impl Fn(usize) -> bool,
    ) -> Result<Option<(Bytes, ParentRecord<Item>)>> {
        let Some(found) = self.find_record(version, info, key)? else {
            return Ok(None);
        };
        let (key_bytes, bytes) = found.into_parts();
        let record = decode_read_record(bytes, info, key, wanted)
            .map_err(|e| self.placed(e, &version.tree, &keys::parent(info.id, key)))?;
        Ok(Some((key_bytes, record)))
    }

    /// A parent's record, with the inline items of the array fields `wanted` names only
    /// (the others are stepped over; their state is all there but their `inline`).
    pub(crate) fn parent_record(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        wanted: impl Fn(usize) -> bool,
    ) -> Result<Option<ParentRecord>> {
        self.parent_record_with(version, info, key, |bytes| {
            decode_record_fields(bytes, info, key, wanted)
        })
    }

    /// A parent's record, decoded by `decode`.
    pub(in crate::store) fn parent_record_with(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        decode: impl FnOnce(Bytes) -> Result<ParentRecord>,
    ) -> Result<Option<ParentRecord>> {
        let Some(found) = self.find_record(version, info, key)? else {
            return Ok(None);
        };
        let bytes = found.into_record();
        decode(bytes)
            .map(Some)
            .map_err(|e| self.placed(e, &version.tree, &keys::parent(info.id, key)))
    }

    /// `error` with the place of `tree_key`'s value when it is a decoder's corruption error
    /// (see [`placed`]).
    pub(crate) fn placed(&self, error: Error, tree: &Tree, tree_key: &[u8]) -> Error {
        placed(error, tree, self.pages, tree_key)
    }

    /// A parent's record at `version`, asked of the cache in one request (see
    /// `cache::point_read`): from the record tier when it holds it as of a generation no
    /// newer than the version's, else read from the tree (and then kept in the tier if
    /// `version` is the current one and no commit is publishing: see `publish_changes`).
    fn find_record(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
    ) -> Result<Option<FoundRecord>> {
        let source = TreeRecord::new(self.pages, version, info, key);
        let epoch = || self.versions.record_epoch();
        let at = record_at(version, info, key, &epoch);
        self.pages.cache.read_record(&at, &source)
    }

    /// Appends to `out` the items of one array's tail on `query`'s pages (with a limit, at
    /// most `limit`: the first in the query's order).
    pub(in crate::store) fn tail_items(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
        out: &mut Vec<Stored>,
    ) -> Result<()> {
        let tail_key = keys::tail(info.id, key, info.slot(field));
        match self.read_tree(version, &tail_key, Owner::collection(info.id))? {
            Some(bytes) => decode_wanted_items(bytes, &tail_key, query, out)
                .map_err(|e| self.placed(e, &version.tree, &tail_key)),
            None => Ok(()),
        }
    }

    /// Appends to `entries` the index entries of one array's chunks that hold keys in
    /// `query`'s range, in max key order.
    pub(in crate::store) fn chunk_entries(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
        entries: &mut Vec<ChunkRef>,
    ) -> Result<()> {
        self.for_each_chunk_in(version, info, key, field, query, |found| match found {
            InRange::Leaf(_) => false,
            InRange::Entry(entry) => {
                entries.push(entry);
                true
            }
        })
    }

    /// Walks the index entries of one array's chunks that hold keys in `query`'s range, in
    /// max key order, read in place from their leaves. A leaf of chunk entries alone (its
    /// summary, cached with the leaf, is of them all: this array's and perhaps others')
    /// that misses the range is skipped without decoding an entry, so a range or a window
    /// deep in a long history walks its leaves, not its entries; one wholly of this
    /// array's entries and inside the range is offered to `visit` by that summary, and
    /// skipped when it takes it (returns true). Every other entry reaching into the range
    /// goes to `visit`.
    pub(in crate::store) fn for_each_chunk_in(
        &self,
        version: &Version,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        query: &ItemQuery,
        mut visit: impl FnMut(InRange) -> bool,
    ) -> Result<()> {
        let tree = &version.tree;
        let (mut cursor, end) = self.chunk_cursor(tree, info, key, field, query.start)?;
        let pages = pages_for(self.pages, info);
        cursor.for_each_leaf(tree, &pages, |leaf, from| {
            let Node::Leaf { entries, .. } = leaf else {
                return Ok(false);
            };
            let count = entries.len();
            let within = count > 0 && entries.key(count - 1) < end.as_ref();
            // The leaf the walk starts in is entered part way (at the range's start), and
            // the walk reads the entries from there: it does not build the leaf's summary,
            // which reads them all (a range of the newest items, the read a time series
            // gets most, starts near the end of the array's last leaf, which every sealed
            // chunk changes). The leaves after it are entered at their start.
            let leaf_summary = match from {
                0 => leaf.chunk_summary(chunk_entry_summary),
                _ => None,
            };
            if let Some(whole) = leaf_summary {
                if !query.overlaps(whole) {
                    return Ok(within);
                }
                if within && query.covers(whole) && visit(InRange::Leaf(whole)) {
                    return Ok(true);
                }
            }
            for index in from.min(count)..count {
                let (tree_key, inline) = entries.in_place(index);
                if tree_key >= end.as_ref() {
                    return Ok(false);
                }
                let entry = match inline {
                    Some(bytes) => decode_inline_chunk_entry(tree_key, bytes),
                    None => decode_chunk_entry(tree_key, &entries.value(index), &pages),
                }
                .map_err(|e| self.placed(e, tree, tree_key))?;
                if query.overlaps(&entry.summary) {
                    visit(InRange::Entry(entry));
                }
            }
            Ok(true)
        })
    }

    /// Visits the index entries of one array's chunks whose max key is at least `from`, in
    /// max key order, with their tree keys, until `visit` returns `false`.
    pub(crate) fn for_each_chunk_entry(
        &self,
        tree: &Tree,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        from: Bound<i64>,
        mut visit: impl FnMut(&Bytes, &ChunkRef) -> Result<bool>,
    ) -> Result<()> {
        let (mut cursor, end) = self.chunk_cursor(tree, info, key, field, from)?;
        let pages = pages_for(self.pages, info);
        cursor.for_each(tree, &pages, |tree_key, value| {
            if *tree_key >= end {
                return Ok(false);
            }
            let entry = decode_chunk_entry(tree_key, value, &pages)
                .map_err(|e| self.placed(e, tree, tree_key))?;
            visit(tree_key, &entry)
        })
    }

    /// A cursor at the first index entry of one array's chunks whose max key is at least
    /// `from`, and the key where that array's entries end.
    pub(in crate::store) fn chunk_cursor(
        &self,
        tree: &Tree,
        info: &CollectionInfo,
        key: &[u8],
        field: usize,
        from: Bound<i64>,
    ) -> Result<(crate::page::tree::Cursor, Bytes)> {
        let start = match from {
            Bound::Included(k) | Bound::Excluded(k) => {
                keys::chunk(info.id, key, info.slot(field), k, 0)
            }
            Bound::Unbounded => Bytes::from(keys::chunks(info.id, key, info.slot(field))),
        };
        let cursor = tree.cursor(&pages_for(self.pages, info), Bound::Included(&start))?;
        Ok((cursor, keys::chunks_end(info.id, key, info.slot(field))))
    }

    pub fn outliers(
        &self,
        version: &Version,
        info: &CollectionInfo,
        field: usize,
    ) -> Result<Vec<Outlier>> {
        let start = Bytes::from(keys::outliers(info.id, info.slot(field)));
        let end = keys::outliers_end(info.id, info.slot(field));
        let pages = pages_for(self.pages, info);
        let mut cursor = version.tree.cursor(&pages, Bound::Included(&start))?;
        let mut parents = Vec::new();
        while let Some((tree_key, _)) = cursor.next(&version.tree, &pages)? {
            if tree_key >= end {
                break;
            }
            parents.push(tree_key.slice(start.len()..));
        }
        let mut outliers = Vec::with_capacity(parents.len());
        for key in parents {
            let record = self
                .parent_record(version, info, &key, |_| false)?
                .ok_or_else(|| {
                    let marker = keys::outlier(info.id, info.slot(field), &key);
                    let reason = format!("outlier marker for missing parent {key:x?}");
                    self.placed(
                        Error::corruption(UNPLACED, 0, reason),
                        &version.tree,
                        &marker,
                    )
                })?;
            outliers.push(Outlier {
                total: record.arrays[field].total,
                key,
            });
        }
        Ok(outliers)
    }
}

/// What [`Reads::for_each_chunk_in`] finds of one array's chunks in a range.
pub(in crate::store) enum InRange<'a> {
    /// A leaf of the array's entries alone, all inside the range, by their summary.
    Leaf(&'a Summary),
    /// One entry reaching into the range.
    Entry(ChunkRef),
}

/// The summary of a chunk index entry held in its leaf; `None` for anything else.
/// A parent's entry as its leaf holds it (the tree's key and the value), as a record read
/// from the tree.
/// A parent record's place in the tree at one version: where the cache's point read walks
/// after a record tier miss.
struct TreeRecord<'a> {
    tree: &'a Tree,
    pages: Pages<'a>,
    collection: crate::catalog::CollectionId,
    key: &'a [u8],
}

impl<'a> TreeRecord<'a> {
    fn new(
        pages: &'a PageStore,
        version: &'a Version,
        info: &CollectionInfo,
        key: &'a [u8],
    ) -> Self {
        TreeRecord {
            tree: &version.tree,
            pages: pages_for(pages, info),
            collection: info.id,
            key,
        }
    }
}

impl RecordSource<Cached> for TreeRecord<'_> {
    type Entry = LeafEntry;

    fn walk(&self, keeping: LeafKeeping) -> Result<(Option<LeafEntry>, Option<Unkept>)> {
        keys::with_parent(self.collection, self.key, |tree_key| match keeping {
            LeafKeeping::Keep => Ok((self.tree.get_entry(&self.pages, tree_key)?, None)),
            LeafKeeping::HandBack => self.tree.get_entry_or_read(&self.pages, tree_key),
        })
    }

    fn is_large((_, value): &LeafEntry) -> bool {
        matches!(value, Value::Large(_))
    }

    fn read(&self, (tree_key, value): LeafEntry) -> Result<(Bytes, Bytes)> {
        Ok((
            keys::parent_key_of(&tree_key),
            self.pages.value_bytes(&value)?,
        ))
    }
}

/// A point read of `key` at `version` as the record tier sees it; `epoch` reads the record
/// epoch.
fn record_at<'k>(
    version: &Version,
    info: &CollectionInfo,
    key: &'k [u8],
    epoch: &'k dyn Fn() -> u64,
) -> RecordAt<'k> {
    RecordAt {
        collection: info.id,
        key,
        // A transaction's own view: the tier holds published versions' records only.
        generation: version.own_chunks.is_none().then_some(version.generation),
        epoch,
    }
}

/// The page store as a read of `info`'s documents reads it.
pub(in crate::store) fn pages_for<'a>(pages: &'a PageStore, info: &CollectionInfo) -> Pages<'a> {
    pages.reading(Owner::collection(info.id))
}

pub(in crate::store) fn decode_chunk_entry(
    tree_key: &[u8],
    value: &Value,
    pages: &Pages,
) -> Result<ChunkRef> {
    match value {
        Value::Inline(bytes) => decode_inline_chunk_entry(tree_key, bytes),
        large => {
            let bytes = pages.value_bytes(large)?;
            ChunkRef::decode(bytes).map_err(|reason| {
                Error::corruption(UNPLACED, 0, format!("chunk entry {tree_key:x?}: {reason}"))
            })
        }
    }
}

fn chunk_entry_summary(key: &Bytes, value: &Value) -> Option<Summary> {
    match value {
        Value::Inline(bytes) if keys::is_chunk_entry(key) => ChunkRef::decode_slice(bytes)
            .ok()
            .map(|entry| entry.summary),
        _ => None,
    }
}

/// A chunk index entry from its inline value's bytes.
fn decode_inline_chunk_entry(tree_key: &[u8], bytes: &[u8]) -> Result<ChunkRef> {
    ChunkRef::decode_slice(bytes).map_err(|reason| {
        Error::corruption(UNPLACED, 0, format!("chunk entry {tree_key:x?}: {reason}"))
    })
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::{
        api::Db,
        catalog::{CollectionSpec, Layout},
        options::Options,
    };

    fn body(db: &Db, version: &Version, key: &str) -> Option<Bytes> {
        let info = version.catalog.by_name.get("docs").unwrap().clone();
        db.engine
            .reads()
            .parent_record(version, &info, key.as_bytes(), |_| true)
            .unwrap()
            .map(|record| record.body)
    }

    /// A record that does not decode is reported where it is: the frame of the leaf that
    /// holds it, or of a large record, or the page in memory when it changed since the last
    /// checkpoint; never the page store at offset 0.
    #[test]
    fn a_record_that_does_not_decode_is_reported_at_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::new()).unwrap();
        db.create_collection(CollectionSpec::new("docs").array("a", Layout::Embed))
            .unwrap();
        let mut batch = db.batch();
        batch.put("docs", "small", "body");
        batch.put("docs", "large", vec![b'x'; 200_000]);
        batch.commit().unwrap();
        db.checkpoint().unwrap();
        let version = db.engine.current();
        let info = version.catalog.by_name.get("docs").unwrap().clone();
        let unplaced = || Error::corruption(UNPLACED, 0, "bad");
        let place = |key: &str| match db.engine.shared.placed(
            unplaced(),
            &version.tree,
            &keys::parent(info.id, key.as_bytes()),
        ) {
            Error::Corruption {
                file,
                offset,
                reason,
            } => {
                assert_eq!(reason, "bad");
                (file, offset)
            }
            other => panic!("{other}"),
        };
        // The small record: the frame of its leaf, in the checkpoint's page file.
        let (file, offset) = place("small");
        assert!(crate::log::parse_page_file_name(&file).is_some(), "{file}");
        let mut leaves = Vec::new();
        for (_, slot) in version.tree.table.iter() {
            if let crate::page::table::Slot::Disk(loc) = slot {
                leaves.push((crate::log::segment_name(loc.segment_id), loc.offset));
            }
        }
        assert!(leaves.contains(&(file, offset)));
        // The large record: its own frame.
        let Some(Value::Large(large)) = version
            .tree
            .get(
                &db.engine.shared.pages.maintaining(),
                &keys::parent(info.id, b"large"),
            )
            .unwrap()
        else {
            panic!("a 200,000-byte record is large");
        };
        assert_eq!(
            place("large"),
            (
                crate::log::segment_name(large.segment_id),
                large.frame_offset
            )
        );
        // A key the tree does not hold has no place; other errors pass as they are.
        assert_eq!(place("absent"), (UNPLACED.to_string(), 0));
        let other = Error::corruption("cold-1.seg", 7, "bad");
        assert!(matches!(
            db.engine.shared.placed(other, &version.tree, b"small"),
            Error::Corruption { offset: 7, .. }
        ));

        // Through a read: a record whose bytes are damaged, in a page changed since the last
        // checkpoint (the damage is made in memory: on disk, the frame's checksum stops it).
        let mut tree = version.tree.clone();
        let damaged = Value::Inline(Bytes::from_static(&[0xff; 9]));
        tree.insert(
            &db.engine.shared.pages.maintaining(),
            keys::parent(info.id, b"small"),
            damaged,
        )
        .unwrap();
        let damaged_version = Version {
            tree,
            ..(*version).clone()
        };
        let error = db
            .engine
            .reads()
            .document(&damaged_version, &info, b"small")
            .unwrap_err();
        match error {
            Error::Corruption { file, offset, .. } => {
                assert!(file.contains("changed since the last checkpoint"), "{file}");
                assert_eq!(offset, 0);
            }
            other => panic!("{other}"),
        }
    }

    /// A document's key is the key asked for however its record was found: read from its
    /// leaf (a tier miss: the key is then a slice of the leaf's), kept in the record tier,
    /// built there, projected, or read in a transaction's own view; keys short enough to
    /// be looked up from the stack and longer, with the leaves as a checkpoint left them in
    /// the cache and as read back from disk.
    #[test]
    fn a_document_has_the_key_asked_for_however_it_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let spec = CollectionSpec::new("docs").array("a", Layout::Subset { keep: 2 });
        let keys: Vec<Vec<u8>> = [1, 59, 60, 61, crate::limits::MAX_KEY_BYTES]
            .iter()
            .map(|&len| (0..len).map(|i| b'a' + (i % 26) as u8).collect())
            .collect();
        {
            let db = Db::open(dir.path(), Options::new()).unwrap();
            db.create_collection(spec).unwrap();
            let mut batch = db.batch();
            for key in &keys {
                batch.put("docs", key, "body");
                batch.push("docs", key, "a", crate::item::NewItem::new("x").key(1));
            }
            batch.commit().unwrap();
            db.checkpoint().unwrap();
        }
        for reopened in [false, true] {
            let db = Db::open(dir.path(), Options::new()).unwrap();
            let docs = db.collection("docs").unwrap();
            if !reopened {
                let mut batch = db.batch();
                batch.put("docs", "other", "body");
                batch.commit().unwrap();
                db.checkpoint().unwrap();
            }
            for key in &keys {
                // A miss, a hit on the kept record, a hit on the document built from it.
                for _ in 0..3 {
                    let document = docs.get(key).unwrap().unwrap();
                    assert_eq!(document.key(), &key[..], "key of {} bytes", key.len());
                    assert_eq!(document.body(), b"body");
                }
                let projected = docs.get_projected(key, &[]).unwrap().unwrap();
                assert_eq!(projected.key(), &key[..]);
            }
            assert!(docs.get("absent").unwrap().is_none());
            // A transaction with a write of its own reads through a view of its own.
            let mut txn = db.transaction();
            txn.put("docs", "mine", "body");
            let view = txn.collection("docs").unwrap();
            for key in &keys {
                assert_eq!(view.get(key).unwrap().unwrap().key(), &key[..]);
                let projected = view.get_projected(key, &[]).unwrap().unwrap();
                assert_eq!(projected.key(), &key[..]);
            }
            assert!(view.get("absent").unwrap().is_none());
        }
    }

    /// A reader still on the version before a commit reads the record as it was, and leaves
    /// nothing in the record tier: were it kept, readers of the new version would find it.
    #[test]
    fn a_reader_of_an_older_version_puts_nothing_in_the_record_tier() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::new()).unwrap();
        db.create_collection(CollectionSpec::new("docs")).unwrap();
        let mut batch = db.batch();
        batch.put("docs", "k", "old");
        batch.commit().unwrap();
        let old = db.engine.current();
        let mut batch = db.batch();
        batch.put("docs", "k", "new");
        batch.commit().unwrap();
        let new = db.engine.current();
        assert!(new.generation > old.generation);
        assert_eq!(body(&db, &old, "k").as_deref(), Some(&b"old"[..]));
        assert_eq!(
            db.engine
                .shared
                .pages
                .cache
                .records()
                .counts()
                .tier
                .resident_bytes,
            0
        );
        assert_eq!(body(&db, &new, "k").as_deref(), Some(&b"new"[..]));
        assert_eq!(body(&db, &new, "k").as_deref(), Some(&b"new"[..]));
        assert_eq!(db.engine.shared.pages.cache.records().counts().tier.hits, 1);
        // And the old reader does not take the new version's record.
        assert_eq!(body(&db, &old, "k").as_deref(), Some(&b"old"[..]));
        // A checkpoint changes no record: its version keeps the generation, and the
        // record stays where readers of either find it.
        db.checkpoint().unwrap();
        assert_eq!(db.engine.current().generation, new.generation);
        assert_eq!(
            body(&db, &db.engine.current(), "k").as_deref(),
            Some(&b"new"[..])
        );
        assert_eq!(db.engine.shared.pages.cache.records().counts().tier.hits, 2);
    }

    /// The second `get` of a record takes the document the first hit built; a projected
    /// read neither takes it nor leaves one; a commit to the record takes it away with the
    /// record, so an older reader never sees the newer document nor a newer one the older.
    #[test]
    fn a_document_built_from_the_record_tier_is_kept_with_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::new()).unwrap();
        let spec = CollectionSpec::new("docs").array("a", Layout::Subset { keep: 2 });
        let docs = db.create_collection(spec).unwrap();
        let mut batch = db.batch();
        batch.put("docs", "k", "old");
        batch.push("docs", "k", "a", crate::item::NewItem::new("x").key(1));
        batch.commit().unwrap();
        let records = db.engine.shared.pages.cache.records();
        let info = db
            .engine
            .current()
            .catalog
            .by_name
            .get("docs")
            .unwrap()
            .clone();
        let kept = |generation| records.get(info.id, b"k", generation);

        // A miss keeps the record alone; a projected hit builds nothing to keep.
        let first = docs.get("k").unwrap().unwrap();
        let projected = docs.get_projected("k", &[]).unwrap().unwrap();
        assert!(projected.array("a").unwrap().inline.is_empty());
        let generation = db.engine.current().generation;
        assert!(kept(generation).unwrap().1.is_none());
        let resident = records.counts().tier.resident_bytes;

        // The first whole hit builds the document and keeps it, weighed; the next takes it.
        let second = docs.get("k").unwrap().unwrap();
        assert_eq!(second, first);
        let held = kept(generation).unwrap().1.expect("kept with its record");
        assert!(Arc::ptr_eq(&held.0, &second.0));
        assert_eq!(
            records.counts().tier.resident_bytes,
            resident + second.memory_bytes()
        );
        let third = docs.get("k").unwrap().unwrap();
        assert!(Arc::ptr_eq(&third.0, &second.0));
        let old = db.engine.current();

        let mut batch = db.batch();
        batch.put("docs", "k", "new");
        batch.commit().unwrap();
        // The commit puts the new record in the old one's place, without the document
        // built from the old one; readers of the new version find it, of the old not.
        let generation = db.engine.current().generation;
        let (refreshed, document) = kept(generation).expect("the new record kept");
        assert!(document.is_none());
        assert!(kept(generation - 1).is_none());
        assert_eq!(
            records.counts().tier.resident_bytes,
            crate::cache::records::entry_weight(1 + refreshed.value().len())
        );
        let hits = records.counts().tier.hits;
        assert_eq!(docs.get("k").unwrap().unwrap().body(), b"new");
        assert_eq!(docs.get("k").unwrap().unwrap().body(), b"new");
        assert_eq!(records.counts().tier.hits, hits + 2);
        assert!(kept(db.engine.current().generation).unwrap().1.is_some());
        // The reader of the version before the commit reads its own record, past the tier.
        let before = db
            .engine
            .reads()
            .document(&old, &info, b"k")
            .unwrap()
            .unwrap();
        assert_eq!(before.body(), b"old");
        assert_eq!(before.array("a").unwrap().inline.len(), 1);
    }
}
