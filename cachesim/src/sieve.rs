//! SIEVE (Zhang et al., NSDI 2024): one FIFO with a visited bit and a hand that keeps its
//! place, in a doubly linked list in a slab, newest at the head.

use std::hash::Hash;

use rustc_hash::FxHashMap;

use skewdb::policy::Marks;

pub(crate) const NIL: usize = usize::MAX;

pub(crate) struct LinkNode<K> {
    pub(crate) key: K,
    pub(crate) weight: u64,
    pub(crate) visited: bool,
    pub(crate) prev: usize,
    pub(crate) next: usize,
}

/// A doubly linked list in a slab, newest at the head: LRU moves hits to the head, SIEVE
/// marks them and sweeps a hand from the tail.
pub(crate) struct Sieve<K> {
    pub(crate) index: FxHashMap<K, usize>,
    pub(crate) nodes: Vec<LinkNode<K>>,
    pub(crate) free: Vec<usize>,
    pub(crate) head: usize,
    pub(crate) tail: Option<usize>,
    pub(crate) hand: Option<usize>,
}

impl<K> Default for Sieve<K> {
    fn default() -> Self {
        Sieve {
            index: FxHashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: None,
            hand: None,
        }
    }
}

impl<K: Copy + Eq + Hash> Sieve<K> {
    pub(crate) fn contains(&self, key: &K) -> bool {
        self.index.contains_key(key)
    }

    /// SIEVE's hit: marks a resident key visited; false if not resident.
    pub(crate) fn visit(&mut self, key: &K) -> bool {
        self.index
            .get(key)
            .map(|&slot| self.nodes[slot].visited = true)
            .is_some()
    }

    /// Unlinks `key` (the hand stays where it points); its weight, or `None` if not resident.
    pub(crate) fn remove_key(&mut self, key: &K) -> Option<u64> {
        let slot = *self.index.get(key)?;
        Some(self.unlink_keeping_hand(slot))
    }

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
    pub(crate) fn push(&mut self, key: K, weight: u64) {
        let slot = self.alloc(key, weight);
        self.push_head(slot);
        self.index.insert(key, slot);
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
    pub(crate) fn retain(&mut self, keep: &impl Fn(&K) -> bool) -> u64 {
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
    pub(crate) fn unlink_keeping_hand(&mut self, slot: usize) -> u64 {
        if self.hand == Some(slot) {
            let prev = self.nodes[slot].prev;
            self.hand = (prev != NIL).then_some(prev);
        }
        self.remove(slot).1
    }

    /// SIEVE: from the hand (or the tail), clear visited bits towards the head until an
    /// unvisited node; evict it and leave the hand on its newer neighbour.
    pub(crate) fn evict_sieve(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
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
