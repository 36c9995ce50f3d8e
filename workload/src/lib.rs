//! The seed workloads (followers, reviews, sensor readings) from a fixed seed, and the
//! working-set benchmark that runs them against each layout and cache budget. Used by
//! `skewdb bench` and by the `working_set` bench.

pub mod plot;
pub mod working_set;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use skewdb::{Collection, CollectionSpec, Db, Error, ItemQuery, Layout, NewItem, Options, Result};

pub const SEED: u64 = 42;
pub const COLLECTION: &str = "bench";
pub const FIELD: &str = "items";

/// The three seed workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Users with power-law follower counts and one celebrity; Zipf profile reads (the most
    /// followed read most), a stream of follows.
    Followers,
    /// Products with heavy-tailed review counts, the largest on the most viewed; Zipf
    /// product views rendering the body and the 5 newest reviews, 1% "show all", a stream of
    /// new reviews.
    Reviews,
    /// Sensors reading once a minute; appends, last-hour ranges and one-day aggregates.
    Sensors,
}

impl Workload {
    pub const ALL: [Workload; 3] = [Workload::Followers, Workload::Reviews, Workload::Sensors];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Followers => "followers",
            Workload::Reviews => "reviews",
            Workload::Sensors => "sensors",
        }
    }

    /// The layouts that fit the workload; Embed and Reference always among them.
    pub fn layouts(self) -> Vec<Layout> {
        let fitting = match self {
            Workload::Followers => Layout::Outlier { inline_cap: 200 },
            Workload::Reviews => Layout::Subset { keep: 5 },
            Workload::Sensors => Layout::Bucket {
                max_items: 1000,
                span: Some(3600),
            },
        };
        vec![Layout::Embed, Layout::Reference, fitting]
    }

    /// What one operation of this workload is, for people.
    pub fn operation(self) -> &'static str {
        match self {
            Workload::Followers => "94% profile reads, 5% follows, 1% follower lists",
            Workload::Reviews => "94% product views, 5% new reviews, 1% show all",
            Workload::Sensors => "50% appends, 30% last-hour ranges, 20% one-day aggregates",
        }
    }
}

/// Sizes of one run; `scale` multiplies the parents and items.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub users: u64,
    pub celebrity_followers: u64,
    pub products: u64,
    pub reviews: u64,
    pub sensors: u64,
    pub days: u64,
    /// Operations before the counters are reset, then operations measured.
    pub warmup_ops: usize,
    pub measured_ops: usize,
}

impl Sizes {
    pub fn at_scale(scale: u64) -> Sizes {
        let scale = scale.max(1);
        Sizes {
            users: 20_000 * scale,
            celebrity_followers: 100_000 * scale,
            products: 10_000 * scale,
            reviews: 200_000 * scale,
            sensors: 100 * scale,
            days: 3,
            warmup_ops: 10_000 * scale as usize,
            measured_ops: 4_000 * scale as usize,
        }
    }
}

impl Sizes {
    /// A few seconds in a debug build, for tests.
    pub fn tiny() -> Sizes {
        Sizes {
            users: 300,
            celebrity_followers: 3_000,
            products: 200,
            reviews: 3_000,
            sensors: 4,
            days: 2,
            warmup_ops: 100,
            measured_ops: 200,
        }
    }
}

/// One operation of a workload's stream.
#[derive(Clone, Debug)]
pub enum Op {
    /// Read a parent: a profile, or a product page with its 5 newest reviews.
    Read(u64),
    /// Every item of a parent.
    ReadAll(u64),
    Push(u64, i64, Option<f64>, Vec<u8>),
    /// Items of a sensor in the last hour before its newest reading.
    LastHour(u64),
    /// The summary of a sensor's last day.
    DaySummary(u64),
}

/// The key of parent `id`.
pub fn parent_key(workload: Workload, id: u64) -> String {
    match workload {
        Workload::Followers => format!("user{id:08}"),
        Workload::Reviews => format!("product{id:07}"),
        Workload::Sensors => format!("sensor{id:05}"),
    }
}

/// Popularity rank to parent id: a fixed permutation, so the most popular parents are
/// scattered over the key space as real ids are.
fn scatter(rank: u64, parents: u64) -> u64 {
    // Each step is a bijection of [0, size): multiplying by an odd number, a right xorshift
    // of the value itself, an affine step with an odd factor. Walking the cycle until the
    // value falls below `parents` keeps it a bijection of [0, parents).
    let size = parents.next_power_of_two();
    let (mask, shift) = (size - 1, size.trailing_zeros() / 2 + 1);
    let mut x = rank;
    loop {
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15) & mask;
        x ^= x >> shift;
        x = x.wrapping_mul(5).wrapping_add(3) & mask;
        if x < parents {
            return x;
        }
    }
}

fn zipf(n: u64, exponent: f64) -> Zipf<f64> {
    Zipf::new(n as f64, exponent).expect("valid Zipf parameters")
}

fn review_text(rng: &mut StdRng, review: u64, stars: u32) -> Vec<u8> {
    let words = [
        "great", "poor", "sturdy", "late", "value", "again", "broke", "fits",
    ];
    let mut text = format!("review {review}: {stars} stars;");
    for _ in 0..rng.random_range(10..24) {
        text.push(' ');
        text.push_str(words[rng.random_range(0..words.len())]);
    }
    text.into_bytes()
}

/// Commits `batch`; a batch refused at the record limit is counted, not an error (Embed's
/// celebrity hits it by design).
fn commit(batch: &mut skewdb::Batch, refused: &mut u64) -> Result<()> {
    match batch.commit() {
        Err(Error::RecordTooLarge { .. }) => {
            *refused += 1;
            Ok(())
        }
        other => other,
    }
}

/// Loads a workload's data into `db` under `layout`; returns the batches refused at the
/// record limit.
pub fn build(db: &Db, workload: Workload, layout: Layout, sizes: &Sizes) -> Result<u64> {
    db.create_collection(CollectionSpec::new(COLLECTION).array(FIELD, layout))?;
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut refused = 0;
    let mut batch = db.batch();
    let flush = |batch: &mut skewdb::Batch, refused: &mut u64, force: bool| {
        if force || batch.len() >= 5_000 {
            commit(batch, refused)
        } else {
            Ok(())
        }
    };
    match workload {
        Workload::Followers => {
            // Power-law counts, the largest given to the most read users; rank 0 is the
            // celebrity.
            let sampler = zipf(5_000, 1.6);
            let mut counts: Vec<u64> = (0..sizes.users)
                .map(|_| sampler.sample(&mut rng) as u64)
                .collect();
            counts.sort_unstable_by(|a, b| b.cmp(a));
            counts[0] = sizes.celebrity_followers;
            for (rank, &followers) in counts.iter().enumerate() {
                let id = scatter(rank as u64, sizes.users);
                let key = parent_key(workload, id);
                let bio = "x".repeat(80);
                batch.put(
                    COLLECTION,
                    &key,
                    format!("{{\"name\":\"user {id}\",\"bio\":\"{bio}\"}}"),
                );
                for follower in 0..followers {
                    batch.push(
                        COLLECTION,
                        &key,
                        FIELD,
                        NewItem::new(follower.to_le_bytes()),
                    );
                    flush(&mut batch, &mut refused, false)?;
                }
            }
        }
        Workload::Reviews => {
            let popularity = zipf(sizes.products, 1.0);
            for rank in 0..sizes.products {
                let id = scatter(rank, sizes.products);
                let body = format!(
                    "{{\"title\":\"product {id}\",\"about\":\"{}\"}}",
                    "y".repeat(160)
                );
                batch.put(COLLECTION, parent_key(workload, id), body);
            }
            // Reviews per product first, then each product's reviews together (at random
            // times), so that loading never stages many large records at once.
            let mut counts = vec![0u64; sizes.products as usize];
            for _ in 0..sizes.reviews {
                counts[popularity.sample(&mut rng) as usize - 1] += 1;
            }
            let mut review = 0;
            for (rank, &count) in counts.iter().enumerate() {
                let id = scatter(rank as u64, sizes.products);
                for _ in 0..count {
                    let stars = rng.random_range(1..=5);
                    let text = review_text(&mut rng, review, stars);
                    let time = rng.random_range(0..sizes.reviews) as i64;
                    batch.push(
                        COLLECTION,
                        parent_key(workload, id),
                        FIELD,
                        NewItem::new(text).key(time).value(stars as f64),
                    );
                    review += 1;
                    flush(&mut batch, &mut refused, false)?;
                }
            }
        }
        Workload::Sensors => {
            let minutes = sizes.days * 1440;
            for sensor in 0..sizes.sensors {
                let key = parent_key(workload, sensor);
                batch.put(
                    COLLECTION,
                    &key,
                    format!("{{\"sensor\":{sensor},\"unit\":\"C\"}}"),
                );
                for minute in 0..minutes {
                    let celsius = 20.0 + rng.random::<f64>() * 5.0;
                    batch.push(
                        COLLECTION,
                        &key,
                        FIELD,
                        NewItem::new([]).key(minute as i64 * 60).value(celsius),
                    );
                    flush(&mut batch, &mut refused, false)?;
                }
            }
        }
    }
    flush(&mut batch, &mut refused, true)?;
    db.checkpoint()?;
    Ok(refused)
}

/// The operation stream of a workload, the same for every layout.
pub fn operations(workload: Workload, sizes: &Sizes) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(SEED + 1);
    let count = sizes.warmup_ops + sizes.measured_ops;
    match workload {
        Workload::Followers => {
            let reads = zipf(sizes.users, 0.99);
            let mut next_follower = u64::MAX / 2;
            (0..count)
                .map(|_| {
                    let id = scatter(reads.sample(&mut rng) as u64 - 1, sizes.users);
                    match rng.random_range(0..100) {
                        0 => Op::ReadAll(id),
                        1..=5 => {
                            next_follower += 1;
                            Op::Push(
                                id,
                                next_follower as i64,
                                None,
                                next_follower.to_le_bytes().to_vec(),
                            )
                        }
                        _ => Op::Read(id),
                    }
                })
                .collect()
        }
        Workload::Reviews => {
            let views = zipf(sizes.products, 0.99);
            let mut next_review = sizes.reviews;
            (0..count)
                .map(|_| {
                    let id = scatter(views.sample(&mut rng) as u64 - 1, sizes.products);
                    match rng.random_range(0..100) {
                        0 => Op::ReadAll(id),
                        1..=5 => {
                            next_review += 1;
                            let stars = rng.random_range(1..=5);
                            let text = review_text(&mut rng, next_review, stars);
                            Op::Push(id, next_review as i64, Some(stars as f64), text)
                        }
                        _ => Op::Read(id),
                    }
                })
                .collect()
        }
        Workload::Sensors => {
            let reads = zipf(sizes.sensors, 0.99);
            let mut clocks = vec![sizes.days as i64 * 86_400; sizes.sensors as usize];
            (0..count)
                .map(|_| {
                    let id = reads.sample(&mut rng) as u64 - 1;
                    match rng.random_range(0..10) {
                        0..=4 => {
                            let clock = &mut clocks[id as usize];
                            let key = *clock;
                            *clock += 60;
                            Op::Push(id, key, Some(20.0 + rng.random::<f64>() * 5.0), Vec::new())
                        }
                        5..=7 => Op::LastHour(id),
                        _ => Op::DaySummary(id),
                    }
                })
                .collect()
        }
    }
}

/// Runs one operation the way an application would: a product page takes the 5 newest
/// reviews from the parent when it holds them (Embed without overflow, Subset) and asks
/// `items` otherwise. Returns how many items it saw, so nothing is optimized away.
pub fn run_op(
    db: &Db,
    collection: &Collection,
    workload: Workload,
    layout: Layout,
    op: &Op,
) -> Result<u64> {
    let key = |id: u64| parent_key(workload, id);
    let newest_of = |items: &[skewdb::Item], n: usize| items.len().min(n) as u64;
    Ok(match op {
        Op::Read(id) => {
            let Some(doc) = collection.get(key(*id))? else {
                return Ok(0);
            };
            let array = doc.array(FIELD).expect("the schema has the field");
            let inline_holds_newest =
                !array.has_overflow || matches!(layout, Layout::Subset { keep } if keep >= 5);
            if workload == Workload::Followers || inline_holds_newest {
                newest_of(&array.inline, 5) + doc.body().len() as u64
            } else {
                let page =
                    collection.items(key(*id), FIELD, &ItemQuery::new().descending().limit(5))?;
                page.map_or(0, |p| p.items.len() as u64)
            }
        }
        Op::ReadAll(id) => collection
            .items(key(*id), FIELD, &ItemQuery::new())?
            .map_or(0, |p| p.items.len() as u64),
        Op::Push(id, item_key, value, payload) => {
            let mut item = NewItem::new(payload.clone()).key(*item_key);
            if let Some(value) = value {
                item = item.value(*value);
            }
            let mut batch = db.batch();
            batch.push(COLLECTION, key(*id), FIELD, item);
            match batch.commit() {
                Ok(()) => 1,
                Err(Error::RecordTooLarge { .. }) => 0,
                Err(error) => return Err(error),
            }
        }
        Op::LastHour(id) => {
            let newest = newest_key(collection, &key(*id))?;
            collection
                .items(
                    key(*id),
                    FIELD,
                    &ItemQuery::new().range(newest - 3600..=newest),
                )?
                .map_or(0, |p| p.items.len() as u64)
        }
        Op::DaySummary(id) => {
            let newest = newest_key(collection, &key(*id))?;
            collection
                .summary(key(*id), FIELD, newest - 86_400..=newest)?
                .map_or(0, |s| s.count)
        }
    })
}

/// A sensor's newest reading time, from the summary its parent record keeps.
fn newest_key(collection: &Collection, key: &str) -> Result<i64> {
    let doc = collection.get(key)?;
    Ok(doc
        .and_then(|d| d.array(FIELD).and_then(|a| a.summary.max_key))
        .unwrap_or(0))
}

/// Options every benchmark database is built with.
pub fn build_options() -> Options {
    Options::new().durability(skewdb::Durability::Buffered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_is_a_permutation() {
        for parents in [1, 2, 3, 200, 300, 1_000, 10_000, 20_000] {
            let mut seen = vec![false; parents as usize];
            for rank in 0..parents {
                let id = scatter(rank, parents);
                assert!(!seen[id as usize], "{parents}: {id} twice");
                seen[id as usize] = true;
            }
        }
    }
}
