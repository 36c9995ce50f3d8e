//! The little each peer needs for the hand-written models of every workload (products,
//! sensors, followers): a read, a durable transaction of puts, and a key range, over named
//! tables (redb tables, fjall keyspaces, SQLite tables with a blob primary key: rowid tables,
//! which SQLite advises for rows as large as these values). Reads hand the value to the
//! caller where the engine holds it, as a performance-minded user reads: redb's
//! `AccessGuard::value()`, fjall's `Slice`, rusqlite's `get_ref`; nothing is copied.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::CacheCounters;

pub trait Kv {
    /// Calls `read` with the value of `key` where the engine holds it; false when absent.
    fn read(&self, table: &'static str, key: &[u8], read: &mut dyn FnMut(&[u8])) -> bool;
    /// A copy of the value of `key`, for a read-modify-write.
    fn get(&self, table: &'static str, key: &[u8]) -> Option<Vec<u8>> {
        let mut value = None;
        self.read(table, key, &mut |v| value = Some(v.to_vec()));
        value
    }
    /// Writes every put in one transaction; durable (fsync) when `durable`.
    fn put_all(&mut self, puts: Vec<(&'static str, Vec<u8>, Vec<u8>)>, durable: bool) {
        self.put_stream(&mut puts.into_iter(), durable);
    }
    /// [`Kv::put_all`] of puts made as the transaction takes them (a load whose
    /// transactions are larger than the harness should hold).
    fn put_stream(&mut self, puts: &mut dyn Iterator<Item = Put>, durable: bool);
    /// Calls `read` with the values of keys in `start..end` where the engine holds them, in
    /// key order (descending when `newest_first`), at most `limit` of them; returns how many.
    fn scan(
        &self,
        table: &'static str,
        bounds: (&[u8], &[u8]),
        newest_first: bool,
        limit: usize,
        read: &mut dyn FnMut(&[u8]),
    ) -> usize;
    /// Closes the engine and opens its files again with a cache of `cache_bytes`.
    fn reopen(&mut self, cache_bytes: usize);
    fn disk_bytes(&self) -> u64;
    /// The engine's own cache counters: redb's read hits and misses (its `cache_metrics`
    /// feature), fjall's block loads from its cache and from disk (its `metrics` feature),
    /// SQLite's page cache hits and misses (`sqlite3_db_status`).
    fn cache_counters(&self) -> CacheCounters;
}

/// A put: table, key, value.
pub type Put = (&'static str, Vec<u8>, Vec<u8>);

/// Calls `each` on the first `limit` entries of `range`, from its end when `newest_first`;
/// returns how many.
fn visit_in_order<T>(
    range: impl DoubleEndedIterator<Item = T>,
    newest_first: bool,
    limit: usize,
    each: &mut impl FnMut(T),
) -> usize {
    match newest_first {
        true => range.rev().take(limit).map(each).count(),
        false => range.take(limit).map(each).count(),
    }
}

pub fn open(engine: &str, dir: &Path, cache_bytes: usize) -> Box<dyn Kv> {
    match engine {
        "redb" => Box::new(RedbKv::open(dir, cache_bytes)),
        "fjall" => Box::new(FjallKv::open(dir, cache_bytes)),
        "sqlite" => Box::new(SqliteKv::open(dir, cache_bytes)),
        _ => unreachable!("unknown engine {engine}"),
    }
}

struct RedbKv {
    dir: PathBuf,
    db: redb::Database,
}

impl RedbKv {
    fn open(dir: &Path, cache_bytes: usize) -> RedbKv {
        RedbKv {
            dir: dir.to_path_buf(),
            db: Self::database(dir, cache_bytes),
        }
    }

    fn database(dir: &Path, cache_bytes: usize) -> redb::Database {
        redb::Database::builder()
            .set_cache_size(cache_bytes)
            .create(dir.join("redb"))
            .expect("open redb")
    }
}

fn table(name: &'static str) -> redb::TableDefinition<'static, &'static [u8], &'static [u8]> {
    redb::TableDefinition::new(name)
}

impl Kv for RedbKv {
    fn read(&self, name: &'static str, key: &[u8], read: &mut dyn FnMut(&[u8])) -> bool {
        use redb::ReadableDatabase;
        let transaction = self.db.begin_read().expect("read");
        let table = transaction.open_table(table(name)).expect("table");
        let guard = table.get(key).expect("get");
        guard.map(|value| read(value.value())).is_some()
    }

    fn put_stream(&mut self, puts: &mut dyn Iterator<Item = Put>, durable: bool) {
        let mut write = self.db.begin_write().expect("write");
        let durability = match durable {
            true => redb::Durability::Immediate,
            false => redb::Durability::None,
        };
        write.set_durability(durability).expect("durability");
        for (name, key, value) in puts {
            let mut table = write.open_table(table(name)).expect("table");
            table.insert(&key[..], &value[..]).expect("insert");
        }
        write.commit().expect("commit");
    }

    fn scan(
        &self,
        name: &'static str,
        (start, end): (&[u8], &[u8]),
        newest_first: bool,
        limit: usize,
        read: &mut dyn FnMut(&[u8]),
    ) -> usize {
        use redb::ReadableDatabase;
        let transaction = self.db.begin_read().expect("read");
        let table = transaction.open_table(table(name)).expect("table");
        let range = table.range(start..end).expect("range");
        let mut each = |entry: redb::Result<(redb::AccessGuard<_>, redb::AccessGuard<_>)>| {
            read(entry.expect("entry").1.value())
        };
        visit_in_order(range, newest_first, limit, &mut each)
    }

    fn reopen(&mut self, cache_bytes: usize) {
        // redb allows one open database per file: the old one closes first.
        let placeholder = redb::Builder::new()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .expect("in-memory redb");
        drop(std::mem::replace(&mut self.db, placeholder));
        self.db = Self::database(&self.dir, cache_bytes);
    }

    fn disk_bytes(&self) -> u64 {
        crate::engines::dir_bytes(&self.dir)
    }

    fn cache_counters(&self) -> CacheCounters {
        use redb::ReadableDatabase;
        let stats = self.db.cache_stats();
        CacheCounters {
            requests: stats.read_hits() + stats.read_misses(),
            hits: stats.read_hits(),
        }
    }
}

struct FjallKv {
    dir: PathBuf,
    db: fjall::Database,
    keyspaces: HashMap<&'static str, fjall::Keyspace>,
}

impl FjallKv {
    fn open(dir: &Path, cache_bytes: usize) -> FjallKv {
        FjallKv {
            dir: dir.to_path_buf(),
            db: Self::database(dir, cache_bytes),
            keyspaces: HashMap::new(),
        }
    }

    fn database(dir: &Path, cache_bytes: usize) -> fjall::Database {
        fjall::Database::builder(dir.join("fjall"))
            .cache_size(cache_bytes as u64)
            .open()
            .expect("open fjall")
    }

    fn keyspace(&mut self, name: &'static str) -> fjall::Keyspace {
        let db = &self.db;
        self.keyspaces
            .entry(name)
            .or_insert_with(|| {
                db.keyspace(name, fjall::KeyspaceCreateOptions::default)
                    .expect("keyspace")
            })
            .clone()
    }
}

impl Kv for FjallKv {
    fn read(&self, name: &'static str, key: &[u8], read: &mut dyn FnMut(&[u8])) -> bool {
        let Some(keyspace) = self.keyspaces.get(name) else {
            return false;
        };
        let value = keyspace.get(key).expect("get");
        value.map(|value| read(&value)).is_some()
    }

    fn put_stream(&mut self, puts: &mut dyn Iterator<Item = Put>, durable: bool) {
        let mut batch = self.db.batch();
        if durable {
            batch = batch.durability(Some(fjall::PersistMode::SyncAll));
        }
        for (name, key, value) in puts {
            let keyspace = self.keyspace(name);
            batch.insert(&keyspace, key, value);
        }
        batch.commit().expect("commit");
    }

    fn scan(
        &self,
        name: &'static str,
        (start, end): (&[u8], &[u8]),
        newest_first: bool,
        limit: usize,
        read: &mut dyn FnMut(&[u8]),
    ) -> usize {
        let Some(keyspace) = self.keyspaces.get(name) else {
            return 0;
        };
        let range = keyspace.range(start..end);
        let mut each = |guard: fjall::Guard| read(&guard.value().expect("value"));
        visit_in_order(range, newest_first, limit, &mut each)
    }

    fn reopen(&mut self, cache_bytes: usize) {
        let names: Vec<&'static str> = self.keyspaces.keys().copied().collect();
        self.keyspaces.clear();
        self.db
            .persist(fjall::PersistMode::SyncAll)
            .expect("persist");
        // fjall allows one open database per folder: the old one closes first.
        let closed = tempfile::tempdir().expect("temporary directory");
        drop(std::mem::replace(
            &mut self.db,
            Self::database(closed.path(), 1 << 20),
        ));
        self.db = Self::database(&self.dir, cache_bytes);
        for name in names {
            self.keyspace(name);
        }
    }

    fn disk_bytes(&self) -> u64 {
        crate::engines::dir_bytes(&self.dir)
    }

    fn cache_counters(&self) -> CacheCounters {
        let mut counters = CacheCounters::default();
        for keyspace in self.keyspaces.values() {
            let metrics = keyspace.metrics();
            counters.requests += metrics.block_loads() as u64;
            counters.hits += metrics.block_load_cached_count() as u64;
        }
        counters
    }
}

struct SqliteKv {
    dir: PathBuf,
    connection: rusqlite::Connection,
    /// The tables created so far: one per name, keyed by the key as a blob.
    tables: HashSet<&'static str>,
}

impl SqliteKv {
    fn open(dir: &Path, cache_bytes: usize) -> SqliteKv {
        SqliteKv {
            dir: dir.to_path_buf(),
            connection: Self::connection(dir, cache_bytes),
            tables: HashSet::new(),
        }
    }

    fn connection(dir: &Path, cache_bytes: usize) -> rusqlite::Connection {
        let connection = rusqlite::Connection::open(dir.join("sqlite.db")).expect("open sqlite");
        connection
            .execute_batch(&format!(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = FULL;
                 PRAGMA cache_size = -{};",
                cache_bytes >> 10
            ))
            .expect("pragmas");
        connection
    }
}

impl Kv for SqliteKv {
    fn read(&self, name: &'static str, key: &[u8], read: &mut dyn FnMut(&[u8])) -> bool {
        if !self.tables.contains(name) {
            return false;
        }
        let mut statement = self
            .connection
            .prepare_cached(&format!("SELECT v FROM {name} WHERE k = ?1"))
            .expect("prepare");
        let mut rows = statement.query([key]).expect("query");
        let row = rows.next().expect("row");
        row.map(|row| read(row.get_ref(0).expect("value").as_blob().expect("blob")))
            .is_some()
    }

    fn put_stream(&mut self, puts: &mut dyn Iterator<Item = Put>, durable: bool) {
        let synchronous = if durable { "FULL" } else { "OFF" };
        self.connection
            .execute_batch(&format!("PRAGMA synchronous = {synchronous}"))
            .expect("pragma");
        let transaction = self.connection.transaction().expect("transaction");
        for (name, key, value) in puts {
            if self.tables.insert(name) {
                transaction
                    .execute_batch(&format!(
                        "CREATE TABLE {name} (k BLOB PRIMARY KEY, v BLOB NOT NULL)"
                    ))
                    .expect("table");
            }
            transaction
                .prepare_cached(&format!(
                    "INSERT OR REPLACE INTO {name} (k, v) VALUES (?1, ?2)"
                ))
                .expect("prepare")
                .execute(rusqlite::params![key, value])
                .expect("insert");
        }
        transaction.commit().expect("commit");
    }

    fn scan(
        &self,
        name: &'static str,
        (start, end): (&[u8], &[u8]),
        newest_first: bool,
        limit: usize,
        read: &mut dyn FnMut(&[u8]),
    ) -> usize {
        if !self.tables.contains(name) {
            return 0;
        }
        let order = if newest_first { "DESC" } else { "ASC" };
        let mut statement = self
            .connection
            .prepare_cached(&format!(
                "SELECT v FROM {name} WHERE k >= ?1 AND k < ?2 ORDER BY k {order} LIMIT ?3"
            ))
            .expect("prepare");
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut rows = statement
            .query(rusqlite::params![start, end, limit])
            .expect("query");
        let mut count = 0;
        while let Some(row) = rows.next().expect("row") {
            read(row.get_ref(0).expect("value").as_blob().expect("blob"));
            count += 1;
        }
        count
    }

    fn reopen(&mut self, cache_bytes: usize) {
        let closed = rusqlite::Connection::open_in_memory().expect("in-memory sqlite");
        drop(std::mem::replace(&mut self.connection, closed));
        self.connection = Self::connection(&self.dir, cache_bytes);
    }

    fn disk_bytes(&self) -> u64 {
        crate::engines::dir_bytes(&self.dir)
    }

    fn cache_counters(&self) -> CacheCounters {
        let status = |op| {
            let (mut current, mut highwater) = (0, 0);
            // SAFETY: the handle is this open connection's, and sqlite3_db_status only
            // reads its counters into the two integers given.
            let rc = unsafe {
                rusqlite::ffi::sqlite3_db_status(
                    self.connection.handle(),
                    op,
                    &mut current,
                    &mut highwater,
                    0,
                )
            };
            assert_eq!(rc, rusqlite::ffi::SQLITE_OK, "sqlite3_db_status");
            current as u64
        };
        let hits = status(rusqlite::ffi::SQLITE_DBSTATUS_CACHE_HIT);
        let misses = status(rusqlite::ffi::SQLITE_DBSTATUS_CACHE_MISS);
        CacheCounters {
            requests: hits + misses,
            hits,
        }
    }
}
