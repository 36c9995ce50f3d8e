//! Eviction policies over keys and byte weights, with no values: the live cache keeps its
//! values beside one of these, the what-if estimator runs miniature ones on sampled keys,
//! and [`Simulator`] replays a recorded trace through one. One code path for all three, so
//! an estimate and a simulation use exactly the policy the cache runs.
//!
//! One file per part: `kind` (the names), `marks` (the hits the live cache keeps), `rule`
//! (what every rule answers), `rules` (inner pages apart, the chosen rule for the rest), one
//! file per rule (`s3fifo`, `linked` for LRU), and `miniature` (the what-if estimate's
//! caches). The trace simulator, the optimum and the policies kept only for comparison
//! (SIEVE, W-TinyLFU) are in the `skewdb-cachesim` crate, over the same `Policy`.

mod kind;
mod linked;
mod marks;
mod miniature;
mod rule;
mod rules;
mod s3fifo;

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests;

pub use kind::CachePolicy;
pub use marks::Marks;
#[cfg(feature = "policy")]
pub use marks::NoMarks;
pub(crate) use marks::ratio;
pub use miniature::Miniature;
pub use rule::EvictionRule;
pub use rules::Policy;
#[cfg(feature = "policy")]
pub use rules::{InnerPages, Rule};
