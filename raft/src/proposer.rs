//! Gathers the write requests that arrive while a node's earlier proposals are in flight
//! into one log entry (a [`Proposal`]).
//!
//! openraft 0.9 appends every proposal to the leader's log on its core task, waiting for
//! the sync, one proposal after another: one request per entry makes the leader's syncs
//! the cluster's limit. Here at most [`IN_FLIGHT`] proposals are in flight; the requests
//! that come meanwhile wait, and go together (up to [`PROPOSAL_BYTES`]) once one returns.
//! Each request stays its own atomic batch with its own response (see `apply_entry`).

use std::sync::Arc;

use openraft::error::{ClientWriteError, RaftError};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::request::Op;
use crate::{NodeId, Proposal, Request, Response, TypeConfig};

/// Proposals in flight at once: one being synced to the leader's log while the one before
/// it is replicated and applied.
pub(crate) const IN_FLIGHT: usize = 2;

/// About how large (as the log's JSON) the requests gathered into one proposal may be;
/// one request larger than this goes alone.
pub(crate) const PROPOSAL_BYTES: usize = 1 << 20;

/// Why a proposed request did not apply.
#[derive(Clone, Debug)]
pub(crate) enum Rejected {
    /// This node is not the leader (nothing proposed), or a new leader removed the entry
    /// from the log: it did not and will not apply. The leader, when known.
    NotLeader(Option<NodeId>),
    /// The node lost its leadership or stopped while the entry was in flight: it may yet
    /// apply.
    Unknown(String),
    /// The request would make a log entry over the record limit: refused before it was
    /// proposed (the log could not hold it). Its size as the log's JSON.
    TooLarge(usize),
    /// The node's Raft had stopped (a storage failure, a log it cannot read) before the
    /// request was proposed: it did not and will not apply. Why, as the node knows it.
    Stopped(String),
}

/// What a log entry adds around its requests' JSON (log id, payload tag, the array), with
/// room to spare.
const ENTRY_BYTES: usize = 4096;

/// A request waiting to be proposed.
struct Waiting {
    request: Request,
    bytes: usize,
    reply: oneshot::Sender<Result<(u64, Response), Rejected>>,
}

/// A node's proposer: hands requests to the task that gathers them.
pub(crate) struct Proposer {
    queue: mpsc::UnboundedSender<Waiting>,
}

impl Proposer {
    /// Starts the gathering task for `raft`; it ends when the proposer is dropped.
    pub(crate) fn start(raft: openraft::Raft<TypeConfig>) -> Proposer {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(gather(raft, waiting));
        Proposer { queue }
    }

    /// Proposes `request`: the index of its entry and its response once applied here.
    pub(crate) async fn propose(&self, request: Request) -> Result<(u64, Response), Rejected> {
        let (reply, answer) = oneshot::channel();
        let mut bytes = json_bytes(&request);
        if bytes + ENTRY_BYTES > skewdb::MAX_RECORD_BYTES / 2 {
            // Near the limit the estimate is not enough: the log's own encoding decides.
            bytes = serde_json::to_vec(&request).map_or(usize::MAX, |json| json.len());
            if bytes.saturating_add(ENTRY_BYTES) > skewdb::MAX_RECORD_BYTES {
                return Err(Rejected::TooLarge(bytes));
            }
        }
        self.queue
            .send(Waiting {
                request,
                bytes,
                reply,
            })
            // The task is gone only when the node stops: nothing was proposed.
            .map_err(|_| Rejected::NotLeader(None))?;
        answer
            .await
            .unwrap_or_else(|_| Err(Rejected::Unknown("the node stopped".to_string())))
    }
}

/// About the size of `request` in the log's JSON (bytes as arrays of numbers).
fn json_bytes(request: &Request) -> usize {
    let op_bytes = |op: &Op| match op {
        Op::Create {
            collection, arrays, ..
        } => collection.len() + 96 * arrays.len(),
        Op::Put {
            collection,
            key,
            body,
        } => collection.len() + 4 * (key.len() + body.len()),
        Op::Push {
            collection,
            key,
            field,
            measures,
            payload,
            ..
        } => {
            let names: usize = measures.iter().map(|(name, _)| name.len() + 32).sum();
            collection.len() + field.len() + 4 * (key.len() + payload.len()) + names
        }
        Op::Remove {
            collection,
            key,
            field,
            ..
        }
        | Op::Expire {
            collection,
            key,
            field,
            ..
        } => collection.len() + field.len() + 4 * key.len(),
        Op::Delete { collection, key } => collection.len() + 4 * key.len(),
        Op::Drop { collection } => collection.len(),
        Op::Alter {
            collection,
            rename,
            drop_arrays,
            add_arrays,
            add_measures,
            set_layouts,
            set_rollups,
        } => {
            let pairs = |pairs: &[(String, String)]| -> usize {
                pairs.iter().map(|(a, b)| 8 + a.len() + b.len()).sum()
            };
            collection.len()
                + rename.as_ref().map_or(0, String::len)
                + drop_arrays.iter().map(|f| 4 + f.len()).sum::<usize>()
                + add_arrays
                    .iter()
                    .map(|a| 96 + a.field.len() + a.layout.len() + a.measures.concat().len())
                    .sum::<usize>()
                + pairs(add_measures)
                + pairs(set_layouts)
                + set_rollups.iter().map(|(f, _)| 32 + f.len()).sum::<usize>()
        }
    };
    16 + request
        .ops
        .iter()
        .map(|op| 128 + op_bytes(op))
        .sum::<usize>()
}

/// Why `raft` has stopped, when its metrics say it has (`ServerState::Shutdown`).
pub(crate) fn stopped(raft: &openraft::Raft<TypeConfig>) -> Option<String> {
    let metrics = raft.metrics().borrow().clone();
    (metrics.state == openraft::ServerState::Shutdown).then(|| match &metrics.running_state {
        Err(fatal) => format!("its Raft stopped: {fatal}"),
        Ok(()) => "its Raft stopped".to_string(),
    })
}

async fn gather(raft: openraft::Raft<TypeConfig>, mut waiting: mpsc::UnboundedReceiver<Waiting>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut carried = None;
    loop {
        let first = match carried.take() {
            Some(first) => first,
            None => match waiting.recv().await {
                Some(first) => first,
                None => return,
            },
        };
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        // Everything that came while the slot was taken goes with it.
        let mut bytes = first.bytes;
        let mut gathered = vec![first];
        while let Ok(next) = waiting.try_recv() {
            if bytes + next.bytes > PROPOSAL_BYTES {
                carried = Some(next);
                break;
            }
            bytes += next.bytes;
            gathered.push(next);
        }
        let raft = raft.clone();
        tokio::spawn(async move {
            let (requests, replies): (Vec<Request>, Vec<_>) =
                gathered.into_iter().map(|w| (w.request, w.reply)).unzip();
            // A Raft that has stopped proposes nothing: say so, not "unknown".
            if let Some(why) = stopped(&raft) {
                drop(slot);
                for reply in replies {
                    let _ = reply.send(Err(Rejected::Stopped(why.clone())));
                }
                return;
            }
            let written = raft.client_write(Proposal(requests)).await;
            drop(slot);
            match written {
                Ok(done) => {
                    let index = done.log_id.index;
                    for (reply, response) in replies.into_iter().zip(done.data) {
                        let _ = reply.send(Ok((index, response)));
                    }
                }
                Err(error) => {
                    let rejected = match error {
                        RaftError::APIError(ClientWriteError::ForwardToLeader(forward)) => {
                            Rejected::NotLeader(forward.leader_id)
                        }
                        other => Rejected::Unknown(other.to_string()),
                    };
                    for reply in replies {
                        let _ = reply.send(Err(rejected.clone()));
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ArrayDecl;

    /// A node whose Raft has stopped answers every write "stopped, nothing proposed"
    /// (`Rejected::Stopped`), never "unknown": the write certainly did not apply.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stopped_raft_refuses_writes_as_not_proposed() {
        let dir = tempfile::tempdir().unwrap();
        let (log, state) = crate::open(dir.path()).unwrap();
        let config = openraft::Config {
            heartbeat_interval: 50,
            election_timeout_min: 150,
            election_timeout_max: 300,
            ..openraft::Config::default()
        };
        let config = Arc::new(config.validate().unwrap());
        let router = crate::network::Router::default();
        let raft = openraft::Raft::new(1, config, router.clone(), log, state)
            .await
            .unwrap();
        router.connect(1, raft.clone());
        let members = [(1, openraft::BasicNode::default())].into_iter().collect();
        let members: std::collections::BTreeMap<_, _> = members;
        raft.initialize(members).await.unwrap();
        raft.wait(Some(std::time::Duration::from_secs(5)))
            .state(openraft::ServerState::Leader, "a leader")
            .await
            .unwrap();
        let proposer = Proposer::start(raft.clone());
        let create = Request {
            ops: vec![Op::Create {
                collection: "c".to_string(),
                arrays: Vec::new(),
            }],
        };
        assert!(proposer.propose(create).await.is_ok());
        assert_eq!(stopped(&raft), None);
        raft.shutdown().await.unwrap();
        assert!(stopped(&raft).is_some());
        let put = Request {
            ops: vec![Op::Put {
                collection: "c".to_string(),
                key: b"k".to_vec(),
                body: b"v".to_vec(),
            }],
        };
        match proposer.propose(put).await {
            Err(Rejected::Stopped(why)) => assert!(why.contains("stopped"), "{why}"),
            other => panic!("a stopped node answered {other:?}"),
        }
    }

    fn push(payload: usize) -> Request {
        Request {
            ops: vec![Op::Push {
                collection: "c".to_string(),
                key: b"k".to_vec(),
                field: "f".to_string(),
                item_key: None,
                value: None,
                measures: Vec::new(),
                payload: vec![7; payload],
            }],
        }
    }

    #[test]
    fn the_estimate_is_at_least_the_json_the_log_writes() {
        let mut requests: Vec<Request> = [0, 1, 100, 10_000].map(push).into();
        let other = |op| Request { ops: vec![op] };
        let (collection, key) = ("a collection".to_string(), vec![255; 40]);
        requests.push(other(Op::Put {
            collection: collection.clone(),
            key: key.clone(),
            body: vec![200; 1000],
        }));
        requests.push(other(Op::Create {
            collection: collection.clone(),
            arrays: vec![ArrayDecl {
                field: "readings".to_string(),
                layout: "bucket:60:3600".to_string(),
                measures: vec!["temperature".to_string()],
                rollup: None,
            }],
        }));
        requests.push(other(Op::Remove {
            collection: collection.clone(),
            key: key.clone(),
            field: "f".to_string(),
            item_key: i64::MIN,
        }));
        requests.push(other(Op::Expire {
            collection: collection.clone(),
            key: key.clone(),
            field: "f".to_string(),
            before: i64::MIN,
        }));
        requests.push(other(Op::Alter {
            collection: collection.clone(),
            rename: Some("another name".to_string()),
            drop_arrays: vec!["old".to_string(); 3],
            add_arrays: vec![ArrayDecl {
                field: "readings".to_string(),
                layout: "bucket:60:3600".to_string(),
                measures: vec!["temperature".to_string(), "humidity".to_string()],
                rollup: Some(i64::MIN),
            }],
            add_measures: vec![("readings".to_string(), "pressure".to_string()); 2],
            set_layouts: vec![("reviews".to_string(), "subset:10".to_string()); 2],
            set_rollups: vec![("readings".to_string(), i64::MIN); 2],
        }));
        requests.push(other(Op::Drop {
            collection: collection.clone(),
        }));
        requests.push(other(Op::Delete { collection, key }));
        for request in requests {
            let what = format!("{request:?}");
            let json = serde_json::to_vec(&Proposal(vec![request.clone()])).unwrap();
            assert!(
                json_bytes(&request) >= json.len() - 2,
                "{what}: estimate {} for {} bytes of JSON",
                json_bytes(&request),
                json.len()
            );
            assert!(json_bytes(&request) <= 2 * json.len() + 200);
        }
    }
}
