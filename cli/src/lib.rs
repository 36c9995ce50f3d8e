//! The parts of the `skewdb` command-line tool that other crates reach: the `exec` line
//! protocol (which the fuzz target drives) and the text and JSON renderings.

pub mod exec;
pub mod text;
