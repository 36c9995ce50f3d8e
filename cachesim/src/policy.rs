//! The policies a simulation runs: the engine's own (the same code the live cache runs,
//! through `skewdb::policy::Rule`) and those kept only for comparison.

use std::hash::Hash;

use skewdb::CachePolicy;
use skewdb::policy::{EvictionRule, Marks, Rule};

use crate::sieve::Sieve;
use crate::tinylfu::TinyLfu;

/// A policy to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimPolicy {
    /// [`CachePolicy::S3FifoSized`], the engine's default.
    S3FifoSized,
    /// [`CachePolicy::S3Fifo`].
    S3Fifo,
    /// SIEVE (Zhang et al., NSDI 2024): one FIFO with a visited bit and a hand that keeps
    /// its place. For comparison only.
    Sieve,
    /// [`CachePolicy::Lru`].
    Lru,
    /// W-TinyLFU (Einziger, Friedman and Manes, 2017), the admission filter Caffeine and
    /// moka use, its segments FIFOs that read hits when an object reaches their front. For
    /// comparison only.
    TinyLfu,
}

impl SimPolicy {
    /// Every policy, the engine's default first.
    pub const ALL: [SimPolicy; 5] = [
        SimPolicy::S3FifoSized,
        SimPolicy::S3Fifo,
        SimPolicy::Sieve,
        SimPolicy::Lru,
        SimPolicy::TinyLfu,
    ];

    /// The policy's name: `s3-fifo-sized`, `s3-fifo`, `sieve`, `lru`, `w-tinylfu`.
    pub fn name(self) -> &'static str {
        match self {
            SimPolicy::S3FifoSized => CachePolicy::S3FifoSized.name(),
            SimPolicy::S3Fifo => CachePolicy::S3Fifo.name(),
            SimPolicy::Sieve => "sieve",
            SimPolicy::Lru => CachePolicy::Lru.name(),
            SimPolicy::TinyLfu => "w-tinylfu",
        }
    }

    /// The policy named `name`, as [`SimPolicy::name`] writes it.
    pub fn parse(name: &str) -> Option<SimPolicy> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The engine's policy of that name, if the engine runs it live.
    pub fn live(self) -> Option<CachePolicy> {
        match self {
            SimPolicy::S3FifoSized => Some(CachePolicy::S3FifoSized),
            SimPolicy::S3Fifo => Some(CachePolicy::S3Fifo),
            SimPolicy::Lru => Some(CachePolicy::Lru),
            SimPolicy::Sieve | SimPolicy::TinyLfu => None,
        }
    }
}

impl From<CachePolicy> for SimPolicy {
    #[allow(deprecated)]
    fn from(policy: CachePolicy) -> SimPolicy {
        match policy {
            CachePolicy::S3FifoSized => SimPolicy::S3FifoSized,
            CachePolicy::S3Fifo => SimPolicy::S3Fifo,
            CachePolicy::Lru => SimPolicy::Lru,
            CachePolicy::Sieve => SimPolicy::Sieve,
            CachePolicy::TinyLfu => SimPolicy::TinyLfu,
            // A policy a later engine adds runs as the engine runs it.
            _ => SimPolicy::S3FifoSized,
        }
    }
}

/// The rule for every object but inner pages, in a simulation.
/// The rule for every object but inner pages, in a simulation (opaque).
pub struct SimRule<K>(Kind<K>);

enum Kind<K> {
    Engine(Rule<K>),
    Sieve(Sieve<K>),
    TinyLfu(TinyLfu<K>),
}

impl<K: Copy + Eq + Hash> SimRule<K> {
    pub(crate) fn new(policy: SimPolicy, budget_bytes: u64) -> Self {
        match (policy, policy.live()) {
            (_, Some(live)) => SimRule(Kind::Engine(Rule::new(live, budget_bytes))),
            (SimPolicy::Sieve, None) => SimRule(Kind::Sieve(Sieve::default())),
            (_, None) => SimRule(Kind::TinyLfu(TinyLfu::new(budget_bytes))),
        }
    }
}

impl<K: Copy + Eq + Hash> EvictionRule<K> for SimRule<K> {
    fn contains(&self, key: &K) -> bool {
        match &self.0 {
            Kind::Engine(rule) => rule.contains(key),
            Kind::Sieve(p) => p.contains(key),
            Kind::TinyLfu(p) => p.contains(key),
        }
    }

    fn touch(&mut self, key: &K) -> bool {
        match &mut self.0 {
            Kind::Engine(rule) => rule.touch(key),
            Kind::Sieve(p) => p.visit(key),
            Kind::TinyLfu(p) => p.touch(key),
        }
    }

    fn insert(&mut self, key: K, weight: u64, size: u64) {
        match &mut self.0 {
            Kind::Engine(rule) => rule.insert(key, weight, size),
            Kind::Sieve(p) => p.push(key, weight),
            Kind::TinyLfu(p) => p.insert(key, weight),
        }
    }

    fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
        match &mut self.0 {
            Kind::Engine(rule) => rule.evict(marks),
            Kind::Sieve(p) => p.evict_sieve(marks),
            Kind::TinyLfu(p) => p.evict(marks),
        }
    }

    fn remove(&mut self, key: &K) -> Option<u64> {
        match &mut self.0 {
            Kind::Engine(rule) => rule.remove(key),
            Kind::Sieve(p) => p.remove_key(key),
            Kind::TinyLfu(p) => p.remove(key),
        }
    }

    fn retain(&mut self, keep: &dyn Fn(&K) -> bool) -> u64 {
        match &mut self.0 {
            Kind::Engine(rule) => rule.retain(keep),
            Kind::Sieve(p) => p.retain(&keep),
            Kind::TinyLfu(p) => p.retain(&keep),
        }
    }

    fn set_budget(&mut self, budget_bytes: u64, full_bytes: u64) {
        match &mut self.0 {
            Kind::Engine(rule) => rule.set_budget(budget_bytes, full_bytes),
            Kind::Sieve(_) => {}
            Kind::TinyLfu(p) => p.set_budget(budget_bytes),
        }
    }
}
