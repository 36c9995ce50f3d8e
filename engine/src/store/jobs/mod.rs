//! The jobs beside the write path: checkpoints and log cleaning, cold compaction, reclaiming
//! what drops retired, layout migrations, copies, verification and statistics, and the
//! maintenance thread that runs them.

/// The maintenance thread.
pub(crate) mod background;
/// Checkpoints, log cleaning and the removal of unneeded segments.
pub(in crate::store) mod checkpoint;
/// Cold compaction and the large records moved out of sparse log segments.
pub(in crate::store) mod compact;
/// Records copied out of a version and into a new database (backups).
pub(in crate::store) mod copy;
/// The maintenance thread's mailbox.
pub(in crate::store) mod mailbox;
/// The supervisor: the jobs run one after another (the thread's turn, after a commit,
/// `Db::compact`).
pub(in crate::store) mod maintain;
/// Layout changes walked over a collection's parents.
pub(in crate::store) mod migrate;
/// How far the background walks have got.
pub(in crate::store) mod progress;
/// What drops retired, reclaimed a step at a time.
pub(in crate::store) mod retired;
/// The segment files of both tiers as the directory lists them.
pub(in crate::store) mod segments;
/// Space accounting.
pub(in crate::store) mod space;
/// `Db::stats`.
pub(in crate::store) mod stats;
/// What the jobs keep between their runs.
pub(in crate::store) mod turns;
/// The checks of `Db::verify`.
pub(in crate::store) mod verify;
