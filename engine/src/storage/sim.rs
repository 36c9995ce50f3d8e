//! An in-memory directory that can fail the Nth operation and produce crash images.
//!
//! Model of the media: each file keeps the bytes made durable by its last `sync` and the
//! writes (and length changes) issued since. A crash image keeps the durable bytes and each
//! later write independently kept whole, dropped, or torn at a 512-byte sector boundary
//! (a prefix of its sectors survives). Directory operations (create, rename, remove) are
//! journaled in order: an image keeps the entries made durable by the last `sync_dir` plus
//! some prefix of the operations issued since.

#![allow(
    clippy::cast_possible_truncation,
    reason = "a simulated file lives in memory: its offsets index it"
)]

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;

use super::seam::{LockGuard, Storage};
use crate::error::{Error, Result};

/// The sector size at which a crash tears a write.
pub const SECTOR_BYTES: u64 = 512;

#[derive(Clone, Debug)]
enum Pending {
    Write { offset: u64, data: Arc<Vec<u8>> },
    SetLen(u64),
}

#[derive(Clone, Debug, Default)]
struct Inode {
    data: Arc<Vec<u8>>,
    durable: Arc<Vec<u8>>,
    pending: Vec<Pending>,
}

#[derive(Clone, Debug)]
enum DirOp {
    Link(String, usize),
    Rename(String, String),
    Remove(String),
}

/// A frozen copy of the simulated directory, from which crash images are drawn.
#[derive(Clone, Debug, Default)]
pub struct SimSnapshot {
    inodes: Vec<Inode>,
    dir: BTreeMap<String, usize>,
    dir_durable: BTreeMap<String, usize>,
    dir_pending: Vec<DirOp>,
}

#[derive(Debug, Default)]
struct State {
    files: SimSnapshot,
    operations: u64,
    fail_at: Option<u64>,
    fail_persistent: bool,
    locked: bool,
    capture_syncs: bool,
    captured: Vec<SimSnapshot>,
}

/// The simulated directory. Clones share the same state.
#[derive(Clone, Default)]
pub struct SimStorage {
    state: Arc<Mutex<State>>,
}

struct SimLock {
    state: Arc<Mutex<State>>,
}

impl LockGuard for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        self.state.lock().locked = false;
    }
}

/// A small deterministic generator so that crash images are reproducible from a seed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 { 0 } else { self.next() % bound }
    }
}

fn apply_write(data: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let end = offset as usize + bytes.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[offset as usize..end].copy_from_slice(bytes);
}

impl SimSnapshot {
    /// The image a power loss at this moment could leave, chosen by `seed`.
    /// Seed 0 keeps every write (as a process crash would); other seeds vary.
    pub fn crash_image(&self, seed: u64) -> SimStorage {
        let mut rng = SplitMix(seed);
        let keep_all = seed == 0;
        let mut inodes = Vec::with_capacity(self.inodes.len());
        for inode in &self.inodes {
            let mut data = inode.durable.as_ref().clone();
            for pending in &inode.pending {
                let choice = if keep_all { 0 } else { rng.below(3) };
                match pending {
                    Pending::SetLen(len) => {
                        if choice != 1 {
                            data.resize(*len as usize, 0);
                        }
                    }
                    Pending::Write {
                        offset,
                        data: bytes,
                    } => match choice {
                        0 => apply_write(&mut data, *offset, bytes),
                        1 => {}
                        _ => {
                            // Keep the sectors up to a random sector boundary inside the write.
                            let end = offset + bytes.len() as u64;
                            let first_boundary = (offset / SECTOR_BYTES + 1) * SECTOR_BYTES;
                            let boundaries: Vec<u64> = (0..)
                                .map(|i| first_boundary + i * SECTOR_BYTES)
                                .take_while(|b| *b < end)
                                .collect();
                            if !boundaries.is_empty() {
                                let cut = boundaries[rng.below(boundaries.len() as u64) as usize];
                                let kept = (cut - offset) as usize;
                                apply_write(&mut data, *offset, &bytes[..kept]);
                            }
                        }
                    },
                }
            }
            let data = Arc::new(data);
            inodes.push(Inode {
                data: data.clone(),
                durable: data,
                pending: Vec::new(),
            });
        }
        let mut dir = self.dir_durable.clone();
        let kept_ops = if keep_all {
            self.dir_pending.len()
        } else {
            rng.below(self.dir_pending.len() as u64 + 1) as usize
        };
        for op in &self.dir_pending[..kept_ops] {
            match op {
                DirOp::Link(name, inode) => {
                    dir.insert(name.clone(), *inode);
                }
                DirOp::Rename(from, to) => {
                    if let Some(inode) = dir.remove(from) {
                        dir.insert(to.clone(), inode);
                    }
                }
                DirOp::Remove(name) => {
                    dir.remove(name);
                }
            }
        }
        let files = SimSnapshot {
            inodes,
            dir_durable: dir.clone(),
            dir,
            dir_pending: Vec::new(),
        };
        SimStorage {
            state: Arc::new(Mutex::new(State {
                files,
                ..State::default()
            })),
        }
    }

    /// Total bytes of all files in the directory.
    pub fn total_bytes(&self) -> u64 {
        self.dir
            .values()
            .map(|inode| self.inodes[*inode].data.len() as u64)
            .sum()
    }
}

fn injected(op: &'static str, name: &str) -> Error {
    Error::io(op, name, io::Error::other("injected fault"))
}

fn not_found(op: &'static str, name: &str) -> Error {
    Error::io(op, name, io::Error::from(io::ErrorKind::NotFound))
}

impl SimStorage {
    /// An empty simulated directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fails operation number `n` (counting from 1 after this call) and, when `persistent`,
    /// every operation after it.
    pub fn fail_at(&self, n: u64, persistent: bool) {
        let mut state = self.state.lock();
        state.fail_at = Some(state.operations + n);
        state.fail_persistent = persistent;
    }

    /// Stops injecting faults.
    pub fn clear_faults(&self) {
        let mut state = self.state.lock();
        state.fail_at = None;
        state.fail_persistent = false;
    }

    /// The number of operations performed so far.
    pub fn operations(&self) -> u64 {
        self.state.lock().operations
    }

    /// When on, a snapshot is kept just before every file or directory sync.
    pub fn capture_syncs(&self, on: bool) {
        self.state.lock().capture_syncs = on;
    }

    /// The number of snapshots captured so far.
    pub fn captured_count(&self) -> usize {
        self.state.lock().captured.len()
    }

    /// Takes the captured snapshots, leaving none.
    pub fn take_captured(&self) -> Vec<SimSnapshot> {
        std::mem::take(&mut self.state.lock().captured)
    }

    /// A frozen copy of the directory now.
    pub fn snapshot(&self) -> SimSnapshot {
        self.state.lock().files.clone()
    }

    /// The image a power loss now could leave (see [`SimSnapshot::crash_image`]).
    pub fn crash_image(&self, seed: u64) -> SimStorage {
        self.snapshot().crash_image(seed)
    }

    /// The current bytes of a file, bypassing fault injection (for tests that damage files).
    pub fn file_bytes(&self, name: &str) -> Option<Vec<u8>> {
        let state = self.state.lock();
        let inode = *state.files.dir.get(name)?;
        Some(state.files.inodes[inode].data.as_ref().clone())
    }

    /// Replaces a file's bytes, durably, bypassing fault injection (for tests that damage files).
    pub fn set_file_bytes(&self, name: &str, bytes: Vec<u8>) {
        let mut state = self.state.lock();
        let files = &mut state.files;
        let data = Arc::new(bytes);
        if let Some(inode) = files.dir.get(name).copied() {
            files.inodes[inode] = Inode {
                data: data.clone(),
                durable: data,
                pending: Vec::new(),
            };
        }
    }

    /// Counts an operation and decides whether it fails.
    fn begin(&self, state: &mut State, op: &'static str, name: &str) -> Result<()> {
        state.operations += 1;
        if let Some(at) = state.fail_at
            && (state.operations == at || (state.fail_persistent && state.operations > at))
        {
            return Err(injected(op, name));
        }
        Ok(())
    }

    fn with_inode<T>(
        &self,
        op: &'static str,
        name: &str,
        f: impl FnOnce(&mut Inode) -> Result<T>,
    ) -> Result<T> {
        let mut state = self.state.lock();
        self.begin(&mut state, op, name)?;
        let inode = *state
            .files
            .dir
            .get(name)
            .ok_or_else(|| not_found(op, name))?;
        f(&mut state.files.inodes[inode])
    }
}

impl Storage for SimStorage {
    fn describe(&self) -> String {
        "simulation".to_string()
    }

    fn lock(&self) -> Result<Box<dyn LockGuard>> {
        let mut state = self.state.lock();
        if state.locked {
            return Err(Error::Locked {
                path: self.describe(),
            });
        }
        state.locked = true;
        Ok(Box::new(SimLock {
            state: self.state.clone(),
        }))
    }

    fn list(&self) -> Result<Vec<String>> {
        let mut state = self.state.lock();
        self.begin(&mut state, "list", "simulation")?;
        Ok(state.files.dir.keys().cloned().collect())
    }

    fn create(&self, name: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.begin(&mut state, "create", name)?;
        let files = &mut state.files;
        let inode = files.inodes.len();
        files.inodes.push(Inode::default());
        files.dir.insert(name.to_string(), inode);
        files.dir_pending.push(DirOp::Link(name.to_string(), inode));
        Ok(())
    }

    fn len(&self, name: &str) -> Result<u64> {
        self.with_inode("stat", name, |inode| Ok(inode.data.len() as u64))
    }

    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.with_inode("read", name, |inode| {
            let end = offset.checked_add(buf.len() as u64);
            match end {
                Some(end) if end <= inode.data.len() as u64 => {
                    buf.copy_from_slice(&inode.data[offset as usize..end as usize]);
                    Ok(())
                }
                _ => Err(Error::io(
                    "read",
                    name,
                    io::Error::from(io::ErrorKind::UnexpectedEof),
                )),
            }
        })
    }

    fn write_at(&self, name: &str, offset: u64, data: &[u8]) -> Result<()> {
        self.with_inode("write", name, |inode| {
            apply_write(Arc::make_mut(&mut inode.data), offset, data);
            inode.pending.push(Pending::Write {
                offset,
                data: Arc::new(data.to_vec()),
            });
            Ok(())
        })
    }

    fn set_len(&self, name: &str, len: u64) -> Result<()> {
        self.with_inode("set length", name, |inode| {
            Arc::make_mut(&mut inode.data).resize(len as usize, 0);
            inode.pending.push(Pending::SetLen(len));
            Ok(())
        })
    }

    fn sync(&self, name: &str) -> Result<()> {
        let mut state = self.state.lock();
        if state.capture_syncs {
            let snapshot = state.files.clone();
            state.captured.push(snapshot);
        }
        self.begin(&mut state, "sync", name)?;
        let inode = *state
            .files
            .dir
            .get(name)
            .ok_or_else(|| not_found("sync", name))?;
        let inode = &mut state.files.inodes[inode];
        inode.durable = inode.data.clone();
        inode.pending.clear();
        Ok(())
    }

    fn sync_dir(&self) -> Result<()> {
        let mut state = self.state.lock();
        if state.capture_syncs {
            let snapshot = state.files.clone();
            state.captured.push(snapshot);
        }
        self.begin(&mut state, "sync directory", "simulation")?;
        let files = &mut state.files;
        files.dir_durable = files.dir.clone();
        files.dir_pending.clear();
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.begin(&mut state, "rename", from)?;
        let files = &mut state.files;
        let inode = files
            .dir
            .remove(from)
            .ok_or_else(|| not_found("rename", from))?;
        files.dir.insert(to.to_string(), inode);
        files
            .dir_pending
            .push(DirOp::Rename(from.to_string(), to.to_string()));
        Ok(())
    }

    fn remove(&self, name: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.begin(&mut state, "remove", name)?;
        let files = &mut state.files;
        if files.dir.remove(name).is_some() {
            files.dir_pending.push(DirOp::Remove(name.to_string()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_write_may_vanish_synced_write_stays() {
        let sim = SimStorage::new();
        sim.create("a").unwrap();
        sim.sync_dir().unwrap();
        sim.write_at("a", 0, &[1u8; 1024]).unwrap();
        sim.sync("a").unwrap();
        sim.write_at("a", 1024, &[2u8; 2048]).unwrap();
        let mut lengths = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let image = sim.crash_image(seed);
            let bytes = image.file_bytes("a").unwrap();
            assert!(bytes.len() >= 1024);
            assert!(bytes[..1024].iter().all(|b| *b == 1));
            assert_eq!(bytes.len() % 512, 0, "torn only at sector boundaries");
            assert!(bytes[1024..].iter().all(|b| *b == 2));
            lengths.insert(bytes.len());
        }
        assert!(lengths.contains(&1024) && lengths.contains(&3072) && lengths.len() > 2);
    }

    #[test]
    fn created_file_needs_directory_sync() {
        let sim = SimStorage::new();
        sim.create("a").unwrap();
        sim.write_at("a", 0, b"x").unwrap();
        sim.sync("a").unwrap();
        let absent = (1..32).any(|seed| sim.crash_image(seed).file_bytes("a").is_none());
        assert!(absent);
        sim.sync_dir().unwrap();
        assert!((0..32).all(|seed| sim.crash_image(seed).file_bytes("a").is_some()));
    }

    #[test]
    fn fault_once_and_persistent() {
        let sim = SimStorage::new();
        sim.create("a").unwrap();
        sim.fail_at(2, false);
        sim.write_at("a", 0, b"1").unwrap();
        assert!(sim.write_at("a", 0, b"2").is_err());
        sim.write_at("a", 0, b"3").unwrap();
        sim.fail_at(1, true);
        assert!(sim.sync("a").is_err());
        assert!(sim.sync("a").is_err());
        sim.clear_faults();
        sim.sync("a").unwrap();
    }

    #[test]
    fn lock_is_exclusive_until_dropped() {
        let sim = SimStorage::new();
        let guard = sim.lock().unwrap();
        assert!(matches!(sim.lock(), Err(Error::Locked { .. })));
        drop(guard);
        sim.lock().unwrap();
    }
}
