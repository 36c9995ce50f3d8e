//! A policy as the cache runs it: B+tree inner pages under a CLOCK of their own, every
//! other object under the chosen rule, each rule in a file of its own.

use std::collections::VecDeque;
use std::hash::Hash;

use rustc_hash::FxHashMap;

use super::kind::CachePolicy;
use super::linked::Linked;
use super::marks::Marks;
use super::rule::EvictionRule;
use super::s3fifo::S3Fifo;

/// The state of one policy over keys `K`. B+tree inner pages are kept apart from every
/// other object, as WiredTiger keeps them: a few of them carry most lookups (each walk
/// passes through them), so they leave only when nothing else is left to evict or when they
/// pass half of the budget, and then by CLOCK among themselves.
pub struct Policy<K, R = Rule<K>> {
    pub(super) rest: R,
    pub(super) inner: InnerPages<K>,
}

impl<K: Copy + Eq + Hash> Policy<K> {
    /// An empty policy of the engine's, `policy`, over `budget_bytes`.
    pub fn new(policy: CachePolicy, budget_bytes: u64) -> Self {
        Policy::with_rule(Rule::new(policy, budget_bytes), budget_bytes)
    }
}

impl<K: Copy + Eq + Hash, R: EvictionRule<K>> Policy<K, R> {
    /// An empty policy under `rule` (which it takes as given) over `budget_bytes`.
    pub fn with_rule(rule: R, budget_bytes: u64) -> Self {
        Policy {
            rest: rule,
            inner: InnerPages {
                queue: VecDeque::new(),
                meta: FxHashMap::default(),
                bytes: 0,
                cap: budget_bytes / 2,
            },
        }
    }

    /// Whether `key` is resident.
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
        self.rest.set_budget(budget_bytes, full_bytes);
    }
}

/// Inner pages under CLOCK: one visited bit each, set by a hit.
pub struct InnerPages<K> {
    pub(super) queue: VecDeque<K>,
    /// Weight and visited bit.
    pub(super) meta: FxHashMap<K, (u64, bool)>,
    pub(super) bytes: u64,
    pub(super) cap: u64,
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

/// The engine's rules for every object but inner pages: the ones a user can choose.
pub struct Rule<K>(Kind<K>);

enum Kind<K> {
    /// S3-FIFO, its main queue sized or not.
    S3Fifo(S3Fifo<K>),
    /// Least recently used.
    Lru(Linked<K>),
}

impl<K> Rule<K> {
    /// The S3-FIFO underneath, for the tests that set its counting.
    #[cfg(test)]
    pub(super) fn s3fifo_mut(&mut self) -> Option<&mut S3Fifo<K>> {
        match &mut self.0 {
            Kind::S3Fifo(s3) => Some(s3),
            Kind::Lru(_) => None,
        }
    }

    /// The S3-FIFO underneath, taken, for the tests.
    #[cfg(test)]
    pub(super) fn into_s3fifo(self) -> Option<S3Fifo<K>> {
        match self.0 {
            Kind::S3Fifo(s3) => Some(s3),
            Kind::Lru(_) => None,
        }
    }

    /// A rule of the given S3-FIFO, for the tests.
    #[cfg(test)]
    pub(super) fn of_s3fifo(s3: S3Fifo<K>) -> Self {
        Rule(Kind::S3Fifo(s3))
    }
}

impl<K: Copy + Eq + Hash> Rule<K> {
    /// The rule of `policy` (as a live cache runs it: see [`CachePolicy::live`]) over
    /// `budget_bytes`.
    pub fn new(policy: CachePolicy, budget_bytes: u64) -> Self {
        match policy.live() {
            CachePolicy::S3Fifo => Rule(Kind::S3Fifo(S3Fifo::new(budget_bytes, false))),
            CachePolicy::Lru => Rule(Kind::Lru(Linked::default())),
            _ => Rule(Kind::S3Fifo(S3Fifo::new(budget_bytes, true))),
        }
    }
}

impl<K: Copy + Eq + Hash> EvictionRule<K> for Rule<K> {
    fn contains(&self, key: &K) -> bool {
        match &self.0 {
            Kind::S3Fifo(p) => p.contains(key),
            Kind::Lru(p) => p.contains(key),
        }
    }

    fn touch(&mut self, key: &K) -> bool {
        match &mut self.0 {
            Kind::S3Fifo(p) => p.touch(key),
            Kind::Lru(p) => p.move_to_head(key),
        }
    }

    fn insert(&mut self, key: K, weight: u64, size: u64) {
        match &mut self.0 {
            Kind::S3Fifo(p) => p.insert(key, weight, size),
            Kind::Lru(p) => p.push(key, weight),
        }
    }

    fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
        match &mut self.0 {
            Kind::S3Fifo(p) => p.evict(marks),
            Kind::Lru(p) => p.pop_tail(),
        }
    }

    fn remove(&mut self, key: &K) -> Option<u64> {
        match &mut self.0 {
            Kind::S3Fifo(p) => p.remove(key),
            Kind::Lru(p) => p.remove_key(key),
        }
    }

    fn retain(&mut self, keep: &dyn Fn(&K) -> bool) -> u64 {
        match &mut self.0 {
            Kind::S3Fifo(p) => p.retain(&keep),
            Kind::Lru(p) => p.retain(&keep),
        }
    }

    fn set_budget(&mut self, budget_bytes: u64, full_bytes: u64) {
        match &mut self.0 {
            Kind::S3Fifo(p) => p.set_budget(budget_bytes, full_bytes),
            Kind::Lru(_) => {}
        }
    }
}
