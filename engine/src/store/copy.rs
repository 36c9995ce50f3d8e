//! Records copied out of one version and into another database, as they are: what a
//! backup writes and a restore loads (`format-spec/backup.md`). Copying the tree's records
//! and the chunks their index entries point at, instead of replaying the items, keeps
//! everything a read can see: which items a parent holds inline, where buckets were cut,
//! push sequences, summaries to the last bit.

use std::ops::Bound;

use bytes::Bytes;

use super::apply::Txn;
use super::shared::Shared;
use super::versions::Version;
use crate::cold::chunk::ChunkRef;
use crate::error::{Error, Result};
use crate::page::keys;
use crate::page::redo::Op;

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
    pub(crate) fn copy_records(
        &self,
        version: &Version,
        each: &mut dyn FnMut(CopiedRecord) -> Result<()>,
    ) -> Result<()> {
        let tree = &version.tree;
        let mut cursor = tree.cursor(&self.pages.maintaining(), Bound::Unbounded)?;
        while let Some((key, value)) = cursor.next(tree, &self.pages.maintaining())? {
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

    /// Writes `records` into this database as one commit group: each chunk appended to the
    /// cold tail and its index entry pointed at its new place, every other record put as
    /// it is. For a database being built from a backup, which nothing else writes to.
    pub(crate) fn load_records(&self, records: &[CopiedRecord]) -> Result<()> {
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
