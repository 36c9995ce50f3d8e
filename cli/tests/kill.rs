//! `skewdb exec` under `Durability::Immediate`, killed with SIGKILL at random moments:
//! after each kill, every batch it acknowledged is present and no batch is partly present.
//! `SKEWDB_KILL_CYCLES` sets the number of cycles (default 8; the long mode runs 200).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use skewdb::{Db, Options};

const PUTS_PER_BATCH: u64 = 3;

fn cycles() -> u64 {
    std::env::var("SKEWDB_KILL_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

#[test]
fn acknowledged_batches_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let db = db_path.to_str().unwrap().to_string();
    let created = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(["create", &db, "--collection", "c"])
        .output()
        .unwrap();
    assert!(created.status.success());
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut acknowledged_total = 0;
    for cycle in 0..cycles() {
        let mut child = Command::new(env!("CARGO_BIN_EXE_skewdb"))
            .args(["exec", &db])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let acked = Arc::new(AtomicU64::new(0));
        let reader = {
            let acked = acked.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if let Some(n) = line
                        .strip_prefix("{\"committed\":")
                        .and_then(|r| r.strip_suffix('}'))
                    {
                        acked.store(n.parse().unwrap(), Ordering::SeqCst);
                    }
                }
            })
        };
        let writer = std::thread::spawn(move || {
            for batch in 0u64.. {
                let mut text = String::new();
                for put in 0..PUTS_PER_BATCH {
                    text += &format!(
                        "{{\"op\":\"put\",\"coll\":\"c\",\"key\":\"{cycle:04}-{batch:08}-{put}\",\"body\":\"{}\"}}\n",
                        "x".repeat((batch % 7 * 300) as usize)
                    );
                }
                text += "{\"op\":\"commit\"}\n";
                if stdin.write_all(text.as_bytes()).is_err() {
                    break;
                }
            }
        });
        std::thread::sleep(Duration::from_millis(rng.random_range(20..300)));
        child.kill().unwrap();
        child.wait().unwrap();
        writer.join().unwrap();
        reader.join().unwrap();
        let acknowledged = acked.load(Ordering::SeqCst);
        acknowledged_total += acknowledged;
        // Reopen: recovery runs; then check this cycle's batches.
        let handle = Db::open(&db_path, Options::new()).unwrap();
        let prefix = format!("{cycle:04}-");
        let keys: BTreeSet<String> = handle
            .collection("c")
            .unwrap()
            .scan(prefix.as_bytes()..)
            .unwrap()
            .map(|d| String::from_utf8(d.unwrap().key().to_vec()).unwrap())
            .take_while(|k| k.starts_with(&prefix))
            .collect();
        let batches: BTreeSet<u64> = keys.iter().map(|k| k[5..13].parse().unwrap()).collect();
        for batch in &batches {
            for put in 0..PUTS_PER_BATCH {
                assert!(
                    keys.contains(&format!("{cycle:04}-{batch:08}-{put}")),
                    "batch {batch} partly present"
                );
            }
        }
        for batch in 0..acknowledged {
            assert!(
                batches.contains(&batch),
                "cycle {cycle}: acknowledged batch {batch} lost"
            );
        }
        // Batches are committed in order: what survives is a prefix.
        assert_eq!(batches.len() as u64, batches.last().map_or(0, |b| b + 1));
        handle.verify().unwrap();
    }
    assert!(acknowledged_total > 0);
}
