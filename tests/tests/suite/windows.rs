//! `summary_windows`: a range's summary per window of a span, against the items it covers.

use std::collections::BTreeMap;
use std::ops::Bound;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skewdb::{CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};

/// Every layout, Bucket with and without a span, pushed random keys (negative ones, late
/// ones, ties): each window equals the range summary of its own bounds, the windows are
/// exactly those holding items, and their counts are the items' counts.
#[test]
fn windows_are_the_summaries_of_their_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let layouts = [
        Layout::Embed,
        Layout::Reference,
        Layout::Subset { keep: 7 },
        Layout::Outlier { inline_cap: 9 },
        Layout::Bucket {
            max_items: 16,
            span: Some(100),
        },
        Layout::Bucket {
            max_items: 16,
            span: None,
        },
    ];
    let mut spec = CollectionSpec::new("c");
    for (at, layout) in layouts.iter().enumerate() {
        spec = spec.array_with_measures(format!("a{at}"), *layout, ["v", "w"]);
    }
    let collection = db.create_collection(spec).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let mut keys: Vec<i64> = Vec::new();
    for _ in 0..4 {
        let mut batch = db.batch();
        for _ in 0..150 {
            let key = rng.random_range(-500..3000);
            keys.push(key);
            for at in 0..layouts.len() {
                let mut item = NewItem::new("").key(key).value(key as f64 * 0.25);
                if key % 3 == 0 {
                    item = item.measure("w", 1.0);
                }
                batch.push("c", "p", &format!("a{at}"), item);
            }
        }
        batch.commit().unwrap();
    }
    let ranges = [
        (Bound::Unbounded, Bound::Unbounded),
        (Bound::Included(-120), Bound::Excluded(2050)),
        (Bound::Excluded(0), Bound::Included(999)),
        (Bound::Included(3000), Bound::Unbounded),
    ];
    for at in 0..layouts.len() {
        let field = format!("a{at}");
        for span in [1, 7, 100, 1000, 1 << 40] {
            for range in ranges {
                let windows = collection
                    .summary_windows("p", &field, range, span)
                    .unwrap()
                    .unwrap();
                let mut expected: BTreeMap<i64, u64> = BTreeMap::new();
                for key in keys.iter().filter(|k| range_contains(range, **k)) {
                    *expected.entry(key.div_euclid(span) * span).or_default() += 1;
                }
                let got: BTreeMap<i64, u64> = windows.iter().map(|(s, w)| (*s, w.items)).collect();
                assert_eq!(got, expected, "{field} span {span} {range:?}");
                for (start, summary) in &windows {
                    let lower = match range.0 {
                        Bound::Unbounded => Bound::Included(*start),
                        bound if *start == windows[0].0 => bound,
                        _ => Bound::Included(*start),
                    };
                    let end = start + span;
                    let upper = match range.1 {
                        Bound::Included(last) if last < end => Bound::Included(last),
                        Bound::Excluded(last) if last <= end => Bound::Excluded(last),
                        _ => Bound::Excluded(end),
                    };
                    let direct = collection
                        .summary("p", &field, (lower, upper))
                        .unwrap()
                        .unwrap();
                    assert_eq!(summary, &direct, "{field} span {span} window {start}");
                    assert_eq!(summary.measure(1).count, direct.measure(1).count);
                }
            }
        }
    }
    // The same items, read one by one, agree with the first window's count.
    let page = collection
        .items("p", "a4", &ItemQuery::new().range(-500..-400))
        .unwrap()
        .unwrap();
    let windows = collection
        .summary_windows("p", "a4", -500..-400, 100)
        .unwrap()
        .unwrap();
    assert_eq!(
        windows.iter().map(|(_, w)| w.items).sum::<u64>(),
        page.items.len() as u64
    );
    // A parent that does not exist, a span that is not positive.
    assert!(
        collection
            .summary_windows("nobody", "a0", .., 10)
            .unwrap()
            .is_none()
    );
    let error = collection.summary_windows("p", "a0", .., 0).unwrap_err();
    assert_eq!(error.kind(), "invalid_option", "{error}");
    assert!(collection.summary_windows("p", "a0", .., -5).is_err());
}

fn range_contains(range: (Bound<i64>, Bound<i64>), key: i64) -> bool {
    let above = match range.0 {
        Bound::Included(low) => key >= low,
        Bound::Excluded(low) => key > low,
        Bound::Unbounded => true,
    };
    let below = match range.1 {
        Bound::Included(high) => key <= high,
        Bound::Excluded(high) => key < high,
        Bound::Unbounded => true,
    };
    above && below
}
