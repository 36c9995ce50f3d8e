//! A three-node cluster in one process, over an in-memory network that calls the target
//! node's `Raft` directly (as openraft's examples route requests over channels): writes of
//! every pattern through the leader, reads from followers once they apply; the leader
//! stopped mid-stream and a new one elected with no acknowledged write lost; the old leader
//! rejoining from its directory and catching up by snapshot (the others purged the log it
//! lacks), and a follower catching up by log. Every state read is checked against a model
//! of the acknowledged writes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use openraft::{BasicNode, Config, ServerState, SnapshotPolicy};
use skewdb_raft::network::Router;
use skewdb_raft::{
    ArrayDecl, NodeId, Op, RAFT_COLLECTION, Request, Response, StateReader, TypeConfig,
};
use skewdb_tests::{Model, ModelDoc, inline_views};

type Raft = openraft::Raft<TypeConfig>;

/// A running node: its Raft, the reads of its state and whether it is rejoining.
struct Node {
    raft: Raft,
    reader: StateReader,
    rejoin: Arc<skewdb_raft::Rejoin>,
}

struct Cluster {
    dir: tempfile::TempDir,
    config: Arc<Config>,
    router: Router,
    nodes: BTreeMap<NodeId, Node>,
}

impl Cluster {
    /// Three nodes in new directories, started and formed into a cluster.
    async fn formed() -> Cluster {
        let mut cluster = Cluster {
            dir: tempfile::tempdir().unwrap(),
            config: test_config(),
            router: Router::default(),
            nodes: BTreeMap::new(),
        };
        for id in 1..=3 {
            cluster.start(id).await;
        }
        let members: BTreeMap<NodeId, BasicNode> =
            (1..=3).map(|id| (id, BasicNode::default())).collect();
        cluster.nodes[&1].raft.initialize(members).await.unwrap();
        cluster
    }

    fn node_dir(&self, id: NodeId) -> PathBuf {
        self.dir.path().join(format!("node-{id}"))
    }

    /// Starts node `id` from its directory (new or left by an earlier run) and connects it.
    async fn start(&mut self, id: NodeId) {
        let (log, state) = skewdb_raft::open(self.node_dir(id)).unwrap();
        let reader = state.reader();
        let rejoin = state.rejoin();
        let raft = Raft::new(id, self.config.clone(), self.router.clone(), log, state)
            .await
            .unwrap();
        self.router
            .connect_rejoining(id, raft.clone(), rejoin.clone());
        self.nodes.insert(
            id,
            Node {
                raft,
                reader,
                rejoin,
            },
        );
    }

    /// Disconnects node `id` and shuts it down, as a crash of its process would stop it.
    async fn stop(&mut self, id: NodeId) {
        self.router.disconnect(id);
        let node = self.nodes.remove(&id).unwrap();
        node.raft.shutdown().await.unwrap();
    }

    /// The index of the last entry node `id` holds in its log.
    fn last_log_index(&self, id: NodeId) -> Option<u64> {
        self.nodes[&id].raft.metrics().borrow().last_log_index
    }

    async fn leader(&self) -> NodeId {
        for _ in 0..200 {
            for node in self.nodes.values() {
                let metrics = node.raft.metrics().borrow().clone();
                if metrics.state == ServerState::Leader && self.nodes.contains_key(&metrics.id) {
                    return metrics.id;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no leader elected in 10 s");
    }

    /// Writes `request` through the leader; the log index it was applied at.
    async fn write(&self, request: Request) -> u64 {
        for _ in 0..20 {
            let leader = self.leader().await;
            match self.nodes[&leader]
                .raft
                .client_write(request.clone().into())
                .await
            {
                Ok(done) => {
                    assert_eq!(done.data, vec![Response::Applied], "{request:?}");
                    return done.log_id.index;
                }
                // Leadership moved on meanwhile: ask the new leader.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("no leader took {request:?}");
    }

    /// Changes the membership to `members` through whichever node leads.
    async fn change_membership(&self, members: BTreeSet<NodeId>) {
        for _ in 0..20 {
            let leader = self.leader().await;
            match self.nodes[&leader]
                .raft
                .change_membership(members.clone(), false)
                .await
            {
                Ok(_) => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("no leader changed the membership to {members:?}");
    }

    /// Adds node `id` as a learner through whichever node leads, waiting until it has
    /// caught up.
    async fn add_learner(&self, id: NodeId) {
        for _ in 0..20 {
            let leader = self.leader().await;
            match self.nodes[&leader]
                .raft
                .add_learner(id, BasicNode::default(), true)
                .await
            {
                Ok(_) => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("no leader added learner {id}");
    }

    /// Waits until node `id` has applied `index`, then checks its state against `model`.
    async fn check(&self, id: NodeId, index: u64, model: &Model) {
        let node = &self.nodes[&id];
        node.raft
            .wait(Some(Duration::from_secs(20)))
            .applied_index_at_least(Some(index), format!("node {id} applies {index}"))
            .await
            .unwrap();
        let mut state = skewdb_tests::read_all(&node.reader.db()).unwrap();
        state.remove(RAFT_COLLECTION);
        assert_eq!(&state, model, "node {id} at {index}");
        // What each parent holds inline agrees with the first node still running: a node
        // that installed a snapshot reads as one that applied every entry.
        let first = self.nodes.values().next().expect("a node");
        assert_eq!(
            inline_views(&node.reader.db(), RAFT_COLLECTION),
            inline_views(&first.reader.db(), RAFT_COLLECTION),
            "node {id}"
        );
    }
}

/// The model's view of one write: a put of the parent and a push to its array.
fn record(model: &mut Model, collection: &str, key: &[u8], field: &str, item: (i64, f64, Vec<u8>)) {
    let doc: &mut ModelDoc = model
        .entry(collection.to_string())
        .or_default()
        .entry(key.to_vec())
        .or_default();
    doc.body = format!("body of {}", String::from_utf8_lossy(key)).into_bytes();
    let items = doc.arrays.entry(field.to_string()).or_default();
    let at = items.partition_point(|i| i.0 <= item.0);
    items.insert(at, (item.0, Some(item.1), item.2));
}

/// The `n`th write: one parent of one of the three patterns' collections.
fn nth_write(n: u64, model: &mut Model) -> Request {
    let (collection, field) = [
        ("users", "followers"),
        ("shop", "reviews"),
        ("sensors", "readings"),
    ][(n % 3) as usize];
    // A few parents take most writes, as the seeds' heavy tail.
    let key = format!(
        "{collection}-{}",
        (n / 3) % 4 + n.is_multiple_of(7) as u64 * 10
    )
    .into_bytes();
    let item = (
        n as i64 * 10,
        (n % 5) as f64,
        format!("item {n}").into_bytes(),
    );
    record(model, collection, &key, field, item.clone());
    Request {
        ops: vec![
            Op::Put {
                collection: collection.to_string(),
                key: key.clone(),
                body: format!("body of {}", String::from_utf8_lossy(&key)).into_bytes(),
            },
            Op::Push {
                collection: collection.to_string(),
                key,
                field: field.to_string(),
                item_key: Some(item.0),
                value: Some(item.1),
                measures: Vec::new(),
                payload: item.2,
            },
        ],
    }
}

/// Removes the item keyed `item_key` from a `users` parent's followers (an Outlier array,
/// whose inline slot stays empty when the item was inline).
fn remove_write(model: &mut Model, key: &[u8], item_key: i64) -> Request {
    let items = model
        .get_mut("users")
        .and_then(|parents| parents.get_mut(key))
        .and_then(|doc| doc.arrays.get_mut("followers"))
        .expect("the parent was written");
    let before = items.len();
    items.retain(|i| i.0 != item_key);
    assert_eq!(items.len() + 1, before, "item {item_key} was there");
    Request {
        ops: vec![Op::Remove {
            collection: "users".to_string(),
            key: key.to_vec(),
            field: "followers".to_string(),
            item_key,
        }],
    }
}

fn create_request() -> Request {
    let array = |field: &str, layout: &str| ArrayDecl {
        field: field.to_string(),
        layout: layout.to_string(),
        measures: Vec::new(),
        rollup: None,
    };
    let create = |collection: &str, decl: ArrayDecl| Op::Create {
        collection: collection.to_string(),
        arrays: vec![decl],
    };
    Request {
        ops: vec![
            create("users", array("followers", "outlier:3")),
            create("shop", array("reviews", "subset:2")),
            create("sensors", array("readings", "bucket:4")),
        ],
    }
}

fn purged_index(raft: &Raft) -> Option<u64> {
    raft.metrics().borrow().purged.map(|p| p.index)
}

fn dir_has_snapshot(dir: &Path) -> bool {
    dir.join("snapshot.json").exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_keeps_every_acknowledged_write_through_a_leader_change() {
    let mut cluster = Cluster::formed().await;

    let mut model = Model::new();
    let mut index = cluster.write(create_request()).await;
    for n in 0..30 {
        index = cluster.write(nth_write(n, &mut model)).await;
    }
    // Every node, followers included, reads every pattern's state once it has applied.
    for id in 1..=3 {
        cluster.check(id, index, &model).await;
    }

    // The leader stops mid-stream; a new one is elected and takes the writes.
    let old_leader = cluster.leader().await;
    let old_leader_last = cluster.last_log_index(old_leader);
    cluster.stop(old_leader).await;
    let new_leader = cluster.leader().await;
    assert_ne!(new_leader, old_leader);
    for n in 30..50 {
        index = cluster.write(nth_write(n, &mut model)).await;
    }
    let survivors: BTreeSet<NodeId> = cluster.nodes.keys().copied().collect();
    for &id in &survivors {
        cluster.check(id, index, &model).await;
    }
    // The stopped node leaves the membership, as an operator replaces a dead machine; the
    // log it would need is then no longer kept for it, and the survivors purge it.
    cluster.change_membership(survivors.clone()).await;
    for n in 50..90 {
        index = cluster.write(nth_write(n, &mut model)).await;
        if n % 10 == 0 {
            // The first item pushed to each of four Outlier parents (writes 3, 6, 9, 12),
            // inline there: its slot stays empty.
            let m = (n - 40) / 10 * 3;
            let key = format!("users-{}", (m / 3) % 4).into_bytes();
            index = cluster
                .write(remove_write(&mut model, &key, m as i64 * 10))
                .await;
        }
    }
    for &id in &survivors {
        cluster.check(id, index, &model).await;
    }
    let leader = cluster.leader().await;
    let purged = purged_index(&cluster.nodes[&leader].raft).expect("the leader purged");
    assert!(
        Some(purged) > old_leader_last,
        "purged up to {purged}, the stopped node holds up to {old_leader_last:?}"
    );

    // The old leader rejoins from its directory, first as a learner: the log it lacks is
    // gone, so it catches up by installing a snapshot, then by log; then it votes again.
    cluster.start(old_leader).await;
    cluster.add_learner(old_leader).await;
    cluster.change_membership((1..=3).collect()).await;
    for n in 90..95 {
        index = cluster.write(nth_write(n, &mut model)).await;
    }
    cluster.check(old_leader, index, &model).await;
    assert!(dir_has_snapshot(&cluster.node_dir(old_leader)));
    let installed = cluster.nodes[&old_leader].raft.metrics().borrow().snapshot;
    assert!(
        installed.is_some_and(|s| s.index >= purged),
        "{installed:?}"
    );

    // A follower away for a few writes catches up by log: the leader still holds every
    // entry it lacks when it comes back.
    let leader = cluster.leader().await;
    let follower = *survivors.iter().find(|&&id| id != leader).unwrap();
    let follower_last = cluster.last_log_index(follower);
    cluster.stop(follower).await;
    for n in 95..100 {
        index = cluster.write(nth_write(n, &mut model)).await;
    }
    let leader = cluster.leader().await;
    let purged = purged_index(&cluster.nodes[&leader].raft);
    assert!(
        purged < follower_last,
        "the leader purged {purged:?}, past the follower's {follower_last:?}"
    );
    cluster.start(follower).await;
    cluster.check(follower, index, &model).await;
    for id in 1..=3 {
        cluster.check(id, index, &model).await;
    }
    for id in 1..=3 {
        cluster.stop(id).await;
    }
}

/// The config of the tests of this file: short timeouts, and snapshots and purges within the
/// test, so that a node that was away must catch up by snapshot.
fn test_config() -> Arc<Config> {
    let config = Config {
        cluster_name: "skewdb".to_string(),
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(20),
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..Config::default()
    };
    Arc::new(config.validate().unwrap())
}

/// A node whose directory is wiped (a disk replaced) and that is restarted with the same
/// command line, under the id the cluster knows, without being removed and added: a
/// follower, then the leader. Each comes back empty, learns the cluster's state by snapshot
/// and log while the cluster takes writes, and serves it; its Raft keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_node_restarted_under_its_id_catches_up() {
    let mut cluster = Cluster::formed().await;
    let mut model = Model::new();
    let mut index = cluster.write(create_request()).await;
    let mut n = 0;
    for _ in 0..30 {
        index = cluster.write(nth_write(n, &mut model)).await;
        n += 1;
    }
    for id in 1..=3 {
        cluster.check(id, index, &model).await;
    }

    for wiped_leader in [false, true] {
        let leader = cluster.leader().await;
        let wiped = match wiped_leader {
            true => leader,
            false => *cluster.nodes.keys().find(|&&id| id != leader).unwrap(),
        };
        cluster.stop(wiped).await;
        std::fs::remove_dir_all(cluster.node_dir(wiped)).unwrap();
        for _ in 0..30 {
            index = cluster.write(nth_write(n, &mut model)).await;
            n += 1;
        }
        cluster.start(wiped).await;
        assert!(cluster.nodes[&wiped].rejoin.rejoining());
        for _ in 0..10 {
            index = cluster.write(nth_write(n, &mut model)).await;
            n += 1;
        }
        cluster.check(wiped, index, &model).await;
        // Caught up: it votes again, its marker gone.
        for _ in 0..100 {
            if !cluster.nodes[&wiped].rejoin.rejoining() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!cluster.nodes[&wiped].rejoin.rejoining());
        assert!(!cluster.node_dir(wiped).join("rejoining").exists());
        for id in 1..=3 {
            cluster.check(id, index, &model).await;
            // No node's Raft stopped: a leader that finds a follower's log gone back to
            // empty searches it again instead of failing.
            let metrics = cluster.nodes[&id].raft.metrics().borrow().clone();
            assert!(
                metrics.running_state.is_ok(),
                "node {id} after node {wiped} was wiped (the leader: {wiped_leader}): {:?}",
                metrics.running_state
            );
        }
    }
    // The wiped leader's turn left another leader; it and the old one still vote: an
    // election among them works.
    let leader = cluster.leader().await;
    cluster.stop(leader).await;
    index = cluster.write(nth_write(n, &mut model)).await;
    for &id in cluster.nodes.keys() {
        cluster.check(id, index, &model).await;
    }
    cluster.start(leader).await;
    for id in 1..=3 {
        cluster.stop(id).await;
    }
}
