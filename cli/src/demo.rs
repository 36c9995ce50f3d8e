//! `skewdb demo`: the three seed scenarios (followers with one celebrity, product reviews,
//! sensor readings), each built under every layout that fits it, in temporary databases,
//! and what each layout costs.

use std::time::Instant;

use clap::ValueEnum;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde_json::json;
use skewdb::{CollectionSpec, Db, Durability, Error, Layout, NewItem, Options};

use skewdb_cli::failure::Failure;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scale {
    /// For tests: a few seconds even in a debug build.
    #[value(hide = true)]
    Tiny,
    Small,
    Medium,
}

impl std::fmt::Display for Scale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Scale::Tiny => "tiny",
            Scale::Small => "small",
            Scale::Medium => "medium",
        })
    }
}

struct Sizes {
    users: u64,
    celebrity_followers: u64,
    products: u64,
    reviews: u64,
    sensors: u64,
    days: u64,
}

/// What one scenario cost under one layout.
struct Row {
    scenario: &'static str,
    layout: Layout,
    items: u64,
    refused: u64,
    records: u64,
    disk_bytes: u64,
    largest_record: u64,
    pages_per_get: f64,
    seconds: f64,
}

const SEED: u64 = 42;
const COLLECTION: &str = "demo";
const FIELD: &str = "items";

/// Commits a batch; a batch refused for the record limit counts as refused, not an error.
fn commit(batch: &mut skewdb::Batch, refused: &mut u64) -> Result<(), Failure> {
    match batch.commit() {
        Ok(()) => Ok(()),
        Err(Error::RecordTooLarge { .. }) => {
            *refused += 1;
            Ok(())
        }
        Err(error) => Err(error.into()),
    }
}

/// Followers: Zipf-distributed counts, and one celebrity gaining followers in waves.
fn followers(db: &Db, sizes: &Sizes) -> Result<(u64, u64, u64), Failure> {
    let mut rng = StdRng::seed_from_u64(SEED);
    let counts = Zipf::new(5000.0, 1.1).map_err(|e| Failure::invalid_input(e.to_string()))?;
    let (mut items, mut refused) = (0, 0);
    let mut batch = db.batch();
    for user in 0..sizes.users {
        let key = format!("user{user:07}");
        batch.put(COLLECTION, &key, format!("{{\"name\":\"user {user}\"}}"));
        for _ in 0..counts.sample(&mut rng) as u64 {
            batch.push(
                COLLECTION,
                &key,
                FIELD,
                NewItem::new(rng.random::<u64>().to_le_bytes()),
            );
            items += 1;
        }
        if batch.len() >= 5000 {
            commit(&mut batch, &mut refused)?;
        }
    }
    commit(&mut batch, &mut refused)?;
    for wave in (0..sizes.celebrity_followers).step_by(50_000) {
        let mut batch = db.batch();
        for follower in wave..(wave + 50_000).min(sizes.celebrity_followers) {
            batch.push(
                COLLECTION,
                "celebrity",
                FIELD,
                NewItem::new(follower.to_le_bytes()),
            );
        }
        let before = refused;
        commit(&mut batch, &mut refused)?;
        if refused == before {
            items += 50_000.min(sizes.celebrity_followers - wave);
        }
    }
    Ok((sizes.users + 1, items, refused))
}

/// Reviews: Zipf product popularity; each review a short text with a star rating.
fn reviews(db: &Db, sizes: &Sizes) -> Result<(u64, u64, u64), Failure> {
    let mut rng = StdRng::seed_from_u64(SEED + 1);
    let popularity =
        Zipf::new(sizes.products as f64, 1.0).map_err(|e| Failure::invalid_input(e.to_string()))?;
    let mut refused = 0;
    let mut batch = db.batch();
    for review in 0..sizes.reviews {
        let product = popularity.sample(&mut rng) as u64 - 1;
        let stars = rng.random_range(1..=5);
        let text = format!("review {review}: {stars} stars, would buy again");
        batch.push(
            COLLECTION,
            format!("product{product:06}"),
            FIELD,
            NewItem::new(text).value(stars as f64),
        );
        if batch.len() >= 5000 {
            commit(&mut batch, &mut refused)?;
        }
    }
    commit(&mut batch, &mut refused)?;
    Ok((sizes.products.min(sizes.reviews), sizes.reviews, refused))
}

/// Sensor readings: one reading a minute per sensor, keyed by the minute's start in seconds.
fn sensors(db: &Db, sizes: &Sizes) -> Result<(u64, u64, u64), Failure> {
    let mut rng = StdRng::seed_from_u64(SEED + 2);
    let minutes = sizes.days * 1440;
    let mut refused = 0;
    for sensor in 0..sizes.sensors {
        let key = format!("sensor{sensor:04}");
        for start in (0..minutes).step_by(1440) {
            let mut batch = db.batch();
            for minute in start..start + 1440 {
                let celsius = 20.0 + rng.random::<f64>() * 5.0;
                batch.push(
                    COLLECTION,
                    &key,
                    FIELD,
                    NewItem::new([]).key(minute as i64 * 60).value(celsius),
                );
            }
            commit(&mut batch, &mut refused)?;
        }
    }
    Ok((sizes.sensors, sizes.sensors * minutes, refused))
}

type Builder = fn(&Db, &Sizes) -> Result<(u64, u64, u64), Failure>;

fn scenarios() -> Vec<(&'static str, Builder, Vec<Layout>)> {
    let hourly = Layout::Bucket {
        max_items: 1000,
        span: Some(3600),
    };
    vec![
        (
            "followers",
            followers as Builder,
            vec![
                Layout::Embed,
                Layout::Reference,
                Layout::Outlier { inline_cap: 1000 },
            ],
        ),
        (
            "reviews",
            reviews,
            vec![Layout::Embed, Layout::Reference, Layout::Subset { keep: 5 }],
        ),
        (
            "sensors",
            sensors,
            vec![Layout::Embed, Layout::Reference, hourly],
        ),
    ]
}

fn build(
    scenario: &'static str,
    builder: Builder,
    layout: Layout,
    sizes: &Sizes,
) -> Result<Row, Failure> {
    let dir = tempfile::tempdir()?;
    let options = Options::new().durability(Durability::Buffered);
    let started = Instant::now();
    let db = Db::open(dir.path(), options.clone())?;
    db.create_collection(CollectionSpec::new(COLLECTION).array(FIELD, layout))?;
    let (_, items, refused) = builder(&db, sizes)?;
    drop(db);
    let seconds = started.elapsed().as_secs_f64();
    // Reopen with no cache: every page a read touches comes from storage.
    let db = Db::open(dir.path(), options.cache_bytes(0))?;
    let report = db.verify()?;
    let collection = db.collection(COLLECTION)?;
    let keys: Vec<Vec<u8>> = collection
        .scan(..)?
        .map(|d| d.map(|d| d.key().to_vec()))
        .collect::<Result<_, _>>()?;
    db.reset_stats();
    for key in &keys {
        collection.get(key)?;
    }
    let stats = db.stats()?;
    let disk_bytes = std::fs::read_dir(dir.path())?
        .map(|entry| entry.and_then(|e| e.metadata()).map(|m| m.len()))
        .sum::<Result<u64, _>>()?;
    Ok(Row {
        scenario,
        layout,
        items,
        refused,
        records: report.records,
        disk_bytes,
        largest_record: report.largest_record_bytes,
        pages_per_get: stats.cache.hot.misses as f64 / keys.len().max(1) as f64,
        seconds,
    })
}

pub fn run(scale: Scale, json: bool) -> Result<(), Failure> {
    let sizes = match scale {
        Scale::Tiny => Sizes {
            users: 200,
            celebrity_followers: 700_000,
            products: 200,
            reviews: 2_000,
            sensors: 2,
            days: 2,
        },
        Scale::Small => Sizes {
            users: 2_000,
            celebrity_followers: 1_000_000,
            products: 2_000,
            reviews: 50_000,
            sensors: 10,
            days: 7,
        },
        Scale::Medium => Sizes {
            users: 20_000,
            celebrity_followers: 2_000_000,
            products: 20_000,
            reviews: 500_000,
            sensors: 50,
            days: 30,
        },
    };
    if !json {
        println!(
            "skewdb demo ({scale} scale): each seed scenario built under each layout that fits it\n"
        );
    }
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::NOTHING)
        .set_header([
            "scenario",
            "layout",
            "parents",
            "items",
            "disk bytes",
            "largest rec B",
            "pages/get",
            "refused",
            "secs",
        ]);
    for (scenario, builder, layouts) in scenarios() {
        for layout in layouts {
            let row = build(scenario, builder, layout, &sizes)?;
            if json {
                println!(
                    "{}",
                    json!({"scenario": row.scenario, "layout": row.layout.describe(), "parents": row.records, "items": row.items, "bytes_on_disk": row.disk_bytes, "largest_record_bytes": row.largest_record,
                           "pages_per_get": row.pages_per_get, "refused_writes": row.refused, "seconds": row.seconds})
                );
            } else {
                table.add_row([
                    row.scenario.to_string(),
                    row.layout.describe(),
                    row.records.to_string(),
                    row.items.to_string(),
                    row.disk_bytes.to_string(),
                    row.largest_record.to_string(),
                    format!("{:.2}", row.pages_per_get),
                    row.refused.to_string(),
                    format!("{:.2}", row.seconds),
                ]);
            }
        }
    }
    if !json {
        // Numbers to the right, names to the left.
        for column in table.column_iter_mut().skip(2) {
            column.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
        println!("{table}");
        println!(
            "\nparents: parent records; items: items stored (a refused batch stores none); pages/get: storage reads \
             per parent read with no cache; refused: batches refused at the 16 MiB record limit."
        );
    }
    Ok(())
}
