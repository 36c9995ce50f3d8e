//! How far the maintenance thread's background work has got: plain state, shown by
//! `Db::stats` and kept by the thread between its steps.

use bytes::Bytes;

use crate::catalog::{CollectionInfo, Layout, LayoutState};

/// A migration the maintenance thread runs, as `Db::stats` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrationProgress {
    /// The collection.
    pub collection: String,
    /// The array field moving.
    pub field: String,
    /// The layout it moves from.
    pub from: Layout,
    /// The layout it moves to.
    pub to: Layout,
    /// Parents the walk has passed in this process (in key order), moved or not.
    pub parents_walked: u64,
    /// Parents the walk has moved in this process.
    pub parents_moved: u64,
    /// Parents the collection held when the walk began.
    pub parents_total: u64,
    /// Parents that cannot be moved (their array would not fit the new layout: an `Embed`
    /// of more than the record limit), by key; they stay under the previous layout, and the
    /// migration stays open until they are cancelled or changed.
    pub refused: Vec<Bytes>,
}

/// Where the walk of one migration running has got to.
#[derive(Clone, Debug)]
pub(crate) struct MigrationCursor {
    pub collection: u32,
    pub slot: usize,
    pub state: LayoutState,
    /// The key of the next parent to look at; `None` once the walk has passed the last.
    pub next: Option<Bytes>,
    pub progress: MigrationProgress,
}

impl MigrationCursor {
    /// Whether this is the walk of the migration of `info`'s array `index` running now (not
    /// of one ended, cancelled or changed since).
    pub fn walks(&self, info: &CollectionInfo, index: usize) -> bool {
        self.collection == info.id
            && self.slot == info.slot(index)
            && self.state == info.layouts[index]
    }
}
