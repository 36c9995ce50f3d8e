//! A miniature cache: a policy and a byte budget fed one request at a time. The what-if
//! estimate runs one per budget on its sample; `skewdb-cachesim`, beside the engine,
//! replays whole traces through the same code (with the rules kept only for comparison,
//! and the optimum, which are its own).

use std::hash::Hash;

use super::kind::CachePolicy;
use super::marks::NoMarks;
use super::rule::EvictionRule;
use super::rules::{Policy, Rule};

/// A policy and a byte budget, fed one request at a time: replays a trace, or a sample of
/// one for the what-if estimate.
pub struct Miniature<K, R = Rule<K>> {
    pub(super) policy: Policy<K, R>,
    budget_bytes: u64,
    resident_bytes: u64,
    /// Requests replayed so far.
    pub requests: u64,
    /// Requests that hit.
    pub hits: u64,
}

impl<K: Copy + Eq + Hash> Miniature<K> {
    /// An empty cache of `budget_bytes` under the engine's `policy`.
    pub fn new(policy: CachePolicy, budget_bytes: u64) -> Self {
        Miniature::with_rule(Rule::new(policy, budget_bytes), budget_bytes)
    }
}

impl<K: Copy + Eq + Hash, R: EvictionRule<K>> Miniature<K, R> {
    /// An empty cache of `budget_bytes` under `rule` (inner pages kept apart, as always).
    pub fn with_rule(rule: R, budget_bytes: u64) -> Self {
        Miniature {
            policy: Policy::with_rule(rule, budget_bytes),
            budget_bytes,
            resident_bytes: 0,
            requests: 0,
            hits: 0,
        }
    }

    /// The policy's state.
    #[cfg(feature = "policy")]
    pub fn policy(&self) -> &Policy<K, R> {
        &self.policy
    }

    /// One request for `key` of `weight` bytes; true on a hit. Objects larger than the
    /// budget are never kept.
    #[cfg(any(test, feature = "policy"))]
    pub fn access(&mut self, key: K, weight: u64) -> bool {
        self.access_as(key, weight, false)
    }

    /// [`Miniature::access`] for an object that is a B+tree inner page when `inner`.
    pub fn access_as(&mut self, key: K, weight: u64, inner: bool) -> bool {
        self.access_sized(key, weight, weight, inner)
    }

    /// [`Miniature::access_as`] for a sampled object that weighs `weight` bytes here and
    /// stands for one of `size` bytes (see [`Policy::insert_sized`]).
    pub fn access_sized(&mut self, key: K, weight: u64, size: u64, inner: bool) -> bool {
        self.requests += 1;
        if self.policy.touch_as(&key, inner) {
            self.hits += 1;
            return true;
        }
        if weight <= self.budget_bytes {
            self.make_room(weight);
            self.policy.insert_sized(key, weight, size, inner);
            self.resident_bytes += weight;
        }
        false
    }

    /// [`Miniature::access_as`] for an object kept on a miss only if `admit()` says so (the
    /// live cache's [`Admission`](crate::cache::Admission)).
    pub fn access_admitting(
        &mut self,
        key: K,
        weight: u64,
        inner: bool,
        admit: impl FnOnce() -> bool,
    ) -> bool {
        self.requests += 1;
        if self.policy.touch_as(&key, inner) {
            self.hits += 1;
            return true;
        }
        if weight <= self.budget_bytes && admit() {
            self.make_room(weight);
            self.policy.insert_sized(key, weight, weight, inner);
            self.resident_bytes += weight;
        }
        false
    }

    /// Whether `weight` more bytes fit without evicting any.
    pub fn has_room(&self, weight: u64) -> bool {
        self.resident_bytes + weight <= self.budget_bytes
    }

    /// Evicts until `weight` more bytes fit the budget, or nothing is left to evict.
    fn make_room(&mut self, weight: u64) {
        while self.resident_bytes + weight > self.budget_bytes {
            let Some((_, evicted)) = self.policy.evict(&mut NoMarks) else {
                break;
            };
            self.resident_bytes -= evicted;
        }
    }

    /// Changes the bytes the objects may take, and evicts until they fit, without resizing
    /// what the policy sized once for its budget (as the live cache's page limit moves with
    /// what the record tier holds).
    pub fn set_limit(&mut self, budget_bytes: u64) {
        self.budget_bytes = budget_bytes;
        self.make_room(0);
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

    /// [`Miniature::set_budget`] for a sample of a cache of `full_bytes` (see
    /// [`Policy::set_sampled_budget`]).
    pub fn set_sampled_budget(&mut self, budget_bytes: u64, full_bytes: u64) {
        self.budget_bytes = budget_bytes;
        self.policy.set_sampled_budget(budget_bytes, full_bytes);
        self.make_room(0);
    }

    /// hits / requests, or 0 with no requests.
    #[cfg(any(test, feature = "policy"))]
    pub fn hit_ratio(&self) -> f64 {
        super::marks::ratio(self.hits, self.requests)
    }

    /// Bytes of the objects held now.
    #[cfg(any(test, feature = "policy"))]
    pub fn resident_bytes(&self) -> u64 {
        self.resident_bytes
    }
}
