//! What decides whether an object a read loaded goes into the cache: what the read says of
//! it ([`Admission`]), and, for a point read's leaf, whether it was read lately.

/// What a read says of an object it read and the cache did not keep yet (see
/// [`PageCache::admit`](super::PageCache::admit), which decides). An inner page is kept
/// whatever the read says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Keep it, as any read that will come back to it does.
    Always,
    /// Keep inner pages only: a walk that passes through the leaves (maintenance).
    InnerPagesOnly,
    /// What the object holds is kept above the cache (a parent record in the record
    /// tier): keep it while the pages have room (it costs no other object its place), and
    /// once they are full only if it was read and not kept among the latest such reads, as
    /// point reads of keys in order come back to their leaf.
    IfReadLately,
}

/// How many of the latest objects read and not kept the cache remembers.
pub(super) const LATELY: usize = 32;

/// The ids of the latest objects read and not kept, in a ring.
pub(super) struct Lately {
    ids: [u64; LATELY],
    next: usize,
}

impl Default for Lately {
    fn default() -> Self {
        Lately {
            ids: [u64::MAX; LATELY],
            next: 0,
        }
    }
}

impl Lately {
    /// Whether the object `id` was read and not kept among the latest [`LATELY`] such
    /// objects; if not, it is remembered as one.
    pub(super) fn seen_or_remember(&mut self, id: u64) -> bool {
        let seen = self.ids.contains(&id);
        if !seen {
            self.ids[self.next] = id;
            self.next = (self.next + 1) % LATELY;
        }
        seen
    }
}
