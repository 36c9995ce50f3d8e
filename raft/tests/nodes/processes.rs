//! Three nodes as real processes on loopback (this test binary started again as a node,
//! `node_process`), clients writing and reading every layout through HTTP while faults hit
//! the nodes: the leader killed (SIGKILL) and restarted, a node paused (SIGSTOP) past the
//! election timeout and resumed, a node's directory wiped and the node re-joined by
//! snapshot (removed and added back), then a follower's and the leader's directories wiped
//! and each restarted under its id as it was (it rejoins by itself). The history of each parent (invocations, completions, unknown outcomes) is
//! checked for linearizability against a model; every acknowledged write must be in the
//! final state and nothing never written may be. Reads from followers with the client's
//! last write index must see that write.
//!
//! `SKEWDB_CLUSTER_ROUNDS=N` runs N rounds of the five faults (1 by default, in CI);
//! `SKEWDB_CLUSTER_CLIENTS=N` sets the concurrent clients (4).

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::linearizable::{self, Action, Operation};
use skewdb_raft::api::{DocumentJson, ReadReply};
use skewdb_raft::client::{Client, ClientError};
use skewdb_raft::node::{NodeConfig, serve};
use skewdb_raft::{ArrayDecl, Op, Request, Response};

const NODE_ENV: &str = "SKEWDB_TEST_NODE";

/// The node a cluster test starts: this binary, run with `--ignored --exact
/// processes::node_process` and `SKEWDB_TEST_NODE=ID,DIR,ADDR`; it serves until killed.
#[test]
#[ignore = "a node process, started by the cluster tests"]
fn node_process() {
    let spec = std::env::var(NODE_ENV).expect("SKEWDB_TEST_NODE=ID,DIR,ADDR");
    // Warnings and errors (openraft's among them) to stderr, the node's log file, which a
    // failing test prints; `RUST_LOG` says more.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let parts: Vec<&str> = spec.splitn(3, ',').collect();
    let mut config = NodeConfig::new(parts[0].parse().unwrap(), parts[1], parts[2]);
    // Elections after 150-300 ms without a heartbeat; a snapshot (and a purge) every 40
    // entries, so that a node away for a while must catch up by snapshot.
    config.heartbeat = Duration::from_millis(50);
    config.snapshot_every = 40;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(serve(config, std::future::pending(), |_| {}))
        .unwrap();
}

/// One node process and where it keeps its data.
struct NodeProcess {
    id: u64,
    dir: PathBuf,
    addr: String,
    child: Option<Child>,
    paused: bool,
}

impl NodeProcess {
    fn start(&mut self) {
        assert!(self.child.is_none());
        let log = std::fs::File::create(self.dir.with_extension("log")).unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "processes::node_process",
                "--nocapture",
            ])
            .env(
                NODE_ENV,
                format!("{},{},{}", self.id, self.dir.display(), self.addr),
            )
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// SIGKILL: no chance to flush or answer.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            if self.paused {
                self.signal("CONT");
                self.paused = false;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name}");
    }

    fn pause(&mut self) {
        self.signal("STOP");
        self.paused = true;
    }

    fn resume(&mut self) {
        self.signal("CONT");
        self.paused = false;
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port free on loopback now (the node binds it a moment later).
fn free_addr() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The parents the clients write: two of each layout's collection.
const PARENTS: [(&str, &str, &str); 8] = [
    ("users", "followers", "u1"),
    ("users", "followers", "u2"),
    ("shop", "reviews", "p1"),
    ("shop", "reviews", "p2"),
    ("sensors", "readings", "s1"),
    ("sensors", "readings", "s2"),
    ("plain", "tags", "t1"),
    ("plain", "tags", "t2"),
];

fn create_request() -> Request {
    let create = |collection: &str, field: &str, layout: &str| Op::Create {
        collection: collection.to_string(),
        arrays: vec![ArrayDecl {
            field: field.to_string(),
            layout: layout.to_string(),
            measures: Vec::new(),
            rollup: None,
        }],
    };
    Request {
        ops: vec![
            create("users", "followers", "outlier:3"),
            create("shop", "reviews", "subset:2"),
            create("sensors", "readings", "bucket:4"),
            create("plain", "tags", "embed"),
        ],
    }
}

/// What a read returned, as the model compares it.
fn observed(document: &Option<DocumentJson>, field: &str) -> Option<(Option<u64>, Vec<i64>)> {
    document.as_ref().map(|d| {
        let body = (!d.body.0.is_empty()).then(|| {
            std::str::from_utf8(&d.body.0)
                .ok()
                .and_then(|b| b.strip_prefix("body "))
                .and_then(|n| n.parse().ok())
                .expect("a body the clients wrote")
        });
        let items = d.arrays[field].iter().map(|i| i.key).collect();
        (body, items)
    })
}

/// Everything the clients saw, per parent.
#[derive(Default)]
struct History {
    parents: BTreeMap<usize, Vec<Operation>>,
    /// Reads from any node with a session token: not in real-time order (not checked for
    /// linearizability), but their indexes are.
    follower: BTreeMap<usize, Vec<Operation>>,
    acknowledged: usize,
    unknown: usize,
    failed: usize,
    reads: usize,
    follower_reads: usize,
}

async fn client_loop(
    client_id: u64,
    addrs: Vec<String>,
    started: Instant,
    stop: Arc<AtomicBool>,
    history: Arc<Mutex<History>>,
    values: Arc<AtomicU64>,
) {
    let client = Client::new(addrs.clone()).with_timeout(Duration::from_secs(3));
    let mut rng = client_id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let now = || started.elapsed().as_nanos() as u64;
    // Per parent: items this client pushed and saw acknowledged (to remove), and its session
    // token: the largest index its acknowledged writes and its reads that found the parent
    // answered (for follower reads).
    let mut own: BTreeMap<usize, (Vec<i64>, u64)> = BTreeMap::new();
    while !stop.load(Ordering::Relaxed) {
        let parent = (next() % PARENTS.len() as u64) as usize;
        let (collection, field, key) = PARENTS[parent];
        let dice = next() % 100;
        let invoked = now();
        if dice < 5 {
            // Read from a follower (or any node) with the session token: not linearizable,
            // but never older than what this client wrote or read last.
            let Some(&(_, index)) = own.get(&parent) else {
                continue;
            };
            let node = (next() % addrs.len() as u64) as usize;
            if let Ok(ReadReply {
                index: at,
                document,
            }) = client
                .read_local(node, collection, key.as_bytes(), Some(index))
                .await
            {
                assert!(at >= index, "read at {at}, asked at least {index}");
                assert!(
                    document.is_some(),
                    "node {node} lost {key} written at {index}"
                );
                let mut history = history.lock().unwrap();
                history.follower_reads += 1;
                history.follower.entry(parent).or_default().push(Operation {
                    invoked,
                    completed: Some(now()),
                    action: Action::Read(observed(&document, field)),
                    index: Some(at),
                });
            }
            continue;
        }
        if dice < 40 {
            let read = client.read(collection, key.as_bytes()).await;
            let completed = now();
            let mut history = history.lock().unwrap();
            if let Ok(reply) = read {
                // The index a read answers is a session token too: a later read from any
                // node, passing it, must not find the parent older (parents are never
                // deleted, so one seen stays).
                if reply.document.is_some() {
                    let token = &mut own.entry(parent).or_default().1;
                    *token = (*token).max(reply.index);
                }
                history.reads += 1;
                history.parents.entry(parent).or_default().push(Operation {
                    invoked,
                    completed: Some(completed),
                    action: Action::Read(observed(&reply.document, field)),
                    index: Some(reply.index),
                });
            }
            // A read that failed changed nothing: left out.
            continue;
        }
        let (action, op) = if dice < 50 {
            let value = values.fetch_add(1, Ordering::Relaxed);
            let op = Op::Put {
                collection: collection.to_string(),
                key: key.as_bytes().to_vec(),
                body: format!("body {value}").into_bytes(),
            };
            (Action::Put(value), op)
        } else if dice < 56 && own.get(&parent).is_some_and(|(items, _)| !items.is_empty()) {
            let items = &mut own.get_mut(&parent).unwrap().0;
            let item_key = items.swap_remove((next() % items.len() as u64) as usize);
            let op = Op::Remove {
                collection: collection.to_string(),
                key: key.as_bytes().to_vec(),
                field: field.to_string(),
                item_key,
            };
            (Action::Remove(item_key), op)
        } else {
            let item_key = values.fetch_add(1, Ordering::Relaxed) as i64;
            let op = Op::Push {
                collection: collection.to_string(),
                key: key.as_bytes().to_vec(),
                field: field.to_string(),
                item_key: Some(item_key),
                value: Some((item_key % 100) as f64),
                measures: Vec::new(),
                payload: format!("item {item_key} from client {client_id}").into_bytes(),
            };
            (Action::Push(item_key), op)
        };
        let written = client.write(&Request { ops: vec![op] }).await;
        let completed = now();
        let mut history = history.lock().unwrap();
        let mut index = None;
        let completed = match written {
            Ok(reply) => {
                index = Some(reply.index);
                assert_eq!(reply.response, Response::Applied, "{action:?}");
                history.acknowledged += 1;
                let entry = own.entry(parent).or_default();
                entry.1 = entry.1.max(reply.index);
                if let Action::Push(item_key) = action {
                    entry.0.push(item_key);
                }
                Some(completed)
            }
            Err(ClientError::Unknown(_)) => {
                history.unknown += 1;
                None
            }
            // Certainly not applied (no node reached, or refused before proposing).
            Err(_) => {
                history.failed += 1;
                continue;
            }
        };
        history.parents.entry(parent).or_default().push(Operation {
            invoked,
            completed,
            action,
            index,
        });
    }
}

struct Cluster {
    nodes: Vec<NodeProcess>,
    client: Client,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    /// On a failure, what each node logged, to tell why.
    fn drop(&mut self) {
        if std::thread::panicking() {
            for node in &mut self.nodes {
                node.kill();
                let log = std::fs::read_to_string(node.dir.with_extension("log"));
                let log = log.unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(40).collect();
                eprintln!("--- node {} ---", node.id);
                for line in tail.iter().rev() {
                    eprintln!("{line}");
                }
            }
        }
    }
}

impl Cluster {
    fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr.clone()).collect()
    }

    /// The index in `nodes` of the node every running node agrees leads.
    async fn leader(&self) -> usize {
        for _ in 0..200 {
            for (at, node) in self.nodes.iter().enumerate() {
                if node.child.is_none() || node.paused {
                    continue;
                }
                if let Ok(status) = self.client.status(at).await
                    && status.state == "leader"
                {
                    return at;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no leader in 20 s");
    }

    /// How long after `since` a node other than `old` (killed, paused or wiped) was found
    /// leading: the election's time as a client sees it (polled every 20 ms).
    async fn election_after(&self, old: usize, since: Instant) -> Duration {
        while since.elapsed() < Duration::from_secs(20) {
            for (at, node) in self.nodes.iter().enumerate() {
                if at == old || node.child.is_none() || node.paused {
                    continue;
                }
                if let Ok(status) = self.client.status(at).await
                    && status.state == "leader"
                {
                    return since.elapsed();
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut states = Vec::new();
        for at in 0..self.nodes.len() {
            states.push(format!("node {at}: {:?}", self.client.status(at).await));
        }
        panic!("no new leader in 20 s after node {old}'s fault: {states:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_stay_linearizable_through_kills_pauses_and_wiped_nodes() {
    let rounds = env_number("SKEWDB_CLUSTER_ROUNDS", 1);
    let clients = env_number("SKEWDB_CLUSTER_CLIENTS", 4);
    let dir = tempfile::tempdir().unwrap();
    let nodes: Vec<NodeProcess> = (1..=3)
        .map(|id| NodeProcess {
            id,
            dir: dir.path().join(format!("node-{id}")),
            addr: free_addr(),
            child: None,
            paused: false,
        })
        .collect();
    let mut cluster = Cluster {
        client: Client::new(nodes.iter().map(|n| n.addr.clone())),
        nodes,
        _dir: dir,
    };
    for node in &mut cluster.nodes {
        node.start();
    }
    // The nodes take a moment to listen; init retries until the first answers.
    let members: Vec<(u64, String)> = cluster
        .nodes
        .iter()
        .map(|n| (n.id, n.addr.clone()))
        .collect();
    let mut tries = 0;
    while let Err(error) = cluster.client.init(members.clone()).await {
        tries += 1;
        assert!(tries < 100, "init: {error}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cluster.leader().await;
    let created = cluster.client.write(&create_request()).await.unwrap();
    assert_eq!(created.response, Response::Applied);

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let history = Arc::new(Mutex::new(History::default()));
    let values = Arc::new(AtomicU64::new(1));
    let workers: Vec<_> = (0..clients)
        .map(|c| {
            tokio::spawn(client_loop(
                c + 1,
                cluster.addrs(),
                started,
                stop.clone(),
                history.clone(),
                values.clone(),
            ))
        })
        .collect();

    let mut faults = 0;
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    let mut elections: Vec<Duration> = Vec::new();
    let settle = Duration::from_secs(2);
    for _ in 0..rounds {
        // The leader killed mid-stream, restarted from its directory a moment later.
        tokio::time::sleep(settle).await;
        let leader = cluster.leader().await;
        let killed = Instant::now();
        cluster.nodes[leader].kill();
        faults += 1;
        *kinds.entry("leader killed").or_default() += 1;
        elections.push(cluster.election_after(leader, killed).await);
        tokio::time::sleep(Duration::from_millis(1_500).saturating_sub(killed.elapsed())).await;
        cluster.nodes[leader].start();

        // The leader paused past the election timeout (150-300 ms): the others elect
        // another; it comes back as a follower with a stale term.
        tokio::time::sleep(settle).await;
        let leader = cluster.leader().await;
        let paused = Instant::now();
        cluster.nodes[leader].pause();
        faults += 1;
        *kinds.entry("leader paused").or_default() += 1;
        elections.push(cluster.election_after(leader, paused).await);
        tokio::time::sleep(Duration::from_millis(1_500).saturating_sub(paused.elapsed())).await;
        cluster.nodes[leader].resume();

        // A follower's disk lost: killed, its directory wiped, taken out of the
        // membership, then added back empty: it catches up by snapshot (the others
        // purged the log before their last snapshot).
        tokio::time::sleep(settle).await;
        let leader = cluster.leader().await;
        let wiped = (leader + 1) % cluster.nodes.len();
        cluster.nodes[wiped].kill();
        std::fs::remove_dir_all(&cluster.nodes[wiped].dir).unwrap();
        faults += 1;
        *kinds
            .entry("follower wiped, removed and added")
            .or_default() += 1;
        let id = cluster.nodes[wiped].id;
        cluster
            .client
            .remove(id)
            .await
            .expect("remove the wiped node");
        cluster.nodes[wiped].start();
        let addr = cluster.nodes[wiped].addr.clone();
        let mut tries = 0;
        let status = loop {
            match cluster.client.add(id, &addr).await {
                Ok(status) => break status,
                Err(error) => {
                    tries += 1;
                    assert!(tries < 50, "add the wiped node back: {error}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        };
        assert!(status.voters.contains_key(&id), "{status:?}");
        // It applies what the leader applied when it was added (its metrics lag a little).
        let mut rejoined = None;
        for _ in 0..100 {
            match cluster.client.status(wiped).await {
                Ok(now) if now.applied_index >= status.applied_index => {
                    rejoined = Some(now);
                    break;
                }
                Ok(now) => rejoined = Some(now),
                Err(error) => eprintln!("node {id} not answering yet: {error}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let rejoined = rejoined.expect("the wiped node answers");
        assert!(
            rejoined.applied_index >= status.applied_index,
            "the wiped node did not catch up: {rejoined:?}, the leader {status:?}"
        );
        assert!(
            rejoined.snapshot_index.is_some(),
            "the wiped node caught up without a snapshot: {rejoined:?}"
        );

        // A follower's disk lost, then the leader's, each node restarted with the same
        // command line (no removal, no addition): it starts rejoining (no votes), catches
        // up by snapshot and log while the clients write, and votes again.
        for wipe_leader in [false, true] {
            tokio::time::sleep(settle).await;
            let leader = cluster.leader().await;
            let wiped = match wipe_leader {
                true => leader,
                false => (leader + 1) % cluster.nodes.len(),
            };
            let killed = Instant::now();
            cluster.nodes[wiped].kill();
            std::fs::remove_dir_all(&cluster.nodes[wiped].dir).unwrap();
            faults += 1;
            let kind = match wipe_leader {
                true => "leader wiped, restarted in place",
                false => "follower wiped, restarted in place",
            };
            *kinds.entry(kind).or_default() += 1;
            if wipe_leader {
                elections.push(cluster.election_after(wiped, killed).await);
            }
            cluster.nodes[wiped].start();
            let mut caught_up = None;
            for _ in 0..150 {
                let target = match cluster.client.status(cluster.leader().await).await {
                    Ok(status) => status.applied_index,
                    Err(_) => None,
                };
                match cluster.client.status(wiped).await {
                    Ok(now) if !now.rejoining && now.applied_index >= target => {
                        caught_up = Some(now);
                        break;
                    }
                    Ok(now) => caught_up = Some(now),
                    Err(error) => eprintln!("node {wiped} not answering yet: {error}"),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let caught_up = caught_up.expect("the wiped node answers");
            assert!(
                !caught_up.rejoining && caught_up.stopped.is_none(),
                "the node wiped (leader: {wipe_leader}) did not rejoin: {caught_up:?}"
            );
            assert!(!cluster.nodes[wiped].dir.join("rejoining").exists());
        }
    }
    tokio::time::sleep(settle).await;
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.unwrap();
    }

    // Final reads, once every node is back: each parent's state must follow from its
    // history too (as one more read, after everything).
    let end = started.elapsed().as_nanos() as u64;
    let mut history = Arc::into_inner(history).unwrap().into_inner().unwrap();
    for (at, (collection, field, key)) in PARENTS.iter().enumerate() {
        let reply = cluster
            .client
            .read(collection, key.as_bytes())
            .await
            .unwrap();
        history.parents.entry(at).or_default().push(Operation {
            invoked: end,
            completed: Some(end + 1),
            action: Action::Read(observed(&reply.document, field)),
            index: Some(reply.index),
        });
        // Every node, read where it stands once it applied as far: the same state.
        for node in 0..cluster.nodes.len() {
            let local = cluster
                .client
                .read_local(node, collection, key.as_bytes(), Some(reply.index))
                .await
                .unwrap();
            assert_eq!(
                observed(&local.document, field),
                observed(&reply.document, field),
                "node {node} on {key}"
            );
        }
    }
    let mut anomalies = Vec::new();
    let mut operations = 0;
    for (at, ops) in &history.parents {
        operations += ops.len();
        if let Err(why) = linearizable::check(ops) {
            anomalies.push(format!("{}: {why}", PARENTS[*at].2));
        }
        let mut indexed = ops.clone();
        indexed.extend(history.follower.get(at).into_iter().flatten().cloned());
        if let Err(why) = linearizable::check_indexes(&indexed) {
            anomalies.push(format!("{}: {why}", PARENTS[*at].2));
        }
    }
    eprintln!(
        "{operations} operations ({} writes acknowledged, {} unknown, {} refused, {} \
         linearizable reads, {} follower reads), {faults} faults, {} anomalies",
        history.acknowledged,
        history.unknown,
        history.failed,
        history.reads,
        history.follower_reads,
        anomalies.len()
    );
    elections.sort();
    let kinds: Vec<String> = kinds
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    eprintln!(
        "faults: {}; elections after a leader fault (until a client finds the new leader): \
         median {} ms, max {} ms over {}",
        kinds.join(", "),
        elections[elections.len() / 2].as_millis(),
        elections.last().expect("an election").as_millis(),
        elections.len()
    );
    assert!(anomalies.is_empty(), "{anomalies:#?}");
    assert!(
        history.acknowledged > 100 && history.reads > 100,
        "too little work to judge"
    );
}
