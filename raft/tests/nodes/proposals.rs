//! Proposals of several requests: each request applies (or is refused) on its own, an entry
//! a crash cut short resumes after the requests it applied, a node gathers concurrent
//! writes into shared entries, and a state machine that went back (its applies are not
//! synced) catches up from the log.

use std::path::Path;
use std::time::Duration;

use openraft::storage::RaftStateMachine;
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use skewdb_raft::client::Client;
use skewdb_raft::node::{NodeConfig, serve};
use skewdb_raft::{ArrayDecl, Op, Proposal, RAFT_COLLECTION, Request, Response, TypeConfig};

fn create() -> Request {
    Request {
        ops: vec![Op::Create {
            collection: "users".to_string(),
            arrays: vec![ArrayDecl {
                field: "followers".to_string(),
                layout: "outlier:4".to_string(),
                measures: Vec::new(),
                rollup: None,
            }],
        }],
    }
}

fn push_to(collection: &str, key: &str, payload: &str) -> Request {
    Request {
        ops: vec![Op::Push {
            collection: collection.to_string(),
            key: key.as_bytes().to_vec(),
            field: "followers".to_string(),
            item_key: None,
            value: None,
            measures: Vec::new(),
            payload: payload.as_bytes().to_vec(),
        }],
    }
}

fn push(key: &str, payload: &str) -> Request {
    push_to("users", key, payload)
}

fn entry(index: u64, requests: Vec<Request>) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Proposal(requests)),
    }
}

/// The payloads of `key`'s followers, in key order.
fn followers(db: &skewdb::Db, key: &str) -> Vec<String> {
    let users = db.collection("users").unwrap();
    let page = users
        .items(key, "followers", &skewdb::ItemQuery::new())
        .unwrap()
        .expect("the parent exists");
    page.items
        .iter()
        .map(|item| String::from_utf8(item.payload.to_vec()).unwrap())
        .collect()
}

#[test]
fn a_proposal_reads_as_an_array_and_an_earlier_single_request_as_one() {
    let proposal = Proposal(vec![create(), push("a", "x")]);
    let json = serde_json::to_string(&proposal).unwrap();
    assert!(json.starts_with('['), "{json}");
    assert_eq!(serde_json::from_str::<Proposal>(&json).unwrap(), proposal);
    // An entry of an earlier build: one request object.
    let single = serde_json::to_string(&push("a", "x")).unwrap();
    assert_eq!(
        serde_json::from_str::<Proposal>(&single).unwrap(),
        Proposal(vec![push("a", "x")])
    );
    assert_eq!(
        serde_json::from_str::<Proposal>("[]").unwrap(),
        Proposal::default()
    );
    for bad in [
        "3",
        "\"ops\"",
        "{\"ops\":3}",
        "[{\"ops\":[{\"op\":\"fly\"}]}]",
    ] {
        assert!(serde_json::from_str::<Proposal>(bad).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn each_request_of_an_entry_applies_or_is_refused_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (_log, mut state) = skewdb_raft::open(dir.path()).unwrap();
    let responses = state
        .apply([
            entry(1, vec![create()]),
            entry(
                2,
                vec![
                    push("a", "first"),
                    push_to("nowhere", "a", "lost"),
                    push("a", "second"),
                    push("b", "third"),
                ],
            ),
            entry(3, Vec::new()),
        ])
        .await
        .unwrap();
    assert_eq!(responses.len(), 3);
    assert_eq!(responses[0], [Response::Applied]);
    assert_eq!(responses[1].len(), 4);
    assert_eq!(responses[1][0], Response::Applied);
    assert!(
        matches!(&responses[1][1], Response::Refused { kind, .. } if kind == "unknown_collection"),
        "{:?}",
        responses[1][1]
    );
    assert_eq!(responses[1][2..], [Response::Applied, Response::Applied]);
    assert!(responses[2].is_empty());
    let db = state.reader().db();
    assert_eq!(followers(&db, "a"), ["first", "second"]);
    assert_eq!(followers(&db, "b"), ["third"]);
    let (applied, _) = state.applied_state().await.unwrap();
    assert_eq!(applied.map(|id| id.index), Some(3));
}

/// A replicated create declares rollups; an entry of an earlier build, without the
/// `rollup` field, reads as none.
#[tokio::test]
async fn a_replicated_collection_keeps_its_rollups() {
    let dir = tempfile::tempdir().unwrap();
    let (_log, mut state) = skewdb_raft::open(dir.path()).unwrap();
    let sensors = |rollup| Request {
        ops: vec![Op::Create {
            collection: "sensors".to_string(),
            arrays: vec![ArrayDecl {
                field: "t".to_string(),
                layout: "bucket:60:3600".to_string(),
                measures: Vec::new(),
                rollup,
            }],
        }],
    };
    let earlier = r#"{"ops":[{"op":"create","collection":"sensors","arrays":[{"field":"t","layout":"bucket:60:3600"}]}]}"#;
    let parsed: Request = serde_json::from_str(earlier).unwrap();
    assert_eq!(parsed, sensors(None));
    let bad = Request {
        ops: vec![Op::Create {
            collection: "bad".to_string(),
            arrays: vec![ArrayDecl {
                field: "e".to_string(),
                layout: "embed".to_string(),
                measures: Vec::new(),
                rollup: Some(60),
            }],
        }],
    };
    let responses = state
        .apply([entry(1, vec![sensors(Some(3600)), bad])])
        .await
        .unwrap();
    assert_eq!(responses[0][0], Response::Applied);
    assert!(
        matches!(&responses[0][1], Response::Refused { kind, .. } if kind == "invalid_schema"),
        "{:?}",
        responses[0][1]
    );
    let db = state.reader().db();
    let spec = db.collection("sensors").unwrap().spec().clone();
    assert_eq!(spec.arrays()[0].rollup, Some(3600));
}

#[tokio::test]
async fn an_entry_a_crash_cut_short_resumes_after_the_requests_it_applied() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_log, mut state) = skewdb_raft::open(dir.path()).unwrap();
        state.apply([entry(1, vec![create()])]).await.unwrap();
        // Entry 2's first request applied, as its own batch with the progress beside it,
        // then the process died.
        let db = state.reader().db();
        let mut batch = db.batch();
        batch.push("users", "a", "followers", skewdb::NewItem::new("first"));
        batch.put(RAFT_COLLECTION, "partial", br#"{"index":2,"done":1}"#);
        batch.commit().unwrap();
    }
    let (log, mut state) = skewdb_raft::open(dir.path()).unwrap();
    let responses = state
        .apply([entry(2, vec![push("a", "first"), push("a", "second")])])
        .await
        .unwrap();
    assert_eq!(responses, [[Response::Applied, Response::Applied]]);
    assert_eq!(followers(&state.reader().db(), "a"), ["first", "second"]);

    // Progress recorded for an entry other than the next one is stale: ignored.
    let db = state.reader().db();
    let mut batch = db.batch();
    batch.put(RAFT_COLLECTION, "partial", br#"{"index":2,"done":1}"#);
    batch.commit().unwrap();
    drop((db, state, log));
    let (log, mut state) = skewdb_raft::open(dir.path()).unwrap();
    state
        .apply([entry(3, vec![push("a", "third"), push("a", "fourth")])])
        .await
        .unwrap();
    assert_eq!(
        followers(&state.reader().db(), "a"),
        ["first", "second", "third", "fourth"]
    );

    // Progress that does not parse is an error, not a guess.
    let db = state.reader().db();
    let mut batch = db.batch();
    batch.put(RAFT_COLLECTION, "partial", b"{not json");
    batch.commit().unwrap();
    drop((db, state, log));
    assert!(skewdb_raft::open(dir.path()).is_err());
}

/// A one-node cluster serving in this process: its address and the way to stop it.
async fn single_node(
    dir: &Path,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let config = NodeConfig::new(1, dir, "127.0.0.1:0");
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let node = tokio::spawn(async move {
        serve(
            config,
            async {
                let _ = stop_rx.await;
            },
            |addr| {
                let _ = bound_tx.send(addr.to_string());
            },
        )
        .await
        .unwrap()
    });
    (bound_rx.await.unwrap(), stop_tx, node)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_entries_and_each_gets_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, stop, node) = single_node(dir.path()).await;
    let client = std::sync::Arc::new(Client::new([addr.clone()]));
    client
        .init([(1, addr.clone())])
        .await
        .expect("a one-node cluster forms");
    client.write(&create()).await.unwrap();
    let writes: Vec<_> = (0..48)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move {
                // One in four goes to a collection that does not exist: refused alone.
                let request = match n % 4 {
                    3 => push_to("nowhere", "k", "lost"),
                    _ => push(&format!("user{}", n % 3), &format!("p{n}")),
                };
                (n, client.write(&request).await.unwrap())
            })
        })
        .collect();
    let mut indexes = std::collections::BTreeSet::new();
    for write in writes {
        let (n, reply) = write.await.unwrap();
        indexes.insert(reply.index);
        match n % 4 {
            3 => assert!(
                matches!(&reply.response, Response::Refused { kind, .. } if kind == "unknown_collection"),
                "{n}: {reply:?}"
            ),
            _ => assert_eq!(reply.response, Response::Applied, "{n}"),
        }
    }
    assert!(
        indexes.len() < 48,
        "48 concurrent writes took {} entries: none gathered",
        indexes.len()
    );
    let mut seen = 0;
    for user in 0..3 {
        let read = client.read("users", format!("user{user}").as_bytes()).await;
        let document = read.unwrap().document.expect("the parent exists");
        let items = &document.arrays["followers"];
        seen += items.len();
        for item in items {
            let n: usize = String::from_utf8(item.payload.0.clone()).unwrap()[1..]
                .parse()
                .unwrap();
            assert_eq!(n % 3, user, "{n} under user{user}");
        }
    }
    assert_eq!(seen, 36);
    let _ = stop.send(());
    node.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_that_went_back_catches_up_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let node_dir = dir.path().join("node");
    let early = dir.path().join("early-state");
    let (addr, stop, node) = single_node(&node_dir).await;
    let client = Client::new([addr.clone()]).with_timeout(Duration::from_secs(5));
    client.init([(1, addr.clone())]).await.unwrap();
    client.write(&create()).await.unwrap();
    client.write(&push("a", "1")).await.unwrap();
    let _ = stop.send(());
    node.await.unwrap();
    // The state as a power loss could leave it: applies after this never synced.
    copy_dir(&node_dir.join("state"), &early);

    let (addr, stop, node) = single_node(&node_dir).await;
    let client = Client::new([addr]).with_timeout(Duration::from_secs(5));
    for n in 2..=5 {
        client.write(&push("a", &n.to_string())).await.unwrap();
    }
    let _ = stop.send(());
    node.await.unwrap();
    std::fs::remove_dir_all(node_dir.join("state")).unwrap();
    copy_dir(&early, &node_dir.join("state"));

    let (addr, stop, node) = single_node(&node_dir).await;
    let client = Client::new([addr]).with_timeout(Duration::from_secs(5));
    let read = client.read("users", b"a").await.unwrap();
    let items: Vec<String> = read.document.expect("the parent exists").arrays["followers"]
        .iter()
        .map(|item| String::from_utf8(item.payload.0.clone()).unwrap())
        .collect();
    assert_eq!(items, ["1", "2", "3", "4", "5"]);
    let _ = stop.send(());
    node.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_too_large_for_the_log_is_refused_and_the_node_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, stop, node) = single_node(dir.path()).await;
    let client = Client::new([addr.clone()]).with_timeout(Duration::from_secs(20));
    client.init([(1, addr)]).await.unwrap();
    client.write(&create()).await.unwrap();
    // Bytes are arrays of numbers in the log's JSON: 5 MiB of them take about 20 MiB.
    let mut large = push("a", "");
    if let Op::Push { payload, .. } = &mut large.ops[0] {
        *payload = vec![200; 5 << 20];
    }
    match client.write(&large).await {
        Err(skewdb_raft::client::ClientError::Refused(failure)) => {
            assert_eq!(failure.kind, "record_too_large", "{failure:?}");
        }
        other => panic!("a request over the record limit answered {other:?}"),
    }
    // Through exec: that batch is refused on its line, the next one commits.
    let payload: String = "x".repeat(5 << 20);
    let lines = format!(
        "{{\"op\":\"push\",\"coll\":\"users\",\"key\":\"b\",\"field\":\"followers\",\"payload\":\"{payload}\"}}\n\
         {{\"op\":\"commit\"}}\n\
         {{\"op\":\"push\",\"coll\":\"users\",\"key\":\"b\",\"field\":\"followers\",\"payload\":\"small\"}}\n\
         {{\"op\":\"commit\"}}\n"
    );
    let answers = client.exec(&lines).await.unwrap();
    let answers: Vec<serde_json::Value> = answers
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["kind"], "record_too_large", "{answers:?}");
    assert_eq!(answers[1]["committed"], 1, "{answers:?}");
    // One under the limit in the log (about 2.4 MiB of JSON) is proposed and applies.
    let mut fits = push("a", "");
    if let Op::Push { payload, .. } = &mut fits.ops[0] {
        *payload = vec![200; 600 << 10];
    }
    assert_eq!(
        client.write(&fits).await.unwrap().response,
        Response::Applied
    );
    assert_eq!(
        client.write(&push("a", "after")).await.unwrap().response,
        Response::Applied
    );
    let read = client.read("users", b"a").await.unwrap();
    assert_eq!(read.document.unwrap().arrays["followers"].len(), 2);
    let _ = stop.send(());
    node.await.unwrap();
}

/// A replicated alteration: applied in its request's batch (writes after it in the same
/// request see the new schema), or refused whole with everything else in that request.
#[tokio::test]
async fn a_replicated_alteration_changes_the_schema_or_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (_log, mut state) = skewdb_raft::open(dir.path()).unwrap();
    let pushes: Vec<Request> = (0..10).map(|n| push("a", &format!("f{n}"))).collect();
    let alter = Op::Alter {
        collection: "users".to_string(),
        rename: Some("people".to_string()),
        drop_arrays: Vec::new(),
        add_arrays: vec![ArrayDecl {
            field: "readings".to_string(),
            layout: "bucket:4:3600".to_string(),
            measures: vec!["temp".to_string()],
            rollup: Some(3600),
        }],
        add_measures: vec![("followers".to_string(), "weight".to_string())],
        set_layouts: vec![("followers".to_string(), "subset:2".to_string())],
        set_rollups: Vec::new(),
    };
    // Written by a client as the log's JSON, read back the same; fields left out are empty.
    let json = serde_json::to_string(&alter).unwrap();
    assert_eq!(serde_json::from_str::<Op>(&json).unwrap(), alter);
    let bare: Op = serde_json::from_str(r#"{"op":"alter","collection":"x"}"#).unwrap();
    assert!(
        matches!(bare, Op::Alter { rename: None, ref set_layouts, .. } if set_layouts.is_empty())
    );

    let refused = Request {
        ops: vec![
            Op::Alter {
                collection: "people".to_string(),
                rename: None,
                drop_arrays: Vec::new(),
                add_arrays: Vec::new(),
                add_measures: Vec::new(),
                set_layouts: vec![("nope".to_string(), "embed".to_string())],
                set_rollups: Vec::new(),
            },
            push_to("people", "b", "lost").ops.remove(0),
        ],
    };
    let mut altered = Request { ops: vec![alter] };
    altered.ops.extend(push_to("people", "a", "f10").ops);
    let mut entries = vec![entry(1, vec![create()]), entry(2, pushes)];
    entries.push(entry(3, vec![altered, refused]));
    let responses = state.apply(entries).await.unwrap();
    assert_eq!(responses[2][0], Response::Applied);
    assert!(
        matches!(&responses[2][1], Response::Refused { kind, .. } if kind == "unknown_field"),
        "{:?}",
        responses[2][1]
    );
    let db = state.reader().db();
    assert!(db.collection("users").is_err());
    let people = db.collection("people").unwrap();
    assert_eq!(
        people.spec().describe_arrays(),
        "followers=subset:2 [value weight], readings=bucket:4:3600 [temp] rollup 3600"
    );
    let page = people
        .items("a", "followers", &skewdb::ItemQuery::new())
        .unwrap()
        .unwrap();
    let payloads: Vec<_> = page.items.iter().map(|i| i.payload.to_vec()).collect();
    let want: Vec<_> = (0..11).map(|n| format!("f{n}").into_bytes()).collect();
    assert_eq!(payloads, want);
    assert!(people.get("b").unwrap().is_none());
}

/// A replicated drop: the collection and its records go in the request's batch and the name
/// is free for the next create; dropping a collection that does not exist is refused.
#[tokio::test]
async fn a_replicated_drop_frees_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let (_log, mut state) = skewdb_raft::open(dir.path()).unwrap();
    let drop = |collection: &str| Request {
        ops: vec![Op::Drop {
            collection: collection.to_string(),
        }],
    };
    let json = serde_json::to_string(&drop("users")).unwrap();
    assert_eq!(json, r#"{"ops":[{"op":"drop","collection":"users"}]}"#);
    let responses = state
        .apply([
            entry(1, vec![create(), push("a", "first")]),
            entry(2, vec![drop("users"), drop("nowhere")]),
            entry(3, vec![create(), push("b", "second")]),
        ])
        .await
        .unwrap();
    assert_eq!(responses[1][0], Response::Applied);
    assert!(
        matches!(&responses[1][1], Response::Refused { kind, .. } if kind == "unknown_collection"),
        "{:?}",
        responses[1][1]
    );
    assert_eq!(responses[2], [Response::Applied, Response::Applied]);
    let db = state.reader().db();
    assert!(db.collection("users").unwrap().get("a").unwrap().is_none());
    assert_eq!(followers(&db, "b"), ["second"]);
}

/// The node's own collection is not the clients': a put over what it applied, or a drop or
/// an alteration of it, is refused on every replica, and the node's state stays whole.
#[tokio::test]
async fn the_nodes_own_collection_is_refused_to_clients() {
    let dir = tempfile::tempdir().unwrap();
    let (log, mut state) = skewdb_raft::open(dir.path()).unwrap();
    let raft = RAFT_COLLECTION.to_string();
    let ops = [
        Op::Put {
            collection: raft.clone(),
            key: b"applied".to_vec(),
            body: b"null".to_vec(),
        },
        Op::Drop {
            collection: raft.clone(),
        },
        Op::Alter {
            collection: raft.clone(),
            rename: Some("mine".to_string()),
            drop_arrays: Vec::new(),
            add_arrays: Vec::new(),
            add_measures: Vec::new(),
            set_layouts: Vec::new(),
            set_rollups: Vec::new(),
        },
    ];
    let requests = ops.map(|op| Request { ops: vec![op] });
    let responses = state
        .apply([entry(1, vec![create()]), entry(2, requests.into())])
        .await
        .unwrap();
    for response in &responses[1] {
        assert!(
            matches!(response, Response::Refused { kind, .. } if kind == "invalid_name"),
            "{response:?}"
        );
    }
    let (applied, _) = state.applied_state().await.unwrap();
    assert_eq!(applied.map(|id| id.index), Some(2));
    drop((log, state));
    let (_log, mut state) = skewdb_raft::open(dir.path()).unwrap();
    let (applied, _) = state.applied_state().await.unwrap();
    assert_eq!(applied.map(|id| id.index), Some(2));
}
