//! The storage seam: every read, write, sync, rename, remove and directory sync of the
//! engine goes through [`Storage`], so that the simulation in [`sim`] can fail any operation
//! and produce the image a power loss would leave.
//!
//! Files are named relative to the database directory; the directory is flat.

mod fs;
mod maps;
mod seam;
pub mod sim;

pub use fs::FsStorage;
pub use maps::{Segment, SegmentMaps};
pub use seam::{LockGuard, Mapped, Storage, parse_segment_file_name, segment_file_name};
pub use sim::SimStorage;
