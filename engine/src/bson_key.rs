//! Parent keys that are BSON values (feature `serde`), as `skewdb import` keys documents by
//! their `_id`: numbers, strings, ObjectIds, booleans and dates, encoded so that the bytes'
//! order is MongoDB's order of the values (numbers below strings below ObjectIds below
//! booleans below dates; numbers by value whatever their type, so `1`, `1i64` and `1.0` are
//! one key). The bytes: `format-spec/records.md`, "BSON keys".
//!
//! ```
//! use bson::{Bson, oid::ObjectId};
//! use skewdb::bson_key;
//!
//! let keys = [Bson::Int32(-3), Bson::Double(2.5), Bson::Int64(7), Bson::String("a".into())];
//! let encoded: Vec<Vec<u8>> = keys.iter().map(|k| bson_key::encode(k).unwrap()).collect();
//! assert!(encoded.windows(2).all(|w| w[0] < w[1]));
//! assert_eq!(bson_key::encode(&Bson::Double(7.0))?, encoded[2]);
//! let id = Bson::ObjectId(ObjectId::new());
//! assert_eq!(bson_key::decode(&bson_key::encode(&id)?)?, id);
//! # Ok::<(), String>(())
//! ```

use bson::{Bson, DateTime, oid::ObjectId};

const NUMBER: u8 = 0x10;
const STRING: u8 = 0x20;
const OBJECT_ID: u8 = 0x50;
const BOOLEAN: u8 = 0x60;
const DATE: u8 = 0x70;

/// 2^64 as a double: integral doubles below it in magnitude carry the exact-integer part.
const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;

/// A double's bits turned so that unsigned byte order is numeric order.
fn ordered_bits(value: f64) -> u64 {
    let bits = value.to_bits();
    if value.is_sign_negative() {
        !bits
    } else {
        bits ^ (1 << 63)
    }
}

fn from_ordered_bits(bits: u64) -> f64 {
    if bits & (1 << 63) != 0 {
        f64::from_bits(bits ^ (1 << 63))
    } else {
        f64::from_bits(!bits)
    }
}

fn flip(value: i64) -> [u8; 8] {
    ((value as u64) ^ (1 << 63)).to_be_bytes()
}

fn unflip(bytes: [u8; 8]) -> i64 {
    (u64::from_be_bytes(bytes) ^ (1 << 63)) as i64
}

/// A number: its nearest double, then for an integral value the exact difference between
/// the integer and that double, which orders integers that round to the same double.
#[allow(
    clippy::cast_possible_truncation,
    reason = "an integer under 2^64 in magnitude is within 2^11 of its nearest double"
)]
fn encode_number(out: &mut Vec<u8>, rounded: f64, exact: Option<i128>) {
    // -0.0 is 0.
    let rounded = if rounded == 0.0 { 0.0 } else { rounded };
    out.extend_from_slice(&ordered_bits(rounded).to_be_bytes());
    if let Some(exact) = exact {
        let difference = exact - rounded as i128;
        out.extend_from_slice(&flip(difference as i64));
    }
}

/// The key bytes of `value`; an error names a type or value that is no key (a NaN, a
/// document, an array, ...).
#[allow(
    clippy::cast_possible_truncation,
    reason = "a double is made an integer only when integral and under 2^64 in magnitude"
)]
pub fn encode(value: &Bson) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(17);
    match value {
        Bson::Int32(v) => {
            out.push(NUMBER);
            encode_number(&mut out, *v as f64, Some(*v as i128));
        }
        Bson::Int64(v) => {
            out.push(NUMBER);
            encode_number(&mut out, *v as f64, Some(*v as i128));
        }
        Bson::Double(v) if v.is_nan() => return Err("NaN is not a key".to_string()),
        Bson::Double(v) => {
            out.push(NUMBER);
            let integral = v.fract() == 0.0 && v.abs() < TWO_TO_64;
            encode_number(&mut out, *v, integral.then_some(*v as i128));
        }
        Bson::String(s) => {
            out.push(STRING);
            out.extend_from_slice(s.as_bytes());
        }
        Bson::ObjectId(id) => {
            out.push(OBJECT_ID);
            out.extend_from_slice(&id.bytes());
        }
        Bson::Boolean(b) => {
            out.push(BOOLEAN);
            out.push(*b as u8);
        }
        Bson::DateTime(at) => {
            out.push(DATE);
            out.extend_from_slice(&flip(at.timestamp_millis()));
        }
        other => {
            return Err(format!(
                "{} is not a key (numbers, strings, ObjectIds, booleans and dates are)",
                type_name(other)
            ));
        }
    }
    Ok(out)
}

/// What kind of value `value` is, in the words of MongoDB's documentation and with its
/// article ("a string", "an array", "null"), for messages to people.
pub fn type_name(value: &Bson) -> &'static str {
    match value {
        Bson::Double(_) => "a double",
        Bson::String(_) => "a string",
        Bson::Array(_) => "an array",
        Bson::Document(_) => "a document",
        Bson::Boolean(_) => "a boolean",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "a regular expression",
        Bson::JavaScriptCode(_) | Bson::JavaScriptCodeWithScope(_) => "JavaScript code",
        Bson::Int32(_) => "a 32-bit integer",
        Bson::Int64(_) => "a 64-bit integer",
        Bson::Timestamp(_) => "a timestamp",
        Bson::Binary(_) => "binary data",
        Bson::ObjectId(_) => "an ObjectId",
        Bson::DateTime(_) => "a date",
        Bson::Symbol(_) => "a symbol",
        Bson::Decimal128(_) => "a decimal",
        Bson::Undefined => "undefined",
        Bson::MaxKey => "MaxKey",
        Bson::MinKey => "MinKey",
        Bson::DbPointer(_) => "a DBPointer",
    }
}

/// The value of key bytes `encode` made: an integer as `Int32` when it fits, else `Int64`;
/// any other number as `Double`.
#[allow(
    clippy::cast_possible_truncation,
    reason = "a double from any bytes saturates into i128; the sum is checked"
)]
pub fn decode(bytes: &[u8]) -> Result<Bson, String> {
    let (&tag, rest) = bytes.split_first().ok_or("an empty key is no BSON key")?;
    let eight = |at: usize| -> Result<[u8; 8], String> {
        rest.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| "a BSON number key is 8 or 16 bytes after its tag".to_string())
    };
    match tag {
        NUMBER => {
            let rounded = from_ordered_bits(u64::from_be_bytes(eight(0)?));
            match rest.len() {
                8 => Ok(Bson::Double(rounded)),
                16 => {
                    // Bytes `encode` made never overflow here; other bytes may.
                    let exact = (rounded as i128)
                        .checked_add(unflip(eight(8)?) as i128)
                        .ok_or("a BSON number key out of range")?;
                    if let Ok(small) = i32::try_from(exact) {
                        Ok(Bson::Int32(small))
                    } else if let Ok(large) = i64::try_from(exact) {
                        Ok(Bson::Int64(large))
                    } else {
                        Ok(Bson::Double(rounded))
                    }
                }
                _ => Err("a BSON number key is 8 or 16 bytes after its tag".to_string()),
            }
        }
        STRING => std::str::from_utf8(rest)
            .map(|s| Bson::String(s.to_string()))
            .map_err(|_| "a BSON string key is not UTF-8".to_string()),
        OBJECT_ID => {
            let bytes: [u8; 12] = rest
                .try_into()
                .map_err(|_| "a BSON ObjectId key is 12 bytes after its tag")?;
            Ok(Bson::ObjectId(ObjectId::from_bytes(bytes)))
        }
        BOOLEAN => match rest {
            [0] => Ok(Bson::Boolean(false)),
            [1] => Ok(Bson::Boolean(true)),
            _ => Err("a BSON boolean key is 0 or 1 after its tag".to_string()),
        },
        DATE => {
            let bytes: [u8; 8] = rest
                .try_into()
                .map_err(|_| "a BSON date key is 8 bytes after its tag")?;
            Ok(Bson::DateTime(DateTime::from_millis(unflip(bytes))))
        }
        tag => Err(format!("unknown BSON key tag {tag:#04x}")),
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use std::cmp::Ordering;

    use proptest::prelude::*;

    use super::*;

    /// MongoDB's order of two key values, computed apart from the encoding: type rank, then
    /// value (numbers exactly, across their types).
    fn reference(a: &Bson, b: &Bson) -> Ordering {
        fn rank(v: &Bson) -> u8 {
            match v {
                Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => 0,
                Bson::String(_) => 1,
                Bson::ObjectId(_) => 2,
                Bson::Boolean(_) => 3,
                Bson::DateTime(_) => 4,
                _ => unreachable!(),
            }
        }
        fn int(v: &Bson) -> Option<i64> {
            match v {
                Bson::Int32(i) => Some(*i as i64),
                Bson::Int64(i) => Some(*i),
                _ => None,
            }
        }
        /// An integer against a double, exactly.
        fn int_double(i: i64, d: f64) -> Ordering {
            if d >= 9_223_372_036_854_775_808.0 {
                return Ordering::Less;
            }
            if d < -9_223_372_036_854_775_808.0 {
                return Ordering::Greater;
            }
            let floor = d.floor();
            match (i as i128).cmp(&(floor as i128)) {
                Ordering::Equal if d > floor => Ordering::Less,
                other => other,
            }
        }
        match rank(a).cmp(&rank(b)) {
            Ordering::Equal => {}
            other => return other,
        }
        match (a, b) {
            (Bson::String(x), Bson::String(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
            (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
            (Bson::DateTime(x), Bson::DateTime(y)) => x.cmp(y),
            (Bson::Double(x), Bson::Double(y)) => x.partial_cmp(y).unwrap(),
            _ => match (int(a), int(b)) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(x), None) => int_double(x, b.as_f64().unwrap()),
                (None, Some(y)) => int_double(y, a.as_f64().unwrap()).reverse(),
                (None, None) => unreachable!(),
            },
        }
    }

    fn number() -> impl Strategy<Value = Bson> {
        let near = |base: i64| (-3i64..=3).prop_map(move |d| base.saturating_add(d));
        prop_oneof![
            any::<i32>().prop_map(Bson::Int32),
            any::<i64>().prop_map(Bson::Int64),
            prop_oneof![
                near(i64::MAX),
                near(i64::MIN),
                near(1 << 53),
                near(-(1 << 53))
            ]
            .prop_map(Bson::Int64),
            (-1000i32..1000).prop_map(|v| Bson::Double(v as f64 / 4.0)),
            any::<f64>()
                .prop_filter("a key", |v| !v.is_nan())
                .prop_map(Bson::Double),
            prop_oneof![
                Just(9_223_372_036_854_775_808.0),
                Just(-9_223_372_036_854_775_808.0),
                Just(9_007_199_254_740_992.0),
                Just(-0.0),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                Just(TWO_TO_64),
            ]
            .prop_map(Bson::Double),
        ]
    }

    fn key() -> impl Strategy<Value = Bson> {
        prop_oneof![
            4 => number(),
            1 => "[a-c\u{e9}]{0,4}".prop_map(Bson::String),
            1 => any::<[u8; 12]>().prop_map(|b| Bson::ObjectId(ObjectId::from_bytes(b))),
            1 => any::<bool>().prop_map(Bson::Boolean),
            1 => any::<i64>().prop_map(|ms| Bson::DateTime(DateTime::from_millis(ms))),
        ]
    }

    proptest! {
        #[test]
        fn key_bytes_order_as_mongodb_orders_the_values(a in key(), b in key()) {
            let (x, y) = (encode(&a).unwrap(), encode(&b).unwrap());
            prop_assert_eq!(x.cmp(&y), reference(&a, &b), "{:?} vs {:?}", a, b);
        }

        #[test]
        fn keys_decode_to_an_equal_value(a in key()) {
            let bytes = encode(&a).unwrap();
            let back = decode(&bytes).unwrap();
            prop_assert_eq!(reference(&a, &back), Ordering::Equal, "{:?} -> {:?}", a, back);
            prop_assert_eq!(encode(&back).unwrap(), bytes);
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..20)) {
            if let Ok(value) = decode(&bytes) {
                // What decodes encodes to a key of an equal value.
                prop_assert!(encode(&value).is_ok());
            }
        }
    }

    /// Found by the proptest above: a huge negative double whose saturated integer plus
    /// the most negative difference overflowed.
    #[test]
    fn a_number_key_past_every_integer_is_refused() {
        let mut bytes = vec![NUMBER, 1];
        bytes.extend([0; 15]);
        assert!(decode(&bytes).is_err());
    }

    #[test]
    fn integers_and_doubles_of_one_value_are_one_key() {
        for (int, double) in [(0i64, -0.0), (7, 7.0), (-(1 << 60), -(2f64.powi(60)))] {
            assert_eq!(
                encode(&Bson::Int64(int)).unwrap(),
                encode(&Bson::Double(double)).unwrap()
            );
        }
        assert_eq!(
            encode(&Bson::Int32(5)).unwrap(),
            encode(&Bson::Int64(5)).unwrap()
        );
        assert_eq!(
            decode(&encode(&Bson::Int64(1 << 40)).unwrap()),
            Ok(Bson::Int64(1 << 40))
        );
        assert_eq!(
            decode(&encode(&Bson::Double(2.5)).unwrap()),
            Ok(Bson::Double(2.5))
        );
    }

    #[test]
    fn values_that_are_no_keys_are_refused() {
        assert!(encode(&Bson::Double(f64::NAN)).unwrap_err().contains("NaN"));
        assert!(encode(&Bson::Document(bson::doc! {"a": 1})).is_err());
        assert!(encode(&Bson::Null).is_err());
        for bad in [
            &[][..],
            &[NUMBER, 1, 2],
            &[STRING, 0xff],
            &[BOOLEAN, 2],
            &[0x99],
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }
}
