//! `skewdb serve` and `skewdb cluster` as a user runs them (the commands DISTRIBUTION.md
//! starts with): three nodes on loopback, a cluster formed, writes and reads through any
//! node, a node added and removed, and the errors each command names.

use std::net::TcpListener;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use super::support::skewdb_with_input;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_skewdb");

fn skewdb(args: &[&str], input: &str) -> Output {
    skewdb_with_input(args, input.as_bytes())
}

fn lines(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn free_addr() -> String {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string()
}

/// Node processes, killed when dropped.
struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn serve(id: u64, dir: &std::path::Path, addr: &str) -> Child {
    Command::new(BIN)
        .args(["serve", "--id", &id.to_string(), "--listen", addr])
        .args(["--data", dir.join(format!("node-{id}")).to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Runs `args` until it succeeds (the nodes take a moment to listen and elect).
fn until_ok(args: &[&str], input: &str) -> Output {
    for _ in 0..100 {
        let output = skewdb(args, input);
        if output.status.success() {
            return output;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{args:?} never succeeded: {:?}", skewdb(args, input));
}

#[test]
fn a_cluster_formed_written_and_read_from_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let addrs: Vec<String> = (0..4).map(|_| free_addr()).collect();
    let mut nodes = Nodes(
        (1..=3)
            .map(|id| serve(id, dir.path(), &addrs[id as usize - 1]))
            .collect(),
    );
    let members: Vec<String> = (1..=3)
        .map(|id| format!("{id}={}", addrs[id - 1]))
        .collect();
    let mut init = vec!["cluster", "init", "--node", &addrs[0]];
    for member in &members {
        init.extend(["--member", member.as_str()]);
    }
    until_ok(&init, "");
    // A second init is refused: the cluster exists.
    let again = skewdb(&init, "");
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("error"));

    // Writes sent to a follower reach the leader; each batch answered with its index.
    let all: Vec<&str> = addrs[..3]
        .iter()
        .flat_map(|a| ["--node", a.as_str()])
        .collect();
    let mut exec = vec!["cluster", "exec"];
    exec.extend(["--node", addrs[2].as_str()]);
    let input = r#"{"op":"create","coll":"users","arrays":[{"field":"followers","layout":"outlier:2"}]}
{"op":"commit"}
{"op":"put","coll":"users","key":"alice","body":"hello"}
{"op":"push","coll":"users","key":"alice","field":"followers","payload":"bob"}
{"op":"push","coll":"users","key":"alice","field":"followers","payload":"carol"}
{"op":"push","coll":"users","key":"alice","field":"followers","payload":"dan"}
{"op":"commit"}
"#;
    let written = until_ok(&exec, input);
    let acks = lines(&written);
    assert_eq!(acks.len(), 2, "{acks:?}");
    let index = acks[1]["index"].as_u64().unwrap();
    assert!(index > acks[0]["index"].as_u64().unwrap());

    // Read from the leader (linearizable), whichever node is asked, and from a follower
    // once it applied the write: three followers, two past the Outlier cap.
    let mut get = vec!["cluster", "get"];
    get.extend(["--node", addrs[1].as_str(), "users", "alice"]);
    let read = lines(&until_ok(&get, ""));
    let followers = &read[0]["document"]["arrays"]["followers"];
    let payloads: Vec<&str> = followers
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["payload"].as_str().unwrap())
        .collect();
    assert_eq!(payloads, ["bob", "carol", "dan"]);
    assert_eq!(read[0]["document"]["body"], "hello");
    let min = index.to_string();
    get.extend(["--local", "--min-index", min.as_str()]);
    let local = lines(&until_ok(&get, ""));
    assert_eq!(local[0]["document"], read[0]["document"]);

    // Errors: a bad line drops its batch (exit 1, the line named); an unknown collection;
    // a parent that is not there; a malformed member.
    let bad = skewdb(
        &exec,
        "{\"op\":\"put\",\"coll\":\"users\"}\n{\"op\":\"commit\"}\n",
    );
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(lines(&bad)[0]["line"], 1);
    assert_eq!(lines(&bad)[0]["kind"], "invalid_input");
    let mut missing = vec!["cluster", "get", "--node", addrs[0].as_str()];
    missing.extend(["nowhere", "alice"]);
    let output = skewdb(&missing, "");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nowhere"));
    let mut absent = vec!["cluster", "get", "--node", addrs[0].as_str()];
    absent.extend(["users", "nobody"]);
    let output = skewdb(&absent, "");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nobody"));
    let output = skewdb(
        &["cluster", "init", "--node", &addrs[0], "--member", "one"],
        "",
    );
    assert_eq!(output.status.code(), Some(2), "{output:?}");

    // A schema change through the log: renamed, an array added, the followers moved to
    // another layout; every replica answers as before under the new name. An alteration
    // the engine refuses is refused with its kind.
    let alter = r#"{"op":"alter","coll":"users","rename":"people","add_array":["badges=embed"],"set_layout":["followers=subset:1"]}
{"op":"commit"}
{"op":"alter","coll":"people","set_layout":["nope=embed"]}
{"op":"commit"}
"#;
    let altered = skewdb(&exec, alter);
    assert_eq!(altered.status.code(), Some(1), "{altered:?}");
    let answers = lines(&altered);
    let index = answers[0]["index"].as_u64().unwrap();
    assert_eq!(answers[1]["kind"], "unknown_field", "{answers:?}");
    let mut renamed = vec!["cluster", "get", "--node", addrs[0].as_str(), "people"];
    let min = index.to_string();
    renamed.extend(["alice", "--local", "--min-index", min.as_str()]);
    let moved = lines(&until_ok(&renamed, ""));
    let arrays = &moved[0]["document"]["arrays"];
    assert_eq!(arrays["badges"], serde_json::json!([]), "{moved:?}");
    assert_eq!(moved[0]["document"]["body"], "hello");
    get.truncate(2);
    get.extend(["--node", addrs[1].as_str(), "users", "alice"]);
    assert_eq!(skewdb(&get, "").status.code(), Some(1));

    // A fourth node joins (caught up, then a voter), then leaves.
    nodes.0.push(serve(4, dir.path(), &addrs[3]));
    let mut add = vec!["cluster", "add"];
    add.extend(all.iter().copied());
    add.extend(["4", addrs[3].as_str()]);
    let added = lines(&until_ok(&add, ""));
    assert!(added[0]["voters"].get("4").is_some(), "{added:?}");
    let mut status = vec!["cluster", "status", "--node", addrs[3].as_str()];
    let mut caught_up = false;
    for _ in 0..100 {
        let now = lines(&until_ok(&status, ""));
        if now[0]["applied_index"].as_u64() >= Some(index) {
            caught_up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(caught_up, "node 4 did not catch up");
    let mut remove = vec!["cluster", "remove"];
    remove.extend(all.iter().copied());
    remove.push("4");
    let removed = lines(&until_ok(&remove, ""));
    assert!(removed[0]["voters"].get("4").is_none(), "{removed:?}");
    status.extend(all.iter().copied());
    let statuses = lines(&until_ok(&status, ""));
    assert_eq!(statuses.len(), 4);
    let leaders = statuses.iter().filter(|s| s["state"] == "leader").count();
    assert_eq!(leaders, 1, "{statuses:?}");
    // An unreachable node: status says so and exits 1.
    let output = skewdb(&["cluster", "status", "--node", &free_addr()], "");
    assert_eq!(output.status.code(), Some(1));
}
