//! The process's memory follows the cache's budget, not the size of the data: a database
//! several times larger than its budget is loaded, compacted, opened again and read all
//! through, and the process's peak resident memory (every page it touched: heap and maps
//! of files alike, as a memory limit counts them) stays within the budget plus a fixed
//! allowance. One test in this file, so that the process's peak is this test's own.
//! `ARCHITECTURE.md`, "Memory", is the model this checks.

#![cfg(target_os = "linux")]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skewdb::{CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};
use skewdb_tests::{process_memory as memory, reset_memory_peak as reset_peak};

/// The cache's budget.
const BUDGET: usize = 16 << 20;
/// What the process may hold beyond the budget: the test harness and the binary, the batch
/// being committed, pages changed since the last checkpoint, buffers of a compaction step,
/// and what the allocator keeps of what was freed.
const ALLOWANCE: u64 = 48 << 20;
/// The database is at least this many times the budget plus the allowance, so that holding
/// all of it, or any sizeable part, fails the test.
const DATA_OVER_LIMIT: u64 = 2;

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("database directory")
        .map(|entry| entry.expect("entry").metadata().expect("metadata").len())
        .sum()
}

fn options() -> Options {
    Options::new().cache_bytes(BUDGET)
}

/// Product pages: a body, and reviews in a Subset of 5 whose counts follow a heavy tail.
fn load(db: &Db, products: u64, rng: &mut StdRng) {
    db.create_collection(
        CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 5 }),
    )
    .expect("create");
    let mut batch = db.batch();
    for id in 0..products {
        let key = id.to_be_bytes();
        batch.put("products", key, vec![b'b'; 200 + (id % 100) as usize]);
        // Pareto-like: most have a few reviews, one in a hundred has hundreds.
        let reviews = match rng.random_range(0..100) {
            0 => rng.random_range(100..600),
            _ => rng.random_range(1..12),
        };
        for t in 0..reviews {
            let text = vec![b'r'; rng.random_range(60..200)];
            batch.push(
                "products",
                key,
                "reviews",
                NewItem::new(text).key(t).value(t as f64),
            );
        }
        if batch.len() >= 5_000 {
            batch.commit().expect("load");
        }
    }
    batch.commit().expect("load");
}

#[test]
fn memory_stays_within_the_budget_on_data_larger_than_it() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let limit = BUDGET as u64 + ALLOWANCE;
    let products = 160_000;
    let mut rng = StdRng::seed_from_u64(47);
    let mut peaks = Vec::new();

    reset_peak();
    {
        let db = Db::open(dir.path(), options()).expect("open");
        load(&db, products, &mut rng);
        peaks.push(("load", memory().0));
        reset_peak();
        db.compact().expect("compact");
        peaks.push(("compaction", memory().0));
    }
    let data = dir_bytes(dir.path());
    assert!(
        data >= DATA_OVER_LIMIT * limit,
        "the database ({data} bytes) is not {DATA_OVER_LIMIT} times the limit ({limit} bytes)"
    );

    reset_peak();
    let db = Db::open(dir.path(), options()).expect("reopen");
    peaks.push(("recovery", memory().0));
    let products_handle = db.collection("products").expect("collection");

    // Every parent, then every history, then random views: the whole database read.
    reset_peak();
    let mut seen = 0u64;
    for entry in products_handle.scan(..).expect("scan") {
        let document = entry.expect("scanned");
        assert!(document.array("reviews").expect("reviews").total >= 1);
        seen += 1;
    }
    assert_eq!(seen, products);
    let mut items = 0u64;
    for id in 0..products {
        let page = products_handle
            .items(id.to_be_bytes(), "reviews", &ItemQuery::new())
            .expect("items")
            .expect("product");
        items += page.items.len() as u64;
    }
    assert!(items > products, "histories read: {items}");
    for _ in 0..100_000 {
        let id: u64 = rng.random_range(0..products);
        let document = products_handle.get(id.to_be_bytes()).expect("get");
        assert!(document.is_some(), "product {id}");
    }
    peaks.push(("reads", memory().0));
    drop(products_handle);
    drop(db);

    let report: Vec<String> = peaks
        .iter()
        .map(|(phase, peak)| format!("{phase} {} MiB", peak >> 20))
        .collect();
    eprintln!(
        "budget {} MiB, data {} MiB, peaks: {}",
        BUDGET >> 20,
        data >> 20,
        report.join(", ")
    );
    for (phase, peak) in peaks {
        assert!(
            peak <= limit,
            "{phase}: peak resident memory {} MiB over the budget plus allowance, {} MiB ({})",
            peak >> 20,
            limit >> 20,
            report.join(", ")
        );
    }
}
