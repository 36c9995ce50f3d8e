//! The database from Python: opening, collections and their schemas, batches,
//! transactions, snapshots, statistics, backups.

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use pyo3::prelude::*;
use pyo3::sync::{MutexExt, RwLockExt};
use pyo3::types::{PyDict, PyString};
use skewdb::{Durability, Options};

use crate::collection::{Collection, Reader, stated};
use crate::convert::{self, Codec};
use crate::errors::{self, to_py};

/// An open database. Use it as a context manager, or call `close()`.
#[pyclass(module = "skewdb", frozen)]
pub struct Db {
    inner: RwLock<Option<skewdb::Db>>,
    path: String,
}

impl Db {
    /// Runs `f` on the open database; `Closed` once it was closed.
    /// (The lock is taken with the GIL released while it waits, as every lock of this
    /// module is: a thread holding it may be waiting for the GIL.)
    pub fn with<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&skewdb::Db) -> PyResult<R>,
    ) -> PyResult<R> {
        let held = self.inner.read_py_attached(py);
        match held.as_ref() {
            Some(db) => f(db),
            None => Err(to_py(skewdb::Error::Closed)),
        }
    }
}

/// The options `open` and `restore` take (a cache of 64 MiB when none is given).
fn options(cache: Option<&Bound<'_, PyAny>>, durability: &str) -> PyResult<Options> {
    let cache = match cache {
        None => 64 << 20,
        Some(cache) => match cache.cast::<PyString>() {
            Ok(text) => {
                skewdb_cli::advise::parse_bytes(&text.to_cow()?).map_err(errors::invalid_input)?
            }
            Err(_) => cache.extract::<u64>()?,
        },
    };
    let durability = match durability {
        "immediate" => Durability::Immediate,
        "buffered" => Durability::Buffered,
        other => {
            return Err(errors::invalid_input(format!(
                "durability {other:?} is neither \"immediate\" nor \"buffered\""
            )));
        }
    };
    let cache = usize::try_from(cache).map_err(|_| errors::invalid_input("cache too large"))?;
    Ok(Options::new().cache_bytes(cache).durability(durability))
}

impl Db {
    /// The handle of `db`, opened in directory `path`.
    fn opened(db: skewdb::Db, path: &std::path::Path) -> Db {
        Db {
            inner: RwLock::new(Some(db)),
            path: path.display().to_string(),
        }
    }
}

/// Opens (creating when absent, unless `read_only`) the database in directory `path`.
/// `cache` is the page cache budget (bytes, or a text such as `"64MiB"`); `durability`
/// `"immediate"` (a commit returns once synced) or `"buffered"` (synced in the
/// background: a crash may lose the last commits, never a part of one).
#[pyfunction]
#[pyo3(signature = (path, *, cache=None, durability="immediate", read_only=false))]
pub fn open(
    py: Python<'_>,
    path: std::path::PathBuf,
    cache: Option<&Bound<'_, PyAny>>,
    durability: &str,
    read_only: bool,
) -> PyResult<Db> {
    let options = options(cache, durability)?;
    let db = py
        .detach(|| match read_only {
            true => skewdb::Db::open_read_only(&path, options),
            false => skewdb::Db::open(&path, options),
        })
        .map_err(to_py)?;
    Ok(Db::opened(db, &path))
}

/// Loads the backup file `backup` (from `Db.backup`) into a new database in directory
/// `path`, and opens it.
#[pyfunction]
#[pyo3(signature = (backup, path, *, cache=None, durability="immediate"))]
pub fn restore(
    py: Python<'_>,
    backup: std::path::PathBuf,
    path: std::path::PathBuf,
    cache: Option<&Bound<'_, PyAny>>,
    durability: &str,
) -> PyResult<Db> {
    let options = options(cache, durability)?;
    let db = py
        .detach(|| skewdb::Db::restore(&backup, &path, options))
        .map_err(to_py)?;
    Ok(Db::opened(db, &path))
}

/// A JSON value as Python (dicts, lists, numbers, text), through the `json` module.
fn json<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?
        .call_method1("loads", (value.to_string(),))
}

/// The `FIELD=LAYOUT` text and measures of a layout object (`Subset(keep=5)`, ...).
fn layout_of(field: &str, layout: &Bound<'_, PyAny>) -> PyResult<(String, Vec<String>)> {
    let spec: String = layout
        .call_method0("_spec")
        .map_err(|_| {
            errors::invalid_input(format!(
                "array {field:?}: a layout is skewdb.Embed(), Reference(), Subset(keep=), \
                 Outlier(cap=) or Bucket(max_items=, span=)"
            ))
        })?
        .extract()?;
    let measures: Vec<String> = layout.getattr("measures")?.extract()?;
    Ok((format!("{field}={spec}"), measures))
}

/// `FIELD=SPAN` texts of a `{field: span}` dict.
fn spans(given: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<String>> {
    let mut out = Vec::new();
    for (field, span) in given.into_iter().flat_map(|d| d.iter()) {
        out.push(format!(
            "{}={}",
            field.extract::<String>()?,
            convert::span_text(&span)?
        ));
    }
    Ok(out)
}

#[pymethods]
impl Db {
    /// The database's directory.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Creates collection `name` (nothing when it exists with the same schema; a
    /// `SchemaConflict` when its schema differs) and returns it. `arrays` maps each array
    /// field to its layout (`skewdb.Subset(keep=5)`, `Outlier(cap=1000)`,
    /// `Bucket(max_items=60, span="1h", measures=[..])`, `Embed()`, `Reference()`);
    /// `rollups` maps a Bucket field to the span its expired buckets roll up into
    /// (`"1d"`). Documents are dicts stored as BSON, keyed by body field `key_field`; an
    /// array's items keyed by element field `item_keys[field]` when given. `bytes=True`
    /// makes a collection of the application's own bytes instead.
    #[pyo3(signature = (name, arrays=None, *, rollups=None, key_field="_id", item_keys=None, bytes=false))]
    fn create_collection(
        slf: &Bound<'_, Self>,
        name: &str,
        arrays: Option<&Bound<'_, PyDict>>,
        rollups: Option<&Bound<'_, PyDict>>,
        key_field: &str,
        item_keys: Option<&Bound<'_, PyDict>>,
        bytes: bool,
    ) -> PyResult<Collection> {
        let mut fields = Vec::new();
        let mut measures = Vec::new();
        let mut declared = Vec::new();
        for (field, layout) in arrays.into_iter().flat_map(|d| d.iter()) {
            let field: String = field.extract()?;
            let (text, named) = layout_of(&field, &layout)?;
            fields.push(text);
            if !named.is_empty() {
                measures.push(format!("{field}={}", named.join(",")));
                declared.push(field);
            }
        }
        let names = ["array", "measures", "rollup"];
        let mut spec =
            skewdb_cli::schema::collection_spec(name, &fields, &measures, &spans(rollups)?, names)
                .map_err(convert::failure)?;
        let mut keyed = Vec::new();
        for (field, item_key) in item_keys.into_iter().flat_map(|d| d.iter()) {
            keyed.push(format!(
                "{}={}",
                field.extract::<String>()?,
                item_key.extract::<String>()?
            ));
        }
        match bytes {
            true if key_field != "_id" || !keyed.is_empty() => {
                return Err(errors::invalid_input(
                    "a collection of bytes (bytes=True) has no document fields: key_field \
                     and item_keys are for a collection of documents",
                ));
            }
            true => {}
            false => {
                let declared: Vec<&str> = declared.iter().map(String::as_str).collect();
                spec = skewdb_cli::schema::of_documents(spec, key_field, &keyed, &declared)
                    .map_err(convert::failure)?;
            }
        }
        let py = slf.py();
        let created = slf.get().with(py, |db| {
            py.detach(|| db.create_collection(spec)).map_err(to_py)
        })?;
        Ok(Collection::latest(slf.clone().unbind(), created))
    }

    /// Collection `name` (`UnknownCollection` when there is none).
    fn collection(slf: &Bound<'_, Self>, name: &str) -> PyResult<Collection> {
        let py = slf.py();
        let collection = slf
            .get()
            .with(py, |db| db.collection(name).map_err(to_py))?;
        Ok(Collection::latest(slf.clone().unbind(), collection))
    }

    fn __getitem__(slf: &Bound<'_, Self>, name: &str) -> PyResult<Collection> {
        Self::collection(slf, name)
    }

    /// The collections' names, sorted.
    fn collections(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.with(py, |db| Ok(db.collection_names()))
    }

    /// Changes collection `name`'s schema at once: `rename` it, `add_arrays` (field to
    /// layout), `drop_arrays` (fields), `add_measures` (field to a list of names),
    /// `set_layouts` (field to layout: parents move in the background; see
    /// `wait_for_migrations`), `set_rollups` (field to span).
    #[pyo3(signature = (name, *, rename=None, add_arrays=None, drop_arrays=None, add_measures=None, set_layouts=None, set_rollups=None))]
    fn alter(
        slf: &Bound<'_, Self>,
        name: &str,
        rename: Option<String>,
        add_arrays: Option<&Bound<'_, PyDict>>,
        drop_arrays: Option<Vec<String>>,
        add_measures: Option<&Bound<'_, PyDict>>,
        set_layouts: Option<&Bound<'_, PyDict>>,
        set_rollups: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Collection> {
        let layouts = |given: Option<&Bound<'_, PyDict>>| -> PyResult<Vec<String>> {
            let mut out = Vec::new();
            for (field, layout) in given.into_iter().flat_map(|d| d.iter()) {
                out.push(layout_of(&field.extract::<String>()?, &layout)?.0);
            }
            Ok(out)
        };
        let mut measures = Vec::new();
        for (field, names) in add_measures.into_iter().flat_map(|d| d.iter()) {
            let field: String = field.extract()?;
            for measure in names.extract::<Vec<String>>()? {
                measures.push(format!("{field}={measure}"));
            }
        }
        let changes = skewdb_cli::schema::Changes {
            rename,
            drop_arrays: drop_arrays.unwrap_or_default(),
            add_arrays: layouts(add_arrays)?,
            add_measures: measures,
            set_layouts: layouts(set_layouts)?,
            set_rollups: spans(set_rollups)?,
        };
        let names = ["add_arrays", "add_measures", "set_layouts", "set_rollups"];
        let py = slf.py();
        let altered = slf.get().with(py, |db| {
            let current = db.collection(name).ok();
            let alteration =
                skewdb_cli::schema::alteration(changes, names, current.as_ref().map(|c| c.spec()))
                    .map_err(convert::failure)?;
            py.detach(|| db.alter_collection(name, alteration))
                .map_err(to_py)
        })?;
        Ok(Collection::latest(slf.clone().unbind(), altered))
    }

    /// Drops collection `name` and everything in it.
    fn drop(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.with(py, |db| {
            py.detach(|| db.drop_collection(name)).map_err(to_py)
        })
    }

    /// Waits until every layout change has moved its parents; returns the moves left
    /// open by parents that cannot move, as dicts (`collection`, `field`, `from`, `to`,
    /// `parents_walked`, `parents_moved`, `parents_total`, `refused`), as `stats()` shows
    /// the migrations running.
    fn wait_for_migrations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let left = self.with(py, |db| {
            py.detach(|| db.wait_for_migrations()).map_err(to_py)
        })?;
        let left: Vec<_> = left.iter().map(skewdb_cli::text::migration_json).collect();
        json(py, &serde_json::Value::Array(left))
    }

    /// A batch: writes to any collections, committed atomically when the `with` block
    /// ends without an exception (or by `commit()`).
    fn batch(slf: &Bound<'_, Self>) -> PyResult<Batch> {
        let py = slf.py();
        let batch = slf.get().with(py, |db| Ok(db.batch()))?;
        Ok(Batch {
            db: slf.clone().unbind(),
            batch: Mutex::new(Some(batch)),
        })
    }

    /// A transaction: reads at one version plus its own writes, committed atomically and
    /// serializably when the `with` block ends without an exception (`Conflict` when
    /// another commit changed what it read: run it again, or use `transact`).
    fn transaction(slf: &Bound<'_, Self>) -> PyResult<Transaction> {
        let py = slf.py();
        let transaction = slf.get().with(py, |db| Ok(db.transaction()))?;
        Ok(Transaction {
            db: slf.clone().unbind(),
            transaction: Arc::new(Mutex::new(Some(transaction))),
        })
    }

    /// Runs `work(transaction)` and commits it, again on `Conflict`, at most `attempts`
    /// times; returns what `work` returned.
    #[pyo3(signature = (work, *, attempts=10))]
    fn transact(
        slf: &Bound<'_, Self>,
        work: &Bound<'_, PyAny>,
        attempts: u32,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let mut tried = 0;
        loop {
            tried += 1;
            let transaction = Self::transaction(slf)?;
            let held = transaction.transaction.clone();
            let transaction = Bound::new(py, transaction)?;
            let result = work.call1((transaction,))?;
            let taken = held.lock_py_attached(py).take();
            let Some(taken) = taken else {
                return Ok(result.unbind());
            };
            match py.detach(|| taken.commit()) {
                Ok(()) => return Ok(result.unbind()),
                Err(skewdb::Error::Conflict { .. }) if tried < attempts => continue,
                Err(error) => return Err(to_py(error)),
            }
        }
    }

    /// A snapshot: every collection as of now, unchanged by later commits.
    fn snapshot(slf: &Bound<'_, Self>) -> PyResult<Snapshot> {
        let py = slf.py();
        let snapshot = slf.get().with(py, |db| Ok(db.snapshot()))?;
        Ok(Snapshot {
            db: slf.clone().unbind(),
            snapshot: Mutex::new(Some(snapshot)),
        })
    }

    /// The database's state and this process's counters, as `skewdb stats --json`
    /// prints them (the cache's what-if table included).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = self.with(py, |db| {
            py.detach(|| -> skewdb::Result<_> {
                let stats = db.stats()?;
                let space = db.space()?;
                Ok(skewdb_cli::text::stats_json(&stats, &space))
            })
            .map_err(to_py)
        })?;
        json(py, &value)
    }

    /// Writes a consistent backup of the whole database to file `path`; a dict of what
    /// it holds.
    fn backup<'py>(
        &self,
        py: Python<'py>,
        path: std::path::PathBuf,
    ) -> PyResult<Bound<'py, PyDict>> {
        let report = self.with(py, |db| py.detach(|| db.backup(&path)).map_err(to_py))?;
        let out = PyDict::new(py);
        out.set_item("commits", report.commits)?;
        out.set_item("collections", report.collections)?;
        out.set_item("parents", report.parents)?;
        out.set_item("records", report.records)?;
        out.set_item("chunks", report.chunks)?;
        Ok(out)
    }

    /// Writes every changed page and a checkpoint.
    fn checkpoint(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |db| py.detach(|| db.checkpoint()).map_err(to_py))
    }

    /// Rewrites cold segments and pages to reclaim the space of what was deleted.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |db| py.detach(|| db.compact()).map(drop).map_err(to_py))
    }

    /// Checks every stored byte; raises `Corruption` on the first bad one.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |db| py.detach(|| db.verify()).map(drop).map_err(to_py))
    }

    /// Makes every commit so far durable (under `durability="buffered"`).
    fn persist(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |db| py.detach(|| db.persist()).map_err(to_py))
    }

    /// Closes the database: checkpoints, and every later call raises `Closed`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.inner.write_py_attached(py).take();
        match taken {
            Some(db) => py.detach(|| db.close()).map_err(to_py),
            None => Ok(()),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let state = if self.inner.read_py_attached(py).is_some() {
            "open"
        } else {
            "closed"
        };
        format!("<skewdb.Db {:?} {state}>", self.path)
    }
}

/// Writes to any collections, committed atomically.
#[pyclass(module = "skewdb", frozen)]
pub struct Batch {
    db: Py<Db>,
    batch: Mutex<Option<skewdb::Batch>>,
}

impl Batch {
    /// Queues what `queue` makes of collection `name`'s handle and codec.
    fn queue(
        &self,
        py: Python<'_>,
        name: &str,
        queue: impl FnOnce(&mut skewdb::Batch, &skewdb::Collection, &Codec<'_>) -> PyResult<()>,
    ) -> PyResult<()> {
        let collection = self
            .db
            .get()
            .with(py, |db| db.collection(name).map_err(to_py))?;
        let mut held = self.batch.lock_py_attached(py);
        let batch = held.as_mut().ok_or_else(|| to_py(skewdb::Error::Closed))?;
        queue(batch, &collection, &Codec::of(collection.spec()))
    }
}

#[pymethods]
impl Batch {
    /// Sets the body of parent `key` of collection `collection`, as `Collection.put`.
    fn put(
        &self,
        py: Python<'_>,
        collection: &str,
        key: &Bound<'_, PyAny>,
        body: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.queue(py, collection, |batch, handle, codec| {
            let key = codec.key(key)?;
            let body = codec.body(&key, body)?;
            batch.put_in(handle, key, body);
            Ok(())
        })
    }

    /// Deletes parent `key` of collection `collection`.
    fn delete(&self, py: Python<'_>, collection: &str, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.queue(py, collection, |batch, handle, codec| {
            batch.delete_in(handle, codec.key(key)?);
            Ok(())
        })
    }

    /// Pushes an item, as `Collection.push`.
    #[pyo3(signature = (collection, parent, field, item=None, *, key=None, value=None, measures=None))]
    fn push(
        &self,
        py: Python<'_>,
        collection: &str,
        parent: &Bound<'_, PyAny>,
        field: &str,
        item: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        value: Option<f64>,
        measures: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        self.queue(py, collection, |batch, handle, codec| {
            let array = codec.array(field)?;
            let stated = stated(array, key, value, measures)?;
            let none = py.None().into_bound(py);
            let item = codec.item(field, item.unwrap_or(&none), stated)?;
            let array = handle.array(field).map_err(to_py)?;
            batch.push_to(&array, codec.key(parent)?, item);
            Ok(())
        })
    }

    /// Commits what was queued (atomically, durably under `"immediate"`); the batch is
    /// then empty and may be used again.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let mut held = self.batch.lock_py_attached(py);
        let batch = held.as_mut().ok_or_else(|| to_py(skewdb::Error::Closed))?;
        py.detach(|| batch.commit()).map_err(to_py)
    }

    /// Writes queued and not committed.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.batch
            .lock_py_attached(py)
            .as_ref()
            .map_or(0, |b| b.len())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commits when the block ended without an exception; drops the writes otherwise.
    fn __exit__(
        &self,
        py: Python<'_>,
        kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if kind.is_none_or(|k| k.is_none()) {
            self.commit(py)?;
        }
        self.batch.lock_py_attached(py).take();
        Ok(false)
    }
}

/// A transaction: `collection(name)` reads at its version plus its own writes, and writes
/// into it.
#[pyclass(module = "skewdb", frozen)]
pub struct Transaction {
    db: Py<Db>,
    transaction: Arc<Mutex<Option<skewdb::Transaction>>>,
}

#[pymethods]
impl Transaction {
    /// Collection `name` as the transaction sees it; its writes go into the transaction.
    fn collection(&self, py: Python<'_>, name: &str) -> PyResult<Collection> {
        let spec = {
            let held = self.transaction.lock_py_attached(py);
            let transaction = held.as_ref().ok_or_else(|| to_py(skewdb::Error::Closed))?;
            transaction.collection(name).map_err(to_py)?.spec().clone()
        };
        Ok(Collection {
            db: self.db.clone_ref(py),
            spec,
            reader: Reader::Transaction(self.transaction.clone()),
        })
    }

    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Collection> {
        self.collection(py, name)
    }

    /// Commits the transaction (`Conflict` when another commit changed what it read).
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.transaction.lock_py_attached(py).take();
        let transaction = taken.ok_or_else(|| to_py(skewdb::Error::Closed))?;
        py.detach(|| transaction.commit()).map_err(to_py)
    }

    /// Drops the transaction's writes.
    fn rollback(&self, py: Python<'_>) {
        self.transaction.lock_py_attached(py).take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commits when the block ended without an exception and the transaction is still
    /// open; rolls back otherwise.
    fn __exit__(
        &self,
        py: Python<'_>,
        kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let open = self.transaction.lock_py_attached(py).is_some();
        match kind.is_none_or(|k| k.is_none()) && open {
            true => self.commit(py)?,
            false => self.rollback(py),
        }
        Ok(false)
    }
}

/// Every collection as of one moment.
#[pyclass(module = "skewdb", frozen)]
pub struct Snapshot {
    db: Py<Db>,
    snapshot: Mutex<Option<skewdb::Snapshot>>,
}

#[pymethods]
impl Snapshot {
    /// Collection `name` as of the snapshot.
    fn collection(&self, py: Python<'_>, name: &str) -> PyResult<Collection> {
        let held = self.snapshot.lock_py_attached(py);
        let snapshot = held.as_ref().ok_or_else(|| to_py(skewdb::Error::Closed))?;
        let collection = snapshot.collection(name).map_err(to_py)?;
        Ok(Collection {
            db: self.db.clone_ref(py),
            spec: collection.spec().clone(),
            reader: Reader::Snapshot(collection),
        })
    }

    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Collection> {
        self.collection(py, name)
    }

    /// The collections' names as of the snapshot.
    fn collections(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let held = self.snapshot.lock_py_attached(py);
        let snapshot = held.as_ref().ok_or_else(|| to_py(skewdb::Error::Closed))?;
        Ok(snapshot.collection_names())
    }

    /// Lets the snapshot go (what it held may then be reclaimed).
    fn close(&self, py: Python<'_>) {
        self.snapshot.lock_py_attached(py).take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }
}
