//! Replays every checked-in fuzz corpus file through the function its target calls, so the
//! corpora run on stable in CI.

use std::path::Path;

#[test]
fn decoders_corpus_replays_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/decoders");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        // The first byte selects the decoder: it stays.
        with_variations(&data, 1, 0xff, skewdb::testing::decoders);
        files += 1;
    }
    assert!(files >= 10, "{files} corpus files in {}", dir.display());
}

/// Runs `target` on `data`, on every truncation of it, and on every change of one byte
/// from `from` on (flipped by `flip`).
fn with_variations(data: &[u8], from: usize, flip: u8, target: fn(&[u8])) {
    target(data);
    for len in 0..data.len() {
        target(&data[..len]);
    }
    for index in from..data.len() {
        let mut changed = data.to_vec();
        changed[index] ^= flip;
        target(&changed);
    }
}

/// Runs every file of a corpus through `target`.
fn replay(corpus: &str, target: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(corpus);
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        target(&std::fs::read(entry.unwrap().path()).unwrap());
        files += 1;
    }
    files
}

#[test]
fn db_image_corpus_replays_cleanly() {
    let files = replay("db_image", skewdb_tests::fuzz::db_image);
    assert!(files >= 6, "{files} corpus files");
}

#[test]
fn model_corpus_replays_cleanly() {
    let files = replay("model", skewdb_tests::fuzz::model);
    assert!(files >= 8, "{files} corpus files");
}

/// The `exec_line` corpus with every truncation and every single-byte change of each file.
#[test]
fn exec_line_corpus_replays_cleanly() {
    let files = replay("exec_line", |data| {
        with_variations(data, 0, 0x20, skewdb_tests::fuzz::exec_line);
    });
    assert!(files >= 10, "{files} corpus files");
}
