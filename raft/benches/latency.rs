//! Commit latency of one push: through a three-node cluster on this machine (quorum of
//! logs durable, applied on the leader) against a local skewdb commit of the same batch
//! (durable on return). `cargo bench -p skewdb-raft --bench latency`; `--writes N`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::{BasicNode, Config, ServerState};
use skewdb::{CollectionSpec, Db, Durability, Layout, NewItem, Options};
use skewdb_raft::network::Router;
use skewdb_raft::{ArrayDecl, Op, Request, Response, TypeConfig};

type Raft = openraft::Raft<TypeConfig>;

fn push(n: u64) -> Request {
    Request {
        ops: vec![Op::Push {
            collection: "users".to_string(),
            key: format!("user{}", n % 100).into_bytes(),
            field: "followers".to_string(),
            item_key: None,
            value: None,
            measures: Vec::new(),
            payload: format!("follower {n}").into_bytes(),
        }],
    }
}

/// Median, 99th percentile and mean, in microseconds.
fn summary(micros: Vec<f64>) -> (f64, f64, f64) {
    // Nanoseconds up to about an hour (2^42), at 3 significant figures.
    let mut histogram = hdrhistogram::Histogram::<u64>::new_with_max(1 << 42, 3)
        .expect("a range and precision hdrhistogram takes");
    for sample in &micros {
        histogram.saturating_record((sample * 1e3) as u64);
    }
    let at = |q: f64| histogram.value_at_quantile(q) as f64 / 1e3;
    let mean = micros.iter().sum::<f64>() / micros.len() as f64;
    (at(0.5), at(0.99), mean)
}

fn local(writes: u64) -> Vec<f64> {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new().durability(Durability::Immediate)).unwrap();
    db.create_collection(
        CollectionSpec::new("users").array("followers", Layout::Outlier { inline_cap: 100 }),
    )
    .unwrap();
    (0..writes)
        .map(|n| {
            let started = Instant::now();
            let mut batch = db.batch();
            let key = format!("user{}", n % 100);
            batch.push(
                "users",
                key,
                "followers",
                NewItem::new(format!("follower {n}")),
            );
            batch.commit().unwrap();
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect()
}

async fn replicated(writes: u64) -> Vec<f64> {
    let dir = tempfile::tempdir().unwrap();
    let config = Arc::new(
        Config {
            heartbeat_interval: 100,
            election_timeout_min: 400,
            election_timeout_max: 800,
            ..Config::default()
        }
        .validate()
        .unwrap(),
    );
    let router = Router::default();
    let mut nodes = BTreeMap::new();
    for id in 1..=3u64 {
        let (log, state) = skewdb_raft::open(dir.path().join(format!("node-{id}"))).unwrap();
        let raft = Raft::new(id, config.clone(), router.clone(), log, state)
            .await
            .unwrap();
        router.connect(id, raft.clone());
        nodes.insert(id, raft);
    }
    let members: BTreeMap<u64, BasicNode> = (1..=3).map(|id| (id, BasicNode::default())).collect();
    nodes[&1].initialize(members).await.unwrap();
    nodes[&1]
        .wait(Some(Duration::from_secs(10)))
        .state(ServerState::Leader, "node 1 leads")
        .await
        .unwrap();
    let leader = &nodes[&1];
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
    leader.client_write(create.into()).await.unwrap();
    let mut micros = Vec::with_capacity(writes as usize);
    for n in 0..writes {
        let started = Instant::now();
        let done = leader.client_write(push(n).into()).await.unwrap();
        micros.push(started.elapsed().as_secs_f64() * 1e6);
        assert_eq!(done.data, vec![Response::Applied]);
    }
    for raft in nodes.values() {
        raft.shutdown().await.unwrap();
    }
    micros
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let writes = args
        .iter()
        .position(|a| a == "--writes")
        .and_then(|at| args.get(at + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Alternated, twice each, so that drift on a shared machine touches both alike.
    let mut rows = Vec::new();
    for round in 1..=2 {
        rows.push((
            format!("local commit, round {round}"),
            summary(local(writes)),
        ));
        let micros = runtime.block_on(replicated(writes));
        rows.push((
            format!("replicated, 3 nodes, round {round}"),
            summary(micros),
        ));
    }
    println!("{writes} sequential pushes, each its own durable commit");
    println!("| path | p50 us | p99 us | mean us |");
    println!("|---|---|---|---|");
    for (name, (p50, p99, mean)) in rows {
        println!("| {name} | {p50:.0} | {p99:.0} | {mean:.0} |");
    }
}
