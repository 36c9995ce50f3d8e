//! W-TinyLFU over byte weights, with its count-min sketch; kept for comparison.

use std::collections::VecDeque;
use std::hash::Hash;

use rustc_hash::FxHashMap;

use skewdb::policy::Marks;

/// The window's share of the budget, in hundredths (Caffeine's starting share).
pub(crate) const WINDOW_PERCENT: u64 = 1;
/// The protected segment's share of the main cache, in hundredths.
pub(crate) const PROTECTED_PERCENT: u64 = 80;

#[derive(Clone, Copy)]
pub(crate) enum Segment {
    Window,
    Probation,
    Protected,
}

#[derive(Clone, Copy)]
pub(crate) struct TinyMeta {
    pub(crate) weight: u64,
    /// Hits not yet counted in the sketch.
    pub(crate) hits: u32,
}

/// W-TinyLFU with byte weights, each segment's share in bytes. Its queues are FIFOs that
/// look at hits only when an object reaches their front (as S3-FIFO's do), so the live cache
/// never hands the policy a hit: the window is a FIFO, probation promotes an object hit
/// since it entered to protected, and protected is a CLOCK that gives an object hit since
/// its last pass another round. A hit reaches the sketch when its object is looked at.
pub(crate) struct TinyLfu<K> {
    pub(crate) meta: FxHashMap<K, TinyMeta>,
    pub(crate) window: VecDeque<K>,
    pub(crate) probation: VecDeque<K>,
    pub(crate) protected: VecDeque<K>,
    pub(crate) window_bytes: u64,
    pub(crate) probation_bytes: u64,
    pub(crate) protected_bytes: u64,
    pub(crate) window_target: u64,
    pub(crate) main_target: u64,
    pub(crate) protected_target: u64,
    pub(crate) sketch: Sketch,
}

impl<K: Copy + Eq + Hash> TinyLfu<K> {
    pub(crate) fn new(budget_bytes: u64) -> Self {
        let window_target = budget_bytes * WINDOW_PERCENT / 100;
        let main_target = budget_bytes - window_target;
        TinyLfu {
            meta: FxHashMap::default(),
            window: VecDeque::new(),
            probation: VecDeque::new(),
            protected: VecDeque::new(),
            window_bytes: 0,
            probation_bytes: 0,
            protected_bytes: 0,
            window_target,
            main_target,
            protected_target: main_target * PROTECTED_PERCENT / 100,
            // About one counter per 1 KiB of budget: more than the objects the cache holds.
            sketch: Sketch::new((budget_bytes / 1024) as usize),
        }
    }

    pub(crate) fn contains(&self, key: &K) -> bool {
        self.meta.contains_key(key)
    }

    pub(crate) fn set_budget(&mut self, budget_bytes: u64) {
        self.window_target = budget_bytes * WINDOW_PERCENT / 100;
        self.main_target = budget_bytes - self.window_target;
        self.protected_target = self.main_target * PROTECTED_PERCENT / 100;
    }

    pub(crate) fn retain(&mut self, keep: &impl Fn(&K) -> bool) -> u64 {
        let before: u64 = self.meta.values().map(|m| m.weight).sum();
        self.meta.retain(|k, _| keep(k));
        let meta = &self.meta;
        let sums = [&mut self.window, &mut self.probation, &mut self.protected].map(|queue| {
            queue.retain(|k| keep(k));
            queue.iter().map(|k| meta[k].weight).sum::<u64>()
        });
        [
            self.window_bytes,
            self.probation_bytes,
            self.protected_bytes,
        ] = sums;
        before - sums.iter().sum::<u64>()
    }

    pub(crate) fn touch(&mut self, key: &K) -> bool {
        self.meta
            .get_mut(key)
            .map(|meta| meta.hits = meta.hits.saturating_add(1))
            .is_some()
    }

    /// Drops a key from whichever segment holds it (a search of the segments: W-TinyLFU is
    /// kept for comparison, and its fronts are read in place).
    pub(crate) fn remove(&mut self, key: &K) -> Option<u64> {
        let weight = self.meta.get(key)?.weight;
        for segment in [Segment::Window, Segment::Probation, Segment::Protected] {
            let queue = self.queue(segment);
            if let Some(at) = queue.iter().position(|k| k == key) {
                queue.remove(at);
                *self.bytes(segment) -= weight;
                break;
            }
        }
        self.meta.remove(key);
        Some(weight)
    }

    pub(crate) fn insert(&mut self, key: K, weight: u64) {
        self.sketch.increment(&key);
        self.meta.insert(key, TinyMeta { weight, hits: 0 });
        self.window.push_back(key);
        self.window_bytes += weight;
        self.drain_window();
    }

    /// Moves what leaves the window to probation while the main cache has room for it,
    /// its hits kept for probation to count.
    fn drain_window(&mut self) {
        while self.window_bytes > self.window_target {
            let Some(key) = self.window.front() else {
                break;
            };
            let weight = self.meta[key].weight;
            if self.probation_bytes + self.protected_bytes + weight > self.main_target {
                break;
            }
            self.move_front(Segment::Window, Segment::Probation);
        }
    }

    /// Counts `key`'s hits since it was last looked at into the sketch; returns them.
    fn settle(&mut self, key: &K, marks: &mut dyn Marks<K>) -> u32 {
        let recorded = marks.take_hits(key);
        let meta = self.meta.get_mut(key).expect("queued keys have metadata");
        let hits = std::mem::take(&mut meta.hits).saturating_add(recorded);
        for _ in 0..hits.min(SKETCH_MAX as u32) {
            self.sketch.increment(key);
        }
        hits
    }

    fn bytes(&mut self, segment: Segment) -> &mut u64 {
        match segment {
            Segment::Window => &mut self.window_bytes,
            Segment::Probation => &mut self.probation_bytes,
            Segment::Protected => &mut self.protected_bytes,
        }
    }

    fn queue(&mut self, segment: Segment) -> &mut VecDeque<K> {
        match segment {
            Segment::Window => &mut self.window,
            Segment::Probation => &mut self.probation,
            Segment::Protected => &mut self.protected,
        }
    }

    /// Moves the object at the front of `from` to the back of `to`.
    fn move_front(&mut self, from: Segment, to: Segment) {
        let key = self.queue(from).pop_front().expect("a front to move");
        let weight = self.meta[&key].weight;
        *self.bytes(from) -= weight;
        *self.bytes(to) += weight;
        self.queue(to).push_back(key);
    }

    /// Removes the object at the front of `segment`.
    fn remove_front(&mut self, segment: Segment) -> (K, u64) {
        let key = self.queue(segment).pop_front().expect("a front to remove");
        let weight = self
            .meta
            .remove(&key)
            .expect("queued keys have metadata")
            .weight;
        *self.bytes(segment) -= weight;
        (key, weight)
    }

    /// The main cache's next victim, left at the front of its segment: probation's first
    /// object not hit since it entered (those hit move to protected), or, with probation
    /// empty, protected's first not hit since its last pass.
    fn main_victim(&mut self, marks: &mut dyn Marks<K>) -> Option<(Segment, K)> {
        loop {
            if let Some(&key) = self.probation.front() {
                if self.settle(&key, marks) == 0 {
                    return Some((Segment::Probation, key));
                }
                self.move_front(Segment::Probation, Segment::Protected);
                while self.protected_bytes > self.protected_target {
                    self.move_front(Segment::Protected, Segment::Probation);
                }
                continue;
            }
            let &key = self.protected.front()?;
            if self.settle(&key, marks) == 0 {
                return Some((Segment::Protected, key));
            }
            self.move_front(Segment::Protected, Segment::Protected);
        }
    }

    pub(crate) fn evict(&mut self, marks: &mut dyn Marks<K>) -> Option<(K, u64)> {
        self.drain_window();
        // Room is made before the newcomer enters the window: a full window's oldest
        // leaves it now and must win its place.
        if !self.window.is_empty() && self.window_bytes >= self.window_target {
            let &candidate = self
                .window
                .front()
                .expect("a window over its share has objects");
            self.settle(&candidate, marks);
            let Some((segment, victim)) = self.main_victim(marks) else {
                return Some(self.remove_front(Segment::Window));
            };
            // The admission filter: the candidate takes the victim's place only if it was
            // asked for more often.
            if self.sketch.estimate(&candidate) > self.sketch.estimate(&victim) {
                let evicted = self.remove_front(segment);
                self.move_front(Segment::Window, Segment::Probation);
                return Some(evicted);
            }
            return Some(self.remove_front(Segment::Window));
        }
        match self.main_victim(marks) {
            Some((segment, _)) => Some(self.remove_front(segment)),
            None if self.window.is_empty() => None,
            None => Some(self.remove_front(Segment::Window)),
        }
    }
}

/// A count-min sketch of 4-bit counters (kept in bytes) over four rows, halved once it has
/// counted ten times its width, so old popularity fades.
pub(crate) struct Sketch {
    pub(crate) counters: Vec<u8>,
    pub(crate) mask: usize,
    pub(crate) additions: u64,
    pub(crate) period: u64,
}

pub(crate) const SKETCH_ROWS: usize = 4;
pub(crate) const SKETCH_MAX: u8 = 15;

impl Sketch {
    pub(crate) fn new(width: usize) -> Self {
        let width = width.clamp(256, 1 << 24).next_power_of_two();
        Sketch {
            counters: vec![0; width * SKETCH_ROWS],
            mask: width - 1,
            additions: 0,
            period: 10 * width as u64,
        }
    }

    fn slots<K: Hash>(&self, key: &K) -> [usize; SKETCH_ROWS] {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let hash = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(key);
        let width = self.mask + 1;
        std::array::from_fn(|row| {
            // splitmix64's finalizer over the hash plus a seed per row: four slots as good
            // as independent.
            let mut x = hash.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(row as u64 + 1));
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^= x >> 31;
            row * width + (x as usize & self.mask)
        })
    }

    pub(crate) fn increment<K: Hash>(&mut self, key: &K) {
        let mut grew = false;
        for slot in self.slots(key) {
            if self.counters[slot] < SKETCH_MAX {
                self.counters[slot] += 1;
                grew = true;
            }
        }
        if grew {
            self.additions += 1;
            if self.additions >= self.period {
                for counter in &mut self.counters {
                    *counter /= 2;
                }
                self.additions /= 2;
            }
        }
    }

    pub(crate) fn estimate<K: Hash>(&self, key: &K) -> u8 {
        self.slots(key)
            .into_iter()
            .map(|slot| self.counters[slot])
            .min()
            .unwrap_or(0)
    }
}
