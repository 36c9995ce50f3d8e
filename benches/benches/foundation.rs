//! Criterion benchmarks of the engine foundation:
//! - `get` of a cached parent with a 100-byte body;
//! - `put` in batches of 1,000 under `Durability::Buffered`;
//! - commit latency under `Durability::Immediate` beside the raw latency of a write plus
//!   fsync of the same size on the same file system, measured in the same run.
//!
//! Run: `cargo bench -p skewdb-benches --bench foundation`

use std::fs::OpenOptions;
use std::io::Write;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use skewdb::{Durability, Options};
use skewdb_benches::{key, temp_db};

const PARENTS: u64 = 100_000;

fn get_cached(c: &mut Criterion) {
    get_cached_among(c, 1_000);
    get_cached_among(c, PARENTS);
}

/// `get` of random parents among `parents`, all resident in the page cache: with 1,000
/// the pages also fit the CPU caches; with 100,000 each lookup misses them.
fn get_cached_among(c: &mut Criterion, parents: u64) {
    let (_dir, db) = temp_db(Options::new().durability(Durability::Buffered));
    for chunk in (0..parents).collect::<Vec<_>>().chunks(10_000) {
        let mut batch = db.batch();
        for i in chunk {
            batch.put("docs", key(*i), [b'b'; 100]);
        }
        batch.commit().unwrap();
    }
    db.checkpoint().unwrap();
    let docs = db.collection("docs").unwrap();
    let keys: Vec<String> = (0..parents).map(|i| key((i * 7919) % parents)).collect();
    // Warm the cache: every page of the tree is resident.
    for k in &keys {
        docs.get(k).unwrap().unwrap();
    }
    let mut next = 0;
    c.bench_function(&format!("get/cached_100B_body_among_{parents}"), |b| {
        b.iter(|| {
            next = (next + 1) % keys.len();
            docs.get(&keys[next]).unwrap()
        })
    });
}

fn put_batches(c: &mut Criterion) {
    let mut group = c.benchmark_group("put");
    group.throughput(Throughput::Elements(1000));
    group.bench_function("batch_of_1000_buffered_100B", |b| {
        let (_dir, db) = temp_db(Options::new().durability(Durability::Buffered));
        let mut next = 0u64;
        b.iter(|| {
            let mut batch = db.batch();
            for _ in 0..1000 {
                // Scattered keys: each batch touches many leaves, as real ingest does.
                batch.put(
                    "docs",
                    key(next.wrapping_mul(0x9E37_79B9) % 10_000_000),
                    [b'v'; 100],
                );
                next += 1;
            }
            batch.commit().unwrap();
        })
    });
    group.bench_function("batch_of_1000_buffered_100B_sequential", |b| {
        let (_dir, db) = temp_db(Options::new().durability(Durability::Buffered));
        let mut next = 0u64;
        b.iter(|| {
            let mut batch = db.batch();
            for _ in 0..1000 {
                batch.put("docs", key(next), [b'v'; 100]);
                next += 1;
            }
            batch.commit().unwrap();
        })
    });
    group.finish();
}

fn commit_latency(c: &mut Criterion) {
    let mut group = c.benchmark_group("commit_immediate_vs_raw_fsync");
    // One put of a 100-byte body: its redo frame is about this many bytes.
    let frame_bytes = 25 + 1 + 4 + 2 + 16 + 4 + 107;
    group.bench_function("raw_write_fsync", |b| {
        let dir = tempfile::tempdir().unwrap();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("raw"))
            .unwrap();
        let data = vec![7u8; frame_bytes];
        b.iter(|| {
            file.write_all(&data).unwrap();
            file.sync_data().unwrap();
        })
    });
    group.bench_function("skewdb_commit_one_put", |b| {
        let (_dir, db) = temp_db(Options::new().durability(Durability::Immediate));
        let mut next = 0u64;
        b.iter_batched(
            || {
                next += 1;
                let mut batch = db.batch();
                batch.put("docs", key(next), [b'v'; 100]);
                batch
            },
            |mut batch| batch.commit().unwrap(),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, get_cached, put_batches, commit_latency);
criterion_main!(benches);
