//! The seed scenarios as tests: a celebrity's followers (Outlier, and Embed refused at the
//! limit), a product's reviews (Subset), a year of sensor readings (Bucket).

use skewdb::{
    CollectionSpec, Db, Durability, Error, ItemQuery, Layout, MAX_RECORD_BYTES, NewItem, Options,
    Summary,
};

fn temp_db() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new().durability(Durability::Buffered)).unwrap();
    (dir, db)
}

fn follower(i: u64) -> NewItem {
    NewItem::new(i.to_le_bytes()).key(i as i64)
}

#[test]
fn celebrity_with_a_million_followers_under_outlier() {
    let (_dir, db) = temp_db();
    db.create_collection(
        CollectionSpec::new("users").array("followers", Layout::Outlier { inline_cap: 1000 }),
    )
    .unwrap();
    let mut batch = db.batch();
    batch.put("users", "nobody", "a user with three followers");
    for i in 0..3 {
        batch.push("users", "nobody", "followers", follower(i));
    }
    batch.commit().unwrap();
    const FOLLOWERS: u64 = 1_000_000;
    for start in (0..FOLLOWERS).step_by(10_000) {
        let mut batch = db.batch();
        for i in start..start + 10_000 {
            batch.push("users", "celebrity", "followers", follower(i));
        }
        batch.commit().unwrap();
    }
    let users = db.collection("users").unwrap();
    let celebrity = users.get("celebrity").unwrap().unwrap();
    let followers = celebrity.array("followers").unwrap();
    assert_eq!(followers.total, FOLLOWERS);
    assert!(followers.has_overflow);
    assert_eq!(followers.inline.len(), 1000);
    assert_eq!(followers.inline[999].key, 999);
    // The parent stays small: its 1,000 inline followers and the meta.
    let report = db.verify().unwrap();
    assert!(
        report.largest_record_bytes < 64 * 1024,
        "{}",
        report.largest_record_bytes
    );
    let outliers = users.outliers("followers").unwrap();
    assert_eq!(outliers.len(), 1);
    assert_eq!(
        (outliers[0].key.as_ref(), outliers[0].total),
        (&b"celebrity"[..], FOLLOWERS)
    );
    let all = users
        .items("celebrity", "followers", &ItemQuery::new())
        .unwrap()
        .unwrap();
    assert_eq!(all.items.len() as u64, FOLLOWERS);
    assert!(
        all.items
            .iter()
            .enumerate()
            .all(|(i, item)| item.key == i as i64
                && item.payload.as_ref() == (i as u64).to_le_bytes())
    );
    let nobody = users.get("nobody").unwrap().unwrap();
    assert!(!nobody.array("followers").unwrap().has_overflow);
}

#[test]
fn celebrity_under_embed_is_refused_at_the_limit_and_loses_nothing() {
    let (_dir, db) = temp_db();
    db.create_collection(CollectionSpec::new("users").array("followers", Layout::Embed))
        .unwrap();
    let mut accepted = 0u64;
    let mut refused = None;
    for wave in 0..40u64 {
        let mut batch = db.batch();
        for i in wave * 50_000..(wave + 1) * 50_000 {
            batch.push("users", "celebrity", "followers", follower(i));
        }
        match batch.commit() {
            Ok(()) => accepted = (wave + 1) * 50_000,
            Err(Error::RecordTooLarge { size, limit }) => {
                assert!(size > limit && limit == MAX_RECORD_BYTES as u64);
                refused = Some(wave);
                break;
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert!(refused.is_some(), "Embed never reached the record limit");
    let users = db.collection("users").unwrap();
    let celebrity = users.get("celebrity").unwrap().unwrap();
    let followers = celebrity.array("followers").unwrap();
    assert_eq!(followers.total, accepted);
    assert_eq!(followers.inline.len() as u64, accepted);
    assert!(!followers.has_overflow);
    assert!(
        followers
            .inline
            .iter()
            .enumerate()
            .all(|(i, item)| item.key == i as i64)
    );
    // Still writable.
    let mut batch = db.batch();
    batch.put("users", "someone", "else");
    batch.commit().unwrap();
    db.verify().unwrap();
}

#[test]
fn product_with_ten_thousand_reviews_under_subset() {
    let (_dir, db) = temp_db();
    db.create_collection(
        CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 5 }),
    )
    .unwrap();
    let mut stars_total = 0u64;
    for start in (0..10_000u64).step_by(500) {
        let mut batch = db.batch();
        for i in start..start + 500 {
            let stars = 1 + (i * 7) % 5;
            stars_total += stars;
            batch.push(
                "products",
                "p1",
                "reviews",
                NewItem::new(format!("review {i}")).value(stars as f64),
            );
        }
        batch.commit().unwrap();
    }
    let products = db.collection("products").unwrap();
    let product = products.get("p1").unwrap().unwrap();
    let reviews = product.array("reviews").unwrap();
    assert_eq!(reviews.total, 10_000);
    assert_eq!(
        reviews.inline.iter().map(|i| i.key).collect::<Vec<_>>(),
        vec![9995, 9996, 9997, 9998, 9999]
    );
    assert_eq!(reviews.summary.sum, stars_total as f64);
    assert_eq!(reviews.summary.mean(), Some(stars_total as f64 / 10_000.0));
    let history = products
        .items("p1", "reviews", &ItemQuery::new())
        .unwrap()
        .unwrap();
    assert_eq!(history.items.len(), 10_000);
    assert!(
        history
            .items
            .iter()
            .enumerate()
            .all(|(i, item)| item.key == i as i64 && item.payload == format!("review {i}"))
    );
    let newest = products
        .items("p1", "reviews", &ItemQuery::new().descending().limit(20))
        .unwrap()
        .unwrap();
    assert_eq!(
        newest.items.iter().map(|i| i.key).collect::<Vec<_>>(),
        (9980..10_000).rev().collect::<Vec<_>>()
    );
}

#[test]
fn a_year_of_minute_readings_under_hourly_buckets() {
    let (_dir, db) = temp_db();
    const HOUR: i64 = 3600;
    db.create_collection(CollectionSpec::new("sensors").array(
        "readings",
        Layout::Bucket {
            max_items: 1000,
            span: Some(HOUR),
        },
    ))
    .unwrap();
    const MINUTES: i64 = 525_600;
    let value = |minute: i64| ((minute * 37) % 1000) as f64 / 10.0;
    for start in (0..MINUTES).step_by(10_000) {
        let mut batch = db.batch();
        for minute in start..(start + 10_000).min(MINUTES) {
            batch.push(
                "sensors",
                "s1",
                "readings",
                NewItem::new([]).key(minute * 60).value(value(minute)),
            );
        }
        batch.commit().unwrap();
    }
    let sensors = db.collection("sensors").unwrap();
    let brute = |low: i64, high: i64| {
        let mut summary = Summary::default();
        for minute in 0..MINUTES {
            let key = minute * 60;
            if key >= low && key < high {
                summary.add(&skewdb::Item::new(key, &[Some(value(minute))], ""));
            }
        }
        summary
    };
    let ranges = [
        (0, MINUTES * 60),
        (HOUR, 2 * HOUR),
        (90, 7 * HOUR + 30),
        (100 * HOUR + 1, 2000 * HOUR - 1),
        (-5, 10),
        (MINUTES * 60 - 200, MINUTES * 60 + 5000),
    ];
    for (low, high) in ranges {
        let got = sensors
            .summary("s1", "readings", low..high)
            .unwrap()
            .unwrap();
        let expected = brute(low, high);
        assert_eq!(
            (
                got.items,
                got.count,
                got.min,
                got.max,
                got.min_key,
                got.max_key
            ),
            (
                expected.items,
                expected.count,
                expected.min,
                expected.max,
                expected.min_key,
                expected.max_key
            )
        );
        assert!(
            (got.sum - expected.sum).abs() < 1e-6 * expected.sum.abs().max(1.0),
            "{low}..{high}"
        );
    }
    // A range query decodes no more buckets than overlap it; a summary at most the two
    // that straddle its ends.
    let cold_requests = |f: &dyn Fn()| {
        db.reset_stats();
        f();
        db.stats().unwrap().cache.cold.requests
    };
    let (low, high) = (10 * HOUR + 600, 13 * HOUR + 1200);
    let overlapping = (low / HOUR..=(high - 1) / HOUR).count() as u64;
    let items = cold_requests(&|| {
        let page = sensors
            .items("s1", "readings", &ItemQuery::new().range(low..high))
            .unwrap()
            .unwrap();
        assert_eq!(page.items.len() as i64, (high - low) / 60);
    });
    assert!(
        items <= overlapping,
        "{items} buckets decoded for {overlapping} overlapping"
    );
    let summary = cold_requests(&|| {
        sensors
            .summary("s1", "readings", low..high)
            .unwrap()
            .unwrap();
    });
    assert!(summary <= 2, "{summary} buckets decoded for a summary");
    let document = sensors.get("s1").unwrap().unwrap();
    let readings = document.array("readings").unwrap();
    assert_eq!(readings.total, MINUTES as u64);
    assert_eq!(
        readings.inline.len(),
        60,
        "the open bucket holds the last hour"
    );
    db.verify().unwrap();
}

#[test]
fn sealed_cold_segments_are_read_through_maps() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::new()
        .durability(Durability::Buffered)
        .segment_bytes(64 * 1024);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    db.create_collection(CollectionSpec::new("users").array("followers", Layout::Reference))
        .unwrap();
    for start in (0..200_000u64).step_by(20_000) {
        let mut batch = db.batch();
        for i in start..start + 20_000 {
            // Incompressible payloads, so that chunks fill several cold segments.
            batch.push(
                "users",
                "celebrity",
                "followers",
                NewItem::new(i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes()).key(i as i64),
            );
        }
        batch.commit().unwrap();
    }
    drop(db);
    let db = Db::open(dir.path(), options).unwrap();
    let report = db.verify().unwrap();
    assert!(
        report.cold_segments.len() >= 3,
        "{:?}",
        report.cold_segments
    );
    let users = db.collection("users").unwrap();
    let all = users
        .items("celebrity", "followers", &ItemQuery::new())
        .unwrap()
        .unwrap();
    assert_eq!(all.items.len(), 200_000);
    assert!(
        all.items
            .iter()
            .enumerate()
            .all(|(i, item)| item.payload.as_ref()
                == (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes())
    );
}

/// Values may be infinite (only NaN is refused), and sums of large values overflow: a
/// summary's sum is then infinite or NaN. Chunks holding such items read back, summaries
/// are served, and `verify` passes, before and after a reopen.
#[test]
fn infinite_values_and_overflowing_sums_are_served_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let values = [
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MAX,
        -f64::MAX,
        1.0,
    ];
    {
        let db = Db::open(dir.path(), Options::new().durability(Durability::Buffered)).unwrap();
        db.create_collection(
            CollectionSpec::new("s")
                .array(
                    "r",
                    Layout::Bucket {
                        max_items: 2,
                        span: None,
                    },
                )
                .array("o", Layout::Outlier { inline_cap: 1 }),
        )
        .unwrap();
        for (i, value) in values.iter().enumerate() {
            let mut batch = db.batch();
            for field in ["r", "o"] {
                batch.push(
                    "s",
                    "p",
                    field,
                    NewItem::new([]).key(i as i64).value(*value),
                );
            }
            batch.commit().unwrap();
        }
        db.checkpoint().unwrap();
        db.verify().unwrap();
    }
    let db = Db::open(dir.path(), Options::new()).unwrap();
    db.verify().unwrap();
    let s = db.collection("s").unwrap();
    for field in ["r", "o"] {
        let items = s.items("p", field, &ItemQuery::new()).unwrap().unwrap();
        let got: Vec<f64> = items.items.iter().map(|i| i.value.unwrap()).collect();
        assert_eq!(got, values, "{field}");
        let whole = s.summary("p", field, ..).unwrap().unwrap();
        assert_eq!((whole.items, whole.count), (6, 6));
        assert!(whole.sum.is_nan(), "{field}: {whole:?}");
        let two_max = s.summary("p", field, 2..4).unwrap().unwrap();
        assert_eq!(two_max.sum, f64::INFINITY, "{field}");
        assert_eq!(s.summary("p", field, 5..).unwrap().unwrap().sum, 1.0);
    }
}

/// Values that cancel add up to different sums in different orders: pushed in one order
/// (-MAX, MAX, 88: the parent's running sum is 88) and stored in key order (MAX, 88, -MAX:
/// 0 when added that way). Both are sums of the same values, and `verify` accepts either
/// (it checks a sum within what rounding can explain for the summary's count and
/// magnitude), while it still refuses a sum off by more than that. Found by the model
/// fuzzer, whose values include +-f64::MAX.
#[test]
fn sums_that_cancel_verify_in_any_order() {
    for layout in [
        Layout::Subset { keep: 1 },
        Layout::Outlier { inline_cap: 1 },
        Layout::Reference,
        Layout::Embed,
    ] {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Db::open(dir.path(), Options::new()).unwrap();
            db.create_collection(CollectionSpec::new("s").array("r", layout))
                .unwrap();
            for (key, value) in [(3, -f64::MAX), (1, f64::MAX), (2, 88.0)] {
                let mut batch = db.batch();
                batch.push("s", "p", "r", NewItem::new([]).key(key).value(value));
                batch.commit().unwrap();
            }
            db.verify().unwrap_or_else(|e| panic!("{layout:?}: {e}"));
            db.checkpoint().unwrap();
        }
        let db = Db::open(dir.path(), Options::new()).unwrap();
        db.verify().unwrap_or_else(|e| panic!("{layout:?}: {e}"));
        let s = db.collection("s").unwrap();
        let whole = s.summary("p", "r", ..).unwrap().unwrap();
        assert_eq!((whole.items, whole.count), (3, 3), "{layout:?}");
        assert!([0.0, 88.0].contains(&whole.sum), "{layout:?}: {whole:?}");
        let keys: Vec<i64> = s
            .items("p", "r", &ItemQuery::new())
            .unwrap()
            .unwrap()
            .items
            .iter()
            .map(|i| i.key)
            .collect();
        assert_eq!(keys, [1, 2, 3], "{layout:?}");
    }
}
