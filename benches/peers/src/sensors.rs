//! The sensor workload: 50 sensors with 30 days of minute readings, then a mix of appends
//! (50%), last-hour ranges (30%), one-day aggregates (15%) and one-month aggregates (5%).
//! skewdb keeps each sensor's readings as a `Bucket { max_items: 1000, span: 3600 }`
//! array; the peers keep them embedded (one value per sensor) or in buckets coded by hand
//! (one value per sensor and hour, with count, sum, min and max kept by the application).

use std::path::Path;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skewdb::{Collection, CollectionSpec, Db, ItemQuery, Layout, NewItem};

use crate::kv::{self, Kv};
use crate::{CacheCounters, Latencies, Percentiles, median_of};

pub const SENSORS: u64 = 50;
const DAYS: i64 = 30;
const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;
/// Operations per measured run.
pub const OPS: usize = 4_000;

/// A sensor's reading at `time`: a daily cycle at 0.1 degree resolution.
fn value_at(sensor: u64, time: i64) -> f64 {
    let minute = time / 60;
    let phase = (minute % 1440) as f64 / 1440.0 * std::f64::consts::TAU;
    ((20.0 + 5.0 * phase.sin() + ((minute * 7919 + sensor as i64) % 11) as f64 / 10.0) * 10.0)
        .round()
        / 10.0
}

/// count, sum, min, max
pub type Aggregate = (u64, f64, f64, f64);

pub trait SensorStore {
    /// Loads every sensor's readings up to `until` (not timed).
    fn load(&mut self, until: i64);
    fn append(&mut self, sensor: u64, time: i64, value: f64);
    /// Readings in `[from, to)`; returns how many.
    fn range(&mut self, sensor: u64, from: i64, to: i64) -> usize;
    fn aggregate(&mut self, sensor: u64, from: i64, to: i64) -> Aggregate;
    fn disk_bytes(&self) -> u64;
    fn cache_counters(&self) -> Option<CacheCounters>;
}

#[derive(Clone, Copy, Debug)]
pub enum Op {
    Append(u64, i64, f64),
    LastHour(u64, i64),
    Aggregate(u64, i64, i64),
}

/// The `i`-th reading of the appends taken in turns (see `appends_in_turns`): a day after the
/// mixed operations' readings, each sensor's in time order.
pub fn turn_append(i: usize) -> (u64, i64, f64) {
    let sensor = i as u64 % SENSORS;
    let time = DAYS * DAY + DAY + (i as u64 / SENSORS) as i64 * 60;
    (sensor, time, value_at(sensor, time))
}

/// The mixed operations of run `run`, from the end of the loaded month.
pub fn operations(run: u64) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(7 + run);
    let mut clock: Vec<i64> = vec![DAYS * DAY; SENSORS as usize];
    (0..OPS)
        .map(|_| {
            let sensor = rng.random_range(0..SENSORS);
            let now = clock[sensor as usize];
            match rng.random_range(0..100) {
                0..50 => {
                    clock[sensor as usize] += 60;
                    Op::Append(sensor, now, value_at(sensor, now))
                }
                50..80 => Op::LastHour(sensor, now),
                80..95 => Op::Aggregate(sensor, now - DAY, now),
                _ => Op::Aggregate(sensor, now - DAYS * DAY, now),
            }
        })
        .collect()
}

fn key(sensor: u64) -> [u8; 8] {
    sensor.to_be_bytes()
}

// ---------------------------------------------------------------- skewdb

pub struct Skew {
    dir: std::path::PathBuf,
    db: Db,
    sensors: Collection,
}

impl Skew {
    pub fn open(dir: &Path) -> Skew {
        let db = Db::open(dir, crate::skew_options(crate::CACHE_BYTES)).expect("open skewdb");
        let layout = Layout::Bucket {
            max_items: 1000,
            span: Some(HOUR),
        };
        let sensors = db
            .create_collection(CollectionSpec::new("sensors").array("readings", layout))
            .expect("collection");
        Skew {
            dir: dir.to_path_buf(),
            db,
            sensors,
        }
    }
}

impl SensorStore for Skew {
    fn load(&mut self, until: i64) {
        let mut batch = self.db.batch();
        for sensor in 0..SENSORS {
            batch.put("sensors", key(sensor), b"{}");
            for time in (0..until).step_by(60) {
                let item = NewItem::new([]).key(time).value(value_at(sensor, time));
                batch.push("sensors", key(sensor), "readings", item);
                crate::engines::commit_when_full(&mut batch);
            }
        }
        batch.commit().expect("load");
        self.db.compact().expect("compact");
    }

    fn append(&mut self, sensor: u64, time: i64, value: f64) {
        let mut batch = self.db.batch();
        batch.push(
            "sensors",
            key(sensor),
            "readings",
            NewItem::new([]).key(time).value(value),
        );
        batch.commit().expect("append");
    }

    fn range(&mut self, sensor: u64, from: i64, to: i64) -> usize {
        // Read in place, as the peers read their buckets: each reading's time and value.
        let query = ItemQuery::new().range(from..to);
        let mut count = 0;
        let mut sum = 0.0;
        self.sensors
            .for_each_item(key(sensor), "readings", &query, |reading| {
                count += 1;
                sum += reading.value().unwrap_or(0.0);
            })
            .expect("items")
            .expect("sensor");
        std::hint::black_box(sum);
        count
    }

    fn aggregate(&mut self, sensor: u64, from: i64, to: i64) -> Aggregate {
        let summary = self
            .sensors
            .summary(key(sensor), "readings", from..to)
            .expect("summary")
            .expect("sensor");
        (
            summary.count,
            summary.sum,
            summary.min.unwrap_or(f64::NAN),
            summary.max.unwrap_or(f64::NAN),
        )
    }

    fn disk_bytes(&self) -> u64 {
        crate::engines::dir_bytes(&self.dir)
    }

    fn cache_counters(&self) -> Option<CacheCounters> {
        Some(crate::engines::skew_counters(&self.db))
    }
}

// ---------------------------------------------------------------- peers

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Every reading inside one value per sensor: (time i64, value f64) pairs.
    Embedded,
    /// One value per sensor and hour: count u32, sum, min, max (f64), then the readings.
    HandBuckets,
}

pub struct Peer {
    kv: Box<dyn Kv>,
    model: Model,
}

const EMBEDDED: &str = "sensors";
const BUCKETS: &str = "buckets";
const HEADER: usize = 4 + 8 * 3;

impl Peer {
    pub fn open(engine: &str, model: Model, dir: &Path) -> Peer {
        Peer {
            kv: kv::open(engine, dir, crate::CACHE_BYTES),
            model,
        }
    }
}

fn bucket_key(sensor: u64, start: i64) -> Vec<u8> {
    let mut out = sensor.to_be_bytes().to_vec();
    out.extend_from_slice(&start.to_be_bytes());
    out
}

fn readings(bytes: &[u8]) -> impl Iterator<Item = (i64, f64)> + '_ {
    bytes.chunks_exact(16).map(|pair| {
        (
            i64::from_le_bytes(pair[..8].try_into().expect("8")),
            f64::from_le_bytes(pair[8..].try_into().expect("8")),
        )
    })
}

fn add(aggregate: &mut Aggregate, value: f64) {
    aggregate.0 += 1;
    aggregate.1 += value;
    aggregate.2 = aggregate.2.min(value);
    aggregate.3 = aggregate.3.max(value);
}

fn empty() -> Aggregate {
    (0, 0.0, f64::INFINITY, f64::NEG_INFINITY)
}

/// A bucket's header as an aggregate.
fn header(bucket: &[u8]) -> Aggregate {
    let f = |at: usize| f64::from_le_bytes(bucket[at..at + 8].try_into().expect("8"));
    (
        u32::from_le_bytes(bucket[..4].try_into().expect("4")) as u64,
        f(4),
        f(12),
        f(20),
    )
}

fn encode_bucket(aggregate: Aggregate, pairs: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + pairs.len());
    out.extend_from_slice(&(aggregate.0 as u32).to_le_bytes());
    for v in [aggregate.1, aggregate.2, aggregate.3] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(pairs);
    out
}

fn pair(time: i64, value: f64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&time.to_le_bytes());
    out[8..].copy_from_slice(&value.to_le_bytes());
    out
}

impl SensorStore for Peer {
    fn load(&mut self, until: i64) {
        for sensor in 0..SENSORS {
            let mut puts = Vec::new();
            match self.model {
                Model::Embedded => {
                    let mut value = Vec::new();
                    for time in (0..until).step_by(60) {
                        value.extend_from_slice(&pair(time, value_at(sensor, time)));
                    }
                    puts.push((EMBEDDED, key(sensor).to_vec(), value));
                }
                Model::HandBuckets => {
                    for start in (0..until).step_by(HOUR as usize) {
                        let mut aggregate = empty();
                        let mut pairs = Vec::new();
                        for time in (start..start + HOUR).step_by(60) {
                            let value = value_at(sensor, time);
                            add(&mut aggregate, value);
                            pairs.extend_from_slice(&pair(time, value));
                        }
                        puts.push((
                            BUCKETS,
                            bucket_key(sensor, start),
                            encode_bucket(aggregate, &pairs),
                        ));
                    }
                }
            }
            self.kv.put_all(puts, false);
        }
        self.kv.put_all(Vec::new(), true);
    }

    fn append(&mut self, sensor: u64, time: i64, value: f64) {
        let put = match self.model {
            Model::Embedded => {
                let mut all = self.kv.get(EMBEDDED, &key(sensor)).unwrap_or_default();
                all.extend_from_slice(&pair(time, value));
                (EMBEDDED, key(sensor).to_vec(), all)
            }
            Model::HandBuckets => {
                let bucket = bucket_key(sensor, time - time.rem_euclid(HOUR));
                let old = self.kv.get(BUCKETS, &bucket);
                let (mut aggregate, mut pairs) = match &old {
                    Some(old) => (header(old), old[HEADER..].to_vec()),
                    None => (empty(), Vec::new()),
                };
                add(&mut aggregate, value);
                pairs.extend_from_slice(&pair(time, value));
                (BUCKETS, bucket, encode_bucket(aggregate, &pairs))
            }
        };
        self.kv.put_all(vec![put], true);
    }

    fn range(&mut self, sensor: u64, from: i64, to: i64) -> usize {
        match self.model {
            Model::Embedded => {
                let mut count = 0;
                self.kv.read(EMBEDDED, &key(sensor), &mut |all| {
                    count = readings(all)
                        .filter(|(t, _)| (from..to).contains(t))
                        .count();
                });
                count
            }
            Model::HandBuckets => {
                let start = bucket_key(sensor, from - from.rem_euclid(HOUR));
                let end = bucket_key(sensor, to);
                let mut count = 0;
                self.kv
                    .scan(BUCKETS, (&start, &end), false, usize::MAX, &mut |b| {
                        count += readings(&b[HEADER..])
                            .filter(|(t, _)| (from..to).contains(t))
                            .count();
                    });
                count
            }
        }
    }

    fn aggregate(&mut self, sensor: u64, from: i64, to: i64) -> Aggregate {
        let mut aggregate = empty();
        match self.model {
            Model::Embedded => {
                self.kv.read(EMBEDDED, &key(sensor), &mut |all| {
                    for (_, value) in readings(all).filter(|(t, _)| (from..to).contains(t)) {
                        add(&mut aggregate, value);
                    }
                });
            }
            Model::HandBuckets => {
                let start = bucket_key(sensor, from - from.rem_euclid(HOUR));
                let end = bucket_key(sensor, to);
                self.kv
                    .scan(BUCKETS, (&start, &end), false, usize::MAX, &mut |bucket| {
                        let first =
                            i64::from_le_bytes(bucket[HEADER..HEADER + 8].try_into().expect("8"));
                        let bucket_start = first - first.rem_euclid(HOUR);
                        let whole = bucket_start >= from && bucket_start + HOUR <= to;
                        if whole {
                            let h = header(bucket);
                            aggregate = (
                                aggregate.0 + h.0,
                                aggregate.1 + h.1,
                                aggregate.2.min(h.2),
                                aggregate.3.max(h.3),
                            );
                        } else {
                            for (_, value) in
                                readings(&bucket[HEADER..]).filter(|(t, _)| (from..to).contains(t))
                            {
                                add(&mut aggregate, value);
                            }
                        }
                    });
            }
        }
        aggregate
    }

    fn disk_bytes(&self) -> u64 {
        self.kv.disk_bytes()
    }

    fn cache_counters(&self) -> Option<CacheCounters> {
        Some(self.kv.cache_counters())
    }
}

/// What one run of the sensor workload measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub ops_per_second: f64,
    /// Aggregates alone, after the mixed run.
    pub aggregates_per_second: f64,
    /// One-day and one-month aggregates in the mixed run.
    pub aggregate_latency: Percentiles,
    /// Last-hour ranges alone, after the mixed run.
    pub ranges_per_second: f64,
    /// Last-hour ranges in the mixed run.
    pub range_latency: Percentiles,
    pub appends_per_second: f64,
    /// Appends in turns.
    pub append_latency: Percentiles,
    pub disk_bytes: u64,
    /// Over the mixed run.
    pub hit_ratio: Option<f64>,
}

impl crate::Run for Measured {
    fn mixed_rate(&self) -> f64 {
        self.ops_per_second
    }

    fn take_medians(&mut self, runs: &[Self]) {
        self.aggregates_per_second = median_of(runs, |r| r.aggregates_per_second);
        self.ranges_per_second = median_of(runs, |r| r.ranges_per_second);
    }

    fn set_appends(&mut self, rate: f64, latency: Percentiles) {
        self.appends_per_second = rate;
        self.append_latency = latency;
    }
}

pub fn run(store: &mut dyn SensorStore, ops: &[Op]) -> Measured {
    let counters = store.cache_counters();
    let (mut aggregates, mut ranges) = (Latencies::default(), Latencies::default());
    let started = Instant::now();
    for op in ops {
        match *op {
            // Durable appends are timed in turns.
            Op::Append(sensor, time, value) => store.append(sensor, time, value),
            Op::LastHour(sensor, now) => {
                std::hint::black_box(ranges.time(|| store.range(sensor, now - HOUR, now)));
            }
            Op::Aggregate(sensor, from, to) => {
                std::hint::black_box(aggregates.time(|| store.aggregate(sensor, from, to)));
            }
        }
    }
    let ops_per_second = ops.len() as f64 / started.elapsed().as_secs_f64();
    let hit_ratio = CacheCounters::ratio(counters, store.cache_counters());
    let timed = |store: &mut dyn SensorStore, aggregates: bool| {
        let started = Instant::now();
        let mut count = 0;
        for op in ops {
            match (*op, aggregates) {
                (Op::Aggregate(sensor, from, to), true) => {
                    std::hint::black_box(store.aggregate(sensor, from, to));
                    count += 1;
                }
                (Op::LastHour(sensor, now), false) => {
                    std::hint::black_box(store.range(sensor, now - HOUR, now));
                    count += 1;
                }
                _ => {}
            }
        }
        count as f64 / started.elapsed().as_secs_f64()
    };
    Measured {
        ops_per_second,
        aggregates_per_second: timed(store, true),
        aggregate_latency: aggregates.percentiles(),
        ranges_per_second: timed(store, false),
        range_latency: ranges.percentiles(),
        disk_bytes: store.disk_bytes(),
        hit_ratio,
        ..Measured::default()
    }
}

/// The month loaded before the measured operations.
pub fn loaded_until() -> i64 {
    DAYS * DAY
}
