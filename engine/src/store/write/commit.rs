//! The commit path: batches queued, grouped and staged into redo, written (and synced)
//! to the hot log with their cold chunks, then published as the new version.
//!
//! How batches become frames: `format-spec/hot-log.md`.

use crate::events::{span, warn_on_error};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::cold::ColdGroup;
use crate::limits::widths::u32_len;
use crate::log::{FrameKind, Group};
use crate::page::keys;
use crate::page::node::{LargeRef, Value};
use crate::page::redo::Op;
use crate::store::shared::Shared;
use crate::store::versions::Version;
use crate::store::write::apply::{Txn, apply, is_large, patched_value};
use crate::store::write::ops::{BatchOp, Expired};
use crate::store::write::queue::{Queue, Request};
use crate::store::write::read_set::ReadSet;
use crate::store::write::stage;
use crate::store::writer::{Turn, Writer};
use crate::{
    error::{Error, Result},
    limits::{MAX_BATCH_BYTES, MAX_RECORD_BYTES},
    options::Durability,
};

/// Redo frames are closed once their payload reaches this size.
pub(in crate::store) const FRAME_TARGET_BYTES: usize = 1024 * 1024;

/// Held records (large records changed by patches, in memory until logged whole) are
/// logged once they hold more than this share of the cache's budget: memory outside the
/// cache stays in proportion with it.
pub(in crate::store) const HELD_SHARE_OF_CACHE: usize = 4;

/// The most cold bytes a batch's redo carries (its sealed buckets and tails, typically a
/// few KiB); a batch that writes more syncs them before its redo.
pub(in crate::store) const MAX_CARRIED_COLD_BYTES: usize = 256 * 1024;

/// How a group's redo refers to the cold chunks it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::store) enum ChunkRedo {
    /// The redo carries their bytes: they need not be durable before it (replay writes
    /// back those that were lost).
    Carried,
    /// The redo names where they are: they are made durable before it.
    Located,
}

impl Shared {
    pub(in crate::store) fn apply(
        &self,
        txn: &mut Txn,
        op: &Op,
        large: Option<LargeRef>,
    ) -> Result<()> {
        apply(&self.pages, txn, op, large)
    }

    /// Commits a batch: atomic, and durable on return under `Durability::Immediate`.
    /// Concurrent commits are grouped: one thread writes (and syncs) them all at once.
    pub(in crate::store) fn commit(&self, ops: Vec<BatchOp>, durability: Durability) -> Result<()> {
        self.commit_checked(ops.into(), durability, None)
            .map(|_| ())
    }

    /// [`Shared::commit`] of a transaction's writes, refused with `Error::Conflict` unless
    /// every read in `reads` still holds when they stage (under the writer lock, after the
    /// batches grouped before it): the transaction takes effect as if all of it ran then.
    pub(in crate::store) fn commit_checked(
        &self,
        ops: Queue,
        durability: Durability,
        reads: Option<Arc<ReadSet>>,
    ) -> Result<Expired> {
        if ops.is_empty() {
            return Ok(Expired::default());
        }
        let request = Arc::new(Request {
            ops: Mutex::new(ops),
            durability,
            reads,
            result: Mutex::new(None),
        });
        let (mut writer, requests) = match self.commits.enter(&request) {
            Turn::Served(result) => return result,
            Turn::Lead(writer, requests) => (writer, requests),
        };
        self.commit_group(&mut writer, &requests);
        if self.current().tree.held_bytes > (self.options.cache_bytes / HELD_SHARE_OF_CACHE) as u64
        {
            // The batches are committed; a failed write makes the next write fail.
            warn_on_error!(
                self.write_held(&mut writer),
                "writing held pages after a commit failed: the database refuses writes"
            );
        }
        // What the commit leaves to maintenance: the supervisor posts it to the thread.
        self.after_commit(writer);
        let result = request.result.lock().take();
        result.unwrap_or_else(|| {
            Err(Error::WriteFailed {
                reason: "batch was not processed by its group".to_string(),
            })
        })
    }

    /// Makes everything committed so far durable: the cold chunks, then the log that
    /// refers to them.
    pub(in crate::store) fn persist(&self) -> Result<()> {
        let mut writer = self.commits.lock();
        self.cold.sync()?;
        writer.log.sync()
    }

    pub(in crate::store) fn commit_group(&self, writer: &mut Writer, requests: &[Arc<Request>]) {
        let _span = span!(debug, "commit_group", batches = requests.len());
        let base = self.current();
        let mut txn = Txn::new(base.tree.clone(), base.catalog.clone());
        let groups = self.cold_synced_before_roll(writer).and_then(|()| {
            let cold = self.cold.group()?;
            Ok((writer.log.group()?, cold))
        });
        let (mut group, mut cold) = match groups {
            Ok(groups) => groups,
            Err(error) => return fail_all(requests, error),
        };
        let mut accepted = Vec::with_capacity(requests.len());
        let mut chunks = ChunkRedo::Carried;
        for request in requests {
            let marks = (group.mark(), cold.mark());
            // A savepoint costs copies; only a group of several batches needs one.
            let savepoint = (requests.len() > 1).then(|| (txn.tree.clone(), txn.catalog.clone()));
            let ops = request.ops.lock().take();
            let checked = match &request.reads {
                Some(reads) => reads.check(&self.pages, &txn.tree),
                None => Ok(()),
            };
            let staged = checked.and_then(|()| {
                self.stage(&mut txn, &mut group, &mut cold, ops, request.durability)
            });
            match staged {
                Ok((redo, expired)) => {
                    if redo == ChunkRedo::Located {
                        chunks = ChunkRedo::Located;
                    }
                    accepted.push((request.clone(), expired));
                }
                Err(error) => {
                    *request.result.lock() = Some(Err(error));
                    group.rollback(marks.0);
                    cold.rollback(marks.1);
                    match savepoint {
                        Some((tree, catalog)) => {
                            // The keys it wrote stay listed: removing a record from the
                            // record tier that did not change costs one read.
                            txn.tree = tree;
                            txn.catalog = catalog;
                        }
                        None => return,
                    }
                }
            }
        }
        if accepted.is_empty() {
            return;
        }
        let batches = accepted.len() as u64;
        let durability = match accepted
            .iter()
            .any(|(r, _)| r.durability == Durability::Immediate)
        {
            true => Durability::Immediate,
            false => Durability::Buffered,
        };
        let written = self.write_group(
            writer,
            &base,
            txn,
            (group, cold, chunks),
            batches,
            durability,
        );
        if let Err(error) = written {
            let accepted: Vec<Arc<Request>> = accepted.into_iter().map(|(r, _)| r).collect();
            return fail_all(&accepted, error);
        }
        for (request, expired) in accepted {
            *request.result.lock() = Some(Ok(expired));
        }
    }

    /// Writes a group's chunks, then its redo (under `Immediate` the log is synced, and the
    /// chunks before it when the redo does not carry them), and publishes the transaction
    /// as the new version; `batches` counts the user batches in it.
    pub(in crate::store) fn write_group(
        &self,
        writer: &mut Writer,
        base: &Version,
        txn: Txn,
        (group, cold, chunks): (Group, ColdGroup, ChunkRedo),
        batches: u64,
        durability: Durability,
    ) -> Result<()> {
        let bytes = group.bytes() as u64;
        let cold_bytes = cold.mark() as u64;
        // A drop leaves records for the maintenance thread to reclaim, a layout change
        // parents for it to move.
        let schema_changed = !txn.schema_changed.is_empty();
        self.cold.append(cold)?;
        writer.log.append(group)?;
        if durability == Durability::Immediate {
            if chunks == ChunkRedo::Located {
                self.cold.sync()?;
            }
            writer.log.sync()?;
        }
        self.publish_changes(
            Version {
                tree: txn.tree.pin_root(&self.pages.maintaining()),
                catalog: txn.catalog,
                commits: base.commits + batches,
                // Set by `publish_changes`.
                generation: base.generation,
                own_chunks: None,
            },
            &txn.written,
            &txn.schema_changed,
        );
        writer.committed_group(bytes, cold_bytes);
        if schema_changed {
            self.maintenance.wake();
        }
        Ok(())
    }

    /// Moving to a new log segment syncs the old one; the chunks its redo refers to must
    /// be durable first.
    pub(in crate::store) fn cold_synced_before_roll(&self, writer: &Writer) -> Result<()> {
        if writer.log.will_roll() {
            self.cold.sync()
        } else {
            Ok(())
        }
    }

    /// Resolves a batch into redo, encodes it into the group's frames and applies it to the
    /// transaction; returns how its redo refers to the cold chunks it wrote. Every limit is
    /// checked before anything is encoded.
    pub(in crate::store) fn stage(
        &self,
        txn: &mut Txn,
        group: &mut Group,
        cold: &mut ColdGroup,
        ops: Queue,
        durability: Durability,
    ) -> Result<(ChunkRedo, Expired)> {
        let mut stager = stage::Stager::new(self, txn);
        let cold_mark = cold.mark();
        for op in ops.into_ops() {
            stager.apply(op?, cold)?;
        }
        let (mut redo, patched, expired) = stager.finish()?;
        let chunks = match cold.written_since(cold_mark) {
            None => ChunkRedo::Carried,
            // The chunks' bytes go first: replay puts back what was lost before it checks
            // them. Carried only where that spares a sync (an `Immediate` commit) and costs
            // little: a bulk load's chunks are written once, and synced.
            Some(loc)
                if durability == Durability::Immediate
                    && loc.len as usize <= MAX_CARRIED_COLD_BYTES =>
            {
                match cold.bytes_since(cold_mark) {
                    Some(bytes) => {
                        redo.insert(0, Op::ColdBytes { loc, bytes });
                        ChunkRedo::Carried
                    }
                    None => ChunkRedo::Located,
                }
            }
            Some(_) => ChunkRedo::Located,
        };
        self.encode_redo(txn, group, &redo, &patched)?;
        Ok((chunks, expired))
    }

    /// Encodes one batch's redo into the group's frames (a large value in a frame of its
    /// own) and applies it to the transaction. `patched` holds the value each `Patch` of the
    /// redo makes, in order: the transaction takes it as it is instead of patching.
    pub(in crate::store) fn encode_redo(
        &self,
        txn: &mut Txn,
        group: &mut Group,
        redo: &[Op],
        patched: &[Bytes],
    ) -> Result<()> {
        let mut patched = patched.iter();
        let mut open_frame: Option<usize> = None;
        let start_bytes = group.bytes();
        for op in redo {
            if let Op::Put { value, .. } = op {
                assert!(
                    value.len() <= MAX_RECORD_BYTES,
                    "a record over the limit in redo"
                );
            }
            let large = is_large(op, self.max_inline());
            if let Some(start) = open_frame
                && (large || group.payload_len(start) + op.encoded_len() > FRAME_TARGET_BYTES)
            {
                group.finish(start, FrameKind::BatchPart);
                open_frame = None;
            }
            let start = *open_frame.get_or_insert_with(|| group.begin());
            let value_at = op.encode(group.buf());
            if group.bytes() - start_bytes > MAX_BATCH_BYTES {
                return Err(Error::BatchTooLarge {
                    size: (group.bytes() - start_bytes) as u64,
                    limit: MAX_BATCH_BYTES as u64,
                });
            }
            let large_ref = large.then(|| LargeRef {
                segment_id: group.segment_id(),
                frame_offset: group.offset_of(start),
                value_offset: u32_len(value_at - start - crate::log::frame::FRAME_HEADER_BYTES),
                value_len: match op {
                    Op::Put { value, .. } => u32_len(value.len()),
                    _ => 0,
                },
            });
            let value = match op {
                Op::Patch { .. } => patched.next(),
                _ => None,
            };
            match (op, value) {
                (Op::Patch { key, .. }, Some(value)) => {
                    debug_assert!(self.patch_makes(txn, op, value).unwrap_or(true));
                    let value = patched_value(&self.pages, value.clone());
                    let pages = self.pages.reading(keys::owner_of(key));
                    txn.tree.insert(&pages, key.clone(), value)?;
                    txn.note_written(key);
                }
                _ => self.apply(txn, op, large_ref)?,
            }
            if large {
                group.finish(start, FrameKind::BatchPart);
                open_frame = None;
            }
        }
        let start = open_frame.unwrap_or_else(|| group.begin());
        group.finish(start, FrameKind::BatchEnd);
        Ok(())
    }

    /// Whether applying `patch` to the transaction's record gives `value` (what replay will
    /// build from the log). A debug check: reading the record may fail with an I/O error
    /// (or a fault injected by a test), which says nothing about the patch and is returned
    /// as the error; any other failure (a patch that does not fit its record) is `false`.
    pub(in crate::store) fn patch_makes(
        &self,
        txn: &Txn,
        patch: &Op,
        value: &Bytes,
    ) -> Result<bool> {
        let mut replayed = Txn::new(txn.tree.clone(), txn.catalog.clone());
        let Op::Patch { key, .. } = patch else {
            return Ok(false);
        };
        let rebuilt = self
            .apply(&mut replayed, patch, None)
            .and_then(|()| replayed.tree.get(&self.pages.maintaining(), key));
        match rebuilt {
            Ok(rebuilt) => Ok(matches!(
                rebuilt,
                Some(Value::Inline(bytes) | Value::Held(bytes)) if bytes == value
            )),
            Err(error @ Error::Io { .. }) => Err(error),
            Err(_) => Ok(false),
        }
    }

    /// Writes every held record to the log as a put of its present value, in a commit of
    /// its own (the frames a large put gets, which leaves references in its place), so that
    /// a checkpoint's pages refer to the log for them.
    pub(in crate::store) fn write_held(&self, writer: &mut Writer) -> Result<()> {
        let base = self.current();
        let held = base.tree.held();
        if held.is_empty() {
            return Ok(());
        }
        let txn = Txn::new(base.tree.clone(), base.catalog.clone());
        let redo: Vec<Op> = held
            .into_iter()
            .map(|(key, value)| Op::Put { key, value })
            .collect();
        self.cold_synced_before_roll(writer)?;
        let cold = self.cold.group()?;
        let group = writer.log.group()?;
        self.write_own_redo(writer, &base, (txn, group, cold), &redo)
    }

    /// Encodes and writes redo of the engine's own (held records logged whole, what
    /// compaction moved) as a commit of no user batch, its chunks made durable first, under
    /// the database's durability.
    pub(in crate::store) fn write_own_redo(
        &self,
        writer: &mut Writer,
        base: &Version,
        (mut txn, mut group, cold): (Txn, Group, ColdGroup),
        redo: &[Op],
    ) -> Result<()> {
        self.encode_redo(&mut txn, &mut group, redo, &[])?;
        let durability = self.options.durability;
        let groups = (group, cold, ChunkRedo::Located);
        self.write_group(writer, base, txn, groups, 0, durability)
    }

    /// Publishes a version whose records differ from the current one's in (at most) the
    /// parent records `written`, which leave the record tier first, under the next
    /// generation. While the epoch is odd no reader adds a record to the tier, and a reader
    /// that read before it turned odd adds nothing after (its check of the epoch and its
    /// insertion are under a shard lock, as is each removal here): every record in the tier
    /// is the current version's, as of the generation it carries.
    pub(in crate::store) fn publish_changes(
        &self,
        mut version: Version,
        written: &[Bytes],
        schema_changed: &[crate::catalog::CollectionId],
    ) {
        let records = self.pages.cache.records();
        let epoch = self.versions.begin_record_change();
        for collection in schema_changed {
            records.remove_collection(*collection);
        }
        let mut refreshed = Vec::new();
        for key in written {
            if let Some((collection, parent)) = crate::page::keys::split_parent(key)
                && let Some(leaf) = records.remove(collection, parent)
            {
                refreshed.push((key, collection, parent, leaf));
            }
        }
        version.generation = epoch + 1;
        // A record the tier held goes back in as this version has it: a parent that is
        // read, written and read again (a sensor's readings, a product's reviews, a
        // profile's followers) is read from memory after the write too, not by a walk to
        // its leaf. Only a record the tree holds in memory (inline in a leaf, or held until
        // the next checkpoint), and small enough to copy at every commit; a record that
        // cannot be read now is left for its next reader, who meets the error.
        let pages = self.pages.maintaining();
        for (key, collection, parent, leaf) in refreshed {
            let value = match version.tree.get(&pages, key) {
                Ok(Some(Value::Inline(value) | Value::Held(value)))
                    if value.len() <= REFRESHED_RECORD_BYTES =>
                {
                    value
                }
                _ => continue,
            };
            let cache = &self.pages.cache;
            cache.refresh_record(collection, parent, &value, epoch + 1, leaf);
        }
        self.publish(version);
        self.versions.end_record_change(epoch);
    }
}

/// The largest record a commit puts back in the record tier: at most the largest record
/// patched in place (four pages of the largest size), copied at every commit that changes
/// it.
const REFRESHED_RECORD_BYTES: usize = 64 * 1024;

pub(in crate::store) fn fail_all(requests: &[Arc<Request>], error: Error) {
    let reason = error.to_string();
    let mut first = Some(error);
    for request in requests {
        let error = first.take().unwrap_or_else(|| Error::WriteFailed {
            reason: reason.clone(),
        });
        *request.result.lock() = Some(Err(error));
    }
}
