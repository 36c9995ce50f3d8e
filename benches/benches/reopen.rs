//! Reopen time after a clean close of a large database (default 1 GiB of parent records).
//! A plain harness: builds the database once, then times several reopens and prints the
//! median. `SKEWDB_REOPEN_MIB` sets the size.
//!
//! Run: `cargo bench -p skewdb-benches --bench reopen`

use std::time::{Duration, Instant};

use skewdb::{Db, Durability, Options};
use skewdb_benches::{key, temp_db};

fn main() {
    let mib: u64 = std::env::var("SKEWDB_REOPEN_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let body_bytes = 1000u64;
    let parents = mib * 1024 * 1024 / body_bytes;
    let options = Options::new().durability(Durability::Buffered);
    let (dir, db) = temp_db(options.clone());
    let build = Instant::now();
    for start in (0..parents).step_by(10_000) {
        let mut batch = db.batch();
        for i in start..(start + 10_000).min(parents) {
            batch.put("docs", key(i), vec![(i % 251) as u8; body_bytes as usize]);
        }
        batch.commit().unwrap();
    }
    drop(db);
    let build = build.elapsed();
    let disk: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let mut times: Vec<Duration> = (0..5)
        .map(|_| {
            let started = Instant::now();
            let db = Db::open(dir.path(), options.clone()).unwrap();
            let elapsed = started.elapsed();
            // Prove the database is usable: one read.
            assert!(
                db.collection("docs")
                    .unwrap()
                    .get(key(parents / 2))
                    .unwrap()
                    .is_some()
            );
            elapsed
        })
        .collect();
    times.sort();
    println!(
        "reopen: {parents} parents of {body_bytes} B ({:.0} MiB of bodies, {:.0} MiB on disk), built in {:.1} s; \
         reopen after clean close: median {:.1} ms (min {:.1}, max {:.1}) over 5",
        (parents * body_bytes) as f64 / 1048576.0,
        disk as f64 / 1048576.0,
        build.as_secs_f64(),
        times[2].as_secs_f64() * 1000.0,
        times[0].as_secs_f64() * 1000.0,
        times[4].as_secs_f64() * 1000.0,
    );
}
