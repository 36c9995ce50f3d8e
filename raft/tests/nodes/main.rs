//! The replicated storage's tests in one test binary (one build and one link instead of one
//! per file), a module per subject. Run one subject with a filter:
//! `cargo test -p skewdb-raft --test nodes processes::`.

mod cluster;
mod linearizable;
mod processes;
mod proposals;
mod suite;
mod swap;
