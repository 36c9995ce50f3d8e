//! What a log entry asks of the state machine: the requests of one or more clients, each
//! one atomic batch of skewdb operations.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use skewdb::{Alteration, Batch, CollectionSpec, Db, Layout, NewItem};

use crate::state_machine::RAFT_COLLECTION;

/// What one normal log entry carries: the requests of one or more clients, proposed
/// together (one append and one replication for all) and applied in order, each as its
/// own atomic batch with its own [`Response`]. A node gathers the requests that wait while
/// its earlier proposals are in flight into one (openraft 0.9 appends each proposal to the
/// leader's log with a sync of its own).
///
/// Written as a JSON array of requests; a single request object, as entries of earlier
/// builds hold, reads as a proposal of one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Proposal(pub Vec<Request>);

impl From<Request> for Proposal {
    fn from(request: Request) -> Proposal {
        Proposal(vec![request])
    }
}

impl Serialize for Proposal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Proposal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Proposal, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Many(Vec<Request>),
            One(Request),
        }
        Ok(match Written::deserialize(deserializer)? {
            Written::Many(requests) => Proposal(requests),
            Written::One(request) => Proposal(vec![request]),
        })
    }
}

/// One atomic batch of operations, applied on every replica in log order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The operations, in order.
    pub ops: Vec<Op>,
}

/// One operation of a [`Request`], as `skewdb exec` spells them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Creates a collection (nothing when one with the same spec exists).
    Create {
        collection: String,
        arrays: Vec<ArrayDecl>,
    },
    /// Sets a parent's body.
    Put {
        collection: String,
        key: Vec<u8>,
        body: Vec<u8>,
    },
    /// Pushes an item; without `item_key`, the array's greatest key + 1 (the same on every
    /// replica, which holds the same state).
    Push {
        collection: String,
        key: Vec<u8>,
        field: String,
        item_key: Option<i64>,
        value: Option<f64>,
        /// Values of the array's further measures, by name.
        measures: Vec<(String, f64)>,
        payload: Vec<u8>,
    },
    /// Removes every item with `item_key` from an array.
    Remove {
        collection: String,
        key: Vec<u8>,
        field: String,
        item_key: i64,
    },
    /// Deletes a parent and all its items.
    Delete { collection: String, key: Vec<u8> },
    /// Drops a parent's sealed buckets whose keys all lie before `before`.
    Expire {
        collection: String,
        key: Vec<u8>,
        field: String,
        before: i64,
    },
    /// Changes a collection's schema (`skewdb::Alteration`), in the request's batch: arrays
    /// dropped, added, measured, moved to other layouts (each replica then migrates its
    /// parents in the background, as a single database does), rollups set, then the rename.
    Alter {
        collection: String,
        #[serde(default)]
        rename: Option<String>,
        #[serde(default)]
        drop_arrays: Vec<String>,
        #[serde(default)]
        add_arrays: Vec<ArrayDecl>,
        /// (field, measure name).
        #[serde(default)]
        add_measures: Vec<(String, String)>,
        /// (field, layout as `skewdb create` spells it).
        #[serde(default)]
        set_layouts: Vec<(String, String)>,
        /// (field, span).
        #[serde(default)]
        set_rollups: Vec<(String, i64)>,
    },
    /// Drops a collection with every record of it, in the request's batch (each replica then
    /// reclaims its space in the background, as a single database does).
    Drop { collection: String },
}

/// An array field of a collection an [`Op::Create`] makes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArrayDecl {
    pub field: String,
    /// As `skewdb create` spells it: `embed`, `reference`, `subset:N`, `outlier:N`,
    /// `bucket:N[:SPAN]`.
    pub layout: String,
    /// Its measures' names (none: the one named `value`).
    #[serde(default)]
    pub measures: Vec<String>,
    /// The span of the rollups its bucket expiries keep (`CollectionSpec::rollup`); none
    /// when absent.
    #[serde(default)]
    pub rollup: Option<i64>,
}

/// What applying a request did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Response {
    /// The batch committed (or the entry carried no request).
    Applied,
    /// The batch was refused whole, as every replica refuses it: nothing of it applied.
    Refused {
        /// `skewdb::Error::kind` (or `invalid_schema` for a layout that does not parse).
        kind: String,
        message: String,
    },
}

impl Op {
    /// The collection the operation names.
    pub fn collection(&self) -> &str {
        match self {
            Op::Create { collection, .. }
            | Op::Put { collection, .. }
            | Op::Push { collection, .. }
            | Op::Remove { collection, .. }
            | Op::Delete { collection, .. }
            | Op::Expire { collection, .. }
            | Op::Alter { collection, .. }
            | Op::Drop { collection } => collection,
        }
    }
}

impl Request {
    /// Creates the collections the request names, then adds its other operations to
    /// `batch`. An error is the request's own (a bad layout, a conflicting schema).
    pub(crate) fn stage(&self, db: &Db, batch: &mut Batch) -> skewdb::Result<()> {
        for op in &self.ops {
            // The node's own state (what it applied, its membership) is not the clients'.
            if op.collection() == RAFT_COLLECTION {
                return Err(skewdb::Error::InvalidName {
                    name: RAFT_COLLECTION.to_string(),
                    reason: "reserved for the node's own state".to_string(),
                });
            }
            match op {
                Op::Create { collection, arrays } => {
                    let mut spec = CollectionSpec::new(collection);
                    for array in arrays {
                        let layout = parse_layout(collection, &array.layout)?;
                        spec = match array.measures.is_empty() {
                            true => spec.array(&array.field, layout),
                            false => {
                                spec.array_with_measures(&array.field, layout, &array.measures)
                            }
                        };
                        if let Some(span) = array.rollup {
                            spec = spec.rollup(&array.field, span);
                        }
                    }
                    db.create_collection(spec)?;
                }
                Op::Put {
                    collection,
                    key,
                    body,
                } => {
                    batch.put(collection, key, body);
                }
                Op::Push {
                    collection,
                    key,
                    field,
                    item_key,
                    value,
                    measures,
                    payload,
                } => {
                    let mut item = NewItem::new(payload);
                    if let Some(item_key) = item_key {
                        item = item.key(*item_key);
                    }
                    if let Some(value) = value {
                        item = item.value(*value);
                    }
                    for (name, value) in measures {
                        item = item.measure(name, *value);
                    }
                    batch.push(collection, key, field, item);
                }
                Op::Remove {
                    collection,
                    key,
                    field,
                    item_key,
                } => {
                    batch.remove(collection, key, field, *item_key);
                }
                Op::Delete { collection, key } => {
                    batch.delete(collection, key);
                }
                Op::Expire {
                    collection,
                    key,
                    field,
                    before,
                } => {
                    batch.expire_buckets(collection, key, field, *before);
                }
                Op::Alter {
                    collection,
                    rename,
                    drop_arrays,
                    add_arrays,
                    add_measures,
                    set_layouts,
                    set_rollups,
                } => {
                    let mut alteration = Alteration::new();
                    for field in drop_arrays {
                        alteration = alteration.drop_array(field);
                    }
                    for array in add_arrays {
                        let layout = parse_layout(collection, &array.layout)?;
                        alteration = match array.measures.is_empty() {
                            true => alteration.add_array(&array.field, layout),
                            false => alteration.add_array_with_measures(
                                &array.field,
                                layout,
                                &array.measures,
                            ),
                        };
                        if let Some(span) = array.rollup {
                            alteration = alteration.set_rollup(&array.field, span);
                        }
                    }
                    for (field, measure) in add_measures {
                        alteration = alteration.add_measure(field, measure);
                    }
                    for (field, layout) in set_layouts {
                        alteration =
                            alteration.set_layout(field, parse_layout(collection, layout)?);
                    }
                    for (field, span) in set_rollups {
                        alteration = alteration.set_rollup(field, *span);
                    }
                    if let Some(to) = rename {
                        alteration = alteration.rename(to);
                    }
                    batch.alter_collection(collection, alteration);
                }
                Op::Drop { collection } => {
                    batch.drop_collection(collection);
                }
            }
        }
        Ok(())
    }
}

/// `layout` as `skewdb create` spells it, or the `InvalidSchema` every replica answers.
fn parse_layout(collection: &str, layout: &str) -> skewdb::Result<Layout> {
    Layout::parse(layout).map_err(|reason| skewdb::Error::InvalidSchema {
        collection: collection.to_string(),
        reason,
    })
}
