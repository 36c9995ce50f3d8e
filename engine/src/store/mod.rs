//! The store: stages and commits what the layouts' rules decide, over the page store and
//! the cold store, and publishes the versions readers see. Its rooms, by what they serve:
//!
//! - `write/`: the write path (a batch queued, staged into redo, logged, applied and
//!   published; a transaction's view and the reads its commit checks);
//! - `read/`: the read path (`Reads` at one version: records, documents, items lent in
//!   place, summaries);
//! - `jobs/`: the work beside the write path (checkpoints, compaction, reclaiming, layout
//!   migrations, copies, verification, statistics, the maintenance thread), each job calling
//!   no other; `jobs/maintain.rs` runs them one after another;
//! - `open/`: opening a database (recovery, and the read-only open).
//!
//! Here, the parts every room shares, each with its state private:
//!
//! - `engine`: what every handle holds (the state and the maintenance thread);
//! - `shared`: the state every clone of a `Db` shares, composed of the parts below and the
//!   page and cold stores;
//! - `versions`: the published version, the replaced ones readers hold, the segment files
//!   waiting for them and the record tier's epoch;
//! - `writer`: the writer (the hot log, checkpoint bookkeeping) and its group commit.
//!
//! Each folder's `mod.rs` lists its files.

pub(crate) mod jobs;
pub(crate) mod open;
pub(crate) mod read;
pub(crate) mod write;

mod engine;
mod shared;
mod versions;
mod writer;

pub(crate) use engine::{Engine, WeakEngine};
pub(crate) use jobs::copy::CopiedRecord;
pub(crate) use versions::Version;
pub(crate) use write::ops::{BatchOp, check_key};
pub(crate) use write::queue::Queue;
pub(crate) use write::read_set::ReadSet;

pub use jobs::compact::CompactReport;
pub use jobs::progress::MigrationProgress;
pub use jobs::space::{SegmentSpace, SpaceStats, TierSpace};
pub use jobs::stats::Stats;
pub use jobs::verify::{Inspection, SegmentInfo, VerifyReport};
pub use write::ops::Expired;
