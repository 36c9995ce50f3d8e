//! Format v1 kept: a small database per layout, written by the build that declared the
//! format v1 (`tests/fixtures/v1/README.md`), opens with today's engine, reads exactly what
//! it was written with, restores from its backup alike, takes writes, compacts and verifies.
//!
//! The fixtures are made by the ignored test `write_v1_fixtures` below:
//! `SKEWDB_WRITE_FIXTURES=1 cargo test -p skewdb-tests --test suite format_v1:: -- --ignored`.
//! Never regenerate them to make the other tests pass: they are what v1 wrote.

use std::path::{Path, PathBuf};

use skewdb::{CollectionSpec, Db, Layout, NewItem, Options};
use skewdb_tests::{copy_dir, dump};

/// One fixture per layout, each with a second measure so that every summary form appears.
const LAYOUTS: [(&str, Layout); 5] = [
    ("embed", Layout::Embed),
    ("reference", Layout::Reference),
    ("subset", Layout::Subset { keep: 3 }),
    ("outlier", Layout::Outlier { inline_cap: 4 }),
    (
        "bucket",
        Layout::Bucket {
            max_items: 8,
            span: Some(100),
        },
    ),
];

/// Small pages and segments, and no automatic checkpoint: the writes after the one the
/// generator takes stay in the log, for replay.
fn options() -> Options {
    skewdb_tests::fixture_options()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/v1")
}

/// The fixture's contents: 12 parents with 0 to 72 items each (item keys 10 apart, so that
/// buckets of a 100-wide span seal by time and by count), two measures (the second on every
/// other item only), a checkpoint half way, then more pushes, removals, a body changed and
/// a parent deleted, which stay in the log.
fn write_fixture(dir: &Path, layout: Layout) {
    let db = Db::open(dir, options()).unwrap();
    let spec = CollectionSpec::new("c").array_with_measures("a", layout, ["value", "second"]);
    db.create_collection(spec).unwrap();
    let push = |parent: u32, from: i64, count: i64| {
        let mut batch = db.batch();
        for n in from..from + count {
            // Padded, so that the log rolls past its first segment.
            let mut item = NewItem::new(format!(
                "p{parent} item {n} {}",
                ".".repeat(60 + n as usize % 97)
            ))
            .key(n * 10)
            .value(n as f64 * 0.5 + f64::from(parent));
            if n % 2 == 0 {
                item = item.measure("second", -(n as f64));
            }
            batch.push("c", format!("p{parent:02}"), "a", item);
        }
        batch.commit().unwrap();
    };
    for parent in 0..12u32 {
        let mut batch = db.batch();
        batch.put(
            "c",
            format!("p{parent:02}"),
            format!("body of parent {parent}"),
        );
        batch.commit().unwrap();
        push(parent, 0, i64::from(parent * 5));
    }
    db.checkpoint().unwrap();
    for parent in [3u32, 7, 11] {
        push(parent, 1000, 17);
    }
    let mut batch = db.batch();
    batch.remove("c", "p07", "a", 20);
    batch.remove("c", "p11", "a", 10_050);
    batch.put("c", "p05", "a body changed after the checkpoint");
    batch.delete("c", "p02");
    batch.commit().unwrap();
    db.backup(dir.join("../db.backup")).unwrap();
    // As a crash leaves it: the writes after the checkpoint only in the log.
    std::mem::forget(db);
    let _ = std::fs::remove_file(dir.join("LOCK"));
}

/// Writes the fixtures (run once, by the build that declared the format; see the module).
#[test]
#[ignore = "writes the fixtures: run by hand, never in CI"]
fn write_v1_fixtures() {
    if std::env::var("SKEWDB_WRITE_FIXTURES").as_deref() != Ok("1") {
        panic!("set SKEWDB_WRITE_FIXTURES=1 to write the fixtures");
    }
    for (name, layout) in LAYOUTS {
        let root = fixtures().join(name);
        let _ = std::fs::remove_dir_all(&root);
        let db_dir = root.join("db");
        std::fs::create_dir_all(&db_dir).unwrap();
        write_fixture(&db_dir, layout);
        let copy = tempfile::tempdir().unwrap();
        copy_dir(&db_dir, copy.path());
        let db = Db::open(copy.path(), options()).unwrap();
        std::fs::write(root.join("expected.txt"), dump(&db)).unwrap();
    }
}

/// Each fixture opens and reads as written; its backup restores to the same; it takes
/// writes, compacts, verifies and reopens with them.
#[test]
fn every_v1_fixture_opens_reads_exactly_and_upgrades() {
    for (name, layout) in LAYOUTS {
        let root = fixtures().join(name);
        let expected = std::fs::read_to_string(root.join("expected.txt"))
            .unwrap_or_else(|e| panic!("fixture {name}: {e}"));
        assert!(
            expected.lines().count() > 100,
            "fixture {name} is too small"
        );
        // Read-only first: it changes nothing, and sees what a writer will.
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&root.join("db"), dir.path());
        let reader = Db::open_read_only(dir.path(), options()).unwrap();
        assert!(
            dump(&reader) == expected,
            "{name} read-only:\n{}",
            dump(&reader)
        );
        drop(reader);
        let db = Db::open(dir.path(), options()).unwrap();
        db.verify().unwrap();
        assert!(
            dump(&db) == expected,
            "{name} reads differently:\n{}",
            dump(&db)
        );
        // Written to, compacted, verified, reopened.
        let mut batch = db.batch();
        for n in 0..40 {
            let item = NewItem::new("new").key(5000 + n * 10).value(n as f64);
            batch.push("c", "p04", "a", item);
        }
        batch.put("c", "p99", "a parent of today's build");
        batch.commit().unwrap();
        db.compact().unwrap();
        db.verify().unwrap();
        let written = dump(&db);
        assert!(written.contains("p99: \"a parent of today's build\""));
        db.close().unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        db.verify().unwrap();
        assert!(
            dump(&db) == written,
            "{name} ({layout:?}) changed across a reopen"
        );
        // The backup restores to what the database held.
        let restored = tempfile::tempdir().unwrap();
        let target = restored.path().join("db");
        let db = Db::restore(root.join("db.backup"), &target, options()).unwrap();
        db.verify().unwrap();
        assert!(
            dump(&db) == expected,
            "{name}'s backup restores differently"
        );
    }
}
