use super::*;

fn stored(key: i64, value: Option<f64>, payload: &'static [u8], seq: u64) -> Stored {
    Stored {
        item: Item {
            key,
            value,
            payload: Bytes::from_static(payload),
            more: None,
        },
        seq,
    }
}

#[test]
fn a_reader_gets_the_items_in_key_then_push_order() {
    let read = |items: &[Stored]| {
        let mut bytes = Vec::new();
        encode_items(items, &mut bytes);
        let mut reader = Bytes::from(bytes);
        let read = decode_read_items(&mut reader).unwrap();
        assert!(!reader.has_remaining());
        read.into_iter()
            .map(|item| item.payload)
            .collect::<Vec<_>>()
    };
    // In order already (every layout but Outlier keeps them so).
    let sorted = [
        stored(1, None, b"a", 0),
        stored(1, None, b"b", 1),
        stored(2, None, b"c", 2),
    ];
    assert_eq!(read(&sorted), [&b"a"[..], b"b", b"c"]);
    // In push order with keys out of order (an Outlier's first N): sorted by key, and
    // equal keys by push order whatever their place in the list.
    let pushed = [
        stored(9, None, b"late", 0),
        stored(3, None, b"second", 5),
        stored(3, None, b"first", 4),
        stored(5, Some(1.0), b"mid", 2),
    ];
    assert_eq!(read(&pushed), [&b"first"[..], b"second", b"mid", b"late"]);
    assert_eq!(read(&[]), Vec::<Bytes>::new());
    let mut truncated = Vec::new();
    encode_items(&pushed, &mut truncated);
    truncated.pop();
    assert!(decode_read_items(&mut Bytes::from(truncated)).is_err());
}

#[test]
fn items_and_summaries_round_trip() {
    let items = vec![
        stored(-5, Some(2.5), b"a", 0),
        stored(7, None, b"", 1),
        stored(7, Some(-1.0), b"xyz", 2),
    ];
    let mut bytes = Vec::new();
    encode_items(&items, &mut bytes);
    assert_eq!(bytes.len(), items_len(&items));
    let mut reader = Bytes::from(bytes.clone());
    assert_eq!(decode_items(&mut reader).unwrap(), items);
    assert!(!reader.has_remaining());
    for len in 0..bytes.len() {
        assert!(decode_items(&mut Bytes::copy_from_slice(&bytes[..len])).is_err());
    }
    let summary = Summary::of(items.iter().map(|s| &s.item));
    assert_eq!((summary.items, summary.count, summary.sum), (3, 2, 1.5));
    assert_eq!((summary.min, summary.max), (Some(-1.0), Some(2.5)));
    assert_eq!((summary.min_key, summary.max_key), (Some(-5), Some(7)));
    for summary in [summary, Summary::default()] {
        let mut out = Vec::new();
        summary.encode(&mut out);
        assert_eq!(out.len(), SUMMARY_BYTES);
        assert_eq!(Summary::decode(&mut Bytes::from(out), 0).unwrap(), summary);
    }
    // An empty set has one stored form: any other value in its unused fields is refused,
    // so that what decodes encodes back to the same bytes.
    let mut empty = Vec::new();
    Summary::default().encode(&mut empty);
    for (at, byte) in [(16, 1), (24, 0x3f), (32, 0x3f), (40, 0), (48, 1)] {
        let mut other = empty.clone();
        other[at] = byte;
        assert_ne!(other, empty);
        assert!(
            Summary::decode(&mut Bytes::from(other), 0).is_err(),
            "byte {at}"
        );
    }
}

#[test]
fn merge_equals_summary_of_union() {
    let a = [Item {
        key: 1,
        value: Some(1.0),
        payload: Bytes::new(),
        more: None,
    }];
    let b = [
        Item {
            key: 9,
            value: None,
            payload: Bytes::new(),
            more: None,
        },
        Item {
            key: 3,
            value: Some(5.0),
            payload: Bytes::new(),
            more: None,
        },
    ];
    let mut merged = Summary::of(&a);
    merged.merge(&Summary::of(&b));
    assert_eq!(merged, Summary::of(a.iter().chain(&b)));
}

#[test]
fn items_with_several_measures_round_trip_and_summarize_per_measure() {
    // Three measures; each item has some of them.
    let item = |key, values: &[Option<f64>]| Stored {
        item: Item::new(key, values, "p"),
        seq: key as u64,
    };
    let items = vec![
        item(1, &[Some(20.0), Some(0.4), None]),
        item(2, &[None, None, Some(7.0)]),
        item(3, &[Some(22.0), None, None, None]),
        item(4, &[None, Some(0.5)]),
        item(5, &[]),
    ];
    // The absent measures at the end are left out, in memory and on disk.
    assert_eq!(items[2].item.more, None);
    assert_eq!(items[4].item.more, None);
    assert_eq!(items[3].item.measure(1), Some(0.5));
    let mut bytes = Vec::new();
    encode_items(&items, &mut bytes);
    assert_eq!(bytes.len(), items_len(&items));
    // Item 1 stores a value, a mask and one more value; item 3 only its value.
    assert_eq!(
        stored_len(&items[0].item),
        ITEM_OVERHEAD_BYTES + 8 + 1 + 8 + 1
    );
    assert_eq!(stored_len(&items[2].item), ITEM_OVERHEAD_BYTES + 8 + 1);
    assert_eq!(
        decode_items(&mut Bytes::from(bytes.clone())).unwrap(),
        items
    );
    for len in 0..bytes.len() {
        assert!(decode_items(&mut Bytes::copy_from_slice(&bytes[..len])).is_err());
    }
    let read = decode_read_items(&mut Bytes::from(bytes.clone())).unwrap();
    assert_eq!(read[0].measure(1), Some(0.4));
    assert_eq!(read[1].measure(2), Some(7.0));
    assert_eq!((read[1].measure(0), read[1].measure(1)), (None, None));
    assert_eq!(read[4].measure(7), None);

    let summary = Summary::of(items.iter().map(|s| &s.item));
    assert_eq!((summary.items, summary.count, summary.sum), (5, 2, 42.0));
    let humidity = summary.measure(1);
    assert_eq!(
        (humidity.count, humidity.min, humidity.max),
        (2, Some(0.4), Some(0.5))
    );
    assert_eq!(humidity.mean(), Some(0.45));
    assert_eq!((summary.measure(2).count, summary.measure(2).sum), (1, 7.0));
    assert_eq!(summary.measure(3), MeasureSummary::default());
    assert_eq!(summary.measure(0).mean(), summary.mean());
    // Stored with the two further measures it has values of, and read back.
    assert_eq!(summary.stored_more(), 2);
    let mut out = Vec::new();
    summary.encode(&mut out);
    assert_eq!(out.len(), summary.encoded_len());
    assert_eq!(out.len(), SUMMARY_BYTES + 2 * MEASURE_SUMMARY_BYTES);
    assert_eq!(
        Summary::decode(&mut Bytes::from(out.clone()), 2).unwrap(),
        summary
    );
    // Read with another count of further measures than stored: refused.
    assert!(Summary::decode(&mut Bytes::from(out.clone()), 3).is_err());
    let mut short = Bytes::from(out.clone());
    let first = Summary::decode(&mut short, 1).unwrap();
    assert_eq!(short.len(), MEASURE_SUMMARY_BYTES);
    assert_ne!(first, summary);
    // A last stored measure without values is not the canonical form.
    let mut trailing = out.clone();
    trailing.truncate(SUMMARY_BYTES + MEASURE_SUMMARY_BYTES);
    MeasureSummary::default().encode(&mut trailing);
    assert!(Summary::decode(&mut Bytes::from(trailing), 2).is_err());
    assert!(Summary::decode(&mut Bytes::from(out), MAX_MEASURES).is_err());

    // Summaries merge per measure, whatever measures each side holds.
    let mut merged = Summary::of(items[..2].iter().map(|s| &s.item));
    merged.merge(&Summary::of(items[2..].iter().map(|s| &s.item)));
    assert_eq!(merged, summary);
    let mut other_way = Summary::of(items[3..].iter().map(|s| &s.item));
    other_way.merge(&Summary::of(items[..3].iter().map(|s| &s.item)));
    assert_eq!(other_way, summary);
    // Equal whether or not measures without values are held.
    let single = Summary::of(items[2..3].iter().map(|s| &s.item));
    assert!(single.more.is_none());
    let mut padded = single.clone();
    padded.more = Some(Box::new([MeasureSummary::default(); MAX_MEASURES - 1]));
    assert_eq!(padded, single);
    assert_eq!(padded.stored_more(), 0);
    assert_ne!(single, summary);
}

#[test]
fn bad_measure_bytes_are_refused() {
    let one = Stored {
        item: Item::new(1, &[None, Some(1.0)], ""),
        seq: 0,
    };
    let mut bytes = Vec::new();
    encode_items(&[one], &mut bytes);
    // count 4, key 8, seq 8, then flags at 20 and the mask at 21.
    assert_eq!((bytes[20], bytes[21]), (HAS_MORE, 1));
    for (at, byte, what) in [
        (21, 0, "mask without measures"),
        (21, 0x80, "ninth measure"),
        (20, 4, "unknown flag"),
    ] {
        let mut bad = bytes.clone();
        bad[at] = byte;
        assert!(decode_items(&mut Bytes::from(bad)).is_err(), "{what}");
    }
    let mut nan = bytes.clone();
    nan[22..30].copy_from_slice(&f64::NAN.to_le_bytes());
    assert!(decode_items(&mut Bytes::from(nan)).is_err());
}

#[test]
fn new_items_place_named_values_by_the_arrays_measures() {
    let measures = ["t".to_string(), "h".to_string(), "p".to_string()];
    let mut new = NewItem::new("")
        .measure("h", 0.5)
        .value(20.0)
        .measure("h", 0.6);
    assert!(!new.has_nan());
    new.resolve(&measures).unwrap();
    let two = |more: &More| more.as_ref().map(|m| m[..2].to_vec());
    assert_eq!(
        (new.value, two(&new.more)),
        (Some(20.0), Some(vec![Some(0.6), None]))
    );
    let mut first = NewItem::new("").value(1.0).measure("t", 2.0);
    first.resolve(&measures).unwrap();
    assert_eq!((first.value, first.more), (Some(2.0), None));
    let mut last = NewItem::new("").measure("p", 3.0);
    last.resolve(&measures).unwrap();
    assert_eq!(two(&last.more), Some(vec![None, Some(3.0)]));
    assert!(
        last.more
            .is_some_and(|m| m[2..].iter().all(Option::is_none))
    );
    let mut unknown = NewItem::new("").measure("x", 1.0);
    assert_eq!(unknown.resolve(&measures), Err("x".to_string()));
    assert!(NewItem::new("").measure("t", f64::NAN).has_nan());
}

proptest::proptest! {
    /// A page of a list (the first `limit` wanted items in either order) is what
    /// decoding every item, filtering, sorting and cutting gives, and the wanted items
    /// picked straight into a vector what decoding every item and filtering gives; a
    /// damaged list is refused by all alike.
    #[test]
    fn a_page_of_a_list_is_the_first_wanted_of_all_its_items(
        keys in proptest::collection::vec((0i64..40, proptest::option::of(0.0f64..9.0), 0u8..3), 0..60),
        sorted in proptest::bool::ANY,
        below in 0i64..45,
        descending in proptest::bool::ANY,
        limit in 0usize..70,
        cut in proptest::option::of(0usize..400),
    ) {
        let mut items: Vec<Stored> = keys
            .iter()
            .enumerate()
            .map(|(seq, &(key, value, extra))| {
                let mut s = stored(key, value, b"payload", seq as u64);
                if extra == 2 {
                    let mut more = Box::new([None; MAX_MEASURES - 1]);
                    more[3] = Some(key as f64);
                    s.item.more = Some(more);
                }
                s
            })
            .collect();
        if sorted {
            items.sort_by_key(Stored::order);
        }
        let mut bytes = Vec::new();
        encode_items(&items, &mut bytes);
        if let Some(cut) = cut {
            bytes.truncate(cut.min(bytes.len()));
        }
        let order = if descending { Order::Descending } else { Order::Ascending };
        let wanted = |key: i64, _seq: u64| key < below;
        let mut whole = Bytes::from(bytes);
        let all = decode_items(&mut whole.clone());
        let mut picked = vec![stored(-1, None, b"there before", 0)];
        let picked = decode_picked_items(&mut whole.clone(), wanted, &mut picked).map(|()| picked);
        let mut page = Vec::new();
        let page = decode_first_items(&mut whole, wanted, order, limit, &mut page).map(|()| page);
        match all {
            Ok(mut all) => {
                // Every wanted item, in the list's order, after what the vector held.
                let mut expected = vec![stored(-1, None, b"there before", 0)];
                expected.extend(all.iter().filter(|s| wanted(s.item.key, s.seq)).cloned());
                proptest::prop_assert_eq!(picked, Ok(expected));
                all.retain(|s| wanted(s.item.key, s.seq));
                all.sort_by_key(Stored::order);
                if descending {
                    all.reverse();
                }
                all.truncate(limit);
                proptest::prop_assert_eq!(page, Ok(all));
            }
            Err(reason) => {
                proptest::prop_assert_eq!(picked, Err(reason.clone()));
                proptest::prop_assert_eq!(page, Err(reason));
            }
        }
    }
}
