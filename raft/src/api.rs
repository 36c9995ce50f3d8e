//! The node program's client API: what clients send a node over HTTP and what it answers,
//! as JSON (see `DISTRIBUTION.md`, "The node program").

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::{NodeId, Response};

/// Bytes in JSON: a string when they are UTF-8, `{"base64": "..."}` otherwise (as
/// `skewdb exec` reads them).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct JsonBytes(pub Vec<u8>);

impl Serialize for JsonBytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("base64", &STANDARD.encode(&self.0))?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for JsonBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BytesVisitor;

        impl<'de> Visitor<'de> for BytesVisitor {
            type Value = JsonBytes;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or {\"base64\": \"...\"}")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<JsonBytes, E> {
                Ok(JsonBytes(text.as_bytes().to_vec()))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonBytes, A::Error> {
                let mut encoded: Option<String> = None;
                while let Some(name) = map.next_key::<String>()? {
                    if name != "base64" {
                        return Err(de::Error::unknown_field(&name, &["base64"]));
                    }
                    if encoded.is_some() {
                        return Err(de::Error::duplicate_field("base64"));
                    }
                    encoded = Some(map.next_value()?);
                }
                let encoded = encoded.ok_or_else(|| de::Error::missing_field("base64"))?;
                STANDARD
                    .decode(encoded.as_bytes())
                    .map(JsonBytes)
                    .map_err(|e| de::Error::custom(format!("bad base64 {encoded:?}: {e}")))
            }
        }

        deserializer.deserialize_any(BytesVisitor)
    }
}

/// What a committed write answers: the log index it was applied at, and what applying it
/// did (a request the engine refuses is refused alike on every replica).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WriteReply {
    pub index: u64,
    pub response: Response,
}

/// How a read is served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    /// By the leader, after it confirmed with a quorum that it still leads and applied
    /// every entry committed when the read arrived (Raft's read index): linearizable.
    #[default]
    Linearizable,
    /// By the node asked, from what it has applied, once that reaches `min_index` (the
    /// index a client's own write returned: read-your-writes). May be stale otherwise.
    Local,
}

/// A read of one parent: its body and every item of every array, merged from wherever
/// they live, in key order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadQuery {
    pub coll: String,
    pub key: JsonBytes,
    #[serde(default)]
    pub consistency: Consistency,
    /// With [`Consistency::Local`]: wait (up to a few seconds) until the node applied it.
    #[serde(default)]
    pub min_index: Option<u64>,
}

/// One item as a read returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ItemJson {
    pub key: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    pub payload: JsonBytes,
}

/// A parent as a read returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentJson {
    pub key: JsonBytes,
    pub body: JsonBytes,
    /// Every array field's items, in key order (ties in push order).
    pub arrays: BTreeMap<String, Vec<ItemJson>>,
}

/// What a read answers: the log index of the last entry the state read had applied, and
/// the parent (`None` when it does not exist).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadReply {
    pub index: u64,
    pub document: Option<DocumentJson>,
}

/// An error a node answers with (any status but 200): `kind` as `skewdb`'s error kinds,
/// plus `not_leader` (the request needs the leader: `leader` and `leader_addr` say where
/// it is when this node knows), `unknown_outcome` (the write may or may not apply) and
/// `node_stopped` (the node's Raft has stopped: nothing was proposed, the write did not
/// apply; another node may take it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub error: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_addr: Option<String>,
}

impl Failure {
    pub fn new(kind: &str, error: impl Into<String>) -> Failure {
        Failure {
            error: error.into(),
            kind: kind.to_string(),
            leader: None,
            leader_addr: None,
        }
    }
}

/// `cluster init`: the first members, each id with the address it listens on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InitRequest {
    pub members: BTreeMap<NodeId, String>,
}

/// `cluster add`: a node to add (as a learner until it caught up, then a voter).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AddRequest {
    pub id: NodeId,
    pub addr: String,
}

/// `cluster remove`: a voter to take out of the membership.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RemoveRequest {
    pub id: NodeId,
}

/// `cluster status`: what one node knows of the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub id: NodeId,
    /// `leader`, `follower`, `candidate`, `learner`, or `shutdown` once its Raft stopped.
    pub state: String,
    /// Why its Raft stopped, when it has (`state` is `shutdown`): it then answers every
    /// write `node_stopped` (nothing proposed) until it is restarted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Started on an empty directory and still catching up with the cluster: it takes
    /// entries and snapshots but votes in no election until its log reaches the commit
    /// index the leader first named to it (a wiped node must not vote on what it lost).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejoining: bool,
    pub term: u64,
    pub leader: Option<NodeId>,
    pub leader_addr: Option<String>,
    pub last_log_index: Option<u64>,
    pub applied_index: Option<u64>,
    pub snapshot_index: Option<u64>,
    /// Voters, by id, with their addresses.
    pub voters: BTreeMap<NodeId, String>,
    /// Learners (members that replicate but do not vote).
    pub learners: BTreeMap<NodeId, String>,
}
