//! Cache simulations beside skewdb, for its benchmarks and its layout advisor: a recorded
//! access trace replayed through a policy ([`Simulator`]), the engine's own (the very code
//! its live cache runs) or one kept only for comparison (SIEVE, W-TinyLFU), and the offline
//! optimum ([`belady_hits`]). None of it is compiled into the engine.

#![deny(missing_docs)]

mod belady;
mod policy;
mod sieve;
mod simulator;
mod tinylfu;
mod trace;

#[cfg(test)]
mod tests;

pub use belady::belady_hits;
pub use policy::SimPolicy;
pub use simulator::Simulator;
pub use trace::{ClassedTrace, read_classed_trace, read_trace};
