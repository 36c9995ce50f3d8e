//! `skewdb demo`: the three seed scenarios (followers with one celebrity, product reviews,
//! sensor readings) in a temporary database, and what each costs.

use std::time::Instant;

use clap::ValueEnum;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde_json::json;
use skewdb::{CollectionSpec, Db, Durability, Error, MAX_RECORD_BYTES, Options};

use crate::Failure;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scale {
    Small,
    Medium,
}

impl std::fmt::Display for Scale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Scale::Small => "small",
            Scale::Medium => "medium",
        })
    }
}

/// What one scenario cost.
struct Row {
    scenario: &'static str,
    layout: &'static str,
    parents: u64,
    children: u64,
    refused: u64,
}

const SEED: u64 = 42;

/// Followers: most users have a handful, one celebrity has millions. Stored the way
/// applications embed by hand: the follower ids packed into the user's body, rewritten on
/// every follow. The celebrity's record hits the 16 MiB limit and is refused.
fn followers(db: &Db, users: u64, celebrity_followers: u64) -> Result<Row, Failure> {
    db.create_collection(CollectionSpec::new("followers"))?;
    let mut rng = StdRng::seed_from_u64(SEED);
    let counts = Zipf::new(2000.0, 1.2).map_err(|e| Failure(e.to_string()))?;
    let mut children = 0;
    let mut batch = db.batch();
    for user in 0..users {
        let count = counts.sample(&mut rng) as u64;
        let body: Vec<u8> = (0..count)
            .flat_map(|_| rng.random::<u64>().to_le_bytes())
            .collect();
        children += count;
        batch.put("followers", format!("user{user:07}"), body);
        if batch.len() >= 1000 {
            std::mem::replace(&mut batch, db.batch()).commit()?;
        }
    }
    batch.commit()?;
    // The celebrity gains followers in waves; each wave rewrites the whole embedded list.
    let mut refused = 0;
    let mut body = Vec::new();
    let wave = celebrity_followers / 8;
    for _ in 0..8 {
        let mut grown = body.clone();
        grown.extend((0..wave).flat_map(|i| i.to_le_bytes()));
        let mut batch = db.batch();
        batch.put("followers", "celebrity", &grown);
        match batch.commit() {
            Ok(()) => {
                body = grown;
            }
            Err(Error::RecordTooLarge { .. }) => refused += 1,
            Err(error) => return Err(error.into()),
        }
    }
    children += body.len() as u64 / 8;
    Ok(Row {
        scenario: "followers",
        layout: "embed by hand",
        parents: users + 1,
        children,
        refused,
    })
}

/// Reviews: Zipf-popular products; the body embeds every review, as applications do before
/// they adopt the Subset pattern.
fn reviews(db: &Db, products: u64, reviews: u64) -> Result<Row, Failure> {
    db.create_collection(CollectionSpec::new("reviews"))?;
    let mut rng = StdRng::seed_from_u64(SEED + 1);
    let popularity = Zipf::new(products as f64, 1.0).map_err(|e| Failure(e.to_string()))?;
    let mut per_product = vec![0u64; products as usize];
    for _ in 0..reviews {
        per_product[popularity.sample(&mut rng) as usize - 1] += 1;
    }
    let mut batch = db.batch();
    for (product, count) in per_product.iter().enumerate() {
        let mut body = Vec::new();
        for review in 0..*count {
            body.extend_from_slice(
                format!(
                    "{{\"stars\":{},\"text\":\"review {review} of a fine product\"}}",
                    1 + review % 5
                )
                .as_bytes(),
            );
        }
        batch.put("reviews", format!("product{product:06}"), body);
        if batch.len() >= 500 {
            std::mem::replace(&mut batch, db.batch()).commit()?;
        }
    }
    batch.commit()?;
    Ok(Row {
        scenario: "reviews",
        layout: "embed by hand",
        parents: products,
        children: reviews,
        refused: 0,
    })
}

/// Sensor readings: one parent per sensor and day, readings packed as (minute, value).
fn sensors(db: &Db, sensors: u64, days: u64) -> Result<Row, Failure> {
    db.create_collection(CollectionSpec::new("sensors"))?;
    let mut rng = StdRng::seed_from_u64(SEED + 2);
    let mut batch = db.batch();
    for sensor in 0..sensors {
        for day in 0..days {
            let body: Vec<u8> = (0..1440u64)
                .flat_map(|minute| {
                    let mut reading = minute.to_le_bytes().to_vec();
                    reading.extend_from_slice(&(20.0 + rng.random::<f64>() * 5.0).to_le_bytes());
                    reading
                })
                .collect();
            batch.put("sensors", format!("sensor{sensor:04}/day{day:04}"), body);
        }
        std::mem::replace(&mut batch, db.batch()).commit()?;
    }
    Ok(Row {
        scenario: "sensors",
        layout: "embed by hand",
        parents: sensors * days,
        children: sensors * days * 1440,
        refused: 0,
    })
}

/// Reads every parent of `collection` once with no cache and returns storage reads per parent.
fn pages_per_read(db: &Db, collection: &str) -> Result<f64, Failure> {
    let keys: Vec<Vec<u8>> = db
        .collection(collection)?
        .scan::<&[u8]>(..)?
        .map(|d| d.map(|d| d.key().to_vec()))
        .collect::<Result<_, _>>()?;
    db.reset_stats();
    let handle = db.collection(collection)?;
    for key in &keys {
        handle.get(key)?;
    }
    let stats = db.stats()?;
    Ok(stats.hot.misses as f64 / keys.len().max(1) as f64)
}

pub fn run(scale: Scale, json: bool) -> Result<(), Failure> {
    let dir = tempfile::tempdir()?;
    let (users, celebrity, products, review_count, sensor_count, days) = match scale {
        Scale::Small => (5_000, 2_400_000, 2_000, 50_000, 20, 7),
        Scale::Medium => (50_000, 2_400_000, 20_000, 500_000, 200, 7),
    };
    let started = Instant::now();
    let options = Options::new().durability(Durability::Buffered);
    let db = Db::open(dir.path(), options.clone())?;
    let rows = vec![
        followers(&db, users, celebrity)?,
        reviews(&db, products, review_count)?,
        sensors(&db, sensor_count, days)?,
    ];
    db.checkpoint()?;
    let build = started.elapsed();
    drop(db);
    // Reopen with no cache, so every page a read touches comes from storage.
    let reopen_started = Instant::now();
    let db = Db::open(dir.path(), options.cache_bytes(0))?;
    let reopen = reopen_started.elapsed();
    let inspection = db.verify()?;
    if !json {
        println!(
            "skewdb demo ({scale} scale): three seed scenarios in {}\n",
            dir.path().display()
        );
        println!(
            "{:<10} {:<14} {:>8} {:>10} {:>14} {:>10} {:>8}",
            "scenario", "layout", "parents", "children", "largest rec B", "pages/get", "refused"
        );
    }
    for row in &rows {
        let pages = pages_per_read(&db, row.scenario)?;
        let largest = largest_record(&db, row.scenario)?;
        if json {
            println!(
                "{}",
                json!({"scenario": row.scenario, "layout": row.layout, "parents": row.parents, "children": row.children,
                       "largest_record_bytes": largest, "pages_per_get": pages, "refused_writes": row.refused})
            );
        } else {
            println!(
                "{:<10} {:<14} {:>8} {:>10} {:>14} {:>10.2} {:>8}",
                row.scenario, row.layout, row.parents, row.children, largest, pages, row.refused
            );
        }
    }
    let disk_bytes: u64 = inspection.files.iter().map(|(_, bytes)| bytes).sum();
    if json {
        println!(
            "{}",
            json!({"bytes_on_disk": disk_bytes, "records": inspection.records, "large_records": inspection.large_records,
                   "pages": inspection.leaf_pages + inspection.internal_pages, "build_ms": build.as_millis() as u64,
                   "reopen_ms": reopen.as_secs_f64() * 1000.0, "record_limit_bytes": MAX_RECORD_BYTES})
        );
    } else {
        println!(
            "\n{} bytes on disk, {} records ({} too large for a page), {} pages; built in {:.2} s, reopened in {:.1} ms, verified.",
            disk_bytes,
            inspection.records,
            inspection.large_records,
            inspection.leaf_pages + inspection.internal_pages,
            build.as_secs_f64(),
            reopen.as_secs_f64() * 1000.0
        );
        println!(
            "Embedding by hand: the celebrity's follower list was refused at the {} byte record limit; \
             the pattern layouts (Outlier, Subset, Bucket) are what keep such parents small.",
            MAX_RECORD_BYTES
        );
    }
    Ok(())
}

fn largest_record(db: &Db, collection: &str) -> Result<u64, Failure> {
    let mut largest = 0;
    for document in db.collection(collection)?.scan::<&[u8]>(..)? {
        largest = largest.max(document?.body().len() as u64 + skewdb::RECORD_OVERHEAD_BYTES as u64);
    }
    Ok(largest)
}
