//! A batch's queued operations in bounded memory, and the request a committing thread
//! groups with others. The operations: the newest in memory, and, once those
//! outgrow the batch's share of the cache's budget, the older ones encoded into a scratch
//! file beside the database and read back one at a time when the batch stages (as SQLite
//! spills a statement journal and redb a transaction's dirty pages). A batch of any size is
//! queued in the share plus a write buffer.
//!
//! The scratch bytes never outlive the process and are read only by it: a sequence of
//! records, each a tag byte and its fields, little-endian (`format-spec/scratch.md`).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::item::{MAX_MEASURES, NewItem};
use crate::options::Durability;
use crate::storage::Scratch;
use crate::store::write::ops::{BatchOp, Expired};
use crate::store::write::read_set::ReadSet;

/// The share of the cache's budget a batch's operations take in memory before the older ones
/// go to its scratch file...
pub(crate) const QUEUE_SHARE_OF_BUDGET: usize = 8;
/// ...and at least this much (a small cache does not make every batch spill).
pub(crate) const MIN_QUEUE_BYTES: usize = 1 << 20;
/// Encoded operations are written to the scratch file in writes of about this size, and read
/// back in reads of it.
const SCRATCH_IO_BYTES: usize = 1 << 20;

const TAG_HELD: u8 = 0;
const TAG_PUT: u8 = 1;
const TAG_DELETE: u8 = 2;
const TAG_PUSH: u8 = 3;
const TAG_REMOVE: u8 = 4;
const TAG_EXPIRE: u8 = 5;
const TAG_EXPECT: u8 = 6;
const TAG_NAME: u8 = 7;

/// A key's length field that says: the previous operation's key.
const SAME_KEY: u32 = u32::MAX;

const ITEM_KEY: u8 = 1;
const ITEM_VALUE: u8 = 2;
const ITEM_MORE: u8 = 4;

/// One batch waiting in the commit queue.
pub(in crate::store) struct Request {
    /// Taken by the group that stages them.
    pub(in crate::store) ops: Mutex<Queue>,
    /// The batch's own durability: a group is synced when any of its batches asks.
    pub(in crate::store) durability: Durability,
    /// A transaction's reads, checked against the group's state before its writes stage.
    pub(in crate::store) reads: Option<Arc<ReadSet>>,
    pub(in crate::store) result: Mutex<Option<Result<Expired>>>,
}

/// The operations of one batch, in the order queued.
pub(crate) struct Queue {
    /// The newest, in memory.
    memory: Vec<BatchOp>,
    /// What `memory` holds, about: operations and the bytes they carry.
    memory_bytes: usize,
    /// How much `memory` may hold before it goes to the scratch file.
    share: usize,
    /// The older operations, encoded.
    spilled: Option<Spilled>,
    /// Every operation queued, spilled or not.
    len: usize,
}

/// Operations written to scratch, oldest first.
struct Spilled {
    scratch: Scratch,
    /// Encoded, not yet written.
    buf: Vec<u8>,
    /// Names already written, by their number in the scratch file.
    names: HashMap<Arc<str>, u32>,
    /// Operations with no scratch encoding (schema changes, engine-internal steps), by the
    /// number a held record gives; taken when read back by value.
    held: Vec<Option<BatchOp>>,
    /// The last key written, which the next operation on the same parent refers to.
    last_key: Option<Bytes>,
}

impl Queue {
    /// An empty queue keeping up to `share` bytes in memory.
    pub(crate) fn new(share: usize) -> Queue {
        Queue {
            memory: Vec::new(),
            memory_bytes: 0,
            share,
            spilled: None,
            len: 0,
        }
    }

    /// The share of a budget of `cache_bytes` one batch keeps in memory.
    pub(crate) fn share_of(cache_bytes: usize) -> usize {
        (cache_bytes / QUEUE_SHARE_OF_BUDGET).max(MIN_QUEUE_BYTES)
    }

    /// The operations queued, leaving the queue empty (with the same share).
    pub(crate) fn take(&mut self) -> Queue {
        std::mem::replace(self, Queue::new(self.share))
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queues `op`; true when the operations in memory have outgrown the share, for the
    /// caller to [`Queue::spill`] them.
    pub(crate) fn push(&mut self, op: BatchOp) -> bool {
        self.memory_bytes += memory_of(&op);
        self.memory.push(op);
        self.len += 1;
        self.memory_bytes > self.share
    }

    /// Moves the operations in memory to the scratch file (made by `scratch` the first time).
    pub(crate) fn spill(&mut self, scratch: impl FnOnce() -> Result<Scratch>) -> Result<()> {
        if self.memory.is_empty() {
            return Ok(());
        }
        if self.spilled.is_none() {
            self.spilled = Some(Spilled {
                scratch: scratch()?,
                buf: Vec::with_capacity(SCRATCH_IO_BYTES + SCRATCH_IO_BYTES / 4),
                names: HashMap::new(),
                held: Vec::new(),
                last_key: None,
            });
        }
        let spilled = self.spilled.as_mut().expect("made above");
        for op in self.memory.drain(..) {
            spilled.encode(op);
            if spilled.buf.len() >= SCRATCH_IO_BYTES {
                spilled.scratch.append(&spilled.buf)?;
                spilled.buf.clear();
            }
        }
        self.memory_bytes = 0;
        Ok(())
    }

    /// The operations in the order queued, by value; the spilled ones read back one at a
    /// time.
    pub(crate) fn into_ops(self) -> impl Iterator<Item = Result<BatchOp>> {
        let spilled = self.spilled.map(|mut spilled| {
            let buf = std::mem::take(&mut spilled.buf);
            Reader::new(Source::Owned(spilled, buf))
        });
        spilled
            .into_iter()
            .flatten()
            .chain(self.memory.into_iter().map(Ok))
    }

    /// The operations in the order queued, as copies (for a transaction's view of its own
    /// writes).
    pub(crate) fn ops(&self) -> impl Iterator<Item = Result<BatchOp>> + '_ {
        let spilled = self
            .spilled
            .as_ref()
            .map(|spilled| Reader::new(Source::Borrowed(spilled)));
        spilled
            .into_iter()
            .flatten()
            .chain(self.memory.iter().cloned().map(Ok))
    }
}

impl From<Vec<BatchOp>> for Queue {
    /// A queue of `ops`, all in memory.
    fn from(ops: Vec<BatchOp>) -> Queue {
        Queue {
            len: ops.len(),
            memory_bytes: ops.iter().map(memory_of).sum(),
            memory: ops,
            share: usize::MAX,
            spilled: None,
        }
    }
}

/// About what `op` holds in memory.
fn memory_of(op: &BatchOp) -> usize {
    let carried = match op {
        BatchOp::Put { key, body, .. } => key.len() + body.len(),
        BatchOp::Push { key, item, .. } => {
            key.len()
                + item.payload.len()
                + item
                    .named
                    .iter()
                    .map(|(name, _)| name.len() + 32)
                    .sum::<usize>()
                + item.more.as_ref().map_or(0, |_| 16 * MAX_MEASURES)
        }
        BatchOp::Delete { key, .. }
        | BatchOp::Remove { key, .. }
        | BatchOp::ExpireBuckets { key, .. }
        | BatchOp::Migrate { key, .. } => key.len(),
        _ => 0,
    };
    std::mem::size_of::<BatchOp>() + carried
}

fn put_u32(buf: &mut Vec<u8>, value: u32) {
    buf.extend_from_slice(&value.to_le_bytes());
}

fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(buf, u32::try_from(bytes.len()).expect("checked by `fits`"));
    buf.extend_from_slice(bytes);
}

/// Whether every length in `op` fits the encoding's 32 bits (else it is held in memory).
fn fits(op: &BatchOp) -> bool {
    let small = |len: usize| len < SAME_KEY as usize;
    match op {
        BatchOp::Put { key, body, .. } => small(key.len()) && small(body.len()),
        BatchOp::Push { key, item, .. } => {
            small(key.len())
                && small(item.payload.len())
                && item.named.iter().all(|(name, _)| small(name.len()))
        }
        BatchOp::Delete { key, .. }
        | BatchOp::Remove { key, .. }
        | BatchOp::ExpireBuckets { key, .. } => small(key.len()),
        _ => true,
    }
}

impl Spilled {
    /// The number of `name`, writing it first if new.
    fn name(&mut self, name: &Arc<str>) -> u32 {
        if let Some(&number) = self.names.get(name) {
            return number;
        }
        let number = u32::try_from(self.names.len()).expect("fewer names than operations");
        self.buf.push(TAG_NAME);
        put_bytes(&mut self.buf, name.as_bytes());
        self.names.insert(name.clone(), number);
        number
    }

    fn key(&mut self, key: &Bytes) {
        if self.last_key.as_ref() == Some(key) {
            put_u32(&mut self.buf, SAME_KEY);
        } else {
            put_bytes(&mut self.buf, key);
            self.last_key = Some(key.clone());
        }
    }

    /// Writes the operation's collection, key and field (when it has one).
    fn target(&mut self, tag: u8, collection: &Arc<str>, key: &Bytes, field: Option<&Arc<str>>) {
        let collection = self.name(collection);
        let field = field.map(|field| self.name(field));
        self.buf.push(tag);
        put_u32(&mut self.buf, collection);
        self.key(key);
        if let Some(field) = field {
            put_u32(&mut self.buf, field);
        }
    }

    fn encode(&mut self, op: BatchOp) {
        if !fits(&op) {
            return self.hold(op);
        }
        match op {
            BatchOp::Put {
                collection,
                key,
                body,
            } => {
                self.target(TAG_PUT, &collection, &key, None);
                put_bytes(&mut self.buf, &body);
            }
            BatchOp::Delete { collection, key } => {
                self.target(TAG_DELETE, &collection, &key, None);
            }
            BatchOp::Push {
                collection,
                key,
                field,
                item,
            } => {
                self.target(TAG_PUSH, &collection, &key, Some(&field));
                encode_item(&mut self.buf, &item);
            }
            BatchOp::Remove {
                collection,
                key,
                field,
                item_key,
                seq,
            } => {
                self.target(TAG_REMOVE, &collection, &key, Some(&field));
                self.buf.extend_from_slice(&item_key.to_le_bytes());
                self.buf.push(u8::from(seq.is_some()));
                self.buf
                    .extend_from_slice(&seq.unwrap_or_default().to_le_bytes());
            }
            BatchOp::ExpireBuckets {
                collection,
                key,
                field,
                before,
            } => {
                self.target(TAG_EXPIRE, &collection, &key, Some(&field));
                self.buf.extend_from_slice(&before.to_le_bytes());
            }
            BatchOp::Expect { collection, id } => {
                let collection = self.name(&collection);
                self.buf.push(TAG_EXPECT);
                put_u32(&mut self.buf, collection);
                put_u32(&mut self.buf, id);
            }
            op => self.hold(op),
        }
    }

    /// Keeps `op` in memory, with a record of its place.
    fn hold(&mut self, op: BatchOp) {
        self.buf.push(TAG_HELD);
        put_u32(
            &mut self.buf,
            u32::try_from(self.held.len()).expect("fewer held operations than 2^32"),
        );
        self.held.push(Some(op));
    }
}

fn encode_item(buf: &mut Vec<u8>, item: &NewItem) {
    let flags = item.key.map_or(0, |_| ITEM_KEY)
        | item.value.map_or(0, |_| ITEM_VALUE)
        | item.more.as_ref().map_or(0, |_| ITEM_MORE);
    buf.push(flags);
    buf.extend_from_slice(&item.key.unwrap_or_default().to_le_bytes());
    buf.extend_from_slice(&item.value.unwrap_or_default().to_le_bytes());
    put_bytes(buf, &item.payload);
    put_u32(
        buf,
        u32::try_from(item.named.len()).expect("fewer named values than 2^32"),
    );
    for (name, value) in &item.named {
        put_bytes(buf, name.as_bytes());
        buf.extend_from_slice(&value.to_le_bytes());
    }
    if let Some(more) = &item.more {
        for value in more.iter() {
            buf.push(u8::from(value.is_some()));
            buf.extend_from_slice(&value.unwrap_or_default().to_le_bytes());
        }
    }
}

/// The spilled operations, owned or lent.
enum Source<'a> {
    Owned(Spilled, Vec<u8>),
    Borrowed(&'a Spilled),
}

/// Reads spilled operations back, a block of the scratch file at a time, then the bytes
/// still in the write buffer.
struct Reader<'a> {
    source: Source<'a>,
    /// Where the next block starts, over the scratch file and then the write buffer.
    position: u64,
    block: Vec<u8>,
    at: usize,
    names: Vec<Arc<str>>,
    last_key: Option<Bytes>,
}

impl<'a> Reader<'a> {
    fn new(source: Source<'a>) -> Reader<'a> {
        Reader {
            source,
            position: 0,
            block: Vec::new(),
            at: 0,
            names: Vec::new(),
            last_key: None,
        }
    }
}

fn broken(reason: &str) -> Error {
    Error::corruption("scratch", 0, reason)
}

impl Reader<'_> {
    /// Makes at least `n` bytes readable from `at`; false at the end of the bytes.
    fn fill(&mut self, n: usize) -> Result<bool> {
        if self.block.len() - self.at >= n {
            return Ok(true);
        }
        self.block.drain(..self.at);
        self.at = 0;
        let (spilled, unwritten) = match &self.source {
            Source::Owned(spilled, buf) => (spilled, buf.as_slice()),
            Source::Borrowed(spilled) => (*spilled, spilled.buf.as_slice()),
        };
        let file_len = spilled.scratch.len();
        while self.block.len() < n {
            let want = (n - self.block.len()).max(SCRATCH_IO_BYTES);
            let have = self.block.len();
            let got = if self.position < file_len {
                self.block.resize(have + want, 0);
                let got = spilled
                    .scratch
                    .read_at(self.position, &mut self.block[have..])?;
                self.block.truncate(have + got);
                got
            } else {
                let start = usize::try_from(self.position - file_len).unwrap_or(usize::MAX);
                let rest = unwritten.get(start..).unwrap_or_default();
                let got = rest.len().min(want);
                self.block.extend_from_slice(&rest[..got]);
                got
            };
            if got == 0 {
                return Ok(false);
            }
            self.position += got as u64;
        }
        Ok(true)
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if !self.fill(n)? {
            return Err(broken("an operation cut short"));
        }
        let bytes = &self.block[self.at..self.at + n];
        self.at += n;
        Ok(bytes)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(bytes.try_into().expect("four bytes")))
    }

    fn u64(&mut self) -> Result<u64> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("eight bytes")))
    }

    fn bytes(&mut self) -> Result<Bytes> {
        let len = self.u32()? as usize;
        Ok(Bytes::copy_from_slice(self.take(len)?))
    }

    fn name(&mut self) -> Result<Arc<str>> {
        let number = self.u32()? as usize;
        self.names
            .get(number)
            .cloned()
            .ok_or_else(|| broken("a name not yet written"))
    }

    fn key(&mut self) -> Result<Bytes> {
        let len = self.u32()?;
        if len == SAME_KEY {
            return self.last_key.clone().ok_or_else(|| broken("no key before"));
        }
        let key = Bytes::copy_from_slice(self.take(len as usize)?);
        self.last_key = Some(key.clone());
        Ok(key)
    }

    fn item(&mut self) -> Result<NewItem> {
        let flags = self.u8()?;
        let key = self.u64()? as i64;
        let value = f64::from_bits(self.u64()?);
        let payload = self.bytes()?;
        let named_len = self.u32()?;
        let mut named = Vec::new();
        for _ in 0..named_len {
            let name = String::from_utf8(self.bytes()?.to_vec())
                .map_err(|_| broken("a measure's name not UTF-8"))?;
            named.push((name, f64::from_bits(self.u64()?)));
        }
        let more = match flags & ITEM_MORE {
            0 => None,
            _ => {
                let mut more = Box::new([None; MAX_MEASURES - 1]);
                for value in more.iter_mut() {
                    let set = self.u8()? != 0;
                    let read = f64::from_bits(self.u64()?);
                    *value = set.then_some(read);
                }
                Some(more)
            }
        };
        Ok(NewItem {
            key: (flags & ITEM_KEY != 0).then_some(key),
            value: (flags & ITEM_VALUE != 0).then_some(value),
            payload,
            named,
            more,
        })
    }

    /// The next operation, or `None` at the end.
    fn next_op(&mut self) -> Result<Option<BatchOp>> {
        loop {
            if !self.fill(1)? {
                return Ok(None);
            }
            let op = match self.u8()? {
                TAG_NAME => {
                    let bytes = self.bytes()?;
                    let name = std::str::from_utf8(&bytes).map_err(|_| broken("a name"))?;
                    self.names.push(Arc::from(name));
                    continue;
                }
                TAG_HELD => {
                    let number = self.u32()? as usize;
                    let held = match &mut self.source {
                        Source::Owned(spilled, _) => {
                            spilled.held.get_mut(number).and_then(Option::take)
                        }
                        Source::Borrowed(spilled) => {
                            spilled.held.get(number).and_then(Option::clone)
                        }
                    };
                    held.ok_or_else(|| broken("a held operation read twice"))?
                }
                TAG_PUT => BatchOp::Put {
                    collection: self.name()?,
                    key: self.key()?,
                    body: self.bytes()?,
                },
                TAG_DELETE => BatchOp::Delete {
                    collection: self.name()?,
                    key: self.key()?,
                },
                TAG_PUSH => BatchOp::Push {
                    collection: self.name()?,
                    key: self.key()?,
                    field: self.name()?,
                    item: self.item()?,
                },
                TAG_REMOVE => {
                    let (collection, key, field) = (self.name()?, self.key()?, self.name()?);
                    let item_key = self.u64()? as i64;
                    let has_seq = self.u8()? != 0;
                    let seq = self.u64()?;
                    BatchOp::Remove {
                        collection,
                        key,
                        field,
                        item_key,
                        seq: has_seq.then_some(seq),
                    }
                }
                TAG_EXPIRE => BatchOp::ExpireBuckets {
                    collection: self.name()?,
                    key: self.key()?,
                    field: self.name()?,
                    before: self.u64()? as i64,
                },
                TAG_EXPECT => BatchOp::Expect {
                    collection: self.name()?,
                    id: self.u32()?,
                },
                _ => return Err(broken("an unknown operation")),
            };
            return Ok(Some(op));
        }
    }
}

impl Iterator for Reader<'_> {
    type Item = Result<BatchOp>;

    fn next(&mut self) -> Option<Result<BatchOp>> {
        self.next_op().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> Vec<BatchOp> {
        let (c, f): (Arc<str>, Arc<str>) = (Arc::from("products"), Arc::from("reviews"));
        let key = Bytes::from_static(b"p1");
        let mut more = Box::new([None; MAX_MEASURES - 1]);
        more[2] = Some(2.5);
        vec![
            BatchOp::Put {
                collection: c.clone(),
                key: key.clone(),
                body: Bytes::from_static(b"{}"),
            },
            BatchOp::Push {
                collection: c.clone(),
                key: key.clone(),
                field: f.clone(),
                item: NewItem::new(b"great").key(7).value(1.5),
            },
            BatchOp::Push {
                collection: c.clone(),
                key: key.clone(),
                field: f.clone(),
                item: NewItem {
                    key: None,
                    value: None,
                    payload: Bytes::new(),
                    named: vec![("temp".to_string(), -3.0)],
                    more: Some(more),
                },
            },
            BatchOp::DropCollection {
                collection: Arc::from("other"),
            },
            BatchOp::Remove {
                collection: c.clone(),
                key: Bytes::from_static(b"p2"),
                field: f.clone(),
                item_key: -4,
                seq: Some(9),
            },
            BatchOp::Remove {
                collection: c.clone(),
                key: Bytes::from_static(b"p2"),
                field: f.clone(),
                item_key: 4,
                seq: None,
            },
            BatchOp::ExpireBuckets {
                collection: c.clone(),
                key: key.clone(),
                field: f,
                before: i64::MIN,
            },
            BatchOp::Expect {
                collection: c.clone(),
                id: 3,
            },
            BatchOp::Delete { collection: c, key },
        ]
    }

    fn same(a: &[BatchOp], b: &[BatchOp]) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    /// Every kind of operation, queued past a tiny share so that some go to scratch (with
    /// writes and reads of scratch blocks in between), reads back the same, by value and
    /// by reference, in order.
    #[test]
    fn spilled_operations_read_back_as_queued_in_order() {
        for split in 0..=ops().len() {
            let mut queue = Queue::new(usize::MAX);
            for (at, op) in ops().into_iter().enumerate() {
                queue.push(op);
                if at + 1 == split {
                    queue.spill(|| Ok(Scratch::memory())).expect("spill");
                }
            }
            assert_eq!(queue.len(), ops().len());
            let copies: Vec<BatchOp> = queue.ops().map(|op| op.expect("read")).collect();
            same(&copies, &ops());
            let owned: Vec<BatchOp> = queue.into_ops().map(|op| op.expect("read")).collect();
            same(&owned, &ops());
        }
    }

    /// A queue spills once its operations in memory outgrow the share, and a batch many
    /// times the write buffer reads back whole, through the file's blocks and the buffer.
    #[test]
    fn a_queue_past_its_share_spills_and_reads_back_whole() {
        let dir = tempfile::tempdir().expect("dir");
        let mut queue = Queue::new(64 << 10);
        let collection: Arc<str> = Arc::from("c");
        let count = 20_000u64;
        let mut spills = 0;
        for n in 0..count {
            let op = BatchOp::Put {
                collection: collection.clone(),
                key: Bytes::copy_from_slice(&(n / 3).to_be_bytes()),
                body: Bytes::from(vec![(n % 251) as u8; (n % 700) as usize]),
            };
            if queue.push(op) {
                queue.spill(|| Scratch::in_dir(dir.path())).expect("spill");
                spills += 1;
            }
        }
        assert!(spills > 50, "spilled {spills} times");
        assert!(queue.memory_bytes <= 64 << 10);
        let mut seen = 0u64;
        for (n, op) in queue.into_ops().enumerate() {
            let n = n as u64;
            match op.expect("read back") {
                BatchOp::Put { key, body, .. } => {
                    assert_eq!(key.as_ref(), (n / 3).to_be_bytes());
                    assert_eq!(body, vec![(n % 251) as u8; (n % 700) as usize]);
                }
                op => panic!("{op:?}"),
            }
            seen += 1;
        }
        assert_eq!(seen, count);
    }

    #[test]
    fn a_scratch_file_cut_short_is_an_error_not_a_panic() {
        let mut queue = Queue::new(usize::MAX);
        for op in ops() {
            queue.push(op);
        }
        queue.spill(|| Ok(Scratch::memory())).expect("spill");
        let spilled = queue.spilled.as_mut().expect("spilled");
        let cut = spilled.buf.len() - 3;
        spilled.buf.truncate(cut);
        let read: Vec<Result<BatchOp>> = queue.ops().collect();
        assert!(read.iter().any(|op| op.is_err()));
    }
}
