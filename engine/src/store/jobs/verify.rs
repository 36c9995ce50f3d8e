//! `verify` (and `skewdb inspect`, which prints what it reports): read every frame of every
//! segment and every page reachable from the root, checking checksums and the tree's
//! invariants.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::cache::Owner;
use crate::cold::ChunkRef;
use crate::cold::chunk as cold_chunk;
use crate::error::{Error, Result};
use crate::item::{MeasureSummary, Summary};
use crate::log::frame::SEGMENT_HEADER_BYTES;
use crate::log::{
    FrameKind, LogTail, check_page_file_header, read_segment_header, scan_segment, segment_name,
};
use crate::page::keys;
use crate::page::node::{Node, Value};
use crate::store::jobs::segments::{page_file_ids, segment_ids};
use crate::store::read::decode::{decode_items, decode_record, decode_rollup};
use crate::store::shared::Shared;
use crate::store::versions::Version;

/// One hot log segment as `verify` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    /// The segment's id.
    pub segment_id: u32,
    /// Its file name.
    pub file: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// The sequence number of its first frame.
    pub first_lsn: u64,
    /// Frames of committed batches.
    pub batch_frames: u64,
    /// Frames of page images.
    pub page_frames: u64,
}

/// What `verify` read, after checking everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    /// Every file of the directory with its length.
    pub files: Vec<(String, u64)>,
    /// The hot log's segments, then the page files.
    pub segments: Vec<SegmentInfo>,
    /// The page size.
    pub page_bytes: u64,
    /// Where redo replay starts at the next open.
    pub replay_from: Option<LogTail>,
    /// Levels of the tree.
    pub tree_depth: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Internal pages.
    pub internal_pages: u64,
    /// Pages changed since the last checkpoint.
    pub dirty_pages: u64,
    /// Parent records.
    pub records: u64,
    /// Records too large for a page, stored in the log.
    pub large_records: u64,
    /// Bytes of all records.
    pub record_bytes: u64,
    /// Bytes of the largest record.
    pub largest_record_bytes: u64,
    /// Cold chunks referenced by the chunk index.
    pub chunks: u64,
    /// Rollup records: one per window of expired items an array keeps rollups of.
    pub rollups: u64,
    /// Bytes of the rollup records, keys and values.
    pub rollup_bytes: u64,
    /// Cold segment files with their lengths.
    pub cold_segments: Vec<(String, u64)>,
    /// Collection name and its number of parent records.
    pub collections: Vec<(String, u64)>,
}

/// The report of a successful `verify`.
pub type VerifyReport = Inspection;

impl Shared {
    /// Checks every checksum in the log and every invariant of the tree.
    pub(in crate::store) fn verify(&self) -> Result<Inspection> {
        // Holding the writer keeps the log's end still while it is read; no checkpoint is
        // half written meanwhile (one removes files outside the writer).
        let _no_checkpoint = self.jobs.checkpoints.turn();
        let writer = self.commits.lock();
        let storage = self.pages.storage.as_ref();
        let mut inspection = Inspection {
            page_bytes: self.pages.page_bytes as u64,
            replay_from: Some(writer.checkpoint_tail()),
            ..Inspection::default()
        };
        let mut names = storage.list()?;
        names.sort();
        for name in names {
            let len = storage.len(&name)?;
            inspection.files.push((name, len));
        }
        // (the segment id, and the lsn its successor must start at)
        let mut expected_lsn: Option<(u32, u64)> = None;
        for segment_id in segment_ids(storage)? {
            let header = read_segment_header(storage, segment_id)?;
            let name = segment_name(segment_id);
            let mut info = SegmentInfo {
                segment_id,
                file: name.clone(),
                bytes: storage.len(&name)?,
                first_lsn: header.first_lsn,
                batch_frames: 0,
                page_frames: 0,
            };
            // Segments no checkpoint needs are removed, so ids may have gaps: the next id
            // must continue the lsns exactly, a later one only go past them.
            let follows = expected_lsn.is_none_or(|(previous, lsn)| {
                if previous + 1 == segment_id {
                    header.first_lsn == lsn
                } else {
                    header.first_lsn >= lsn
                }
            });
            if !follows {
                return Err(Error::corruption(
                    &name,
                    16,
                    "segment's first lsn does not follow the previous segment",
                ));
            }
            let mut last = header.first_lsn.checked_sub(1);
            let stop = scan_segment(
                storage,
                segment_id,
                SEGMENT_HEADER_BYTES as u64,
                |frame, loc, _| {
                    if last.is_some_and(|l| l + 1 != frame.lsn)
                        || (last.is_none() && frame.lsn != header.first_lsn)
                    {
                        return Err(Error::corruption(&name, loc.offset, "lsn out of sequence"));
                    }
                    last = Some(frame.lsn);
                    match frame.kind {
                        FrameKind::Page => info.page_frames += 1,
                        _ => info.batch_frames += 1,
                    }
                    Ok(())
                },
            )?;
            if let Some(bad) = stop.bad {
                return Err(Error::corruption(&name, stop.end, bad.describe()));
            }
            expected_lsn = Some((segment_id, last.map_or(header.first_lsn, |l| l + 1)));
            inspection.segments.push(info);
        }
        self.check_page_files(&mut inspection)?;
        self.check_cold_segments(&mut inspection)?;
        drop(writer);
        self.check_tree(&mut inspection)?;
        Ok(inspection)
    }

    /// Walks every frame of every page file, referenced or not: a header naming the file,
    /// page images only, their lsns from 1 on, none bad.
    fn check_page_files(&self, inspection: &mut Inspection) -> Result<()> {
        let storage = self.pages.storage.as_ref();
        for id in page_file_ids(storage)? {
            check_page_file_header(storage, id)?;
            let name = segment_name(id);
            let mut info = SegmentInfo {
                segment_id: id,
                file: name.clone(),
                bytes: storage.len(&name)?,
                first_lsn: 1,
                batch_frames: 0,
                page_frames: 0,
            };
            let mut next = 1;
            let stop = scan_segment(storage, id, SEGMENT_HEADER_BYTES as u64, |frame, loc, _| {
                if frame.kind != FrameKind::Page {
                    return Err(Error::corruption(
                        &name,
                        loc.offset,
                        "page file frame is no page",
                    ));
                }
                if frame.lsn != next {
                    return Err(Error::corruption(&name, loc.offset, "lsn out of sequence"));
                }
                next += 1;
                info.page_frames += 1;
                Ok(())
            })?;
            if let Some(bad) = stop.bad {
                return Err(Error::corruption(&name, stop.end, bad.describe()));
            }
            inspection.segments.push(info);
        }
        Ok(())
    }

    /// Walks every chunk frame of every cold segment, referenced or not, checking each.
    fn check_cold_segments(&self, inspection: &mut Inspection) -> Result<()> {
        let storage = self.pages.storage.as_ref();
        let mut ids: Vec<u32> = storage
            .list()?
            .iter()
            .filter_map(|n| cold_chunk::parse_segment_name(n))
            .collect();
        ids.sort_unstable();
        for id in ids {
            let name = cold_chunk::segment_name(id);
            let bytes = storage.map(&name)?;
            let bytes = bytes.as_ref();
            cold_chunk::check_segment_header(bytes, id)?;
            let mut offset = cold_chunk::SEGMENT_HEADER_BYTES;
            while offset < bytes.len() {
                let rest = &bytes[offset..];
                let len = cold_chunk::framed_len(rest);
                match len {
                    Some(len) if len <= rest.len() && cold_chunk::check_framing(&rest[..len]) => {
                        offset += len
                    }
                    _ => {
                        return Err(Error::corruption(
                            &name,
                            offset as u64,
                            "damaged cold chunk",
                        ));
                    }
                }
            }
            inspection.cold_segments.push((name, bytes.len() as u64));
        }
        Ok(())
    }

    fn check_tree(&self, inspection: &mut Inspection) -> Result<()> {
        let version = self.current();
        let tree = &version.tree;
        inspection.dirty_pages = tree.table.dirty_count() as u64;
        let mut checker = Checker::default();
        let mut leaf_depth = None;
        let mut large_live: std::collections::BTreeMap<u32, u64> = Default::default();
        // Each page with the key bounds its parent puts on it.
        let mut pending: Vec<(u64, usize, Option<Bytes>, Option<Bytes>)> =
            vec![(tree.root, 0, None, None)];
        while let Some((id, depth, low, high)) = pending.pop() {
            if depth > 64 {
                return Err(self
                    .pages
                    .tree_corruption(id, "tree deeper than any valid tree"));
            }
            let node = tree.node(&self.pages.maintaining(), id)?;
            if node.encoded_len() > self.pages.page_bytes {
                return Err(self
                    .pages
                    .tree_corruption(id, "page larger than the page size"));
            }
            let in_bounds = |key: &Bytes| {
                low.as_ref().is_none_or(|l| key >= l) && high.as_ref().is_none_or(|h| key < h)
            };
            match node.as_ref() {
                Node::Internal { keys, children, .. } => {
                    inspection.internal_pages += 1;
                    if children.len() != keys.len() + 1 || !keys.iter().all(in_bounds) {
                        return Err(self
                            .pages
                            .tree_corruption(id, "separator keys outside the parent's bounds"));
                    }
                    // Children are visited in key order: push them in reverse.
                    for (index, child) in children.iter().enumerate().rev() {
                        let child_low = if index == 0 {
                            low.clone()
                        } else {
                            Some(keys[index - 1].clone())
                        };
                        let child_high = keys.get(index).cloned().or_else(|| high.clone());
                        pending.push((*child, depth + 1, child_low, child_high));
                    }
                }
                Node::Leaf { entries, .. } => {
                    inspection.leaf_pages += 1;
                    if *leaf_depth.get_or_insert(depth) != depth {
                        return Err(self.pages.tree_corruption(id, "leaves at different depths"));
                    }
                    for (key, value) in entries.all().iter() {
                        if !in_bounds(key) || key.len() < 4 {
                            return Err(self
                                .pages
                                .tree_corruption(id, "leaf key outside its parent's bounds"));
                        }
                        let bytes = self.pages.maintaining().value_bytes(value)?;
                        if let Value::Large(large) = value {
                            inspection.large_records += 1;
                            *large_live.entry(large.segment_id).or_default() +=
                                large.value_len as u64;
                        }
                        self.check_entry(&version, &mut checker, inspection, key, bytes)
                            .map_err(|reason| match reason {
                                Check::Error(error) => self.placed(error, &version.tree, key),
                                Check::Bad(reason) => {
                                    let (file, offset) = version.tree.place_of(id);
                                    Error::corruption(file, offset, format!("page {id}: {reason}"))
                                }
                            })?;
                    }
                }
            }
        }
        checker
            .finish()
            .map_err(|reason| Error::corruption("page store", 0, reason))?;
        if large_live != *tree.large_live {
            return Err(Error::corruption(
                "page store",
                0,
                format!(
                    "large records per segment {large_live:?}, the accounting says {:?}",
                    tree.large_live
                ),
            ));
        }
        if checker.cold_live != *tree.cold_live {
            return Err(Error::corruption(
                "page store",
                0,
                format!(
                    "chunk bytes per cold segment {:?}, the accounting says {:?}",
                    checker.cold_live, tree.cold_live
                ),
            ));
        }
        inspection.tree_depth = leaf_depth.unwrap_or(0) as u64 + 1;
        inspection.chunks = checker.chunks;
        inspection.collections = version
            .catalog
            .by_name
            .values()
            .map(|info| {
                (
                    info.spec.name().to_string(),
                    checker.parents.get(&info.id).copied().unwrap_or(0),
                )
            })
            .collect();
        Ok(())
    }

    fn check_entry(
        &self,
        version: &Version,
        checker: &mut Checker,
        inspection: &mut Inspection,
        key: &Bytes,
        bytes: Bytes,
    ) -> Result<(), Check> {
        let space = keys::lead_of(key).ok_or_else(|| Check::Bad("short tree key".to_string()))?;
        let collection = space & !(keys::ARRAY_SPACE | keys::OUTLIER_SPACE);
        let catalog = &version.catalog;
        let Some(info) = catalog.by_id(collection).cloned() else {
            if catalog.is_retired(collection, None) {
                return self.check_retired(checker, key, bytes);
            }
            return Err(Check::Bad("record of an unknown collection".to_string()));
        };
        if space & keys::ARRAY_SPACE != 0 {
            let (parent, slot, kind, rest) = keys::split_array(key)
                .ok_or_else(|| Check::Bad("malformed array key".to_string()))?;
            let Some(field) = info.field_of_slot(slot) else {
                if catalog.is_retired(collection, Some(slot)) {
                    return self.check_retired(checker, key, bytes);
                }
                return Err(Check::Bad("array record of an unknown field".to_string()));
            };
            // The checker holds keys until the end of the walk: copies, not views of the
            // pages they were read from (which would keep every page walked in memory).
            let id = (collection, Bytes::copy_from_slice(&parent), field);
            match kind {
                keys::KIND_TAIL => {
                    let items = decode_items(bytes, key).map_err(Check::Error)?;
                    let summary = Summary::of(items.iter().map(|s| &s.item));
                    checker.outside.entry(id).or_default().merge(&summary);
                }
                keys::KIND_CHUNK if rest.len() == 12 => {
                    let entry = ChunkRef::decode(bytes).map_err(Check::Bad)?;
                    let max_key = keys::from_sortable(rest[..8].try_into().expect("8 bytes"));
                    if entry.summary.max_key != Some(max_key) {
                        return Err(Check::Bad(
                            "chunk key differs from its chunk's max key".to_string(),
                        ));
                    }
                    // Reads the chunk: checksum, decompression, items against the summary.
                    self.cold.items(&entry, Owner::NONE).map_err(Check::Error)?;
                    checker.chunks += 1;
                    *checker.cold_live.entry(entry.loc.segment_id).or_default() +=
                        entry.loc.len as u64;
                    checker.outside.entry(id).or_default().merge(&entry.summary);
                }
                keys::KIND_ROLLUP if rest.len() == 8 => {
                    let start = keys::from_sortable(rest[..].try_into().expect("8 bytes"));
                    let rollup = decode_rollup(&bytes, key, start).map_err(Check::Error)?;
                    inspection.rollups += 1;
                    inspection.rollup_bytes += (key.len() + bytes.len()) as u64;
                    // Rollups are not in the parent's summary: that they have a parent is
                    // checked here, once per run of one parent's rollups.
                    let owner = (collection, id.1.clone());
                    if checker.rollups_of.as_ref() != Some(&owner) {
                        let tree_key = keys::parent(collection, &parent);
                        let pages = self.pages.maintaining();
                        if version
                            .tree
                            .get_entry(&pages, &tree_key)
                            .map_err(Check::Error)?
                            .is_none()
                        {
                            return Err(Check::Bad(format!(
                                "rollups of array {field} of {parent:?}, a parent that does not exist"
                            )));
                        }
                        checker.rollups_of = Some(owner);
                    }
                    // The declared span, or one it was widened from (which divides it).
                    let declared = info.spec.arrays()[field].rollup;
                    if declared.is_none_or(|declared| declared % rollup.span != 0) {
                        return Err(Check::Bad(format!(
                            "a rollup of span {} in an array declaring {declared:?}",
                            rollup.span
                        )));
                    }
                }
                _ => return Err(Check::Bad("unknown array record kind".to_string())),
            }
        } else if space & keys::OUTLIER_SPACE != 0 {
            let (slot, parent) = keys::split_outlier(key)
                .ok_or_else(|| Check::Bad("malformed outlier marker".to_string()))?;
            let Some(field) = info.field_of_slot(slot) else {
                if catalog.is_retired(collection, Some(slot)) {
                    return Ok(());
                }
                return Err(Check::Bad("outlier marker of an unknown field".to_string()));
            };
            checker
                .markers
                .insert((collection, Bytes::copy_from_slice(&parent), field));
        } else {
            let parent = keys::parent_key_of(key);
            let record = decode_record(bytes.clone(), &info, &parent).map_err(Check::Error)?;
            *checker.parents.entry(collection).or_default() += 1;
            inspection.records += 1;
            inspection.record_bytes += bytes.len() as u64;
            inspection.largest_record_bytes =
                inspection.largest_record_bytes.max(bytes.len() as u64);
            for (field, array) in record.arrays.iter().enumerate() {
                let inline = Summary::of(array.inline.iter().map(|s| &s.item));
                if !array.has_overflow {
                    // Everything is inline: check now rather than hold it until the end.
                    if !same_summary(&inline, &array.summary) {
                        return Err(Check::Bad(format!(
                            "array {field}: inline items {inline:?}, parent claims {:?}",
                            array.summary
                        )));
                    }
                    continue;
                }
                // Only overflowed arrays wait for their tail and chunks, met later in key order.
                checker.expected.insert(
                    (collection, Bytes::copy_from_slice(&parent), field),
                    (array.summary.clone(), inline),
                );
            }
        }
        Ok(())
    }
}

impl Shared {
    /// A record a dropped collection or array left, not yet reclaimed: no reader sees it,
    /// but a chunk it points at still holds its cold bytes until it goes.
    fn check_retired(&self, checker: &mut Checker, key: &Bytes, bytes: Bytes) -> Result<(), Check> {
        if keys::is_chunk_entry(key) {
            let entry = ChunkRef::decode(bytes).map_err(Check::Bad)?;
            checker.chunks += 1;
            *checker.cold_live.entry(entry.loc.segment_id).or_default() += entry.loc.len as u64;
        }
        Ok(())
    }
}

enum Check {
    Error(Error),
    Bad(String),
}

/// What the tree walk gathers to check each array: the parent's claims, and what lies outside.
#[derive(Default)]
struct Checker {
    parents: BTreeMap<u32, u64>,
    /// Overflowed arrays: the parent's summary and the summary of its inline items.
    expected: BTreeMap<(u32, Bytes, usize), (Summary, Summary)>,
    outside: BTreeMap<(u32, Bytes, usize), Summary>,
    markers: std::collections::BTreeSet<(u32, Bytes, usize)>,
    /// The parent whose rollups the walk is in, found to exist.
    rollups_of: Option<(u32, Bytes)>,
    chunks: u64,
    /// Chunk bytes per cold segment, to hold against the tree's accounting.
    cold_live: BTreeMap<u32, u64>,
}

fn same_summary(a: &Summary, b: &Summary) -> bool {
    // Sums of the same values added in another order or grouping differ by rounding, and an
    // overflow (to an infinity, or NaN once both meet) can happen in one order and not
    // another: a sum is checked only when both are finite, and then within what rounding
    // can explain.
    let measures = a.measures_held().max(b.measures_held());
    a.items == b.items
        && a.min_key == b.min_key
        && a.max_key == b.max_key
        && (0..measures).all(|at| same_measure(&a.measure(at), &b.measure(at)))
}

/// [`same_summary`] for one measure's values.
fn same_measure(a: &MeasureSummary, b: &MeasureSummary) -> bool {
    let close =
        !(a.sum.is_finite() && b.sum.is_finite()) || (a.sum - b.sum).abs() <= sum_rounding_bound(a);
    a.count == b.count && a.min == b.min && a.max == b.max && close
}

/// How far apart two sums of a summary's values, added in any two orders, can be. Adding
/// n values one after another is off by at most (n - 1) * u * sum(|x|), u being half the
/// machine epsilon, whatever the order or grouping; sum(|x|) is at most n times the largest
/// magnitude, which the summary's min and max bound. So two sums differ by at most
/// n * n * epsilon * that magnitude (twice the bound, with room for the second-order term).
/// Values that cancel make this wide: -MAX, 88 and MAX add up to 0 or to 88 depending on
/// the order.
fn sum_rounding_bound(summary: &MeasureSummary) -> f64 {
    let magnitude = summary
        .min
        .unwrap_or(0.0)
        .abs()
        .max(summary.max.unwrap_or(0.0).abs());
    let n = summary.count as f64;
    n * n * f64::EPSILON * magnitude
}

impl Checker {
    fn finish(&self) -> Result<(), String> {
        for marker in &self.markers {
            if !self.expected.contains_key(marker) {
                return Err(format!(
                    "array {} of {:?}: outlier marker without an overflowed array",
                    marker.2, marker.1
                ));
            }
        }
        for (id, outside) in &self.outside {
            if !self.expected.contains_key(id) {
                return Err(format!(
                    "array {} of {:?}: items outside a parent that claims none",
                    id.2, id.1
                ));
            }
            if outside.items == 0 {
                return Err(format!("empty array record of {:?}", id.1));
            }
        }
        for (id, (summary, inline)) in &self.expected {
            let Some(outside) = self.outside.get(id) else {
                return Err(format!(
                    "array {} of {:?}: overflow flag set but no items outside",
                    id.2, id.1
                ));
            };
            let mut all = inline.clone();
            all.merge(outside);
            if !same_summary(&all, summary) {
                return Err(format!(
                    "array {} of {:?}: items found {all:?}, parent claims {summary:?}",
                    id.2, id.1
                ));
            }
            if !self.markers.contains(id) {
                return Err(format!(
                    "array {} of {:?}: overflowed but has no outlier marker",
                    id.2, id.1
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(count: u64, sum: f64, min: f64, max: f64) -> Summary {
        Summary {
            items: count,
            count,
            sum,
            min: Some(min),
            max: Some(max),
            min_key: Some(0),
            max_key: Some(count as i64 - 1),
            rolled_up: 0,
            more: None,
        }
    }

    /// A rollup whose parent is gone (as a parent's delete batched after an expiry once left
    /// them) is reported: the parent's summary does not count rollups, so nothing else would.
    #[test]
    fn rollups_without_their_parent_are_corruption() {
        use crate::page::redo::Op;
        use crate::store::write::ops::BatchOp;
        use crate::{CollectionSpec, Db, Layout, NewItem, Options};

        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::new()).unwrap();
        let layout = Layout::Bucket {
            max_items: 4,
            span: None,
        };
        let spec = CollectionSpec::new("s").array("t", layout).rollup("t", 10);
        let sensors = db.create_collection(spec).unwrap();
        let mut batch = db.batch();
        for key in 0..40 {
            batch.push("s", "p", "t", NewItem::new("").key(key).value(1.0));
        }
        batch.commit().unwrap();
        assert_eq!(sensors.expire_buckets("t", 20).unwrap().rolled_up, 20);
        db.verify().unwrap();

        let mut batch = db.batch();
        let id = sensors.info.id;
        batch.ops.push(BatchOp::Raw(Op::Delete {
            key: keys::parent(id, b"p"),
        }));
        batch.commit().unwrap();
        let error = db.verify().unwrap_err();
        assert!(
            error.to_string().contains("a parent that does not exist"),
            "{error}"
        );
    }

    #[test]
    fn sums_are_compared_within_rounding_only() {
        // A thousand readings of about 20: rounding explains about 1e-8, not a reading.
        let claimed = summary(1000, 20_000.0, 15.0, 25.0);
        let found = |sum| summary(1000, sum, 15.0, 25.0);
        assert!(same_summary(&found(20_000.0 + 1e-9), &claimed));
        assert!(!same_summary(&found(20_000.0 + 1e-3), &claimed));
        assert!(!same_summary(&found(20_020.0), &claimed));
        // Values that cancel: 0 and 88 are both sums of -MAX, 88 and MAX.
        let cancel = |sum| summary(3, sum, -f64::MAX, f64::MAX);
        assert!(same_summary(&cancel(0.0), &cancel(88.0)));
        // Any sum that overflowed in one order is not checked.
        assert!(same_summary(&cancel(f64::INFINITY), &cancel(88.0)));
        // Everything else still must agree.
        assert!(!same_summary(
            &found(20_000.0),
            &summary(999, 20_000.0, 15.0, 25.0)
        ));
    }
}
