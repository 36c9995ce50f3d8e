//! A transaction's own view: the version it started from with its pending writes applied
//! in memory, never logged or published. The same stager and redo as a commit build it, so
//! what a transaction reads of its own writes is what its commit will write.

use std::sync::Arc;

use crate::cold::ColdGroup;
use crate::error::Result;
use crate::page::keys;
use crate::page::redo::Op;
use crate::store::shared::Shared;
use crate::store::versions::Version;
use crate::store::write::apply::{Txn, apply, patched_value};
use crate::store::write::ops::BatchOp;
use crate::store::write::stage::Stager;

impl Shared {
    /// `base` with `ops` applied: records and tails in memory (a large one held, as a patched
    /// one is), new chunks in a detached group the view reads them back from.
    pub(in crate::store) fn own_view(
        &self,
        base: &Version,
        ops: impl Iterator<Item = Result<BatchOp>>,
    ) -> Result<Arc<Version>> {
        let mut txn = Txn::new(base.tree.clone(), base.catalog.clone());
        let mut cold = ColdGroup::detached();
        let redo = {
            let mut stager = Stager::new(self, &txn);
            for op in ops {
                stager.apply(op?, &mut cold)?;
            }
            stager.finish()?.0
        };
        for op in &redo {
            match op {
                // Held when too large for a leaf, as a patched record is: no log holds it.
                Op::Put { key, value } => {
                    let value = patched_value(&self.pages, value.clone());
                    let pages = self.pages.reading(keys::owner_of(key));
                    txn.tree.insert(&pages, key.clone(), value)?;
                }
                _ => apply(&self.pages, &mut txn, op, None)?,
            }
        }
        Ok(Arc::new(Version {
            tree: txn.tree.pin_root(&self.pages.maintaining()),
            catalog: txn.catalog,
            commits: base.commits,
            generation: base.generation,
            own_chunks: Some(Arc::new(cold.into_detached())),
        }))
    }
}
