//! The engine's hard limits, checked on every write: a record, a parent key and a batch.

/// The hard limit on every record the engine writes, as BSON's: 16 MiB.
pub const MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;
/// The longest parent key: 1 KiB.
pub const MAX_KEY_BYTES: usize = 1024;
/// The largest batch, counted as the bytes of its logged operations: 256 MiB.
pub const MAX_BATCH_BYTES: usize = 256 * 1024 * 1024;
