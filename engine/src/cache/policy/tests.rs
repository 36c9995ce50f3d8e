use std::collections::BinaryHeap;

use super::kind::CachePolicy;
use super::marks::NoMarks;
use super::miniature::Miniature;
use super::rules::Rule;
use super::s3fifo::{MAX_USES, Main, Meta, S3Fifo, SIZED_SMALL_SHARE, SizedQueue};

use super::*;

fn replay(policy: CachePolicy, budget: u64, trace: &[(u64, u64)]) -> Miniature<u64> {
    let mut sim = Miniature::new(policy, budget);
    for &(key, weight) in trace {
        sim.access(key, weight);
        assert!(sim.resident_bytes() <= budget);
    }
    sim
}

#[test]
fn lru_evicts_least_recent() {
    let mut sim = Miniature::new(CachePolicy::Lru, 3);
    for key in [1, 2, 3, 1, 4] {
        sim.access(key, 1);
    }
    // 2 was least recently used when 4 came.
    assert!(sim.access(1, 1));
    assert!(sim.access(3, 1));
    assert!(!sim.access(2, 1));
}

#[test]
fn s3fifo_resists_a_scan() {
    // A hot set hit often, then a long scan of objects seen once: S3-FIFO keeps the hot
    // set, LRU loses it.
    let mut trace = Vec::new();
    for round in 0..20 {
        for key in 0..50 {
            trace.push((key, 10));
        }
        if round == 10 {
            for key in 1000..3000 {
                trace.push((key, 10));
            }
        }
    }
    let s3 = replay(CachePolicy::S3Fifo, 1000, &trace);
    let lru = replay(CachePolicy::Lru, 1000, &trace);
    // Only the first round misses under S3-FIFO; LRU misses the hot set again after
    // the scan.
    assert_eq!(s3.hits, 19 * 50);
    assert_eq!(lru.hits, 18 * 50);
}

#[test]
fn s3fifo_moves_an_object_hit_once_to_main() {
    // Key 0 is hit once while in the small queue, then 200 keys seen once each flood the
    // cache (100 objects fit). Hit once is enough to move it to main, so it outlives the
    // flood; the rest leave through the small queue.
    let mut trace = vec![(0, 10), (0, 10)];
    trace.extend((1..=200).map(|key| (key, 10)));
    trace.push((0, 10));
    let s3 = replay(CachePolicy::S3Fifo, 1000, &trace);
    assert_eq!(s3.hits, 2);
    let lru = replay(CachePolicy::Lru, 1000, &trace);
    assert_eq!(lru.hits, 1);
}

/// A reproducible stream of numbers (a linear congruential generator's high bits).
fn numbers(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        x >> 33
    }
}

/// A key's weight in the tests that mix keys: 512 bytes to 6.5 KiB.
fn weight(key: u64) -> u64 {
    512 + (key % 7) * 1024
}

/// Makes a sized main count uses up to `max_uses`.
fn count_uses_up_to(s3: &mut S3Fifo<u64>, max_uses: u8) {
    match &mut s3.main {
        Main::Sized(queue) => queue.max_uses = max_uses,
        Main::Fifo { .. } => panic!("not a sized main"),
    }
}

/// The sized main with its uses counted up to `max_uses`.
fn with_max_uses(mut sim: Miniature<u64>, max_uses: u8) -> Miniature<u64> {
    let s3 = sim.policy.rest.s3fifo_mut().expect("S3-FIFO");
    count_uses_up_to(s3, max_uses);
    sim
}

#[test]
fn a_sized_main_with_equal_weights_and_one_use_decides_as_s3fifo() {
    // With every object the same size and its uses not counted, a place in the sized
    // main is the clock plus one constant, so keys leave in the order they entered:
    // S3-FIFO's, request for request.
    let mut next = numbers(5);
    // S3-FIFO with the sized main's small queue, a twentieth of the budget.
    let mut fifo = Miniature::new(CachePolicy::S3Fifo, 64 * 100);
    let share = SIZED_SMALL_SHARE;
    fifo.policy.rest = Rule::of_s3fifo(S3Fifo::with_small_share(64 * 100, false, share));
    let mut sized = with_max_uses(Miniature::new(CachePolicy::S3FifoSized, 64 * 100), 1);
    let mut hits = 0;
    for i in 0..50_000 {
        // A skewed mix: half the requests to 150 keys, half to 5,000.
        let key = match next() % 2 {
            0 => next() % 150,
            _ => next() % 5_000,
        };
        if i % 97 == 0 {
            assert_eq!(fifo.remove(&key), sized.remove(&key), "{i}");
        }
        let hit = fifo.access(key, 64);
        assert_eq!(hit, sized.access(key, 64), "request {i}, key {key}");
        hits += u64::from(hit);
    }
    assert!(hits > 10_000 && hits < 40_000, "{hits}");
}

/// The keys `s3` gives up, in order, after `entries` entered its main queue in turn
/// (key `i` weighing `entries[i].0` and ordered by the size `entries[i].1`), none hit.
fn main_order_of(mut s3: S3Fifo<u64>, entries: &[(u64, u32)]) -> Vec<u64> {
    for (key, &(weight, size)) in entries.iter().enumerate() {
        let meta = Meta {
            weight,
            size,
            freq: 0,
            small: false,
            place: 0,
            uses: 1,
        };
        s3.queue_in_main(key as u64, meta);
    }
    std::iter::from_fn(|| s3.evict(&mut NoMarks).map(|(key, _)| key)).collect()
}

#[test]
fn a_sized_main_places_an_object_as_far_as_its_uses_up_to_three() {
    let mut main = Main::Sized(SizedQueue {
        heap: BinaryHeap::new(),
        clock: 0,
        pushed: 0,
        size_cap: 1 << 20,
        max_uses: MAX_USES,
    });
    // Used three times at three times the size: the place of one use at the size.
    main.push(0u64, 100, 1);
    main.push(1, 100, 3);
    main.push(2, 300, 3);
    main.push(3, 100, 2);
    // Uses past the most counted count as the most; none counts as one (a half size
    // used once is placed as the whole used twice, and ties go first in, first out).
    main.push(4, 100, 9);
    main.push(5, 50, 0);
    let places: Vec<(u64, u128)> = std::iter::from_fn(|| main.pop())
        .map(|(key, _, at)| (key, at))
        .collect();
    let unit = (1u128 << 64) / 100;
    let half = (1u128 << 64) / 50;
    assert_eq!(
        places,
        [
            (0, unit),
            (2, 3 * ((1u128 << 64) / 300)),
            (3, 2 * unit),
            (5, half),
            (1, 3 * unit),
            (4, 3 * unit),
        ]
    );
}

/// Hits by key, taken once each.
struct Hits(Vec<(u64, u32)>);

impl Marks<u64> for Hits {
    fn take_hits(&mut self, key: &u64) -> u32 {
        match self.0.iter_mut().find(|(k, hits)| k == key && *hits > 0) {
            Some((_, hits)) => std::mem::take(hits),
            None => 0,
        }
    }
}

/// The keys a sized main counting up to `max_uses` gives up, in order: keys 0 to 3
/// enter; 0 is hit before each of its first two turns at the front, 1 before its
/// first; key 4 enters after the first key leaves, key 5 after the third.
fn hit_keys_order(max_uses: u8) -> Vec<u64> {
    let mut s3 = S3Fifo::new(1 << 20, true);
    count_uses_up_to(&mut s3, max_uses);
    let meta = Meta {
        weight: 100,
        size: 100,
        freq: 0,
        small: false,
        place: 0,
        uses: 1,
    };
    for key in 0..4u64 {
        s3.queue_in_main(key, meta);
    }
    let mut marks = Hits(vec![(0, 1), (1, 1), (0, 1)]);
    let mut order = Vec::new();
    for (after, key) in [(1, 4), (3, 5)] {
        while order.len() < after {
            order.push(s3.evict(&mut marks).expect("a key to evict").0);
        }
        s3.queue_in_main(key, meta);
    }
    order.extend(std::iter::from_fn(|| {
        s3.evict(&mut marks).map(|(key, _)| key)
    }));
    order
}

#[test]
fn a_sized_main_keeps_an_object_hit_at_each_turn_past_newer_ones() {
    // Counting uses, 0's second hit places it three units past the clock, past key 5,
    // which entered after it was requeued; counting one use, it leaves before 5.
    assert_eq!(hit_keys_order(MAX_USES), [2, 3, 1, 4, 5, 0]);
    assert_eq!(hit_keys_order(1), [2, 3, 1, 4, 0, 5]);
}

/// [`main_order_of`] a main queue of `budget`, each key ordered by its weight.
fn main_order(sized: bool, budget: u64, weights: &[u64]) -> Vec<u64> {
    let entries: Vec<(u64, u32)> = weights.iter().map(|&w| (w, w as u32)).collect();
    main_order_of(S3Fifo::new(budget, sized), &entries)
}

#[test]
fn a_sized_main_evicts_a_large_object_before_small_ones_that_entered_with_it() {
    // Under a sixty-fourth of the budget the larger of two objects has the earlier
    // place, where a FIFO gives up the first in.
    let weights = [100, 400, 100, 50];
    assert_eq!(main_order(true, 64_000, &weights), [1, 0, 2, 3]);
    assert_eq!(main_order(false, 64_000, &weights), [0, 1, 2, 3]);
}

#[test]
fn a_sized_main_orders_objects_of_a_sixty_fourth_of_the_budget_or_more_as_equals() {
    // Budget 64,000: sizes count up to 1,000 bytes. Key 1 (50,000 bytes) and key 0
    // (exactly the cap) take equal places and leave first in, first out; key 2 (999)
    // and key 3 (500) are smaller and stay longer, the smallest last.
    assert_eq!(
        main_order(true, 64_000, &[1_000, 50_000, 999, 500]),
        [0, 1, 2, 3]
    );
    // One byte under the cap is ordered by its size: the large one goes first.
    assert_eq!(main_order(true, 64_000, &[999, 50_000]), [1, 0]);
    // The cap follows the budget: at 128,000 the large one is ordered as 2,000 bytes.
    let mut s3: S3Fifo<u64> = S3Fifo::new(64_000, true);
    s3.set_budget(128_000, 128_000);
    let entries = [(1_999, 1_999), (50_000, 50_000), (2_000, 2_000)];
    assert_eq!(main_order_of(s3, &entries), [1, 2, 0]);
}

#[test]
fn a_sampled_sized_main_orders_objects_by_the_sizes_they_stand_for() {
    // A sample of 1,000 bytes standing for a cache of 64,000: sizes count up to 1,000
    // (a sixty-fourth of the full budget, not of the sample's), and each object is
    // ordered by the size it stands for, not the 10 bytes it weighs here.
    let order = |full: u64| {
        let mut p: Policy<u64> = Policy::new(CachePolicy::S3FifoSized, 1000);
        p.set_sampled_budget(1000, full);
        let s3 = p.rest.into_s3fifo().expect("the sized main is S3-FIFO's");
        main_order_of(s3, &[(10, 500), (10, 50_000), (10, 999)])
    };
    assert_eq!(order(64_000), [1, 2, 0]);
    // Not sampled, the cap is 15 bytes: every one of them is ordered as 15, in turn.
    assert_eq!(order(1000), [0, 1, 2]);
}

#[test]
fn a_sized_main_sweeps_the_places_removed_keys_leave() {
    // Keys that enter main and are removed leave their entries in the heap; the heap
    // is swept before they outnumber the keys twice over (plus a margin).
    let mut s3: S3Fifo<u64> = S3Fifo::new(1 << 30, true);
    let meta = Meta {
        weight: 10,
        size: 10,
        freq: 0,
        small: false,
        place: 0,
        uses: 1,
    };
    for key in 0..100 {
        s3.queue_in_main(key, meta);
    }
    for key in 100..20_000 {
        s3.queue_in_main(key, meta);
        assert_eq!(s3.remove(&key), Some(10));
        assert!(
            s3.main.len() <= 2 * s3.meta.len() + 1025,
            "{key}: {}",
            s3.main.len()
        );
    }
    // The keys left are all there, in order, and nothing removed comes back.
    let left: Vec<u64> =
        std::iter::from_fn(|| s3.evict(&mut NoMarks).map(|(key, _)| key)).collect();
    assert_eq!(left, (0..100).collect::<Vec<_>>());
}

#[test]
fn removed_keys_leave_at_once_and_come_back_as_new_ones() {
    for policy in CachePolicy::ALL {
        let mut sim = Miniature::new(policy, 256 << 10);
        let mut next = numbers(11);
        // What is resident, summed from the policy's own answers.
        let resident = |sim: &Miniature<u64>| -> u64 {
            (0..200)
                .filter(|k| sim.policy.contains(k))
                .map(weight)
                .sum()
        };
        let (mut removed, mut hits) = (0, 0);
        for step in 0..20_000 {
            let key = next() % 200;
            if next().is_multiple_of(5) {
                // Removed keys are asked for again later: each comes back as a new
                // object, whatever place it left in a queue.
                let was = sim.policy.contains(&key);
                assert_eq!(sim.remove(&key), was, "{}", policy.name());
                assert!(!sim.policy.contains(&key), "{}", policy.name());
                removed += u64::from(was);
            } else {
                let hit = sim.access_as(key, weight(key), key.is_multiple_of(40));
                assert!(sim.policy.contains(&key), "{}", policy.name());
                hits += u64::from(hit);
            }
            if step % 97 == 0 {
                assert_eq!(sim.resident_bytes(), resident(&sim), "{}", policy.name());
            }
            assert!(sim.resident_bytes() <= 256 << 10, "{}", policy.name());
        }
        assert!(
            removed > 1_000 && hits > 5_000,
            "{} {removed} {hits}",
            policy.name()
        );
        // A retain after removals, then evicting everything: each resident key once,
        // exactly the resident bytes.
        sim.retain(|key| key % 3 != 0);
        assert_eq!(sim.resident_bytes(), resident(&sim), "{}", policy.name());
        let mut freed = 0;
        let mut seen = std::collections::HashSet::new();
        while let Some((key, weight)) = sim.policy.evict(&mut NoMarks) {
            assert!(seen.insert(key) && key % 3 != 0, "{}", policy.name());
            freed += weight;
        }
        assert_eq!(freed, sim.resident_bytes(), "{}", policy.name());
    }
}

#[test]
fn retained_keys_are_all_that_is_left_and_a_smaller_budget_evicts() {
    for policy in CachePolicy::ALL {
        let mut sim = Miniature::new(policy, 64 << 10);
        let mut numbers = numbers(7);
        let mut next = move || numbers() % 300;
        for _ in 0..5_000 {
            let key = next();
            sim.access_as(key, weight(key), key % 50 == 0);
        }
        let before = sim.resident_bytes();
        sim.retain(|key| key % 2 == 0);
        assert!(sim.resident_bytes() < before, "{}", policy.name());
        assert!(
            (0..300)
                .filter(|k| k % 2 == 1)
                .all(|k| !sim.policy.contains(&k))
        );
        // Going on with the kept keys only, in a budget a quarter the size.
        sim.set_budget(16 << 10);
        assert!(sim.resident_bytes() <= 16 << 10, "{}", policy.name());
        let hits_before = sim.hits;
        for _ in 0..5_000 {
            let key = next() / 2 * 2;
            sim.access_as(key, weight(key), key % 50 == 0);
            assert!(sim.resident_bytes() <= 16 << 10);
        }
        assert!(sim.hits > hits_before, "{}", policy.name());
        // Evicting everything gives back exactly the resident bytes, no dropped key
        // among them.
        let mut freed = 0;
        while let Some((key, weight)) = sim.policy.evict(&mut NoMarks) {
            assert_eq!(key % 2, 0, "{}", policy.name());
            freed += weight;
        }
        assert_eq!(freed, sim.resident_bytes(), "{}", policy.name());
    }
}

#[test]
fn inner_pages_outlive_leaves_up_to_half_the_budget() {
    for policy in CachePolicy::ALL {
        // Three inner pages asked for once, then a flood of leaves hit twice each:
        // every policy keeps the inner pages, LRU and the rest would not.
        let mut sim = Miniature::new(policy, 1000);
        for key in 0..3 {
            sim.access_as(key, 100, true);
        }
        for key in 100..400 {
            sim.access(key, 10);
            sim.access(key, 10);
        }
        for key in 0..3 {
            assert!(
                sim.access_as(key, 100, true),
                "{policy:?} lost inner page {key}"
            );
        }
        // Once past half of the budget, an inner page makes room from the other inner
        // pages, those not hit since the hand last passed first (CLOCK), so leaves keep
        // about half: 500 bytes of inner pages take leaves' room, the sixth and later
        // take inner pages'.
        for key in 3..8 {
            sim.access_as(key, 100, true);
        }
        assert!(sim.resident_bytes() <= 1000);
        let inner = (0..8).filter(|key| sim.policy.contains(key)).count();
        assert_eq!(inner, 6, "{policy:?}");
        assert!(!sim.policy.contains(&4), "{policy:?}");
        assert!(
            !sim.policy.contains(&3),
            "{policy:?}: the first inner page not hit again"
        );
        assert!(
            sim.policy.contains(&0),
            "{policy:?}: hit inner pages get another round"
        );
    }
}

#[test]
fn too_large_objects_are_never_kept() {
    for policy in CachePolicy::ALL {
        let mut sim = Miniature::new(policy, 100);
        assert!(!sim.access(1, 101));
        assert!(!sim.access(1, 101));
        assert!(!sim.access(2, 100));
        assert!(sim.access(2, 100));
    }
}

#[test]
fn every_policy_stays_in_budget_with_mixed_weights() {
    let mut state = 7u64;
    let trace: Vec<(u64, u64)> = (0..20_000)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            let key = (state >> 33) % 500;
            (key, 1 + key % 37)
        })
        .collect();
    for policy in CachePolicy::ALL {
        let sim = replay(policy, 2000, &trace);
        assert!(sim.hits > 0, "{policy:?}");
    }
}

#[test]
fn policy_names_round_trip() {
    for policy in CachePolicy::ALL {
        assert_eq!(CachePolicy::parse(policy.name()), Some(policy));
    }
    assert_eq!(CachePolicy::parse("fifo"), None);
}
