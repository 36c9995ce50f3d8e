//! Records copied out of one version and into another database, as they are: what a
//! backup writes and a restore loads (`format-spec/backup.md`). Copying the tree's records
//! and the chunks their index entries point at, instead of replaying the items, keeps
//! everything a read can see: which items a parent holds inline, where buckets were cut,
//! push sequences, summaries to the last bit.

use std::ops::Bound;

use bytes::Bytes;

use crate::catalog::CollectionInfo;
use crate::cold::chunk::ChunkRef;
use crate::error::{Error, Result};
use crate::page::keys;
use crate::page::redo::Op;
use crate::store::shared::Shared;
use crate::store::versions::Version;
use crate::store::write::apply::Txn;

/// One tree record to copy: its key, its value, and for a chunk index entry the chunk's
/// stored bytes (compressed, as in its segment).
pub(crate) struct CopiedRecord {
    pub key: Bytes,
    pub value: Bytes,
    pub chunk: Option<Bytes>,
}

impl Shared {
    /// Calls `each` with every record of `version`'s tree, in key order, large records
    /// read whole and each chunk index entry with its chunk's bytes.
    pub(in crate::store) fn copy_records(
        &self,
        version: &Version,
        each: &mut dyn FnMut(CopiedRecord) -> Result<()>,
    ) -> Result<()> {
        let tree = &version.tree;
        let mut cursor = tree.cursor(&self.pages.maintaining(), Bound::Unbounded)?;
        while let Some((key, value)) = cursor.next(tree, &self.pages.maintaining())? {
            if is_retired(version, &key) {
                continue;
            }
            let value = self.pages.value_bytes_uncached(&value)?;
            let chunk = match keys::is_chunk_entry(&key) {
                true => {
                    let entry = ChunkRef::decode(value.clone()).map_err(|reason| {
                        Error::corruption("chunk index", 0, format!("{reason} (key {key:?})"))
                    })?;
                    Some(Bytes::from(self.cold.read_raw(&entry)?))
                }
                false => None,
            };
            each(CopiedRecord { key, value, chunk })?;
        }
        Ok(())
    }

    /// Gives collection `id` (just created, with no records yet) the array slots and layout
    /// states of `backed_up`, a collection of the same spec in another database, whose records are
    /// about to be loaded: their states name those slots.
    pub(in crate::store) fn set_slots(
        &self,
        id: crate::catalog::CollectionId,
        backed_up: &CollectionInfo,
    ) -> Result<()> {
        let mut writer = self.commits.lock();
        let base = self.current();
        let Some(info) = base.catalog.by_id(id) else {
            return Err(Error::UnknownCollection {
                name: backed_up.spec.name().to_string(),
            });
        };
        let same = (&info.slots, info.next_slot, &info.layouts)
            == (&backed_up.slots, backed_up.next_slot, &backed_up.layouts);
        if same {
            return Ok(());
        }
        let info = CollectionInfo {
            slots: backed_up.slots.clone(),
            next_slot: backed_up.next_slot,
            layouts: backed_up.layouts.clone(),
            ..info.as_ref().clone()
        };
        let txn = Txn::new(base.tree.clone(), base.catalog.clone());
        self.cold_synced_before_roll(&writer)?;
        let cold = self.cold.group()?;
        let group = writer.log.group()?;
        self.write_own_redo(
            &mut writer,
            &base,
            (txn, group, cold),
            &[Op::SetCollection(info)],
        )
    }

    /// Writes `records` into this database as one commit group: each chunk appended to the
    /// cold tail and its index entry pointed at its new place, every other record put as
    /// it is. For a database being built from a backup, which nothing else writes to.
    pub(in crate::store) fn load_records(&self, records: &[CopiedRecord]) -> Result<()> {
        let mut writer = self.commits.lock();
        let base = self.current();
        let txn = Txn::new(base.tree.clone(), base.catalog.clone());
        self.cold_synced_before_roll(&writer)?;
        let mut cold = self.cold.group()?;
        let group = writer.log.group()?;
        let mut redo = Vec::with_capacity(records.len() + 1);
        for record in records {
            let value = match &record.chunk {
                Some(bytes) => {
                    let entry = ChunkRef::decode(record.value.clone()).map_err(|reason| {
                        Error::corruption("backup", 0, format!("chunk index entry: {reason}"))
                    })?;
                    if bytes.len() != entry.loc.len as usize {
                        return Err(Error::corruption(
                            "backup",
                            0,
                            format!(
                                "a chunk of {} bytes where its entry says {}",
                                bytes.len(),
                                entry.loc.len
                            ),
                        ));
                    }
                    let moved = cold.add_raw(bytes, &entry);
                    redo.push(Op::ColdChunk(moved.loc));
                    moved.encode()
                }
                None => record.value.clone(),
            };
            redo.push(Op::Put {
                key: record.key.clone(),
                value,
            });
        }
        self.write_own_redo(&mut writer, &base, (txn, group, cold), &redo)
    }
}

/// Whether tree record `key` is one a drop retired: of a collection the version's catalog
/// lacks, or of an array slot none of its collection's fields holds. A backup leaves it out.
fn is_retired(version: &Version, key: &Bytes) -> bool {
    let Some(collection) = keys::collection_of(key) else {
        return false;
    };
    let Some(info) = version.catalog.by_id(collection) else {
        return true;
    };
    let slot = match keys::lead_of(key) {
        Some(lead) if lead & keys::ARRAY_SPACE != 0 => keys::split_array(key).map(|(_, s, _, _)| s),
        Some(lead) if lead & keys::OUTLIER_SPACE != 0 => keys::split_outlier(key).map(|(s, _)| s),
        _ => None,
    };
    slot.is_some_and(|slot| info.field_of_slot(slot).is_none())
}
