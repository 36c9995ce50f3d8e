//! skewdb's product views under other settings, measured against each other in one run:
//! page sizes and record tier shares, each on a database of its own loaded the same way,
//! at both cache budgets. Written to `bench-results/variants.md`.

use std::fmt::Write as _;
use std::time::Instant;

use crate::engines::{self, Model};
use crate::{CACHE_BYTES, LARGE_CACHE_BYTES, RUNS, SETTINGS, Settings, Viewed, data};

/// The settings compared: the defaults first, then record tier shares at the default page
/// size, then smaller pages.
fn variants() -> Vec<Settings> {
    let mut all = vec![Settings::default()];
    for percent in [0, 20, 40, 60, 80, 90] {
        all.push(Settings {
            record_cache_percent: Some(percent),
            page_bytes: None,
        });
    }
    for (page, percent) in [(8 << 10, 40), (8 << 10, 90), (4 << 10, 40), (4 << 10, 90)] {
        all.push(Settings {
            record_cache_percent: Some(percent),
            page_bytes: Some(page),
        });
    }
    all
}

/// One variant's figures: each of its rounds, in the order of the variants.
struct Row {
    settings: Settings,
    rounds: Vec<Round>,
}

/// One round of one variant, on a database of its own.
struct Round {
    fits: Viewed,
    small: Viewed,
    disk_bytes: u64,
}

/// Every variant is measured this many times, the rounds taken in turns (the variants in
/// order, then again), so that a stretch of a noisy machine does not fall on one alone.
const ROUNDS: usize = 2;

pub fn run(products_count: u64) {
    let started = Instant::now();
    let products = data::products(products_count);
    let mut rows: Vec<Row> = variants()
        .into_iter()
        .map(|settings| Row {
            settings,
            rounds: Vec::new(),
        })
        .collect();
    for _ in 0..ROUNDS {
        for row in &mut rows {
            row.rounds
                .push(round(row.settings, &products, products_count));
        }
    }
    let text = format!(
        "skewdb `Subset {{ keep: 5 }}` product views ({products_count} products, as in the peers table) under other settings, each on a database of its own, in one run: {} views per pass, the median of {RUNS} passes, after {} views to warm the cache; {ROUNDS} rounds per variant, taken in turns (every variant, then every variant again), each on a new database; `vs defaults` compares the rounds' means, the latencies and misses are the last round's; `cargo run --release -p skewdb-peers -- --variants`.\n\n{}\nWhole run {:.0} s.\n",
        data::VIEWS,
        data::WARM_VIEWS,
        table(&rows),
        started.elapsed().as_secs_f64()
    );
    print!("{text}");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-results/variants.md");
    if let Err(e) = std::fs::write(&path, &text) {
        eprintln!("skewdb-peers: {}: {e}", path.display());
        std::process::exit(1);
    }
}

/// One round of `settings`: load, check, then the views with everything cached and with the
/// cache smaller than the data.
fn round(settings: Settings, products: &[data::Product], products_count: u64) -> Round {
    *SETTINGS.lock().expect("settings") = settings;
    let what = format!("skewdb Subset, {settings}");
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut store = engines::open("skewdb", Model::Native, dir.path(), LARGE_CACHE_BYTES);
    store.load(products);
    store.finish_load();
    crate::check_pages(store.as_mut(), products, &what);
    let fits = crate::view_passes(store.as_mut(), products_count, data::VIEWS, data::VIEWS);
    store.reopen(CACHE_BYTES);
    let small = crate::view_passes(store.as_mut(), products_count, data::VIEWS, data::VIEWS);
    eprintln!(
        "{what}: {:.0} views/s everything cached, {:.0} at {} MiB",
        fits.views_per_second,
        small.views_per_second,
        CACHE_BYTES >> 20
    );
    Round {
        fits,
        small,
        disk_bytes: store.disk_bytes(),
    }
}

/// A rate in each round, then the rounds' mean against the defaults' mean.
fn rates(row: &Row, base: &Row, rate: impl Fn(&Round) -> f64) -> (String, String) {
    let each: Vec<String> = row
        .rounds
        .iter()
        .map(|r| format!("{:.0}", rate(r)))
        .collect();
    let mean = |row: &Row| row.rounds.iter().map(&rate).sum::<f64>() / row.rounds.len() as f64;
    (each.join(", "), format!("{:.2}x", mean(row) / mean(base)))
}

fn table(rows: &[Row]) -> String {
    let Some(base) = rows.first() else {
        return String::new();
    };
    let mut out = format!(
        "| settings | views/s, {} MiB, each round | vs defaults | view p99 us | page misses per view | views/s, everything cached, each round | vs defaults | view p99 us | disk MiB |\n|---|---|---|---|---|---|---|---|---|\n",
        CACHE_BYTES >> 20
    );
    for row in rows {
        let last = row.rounds.last().expect("a round");
        let misses = last
            .small
            .misses_per_view
            .map_or("-".to_string(), |m| format!("{m:.3}"));
        let (small, small_ratio) = rates(row, base, |r| r.small.views_per_second);
        let (fits, fits_ratio) = rates(row, base, |r| r.fits.views_per_second);
        let _ = writeln!(
            out,
            "| {} | {small} | {small_ratio} | {:.1} | {misses} | {fits} | {fits_ratio} | {:.1} | {:.1} |",
            row.settings,
            last.small.view_latency.p99_us,
            last.fits.view_latency.p99_us,
            last.disk_bytes as f64 / (1 << 20) as f64,
        );
    }
    out
}
