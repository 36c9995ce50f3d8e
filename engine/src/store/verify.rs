//! `verify` and `inspect`: read every frame of every segment and every page reachable from
//! the root, checking checksums and the tree's invariants.

use bytes::Bytes;

use super::Shared;
use crate::log::frame::SEGMENT_HEADER_BYTES;
use crate::log::{
    FrameKind, LogTail, parse_segment_name, read_segment_header, scan_segment, segment_name,
};
use crate::page::node::{Node, Value};
use crate::storage::Storage;
use crate::{Error, Result, record};

/// One hot log segment as `inspect` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    pub segment_id: u32,
    pub file: String,
    pub bytes: u64,
    pub first_lsn: u64,
    pub batch_frames: u64,
    pub page_frames: u64,
}

/// What `inspect` found; `verify` returns the same after checking everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    pub files: Vec<(String, u64)>,
    pub segments: Vec<SegmentInfo>,
    pub page_bytes: u64,
    pub replay_from: Option<LogTail>,
    pub tree_depth: u64,
    pub leaf_pages: u64,
    pub internal_pages: u64,
    pub dirty_pages: u64,
    pub records: u64,
    pub large_records: u64,
    pub record_bytes: u64,
    pub largest_record_bytes: u64,
    /// Collection name and its number of parent records.
    pub collections: Vec<(String, u64)>,
}

/// The report of a successful `verify`.
pub type VerifyReport = Inspection;

pub(crate) fn segment_ids(storage: &dyn Storage) -> Result<Vec<u32>> {
    let mut ids: Vec<u32> = storage
        .list()?
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

impl Shared {
    /// Checks every checksum in the log and every invariant of the tree.
    pub fn verify(&self) -> Result<Inspection> {
        // Holding the writer keeps the log's end still while it is read.
        let writer = self.writer.lock();
        let storage = self.pages.storage.as_ref();
        let mut inspection = Inspection {
            page_bytes: self.pages.page_bytes as u64,
            replay_from: Some(writer.checkpoint_tail),
            ..Inspection::default()
        };
        let mut names = storage.list()?;
        names.sort();
        for name in names {
            let len = storage.len(&name)?;
            inspection.files.push((name, len));
        }
        let mut expected_lsn = None;
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
            if expected_lsn.is_some_and(|lsn| lsn != header.first_lsn) {
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
            expected_lsn = last.map(|l| l + 1).or(Some(header.first_lsn));
            inspection.segments.push(info);
        }
        drop(writer);
        self.check_tree(&mut inspection)?;
        Ok(inspection)
    }

    fn check_tree(&self, inspection: &mut Inspection) -> Result<()> {
        let version = self.current();
        let tree = &version.tree;
        inspection.dirty_pages = tree.table.dirty_count() as u64;
        let mut per_collection = std::collections::BTreeMap::<u32, u64>::new();
        let mut leaf_depth = None;
        // Each page with the key bounds its parent puts on it.
        let mut pending: Vec<(u64, usize, Option<Bytes>, Option<Bytes>)> =
            vec![(tree.root, 0, None, None)];
        while let Some((id, depth, low, high)) = pending.pop() {
            if depth > 64 {
                return Err(self
                    .pages
                    .tree_corruption(id, "tree deeper than any valid tree"));
            }
            let node = tree.node(&self.pages, id)?;
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
                    for (index, child) in children.iter().enumerate() {
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
                    for (key, value) in entries {
                        if !in_bounds(key) || key.len() < 4 {
                            return Err(self
                                .pages
                                .tree_corruption(id, "leaf key outside its parent's bounds"));
                        }
                        let collection = u32::from_be_bytes(key[..4].try_into().expect("4 bytes"));
                        if version.catalog.by_id(collection).is_none() {
                            return Err(self
                                .pages
                                .tree_corruption(id, "record of an unknown collection"));
                        }
                        let bytes = self.pages.value_bytes(value)?;
                        record::decode_body(bytes.clone())
                            .map_err(|reason| self.pages.tree_corruption(id, &reason))?;
                        *per_collection.entry(collection).or_default() += 1;
                        inspection.records += 1;
                        inspection.record_bytes += bytes.len() as u64;
                        inspection.largest_record_bytes =
                            inspection.largest_record_bytes.max(bytes.len() as u64);
                        if matches!(value, Value::Large(_)) {
                            inspection.large_records += 1;
                        }
                    }
                }
            }
        }
        inspection.tree_depth = leaf_depth.unwrap_or(0) as u64 + 1;
        inspection.collections = version
            .catalog
            .by_name
            .values()
            .map(|info| {
                (
                    info.spec.name().to_string(),
                    per_collection.get(&info.id).copied().unwrap_or(0),
                )
            })
            .collect();
        Ok(())
    }
}
