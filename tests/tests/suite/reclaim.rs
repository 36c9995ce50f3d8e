//! Space reclamation: log cleaning and cold compaction; segments no checkpoint needs are
//! removed, but never under a reader that may still read from them.

use skewdb::{CollectionSpec, Db, Durability, ItemQuery, Layout, NewItem, Options, Summary};

fn options() -> Options {
    Options::new()
        .page_bytes(4096)
        .segment_bytes(64 * 1024)
        .checkpoint_bytes(64 * 1024)
        .durability(Durability::Buffered)
        .background(false)
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

/// The names of the files in `dir` starting with `prefix`, sorted.
fn files(dir: &std::path::Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

fn hot_files(dir: &std::path::Path) -> Vec<String> {
    files(dir, "hot-")
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
    let mut scan = docs.scan(..).unwrap();
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

/// Pages of sealed segments are read from the segments' maps: with a cache far smaller than
/// the data every read goes back to them, while rewrites seal new segments and cleaning
/// removes old ones (a cached page may still be a view of a removed segment's map). Every
/// read sees its round, the removed files are gone, and a reopen reads the same. Pages are
/// read into buffers (the default) or from maps of the segments (`Options::memory_map`).
#[test]
fn reads_from_sealed_segments_stay_right_while_segments_come_and_go() {
    reads_while_segments_come_and_go(false);
}

#[test]
fn reads_from_maps_of_sealed_segments_stay_right_while_segments_come_and_go() {
    reads_while_segments_come_and_go(true);
}

fn reads_while_segments_come_and_go(memory_map: bool) {
    let dir = tempfile::tempdir().unwrap();
    let small = || {
        options()
            .cache_bytes(128 * 1024)
            .record_cache_percent(0)
            .memory_map(memory_map)
    };
    let db = Db::open(dir.path(), small()).unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    let docs = db.collection("docs").unwrap();
    let check = |docs: &skewdb::Collection, round: u32| {
        for i in (0..2_000).rev() {
            let doc = docs.get(format!("p{i:05}")).unwrap().expect("parent");
            assert_eq!(
                doc.body(),
                format!("{round} {}", "x".repeat(150)).as_bytes(),
                "p{i:05}"
            );
        }
    };
    let mut removed = Vec::new();
    for round in 0..20 {
        let before = hot_files(dir.path());
        rewrite(&db, 2_000, round);
        db.checkpoint().unwrap();
        check(&docs, round);
        let now = hot_files(dir.path());
        removed.extend(before.into_iter().filter(|name| !now.contains(name)));
    }
    assert!(removed.len() >= 5, "cleaning removed only {removed:?}");
    let stats = db.cache_stats();
    assert!(
        stats.hot.misses > 20 * 100,
        "reads should mostly miss the small cache: {:?}",
        stats.hot
    );
    for name in &removed {
        assert!(!dir.path().join(name).exists(), "{name} still on disk");
    }
    drop(docs);
    db.close().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    check(&db.collection("docs").unwrap(), 19);
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
    let report = db
        .compact_with_progress(|done, total| calls.push((done, total)))
        .unwrap();
    let (before, after) = (report.hot_bytes_before, report.hot_bytes_after);
    assert!(before >= full / 2, "before {before}, full {full}");
    assert!(after <= 256 * 1024, "{after} bytes of log left");
    assert_eq!(db.space().unwrap().hot.file_bytes, after);
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0), "{calls:?}");
    assert_eq!(calls.last().map(|c| c.0), calls.last().map(|c| c.1));
    // Compacting again finds nothing more to give back (it only starts a new segment: one
    // 32-byte header).
    let report = db.compact().unwrap();
    let (again, after_again) = (report.hot_bytes_before, report.hot_bytes_after);
    assert_eq!(again, after);
    assert!(after_again <= after + 32, "{after} then {after_again}");
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.collection("docs").unwrap().scan(..).unwrap().count(), 0);
    db.verify().unwrap();
}

fn cold_files(dir: &std::path::Path) -> Vec<String> {
    files(dir, "cold-")
}

/// Parents with long `Reference` and `Subset` histories: many small chunks each, except every
/// fourth parent, whose histories stop early (too few chunks to merge).
fn histories(db: &Db, parents: u32, pushes: u32) {
    db.create_collection(
        CollectionSpec::new("docs")
            .array("log", Layout::Reference)
            .array("reviews", Layout::Subset { keep: 3 }),
    )
    .unwrap();
    for round in 0..pushes / 10 {
        let mut batch = db.batch();
        for i in 0..parents {
            if i % 4 == 3 && round >= 3 {
                continue;
            }
            for j in 0..10 {
                let n = round * 10 + j;
                let payload = format!("{i}/{n} {}", "y".repeat(40 + (n % 7) as usize));
                let item = NewItem::new(payload.clone().into_bytes())
                    .key(n as i64)
                    .value(n as f64);
                batch.push("docs", format!("p{i:03}"), "log", item);
                let review = NewItem::new(payload.into_bytes()).key(n as i64);
                batch.push("docs", format!("p{i:03}"), "reviews", review);
            }
        }
        batch.commit().unwrap();
    }
}

/// An array's items as (key, payload).
type Items = Vec<(i64, Vec<u8>)>;

/// Every item of every parent in both arrays, with the summaries.
fn everything(db: &Db) -> Vec<(Vec<u8>, Items, Items, Summary)> {
    let docs = db.collection("docs").unwrap();
    let all = |key: &[u8], field: &str| -> Items {
        docs.items(key, field, &ItemQuery::new())
            .unwrap()
            .expect("the parent exists")
            .items
            .into_iter()
            .map(|item| (item.key, item.payload.to_vec()))
            .collect()
    };
    docs.scan(..)
        .unwrap()
        .map(|doc| {
            let doc = doc.unwrap();
            let key = doc.key().to_vec();
            let summary = docs.summary(&key, "log", ..).unwrap().expect("a summary");
            (key.clone(), all(&key, "log"), all(&key, "reviews"), summary)
        })
        .collect()
}

/// Cold compaction on demand (automatic reclamation off, so that `compact` finds all the
/// work): after half the parents go, the live chunks of the sparse cold segments move, runs
/// of small chunks merge, every remaining item reads back the same (before and
/// after a reopen), and the cold files shrink to within twice their live bytes.
#[test]
fn cold_compaction_moves_and_merges_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options().reclaim(false)).unwrap();
    histories(&db, 40, 300);
    let mut batch = db.batch();
    for i in (0..40).step_by(2) {
        batch.delete("docs", format!("p{i:03}"));
    }
    batch.commit().unwrap();
    let before = everything(&db);
    assert_eq!(before.len(), 20);
    let chunks_before = db.verify().unwrap().chunks;
    let space_before = db.space().unwrap().cold;
    assert!(space_before.amplification() > 1.8, "{space_before:?}");
    let report = db.compact().unwrap();
    assert!(report.chunks_moved > 0, "{report:?}");
    assert!(report.chunks_merged >= 4 * report.merged_into, "{report:?}");
    assert!(report.merged_into > 0, "{report:?}");
    assert!(
        report.cold_bytes_after < report.cold_bytes_before,
        "{report:?}"
    );
    let space = db.space().unwrap().cold;
    assert_eq!(space.file_bytes, report.cold_bytes_after);
    assert!(space.amplification() <= 2.0, "{space:?}");
    let chunks_after = db.verify().unwrap().chunks;
    assert_eq!(
        chunks_after,
        chunks_before - report.chunks_merged + report.merged_into,
    );
    assert_eq!(everything(&db), before);
    drop(db);
    let db = Db::open(dir.path(), options().reclaim(false)).unwrap();
    assert_eq!(everything(&db), before);
    db.verify().unwrap();
    // Nothing left to do: a second compaction moves and merges nothing.
    let again = db.compact().unwrap();
    assert_eq!(
        (again.chunks_moved, again.chunks_merged),
        (0, 0),
        "{again:?}"
    );
}

/// A cold segment compaction emptied stays while a reader holds a version that may read
/// from it, and goes at the first checkpoint after the reader is done.
#[test]
fn a_held_version_keeps_its_cold_segments() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    histories(&db, 20, 200);
    let first = cold_files(dir.path())[0].clone();
    let mut batch = db.batch();
    for i in 0..20 {
        batch.delete("docs", format!("p{i:03}"));
    }
    batch.commit().unwrap();
    let scan = db.collection("docs").unwrap().scan(..).unwrap();
    db.compact().unwrap();
    assert!(
        cold_files(dir.path()).contains(&first),
        "removed under a reader"
    );
    drop(scan);
    db.checkpoint().unwrap();
    assert!(!cold_files(dir.path()).contains(&first));
    db.verify().unwrap();
}

/// Leak check for the cold tier: after every parent with a history is deleted and the
/// database compacted, one empty cold segment (its 32-byte header) is all that is left, and
/// compacting again changes nothing.
#[test]
fn deleting_every_history_then_compacting_leaves_no_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    histories(&db, 30, 300);
    assert!(cold_files(dir.path()).len() > 3);
    let mut batch = db.batch();
    for i in 0..30 {
        batch.delete("docs", format!("p{i:03}"));
    }
    batch.commit().unwrap();
    let report = db.compact().unwrap();
    assert_eq!(report.cold_bytes_after, 32, "{report:?}");
    assert_eq!(cold_files(dir.path()).len(), 1);
    let again = db.compact().unwrap();
    assert_eq!(again.cold_bytes_after, 32, "{again:?}");
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.space().unwrap().cold.file_bytes, 32);
    db.verify().unwrap();
}

/// Polls `done` for up to 20 seconds.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    done()
}

/// With the maintenance thread, checkpoints (and their cleaning) happen without anyone
/// asking, the log stays bounded, and closing stops the thread so that a reopen finds the
/// database free at once.
#[test]
fn the_maintenance_thread_checkpoints_and_cleans() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options().background(true)).unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    for round in 0..30 {
        rewrite(&db, 2_000, round);
    }
    assert!(eventually(|| db.stats().unwrap().checkpoints >= 5));
    assert!(eventually(|| db.space().unwrap().hot.amplification() < 4.0));
    drop(db);
    let db = Db::open(dir.path(), options().background(true)).unwrap();
    assert_eq!(
        db.collection("docs").unwrap().scan(..).unwrap().count(),
        2_000
    );
    db.verify().unwrap();
}

/// Automatic reclamation compacts the cold tier too: once parents with long histories are
/// deleted, later writes (whose checkpoints run compaction steps) bring the cold files back
/// within twice their live bytes, without `compact`.
#[test]
fn automatic_cold_compaction_follows_deletions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options().background(true)).unwrap();
    histories(&db, 30, 300);
    let mut batch = db.batch();
    for i in 2..30 {
        batch.delete("docs", format!("p{i:03}"));
    }
    batch.commit().unwrap();
    assert!(db.space().unwrap().cold.amplification() > 2.0);
    let mut round = 0;
    let reclaimed = eventually(|| {
        let mut batch = db.batch();
        for i in 0..300 {
            batch.put(
                "docs",
                format!("q{i:03}"),
                format!("{round} {}", "w".repeat(200)),
            );
        }
        batch.commit().unwrap();
        round += 1;
        db.space().unwrap().cold.amplification() <= 2.0
    });
    let space = db.space().unwrap().cold;
    assert!(reclaimed, "{space:?}");
    db.verify().unwrap();
}

/// `reclaim(false)`: checkpoints copy nothing (the hot files hold more than with
/// reclamation on) and leave dead chunks where they are; `compact` still gives the space
/// back. (A page file whose pages were all written again goes whether or not reclamation
/// is on: nothing is copied for it. What reclamation adds here is the copying out of the
/// log segments and page files that are only partly dead.)
#[test]
fn reclaim_off_copies_nothing_until_compact() {
    let worst = |reclaim: bool| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options().reclaim(reclaim)).unwrap();
        db.create_collection(CollectionSpec::new("docs")).unwrap();
        let mut worst: f64 = 0.0;
        for round in 0..30 {
            rewrite(&db, 2_000, round);
            db.checkpoint().unwrap();
            worst = worst.max(db.space().unwrap().hot.amplification());
        }
        worst
    };
    let (on, off) = (worst(true), worst(false));
    assert!(
        off > 1.25 * on,
        "with reclamation {on:.2}, without {off:.2}"
    );

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options().reclaim(false)).unwrap();
    histories(&db, 20, 300);
    let mut batch = db.batch();
    for i in 0..19 {
        batch.delete("docs", format!("p{i:03}"));
    }
    batch.commit().unwrap();
    db.checkpoint().unwrap();
    let cold = db.space().unwrap().cold.file_bytes;
    for round in 0..5 {
        rewrite(&db, 2_000, round);
        db.checkpoint().unwrap();
    }
    assert_eq!(db.space().unwrap().cold.file_bytes, cold);
    let report = db.compact().unwrap();
    assert!(report.cold_bytes_after < cold / 4, "{report:?}");
}

/// Writes ten large records, then rewrites small parents until the log has moved on.
fn large_then_rewrites(db: &Db) {
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    let mut batch = db.batch();
    for i in 0..10 {
        batch.put("docs", format!("large{i}"), large_body(i));
    }
    batch.commit().unwrap();
    for round in 0..20 {
        rewrite(db, 2_000, round);
    }
    db.checkpoint().unwrap();
}

/// 4 KiB pages: bodies over 993 bytes are large records.
fn large_body(i: u32) -> String {
    format!("{i} {}", "L".repeat(3_000 + i as usize))
}

/// Large records (stored in the log frame that carried them) do not pin their segment:
/// compaction writes them again at the tail, so the segment they were in is cleaned and
/// removed like any other, and they read back the same. Automatic reclamation does the same
/// by itself.
#[test]
fn large_records_move_out_of_sparse_segments() {
    let first = "hot-00000001.log".to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options().reclaim(false)).unwrap();
    large_then_rewrites(&db);
    assert!(hot_files(dir.path()).contains(&first));
    let space = db.space().unwrap().hot;
    db.compact().unwrap();
    let after = db.space().unwrap().hot;
    assert!(
        !hot_files(dir.path()).contains(&first),
        "{:?}",
        hot_files(dir.path())
    );
    assert!(
        after.file_bytes < space.file_bytes,
        "{space:?} then {after:?}"
    );
    let docs = db.collection("docs").unwrap();
    for i in 0..10 {
        let doc = docs.get(format!("large{i}")).unwrap().unwrap();
        assert_eq!(doc.body(), large_body(i).as_bytes());
    }
    db.verify().unwrap();
    drop(docs);
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    let doc = db
        .collection("docs")
        .unwrap()
        .get("large3")
        .unwrap()
        .unwrap();
    assert_eq!(doc.body(), large_body(3).as_bytes());
    db.verify().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    large_then_rewrites(&db);
    assert!(!hot_files(dir.path()).contains(&first));
    db.verify().unwrap();
}

/// Automatic reclamation moves large records a bounded amount per step (an eighth of the
/// cache budget past the first record, 1 MiB at least: 1 MiB here), so a sparse segment
/// whose live records add up to more than one step still empties over the following steps.
#[test]
fn large_records_beyond_one_step_all_move_in_later_steps() {
    let body = |i: u32| format!("{i} {}", "B".repeat(200_000 + i as usize));
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options().cache_bytes(8 << 20)).unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    let mut batch = db.batch();
    for i in 0..24 {
        batch.put("docs", format!("big{i:02}"), body(i));
    }
    batch.commit().unwrap();
    let first = hot_files(dir.path())[0].clone();
    // 11 of 24 stay: about 2.2 MB, under half the segment, over two steps.
    let kept: Vec<u32> = (0..24).filter(|i| i % 2 == 0 && *i < 22).collect();
    let mut batch = db.batch();
    for i in (0..24).filter(|i| !kept.contains(i)) {
        batch.delete("docs", format!("big{i:02}"));
    }
    batch.commit().unwrap();
    let mut rounds = 0;
    while hot_files(dir.path()).contains(&first) {
        rewrite(&db, 2_000, rounds);
        rounds += 1;
        assert!(
            rounds < 200,
            "{first} still there: {:?}",
            hot_files(dir.path())
        );
    }
    let docs = db.collection("docs").unwrap();
    for i in 0..24 {
        let doc = docs.get(format!("big{i:02}")).unwrap();
        if kept.contains(&i) {
            assert_eq!(doc.unwrap().body(), body(i).as_bytes());
        } else {
            assert!(doc.is_none(), "big{i:02}");
        }
    }
    db.verify().unwrap();
}

/// Histories read through maps of the cold and hot segments (`Options::memory_map`) are the
/// ones read into buffers (the default), before and after a compaction, and across a reopen.
#[test]
fn histories_read_the_same_through_maps_and_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let mapped = || options().memory_map(true).cache_bytes(256 * 1024);
    let db = Db::open(dir.path(), mapped()).unwrap();
    histories(&db, 40, 300);
    let mut batch = db.batch();
    for i in (0..40).step_by(4) {
        batch.delete("docs", format!("p{i:03}"));
    }
    batch.commit().unwrap();
    let through_maps = everything(&db);
    assert_eq!(through_maps.len(), 30);
    db.compact().unwrap();
    assert_eq!(everything(&db), through_maps);
    db.close().unwrap();
    let db = Db::open(dir.path(), options().cache_bytes(256 * 1024)).unwrap();
    assert_eq!(everything(&db), through_maps);
    db.close().unwrap();
    let db = Db::open(dir.path(), mapped()).unwrap();
    assert_eq!(everything(&db), through_maps);
}

/// A checkpoint writes its page images to a page file of its own: the log segments the
/// commits append to and sync hold batches only, and every page the checkpoint's table names
/// is in a page file. A reopen reads them there.
#[test]
fn page_images_go_to_page_files_not_to_the_log() {
    use skewdb::testing::{FrameKind, parse_segment_name, scan_segment};
    let (_sim, storage) = skewdb_tests::sim();
    let db = Db::open_with_storage(storage.clone(), options()).unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    for round in 0..6 {
        rewrite(&db, 2_000, round);
        db.checkpoint().unwrap();
    }
    let names = storage.list().unwrap();
    let mut frames = (0, 0);
    for name in &names {
        let Some(id) = parse_segment_name(name) else {
            continue;
        };
        scan_segment(storage.as_ref(), id, 32, |frame, _, _| {
            match frame.kind {
                FrameKind::Page => frames.1 += 1,
                _ => frames.0 += 1,
            }
            Ok(())
        })
        .unwrap();
    }
    assert!(frames.0 > 0, "no batch frame in the log");
    assert_eq!(frames.1, 0, "page frames in the log");
    let page_files: Vec<&String> = names.iter().filter(|n| n.starts_with("pages-")).collect();
    assert!(!page_files.is_empty(), "{names:?}");
    let report = db.verify().unwrap();
    let in_page_files = report
        .segments
        .iter()
        .filter(|s| s.file.starts_with("pages-"));
    assert!(in_page_files.map(|s| s.page_frames).sum::<u64>() > 0);
    drop(db);
    let db = Db::open_with_storage(storage, options()).unwrap();
    let docs = db.collection("docs").unwrap();
    for i in (0..2_000).step_by(97) {
        let body = docs.get(format!("p{i:05}")).unwrap().unwrap();
        assert!(body.body().starts_with(b"5 "), "p{i:05}");
    }
}

/// Checkpoints append to one page file until it reaches the segment size; a process
/// never appends to an earlier process's, so one that opens, writes a few pages and closes
/// leaves a small page file. Past eight of them, checkpoints that clean merge them into
/// their own, so that they do not pile up. Without cleaning (`reclaim(false)`) they stay,
/// every one read.
#[test]
fn small_page_files_are_merged_past_eight() {
    let small_files = |reclaim: bool| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options().reclaim(reclaim)).unwrap();
        db.create_collection(CollectionSpec::new("docs")).unwrap();
        let mut batch = db.batch();
        for i in 0..40_000u32 {
            batch.put("docs", format!("p{i:05}"), "a body");
        }
        batch.commit().unwrap();
        db.checkpoint().unwrap();
        drop(db);
        // Then one parent a process, each in a leaf of its own: each close writes that
        // leaf and its path, and the leaf stays live in its page file.
        let mut most = 0;
        for round in 0..40u32 {
            let db = Db::open(dir.path(), options().reclaim(reclaim)).unwrap();
            let mut batch = db.batch();
            batch.put(
                "docs",
                format!("p{:05}", round * 997),
                format!("round {round}"),
            );
            batch.commit().unwrap();
            drop(db);
            most = most.max(files(dir.path(), "pages-").len());
        }
        let db = Db::open(dir.path(), options().reclaim(reclaim)).unwrap();
        let docs = db.collection("docs").unwrap();
        for round in 0..40u32 {
            let document = docs.get(format!("p{:05}", round * 997)).unwrap().unwrap();
            assert_eq!(document.body(), format!("round {round}").as_bytes());
        }
        db.verify().unwrap();
        most
    };
    let (on, off) = (small_files(true), small_files(false));
    // Eight small files are left alone, beside the load's; the checkpoint that finds a
    // ninth merges them (with its own pages), and the next one removes what they were.
    assert!(on <= 20, "with cleaning, {on} page files at most");
    assert!(off > 30, "without cleaning, {off} page files at most");
}

/// Checkpoints of one process append to one page file until it reaches the segment size,
/// then start the next.
#[test]
fn checkpoints_append_to_a_page_file_until_the_segment_size() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    let mut newest = Vec::new();
    let key = |round: u32, i: u32| format!("p{:05}", (round * 31 + i * 1_009) % 5_000);
    for round in 0..30 {
        let mut batch = db.batch();
        for i in 0..20 {
            batch.put(
                "docs",
                key(round, i),
                format!("{round} {}", "x".repeat(150)),
            );
        }
        batch.commit().unwrap();
        db.checkpoint().unwrap();
        newest.push(files(dir.path(), "pages-").pop().unwrap());
    }
    // A checkpoint of a leaf or two writes a few KiB: several share a file of 64 KiB, and
    // the file changes as they fill it.
    assert!(newest.windows(2).any(|w| w[0] == w[1]), "{newest:?}");
    assert!(newest.last() > newest.first(), "{newest:?}");
    let largest = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("pages-"))
        .map(|e| e.metadata().unwrap().len())
        .max()
        .unwrap();
    assert!(
        largest >= 64 * 1024,
        "the largest page file holds {largest} bytes"
    );
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    let docs = db.collection("docs").unwrap();
    for i in 0..20 {
        let document = docs.get(key(29, i)).unwrap().unwrap();
        assert!(document.body().starts_with(b"29 "));
    }
    db.verify().unwrap();
}
