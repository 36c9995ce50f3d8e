//! The what-if estimate: miniature caches run on a sample of the requests (fixed-size
//! SHARDS, Waldspurger et al., FAST 2015), one per budget in [`WHAT_IF_FACTORS`] of the whole
//! budget: a record tier beside a page cache, as the live cache holds them. A record tier
//! lookup is sampled by the leaf its record was read from; a miss in a miniature tier walks
//! to that leaf in the same budget's page cache. The live walks' own page requests are noted
//! (see [`WALK`]), not sampled as pages.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::admission::LATELY;
use super::policy::{CachePolicy, Miniature};

/// The SHARDS_adj estimate from a miniature cache that saw `sampled` requests and `hits`
/// of them hit, where the sample rate's share of all requests is `expected`.
pub(crate) fn shards_adjusted(hits: f64, sampled: f64, expected: f64) -> f64 {
    if expected <= 0.0 {
        return if sampled <= 0.0 { 0.0 } else { hits / sampled };
    }
    ((hits + expected - sampled) / expected).clamp(0.0, 1.0)
}

/// The id a sampled record goes by in the miniature record tiers: a mixed hash of its
/// collection and key.
pub(super) fn record_id(collection: u32, key: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = rustc_hash::FxBuildHasher.build_hasher();
    hasher.write_u32(collection);
    hasher.write(key);
    mix(hasher.finish())
}

/// What a request offers the what-if sample.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Offer {
    /// Its place among sampled requests, if the hash put it in the sample (an object
    /// heavy enough is sampled whatever its hash, once its weight is known).
    Sample(Option<u64>),
    /// It is part of a point read's walk: the record lookup stands for its leaf; an inner
    /// page is sampled as one a walk asked for (see [`SampleEvent::WalkInner`]).
    Walk(Option<u64>),
}

impl Estimator {
    /// Runs `walk` (see `PageCache::walk_for_record`) with this thread's page requests
    /// noted instead of sampled, counts what it asked for, and says what that was.
    pub(super) fn walk<T>(
        &self,
        walk: impl FnOnce() -> crate::error::Result<T>,
    ) -> crate::error::Result<(T, Walked)> {
        WALK.with(|w| w.set(Some(Walked::NONE)));
        let result = walk();
        let walked = WALK.with(|w| w.take()).unwrap_or(Walked::NONE);
        let value = result?;
        self.walk_requests.fetch_add(1, Ordering::Relaxed);
        self.walk_inner_requests
            .fetch_add(u64::from(walked.inner), Ordering::Relaxed);
        if walked.leaf != super::records::NO_LEAF {
            self.leaf_weight
                .store(walked.leaf_weight, Ordering::Relaxed);
        }
        Ok((value, walked))
    }

    /// The event of a record tier lookup (see `PageCache::sample_record`) with the hash
    /// that places it, if its leaf is in the sample.
    pub(super) fn record_event(
        &self,
        collection: u32,
        key: &[u8],
        weight: u64,
        leaf: u64,
        leaf_weight: u64,
    ) -> Option<(u64, (u64, u64, SampleEvent))> {
        let hash = mix(leaf);
        if leaf == super::records::NO_LEAF || hash > self.threshold.load(Ordering::Relaxed) {
            return None;
        }
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let event = SampleEvent::Record {
            record: record_id(collection, key),
            weight,
            leaf_weight,
        };
        Some((hash, (seq, leaf, event)))
    }

    /// The sample's rate and the estimate at every budget, given what the live cache
    /// counted since the last reset: `page_requests` page and chunk requests, and the
    /// record tier's `records`; `budget` is the live cache's whole budget.
    pub(super) fn what_ifs(
        &self,
        budget: u64,
        page_requests: u64,
        records: &super::stats::TierStats,
    ) -> (f64, Vec<super::stats::WhatIf>) {
        let sample = self.sample.lock();
        // Every page and chunk request outside point reads' walks was offered to the
        // sample, and every record tier lookup.
        let walks = self.walk_requests.load(Ordering::Relaxed);
        let inner = self.walk_inner_requests.load(Ordering::Relaxed);
        let live = Live {
            pages: page_requests.saturating_sub(walks + inner) as f64,
            records: records.requests as f64,
            record_misses: records.misses as f64,
            walk_inner: inner as f64,
        };
        let what_if = WHAT_IF_FACTORS
            .iter()
            .zip(sample.caches.iter().zip(&sample.scaled))
            .map(|(&factor, (cache, scaled))| {
                let estimate = estimate(scaled, sample.rate, live);
                super::stats::WhatIf {
                    factor,
                    budget_bytes: saturating_u64(budget as f64 * factor),
                    sampled_requests: cache.requests,
                    hit_ratio: estimate.total,
                    record_hit_ratio: estimate.records,
                    page_hit_ratio: estimate.pages,
                    sampled_hit_ratio: estimate.sampled,
                }
            })
            .collect();
        (sample.rate, what_if)
    }
}

/// What a point read's walk to its record's leaf asked of the page cache (see
/// [`super::PageCache::walk_for_record`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walked {
    /// The last page that was not an inner one (the leaf), or
    /// [`NO_LEAF`](super::records::NO_LEAF).
    pub leaf: u64,
    pub leaf_weight: u64,
    pub inner: u32,
}

impl Walked {
    /// Nothing walked (or nothing noted: the estimate is off).
    pub const NONE: Walked = Walked {
        leaf: super::records::NO_LEAF,
        leaf_weight: 0,
        inner: 0,
    };
}

thread_local! {
    /// The walk this thread is in, if any: its page requests are noted here instead of
    /// sampled (the sample stands for them through the record lookup).
    pub(super) static WALK: Cell<Option<Walked>> = const { Cell::new(None) };
}

/// Notes a page request of the walk this thread is in.
pub(super) fn note_walked(id: u64, weight: u64, inner: bool) {
    WALK.with(|walk| {
        if let Some(mut walked) = walk.get() {
            if inner {
                walked.inner += 1;
            } else {
                walked.leaf = id;
                walked.leaf_weight = weight;
            }
            walk.set(Some(walked));
        }
    });
}

/// Whether this thread is in a point read's walk.
pub(super) fn walking() -> bool {
    WALK.with(|walk| walk.get().is_some())
}

/// The live requests the sample stands for since the last reset.
#[derive(Clone, Copy)]
pub(super) struct Live {
    /// Page and chunk requests outside point reads' walks.
    pub(super) pages: f64,
    /// Record tier lookups, and those that missed.
    pub(super) records: f64,
    pub(super) record_misses: f64,
    /// Inner pages the walks of those misses asked for.
    pub(super) walk_inner: f64,
}

/// One budget's estimate: hit ratios of every request (record lookups and page requests
/// together, as [`super::CacheStats::total`] counts them), of the record tier, and of pages
/// and chunks, each corrected for the share of requests the sample drew; and the sample's
/// own total before that correction.
pub(super) struct Estimate {
    pub(super) total: f64,
    pub(super) records: f64,
    pub(super) pages: f64,
    pub(super) sampled: f64,
}

/// What the live cache would count at the budget whose caches counted `scaled`: record
/// lookups hit as the sampled ones did (SHARDS_adj); each lookup that misses walks the
/// tree, asking for its leaf, which hits as the sampled misses' leaves did, and for as many
/// inner pages per miss as the live walks did, which hit as the sampled ones did; the other
/// page and chunk requests hit as the sampled ones did (SHARDS_adj).
pub(super) fn estimate(scaled: &Scaled, rate: f64, live: Live) -> Estimate {
    let ratio = |hits: f64, requests: f64| match requests > 0.0 {
        true => hits / requests,
        false => 0.0,
    };
    let records = shards_adjusted(
        scaled.record_hits,
        scaled.record_requests,
        rate * live.records,
    );
    let pages = shards_adjusted(scaled.hits, scaled.requests, rate * live.pages);
    let misses = (1.0 - records) * live.records;
    let leaf_ratio = ratio(scaled.walk_hits, scaled.walk_requests);
    let inner_ratio = ratio(scaled.inner_hits, scaled.inner_requests);
    let inner = misses * ratio(live.walk_inner, live.record_misses);
    let page_requests = misses + inner + live.pages;
    let page_hits = misses * leaf_ratio + inner * inner_ratio + pages * live.pages;
    let sampled_hits = scaled.record_hits + scaled.walk_hits + scaled.inner_hits + scaled.hits;
    let sampled_requests =
        scaled.record_requests + scaled.walk_requests + scaled.inner_requests + scaled.requests;
    Estimate {
        total: ratio(
            records * live.records + page_hits,
            live.records + page_requests,
        ),
        records: ratio(records * live.records, live.records),
        pages: ratio(page_hits, page_requests),
        sampled: ratio(sampled_hits, sampled_requests),
    }
}

/// Budgets of the what-if caches, as multiples of the live budget.
pub const WHAT_IF_FACTORS: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// The sampled share of the live budget the what-if caches aim for at 1x with a sample of
/// [`WHAT_IF_SAMPLED_OBJECTS`] (in proportion for another size): the rate never falls
/// below this over the whole budget (nor below [`MIN_SAMPLE_RATE`]).
pub(super) const WHAT_IF_SAMPLED_BYTES: u64 = 4 << 20;
pub(super) const MIN_SAMPLE_RATE: f64 = 1.0 / 4096.0;
/// Distinct objects the what-if sample keeps (fixed-size SHARDS): the rate starts at 1 and
/// is lowered, dropping the objects of the largest hashes, whenever more than this many (and
/// an eighth) have been seen, until it reaches its floor. A working set of fewer objects is
/// simulated whole whatever the budget.
pub const WHAT_IF_SAMPLED_OBJECTS: usize = 4096;
/// Objects of at least this share of the page budget are sampled whatever their hash, as a
/// stratum of their own, each scaled down by the rate (see [`Sample::access_large`]).
pub(super) const WHAT_IF_LARGE_SHARE: u64 = 64;

/// What the what-if caches are told of a sampled object.
#[derive(Clone, Copy)]
pub(super) enum SampleEvent {
    /// A request for it, with its weight and whether it is an inner page.
    Request { weight: u64, inner: bool },
    /// [`PageCache::drop_superseded`] dropped it.
    Drop,
    /// An inner page a point read's walk asked for: its hit ratio in each budget's page
    /// cache stands for that of the inner pages of the walks that budget's record tier
    /// misses make.
    WalkInner { weight: u64 },
    /// A record tier lookup of record `record` (weighing `weight` there; 0 for a key the
    /// tree does not hold), kept in the object's leaf (the sampled object), which weighs
    /// `leaf_weight`. A miss simulated at another budget walks
    /// to that leaf (its inner pages are sampled as [`SampleEvent::WalkInner`]).
    Record {
        record: u64,
        weight: u64,
        leaf_weight: u64,
    },
}

pub(super) struct Estimator {
    /// Hashes at or below this are in the sample; it only falls.
    pub(super) threshold: AtomicU64,
    /// Objects this heavy or heavier are in the sample whatever their hash.
    pub(super) large_bytes: u64,
    /// Orders sampled requests across shards.
    pub(super) next_seq: AtomicU64,
    /// Leaves point reads' walks asked for since the last reset (all, sampled or not): the
    /// sample stands for them through its record lookups.
    pub(super) walk_requests: AtomicU64,
    /// Inner pages those walks asked for.
    pub(super) walk_inner_requests: AtomicU64,
    /// The weight of the latest point read's leaf.
    pub(super) leaf_weight: AtomicU64,
    pub(super) sample: Mutex<Sample>,
}

/// The what-if caches and what lowers their rate.
pub(super) struct Sample {
    /// Distinct objects the sample keeps (see [`WHAT_IF_SAMPLED_OBJECTS`]).
    pub(super) kept_objects: usize,
    pub(super) rate: f64,
    pub(super) threshold: u64,
    /// The lowest the threshold goes: the rate that scales the budget down to
    /// [`WHAT_IF_SAMPLED_BYTES`].
    pub(super) floor: u64,
    /// Budgets at rate 1, one per factor.
    pub(super) full_budgets: Vec<u64>,
    pub(super) caches: Vec<Miniature<u64>>,
    /// Per cache, its hits and requests since the last reset, in units of the current
    /// rate: a lower rate scales what came before down with it, so that each sampled
    /// request stands for as many requests as one sampled now (fixed-size SHARDS).
    pub(super) scaled: Vec<Scaled>,
    /// Per budget, the record tier beside its page cache (none without a tier): each takes
    /// the same share of its budget as the live tier.
    pub(super) records: Vec<MiniRecords>,
    /// Per budget, the leaves point reads read and did not keep lately (see
    /// [`super::Admission::IfReadLately`]), in a ring as many as the live one's share of the
    /// sample.
    pub(super) lately: Vec<std::collections::VecDeque<u64>>,
    /// Budgets of the record tiers at rate 1.
    pub(super) full_record_budgets: Vec<u64>,
    /// Hashes of the distinct objects sampled, while the threshold may still fall.
    pub(super) objects: Option<rustc_hash::FxHashSet<u64>>,
    /// Ids of the large objects the what-if caches were given since the rate last fell,
    /// while it may still fall: they hold weights scaled by the old rate.
    pub(super) large: Option<rustc_hash::FxHashSet<u64>>,
}

#[derive(Clone, Copy, Default)]
pub(super) struct Scaled {
    /// Page and chunk requests not made by a point read's walk.
    pub(super) hits: f64,
    pub(super) requests: f64,
    /// Record tier lookups.
    pub(super) record_hits: f64,
    pub(super) record_requests: f64,
    /// Leaf requests of the walks the record tier's simulated misses made.
    pub(super) walk_hits: f64,
    pub(super) walk_requests: f64,
    /// Requests for inner pages the live walks made.
    pub(super) inner_hits: f64,
    pub(super) inner_requests: f64,
}

impl Scaled {
    fn scale(&mut self, by: f64) {
        for x in [
            &mut self.hits,
            &mut self.requests,
            &mut self.record_hits,
            &mut self.record_requests,
            &mut self.walk_hits,
            &mut self.walk_requests,
            &mut self.inner_hits,
            &mut self.inner_requests,
        ] {
            *x *= by;
        }
    }
}

impl Sample {
    /// The what-if caches of a live cache whose pages and chunks have `page_budget` and
    /// record tier `record_budget`, on a sample that keeps about `objects` objects.
    pub(super) fn new(
        policy: CachePolicy,
        page_budget: u64,
        record_budget: u64,
        objects: usize,
    ) -> Self {
        let objects = objects.max(1);
        let sampled_bytes =
            WHAT_IF_SAMPLED_BYTES as f64 * objects as f64 / WHAT_IF_SAMPLED_OBJECTS as f64;
        let whole = page_budget.saturating_add(record_budget).max(1);
        let floor_rate = (sampled_bytes / whole as f64).clamp(MIN_SAMPLE_RATE, 1.0);
        let full_budgets: Vec<u64> = WHAT_IF_FACTORS
            .iter()
            .map(|factor| saturating_u64((page_budget as f64 * factor).round()))
            .collect();
        let full_record_budgets: Vec<u64> = WHAT_IF_FACTORS
            .iter()
            .map(|factor| saturating_u64((record_budget as f64 * factor).round()))
            .collect();
        Sample {
            kept_objects: objects,
            rate: 1.0,
            threshold: u64::MAX,
            floor: threshold_of(floor_rate),
            // Each starts at its budget at the floor rate, then takes the full one: what a
            // policy sizes once (W-TinyLFU's sketch) is sized as for the floor's share of
            // a large budget (4,096 counters a row at 1x), enough for the few thousand
            // objects the sample holds, not the millions a full-size budget would suggest.
            caches: full_budgets
                .iter()
                .map(|&budget| {
                    let mut cache = Miniature::new(
                        policy,
                        saturating_u64((budget as f64 * floor_rate).round()),
                    );
                    cache.set_budget(budget);
                    cache
                })
                .collect(),
            scaled: vec![Scaled::default(); full_budgets.len()],
            records: full_record_budgets
                .iter()
                .filter(|_| record_budget > 0)
                .map(|&full| MiniRecords::new(full, full))
                .collect(),
            lately: vec![Default::default(); full_budgets.len()],
            full_record_budgets,
            full_budgets,
            objects: (floor_rate < 1.0).then(Default::default),
            large: (floor_rate < 1.0).then(Default::default),
        }
    }

    /// One sampled request through every what-if cache.
    pub(super) fn access(&mut self, id: u64, weight: u64, inner: bool) {
        for (cache, scaled) in self.caches.iter_mut().zip(&mut self.scaled) {
            scaled.requests += 1.0;
            if cache.access_as(id, weight, inner) {
                scaled.hits += 1.0;
            }
        }
    }

    /// Notes a sampled object; with more than the sample keeps, returns the threshold
    /// that keeps as many as the sample keeps (or the floor).
    pub(super) fn note(&mut self, hash: u64) -> Option<u64> {
        let keep = self.kept_objects;
        let objects = self.objects.as_mut()?;
        objects.insert(hash);
        if objects.len() <= keep + keep / 8 {
            return None;
        }
        let mut hashes: Vec<u64> = objects.iter().copied().collect();
        let (_, &mut kept, _) = hashes.select_nth_unstable(keep - 1);
        Some(kept.max(self.floor))
    }

    /// One request for a large object, sampled whatever its hash: it stands for `rate` of
    /// a request and weighs `rate` of its bytes, as a hash sample draws a large object with
    /// probability `rate` (the sized main still orders it by its full size). A sample of a
    /// few thousand objects draws few of the largest, and whether it holds one of them or
    /// not moves every estimate: a record of a megabyte in a what-if budget of a few takes a
    /// share of it the full budget does not give it.
    pub(super) fn access_large(&mut self, id: u64, weight: u64, inner: bool) {
        let rate = self.rate;
        let scaled_weight = saturating_u64((weight as f64 * rate).round()).max(1);
        for (cache, scaled) in self.caches.iter_mut().zip(&mut self.scaled) {
            scaled.requests += rate;
            if cache.access_sized(id, scaled_weight, weight, inner) {
                scaled.hits += rate;
            }
        }
        if let Some(large) = &mut self.large {
            large.insert(id);
        }
    }

    /// Removes a dropped object (hash `hash`, id `id`) from every what-if cache and from
    /// the objects counted towards the sample's size.
    pub(super) fn forget(&mut self, hash: u64, id: u64) {
        for cache in &mut self.caches {
            cache.remove(&id);
        }
        if let Some(objects) = &mut self.objects {
            objects.remove(&hash);
        }
        if let Some(large) = &mut self.large {
            large.remove(&id);
        }
    }

    /// Lowers the rate to `threshold`'s: objects above it leave the sample and every
    /// what-if cache, whose budgets shrink with the rate.
    pub(super) fn lower(&mut self, threshold: u64) {
        let rate = rate_of(threshold);
        for scaled in &mut self.scaled {
            scaled.scale(rate / self.rate);
        }
        self.threshold = threshold;
        self.rate = rate;
        // Large objects leave too, to come back at weights scaled by the new rate.
        let large = std::mem::take(&mut self.large).unwrap_or_default();
        let keep = |id: &u64| mix(*id) <= threshold && !large.contains(id);
        if threshold <= self.floor {
            self.objects = None;
        } else {
            if let Some(objects) = &mut self.objects {
                objects.retain(|&hash| hash <= threshold);
            }
            self.large = Some(Default::default());
        }
        for (cache, &full) in self.caches.iter_mut().zip(&self.full_budgets) {
            cache.retain(keep);
            cache.set_sampled_budget(saturating_u64((full as f64 * self.rate).round()), full);
        }
        for (records, &full) in self.records.iter_mut().zip(&self.full_record_budgets) {
            records.retain(|leaf| mix(leaf) <= threshold);
            records.set_budget(saturating_u64((full as f64 * self.rate).round()), full);
        }
        let ring = self.ring();
        for lately in &mut self.lately {
            lately.truncate(ring);
        }
        for at in 0..self.caches.len() {
            self.fit_pages(at);
        }
    }

    /// How many leaves each budget's ring of leaves read lately holds.
    fn ring(&self) -> usize {
        usize::try_from(saturating_u64((LATELY as f64 * self.rate).round()))
            .unwrap_or(usize::MAX)
            .max(1)
    }

    /// Sets budget `at`'s page cache to what the live cache's pages may hold beside its
    /// record tier: the budget less what the tier holds, and at least the pages' own share.
    fn fit_pages(&mut self, at: usize) {
        let Some(records) = self.records.get(at) else {
            return;
        };
        let pages = (self.full_budgets[at] as f64 * self.rate).round();
        let whole =
            ((self.full_budgets[at] + self.full_record_budgets[at]) as f64 * self.rate).round();
        let limit = (whole - records.resident as f64).max(pages);
        self.caches[at].set_limit(saturating_u64(limit));
    }

    /// One sampled inner page request of a live point read's walk through every budget's
    /// page cache.
    pub(super) fn access_walk_inner(&mut self, id: u64, weight: u64) {
        for (cache, scaled) in self.caches.iter_mut().zip(&mut self.scaled) {
            scaled.inner_requests += 1.0;
            if cache.access_as(id, weight, true) {
                scaled.inner_hits += 1.0;
            }
        }
    }

    /// One sampled record tier lookup through every budget's tier, and on a miss there,
    /// the walk to its leaf through that budget's page cache, which keeps the leaf as the
    /// live cache keeps one a point read loads (while the pages have room, or when read
    /// lately). (The walk's inner pages
    /// are sampled as the live walks ask for them: see [`Sample::access_walk_inner`].)
    pub(super) fn access_record(&mut self, record: u64, weight: u64, leaf: u64, leaf_weight: u64) {
        let ring = self.ring();
        for at in 0..self.records.len() {
            let scaled = &mut self.scaled[at];
            scaled.record_requests += 1.0;
            if self.records[at].access(record, leaf, weight) {
                scaled.record_hits += 1.0;
            } else {
                scaled.walk_requests += 1.0;
                let lately = &mut self.lately[at];
                let room = self.caches[at].has_room(leaf_weight);
                let hit = self.caches[at].access_admitting(leaf, leaf_weight, false, || {
                    if room || lately.contains(&leaf) {
                        return true;
                    }
                    if lately.len() >= ring {
                        lately.pop_front();
                    }
                    lately.push_back(leaf);
                    false
                });
                if hit {
                    self.scaled[at].walk_hits += 1.0;
                }
            }
            self.fit_pages(at);
        }
    }
}

/// A miniature record tier: the live tier's CLOCK (a hand that walks the entries in the
/// order of their hashes, as the live one walks its tables' buckets, so that a new entry
/// lands anywhere before it) over entries of a byte budget, whose
/// records come in on their second miss when the tier is full or they are large (see
/// `RecordCache::insert`), over sampled records named by a hash, each with its leaf.
pub(super) struct MiniRecords {
    /// Bytes the sampled entries may take.
    budget: u64,
    /// The budget at rate 1, which decides what counts as large.
    full: u64,
    pub(super) resident: u64,
    /// By the record's hash, which orders the hand's walk.
    entries: std::collections::BTreeMap<u64, MiniEntry>,
    /// The hash the hand looks at next.
    hand: u64,
    /// Records turned away lately, oldest first, and the same as a set.
    door: std::collections::VecDeque<u64>,
    at_door: rustc_hash::FxHashSet<u64>,
}

struct MiniEntry {
    leaf: u64,
    weight: u64,
    visited: bool,
}

impl MiniRecords {
    pub(super) fn new(budget: u64, full: u64) -> Self {
        MiniRecords {
            budget,
            full,
            resident: 0,
            entries: Default::default(),
            hand: 0,
            door: Default::default(),
            at_door: Default::default(),
        }
    }

    /// One lookup of `record` (in `leaf`, weighing `weight`; 0: not in the tree, never
    /// kept); true on a hit.
    pub(super) fn access(&mut self, record: u64, leaf: u64, weight: u64) -> bool {
        if let Some(entry) = self.entries.get_mut(&record) {
            entry.visited = true;
            // A document built on its record since weighs with it.
            if weight > entry.weight {
                self.resident += weight - entry.weight;
                entry.weight = weight;
                self.make_room(0);
            }
            return true;
        }
        if weight == 0 || weight > self.full / super::records::MAX_ENTRY_SHARE {
            return false;
        }
        let large = weight > self.full / super::records::SHARDS as u64;
        if (large || self.resident + weight > self.budget) && !self.passes(record) {
            return false;
        }
        self.make_room(weight);
        if self.resident + weight > self.budget {
            return false;
        }
        self.entries.insert(
            record,
            MiniEntry {
                leaf,
                weight,
                visited: false,
            },
        );
        self.resident += weight;
        false
    }

    /// Whether `record` was turned away lately; if not, it is remembered (a quarter as
    /// many as the tier holds, and at least the live tier's least for this share).
    fn passes(&mut self, record: u64) -> bool {
        if self.at_door.contains(&record) {
            return true;
        }
        let least = (super::records::DOOR_MIN * super::records::SHARDS) as f64 * self.budget as f64
            / self.full.max(1) as f64;
        let least = usize::try_from(saturating_u64(least.round())).unwrap_or(usize::MAX);
        let len = (self.entries.len() / super::records::DOOR_SHARE)
            .max(least)
            .max(1);
        self.door.push_back(record);
        self.at_door.insert(record);
        while self.door.len() > len {
            if let Some(old) = self.door.pop_front() {
                self.at_door.remove(&old);
            }
        }
        false
    }

    /// Evicts by CLOCK until `weight` more bytes fit: the hand clears the mark of an entry
    /// read since it last passed, and evicts the first without one.
    fn make_room(&mut self, weight: u64) {
        while self.resident + weight > self.budget && !self.entries.is_empty() {
            let (&record, entry) = match self.entries.range_mut(self.hand..).next() {
                Some(next) => next,
                None => self.entries.iter_mut().next().expect("not empty"),
            };
            self.hand = record.wrapping_add(1);
            if entry.visited {
                entry.visited = false;
                continue;
            }
            self.resident -= entry.weight;
            self.entries.remove(&record);
        }
    }

    /// Forgets every record whose leaf `keep` refuses.
    pub(super) fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        let mut freed = 0;
        self.entries.retain(|_, entry| {
            let kept = keep(entry.leaf);
            if !kept {
                freed += entry.weight;
            }
            kept
        });
        self.resident -= freed;
    }

    pub(super) fn set_budget(&mut self, budget: u64, full: u64) {
        self.budget = budget;
        self.full = full;
        self.make_room(0);
    }
}

/// The weight from which objects are sampled as large ones, for a page budget.
pub(super) fn large_bytes(page_budget: u64) -> u64 {
    (page_budget / WHAT_IF_LARGE_SHARE).max(1)
}

/// The hash threshold that samples `rate` of all objects.
pub(super) fn threshold_of(rate: f64) -> u64 {
    if rate >= 1.0 {
        u64::MAX
    } else {
        saturating_u64(rate * u64::MAX as f64)
    }
}

pub(super) fn rate_of(threshold: u64) -> f64 {
    if threshold == u64::MAX {
        1.0
    } else {
        threshold as f64 / u64::MAX as f64
    }
}

/// A well-mixed 64-bit hash of an object id (splitmix64's finalizer), for sampling.
pub(super) fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// `x` as a byte count or a threshold: float-to-integer casts saturate (a negative or NaN
/// value is 0, one past `u64::MAX` is `u64::MAX`), which is what a scaled budget, weight or
/// sampling threshold wants.
#[allow(
    clippy::cast_possible_truncation,
    reason = "the cast saturates, as the doc says; the fraction is meant to go"
)]
pub(crate) fn saturating_u64(x: f64) -> u64 {
    x as u64
}
