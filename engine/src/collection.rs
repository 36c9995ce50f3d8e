//! Reading a collection: `Collection` reads the latest committed state at each call,
//! `SnapshotCollection` the state of its snapshot; both go through `At`, the reads of one
//! collection at one version.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use bytes::Bytes;

use crate::cache;
use crate::catalog::{CollectionInfo, CollectionSpec};
use crate::db::Db;
use crate::document::{Document, ItemPage, ItemQuery, Outlier};
use crate::item::Summary;
use crate::page::keys;
use crate::page::tree::Cursor as TreeCursor;
use crate::pattern::{self, Operation};
use crate::store::decode::decode_document;
use crate::store::{Shared, Version, check_key};
use crate::{Error, Result};

/// Parents per batch when a collection-wide expiry walks the parents with buckets.
const EXPIRY_BATCH_PARENTS: usize = 1_000;

/// The reads of one collection at one version.
pub(crate) struct At<'a> {
    pub shared: &'a Arc<Shared>,
    pub info: &'a Arc<CollectionInfo>,
    pub version: Arc<Version>,
}

pub(crate) fn field_index(info: &CollectionInfo, field: &str) -> Result<usize> {
    info.spec
        .field_index(field)
        .ok_or_else(|| Error::UnknownField {
            collection: info.spec.name().to_string(),
            field: field.to_string(),
        })
}

/// `info`'s collection as `version` knows it: the same collection (not one created later
/// under the same name), or `Error::UnknownCollection`.
fn check_known(info: &CollectionInfo, version: &Version) -> Result<()> {
    match version.catalog.by_name.get(info.spec.name()) {
        Some(known) if known.id == info.id => Ok(()),
        _ => Err(Error::UnknownCollection {
            name: info.spec.name().to_string(),
        }),
    }
}

impl At<'_> {
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Document>> {
        let _owner = cache::attribute(self.info.id);
        check_key(key)?;
        self.shared.document(&self.version, self.info, key)
    }

    pub(crate) fn get_projected(&self, key: &[u8], fields: &[&str]) -> Result<Option<Document>> {
        let mut wanted = vec![false; self.info.spec.arrays().len()];
        for field in fields {
            wanted[field_index(self.info, field)?] = true;
        }
        let _owner = cache::attribute(self.info.id);
        check_key(key)?;
        let record = self
            .shared
            .read_record(&self.version, self.info, key, |index| wanted[index])?;
        Ok(record.map(|(key, record)| Document::new(self.info, key, record)))
    }

    pub(crate) fn items(
        &self,
        key: &[u8],
        field: &str,
        query: &ItemQuery,
    ) -> Result<Option<ItemPage>> {
        let _owner = cache::attribute(self.info.id);
        check_key(key)?;
        let field = field_index(self.info, field)?;
        self.shared
            .items(&self.version, self.info, key, field, query)
    }

    pub(crate) fn summary(
        &self,
        key: &[u8],
        field: &str,
        range: (Bound<i64>, Bound<i64>),
    ) -> Result<Option<Summary>> {
        let _owner = cache::attribute(self.info.id);
        check_key(key)?;
        let field = field_index(self.info, field)?;
        self.shared
            .summary(&self.version, self.info, key, field, range)
    }

    pub(crate) fn outliers(&self, field: &str) -> Result<Vec<Outlier>> {
        let _owner = cache::attribute(self.info.id);
        let field = field_index(self.info, field)?;
        self.shared.outliers(&self.version, self.info, field)
    }

    pub(crate) fn scan<K: AsRef<[u8]>>(self, range: impl RangeBounds<K>) -> Result<Scan> {
        let _owner = cache::attribute(self.info.id);
        let id = self.info.id;
        let start = match range.start_bound() {
            Bound::Included(k) => Bound::Included(keys::parent(id, k.as_ref())),
            Bound::Excluded(k) => Bound::Excluded(keys::parent(id, k.as_ref())),
            Bound::Unbounded => Bound::Included(keys::parent(id, &[])),
        };
        let end = match range.end_bound() {
            Bound::Included(k) => Bound::Included(keys::parent(id, k.as_ref())),
            Bound::Excluded(k) => Bound::Excluded(keys::parent(id, k.as_ref())),
            Bound::Unbounded => Bound::Excluded(keys::parents_end(id)),
        };
        let cursor = self
            .version
            .tree
            .cursor(&self.shared.pages, start.as_ref().map(|k| k.as_ref()))?;
        Ok(Scan {
            shared: self.shared.clone(),
            info: self.info.clone(),
            version: self.version,
            cursor,
            end,
            done: false,
        })
    }
}

/// A handle on one collection; each read sees the latest committed state.
#[derive(Clone)]
pub struct Collection {
    pub(crate) db: Db,
    pub(crate) info: Arc<CollectionInfo>,
}

impl Collection {
    pub fn name(&self) -> &str {
        self.info.spec.name()
    }

    pub fn spec(&self) -> &CollectionSpec {
        &self.info.spec
    }

    /// Reads at the latest committed state.
    fn at(&self) -> Result<At<'_>> {
        let version = self.db.shared.current();
        check_known(&self.info, &version)?;
        Ok(At {
            shared: &self.db.shared,
            info: &self.info,
            version,
        })
    }

    /// The parent `key` with its inline arrays, or `None`. Never reads cold storage.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Document>> {
        self.at()?.get(key.as_ref())
    }

    /// [`Collection::get`] with the inline items of the array fields named in `fields`
    /// only, as a projection would: every other array comes with its total, overflow flag
    /// and summary, and no inline items (`inline` empty), which spares decoding them (a
    /// profile with its follower count, not its first thousand followers).
    /// `Error::UnknownField` for a name the schema lacks.
    pub fn get_projected(
        &self,
        key: impl AsRef<[u8]>,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        self.at()?.get_projected(key.as_ref(), fields)
    }

    /// Items of array `field` of parent `key`, merged from wherever they live, in key
    /// order (ties in push order); `None` when the parent does not exist.
    pub fn items(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        query: &ItemQuery,
    ) -> Result<Option<ItemPage>> {
        self.at()?.items(key.as_ref(), field, query)
    }

    /// Count, sum, min, max and key bounds of the items of `field` whose keys fall in
    /// `range`; `None` when the parent does not exist.
    pub fn summary(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        range: impl RangeBounds<i64>,
    ) -> Result<Option<Summary>> {
        let range = (range.start_bound().cloned(), range.end_bound().cloned());
        self.at()?.summary(key.as_ref(), field, range)
    }

    /// The parents whose array `field` has items outside the parent record, in key order.
    pub fn outliers(&self, field: &str) -> Result<Vec<Outlier>> {
        self.at()?.outliers(field)
    }

    /// Drops, from every parent of this collection, the sealed buckets of `Bucket` array
    /// `field` whose newest item key is below `before` (see [`crate::Batch::expire_buckets`]).
    /// Only parents with buckets outside their record are visited (found through the
    /// outlier markers), in batches of 1,000 parents, each atomic; the sweep as a whole is
    /// not one transaction.
    pub fn expire_buckets(&self, field: &str, before: i64) -> Result<()> {
        let index = field_index(&self.info, field)?;
        let layout = self.info.spec.arrays()[index].layout;
        pattern::check_supports(layout, Operation::ExpireBuckets, self.name(), field)?;
        for parents in self.outliers(field)?.chunks(EXPIRY_BATCH_PARENTS) {
            let mut batch = self.db.batch();
            for parent in parents {
                batch.expire_buckets(self.name(), &parent.key, field, before);
            }
            batch.commit()?;
        }
        Ok(())
    }

    /// The parents whose keys fall in `range`, in key order, as of this call (later
    /// commits are not seen).
    pub fn scan<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<Scan> {
        self.at()?.scan(range)
    }
}

/// One collection as a [`crate::Snapshot`] sees it: every read at the snapshot's version,
/// whatever has been committed since. Reads only.
#[derive(Clone)]
pub struct SnapshotCollection {
    db: Db,
    info: Arc<CollectionInfo>,
    version: Arc<Version>,
}

impl SnapshotCollection {
    pub(crate) fn new(db: Db, info: Arc<CollectionInfo>, version: Arc<Version>) -> Self {
        SnapshotCollection { db, info, version }
    }

    fn at(&self) -> At<'_> {
        At {
            shared: &self.db.shared,
            info: &self.info,
            version: self.version.clone(),
        }
    }

    pub fn name(&self) -> &str {
        self.info.spec.name()
    }

    pub fn spec(&self) -> &CollectionSpec {
        &self.info.spec
    }

    /// [`Collection::get`] at the snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Document>> {
        self.at().get(key.as_ref())
    }

    /// [`Collection::get_projected`] at the snapshot.
    pub fn get_projected(
        &self,
        key: impl AsRef<[u8]>,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        self.at().get_projected(key.as_ref(), fields)
    }

    /// [`Collection::items`] at the snapshot.
    pub fn items(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        query: &ItemQuery,
    ) -> Result<Option<ItemPage>> {
        self.at().items(key.as_ref(), field, query)
    }

    /// [`Collection::summary`] at the snapshot.
    pub fn summary(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        range: impl RangeBounds<i64>,
    ) -> Result<Option<Summary>> {
        let range = (range.start_bound().cloned(), range.end_bound().cloned());
        self.at().summary(key.as_ref(), field, range)
    }

    /// [`Collection::outliers`] at the snapshot.
    pub fn outliers(&self, field: &str) -> Result<Vec<Outlier>> {
        self.at().outliers(field)
    }

    /// [`Collection::scan`] at the snapshot.
    pub fn scan<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<Scan> {
        self.at().scan(range)
    }
}

/// Parents in key order; see [`Collection::scan`]. Sees one committed state throughout.
pub struct Scan {
    pub(crate) shared: Arc<Shared>,
    info: Arc<CollectionInfo>,
    version: Arc<Version>,
    cursor: TreeCursor,
    end: Bound<Bytes>,
    done: bool,
}

impl Iterator for Scan {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let _owner = cache::attribute(self.info.id);
        let entry = self.cursor.next(&self.version.tree, &self.shared.pages);
        let (key, value) = match entry {
            Ok(Some(entry)) => entry,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(error) => {
                self.done = true;
                return Some(Err(error));
            }
        };
        let inside = match &self.end {
            Bound::Included(end) => key <= *end,
            Bound::Excluded(end) => key < *end,
            Bound::Unbounded => true,
        };
        if !inside {
            self.done = true;
            return None;
        }
        Some(
            self.shared
                .pages
                .value_bytes(&value)
                .and_then(|bytes| decode_document(&self.info, key.slice(4..), bytes)),
        )
    }
}
