//! The state shared by all clones of a `Db`, composed of parts that each own their state:
//! the page store and the cold store (with the cache they share), the versions readers
//! see and pin (`versions.rs`), the writer and its group commit (`writer.rs`), and the
//! maintenance thread's mailbox (`mailbox.rs`).

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use crate::cold::ColdStore;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::page::tree::Tree;
use crate::page::{PageStore, max_inline_record};
use crate::storage::LockGuard;
use crate::store::jobs::mailbox::Maintenance;
use crate::store::jobs::turns::JobState;
use crate::store::read::decode::placed;
use crate::store::read::reads::Reads;
use crate::store::versions::{Version, Versions};
use crate::store::write::read_set::ReadSet;
use crate::store::writer::{GroupCommit, Writer};

/// The state shared by all clones of a `Db`.
pub(in crate::store) struct Shared {
    pub(in crate::store) pages: PageStore,
    pub(in crate::store) cold: ColdStore,
    pub(in crate::store) options: Options,
    pub(super) versions: Versions,
    pub(super) commits: GroupCommit,
    pub(crate) maintenance: Arc<Maintenance>,
    /// What the jobs keep between their runs (`jobs/turns.rs`).
    pub(in crate::store) jobs: JobState,
    _lock: Box<dyn LockGuard>,
}

impl Shared {
    /// The engine's state as recovery (or creation) leaves it: `first` published, the
    /// writer ready for the next commit.
    pub(super) fn assemble(
        pages: PageStore,
        cold: ColdStore,
        options: Options,
        mut first: Version,
        writer: Writer,
        lock: Box<dyn LockGuard>,
    ) -> Shared {
        // What recovery's replay changed no reader asks for: as `publish` does.
        pages
            .cache
            .drop_superseded(&std::mem::take(&mut first.tree.superseded));
        Shared {
            pages,
            cold,
            options,
            versions: Versions::new(first),
            commits: GroupCommit::new(writer),
            maintenance: Arc::default(),
            jobs: JobState::default(),
            _lock: lock,
        }
    }

    /// The options the database was opened with.
    pub(in crate::store) fn options(&self) -> &Options {
        &self.options
    }

    pub(in crate::store) fn current(&self) -> Arc<Version> {
        self.versions.current()
    }

    /// The error every write now fails with, if the database refuses writes: after a failed
    /// write or sync (of the log or the cold store, by any thread), or when opened
    /// read-only.
    pub(in crate::store) fn write_error(&self) -> Option<Error> {
        let log = self.commits.lock().log.check_writable();
        log.and_then(|()| self.cold.check_writable()).err()
    }

    /// Reads at a version, over the parts they touch.
    pub(in crate::store) fn reads(&self) -> Reads<'_> {
        Reads::new(&self.pages, &self.cold, &self.versions)
    }

    /// `error` with the place of `tree_key`'s value when it is a decoder's corruption error
    /// (see [`placed`]).
    pub(in crate::store) fn placed(&self, error: Error, tree: &Tree, tree_key: &[u8]) -> Error {
        placed(error, tree, &self.pages, tree_key)
    }

    /// Notes, in a transaction's read set, the read of tree key `key` in `base` (the
    /// version the transaction started from).
    pub(in crate::store) fn note_read(
        &self,
        reads: &ReadSet,
        base: &Tree,
        key: Bytes,
    ) -> Result<()> {
        reads.note_point(&self.pages, base, key)
    }

    /// Notes, in a transaction's read set, a read of every tree key of `base` in the range.
    pub(in crate::store) fn note_range_read(
        &self,
        reads: &ReadSet,
        base: &Tree,
        (start, end): (Bound<Bytes>, Bound<Bytes>),
    ) -> Result<()> {
        reads.note_range(&self.pages, base, start, end)
    }

    /// Zeroes the cache's counters and what-if ratios.
    pub(in crate::store) fn reset_cache_stats(&self) {
        self.pages.cache.reset_stats();
    }

    /// A scratch file beside the database, for a batch's operations past its share of memory.
    pub(in crate::store) fn scratch(&self) -> crate::error::Result<crate::storage::Scratch> {
        self.pages.storage.scratch()
    }

    pub(super) fn max_inline(&self) -> usize {
        max_inline_record(self.pages.page_bytes)
    }

    /// Makes `version` the one readers see (see `Versions::publish`), and drops from the
    /// cache what no reader of it asks for.
    pub(super) fn publish(&self, version: Version) {
        let superseded = self.versions.publish(version);
        self.pages.cache.drop_superseded(&superseded);
    }
}
