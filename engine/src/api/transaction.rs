//! `Transaction`: reads at one version plus the transaction's own writes, then an atomic,
//! serializable commit. Optimistic, as fjall's transactional keyspaces: nothing is locked
//! while it runs; its commit checks, under the writer lock, that nothing it read has
//! changed since it began, and is refused with `Error::Conflict` if anything has.

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::batch::Batch;
use super::collection::CollectionHandle;
use super::view::{View, sealed};
use crate::catalog::CollectionInfo;
use crate::error::Result;
use crate::page::keys;
use crate::store::{Engine, ReadSet, Version, check_key};

/// A read-modify-write unit of work. Reads (through [`Transaction::collection`]) see the
/// database as it was when the transaction began, plus the transaction's own writes;
/// writes are buffered and applied by [`Transaction::commit`], all or nothing.
///
/// Serializable: the commit succeeds only if every parent the transaction read (with
/// `get`, `get_projected`, `items` or `summary`) and every range it scanned (with `scan`
/// or `outliers`) is as it was when the transaction began; otherwise it applies nothing
/// and returns `Error::Conflict`, and the caller runs the transaction again. Conflicts are
/// per parent: a push to another parent, or a compaction that moves chunks, is none. A
/// transaction that reads nothing never conflicts.
///
/// Reading its own writes builds the transaction's view again after each write (the
/// pending writes staged in memory as a commit would stage them), so a transaction that
/// interleaves many writes and reads pays for each read after a write in proportion to its
/// writes so far.
///
/// ```
/// use skewdb::{CollectionSpec, Db, Error, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new())?;
/// db.create_collection(CollectionSpec::new("counters"))?;
/// // Increment a counter; run again on a conflict with a concurrent increment.
/// loop {
///     let mut txn = db.transaction();
///     let count: u64 = match txn.collection("counters")?.get("visits")? {
///         Some(document) => std::str::from_utf8(document.body())?.parse()?,
///         None => 0,
///     };
///     txn.put("counters", "visits", (count + 1).to_string());
///     match txn.commit() {
///         Err(Error::Conflict { .. }) => continue,
///         other => break other?,
///     }
/// }
/// let visits = db.collection("counters")?.get("visits")?.expect("committed");
/// assert_eq!(visits.body(), b"1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a transaction writes nothing until it is committed"]
pub struct Transaction {
    engine: Engine,
    base: Arc<Version>,
    /// Its writes; behind a lock so that a typed handle made from the transaction, which
    /// reads through `&Transaction`, can write into it too (`Writes for &Transaction`).
    batch: Mutex<Batch>,
    reads: Arc<ReadSet>,
    /// The view of the pending writes, and how many operations it reflects.
    view: Mutex<Option<(usize, Arc<Version>)>>,
}

impl Transaction {
    pub(crate) fn new(engine: Engine) -> Self {
        let base = engine.current();
        let batch = Batch::new(&engine);
        Transaction {
            engine,
            base,
            batch: Mutex::new(batch),
            reads: Arc::new(ReadSet::default()),
            view: Mutex::new(None),
        }
    }

    /// The collection named `name`, read as the transaction sees it; `Error::UnknownCollection`
    /// for one created after the transaction began.
    pub fn collection(&self, name: &str) -> Result<TransactionCollection<'_>> {
        let info = self.base.catalog.get(name)?.clone();
        Ok(CollectionHandle {
            view: InTransaction { txn: self },
            info,
        })
    }

    /// The version reads see: the one the transaction began at, with its writes so far.
    fn view(&self) -> Result<Arc<Version>> {
        let batch = self.batch.lock();
        let ops = &batch.ops;
        if ops.is_empty() {
            return Ok(self.base.clone());
        }
        let mut view = self.view.lock();
        if let Some((seen, version)) = view.as_ref()
            && *seen == ops.len()
        {
            return Ok(version.clone());
        }
        let version = self.engine.own_view(&self.base, ops.ops())?;
        *view = Some((ops.len(), version.clone()));
        Ok(version)
    }

    super::writes::write_methods!();

    /// The batch the transaction's writes queue into, applied at its commit.
    fn queue(&mut self) -> &mut Batch {
        self.batch.get_mut()
    }

    fn queued(&self) -> parking_lot::MutexGuard<'_, Batch> {
        self.batch.lock()
    }

    /// Applies the writes if nothing the transaction read has changed since it began:
    /// atomically, durable on return under `Durability::Immediate`. `Error::Conflict` (and
    /// nothing applied) otherwise; the errors a batch can have too.
    pub fn commit(mut self) -> Result<()> {
        let reads = (!self.reads.is_empty()).then(|| self.reads.clone());
        self.batch.get_mut().commit_checked(reads).map(|_| ())
    }
}

impl super::batch::Writes for Transaction {}

impl super::batch::sealed::Pending for Transaction {
    fn with_pending<R>(
        &mut self,
        _: super::batch::sealed::Token,
        write: impl FnOnce(&mut Batch) -> R,
    ) -> R {
        write(self.batch.get_mut())
    }
}

impl super::batch::sealed::Pending for &Transaction {
    fn with_pending<R>(
        &mut self,
        _: super::batch::sealed::Token,
        write: impl FnOnce(&mut Batch) -> R,
    ) -> R {
        write(&mut self.batch.lock())
    }
}

impl super::batch::Writes for &Transaction {}

/// One collection as a [`Transaction`] reads it: at the version the transaction began,
/// with its own writes; each read is remembered, for the commit to check.
pub type TransactionCollection<'t> = CollectionHandle<InTransaction<'t>>;

/// A [`TransactionCollection`]'s view: the transaction's, each read remembered.
#[derive(Clone, Copy)]
pub struct InTransaction<'t> {
    txn: &'t Transaction,
}

impl View for InTransaction<'_> {}

#[allow(private_interfaces)]
impl sealed::Sealed for InTransaction<'_> {
    fn engine(&self) -> &Engine {
        &self.txn.engine
    }

    fn version(&self, _: &CollectionInfo) -> Result<Arc<Version>> {
        self.txn.view()
    }

    /// Remembers the read of parent `key`'s record (which every change to its arrays
    /// changes too).
    fn note_parent(&self, info: &CollectionInfo, key: &[u8]) -> Result<()> {
        check_key(key)?;
        let tree_key = keys::parent(info.id, key);
        let txn = &self.txn;
        txn.engine.note_read(&txn.reads, &txn.base.tree, tree_key)
    }

    fn note_range(&self, range: impl FnOnce() -> (Bound<Bytes>, Bound<Bytes>)) -> Result<()> {
        let txn = &self.txn;
        txn.engine
            .note_range_read(&txn.reads, &txn.base.tree, range())
    }
}
