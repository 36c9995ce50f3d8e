//! The integration tests of the engine in one test binary (one build and one link instead
//! of one per file), a module per subject. `memory`, `sweep` (a counting global allocator)
//! and `logs` (a scoped log subscriber) stay binaries of their own: each needs its process
//! to itself. Run one subject with a filter: `cargo test -p skewdb-tests --test suite crash::`.

mod api;
mod arrays_model;
mod backup;
mod call_graph;
mod concurrency;
mod corruption;
mod crash;
mod durability;
mod format_upgrade;
mod format_v1;
mod format_v2;
mod format_v3;
mod format_v4;
mod fuzz_corpus;
mod measures;
mod migration;
mod model;
mod module_graph;
mod read_only;
mod reclaim;
mod rollups;
mod schema;
mod seeds;
mod snapshot;
mod transaction;
mod typed;
mod windows;
