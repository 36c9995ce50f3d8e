//! Dropping a large collection: how long `drop_collection` takes to return, how long the
//! maintenance thread then takes to delete the dropped records in its steps, what commits of
//! another collection wait meanwhile, and the space a compaction gives back.
//!
//! The collection holds parents with a body and a `Subset { keep: 5 }` array of reviews of
//! 200-byte payloads, 20 per parent, written until its files hold `--mb` MiB (default 1024).
//! A writer then commits batches of 10 small pushes to another collection, without pause,
//! from just before the drop until the dropped records are all gone; each commit's latency is
//! recorded, and the same writer's latency over as many commits before the drop is the
//! baseline.
//!
//! Run: `cargo bench -p skewdb-benches --bench schema` (`-- --mb 256` for a quicker run).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use skewdb::{CollectionSpec, Db, Durability, Layout, NewItem, Options};
use skewdb_benches::{Latency, latency};

const REVIEWS: u64 = 20;
const PAYLOAD: usize = 200;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn files(db: &Db) -> u64 {
    let space = db.space().expect("space");
    space.hot.file_bytes + space.cold.file_bytes
}

/// Commits batches of 10 pushes to `live` until `stop`; returns each commit's latency.
fn write_until(db: &Db, stop: &AtomicBool, start: u64) -> Vec<Duration> {
    let mut latencies = Vec::new();
    let mut n = start;
    while !stop.load(Ordering::Relaxed) {
        let mut batch = db.batch();
        for _ in 0..10 {
            n += 1;
            batch.push(
                "live",
                format!("l{}", n % 1000),
                "log",
                NewItem::new("entry"),
            );
        }
        let started = Instant::now();
        batch.commit().expect("commit");
        latencies.push(started.elapsed());
    }
    latencies
}

fn show(what: &str, l: &Latency, count: usize) {
    println!(
        "{what:<28} {count:>8} commits  p50 {:>8.1} us  p99 {:>8.1} us  max {:>9.1} us",
        l.p50, l.p99, l.max
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb: u64 = args
        .iter()
        .position(|a| a == "--mb")
        .and_then(|at| args.get(at + 1))
        .map_or(1024, |v| v.parse().expect("--mb takes a number"));
    let dir = tempfile::tempdir().expect("temporary directory");
    let options = Options::new().durability(Durability::Buffered);
    let db = Arc::new(Db::open(dir.path(), options).expect("open"));
    let big = CollectionSpec::new("big").array("reviews", Layout::Subset { keep: 5 });
    db.create_collection(big).expect("create");
    db.create_collection(CollectionSpec::new("live").array("log", Layout::Reference))
        .expect("create");
    let started = Instant::now();
    let mut parents = 0u64;
    let payload = "r".repeat(PAYLOAD);
    while files(&db) < mb << 20 {
        let mut batch = db.batch();
        for _ in 0..1_000 {
            let key = format!("p{parents:010}");
            batch.put("big", &key, "a product page body");
            for review in 0..REVIEWS {
                let item = NewItem::new(payload.as_bytes())
                    .key(review as i64)
                    .value(4.0);
                batch.push("big", &key, "reviews", item);
            }
            parents += 1;
        }
        batch.commit().expect("load");
    }
    db.checkpoint().expect("checkpoint");
    println!(
        "loaded {parents} parents, {} reviews, {:.0} MiB of files in {:.1} s",
        parents * REVIEWS,
        mib(files(&db)),
        started.elapsed().as_secs_f64()
    );

    // The writer's baseline: as long as the reclaim will take is unknown, so 3 seconds.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || write_until(&db, &stop, 0))
    };
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let before = writer.join().expect("writer");

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || write_until(&db, &stop, 1 << 40))
    };
    std::thread::sleep(Duration::from_millis(100));
    let checkpoints = db.stats().expect("stats").checkpoints;
    let dropping = Instant::now();
    db.drop_collection("big").expect("drop");
    let returned = dropping.elapsed();
    while db.stats().expect("stats").retired > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let reclaimed = dropping.elapsed();
    stop.store(true, Ordering::Relaxed);
    let during = writer.join().expect("writer");
    println!(
        "drop_collection returned in {:.2} ms; the records of its {parents} parents deleted \
         by the maintenance thread in {:.1} s ({:.0} parents/s)",
        returned.as_secs_f64() * 1e3,
        reclaimed.as_secs_f64(),
        parents as f64 / reclaimed.as_secs_f64()
    );
    println!(
        "checkpoints while reclaiming: {}",
        db.stats().expect("stats").checkpoints - checkpoints
    );
    show(
        "commits before the drop",
        &latency(before.clone()),
        before.len(),
    );
    show(
        "commits while reclaiming",
        &latency(during.clone()),
        during.len(),
    );
    let files_before = files(&db);
    let compacting = Instant::now();
    db.compact().expect("compact");
    println!(
        "compaction after: files {:.0} MiB -> {:.0} MiB in {:.1} s",
        mib(files_before),
        mib(files(&db)),
        compacting.elapsed().as_secs_f64()
    );
    db.verify().expect("verify");
}
