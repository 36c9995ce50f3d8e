//! The public face: `Db` and `Batch` (reads are in `collection.rs`, views in `snapshot.rs`).

use std::path::Path;
use std::sync::Arc;

use super::batch::Batch;
use super::collection::{Collection, CollectionHandle};
use super::snapshot::Snapshot;
use super::transaction::Transaction;
use super::view::Latest;
use crate::alter::Alteration;
use crate::catalog::CollectionSpec;
use crate::storage::{FsStorage, Storage};
use crate::store::{BatchOp, Engine};
use crate::{
    cache::CacheStats,
    error::Result,
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

    /// Opens the database in directory `path` read-only: a consistent view of the state
    /// durable (or at least written) when it opened, also while another process has the
    /// database open for writing, and taking no lock, so that any number of readers may
    /// look at once. It never writes, creates, renames or removes a file, not even to
    /// repair a crashed writer's torn tail (recovery's repairs stay in memory); a
    /// directory without a database is `Error::NoDatabase`.
    ///
    /// The view does not move: commits made after it opened are not seen (open again to
    /// see them). Every file of the database is held open from the open on, so the
    /// writer's log cleaning and compaction, which remove files, cannot pull them from
    /// under it (on Unix a removed file lives on while open); the disk space of the files
    /// it holds comes back only when it is dropped, so keep a read-only handle no longer
    /// than the look it serves. Every write (a batch, a transaction's commit,
    /// `create_collection`, `checkpoint`, `compact`, `persist`) is `Error::ReadOnly`. The
    /// options' `background` and `memory_map` are off, whatever they say.
    ///
    /// ```
    /// use skewdb::{CollectionSpec, Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let writer = Db::open(dir.path(), Options::new())?;
    /// writer.create_collection(CollectionSpec::new("users"))?;
    /// let mut batch = writer.batch();
    /// batch.put("users", "alice", "hello");
    /// batch.commit()?;
    /// let reader = Db::open_read_only(dir.path(), Options::new())?; // beside the writer
    /// let users = reader.collection("users")?;
    /// assert_eq!(users.get("alice")?.unwrap().body(), b"hello");
    /// assert_eq!(reader.batch().put("users", "bob", "x").commit().unwrap_err().kind(), "read_only");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let path = path.as_ref();
        let directory =
            || -> Result<Arc<dyn Storage>> { Ok(Arc::new(FsStorage::read_only(path)?)) };
        Ok(Db {
            engine: Engine::open_read_only(&directory, options)?,
        })
    }

    /// [`Db::open_read_only`] over any storage (the tests' simulation); not part of the
    /// supported API.
    #[doc(hidden)]
    pub fn open_read_only_with_storage(storage: Arc<dyn Storage>, options: Options) -> Result<Db> {
        let directory = || -> Result<Arc<dyn Storage>> { Ok(storage.clone()) };
        Ok(Db {
            engine: Engine::open_read_only(&directory, options)?,
        })
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
    /// schema does nothing (the same array fields, layouts and measures in any order: a
    /// schema change may have moved one); with a different schema it is
    /// `Error::SchemaConflict`.
    pub fn create_collection(&self, spec: CollectionSpec) -> Result<Collection> {
        let name = spec.name().to_string();
        self.engine
            .commit(vec![BatchOp::CreateCollection(spec)], Durability::Immediate)?;
        self.collection(&name)
    }

    /// Changes collection `name`'s schema, atomically and durably (see
    /// [`crate::Alteration`]); returns the collection under its (perhaps new) name. Handles
    /// opened before keep reading under the new schema (or answer
    /// `Error::UnknownCollection` after a rename). Errors: `UnknownCollection`,
    /// `UnknownField` (an array to drop or measure that it lacks), `InvalidSchema`,
    /// `InvalidName`, `SchemaConflict` (a rename to a name another collection has).
    pub fn alter_collection(&self, name: &str, alteration: Alteration) -> Result<Collection> {
        let to = alteration.new_name().unwrap_or(name).to_string();
        let mut batch = self.batch();
        batch
            .durability(Durability::Immediate)
            .alter_collection(name, alteration);
        batch.commit()?;
        self.collection(&to)
    }

    /// Renames collection `from` to `to`: [`Db::alter_collection`] with
    /// [`Alteration::rename`].
    pub fn rename_collection(&self, from: &str, to: &str) -> Result<Collection> {
        self.alter_collection(from, Alteration::new().rename(to))
    }

    /// Drops collection `name`, atomically and durably: it is gone for every reader at
    /// once (handles answer `Error::UnknownCollection`; a snapshot taken before still reads
    /// it) and its name is free. Returns without touching its records: the maintenance
    /// thread deletes them in steps after (see `format-spec/checkpoint.md`, retired
    /// records), and compaction gives their space back. Error: `UnknownCollection`.
    pub fn drop_collection(&self, name: &str) -> Result<()> {
        let mut batch = self.batch();
        batch
            .durability(Durability::Immediate)
            .drop_collection(name);
        batch.commit()
    }

    /// The collection named `name`.
    pub fn collection(&self, name: &str) -> Result<Collection> {
        let version = self.engine.current();
        let info = version.catalog.get(name)?;
        Ok(CollectionHandle {
            view: Latest {
                engine: self.engine.clone(),
            },
            info: info.clone(),
        })
    }

    /// The error every write now fails with, if the database refuses writes, `None` while
    /// it takes them. A failed write or sync is sticky (its data cannot be assumed safe by
    /// retrying): one in the maintenance thread, which no caller receives, shows here (and
    /// as a `tracing` warning) before the next write reports it. A database opened with
    /// [`Db::open_read_only`] answers `Error::ReadOnly`.
    pub fn write_error(&self) -> Option<crate::error::Error> {
        self.engine.write_error()
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
    /// are dropped too. A handle opened read-only has nothing to write: its close is `Ok`.
    pub fn close(self) -> Result<()> {
        self.engine.checkpoint_at_close()
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

    /// Waits until every layout change running has moved its parents (an
    /// [`crate::Alteration::set_layout`] moves them in the background, and commits go on
    /// beside it): the calling thread runs the migrations' steps itself, taking turns with
    /// the maintenance thread, so it returns without one too. Returns the migrations left
    /// open because some of their parents cannot move to the new layout (each with its
    /// `refused` keys); empty when every one has ended. Progress while one runs:
    /// [`crate::Stats::migrations`], whose counts only grow, up to their totals.
    pub fn wait_for_migrations(&self) -> Result<Vec<crate::store::MigrationProgress>> {
        self.engine.wait_for_migrations()
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
        self.engine.reset_cache_stats();
    }
}
