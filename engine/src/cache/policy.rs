//! Eviction policies over keys and byte weights, with no values: the live cache keeps its
//! values beside one of these, the what-if estimator runs miniature ones on sampled keys,
//! and [`Simulator`] replays a recorded trace through one. One code path for all three, so
//! an estimate and a simulation use exactly the policy the cache runs.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;

use rustc_hash::FxHashMap;

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
    /// SIEVE (Zhang et al., NSDI 2024): one FIFO with a visited bit and a hand that keeps
    /// its place; kept for comparison.
    Sieve,
    /// Least recently used; kept for comparison.
    Lru,
    /// W-TinyLFU (Einziger, Friedman and Manes, 2017), the admission filter Caffeine and
    /// moka use: new objects enter a window of 1% of the budget; one leaving it must have
    /// been asked for more often than the main cache's next victim (counted in a count-min
    /// sketch of 4-bit counters, halved as it fills) to take its place. The main cache is
    /// segmented, 80% protected (objects hit while on probation), the rest probation. Unlike
    /// Caffeine's, the segments are FIFOs that read hits when an object reaches the front
    /// (protected a CLOCK), so a hit never reaches the policy, as with S3-FIFO.
    TinyLfu,
}

impl CachePolicy {
    /// Every policy, the default first.
    pub const ALL: [CachePolicy; 5] = [
        CachePolicy::S3FifoSized,
        CachePolicy::S3Fifo,
        CachePolicy::Sieve,
        CachePolicy::Lru,
        CachePolicy::TinyLfu,
    ];

    /// The policy's name: `s3-fifo-sized`, `s3-fifo`, `sieve`, `lru`, `w-tinylfu`.
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

    /// The policy named `name`, as [`CachePolicy::name`] writes it.
    pub fn parse(name: &str) -> Option<CachePolicy> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Where the live cache keeps hits of S3-FIFO and SIEVE: beside each value, under the
/// lock its shard already takes, so a hit never touches the policy. The policy collects them
/// only when it looks at a key to evict. The simulator records hits in the policy itself
/// and passes [`NoMarks`].
pub(crate) trait Marks<K> {
    /// Takes the hits recorded for `key` since the last call.
    fn take_hits(&mut self, key: &K) -> u32;
}

pub(crate) struct NoMarks;

impl<K> Marks<K> for NoMarks {
    fn take_hits(&mut self, _: &K) -> u32 {
        0
    }
}

/// The state of one policy over keys `K`. B+tree inner pages are kept apart from every
/// other object, as WiredTiger keeps them: a few of them carry most lookups (each walk
/// passes through them), so they leave only when nothing else is left to evict or when they
/// pass half of the budget, and then by CLOCK among themselves.
pub(crate) struct Policy<K> {
    rest: Rule<K>,
    inner: InnerPages<K>,
}

impl<K: Copy + Eq + Hash> Policy<K> {
    pub fn new(policy: CachePolicy, budget_bytes: u64) -> Self {
        Policy {
            rest: Rule::new(policy, budget_bytes),
            inner: InnerPages {
                queue: VecDeque::new(),
                meta: FxHashMap::default(),
                bytes: 0,
                cap: budget_bytes / 2,
            },
        }
    }

    pub fn contains(&self, key: &K) -> bool {
        self.inner.meta.contains_key(key) || self.rest.contains(key)
    }

    /// Records a hit on a resident key; returns whether it was resident (a key that is
    /// not is left alone). The live cache calls it for LRU only; the others collect hits
    /// through [`Marks`].
    pub fn touch(&mut self, key: &K) -> bool {
        self.touch_inner(key) || self.rest.touch(key)
    }

    /// [`Policy::touch`] for a key known to be an inner page when `inner` (a page is one
    /// or the other for good): one lookup instead of two.
    pub fn touch_as(&mut self, key: &K, inner: bool) -> bool {
        if inner {
            self.touch_inner(key)
        } else {
            self.rest.touch(key)
        }
    }

    fn touch_inner(&mut self, key: &K) -> bool {
        self.inner
            .meta
            .get_mut(key)
            .map(|meta| meta.1 = true)
            .is_some()
    }

    /// Adds a key that is not resident; `inner` for a B+tree inner page.
    pub fn insert(&mut self, key: K, weight: u64, inner: bool) {
        self.insert_sized(key, weight, weight, inner);
    }

    /// [`Policy::insert`] for a sampled object that takes `weight` bytes here and stands
    /// for one of `size` bytes in the cache the sample stands for (see
    /// [`Policy::set_sampled_budget`]): the sized main orders it by `size`.
    pub fn insert_sized(&mut self, key: K, weight: u64, size: u64, inner: bool) {
        if inner {
            self.inner.meta.insert(key, (weight, false));
            self.inner.queue.push_back(key);
            self.inner.bytes += weight;
        } else {
            self.rest.insert(key, weight, size);
        }
    }

    /// Removes the key the policy gives up first, with its weight.
    pub fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
        if self.inner.bytes > self.inner.cap {
            return self.inner.evict(marks);
        }
        self.rest.evict(marks).or_else(|| self.inner.evict(marks))
    }

    /// Drops `key` wherever it is, as if it had never been asked for (an object that can
    /// no longer be asked for: a page frame a newer one replaced); returns its weight, or
    /// `None` when it was not resident. Constant time but for W-TinyLFU's, which looks for
    /// the key in its segment.
    pub fn remove(&mut self, key: &K) -> Option<u64> {
        match self.inner.meta.remove(key) {
            // Its place in the queue is left; `InnerPages::evict` skips it.
            Some((weight, _)) => {
                self.inner.bytes -= weight;
                Some(weight)
            }
            None => self.rest.remove(key),
        }
    }

    /// Drops every key `keep` refuses, wherever it is (and from S3-FIFO's ghost); returns
    /// the bytes dropped. The others keep their order and their hits.
    pub fn retain(&mut self, keep: impl Fn(&K) -> bool) -> u64 {
        let inner = &mut self.inner;
        inner.queue.retain(|k| keep(k));
        let before = inner.bytes;
        inner.meta.retain(|k, _| keep(k));
        inner.bytes = inner.meta.values().map(|&(weight, _)| weight).sum();
        before - inner.bytes + self.rest.retain(&keep)
    }

    /// Takes a new budget for the shares the policy sizes by it (inner pages' cap, a small
    /// queue, a window); the caller evicts what no longer fits. A sample of a cache of
    /// `full_bytes` (else `full_bytes` is the budget): what the sized main compares with
    /// objects' sizes (given by [`Policy::insert_sized`]) is a share of the full budget,
    /// so a sample orders its objects as the full cache would.
    pub fn set_sampled_budget(&mut self, budget_bytes: u64, full_bytes: u64) {
        self.inner.cap = budget_bytes / 2;
        match &mut self.rest {
            Rule::S3Fifo(p) => p.set_budget(budget_bytes, full_bytes),
            Rule::Sieve(_) | Rule::Lru(_) => {}
            Rule::TinyLfu(p) => p.set_budget(budget_bytes),
        }
    }
}

/// Inner pages under CLOCK: one visited bit each, set by a hit.
struct InnerPages<K> {
    queue: VecDeque<K>,
    /// Weight and visited bit.
    meta: FxHashMap<K, (u64, bool)>,
    bytes: u64,
    cap: u64,
}

impl<K: Copy + Eq + Hash> InnerPages<K> {
    fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
        loop {
            let key = self.queue.pop_front()?;
            // A removed key's place (see `Policy::remove`).
            let Some(meta) = self.meta.get_mut(&key) else {
                continue;
            };
            if marks.take_hits(&key) > 0 || meta.1 {
                meta.1 = false;
                self.queue.push_back(key);
                continue;
            }
            let weight = meta.0;
            self.meta.remove(&key);
            self.bytes -= weight;
            return Some((key, weight));
        }
    }
}

/// The rule for every object but inner pages.
pub(crate) enum Rule<K> {
    S3Fifo(S3Fifo<K>),
    Sieve(Linked<K>),
    Lru(Linked<K>),
    TinyLfu(TinyLfu<K>),
}

impl<K: Copy + Eq + Hash> Rule<K> {
    fn new(policy: CachePolicy, budget_bytes: u64) -> Self {
        match policy {
            CachePolicy::S3FifoSized => Rule::S3Fifo(S3Fifo::new(budget_bytes, true)),
            CachePolicy::S3Fifo => Rule::S3Fifo(S3Fifo::new(budget_bytes, false)),
            CachePolicy::Sieve => Rule::Sieve(Linked::default()),
            CachePolicy::Lru => Rule::Lru(Linked::default()),
            CachePolicy::TinyLfu => Rule::TinyLfu(TinyLfu::new(budget_bytes)),
        }
    }

    fn contains(&self, key: &K) -> bool {
        match self {
            Rule::S3Fifo(p) => p.meta.contains_key(key),
            Rule::Sieve(p) | Rule::Lru(p) => p.index.contains_key(key),
            Rule::TinyLfu(p) => p.contains(key),
        }
    }

    fn touch(&mut self, key: &K) -> bool {
        match self {
            Rule::S3Fifo(p) => p
                .meta
                .get_mut(key)
                .map(|meta| meta.freq = (meta.freq + 1).min(MAX_FREQ))
                .is_some(),
            Rule::Sieve(p) => p
                .index
                .get(key)
                .map(|&slot| p.nodes[slot].visited = true)
                .is_some(),
            Rule::Lru(p) => p.move_to_head(key),
            Rule::TinyLfu(p) => p.touch(key),
        }
    }

    fn insert(&mut self, key: K, weight: u64, size: u64) {
        match self {
            Rule::S3Fifo(p) => p.insert(key, weight, size),
            Rule::Sieve(p) | Rule::Lru(p) => p.push(key, weight),
            Rule::TinyLfu(p) => p.insert(key, weight),
        }
    }

    fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
        match self {
            Rule::S3Fifo(p) => p.evict(marks),
            Rule::Sieve(p) => p.evict_sieve(marks),
            Rule::Lru(p) => p.pop_tail(),
            Rule::TinyLfu(p) => p.evict(marks),
        }
    }

    fn remove(&mut self, key: &K) -> Option<u64> {
        match self {
            Rule::S3Fifo(p) => p.remove(key),
            Rule::Sieve(p) | Rule::Lru(p) => {
                let slot = *p.index.get(key)?;
                Some(p.unlink_keeping_hand(slot))
            }
            Rule::TinyLfu(p) => p.remove(key),
        }
    }

    fn retain(&mut self, keep: &impl Fn(&K) -> bool) -> u64 {
        match self {
            Rule::S3Fifo(p) => p.retain(keep),
            Rule::Sieve(p) | Rule::Lru(p) => p.retain(keep),
            Rule::TinyLfu(p) => p.retain(keep),
        }
    }
}

/// Hits in the small queue that move an object to main (the paper's first setting; its
/// later one is 2).
const PROMOTE_HITS: u8 = 1;
/// The most hits an object's count keeps: main gives an object one more round per hit
/// counted (the paper keeps up to 3; 1 makes main a CLOCK).
const MAX_FREQ: u8 = 1;

#[derive(Clone, Copy)]
struct Meta {
    weight: u64,
    /// The size the sized main orders it by: its weight, or for a sampled object the size
    /// it stands for (saturating).
    size: u32,
    freq: u8,
    /// In the small queue (else in main). A queue entry whose key has no metadata, or
    /// metadata of the other queue, or (in main) another place, is the place of a removed
    /// key and is skipped.
    small: bool,
    /// The number of its entry in main (see [`Main::push`]).
    place: u64,
    /// 1, and one more for each round main gave it for hits (see [`SizedQueue`]).
    uses: u8,
}

impl Meta {
    /// Whether main's entry numbered `place` is this key's current one (not one left
    /// behind when the key was removed, requeued in main or queued in the small queue).
    fn owns_main_entry(&self, place: u64) -> bool {
        !self.small && self.place == place
    }
}

/// S3-FIFO's main queue: first in, first out, or in GreedyDual-Size order. Each entry
/// carries the number of its push, so a key removed and queued again is not mistaken for
/// its old entry.
enum Main<K> {
    Fifo {
        queue: VecDeque<(K, u64)>,
        pushed: u64,
    },
    Sized(SizedQueue<K>),
}

/// Keys in order of their places, `clock + uses/size` (in units of 2^-64) when pushed,
/// where the size is the object's (its weight, or the size a sampled object stands for) up
/// to `size_cap`, and `uses` is 1 and one more for each round main gave the key for hits,
/// up to `max_uses` (GreedyDual-Size-Frequency); the clock is the place of the last key
/// evicted, so places never fall behind it. Ties go first in, first out.
struct SizedQueue<K> {
    heap: BinaryHeap<Reverse<Place<K>>>,
    clock: u128,
    pushed: u64,
    size_cap: u64,
    max_uses: u8,
}

/// The most uses the sized main counts for an object (see [`SizedQueue`]).
const MAX_USES: u8 = 3;

/// The share of the budget from which the sized main orders objects as equals.
const SIZE_CAP_SHARE: u64 = 64;

fn size_cap(budget_bytes: u64) -> u64 {
    (budget_bytes / SIZE_CAP_SHARE).max(1)
}

struct Place<K> {
    at: u128,
    /// The push's number: breaks ties and tells a key's current entry from its old ones.
    number: u64,
    key: K,
}

impl<K> PartialEq for Place<K> {
    fn eq(&self, other: &Self) -> bool {
        self.number == other.number
    }
}

impl<K> Eq for Place<K> {}

impl<K> PartialOrd for Place<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Place<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.number).cmp(&(other.at, other.number))
    }
}

impl<K: Copy> Main<K> {
    fn is_empty(&self) -> bool {
        match self {
            Main::Fifo { queue, .. } => queue.is_empty(),
            Main::Sized(queue) => queue.heap.is_empty(),
        }
    }

    /// Queues `key` of `size` bytes, used `uses` times (see [`SizedQueue`]); returns its
    /// entry's number.
    fn push(&mut self, key: K, size: u32, uses: u8) -> u64 {
        match self {
            Main::Fifo { queue, pushed } => {
                *pushed += 1;
                queue.push_back((key, *pushed));
                *pushed
            }
            Main::Sized(queue) => {
                queue.pushed += 1;
                let size = u64::from(size).clamp(1, queue.size_cap);
                let uses = u128::from(uses.clamp(1, queue.max_uses));
                let at = queue.clock + uses * ((1u128 << 64) / u128::from(size));
                queue.heap.push(Reverse(Place {
                    at,
                    number: queue.pushed,
                    key,
                }));
                queue.pushed
            }
        }
    }

    /// The front key with its entry's number and place (0 in a FIFO).
    fn pop(&mut self) -> Option<(K, u64, u128)> {
        match self {
            Main::Fifo { queue, .. } => queue.pop_front().map(|(key, number)| (key, number, 0)),
            Main::Sized(queue) => queue
                .heap
                .pop()
                .map(|Reverse(place)| (place.key, place.number, place.at)),
        }
    }

    /// The key popped at `at` leaves the cache: the clock moves up to it.
    fn evicted(&mut self, at: u128) {
        if let Main::Sized(queue) = self {
            queue.clock = queue.clock.max(at);
        }
    }

    /// Keeps the entries `keep` accepts (key and place number).
    fn retain(&mut self, mut keep: impl FnMut(&K, u64) -> bool) {
        match self {
            Main::Fifo { queue, .. } => queue.retain(|(k, number)| keep(k, *number)),
            Main::Sized(queue) => queue
                .heap
                .retain(|Reverse(place)| keep(&place.key, place.number)),
        }
    }

    fn len(&self) -> usize {
        match self {
            Main::Fifo { queue, .. } => queue.len(),
            Main::Sized(queue) => queue.heap.len(),
        }
    }
}

/// The small queue's share of the budget: one part in this many. S3-FIFO's paper uses a
/// tenth; the sized main a twentieth (see [`CachePolicy::S3FifoSized`]).
const S3FIFO_SMALL_SHARE: u64 = 10;
const SIZED_SMALL_SHARE: u64 = 20;

/// S3-FIFO with byte weights: the small queue's share and the ghost's size are in bytes.
pub(crate) struct S3Fifo<K> {
    meta: FxHashMap<K, Meta>,
    small: VecDeque<K>,
    main: Main<K>,
    small_bytes: u64,
    small_target: u64,
    /// The small queue's share of the budget, one part in this many.
    small_share: u64,
    /// Keys recently evicted from the small queue, oldest first, with how many times each
    /// key is in the queue (a key can come back and leave again before its old entry ages).
    ghost: VecDeque<(K, u64)>,
    ghost_count: FxHashMap<K, u32>,
    ghost_bytes: u64,
    ghost_target: u64,
}

impl<K: Copy + Eq + Hash> S3Fifo<K> {
    fn new(budget_bytes: u64, sized: bool) -> Self {
        let share = match sized {
            true => SIZED_SMALL_SHARE,
            false => S3FIFO_SMALL_SHARE,
        };
        Self::with_small_share(budget_bytes, sized, share)
    }

    /// [`S3Fifo::new`] with a small queue of one part in `share` of the budget.
    fn with_small_share(budget_bytes: u64, sized: bool, share: u64) -> Self {
        let mut s3 = S3Fifo {
            meta: FxHashMap::default(),
            small: VecDeque::new(),
            main: match sized {
                true => Main::Sized(SizedQueue {
                    heap: BinaryHeap::new(),
                    clock: 0,
                    pushed: 0,
                    size_cap: size_cap(budget_bytes),
                    max_uses: MAX_USES,
                }),
                false => Main::Fifo {
                    queue: VecDeque::new(),
                    pushed: 0,
                },
            },
            small_bytes: 0,
            small_target: 0,
            small_share: share,
            ghost: VecDeque::new(),
            ghost_count: FxHashMap::default(),
            ghost_bytes: 0,
            ghost_target: 0,
        };
        s3.set_targets(budget_bytes);
        s3
    }

    /// The small queue's and the ghost's shares of `budget_bytes`.
    fn set_targets(&mut self, budget_bytes: u64) {
        self.small_target = budget_bytes / self.small_share;
        self.ghost_target = budget_bytes - self.small_target;
    }

    fn set_budget(&mut self, budget_bytes: u64, full_bytes: u64) {
        self.set_targets(budget_bytes);
        if let Main::Sized(queue) = &mut self.main {
            // Keys already queued keep their places; the next pushes take the new cap.
            queue.size_cap = size_cap(full_bytes);
        }
        self.trim_ghost();
    }

    fn retain(&mut self, keep: &impl Fn(&K) -> bool) -> u64 {
        let before: u64 = self.meta.values().map(|m| m.weight).sum();
        self.meta.retain(|k, _| keep(k));
        let after: u64 = self.meta.values().map(|m| m.weight).sum();
        // Each key keeps one place, in the queue its metadata names: the places of removed
        // keys go too.
        let meta = &self.meta;
        let mut placed = rustc_hash::FxHashSet::default();
        self.small
            .retain(|k| meta.get(k).is_some_and(|m| m.small) && placed.insert(*k));
        self.main.retain(|k, place| {
            meta.get(k).is_some_and(|m| m.owns_main_entry(place)) && placed.insert(*k)
        });
        self.small_bytes = self.small.iter().map(|k| self.meta[k].weight).sum();
        self.ghost.retain(|(k, _)| keep(k));
        self.ghost_count.retain(|k, _| keep(k));
        self.ghost_bytes = self.ghost.iter().map(|&(_, weight)| weight).sum();
        before - after
    }

    fn insert(&mut self, key: K, weight: u64, size: u64) {
        // Seen again soon after leaving the small queue: it belongs to the working set and
        // goes to main. Its ghost entry ages out in place.
        let small = match self.ghost_count.get_mut(&key) {
            Some(count) => {
                *count -= 1;
                if *count == 0 {
                    self.ghost_count.remove(&key);
                }
                false
            }
            None => true,
        };
        let meta = Meta {
            weight,
            size: u32::try_from(size).unwrap_or(u32::MAX),
            freq: 0,
            small,
            place: 0,
            uses: 1,
        };
        if small {
            self.meta.insert(key, meta);
            self.small.push_back(key);
            self.small_bytes += weight;
        } else {
            self.queue_in_main(key, meta);
        }
    }

    /// Queues `key` in main with `meta`'s weight and count.
    fn queue_in_main(&mut self, key: K, meta: Meta) {
        let place = self.main.push(key, meta.size, meta.uses);
        self.meta.insert(
            key,
            Meta {
                small: false,
                place,
                ..meta
            },
        );
    }

    /// Drops a key; its queue entry stays as a place that `evict` skips. Main's entries are
    /// swept when the places left outnumber the keys twice over (a heap, unlike a FIFO,
    /// may keep an old entry long from its front).
    fn remove(&mut self, key: &K) -> Option<u64> {
        let meta = self.meta.remove(key)?;
        if meta.small {
            self.small_bytes -= meta.weight;
        }
        if self.main.len() > 2 * self.meta.len() + 1024 {
            let meta = &self.meta;
            self.main
                .retain(|k, place| meta.get(k).is_some_and(|m| m.owns_main_entry(place)));
        }
        Some(meta.weight)
    }

    /// The key's frequency with the hits recorded outside the policy added, capped; `None`
    /// for a place left by a removed key (no metadata, metadata of the other queue, or of
    /// another place in main).
    fn freq(&mut self, key: &K, small: bool, place: u64, marks: &mut dyn Marks<K>) -> Option<Meta> {
        let meta = self.meta.get_mut(key).filter(|m| match small {
            true => m.small,
            false => m.owns_main_entry(place),
        })?;
        let hits = marks.take_hits(key);
        meta.freq = (meta.freq as u32 + hits).min(MAX_FREQ as u32) as u8;
        Some(*meta)
    }

    fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
        loop {
            if self.small_bytes > self.small_target || self.main.is_empty() {
                let key = self.small.pop_front()?;
                let Some(meta) = self.freq(&key, true, 0, marks) else {
                    continue;
                };
                self.small_bytes -= meta.weight;
                if meta.freq >= PROMOTE_HITS {
                    self.queue_in_main(key, Meta { freq: 0, ..meta });
                    continue;
                }
                self.meta.remove(&key);
                self.remember(key, meta.weight);
                return Some((key, meta.weight));
            }
            // Only places of removed keys were left in main: the small queue is next.
            let Some((key, place, at)) = self.main.pop() else {
                continue;
            };
            let Some(meta) = self.freq(&key, false, place, marks) else {
                continue;
            };
            if meta.freq > 0 {
                self.queue_in_main(
                    key,
                    Meta {
                        freq: meta.freq - 1,
                        uses: meta.uses.saturating_add(1),
                        ..meta
                    },
                );
                continue;
            }
            self.main.evicted(at);
            self.meta.remove(&key);
            return Some((key, meta.weight));
        }
    }

    fn remember(&mut self, key: K, weight: u64) {
        *self.ghost_count.entry(key).or_default() += 1;
        self.ghost.push_back((key, weight));
        self.ghost_bytes += weight;
        self.trim_ghost();
    }

    fn trim_ghost(&mut self) {
        while self.ghost_bytes > self.ghost_target {
            let Some((old, weight)) = self.ghost.pop_front() else {
                break;
            };
            self.ghost_bytes -= weight;
            if let Some(count) = self.ghost_count.get_mut(&old) {
                *count -= 1;
                if *count == 0 {
                    self.ghost_count.remove(&old);
                }
            }
        }
    }
}

const NIL: usize = usize::MAX;

struct LinkNode<K> {
    key: K,
    weight: u64,
    visited: bool,
    prev: usize,
    next: usize,
}

/// A doubly linked list in a slab, newest at the head: LRU moves hits to the head, SIEVE
/// marks them and sweeps a hand from the tail.
pub(crate) struct Linked<K> {
    index: FxHashMap<K, usize>,
    nodes: Vec<LinkNode<K>>,
    free: Vec<usize>,
    head: usize,
    tail: Option<usize>,
    hand: Option<usize>,
}

impl<K> Default for Linked<K> {
    fn default() -> Self {
        Linked {
            index: FxHashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: None,
            hand: None,
        }
    }
}

impl<K: Copy + Eq + Hash> Linked<K> {
    fn alloc(&mut self, key: K, weight: u64) -> usize {
        let node = LinkNode {
            key,
            weight,
            visited: false,
            prev: NIL,
            next: NIL,
        };
        match self.free.pop() {
            Some(slot) => {
                self.nodes[slot] = node;
                slot
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        }
    }

    /// Adds `key` at the head (newest).
    fn push(&mut self, key: K, weight: u64) {
        let slot = self.alloc(key, weight);
        self.push_head(slot);
        self.index.insert(key, slot);
    }

    fn move_to_head(&mut self, key: &K) -> bool {
        let Some(&slot) = self.index.get(key) else {
            return false;
        };
        self.unlink(slot);
        self.push_head(slot);
        true
    }

    fn pop_tail(&mut self) -> Option<(K, u64)> {
        let slot = self.tail?;
        Some(self.remove(slot))
    }

    fn push_head(&mut self, slot: usize) {
        self.nodes[slot].prev = NIL;
        self.nodes[slot].next = self.head;
        if self.head != NIL {
            self.nodes[self.head].prev = slot;
        }
        self.head = slot;
        if self.tail.is_none() {
            self.tail = Some(slot);
        }
    }

    fn unlink(&mut self, slot: usize) {
        let (prev, next) = (self.nodes[slot].prev, self.nodes[slot].next);
        if prev != NIL {
            self.nodes[prev].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.nodes[next].prev = prev;
        } else {
            self.tail = (prev != NIL).then_some(prev);
        }
    }

    fn remove(&mut self, slot: usize) -> (K, u64) {
        self.unlink(slot);
        self.free.push(slot);
        let node = &self.nodes[slot];
        self.index.remove(&node.key);
        (node.key, node.weight)
    }

    /// Unlinks every key `keep` refuses; SIEVE's hand, if on one, moves to its newer
    /// neighbour as after an eviction.
    fn retain(&mut self, keep: &impl Fn(&K) -> bool) -> u64 {
        let gone: Vec<usize> = self
            .index
            .iter()
            .filter(|(k, _)| !keep(k))
            .map(|(_, &slot)| slot)
            .collect();
        gone.into_iter()
            .map(|slot| self.unlink_keeping_hand(slot))
            .sum()
    }

    /// Removes a node; SIEVE's hand, if on it, moves to its newer neighbour as after an
    /// eviction. Returns its weight.
    fn unlink_keeping_hand(&mut self, slot: usize) -> u64 {
        if self.hand == Some(slot) {
            let prev = self.nodes[slot].prev;
            self.hand = (prev != NIL).then_some(prev);
        }
        self.remove(slot).1
    }

    /// SIEVE: from the hand (or the tail), clear visited bits towards the head until an
    /// unvisited node; evict it and leave the hand on its newer neighbour.
    fn evict_sieve(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
        let mut slot = self.hand.or(self.tail)?;
        loop {
            if marks.take_hits(&self.nodes[slot].key) > 0 {
                self.nodes[slot].visited = true;
            }
            if !self.nodes[slot].visited {
                break;
            }
            self.nodes[slot].visited = false;
            slot = match self.nodes[slot].prev {
                NIL => self.tail?,
                prev => prev,
            };
        }
        let prev = self.nodes[slot].prev;
        self.hand = (prev != NIL).then_some(prev);
        Some(self.remove(slot))
    }
}

/// The window's share of the budget, in hundredths (Caffeine's starting share).
const WINDOW_PERCENT: u64 = 1;
/// The protected segment's share of the main cache, in hundredths.
const PROTECTED_PERCENT: u64 = 80;

#[derive(Clone, Copy)]
enum Segment {
    Window,
    Probation,
    Protected,
}

#[derive(Clone, Copy)]
struct TinyMeta {
    weight: u64,
    /// Hits not yet counted in the sketch.
    hits: u32,
}

/// W-TinyLFU with byte weights, each segment's share in bytes. Its queues are FIFOs that
/// look at hits only when an object reaches their front (as S3-FIFO's do), so the live cache
/// never hands the policy a hit: the window is a FIFO, probation promotes an object hit
/// since it entered to protected, and protected is a CLOCK that gives an object hit since
/// its last pass another round. A hit reaches the sketch when its object is looked at.
pub(crate) struct TinyLfu<K> {
    meta: FxHashMap<K, TinyMeta>,
    window: VecDeque<K>,
    probation: VecDeque<K>,
    protected: VecDeque<K>,
    window_bytes: u64,
    probation_bytes: u64,
    protected_bytes: u64,
    window_target: u64,
    main_target: u64,
    protected_target: u64,
    sketch: Sketch,
}

impl<K: Copy + Eq + Hash> TinyLfu<K> {
    fn new(budget_bytes: u64) -> Self {
        let window_target = budget_bytes * WINDOW_PERCENT / 100;
        let main_target = budget_bytes - window_target;
        TinyLfu {
            meta: FxHashMap::default(),
            window: VecDeque::new(),
            probation: VecDeque::new(),
            protected: VecDeque::new(),
            window_bytes: 0,
            probation_bytes: 0,
            protected_bytes: 0,
            window_target,
            main_target,
            protected_target: main_target * PROTECTED_PERCENT / 100,
            // About one counter per 1 KiB of budget: more than the objects the cache holds.
            sketch: Sketch::new((budget_bytes / 1024) as usize),
        }
    }

    fn contains(&self, key: &K) -> bool {
        self.meta.contains_key(key)
    }

    fn set_budget(&mut self, budget_bytes: u64) {
        self.window_target = budget_bytes * WINDOW_PERCENT / 100;
        self.main_target = budget_bytes - self.window_target;
        self.protected_target = self.main_target * PROTECTED_PERCENT / 100;
    }

    fn retain(&mut self, keep: &impl Fn(&K) -> bool) -> u64 {
        let before: u64 = self.meta.values().map(|m| m.weight).sum();
        self.meta.retain(|k, _| keep(k));
        let meta = &self.meta;
        let sums = [&mut self.window, &mut self.probation, &mut self.protected].map(|queue| {
            queue.retain(|k| keep(k));
            queue.iter().map(|k| meta[k].weight).sum::<u64>()
        });
        [
            self.window_bytes,
            self.probation_bytes,
            self.protected_bytes,
        ] = sums;
        before - sums.iter().sum::<u64>()
    }

    fn touch(&mut self, key: &K) -> bool {
        self.meta
            .get_mut(key)
            .map(|meta| meta.hits = meta.hits.saturating_add(1))
            .is_some()
    }

    /// Drops a key from whichever segment holds it (a search of the segments: W-TinyLFU is
    /// kept for comparison, and its fronts are read in place).
    fn remove(&mut self, key: &K) -> Option<u64> {
        let weight = self.meta.get(key)?.weight;
        for segment in [Segment::Window, Segment::Probation, Segment::Protected] {
            let queue = self.queue(segment);
            if let Some(at) = queue.iter().position(|k| k == key) {
                queue.remove(at);
                *self.bytes(segment) -= weight;
                break;
            }
        }
        self.meta.remove(key);
        Some(weight)
    }

    fn insert(&mut self, key: K, weight: u64) {
        self.sketch.increment(&key);
        self.meta.insert(key, TinyMeta { weight, hits: 0 });
        self.window.push_back(key);
        self.window_bytes += weight;
        self.drain_window();
    }

    /// Moves what leaves the window to probation while the main cache has room for it,
    /// its hits kept for probation to count.
    fn drain_window(&mut self) {
        while self.window_bytes > self.window_target {
            let Some(key) = self.window.front() else {
                break;
            };
            let weight = self.meta[key].weight;
            if self.probation_bytes + self.protected_bytes + weight > self.main_target {
                break;
            }
            self.move_front(Segment::Window, Segment::Probation);
        }
    }

    /// Counts `key`'s hits since it was last looked at into the sketch; returns them.
    fn settle(&mut self, key: &K, marks: &mut dyn Marks<K>) -> u32 {
        let recorded = marks.take_hits(key);
        let meta = self.meta.get_mut(key).expect("queued keys have metadata");
        let hits = std::mem::take(&mut meta.hits).saturating_add(recorded);
        for _ in 0..hits.min(SKETCH_MAX as u32) {
            self.sketch.increment(key);
        }
        hits
    }

    fn bytes(&mut self, segment: Segment) -> &mut u64 {
        match segment {
            Segment::Window => &mut self.window_bytes,
            Segment::Probation => &mut self.probation_bytes,
            Segment::Protected => &mut self.protected_bytes,
        }
    }

    fn queue(&mut self, segment: Segment) -> &mut VecDeque<K> {
        match segment {
            Segment::Window => &mut self.window,
            Segment::Probation => &mut self.probation,
            Segment::Protected => &mut self.protected,
        }
    }

    /// Moves the object at the front of `from` to the back of `to`.
    fn move_front(&mut self, from: Segment, to: Segment) {
        let key = self.queue(from).pop_front().expect("a front to move");
        let weight = self.meta[&key].weight;
        *self.bytes(from) -= weight;
        *self.bytes(to) += weight;
        self.queue(to).push_back(key);
    }

    /// Removes the object at the front of `segment`.
    fn remove_front(&mut self, segment: Segment) -> (K, u64) {
        let key = self.queue(segment).pop_front().expect("a front to remove");
        let weight = self
            .meta
            .remove(&key)
            .expect("queued keys have metadata")
            .weight;
        *self.bytes(segment) -= weight;
        (key, weight)
    }

    /// The main cache's next victim, left at the front of its segment: probation's first
    /// object not hit since it entered (those hit move to protected), or, with probation
    /// empty, protected's first not hit since its last pass.
    fn main_victim(&mut self, marks: &mut dyn Marks<K>) -> Option<(Segment, K)> {
        loop {
            if let Some(&key) = self.probation.front() {
                if self.settle(&key, marks) == 0 {
                    return Some((Segment::Probation, key));
                }
                self.move_front(Segment::Probation, Segment::Protected);
                while self.protected_bytes > self.protected_target {
                    self.move_front(Segment::Protected, Segment::Probation);
                }
                continue;
            }
            let &key = self.protected.front()?;
            if self.settle(&key, marks) == 0 {
                return Some((Segment::Protected, key));
            }
            self.move_front(Segment::Protected, Segment::Protected);
        }
    }

    fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
        self.drain_window();
        // Room is made before the newcomer enters the window: a full window's oldest
        // leaves it now and must win its place.
        if !self.window.is_empty() && self.window_bytes >= self.window_target {
            let &candidate = self
                .window
                .front()
                .expect("a window over its share has objects");
            self.settle(&candidate, marks);
            let Some((segment, victim)) = self.main_victim(marks) else {
                return Some(self.remove_front(Segment::Window));
            };
            // The admission filter: the candidate takes the victim's place only if it was
            // asked for more often.
            if self.sketch.estimate(&candidate) > self.sketch.estimate(&victim) {
                let evicted = self.remove_front(segment);
                self.move_front(Segment::Window, Segment::Probation);
                return Some(evicted);
            }
            return Some(self.remove_front(Segment::Window));
        }
        match self.main_victim(marks) {
            Some((segment, _)) => Some(self.remove_front(segment)),
            None if self.window.is_empty() => None,
            None => Some(self.remove_front(Segment::Window)),
        }
    }
}

/// A count-min sketch of 4-bit counters (kept in bytes) over four rows, halved once it has
/// counted ten times its width, so old popularity fades.
struct Sketch {
    counters: Vec<u8>,
    mask: usize,
    additions: u64,
    period: u64,
}

const SKETCH_ROWS: usize = 4;
const SKETCH_MAX: u8 = 15;

impl Sketch {
    fn new(width: usize) -> Self {
        let width = width.clamp(256, 1 << 24).next_power_of_two();
        Sketch {
            counters: vec![0; width * SKETCH_ROWS],
            mask: width - 1,
            additions: 0,
            period: 10 * width as u64,
        }
    }

    fn slots<K: Hash>(&self, key: &K) -> [usize; SKETCH_ROWS] {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let hash = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(key);
        let width = self.mask + 1;
        std::array::from_fn(|row| {
            // splitmix64's finalizer over the hash plus a seed per row: four slots as good
            // as independent.
            let mut x = hash.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(row as u64 + 1));
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^= x >> 31;
            row * width + (x as usize & self.mask)
        })
    }

    fn increment<K: Hash>(&mut self, key: &K) {
        let mut grew = false;
        for slot in self.slots(key) {
            if self.counters[slot] < SKETCH_MAX {
                self.counters[slot] += 1;
                grew = true;
            }
        }
        if grew {
            self.additions += 1;
            if self.additions >= self.period {
                for counter in &mut self.counters {
                    *counter /= 2;
                }
                self.additions /= 2;
            }
        }
    }

    fn estimate<K: Hash>(&self, key: &K) -> u8 {
        self.slots(key)
            .into_iter()
            .map(|slot| self.counters[slot])
            .min()
            .unwrap_or(0)
    }
}

/// A policy and a byte budget, fed one request at a time: replays a trace, or a sample of
/// one for the what-if estimate.
pub struct Simulator<K> {
    policy: Policy<K>,
    budget_bytes: u64,
    resident_bytes: u64,
    /// Requests replayed so far.
    pub requests: u64,
    /// Requests that hit.
    pub hits: u64,
}

impl<K: Copy + Eq + Hash> Simulator<K> {
    /// An empty cache of `budget_bytes` under `policy`.
    pub fn new(policy: CachePolicy, budget_bytes: u64) -> Self {
        Simulator {
            policy: Policy::new(policy, budget_bytes),
            budget_bytes,
            resident_bytes: 0,
            requests: 0,
            hits: 0,
        }
    }

    /// One request for `key` of `weight` bytes; true on a hit. Objects larger than the
    /// budget are never kept.
    pub fn access(&mut self, key: K, weight: u64) -> bool {
        self.access_as(key, weight, false)
    }

    /// [`Simulator::access`] for an object that is a B+tree inner page when `inner`.
    pub fn access_as(&mut self, key: K, weight: u64, inner: bool) -> bool {
        self.access_sized(key, weight, weight, inner)
    }

    /// [`Simulator::access_as`] for a sampled object that weighs `weight` bytes here and
    /// stands for one of `size` bytes (see [`Policy::insert_sized`]).
    pub(crate) fn access_sized(&mut self, key: K, weight: u64, size: u64, inner: bool) -> bool {
        self.requests += 1;
        if self.policy.touch_as(&key, inner) {
            self.hits += 1;
            return true;
        }
        if weight <= self.budget_bytes {
            while self.resident_bytes + weight > self.budget_bytes {
                let Some((_, evicted)) = self.policy.evict(&mut NoMarks) else {
                    break;
                };
                self.resident_bytes -= evicted;
            }
            self.policy.insert_sized(key, weight, size, inner);
            self.resident_bytes += weight;
        }
        false
    }

    /// Forgets `key`, as if it had never been asked for (the live cache's
    /// [`drop`](crate::cache::PageCache) of an object no reader of the current version can
    /// ask for); true if it was resident.
    pub fn remove(&mut self, key: &K) -> bool {
        match self.policy.remove(key) {
            Some(weight) => {
                self.resident_bytes -= weight;
                true
            }
            None => false,
        }
    }

    /// Forgets every object `keep` refuses, as if it had never been asked for.
    pub fn retain(&mut self, keep: impl Fn(&K) -> bool) {
        self.resident_bytes -= self.policy.retain(keep);
    }

    /// Changes the budget; a smaller one evicts, by the policy, until the objects fit.
    pub fn set_budget(&mut self, budget_bytes: u64) {
        self.set_sampled_budget(budget_bytes, budget_bytes);
    }

    /// [`Simulator::set_budget`] for a sample of a cache of `full_bytes` (see
    /// [`Policy::set_sampled_budget`]).
    pub(crate) fn set_sampled_budget(&mut self, budget_bytes: u64, full_bytes: u64) {
        self.budget_bytes = budget_bytes;
        self.policy.set_sampled_budget(budget_bytes, full_bytes);
        while self.resident_bytes > budget_bytes {
            let Some((_, evicted)) = self.policy.evict(&mut NoMarks) else {
                break;
            };
            self.resident_bytes -= evicted;
        }
    }

    /// hits / requests, or 0 with no requests.
    pub fn hit_ratio(&self) -> f64 {
        ratio(self.hits, self.requests)
    }

    /// Bytes of the objects held now.
    pub fn resident_bytes(&self) -> u64 {
        self.resident_bytes
    }
}

pub(crate) fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn replay(policy: CachePolicy, budget: u64, trace: &[(u64, u64)]) -> Simulator<u64> {
        let mut sim = Simulator::new(policy, budget);
        for &(key, weight) in trace {
            sim.access(key, weight);
            assert!(sim.resident_bytes() <= budget);
        }
        sim
    }

    #[test]
    fn lru_evicts_least_recent() {
        let mut sim = Simulator::new(CachePolicy::Lru, 3);
        for key in [1, 2, 3, 1, 4] {
            sim.access(key, 1);
        }
        // 2 was least recently used when 4 came.
        assert!(sim.access(1, 1));
        assert!(sim.access(3, 1));
        assert!(!sim.access(2, 1));
    }

    #[test]
    fn sieve_keeps_visited() {
        let mut sim = Simulator::new(CachePolicy::Sieve, 3);
        for key in [1, 2, 3, 1, 4] {
            sim.access(key, 1);
        }
        // 1 was visited, so 2 (the oldest unvisited) went.
        assert!(sim.access(1, 1));
        assert!(!sim.access(2, 1));
    }

    #[test]
    fn s3fifo_resists_a_scan() {
        // A hot set hit often, then a long scan of objects seen once: S3-FIFO keeps the hot
        // set, LRU loses it.
        let mut trace = Vec::new();
        for round in 0..20 {
            for key in 0..50 {
                trace.push((key, 10));
            }
            if round == 10 {
                for key in 1000..3000 {
                    trace.push((key, 10));
                }
            }
        }
        let s3 = replay(CachePolicy::S3Fifo, 1000, &trace);
        let lru = replay(CachePolicy::Lru, 1000, &trace);
        // Only the first round misses under S3-FIFO; LRU misses the hot set again after
        // the scan.
        assert_eq!(s3.hits, 19 * 50);
        assert_eq!(lru.hits, 18 * 50);
    }

    #[test]
    fn s3fifo_moves_an_object_hit_once_to_main() {
        // Key 0 is hit once while in the small queue, then 200 keys seen once each flood the
        // cache (100 objects fit). Hit once is enough to move it to main, so it outlives the
        // flood; the rest leave through the small queue.
        let mut trace = vec![(0, 10), (0, 10)];
        trace.extend((1..=200).map(|key| (key, 10)));
        trace.push((0, 10));
        let s3 = replay(CachePolicy::S3Fifo, 1000, &trace);
        assert_eq!(s3.hits, 2);
        let lru = replay(CachePolicy::Lru, 1000, &trace);
        assert_eq!(lru.hits, 1);
    }

    #[test]
    fn tinylfu_admits_only_what_was_asked_for_more_often() {
        // 100 objects fill the cache (window 1 object); keys 0-9 are asked for often. A
        // flood of keys seen once each never displaces them: every newcomer loses the
        // admission against main's victim.
        let mut trace = Vec::new();
        for _ in 0..5 {
            trace.extend((0..100).map(|key| (key, 10)));
            trace.extend((0..10).map(|key| (key, 10)));
        }
        trace.extend((1000..3000).map(|key| (key, 10)));
        trace.extend((0..10).map(|key| (key, 10)));
        let sim = replay(CachePolicy::TinyLfu, 1000, &trace);
        let lru = replay(CachePolicy::Lru, 1000, &trace);
        // The first pass misses all 100 and the flood its 2,000; everything else hits.
        assert_eq!(sim.hits, trace.len() as u64 - 2_100);
        // LRU loses the ten to the flood.
        assert_eq!(lru.hits, sim.hits - 10);
    }

    #[test]
    fn tinylfu_lets_a_newly_popular_object_in() {
        // Key 500 arrives after the cache is full of objects asked for twice, among
        // objects seen once each. Turned away while the main cache's objects were asked
        // for as often, it wins its place once asked for more often than they were.
        let mut trace = Vec::new();
        for _ in 0..2 {
            trace.extend((0..100).map(|key| (key, 10)));
        }
        let mut sim = Simulator::new(CachePolicy::TinyLfu, 1000);
        for &(key, weight) in &trace {
            sim.access(key, weight);
        }
        let mut once = 1000..;
        let mut hits = Vec::new();
        for _ in 0..5 {
            hits.push(sim.access(500, 10));
            for key in once.by_ref().take(5) {
                sim.access(key, 10);
            }
        }
        // Missed while its count was at most the residents' (2), kept from then on.
        assert_eq!(hits, [false, false, false, true, true]);
        // Of the one-time objects only the last, still in the window, is held.
        let held = (1000..1025).filter(|key| sim.policy.contains(key)).count();
        assert_eq!(held, 1);
    }

    /// A reproducible stream of numbers (a linear congruential generator's high bits).
    fn numbers(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            x >> 33
        }
    }

    /// A key's weight in the tests that mix keys: 512 bytes to 6.5 KiB.
    fn weight(key: u64) -> u64 {
        512 + (key % 7) * 1024
    }

    /// Makes a sized main count uses up to `max_uses`.
    fn count_uses_up_to(s3: &mut S3Fifo<u64>, max_uses: u8) {
        match &mut s3.main {
            Main::Sized(queue) => queue.max_uses = max_uses,
            Main::Fifo { .. } => panic!("not a sized main"),
        }
    }

    /// The sized main with its uses counted up to `max_uses`.
    fn with_max_uses(mut sim: Simulator<u64>, max_uses: u8) -> Simulator<u64> {
        match &mut sim.policy.rest {
            Rule::S3Fifo(s3) => count_uses_up_to(s3, max_uses),
            _ => panic!("not S3-FIFO"),
        }
        sim
    }

    #[test]
    fn a_sized_main_with_equal_weights_and_one_use_decides_as_s3fifo() {
        // With every object the same size and its uses not counted, a place in the sized
        // main is the clock plus one constant, so keys leave in the order they entered:
        // S3-FIFO's, request for request.
        let mut next = numbers(5);
        // S3-FIFO with the sized main's small queue, a twentieth of the budget.
        let mut fifo = Simulator::new(CachePolicy::S3Fifo, 64 * 100);
        let share = SIZED_SMALL_SHARE;
        fifo.policy.rest = Rule::S3Fifo(S3Fifo::with_small_share(64 * 100, false, share));
        let mut sized = with_max_uses(Simulator::new(CachePolicy::S3FifoSized, 64 * 100), 1);
        let mut hits = 0;
        for i in 0..50_000 {
            // A skewed mix: half the requests to 150 keys, half to 5,000.
            let key = match next() % 2 {
                0 => next() % 150,
                _ => next() % 5_000,
            };
            if i % 97 == 0 {
                assert_eq!(fifo.remove(&key), sized.remove(&key), "{i}");
            }
            let hit = fifo.access(key, 64);
            assert_eq!(hit, sized.access(key, 64), "request {i}, key {key}");
            hits += u64::from(hit);
        }
        assert!(hits > 10_000 && hits < 40_000, "{hits}");
    }

    /// The keys `s3` gives up, in order, after `entries` entered its main queue in turn
    /// (key `i` weighing `entries[i].0` and ordered by the size `entries[i].1`), none hit.
    fn main_order_of(mut s3: S3Fifo<u64>, entries: &[(u64, u32)]) -> Vec<u64> {
        for (key, &(weight, size)) in entries.iter().enumerate() {
            let meta = Meta {
                weight,
                size,
                freq: 0,
                small: false,
                place: 0,
                uses: 1,
            };
            s3.queue_in_main(key as u64, meta);
        }
        std::iter::from_fn(|| s3.evict(&mut NoMarks).map(|(key, _)| key)).collect()
    }

    #[test]
    fn a_sized_main_places_an_object_as_far_as_its_uses_up_to_three() {
        let mut main = Main::Sized(SizedQueue {
            heap: BinaryHeap::new(),
            clock: 0,
            pushed: 0,
            size_cap: 1 << 20,
            max_uses: MAX_USES,
        });
        // Used three times at three times the size: the place of one use at the size.
        main.push(0u64, 100, 1);
        main.push(1, 100, 3);
        main.push(2, 300, 3);
        main.push(3, 100, 2);
        // Uses past the most counted count as the most; none counts as one (a half size
        // used once is placed as the whole used twice, and ties go first in, first out).
        main.push(4, 100, 9);
        main.push(5, 50, 0);
        let places: Vec<(u64, u128)> = std::iter::from_fn(|| main.pop())
            .map(|(key, _, at)| (key, at))
            .collect();
        let unit = (1u128 << 64) / 100;
        let half = (1u128 << 64) / 50;
        assert_eq!(
            places,
            [
                (0, unit),
                (2, 3 * ((1u128 << 64) / 300)),
                (3, 2 * unit),
                (5, half),
                (1, 3 * unit),
                (4, 3 * unit),
            ]
        );
    }

    /// Hits by key, taken once each.
    struct Hits(Vec<(u64, u32)>);

    impl Marks<u64> for Hits {
        fn take_hits(&mut self, key: &u64) -> u32 {
            match self.0.iter_mut().find(|(k, hits)| k == key && *hits > 0) {
                Some((_, hits)) => std::mem::take(hits),
                None => 0,
            }
        }
    }

    /// The keys a sized main counting up to `max_uses` gives up, in order: keys 0 to 3
    /// enter; 0 is hit before each of its first two turns at the front, 1 before its
    /// first; key 4 enters after the first key leaves, key 5 after the third.
    fn hit_keys_order(max_uses: u8) -> Vec<u64> {
        let mut s3 = S3Fifo::new(1 << 20, true);
        count_uses_up_to(&mut s3, max_uses);
        let meta = Meta {
            weight: 100,
            size: 100,
            freq: 0,
            small: false,
            place: 0,
            uses: 1,
        };
        for key in 0..4u64 {
            s3.queue_in_main(key, meta);
        }
        let mut marks = Hits(vec![(0, 1), (1, 1), (0, 1)]);
        let mut order = Vec::new();
        for (after, key) in [(1, 4), (3, 5)] {
            while order.len() < after {
                order.push(s3.evict(&mut marks).expect("a key to evict").0);
            }
            s3.queue_in_main(key, meta);
        }
        order.extend(std::iter::from_fn(|| {
            s3.evict(&mut marks).map(|(key, _)| key)
        }));
        order
    }

    #[test]
    fn a_sized_main_keeps_an_object_hit_at_each_turn_past_newer_ones() {
        // Counting uses, 0's second hit places it three units past the clock, past key 5,
        // which entered after it was requeued; counting one use, it leaves before 5.
        assert_eq!(hit_keys_order(MAX_USES), [2, 3, 1, 4, 5, 0]);
        assert_eq!(hit_keys_order(1), [2, 3, 1, 4, 0, 5]);
    }

    /// [`main_order_of`] a main queue of `budget`, each key ordered by its weight.
    fn main_order(sized: bool, budget: u64, weights: &[u64]) -> Vec<u64> {
        let entries: Vec<(u64, u32)> = weights.iter().map(|&w| (w, w as u32)).collect();
        main_order_of(S3Fifo::new(budget, sized), &entries)
    }

    #[test]
    fn a_sized_main_evicts_a_large_object_before_small_ones_that_entered_with_it() {
        // Under a sixty-fourth of the budget the larger of two objects has the earlier
        // place, where a FIFO gives up the first in.
        let weights = [100, 400, 100, 50];
        assert_eq!(main_order(true, 64_000, &weights), [1, 0, 2, 3]);
        assert_eq!(main_order(false, 64_000, &weights), [0, 1, 2, 3]);
    }

    #[test]
    fn a_sized_main_orders_objects_of_a_sixty_fourth_of_the_budget_or_more_as_equals() {
        // Budget 64,000: sizes count up to 1,000 bytes. Key 1 (50,000 bytes) and key 0
        // (exactly the cap) take equal places and leave first in, first out; key 2 (999)
        // and key 3 (500) are smaller and stay longer, the smallest last.
        assert_eq!(
            main_order(true, 64_000, &[1_000, 50_000, 999, 500]),
            [0, 1, 2, 3]
        );
        // One byte under the cap is ordered by its size: the large one goes first.
        assert_eq!(main_order(true, 64_000, &[999, 50_000]), [1, 0]);
        // The cap follows the budget: at 128,000 the large one is ordered as 2,000 bytes.
        let mut s3: S3Fifo<u64> = S3Fifo::new(64_000, true);
        s3.set_budget(128_000, 128_000);
        let entries = [(1_999, 1_999), (50_000, 50_000), (2_000, 2_000)];
        assert_eq!(main_order_of(s3, &entries), [1, 2, 0]);
    }

    #[test]
    fn a_sampled_sized_main_orders_objects_by_the_sizes_they_stand_for() {
        // A sample of 1,000 bytes standing for a cache of 64,000: sizes count up to 1,000
        // (a sixty-fourth of the full budget, not of the sample's), and each object is
        // ordered by the size it stands for, not the 10 bytes it weighs here.
        let order = |full: u64| {
            let mut p: Policy<u64> = Policy::new(CachePolicy::S3FifoSized, 1000);
            p.set_sampled_budget(1000, full);
            let Rule::S3Fifo(s3) = p.rest else {
                unreachable!("the sized main is S3-FIFO's")
            };
            main_order_of(s3, &[(10, 500), (10, 50_000), (10, 999)])
        };
        assert_eq!(order(64_000), [1, 2, 0]);
        // Not sampled, the cap is 15 bytes: every one of them is ordered as 15, in turn.
        assert_eq!(order(1000), [0, 1, 2]);
    }

    #[test]
    fn a_sized_main_sweeps_the_places_removed_keys_leave() {
        // Keys that enter main and are removed leave their entries in the heap; the heap
        // is swept before they outnumber the keys twice over (plus a margin).
        let mut s3: S3Fifo<u64> = S3Fifo::new(1 << 30, true);
        let meta = Meta {
            weight: 10,
            size: 10,
            freq: 0,
            small: false,
            place: 0,
            uses: 1,
        };
        for key in 0..100 {
            s3.queue_in_main(key, meta);
        }
        for key in 100..20_000 {
            s3.queue_in_main(key, meta);
            assert_eq!(s3.remove(&key), Some(10));
            assert!(
                s3.main.len() <= 2 * s3.meta.len() + 1025,
                "{key}: {}",
                s3.main.len()
            );
        }
        // The keys left are all there, in order, and nothing removed comes back.
        let left: Vec<u64> =
            std::iter::from_fn(|| s3.evict(&mut NoMarks).map(|(key, _)| key)).collect();
        assert_eq!(left, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn removed_keys_leave_at_once_and_come_back_as_new_ones() {
        for policy in CachePolicy::ALL {
            let mut sim = Simulator::new(policy, 256 << 10);
            let mut next = numbers(11);
            // What is resident, summed from the policy's own answers.
            let resident = |sim: &Simulator<u64>| -> u64 {
                (0..200)
                    .filter(|k| sim.policy.contains(k))
                    .map(weight)
                    .sum()
            };
            let (mut removed, mut hits) = (0, 0);
            for step in 0..20_000 {
                let key = next() % 200;
                if next().is_multiple_of(5) {
                    // Removed keys are asked for again later: each comes back as a new
                    // object, whatever place it left in a queue.
                    let was = sim.policy.contains(&key);
                    assert_eq!(sim.remove(&key), was, "{}", policy.name());
                    assert!(!sim.policy.contains(&key), "{}", policy.name());
                    removed += u64::from(was);
                } else {
                    let hit = sim.access_as(key, weight(key), key.is_multiple_of(40));
                    assert!(sim.policy.contains(&key), "{}", policy.name());
                    hits += u64::from(hit);
                }
                if step % 97 == 0 {
                    assert_eq!(sim.resident_bytes(), resident(&sim), "{}", policy.name());
                }
                assert!(sim.resident_bytes() <= 256 << 10, "{}", policy.name());
            }
            assert!(
                removed > 1_000 && hits > 5_000,
                "{} {removed} {hits}",
                policy.name()
            );
            // A retain after removals, then evicting everything: each resident key once,
            // exactly the resident bytes.
            sim.retain(|key| key % 3 != 0);
            assert_eq!(sim.resident_bytes(), resident(&sim), "{}", policy.name());
            let mut freed = 0;
            let mut seen = std::collections::HashSet::new();
            while let Some((key, weight)) = sim.policy.evict(&mut NoMarks) {
                assert!(seen.insert(key) && key % 3 != 0, "{}", policy.name());
                freed += weight;
            }
            assert_eq!(freed, sim.resident_bytes(), "{}", policy.name());
        }
    }

    #[test]
    fn retained_keys_are_all_that_is_left_and_a_smaller_budget_evicts() {
        for policy in CachePolicy::ALL {
            let mut sim = Simulator::new(policy, 64 << 10);
            let mut numbers = numbers(7);
            let mut next = move || numbers() % 300;
            for _ in 0..5_000 {
                let key = next();
                sim.access_as(key, weight(key), key % 50 == 0);
            }
            let before = sim.resident_bytes();
            sim.retain(|key| key % 2 == 0);
            assert!(sim.resident_bytes() < before, "{}", policy.name());
            assert!(
                (0..300)
                    .filter(|k| k % 2 == 1)
                    .all(|k| !sim.policy.contains(&k))
            );
            // Going on with the kept keys only, in a budget a quarter the size.
            sim.set_budget(16 << 10);
            assert!(sim.resident_bytes() <= 16 << 10, "{}", policy.name());
            let hits_before = sim.hits;
            for _ in 0..5_000 {
                let key = next() / 2 * 2;
                sim.access_as(key, weight(key), key % 50 == 0);
                assert!(sim.resident_bytes() <= 16 << 10);
            }
            assert!(sim.hits > hits_before, "{}", policy.name());
            // Evicting everything gives back exactly the resident bytes, no dropped key
            // among them.
            let mut freed = 0;
            while let Some((key, weight)) = sim.policy.evict(&mut NoMarks) {
                assert_eq!(key % 2, 0, "{}", policy.name());
                freed += weight;
            }
            assert_eq!(freed, sim.resident_bytes(), "{}", policy.name());
        }
    }

    #[test]
    fn sketch_counts_and_halves() {
        let mut sketch = Sketch::new(256);
        for _ in 0..20 {
            sketch.increment(&7u64);
        }
        sketch.increment(&8u64);
        assert_eq!(sketch.estimate(&7u64), SKETCH_MAX);
        assert!(sketch.estimate(&8u64) >= 1);
        assert_eq!(sketch.estimate(&9u64), 0, "an empty sketch over 1024 slots");
        // Ten times the width of additions halves every counter.
        for key in 0..2560u64 {
            sketch.increment(&(key + 100));
        }
        assert!(sketch.estimate(&7u64) <= SKETCH_MAX / 2 + 1);
    }

    #[test]
    fn inner_pages_outlive_leaves_up_to_half_the_budget() {
        for policy in CachePolicy::ALL {
            // Three inner pages asked for once, then a flood of leaves hit twice each:
            // every policy keeps the inner pages, LRU and the rest would not.
            let mut sim = Simulator::new(policy, 1000);
            for key in 0..3 {
                sim.access_as(key, 100, true);
            }
            for key in 100..400 {
                sim.access(key, 10);
                sim.access(key, 10);
            }
            for key in 0..3 {
                assert!(
                    sim.access_as(key, 100, true),
                    "{policy:?} lost inner page {key}"
                );
            }
            // Once past half of the budget, an inner page makes room from the other inner
            // pages, those not hit since the hand last passed first (CLOCK), so leaves keep
            // about half: 500 bytes of inner pages take leaves' room, the sixth and later
            // take inner pages'.
            for key in 3..8 {
                sim.access_as(key, 100, true);
            }
            assert!(sim.resident_bytes() <= 1000);
            let inner = (0..8).filter(|key| sim.policy.contains(key)).count();
            assert_eq!(inner, 6, "{policy:?}");
            assert!(!sim.policy.contains(&4), "{policy:?}");
            assert!(
                !sim.policy.contains(&3),
                "{policy:?}: the first inner page not hit again"
            );
            assert!(
                sim.policy.contains(&0),
                "{policy:?}: hit inner pages get another round"
            );
        }
    }

    #[test]
    fn too_large_objects_are_never_kept() {
        for policy in CachePolicy::ALL {
            let mut sim = Simulator::new(policy, 100);
            assert!(!sim.access(1, 101));
            assert!(!sim.access(1, 101));
            assert!(!sim.access(2, 100));
            assert!(sim.access(2, 100));
        }
    }

    #[test]
    fn every_policy_stays_in_budget_with_mixed_weights() {
        let mut state = 7u64;
        let trace: Vec<(u64, u64)> = (0..20_000)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                let key = (state >> 33) % 500;
                (key, 1 + key % 37)
            })
            .collect();
        for policy in CachePolicy::ALL {
            let sim = replay(policy, 2000, &trace);
            assert!(sim.hits > 0);
            assert!(belady_hits(&trace, 2000, 0) >= sim.hits, "{policy:?}");
        }
    }

    #[test]
    fn belady_on_a_textbook_trace() {
        // Capacity 3, unit sizes: on 7,0,1,2,0,3,0,4,2,3,0,3,2 demand paging (every miss
        // kept) has 6 hits; keeping nothing that is never asked for again (7 and 4) makes 7.
        let trace: Vec<(u64, u64)> = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2]
            .into_iter()
            .map(|k| (k, 1))
            .collect();
        assert_eq!(belady_hits(&trace, 3, 0), 7);
        assert_eq!(belady_hits(&trace, 1, 0), 3);
        assert_eq!(belady_hits(&trace, 0, 0), 0);
        assert_eq!(belady_hits(&trace, 100, 0), 13 - 6);
        // The first five requests are a warm-up: 0 at 4 is the only hit among them.
        assert_eq!(belady_hits(&trace, 3, 5), 7 - 1);
    }

    #[test]
    fn policy_names_round_trip() {
        for policy in CachePolicy::ALL {
            assert_eq!(CachePolicy::parse(policy.name()), Some(policy));
        }
        assert_eq!(CachePolicy::parse("fifo"), None);
    }
}
