//! Space reclamation of the hot log: segments no checkpoint needs are removed, but never
//! under a reader that may still read from them.

use skewdb::{CollectionSpec, Db, Durability, Options};

fn options() -> Options {
    Options::new()
        .page_bytes(4096)
        .segment_bytes(64 * 1024)
        .checkpoint_bytes(64 * 1024)
        .durability(Durability::Buffered)
}

fn rewrite(db: &Db, parents: u32, round: u32) {
    let mut batch = db.batch();
    for i in 0..parents {
        batch.put(
            "docs",
            format!("p{i:05}"),
            format!("{round} {}", "x".repeat(150)),
        );
    }
    batch.commit().unwrap();
}

fn hot_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hot-"))
        .collect();
    names.sort();
    names
}

/// Rewriting the same parents over and over keeps the log within a bound of the live data
/// (the old segments go once no checkpoint needs them), and a reopen finds every parent.
#[test]
fn rewrites_keep_the_log_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    let mut worst: f64 = 0.0;
    for round in 0..60 {
        rewrite(&db, 2_000, round);
        db.checkpoint().unwrap();
        let space = db.space().unwrap();
        if round >= 10 {
            worst = worst.max(space.hot.amplification());
        }
    }
    let space = db.space().unwrap();
    // 60 rounds wrote about 60 times the live data; the files hold a small multiple of it.
    assert!(
        worst < 4.0,
        "hot amplification reached {worst:.2}: {space:?}"
    );
    let first_segment = hot_files(dir.path())[0].clone();
    assert_ne!(
        first_segment, "hot-00000001.log",
        "no segment was ever removed"
    );
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    let docs = db.collection("docs").unwrap();
    for i in 0..2_000 {
        let doc = docs.get(format!("p{i:05}")).unwrap().unwrap();
        assert!(doc.body().starts_with(b"59 "));
    }
    db.verify().unwrap();
}

/// A scan opened before many checkpoints keeps reading the version it started on: the
/// segments that version reads from stay until the scan is dropped, then go.
#[test]
fn a_long_scan_holds_its_segments() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    rewrite(&db, 2_000, 0);
    db.checkpoint().unwrap();
    let docs = db.collection("docs").unwrap();
    let mut scan = docs.scan::<&[u8]>(..).unwrap();
    let first = scan.next().unwrap().unwrap();
    assert!(first.body().starts_with(b"0 "));
    let held = hot_files(dir.path());
    for round in 1..30 {
        rewrite(&db, 2_000, round);
        db.checkpoint().unwrap();
    }
    // Every segment the scan's version may read from is still there, including some the
    // current state no longer needs.
    let now = hot_files(dir.path());
    for name in &held {
        assert!(now.contains(name), "{name} removed under a reader");
    }
    let unneeded: Vec<String> = db
        .space()
        .unwrap()
        .hot
        .segments
        .into_iter()
        .filter(|s| s.live_bytes == 0)
        .map(|s| s.file)
        .collect();
    assert!(!unneeded.is_empty(), "the scan held nothing back");
    let mut seen = 1;
    for doc in scan {
        let doc = doc.unwrap();
        assert!(doc.body().starts_with(b"0 "), "the scan saw a later round");
        seen += 1;
    }
    assert_eq!(seen, 2_000);
    // With the reader gone, the next checkpoint removes them.
    rewrite(&db, 2_000, 30);
    db.checkpoint().unwrap();
    let after = hot_files(dir.path());
    for name in &unneeded {
        assert!(!after.contains(name), "{name} stayed after the scan ended");
    }
}

/// Rewriting all parents but the first tenth leaves those in the first segments among dead
/// pages: cleaning copies them to the tail, so the first segments go too, and the files stay
/// within a bound of the live data.
#[test]
fn cleaning_moves_cold_pages_out_of_sparse_segments() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    rewrite(&db, 2_000, 0);
    db.checkpoint().unwrap();
    let first_segments = hot_files(dir.path());
    let mut worst: f64 = 0.0;
    for round in 1..40 {
        let mut batch = db.batch();
        for i in 200..2_000 {
            batch.put(
                "docs",
                format!("p{i:05}"),
                format!("{round} {}", "x".repeat(150)),
            );
        }
        batch.commit().unwrap();
        db.checkpoint().unwrap();
        if round >= 10 {
            worst = worst.max(db.space().unwrap().hot.amplification());
        }
    }
    let now = hot_files(dir.path());
    for name in &first_segments {
        assert!(!now.contains(name), "{name} was never cleaned: {now:?}");
    }
    assert!(worst < 4.0, "hot amplification reached {worst:.2}");
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    let docs = db.collection("docs").unwrap();
    for i in 0..2_000 {
        let body = docs.get(format!("p{i:05}")).unwrap().unwrap();
        let expected: &[u8] = if i < 200 { b"0 " } else { b"39 " };
        assert!(body.body().starts_with(expected), "parent {i}");
    }
    db.verify().unwrap();
}

/// Leak check: after everything is deleted and the database compacted, the log is back to
/// a small size whatever was written before, and reopening finds nothing.
#[test]
fn deleting_everything_then_compacting_leaves_a_small_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    for round in 0..10 {
        rewrite(&db, 5_000, round);
    }
    db.checkpoint().unwrap();
    let full = db.space().unwrap().hot.file_bytes;
    let mut batch = db.batch();
    for i in 0..5_000 {
        batch.delete("docs", format!("p{i:05}"));
    }
    batch.commit().unwrap();
    let mut calls = Vec::new();
    let (before, after) = db
        .compact_with_progress(|done, total| calls.push((done, total)))
        .unwrap();
    assert!(before >= full / 2, "before {before}, full {full}");
    assert!(after <= 256 * 1024, "{after} bytes of log left");
    assert_eq!(db.space().unwrap().hot.file_bytes, after);
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0), "{calls:?}");
    assert_eq!(calls.last().map(|c| c.0), calls.last().map(|c| c.1));
    // Compacting again finds nothing more to give back (it only starts a new segment: one
    // 32-byte header).
    let (again, after_again) = db.compact().unwrap();
    assert_eq!(again, after);
    assert!(after_again <= after + 32, "{after} then {after_again}");
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(
        db.collection("docs")
            .unwrap()
            .scan::<&[u8]>(..)
            .unwrap()
            .count(),
        0
    );
    db.verify().unwrap();
}
