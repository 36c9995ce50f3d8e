//! The followers workload: 20,000 users with power-law follower counts and a celebrity with
//! 100,000, then a mix of profile reads (94%, the profile and its follower count), follows
//! (5%) and follower lists (1%, the first 100). skewdb keeps followers as an
//! `Outlier { inline_cap: 1000 }` array; the peers keep them embedded (every follower id in
//! the user's value) or as the Outlier pattern by hand (the first 1,000 in the value, the
//! rest in an overflow table keyed by user and follower, the value flagged).

use std::path::Path;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use skewdb::{Collection, CollectionSpec, Db, ItemQuery, Layout, NewItem};

use crate::kv::{self, Kv};
use crate::{CacheCounters, Latencies, Percentiles, median_of};

pub const USERS: u64 = 20_000;
const CELEBRITY_FOLLOWERS: u64 = 100_000;
const INLINE_CAP: usize = 1000;
/// Operations per measured run.
pub const OPS: usize = 20_000;
/// Profile reads before each run, not timed (two per user, as the product pages warm with
/// two views per product).
pub const WARM_READS: usize = 40_000;
const LIST: usize = 100;

/// Follower counts by user id (id 0, the most read, is the celebrity).
pub fn counts() -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(42);
    let zipf = Zipf::new(5_000.0, 1.6).expect("zipf");
    let mut counts: Vec<u64> = (0..USERS).map(|_| zipf.sample(&mut rng) as u64).collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    counts[0] = CELEBRITY_FOLLOWERS;
    counts
}

fn profile(id: u64) -> Vec<u8> {
    format!("{{\"name\":\"user {id}\",\"bio\":\"{}\"}}", "x".repeat(80)).into_bytes()
}

#[derive(Clone, Copy, Debug)]
pub enum Op {
    Profile(u64),
    Follow(u64, u64),
    List(u64),
}

/// The `i`-th follow of the appends taken in turns (see `appends_in_turns`): new followers of
/// the 100 most followed users, in turn.
pub fn turn_follow(i: usize) -> (u64, u64) {
    (i as u64 % 100, 90_000_000 + i as u64)
}

pub fn operations(run: u64) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(9 + run);
    let zipf = Zipf::new(USERS as f64, 0.99).expect("zipf");
    let mut next = 10_000_000 + run * 1_000_000;
    (0..OPS)
        .map(|_| {
            let user = zipf.sample(&mut rng) as u64 - 1;
            match rng.random_range(0..100) {
                0..94 => Op::Profile(user),
                94..99 => {
                    next += 1;
                    Op::Follow(user, next)
                }
                _ => Op::List(user),
            }
        })
        .collect()
}

/// Profile reads of a Zipf(0.99) stream of their own, the same for every engine, so that a
/// run starts from caches that hold what reads bring in, not only what the load wrote.
pub fn warm_up(store: &mut dyn FollowerStore, run: u64) {
    let mut rng = StdRng::seed_from_u64(1_000 + run);
    let zipf = Zipf::new(USERS as f64, 0.99).expect("zipf");
    for _ in 0..WARM_READS {
        std::hint::black_box(store.profile(zipf.sample(&mut rng) as u64 - 1));
    }
}

pub trait FollowerStore {
    fn load(&mut self, counts: &[u64]);
    /// The profile and its follower count; returns the bytes read.
    fn profile(&mut self, user: u64) -> usize;
    fn follow(&mut self, user: u64, follower: u64);
    /// The first `LIST` followers; returns how many.
    fn list(&mut self, user: u64) -> usize;
    fn disk_bytes(&self) -> u64;
    fn cache_counters(&self) -> Option<CacheCounters>;
}

fn key(user: u64) -> [u8; 8] {
    user.to_be_bytes()
}

// ---------------------------------------------------------------- skewdb

pub struct Skew {
    dir: std::path::PathBuf,
    db: Db,
    users: Collection,
}

impl Skew {
    pub fn open(dir: &Path) -> Skew {
        let db = Db::open(dir, crate::skew_options(crate::CACHE_BYTES)).expect("open skewdb");
        let layout = Layout::Outlier {
            inline_cap: INLINE_CAP as u32,
        };
        let users = db
            .create_collection(CollectionSpec::new("users").array("followers", layout))
            .expect("collection");
        Skew {
            dir: dir.to_path_buf(),
            db,
            users,
        }
    }
}

impl FollowerStore for Skew {
    fn load(&mut self, counts: &[u64]) {
        let mut batch = self.db.batch();
        for (user, &count) in counts.iter().enumerate() {
            batch.put("users", key(user as u64), profile(user as u64));
            for follower in 0..count {
                let item = NewItem::new([]).key(follower as i64);
                batch.push("users", key(user as u64), "followers", item);
                crate::engines::commit_when_full(&mut batch);
            }
        }
        batch.commit().expect("load");
        self.db.compact().expect("compact");
    }

    fn profile(&mut self, user: u64) -> usize {
        // The profile and the follower count: no follower is decoded.
        let doc = self
            .users
            .get_projected(key(user), &[])
            .expect("get")
            .expect("user");
        doc.body().len()
            + doc
                .array("followers")
                .map_or(0, |a| a.total as usize)
                .min(1)
    }

    fn follow(&mut self, user: u64, follower: u64) {
        let mut batch = self.db.batch();
        batch.push(
            "users",
            key(user),
            "followers",
            NewItem::new([]).key(follower as i64),
        );
        batch.commit().expect("follow");
    }

    fn list(&mut self, user: u64) -> usize {
        let query = ItemQuery::new().limit(LIST);
        let mut keys = 0;
        let visited = self
            .users
            .for_each_item(key(user), "followers", &query, |follower| {
                keys ^= follower.key();
            })
            .expect("items")
            .expect("user");
        std::hint::black_box(keys);
        visited.items
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
    Embedded,
    HandOutlier,
}

/// A user's value: profile length u32, profile, overflow flag u8, follower count u64, then
/// follower ids (u64 each): all of them when embedded, the first 1,000 by hand.
fn encode(profile: &[u8], overflow: bool, total: u64, followers: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(profile.len() + 13 + followers.len() * 8);
    out.extend_from_slice(&(profile.len() as u32).to_le_bytes());
    out.extend_from_slice(profile);
    out.push(overflow as u8);
    out.extend_from_slice(&total.to_le_bytes());
    for f in followers {
        out.extend_from_slice(&f.to_le_bytes());
    }
    out
}

/// Profile, overflow flag, total, followers.
/// The profile, overflow flag and follower count of a user value, without its followers.
fn decode_head(bytes: &[u8]) -> (&[u8], bool, u64) {
    let len = u32::from_le_bytes(bytes[..4].try_into().expect("4")) as usize;
    let total = u64::from_le_bytes(bytes[5 + len..13 + len].try_into().expect("8"));
    (&bytes[4..4 + len], bytes[4 + len] == 1, total)
}

fn decode(bytes: &[u8]) -> (Vec<u8>, bool, u64, Vec<u64>) {
    let (profile, overflow, total) = decode_head(bytes);
    let followers = bytes[13 + profile.len()..]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8")))
        .collect();
    (profile.to_vec(), overflow, total, followers)
}

const USERS_TABLE: &str = "users";
const OVERFLOW: &str = "overflow";

fn overflow_key(user: u64, follower: u64) -> Vec<u8> {
    let mut out = user.to_be_bytes().to_vec();
    out.extend_from_slice(&follower.to_be_bytes());
    out
}

pub struct Peer {
    kv: Box<dyn Kv>,
    model: Model,
}

impl Peer {
    pub fn open(engine: &str, model: Model, dir: &Path) -> Peer {
        Peer {
            kv: kv::open(engine, dir, crate::CACHE_BYTES),
            model,
        }
    }
}

impl FollowerStore for Peer {
    fn load(&mut self, counts: &[u64]) {
        let mut puts = Vec::new();
        for (user, &count) in counts.iter().enumerate() {
            let user = user as u64;
            let followers: Vec<u64> = (0..count).collect();
            let value = match self.model {
                Model::Embedded => encode(&profile(user), false, count, &followers),
                Model::HandOutlier => {
                    let inline = followers.len().min(INLINE_CAP);
                    for &f in &followers[inline..] {
                        puts.push((OVERFLOW, overflow_key(user, f), Vec::new()));
                    }
                    encode(
                        &profile(user),
                        inline < followers.len(),
                        count,
                        &followers[..inline],
                    )
                }
            };
            puts.push((USERS_TABLE, key(user).to_vec(), value));
            if puts.len() >= 20_000 {
                self.kv.put_all(std::mem::take(&mut puts), false);
            }
        }
        self.kv.put_all(puts, true);
    }

    fn profile(&mut self, user: u64) -> usize {
        let mut read = 0;
        let found = self.kv.read(USERS_TABLE, &key(user), &mut |value| {
            let (profile, _, total) = decode_head(value);
            read = profile.len() + (total as usize).min(1);
        });
        assert!(found, "user {user}");
        read
    }

    fn follow(&mut self, user: u64, follower: u64) {
        let value = self.kv.get(USERS_TABLE, &key(user)).expect("user");
        let (profile, overflow, total, mut followers) = decode(&value);
        let mut puts = Vec::new();
        let overflow = match self.model {
            Model::Embedded => {
                followers.push(follower);
                false
            }
            Model::HandOutlier if overflow || followers.len() >= INLINE_CAP => {
                puts.push((OVERFLOW, overflow_key(user, follower), Vec::new()));
                true
            }
            Model::HandOutlier => {
                followers.push(follower);
                false
            }
        };
        puts.push((
            USERS_TABLE,
            key(user).to_vec(),
            encode(&profile, overflow, total + 1, &followers),
        ));
        self.kv.put_all(puts, true);
    }

    fn list(&mut self, user: u64) -> usize {
        let (mut listed, mut overflow) = (0, false);
        let found = self.kv.read(USERS_TABLE, &key(user), &mut |value| {
            let (profile, flagged, _) = decode_head(value);
            let followers = value[13 + profile.len()..].chunks_exact(8);
            for follower in followers.take(LIST) {
                std::hint::black_box(u64::from_le_bytes(follower.try_into().expect("8")));
                listed += 1;
            }
            overflow = flagged;
        });
        assert!(found, "user {user}");
        if overflow && listed < LIST {
            let start = overflow_key(user, 0);
            let end = overflow_key(user + 1, 0);
            let rest = LIST - listed;
            listed += self
                .kv
                .scan(OVERFLOW, (&start, &end), false, rest, &mut |_| {});
        }
        listed
    }

    fn disk_bytes(&self) -> u64 {
        self.kv.disk_bytes()
    }

    fn cache_counters(&self) -> Option<CacheCounters> {
        Some(self.kv.cache_counters())
    }
}

/// What one run of the followers workload measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub ops_per_second: f64,
    /// Profile reads alone, after the mixed run.
    pub profiles_per_second: f64,
    /// Profile reads in the mixed run.
    pub profile_latency: Percentiles,
    pub follows_per_second: f64,
    /// Follows in turns.
    pub follow_latency: Percentiles,
    pub disk_bytes: u64,
    /// Over the mixed run.
    pub hit_ratio: Option<f64>,
}

impl crate::Run for Measured {
    fn mixed_rate(&self) -> f64 {
        self.ops_per_second
    }

    fn take_medians(&mut self, runs: &[Self]) {
        self.profiles_per_second = median_of(runs, |r| r.profiles_per_second);
    }

    fn set_appends(&mut self, rate: f64, latency: Percentiles) {
        self.follows_per_second = rate;
        self.follow_latency = latency;
    }
}

pub fn run(store: &mut dyn FollowerStore, ops: &[Op]) -> Measured {
    let counters = store.cache_counters();
    let mut profiles = Latencies::default();
    let started = Instant::now();
    for op in ops {
        match *op {
            Op::Profile(user) => {
                std::hint::black_box(profiles.time(|| store.profile(user)));
            }
            // Durable follows are timed in turns.
            Op::Follow(user, follower) => store.follow(user, follower),
            Op::List(user) => {
                std::hint::black_box(store.list(user));
            }
        }
    }
    let ops_per_second = ops.len() as f64 / started.elapsed().as_secs_f64();
    let hit_ratio = CacheCounters::ratio(counters, store.cache_counters());
    let started = Instant::now();
    let mut alone = 0;
    for op in ops {
        if let Op::Profile(user) = *op {
            std::hint::black_box(store.profile(user));
            alone += 1;
        }
    }
    Measured {
        ops_per_second,
        profiles_per_second: alone as f64 / started.elapsed().as_secs_f64(),
        profile_latency: profiles.percentiles(),
        disk_bytes: store.disk_bytes(),
        hit_ratio,
        ..Measured::default()
    }
}
