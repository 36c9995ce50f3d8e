//! `Db::backup` and `Db::restore`: the restored database holds the backed-up state, every
//! layout placing items as it did; a backup taken while commits run holds one prefix of
//! them; a damaged backup is refused and leaves nothing behind.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use skewdb::testing::{FsStorage, SimStorage, Storage};
use skewdb::{Db, Durability, Error, Options};
use skewdb_tests::{
    Model, Step, commit, inline_views, open_db, prefix_states, read_all, small_options, workload,
};

fn open(dir: &Path) -> Db {
    let storage = Arc::new(FsStorage::new(dir).unwrap());
    open_db(storage, small_options(Durability::Buffered)).unwrap()
}

/// A database under `dir` after `batches` batches of the workload from `seed`, its backup
/// file and that file's bytes.
fn backed_up(dir: &Path, seed: u64, batches: usize) -> (Db, PathBuf, Vec<u8>) {
    let db = open(&dir.join("db"));
    for steps in &workload(seed, batches) {
        let _ = commit(&db, steps);
    }
    let file = dir.join("db.backup");
    db.backup(&file).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    (db, file, bytes)
}

#[test]
fn a_restored_backup_holds_the_same_state_with_items_placed_alike() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    // With removals: inline slots left empty, windows refilled from history.
    let batches = workload(7, 400);
    assert!(
        batches
            .iter()
            .flatten()
            .any(|s| matches!(s, Step::Remove(..)))
    );
    for steps in &batches {
        // A batch over a limit is refused whole; the model knows which by reading back.
        let _ = commit(&db, steps);
    }
    let before = read_all(&db).unwrap();
    assert!(before.values().map(|c| c.len()).sum::<usize>() > 10);
    let file = dir.path().join("db.backup");
    let report = db.backup(&file).unwrap();
    assert_eq!(report.bytes, std::fs::metadata(&file).unwrap().len());
    assert_eq!(report.collections, 2);
    assert!(
        report.records > report.parents && report.chunks > 10,
        "{report:?}"
    );
    let restored = Db::restore(&file, dir.path().join("restored"), Options::new()).unwrap();
    assert_eq!(read_all(&restored).unwrap(), before);
    let (got, want) = (inline_views(&restored, ""), inline_views(&db, ""));
    assert_eq!(got.len(), want.len());
    for (got, want) in got.iter().zip(&want) {
        assert_eq!(got, want);
    }
    for name in db.collection_names() {
        assert_eq!(
            restored.collection(&name).unwrap().spec(),
            db.collection(&name).unwrap().spec()
        );
    }
    // The restored database is an ordinary one: it verifies, takes writes, and reopens.
    restored.verify().unwrap();
    let mut batch = restored.batch();
    batch.put("users", "new", "body");
    batch.commit().unwrap();
    drop(restored);
    let reopened = Db::open(dir.path().join("restored"), Options::new()).unwrap();
    let users = reopened.collection("users").unwrap();
    assert_eq!(users.get("new").unwrap().unwrap().body(), b"body");
}

#[test]
fn a_backup_taken_while_commits_run_holds_one_prefix_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let batches = workload(11, 600);
    // Every batch of this workload commits (checked below), so the states after each prefix
    // are the model's.
    let states: Vec<Model> = prefix_states(&batches);
    let start = db.snapshot().commits();
    let writer = {
        let (db, batches) = (db.clone(), batches.clone());
        std::thread::spawn(move || {
            for steps in &batches {
                commit(&db, steps).unwrap();
            }
        })
    };
    let mut reports = Vec::new();
    for round in 0..4 {
        let file = dir.path().join(format!("backup-{round}"));
        reports.push((db.backup(&file).unwrap(), file));
    }
    writer.join().unwrap();
    for (round, (report, file)) in reports.iter().enumerate() {
        let at = (report.commits - start) as usize;
        let restored = Db::restore(
            file,
            dir.path().join(format!("restored-{round}")),
            Options::new(),
        )
        .unwrap();
        assert_eq!(
            read_all(&restored).unwrap(),
            states[at],
            "backup {round} at {at}"
        );
    }
}

#[test]
fn a_damaged_backup_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (db, file, good) = backed_up(dir.path(), 3, 60);
    let target = dir.path().join("target");
    let restore = |bytes: &[u8]| {
        let damaged = dir.path().join("damaged");
        std::fs::write(&damaged, bytes).unwrap();
        let result = Db::restore(&damaged, &target, Options::new());
        assert!(!target.exists(), "a refused restore leaves no directory");
        result.err().expect("refused")
    };
    // A flipped byte anywhere after the header, a file cut short, another file.
    for at in [20, good.len() / 2, good.len() - 3] {
        let mut bytes = good.clone();
        bytes[at] ^= 0x40;
        let error = restore(&bytes);
        assert!(
            matches!(error, Error::Corruption { .. }),
            "byte {at}: {error}"
        );
    }
    for len in [0, 5, 12, good.len() / 3, good.len() - 1] {
        let error = restore(&good[..len]);
        assert!(
            matches!(error, Error::Corruption { .. }),
            "cut at {len}: {error}"
        );
    }
    let mut other = good.clone();
    other[..8].copy_from_slice(b"NOTABACK");
    assert!(matches!(restore(&other), Error::Corruption { .. }));
    let mut newer = good.clone();
    newer[8] = 9;
    assert!(matches!(
        restore(&newer),
        Error::UnsupportedVersion { found: 9, .. }
    ));
    // The whole file restores; a second restore into the same directory is refused.
    Db::restore(&file, &target, Options::new()).unwrap();
    let again = Db::restore(&file, &target, Options::new()).err().unwrap();
    assert_eq!(again.kind(), "io", "{again}");
    // A backup replaces an older file only when whole: the path holds a complete one.
    db.backup(&file).unwrap();
    assert!(Db::restore(&file, dir.path().join("third"), Options::new()).is_ok());
}

/// A frame as backups write them: kind, length, payload, CRC32 of the three.
fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

#[test]
fn a_backup_whose_frames_check_but_break_a_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, _file, good) = backed_up(dir.path(), 3, 20);
    // The header and the collection frames (kind 1), then the first record's key.
    let (mut at, mut kept) = (12, good[..12].to_vec());
    let first_key = loop {
        let len = u32::from_le_bytes(good[at + 1..at + 5].try_into().unwrap()) as usize;
        let payload = &good[at + 5..at + 5 + len];
        if good[at] != 1 {
            let key_len = u16::from_le_bytes(payload[1..3].try_into().unwrap()) as usize;
            break payload[3..3 + key_len].to_vec();
        }
        kept.extend_from_slice(&good[at..at + 9 + len]);
        at += 9 + len;
    };
    let crafted = |value_len: usize, flags: u8| {
        let mut payload = vec![flags];
        payload.extend_from_slice(&(first_key.len() as u16).to_le_bytes());
        payload.extend_from_slice(&first_key);
        payload.extend_from_slice(&(value_len as u32).to_le_bytes());
        payload.resize(payload.len() + value_len, 7);
        let mut bytes = kept.clone();
        bytes.extend(frame(2, &payload));
        bytes
    };
    let target = dir.path().join("target");
    for (bytes, what) in [
        (crafted(16 * 1024 * 1024 + 1, 0), "a record over 16 MiB"),
        (crafted(10, 2), "an unknown flag"),
        (crafted(10, 1), "a chunk flag with no chunk"),
    ] {
        let damaged = dir.path().join("crafted");
        std::fs::write(&damaged, &bytes).unwrap();
        let error = Db::restore(&damaged, &target, Options::new())
            .err()
            .expect(what);
        assert!(matches!(error, Error::Corruption { .. }), "{what}: {error}");
        assert!(!target.exists());
    }
    // The decoders' fuzz entry loads the same bytes without panicking.
    let mut fuzz_input = vec![7u8];
    fuzz_input.extend_from_slice(&crafted(16 * 1024 * 1024 + 1, 0));
    skewdb::testing::decoders(&fuzz_input);
    let mut fuzz_input = vec![7u8];
    fuzz_input.extend_from_slice(&good);
    skewdb::testing::decoders(&fuzz_input);
}

/// A backup written through the simulated storage, failed at each of its operations in
/// turn and then cut by a power loss: every crash image holds under the backup's name
/// either the older backup it replaces or the new one, whole, never a part of one; once the
/// backup returned, the new one in every image.
#[test]
fn a_backup_cut_at_any_operation_leaves_the_old_one_or_the_new_one_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    let batches = workload(11, 120);
    for steps in &batches[..60] {
        let _ = commit(&db, steps);
    }
    let older = db.snapshot();
    let older_state = read_all(&db).unwrap();
    for steps in &batches[60..] {
        let _ = commit(&db, steps);
    }
    let newer = db.snapshot();
    let newer_state = read_all(&db).unwrap();
    assert_ne!(older_state, newer_state);

    let restored = |image: &SimStorage| {
        let target: Arc<dyn Storage> = Arc::new(SimStorage::new());
        let options = small_options(Durability::Buffered);
        let db = Db::restore_from_storage(image, "db.backup", target, options).unwrap();
        read_all(&db).unwrap()
    };
    // The operations a whole backup takes.
    let clean = SimStorage::new();
    older.backup_to_storage(&clean, "db.backup").unwrap();
    let start = clean.operations();
    newer.backup_to_storage(&clean, "db.backup").unwrap();
    let operations = clean.operations() - start;
    assert!(
        operations >= 5,
        "create, write, sync, rename, sync the directory"
    );

    for n in 1..=operations + 1 {
        let sim = SimStorage::new();
        older.backup_to_storage(&sim, "db.backup").unwrap();
        sim.fail_at(n, true);
        let result = newer.backup_to_storage(&sim, "db.backup");
        assert_eq!(result.is_ok(), n > operations, "failed at operation {n}");
        sim.clear_faults();
        for seed in 0..4 {
            let image = sim.crash_image(seed);
            let state = restored(&image);
            if result.is_ok() {
                assert_eq!(state, newer_state, "returned, then cut (seed {seed})");
            } else {
                assert!(
                    state == older_state || state == newer_state,
                    "failed at operation {n}, cut with seed {seed}: neither backup"
                );
            }
        }
    }
}

/// A backup file read through the storage and failing part way is an error of the
/// restore, never a database that holds half of it.
#[test]
fn a_restore_whose_reads_fail_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"));
    for steps in &workload(12, 40) {
        let _ = commit(&db, steps);
    }
    let source = SimStorage::new();
    db.snapshot().backup_to_storage(&source, "b").unwrap();
    let options = small_options(Durability::Buffered);
    let whole =
        Db::restore_from_storage(&source, "b", Arc::new(SimStorage::new()), options.clone());
    assert_eq!(read_all(&whole.unwrap()).unwrap(), read_all(&db).unwrap());
    source.fail_at(2, true);
    let failed = Db::restore_from_storage(&source, "b", Arc::new(SimStorage::new()), options);
    assert!(failed.is_err());
}
