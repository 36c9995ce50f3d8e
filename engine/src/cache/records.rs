//! The record tier: parent records as `Collection::get` last read them, keyed by their tree
//! key, in a share of the cache's byte budget. A hit skips the tree walk and the page
//! lookups of a point read (the whole of its cost when its pages are cached).
//!
//! Unlike pages and chunks, a record's key does not name immutable bytes: a commit can
//! change the record under it. Each entry carries the generation of the version it was read
//! at; the store bumps the generation when a commit changes records, removes the records it
//! changes before publishing, and lets a reader insert only what it read at the newest
//! generation while no commit is between those two steps (see `Shared::record_bytes`).
//! A reader uses an entry only when its version is at least as new as the entry's.
//!
//! Sixteen shards, each with its own lock, its own share of the budget and a CLOCK ring:
//! a hit sets the entry's bit; the hand clears bits and evicts the first entry without one.
//! A record read once is evicted before any record read again (scans do not insert).

use std::collections::VecDeque;

use bytes::Bytes;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;

const SHARDS: usize = 16;

/// Memory an entry costs beyond its key and value bytes: the map's slot (the key's handle,
/// the value's, the stamp and flags), the ring's place (another handle of the key), and the
/// allocator's headers of the key and the value.
const ENTRY_OVERHEAD: u64 = 192;

/// What the record tier counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordCounts {
    pub requests: u64,
    pub hits: u64,
    pub evictions: u64,
    /// Records removed because a commit changed them.
    pub invalidations: u64,
    pub resident_bytes: u64,
}

struct Slot {
    value: Bytes,
    generation: u64,
    weight: u64,
    visited: bool,
    /// Names this entry's place in the ring; an older place of the same key (left by a
    /// removed entry) has another stamp and is skipped.
    stamp: u64,
}

#[derive(Default)]
struct Shard {
    map: FxHashMap<Bytes, Slot>,
    ring: VecDeque<(Bytes, u64)>,
    bytes: u64,
    next_stamp: u64,
    /// By collection id (a parent record's key starts with it).
    counts: FxHashMap<u32, RecordCounts>,
}

impl RecordCounts {
    fn add(&mut self, other: &RecordCounts) {
        self.requests += other.requests;
        self.hits += other.hits;
        self.evictions += other.evictions;
        self.invalidations += other.invalidations;
        self.resident_bytes += other.resident_bytes;
    }
}

/// The collection a parent record's tree key belongs to.
fn collection_of(key: &[u8]) -> u32 {
    crate::page::keys::collection_of(key).unwrap_or(0)
}

impl Shard {
    fn counts(&mut self, key: &[u8]) -> &mut RecordCounts {
        self.counts.entry(collection_of(key)).or_default()
    }

    /// Evicts until `weight` more bytes fit in `budget`.
    fn make_room(&mut self, weight: u64, budget: u64) {
        while self.bytes + weight > budget {
            let Some((key, stamp)) = self.ring.pop_front() else {
                return;
            };
            let Some(slot) = self.map.get_mut(&key).filter(|slot| slot.stamp == stamp) else {
                continue;
            };
            if slot.visited {
                slot.visited = false;
                self.ring.push_back((key, stamp));
                continue;
            }
            let weight = slot.weight;
            self.map.remove(&key);
            self.bytes -= weight;
            let counts = self.counts(&key);
            counts.evictions += 1;
            counts.resident_bytes -= weight;
        }
    }

    fn remove(&mut self, key: &[u8]) -> bool {
        match self.map.remove(key) {
            Some(slot) => {
                self.bytes -= slot.weight;
                let counts = self.counts(key);
                counts.resident_bytes -= slot.weight;
                counts.invalidations += 1;
                true
            }
            None => false,
        }
    }

    /// Drops the ring's places of removed entries once they outnumber the live ones.
    fn compact_ring(&mut self) {
        if self.ring.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.ring
                .retain(|(key, stamp)| map.get(key).is_some_and(|slot| slot.stamp == *stamp));
        }
    }
}

/// Parent records by tree key, within `budget_bytes`.
pub struct RecordCache {
    shards: Box<[Mutex<Shard>]>,
    shard_budget: u64,
}

fn shard_index(key: &[u8]) -> usize {
    use std::hash::BuildHasher;
    let hash = rustc_hash::FxBuildHasher.hash_one(key);
    (hash >> 40) as usize % SHARDS
}

impl RecordCache {
    /// A tier of `budget_bytes` in all (0: off, every lookup a miss and nothing kept).
    pub fn new(budget_bytes: u64) -> Self {
        RecordCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            shard_budget: budget_bytes / SHARDS as u64,
        }
    }

    pub fn budget_bytes(&self) -> u64 {
        self.shard_budget * SHARDS as u64
    }

    fn shard(&self, key: &[u8]) -> &Mutex<Shard> {
        &self.shards[shard_index(key)]
    }

    /// The record under `key` as read at a generation no newer than `generation`.
    pub fn get(&self, key: &[u8], generation: u64) -> Option<Bytes> {
        if self.shard_budget == 0 {
            return None;
        }
        let mut guard = self.shard(key).lock();
        let shard = &mut *guard;
        let found = shard
            .map
            .get_mut(key)
            .filter(|slot| slot.generation <= generation)
            .map(|slot| {
                slot.visited = true;
                slot.value.clone()
            });
        let counts = shard.counts(key);
        counts.requests += 1;
        counts.hits += found.is_some() as u64;
        found
    }

    /// Keeps a copy of `value` as the record under `key` read at `generation`, if
    /// `still_current()` holds under the shard's lock (which [`RecordCache::remove`] takes
    /// too). A key already kept stays as it is: it was read at this generation or a newer
    /// one. The copy is the tier's own: a record read from a page is a slice of the page's
    /// buffer, which a kept slice would hold in memory whole after the page left the cache.
    pub fn insert(
        &self,
        key: Bytes,
        value: &[u8],
        generation: u64,
        still_current: impl FnOnce() -> bool,
    ) {
        let weight = key.len() as u64 + value.len() as u64 + ENTRY_OVERHEAD;
        if weight > self.shard_budget {
            return;
        }
        let mut guard = self.shard(&key).lock();
        let shard = &mut *guard;
        if shard.map.contains_key(&key) || !still_current() {
            return;
        }
        shard.make_room(weight, self.shard_budget);
        let stamp = shard.next_stamp;
        shard.next_stamp += 1;
        shard.ring.push_back((key.clone(), stamp));
        shard.counts(&key).resident_bytes += weight;
        shard.map.insert(
            key,
            Slot {
                value: Bytes::copy_from_slice(value),
                generation,
                weight,
                visited: false,
                stamp,
            },
        );
        shard.bytes += weight;
        shard.compact_ring();
    }

    /// Forgets the record under `key` (a commit is changing it).
    pub fn remove(&self, key: &[u8]) {
        if self.shard_budget == 0 {
            return;
        }
        let mut shard = self.shard(key).lock();
        if shard.remove(key) {
            shard.compact_ring();
        }
    }

    /// Every counter by collection id, summed over the shards.
    pub fn counts_by_collection(&self) -> std::collections::BTreeMap<u32, RecordCounts> {
        let mut all = std::collections::BTreeMap::new();
        for shard in self.shards.iter() {
            for (collection, counts) in &shard.lock().counts {
                all.entry(*collection)
                    .or_insert_with(RecordCounts::default)
                    .add(counts);
            }
        }
        all
    }

    /// Every counter, summed over the shards and collections.
    pub fn counts(&self) -> RecordCounts {
        let mut total = RecordCounts::default();
        for counts in self.counts_by_collection().values() {
            total.add(counts);
        }
        total
    }

    /// Zeroes the counters (resident bytes stay).
    pub fn reset_counts(&self) {
        for shard in self.shards.iter() {
            for counts in shard.lock().counts.values_mut() {
                *counts = RecordCounts {
                    resident_bytes: counts.resident_bytes,
                    ..RecordCounts::default()
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Bytes {
        Bytes::from(format!("key-{i:04}"))
    }

    fn value(len: usize) -> Bytes {
        Bytes::from(vec![7u8; len])
    }

    #[test]
    fn a_record_is_found_at_its_generation_and_newer_only() {
        let cache = RecordCache::new(1 << 20);
        cache.insert(key(1), &value(10), 4, || true);
        assert_eq!(cache.get(&key(1), 4), Some(value(10)));
        assert_eq!(cache.get(&key(1), 6), Some(value(10)));
        assert_eq!(
            cache.get(&key(1), 2),
            None,
            "an older reader must not see it"
        );
        assert_eq!(cache.get(&key(2), 6), None);
        let counts = cache.counts();
        assert_eq!((counts.requests, counts.hits), (4, 2));
    }

    #[test]
    fn nothing_is_kept_unless_still_current_under_the_lock() {
        let cache = RecordCache::new(1 << 20);
        cache.insert(key(1), &value(10), 0, || false);
        assert_eq!(cache.get(&key(1), 0), None);
        assert_eq!(cache.counts().resident_bytes, 0);
    }

    #[test]
    fn a_removed_record_is_gone_and_its_bytes_given_back() {
        let cache = RecordCache::new(1 << 20);
        cache.insert(key(1), &value(100), 0, || true);
        assert!(cache.counts().resident_bytes > 100);
        cache.remove(&key(1));
        assert_eq!(cache.get(&key(1), 0), None);
        let counts = cache.counts();
        assert_eq!((counts.resident_bytes, counts.invalidations), (0, 1));
        // Kept again after its removal, it is found, and the ring's old place of it is
        // skipped when the hand passes.
        cache.insert(key(1), &value(50), 2, || true);
        assert_eq!(cache.get(&key(1), 2), Some(value(50)));
    }

    #[test]
    fn the_tier_stays_in_budget_and_keeps_records_read_again() {
        // One shard's worth of keys: find keys of one shard to test its ring alone.
        let budget = 16 * 4096;
        let cache = RecordCache::new(budget);
        let same_shard: Vec<Bytes> = (0..10_000)
            .map(key)
            .filter(|k| shard_index(k) == shard_index(&key(0)))
            .take(40)
            .collect();
        // 200 + 8 + 192 bytes each: 10 fit in a shard's 4,096.
        let hot = same_shard[0].clone();
        cache.insert(hot.clone(), &value(200), 0, || true);
        for k in &same_shard[1..] {
            assert!(cache.get(&hot, 0).is_some(), "a record read again stays");
            cache.insert(k.clone(), &value(200), 0, || true);
            assert!(cache.counts().resident_bytes <= budget / 16);
        }
        let counts = cache.counts();
        assert!(counts.evictions >= 39 - 9, "{counts:?}");
        // Too large for a shard: not kept at all.
        cache.insert(key(99_999), &value(5000), 0, || true);
        assert_eq!(cache.get(&key(99_999), 0), None);
    }

    #[test]
    fn a_tier_of_no_bytes_keeps_nothing() {
        let cache = RecordCache::new(0);
        cache.insert(key(1), &value(1), 0, || true);
        assert_eq!(cache.get(&key(1), 0), None);
        assert_eq!(cache.counts(), RecordCounts::default());
    }
}
