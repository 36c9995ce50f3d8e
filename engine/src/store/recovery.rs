//! Opening a database: lock, read the last checkpoint, replay the redo after it, cut off a
//! torn tail. See `format-spec/recovery.md`, which follows this code step by step.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

use super::{Shared, Txn, Version, Writer, WriterCounters, apply};
use crate::cache::PageCache;
use crate::catalog::Catalog;
use crate::log::frame::SEGMENT_HEADER_BYTES;
use crate::log::{
    FrameKind, HotLog, LogTail, parse_segment_name, read_segment_header, scan_segment, segment_name,
};
use crate::page::checkpoint::{CHECKPOINT_FILE, CHECKPOINT_TEMP_FILE, Checkpoint};
use crate::page::node::LargeRef;
use crate::page::redo::Op;
use crate::page::table::Slot;
use crate::page::tree::Tree;
use crate::page::{MAX_PAGE_BYTES, MIN_PAGE_BYTES, PageStore, max_inline_record};
use crate::storage::Storage;
use crate::{Error, Options, Result};

pub(super) fn open(storage: Arc<dyn Storage>, options: Options) -> Result<Shared> {
    options.validate()?;
    let lock = storage.lock()?;
    let names: BTreeSet<String> = storage.list()?.into_iter().collect();
    if names.contains(CHECKPOINT_TEMP_FILE) {
        storage.remove(CHECKPOINT_TEMP_FILE)?;
    }
    let segments: Vec<u32> = names.iter().filter_map(|n| parse_segment_name(n)).collect();
    let cache = Arc::new(PageCache::new(options.cache_bytes));
    if !names.contains(CHECKPOINT_FILE) {
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
    for (id, loc) in &checkpoint.pages {
        if !segments.contains(&loc.segment_id) {
            return Err(Error::corruption(
                segment_name(loc.segment_id),
                loc.offset,
                format!("segment holding page {id} is missing"),
            ));
        }
    }
    let pages = PageStore {
        storage: storage.clone(),
        cache,
        page_bytes,
    };
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
        Tree {
            root: checkpoint.root,
            next_page_id: checkpoint.next_page_id,
            table,
        }
    };
    let txn = Txn {
        tree,
        catalog: Arc::new(checkpoint.catalog.clone()),
    };
    let replayed = replay(&pages, &segments, checkpoint.replay_from, txn)?;
    let log = HotLog::resume(storage.clone(), replayed.tail, options.segment_bytes);
    let writer = Writer {
        log,
        checkpoint_tail: checkpoint.replay_from,
        bytes_since_checkpoint: replayed.bytes,
        checkpoint_sequence: checkpoint.sequence,
        counters: WriterCounters {
            replayed_bytes: replayed.bytes,
            ..WriterCounters::default()
        },
    };
    Ok(Shared {
        pages,
        options,
        current: RwLock::new(Arc::new(Version {
            tree: replayed.txn.tree,
            catalog: replayed.txn.catalog,
            commits: 0,
        })),
        writer: Mutex::new(writer),
        queue: Mutex::new(Vec::new()),
        _lock: lock,
    })
}

/// A new database, or one whose creation stopped before its first checkpoint (its log
/// then holds nothing but segment headers, which are discarded).
fn create(
    storage: Arc<dyn Storage>,
    options: Options,
    lock: Box<dyn crate::storage::LockGuard>,
    cache: Arc<PageCache>,
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
    let log = HotLog::create(storage.clone(), 1, 1, options.segment_bytes)?;
    let tail = log.tail();
    let checkpoint = Checkpoint {
        sequence: 0,
        page_bytes: options.page_bytes as u32,
        replay_from: tail,
        root: 0,
        next_page_id: 1,
        catalog: Catalog::default(),
        pages: Vec::new(),
    };
    checkpoint.write(storage.as_ref())?;
    let pages = PageStore {
        storage,
        cache,
        page_bytes: options.page_bytes,
    };
    Ok(Shared {
        pages,
        current: RwLock::new(Arc::new(Version {
            tree: Tree::new(),
            catalog: Arc::new(Catalog::default()),
            commits: 0,
        })),
        writer: Mutex::new(Writer {
            log,
            checkpoint_tail: tail,
            bytes_since_checkpoint: 0,
            checkpoint_sequence: 0,
            counters: WriterCounters::default(),
        }),
        queue: Mutex::new(Vec::new()),
        options,
        _lock: lock,
    })
}

struct Replayed {
    txn: Txn,
    tail: LogTail,
    bytes: u64,
}

/// Replays every complete batch from `from` to the end of the log and cuts off what
/// follows the last complete one. A bad frame is a torn tail only when it is in the last
/// segment and no later frame claims it was durable; otherwise it is corruption.
fn replay(pages: &PageStore, segments: &[u32], from: LogTail, mut txn: Txn) -> Result<Replayed> {
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
            Err(error)
                if error.is_corruption()
                    && is_last
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
        // The batch being read (its frames so far) and the end of the last complete one.
        let mut batch: Option<Txn> = None;
        let mut complete = (start, next_lsn);
        let stop = scan_segment(storage, segment_id, start, |header, loc, payload| {
            if header.lsn != next_lsn {
                return Err(Error::corruption(
                    &name,
                    loc.offset,
                    format!("lsn {} where {next_lsn} was expected", header.lsn),
                ));
            }
            next_lsn += 1;
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
                    let staged = batch.get_or_insert_with(|| Txn {
                        tree: txn.tree.clone(),
                        catalog: txn.catalog.clone(),
                    });
                    let ops = Op::decode_all(Bytes::copy_from_slice(payload))
                        .map_err(|reason| Error::corruption(&name, loc.offset, reason))?;
                    for decoded in ops {
                        let large = match &decoded.op {
                            Op::PutRecord { record, .. } if record.len() > max_inline => {
                                Some(LargeRef {
                                    segment_id,
                                    frame_offset: loc.offset,
                                    value_offset: decoded.record_offset as u32,
                                    value_len: record.len() as u32,
                                })
                            }
                            _ => None,
                        };
                        let op = match decoded.op {
                            // Copy small records out so they do not pin the frame's buffer.
                            Op::PutRecord {
                                collection,
                                key,
                                record,
                            } if large.is_none() => Op::PutRecord {
                                collection,
                                key: Bytes::copy_from_slice(&key),
                                record: Bytes::copy_from_slice(&record),
                            },
                            op => op,
                        };
                        apply(pages, staged, &op, large)?;
                    }
                    if header.kind == FrameKind::BatchEnd {
                        txn = batch.take().expect("inserted above");
                        complete = (end, next_lsn);
                    }
                }
            }
            bytes += loc.len as u64;
            Ok(())
        })?;
        if stop.bad.is_some() {
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
    // written from now on can rightly claim it durable.
    storage.sync(&segment_name(tail.segment_id))?;
    Ok(Replayed { txn, tail, bytes })
}
