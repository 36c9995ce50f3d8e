//! Reading a collection: `Collection` reads the latest committed state at each call,
//! `SnapshotCollection` the state of its snapshot; both go through `At`, the reads of one
//! collection at one version.

#[cfg(doc)]
use std::ops::ControlFlow;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use bytes::Bytes;

use super::array::Array;
use super::view::{AtSnapshot, Latest, View};
use crate::catalog::{CollectionId, CollectionInfo, CollectionSpec};
use crate::document::{Document, ItemPage, ItemQuery, Outlier, VisitFlow, Visited};
use crate::error::{Error, Result};
use crate::item::Summary;
use crate::item_ref::ItemRef;
use crate::page::keys;
use crate::pattern::{self, Operation};
use crate::store::read::scan::ParentScan;
use crate::store::{BatchOp, Engine, Expired, Version, check_key};

/// Parents per batch when a collection-wide expiry walks the parents with buckets.
const EXPIRY_BATCH_PARENTS: usize = 1_000;

/// The reads of one collection at one version.
pub(crate) struct At<'a> {
    pub shared: &'a Engine,
    /// The collection as `version` knows it: a handle made before a schema change reads
    /// under the new schema.
    pub info: Arc<CollectionInfo>,
    pub version: Arc<Version>,
}

pub(crate) fn field_index(info: &CollectionInfo, field: &str) -> Result<usize> {
    info.spec
        .field_index(field)
        .ok_or_else(|| Error::UnknownField {
            collection: info.spec.name().to_string(),
            field: field.to_string(),
        })
}

impl At<'_> {
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Document>> {
        check_key(key)?;
        self.shared.reads().document(&self.version, &self.info, key)
    }

    pub(crate) fn get_projected(&self, key: &[u8], fields: &[&str]) -> Result<Option<Document>> {
        let mut wanted = vec![false; self.info.spec.arrays().len()];
        for field in fields {
            wanted[field_index(&self.info, field)?] = true;
        }
        check_key(key)?;
        let record = self
            .shared
            .reads()
            .read_record(&self.version, &self.info, key, |index| wanted[index])?;
        Ok(record.map(|(key, record)| Document::new(&self.info, key, record)))
    }

    pub(crate) fn items(
        &self,
        key: &[u8],
        field: &str,
        query: &ItemQuery,
    ) -> Result<Option<ItemPage>> {
        check_key(key)?;
        let field = field_index(&self.info, field)?;
        self.shared
            .reads()
            .items(&self.version, &self.info, key, field, query)
    }

    /// [`CollectionHandle::for_each_item`] at this version.
    pub(crate) fn for_each_item<F: VisitFlow>(
        &self,
        key: &[u8],
        field: &str,
        query: &ItemQuery,
        mut visit: impl FnMut(ItemRef<'_>) -> F,
    ) -> Result<Option<Visited>> {
        check_key(key)?;
        let field = field_index(&self.info, field)?;
        let reads = self.shared.reads();
        reads.read_items(&self.version, &self.info, key, field, query, |picked| {
            let mut visited = Visited {
                items: 0,
                next: picked.next,
            };
            let mut items = picked.iter().peekable();
            while let Some(item) = items.next() {
                visited.items += 1;
                if !visit(item).go_on() {
                    if items.peek().is_some() {
                        visited.next = Some(item.id());
                    }
                    break;
                }
            }
            visited
        })
    }

    pub(crate) fn summary(
        &self,
        key: &[u8],
        field: &str,
        range: (Bound<i64>, Bound<i64>),
    ) -> Result<Option<Summary>> {
        check_key(key)?;
        let field = field_index(&self.info, field)?;
        self.shared
            .reads()
            .summary(&self.version, &self.info, key, field, range)
    }

    /// [`CollectionHandle::summary_windows`] at this version.
    pub(crate) fn summary_windows(
        &self,
        key: &[u8],
        field: &str,
        range: (Bound<i64>, Bound<i64>),
        span: i64,
    ) -> Result<Option<Vec<(i64, Summary)>>> {
        if span <= 0 {
            return Err(Error::InvalidOption {
                option: "span",
                reason: format!("a window's span must be positive, not {span}"),
            });
        }
        check_key(key)?;
        let field = field_index(&self.info, field)?;
        self.shared
            .reads()
            .summary_windows(&self.version, &self.info, key, field, range, span)
    }

    pub(crate) fn outliers(&self, field: &str) -> Result<Vec<Outlier>> {
        let field = field_index(&self.info, field)?;
        self.shared
            .reads()
            .outliers(&self.version, &self.info, field)
    }

    pub(crate) fn scan(self, range: impl KeyRange) -> Result<Scan> {
        let bounds = tree_bounds(self.info.id, &range);
        let walk = self.shared.reads().scan(self.version, self.info, bounds);
        Ok(Scan {
            shared: self.shared.clone(),
            walk,
            done: false,
        })
    }
}

/// A range of parent keys as `scan` takes it: `..`, `a..b`, `a..=b`, `a..`, `..b`, `..=b`
/// or a pair of `Bound`s, over any key type that is bytes (`&str`, `String`, `&[u8]`,
/// `Vec<u8>`, `[u8; N]`, `Bytes`), with no type to name for `..`.
pub trait KeyRange {
    /// The range's ends.
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>);
}

impl KeyRange for std::ops::RangeFull {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Unbounded, Bound::Unbounded)
    }
}

macro_rules! key_range {
    ($($range:ty),*) => {$(
        impl<K: AsRef<[u8]>> KeyRange for $range {
            fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
                let start = self.start_bound().map(|k| k.as_ref());
                let end = self.end_bound().map(|k| k.as_ref());
                (start, end)
            }
        }
    )*};
}

key_range!(
    std::ops::Range<K>,
    std::ops::RangeInclusive<K>,
    std::ops::RangeFrom<K>,
    std::ops::RangeTo<K>,
    std::ops::RangeToInclusive<K>,
    (Bound<K>, Bound<K>)
);

/// The tree keys where a scan of `range` of a collection's parents starts and ends.
pub(crate) fn tree_bounds(id: CollectionId, range: &impl KeyRange) -> (Bound<Bytes>, Bound<Bytes>) {
    let (start, end) = range.key_bounds();
    let start = match start {
        Bound::Included(k) => Bound::Included(keys::parent(id, k)),
        Bound::Excluded(k) => Bound::Excluded(keys::parent(id, k)),
        Bound::Unbounded => Bound::Included(keys::parent(id, &[])),
    };
    let end = match end {
        Bound::Included(k) => Bound::Included(keys::parent(id, k)),
        Bound::Excluded(k) => Bound::Excluded(keys::parent(id, k)),
        Bound::Unbounded => Bound::Excluded(keys::parents_end(id)),
    };
    (start, end)
}

/// A handle on one collection, reading through its view `V`: [`Collection`] (the latest
/// committed state at each read), [`SnapshotCollection`] (a snapshot's version) or
/// [`crate::TransactionCollection`] (a transaction's view, each read remembered for its
/// commit to check). Every read is written once, here, for all three.
pub struct CollectionHandle<V> {
    pub(crate) view: V,
    pub(crate) info: Arc<CollectionInfo>,
}

/// A handle on one collection; each read sees the latest committed state.
///
/// ```
/// use skewdb::{CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new())?;
/// let spec = CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 2 });
/// let products = db.create_collection(spec)?;
/// let mut batch = db.batch();
/// batch.put("products", "p1", "kettle");
/// for stars in [5.0, 3.0, 4.0] {
///     batch.push("products", "p1", "reviews", NewItem::new("text").value(stars));
/// }
/// batch.commit()?;
/// let page = products.get("p1")?.expect("committed"); // the two newest inline
/// assert_eq!(page.array("reviews").map(|a| a.inline.len()), Some(2));
/// let all = products.items("p1", "reviews", &ItemQuery::new())?.expect("committed");
/// assert_eq!(all.items.len(), 3); // the history too, merged in key order
/// let mean = products.summary("p1", "reviews", ..)?.and_then(|s| s.mean());
/// assert_eq!(mean, Some(4.0));
/// assert_eq!(products.scan(..)?.count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Collection = CollectionHandle<Latest>;

/// One collection as a [`crate::Snapshot`] sees it: every read at the snapshot's version,
/// whatever has been committed since. Reads only.
pub type SnapshotCollection = CollectionHandle<AtSnapshot>;

impl<V: Clone> Clone for CollectionHandle<V> {
    fn clone(&self) -> Self {
        CollectionHandle {
            view: self.view.clone(),
            info: self.info.clone(),
        }
    }
}

impl<V> std::fmt::Debug for CollectionHandle<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection")
            .field("spec", &self.info.spec)
            .finish_non_exhaustive()
    }
}

impl<V: View> CollectionHandle<V> {
    /// The collection's name.
    pub fn name(&self) -> &str {
        self.info.spec.name()
    }

    /// The identity of the collection the handle was made for.
    pub(crate) fn id(&self) -> CollectionId {
        self.info.id
    }

    /// The collection's schema.
    pub fn spec(&self) -> &CollectionSpec {
        &self.info.spec
    }

    /// The handle of array field `field`, for the batch methods that take one, under the
    /// schema the view reads now (an array added after this handle was made is found);
    /// `Error::UnknownField` for a name the schema lacks, `Error::UnknownCollection` when
    /// the collection is gone from the view.
    pub fn array(&self, field: &str) -> Result<Array> {
        let info = match field_index(&self.info, field) {
            Ok(_) => self.info.clone(),
            Err(_) => self.at()?.info,
        };
        let index = field_index(&info, field)?;
        Ok(Array {
            collection: Arc::from(self.name()),
            field: Arc::from(field),
            info,
            index,
        })
    }

    /// Reads at the view's version.
    fn at(&self) -> Result<At<'_>> {
        let version = self.view.version(&self.info)?;
        let info = match version.catalog.by_name.get(self.name()) {
            Some(known) if known.id == self.info.id => known.clone(),
            _ => {
                return Err(Error::UnknownCollection {
                    name: self.name().to_string(),
                });
            }
        };
        Ok(At {
            shared: self.view.engine(),
            info,
            version,
        })
    }

    /// The parent `key` with its inline arrays, or `None`. Never reads cold storage.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Document>> {
        self.view.note_parent(&self.info, key.as_ref())?;
        self.at()?.get(key.as_ref())
    }

    /// [`CollectionHandle::get`] with the inline items of the array fields named in
    /// `fields` only, as a projection would: every other array comes with its total,
    /// overflow flag and summary, and no inline items (`inline` empty), which spares
    /// decoding them (a profile with its follower count, not its first thousand
    /// followers). `Error::UnknownField` for a name the schema lacks.
    pub fn get_projected(
        &self,
        key: impl AsRef<[u8]>,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        self.view.note_parent(&self.info, key.as_ref())?;
        self.at()?.get_projected(key.as_ref(), fields)
    }

    /// Reads array `field`'s items of parent `key` on `query`'s page, merged from wherever
    /// they live (inline, tail, cold chunks), in the query's order, and lends each to
    /// `visit` in place: its key, values and payload are read from the bytes the engine
    /// holds, and nothing is allocated per item. The fast read; [`CollectionHandle::items`]
    /// is the convenience that builds an owned page on top of it.
    ///
    /// `visit` returns `()` to go on, or a [`ControlFlow`] whose `Break` stops the read.
    /// Returns how many items were visited and, when more remain (the query's limit cut
    /// the page, or `visit` stopped before its end), the cursor to continue from; `None`
    /// when the parent does not exist.
    ///
    /// ```
    /// use skewdb::{CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::new())?;
    /// let bucket = Layout::Bucket { max_items: 60, span: Some(3600) };
    /// let sensors = db.create_collection(CollectionSpec::new("sensors").array("readings", bucket))?;
    /// let mut batch = db.batch();
    /// for minute in 0..180 {
    ///     let reading = NewItem::new([]).key(minute * 60).value(20.0 + minute as f64 / 10.0);
    ///     batch.push("sensors", "s1", "readings", reading);
    /// }
    /// batch.commit()?;
    /// // The last hour's readings, summed in place.
    /// let (mut count, mut sum) = (0, 0.0);
    /// let last_hour = ItemQuery::new().range(7200..10800);
    /// sensors.for_each_item("s1", "readings", &last_hour, |reading| {
    ///     count += 1;
    ///     sum += reading.value().unwrap_or(0.0);
    /// })?;
    /// assert_eq!(count, 60);
    /// // The newest reading above 37.5, stopping at the first found.
    /// let mut found = None;
    /// let newest = ItemQuery::new().descending();
    /// sensors.for_each_item("s1", "readings", &newest, |reading| {
    ///     if reading.value() > Some(37.5) {
    ///         found = Some(reading.key());
    ///         return std::ops::ControlFlow::Break(());
    ///     }
    ///     std::ops::ControlFlow::Continue(())
    /// })?;
    /// assert_eq!(found, Some(179 * 60));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_each_item<F: VisitFlow>(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        query: &ItemQuery,
        visit: impl FnMut(ItemRef<'_>) -> F,
    ) -> Result<Option<Visited>> {
        self.view.note_parent(&self.info, key.as_ref())?;
        self.at()?.for_each_item(key.as_ref(), field, query, visit)
    }

    /// Items of array `field` of parent `key`, merged from wherever they live, in key
    /// order (ties in push order); `None` when the parent does not exist. Each item is
    /// built and owned (its payload shares the engine's buffer);
    /// [`CollectionHandle::for_each_item`] reads them in place.
    pub fn items(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        query: &ItemQuery,
    ) -> Result<Option<ItemPage>> {
        self.view.note_parent(&self.info, key.as_ref())?;
        self.at()?.items(key.as_ref(), field, query)
    }

    /// Count, sum, min, max and key bounds of the items of `field` whose keys fall in
    /// `range`; `None` when the parent does not exist.
    pub fn summary(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        range: impl RangeBounds<i64>,
    ) -> Result<Option<Summary>> {
        self.view.note_parent(&self.info, key.as_ref())?;
        let range = (range.start_bound().cloned(), range.end_bound().cloned());
        self.at()?.summary(key.as_ref(), field, range)
    }

    /// [`summary`](Self::summary) per window of `span`: the range split at the multiples of
    /// `span` (as a Bucket array with a span aligns its buckets), one `(window start,
    /// summary)` for each window that holds items, all at one version; `None` when the
    /// parent does not exist. One walk of the array's chunk index answers every window:
    /// sealed buckets a window covers whole answer from their stored summaries, only those
    /// that straddle a window's ends are decoded. Rollups (`CollectionSpec::rollup`) add to
    /// the window that holds them whole; one across two windows (a `span` not a multiple
    /// of the rollups') is `Error::RangeCutsRollup`. A `span` that is not positive is
    /// `Error::InvalidOption`.
    ///
    /// ```
    /// use skewdb::{CollectionSpec, Db, Layout, NewItem, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::new())?;
    /// let hourly = Layout::Bucket { max_items: 60, span: Some(3600) };
    /// let sensors = db.create_collection(CollectionSpec::new("s").array("t", hourly))?;
    /// let mut batch = db.batch();
    /// for minute in 0..180 {
    ///     batch.push("s", "s1", "t", NewItem::new("").key(minute * 60).value(minute as f64));
    /// }
    /// batch.commit()?;
    /// let hours = sensors.summary_windows("s1", "t", .., 3600)?.unwrap();
    /// assert_eq!(hours.len(), 3);
    /// assert_eq!((hours[1].0, hours[1].1.count, hours[1].1.min), (3600, 60, Some(60.0)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn summary_windows(
        &self,
        key: impl AsRef<[u8]>,
        field: &str,
        range: impl RangeBounds<i64>,
        span: i64,
    ) -> Result<Option<Vec<(i64, Summary)>>> {
        self.view.note_parent(&self.info, key.as_ref())?;
        let range = (range.start_bound().cloned(), range.end_bound().cloned());
        self.at()?.summary_windows(key.as_ref(), field, range, span)
    }

    /// The parents whose array `field` has items outside the parent record, in key order.
    /// In a transaction, a parent that overflows or stops overflowing in the meantime is a
    /// conflict.
    pub fn outliers(&self, field: &str) -> Result<Vec<Outlier>> {
        let index = field_index(&self.info, field)?;
        self.view.note_range(|| {
            let start = Bytes::from(keys::outliers(self.info.id, self.info.slot(index)));
            let end = keys::outliers_end(self.info.id, self.info.slot(index));
            (Bound::Included(start), Bound::Excluded(end))
        })?;
        self.at()?.outliers(field)
    }

    /// The parents whose keys fall in `range`, in key order (`.rev()` for descending), as
    /// of this call: later commits are not seen. In a transaction, a parent put, changed
    /// or deleted in the range in the meantime is a conflict.
    pub fn scan(&self, range: impl KeyRange) -> Result<Scan> {
        self.view.note_range(|| tree_bounds(self.info.id, &range))?;
        self.at()?.scan(range)
    }
}

impl Collection {
    /// Drops, from every parent of this collection, the sealed buckets of `Bucket` array
    /// `field` whose newest item key is below `before` (see [`crate::Batch::expire_buckets`]).
    /// Only parents with buckets outside their record are visited (found through the
    /// outlier markers), in batches of 1,000 parents, each atomic; the sweep as a whole is
    /// not one transaction. Returns the buckets and items dropped. Where the array keeps
    /// rollups ([`crate::CollectionSpec::rollup`]), what it drops is rolled up first, late
    /// items below `before` included.
    pub fn expire_buckets(&self, field: &str, before: i64) -> Result<Expired> {
        let index = field_index(&self.info, field)?;
        let layout = self.info.spec.arrays()[index].layout;
        pattern::check_supports(layout, Operation::ExpireBuckets, self.name(), field)?;
        let mut expired = Expired::default();
        let engine = &self.view.engine;
        let (collection, field): (Arc<str>, Arc<str>) = (Arc::from(self.name()), Arc::from(field));
        for parents in self.outliers(&field)?.chunks(EXPIRY_BATCH_PARENTS) {
            let expect = BatchOp::Expect {
                collection: collection.clone(),
                id: self.info.id,
            };
            let expiries = parents.iter().map(|parent| BatchOp::ExpireBuckets {
                collection: collection.clone(),
                key: parent.key.clone(),
                field: field.clone(),
                before,
            });
            let ops: Vec<BatchOp> = std::iter::once(expect).chain(expiries).collect();
            let dropped = engine.commit_checked(ops.into(), engine.options().durability, None)?;
            expired.buckets += dropped.buckets;
            expired.items += dropped.items;
            expired.rolled_up += dropped.rolled_up;
        }
        Ok(expired)
    }
}

/// Parents in key order, or in reverse from the back ([`DoubleEndedIterator`]); see
/// [`Collection::scan`]. Sees one committed state throughout.
pub struct Scan {
    pub(crate) shared: Engine,
    walk: ParentScan,
    done: bool,
}

impl Scan {
    fn yielded(&mut self, step: Result<Option<Document>>) -> Option<Result<Document>> {
        match step {
            Ok(Some(document)) => Some(Ok(document)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

impl Iterator for Scan {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.walk.next(&self.shared.reads());
        self.yielded(step)
    }
}

impl DoubleEndedIterator for Scan {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.walk.next_back(&self.shared.reads());
        self.yielded(step)
    }
}
