//! Opening a database read-only, also beside a process writing it: its files pinned as
//! they are (`storage::Frozen`), then recovery over that view, which changes nothing on
//! disk and takes no lock.

use std::io;
use std::sync::Arc;

use crate::cold::chunk as cold_chunk;
use crate::error::{Error, Result};
use crate::limits::widths::index;
use crate::log::{parse_page_file_name, parse_segment_name};
use crate::options::Options;
use crate::page::checkpoint::{CHECKPOINT_FILE, MAX_CHECKPOINT_BYTES};
use crate::storage::{Frozen, Storage};
use crate::store::open::recovery::{self, Access};
use crate::store::shared::Shared;

/// How many times an open starts again when the writer replaced its checkpoint and
/// removed what the one pinned needed while the files were being pinned.
const PIN_ATTEMPTS: usize = 8;

/// Opens the database `directory()` gives storage over (a new storage each attempt: the
/// storage keeps the files it opened, and an attempt must see the directory anew),
/// read-only.
pub(in crate::store) fn open(
    directory: &dyn Fn() -> Result<Arc<dyn Storage>>,
    options: &Options,
) -> Result<Shared> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let view = Arc::new(Frozen::new(directory()?));
        if !pin(&view)? {
            if attempt < PIN_ATTEMPTS {
                continue;
            }
            return Err(Error::io(
                "pin",
                view.describe(),
                io::Error::new(
                    io::ErrorKind::Interrupted,
                    format!(
                        "files of the database were removed during each of {attempt} \
                         attempts to open it read-only"
                    ),
                ),
            ));
        }
        match recovery::open(view.clone(), options.clone(), Access::ReadOnly) {
            Ok(shared) => return Ok(shared),
            Err(_) if attempt < PIN_ATTEMPTS && checkpoint_replaced(&view, directory)? => {}
            Err(error) => return Err(error),
        }
    }
}

/// Pins the checkpoint, then the hot log segments and page files listed after it, then the cold segments
/// listed after those: whatever the checkpoint refers to was written
/// before it, and whatever a log frame refers to in the cold store before the frame, so
/// each pin finds what the ones before it refer to. `false` when a file listed was gone by
/// the time it was pinned (the writer removed it: the caller starts again).
fn pin(view: &Frozen) -> Result<bool> {
    if !view.pin(CHECKPOINT_FILE)? {
        return Err(Error::NoDatabase {
            path: view.describe(),
        });
    }
    let mut hot: Vec<(u32, String)> = view
        .list_directory()?
        .into_iter()
        .filter_map(|name| {
            let id = parse_segment_name(&name).or_else(|| parse_page_file_name(&name));
            id.map(|id| (id, name))
        })
        .collect();
    hot.sort();
    for (_, name) in &hot {
        if !view.pin(name)? {
            return Ok(false);
        }
    }
    // Any other file (a checkpoint being written, say) is no part of the database's state.
    let cold: Vec<String> = view
        .list_directory()?
        .into_iter()
        .filter(|name| cold_chunk::parse_segment_name(name).is_some())
        .collect();
    for name in &cold {
        if !view.pin(name)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether the directory's checkpoint is no longer the one `view` pinned.
fn checkpoint_replaced(
    view: &Frozen,
    directory: &dyn Fn() -> Result<Arc<dyn Storage>>,
) -> Result<bool> {
    let now = directory()?;
    let (pinned_len, len) = match (view.len(CHECKPOINT_FILE), now.len(CHECKPOINT_FILE)) {
        (Ok(pinned_len), Ok(len)) => (pinned_len, len),
        // Gone from the directory: replaced by none, which only a person does.
        _ => return Ok(false),
    };
    if pinned_len != len {
        return Ok(true);
    }
    if len > MAX_CHECKPOINT_BYTES {
        return Ok(false);
    }
    let pinned = view.read_vec(CHECKPOINT_FILE, 0, index(len))?;
    Ok(now.read_vec(CHECKPOINT_FILE, 0, index(len))? != pinned)
}
