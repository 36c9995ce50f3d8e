//! The Raft log, the vote, the committed and purged log ids, in one skewdb database.
//!
//! Collection `log`: one parent per entry, keyed by its index (8 bytes, big-endian, so key
//! order is index order), its body the entry as JSON. Collection `meta`: parents `vote`,
//! `committed` and `purged`, each a JSON body. The database is opened with
//! `Durability::Immediate`: an append, a vote, a truncation or a purge is on disk when its
//! commit returns, and only then is openraft told. The committed id alone is written
//! without a sync (see [`RaftLogStorage::save_committed`] below).

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogReader, Vote};
use serde::Serialize;
use serde::de::DeserializeOwned;
use skewdb::{CollectionSpec, Db, Durability, Options};

use crate::error::{blocking, decode, storage};
use crate::{NodeId, StorageError, TypeConfig};

const LOG: &str = "log";
const META: &str = "meta";
const VOTE: &str = "vote";
const COMMITTED: &str = "committed";
const PURGED: &str = "purged";

/// A node's Raft log store. Cheap to clone: clones share the database (openraft reads the
/// log through one while it appends through another).
#[derive(Clone)]
pub struct LogStore {
    db: Db,
    /// Dropped after `db` (fields drop in order): gone once every clone closed.
    open: Arc<()>,
}

fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

impl LogStore {
    /// Opens (or creates) the log database in `dir`.
    pub fn open(dir: &Path) -> Result<LogStore, StorageError> {
        let options = Options::new().durability(Durability::Immediate);
        let db = Db::open(dir, options).map_err(storage(ErrorSubject::Store, ErrorVerb::Read))?;
        for name in [LOG, META] {
            db.create_collection(CollectionSpec::new(name))
                .map_err(storage(ErrorSubject::Store, ErrorVerb::Write))?;
        }
        Ok(LogStore {
            db,
            open: Arc::new(()),
        })
    }

    /// Alive while a clone of this store is; none once the last one closed its database.
    pub(crate) fn open_token(&self) -> std::sync::Weak<()> {
        Arc::downgrade(&self.open)
    }

    fn meta<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, StorageError> {
        let subject = ErrorSubject::Store;
        let meta = self
            .db
            .collection(META)
            .map_err(storage(subject.clone(), ErrorVerb::Read))?;
        let Some(document) = meta
            .get_projected(name, &[])
            .map_err(storage(subject.clone(), ErrorVerb::Read))?
        else {
            return Ok(None);
        };
        serde_json::from_slice(document.body())
            .map(Some)
            .map_err(decode(subject))
    }

    /// Writes meta parent `name`, on disk when it returns under `Durability::Immediate`.
    fn put_meta<T: Serialize>(
        &self,
        name: &str,
        value: &T,
        subject: ErrorSubject<NodeId>,
        durability: Durability,
    ) -> Result<(), StorageError> {
        let body = serde_json::to_vec(value).map_err(decode(subject.clone()))?;
        let mut batch = self.db.batch();
        batch.durability(durability);
        batch.put(META, name, body);
        batch.commit().map_err(storage(subject, ErrorVerb::Write))
    }

    /// Deletes the entries whose index is in `range`, in one durable batch.
    fn delete(&self, range: (Bound<u64>, Bound<u64>)) -> Result<(), StorageError> {
        let subject = ErrorSubject::Logs;
        let log = self
            .db
            .collection(LOG)
            .map_err(storage(subject.clone(), ErrorVerb::Read))?;
        let keys = (range.0.map(index_key), range.1.map(index_key));
        let mut batch = self.db.batch();
        for document in log
            .scan(keys)
            .map_err(storage(subject.clone(), ErrorVerb::Read))?
        {
            let document = document.map_err(storage(subject.clone(), ErrorVerb::Read))?;
            batch.delete(LOG, document.key());
        }
        batch.commit().map_err(storage(subject, ErrorVerb::Delete))
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError> {
        let subject = ErrorSubject::Logs;
        let log = self
            .db
            .collection(LOG)
            .map_err(storage(subject.clone(), ErrorVerb::Read))?;
        let keys = (
            range.start_bound().map(|i| index_key(*i)),
            range.end_bound().map(|i| index_key(*i)),
        );
        let mut entries = Vec::new();
        for document in log
            .scan(keys)
            .map_err(storage(subject.clone(), ErrorVerb::Read))?
        {
            let document = document.map_err(storage(subject.clone(), ErrorVerb::Read))?;
            let entry: Entry<TypeConfig> =
                serde_json::from_slice(document.body()).map_err(decode(subject.clone()))?;
            entries.push(entry);
        }
        Ok(entries)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let subject = ErrorSubject::Logs;
        let log = self
            .db
            .collection(LOG)
            .map_err(storage(subject.clone(), ErrorVerb::Read))?;
        let last = log
            .scan(..)
            .map_err(storage(subject.clone(), ErrorVerb::Read))?
            .next_back()
            .transpose()
            .map_err(storage(subject.clone(), ErrorVerb::Read))?;
        let last_log_id = match last {
            Some(document) => {
                let entry: Entry<TypeConfig> =
                    serde_json::from_slice(document.body()).map_err(decode(subject))?;
                Some(entry.log_id)
            }
            None => None,
        };
        let last_purged_log_id: Option<LogId<NodeId>> = self.meta(PURGED)?;
        Ok(LogState {
            last_purged_log_id,
            last_log_id: last_log_id.or(last_purged_log_id),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError> {
        let (store, vote) = (self.clone(), *vote);
        blocking(move || store.put_meta(VOTE, &vote, ErrorSubject::Vote, Durability::Immediate))
            .await
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError> {
        self.meta(VOTE)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError> {
        // Not synced: openraft calls this on its core task before every apply, and the
        // committed id is a lower bound to re-apply up to on startup, never a promise. It
        // reaches the disk with the next append's sync; a power loss may return an older
        // one (never newer than the entries, written before it in the same log), and the
        // state machine then catches up when the leader's next commit arrives.
        let store = self.clone();
        blocking(move || {
            store.put_meta(
                COMMITTED,
                &committed,
                ErrorSubject::Store,
                Durability::Buffered,
            )
        })
        .await
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError> {
        Ok(self.meta::<Option<LogId<NodeId>>>(COMMITTED)?.flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let subject = ErrorSubject::Logs;
        let mut batch = self.db.batch();
        for entry in entries {
            let body = serde_json::to_vec(&entry).map_err(decode(subject.clone()))?;
            batch.put(LOG, index_key(entry.log_id.index), body);
        }
        // Durable when the commit returns (Durability::Immediate): only then is the
        // append reported done. The commit waits for the disk on a blocking thread.
        blocking(move || batch.commit().map_err(storage(subject, ErrorVerb::Write))).await?;
        callback.log_io_completed(Ok(()));
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError> {
        let store = self.clone();
        blocking(move || store.delete((Bound::Included(log_id.index), Bound::Unbounded))).await
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError> {
        // The purge point first: openraft ignores entries at or before it, so a crash
        // between the two leaves only entries nobody reads.
        let store = self.clone();
        blocking(move || {
            store.put_meta(PURGED, &log_id, ErrorSubject::Logs, Durability::Immediate)?;
            store.delete((Bound::Unbounded, Bound::Included(log_id.index)))
        })
        .await
    }
}
