//! The slow operations themselves, not the average: reads timed one by one and sorted into
//! classes by what came before them, so that a percentile names its cause.
//!
//! - `sensors`: 50 sensors with a month of minute readings under `Bucket { max_items:
//!   1000, span: one hour }`, compacted; then appends (half the operations) and last-hour
//!   ranges read in place (`for_each_item`), each sensor's clock moving on with its appends.
//!   A range is classed by whether its sensor was written since its last read, and whether
//!   a bucket sealed since.
//! - `followers`: 20,000 users with power-law follower counts (the celebrity with 100,000)
//!   under `Outlier { inline_cap: 1000 }`, compacted, 40,000 profile reads to warm up; then
//!   profile reads (`get_projected(key, &[])`, 94%) and follows (6%), Zipf(0.99) over users.
//!   A read is classed by whether its user was followed since its last read, and whether it
//!   has 300 followers or more (a record of several KiB).
//!
//! Run: `cargo bench -p skewdb-benches --bench tails -- sensors|followers [--immediate]
//! [--owned]` (`--immediate`: every write durable, as the peers harness writes; default
//! `Buffered`; `--owned`: ranges through `items`, which older builds have too, so that the
//! same file measures a build from before `for_each_item`).
//! It prints, per class, the count and the p50, p90 and p99 in nanoseconds.

use std::collections::BTreeMap;
use std::time::Instant;

use skewdb::{CollectionSpec, Db, Durability, ItemQuery, Layout, NewItem, Options};

/// A small deterministic generator (xorshift64), so that every run reads the same stream.
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A Zipf(`s`)-distributed rank in `[0, n)`, by inverting the cumulative weights.
    fn zipf(&mut self, cumulative: &[f64]) -> usize {
        let target = self.unit() * cumulative[cumulative.len() - 1];
        cumulative.partition_point(|&c| c < target)
    }
}

fn zipf_weights(n: usize, s: f64) -> Vec<f64> {
    let mut total = 0.0;
    (1..=n)
        .map(|rank| {
            total += 1.0 / (rank as f64).powf(s);
            total
        })
        .collect()
}

/// Latencies by class, printed as count, p50, p90 and p99 in nanoseconds.
#[derive(Default)]
struct Classes(BTreeMap<String, Vec<u64>>);

impl Classes {
    fn add(&mut self, class: String, nanos: u64) {
        self.0.entry(class).or_default().push(nanos);
        self.0.entry("all".to_string()).or_default().push(nanos);
    }

    fn print(mut self) {
        println!("| class | reads | p50 ns | p90 ns | p99 ns |\n|---|---|---|---|---|");
        for (class, nanos) in &mut self.0 {
            nanos.sort_unstable();
            let at = |q: f64| nanos[((nanos.len() - 1) as f64 * q) as usize];
            println!(
                "| {class} | {} | {} | {} | {} |",
                nanos.len(),
                at(0.5),
                at(0.9),
                at(0.99)
            );
        }
    }
}

fn options(immediate: bool) -> Options {
    let durability = match immediate {
        true => Durability::Immediate,
        false => Durability::Buffered,
    };
    Options::new().durability(durability)
}

fn sensors(immediate: bool, owned: bool) {
    const SENSORS: usize = 50;
    const LOADED: i64 = 30 * 86_400;
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Db::open(dir.path(), options(immediate)).expect("open");
    let layout = Layout::Bucket {
        max_items: 1000,
        span: Some(3600),
    };
    let spec = CollectionSpec::new("sensors").array("readings", layout);
    let sensors = db.create_collection(spec).expect("create");
    let key = |sensor: usize| (sensor as u64).to_be_bytes();
    let mut batch = db.batch();
    for sensor in 0..SENSORS {
        for time in (0..LOADED).step_by(60) {
            let reading = NewItem::new([]).key(time).value((time % 97) as f64);
            batch.push("sensors", key(sensor), "readings", reading);
            if batch.len() >= 10_000 {
                batch.commit().expect("load");
            }
        }
    }
    batch.commit().expect("load");
    db.compact().expect("compact");
    let mut clock = vec![LOADED; SENSORS];
    let mut written = [false; SENSORS];
    let mut sealed = [false; SENSORS];
    let mut stream = Stream(88_172_645_463_325_252);
    let mut classes = Classes::default();
    for _ in 0..20_000 {
        let sensor = stream.next() as usize % SENSORS;
        if stream.next().is_multiple_of(2) {
            let mut batch = db.batch();
            let reading = NewItem::new([]).key(clock[sensor]).value(1.0);
            batch.push("sensors", key(sensor), "readings", reading);
            batch.commit().expect("append");
            clock[sensor] += 60;
            written[sensor] = true;
            // The reading that opens an hour sealed the hour before.
            sealed[sensor] |= clock[sensor] % 3600 == 60;
            continue;
        }
        let now = clock[sensor];
        let hour = ItemQuery::new().range(now - 3600..now);
        let start = Instant::now();
        let count = match owned {
            true => {
                let page = sensors.items(key(sensor), "readings", &hour);
                page.expect("range").expect("sensor").items.len()
            }
            false => in_place(&sensors, &key(sensor), &hour),
        };
        let nanos = start.elapsed().as_nanos() as u64;
        assert!(count >= 59, "{count} readings in the last hour");
        let class = match (written[sensor], sealed[sensor]) {
            (false, _) => "unchanged since its last read",
            (true, false) => "written since its last read",
            (true, true) => "a bucket sealed since its last read",
        };
        classes.add(class.to_string(), nanos);
        (written[sensor], sealed[sensor]) = (false, false);
    }
    classes.print();
}

/// The readings of a sensor's range, counted in place.
fn in_place(sensors: &skewdb::Collection, key: &[u8], query: &ItemQuery) -> usize {
    let mut count = 0;
    let read = sensors.for_each_item(key, "readings", query, |_| count += 1);
    read.expect("range").expect("sensor");
    count
}

fn followers(immediate: bool) {
    const USERS: usize = 20_000;
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Db::open(dir.path(), options(immediate)).expect("open");
    let layout = Layout::Outlier { inline_cap: 1000 };
    let spec = CollectionSpec::new("users").array("followers", layout);
    let users = db.create_collection(spec).expect("create");
    let key = |user: usize| (user as u64).to_be_bytes();
    // Power-law counts: rank r of a Zipf(1.6) over 5,000, largest first; the celebrity
    // with 100,000.
    let mut stream = Stream(42);
    let counts_cdf = zipf_weights(5_000, 1.6);
    let mut counts: Vec<u64> = (0..USERS)
        .map(|_| stream.zipf(&counts_cdf) as u64 + 1)
        .collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    counts[0] = 100_000;
    let mut batch = db.batch();
    for (user, &count) in counts.iter().enumerate() {
        batch.put("users", key(user), format!("{{\"name\":\"user {user}\"}}"));
        for follower in 0..count {
            let item = NewItem::new([]).key(follower as i64);
            batch.push("users", key(user), "followers", item);
            if batch.len() >= 10_000 {
                batch.commit().expect("load");
            }
        }
    }
    batch.commit().expect("load");
    db.compact().expect("compact");
    let readers = zipf_weights(USERS, 0.99);
    for _ in 0..40_000 {
        let user = stream.zipf(&readers);
        users.get_projected(key(user), &[]).expect("read");
    }
    let mut followed = vec![false; USERS];
    let mut next_follower = 10_000_000;
    let mut classes = Classes::default();
    for _ in 0..60_000 {
        let user = stream.zipf(&readers);
        if stream.next() % 100 >= 94 {
            next_follower += 1;
            let mut batch = db.batch();
            let item = NewItem::new([]).key(next_follower);
            batch.push("users", key(user), "followers", item);
            batch.commit().expect("follow");
            followed[user] = true;
            continue;
        }
        let start = Instant::now();
        let profile = users.get_projected(key(user), &[]).expect("read");
        let nanos = start.elapsed().as_nanos() as u64;
        assert!(profile.is_some());
        let size = match counts[user] >= 300 {
            true => "300 followers or more",
            false => "fewer than 300 followers",
        };
        let change = match followed[user] {
            true => "followed since its last read",
            false => "unchanged since its last read",
        };
        classes.add(format!("{change}, {size}"), nanos);
        followed[user] = false;
    }
    classes.print();
    let cache = db.stats().expect("stats").cache;
    println!(
        "\npage cache: {} requests, {} misses, {} bytes read; record tier: {} requests, {} misses",
        cache.hot.requests,
        cache.hot.misses,
        cache.hot.bytes_read,
        cache.records.requests,
        cache.records.misses
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let immediate = args.iter().any(|a| a == "--immediate");
    let owned = args.iter().any(|a| a == "--owned");
    let workloads: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| matches!(*a, "sensors" | "followers"))
        .collect();
    // `cargo bench` without a workload (or with criterion's flags) runs both.
    let workloads = match workloads.is_empty() {
        true => vec!["sensors", "followers"],
        false => workloads,
    };
    for workload in workloads {
        println!("\n{workload}:\n");
        match workload {
            "sensors" => sensors(immediate, owned),
            _ => followers(immediate),
        }
    }
}
