//! Space reclamation under the overwrite workload: the bodies of 100,000 parents rewritten,
//! in random order batches, until ten times the live data has been written. Prints the hot
//! log's file and live bytes after every round and their ratio at steady state (the median
//! over the second half of the run), for two log segment sizes.
//!
//! Run: `cargo bench -p skewdb-benches --bench reclaim`

use std::time::Instant;

use skewdb::{CollectionSpec, Db, Durability, Options};

const PARENTS: u64 = 100_000;
const BODY_BYTES: usize = 200;
const BATCH: u64 = 10_000;

fn run(segment_mib: u64) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let options = Options::new()
        .durability(Durability::Buffered)
        .segment_bytes(segment_mib << 20);
    let db = Db::open(dir.path(), options).expect("open");
    db.create_collection(CollectionSpec::new("docs"))
        .expect("collection");
    let live = PARENTS * BODY_BYTES as u64;
    let mut written = 0u64;
    let mut ratios = Vec::new();
    let started = Instant::now();
    let mut round = 0u64;
    while written < 10 * live {
        // A fixed permutation of the parents per round, so every body is rewritten.
        for start in (0..PARENTS).step_by(BATCH as usize) {
            let mut batch = db.batch();
            for j in start..(start + BATCH).min(PARENTS) {
                let i = (j * 7919 + round * 104_729) % PARENTS;
                let body = format!("{round:>8} {}", "x".repeat(BODY_BYTES - 9));
                batch.put("docs", format!("p{i:06}"), body);
            }
            batch.commit().expect("commit");
        }
        written += live;
        round += 1;
        let space = db.space().expect("space");
        let ratio = space.hot.amplification();
        println!(
            "  round {round:>2}: written {:>4.1}x live, log files {:>6.1} MiB, live {:>5.1} MiB, ratio {ratio:.2}",
            written as f64 / live as f64,
            space.hot.file_bytes as f64 / (1 << 20) as f64,
            space.hot.live_bytes as f64 / (1 << 20) as f64,
        );
        ratios.push(ratio);
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut steady = ratios[ratios.len() / 2..].to_vec();
    steady.sort_by(f64::total_cmp);
    println!(
        "segments of {segment_mib} MiB: steady-state file/live {:.2} (median of rounds {}..{}), worst {:.2}; {:.0} puts/s",
        steady[steady.len() / 2],
        ratios.len() / 2 + 1,
        ratios.len(),
        steady.last().copied().unwrap_or(0.0),
        (written / BODY_BYTES as u64) as f64 / seconds
    );
}

fn main() {
    for segment_mib in [64, 16] {
        run(segment_mib);
    }
}
