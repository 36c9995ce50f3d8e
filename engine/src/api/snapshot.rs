//! `Snapshot`: a consistent read view over every collection, at the version committed when
//! it was taken.

use std::sync::Arc;

use super::collection::{CollectionHandle, SnapshotCollection};
use super::view::AtSnapshot;

use crate::error::Result;
use crate::store::{Engine, Version};

/// A read view of the whole database as of one commit: every `get`, `items`, `summary`,
/// `scan` and `outliers` of every collection read through it sees that state, whatever
/// commits after it. Cheap to take (one reference to the published version) and to clone;
/// released when the last clone is dropped.
///
/// What it pins while it lives: on disk, the hot log and cold segments its version reads
/// from (space reclamation removes them only after the snapshot is dropped, so a snapshot
/// held for hours holds the log written meanwhile too); in memory, the pages its version
/// had changed since the checkpoint before it (at most about `Options::checkpoint_bytes`)
/// and any large record held for the next checkpoint.
///
/// ```
/// use skewdb::{CollectionSpec, Db, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new())?;
/// db.create_collection(CollectionSpec::new("users"))?;
/// let mut batch = db.batch();
/// batch.put("users", "alice", "v1");
/// batch.commit()?;
/// let snapshot = db.snapshot();
/// let mut batch = db.batch();
/// batch.put("users", "alice", "v2");
/// batch.commit()?;
/// let then = snapshot.collection("users")?.get("alice")?.expect("committed");
/// assert_eq!(then.body(), b"v1");
/// let now = db.collection("users")?.get("alice")?.expect("committed");
/// assert_eq!(now.body(), b"v2");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Snapshot {
    engine: Engine,
    version: Arc<Version>,
}

impl Snapshot {
    pub(crate) fn new(engine: Engine, version: Arc<Version>) -> Self {
        Snapshot { engine, version }
    }

    /// The collection named `name` as of the snapshot; `Error::UnknownCollection` for one
    /// created after it.
    pub fn collection(&self, name: &str) -> Result<SnapshotCollection> {
        let info = self.version.catalog.get(name)?.clone();
        Ok(CollectionHandle {
            view: AtSnapshot {
                engine: self.engine.clone(),
                version: self.version.clone(),
            },
            info,
        })
    }

    /// The names of the collections as of the snapshot, sorted.
    pub fn collection_names(&self) -> Vec<String> {
        self.version.catalog.by_name.keys().cloned().collect()
    }

    /// Writes the whole database as this snapshot sees it to the single file `path`, as
    /// [`crate::Db::backup`] does for a snapshot it takes itself: for a backup whose contents must
    /// match other reads made at the same snapshot.
    pub fn backup(&self, path: impl AsRef<std::path::Path>) -> Result<crate::backup::BackupReport> {
        crate::backup::write(&self.engine, &self.version, path.as_ref())
    }

    /// [`Snapshot::backup`] into file `name` of any storage, such as the simulation the
    /// crash tests use (see `skewdb::testing`; not part of the supported API).
    #[doc(hidden)]
    pub fn backup_to_storage(
        &self,
        storage: &dyn crate::storage::Storage,
        name: &str,
    ) -> Result<crate::backup::BackupReport> {
        crate::backup::write_to(&self.engine, &self.version, storage, name)
    }

    /// Batches committed since the database was opened, as of the snapshot: two snapshots
    /// with the same count see the same state.
    pub fn commits(&self) -> u64 {
        self.version.commits
    }
}
