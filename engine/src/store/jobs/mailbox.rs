//! The maintenance thread's mailbox: how commits ask it for a checkpoint, how a commit under
//! back pressure waits for one, and how the thread is told to stop.

use std::cell::Cell;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

thread_local! {
    /// How many jobs the calling thread is running (the maintenance thread counts one for
    /// as long as it lives).
    static JOBS_RUNNING: Cell<u32> = const { Cell::new(0) };
}

/// A job's run on the calling thread, for as long as this lives: the commits it makes (a
/// migration's batches) are the maintenance's own, and never wait for the thread (which may
/// be waiting for this job's turn).
pub(crate) struct JobRun(());

impl JobRun {
    pub fn begin() -> JobRun {
        JOBS_RUNNING.with(|n| n.set(n.get() + 1));
        JobRun(())
    }

    /// True while the calling thread runs a job.
    pub fn here() -> bool {
        JOBS_RUNNING.with(|n| n.get() > 0)
    }
}

impl Drop for JobRun {
    fn drop(&mut self) {
        JOBS_RUNNING.with(|n| n.set(n.get() - 1));
    }
}

/// The thread's mailbox, shared by `Shared` and the thread (which holds the database only
/// while it works).
#[derive(Default)]
pub(crate) struct Maintenance {
    signal: Mutex<Signal>,
    wake: Condvar,
    /// Notified each time the thread has finished a checkpoint turn.
    checkpointed: Condvar,
}

#[derive(Default)]
struct Signal {
    due: bool,
    stop: bool,
    running: bool,
    /// Checkpoint turns the thread has finished (written one or found none due).
    checkpoints: u64,
}

impl Maintenance {
    /// True while a maintenance thread serves this database.
    pub fn running(&self) -> bool {
        self.signal.lock().running
    }

    /// Asks the thread for a checkpoint.
    pub fn wake(&self) {
        self.signal.lock().due = true;
        self.wake.notify_one();
    }

    /// Marks the thread running (when it starts) or not (when it could not start).
    pub fn set_running(&self, running: bool) {
        self.signal.lock().running = running;
    }

    /// Tells the thread to stop, and wakes it (and every commit waiting for it).
    pub fn stop(&self) {
        {
            let mut signal = self.signal.lock();
            signal.stop = true;
            signal.running = false;
        }
        self.wake.notify_all();
        self.checkpointed.notify_all();
    }

    /// Says that the thread has finished a checkpoint turn.
    pub fn checkpoint_done(&self) {
        self.signal.lock().checkpoints += 1;
        self.checkpointed.notify_all();
    }

    /// Wakes the thread for a checkpoint and waits until it has finished a checkpoint turn
    /// begun after this call, or has stopped, or `patience` has passed; false when it has
    /// not finished one (the caller looks at the pressure again either way).
    pub fn wait_for_checkpoint(&self, patience: Duration) -> bool {
        let mut signal = self.signal.lock();
        let until = signal.checkpoints + 1;
        signal.due = true;
        self.wake.notify_one();
        while signal.running && signal.checkpoints < until {
            if self
                .checkpointed
                .wait_for(&mut signal, patience)
                .timed_out()
            {
                break;
            }
        }
        signal.checkpoints >= until
    }

    /// Waits for work; false when the thread is to stop.
    pub fn next(&self) -> bool {
        let mut signal = self.signal.lock();
        while !signal.due && !signal.stop {
            self.wake.wait(&mut signal);
        }
        signal.due = false;
        !signal.stop
    }
}
