//! A cache of a policy and a byte budget, fed one request at a time: a recorded trace
//! replayed. The engine's own miniature cache (the one its what-if estimate runs), over
//! the rules a simulation may choose.

use std::hash::Hash;
use std::ops::{Deref, DerefMut};

use skewdb::policy::Miniature;

use crate::policy::{SimPolicy, SimRule};

/// A policy and a byte budget, fed one request at a time (`access`, `access_as`, `remove`,
/// `retain`, `set_budget`; `hits` and `requests` count).
pub struct Simulator<K>(Miniature<K, SimRule<K>>);

impl<K: Copy + Eq + Hash> Simulator<K> {
    /// An empty cache of `budget_bytes` under `policy`.
    pub fn new(policy: impl Into<SimPolicy>, budget_bytes: u64) -> Self {
        let rule = SimRule::new(policy.into(), budget_bytes);
        Simulator(Miniature::with_rule(rule, budget_bytes))
    }
}

impl<K> Deref for Simulator<K> {
    type Target = Miniature<K, SimRule<K>>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<K> DerefMut for Simulator<K> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}
