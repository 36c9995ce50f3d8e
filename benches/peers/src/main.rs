//! skewdb beside redb, fjall and SQLite (rusqlite, bundled, WAL) on the product-page
//! workload, in one run: each peer as applications model the data today (everything
//! embedded in one value per product; the Subset pattern coded by hand: the product value
//! with its 5 newest reviews plus a history table keyed by product and time, both written in
//! one transaction), and skewdb with its native `Subset { keep: 5 }` layout. Every engine
//! gets the same cache budget and commits every write durably (fsync).
//!
//! Run: `cargo run --release -p skewdb-peers` (`-- --products N` to change the size,
//! `-- --only ENGINE` to measure one engine, `-- --workload products|sensors|followers` one
//! workload, either without writing the results). It
//! prints a markdown table, and writes it with a bar chart to `bench-results/peers.md` and
//! `bench-results/peers.svg`.

mod data;
mod engines;
mod followers;
mod kv;
mod report;
mod sensors;

use std::time::Instant;

use data::{Op, Product, Review};

/// The cache every engine gets.
pub const CACHE_BYTES: usize = 32 << 20;
/// Runs per engine and model; the median is reported.
const RUNS: usize = 3;
/// Durable appends are taken in turns: each store this many at a time...
const PER_TURN: usize = 50;
/// ...for this many turns.
const TURNS: usize = 20;

/// One way of storing the product pages on one engine.
pub trait Store {
    /// Loads every product with its reviews (not timed).
    fn load(&mut self, products: &[Product]);
    /// The product page: body and the 5 newest reviews; returns the bytes rendered.
    fn view(&mut self, id: u64) -> usize;
    /// Appends a review, durably.
    fn append(&mut self, id: u64, review: &Review);
    /// Every review of the product, newest first (each one read); returns how many.
    fn show_all(&mut self, id: u64) -> usize;
    /// Bytes of the engine's files.
    fn disk_bytes(&self) -> u64;
    /// The cache hit ratio since the last reset, where the engine exposes it.
    fn hit_ratio(&self) -> Option<f64> {
        None
    }
    fn reset_stats(&mut self) {}
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub ops_per_second: f64,
    /// Product pages per second, views only (the same products as the mixed run's views).
    pub views_per_second: f64,
    pub view_p50_us: f64,
    pub view_p99_us: f64,
    pub appends_per_second: f64,
    pub disk_bytes: u64,
    pub hit_ratio: Option<f64>,
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

/// One run: the mixed operations, then the views alone. (Appends are timed in turns
/// across every store, see [`appends_in_turns`].)
fn run(store: &mut dyn Store, ops: &[Op]) -> Measured {
    store.reset_stats();
    let mut views = Vec::new();
    let started = Instant::now();
    for op in ops {
        match op {
            Op::View(id) => {
                let at = Instant::now();
                std::hint::black_box(store.view(*id));
                views.push(at.elapsed().as_secs_f64() * 1e6);
            }
            Op::Append(id, review) => store.append(*id, review),
            Op::ShowAll(id) => {
                std::hint::black_box(store.show_all(*id));
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let hit_ratio = store.hit_ratio();
    let viewed: Vec<u64> = ops
        .iter()
        .filter_map(|op| match op {
            Op::View(id) => Some(*id),
            _ => None,
        })
        .collect();
    let started = Instant::now();
    for id in &viewed {
        std::hint::black_box(store.view(*id));
    }
    let views_per_second = viewed.len() as f64 / started.elapsed().as_secs_f64();
    views.sort_by(f64::total_cmp);
    Measured {
        ops_per_second: ops.len() as f64 / seconds,
        views_per_second,
        view_p50_us: percentile(&views, 0.5),
        view_p99_us: percentile(&views, 0.99),
        appends_per_second: 0.0,
        disk_bytes: store.disk_bytes(),
        hit_ratio,
    }
}

fn median(mut runs: Vec<Measured>) -> Measured {
    runs.sort_by(|a, b| a.ops_per_second.total_cmp(&b.ops_per_second));
    let mut middle = runs[runs.len() / 2].clone();
    let mut views: Vec<f64> = runs.iter().map(|r| r.views_per_second).collect();
    views.sort_by(f64::total_cmp);
    middle.views_per_second = views[views.len() / 2];
    middle
}

/// Durable appends taken in turns: every store makes `PER_TURN` appends, then the next one,
/// for `TURNS` rounds, so that every engine meets the disk in the same minutes (on a shared
/// machine its sync rate drifts by half within minutes). `append(store, i)` makes the `i`-th
/// append; each store gets the same sequence. Returns each store's appends per second over
/// its own turns.
fn appends_in_turns<S: ?Sized>(
    stores: &mut [(tempfile::TempDir, Box<S>)],
    append: impl Fn(&mut S, usize),
) -> Vec<f64> {
    let mut seconds = vec![0.0; stores.len()];
    for turn in 0..TURNS {
        // Each turn starts one store further on, so that no store always follows the same
        // one (and meets the disk as that store's writes left it).
        for k in 0..stores.len() {
            let at = (turn + k) % stores.len();
            let store = &mut stores[at].1;
            let started = Instant::now();
            for i in turn * PER_TURN..(turn + 1) * PER_TURN {
                append(store.as_mut(), i);
            }
            seconds[at] += started.elapsed().as_secs_f64();
        }
    }
    seconds
        .iter()
        .map(|s| (TURNS * PER_TURN) as f64 / s)
        .collect()
}

/// How the appends column was measured, for a table's header.
fn turns_note(what: &str) -> String {
    format!(
        "Appends: {} {what} per store, durable one by one, taken in turns of {PER_TURN} across every store after its last run (each turn starting one store further on).",
        TURNS * PER_TURN
    )
}

/// Runs every engine and model of a workload (skewdb's native layout, then each peer's
/// hand-coded pattern and embedded model) `RUNS` times and keeps the run with the median
/// mixed rate. `open(engine, hand_coded, dir)` opens a loaded store; `run` measures it. The
/// last run's stores then take their appends in turns (`append`), whose rate `set_appends`
/// writes into each row.
fn run_all<S: ?Sized, M: Clone>(
    only: Option<&str>,
    names: (&'static str, &'static str),
    open: impl Fn(&'static str, bool, &std::path::Path) -> Box<S>,
    run: impl Fn(&mut S, u64) -> M,
    rate: impl Fn(&M) -> f64,
    append: impl Fn(&mut S, usize),
    set_appends: impl Fn(&mut M, f64),
) -> Vec<(&'static str, &'static str, M)> {
    let mut configs = vec![("skewdb", names.0, true)];
    for engine in ["redb", "fjall", "sqlite"] {
        configs.push((engine, names.1, true));
        configs.push((engine, "embedded", false));
    }
    let mut rows = Vec::new();
    let mut kept = Vec::new();
    for (engine, model, hand_coded) in configs {
        if only.is_some_and(|only| only != engine) {
            continue;
        }
        let mut runs = Vec::new();
        for run_index in 0..RUNS as u64 {
            let dir = tempfile::tempdir().expect("temporary directory");
            let mut store = open(engine, hand_coded, dir.path());
            runs.push(run(store.as_mut(), run_index));
            if run_index + 1 == RUNS as u64 {
                kept.push((dir, store));
            }
        }
        runs.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
        let measured = runs[runs.len() / 2].clone();
        eprintln!("{engine} {model}: {:.0} ops/s", rate(&measured));
        rows.push((engine, model, measured));
    }
    let appends = appends_in_turns(&mut kept, append);
    for ((_, _, measured), appends) in rows.iter_mut().zip(appends) {
        set_appends(measured, appends);
    }
    rows
}

/// The sensor workload on every engine and model; every store must hold the same month.
fn run_sensors(only: Option<&str>) -> Vec<report::SensorRow> {
    run_all(
        only,
        ("native Bucket", "hand-coded buckets"),
        |engine, hand_coded, dir| -> Box<dyn sensors::SensorStore> {
            let mut store: Box<dyn sensors::SensorStore> = match (engine, hand_coded) {
                ("skewdb", _) => Box::new(sensors::Skew::open(dir)),
                (_, true) => Box::new(sensors::Peer::open(
                    engine,
                    sensors::Model::HandBuckets,
                    dir,
                )),
                (_, false) => Box::new(sensors::Peer::open(engine, sensors::Model::Embedded, dir)),
            };
            store.load(sensors::loaded_until());
            let month = store.aggregate(0, 0, sensors::loaded_until());
            assert_eq!(month.0, sensors::loaded_until() as u64 / 60, "{engine}");
            store
        },
        |store, run_index| sensors::run(store, &sensors::operations(run_index)),
        |m| m.ops_per_second,
        |store, i| {
            let (sensor, time, value) = sensors::turn_append(i);
            store.append(sensor, time, value);
        },
        |m, appends| m.appends_per_second = appends,
    )
}

/// The followers workload on every engine and model.
fn run_followers(only: Option<&str>) -> Vec<report::FollowerRow> {
    let counts = followers::counts();
    run_all(
        only,
        ("native Outlier", "hand-coded Outlier"),
        |engine, hand_coded, dir| -> Box<dyn followers::FollowerStore> {
            let mut store: Box<dyn followers::FollowerStore> = match (engine, hand_coded) {
                ("skewdb", _) => Box::new(followers::Skew::open(dir)),
                (_, true) => Box::new(followers::Peer::open(
                    engine,
                    followers::Model::HandOutlier,
                    dir,
                )),
                (_, false) => Box::new(followers::Peer::open(
                    engine,
                    followers::Model::Embedded,
                    dir,
                )),
            };
            store.load(&counts);
            store
        },
        |store, run_index| followers::run(store, &followers::operations(run_index)),
        |m| m.ops_per_second,
        |store, i| {
            let (user, follower) = followers::turn_follow(i);
            store.follow(user, follower);
        },
        |m, follows| m.follows_per_second = follows,
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let products_count = args
        .iter()
        .position(|a| a == "--products")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000u64);
    // `--only ENGINE` measures one engine (for profiling).
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    // `--workload products|sensors|followers` runs one workload (for profiling).
    let workload = args
        .iter()
        .position(|a| a == "--workload")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let runs = |name: &str| workload.as_ref().is_none_or(|w| w == name);
    let started = Instant::now();
    let products = data::products(products_count);
    let reviews: usize = products.iter().map(|p| p.reviews.len()).sum();
    let mut rows = Vec::new();
    let mut kept = Vec::new();
    for (engine, model) in engines::all() {
        if only.as_ref().is_some_and(|only| only != engine) || !runs("products") {
            continue;
        }
        let mut runs = Vec::new();
        for run_index in 0..RUNS {
            let dir = tempfile::tempdir().expect("temporary directory");
            let mut store = engines::open(engine, model, dir.path());
            store.load(&products);
            let (ops, _) = data::operations(&products, run_index as u64);
            runs.push(run(store.as_mut(), &ops));
            if run_index + 1 == RUNS {
                kept.push((dir, store));
            }
        }
        let measured = median(runs);
        eprintln!(
            "{engine} {model}: {:.0} ops/s, view p50 {:.1} us",
            measured.ops_per_second, measured.view_p50_us
        );
        rows.push((engine, model, measured));
    }
    // New reviews after the runs' own, the same for every store.
    let (_, stream) = data::operations(&products, RUNS as u64);
    assert!(stream.len() >= TURNS * PER_TURN);
    let appends = appends_in_turns(&mut kept, |store, i| {
        let (id, review) = &stream[i];
        store.append(*id, review);
    });
    for ((_, _, measured), appends) in rows.iter_mut().zip(appends) {
        measured.appends_per_second = appends;
    }
    drop(kept);
    let table = report::table(&rows);
    let header = format!(
        "Product pages: {products_count} products, {reviews} reviews (Zipf-shaped counts, the largest on the most viewed); {} operations per run (94% views, 5% new reviews, 1% show all; Zipf 0.99 over products), then the views alone; median of {RUNS} runs; cache {} MiB each; every write durable. {}\n\n",
        data::OPS,
        CACHE_BYTES >> 20,
        turns_note("new reviews"),
    );
    let sensor_rows = match runs("sensors") {
        true => run_sensors(only.as_deref()),
        false => Vec::new(),
    };
    let sensor_table = report::sensor_table(&sensor_rows);
    let sensor_header = format!(
        "\nSensors: {} sensors, a month of minute readings each ({} readings); {} operations per run (50% appends, 30% last-hour ranges, 15% one-day and 5% one-month aggregates), then the aggregates alone and the ranges alone; median of {RUNS} runs; same cache and durability. {}\n\n",
        sensors::SENSORS,
        sensors::SENSORS * sensors::loaded_until() as u64 / 60,
        sensors::OPS,
        turns_note("readings"),
    );
    let follower_rows = match runs("followers") {
        true => run_followers(only.as_deref()),
        false => Vec::new(),
    };
    let follower_table = report::follower_table(&follower_rows);
    let follower_header = format!(
        "\nFollowers: {} users with power-law follower counts, the celebrity with 100,000; {} operations per run (94% profile reads, 5% follows, 1% lists of the first 100 followers; Zipf 0.99 over users), then the profile reads alone; median of {RUNS} runs; same cache and durability. {}\n\n",
        followers::USERS,
        followers::OPS,
        turns_note("follows"),
    );
    let whole = format!(
        "{header}{table}{sensor_header}{sensor_table}{follower_header}{follower_table}\nWhole run {:.0} s.\n",
        started.elapsed().as_secs_f64()
    );
    print!("{whole}");
    if only.is_none() && workload.is_none() {
        report::write(&whole, &rows);
    }
}
