//! Arrays with several named measures: every layout keeps count, sum, min and max per
//! measure in every summary (the parent's, each chunk's and bucket's, the index leaves'),
//! reads return each item's values, and names are checked.

use skewdb::{
    CollectionSpec, Db, Durability, Error, ItemQuery, Layout, MAX_MEASURES, MeasureSummary,
    NewItem, Summary,
};
use skewdb_tests::{open_db, sim, small_options};

const MEASURES: [&str; 3] = ["temperature", "humidity", "pressure"];

/// Item `i`'s values: each measure present on its own pattern, so that every summary has
/// items with and without each.
fn values(i: i64) -> [Option<f64>; 3] {
    [
        (i % 4 != 0).then_some(i as f64 * 0.5 - 20.0),
        (i % 3 == 0).then_some(0.25 + (i % 7) as f64 / 10.0),
        (i % 5 == 2).then_some(1000.0 + i as f64),
    ]
}

fn item(i: i64) -> NewItem {
    let mut item = NewItem::new(format!("reading {i}")).key(i * 10);
    for (name, value) in MEASURES.iter().zip(values(i)) {
        if let Some(value) = value {
            item = item.measure(*name, value);
        }
    }
    item
}

/// The summary of measure `m` over the items `0..n` of `kept` whose keys fall in `low..high`.
fn brute(kept: &[i64], m: usize, low: i64, high: i64) -> (u64, MeasureSummary) {
    let mut summary = Summary::default();
    for &i in kept.iter().filter(|&&i| (low..high).contains(&(i * 10))) {
        summary.add(&skewdb::Item::new(i * 10, &values(i), ""));
    }
    (summary.items, summary.measure(m))
}

/// Equal counts, bounds and sums (within rounding: sums added in another order).
fn same(a: MeasureSummary, b: MeasureSummary) -> bool {
    (a.count, a.min, a.max) == (b.count, b.min, b.max) && (a.sum - b.sum).abs() < 1e-6
}

fn layouts() -> [(&'static str, Layout); 5] {
    [
        ("embed", Layout::Embed),
        ("reference", Layout::Reference),
        ("subset", Layout::Subset { keep: 4 }),
        ("outlier", Layout::Outlier { inline_cap: 5 }),
        (
            "bucket",
            Layout::Bucket {
                max_items: 8,
                span: Some(200),
            },
        ),
    ]
}

/// A database with the sensors collection and parent `s1`'s items `0..n` pushed to `field`.
fn with_items(field: &str, n: i64) -> Db {
    let db = open_db(sim().1, small_options(Durability::Buffered)).unwrap();
    create(&db);
    let mut batch = db.batch();
    for i in 0..n {
        batch.push("sensors", "s1", field, item(i));
    }
    batch.commit().unwrap();
    db
}

fn create(db: &Db) {
    let mut spec = CollectionSpec::new("sensors");
    for (field, layout) in layouts() {
        spec = spec.array_with_measures(field, layout, MEASURES);
    }
    db.create_collection(spec).unwrap();
}

/// Every layout's summaries, whole and over ranges that cover, cut and miss chunks, per
/// measure, and every item's values, against `kept`.
fn check(db: &Db, kept: &[i64]) {
    let sensors = db.collection("sensors").unwrap();
    for (field, _) in layouts() {
        let array = sensors.array(field).unwrap();
        assert_eq!(array.measures(), MEASURES);
        for (m, name) in MEASURES.iter().enumerate() {
            assert_eq!(array.measure_index(name).unwrap(), m);
            for (low, high) in [
                (i64::MIN, i64::MAX),
                (0, 400),
                (95, 1205),
                (200, 1000),
                (1234, 1236),
                (5000, 6000),
            ] {
                let summary = sensors.summary("s1", field, low..high).unwrap().unwrap();
                let (items, expected) = brute(kept, m, low, high);
                assert_eq!(summary.items, items, "{field} {low}..{high}");
                let got = summary.measure(m);
                assert_eq!(
                    (got.count, got.min, got.max),
                    (expected.count, expected.min, expected.max),
                    "{field} {name} {low}..{high}"
                );
                assert!((got.sum - expected.sum).abs() < 1e-6, "{field} {name}");
            }
        }
        let whole = sensors.summary("s1", field, ..).unwrap().unwrap();
        let document = sensors.get("s1").unwrap().unwrap();
        assert_eq!(document.array(field).unwrap().summary, whole, "{field}");
        assert_eq!(whole.measure(MEASURES.len()), MeasureSummary::default());
        assert_eq!((whole.count, whole.sum, whole.min, whole.max), {
            let first = whole.measure(0);
            (first.count, first.sum, first.min, first.max)
        });
        let page = sensors
            .items("s1", field, &ItemQuery::new())
            .unwrap()
            .unwrap();
        let keys: Vec<i64> = page.items.iter().map(|item| item.key).collect();
        assert_eq!(
            keys,
            kept.iter().map(|i| i * 10).collect::<Vec<_>>(),
            "{field}"
        );
        for item in &page.items {
            let i = item.key / 10;
            for (m, value) in values(i).into_iter().enumerate() {
                assert_eq!(item.measure(m), value, "{field} item {i} measure {m}");
            }
            assert_eq!(item.value, values(i)[0]);
            assert_eq!(item.measure(7), None);
        }
        for item in &document.array(field).unwrap().inline {
            assert_eq!(item.measure(1), values(item.key / 10)[1], "{field} inline");
        }
    }
    db.verify().unwrap();
}

#[test]
fn every_layout_summarizes_each_measure_through_writes_removals_compaction_and_reopening() {
    let (_sim, storage) = sim();
    let db = open_db(storage.clone(), small_options(Durability::Buffered)).unwrap();
    create(&db);
    let mut kept: Vec<i64> = Vec::new();
    for round in 0..12 {
        let mut batch = db.batch();
        for i in round * 10..round * 10 + 10 {
            for (field, _) in layouts() {
                batch.push("sensors", "s1", field, item(i));
            }
            kept.push(i);
        }
        batch.commit().unwrap();
    }
    check(&db, &kept);
    // Remove items inline and cold (one by its identity, in every layout but Bucket, whose
    // items go only with their buckets' expiry).
    let sensors = db.collection("sensors").unwrap();
    for gone in [3, 50, 117, 118] {
        let mut batch = db.batch();
        for (field, layout) in layouts() {
            if matches!(layout, Layout::Bucket { .. }) {
                continue;
            }
            let page = sensors
                .items("s1", field, &ItemQuery::new().range(gone * 10..=gone * 10))
                .unwrap()
                .unwrap();
            batch.remove_item("sensors", "s1", field, page.ids[0]);
        }
        batch.commit().unwrap();
    }
    let bucket_kept = kept.clone();
    kept.retain(|i| ![3, 50, 117, 118].contains(i));
    let check_all = |db: &Db| {
        let sensors = db.collection("sensors").unwrap();
        // The bucket array kept everything: check it against its own list.
        let bucket = sensors.summary("s1", "bucket", ..).unwrap().unwrap();
        for m in 0..MEASURES.len() {
            let (items, expected) = brute(&bucket_kept, m, i64::MIN, i64::MAX);
            assert_eq!(bucket.items, items);
            assert_eq!(bucket.measure(m).count, expected.count);
            assert_eq!(bucket.measure(m).max, expected.max);
        }
        for (field, layout) in layouts() {
            if matches!(layout, Layout::Bucket { .. }) {
                continue;
            }
            for m in 0..MEASURES.len() {
                let summary = sensors.summary("s1", field, ..).unwrap().unwrap();
                let (items, expected) = brute(&kept, m, i64::MIN, i64::MAX);
                assert_eq!(summary.items, items, "{field}");
                let got = summary.measure(m);
                assert_eq!(
                    (got.count, got.min, got.max),
                    (expected.count, expected.min, expected.max)
                );
                let ranged = sensors.summary("s1", field, 95..1205).unwrap().unwrap();
                let (items, expected) = brute(&kept, m, 95, 1205);
                assert_eq!(ranged.items, items, "{field}");
                assert_eq!(ranged.measure(m).count, expected.count, "{field} {m}");
                assert_eq!(ranged.measure(m).max, expected.max, "{field} {m}");
            }
        }
        db.verify().unwrap();
    };
    check_all(&db);
    drop(sensors);
    db.compact().unwrap();
    check_all(&db);
    db.close().unwrap();
    let db = open_db(storage, small_options(Durability::Buffered)).unwrap();
    check_all(&db);
    assert_eq!(
        db.collection("sensors").unwrap().spec().arrays()[0].measures,
        MEASURES
    );
}

#[test]
fn a_sealed_bucket_keeps_each_measures_summary_and_expiry_drops_them_all() {
    let db = with_items("bucket", 100);
    let kept: Vec<i64> = (0..100).collect();
    let sensors = db.collection("sensors").unwrap();
    // Whole buckets in a range add their stored summaries: each measure's agrees.
    for (low, high) in [(0, 200), (200, 800), (0, 1000), (150, 750)] {
        let summary = sensors.summary("s1", "bucket", low..high).unwrap().unwrap();
        for m in 0..3 {
            let (items, expected) = brute(&kept, m, low, high);
            assert_eq!(summary.items, items);
            let got = summary.measure(m);
            assert!(
                same(got, expected),
                "{low}..{high} measure {m}: {got:?} {expected:?}"
            );
        }
    }
    let expired = sensors.expire_buckets("bucket", 600).unwrap();
    // Sealed buckets wholly before 600 went: a prefix of the items, all keyed below it.
    let page = sensors
        .items("s1", "bucket", &ItemQuery::new())
        .unwrap()
        .unwrap();
    let after: Vec<i64> = page.items.iter().map(|item| item.key / 10).collect();
    assert_eq!(after, (expired.items as i64..100).collect::<Vec<_>>());
    assert!(
        expired.buckets >= 5 && expired.items > 40 && expired.items <= 60,
        "{expired:?}"
    );
    let summary = sensors.summary("s1", "bucket", ..).unwrap().unwrap();
    for m in 0..3 {
        assert!(same(
            summary.measure(m),
            brute(&after, m, i64::MIN, i64::MAX).1
        ));
    }
    db.verify().unwrap();
}

#[test]
fn eight_measures_are_the_most_and_each_is_kept() {
    let (_sim, storage) = sim();
    let db = open_db(storage.clone(), small_options(Durability::Buffered)).unwrap();
    let names: Vec<String> = (0..MAX_MEASURES).map(|m| format!("m{m}")).collect();
    let spec = CollectionSpec::new("wide").array_with_measures(
        "values",
        Layout::Outlier { inline_cap: 2 },
        names.clone(),
    );
    let wide = db.create_collection(spec).unwrap();
    let mut batch = db.batch();
    for i in 0..20 {
        let mut item = NewItem::new("").key(i);
        for (m, name) in names.iter().enumerate() {
            item = item.measure(name, (i * 10 + m as i64) as f64);
        }
        batch.push("wide", "w", "values", item);
    }
    batch.commit().unwrap();
    let check = |db: &Db| {
        let wide = db.collection("wide").unwrap();
        let summary = wide.summary("w", "values", ..).unwrap().unwrap();
        for m in 0..MAX_MEASURES {
            let measure = summary.measure(m);
            assert_eq!(measure.count, 20);
            assert_eq!(measure.min, Some(m as f64));
            assert_eq!(measure.max, Some((190 + m) as f64));
        }
        let ranged = wide.summary("w", "values", 5..15).unwrap().unwrap();
        assert_eq!(ranged.measure(MAX_MEASURES - 1).max, Some(147.0));
        let items = wide
            .items("w", "values", &ItemQuery::new())
            .unwrap()
            .unwrap();
        assert_eq!(items.items[19].measure(MAX_MEASURES - 1), Some(197.0));
        db.verify().unwrap();
    };
    check(&db);
    drop(wide);
    db.close().unwrap();
    check(&open_db(storage, small_options(Durability::Buffered)).unwrap());

    // Nine are refused, as are none, an empty name and one named twice.
    let db = open_db(sim().1, small_options(Durability::Buffered)).unwrap();
    let nine: Vec<String> = (0..=MAX_MEASURES).map(|m| format!("m{m}")).collect();
    for (measures, says) in [
        (nine, "9 measures"),
        (Vec::new(), "0 measures"),
        (vec![String::new()], "is empty"),
        (vec!["a".to_string(), "a".to_string()], "declared twice"),
        (vec!["a\n".to_string()], "control characters"),
    ] {
        let spec = CollectionSpec::new("bad").array_with_measures("v", Layout::Embed, measures);
        let error = db.create_collection(spec).unwrap_err();
        assert!(matches!(error, Error::InvalidSchema { .. }), "{error}");
        assert!(error.to_string().contains(says), "{error}");
    }
}

#[test]
fn a_measure_the_array_lacks_fails_its_batch() {
    let (_sim, storage) = sim();
    let db = open_db(storage, small_options(Durability::Buffered)).unwrap();
    create(&db);
    let sensors = db.collection("sensors").unwrap();
    let array = sensors.array("subset").unwrap();
    let error = array.measure_index("humidty").unwrap_err();
    assert_eq!(error.kind(), "unknown_measure");
    let mut batch = db.batch();
    batch.put("sensors", "s1", "body");
    batch.push_to(&array, "s1", NewItem::new("").measure("humidty", 1.0));
    let error = batch.commit().unwrap_err();
    assert!(
        matches!(&error, Error::UnknownMeasure { collection, field, measure }
            if collection == "sensors" && field == "subset" && measure == "humidty"),
        "{error}"
    );
    assert!(
        sensors.get("s1").unwrap().is_none(),
        "nothing of the batch applied"
    );
    // NaN in any measure is refused.
    let mut batch = db.batch();
    batch.push_to(&array, "s1", NewItem::new("").measure("pressure", f64::NAN));
    assert!(matches!(batch.commit(), Err(Error::InvalidItem { .. })));
    // An array declared without names has the one measure "value".
    let plain = db
        .create_collection(CollectionSpec::new("plain").array("v", Layout::Embed))
        .unwrap();
    assert_eq!(plain.array("v").unwrap().measures(), ["value"]);
    let mut batch = db.batch();
    batch.push("plain", "k", "v", NewItem::new("").measure("value", 2.0));
    batch.push("plain", "k", "v", NewItem::new("").value(4.0));
    batch.commit().unwrap();
    let summary = plain.summary("k", "v", ..).unwrap().unwrap();
    assert_eq!((summary.count, summary.sum), (2, 6.0));
    // The same spec again is the same collection; other measures are a conflict.
    let again = CollectionSpec::new("plain").array_with_measures("v", Layout::Embed, ["value"]);
    db.create_collection(again).unwrap();
    let other = CollectionSpec::new("plain").array_with_measures("v", Layout::Embed, ["x"]);
    assert!(matches!(
        db.create_collection(other),
        Err(Error::SchemaConflict { .. })
    ));
}

#[test]
fn snapshots_and_transactions_see_each_measure() {
    let db = with_items("outlier", 30);
    let snapshot = db.snapshot();
    let mut batch = db.batch();
    batch.push("sensors", "s1", "outlier", item(30));
    batch.commit().unwrap();
    let before: Vec<i64> = (0..30).collect();
    let at_snapshot = snapshot
        .collection("sensors")
        .unwrap()
        .summary("s1", "outlier", ..)
        .unwrap()
        .unwrap();
    assert!(same(
        at_snapshot.measure(2),
        brute(&before, 2, i64::MIN, i64::MAX).1
    ));
    let mut transaction = db.transaction();
    transaction.push(
        "sensors",
        "s1",
        "outlier",
        NewItem::new("").key(1000).measure("pressure", -1.0),
    );
    let own = transaction
        .collection("sensors")
        .unwrap()
        .summary("s1", "outlier", ..)
        .unwrap()
        .unwrap();
    assert_eq!(own.measure(2).min, Some(-1.0));
    assert_eq!(own.items, 32);
    transaction.commit().unwrap();
    let after = db.collection("sensors").unwrap();
    let summary = after.summary("s1", "outlier", ..).unwrap().unwrap();
    assert_eq!((summary.items, summary.measure(2).min), (32, Some(-1.0)));
}
