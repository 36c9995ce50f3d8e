use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};

use std::sync::Arc;

use bytes::Bytes;

use super::admission::LATELY;
use super::policy::Miniature;
use super::what_if::{WHAT_IF_FACTORS, shards_adjusted, threshold_of};
use super::*;

/// What these tests cache: bytes, or a stand-in for a B+tree inner page. The cache knows
/// its values only through [`CacheValue`].
#[derive(Clone, Debug)]
enum TestValue {
    Bytes(#[allow(dead_code)] Bytes),
    InnerPage,
}

impl CacheValue for TestValue {
    fn is_inner_page(&self) -> bool {
        matches!(self, TestValue::InnerPage)
    }
}

/// The cache under test; its record tier holds strings.
type PageCache = super::PageCache<TestValue, &'static str>;
type Loaded = super::Loaded<TestValue>;

fn key(offset: u64) -> CacheKey {
    CacheKey::Page {
        segment_id: 1,
        offset,
    }
}

fn load(weight: usize) -> Result<Loaded> {
    Ok(Loaded {
        value: TestValue::Bytes(Bytes::new()),
        weight_bytes: weight,
        read_bytes: weight as u64,
    })
}

fn cache(budget: u64, policy: CachePolicy, what_if: bool) -> PageCache {
    PageCache::with_config(CacheConfig {
        budget_bytes: budget,
        record_bytes: 0,
        policy,
        what_if,
        what_if_objects: WHAT_IF_SAMPLED_OBJECTS,
        trace: None,
    })
    .unwrap()
}

fn no_names(_: CollectionId) -> Option<String> {
    None
}

/// Zipf-distributed requests over `objects` objects whose weights vary from 1x to 4x
/// `unit`, the same weight every time an object comes back.
fn zipf_trace(objects: u64, requests: usize, exponent: f64, unit: u64) -> Vec<(u64, u64)> {
    let mut rng = StdRng::seed_from_u64(42);
    let zipf = Zipf::new(objects as f64, exponent).unwrap();
    (0..requests)
        .map(|_| {
            let rank = zipf.sample(&mut rng) as u64;
            // Scatter ranks over ids so popularity does not follow the id order.
            let id = rank.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20;
            (id, unit + unit * (mix(id) % 4))
        })
        .collect()
}

fn replay(cache: &PageCache, trace: &[(u64, u64)]) {
    for &(id, weight) in trace {
        cache
            .get_or_load(key(id), Tier::HotPage, Owner::NONE, || {
                load(weight as usize)
            })
            .unwrap();
        assert!(cache.stats(no_names).total().resident_bytes <= cache.config.budget_bytes);
    }
}

#[test]
fn never_above_budget_and_counts() {
    for policy in CachePolicy::ALL {
        let cache = cache(1000, policy, false);
        for i in 0..100 {
            cache
                .get_or_load(key(i), Tier::HotPage, Owner::NONE, || load(300))
                .unwrap();
            assert!(cache.stats(no_names).hot.resident_bytes <= 1000);
        }
        cache
            .get_or_load(key(99), Tier::HotPage, Owner::NONE, || load(300))
            .unwrap();
        let stats = cache.stats(no_names).hot;
        assert_eq!((stats.requests, stats.hits, stats.misses), (101, 1, 100));
        assert_eq!(stats.bytes_read, 30_000);
        assert_eq!(stats.evictions, 97);
        assert_eq!(stats.resident_bytes, 900);
        assert_eq!(cache.stats(no_names).cold, TierStats::default());
    }
}

#[test]
fn objects_at_and_over_the_budget() {
    let cache = cache(100, CachePolicy::S3Fifo, false);
    cache
        .get_or_load(key(1), Tier::HotPage, Owner::NONE, || load(101))
        .unwrap();
    assert_eq!(cache.stats(no_names).hot.resident_bytes, 0);
    cache
        .get_or_load(key(2), Tier::HotPage, Owner::NONE, || load(100))
        .unwrap();
    assert_eq!(cache.stats(no_names).hot.resident_bytes, 100);
    let hit = cache
        .get_or_load(key(2), Tier::HotPage, Owner::NONE, || {
            panic!("a hit must not load")
        })
        .unwrap();
    assert!(matches!(hit, TestValue::Bytes(_)));
}

#[test]
fn a_failed_load_counts_a_miss_and_keeps_nothing() {
    let cache = cache(1000, CachePolicy::S3Fifo, false);
    let failed = cache.get_or_load(key(1), Tier::ColdChunk, Owner::NONE, || {
        Err(crate::error::Error::corruption("cold-1.seg", 0, "bad"))
    });
    assert!(failed.is_err());
    let stats = cache.stats(no_names).cold;
    assert_eq!(
        (stats.requests, stats.misses, stats.resident_bytes),
        (1, 1, 0)
    );
}

/// S3-FIFO, SIEVE and W-TinyLFU collect hits at eviction; LRU's are numbered and handed over in request
/// order before any insertion. So single-threaded the live cache decides exactly as the
/// simulator does, whatever shards the objects fall in.
#[test]
fn live_cache_matches_the_simulator() {
    let trace = zipf_trace(5_000, 60_000, 0.9, 100);
    for policy in CachePolicy::ALL {
        let live = cache(50_000, policy, false);
        replay(&live, &trace);
        // The simulator sees each object by its id in a trace, as the working-set bench
        // replays it (W-TinyLFU's sketch hashes it).
        let mut sim = Miniature::new(policy, 50_000);
        for &(id, weight) in &trace {
            sim.access(key(id).object_id(), weight);
        }
        assert_eq!(live.stats(no_names).hot.hits, sim.hits, "{policy:?}");
    }
}

/// LRU's buffered hits reach the policy in the order they were made, across shards, and
/// before the next insertion: after hits on `b` then `a`, a new object evicts `b`, whichever
/// shards the two fall in. No statistics are read in between (reading them hands every
/// buffered hit over).
#[test]
fn lru_sees_hits_in_request_order_across_shards() {
    let get = |cache: &PageCache, id: u64| {
        cache
            .get_or_load(key(id), Tier::HotPage, Owner::NONE, || load(10))
            .unwrap();
    };
    for a in 0..6 {
        for b in 0..6 {
            if a == b {
                continue;
            }
            let cache = cache(20, CachePolicy::Lru, false);
            get(&cache, a);
            get(&cache, b);
            get(&cache, b);
            get(&cache, a);
            get(&cache, 100);
            let before = cache.stats(no_names).hot.hits;
            get(&cache, a);
            let stats = cache.stats(no_names).hot;
            assert_eq!(stats.hits, before + 1, "{a} was evicted before {b}");
        }
    }
}

#[test]
fn what_if_is_within_three_hundredths_of_full_simulation() {
    // A budget large enough that the estimate samples (rate at least 1/8), over a trace
    // whose objects are 4 to 16 KiB like pages and chunks.
    let budget = 32 << 20;
    let trace = zipf_trace(40_000, 400_000, 0.9, 4096);
    let live = cache(budget, CachePolicy::S3Fifo, true);
    replay_quick(&live, &trace);
    let stats = live.stats(no_names);
    assert_sample_keeps_its_objects(&stats, &trace);
    assert_eq!(stats.what_if.len(), WHAT_IF_FACTORS.len());
    for what_if in &stats.what_if {
        let mut full = Miniature::new(CachePolicy::S3Fifo, what_if.budget_bytes);
        for &(id, weight) in &trace {
            full.access(id, weight);
        }
        let error = (what_if.hit_ratio - full.hit_ratio()).abs();
        assert!(
            error <= 0.03,
            "at {}x: estimated {:.4}, simulated {:.4}",
            what_if.factor,
            what_if.hit_ratio,
            full.hit_ratio()
        );
        assert!(what_if.sampled_requests > 10_000);
    }
    // The estimate at 1x describes the live cache itself.
    let one = stats.what_if.iter().find(|w| w.factor == 1.0).unwrap();
    assert!((one.hit_ratio - stats.hot.hit_ratio()).abs() <= 0.03);
}

/// A sample of a trace of more distinct objects than the sample keeps: its rate fell from 1
/// to about what keeps that many (fixed-size SHARDS), and no lower than the floor the budget
/// sets (4 MiB of a 32 MiB budget: 1/8).
fn assert_sample_keeps_its_objects(stats: &CacheStats, trace: &[(u64, u64)]) {
    let distinct = trace
        .iter()
        .map(|&(id, _)| id)
        .collect::<std::collections::HashSet<_>>()
        .len();
    let kept = stats.sample_rate * distinct as f64;
    assert!(
        stats.sample_rate >= 1.0 / 8.0 && stats.sample_rate < 1.0,
        "rate {}",
        stats.sample_rate
    );
    assert!(
        (3_500.0..5_200.0).contains(&kept) || stats.sample_rate == 1.0 / 8.0,
        "rate {} of {distinct} objects",
        stats.sample_rate
    );
}

fn replay_quick(cache: &PageCache, trace: &[(u64, u64)]) {
    for &(id, weight) in trace {
        cache
            .get_or_load(key(id), Tier::HotPage, Owner::NONE, || {
                load(weight as usize)
            })
            .unwrap();
    }
}

#[test]
fn small_budgets_are_simulated_whole() {
    assert_simulated_whole(1 << 20, &zipf_trace(2_000, 20_000, 0.9, 1000));
}

#[test]
fn a_working_set_of_fewer_objects_than_the_sample_keeps_is_simulated_whole() {
    // A budget whose floor rate is 1/64, over fewer distinct objects than the sample
    // keeps, among them a hot set: every object stays in the sample, at any budget.
    assert_simulated_whole(256 << 20, &hot_set_trace(10, 3_000, 100_000, 16 << 10));
}

/// Replays `trace` through a live cache of `budget` with the estimate on: its rate stays 1
/// and each estimate is exactly a full simulation of the trace.
fn assert_simulated_whole(budget: u64, trace: &[(u64, u64)]) {
    let live = cache(budget, CachePolicy::S3Fifo, true);
    replay_quick(&live, trace);
    let stats = live.stats(no_names);
    assert_eq!(stats.sample_rate, 1.0);
    for what_if in &stats.what_if {
        let mut full = Miniature::new(CachePolicy::S3Fifo, what_if.budget_bytes);
        for &(id, weight) in trace {
            full.access(id, weight);
        }
        assert_eq!(what_if.sampled_requests, trace.len() as u64);
        // Samples reach the estimate in per-shard batches, sorted back into request order.
        assert_eq!(
            what_if.hit_ratio,
            full.hit_ratio(),
            "at {}x",
            what_if.factor
        );
    }
}

#[test]
fn requests_count_for_the_collection_that_asked() {
    let cache = cache(10_000, CachePolicy::S3Fifo, false);
    let (three, five) = (Owner::collection(3), Owner::collection(5));
    cache
        .get_or_load(key(1), Tier::HotPage, three, || load(100))
        .unwrap();
    cache
        .get_or_load(key(2), Tier::ColdChunk, three, || load(200))
        .unwrap();
    cache
        .get_or_load(key(1), Tier::HotPage, five, || load(100))
        .unwrap();
    // Collection 0's counters are kept inline, collections 3 and 5's beyond them.
    cache
        .get_or_load(key(2), Tier::ColdChunk, Owner::collection(0), || load(200))
        .unwrap();
    cache
        .get_or_load(key(9), Tier::HotPage, Owner::NONE, || load(50))
        .unwrap();
    let names = |id: CollectionId| (id == 3).then(|| "reviews".to_string());
    let stats = cache.stats(names);
    let row = |name: Option<&str>| {
        stats
            .collections
            .iter()
            .find(|c| c.collection.as_deref() == name)
            .unwrap()
            .clone()
    };
    let reviews = row(Some("reviews"));
    assert_eq!((reviews.hot.requests, reviews.hot.misses), (1, 1));
    assert_eq!(
        (reviews.hot.resident_bytes, reviews.cold.resident_bytes),
        (100, 200)
    );
    let unnamed = row(Some("#5"));
    assert_eq!((unnamed.hot.hits, unnamed.hot.resident_bytes), (1, 0));
    let internal = row(None);
    assert_eq!(internal.hot.resident_bytes, 50);
    let first = row(Some("#0"));
    assert_eq!((first.cold.requests, first.cold.hits), (1, 1));
    assert_eq!(stats.collections.len(), 4);
    assert_eq!(stats.hot.requests, 3);
}

#[test]
fn reset_zeroes_counters_and_keeps_residents() {
    let cache = cache(1000, CachePolicy::S3Fifo, true);
    for i in 0..20 {
        cache
            .get_or_load(key(i % 5), Tier::HotPage, Owner::NONE, || load(300))
            .unwrap();
    }
    cache.reset_stats();
    let stats = cache.stats(no_names);
    assert_eq!(stats.hot.requests, 0);
    assert_eq!(stats.hot.evictions, 0);
    assert_eq!(stats.hot.resident_bytes, 900);
    assert!(stats.what_if.iter().all(|w| w.sampled_requests == 0));
}

#[test]
fn trace_has_one_line_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.csv");
    let cache = PageCache::with_config(CacheConfig {
        budget_bytes: 1000,
        record_bytes: 0,
        policy: CachePolicy::S3Fifo,
        what_if: false,
        what_if_objects: WHAT_IF_SAMPLED_OBJECTS,
        trace: Some(path.clone()),
    })
    .unwrap();
    cache
        .get_or_load(key(7), Tier::HotPage, Owner::NONE, || load(300))
        .unwrap();
    cache
        .get_or_load(key(7), Tier::HotPage, Owner::NONE, || load(300))
        .unwrap();
    let chunk = CacheKey::Chunk {
        segment_id: 2,
        offset: 64,
    };
    cache
        .get_or_load(chunk, Tier::ColdChunk, Owner::NONE, || load(5000))
        .unwrap();
    drop(cache);
    let text = std::fs::read_to_string(&path).unwrap();
    let chunk_id = (2u64 << 62) | (2 << 40) | 64;
    assert_eq!(
        text,
        format!(
            "seq,object_id,object_bytes,tier\n0,{id},300,hot\n1,{id},300,hot\n2,{chunk_id},5000,cold\n",
            id = (1u64 << 40) | 7
        )
    );
}

#[test]
fn a_trace_that_cannot_be_created_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let result = PageCache::with_config(CacheConfig {
        budget_bytes: 1000,
        record_bytes: 0,
        policy: CachePolicy::S3Fifo,
        what_if: false,
        what_if_objects: WHAT_IF_SAMPLED_OBJECTS,
        trace: Some(dir.path().join("missing").join("trace.csv")),
    });
    assert!(matches!(result, Err(crate::error::Error::Io { .. })));
}

#[test]
fn object_ids_are_distinct_across_kinds() {
    let ids = [
        CacheKey::Page {
            segment_id: 1,
            offset: 8,
        },
        CacheKey::Large {
            segment_id: 1,
            offset: 8,
        },
        CacheKey::Chunk {
            segment_id: 1,
            offset: 8,
        },
        CacheKey::Page {
            segment_id: 2,
            offset: 8,
        },
    ]
    .map(|k| k.object_id());
    let mut sorted = ids.to_vec();
    sorted.dedup();
    assert_eq!(sorted.len(), 4);
}

#[test]
fn many_threads_hit_and_miss_without_losing_counts() {
    let cache = Arc::new(cache(64 * 300, CachePolicy::S3Fifo, true));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let cache = cache.clone();
            std::thread::spawn(move || {
                for i in 0..20_000u64 {
                    // Every other request to a hot set of 8 (hits however the threads are
                    // scheduled), the others a scan over 200 more (evictions).
                    let id = match i % 2 {
                        0 => i / 2 % 8,
                        _ => 8 + (i * 7 + t) % 200,
                    };
                    cache
                        .get_or_load(key(id), Tier::HotPage, Owner::NONE, || load(300))
                        .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let stats = cache.stats(no_names).hot;
    assert_eq!(stats.requests, 80_000);
    assert_eq!(stats.hits + stats.misses, 80_000);
    assert!(stats.hits > 0 && stats.evictions > 0);
    assert!(stats.resident_bytes <= 64 * 300);
}

/// A trace whose hot set is a handful of objects: `hot` objects draw half the requests,
/// a Zipf tail over `objects` the other half, interleaved at random.
fn hot_set_trace(hot: u64, objects: u64, requests: usize, unit: u64) -> Vec<(u64, u64)> {
    use rand::Rng;
    let mut rng = StdRng::seed_from_u64(7);
    let tail = zipf_trace(objects, requests, 0.9, unit);
    tail.into_iter()
        .map(|(id, weight)| {
            if rng.random_bool(0.5) {
                let hot_id = (1 << 60) + rng.random_range(0..hot);
                (hot_id, unit)
            } else {
                (id, weight)
            }
        })
        .collect()
}

#[test]
fn what_if_corrects_for_a_hot_set_the_sample_over_or_under_draws() {
    let budget = 32 << 20;
    let trace = hot_set_trace(10, 40_000, 400_000, 4096);
    let live = cache(budget, CachePolicy::S3Fifo, true);
    replay_quick(&live, &trace);
    let stats = live.stats(no_names);
    assert_sample_keeps_its_objects(&stats, &trace);
    let mut worst_raw = 0.0f64;
    for what_if in &stats.what_if {
        let mut full = Miniature::new(CachePolicy::S3Fifo, what_if.budget_bytes);
        for &(id, weight) in &trace {
            full.access(id, weight);
        }
        let error = (what_if.hit_ratio - full.hit_ratio()).abs();
        let raw = (what_if.sampled_hit_ratio - full.hit_ratio()).abs();
        worst_raw = worst_raw.max(raw);
        assert!(
            error <= 0.01,
            "at {}x: estimated {:.4} (sampled {:.4}), simulated {:.4}",
            what_if.factor,
            what_if.hit_ratio,
            what_if.sampled_hit_ratio,
            full.hit_ratio()
        );
    }
    // The trace is one the uncorrected estimate gets wrong.
    assert!(worst_raw > 0.02, "worst uncorrected error {worst_raw:.4}");
}

#[test]
fn what_if_samples_objects_of_a_large_share_of_the_budget_whatever_their_hash() {
    // Pages of 4 to 16 KiB and 40 records of 0.5 to 4 MiB (a sixty-fourth of the 32 MiB
    // budget and more), one request in twenty for a record. A hash sample at a rate near
    // 1/8 holds about five records, and which five moves every estimate; sampled as a
    // stratum of their own, each at the rate's share of its weight (and ordered by the
    // sized main at its full size), they do not. Three id offsets give three samples of
    // the pages; each is within two hundredths, where the hash sample alone is off by more
    // than four times that (0.09 to 0.36 at the worst factor of each).
    use rand::Rng;
    let budget = 32 << 20;
    for offset in [0u64, 1 << 40, 2 << 40] {
        let mut rng = StdRng::seed_from_u64(offset);
        let records = Zipf::new(40.0, 0.8).unwrap();
        let trace: Vec<(u64, u64)> = zipf_trace(40_000, 400_000, 0.9, 4096)
            .into_iter()
            .map(|(id, weight)| {
                if rng.random_bool(0.05) {
                    let rank = records.sample(&mut rng) as u64;
                    (
                        (1 << 62) + offset + rank,
                        (512 << 10) + (rank % 8) * (512 << 10),
                    )
                } else {
                    (id + offset, weight)
                }
            })
            .collect();
        let policy = CachePolicy::default();
        let live = cache(budget, policy, true);
        replay_quick(&live, &trace);
        let stats = live.stats(no_names);
        assert_sample_keeps_its_objects(&stats, &trace);
        // What a hash sample alone at the same rate would estimate.
        let threshold = threshold_of(stats.sample_rate);
        let mut worst_hash_only = 0.0f64;
        for what_if in &stats.what_if {
            let mut full = Miniature::new(policy, what_if.budget_bytes);
            let scaled = (what_if.budget_bytes as f64 * stats.sample_rate) as u64;
            let mut hash_only = Miniature::new(policy, scaled);
            for &(id, weight) in &trace {
                full.access(id, weight);
                if mix(id) <= threshold {
                    hash_only.access(id, weight);
                }
            }
            let error = (what_if.hit_ratio - full.hit_ratio()).abs();
            assert!(
                error <= 0.02,
                "offset {offset:#x}, at {}x: estimated {:.4}, simulated {:.4}",
                what_if.factor,
                what_if.hit_ratio,
                full.hit_ratio()
            );
            let expected = stats.sample_rate * trace.len() as f64;
            let hash_only_ratio = shards_adjusted(
                hash_only.hit_ratio() * hash_only.requests as f64,
                hash_only.requests as f64,
                expected,
            );
            worst_hash_only = worst_hash_only.max((hash_only_ratio - full.hit_ratio()).abs());
        }
        assert!(
            worst_hash_only > 0.08,
            "offset {offset:#x}: the hash sample alone was off by {worst_hash_only:.4} at most"
        );
    }
}

#[test]
fn shards_adjustment_counts_the_sample_share_gap_as_hits() {
    // The sample drew its share exactly: the sampled ratio.
    assert_eq!(shards_adjusted(50.0, 100.0, 100.0), 0.5);
    // It drew 20 more requests than its share (a hot object in it): those hits go.
    assert_eq!(shards_adjusted(70.0, 120.0, 100.0), 0.5);
    // 20 fewer (hot objects outside it): counted as hits.
    assert_eq!(shards_adjusted(30.0, 80.0, 100.0), 0.5);
    // Bounded to a ratio; nothing expected gives the sampled ratio.
    assert_eq!(shards_adjusted(0.0, 300.0, 100.0), 0.0);
    assert_eq!(shards_adjusted(10.0, 0.0, 100.0), 1.0);
    assert_eq!(shards_adjusted(3.0, 4.0, 0.0), 0.75);
    assert_eq!(shards_adjusted(0.0, 0.0, 0.0), 0.0);
}

#[test]
fn the_live_cache_keeps_inner_pages_ahead_of_leaves_and_traces_them() {
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.csv");
    let live = PageCache::with_config(CacheConfig {
        budget_bytes: 1000,
        record_bytes: 0,
        policy: CachePolicy::S3Fifo,
        what_if: false,
        what_if_objects: WHAT_IF_SAMPLED_OBJECTS,
        trace: Some(trace_path.clone()),
    })
    .unwrap();
    let inner = || {
        Ok(Loaded {
            value: TestValue::InnerPage,
            weight_bytes: 100,
            read_bytes: 100,
        })
    };
    live.get_or_load(key(1), Tier::HotPage, Owner::NONE, inner)
        .unwrap();
    for id in 100..400 {
        for _ in 0..2 {
            live.get_or_load(key(id), Tier::HotPage, Owner::NONE, || load(10))
                .unwrap();
        }
    }
    let before = live.stats(no_names).hot.hits;
    live.get_or_load(key(1), Tier::HotPage, Owner::NONE, inner)
        .unwrap();
    assert_eq!(
        live.stats(no_names).hot.hits,
        before + 1,
        "the inner page was evicted"
    );
    drop(live);
    let trace = std::fs::read_to_string(&trace_path).unwrap();
    let classes: Vec<&str> = trace
        .lines()
        .skip(1)
        .map(|line| line.rsplit(',').next().unwrap())
        .collect();
    assert_eq!(classes.len(), 602);
    assert_eq!((classes[0], classes[601]), ("inner", "inner"));
    assert!(classes[1..601].iter().all(|&class| class == "hot"));
}

/// An object read through `get_or_read` is counted as a miss and not kept until it is
/// admitted; a hit there hands back nothing to admit.
#[test]
fn an_object_read_but_not_admitted_stays_out_of_the_cache() {
    let cache = cache(10_000, CachePolicy::default(), false);
    let (_, unkept) = cache
        .get_or_read(key(1), Tier::HotPage, Owner::NONE, || load(100))
        .unwrap();
    assert!(unkept.is_some());
    drop(unkept);
    let stats = cache.stats(no_names);
    assert_eq!((stats.hot.requests, stats.hot.misses), (1, 1));
    assert_eq!(stats.hot.bytes_read, 100);
    assert_eq!(stats.hot.resident_bytes, 0, "kept without being admitted");
    // Read again: a miss again, this time admitted; then a hit, with nothing to admit.
    let (_, unkept) = cache
        .get_or_read(key(1), Tier::HotPage, Owner::NONE, || load(100))
        .unwrap();
    assert!(
        cache
            .admit(unkept.expect("a miss"), Admission::Always)
            .is_none()
    );
    assert_eq!(cache.stats(no_names).hot.resident_bytes, 100);
    let (_, unkept) = cache
        .get_or_read(key(1), Tier::HotPage, Owner::NONE, || {
            panic!("loaded though cached")
        })
        .unwrap();
    assert!(unkept.is_none());
    cache
        .get_or_load(key(1), Tier::HotPage, Owner::NONE, || {
            panic!("loaded though cached")
        })
        .unwrap();
    let stats = cache.stats(no_names);
    assert_eq!((stats.hot.requests, stats.hot.hits), (4, 2));
}

/// Fills `cache` with objects read with `Admission::Always` (ids from 1,000,000 up) until
/// `bytes` of them are resident.
fn fill(cache: &PageCache, bytes: u64) {
    for offset in 1_000_000..1_000_000 + bytes / 100 {
        let (_, unkept) = cache
            .get_or_read(key(offset), Tier::HotPage, Owner::NONE, || load(100))
            .unwrap();
        assert!(
            cache
                .admit(unkept.expect("a miss"), Admission::Always)
                .is_none()
        );
    }
}

/// Whether `offset` is cached: a read that counts a hit (what it may have loaded is not
/// kept).
fn cached(cache: &PageCache, offset: u64) -> bool {
    let hits = cache.stats(no_names).hot.hits;
    let _ = cache
        .get_or_read(key(offset), Tier::HotPage, Owner::NONE, || load(100))
        .unwrap();
    cache.stats(no_names).hot.hits > hits
}

/// The cache decides admission from what the read says and what the object is: an inner
/// page goes in whatever the read says; a leaf read by a walk that keeps inner pages only,
/// or read once by a point read whose record is kept above (when the pages fill their
/// budget), is given back; any object a read will come back to goes in, and so does a
/// point read's leaf while the pages have room.
#[test]
fn admission_is_decided_from_the_read_and_the_object() {
    let with_room = cache(100_000, CachePolicy::default(), false);
    let (_, unkept) = with_room
        .get_or_read(key(11), Tier::HotPage, Owner::NONE, || load(100))
        .unwrap();
    let unkept = unkept.expect("a miss");
    assert!(
        with_room.admit(unkept, Admission::IfReadLately).is_none(),
        "a point read's leaf kept on its first read while there is room"
    );
    let cache = cache(1_000, CachePolicy::default(), false);
    let inner = || {
        Ok(Loaded {
            value: TestValue::InnerPage,
            weight_bytes: 100,
            read_bytes: 100,
        })
    };
    let resident = |cache: &PageCache| cache.stats(no_names).hot.resident_bytes;
    for (offset, admission) in [
        (1, Admission::InnerPagesOnly),
        (2, Admission::IfReadLately),
        (3, Admission::Always),
    ] {
        let (_, unkept) = cache
            .get_or_read(key(offset), Tier::HotPage, Owner::NONE, inner)
            .unwrap();
        assert!(cache.admit(unkept.expect("a miss"), admission).is_none());
    }
    assert_eq!(resident(&cache), 300, "an inner page given back");
    fill(&cache, 700);
    let read = |offset: u64, admission: Admission| {
        let (_, unkept) = cache
            .get_or_read(key(offset), Tier::HotPage, Owner::NONE, || load(100))
            .unwrap();
        cache.admit(unkept.expect("a miss"), admission).is_none()
    };
    assert!(
        !read(10, Admission::InnerPagesOnly),
        "a leaf kept by a walk"
    );
    assert!(
        !read(10, Admission::InnerPagesOnly),
        "a leaf kept by a walk"
    );
    assert!(!read(11, Admission::IfReadLately), "kept on its first read");
    assert!(read(11, Admission::IfReadLately), "not kept on its second");
    assert!(read(12, Admission::Always));
    assert_eq!(resident(&cache), 1_000);
    assert!(cached(&cache, 11) && cached(&cache, 12) && !cached(&cache, 10));
}

/// An object read and not kept (the pages fill their budget) goes in when it is read again
/// among the latest such reads, not when other objects were read between enough to push it
/// out of the cache's memory.
#[test]
fn an_object_read_again_at_once_is_admitted_and_one_read_long_ago_is_not() {
    let cache = cache(10_000, CachePolicy::default(), false);
    fill(&cache, 10_000);
    let read = |offset: u64| {
        let (_, unkept) = cache
            .get_or_read(key(offset), Tier::HotPage, Owner::NONE, || load(100))
            .unwrap();
        if let Some(unkept) = unkept {
            let _ = cache.admit(unkept, Admission::IfReadLately);
        }
    };
    read(1);
    assert!(!cached(&cache, 1), "kept on its first read");
    read(1);
    assert!(cached(&cache, 1), "not kept on its second");
    // Object 2, then LATELY others, then 2 again: forgotten, not kept.
    read(2);
    for offset in 100..100 + LATELY as u64 {
        read(offset);
    }
    read(2);
    assert!(!cached(&cache, 2), "kept though read long ago");
    read(2);
    assert!(cached(&cache, 2));
    assert!(cache.stats(no_names).hot.resident_bytes <= 10_000);
}

/// Threads reading the same objects at once, each twice in a row as point reads of keys in
/// order read a leaf, in step (a barrier between reads): each object is read lately by one
/// of them when another comes back to it, so every one is kept, once, and every read counted.
#[test]
fn threads_reading_an_object_again_at_once_keep_it_once() {
    const THREADS: usize = 4;
    const OBJECTS: u64 = 100;
    let cache = Arc::new(cache(1_000_000, CachePolicy::default(), false));
    let step = Arc::new(std::sync::Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (cache, step) = (cache.clone(), step.clone());
            std::thread::spawn(move || {
                for id in 0..OBJECTS {
                    for _ in 0..2 {
                        step.wait();
                        let (_, unkept) = cache
                            .get_or_read(key(id), Tier::HotPage, Owner::NONE, || load(100))
                            .unwrap();
                        if let Some(unkept) = unkept {
                            let _ = cache.admit(unkept, Admission::IfReadLately);
                        }
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let stats = cache.stats(no_names).hot;
    let reads = THREADS as u64 * OBJECTS * 2;
    assert_eq!(stats.requests, reads);
    assert_eq!(stats.hits + stats.misses, reads);
    assert!(stats.misses >= OBJECTS, "{stats:?}");
    assert_eq!(stats.resident_bytes, OBJECTS * 100, "each kept once");
    for id in 0..OBJECTS {
        let (_, unkept) = cache
            .get_or_read(key(id), Tier::HotPage, Owner::NONE, || load(100))
            .unwrap();
        assert!(unkept.is_none(), "object {id} not kept");
    }
}

/// Pages may take the record tier's share while it holds less; as it fills they are evicted
/// so that pages and records together stay within the budget, and never below the pages'
/// own share.
#[test]
fn pages_borrow_the_record_share_the_tier_does_not_hold() {
    let budget = 100_000;
    let cache = PageCache::with_config(CacheConfig {
        budget_bytes: budget,
        record_bytes: 60_000,
        policy: CachePolicy::default(),
        what_if: false,
        what_if_objects: WHAT_IF_SAMPLED_OBJECTS,
        trace: None,
    })
    .unwrap();
    let pages = |cache: &PageCache| cache.core.lock().resident_bytes;
    for offset in 0..100 {
        cache
            .get_or_load(key(offset), Tier::HotPage, Owner::NONE, || load(1_000))
            .unwrap();
    }
    assert_eq!(
        pages(&cache),
        100_000,
        "an empty record tier leaves its share to pages"
    );
    let record = vec![7u8; 900];
    for id in 0..200u32 {
        cache.keep_record(1, &id.to_be_bytes(), &record, 1, &Walked::NONE, &|| true);
        let records = cache.records().resident_bytes();
        assert!(
            pages(&cache) + records <= budget,
            "pages {} and records {records} over the budget",
            pages(&cache)
        );
    }
    let records = cache.records().resident_bytes();
    assert!(records > 50_000 && records <= 60_000, "records {records}");
    assert!(pages(&cache) >= 40_000 - 1_000, "pages {}", pages(&cache));
    // A page load now fits beside the records, and evicts pages to do so.
    cache
        .get_or_load(key(1_000), Tier::HotPage, Owner::NONE, || load(1_000))
        .unwrap();
    assert!(pages(&cache) + cache.records().resident_bytes() <= budget);
    // Records removed leave their room to pages again.
    for id in 0..200u32 {
        cache.records().remove(1, &id.to_be_bytes());
    }
    for offset in 2_000..2_100 {
        cache
            .get_or_load(key(offset), Tier::HotPage, Owner::NONE, || load(1_000))
            .unwrap();
    }
    assert_eq!(pages(&cache), 100_000);
}

#[test]
fn dropped_objects_leave_the_cache_its_trace_and_its_estimate_alike() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.csv");
    let trace = zipf_trace(2_000, 30_000, 0.9, 100);
    for policy in CachePolicy::ALL {
        let live = PageCache::with_config(CacheConfig {
            budget_bytes: 40_000,
            record_bytes: 0,
            policy,
            what_if: true,
            what_if_objects: WHAT_IF_SAMPLED_OBJECTS,
            trace: Some(path.clone()),
        })
        .unwrap();
        let mut sim = Miniature::new(policy, 40_000);
        let mut drops = 0;
        for (i, &(id, weight)) in trace.iter().enumerate() {
            live.get_or_load(key(id), Tier::HotPage, Owner::NONE, || {
                load(weight as usize)
            })
            .unwrap();
            sim.access(key(id).object_id(), weight);
            if i % 7 == 0 {
                // The object just asked for, superseded: it leaves at once.
                let before = live.stats(no_names).total().resident_bytes;
                live.drop_superseded(&[key(id)]);
                sim.remove(&key(id).object_id());
                let after = live.stats(no_names).total().resident_bytes;
                assert_eq!(before - after, weight, "{policy:?}");
                assert_eq!(after, sim.resident_bytes(), "{policy:?}");
                drops += 1;
            }
        }
        // Dropping what is not resident changes nothing but the trace.
        live.drop_superseded(&[key(u64::MAX >> 30)]);
        let stats = live.stats(no_names);
        assert_eq!(stats.hot.hits, sim.hits, "{policy:?}");
        assert_eq!(stats.hot.requests, trace.len() as u64);
        assert_eq!(stats.sample_rate, 1.0);
        let at_1x = stats.what_if.iter().find(|w| w.factor == 1.0).unwrap();
        assert_eq!(at_1x.hit_ratio, sim.hit_ratio(), "{policy:?}");
        drop(live);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.lines().filter(|l| l.ends_with(",0,drop")).count(),
            drops + 1
        );
        assert_eq!(text.lines().count(), 1 + trace.len() + drops + 1);
    }
}

#[test]
fn dropped_objects_do_not_count_towards_the_sample() {
    // 20,000 objects over the run, each asked for a few times and then dropped as a commit
    // replaces it, never more than 1,000 alive: fewer live objects than the sample keeps,
    // so the rate stays 1 and every estimate is a whole simulation, drops included.
    let budget = 256 << 20;
    let live = cache(budget, CachePolicy::S3Fifo, true);
    let mut full: Vec<Miniature<u64>> = WHAT_IF_FACTORS
        .iter()
        .map(|f| Miniature::new(CachePolicy::S3Fifo, (budget as f64 * f) as u64))
        .collect();
    let weight = 16 << 10;
    for i in 0..20_000u64 {
        for id in [i, i.saturating_sub(1), i.saturating_sub(500)] {
            live.get_or_load(key(id), Tier::HotPage, Owner::NONE, || load(weight))
                .unwrap();
            for sim in &mut full {
                sim.access(key(id).object_id(), weight as u64);
            }
        }
        if i >= 1_000 {
            let gone = key(i - 1_000);
            live.drop_superseded(&[gone]);
            for sim in &mut full {
                sim.remove(&gone.object_id());
            }
        }
    }
    let stats = live.stats(no_names);
    assert_eq!(stats.sample_rate, 1.0);
    for (what_if, sim) in stats.what_if.iter().zip(&full) {
        assert_eq!(what_if.hit_ratio, sim.hit_ratio(), "at {}x", what_if.factor);
    }
}

/// The miniature record tier keeps what fits, hits what it keeps, turns a new record away
/// on its first miss once full and takes it on its second, and forgets the records of
/// leaves that leave the sample.
#[test]
fn miniature_record_tier_takes_a_record_on_its_second_miss_once_full() {
    use super::what_if::MiniRecords;
    // A sampled budget of 1,000 bytes, of a tier of 16,000: records of over 1,000 bytes
    // (a shard's share) are large, of over 8,000 never kept.
    let mut tier = MiniRecords::new(1000, 16_000);
    assert!(!tier.access(1, 10, 300), "a first lookup misses");
    assert!(tier.access(1, 10, 300), "and is kept");
    assert!(!tier.access(2, 20, 300));
    assert!(!tier.access(3, 20, 300));
    assert_eq!(tier.resident, 900);
    // Full: the fourth is turned away once, then taken (evicting one not read again).
    assert!(!tier.access(4, 30, 300));
    assert_eq!(tier.resident, 900);
    assert!(!tier.access(4, 30, 300));
    assert!(tier.access(4, 30, 300));
    assert!(tier.access(1, 10, 300), "read again before, spared");
    assert_eq!(tier.resident, 900);
    // A key the tree does not hold (weight 0) and one over half the budget are never kept.
    assert!(!tier.access(5, 30, 0));
    assert!(!tier.access(5, 30, 0));
    assert!(!tier.access(6, 30, 8001));
    assert!(!tier.access(6, 30, 8001));
    // A document built since makes an entry heavier.
    assert!(tier.access(1, 10, 400));
    assert!(tier.resident <= 1000);
    tier.retain(|leaf| leaf != 10);
    assert!(!tier.access(1, 10, 400), "its leaf left the sample");
    tier.set_budget(0, 0);
    assert_eq!(tier.resident, 0);
}

/// The miniature record tier, given every lookup, counts the hits the live tier counts on
/// the same Zipf stream of records of varied sizes (within a point), at budgets holding a
/// tenth to most of them.
#[test]
fn miniature_record_tier_hits_as_the_live_tier() {
    use super::records::{RecordCache, entry_weight};
    use super::what_if::{MiniRecords, mix};
    let records = 20_000u64;
    let zipf = Zipf::new(records as f64, 0.99).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let stream: Vec<u64> = (0..400_000)
        .map(|_| zipf.sample(&mut rng) as u64 - 1)
        .collect();
    let len = |r: u64| 200 + (mix(r) % 1_800) as usize;
    for budget in [4u64 << 20, 8 << 20, 16 << 20] {
        let live: RecordCache<()> = RecordCache::new(budget);
        let mut mini = MiniRecords::new(budget, budget);
        let (mut live_hits, mut mini_hits) = (0u64, 0u64);
        let value = vec![0u8; 2_000];
        for &r in &stream {
            let key = r.to_be_bytes();
            let weight = entry_weight(key.len() + len(r));
            match live.get_record(1, &key, 0) {
                Some(_) => live_hits += 1,
                None => {
                    live.insert(1, &key, &value[..len(r)], 0, || true);
                }
            }
            if mini.access(mix(r), r / 32, weight) {
                mini_hits += 1;
            }
        }
        let n = stream.len() as f64;
        let (live_ratio, mini_ratio) = (live_hits as f64 / n, mini_hits as f64 / n);
        eprintln!("{budget}: live {live_ratio:.4}, miniature {mini_ratio:.4}");
        assert!(
            (live_ratio - mini_ratio).abs() <= 0.01,
            "{budget}: live {live_ratio:.4}, miniature {mini_ratio:.4}"
        );
    }
}
