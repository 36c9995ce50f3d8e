//! Typed documents (feature `serde`): a collection handle typed by its key, body and codec,
//! and array handles typed by their items, so that applications write and read their own
//! structs instead of bytes. Bodies and item payloads are the codec's encoding of them
//! (JSON through serde_json, BSON through the `bson` crate, or the application's own
//! [`Codec`]); an item's key and value come from the item itself ([`ItemFields`]).
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use skewdb::typed::{ItemFields, Json};
//! use skewdb::{CollectionSpec, Db, ItemQuery, Layout, Options};
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Product { name: String }
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Review { posted: i64, stars: u8, text: String }
//!
//! impl ItemFields for Review {
//!     fn item_key(&self) -> Option<i64> { Some(self.posted) }
//!     fn item_value(&self) -> Option<f64> { Some(self.stars as f64) }
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), Options::new())?;
//! let spec = CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 5 });
//! let products = db.create_collection(spec)?.typed::<String, Product, Json>();
//! let reviews = products.array::<Review>("reviews")?;
//!
//! let mut batch = db.batch();
//! products.put(&mut batch, "p1", &Product { name: "Kettle".into() })?;
//! reviews.push(&mut batch, "p1", &Review { posted: 1, stars: 5, text: "works".into() })?;
//! batch.commit()?;
//!
//! let page = products.get("p1")?.expect("committed");
//! assert_eq!(page.body.name, "Kettle");
//! assert_eq!(page.document.array("reviews").map(|a| a.total), Some(1));
//! let newest = reviews.items("p1", &ItemQuery::new().descending())?.expect("committed");
//! assert_eq!(newest.items[0].text, "works");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every read handle types the same way: a transaction reads typed (its reads checked at
//! commit) and takes typed writes, and a snapshot reads typed at its version.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use skewdb::typed::Json;
//! use skewdb::{CollectionSpec, Db, Options};
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Account { balance: i64 }
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), Options::new())?;
//! db.create_collection(CollectionSpec::new("accounts"))?;
//! let before = db.snapshot();
//!
//! let accounts = db.collection("accounts")?.typed::<String, Account, Json>();
//! let mut txn = db.transaction();
//! // Read through the transaction (remembered for its commit to check) ...
//! let seen = txn.collection("accounts")?.typed::<String, Account, Json>().get("alice")?;
//! let balance = seen.map_or(0, |a| a.body.balance);
//! // ... and write into it through any typed handle of the collection.
//! accounts.put(&mut txn, "alice", &Account { balance: balance + 10 })?;
//! txn.commit()?; // refused with Error::Conflict had "alice" changed since the read
//!
//! let now = db.snapshot().collection("accounts")?.typed::<String, Account, Json>();
//! assert_eq!(now.get("alice")?.map(|a| a.body), Some(Account { balance: 10 }));
//! let then = before.collection("accounts")?.typed::<String, Account, Json>();
//! assert!(then.get("alice")?.is_none()); // the snapshot from before the transaction
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Borrow;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::array::Array;
use super::batch::Writes;
use super::batch::sealed::Token;
use super::collection::{CollectionHandle, Scan};
use super::view::{Latest, View};
use crate::document::{Cursor, Document, ItemPage, ItemQuery, VisitFlow, Visited};
use crate::error::{Error, Result};
use crate::item::{NewItem, Summary};
use crate::item_ref::ItemRef;
use crate::store::Expired;

/// How bodies and payloads become bytes and back. Implement it for a format of your own.
pub trait Codec: Send + Sync + 'static {
    /// The codec's name, in errors.
    const NAME: &'static str;
    /// `value` as bytes.
    fn encode<T: Serialize>(value: &T) -> std::result::Result<Vec<u8>, String>;
    /// A value from bytes `encode` made.
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> std::result::Result<T, String>;
}

/// JSON through serde_json.
pub struct Json;

impl Codec for Json {
    const NAME: &'static str = "json";

    fn encode<T: Serialize>(value: &T) -> std::result::Result<Vec<u8>, String> {
        serde_json::to_vec(value).map_err(|e| e.to_string())
    }

    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> std::result::Result<T, String> {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    }
}

/// BSON through the `bson` crate (MongoDB's): a value must serialize as a document.
pub struct Bson;

impl Codec for Bson {
    const NAME: &'static str = "bson";

    fn encode<T: Serialize>(value: &T) -> std::result::Result<Vec<u8>, String> {
        bson::serialize_to_vec(value).map_err(|e| e.to_string())
    }

    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> std::result::Result<T, String> {
        bson::deserialize_from_slice(bytes).map_err(|e| e.to_string())
    }
}

/// The types a handle is for, held by none of its values (so a handle is `Send + Sync` and
/// `Clone` whatever they are).
type Types<T> = PhantomData<fn() -> T>;

fn codec_error<C: Codec>(what: &str, reason: String) -> Error {
    Error::Codec {
        codec: C::NAME,
        reason: format!("{what}: {reason}"),
    }
}

/// A parent key type: how it becomes the key's bytes (in an order that is the type's own,
/// so scans run in key order) and back. Arguments take its borrowed form (`&str` for
/// `String`).
pub trait Key: Sized {
    /// What methods take: `str` for `String`, `[u8]` for `Vec<u8>`, the number itself.
    type Arg: ?Sized;
    /// The key's bytes.
    fn encode(key: &Self::Arg) -> Vec<u8>;
    /// A key from its bytes.
    fn decode(bytes: &[u8]) -> std::result::Result<Self, String>;
}

impl Key for String {
    type Arg = str;

    fn encode(key: &str) -> Vec<u8> {
        key.as_bytes().to_vec()
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Self, String> {
        String::from_utf8(bytes.to_vec()).map_err(|e| format!("key is not UTF-8: {e}"))
    }
}

impl Key for Vec<u8> {
    type Arg = [u8];

    fn encode(key: &[u8]) -> Vec<u8> {
        key.to_vec()
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Self, String> {
        Ok(bytes.to_vec())
    }
}

/// Big-endian, so byte order is numeric order.
impl Key for u64 {
    type Arg = u64;

    fn encode(key: &u64) -> Vec<u8> {
        key.to_be_bytes().to_vec()
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Self, String> {
        let bytes: [u8; 8] = bytes.try_into().map_err(|_| "a u64 key is 8 bytes")?;
        Ok(u64::from_be_bytes(bytes))
    }
}

/// Big-endian with the sign bit flipped, so byte order is numeric order.
impl Key for i64 {
    type Arg = i64;

    fn encode(key: &i64) -> Vec<u8> {
        ((*key as u64) ^ (1 << 63)).to_be_bytes().to_vec()
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Self, String> {
        let bytes: [u8; 8] = bytes.try_into().map_err(|_| "an i64 key is 8 bytes")?;
        Ok((u64::from_be_bytes(bytes) ^ (1 << 63)) as i64)
    }
}

/// What an item type says of itself: its key in the array (a time, a sequence; `None`
/// for the array's next key) and its values of the measures its array's summaries
/// aggregate: the first measure's by `item_value`, any measure's by name by
/// `item_measures`.
///
/// ```
/// use skewdb::typed::ItemFields;
///
/// struct Reading { at: i64, celsius: f64, humidity: Option<f64> }
///
/// impl ItemFields for Reading {
///     fn item_key(&self) -> Option<i64> { Some(self.at) }
///     fn item_measures(&self) -> Vec<(&'static str, f64)> {
///         let mut measures = vec![("temperature", self.celsius)];
///         measures.extend(self.humidity.map(|h| ("humidity", h)));
///         measures
///     }
/// }
/// ```
pub trait ItemFields {
    /// The item's key; `None` (the default) takes the array's greatest key + 1.
    fn item_key(&self) -> Option<i64> {
        None
    }

    /// The value of the array's first measure; `None` (the default) for none.
    fn item_value(&self) -> Option<f64> {
        None
    }

    /// Values by measure name (names the array's spec declares, else the push fails at
    /// commit with `Error::UnknownMeasure`); set after `item_value`, so a value named here
    /// for the first measure wins. Empty (the default) for none.
    fn item_measures(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// A parent as a typed handle reads it: its key and body decoded, and the document itself
/// for its arrays' totals, summaries and inline items.
#[derive(Debug)]
pub struct TypedDocument<K, B> {
    /// The parent's key.
    pub key: K,
    /// The parent's body, decoded.
    pub body: B,
    /// The document as stored: arrays, totals, summaries, inline items as bytes.
    pub document: Document,
}

/// A collection whose keys are `K`, bodies `B`, encoded by `C`, read through the view `V`
/// of the handle it was made from ([`crate::Collection`], [`crate::SnapshotCollection`] or
/// [`crate::TransactionCollection`]): see the module's example.
pub struct TypedCollection<K, B, C = Json, V = Latest> {
    collection: CollectionHandle<V>,
    _types: Types<(K, B, C)>,
}

impl<K, B, C, V: Clone> Clone for TypedCollection<K, B, C, V> {
    fn clone(&self) -> Self {
        TypedCollection {
            collection: self.collection.clone(),
            _types: PhantomData,
        }
    }
}

impl<V: View + Clone> CollectionHandle<V> {
    /// This collection, read and written as keys `K` and bodies `B` encoded by `C`, through
    /// this handle's view (the latest state, a snapshot, or a transaction).
    pub fn typed<K: Key, B: Serialize + DeserializeOwned, C: Codec>(
        &self,
    ) -> TypedCollection<K, B, C, V> {
        TypedCollection {
            collection: self.clone(),
            _types: PhantomData,
        }
    }
}

/// A document decoded as keys `K` and bodies `B` encoded by `C`.
fn typed_document<K: Key, B: DeserializeOwned, C: Codec>(
    document: Document,
) -> Result<TypedDocument<K, B>> {
    let key = K::decode(document.key()).map_err(|e| codec_error::<C>("key", e))?;
    let body = C::decode(document.body()).map_err(|e| codec_error::<C>("body", e))?;
    Ok(TypedDocument {
        key,
        body,
        document,
    })
}

impl<K: Key, B: Serialize + DeserializeOwned, C: Codec, V: View + Clone>
    TypedCollection<K, B, C, V>
{
    /// The untyped handle underneath.
    pub fn untyped(&self) -> &CollectionHandle<V> {
        &self.collection
    }

    /// The parent `key`, decoded; `None` when it does not exist.
    pub fn get(&self, key: &K::Arg) -> Result<Option<TypedDocument<K, B>>> {
        match self.collection.get(K::encode(key))? {
            Some(document) => typed_document::<K, B, C>(document).map(Some),
            None => Ok(None),
        }
    }

    /// Sets parent `key`'s body in `writes` (a batch or a transaction); `Error::Codec` when `body` does not encode.
    pub fn put(&self, mut writes: impl Writes, key: &K::Arg, body: &B) -> Result<()> {
        let bytes = C::encode(body).map_err(|e| codec_error::<C>("body", e))?;
        writes.with_pending(Token::new(), |batch| {
            batch.put_in(&self.collection, K::encode(key), bytes);
        });
        Ok(())
    }

    /// Deletes parent `key` in `writes`.
    pub fn delete(&self, mut writes: impl Writes, key: &K::Arg) {
        writes.with_pending(Token::new(), |batch| {
            batch.delete_in(&self.collection, K::encode(key));
        });
    }

    /// The parents whose keys fall in `range`, decoded, in key order (`.rev()` for
    /// descending). Any range of the keys as written: `8..`, `..=99`, `"a".."m"` of
    /// `String` keys, `(Bound::Excluded("a"), Bound::Unbounded)`, `..`.
    pub fn scan(&self, range: impl KeyRange<K::Arg>) -> Result<TypedScan<K, B, C>> {
        let bound = |bound: Bound<&K::Arg>| match bound {
            Bound::Included(key) => Bound::Included(K::encode(key)),
            Bound::Excluded(key) => Bound::Excluded(K::encode(key)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let (start, end) = range.bounds();
        let range = (bound(start), bound(end));
        Ok(TypedScan {
            scan: self.collection.scan(range)?,
            _types: PhantomData,
        })
    }

    /// The handle of array `field`, whose items are `I`; `Error::UnknownField` for a name
    /// the schema lacks.
    pub fn array<I: Serialize + DeserializeOwned + ItemFields>(
        &self,
        field: &str,
    ) -> Result<TypedArray<K, I, C, V>> {
        Ok(TypedArray {
            collection: self.collection.clone(),
            array: self.collection.array(field)?,
            _types: PhantomData,
        })
    }
}

/// A range of keys as [`TypedCollection::scan`] takes it: any of the standard ranges (and a
/// pair of [`Bound`]s) whose ends borrow as the key's argument type, so that a collection
/// keyed by `String` takes `"a".."m"` as one keyed by `u64` takes `1..9`.
pub trait KeyRange<A: ?Sized> {
    /// The range's ends.
    fn bounds(&self) -> (Bound<&A>, Bound<&A>);
}

fn borrowed<A: ?Sized, Q: Borrow<A>>(bound: Bound<&Q>) -> Bound<&A> {
    match bound {
        Bound::Included(key) => Bound::Included(key.borrow()),
        Bound::Excluded(key) => Bound::Excluded(key.borrow()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

macro_rules! key_ranges {
    ($($range:ty),*) => {$(
        impl<A: ?Sized, Q: Borrow<A>> KeyRange<A> for $range {
            fn bounds(&self) -> (Bound<&A>, Bound<&A>) {
                (borrowed(self.start_bound()), borrowed(self.end_bound()))
            }
        }
    )*};
}

key_ranges!(
    std::ops::Range<Q>,
    std::ops::RangeFrom<Q>,
    std::ops::RangeTo<Q>,
    std::ops::RangeInclusive<Q>,
    std::ops::RangeToInclusive<Q>,
    (Bound<Q>, Bound<Q>)
);

impl<A: ?Sized> KeyRange<A> for std::ops::RangeFull {
    fn bounds(&self) -> (Bound<&A>, Bound<&A>) {
        (Bound::Unbounded, Bound::Unbounded)
    }
}

/// Parents decoded, from a [`TypedCollection::scan`].
pub struct TypedScan<K, B, C> {
    scan: Scan,
    _types: Types<(K, B, C)>,
}

impl<K: Key, B: Serialize + DeserializeOwned, C: Codec> Iterator for TypedScan<K, B, C> {
    type Item = Result<TypedDocument<K, B>>;

    fn next(&mut self) -> Option<Self::Item> {
        let document = self.scan.next()?;
        Some(document.and_then(typed_document::<K, B, C>))
    }
}

impl<K: Key, B: Serialize + DeserializeOwned, C: Codec> DoubleEndedIterator for TypedScan<K, B, C> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let document = self.scan.next_back()?;
        Some(document.and_then(typed_document::<K, B, C>))
    }
}

/// A page of typed items: decoded payloads, their identities, the cursor to continue.
#[derive(Debug)]
pub struct TypedPage<I> {
    /// The items, decoded, in the query's order.
    pub items: Vec<I>,
    /// `ids[i]` identifies `items[i]` (see [`ItemPage::ids`]).
    pub ids: Vec<Cursor>,
    /// Where the next page starts, when the limit cut this one.
    pub next: Option<Cursor>,
}

/// An item lent by [`TypedArray::for_each_item`]: the untyped [`ItemRef`] (its key,
/// values, payload and identity, through `Deref`), its payload decoded as `I` by `C` only
/// when [`TypedItemRef::decode`] is called.
pub struct TypedItemRef<'a, I, C = Json> {
    item: ItemRef<'a>,
    _types: Types<(I, C)>,
}

impl<'a, I: DeserializeOwned, C: Codec> TypedItemRef<'a, I, C> {
    /// The item's payload decoded; `Error::Codec` when it does not decode as `I`.
    pub fn decode(&self) -> Result<I> {
        C::decode(self.item.payload()).map_err(|e| codec_error::<C>("item", e))
    }

    /// The untyped item.
    pub fn untyped(&self) -> ItemRef<'a> {
        self.item
    }
}

impl<'a, I, C> std::ops::Deref for TypedItemRef<'a, I, C> {
    type Target = ItemRef<'a>;

    fn deref(&self) -> &ItemRef<'a> {
        &self.item
    }
}

/// An array field whose items are `I`, encoded by `C`, of a collection keyed by `K`, read
/// through the view `V` of the handle it was made from.
pub struct TypedArray<K, I, C = Json, V = Latest> {
    collection: CollectionHandle<V>,
    array: Array,
    _types: Types<(K, I, C)>,
}

impl<K: Key, I: Serialize + DeserializeOwned + ItemFields, C: Codec, V: View>
    TypedArray<K, I, C, V>
{
    /// The untyped array handle underneath.
    pub fn untyped(&self) -> &Array {
        &self.array
    }

    /// Pushes `item` to parent `key`'s array in `writes`, keyed and valued as the item says;
    /// `Error::Codec` when it does not encode.
    pub fn push(&self, mut writes: impl Writes, key: &K::Arg, item: &I) -> Result<()> {
        let payload = C::encode(item).map_err(|e| codec_error::<C>("item", e))?;
        let mut new = NewItem::new(payload);
        if let Some(item_key) = item.item_key() {
            new = new.key(item_key);
        }
        if let Some(value) = item.item_value() {
            new = new.value(value);
        }
        for (name, value) in item.item_measures() {
            new = new.measure(name, value);
        }
        writes.with_pending(Token::new(), |batch| {
            batch.push_to(&self.array, K::encode(key), new);
        });
        Ok(())
    }

    /// Removes every item keyed `item_key` from parent `key`'s array, in `writes`.
    pub fn remove(&self, mut writes: impl Writes, key: &K::Arg, item_key: i64) {
        writes.with_pending(Token::new(), |batch| {
            batch.remove_from(&self.array, K::encode(key), item_key);
        });
    }

    /// Removes the one item `id` names from parent `key`'s array, in `writes`.
    pub fn remove_item(&self, mut writes: impl Writes, key: &K::Arg, id: Cursor) {
        writes.with_pending(Token::new(), |batch| {
            batch.remove_item_from(&self.array, K::encode(key), id);
        });
    }

    /// Lends parent `key`'s items on `query`'s page to `visit` in place, each decoded only
    /// when the visitor asks ([`TypedItemRef::decode`]): a read that looks at keys and
    /// values decodes no payload. See [`CollectionHandle::for_each_item`].
    pub fn for_each_item<F: VisitFlow>(
        &self,
        key: &K::Arg,
        query: &ItemQuery,
        mut visit: impl FnMut(TypedItemRef<'_, I, C>) -> F,
    ) -> Result<Option<Visited>> {
        let typed = |item: ItemRef<'_>| {
            visit(TypedItemRef {
                item,
                _types: PhantomData,
            })
        };
        self.collection
            .for_each_item(K::encode(key), self.array.field(), query, typed)
    }

    /// Items of parent `key`'s array, decoded (see [`CollectionHandle::items`]).
    pub fn items(&self, key: &K::Arg, query: &ItemQuery) -> Result<Option<TypedPage<I>>> {
        let page = self
            .collection
            .items(K::encode(key), self.array.field(), query)?;
        page.map(|page| self.page(page)).transpose()
    }

    fn page(&self, page: ItemPage) -> Result<TypedPage<I>> {
        let items = page
            .items
            .iter()
            .map(|item| C::decode(&item.payload).map_err(|e| codec_error::<C>("item", e)))
            .collect::<Result<Vec<I>>>()?;
        Ok(TypedPage {
            items,
            ids: page.ids,
            next: page.next,
        })
    }

    /// The inline items of a document of this collection, decoded.
    pub fn inline(&self, document: &Document) -> Result<Vec<I>> {
        let array = document
            .array(self.array.field())
            .ok_or_else(|| Error::UnknownField {
                collection: self.array.collection().to_string(),
                field: self.array.field().to_string(),
            })?;
        array
            .inline
            .iter()
            .map(|item| C::decode(&item.payload).map_err(|e| codec_error::<C>("item", e)))
            .collect()
    }

    /// Count, sum, min, max and key bounds of parent `key`'s items in `range`.
    pub fn summary(&self, key: &K::Arg, range: impl RangeBounds<i64>) -> Result<Option<Summary>> {
        self.collection
            .summary(K::encode(key), self.array.field(), range)
    }

    /// Parent `key`'s items in `range` summarized per window of `span` (see
    /// [`CollectionHandle::summary_windows`]).
    pub fn summary_windows(
        &self,
        key: &K::Arg,
        range: impl RangeBounds<i64>,
        span: i64,
    ) -> Result<Option<Vec<(i64, Summary)>>> {
        self.collection
            .summary_windows(K::encode(key), self.array.field(), range, span)
    }

    /// The parents flagged past the array's inline cap (an Outlier array), by key, with
    /// each one's item count (see [`CollectionHandle::outliers`]); `Error::Codec` for a key
    /// that does not decode as `K`.
    pub fn outliers(&self) -> Result<Vec<(K, u64)>> {
        let outliers = self.collection.outliers(self.array.field())?;
        outliers
            .into_iter()
            .map(|outlier| {
                let key = K::decode(&outlier.key).map_err(|e| codec_error::<C>("key", e))?;
                Ok((key, outlier.total))
            })
            .collect()
    }
}

impl<K: Key, I: Serialize + DeserializeOwned + ItemFields, C: Codec> TypedArray<K, I, C, Latest> {
    /// Drops the sealed buckets of every parent whose newest item key is below `before`
    /// (see [`crate::Collection::expire_buckets`]).
    pub fn expire_buckets(&self, before: i64) -> Result<Expired> {
        self.collection.expire_buckets(self.array.field(), before)
    }
}
