//! Opening a database: lock, read the last checkpoint, replay the redo after it, cut off a
//! torn tail. See `format-spec/recovery.md`, which follows this code step by step.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;

use crate::cache::CacheConfig;
use crate::cached::Cache;
use crate::catalog::Catalog;
use crate::cold::chunk::{self as cold_chunk, ChunkLoc};
use crate::cold::{ColdStore, ColdTail};
use crate::events::{event, span};
use crate::limits::widths::u32_len;
use crate::log::frame::SEGMENT_HEADER_BYTES;
use crate::log::{
    FrameKind, HotLog, LogTail, check_page_file_header, is_page_file, parse_page_file_name,
    parse_segment_name, read_segment_header, scan_segment, segment_name,
};
use crate::page::checkpoint::{CHECKPOINT_FILE, CHECKPOINT_TEMP_FILE, Checkpoint};
use crate::page::node::LargeRef;
use crate::page::redo::Op;
use crate::page::table::Slot;
use crate::page::tree::Tree;
use crate::page::{MAX_PAGE_BYTES, MIN_PAGE_BYTES, PageStore, max_inline_record};
use crate::storage::Storage;
use crate::store::shared::Shared;
use crate::store::versions::Version;
use crate::store::write::apply::{Txn, apply, is_large};
use crate::store::writer::Writer;
use crate::{
    error::{Error, Result},
    options::Options,
};

/// Whether an open may write: a writer's open creates a missing database and repairs what
/// a crash left; a read-only open (over `storage::Frozen`, whose changes stay in memory)
/// creates nothing and leaves a log that refuses every write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::store) enum Access {
    ReadWrite,
    ReadOnly,
}

pub(in crate::store) fn open(
    storage: Arc<dyn Storage>,
    options: Options,
    access: Access,
) -> Result<Shared> {
    let _span = span!(info, "recovery", directory = %storage.describe(), access = ?access);
    options.validate()?;
    let lock = storage.lock()?;
    let names: BTreeSet<String> = storage.list()?.into_iter().collect();
    if names.contains(CHECKPOINT_TEMP_FILE) {
        storage.remove(CHECKPOINT_TEMP_FILE)?;
    }
    // What this open builds on must be what a power loss would leave: a writer that failed
    // may have renamed a checkpoint into place, or created or removed segments, without
    // syncing the directory. Recovering from that state and then appending would let a
    // power loss bring back the older checkpoint, whose replay may stop before frames
    // written after this open.
    if names.contains(CHECKPOINT_FILE) {
        storage.sync(CHECKPOINT_FILE)?;
    }
    storage.sync_dir()?;
    let segments: Vec<u32> = names.iter().filter_map(|n| parse_segment_name(n)).collect();
    let cache = Arc::new(Cache::with_config(CacheConfig {
        budget_bytes: options.cache_bytes as u64,
        record_bytes: options.record_cache_bytes(),
        policy: options.cache_policy.live(),
        what_if: options.cache_what_if,
        what_if_objects: options.cache_what_if_objects,
        trace: options.cache_trace.clone(),
    })?);
    if !names.contains(CHECKPOINT_FILE) {
        if access == Access::ReadOnly {
            return Err(Error::NoDatabase {
                path: storage.describe(),
            });
        }
        return create(storage, options, lock, cache, &segments);
    }
    let checkpoint = Checkpoint::read(storage.as_ref())?;
    let page_bytes = checkpoint.page_bytes as usize;
    if !(MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&page_bytes) {
        return Err(Error::corruption(
            CHECKPOINT_FILE,
            0,
            format!("page size {page_bytes} out of range"),
        ));
    }
    let page_files: Vec<u32> = names
        .iter()
        .filter_map(|n| parse_page_file_name(n))
        .collect();
    check_page_files(storage.as_ref(), &checkpoint, &segments, &page_files)?;
    let mut pages = PageStore::new(storage.clone(), cache.clone(), page_bytes);
    let tree = if checkpoint.pages.is_empty() {
        Tree::new()
    } else {
        let table = checkpoint.page_table();
        if !matches!(table.get(checkpoint.root), Slot::Disk(_)) {
            return Err(Error::corruption(
                CHECKPOINT_FILE,
                0,
                "root page not in the page table",
            ));
        }
        let mut tree = Tree::with_root(checkpoint.root, checkpoint.next_page_id, table);
        tree.large_live = Arc::new(checkpoint.large_live.iter().copied().collect());
        tree.cold_live = Arc::new(checkpoint.cold_live.iter().copied().collect());
        tree
    };
    let txn = Txn::new(tree, Arc::new(checkpoint.catalog.clone()));
    let cold_segments: Vec<u32> = names
        .iter()
        .filter_map(|n| cold_chunk::parse_segment_name(n))
        .collect();
    let cold = ColdStore::new(
        storage.clone(),
        cache.clone(),
        options.segment_bytes,
        checkpoint.cold_tail,
    );
    let replayed = replay(&pages, &cold, &segments, &checkpoint, txn)?;
    event!(
        info,
        checkpoint = checkpoint.sequence,
        replayed_bytes = replayed.bytes,
        "recovered: the checkpoint and the log after it replayed"
    );
    cut_cold_tail(storage.as_ref(), &cold_segments, replayed.cold_tail)?;
    // Segments the checkpoint no longer needs, left by a crash before they were removed.
    // What it needs comes from the checkpoint file, not from the replayed tree: replay
    // makes pages dirty in memory, and until a new checkpoint is durable this one is what
    // the next open reads.
    let needed = checkpoint.needed_segments();
    let mut removed = false;
    for id in &segments {
        if *id < checkpoint.replay_from.segment_id && !needed.contains(id) {
            storage.remove(&segment_name(*id))?;
            removed = true;
        }
    }
    // Page files it does not refer to: all written again since, or one a crash left
    // before its checkpoint file.
    for id in &page_files {
        if !needed.contains(id) {
            storage.remove(&segment_name(*id))?;
            removed = true;
        }
    }
    let needed_cold = checkpoint.needed_cold_segments();
    for id in &cold_segments {
        if *id < checkpoint.cold_tail.segment_id && !needed_cold.contains(id) {
            storage.remove(&cold_chunk::segment_name(*id))?;
            removed = true;
        }
    }
    if removed {
        storage.sync_dir()?;
    }
    let mut cold = ColdStore::new(
        storage.clone(),
        cache.clone(),
        options.segment_bytes,
        replayed.cold_tail,
    );
    let mut log = HotLog::resume(storage.clone(), replayed.tail, options.segment_bytes);
    if access == Access::ReadOnly {
        log.refuse_writes(storage.describe());
    }
    // Recovery has cut the log's torn tail, if any: from here on no sealed segment changes.
    if options.memory_map {
        pages.map_segments(log.sealed_below());
        cold.map_segments();
    }
    let writer = Writer::opened(
        log,
        checkpoint.replay_from,
        checkpoint.sequence,
        replayed.bytes,
    );
    let tree = replayed.txn.tree.pin_root(&pages.maintaining());
    let first = Version::opened(tree, replayed.txn.catalog);
    Ok(Shared::assemble(pages, cold, options, first, writer, lock))
}

/// A new database, or one whose creation stopped before its first checkpoint (its log
/// then holds nothing but segment headers, which are discarded).
fn create(
    storage: Arc<dyn Storage>,
    options: Options,
    lock: Box<dyn crate::storage::LockGuard>,
    cache: Arc<Cache>,
    segments: &[u32],
) -> Result<Shared> {
    for id in segments {
        let name = segment_name(*id);
        if storage.len(&name)? > SEGMENT_HEADER_BYTES as u64 {
            return Err(Error::corruption(
                CHECKPOINT_FILE,
                0,
                format!("checkpoint file missing while {name} holds log records"),
            ));
        }
    }
    for id in segments {
        storage.remove(&segment_name(*id))?;
    }
    for name in storage.list()? {
        if cold_chunk::parse_segment_name(&name).is_some() || parse_page_file_name(&name).is_some()
        {
            storage.remove(&name)?;
        }
    }
    let log = HotLog::create(storage.clone(), 1, 1, options.segment_bytes)?;
    let tail = log.tail();
    let checkpoint = Checkpoint {
        sequence: 0,
        page_bytes: u32_len(options.page_bytes),
        replay_from: tail,
        cold_tail: ColdTail::default(),
        root: 0,
        next_page_id: 1,
        catalog: Catalog::default(),
        pages: Vec::new(),
        large_live: Vec::new(),
        cold_live: Vec::new(),
    };
    checkpoint.write(storage.as_ref())?;
    let mut cold = ColdStore::new(
        storage.clone(),
        cache.clone(),
        options.segment_bytes,
        ColdTail::default(),
    );
    let mut pages = PageStore::new(storage, cache.clone(), options.page_bytes);
    if options.memory_map {
        pages.map_segments(log.sealed_below());
        cold.map_segments();
    }
    let first = Version::opened(Tree::new(), Arc::new(Catalog::default()));
    let writer = Writer::opened(log, tail, 0, 0);
    Ok(Shared::assemble(pages, cold, options, first, writer, lock))
}

struct Replayed {
    txn: Txn,
    tail: LogTail,
    bytes: u64,
    cold_tail: ColdTail,
}

/// Replays every complete batch from `from` to the end of the log and cuts off what
/// follows the last complete one. A bad frame is a torn tail only when it is in the last
/// segment and no later frame claims it was durable; otherwise it is corruption.
fn replay(
    pages: &PageStore,
    cold: &ColdStore,
    segments: &[u32],
    checkpoint: &Checkpoint,
    mut txn: Txn,
) -> Result<Replayed> {
    let from = checkpoint.replay_from;
    let mut cold_end = checkpoint.cold_tail;
    let storage = pages.storage.as_ref();
    let later: Vec<u32> = segments
        .iter()
        .copied()
        .filter(|id| *id >= from.segment_id)
        .collect();
    if later.first() != Some(&from.segment_id) {
        return Err(Error::corruption(
            segment_name(from.segment_id),
            from.offset,
            "the segment where replay starts is missing",
        ));
    }
    let max_inline = max_inline_record(pages.page_bytes);
    let mut next_lsn = from.next_lsn;
    let mut tail = from;
    let mut bytes = 0u64;
    // Cold segments replay wrote chunks back into.
    let mut restored = BTreeSet::new();
    for (index, &segment_id) in later.iter().enumerate() {
        let is_last = index + 1 == later.len();
        let name = segment_name(segment_id);
        match read_segment_header(storage, segment_id) {
            Ok(header) => {
                if segment_id != from.segment_id && header.first_lsn != next_lsn {
                    return Err(Error::corruption(
                        &name,
                        16,
                        format!(
                            "segment starts at lsn {} where {next_lsn} was expected",
                            header.first_lsn
                        ),
                    ));
                }
            }
            // A crash while moving to a new segment leaves its header torn and nothing after.
            // Not so the segment replay starts in: the checkpoint found it durable.
            Err(error)
                if error.is_corruption()
                    && is_last
                    && segment_id != from.segment_id
                    && storage.len(&name)? <= SEGMENT_HEADER_BYTES as u64 =>
            {
                storage.remove(&name)?;
                storage.sync_dir()?;
                break;
            }
            Err(error) => return Err(error),
        }
        let start = if segment_id == from.segment_id {
            from.offset
        } else {
            SEGMENT_HEADER_BYTES as u64
        };
        // The batch being read (its frames so far, where it began, the cold chunks it wrote)
        // and the end of the last complete one.
        let mut batch: Option<(Txn, (u64, u64), Vec<ChunkLoc>)> = None;
        let mut complete = (start, next_lsn);
        // A batch whose chunk did not survive, and the durable lsns claimed after it.
        let mut lost: Option<(u64, u64)> = None;
        let mut claimed_after_lost = 0u64;
        let stop = scan_segment(storage, segment_id, start, |header, loc, payload| {
            if header.lsn != next_lsn {
                return Err(Error::corruption(
                    &name,
                    loc.offset,
                    format!("lsn {} where {next_lsn} was expected", header.lsn),
                ));
            }
            next_lsn += 1;
            if lost.is_some() {
                claimed_after_lost = claimed_after_lost.max(header.durable_lsn);
                return Ok(());
            }
            let end = loc.offset + loc.len as u64;
            match header.kind {
                FrameKind::Page => {
                    if batch.is_some() {
                        return Err(Error::corruption(
                            &name,
                            loc.offset,
                            "page image inside a batch",
                        ));
                    }
                    complete = (end, next_lsn);
                }
                FrameKind::BatchPart | FrameKind::BatchEnd => {
                    let (staged, began, chunks) = batch.get_or_insert_with(|| {
                        let txn = Txn::new(txn.tree.clone(), txn.catalog.clone());
                        (txn, (loc.offset, header.lsn), Vec::new())
                    });
                    let ops = Op::decode_all(Bytes::copy_from_slice(payload))
                        .map_err(|reason| Error::corruption(&name, loc.offset, reason))?;
                    for decoded in ops {
                        let large = is_large(&decoded.op, max_inline).then(|| LargeRef {
                            segment_id,
                            frame_offset: loc.offset,
                            value_offset: u32_len(decoded.value_offset),
                            value_len: match &decoded.op {
                                Op::Put { value, .. } => u32_len(value.len()),
                                _ => 0,
                            },
                        });
                        let op = match decoded.op {
                            // Copy small values out so they do not pin the frame's buffer.
                            Op::Put { key, value } if large.is_none() => Op::Put {
                                key: Bytes::copy_from_slice(&key),
                                value: Bytes::copy_from_slice(&value),
                            },
                            Op::ColdChunk(chunk) => {
                                if !cold.survived(chunk) {
                                    // Written after the last sync and lost with it: this batch
                                    // and everything after it is the torn tail, unless a later
                                    // frame says it was durable.
                                    lost = Some(*began);
                                    batch = None;
                                    return Ok(());
                                }
                                chunks.push(chunk);
                                Op::ColdChunk(chunk)
                            }
                            Op::ColdBytes { loc, bytes } => {
                                // Written after the segment's last sync, they may be lost:
                                // the redo has them. (Past the end of the last complete
                                // batch, they are cut off again below.)
                                if cold.restore(loc, &bytes)? {
                                    restored.insert(loc.segment_id);
                                }
                                chunks.push(loc);
                                Op::ColdBytes { loc, bytes }
                            }
                            op => op,
                        };
                        apply(pages, staged, &op, large)?;
                    }
                    if header.kind == FrameKind::BatchEnd {
                        let (staged, _, chunks) = batch.take().expect("inserted above");
                        txn = staged;
                        for chunk in chunks {
                            let chunk_end = ColdTail {
                                segment_id: chunk.segment_id,
                                offset: chunk.end(),
                            };
                            cold_end = cold_end.max(chunk_end);
                        }
                        complete = (end, next_lsn);
                    }
                }
            }
            // Redo only: page images (of a checkpoint written while commits went on) are
            // stepped over.
            if header.kind != FrameKind::Page {
                bytes += loc.len as u64;
            }
            Ok(())
        })?;
        if let Some((offset, lsn)) = lost {
            if !is_last || claimed_after_lost >= lsn {
                return Err(Error::corruption(
                    &name,
                    offset,
                    "a durable batch refers to a cold chunk that is missing or damaged",
                ));
            }
            complete = (offset, lsn);
            batch = None;
        } else if stop.bad.is_some() {
            let bad_lsn = next_lsn;
            let claimed_durable = stop
                .durable_after_bad
                .is_some_and(|durable| durable >= bad_lsn);
            if !is_last || claimed_durable {
                let reason = stop.bad.as_ref().map(|b| b.describe()).unwrap_or_default();
                return Err(Error::corruption(&name, stop.end, reason));
            }
        }
        if !is_last && batch.is_some() {
            return Err(Error::corruption(
                &name,
                stop.end,
                "batch continues past its segment",
            ));
        }
        let (end, lsn) = complete;
        // The checkpoint's page images after its replay point (a checkpoint writes them while
        // commits go on) were synced before it was: damage there is not a torn tail.
        let cuts_a_page = checkpoint
            .pages
            .iter()
            .any(|(_, loc)| loc.segment_id == segment_id && loc.offset + loc.len as u64 > end);
        if cuts_a_page {
            let reason = stop.bad.as_ref().map(|b| b.describe()).unwrap_or_else(|| {
                format!("the log ends at {end}, before a page image of the checkpoint")
            });
            return Err(Error::corruption(&name, end, reason));
        }
        if is_last && end < storage.len(&name)? {
            // The torn or incomplete tail: cut it off, durably, before anything is appended.
            storage.set_len(&name, end)?;
        }
        tail = LogTail {
            segment_id,
            offset: end,
            next_lsn: lsn,
        };
        next_lsn = lsn;
    }
    // Whatever replay read may sit in the OS cache only; sync it so that every frame
    // written from now on can rightly claim it durable. The same for chunks it restored.
    for id in restored {
        storage.sync(&cold_chunk::segment_name(id))?;
    }
    storage.sync(&segment_name(tail.segment_id))?;
    Ok(Replayed {
        txn,
        tail,
        bytes,
        cold_tail: cold_end,
    })
}

/// Cuts the cold store back to what the recovered state refers to: chunks past the tail were
/// written by batches that did not survive. Segments past the tail's are removed.
fn cut_cold_tail(storage: &dyn Storage, segments: &[u32], tail: ColdTail) -> Result<()> {
    let mut changed = false;
    for id in segments {
        let name = cold_chunk::segment_name(*id);
        if *id > tail.segment_id {
            storage.remove(&name)?;
            changed = true;
        } else if *id == tail.segment_id {
            let len = storage.len(&name)?;
            if len < tail.offset {
                return Err(Error::corruption(
                    &name,
                    len,
                    format!("cold segment ends before its durable tail {}", tail.offset),
                ));
            }
            if len > tail.offset {
                storage.set_len(&name, tail.offset)?;
            }
            // The chunks replayed batches refer to may have reached the OS only (their
            // writer failed or stopped before syncing them): make them durable before any
            // new frame claims those batches durable.
            storage.sync(&name)?;
        }
    }
    if tail.segment_id != 0 && !segments.contains(&tail.segment_id) {
        return Err(Error::corruption(
            cold_chunk::segment_name(tail.segment_id),
            0,
            "cold segment is missing",
        ));
    }
    if changed {
        storage.sync_dir()?;
    }
    Ok(())
}

/// The files the checkpoint's page table names, in one pass over it: each present (a
/// missing one is named with the first page it should hold), and each page file with its
/// header sound and naming it and as long as the last frame the table names in it (a
/// checkpoint's images are synced before the checkpoint that refers to them, so a shorter
/// one was damaged). The last page file is cut back at the first frame past that one that is
/// not whole: the torn images of a checkpoint that did not finish (the file checkpoints were
/// appending to when the process stopped; the next process writes a new one).
fn check_page_files(
    storage: &dyn Storage,
    checkpoint: &Checkpoint,
    segments: &[u32],
    page_files: &[u32],
) -> Result<()> {
    // Per file: the end of its last frame named, and where the first page named in it is.
    let mut named: std::collections::BTreeMap<u32, (u64, crate::page::node::PageId, u64)> =
        Default::default();
    for (id, loc) in &checkpoint.pages {
        let end = loc.offset.saturating_add(u64::from(loc.len));
        let file = named
            .entry(loc.segment_id)
            .or_insert((end, *id, loc.offset));
        file.0 = file.0.max(end);
    }
    for (&file, &(_, page, offset)) in &named {
        let present = match is_page_file(file) {
            true => page_files.contains(&file),
            false => segments.contains(&file),
        };
        if !present {
            return Err(Error::corruption(
                segment_name(file),
                offset,
                format!("segment holding page {page} is missing"),
            ));
        }
    }
    let named: Vec<(u32, u64)> = named
        .into_iter()
        .filter(|(file, _)| is_page_file(*file))
        .map(|(file, (end, _, _))| (file, end))
        .collect();
    let last = named.last().map(|(file, _)| *file);
    for (id, end) in named {
        check_page_file_header(storage, id)?;
        let name = segment_name(id);
        let len = storage.len(&name)?;
        if len < end {
            return Err(Error::corruption(
                &name,
                end,
                "page file shorter than the pages the checkpoint names in it",
            ));
        }
        if Some(id) == last && len > end {
            // Past the last frame named: frames of pages written again since (left as they
            // are), then perhaps the torn images of a checkpoint that did not finish.
            let stop = scan_segment(storage, id, end, |_, _, _| Ok(()))?;
            if stop.end < len {
                storage.set_len(&name, stop.end)?;
                storage.sync(&name)?;
            }
        }
    }
    Ok(())
}
