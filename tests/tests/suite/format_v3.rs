//! What came after format v2 and before rollups kept: a database with a live layout change
//! under way and columnar sealed buckets (checkpoint 9, hot log 7, cold segment 3, backup
//! 6), written by the last build before rollups (`tests/fixtures/v3/README.md`), opens with
//! today's engine, reads exactly what it was written with, restores from its backup alike,
//! finishes its migration, takes writes (an expiry among them), compacts and verifies.
//!
//! The fixture is made by the ignored test `write_v3_fixture` below, run by that build:
//! `SKEWDB_WRITE_FIXTURES=1 cargo test -p skewdb-tests --test suite format_v3:: -- --ignored`.
//! Never regenerate it to make the other tests pass: it is what that build wrote.

use std::path::{Path, PathBuf};

use skewdb::{Alteration, CollectionSpec, Db, Layout, NewItem, Options};
use skewdb_tests::{copy_dir, dump};

fn options() -> Options {
    skewdb_tests::fixture_options()
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/v3/changed")
}

/// Pushes `count` readings from minute `from` on to `field` of `parent`: a temperature
/// with one decimal (columnar buckets store it as decimal integers) and, every third, a
/// humidity.
fn push(db: &Db, parent: &str, field: &str, from: i64, count: i64) {
    let mut batch = db.batch();
    for minute in from..from + count {
        let temp = ((minute * 37) % 400) as f64 / 10.0;
        let mut item = NewItem::new(format!("{parent} {minute}"))
            .key(minute * 60)
            .measure("temp", temp);
        if minute % 3 == 0 {
            item = item.measure("hum", (minute % 100) as f64);
        }
        batch.push("s", parent, field, item);
    }
    batch.commit().unwrap();
}

/// The fixture's contents. Collection `s` has an hourly Bucket array `t` (sealed buckets
/// are columnar) and a `Subset { keep: 5 }` array `h`, six parents with up to five hours of
/// readings in each, late readings among them. Then `h` is moved to `Outlier` (the
/// maintenance thread is off: the migration stays open, one parent moved by a write), a
/// checkpoint (version 9: the layout state in the catalog), and, only in the log: `t`'s
/// first hour expired, more pushes, a second layout change of `h` cancelling the first
/// (op 15), and a backup.
fn write_fixture(dir: &Path) {
    let db = Db::open(dir, options()).unwrap();
    let hourly = Layout::Bucket {
        max_items: 60,
        span: Some(3600),
    };
    let spec = CollectionSpec::new("s")
        .array_with_measures("t", hourly, ["temp", "hum"])
        .array_with_measures("h", Layout::Subset { keep: 5 }, ["temp", "hum"]);
    db.create_collection(spec).unwrap();
    for parent in 0..6i64 {
        let key = format!("p{parent}");
        let mut batch = db.batch();
        batch.put("s", &key, format!("body of {key}"));
        batch.commit().unwrap();
        push(&db, &key, "t", 0, parent * 60);
        push(&db, &key, "h", 0, parent * 7);
        // Late readings, older than the open bucket.
        push(&db, &key, "t", 10, parent);
    }
    let outlier = Layout::Outlier { inline_cap: 3 };
    db.alter_collection("s", Alteration::new().set_layout("h", outlier))
        .unwrap();
    push(&db, "p4", "h", 100, 4);
    db.checkpoint().unwrap();
    let sensors = db.collection("s").unwrap();
    sensors.expire_buckets("t", 3600).unwrap();
    push(&db, "p5", "t", 300, 90);
    let subset = Layout::Subset { keep: 5 };
    db.alter_collection("s", Alteration::new().set_layout("h", subset))
        .unwrap();
    push(&db, "p2", "h", 200, 3);
    db.backup(dir.join("../db.backup")).unwrap();
    // As a crash leaves it: the writes after the checkpoint only in the log.
    std::mem::forget(db);
    let _ = std::fs::remove_file(dir.join("LOCK"));
}

/// Writes the fixture (run once, by the build before rollups; see the module).
#[test]
#[ignore = "writes the fixture: run by hand, never in CI"]
fn write_v3_fixture() {
    if std::env::var("SKEWDB_WRITE_FIXTURES").as_deref() != Ok("1") {
        panic!("set SKEWDB_WRITE_FIXTURES=1 to write the fixture");
    }
    let root = fixture();
    let _ = std::fs::remove_dir_all(&root);
    let db_dir = root.join("db");
    std::fs::create_dir_all(&db_dir).unwrap();
    write_fixture(&db_dir);
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&db_dir, copy.path());
    let db = Db::open(copy.path(), options()).unwrap();
    std::fs::write(root.join("expected.txt"), dump(&db)).unwrap();
}

/// A dump without what the layout decides: each array's overflow flag and inline count.
fn answers(dump: &str) -> String {
    dump.lines()
        .map(|line| match line.find(" overflow ") {
            Some(at) if line.contains(" total ") => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_v3_fixture_opens_reads_exactly_migrates_and_upgrades() {
    let root = fixture();
    let expected = std::fs::read_to_string(root.join("expected.txt")).unwrap();
    assert!(expected.lines().count() > 100, "the fixture is too small");
    assert!(
        expected.contains("collection s: t=bucket:60:3600 [temp hum]"),
        "{expected}"
    );
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root.join("db"), dir.path());
    let reader = Db::open_read_only(dir.path(), options()).unwrap();
    assert!(dump(&reader) == expected, "read-only:\n{}", dump(&reader));
    drop(reader);
    let db = Db::open(dir.path(), options()).unwrap();
    db.verify().unwrap();
    assert!(dump(&db) == expected, "reads differently:\n{}", dump(&db));
    let sensors = db.collection("s").unwrap();
    assert_eq!(sensors.spec().arrays()[0].rollup, None);
    // The open migration runs to its end; no read answers differently (only where items
    // live, and so what a parent carries inline, may change).
    db.compact().unwrap();
    db.verify().unwrap();
    assert!(
        answers(&dump(&db)) == answers(&expected),
        "reads differently once migrated"
    );
    // Writes of today's build: pushes, and an expiry of what the old build sealed.
    push(&db, "p1", "t", 500, 70);
    let expired = sensors.expire_buckets("t", 2 * 3600).unwrap();
    assert!(expired.buckets > 0 && expired.rolled_up == 0, "{expired:?}");
    db.compact().unwrap();
    db.verify().unwrap();
    let written = dump(&db);
    assert!(written.contains("p1 500"), "{written}");
    drop(sensors);
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.verify().unwrap();
    assert!(dump(&db) == written, "changed across a reopen");
    // The backup restores to what the database held.
    let restored = tempfile::tempdir().unwrap();
    let db = Db::restore(
        root.join("db.backup"),
        restored.path().join("db"),
        options(),
    )
    .unwrap();
    db.verify().unwrap();
    assert!(dump(&db) == expected, "the backup restores differently");
}
