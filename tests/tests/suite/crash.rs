//! Crash matrix and I/O-error sweep through the simulated storage.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use skewdb::testing::{SimStorage, Storage};
use skewdb::{Db, Durability};
use skewdb_tests::{
    Model, commit, normalized, open_db, possible_states, prefix_states, read_all, small_options,
    workload,
};

/// Crash images per sync point (each loses a different choice of unsynced writes).
const CRASH_SEEDS: u64 = 4;

/// How many times longer the workloads run: 1 in CI; the long mode sets
/// `SKEWDB_CRASH_SCALE` (RELIABILITY.md):
/// `SKEWDB_CRASH_SCALE=5 cargo test --release -p skewdb-tests --test suite crash:: -- --nocapture`
fn scale() -> usize {
    std::env::var("SKEWDB_CRASH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// Opens a crash image and returns what it holds; recovery must never fail on a crash image.
fn recover(image: &SimStorage, durability: Durability) -> Model {
    let storage: Arc<dyn Storage> = Arc::new(image.clone());
    let db = Db::open_with_storage(storage, small_options(durability))
        .unwrap_or_else(|e| panic!("recovery failed on a crash image: {e}"));
    let state = read_all(&db).unwrap();
    db.verify().unwrap();
    state
}

/// A recovered crash image holds no space it cannot give back: once every parent is deleted
/// and the database compacted, the files are back to a small constant size.
fn leaks_nothing(image: &SimStorage, durability: Durability) {
    let storage: Arc<dyn Storage> = Arc::new(image.crash_image(0));
    let db = Db::open_with_storage(storage, small_options(durability)).unwrap();
    let mut batch = db.batch();
    for name in skewdb_tests::COLLECTIONS {
        for doc in db.collection(name).unwrap().scan(..).unwrap() {
            batch.delete(name, doc.unwrap().key());
        }
    }
    batch.commit().unwrap();
    db.compact().unwrap();
    let space = db.space().unwrap();
    assert_eq!(space.cold.live_bytes, 0, "{space:?}");
    assert!(space.cold.file_bytes <= 32, "{space:?}");
    assert!(space.hot.file_bytes <= 64 * 1024, "{space:?}");
    db.verify().unwrap();
}

/// Recovers `image`, and also every image a crash during that recovery could leave; all
/// must show the same state.
fn recover_twice(image: &SimStorage, durability: Durability) -> Model {
    let scratch = image.crash_image(0);
    scratch.capture_syncs(true);
    let first = {
        let storage: Arc<dyn Storage> = Arc::new(scratch.clone());
        let db = Db::open_with_storage(storage, small_options(durability)).unwrap();
        read_all(&db).unwrap()
    };
    for snapshot in scratch.take_captured() {
        for seed in 0..2 {
            assert_eq!(
                recover(&snapshot.crash_image(seed), durability),
                first,
                "crash during recovery changed the state"
            );
        }
    }
    first
}

fn crash_matrix(durability: Durability, batches: usize, seed: u64) -> usize {
    crash_matrix_of(durability, true, &workload(seed, batches), 40).0
}

/// Commits `steps`, with a checkpoint after every `every` batches and a compaction instead
/// every other time, capturing every sync; then checks each crash image of each capture.
/// `reclaim` sets automatic reclamation (cleaning and cold compaction after checkpoints).
fn crash_matrix_of(
    durability: Durability,
    reclaim: bool,
    steps: &[Vec<skewdb_tests::Step>],
    every: usize,
) -> (usize, (u64, u64)) {
    let options = small_options(durability).reclaim(reclaim);
    let states = prefix_states(steps);
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let db = open_db(storage, options).unwrap();
    sim.capture_syncs(true);
    // captured_at[i]: snapshots taken before batch i's commit returned.
    let mut captured_at = Vec::new();
    let mut durable_at = Vec::new();
    // Chunks moved and merged by the compactions.
    let mut compacted = (0, 0);
    for (index, batch) in steps.iter().enumerate() {
        commit(&db, batch).unwrap();
        // Every other time, a compaction (it ends with checkpoints) instead of a checkpoint,
        // so crashes land in cold compaction and log cleaning too.
        if index % (2 * every) == 2 * every - 1 {
            let report = db.compact().unwrap();
            compacted.0 += report.chunks_moved;
            compacted.1 += report.chunks_merged;
        } else if index % every == every - 1 {
            db.checkpoint().unwrap();
        }
        captured_at.push(sim.captured_count());
        durable_at.push(
            if durability == Durability::Immediate || index % every == every - 1 {
                index + 1
            } else {
                0
            },
        );
    }
    drop(db);
    let durable = |acked: usize| durable_at[..acked].iter().copied().max().unwrap_or(0);
    let images = check_images(&sim, &captured_at, durable, &states, durability);
    (images, compacted)
}

/// Recovers crash images of every sync `sim` captured; each must hold the state after some
/// batch from the last durable one (`durable` of the batches acknowledged) to the one in
/// flight. `captured_at[i]`: the syncs captured before batch i's commit returned. Returns
/// the images recovered.
fn check_images(
    sim: &SimStorage,
    captured_at: &[usize],
    durable: impl Fn(usize) -> usize,
    states: &[Model],
    durability: Durability,
) -> usize {
    let mut images = 0;
    for (snapshot_index, snapshot) in sim.take_captured().iter().enumerate() {
        // Batches acknowledged before this snapshot, and batches issued by then.
        let acked = captured_at
            .iter()
            .take_while(|c| **c <= snapshot_index)
            .count();
        let durable = durable(acked);
        let issued = (acked + 1).min(captured_at.len());
        for seed in 0..CRASH_SEEDS {
            let image = snapshot.crash_image(seed * 7919 + snapshot_index as u64);
            let state = recover_twice(&image, durability);
            assert!(
                (durable..=issued).any(|n| states[n] == state),
                "snapshot {snapshot_index} seed {seed}: state is not one of batches {durable}..={issued}"
            );
            if seed == 0 && snapshot_index % 8 == 0 {
                leaks_nothing(&image, durability);
            }
            images += 1;
        }
    }
    images
}

#[test]
fn crash_matrix_immediate() {
    let images = crash_matrix(Durability::Immediate, 200 * scale(), 1);
    println!("immediate: {images} crash images recovered, each as one allowed state");
    assert!(images >= 200 * CRASH_SEEDS as usize, "{images} images");
}

/// Cold compaction under crashes: arrays long enough to seal many small chunks, parents
/// deleted so that cold segments go sparse, compactions that move and merge chunks
/// (automatic reclamation off, so that the explicit compactions find the work; the other
/// matrices run with it on).
#[test]
fn crash_matrix_cold_compaction() {
    let workload = skewdb_tests::compaction_workload();
    let (images, compacted) = crash_matrix_of(Durability::Immediate, false, &workload, 30);
    println!("cold compaction: {images} crash images; chunks moved, merged: {compacted:?}");
    assert!(
        compacted.0 >= 10 && compacted.1 >= 10,
        "moved, merged: {compacted:?}"
    );
    assert!(images > 0);
}

/// Batches larger than what a batch keeps in memory: each queues over 4 MiB of payloads that
/// do not compress (so its operations go to a scratch file past the 1 MiB share of the small
/// options, and its commit group writes cold chunks to their segment as it goes), removes in
/// the same batch an item of a chunk it sealed (read back from the segment), and a batch
/// refused at its end (after it wrote chunks) comes between them. Every crash image holds
/// the state after some batch from the last durable one to the one in flight.
#[test]
fn crash_matrix_batches_larger_than_their_memory_share() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(69);
    let mut steps = Vec::new();
    for batch in 0..3i64 {
        let mut ops = Vec::new();
        for n in 0..1_800i64 {
            let payload: Vec<u8> = (0..2_600).map(|_| rng.random()).collect();
            let key = format!("p{}", n % 3).into_bytes();
            let item = (batch * 10_000 + n, Some(n as f64), payload);
            let (collection, field) = match n % 2 {
                0 => ("products", "reviews"),
                _ => ("users", "followers"),
            };
            ops.push(skewdb_tests::Step::Push(collection, key, field, item));
        }
        // The batch's fourth item went to a sealed chunk long before its end.
        ops.push(skewdb_tests::Step::Remove(
            "products",
            b"p0".to_vec(),
            "reviews",
            batch * 10_000 + 6,
        ));
        steps.push(ops);
    }
    let states = prefix_states(&steps);
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    // Fewer checkpoints and segment rollovers than the other matrices: the syncs captured
    // are mostly the commits' own (each image holds tens of MiB).
    let options = small_options(Durability::Immediate)
        .checkpoint_bytes(256 * 1024)
        .segment_bytes(16 << 20);
    let db = open_db(storage, options).unwrap();
    sim.capture_syncs(true);
    let mut captured_at = Vec::new();
    for (index, batch) in steps.iter().enumerate() {
        commit(&db, batch).unwrap();
        if index == 0 {
            // Refused after its chunks were written: nothing of it is applied, and the next
            // batch's chunks go where its went.
            let mut refused = db.batch();
            for n in 0..1_800u32 {
                let payload: Vec<u8> = (0..2_600).map(|_| rng.random()).collect();
                refused.push("users", b"p9", "followers", skewdb::NewItem::new(payload));
                refused.put("users", n.to_be_bytes(), b"x");
            }
            refused.put("no such collection", b"k", b"v");
            assert!(refused.commit().is_err());
        }
        captured_at.push(sim.captured_count());
    }
    assert_eq!(normalized(&read_all(&db).unwrap()), states[steps.len()]);
    db.verify().unwrap();
    drop(db);
    let durable = |acked: usize| acked;
    let images = check_images(&sim, &captured_at, durable, &states, Durability::Immediate);
    println!("batches larger than their memory share: {images} crash images");
    assert!(images > 0);
}

#[test]
fn crash_matrix_buffered() {
    let images = crash_matrix(Durability::Buffered, 120 * scale(), 2);
    println!("buffered: {images} crash images recovered, each as one allowed state");
    assert!(images > 0);
}

fn sweep(persistent: bool) -> (u64, u64) {
    let steps = workload(3, 40);
    let durability = Durability::Immediate;
    // Count the operations of a clean run.
    let total = {
        let sim = SimStorage::new();
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let db = open_db(storage, small_options(durability)).unwrap();
        skewdb_tests::commit_maintained(&db, &steps).unwrap();
        drop(db);
        sim.operations()
    };
    let mut errors = 0;
    for n in 1..=total {
        let sim = SimStorage::new();
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        sim.fail_at(n, persistent);
        let mut candidates = vec![Model::new()];
        if let Ok(db) = open_db(storage.clone(), small_options(durability)) {
            for (index, batch) in steps.iter().enumerate() {
                let result = commit(&db, batch);
                errors += u64::from(result.is_err());
                possible_states(&mut candidates, batch, &result);
                if index % 20 == 19 {
                    errors += u64::from(db.compact().is_err());
                } else if index % 10 == 9 {
                    errors += u64::from(db.checkpoint().is_err());
                }
                // Reads never panic, whatever failed.
                let _ = db.collection("users").and_then(|c| c.get("key0001"));
            }
        } else {
            errors += 1;
        }
        let candidates: Vec<Model> = candidates.iter().map(normalized).collect();
        sim.clear_faults();
        // After a process crash (every write the OS took survives) and after power losses.
        for seed in [0, n, n + 1] {
            let state = recover(&sim.crash_image(seed), durability);
            assert!(
                candidates.contains(&state),
                "fault at operation {n} (persistent {persistent}), image {seed}: unexpected state"
            );
        }
    }
    (total, errors)
}

#[test]
fn io_error_sweep_once() {
    let (total, errors) = sweep(false);
    println!(
        "I/O error once at each of {total} operations: {errors} errors reported, every state allowed"
    );
    assert!(
        total > 100 && errors > 0,
        "{total} operations, {errors} errors"
    );
}

#[test]
fn io_error_sweep_persistent() {
    let (total, errors) = sweep(true);
    println!(
        "I/O error from each of {total} operations on: {errors} errors reported, every state allowed"
    );
    assert!(errors >= total / 2, "{total} operations, {errors} errors");
}

/// Checkpoints written beside commits (a thread checkpointing without pause while another
/// commits): a power loss at any sync of either thread recovers a state between the
/// batches acknowledged and those issued, whichever of the checkpoint's steps it cut.
#[test]
fn crash_matrix_checkpoints_beside_commits() {
    let durability = Durability::Immediate;
    let steps = workload(17, 120 * scale());
    let states = prefix_states(&steps);
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let db = open_db(storage, small_options(durability)).unwrap();
    sim.capture_syncs(true);
    let done = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let checkpointer = {
        let (db, done, count) = (db.clone(), done.clone(), count.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                db.checkpoint().unwrap();
                count.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // captured_at[i]: snapshots taken before batch i's commit returned.
    let mut captured_at = Vec::new();
    for (at, batch) in steps.iter().enumerate() {
        commit(&db, batch).unwrap();
        captured_at.push(sim.captured_count());
        // However busy the machine, the checkpointer finishes one more checkpoint every
        // ten batches (it runs freely beside them; only the committer waits for it).
        if at % 10 == 9 {
            let seen = count.load(Ordering::Relaxed);
            while count.load(Ordering::Relaxed) == seen {
                std::thread::yield_now();
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    checkpointer.join().unwrap();
    let checkpoints = count.load(Ordering::Relaxed);
    drop(db);
    let images = check_images(&sim, &captured_at, |acked| acked, &states, durability);
    println!("beside commits: {checkpoints} checkpoints, {images} crash images recovered");
    assert!(checkpoints >= 10, "{checkpoints} checkpoints");
    assert!(images >= 200, "{images} images");
}
