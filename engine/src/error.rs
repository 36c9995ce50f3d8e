//! The typed errors every public call returns.

use std::io;

/// A `Result` whose error is skewdb's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, each variant naming what was wrong and with what.
/// [`Error::kind`] gives each a stable name for scripts and logs.
///
/// ```
/// use skewdb::{CollectionSpec, Db, Error, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new())?;
/// match db.collection("nosuch") {
///     Err(Error::UnknownCollection { name }) => assert_eq!(name, "nosuch"),
///     other => panic!("{:?}", other.err()),
/// }
/// db.create_collection(CollectionSpec::new("users"))?;
/// let mut batch = db.batch();
/// batch.put("users", "k".repeat(2000), "too long a key");
/// let refused = batch.commit().unwrap_err();
/// assert_eq!(refused.kind(), "key_too_large");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused an operation on a file.
    #[error("I/O error during {op} on {file}: {source}")]
    Io {
        /// What was being done: `read`, `write`, `sync`, `open`, `lock`, `map`, ...
        op: &'static str,
        /// The file (or directory) it was done to.
        file: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Bytes on disk failed a checksum or a structural check.
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption {
        /// The damaged file (or the structure, such as `page store`, that read it).
        file: String,
        /// Where in it the damage was found.
        offset: u64,
        /// What check failed.
        reason: String,
    },
    /// A record (a parent record with its inline arrays) would exceed the hard limit.
    #[error("record of {size} bytes exceeds the limit of {limit} bytes")]
    RecordTooLarge {
        /// The record's size, in bytes.
        size: u64,
        /// The limit, [`crate::MAX_RECORD_BYTES`].
        limit: u64,
    },
    /// A parent key longer than [`crate::MAX_KEY_BYTES`].
    #[error("key of {size} bytes exceeds the limit of {limit} bytes")]
    KeyTooLarge {
        /// The key's length, in bytes.
        size: u64,
        /// The limit, [`crate::MAX_KEY_BYTES`].
        limit: u64,
    },
    /// A batch whose encoded operations exceed [`crate::MAX_BATCH_BYTES`].
    #[error("batch of {size} bytes exceeds the limit of {limit} bytes")]
    BatchTooLarge {
        /// The batch's encoded size, in bytes.
        size: u64,
        /// The limit, [`crate::MAX_BATCH_BYTES`].
        limit: u64,
    },
    /// No collection of that name exists.
    #[error("unknown collection {name:?}")]
    UnknownCollection {
        /// The name asked for.
        name: String,
    },
    /// The collection has no array field of that name.
    #[error("collection {collection:?} has no array field {field:?}")]
    UnknownField {
        /// The collection.
        collection: String,
        /// The field asked for.
        field: String,
    },
    /// The array field declares no measure of that name.
    #[error("array {field:?} of {collection:?} has no measure {measure:?}")]
    UnknownMeasure {
        /// The collection.
        collection: String,
        /// The array field.
        field: String,
        /// The measure asked for.
        measure: String,
    },
    /// An operation that only one layout supports, asked of an array of another.
    #[error("array {field:?} of {collection:?} is not a {expected} array")]
    WrongLayout {
        /// The collection.
        collection: String,
        /// The array field.
        field: String,
        /// The layout the operation needs (`bucket`).
        expected: &'static str,
    },
    /// An item that cannot be stored (a NaN value).
    #[error("invalid item: {reason}")]
    InvalidItem {
        /// What is wrong with it.
        reason: String,
    },
    /// `create_collection` with a name that exists under a different schema, or a rename to
    /// a name another collection has.
    #[error("collection {name:?} already exists with a different schema: {reason}")]
    SchemaConflict {
        /// The collection.
        name: String,
        /// The stored schema and the one asked for.
        reason: String,
    },
    /// A collection schema whose array fields are not allowed: too many, a name empty, too
    /// long or declared twice, or a layout out of its range.
    #[error("invalid schema for collection {collection:?}: {reason}")]
    InvalidSchema {
        /// The collection.
        collection: String,
        /// What is not allowed.
        reason: String,
    },
    /// A collection name that is empty, too long or otherwise not allowed.
    #[error("invalid collection name {name:?}: {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// What is not allowed.
        reason: String,
    },
    /// Another process (or another `Db` in this one) holds the database open.
    #[error("database {path} is locked by another process")]
    Locked {
        /// The database's directory.
        path: String,
    },
    /// An option outside its allowed range.
    #[error("invalid option {option}: {reason}")]
    InvalidOption {
        /// The option (`page_bytes`, `cache_bytes`, ...).
        option: &'static str,
        /// Its allowed range, and the value given.
        reason: String,
    },
    /// A write or sync failed earlier; the database refuses further writes until reopened,
    /// because data the OS reported as lost cannot be assumed safe by retrying.
    #[error("database is read-only after an earlier write failure: {reason}")]
    WriteFailed {
        /// The failure that made the database read-only.
        reason: String,
    },
    /// A write (a commit, a checkpoint, a compaction) to a database opened with
    /// `Db::open_read_only`.
    #[error("database {path} is open read-only: it takes no writes")]
    ReadOnly {
        /// The database's directory.
        path: String,
    },
    /// `Db::open_read_only` of a directory that holds no database (it creates none).
    #[error("no skewdb database at {path}")]
    NoDatabase {
        /// The directory.
        path: String,
    },
    /// A transaction whose reads no longer hold at its commit: another commit changed what
    /// it read since it began. Nothing of it was applied; run it again.
    #[error("transaction conflict: {what} changed since the transaction began")]
    Conflict {
        /// The first thing read that changed (a parent, or an entry of a scanned range).
        what: String,
    },
    /// A typed handle's body, item or key did not encode or decode with its codec.
    #[error("{codec} codec: {reason}")]
    Codec {
        /// The codec's name (`json`, `bson`, or the application's).
        codec: &'static str,
        /// What did not encode or decode, and why.
        reason: String,
    },
    /// A batch committed after the last handle on its database was dropped or closed.
    #[error("the database was closed before the batch was committed")]
    Closed,
    /// A cursor token (`Cursor`'s printed form) that is not one, or was damaged.
    #[error("invalid cursor {token:?}: {reason}")]
    InvalidCursor {
        /// The token given (at most 80 characters of it).
        token: String,
        /// Why it was refused.
        reason: String,
    },
    /// A summary over a range that holds part of a rollup's window: what a bucket expiry
    /// dropped is kept per window, which a range must hold whole or not at all (its bounds
    /// at multiples of the span, or outside the keys the window held).
    #[error(
        "the range cuts the rollup of array {field:?} for keys {start} to {start}+{span}: \
         expired items are summarized per window of {span}; bound the range at its multiples"
    )]
    RangeCutsRollup {
        /// The array field.
        field: String,
        /// The start of the window the range cuts.
        start: i64,
        /// The rollups' span.
        span: i64,
    },
    /// The file does not look like a skewdb file of a version this build understands.
    #[error("{file} has unsupported format version {found} (this build reads {supported})")]
    UnsupportedVersion {
        /// The file.
        file: String,
        /// The version it declares.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str, file: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            op,
            file: file.into(),
            source,
        }
    }

    pub(crate) fn corruption(
        file: impl Into<String>,
        offset: u64,
        reason: impl Into<String>,
    ) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// A stable snake_case name of the variant, for scripts and logs: `io`, `corruption`,
    /// `record_too_large`, `key_too_large`, `batch_too_large`, `unknown_collection`,
    /// `unknown_field`, `unknown_measure`, `wrong_layout`, `invalid_item`, `schema_conflict`,
    /// `invalid_name`, `invalid_schema`, `locked`, `invalid_option`, `write_failed`,
    /// `unsupported_version`, `invalid_cursor`, `closed`, `conflict`, `codec`,
    /// `range_cuts_rollup`. A name, once given, never changes meaning.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io { .. } => "io",
            Error::Corruption { .. } => "corruption",
            Error::RecordTooLarge { .. } => "record_too_large",
            Error::KeyTooLarge { .. } => "key_too_large",
            Error::BatchTooLarge { .. } => "batch_too_large",
            Error::UnknownCollection { .. } => "unknown_collection",
            Error::UnknownField { .. } => "unknown_field",
            Error::UnknownMeasure { .. } => "unknown_measure",
            Error::WrongLayout { .. } => "wrong_layout",
            Error::InvalidItem { .. } => "invalid_item",
            Error::SchemaConflict { .. } => "schema_conflict",
            Error::InvalidName { .. } => "invalid_name",
            Error::InvalidSchema { .. } => "invalid_schema",
            Error::Locked { .. } => "locked",
            Error::InvalidOption { .. } => "invalid_option",
            Error::WriteFailed { .. } => "write_failed",
            Error::ReadOnly { .. } => "read_only",
            Error::NoDatabase { .. } => "no_database",
            Error::UnsupportedVersion { .. } => "unsupported_version",
            Error::RangeCutsRollup { .. } => "range_cuts_rollup",
            Error::InvalidCursor { .. } => "invalid_cursor",
            Error::Closed => "closed",
            Error::Conflict { .. } => "conflict",
            Error::Codec { .. } => "codec",
        }
    }

    /// True for `Error::Corruption`.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}
