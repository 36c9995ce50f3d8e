//! What the cache counts, as `Db::stats` reports it: per tier, per collection, and the
//! what-if estimates at other budgets.

use super::policy::{CachePolicy, ratio};

/// Counters of one tier (or of one collection's use of one tier).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierStats {
    /// Lookups.
    pub requests: u64,
    /// Lookups that found the object cached.
    pub hits: u64,
    /// Lookups that loaded it from storage.
    pub misses: u64,
    /// Bytes read from storage by misses.
    pub bytes_read: u64,
    /// Objects evicted to make room.
    pub evictions: u64,
    /// Bytes of the objects this tier (or collection) has in the cache now.
    pub resident_bytes: u64,
}

impl TierStats {
    /// hits / requests, or 0 with no requests.
    pub fn hit_ratio(&self) -> f64 {
        ratio(self.hits, self.requests)
    }

    pub(crate) fn add(&mut self, other: &TierStats) {
        self.requests += other.requests;
        self.hits += other.hits;
        self.misses += other.misses;
        self.bytes_read += other.bytes_read;
        self.evictions += other.evictions;
        self.resident_bytes += other.resident_bytes;
    }
}

/// One collection's share of the cache. Pages shared by collections (the tree's inner
/// pages, and leaves where two collections meet) count for the collection whose read asked
/// for them; evictions and resident bytes for the one whose read loaded them.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectionCacheStats {
    /// `None` for reads on behalf of no collection (checkpoints, recovery, verify).
    pub collection: Option<String>,
    /// Its hot pages and large records.
    pub hot: TierStats,
    /// Its cold chunks.
    pub cold: TierStats,
    /// Parent records of the collection in the record tier.
    pub records: TierStats,
}

/// The estimated hit ratios at another budget: the whole budget (record tier, pages and
/// chunks) scaled by `factor`, the record tier keeping its share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WhatIf {
    /// The budget as a multiple of the live one.
    pub factor: f64,
    /// The budget this estimate simulates, in bytes.
    pub budget_bytes: u64,
    /// Requests that fell in the sample since the last reset.
    pub sampled_requests: u64,
    /// The estimated hit ratio of every request at that budget, record lookups and page
    /// and chunk requests together (as [`CacheStats::total`] counts them): a record tier
    /// miss asks for the pages of its walk down the tree, and fewer misses ask for fewer.
    /// Each sampled ratio is corrected for the share of requests the sample drew
    /// (SHARDS_adj, Waldspurger et al., FAST 2015): when the sampled objects drew more
    /// requests than the sample rate's share of all requests (a hot object fell in the
    /// sample), the excess counts as hits taken back; when fewer (hot objects fell outside
    /// it), the shortfall counts as hits, as most requests to the hottest objects are.
    pub hit_ratio: f64,
    /// The record tier's estimated hit ratio (0 without a tier).
    pub record_hit_ratio: f64,
    /// The estimated hit ratio of page and chunk requests, the walks of the record tier's
    /// misses included.
    pub page_hit_ratio: f64,
    /// The hit ratio of the sampled requests alone, before that correction.
    pub sampled_hit_ratio: f64,
}

/// Everything the cache counts.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheStats {
    /// The eviction policy.
    pub policy: CachePolicy,
    /// Pages, chunks and records together.
    pub budget_bytes: u64,
    /// The share of the budget for parent records.
    pub record_budget_bytes: u64,
    /// Hot pages and large records.
    pub hot: TierStats,
    /// Cold chunks.
    pub cold: TierStats,
    /// Parent records kept whole for `Collection::get` (no bytes read: a miss reads the
    /// record's pages through the hot tier).
    pub records: TierStats,
    /// Records removed because a commit changed them.
    pub record_invalidations: u64,
    /// The same counters per collection.
    pub collections: Vec<CollectionCacheStats>,
    /// The fraction of objects (by hash of their identity) the what-if caches see now: 1
    /// until more objects have been seen than the sample keeps, then lower; 0 when the
    /// estimate is off. Objects of a sixty-fourth of the page budget or more are all seen,
    /// each weighing this fraction of its bytes and of a request.
    pub sample_rate: f64,
    /// Hit ratios the same requests would get at other budgets, from miniature caches run
    /// on the sample (SHARDS, Waldspurger et al., FAST 2015, with its fixed-size sample),
    /// budgets scaled by the rate.
    pub what_if: Vec<WhatIf>,
    /// Why the access trace stopped, if it did.
    pub trace_error: Option<String>,
}

impl CacheStats {
    /// Every tier together.
    pub fn total(&self) -> TierStats {
        let mut total = self.hot;
        total.add(&self.cold);
        total.add(&self.records);
        total
    }
}
