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
    for (page, percent) in [(8 << 10, 40), (8 << 10, 80), (4 << 10, 40), (4 << 10, 80)] {
        all.push(Settings {
            record_cache_percent: Some(percent),
            page_bytes: Some(page),
        });
    }
    all
}

/// One variant's figures.
struct Row {
    settings: Settings,
    fits: Viewed,
    small: Viewed,
    disk_bytes: u64,
}

pub fn run(products_count: u64) {
    let started = Instant::now();
    let products = data::products(products_count);
    let mut rows = Vec::new();
    for settings in variants() {
        *SETTINGS.lock().expect("settings") = settings;
        let what = format!("skewdb Subset, {settings}");
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = engines::open("skewdb", Model::Native, dir.path(), LARGE_CACHE_BYTES);
        store.load(&products);
        crate::check_pages(store.as_mut(), &products, &what);
        let fits = crate::view_passes(store.as_mut(), products_count, data::VIEWS, RUNS);
        store.reopen(CACHE_BYTES);
        let small = crate::view_passes(store.as_mut(), products_count, data::VIEWS, RUNS);
        eprintln!(
            "{what}: {:.0} views/s everything cached, {:.0} at {} MiB",
            fits.views_per_second,
            small.views_per_second,
            CACHE_BYTES >> 20
        );
        rows.push(Row {
            settings,
            fits,
            small,
            disk_bytes: store.disk_bytes(),
        });
    }
    let text = format!(
        "skewdb `Subset {{ keep: 5 }}` product views ({products_count} products, as in the peers table) under other settings, each on a database of its own, in one run: {} views per pass, the median of {RUNS} passes, after {} views to warm the cache; `cargo run --release -p skewdb-peers -- --variants`.\n\n{}\nWhole run {:.0} s.\n",
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

fn table(rows: &[Row]) -> String {
    let Some(base) = rows.first() else {
        return String::new();
    };
    let mut out = format!(
        "| settings | views/s, {} MiB | vs defaults | view p99 us | page misses per view | views/s, everything cached | vs defaults | view p99 us | disk MiB |\n|---|---|---|---|---|---|---|---|---|\n",
        CACHE_BYTES >> 20
    );
    for row in rows {
        let misses = row
            .small
            .misses_per_view
            .map_or("-".to_string(), |m| format!("{m:.3}"));
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.2}x | {:.1} | {misses} | {:.0} | {:.2}x | {:.1} | {:.1} |",
            row.settings,
            row.small.views_per_second,
            row.small.views_per_second / base.small.views_per_second,
            row.small.view_latency.p99_us,
            row.fits.views_per_second,
            row.fits.views_per_second / base.fits.views_per_second,
            row.fits.view_latency.p99_us,
            row.disk_bytes as f64 / (1 << 20) as f64,
        );
    }
    out
}
