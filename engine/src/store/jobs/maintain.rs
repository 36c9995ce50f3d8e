//! The supervisor: the one place that runs the jobs one after another. The maintenance
//! thread's turn (`maintain`), what a commit leaves to maintenance (`after_commit`: a wake of
//! the thread, a wait for its checkpoint under back pressure, or the work itself when there
//! is no thread), and
//! `Db::compact`'s sequence (retired drops, migrations, cold compaction, large records
//! relocated, checkpoints). The jobs themselves (`checkpoint.rs`, `compact.rs`,
//! `retired.rs`, `migrate.rs`, ...) call no other job (a test reads their calls:
//! `tests/tests/suite/call_graph.rs`), so that each can change without the others.

use std::time::Duration;

use bytes::Bytes;
use parking_lot::MutexGuard;

use crate::cold::chunk as cold_chunk;
use crate::error::Result;
use crate::events::{event, span, warn_on_error};
use crate::store::jobs::compact::{CompactReport, PLAN_WINDOW_BYTES, STEP_BYTES, Work};
use crate::store::jobs::mailbox::JobRun;
use crate::store::jobs::segments::{self, Clean, Sparse, sparse_segments};
use crate::store::shared::Shared;
use crate::store::writer::Writer;

/// How long a commit under back pressure waits for the thread's checkpoint before it looks
/// at the pressure again (the thread notifies it as soon as one ends).
const BACK_PRESSURE_PATIENCE: Duration = Duration::from_millis(100);

impl Shared {
    /// The maintenance thread's work: the checkpoint commits found due (if still due), then
    /// a cold compaction step.
    pub(crate) fn maintain(&self) -> Result<()> {
        let checkpoint = self.checkpoint_if_due(true);
        // Commits held by back pressure look at it again (even after a failure: the log
        // then refuses their writes, and they stop waiting).
        self.maintenance.checkpoint_done();
        checkpoint?;
        if self.options.reclaim {
            self.reclaim_step()?;
        }
        // What a drop retired goes a step at a time, the thread woken again for each; so do
        // the parents a layout change moves.
        if self.retired_step()? | self.migration_step()? {
            self.maintenance.wake();
        }
        Ok(())
    }

    /// What a commit asks of maintenance once its group is written (`writer` held by it
    /// until here): nothing while no checkpoint is due; a wake of the maintenance thread
    /// when one is. With the thread, a commit never runs a job itself: once the changed
    /// pages reach twice what makes a checkpoint due (the thread behind), it waits for the
    /// thread's checkpoint (back pressure: their memory stays bounded), as an LSM tree's
    /// writes stall behind its flushes. Without a thread (`Options::background(false)`),
    /// the committing thread runs the checkpoint and the reclamation step after it, the
    /// writer released first.
    pub(in crate::store) fn after_commit(&self, writer: MutexGuard<'_, Writer>) {
        let pressure = self.checkpoint_pressure(&writer);
        drop(writer);
        if pressure < 1.0 {
            return;
        }
        if self.maintenance.running() && !JobRun::here() {
            if pressure < 2.0 {
                self.maintenance.wake();
                return;
            }
            self.wait_for_pressure();
            return;
        }
        // No thread, or a job's own commit (a migration's batch): the batches are committed; a
        // failed checkpoint makes the next write fail. (The writer is free meanwhile: the
        // commits of other threads go on.) Under twice the pressure due, one already
        // running is left to do the work.
        warn_on_error!(
            self.checkpoint_if_due(pressure >= 2.0),
            "a checkpoint after a commit failed: the database refuses writes"
        );
        if self.options.reclaim && !self.maintenance.running() {
            warn_on_error!(
                self.reclaim_step(),
                "a reclamation step after a commit failed"
            );
        }
    }

    /// Waits, under back pressure, until the maintenance thread's checkpoints have brought
    /// the pressure under twice what is due, the database refuses writes, or the thread
    /// has stopped.
    fn wait_for_pressure(&self) {
        let _span = span!(debug, "back pressure");
        loop {
            self.maintenance.wait_for_checkpoint(BACK_PRESSURE_PATIENCE);
            let writer = self.commits.lock();
            let stuck = writer.log.check_writable().is_err() || !self.maintenance.running();
            if stuck || self.checkpoint_pressure(&writer) < 2.0 {
                return;
            }
        }
    }

    /// Compacts both tiers now. Cold first: the live chunks of mostly-dead cold segments
    /// move to the tail and runs of small chunks merge, `STEP_BYTES` per commit group. Then
    /// checkpoints until no sealed log segment is sparse, which also removes every segment
    /// of either tier the state no longer needs (a segment some reader's version may still
    /// read from goes at a later checkpoint, once that reader is done). The writer lock is
    /// released between steps, so commits go on. `progress(done, total)` follows the chunk
    /// and page bytes handled.
    pub(in crate::store) fn compact(
        &self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<CompactReport> {
        let _span = span!(info, "compaction");
        self.commits.lock().log.check_writable()?;
        let storage = self.pages.storage.as_ref();
        let cold_bytes = || -> Result<u64> {
            let mut total = 0;
            for name in storage.list()? {
                if cold_chunk::parse_segment_name(&name).is_some() {
                    total += segments::len_if_present(storage, &name)?.unwrap_or(0);
                }
            }
            Ok(total)
        };
        let hot_bytes = || -> Result<u64> {
            let tail = self.commits.lock().log.tail();
            Ok(segments::segment_files(storage, tail)?.values().sum())
        };
        let mut report = CompactReport {
            hot_bytes_before: hot_bytes()?,
            cold_bytes_before: cold_bytes()?,
            ..CompactReport::default()
        };
        // What drops retired goes first (the chunks it pointed at are then dead), and every
        // migration is finished (the chunks parents moved out of are dead too).
        self.reclaim_retired()?;
        while self.migration_step()? {}
        {
            let _writer = self.commits.lock();
            self.seal_cold_if_dead(&self.current().tree)?;
        }
        let hot_sparse = |writer: &Writer| -> Result<u64> {
            let tail = writer.log.tail().segment_id;
            let tree = &self.current().tree;
            let sparse = sparse_segments(
                storage,
                tree,
                (tail, self.jobs.checkpoints.open_page_file()),
                Clean::Compact,
            )?;
            Ok(sparse.iter().map(Sparse::live_bytes).sum())
        };
        let hot_before = hot_sparse(&self.commits.lock())?;
        // Cold: a window of the chunk index planned at a time (the total grows as each is
        // planned), one commit group per step.
        let mut cold_total = 0;
        let mut done_bytes = 0;
        let mut from: Option<Bytes> = None;
        loop {
            let plan =
                self.plan_cold(&self.current().tree, true, from.as_ref(), PLAN_WINDOW_BYTES)?;
            cold_total += plan.chunk_bytes();
            let total = cold_total + hot_before;
            progress(done_bytes, total);
            let mut step: Vec<Work> = Vec::new();
            let mut step_bytes = 0;
            let mut pieces = plan.work.into_iter().peekable();
            while let Some(piece) = pieces.next() {
                step_bytes += piece.chunk_bytes();
                step.push(piece);
                if step_bytes >= STEP_BYTES || pieces.peek().is_none() {
                    let done = self.run_cold_work(&mut self.commits.lock(), &step)?;
                    report.chunks_moved += done.moved;
                    report.chunks_merged += done.merged;
                    report.merged_into += done.merged_into;
                    done_bytes += step_bytes;
                    progress(done_bytes, total);
                    step.clear();
                    step_bytes = 0;
                }
            }
            match plan.resume {
                Some(key) => from = Some(key),
                None => break,
            }
        }
        // Hot: the segment being appended to is sealed first, so it can be cleaned too (the
        // chunks its redo refers to made durable before, as at any roll); large records
        // move out of the sparse segments, a step at a time, so that cleaning can empty them.
        let hot_total = {
            let mut writer = self.commits.lock();
            self.cold.sync()?;
            writer.log.seal()?;
            hot_sparse(&writer)?
        };
        while self.relocate_large(STEP_BYTES, Clean::Compact)? > 0 {}
        let total = cold_total + hot_total;
        progress(cold_total, total);
        // One checkpoint per step. Each step cleans at least one segment; the bound only
        // guards the loop.
        let files = segments::segment_ids(storage)?.len() + segments::page_file_ids(storage)?.len();
        for _ in 0..=files {
            self.checkpoint_now(Clean::Compact)?;
            let left = hot_sparse(&self.commits.lock())?;
            progress(cold_total + hot_total.saturating_sub(left), total);
            if left == 0 {
                break;
            }
        }
        progress(total, total);
        report.hot_bytes_after = hot_bytes()?;
        report.cold_bytes_after = cold_bytes()?;
        event!(info, report = ?report, "compacted");
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use crate::api::Db;
    use crate::catalog::CollectionSpec;
    use crate::options::{Durability, Options};

    /// With the maintenance thread, a commit that finds the pressure at twice what is due
    /// waits for the thread's checkpoint (the checkpoint job asserts, in debug builds, that
    /// it never runs on a committing thread): after every commit of a lone writer the
    /// pressure is back under twice, and the thread has written checkpoints.
    #[test]
    fn a_commit_under_back_pressure_waits_for_the_threads_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let options = Options::new()
            .cache_bytes(1 << 20)
            .checkpoint_bytes(64 * 1024)
            .durability(Durability::Buffered);
        let db = Db::open(dir.path(), options).unwrap();
        db.create_collection(CollectionSpec::new("c")).unwrap();
        let body = vec![7u8; 900];
        let mut highest: f64 = 0.0;
        for round in 0..200u32 {
            let mut batch = db.batch();
            for i in 0..40u32 {
                batch.put(
                    "c",
                    format!("k{:06}", (round * 7919 + i * 104_729) % 50_000),
                    &body[..],
                );
            }
            batch.commit().unwrap();
            let shared = &db.engine.shared;
            let pressure = shared.checkpoint_pressure(&shared.commits.lock());
            highest = highest.max(pressure);
            assert!(pressure < 2.0, "pressure {pressure} after commit {round}");
        }
        let stats = db.stats().unwrap();
        assert!(stats.checkpoints > 0, "{stats:?}");
        assert!(
            highest >= 1.0,
            "the load never made a checkpoint due: {highest}"
        );
    }
}
