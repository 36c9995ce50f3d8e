//! What every eviction rule answers: each rule, in a file of its own, decides which object
//! goes; the cache (or a simulation) executes, evicting what it names.

use super::marks::Marks;

/// The rule for every object but B+tree inner pages (which [`super::Policy`] keeps apart).
/// Weights are bytes; `size` is what a sampled object stands for (see
/// [`super::Policy::insert_sized`]).
pub trait EvictionRule<K> {
    /// Whether `key` is resident.
    fn contains(&self, key: &K) -> bool;
    /// Records a hit on a resident key; false if it is not resident.
    fn touch(&mut self, key: &K) -> bool;
    /// Adds a key that is not resident.
    fn insert(&mut self, key: K, weight: u64, size: u64);
    /// Removes the key the rule gives up first, with its weight, reading the hits `marks`
    /// kept beside the values.
    fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)>;
    /// Drops `key`, as if it had never been asked for; its weight, if it was resident.
    fn remove(&mut self, key: &K) -> Option<u64>;
    /// Drops every key `keep` refuses; the bytes dropped.
    fn retain(&mut self, keep: &dyn Fn(&K) -> bool) -> u64;
    /// Takes a new budget (of a sample of a cache of `full_bytes`) for the shares the rule
    /// sizes by it.
    fn set_budget(&mut self, _budget_bytes: u64, _full_bytes: u64) {}
}
