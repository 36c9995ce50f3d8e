//! The parts of the `skewdb` command-line tool that other crates reach: the `exec` line
//! protocol (which the fuzz target drives), the failures it reports, and the text and JSON
//! renderings.

pub mod advise;
pub mod cluster;
pub mod exec;
pub mod export;
pub mod failure;
pub mod import;
pub mod item_key;
pub mod mapped;
pub mod mongo;
pub mod schema;
pub mod text;
