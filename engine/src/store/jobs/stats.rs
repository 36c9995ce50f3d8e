//! Counters for `Db::stats`.

use crate::cache::CacheStats;
use crate::error::Result;
use crate::store::jobs::progress::MigrationProgress;
use crate::store::jobs::segments;
use crate::store::shared::Shared;

/// Counters shown by `Db::stats`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// The cache's counters.
    pub cache: CacheStats,
    /// Batches committed since open.
    pub commits: u64,
    /// Groups the commits were written in (one write, and one sync under `Immediate`, each).
    pub commit_groups: u64,
    /// Syncs of the hot log since open.
    pub log_syncs: u64,
    /// Checkpoints written since open.
    pub checkpoints: u64,
    /// Log bytes replayed at open; bounded by `Options::checkpoint_bytes` plus one group.
    pub replayed_bytes: u64,
    /// Pages changed since the last checkpoint, held in memory.
    pub dirty_pages: u64,
    /// Bytes of large records changed by patches and held in memory until they are logged
    /// whole (at most a quarter of `Options::cache_bytes` after any commit).
    pub held_bytes: u64,
    /// The sequence number the next log frame gets.
    pub next_lsn: u64,
    /// Frames up to this sequence number are durable.
    pub durable_lsn: u64,
    /// Hot files: log segments and page files (the checkpoints' page images).
    pub log_segments: u64,
    /// Bytes of them.
    pub log_bytes: u64,
    /// Dropped collections and arrays whose records are not all reclaimed yet (the
    /// maintenance thread deletes them in steps; `Db::compact` finishes the work).
    pub retired: u64,
    /// The layout changes running, with how far the maintenance thread has moved their
    /// parents.
    pub migrations: Vec<MigrationProgress>,
}

impl Shared {
    pub(in crate::store) fn cache_stats(&self) -> CacheStats {
        let version = self.current();
        self.pages.cache.stats(|id| {
            version
                .catalog
                .by_name
                .values()
                .find(|info| info.id == id)
                .map(|info| info.spec.name().to_string())
        })
    }

    /// The engine's counters, with the migrations' progress as `migrations` has it (see
    /// `Shared::migrations`: `Db::stats` asks both, so that this job calls no other).
    pub(in crate::store) fn stats(&self, migrations: Vec<MigrationProgress>) -> Result<Stats> {
        let (tail, durable_lsn, log_syncs, counters) = {
            let writer = self.commits.lock();
            (
                writer.log.tail(),
                writer.log.durable_lsn(),
                writer.log.syncs(),
                writer.counters(),
            )
        };
        let next_lsn = tail.next_lsn;
        let version = self.current();
        let segments = segments::segment_files(self.pages.storage.as_ref(), tail)?;
        let log_bytes = segments.values().sum();
        Ok(Stats {
            cache: self.cache_stats(),
            commits: version.commits,
            commit_groups: counters.commit_groups,
            log_syncs,
            checkpoints: counters.checkpoints,
            replayed_bytes: counters.replayed_bytes,
            dirty_pages: version.tree.table.dirty_count() as u64,
            held_bytes: version.tree.held_bytes,
            next_lsn,
            durable_lsn,
            log_segments: segments.len() as u64,
            log_bytes,
            retired: version.catalog.retired.len() as u64,
            migrations,
        })
    }
}
