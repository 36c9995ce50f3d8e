//! Rollups: a bucket expiry of an array that keeps them drops raw items but keeps, per
//! window, their count, sum, min and max of every measure; summaries over expired keys stay
//! exact and say so, late readings land in the right window whichever bucket or rollup
//! holds it, and every path (recovery, checkpoint, backup, delete, verify) keeps them.

use std::collections::BTreeMap;
use std::ops::Bound;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skewdb::{Alteration, CollectionSpec, Db, Error, ItemQuery, Layout, NewItem, Options, Summary};

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;

/// Hourly buckets of at most 60 readings; rollups per hour.
fn spec() -> CollectionSpec {
    let hourly = Layout::Bucket {
        max_items: 60,
        span: Some(HOUR),
    };
    CollectionSpec::new("sensors")
        .array_with_measures("t", hourly, ["temp", "hum"])
        .rollup("t", HOUR)
}

/// What every pushed reading was: (key, temp, hum), for the model's summaries. Values are
/// multiples of 1/4 well inside f64's exact range, so sums are exact in any order.
#[derive(Default)]
struct Model {
    readings: Vec<(i64, f64, Option<f64>)>,
}

impl Model {
    fn push(&mut self, db: &Db, parent: &str, readings: &[(i64, f64, Option<f64>)]) {
        let mut batch = db.batch();
        for &(key, temp, hum) in readings {
            let mut item = NewItem::new("").key(key).measure("temp", temp);
            if let Some(hum) = hum {
                item = item.measure("hum", hum);
            }
            batch.push("sensors", parent, "t", item);
            self.readings.push((key, temp, hum));
        }
        batch.commit().unwrap();
    }

    /// (items, temp count/sum/min/max, hum count/sum) of the readings in `[from, to)`.
    fn summary(&self, from: i64, to: i64) -> (u64, u64, f64, Option<f64>, Option<f64>, u64, f64) {
        let inside: Vec<_> = self
            .readings
            .iter()
            .filter(|r| r.0 >= from && r.0 < to)
            .collect();
        let temps = inside.iter().map(|r| r.1);
        let hums: Vec<f64> = inside.iter().filter_map(|r| r.2).collect();
        (
            inside.len() as u64,
            inside.len() as u64,
            temps.clone().sum(),
            temps.clone().reduce(f64::min),
            temps.reduce(f64::max),
            hums.len() as u64,
            hums.iter().sum(),
        )
    }
}

fn parts(summary: &Summary) -> (u64, u64, f64, Option<f64>, Option<f64>, u64, f64) {
    let hum = summary.measure(1);
    (
        summary.items,
        summary.count,
        summary.sum,
        summary.min,
        summary.max,
        hum.count,
        hum.sum,
    )
}

/// Minute readings of `days` days from `from`, temp in quarters, hum on every third.
fn minutes(rng: &mut StdRng, from: i64, days: i64) -> Vec<(i64, f64, Option<f64>)> {
    (0..days * 24 * 60)
        .map(|m| {
            let key = from + m * 60;
            let temp = f64::from(rng.random_range(-80..160)) * 0.25;
            let hum = (m % 3 == 0).then(|| f64::from(rng.random_range(0..400)) * 0.25);
            (key, temp, hum)
        })
        .collect()
}

/// Checks every hour window, every day window and the whole against the model.
fn check(db: &Db, model: &Model, parent: &str, days: i64) {
    let sensors = db.collection("sensors").unwrap();
    let whole = sensors.summary(parent, "t", ..).unwrap().unwrap();
    assert_eq!(parts(&whole), model.summary(i64::MIN, i64::MAX));
    for span in [HOUR, DAY] {
        let windows = sensors
            .summary_windows(parent, "t", .., span)
            .unwrap()
            .unwrap();
        let mut expected = Vec::new();
        for start in (-DAY..(days + 1) * DAY).step_by(span as usize) {
            let want = model.summary(start, start + span);
            if want.0 > 0 {
                expected.push((start, want));
            }
        }
        let got: Vec<_> = windows.iter().map(|(s, w)| (*s, parts(w))).collect();
        assert_eq!(got, expected, "windows of {span}");
    }
}

#[test]
fn expiry_keeps_each_window_exact_and_says_what_came_from_rollups() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let sensors = db.create_collection(spec()).unwrap();
    let mut rng = StdRng::seed_from_u64(51);
    let mut model = Model::default();
    model.push(&db, "s1", &minutes(&mut rng, 0, 3));
    check(&db, &model, "s1", 3);
    let before = sensors.summary("s1", "t", ..).unwrap().unwrap();
    assert_eq!(before.rolled_up, 0);

    let expired = sensors.expire_buckets("t", DAY + 30 * 60).unwrap();
    // The first day's 24 hourly buckets go (the next one holds keys past the bound).
    assert_eq!(
        (expired.buckets, expired.items, expired.rolled_up),
        (24, 1440, 1440)
    );
    check(&db, &model, "s1", 3);
    let whole = sensors.summary("s1", "t", ..).unwrap().unwrap();
    assert_eq!(whole.rolled_up, 1440);
    let day1 = sensors.summary("s1", "t", 0..DAY).unwrap().unwrap();
    assert_eq!((day1.items, day1.rolled_up), (1440, 1440));
    let day2 = sensors.summary("s1", "t", DAY..2 * DAY).unwrap().unwrap();
    assert_eq!((day2.items, day2.rolled_up), (1440, 0));
    // The raw readings are gone; the rest are all there.
    let page = sensors
        .items("s1", "t", &ItemQuery::new().range(..DAY).limit(10))
        .unwrap()
        .unwrap();
    assert!(page.items.is_empty());
    let rest = sensors
        .items("s1", "t", &ItemQuery::new().range(DAY..).limit(10_000))
        .unwrap()
        .unwrap();
    assert_eq!(rest.items.len(), 2 * 1440);

    // A range holding part of a rolled-up hour is refused, not answered wrong; one whose
    // bound lies outside the keys the hour held is answered.
    let cut = sensors.summary("s1", "t", 90..2 * HOUR).unwrap_err();
    assert_eq!(cut.kind(), "range_cuts_rollup");
    assert!(
        matches!(
            cut,
            Error::RangeCutsRollup {
                start: 0,
                span: HOUR,
                ..
            }
        ),
        "{cut:?}"
    );
    let windows = sensors.summary_windows("s1", "t", .., 90 * 60);
    assert_eq!(windows.unwrap_err().kind(), "range_cuts_rollup");
    let loose = sensors
        .summary(
            "s1",
            "t",
            (Bound::Included(-30), Bound::Included(HOUR - 10)),
        )
        .unwrap()
        .unwrap();
    assert_eq!(parts(&loose), model.summary(-30, HOUR - 9));
    assert_eq!(loose.rolled_up, 60);

    // Expiring the same bound again changes nothing; a later one adds the next hours.
    let again = sensors.expire_buckets("t", DAY + 30 * 60).unwrap();
    assert_eq!((again.buckets, again.items), (0, 0));
    let expired = sensors.expire_buckets("t", 2 * DAY).unwrap();
    assert_eq!((expired.buckets, expired.rolled_up), (24, 1440));
    check(&db, &model, "s1", 3);
    db.verify().unwrap();
}

/// Late readings: older than the open bucket, kept in the tail or its item chunks. Each is
/// counted in its window before an expiry, rolled up with its window by one, and one that
/// arrives after its window was rolled up is counted beside the rollup, then merged into it.
#[test]
fn late_readings_count_in_their_window_whichever_bucket_or_rollup_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let sensors = db.create_collection(spec()).unwrap();
    let mut rng = StdRng::seed_from_u64(5);
    let mut model = Model::default();
    model.push(&db, "s1", &minutes(&mut rng, 0, 2));
    // Late readings into sealed hours of both days, many (their item chunks seal), and
    // one on a window's edge.
    let late: Vec<_> = (0..3000)
        .map(|n| {
            (
                rng.random_range(0..2 * DAY - HOUR),
                0.25 * f64::from(n % 40),
                None,
            )
        })
        .chain([(HOUR, 7.5, Some(1.0)), (HOUR - 1, -7.5, Some(2.0))])
        .collect();
    model.push(&db, "s1", &late);
    check(&db, &model, "s1", 2);

    let expired = sensors.expire_buckets("t", DAY).unwrap();
    let late_below = late.iter().filter(|r| r.0 < DAY).count() as u64;
    assert_eq!(expired.buckets, 24);
    assert_eq!(expired.items, 1440 + late_below);
    assert_eq!(expired.rolled_up, expired.items);
    check(&db, &model, "s1", 2);
    let day1 = sensors.summary("s1", "t", 0..DAY).unwrap().unwrap();
    assert_eq!(
        day1.rolled_up, day1.items,
        "every item of day 1 is rolled up"
    );
    // The late readings of day 2 stay raw items.
    let raw = sensors
        .items("s1", "t", &ItemQuery::new().limit(100_000))
        .unwrap()
        .unwrap();
    assert_eq!(
        raw.items.len() as u64,
        model.readings.len() as u64 - expired.items
    );
    assert!(raw.items.iter().all(|item| item.key >= DAY));

    // A reading for an hour rolled up already: counted raw beside the rollup ...
    model.push(&db, "s1", &[(2 * HOUR + 5, 100.0, Some(3.0))]);
    check(&db, &model, "s1", 2);
    let hour = sensors
        .summary("s1", "t", 2 * HOUR..3 * HOUR)
        .unwrap()
        .unwrap();
    assert_eq!(hour.rolled_up, hour.items - 1);
    // ... and merged into it by the next expiry, even one that drops no bucket.
    let expired = sensors.expire_buckets("t", DAY).unwrap();
    assert_eq!(
        (expired.buckets, expired.items, expired.rolled_up),
        (0, 1, 1)
    );
    let hour = sensors
        .summary("s1", "t", 2 * HOUR..3 * HOUR)
        .unwrap()
        .unwrap();
    assert_eq!(hour.rolled_up, hour.items);
    assert_eq!(hour.max, Some(100.0));
    check(&db, &model, "s1", 2);
    db.verify().unwrap();
}

/// Rollups survive recovery from the log, a checkpoint, a backup's restore; a parent's
/// delete takes them; an array without rollups expires as before.
#[test]
fn rollups_are_kept_by_every_path_and_go_with_their_parent() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(9);
    let mut model = Model::default();
    {
        let db = Db::open(dir.path(), Options::new()).unwrap();
        let sensors = db.create_collection(spec()).unwrap();
        model.push(&db, "s1", &minutes(&mut rng, 0, 2));
        Model::default().push(&db, "s2", &[(5, 1.0, None)]);
        sensors.expire_buckets("t", DAY).unwrap();
        // Closed without a checkpoint: the rollups come back from the log.
    }
    let db = Db::open(dir.path(), Options::new()).unwrap();
    check(&db, &model, "s1", 2);
    db.checkpoint().unwrap();
    drop(db);
    let db = Db::open(dir.path(), Options::new()).unwrap();
    check(&db, &model, "s1", 2);
    assert_eq!(
        db.collection("sensors").unwrap().spec().arrays()[0].rollup,
        Some(HOUR)
    );

    let backup = dir.path().join("backup.skewdb");
    db.backup(&backup).unwrap();
    let restored_dir = tempfile::tempdir().unwrap();
    let restored = Db::restore(&backup, restored_dir.path().join("db"), Options::new()).unwrap();
    check(&restored, &model, "s1", 2);
    drop(restored);

    let sensors = db.collection("sensors").unwrap();
    let mut batch = db.batch();
    batch.delete("sensors", "s1");
    batch.commit().unwrap();
    assert!(sensors.summary("s1", "t", ..).unwrap().is_none());
    let mut batch = db.batch();
    batch.push(
        "sensors",
        "s1",
        "t",
        NewItem::new("").key(10).measure("temp", 2.0),
    );
    batch.commit().unwrap();
    let fresh = sensors.summary("s1", "t", ..).unwrap().unwrap();
    assert_eq!((fresh.items, fresh.rolled_up, fresh.sum), (1, 0, 2.0));
    // An expiry and a delete in one batch: the delete takes the rollups the expiry made.
    let mut rng = StdRng::seed_from_u64(10);
    Model::default().push(&db, "s3", &minutes(&mut rng, 0, 1));
    let t = sensors.array("t").unwrap();
    let mut batch = db.batch();
    batch.expire_buckets_of(&t, "s3", 12 * HOUR);
    batch.delete("sensors", "s3");
    batch.push(
        "sensors",
        "s3",
        "t",
        NewItem::new("").key(10).measure("temp", 2.0),
    );
    batch.commit().unwrap();
    let fresh = sensors.summary("s3", "t", ..).unwrap().unwrap();
    assert_eq!((fresh.items, fresh.rolled_up, fresh.sum), (1, 0, 2.0));
    db.verify().unwrap();
}

#[test]
fn a_rollup_is_declared_on_a_bucket_array_with_a_positive_span() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let bucket = Layout::Bucket {
        max_items: 10,
        span: None,
    };
    let refused = [
        CollectionSpec::new("a")
            .array("t", Layout::Embed)
            .rollup("t", 60),
        CollectionSpec::new("b").array("t", bucket).rollup("t", 0),
        CollectionSpec::new("c").array("t", bucket).rollup("t", -60),
        CollectionSpec::new("d").array("t", bucket).rollup("u", 60),
    ];
    for spec in refused {
        let error = db.create_collection(spec).unwrap_err();
        assert_eq!(error.kind(), "invalid_schema", "{error}");
    }
    // A span that needs no bucket span, or a bucket span of its multiples: both fine.
    let one = CollectionSpec::new("e").array("t", bucket).rollup("t", 1);
    let spec = db.create_collection(one).unwrap().spec().clone();
    assert_eq!(spec.describe_arrays(), "t=bucket:10 rollup 1");
    // An array that keeps rollups stays a bucket array.
    let error = db
        .alter_collection("e", Alteration::new().set_layout("t", Layout::Embed))
        .unwrap_err();
    assert_eq!(error.kind(), "invalid_schema", "{error}");
    // Declaring it twice under another span is a conflict with the stored schema.
    let other = CollectionSpec::new("e").array("t", bucket).rollup("t", 2);
    assert_eq!(
        db.create_collection(other).unwrap_err().kind(),
        "schema_conflict"
    );
}

/// Buckets sealed by count (no span) straddle windows: the expiry reads them to split them
/// into hours, and count-sealed buckets inside one hour go by their summaries.
#[test]
fn buckets_across_windows_are_split_into_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let spec = CollectionSpec::new("sensors")
        .array_with_measures(
            "t",
            Layout::Bucket {
                max_items: 7,
                span: None,
            },
            ["temp", "hum"],
        )
        .rollup("t", 10 * 60);
    let sensors = db.create_collection(spec).unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    let mut model = Model::default();
    let readings: Vec<_> = minutes(&mut rng, -DAY / 2, 1)
        .into_iter()
        .filter(|_| rng.random_bool(0.7))
        .collect();
    model.push(&db, "s1", &readings);
    let expired = sensors.expire_buckets("t", 0).unwrap();
    assert!(expired.buckets > 0 && expired.rolled_up == expired.items);
    let mut by_window: BTreeMap<i64, u64> = BTreeMap::new();
    for r in model.readings.iter().filter(|r| r.0 < 0) {
        *by_window.entry(r.0.div_euclid(600) * 600).or_default() += 1;
    }
    for (start, count) in by_window {
        let window = sensors
            .summary("s1", "t", start..start + 600)
            .unwrap()
            .unwrap();
        assert_eq!(parts(&window), model.summary(start, start + 600));
        assert!(window.rolled_up <= count);
    }
    let whole = sensors.summary("s1", "t", ..).unwrap().unwrap();
    assert_eq!(parts(&whole), model.summary(i64::MIN, i64::MAX));
    assert_eq!(whole.rolled_up, expired.items);
    db.verify().unwrap();
}

/// A rollup set by an alteration on a bucket array that had none, then widened from hours to
/// days: the hourly rollups stay and answer as before, a day window that starts where one of
/// them does takes it in, every day stays exact, and the checks refuse a narrower, unaligned
/// or non-positive span, an unknown field and a non-bucket array.
#[test]
fn a_rollup_is_set_and_widened_by_an_alteration() {
    let dir = tempfile::tempdir().unwrap();
    let hourly = Layout::Bucket {
        max_items: 60,
        span: Some(HOUR),
    };
    let mut rng = StdRng::seed_from_u64(47);
    let mut model = Model::default();
    {
        let db = Db::open(dir.path(), Options::new()).unwrap();
        let spec = CollectionSpec::new("sensors")
            .array_with_measures("t", hourly, ["temp", "hum"])
            .array("notes", Layout::Embed);
        db.create_collection(spec).unwrap();
        model.push(&db, "s1", &minutes(&mut rng, 0, 4));

        let sensors = db
            .alter_collection("sensors", Alteration::new().set_rollup("t", HOUR))
            .unwrap();
        assert_eq!(sensors.spec().arrays()[0].rollup, Some(HOUR));
        let expired = sensors.expire_buckets("t", DAY + 30 * 60).unwrap();
        assert_eq!((expired.buckets, expired.rolled_up), (24, 1440));
        check(&db, &model, "s1", 4);

        let refused = [
            (Alteration::new().set_rollup("t", 60), "invalid_schema"),
            (Alteration::new().set_rollup("t", 90 * 60), "invalid_schema"),
            (Alteration::new().set_rollup("t", 0), "invalid_schema"),
            (Alteration::new().set_rollup("t", -DAY), "invalid_schema"),
            (Alteration::new().set_rollup("notes", DAY), "invalid_schema"),
            (Alteration::new().set_rollup("u", DAY), "unknown_field"),
        ];
        for (alteration, kind) in refused {
            let error = db.alter_collection("sensors", alteration).unwrap_err();
            assert_eq!(error.kind(), kind, "{error}");
        }
        // The same span again changes nothing.
        db.alter_collection("sensors", Alteration::new().set_rollup("t", HOUR))
            .unwrap();

        let sensors = db
            .alter_collection("sensors", Alteration::new().set_rollup("t", DAY))
            .unwrap();
        assert_eq!(
            sensors.spec().describe_arrays(),
            "t=bucket:60:3600 [temp hum] rollup 86400, notes=embed"
        );
        // Late readings: one in the first hour, rolled up hourly already, one in the second
        // day's first hour, not expired yet.
        let late = [(5 * 60 + 7, 3.0, Some(1.5)), (DAY + 17, -2.25, None)];
        model.push(&db, "s1", &late);
        let expired = sensors.expire_buckets("t", 3 * DAY + 30 * 60).unwrap();
        assert_eq!((expired.buckets, expired.rolled_up), (48, 2 * 1440 + 2));
        // Closed without a checkpoint: the alteration and the rollups come back from the log.
    }
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let check_widened = |db: &Db| {
        let sensors = db.collection("sensors").unwrap();
        assert_eq!(sensors.spec().arrays()[0].rollup, Some(DAY));
        let whole = sensors.summary("s1", "t", ..).unwrap().unwrap();
        assert_eq!(parts(&whole), model.summary(i64::MIN, i64::MAX));
        assert_eq!(whole.rolled_up, 3 * 1440 + 2);
        for day in 0..4 {
            let range = day * DAY..(day + 1) * DAY;
            let got = sensors.summary("s1", "t", range.clone()).unwrap().unwrap();
            assert_eq!(
                parts(&got),
                model.summary(range.start, range.end),
                "day {day}"
            );
        }
        let days = sensors
            .summary_windows("s1", "t", .., DAY)
            .unwrap()
            .unwrap();
        let got: Vec<_> = days.iter().map(|(s, w)| (*s, parts(w))).collect();
        let want: Vec<_> = (0..4)
            .map(|d| (d * DAY, model.summary(d * DAY, (d + 1) * DAY)))
            .collect();
        assert_eq!(got, want);
        // The first day's hours after its first stay hourly rollups: each answers alone.
        let hour = sensors
            .summary("s1", "t", 7 * HOUR..8 * HOUR)
            .unwrap()
            .unwrap();
        assert_eq!(parts(&hour), model.summary(7 * HOUR, 8 * HOUR));
        assert_eq!(hour.rolled_up, 60);
        // Its first hour was taken into a day's rollup with the late reading, which holds
        // keys of that hour alone: the hour still answers.
        let first = sensors.summary("s1", "t", 0..HOUR).unwrap().unwrap();
        assert_eq!(parts(&first), model.summary(0, HOUR));
        assert_eq!(first.rolled_up, 61);
        // The later days are day rollups: an hour of one is cut out of it.
        let error = sensors
            .summary("s1", "t", DAY + 2 * HOUR..DAY + 3 * HOUR)
            .unwrap_err();
        assert!(matches!(error, Error::RangeCutsRollup { .. }), "{error}");
        let error = sensors.summary_windows("s1", "t", .., HOUR).unwrap_err();
        assert!(matches!(error, Error::RangeCutsRollup { .. }), "{error}");
        // The fourth day is raw: its hours answer.
        let raw = sensors
            .summary("s1", "t", 3 * DAY + HOUR..3 * DAY + 2 * HOUR)
            .unwrap()
            .unwrap();
        assert_eq!((raw.items, raw.rolled_up), (60, 0));
    };
    check_widened(&db);
    let inspection = db.verify().unwrap();
    // 23 hourly rollups of the first day, one for its first hour with the late reading and
    // two days.
    assert_eq!(inspection.rollups, 23 + 1 + 2);
    db.checkpoint().unwrap();
    drop(db);
    let db = Db::open(dir.path(), Options::new()).unwrap();
    check_widened(&db);
    db.verify().unwrap();
}
