//! Whether `skewdb stats`' what-if estimate predicts the live cache: skewdb alone on the
//! product pages, default options (the record tier's share included), the estimate taken
//! at one budget, then the same stream of reads run live at 0.25x to 4x that budget, each
//! in a cache of its own (the database reopened), warmed by the same stream first.
//!
//! `cargo run --release -p skewdb-peers -- --what-if` (`--products N`, `--views N`: reads
//! per phase).

use std::fmt::Write as _;
use std::path::Path;

use skewdb::{CacheStats, CollectionSpec, Db, ItemQuery, Layout, NewItem};

use crate::data;

/// One read in fifty is a page of reviews, as in the product pages' passes (20,000 pages
/// beside 1,000,000 views).
const PAGE_EVERY: usize = 50;

/// The reads of one phase: product ids, with whether each is a page of reviews.
fn reads(products: u64, count: usize, seed: u64) -> Vec<(u64, bool)> {
    data::views(products, count, seed)
        .into_iter()
        .enumerate()
        .map(|(i, id)| (id, i % PAGE_EVERY == PAGE_EVERY - 1))
        .collect()
}

fn open(dir: &Path, cache_bytes: usize, what_if: bool, sample: Option<usize>) -> Db {
    let mut options = crate::skew_options(cache_bytes).cache_what_if(what_if);
    if let Some(objects) = sample {
        options = options.cache_what_if_sample(objects);
    }
    Db::open(dir, options).expect("open skewdb")
}

fn load(dir: &Path, products_count: u64) {
    let db = open(dir, crate::CACHE_BYTES, false, None);
    db.create_collection(
        CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 5 }),
    )
    .expect("collection");
    let mut batch = db.batch();
    let mut stream = data::product_stream(products_count);
    for product in stream.by_ref() {
        let key = product.id.to_be_bytes();
        batch.put("products", key, &product.body);
        for review in &product.reviews {
            batch.push(
                "products",
                key,
                "reviews",
                NewItem::new(review.text.clone()).key(review.time),
            );
        }
        crate::engines::commit_when_full(&mut batch);
    }
    batch.commit().expect("load");
    db.compact().expect("compact");
}

/// Runs `reads` against `db`.
fn run_reads(db: &Db, reads: &[(u64, bool)]) {
    let products = db.collection("products").expect("collection");
    let query = ItemQuery::new().descending().limit(data::PAGE);
    for &(id, page) in reads {
        let key = id.to_be_bytes();
        if page {
            let items = products.items(key, "reviews", &query).expect("items");
            std::hint::black_box(items.expect("product").items.len());
        } else {
            let doc = products.get(key).expect("get").expect("product");
            std::hint::black_box(doc.body().len());
        }
    }
}

/// Opens the database with `cache_bytes`, warms it with `warm`, and returns the cache's
/// counters over `measured`; with `what_if`, the estimate on (`sample`: objects it keeps).
fn phase(
    dir: &Path,
    cache_bytes: usize,
    what_if: bool,
    sample: Option<usize>,
    reads: [&[(u64, bool)]; 2],
) -> (CacheStats, f64) {
    let [warm, measured] = reads;
    let db = open(dir, cache_bytes, what_if, sample);
    run_reads(&db, warm);
    db.reset_stats();
    let started = std::time::Instant::now();
    run_reads(&db, measured);
    let rate = measured.len() as f64 / started.elapsed().as_secs_f64();
    (db.cache_stats(), rate)
}

fn pages_ratio(stats: &CacheStats) -> f64 {
    let requests = stats.hot.requests + stats.cold.requests;
    let hits = stats.hot.hits + stats.cold.hits;
    hits as f64 / requests.max(1) as f64
}

/// The table: the estimate at each factor beside the live run at that budget.
/// With `sample`, the what-if sample keeps that many objects.
pub fn run(products_count: u64, count: usize, sample: Option<usize>) -> String {
    let dir = tempfile::tempdir().expect("temporary directory");
    let started = std::time::Instant::now();
    load(dir.path(), products_count);
    eprintln!("loaded in {:.0} s", started.elapsed().as_secs_f64());
    let warm = reads(products_count, count, 11);
    let measured = reads(products_count, count, 12);
    let budget = crate::CACHE_BYTES;
    let (estimated, estimated_rate) = phase(dir.path(), budget, true, sample, [&warm, &measured]);
    let objects = match sample {
        Some(objects) => format!("a sample of {objects} objects"),
        None => "the default sample".to_string(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "What-if against live: {products_count} products, skewdb default options, {} MiB, {count} reads to warm and {count} measured (one in {PAGE_EVERY} a page of reviews); {objects}, rate {:.3}.\n",
        budget >> 20,
        estimated.sample_rate
    );
    let _ = writeln!(
        out,
        "| factor | budget MiB | records: live / estimate | pages: live / estimate | total: live / estimate | error (points) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let mut live_rate = 0.0;
    for what_if in &estimated.what_if {
        let cache_bytes = (budget as f64 * what_if.factor) as usize;
        let (live, rate) = phase(dir.path(), cache_bytes, false, None, [&warm, &measured]);
        if what_if.factor == 1.0 {
            live_rate = rate;
        }
        let total = live.total().hit_ratio();
        let _ = writeln!(
            out,
            "| {:.2}x | {:.1} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:+.1} |",
            what_if.factor,
            cache_bytes as f64 / (1 << 20) as f64,
            live.records.hit_ratio(),
            what_if.record_hit_ratio,
            pages_ratio(&live),
            what_if.page_hit_ratio,
            total,
            what_if.hit_ratio,
            (what_if.hit_ratio - total) * 100.0
        );
        eprintln!(
            "factor {} done at {:.0} s",
            what_if.factor,
            started.elapsed().as_secs_f64()
        );
    }
    let _ = writeln!(
        out,
        "\nReads/s at {} MiB over the measured reads: {estimated_rate:.0} with the estimate on, {live_rate:.0} with it off.",
        budget >> 20
    );
    out
}
