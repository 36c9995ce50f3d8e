//! The offline optimum a trace is compared with.

use std::hash::Hash;

use rustc_hash::FxHashMap;

/// Hits of the offline optimum on a trace of `(object, weight)` requests with a byte budget:
/// on a miss the object is kept, and the resident objects whose next request is farthest
/// away (never requested again first) are dropped until it fits; an object whose next
/// request is farther than every resident one's is not kept at all. Counting objects, this
/// is Belady's MIN, optimal for equal sizes; with variable sizes the exact optimum is
/// NP-hard and this is the usual size-blind bound (an upper bound for the hit ratio of any
/// online policy only when sizes are equal; close to it in practice).
///
/// Hits before position `measure_from` are not counted (a warm-up).
pub fn belady_hits<K: Copy + Eq + Hash>(
    trace: &[(K, u64)],
    budget_bytes: u64,
    measure_from: usize,
) -> u64 {
    use std::collections::BTreeSet;
    // next[i]: the position of the next request for trace[i]'s object, or "never".
    let never = usize::MAX;
    let mut next = vec![never; trace.len()];
    let mut last: FxHashMap<K, usize> = FxHashMap::default();
    for (i, (key, _)) in trace.iter().enumerate().rev() {
        if let Some(&j) = last.get(key) {
            next[i] = j;
        }
        last.insert(*key, i);
    }
    // Resident objects by (next use, tie-breaker), farthest last.
    let mut by_next: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut resident: FxHashMap<K, (usize, usize, u64)> = FxHashMap::default();
    let mut resident_bytes = 0;
    let mut hits = 0;
    for (i, &(key, weight)) in trace.iter().enumerate() {
        let tie = i;
        if let Some((old_next, old_tie, weight)) = resident.remove(&key) {
            if i >= measure_from {
                hits += 1;
            }
            by_next.remove(&(old_next, old_tie));
            by_next.insert((next[i], tie));
            resident.insert(key, (next[i], tie, weight));
            continue;
        }
        if weight > budget_bytes || next[i] == never {
            continue;
        }
        // Drop farther-used objects while they make room; keep the new one only if enough
        // room can be made from objects used later than it.
        let mut freed = budget_bytes - resident_bytes;
        let mut victims = Vec::new();
        for &(victim_next, victim_tie) in by_next.iter().rev() {
            if freed >= weight || victim_next < next[i] {
                break;
            }
            freed += resident_weight(&resident, trace, victim_tie);
            victims.push((victim_next, victim_tie));
        }
        if freed < weight {
            continue;
        }
        for (victim_next, victim_tie) in victims {
            by_next.remove(&(victim_next, victim_tie));
            let (victim_key, _) = trace[victim_tie];
            let (_, _, victim_weight) = resident.remove(&victim_key).expect("resident");
            resident_bytes -= victim_weight;
        }
        by_next.insert((next[i], tie));
        resident.insert(key, (next[i], tie, weight));
        resident_bytes += weight;
    }
    hits
}

fn resident_weight<K: Copy + Eq + Hash>(
    resident: &FxHashMap<K, (usize, usize, u64)>,
    trace: &[(K, u64)],
    tie: usize,
) -> u64 {
    resident[&trace[tie].0].2
}
