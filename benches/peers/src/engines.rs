//! The stores: skewdb with its native layout, and each peer with the two models
//! applications write by hand.

use std::path::{Path, PathBuf};

use skewdb::{Collection, CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};

use crate::data::{self, Product, Review};
use crate::{CACHE_BYTES, Store};

/// Newest reviews a product page shows and the Subset models keep with the product.
const KEEP: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// skewdb's `Subset { keep: 5 }`.
    Native,
    /// Every review inside the product's value.
    Embedded,
    /// The product's value with its 5 newest reviews, the others in a history table keyed by
    /// product and time, written in the same transaction.
    HandSubset,
}

impl std::fmt::Display for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Model::Native => "native Subset",
            Model::Embedded => "embedded",
            Model::HandSubset => "hand-coded Subset",
        })
    }
}

/// Every engine and model the run measures, skewdb first.
pub fn all() -> Vec<(&'static str, Model)> {
    let mut all = vec![("skewdb", Model::Native)];
    for engine in ["redb", "fjall", "sqlite"] {
        all.push((engine, Model::HandSubset));
        all.push((engine, Model::Embedded));
    }
    all
}

pub fn open(engine: &str, model: Model, dir: &Path) -> Box<dyn Store> {
    match engine {
        "skewdb" => Box::new(Skew::open(dir)),
        "redb" => Box::new(Redb::open(dir, model)),
        "fjall" => Box::new(Fjall::open(dir, model)),
        "sqlite" => Box::new(Sqlite::open(dir, model)),
        _ => unreachable!("unknown engine {engine}"),
    }
}

/// Bytes of every file under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            dir_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

/// Hits per request between two readings of (requests, hits) counters.
fn hit_ratio_since(now: (u64, u64), baseline: (u64, u64)) -> Option<f64> {
    let requests = now.0 - baseline.0;
    (requests > 0).then(|| (now.1 - baseline.1) as f64 / requests as f64)
}

/// Commits a loading batch once it holds 20,000 operations, and starts the next.
pub fn commit_when_full(db: &Db, batch: &mut skewdb::Batch) {
    if batch.len() >= 20_000 {
        std::mem::replace(batch, db.batch()).commit().expect("load");
    }
}

fn product_key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

// ---------------------------------------------------------------- skewdb

struct Skew {
    dir: PathBuf,
    db: Db,
    products: Collection,
    baseline: (u64, u64),
}

impl Skew {
    fn open(dir: &Path) -> Skew {
        let db = Db::open(dir, Options::new().cache_bytes(CACHE_BYTES)).expect("open skewdb");
        let spec = CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 5 });
        let products = db.create_collection(spec).expect("collection");
        Skew {
            dir: dir.to_path_buf(),
            db,
            products,
            baseline: (0, 0),
        }
    }

    fn counters(&self) -> (u64, u64) {
        let total = self.db.cache_stats().total();
        (total.requests, total.hits)
    }
}

impl Store for Skew {
    fn load(&mut self, products: &[Product]) {
        let mut batch = self.db.batch();
        for product in products {
            batch.put("products", product_key(product.id), &product.body);
            for review in &product.reviews {
                batch.push(
                    "products",
                    product_key(product.id),
                    "reviews",
                    NewItem::new(review.text.clone()).key(review.time),
                );
            }
            commit_when_full(&self.db, &mut batch);
        }
        batch.commit().expect("load");
        self.db.compact().expect("compact");
    }

    fn view(&mut self, id: u64) -> usize {
        let doc = self
            .products
            .get(product_key(id))
            .expect("get")
            .expect("product");
        let reviews = &doc.array("reviews").expect("reviews").inline;
        doc.body().len()
            + reviews
                .iter()
                .rev()
                .take(KEEP)
                .map(|r| r.payload.len())
                .sum::<usize>()
    }

    fn append(&mut self, id: u64, review: &Review) {
        let mut batch = self.db.batch();
        batch.push(
            "products",
            product_key(id),
            "reviews",
            NewItem::new(review.text.clone()).key(review.time),
        );
        batch.commit().expect("append");
    }

    fn show_all(&mut self, id: u64) -> usize {
        let query = ItemQuery::new().descending();
        let page = self.products.items(product_key(id), "reviews", &query);
        page.expect("items").expect("product").items.len()
    }

    fn disk_bytes(&self) -> u64 {
        dir_bytes(&self.dir)
    }

    fn hit_ratio(&self) -> Option<f64> {
        hit_ratio_since(self.counters(), self.baseline)
    }

    fn reset_stats(&mut self) {
        self.baseline = self.counters();
    }
}

// ---------------------------------------------------------------- redb

const REDB_PRODUCTS: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("products");
const REDB_HISTORY: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("history");

struct Redb {
    dir: PathBuf,
    db: redb::Database,
    model: Model,
    baseline: (u64, u64),
}

impl Redb {
    fn open(dir: &Path, model: Model) -> Redb {
        let db = redb::Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(dir.join("redb"))
            .expect("open redb");
        Redb {
            dir: dir.to_path_buf(),
            db,
            model,
            baseline: (0, 0),
        }
    }

    fn counters(&self) -> (u64, u64) {
        use redb::ReadableDatabase;
        let stats = self.db.cache_stats();
        (stats.read_hits() + stats.read_misses(), stats.read_hits())
    }

    fn product(&self, id: u64) -> Vec<u8> {
        use redb::ReadableDatabase;
        let read = self.db.begin_read().expect("read");
        let table = read.open_table(REDB_PRODUCTS).expect("table");
        let value = table
            .get(&product_key(id)[..])
            .expect("get")
            .expect("product");
        value.value().to_vec()
    }
}

impl Store for Redb {
    fn load(&mut self, products: &[Product]) {
        let write = self.db.begin_write().expect("write");
        {
            let mut table = write.open_table(REDB_PRODUCTS).expect("table");
            let mut history = write.open_table(REDB_HISTORY).expect("table");
            for product in products {
                let value = match self.model {
                    Model::Embedded => data::encode(&product.body, &product.reviews),
                    _ => {
                        let split = product.reviews.len().saturating_sub(KEEP);
                        for review in &product.reviews[..split] {
                            let key = data::history_key(product.id, review.time);
                            history.insert(&key[..], &review.text[..]).expect("insert");
                        }
                        data::encode(&product.body, &product.reviews[split..])
                    }
                };
                table
                    .insert(&product_key(product.id)[..], &value[..])
                    .expect("insert");
            }
        }
        write.commit().expect("commit");
    }

    fn view(&mut self, id: u64) -> usize {
        let (body, reviews) = data::decode(&self.product(id));
        data::rendered(&body, &reviews)
    }

    fn append(&mut self, id: u64, review: &Review) {
        use redb::ReadableTable;
        let write = self.db.begin_write().expect("write");
        {
            let mut table = write.open_table(REDB_PRODUCTS).expect("table");
            let old = table
                .get(&product_key(id)[..])
                .expect("get")
                .expect("product")
                .value()
                .to_vec();
            let (body, mut reviews) = data::decode(&old);
            let left = match self.model {
                Model::Embedded => {
                    reviews.push(review.clone());
                    None
                }
                _ => data::keep_newest(&mut reviews, review.clone(), KEEP),
            };
            table
                .insert(&product_key(id)[..], &data::encode(&body, &reviews)[..])
                .expect("insert");
            if let Some(left) = left {
                let mut history = write.open_table(REDB_HISTORY).expect("table");
                let key = data::history_key(id, left.time);
                history.insert(&key[..], &left.text[..]).expect("insert");
            }
        }
        write.commit().expect("commit");
    }

    fn show_all(&mut self, id: u64) -> usize {
        use redb::ReadableDatabase;
        let (_, newest) = data::decode(&self.product(id));
        if self.model == Model::Embedded {
            return newest.len();
        }
        let read = self.db.begin_read().expect("read");
        let history = read.open_table(REDB_HISTORY).expect("table");
        let start = data::history_key(id, 0);
        let end = data::history_key(id + 1, 0);
        let older = history
            .range(&start[..]..&end[..])
            .expect("range")
            .rev()
            .map(|entry| entry.expect("entry").1.value().len())
            .filter(|len| *len > 0)
            .count();
        newest.len() + older
    }

    fn disk_bytes(&self) -> u64 {
        dir_bytes(&self.dir)
    }

    fn hit_ratio(&self) -> Option<f64> {
        hit_ratio_since(self.counters(), self.baseline)
    }

    fn reset_stats(&mut self) {
        self.baseline = self.counters();
    }
}

// ---------------------------------------------------------------- fjall

struct Fjall {
    dir: PathBuf,
    db: fjall::Database,
    products: fjall::Keyspace,
    history: fjall::Keyspace,
    model: Model,
}

impl Fjall {
    fn open(dir: &Path, model: Model) -> Fjall {
        let db = fjall::Database::builder(dir.join("fjall"))
            .cache_size(CACHE_BYTES as u64)
            .open()
            .expect("open fjall");
        let products = db
            .keyspace("products", fjall::KeyspaceCreateOptions::default)
            .expect("keyspace");
        let history = db
            .keyspace("history", fjall::KeyspaceCreateOptions::default)
            .expect("keyspace");
        Fjall {
            dir: dir.to_path_buf(),
            db,
            products,
            history,
            model,
        }
    }

    fn product(&self, id: u64) -> Vec<u8> {
        self.products
            .get(product_key(id))
            .expect("get")
            .expect("product")
            .to_vec()
    }
}

impl Store for Fjall {
    fn load(&mut self, products: &[Product]) {
        let mut batch = self.db.batch();
        for product in products {
            let value = match self.model {
                Model::Embedded => data::encode(&product.body, &product.reviews),
                _ => {
                    let split = product.reviews.len().saturating_sub(KEEP);
                    for review in &product.reviews[..split] {
                        let key = data::history_key(product.id, review.time);
                        batch.insert(&self.history, key.to_vec(), review.text.clone());
                    }
                    data::encode(&product.body, &product.reviews[split..])
                }
            };
            batch.insert(&self.products, product_key(product.id).to_vec(), value);
            if batch.len() >= 20_000 {
                std::mem::replace(&mut batch, self.db.batch())
                    .commit()
                    .expect("load");
            }
        }
        batch.commit().expect("load");
        self.db
            .persist(fjall::PersistMode::SyncAll)
            .expect("persist");
    }

    fn view(&mut self, id: u64) -> usize {
        let (body, reviews) = data::decode(&self.product(id));
        data::rendered(&body, &reviews)
    }

    fn append(&mut self, id: u64, review: &Review) {
        let (body, mut reviews) = data::decode(&self.product(id));
        let mut batch = self
            .db
            .batch()
            .durability(Some(fjall::PersistMode::SyncAll));
        let left = match self.model {
            Model::Embedded => {
                reviews.push(review.clone());
                None
            }
            _ => data::keep_newest(&mut reviews, review.clone(), KEEP),
        };
        batch.insert(
            &self.products,
            product_key(id).to_vec(),
            data::encode(&body, &reviews),
        );
        if let Some(left) = left {
            batch.insert(
                &self.history,
                data::history_key(id, left.time).to_vec(),
                left.text,
            );
        }
        batch.commit().expect("commit");
    }

    fn show_all(&mut self, id: u64) -> usize {
        let (_, newest) = data::decode(&self.product(id));
        if self.model == Model::Embedded {
            return newest.len();
        }
        let older = self
            .history
            .prefix(product_key(id))
            .rev()
            .map(|guard| guard.value().expect("value").len())
            .filter(|len| *len > 0)
            .count();
        newest.len() + older
    }

    fn disk_bytes(&self) -> u64 {
        dir_bytes(&self.dir)
    }
}

// ---------------------------------------------------------------- SQLite

struct Sqlite {
    dir: PathBuf,
    connection: rusqlite::Connection,
    model: Model,
}

impl Sqlite {
    fn open(dir: &Path, model: Model) -> Sqlite {
        let connection = rusqlite::Connection::open(dir.join("sqlite.db")).expect("open sqlite");
        connection
            .execute_batch(&format!(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = FULL;
                 PRAGMA cache_size = -{};
                 CREATE TABLE products (id INTEGER PRIMARY KEY, doc BLOB NOT NULL);
                 CREATE TABLE history (pid INTEGER NOT NULL, ts INTEGER NOT NULL,
                     review BLOB NOT NULL, PRIMARY KEY (pid, ts)) WITHOUT ROWID;",
                CACHE_BYTES >> 10
            ))
            .expect("schema");
        Sqlite {
            dir: dir.to_path_buf(),
            connection,
            model,
        }
    }

    fn product(&self, id: u64) -> Vec<u8> {
        let mut statement = self
            .connection
            .prepare_cached("SELECT doc FROM products WHERE id = ?1")
            .expect("prepare");
        statement
            .query_row([id as i64], |row| row.get::<_, Vec<u8>>(0))
            .expect("product")
    }
}

impl Store for Sqlite {
    fn load(&mut self, products: &[Product]) {
        let transaction = self.connection.transaction().expect("transaction");
        {
            let mut insert = transaction
                .prepare("INSERT INTO products (id, doc) VALUES (?1, ?2)")
                .expect("prepare");
            let mut history = transaction
                .prepare("INSERT INTO history (pid, ts, review) VALUES (?1, ?2, ?3)")
                .expect("prepare");
            for product in products {
                let value = match self.model {
                    Model::Embedded => data::encode(&product.body, &product.reviews),
                    _ => {
                        let split = product.reviews.len().saturating_sub(KEEP);
                        for review in &product.reviews[..split] {
                            history
                                .execute(rusqlite::params![
                                    product.id as i64,
                                    review.time,
                                    review.text
                                ])
                                .expect("insert");
                        }
                        data::encode(&product.body, &product.reviews[split..])
                    }
                };
                insert
                    .execute(rusqlite::params![product.id as i64, value])
                    .expect("insert");
            }
        }
        transaction.commit().expect("commit");
    }

    fn view(&mut self, id: u64) -> usize {
        let (body, reviews) = data::decode(&self.product(id));
        data::rendered(&body, &reviews)
    }

    fn append(&mut self, id: u64, review: &Review) {
        let model = self.model;
        let transaction = self.connection.transaction().expect("transaction");
        {
            let old: Vec<u8> = transaction
                .prepare_cached("SELECT doc FROM products WHERE id = ?1")
                .expect("prepare")
                .query_row([id as i64], |row| row.get(0))
                .expect("product");
            let (body, mut reviews) = data::decode(&old);
            let left = match model {
                Model::Embedded => {
                    reviews.push(review.clone());
                    None
                }
                _ => data::keep_newest(&mut reviews, review.clone(), KEEP),
            };
            transaction
                .prepare_cached("UPDATE products SET doc = ?2 WHERE id = ?1")
                .expect("prepare")
                .execute(rusqlite::params![id as i64, data::encode(&body, &reviews)])
                .expect("update");
            if let Some(left) = left {
                transaction
                    .prepare_cached("INSERT INTO history (pid, ts, review) VALUES (?1, ?2, ?3)")
                    .expect("prepare")
                    .execute(rusqlite::params![id as i64, left.time, left.text])
                    .expect("insert");
            }
        }
        transaction.commit().expect("commit");
    }

    fn show_all(&mut self, id: u64) -> usize {
        let (_, newest) = data::decode(&self.product(id));
        if self.model == Model::Embedded {
            return newest.len();
        }
        let mut statement = self
            .connection
            .prepare_cached("SELECT review FROM history WHERE pid = ?1 ORDER BY ts DESC")
            .expect("prepare");
        let older = statement
            .query_map([id as i64], |row| row.get::<_, Vec<u8>>(0))
            .expect("query")
            .map(|review| review.expect("row").len())
            .filter(|len| *len > 0)
            .count();
        newest.len() + older
    }

    fn disk_bytes(&self) -> u64 {
        dir_bytes(&self.dir)
    }
}
