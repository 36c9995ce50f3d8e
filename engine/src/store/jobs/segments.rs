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

/// The length of file `name`, or `None` when it is gone: a checkpoint removes the files it
/// no longer needs beside other work, so a file listed a moment ago may be gone.
pub(crate) fn len_if_present(storage: &dyn Storage, name: &str) -> Result<Option<u64>> {
    match storage.len(name) {
        Ok(len) => Ok(Some(len)),
        Err(_) if !storage.list()?.iter().any(|listed| listed == name) => Ok(None),
        Err(error) => Err(error),
    }
}

/// The hot log segments present, each with its file's length, except the active one (that of
/// `tail`), which counts up to its last frame: it runs on in zeros, extended ahead of the
/// writes.
pub(crate) fn segment_files(storage: &dyn Storage, tail: LogTail) -> Result<BTreeMap<u32, u64>> {
    let mut files = BTreeMap::new();
    for id in segment_ids(storage)? {
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
