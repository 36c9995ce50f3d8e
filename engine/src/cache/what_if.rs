//! The what-if estimate: miniature caches run on a sample of the requests (fixed-size
//! SHARDS, Waldspurger et al., FAST 2015), one per budget in [`WHAT_IF_FACTORS`].

use std::sync::atomic::AtomicU64;

use parking_lot::Mutex;

use super::policy::{CachePolicy, Miniature};

/// The SHARDS_adj estimate from a miniature cache that saw `sampled` requests and `hits`
/// of them hit, where the sample rate's share of all requests is `expected`.
pub(crate) fn shards_adjusted(hits: f64, sampled: f64, expected: f64) -> f64 {
    if expected <= 0.0 {
        return if sampled <= 0.0 { 0.0 } else { hits / sampled };
    }
    ((hits + expected - sampled) / expected).clamp(0.0, 1.0)
}

/// Budgets of the what-if caches, as multiples of the live budget.
pub const WHAT_IF_FACTORS: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// The sampled share of the live budget the what-if caches aim for at 1x: the rate never
/// falls below this over the budget (nor below [`MIN_SAMPLE_RATE`]).
pub(super) const WHAT_IF_SAMPLED_BYTES: u64 = 4 << 20;
pub(super) const MIN_SAMPLE_RATE: f64 = 1.0 / 4096.0;
/// Distinct objects the what-if sample keeps (fixed-size SHARDS): the rate starts at 1 and
/// is lowered, dropping the objects of the largest hashes, whenever more than this many (and
/// an eighth) have been seen, until it reaches its floor. A working set of fewer objects is
/// simulated whole whatever the budget.
pub(super) const WHAT_IF_SAMPLED_OBJECTS: usize = 4096;
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
}

pub(super) struct Estimator {
    /// Hashes at or below this are in the sample; it only falls.
    pub(super) threshold: AtomicU64,
    /// Objects this heavy or heavier are in the sample whatever their hash.
    pub(super) large_bytes: u64,
    /// Orders sampled requests across shards.
    pub(super) next_seq: AtomicU64,
    pub(super) sample: Mutex<Sample>,
}

/// The what-if caches and what lowers their rate.
pub(super) struct Sample {
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
    /// Hashes of the distinct objects sampled, while the threshold may still fall.
    pub(super) objects: Option<rustc_hash::FxHashSet<u64>>,
    /// Ids of the large objects the what-if caches were given since the rate last fell,
    /// while it may still fall: they hold weights scaled by the old rate.
    pub(super) large: Option<rustc_hash::FxHashSet<u64>>,
}

#[derive(Clone, Copy, Default)]
pub(super) struct Scaled {
    pub(super) hits: f64,
    pub(super) requests: f64,
}

impl Sample {
    pub(super) fn new(policy: CachePolicy, page_budget: u64) -> Self {
        let floor_rate =
            (WHAT_IF_SAMPLED_BYTES as f64 / page_budget.max(1) as f64).clamp(MIN_SAMPLE_RATE, 1.0);
        let full_budgets: Vec<u64> = WHAT_IF_FACTORS
            .iter()
            .map(|factor| saturating_u64((page_budget as f64 * factor).round()))
            .collect();
        Sample {
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
    /// that keeps [`WHAT_IF_SAMPLED_OBJECTS`] of them (or the floor).
    pub(super) fn note(&mut self, hash: u64) -> Option<u64> {
        let objects = self.objects.as_mut()?;
        objects.insert(hash);
        if objects.len() <= WHAT_IF_SAMPLED_OBJECTS + WHAT_IF_SAMPLED_OBJECTS / 8 {
            return None;
        }
        let mut hashes: Vec<u64> = objects.iter().copied().collect();
        let (_, &mut kept, _) = hashes.select_nth_unstable(WHAT_IF_SAMPLED_OBJECTS - 1);
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
            scaled.hits *= rate / self.rate;
            scaled.requests *= rate / self.rate;
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
