//! Running the built `skewdb` binary, shared by the subjects' modules.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `skewdb` with `args`, its output once it exits.
pub fn skewdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(args)
        .output()
        .expect("run skewdb")
}

/// `skewdb` with `args` and `input` on its standard input, its output once it exits. A
/// process that refuses to start (a locked database) may exit before it reads: the write
/// then fails with a broken pipe, and the output says why.
pub fn skewdb_with_input(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run skewdb");
    let _ = child.stdin.take().expect("piped").write_all(input);
    child.wait_with_output().expect("skewdb's output")
}
