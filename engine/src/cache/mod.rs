//! The page cache: one byte budget over decoded hot pages (and, later, cold chunks).
//! Every page read goes through [`PageCache::get_or_load`]. Objects are keyed by their
//! location in the log, which never changes once written, so nothing is ever invalidated.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use crate::Result;
use crate::item::Stored;
use crate::page::node::Node;

/// What a cached object is, for statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    HotPage,
    ColdChunk,
}

/// A cached object's identity: where its bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheKey {
    /// A page image frame in the hot log.
    Page { segment_id: u32, offset: u64 },
    /// A large record in the hot log.
    Large { segment_id: u32, offset: u64 },
    /// A chunk in a cold segment.
    Chunk { segment_id: u32, offset: u64 },
}

/// A cached object.
#[derive(Clone, Debug)]
pub enum CacheValue {
    Node(Arc<Node>),
    Bytes(Bytes),
    Items(Arc<Vec<Stored>>),
}

/// Counters of one tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierStats {
    pub requests: u64,
    pub hits: u64,
    pub misses: u64,
    pub bytes_read: u64,
    pub evictions: u64,
    pub resident_bytes: u64,
}

impl TierStats {
    /// hits / requests, or 0 with no requests.
    pub fn hit_ratio(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.hits as f64 / self.requests as f64
        }
    }
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    bytes_read: AtomicU64,
    evictions: AtomicU64,
}

struct Entry {
    value: CacheValue,
    weight: usize,
    tier: Tier,
    referenced: bool,
}

/// CLOCK: entries live in the map (one probe per lookup); the ring orders them for the hand.
#[derive(Default)]
struct Clock {
    entries: FxHashMap<CacheKey, Entry>,
    ring: VecDeque<CacheKey>,
    resident: [usize; 2],
}

fn tier_index(tier: Tier) -> usize {
    match tier {
        Tier::HotPage => 0,
        Tier::ColdChunk => 1,
    }
}

/// A CLOCK cache with a byte budget. Resident bytes never exceed the budget.
pub struct PageCache {
    budget_bytes: usize,
    clock: Mutex<Clock>,
    counters: [Counters; 2],
}

impl PageCache {
    pub fn new(budget_bytes: usize) -> Self {
        PageCache {
            budget_bytes,
            clock: Mutex::new(Clock::default()),
            counters: Default::default(),
        }
    }

    pub fn budget_bytes(&self) -> usize {
        self.budget_bytes
    }

    /// The cached object for `key`, or `load`'s, which returns the object, its weight in
    /// bytes and the bytes it read from storage.
    pub fn get_or_load(
        &self,
        key: CacheKey,
        tier: Tier,
        load: impl FnOnce() -> Result<(CacheValue, usize, u64)>,
    ) -> Result<CacheValue> {
        let counters = &self.counters[tier_index(tier)];
        counters.requests.fetch_add(1, Ordering::Relaxed);
        if let Some(value) = self.lookup(&key) {
            counters.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(value);
        }
        counters.misses.fetch_add(1, Ordering::Relaxed);
        let (value, weight, bytes_read) = load()?;
        counters.bytes_read.fetch_add(bytes_read, Ordering::Relaxed);
        self.insert(key, tier, value.clone(), weight);
        Ok(value)
    }

    fn lookup(&self, key: &CacheKey) -> Option<CacheValue> {
        let mut clock = self.clock.lock();
        let entry = clock.entries.get_mut(key)?;
        entry.referenced = true;
        Some(entry.value.clone())
    }

    /// Adds an object (a page a checkpoint just wrote, say) without counting a request.
    pub fn insert(&self, key: CacheKey, tier: Tier, value: CacheValue, weight: usize) {
        if weight > self.budget_bytes {
            return;
        }
        let mut clock = self.clock.lock();
        if clock.entries.contains_key(&key) {
            return;
        }
        while clock.resident.iter().sum::<usize>() + weight > self.budget_bytes {
            let Some(evicted_tier) = Self::evict_one(&mut clock) else {
                return;
            };
            self.counters[tier_index(evicted_tier)]
                .evictions
                .fetch_add(1, Ordering::Relaxed);
        }
        let entry = Entry {
            value,
            weight,
            tier,
            referenced: false,
        };
        clock.entries.insert(key, entry);
        clock.ring.push_back(key);
        clock.resident[tier_index(tier)] += weight;
        debug_assert!(clock.resident.iter().sum::<usize>() <= self.budget_bytes);
    }

    /// Moves the hand: a referenced entry gets a second chance, the first one that is not
    /// is evicted.
    fn evict_one(clock: &mut Clock) -> Option<Tier> {
        while let Some(key) = clock.ring.pop_front() {
            let Some(entry) = clock.entries.get_mut(&key) else {
                continue;
            };
            if entry.referenced {
                entry.referenced = false;
                clock.ring.push_back(key);
                continue;
            }
            let entry = clock.entries.remove(&key)?;
            clock.resident[tier_index(entry.tier)] -= entry.weight;
            return Some(entry.tier);
        }
        None
    }

    pub fn stats(&self, tier: Tier) -> TierStats {
        let counters = &self.counters[tier_index(tier)];
        TierStats {
            requests: counters.requests.load(Ordering::Relaxed),
            hits: counters.hits.load(Ordering::Relaxed),
            misses: counters.misses.load(Ordering::Relaxed),
            bytes_read: counters.bytes_read.load(Ordering::Relaxed),
            evictions: counters.evictions.load(Ordering::Relaxed),
            resident_bytes: self.clock.lock().resident[tier_index(tier)] as u64,
        }
    }

    /// Zeroes the counters (resident bytes stay what they are).
    pub fn reset_stats(&self) {
        for counters in &self.counters {
            for counter in [
                &counters.requests,
                &counters.hits,
                &counters.misses,
                &counters.bytes_read,
                &counters.evictions,
            ] {
                counter.store(0, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(offset: u64) -> CacheKey {
        CacheKey::Page {
            segment_id: 1,
            offset,
        }
    }

    fn load(weight: usize) -> Result<(CacheValue, usize, u64)> {
        Ok((CacheValue::Bytes(Bytes::new()), weight, weight as u64))
    }

    #[test]
    fn never_above_budget_and_counts() {
        let cache = PageCache::new(1000);
        for i in 0..100 {
            cache
                .get_or_load(key(i), Tier::HotPage, || load(300))
                .unwrap();
            assert!(cache.stats(Tier::HotPage).resident_bytes <= 1000);
        }
        cache
            .get_or_load(key(99), Tier::HotPage, || load(300))
            .unwrap();
        let stats = cache.stats(Tier::HotPage);
        assert_eq!((stats.requests, stats.hits, stats.misses), (101, 1, 100));
        assert_eq!(stats.bytes_read, 30_000);
        assert_eq!(stats.evictions, 97);
        assert_eq!(stats.resident_bytes, 900);
    }

    #[test]
    fn object_larger_than_budget_is_not_kept() {
        let cache = PageCache::new(100);
        cache
            .get_or_load(key(1), Tier::HotPage, || load(101))
            .unwrap();
        assert_eq!(cache.stats(Tier::HotPage).resident_bytes, 0);
    }
}
