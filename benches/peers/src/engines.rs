//! The stores: skewdb with its native layout, and each peer with the two models
//! applications write by hand.

use std::path::{Path, PathBuf};

use skewdb::{Collection, CollectionSpec, Db, ItemQuery, Layout, NewItem};

use crate::data::{self, Product, Review};
use crate::kv::{self, Kv};
use crate::{CacheCounters, Store};

/// Newest reviews a product page shows and the Subset models keep with the product.
const KEEP: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// skewdb's `Subset { keep: 5 }`.
    Native,
    /// skewdb's `Embed`: every review inline in the product's record.
    NativeEmbed,
    /// Every review inside the product's value.
    Embedded,
    /// The product's value with its 5 newest reviews, the others in a history table keyed by
    /// product and time, written in the same transaction.
    HandSubset,
}

impl Model {
    /// Whether every review lives with the product (the naive baseline).
    pub fn embeds(self) -> bool {
        matches!(self, Model::NativeEmbed | Model::Embedded)
    }
}

impl std::fmt::Display for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Model::Native => "native Subset",
            Model::NativeEmbed => "native Embed",
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
    }
    all.push(("skewdb", Model::NativeEmbed));
    for engine in ["redb", "fjall", "sqlite"] {
        all.push((engine, Model::Embedded));
    }
    all
}

pub fn open(engine: &str, model: Model, dir: &Path, cache_bytes: usize) -> Box<dyn Store> {
    match engine {
        "skewdb" => Box::new(Skew::open(dir, model, cache_bytes)),
        _ => Box::new(Peer::open(engine, dir, model, cache_bytes)),
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

/// A skewdb page cache's (requests, hits) counters: pages and chunks, not the record tier.
pub fn skew_counters(db: &Db) -> CacheCounters {
    let stats = db.cache_stats();
    CacheCounters {
        requests: stats.hot.requests + stats.cold.requests,
        hits: stats.hot.hits + stats.cold.hits,
    }
}

/// Commits a loading batch once it holds 20,000 operations, and starts the next.
pub fn commit_when_full(batch: &mut skewdb::Batch) {
    if batch.len() >= 20_000 {
        batch.commit().expect("load");
    }
}

fn product_key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

// ---------------------------------------------------------------- skewdb

struct Skew {
    dir: PathBuf,
    /// The database and its collection; `None` only while reopening.
    open: Option<(Db, Collection)>,
}

impl Skew {
    fn open(dir: &Path, model: Model, cache_bytes: usize) -> Skew {
        let db = Db::open(dir, crate::skew_options(cache_bytes)).expect("open skewdb");
        let layout = match model {
            Model::NativeEmbed => Layout::Embed,
            _ => Layout::Subset { keep: KEEP as u32 },
        };
        let spec = CollectionSpec::new("products").array("reviews", layout);
        let products = db.create_collection(spec).expect("collection");
        Skew {
            dir: dir.to_path_buf(),
            open: Some((db, products)),
        }
    }

    fn db(&self) -> &Db {
        &self.open.as_ref().expect("open").0
    }

    fn products(&self) -> &Collection {
        &self.open.as_ref().expect("open").1
    }
}

impl Store for Skew {
    fn load(&mut self, products: &[Product]) {
        let mut batch = self.db().batch();
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
            commit_when_full(&mut batch);
        }
        batch.commit().expect("load");
    }

    fn load_transaction(&mut self, products: &mut dyn Iterator<Item = Product>) {
        let mut txn = self.db().transaction();
        for product in products {
            txn.put("products", product_key(product.id), &product.body);
            for review in product.reviews {
                let item = NewItem::new(review.text).key(review.time);
                txn.push("products", product_key(product.id), "reviews", item);
            }
        }
        txn.commit().expect("load");
    }

    fn finish_load(&mut self) {
        self.db().compact().expect("compact");
    }

    fn view(&mut self, id: u64) -> usize {
        let doc = self
            .products()
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
        let mut batch = self.db().batch();
        batch.push(
            "products",
            product_key(id),
            "reviews",
            NewItem::new(review.text.clone()).key(review.time),
        );
        batch.commit().expect("append");
    }

    fn page(&mut self, id: u64) -> (usize, usize) {
        // Each review read in place, as the peers read their values.
        let query = ItemQuery::new().descending().limit(data::PAGE);
        let mut bytes = 0;
        let visited = self
            .products()
            .for_each_item(product_key(id), "reviews", &query, |review| {
                bytes += review.payload().len();
            })
            .expect("items")
            .expect("product");
        (visited.items, bytes)
    }

    fn reopen(&mut self, cache_bytes: usize) {
        drop(self.open.take());
        let db = Db::open(&self.dir, crate::skew_options(cache_bytes)).expect("reopen skewdb");
        let products = db.collection("products").expect("collection");
        self.open = Some((db, products));
    }

    fn disk_bytes(&self) -> u64 {
        dir_bytes(&self.dir)
    }

    fn cache_counters(&self) -> Option<CacheCounters> {
        Some(skew_counters(self.db()))
    }
}

// ---------------------------------------------------------------- the peers

const PRODUCTS: &str = "products";
const HISTORY: &str = "history";

/// A peer with the product pages modelled by hand on its tables (see [`crate::kv`]).
struct Peer {
    kv: Box<dyn Kv>,
    model: Model,
}

impl Peer {
    fn open(engine: &str, dir: &Path, model: Model, cache_bytes: usize) -> Peer {
        Peer {
            kv: kv::open(engine, dir, cache_bytes),
            model,
        }
    }
}

/// The puts that store `product` under `model`: a value per product (reviews embedded, or
/// the newest [`KEEP`] of them), and a key per older review in the history table.
fn puts_of(model: Model, product: &Product) -> Vec<kv::Put> {
    let mut puts = Vec::new();
    let value = match model {
        Model::Embedded => data::encode(&product.body, &product.reviews),
        _ => {
            let split = product.reviews.len().saturating_sub(KEEP);
            for review in &product.reviews[..split] {
                let key = data::history_key(product.id, review.time);
                puts.push((HISTORY, key.to_vec(), review.text.clone()));
            }
            data::encode(&product.body, &product.reviews[split..])
        }
    };
    puts.push((PRODUCTS, product_key(product.id).to_vec(), value));
    puts
}

impl Store for Peer {
    fn load(&mut self, products: &[Product]) {
        let mut puts = Vec::new();
        for product in products {
            puts.extend(puts_of(self.model, product));
            if puts.len() >= 20_000 {
                self.kv.put_all(std::mem::take(&mut puts), false);
            }
        }
        self.kv.put_all(puts, true);
    }

    fn load_transaction(&mut self, products: &mut dyn Iterator<Item = Product>) {
        let model = self.model;
        let mut puts = products.flat_map(|product| puts_of(model, &product));
        self.kv.put_stream(&mut puts, true);
    }

    fn view(&mut self, id: u64) -> usize {
        let mut rendered = 0;
        let found = self.kv.read(PRODUCTS, &product_key(id), &mut |v| {
            rendered = data::rendered(v)
        });
        assert!(found, "product {id}");
        rendered
    }

    fn append(&mut self, id: u64, review: &Review) {
        let value = self.kv.get(PRODUCTS, &product_key(id)).expect("product");
        let (body, mut reviews) = data::decode(&value);
        let left = match self.model {
            Model::Embedded => {
                reviews.push(review.clone());
                None
            }
            _ => data::keep_newest(&mut reviews, review.clone(), KEEP),
        };
        let mut puts = vec![(
            PRODUCTS,
            product_key(id).to_vec(),
            data::encode(&body, &reviews),
        )];
        if let Some(left) = left {
            puts.push((
                HISTORY,
                data::history_key(id, left.time).to_vec(),
                left.text,
            ));
        }
        self.kv.put_all(puts, true);
    }

    fn page(&mut self, id: u64) -> (usize, usize) {
        let (mut count, mut bytes) = (0, 0);
        self.kv.read(PRODUCTS, &product_key(id), &mut |v| {
            for (_, text) in data::InPlace::new(v).newest().take(data::PAGE) {
                count += 1;
                bytes += text.len();
            }
        });
        if self.model == Model::HandSubset && count == KEEP {
            let (start, end) = (data::history_key(id, 0), data::history_key(id + 1, 0));
            let rest = data::PAGE - count;
            count += self.kv.scan(HISTORY, (&start, &end), true, rest, &mut |v| {
                bytes += v.len()
            });
        }
        (count, bytes)
    }

    fn reopen(&mut self, cache_bytes: usize) {
        self.kv.reopen(cache_bytes);
    }

    fn disk_bytes(&self) -> u64 {
        self.kv.disk_bytes()
    }

    fn cache_counters(&self) -> Option<CacheCounters> {
        Some(self.kv.cache_counters())
    }
}
