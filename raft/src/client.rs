//! A client of a cluster of nodes (`skewdb serve`): it finds the leader and follows it
//! when leadership moves, never sending a write twice when it might have applied.

use std::sync::Mutex;
use std::time::Duration;

use reqwest::StatusCode;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{
    AddRequest, Consistency, Failure, InitRequest, ReadQuery, ReadReply, RemoveRequest, Status,
    WriteReply,
};
use crate::{NodeId, Request};

/// Why a request to the cluster failed.
#[derive(Debug)]
pub enum ClientError {
    /// The cluster answered with an error (its kind and message).
    Refused(Failure),
    /// The request was sent and no answer came (a timeout, a connection cut): a write may
    /// or may not have applied.
    Unknown(String),
    /// No node could be reached, or none knew a leader, within the tries: nothing applied.
    Unavailable(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Refused(failure) => write!(f, "{} ({})", failure.error, failure.kind),
            ClientError::Unknown(why) => write!(f, "outcome unknown: {why}"),
            ClientError::Unavailable(why) => write!(f, "cluster unavailable: {why}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// How long one request may take before its outcome is unknown.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How many times a request is sent on (to another node, or the leader named).
const TRIES: usize = 40;

/// A client of the nodes at `addrs` (`HOST:PORT`).
pub struct Client {
    http: reqwest::Client,
    nodes: Vec<String>,
    /// The node believed to lead; requests needing the leader go there first.
    leader: Mutex<Option<String>>,
    timeout: Duration,
}

/// Where a request goes.
#[derive(Clone, Copy, PartialEq)]
enum Target {
    Leader,
    /// Node `nodes[i]`, whoever leads.
    Node(usize),
}

impl Client {
    pub fn new(nodes: impl IntoIterator<Item = impl Into<String>>) -> Client {
        let http = crate::net::http_client();
        let nodes: Vec<String> = nodes.into_iter().map(Into::into).collect();
        assert!(!nodes.is_empty(), "a client needs at least one node");
        Client {
            http,
            nodes,
            leader: Mutex::new(None),
            timeout: REQUEST_TIMEOUT,
        }
    }

    /// The same client with `timeout` for each request.
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    fn known_leader(&self) -> Option<String> {
        self.leader
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_leader(&self, addr: Option<String>) {
        *self.leader.lock().unwrap_or_else(|p| p.into_inner()) = addr;
    }

    /// Sends `body` to `path` on `target`: retried on another node while the request
    /// certainly did not reach one that acted on it (no connection, `not_leader`);
    /// `Unknown` when it may have.
    async fn send(
        &self,
        target: Target,
        path: &str,
        body: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<(String, reqwest::Response), ClientError> {
        let mut next = 0usize;
        let mut last = String::from("no node tried");
        for attempt in 0..TRIES {
            let addr = match target {
                Target::Node(i) => self.nodes[i].clone(),
                Target::Leader => match self.known_leader() {
                    Some(addr) => addr,
                    None => {
                        next += 1;
                        self.nodes[(next - 1) % self.nodes.len()].clone()
                    }
                },
            };
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(50 * (attempt as u64).min(10))).await;
            }
            let request = self
                .http
                .post(format!("http://{addr}/{path}"))
                .timeout(self.timeout);
            let sent = body(request).send().await;
            let response = match sent {
                Ok(response) => response,
                Err(error) if error.is_connect() => {
                    // Never reached the node: try another.
                    last = format!("{addr}: {error}");
                    if target == Target::Leader {
                        self.set_leader(None);
                        continue;
                    }
                    return Err(ClientError::Unavailable(last));
                }
                Err(error) => return Err(ClientError::Unknown(format!("{addr}: {error}"))),
            };
            let status = response.status();
            if status == StatusCode::OK {
                if target == Target::Leader {
                    self.set_leader(Some(addr.clone()));
                }
                return Ok((addr, response));
            }
            let failure: Failure = response.json().await.map_err(|e| {
                ClientError::Unknown(format!("{addr} answered {status} unreadably: {e}"))
            })?;
            // A node whose Raft stopped proposed nothing: another node may take it.
            if failure.kind == "node_stopped" && target == Target::Leader {
                last = format!("{addr}: {}", failure.error);
                self.set_leader(None);
                continue;
            }
            if failure.kind == "not_leader" && target == Target::Leader {
                last = format!("{addr}: {}", failure.error);
                self.set_leader(failure.leader_addr.clone());
                continue;
            }
            if failure.kind == "unknown_outcome" {
                return Err(ClientError::Unknown(format!("{addr}: {}", failure.error)));
            }
            return Err(ClientError::Refused(failure));
        }
        Err(ClientError::Unavailable(last))
    }

    /// [`Client::send`] with `body` as JSON, the answer read as JSON.
    async fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        target: Target,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let (addr, response) = self.send(target, path, |r| r.json(body)).await?;
        response
            .json()
            .await
            .map_err(|e| ClientError::Unknown(format!("{addr}: {e}")))
    }

    /// Commits `request` as one log entry through the leader.
    pub async fn write(&self, request: &Request) -> Result<WriteReply, ClientError> {
        self.call(Target::Leader, "write", request).await
    }

    /// Reads parent `key` of `coll` from the leader, linearizably.
    pub async fn read(&self, coll: &str, key: &[u8]) -> Result<ReadReply, ClientError> {
        let query = ReadQuery {
            coll: coll.to_string(),
            key: crate::api::JsonBytes(key.to_vec()),
            consistency: Consistency::Linearizable,
            min_index: None,
        };
        self.call(Target::Leader, "read", &query).await
    }

    /// Reads parent `key` of `coll` from `nodes[node]` once it applied `min_index`.
    pub async fn read_local(
        &self,
        node: usize,
        coll: &str,
        key: &[u8],
        min_index: Option<u64>,
    ) -> Result<ReadReply, ClientError> {
        let query = ReadQuery {
            coll: coll.to_string(),
            key: crate::api::JsonBytes(key.to_vec()),
            consistency: Consistency::Local,
            min_index,
        };
        self.call(Target::Node(node), "read", &query).await
    }

    /// Sends `skewdb exec` JSON lines to the leader: its answer lines.
    pub async fn exec(&self, lines: &str) -> Result<String, ClientError> {
        let (addr, response) = self
            .send(Target::Leader, "exec", |r| r.body(lines.to_string()))
            .await?;
        response
            .text()
            .await
            .map_err(|e| ClientError::Unknown(format!("{addr}: {e}")))
    }

    /// Makes the nodes `members` (id and address each) a cluster; sent to the first node
    /// this client knows, which must be one of them.
    pub async fn init(
        &self,
        members: impl IntoIterator<Item = (NodeId, String)>,
    ) -> Result<(), ClientError> {
        let request = InitRequest {
            members: members.into_iter().collect(),
        };
        let _: serde_json::Value = self.call(Target::Node(0), "cluster/init", &request).await?;
        Ok(())
    }

    /// Adds node `id` at `addr`: a learner until it caught up, then a voter.
    pub async fn add(&self, id: NodeId, addr: &str) -> Result<Status, ClientError> {
        let request = AddRequest {
            id,
            addr: addr.to_string(),
        };
        self.call(Target::Leader, "cluster/add", &request).await
    }

    /// Removes voter `id` from the membership.
    pub async fn remove(&self, id: NodeId) -> Result<Status, ClientError> {
        self.call(Target::Leader, "cluster/remove", &RemoveRequest { id })
            .await
    }

    /// What `nodes[node]` knows of the cluster.
    pub async fn status(&self, node: usize) -> Result<Status, ClientError> {
        let addr = &self.nodes[node];
        let response = self
            .http
            .get(format!("http://{addr}/cluster/status"))
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| ClientError::Unavailable(format!("{addr}: {e}")))?;
        response
            .json()
            .await
            .map_err(|e| ClientError::Unknown(format!("{addr}: {e}")))
    }
}
