//! The command-line contract: round trips, `--json` shapes, `exec`, errors and exit codes.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::support::{skewdb, skewdb_with_input};
use serde_json::{Value, json};

fn exec(db: &Path, input: &str) -> Output {
    skewdb_with_input(&["exec", db.to_str().unwrap()], input.as_bytes())
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The output of a command that must succeed.
fn ok(args: &[&str]) -> String {
    let output = skewdb(args);
    assert!(output.status.success(), "{args:?}: {output:?}");
    stdout(&output)
}

fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn assert_user_error(output: &Output, needle: &str) {
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr}");
    assert!(stderr.contains(needle), "{stderr}");
    assert!(!stderr.contains("panicked"));
}

fn created() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    let output = skewdb(&["create", "--bytes", &db, "--collection", "users"]);
    assert!(output.status.success(), "{output:?}");
    (dir, db)
}

#[test]
fn put_get_scan_del_round_trip() {
    let (_dir, db) = created();
    assert!(
        skewdb(&["put", &db, "users", "bob", "{\"n\":2}"])
            .status
            .success()
    );
    assert!(
        skewdb(&["put", &db, "users", "alice", "hello"])
            .status
            .success()
    );
    let get = skewdb(&["--json", "get", &db, "users", "alice"]);
    assert!(get.status.success());
    assert_eq!(
        json_lines(&get),
        vec![json!({"key": "alice", "body": "hello", "arrays": {}})]
    );
    let text = skewdb(&["get", &db, "users", "bob"]);
    assert!(stdout(&text).contains("{\"n\":2}"));
    let scan = skewdb(&["scan", &db, "users", "--json"]);
    let keys: Vec<Value> = json_lines(&scan).iter().map(|l| l["key"].clone()).collect();
    assert_eq!(keys, vec![json!("alice"), json!("bob")]);
    let ranged = skewdb(&["scan", &db, "users", "--from", "b", "--to", "bob"]);
    assert_eq!(stdout(&ranged), "bob\t{\"n\":2}\n");
    assert!(skewdb(&["del", &db, "users", "alice"]).status.success());
    assert_user_error(&skewdb(&["get", &db, "users", "alice"]), "not found");
    let verify = skewdb(&["verify", &db]);
    assert!(verify.status.success() && stdout(&verify).starts_with("ok"));
    let inspect = skewdb(&["inspect", &db, "--json"]);
    assert_eq!(json_lines(&inspect)[0]["records"], json!(1));
    let stats = skewdb(&["stats", &db, "--json"]);
    let cache = &json_lines(&stats)[0]["cache"];
    assert!(cache["hot"]["requests"].is_u64());
    assert!(cache["records"]["requests"].is_u64());
    assert_eq!(
        cache["record_budget_bytes"],
        json!(cache["budget_bytes"].as_u64().unwrap() * 90 / 100)
    );
}

#[test]
fn exec_batches_errors_and_unfinished_input() {
    let (_dir, db) = created();
    let input = [
        r#"{"op":"put","coll":"users","key":"a","body":"1"}"#,
        r#"{"op":"put","coll":"users","key":"b","body":{"base64":"/wA="}}"#,
        r#"{"op":"commit"}"#,
        r#"{"op":"put","coll":"users","key":"c","body":"3"}"#,
        r#"this is not json"#,
        r#"{"op":"commit"}"#,
        r#"{"op":"put","coll":"nosuch","key":"d","body":"4"}"#,
        r#"{"op":"commit"}"#,
        r#"{"op":"del","coll":"users","key":"a"}"#,
        r#"{"op":"commit"}"#,
        r#"{"op":"put","coll":"users","key":"never","body":"no commit follows"}"#,
    ]
    .join("\n");
    let output = exec(Path::new(&db), &input);
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(lines[0], json!({"committed": 1}));
    assert_eq!(lines[1]["line"], json!(5));
    assert_eq!(lines[1]["kind"], json!("invalid_input"));
    assert!(lines[1]["error"].as_str().unwrap().contains("invalid JSON"));
    assert_eq!(lines[2]["line"], json!(8));
    assert_eq!(lines[2]["kind"], json!("unknown_collection"));
    assert!(lines[2]["error"].as_str().unwrap().contains("nosuch"));
    assert_eq!(lines[3], json!({"committed": 2}));
    // The batch the input ended inside is reported, not applied.
    assert_eq!(lines[4]["line"], json!(11));
    assert_eq!(lines[4]["kind"], json!("incomplete_input"));
    assert_eq!(lines.len(), 5);
    let scan = json_lines(&skewdb(&["scan", &db, "users", "--json"]));
    let keys: Vec<&Value> = scan.iter().map(|l| &l["key"]).collect();
    assert_eq!(keys, vec![&json!("b")]);
    assert_eq!(scan[0]["body"], json!({"base64": "/wA="}));
}

#[test]
fn exec_success_exits_zero() {
    let (_dir, db) = created();
    let output = exec(
        Path::new(&db),
        "{\"op\":\"put\",\"coll\":\"users\",\"key\":\"a\",\"body\":\"1\"}\n{\"op\":\"commit\"}\n",
    );
    assert!(output.status.success());
    assert_eq!(json_lines(&output), vec![json!({"committed": 1})]);
}

#[test]
fn user_errors_are_one_line_and_exit_one() {
    let (dir, db) = created();
    let missing = dir.path().join("nothing-here");
    assert_user_error(
        &skewdb(&["get", missing.to_str().unwrap(), "users", "a"]),
        "no skewdb database",
    );
    assert_user_error(&skewdb(&["get", &db, "nosuch", "a"]), "unknown collection");
    let long_key = "k".repeat(1025);
    assert_user_error(
        &skewdb(&["put", &db, "users", &long_key, "x"]),
        "key of 1025 bytes",
    );
    assert_user_error(
        &skewdb(&["create", "--bytes", &db, "--collection", ""]),
        "invalid collection name",
    );
    // Usage errors exit 2, as clap's and scripts' convention has it.
    let usage = skewdb(&["frobnicate"]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(skewdb(&["--help"]).status.success());
}

#[test]
fn a_second_writer_gets_a_lock_error_and_a_reader_gets_in() {
    let (_dir, db) = created();
    let mut child = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(["exec", &db])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first process holds the database.
    let stdin = child.stdin.as_mut().unwrap();
    stdin.write_all(b"{\"op\":\"commit\"}\n").unwrap();
    stdin.flush().unwrap();
    let mut acknowledgement = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut acknowledgement,
    )
    .unwrap();
    assert_eq!(acknowledgement.trim(), "{\"committed\":1}");
    assert_user_error(
        &skewdb(&["put", &db, "users", "a", "x"]),
        "locked by another process",
    );
    // Reads open read-only: in beside the writer.
    let read = skewdb(&["--json", "get", &db, "users", "a"]);
    assert_eq!(read.status.code(), Some(1), "{read:?}");
    assert!(String::from_utf8_lossy(&read.stderr).contains("\"kind\":\"not_found\""));
    let stats = skewdb(&["--json", "stats", &db]);
    assert!(stats.status.success(), "{stats:?}");
    drop(child.stdin.take());
    child.wait().unwrap();
}

/// A writer process commits batches one after another while read commands run beside it:
/// each read succeeds and shows the state after a prefix of the batches, at least every
/// one acknowledged before it began.
#[test]
fn reads_beside_a_writing_process_each_show_a_prefix_of_its_batches() {
    let (_dir, db) = created();
    let mut writer = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(["exec", &db])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = writer.stdin.take().unwrap();
    let mut acknowledgements = std::io::BufReader::new(writer.stdout.take().unwrap());
    const BATCHES: usize = 60;
    let mut reads = 0;
    for batch in 1..=BATCHES {
        // Batch N puts key N, zero-padded so that scan order is batch order. (Readers
        // beside a writer whose files roll, checkpoint and compact under them:
        // tests/tests/suite/read_only.rs.)
        let body = format!("{batch:04}-{}", "x".repeat(2048));
        let line = format!(
            "{{\"op\":\"put\",\"coll\":\"users\",\"key\":\"{batch:04}\",\"body\":\"{body}\"}}\n{{\"op\":\"commit\"}}\n"
        );
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
        // Read while the batch may be on its way, then wait for its acknowledgement.
        let acknowledged = batch - 1;
        if batch % 3 == 0 {
            let output = skewdb(&["scan", &db, "users"]);
            assert!(output.status.success(), "{output:?}");
            let keys: Vec<String> = String::from_utf8(output.stdout)
                .unwrap()
                .lines()
                .map(|line| line.split('\t').next().unwrap().to_string())
                .collect();
            let expected: Vec<String> = (1..=keys.len()).map(|n| format!("{n:04}")).collect();
            assert_eq!(keys, expected, "not a prefix of the batches");
            assert!(
                (acknowledged..=batch).contains(&keys.len()),
                "{} parents read with {acknowledged} batches acknowledged",
                keys.len()
            );
            reads += 1;
        }
        let mut acknowledgement = String::new();
        std::io::BufRead::read_line(&mut acknowledgements, &mut acknowledgement).unwrap();
        assert_eq!(acknowledgement.trim(), format!("{{\"committed\":{batch}}}"));
        if batch % 10 == 0 {
            let stats = skewdb(&["--json", "stats", &db]);
            assert!(stats.status.success(), "{stats:?}");
            let verified = skewdb(&["verify", &db]);
            assert!(verified.status.success(), "{verified:?}");
        }
    }
    drop(stdin);
    assert!(writer.wait().unwrap().success());
    assert_eq!(reads, BATCHES / 3);
}

#[test]
fn demo_runs_and_reports_every_scenario_and_layout() {
    let output = skewdb(&["demo", "--json", "--scale", "tiny"]);
    assert!(output.status.success(), "{output:?}");
    let lines = json_lines(&output);
    let rows: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["scenario"].as_str().unwrap(),
                l["layout"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("followers", "embed"),
            ("followers", "reference"),
            ("followers", "outlier:1000"),
            ("reviews", "embed"),
            ("reviews", "reference"),
            ("reviews", "subset:5"),
            ("sensors", "embed"),
            ("sensors", "reference"),
            ("sensors", "bucket:1000:3600"),
        ]
    );
    // Under Embed the celebrity hits the record limit; under Outlier nothing is refused
    // and the largest parent stays small.
    assert!(lines[0]["refused_writes"].as_u64().unwrap() > 0);
    assert_eq!(lines[2]["refused_writes"], json!(0));
    assert!(lines[0]["largest_record_bytes"].as_u64().unwrap() <= 16 * 1024 * 1024);
    assert!(lines[2]["largest_record_bytes"].as_u64().unwrap() < 64 * 1024);
    assert!(lines[2]["items"].as_u64() > lines[0]["items"].as_u64());
}

#[test]
fn arrays_through_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    let created = skewdb(&[
        "create",
        "--bytes",
        &db,
        "--collection",
        "products",
        "--array",
        "reviews=subset:2",
        "--array",
        "readings=bucket:10:3600",
    ]);
    assert!(created.status.success(), "{created:?}");
    for (stars, text) in [(5, "great"), (3, "fine"), (4, "good")] {
        let stars = stars.to_string();
        assert!(
            skewdb(&[
                "push", &db, "products", "p1", "reviews", text, "--value", &stars, "--upsert"
            ])
            .status
            .success()
        );
    }
    let get = json_lines(&skewdb(&["--json", "get", &db, "products", "p1"]));
    let reviews = &get[0]["arrays"]["reviews"];
    assert_eq!(reviews["layout"], json!("subset:2"));
    assert_eq!(reviews["total"], json!(3));
    assert_eq!(reviews["has_overflow"], json!(true));
    assert_eq!(reviews["summary"]["count"], json!(3));
    assert_eq!(reviews["summary"]["sum"], json!(12.0));
    assert_eq!(reviews["summary"]["min_key"], json!(0));
    assert_eq!(
        reviews["inline"],
        json!([{"key": 1, "value": 3.0, "payload": "fine"}, {"key": 2, "value": 4.0, "payload": "good"}])
    );
    let items = json_lines(&skewdb(&[
        "--json", "items", &db, "products", "p1", "reviews", "--desc", "--limit", "2",
    ]));
    assert_eq!(
        items.iter().map(|i| i["key"].clone()).collect::<Vec<_>>(),
        vec![json!(2), json!(1), Value::Null]
    );
    // The limit cut the page: the last line is the cursor to continue from.
    assert!(items[2]["cursor"].is_string(), "{items:?}");
    let after = json_lines(&skewdb(&[
        "--json", "items", &db, "products", "p1", "reviews", "--after", "0",
    ]));
    assert_eq!(after.len(), 2);
    let ranged = stdout(&skewdb(&[
        "items", &db, "products", "p1", "reviews", "--from", "0", "--to", "0",
    ]));
    assert_eq!(ranged, "0\t5\tgreat\n");
    let summary = json_lines(&skewdb(&[
        "--json", "summary", &db, "products", "p1", "reviews", "--from", "1",
    ]));
    assert_eq!(summary[0]["count"], json!(2));
    assert_eq!(summary[0]["max"], json!(4.0));
    let outliers = json_lines(&skewdb(&["--json", "outliers", &db, "products", "reviews"]));
    assert_eq!(outliers, vec![json!({"key": "p1", "total": 3})]);
    assert!(
        json_lines(&skewdb(&[
            "--json", "outliers", &db, "products", "readings"
        ]))
        .is_empty()
    );
    let exec_output = exec(
        Path::new(&db),
        "{\"op\":\"push\",\"coll\":\"products\",\"key\":\"p2\",\"field\":\"readings\",\"item_key\":-60,\"value\":21.5,\"payload\":\"\"}\n{\"op\":\"commit\"}\n",
    );
    assert!(exec_output.status.success(), "{exec_output:?}");
    let readings = json_lines(&skewdb(&[
        "--json", "items", &db, "products", "p2", "readings",
    ]));
    assert_eq!(
        readings,
        vec![json!({"key": -60, "value": 21.5, "payload": ""})]
    );
    // Removing the newest review refills the Subset window from history.
    assert!(
        skewdb(&["remove", &db, "products", "p1", "reviews", "2"])
            .status
            .success()
    );
    let get = json_lines(&skewdb(&["--json", "get", &db, "products", "p1"]));
    let reviews = &get[0]["arrays"]["reviews"];
    assert_eq!(reviews["total"], json!(2));
    assert_eq!(reviews["has_overflow"], json!(false));
    assert_eq!(reviews["summary"]["max"], json!(5.0));
    assert_eq!(
        reviews["inline"],
        json!([{"key": 0, "value": 5.0, "payload": "great"}, {"key": 1, "value": 3.0, "payload": "fine"}])
    );
    let removed = exec(
        Path::new(&db),
        "{\"op\":\"remove\",\"coll\":\"products\",\"key\":\"p2\",\"field\":\"readings\",\"item_key\":-60}\n{\"op\":\"commit\"}\n",
    );
    assert!(removed.status.success(), "{removed:?}");
    assert!(
        json_lines(&skewdb(&[
            "--json", "items", &db, "products", "p2", "readings",
        ]))
        .is_empty()
    );
    let bad_remove = exec(
        Path::new(&db),
        "{\"op\":\"remove\",\"coll\":\"products\",\"key\":\"p2\",\"field\":\"readings\",\"item_key\":\"x\"}\n",
    );
    assert!(!bad_remove.status.success());
    let bad_remove = json_lines(&bad_remove);
    assert_eq!(bad_remove[0]["kind"], json!("invalid_input"));
    let message = bad_remove[0]["error"].as_str().unwrap();
    assert!(
        message.contains("field \"item_key\": invalid type"),
        "{message}"
    );
    assert_user_error(
        &skewdb(&["remove", &db, "products", "p1", "nosuch", "1"]),
        "no array field",
    );
    // Hourly buckets of p3: the first two hours expire, for one parent, then for all.
    let mut ops = String::new();
    for minute in 0..150 {
        ops.push_str(&format!(
            "{{\"op\":\"push\",\"coll\":\"products\",\"key\":\"p3\",\"field\":\"readings\",\"item_key\":{},\"value\":1.0}}\n",
            minute * 60
        ));
    }
    ops.push_str("{\"op\":\"commit\"}\n");
    assert!(exec(Path::new(&db), &ops).status.success());
    let readings = |key: &str| {
        json_lines(&skewdb(&[
            "--json", "items", &db, "products", key, "readings",
        ]))
        .len()
    };
    // One parent's expiry says what it dropped, as the collection's does; a parent that
    // does not exist is not found.
    let one = skewdb(&[
        "--json", "expire", &db, "products", "readings", "3600", "--key", "p3",
    ]);
    assert!(one.status.success(), "{one:?}");
    assert_eq!(
        json_lines(&one),
        vec![json!({"buckets": 6, "items": 60, "rolled_up": 0})]
    );
    assert_eq!(readings("p3"), 90);
    let text = ok(&["expire", &db, "products", "readings", "3600", "--key", "p3"]);
    assert_eq!(text, "dropped 0 buckets holding 0 items\n");
    assert_user_error(
        &skewdb(&[
            "expire", &db, "products", "readings", "3600", "--key", "nobody",
        ]),
        "not found",
    );
    let expired = skewdb(&["--json", "expire", &db, "products", "readings", "7200"]);
    assert!(expired.status.success());
    // The second hour: sixty readings in buckets of ten.
    assert_eq!(
        json_lines(&expired),
        vec![json!({"buckets": 6, "items": 60, "rolled_up": 0})]
    );
    assert_eq!(readings("p3"), 30);
    assert_user_error(
        &skewdb(&["expire", &db, "products", "reviews", "0"]),
        "not a bucket array",
    );
    assert_user_error(
        &skewdb(&["items", &db, "products", "nobody", "reviews"]),
        "not found",
    );
    assert_user_error(
        &skewdb(&["push", &db, "products", "p1", "nosuch", "x"]),
        "no array field",
    );
    assert_user_error(
        &skewdb(&[
            "create",
            "--bytes",
            &db,
            "--collection",
            "bad",
            "--array",
            "f=subset:0",
        ]),
        "subset keep",
    );
    assert_user_error(
        &skewdb(&[
            "create",
            "--bytes",
            &db,
            "--collection",
            "bad",
            "--array",
            "f=heap",
        ]),
        "unknown layout",
    );
    assert_user_error(
        &skewdb(&[
            "create",
            "--bytes",
            &db,
            "--collection",
            "products",
            "--array",
            "reviews=embed",
        ]),
        "different schema",
    );
    assert!(skewdb(&["verify", &db]).status.success());
}

#[test]
fn compact_gives_back_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    assert!(
        skewdb(&["create", "--bytes", &db, "--collection", "docs"])
            .status
            .success()
    );
    for round in 0..3 {
        let mut ops = String::new();
        for i in 0..2_000 {
            ops.push_str(&format!(
                "{{\"op\":\"put\",\"coll\":\"docs\",\"key\":\"k{i}\",\"body\":\"{round} {}\"}}\n",
                "x".repeat(200)
            ));
        }
        ops.push_str("{\"op\":\"commit\"}\n");
        assert!(exec(Path::new(&db), &ops).status.success());
    }
    let mut deletes = String::new();
    for i in 0..2_000 {
        deletes.push_str(&format!(
            "{{\"op\":\"del\",\"coll\":\"docs\",\"key\":\"k{i}\"}}\n"
        ));
    }
    deletes.push_str("{\"op\":\"commit\"}\n");
    assert!(exec(Path::new(&db), &deletes).status.success());
    let report = json_lines(&skewdb(&["--json", "compact", &db]));
    let before = report[0]["log_bytes_before"].as_u64().unwrap();
    let after = report[0]["log_bytes_after"].as_u64().unwrap();
    assert!(after < before, "{report:?}");
    for field in [
        "cold_bytes_before",
        "cold_bytes_after",
        "chunks_moved",
        "chunks_merged",
    ] {
        assert!(report[0][field].is_u64(), "{field} in {report:?}");
    }
    let text = stdout(&skewdb(&["compact", &db]));
    assert!(
        text.starts_with("log: ") && text.contains("bytes after") && text.contains("\ncold: "),
        "{text}"
    );
    assert_user_error(
        &skewdb(&["compact", "/nonexistent/db"]),
        "no skewdb database",
    );
}

#[test]
fn named_measures_through_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    let ok = |args: &[&str]| {
        let output = skewdb(args);
        assert!(output.status.success(), "{args:?}: {output:?}");
        output
    };
    ok(&[
        "create",
        "--bytes",
        &db,
        "--collection",
        "sensors",
        "--array",
        "readings=bucket:2",
        "--array",
        "plain=embed",
        "--measures",
        "readings=temperature,humidity",
    ]);
    let push = |extra: &[&str], payload: &str| {
        let mut args = vec!["push", &db, "sensors", "s1", "readings", "--upsert"];
        args.extend_from_slice(extra);
        args.push(payload);
        skewdb(&args)
    };
    let pushed = [
        push(
            &[
                "--key",
                "1",
                "--measure",
                "temperature=20.5",
                "--measure",
                "humidity=0.4",
            ],
            "a",
        ),
        push(&["--key", "2", "--value", "-1"], "b"),
        push(&["--key", "3", "--measure", "humidity=0.6"], "c"),
    ];
    assert!(pushed.iter().all(|p| p.status.success()), "{pushed:?}");
    let input = concat!(
        r#"{"op":"push","coll":"sensors","key":"s1","field":"readings","item_key":4,"#,
        r#""measures":{"humidity":0.5,"temperature":30},"payload":"d"}"#,
        "\n",
        r#"{"op":"push","coll":"sensors","key":"s1","field":"plain","value":7}"#,
        "\n",
        r#"{"op":"commit"}"#,
        "\n",
    );
    assert!(exec(Path::new(&db), input).status.success());

    let items = json_lines(&ok(&["--json", "items", &db, "sensors", "s1", "readings"]));
    assert_eq!(items.len(), 4);
    assert_eq!(
        items[0]["measures"],
        json!({"temperature": 20.5, "humidity": 0.4})
    );
    assert_eq!(
        items[1]["measures"],
        json!({"temperature": -1.0, "humidity": null})
    );
    assert_eq!(items[2]["value"], Value::Null);
    assert_eq!(items[3]["value"], json!(30.0));
    let text = stdout(&ok(&["items", &db, "sensors", "s1", "readings"]));
    assert_eq!(
        text.lines().next(),
        Some("1\ttemperature=20.5 humidity=0.4\ta")
    );

    // Every measure by name (sealed buckets and the open one together), the first also at
    // the top; one measure alone with --measure.
    let summary = &json_lines(&ok(&[
        "--json", "summary", &db, "sensors", "s1", "readings",
    ]))[0];
    assert_eq!(
        (summary["items"].clone(), summary["count"].clone()),
        (json!(4), json!(3))
    );
    assert_eq!(
        summary["measures"]["humidity"],
        json!({"count": 3, "sum": 1.5, "min": 0.4, "max": 0.6})
    );
    assert_eq!(summary["measures"]["temperature"]["max"], json!(30.0));
    let humidity = &json_lines(&ok(&[
        "--json",
        "summary",
        &db,
        "sensors",
        "s1",
        "readings",
        "--measure",
        "humidity",
        "--from",
        "2",
    ]))[0];
    assert_eq!(humidity["measure"], json!("humidity"));
    assert_eq!(
        (humidity["count"].clone(), humidity["max"].clone()),
        (json!(2), json!(0.6))
    );
    assert_eq!(humidity["items"], json!(3));
    let text = stdout(&ok(&["summary", &db, "sensors", "s1", "readings"]));
    assert!(text.contains("humidity: count 3  sum 1.5"), "{text}");
    // An array without named measures prints as before: no "measures".
    let document = &json_lines(&ok(&["--json", "get", &db, "sensors", "s1"]))[0];
    assert!(
        document["arrays"]["plain"]["summary"]
            .get("measures")
            .is_none()
    );
    assert!(
        document["arrays"]["plain"]["inline"][0]
            .get("measures")
            .is_none()
    );
    assert_eq!(document["arrays"]["plain"]["summary"]["sum"], json!(7.0));
    assert!(document["arrays"]["readings"]["summary"]["measures"].is_object());

    // Bad input: an unknown measure (at push and at summary), a value that is not a
    // number, one that is not finite, a --measures for no array, one field named twice.
    assert_user_error(
        &push(&["--measure", "pressure=1"], "x"),
        "no measure \"pressure\"",
    );
    assert_user_error(&push(&["--measure", "humidity=wet"], "x"), "is not NAME=V");
    assert_user_error(&push(&["--measure", "humidity"], "x"), "is not NAME=V");
    assert_user_error(&push(&["--measure", "humidity=inf"], "x"), "finite");
    assert_user_error(
        &skewdb(&[
            "summary",
            &db,
            "sensors",
            "s1",
            "readings",
            "--measure",
            "wind",
        ]),
        "no measure \"wind\"",
    );
    for (measures, says) in [
        (&["b=m"][..], "no --array declares"),
        (&["a=m", "a=n"][..], "twice"),
        (&["a=m,m"][..], "declared twice"),
        (&["a"][..], "is not FIELD=NAMES"),
    ] {
        let mut args = vec![
            "create",
            "--bytes",
            &db,
            "--collection",
            "x",
            "--array",
            "a=embed",
        ];
        for given in measures {
            args.extend(["--measures", given]);
        }
        assert_user_error(&skewdb(&args), says);
    }
    let bad = exec(
        Path::new(&db),
        concat!(
            r#"{"op":"push","coll":"sensors","key":"s1","field":"readings","measures":{"humidity":"wet"}}"#,
            "\n",
            r#"{"op":"commit"}"#,
            "\n"
        ),
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("measure \"humidity\""));
    let after = json_lines(&ok(&["--json", "items", &db, "sensors", "s1", "readings"]));
    assert_eq!(after.len(), 4, "no refused push applied");
}

#[test]
fn backup_and_restore_through_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_skewdb"))
            .args(args)
            .output()
            .unwrap()
    };
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    assert!(
        run(&[
            "create",
            "--bytes",
            db,
            "--collection",
            "users",
            "--array",
            "followers=outlier:2"
        ])
        .status
        .success()
    );
    for n in 0..5 {
        let payload = format!("f{n}");
        assert!(
            run(&[
                "push",
                db,
                "users",
                "alice",
                "followers",
                &payload,
                "--upsert"
            ])
            .status
            .success()
        );
    }
    assert!(
        run(&["remove", db, "users", "alice", "followers", "0"])
            .status
            .success()
    );
    let file = dir.path().join("users.backup");
    let file = file.to_str().unwrap();
    let output = run(&["--json", "backup", db, file]);
    assert!(output.status.success(), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["parents"], 1);
    let restored = dir.path().join("restored");
    let restored = restored.to_str().unwrap();
    let output = run(&["restore", file, restored]);
    assert!(output.status.success(), "{output:?}");
    // The same document, inline slot left empty by the removal included.
    let get = |db: &str| run(&["--json", "get", db, "users", "alice"]).stdout;
    assert_eq!(get(restored), get(db));
    let document: serde_json::Value = serde_json::from_slice(&get(restored)).unwrap();
    let followers = &document["arrays"]["followers"];
    assert_eq!(
        (
            followers["total"].clone(),
            followers["inline"].as_array().unwrap().len()
        ),
        (4.into(), 1)
    );
    // Into an existing directory, or from a file that is no backup: refused, exit 1.
    let again = run(&["--json", "restore", file, restored]);
    assert_eq!(again.status.code(), Some(1));
    let not_backup = run(&["restore", db, &format!("{restored}-2")]);
    assert_eq!(not_backup.status.code(), Some(1));
    let missing = run(&["backup", &format!("{db}-none"), file]);
    assert_eq!(missing.status.code(), Some(1));
}

/// A reader that closes the output early (`skewdb scan DB users | head -2`) ends the
/// command quietly, with status 0, as any Unix filter does; with `--json` too.
#[test]
fn a_closed_output_ends_a_command_quietly() {
    let (_dir, db) = created();
    let mut input: Vec<String> = (0..3000)
        .map(|k| {
            format!(
                r#"{{"op":"put","coll":"users","key":"k{k:05}","body":"{}"}}"#,
                "x".repeat(100)
            )
        })
        .collect();
    input.push(r#"{"op":"commit"}"#.to_string());
    assert!(exec(Path::new(&db), &input.join("\n")).status.success());
    for json in [false, true] {
        let mut args = vec!["scan", db.as_str(), "users"];
        if json {
            args.push("--json");
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_skewdb"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one chunk of the output, then close it: 3,000 documents do not fit in a pipe.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 64];
        std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
        drop(stdout);
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{:?}", output);
        assert_eq!(String::from_utf8_lossy(&output.stderr), "", "json: {json}");
    }
    // An output that stays open still gets every document.
    let whole = skewdb(&["scan", &db, "users"]);
    assert!(whole.status.success());
    assert_eq!(String::from_utf8_lossy(&whole.stdout).lines().count(), 3000);
}

/// `-v` prints the engine's log on stderr (as JSON lines with `--json`), `RUST_LOG` says
/// instead; without either, a healthy command prints nothing there.
#[test]
fn verbose_prints_the_engines_log() {
    let (_dir, db) = created();
    let quiet = skewdb(&["put", &db, "users", "a", "x"]);
    assert!(quiet.status.success(), "{quiet:?}");
    assert!(quiet.stderr.is_empty(), "{quiet:?}");
    let verbose = skewdb(&["-v", "get", &db, "users", "a"]);
    assert!(verbose.status.success(), "{verbose:?}");
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    assert!(
        stderr.contains("INFO") && stderr.contains("recovered") && stderr.contains("ReadOnly"),
        "{stderr}"
    );
    let json = skewdb(&["--json", "-v", "compact", &db]);
    assert!(json.status.success(), "{json:?}");
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&json.stderr)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        events.iter().any(|e| e["fields"]["message"] == "compacted"),
        "{events:?}"
    );
    let debug = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(["compact", &db])
        .env("RUST_LOG", "skewdb=debug")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&debug.stderr).contains("checkpoint written"),
        "{debug:?}"
    );
}

/// `scan --limit`, `count`, `collections`, bodies and payloads from a file or standard
/// input, and `del`/`remove` saying how many they removed.
#[test]
fn everyday_commands() {
    let (dir, db) = created();
    ok(&[
        "create",
        "--bytes",
        &db,
        "--collection",
        "feeds",
        "--array",
        "tags=subset:2",
    ]);
    for key in ["a", "b", "c", "d"] {
        ok(&["put", &db, "users", key, &format!("body {key}")]);
    }
    assert_eq!(
        ok(&["scan", &db, "users", "--limit", "2"]),
        "a\tbody a\nb\tbody b\n"
    );
    assert_eq!(ok(&["scan", &db, "users", "--limit", "0"]), "");
    assert_eq!(ok(&["count", &db, "users"]), "4\n");
    assert_eq!(
        ok(&["--json", "count", &db, "users", "--from", "b", "--to", "c"]),
        "{\"count\":2}\n"
    );
    assert_eq!(ok(&["count", &db, "feeds"]), "0\n");
    assert_eq!(
        ok(&["collections", &db]),
        "feeds\t0 parents\ttags=subset:2\nusers\t4 parents\tno array fields\n"
    );
    let listed = ok(&["--json", "collections", &db]);
    let first: Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    assert_eq!(first["name"], "feeds");
    assert_eq!(first["arrays"][0]["layout"], "subset:2");
    assert_eq!(first["arrays"][0]["measures"], serde_json::json!(["value"]));
    // Bodies from a file (any bytes) and from standard input.
    let file = dir.path().join("body.bin");
    std::fs::write(&file, b"from\xfffile").unwrap();
    ok(&[
        "put",
        &db,
        "users",
        "f",
        "--body-file",
        file.to_str().unwrap(),
    ]);
    let got = ok(&["--json", "get", &db, "users", "f"]);
    let got: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(got["body"]["base64"], "ZnJvbf9maWxl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args([
            "push",
            &db,
            "feeds",
            "f",
            "tags",
            "--payload-file",
            "-",
            "--key",
            "3",
            "--upsert",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"piped").unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(ok(&["items", &db, "feeds", "f", "tags"]), "3\t-\tpiped\n");
    // A body past the record limit, too large for an argument list, is refused by size.
    let large = dir.path().join("large.bin");
    std::fs::write(&large, vec![b'x'; 17 * 1024 * 1024]).unwrap();
    let output = skewdb(&[
        "--json",
        "put",
        &db,
        "users",
        "g",
        "--body-file",
        large.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&output.stderr).unwrap();
    assert_eq!(error["kind"], "record_too_large", "{error}");
    let missing = skewdb(&["put", &db, "users", "g", "--body-file", "/nonexistent/body"]);
    assert_user_error(&missing, "cannot read /nonexistent/body");
    let both = skewdb(&["put", &db, "users", "g", "x", "--body-file", "-"]);
    assert_eq!(both.status.code(), Some(2), "{both:?}");
    // What del and remove removed.
    assert_eq!(ok(&["del", &db, "users", "a"]), "removed 1 parent\n");
    assert_eq!(ok(&["del", &db, "users", "a"]), "removed 0 parents\n");
    assert_eq!(
        ok(&["--json", "del", &db, "users", "b"]),
        "{\"committed\":1,\"removed\":1}\n"
    );
    ok(&["push", &db, "feeds", "f", "tags", "again", "--key", "3"]);
    ok(&["push", &db, "feeds", "f", "tags", "other", "--key", "4"]);
    assert_eq!(
        ok(&["remove", &db, "feeds", "f", "tags", "3"]),
        "removed 2 items\n"
    );
    assert_eq!(
        ok(&["--json", "remove", &db, "feeds", "f", "tags", "3"]),
        "{\"committed\":1,\"removed\":0}\n"
    );
    assert_user_error(
        &skewdb(&["remove", &db, "feeds", "nobody", "tags", "1"]),
        "not found",
    );
    assert_eq!(ok(&["count", &db, "users"]), "3\n");
    // Long commands show progress only on a terminal: here stderr stays empty.
    let backup = dir.path().join("db.backup");
    let backup = backup.to_str().unwrap();
    let restored = dir.path().join("restored");
    for args in [
        &["verify", &db][..],
        &["backup", &db, backup],
        &["restore", backup, restored.to_str().unwrap()],
    ] {
        let output = skewdb(args);
        assert!(output.status.success(), "{args:?}: {output:?}");
        assert!(output.stderr.is_empty(), "{args:?}: {output:?}");
    }
}

/// `summary --every`: one summary per window that holds items, durations for a time series.
#[test]
fn summary_every_window() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    ok(&[
        "create",
        "--bytes",
        db,
        "--collection",
        "s",
        "--array",
        "t=bucket:4:3600000",
        "--array",
        "n=embed",
    ]);
    // Readings every 30 minutes for 5 hours, none in the third hour.
    for half_hour in (0..10).filter(|h| h / 2 != 2) {
        let key = (half_hour * 1_800_000).to_string();
        let value = half_hour.to_string();
        ok(&[
            "push", db, "s", "s1", "t", "x", "--key", &key, "--value", &value, "--upsert",
        ]);
        ok(&[
            "push",
            db,
            "s",
            "s1",
            "n",
            "x",
            "--key",
            &half_hour.to_string(),
            "--value",
            &value,
        ]);
    }
    let hourly = ok(&["--json", "summary", db, "s", "s1", "t", "--every", "1h"]);
    let windows: Vec<Value> = hourly
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let starts: Vec<i64> = windows
        .iter()
        .map(|w| w["window"].as_i64().unwrap())
        .collect();
    assert_eq!(starts, [0, 3_600_000, 10_800_000, 14_400_000]);
    assert!(windows.iter().all(|w| w["count"] == 2), "{hourly}");
    assert_eq!(windows[1]["sum"], 5.0);
    let text = ok(&[
        "summary", db, "s", "s1", "t", "--every", "2h", "--from", "3600000",
    ]);
    assert!(
        text.starts_with("window 1970-01-01T00:00:00Z: items 2  count 2  sum 5 "),
        "{text}"
    );
    assert_eq!(text.lines().count(), 3, "{text}");
    // An integer span on any array; a duration only on a time series.
    assert_eq!(
        ok(&["summary", db, "s", "s1", "n", "--every", "4"])
            .lines()
            .count(),
        3
    );
    let refused = skewdb(&["--json", "summary", db, "s", "s1", "n", "--every", "1h"]);
    let (code, error) = (
        refused.status.code(),
        serde_json::from_slice::<Value>(&refused.stderr).unwrap(),
    );
    assert_eq!(
        (code, error["kind"].as_str()),
        (Some(1), Some("invalid_input")),
        "{error}"
    );
    let zero = skewdb(&["--json", "summary", db, "s", "s1", "n", "--every", "0"]);
    let error: Value = serde_json::from_slice(&zero.stderr).unwrap();
    assert_eq!(error["kind"], "invalid_option", "{error}");
}

/// Pushes `quarters` readings into array `t` of parent `s1` of collection `s`, one every 15
/// minutes from 0 (keys in milliseconds), each worth its quarter's number, in one `exec`
/// batch.
fn push_quarters(db: &str, quarters: i64) {
    let mut ops = String::new();
    for quarter in 0..quarters {
        ops.push_str(&format!(
            "{{\"op\":\"push\",\"coll\":\"s\",\"key\":\"s1\",\"field\":\"t\",\"item_key\":{},\"value\":{quarter}}}\n",
            quarter * 900_000
        ));
    }
    ops.push_str("{\"op\":\"commit\"}\n");
    assert!(exec(Path::new(db), &ops).status.success());
}

/// Each window `summary --every SPAN` prints for array `t` of `s1` in `s`: its start, sum and
/// items from rollups.
fn window_sums(db: &str, span: &str) -> Vec<(i64, f64, u64)> {
    let windows = json_lines(&skewdb(&[
        "--json", "summary", db, "s", "s1", "t", "--every", span,
    ]));
    windows
        .iter()
        .map(|w| {
            let (window, sum) = (w["window"].as_i64().unwrap(), w["sum"].as_f64().unwrap());
            (window, sum, w["rolled_up"].as_u64().unwrap())
        })
        .collect()
}

/// `create --rollup`: an expiry keeps per-window summaries of what it drops; summaries
/// over the expired hours stay exact and say so; a range that cuts a rolled-up hour is
/// refused with its own kind.
#[test]
fn rollups_keep_expired_windows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let refused = skewdb(&[
        "--json",
        "create",
        "--bytes",
        db,
        "--collection",
        "e",
        "--array",
        "t=embed",
        "--rollup",
        "t=60",
    ]);
    let error: Value = serde_json::from_slice(&refused.stderr).unwrap();
    assert_eq!(error["kind"], "invalid_schema", "{error}");
    let refused = skewdb(&[
        "--json",
        "create",
        "--bytes",
        db,
        "--collection",
        "e",
        "--array",
        "t=bucket:4",
        "--rollup",
        "t=1h",
    ]);
    let error: Value = serde_json::from_slice(&refused.stderr).unwrap();
    assert_eq!(
        error["kind"], "invalid_input",
        "a duration needs a time series: {error}"
    );
    ok(&[
        "create",
        "--bytes",
        db,
        "--collection",
        "s",
        "--array",
        "t=bucket:4:3600000",
        "--rollup",
        "t=1h",
    ]);
    assert!(ok(&["collections", db]).contains("rollup 3600000"));
    // Readings every 15 minutes for 4 hours.
    push_quarters(db, 16);
    let expired = skewdb(&["--json", "expire", db, "s", "t", "7200000"]);
    assert_eq!(
        json_lines(&expired),
        vec![json!({"buckets": 2, "items": 8, "rolled_up": 8})]
    );
    let whole = json_lines(&skewdb(&["--json", "summary", db, "s", "s1", "t"]));
    assert_eq!(
        (&whole[0]["items"], &whole[0]["sum"], &whole[0]["rolled_up"]),
        (&json!(16), &json!(120.0), &json!(8))
    );
    assert_eq!(
        window_sums(db, "1h"),
        [
            (0, 6.0, 4),
            (3_600_000, 22.0, 4),
            (7_200_000, 38.0, 0),
            (10_800_000, 54.0, 0)
        ]
    );
    let text = ok(&["summary", db, "s", "s1", "t", "--to", "3599999"]);
    assert!(
        text.starts_with("items 4 (4 from rollups)  count 4  sum 6 "),
        "{text}"
    );
    let inspected = ok(&["inspect", db]);
    assert!(
        inspected.contains("rollups: 2 windows of expired items"),
        "{inspected}"
    );
    let cut = skewdb(&["--json", "summary", db, "s", "s1", "t", "--from", "1000000"]);
    assert_eq!(cut.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&cut.stderr).unwrap();
    assert_eq!(error["kind"], "range_cuts_rollup", "{error}");
}

/// `exec` creates a collection in a batch (measures and a rollup declared) and writes to it
/// in the same batch; the same create again changes nothing, a conflicting one or a bad
/// layout drops its batch.
#[test]
fn exec_creates_a_collection_in_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&[
        "create",
        "--bytes",
        db.to_str().unwrap(),
        "--collection",
        "users",
    ]);
    let create = r#"{"op":"create","coll":"s","arrays":[{"field":"t","layout":"bucket:4:3600000","measures":["temp","hum"],"rollup":3600000},{"field":"n","layout":"embed"}]}"#;
    let input = format!(
        "{create}\n{}\n{{\"op\":\"commit\"}}\n{create}\n{{\"op\":\"commit\"}}\n",
        r#"{"op":"push","coll":"s","key":"s1","field":"t","item_key":5,"measures":{"temp":20.5}}"#
    );
    let output = exec(&db, &input);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(json_lines(&output).len(), 2);
    let listed = ok(&["collections", db.to_str().unwrap()]);
    assert!(
        listed.contains("t=bucket:4:3600000 [temp hum] rollup 3600000, n=embed"),
        "{listed}"
    );
    let summary = json_lines(&skewdb(&[
        "--json",
        "summary",
        db.to_str().unwrap(),
        "s",
        "s1",
        "t",
    ]));
    assert_eq!(summary[0]["sum"], 20.5);
    for (line, kind) in [
        (
            r#"{"op":"create","coll":"s","arrays":[{"field":"t","layout":"embed"}]}"#,
            "schema_conflict",
        ),
        (
            r#"{"op":"create","coll":"x","arrays":[{"field":"t","layout":"tree"}]}"#,
            "invalid_input",
        ),
        (
            r#"{"op":"create","coll":"x","arrays":[{"field":"t","layout":"embed","keep":3}]}"#,
            "invalid_input",
        ),
        (
            r#"{"op":"create","coll":"x","arrays":[{"field":"t","layout":"embed","rollup":60}]}"#,
            "invalid_schema",
        ),
    ] {
        let output = exec(&db, &format!("{line}\n{{\"op\":\"commit\"}}\n"));
        assert_eq!(output.status.code(), Some(1), "{line}: {output:?}");
        assert_eq!(json_lines(&output)[0]["kind"], kind, "{line}");
    }
    let names: Vec<String> = ok(&["collections", db.to_str().unwrap()])
        .lines()
        .map(|line| line.split('\t').next().unwrap().to_string())
        .collect();
    assert_eq!(names, ["s", "users"]);
}

/// A rollup set by `alter` on a bucket array created without one, then widened by an
/// `exec` alter op: the hourly rollups stay, a two-hour rollup holds the next two hours.
#[test]
fn alter_sets_and_widens_a_rollup() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    ok(&[
        "create",
        "--bytes",
        db,
        "--collection",
        "s",
        "--array",
        "t=bucket:4:3600000",
    ]);
    push_quarters(db, 20);
    let altered = ok(&["alter", db, "s", "--set-rollup", "t=1h"]);
    assert!(
        altered.contains("t=bucket:4:3600000 rollup 3600000"),
        "{altered}"
    );
    let expired = skewdb(&["--json", "expire", db, "s", "t", "7200000"]);
    assert_eq!(
        json_lines(&expired),
        vec![json!({"buckets": 2, "items": 8, "rolled_up": 8})]
    );
    for (given, kind) in [
        ("t=90min", "invalid_schema"),
        ("t=30min", "invalid_schema"),
        ("t=bogus", "invalid_input"),
        ("t", "invalid_input"),
        ("u=1h", "invalid_input"),
        ("u=60", "unknown_field"),
    ] {
        let refused = skewdb(&["--json", "alter", db, "s", "--set-rollup", given]);
        assert_eq!(refused.status.code(), Some(1), "{given}");
        let error: Value = serde_json::from_slice(&refused.stderr).unwrap();
        assert_eq!(error["kind"], kind, "{given}: {error}");
    }
    let same = json_lines(&skewdb(&[
        "--json",
        "alter",
        db,
        "s",
        "--set-rollup",
        "t=1h",
    ]));
    assert_eq!(same[0]["arrays"][0]["rollup"], 3_600_000, "{same:?}");
    let widen =
        "{\"op\":\"alter\",\"coll\":\"s\",\"set_rollup\":[\"t=2h\"]}\n{\"op\":\"commit\"}\n";
    assert!(exec(Path::new(db), widen).status.success());
    assert!(ok(&["collections", db]).contains("rollup 7200000"));
    let expired = skewdb(&["--json", "expire", db, "s", "t", "14400000"]);
    assert_eq!(
        json_lines(&expired),
        vec![json!({"buckets": 2, "items": 8, "rolled_up": 8})]
    );
    assert_eq!(
        window_sums(db, "2h"),
        [(0, 28.0, 8), (7_200_000, 92.0, 8), (14_400_000, 70.0, 0)]
    );
    // The first two hours are hourly rollups still; the next two one rollup of both.
    let first = json_lines(&skewdb(&[
        "--json", "summary", db, "s", "s1", "t", "--to", "3599999",
    ]));
    assert_eq!(
        (&first[0]["sum"], &first[0]["rolled_up"]),
        (&json!(6.0), &json!(4))
    );
    let cut = skewdb(&["--json", "summary", db, "s", "s1", "t", "--every", "1h"]);
    assert_eq!(cut.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&cut.stderr).unwrap();
    assert_eq!(error["kind"], "range_cuts_rollup", "{error}");
    let verified = skewdb(&["verify", db]);
    assert!(verified.status.success(), "{verified:?}");
}

#[test]
fn alter_and_drop_change_the_schema_and_refuse_bad_changes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    ok(&[
        "create",
        "--bytes",
        &db,
        "--collection",
        "users",
        "--array",
        "followers=outlier:2",
        "--array",
        "log=reference",
    ]);
    for key in 1..=4 {
        let key = key.to_string();
        ok(&[
            "push",
            &db,
            "users",
            "alice",
            "followers",
            "--key",
            &key,
            "--value",
            &key,
            "f",
            "--upsert",
        ]);
        ok(&["push", &db, "users", "alice", "log", "--key", &key, "entry"]);
    }
    let altered = ok(&[
        "alter",
        &db,
        "users",
        "--drop-array",
        "log",
        "--add-array",
        "badges=embed",
        "--add-measure",
        "followers=weight",
        "--rename",
        "people",
    ]);
    assert_eq!(
        altered.trim(),
        "collection people: followers=outlier:2 [value weight], badges=embed"
    );
    // The dropped array is gone, the added one is empty, the items kept are all there.
    let got: Value = serde_json::from_str(&ok(&["get", &db, "people", "alice", "--json"])).unwrap();
    let arrays = got["arrays"].as_object().unwrap();
    assert_eq!(arrays.keys().collect::<Vec<_>>(), ["followers", "badges"]);
    assert_eq!(arrays["followers"]["total"], 4);
    assert_eq!(arrays["badges"]["total"], 0);
    assert_user_error(
        &skewdb(&["items", &db, "people", "alice", "log"]),
        "no array field",
    );
    assert_user_error(
        &skewdb(&["get", &db, "users", "alice"]),
        "unknown collection",
    );
    let schema: Value = serde_json::from_str(&ok(&[
        "alter",
        &db,
        "people",
        "--json",
        "--add-array",
        "recent=subset:3",
    ]))
    .unwrap();
    assert_eq!(schema["name"], "people");
    assert_eq!(schema["arrays"][2]["layout"], "subset:3");
    assert_eq!(schema["arrays"][0]["measures"], json!(["value", "weight"]));

    // Bad changes: nothing asked for (a usage error), an unknown collection or field, a bad
    // layout, a field twice, a name taken.
    assert_eq!(skewdb(&["alter", &db, "people"]).status.code(), Some(2));
    for (args, needle) in [
        (["nope", "--rename", "x"], "unknown collection"),
        (["people", "--drop-array", "zz"], "no array field"),
        (["people", "--add-array", "bad"], "is not FIELD=LAYOUT"),
        (["people", "--add-array", "x=subset:0"], "from 1"),
        (["people", "--add-array", "badges=embed"], "declared twice"),
        (
            ["people", "--add-measure", "followers"],
            "is not FIELD=NAME",
        ),
    ] {
        let mut command = vec!["alter", db.as_str()];
        command.extend(args);
        assert_user_error(&skewdb(&command), needle);
    }
    ok(&["create", "--bytes", &db, "--collection", "other"]);
    assert_user_error(
        &skewdb(&["alter", &db, "people", "--rename", "other"]),
        "already exists",
    );

    // exec: an alter and a write under the new schema in one batch, then a drop.
    let output = exec(
        Path::new(&db),
        concat!(
            r#"{"op":"alter","coll":"people","drop_array":["recent"],"add_array":["tags=embed"]}"#,
            "\n",
            r#"{"op":"push","coll":"people","key":"bob","field":"tags","payload":"t"}"#,
            "\n",
            r#"{"op":"commit"}"#,
            "\n",
            r#"{"op":"alter","coll":"people"}"#,
            "\n",
            r#"{"op":"commit"}"#,
            "\n",
            r#"{"op":"drop","coll":"other"}"#,
            "\n",
            r#"{"op":"commit"}"#,
            "\n",
        ),
    );
    let lines = json_lines(&output);
    assert_eq!(lines[0], json!({"committed": 1}));
    assert!(
        lines[1]["error"].as_str().unwrap().contains("needs rename"),
        "{lines:?}"
    );
    assert_eq!(lines[2], json!({"committed": 2}));
    let items = ok(&["items", &db, "people", "bob", "tags"]);
    assert!(items.contains('t'), "{items}");
    let collections = ok(&["collections", &db]);
    assert!(!collections.contains("other"), "{collections}");
    assert!(collections.contains("tags=embed"), "{collections}");

    // Drop: gone, its name free again; verify passes before and after a compaction.
    assert_eq!(
        ok(&["drop", &db, "people"]).trim(),
        "collection people dropped"
    );
    assert_user_error(&skewdb(&["drop", &db, "people"]), "unknown collection");
    assert_user_error(
        &skewdb(&["get", &db, "people", "alice"]),
        "unknown collection",
    );
    ok(&["verify", &db]);
    ok(&["compact", &db]);
    ok(&["verify", &db]);
    ok(&["create", "--bytes", &db, "--collection", "people"]);
    assert_eq!(ok(&["count", &db, "people"]).trim(), "0");
}

#[test]
fn set_layout_moves_every_parent_and_reads_stay_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    ok(&[
        "create",
        "--bytes",
        &db,
        "--collection",
        "p",
        "--array",
        "reviews=embed",
    ]);
    let mut input = String::new();
    for parent in 0..30 {
        for key in 0..12 {
            input += &format!(
                r#"{{"op":"push","coll":"p","key":"p{parent:02}","field":"reviews","item_key":{key},"value":{key},"payload":"r{key}"}}"#
            );
            input.push('\n');
        }
    }
    input += "{\"op\":\"commit\"}\n";
    assert!(exec(Path::new(&db), &input).status.success());
    let items_before = ok(&["items", &db, "p", "p07", "reviews", "--json"]);
    let summary_before = ok(&["summary", &db, "p", "p07", "reviews", "--json"]);
    let altered = ok(&[
        "alter",
        &db,
        "p",
        "--set-layout",
        "reviews=subset:3",
        "--wait",
    ]);
    assert_eq!(altered.trim(), "collection p: reviews=subset:3");
    let stats: Value = serde_json::from_str(&ok(&["stats", &db, "--json"])).unwrap();
    assert_eq!(stats["migrations"], json!([]), "{stats}");
    let got: Value = serde_json::from_str(&ok(&["get", &db, "p", "p07", "--json"])).unwrap();
    assert_eq!(
        got["arrays"]["reviews"]["inline"].as_array().unwrap().len(),
        3
    );
    assert_eq!(got["arrays"]["reviews"]["total"], 12);
    assert_eq!(
        ok(&["items", &db, "p", "p07", "reviews", "--json"]),
        items_before
    );
    assert_eq!(
        ok(&["summary", &db, "p", "p07", "reviews", "--json"]),
        summary_before
    );
    // exec: set back in a batch; the next open's maintenance moves the parents, compact
    // finishes whatever is left.
    let output = exec(
        Path::new(&db),
        "{\"op\":\"alter\",\"coll\":\"p\",\"set_layout\":[\"reviews=embed\"]}\n{\"op\":\"commit\"}\n",
    );
    assert!(output.status.success(), "{output:?}");
    ok(&["compact", &db]);
    let got: Value = serde_json::from_str(&ok(&["get", &db, "p", "p07", "--json"])).unwrap();
    assert_eq!(
        got["arrays"]["reviews"]["inline"].as_array().unwrap().len(),
        12
    );
    assert_eq!(
        ok(&["items", &db, "p", "p07", "reviews", "--json"]),
        items_before
    );
    ok(&["verify", &db]);
    // A bad layout, or an unknown field, is refused.
    assert_user_error(
        &skewdb(&["alter", &db, "p", "--set-layout", "nope=embed"]),
        "no array field",
    );
    assert_user_error(
        &skewdb(&["alter", &db, "p", "--set-layout", "reviews=subset:0"]),
        "from 1",
    );
}

/// `exec` stages its writes by name: after a rename and a new collection under the old name,
/// a write names whatever collection has the name when its batch commits (handles, which
/// stand for one collection, are checked against it instead: the engine's
/// `a_stale_handle_never_writes_into_another_collection`).
#[test]
fn exec_writes_by_name_to_the_collection_the_name_has_now() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&[
        "create",
        "--bytes",
        db.to_str().unwrap(),
        "--collection",
        "users",
    ]);
    let input = [
        r#"{"op":"put","coll":"users","key":"k","body":"old"}"#,
        r#"{"op":"commit"}"#,
        r#"{"op":"alter","coll":"users","rename":"people"}"#,
        r#"{"op":"commit"}"#,
        r#"{"op":"create","coll":"users","bytes":true,"arrays":[]}"#,
        r#"{"op":"put","coll":"users","key":"k","body":"new"}"#,
        r#"{"op":"commit"}"#,
    ]
    .join("\n");
    let output = exec(&db, &format!("{input}\n"));
    assert!(output.status.success(), "{output:?}");
    let get = |coll: &str| ok(&["--json", "get", db.to_str().unwrap(), coll, "k"]);
    assert!(
        get("people").contains(r#""body":"old""#),
        "{}",
        get("people")
    );
    assert!(get("users").contains(r#""body":"new""#), "{}", get("users"));
}

/// `push` to a missing parent is refused (`not_found`) and writes nothing unless `--upsert`,
/// which creates it with an empty body; the payload may be left out of a collection of
/// bytes (a bare reading), and of a collection of documents only where the array keeps its
/// item keys or values in element fields (the element is made of them).
#[test]
fn push_refuses_a_missing_parent_unless_upserting() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    ok(&[
        "create",
        "--bytes",
        db,
        "--collection",
        "inv",
        "--array",
        "a=embed",
    ]);
    let refused = skewdb(&["--json", "push", db, "inv", "k1", "a", "--value", "1", "x"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let error: Value = serde_json::from_slice(&refused.stderr).unwrap();
    assert_eq!(error["kind"], "not_found", "{error}");
    assert!(
        error["error"].as_str().unwrap().contains("--upsert"),
        "{error}"
    );
    assert_eq!(skewdb(&["get", db, "inv", "k1"]).status.code(), Some(1));
    // --upsert makes it; then a push without it goes in; a bare reading has no payload.
    ok(&[
        "push", db, "inv", "k1", "a", "--key", "1", "--value", "1", "x", "--upsert",
    ]);
    ok(&["push", db, "inv", "k1", "a", "--key", "2", "--value", "2.5"]);
    let items: Vec<Value> = json_lines(&skewdb(&["--json", "items", db, "inv", "k1", "a"]));
    assert_eq!(items.len(), 2);
    assert_eq!(items[1]["key"], 2);
    assert_eq!(items[1]["value"], 2.5);
    assert_eq!(items[1]["payload"], "");
    let got: Value = serde_json::from_str(&ok(&["--json", "get", db, "inv", "k1"])).unwrap();
    assert_eq!(got["body"], "");
    // A collection made by import holds documents: an item needs its element.
    let file = dir.path().join("docs.json");
    std::fs::write(&file, "{\"_id\":\"d1\",\"tags\":[\"a\"]}\n").unwrap();
    ok(&[
        "import",
        db,
        "--collection",
        "docs",
        "--file",
        file.to_str().unwrap(),
        "--array",
        "tags=embed",
    ]);
    let bare = skewdb(&["--json", "push", db, "docs", "d1", "tags", "--key", "5"]);
    assert_eq!(bare.status.code(), Some(1), "{bare:?}");
    let error: Value = serde_json::from_slice(&bare.stderr).unwrap();
    assert_eq!(error["kind"], "invalid_input", "{error}");
}

/// A Bucket's span as a duration, as the rollup's and the windows' already are: the array
/// is a time series of millisecond keys, which takes dates.
#[test]
fn a_bucket_span_is_a_duration_too() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    ok(&[
        "create",
        "--bytes",
        db,
        "--collection",
        "s",
        "--array",
        "t=bucket:60:1h",
        "--rollup",
        "t=1d",
    ]);
    let listed = ok(&["collections", db]);
    assert!(listed.contains("t=bucket:60:3600000"), "{listed}");
    ok(&["put", db, "s", "s1", "{}"]);
    ok(&[
        "push",
        db,
        "s",
        "s1",
        "t",
        "--key",
        "2024-01-03T00:30:00Z",
        "--value",
        "1",
    ]);
    ok(&[
        "push",
        db,
        "s",
        "s1",
        "t",
        "--key",
        "2024-01-03T01:30:00Z",
        "--value",
        "2",
    ]);
    let windows = ok(&["summary", db, "s", "s1", "t", "--every", "1h"]);
    assert_eq!(windows.lines().count(), 2, "{windows}");
    let bad = skewdb(&[
        "create",
        "--bytes",
        db,
        "--collection",
        "x",
        "--array",
        "t=bucket:60:soon",
    ]);
    assert_eq!(bad.status.code(), Some(1), "{bad:?}");
}

/// Text output for people: a large value in scientific notation (not 309 digits), a key out
/// of the item keys' range said to be so, and counts of one in the singular.
#[test]
fn text_output_reads_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    ok(&[
        "create",
        "--bytes",
        db,
        "--collection",
        "c",
        "--array",
        "a=embed",
    ]);
    ok(&[
        "push", db, "c", "k", "a", "--key", "1", "--value", "1e308", "x", "--upsert",
    ]);
    ok(&[
        "push", db, "c", "k", "a", "--key", "2", "--value", "20.5", "y",
    ]);
    let items = ok(&["items", db, "c", "k", "a"]);
    assert_eq!(items, "1\t1e308\tx\n2\t20.5\ty\n");
    let summary = ok(&["summary", db, "c", "k", "a"]);
    assert!(summary.contains("max 1e308"), "{summary}");
    assert!(summary.contains("min 20.5"), "{summary}");
    // JSON keeps numbers as numbers.
    let json = json_lines(&skewdb(&["--json", "items", db, "c", "k", "a"]));
    assert_eq!(json[0]["value"], 1e308);
    let out_of_range = skewdb(&[
        "push",
        db,
        "c",
        "k",
        "a",
        "--key",
        "9223372036854775808",
        "z",
    ]);
    assert_eq!(out_of_range.status.code(), Some(2));
    let message = String::from_utf8_lossy(&out_of_range.stderr).to_string();
    assert!(
        message.contains("outside the item keys' range"),
        "{message}"
    );
    let file = dir.path().join("one.json");
    std::fs::write(&file, "{\"_id\":1,\"tags\":[\"a\"]}\n").unwrap();
    let imported = ok(&[
        "import",
        db,
        "--collection",
        "one",
        "--file",
        file.to_str().unwrap(),
        "--array",
        "tags=embed",
    ]);
    assert!(
        imported.starts_with("imported 1 document (1 item) into one"),
        "{imported}"
    );
}

/// `stats` prints the database's state, not the counters of the process it opened to print
/// them (which has made no commits and read nothing); `--json` keeps every counter.
#[test]
fn stats_prints_the_database_not_its_own_process() {
    let (_dir, db) = created();
    ok(&["put", &db, "users", "k", "v"]);
    let text = ok(&["stats", &db]);
    assert!(text.contains("log: "), "{text}");
    assert!(text.contains("B replayed at open"), "{text}");
    assert!(!text.contains("this process"), "{text}");
    assert!(!text.contains("commits 0"), "{text}");
    let json: Value = serde_json::from_str(&ok(&["--json", "stats", &db])).unwrap();
    assert_eq!(json["commits"], 0, "{json}");
}
