//! The node program (`skewdb serve`): one Raft node with its storage in a directory, its
//! peers' RPCs and its clients' requests served over one HTTP listener.
//!
//! Routes: `/raft/append`, `/raft/vote`, `/raft/snapshot` (nodes); `/write` (a
//! [`Request`] as JSON), `/exec` (`skewdb exec`'s JSON lines), `/read` (a
//! [`ReadQuery`]); `/cluster/init`, `/cluster/add`, `/cluster/remove`, `/cluster/status`.
//! A request that needs the leader, sent to another node, is answered `421` with the
//! leader's id and address (a [`Failure`] of kind `not_leader`); clients follow it.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::{get, post};
use openraft::error::{CheckIsLeaderError, ClientWriteError, ForwardToLeader, RaftError};
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use openraft::{BasicNode, ChangeMembers, Config, ServerState, SnapshotPolicy};
use serde_json::json;
use skewdb::{Db, ItemQuery};

use crate::api::{
    AddRequest, Consistency, DocumentJson, Failure, InitRequest, ItemJson, JsonBytes, ReadQuery,
    ReadReply, RemoveRequest, Status, WriteReply,
};
use crate::net::HttpNetwork;
use crate::proposer::{Proposer, Rejected};
use crate::{NodeId, RAFT_COLLECTION, Request, Response, StateReader, TypeConfig};

type Raft = openraft::Raft<TypeConfig>;

/// How a node is started.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub id: NodeId,
    /// The node's directory (see the crate's documentation for its layout).
    pub dir: PathBuf,
    /// Where to listen, `HOST:PORT`; the address the other nodes and clients use.
    pub listen: String,
    /// Interval of the leader's heartbeats; elections start after 3 to 6 of them missed.
    pub heartbeat: Duration,
    /// Entries applied between two snapshots (after which the log before is purged).
    pub snapshot_every: u64,
}

impl NodeConfig {
    /// Node `id` in `dir`, listening on `listen`, with the defaults: heartbeats every
    /// 100 ms, elections after 300 to 600 ms without one, a snapshot every 5,000 entries.
    pub fn new(id: NodeId, dir: impl Into<PathBuf>, listen: impl Into<String>) -> NodeConfig {
        NodeConfig {
            id,
            dir: dir.into(),
            listen: listen.into(),
            heartbeat: Duration::from_millis(100),
            snapshot_every: 5_000,
        }
    }

    fn raft_config(&self) -> Result<Config, openraft::ConfigError> {
        let heartbeat = (self.heartbeat.as_millis() as u64).max(1);
        Config {
            cluster_name: "skewdb".to_string(),
            heartbeat_interval: heartbeat,
            election_timeout_min: heartbeat * 3,
            election_timeout_max: heartbeat * 6,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(self.snapshot_every.max(1)),
            // Keep a few entries past the snapshot so a follower just behind catches up
            // by log, not by a whole snapshot.
            max_in_snapshot_log_to_keep: (self.snapshot_every / 2).min(1_000),
            ..Config::default()
        }
        .validate()
    }
}

/// Why a node could not start or stopped.
#[derive(Debug)]
pub struct ServeError(pub String);

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServeError {}

/// A running node: its Raft and the reads of its applied state.
struct Node {
    id: NodeId,
    raft: Raft,
    reader: StateReader,
    proposer: Proposer,
    /// Whether it is catching up after starting on an empty directory (no votes meanwhile).
    rejoin: Arc<crate::Rejoin>,
}

/// Runs node `config` until `shutdown` completes, then stops Raft and returns. `ready` is
/// called with the address bound once the node listens.
pub async fn serve(
    config: NodeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServeError> {
    let raft_config = config
        .raft_config()
        .map_err(|e| ServeError(format!("bad settings: {e}")))?;
    let dir = config.dir.clone();
    let (log, state) = tokio::task::spawn_blocking(move || crate::open(dir))
        .await
        .map_err(|e| ServeError(e.to_string()))?
        .map_err(|e| ServeError(format!("cannot open {}: {e}", config.dir.display())))?;
    let reader = state.reader();
    let rejoin = state.rejoin();
    let databases = [log.open_token(), reader.open_token()];
    let raft = Raft::new(
        config.id,
        Arc::new(raft_config),
        HttpNetwork::new(),
        log,
        state,
    )
    .await
    .map_err(|e| ServeError(format!("cannot start Raft: {e}")))?;
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|e| ServeError(format!("cannot listen on {}: {e}", config.listen)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError(e.to_string()))?;
    let node = Arc::new(Node {
        id: config.id,
        raft: raft.clone(),
        reader,
        proposer: Proposer::start(raft.clone()),
        rejoin,
    });
    let app = axum::Router::new()
        .route("/raft/append", post(append))
        .route("/raft/vote", post(vote))
        .route("/raft/snapshot", post(snapshot))
        .route("/write", post(write))
        .route("/exec", post(exec))
        .route("/read", post(read))
        .route("/cluster/init", post(init))
        .route("/cluster/add", post(add))
        .route("/cluster/remove", post(remove))
        .route("/cluster/status", get(status))
        // A snapshot chunk (3 MiB by default) or a batch near the record limit, as JSON.
        .layer(axum::extract::DefaultBodyLimit::max(
            skewdb::MAX_RECORD_BYTES * 4 + (1 << 20),
        ))
        .with_state(node);
    ready(bound);
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    raft.shutdown()
        .await
        .map_err(|e| ServeError(format!("Raft did not stop cleanly: {e}")))?;
    drop(raft);
    // openraft's tasks let go of the storage as they end, after `shutdown` returned: the
    // node has stopped once its databases closed (a restart in this process, or a copy
    // of the directory, must not meet them still open).
    let deadline = tokio::time::Instant::now() + CLOSE_WAIT;
    while databases.iter().any(|open| open.strong_count() > 0) {
        if tokio::time::Instant::now() > deadline {
            return Err(ServeError(format!(
                "the node's databases were still open {} s after Raft stopped",
                CLOSE_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    served.map_err(|e| ServeError(format!("the listener failed: {e}")))
}

/// How long a stopping node waits for its databases to close.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// An error answer.
fn failure(status: StatusCode, failure: Failure) -> HttpResponse {
    (status, Json(failure)).into_response()
}

impl Node {
    /// The address of node `id` in the membership this node knows.
    fn addr_of(&self, id: NodeId) -> Option<String> {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        metrics
            .membership_config
            .membership()
            .get_node(&id)
            .map(|n| n.addr.clone())
    }

    /// `421 not_leader`, saying where the leader is when this node knows.
    fn not_leader(&self, leader: Option<NodeId>) -> HttpResponse {
        let leader = leader.or_else(|| self.raft.metrics().borrow().current_leader);
        let leader = leader.filter(|&l| l != self.id);
        let mut answer = Failure::new("not_leader", format!("node {} is not the leader", self.id));
        answer.leader = leader;
        answer.leader_addr = leader.and_then(|l| self.addr_of(l));
        failure(StatusCode::MISDIRECTED_REQUEST, answer)
    }

    fn forward(&self, forward: &ForwardToLeader<NodeId, BasicNode>) -> HttpResponse {
        self.not_leader(forward.leader_id)
    }

    fn is_leader(&self) -> bool {
        self.raft.metrics().borrow().current_leader == Some(self.id)
    }

    /// Commits `request` through the log (gathered with others into one entry): its
    /// index and response once applied here, or why not.
    async fn write(&self, request: Request) -> Result<WriteReply, Rejected> {
        let (index, response) = self.proposer.propose(request).await?;
        Ok(WriteReply { index, response })
    }

    /// The answer to a write that did not apply.
    fn rejected(&self, rejected: Rejected) -> HttpResponse {
        match rejected {
            // Not the leader (nothing proposed), or the entry was removed from the log by
            // a new leader: it did not and will not apply.
            Rejected::NotLeader(leader) => self.not_leader(leader),
            Rejected::Unknown(error) => failure(
                StatusCode::SERVICE_UNAVAILABLE,
                Failure::new("unknown_outcome", error),
            ),
            Rejected::TooLarge(bytes) => failure(StatusCode::PAYLOAD_TOO_LARGE, too_large(bytes)),
            // Nothing proposed: it did not and will not apply; another node may take it.
            Rejected::Stopped(why) => failure(
                StatusCode::SERVICE_UNAVAILABLE,
                Failure::new("node_stopped", format!("node {}: {why}", self.id)),
            ),
        }
    }
}

/// The failure of a request that takes `bytes` in the log, too many for a log entry.
fn too_large(bytes: usize) -> Failure {
    Failure::new(
        "record_too_large",
        format!(
            "the request takes {bytes} bytes in the log, over the {} byte record limit",
            skewdb::MAX_RECORD_BYTES
        ),
    )
}

async fn append(
    State(node): State<Arc<Node>>,
    Json(rpc): Json<AppendEntriesRequest<TypeConfig>>,
) -> HttpResponse {
    Json(node.rejoin.append_entries(&node.raft, rpc).await).into_response()
}

/// A vote request, refused while the node is rejoining (see [`crate::Rejoin`]): the candidate
/// hears an error, as from a node it cannot reach, and counts no vote.
async fn vote(State(node): State<Arc<Node>>, Json(rpc): Json<VoteRequest<NodeId>>) -> HttpResponse {
    if !node.rejoin.admits(&rpc) {
        return failure(
            StatusCode::SERVICE_UNAVAILABLE,
            Failure::new(
                "rejoining",
                format!(
                    "node {} started on an empty directory and votes once it has caught up",
                    node.id
                ),
            ),
        );
    }
    Json(node.raft.vote(rpc).await).into_response()
}

async fn snapshot(
    State(node): State<Arc<Node>>,
    Json(rpc): Json<InstallSnapshotRequest<TypeConfig>>,
) -> HttpResponse {
    Json(node.raft.install_snapshot(rpc).await).into_response()
}

async fn write(State(node): State<Arc<Node>>, Json(request): Json<Request>) -> HttpResponse {
    match node.write(request).await {
        Ok(reply) => Json(reply).into_response(),
        Err(rejected) => node.rejected(rejected),
    }
}

/// `skewdb exec`'s input: one JSON line answered per batch, `{"committed":N,"index":I}`
/// or `{"error":..,"kind":..,"line":L}`; after a batch whose outcome is not known (the
/// node lost its leadership, or stopped) the rest is not tried, and says so.
async fn exec(State(node): State<Arc<Node>>, body: String) -> HttpResponse {
    if !node.is_leader() {
        return node.not_leader(None);
    }
    let (batches, unfinished) = crate::exec::parse(&body);
    let mut out = String::new();
    let mut committed = 0u64;
    let mut stopped: Option<Failure> = None;
    for batch in batches {
        let line = batch.commit_line;
        let answer = match (&stopped, batch.request) {
            (Some(why), _) => json!({"error": format!("not tried: {}", why.error),
                "kind": why.kind, "line": line}),
            (None, Err(bad)) => {
                json!({"error": bad.message, "kind": "invalid_input", "line": bad.line})
            }
            (None, Ok(request)) => match node.write(request).await {
                Ok(WriteReply {
                    index,
                    response: Response::Applied,
                }) => {
                    committed += 1;
                    json!({"committed": committed, "index": index})
                }
                Ok(WriteReply {
                    index,
                    response: Response::Refused { kind, message },
                }) => json!({"error": message, "kind": kind, "line": line, "index": index}),
                // Refused before it was proposed: the batches after it go on.
                Err(Rejected::TooLarge(bytes)) => {
                    let why = too_large(bytes);
                    json!({"error": why.error, "kind": why.kind, "line": line})
                }
                // Nothing proposed, and nothing later will be.
                Err(Rejected::Stopped(reason)) => {
                    let why = Failure::new("node_stopped", format!("node {}: {reason}", node.id));
                    let answer = json!({"error": why.error, "kind": why.kind, "line": line});
                    stopped = Some(why);
                    answer
                }
                Err(_) => {
                    let why = Failure::new(
                        "unknown_outcome",
                        "the node lost its leadership or stopped during the batch",
                    );
                    let answer = json!({"error": why.error, "kind": why.kind, "line": line});
                    stopped = Some(why);
                    answer
                }
            },
        };
        out.push_str(&answer.to_string());
        out.push('\n');
    }
    if let Some(bad) = unfinished {
        let answer = json!({"error": bad.message, "kind": "incomplete_input", "line": bad.line});
        out.push_str(&answer.to_string());
        out.push('\n');
    }
    out.into_response()
}

/// How long a read waits for the entry being applied to be done before it answers
/// `unavailable` (an entry's requests apply in milliseconds).
const WHOLE_ENTRY_PATIENCE: Duration = Duration::from_secs(5);

/// A snapshot of `db` that holds whole log entries, and the index of the last one it holds.
/// The machine applies each request of an entry in a batch of its own (recording how many
/// are done under `partial` until the last records the entry as applied): a version taken
/// between them would show some of the entry's writes under the index before it, so such a
/// snapshot is let go and another taken once the entry is done.
fn whole_entry_snapshot(db: &Db) -> Result<(skewdb::Snapshot, u64), Failure> {
    let engine = |e: skewdb::Error| Failure::new(e.kind(), e.to_string());
    let corrupt = |e: serde_json::Error| Failure::new("corruption", e.to_string());
    let deadline = std::time::Instant::now() + WHOLE_ENTRY_PATIENCE;
    loop {
        let snapshot = db.snapshot();
        let raft = snapshot.collection(RAFT_COLLECTION).map_err(engine)?;
        let read = |name: &str| raft.get_projected(name, &[]).map_err(engine);
        let applied = match read(crate::state_machine::APPLIED)? {
            Some(d) => serde_json::from_slice::<Option<openraft::LogId<NodeId>>>(d.body())
                .map_err(corrupt)?,
            None => None,
        };
        let index = applied.map_or(0, |id| id.index);
        let partial = match read(crate::state_machine::PARTIAL)? {
            Some(d) => Some(
                serde_json::from_slice::<crate::state_machine::Partial>(d.body())
                    .map_err(corrupt)?,
            ),
            None => None,
        };
        // A partial record of a later entry than the last applied: this version is inside
        // that entry.
        let inside = partial.is_some_and(|p| applied.is_none_or(|a| a.index < p.index));
        if !inside {
            return Ok((snapshot, index));
        }
        if std::time::Instant::now() >= deadline {
            return Err(Failure::new(
                "unavailable",
                "the node has been applying a log entry for 5 s: try again",
            ));
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// Reads one parent from `db` as of one version that holds whole log entries: its body,
/// every array's items, and the index of the last entry that version applied.
fn read_parent(db: &Db, query: &ReadQuery) -> Result<ReadReply, Failure> {
    let (snapshot, index) = whole_entry_snapshot(db)?;
    let engine = |e: skewdb::Error| Failure::new(e.kind(), e.to_string());
    let collection = snapshot.collection(&query.coll).map_err(engine)?;
    let key = &query.key.0;
    let Some(parent) = collection.get_projected(key, &[]).map_err(engine)? else {
        return Ok(ReadReply {
            index,
            document: None,
        });
    };
    let mut arrays = BTreeMap::new();
    for array in collection.spec().arrays() {
        let field = array.field.as_str();
        let page = collection
            .items(key, field, &ItemQuery::new())
            .map_err(engine)?
            .map(|page| page.items)
            .unwrap_or_default();
        let items = page
            .into_iter()
            .map(|item| ItemJson {
                key: item.key,
                value: item.value,
                payload: JsonBytes(item.payload.to_vec()),
            })
            .collect();
        arrays.insert(field.to_string(), items);
    }
    Ok(ReadReply {
        index,
        document: Some(DocumentJson {
            key: JsonBytes(key.clone()),
            body: JsonBytes(parent.body().to_vec()),
            arrays,
        }),
    })
}

async fn read(State(node): State<Arc<Node>>, Json(query): Json<ReadQuery>) -> HttpResponse {
    match query.consistency {
        Consistency::Linearizable => {
            // A follower answers `ForwardToLeader`, with the leader it knows.
            match node.raft.ensure_linearizable().await {
                Ok(_) => {}
                Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(forward))) => {
                    return node.forward(&forward);
                }
                Err(error) => {
                    return failure(
                        StatusCode::SERVICE_UNAVAILABLE,
                        Failure::new("unavailable", error.to_string()),
                    );
                }
            }
        }
        Consistency::Local => {
            if let Some(min) = query.min_index {
                let waited = node
                    .raft
                    .wait(Some(Duration::from_secs(5)))
                    .applied_index_at_least(Some(min), "read your writes")
                    .await;
                if let Err(error) = waited {
                    return failure(
                        StatusCode::SERVICE_UNAVAILABLE,
                        Failure::new(
                            "behind",
                            format!("node {} has not applied {min}: {error}", node.id),
                        ),
                    );
                }
            }
        }
    }
    let db = node.reader.db();
    let read = tokio::task::spawn_blocking(move || read_parent(&db, &query)).await;
    match read {
        Ok(Ok(reply)) => Json(reply).into_response(),
        Ok(Err(answer)) => {
            let status = match answer.kind.as_str() {
                "unknown_collection" => StatusCode::NOT_FOUND,
                "key_too_large" => StatusCode::BAD_REQUEST,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            failure(status, answer)
        }
        Err(error) => failure(
            StatusCode::INTERNAL_SERVER_ERROR,
            Failure::new("io", error.to_string()),
        ),
    }
}

async fn init(State(node): State<Arc<Node>>, Json(request): Json<InitRequest>) -> HttpResponse {
    let members: BTreeMap<NodeId, BasicNode> = request
        .members
        .into_iter()
        .map(|(id, addr)| (id, BasicNode::new(addr)))
        .collect();
    match node.raft.initialize(members).await {
        Ok(()) => Json(json!({"initialized": true})).into_response(),
        Err(RaftError::APIError(error)) => failure(
            StatusCode::CONFLICT,
            Failure::new("already_initialized", error.to_string()),
        ),
        Err(error) => failure(
            StatusCode::SERVICE_UNAVAILABLE,
            Failure::new("unavailable", error.to_string()),
        ),
    }
}

/// Answers a membership change: done, or where the leader is, or why not.
fn membership_answer(
    node: &Node,
    result: Result<(), RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>>,
) -> HttpResponse {
    match result {
        Ok(()) => Json(status_of(node)).into_response(),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward))) => {
            node.forward(&forward)
        }
        Err(RaftError::APIError(error)) => failure(
            StatusCode::CONFLICT,
            Failure::new("membership", error.to_string()),
        ),
        Err(error) => failure(
            StatusCode::SERVICE_UNAVAILABLE,
            Failure::new("unavailable", error.to_string()),
        ),
    }
}

async fn add(State(node): State<Arc<Node>>, Json(request): Json<AddRequest>) -> HttpResponse {
    // A learner first, caught up (by snapshot and log) before it votes.
    let learner = node
        .raft
        .add_learner(request.id, BasicNode::new(request.addr), true)
        .await
        .map(|_| ());
    if learner.is_err() {
        return membership_answer(&node, learner);
    }
    let voters = BTreeSet::from([request.id]);
    let result = node
        .raft
        .change_membership(ChangeMembers::AddVoterIds(voters), false)
        .await
        .map(|_| ());
    membership_answer(&node, result)
}

async fn remove(State(node): State<Arc<Node>>, Json(request): Json<RemoveRequest>) -> HttpResponse {
    let voters = BTreeSet::from([request.id]);
    let result = node
        .raft
        .change_membership(ChangeMembers::RemoveVoters(voters), false)
        .await
        .map(|_| ());
    membership_answer(&node, result)
}

fn status_of(node: &Node) -> Status {
    let metrics = node.raft.metrics().borrow().clone();
    let membership = metrics.membership_config.membership();
    let voter_ids: BTreeSet<NodeId> = membership.voter_ids().collect();
    let (mut voters, mut learners) = (BTreeMap::new(), BTreeMap::new());
    for (id, member) in membership.nodes() {
        match voter_ids.contains(id) {
            true => voters.insert(*id, member.addr.clone()),
            false => learners.insert(*id, member.addr.clone()),
        };
    }
    let state = match metrics.state {
        ServerState::Leader => "leader",
        ServerState::Follower => "follower",
        ServerState::Candidate => "candidate",
        ServerState::Learner => "learner",
        ServerState::Shutdown => "shutdown",
    };
    Status {
        id: node.id,
        state: state.to_string(),
        stopped: crate::proposer::stopped(&node.raft),
        rejoining: node.rejoin.rejoining(),
        term: metrics.current_term,
        leader: metrics.current_leader,
        leader_addr: metrics
            .current_leader
            .and_then(|l| membership.get_node(&l).map(|n| n.addr.clone())),
        last_log_index: metrics.last_log_index,
        applied_index: metrics.last_applied.map(|id| id.index),
        snapshot_index: metrics.snapshot.map(|id| id.index),
        voters,
        learners,
    }
}

async fn status(State(node): State<Arc<Node>>) -> HttpResponse {
    Json(status_of(&node)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Consistency, JsonBytes};
    use crate::state_machine::{APPLIED, PARTIAL, Partial};
    use openraft::{CommittedLeaderId, LogId};
    use skewdb::{CollectionSpec, Layout, NewItem, Options};

    fn applied(index: u64) -> Vec<u8> {
        serde_json::to_vec(&Some(LogId::<NodeId>::new(
            CommittedLeaderId::new(1, 1),
            index,
        )))
        .unwrap()
    }

    /// A read taken while an entry's requests are applied (a batch each) waits until the
    /// entry is done, and reports its index with all of its writes: never part of it under
    /// the index before it.
    #[test]
    fn a_read_never_sees_part_of_an_entry() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::new()).unwrap();
        db.create_collection(CollectionSpec::new(RAFT_COLLECTION))
            .unwrap();
        db.create_collection(CollectionSpec::new("c").array("a", Layout::Embed))
            .unwrap();
        let mut batch = db.batch();
        batch.put("c", "k", "body");
        batch.put(RAFT_COLLECTION, APPLIED, applied(4));
        batch.commit().unwrap();
        // Entry 5 of two pushes, its first applied and its second not yet, as the state
        // machine leaves it between the two batches.
        let partial = Partial { index: 5, done: 1 };
        let mut batch = db.batch();
        batch.push("c", "k", "a", NewItem::new("first"));
        batch.put(
            RAFT_COLLECTION,
            PARTIAL,
            serde_json::to_vec(&partial).unwrap(),
        );
        batch.commit().unwrap();
        let query = || ReadQuery {
            coll: "c".to_string(),
            key: JsonBytes(b"k".to_vec()),
            consistency: Consistency::Local,
            min_index: None,
        };
        let reader = {
            let (db, query) = (db.clone(), query());
            std::thread::spawn(move || read_parent(&db, &query).map_err(|f| f.error))
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !reader.is_finished(),
            "a read inside an entry waits for its end"
        );
        let mut batch = db.batch();
        batch.push("c", "k", "a", NewItem::new("second"));
        batch.put(RAFT_COLLECTION, APPLIED, applied(5));
        batch.commit().unwrap();
        let reply = reader.join().unwrap().unwrap();
        assert_eq!(reply.index, 5);
        assert_eq!(reply.document.unwrap().arrays["a"].len(), 2);
        // Once the entry is done, the partial record left behind is of an applied entry: a
        // read answers at once.
        let reply = read_parent(&db, &query()).map_err(|f| f.error).unwrap();
        assert_eq!(reply.index, 5);
    }
}
