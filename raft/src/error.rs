//! skewdb's errors as openraft's storage errors, naming what was being done.

use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageIOError};

use crate::{NodeId, StorageError};

/// A skewdb error met while doing `verb` to `subject`.
pub(crate) fn storage(
    subject: ErrorSubject<NodeId>,
    verb: ErrorVerb,
) -> impl FnOnce(skewdb::Error) -> StorageError {
    move |e| StorageIOError::new(subject, verb, AnyError::new(&e)).into()
}

/// Bytes that do not decode as what this storage wrote.
pub(crate) fn decode(
    subject: ErrorSubject<NodeId>,
) -> impl FnOnce(serde_json::Error) -> StorageError {
    move |e| StorageIOError::new(subject, ErrorVerb::Read, AnyError::new(&e)).into()
}

/// A file operation on the node's directory that failed.
pub(crate) fn io_error(e: std::io::Error, what: &str) -> StorageError {
    StorageIOError::new(
        ErrorSubject::Store,
        ErrorVerb::Write,
        AnyError::new(&e).add_context(|| what.to_string()),
    )
    .into()
}

/// Runs `work` (engine calls that wait for the disk) on a thread for blocking work, off the
/// async runtime's workers, and waits for it.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StorageError> + Send + 'static,
) -> Result<T, StorageError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(joined) => Err(io_error(
            std::io::Error::other(joined.to_string()),
            "run storage work",
        )),
    }
}
