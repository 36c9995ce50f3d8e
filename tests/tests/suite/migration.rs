//! Layout changes on a live database (`Alteration::set_layout`): every read answers what it
//! answered before, for every pair of layouts, while the maintenance thread moves parents,
//! while writes move the parents they touch, across a cancel, a reopen and power losses.

use std::sync::Arc;
use std::time::{Duration, Instant};

use skewdb::testing::{SimStorage, Storage};
use skewdb::{
    Alteration, CollectionSpec, Db, Durability, Error, ItemQuery, Layout, NewItem, Options, Order,
};

const LAYOUTS: [Layout; 7] = [
    Layout::Embed,
    Layout::Reference,
    Layout::Subset { keep: 3 },
    Layout::Subset { keep: 7 },
    Layout::Outlier { inline_cap: 4 },
    Layout::Bucket {
        max_items: 5,
        span: Some(100),
    },
    Layout::Bucket {
        max_items: 3,
        span: None,
    },
];

const PARENTS: usize = 10;

fn parent(p: usize) -> String {
    format!("p{p:02}")
}

/// Small pages and segments, no maintenance thread: the tests say when parents move.
fn options() -> Options {
    Options::new()
        .page_bytes(4096)
        .segment_bytes(64 * 1024)
        .cache_bytes(256 * 1024)
        .background(false)
}

/// Parent `p` gets `p * 6` items, keys out of order (some late, some equal), values that are
/// halves (so that every sum is exact in any grouping, and summaries compare to the bit),
/// a second measure on some; then a few removed.
fn load(db: &Db, layout: Layout) {
    let spec = CollectionSpec::new("c").array_with_measures("a", layout, ["v", "w"]);
    db.create_collection(spec).unwrap();
    for p in 0..PARENTS {
        let mut batch = db.batch();
        batch.put("c", parent(p), format!("body {p}"));
        for n in 0..(p * 6) as i64 {
            let key = (n * 37) % 101 * 10 + p as i64;
            let mut item = NewItem::new(format!("{p}:{n}"))
                .key(key)
                .value(n as f64 * 0.5);
            if n % 3 == 0 {
                item = item.measure("w", -(n as f64));
            }
            batch.push("c", parent(p), "a", item);
        }
        batch.commit().unwrap();
    }
    let mut batch = db.batch();
    for p in (2..PARENTS).step_by(3) {
        // The key of item 2.
        batch.remove("c", parent(p), "a", 740 + p as i64);
    }
    batch.commit().unwrap();
}

/// What every read of every parent answers, in words: the body, the array's total and
/// whole summary (every measure, sums as bits), the items both ways and a page of them, and
/// summaries over two ranges.
fn answers(db: &Db) -> Vec<String> {
    let c = db.collection("c").unwrap();
    let mut out = Vec::new();
    let summary = |s: skewdb::Summary| {
        let measures: Vec<String> = (0..2)
            .map(|m| {
                let m = s.measure(m);
                format!("{} {:x} {:?} {:?}", m.count, m.sum.to_bits(), m.min, m.max)
            })
            .collect();
        format!(
            "{} keys {:?}..{:?} [{}]",
            s.items,
            s.min_key,
            s.max_key,
            measures.join("; ")
        )
    };
    for p in 0..PARENTS {
        let key = parent(p);
        let doc = c.get(&key).unwrap().unwrap();
        let array = doc.array("a").unwrap();
        out.push(format!("{key} body {:?} total {}", doc.body(), array.total));
        out.push(format!("{key} whole {}", summary(array.summary.clone())));
        for order in [Order::Ascending, Order::Descending] {
            let page = c
                .items(&key, "a", &ItemQuery::new().order(order))
                .unwrap()
                .unwrap();
            let items: Vec<String> = page
                .items
                .iter()
                .map(|i| format!("{} {:?} {:?} {:?}", i.key, i.value, i.measure(1), i.payload))
                .collect();
            out.push(format!("{key} {order:?} {}", items.join(", ")));
        }
        let first = c
            .items(&key, "a", &ItemQuery::new().limit(4))
            .unwrap()
            .unwrap();
        out.push(format!(
            "{key} first {:?}",
            first.items.iter().map(|i| i.key).collect::<Vec<_>>()
        ));
        for range in [200..=600, 0..=95] {
            let s = c.summary(&key, "a", range.clone()).unwrap().unwrap();
            out.push(format!("{key} {range:?} {}", summary(s)));
        }
    }
    out
}

/// How many items parent `key`'s array carries inline.
fn inline_len(db: &Db, key: &str) -> usize {
    let doc = db.collection("c").unwrap().get(key).unwrap().unwrap();
    doc.array("a").unwrap().inline.len()
}

fn migrating(db: &Db) -> usize {
    db.stats().unwrap().migrations.len()
}

#[test]
fn every_layout_pair_moves_with_every_read_unchanged() {
    for from in LAYOUTS {
        for to in LAYOUTS {
            if from == to {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let db = Db::open(dir.path(), options()).unwrap();
            load(&db, from);
            let before = answers(&db);
            let c = db
                .alter_collection("c", Alteration::new().set_layout("a", to))
                .unwrap();
            assert_eq!(c.array("a").unwrap().layout(), to);
            assert_eq!(migrating(&db), 1, "{from:?} -> {to:?}");
            assert!(
                answers(&db) == before,
                "{from:?} -> {to:?}: reads changed at once"
            );
            // A write moves its parent first, then applies under the new layout.
            let mut batch = db.batch();
            batch.push("c", parent(4), "a", NewItem::new("late").key(5).value(0.5));
            batch.commit().unwrap();
            let mut after_write = before.clone();
            let written = answers(&db);
            assert_ne!(written, after_write);
            // Only parent 4's answers changed.
            after_write.retain(|line| !line.starts_with("p04"));
            let others: Vec<String> = written
                .iter()
                .filter(|l| !l.starts_with("p04"))
                .cloned()
                .collect();
            assert!(
                others == after_write,
                "{from:?} -> {to:?}: other parents changed"
            );
            // The maintenance steps (here, compaction's) move the rest and end the migration.
            db.compact().unwrap();
            assert_eq!(migrating(&db), 0, "{from:?} -> {to:?}");
            assert!(
                answers(&db) == written,
                "{from:?} -> {to:?}: reads changed by the move"
            );
            db.verify().unwrap();
            // Where items live now is the new layout's: an Embed array holds every item
            // inline, a Reference none.
            let doc = c.get(parent(9)).unwrap().unwrap();
            let inline = doc.array("a").unwrap().inline.len();
            match to {
                Layout::Embed => assert_eq!(inline, 54),
                Layout::Reference => assert_eq!(inline, 0),
                Layout::Subset { keep } => assert_eq!(inline, keep as usize),
                Layout::Outlier { inline_cap } => assert_eq!(inline, inline_cap as usize),
                Layout::Bucket { .. } => assert!(inline <= 5),
            }
            drop(c);
            drop(db);
            let db = Db::open(dir.path(), options()).unwrap();
            assert!(
                answers(&db) == written,
                "{from:?} -> {to:?}: reads changed by a reopen"
            );
            db.verify().unwrap();
        }
    }
}

/// Setting the layout a migration moves from cancels it: parents already moved move back.
/// A third layout while one runs is refused.
#[test]
fn a_migration_set_back_moves_its_parents_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    load(&db, Layout::Embed);
    let before = answers(&db);
    let subset = Layout::Subset { keep: 2 };
    db.alter_collection("c", Alteration::new().set_layout("a", subset))
        .unwrap();
    // Some parents move (by writes), then the move is set back.
    let mut batch = db.batch();
    batch.remove("c", parent(3), "a", -1);
    batch.remove("c", parent(7), "a", -1);
    batch.commit().unwrap();
    assert_eq!(inline_len(&db, &parent(7)), 2);
    let third = Alteration::new().set_layout("a", Layout::Reference);
    assert!(matches!(
        db.alter_collection("c", third),
        Err(Error::InvalidSchema { .. })
    ));
    db.alter_collection("c", Alteration::new().set_layout("a", Layout::Embed))
        .unwrap();
    assert!(answers(&db) == before);
    db.compact().unwrap();
    assert_eq!(migrating(&db), 0);
    assert!(answers(&db) == before);
    assert_eq!(inline_len(&db, &parent(7)), 42);
    db.verify().unwrap();
}

/// Readers on two threads compare every answer with the answers from before, while the
/// maintenance thread moves every parent.
#[test]
fn readers_during_a_background_migration_see_the_same_answers() {
    for (from, to) in [
        (Layout::Embed, Layout::Subset { keep: 3 }),
        (Layout::Reference, Layout::Outlier { inline_cap: 2 }),
        (
            Layout::Bucket {
                max_items: 5,
                span: Some(100),
            },
            Layout::Embed,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(dir.path(), Options::new().page_bytes(4096)).unwrap());
        load(&db, from);
        let before = Arc::new(answers(&db));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (db, before) = (db.clone(), before.clone());
                std::thread::spawn(move || {
                    let mut reads = 0;
                    while migrating(&db) > 0 || reads == 0 {
                        assert!(answers(&db) == *before, "a read changed during the move");
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        db.alter_collection("c", Alteration::new().set_layout("a", to))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while migrating(&db) > 0 {
            assert!(
                Instant::now() < deadline,
                "{from:?} -> {to:?} did not finish"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        for reader in readers {
            assert!(reader.join().unwrap() > 0);
        }
        assert!(answers(&db) == *before);
        db.verify().unwrap();
    }
}

/// Power lost at every sync of a migration (its batches and its end) leaves a database that
/// reads as before, and whose next open finishes the move.
#[test]
fn a_power_loss_at_any_sync_of_a_migration_reads_the_same_and_finishes() {
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let options = options().durability(Durability::Immediate);
    let db = Db::open_with_storage(storage, options.clone()).unwrap();
    load(&db, Layout::Subset { keep: 2 });
    let before = answers(&db);
    sim.capture_syncs(true);
    db.alter_collection("c", Alteration::new().set_layout("a", Layout::Reference))
        .unwrap();
    db.compact().unwrap();
    drop(db);
    sim.capture_syncs(false);
    let snapshots = sim.take_captured();
    assert!(snapshots.len() > 3, "{} syncs", snapshots.len());
    for (at, snapshot) in snapshots.iter().enumerate() {
        let image: Arc<dyn Storage> = Arc::new(snapshot.crash_image(at as u64));
        let db = Db::open_with_storage(image, options.clone()).unwrap();
        assert!(answers(&db) == before, "sync {at}");
        db.verify().unwrap();
        db.compact().unwrap();
        assert_eq!(migrating(&db), 0, "sync {at}");
        assert!(answers(&db) == before, "sync {at}, finished");
    }
}

/// A parent whose array cannot fit the new layout (an `Embed` past the record limit) is not
/// moved, and said so; the others are; a write to it is refused, not truncated.
#[test]
fn a_parent_too_large_for_the_new_layout_is_refused_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let spec = CollectionSpec::new("c").array("a", Layout::Reference);
    db.create_collection(spec).unwrap();
    for n in 0..18 {
        let mut batch = db.batch();
        batch.push("c", "huge", "a", NewItem::new(vec![b'x'; 1 << 20]).key(n));
        batch.push("c", "small", "a", NewItem::new("s").key(n));
        batch.commit().unwrap();
    }
    db.alter_collection("c", Alteration::new().set_layout("a", Layout::Embed))
        .unwrap();
    db.compact().unwrap();
    let migrations = db.stats().unwrap().migrations;
    assert_eq!(migrations.len(), 1, "the migration stays open");
    let refused: Vec<&[u8]> = migrations[0].refused.iter().map(|k| k.as_ref()).collect();
    assert_eq!(refused, [b"huge"]);
    assert_eq!(migrations[0].parents_moved, 1);
    let c = db.collection("c").unwrap();
    assert_eq!(inline_len(&db, "small"), 18);
    assert_eq!(
        c.items("huge", "a", &ItemQuery::new())
            .unwrap()
            .unwrap()
            .items
            .len(),
        18
    );
    let mut batch = db.batch();
    batch.push("c", "huge", "a", NewItem::new("one more"));
    assert!(matches!(batch.commit(), Err(Error::RecordTooLarge { .. })));
    // Set back, it ends.
    db.alter_collection("c", Alteration::new().set_layout("a", Layout::Reference))
        .unwrap();
    db.compact().unwrap();
    assert_eq!(migrating(&db), 0);
    db.verify().unwrap();
}

/// A migration left open by a refused parent does not keep the walks from the next one.
#[test]
fn a_migration_with_refused_parents_lets_the_next_finish() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let spec = CollectionSpec::new("c")
        .array("a", Layout::Reference)
        .array("b", Layout::Embed);
    db.create_collection(spec).unwrap();
    for n in 0..18 {
        let mut batch = db.batch();
        batch.push("c", "huge", "a", NewItem::new(vec![b'x'; 1 << 20]).key(n));
        batch.push("c", "small", "b", NewItem::new("s").key(n));
        batch.commit().unwrap();
    }
    let alteration = Alteration::new()
        .set_layout("a", Layout::Embed)
        .set_layout("b", Layout::Subset { keep: 2 });
    db.alter_collection("c", alteration).unwrap();
    db.compact().unwrap();
    let migrations = db.stats().unwrap().migrations;
    assert_eq!(migrations.len(), 1, "{migrations:?}");
    assert_eq!(migrations[0].field, "a");
    let doc = db.collection("c").unwrap().get("small").unwrap().unwrap();
    assert_eq!(doc.array("b").unwrap().inline.len(), 2);
    db.verify().unwrap();
}

/// `Db::wait_for_migrations` returns once every parent has moved, with or without the
/// maintenance thread (the waiting thread runs the steps), and the progress `Db::stats`
/// shows meanwhile only grows, never reads as a walk not begun once one has, and reaches
/// its total; a parent that cannot move leaves its migration open, and the wait says so.
#[test]
fn a_wait_for_migrations_ends_with_every_parent_moved_and_progress_only_grows() {
    for background in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::new().background(background)).unwrap();
        db.create_collection(CollectionSpec::new("c").array("a", Layout::Embed))
            .unwrap();
        const PARENTS: u64 = 12_000;
        for start in (0..PARENTS).step_by(3_000) {
            let mut batch = db.batch();
            for parent in start..start + 3_000 {
                for key in 0..3 {
                    batch.push("c", parent.to_be_bytes(), "a", NewItem::new("x").key(key));
                }
            }
            batch.commit().unwrap();
        }
        let subset = Layout::Subset { keep: 1 };
        db.alter_collection("c", Alteration::new().set_layout("a", subset))
            .unwrap();
        let sampler = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut seen: Vec<(u64, u64)> = Vec::new();
                loop {
                    let migrations = db.stats().unwrap().migrations;
                    let Some(first) = migrations.first() else {
                        return seen;
                    };
                    seen.push((first.parents_walked, first.parents_total));
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        let open = db.wait_for_migrations().unwrap();
        assert!(open.is_empty(), "{open:?}");
        assert!(db.stats().unwrap().migrations.is_empty());
        let seen = sampler.join().unwrap();
        // Once a walk began (a total counted), the walk only grows and the total stays.
        let begun: Vec<&(u64, u64)> = seen.iter().skip_while(|(_, total)| *total == 0).collect();
        for pair in begun.windows(2) {
            assert!(pair[1].0 >= pair[0].0, "walked went back: {pair:?}");
            assert!(
                pair[1].1 >= pair[0].1 && pair[1].1 > 0,
                "total went back: {pair:?}"
            );
        }
        for (walked, total) in &seen {
            assert!(walked <= total || *total == 0, "{walked} walked of {total}");
        }
        let c = db.collection("c").unwrap();
        assert_eq!(c.spec().arrays()[0].layout, subset);
        let document = c.get(7u64.to_be_bytes()).unwrap().unwrap();
        assert_eq!(document.array("a").unwrap().inline.len(), 1);
        assert_eq!(document.array("a").unwrap().total, 3);
    }
    // A parent too large for the new layout keeps the migration open: the wait says which.
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    db.create_collection(CollectionSpec::new("c").array("a", Layout::Reference))
        .unwrap();
    for chunk in 0..20 {
        let mut batch = db.batch();
        for key in 0..1_000 {
            let item = NewItem::new(vec![b'p'; 1_000]).key(chunk * 1_000 + key);
            batch.push("c", "huge", "a", item);
        }
        batch.commit().unwrap();
    }
    db.alter_collection("c", Alteration::new().set_layout("a", Layout::Embed))
        .unwrap();
    let open = db.wait_for_migrations().unwrap();
    assert_eq!(open.len(), 1);
    let refused: Vec<&[u8]> = open[0].refused.iter().map(|key| key.as_ref()).collect();
    assert_eq!(refused, [b"huge".as_slice()]);
    assert_eq!(open[0].parents_walked, open[0].parents_total);
}
