//! The versions readers see and what they pin: the current version, the replaced ones a
//! reader still holds, the segment files waiting for those readers, and the record tier's
//! epoch. Its state is its own; the rest of the store reaches it through these methods.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};

use crate::cache::CacheKey;
use crate::catalog::Catalog;
use crate::cold::DetachedChunks;
use crate::error::Result;
use crate::page::tree::Tree;

/// What readers see: one committed state.
#[derive(Clone)]
pub(crate) struct Version {
    pub tree: Tree,
    pub catalog: Arc<Catalog>,
    /// Batches committed since the database was opened.
    pub commits: u64,
    /// Even, and grows by two with each commit group; a version that changes no record (a
    /// checkpoint's) keeps its predecessor's. The record tier keeps what readers read with
    /// the generation they read it at (see `read_and_keep`, `publish_changes`).
    pub generation: u64,
    /// Set on a transaction's own view (the state it started from plus its writes, never
    /// published): the chunks its writes made, which no segment holds. Such a view reads
    /// past the record tier, whose records are the published versions'.
    pub own_chunks: Option<Arc<DetachedChunks>>,
}

impl Version {
    /// The version of a database opened at `tree` and `catalog`, before any commit.
    pub(super) fn opened(tree: Tree, catalog: Arc<Catalog>) -> Version {
        Version {
            tree,
            catalog,
            commits: 0,
            generation: 0,
            own_chunks: None,
        }
    }
}

/// Segment files waiting for the versions that may refer to them.
struct Doomed {
    readers: Vec<Weak<Version>>,
    files: Vec<String>,
}

/// The versions readers see and what they pin.
pub(super) struct Versions {
    current: RwLock<Arc<Version>>,
    /// Replaced versions some reader still holds.
    retired: Mutex<Vec<Weak<Version>>>,
    /// The current version's generation, odd while a commit group removes the records it
    /// changes and publishes (see `begin_record_change`).
    record_epoch: AtomicU64,
    /// Segment files no checkpoint needs any more, each removed once the readers that
    /// could still read from it are gone.
    doomed: Mutex<Vec<Doomed>>,
}

impl Versions {
    pub fn new(first: Version) -> Versions {
        Versions {
            current: RwLock::new(Arc::new(first)),
            retired: Mutex::new(Vec::new()),
            record_epoch: AtomicU64::new(0),
            doomed: Mutex::new(Vec::new()),
        }
    }

    pub fn current(&self) -> Arc<Version> {
        self.current.read().clone()
    }

    /// Makes `version` the one readers see; the one it replaces is remembered while a
    /// reader still holds it, so that no segment it may read from is removed under it.
    /// Returns the cache keys the new version superseded, which no reader of it asks for.
    #[must_use = "the superseded keys leave the cache"]
    pub fn publish(&self, mut version: Version) -> Vec<CacheKey> {
        let superseded = std::mem::take(&mut version.tree.superseded);
        let mut current = self.current.write();
        // Versions are published in commit order.
        assert!(
            version.commits >= current.commits,
            "a version older than the current one"
        );
        assert!(
            version.generation >= current.generation,
            "a version's generation older than the current one"
        );
        let old = std::mem::replace(&mut *current, Arc::new(version));
        drop(current);
        let mut retired = self.retired.lock();
        retired.retain(|reader| reader.strong_count() > 0);
        if Arc::strong_count(&old) > 1 {
            retired.push(Arc::downgrade(&old));
        }
        superseded
    }

    /// The record tier's epoch as a reader sees it: even while no commit changes records.
    pub fn record_epoch(&self) -> u64 {
        self.record_epoch.load(Ordering::SeqCst)
    }

    /// Turns the record epoch odd, as the writer starts removing the records a commit
    /// group changes; returns it. Only the writer calls this, then `end_record_change`.
    pub fn begin_record_change(&self) -> u64 {
        let epoch = self.record_epoch.fetch_add(1, Ordering::SeqCst) + 1;
        // Only the writer changes the epoch: it was even (no commit publishing) before.
        assert!(
            epoch % 2 == 1,
            "record epoch {epoch} even while a commit publishes"
        );
        epoch
    }

    /// Turns the record epoch even again, once the changed version is published.
    pub fn end_record_change(&self, epoch: u64) {
        self.record_epoch.store(epoch + 1, Ordering::SeqCst);
    }

    /// Dooms `files`: each is removed (by `remove_unread`) once every version a reader
    /// holds now is gone. Files already doomed are not doomed twice.
    pub fn doom(&self, mut files: Vec<String>) {
        let mut doomed = self.doomed.lock();
        let already: BTreeSet<&String> = doomed.iter().flat_map(|d| &d.files).collect();
        files.retain(|name| !already.contains(name));
        if !files.is_empty() {
            let readers = self.retired.lock().clone();
            doomed.push(Doomed { readers, files });
        }
    }

    /// Calls `remove` on each doomed file no reader can reach any more, stopping at the
    /// first error (the file stays doomed). Returns whether any file was removed.
    pub fn remove_unread(&self, mut remove: impl FnMut(&str) -> Result<()>) -> Result<bool> {
        let mut doomed = self.doomed.lock();
        let mut removed = false;
        let mut failed = None;
        doomed.retain(|d| {
            if d.readers.iter().any(|r| r.strong_count() > 0) || failed.is_some() {
                return true;
            }
            for file in &d.files {
                if let Err(error) = remove(file) {
                    failed = Some(error);
                    return true;
                }
            }
            removed = true;
            false
        });
        match failed {
            Some(error) => Err(error),
            None => Ok(removed),
        }
    }
}
