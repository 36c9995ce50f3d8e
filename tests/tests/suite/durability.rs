//! Group commit, bounded recovery and sticky write failures.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use skewdb::testing::{SimStorage, Storage};
use skewdb::{CollectionSpec, Db, Durability, Error, Layout, NewItem, Options};
use skewdb_tests::{SyncHook, open_db, read_all, sim, small_options};

#[test]
fn concurrent_immediate_commits_share_syncs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new().durability(Durability::Immediate)).unwrap();
    db.create_collection(CollectionSpec::new("c")).unwrap();
    let before = db.stats().unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    let mut batch = db.batch();
                    batch.put("c", format!("{t}-{i}"), "v");
                    batch.commit().unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let stats = db.stats().unwrap();
    let commits = stats.commits - before.commits;
    let groups = stats.commit_groups - before.commit_groups;
    let syncs = stats.log_syncs - before.log_syncs;
    assert_eq!(commits, 400);
    assert!(
        groups < commits,
        "{groups} groups for {commits} commits: nothing was grouped"
    );
    assert_eq!(syncs, groups, "one sync per group under Immediate");
    assert_eq!(read_all(&db).unwrap()["c"].len(), 400);
}

#[test]
fn buffered_commits_do_not_sync() {
    let (_sim, storage) = sim();
    let db = open_db(storage, Options::new().durability(Durability::Buffered)).unwrap();
    let before = db.stats().unwrap().log_syncs;
    for i in 0..50 {
        let mut batch = db.batch();
        batch.put("users", format!("{i}"), "v");
        batch.commit().unwrap();
    }
    assert_eq!(db.stats().unwrap().log_syncs, before);
    db.checkpoint().unwrap();
    assert!(db.stats().unwrap().log_syncs > before);
}

#[test]
fn recovery_replays_at_most_one_checkpoint_interval() {
    let (sim, storage) = sim();
    let options = small_options(Durability::Buffered);
    let db = open_db(storage, options.clone()).unwrap();
    // Ten times the checkpoint interval of redo, then a crash without a clean close.
    for round in 0..100u32 {
        let mut batch = db.batch();
        for i in 0..20u32 {
            batch.put(
                "users",
                format!("{:05}", (round * 7919 + i * 104_729) % 3000),
                vec![b'x'; 300],
            );
        }
        batch.commit().unwrap();
    }
    assert!(db.stats().unwrap().checkpoints >= 5);
    let mut batch = db.batch();
    batch.put("users", "last", "after the last checkpoint");
    batch.commit().unwrap();
    let image = sim.crash_image(0);
    let expected = read_all(&db).unwrap();
    drop(db);
    let storage: Arc<dyn Storage> = Arc::new(image);
    let reopened = Db::open_with_storage(storage, options).unwrap();
    let replayed = reopened.stats().unwrap().replayed_bytes;
    assert!(replayed > 0, "the crash left redo to replay");
    assert!(
        replayed <= 64 * 1024 + 20 * 400,
        "replayed {replayed} bytes"
    );
    assert_eq!(read_all(&reopened).unwrap(), expected);
}

#[test]
fn failed_sync_is_sticky_until_reopen() {
    let (sim, storage) = sim();
    let db = open_db(storage.clone(), small_options(Durability::Immediate)).unwrap();
    let mut batch = db.batch();
    batch.put("users", "a", "1");
    batch.commit().unwrap();
    // The write succeeds, the sync fails.
    sim.fail_at(2, false);
    let mut batch = db.batch();
    batch.put("users", "b", "2");
    assert!(matches!(batch.commit(), Err(Error::Io { .. })));
    // The fault is gone, but the database must not pretend the data is safe.
    let mut batch = db.batch();
    batch.put("users", "c", "3");
    assert!(matches!(batch.commit(), Err(Error::WriteFailed { .. })));
    assert!(matches!(db.checkpoint(), Err(Error::WriteFailed { .. })));
    // Reads still work.
    assert_eq!(
        db.collection("users")
            .unwrap()
            .get("a")
            .unwrap()
            .unwrap()
            .body(),
        b"1"
    );
    drop(db);
    let db = Db::open_with_storage(storage, small_options(Durability::Immediate)).unwrap();
    let users = db.collection("users").unwrap();
    assert_eq!(users.get("a").unwrap().unwrap().body(), b"1");
    assert!(users.get("c").unwrap().is_none());
    let mut batch = db.batch();
    batch.put("users", "d", "4");
    batch.commit().unwrap();
}

#[test]
fn dirty_pages_are_bounded_by_checkpoints() {
    let (_sim, storage) = sim();
    let options = small_options(Durability::Buffered);
    let db = open_db(storage, options).unwrap();
    for round in 0..40u64 {
        let mut batch = db.batch();
        for i in 0..200u64 {
            batch.put(
                "users",
                format!("{:08}", (round * 200 + i) * 2_654_435_761 % 100_000_000),
                "v",
            );
        }
        batch.commit().unwrap();
        let stats = db.stats().unwrap();
        assert!(
            stats.dirty_pages * 4096 < 64 * 1024 + 200 * 2 * 4096,
            "{} dirty pages",
            stats.dirty_pages
        );
    }
}

/// Log bytes per push, over `pushes` pushes spread over `parents` parents of collection `c`
/// (array `a`), each push of an item with a `payload`-byte payload.
fn log_bytes_per_push(db: &Db, parents: usize, pushes: usize, payload: usize) -> u64 {
    let before = db.stats().unwrap().log_bytes;
    for i in 0..pushes {
        let mut batch = db.batch();
        let item = NewItem::new(vec![i as u8; payload]).value(i as f64);
        batch.push("c", format!("p{}", i % parents), "a", item);
        batch.commit().unwrap();
    }
    (db.stats().unwrap().log_bytes - before) / pushes as u64
}

#[test]
fn a_push_logs_its_item_not_the_records_it_changes() {
    for (layout, payload, bound) in [
        // Subset: the product record and the tail the oldest review joins change.
        (Layout::Subset { keep: 5 }, 300, 1_000),
        // Outlier below its cap: the record grows by one small item.
        (Layout::Outlier { inline_cap: 50 }, 16, 250),
        // Records past the inline bound (held in memory between checkpoints): an outlier
        // with hundreds of items inline, an open bucket of up to 1,000 readings.
        (Layout::Outlier { inline_cap: 1000 }, 16, 250),
        (
            Layout::Bucket {
                max_items: 1000,
                span: None,
            },
            16,
            250,
        ),
    ] {
        let (sim, storage) = sim();
        let options = Options::new()
            .checkpoint_bytes(64 << 20)
            .background(false)
            .durability(Durability::Immediate);
        let db = Db::open_with_storage(storage, options.clone()).unwrap();
        db.create_collection(CollectionSpec::new("c").array("a", layout))
            .unwrap();
        let mut batch = db.batch();
        for p in 0..20 {
            batch.put("c", format!("p{p}"), vec![b'b'; 500]);
        }
        batch.commit().unwrap();
        log_bytes_per_push(&db, 20, 200, payload);
        if matches!(
            layout,
            Layout::Outlier { inline_cap: 1000 } | Layout::Bucket { .. }
        ) {
            // 20 parents of 300 items each: every record past the inline bound.
            log_bytes_per_push(&db, 20, 5_800, payload);
            db.checkpoint().unwrap();
        }
        // Whole records would be logged at 2,000 to 5,000 bytes a push for Subset, and
        // 500 to 1,800 for Outlier.
        let per_push = log_bytes_per_push(&db, 20, 400, payload);
        assert!(
            per_push < bound,
            "{layout:?}: {per_push} log bytes per push"
        );
        // Replay rebuilds the same records from the patches.
        let expected = read_all(&db).unwrap();
        let image: Arc<dyn Storage> = Arc::new(sim.crash_image(1));
        drop(db);
        let reopened = Db::open_with_storage(image, options).unwrap();
        assert!(reopened.stats().unwrap().replayed_bytes > 0);
        assert_eq!(read_all(&reopened).unwrap(), expected);
    }
}

#[test]
fn records_past_four_pages_are_logged_whole() {
    let (_sim, storage) = sim();
    let options = Options::new()
        .page_bytes(4096)
        .checkpoint_bytes(64 << 20)
        .background(false);
    let db = Db::open_with_storage(storage, options).unwrap();
    db.create_collection(CollectionSpec::new("c").array("a", Layout::Embed))
        .unwrap();
    // Items of 16-byte payloads take 45 bytes in the record: 360 of them make it about
    // 16,200 bytes, just under four 4 KiB pages; pushes patch it.
    log_bytes_per_push(&db, 1, 40, 16);
    let below = log_bytes_per_push(&db, 1, 320, 16);
    assert!(below < 250, "{below} log bytes per push below the bound");
    // Past 16,384 bytes every push logs the whole record.
    log_bytes_per_push(&db, 1, 10, 16);
    let above = log_bytes_per_push(&db, 1, 50, 16);
    assert!(above > 16_384, "{above} log bytes per push past the bound");
}

#[test]
fn held_records_stay_within_a_quarter_of_the_cache() {
    let cache = 256 * 1024;
    let (sim, storage) = sim();
    let options = Options::new()
        .cache_bytes(cache)
        .checkpoint_bytes(64 << 20)
        .background(false);
    let db = Db::open_with_storage(storage, options.clone()).unwrap();
    db.create_collection(CollectionSpec::new("c").array("a", Layout::Outlier { inline_cap: 1000 }))
        .unwrap();
    // 40 parents of 300 items (about 13.5 KB each, past the inline bound): 540 KB held
    // if nothing were logged.
    let mut batch = db.batch();
    for p in 0..40 {
        for k in 0..300 {
            batch.push("c", format!("p{p}"), "a", NewItem::new([7; 16]).key(k));
        }
    }
    batch.commit().unwrap();
    let mut most = 0;
    for round in 0..5 {
        for p in 0..40 {
            let mut batch = db.batch();
            batch.push("c", format!("p{p}"), "a", NewItem::new([round; 16]));
            batch.commit().unwrap();
            let held = db.stats().unwrap().held_bytes;
            assert!(held <= cache as u64 / 4, "{held} bytes held");
            most = most.max(held);
        }
    }
    assert!(
        most > cache as u64 / 8,
        "records were held: at most {most} bytes"
    );
    let expected = read_all(&db).unwrap();
    let image: Arc<dyn Storage> = Arc::new(sim.crash_image(2));
    drop(db);
    let reopened = Db::open_with_storage(image, options).unwrap();
    assert_eq!(read_all(&reopened).unwrap(), expected);
}

/// Under `Immediate` a push that seals a bucket syncs the log only: the redo carries the
/// sealed chunk's bytes. A power loss that takes the chunk's unsynced write with it loses
/// nothing acknowledged: recovery writes the chunk back from the log.
#[test]
fn a_sealing_push_syncs_only_the_log_and_a_lost_chunk_comes_back() {
    let sim = skewdb::testing::SimStorage::new();
    let cold_syncs = Arc::new(AtomicU64::new(0));
    let counting = {
        let cold_syncs = cold_syncs.clone();
        SyncHook::new(sim.clone(), move |name| {
            if name.starts_with("cold-") {
                cold_syncs.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // Segments and checkpoint intervals large enough that no rollover or checkpoint syncs
    // the cold segment on its own.
    let options = small_options(Durability::Immediate)
        .segment_bytes(16 << 20)
        .checkpoint_bytes(64 << 20);
    let db = Db::open_with_storage(counting.clone(), options.clone()).unwrap();
    let layout = Layout::Bucket {
        max_items: 4,
        span: None,
    };
    db.create_collection(CollectionSpec::new("s").array("r", layout))
        .unwrap();
    let push = |i: i64| {
        let mut batch = db.batch();
        batch.push("s", "sensor", "r", NewItem::new([]).key(i).value(i as f64));
        batch.commit().unwrap();
    };
    // The first seal creates the cold segment (a durable creation, with its syncs).
    for i in 0..5 {
        push(i);
    }
    let syncs = cold_syncs.load(Ordering::Relaxed);
    let log_syncs = db.stats().unwrap().log_syncs;
    for i in 5..41 {
        push(i);
    }
    assert_eq!(
        cold_syncs.load(Ordering::Relaxed),
        syncs,
        "nine seals synced the cold segment"
    );
    assert_eq!(
        db.stats().unwrap().log_syncs - log_syncs,
        36,
        "one log sync a push"
    );
    let items = |db: &Db| -> Vec<i64> {
        let page = db
            .collection("s")
            .unwrap()
            .items("sensor", "r", &Default::default());
        page.unwrap().unwrap().items.iter().map(|i| i.key).collect()
    };
    assert_eq!(items(&db), (0..41).collect::<Vec<_>>());
    let live_cold = sim.file_bytes("cold-00000001.seg").unwrap();
    let mut lost_chunks = 0;
    for seed in 1..40 {
        let image = sim.crash_image(seed);
        if image.file_bytes("cold-00000001.seg").unwrap() != live_cold {
            lost_chunks += 1;
        }
        let storage: Arc<dyn Storage> = Arc::new(image.clone());
        let recovered = Db::open_with_storage(storage, options.clone()).unwrap();
        recovered.verify().unwrap();
        assert_eq!(
            items(&recovered),
            (0..41).collect::<Vec<_>>(),
            "seed {seed}"
        );
        drop(recovered);
        assert_eq!(image.file_bytes("cold-00000001.seg").unwrap(), live_cold);
    }
    assert!(lost_chunks > 0, "no image lost a chunk write");

    // A batch that writes more than 256 KiB of chunks syncs them before its redo instead.
    let mut noise = 1u64;
    let mut batch = db.batch();
    for i in 41..341 {
        let payload: Vec<u8> = (0..1000)
            .map(|_| {
                noise = noise.wrapping_mul(6364136223846793005).wrapping_add(1);
                (noise >> 56) as u8
            })
            .collect();
        batch.push("s", "sensor", "r", NewItem::new(payload).key(i));
    }
    batch.commit().unwrap();
    assert_eq!(cold_syncs.load(Ordering::Relaxed), syncs + 1);
    assert_eq!(items(&db), (0..341).collect::<Vec<_>>());
}

/// The users (by key) a crash image holds, reopened.
fn users_after_crash(sim: &SimStorage, seed: u64) -> usize {
    let image: Arc<dyn Storage> = Arc::new(sim.crash_image(seed));
    let db = Db::open_with_storage(image, Options::new()).unwrap();
    read_all(&db)
        .unwrap()
        .get("users")
        .map_or(0, |users| users.len())
}

#[test]
fn persist_makes_every_buffered_batch_durable() {
    let (sim, storage) = sim();
    let options = Options::new()
        .durability(Durability::Buffered)
        .background(false);
    let db = open_db(storage, options).unwrap();
    let mut batch = db.batch();
    for i in 0..50 {
        batch.put("users", format!("{i}"), "v");
        batch.commit().unwrap();
    }
    // Before persist: a power loss may take batches with it (some images lose some).
    let lost = (1..20).any(|seed| users_after_crash(&sim, seed) < 50);
    assert!(
        lost,
        "no crash image lost a buffered batch: the check below proves nothing"
    );
    let syncs = db.stats().unwrap().log_syncs;
    db.persist().unwrap();
    assert_eq!(
        db.stats().unwrap().log_syncs,
        syncs + 1,
        "one sync for all 50"
    );
    for seed in 0..20 {
        assert_eq!(users_after_crash(&sim, seed), 50, "seed {seed}");
    }
    // Nothing new to make durable: persist again syncs nothing.
    db.persist().unwrap();
    assert_eq!(db.stats().unwrap().log_syncs, syncs + 1);
}

#[test]
fn a_batch_chooses_its_own_durability() {
    let (sim, storage) = sim();
    let options = Options::new()
        .durability(Durability::Buffered)
        .background(false);
    let db = open_db(storage, options).unwrap();
    let syncs = db.stats().unwrap().log_syncs;
    let mut batch = db.batch();
    batch.put("users", "bulk", "v").commit().unwrap();
    assert_eq!(
        db.stats().unwrap().log_syncs,
        syncs,
        "the database's Buffered default"
    );
    batch
        .durability(Durability::Immediate)
        .put("users", "durable", "v")
        .commit()
        .unwrap();
    assert_eq!(db.stats().unwrap().log_syncs, syncs + 1);
    for seed in 0..20 {
        let image: Arc<dyn Storage> = Arc::new(sim.crash_image(seed));
        let reopened = Db::open_with_storage(image, Options::new()).unwrap();
        let users = reopened.collection("users").unwrap();
        assert!(users.get("durable").unwrap().is_some(), "seed {seed}");
        // The buffered batch before it is in the same synced log.
        assert!(users.get("bulk").unwrap().is_some(), "seed {seed}");
    }
    // And the other way: a Buffered batch in an Immediate database does not sync.
    let (_sim, storage) = skewdb_tests::sim();
    let db = open_db(storage, Options::new().durability(Durability::Immediate)).unwrap();
    let syncs = db.stats().unwrap().log_syncs;
    let mut batch = db.batch();
    batch
        .durability(Durability::Buffered)
        .put("users", "a", "v");
    batch.commit().unwrap();
    assert_eq!(db.stats().unwrap().log_syncs, syncs);
}

#[test]
fn close_returns_the_error_of_its_checkpoint() {
    let (sim, storage) = sim();
    let db = open_db(storage.clone(), small_options(Durability::Buffered)).unwrap();
    let mut batch = db.batch();
    batch.put("users", "a", "1").commit().unwrap();
    sim.fail_at(1, true);
    assert!(matches!(db.close(), Err(Error::Io { .. })));
    sim.clear_faults();
    let db = Db::open_with_storage(storage.clone(), small_options(Durability::Buffered)).unwrap();
    assert!(db.collection("users").unwrap().get("a").unwrap().is_some());
    db.close().unwrap();
    // A clean close leaves nothing to replay.
    let db = Db::open_with_storage(storage, small_options(Durability::Buffered)).unwrap();
    assert_eq!(db.stats().unwrap().replayed_bytes, 0);
}

#[test]
fn a_committed_batch_is_empty_and_can_be_reused() {
    let (_sim, storage) = sim();
    let db = open_db(storage, small_options(Durability::Buffered)).unwrap();
    let mut batch = db.batch();
    batch.put("users", "a", "1");
    assert_eq!(batch.len(), 1);
    batch.commit().unwrap();
    assert!(batch.is_empty());
    // A refused batch applies nothing and is left empty too.
    batch.put("users", "b", "2").put("nosuch", "c", "3");
    assert!(matches!(
        batch.commit(),
        Err(Error::UnknownCollection { .. })
    ));
    assert!(batch.is_empty());
    batch.put("users", "d", "4").commit().unwrap();
    let users = db.collection("users").unwrap();
    assert!(users.get("a").unwrap().is_some());
    assert!(users.get("b").unwrap().is_none());
    assert!(users.get("d").unwrap().is_some());
}

#[test]
fn a_batch_does_not_keep_its_database_open() {
    let (_sim, storage) = sim();
    let db = open_db(storage.clone(), small_options(Durability::Buffered)).unwrap();
    let mut batch = db.batch();
    batch.put("users", "a", "1").commit().unwrap();
    batch.put("users", "b", "2");
    drop(db);
    // The database closed with the last handle; the batch's pending op cannot commit.
    let reopened = Db::open_with_storage(storage, small_options(Durability::Buffered)).unwrap();
    let error = batch.commit().unwrap_err();
    assert!(matches!(error, Error::Closed), "{error}");
    assert_eq!(error.kind(), "closed");
    let users = reopened.collection("users").unwrap();
    assert!(users.get("a").unwrap().is_some());
    assert!(users.get("b").unwrap().is_none());
}

/// A checkpoint holds the writer only between its steps: a commit made while one is held at
/// the sync of its checkpoint file returns before it goes on. The page the commit changed
/// stays changed for the next checkpoint, and after a power loss the commit is replayed on
/// the version the checkpoint wrote.
#[test]
fn commits_go_on_while_a_checkpoint_writes() {
    use std::sync::mpsc;
    let sim = SimStorage::new();
    let (entered, at_sync) = mpsc::channel();
    let (release, released_rx) = mpsc::channel::<()>();
    // Armed once the database is built: its creation writes a checkpoint too.
    let released = Arc::new(std::sync::Mutex::new(None::<mpsc::Receiver<()>>));
    let armed = released.clone();
    let storage = SyncHook::new(sim.clone(), move |name| {
        if name == "checkpoint.tmp"
            && let Some(released) = released.lock().unwrap().take()
        {
            entered.send(()).unwrap();
            released.recv().unwrap();
        }
    });
    let options = small_options(Durability::Immediate).checkpoint_bytes(64 << 20);
    let db = open_db(storage, options.clone()).unwrap();
    for i in 0..200 {
        let mut batch = db.batch();
        batch.put("users", format!("u{i:03}"), vec![b'x'; 100]);
        batch.commit().unwrap();
    }
    let dirty_before = db.stats().unwrap().dirty_pages;
    assert!(dirty_before > 1, "{dirty_before} pages changed");
    *armed.lock().unwrap() = Some(released_rx);
    let checkpointing = {
        let db = db.clone();
        std::thread::spawn(move || db.checkpoint())
    };
    at_sync
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the checkpoint reaches the sync of its file");
    // The checkpoint is held: this commit must not wait for it.
    let (done, committed) = mpsc::channel();
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            let mut batch = db.batch();
            batch.put("users", "during", "written beside the checkpoint");
            done.send(batch.commit()).unwrap();
        })
    };
    let result = committed.recv_timeout(std::time::Duration::from_secs(30));
    assert!(
        matches!(result, Ok(Ok(()))),
        "the commit waited for the checkpoint: {result:?}"
    );
    release.send(()).unwrap();
    writer.join().unwrap();
    checkpointing.join().unwrap().unwrap();
    let stats = db.stats().unwrap();
    assert!(
        (1..dirty_before).contains(&stats.dirty_pages),
        "{} pages changed after the checkpoint, {dirty_before} before",
        stats.dirty_pages
    );
    let expected = read_all(&db).unwrap();
    assert_eq!(
        expected["users"][&b"during"[..]].body,
        b"written beside the checkpoint".to_vec()
    );
    let image: Arc<dyn Storage> = Arc::new(sim.crash_image(5));
    let reopened = Db::open_with_storage(image, options).unwrap();
    assert!(reopened.stats().unwrap().replayed_bytes > 0);
    assert_eq!(read_all(&reopened).unwrap(), expected);
    reopened.verify().unwrap();
    drop(db);
}
