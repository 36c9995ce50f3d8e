//! Eviction policies over keys and byte weights, with no values: the live cache keeps its
//! values beside one of these, the what-if estimator runs miniature ones on sampled keys,
//! and [`Simulator`] replays a recorded trace through one. One code path for all three, so
//! an estimate and a simulation use exactly the policy the cache runs.
//!
//! One file per part: `kind` (the names), `marks` (the hits the live cache keeps), `rules`
//! (inner pages apart, the chosen rule for the rest), one file per rule (`s3fifo`, `linked`
//! for LRU and SIEVE, `tinylfu`), `simulator`, and `belady` (the optimum).

mod belady;
mod kind;
mod linked;
mod marks;
mod rules;
mod s3fifo;
mod simulator;
mod tinylfu;

#[cfg(test)]
mod tests;

pub use belady::belady_hits;
pub use kind::CachePolicy;
pub(crate) use marks::{Marks, ratio};
pub(crate) use rules::Policy;
pub use simulator::Simulator;
