//! The hot log's segment files as the directory holds them.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::log::{LogTail, parse_segment_name, segment_name};
use crate::storage::Storage;

/// The ids of the hot log segments present, ascending.
pub(crate) fn segment_ids(storage: &dyn Storage) -> Result<Vec<u32>> {
    let mut ids: Vec<u32> = storage
        .list()?
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The hot log segments present, each with its file's length, except the active one (that of
/// `tail`), which counts up to its last frame: it runs on in zeros, extended ahead of the
/// writes.
pub(crate) fn segment_files(storage: &dyn Storage, tail: LogTail) -> Result<BTreeMap<u32, u64>> {
    let mut files = BTreeMap::new();
    for id in segment_ids(storage)? {
        let len = match id == tail.segment_id {
            true => tail.offset,
            false => storage.len(&segment_name(id))?,
        };
        files.insert(id, len);
    }
    Ok(files)
}
