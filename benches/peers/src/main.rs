//! skewdb beside redb, fjall and SQLite (rusqlite, bundled, WAL) on the seed workloads
//! (product pages, sensor readings, followers), in one run: each peer as applications model
//! the data today (everything embedded in one value per parent, and the pattern coded by
//! hand: for product pages the product value with its 5 newest reviews plus a history table
//! keyed by product and time, both written in one transaction), and skewdb with its native
//! layouts. Peers read their values where the engine holds them (no copy, no allocation per
//! review). Every engine gets the same cache budget and commits every write durably (fsync).
//!
//! Run: `cargo run --release -p skewdb-peers` (`-- --products N` to change the size,
//! `-- --only ENGINE` to measure one engine (or `--only "ENGINE MODEL"` one model of it), `-- --workload products|sensors|followers` one
//! workload, `-- --record-cache-percent N` to give skewdb's record tier another share of its
//! cache, `-- --views N` fewer views per pass, each without writing the results). It prints
//! the tables, and writes them into `BENCHMARKS.md` (between its two marker lines) and
//! `bench-results/peers.md`, with a bar chart of product views in `bench-results/peers.svg`.

mod data;
mod engines;
mod followers;
mod kv;
mod optimum;
mod ram;
mod report;
mod sensors;
mod variants;
mod what_if;

use std::time::Instant;

use data::{Product, Review};

/// skewdb's settings other than the defaults, for a comparison: `--record-cache-percent N`,
/// `--page-bytes N` and `--variants` set them (the measured run keeps the defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub record_cache_percent: Option<u8>,
    pub page_bytes: Option<usize>,
}

impl std::fmt::Display for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.page_bytes {
            Some(bytes) => write!(f, "pages {} KiB", bytes >> 10)?,
            None => write!(f, "pages as default")?,
        }
        match self.record_cache_percent {
            Some(percent) => write!(f, ", record tier {percent}%"),
            None => write!(f, ", record tier as default"),
        }
    }
}

static SETTINGS: std::sync::Mutex<Settings> = std::sync::Mutex::new(Settings {
    record_cache_percent: None,
    page_bytes: None,
});

/// How skewdb is opened: the same cache budget as every peer, and the settings in force.
pub fn skew_options(cache_bytes: usize) -> skewdb::Options {
    let settings = *SETTINGS.lock().expect("settings");
    let mut options = skewdb::Options::new().cache_bytes(cache_bytes);
    if let Some(bytes) = settings.page_bytes {
        options = options.page_bytes(bytes);
    }
    if let Some(percent) = settings.record_cache_percent {
        options = options.record_cache_percent(percent);
    }
    options
}

/// Products of the measured run (`--products` changes it, for a trial).
const PRODUCTS: u64 = 100_000;
/// The cache every engine gets in the sensors and followers workloads, and the product
/// pages' budget smaller than their data.
pub const CACHE_BYTES: usize = 64 << 20;
/// The product pages' budget that holds everything.
pub const LARGE_CACHE_BYTES: usize = 2 << 30;
/// The embedded models' passes take at least this share of the views between them (a pass
/// of the embedded models is slow, and one pass alone is at the mercy of a moment's noise);
/// a pass that has not taken [`MIN_PASS_SECONDS`] by then goes on, up to the full count.
const EMBEDDED_SHARE: usize = 5;
/// A pass shorter than this in time is at the mercy of a stall of the machine: the
/// embedded models' fast passes (everything cached) go on until they have taken it.
const MIN_PASS_SECONDS: f64 = 1.0;
/// Runs per engine and model; the median is reported.
pub const RUNS: usize = 3;
/// Durable appends are taken in turns: each store this many at a time...
const PER_TURN: usize = 50;
/// ...for this many turns.
const TURNS: usize = 20;

/// One way of storing the product pages on one engine.
pub trait Store {
    /// Loads products with their reviews (not timed); called once, or once per slice of
    /// them in order, then [`Store::finish_load`].
    fn load(&mut self, products: &[Product]);
    /// Loads `products` in one transaction, taking each as it is made (the harness holds
    /// one product at a time, however large the transaction).
    fn load_transaction(&mut self, products: &mut dyn Iterator<Item = Product>);
    /// After the last [`Store::load`]: what the engine's users do after a bulk load.
    fn finish_load(&mut self) {}
    /// The product page: body and the 5 newest reviews; returns the bytes rendered.
    fn view(&mut self, id: u64) -> usize;
    /// Appends a review, durably.
    fn append(&mut self, id: u64, review: &Review);
    /// The first page of the product's reviews, newest first ([`data::PAGE`] of them, each
    /// read); returns how many and their bytes.
    fn page(&mut self, id: u64) -> (usize, usize);
    /// Closes the engine and opens its files again with a cache of `cache_bytes`.
    fn reopen(&mut self, cache_bytes: usize);
    /// Bytes of the engine's files.
    fn disk_bytes(&self) -> u64;
    /// The cache's counters, where the engine exposes them.
    fn cache_counters(&self) -> Option<CacheCounters>;
}

/// A cache's counters of requests and hits, as the engine counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounters {
    pub requests: u64,
    pub hits: u64,
}

impl CacheCounters {
    /// Hits per request between two readings; `None` without requests or counters.
    pub fn ratio(before: Option<CacheCounters>, after: Option<CacheCounters>) -> Option<f64> {
        let (before, after) = (before?, after?);
        let requests = after.requests - before.requests;
        (requests > 0).then(|| (after.hits - before.hits) as f64 / requests as f64)
    }
}

/// Percentiles of one kind of operation's latencies, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
}

/// Latencies of one kind of operation as they are measured: a histogram of nanoseconds
/// (3 significant figures) and their exact total.
#[derive(Debug)]
pub struct Latencies {
    histogram: hdrhistogram::Histogram<u64>,
    total_micros: f64,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            // Nanoseconds up to about an hour (2^42), at 3 significant figures.
            histogram: hdrhistogram::Histogram::new_with_max(1 << 42, 3)
                .expect("a range and precision hdrhistogram takes"),
            total_micros: 0.0,
        }
    }
}

impl Latencies {
    /// Runs `op` and records how long it took.
    pub fn time<T>(&mut self, op: impl FnOnce() -> T) -> T {
        let at = Instant::now();
        let out = op();
        let elapsed = at.elapsed();
        self.histogram
            .saturating_record(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
        self.total_micros += elapsed.as_secs_f64() * 1e6;
        out
    }

    /// Operations recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// Time spent in them, in microseconds.
    pub fn total_micros(&self) -> f64 {
        self.total_micros
    }

    /// Operations recorded per second spent in them.
    pub fn per_second(&self) -> f64 {
        self.histogram.len() as f64 / (self.total_micros / 1e6)
    }

    /// Zeros when nothing was recorded.
    pub fn percentiles(self) -> Percentiles {
        if self.histogram.is_empty() {
            return Percentiles::default();
        }
        let at = |q: f64| self.histogram.value_at_quantile(q) as f64 / 1e3;
        Percentiles {
            p50_us: at(0.5),
            p99_us: at(0.99),
            p999_us: at(0.999),
        }
    }
}

/// Product views and show-all pages at one cache budget: one pass, or the median of passes.
#[derive(Clone, Debug, Default)]
pub struct Viewed {
    pub views_per_second: f64,
    pub view_latency: Percentiles,
    pub pages_per_second: f64,
    pub page_latency: Percentiles,
    /// Over the views, as the engine counts it.
    pub hit_ratio: Option<f64>,
    /// Cache misses per view, as the engine counts them.
    pub misses_per_view: Option<f64>,
    /// Passes the median is taken over.
    pub passes: usize,
}

/// What one engine and model measured on the product pages.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// With the cache smaller than the data ([`CACHE_BYTES`]).
    pub small: Viewed,
    /// With a cache that holds everything ([`LARGE_CACHE_BYTES`]).
    pub fits: Viewed,
    pub appends_per_second: f64,
    /// Appends in turns.
    pub append_latency: Percentiles,
    pub disk_bytes: u64,
}

/// One pass: at least `least` of `views` timed one by one (more, in order, until the views
/// have taken [`MIN_PASS_SECONDS`]), then `pages` show-all pages.
fn view_pass(store: &mut dyn Store, views: &[u64], least: usize, pages: &[u64]) -> Viewed {
    let counters = store.cache_counters();
    let mut latencies = Latencies::default();
    for (done, id) in views.iter().enumerate() {
        if done >= least && latencies.total_micros() >= MIN_PASS_SECONDS * 1e6 {
            break;
        }
        std::hint::black_box(latencies.time(|| store.view(*id)));
    }
    let viewed = latencies.count();
    let after = store.cache_counters();
    let hit_ratio = CacheCounters::ratio(counters, after);
    let misses_per_view = counters.zip(after).map(|(before, after)| {
        let misses = (after.requests - after.hits) - (before.requests - before.hits);
        misses as f64 / viewed.max(1) as f64
    });
    let views_per_second = latencies.per_second();
    let view_latency = latencies.percentiles();
    let mut latencies = Latencies::default();
    for id in pages {
        std::hint::black_box(latencies.time(|| store.page(*id)));
    }
    Viewed {
        views_per_second,
        view_latency,
        pages_per_second: latencies.per_second(),
        page_latency: latencies.percentiles(),
        hit_ratio,
        misses_per_view,
        passes: 1,
    }
}

/// Warms the caches (with as many views as the passes take between them at least, at most
/// `WARM_VIEWS`), then takes `RUNS` passes (a stream of `most` views of its own per pass,
/// of which each takes at least `least`: see [`view_pass`]) and keeps the pass with the
/// median view rate, its page rate the median of the passes' own.
pub fn view_passes(store: &mut dyn Store, products: u64, least: usize, most: usize) -> Viewed {
    for id in data::views(products, data::WARM_VIEWS.min(least * RUNS), 999) {
        std::hint::black_box(store.view(id));
    }
    let mut runs: Vec<Viewed> = (0..RUNS as u64)
        .map(|pass| {
            let views = data::views(products, most.max(least), pass);
            let pages = data::views(products, data::PAGES.min(least), 500 + pass);
            view_pass(store, &views, least, &pages)
        })
        .collect();
    runs.sort_by(|a, b| a.views_per_second.total_cmp(&b.views_per_second));
    let mut middle = runs[runs.len() / 2].clone();
    middle.pages_per_second = median_of(&runs, |r| r.pages_per_second);
    middle.passes = RUNS;
    middle
}

/// The products [`check_pages`] checks, by their place among `count`.
pub fn checked_places(count: usize) -> [usize; 7] {
    [0, 1, 2, 10, 100, count / 2, count - 1]
}

/// Every store must render the same pages: a few products' views and first pages checked
/// against the generator's reviews.
pub fn check_pages(store: &mut dyn Store, products: &[Product], what: &str) {
    for at in checked_places(products.len()) {
        check_expected(store, &Expected::of(&products[at]), what);
    }
}

/// What a product's view and first page render: its id, the view's bytes, the page's
/// reviews and bytes.
pub struct Expected {
    id: u64,
    view: usize,
    page: (usize, usize),
}

impl Expected {
    pub fn of(product: &Product) -> Expected {
        let newest = product.reviews.iter().rev();
        let view = product.body.len() + newest.clone().take(5).map(|r| r.text.len()).sum::<usize>();
        let page: Vec<&Review> = newest.take(data::PAGE).collect();
        let bytes = page.iter().map(|r| r.text.len()).sum();
        Expected {
            id: product.id,
            view,
            page: (page.len(), bytes),
        }
    }
}

/// A product's view and first page checked against what they should render.
pub fn check_expected(store: &mut dyn Store, expected: &Expected, what: &str) {
    let id = expected.id;
    assert_eq!(store.view(id), expected.view, "{what}: view of {id}");
    assert_eq!(store.page(id), expected.page, "{what}: page of {id}");
}

/// The median over `runs` of one figure.
pub fn median_of<M>(runs: &[M], figure: impl Fn(&M) -> f64) -> f64 {
    let mut values: Vec<f64> = runs.iter().map(figure).collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Durable appends taken in turns: every store makes `PER_TURN` appends, then the next one,
/// for `TURNS` rounds, so that every engine meets the disk in the same minutes (on a shared
/// machine its sync rate drifts by half within minutes). `append(store, i)` makes the `i`-th
/// append; each store gets the same sequence. Returns each store's appends per second over
/// its own turns, and their latencies.
fn appends_in_turns<S: ?Sized>(
    stores: &mut [(tempfile::TempDir, Box<S>)],
    append: impl Fn(&mut S, usize),
) -> Vec<(f64, Percentiles)> {
    let mut latencies: Vec<Latencies> = stores.iter().map(|_| Latencies::default()).collect();
    for turn in 0..TURNS {
        // Each turn starts one store further on, so that no store always follows the same
        // one (and meets the disk as that store's writes left it).
        for k in 0..stores.len() {
            let at = (turn + k) % stores.len();
            let store = &mut stores[at].1;
            for i in turn * PER_TURN..(turn + 1) * PER_TURN {
                latencies[at].time(|| append(store.as_mut(), i));
            }
        }
    }
    latencies
        .into_iter()
        .map(|l| (l.per_second(), l.percentiles()))
        .collect()
}

/// How the appends column was measured, for a table's header.
fn turns_note(what: &str) -> String {
    format!(
        "Appends: {} {what} per store, durable one by one, taken in turns of {PER_TURN} across every store after its last run (each turn starting one store further on).",
        TURNS * PER_TURN
    )
}

/// What one run of a workload measured, as [`run_all`] combines runs.
pub trait Run: Clone {
    /// The rate of the mixed operations, which picks the median run.
    fn mixed_rate(&self) -> f64;
    /// Sets the rates measured alone (after the mixed operations) to their medians over `runs`.
    fn take_medians(&mut self, runs: &[Self]);
    /// The appends taken in turns: their rate and latencies.
    fn set_appends(&mut self, rate: f64, latency: Percentiles);
}

/// Runs every engine and model of a workload (skewdb's native layout, then each peer's
/// hand-coded pattern and embedded model) `RUNS` times and keeps the run with the median
/// mixed rate, its other rates the medians of their own. `open(engine, hand_coded, dir)`
/// opens a loaded store; `run` measures it. The last run's stores then take their appends in
/// turns (`append`).
fn run_all<S: ?Sized, M: Run>(
    only: Option<&str>,
    names: (&'static str, &'static str),
    open: impl Fn(&'static str, bool, &std::path::Path) -> Box<S>,
    run: impl Fn(&mut S, u64) -> M,
    append: impl Fn(&mut S, usize),
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
        runs.sort_by(|a, b| a.mixed_rate().total_cmp(&b.mixed_rate()));
        let mut measured = runs[runs.len() / 2].clone();
        measured.take_medians(&runs);
        eprintln!("{engine} {model}: {:.0} ops/s", measured.mixed_rate());
        rows.push((engine, model, measured));
    }
    let appends = appends_in_turns(&mut kept, append);
    for ((_, _, measured), (rate, latency)) in rows.iter_mut().zip(appends) {
        measured.set_appends(rate, latency);
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
        |store, i| {
            let (sensor, time, value) = sensors::turn_append(i);
            store.append(sensor, time, value);
        },
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
        |store, run_index| {
            followers::warm_up(store, run_index);
            followers::run(store, &followers::operations(run_index))
        },
        |store, i| {
            let (user, follower) = followers::turn_follow(i);
            store.follow(user, follower);
        },
    )
}

/// skewdb beside redb, fjall and SQLite on the seed workloads. With no option it runs
/// everything and writes the tables into BENCHMARKS.md and bench-results/; with options it
/// only prints them (`--variants` writes bench-results/variants.md).
#[derive(clap::Parser)]
#[command(name = "skewdb-peers")]
struct Args {
    /// Products in the product pages workload.
    #[arg(long = "products", value_name = "N", default_value_t = PRODUCTS)]
    products_count: u64,
    /// One engine ("skewdb"), or one model of it ("skewdb native Subset"), for profiling.
    #[arg(long, value_name = "ENGINE [MODEL]")]
    only: Option<String>,
    /// One workload.
    #[arg(long, value_parser = ["products", "sensors", "followers"])]
    workload: Option<String>,
    /// Another share of skewdb's cache for its record tier, in percent.
    #[arg(
        long = "record-cache-percent",
        value_name = "N",
        value_parser = clap::value_parser!(u8).range(0..=90)
    )]
    record_percent: Option<u8>,
    /// Another page size for skewdb's new databases, in bytes (4096 to 65536).
    #[arg(long = "page-bytes", value_name = "N")]
    page_bytes: Option<usize>,
    /// The product page variants (page sizes, record tier shares) instead of the peers.
    #[arg(long)]
    variants: bool,
    /// Whether the what-if estimate predicts the live cache: skewdb alone, the estimate at
    /// one budget beside live runs at 0.25x to 4x it (`--views` reads per phase).
    #[arg(long = "what-if")]
    what_if: bool,
    /// Objects the what-if sample keeps in that run (skewdb's default otherwise).
    #[arg(long = "what-if-sample", value_name = "N")]
    what_if_sample: Option<usize>,
    /// Views per pass, fewer for a trial.
    #[arg(long = "views", value_name = "N", default_value_t = data::VIEWS)]
    view_count: usize,
    /// The RAM-limited run instead: each engine's process in a memory cgroup of this many
    /// MiB (page cache included), on the product pages only.
    #[arg(long = "ram-limit", value_name = "MIB")]
    ram_limit: Option<u64>,
    /// The RAM-limited run at each of these limits (MiB, comma-separated: 160,320,640,1280),
    /// every engine at each; writes views/s against the limit as a chart.
    #[arg(
        long = "ram-sweep",
        value_name = "MIB,..",
        value_delimiter = ',',
        conflicts_with = "ram_limit"
    )]
    ram_sweep: Option<Vec<u64>>,
    /// One engine's process of the RAM-limited run (started by the run itself).
    #[arg(long = "ram-child", value_name = "ENGINE", hide = true)]
    ram_child: Option<String>,
    /// In the RAM-limited run, every engine loads in transactions of this many products
    /// (largest first, whatever their reviews) instead of slices of bounded size.
    #[arg(long = "load-transaction", value_name = "PRODUCTS")]
    load_transaction: Option<usize>,
    /// The cgroup that process joins first.
    #[arg(long = "ram-cgroup", value_name = "DIR", hide = true)]
    ram_cgroup: Option<std::path::PathBuf>,
}

fn main() {
    let Args {
        products_count,
        only,
        workload,
        record_percent,
        page_bytes,
        variants,
        what_if,
        what_if_sample,
        view_count,
        ram_limit,
        ram_sweep,
        ram_child,
        load_transaction,
        ram_cgroup,
    } = clap::Parser::parse();
    let runs = |name: &str| workload.as_ref().is_none_or(|w| w == name);
    *SETTINGS.lock().expect("settings") = Settings {
        record_cache_percent: record_percent,
        page_bytes,
    };
    if let Some(engine) = ram_child {
        ram::child(
            &engine,
            products_count,
            view_count,
            ram_cgroup.as_deref(),
            load_transaction,
        );
        return;
    }
    if let Some(limits) = ram_sweep {
        let mut points = Vec::new();
        for &limit_mib in &limits {
            let run = ram::run(
                products_count,
                view_count,
                limit_mib,
                *SETTINGS.lock().expect("settings"),
                only.as_deref(),
                load_transaction,
            );
            print!("{}", run.report);
            points.push((limit_mib, run.views));
        }
        if let Err(e) = report::write_ram_sweep(products_count, &points) {
            eprintln!("skewdb-peers: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Some(limit_mib) = ram_limit {
        let report = ram::run(
            products_count,
            view_count,
            limit_mib,
            *SETTINGS.lock().expect("settings"),
            only.as_deref(),
            load_transaction,
        )
        .report;
        print!("{report}");
        // A run with other settings is a trial: printed, not written.
        if *SETTINGS.lock().expect("settings") == Settings::default()
            && only.is_none()
            && load_transaction.is_none()
            && let Err(e) = report::write_ram(&report, products_count, limit_mib)
        {
            eprintln!("skewdb-peers: {e}");
            std::process::exit(1);
        }
        return;
    }
    if variants {
        variants::run(products_count);
        return;
    }
    if what_if {
        print!(
            "{}",
            what_if::run(products_count, view_count, what_if_sample)
        );
        return;
    }
    let started = Instant::now();
    let products = data::products(products_count);
    let reviews: usize = products.iter().map(|p| p.reviews.len()).sum();
    let mut rows = Vec::new();
    let mut kept = Vec::new();
    for (engine, model) in engines::all() {
        let what = format!("{engine} {model}");
        if only
            .as_ref()
            .is_some_and(|only| only != engine && *only != what)
            || !runs("products")
        {
            continue;
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = engines::open(engine, model, dir.path(), LARGE_CACHE_BYTES);
        store.load(&products);
        store.finish_load();
        check_pages(store.as_mut(), &products, &what);
        // The embedded models read every review of a product per view, thousands of them
        // for the most viewed: at least a fifth of the views, in passes as many as the
        // others take (see `view_pass`).
        let least = match model.embeds() {
            true => view_count / EMBEDDED_SHARE / RUNS,
            false => view_count,
        };
        let at = Instant::now();
        let fits = view_passes(store.as_mut(), products_count, least, view_count);
        store.reopen(CACHE_BYTES);
        check_pages(store.as_mut(), &products, &what);
        let small = view_passes(store.as_mut(), products_count, least, view_count);
        eprintln!(
            "{what}: {:.0} views/s everything cached, {:.0} at {} MiB ({:.0} s)",
            fits.views_per_second,
            small.views_per_second,
            CACHE_BYTES >> 20,
            at.elapsed().as_secs_f64()
        );
        let measured = Measured {
            small,
            fits,
            disk_bytes: store.disk_bytes(),
            ..Measured::default()
        };
        rows.push((engine, model, measured));
        kept.push((dir, store));
    }
    let stream = data::appends(products_count);
    assert!(stream.len() >= TURNS * PER_TURN);
    let appends = appends_in_turns(&mut kept, |store, i| {
        let (id, review) = &stream[i];
        store.append(*id, review);
    });
    for ((_, _, measured), (rate, latency)) in rows.iter_mut().zip(appends) {
        measured.appends_per_second = rate;
        measured.append_latency = latency;
    }
    drop(kept);
    // Each workload's description and table, for the workloads that ran.
    let mut sections = Vec::new();
    if !rows.is_empty() {
        sections.push(format!(
            "Product pages: {products_count} products, {reviews} reviews (Pareto(1.1) counts, the largest, {}, on the most viewed product); views Zipf(0.99) over products. A view renders the body and the 5 newest reviews; a page is the first {} reviews, newest first, each read. Per cache budget: {} views to warm the cache (not timed; the embedded models: {}), then passes of {view_count} views and {} pages, each timed (a stream of its own per pass; the median of {RUNS} passes; the embedded models: passes of at least {} views, going on through their stream, up to {view_count}, until the views have taken {MIN_PASS_SECONDS} s). Hand-coded Subset: the product value with its 5 newest reviews, the others in a history table keyed by product and time, both written in one transaction; embedded: every review in the product's value. Values are laid out newest first and read in place (redb `AccessGuard::value()`, fjall's `Slice`, rusqlite `get_ref`). skewdb `Subset {{ keep: 5 }}` and `Embed`, read with `get` and `for_each_item` (each review lent in place). {}\n\n{}",
            products[0].reviews.len(),
            data::PAGE,
            data::WARM_VIEWS.min(view_count * RUNS),
            data::WARM_VIEWS.min(view_count / EMBEDDED_SHARE / RUNS * RUNS),
            data::PAGES.min(view_count),
            view_count / EMBEDDED_SHARE / RUNS,
            turns_note("new reviews"),
            report::table(&rows),
        ));
    }
    let sensor_rows = match runs("sensors") {
        true => run_sensors(only.as_deref()),
        false => Vec::new(),
    };
    if !sensor_rows.is_empty() {
        sections.push(format!(
            "Sensors: {} sensors, a month of minute readings each ({} readings); {} operations per run (50% appends, 30% last-hour ranges, 15% one-day and 5% one-month aggregates), then the aggregates alone (aggregates/s) and the ranges alone (ranges/s). Hand-coded buckets: one value per sensor and hour with count, sum, min and max kept by the application (whole buckets add their header, the two partial ones are decoded); skewdb `Bucket {{ max_items: 1000, span: 3600 }}` (summaries of sealed buckets from the chunk index, without decoding; ranges read in place with `for_each_item`). {}\n\n{}",
            sensors::SENSORS,
            sensors::SENSORS * sensors::loaded_until() as u64 / 60,
            sensors::OPS,
            turns_note("readings"),
            report::sensor_table(&sensor_rows),
        ));
    }
    let follower_rows = match runs("followers") {
        true => run_followers(only.as_deref()),
        false => Vec::new(),
    };
    if !follower_rows.is_empty() {
        sections.push(format!(
            "Followers: {} users with power-law follower counts, the celebrity with 100,000; {} profile reads to warm the caches (not timed; a Zipf 0.99 stream of their own), then {} operations per run (94% profile reads, 5% follows, 1% lists of the first 100 followers; Zipf 0.99 over users), then the profile reads alone (profile reads/s). Hand-coded Outlier: the first 1,000 followers in the user's value, the rest in an overflow table keyed by user and follower, the value flagged; skewdb `Outlier {{ inline_cap: 1000 }}`. A profile read is the profile and the follower count: skewdb reads it with `get_projected(key, &[])`, the peers read the user's value and decode its head only. {}\n\n{}",
            followers::USERS,
            followers::WARM_READS,
            followers::OPS,
            turns_note("follows"),
            report::follower_table(&follower_rows),
        ));
    }
    let whole = format!(
        "Every engine: cache {} MiB (product pages: also {} MiB, which holds everything), every write durable. Sensors and followers: median of {RUNS} runs (the run with the median mixed rate; aggregates, ranges and profile reads alone: the median of their own); latencies: reads in the mixed runs, appends in the turns; beside a latency, above 1.00x is slower than skewdb, beside a rate, above 1.00x is faster. Cache hit ratio (over the mixed run; product pages: over a pass's views), as each engine counts it: skewdb page and chunk requests (not the record tier's: a read the tier answers asks the page cache for nothing, as a read fjall's memtable answers loads no block), redb read hits and misses (`cache_metrics` feature), fjall block loads (`metrics` feature; reads its memtable serves count none), SQLite pager hits and misses (`sqlite3_db_status`).\n\n{}\n\nWhole run {:.0} s.\n",
        CACHE_BYTES >> 20,
        LARGE_CACHE_BYTES >> 20,
        sections.join("\n\n"),
        started.elapsed().as_secs_f64()
    );
    print!("{whole}");
    if only.is_none()
        && workload.is_none()
        && record_percent.is_none()
        && products_count == PRODUCTS
        && view_count == data::VIEWS
        && let Err(e) = report::write(&whole, &rows).and_then(|()| {
            let date = report::today();
            let headline = report::headline(&rows, &sensor_rows, &follower_rows, &date);
            report::write_headline(&headline)
        })
    {
        eprintln!("skewdb-peers: {e}");
        std::process::exit(1);
    }
}
