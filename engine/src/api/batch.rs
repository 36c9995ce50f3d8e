//! Writes: a [`Batch`] of operations committed atomically, and the sealed way in that
//! typed handles write through ([`Writes`]).

use std::sync::Arc;

use bytes::Bytes;

use crate::item::NewItem;
use crate::store::{BatchOp, Engine, Expired, Queue, ReadSet, WeakEngine};
use crate::{
    error::{Error, Result},
    options::Durability,
};

/// What typed handles write into: a batch (`&mut batch`), or a [`crate::Transaction`]'s
/// writes (`&mut txn`, or `&txn`, so that a typed handle made from the transaction writes
/// into it while it reads through it). Sealed: the way in is the crate's own, so a
/// transaction's writes cannot be committed past its check through it:
///
/// ```compile_fail
/// fn bypass(writes: &mut impl skewdb::Writes) {
///     writes.pending().commit().unwrap();
/// }
/// ```
pub trait Writes: sealed::Pending {}

impl Writes for Batch {}

impl<W: Writes + ?Sized> Writes for &mut W {}

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

    /// The batch a writer queues into, lent to `write`.
    pub trait Pending {
        fn with_pending<R>(
            &mut self,
            token: Token,
            write: impl FnOnce(&mut super::Batch) -> R,
        ) -> R;
    }

    impl Pending for super::Batch {
        fn with_pending<R>(&mut self, _: Token, write: impl FnOnce(&mut super::Batch) -> R) -> R {
            write(self)
        }
    }

    impl<W: Pending + ?Sized> Pending for &mut W {
        fn with_pending<R>(
            &mut self,
            token: Token,
            write: impl FnOnce(&mut super::Batch) -> R,
        ) -> R {
            (**self).with_pending(token, write)
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
    engine: WeakEngine,
    pub(crate) durability: Durability,
    /// In memory up to a share of the cache's budget, the older ones past it in a scratch
    /// file (see [`Queue`]).
    pub(crate) ops: Queue,
    /// Why the queue could not go to its scratch file, returned by the commit (which
    /// refuses the batch whole).
    failed: Option<Error>,
    /// Collection and field names already used by this batch, shared by its operations.
    names: Vec<Arc<str>>,
    /// The last parent key, shared by consecutive operations on one parent.
    last_key: Option<Bytes>,
    /// The (name, identity) pairs of the handles written through since the batch last
    /// changed a schema: each is checked once (`BatchOp::Expect`).
    expected: Vec<(Arc<str>, crate::catalog::CollectionId)>,
    /// How many of `ops` are those checks (not writes: `len` leaves them out).
    pub(crate) checks: usize,
}

impl Batch {
    /// An empty batch of `engine`'s, with its default durability; it does not keep the
    /// engine open.
    pub(crate) fn new(engine: &Engine) -> Batch {
        Batch {
            engine: engine.downgrade(),
            durability: engine.options().durability,
            ops: Queue::new(Queue::share_of(engine.options().cache_bytes)),
            failed: None,
            names: Vec::new(),
            last_key: None,
            expected: Vec::new(),
            checks: 0,
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

    super::writes::write_methods!();

    /// Creates `spec`'s collection with the batch, as [`crate::Db::create_collection`] does
    /// (nothing when it exists with the same schema, `Error::SchemaConflict` when its schema
    /// differs, which refuses the whole batch): operations queued after it may write to it.
    pub fn create_collection(&mut self, spec: crate::catalog::CollectionSpec) -> &mut Self {
        self.expected.clear();
        self.queue_op(BatchOp::CreateCollection(spec));
        self
    }

    /// Changes `collection`'s schema with the batch (see [`crate::Alteration`]): operations
    /// queued after it see the new schema; a batch that wrote to the collection before it is
    /// refused (`Error::InvalidSchema`).
    pub fn alter_collection(
        &mut self,
        collection: &str,
        alteration: crate::alter::Alteration,
    ) -> &mut Self {
        self.expected.clear();
        let collection = self.name(collection);
        self.queue_op(BatchOp::AlterCollection {
            collection,
            alteration,
        });
        self
    }

    /// Drops `collection` with the batch (see [`crate::Db::drop_collection`]).
    pub fn drop_collection(&mut self, collection: &str) -> &mut Self {
        self.expected.clear();
        let collection = self.name(collection);
        self.queue_op(BatchOp::DropCollection { collection });
        self
    }

    /// Queues `op`; the queue goes to its scratch file once it outgrows its share.
    pub(crate) fn queue_op(&mut self, op: BatchOp) {
        if !self.ops.push(op) || self.failed.is_some() {
            return;
        }
        let engine = &self.engine;
        let spilled = self.ops.spill(|| engine.scratch());
        if let Err(error) = spilled {
            self.failed = Some(error);
        }
    }

    /// The batch these writes queue into: this one.
    fn queue(&mut self) -> &mut Batch {
        self
    }

    fn queued(&self) -> &Batch {
        self
    }

    /// Queues the check that `collection` is still the collection of id `id` (a handle's),
    /// once per name and id until the batch changes a schema (after which the name may
    /// stand for another collection).
    pub(crate) fn queue_expect(&mut self, collection: &str, id: crate::catalog::CollectionId) {
        if self
            .expected
            .iter()
            .any(|(name, known)| *known == id && name.as_ref() == collection)
        {
            return;
        }
        let collection = self.name(collection);
        self.expected.push((collection.clone(), id));
        self.queue_op(BatchOp::Expect { collection, id });
        self.checks += 1;
    }

    pub(crate) fn queue_put(&mut self, collection: &str, key: &[u8], body: &[u8]) {
        let (collection, key) = (self.name(collection), self.key(key));
        self.queue_op(BatchOp::Put {
            collection,
            key,
            body: Bytes::copy_from_slice(body),
        });
    }

    pub(crate) fn queue_delete(&mut self, collection: &str, key: &[u8]) {
        let (collection, key) = (self.name(collection), self.key(key));
        self.queue_op(BatchOp::Delete { collection, key });
    }

    /// The collection's and the field's names, shared with the batch's other operations.
    pub(crate) fn names_of(&mut self, collection: &str, field: &str) -> (Arc<str>, Arc<str>) {
        (self.name(collection), self.name(field))
    }

    pub(crate) fn queue_push(&mut self, array: (Arc<str>, Arc<str>), key: &[u8], item: NewItem) {
        self.queue_array_op(array, key, ArrayOp::Push(item));
    }

    /// Every item keyed `item_key`, or the one pushed with sequence `seq`.
    pub(crate) fn queue_remove(
        &mut self,
        array: (Arc<str>, Arc<str>),
        key: &[u8],
        item_key: i64,
        seq: Option<u64>,
    ) {
        self.queue_array_op(array, key, ArrayOp::Remove(item_key, seq));
    }

    pub(crate) fn queue_expire(&mut self, array: (Arc<str>, Arc<str>), key: &[u8], before: i64) {
        self.queue_array_op(array, key, ArrayOp::Expire(before));
    }

    /// Queues an operation on array `field` of `collection`'s parent `key`.
    fn queue_array_op(
        &mut self,
        (collection, field): (Arc<str>, Arc<str>),
        key: &[u8],
        op: ArrayOp,
    ) {
        let key = self.key(key);
        self.queue_op(match op {
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
    }

    /// Applies the batch, leaving it empty for the next operations. On error nothing of it
    /// is applied (and it is left empty too) and the database stays usable (except after a
    /// failed write or sync, which makes every later write fail).
    pub fn commit(&mut self) -> Result<()> {
        self.commit_checked(None).map(|_| ())
    }

    /// [`Batch::commit`], returning what the batch's bucket expiries dropped
    /// ([`Batch::expire_buckets`]: buckets, items, and of those the ones rolled up).
    pub fn commit_expiring(&mut self) -> Result<Expired> {
        self.commit_checked(None)
    }

    /// [`Batch::commit`], refused with `Error::Conflict` unless `reads` (a transaction's)
    /// still hold; returns what the batch's expiries dropped.
    pub(crate) fn commit_checked(&mut self, reads: Option<Arc<ReadSet>>) -> Result<Expired> {
        self.last_key = None;
        self.expected.clear();
        self.checks = 0;
        let ops = self.ops.take();
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        self.engine.commit_checked(ops, self.durability, reads)
    }
}
