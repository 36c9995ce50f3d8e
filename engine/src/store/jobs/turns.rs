//! What the jobs keep between their runs, each in a type of its own with its locks private:
//! the checkpoint's turn, where reclaiming the first retired entry has got to, and where each
//! migration's walk has got to with the turn of its steps. `Shared` holds them (`jobs`);
//! each is used by the job it names (and the checkpoint's turn by what must not see a
//! checkpoint half done). In memory only: after a reopen each walk starts again from the
//! beginning (what was done is not met again).

use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};

use crate::catalog::Retired;
use crate::error::Result;
use crate::log::{PAGE_FILE_BIT, PageFile, parse_page_file_name};
use crate::storage::Storage;
use crate::store::jobs::progress::MigrationCursor;

/// The jobs' state (see the module's text).
#[derive(Default)]
pub(crate) struct JobState {
    pub(in crate::store) checkpoints: Checkpoints,
    pub(in crate::store) reclaim: ReclaimWalk,
    pub(in crate::store) migrations: MigrationWalks,
}

/// Whose turn it is to checkpoint: one at a time, and none while a verification or a walk
/// of the space runs. Taken before the writer, never after.
#[derive(Default)]
pub(crate) struct Checkpoints {
    turn: Mutex<()>,
    page_files: Mutex<PageFiles>,
}

/// The page files as this process's checkpoints write them.
#[derive(Default)]
struct PageFiles {
    /// The number the next page file gets (0 until the first checkpoint of this process
    /// has looked at the directory): numbers only grow while the process runs, so that no
    /// location a reader or the cache still holds ever names another file's frame.
    next: u32,
    /// The page file checkpoints append to, until it reaches the segment size.
    open: Option<PageFile>,
}

impl Checkpoints {
    /// The page file the checkpoint holding the turn appends to: the one the last
    /// checkpoint of this process appended to while it is under `segment_bytes`, else a new
    /// one, numbered past every page file in the directory and every one this process
    /// wrote. (A process never appends to a file of an earlier one, whose end a crash may
    /// have torn.) Given back with [`Checkpoints::keep_page_file`] once written.
    pub(in crate::store) fn page_file(
        &self,
        storage: &dyn Storage,
        segment_bytes: u64,
    ) -> Result<PageFile> {
        let mut files = self.page_files.lock();
        if let Some(file) = files.open.take()
            && file.len() < segment_bytes
        {
            return Ok(file);
        }
        if files.next == 0 {
            let highest = storage
                .list()?
                .iter()
                .filter_map(|name| parse_page_file_name(name))
                .map(|id| id & !PAGE_FILE_BIT)
                .max()
                .unwrap_or(0);
            files.next = highest + 1;
        }
        let number = files.next;
        files.next += 1;
        PageFile::create(storage, number)
    }

    /// Gives back the page file a checkpoint wrote, for the next one to append to.
    pub(in crate::store) fn keep_page_file(&self, file: PageFile) {
        self.page_files.lock().open = Some(file);
    }

    /// The segment id of the page file checkpoints append to, if any: never cleaned (its
    /// live pages would be copied into itself) nor removed.
    pub(in crate::store) fn open_page_file(&self) -> Option<u32> {
        self.page_files.lock().open.as_ref().map(PageFile::id)
    }

    /// Stops appending to the open page file (a checkpoint is about to remove it: none of
    /// its pages is live).
    pub(in crate::store) fn close_page_file(&self) {
        self.page_files.lock().open = None;
    }

    /// The turn, once the checkpoint running (if any) is done.
    pub(in crate::store) fn turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock()
    }

    /// The turn, unless a checkpoint is running.
    pub(in crate::store) fn try_turn(&self) -> Option<MutexGuard<'_, ()>> {
        self.turn.try_lock()
    }
}

/// Where reclaiming the first retired entry has got to: the key its next step starts at.
#[derive(Default)]
pub(crate) struct ReclaimWalk {
    at: Mutex<Option<(Retired, Bytes)>>,
}

impl ReclaimWalk {
    /// The key the next step of reclaiming `retired` starts at, if a step of it ran.
    pub(in crate::store) fn resume(&self, retired: Retired) -> Option<Bytes> {
        match &*self.at.lock() {
            Some((at, key)) if *at == retired => Some(key.clone()),
            _ => None,
        }
    }

    /// Notes where reclaiming `retired` goes on (`None`: it is done).
    pub(in crate::store) fn set(&self, retired: Retired, next: Option<Bytes>) {
        *self.at.lock() = next.map(|next| (retired, next));
    }
}

/// Where the walk of each migration running has got to, and the turn of their steps:
/// compaction's steps beside the maintenance thread's would otherwise take the same cursor
/// and walk the same parents twice.
#[derive(Default)]
pub(crate) struct MigrationWalks {
    cursors: Mutex<Vec<MigrationCursor>>,
    turn: Mutex<()>,
}

impl MigrationWalks {
    /// The turn to step a walk, once the step running (if any) is done.
    pub(in crate::store) fn turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock()
    }

    /// The walks as they stand.
    pub(in crate::store) fn cursors(&self) -> Vec<MigrationCursor> {
        self.cursors.lock().clone()
    }

    /// Replaces the walks listed.
    pub(in crate::store) fn set_cursors(&self, cursors: Vec<MigrationCursor>) {
        *self.cursors.lock() = cursors;
    }

    /// Lists `cursor` in place of the walk of the same migration (or beside the others).
    pub(in crate::store) fn update(
        &self,
        cursor: MigrationCursor,
        same: impl Fn(&MigrationCursor) -> bool,
    ) {
        let mut cursors = self.cursors.lock();
        match cursors.iter_mut().find(|c| same(c)) {
            Some(listed) => *listed = cursor,
            None => cursors.push(cursor),
        }
    }
}
