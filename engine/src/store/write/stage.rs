//! Staging a batch: the API's operations resolved against the committed state into redo.
//! Everything a batch does to one parent (`work::ParentWork`) is worked out in memory
//! first, every limit is checked, and only then is redo emitted, so a refused batch leaves
//! nothing behind.

use std::collections::hash_map::Entry;
use std::sync::Arc;

use bytes::Bytes;

use crate::catalog::{Catalog, CollectionId, CollectionInfo, Layout, Retired};
use crate::error::{Error, Result};
use crate::page::redo::Op;
use crate::pattern::{self, Operation};
use crate::store::shared::Shared;
use crate::store::write::apply::Txn;
use crate::store::write::ops::{BatchOp, Expired, check_key};
use crate::store::write::work::{Base, ParentWork};

pub(in crate::store) struct Stager<'a> {
    base: Base<'a>,
    catalog: Arc<Catalog>,
    /// Keyed by the users' keys: hashed with a seed, so keys chosen to collide cannot
    /// make a batch's staging quadratic.
    parents: foldhash::HashMap<(CollectionId, Bytes), ParentWork>,
    /// The last collection looked up by name: batches mostly write to one.
    last_collection: Option<Arc<CollectionInfo>>,
    created: Vec<Op>,
    /// What the batch's bucket expiries dropped.
    expired: Expired,
}

impl<'a> Stager<'a> {
    pub fn new(shared: &'a Shared, txn: &'a Txn) -> Self {
        Stager {
            base: Base { shared, txn },
            catalog: txn.catalog.clone(),
            parents: foldhash::HashMap::default(),
            last_collection: None,
            created: Vec::new(),
            expired: Expired::default(),
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

    /// Collection `name`, about to have its schema changed: not yet written to by the batch
    /// (whose work on it would be under the old schema).
    fn schema_change(&mut self, name: &str) -> Result<Arc<CollectionInfo>> {
        let info = self.catalog.get(name)?.clone();
        if self.parents.keys().any(|(id, _)| *id == info.id) {
            return Err(Error::InvalidSchema {
                collection: name.to_string(),
                reason: "a batch changes a collection's schema before it writes to it, not after"
                    .to_string(),
            });
        }
        self.last_collection = None;
        Ok(info)
    }

    /// Collection `id` and the index of its array in `slot`, while both are there (a drop
    /// or a rename since a background step named them leaves that step nothing to do).
    fn slot_of(&self, id: CollectionId, slot: usize) -> Option<(Arc<CollectionInfo>, usize)> {
        let info = self.catalog.by_id(id)?.clone();
        let index = info.field_of_slot(slot)?;
        Some((info, index))
    }

    /// The work of parent `key`, loaded once per batch.
    fn work(&mut self, collection: &str, key: &Bytes) -> Result<&mut ParentWork> {
        let info = self.collection(collection)?;
        check_key(key)?;
        match self.parents.entry((info.id, key.clone())) {
            Entry::Occupied(work) => Ok(work.into_mut()),
            Entry::Vacant(vacant) => Ok(vacant.insert(ParentWork::load(self.base, info, key)?)),
        }
    }

    /// The work of parent `key` with the index and layout of its array `field`, once the
    /// layout is known to support `operation`, and the array is under that layout (a
    /// migration moves it first, in this batch). The array's tail is read on demand: most
    /// pushes leave it alone.
    fn array(
        &mut self,
        collection: &str,
        key: &Bytes,
        field: &str,
        operation: Operation,
        cold: &mut crate::cold::ColdGroup,
    ) -> Result<(&mut ParentWork, usize, Layout)> {
        let info = self.collection(collection)?;
        let index = info
            .spec
            .field_index(field)
            .ok_or_else(|| Error::UnknownField {
                collection: collection.to_string(),
                field: field.to_string(),
            })?;
        let layout = info.spec.arrays()[index].layout;
        pattern::check_supports(layout, operation, collection, field)?;
        let base = self.base;
        let work = self.work(collection, key)?;
        let state = info.layouts[index];
        if state.previous.is_some() {
            work.migrate(base, index, layout, state.parity, cold)?;
        }
        Ok((work, index, layout))
    }

    pub fn apply(&mut self, op: BatchOp, cold: &mut crate::cold::ColdGroup) -> Result<()> {
        let base = self.base;
        match op {
            #[cfg(test)]
            BatchOp::Raw(op) => self.created.push(op),
            BatchOp::CreateCollection(spec) => {
                spec.validate()?;
                match self.catalog.by_name.get(spec.name()) {
                    Some(info) if info.spec.same_schema(&spec) => {}
                    Some(info) => {
                        return Err(Error::SchemaConflict {
                            name: spec.name().to_string(),
                            reason: format!(
                                "stored with {}, asked for {}",
                                info.spec.describe(),
                                spec.describe()
                            ),
                        });
                    }
                    None => {
                        let info = CollectionInfo::new(self.catalog.next_id, spec.clone());
                        self.created.push(Op::CreateCollection {
                            id: info.id,
                            spec: spec.clone(),
                        });
                        Arc::make_mut(&mut self.catalog).insert(info);
                    }
                }
            }
            BatchOp::AlterCollection {
                collection,
                alteration,
            } => {
                let info = self.schema_change(&collection)?;
                let (altered, dropped) = info.altered(&alteration)?;
                if let Some(other) = self.catalog.by_name.get(altered.spec.name())
                    && other.id != info.id
                {
                    return Err(Error::SchemaConflict {
                        name: altered.spec.name().to_string(),
                        reason: format!("{collection:?} cannot be renamed to it"),
                    });
                }
                let catalog = Arc::make_mut(&mut self.catalog);
                self.created.push(Op::SetCollection(altered.clone()));
                catalog.set(altered).expect("the new name checked");
                for slot in dropped {
                    let retired = Retired {
                        collection: info.id,
                        slot: Some(slot),
                    };
                    self.created.push(Op::Retire(retired));
                    catalog.retire(retired);
                }
            }
            BatchOp::DropCollection { collection } => {
                let info = self.schema_change(&collection)?;
                self.created.push(Op::DropCollection { id: info.id });
                Arc::make_mut(&mut self.catalog)
                    .drop_collection(info.id)
                    .expect("a known collection");
            }
            BatchOp::FinishMigration {
                collection,
                slot,
                state,
            } => {
                let Some((info, index)) = self.slot_of(collection, slot) else {
                    return Ok(());
                };
                if info.layouts[index] != state {
                    // Set again (or cancelled) since the walk: another walk finishes it.
                    return Ok(());
                }
                let mut finished = info.as_ref().clone();
                finished.layouts[index].previous = None;
                self.created.push(Op::SetCollection(finished.clone()));
                Arc::make_mut(&mut self.catalog)
                    .set(finished)
                    .expect("the collection's own name");
                self.last_collection = None;
            }
            BatchOp::Migrate {
                collection,
                key,
                slot,
            } => {
                let Some((info, index)) = self.slot_of(collection, slot) else {
                    return Ok(());
                };
                let layout = info.spec.arrays()[index].layout;
                let state = info.layouts[index];
                // A parent gone since the pass found it has nothing to move.
                let work = self.work(info.spec.name(), &key)?;
                work.migrate(base, index, layout, state.parity, cold)?;
            }
            BatchOp::Expect { collection, id } => {
                if self.collection(&collection)?.id != id {
                    return Err(Error::UnknownCollection {
                        name: collection.to_string(),
                    });
                }
            }
            BatchOp::Put {
                collection,
                key,
                body,
            } => self.work(&collection, &key)?.put(body),
            BatchOp::Delete { collection, key } => self.work(&collection, &key)?.delete(),
            BatchOp::Push {
                collection,
                key,
                field,
                item,
            } => {
                if item.has_nan() {
                    return Err(Error::InvalidItem {
                        reason: "value is NaN".to_string(),
                    });
                }
                let (work, index, layout) =
                    self.array(&collection, &key, &field, Operation::Push, cold)?;
                work.push(base, index, layout, item, cold)?;
            }
            BatchOp::Remove {
                collection,
                key,
                field,
                item_key,
                seq,
            } => {
                let (work, index, layout) =
                    self.array(&collection, &key, &field, Operation::Remove, cold)?;
                work.remove(base, index, layout, item_key, seq, cold)?;
            }
            BatchOp::ExpireBuckets {
                collection,
                key,
                field,
                before,
            } => {
                let (work, index, _) =
                    self.array(&collection, &key, &field, Operation::ExpireBuckets, cold)?;
                let expired = work.expire_buckets(base, index, before, cold)?;
                self.expired.buckets += expired.buckets;
                self.expired.items += expired.items;
                self.expired.rolled_up += expired.rolled_up;
            }
        }
        Ok(())
    }

    /// The redo of the whole batch, the value each `Patch` in it makes (in order) and what
    /// its expiries dropped; fails when any record would exceed the limit.
    pub fn finish(self) -> Result<(Vec<Op>, Vec<Bytes>, Expired)> {
        let page_bytes = self.base.shared.pages.page_bytes;
        let mut ops = self.created;
        let mut patched = Vec::new();
        // In key order: the same redo for the same batch, and tree inserts that walk forward.
        let mut parents: Vec<_> = self.parents.into_iter().collect();
        parents.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (_, work) in parents {
            work.emit(page_bytes, &mut ops, &mut patched)?;
        }
        Ok((ops, patched, self.expired))
    }
}
