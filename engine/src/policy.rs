//! The cache's eviction policy as the trace simulator (`skewdb-cachesim`) builds on it: the
//! rule every policy implements, the default rule, the policy that keeps inner pages apart,
//! and the miniature cache the what-if estimates run. The simulator, the optimum and the
//! policies kept for comparison live in that crate, not in the engine. Behind the feature
//! `policy`, off by default: not part of the supported API, and any name here may change in
//! any release.

pub use crate::cache::{
    DROP_CLASS, EvictionRule, InnerPages, Marks, Miniature, NoMarks, Policy, Rule,
};
