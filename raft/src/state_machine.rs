//! The replicated state in a skewdb database, with what it has applied beside it.
//!
//! The database in `state/` holds the application's collections and `_raft`, whose parents
//! `applied` (the last applied log id) and `membership` (the last membership applied) are
//! written in the same atomic batch as each entry's operations. Snapshots: a skewdb backup
//! of one version (`snapshots/ID.backup`) and its meta (`snapshot.json`, replaced by
//! rename). Installing one restores it to `state.new/` and swaps it in (`state/` renamed
//! to `state.old/`, `state.new/` to `state/`); opening finishes or undoes a swap a crash
//! interrupted.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder,
    SnapshotMeta, StoredMembership,
};
use serde::{Deserialize, Serialize};
use skewdb::{CollectionSpec, Db, Durability, Options};

use crate::error::{decode, io_error, storage};
use crate::{NodeId, Response, StorageError, TypeConfig};

/// The collection holding what the state machine has applied.
pub const RAFT_COLLECTION: &str = "_raft";
const APPLIED: &str = "applied";
const MEMBERSHIP: &str = "membership";

const STATE: &str = "state";
const STATE_NEW: &str = "state.new";
const STATE_OLD: &str = "state.old";
const SNAPSHOTS: &str = "snapshots";
const SNAPSHOT_META: &str = "snapshot.json";

type Membership = StoredMembership<NodeId, BasicNode>;

/// The current snapshot as `snapshot.json` records it.
#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<NodeId, BasicNode>,
    /// The backup file, in `snapshots/`.
    file: String,
}

/// A node's state machine.
pub struct StateMachine {
    dir: PathBuf,
    /// The database, shared with readers; installing a snapshot swaps it.
    state: StateReader,
    applied: Option<LogId<NodeId>>,
    membership: Membership,
}

fn state_options() -> Options {
    // Each applied entry durable when apply returns, with the log id beside it.
    Options::new().durability(Durability::Immediate)
}

fn fs<T>(result: std::io::Result<T>, what: &str) -> Result<T, StorageError> {
    result.map_err(|e| io_error(e, what))
}

impl StateMachine {
    /// Opens (or creates) the state machine in the node directory `dir`.
    pub fn open(dir: &Path) -> Result<StateMachine, StorageError> {
        let (state, new, old) = (dir.join(STATE), dir.join(STATE_NEW), dir.join(STATE_OLD));
        // A swap the crash interrupted: `state.new` is whole once it exists under that
        // name (a restore renames it into place only when done), so finish the swap.
        if new.exists() && !state.exists() {
            fs(std::fs::rename(&new, &state), "finish a snapshot's swap")?;
        }
        let building = dir.join(format!("{STATE_NEW}.restoring"));
        for leftover in [&new, &old, &building] {
            if leftover.exists() {
                fs(
                    std::fs::remove_dir_all(leftover),
                    "remove a swap's leftovers",
                )?;
            }
        }
        fs(
            std::fs::create_dir_all(dir.join(SNAPSHOTS)),
            "create snapshots/",
        )?;
        let db = Db::open(&state, state_options())
            .map_err(storage(ErrorSubject::StateMachine, ErrorVerb::Read))?;
        let mut machine = StateMachine {
            dir: dir.to_path_buf(),
            state: StateReader {
                shared: Arc::new(Mutex::new(db)),
            },
            applied: None,
            membership: Membership::default(),
        };
        machine.load()?;
        Ok(machine)
    }

    /// Reads what the database says it has applied.
    fn load(&mut self) -> Result<(), StorageError> {
        let subject = ErrorSubject::StateMachine;
        let raft = self
            .state
            .db()
            .create_collection(CollectionSpec::new(RAFT_COLLECTION))
            .map_err(storage(subject.clone(), ErrorVerb::Write))?;
        let read = |name: &str| -> Result<Option<Vec<u8>>, StorageError> {
            let document = raft
                .get_projected(name, &[])
                .map_err(storage(ErrorSubject::StateMachine, ErrorVerb::Read))?;
            Ok(document.map(|d| d.body().to_vec()))
        };
        self.applied = match read(APPLIED)? {
            Some(body) => serde_json::from_slice(&body).map_err(decode(subject.clone()))?,
            None => None,
        };
        self.membership = match read(MEMBERSHIP)? {
            Some(body) => serde_json::from_slice(&body).map_err(decode(subject))?,
            None => Membership::default(),
        };
        Ok(())
    }

    /// A handle for reads of the state this machine has applied, which stays valid when
    /// openraft owns the machine and across snapshot installs.
    pub fn reader(&self) -> StateReader {
        self.state.clone()
    }

    /// Applies one entry: its request's operations, the log id and any membership, in one
    /// batch. A request the engine refuses (a record over 16 MiB, an unknown collection) is
    /// refused alike on every replica: then only the log id is recorded.
    fn apply_one(&mut self, entry: Entry<TypeConfig>) -> Result<Response, StorageError> {
        let subject = ErrorSubject::Apply(entry.log_id);
        let applied = serde_json::to_vec(&Some(entry.log_id)).map_err(decode(subject.clone()))?;
        let mut membership = None;
        if let EntryPayload::Membership(m) = &entry.payload {
            membership = Some(Membership::new(Some(entry.log_id), m.clone()));
        }
        let meta = |batch: &mut skewdb::Batch| -> Result<(), StorageError> {
            batch.put(RAFT_COLLECTION, APPLIED, &applied);
            if let Some(m) = &membership {
                let body = serde_json::to_vec(m).map_err(decode(subject.clone()))?;
                batch.put(RAFT_COLLECTION, MEMBERSHIP, body);
            }
            Ok(())
        };
        let mut response = Response::Applied;
        let db = self.state.db();
        let mut batch = db.batch();
        let staged = match &entry.payload {
            EntryPayload::Normal(request) => request.stage(&db, &mut batch),
            _ => Ok(()),
        };
        meta(&mut batch)?;
        let result = staged.and_then(|()| batch.commit());
        if let Err(error) = result {
            if is_storage_failure(&error) {
                return Err(storage(subject, ErrorVerb::Write)(error));
            }
            response = Response::Refused {
                kind: error.kind().to_string(),
                message: error.to_string(),
            };
            let mut batch = db.batch();
            meta(&mut batch)?;
            batch
                .commit()
                .map_err(storage(subject.clone(), ErrorVerb::Write))?;
        }
        self.applied = Some(entry.log_id);
        if let Some(m) = membership {
            self.membership = m;
        }
        Ok(response)
    }

    /// Records `meta` with its backup file as the current snapshot, replacing the last.
    fn set_current(
        dir: &Path,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        file: &str,
    ) -> Result<(), StorageError> {
        let stored = StoredSnapshot {
            meta: meta.clone(),
            file: file.to_string(),
        };
        let subject = ErrorSubject::Snapshot(Some(meta.signature()));
        let bytes = serde_json::to_vec(&stored).map_err(decode(subject))?;
        let partial = dir.join(format!("{SNAPSHOT_META}.partial"));
        fs(std::fs::write(&partial, bytes), "write snapshot.json")?;
        fs(
            std::fs::File::open(&partial).and_then(|f| f.sync_all()),
            "sync snapshot.json",
        )?;
        let previous = read_stored(dir)?;
        fs(
            std::fs::rename(&partial, dir.join(SNAPSHOT_META)),
            "replace snapshot.json",
        )?;
        fs(
            std::fs::File::open(dir).and_then(|d| d.sync_all()),
            "sync the node directory",
        )?;
        if let Some(previous) = previous
            && previous.file != file
        {
            let _ = std::fs::remove_file(dir.join(SNAPSHOTS).join(previous.file));
        }
        Ok(())
    }
}

fn read_stored(dir: &Path) -> Result<Option<StoredSnapshot>, StorageError> {
    let path = dir.join(SNAPSHOT_META);
    if !path.exists() {
        return Ok(None);
    }
    let bytes = fs(std::fs::read(&path), "read snapshot.json")?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(decode(ErrorSubject::Snapshot(None)))
}

/// An error of the storage itself, not of the request: the node must stop, not answer.
fn is_storage_failure(error: &skewdb::Error) -> bool {
    matches!(
        error.kind(),
        "io" | "corruption" | "write_failed" | "closed" | "locked" | "unsupported_version"
    )
}

/// Reads of a node's applied state (see [`StateMachine::reader`]).
#[derive(Clone)]
pub struct StateReader {
    shared: Arc<Mutex<Db>>,
}

impl StateReader {
    /// The state machine's database as of now: its collections hold what the node has
    /// applied, and `_raft` what it applied last. Reads through it see whole entries only.
    pub fn db(&self) -> Db {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// Builds a snapshot of the version the state machine had when the builder was made.
pub struct SnapshotBuilder {
    dir: PathBuf,
    snapshot: skewdb::Snapshot,
    applied: Option<LogId<NodeId>>,
    membership: Membership,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let id = match self.applied {
            Some(last) => format!(
                "{}-{}-{}",
                last.leader_id,
                last.index,
                self.snapshot.commits()
            ),
            None => format!("none-{}", self.snapshot.commits()),
        };
        let meta = SnapshotMeta {
            last_log_id: self.applied,
            last_membership: self.membership.clone(),
            snapshot_id: id.clone(),
        };
        let subject = ErrorSubject::Snapshot(Some(meta.signature()));
        let file = format!("{id}.backup");
        let path = self.dir.join(SNAPSHOTS).join(&file);
        self.snapshot
            .backup(&path)
            .map_err(storage(subject, ErrorVerb::Write))?;
        StateMachine::set_current(&self.dir, &meta, &file)?;
        let data = fs(std::fs::read(&path), "read the snapshot")?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId<NodeId>>, Membership), StorageError> {
        Ok((self.applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + openraft::OptionalSend,
        I::IntoIter: openraft::OptionalSend,
    {
        entries.into_iter().map(|e| self.apply_one(e)).collect()
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        // The applied state and the database's version agree here: apply updates both
        // before it returns, and nothing applies while openraft holds this machine.
        SnapshotBuilder {
            dir: self.dir.clone(),
            snapshot: self.state.db().snapshot(),
            applied: self.applied,
            membership: self.membership.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let subject = ErrorSubject::Snapshot(Some(meta.signature()));
        let file = format!("{}.backup", meta.snapshot_id);
        let path = self.dir.join(SNAPSHOTS).join(&file);
        fs(
            std::fs::write(&path, snapshot.into_inner()),
            "write the received snapshot",
        )?;
        fs(
            std::fs::File::open(&path).and_then(|f| f.sync_all()),
            "sync the received snapshot",
        )?;
        let (state, new, old) = (
            self.dir.join(STATE),
            self.dir.join(STATE_NEW),
            self.dir.join(STATE_OLD),
        );
        if new.exists() {
            fs(
                std::fs::remove_dir_all(&new),
                "remove an unfinished install",
            )?;
        }
        let restored = Db::restore(&path, &new, state_options())
            .map_err(storage(subject.clone(), ErrorVerb::Read))?;
        restored
            .close()
            .map_err(storage(subject.clone(), ErrorVerb::Write))?;
        // The swap: once `state.new` exists whole, opening finishes it whatever happens.
        fs(std::fs::rename(&state, &old), "move the old state aside")?;
        fs(
            std::fs::rename(&new, &state),
            "put the snapshot's state in place",
        )?;
        fs(
            std::fs::File::open(&self.dir).and_then(|d| d.sync_all()),
            "sync the node directory",
        )?;
        let db = Db::open(&state, state_options()).map_err(storage(subject, ErrorVerb::Read))?;
        // The old database closes once the last reader's handle on it goes.
        *self
            .state
            .shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = db;
        fs(std::fs::remove_dir_all(&old), "remove the old state")?;
        self.load()?;
        Self::set_current(&self.dir, meta, &file)
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let Some(stored) = read_stored(&self.dir)? else {
            return Ok(None);
        };
        let data = fs(
            std::fs::read(self.dir.join(SNAPSHOTS).join(&stored.file)),
            "read the current snapshot",
        )?;
        Ok(Some(Snapshot {
            meta: stored.meta,
            snapshot: Box::new(Cursor::new(data)),
        }))
    }
}
