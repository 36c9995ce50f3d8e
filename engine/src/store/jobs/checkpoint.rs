//! Checkpoints and log cleaning: changed pages written to the log with a new checkpoint
//! file, sparse log segments copied out, and segments no longer needed removed once no
//! reader can reach them.
//!
//! The bytes and the order of the writes: `format-spec/checkpoint.md`.

use crate::events::{event, span, warn_on_error};
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::BufMut;

use crate::error::{Error, Result};
use crate::limits::widths::u32_len;
use crate::log::FrameKind;
use crate::log::FrameLoc;
use crate::page::checkpoint::Checkpoint;
use crate::page::node::{Node, PageId};
use crate::page::table::Slot;
use crate::page::tree::Tree;
use crate::store::jobs::mailbox::JobRun;
use crate::store::jobs::segments::{self, CLEAN_BYTES, Clean, sparse_segments, unneeded_cold};
use crate::store::shared::Shared;
use crate::store::versions::Version;
use crate::store::writer::Writer;

/// A checkpoint writes its page images to its page file in groups of about this size (the
/// memory it holds for them).
pub(in crate::store) const CHECKPOINT_GROUP_BYTES: usize = 256 * 1024;

/// Pages changed since the last checkpoint live in memory, outside the cache's budget, until
/// a checkpoint writes them: one is due once they reach this fraction of the budget (and
/// commits wait for it at twice it), so that they stay a small share of it.
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
    /// is due at 1; commits wait for it at 2 (see `Shared::after_commit`).
    pub(in crate::store) fn checkpoint_pressure(&self, writer: &Writer) -> f64 {
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

    /// Log cleaning: the live pages of the sparsest segments become dirty in `tree`, so the
    /// checkpoint about to be written copies them to the tail and the segments stop being
    /// needed. At most `CLEAN_BYTES` of pages per checkpoint (one segment at least), which
    /// bounds a checkpoint's work. A segment still holding a large record the tree refers
    /// to waits until the record has moved (see `relocate_large`). Returns the pages it
    /// marked, each with where its image was.
    pub(in crate::store) fn clean_sparse_segments(
        &self,
        tree: &mut Tree,
        tail_segment: u32,
        clean: Clean,
    ) -> Result<Vec<(PageId, FrameLoc)>> {
        let mut moved = 0;
        let mut marked = Vec::new();
        for segment in sparse_segments(
            self.pages.storage.as_ref(),
            tree,
            (tail_segment, self.jobs.checkpoints.open_page_file()),
            clean,
        )? {
            if segment.large_bytes > 0 {
                continue;
            }
            if moved > 0 && moved + segment.page_bytes > CLEAN_BYTES {
                break;
            }
            for id in segment.pages {
                // A page the cache holds is taken from it; one it does not is read and not
                // kept there: cleaning should not evict what readers use.
                let Slot::Disk(loc) = *tree.table.get(id) else {
                    unreachable!("a page of a sparse segment is on disk");
                };
                let (node, _unkept) = self.pages.maintaining().node_or_read(&tree.table, id)?;
                tree.replace_slot(id, Slot::Dirty(node));
                marked.push((id, loc));
            }
            moved += segment.page_bytes;
        }
        Ok(marked)
    }

    /// Dooms the files of either tier that the checkpoint just written does not need: log
    /// segments before the replay segment with no page image of its table and no large
    /// record of its tree, and cold segments before the cold tail's with no chunk of its
    /// chunk index.
    pub(in crate::store) fn doom_unneeded(&self, checkpoint: &Checkpoint) -> Result<()> {
        let storage = self.pages.storage.as_ref();
        let needed = checkpoint.needed_segments();
        let mut files: Vec<String> = segments::segment_ids(storage)?
            .into_iter()
            .filter(|id| *id < checkpoint.replay_from.segment_id && !needed.contains(id))
            .map(crate::log::segment_name)
            .collect();
        // Page files it does not refer to: those whose pages have all been written again
        // since, and one a crash left before its checkpoint file (every page file in the
        // directory is whole: one checkpoint runs at a time, and this one's is synced).
        let unneeded: Vec<u32> = segments::page_file_ids(storage)?
            .into_iter()
            .filter(|id| !needed.contains(id))
            .collect();
        if let Some(open) = self.jobs.checkpoints.open_page_file()
            && unneeded.contains(&open)
        {
            self.jobs.checkpoints.close_page_file();
        }
        files.extend(unneeded.into_iter().map(crate::log::segment_name));
        files.extend(unneeded_cold(
            storage,
            &checkpoint.needed_cold_segments(),
            checkpoint.cold_tail.segment_id,
        )?);
        self.versions.doom(files);
        Ok(())
    }

    /// Removes the doomed segments no reader can reach any more.
    pub(in crate::store) fn remove_doomed(&self) -> Result<()> {
        let storage = self.pages.storage.as_ref();
        let removed = self.versions.remove_unread(|file| {
            if let Some(id) = crate::cold::chunk::parse_segment_name(file) {
                self.cold.forget_map(id);
            }
            let hot = crate::log::parse_segment_name(file);
            if let Some(id) = hot.or_else(|| crate::log::parse_page_file_name(file)) {
                self.pages.forget_map(id);
            }
            storage.remove(file)
        })?;
        if removed {
            storage.sync_dir()?;
        }
        Ok(())
    }

    /// Writes every page changed until now to the log and a new checkpoint file.
    pub(in crate::store) fn checkpoint(&self) -> Result<()> {
        self.checkpoint_now(Clean::automatic(self.options.reclaim))
    }

    /// A checkpoint if one is still due (its pressure at least 1) once this thread's turn
    /// comes: commits that found one due while another ran do not each write one.
    /// Unless `wait`, nothing while another runs.
    pub(in crate::store) fn checkpoint_if_due(&self, wait: bool) -> Result<()> {
        debug_assert!(
            JobRun::here() || !self.maintenance.running(),
            "with the maintenance thread, no commit runs a checkpoint"
        );
        let _turn = match wait {
            true => self.jobs.checkpoints.turn(),
            false => match self.jobs.checkpoints.try_turn() {
                Some(turn) => turn,
                None => return Ok(()),
            },
        };
        if self.checkpoint_pressure(&self.commits.lock()) < 1.0 {
            return Ok(());
        }
        self.checkpoint_turn(Clean::automatic(self.options.reclaim))
    }

    /// A checkpoint; `clean` says which log segments' live pages it copies out too. One
    /// runs at a time; commits go on beside it (see `write_checkpoint`).
    pub(in crate::store) fn checkpoint_now(&self, clean: Clean) -> Result<()> {
        let _turn = self.jobs.checkpoints.turn();
        self.checkpoint_turn(clean)
    }

    /// [`Shared::checkpoint_now`] with the turn taken.
    fn checkpoint_turn(&self, clean: Clean) -> Result<()> {
        self.commits.lock().log.check_writable()?;
        let result = self.write_checkpoint(clean);
        if let Err(error) = &result {
            // Which of the checkpoint's writes reached the disk is unknown: refuse writes.
            self.commits.lock().log.poison(error.to_string());
        }
        result
    }

    /// Writes the pages changed as of one version to a page file of their own and a new
    /// checkpoint file, with the writer held only to take that version and to publish the
    /// pages written: commits go on while the pages are encoded, written and synced and the
    /// checkpoint file written. The checkpoint replays from the log's tail when the version
    /// was taken (`format-spec/checkpoint.md`).
    fn write_checkpoint(&self, clean: Clean) -> Result<()> {
        let _span = span!(debug, "checkpoint", clean = ?clean);
        let (version, tail, cold_tail, sequence, since) = {
            let mut writer = self.commits.lock();
            self.write_held(&mut writer)?;
            (
                self.current(),
                writer.log.tail(),
                self.cold.tail(),
                writer.next_checkpoint_sequence(),
                writer.written_since_checkpoint(),
            )
        };
        // The chunks the pages refer to, written before the version was taken.
        self.cold.sync()?;
        let mut tree = version.tree.clone();
        let cleaned = match clean {
            Clean::Nothing => Vec::new(),
            _ => self.clean_sparse_segments(&mut tree, tail.segment_id, clean)?,
        };
        if tree.table.dirty_count() == 0 && since.logged_nothing {
            self.commits.lock().log.sync()?;
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
        let mut pages = dirty.into_iter().peekable();
        let mut images = PageImages::default();
        // The page images go to a page file of their own, with no lock held: the commits
        // beside the checkpoint neither wait for its writes nor sync its bytes with theirs.
        let storage = self.pages.storage.as_ref();
        let segment_bytes = self.options.segment_bytes;
        let mut file = match pages.peek() {
            Some(_) => Some(self.jobs.checkpoints.page_file(storage, segment_bytes)?),
            None => None,
        };
        while let Some(file) = file.as_mut()
            && pages.peek().is_some()
        {
            images.clear();
            while images.bytes() < CHECKPOINT_GROUP_BYTES
                && let Some((id, node)) = pages.next()
            {
                assert!(
                    node.encoded_len() <= self.pages.page_bytes,
                    "page {id} over the page size"
                );
                images.add(id, &node);
            }
            let mut group = file.group();
            group.buf().reserve_exact(images.framed_bytes());
            for (id, image) in images.iter() {
                let start = group.begin();
                group.buf().extend_from_slice(image);
                written.push((id, group.finish(start, FrameKind::Page)));
            }
            file.append(storage, group)?;
        }
        drop(images);
        if let Some(mut file) = file {
            file.sync(storage)?;
            self.jobs.checkpoints.keep_page_file(file);
        }
        // The large records the pages refer to are in the log up to the tail the version
        // was taken at: segments before its own were synced as the log rolled past them.
        storage.sync(&crate::log::segment_name(tail.segment_id))?;
        let last_lsn = tail.next_lsn - 1;
        // The pages written are not put in the cache: a page's next read loads its image as
        // any read does. Cached here, the node a writer built (many allocations: a key and a
        // value each) would leave holes the allocator cannot reuse for the page images reads
        // load once it was evicted, and even its image, decoded into one buffer, would hold
        // a bulk load's pages in the cache past the load (the process's peak grew by half of
        // the budget either way: BENCHMARKS.md, "When RAM is the limit").
        for (id, loc) in &written {
            tree.table.set(*id, Slot::Disk(*loc));
        }
        let checkpoint = Checkpoint {
            sequence,
            page_bytes: u32_len(self.pages.page_bytes),
            replay_from: tail,
            cold_tail,
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
        let cleaned: BTreeMap<PageId, FrameLoc> = cleaned.into_iter().collect();
        {
            let mut writer = self.commits.lock();
            // The pages written that the commits since have not changed again are clean in
            // the current version: the same node, or (a cleaned page) the same image.
            let current = self.current();
            let mut merged = current.tree.clone();
            for (id, loc) in written {
                let unchanged = match (merged.table.get(id), version.tree.table.get(id)) {
                    (Slot::Dirty(now), Slot::Dirty(then)) => Arc::ptr_eq(now, then),
                    (Slot::Disk(now), _) => cleaned.get(&id) == Some(now),
                    _ => false,
                };
                if unchanged {
                    merged.table.set(id, Slot::Disk(loc));
                }
            }
            // The same records as the version it replaces: its generation too.
            self.publish(Version {
                tree: merged.pin_root(&self.pages.maintaining()),
                catalog: current.catalog.clone(),
                commits: current.commits,
                generation: current.generation,
                own_chunks: None,
            });
            writer.log.synced_through(last_lsn);
            writer.checkpointed(tail, since);
        }
        drop(version);
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

/// Page images a checkpoint encodes while commits go on, appended to the log as one group:
/// each a page id and the page, as a page frame's payload.
#[derive(Default)]
struct PageImages {
    bytes: Vec<u8>,
    /// Each image's page id and end in `bytes`.
    ends: Vec<(PageId, usize)>,
}

impl PageImages {
    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    fn add(&mut self, id: PageId, node: &Node) {
        self.bytes.put_u64_le(id);
        node.encode(&mut self.bytes);
        self.ends.push((id, self.bytes.len()));
    }

    fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The bytes of the images as frames.
    fn framed_bytes(&self) -> usize {
        self.bytes.len() + self.ends.len() * crate::log::frame::FRAME_HEADER_BYTES
    }

    fn iter(&self) -> impl Iterator<Item = (PageId, &[u8])> {
        let mut start = 0;
        self.ends.iter().map(move |&(id, end)| {
            let image = &self.bytes[start..end];
            start = end;
            (id, image)
        })
    }
}

/// Closing: the last handle gone, the changed pages are checkpointed.
impl Shared {
    /// The checkpoint a close writes: none for a database opened read-only, which has
    /// nothing to write; a database whose writes failed answers with that failure.
    pub(in crate::store) fn checkpoint_at_close(&self) -> Result<()> {
        match self.commits.lock().log.check_writable() {
            Err(Error::ReadOnly { .. }) => return Ok(()),
            Err(failed) => return Err(failed),
            Ok(()) => {}
        }
        self.checkpoint_now(Clean::automatic(self.options.reclaim))
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if self.commits.lock().log.check_writable().is_ok() {
            // Closing: make everything durable; an error here reaches no caller (recovery
            // replays the redo in any case), so it is a warning.
            warn_on_error!(
                self.checkpoint_now(Clean::automatic(self.options.reclaim)),
                "the checkpoint at close failed: the next open replays the log instead"
            );
        }
    }
}
