//! The record tier: parent records as point reads last found them, by collection and key,
//! in a share of the cache's byte budget. A hit skips the tree walk and the page
//! lookups of a point read (the whole of its cost when its pages are cached).
//!
//! Unlike pages and chunks, a record's key does not name immutable bytes: a commit can
//! change the record under it. Each entry carries the generation of the version it was read
//! at; the store bumps the generation when a commit changes records, removes the records it
//! changes before publishing, and lets a reader insert only what it read at the newest
//! generation while no commit is between those two steps (see `Shared::find_record`).
//! A reader uses an entry only when its version is at least as new as the entry's.
//!
//! Sixteen shards, each with its own lock and a CLOCK hand over its entries, under one byte
//! budget: a hit sets the entry's bit; the hand clears bits and evicts the first entry
//! without one. A record read once is evicted before any record read again (scans do not
//! insert). Room for a new entry is made in its own shard first, and taken from the other
//! shards in turn when that one has too little: an entry may be up to half the budget (a
//! large parent read often, such as an `Embed` one with thousands of items).
//!
//! A record comes in on its second miss only when it is over a shard's even share, or when
//! the tier is full: each shard remembers the hashes of its latest misses that were turned
//! away (a quarter as many as it holds entries, at least 16), and a record whose hash is
//! among them is kept. One large record read once does not push out records read again and
//! again, and a record read once in a while takes no other record's room, its read paying
//! no copy and no eviction (under Zipf-like reads of 100,000 products with room for 40,000,
//! simulated: hits 0.889 -> 0.900, records kept per read 0.111 -> 0.020).
//!
//! A record is named by its collection and the parent's key; an entry is one buffer, the key
//! then the record, held by a slot in the shard's hash table itself (a lookup reads the
//! table's control bytes, then the slot: no index to follow between them), and the CLOCK
//! hand walks the table's buckets. A hit hands out the buffer itself: the reader's record
//! and its document's key are slices of it, so neither a lookup nor a hit allocates.
//!
//! An entry may also carry what a reader built from its record (the store keeps the
//! `Document` of a full `get` there, so that a hit does not decode the record again),
//! weighed with it and gone with it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use hashbrown::HashTable;
use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};

use super::stats::TierStats;
use crate::limits::widths::u8_len;

pub(super) const SHARDS: usize = 16;

/// Memory an entry costs beyond its key and record bytes: its slot (the buffer's handle,
/// hash, generation, lengths, bit, a short key) in the table's buckets, with the share of
/// empty buckets a table keeps (at least one in eight, up to half after it doubles), the
/// buffer's shared header (made on the first hit) and the allocator's headers of both.
pub(crate) const ENTRY_OVERHEAD: u64 = 224;

/// The bytes of an entry's slot for documents `D`, which [`ENTRY_OVERHEAD`] must cover.
#[cfg(test)]
pub(crate) fn slot_bytes<D>() -> usize {
    std::mem::size_of::<Option<Slot<D>>>()
}

/// What an entry of `bytes` of key and record weighs.
pub fn entry_weight(bytes: usize) -> u64 {
    bytes as u64 + ENTRY_OVERHEAD
}

/// What the record tier counted: a tier's counts (no bytes read: a miss reads the tree,
/// which the page cache counts), and the records commits took away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordCounts {
    pub tier: TierStats,
    /// Records removed because a commit changed them.
    pub invalidations: u64,
}

/// A record the tier holds: the parent's key and the record's bytes in one buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptRecord {
    buffer: Bytes,
    key_len: usize,
}

impl KeptRecord {
    fn new(key: &[u8], value: &[u8]) -> Self {
        let mut buffer = Vec::with_capacity(key.len() + value.len());
        buffer.extend_from_slice(key);
        buffer.extend_from_slice(value);
        KeptRecord {
            buffer: Bytes::from(buffer),
            key_len: key.len(),
        }
    }

    /// The parent's key.
    pub fn key(&self) -> Bytes {
        self.buffer.slice(..self.key_len)
    }

    /// The record.
    pub fn value(&self) -> Bytes {
        self.buffer.slice(self.key_len..)
    }

    fn weight(&self) -> u64 {
        entry_weight(self.buffer.len())
    }
}

/// Keys up to this long are kept in the slot too, so that a lookup compares them there
/// instead of in the record's buffer (a second memory access per probe).
const SHORT_KEY: usize = 23;

/// A key of up to [`SHORT_KEY`] bytes, or the mark that the key is longer.
#[derive(Clone, Copy)]
struct ShortKey {
    /// The key's length, or `u8::MAX` when it is longer than [`SHORT_KEY`].
    len: u8,
    bytes: [u8; SHORT_KEY],
}

impl ShortKey {
    fn new(key: &[u8]) -> ShortKey {
        let mut bytes = [0; SHORT_KEY];
        match key.len() <= SHORT_KEY {
            true => {
                bytes[..key.len()].copy_from_slice(key);
                ShortKey {
                    len: u8_len(key.len()),
                    bytes,
                }
            }
            false => ShortKey {
                len: u8::MAX,
                bytes,
            },
        }
    }

    /// Whether `key` is this key; `None` when only the full key can tell (both are long).
    #[inline(always)]
    fn matches(&self, key: &[u8]) -> Option<bool> {
        match self.len {
            u8::MAX if key.len() > SHORT_KEY => None,
            u8::MAX => Some(false),
            len => Some(key.len() == len as usize && self.bytes[..len as usize] == *key),
        }
    }
}

struct Slot<D> {
    collection: u32,
    short_key: ShortKey,
    record: KeptRecord,
    /// What a reader built from `record`, and the memory it takes beyond the record.
    decoded: Option<(D, u64)>,
    hash: u64,
    generation: u64,
    /// The id of the leaf the record was read from ([`NO_LEAF`] if unknown), for the
    /// what-if estimate: a hit stands for the walk to that leaf it saved.
    leaf: u64,
    visited: bool,
}

impl<D> Slot<D> {
    fn seen(&self) -> Seen {
        Seen {
            weight: self.weight(),
            leaf: self.leaf,
        }
    }

    fn weight(&self) -> u64 {
        self.record.weight() + self.decoded.as_ref().map_or(0, |(_, weight)| *weight)
    }
}

/// The leaf of a record whose leaf nobody noted (the what-if estimate is off).
pub const NO_LEAF: u64 = u64::MAX;

/// What a hit tells the what-if estimate of the entry it found.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    /// The entry's weight, with what readers built from it.
    pub weight: u64,
    /// The leaf the record was read from, or [`NO_LEAF`].
    pub leaf: u64,
}

struct Shard<D> {
    /// The entries, by the hash of their record's name.
    table: HashTable<Slot<D>>,
    /// The bucket the CLOCK hand points at.
    hand: usize,
    /// Hashes of the latest records turned away while the tier was full.
    door: Door,
    bytes: u64,
    /// By collection id.
    counts: FxHashMap<u32, RecordCounts>,
}

impl RecordCounts {
    fn add(&mut self, other: &RecordCounts) {
        self.tier.add(&other.tier);
        self.invalidations += other.invalidations;
    }
}

impl<D> Default for Shard<D> {
    fn default() -> Self {
        Shard {
            table: HashTable::new(),
            hand: 0,
            door: Door::default(),
            bytes: 0,
            counts: FxHashMap::default(),
        }
    }
}

/// The hashes of the records a shard turned away, oldest first (each once: a hash still
/// there passes, and is not queued again): a record offered again while its hash is there
/// is kept.
#[derive(Default)]
struct Door {
    queue: std::collections::VecDeque<u64>,
    seen: FxHashSet<u64>,
}

impl Door {
    /// Whether `hash` was turned away lately; if not, it is remembered, in a queue of at
    /// most `len` hashes.
    fn passes(&mut self, hash: u64, len: usize) -> bool {
        if self.seen.contains(&hash) {
            return true;
        }
        self.queue.push_back(hash);
        self.seen.insert(hash);
        while self.queue.len() > len {
            let old = self.queue.pop_front().expect("a queued hash");
            self.seen.remove(&old);
        }
        false
    }
}

/// A shard remembers one miss per this many entries it holds (see [`Door`]), and at least
/// [`DOOR_MIN`] misses.
pub(super) const DOOR_SHARE: usize = 4;
pub(super) const DOOR_MIN: usize = 16;

impl<D> Shard<D> {
    fn counts(&mut self, collection: u32) -> &mut RecordCounts {
        self.counts.entry(collection).or_default()
    }

    /// The bucket holding the record of `key` in `collection`.
    fn find(&self, hash: u64, collection: u32, key: &[u8]) -> Option<usize> {
        self.table.find_bucket_index(hash, |slot| {
            slot.collection == collection
                && slot
                    .short_key
                    .matches(key)
                    .unwrap_or_else(|| slot.record.buffer[..slot.record.key_len] == *key)
        })
    }

    /// The slot in bucket `at`, which holds one.
    fn slot_mut(&mut self, at: usize) -> &mut Slot<D> {
        self.table
            .get_bucket_mut(at)
            .expect("found buckets are full")
    }

    /// Empties bucket `at`; returns its slot's weight and the key's collection.
    fn take(&mut self, at: usize) -> (u64, u32) {
        let Ok(entry) = self.table.get_bucket_entry(at) else {
            panic!("a live slot");
        };
        let (slot, _) = entry.remove();
        let weight = slot.weight();
        self.bytes -= weight;
        (weight, slot.collection)
    }

    /// Evicts from this shard until `weight` more bytes fit the tier's budget (`resident`
    /// counts every shard's bytes), this shard is empty, or the hand has passed `steps`
    /// slots (one turn spares every entry read since the hand last passed it); returns
    /// whether they fit.
    fn make_room(
        &mut self,
        weight: u64,
        resident: &AtomicU64,
        budget: u64,
        mut steps: usize,
    ) -> bool {
        loop {
            if resident.load(Ordering::Acquire) + weight <= budget {
                return true;
            }
            if self.bytes == 0 || steps == 0 {
                return false;
            }
            steps -= 1;
            let at = self.hand % self.table.num_buckets();
            self.hand = at + 1;
            match self.table.get_bucket_mut(at) {
                None => continue,
                Some(slot) if slot.visited => slot.visited = false,
                Some(_) => {
                    let (weight, collection) = self.take(at);
                    resident.fetch_sub(weight, Ordering::AcqRel);
                    let counts = self.counts(collection);
                    counts.tier.evictions += 1;
                    counts.tier.resident_bytes -= weight;
                }
            }
        }
    }

    fn put(&mut self, hash: u64, slot: Slot<D>) {
        self.bytes += slot.weight();
        self.table.insert_unique(hash, slot, |slot| slot.hash);
    }
}

/// Parent records by collection and key, with what readers built from them (`D`), within
/// `budget_bytes` over all shards.
pub struct RecordCache<D> {
    shards: Box<[Mutex<Shard<D>>]>,
    budget: u64,
    /// Bytes of every shard's entries; never above `budget` (room is taken before an entry
    /// or a built value is added).
    resident: AtomicU64,
    /// The shard the next eviction for another shard's entry starts at.
    next_victim_shard: AtomicUsize,
    /// Hashes records' names with a seed of this tier's own: keys are the users', and keys
    /// chosen to collide under a hash anyone can compute would make a shard's table a list.
    hasher: foldhash::fast::RandomState,
}

/// The largest entry is this share of the tier's budget: a large `Embed` parent read often
/// deserves the room (decoding it again costs a millisecond for 50,000 items).
pub(super) const MAX_ENTRY_SHARE: u64 = 2;

fn shard_index(hash: u64) -> usize {
    (hash >> 40) as usize % SHARDS
}

impl<D: Clone> RecordCache<D> {
    /// A tier of `budget_bytes` in all (0: off, every lookup a miss and nothing kept).
    pub fn new(budget_bytes: u64) -> Self {
        RecordCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            budget: budget_bytes,
            resident: AtomicU64::new(0),
            next_victim_shard: AtomicUsize::new(0),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// The hash of record `key` of `collection`, under this tier's seed.
    fn hash_of(&self, collection: u32, key: &[u8]) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = self.hasher.build_hasher();
        hasher.write_u32(collection);
        hasher.write(key);
        hasher.finish()
    }

    pub fn budget_bytes(&self) -> u64 {
        self.budget
    }

    /// The bytes the tier holds now.
    pub fn resident_bytes(&self) -> u64 {
        self.resident.load(Ordering::Acquire)
    }

    /// Whether an entry of `weight` bytes may be kept at all.
    fn admits(&self, weight: u64) -> bool {
        weight <= self.budget / MAX_ENTRY_SHARE
    }

    /// Takes `weight` bytes of the budget for `shard` (locked by the caller, which gives
    /// its guard and gets one back): evicts from that shard first; if it has too little,
    /// unlocks it and evicts from the others in turn, one lock at a time, then locks it
    /// again. `None` when the room could not be had (the caller keeps nothing); with the
    /// guard, whether the shard was unlocked in between (what the caller found under it may
    /// have changed; its own evictions may also have taken what the caller found).
    fn reserve<'a>(
        &'a self,
        at: usize,
        mut shard: parking_lot::MutexGuard<'a, Shard<D>>,
        weight: u64,
    ) -> Option<(parking_lot::MutexGuard<'a, Shard<D>>, bool)> {
        let mut relocked = false;
        // Round 0 spares what was read since the hands last passed (one turn of each hand);
        // round 1 does not.
        for round in 0..2 {
            let turn = |shard: &Shard<D>| match round {
                0 => shard.table.num_buckets(),
                _ => usize::MAX,
            };
            let steps = turn(&shard);
            let own = shard.make_room(weight, &self.resident, self.budget, steps);
            if own && self.take_room(weight) {
                return Some((shard, relocked));
            }
            drop(shard);
            let start = self.next_victim_shard.fetch_add(1, Ordering::Relaxed);
            for step in 0..SHARDS {
                let other = (start + step) % SHARDS;
                if other == at {
                    continue;
                }
                let mut victim = self.shards[other].lock();
                let steps = turn(&victim);
                if victim.make_room(weight, &self.resident, self.budget, steps) {
                    break;
                }
            }
            shard = self.shards[at].lock();
            relocked = true;
        }
        None
    }

    /// Adds `weight` to the resident bytes if they stay within the budget.
    fn take_room(&self, weight: u64) -> bool {
        self.resident
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |resident| {
                (resident + weight <= self.budget).then_some(resident + weight)
            })
            .is_ok()
    }

    /// The record of `key` in `collection` as read at a generation no newer than
    /// `generation`, with what the what-if estimate is told of the hit.
    pub fn get_record(
        &self,
        collection: u32,
        key: &[u8],
        generation: u64,
    ) -> Option<(KeptRecord, Seen)> {
        self.lookup(collection, key, generation, |slot| {
            (slot.record.clone(), slot.seen())
        })
    }

    /// [`RecordCache::get_record`], with what a reader built from the record if one did.
    #[cfg(test)]
    pub fn get(
        &self,
        collection: u32,
        key: &[u8],
        generation: u64,
    ) -> Option<(KeptRecord, Option<D>)> {
        self.lookup(collection, key, generation, |slot| {
            let decoded = slot.decoded.as_ref().map(|(decoded, _)| decoded.clone());
            (slot.record.clone(), decoded)
        })
    }

    /// What a reader built from the record of `key` in `collection` (as [`RecordCache::get`]
    /// finds it) if one did, else the record: a hit that only needs the built value does
    /// not take a handle on the record's buffer too. With what the what-if estimate is told
    /// of the hit.
    pub fn get_decoded(
        &self,
        collection: u32,
        key: &[u8],
        generation: u64,
    ) -> Option<(Result<D, KeptRecord>, Seen)> {
        self.lookup(collection, key, generation, |slot| {
            let found = match &slot.decoded {
                Some((decoded, _)) => Ok(decoded.clone()),
                None => Err(slot.record.clone()),
            };
            (found, slot.seen())
        })
    }

    /// Counts a lookup of `key` in `collection` at `generation`; on a hit, marks the entry
    /// visited and returns what `take` makes of it.
    #[inline(always)]
    fn lookup<T>(
        &self,
        collection: u32,
        key: &[u8],
        generation: u64,
        take: impl FnOnce(&Slot<D>) -> T,
    ) -> Option<T> {
        if self.budget == 0 {
            return None;
        }
        let hash = self.hash_of(collection, key);
        let mut shard = self.shards[shard_index(hash)].lock();
        let found = shard.find(hash, collection, key).and_then(|at| {
            let slot = shard.slot_mut(at);
            (slot.generation <= generation).then(|| {
                slot.visited = true;
                take(slot)
            })
        });
        let counts = shard.counts(collection);
        counts.tier.requests += 1;
        match found {
            Some(_) => counts.tier.hits += 1,
            None => counts.tier.misses += 1,
        }
        found
    }

    /// Keeps a copy of `key` and `value` as the record of `key` in `collection` read at
    /// `generation` (and says whether it did), if
    /// `still_current()` holds under the shard's lock (which [`RecordCache::remove`] takes
    /// too). A key already kept stays as it is: it was read at this generation or a newer
    /// one. The copy is the tier's own: a record read from a page is a slice of the page's
    /// buffer, which a kept slice would hold in memory whole after the page left the cache.
    #[cfg(test)]
    pub fn insert(
        &self,
        collection: u32,
        key: &[u8],
        value: &[u8],
        generation: u64,
        still_current: impl Fn() -> bool,
    ) -> bool {
        self.insert_from(collection, key, value, generation, NO_LEAF, still_current)
    }

    /// [`RecordCache::insert`] of a record read from leaf `leaf` (or [`NO_LEAF`]).
    pub fn insert_from(
        &self,
        collection: u32,
        key: &[u8],
        value: &[u8],
        generation: u64,
        leaf: u64,
        still_current: impl Fn() -> bool,
    ) -> bool {
        let weight = entry_weight(key.len() + value.len());
        if !self.admits(weight) {
            return false;
        }
        let hash = self.hash_of(collection, key);
        let at = shard_index(hash);
        let mut shard = self.shards[at].lock();
        if shard.find(hash, collection, key).is_some() || !still_current() {
            return false;
        }
        // A record over a shard's even share, or one that would make a full tier evict,
        // comes in on its second miss (see [`Door`]).
        let large = weight > self.budget / SHARDS as u64;
        let full = self.resident.load(Ordering::Acquire) + weight > self.budget;
        if large || full {
            let len = (shard.table.len() / DOOR_SHARE).max(DOOR_MIN);
            if !shard.door.passes(hash, len) {
                return false;
            }
        }
        let Some((mut shard, relocked)) = self.reserve(at, shard, weight) else {
            return false;
        };
        // Unlocked in between: someone may have kept the key, or a commit begun (evicting
        // from this shard adds no key, and commits take its lock to remove theirs).
        if relocked && (shard.find(hash, collection, key).is_some() || !still_current()) {
            self.resident.fetch_sub(weight, Ordering::AcqRel);
            return false;
        }
        shard.counts(collection).tier.resident_bytes += weight;
        let slot = Slot {
            collection,
            short_key: ShortKey::new(key),
            record: KeptRecord::new(key, value),
            decoded: None,
            hash,
            generation,
            leaf,
            visited: false,
        };
        shard.put(hash, slot);
        true
    }

    /// Adds `decoded`, built from `kept` and taking `weight` bytes beyond it, to the entry of
    /// `key` in `collection` if that entry still holds `kept` (the same buffer: `kept`
    /// keeps it alive, so its address names it) and nothing built yet.
    pub fn attach(&self, collection: u32, key: &[u8], kept: &KeptRecord, decoded: D, weight: u64) {
        if !self.admits(kept.weight() + weight) {
            return;
        }
        let hash = self.hash_of(collection, key);
        let at = shard_index(hash);
        // The entry holding `kept`, with nothing built yet.
        let holds = |shard: &Shard<D>| {
            shard.find(hash, collection, key).filter(|&at| {
                let slot = shard.table.get_bucket(at).expect("found buckets are full");
                slot.decoded.is_none() && slot.record.buffer.as_ptr() == kept.buffer.as_ptr()
            })
        };
        let shard = self.shards[at].lock();
        if holds(&shard).is_none() {
            return;
        }
        // Making room may evict the entry itself (the hand passes it once first: it was
        // just read), so it is looked for again after.
        let Some((mut guard, _)) = self.reserve(at, shard, weight) else {
            return;
        };
        let shard = &mut *guard;
        let Some(slot) = holds(shard) else {
            self.resident.fetch_sub(weight, Ordering::AcqRel);
            return;
        };
        shard.slot_mut(slot).decoded = Some((decoded, weight));
        shard.bytes += weight;
        shard.counts(collection).tier.resident_bytes += weight;
    }

    /// Forgets the record of `key` in `collection` (a commit is changing it); returns the
    /// leaf it was read from when the tier held it.
    pub fn remove(&self, collection: u32, key: &[u8]) -> Option<u64> {
        if self.budget == 0 {
            return None;
        }
        let hash = self.hash_of(collection, key);
        let mut shard = self.shards[shard_index(hash)].lock();
        let at = shard.find(hash, collection, key)?;
        let leaf = shard.slot_mut(at).leaf;
        let (weight, collection) = shard.take(at);
        self.resident.fetch_sub(weight, Ordering::AcqRel);
        let counts = shard.counts(collection);
        counts.tier.resident_bytes -= weight;
        counts.invalidations += 1;
        Some(leaf)
    }

    /// Forgets every record of `collection` (a schema change is changing how they read).
    pub fn remove_collection(&self, collection: u32) {
        if self.budget == 0 {
            return;
        }
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            for at in 0..shard.table.num_buckets() {
                if shard
                    .table
                    .get_bucket(at)
                    .is_some_and(|slot| slot.collection == collection)
                {
                    let (weight, collection) = shard.take(at);
                    self.resident.fetch_sub(weight, Ordering::AcqRel);
                    let counts = shard.counts(collection);
                    counts.tier.resident_bytes -= weight;
                    counts.invalidations += 1;
                }
            }
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
    #[cfg(test)]
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
                    tier: TierStats {
                        resident_bytes: counts.tier.resident_bytes,
                        ..TierStats::default()
                    },
                    invalidations: 0,
                };
            }
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use super::*;

    type Cache = RecordCache<&'static str>;

    fn key(i: u32) -> Bytes {
        Bytes::from(format!("key-{i:04}"))
    }

    /// Whether the tier holds `key`, looked up without marking it read (as `get` does).
    fn holds(cache: &Cache, collection: u32, key: &[u8]) -> bool {
        let hash = cache.hash_of(collection, key);
        let shard = cache.shards[shard_index(hash)].lock();
        shard.find(hash, collection, key).is_some()
    }

    fn value(len: usize) -> Bytes {
        Bytes::from(vec![7u8; len])
    }

    #[test]
    fn each_tier_hashes_keys_under_its_own_seed() {
        // Keys that collide in one tier do not collide in the next one: whoever picks keys
        // cannot know the seed. Eight keys all equal in two tiers' hashes would be chance
        // of 2^-448.
        let (one, two) = (Cache::new(1 << 20), Cache::new(1 << 20));
        let differ = (0..8)
            .filter(|&i| one.hash_of(7, &key(i)) != two.hash_of(7, &key(i)))
            .count();
        assert!(differ > 0, "two tiers hashed every key alike");
        assert_eq!(one.hash_of(7, &key(1)), one.hash_of(7, &key(1)));
        assert_ne!(one.hash_of(7, &key(1)), one.hash_of(8, &key(1)));
        // Found again by the same tier whatever its seed.
        one.insert(7, &key(1), &value(10), 0, || true);
        assert!(one.get(7, &key(1), 0).is_some());
    }

    #[test]
    fn a_record_is_found_at_its_generation_and_newer_only() {
        let cache = Cache::new(1 << 20);
        cache.insert(7, &key(1), &value(10), 4, || true);
        assert_eq!(
            cache.get(7, &key(1), 4).map(|(r, _)| r.value()),
            Some(value(10))
        );
        assert_eq!(
            cache.get(7, &key(1), 6).map(|(r, _)| r.value()),
            Some(value(10))
        );
        assert_eq!(
            cache.get(7, &key(1), 2).map(|(r, _)| r.value()),
            None,
            "an older reader must not see it"
        );
        assert_eq!(cache.get(7, &key(2), 6).map(|(r, _)| r.value()), None);
        let counts = cache.counts();
        assert_eq!((counts.tier.requests, counts.tier.hits), (4, 2));
    }

    #[test]
    fn nothing_is_kept_unless_still_current_under_the_lock() {
        let cache = Cache::new(1 << 20);
        cache.insert(7, &key(1), &value(10), 0, || false);
        assert_eq!(cache.get(7, &key(1), 0).map(|(r, _)| r.value()), None);
        assert_eq!(cache.counts().tier.resident_bytes, 0);
    }

    #[test]
    fn a_removed_record_is_gone_and_its_bytes_given_back() {
        let cache = Cache::new(1 << 20);
        cache.insert(7, &key(1), &value(100), 0, || true);
        assert!(cache.counts().tier.resident_bytes > 100);
        cache.remove(7, &key(1));
        assert_eq!(cache.get(7, &key(1), 0).map(|(r, _)| r.value()), None);
        let counts = cache.counts();
        assert_eq!((counts.tier.resident_bytes, counts.invalidations), (0, 1));
        // Kept again after its removal, it is found, and the ring's old place of it is
        // skipped when the hand passes.
        cache.insert(7, &key(1), &value(50), 2, || true);
        assert_eq!(
            cache.get(7, &key(1), 2).map(|(r, _)| r.value()),
            Some(value(50))
        );
    }

    #[test]
    fn the_tier_stays_in_budget_and_keeps_records_read_again() {
        // 8 + 200 bytes and the overhead an entry: `fit` fit in 40,000 bytes, over whichever
        // shards.
        let budget = 40_000;
        let fit = (budget / entry_weight(208)) as usize;
        let cache = Cache::new(budget);
        let hot = key(0);
        cache.insert(7, &hot, &value(200), 0, || true);
        for i in 1..500 {
            assert!(cache.get(7, &hot, 0).is_some(), "a record read again stays");
            // Offered twice, as a record missed twice is: a full tier keeps it then. Looked
            // for without a read: one read once is evicted before one read again (a read of
            // each would make every entry one read again, and the hand's second pass in a
            // full tier, FIFO then, could take the hot one).
            cache.insert(7, &key(i), &value(200), 0, || true);
            cache.insert(7, &key(i), &value(200), 0, || true);
            assert!(holds(&cache, 7, &key(i)), "kept on its second offer");
            let resident = cache.counts().tier.resident_bytes;
            assert!(resident <= budget, "{resident} over {budget}");
            assert_eq!(resident, cache.resident.load(Ordering::Acquire));
        }
        let counts = cache.counts();
        assert!(counts.tier.evictions >= (499 - fit) as u64, "{counts:?}");
        assert!(counts.tier.resident_bytes > budget - 2 * entry_weight(208));
        let slots: usize = cache.shards.iter().map(|s| s.lock().table.len()).sum();
        assert!(slots <= fit, "evicted entries leave the table: {slots}");
        // Over half the budget: not kept at all, however often offered.
        for _ in 0..3 {
            cache.insert(7, &key(99_999), &value(20_000), 0, || true);
        }
        assert_eq!(cache.get(7, &key(99_999), 0).map(|(r, _)| r.value()), None);
    }

    #[test]
    fn a_full_tier_keeps_a_record_on_its_second_offer_only() {
        let budget = 40_000;
        let cache = Cache::new(budget);
        // With room, a record is kept on its first offer.
        let mut kept = 0;
        while cache.resident_bytes() + entry_weight(208) <= budget {
            assert!(cache.insert(7, &key(kept), &value(200), 0, || true));
            assert!(
                cache.get(7, &key(kept), 0).is_some(),
                "kept while there is room"
            );
            kept += 1;
        }
        let evictions = cache.counts().tier.evictions;
        // Full: a new record is turned away once, without evicting anything, then kept.
        for i in 1_000..1_040 {
            assert!(!cache.insert(7, &key(i), &value(200), 0, || true));
            assert!(
                cache.get(7, &key(i), 0).is_none(),
                "{i}: kept on its first offer"
            );
        }
        assert_eq!(cache.counts().tier.evictions, evictions);
        for i in 1_000..1_040 {
            assert!(cache.insert(7, &key(i), &value(200), 0, || true));
            assert!(
                cache.get(7, &key(i), 0).is_some(),
                "{i}: not kept on its second"
            );
        }
        assert!(cache.counts().tier.evictions > evictions);
        assert!(cache.resident_bytes() <= budget);
        // A shard remembers a quarter as many misses as it holds entries, at least 16: a
        // record turned away long ago (many misses of its shard since) is turned away again.
        let old = 5_000;
        cache.insert(7, &key(old), &value(200), 0, || true);
        let shard = shard_index(cache.hash_of(7, &key(old)));
        let mut others = (6_000..).filter(|&i| shard_index(cache.hash_of(7, &key(i))) == shard);
        for i in others.by_ref().take(50) {
            cache.insert(7, &key(i), &value(200), 0, || true);
        }
        cache.insert(7, &key(old), &value(200), 0, || true);
        assert!(
            cache.get(7, &key(old), 0).is_none(),
            "remembered past the door's length"
        );
    }

    /// An entry larger than a shard's even share takes its room from the other shards,
    /// and what is built from it can take room the same way.
    #[test]
    fn a_large_entry_takes_room_from_other_shards() {
        let budget = 64 * 1024;
        let cache = Cache::new(budget);
        for i in 0..200 {
            cache.insert(7, &key(i), &value(200), 0, || true);
        }
        let before = cache.counts().tier.resident_bytes;
        assert!(
            before > budget - 1000,
            "the small entries fill the tier: {before}"
        );
        let large = Bytes::from(format!("large-{}", 0));
        let home = shard_index(cache.hash_of(7, &large));
        let homes: usize = (0..200)
            .filter(|&i| shard_index(cache.hash_of(7, &key(i))) == home)
            .count();
        assert!(
            homes * 400 < 14_000,
            "its own shard could not make the room alone"
        );
        let evictions = cache.counts().tier.evictions;
        cache.insert(7, &large, &value(14_000), 0, || true);
        assert!(
            cache.get(7, &large, 0).is_none(),
            "kept on its second offer only"
        );
        assert_eq!(
            cache.counts().tier.evictions,
            evictions,
            "nothing made room for it"
        );
        cache.insert(7, &large, &value(14_000), 0, || true);
        let (kept, _) = cache.get(7, &large, 0).expect("the large entry is kept");
        assert_eq!(kept.value().len(), 14_000);
        cache.attach(7, &large, &kept, "built", 2_000);
        assert!(matches!(
            cache.get_decoded(7, &large, 0).map(|(found, _)| found),
            Some(Ok("built"))
        ));
        let counts = cache.counts();
        assert!(counts.tier.resident_bytes <= budget, "{counts:?}");
        assert_eq!(
            counts.tier.resident_bytes,
            cache.resident.load(Ordering::Acquire)
        );
        assert!(
            counts.tier.evictions - evictions >= (14_000 + 2_000) / entry_weight(208),
            "{counts:?}"
        );
        cache.remove(7, &large);
        let counts = cache.counts();
        assert_eq!(
            counts.tier.resident_bytes,
            cache.resident.load(Ordering::Acquire)
        );
    }

    #[test]
    fn a_hit_hands_out_slices_of_one_buffer() {
        let cache = Cache::new(1 << 20);
        cache.insert(7, b"product", b"record", 0, || true);
        let (kept, decoded) = cache.get(7, b"product", 0).expect("kept");
        assert_eq!(decoded, None);
        assert_eq!(
            (&kept.key()[..], &kept.value()[..]),
            (&b"product"[..], &b"record"[..])
        );
        assert_eq!(kept.value().as_ptr(), kept.key().as_ptr().wrapping_add(7));
        assert_eq!(cache.counts().tier.resident_bytes, 13 + ENTRY_OVERHEAD);
        // The same key in another collection is another record.
        assert_eq!(cache.get(8, b"product", 0), None);
        assert_eq!(cache.counts_by_collection()[&8].tier.requests, 1);
    }

    #[test]
    fn what_a_reader_built_stays_with_its_record_and_is_weighed() {
        let cache = Cache::new(1 << 20);
        cache.insert(7, b"k", b"first", 0, || true);
        let (first, _) = cache.get(7, b"k", 0).unwrap();
        cache.attach(7, b"k", &first, "built from first", 100);
        assert_eq!(cache.get(7, b"k", 0).unwrap().1, Some("built from first"));
        assert_eq!(cache.counts().tier.resident_bytes, 6 + ENTRY_OVERHEAD + 100);
        // Only once.
        cache.attach(7, b"k", &first, "again", 100);
        assert_eq!(cache.get(7, b"k", 0).unwrap().1, Some("built from first"));
        // Gone with its record; and not attached to a record kept since.
        cache.remove(7, b"k");
        assert_eq!(cache.counts().tier.resident_bytes, 0);
        cache.insert(7, b"k", b"second", 2, || true);
        cache.attach(7, b"k", &first, "built from first", 100);
        assert_eq!(cache.get(7, b"k", 2).unwrap().1, None);
        assert_eq!(cache.counts().tier.resident_bytes, 7 + ENTRY_OVERHEAD);
    }

    #[test]
    fn keys_short_and_long_are_told_apart() {
        let cache = Cache::new(1 << 20);
        let keys: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"a".to_vec(),
            b"a\0".to_vec(),
            vec![b'k'; SHORT_KEY],
            vec![b'k'; SHORT_KEY + 1],
            [vec![b'k'; SHORT_KEY], b"l".to_vec()].concat(),
            vec![b'k'; 200],
        ];
        for (i, key) in keys.iter().enumerate() {
            cache.insert(7, key, &value(i + 1), 0, || true);
        }
        for (i, key) in keys.iter().enumerate() {
            let found = cache.get(7, key, 0).map(|(r, _)| (r.key(), r.value()));
            assert_eq!(
                found,
                Some((Bytes::from(key.clone()), value(i + 1))),
                "{key:?}"
            );
            assert_eq!(cache.get(8, key, 0).map(|(r, _)| r.value()), None);
        }
        assert_eq!(
            cache
                .get(7, &[b'k'; SHORT_KEY - 1], 0)
                .map(|(r, _)| r.value()),
            None
        );
        assert_eq!(cache.get(7, &[b'k'; 199], 0).map(|(r, _)| r.value()), None);
    }

    #[test]
    fn a_decoded_hit_takes_what_was_built_or_else_the_record() {
        let cache = Cache::new(1 << 20);
        assert!(
            cache
                .get_decoded(7, b"k", 0)
                .map(|(found, _)| found)
                .is_none()
        );
        cache.insert(7, b"k", b"first", 3, || true);
        let kept = match cache.get_decoded(7, b"k", 3).map(|(found, _)| found) {
            Some(Err(kept)) => kept,
            _ => panic!("the record, nothing built yet"),
        };
        assert_eq!(kept.value(), Bytes::from_static(b"first"));
        cache.attach(7, b"k", &kept, "built", 10);
        assert!(matches!(
            cache.get_decoded(7, b"k", 5).map(|(found, _)| found),
            Some(Ok("built"))
        ));
        assert!(
            cache
                .get_decoded(7, b"k", 2)
                .map(|(found, _)| found)
                .is_none(),
            "an older reader"
        );
        let counts = cache.counts();
        assert_eq!((counts.tier.requests, counts.tier.hits), (4, 2));
    }

    #[test]
    fn a_tier_of_no_bytes_keeps_nothing() {
        let cache = Cache::new(0);
        cache.insert(7, &key(1), &value(1), 0, || true);
        assert_eq!(cache.get(7, &key(1), 0).map(|(r, _)| r.value()), None);
        assert_eq!(cache.counts(), RecordCounts::default());
    }
}
