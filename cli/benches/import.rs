//! Import throughput, through the `skewdb` binary as a user runs it: documents of about 200
//! bytes per second, and array items per second. Each case is run three times on a fresh
//! database; the median is printed. Then `advise` on a follower collection with power-law
//! follower counts: its advice, its prediction against Embed, and how long it took.
//! `cargo bench -p skewdb-cli --bench import`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rand::{Rng, SeedableRng};

const DOCUMENTS: u64 = 200_000;
const PARENTS: u64 = 1_000;
const ITEMS_PER_PARENT: u64 = 1_000;
const RUNS: usize = 3;

/// Users of about 200 bytes each, with an ObjectId, a date, numbers and a short array.
fn documents(path: &Path) -> u64 {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let mut out = String::new();
    for i in 0..DOCUMENTS {
        let _ = writeln!(
            out,
            r#"{{"_id":{{"$oid":"{:024x}"}},"name":"user{i}","email":"user{i}@example.com","age":{},"city":"Springfield","score":{},"active":true,"tags":["a","b"],"created":{{"$date":"2024-01-01T00:00:00Z"}}}}"#,
            0x65f0_a1b2_c3d4_e5f6_a7b8_c9d0u128 + i as u128,
            rng.random_range(18..90),
            rng.random::<f64>() * 100.0
        );
    }
    std::fs::write(path, &out).unwrap();
    out.len() as u64
}

/// Sensors with a thousand dated readings each, every reading `{"t": date, "v": number}`.
fn readings(path: &Path) -> u64 {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let mut out = String::new();
    for sensor in 0..PARENTS {
        let readings: Vec<String> = (0..ITEMS_PER_PARENT)
            .map(|j| {
                format!(
                    r#"{{"t":{{"$date":{{"$numberLong":"{}"}}}},"v":{:.2}}}"#,
                    1_700_000_000_000u64 + j * 1000,
                    rng.random::<f64>() * 30.0
                )
            })
            .collect();
        let _ = writeln!(
            out,
            r#"{{"_id":{sensor},"site":"north","readings":[{}]}}"#,
            readings.join(",")
        );
    }
    std::fs::write(path, &out).unwrap();
    out.len() as u64
}

/// Accounts with Pareto(1.2) follower counts (at most 2,000) and one celebrity with 200,000
/// followers, each follower `{"id": "...", "since": date}`.
fn followers(path: &Path) -> u64 {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let mut out = String::new();
    for account in 0..FOLLOWER_ACCOUNTS {
        let count = match account {
            0 => 200_000,
            _ => ((1.0 - rng.random::<f64>()).powf(-1.0 / 1.2) - 1.0).min(2000.0) as u64,
        };
        let followers: Vec<String> = (0..count)
            .map(|f| {
                format!(
                    r#"{{"id":"f{:07}","since":{{"$date":{{"$numberLong":"{}"}}}}}}"#,
                    rng.random_range(0..10_000_000),
                    1_600_000_000_000u64 + f * 1000
                )
            })
            .collect();
        let _ = writeln!(
            out,
            r#"{{"_id":"user{account:06}","name":"n{account}","followers":[{}]}}"#,
            followers.join(",")
        );
    }
    std::fs::write(path, &out).unwrap();
    out.len() as u64
}

const FOLLOWER_ACCOUNTS: u64 = 50_000;

/// The median seconds of `RUNS` imports of `file` with `extra` arguments.
fn median_seconds(dir: &Path, file: &Path, extra: &[&str]) -> f64 {
    let mut seconds = Vec::new();
    for run in 0..RUNS {
        let db = dir.join(format!("db-{run}"));
        let started = Instant::now();
        let output = Command::new(env!("CARGO_BIN_EXE_skewdb"))
            .args([
                "import",
                db.to_str().unwrap(),
                "--collection",
                "c",
                "--file",
            ])
            .arg(file)
            .args(extra)
            .output()
            .unwrap();
        seconds.push(started.elapsed().as_secs_f64());
        assert!(output.status.success(), "{output:?}");
        std::fs::remove_dir_all(&db).unwrap();
    }
    seconds.sort_by(f64::total_cmp);
    seconds[RUNS / 2]
}

fn main() {
    // `cargo bench` passes --bench; a plain run of the harness passes nothing.
    let dir = tempfile::tempdir().unwrap();
    let (docs_file, items_file) = (
        dir.path().join("users.json"),
        dir.path().join("sensors.json"),
    );
    let docs_bytes = documents(&docs_file);
    let items_bytes = readings(&items_file);
    let docs = median_seconds(dir.path(), &docs_file, &[]);
    let items = median_seconds(
        dir.path(),
        &items_file,
        &[
            "--array",
            "readings=bucket:200",
            "--item-key",
            "t",
            "--measure",
            "v",
        ],
    );
    let items_total = PARENTS * ITEMS_PER_PARENT;
    let followers_file = dir.path().join("followers.json");
    let followers_bytes = followers(&followers_file);
    let started = Instant::now();
    let advice = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(["advise", "--budget", "8MiB", "--file"])
        .arg(&followers_file)
        .output()
        .unwrap();
    let advise_seconds = started.elapsed().as_secs_f64();
    assert!(advice.status.success(), "{advice:?}");
    println!(
        "advise on {FOLLOWER_ACCOUNTS} accounts ({:.1} MB) in {advise_seconds:.1} s:",
        followers_bytes as f64 / 1e6
    );
    print!("{}", String::from_utf8_lossy(&advice.stdout));
    println!();
    println!("| input | size | median of {RUNS} | rate |");
    println!("|---|---|---|---|");
    println!(
        "| {DOCUMENTS} documents of {} bytes | {:.1} MB | {docs:.2} s | {:.0} documents/s |",
        docs_bytes / DOCUMENTS,
        docs_bytes as f64 / 1e6,
        DOCUMENTS as f64 / docs
    );
    println!(
        "| {PARENTS} parents x {ITEMS_PER_PARENT} items (bucket:200, dated, one measure) | {:.1} MB | {items:.2} s | {:.0} items/s |",
        items_bytes as f64 / 1e6,
        items_total as f64 / items
    );
}
