use crate::belady::belady_hits;
use crate::policy::SimPolicy;
use crate::simulator::Simulator;
use crate::tinylfu::{SKETCH_MAX, Sketch};

fn replay(policy: SimPolicy, budget: u64, trace: &[(u64, u64)]) -> Simulator<u64> {
    let mut sim = Simulator::new(policy, budget);
    for &(key, weight) in trace {
        sim.access(key, weight);
        assert!(sim.resident_bytes() <= budget);
    }
    sim
}

#[test]
fn sieve_keeps_visited() {
    let mut sim = Simulator::new(SimPolicy::Sieve, 3);
    for key in [1, 2, 3, 1, 4] {
        sim.access(key, 1);
    }
    // 1 was visited, so 2 (the oldest unvisited) went.
    assert!(sim.access(1, 1));
    assert!(!sim.access(2, 1));
}

#[test]
fn tinylfu_admits_only_what_was_asked_for_more_often() {
    // 100 objects fill the cache (window 1 object); keys 0-9 are asked for often. A
    // flood of keys seen once each never displaces them: every newcomer loses the
    // admission against main's victim.
    let mut trace = Vec::new();
    for _ in 0..5 {
        trace.extend((0..100).map(|key| (key, 10)));
        trace.extend((0..10).map(|key| (key, 10)));
    }
    trace.extend((1000..3000).map(|key| (key, 10)));
    trace.extend((0..10).map(|key| (key, 10)));
    let sim = replay(SimPolicy::TinyLfu, 1000, &trace);
    let lru = replay(SimPolicy::Lru, 1000, &trace);
    // The first pass misses all 100 and the flood its 2,000; everything else hits.
    assert_eq!(sim.hits, trace.len() as u64 - 2_100);
    // LRU loses the ten to the flood.
    assert_eq!(lru.hits, sim.hits - 10);
}

#[test]
fn tinylfu_lets_a_newly_popular_object_in() {
    // Key 500 arrives after the cache is full of objects asked for twice, among
    // objects seen once each. Turned away while the main cache's objects were asked
    // for as often, it wins its place once asked for more often than they were.
    let mut trace = Vec::new();
    for _ in 0..2 {
        trace.extend((0..100).map(|key| (key, 10)));
    }
    let mut sim = Simulator::new(SimPolicy::TinyLfu, 1000);
    for &(key, weight) in &trace {
        sim.access(key, weight);
    }
    let mut once = 1000..;
    let mut hits = Vec::new();
    for _ in 0..5 {
        hits.push(sim.access(500, 10));
        for key in once.by_ref().take(5) {
            sim.access(key, 10);
        }
    }
    // Missed while its count was at most the residents' (2), kept from then on.
    assert_eq!(hits, [false, false, false, true, true]);
    // Of the one-time objects only the last, still in the window, is held.
    let held = (1000..1025)
        .filter(|key| sim.policy().contains(key))
        .count();
    assert_eq!(held, 1);
}

#[test]
fn sketch_counts_and_halves() {
    let mut sketch = Sketch::new(256);
    for _ in 0..20 {
        sketch.increment(&7u64);
    }
    sketch.increment(&8u64);
    assert_eq!(sketch.estimate(&7u64), SKETCH_MAX);
    assert!(sketch.estimate(&8u64) >= 1);
    assert_eq!(sketch.estimate(&9u64), 0, "an empty sketch over 1024 slots");
    // Ten times the width of additions halves every counter.
    for key in 0..2560u64 {
        sketch.increment(&(key + 100));
    }
    assert!(sketch.estimate(&7u64) <= SKETCH_MAX / 2 + 1);
}

#[test]
fn belady_on_a_textbook_trace() {
    // Capacity 3, unit sizes: on 7,0,1,2,0,3,0,4,2,3,0,3,2 demand paging (every miss
    // kept) has 6 hits; keeping nothing that is never asked for again (7 and 4) makes 7.
    let trace: Vec<(u64, u64)> = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2]
        .into_iter()
        .map(|k| (k, 1))
        .collect();
    assert_eq!(belady_hits(&trace, 3, 0), 7);
    assert_eq!(belady_hits(&trace, 1, 0), 3);
    assert_eq!(belady_hits(&trace, 0, 0), 0);
    assert_eq!(belady_hits(&trace, 100, 0), 13 - 6);
    // The first five requests are a warm-up: 0 at 4 is the only hit among them.
    assert_eq!(belady_hits(&trace, 3, 5), 7 - 1);
}

#[test]
fn every_policy_stays_in_budget_and_below_the_optimum() {
    let mut state = 7u64;
    let trace: Vec<(u64, u64)> = (0..20_000)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            let key = (state >> 33) % 500;
            (key, 1 + key % 37)
        })
        .collect();
    for policy in SimPolicy::ALL {
        let sim = replay(policy, 2000, &trace);
        assert!(sim.hits > 0, "{policy:?}");
        assert!(belady_hits(&trace, 2000, 0) >= sim.hits, "{policy:?}");
    }
}

/// The engine's policies simulated here decide as the engine's own miniature caches do:
/// the same code, request for request.
#[test]
fn the_engines_policies_run_the_engines_code() {
    let mut state = 11u64;
    let trace: Vec<(u64, u64)> = (0..5_000)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            ((state >> 33) % 300, 1 + (state >> 20) % 50)
        })
        .collect();
    let mut policy = skewdb::policy::Policy::new(skewdb::CachePolicy::default(), 1500);
    let mut resident = 0;
    let mut hits = 0;
    for &(key, weight) in &trace {
        if policy.touch_as(&key, false) {
            hits += 1;
            continue;
        }
        while resident + weight > 1500 {
            let Some((_, gone)) = policy.evict(&mut skewdb::policy::NoMarks) else {
                break;
            };
            resident -= gone;
        }
        policy.insert(key, weight, false);
        resident += weight;
    }
    assert_eq!(replay(SimPolicy::S3FifoSized, 1500, &trace).hits, hits);
}

#[test]
fn policy_names_round_trip() {
    for policy in SimPolicy::ALL {
        assert_eq!(SimPolicy::parse(policy.name()), Some(policy));
    }
    assert_eq!(SimPolicy::parse("fifo"), None);
}
