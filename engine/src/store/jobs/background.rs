//! The maintenance thread: runs the checkpoints commits find due, each followed by a
//! bounded cold compaction step when a cold segment is mostly dead, so that commits do not
//! pay for them. Commits only wake it; a commit waits for its checkpoint when the thread
//! has fallen far behind (see `Shared::after_commit`, `maintain.rs`).

use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use crate::events::{warn_on_error, warning};
use crate::store::jobs::mailbox::{JobRun, Maintenance};
use crate::store::shared::Shared;

/// Owns the maintenance thread; dropping it (with the last `Db` handle) stops and joins the
/// thread, so the database is closed by the handle's owner, not later by the thread.
pub(in crate::store) struct Background {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    pub fn start(shared: &Arc<Shared>) -> std::io::Result<Background> {
        let weak: Weak<Shared> = Arc::downgrade(shared);
        let mailbox = shared.maintenance.clone();
        mailbox.set_running(true);
        // What drops retired before the last close is reclaimed from the start, and the
        // migrations then running go on.
        let catalog = &shared.current().catalog;
        let migrating = catalog
            .by_name
            .values()
            .any(|info| info.layouts.iter().any(|s| s.previous.is_some()));
        if !catalog.retired.is_empty() || migrating {
            mailbox.wake();
        }
        let thread = std::thread::Builder::new()
            .name("skewdb-maintenance".to_string())
            .spawn(move || run(&mailbox, &weak));
        match thread {
            Ok(thread) => Ok(Background {
                shared: shared.clone(),
                thread: Some(thread),
            }),
            Err(error) => {
                shared.maintenance.set_running(false);
                Err(error)
            }
        }
    }
}

fn run(mailbox: &Maintenance, weak: &Weak<Shared>) {
    let _job = JobRun::begin();
    while mailbox.next() {
        let Some(shared) = weak.upgrade() else {
            return;
        };
        // A failed write is sticky in the log and the cold store: the next commit reports it,
        // and `Db::write_error` says it meanwhile.
        warn_on_error!(
            shared.maintain(),
            "background maintenance (a checkpoint or a compaction step) failed"
        );
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.shared.maintenance.stop();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            warning!("the maintenance thread panicked");
        }
    }
}
