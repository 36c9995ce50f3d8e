//! Raft's messages between nodes over HTTP: each RPC a POST of its request as JSON to the
//! target's `/raft/append`, `/raft/vote` or `/raft/snapshot` (a snapshot in chunks, read
//! from its file), answered with openraft's result as JSON. One connection pool per node.

use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RaftNetwork, RaftNetworkFactory};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{NodeId, TypeConfig};

/// Connections to the other nodes, at the addresses the membership gives them.
#[derive(Clone)]
pub struct HttpNetwork {
    client: reqwest::Client,
}

/// The HTTP client of nodes and clients alike: a node not accepting within a second is
/// unreachable; small requests go out at once (no Nagle delay).
pub(crate) fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(1))
        .tcp_nodelay(true)
        .build()
        .expect("an HTTP client without TLS builds")
}

impl HttpNetwork {
    pub fn new() -> HttpNetwork {
        HttpNetwork {
            client: http_client(),
        }
    }
}

impl Default for HttpNetwork {
    fn default() -> Self {
        HttpNetwork::new()
    }
}

/// A connection to one node.
pub struct HttpConnection {
    client: reqwest::Client,
    target: NodeId,
    addr: String,
}

impl RaftNetworkFactory<TypeConfig> for HttpNetwork {
    type Network = HttpConnection;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> HttpConnection {
        HttpConnection {
            client: self.client.clone(),
            target,
            addr: node.addr.clone(),
        }
    }
}

impl HttpConnection {
    /// POSTs `request` to `path` and reads openraft's answer: a node that cannot be
    /// reached is `Unreachable` (openraft backs off), an error it answered is `RemoteError`.
    async fn call<Req, Resp, E>(
        &self,
        path: &str,
        request: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let url = format!("http://{}/raft/{path}", self.addr);
        let sent = self
            .client
            .post(url)
            .timeout(option.hard_ttl())
            .json(request)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) if error.is_connect() => {
                return Err(RPCError::Unreachable(Unreachable::new(&error)));
            }
            Err(error) => return Err(RPCError::Network(NetworkError::new(&error))),
        };
        let answer: Result<Resp, RaftError<NodeId, E>> = response
            .json()
            .await
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for HttpConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.call("append", &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.call("snapshot", &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.call("vote", &rpc, &option).await
    }
}
