//! Snapshots: one committed state across every collection and every read, under concurrent
//! commits, checkpoints and space reclamation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use skewdb::{CollectionSpec, Db, Durability, Error, ItemQuery, Layout, NewItem, Options};

/// A database whose two collections each get, in every batch, the same counter: parent
/// `p`'s body and a pushed item valued by it, so a consistent read sees equal counters
/// everywhere.
fn counters_db(dir: &std::path::Path) -> Db {
    let options = Options::new()
        .page_bytes(4096)
        .segment_bytes(64 * 1024)
        .checkpoint_bytes(64 * 1024)
        .cache_bytes(512 * 1024)
        .durability(Durability::Buffered);
    let db = Db::open(dir, options).unwrap();
    db.create_collection(CollectionSpec::new("a").array("log", Layout::Subset { keep: 3 }))
        .unwrap();
    db.create_collection(CollectionSpec::new("b").array("log", Layout::Outlier { inline_cap: 2 }))
        .unwrap();
    db
}

fn write_counter(db: &Db, counter: u64) {
    let mut batch = db.batch();
    for collection in ["a", "b"] {
        batch.put(collection, "p", counter.to_string());
        batch.push(
            collection,
            "p",
            "log",
            NewItem::new(format!("item {counter}")).value(counter as f64),
        );
    }
    batch.commit().unwrap();
}

/// Every read of `snapshot` agrees on one counter; returns it.
fn consistent_counter(snapshot: &skewdb::Snapshot) -> u64 {
    let mut seen = Vec::new();
    for name in ["a", "b"] {
        let collection = snapshot.collection(name).unwrap();
        let Some(document) = collection.get("p").unwrap() else {
            seen.push(0);
            continue;
        };
        let counter: u64 = std::str::from_utf8(document.body())
            .unwrap()
            .parse()
            .unwrap();
        let array = document.array("log").unwrap();
        assert_eq!(array.total, counter, "{name}: total");
        let items = collection
            .items("p", "log", &ItemQuery::new())
            .unwrap()
            .unwrap();
        assert_eq!(items.items.len() as u64, counter, "{name}: items");
        let summary = collection.summary("p", "log", ..).unwrap().unwrap();
        assert_eq!(summary.count, counter, "{name}: summary");
        assert_eq!(summary.max, Some(counter as f64), "{name}: newest value");
        let scanned: Vec<_> = collection.scan(..).unwrap().collect();
        assert_eq!(scanned.len(), 1);
        assert_eq!(scanned[0].as_ref().unwrap().body(), document.body());
        seen.push(counter);
    }
    assert_eq!(seen[0], seen[1], "the two collections at one commit");
    seen[0]
}

#[test]
fn a_snapshot_sees_one_commit_across_collections_under_concurrent_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = counters_db(dir.path());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut counter = 0;
            while !stop.load(Ordering::Relaxed) && counter < 3_000 {
                counter += 1;
                write_counter(&db, counter);
            }
            counter
        })
    };
    let mut last = 0;
    let mut snapshots = 0;
    while !writer.is_finished() {
        let snapshot = db.snapshot();
        let counter = consistent_counter(&snapshot);
        assert!(counter >= last, "snapshots follow commit order");
        // The same snapshot read again, after more commits, sees the same state.
        std::thread::yield_now();
        assert_eq!(consistent_counter(&snapshot), counter);
        last = counter;
        snapshots += 1;
        if snapshots == 200 {
            stop.store(true, Ordering::Relaxed);
        }
    }
    let written = writer.join().unwrap();
    eprintln!("{snapshots} snapshots during {written} commits, the last at {last}");
    assert!(
        snapshots > 10,
        "only {snapshots} snapshots during {written} commits"
    );
    assert_eq!(consistent_counter(&db.snapshot()), written);
}

#[test]
fn a_snapshot_outlives_checkpoints_and_compaction_of_what_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = counters_db(dir.path());
    for counter in 1..=200 {
        write_counter(&db, counter);
    }
    let snapshot = db.snapshot();
    assert_eq!(snapshot.commits(), db.snapshot().commits());
    // Many commits later, every log segment the snapshot's pages live in is mostly dead;
    // checkpoints and compaction may not remove one it still reads.
    for counter in 201..=2_000 {
        write_counter(&db, counter);
    }
    db.compact().unwrap();
    db.checkpoint().unwrap();
    assert_eq!(consistent_counter(&snapshot), 200);
    assert!(snapshot.commits() < db.snapshot().commits());
    let pinned = db.stats().unwrap().log_bytes;
    drop(snapshot);
    // Once released, the segments only it read from go.
    db.compact().unwrap();
    db.checkpoint().unwrap();
    let released = db.stats().unwrap().log_bytes;
    assert!(
        released < pinned,
        "log bytes {released} after release, {pinned} while pinned"
    );
    assert_eq!(consistent_counter(&db.snapshot()), 2_000);
}

#[test]
fn a_snapshot_does_not_see_collections_created_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = counters_db(dir.path());
    let snapshot = db.snapshot();
    db.create_collection(CollectionSpec::new("later")).unwrap();
    assert!(matches!(
        snapshot.collection("later"),
        Err(Error::UnknownCollection { .. })
    ));
    assert_eq!(snapshot.collection_names(), vec!["a", "b"]);
    assert_eq!(db.snapshot().collection_names(), vec!["a", "b", "later"]);
    // Reads of a snapshot check their arguments as the live handle's do.
    let a = snapshot.collection("a").unwrap();
    assert!(matches!(
        a.items("p", "nosuch", &ItemQuery::new()),
        Err(Error::UnknownField { .. })
    ));
    assert!(matches!(
        a.get("k".repeat(1025)),
        Err(Error::KeyTooLarge { .. })
    ));
    assert!(a.get("p").unwrap().is_none());
}
