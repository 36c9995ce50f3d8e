//! Replays every checked-in fuzz corpus file through the function its target calls, so the
//! corpora run on stable in CI.

use std::path::Path;

#[test]
fn decoders_corpus_replays_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/decoders");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        skewdb::testing::decoders(&data);
        // Every truncation and every single-byte change of a valid input too.
        for len in 0..data.len() {
            skewdb::testing::decoders(&data[..len]);
        }
        for index in 1..data.len() {
            let mut changed = data.clone();
            changed[index] ^= 0xff;
            skewdb::testing::decoders(&changed);
        }
        files += 1;
    }
    assert!(files >= 10, "{files} corpus files in {}", dir.display());
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
        skewdb_tests::fuzz::exec_line(data);
        for len in 0..data.len() {
            skewdb_tests::fuzz::exec_line(&data[..len]);
        }
        for index in 0..data.len() {
            let mut changed = data.to_vec();
            changed[index] ^= 0x20;
            skewdb_tests::fuzz::exec_line(&changed);
        }
    });
    assert!(files >= 10, "{files} corpus files");
}
