//! Which policy a cache runs: the names a user chooses from.

/// Which objects the cache evicts when it needs room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CachePolicy {
    /// S3-FIFO whose main queue weighs sizes: [`CachePolicy::S3Fifo`]'s small queue (of a
    /// twentieth of the budget here, not a tenth) and ghost, but main is ordered as
    /// GreedyDual-Size-Frequency orders a cache (Cao and Irani, 1997; Cherkasova, 1998),
    /// not first in, first out. An object entering main takes the place `clock + 1/size`,
    /// where the clock is the place of the last object main evicted, and one given another
    /// round by a hit `clock + uses/size`, its uses one more with each such round, up to
    /// three: a large object reaches the front sooner than a small one that entered with
    /// it, one hit round after round later than one hit once, and with equal sizes and
    /// single uses the order is S3-FIFO's. A miss costs one read whatever the object's
    /// size, so of two objects asked for as often the smaller one saves as many misses in
    /// less room. A size counts up to a sixty-fourth of the budget: past it a
    /// miss reads more bytes than a page's worth of misses would, and an object of that
    /// share or more is ordered as one of exactly that share (otherwise a large record,
    /// placed ever nearer the front, is read again and again at its full size). Chosen on
    /// the working-set benchmark's traces: 3-5% fewer misses than S3-FIFO in all, on three
    /// sets of them, with about LRU's bytes read. The smaller small queue, chosen on the
    /// same traces, keeps the objects read again at intervals a little longer than a tenth
    /// of the budget's worth of requests (0.7% fewer misses; more only where the newest
    /// objects are the ones read, as sensors' buckets). Counting uses, chosen on the same
    /// traces: 0.9% fewer misses in all at the benchmark's default scale, 1.9% at four
    /// times it, fewer in 29 of 45 configurations at the first and 26 of 30 at the second,
    /// at most 0.04x Belady's more in any.
    #[default]
    S3FifoSized,
    /// S3-FIFO (Yang et al., SOSP 2023): new objects enter a small FIFO holding a tenth of
    /// the budget; those hit while there move to the main FIFO, a CLOCK that gives an object
    /// hit since its last pass one more round. Keys evicted from the small queue are
    /// remembered in a ghost queue, so an object that comes back soon goes straight to main.
    /// A scan passes through the small queue without flushing main. Of the paper's settings,
    /// one hit moves an object to main and main keeps one bit per object (not a count to 3):
    /// chosen on the working-set benchmark's traces, where it had the fewest configurations
    /// with more misses than LRU and the smallest excess where it had any.
    S3Fifo,
    /// SIEVE (Zhang et al., NSDI 2024), kept for comparison: now simulated only, in the
    /// `skewdb-cachesim` crate; a live cache given it runs the default policy.
    #[deprecated(note = "simulated only (skewdb-cachesim); a live cache runs the default policy")]
    Sieve,
    /// Least recently used; kept for comparison.
    Lru,
    /// W-TinyLFU (Einziger, Friedman and Manes, 2017), kept for comparison: now simulated
    /// only, in the `skewdb-cachesim` crate; a live cache given it runs the default policy.
    #[deprecated(note = "simulated only (skewdb-cachesim); a live cache runs the default policy")]
    TinyLfu,
}

impl CachePolicy {
    /// Every policy a live cache runs, the default first.
    pub const ALL: [CachePolicy; 3] = [
        CachePolicy::S3FifoSized,
        CachePolicy::S3Fifo,
        CachePolicy::Lru,
    ];

    /// The policy's name: `s3-fifo-sized`, `s3-fifo`, `lru` (and the deprecated `sieve`,
    /// `w-tinylfu`).
    #[allow(deprecated)]
    pub fn name(self) -> &'static str {
        match self {
            CachePolicy::S3FifoSized => "s3-fifo-sized",
            CachePolicy::S3Fifo => "s3-fifo",
            CachePolicy::Sieve => "sieve",
            CachePolicy::Lru => "lru",
            CachePolicy::TinyLfu => "w-tinylfu",
        }
    }

    /// Whether the policy must see every hit, in request order, before it picks a victim
    /// (LRU's order); the others read marks left beside the values.
    pub(crate) fn needs_every_hit(self) -> bool {
        matches!(self, CachePolicy::Lru)
    }

    /// The policy a live cache runs for this one: itself, or the default for those kept only
    /// for comparison (deprecated here, simulated by `skewdb-cachesim`).
    #[allow(deprecated)]
    pub(crate) fn live(self) -> CachePolicy {
        match self {
            CachePolicy::Sieve | CachePolicy::TinyLfu => CachePolicy::default(),
            policy => policy,
        }
    }

    /// The policy named `name`, as [`CachePolicy::name`] writes it.
    #[allow(deprecated)]
    pub fn parse(name: &str) -> Option<CachePolicy> {
        let deprecated = [CachePolicy::Sieve, CachePolicy::TinyLfu];
        Self::ALL
            .into_iter()
            .chain(deprecated)
            .find(|p| p.name() == name)
    }
}
