//! A doubly linked list in a slab, newest at the head: LRU.

use std::hash::Hash;

use rustc_hash::FxHashMap;

pub(super) const NIL: usize = usize::MAX;

pub(super) struct LinkNode<K> {
    pub(super) key: K,
    pub(super) weight: u64,
    pub(super) prev: usize,
    pub(super) next: usize,
}

/// A doubly linked list in a slab, newest at the head: LRU moves hits to the head, SIEVE
/// marks them and sweeps a hand from the tail.
pub(crate) struct Linked<K> {
    pub(super) index: FxHashMap<K, usize>,
    pub(super) nodes: Vec<LinkNode<K>>,
    pub(super) free: Vec<usize>,
    pub(super) head: usize,
    pub(super) tail: Option<usize>,
    pub(super) hand: Option<usize>,
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
    pub(super) fn contains(&self, key: &K) -> bool {
        self.index.contains_key(key)
    }

    /// Unlinks `key` (the hand stays where it points); its weight, or `None` if not resident.
    pub(super) fn remove_key(&mut self, key: &K) -> Option<u64> {
        let slot = *self.index.get(key)?;
        Some(self.unlink_keeping_hand(slot))
    }

    fn alloc(&mut self, key: K, weight: u64) -> usize {
        let node = LinkNode {
            key,
            weight,
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
    pub(super) fn push(&mut self, key: K, weight: u64) {
        let slot = self.alloc(key, weight);
        self.push_head(slot);
        self.index.insert(key, slot);
    }

    pub(super) fn move_to_head(&mut self, key: &K) -> bool {
        let Some(&slot) = self.index.get(key) else {
            return false;
        };
        self.unlink(slot);
        self.push_head(slot);
        true
    }

    pub(super) fn pop_tail(&mut self) -> Option<(K, u64)> {
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
    pub(super) fn retain(&mut self, keep: &impl Fn(&K) -> bool) -> u64 {
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
    pub(super) fn unlink_keeping_hand(&mut self, slot: usize) -> u64 {
        if self.hand == Some(slot) {
            let prev = self.nodes[slot].prev;
            self.hand = (prev != NIL).then_some(prev);
        }
        self.remove(slot).1
    }
}
