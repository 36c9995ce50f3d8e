//! What the engine tells an application's `tracing` subscriber (feature `tracing`, on by
//! default): spans around recovery, commit groups, checkpoints and compactions, and a
//! warning for every failure that no caller receives (the maintenance thread's, a
//! checkpoint's at close, one a commit ran for the group after its batches were done).
//! Without the feature, each macro compiles to nothing.
//!
//! The targets are the module paths (`skewdb::store::checkpoint`, ...), so a filter such as
//! `RUST_LOG=skewdb=debug` selects the engine's events.

/// A span entered until the returned guard drops: `span!(info, "checkpoint", field = v)`.
#[cfg(feature = "tracing")]
macro_rules! span {
    (info, $name:literal $(, $($field:tt)*)?) => {
        tracing::info_span!($name $(, $($field)*)?).entered()
    };
    (debug, $name:literal $(, $($field:tt)*)?) => {
        tracing::debug_span!($name $(, $($field)*)?).entered()
    };
}

#[cfg(not(feature = "tracing"))]
macro_rules! span {
    ($level:ident, $name:literal $(, $($field:tt)*)?) => {
        ()
    };
}

/// An event at `info` or `debug`: `event!(info, field = v, "message")`.
#[cfg(feature = "tracing")]
macro_rules! event {
    (info, $($arg:tt)*) => {
        tracing::info!($($arg)*)
    };
    (debug, $($arg:tt)*) => {
        tracing::debug!($($arg)*)
    };
}

#[cfg(not(feature = "tracing"))]
macro_rules! event {
    ($level:ident, $($arg:tt)*) => {
        ()
    };
}

/// A warning: a failure no caller receives, with what it means for the database.
#[cfg(feature = "tracing")]
macro_rules! warning {
    ($($arg:tt)*) => {
        tracing::warn!($($arg)*)
    };
}

#[cfg(not(feature = "tracing"))]
macro_rules! warning {
    ($($arg:tt)*) => {
        ()
    };
}

/// `result`'s error, if any, as a warning that `what` failed; the result is dropped (its
/// failure is sticky where it matters: see each caller).
macro_rules! warn_on_error {
    ($result:expr, $what:literal) => {
        if let Err(error) = $result {
            let _ = &error;
            $crate::events::warning!(error = %error, kind = error.kind(), $what);
        }
    };
}

pub(crate) use {event, span, warn_on_error, warning};
