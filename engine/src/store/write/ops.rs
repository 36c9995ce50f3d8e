//! What a batch is on its way in: the operations as the API queued them, and what a commit
//! answers.

use std::sync::Arc;

use bytes::Bytes;

use crate::alter::Alteration;
use crate::catalog::CollectionSpec;
use crate::error::{Error, Result};
use crate::item::NewItem;
use crate::limits::MAX_KEY_BYTES;

/// A batch's operations as the API received them, before they are resolved to redo.
#[derive(Clone, Debug)]
pub(crate) enum BatchOp {
    /// A redo op logged as it is, for tests that make a database no API call makes (a
    /// record left without its parent, for `verify` to find).
    #[cfg(test)]
    Raw(crate::page::redo::Op),
    CreateCollection(CollectionSpec),
    AlterCollection {
        collection: Arc<str>,
        alteration: Alteration,
    },
    DropCollection {
        collection: Arc<str>,
    },
    /// Ends the migration of array `slot` of collection `collection` (every parent moved), if
    /// its layout state is still `state`.
    FinishMigration {
        collection: crate::catalog::CollectionId,
        slot: usize,
        state: crate::catalog::LayoutState,
    },
    /// Moves array slot `slot` of parent `key` of collection `collection` to its current
    /// layout, if it is not there yet (by id and slot: a rename or a drop in between leaves
    /// it nothing to do).
    Migrate {
        collection: crate::catalog::CollectionId,
        key: Bytes,
        slot: usize,
    },
    /// The collection named `collection` must be the one of id `id` (a handle's, checked at
    /// this point of the batch): otherwise the batch is refused with
    /// `Error::UnknownCollection`, so that a write through a handle made before a rename,
    /// a drop or a re-creation never lands in another collection of the same name.
    Expect {
        collection: Arc<str>,
        id: crate::catalog::CollectionId,
    },
    Put {
        collection: Arc<str>,
        key: Bytes,
        body: Bytes,
    },
    Delete {
        collection: Arc<str>,
        key: Bytes,
    },
    Push {
        collection: Arc<str>,
        key: Bytes,
        field: Arc<str>,
        item: NewItem,
    },
    Remove {
        collection: Arc<str>,
        key: Bytes,
        field: Arc<str>,
        item_key: i64,
        /// Only the item pushed with this sequence number; every item with the key if none.
        seq: Option<u64>,
    },
    ExpireBuckets {
        collection: Arc<str>,
        key: Bytes,
        field: Arc<str>,
        before: i64,
    },
}

/// What a bucket expiry dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    /// Sealed buckets dropped.
    pub buckets: u64,
    /// Items dropped: the buckets' and, where the array keeps rollups, late items below the
    /// bound.
    pub items: u64,
    /// Of `items`, those added to rollups (every one, where the array keeps rollups).
    pub rolled_up: u64,
}

/// `Error::KeyTooLarge` for a parent key over [`MAX_KEY_BYTES`].
pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::KeyTooLarge {
            size: key.len() as u64,
            limit: MAX_KEY_BYTES as u64,
        });
    }
    Ok(())
}
