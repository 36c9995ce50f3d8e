//! Pushes/s with concurrent clients: 16 clients (`--clients N`) pushing for 5 s
//! (`--seconds S`), each push its own durable commit, against a three-node cluster of
//! `skewdb serve` nodes on this machine (HTTP on loopback, a quorum of logs durable and the
//! leader applied before the answer) and against one local `Db` (the same clients as
//! threads, `Durability::Immediate`, group commit). Alternated, twice each.
//! `cargo bench -p skewdb-raft --bench clients`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use skewdb::{CollectionSpec, Db, Durability, Layout, NewItem, Options};
use skewdb_raft::client::Client;
use skewdb_raft::node::{NodeConfig, serve};
use skewdb_raft::{ArrayDecl, Op, Request, Response};

/// Pushes per second, and p50 and p99 in microseconds.
struct Row {
    rate: f64,
    p50: f64,
    p99: f64,
}

fn row(latencies: &[Vec<u64>], seconds: f64) -> Row {
    let mut histogram = hdrhistogram::Histogram::<u64>::new_with_max(1 << 42, 3)
        .expect("a range and precision hdrhistogram takes");
    let mut count = 0;
    for nanos in latencies.iter().flatten() {
        histogram.saturating_record(*nanos);
        count += 1;
    }
    Row {
        rate: count as f64 / seconds,
        p50: histogram.value_at_quantile(0.5) as f64 / 1e3,
        p99: histogram.value_at_quantile(0.99) as f64 / 1e3,
    }
}

fn local(clients: usize, seconds: f64) -> Row {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new().durability(Durability::Immediate)).unwrap();
    db.create_collection(
        CollectionSpec::new("users").array("followers", Layout::Outlier { inline_cap: 100 }),
    )
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut latencies = Vec::new();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let mut batch = db.batch();
                    batch.push(
                        "users",
                        format!("user{}", (c as u64 * 7919 + n) % 100),
                        "followers",
                        NewItem::new(format!("follower {c}-{n}")),
                    );
                    batch.commit().unwrap();
                    latencies.push(started.elapsed().as_nanos() as u64);
                    n += 1;
                }
                latencies
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    let latencies: Vec<Vec<u64>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    row(&latencies, seconds)
}

fn push(client: usize, n: u64) -> Request {
    Request {
        ops: vec![Op::Push {
            collection: "users".to_string(),
            key: format!("user{}", (client as u64 * 7919 + n) % 100).into_bytes(),
            field: "followers".to_string(),
            item_key: None,
            value: None,
            measures: Vec::new(),
            payload: format!("follower {client}-{n}").into_bytes(),
        }],
    }
}

async fn replicated(clients: usize, seconds: f64) -> Row {
    let dir = tempfile::tempdir().unwrap();
    let mut addrs = Vec::new();
    let mut stops = Vec::new();
    let mut nodes = Vec::new();
    for id in 1..=3u64 {
        let config = NodeConfig::new(id, dir.path().join(format!("node-{id}")), "127.0.0.1:0");
        let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        nodes.push(tokio::spawn(async move {
            serve(
                config,
                async {
                    let _ = stop_rx.await;
                },
                |addr| {
                    let _ = bound_tx.send(addr.to_string());
                },
            )
            .await
            .unwrap()
        }));
        addrs.push(bound_rx.await.unwrap());
        stops.push(stop_tx);
    }
    let admin = Client::new(addrs.clone());
    admin
        .init((1..=3).zip(addrs.iter().cloned()))
        .await
        .unwrap();
    let create = Request {
        ops: vec![Op::Create {
            collection: "users".to_string(),
            arrays: vec![ArrayDecl {
                field: "followers".to_string(),
                layout: "outlier:100".to_string(),
                measures: Vec::new(),
                rollup: None,
            }],
        }],
    };
    admin.write(&create).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (addrs, stop) = (addrs.clone(), stop.clone());
            tokio::spawn(async move {
                let client = Client::new(addrs);
                let mut latencies = Vec::new();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let done = client.write(&push(c, n)).await.unwrap();
                    assert_eq!(done.response, Response::Applied);
                    latencies.push(started.elapsed().as_nanos() as u64);
                    n += 1;
                }
                latencies
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.push(task.await.unwrap());
    }
    for stop in stops {
        let _ = stop.send(());
    }
    for node in nodes {
        node.await.unwrap();
    }
    row(&latencies, seconds)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|at| args.get(at + 1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(default)
    };
    let clients = arg("--clients", 16.0) as usize;
    let seconds = arg("--seconds", 5.0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for round in 1..=2 {
        rows.push((format!("local Db, round {round}"), local(clients, seconds)));
        let cluster = runtime.block_on(replicated(clients, seconds));
        rows.push((format!("3 nodes over HTTP, round {round}"), cluster));
    }
    println!("{clients} concurrent clients, {seconds} s each, one push per durable commit");
    println!("| path | pushes/s | p50 us | p99 us |");
    println!("|---|---|---|---|");
    for (name, r) in rows {
        println!("| {name} | {:.0} | {:.0} | {:.0} |", r.rate, r.p50, r.p99);
    }
}
