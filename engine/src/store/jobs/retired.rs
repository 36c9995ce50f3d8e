//! Reclaiming what schema changes retired (`Catalog::retired`): the records of a dropped
//! collection, and the tails, chunk entries, outlier markers and record states of a dropped
//! array. No reader sees them from the commit that retired them; this deletes them in
//! bounded steps, each a commit of the engine's own under the commit lock (an array's step
//! reads and rewrites records that users write too; a collection's is ranges whose pages the
//! tree frees whole), and takes each off the list once it is gone.
//! The chunks they pointed at are then dead, and cold compaction gives their bytes back.
//! See `format-spec/checkpoint.md`, retired records.

use std::ops::Bound;

use bytes::Bytes;

use crate::catalog::{CollectionInfo, Retired};
use crate::error::Result;
use crate::page::keys;
use crate::page::redo::Op;
use crate::store::read::decode::decode_record;
use crate::store::shared::Shared;
use crate::store::versions::Version;
use crate::store::write::apply::Txn;

/// Tree records deleted or rewritten per step: a step holds the commit lock, and is bounded
/// so that no commit waits long behind it.
const STEP_RECORDS: usize = 1_024;

/// Tree records of a dropped collection deleted per step: one range each, whose pages are
/// freed whole, not rewritten (`Tree::remove_range`); the step's walk to find its end runs
/// before it takes the commit lock.
const STEP_COLLECTION_RECORDS: usize = 16 * STEP_RECORDS;

/// Tree keys a step walks past without deleting (a dropped array's records among the live
/// arrays' records of its parents).
const STEP_WALKED: usize = 16 * STEP_RECORDS;

impl Shared {
    /// Reclaims every retired collection and array, step after step (for compaction).
    pub(in crate::store) fn reclaim_retired(&self) -> Result<()> {
        while self.retired_step()? {}
        Ok(())
    }

    /// One step of reclaiming the first retired entry; returns whether any is left after it.
    pub(in crate::store) fn retired_step(&self) -> Result<bool> {
        let Some(&retired) = self.current().catalog.retired.first() else {
            return Ok(false);
        };
        let from = self.jobs.reclaim.resume(retired);
        // A dropped collection's records change no more: the walk needs no lock.
        let walked = match retired.slot {
            None => Some(self.collection_redo(&self.current(), retired, from.clone())?),
            Some(_) => None,
        };
        let mut writer = self.commits.lock();
        writer.log.check_writable()?;
        let base = self.current();
        if base.catalog.retired.first() != Some(&retired) {
            // Another step (compaction's, beside the maintenance thread's) got there first.
            return Ok(!base.catalog.retired.is_empty());
        }
        let (mut redo, next) = match (walked, retired.slot) {
            (Some(walked), _) => walked,
            (None, Some(slot)) => match base.catalog.by_id(retired.collection) {
                Some(info) => self.array_redo(&base, info, usize::from(slot), from)?,
                // The collection went after its array (a drop takes its arrays' entries off).
                None => (Vec::new(), None),
            },
            (None, None) => unreachable!("a collection's step is walked before the lock"),
        };
        if next.is_none() {
            redo.push(Op::Reclaimed(retired));
        }
        self.jobs.reclaim.set(retired, next);
        self.cold_synced_before_roll(&writer)?;
        let cold = self.cold.group()?;
        let group = writer.log.group()?;
        let txn = Txn::new(base.tree.clone(), base.catalog.clone());
        self.write_own_redo(&mut writer, &base, (txn, group, cold), &redo)?;
        Ok(!self.current().catalog.retired.is_empty())
    }

    /// The deletes of the next records of a dropped collection, from `from` on: a range
    /// per key space, of at most [`STEP_COLLECTION_RECORDS`] records in all; with the key
    /// the next step starts at, or `None` when these are its last.
    fn collection_redo(
        &self,
        base: &Version,
        retired: Retired,
        from: Option<Bytes>,
    ) -> Result<(Vec<Op>, Option<Bytes>)> {
        let pages = self.pages.maintaining();
        let mut redo = Vec::new();
        let mut records = 0;
        for (start, end) in keys::collection_spaces(retired.collection) {
            let start = match &from {
                Some(from) if *from >= end => continue,
                Some(from) if *from >= start => from.clone(),
                _ => start,
            };
            let mut walk = base.tree.cursor(&pages, Bound::Included(start.as_ref()))?;
            let mut stop = None;
            while let Some((key, _)) = walk.next(&base.tree, &pages)? {
                if key >= end {
                    break;
                }
                if records == STEP_COLLECTION_RECORDS {
                    stop = Some(key);
                    break;
                }
                records += 1;
            }
            redo.push(Op::DeleteRange {
                start,
                end: stop.clone().unwrap_or(end),
            });
            if stop.is_some() {
                return Ok((redo, stop));
            }
        }
        Ok((redo, None))
    }

    /// The next step of reclaiming array slot `slot` of collection `info`, from `from` on:
    /// the parent records that still hold a state for it, written again without it, then
    /// its outlier markers, then its tails and chunk entries (found parent by parent). With
    /// the key the next step starts at, or `None` when these are its last.
    fn array_redo(
        &self,
        base: &Version,
        info: &CollectionInfo,
        slot: usize,
        from: Option<Bytes>,
    ) -> Result<(Vec<Op>, Option<Bytes>)> {
        let pages = self.pages.maintaining();
        let tree = &base.tree;
        let id = info.id;
        let [parents, _, arrays] = keys::collection_spaces(id);
        let markers = (
            Bytes::from(keys::outliers(id, slot)),
            keys::outliers_end(id, slot),
        );
        let mut redo = Vec::new();
        let mut walked = 0;
        // The three ranges in key order: parents, markers, then array records; each step
        // goes on from where the last stopped.
        for (start, end) in [parents, markers, arrays] {
            let start = match &from {
                Some(from) if *from >= end => continue,
                Some(from) if *from >= start => from.clone(),
                _ => start,
            };
            let mut walk = tree.cursor(&pages, Bound::Included(start.as_ref()))?;
            while let Some((key, value)) = walk.next(tree, &pages)? {
                if key >= end {
                    break;
                }
                if redo.len() == STEP_RECORDS || walked == STEP_WALKED {
                    return Ok((redo, Some(key)));
                }
                walked += 1;
                if keys::is_parent(&key) {
                    let bytes = pages.value_bytes(&value)?;
                    let parent = keys::parent_key_of(&key);
                    let record = decode_record(bytes.clone(), info, &parent)
                        .map_err(|e| self.placed(e, tree, &key))?;
                    let again = record.encode(info.shape());
                    if again != bytes {
                        redo.push(Op::Put {
                            key,
                            value: Bytes::from(again),
                        });
                    }
                    continue;
                }
                if keys::lead_of(&key).is_some_and(|lead| lead & keys::OUTLIER_SPACE != 0) {
                    redo.push(Op::Delete { key });
                    continue;
                }
                let Some((parent, at, _, _)) = keys::split_array(&key) else {
                    continue;
                };
                if at == slot {
                    let (slot_start, slot_end) = keys::array_slot(id, &parent, slot);
                    debug_assert!(key >= slot_start);
                    redo.push(Op::DeleteRange {
                        start: key,
                        end: slot_end.clone(),
                    });
                    // On past the slot's records: the next step starts after them.
                    walk = tree.cursor(&pages, Bound::Included(slot_end.as_ref()))?;
                } else if at < slot {
                    let (slot_start, _) = keys::array_slot(id, &parent, slot);
                    walk = tree.cursor(&pages, Bound::Included(slot_start.as_ref()))?;
                } else {
                    let next = keys::parent_arrays_end(id, &parent);
                    walk = tree.cursor(&pages, Bound::Included(next.as_ref()))?;
                }
            }
        }
        Ok((redo, None))
    }
}
