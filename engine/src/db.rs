//! The public face: `Db` and `Batch` (reads are in `collection.rs`, views in `snapshot.rs`).

use std::path::Path;
use std::sync::{Arc, Weak};

use bytes::Bytes;

use crate::catalog::CollectionSpec;
use crate::collection::{Array, Collection};
use crate::document::Cursor;
use crate::item::NewItem;
use crate::snapshot::Snapshot;
use crate::storage::{FsStorage, Storage};
use crate::store::Expired;
use crate::store::{BatchOp, Engine, ReadSet, Shared};
use crate::transaction::Transaction;
use crate::{
    cache::CacheStats,
    error::{Error, Result},
    options::{Durability, Options},
    store::{CompactReport, Inspection, SpaceStats, Stats, VerifyReport},
};

/// An open database. Cheap to clone; `Send + Sync`. Closed (and checkpointed) when the
/// last clone (including those inside `Collection` handles) is dropped.
///
/// ```
/// use skewdb::{CollectionSpec, Db, Layout, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new())?;
/// let followers = Layout::Outlier { inline_cap: 1000 };
/// let spec = CollectionSpec::new("users").array("followers", followers);
/// db.create_collection(spec)?;
/// assert_eq!(db.collection_names(), ["users"]);
/// let users = db.collection("users")?; // a handle, checked now
/// assert!(users.get("nobody")?.is_none());
/// db.close()?; // the final checkpoint's error, if any
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Db {
    pub(crate) engine: Engine,
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
        Ok(Db {
            engine: Engine::open(storage, options)?,
        })
    }

    /// Creates a collection with its schema, durably. Creating one that exists with the same
    /// schema does nothing; with a different schema it is `Error::SchemaConflict`.
    pub fn create_collection(&self, spec: CollectionSpec) -> Result<Collection> {
        let name = spec.name().to_string();
        self.engine
            .commit(vec![BatchOp::CreateCollection(spec)], Durability::Immediate)?;
        self.collection(&name)
    }

    /// The collection named `name`.
    pub fn collection(&self, name: &str) -> Result<Collection> {
        let version = self.engine.current();
        let info = version.catalog.get(name)?;
        Ok(Collection {
            engine: self.engine.clone(),
            info: info.clone(),
        })
    }

    /// The names of all collections, sorted.
    pub fn collection_names(&self) -> Vec<String> {
        self.engine
            .current()
            .catalog
            .by_name
            .keys()
            .cloned()
            .collect()
    }

    /// A consistent read view over every collection, as of the last commit; see
    /// [`Snapshot`].
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.engine.clone(), self.engine.current())
    }

    /// A read-modify-write transaction over every collection, starting at the last commit;
    /// see [`Transaction`].
    pub fn transaction(&self) -> Transaction {
        Transaction::new(self.engine.clone())
    }

    /// A new, empty batch, durable as the database's `Options::durability` says unless
    /// [`Batch::durability`] says otherwise.
    pub fn batch(&self) -> Batch {
        Batch::new(&self.engine)
    }

    /// Writes the whole database, as of one snapshot taken now, to the single file `path`:
    /// an online backup, taken while commits go on (they are not blocked; the backup holds
    /// every batch committed before it began and none after, as [`BackupReport::commits`]
    /// says). The file replaces any at `path` only once it is complete and synced. It is
    /// self-contained: every collection's schema, every parent's body and every item, in
    /// push order (`format-spec/backup.md`). [`Db::restore`] makes a database from it.
    ///
    /// [`BackupReport::commits`]: crate::BackupReport::commits
    pub fn backup(&self, path: impl AsRef<Path>) -> Result<crate::backup::BackupReport> {
        self.snapshot().backup(path)
    }

    /// Makes a new database in directory `dir` (which must not exist) from the backup file
    /// `backup`, and opens it with `options`. The database is built beside `dir` and renamed
    /// into place whole. It holds the same collections, bodies and items (keys, values,
    /// payloads), each array's items pushed again in their push order, so every layout
    /// places them as it did; push sequences are numbered anew from 0 per array. A damaged
    /// or truncated file is `Error::Corruption`, and nothing is left at `dir`.
    pub fn restore(
        backup: impl AsRef<Path>,
        dir: impl AsRef<Path>,
        options: Options,
    ) -> Result<Db> {
        let engine = crate::backup::restore(backup.as_ref(), dir.as_ref(), options)?;
        Ok(Db { engine })
    }

    /// Loads the backup file `name` of `source` into a new database over `target`, and
    /// opens it: [`Db::restore`] over any storage, without the directory's rename (see
    /// `skewdb::testing`; not part of the supported API).
    #[doc(hidden)]
    pub fn restore_from_storage(
        source: &dyn Storage,
        name: &str,
        target: Arc<dyn Storage>,
        options: Options,
    ) -> Result<Db> {
        let engine = crate::backup::restore_into(source, name, target, options)?;
        Ok(Db { engine })
    }

    /// Writes every changed page and a new checkpoint, so that reopening replays nothing.
    pub fn checkpoint(&self) -> Result<()> {
        self.engine.checkpoint()
    }

    /// Makes every batch committed so far durable, whatever its durability: after a bulk
    /// load under `Durability::Buffered`, one sync instead of one per batch.
    pub fn persist(&self) -> Result<()> {
        self.engine.persist()
    }

    /// Closes this handle after a final checkpoint, returning that checkpoint's error (the
    /// close on drop has nowhere to report one). Other clones of the `Db` (and the
    /// collection handles and snapshots, which hold one) keep the database open until they
    /// are dropped too.
    pub fn close(self) -> Result<()> {
        self.engine.checkpoint()
    }

    /// Gives back the space both tiers hold beyond the live state, now. Cold: the live
    /// chunks of every mostly-dead cold segment move to the tail, and runs of small chunks
    /// of one array merge into larger ones (fewer chunks for long reads). Hot: checkpoints
    /// until no sealed log segment is mostly dead (copying the live pages of each to the
    /// tail). Every segment of either tier no longer needed is removed; one some reader's
    /// version may still read from is removed by a later checkpoint, once that reader is
    /// done. Commits go on between the steps.
    pub fn compact(&self) -> Result<CompactReport> {
        self.engine.compact(&mut |_, _| {})
    }

    /// [`Db::compact`], calling `progress(done, total)` with the chunk and page bytes handled
    /// so far.
    pub fn compact_with_progress(
        &self,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<CompactReport> {
        self.engine.compact(&mut progress)
    }

    /// Reads every frame, page, record and chunk, checking every checksum and invariant, and
    /// reports what it read: files, segments, pages, records and collections.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.engine.verify()
    }

    /// [`Db::verify`] under its old name: it always was the same walk.
    #[deprecated(note = "the same walk as `Db::verify`; call that")]
    pub fn inspect(&self) -> Result<Inspection> {
        self.verify()
    }

    /// Counters of the cache, the commits, the log and checkpoints; reads the log's file sizes.
    pub fn stats(&self) -> Result<Stats> {
        self.engine.stats()
    }

    /// The cache's counters alone: cheaper than [`Db::stats`], which also reads file sizes.
    pub fn cache_stats(&self) -> CacheStats {
        self.engine.cache_stats()
    }

    /// Live and file bytes per tier, and what the files hold beyond the live state (space
    /// amplification). Walks the whole tree, reading pages past the cache: as costly as a
    /// scan of every page, so not part of [`Db::stats`].
    pub fn space(&self) -> Result<SpaceStats> {
        self.engine.space()
    }

    /// Zeroes the cache counters and the what-if ratios (resident objects stay).
    pub fn reset_stats(&self) {
        self.engine.pages.cache.reset_stats();
    }
}

/// What typed handles write into: a [`Batch`], or a [`crate::Transaction`]'s writes. Sealed:
/// the way in is the crate's own, so a transaction's writes cannot be committed past its
/// check through it:
///
/// ```compile_fail
/// fn bypass(writes: &mut impl skewdb::Writes) {
///     writes.pending().commit().unwrap();
/// }
/// ```
pub trait Writes: sealed::Pending {}

impl Writes for Batch {}

pub(crate) mod sealed {
    /// Only the crate can make one, so only the crate can call [`Pending::pending`].
    pub struct Token(());

    impl Token {
        // Only the typed layer (feature `serde`) makes one today.
        #[cfg_attr(not(feature = "serde"), allow(dead_code))]
        pub(crate) fn new() -> Token {
            Token(())
        }
    }

    /// The batch a writer queues into.
    pub trait Pending {
        fn pending(&mut self, token: Token) -> &mut super::Batch;
    }

    impl Pending for super::Batch {
        fn pending(&mut self, _: Token) -> &mut super::Batch {
            self
        }
    }
}

/// What a batch does to one array of one parent.
enum ArrayOp {
    Push(NewItem),
    /// Every item with the key, or the one pushed with the sequence number.
    Remove(i64, Option<u64>),
    Expire(i64),
}

/// Writes to apply atomically: all or nothing, also across a crash. Nothing is written
/// until [`Batch::commit`]; a batch dropped uncommitted is discarded. A batch does not keep
/// the database open: committing one after the last `Db` handle is gone is
/// `Error::Closed`.
///
/// ```
/// use skewdb::{CollectionSpec, Db, Durability, Layout, NewItem, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new().durability(Durability::Buffered))?;
/// let spec = CollectionSpec::new("users").array("followers", Layout::Outlier { inline_cap: 2 });
/// let users = db.create_collection(spec)?;
/// let followers = users.array("followers")?;
/// let mut batch = db.batch();
/// for id in 0..100u64 {
///     batch.push_to(&followers, "celebrity", NewItem::new(id.to_le_bytes()));
///     if batch.len() == 50 {
///         batch.commit()?; // and go on with the same batch
///     }
/// }
/// batch.durability(Durability::Immediate).commit()?; // this one synced on return
/// let celebrity = users.get("celebrity")?.expect("committed");
/// let array = celebrity.array("followers").expect("declared");
/// assert_eq!((array.total, array.inline.len(), array.has_overflow), (100, 2, true));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a batch writes nothing until it is committed"]
pub struct Batch {
    shared: Weak<Shared>,
    pub(crate) durability: Durability,
    pub(crate) ops: Vec<BatchOp>,
    /// Collection and field names already used by this batch, shared by its operations.
    names: Vec<Arc<str>>,
    /// The last parent key, shared by consecutive operations on one parent.
    last_key: Option<Bytes>,
}

impl Batch {
    /// An empty batch of `engine`'s, with its default durability; it does not keep the
    /// engine open.
    pub(crate) fn new(engine: &Engine) -> Batch {
        Batch {
            shared: Arc::downgrade(engine.shared()),
            durability: engine.options.durability,
            ops: Vec::new(),
            names: Vec::new(),
            last_key: None,
        }
    }

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
        let array = (self.name(collection), self.name(field));
        self.array_op(array, key.as_ref(), ArrayOp::Push(item))
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
        let array = (self.name(collection), self.name(field));
        self.array_op(array, key.as_ref(), ArrayOp::Remove(item_key, None))
    }

    /// Removes the one item `id` names (its key and push sequence, as [`crate::ItemPage::ids`]
    /// gives them) from array `field` of parent `key`, wherever it lives; items with the
    /// same key pushed at other times stay. Nothing if no item has that identity.
    pub fn remove_item(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        field: &str,
        id: Cursor,
    ) -> &mut Self {
        let array = (self.name(collection), self.name(field));
        self.array_op(array, key.as_ref(), ArrayOp::Remove(id.key, Some(id.seq)))
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
        let array = (self.name(collection), self.name(field));
        self.array_op(array, key.as_ref(), ArrayOp::Expire(before))
    }

    /// [`Batch::put`] into the collection of a handle (whose name was checked when the
    /// handle was made).
    pub fn put_in(
        &mut self,
        collection: &Collection,
        key: impl AsRef<[u8]>,
        body: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.put(collection.name(), key, body)
    }

    /// [`Batch::delete`] from the collection of a handle.
    pub fn delete_in(&mut self, collection: &Collection, key: impl AsRef<[u8]>) -> &mut Self {
        self.delete(collection.name(), key)
    }

    /// [`Batch::push`] to the array of a handle (whose collection and field were checked
    /// when the handle was made).
    pub fn push_to(&mut self, array: &Array, key: impl AsRef<[u8]>, item: NewItem) -> &mut Self {
        self.array_op(array.names(), key.as_ref(), ArrayOp::Push(item))
    }

    /// [`Batch::remove`] from the array of a handle.
    pub fn remove_from(
        &mut self,
        array: &Array,
        key: impl AsRef<[u8]>,
        item_key: i64,
    ) -> &mut Self {
        self.array_op(array.names(), key.as_ref(), ArrayOp::Remove(item_key, None))
    }

    /// [`Batch::remove_item`] from the array of a handle.
    pub fn remove_item_from(
        &mut self,
        array: &Array,
        key: impl AsRef<[u8]>,
        id: Cursor,
    ) -> &mut Self {
        self.array_op(
            array.names(),
            key.as_ref(),
            ArrayOp::Remove(id.key, Some(id.seq)),
        )
    }

    /// [`Batch::expire_buckets`] of the array of a handle.
    pub fn expire_buckets_of(
        &mut self,
        array: &Array,
        key: impl AsRef<[u8]>,
        before: i64,
    ) -> &mut Self {
        self.array_op(array.names(), key.as_ref(), ArrayOp::Expire(before))
    }

    /// Queues an operation on array `field` of `collection`'s parent `key`.
    fn array_op(
        &mut self,
        (collection, field): (Arc<str>, Arc<str>),
        key: &[u8],
        op: ArrayOp,
    ) -> &mut Self {
        let key = self.key(key);
        self.ops.push(match op {
            ArrayOp::Push(item) => BatchOp::Push {
                collection,
                key,
                field,
                item,
            },
            ArrayOp::Remove(item_key, seq) => BatchOp::Remove {
                collection,
                key,
                field,
                item_key,
                seq,
            },
            ArrayOp::Expire(before) => BatchOp::ExpireBuckets {
                collection,
                key,
                field,
                before,
            },
        });
        self
    }

    /// Operations queued, not yet committed.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when no operation is queued.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// How durable the commit is: `Immediate` (on disk when `commit` returns) or
    /// `Buffered` (written, synced by a later commit, checkpoint or [`Db::persist`]). The
    /// database's `Options::durability` by default.
    pub fn durability(&mut self, durability: Durability) -> &mut Self {
        self.durability = durability;
        self
    }

    /// Applies the batch, leaving it empty for the next operations. On error nothing of it
    /// is applied (and it is left empty too) and the database stays usable (except after a
    /// failed write or sync, which makes every later write fail).
    pub fn commit(&mut self) -> Result<()> {
        self.commit_checked(None).map(|_| ())
    }

    /// [`Batch::commit`], refused with `Error::Conflict` unless `reads` (a transaction's)
    /// still hold; returns what the batch's expiries dropped.
    pub(crate) fn commit_checked(&mut self, reads: Option<Arc<ReadSet>>) -> Result<Expired> {
        self.last_key = None;
        let ops = std::mem::take(&mut self.ops);
        match self.shared.upgrade() {
            Some(shared) => shared.commit_checked(ops, self.durability, reads),
            None if ops.is_empty() => Ok(Expired::default()),
            None => Err(Error::Closed),
        }
    }
}
