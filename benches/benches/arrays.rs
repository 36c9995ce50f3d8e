//! Criterion benchmarks of the array layouts:
//! - push throughput per layout, batches of 1,000 under `Buffered`;
//! - `summary` over a year of minute readings beside decoding every item, same run, and
//!   the same for a second measure (humidity) of a year of two-measure readings;
//! - that year summarized per day (365 windows), raw and rolled up into hourly rollups;
//! - the first page (20 newest) of a 1,000,000-item `Subset` history, warm, owned and read
//!   in place;
//! - an hour of a year of minute readings (half in the newest sealed bucket, half in the
//!   open one), owned (`items`) and read in place (`for_each_item`), same run.
//!
//! Run: `cargo bench -p skewdb-benches --bench arrays`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use skewdb::{CollectionSpec, Db, Durability, ItemQuery, Layout, NewItem, Options};
use skewdb_benches::{readings_db, readings_db_kept, readings_db_with};

fn layouts() -> Vec<(&'static str, Layout)> {
    vec![
        ("embed", Layout::Embed),
        ("reference", Layout::Reference),
        ("subset_5", Layout::Subset { keep: 5 }),
        (
            "outlier_1000_overflow",
            Layout::Outlier { inline_cap: 1000 },
        ),
        (
            "bucket_1000_hour",
            Layout::Bucket {
                max_items: 1000,
                span: Some(3600),
            },
        ),
    ]
}

fn push_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("push_batch_of_1000_buffered");
    group.throughput(Throughput::Elements(1000));
    for (name, layout) in layouts() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::new().durability(Durability::Buffered)).unwrap();
        db.create_collection(CollectionSpec::new("c").array("items", layout))
            .unwrap();
        // Past the inline cap first, so that Outlier measures its overflow path.
        let mut warm = db.batch();
        for i in 0..1000i64 {
            warm.push(
                "c",
                "p0",
                "items",
                NewItem::new(i.to_le_bytes()).key(i).value(1.0),
            );
        }
        warm.commit().unwrap();
        let mut next = 1000i64;
        let mut round = 0u64;
        group.bench_function(name, |b| {
            b.iter(|| {
                // Embed parents grow with every push: spread them so none reaches the limit.
                let parent = if matches!(layout, Layout::Embed) {
                    format!("p{}", round % 500)
                } else {
                    "p0".to_string()
                };
                round += 1;
                let mut batch = db.batch();
                for _ in 0..1000 {
                    batch.push(
                        "c",
                        &parent,
                        "items",
                        NewItem::new(next.to_le_bytes()).key(next * 60).value(21.5),
                    );
                    next += 1;
                }
                batch.commit().unwrap();
            })
        });
    }
    group.finish();
}

fn summary_of_a_year(c: &mut Criterion) {
    summary_of_a_year_of(c, "summary_year_of_minute_readings", 0);
}

/// The same year with a second measure, humidity: its summary from the buckets' stored
/// summaries beside decoding every item for it.
fn second_measure_of_a_year(c: &mut Criterion) {
    summary_of_a_year_of(c, "humidity_of_a_year_of_minute_readings", 1);
}

/// Measure `measure` of a year of readings (with a second measure when it is 1): its
/// summary, and the same by decoding every item.
fn summary_of_a_year_of(c: &mut Criterion, name: &str, measure: usize) {
    let options = Options::new().durability(Durability::Buffered);
    let (_dir, db, minutes) = readings_db_with(options, measure == 1);
    let sensors = db.collection("sensors").unwrap();
    let year = 1..minutes * 60;
    let mut group = c.benchmark_group(name);
    group.bench_function("summary", |b| {
        b.iter(|| {
            let summary = sensors.summary("s1", "readings", year.clone()).unwrap();
            summary.unwrap().measure(measure).mean()
        })
    });
    group.bench_function("decode_every_item", |b| {
        b.iter(|| {
            let page = sensors
                .items("s1", "readings", &ItemQuery::new().range(year.clone()))
                .unwrap()
                .unwrap();
            page.items
                .iter()
                .filter_map(|i| i.measure(measure))
                .sum::<f64>()
        })
    });
    group.finish();
}

/// A year of minute readings summarized per day (365 windows): raw, and once every sealed
/// bucket has expired into hourly rollups.
fn year_per_day(c: &mut Criterion) {
    let mut group = c.benchmark_group("year_per_day");
    for (name, expire) in [("raw", false), ("rolled_up", true)] {
        let options = Options::new().durability(Durability::Buffered);
        let (_dir, db, minutes) = readings_db_kept(options, false, Some(3600));
        let sensors = db.collection("sensors").unwrap();
        if expire {
            sensors.expire_buckets("readings", minutes * 60).unwrap();
        }
        group.bench_function(name, |b| {
            b.iter(|| {
                let days = sensors.summary_windows("s1", "readings", .., 86_400);
                days.unwrap().unwrap().len()
            })
        });
    }
    group.finish();
}

fn subset_first_page(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new().durability(Durability::Buffered)).unwrap();
    db.create_collection(
        CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 5 }),
    )
    .unwrap();
    for start in (0..1_000_000u64).step_by(10_000) {
        let mut batch = db.batch();
        for i in start..start + 10_000 {
            batch.push(
                "products",
                "p1",
                "reviews",
                NewItem::new(format!("review {i}: five stars")).value(5.0),
            );
        }
        batch.commit().unwrap();
    }
    let products = db.collection("products").unwrap();
    let query = ItemQuery::new().descending().limit(20);
    assert_eq!(
        products
            .items("p1", "reviews", &query)
            .unwrap()
            .unwrap()
            .items
            .len(),
        20
    );
    c.bench_function("subset_history_1m/first_page_20_newest_warm", |b| {
        b.iter(|| products.items("p1", "reviews", &query).unwrap().unwrap())
    });
    c.bench_function(
        "subset_history_1m/first_page_20_newest_warm_in_place",
        |b| {
            b.iter(|| {
                let mut bytes = 0;
                products
                    .for_each_item("p1", "reviews", &query, |review| {
                        bytes += review.payload().len()
                    })
                    .unwrap()
                    .unwrap();
                bytes
            })
        },
    );
}

/// The hour that ends half an hour after the newest sealed bucket: 30 readings of that
/// bucket and 30 of the open one, each reading's value summed.
fn last_hour(c: &mut Criterion) {
    let options = Options::new().durability(Durability::Buffered);
    let (_dir, db, minutes) = readings_db(options);
    let sensors = db.collection("sensors").unwrap();
    let end = minutes * 60 - 1_800;
    let hour = ItemQuery::new().range(end - 3_600..end);
    let page = sensors.items("s1", "readings", &hour).unwrap().unwrap();
    assert_eq!(page.items.len(), 60);
    let mut group = c.benchmark_group("last_hour_of_a_year");
    group.bench_function("items", |b| {
        b.iter(|| {
            let page = sensors.items("s1", "readings", &hour).unwrap().unwrap();
            page.items.iter().filter_map(|i| i.value).sum::<f64>()
        })
    });
    group.bench_function("in_place", |b| {
        b.iter(|| {
            let mut sum = 0.0;
            sensors
                .for_each_item("s1", "readings", &hour, |reading| {
                    sum += reading.value().unwrap_or(0.0)
                })
                .unwrap()
                .unwrap();
            sum
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    push_throughput,
    summary_of_a_year,
    second_measure_of_a_year,
    year_per_day,
    subset_first_page,
    last_hour
);
criterion_main!(benches);
