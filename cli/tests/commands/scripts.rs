//! The command line as scripts use it, through the built binary: cursors that lose nothing,
//! strict `exec` input, errors with kinds and exit statuses, finite values, base64 keys,
//! buckets at the ends of the key range, the directory lock, help and completions.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::support::{skewdb, skewdb_with_input};
use serde_json::{Value, json};

fn exec_bytes(db: &str, args: &[&str], input: &[u8]) -> Output {
    let mut all = args.to_vec();
    all.extend(["exec", db]);
    skewdb_with_input(&all, input)
}

fn exec(db: &str, lines: &[&str]) -> Output {
    exec_bytes(db, &[], format!("{}\n", lines.join("\n")).as_bytes())
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// The one JSON error object a `--json` command printed on stderr, with its exit status.
fn json_error(output: &Output) -> (i32, Value) {
    let lines = json_lines(&output.stderr);
    assert_eq!(lines.len(), 1, "one JSON object on stderr: {output:?}");
    (output.status.code().unwrap(), lines[0].clone())
}

fn database(arrays: &[&str]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    let mut args = vec!["create", "--bytes", &db, "--collection", "c"];
    for array in arrays {
        args.extend(["--array", array]);
    }
    let output = skewdb(&args);
    assert!(output.status.success(), "{output:?}");
    (dir, db)
}

fn push(db: &str, key: &str, field: &str, item_key: i64, payload: &str) {
    let item_key = item_key.to_string();
    let output = skewdb(&[
        "push", db, "c", key, field, "--upsert", "--key", &item_key, payload,
    ]);
    assert!(output.status.success(), "{output:?}");
}

/// Follows `items --limit N` page by page through the printed cursors; returns the
/// payloads in the order printed and the number of pages.
fn page_through(db: &str, extra: &[&str], limit: &str) -> (Vec<String>, usize) {
    let (mut payloads, mut pages, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let mut args = vec!["--json", "items", db, "c", "p", "a", "--limit", limit];
        args.extend(extra);
        if let Some(token) = &cursor {
            args.extend(["--cursor", token]);
        }
        let output = skewdb(&args);
        assert!(output.status.success(), "{output:?}");
        pages += 1;
        cursor = None;
        for line in json_lines(&output.stdout) {
            match line.get("cursor") {
                Some(token) => cursor = Some(token.as_str().unwrap().to_string()),
                None => payloads.push(line["payload"].as_str().unwrap().to_string()),
            }
        }
        if cursor.is_none() {
            return (payloads, pages);
        }
        assert!(pages < 100, "paging does not end");
    }
}

#[test]
fn cursors_page_through_ties_without_losing_an_item() {
    let (_dir, db) = database(&["a=subset:2"]);
    for (key, payload) in [(5, "x"), (5, "y"), (5, "z"), (6, "w")] {
        push(&db, "p", "a", key, payload);
    }
    let (ascending, pages) = page_through(&db, &[], "1");
    assert_eq!(ascending, ["x", "y", "z", "w"]);
    assert_eq!(pages, 5, "four full pages, then an empty one");
    let (descending, _) = page_through(&db, &["--desc"], "2");
    assert_eq!(descending, ["w", "z", "y", "x"]);
    // --after keeps its meaning: every item with a greater key.
    let after = skewdb(&["--json", "items", &db, "c", "p", "a", "--after", "5"]);
    let after = json_lines(&after.stdout);
    assert_eq!(
        after,
        vec![json!({"key": 6, "value": null, "payload": "w"})]
    );
    // Text mode names the flag to continue with.
    let text = skewdb(&["items", &db, "c", "p", "a", "--limit", "1"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("next page: --cursor "),
        "{text}"
    );
    // No limit, or a page that holds the rest: no cursor.
    let all = json_lines(&skewdb(&["--json", "items", &db, "c", "p", "a"]).stdout);
    assert!(all.iter().all(|line| line.get("cursor").is_none()));
}

#[test]
fn damaged_or_conflicting_cursors_are_refused() {
    let (_dir, db) = database(&["a=embed"]);
    push(&db, "p", "a", 1, "x");
    push(&db, "p", "a", 2, "y");
    let page = json_lines(&skewdb(&["--json", "items", &db, "c", "p", "a", "--limit", "1"]).stdout);
    let token = page[1]["cursor"].as_str().unwrap().to_string();
    let mut damaged = token.clone().into_bytes();
    damaged[3] = if damaged[3] == b'a' { b'b' } else { b'a' };
    let damaged = String::from_utf8(damaged).unwrap();
    for bad in [damaged.as_str(), "nonsense", ""] {
        let output = skewdb(&["--json", "items", &db, "c", "p", "a", "--cursor", bad]);
        let (code, error) = json_error(&output);
        assert_eq!(
            (code, error["kind"].as_str()),
            (1, Some("invalid_cursor")),
            "{bad:?}"
        );
    }
    let both = skewdb(&[
        "--json", "items", &db, "c", "p", "a", "--after", "1", "--cursor", &token,
    ]);
    let (code, error) = json_error(&both);
    assert_eq!((code, error["kind"].as_str()), (2, Some("usage")));
}

/// A cursor continues the read that printed it: a token of a read newest first is refused
/// by a read in key order, and the other way round, each saying which flag it wants.
#[test]
fn a_cursor_continues_only_a_read_in_its_own_order() {
    let (_dir, db) = database(&["a=embed"]);
    for key in 1..=3 {
        push(&db, "p", "a", key, "x");
    }
    let first = |order: &[&str]| {
        let mut args = vec!["--json", "items", &db, "c", "p", "a", "--limit", "1"];
        args.extend_from_slice(order);
        let page = json_lines(&skewdb(&args).stdout);
        page[1]["cursor"].as_str().unwrap().to_string()
    };
    let (ascending, descending) = (first(&[]), first(&["--desc"]));
    let read = |token: &str, order: &[&str]| {
        let mut args = vec!["--json", "items", &db, "c", "p", "a", "--cursor", token];
        args.extend_from_slice(order);
        skewdb(&args)
    };
    // Each continues its own read.
    let keys = |output: Output| -> Vec<i64> {
        json_lines(&output.stdout)
            .iter()
            .map(|i| i["key"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(keys(read(&ascending, &[])), [2, 3]);
    assert_eq!(keys(read(&descending, &["--desc"])), [2, 1]);
    // And neither the other's.
    for (token, order, wanted) in [
        (&descending, &[][..], "with --desc"),
        (&ascending, &["--desc"][..], "without --desc"),
    ] {
        let (code, error) = json_error(&read(token, order));
        assert_eq!((code, error["kind"].as_str()), (1, Some("invalid_cursor")));
        assert!(error["error"].as_str().unwrap().contains(wanted), "{error}");
    }
}

#[test]
fn exec_refuses_misspelled_repeated_and_mistyped_fields_naming_line_and_field() {
    let (_dir, db) = database(&["a=embed"]);
    let long_key = "k".repeat(1025);
    let long_put = format!(r#"{{"op":"put","coll":"c","key":"{long_key}","body":"x"}}"#);
    let cases: Vec<(String, &str, &str)> = vec![
        (
            r#"{"op":"push","coll":"c","key":"p","field":"a","valeu":1}"#.into(),
            "valeu",
            "invalid_input",
        ),
        (
            r#"{"op":"push","coll":"c","key":"p","field":"a","itemkey":1}"#.into(),
            "itemkey",
            "invalid_input",
        ),
        (
            r#"{"op":"put","op":"del","coll":"c","key":"p","body":"x"}"#.into(),
            "duplicate field",
            "invalid_input",
        ),
        (
            r#"{"op":"put","coll":"c","key":"p","key":"q","body":"x"}"#.into(),
            "duplicate field \"key\"",
            "invalid_input",
        ),
        (
            r#"{"op":"push","coll":"c","key":"p","field":"a","item_key":"5"}"#.into(),
            "invalid type",
            "invalid_input",
        ),
        (
            r#"{"op":"push","coll":"c","key":"p","field":"a","item_key":1.5}"#.into(),
            "invalid type",
            "invalid_input",
        ),
        (
            r#"{"op":"push","coll":"c","key":"p","field":"a","item_key":9223372036854775808}"#
                .into(),
            "i64",
            "invalid_input",
        ),
        (
            r#"{"op":"push","coll":"c","key":"p","field":"a","value":1e400}"#.into(),
            "out of range",
            "invalid_input",
        ),
        (
            r#"{"op":"put","coll":"c","key":{"base64":"AA==","base64":"AQ=="},"body":"x"}"#.into(),
            "duplicate field `base64`",
            "invalid_input",
        ),
        (
            r#"{"op":"put","coll":"c","key":{"hex":"00"},"body":"x"}"#.into(),
            "unknown field `hex`",
            "invalid_input",
        ),
        (
            r#"{"op":"frobnicate"}"#.into(),
            "unknown op",
            "invalid_input",
        ),
        (long_put, "key of 1025 bytes", "key_too_large"),
    ];
    for (line, needle, kind) in &cases {
        let output = exec(
            &db,
            &[
                r#"{"op":"put","coll":"c","key":"ok","body":"1"}"#,
                line,
                r#"{"op":"commit"}"#,
            ],
        );
        assert_eq!(output.status.code(), Some(1), "{line}");
        let lines = json_lines(&output.stdout);
        assert_eq!(lines.len(), 1, "{line}: {lines:?}");
        assert_eq!(
            lines[0]["line"],
            json!(2),
            "reported at its own line: {line}"
        );
        assert_eq!(lines[0]["kind"], json!(kind), "{line}");
        let message = lines[0]["error"].as_str().unwrap();
        assert!(message.contains(needle), "{line}: {message}");
        assert!(stderr(&output).contains("line 2"), "{line}");
    }
    // Nothing of any refused batch was applied.
    let get = skewdb(&["--json", "get", &db, "c", "ok"]);
    assert_eq!(json_error(&get).1["kind"], json!("not_found"));
}

#[test]
fn exec_drops_only_the_batch_of_a_line_that_is_not_utf8() {
    let (_dir, db) = database(&[]);
    let mut input = Vec::new();
    input.extend_from_slice(b"{\"op\":\"put\",\"coll\":\"c\",\"key\":\"a\",\"body\":\"1\"}\n");
    input.extend_from_slice(
        b"{\"op\":\"put\",\"coll\":\"c\",\"key\":\"\xff\xfe\",\"body\":\"2\"}\n",
    );
    input.extend_from_slice(b"{\"op\":\"commit\"}\n");
    input.extend_from_slice(b"{\"op\":\"put\",\"coll\":\"c\",\"key\":\"b\",\"body\":\"3\"}\n");
    input.extend_from_slice(b"{\"op\":\"commit\"}\n");
    let output = exec_bytes(&db, &[], &input);
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output.stdout);
    assert_eq!(lines[0]["line"], json!(2));
    assert_eq!(lines[0]["kind"], json!("invalid_input"));
    assert!(lines[0]["error"].as_str().unwrap().contains("not UTF-8"));
    assert_eq!(lines[1], json!({"committed": 1}));
    let scan = json_lines(&skewdb(&["--json", "scan", &db, "c"]).stdout);
    let keys: Vec<&Value> = scan.iter().map(|d| &d["key"]).collect();
    assert_eq!(
        keys,
        vec![&json!("b")],
        "the valid batch after it is applied"
    );
}

#[test]
fn exec_input_ending_inside_a_batch_applies_nothing_of_it_and_exits_one() {
    let (_dir, db) = database(&[]);
    let output = exec(
        &db,
        &[
            r#"{"op":"put","coll":"c","key":"a","body":"1"}"#,
            r#"{"op":"commit"}"#,
            r#"{"op":"put","coll":"c","key":"b","body":"2"}"#,
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output.stdout);
    assert_eq!(lines[0], json!({"committed": 1}));
    assert_eq!(lines[1]["kind"], json!("incomplete_input"));
    assert!(stderr(&output).contains("input ended inside a batch"));
    let get = skewdb(&["--json", "get", &db, "c", "b"]);
    assert_eq!(json_error(&get).1["kind"], json!("not_found"));
    // With --json, exec's errors on stderr are JSON objects too.
    let output = exec_bytes(&db, &["--json"], b"{\"op\":\"put\"}\n");
    let errors = json_lines(&output.stderr);
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0]["kind"], json!("invalid_input"));
    assert_eq!(errors[1]["kind"], json!("incomplete_input"));
}

#[test]
fn every_error_has_a_kind_and_usage_errors_exit_two() {
    let (dir, db) = database(&["a=embed"]);
    let missing = dir.path().join("nothing-here");
    let cases: Vec<(Vec<&str>, i32, &str, &str)> = vec![
        (
            vec!["get", &db, "c", "nobody"],
            1,
            "not_found",
            "not found: nobody",
        ),
        (
            vec!["get", &db, "nosuch", "k"],
            1,
            "unknown_collection",
            "nosuch",
        ),
        (
            vec!["get", missing.to_str().unwrap(), "c", "k"],
            1,
            "no_database",
            "no skewdb database",
        ),
        (
            vec!["push", &db, "c", "p", "nofield", "x"],
            1,
            "unknown_field",
            "nofield",
        ),
        (
            vec!["expire", &db, "c", "a", "5"],
            1,
            "wrong_layout",
            "not a bucket array",
        ),
        (vec!["frobnicate"], 2, "usage", "frobnicate"),
        (vec!["get", &db], 2, "usage", "required"),
        // The arguments missing are named, not cut off after the first line.
        (vec!["get", &db], 2, "usage", "<COLLECTION> <KEY>"),
        (
            vec!["push", &db, "c", "p", "a", "x", "--key", "five"],
            2,
            "usage",
            "five",
        ),
        (
            vec![
                "create",
                "--bytes",
                &db,
                "--collection",
                "d",
                "--array",
                "x=bucket:10:-5",
            ],
            1,
            "invalid_input",
            "cannot be negative",
        ),
        (
            vec![
                "create",
                "--bytes",
                &db,
                "--collection",
                "d",
                "--array",
                "noequals",
            ],
            1,
            "invalid_input",
            "FIELD=LAYOUT",
        ),
        (
            vec![
                "create",
                "--bytes",
                &db,
                "--collection",
                "d",
                "--array",
                "x=embed",
                "--array",
                "x=embed",
            ],
            1,
            "invalid_schema",
            "\"x\" declared twice",
        ),
        (
            vec![
                "create",
                "--bytes",
                &db,
                "--collection",
                "c",
                "--array",
                "a=subset:3",
            ],
            1,
            "schema_conflict",
            "stored with a=embed, asked for a=subset:3",
        ),
        (
            vec!["create", "--bytes", &db, "--collection", ""],
            1,
            "invalid_name",
            "empty",
        ),
        (
            vec!["push", &db, "c", "p", "a", "x", "--value", "1e400"],
            1,
            "invalid_input",
            "finite",
        ),
        (
            vec!["push", &db, "c", "p", "a", "x", "--value", "-inf"],
            1,
            "invalid_input",
            "finite",
        ),
        (
            vec!["--key-base64", "get", &db, "c", "not base64!"],
            1,
            "invalid_input",
            "base64",
        ),
    ];
    for (args, status, kind, needle) in &cases {
        let mut with_json = vec!["--json"];
        with_json.extend(args);
        let (code, error) = json_error(&skewdb(&with_json));
        assert_eq!(
            (code, error["kind"].as_str()),
            (*status, Some(*kind)),
            "{args:?}"
        );
        let message = error["error"].as_str().unwrap();
        assert!(message.contains(needle), "{args:?}: {message}");
        assert!(
            !message.contains("ArraySpec"),
            "no Rust debug output: {message}"
        );
        // Without --json: the same status, one line for people.
        let output = skewdb(args);
        assert_eq!(output.status.code(), Some(*status), "{args:?}");
        if *status == 1 {
            assert_eq!(stderr(&output).lines().count(), 1, "{args:?}");
        }
    }
}

#[test]
fn non_finite_results_print_as_numbers_never_as_null() {
    let (_dir, db) = database(&["a=embed"]);
    for key in ["1", "2"] {
        let output = skewdb(&[
            "push", &db, "c", "p", "a", "--key", key, "--value", "1e308", "x", "--upsert",
        ]);
        assert!(output.status.success(), "{output:?}");
    }
    let summary = json_lines(&skewdb(&["--json", "summary", &db, "c", "p", "a"]).stdout);
    assert_eq!(summary[0]["sum"], json!({"$numberDouble": "Infinity"}));
    assert_eq!(summary[0]["max"], json!(1e308));
    assert_eq!(summary[0]["count"], json!(2));
}

#[test]
fn keys_that_are_not_utf8_are_named_in_base64() {
    let (_dir, db) = database(&["a=embed"]);
    let output = exec(
        &db,
        &[
            r#"{"op":"put","coll":"c","key":{"base64":"AP8="},"body":"binary"}"#,
            r#"{"op":"put","coll":"c","key":{"base64":"AQ=="},"body":"one"}"#,
            r#"{"op":"commit"}"#,
        ],
    );
    assert!(output.status.success(), "{output:?}");
    let get = skewdb(&["--json", "--key-base64", "get", &db, "c", "AP8="]);
    let document = &json_lines(&get.stdout)[0];
    assert_eq!(document["key"], json!({"base64": "AP8="}));
    assert_eq!(document["body"], json!("binary"));
    let pushed = skewdb(&[
        "--key-base64",
        "push",
        &db,
        "c",
        "AP8=",
        "a",
        "--key",
        "3",
        "x",
    ]);
    assert!(pushed.status.success(), "{pushed:?}");
    let items = skewdb(&["--json", "--key-base64", "items", &db, "c", "AP8=", "a"]);
    assert_eq!(json_lines(&items.stdout).len(), 1);
    let removed = skewdb(&["--key-base64", "remove", &db, "c", "AP8=", "a", "3"]);
    assert!(removed.status.success());
    let scan = skewdb(&[
        "--json",
        "--key-base64",
        "scan",
        &db,
        "c",
        "--from",
        "AP8=",
        "--to",
        "AP8=",
    ]);
    assert_eq!(json_lines(&scan.stdout).len(), 1);
    assert!(
        skewdb(&["--key-base64", "del", &db, "c", "AP8="])
            .status
            .success()
    );
    let gone = skewdb(&["--json", "--key-base64", "get", &db, "c", "AP8="]);
    assert_eq!(json_error(&gone).1["kind"], json!("not_found"));
    // The other key is still there, under its own name.
    let one = skewdb(&["--json", "--key-base64", "get", &db, "c", "AQ=="]);
    assert_eq!(json_lines(&one.stdout)[0]["body"], json!("one"));
}

#[test]
fn span_buckets_at_both_ends_of_the_key_range() {
    let (_dir, db) = database(&["r=bucket:100:10"]);
    let low = [i64::MIN + 1, i64::MIN + 3, i64::MIN];
    let high = [i64::MAX - 1, i64::MAX];
    for key in low {
        push(&db, "low", "r", key, "x");
    }
    for key in high {
        push(&db, "high", "r", key, "x");
    }
    for (parent, keys) in [("low", low.to_vec()), ("high", high.to_vec())] {
        let get = json_lines(&skewdb(&["--json", "get", &db, "c", parent]).stdout);
        let array = &get[0]["arrays"]["r"];
        assert_eq!(
            array["has_overflow"],
            json!(false),
            "{parent}: one open bucket"
        );
        let inline: Vec<i64> = array["inline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["key"].as_i64().unwrap())
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(inline, sorted, "{parent}");
    }
}

#[test]
fn a_deleted_lock_file_does_not_let_a_second_writer_in() {
    let (_dir, db) = database(&[]);
    let mut first = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(["exec", &db])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = first.stdin.as_mut().unwrap();
    stdin.write_all(b"{\"op\":\"commit\"}\n").unwrap();
    stdin.flush().unwrap();
    let mut acknowledgement = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(first.stdout.as_mut().unwrap()),
        &mut acknowledgement,
    )
    .unwrap();
    assert_eq!(acknowledgement.trim(), "{\"committed\":1}");
    std::fs::remove_file(Path::new(&db).join("LOCK")).unwrap();
    let second = exec_bytes(
        &db,
        &["--json"],
        b"{\"op\":\"put\",\"coll\":\"c\",\"key\":\"a\",\"body\":\"1\"}\n{\"op\":\"commit\"}\n",
    );
    let (code, error) = json_error(&second);
    assert_eq!(
        (code, error["kind"].as_str()),
        (1, Some("locked")),
        "{second:?}"
    );
    assert!(
        second.stdout.is_empty(),
        "the second writer acknowledged nothing"
    );
    drop(first.stdin.take());
    assert!(first.wait().unwrap().success());
}

#[test]
fn every_argument_has_help_and_completions_are_generated() {
    let put = String::from_utf8(skewdb(&["put", "--help"]).stdout).unwrap();
    for needle in [
        "The database directory",
        "The collection",
        "The parent document's key",
        "The body",
    ] {
        assert!(put.contains(needle), "{needle}: {put}");
    }
    let push = String::from_utf8(skewdb(&["push", "--help"]).stdout).unwrap();
    assert!(push.contains("not the parent's KEY"), "{push}");
    assert!(push.contains("--item-key"), "{push}");
    let exec = String::from_utf8(skewdb(&["exec", "--help"]).stdout).unwrap();
    for op in ["put", "push", "remove", "expire", "del", "commit"] {
        assert!(exec.contains(&format!("{{\"op\":\"{op}\"")), "{op}: {exec}");
    }
    // Every subcommand's every argument has a help line.
    let top = String::from_utf8(skewdb(&["--help"]).stdout).unwrap();
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(commands.len() >= 18, "{commands:?}");
    for command in commands {
        let help = String::from_utf8(skewdb(&[command, "--help"]).stdout).unwrap();
        let lines: Vec<&str> = help.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            let argument = (indent == 2 || indent == 6)
                && (trimmed.starts_with('<') || trimmed.starts_with('-'));
            if !argument {
                continue;
            }
            // Help on the same line after a gap, or on the next line, indented deeper.
            let same_line = trimmed.split("  ").filter(|part| !part.is_empty()).count() >= 2;
            let next_line = lines.get(at + 1).is_some_and(|next| {
                let rest = next.trim_start();
                !rest.is_empty() && next.len() - rest.len() > indent + 2
            });
            assert!(
                same_line || next_line,
                "{command}: argument without help: {line:?}"
            );
        }
    }
    for shell in ["bash", "zsh", "fish"] {
        let output = skewdb(&["completions", shell]);
        assert!(output.status.success());
        let script = String::from_utf8(output.stdout).unwrap();
        assert!(
            script.contains("skewdb") && script.contains("exec"),
            "{shell}"
        );
    }
    let bad = skewdb(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_damaged_file_is_reported_with_the_corruption_kind() {
    let (_dir, db) = database(&[]);
    assert!(skewdb(&["put", &db, "c", "a", "1"]).status.success());
    let checkpoint = Path::new(&db).join("checkpoint");
    let mut bytes = std::fs::read(&checkpoint).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&checkpoint, bytes).unwrap();
    let (code, error) = json_error(&skewdb(&["--json", "get", &db, "c", "a"]));
    assert_eq!(
        (code, error["kind"].as_str()),
        (1, Some("corruption")),
        "{error}"
    );
    assert!(
        error["error"].as_str().unwrap().contains("checkpoint"),
        "{error}"
    );
}
