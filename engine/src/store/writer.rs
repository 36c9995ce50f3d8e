//! The writer and group commit: the hot log and what the next checkpoint must know, behind
//! one lock, and the queue of batches waiting for it. A committing thread queues its batch
//! and takes the lock; whoever holds it commits every batch queued so far as one group.

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::error::Result;
use crate::log::{HotLog, LogTail};
use crate::store::write::ops::Expired;
use crate::store::write::queue::Request;

/// What only the committing thread touches, behind one lock: the hot log and what the next
/// checkpoint must know.
pub(super) struct Writer {
    /// The hot log, which the holder of the writer appends to and syncs.
    pub(super) log: HotLog,
    /// Where the redo after the last checkpoint starts.
    checkpoint_tail: LogTail,
    bytes_since_checkpoint: u64,
    /// Cold chunk bytes written since the last checkpoint: the chunks they replace stay on
    /// disk until a checkpoint stops needing them, so these count towards the next one too.
    cold_since_checkpoint: u64,
    checkpoint_sequence: u64,
    counters: WriterCounters,
}

impl Writer {
    /// The writer of `log` after checkpoint `checkpoint_sequence`, whose redo starts at
    /// `checkpoint_tail`; `replayed_bytes` of it were replayed when the database opened.
    pub(super) fn opened(
        log: HotLog,
        checkpoint_tail: LogTail,
        checkpoint_sequence: u64,
        replayed_bytes: u64,
    ) -> Writer {
        Writer {
            log,
            checkpoint_tail,
            bytes_since_checkpoint: replayed_bytes,
            cold_since_checkpoint: 0,
            checkpoint_sequence,
            counters: WriterCounters {
                replayed_bytes,
                ..WriterCounters::default()
            },
        }
    }

    /// Notes a commit group that logged `bytes` of redo and wrote `cold_bytes` of chunks.
    pub(super) fn committed_group(&mut self, bytes: u64, cold_bytes: u64) {
        self.bytes_since_checkpoint += bytes;
        self.cold_since_checkpoint += cold_bytes;
        self.counters.commit_groups += 1;
    }

    /// The larger of the log and cold bytes written since the last checkpoint, as a share
    /// of `checkpoint_bytes`.
    pub(super) fn written_share(&self, checkpoint_bytes: u64) -> f64 {
        let limit = checkpoint_bytes as f64;
        (self.bytes_since_checkpoint as f64 / limit).max(self.cold_since_checkpoint as f64 / limit)
    }

    /// Whether nothing was logged since the last checkpoint.
    pub(super) fn logged_nothing_since_checkpoint(&self) -> bool {
        self.log.tail() == self.checkpoint_tail
    }

    /// Where the redo after the last checkpoint starts.
    pub(super) fn checkpoint_tail(&self) -> LogTail {
        self.checkpoint_tail
    }

    /// The sequence number the next checkpoint takes.
    pub(super) fn next_checkpoint_sequence(&self) -> u64 {
        self.checkpoint_sequence + 1
    }

    /// What was written since the last checkpoint, as a checkpoint starts.
    pub(super) fn written_since_checkpoint(&self) -> Written {
        Written {
            bytes: self.bytes_since_checkpoint,
            cold_bytes: self.cold_since_checkpoint,
            logged_nothing: self.logged_nothing_since_checkpoint(),
        }
    }

    /// Notes the checkpoint that `next_checkpoint_sequence` named, of the state when the
    /// log's tail was `tail` and `written` had been written since the one before: the redo
    /// after it starts there, and what was written since counts towards the next.
    pub(super) fn checkpointed(&mut self, tail: LogTail, written: Written) {
        self.checkpoint_sequence += 1;
        self.counters.checkpoints += 1;
        self.checkpoint_tail = tail;
        self.bytes_since_checkpoint -= written.bytes;
        self.cold_since_checkpoint -= written.cold_bytes;
    }

    /// What the writer counted, for `Db::stats`.
    pub(super) fn counters(&self) -> WriterCounters {
        self.counters
    }
}

/// What was written since a checkpoint, at one moment.
#[derive(Clone, Copy, Debug)]
pub(super) struct Written {
    bytes: u64,
    cold_bytes: u64,
    /// Whether the log's tail was still where the checkpoint left it.
    pub(super) logged_nothing: bool,
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
