//! The maintenance thread's mailbox: how commits ask it for a checkpoint and how it is
//! told to stop.

use parking_lot::{Condvar, Mutex};

/// The thread's mailbox, shared by `Shared` and the thread (which holds the database only
/// while it works).
#[derive(Default)]
pub(crate) struct Maintenance {
    signal: Mutex<Signal>,
    wake: Condvar,
}

#[derive(Default)]
struct Signal {
    due: bool,
    stop: bool,
    running: bool,
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

    /// Tells the thread to stop, and wakes it.
    pub fn stop(&self) {
        {
            let mut signal = self.signal.lock();
            signal.stop = true;
            signal.running = false;
        }
        self.wake.notify_all();
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
