//! A batch larger than the cache's budget is built and committed in bounded memory: its
//! operations past the staging share go to a scratch file beside the database, its cold
//! chunks to their segment as they fill, so that a load in one large transaction (as an
//! import tool or an ORM's bulk insert makes) peaks at the budget plus a fixed allowance,
//! not at the size of the batch; and once it is committed the process gives back what it
//! staged. One test in this file, so that the process's peak is this test's own.
//! `ARCHITECTURE.md`, "Memory", is the model this checks.

#![cfg(target_os = "linux")]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skewdb::{CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};
use skewdb_tests::{process_memory as memory, reset_memory_peak as reset_peak};

/// The cache's budget.
const BUDGET: usize = 16 << 20;
/// What the process may hold beyond the budget, as in `memory.rs`: the harness and the
/// binary, pages changed since the last checkpoint, what the allocator keeps.
const ALLOWANCE: u64 = 48 << 20;
/// The staging share the engine documents for a batch being built and committed (an
/// eighth of the budget for queued operations, the cold chunks not yet written, the
/// scratch file's buffers).
const STAGING: u64 = (BUDGET as u64 / 8) + (8 << 20);

/// Product pages in one transaction of `products` products, largest first (as a harness
/// that sorts by review count loads them): product `n` has about `first / (n + 1)` reviews,
/// and at least a few. Returns each product's count of reviews.
fn load_in_one_transaction(db: &Db, products: u64, first: u64, rng: &mut StdRng) -> Vec<u64> {
    let mut txn = db.transaction();
    let mut reviews = Vec::new();
    for id in 0..products {
        let key = id.to_be_bytes();
        txn.put("products", key, vec![b'b'; 300]);
        let count = first / (id + 1) + rng.random_range(1..12);
        for t in 0..count {
            let text = vec![b'a' + (t % 26) as u8; rng.random_range(60..200)];
            txn.push("products", key, "reviews", NewItem::new(text).key(t as i64));
        }
        reviews.push(count);
    }
    txn.commit().expect("the load's transaction");
    reviews
}

/// Every product is there with every review, the largest one's in order.
fn check(db: &Db, reviews: &[u64]) {
    let handle = db.collection("products").expect("collection");
    for (id, count) in reviews.iter().enumerate() {
        let document = handle
            .get((id as u64).to_be_bytes())
            .expect("get")
            .expect("loaded");
        assert_eq!(
            document.array("reviews").expect("reviews").total,
            *count,
            "{id}"
        );
    }
    let largest = handle
        .items(
            0u64.to_be_bytes(),
            "reviews",
            &ItemQuery::new().limit(usize::MAX),
        )
        .expect("items")
        .expect("product 0");
    let keys: Vec<i64> = largest.items.iter().map(|item| item.key).collect();
    assert_eq!(keys, (0..reviews[0] as i64).collect::<Vec<_>>());
}

#[test]
fn a_transaction_larger_than_the_budget_commits_in_bounded_memory() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let limit = BUDGET as u64 + ALLOWANCE + STAGING;
    let mut rng = StdRng::seed_from_u64(66);
    let db = Db::open(dir.path(), Options::new().cache_bytes(BUDGET)).expect("open");
    db.create_collection(
        CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 10 }),
    )
    .expect("create");

    // The shape of a load sorted by popularity: 1,000 products in the transaction, the
    // first with most of its reviews.
    let (products, first) = (1_000, 160_000);
    reset_peak();
    let counts = load_in_one_transaction(&db, products, first, &mut rng);
    let (load_peak, after_load) = memory();
    let reviews: u64 = counts.iter().sum();
    let payload = reviews * 130;
    check(&db, &counts);
    drop(db);

    eprintln!(
        "budget {} MiB, one transaction of about {} MiB of payload ({products} products, \
         {reviews} reviews): peak {} MiB, resident after the commit {} MiB, limit {} MiB",
        BUDGET >> 20,
        payload >> 20,
        load_peak >> 20,
        after_load >> 20,
        limit >> 20
    );
    assert!(
        payload > 2 * limit,
        "the transaction ({} MiB) is not twice the limit",
        payload >> 20
    );
    assert!(
        load_peak <= limit,
        "peak resident memory {} MiB over the budget plus allowance and staging share, {} MiB",
        load_peak >> 20,
        limit >> 20
    );
    assert!(
        after_load <= BUDGET as u64 + ALLOWANCE,
        "resident memory {} MiB after the commit: what the load staged was not given back",
        after_load >> 20
    );
}
