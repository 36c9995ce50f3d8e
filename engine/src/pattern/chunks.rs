//! Which items a full tail seals into a chunk, and which chunks the space rules may touch:
//! what a bucket expiry drops, and what compaction may merge.

use crate::cold::ChunkKind;
use crate::item::{self, Stored, Summary};

/// Seals a tail that an item of `new_bytes` would take over its bound of `bound_bytes`:
/// returns the items to write as a chunk, in (key, push) order, and leaves in `tail` its
/// greatest items, in the same order, whose encoded size is at most half the bound and
/// leaves room for the new item. The newest history stays in the tail, in its parent's
/// leaf: a page of the newest items, the read most made of a history, finds them there
/// instead of decompressing a chunk, right after a seal as before it.
pub(crate) fn seal_tail(
    tail: &mut Vec<Stored>,
    bound_bytes: usize,
    new_bytes: usize,
) -> Vec<Stored> {
    let keep = (bound_bytes / 2).min(bound_bytes.saturating_sub(new_bytes));
    split_newest(tail, keep)
}

/// Returns the items of `tail` to seal, in (key, push) order, and leaves in `tail` the
/// greatest ones whose encoded size (the list's count included) is at most `keep_bytes`.
fn split_newest(tail: &mut Vec<Stored>, keep_bytes: usize) -> Vec<Stored> {
    tail.sort_by_key(Stored::order);
    let mut kept_bytes = item::items_len(&[]);
    let kept = tail
        .iter()
        .rev()
        .take_while(|s| {
            kept_bytes += item::stored_len(&s.item);
            kept_bytes <= keep_bytes
        })
        .count();
    let kept = tail.split_off(tail.len() - kept);
    std::mem::replace(tail, kept)
}

/// Whether a bucket expiry with bound `before` drops a chunk of this kind and summary:
/// sealed buckets whose newest key is below the bound. Late items (item chunks of a Bucket
/// array) stay: they are not buckets, and their keys may be newer than any bucket's.
pub(crate) fn expires(kind: ChunkKind, summary: &Summary, before: i64) -> bool {
    match kind {
        ChunkKind::Bucket => summary.max_key.is_some_and(|max| max < before),
        ChunkKind::Items => false,
    }
}

/// Whether a bucket expiry with bound `before` of an array that keeps rollups reads a
/// chunk of this kind and summary to roll up and drop its items below the bound: late
/// items (item chunks of a Bucket array) holding any key below it. Sealed buckets go by
/// [`expires`].
pub(crate) fn rolls_up_late(kind: ChunkKind, summary: &Summary, before: i64) -> bool {
    match kind {
        ChunkKind::Items => summary.min_key.is_some_and(|min| min < before),
        ChunkKind::Bucket => false,
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

    fn stored(key: i64, seq: u64, payload: usize) -> Stored {
        Stored {
            item: Item {
                key,
                value: None,
                payload: bytes::Bytes::from(vec![b'x'; payload]),
                more: None,
            },
            seq,
        }
    }

    fn orders(items: &[Stored]) -> Vec<(i64, u64)> {
        items.iter().map(Stored::order).collect()
    }

    #[test]
    fn a_full_tail_seals_its_older_items_and_keeps_the_newest_within_the_bound() {
        // Pushed out of order, with a tie on key 5 that push order breaks.
        let tail = vec![
            stored(7, 0, 10),
            stored(5, 3, 20),
            stored(1, 1, 30),
            stored(9, 2, 40),
            stored(5, 4, 50),
        ];
        let mut all = tail.clone();
        all.sort_by_key(Stored::order);
        let size = |items: &[Stored]| item::items_len(items);
        for keep_bytes in 0..=size(&all) + 1 {
            let mut kept = tail.clone();
            let sealed = split_newest(&mut kept, keep_bytes);
            let mut both = orders(&sealed);
            both.extend(orders(&kept));
            assert_eq!(
                both,
                orders(&all),
                "{keep_bytes}: split in order, nothing lost"
            );
            assert!(kept.is_empty() || size(&kept) <= keep_bytes, "{keep_bytes}");
            // The kept part is the longest run of the greatest items within the bound.
            if let Some(next) = sealed.last() {
                let mut more = vec![next.clone()];
                more.extend(kept.iter().cloned());
                assert!(size(&more) > keep_bytes, "{keep_bytes}: room for one more");
            }
        }
        let mut kept = tail.clone();
        let sealed = split_newest(&mut kept, size(&all[2..]));
        assert_eq!(orders(&sealed), [(1, 1), (5, 3)]);
        assert_eq!(orders(&kept), [(5, 4), (7, 0), (9, 2)]);
    }

    #[test]
    fn a_sealed_tail_keeps_at_most_half_its_bound_and_room_for_the_new_item() {
        let tail: Vec<Stored> = (0..40).map(|k| stored(k, k as u64, 100)).collect();
        let bound = item::items_len(&tail) - 1;
        for new_bytes in [0, 10, bound / 4, bound / 2, bound - 200, bound, 2 * bound] {
            let mut kept = tail.clone();
            let sealed = seal_tail(&mut kept, bound, new_bytes);
            assert_eq!(sealed.len() + kept.len(), tail.len(), "{new_bytes}");
            let room = (bound / 2).min(bound.saturating_sub(new_bytes));
            assert!(
                kept.is_empty() || item::items_len(&kept) <= room,
                "{new_bytes}"
            );
            assert!(!sealed.is_empty(), "{new_bytes}: the oldest item is sealed");
        }
        // With room, the newest half stays.
        let mut kept = tail.clone();
        seal_tail(&mut kept, bound, 0);
        assert_eq!(kept.first().map(|s| s.item.key), Some(21));
    }

    #[test]
    fn a_tail_with_no_room_seals_whole_and_one_with_room_for_all_seals_nothing() {
        let tail = vec![stored(2, 0, 100), stored(1, 1, 100)];
        let mut kept = tail.clone();
        assert_eq!(orders(&split_newest(&mut kept, 0)), [(1, 1), (2, 0)]);
        assert!(kept.is_empty());
        let mut kept = tail.clone();
        assert!(split_newest(&mut kept, usize::MAX).is_empty());
        assert_eq!(orders(&kept), [(1, 1), (2, 0)]);
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
