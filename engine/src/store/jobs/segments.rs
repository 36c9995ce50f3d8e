//! The segment files of both tiers as the directory holds them, and which of them are
//! mostly dead (cleaning) or no longer needed: what the checkpoint and compaction share.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::Result;
use crate::log::{LogTail, is_page_file, parse_page_file_name, parse_segment_name, segment_name};
use crate::page::node::PageId;
use crate::page::table::Slot;
use crate::page::tree::Tree;
use crate::storage::Storage;

/// The ids of the hot log segments present, ascending.
pub(crate) fn segment_ids(storage: &dyn Storage) -> Result<Vec<u32>> {
    ids_named(storage, parse_segment_name)
}

/// The segment ids of the page files present (their numbers with the top bit set),
/// ascending.
pub(crate) fn page_file_ids(storage: &dyn Storage) -> Result<Vec<u32>> {
    ids_named(storage, parse_page_file_name)
}

/// The ids `parse` finds in the names of the files present, ascending.
fn ids_named(storage: &dyn Storage, parse: fn(&str) -> Option<u32>) -> Result<Vec<u32>> {
    let mut ids: Vec<u32> = storage.list()?.iter().filter_map(|n| parse(n)).collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The length of file `name`, or `None` when it is gone: a checkpoint removes the files it
/// no longer needs beside other work, so a file listed a moment ago may be gone.
pub(crate) fn len_if_present(storage: &dyn Storage, name: &str) -> Result<Option<u64>> {
    match storage.len(name) {
        Ok(len) => Ok(Some(len)),
        Err(_) if !storage.list()?.iter().any(|listed| listed == name) => Ok(None),
        Err(error) => Err(error),
    }
}

/// The hot tier's files present: the log segments and the page files, each with its file's
/// length, except the active segment (that of `tail`), which counts up to its last frame: it
/// runs on in zeros, extended ahead of the writes.
pub(crate) fn segment_files(storage: &dyn Storage, tail: LogTail) -> Result<BTreeMap<u32, u64>> {
    let mut files = BTreeMap::new();
    for id in segment_ids(storage)?
        .into_iter()
        .chain(page_file_ids(storage)?)
    {
        let len = match id == tail.segment_id {
            true => Some(tail.offset),
            false => len_if_present(storage, &segment_name(id))?,
        };
        if let Some(len) = len {
            files.insert(id, len);
        }
    }
    Ok(files)
}

/// A sealed log segment whose live pages fill less than this share of it is cleaned.
pub(crate) const CLEAN_BELOW: f64 = 0.5;

/// `Db::compact` cleans every sealed log segment whose live pages fill less than this share
/// of it: the user asked for the space back. (A bulk load leaves segments in which redo, dead
/// once checkpointed, and page images alternate, most of them over [`CLEAN_BELOW`].)
const COMPACT_CLEAN_BELOW: f64 = 0.8;

/// Which sealed log segments a checkpoint cleans: copies their live pages to the tail, so
/// that they can be removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clean {
    /// None.
    Nothing,
    /// Those whose live pages fill less than [`CLEAN_BELOW`] of them.
    Sparse,
    /// Those under [`COMPACT_CLEAN_BELOW`] (`Db::compact`).
    Compact,
}

impl Clean {
    /// What automatic checkpoints clean: sparse segments when the options reclaim space.
    pub(crate) fn automatic(reclaim: bool) -> Clean {
        match reclaim {
            true => Clean::Sparse,
            false => Clean::Nothing,
        }
    }

    /// The share of live bytes under which a segment is cleaned.
    pub(crate) fn below(self) -> f64 {
        match self {
            Clean::Nothing => 0.0,
            Clean::Sparse => CLEAN_BELOW,
            Clean::Compact => COMPACT_CLEAN_BELOW,
        }
    }
}

/// Page bytes a checkpoint copies out of sparse segments, at most (one segment at least).
pub(crate) const CLEAN_BYTES: u64 = 8 * 1024 * 1024;

/// A page file smaller than this is small: see [`MAX_SMALL_PAGE_FILES`].
pub(crate) const SMALL_PAGE_FILE_BYTES: u64 = 1024 * 1024;

/// Small page files are left alone up to this many; past it, checkpoints that clean merge
/// them into their own page file (within `CLEAN_BYTES`, the oldest first).
pub(crate) const MAX_SMALL_PAGE_FILES: usize = 8;

/// A sealed log segment that is mostly dead: what of it the tree still needs.
pub(crate) struct Sparse {
    pub(crate) segment_id: u32,
    pub(crate) page_bytes: u64,
    pub(crate) pages: Vec<PageId>,
    /// Bytes of large records the tree refers to in it.
    pub(crate) large_bytes: u64,
}

impl Sparse {
    pub(crate) fn live_bytes(&self) -> u64 {
        self.page_bytes + self.large_bytes
    }
}

/// Log segments before `tail_segment` (the one being appended to), and page files but the
/// one checkpoints append to (`open_page_file`), that are mostly dead (live page and
/// large-record bytes under the share of the file `clean` names), sparsest first.
pub(crate) fn sparse_segments(
    storage: &dyn Storage,
    tree: &Tree,
    (tail_segment, open_page_file): (u32, Option<u32>),
    clean: Clean,
) -> Result<Vec<Sparse>> {
    let below = clean.below();
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
            && (loc.segment_id < tail_segment || is_page_file(loc.segment_id))
            && Some(loc.segment_id) != open_page_file
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
    let mut small = Vec::new();
    for (segment_id, segment) in live {
        let name = crate::log::segment_name(segment_id);
        let Some(file_bytes) = len_if_present(storage, &name)? else {
            continue;
        };
        let ratio = segment.live_bytes() as f64 / file_bytes.max(1) as f64;
        if ratio < below {
            sparse.push((ratio, segment));
        } else if is_page_file(segment_id) && file_bytes < SMALL_PAGE_FILE_BYTES {
            small.push(segment);
        }
    }
    // Small page files (a checkpoint of a few pages writes one: at a close, say) are merged
    // into the next one once there are more than a few, so that they do not pile up.
    if below > 0.0 && small.len() > MAX_SMALL_PAGE_FILES {
        sparse.extend(small.into_iter().map(|segment| (0.0, segment)));
    }
    sparse.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(sparse.into_iter().map(|(_, segment)| segment).collect())
}

/// Cold segments before the cold tail's that a checkpoint does not need, given the segments
/// its chunk index refers to.
pub(crate) fn unneeded_cold(
    storage: &dyn Storage,
    needed: &BTreeSet<u32>,
    tail: u32,
) -> Result<Vec<String>> {
    Ok(storage
        .list()?
        .into_iter()
        .filter(|name| {
            crate::cold::chunk::parse_segment_name(name)
                .is_some_and(|id| id < tail && !needed.contains(&id))
        })
        .collect())
}
