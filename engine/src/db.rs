//! The public face: `Db`, `Batch`, `Collection`, `Document`, `Scan`.

use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::cache;
use crate::catalog::{CollectionId, CollectionInfo, CollectionSpec};
use crate::document::{Document, ItemPage, ItemQuery, Outlier};
use crate::item::NewItem;
use crate::item::Summary;
use crate::page::keys;
use crate::page::tree::Cursor as TreeCursor;
use crate::pattern::{self, Operation};
use crate::storage::{FsStorage, Storage};
use crate::store::background::Background;
use crate::store::decode::decode_document;
use crate::store::{BatchOp, Shared, Version, check_key};
use crate::{
    CacheStats, CompactReport, Error, Inspection, Options, Result, SpaceStats, Stats, VerifyReport,
};

/// Parents per batch when a collection-wide expiry walks the parents with buckets.
const EXPIRY_BATCH_PARENTS: usize = 1_000;

/// An open database. Cheap to clone; `Send + Sync`. Closed (and checkpointed) when the
/// last clone (including those inside `Collection` handles) is dropped.
#[derive(Clone)]
pub struct Db {
    /// The maintenance thread, stopped before `shared` is dropped (fields drop in order).
    _background: Option<Arc<Background>>,
    pub(crate) shared: Arc<Shared>,
}

impl Db {
    /// Opens (creating if need be) the database in directory `path`.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Self::open_with_storage(Arc::new(FsStorage::new(path)?), options)
    }

    /// Opens a database over any storage, such as the simulation the tests use (see
    /// `skewdb::testing`; not part of the supported API).
    #[doc(hidden)]
    pub fn open_with_storage(storage: Arc<dyn Storage>, options: Options) -> Result<Db> {
        let background = options.background;
        let shared = Arc::new(Shared::open(storage, options)?);
        let background = match background {
            true => Some(Arc::new(Background::start(&shared).map_err(|source| {
                Error::io("spawn", "maintenance thread", source)
            })?)),
            false => None,
        };
        Ok(Db {
            _background: background,
            shared,
        })
    }

    /// Creates a collection with its schema, durably. Creating one that exists with the same
    /// schema does nothing; with a different schema it is `Error::SchemaConflict`.
    pub fn create_collection(&self, spec: CollectionSpec) -> Result<Collection> {
        let name = spec.name().to_string();
        self.shared.commit(vec![BatchOp::CreateCollection(spec)])?;
        self.collection(&name)
    }

    /// The collection named `name`.
    pub fn collection(&self, name: &str) -> Result<Collection> {
        let version = self.shared.current();
        let info = version.catalog.get(name)?;
        Ok(Collection {
            db: self.clone(),
            info: info.clone(),
        })
    }

    /// The names of all collections, sorted.
    pub fn collection_names(&self) -> Vec<String> {
        self.shared
            .current()
            .catalog
            .by_name
            .keys()
            .cloned()
            .collect()
    }

    /// A new, empty batch.
    pub fn batch(&self) -> Batch {
        Batch {
            db: self.clone(),
            ops: Vec::new(),
            names: Vec::new(),
            last_key: None,
        }
    }

    /// Writes every changed page and a new checkpoint, so that reopening replays nothing.
    pub fn checkpoint(&self) -> Result<()> {
        self.shared.checkpoint()
    }

    /// Gives back the space both tiers hold beyond the live state, now. Cold: the live
    /// chunks of every mostly-dead cold segment move to the tail, and runs of small chunks
    /// of one array merge into larger ones (fewer chunks for long reads). Hot: checkpoints
    /// until no sealed log segment is mostly dead (copying the live pages of each to the
    /// tail). Every segment of either tier no longer needed is removed; one some reader's
    /// version may still read from is removed by a later checkpoint, once that reader is
    /// done. Commits go on between the steps.
    pub fn compact(&self) -> Result<CompactReport> {
        self.shared.compact(&mut |_, _| {})
    }

    /// [`Db::compact`], calling `progress(done, total)` with the chunk and page bytes handled
    /// so far.
    pub fn compact_with_progress(
        &self,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<CompactReport> {
        self.shared.compact(&mut progress)
    }

    /// Reads every frame, page, record and chunk, checking every checksum and invariant.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.shared.verify()
    }

    /// Files, segments, pages and records, for people (the same walk as `verify`).
    pub fn inspect(&self) -> Result<Inspection> {
        self.shared.verify()
    }

    pub fn stats(&self) -> Result<Stats> {
        self.shared.stats()
    }

    /// The cache's counters alone: cheaper than [`Db::stats`], which also reads file sizes.
    pub fn cache_stats(&self) -> CacheStats {
        self.shared.cache_stats()
    }

    /// Live and file bytes per tier, and what the files hold beyond the live state (space
    /// amplification). Walks the whole tree, reading pages past the cache: as costly as a
    /// scan of every page, so not part of [`Db::stats`].
    pub fn space(&self) -> Result<SpaceStats> {
        self.shared.space()
    }

    /// Zeroes the cache counters and the what-if ratios (resident objects stay).
    pub fn reset_stats(&self) {
        self.shared.pages.cache.reset_stats();
    }
}

/// Writes to apply atomically: all or nothing, also across a crash.
pub struct Batch {
    db: Db,
    ops: Vec<BatchOp>,
    /// Collection and field names already used by this batch, shared by its operations.
    names: Vec<Arc<str>>,
    /// The last parent key, shared by consecutive operations on one parent.
    last_key: Option<Bytes>,
}

impl Batch {
    fn key(&mut self, key: &[u8]) -> Bytes {
        if let Some(last) = &self.last_key
            && last.as_ref() == key
        {
            return last.clone();
        }
        let key = Bytes::copy_from_slice(key);
        self.last_key = Some(key.clone());
        key
    }

    fn name(&mut self, name: &str) -> Arc<str> {
        if let Some(known) = self.names.iter().find(|n| n.as_ref() == name) {
            return known.clone();
        }
        let name: Arc<str> = Arc::from(name);
        if self.names.len() < 16 {
            self.names.push(name.clone());
        }
        name
    }

    /// Sets the body of parent `key` in `collection`, creating the parent if need be; its
    /// arrays are left as they are.
    pub fn put(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        body: impl AsRef<[u8]>,
    ) -> &mut Self {
        let (collection, key) = (self.name(collection), self.key(key.as_ref()));
        self.ops.push(BatchOp::Put {
            collection,
            key,
            body: Bytes::copy_from_slice(body.as_ref()),
        });
        self
    }

    /// Deletes parent `key` of `collection` and every item of its arrays (nothing if absent).
    pub fn delete(&mut self, collection: &str, key: impl AsRef<[u8]>) -> &mut Self {
        let (collection, key) = (self.name(collection), self.key(key.as_ref()));
        self.ops.push(BatchOp::Delete { collection, key });
        self
    }

    /// Pushes an item to array `field` of parent `key` (created with an empty body if
    /// absent). The array's layout decides where the item lives.
    pub fn push(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        field: &str,
        item: NewItem,
    ) -> &mut Self {
        let (collection, field, key) = (
            self.name(collection),
            self.name(field),
            self.key(key.as_ref()),
        );
        self.ops.push(BatchOp::Push {
            collection,
            key,
            field,
            item,
        });
        self
    }

    /// Removes every item with key `item_key` from array `field` of parent `key`, wherever
    /// it lives (inline, tail or cold chunks). Totals and summaries stay exact; a `Subset`
    /// window refills from history; see `format-spec/arrays.md` for the rule of each layout.
    /// Removing from a parent that does not exist, or a key the array does not hold, does
    /// nothing.
    pub fn remove(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        field: &str,
        item_key: i64,
    ) -> &mut Self {
        let (collection, field, key) = (
            self.name(collection),
            self.name(field),
            self.key(key.as_ref()),
        );
        self.ops.push(BatchOp::Remove {
            collection,
            key,
            field,
            item_key,
        });
        self
    }

    /// Drops every sealed bucket of `Bucket` array `field` of parent `key` whose newest item
    /// key is below `before`, from the chunk index alone (no bucket is read); the open bucket
    /// and late items stay. Total and summary follow. `Error::WrongLayout` for an array of
    /// another layout.
    pub fn expire_buckets(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        field: &str,
        before: i64,
    ) -> &mut Self {
        let (collection, field, key) = (
            self.name(collection),
            self.name(field),
            self.key(key.as_ref()),
        );
        self.ops.push(BatchOp::ExpireBuckets {
            collection,
            key,
            field,
            before,
        });
        self
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Applies the batch. On error nothing of it is applied and the database stays usable
    /// (except after a failed write or sync, which makes every later write fail).
    pub fn commit(self) -> Result<()> {
        self.db.shared.commit(self.ops)
    }
}

/// A handle on one collection.
#[derive(Clone)]
pub struct Collection {
    db: Db,
    info: Arc<CollectionInfo>,
}

impl Collection {
    pub fn name(&self) -> &str {
        self.info.spec.name()
    }

    pub fn spec(&self) -> &CollectionSpec {
        &self.info.spec
    }

    fn id(&self) -> CollectionId {
        self.info.id
    }

    fn version(&self) -> Result<Arc<Version>> {
        let version = self.db.shared.current();
        match version.catalog.by_name.get(self.name()) {
            Some(info) if info.id == self.id() => Ok(version),
            _ => Err(Error::UnknownCollection {
                name: self.name().to_string(),
            }),
        }
    }

    fn field(&self, field: &str) -> Result<usize> {
        self.info
            .spec
            .field_index(field)
            .ok_or_else(|| Error::UnknownField {
                collection: self.name().to_string(),
                field: field.to_string(),
            })
    }

    /// The parent `key` with its inline arrays, or `None`. Never reads cold storage.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Document>> {
        let key = key.as_ref();
        let _owner = cache::attribute(self.id());
        check_key(key)?;
        let version = self.version()?;
        self.db.shared.document(&version, &self.info, key)
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
        let mut wanted = vec![false; self.info.spec.arrays().len()];
        for field in fields {
            wanted[self.field(field)?] = true;
        }
        let key = key.as_ref();
        let _owner = cache::attribute(self.id());
        check_key(key)?;
        let version = self.version()?;
        let record = self
            .db
            .shared
            .read_record(&version, &self.info, key, |index| wanted[index])?;
        Ok(record.map(|(key, record)| Document::new(&self.info, key, record)))
    }

    /// Items of array `field` of parent `key`, merged from wherever they live, in key
    /// order (ties in push order); `None` when the parent does not exist.
    pub fn items(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        query: &ItemQuery,
    ) -> Result<Option<ItemPage>> {
        let _owner = cache::attribute(self.id());
        let key = key.as_ref();
        check_key(key)?;
        let field = self.field(field)?;
        let version = self.version()?;
        self.db
            .shared
            .items(&version, &self.info, key, field, query)
    }

    /// Count, sum, min, max and key bounds of the items of `field` whose keys fall in
    /// `range`; `None` when the parent does not exist.
    pub fn summary(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        range: impl RangeBounds<i64>,
    ) -> Result<Option<Summary>> {
        let _owner = cache::attribute(self.id());
        let key = key.as_ref();
        check_key(key)?;
        let field = self.field(field)?;
        let version = self.version()?;
        let range = (range.start_bound().cloned(), range.end_bound().cloned());
        self.db
            .shared
            .summary(&version, &self.info, key, field, range)
    }

    /// The parents whose array `field` has items outside the parent record, in key order.
    pub fn outliers(&self, field: &str) -> Result<Vec<Outlier>> {
        let _owner = cache::attribute(self.id());
        let field = self.field(field)?;
        let version = self.version()?;
        self.db.shared.outliers(&version, &self.info, field)
    }

    /// Drops, from every parent of this collection, the sealed buckets of `Bucket` array
    /// `field` whose newest item key is below `before` (see [`Batch::expire_buckets`]).
    /// Only parents with buckets outside their record are visited (found through the
    /// outlier markers), in batches of 1,000 parents, each atomic; the sweep as a whole is
    /// not one transaction.
    pub fn expire_buckets(&self, field: &str, before: i64) -> Result<()> {
        let index = self.field(field)?;
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
        let _owner = cache::attribute(self.id());
        let version = self.version()?;
        let id = self.id();
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
        let cursor = version
            .tree
            .cursor(&self.db.shared.pages, start.as_ref().map(|k| k.as_ref()))?;
        Ok(Scan {
            shared: self.db.shared.clone(),
            info: self.info.clone(),
            version,
            cursor,
            end,
            done: false,
        })
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
