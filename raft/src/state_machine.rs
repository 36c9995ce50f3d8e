//! The replicated state in a skewdb database, with what it has applied beside it.
//!
//! The database in `state/` (after snapshot installs, `state-N/`, which `state.current`
//! names) holds the application's collections and `_raft`, whose parents `applied` (the
//! last applied log id) and `membership` (the last membership applied) are written in the
//! same atomic batch as each entry's operations. Snapshots: a skewdb backup of one version
//! (`snapshots/ID.backup`) and its meta (`snapshot.json`, replaced by rename). Installing
//! one restores it to the next `state-N/`, then points `state.current` at it (one rename);
//! the replaced database is never moved, so a handle to it still open (a read, a snapshot
//! being built) writes only into its own directory, which is then removed. Opening removes
//! every state directory but the current one, and finishes a swap an earlier build's crash
//! interrupted (it renamed `state/` to `state.old/` and `state.new/` to `state/`).

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
pub(crate) const APPLIED: &str = "applied";
const MEMBERSHIP: &str = "membership";
pub(crate) const PARTIAL: &str = "partial";

/// The state's directory in a node that never installed a snapshot (or installed one with
/// a build from before `state.current`).
const STATE: &str = "state";
/// Names the directory of the current state, `state-N` (the Nth install), once a snapshot
/// was installed.
const CURRENT: &str = "state.current";
/// Leftovers of the swaps of earlier builds, which renamed the live directory.
const STATE_NEW: &str = "state.new";
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
    /// The entry after `applied` when a crash cut it short, and how many of its requests
    /// were applied.
    partial: Option<Partial>,
    /// The file a snapshot being received is written to (`snapshots/*.partial`).
    receiving: Option<PathBuf>,
    /// Numbers the files of snapshots received.
    received: u64,
    /// Whether the node is catching up after starting on an empty directory.
    rejoin: std::sync::Arc<crate::Rejoin>,
}

/// Applied entries are written to the OS, not synced, each with its log id in the same
/// batch: a process crash loses none, a power loss may return the state to an earlier
/// entry, never to half of one. The log holds every entry after it: openraft re-applies
/// from the state's `applied` up to the log's committed id on startup, and a node's reads
/// wait for the leader's commit index (linearizable) or the client's (`min_index`) to be
/// applied. The log is purged only up to a snapshot, and a snapshot is built after a sync
/// of the state it copies ([`SnapshotBuilder::build_snapshot`]), so the entries a state
/// that went back would need are never gone.
fn state_options() -> Options {
    Options::new().durability(Durability::Buffered)
}

fn fs<T>(result: std::io::Result<T>, what: &str) -> Result<T, StorageError> {
    result.map_err(|e| io_error(e, what))
}

impl StateMachine {
    /// Opens (or creates) the state machine in the node directory `dir`.
    pub fn open(dir: &Path) -> Result<StateMachine, StorageError> {
        let (state, new) = (dir.join(STATE), dir.join(STATE_NEW));
        // An earlier build's swap the crash interrupted: `state.new` is whole once it
        // exists under that name (a restore renames it into place only when done), so
        // finish the swap (`state.old`, if any, is removed below).
        if new.exists() && !state.exists() && !dir.join(CURRENT).exists() {
            fs(std::fs::rename(&new, &state), "finish a snapshot's swap")?;
        }
        // Every state directory but the current one is a leftover: an install a crash cut
        // short, the state an install replaced, an earlier build's swap.
        let current = current_state(dir)?;
        if dir.exists() {
            for entry in fs(std::fs::read_dir(dir), "list the node directory")? {
                let entry = fs(entry, "list the node directory")?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let is_dir = fs(entry.file_type(), "list the node directory")?.is_dir();
                if is_dir && name.starts_with(STATE) && name != current {
                    fs(
                        std::fs::remove_dir_all(entry.path()),
                        "remove a state directory left over",
                    )?;
                }
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
        let db = Db::open(dir.join(&current), state_options())
            .map_err(storage(ErrorSubject::StateMachine, ErrorVerb::Read))?;
        let mut machine = StateMachine {
            dir: dir.to_path_buf(),
            state: StateReader {
                shared: Arc::new(Held {
                    db: Mutex::new(db),
                    open: Arc::new(()),
                }),
            },
            applied: None,
            membership: Membership::default(),
            partial: None,
            receiving: None,
            received: 0,
            rejoin: Arc::new(crate::Rejoin::voting(dir)),
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
            Some(body) => serde_json::from_slice(&body).map_err(decode(subject.clone()))?,
            None => Membership::default(),
        };
        let partial: Option<Partial> = match read(PARTIAL)? {
            Some(body) => Some(serde_json::from_slice(&body).map_err(decode(subject))?),
            None => None,
        };
        // Only the entry right after the last applied one can be part done.
        let next = self.applied.map_or(0, |id| id.index + 1);
        self.partial = partial.filter(|p| p.index == next);
        Ok(())
    }

    /// A handle for reads of the state this machine has applied, which stays valid when
    /// openraft owns the machine and across snapshot installs.
    pub fn reader(&self) -> StateReader {
        self.state.clone()
    }

    /// The node's rejoin state ([`crate::Rejoin`]): its server refuses votes while it says
    /// the node is catching up.
    pub fn rejoin(&self) -> std::sync::Arc<crate::Rejoin> {
        self.rejoin.clone()
    }

    pub(crate) fn set_rejoin(&mut self, rejoin: std::sync::Arc<crate::Rejoin>) {
        self.rejoin = rejoin;
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

/// Applies one entry to `db`: each request of its proposal in its own batch, the last one's
/// with the log id and any membership; the responses, and the membership it recorded, if
/// any. The batches before the last record how many of the entry's requests are done
/// (`partial`), so an entry a crash cut short resumes after them: `skip` requests of it
/// are already applied. A request the engine refuses (a record over 16 MiB, an unknown
/// collection) is refused alike on every replica: then only the meta is recorded.
fn apply_entry(
    db: &Db,
    entry: Entry<TypeConfig>,
    skip: usize,
) -> Result<(Vec<Response>, Option<Membership>), StorageError> {
    let subject = ErrorSubject::Apply(entry.log_id);
    let applied = serde_json::to_vec(&Some(entry.log_id)).map_err(decode(subject.clone()))?;
    let mut membership = None;
    if let EntryPayload::Membership(m) = &entry.payload {
        membership = Some(Membership::new(Some(entry.log_id), m.clone()));
    }
    let requests = match entry.payload {
        EntryPayload::Normal(proposal) => proposal.0,
        _ => Vec::new(),
    };
    let count = requests.len().max(1);
    let meta = |batch: &mut skewdb::Batch, done: usize| -> Result<(), StorageError> {
        if done < count {
            let partial = Partial {
                index: entry.log_id.index,
                done,
            };
            let body = serde_json::to_vec(&partial).map_err(decode(subject.clone()))?;
            batch.put(RAFT_COLLECTION, PARTIAL, body);
            return Ok(());
        }
        batch.put(RAFT_COLLECTION, APPLIED, &applied);
        if let Some(m) = &membership {
            let body = serde_json::to_vec(m).map_err(decode(subject.clone()))?;
            batch.put(RAFT_COLLECTION, MEMBERSHIP, body);
        }
        Ok(())
    };
    // The meta alone: for an entry with no request, and for a request refused.
    let commit_meta = |done: usize| -> Result<(), StorageError> {
        let mut batch = db.batch();
        meta(&mut batch, done)?;
        batch
            .commit()
            .map_err(storage(subject.clone(), ErrorVerb::Write))
    };
    let mut responses = Vec::with_capacity(requests.len());
    if requests.is_empty() {
        commit_meta(count)?;
    }
    for (at, request) in requests.iter().enumerate() {
        if at < skip {
            // Applied before a crash; its response went to nobody (a restart re-applies
            // without clients waiting).
            responses.push(Response::Applied);
            continue;
        }
        let mut batch = db.batch();
        let staged = request.stage(db, &mut batch);
        meta(&mut batch, at + 1)?;
        let result = staged.and_then(|()| batch.commit());
        let response = match result {
            Ok(()) => Response::Applied,
            Err(error) if is_storage_failure(&error) => {
                return Err(storage(subject, ErrorVerb::Write)(error));
            }
            Err(error) => {
                commit_meta(at + 1)?;
                Response::Refused {
                    kind: error.kind().to_string(),
                    message: error.to_string(),
                }
            }
        };
        responses.push(response);
    }
    Ok((responses, membership))
}

/// How many requests of the entry at `index` are applied, while not all are.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct Partial {
    pub(crate) index: u64,
    pub(crate) done: usize,
}

/// The name of the current state's directory in node directory `dir`.
fn current_state(dir: &Path) -> Result<String, StorageError> {
    let name = match std::fs::read_to_string(dir.join(CURRENT)) {
        Ok(name) => name.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(STATE.to_string()),
        Err(e) => return Err(io_error(e, "read state.current")),
    };
    if generation(&name) == 0 {
        let error = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("state.current names {name:?}, not a state directory"),
        );
        return Err(io_error(error, "read state.current"));
    }
    Ok(name)
}

/// N of `state-N`; 0 for `state` (or anything else).
fn generation(name: &str) -> u64 {
    name.strip_prefix(STATE)
        .and_then(|n| n.strip_prefix('-'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Makes `name` the current state's directory, durably, in one rename.
fn set_current_state(dir: &Path, name: &str) -> Result<(), StorageError> {
    let partial = dir.join(format!("{CURRENT}.partial"));
    fs(std::fs::write(&partial, name), "write state.current")?;
    fs(
        std::fs::File::open(&partial).and_then(|f| f.sync_all()),
        "sync state.current",
    )?;
    fs(
        std::fs::rename(&partial, dir.join(CURRENT)),
        "replace state.current",
    )?;
    fs(
        std::fs::File::open(dir).and_then(|d| d.sync_all()),
        "sync the node directory",
    )
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
    shared: Arc<Held>,
}

/// The database the machine and its readers share.
struct Held {
    db: Mutex<Db>,
    /// Dropped after `db` (fields drop in order): gone once the database closed.
    open: Arc<()>,
}

impl StateReader {
    /// The state machine's database as of now: its collections hold what the node has
    /// applied, and `_raft` what it applied last. A version taken through it may be inside an
    /// entry being applied (its requests apply a batch each): the node's reads take one that
    /// is not (see `DISTRIBUTION.md`, "Reads").
    pub fn db(&self) -> Db {
        self.shared
            .db
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Alive while the machine or a reader holds the database (a clone taken with
    /// [`StateReader::db`] aside); none once it closed.
    pub(crate) fn open_token(&self) -> std::sync::Weak<()> {
        Arc::downgrade(&self.shared.open)
    }
}

/// Builds a snapshot of the version the state machine had when the builder was made.
pub struct SnapshotBuilder {
    dir: PathBuf,
    /// The database the snapshot is of, synced before the backup is taken.
    db: Db,
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
        let (name, db) = (file.clone(), self.db.clone());
        blocking(move || {
            // openraft purges the log up to a snapshot once it is built: the state it
            // copies must not go back before it on a power loss (applies are not synced).
            db.persist()
                .map_err(storage(ErrorSubject::StateMachine, ErrorVerb::Write))?;
            snapshot
                .backup(&path)
                .map_err(storage(subject, ErrorVerb::Write))?;
            StateMachine::set_current(&dir, &written, &name)
        })
        .await?;
        let data = open_snapshot(&self.dir, &file).await?;
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

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Vec<Response>>, StorageError>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + openraft::OptionalSend,
        I::IntoIter: openraft::OptionalSend,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        let Some(last) = entries.last().map(|e| e.log_id) else {
            return Ok(Vec::new());
        };
        let db = self.state.db();
        let partial = self.partial.take();
        // Not synced (see `state_options`); the commits still write, and may checkpoint:
        // on a thread of their own, not the runtime's.
        let (responses, membership) = blocking(move || {
            let mut responses = Vec::with_capacity(entries.len());
            let mut last_membership = None;
            for entry in entries {
                let skip = match partial {
                    Some(p) if p.index == entry.log_id.index => p.done,
                    _ => 0,
                };
                let (response, membership) = apply_entry(&db, entry, skip)?;
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
        let db = self.state.db();
        SnapshotBuilder {
            dir: self.dir.clone(),
            snapshot: db.snapshot(),
            db,
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
        // The snapshot's state goes to a directory of its own, `state-N`; `state.current`
        // then names it, in one rename. The database it replaces is never moved or
        // written under another's name: clones of it (a read, a snapshot being built) may
        // live on, and its last one closes it, writing into its own directory.
        let dir = self.dir.clone();
        let (db, replaced) = blocking(move || {
            let current = current_state(&dir)?;
            let next = format!("{STATE}-{}", generation(&current) + 1);
            let new = dir.join(&next);
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
            set_current_state(&dir, &next)?;
            let db = Db::open(&new, state_options()).map_err(storage(subject, ErrorVerb::Read))?;
            Ok((db, dir.join(current)))
        })
        .await?;
        *self
            .state
            .shared
            .db
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = db;
        let (dir, meta) = (self.dir.clone(), meta.clone());
        blocking(move || {
            // Space back now; a clone still reading it fails from here on, and the next
            // open removes whatever is left.
            let _ = std::fs::remove_dir_all(&replaced);
            StateMachine::set_current(&dir, &meta, &file)
        })
        .await?;
        self.load()
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        // A snapshot built meanwhile (its builder runs beside the machine) replaces the
        // current one and removes its file, possibly between the reading of the meta and the
        // opening of the file: the meta is read again. (A file once open stays readable.)
        let mut tries = 0;
        loop {
            let Some(stored) = read_stored(&self.dir)? else {
                return Ok(None);
            };
            let path = self.dir.join(SNAPSHOTS).join(&stored.file);
            match tokio::fs::File::open(&path).await {
                Ok(data) => {
                    return Ok(Some(Snapshot {
                        meta: stored.meta,
                        snapshot: Box::new(data),
                    }));
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound && tries < 10 => {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                Err(error) => return Err(io_error(error, "open the snapshot")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};

    /// A snapshot built beside a reader of the current one replaces it and removes its file
    /// between the reader's reading of the meta and its opening of the file: the reader
    /// reads the meta again and opens the new one (it once failed the leader with "open the
    /// snapshot: No such file or directory", which stopped its Raft).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_current_snapshot_is_found_while_a_new_one_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let (_log, mut machine) = crate::open(dir.path()).unwrap();
        let first = machine
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        let first_file = read_stored(dir.path()).unwrap().unwrap().file;
        // The state a reader meets mid-replacement: the meta names a file already removed;
        // the new meta arrives a moment later.
        let stored = read_stored(dir.path()).unwrap().unwrap();
        let moved = format!("moved-{first_file}");
        std::fs::rename(
            dir.path().join(SNAPSHOTS).join(&first_file),
            dir.path().join(SNAPSHOTS).join(&moved),
        )
        .unwrap();
        let replacing = {
            let dir = dir.path().to_path_buf();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                StateMachine::set_current(&dir, &stored.meta, &moved).unwrap();
            })
        };
        let current = machine
            .get_current_snapshot()
            .await
            .unwrap()
            .expect("a snapshot");
        replacing.await.unwrap();
        assert_eq!(current.meta, first.meta);
        // Nothing to find at all is still an error, after the tries.
        std::fs::remove_file(
            dir.path()
                .join(SNAPSHOTS)
                .join(format!("moved-{first_file}")),
        )
        .unwrap();
        assert!(machine.get_current_snapshot().await.is_err());
    }
}
