//! The command-line tool's tests in one test binary (one build and one link instead of one
//! per file), a module per subject; each runs the built `skewdb` binary. Run one subject
//! with a filter: `cargo test -p skewdb-cli --test commands kill::`.

mod cli;
mod cluster;
mod documents;
mod kill;
mod mongo;
mod scripts;
mod support;
