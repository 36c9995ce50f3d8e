//! Which chunks the space rules may touch: what a bucket expiry drops, and what compaction
//! may merge.

use crate::cold::ChunkKind;
use crate::item::Summary;

/// Whether a bucket expiry with bound `before` drops a chunk of this kind and summary:
/// sealed buckets whose newest key is below the bound. Late items (item chunks of a Bucket
/// array) stay: they are not buckets, and their keys may be newer than any bucket's.
pub(crate) fn expires(kind: ChunkKind, summary: &Summary, before: i64) -> bool {
    match kind {
        ChunkKind::Bucket => summary.max_key.is_some_and(|max| max < before),
        ChunkKind::Items => false,
    }
}

/// Whether compaction may merge small chunks of this kind into larger ones. A sealed
/// bucket keeps its own bounds and summary, which range queries and aggregates skip by.
pub(crate) fn merges(kind: ChunkKind) -> bool {
    match kind {
        ChunkKind::Items => true,
        ChunkKind::Bucket => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::Item;

    fn summary_of(keys: &[i64]) -> Summary {
        let items: Vec<Item> = keys
            .iter()
            .map(|&key| Item {
                key,
                value: None,
                payload: bytes::Bytes::new(),
                more: None,
            })
            .collect();
        Summary::of(items.iter())
    }

    #[test]
    fn only_buckets_wholly_before_the_bound_expire() {
        let bucket = summary_of(&[10, 19]);
        assert!(expires(ChunkKind::Bucket, &bucket, 20));
        assert!(
            !expires(ChunkKind::Bucket, &bucket, 19),
            "its newest key is not below"
        );
        assert!(
            !expires(ChunkKind::Items, &bucket, 1_000),
            "late items stay"
        );
        assert!(!expires(ChunkKind::Bucket, &Summary::default(), i64::MAX));
    }

    #[test]
    fn buckets_never_merge() {
        assert!(merges(ChunkKind::Items));
        assert!(!merges(ChunkKind::Bucket));
    }
}
