//! The little each peer needs for the hand-written models of every workload (products,
//! sensors, followers): get, a durable transaction of puts, and a key range, over named
//! tables (redb tables, fjall keyspaces, SQLite tables with a blob primary key: rowid tables,
//! which SQLite advises for rows as large as these values).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::{CACHE_BYTES, CacheCounters};

pub trait Kv {
    fn get(&self, table: &'static str, key: &[u8]) -> Option<Vec<u8>>;
    /// Writes every put in one transaction; durable (fsync) when `durable`.
    fn put_all(&mut self, puts: Vec<(&'static str, Vec<u8>, Vec<u8>)>, durable: bool);
    /// The values of keys in `start..end`, in key order.
    fn range(&self, table: &'static str, start: &[u8], end: &[u8]) -> Vec<Vec<u8>>;
    fn disk_bytes(&self) -> u64;
    /// The engine's own cache counters: redb's read hits and misses (its `cache_metrics`
    /// feature), fjall's block loads from its cache and from disk (its `metrics` feature),
    /// SQLite's page cache hits and misses (`sqlite3_db_status`).
    fn cache_counters(&self) -> CacheCounters;
}

pub fn open(engine: &str, dir: &Path) -> Box<dyn Kv> {
    match engine {
        "redb" => Box::new(RedbKv::open(dir)),
        "fjall" => Box::new(FjallKv::open(dir)),
        "sqlite" => Box::new(SqliteKv::open(dir)),
        _ => unreachable!("unknown engine {engine}"),
    }
}

struct RedbKv {
    dir: PathBuf,
    db: redb::Database,
}

impl RedbKv {
    fn open(dir: &Path) -> RedbKv {
        let db = redb::Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(dir.join("redb"))
            .expect("open redb");
        RedbKv {
            dir: dir.to_path_buf(),
            db,
        }
    }
}

fn table(name: &'static str) -> redb::TableDefinition<'static, &'static [u8], &'static [u8]> {
    redb::TableDefinition::new(name)
}

impl Kv for RedbKv {
    fn get(&self, name: &'static str, key: &[u8]) -> Option<Vec<u8>> {
        use redb::ReadableDatabase;
        let read = self.db.begin_read().expect("read");
        let table = read.open_table(table(name)).expect("table");
        table.get(key).expect("get").map(|v| v.value().to_vec())
    }

    fn put_all(&mut self, puts: Vec<(&'static str, Vec<u8>, Vec<u8>)>, durable: bool) {
        let mut write = self.db.begin_write().expect("write");
        let durability = match durable {
            true => redb::Durability::Immediate,
            false => redb::Durability::None,
        };
        write.set_durability(durability).expect("durability");
        for (name, key, value) in &puts {
            let mut table = write.open_table(table(name)).expect("table");
            table.insert(&key[..], &value[..]).expect("insert");
        }
        write.commit().expect("commit");
    }

    fn range(&self, name: &'static str, start: &[u8], end: &[u8]) -> Vec<Vec<u8>> {
        use redb::ReadableDatabase;
        let read = self.db.begin_read().expect("read");
        let table = read.open_table(table(name)).expect("table");
        table
            .range(start..end)
            .expect("range")
            .map(|entry| entry.expect("entry").1.value().to_vec())
            .collect()
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
    fn open(dir: &Path) -> FjallKv {
        let db = fjall::Database::builder(dir.join("fjall"))
            .cache_size(CACHE_BYTES as u64)
            .open()
            .expect("open fjall");
        FjallKv {
            dir: dir.to_path_buf(),
            db,
            keyspaces: HashMap::new(),
        }
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
    fn get(&self, name: &'static str, key: &[u8]) -> Option<Vec<u8>> {
        let keyspace = self.keyspaces.get(name)?;
        keyspace.get(key).expect("get").map(|v| v.to_vec())
    }

    fn put_all(&mut self, puts: Vec<(&'static str, Vec<u8>, Vec<u8>)>, durable: bool) {
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

    fn range(&self, name: &'static str, start: &[u8], end: &[u8]) -> Vec<Vec<u8>> {
        let Some(keyspace) = self.keyspaces.get(name) else {
            return Vec::new();
        };
        keyspace
            .range(start.to_vec()..end.to_vec())
            .map(|guard| guard.value().expect("value").to_vec())
            .collect()
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
    fn open(dir: &Path) -> SqliteKv {
        let connection = rusqlite::Connection::open(dir.join("sqlite.db")).expect("open sqlite");
        connection
            .execute_batch(&format!(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = FULL;
                 PRAGMA cache_size = -{};",
                CACHE_BYTES >> 10
            ))
            .expect("pragmas");
        SqliteKv {
            dir: dir.to_path_buf(),
            connection,
            tables: HashSet::new(),
        }
    }
}

impl Kv for SqliteKv {
    fn get(&self, name: &'static str, key: &[u8]) -> Option<Vec<u8>> {
        if !self.tables.contains(name) {
            return None;
        }
        let mut statement = self
            .connection
            .prepare_cached(&format!("SELECT v FROM {name} WHERE k = ?1"))
            .expect("prepare");
        let mut rows = statement.query([key]).expect("query");
        rows.next()
            .expect("row")
            .map(|row| row.get(0).expect("value"))
    }

    fn put_all(&mut self, puts: Vec<(&'static str, Vec<u8>, Vec<u8>)>, durable: bool) {
        for (name, _, _) in &puts {
            if self.tables.insert(name) {
                self.connection
                    .execute_batch(&format!(
                        "CREATE TABLE {name} (k BLOB PRIMARY KEY, v BLOB NOT NULL)"
                    ))
                    .expect("table");
            }
        }
        let synchronous = if durable { "FULL" } else { "OFF" };
        self.connection
            .execute_batch(&format!("PRAGMA synchronous = {synchronous}"))
            .expect("pragma");
        let transaction = self.connection.transaction().expect("transaction");
        for (name, key, value) in &puts {
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

    fn range(&self, name: &'static str, start: &[u8], end: &[u8]) -> Vec<Vec<u8>> {
        if !self.tables.contains(name) {
            return Vec::new();
        }
        let mut statement = self
            .connection
            .prepare_cached(&format!(
                "SELECT v FROM {name} WHERE k >= ?1 AND k < ?2 ORDER BY k"
            ))
            .expect("prepare");
        statement
            .query_map(rusqlite::params![start, end], |row| row.get(0))
            .expect("query")
            .map(|value| value.expect("row"))
            .collect()
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
