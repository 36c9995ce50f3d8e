//! Space reclamation, two workloads, each run with automatic reclamation on (the default:
//! log cleaning and cold compaction steps after checkpoints, on the maintenance thread) and
//! off (`Options::reclaim(false)`: only segments no checkpoint needs are removed):
//!
//! - overwrite: the bodies of 100,000 parents rewritten, in batches of 10,000 in random
//!   order, until ten times the live data has been written, while a reader thread gets
//!   random parents;
//! - follower churn: a celebrity with 200,000 followers under `Outlier { inline_cap: 1000 }`;
//!   batches of 100 follows and 100 unfollows (random current followers) in ten rounds, until
//!   as many follows as followers have come and gone.
//!
//! Per run: file bytes against live bytes (both tiers) after every round and at steady
//! state (the median over the second half of the rounds), the write rate, commit latency
//! and, for the overwrite, the reader's get latency.
//!
//! Run: `cargo bench -p skewdb-benches --bench reclaim`; `-- --scale N` multiplies the
//! parents and followers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use skewdb::{CollectionSpec, Db, Durability, Layout, NewItem, Options};
use skewdb_benches::{Latency, latency};

const BODY_BYTES: usize = 200;
const BATCH: u64 = 10_000;

struct Outcome {
    steady: f64,
    worst: f64,
    writes_per_second: f64,
    commits: Latency,
    gets: Option<Latency>,
}

fn options(reclaim: bool) -> Options {
    Options::new()
        .durability(Durability::Buffered)
        .reclaim(reclaim)
}

/// File bytes per live byte over both tiers.
fn amplification(db: &Db) -> (f64, f64, f64) {
    let space = db.space().expect("space");
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    (
        space.amplification(),
        mib(space.hot.file_bytes + space.cold.file_bytes),
        mib(space.hot.live_bytes + space.cold.live_bytes),
    )
}

fn steady(ratios: &[f64]) -> (f64, f64) {
    let mut steady = ratios[ratios.len() / 2..].to_vec();
    steady.sort_by(f64::total_cmp);
    (
        steady[steady.len() / 2],
        steady.last().copied().unwrap_or(0.0),
    )
}

fn overwrite(parents: u64, reclaim: bool) -> Outcome {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Db::open(dir.path(), options(reclaim)).expect("open");
    db.create_collection(CollectionSpec::new("docs"))
        .expect("collection");
    let key = |i: u64| format!("p{i:07}");
    let body = |round: u64| format!("{round:>8} {}", "x".repeat(BODY_BYTES - 9));
    // The first round loads; the reader starts once every parent exists.
    let mut batch = db.batch();
    for i in 0..parents {
        batch.put("docs", key(i), body(0));
    }
    batch.commit().expect("load");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let docs = db.collection("docs").expect("collection");
            let mut samples = Vec::new();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i = (i + 7919) % parents;
                let started = Instant::now();
                let doc = docs.get(key(i)).expect("get");
                samples.push(started.elapsed());
                assert!(doc.is_some());
            }
            samples
        })
    };
    let live = parents * BODY_BYTES as u64;
    let mut written = live;
    let mut ratios = Vec::new();
    let mut commits = Vec::new();
    let started = Instant::now();
    let mut round = 1u64;
    while written < 10 * live {
        for start in (0..parents).step_by(BATCH as usize) {
            let mut batch = db.batch();
            for j in start..(start + BATCH).min(parents) {
                let i = (j * 7919 + round * 104_729) % parents;
                batch.put("docs", key(i), body(round));
            }
            let commit = Instant::now();
            batch.commit().expect("commit");
            commits.push(commit.elapsed());
        }
        written += live;
        round += 1;
        let (ratio, file, live) = amplification(&db);
        println!(
            "  round {round:>2}: written {:>4.1}x live, files {file:>6.1} MiB, live {live:>5.1} MiB, ratio {ratio:.2}",
            written as f64 / (parents * BODY_BYTES as u64) as f64,
        );
        ratios.push(ratio);
    }
    let seconds = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let gets = reader.join().expect("reader");
    let (steady, worst) = steady(&ratios);
    Outcome {
        steady,
        worst,
        writes_per_second: ((written - live) / BODY_BYTES as u64) as f64 / seconds,
        commits: latency(commits),
        gets: Some(latency(gets)),
    }
}

fn churn(followers: u64, reclaim: bool) -> Outcome {
    let dir = tempfile::tempdir().expect("temporary directory");
    // Segments and checkpoint interval scaled to the data, as the defaults (16 and 64 MiB)
    // are to a database of some hundreds of MiB: 200,000 followers compress to about 1.5 MiB
    // of chunks, and space comes back a segment at a time, after a checkpoint.
    let options = options(reclaim)
        .segment_bytes(256 << 10)
        .checkpoint_bytes(256 << 10);
    let db = Db::open(dir.path(), options).expect("open");
    let layout = Layout::Outlier { inline_cap: 1000 };
    db.create_collection(CollectionSpec::new("users").array("followers", layout))
        .expect("collection");
    // A follower edge: the follower's id and when it followed (the value), as an
    // application would keep them.
    let follow = |id: u64| {
        NewItem::new(format!("user{id:08}"))
            .key(id as i64)
            .value((1_700_000_000 + id) as f64)
    };
    let mut current: Vec<u64> = (0..followers).collect();
    let mut batch = db.batch();
    batch.put("users", "celebrity", "{\"name\":\"celebrity\"}");
    for &id in &current {
        batch.push("users", "celebrity", "followers", follow(id));
    }
    batch.commit().expect("load");
    let mut next_id = followers;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let per_batch = 100;
    let per_round = followers / 10;
    let mut ratios = Vec::new();
    let mut commits = Vec::new();
    let started = Instant::now();
    let mut turned = 0;
    while turned < followers {
        for _ in 0..per_round / per_batch {
            let mut batch = db.batch();
            for _ in 0..per_batch {
                batch.push("users", "celebrity", "followers", follow(next_id));
                current.push(next_id);
                next_id += 1;
                let gone = current.swap_remove((random() % current.len() as u64) as usize);
                batch.remove("users", "celebrity", "followers", gone as i64);
            }
            let commit = Instant::now();
            batch.commit().expect("commit");
            commits.push(commit.elapsed());
        }
        turned += per_round;
        let (ratio, file, live) = amplification(&db);
        println!(
            "  turned over {:>4.1}x: files {file:>6.1} MiB, live {live:>5.1} MiB, ratio {ratio:.2}",
            turned as f64 / followers as f64
        );
        ratios.push(ratio);
    }
    let seconds = started.elapsed().as_secs_f64();
    let doc = db
        .collection("users")
        .expect("collection")
        .get("celebrity")
        .expect("get")
        .expect("celebrity");
    assert_eq!(doc.array("followers").expect("array").total, followers);
    let (steady, worst) = steady(&ratios);
    Outcome {
        steady,
        worst,
        writes_per_second: (2 * turned) as f64 / seconds,
        commits: latency(commits),
        gets: None,
    }
}

fn row(name: &str, reclaim: bool, outcome: &Outcome, baseline: Option<&Outcome>) {
    let gets = outcome.gets.as_ref().map_or("-".to_string(), |g| {
        format!("{:.1} / {:.1} / {:.0}", g.p50, g.p99, g.max)
    });
    let share = baseline.map_or("-".to_string(), |b| {
        format!("{:.2}", outcome.writes_per_second / b.writes_per_second)
    });
    println!(
        "| {name} | {} | {:.2} | {:.2} | {:.0} | {share} | {:.0} / {:.0} / {:.0} | {gets} |",
        if reclaim { "on" } else { "off" },
        outcome.steady,
        outcome.worst,
        outcome.writes_per_second,
        outcome.commits.p50 / 1e3,
        outcome.commits.p99 / 1e3,
        outcome.commits.max / 1e3,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scale = args
        .iter()
        .position(|a| a == "--scale")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(1);
    let started = Instant::now();
    println!("overwrite, reclamation off:");
    let overwrite_off = overwrite(100_000 * scale, false);
    println!("overwrite, reclamation on:");
    let overwrite_on = overwrite(100_000 * scale, true);
    println!("follower churn, reclamation off:");
    let churn_off = churn(200_000 * scale, false);
    println!("follower churn, reclamation on:");
    let churn_on = churn(200_000 * scale, true);
    println!();
    println!(
        "| workload | reclamation | file/live, steady | worst round | writes/s | of the rate without | commit ms p50 / p99 / max | get us p50 / p99 / max |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    row("overwrite", false, &overwrite_off, None);
    row("overwrite", true, &overwrite_on, Some(&overwrite_off));
    row("follower churn", false, &churn_off, None);
    row("follower churn", true, &churn_on, Some(&churn_off));
    println!("\nwhole run {:.0} s", started.elapsed().as_secs_f64());
}
