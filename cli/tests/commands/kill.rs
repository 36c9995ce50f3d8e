//! SIGKILL campaign through the CLI: `skewdb exec` commits batches (durably, the default)
//! and acknowledges each on stdout; the process is killed at a random moment, the database
//! reopened, and every acknowledged batch must be there, in order, with no hole: the
//! batches present are a prefix of those sent, at least as long as those acknowledged.
//!
//! CI runs 10 cycles. The long mode runs as many as `SKEWDB_KILL_CYCLES` says (200 or more
//! for the campaign in RELIABILITY.md):
//! `SKEWDB_KILL_CYCLES=200 cargo test --release -p skewdb-cli --test commands kill:: -- --nocapture`

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::support::skewdb;
use rand::{Rng, SeedableRng};
use skewdb::{Db, ItemQuery, Options};

const BATCH_PUTS: usize = 3;

/// Opens the database at `path`. The two tests of this file run side by side, and a child
/// the other one spawns holds, from its fork to its exec, a copy of every descriptor this
/// process has open, the lock's among them: a reopen right after a close may find the lock
/// held for that moment, so `Locked` is tried again for a while.
fn open(path: impl AsRef<std::path::Path>, options: Options) -> Db {
    let started = std::time::Instant::now();
    loop {
        match Db::open(path.as_ref(), options.clone()) {
            Err(skewdb::Error::Locked { .. }) if started.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(10));
            }
            opened => return opened.expect("open"),
        }
    }
}

/// The lines of batch `i` of cycle `cycle`: puts under the batch's own keys, a push to a
/// long history (so chunks and cold segments come and go), and a commit.
fn batch_lines(cycle: usize, i: usize) -> String {
    let mut lines = String::new();
    for k in 0..BATCH_PUTS {
        lines.push_str(&format!(
            "{{\"op\":\"put\",\"coll\":\"docs\",\"key\":\"c{cycle:04}-b{i:06}-{k}\",\"body\":\"{}\"}}\n",
            "x".repeat(50 + (i * 37 + k * 11) % 400)
        ));
    }
    lines.push_str(&format!(
        "{{\"op\":\"push\",\"coll\":\"docs\",\"key\":\"stream\",\"field\":\"log\",\"item_key\":{},\"payload\":\"{cycle}/{i} {}\"}}\n",
        cycle * 1_000_000 + i,
        "p".repeat(i % 90)
    ));
    lines.push_str("{\"op\":\"commit\"}\n");
    lines
}

/// One cycle: run `exec`, kill it after `delay`, and return how many batches it
/// acknowledged.
fn run_and_kill(db: &str, cycle: usize, delay: Duration) -> usize {
    let mut child = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(["exec", db])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn skewdb exec");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        for i in 0.. {
            if stdin.write_all(batch_lines(cycle, i).as_bytes()).is_err() {
                return;
            }
        }
    });
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut acked = 0;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            assert!(line.starts_with("{\"committed\":"), "{line}");
            acked += 1;
        }
        acked
    });
    std::thread::sleep(delay);
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    let acked = reader.join().expect("reader");
    writer.join().expect("writer");
    acked
}

/// Batches of `cycle` present in the database, checking they form a prefix.
fn present(db: &Db, cycle: usize) -> usize {
    let docs = db.collection("docs").unwrap();
    let mut count = 0;
    loop {
        let found: Vec<bool> = (0..BATCH_PUTS)
            .map(|k| {
                docs.get(format!("c{cycle:04}-b{count:06}-{k}"))
                    .unwrap()
                    .is_some()
            })
            .collect();
        match (found.iter().all(|f| *f), found.iter().any(|f| *f)) {
            (true, _) => count += 1,
            (false, false) => break,
            (false, true) => panic!("cycle {cycle} batch {count} is there in part: {found:?}"),
        }
    }
    // No hole: nothing after the first missing batch.
    for later in count + 1..count + 50 {
        assert!(
            docs.get(format!("c{cycle:04}-b{later:06}-0"))
                .unwrap()
                .is_none(),
            "cycle {cycle}: batch {later} present after missing batch {count}"
        );
    }
    count
}

#[test]
fn every_acknowledged_batch_survives_sigkill() {
    let cycles: usize = std::env::var("SKEWDB_KILL_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    let created = skewdb(&[
        "create",
        "--bytes",
        &db,
        "--collection",
        "docs",
        "--array",
        "log=reference",
    ]);
    assert!(created.status.success(), "{created:?}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let (mut acked_total, mut survived_total, mut extra) = (0, 0, 0);
    for cycle in 0..cycles {
        let delay = Duration::from_millis(rng.random_range(20..250));
        let acked = run_and_kill(&db, cycle, delay);
        let handle = open(&db, Options::new());
        let survived = present(&handle, cycle);
        assert!(
            survived >= acked,
            "cycle {cycle}: {acked} acknowledged, {survived} present"
        );
        // At most the batch in flight when the kill came is there beyond those acknowledged.
        assert!(
            survived <= acked + 1,
            "cycle {cycle}: {acked} acked, {survived} present"
        );
        let stream = handle
            .collection("docs")
            .unwrap()
            .items(
                "stream",
                "log",
                &ItemQuery::new().range(cycle as i64 * 1_000_000..),
            )
            .unwrap()
            .map_or(0, |page| page.items.len());
        assert_eq!(stream, survived, "cycle {cycle}: pushes against batches");
        if cycle % 10 == 9 {
            handle.verify().unwrap();
        }
        acked_total += acked;
        survived_total += survived;
        extra += survived - acked;
    }
    let handle = open(&db, Options::new());
    handle.verify().unwrap();
    println!(
        "{cycles} kills: {acked_total} batches acknowledged, {survived_total} present ({extra} in flight at the kill and kept), none lost"
    );
    assert!(acked_total > 0);
}

/// What every parent of collection `m` reads: its items and its whole summary, to the bit.
fn migration_answers(db: &Db) -> Vec<String> {
    let m = db.collection("m").expect("collection");
    let mut answers = Vec::new();
    for document in m.scan(..).expect("scan") {
        let document = document.expect("scan");
        let key = document.key().to_vec();
        let page = m
            .items(&key, "a", &ItemQuery::new())
            .expect("items")
            .expect("parent");
        let summary = m.summary(&key, "a", ..).expect("summary").expect("parent");
        let items: Vec<String> = page
            .items
            .iter()
            .map(|i| format!("{} {:?} {:?}", i.key, i.value, i.payload))
            .collect();
        answers.push(format!(
            "{key:?}: {} {:x} {:?}",
            items.join(","),
            summary.sum.to_bits(),
            summary.max
        ));
    }
    answers
}

/// `skewdb alter --set-layout --wait` killed at random moments, layout after layout: each
/// time the next open reads exactly what the collection held, verifies, and finishes the
/// move (`compact`). CI goes once through six layouts; the long mode as many times as
/// `SKEWDB_KILL_LAYOUT_ROUNDS` says (RELIABILITY.md):
/// `SKEWDB_KILL_LAYOUT_ROUNDS=20 cargo test --release -p skewdb-cli --test commands kill:: -- --nocapture`
#[test]
fn a_layout_change_killed_at_any_moment_reads_the_same_and_finishes() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("db");
    let db_arg = path.to_str().expect("UTF-8 path").to_string();
    {
        // Enough items that a move outlasts the first of the kill's delays.
        let options = Options::new().durability(skewdb::Durability::Buffered);
        let db = open(&path, options);
        let spec = skewdb::CollectionSpec::new("m").array("a", skewdb::Layout::Embed);
        db.create_collection(spec).expect("create");
        for parent in 0..3_000u32 {
            let mut batch = db.batch();
            for n in 0..(parent % 60) as i64 {
                let item = skewdb::NewItem::new(format!("{parent}/{n}"))
                    .key((n * 7) % 50)
                    .value(n as f64 * 0.5);
                batch.push("m", format!("p{parent:04}"), "a", item);
            }
            batch.commit().expect("load");
        }
        db.checkpoint().expect("the load made durable");
    }
    let before = migration_answers(&open(&path, Options::new()));
    let rounds: usize = std::env::var("SKEWDB_KILL_LAYOUT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (mut previous, mut took, mut mid_move) = ("embed", 0, 0);
    let layouts = [
        "subset:3",
        "reference",
        "outlier:5",
        "bucket:4:20",
        "embed",
        "subset:8",
    ];
    let started = std::time::Instant::now();
    for (cycle, layout) in layouts.into_iter().cycle().take(6 * rounds).enumerate() {
        let set = format!("a={layout}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_skewdb"))
            .args(["alter", &db_arg, "m", "--set-layout", &set, "--wait"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn skewdb alter");
        std::thread::sleep(Duration::from_millis(rng.random_range(40..250)));
        let _ = child.kill();
        let _ = child.wait();
        // No maintenance thread: the move stays where the kill left it until `compact`.
        let db = open(&path, Options::new().background(false));
        mid_move += usize::from(!db.stats().expect("stats").migrations.is_empty());
        assert!(
            migration_answers(&db) == before,
            "cycle {cycle}: reads changed"
        );
        db.verify().expect("verify after the kill");
        db.compact().expect("compact finishes the move");
        assert!(
            db.stats().expect("stats").migrations.is_empty(),
            "cycle {cycle}"
        );
        assert!(
            migration_answers(&db) == before,
            "cycle {cycle}: reads changed by the move"
        );
        // Killed before its commit, the change did not take: the layout is the one before.
        let spec = db.collection("m").expect("collection").spec().clone();
        let now = spec.arrays()[0].layout.describe();
        assert!(now == layout || now == previous, "cycle {cycle}: {now}");
        if now == layout {
            (previous, took) = (layout, took + 1);
        }
    }
    println!(
        "{} kills of a layout change, {took} changes committed before their kill, {mid_move} \
         kills in the middle of the move; reads the same after each and after its move \
         finished, in {:.0} s",
        6 * rounds,
        started.elapsed().as_secs_f64()
    );
    assert!(
        took >= 2 * rounds,
        "only {took} of the changes were committed before their kill"
    );
    assert!(
        mid_move >= rounds,
        "{mid_move} kills in the middle of a move"
    );
}
