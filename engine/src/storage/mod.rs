//! The storage seam: every read, write, sync, rename, remove and directory sync of the
//! engine goes through [`Storage`], so that the simulation in [`sim`] can fail any operation
//! and produce the image a power loss would leave.
//!
//! Files are named relative to the database directory; the directory is flat.

mod frozen;
mod fs;
mod maps;
mod scratch;
mod seam;
// The engine's own tests use the simulation too, without every tool the test crates use.
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub mod sim;

pub use frozen::Frozen;
pub use fs::FsStorage;
pub use maps::{Segment, SegmentMaps};
pub use scratch::Scratch;
#[cfg(feature = "testing")]
pub use seam::Mapped;
pub use seam::{LockGuard, Storage, parse_segment_file_name, segment_file_name};
#[cfg(any(test, feature = "testing"))]
pub use sim::SimStorage;
