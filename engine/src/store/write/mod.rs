//! The write path: a batch's operations queued, staged against the committed state into
//! redo, logged and applied, and published; a transaction's view and the reads it checks.

/// Applied to a tree, by the commit path and by replay.
pub(in crate::store) mod apply;
/// The commit path: a group staged, written, synced and published.
pub(in crate::store) mod commit;
/// A batch's operations as the API hands them in.
pub(in crate::store) mod ops;
/// A changed record logged as the bytes that change.
pub(in crate::store) mod patch;
/// A batch's operations as queued, the older ones in a scratch file past a share of the budget.
pub(in crate::store) mod queue;
/// What a transaction read, checked at its commit.
pub(in crate::store) mod read_set;
/// A batch's operations resolved against the committed state into redo.
pub(in crate::store) mod stage;
/// A transaction's own view of its writes.
pub(in crate::store) mod view;
/// What a batch does to one parent, executing the layouts' decisions.
pub(in crate::store) mod work;
