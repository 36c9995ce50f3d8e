//! The engine as the API holds it: the state every handle shares and the maintenance
//! thread that serves it.

use std::sync::{Arc, Weak};

use std::ops::Bound;

use bytes::Bytes;

use crate::cache::CacheStats;
use crate::catalog::{CollectionId, CollectionInfo};
use crate::error::{Error, Result};
use crate::options::{Durability, Options};
use crate::page::tree::Tree;
use crate::storage::{Scratch, Storage};
use crate::store::jobs::background::Background;
use crate::store::jobs::compact::CompactReport;
use crate::store::jobs::copy::CopiedRecord;
use crate::store::jobs::progress::MigrationProgress;
use crate::store::jobs::space::SpaceStats;
use crate::store::jobs::stats::Stats;
use crate::store::jobs::verify::Inspection;
use crate::store::open::read_only;
use crate::store::open::recovery::{self, Access};
use crate::store::read::reads::Reads;
use crate::store::shared::Shared;
use crate::store::versions::Version;
use crate::store::write::ops::{BatchOp, Expired};
use crate::store::write::queue::Queue;
use crate::store::write::read_set::ReadSet;

/// The engine as the API holds it: its state and, when it runs one, the maintenance thread,
/// which is stopped before the state is dropped (fields drop in order). Cheap to clone;
/// every handle the API gives out (a `Db`, a collection, a snapshot, a transaction) holds
/// one, so the engine stays open, and maintained, while any of them is alive.
#[derive(Clone)]
pub(crate) struct Engine {
    _background: Option<Arc<Background>>,
    pub(in crate::store) shared: Arc<Shared>,
}

impl Engine {
    /// Opens (creating if need be) the database over `storage`, and starts the maintenance
    /// thread if `options` ask for one.
    pub fn open(storage: Arc<dyn Storage>, options: Options) -> Result<Engine> {
        let run_background = options.background;
        let shared = Arc::new(recovery::open(storage, options, Access::ReadWrite)?);
        let background = match run_background {
            true => Some(Arc::new(Background::start(&shared).map_err(|source| {
                Error::io("spawn", "maintenance thread", source)
            })?)),
            false => None,
        };
        Ok(Engine {
            _background: background,
            shared,
        })
    }

    /// Opens the database `directory()` gives storage over read-only (see
    /// `Db::open_read_only`): no maintenance thread, no memory maps (a writer beside it
    /// may cut a file it would map), a log that refuses every write.
    pub fn open_read_only(
        directory: &dyn Fn() -> Result<Arc<dyn Storage>>,
        options: Options,
    ) -> Result<Engine> {
        let options = options.background(false).memory_map(false);
        Ok(Engine {
            _background: None,
            shared: Arc::new(read_only::open(directory, &options)?),
        })
    }

    /// A handle on the engine that does not keep it open (a batch's).
    pub fn downgrade(&self) -> WeakEngine {
        WeakEngine {
            shared: Arc::downgrade(&self.shared),
        }
    }
}

/// The engine as a batch holds it: writes reach it while some other handle keeps it open,
/// and fail with `Error::Closed` once none does.
#[derive(Clone)]
pub(crate) struct WeakEngine {
    shared: Weak<Shared>,
}

impl WeakEngine {
    /// A scratch file beside the database, for a batch's operations past its share of memory.
    pub fn scratch(&self) -> Result<Scratch> {
        self.shared.upgrade().ok_or(Error::Closed)?.scratch()
    }

    /// Commits a batch's writes, checked against `reads` if a transaction's (see
    /// [`Shared::commit_checked`]); an empty batch commits even when the engine has closed.
    pub fn commit_checked(
        &self,
        ops: Queue,
        durability: Durability,
        reads: Option<Arc<ReadSet>>,
    ) -> Result<Expired> {
        match self.shared.upgrade() {
            Some(shared) => shared.commit_checked(ops, durability, reads),
            None if ops.is_empty() => Ok(Expired::default()),
            None => Err(Error::Closed),
        }
    }
}

/// The API's boundary: everything a handle asks of the engine, and nothing else (the engine
/// does not deref to its state; the jobs and the parts stay inside `store/`).
impl Engine {
    /// The version readers start from now.
    pub fn current(&self) -> Arc<Version> {
        self.shared.current()
    }

    /// Reads at a version.
    pub fn reads(&self) -> Reads<'_> {
        self.shared.reads()
    }

    pub fn options(&self) -> &Options {
        self.shared.options()
    }

    /// The error every write now fails with, if the database refuses writes.
    pub fn write_error(&self) -> Option<Error> {
        self.shared.write_error()
    }

    /// Commits a batch (see [`Shared::commit`]).
    pub fn commit(&self, ops: Vec<BatchOp>, durability: Durability) -> Result<()> {
        self.shared.commit(ops, durability)
    }

    /// Commits a transaction's writes if its reads still hold (see
    /// [`Shared::commit_checked`]).
    pub fn commit_checked(
        &self,
        ops: Queue,
        durability: Durability,
        reads: Option<Arc<ReadSet>>,
    ) -> Result<Expired> {
        self.shared.commit_checked(ops, durability, reads)
    }

    /// A transaction's own view: `base` with its writes applied.
    pub fn own_view(
        &self,
        base: &Version,
        ops: impl Iterator<Item = Result<BatchOp>>,
    ) -> Result<Arc<Version>> {
        self.shared.own_view(base, ops)
    }

    /// Notes the read of tree key `key` of `base` in a transaction's read set.
    pub fn note_read(&self, reads: &ReadSet, base: &Tree, key: Bytes) -> Result<()> {
        self.shared.note_read(reads, base, key)
    }

    /// Notes a range read of `base` in a transaction's read set.
    pub fn note_range_read(
        &self,
        reads: &ReadSet,
        base: &Tree,
        range: (Bound<Bytes>, Bound<Bytes>),
    ) -> Result<()> {
        self.shared.note_range_read(reads, base, range)
    }

    /// Makes everything committed so far durable.
    pub fn persist(&self) -> Result<()> {
        self.shared.persist()
    }

    /// Writes every changed page and a new checkpoint file.
    pub fn checkpoint(&self) -> Result<()> {
        self.shared.checkpoint()
    }

    /// The checkpoint a close writes.
    pub fn checkpoint_at_close(&self) -> Result<()> {
        self.shared.checkpoint_at_close()
    }

    /// Compacts both tiers now (the supervisor's sequence of jobs).
    pub fn compact(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<CompactReport> {
        self.shared.compact(progress)
    }

    /// Finishes every migration that can finish; returns those left open.
    pub fn wait_for_migrations(&self) -> Result<Vec<MigrationProgress>> {
        self.shared.wait_for_migrations()
    }

    /// Checks every checksum and invariant.
    pub fn verify(&self) -> Result<Inspection> {
        self.shared.verify()
    }

    /// The engine's counters, with the migrations' progress.
    pub fn stats(&self) -> Result<Stats> {
        self.shared.stats(self.shared.migrations())
    }

    pub fn cache_stats(&self) -> CacheStats {
        self.shared.cache_stats()
    }

    /// Zeroes the cache's counters and what-if ratios.
    pub fn reset_cache_stats(&self) {
        self.shared.reset_cache_stats();
    }

    /// What the files hold.
    pub fn space(&self) -> Result<SpaceStats> {
        self.shared.space()
    }

    /// Gives a new collection the slots of the one a backup holds.
    pub fn set_slots(&self, id: CollectionId, backed_up: &CollectionInfo) -> Result<()> {
        self.shared.set_slots(id, backed_up)
    }

    /// Calls `each` with every record of `version`, for a backup.
    pub fn copy_records(
        &self,
        version: &Version,
        each: &mut dyn FnMut(CopiedRecord) -> Result<()>,
    ) -> Result<()> {
        self.shared.copy_records(version, each)
    }

    /// Writes a backup's records as one commit group.
    pub fn load_records(&self, records: &[CopiedRecord]) -> Result<()> {
        self.shared.load_records(records)
    }
}
