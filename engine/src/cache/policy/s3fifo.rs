//! S3-FIFO over byte weights, its main queue first in, first out or in
//! GreedyDual-Size-Frequency order (the default policy).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;

use rustc_hash::FxHashMap;

use super::marks::Marks;

/// Hits in the small queue that move an object to main (the paper's first setting; its
/// later one is 2).
pub(super) const PROMOTE_HITS: u8 = 1;
/// The most hits an object's count keeps: main gives an object one more round per hit
/// counted (the paper keeps up to 3; 1 makes main a CLOCK).
pub(super) const MAX_FREQ: u8 = 1;

#[derive(Clone, Copy)]
pub(super) struct Meta {
    pub(super) weight: u64,
    /// The size the sized main orders it by: its weight, or for a sampled object the size
    /// it stands for (saturating).
    pub(super) size: u32,
    pub(super) freq: u8,
    /// In the small queue (else in main). A queue entry whose key has no metadata, or
    /// metadata of the other queue, or (in main) another place, is the place of a removed
    /// key and is skipped.
    pub(super) small: bool,
    /// The number of its entry in main (see [`Main::push`]).
    pub(super) place: u64,
    /// 1, and one more for each round main gave it for hits (see [`SizedQueue`]).
    pub(super) uses: u8,
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
pub(super) enum Main<K> {
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
pub(super) struct SizedQueue<K> {
    pub(super) heap: BinaryHeap<Reverse<Place<K>>>,
    pub(super) clock: u128,
    pub(super) pushed: u64,
    pub(super) size_cap: u64,
    pub(super) max_uses: u8,
}

/// The most uses the sized main counts for an object (see [`SizedQueue`]).
pub(super) const MAX_USES: u8 = 3;

/// The share of the budget from which the sized main orders objects as equals.
pub(super) const SIZE_CAP_SHARE: u64 = 64;

fn size_cap(budget_bytes: u64) -> u64 {
    (budget_bytes / SIZE_CAP_SHARE).max(1)
}

pub(super) struct Place<K> {
    pub(super) at: u128,
    /// The push's number: breaks ties and tells a key's current entry from its old ones.
    pub(super) number: u64,
    pub(super) key: K,
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
    pub(super) fn push(&mut self, key: K, size: u32, uses: u8) -> u64 {
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
    pub(super) fn pop(&mut self) -> Option<(K, u64, u128)> {
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
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&K, u64) -> bool) {
        match self {
            Main::Fifo { queue, .. } => queue.retain(|(k, number)| keep(k, *number)),
            Main::Sized(queue) => queue
                .heap
                .retain(|Reverse(place)| keep(&place.key, place.number)),
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Main::Fifo { queue, .. } => queue.len(),
            Main::Sized(queue) => queue.heap.len(),
        }
    }
}

/// The small queue's share of the budget: one part in this many. S3-FIFO's paper uses a
/// tenth; the sized main a twentieth (see [`CachePolicy::S3FifoSized`]).
pub(super) const S3FIFO_SMALL_SHARE: u64 = 10;
pub(super) const SIZED_SMALL_SHARE: u64 = 20;

/// S3-FIFO with byte weights: the small queue's share and the ghost's size are in bytes.
pub(crate) struct S3Fifo<K> {
    pub(super) meta: FxHashMap<K, Meta>,
    pub(super) small: VecDeque<K>,
    pub(super) main: Main<K>,
    pub(super) small_bytes: u64,
    pub(super) small_target: u64,
    /// The small queue's share of the budget, one part in this many.
    pub(super) small_share: u64,
    /// Keys recently evicted from the small queue, oldest first, with how many times each
    /// key is in the queue (a key can come back and leave again before its old entry ages).
    pub(super) ghost: VecDeque<(K, u64)>,
    pub(super) ghost_count: FxHashMap<K, u32>,
    pub(super) ghost_bytes: u64,
    pub(super) ghost_target: u64,
}

impl<K: Copy + Eq + Hash> S3Fifo<K> {
    pub(super) fn contains(&self, key: &K) -> bool {
        self.meta.contains_key(key)
    }

    /// Counts a hit on a resident key (up to the count main keeps); false if not resident.
    pub(super) fn touch(&mut self, key: &K) -> bool {
        self.meta
            .get_mut(key)
            .map(|meta| meta.freq = (meta.freq + 1).min(MAX_FREQ))
            .is_some()
    }

    pub(super) fn new(budget_bytes: u64, sized: bool) -> Self {
        let share = match sized {
            true => SIZED_SMALL_SHARE,
            false => S3FIFO_SMALL_SHARE,
        };
        Self::with_small_share(budget_bytes, sized, share)
    }

    /// [`S3Fifo::new`] with a small queue of one part in `share` of the budget.
    pub(super) fn with_small_share(budget_bytes: u64, sized: bool, share: u64) -> Self {
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

    pub(super) fn set_budget(&mut self, budget_bytes: u64, full_bytes: u64) {
        self.set_targets(budget_bytes);
        if let Main::Sized(queue) = &mut self.main {
            // Keys already queued keep their places; the next pushes take the new cap.
            queue.size_cap = size_cap(full_bytes);
        }
        self.trim_ghost();
    }

    pub(super) fn retain(&mut self, keep: &impl Fn(&K) -> bool) -> u64 {
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

    pub(super) fn insert(&mut self, key: K, weight: u64, size: u64) {
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
    pub(super) fn queue_in_main(&mut self, key: K, meta: Meta) {
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
    pub(super) fn remove(&mut self, key: &K) -> Option<u64> {
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
        // At most MAX_FREQ, a u8.
        meta.freq = u8::try_from((u32::from(meta.freq) + hits).min(u32::from(MAX_FREQ)))
            .unwrap_or(MAX_FREQ);
        Some(*meta)
    }

    pub(super) fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
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
