//! Rollups: what a bucket expiry keeps of the items it drops from an array that declares
//! them (`ArraySpec::rollup`), one summary per window `[k * span, (k + 1) * span)`. The one
//! place that encodes and decodes a rollup record's value, and that folds items and
//! summaries into windows; see `format-spec/arrays.md` (rollups) and
//! `format-spec/records.md` (the rollup record).

use std::collections::BTreeMap;

use bytes::{Buf, BufMut};

use crate::item::{Item, Summary};
use crate::item_ref::ItemRef;
use crate::limits::widths::u8_len;

/// Bytes of a rollup record's value before its summary: the window's span (8) and the
/// number of further measure summaries stored (1).
const HEADER_BYTES: usize = 8 + 1;

/// One window's rollup: the summary of the expired items whose keys fall in
/// `[start, start + span)`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rollup {
    pub span: i64,
    pub summary: Summary,
}

impl Rollup {
    /// The record's value: span i64, further measures u8, then the summary as a chunk
    /// index entry stores it.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.summary.encoded_len());
        out.put_i64_le(self.span);
        out.put_u8(u8_len(self.summary.stored_more()));
        self.summary.encode(&mut out);
        out
    }

    /// Reads a value [`Rollup::encode`] wrote for the window starting at `start`: the span
    /// positive, `start` a multiple of it, the summary's items and keys inside the window,
    /// nothing after it.
    pub fn decode(mut bytes: &[u8], start: i64) -> Result<Rollup, String> {
        if bytes.len() < HEADER_BYTES {
            return Err("rollup truncated".to_string());
        }
        let span = bytes.get_i64_le();
        let more = bytes.get_u8() as usize;
        let summary = Summary::decode(&mut bytes, more)?;
        if bytes.has_remaining() {
            return Err(format!("{} bytes after a rollup", bytes.remaining()));
        }
        if span <= 0 || window_of(start, span) != start {
            return Err(format!("rollup window at {start} of span {span}"));
        }
        let inside = |key: Option<i64>| key.is_some_and(|k| window_of(k, span) == start);
        if summary.items == 0 || !inside(summary.min_key) || !inside(summary.max_key) {
            return Err(format!(
                "rollup of window {start} (span {span}) holds keys {:?} to {:?}",
                summary.min_key, summary.max_key
            ));
        }
        Ok(Rollup { span, summary })
    }

    /// The summary as a read counts it: every item from a rollup.
    pub fn counted(mut self) -> Summary {
        self.summary.rolled_up = self.summary.items;
        self.summary
    }
}

/// The start of the window of `span` that holds `key`: the multiple of `span` at or below
/// it (`i64::MIN` for the keys whose multiple is below that, as window starts are in
/// `summary_windows`).
pub(crate) fn window_of(key: i64, span: i64) -> i64 {
    key.div_euclid(span).saturating_mul(span)
}

/// Summaries per window of a span, by start, as an expiry folds what it drops into them
/// or a read what it gathers. Sets and items come mostly in key order: the window last
/// added to is kept open beside the map, so a run of them into one window costs no lookup.
pub(crate) struct Windows {
    span: i64,
    open: Option<(i64, Summary)>,
    closed: BTreeMap<i64, Summary>,
}

impl Windows {
    pub fn new(span: i64) -> Self {
        Windows {
            span,
            open: None,
            closed: BTreeMap::new(),
        }
    }

    pub fn span(&self) -> i64 {
        self.span
    }

    /// The summary of the window starting at `start`, opened if it is not.
    fn window(&mut self, start: i64) -> &mut Summary {
        if self.open.as_ref().is_none_or(|(open, _)| *open != start) {
            let taken = self.closed.remove(&start).unwrap_or_default();
            if let Some((open, summary)) = self.open.replace((start, taken)) {
                self.closed.insert(open, summary);
            }
        }
        &mut self.open.as_mut().expect("just opened").1
    }

    /// Folds a set of items by its summary alone when its keys lie in one window; false
    /// when they do not (the caller folds its items one by one).
    pub fn fold_summary(&mut self, summary: &Summary) -> bool {
        let (Some(min), Some(max)) = (summary.min_key, summary.max_key) else {
            return true;
        };
        let start = window_of(min, self.span);
        if window_of(max, self.span) != start {
            return false;
        }
        self.window(start).merge(summary);
        true
    }

    pub fn fold_item(&mut self, item: &Item) {
        let start = window_of(item.key, self.span);
        self.window(start).add(item);
    }

    /// [`Windows::fold_item`] of an item lent in place.
    pub fn fold_ref(&mut self, item: ItemRef<'_>) {
        let key = item.key();
        self.window(window_of(key, self.span))
            .add_values(key, |m| item.measure(m));
    }

    /// Every window folded into, by start.
    pub fn into_windows(mut self) -> BTreeMap<i64, Summary> {
        if let Some((open, summary)) = self.open.take() {
            self.closed.insert(open, summary);
        }
        self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: i64, value: f64) -> Item {
        Item::new(key, &[Some(value)], bytes::Bytes::new())
    }

    #[test]
    fn a_rollup_reads_back_and_checks_its_window() {
        let summary = Summary::of(&[item(3600, 1.5), item(7199, -2.0)]);
        let rollup = Rollup {
            span: 3600,
            summary,
        };
        let bytes = rollup.encode();
        assert_eq!(Rollup::decode(&bytes, 3600).unwrap(), rollup);
        // Another window, a start off the span's multiples, a cut or a longer value.
        assert!(Rollup::decode(&bytes, 0).is_err());
        assert!(Rollup::decode(&bytes, 7200).is_err());
        assert!(Rollup::decode(&bytes[..bytes.len() - 1], 3600).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Rollup::decode(&longer, 3600).is_err());
        let mut no_span = bytes.clone();
        no_span[..8].copy_from_slice(&0i64.to_le_bytes());
        assert!(Rollup::decode(&no_span, 3600).is_err());
        let empty = Rollup {
            span: 3600,
            summary: Summary::default(),
        };
        assert!(Rollup::decode(&empty.encode(), 3600).is_err());
        assert_eq!(rollup.counted().rolled_up, 2);
    }

    #[test]
    fn windows_take_a_summary_whole_only_inside_one_window() {
        let mut windows = Windows::new(60);
        assert!(windows.fold_summary(&Summary::of(&[item(-60, 1.0), item(-1, 2.0)])));
        assert!(!windows.fold_summary(&Summary::of(&[item(59, 1.0), item(60, 2.0)])));
        windows.fold_item(&item(59, 1.0));
        windows.fold_item(&item(60, 2.0));
        windows.fold_item(&item(-30, 1.0));
        let starts: Vec<(i64, u64)> = windows
            .into_windows()
            .iter()
            .map(|(s, w)| (*s, w.items))
            .collect();
        assert_eq!(starts, [(-60, 3), (0, 1), (60, 1)]);
        // The window below every multiple of the span within i64 starts at its least.
        assert_eq!(window_of(i64::MIN, 60), i64::MIN);
        assert_eq!(window_of(i64::MIN + 60, 60), -9_223_372_036_854_775_800);
        assert_eq!(window_of(-61, 60), -120);
    }
}
