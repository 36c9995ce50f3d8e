//! An in-process network for clusters in tests and benches: each request calls the target
//! node's `Raft` directly, as openraft's examples route them over channels. A node not
//! registered (stopped, or never started) is unreachable. Not for production.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RaftNetwork, RaftNetworkFactory};

use crate::rejoin::Rejoin;
use crate::{NodeId, TypeConfig};

type Raft = openraft::Raft<TypeConfig>;

/// A reachable node: its Raft, and its rejoin state when it has one.
type Reachable = (Raft, Option<Arc<Rejoin>>);

/// The nodes reachable now.
#[derive(Clone, Default)]
pub struct Router {
    nodes: Arc<Mutex<BTreeMap<NodeId, Reachable>>>,
}

impl Router {
    fn node(&self, id: NodeId) -> Option<Reachable> {
        self.nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    /// Makes node `id` reachable through `raft`.
    pub fn connect(&self, id: NodeId, raft: Raft) {
        self.nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, (raft, None));
    }

    /// Makes node `id` reachable through `raft`, refusing votes while `rejoin` says it is
    /// catching up, as a `skewdb serve` node does (see [`Rejoin`]).
    pub fn connect_rejoining(&self, id: NodeId, raft: Raft, rejoin: Arc<Rejoin>) {
        self.nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, (raft, Some(rejoin)));
    }

    /// Makes node `id` unreachable.
    pub fn disconnect(&self, id: NodeId) {
        self.nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

/// A connection to one node.
pub struct Connection {
    router: Router,
    target: NodeId,
}

fn unreachable<E: std::error::Error>(target: NodeId) -> RPCError<NodeId, BasicNode, E> {
    let error = std::io::Error::new(
        std::io::ErrorKind::NotConnected,
        format!("node {target} is down"),
    );
    RPCError::Unreachable(Unreachable::new(&error))
}

fn remote<E: std::error::Error + 'static>(
    error: RaftError<NodeId, E>,
) -> RPCError<NodeId, BasicNode, RaftError<NodeId, E>> {
    RPCError::Network(NetworkError::new(&error))
}

impl RaftNetworkFactory<TypeConfig> for Router {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Connection {
        Connection {
            router: self.clone(),
            target,
        }
    }
}

impl Connection {
    /// The target's Raft and rejoin state, or the error an unreachable node gives.
    fn target_node<E: std::error::Error>(
        &self,
    ) -> Result<Reachable, RPCError<NodeId, BasicNode, E>> {
        self.router
            .node(self.target)
            .ok_or_else(|| unreachable(self.target))
    }
}

impl RaftNetwork<TypeConfig> for Connection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let (node, rejoin) = self.target_node()?;
        match rejoin {
            Some(rejoin) => rejoin.append_entries(&node, rpc).await,
            None => node.append_entries(rpc).await,
        }
        .map_err(remote)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        let (node, _) = self.target_node()?;
        node.install_snapshot(rpc).await.map_err(remote)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let (node, rejoin) = self.target_node()?;
        if rejoin.is_some_and(|rejoin| !rejoin.admits(&rpc)) {
            let refused = std::io::Error::other(format!("node {} is rejoining", self.target));
            return Err(RPCError::Network(NetworkError::new(&refused)));
        }
        node.vote(rpc).await.map_err(remote)
    }
}
