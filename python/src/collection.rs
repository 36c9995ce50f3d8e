//! A collection from Python: reads through the latest state, a snapshot or a transaction
//! (one type, the reader decides), writes committed at once or into the transaction, and
//! the lazy iterator over an array's items.

use std::collections::VecDeque;
use std::ops::Bound as Edge;
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyList};
use skewdb::{CollectionSpec, Cursor, ItemQuery, Summary};
use skewdb_cli::mapped::Stated;

use crate::convert::{self, Codec};
use crate::db::Db;
use crate::errors::{self, to_py};

/// What a collection handle reads through.
pub enum Reader {
    Latest(skewdb::Collection),
    Snapshot(skewdb::SnapshotCollection),
    /// The transaction (taken out once it commits or rolls back) and the name to read.
    Transaction(Arc<Mutex<Option<skewdb::Transaction>>>),
}

/// Runs `$body` with `$c` bound to a handle of the reader's view, the GIL released.
macro_rules! read {
    ($self:expr, $py:expr, |$c:ident| $body:expr) => {{
        let name = $self.spec.name();
        let result: skewdb::Result<_> = match &$self.reader {
            Reader::Latest($c) => $py.detach(|| $body),
            Reader::Snapshot($c) => $py.detach(|| $body),
            Reader::Transaction(transaction) => $py.detach(|| {
                let held = transaction.lock();
                match held.as_ref() {
                    Some(transaction) => {
                        let $c = transaction.collection(name)?;
                        $body
                    }
                    None => Err(skewdb::Error::Closed),
                }
            }),
        };
        result.map_err(to_py)
    }};
}

/// A collection of documents (or of bytes): `put`, `get`, `delete`, `scan`, `push`,
/// `items`, `summary`, `outliers`, `expire_buckets`.
#[pyclass(module = "skewdb", frozen)]
pub struct Collection {
    pub db: Py<Db>,
    pub spec: CollectionSpec,
    pub reader: Reader,
}

impl Collection {
    fn codec(&self) -> Codec<'_> {
        Codec::of(&self.spec)
    }

    /// Commits the write `write` queues: into the transaction when the handle reads one,
    /// else as a batch of its own (checked against the collection the handle was made for).
    fn write(
        &self,
        py: Python<'_>,
        write: impl FnOnce(&mut dyn WriteTo) -> skewdb::Result<()> + Send,
    ) -> PyResult<()> {
        match &self.reader {
            Reader::Latest(collection) => {
                let db = self.db.get();
                db.with(py, |db| {
                    let mut batch = db.batch();
                    write(&mut Handle {
                        batch: &mut batch,
                        collection,
                    })
                    .map_err(to_py)?;
                    py.detach(|| batch.commit()).map_err(to_py)
                })
            }
            Reader::Snapshot(_) => Err(errors::of_kind(
                "read_only",
                "a snapshot reads; write through the database, a batch or a transaction"
                    .to_string(),
            )),
            Reader::Transaction(transaction) => {
                let mut held = transaction.lock_py_attached(py);
                let transaction = held.as_mut().ok_or_else(|| to_py(skewdb::Error::Closed))?;
                write(&mut Named {
                    transaction,
                    name: self.spec.name(),
                })
                .map_err(to_py)
            }
        }
    }

    /// A handle of `collection` as the database holds it now.
    pub fn latest(db: Py<Db>, collection: skewdb::Collection) -> Collection {
        Collection {
            db,
            spec: collection.spec().clone(),
            reader: Reader::Latest(collection),
        }
    }

    /// `NotFound` for parent `key`.
    fn missing(&self, py: Python<'_>, key: &[u8]) -> PyErr {
        let shown = self
            .codec()
            .key_out(py, key)
            .and_then(|k| k.repr().map(|r| r.to_string()))
            .unwrap_or_else(|_| format!("{key:?}"));
        errors::not_found(format!("no parent {shown} in {}", self.spec.name()))
    }
}

/// The item keys from `start` (included) to `end` (excluded) of `array`.
fn key_range(
    array: &skewdb::ArraySpec,
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Edge<i64>, Edge<i64>)> {
    let key = |b: Option<&Bound<'_, PyAny>>| b.map(|k| convert::item_key(array, k)).transpose();
    Ok((
        key(start)?.map_or(Edge::Unbounded, Edge::Included),
        key(end)?.map_or(Edge::Unbounded, Edge::Excluded),
    ))
}

/// Where a collection handle's write goes.
pub trait WriteTo {
    fn put(&mut self, key: &[u8], body: &[u8]);
    fn delete(&mut self, key: &[u8]);
    fn push(&mut self, key: &[u8], field: &str, item: skewdb::NewItem) -> skewdb::Result<()>;
    fn remove(&mut self, key: &[u8], field: &str, item_key: i64) -> skewdb::Result<()>;
}

/// A batch of one handle's writes.
struct Handle<'a> {
    batch: &'a mut skewdb::Batch,
    collection: &'a skewdb::Collection,
}

impl WriteTo for Handle<'_> {
    fn put(&mut self, key: &[u8], body: &[u8]) {
        self.batch.put_in(self.collection, key, body);
    }
    fn delete(&mut self, key: &[u8]) {
        self.batch.delete_in(self.collection, key);
    }
    fn push(&mut self, key: &[u8], field: &str, item: skewdb::NewItem) -> skewdb::Result<()> {
        self.batch
            .push_to(&self.collection.array(field)?, key, item);
        Ok(())
    }
    fn remove(&mut self, key: &[u8], field: &str, item_key: i64) -> skewdb::Result<()> {
        let array = self.collection.array(field)?;
        self.batch.remove_from(&array, key, item_key);
        Ok(())
    }
}

/// A transaction's writes to a collection by name.
struct Named<'a> {
    transaction: &'a mut skewdb::Transaction,
    name: &'a str,
}

impl WriteTo for Named<'_> {
    fn put(&mut self, key: &[u8], body: &[u8]) {
        self.transaction.put(self.name, key, body);
    }
    fn delete(&mut self, key: &[u8]) {
        self.transaction.delete(self.name, key);
    }
    fn push(&mut self, key: &[u8], field: &str, item: skewdb::NewItem) -> skewdb::Result<()> {
        self.transaction.push(self.name, key, field, item);
        Ok(())
    }
    fn remove(&mut self, key: &[u8], field: &str, item_key: i64) -> skewdb::Result<()> {
        self.transaction.remove(self.name, key, field, item_key);
        Ok(())
    }
}

/// What a push states beside its element: the item key, the first measure's value, and
/// named measures.
pub fn stated(
    array: &skewdb::ArraySpec,
    key: Option<&Bound<'_, PyAny>>,
    value: Option<f64>,
    measures: Option<&Bound<'_, PyDict>>,
) -> PyResult<Stated> {
    let mut stated = Stated {
        item_key: key.map(|k| convert::item_key(array, k)).transpose()?,
        value,
        measures: Vec::new(),
    };
    for (name, measure) in measures.into_iter().flat_map(|m| m.iter()) {
        stated.measures.push((name.extract()?, measure.extract()?));
    }
    let finite = |v: f64| v.is_finite();
    if !stated.value.is_none_or(finite) || !stated.measures.iter().all(|(_, v)| finite(*v)) {
        return Err(errors::invalid_input("a measure's value is a finite float"));
    }
    Ok(stated)
}

#[pymethods]
impl Collection {
    /// The collection's name.
    #[getter]
    fn name(&self) -> &str {
        self.spec.name()
    }

    /// Each array field and its layout, as `skewdb collections` prints them (`"subset:5"`).
    #[getter]
    fn arrays<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let arrays = PyDict::new(py);
        for array in self.spec.arrays() {
            arrays.set_item(&array.field, array.layout.describe())?;
        }
        Ok(arrays)
    }

    /// Sets the body of parent `key` (a dict; bytes in a collection of bytes), creating it
    /// when absent; its arrays keep their items. Committed durably before it returns.
    fn put(&self, py: Python<'_>, key: &Bound<'_, PyAny>, body: &Bound<'_, PyAny>) -> PyResult<()> {
        let codec = self.codec();
        let key = codec.key(key)?;
        let body = codec.body(&key, body)?;
        self.write(py, |to| {
            to.put(&key, &body);
            Ok(())
        })
    }

    /// Deletes parent `key` and every item of its arrays (nothing when absent).
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = self.codec().key(key)?;
        self.write(py, |to| {
            to.delete(&key);
            Ok(())
        })
    }

    /// Pushes `item` (an element: a dict or any document value; `None` for a bare reading
    /// made of `key` and the values) to array `field` of `parent`, created with an empty
    /// body when absent. `key` is the item's key (an int, or a datetime in a time series;
    /// default: the array's greatest + 1), `value` the first measure's, `measures` named
    /// ones.
    #[pyo3(signature = (parent, field, item=None, *, key=None, value=None, measures=None))]
    fn push(
        &self,
        py: Python<'_>,
        parent: &Bound<'_, PyAny>,
        field: &str,
        item: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        value: Option<f64>,
        measures: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let codec = self.codec();
        let array = codec.array(field)?;
        let parent = codec.key(parent)?;
        let stated = stated(array, key, value, measures)?;
        let none = py.None().into_bound(py);
        let item = codec.item(field, item.unwrap_or(&none), stated)?;
        self.write(py, |to| to.push(&parent, field, item))
    }

    /// Removes every item keyed `key` from array `field` of `parent`.
    fn remove(
        &self,
        py: Python<'_>,
        parent: &Bound<'_, PyAny>,
        field: &str,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let codec = self.codec();
        let item_key = convert::item_key(codec.array(field)?, key)?;
        let parent = codec.key(parent)?;
        self.write(py, |to| to.remove(&parent, field, item_key))
    }

    /// Parent `key` as a dict: its body with each array's inline items (a Subset's newest,
    /// an Outlier's first, a Bucket's open bucket) and `FIELD_count`, `FIELD_has_overflow`
    /// beside them; `None` when absent. In a collection of bytes: `{"key", "body",
    /// "arrays": {FIELD: {"count", "has_overflow", "items"}}}`.
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let codec = self.codec();
        let key = codec.key(key)?;
        let Some(document) = read!(self, py, |c| c.get(&key))? else {
            return Ok(None);
        };
        document_dict(py, &codec, &self.spec, &document).map(Some)
    }

    /// Whether parent `key` exists.
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = self.codec().key(key)?;
        Ok(read!(self, py, |c| c.get_projected(&key, &[]))?.is_some())
    }

    /// Parents in key order, from `start` (included) to `end` (excluded), as `(key, doc)`
    /// pairs: `doc` as `get` gives it. Read at once from one state.
    #[pyo3(signature = (start=None, end=None))]
    fn scan<'py>(
        &self,
        py: Python<'py>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let codec = self.codec();
        let start = start.map(|k| codec.key(k)).transpose()?;
        let end = end.map(|k| codec.key(k)).transpose()?;
        let range = (
            start.map_or(Edge::Unbounded, Edge::Included),
            end.map_or(Edge::Unbounded, Edge::Excluded),
        );
        let documents = read!(self, py, |c| c
            .scan(range.clone())?
            .collect::<skewdb::Result<Vec<_>>>())?;
        let out = PyList::empty(py);
        for document in &documents {
            let key = codec.key_out(py, document.key())?;
            out.append((key, document_dict(py, &codec, &self.spec, document)?))?;
        }
        Ok(out)
    }

    /// The items of array `field` of `parent`, lazily, in pages: keys from `start`
    /// (included) to `end` (excluded), oldest first or `newest_first`, at most `limit`,
    /// continuing after `cursor` (an iterator's `cursor` from an earlier read in the same
    /// order). Raises `NotFound` when the parent does not exist.
    #[pyo3(signature = (parent, field, *, start=None, end=None, newest_first=false, limit=None, cursor=None))]
    fn items(
        slf: &Bound<'_, Self>,
        parent: &Bound<'_, PyAny>,
        field: &str,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        newest_first: bool,
        limit: Option<usize>,
        cursor: Option<&str>,
    ) -> PyResult<Items> {
        let this = slf.get();
        let codec = this.codec();
        let array = codec.array(field)?;
        let after = cursor
            .map(|token| skewdb_cli::item_key::parse_cursor(token, newest_first))
            .transpose()
            .map_err(to_py)?;
        let parent_key = codec.key(parent)?;
        let mut query = ItemQuery::new().range(key_range(array, start, end)?);
        if newest_first {
            query = query.descending();
        }
        let py = slf.py();
        let items = Items {
            collection: slf.clone().unbind(),
            parent: parent_key,
            field: field.to_string(),
            query,
            newest_first,
            buffered: Mutex::new(Buffer {
                next: after,
                last: after,
                left: limit,
                ..Buffer::default()
            }),
        };
        // The first page is read at once, so that a missing parent raises here.
        let present = match limit {
            Some(0) => read!(this, py, |c| c.get_projected(&items.parent, &[]))?.is_some(),
            _ => items.fill(py, &mut items.buffered.lock())?,
        };
        match present {
            true => Ok(items),
            false => Err(this.missing(py, &items.parent)),
        }
    }

    /// The summary of array `field` of `parent` over keys from `start` (included) to
    /// `end` (excluded): a dict of `count`, `sum`, `min`, `max`, `mean` (of the first
    /// measure), `items`, `min_key`, `max_key`, `rolled_up` and `measures` by name. With
    /// `every` (an int, or a duration such as `"1h"` or a timedelta in a time series): a
    /// list of `(window_start, summary)`, one per window holding items.
    #[pyo3(signature = (parent, field, *, start=None, end=None, every=None))]
    fn summary<'py>(
        &self,
        py: Python<'py>,
        parent: &Bound<'_, PyAny>,
        field: &str,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        every: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let codec = self.codec();
        let array = codec.array(field)?;
        let range = key_range(array, start, end)?;
        let parent_key = codec.key(parent)?;
        let missing = || self.missing(py, &parent_key);
        match every {
            None => {
                let summary = read!(self, py, |c| c.summary(&parent_key, field, range))?
                    .ok_or_else(missing)?;
                Ok(summary_dict(py, array, &summary)?.into_any())
            }
            Some(every) => {
                let span = convert::span(array, every)?;
                let windows = read!(self, py, |c| c.summary_windows(
                    &parent_key,
                    field,
                    range,
                    span
                ))?
                .ok_or_else(missing)?;
                let out = PyList::empty(py);
                for (at, summary) in &windows {
                    out.append((
                        convert::item_key_out(py, array, *at)?,
                        summary_dict(py, array, summary)?,
                    ))?;
                }
                Ok(out.into_any())
            }
        }
    }

    /// The parents whose array `field` (an Outlier array) overflowed, as `(key, count)`
    /// pairs in key order.
    fn outliers<'py>(&self, py: Python<'py>, field: &str) -> PyResult<Bound<'py, PyList>> {
        let codec = self.codec();
        let outliers = read!(self, py, |c| c.outliers(field))?;
        let out = PyList::empty(py);
        for outlier in &outliers {
            out.append((codec.key_out(py, &outlier.key)?, outlier.total))?;
        }
        Ok(out)
    }

    /// Drops the sealed buckets of array `field` (a Bucket array) wholly before `before`
    /// in every parent, rolling their items up where the array keeps rollups: a dict of
    /// `buckets`, `items`, `rolled_up`.
    fn expire_buckets<'py>(
        &self,
        py: Python<'py>,
        field: &str,
        before: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let before = convert::item_key(self.codec().array(field)?, before)?;
        let Reader::Latest(collection) = &self.reader else {
            return Err(errors::invalid_input(
                "expire_buckets runs on the database's collection, not in a snapshot or \
                 transaction",
            ));
        };
        let expired = py
            .detach(|| collection.expire_buckets(field, before))
            .map_err(to_py)?;
        let out = PyDict::new(py);
        out.set_item("buckets", expired.buckets)?;
        out.set_item("items", expired.items)?;
        out.set_item("rolled_up", expired.rolled_up)?;
        Ok(out)
    }

    /// Benchmarks only: reads parent `keys` (as `get` takes them) in Rust, one `get` each
    /// with the GIL released and nothing built for Python, and returns the nanoseconds
    /// they took in all: the engine's share of the same reads made through `get`.
    fn _get_many_ns(&self, py: Python<'_>, keys: Vec<Bound<'_, PyAny>>) -> PyResult<u64> {
        let codec = self.codec();
        let keys = keys
            .iter()
            .map(|key| codec.key(key))
            .collect::<PyResult<Vec<_>>>()?;
        let Reader::Latest(collection) = &self.reader else {
            return Err(errors::invalid_input("_get_many_ns reads the latest state"));
        };
        py.detach(|| {
            let start = std::time::Instant::now();
            for key in &keys {
                std::hint::black_box(collection.get(key)?);
            }
            Ok(start.elapsed().as_nanos() as u64)
        })
        .map_err(to_py)
    }

    fn __repr__(&self) -> String {
        format!("<skewdb.Collection {:?}>", self.spec.name())
    }
}

/// A document as `get` gives it.
fn document_dict<'py>(
    py: Python<'py>,
    codec: &Codec<'_>,
    spec: &CollectionSpec,
    document: &skewdb::Document,
) -> PyResult<Bound<'py, PyDict>> {
    let documents = skewdb::DocumentFormat::Bson == spec.document_format();
    let out = match documents {
        true => codec
            .body_out(py, document.key(), document.body())?
            .cast_into::<PyDict>()?,
        false => {
            let out = PyDict::new(py);
            out.set_item("key", codec.key_out(py, document.key())?)?;
            out.set_item("body", codec.body_out(py, document.key(), document.body())?)?;
            out
        }
    };
    let arrays = PyDict::new(py);
    for view in document.arrays() {
        let array = codec.array(&view.field)?;
        let items = PyList::empty(py);
        for item in &view.inline {
            items.append(match documents {
                true => codec.payload_out(py, &item.payload)?,
                false => Item::of(py, codec, array, item, None)?.into_any(),
            })?;
        }
        match documents {
            true => {
                out.set_item(&view.field, items)?;
                out.set_item(format!("{}_count", view.field), view.total)?;
                out.set_item(format!("{}_has_overflow", view.field), view.has_overflow)?;
            }
            false => {
                let entry = PyDict::new(py);
                entry.set_item("count", view.total)?;
                entry.set_item("has_overflow", view.has_overflow)?;
                entry.set_item("items", items)?;
                arrays.set_item(&view.field, entry)?;
            }
        }
    }
    if !documents {
        out.set_item("arrays", arrays)?;
    }
    Ok(out)
}

fn summary_dict<'py>(
    py: Python<'py>,
    array: &skewdb::ArraySpec,
    summary: &Summary,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("items", summary.items)?;
    out.set_item("count", summary.count)?;
    out.set_item("sum", summary.sum)?;
    out.set_item("min", summary.min)?;
    out.set_item("max", summary.max)?;
    out.set_item("mean", summary.mean())?;
    let key = |k: Option<i64>| k.map(|k| convert::item_key_out(py, array, k)).transpose();
    out.set_item("min_key", key(summary.min_key)?)?;
    out.set_item("max_key", key(summary.max_key)?)?;
    out.set_item("rolled_up", summary.rolled_up)?;
    let measures = PyDict::new(py);
    for (index, name) in array.measures.iter().enumerate() {
        let measure = summary.measure(index);
        let entry = PyDict::new(py);
        entry.set_item("count", measure.count)?;
        entry.set_item("sum", measure.sum)?;
        entry.set_item("min", measure.min)?;
        entry.set_item("max", measure.max)?;
        entry.set_item("mean", measure.mean())?;
        measures.set_item(name, entry)?;
    }
    out.set_item("measures", measures)?;
    Ok(out)
}

/// One item of an array: `key` (an int, or a datetime in a time series), `value` (its
/// first measure's, or None), `measures` by name, `payload` (the element; bytes in a
/// collection of bytes), and `cursor`, a token to continue a read after it.
#[pyclass(module = "skewdb", frozen)]
pub struct Item {
    /// The item's key: an int, or a datetime in a time series.
    #[pyo3(get)]
    key: Py<PyAny>,
    /// The first measure's value, or None.
    #[pyo3(get)]
    value: Option<f64>,
    /// The item's measures by name (those it has).
    #[pyo3(get)]
    measures: Py<PyDict>,
    /// The element (bytes in a collection of bytes).
    #[pyo3(get)]
    payload: Py<PyAny>,
    /// Its place, and whether the read that gave it was newest first (its `cursor`, made
    /// when asked for).
    place: Option<(Cursor, bool)>,
}

impl Item {
    fn of<'py>(
        py: Python<'py>,
        codec: &Codec<'_>,
        array: &skewdb::ArraySpec,
        item: &skewdb::Item,
        place: Option<(Cursor, bool)>,
    ) -> PyResult<Bound<'py, Item>> {
        let measures = PyDict::new(py);
        for (index, name) in array.measures.iter().enumerate() {
            if let Some(value) = item.measure(index) {
                measures.set_item(name, value)?;
            }
        }
        Bound::new(
            py,
            Item {
                key: convert::item_key_out(py, array, item.key)?.unbind(),
                value: item.value,
                measures: measures.unbind(),
                payload: codec.payload_out(py, &item.payload)?.unbind(),
                place,
            },
        )
    }
}

#[pymethods]
impl Item {
    /// A token that continues a read in the same order after this item (None for an
    /// inline item of `get`).
    #[getter]
    fn cursor(&self) -> Option<String> {
        self.place
            .map(|(place, descending)| skewdb_cli::item_key::cursor_token(place, descending))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Item(key={}, value={:?}, payload={})",
            self.key.bind(py).repr()?,
            self.value,
            self.payload.bind(py).repr()?
        ))
    }
}

/// Items read and not yet given, and where the next page starts.
#[derive(Default)]
struct Buffer {
    items: VecDeque<(Py<Item>, Cursor)>,
    /// Where the next page starts.
    next: Option<Cursor>,
    /// The place of the last item given (the read's `cursor=` before the first).
    last: Option<Cursor>,
    /// Items the limit still allows.
    left: Option<usize>,
    /// No page follows.
    exhausted: bool,
}

/// The items of one array of one parent, read a page at a time as they are taken.
#[pyclass(module = "skewdb", frozen)]
pub struct Items {
    collection: Py<Collection>,
    parent: Vec<u8>,
    field: String,
    query: ItemQuery,
    newest_first: bool,
    buffered: Mutex<Buffer>,
}

/// Items read per page.
const PAGE: usize = 256;

#[pymethods]
impl Items {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<Item>>> {
        let mut buffer = self.buffered.lock_py_attached(py);
        if buffer.items.is_empty() {
            self.fill(py, &mut buffer)?;
        }
        let Some((item, place)) = buffer.items.pop_front() else {
            return Ok(None);
        };
        buffer.last = Some(place);
        Ok(Some(item))
    }

    /// The token that continues this read after the last item taken (pass it as
    /// `cursor=` to a read in the same order); None when no item is left to take.
    #[getter]
    fn cursor(&self, py: Python<'_>) -> Option<String> {
        let buffer = self.buffered.lock_py_attached(py);
        let nothing_left = buffer.items.is_empty() && buffer.exhausted;
        match nothing_left {
            true => None,
            false => buffer
                .last
                .map(|place| skewdb_cli::item_key::cursor_token(place, self.newest_first)),
        }
    }
}

impl Items {
    /// Reads the next page, if the limit and the array leave one; false when the parent
    /// is not there (deleted since the read began, or never there for the first page).
    fn fill(&self, py: Python<'_>, buffer: &mut Buffer) -> PyResult<bool> {
        if buffer.exhausted {
            return Ok(true);
        }
        let size = buffer.left.map_or(PAGE, |left| left.min(PAGE));
        if size == 0 {
            // The limit ends the read; what is left stays behind the cursor.
            return Ok(true);
        }
        let mut query = self.query.clone().limit(size);
        if let Some(after) = buffer.next {
            query = query.after(after);
        }
        let collection = self.collection.get();
        let (parent, field) = (&self.parent, self.field.as_str());
        let page = read!(collection, py, |c| c.items(parent, field, &query))?;
        let Some(page) = page else {
            buffer.exhausted = true;
            return Ok(false);
        };
        let codec = collection.codec();
        let array = codec.array(field)?;
        for (item, place) in page.items.iter().zip(&page.ids) {
            let item = Item::of(py, &codec, array, item, Some((*place, self.newest_first)))?;
            buffer.items.push_back((item.unbind(), *place));
        }
        if let Some(left) = &mut buffer.left {
            *left -= page.items.len().min(*left);
        }
        buffer.next = page.next;
        buffer.exhausted = page.next.is_none();
        Ok(true)
    }
}
