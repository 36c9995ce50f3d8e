//! The page cache: one byte budget over decoded hot pages, large records and decompressed
//! cold chunks, and a share of it for parent records ([`records`]). Every page or chunk
//! read goes through [`PageCache::get_or_load`]. Pages and chunks are keyed by their
//! location in a file, which never changes once written, so none is ever invalidated; the
//! record tier's entries are, by the commits that change them.
//!
//! Values live in 16 shards, each a hash map behind its own lock, so hits from many threads
//! meet only when they hash to one shard. The eviction policy lives behind a second lock that
//! hits do not take: under S3-FIFO and SIEVE a hit is counted beside its value and the policy
//! collects the count when it considers that object for eviction; under LRU, whose order
//! depends on every hit, hits are numbered, buffered per shard and handed over in batches, all
//! of them, in request order, before any insertion. The what-if sample travels the same buffers, numbered, and is put back
//! in request order before the miniature caches see it. Statistics are kept per
//! shard under the shard lock, per tier and per collection, and summed when asked for.

mod admission;
pub mod point_read;
pub mod policy;
pub mod records;
mod stats;
mod trace;
mod what_if;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::catalog::CollectionId;
use crate::error::Result;
pub use admission::Admission;
use admission::Lately;
pub use policy::{CachePolicy, EvictionRule, Marks, Policy};
// What only `skewdb::policy` shows (the trace simulators').
#[cfg(feature = "policy")]
pub use policy::{InnerPages, Miniature, NoMarks, Rule};
use records::RecordCache;
pub use stats::{CacheStats, CollectionCacheStats, TierStats, WhatIf};
pub use trace::DROP_CLASS;
use trace::TraceWriter;
use what_if::{Estimator, Offer, Sample, SampleEvent, Scaled, large_bytes, mix};
pub use what_if::{WHAT_IF_SAMPLED_OBJECTS, Walked};

/// What a cached object is, for statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// B+tree pages and large records from the hot log.
    HotPage,
    /// Decompressed chunks from cold segments.
    ColdChunk,
}

impl Tier {
    fn index(self) -> usize {
        match self {
            Tier::HotPage => 0,
            Tier::ColdChunk => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tier::HotPage => "hot",
            Tier::ColdChunk => "cold",
        }
    }
}

/// A cached object's identity: where its bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheKey {
    /// A page image frame in the hot log.
    Page { segment_id: u32, offset: u64 },
    /// A large record in the hot log.
    Large { segment_id: u32, offset: u64 },
    /// A chunk in a cold segment.
    Chunk { segment_id: u32, offset: u64 },
}

impl CacheKey {
    /// The object's number in an access trace: kind in the top 2 bits (0 page, 1 large
    /// record, 2 chunk), then 22 bits of the segment id (its top bit, which marks a page
    /// file, and its low 21 bits), then the offset's low 40 bits.
    pub fn object_id(&self) -> u64 {
        let (kind, segment_id, offset) = match *self {
            CacheKey::Page { segment_id, offset } => (0, segment_id, offset),
            CacheKey::Large { segment_id, offset } => (1, segment_id, offset),
            CacheKey::Chunk { segment_id, offset } => (2, segment_id, offset),
        };
        let segment = u64::from(segment_id >> 31) << 21 | u64::from(segment_id) & 0x1f_ffff;
        (kind << 62) | (segment << 40) | (offset & ((1 << 40) - 1))
    }
}

/// Hashed as its object id, so that a policy's hashing of keys (W-TinyLFU's sketch) sees a
/// live key as the simulator sees the same object's id in a trace, and both decide alike.
impl std::hash::Hash for CacheKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.object_id().hash(state);
    }
}

/// What the cache holds: any value that can say whether it is a B+tree inner page (the
/// policy keeps those apart, ahead of everything else). The cache knows nothing more of it.
pub trait CacheValue: Clone + Send + Sync + 'static {
    /// Whether the value is a B+tree inner page.
    fn is_inner_page(&self) -> bool;
}

/// An object read through [`PageCache::get_or_read`] that the cache has not kept:
/// [`PageCache::admit`] keeps it. Boxed: a hit, which has none, hands back a null word
/// through every level of a descent, not the object's description.
pub struct Unkept<V>(Box<UnkeptObject<V>>);

struct UnkeptObject<V> {
    key: CacheKey,
    tier: Tier,
    value: V,
    weight: u64,
    owner: OwnerIndex,
}

/// What a loader hands the cache on a miss.
pub struct Loaded<V> {
    pub value: V,
    /// The memory the object takes while cached, which the budget counts.
    pub weight_bytes: usize,
    /// The bytes the load read from storage.
    pub read_bytes: u64,
}

/// How the cache is set up.
#[derive(Clone, Debug)]
pub struct CacheConfig {
    /// Pages, chunks and records together.
    pub budget_bytes: u64,
    /// The share of `budget_bytes` for parent records (0: no record tier).
    pub record_bytes: u64,
    pub policy: CachePolicy,
    pub what_if: bool,
    /// Distinct objects the what-if sample keeps.
    pub what_if_objects: usize,
    pub trace: Option<std::path::PathBuf>,
}

const SHARDS: usize = 16;
/// Hits buffered in a shard before they are handed to the policy.
const EVENT_BATCH: usize = 64;

/// Whom a cache request counts for in the per-collection statistics: a collection, or no
/// collection (maintenance, recovery, a checkpoint). Every request carries one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Owner(OwnerIndex);

impl Owner {
    /// No collection: what maintenance reads.
    pub const NONE: Owner = Owner(0);

    /// The collection `id`.
    pub fn collection(id: CollectionId) -> Owner {
        Owner(id as usize + 1)
    }
}

/// Per-collection counters live in vectors indexed by collection id + 1; 0 is no collection.
type OwnerIndex = usize;

#[derive(Clone, Copy, Default)]
struct RequestCounts {
    requests: u64,
    hits: u64,
    misses: u64,
    bytes_read: u64,
}

#[derive(Clone, Copy, Default)]
struct ResidentCounts {
    evictions: u64,
    resident_bytes: u64,
}

/// Counters per owner and tier: the first few owners (no collection and the first
/// collections) inline, so the hit path does not follow a pointer to count.
struct OwnerCounts<T> {
    inline: [[T; 2]; INLINE_OWNERS],
    rest: Vec<[T; 2]>,
}

const INLINE_OWNERS: usize = 4;

impl<T: Default + Copy> Default for OwnerCounts<T> {
    fn default() -> Self {
        OwnerCounts {
            inline: [[T::default(); 2]; INLINE_OWNERS],
            rest: Vec::new(),
        }
    }
}

impl<T: Default + Copy> OwnerCounts<T> {
    #[inline(always)]
    fn slot(&mut self, owner: OwnerIndex, tier: Tier) -> &mut T {
        match self.inline.get_mut(owner) {
            Some(counts) => &mut counts[tier.index()],
            None => slot(&mut self.rest, owner - INLINE_OWNERS, tier),
        }
    }

    fn iter(&self) -> impl Iterator<Item = (OwnerIndex, &[T; 2])> {
        self.inline.iter().chain(&self.rest).enumerate()
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.inline.iter_mut().chain(&mut self.rest).flatten()
    }
}

fn slot<T: Default>(vec: &mut Vec<[T; 2]>, owner: OwnerIndex, tier: Tier) -> &mut T {
    if vec.len() <= owner {
        vec.resize_with(owner + 1, Default::default);
    }
    &mut vec[owner][tier.index()]
}

struct Entry<V> {
    value: V,
    weight: u64,
    tier: Tier,
    owner: OwnerIndex,
    /// Hits since the policy last looked (S3-FIFO and SIEVE; see [`policy::Marks`]).
    hits: u32,
}

/// A shard's objects, found by the same mixed hash that picked the shard, so a request
/// hashes its key once.
struct Entries<V>(hashbrown::HashTable<(CacheKey, Entry<V>)>);

impl<V> Default for Entries<V> {
    fn default() -> Self {
        Entries(hashbrown::HashTable::new())
    }
}

impl<V> Entries<V> {
    #[inline(always)]
    fn get_mut(&mut self, hash: u64, key: &CacheKey) -> Option<&mut Entry<V>> {
        self.0
            .find_mut(hash, |(k, _)| k == key)
            .map(|(_, entry)| entry)
    }

    fn insert(&mut self, hash: u64, key: CacheKey, entry: Entry<V>) {
        self.0
            .insert_unique(hash, (key, entry), |(k, _)| key_hash(k));
    }

    fn remove(&mut self, hash: u64, key: &CacheKey) -> Option<Entry<V>> {
        match self.0.find_entry(hash, |(k, _)| k == key) {
            Ok(occupied) => Some(occupied.remove().0.1),
            Err(_) => None,
        }
    }
}

/// What a shard holds for the policy and the estimate until a batch is full.
#[derive(Default)]
struct Pending {
    /// Hits LRU must see in order, numbered across shards.
    hits: Vec<(u64, CacheKey)>,
    /// Events in the what-if sample, with their order and object id.
    samples: Vec<(u64, u64, SampleEvent)>,
}

impl Pending {
    fn is_full(&self) -> bool {
        self.hits.len() + self.samples.len() >= EVENT_BATCH
    }
}

struct Shard<V> {
    entries: Entries<V>,
    counts: OwnerCounts<RequestCounts>,
    pending: Pending,
}

impl<V> Default for Shard<V> {
    fn default() -> Self {
        Shard {
            entries: Entries::default(),
            counts: OwnerCounts::default(),
            pending: Pending::default(),
        }
    }
}

/// The policy's side: which keys are resident, how many bytes, and who owns them.
struct Core {
    policy: Policy<CacheKey>,
    resident_bytes: u64,
    counts: OwnerCounts<ResidentCounts>,
}

/// A sharded cache with a byte budget. Resident bytes (pages, chunks and the record tier's
/// records) never exceed the budget once a call returns.
pub struct PageCache<V, D> {
    config: CacheConfig,
    /// What pages and chunks may always hold: the budget less the records' share. They may
    /// hold more while the record tier holds less than its share (`page_limit`).
    page_budget: u64,
    /// Parent records, in their share of the budget; read them through `records`, keep
    /// them through `keep_record` and `keep_document`, which make room among the pages.
    records: RecordCache<D>,
    shards: Box<[Mutex<Shard<V>>]>,
    core: Mutex<Core>,
    estimator: Option<Estimator>,
    trace: Option<Mutex<TraceWriter>>,
    /// Orders LRU's hits across shards.
    next_hit: AtomicU64,
    /// The latest objects read and not kept (see [`Admission::IfReadLately`]).
    lately: Mutex<Lately>,
}

/// The hash of a key that picks its shard, finds it in the shard and decides the sample.
fn key_hash(key: &CacheKey) -> u64 {
    mix(key.object_id())
}

impl<V: CacheValue, D: Clone> PageCache<V, D> {
    /// A cache with the default policy, no estimate and no trace.
    #[cfg(test)]
    pub fn new(budget_bytes: usize) -> Self {
        Self::with_config(CacheConfig {
            budget_bytes: budget_bytes as u64,
            record_bytes: 0,
            policy: CachePolicy::default(),
            what_if: false,
            what_if_objects: WHAT_IF_SAMPLED_OBJECTS,
            trace: None,
        })
        .expect("no trace file to open")
    }

    /// Fails only when the trace file cannot be created.
    pub fn with_config(config: CacheConfig) -> Result<Self> {
        let record_bytes = config.record_bytes.min(config.budget_bytes);
        let page_budget = config.budget_bytes - record_bytes;
        let estimator = config.what_if.then(|| Estimator {
            threshold: AtomicU64::new(u64::MAX),
            large_bytes: large_bytes(page_budget),
            next_seq: AtomicU64::new(0),
            walk_requests: AtomicU64::new(0),
            walk_inner_requests: AtomicU64::new(0),
            leaf_weight: AtomicU64::new(0),
            sample: Mutex::new(Sample::new(
                config.policy,
                page_budget,
                record_bytes,
                config.what_if_objects,
            )),
        });
        let trace = match &config.trace {
            Some(path) => Some(Mutex::new(TraceWriter::create(Path::new(path))?)),
            None => None,
        };
        Ok(PageCache {
            core: Mutex::new(Core {
                policy: Policy::new(config.policy, page_budget),
                resident_bytes: 0,
                counts: OwnerCounts::default(),
            }),
            config,
            page_budget,
            records: RecordCache::new(record_bytes),
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            estimator,
            trace,
            next_hit: AtomicU64::new(0),
            lately: Mutex::default(),
        })
    }

    /// What a request of `key` (`weight` bytes, an inner page if `inner`) gives the what-if
    /// sample, if anything: its place among sampled requests and the event.
    #[inline(always)]
    fn offered(
        &self,
        offer: Offer,
        key: &CacheKey,
        weight: u64,
        inner: bool,
    ) -> Option<(u64, SampleEvent)> {
        match offer {
            Offer::Sample(sample) => self
                .or_large(sample, weight)
                .map(|seq| (seq, SampleEvent::Request { weight, inner })),
            Offer::Walk(sample) => {
                what_if::note_walked(key.object_id(), weight, inner);
                sample
                    .filter(|_| inner)
                    .map(|seq| (seq, SampleEvent::WalkInner { weight }))
            }
        }
    }

    /// For a request in the what-if sample, its place in the order of sampled requests.
    fn sample_seq(&self, hash: u64) -> Option<u64> {
        let estimator = self.estimator.as_ref()?;
        (hash <= estimator.threshold.load(Ordering::Relaxed))
            .then(|| estimator.next_seq.fetch_add(1, Ordering::Relaxed))
    }

    /// `sample`, or for a request the hash left out of the sample, of an object heavy
    /// enough to be sampled anyway (known once its weight is), its place in the order of
    /// sampled requests, taken now.
    #[inline(always)]
    fn or_large(&self, sample: Option<u64>, weight: u64) -> Option<u64> {
        match (sample, &self.estimator) {
            (None, Some(estimator)) if weight >= estimator.large_bytes => {
                Some(estimator.next_seq.fetch_add(1, Ordering::Relaxed))
            }
            _ => sample,
        }
    }

    /// The cached object for `key`, or the one `load` reads.
    pub fn get_or_load(
        &self,
        key: CacheKey,
        tier: Tier,
        owner: Owner,
        load: impl FnOnce() -> Result<Loaded<V>>,
    ) -> Result<V> {
        Ok(match self.get_or_miss(key, tier, owner, load)? {
            Ok(value) => value,
            Err(object) => {
                let value = object.value.clone();
                self.keep(object);
                value
            }
        })
    }

    /// Counts the request; on a hit, notes it for the policy and returns the value.
    #[inline(always)]
    fn hit(
        &self,
        key: &CacheKey,
        hash: u64,
        owner: OwnerIndex,
        tier: Tier,
        offer: Offer,
    ) -> Option<V> {
        let mut guard = self.shard_of(hash).lock();
        let shard = &mut *guard;
        let counts = shard.counts.slot(owner, tier);
        counts.requests += 1;
        let Some(entry) = shard.entries.get_mut(hash, key) else {
            counts.misses += 1;
            return None;
        };
        counts.hits += 1;
        let (value, weight) = (entry.value.clone(), entry.weight);
        if self.config.policy.needs_every_hit() {
            let seq = self.next_hit.fetch_add(1, Ordering::Relaxed);
            shard.pending.hits.push((seq, *key));
        } else {
            entry.hits = entry.hits.saturating_add(1);
        }
        if let Some((seq, event)) = self.offered(offer, key, weight, value.is_inner_page()) {
            shard.pending.samples.push((seq, key.object_id(), event));
        }
        if shard.pending.is_full() {
            let pending = std::mem::take(&mut shard.pending);
            drop(guard);
            self.apply(pending);
        } else {
            drop(guard);
        }
        self.record(key, weight, tier, &value);
        Some(value)
    }

    /// [`PageCache::get_or_load`], except that an object `load` reads is not kept yet: it
    /// comes back beside the value, its miss counted, for the reader to hand to
    /// [`PageCache::admit`] with what it knows of it.
    pub fn get_or_read(
        &self,
        key: CacheKey,
        tier: Tier,
        owner: Owner,
        load: impl FnOnce() -> Result<Loaded<V>>,
    ) -> Result<(V, Option<Unkept<V>>)> {
        Ok(match self.get_or_miss(key, tier, owner, load)? {
            Ok(value) => (value, None),
            Err(object) => (object.value.clone(), Some(Unkept(Box::new(object)))),
        })
    }

    /// The cached object for `key`, or (`Err`) the one `load` reads, counted as a miss and
    /// not kept.
    #[inline(always)]
    fn get_or_miss(
        &self,
        key: CacheKey,
        tier: Tier,
        owner: Owner,
        load: impl FnOnce() -> Result<Loaded<V>>,
    ) -> Result<std::result::Result<V, UnkeptObject<V>>> {
        let owner = owner.0;
        let hash = key_hash(&key);
        // A point read's walk is sampled through its record lookup, not page by page.
        let sample = self.sample_seq(hash);
        let offer = match self.estimator.is_some() && what_if::walking() {
            true => Offer::Walk(sample),
            false => Offer::Sample(sample),
        };
        match self.hit(&key, hash, owner, tier, offer) {
            Some(value) => Ok(Ok(value)),
            None => self
                .read_missing(key, hash, owner, tier, offer, load)
                .map(Err),
        }
    }

    /// The miss path: loads the object, counts what it read, and notes the request for the
    /// what-if sample and the trace.
    #[inline(never)]
    fn read_missing(
        &self,
        key: CacheKey,
        hash: u64,
        owner: OwnerIndex,
        tier: Tier,
        offer: Offer,
        load: impl FnOnce() -> Result<Loaded<V>>,
    ) -> Result<UnkeptObject<V>> {
        let Loaded {
            value,
            weight_bytes,
            read_bytes: bytes_read,
        } = load()?;
        let weight = weight_bytes as u64;
        let sample = self.offered(offer, &key, weight, value.is_inner_page());
        {
            let mut shard = self.shard_of(hash).lock();
            shard.counts.slot(owner, tier).bytes_read += bytes_read;
            if let Some((seq, event)) = sample {
                shard.pending.samples.push((seq, key.object_id(), event));
            }
        }
        self.record(&key, weight, tier, &value);
        Ok(UnkeptObject {
            key,
            tier,
            value,
            weight,
            owner,
        })
    }

    /// Decides whether to keep an object [`PageCache::get_or_read`] read, from what the
    /// read says of it (`admission`) and from what it is (an inner page is always kept):
    /// keeps it, or gives it back (the caller drops it or decides again once it knows
    /// more). Every admission the cache makes is decided here.
    pub fn admit(&self, unkept: Unkept<V>, admission: Admission) -> Option<Unkept<V>> {
        let keep = match admission {
            Admission::Always => true,
            _ if unkept.0.value.is_inner_page() => true,
            Admission::InnerPagesOnly => false,
            Admission::IfReadLately => {
                self.has_room(unkept.0.weight)
                    || self
                        .lately
                        .lock()
                        .seen_or_remember(unkept.0.key.object_id())
            }
        };
        if !keep {
            return Some(unkept);
        }
        self.keep(*unkept.0);
        None
    }

    /// Keeps an object a writer made for `owner` (a chunk a commit sealed: see
    /// `ColdGroup::add_kept`), as a read that loaded it would. It is no request: no counter
    /// moves but the resident bytes, and the trace and the what-if sample see nothing until
    /// it is read.
    pub fn keep_written(&self, key: CacheKey, tier: Tier, owner: Owner, value: V, weight: u64) {
        self.insert_owned(key, tier, value, weight, owner.0);
    }

    /// The pages' share of the budget (the whole budget less the record tier's), in bytes.
    pub fn page_budget_bytes(&self) -> u64 {
        self.page_budget
    }

    /// Whether `weight` more bytes of pages fit without evicting any.
    fn has_room(&self, weight: u64) -> bool {
        self.core.lock().resident_bytes + weight <= self.page_limit()
    }

    fn keep(&self, object: UnkeptObject<V>) {
        let UnkeptObject {
            key,
            tier,
            value,
            weight,
            owner,
        } = object;
        self.insert_owned(key, tier, value, weight, owner);
    }

    /// Writes a request to the access trace, if there is one (the check stays on the hit
    /// path; the writing does not).
    #[inline(always)]
    fn record(&self, key: &CacheKey, weight: u64, tier: Tier, value: &V) {
        if let Some(trace) = &self.trace {
            Self::record_to(trace, key, weight, tier, value);
        }
    }

    #[cold]
    #[inline(never)]
    fn record_to(trace: &Mutex<TraceWriter>, key: &CacheKey, weight: u64, tier: Tier, value: &V) {
        let class = if value.is_inner_page() {
            "inner"
        } else {
            tier.name()
        };
        trace.lock().record(key.object_id(), weight, class);
    }

    /// Drops objects no reader of the current version can ask for: the page frames a
    /// commit replaced with changed pages, the chunks and large records it stopped naming.
    /// Their bytes go back to the budget now instead of when the policy ages them out; a
    /// reader of an older version that asks for one again loads it as a miss. Each is a
    /// `drop` line in the trace and a removal in the what-if caches, so that simulations
    /// see what the cache did. Not a request: no counter moves but resident bytes.
    pub fn drop_superseded(&self, keys: &[CacheKey]) {
        for key in keys {
            let hash = key_hash(key);
            let sample = self.sample_seq(hash);
            let removed = {
                let mut shard = self.shard_of(hash).lock();
                let removed = shard.entries.remove(hash, key);
                // A large object is in the what-if caches whatever its hash (one the live
                // cache no longer holds is not known to be large here: it ages out of them).
                let weight = removed.as_ref().map_or(0, |entry| entry.weight);
                let sample = self.or_large(sample, weight);
                if let Some(seq) = sample {
                    shard
                        .pending
                        .samples
                        .push((seq, key.object_id(), SampleEvent::Drop));
                }
                removed
            };
            if let Some(entry) = removed {
                let mut core = self.core.lock();
                if let Some(weight) = core.policy.remove(key) {
                    core.resident_bytes -= weight;
                }
                core.counts.slot(entry.owner, entry.tier).resident_bytes -= entry.weight;
            }
            if let Some(trace) = &self.trace {
                trace.lock().record(key.object_id(), 0, DROP_CLASS);
            }
        }
    }

    /// The parent record tier, for lookups.
    pub fn records(&self) -> &RecordCache<D> {
        &self.records
    }

    /// What pages and chunks may hold now: the budget less what the record tier holds, so
    /// a tier short of its share (a workload of scans, or one starting) leaves the rest to
    /// pages, and pages give it back as the tier fills.
    fn page_limit(&self) -> u64 {
        self.config
            .budget_bytes
            .saturating_sub(self.records.resident_bytes())
            .max(self.page_budget)
    }

    /// Evicts pages and chunks until they fit beside what the record tier holds now.
    fn fit_pages(&self) {
        let mut core = self.core.lock();
        self.evict_to(&mut core, self.page_limit());
    }

    /// Evicts until the resident pages and chunks take at most `limit` bytes.
    fn evict_to(&self, core: &mut Core, limit: u64) {
        while core.resident_bytes > limit {
            let Some((victim, victim_weight)) = core.policy.evict(&mut ShardMarks(self)) else {
                break;
            };
            core.resident_bytes -= victim_weight;
            let hash = key_hash(&victim);
            let removed = self.shard_of(hash).lock().entries.remove(hash, &victim);
            if let Some(entry) = removed {
                let counts = core.counts.slot(entry.owner, entry.tier);
                counts.evictions += 1;
                counts.resident_bytes -= entry.weight;
            }
        }
    }

    fn insert_owned(&self, key: CacheKey, tier: Tier, value: V, weight: u64, owner: OwnerIndex) {
        let budget = self.page_limit();
        if weight > budget {
            return;
        }
        let mut core = self.core.lock();
        if core.policy.contains(&key) {
            return;
        }
        if self.config.policy.needs_every_hit() {
            // LRU must know of every earlier hit before it picks a victim or places the new
            // object above them.
            self.touch_all(&mut core, Vec::new());
        }
        self.evict_to(&mut core, budget - weight);
        assert!(
            core.resident_bytes + weight <= budget,
            "the cache's resident bytes over its budget"
        );
        core.policy.insert(key, weight, value.is_inner_page());
        core.resident_bytes += weight;
        core.counts.slot(owner, tier).resident_bytes += weight;
        let entry = Entry {
            value,
            weight,
            tier,
            owner,
            hits: 0,
        };
        let hash = key_hash(&key);
        self.shard_of(hash).lock().entries.insert(hash, key, entry);
    }

    #[cold]
    fn apply(&self, pending: Pending) {
        if !pending.hits.is_empty() {
            self.touch_all(&mut self.core.lock(), pending.hits);
        }
        self.apply_samples(pending.samples);
    }

    /// Hands `hits` and every shard's buffered hits to the policy in the order they were
    /// made, so that LRU's recency order is the requests' (across shards too).
    fn touch_all(&self, core: &mut Core, mut hits: Vec<(u64, CacheKey)>) {
        for shard in self.shards.iter() {
            hits.append(&mut shard.lock().pending.hits);
        }
        hits.sort_unstable_by_key(|&(seq, _)| seq);
        for (_, key) in &hits {
            core.policy.touch(key);
        }
    }

    /// Runs sampled requests through the what-if caches in the order they were made: a
    /// full batch from one shard brings every shard's pending samples with it, sorted.
    fn apply_samples(&self, mut samples: Vec<(u64, u64, SampleEvent)>) {
        let Some(estimator) = &self.estimator else {
            return;
        };
        if samples.is_empty() {
            return;
        }
        // Gathered under the estimator's lock, so batches reach the caches in order.
        let mut sample = estimator.sample.lock();
        for shard in self.shards.iter() {
            samples.append(&mut shard.lock().pending.samples);
        }
        // Runs sorted already, one per shard: a merging sort.
        samples.sort_by_key(|&(seq, ..)| seq);
        for &(_, id, event) in &samples {
            let hash = mix(id);
            match event {
                SampleEvent::Drop => {
                    // A dropped object is never asked for again: it leaves the objects the
                    // sample counts too, so the dead do not lower the rate for the live.
                    sample.forget(hash, id);
                    continue;
                }
                SampleEvent::Request { weight, inner } if weight >= estimator.large_bytes => {
                    sample.access_large(id, weight, inner);
                    continue;
                }
                _ => {}
            }
            // Taken under a threshold since lowered.
            if hash > sample.threshold {
                continue;
            }
            if let Some(threshold) = sample.note(hash) {
                estimator.threshold.store(threshold, Ordering::Relaxed);
                sample.lower(threshold);
                if hash > threshold {
                    continue;
                }
            }
            match event {
                SampleEvent::Request { weight, inner } => sample.access(id, weight, inner),
                SampleEvent::Record {
                    record,
                    weight,
                    leaf_weight,
                } => sample.access_record(record, weight, id, leaf_weight),
                SampleEvent::WalkInner { weight } => sample.access_walk_inner(id, weight),
                SampleEvent::Drop => unreachable!("handled above"),
            }
        }
    }

    /// Hands every buffered event over, so that statistics include them.
    fn drain(&self) {
        for shard in self.shards.iter() {
            let pending = std::mem::take(&mut shard.lock().pending);
            self.apply(pending);
        }
    }

    /// Every counter, with per-collection rows named by `name_of`.
    pub fn stats(&self, name_of: impl Fn(CollectionId) -> Option<String>) -> CacheStats {
        self.drain();
        let mut rows: Vec<[TierStats; 2]> = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.lock();
            for (owner, counts) in shard.counts.iter() {
                for tier in [Tier::HotPage, Tier::ColdChunk] {
                    let c = counts[tier.index()];
                    let row = slot(&mut rows, owner, tier);
                    row.requests += c.requests;
                    row.hits += c.hits;
                    row.misses += c.misses;
                    row.bytes_read += c.bytes_read;
                }
            }
        }
        {
            let core = self.core.lock();
            for (owner, counts) in core.counts.iter() {
                for tier in [Tier::HotPage, Tier::ColdChunk] {
                    let c = counts[tier.index()];
                    let row = slot(&mut rows, owner, tier);
                    row.evictions += c.evictions;
                    row.resident_bytes += c.resident_bytes;
                }
            }
        }
        // Records count for the collection their key names (owner: its id + 1).
        let record_counts = self.records.counts_by_collection();
        let invalidations = record_counts.values().map(|c| c.invalidations).sum();
        let record_rows: BTreeMap<usize, TierStats> = record_counts
            .iter()
            .map(|(id, c)| (*id as usize + 1, c.tier))
            .collect();
        if let Some((&last, _)) = record_rows.last_key_value()
            && rows.len() <= last
        {
            rows.resize_with(last + 1, Default::default);
        }
        let (mut hot, mut cold, mut records) = Default::default();
        let mut collections = Vec::new();
        for (owner, [h, c]) in rows.iter().enumerate() {
            let r = record_rows.get(&owner).copied().unwrap_or_default();
            TierStats::add(&mut hot, h);
            TierStats::add(&mut cold, c);
            TierStats::add(&mut records, &r);
            if [h, c, &r].iter().any(|t| **t != TierStats::default()) {
                collections.push(CollectionCacheStats {
                    collection: owner.checked_sub(1).map(|id| {
                        CollectionId::try_from(id)
                            .ok()
                            .and_then(&name_of)
                            .unwrap_or_else(|| format!("#{id}"))
                    }),
                    hot: *h,
                    cold: *c,
                    records: r,
                });
            }
        }
        let (sample_rate, what_if) = match &self.estimator {
            None => (0.0, Vec::new()),
            Some(estimator) => estimator.what_ifs(
                self.config.budget_bytes,
                hot.requests + cold.requests,
                &records,
            ),
        };
        self.flush_trace();
        let trace_error = self.trace.as_ref().and_then(|t| t.lock().error());
        CacheStats {
            policy: self.config.policy,
            budget_bytes: self.config.budget_bytes,
            record_budget_bytes: self.records.budget_bytes(),
            hot,
            cold,
            records,
            record_invalidations: invalidations,
            collections,
            sample_rate,
            what_if,
            trace_error,
        }
    }

    /// Zeroes the counters and the what-if ratios; resident objects and every policy's
    /// state stay as they are.
    pub fn reset_stats(&self) {
        self.drain();
        self.records.reset_counts();
        for shard in self.shards.iter() {
            shard.lock().counts = OwnerCounts::default();
        }
        for counts in self.core.lock().counts.iter_mut() {
            counts.evictions = 0;
        }
        if let Some(estimator) = &self.estimator {
            estimator.walk_requests.store(0, Ordering::Relaxed);
            estimator.walk_inner_requests.store(0, Ordering::Relaxed);
            let mut sample = estimator.sample.lock();
            sample.scaled.fill(Scaled::default());
            for cache in sample.caches.iter_mut() {
                cache.requests = 0;
                cache.hits = 0;
            }
        }
    }
}

/// What needs nothing of the values: the shards and the trace.
impl<V, D> PageCache<V, D> {
    /// The shard of an object by the mixed hash of its id. Bits 32-35 pick the shard: the
    /// shard's table uses the low bits for the slot and the top 7 as a tag, and the high bits
    /// decide the sample, so all of them stay spread within a shard and the sample spreads
    /// over every shard.
    fn shard_of(&self, hash: u64) -> &Mutex<Shard<V>> {
        &self.shards[(hash >> 32) as usize % SHARDS]
    }

    /// Writes out the buffered lines of the access trace.
    pub fn flush_trace(&self) {
        if let Some(trace) = &self.trace {
            trace.lock().flush();
        }
    }
}

/// Hits recorded beside the values, collected by the policy at eviction.
struct ShardMarks<'a, V, D>(&'a PageCache<V, D>);

impl<V, D> Marks<CacheKey> for ShardMarks<'_, V, D> {
    fn take_hits(&mut self, key: &CacheKey) -> u32 {
        let hash = key_hash(key);
        let mut shard = self.0.shard_of(hash).lock();
        shard
            .entries
            .get_mut(hash, key)
            .map_or(0, |entry| std::mem::take(&mut entry.hits))
    }
}

impl<V, D> Drop for PageCache<V, D> {
    fn drop(&mut self) {
        self.flush_trace();
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests;
