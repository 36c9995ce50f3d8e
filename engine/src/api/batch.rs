//! Writes: a [`Batch`] of operations committed atomically, and the sealed way in that
//! typed handles write through ([`Writes`]).

use std::sync::{Arc, Weak};

use bytes::Bytes;

use super::array::Array;
use crate::document::Cursor;
use crate::item::NewItem;
use crate::store::{BatchOp, Engine, Expired, ReadSet, Shared};
use crate::{
    error::{Error, Result},
    options::Durability,
};

/// What typed handles write into: a [`Batch`], or a [`crate::Transaction`]'s writes. Sealed:
/// the way in is the crate's own, so a transaction's writes cannot be committed past its
/// check through it:
///
/// ```compile_fail
/// fn bypass(writes: &mut impl skewdb::Writes) {
///     writes.pending().commit().unwrap();
/// }
/// ```
pub trait Writes: sealed::Pending {}

impl Writes for Batch {}

pub(crate) mod sealed {
    /// Only the crate can make one, so only the crate can call [`Pending::pending`].
    pub struct Token(());

    impl Token {
        // Only the typed layer (feature `serde`) makes one today.
        #[cfg_attr(not(feature = "serde"), allow(dead_code))]
        pub(crate) fn new() -> Token {
            Token(())
        }
    }

    /// The batch a writer queues into.
    pub trait Pending {
        fn pending(&mut self, token: Token) -> &mut super::Batch;
    }

    impl Pending for super::Batch {
        fn pending(&mut self, _: Token) -> &mut super::Batch {
            self
        }
    }
}

/// What a batch does to one array of one parent.
enum ArrayOp {
    Push(NewItem),
    /// Every item with the key, or the one pushed with the sequence number.
    Remove(i64, Option<u64>),
    Expire(i64),
}

/// Writes to apply atomically: all or nothing, also across a crash. Nothing is written
/// until [`Batch::commit`]; a batch dropped uncommitted is discarded. A batch does not keep
/// the database open: committing one after the last `Db` handle is gone is
/// `Error::Closed`.
///
/// ```
/// use skewdb::{CollectionSpec, Db, Durability, Layout, NewItem, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new().durability(Durability::Buffered))?;
/// let spec = CollectionSpec::new("users").array("followers", Layout::Outlier { inline_cap: 2 });
/// let users = db.create_collection(spec)?;
/// let followers = users.array("followers")?;
/// let mut batch = db.batch();
/// for id in 0..100u64 {
///     batch.push_to(&followers, "celebrity", NewItem::new(id.to_le_bytes()));
///     if batch.len() == 50 {
///         batch.commit()?; // and go on with the same batch
///     }
/// }
/// batch.durability(Durability::Immediate).commit()?; // this one synced on return
/// let celebrity = users.get("celebrity")?.expect("committed");
/// let array = celebrity.array("followers").expect("declared");
/// assert_eq!((array.total, array.inline.len(), array.has_overflow), (100, 2, true));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a batch writes nothing until it is committed"]
pub struct Batch {
    shared: Weak<Shared>,
    pub(crate) durability: Durability,
    pub(crate) ops: Vec<BatchOp>,
    /// Collection and field names already used by this batch, shared by its operations.
    names: Vec<Arc<str>>,
    /// The last parent key, shared by consecutive operations on one parent.
    last_key: Option<Bytes>,
}

impl Batch {
    /// An empty batch of `engine`'s, with its default durability; it does not keep the
    /// engine open.
    pub(crate) fn new(engine: &Engine) -> Batch {
        Batch {
            shared: Arc::downgrade(engine.shared()),
            durability: engine.options.durability,
            ops: Vec::new(),
            names: Vec::new(),
            last_key: None,
        }
    }

    fn key(&mut self, key: &[u8]) -> Bytes {
        if let Some(last) = &self.last_key
            && last.as_ref() == key
        {
            return last.clone();
        }
        let key = Bytes::copy_from_slice(key);
        self.last_key = Some(key.clone());
        key
    }

    fn name(&mut self, name: &str) -> Arc<str> {
        if let Some(known) = self.names.iter().find(|n| n.as_ref() == name) {
            return known.clone();
        }
        let name: Arc<str> = Arc::from(name);
        if self.names.len() < 16 {
            self.names.push(name.clone());
        }
        name
    }

    /// Sets the body of parent `key` in `collection`, creating the parent if need be; its
    /// arrays are left as they are.
    pub fn put(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        body: impl AsRef<[u8]>,
    ) -> &mut Self {
        let (collection, key) = (self.name(collection), self.key(key.as_ref()));
        self.ops.push(BatchOp::Put {
            collection,
            key,
            body: Bytes::copy_from_slice(body.as_ref()),
        });
        self
    }

    /// Deletes parent `key` of `collection` and every item of its arrays (nothing if absent).
    pub fn delete(&mut self, collection: &str, key: impl AsRef<[u8]>) -> &mut Self {
        let (collection, key) = (self.name(collection), self.key(key.as_ref()));
        self.ops.push(BatchOp::Delete { collection, key });
        self
    }

    /// Pushes an item to array `field` of parent `key` (created with an empty body if
    /// absent). The array's layout decides where the item lives.
    pub fn push(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        field: &str,
        item: NewItem,
    ) -> &mut Self {
        let array = (self.name(collection), self.name(field));
        self.array_op(array, key.as_ref(), ArrayOp::Push(item))
    }

    /// Removes every item with key `item_key` from array `field` of parent `key`, wherever
    /// it lives (inline, tail or cold chunks). Totals and summaries stay exact; a `Subset`
    /// window refills from history; see `format-spec/arrays.md` for the rule of each layout.
    /// Removing from a parent that does not exist, or a key the array does not hold, does
    /// nothing.
    pub fn remove(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        field: &str,
        item_key: i64,
    ) -> &mut Self {
        let array = (self.name(collection), self.name(field));
        self.array_op(array, key.as_ref(), ArrayOp::Remove(item_key, None))
    }

    /// Removes the one item `id` names (its key and push sequence, as [`crate::ItemPage::ids`]
    /// gives them) from array `field` of parent `key`, wherever it lives; items with the
    /// same key pushed at other times stay. Nothing if no item has that identity.
    pub fn remove_item(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        field: &str,
        id: Cursor,
    ) -> &mut Self {
        let array = (self.name(collection), self.name(field));
        self.array_op(array, key.as_ref(), ArrayOp::Remove(id.key, Some(id.seq)))
    }

    /// Drops every sealed bucket of `Bucket` array `field` of parent `key` whose newest item
    /// key is below `before`, from the chunk index alone (no bucket is read); the open bucket
    /// and late items stay. Total and summary follow. `Error::WrongLayout` for an array of
    /// another layout.
    pub fn expire_buckets(
        &mut self,
        collection: &str,
        key: impl AsRef<[u8]>,
        field: &str,
        before: i64,
    ) -> &mut Self {
        let array = (self.name(collection), self.name(field));
        self.array_op(array, key.as_ref(), ArrayOp::Expire(before))
    }

    /// [`Batch::push`] to the array of a handle (whose collection and field were checked
    /// when the handle was made).
    pub fn push_to(&mut self, array: &Array, key: impl AsRef<[u8]>, item: NewItem) -> &mut Self {
        self.array_op(array.names(), key.as_ref(), ArrayOp::Push(item))
    }

    /// [`Batch::remove`] from the array of a handle.
    pub fn remove_from(
        &mut self,
        array: &Array,
        key: impl AsRef<[u8]>,
        item_key: i64,
    ) -> &mut Self {
        self.array_op(array.names(), key.as_ref(), ArrayOp::Remove(item_key, None))
    }

    /// [`Batch::remove_item`] from the array of a handle.
    pub fn remove_item_from(
        &mut self,
        array: &Array,
        key: impl AsRef<[u8]>,
        id: Cursor,
    ) -> &mut Self {
        self.array_op(
            array.names(),
            key.as_ref(),
            ArrayOp::Remove(id.key, Some(id.seq)),
        )
    }

    /// [`Batch::expire_buckets`] of the array of a handle.
    pub fn expire_buckets_of(
        &mut self,
        array: &Array,
        key: impl AsRef<[u8]>,
        before: i64,
    ) -> &mut Self {
        self.array_op(array.names(), key.as_ref(), ArrayOp::Expire(before))
    }

    /// Queues an operation on array `field` of `collection`'s parent `key`.
    fn array_op(
        &mut self,
        (collection, field): (Arc<str>, Arc<str>),
        key: &[u8],
        op: ArrayOp,
    ) -> &mut Self {
        let key = self.key(key);
        self.ops.push(match op {
            ArrayOp::Push(item) => BatchOp::Push {
                collection,
                key,
                field,
                item,
            },
            ArrayOp::Remove(item_key, seq) => BatchOp::Remove {
                collection,
                key,
                field,
                item_key,
                seq,
            },
            ArrayOp::Expire(before) => BatchOp::ExpireBuckets {
                collection,
                key,
                field,
                before,
            },
        });
        self
    }

    /// Operations queued, not yet committed.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when no operation is queued.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// How durable the commit is: `Immediate` (on disk when `commit` returns) or
    /// `Buffered` (written, synced by a later commit, checkpoint or [`Db::persist`]). The
    /// database's `Options::durability` by default.
    pub fn durability(&mut self, durability: Durability) -> &mut Self {
        self.durability = durability;
        self
    }

    /// Applies the batch, leaving it empty for the next operations. On error nothing of it
    /// is applied (and it is left empty too) and the database stays usable (except after a
    /// failed write or sync, which makes every later write fail).
    pub fn commit(&mut self) -> Result<()> {
        self.commit_checked(None).map(|_| ())
    }

    /// [`Batch::commit`], refused with `Error::Conflict` unless `reads` (a transaction's)
    /// still hold; returns what the batch's expiries dropped.
    pub(crate) fn commit_checked(&mut self, reads: Option<Arc<ReadSet>>) -> Result<Expired> {
        self.last_key = None;
        let ops = std::mem::take(&mut self.ops);
        match self.shared.upgrade() {
            Some(shared) => shared.commit_checked(ops, self.durability, reads),
            None if ops.is_empty() => Ok(Expired::default()),
            None => Err(Error::Closed),
        }
    }
}
