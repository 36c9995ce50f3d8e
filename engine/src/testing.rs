//! The one place where the workspace's tests, benchmarks and fuzz targets reach the
//! engine's internals, compiled only with the `testing` feature: the storage seam and its
//! simulation (crash images, injected faults), the hot log's segment scanner (corruption
//! tests) and the decoders' fuzz entry. Hidden from the documentation and not part of the
//! supported API; any name here may change in any release. `Db::open_with_storage`, hidden
//! too, opens a database over any `Storage`.

pub use crate::fuzz::decoders;
pub use crate::log::{FrameKind, FrameLoc, parse_segment_name, scan_segment, segment_name};
pub use crate::storage::{FsStorage, LockGuard, Mapped, SimStorage, Storage};
