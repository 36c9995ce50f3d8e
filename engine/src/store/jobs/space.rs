//! Space accounting: how many bytes of each file the current state still needs, against
//! the files' sizes. A log-structured store only ever appends, so the gap between the two
//! is what cleaning and compaction can give back.

use std::collections::BTreeMap;

use crate::cold::ChunkRef;
use crate::cold::chunk as cold_chunk;
use crate::error::{Error, Result};
use crate::log::{self, frame::SEGMENT_HEADER_BYTES, is_page_file};
use crate::page::keys;
use crate::page::node::{Node, Value};
use crate::page::table::Slot;
use crate::store::shared::Shared;

/// One segment file: its size and the bytes of it the current state needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentSpace {
    /// The segment file's name.
    pub file: String,
    /// The file's length; for the log's active segment, up to its last frame (the file
    /// runs on in zeros, up to 1 MiB, extended ahead of the writes).
    pub file_bytes: u64,
    /// Bytes of it the current state needs.
    pub live_bytes: u64,
}

/// The files of one tier.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TierSpace {
    /// Bytes of the tier's segment files.
    pub file_bytes: u64,
    /// Bytes of them the current state needs.
    pub live_bytes: u64,
    /// Each segment file.
    pub segments: Vec<SegmentSpace>,
}

impl TierSpace {
    /// File bytes per live byte (1.0 when nothing is live and nothing is stored; infinite
    /// when files hold bytes and none of them is live).
    pub fn amplification(&self) -> f64 {
        match (self.file_bytes, self.live_bytes) {
            (0, 0) => 1.0,
            (_, 0) => f64::INFINITY,
            (file, live) => file as f64 / live as f64,
        }
    }
}

/// Live and file bytes per tier. Hot: the log segments, where the page images of the
/// current tree, the large records it refers to and the redo written since the last
/// checkpoint are live. Cold: the chunk segments, where the chunks the chunk index refers
/// to are live.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpaceStats {
    /// The hot log's segments.
    pub hot: TierSpace,
    /// The cold segments.
    pub cold: TierSpace,
}

impl SpaceStats {
    /// Both tiers together.
    pub fn amplification(&self) -> f64 {
        TierSpace {
            file_bytes: self.hot.file_bytes + self.cold.file_bytes,
            live_bytes: self.hot.live_bytes + self.cold.live_bytes,
            segments: Vec::new(),
        }
        .amplification()
    }
}

impl Shared {
    /// Walks the current tree (page images read from storage, not through the cache, so the
    /// walk leaves the cache and its statistics as they were) and adds up what it refers to.
    pub(in crate::store) fn space(&self) -> Result<SpaceStats> {
        let storage = self.pages.storage.as_ref();
        // The version and the log's extent at one moment: the writer is held while both are
        // taken, not during the walk; no checkpoint runs while the files are listed (one
        // removes files outside the writer).
        let (version, replay_from, hot_files, cold_files) = {
            let _no_checkpoint = self.jobs.checkpoints.turn();
            let writer = self.commits.lock();
            let files = crate::store::jobs::segments::segment_files(storage, writer.log.tail())?;
            let mut cold_files = BTreeMap::new();
            for name in storage.list()? {
                if let Some(id) = cold_chunk::parse_segment_name(&name) {
                    cold_files.insert(id, storage.len(&name)?);
                }
            }
            (self.current(), writer.checkpoint_tail(), files, cold_files)
        };
        let before_replay = |segment: u32, offset: u64| {
            (segment, offset) < (replay_from.segment_id, replay_from.offset)
        };
        let mut hot_live: BTreeMap<u32, u64> = BTreeMap::new();
        let mut cold_live: BTreeMap<u32, u64> = BTreeMap::new();
        // Redo since the last checkpoint: recovery replays it.
        for (&id, &len) in &hot_files {
            if is_page_file(id) {
                continue;
            }
            let from = match id.cmp(&replay_from.segment_id) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Equal => replay_from.offset,
                std::cmp::Ordering::Greater => SEGMENT_HEADER_BYTES as u64,
            };
            *hot_live.entry(id).or_default() += len.saturating_sub(from);
        }
        let tree = &version.tree;
        for (id, slot) in tree.table.iter() {
            let node = match slot {
                Slot::Disk(loc) => {
                    // An image after the replay point (a checkpoint wrote it while commits
                    // went on) is counted with the redo.
                    if is_page_file(loc.segment_id) || before_replay(loc.segment_id, loc.offset) {
                        *hot_live.entry(loc.segment_id).or_default() += loc.len as u64;
                    }
                    self.pages.read_page(id, *loc)?
                }
                Slot::Dirty(node) => node.clone(),
                Slot::Free => continue,
            };
            let Node::Leaf { entries, .. } = node.as_ref() else {
                continue;
            };
            for (key, value) in entries.all().iter() {
                match value {
                    Value::Large(large) if before_replay(large.segment_id, large.frame_offset) => {
                        *hot_live.entry(large.segment_id).or_default() += large.value_len as u64;
                    }
                    // In memory until the next checkpoint: in no file yet.
                    Value::Large(_) | Value::Held(_) => {}
                    Value::Inline(bytes) if keys::is_chunk_entry(key) => {
                        let entry = ChunkRef::decode_slice(bytes).map_err(|reason| {
                            Error::corruption(
                                "page store",
                                0,
                                format!("chunk entry {key:x?}: {reason}"),
                            )
                        })?;
                        *cold_live.entry(entry.loc.segment_id).or_default() += entry.loc.len as u64;
                    }
                    Value::Inline(_) => {}
                }
            }
        }
        Ok(SpaceStats {
            hot: tier(&hot_files, &hot_live, log::segment_name),
            cold: tier(&cold_files, &cold_live, cold_chunk::segment_name),
        })
    }
}

fn tier(
    files: &BTreeMap<u32, u64>,
    live: &BTreeMap<u32, u64>,
    name: fn(u32) -> String,
) -> TierSpace {
    let segments: Vec<SegmentSpace> = files
        .iter()
        .map(|(&id, &file_bytes)| SegmentSpace {
            file: name(id),
            file_bytes,
            live_bytes: live.get(&id).copied().unwrap_or(0),
        })
        .collect();
    TierSpace {
        file_bytes: segments.iter().map(|s| s.file_bytes).sum(),
        live_bytes: segments.iter().map(|s| s.live_bytes).sum(),
        segments,
    }
}
