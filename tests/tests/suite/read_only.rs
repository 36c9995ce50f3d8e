//! `Db::open_read_only`: a fixed view beside a writer, nothing written, every write refused.

use std::collections::BTreeMap;
use std::sync::Arc;

use skewdb::testing::{FsStorage, SimStorage, Storage};
use skewdb::{CollectionSpec, Db, Durability, Error, Options};
use skewdb_tests::{
    Model, commit, commit_maintained, open_db, prefix_states, read_all, small_options, workload,
};

/// Every file's name and bytes.
fn files_of(storage: &SimStorage) -> BTreeMap<String, Vec<u8>> {
    let mut names = storage.list().unwrap();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let bytes = storage.file_bytes(&name).unwrap();
            (name, bytes)
        })
        .collect()
}

/// Every file's name and bytes, in a real directory.
fn directory_of(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(entry.path()).unwrap())
        })
        .collect()
}

/// Every write a handle offers is refused as `read_only`.
fn refuses_every_write(db: &Db) {
    let read_only = |result: Result<(), Error>, what: &str| match result {
        Err(error) => assert_eq!(error.kind(), "read_only", "{what}: {error}"),
        Ok(()) => panic!("{what} was accepted by a read-only database"),
    };
    let mut batch = db.batch();
    batch.put("users", "someone", "x");
    read_only(batch.commit(), "a batch");
    read_only(
        db.create_collection(CollectionSpec::new("new")).map(|_| ()),
        "create_collection",
    );
    let mut transaction = db.transaction();
    transaction.put("users", "someone", "x");
    read_only(transaction.commit(), "a transaction");
    read_only(db.checkpoint(), "a checkpoint");
    read_only(db.compact().map(|_| ()), "a compaction");
    read_only(db.persist(), "persist");
}

/// Crash images of a workload with checkpoints and compactions: each opened read-only
/// shows one state a recovery could show, is left byte for byte as it was, and then
/// recovers (as a writer) to the state the read-only open showed.
#[test]
fn a_power_loss_image_opened_read_only_is_not_modified() {
    let steps = workload(11, 60);
    let states = prefix_states(&steps);
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let options = small_options(Durability::Immediate);
    let db = open_db(storage, options.clone()).unwrap();
    sim.capture_syncs(true);
    commit_maintained(&db, &steps).unwrap();
    drop(db);
    let snapshots = sim.take_captured();
    let mut opened = 0;
    for (at, snapshot) in snapshots.iter().enumerate().step_by(3) {
        for seed in [1, 2] {
            let image = snapshot.crash_image(seed * 104_729 + at as u64);
            let before = files_of(&image);
            let shown = {
                let storage: Arc<dyn Storage> = Arc::new(image.clone());
                let reader = Db::open_read_only_with_storage(storage, options.clone())
                    .unwrap_or_else(|e| panic!("snapshot {at} seed {seed}: {e}"));
                let shown = read_all(&reader).unwrap();
                reader.verify().unwrap();
                if at % 9 == 0 {
                    refuses_every_write(&reader);
                }
                shown
            };
            assert_eq!(files_of(&image), before, "snapshot {at} seed {seed}");
            assert!(states.contains(&shown), "snapshot {at} seed {seed}");
            let storage: Arc<dyn Storage> = Arc::new(image.clone());
            let writer = Db::open_with_storage(storage, options.clone()).unwrap();
            assert_eq!(
                read_all(&writer).unwrap(),
                shown,
                "snapshot {at} seed {seed}"
            );
            opened += 1;
        }
    }
    assert!(opened >= 20, "{opened} images");
}

/// A reader opened beside a writer keeps the state of its open while the writer commits,
/// checkpoints and compacts (which removes the files the reader holds); several read at
/// once; a reader opened later sees the later state.
#[test]
fn a_reader_beside_a_writer_keeps_its_view() {
    let dir = tempfile::tempdir().unwrap();
    let steps = workload(12, 80);
    let options = small_options(Durability::Immediate);
    let writer = open_db(Arc::new(FsStorage::new(dir.path()).unwrap()), options).unwrap();
    let mut model = Model::new();
    let mut readers = Vec::new();
    let mut first_files = BTreeMap::new();
    for (index, batch) in steps.iter().enumerate() {
        commit(&writer, batch).unwrap();
        skewdb_tests::apply(&mut model, batch);
        if index % 20 == 9 {
            if readers.is_empty() {
                first_files = directory_of(dir.path());
            }
            let reader = Db::open_read_only(dir.path(), Options::new()).unwrap();
            readers.push((reader, model.clone()));
        }
        if index % 20 == 19 {
            writer.compact().unwrap();
        }
    }
    writer.checkpoint().unwrap();
    // The writer has removed files the first reader pinned: it reads from them still.
    let now = directory_of(dir.path());
    assert!(
        first_files.keys().any(|name| !now.contains_key(name)),
        "{first_files:?} {now:?}",
        first_files = first_files.keys().collect::<Vec<_>>(),
        now = now.keys().collect::<Vec<_>>()
    );
    assert!(readers.len() >= 4);
    for (at, (reader, seen)) in readers.iter().enumerate() {
        assert_eq!(&read_all(reader).unwrap(), seen, "reader {at}");
        reader.verify().unwrap();
    }
    refuses_every_write(&readers[0].0);
    let latest = Db::open_read_only(dir.path(), Options::new()).unwrap();
    assert_eq!(read_all(&latest).unwrap(), model);
}

/// A read-only open never writes, creates, renames or removes a file, even of a database
/// a writer left uncheckpointed; it makes no database where there is none.
#[test]
fn a_read_only_open_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let steps = workload(13, 30);
    {
        let storage = Arc::new(FsStorage::new(dir.path()).unwrap());
        let writer = open_db(storage, small_options(Durability::Immediate)).unwrap();
        for batch in &steps {
            commit(&writer, batch).unwrap();
        }
        // Left as a crash leaves it: no closing checkpoint (and no maintenance thread,
        // which `small_options` does not start).
        std::mem::forget(writer);
    }
    let before = directory_of(dir.path());
    let reader = Db::open_read_only(dir.path(), Options::new()).unwrap();
    let shown = read_all(&reader).unwrap();
    // Closed, not only dropped: a read-only handle's close has nothing to write.
    reader.close().unwrap();
    assert_eq!(directory_of(dir.path()), before);
    assert_eq!(shown, prefix_states(&steps).pop().unwrap());

    let missing = dir.path().join("absent");
    let error = Db::open_read_only(&missing, Options::new()).err().unwrap();
    assert_eq!(error.kind(), "no_database", "{error}");
    assert!(!missing.exists());
    let empty = tempfile::tempdir().unwrap();
    let error = Db::open_read_only(empty.path(), Options::new())
        .err()
        .unwrap();
    assert_eq!(error.kind(), "no_database", "{error}");
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

/// Readers opening over and over while a writer commits, checkpoints and compacts with
/// small segments (so that files come and go under each open): every reader opens, and
/// shows the state after a prefix of the batches, at least those acknowledged before it
/// opened.
#[test]
fn readers_opening_during_writes_each_see_a_prefix() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let steps = workload(14, 600);
    let states = prefix_states(&steps);
    let options = small_options(Durability::Immediate).reclaim(true);
    let writer = open_db(Arc::new(FsStorage::new(dir.path()).unwrap()), options).unwrap();
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (dir, acknowledged, done) =
            (dir.path().to_path_buf(), acknowledged.clone(), done.clone());
        std::thread::spawn(move || {
            let mut opened = 0;
            while !done.load(Ordering::Acquire) || opened < 5 {
                let before = acknowledged.load(Ordering::Acquire);
                let db = Db::open_read_only(&dir, Options::new()).unwrap();
                let shown = read_all(&db).unwrap();
                let after = acknowledged.load(Ordering::Acquire);
                let at = states[before..=(after + 1).min(states.len() - 1)]
                    .iter()
                    .position(|state| *state == shown);
                assert!(
                    at.is_some(),
                    "open {opened}: not a state of batches {before}..={}",
                    after + 1
                );
                opened += 1;
            }
            opened
        })
    };
    for (index, batch) in steps.iter().enumerate() {
        commit(&writer, batch).unwrap();
        acknowledged.store(index + 1, Ordering::Release);
        if index % 40 == 39 {
            writer.compact().unwrap();
        }
    }
    done.store(true, Ordering::Release);
    let opened = reader.join().unwrap();
    println!("{opened} read-only opens during the writes");
    assert!(opened >= 5, "{opened} opens");
}
