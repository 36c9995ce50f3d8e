//! Checkpoints and log cleaning: changed pages written to the log with a new checkpoint
//! file, sparse log segments copied out, and segments no longer needed removed once no
//! reader can reach them.
//!
//! The bytes and the order of the writes: `format-spec/checkpoint.md`.

use crate::events::{event, span, warn_on_error};
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::BufMut;

use super::segments;
use super::shared::Shared;
use super::versions::Version;
use super::writer::Writer;
use crate::error::Result;
use crate::limits::widths::u32_len;
use crate::log::FrameKind;
use crate::page::checkpoint::Checkpoint;
use crate::page::node::{Node, PageId};
use crate::page::table::Slot;
use crate::page::tree::Tree;

/// A checkpoint writes its page images in groups of about this size.
pub(super) const CHECKPOINT_GROUP_BYTES: usize = 4 * 1024 * 1024;

/// A sealed log segment whose live pages fill less than this share of it is cleaned.
pub(super) const CLEAN_BELOW: f64 = 0.5;

/// `Db::compact` cleans every sealed log segment whose live pages fill less than this share
/// of it: the user asked for the space back. (A bulk load leaves segments in which redo, dead
/// once checkpointed, and page images alternate, most of them over [`CLEAN_BELOW`].)
const COMPACT_CLEAN_BELOW: f64 = 0.8;

/// Which sealed log segments a checkpoint cleans: copies their live pages to the tail, so
/// that they can be removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Clean {
    /// None.
    Nothing,
    /// Those whose live pages fill less than [`CLEAN_BELOW`] of them.
    Sparse,
    /// Those under [`COMPACT_CLEAN_BELOW`] (`Db::compact`).
    Compact,
}

impl Clean {
    /// What automatic checkpoints clean: sparse segments when the options reclaim space.
    pub(super) fn automatic(reclaim: bool) -> Clean {
        match reclaim {
            true => Clean::Sparse,
            false => Clean::Nothing,
        }
    }

    /// The share of live bytes under which a segment is cleaned.
    fn below(self) -> f64 {
        match self {
            Clean::Nothing => 0.0,
            Clean::Sparse => CLEAN_BELOW,
            Clean::Compact => COMPACT_CLEAN_BELOW,
        }
    }
}

/// Page bytes a checkpoint copies out of sparse segments, at most (one segment at least).
pub(super) const CLEAN_BYTES: u64 = 8 * 1024 * 1024;

/// A sealed log segment that is mostly dead: what of it the tree still needs.
pub(super) struct Sparse {
    pub(super) segment_id: u32,
    pub(super) page_bytes: u64,
    pub(super) pages: Vec<PageId>,
    /// Bytes of large records the tree refers to in it.
    pub(super) large_bytes: u64,
}

impl Sparse {
    pub(super) fn live_bytes(&self) -> u64 {
        self.page_bytes + self.large_bytes
    }
}

/// Pages changed since the last checkpoint live in memory, outside the cache's budget, until
/// a checkpoint writes them: one is due once they reach this fraction of the budget (and
/// runs from the committing thread at twice it), so that they stay a small share of it.
const DIRTY_SHARE_OF_CACHE: u64 = 16;

/// ...but never sooner than this many changed bytes, so that a small cache does not make
/// every few commits a checkpoint.
const MIN_DIRTY_BYTES: u64 = 1024 * 1024;

/// The changed page bytes at which a checkpoint is due: a share of the cache's budget, at
/// least [`MIN_DIRTY_BYTES`], at most `checkpoint_bytes` (which `Options` holds to 64 KiB at
/// least: never zero).
fn dirty_limit(cache_bytes: u64, checkpoint_bytes: u64) -> u64 {
    (cache_bytes / DIRTY_SHARE_OF_CACHE)
        .max(MIN_DIRTY_BYTES)
        .min(checkpoint_bytes)
}

impl Shared {
    /// How far the state is from the last checkpoint, as a multiple of where one is due:
    /// the redo since (due at `checkpoint_bytes`), the pages changed since, counted at the
    /// page size, with the held records (due at [`dirty_limit`]), or the cold chunk bytes
    /// written since (due at `checkpoint_bytes`), whichever is furthest. The first bounds
    /// recovery, the second the memory that changed pages hold outside the cache's budget,
    /// the third the cold space that waits for a checkpoint to be given back. A checkpoint
    /// is due at 1; a commit runs it itself at 2 (see `Shared::commit`).
    pub(super) fn checkpoint_pressure(&self, writer: &Writer) -> f64 {
        let tree = &self.current().tree;
        let dirty_bytes =
            tree.table.dirty_count() as u64 * self.pages.page_bytes as u64 + tree.held_bytes;
        let dirty_limit = dirty_limit(
            self.options.cache_bytes as u64,
            self.options.checkpoint_bytes,
        );
        writer
            .written_share(self.options.checkpoint_bytes)
            .max(dirty_bytes as f64 / dirty_limit as f64)
    }

    /// The maintenance thread's work: the checkpoint commits found due (if still due), then
    /// a cold compaction step.
    pub(crate) fn maintain(&self) -> Result<()> {
        {
            let mut writer = self.commits.lock();
            if self.checkpoint_pressure(&writer) >= 1.0 {
                self.checkpoint_locked(&mut writer, Clean::automatic(self.options.reclaim))?;
            }
        }
        if self.options.reclaim {
            self.reclaim_step()?;
        }
        // What a drop retired goes a step at a time, the thread woken again for each; so do
        // the parents a layout change moves.
        if self.retired_step()? | self.migration_step()? {
            self.maintenance.wake();
        }
        Ok(())
    }

    /// Sealed log segments mostly dead (live page and large-record bytes under the share of
    /// the file `clean` names), sparsest first.
    pub(super) fn sparse_segments(
        &self,
        tree: &Tree,
        writer: &Writer,
        clean: Clean,
    ) -> Result<Vec<Sparse>> {
        let below = clean.below();
        let storage = self.pages.storage.as_ref();
        let tail_segment = writer.log.tail().segment_id;
        let mut live: BTreeMap<u32, Sparse> = BTreeMap::new();
        fn entry(live: &mut BTreeMap<u32, Sparse>, segment_id: u32) -> &mut Sparse {
            live.entry(segment_id).or_insert_with(|| Sparse {
                segment_id,
                page_bytes: 0,
                pages: Vec::new(),
                large_bytes: 0,
            })
        }
        for (id, slot) in tree.table.iter() {
            if let Slot::Disk(loc) = slot
                && loc.segment_id < tail_segment
            {
                let sparse = entry(&mut live, loc.segment_id);
                sparse.page_bytes += loc.len as u64;
                sparse.pages.push(id);
            }
        }
        for (&segment_id, &bytes) in tree.large_live.iter() {
            if segment_id < tail_segment {
                entry(&mut live, segment_id).large_bytes += bytes;
            }
        }
        let mut sparse = Vec::new();
        for (segment_id, segment) in live {
            let file_bytes = storage.len(&crate::log::segment_name(segment_id))?;
            let ratio = segment.live_bytes() as f64 / file_bytes.max(1) as f64;
            if ratio < below {
                sparse.push((ratio, segment));
            }
        }
        sparse.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(sparse.into_iter().map(|(_, segment)| segment).collect())
    }

    /// Log cleaning: the live pages of the sparsest segments become dirty in `tree`, so the
    /// checkpoint about to be written copies them to the tail and the segments stop being
    /// needed. At most `CLEAN_BYTES` of pages per checkpoint (one segment at least), which
    /// bounds the time commits wait. A segment still holding a large record the tree refers
    /// to waits until the record has moved (see `relocate_large`). Returns the page bytes
    /// it marked.
    pub(super) fn clean_sparse_segments(
        &self,
        tree: &mut Tree,
        writer: &Writer,
        clean: Clean,
    ) -> Result<u64> {
        let mut moved = 0;
        for segment in self.sparse_segments(tree, writer, clean)? {
            if segment.large_bytes > 0 {
                continue;
            }
            if moved > 0 && moved + segment.page_bytes > CLEAN_BYTES {
                break;
            }
            for id in segment.pages {
                // A page the cache holds is taken from it; one it does not is read and not
                // kept there: cleaning should not evict what readers use.
                let (node, _unkept) = self.pages.maintaining().node_or_read(&tree.table, id)?;
                tree.replace_slot(id, Slot::Dirty(node));
            }
            moved += segment.page_bytes;
        }
        Ok(moved)
    }

    /// Dooms the files of either tier that the checkpoint just written does not need: log
    /// segments before the replay segment with no page image of its table and no large
    /// record of its tree, and cold segments before the cold tail's with no chunk of its
    /// chunk index.
    pub(super) fn doom_unneeded(&self, checkpoint: &Checkpoint) -> Result<()> {
        let storage = self.pages.storage.as_ref();
        let needed = checkpoint.needed_segments();
        let mut files: Vec<String> = segments::segment_ids(storage)?
            .into_iter()
            .filter(|id| *id < checkpoint.replay_from.segment_id && !needed.contains(id))
            .map(crate::log::segment_name)
            .collect();
        files.extend(self.unneeded_cold(
            &checkpoint.needed_cold_segments(),
            checkpoint.cold_tail.segment_id,
        )?);
        self.versions.doom(files);
        Ok(())
    }

    /// Removes the doomed segments no reader can reach any more.
    pub(super) fn remove_doomed(&self) -> Result<()> {
        let storage = self.pages.storage.as_ref();
        let removed = self.versions.remove_unread(|file| {
            if let Some(id) = crate::cold::chunk::parse_segment_name(file) {
                self.cold.forget_map(id);
            }
            if let Some(id) = crate::log::parse_segment_name(file) {
                self.pages.forget_map(id);
            }
            storage.remove(file)
        })?;
        if removed {
            storage.sync_dir()?;
        }
        Ok(())
    }

    /// Writes every changed page to the log and a new checkpoint file.
    pub fn checkpoint(&self) -> Result<()> {
        let mut writer = self.commits.lock();
        self.checkpoint_locked(&mut writer, Clean::automatic(self.options.reclaim))
    }

    /// A checkpoint with the writer held; `clean` says which log segments' live pages it
    /// copies out first.
    pub(super) fn checkpoint_locked(&self, writer: &mut Writer, clean: Clean) -> Result<()> {
        writer.log.check_writable()?;
        let result = self.write_checkpoint(writer, clean);
        if let Err(error) = &result {
            // Which of the checkpoint's writes reached the disk is unknown: refuse writes.
            writer.log.poison(error.to_string());
        }
        result
    }

    pub(super) fn write_checkpoint(&self, writer: &mut Writer, clean: Clean) -> Result<()> {
        let _span = span!(debug, "checkpoint", clean = ?clean);
        self.write_held(writer)?;
        let version = self.current();
        // Chunks before the redo and pages that refer to them.
        self.cold.sync()?;
        self.cold_synced_before_roll(writer)?;
        let mut tree = version.tree.clone();
        if clean != Clean::Nothing {
            self.clean_sparse_segments(&mut tree, writer, clean)?;
        }
        if tree.table.dirty_count() == 0 && writer.logged_nothing_since_checkpoint() {
            writer.log.sync()?;
            return self.remove_doomed();
        }
        let dirty: Vec<(PageId, Arc<Node>)> = tree
            .table
            .iter()
            .filter_map(|(id, slot)| match slot {
                Slot::Dirty(node) => Some((id, node.clone())),
                _ => None,
            })
            .collect();
        #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
        let dirty_pages = dirty.len();
        let mut written = Vec::with_capacity(dirty.len());
        // Each group's buffer is sized once for the frames it will hold: grown by doubling
        // it would reach twice `CHECKPOINT_GROUP_BYTES`, and the allocator keeps what such
        // transient buffers freed.
        let frame_lens: Vec<usize> = dirty
            .iter()
            .map(|(_, node)| crate::log::frame::FRAME_HEADER_BYTES + 8 + node.encoded_len())
            .collect();
        let group_len = |from: usize| {
            let mut len = 0;
            for frame_len in &frame_lens[from..] {
                if len >= CHECKPOINT_GROUP_BYTES {
                    break;
                }
                len += frame_len;
            }
            len
        };
        let mut group = writer.log.group()?;
        group.buf().reserve_exact(group_len(0));
        for (index, (id, node)) in dirty.into_iter().enumerate() {
            if group.bytes() >= CHECKPOINT_GROUP_BYTES {
                writer.log.append(group)?;
                group = writer.log.group()?;
                group.buf().reserve_exact(group_len(index));
            }
            assert!(
                node.encoded_len() <= self.pages.page_bytes,
                "page {id} over the page size"
            );
            let start = group.begin();
            group.buf().put_u64_le(id);
            node.encode(group.buf());
            written.push((id, group.finish(start, FrameKind::Page)));
        }
        writer.log.append(group)?;
        writer.log.sync()?;
        // The pages written are not put in the cache: a page's next read loads its image as
        // any read does. Cached here, the node a writer built (many allocations: a key and a
        // value each) would leave holes the allocator cannot reuse for the page images reads
        // load once it was evicted, and even its image, decoded into one buffer, would hold
        // a bulk load's pages in the cache past the load (the process's peak grew by half of
        // the budget either way: BENCHMARKS.md, "When RAM is the limit").
        for (id, loc) in written {
            tree.table.set(id, Slot::Disk(loc));
        }
        let tail = writer.log.tail();
        let checkpoint = Checkpoint {
            sequence: writer.next_checkpoint_sequence(),
            page_bytes: u32_len(self.pages.page_bytes),
            replay_from: tail,
            cold_tail: self.cold.tail(),
            root: tree.root,
            next_page_id: tree.next_page_id,
            catalog: version.catalog.as_ref().clone(),
            pages: tree
                .table
                .iter()
                .filter_map(|(id, slot)| match slot {
                    Slot::Disk(loc) => Some((id, *loc)),
                    _ => None,
                })
                .collect(),
            large_live: tree.large_live.iter().map(|(s, b)| (*s, *b)).collect(),
            cold_live: tree.cold_live.iter().map(|(s, b)| (*s, *b)).collect(),
        };
        checkpoint.write(self.pages.storage.as_ref())?;
        // The same records as the version it replaces: their generation too.
        self.publish(Version {
            tree: tree.pin_root(&self.pages.maintaining()),
            catalog: version.catalog.clone(),
            commits: version.commits,
            generation: version.generation,
            own_chunks: None,
        });
        drop(version);
        writer.checkpointed(tail);
        event!(
            debug,
            sequence = checkpoint.sequence,
            pages = dirty_pages,
            "checkpoint written"
        );
        self.doom_unneeded(&checkpoint)?;
        self.remove_doomed()
    }
}

/// Closing: the last handle gone, the changed pages are checkpointed.
impl Drop for Shared {
    fn drop(&mut self) {
        let mut writer = self.commits.lock();
        if writer.log.check_writable().is_ok() {
            // Closing: make everything durable; an error here reaches no caller (recovery
            // replays the redo in any case), so it is a warning.
            warn_on_error!(
                self.checkpoint_locked(&mut writer, Clean::automatic(self.options.reclaim)),
                "the checkpoint at close failed: the next open replays the log instead"
            );
        }
    }
}
