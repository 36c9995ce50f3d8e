//! The columnar item list of a sealed bucket: keys, push sequence numbers, each measure's
//! values and the payloads, each as a column of its own, so that what repeats from item to
//! item (a regular interval, a sequence counting up, values a tenth apart) costs a byte or
//! less before compression and almost nothing after. Decodes to the items the row form of
//! `item.rs` gives. The bytes: `format-spec/cold.md`, "Columnar item list".
//!
//! Keys and sequence numbers are stored as zigzag varints of their delta of deltas (the
//! first as itself, the second as its delta), in wrapping 64-bit arithmetic, so every key
//! and sequence is exact. A measure's values are stored as decimals when every one of them
//! is an integer over a power of ten that gives it back bit for bit (the manner of ALP,
//! Afroozeh et al., SIGMOD 2024): zigzag varints of the deltas of those integers; otherwise
//! as their eight bytes each.

use bytes::{BufMut, Bytes};
use integer_encoding::VarInt;

use super::items::ChunkItems;
use crate::item::{Item, MAX_MEASURES, Stored};
use crate::limits::widths::{u8_len, u32_len};

/// A measure column with no value in it (only before the last column).
const NO_VALUES: u8 = 0;
/// Every item has a value of the measure.
const ALL_VALUES: u8 = 1;
/// A bitmap follows: bit `i % 8` of byte `i / 8` set when item `i` has a value.
const SOME_VALUES: u8 = 2;

/// Values as their eight little-endian bytes.
const RAW: u8 = 0;
/// Values as integers over a power of ten: the exponent, then deltas of the integers.
const DECIMAL: u8 = 1;

/// The greatest exponent a decimal column uses: values with more decimal digits are
/// stored raw (where ten to the power is no longer exact, the division would not give the
/// value back for every integer).
const MAX_EXPONENT: u8 = 15;
/// Integers a decimal column holds are at most this in magnitude, so that each converts to
/// a float exactly.
const MAX_DECIMAL: i64 = 1 << 53;

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    (value >> 1) as i64 ^ -((value & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, value: u64) {
    let mut buf = [0u8; 10];
    let len = value.encode_var(&mut buf);
    out.put_slice(&buf[..len]);
}

/// Encodes `items` (at least one, in (key, push) order) as a columnar list.
pub(crate) fn encode(items: &[Stored], out: &mut Vec<u8>) {
    put_varint(out, items.len() as u64);
    put_deltas_of_deltas(out, items.iter().map(|s| s.item.key as u64));
    put_deltas_of_deltas(out, items.iter().map(|s| s.seq));
    let columns = (0..MAX_MEASURES)
        .rev()
        .find(|&m| items.iter().any(|s| measure(&s.item, m).is_some()))
        .map_or(0, |last| last + 1);
    out.put_u8(u8_len(columns));
    for m in 0..columns {
        put_measure(out, items, m);
    }
    for stored in items {
        put_varint(out, stored.item.payload.len() as u64);
    }
    for stored in items {
        out.put_slice(&stored.item.payload);
    }
}

/// The value of measure `m` (0 the first) of `item`.
fn measure(item: &Item, m: usize) -> Option<f64> {
    match m {
        0 => item.value,
        m => item.more.as_deref().and_then(|more| more[m - 1]),
    }
}

fn put_deltas_of_deltas(out: &mut Vec<u8>, values: impl Iterator<Item = u64>) {
    let (mut last, mut last_delta) = (None, 0u64);
    for value in values {
        let stored = match last {
            None => value,
            Some(last) => {
                let delta = value.wrapping_sub(last);
                let stored = delta.wrapping_sub(last_delta);
                last_delta = delta;
                stored
            }
        };
        put_varint(out, zigzag(stored as i64));
        last = Some(value);
    }
}

fn put_measure(out: &mut Vec<u8>, items: &[Stored], m: usize) {
    let values: Vec<f64> = items.iter().filter_map(|s| measure(&s.item, m)).collect();
    if values.is_empty() {
        out.put_u8(NO_VALUES);
        return;
    }
    if values.len() == items.len() {
        out.put_u8(ALL_VALUES);
    } else {
        out.put_u8(SOME_VALUES);
        let mut bitmap = vec![0u8; items.len().div_ceil(8)];
        for (i, stored) in items.iter().enumerate() {
            if measure(&stored.item, m).is_some() {
                bitmap[i / 8] |= 1 << (i % 8);
            }
        }
        out.put_slice(&bitmap);
    }
    match decimal_exponent(&values) {
        Some(exponent) => {
            out.put_u8(DECIMAL);
            out.put_u8(exponent);
            let scale = power_of_ten(exponent);
            let mut last = 0i64;
            for value in values {
                // `decimal_exponent` checked that each value has an integer that gives it back.
                let integer = decimal_integer(value, scale).expect("a decimal column's value");
                put_varint(out, zigzag(integer.wrapping_sub(last)));
                last = integer;
            }
        }
        None => {
            out.put_u8(RAW);
            for value in values {
                out.put_f64_le(value);
            }
        }
    }
}

/// Ten to the powers up to [`MAX_EXPONENT`], each exact.
const POWERS_OF_TEN: [f64; MAX_EXPONENT as usize + 1] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

fn power_of_ten(exponent: u8) -> f64 {
    POWERS_OF_TEN[exponent as usize]
}

/// The value a decimal column's integer stands for.
fn decimal_value(integer: i64, scale: f64) -> f64 {
    integer as f64 / scale
}

/// The integer that stands for `value` at `scale`, if the value times the scale rounds to
/// one within [`MAX_DECIMAL`] that gives the value back bit for bit.
#[allow(
    clippy::cast_possible_truncation,
    reason = "the rounded value is checked to be within 2^53 first"
)]
fn decimal_integer(value: f64, scale: f64) -> Option<i64> {
    let scaled = (value * scale).round();
    (scaled.abs() <= MAX_DECIMAL as f64)
        .then_some(scaled as i64)
        .filter(|&integer| decimal_value(integer, scale).to_bits() == value.to_bits())
}

/// The smallest exponent at which every value is an integer over ten to that power that
/// gives the value back bit for bit, if any.
fn decimal_exponent(values: &[f64]) -> Option<u8> {
    (0..=MAX_EXPONENT).find(|&exponent| {
        let scale = power_of_ten(exponent);
        values
            .iter()
            .all(|&value| decimal_integer(value, scale).is_some())
    })
}

/// Reads a columnar list, checking every length and value; the payloads are slices of
/// `bytes`.
pub(crate) fn decode(bytes: &Bytes) -> Result<Vec<Stored>, String> {
    decode_columns(bytes).map(|items| items.to_stored())
}

/// Reads a columnar list into the columns the cache holds, checking every length and value;
/// the payloads stay where they are in `bytes`.
pub(crate) fn decode_columns(bytes: &Bytes) -> Result<ChunkItems, String> {
    let mut reader = Reader { bytes, at: 0 };
    let count = reader.varint()?;
    // Every item takes at least a byte of key, one of sequence and one of payload length.
    if count == 0 || count > (bytes.len() / 3) as u64 {
        return Err(format!(
            "columnar item count {count} for {} bytes",
            bytes.len()
        ));
    }
    let count = usize::try_from(count).map_err(|_| "columnar item count too large")?;
    let keys = reader.deltas_of_deltas(count)?;
    let seqs = reader.deltas_of_deltas(count)?;
    let columns = reader.byte()? as usize;
    if columns > MAX_MEASURES {
        return Err(format!("columnar list of {columns} measures"));
    }
    let mut measures = Vec::with_capacity(columns);
    for m in 0..columns {
        let mut column = vec![f64::NAN; count];
        reader.measure(count, m + 1 == columns, |i, value| column[i] = value)?;
        measures.push(column);
    }
    let mut ends = Vec::with_capacity(count);
    let mut payload_bytes = 0usize;
    for _ in 0..count {
        let len = usize::try_from(reader.varint()?).map_err(|_| "payload length too large")?;
        payload_bytes = payload_bytes
            .checked_add(len)
            .filter(|&sum| sum <= bytes.len())
            .ok_or("payload lengths overflow")?;
        ends.push(u32_len(payload_bytes));
    }
    if payload_bytes != bytes.len() - reader.at {
        return Err("columnar payloads disagree with their lengths".to_string());
    }
    let payloads = bytes.slice(reader.at..);
    let held = if payloads.is_empty() { 0 } else { bytes.len() };
    // Keys are stored as their bits: the same 64-bit values, read as signed.
    let keys = keys.into_iter().map(|key| key as i64).collect();
    let items = ChunkItems::from_columns(keys, seqs, measures, ends, payloads, held);
    if !items.in_order() {
        return Err("columnar items out of order".to_string());
    }
    Ok(items)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let byte = *self.bytes.get(self.at).ok_or("columnar list truncated")?;
        self.at += 1;
        Ok(byte)
    }

    fn take(&mut self, len: usize) -> Result<&[u8], String> {
        let taken = self
            .bytes
            .get(self.at..self.at.saturating_add(len))
            .ok_or("columnar list truncated")?;
        self.at += len;
        Ok(taken)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let (value, len) =
            u64::decode_var(&self.bytes[self.at..]).ok_or("columnar varint truncated")?;
        self.at += len;
        Ok(value)
    }

    fn deltas_of_deltas(&mut self, count: usize) -> Result<Vec<u64>, String> {
        let mut values = Vec::with_capacity(count);
        let (mut last, mut last_delta) = (0u64, 0u64);
        for i in 0..count {
            let stored = unzigzag(self.varint()?) as u64;
            let value = if i == 0 {
                stored
            } else {
                last_delta = last_delta.wrapping_add(stored);
                last.wrapping_add(last_delta)
            };
            values.push(value);
            last = value;
        }
        Ok(values)
    }

    /// Reads a measure column of `count` items, calling `each` with the index of every item
    /// that has a value and the value. The `last` column must have one.
    fn measure(
        &mut self,
        count: usize,
        last: bool,
        mut each: impl FnMut(usize, f64),
    ) -> Result<(), String> {
        let present: Vec<usize> = match self.byte()? {
            NO_VALUES if !last => return Ok(()),
            ALL_VALUES => (0..count).collect(),
            SOME_VALUES => {
                let bitmap = self.take(count.div_ceil(8))?;
                let present: Vec<usize> = (0..count)
                    .filter(|&i| bitmap[i / 8] & 1 << (i % 8) != 0)
                    .collect();
                let padding = bitmap.last().map_or(0, |&byte| {
                    let used = count % 8;
                    if used == 0 { 0 } else { byte >> used }
                });
                if present.is_empty() || present.len() == count || padding != 0 {
                    return Err("columnar presence bitmap malformed".to_string());
                }
                present
            }
            other => return Err(format!("columnar presence {other}")),
        };
        match self.byte()? {
            RAW => {
                for &i in &present {
                    let value =
                        f64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes taken"));
                    if value.is_nan() {
                        return Err("item value is NaN".to_string());
                    }
                    each(i, value);
                }
            }
            DECIMAL => {
                let exponent = self.byte()?;
                if exponent > MAX_EXPONENT {
                    return Err(format!("decimal exponent {exponent}"));
                }
                let scale = power_of_ten(exponent);
                let mut integer = 0i64;
                for &i in &present {
                    integer = integer.wrapping_add(unzigzag(self.varint()?));
                    if integer.unsigned_abs() > MAX_DECIMAL as u64 {
                        return Err("decimal value out of range".to_string());
                    }
                    each(i, decimal_value(integer, scale));
                }
            }
            other => return Err(format!("columnar value coding {other}")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
