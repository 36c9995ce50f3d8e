//! Options for opening a database.

use std::path::PathBuf;

use crate::cache::CachePolicy;
use crate::error::{Error, Result};
use crate::page::{DEFAULT_PAGE_BYTES, MAX_PAGE_BYTES, MIN_PAGE_BYTES};

/// When a committed batch is durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// `commit` returns after the batch is synced to stable storage.
    #[default]
    Immediate,
    /// `commit` returns after the batch is written to the OS; checkpoints and close sync.
    /// A process crash loses nothing; a power loss may lose the newest batches (never part
    /// of one, never an older one while keeping a newer one).
    Buffered,
}

/// The largest share of the cache the record tier may take, in percent.
pub const MAX_RECORD_CACHE_PERCENT: u8 = 90;

/// The smallest and largest hot log segment.
pub const MIN_SEGMENT_BYTES: u64 = 64 * 1024;
pub const MAX_SEGMENT_BYTES: u64 = 1024 * 1024 * 1024;

/// How to open a database. Built with chained setters from [`Options::new`].
///
/// ```
/// use skewdb::{CachePolicy, Db, Durability, Options};
///
/// let options = Options::new()
///     .cache_bytes(256 * 1024 * 1024) // one budget for pages, chunks and records
///     .page_bytes(8 * 1024)
///     .durability(Durability::Buffered) // `Db::persist` or a checkpoint makes it durable
///     .cache_policy(CachePolicy::Lru);
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), options)?;
/// assert_eq!(db.stats()?.cache.budget_bytes, 256 * 1024 * 1024);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub(crate) cache_bytes: usize,
    pub(crate) record_cache_percent: u8,
    pub(crate) page_bytes: usize,
    pub(crate) durability: Durability,
    pub(crate) checkpoint_bytes: u64,
    pub(crate) segment_bytes: u64,
    pub(crate) cache_policy: CachePolicy,
    pub(crate) cache_what_if: bool,
    pub(crate) cache_what_if_objects: usize,
    pub(crate) cache_trace: Option<PathBuf>,
    pub(crate) background: bool,
    pub(crate) reclaim: bool,
    pub(crate) memory_map: bool,
}

/// The fewest and the most objects the what-if sample may keep.
const MIN_WHAT_IF_OBJECTS: usize = 64;
const MAX_WHAT_IF_OBJECTS: usize = 1 << 20;

impl Default for Options {
    fn default() -> Self {
        Options {
            cache_bytes: 64 * 1024 * 1024,
            record_cache_percent: 90,
            page_bytes: DEFAULT_PAGE_BYTES,
            durability: Durability::Immediate,
            checkpoint_bytes: 64 * 1024 * 1024,
            segment_bytes: 16 * 1024 * 1024,
            cache_policy: CachePolicy::default(),
            cache_what_if: false,
            cache_what_if_objects: crate::cache::WHAT_IF_SAMPLED_OBJECTS,
            cache_trace: None,
            background: true,
            reclaim: true,
            memory_map: false,
        }
    }
}

impl Options {
    /// The defaults: 64 MiB cache, 16 KiB pages, `Durability::Immediate`, maintenance on.
    pub fn new() -> Self {
        Self::default()
    }

    /// The page cache's byte budget (default 64 MiB).
    pub fn cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// The share of `cache_bytes`, in percent, that keeps parent records whole as point
    /// reads (`Collection::get`, `get_projected`) found them (default 90, the most; 0 turns
    /// it off): a record found there costs no tree walk and no page lookup, and a record
    /// `get` reads again keeps its decoded `Document` too, so that the next `get` builds
    /// nothing. Pages and chunks get the rest, and whatever of the share the tier does not
    /// hold (evicted as it fills). Commits remove the records they change; scans and writes
    /// put none there. While there is a tier, the leaf a point read loads from storage is
    /// not kept in the page cache once the pages fill their budget (the tier keeps the
    /// record) unless point reads load it again at once; while they have room, and with 0,
    /// it is.
    pub fn record_cache_percent(mut self, percent: u8) -> Self {
        self.record_cache_percent = percent;
        self
    }

    /// The bytes of `cache_bytes` the record tier gets.
    pub(crate) fn record_cache_bytes(&self) -> u64 {
        self.cache_bytes as u64 * self.record_cache_percent as u64 / 100
    }

    /// Which objects the cache evicts first (default [`CachePolicy::S3FifoSized`]; the others
    /// for comparison).
    pub fn cache_policy(mut self, policy: CachePolicy) -> Self {
        self.cache_policy = policy;
        self
    }

    /// Whether the statistics estimate the hit ratio at other budgets (default off: a
    /// diagnostic for sizing the cache, with a cost on every page read while it runs): the
    /// whole budget scaled from 0.25x to 4x, the record tier keeping its share, with its
    /// hit ratio, the pages' and both together. The estimate runs miniature caches (a record
    /// tier and a page cache per budget) on the requests of a hash sample of the objects
    /// (pages and chunks; a record lookup by its leaf): all of them while fewer than 4,096
    /// have been seen (see [`Options::cache_what_if_sample`]), then a falling share that
    /// keeps about that many, never below the share that scales the budget down to 4 MiB.
    /// Each sampled request costs about 1,300 instructions (five miniature caches); a
    /// sampled record tier hit, with the five miniature tiers, about 370 ns (a `get` the tier
    /// answers: 94 ns without the estimate, 462 ns with it, every object sampled).
    pub fn cache_what_if(mut self, on: bool) -> Self {
        self.cache_what_if = on;
        self
    }

    /// How many distinct objects the what-if sample keeps (default 4,096; 64 to 1,048,576):
    /// more is closer to a full simulation and takes more memory (about 200 bytes each, per
    /// budget) and more time per read once a workload has that many. The lowest share it
    /// is sampled at scales in proportion (4 MiB of the budget per 4,096 objects).
    pub fn cache_what_if_sample(mut self, objects: usize) -> Self {
        self.cache_what_if_objects = objects;
        self
    }

    /// Records every cache request to this file as CSV lines `seq,object_id,object_bytes,
    /// tier` (see `format-spec/trace.md`); the file is replaced at open.
    pub fn cache_trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.cache_trace = Some(path.into());
        self
    }

    /// The B+tree page size for a new database, 4 to 64 KiB in steps of 1 KiB (default
    /// 16 KiB). An existing database keeps the page size it was created with.
    pub fn page_bytes(mut self, bytes: usize) -> Self {
        self.page_bytes = bytes;
        self
    }

    /// Durability of each commit: `Immediate` (on disk when `commit` returns) or `Buffered`.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Log volume after which a checkpoint runs by itself (default 64 MiB). Bounds the
    /// redo replayed at recovery. Pages changed since the last checkpoint, which live in
    /// memory until one writes them, bring it forward once they reach a sixteenth of
    /// `cache_bytes` (at least 1 MiB, at most this).
    pub fn checkpoint_bytes(mut self, bytes: u64) -> Self {
        self.checkpoint_bytes = bytes;
        self
    }

    /// The size at which the hot log, and the cold store, move to a new segment file
    /// (default 16 MiB). Space is given back a whole segment at a time, so smaller segments
    /// keep the files closer to the live data, at the cost of more files.
    pub fn segment_bytes(mut self, bytes: u64) -> Self {
        self.segment_bytes = bytes;
        self
    }

    /// Whether checkpoints, cold compaction steps and the background halves of drops and
    /// layout changes run on a background thread (default on). Off, the commit that finds a
    /// checkpoint due runs it. On, a commit never runs one: it wakes the thread, and when
    /// the thread has fallen twice `checkpoint_bytes` behind it waits for the thread's
    /// checkpoint (back pressure), which bounds recovery and memory whatever the load.
    pub fn background(mut self, on: bool) -> Self {
        self.background = on;
        self
    }

    /// Whether segment files are read through memory maps (default off). Off, a page or
    /// chunk the cache misses is read into a buffer of the engine's own (a system call per
    /// miss), so the process's memory is the cache's budget plus a fixed allowance whatever
    /// the size of the data (`ARCHITECTURE.md`, "Memory"). On, sealed segments are mapped
    /// whole and a miss copies nothing, but every page of a segment once read counts in the
    /// process's resident memory (and in a memory limit such as a cgroup's) until the
    /// kernel takes it back: worth it only where the data fits in memory.
    pub fn memory_map(mut self, on: bool) -> Self {
        self.memory_map = on;
        self
    }

    /// Whether automatic checkpoints reclaim space (default on): they clean sparse log
    /// segments, and a cold compaction step follows when a cold segment is mostly dead.
    /// Off, segments no checkpoint needs are still removed, but nothing is copied;
    /// `Db::compact` works either way.
    pub fn reclaim(mut self, on: bool) -> Self {
        self.reclaim = on;
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let invalid = |option, reason: String| Err(Error::InvalidOption { option, reason });
        if self.record_cache_percent > MAX_RECORD_CACHE_PERCENT {
            return invalid(
                "record_cache_percent",
                format!(
                    "{} is above {MAX_RECORD_CACHE_PERCENT}: pages need a share of the cache",
                    self.record_cache_percent
                ),
            );
        }
        if !(MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&self.page_bytes)
            || !self.page_bytes.is_multiple_of(1024)
        {
            return invalid(
                "page_bytes",
                format!(
                    "{} is not a multiple of 1 KiB from 4 KiB to 64 KiB",
                    self.page_bytes
                ),
            );
        }
        if !(MIN_SEGMENT_BYTES..=MAX_SEGMENT_BYTES).contains(&self.segment_bytes) {
            return invalid(
                "segment_bytes",
                format!("{} is outside 64 KiB to 1 GiB", self.segment_bytes),
            );
        }
        if !(MIN_WHAT_IF_OBJECTS..=MAX_WHAT_IF_OBJECTS).contains(&self.cache_what_if_objects) {
            return invalid(
                "cache_what_if_sample",
                format!(
                    "{} objects is outside {MIN_WHAT_IF_OBJECTS} to {MAX_WHAT_IF_OBJECTS}",
                    self.cache_what_if_objects
                ),
            );
        }
        if self.checkpoint_bytes < MIN_SEGMENT_BYTES {
            return invalid(
                "checkpoint_bytes",
                format!("{} is below 64 KiB", self.checkpoint_bytes),
            );
        }
        Ok(())
    }
}
