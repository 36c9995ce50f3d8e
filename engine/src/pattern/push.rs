//! Where a pushed item goes, by layout: into the parent, out to the tail (history, overflow,
//! late items), or into a new bucket that seals the open one.

use crate::catalog::Layout;
use crate::item::{self, Stored};
use crate::record::ArrayState;

/// The largest open bucket, in encoded item bytes: a bucket seals early rather than take its
/// parent record anywhere near the record limit.
pub const MAX_BUCKET_BYTES: usize = 1024 * 1024;

/// What a push sends out of the parent record.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// An item for the array's cold history (Subset), overflow (Outlier), item chunks
    /// (Reference) or late items (Bucket), by way of the tail record.
    pub to_tail: Option<Stored>,
    /// A bucket that the push sealed, sorted, to be written as one chunk.
    pub sealed_bucket: Option<Vec<Stored>>,
    /// The push set `has_overflow`.
    pub overflowed: bool,
}

fn insert_sorted(items: &mut Vec<Stored>, stored: Stored) {
    let at = items.partition_point(|s| s.order() <= stored.order());
    items.insert(at, stored);
}

/// The start of the span-aligned window holding `key`: the greatest multiple of `span` at
/// or below it. Near `i64::MIN` that multiple may lie below the range; the window then
/// starts at `i64::MIN` (its end, `start + span`, saturates likewise at the other end).
fn bucket_start(key: i64, span: Option<i64>) -> i64 {
    span.map_or(key, |span| {
        let start = i128::from(key).div_euclid(i128::from(span)) * i128::from(span);
        i64::try_from(start).unwrap_or(i64::MIN)
    })
}

/// Applies a push to `array` (its seq already assigned) by `layout`'s rule.
pub(crate) fn push(layout: Layout, array: &mut ArrayState, stored: Stored) -> Outcome {
    array.total += 1;
    array.summary.add(&stored.item);
    let bytes_before = array.inline_bytes;
    let len = item::stored_len(&stored.item);
    let mut outcome = Outcome::default();
    match layout {
        Layout::Embed => insert_sorted(&mut array.inline, stored),
        Layout::Reference => outcome.to_tail = Some(stored),
        Layout::Subset { keep } => {
            insert_sorted(&mut array.inline, stored);
            if array.inline.len() > keep as usize {
                // The smallest key leaves the window (the new item itself when it is older
                // than all N).
                outcome.to_tail = Some(array.inline.remove(0));
            }
        }
        Layout::Outlier { inline_cap } => {
            if array.inline.len() < inline_cap as usize && !array.has_overflow {
                array.inline.push(stored);
            } else {
                outcome.to_tail = Some(stored);
            }
        }
        Layout::Bucket { max_items, span } => {
            let key = stored.item.key;
            match array.bucket_start {
                None => {
                    array.bucket_start = Some(bucket_start(key, span));
                    array.inline.push(stored);
                }
                Some(start) if key < start => outcome.to_tail = Some(stored),
                Some(start) => {
                    // Widened: a window ending past `i64::MAX` holds every later key.
                    let outside = span.is_some_and(|span| {
                        i128::from(key) >= i128::from(start) + i128::from(span)
                    });
                    // The open bucket's encoded size: its items' stored bytes (kept current
                    // by every write rule) and the list's count.
                    let full = array.inline.len() >= max_items as usize
                        || 4 + bytes_before + len > MAX_BUCKET_BYTES;
                    if outside || full {
                        // A bucket emptied by removals moves its window without a chunk.
                        if !array.inline.is_empty() {
                            outcome.sealed_bucket = Some(std::mem::take(&mut array.inline));
                        }
                        // A full bucket hands over at the item's key; a new window starts on
                        // the span's grid.
                        array.bucket_start = Some(if outside {
                            bucket_start(key, span)
                        } else {
                            key
                        });
                        array.inline.push(stored);
                    } else {
                        insert_sorted(&mut array.inline, stored);
                    }
                }
            }
        }
    }
    // The inline bytes follow what moved: in, out to the tail, or out with a sealed bucket.
    array.inline_bytes = bytes_before + len;
    if let Some(left) = &outcome.to_tail {
        array.inline_bytes -= item::stored_len(&left.item);
    }
    if let Some(bucket) = &outcome.sealed_bucket {
        array.inline_bytes -= bucket
            .iter()
            .map(|s| item::stored_len(&s.item))
            .sum::<usize>();
    }
    if (outcome.to_tail.is_some() || outcome.sealed_bucket.is_some()) && !array.has_overflow {
        array.has_overflow = true;
        outcome.overflowed = true;
    }
    check_window(layout, array);
    outcome
}

/// The layout's bound on what stays inline, and the counts every array keeps, after a
/// push: a record that broke them would be written and found only by `verify`.
fn check_window(layout: Layout, array: &ArrayState) {
    let inline = array.inline.len();
    let bound = match layout {
        Layout::Embed => usize::MAX,
        Layout::Reference => 0,
        Layout::Subset { keep } => keep as usize,
        Layout::Outlier { inline_cap } => inline_cap as usize,
        Layout::Bucket { max_items, .. } => max_items as usize,
    };
    assert!(
        inline <= bound,
        "{inline} items inline over the layout's {bound}"
    );
    assert_eq!(
        array.total, array.summary.items,
        "an array's total is its summary's count"
    );
    assert!(
        array.has_overflow || inline as u64 == array.total,
        "items outside a parent not flagged"
    );
    assert!(
        inline as u64 <= array.total,
        "more items inline than in the array"
    );
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::item::Item;

    fn push_keys(layout: Layout, keys: &[i64]) -> (ArrayState, Vec<i64>, Vec<Vec<i64>>) {
        let mut array = ArrayState::default();
        let (mut tail, mut buckets) = (Vec::new(), Vec::new());
        for key in keys {
            let seq = array.next_seq;
            array.next_seq += 1;
            let stored = Stored {
                item: Item {
                    key: *key,
                    value: None,
                    payload: Bytes::new(),
                    more: None,
                },
                seq,
            };
            let outcome = push(layout, &mut array, stored);
            tail.extend(outcome.to_tail.map(|s| s.item.key));
            buckets.extend(
                outcome
                    .sealed_bucket
                    .map(|b| b.iter().map(|s| s.item.key).collect()),
            );
        }
        (array, tail, buckets)
    }

    fn inline_keys(array: &ArrayState) -> Vec<i64> {
        array.inline.iter().map(|s| s.item.key).collect()
    }

    #[test]
    fn subset_keeps_the_greatest_keys() {
        let (array, tail, _) = push_keys(Layout::Subset { keep: 3 }, &[5, 1, 9, 7, 3, 8]);
        assert_eq!(inline_keys(&array), vec![7, 8, 9]);
        assert_eq!(tail, vec![1, 3, 5]);
        assert!(array.has_overflow);
        assert_eq!(array.total, 6);
    }

    #[test]
    fn outlier_keeps_the_first_pushed() {
        let (array, tail, _) = push_keys(Layout::Outlier { inline_cap: 2 }, &[5, 1, 9, 0]);
        assert_eq!(inline_keys(&array), vec![5, 1]);
        assert_eq!(tail, vec![9, 0]);
        let (array, tail, _) = push_keys(Layout::Outlier { inline_cap: 2 }, &[5, 1]);
        assert!(!array.has_overflow && tail.is_empty());
    }

    #[test]
    fn buckets_seal_by_count_and_span() {
        let layout = Layout::Bucket {
            max_items: 3,
            span: Some(10),
        };
        let (array, tail, buckets) = push_keys(layout, &[12, 11, 13, 14, 25, 3, 26]);
        // 12, 11, 13 fill [10, 20); 14 opens a bucket at 14; 25 opens [20, 30); 3 is late.
        assert_eq!(buckets, vec![vec![11, 12, 13], vec![14]]);
        assert_eq!(tail, vec![3]);
        assert_eq!(inline_keys(&array), vec![25, 26]);
        assert_eq!(array.bucket_start, Some(20));
    }

    #[test]
    fn bucket_windows_at_both_ends_of_the_key_range() {
        assert_eq!(bucket_start(i64::MIN, Some(10)), i64::MIN);
        assert_eq!(bucket_start(i64::MIN + 1, Some(10)), i64::MIN);
        assert_eq!(bucket_start(i64::MIN, Some(i64::MAX)), i64::MIN);
        assert_eq!(bucket_start(-1, Some(10)), -10);
        assert_eq!(bucket_start(i64::MAX, Some(10)), i64::MAX - 7);
        assert_eq!(bucket_start(i64::MAX, Some(i64::MAX)), i64::MAX);
        let layout = Layout::Bucket {
            max_items: 100,
            span: Some(10),
        };
        // Near the bottom the first window starts at i64::MIN and later keys stay in it.
        let low = [i64::MIN + 3, i64::MIN + 1, i64::MIN + 5];
        let (array, tail, buckets) = push_keys(layout, &low);
        assert_eq!(array.bucket_start, Some(i64::MIN));
        assert!(tail.is_empty() && buckets.is_empty());
        assert_eq!(inline_keys(&array), vec![low[1], low[0], low[2]]);
        // Near the top the last window's end lies past i64::MAX: i64::MAX is inside it.
        let high = [i64::MAX - 2, i64::MAX, i64::MAX - 1];
        let (array, tail, buckets) = push_keys(layout, &high);
        assert_eq!(array.bucket_start, Some(i64::MAX - 7));
        assert!(tail.is_empty() && buckets.is_empty());
        assert_eq!(inline_keys(&array), vec![high[0], high[2], high[1]]);
    }

    #[test]
    fn embed_and_reference() {
        let (array, tail, _) = push_keys(Layout::Embed, &[3, 1, 2]);
        assert_eq!(inline_keys(&array), vec![1, 2, 3]);
        assert!(tail.is_empty() && !array.has_overflow);
        let (array, tail, _) = push_keys(Layout::Reference, &[3, 1]);
        assert!(array.inline.is_empty() && array.has_overflow);
        assert_eq!(tail, vec![3, 1]);
    }
}
