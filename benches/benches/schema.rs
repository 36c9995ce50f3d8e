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
//! Then a layout change on a live database: the reviews workload (`skewdb_workload`, scale
//! `--scale`, default 10: 100,000 products, 2,000,000 reviews with heavy-tailed counts, the
//! most reviewed the most viewed) loaded under `Embed` and moved to `Subset { keep: 5 }`
//! while a reader thread runs the Zipf product-view stream and a writer thread adds a review
//! every millisecond. Views and commits are timed before the move (3 seconds) and during it;
//! the move's own rate is reviews moved per second. Then the database, compacted, is compared
//! with one loaded directly under `Subset { keep: 5 }`: bytes of files, and views per second.
//!
//! Run: `cargo bench -p skewdb-benches --bench schema` (`-- --mb 256 --scale 2` for a quicker
//! run; `-- --part drop` or `-- --part migrate` for one half).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use skewdb::{Alteration, CollectionSpec, Db, Durability, Layout, NewItem, Options};
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

fn arg(args: &[String], name: &str) -> Option<String> {
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).cloned()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb: u64 = arg(&args, "--mb").map_or(1024, |v| v.parse().expect("--mb takes a number"));
    let scale: u64 =
        arg(&args, "--scale").map_or(10, |v| v.parse().expect("--scale takes a number"));
    let part = arg(&args, "--part");
    if part.as_deref() != Some("migrate") {
        drop_collection(mb);
    }
    if part.as_deref() != Some("drop") {
        migrate(scale);
    }
}

/// The product views of the reviews workload's stream, over and over, until `stop` and at
/// least `min`: each view's latency.
fn views_until(
    db: &Db,
    ops: &[skewdb_workload::Op],
    stop: &AtomicBool,
    min: Duration,
) -> Vec<Duration> {
    use skewdb_workload::{COLLECTION, Op, Workload, run_op};
    let collection = db.collection(COLLECTION).expect("collection");
    let layout = Layout::Subset { keep: 5 };
    let started = Instant::now();
    let mut latencies = Vec::new();
    for op in ops.iter().cycle() {
        if let Op::Read(_) = op {
            let at = Instant::now();
            run_op(db, &collection, Workload::Reviews, layout, op).expect("view");
            latencies.push(at.elapsed());
        }
        if stop.load(Ordering::Relaxed) && started.elapsed() >= min {
            break;
        }
    }
    latencies
}

/// New reviews, one a millisecond, each its own commit: each commit's latency.
fn reviews_until(db: &Db, products: u64, stop: &AtomicBool, start: i64) -> Vec<Duration> {
    use skewdb_workload::{COLLECTION, FIELD, Workload, parent_key};
    let mut latencies = Vec::new();
    let mut n = start;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let mut batch = db.batch();
        let key = parent_key(Workload::Reviews, n as u64 % products);
        batch.push(
            COLLECTION,
            key,
            FIELD,
            NewItem::new("a new review").key(n).value(4.0),
        );
        let at = Instant::now();
        batch.commit().expect("review");
        latencies.push(at.elapsed());
        std::thread::sleep(Duration::from_millis(1));
    }
    latencies
}

fn migrate(scale: u64) {
    use skewdb_workload::{COLLECTION, FIELD, Sizes, Workload, build, build_options, operations};
    let sizes = Sizes::at_scale(scale);
    let subset = Layout::Subset { keep: 5 };
    let ops = operations(Workload::Reviews, &sizes);
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Arc::new(Db::open(dir.path(), build_options()).expect("open"));
    let started = Instant::now();
    build(&db, Workload::Reviews, Layout::Embed, &sizes).expect("load");
    println!(
        "\nloaded {} products, {} reviews under embed in {:.1} s, {:.0} MiB of files",
        sizes.products,
        sizes.reviews,
        started.elapsed().as_secs_f64(),
        mib(files(&db))
    );
    let run = |during: bool| {
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (db, stop, ops) = (db.clone(), stop.clone(), ops.clone());
            std::thread::spawn(move || views_until(&db, &ops, &stop, Duration::from_secs(3)))
        };
        let writer = {
            let (db, stop) = (db.clone(), stop.clone());
            let start = if during { 2 << 40 } else { 1 << 40 };
            std::thread::spawn(move || reviews_until(&db, sizes.products, &stop, start))
        };
        let started = Instant::now();
        if during {
            db.alter_collection(COLLECTION, Alteration::new().set_layout(FIELD, subset))
                .expect("set layout");
            while !db.stats().expect("stats").migrations.is_empty() {
                std::thread::sleep(Duration::from_millis(5));
            }
        } else {
            std::thread::sleep(Duration::from_secs(3));
        }
        let took = started.elapsed();
        stop.store(true, Ordering::Relaxed);
        let views = reader.join().expect("reader");
        let commits = writer.join().expect("writer");
        (took, views, commits)
    };
    let (before_took, before_views, before_commits) = run(false);
    let (moved_in, during_views, during_commits) = run(true);
    let rate =
        |views: &[Duration]| views.len() as f64 / views.iter().sum::<Duration>().as_secs_f64();
    let before_rate = rate(&before_views);
    let during_rate = rate(&during_views);
    let show_views = |what: &str, views: &[Duration]| {
        let l = latency(views.to_vec());
        println!(
            "{what:<28} {:>9} views  {:>9.0} views/s of the reader's time  p50 {:>7.2} us  p99 {:>7.2} us",
            views.len(),
            rate(views),
            l.p50,
            l.p99
        );
    };
    println!(
        "before the move ({:.1} s) and during it ({:.1} s):",
        before_took.as_secs_f64(),
        moved_in.as_secs_f64()
    );
    show_views("views before", &before_views);
    show_views("views during", &during_views);
    show(
        "review commits before",
        &latency(before_commits.clone()),
        before_commits.len(),
    );
    show(
        "review commits during",
        &latency(during_commits.clone()),
        during_commits.len(),
    );
    println!(
        "moved {} reviews in {:.2} s: {:.0} reviews/s; views during at {:.2} of the rate before",
        sizes.reviews,
        moved_in.as_secs_f64(),
        sizes.reviews as f64 / moved_in.as_secs_f64(),
        during_rate / before_rate
    );
    db.compact().expect("compact");
    let moved_bytes = files(&db);
    let direct_dir = tempfile::tempdir().expect("temporary directory");
    let direct = Db::open(direct_dir.path(), build_options()).expect("open");
    build(&direct, Workload::Reviews, subset, &sizes).expect("load");
    // (The moved database holds the writer's new reviews too: a few thousand more.)
    direct.compact().expect("compact");
    let direct_bytes = files(&direct);
    let never = AtomicBool::new(true);
    let moved_views = views_until(&db, &ops, &never, Duration::from_secs(3));
    let direct_views = views_until(&direct, &ops, &never, Duration::from_secs(3));
    println!(
        "compacted after the move: {:.1} MiB of files; loaded under subset:5: {:.1} MiB ({:.3}); \
         views {:.0}/s against {:.0}/s ({:.3})",
        mib(moved_bytes),
        mib(direct_bytes),
        moved_bytes as f64 / direct_bytes as f64,
        rate(&moved_views),
        rate(&direct_views),
        rate(&moved_views) / rate(&direct_views)
    );
}

fn drop_collection(mb: u64) {
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
