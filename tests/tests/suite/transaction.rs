//! Transactions: reads at one version plus their own writes, atomic serializable commits,
//! conflicts refused and retried.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use skewdb::{CollectionSpec, Db, Durability, Error, ItemQuery, Layout, NewItem, Options};

fn open(dir: &std::path::Path) -> Db {
    let options = Options::new()
        .page_bytes(4096)
        .segment_bytes(64 * 1024)
        .checkpoint_bytes(64 * 1024)
        .durability(Durability::Buffered);
    let db = Db::open(dir, options).unwrap();
    db.create_collection(CollectionSpec::new("counters"))
        .unwrap();
    db.create_collection(
        CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 2 }),
    )
    .unwrap();
    db
}

fn body_number(document: Option<skewdb::Document>) -> u64 {
    document.map_or(0, |d| {
        std::str::from_utf8(d.body()).unwrap().parse().unwrap()
    })
}

#[test]
fn a_counter_incremented_by_several_threads_loses_no_increment() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let conflicts = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (db, conflicts) = (db.clone(), conflicts.clone());
            std::thread::spawn(move || {
                for _ in 0..100 {
                    loop {
                        let mut txn = db.transaction();
                        let count =
                            body_number(txn.collection("counters").unwrap().get("n").unwrap());
                        txn.put("counters", "n", (count + 1).to_string());
                        match txn.commit() {
                            Ok(()) => break,
                            Err(Error::Conflict { .. }) => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(error) => panic!("{error}"),
                        }
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let count = body_number(db.collection("counters").unwrap().get("n").unwrap());
    assert_eq!(count, 400, "every increment counted");
    eprintln!("{} conflicts retried", conflicts.load(Ordering::Relaxed));
}

#[test]
fn a_transaction_reads_its_own_writes_across_every_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut batch = db.batch();
    batch.put("products", "p", "kettle");
    for key in 0..3 {
        batch.push(
            "products",
            "p",
            "reviews",
            NewItem::new("old").key(key).value(1.0),
        );
    }
    batch.commit().unwrap();

    let mut txn = db.transaction();
    // Pushes past the window send items to cold history the transaction alone holds.
    for key in 10..15 {
        txn.push(
            "products",
            "p",
            "reviews",
            NewItem::new("new").key(key).value(5.0),
        );
    }
    txn.put("products", "q", "teapot");
    let products = txn.collection("products").unwrap();
    let document = products.get("p").unwrap().unwrap();
    let reviews = document.array("reviews").unwrap();
    assert_eq!(reviews.total, 8);
    assert_eq!(
        reviews.inline.iter().map(|i| i.key).collect::<Vec<_>>(),
        [13, 14]
    );
    let all = products
        .items("p", "reviews", &ItemQuery::new())
        .unwrap()
        .unwrap();
    let keys: Vec<i64> = all.items.iter().map(|i| i.key).collect();
    assert_eq!(keys, [0, 1, 2, 10, 11, 12, 13, 14]);
    let newest = products
        .items("p", "reviews", &ItemQuery::new().descending().limit(3))
        .unwrap()
        .unwrap();
    assert_eq!(
        newest.items.iter().map(|i| i.key).collect::<Vec<_>>(),
        [14, 13, 12]
    );
    let summary = products.summary("p", "reviews", 5..).unwrap().unwrap();
    assert_eq!((summary.count, summary.sum), (5, 25.0));
    let scanned: Vec<_> = products.scan(..).unwrap().map(|d| d.unwrap()).collect();
    assert_eq!(scanned.len(), 2);
    assert_eq!(scanned[1].body(), b"teapot");
    // Nobody else sees them before the commit.
    let outside = db.collection("products").unwrap();
    assert_eq!(
        outside
            .get("p")
            .unwrap()
            .unwrap()
            .array("reviews")
            .unwrap()
            .total,
        3
    );
    assert!(outside.get("q").unwrap().is_none());
    txn.delete("products", "q");
    assert!(
        txn.collection("products")
            .unwrap()
            .get("q")
            .unwrap()
            .is_none()
    );
    txn.commit().unwrap();
    let after = outside
        .items("p", "reviews", &ItemQuery::new())
        .unwrap()
        .unwrap();
    assert_eq!(after.items.len(), 8);
    assert!(outside.get("q").unwrap().is_none());
}

#[test]
fn a_change_to_what_it_read_is_a_conflict_and_nothing_applies() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut batch = db.batch();
    batch
        .put("products", "p", "kettle")
        .put("products", "other", "cup");
    batch.commit().unwrap();

    // Reading a parent's items, then another commit pushes to it.
    let mut txn = db.transaction();
    txn.collection("products")
        .unwrap()
        .items("p", "reviews", &ItemQuery::new())
        .unwrap();
    txn.put("products", "p", "changed by the transaction");
    let mut other = db.batch();
    other.push("products", "p", "reviews", NewItem::new("meanwhile"));
    other.commit().unwrap();
    let error = txn.commit().unwrap_err();
    assert!(
        matches!(&error, Error::Conflict { what } if what.contains("\"p\"")),
        "{error}"
    );
    assert_eq!(error.kind(), "conflict");
    let p = db
        .collection("products")
        .unwrap()
        .get("p")
        .unwrap()
        .unwrap();
    assert_eq!(
        p.body(),
        b"kettle",
        "the refused transaction applied nothing"
    );

    // A change to a parent it did not read is no conflict.
    let mut txn = db.transaction();
    txn.collection("products").unwrap().get("p").unwrap();
    txn.put("products", "p", "mine");
    let mut other = db.batch();
    other.put("products", "other", "saucer");
    other.commit().unwrap();
    txn.commit().unwrap();

    // Repeatable reads: the transaction keeps reading its starting state.
    let txn = db.transaction();
    let products = txn.collection("products").unwrap();
    assert_eq!(products.get("p").unwrap().unwrap().body(), b"mine");
    let mut other = db.batch();
    other.put("products", "p", "later");
    other.commit().unwrap();
    assert_eq!(products.get("p").unwrap().unwrap().body(), b"mine");
    drop(products);
    // A transaction that only read, dropped or committed, writes nothing.
    txn.commit().unwrap();
    assert_eq!(
        db.collection("products")
            .unwrap()
            .get("p")
            .unwrap()
            .unwrap()
            .body(),
        b"later"
    );
}

#[test]
fn a_scanned_range_conflicts_with_a_parent_put_into_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut batch = db.batch();
    batch.put("counters", "b", "1").put("counters", "d", "1");
    batch.commit().unwrap();

    let scan_then_write = |inserted: &str| {
        let mut txn = db.transaction();
        let total: u64 = txn
            .collection("counters")
            .unwrap()
            .scan("a".."e")
            .unwrap()
            .map(|d| body_number(Some(d.unwrap())))
            .sum();
        txn.put("counters", "total", total.to_string());
        let mut other = db.batch();
        other.put("counters", inserted, "1");
        other.commit().unwrap();
        txn.commit()
    };
    // A phantom: a new parent inside the scanned range.
    assert!(matches!(scan_then_write("c"), Err(Error::Conflict { .. })));
    // Outside it: none.
    scan_then_write("x").unwrap();
    // Writes alone never conflict.
    let mut txn = db.transaction();
    txn.put("counters", "b", "2");
    let mut other = db.batch();
    other.put("counters", "b", "3");
    other.commit().unwrap();
    txn.commit().unwrap();
    assert_eq!(
        body_number(db.collection("counters").unwrap().get("b").unwrap()),
        2
    );
}

#[test]
fn a_transaction_refuses_what_a_batch_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut txn = db.transaction();
    txn.push("products", "p", "nosuch", NewItem::new("x"));
    // Its own view cannot be built: the read says why.
    let read = txn.collection("products").unwrap().get("p");
    assert!(matches!(read, Err(Error::UnknownField { .. })));
    assert!(matches!(txn.commit(), Err(Error::UnknownField { .. })));
    assert!(matches!(
        db.transaction().collection("nosuch"),
        Err(Error::UnknownCollection { .. })
    ));
}

#[test]
fn a_transaction_reads_back_the_cold_chunks_its_writes_made() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut txn = db.transaction();
    // Far more history than a tail record holds at 4 KiB pages: the pushes seal chunks,
    // which only the transaction's own view has.
    for key in 0..300 {
        let payload = format!("review {key} with enough words to fill a tail quickly");
        txn.push(
            "products",
            "p",
            "reviews",
            NewItem::new(payload).key(key).value(key as f64),
        );
    }
    let products = txn.collection("products").unwrap();
    let all = products
        .items("p", "reviews", &ItemQuery::new())
        .unwrap()
        .unwrap();
    assert_eq!(
        all.items.iter().map(|i| i.key).collect::<Vec<_>>(),
        (0..300).collect::<Vec<_>>()
    );
    let middle = products.summary("p", "reviews", 100..200).unwrap().unwrap();
    assert_eq!(middle.count, 100);
    assert_eq!(middle.sum, (100..200).sum::<i64>() as f64);
    txn.commit().unwrap();
    let committed = db.collection("products").unwrap();
    let all = committed
        .items("p", "reviews", &ItemQuery::new())
        .unwrap()
        .unwrap();
    assert_eq!(all.items.len(), 300);
    assert!(
        committed
            .get("p")
            .unwrap()
            .unwrap()
            .array("reviews")
            .unwrap()
            .has_overflow
    );
    db.verify().unwrap();
}

/// A transaction whose writes outgrow what a batch keeps in memory (an eighth of the cache's
/// budget, at least 1 MiB: the older ones go to a scratch file beside the database) reads
/// them back before its commit, removals included, counts them all, commits them whole, and
/// leaves no file behind; a batch of the same size dropped uncommitted leaves none either.
#[test]
fn a_transaction_past_its_memory_share_reads_its_own_writes_and_commits_them() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    // A cache of 1 MiB: the share is the least, 1 MiB, which the transaction passes three
    // times over.
    let db = Db::open(dir.path(), Options::new().cache_bytes(1 << 20)).unwrap();
    let files = |dir: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let before = files(dir.path());
    let items = 12_000i64;
    let mut txn = db.transaction();
    txn.put("products", b"p1", b"first");
    for key in 0..items {
        let payload = format!("{key:0>200}");
        txn.push("products", b"p1", "reviews", NewItem::new(payload).key(key));
    }
    txn.remove("products", b"p1", "reviews", 17);
    txn.put("counters", b"c", b"7");
    assert_eq!(txn.len(), items as usize + 3);

    let expected: Vec<i64> = (0..items).filter(|key| *key != 17).collect();
    let keys_of =
        |page: skewdb::ItemPage| -> Vec<i64> { page.items.iter().map(|i| i.key).collect() };
    {
        let in_txn = txn.collection("products").unwrap();
        let page = in_txn
            .items(b"p1", "reviews", &ItemQuery::new().limit(usize::MAX))
            .unwrap()
            .unwrap();
        assert_eq!(keys_of(page), expected);
        let document = in_txn.get(b"p1").unwrap().unwrap();
        assert_eq!(document.body(), b"first");
        assert_eq!(document.array("reviews").unwrap().total, items as u64 - 1);
        let counters = txn.collection("counters").unwrap();
        assert_eq!(body_number(counters.get(b"c").unwrap()), 7);
    }
    // Nothing of it is visible outside before the commit.
    assert!(
        db.collection("products")
            .unwrap()
            .get(b"p1")
            .unwrap()
            .is_none()
    );
    txn.commit().unwrap();

    let products = db.collection("products").unwrap();
    let page = products
        .items(b"p1", "reviews", &ItemQuery::new().limit(usize::MAX))
        .unwrap()
        .unwrap();
    assert_eq!(keys_of(page), expected);
    assert_eq!(
        body_number(db.collection("counters").unwrap().get(b"c").unwrap()),
        7
    );

    let mut dropped = db.batch();
    for key in 0..items {
        dropped.push(
            "products",
            b"p2",
            "reviews",
            NewItem::new([b'x'; 200]).key(key),
        );
    }
    drop(dropped);
    assert!(products.get(b"p2").unwrap().is_none());
    db.checkpoint().unwrap();
    let after = files(dir.path());
    assert!(
        after.iter().all(|name| before.contains(name)
            || name.starts_with("hot-")
            || name.starts_with("pages-")
            || name.starts_with("cold-")),
        "{before:?} -> {after:?}"
    );
    drop(products);
    drop(db);
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let page = db
        .collection("products")
        .unwrap()
        .items(b"p1", "reviews", &ItemQuery::new().limit(usize::MAX))
        .unwrap()
        .unwrap();
    assert_eq!(keys_of(page), expected);
    db.verify().unwrap();
}
