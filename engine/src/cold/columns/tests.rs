use proptest::prelude::*;

use super::*;
use crate::item::{Summary, encode_items, items_len};

fn reading(key: i64, value: Option<f64>, seq: u64) -> Stored {
    Stored {
        item: Item::new(key, &[value], Bytes::new()),
        seq,
    }
}

fn round_trip(items: &[Stored]) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode(items, &mut bytes);
    let decoded = decode(&Bytes::from(bytes.clone())).unwrap();
    assert_eq!(decoded, items);
    for (decoded, item) in decoded.iter().zip(items) {
        for (a, b) in [decoded.item.value]
            .iter()
            .chain(decoded.item.more.iter().flat_map(|m| m.iter()))
            .zip(
                [item.item.value]
                    .iter()
                    .chain(item.item.more.iter().flat_map(|m| m.iter())),
            )
        {
            assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits), "bit for bit");
        }
    }
    bytes
}

/// An hour of minute readings with one decimal, as a sensor's sealed bucket holds them.
fn an_hour(from_seq: u64) -> Vec<Stored> {
    (0..60)
        .map(|i| {
            let value =
                (200.0 + (i * 7 % 11) as f64 + 3.0 * (i as f64 / 10.0).sin()).round() / 10.0;
            reading(1_700_002_800 + i * 60, Some(value), from_seq + i as u64)
        })
        .collect()
}

#[test]
fn regular_readings_take_a_few_bytes_each_before_compression() {
    let items = an_hour(5_000);
    let bytes = round_trip(&items);
    // Key and sequence a byte each past the first, a value one or two, an empty payload's
    // length one: at most 5 per reading, against 29 in rows.
    assert!(bytes.len() <= 5 * items.len(), "{} bytes", bytes.len());
    assert_eq!(items_len(&items), 4 + 29 * items.len());
    // The values went as decimals of one digit.
    let mut rows = Vec::new();
    encode_items(&items, &mut rows);
    assert!(bytes.len() * 5 < rows.len());
}

#[test]
fn values_go_as_decimals_only_where_every_one_comes_back_bit_for_bit() {
    assert_eq!(decimal_exponent(&[21.3, 20.0, -4.5]), Some(1));
    assert_eq!(decimal_exponent(&[3.0, -7.0, 0.0]), Some(0));
    assert_eq!(decimal_exponent(&[0.001, 12.25]), Some(3));
    assert_eq!(decimal_exponent(&[1e-15]), Some(15));
    // Past the greatest exponent, negative zero, infinities and integers beyond 2^53.
    assert_eq!(decimal_exponent(&[1e-16]), None);
    assert_eq!(decimal_exponent(&[1.0, -0.0]), None);
    assert_eq!(decimal_exponent(&[f64::INFINITY]), None);
    assert_eq!(decimal_exponent(&[f64::NEG_INFINITY, 1.0]), None);
    assert_eq!(decimal_exponent(&[(MAX_DECIMAL as f64) * 2.0]), None);
    assert_eq!(decimal_exponent(&[MAX_DECIMAL as f64]), Some(0));
    assert_eq!(decimal_exponent(&[std::f64::consts::PI]), Some(15));
    assert_eq!(decimal_exponent(&[1.0 / 3.0]), None);
    // Each of those reads back as it was.
    for value in [
        1e-16,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN_POSITIVE,
        std::f64::consts::PI,
        1.0 / 3.0,
        MAX_DECIMAL as f64,
        -(MAX_DECIMAL as f64),
    ] {
        round_trip(&[reading(0, Some(value), 0), reading(1, Some(0.5), 1)]);
    }
}

#[test]
fn extreme_keys_and_sequences_come_back_exactly() {
    let items = vec![
        reading(i64::MIN, None, u64::MAX),
        reading(i64::MIN, None, u64::MAX),
        reading(-1, Some(1.0), 0),
        reading(0, None, 1 << 63),
        reading(i64::MAX, Some(2.0), 3),
        reading(i64::MAX, Some(3.0), u64::MAX),
    ];
    round_trip(&items);
    round_trip(&items[..1]);
}

#[test]
fn measures_missing_in_some_items_or_before_the_last_come_back() {
    let item = |key: i64, values: &[Option<f64>], payload: &'static [u8]| Stored {
        item: Item::new(key, values, Bytes::from_static(payload)),
        seq: key as u64,
    };
    let items: Vec<Stored> = (0..20)
        .map(|key| {
            item(
                key,
                &[
                    (key % 3 == 0).then_some(key as f64),
                    None,
                    Some(0.25 * key as f64),
                    None,
                    None,
                    None,
                    None,
                    (key == 7).then_some(-1.5e300),
                ],
                if key % 2 == 0 { b"" } else { b"payload" },
            )
        })
        .collect();
    let bytes = round_trip(&items);
    // The 20-item presence bitmaps have unused bits in their last byte, left zero.
    assert!(bytes.len() < items_len(&items));
    // A list whose items have no value at all has no measure column.
    let bare: Vec<Stored> = (0..4).map(|key| item(key, &[], b"x")).collect();
    round_trip(&bare);
}

#[test]
fn a_truncated_list_never_decodes() {
    let mut items = an_hour(1);
    items[3].item.payload = Bytes::from_static(b"three");
    items[4].item.value = None;
    let mut bytes = Vec::new();
    encode(&items, &mut bytes);
    for len in 0..bytes.len() {
        assert!(
            decode(&Bytes::copy_from_slice(&bytes[..len])).is_err(),
            "{len}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(decode(&Bytes::from(longer)).is_err());
}

/// The bytes of a list from its parts: count, keys and sequences (one item each, as
/// varints), then `rest`.
fn list(count: u8, rest: &[u8]) -> Bytes {
    let mut bytes = vec![count];
    bytes.extend(std::iter::repeat_n(2, 2 * count as usize)); // zigzag 1: key 1, seq 1, ...
    bytes.extend_from_slice(rest);
    Bytes::from(bytes)
}

#[test]
fn malformed_lists_are_refused_with_their_reason() {
    let refused = |bytes: Bytes, reason: &str| {
        let error = decode(&bytes).unwrap_err();
        assert!(error.contains(reason), "{error:?}, expected {reason:?}");
    };
    // A well-formed one for reference: two items, one measure of raw values, empty payloads.
    let mut good = vec![ALL_VALUES, RAW];
    good.extend(1.0f64.to_le_bytes());
    good.extend(2.0f64.to_le_bytes());
    good.extend([0, 0]);
    // Keys 1 then 1 + 1 (deltas of deltas 1, 1): in order.
    assert_eq!(
        decode(&list(2, &[&[1][..], &good].concat())).unwrap().len(),
        2
    );

    refused(Bytes::from_static(&[0]), "item count 0");
    refused(Bytes::from_static(&[0xff; 11]), "varint");
    refused(Bytes::from_static(&[100, 2, 2, 0, 0]), "item count 100");
    refused(list(2, &[9]), "9 measures");
    refused(list(2, &[1, 7]), "presence 7");
    refused(list(2, &[1, NO_VALUES]), "presence 0");
    refused(list(2, &[2, NO_VALUES, ALL_VALUES, 9]), "coding 9");
    refused(
        list(2, &[1, ALL_VALUES, DECIMAL, 16, 2, 2, 0, 0]),
        "exponent 16",
    );
    let mut nan = vec![1, ALL_VALUES, RAW];
    nan.extend(f64::NAN.to_le_bytes());
    nan.extend(1.0f64.to_le_bytes());
    nan.extend([0, 0]);
    refused(list(2, &nan), "NaN");
    // 2^53 + 1 as the first decimal: out of range.
    let mut big = vec![1, ALL_VALUES, DECIMAL, 0];
    put_varint(&mut big, zigzag(MAX_DECIMAL + 1));
    big.extend([0, 0, 0]);
    refused(list(2, &big), "out of range");
    // Bitmaps: every item set, none set, a bit past the items.
    refused(list(2, &[1, SOME_VALUES, 0b11, RAW]), "bitmap");
    refused(list(2, &[1, SOME_VALUES, 0b00, RAW]), "bitmap");
    let mut padded = vec![1, SOME_VALUES, 0b101, RAW];
    padded.extend(1.0f64.to_le_bytes());
    padded.extend([0, 0]);
    refused(list(2, &padded), "bitmap");
    // Payload lengths that do not add up to the bytes left.
    refused(list(2, &[0, 1, 0, 7, 7]), "payloads");
    let huge = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    refused(list(2, &[&[0][..], &huge, &huge].concat()), "overflow");
    // Keys going down: 1, then 1 + (-2).
    refused(
        Bytes::from_static(&[2, 2, 3, 2, 2, 0, 0, 0]),
        "out of order",
    );
}

fn arbitrary_value() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(None),
        (-100_000i64..100_000).prop_map(|i| Some(i as f64 / 10.0)),
        (-1_000_000i64..1_000_000, 0u8..6).prop_map(|(i, e)| Some(i as f64 / power_of_ten(e))),
        any::<f64>()
            .prop_filter("not NaN", |v| !v.is_nan())
            .prop_map(Some),
        Just(Some(-0.0)),
        Just(Some(f64::INFINITY)),
    ]
}

fn arbitrary_items() -> impl Strategy<Value = Vec<Stored>> {
    let key = prop_oneof![-5i64..5, any::<i64>(), (0i64..1000).prop_map(|m| m * 60)];
    let item = (
        key,
        any::<u64>(),
        proptest::collection::vec(arbitrary_value(), 0..=MAX_MEASURES),
        proptest::collection::vec(any::<u8>(), 0..4),
    )
        .prop_map(|(key, seq, values, payload)| Stored {
            item: Item::new(key, &values, payload),
            seq,
        });
    proptest::collection::vec(item, 1..80).prop_map(|mut items| {
        items.sort_by_key(Stored::order);
        items
    })
}

proptest! {
    #[test]
    fn any_items_come_back_with_their_summary(items in arbitrary_items()) {
        let mut bytes = Vec::new();
        encode(&items, &mut bytes);
        let decoded = decode(&Bytes::from(bytes)).unwrap();
        prop_assert_eq!(
            Summary::of(decoded.iter().map(|s| &s.item)),
            Summary::of(items.iter().map(|s| &s.item))
        );
        prop_assert_eq!(decoded, items);
    }

    #[test]
    fn any_bytes_decode_or_fail_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(items) = decode(&Bytes::from(bytes)) {
            prop_assert!(!items.is_empty());
            prop_assert!(items.windows(2).all(|w| w[0].order() <= w[1].order()));
        }
    }
}

/// Days from 1970-01-01 to the civil date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The weekly Mauna Loa CO2 series (`engine/tests/data/README.md`): a reading per week, in
/// seconds, with its value when the week has one.
fn mauna_loa() -> Vec<Stored> {
    let csv = include_str!("../../../tests/data/mauna-loa-co2-weekly.csv");
    csv.lines()
        .skip(1)
        .enumerate()
        .map(|(seq, line)| {
            let (date, value) = line.split_once(',').unwrap();
            let date: i64 = date.parse().unwrap();
            let days = days_from_civil(date / 10_000, date / 100 % 100, date % 100);
            reading(days * 86_400, value.parse().ok(), seq as u64)
        })
        .collect()
}

#[test]
fn a_real_series_takes_less_than_half_its_row_chunks_bytes() {
    use crate::cold::chunk::{ChunkKind, compressor, encode_chunk};
    assert_eq!(days_from_civil(1970, 1, 1), 0);
    assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    let series = mauna_loa();
    assert_eq!(series.len(), 2_284);
    assert_eq!(series.iter().filter(|s| s.item.value.is_none()).count(), 59);
    // A year of weeks per sealed bucket.
    let (mut rows, mut columns) = (0, 0);
    for bucket in series.chunks(52) {
        round_trip(bucket);
        let mut bytes = Vec::new();
        assert!(encode_chunk(ChunkKind::Bucket, bucket, &mut compressor(), &mut bytes).columnar);
        columns += bytes.len();
        bytes.clear();
        encode_chunk(ChunkKind::Items, bucket, &mut compressor(), &mut bytes);
        rows += bytes.len();
    }
    let per = |bytes: usize| bytes as f64 / series.len() as f64;
    eprintln!(
        "Mauna Loa CO2, 52 weeks per chunk: rows {rows} bytes ({:.2} per reading), columns {columns} bytes ({:.2} per reading)",
        per(rows),
        per(columns)
    );
    assert!(2 * columns < rows, "{columns} against {rows}");
}
