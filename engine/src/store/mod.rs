//! The store: stages and commits what the layouts' rules decide, over the page store and
//! the cold store, and publishes the versions readers see. The parts, each with its state
//! private:
//!
//! - `engine`: what every handle holds (the state and the maintenance thread);
//! - `shared`: the state every clone of a `Db` shares, composed of the parts below and the
//!   page and cold stores;
//! - `versions`: the published version, the replaced ones readers hold, the segment files
//!   waiting for them and the record tier's epoch;
//! - `writer`: the writer (the hot log, checkpoint bookkeeping) and its group commit;
//! - `read`: `Reads`, `get`, `summary` and `outliers` at one version; `items`: an
//!   array's items, merged from wherever they live and lent in place;
//! - `mailbox`, `background`: the maintenance thread's mailbox and the thread.
//!
//! The jobs, one file each:
//!
//! - `commit`: the commit path (a group's staging into redo, the log write, publishing);
//! - `stage`: a batch's operations resolved against the committed state into redo;
//! - `work`: what a batch does to one parent, executing the layouts' decisions;
//! - `patch`: a changed record logged as the bytes that change;
//! - `apply`: redo applied to a tree, by the commit path and by replay;
//! - `decode`: parent and tail records decoded for readers, the stager and `verify`;
//! - `queue`: a batch's operations as queued, the older ones in a scratch file past a share
//!   of the budget;
//! - `reads`: what a transaction read, checked at its commit; `view`: its own view;
//! - `checkpoint`: checkpoints, log cleaning and the removal of unneeded segments;
//! - `recovery`: opening a database (checkpoint, then redo replay);
//! - `compact`, `space`: cold compaction and space accounting;
//! - `copy`: records copied out of a version and into a new database (backups);
//! - `verify`, `stats`: the checks of `Db::verify`, and `Db::stats`.

mod apply;
pub(crate) mod background;
mod checkpoint;
mod commit;
mod compact;
mod copy;
pub(crate) mod decode;
mod engine;
mod items;
mod mailbox;
mod migrate;
mod ops;
mod patch;
mod progress;
mod queue;
mod read;
mod read_only;
mod reads;
mod recovery;
mod retired;
mod segments;
mod shared;
mod space;
mod stage;
mod stats;
mod summaries;
mod verify;
mod versions;
mod view;
mod work;
mod writer;

pub(crate) use copy::CopiedRecord;
pub(crate) use engine::Engine;
pub(crate) use ops::{BatchOp, check_key};
pub(crate) use queue::Queue;
pub(crate) use reads::ReadSet;
pub(crate) use shared::Shared;
pub(crate) use versions::Version;

pub use compact::CompactReport;
pub use ops::Expired;
pub use progress::MigrationProgress;
pub use space::{SegmentSpace, SpaceStats, TierSpace};
pub use stats::Stats;
pub use verify::{Inspection, SegmentInfo, VerifyReport};
