//! A policy as the cache runs it: B+tree inner pages under a CLOCK of their own, every
//! other object under the chosen rule, each rule in a file of its own.

use std::collections::VecDeque;
use std::hash::Hash;

use rustc_hash::FxHashMap;

use super::kind::CachePolicy;
use super::linked::Linked;
use super::marks::Marks;
use super::s3fifo::S3Fifo;
use super::tinylfu::TinyLfu;

/// The state of one policy over keys `K`. B+tree inner pages are kept apart from every
/// other object, as WiredTiger keeps them: a few of them carry most lookups (each walk
/// passes through them), so they leave only when nothing else is left to evict or when they
/// pass half of the budget, and then by CLOCK among themselves.
pub(crate) struct Policy<K> {
    pub(super) rest: Rule<K>,
    pub(super) inner: InnerPages<K>,
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
pub(super) struct InnerPages<K> {
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
            Rule::S3Fifo(p) => p.contains(key),
            Rule::Sieve(p) | Rule::Lru(p) => p.contains(key),
            Rule::TinyLfu(p) => p.contains(key),
        }
    }

    fn touch(&mut self, key: &K) -> bool {
        match self {
            Rule::S3Fifo(p) => p.touch(key),
            Rule::Sieve(p) => p.visit(key),
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
            Rule::Sieve(p) | Rule::Lru(p) => p.remove_key(key),
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
