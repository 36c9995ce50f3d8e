//! Staging a batch: the API's operations resolved against the committed state into redo.
//! Everything a batch does to one parent (its record, its tail records, new chunks, outlier
//! markers) is worked out in memory first, every limit is checked, and only then is redo
//! emitted, so a refused batch leaves nothing behind.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;
use std::sync::Arc;

use bytes::Bytes;

use super::{BatchOp, Shared, Txn, check_key};
use crate::catalog::{Catalog, CollectionId, CollectionInfo};
use crate::cold::{ChunkKind, ChunkRef, ColdGroup};
use crate::item::{self, Item, Stored};
use crate::page::keys;
use crate::page::max_inline_record;
use crate::page::redo::Op;
use crate::pattern;
use crate::record::ParentRecord;
use crate::{Error, MAX_RECORD_BYTES, Result};

/// A new item as the API receives it; the key is assigned at commit when not given.
#[derive(Clone, Debug, PartialEq)]
pub struct NewItem {
    pub(crate) key: Option<i64>,
    pub(crate) value: Option<f64>,
    pub(crate) payload: Bytes,
}

impl NewItem {
    /// An item carrying `payload`, with the next key of its array and no value.
    pub fn new(payload: impl AsRef<[u8]>) -> Self {
        NewItem {
            key: None,
            value: None,
            payload: Bytes::copy_from_slice(payload.as_ref()),
        }
    }

    /// Sets the item's key (a time, a sequence, any order).
    pub fn key(mut self, key: i64) -> Self {
        self.key = Some(key);
        self
    }

    /// Sets the value that summaries aggregate.
    pub fn value(mut self, value: f64) -> Self {
        self.value = Some(value);
        self
    }
}

/// An array's tail record as the batch changes it, with its encoded size kept current.
struct Tail {
    items: Vec<Stored>,
    bytes: usize,
}

impl Tail {
    fn new(items: Vec<Stored>) -> Self {
        Tail {
            bytes: item::items_len(&items),
            items,
        }
    }
}

/// What the batch does to one parent.
struct ParentWork {
    info: Arc<CollectionInfo>,
    key: Bytes,
    /// The array fields whose outlier markers exist in the tree (overflowed before the batch).
    stored_markers: Vec<usize>,
    /// The record as the batch leaves it.
    record: Option<ParentRecord>,
    /// The stored parent and all its array records go before the new state is written.
    deleted: bool,
    tails: BTreeMap<usize, Tail>,
    dirty_tails: BTreeSet<usize>,
    chunks: Vec<(usize, u32, ChunkRef)>,
    new_markers: BTreeSet<usize>,
}

pub(super) struct Stager<'a> {
    shared: &'a Shared,
    txn: &'a Txn,
    catalog: Arc<Catalog>,
    parents: FxHashMap<(CollectionId, Bytes), ParentWork>,
    /// The last collection looked up by name: batches mostly write to one.
    last_collection: Option<Arc<CollectionInfo>>,
    created: Vec<Op>,
}

impl<'a> Stager<'a> {
    pub fn new(shared: &'a Shared, txn: &'a Txn) -> Self {
        Stager {
            shared,
            txn,
            catalog: txn.catalog.clone(),
            parents: FxHashMap::default(),
            last_collection: None,
            created: Vec::new(),
        }
    }

    fn read(&self, key: &[u8]) -> Result<Option<Bytes>> {
        let _owner = keys::collection_of(key).map(crate::cache::attribute);
        let pages = &self.shared.pages;
        match self.txn.tree.get(pages, key)? {
            Some(value) => Ok(Some(pages.value_bytes(&value)?)),
            None => Ok(None),
        }
    }

    fn collection(&mut self, name: &str) -> Result<Arc<CollectionInfo>> {
        if let Some(info) = &self.last_collection
            && info.spec.name() == name
        {
            return Ok(info.clone());
        }
        let info = self.catalog.get(name)?.clone();
        self.last_collection = Some(info.clone());
        Ok(info)
    }

    fn work(&mut self, collection: &str, key: &Bytes) -> Result<&mut ParentWork> {
        let info = self.collection(collection)?;
        check_key(key)?;
        let id = (info.id, key.clone());
        if !self.parents.contains_key(&id) {
            // A collection without arrays has nothing in a stored record worth keeping: a put
            // replaces it whole and a delete leaves no array records behind. Skip the read.
            let stored = if info.spec.arrays().is_empty() {
                None
            } else {
                match self.read(&keys::parent(info.id, key))? {
                    Some(bytes) => Some(decode_record(bytes, &info, key)?),
                    None => None,
                }
            };
            // Only the markers are needed of the stored state: copying the record (up to
            // 16 MiB under Embed) to keep it beside the working one would be wasted.
            let stored_markers = stored
                .as_ref()
                .map_or_else(Vec::new, |record: &ParentRecord| {
                    record
                        .arrays
                        .iter()
                        .enumerate()
                        .filter(|(_, a)| a.has_overflow)
                        .map(|(i, _)| i)
                        .collect()
                });
            let work = ParentWork {
                info,
                key: key.clone(),
                record: stored,
                stored_markers,
                deleted: false,
                tails: BTreeMap::new(),
                dirty_tails: BTreeSet::new(),
                chunks: Vec::new(),
                new_markers: BTreeSet::new(),
            };
            return Ok(self.parents.entry(id).or_insert(work));
        }
        Ok(self.parents.get_mut(&id).expect("present"))
    }

    pub fn apply(&mut self, op: BatchOp, cold: &mut ColdGroup) -> Result<()> {
        match op {
            BatchOp::CreateCollection(spec) => {
                spec.validate()?;
                match self.catalog.by_name.get(spec.name()) {
                    Some(info) if info.spec == spec => {}
                    Some(info) => {
                        return Err(Error::SchemaConflict {
                            name: spec.name().to_string(),
                            reason: format!("stored schema is {:?}", info.spec),
                        });
                    }
                    None => {
                        let info = CollectionInfo {
                            id: self.catalog.next_id,
                            spec: spec.clone(),
                        };
                        self.created.push(Op::CreateCollection {
                            id: info.id,
                            spec: spec.clone(),
                        });
                        Arc::make_mut(&mut self.catalog).insert(info);
                    }
                }
            }
            BatchOp::Put {
                collection,
                key,
                body,
            } => {
                let work = self.work(&collection, &key)?;
                let arrays = work.info.spec.arrays().len();
                work.record
                    .get_or_insert_with(|| ParentRecord::new(Bytes::new(), arrays))
                    .body = body;
            }
            BatchOp::Delete { collection, key } => {
                let work = self.work(&collection, &key)?;
                work.record = None;
                work.deleted = true;
                work.tails.clear();
                work.dirty_tails.clear();
                work.chunks.clear();
                work.new_markers.clear();
            }
            BatchOp::Push {
                collection,
                key,
                field,
                item,
            } => self.push(&collection, &key, &field, item, cold)?,
        }
        Ok(())
    }

    fn push(
        &mut self,
        collection: &str,
        key: &Bytes,
        field: &str,
        new: NewItem,
        cold: &mut ColdGroup,
    ) -> Result<()> {
        if new.value.is_some_and(f64::is_nan) {
            return Err(Error::InvalidItem {
                reason: "value is NaN".to_string(),
            });
        }
        let tail_limit = max_inline_record(self.shared.pages.page_bytes);
        let info = self.catalog.get(collection)?.clone();
        let index = info
            .spec
            .field_index(field)
            .ok_or_else(|| Error::UnknownField {
                collection: collection.to_string(),
                field: field.to_string(),
            })?;
        let layout = info.spec.arrays()[index].layout;
        let needs_tail = {
            let work = self.work(collection, key)?;
            !work.tails.contains_key(&index)
        };
        if needs_tail {
            // Loaded once per batch and array; a deleted parent starts with an empty tail.
            let deleted = self.parents[&(info.id, key.clone())].deleted;
            let tail_key = keys::tail(info.id, key, index);
            let items = match self.read(&tail_key)? {
                Some(bytes) if !deleted => decode_items(bytes, &tail_key)?,
                _ => Vec::new(),
            };
            let work = self
                .parents
                .get_mut(&(info.id, key.clone()))
                .expect("loaded above");
            work.tails.insert(index, Tail::new(items));
        }
        let work = self
            .parents
            .get_mut(&(info.id, key.clone()))
            .expect("loaded above");
        let arrays = info.spec.arrays().len();
        let record = work
            .record
            .get_or_insert_with(|| ParentRecord::new(Bytes::new(), arrays));
        let array = &mut record.arrays[index];
        let item_key = new
            .key
            .unwrap_or_else(|| array.summary.max_key.map_or(0, |max| max.saturating_add(1)));
        let item = Item {
            key: item_key,
            value: new.value,
            payload: new.payload,
        };
        let size = item::stored_len(&item) as u64 + 4;
        if size > MAX_RECORD_BYTES as u64 {
            return Err(Error::RecordTooLarge {
                size,
                limit: MAX_RECORD_BYTES as u64,
            });
        }
        let stored = Stored {
            item,
            seq: array.next_seq,
        };
        array.next_seq += 1;
        let outcome = pattern::push(layout, array, stored);
        if outcome.overflowed {
            work.new_markers.insert(index);
        }
        if let Some(bucket) = outcome.sealed_bucket {
            let number = array.next_chunk;
            array.next_chunk += 1;
            work.chunks
                .push((index, number, cold.add(ChunkKind::Bucket, &bucket)));
        }
        if let Some(stored) = outcome.to_tail {
            let tail = work.tails.get_mut(&index).expect("loaded above");
            let len = item::stored_len(&stored.item);
            if !tail.items.is_empty() && tail.bytes + len > tail_limit {
                tail.items.sort_by_key(Stored::order);
                let number = array.next_chunk;
                array.next_chunk += 1;
                work.chunks
                    .push((index, number, cold.add(ChunkKind::Items, &tail.items)));
                *tail = Tail::new(Vec::new());
            }
            tail.items.push(stored);
            tail.bytes += len;
            work.dirty_tails.insert(index);
        }
        Ok(())
    }

    /// The redo of the whole batch; fails when any record would exceed the limit.
    pub fn finish(self) -> Result<Vec<Op>> {
        let mut ops = self.created;
        // In key order: the same redo for the same batch, and tree inserts that walk forward.
        let mut parents: Vec<_> = self.parents.into_iter().collect();
        parents.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for ((id, _), work) in parents {
            let parent_key = keys::parent(id, &work.key);
            let has_arrays = !work.info.spec.arrays().is_empty();
            if work.deleted && !has_arrays && work.record.is_none() {
                ops.push(Op::Delete {
                    key: parent_key.clone(),
                });
            } else if work.deleted && has_arrays {
                ops.push(Op::Delete {
                    key: parent_key.clone(),
                });
                ops.push(Op::DeleteRange {
                    start: Bytes::from(keys::parent_arrays(id, &work.key)),
                    end: keys::parent_arrays_end(id, &work.key),
                });
                for index in &work.stored_markers {
                    ops.push(Op::Delete {
                        key: keys::outlier(id, *index, &work.key),
                    });
                }
            }
            let Some(record) = &work.record else {
                continue;
            };
            let size = record.encoded_len();
            if size > MAX_RECORD_BYTES as u64 {
                return Err(Error::RecordTooLarge {
                    size,
                    limit: MAX_RECORD_BYTES as u64,
                });
            }
            ops.push(Op::Put {
                key: parent_key,
                value: Bytes::from(record.encode()),
            });
            for index in &work.dirty_tails {
                let key = keys::tail(id, &work.key, *index);
                let tail = &work.tails[index].items;
                if tail.is_empty() {
                    ops.push(Op::Delete { key });
                } else {
                    let mut value = Vec::with_capacity(item::items_len(tail));
                    item::encode_items(tail, &mut value);
                    ops.push(Op::Put {
                        key,
                        value: Bytes::from(value),
                    });
                }
            }
            for (index, number, chunk) in &work.chunks {
                ops.push(Op::ColdChunk(chunk.loc));
                let max_key = chunk.summary.max_key.unwrap_or(i64::MIN);
                ops.push(Op::Put {
                    key: keys::chunk(id, &work.key, *index, max_key, *number),
                    value: chunk.encode(),
                });
            }
            for index in &work.new_markers {
                ops.push(Op::Put {
                    key: keys::outlier(id, *index, &work.key),
                    value: Bytes::new(),
                });
            }
        }
        Ok(ops)
    }
}

pub(crate) fn decode_record(
    bytes: Bytes,
    info: &CollectionInfo,
    key: &[u8],
) -> Result<ParentRecord> {
    ParentRecord::decode(bytes, info.spec.arrays().len()).map_err(|reason| {
        Error::corruption(
            "page store",
            0,
            format!(
                "record of {:?} in {}: {reason}",
                String::from_utf8_lossy(key),
                info.spec.name()
            ),
        )
    })
}

pub(crate) fn decode_items(mut bytes: Bytes, tree_key: &[u8]) -> Result<Vec<Stored>> {
    let items = item::decode_items(&mut bytes);
    match items {
        Ok(items) if bytes.is_empty() => Ok(items),
        Ok(_) => Err(Error::corruption(
            "page store",
            0,
            format!("tail record {tree_key:x?}: trailing bytes"),
        )),
        Err(reason) => Err(Error::corruption(
            "page store",
            0,
            format!("tail record {tree_key:x?}: {reason}"),
        )),
    }
}
