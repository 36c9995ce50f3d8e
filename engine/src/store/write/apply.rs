//! Applying redo to a transaction's tree: shared by the commit path and by replay at
//! open, so both build the same pages.
//!
//! What each redo op does: `format-spec/hot-log.md`.

use std::sync::Arc;

use bytes::Bytes;

use crate::cache::Owner;
use crate::catalog::{Catalog, CollectionInfo};
use crate::error::{Error, Result};
use crate::page::node::{LargeRef, Value};
use crate::page::redo::Op;
use crate::page::tree::Tree;
use crate::page::{PageStore, keys, max_inline_record};

/// A version being changed by a group of batches (or by replay).
pub(crate) struct Txn {
    pub tree: Tree,
    pub catalog: Arc<Catalog>,
    /// Parent records the transaction put, patched or deleted: what its commit takes out of
    /// the record tier.
    pub written: Vec<Bytes>,
    /// Collections whose schema the transaction changed: their every record leaves the
    /// record tier (what a reader built from one was built under the old schema).
    pub schema_changed: Vec<crate::catalog::CollectionId>,
}

impl Txn {
    pub fn new(tree: Tree, catalog: Arc<Catalog>) -> Txn {
        Txn {
            tree,
            catalog,
            written: Vec::new(),
            schema_changed: Vec::new(),
        }
    }

    /// Lists `key` among the records the commit changes, if it is a parent record's (the
    /// only records the record tier keeps).
    pub fn note_written(&mut self, key: &Bytes) {
        if crate::page::keys::is_parent(key) {
            self.written.push(key.clone());
        }
    }
}

/// Applies one redo op to a transaction; shared by commit and replay so both build the
/// same pages. `large` locates a `Put`'s value in the log when it is too big for a leaf.
pub(crate) fn apply(
    pages: &PageStore,
    txn: &mut Txn,
    op: &Op,
    large: Option<LargeRef>,
) -> Result<()> {
    let key = match op {
        Op::Put { key, .. }
        | Op::Delete { key }
        | Op::DeleteRange { start: key, .. }
        | Op::Patch { key, .. } => Some(key),
        Op::CreateCollection { .. }
        | Op::SetCollection(_)
        | Op::DropCollection { .. }
        | Op::Retire(_)
        | Op::Reclaimed(_)
        | Op::ColdChunk(_)
        | Op::ColdBytes { .. } => None,
    };
    let pages = &pages.reading(key.map_or(Owner::NONE, |key| keys::owner_of(key)));
    if let Op::Put { key, .. } | Op::Delete { key } | Op::Patch { key, .. } = op {
        txn.note_written(key);
    }
    match op {
        Op::CreateCollection { id, spec } => {
            Arc::make_mut(&mut txn.catalog).insert(CollectionInfo::new(*id, spec.clone()));
        }
        Op::SetCollection(info) => {
            Arc::make_mut(&mut txn.catalog)
                .set(info.clone())
                .map_err(|reason| Error::corruption("hot log", 0, reason))?;
            txn.schema_changed.push(info.id);
        }
        Op::DropCollection { id } => {
            Arc::make_mut(&mut txn.catalog)
                .drop_collection(*id)
                .map_err(|reason| Error::corruption("hot log", 0, reason))?;
            txn.schema_changed.push(*id);
        }
        Op::Retire(retired) => Arc::make_mut(&mut txn.catalog).retire(*retired),
        Op::Reclaimed(retired) => Arc::make_mut(&mut txn.catalog).reclaimed(*retired),
        Op::Put { key, value } => {
            let value = match large {
                Some(large) => Value::Large(large),
                None => Value::Inline(value.clone()),
            };
            txn.tree.insert(pages, key.clone(), value)?;
        }
        Op::Delete { key } => {
            txn.tree.remove(pages, key)?;
        }
        Op::DeleteRange { start, end } => {
            for key in txn.tree.remove_range(pages, start, end)? {
                txn.note_written(&key);
            }
        }
        // The chunk is in its cold segment already; replay checks that it survived, or
        // writes it again from the redo that carries it.
        Op::ColdChunk(_) | Op::ColdBytes { .. } => {}
        Op::Patch {
            key,
            old_len,
            edits,
        } => {
            let bad = |reason: String| {
                Error::corruption("hot log", 0, format!("patch of {key:x?}: {reason}"))
            };
            let old = match txn.tree.get(pages, key)? {
                Some(value) => pages.value_bytes(&value)?,
                None => return Err(bad("no record to patch".to_string())),
            };
            let value = crate::page::redo::apply_patch(&old, *old_len, edits).map_err(bad)?;
            txn.tree
                .insert(pages, key.clone(), patched_value(pages, Bytes::from(value)))?;
        }
    }
    Ok(())
}

/// A patch's result as a leaf holds it: inline, or held until the next checkpoint when too
/// large for a leaf.
pub(in crate::store) fn patched_value(pages: &PageStore, value: Bytes) -> Value {
    if value.len() > max_inline_record(pages.page_bytes) {
        Value::Held(value)
    } else {
        Value::Inline(value)
    }
}

/// True when a `Put` value of this length stays in the log rather than in a leaf.
pub(crate) fn is_large(op: &Op, max_inline: usize) -> bool {
    matches!(op, Op::Put { value, .. } if value.len() > max_inline)
}
