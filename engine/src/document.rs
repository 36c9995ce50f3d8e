//! What readers get: a parent's document with its array views, the query that pages
//! through an array's items, and the pages and outlier lists it returns. Plain values built
//! from decoded records; below the store and the cache, which hold and hand them out.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use bytes::Bytes;

use crate::catalog::{CollectionInfo, Layout};
pub use crate::item::Cursor;
use crate::item::{Item, Order, Stored, Summary};
use crate::record::{ArrayState, ParentRecord};

/// One array field of a document as `get` returns it.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayView {
    /// The array field's name.
    pub field: String,
    /// How it keeps its items.
    pub layout: Layout,
    /// Items in the array, wherever they live.
    pub total: u64,
    /// Items exist outside the parent record (read them with `Collection::items`).
    pub has_overflow: bool,
    /// Summary of all items of the array.
    pub summary: Summary,
    /// The items the layout keeps inline, in key order (ties in push order).
    pub inline: Vec<Item>,
}

/// A parent document: its body and, per array field, its meta and inline items. A clone
/// shares them: the record tier keeps the documents of the records `get` reads, and a hit
/// hands out a clone.
///
/// ```
/// use skewdb::{CollectionSpec, Db, Layout, NewItem, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new())?;
/// let users = db.create_collection(CollectionSpec::new("users").array("tags", Layout::Embed))?;
/// let mut batch = db.batch();
/// batch.put("users", "ada", "{\"name\":\"Ada\"}");
/// batch.push("users", "ada", "tags", NewItem::new("admin"));
/// batch.commit()?;
/// let ada = users.get("ada")?.expect("committed");
/// assert_eq!((ada.key(), ada.body()), (&b"ada"[..], &b"{\"name\":\"Ada\"}"[..]));
/// let tags = ada.array("tags").expect("declared");
/// assert_eq!((tags.total, tags.has_overflow), (1, false));
/// assert_eq!(tags.inline[0].payload.as_ref(), b"admin");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct Document(pub(crate) Arc<DocumentParts>);

pub(crate) struct DocumentParts {
    key: Bytes,
    body: Bytes,
    arrays: ArrayViews,
    /// The collection the document was read from, whose schema names the arrays in the
    /// order of `arrays`: [`Document::array`] finds a field there, in memory every
    /// document shares, rather than in the document's own copies of the names (one memory
    /// access fewer per read of a cached document).
    info: Arc<CollectionInfo>,
}

impl PartialEq for DocumentParts {
    fn eq(&self, other: &Self) -> bool {
        (&self.key, &self.body, self.arrays.as_slice())
            == (&other.key, &other.body, other.arrays.as_slice())
    }
}

/// A document's array views. A collection of one array field (most are) keeps its view in
/// the document's own allocation: a read of a cached document reaches the items one memory
/// access sooner, and a decode allocates once less.
enum ArrayViews {
    One(ArrayView),
    Many(Vec<ArrayView>),
}

impl ArrayViews {
    fn as_slice(&self) -> &[ArrayView] {
        match self {
            ArrayViews::One(view) => std::slice::from_ref(view),
            ArrayViews::Many(views) => views,
        }
    }

    /// The bytes the views take outside the document's allocation.
    fn outside_bytes(&self) -> usize {
        match self {
            ArrayViews::One(_) => 0,
            ArrayViews::Many(views) => {
                views.capacity() * std::mem::size_of::<ArrayView>() + ALLOCATION_HEADER
            }
        }
    }
}

/// What the allocator takes beside each allocation, as the cache weighs it.
const ALLOCATION_HEADER: usize = 16;

impl Document {
    /// The document of `key` from its record, decoded by `store::decode::decode_read_record`.
    pub(crate) fn new(info: &Arc<CollectionInfo>, key: Bytes, record: ParentRecord<Item>) -> Self {
        let Ok(document) = Self::build(info, key, |push| {
            record.arrays.into_iter().for_each(push);
            Ok::<_, std::convert::Infallible>(record.body)
        });
        document
    }

    /// The document of `key` from a record as `decode` reads it: `decode` returns the body
    /// and hands each array's state (inline items already in (key, push) order) to the
    /// function it is given, in schema order, which makes it a view at once (a large Embed
    /// array is moved, not copied item by item, and no list of states is built).
    pub(crate) fn build<E>(
        info: &Arc<CollectionInfo>,
        key: Bytes,
        decode: impl FnOnce(&mut dyn FnMut(ArrayState<Item>)) -> Result<Bytes, E>,
    ) -> Result<Self, E> {
        let specs = info.spec.arrays();
        let (mut one, mut many) = (None, Vec::new());
        if specs.len() != 1 {
            many.reserve_exact(specs.len());
        }
        let mut field = 0;
        let body = decode(&mut |array| {
            let spec = &specs[field];
            field += 1;
            let view = ArrayView {
                field: spec.field.clone(),
                layout: spec.layout,
                total: array.total,
                has_overflow: array.has_overflow,
                summary: array.summary,
                inline: array.inline,
            };
            match specs.len() {
                1 => one = Some(view),
                _ => many.push(view),
            }
        })?;
        let arrays = match one {
            Some(view) => ArrayViews::One(view),
            None => ArrayViews::Many(many),
        };
        Ok(Document(Arc::new(DocumentParts {
            key,
            body,
            arrays,
            info: info.clone(),
        })))
    }

    /// The parent's key.
    pub fn key(&self) -> &[u8] {
        &self.0.key
    }

    /// The parent's body, as written.
    pub fn body(&self) -> &[u8] {
        &self.0.body
    }

    /// Every array field, in schema order.
    pub fn arrays(&self) -> &[ArrayView] {
        self.0.arrays.as_slice()
    }

    /// The array field named `field`.
    pub fn array(&self, field: &str) -> Option<&ArrayView> {
        let index = self.0.info.spec.field_index(field)?;
        self.0.arrays.as_slice().get(index)
    }

    /// The memory the document takes beyond the bytes its key, body and payloads are
    /// slices of: its parts, arrays, field names and items, with the allocator's headers.
    pub(crate) fn memory_bytes(&self) -> u64 {
        let arrays: usize = self
            .arrays()
            .iter()
            .map(|array| {
                array.field.capacity()
                    + ALLOCATION_HEADER
                    + array.inline.capacity() * std::mem::size_of::<Item>()
                    + ALLOCATION_HEADER
            })
            .sum();
        (std::mem::size_of::<DocumentParts>()
            + 2 * std::mem::size_of::<usize>()
            + ALLOCATION_HEADER
            + self.0.arrays.outside_bytes()
            + arrays) as u64
    }
}

impl std::fmt::Debug for Document {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Document")
            .field("key", &self.0.key)
            .field("body", &self.0.body)
            .field("arrays", &self.arrays())
            .finish()
    }
}

/// What `items` reads: a key range, an order, a cursor and a limit.
///
/// ```
/// use skewdb::{CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new())?;
/// let log = db.create_collection(CollectionSpec::new("log").array("events", Layout::Reference))?;
/// let mut batch = db.batch();
/// for key in 0..10 {
///     batch.push("log", "job", "events", NewItem::new("tick").key(key));
/// }
/// batch.commit()?;
/// // Newest first, three at a time, from key 8 down: 8 7 6, then 5 4 3.
/// let query = ItemQuery::new().range(..=8).descending().limit(3);
/// let first = log.items("job", "events", &query)?.expect("committed");
/// assert_eq!(first.items.iter().map(|i| i.key).collect::<Vec<_>>(), [8, 7, 6]);
/// let next = first.next.expect("more remain");
/// let second = log.items("job", "events", &query.clone().after(next))?.expect("committed");
/// assert_eq!(second.items.iter().map(|i| i.key).collect::<Vec<_>>(), [5, 4, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemQuery {
    pub(crate) start: Bound<i64>,
    pub(crate) end: Bound<i64>,
    pub(crate) order: Order,
    pub(crate) after: Option<Cursor>,
    pub(crate) limit: Option<usize>,
}

impl Default for ItemQuery {
    fn default() -> Self {
        ItemQuery {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
            order: Order::Ascending,
            after: None,
            limit: None,
        }
    }
}

impl ItemQuery {
    /// Every item, ascending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only items whose keys fall in `range`.
    pub fn range(mut self, range: impl RangeBounds<i64>) -> Self {
        self.start = range.start_bound().cloned();
        self.end = range.end_bound().cloned();
        self
    }

    /// Items in `order`.
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// Newest (greatest key) first.
    pub fn descending(self) -> Self {
        self.order(Order::Descending)
    }

    /// Continue after the item `cursor` names (from a previous page's `next`).
    pub fn after(mut self, cursor: Cursor) -> Self {
        self.after = Some(cursor);
        self
    }

    /// Continue after every item with key `key` (in the query's order).
    pub fn after_key(self, key: i64) -> Self {
        let seq = match self.order {
            Order::Ascending => u64::MAX,
            Order::Descending => 0,
        };
        self.after(Cursor { key, seq })
    }

    /// At most `limit` items; the page's `next` continues after them.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    pub(crate) fn in_range(&self, key: i64) -> bool {
        (self.start, self.end).contains(&key)
    }

    pub(crate) fn wanted(&self, stored: &Stored) -> bool {
        self.wanted_at(stored.item.key, stored.seq)
    }

    /// Whether the item pushed `seq`-th with key `key` is on the query's pages.
    pub(crate) fn wanted_at(&self, key: i64, seq: u64) -> bool {
        self.in_range(key)
            && match (self.after, self.order) {
                (None, _) => true,
                (Some(c), Order::Ascending) => (key, seq) > (c.key, c.seq),
                (Some(c), Order::Descending) => (key, seq) < (c.key, c.seq),
            }
    }

    pub(crate) fn overlaps(&self, summary: &Summary) -> bool {
        let (Some(min), Some(max)) = (summary.min_key, summary.max_key) else {
            return false;
        };
        let below_end = match self.end {
            Bound::Included(end) => min <= end,
            Bound::Excluded(end) => min < end,
            Bound::Unbounded => true,
        };
        let above_start = match self.start {
            Bound::Included(start) => max >= start,
            Bound::Excluded(start) => max > start,
            Bound::Unbounded => true,
        };
        below_end && above_start
    }

    /// Whether every key the range holds is below `key`.
    pub(crate) fn end_below(&self, key: i64) -> bool {
        match self.end {
            Bound::Included(end) => end < key,
            Bound::Excluded(end) => end <= key,
            Bound::Unbounded => false,
        }
    }

    pub(crate) fn covers(&self, summary: &Summary) -> bool {
        match (summary.min_key, summary.max_key) {
            (Some(min), Some(max)) => self.in_range(min) && self.in_range(max),
            _ => true,
        }
    }
}

/// A page of items and the cursor to continue from, when the limit cut it.
#[derive(Clone, Debug, PartialEq)]
pub struct ItemPage {
    /// The items, in the query's order.
    pub items: Vec<Item>,
    /// `ids[i]` identifies `items[i]`: its key and push sequence, for
    /// [`crate::Batch::remove_item`] (and as a cursor, to page on after it).
    pub ids: Vec<Cursor>,
    /// Where the next page starts (`ItemQuery::after`), when the limit cut this one.
    pub next: Option<Cursor>,
}

/// What [`crate::CollectionHandle::for_each_item`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Visited {
    /// How many items were lent to the visitor.
    pub items: usize,
    /// Where the next page starts ([`ItemQuery::after`]), when more remain: the query's
    /// limit cut the page, or the visitor stopped before its last item (the cursor is then
    /// the last item it was lent).
    pub next: Option<Cursor>,
}

/// What a visitor of [`crate::CollectionHandle::for_each_item`] returns: `()` to go on, or
/// a [`std::ops::ControlFlow`], whose `Break` stops the read.
pub trait VisitFlow {
    /// Whether the read goes on to the next item.
    fn go_on(self) -> bool;
}

impl VisitFlow for () {
    fn go_on(self) -> bool {
        true
    }
}

impl VisitFlow for std::ops::ControlFlow<()> {
    fn go_on(self) -> bool {
        self.is_continue()
    }
}

/// A parent whose array overflowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outlier {
    /// The parent's key.
    pub key: Bytes,
    /// Items in the array.
    pub total: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_tokens_round_trip_at_the_ends_of_the_range() {
        for (key, seq) in [(0, 0), (-1, 7), (i64::MIN, 0), (i64::MAX, u64::MAX), (5, 3)] {
            let cursor = Cursor { key, seq };
            let token = cursor.to_string();
            assert_eq!(token.len(), 40);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
            assert_eq!(token.parse::<Cursor>().unwrap(), cursor);
        }
    }

    #[cfg(feature = "serde")]
    #[test]
    fn cursors_travel_through_serde_as_their_tokens() {
        let cursor = Cursor { key: -3, seq: 9 };
        let json = serde_json::to_string(&cursor).unwrap();
        assert_eq!(json, format!("\"{cursor}\""));
        assert_eq!(serde_json::from_str::<Cursor>(&json).unwrap(), cursor);
        let damaged = json.replace('a', "b").replace('0', "1");
        assert!(serde_json::from_str::<Cursor>(&damaged).is_err());
        assert!(serde_json::from_str::<Cursor>("17").is_err());
    }

    #[test]
    fn damaged_cursor_tokens_are_refused() {
        let token = Cursor { key: 5, seq: 2 }.to_string();
        for at in 0..token.len() {
            let mut damaged = token.clone().into_bytes();
            damaged[at] = if damaged[at] == b'0' { b'1' } else { b'0' };
            let damaged = String::from_utf8(damaged).unwrap();
            let error = damaged.parse::<Cursor>().unwrap_err();
            assert_eq!(error.kind(), "invalid_cursor", "digit {at}");
        }
        for bad in [
            "",
            "5",
            &token[1..],
            &format!("{token}0"),
            &token.replace('0', "g"),
        ] {
            assert!(bad.parse::<Cursor>().is_err(), "{bad:?}");
        }
    }
}
