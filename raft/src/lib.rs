//! skewdb as the storage of an [openraft] 0.9 cluster.
//!
//! [`LogStore`] keeps the Raft log, the vote and the purge point in one skewdb database,
//! each append durable before openraft hears it is. [`StateMachine`] keeps the replicated
//! state in a second one: a log entry is a [`Proposal`] of one or more [`Request`]s (puts,
//! pushes, removes, deletes, bucket expiry: the operations of `skewdb exec`), each applied
//! as one atomic batch with the entry's progress (its log id, with the last), so the state
//! and what it has applied never disagree. Its snapshots
//! are skewdb backups (`Db::backup`) of one consistent version; installing one builds a new
//! database from it and swaps it in for the old. Partitioning parents by key over replica
//! groups keeps every pattern's operations in one group: see `DISTRIBUTION.md`.
//!
//! Layout of a node's directory: `log/` (the log database), `state/` (the state machine's
//! database), `snapshot.json` and `snapshots/` (the current snapshot's meta and backup
//! file, and a snapshot being received, `*.partial`), and `rejoining` while a node that
//! started on an empty directory catches up ([`Rejoin`]).

// openraft's traits return its `StorageError` (over 200 bytes) by value; the helpers that
// build it return it the same way rather than boxing what every caller unboxes again.
#![allow(clippy::result_large_err)]

pub mod api;
pub mod client;
mod error;
pub mod exec;
mod log_store;
pub mod net;
#[doc(hidden)]
pub mod network;
pub mod node;
mod proposer;
pub mod rejoin;
mod request;
mod state_machine;

use std::path::Path;

pub use log_store::LogStore;
pub use rejoin::Rejoin;
pub use request::{ArrayDecl, Op, Proposal, Request, Response};
pub use state_machine::{RAFT_COLLECTION, SnapshotBuilder, StateMachine, StateReader};

/// A node's id in the cluster.
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The types this storage serves openraft with: an entry is a [`Proposal`] of one or
    /// more requests (batches of skewdb operations), answered with one [`Response`] per
    /// request; snapshots are skewdb backup files, sent and received in chunks from and to
    /// the file (never whole in memory).
    pub TypeConfig:
        D = Proposal,
        R = Vec<Response>,
        SnapshotData = tokio::fs::File,
);

/// openraft's storage error, for this storage's node ids.
pub type StorageError = openraft::StorageError<NodeId>;

/// Opens (or creates) a node's storage in `dir`: its log store and its state machine.
pub fn open(dir: impl AsRef<Path>) -> Result<(LogStore, StateMachine), StorageError> {
    let dir = dir.as_ref();
    // Before anything is made in it: whether the directory was empty.
    let rejoin = std::sync::Arc::new(Rejoin::open(dir)?);
    std::fs::create_dir_all(dir).map_err(|e| error::io_error(e, "create the node directory"))?;
    let log = LogStore::open(&dir.join("log"))?;
    let mut state = StateMachine::open(dir)?;
    state.set_rejoin(rejoin);
    Ok((log, state))
}
