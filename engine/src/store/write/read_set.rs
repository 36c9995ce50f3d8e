//! What a transaction read, to check at its commit that none of it changed: the records
//! of the parents it read (a push, removal or expiry changes its parent's record too, so
//! these cover `items` and `summary`), and the tree key ranges it scanned, entry by entry.

use std::collections::BTreeMap;
use std::ops::Bound;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::cache::Owner;
use crate::error::{Error, Result};
use crate::page::tree::Tree;
use crate::page::{PageStore, keys};

/// A key range as read: its bounds and every (key, record) it held.
struct RangeRead {
    start: Bound<Bytes>,
    end: Bound<Bytes>,
    entries: Vec<(Bytes, Bytes)>,
}

/// The reads of one transaction, as of the version it started from.
#[derive(Default)]
pub(crate) struct ReadSet {
    /// Each record read, by tree key, as the starting version held it.
    points: Mutex<BTreeMap<Bytes, Option<Bytes>>>,
    ranges: Mutex<Vec<RangeRead>>,
}

/// A tree key as a conflict names it: the parent's key, or the entry in hex.
fn describe(key: &[u8]) -> String {
    match crate::page::keys::split_parent(key) {
        Some((_, parent)) => format!("parent {:?}", String::from_utf8_lossy(parent)),
        None => format!("entry {key:x?}"),
    }
}

/// The record of `key` in `tree`, if any.
fn record(pages: &PageStore, tree: &Tree, key: &[u8]) -> Result<Option<Bytes>> {
    tree.get_bytes(&pages.reading(keys::owner_of(key)), key)
}

/// Every (key, record) of `tree` in the range.
fn range(
    pages: &PageStore,
    tree: &Tree,
    start: &Bound<Bytes>,
    end: &Bound<Bytes>,
) -> Result<Vec<(Bytes, Bytes)>> {
    // A range read stays in one collection: its start names it.
    let pages = &pages.reading(match start {
        Bound::Included(key) | Bound::Excluded(key) => keys::owner_of(key),
        Bound::Unbounded => Owner::NONE,
    });
    let mut cursor = tree.cursor(pages, start.as_ref().map(|k| k.as_ref()))?;
    let mut entries = Vec::new();
    let mut values = Vec::new();
    cursor.for_each(tree, pages, |key, value| {
        let inside = match end {
            Bound::Included(end) => key <= end,
            Bound::Excluded(end) => key < end,
            Bound::Unbounded => true,
        };
        if inside {
            values.push((key.clone(), value.clone()));
        }
        Ok(inside)
    })?;
    for (key, value) in values {
        entries.push((key, pages.value_bytes(&value)?));
    }
    Ok(entries)
}

impl ReadSet {
    /// Notes the read of record `key` in `base` (the transaction's starting version), once.
    pub fn note_point(&self, pages: &PageStore, base: &Tree, key: Bytes) -> Result<()> {
        if self.points.lock().contains_key(&key) {
            return Ok(());
        }
        let value = record(pages, base, &key)?;
        self.points.lock().insert(key, value);
        Ok(())
    }

    /// Notes a read of every record of `base` in the range.
    pub fn note_range(
        &self,
        pages: &PageStore,
        base: &Tree,
        start: Bound<Bytes>,
        end: Bound<Bytes>,
    ) -> Result<()> {
        let entries = range(pages, base, &start, &end)?;
        self.ranges.lock().push(RangeRead {
            start,
            end,
            entries,
        });
        Ok(())
    }

    /// `Ok` when everything read holds in `tree` as it did at the start; else
    /// `Error::Conflict` naming the first tree key that changed.
    pub fn check(&self, pages: &PageStore, tree: &Tree) -> Result<()> {
        let conflict = |key: &[u8]| Error::Conflict {
            what: describe(key),
        };
        for (key, value) in self.points.lock().iter() {
            if record(pages, tree, key)? != *value {
                return Err(conflict(key));
            }
        }
        for read in self.ranges.lock().iter() {
            let now = range(pages, tree, &read.start, &read.end)?;
            if now != read.entries {
                let changed = now
                    .iter()
                    .zip(&read.entries)
                    .find(|(a, b)| a != b)
                    .map(|(a, _)| a.0.clone())
                    .or_else(|| now.get(read.entries.len()).map(|e| e.0.clone()))
                    .or_else(|| read.entries.get(now.len()).map(|e| e.0.clone()))
                    .unwrap_or_default();
                return Err(conflict(&changed));
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.points.lock().is_empty() && self.ranges.lock().is_empty()
    }
}
