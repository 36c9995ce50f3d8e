//! Criterion benchmarks of the page cache, each beside its baseline in the same run:
//! - `get` of a cached parent with the what-if estimate on and off (the default);
//! - `get` that misses the cache and reads its leaf page from storage (the file system's
//!   cache, so this is the engine's own cost of a miss: read, checksum, decode, insert),
//!   with the default policy (S3-FIFO with a size-aware main queue), S3-FIFO and LRU.
//!
//! Push, first page of `items` and `summary` are in the `arrays` bench.
//!
//! Run: `cargo bench -p skewdb-benches --bench cache`

use criterion::{Criterion, criterion_group, criterion_main};
use skewdb::{CachePolicy, Db, Durability, Options};
use skewdb_benches::{key, temp_db};

const PARENTS: u64 = 100_000;

fn loaded(options: Options) -> (tempfile::TempDir, Db) {
    let (dir, db) = temp_db(options.durability(Durability::Buffered));
    for chunk in (0..PARENTS).collect::<Vec<_>>().chunks(10_000) {
        let mut batch = db.batch();
        for i in chunk {
            batch.put("docs", key(*i), [b'b'; 100]);
        }
        batch.commit().unwrap();
    }
    db.checkpoint().unwrap();
    (dir, db)
}

fn get_cached(c: &mut Criterion) {
    let mut group = c.benchmark_group("get_cached_among_1000");
    for (name, what_if) in [("what_if_on", true), ("what_if_off", false)] {
        let (_dir, db) = temp_db(
            Options::new()
                .durability(Durability::Buffered)
                .cache_what_if(what_if),
        );
        let mut batch = db.batch();
        for i in 0..1_000 {
            batch.put("docs", key(i), [b'b'; 100]);
        }
        batch.commit().unwrap();
        db.checkpoint().unwrap();
        let docs = db.collection("docs").unwrap();
        let keys: Vec<String> = (0..1_000).map(|i| key((i * 7919) % 1_000)).collect();
        for k in &keys {
            docs.get(k).unwrap().unwrap();
        }
        let mut next = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                next = (next + 1) % keys.len();
                docs.get(&keys[next]).unwrap()
            })
        });
    }
    group.finish();
}

fn get_missing(c: &mut Criterion) {
    let mut group = c.benchmark_group("get_missing_to_storage");
    for policy in [
        CachePolicy::S3FifoSized,
        CachePolicy::S3Fifo,
        CachePolicy::Lru,
    ] {
        let (dir, db) = loaded(Options::new());
        drop(db);
        // A budget of a few pages: the inner pages stay, nearly every leaf misses.
        let db = Db::open(
            dir.path(),
            Options::new().cache_bytes(256 * 1024).cache_policy(policy),
        )
        .unwrap();
        let docs = db.collection("docs").unwrap();
        let keys: Vec<String> = (0..PARENTS).map(|i| key((i * 7919) % PARENTS)).collect();
        let mut next = 0;
        group.bench_function(policy.name(), |b| {
            b.iter(|| {
                next = (next + 1) % keys.len();
                docs.get(&keys[next]).unwrap()
            })
        });
        let stats = db.cache_stats().hot;
        eprintln!(
            "{}: hit ratio {:.3} over {} requests",
            policy.name(),
            stats.hit_ratio(),
            stats.requests
        );
    }
    group.finish();
}

criterion_group!(benches, get_cached, get_missing);
criterion_main!(benches);
