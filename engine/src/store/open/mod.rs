//! Opening a database: recovery (the checkpoint, then redo replayed) for a writer, and the
//! read-only open beside one.

/// A read-only open.
pub(in crate::store) mod read_only;
/// Opening a database: its checkpoint, then its redo replayed.
pub(in crate::store) mod recovery;
