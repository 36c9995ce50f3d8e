//! The public face: `Db`, `Batch`, `Collection`, `Document`, `Scan`.

use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::catalog::{CollectionId, CollectionSpec};
use crate::page::tree::Cursor;
use crate::storage::{FsStorage, Storage};
use crate::store::{BatchOp, Shared, Version, check_key, tree_key};
use crate::{Error, Inspection, Options, Result, Stats, VerifyReport, record};

/// An open database. Cheap to clone; `Send + Sync`. Closed (and checkpointed) when the
/// last clone is dropped.
#[derive(Clone)]
pub struct Db {
    shared: Arc<Shared>,
}

impl Db {
    /// Opens (creating if need be) the database in directory `path`.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Self::open_with_storage(Arc::new(FsStorage::new(path)?), options)
    }

    /// Opens a database over any storage, such as the simulation in [`crate::storage::sim`].
    pub fn open_with_storage(storage: Arc<dyn Storage>, options: Options) -> Result<Db> {
        Ok(Db {
            shared: Arc::new(Shared::open(storage, options)?),
        })
    }

    /// Creates a collection, durably. Creating one that exists with the same schema does
    /// nothing; with a different schema it is `Error::SchemaConflict`.
    pub fn create_collection(&self, spec: CollectionSpec) -> Result<Collection> {
        let name = spec.name().to_string();
        self.shared.commit(vec![BatchOp::CreateCollection(spec)])?;
        self.collection(&name)
    }

    /// The collection named `name`.
    pub fn collection(&self, name: &str) -> Result<Collection> {
        let version = self.shared.current();
        let info = version.catalog.get(name)?;
        Ok(Collection {
            db: self.clone(),
            name: name.to_string(),
            id: info.id,
        })
    }

    /// The names of all collections, sorted.
    pub fn collection_names(&self) -> Vec<String> {
        self.shared
            .current()
            .catalog
            .by_name
            .keys()
            .cloned()
            .collect()
    }

    /// A new, empty batch.
    pub fn batch(&self) -> Batch {
        Batch {
            db: self.clone(),
            ops: Vec::new(),
        }
    }

    /// Writes every changed page and a new checkpoint, so that reopening replays nothing.
    pub fn checkpoint(&self) -> Result<()> {
        self.shared.checkpoint()
    }

    /// Reads every frame and page, checking every checksum and tree invariant.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.shared.verify()
    }

    /// Files, segments, pages and records, for people (the same walk as `verify`).
    pub fn inspect(&self) -> Result<Inspection> {
        self.shared.verify()
    }

    pub fn stats(&self) -> Result<Stats> {
        self.shared.stats()
    }

    /// Zeroes the cache counters.
    pub fn reset_stats(&self) {
        self.shared.pages.cache.reset_stats();
    }
}

/// Writes to apply atomically: all or nothing, also across a crash.
pub struct Batch {
    db: Db,
    ops: Vec<BatchOp>,
}

impl Batch {
    /// Sets the body of parent `key` in `collection`, creating the parent if need be.
    pub fn put(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        body: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.ops.push(BatchOp::Put {
            collection: collection.to_string(),
            key: Bytes::copy_from_slice(key.as_ref()),
            body: Bytes::copy_from_slice(body.as_ref()),
        });
        self
    }

    /// Deletes parent `key` of `collection` (nothing if absent).
    pub fn delete(&mut self, collection: &str, key: impl AsRef<[u8]>) -> &mut Self {
        self.ops.push(BatchOp::Delete {
            collection: collection.to_string(),
            key: Bytes::copy_from_slice(key.as_ref()),
        });
        self
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Applies the batch. On error nothing of it is applied and the database stays usable
    /// (except after a failed write or sync, which makes every later write fail).
    pub fn commit(self) -> Result<()> {
        self.db.shared.commit(self.ops)
    }
}

/// A parent document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    key: Bytes,
    body: Bytes,
}

impl Document {
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

/// A handle on one collection.
#[derive(Clone)]
pub struct Collection {
    db: Db,
    name: String,
    id: CollectionId,
}

fn decode_document(
    shared: &Shared,
    key: Bytes,
    value: &crate::page::node::Value,
) -> Result<Document> {
    let bytes = shared.pages.value_bytes(value)?;
    let body = record::decode_body(bytes).map_err(|reason| {
        Error::corruption(
            "page store",
            0,
            format!(
                "record of key {:?}: {reason}",
                String::from_utf8_lossy(&key)
            ),
        )
    })?;
    Ok(Document { key, body })
}

impl Collection {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parent `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Document>> {
        let key = key.as_ref();
        check_key(key)?;
        let version = self.db.shared.current();
        self.check_exists(&version)?;
        let pages = &self.db.shared.pages;
        match version.tree.get(pages, &tree_key(self.id, key))? {
            None => Ok(None),
            Some(value) => {
                decode_document(&self.db.shared, Bytes::copy_from_slice(key), &value).map(Some)
            }
        }
    }

    /// The parents whose keys fall in `range`, in key order, as of this call (later
    /// commits are not seen).
    pub fn scan<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<Scan> {
        let version = self.db.shared.current();
        self.check_exists(&version)?;
        let start = match range.start_bound() {
            Bound::Included(k) => Bound::Included(tree_key(self.id, k.as_ref())),
            Bound::Excluded(k) => Bound::Excluded(tree_key(self.id, k.as_ref())),
            Bound::Unbounded => Bound::Included(tree_key(self.id, &[])),
        };
        let end = match range.end_bound() {
            Bound::Included(k) => Bound::Included(tree_key(self.id, k.as_ref())),
            Bound::Excluded(k) => Bound::Excluded(tree_key(self.id, k.as_ref())),
            Bound::Unbounded => match self.id.checked_add(1) {
                Some(next) => Bound::Excluded(tree_key(next, &[])),
                None => Bound::Unbounded,
            },
        };
        let cursor = version
            .tree
            .cursor(&self.db.shared.pages, start.as_ref().map(|k| k.as_ref()))?;
        Ok(Scan {
            shared: self.db.shared.clone(),
            version,
            cursor,
            end,
            done: false,
        })
    }

    fn check_exists(&self, version: &Version) -> Result<()> {
        match version.catalog.by_name.get(&self.name) {
            Some(info) if info.id == self.id => Ok(()),
            _ => Err(Error::UnknownCollection {
                name: self.name.clone(),
            }),
        }
    }
}

/// Parents in key order; see [`Collection::scan`]. Sees one committed state throughout.
pub struct Scan {
    shared: Arc<Shared>,
    version: Arc<Version>,
    cursor: Cursor,
    end: Bound<Bytes>,
    done: bool,
}

impl Iterator for Scan {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let entry = self.cursor.next(&self.version.tree, &self.shared.pages);
        let (key, value) = match entry {
            Ok(Some(entry)) => entry,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(error) => {
                self.done = true;
                return Some(Err(error));
            }
        };
        let inside = match &self.end {
            Bound::Included(end) => key <= *end,
            Bound::Excluded(end) => key < *end,
            Bound::Unbounded => true,
        };
        if !inside {
            self.done = true;
            return None;
        }
        Some(decode_document(&self.shared, key.slice(4..), &value))
    }
}
