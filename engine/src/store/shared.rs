//! The state shared by all clones of a `Db`: the stores, the writer, and the version
//! readers see, with the versions some reader still holds.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};

use super::mailbox::Maintenance;
use super::ops::Request;
use crate::catalog::Catalog;
use crate::cold::{ColdStore, DetachedChunks};
use crate::log::{HotLog, LogTail};
use crate::options::Options;
use crate::page::tree::Tree;
use crate::page::{PageStore, max_inline_record};
use crate::storage::LockGuard;

/// What readers see: one committed state.
#[derive(Clone)]
pub(crate) struct Version {
    pub tree: Tree,
    pub catalog: Arc<Catalog>,
    /// Batches committed since the database was opened.
    pub commits: u64,
    /// Even, and grows by two with each commit group; a version that changes no record (a
    /// checkpoint's) keeps its predecessor's. The record tier keeps what readers read with
    /// the generation they read it at (see `record_bytes`, `publish_changes`).
    pub generation: u64,
    /// Set on a transaction's own view (the state it started from plus its writes, never
    /// published): the chunks its writes made, which no segment holds. Such a view reads
    /// past the record tier, whose records are the published versions'.
    pub own_chunks: Option<Arc<DetachedChunks>>,
}

/// Segment files waiting for the versions that may refer to them.
pub(super) struct Doomed {
    pub(super) readers: Vec<Weak<Version>>,
    pub(super) files: Vec<String>,
}

/// What only the committing thread touches, behind one lock: the hot log and what the next
/// checkpoint must know.
pub(super) struct Writer {
    pub(super) log: HotLog,
    /// Where the redo after the last checkpoint starts.
    pub(super) checkpoint_tail: LogTail,
    pub(super) bytes_since_checkpoint: u64,
    /// Cold chunk bytes written since the last checkpoint: the chunks they replace stay on
    /// disk until a checkpoint stops needing them, so these count towards the next one too.
    pub(super) cold_since_checkpoint: u64,
    pub(super) checkpoint_sequence: u64,
    pub(super) counters: WriterCounters,
}

/// What the writer counts for `Db::stats`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct WriterCounters {
    pub(super) checkpoints: u64,
    pub(super) commit_groups: u64,
    /// Log bytes replayed when the database was opened.
    pub(super) replayed_bytes: u64,
}

/// The state shared by all clones of a `Db`.
pub(crate) struct Shared {
    pub pages: PageStore,
    pub cold: ColdStore,
    pub options: Options,
    pub(super) current: RwLock<Arc<Version>>,
    pub(super) writer: Mutex<Writer>,
    pub(super) queue: Mutex<Vec<Arc<Request>>>,
    /// Replaced versions some reader still holds.
    pub(super) retired: Mutex<Vec<Weak<Version>>>,
    /// The current version's generation, odd while a commit group removes the records it
    /// changes and publishes (see `publish_changes`).
    pub(crate) record_epoch: AtomicU64,
    /// Log segments no checkpoint needs any more, each removed once the readers that could
    /// still read from it are gone.
    pub(super) doomed: Mutex<Vec<Doomed>>,
    pub(crate) maintenance: Arc<Maintenance>,
    pub(super) _lock: Box<dyn LockGuard>,
}

impl Shared {
    pub fn current(&self) -> Arc<Version> {
        self.current.read().clone()
    }

    pub(super) fn max_inline(&self) -> usize {
        max_inline_record(self.pages.page_bytes)
    }

    /// Makes `version` the one readers see; the one it replaces is remembered while a
    /// reader still holds it, so that no segment it may read from is removed under it.
    pub(super) fn publish(&self, mut version: Version) {
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
        drop(retired);
        // No reader of the new version asks for these any more.
        self.pages.cache.drop_superseded(&superseded);
    }
}
