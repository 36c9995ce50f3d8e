//! The writer and group commit: the hot log and what the next checkpoint must know, behind
//! one lock, and the queue of batches waiting for it. A committing thread queues its batch
//! and takes the lock; whoever holds it commits every batch queued so far as one group.

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use super::ops::{Expired, Request};
use crate::error::Result;
use crate::log::{HotLog, LogTail};

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

/// The writer and the batches waiting for it.
pub(super) struct GroupCommit {
    writer: Mutex<Writer>,
    queue: Mutex<Vec<Arc<Request>>>,
}

/// What a committing thread finds once it holds the writer.
pub(super) enum Turn<'a> {
    /// Another thread committed its batch in its group: here is the outcome.
    Served(Result<Expired>),
    /// It leads: the writer, and every batch queued so far (its own among them).
    Lead(MutexGuard<'a, Writer>, Vec<Arc<Request>>),
}

impl GroupCommit {
    pub fn new(writer: Writer) -> GroupCommit {
        GroupCommit {
            writer: Mutex::new(writer),
            queue: Mutex::new(Vec::new()),
        }
    }

    /// The writer, for work that must not run beside a commit (a checkpoint, compaction,
    /// a consistent look at the log).
    pub fn lock(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock()
    }

    /// Queues `request` and waits for the writer.
    pub fn enter(&self, request: &Arc<Request>) -> Turn<'_> {
        self.queue.lock().push(request.clone());
        let writer = self.writer.lock();
        if let Some(result) = request.result.lock().take() {
            return Turn::Served(result);
        }
        let requests = std::mem::take(&mut *self.queue.lock());
        Turn::Lead(writer, requests)
    }
}
