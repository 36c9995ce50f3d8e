//! The replicated state in a skewdb database, with what it has applied beside it.
//!
//! The database in `state/` holds the application's collections and `_raft`, whose parents
//! `applied` (the last applied log id) and `membership` (the last membership applied) are
//! written in the same atomic batch as each entry's operations. Snapshots: a skewdb backup
//! of one version (`snapshots/ID.backup`) and its meta (`snapshot.json`, replaced by
//! rename). Installing one restores it to `state.new/` and swaps it in (`state/` renamed
//! to `state.old/`, `state.new/` to `state/`); opening finishes or undoes a swap a crash
//! interrupted.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder,
    SnapshotMeta, StoredMembership,
};
use serde::{Deserialize, Serialize};
use skewdb::{CollectionSpec, Db, Durability, Options};
use tokio::io::AsyncSeekExt;

use crate::error::{blocking, decode, io_error, storage};
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
    /// The file a snapshot being received is written to (`snapshots/*.partial`).
    receiving: Option<PathBuf>,
    /// Numbers the files of snapshots received.
    received: u64,
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
        // Snapshots whose receiving a crash or a newer snapshot cut short.
        for file in fs(std::fs::read_dir(dir.join(SNAPSHOTS)), "list snapshots/")? {
            let path = fs(file, "list snapshots/")?.path();
            if path.extension().is_some_and(|e| e == "partial") {
                fs(std::fs::remove_file(&path), "remove a partial snapshot")?;
            }
        }
        let db = Db::open(&state, state_options())
            .map_err(storage(ErrorSubject::StateMachine, ErrorVerb::Read))?;
        let mut machine = StateMachine {
            dir: dir.to_path_buf(),
            state: StateReader {
                shared: Arc::new(Mutex::new(db)),
            },
            applied: None,
            membership: Membership::default(),
            receiving: None,
            received: 0,
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

/// Applies one entry to `db`: its request's operations, the log id and any membership, in
/// one batch; the membership it recorded, if any. A request the engine refuses (a record
/// over 16 MiB, an unknown collection) is refused alike on every replica: then only the log
/// id is recorded.
fn apply_entry(
    db: &Db,
    entry: Entry<TypeConfig>,
) -> Result<(Response, Option<Membership>), StorageError> {
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
    let mut batch = db.batch();
    let staged = match &entry.payload {
        EntryPayload::Normal(request) => request.stage(db, &mut batch),
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
    Ok((response, membership))
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
        let (snapshot, dir, written) = (self.snapshot.clone(), self.dir.clone(), meta.clone());
        blocking(move || {
            snapshot
                .backup(&path)
                .map_err(storage(subject, ErrorVerb::Write))?;
            StateMachine::set_current(&dir, &written, &file)
        })
        .await?;
        let data = open_snapshot(&self.dir, &format!("{id}.backup")).await?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(data),
        })
    }
}

/// Whether `handle` is the file at `path` (not another one put in its place).
async fn is_file(handle: &tokio::fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (handle.metadata().await, tokio::fs::metadata(path).await) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        // Without inode numbers to compare: never assumed, the snapshot is copied.
        let _ = (handle, path);
        false
    }
}

/// The backup file `file` of `snapshots/`, opened to be read (and sent) from its start.
async fn open_snapshot(dir: &Path, file: &str) -> Result<tokio::fs::File, StorageError> {
    let path = dir.join(SNAPSHOTS).join(file);
    tokio::fs::File::open(&path)
        .await
        .map_err(|e| io_error(e, "open the snapshot"))
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
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        let Some(last) = entries.last().map(|e| e.log_id) else {
            return Ok(Vec::new());
        };
        let db = self.state.db();
        // The commits wait for the disk: on a thread of their own, not the runtime's.
        let (responses, membership) = blocking(move || {
            let mut responses = Vec::with_capacity(entries.len());
            let mut last_membership = None;
            for entry in entries {
                let (response, membership) = apply_entry(&db, entry)?;
                responses.push(response);
                last_membership = membership.or(last_membership);
            }
            Ok((responses, last_membership))
        })
        .await?;
        self.applied = Some(last);
        if let Some(m) = membership {
            self.membership = m;
        }
        Ok(responses)
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

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, StorageError> {
        // Chunks are written to a file as they arrive, never held in memory whole.
        self.received += 1;
        let path = self
            .dir
            .join(SNAPSHOTS)
            .join(format!("received-{}.partial", self.received));
        if let Some(abandoned) = self.receiving.replace(path.clone()) {
            let _ = tokio::fs::remove_file(abandoned).await;
        }
        let file = tokio::fs::File::create(&path)
            .await
            .map_err(|e| io_error(e, "create a file for a received snapshot"))?;
        Ok(Box::new(file))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        mut snapshot: Box<tokio::fs::File>,
    ) -> Result<(), StorageError> {
        let subject = ErrorSubject::Snapshot(Some(meta.signature()));
        let file = format!("{}.backup", meta.snapshot_id);
        let path = self.dir.join(SNAPSHOTS).join(&file);
        let received = self.receiving.take();
        match received {
            // The file `begin_receiving_snapshot` gave, chunks written in: whole on disk
            // once synced, then named as the snapshot.
            Some(received) if is_file(&snapshot, &received).await => {
                fs(snapshot.sync_all().await, "sync the received snapshot")?;
                drop(snapshot);
                fs(
                    tokio::fs::rename(&received, &path).await,
                    "name the received snapshot",
                )?;
            }
            // A snapshot handed over some other way: copied from its start.
            received => {
                if let Some(unused) = received {
                    let _ = tokio::fs::remove_file(unused).await;
                }
                fs(
                    snapshot.seek(std::io::SeekFrom::Start(0)).await,
                    "read the snapshot",
                )?;
                let mut copy = fs(tokio::fs::File::create(&path).await, "write the snapshot")?;
                fs(
                    tokio::io::copy(&mut snapshot, &mut copy).await,
                    "write the snapshot",
                )?;
                fs(copy.sync_all().await, "sync the snapshot")?;
            }
        }
        let dir = self.dir.clone();
        let db = blocking(move || {
            let (state, new, old) = (dir.join(STATE), dir.join(STATE_NEW), dir.join(STATE_OLD));
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
                std::fs::File::open(&dir).and_then(|d| d.sync_all()),
                "sync the node directory",
            )?;
            Db::open(&state, state_options()).map_err(storage(subject, ErrorVerb::Read))
        })
        .await?;
        // The old database closes once the last reader's handle on it goes.
        *self
            .state
            .shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = db;
        let (dir, meta) = (self.dir.clone(), meta.clone());
        blocking(move || {
            fs(
                std::fs::remove_dir_all(dir.join(STATE_OLD)),
                "remove the old state",
            )?;
            StateMachine::set_current(&dir, &meta, &file)
        })
        .await?;
        self.load()
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let Some(stored) = read_stored(&self.dir)? else {
            return Ok(None);
        };
        let data = open_snapshot(&self.dir, &stored.file).await?;
        Ok(Some(Snapshot {
            meta: stored.meta,
            snapshot: Box::new(data),
        }))
    }
}
