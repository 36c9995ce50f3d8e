//! Shared helpers for the benches.

use skewdb::{CollectionSpec, Db, Options};

/// A database in a fresh temporary directory with one collection, `docs`.
pub fn temp_db(options: Options) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Db::open(dir.path(), options).expect("open");
    db.create_collection(CollectionSpec::new("docs"))
        .expect("create collection");
    (dir, db)
}

/// The key of parent `i`: fixed width, so key order is numeric order.
pub fn key(i: u64) -> String {
    format!("parent{i:010}")
}

/// A database holding one sensor's year of minute readings (525,600) under
/// `Bucket { max_items: 1000, span: one hour }`, keyed by seconds. Values follow a daily
/// cycle at 0.1 degree resolution, as real sensors report. Returns the minutes.
pub fn readings_db(options: Options) -> (tempfile::TempDir, Db, i64) {
    readings_db_with(options, false)
}

/// [`readings_db`]; with `humidity`, the array declares two measures, `temperature` and
/// `humidity`, and every reading has a humidity too (percent, 0.1 resolution, on the
/// opposite daily cycle).
pub fn readings_db_with(options: Options, humidity: bool) -> (tempfile::TempDir, Db, i64) {
    readings_db_kept(options, humidity, None)
}

/// [`readings_db_with`]; with `rollup`, the array keeps rollups of that span when its
/// buckets expire (`CollectionSpec::rollup`).
pub fn readings_db_kept(
    options: Options,
    humidity: bool,
    rollup: Option<i64>,
) -> (tempfile::TempDir, Db, i64) {
    use skewdb::{Layout, NewItem};
    let (dir, db) = temp_db(options);
    let layout = Layout::Bucket {
        max_items: 1000,
        span: Some(3600),
    };
    let spec = if humidity {
        CollectionSpec::new("sensors").array_with_measures(
            "readings",
            layout,
            ["temperature", "humidity"],
        )
    } else {
        CollectionSpec::new("sensors").array("readings", layout)
    };
    let spec = match rollup {
        Some(span) => spec.rollup("readings", span),
        None => spec,
    };
    db.create_collection(spec).expect("create");
    const MINUTES: i64 = 525_600;
    for start in (0..MINUTES).step_by(10_000) {
        let mut batch = db.batch();
        for minute in start..(start + 10_000).min(MINUTES) {
            let phase = (minute % 1440) as f64 / 1440.0 * std::f64::consts::TAU;
            let celsius =
                ((20.0 + 5.0 * phase.sin() + ((minute * 7919) % 11) as f64 / 10.0) * 10.0).round()
                    / 10.0;
            let mut reading = NewItem::new([]).key(minute * 60).value(celsius);
            if humidity {
                let percent = ((50.0 - 15.0 * phase.sin()) * 10.0).round() / 10.0;
                reading = reading.measure("humidity", percent);
            }
            batch.push("sensors", "s1", "readings", reading);
        }
        batch.commit().expect("commit");
    }
    (dir, db, MINUTES)
}

/// Latency percentiles of a sample, in microseconds.
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

pub fn latency(samples: Vec<std::time::Duration>) -> Latency {
    // Nanoseconds up to about an hour (2^42), at 3 significant figures.
    let mut histogram = hdrhistogram::Histogram::<u64>::new_with_max(1 << 42, 3)
        .expect("a range and precision hdrhistogram takes");
    for sample in samples {
        histogram.saturating_record(u64::try_from(sample.as_nanos()).unwrap_or(u64::MAX));
    }
    let micros = |nanos: u64| nanos as f64 / 1e3;
    Latency {
        p50: micros(histogram.value_at_quantile(0.5)),
        p99: micros(histogram.value_at_quantile(0.99)),
        max: micros(histogram.max()),
    }
}
