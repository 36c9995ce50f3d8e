//! skewdb beside redb, fjall and SQLite (rusqlite, bundled, WAL) on the product-page
//! workload, in one run: each peer as applications model the data today (everything
//! embedded in one value per product; the Subset pattern coded by hand: the product value
//! with its 5 newest reviews plus a history table keyed by product and time, both written in
//! one transaction), and skewdb with its native `Subset { keep: 5 }` layout. Every engine
//! gets the same cache budget and commits every write durably (fsync).
//!
//! Run: `cargo run --release -p skewdb-peers` (`-- --products N` to change the size,
//! `-- --only ENGINE` to measure one engine without writing the results). It
//! prints a markdown table, and writes it with a bar chart to `bench-results/peers.md` and
//! `bench-results/peers.svg`.

mod data;
mod engines;
mod kv;
mod report;
mod sensors;

use std::time::Instant;

use data::{Op, Product, Review};

/// The cache every engine gets.
pub const CACHE_BYTES: usize = 32 << 20;
/// Runs per engine and model; the median is reported.
const RUNS: usize = 3;

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

/// One run: the mixed operations, then a stream of appends.
fn run(store: &mut dyn Store, ops: &[Op], stream: &[(u64, Review)]) -> Measured {
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
    let started = Instant::now();
    for (id, review) in stream {
        store.append(*id, review);
    }
    let append_seconds = started.elapsed().as_secs_f64();
    views.sort_by(f64::total_cmp);
    Measured {
        ops_per_second: ops.len() as f64 / seconds,
        views_per_second,
        view_p50_us: percentile(&views, 0.5),
        view_p99_us: percentile(&views, 0.99),
        appends_per_second: stream.len() as f64 / append_seconds,
        disk_bytes: store.disk_bytes(),
        hit_ratio,
    }
}

fn median(mut runs: Vec<Measured>) -> Measured {
    runs.sort_by(|a, b| a.ops_per_second.total_cmp(&b.ops_per_second));
    let mut middle = runs[runs.len() / 2].clone();
    let mut appends: Vec<f64> = runs.iter().map(|r| r.appends_per_second).collect();
    appends.sort_by(f64::total_cmp);
    middle.appends_per_second = appends[appends.len() / 2];
    let mut views: Vec<f64> = runs.iter().map(|r| r.views_per_second).collect();
    views.sort_by(f64::total_cmp);
    middle.views_per_second = views[views.len() / 2];
    middle
}

/// The sensor workload on every engine and model.
fn run_sensors(only: Option<&str>) -> Vec<report::SensorRow> {
    let mut rows = Vec::new();
    let mut configs: Vec<(&'static str, &'static str)> = vec![("skewdb", "native Bucket")];
    for engine in ["redb", "fjall", "sqlite"] {
        configs.push((engine, "hand-coded buckets"));
        configs.push((engine, "embedded"));
    }
    for (engine, model) in configs {
        if only.is_some_and(|only| only != engine) {
            continue;
        }
        let mut runs = Vec::new();
        for run_index in 0..RUNS {
            let dir = tempfile::tempdir().expect("temporary directory");
            let mut store: Box<dyn sensors::SensorStore> = match (engine, model) {
                ("skewdb", _) => Box::new(sensors::Skew::open(dir.path())),
                (_, "embedded") => Box::new(sensors::Peer::open(
                    engine,
                    sensors::Model::Embedded,
                    dir.path(),
                )),
                _ => Box::new(sensors::Peer::open(
                    engine,
                    sensors::Model::HandBuckets,
                    dir.path(),
                )),
            };
            store.load(sensors::loaded_until());
            // Every store holds the same month: one reading a minute.
            let month = store.aggregate(0, 0, sensors::loaded_until());
            assert_eq!(
                month.0,
                sensors::loaded_until() as u64 / 60,
                "{engine} {model}"
            );
            runs.push(sensors::run(
                store.as_mut(),
                &sensors::operations(run_index as u64),
            ));
        }
        runs.sort_by(|a, b| a.ops_per_second.total_cmp(&b.ops_per_second));
        let measured = runs[runs.len() / 2].clone();
        eprintln!(
            "{engine} {model}: {:.0} ops/s, {:.0} aggregates/s",
            measured.ops_per_second, measured.aggregates_per_second
        );
        rows.push((engine, model, measured));
    }
    rows
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
    let started = Instant::now();
    let products = data::products(products_count);
    let reviews: usize = products.iter().map(|p| p.reviews.len()).sum();
    let mut rows = Vec::new();
    for (engine, model) in engines::all() {
        if only.as_ref().is_some_and(|only| only != engine) {
            continue;
        }
        let mut runs = Vec::new();
        for run_index in 0..RUNS {
            let dir = tempfile::tempdir().expect("temporary directory");
            let mut store = engines::open(engine, model, dir.path());
            store.load(&products);
            let (ops, stream) = data::operations(&products, run_index as u64);
            runs.push(run(store.as_mut(), &ops, &stream));
        }
        let measured = median(runs);
        eprintln!(
            "{engine} {model}: {:.0} ops/s, view p50 {:.1} us",
            measured.ops_per_second, measured.view_p50_us
        );
        rows.push((engine, model, measured));
    }
    let table = report::table(&rows);
    let header = format!(
        "Product pages: {products_count} products, {reviews} reviews (Zipf-shaped counts, the largest on the most viewed); {} operations per run (94% views, 5% new reviews, 1% show all; Zipf 0.99 over products), then the views alone, then {} appends; median of {RUNS} runs; cache {} MiB each; every write durable. Whole run {:.0} s.\n\n",
        data::OPS,
        data::STREAM,
        CACHE_BYTES >> 20,
        started.elapsed().as_secs_f64()
    );
    let sensor_rows = run_sensors(only.as_deref());
    let sensor_table = report::sensor_table(&sensor_rows);
    let sensor_header = format!(
        "\nSensors: {} sensors, a month of minute readings each ({} readings); {} operations per run (50% appends, 30% last-hour ranges, 15% one-day and 5% one-month aggregates), then the aggregates alone and the ranges alone; median of {RUNS} runs; same cache and durability.\n\n",
        sensors::SENSORS,
        sensors::SENSORS * sensors::loaded_until() as u64 / 60,
        sensors::OPS,
    );
    print!("{header}{table}{sensor_header}{sensor_table}");
    if only.is_none() {
        report::write(
            &format!("{header}{table}{sensor_header}"),
            &sensor_table,
            &rows,
        );
    }
}
