//! What a policy reads of the live cache's hits, and the ratio every counter reports.

/// Where the live cache keeps hits of S3-FIFO and SIEVE: beside each value, under the
/// lock its shard already takes, so a hit never touches the policy. The policy collects them
/// only when it looks at a key to evict. The simulator records hits in the policy itself
/// and passes [`NoMarks`].
pub trait Marks<K> {
    /// Takes the hits recorded for `key` since the last call.
    fn take_hits(&mut self, key: &K) -> u32;
}

/// No marks: a policy that records its hits itself (a simulation).
pub struct NoMarks;

impl<K> Marks<K> for NoMarks {
    fn take_hits(&mut self, _: &K) -> u32 {
        0
    }
}

pub(crate) fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}
