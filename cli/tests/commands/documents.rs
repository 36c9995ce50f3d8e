//! One document model in the tool: `create` makes collections of documents (Extended JSON
//! in, BSON stored, every malformed body refused with the argument named), `--bytes` a
//! collection of the application's own bytes; a collection made by `create` is read,
//! summarized, exported and imported again as one made by `import` is.

use serde_json::Value;

use super::support::{skewdb, skewdb_with_input};

/// The output of a command that must succeed.
fn ok(args: &[&str]) -> String {
    let output = skewdb(args);
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The JSON error of a command that must fail with exit status 1.
fn refused(args: &[&str]) -> Value {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let output = skewdb(&with_json);
    assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
    serde_json::from_slice(&output.stderr).unwrap()
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn database() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    (dir, db)
}

#[test]
fn create_makes_documents_and_refuses_what_is_not_one() {
    let (dir, db) = database();
    let db = db.as_str();
    ok(&[
        "create",
        db,
        "--collection",
        "products",
        "--array",
        "reviews=subset:3",
    ]);
    // Malformed bodies, and bodies that are not documents, are refused, the argument named.
    let error = refused(&["put", db, "products", "bad", r#"{"name":"#]);
    assert_eq!(error["kind"], "invalid_input", "{error}");
    assert!(error["error"].as_str().unwrap().contains("body"), "{error}");
    let error = refused(&["put", db, "products", "bad", "[1, 2]"]);
    assert!(
        error["error"].as_str().unwrap().contains("not a document"),
        "{error}"
    );
    let error = refused(&["put", db, "products", "bad", r#"{"_id": "other"}"#]);
    assert_eq!(error["kind"], "invalid_input", "{error}");
    assert_eq!(
        skewdb(&["get", db, "products", "bad"]).status.code(),
        Some(1)
    );

    ok(&[
        "put",
        db,
        "products",
        "p1",
        r#"{"name": "lamp", "price": 25}"#,
    ]);
    for stars in 1..=5 {
        let element = format!(r#"{{"stars": {stars}, "text": "review {stars}"}}"#);
        ok(&[
            "push",
            db,
            "products",
            "p1",
            "reviews",
            &element,
            "--value",
            &stars.to_string(),
        ]);
    }
    let error = refused(&["push", db, "products", "p1", "reviews", r#"{"stars": "#]);
    assert!(
        error["error"].as_str().unwrap().contains("payload"),
        "{error}"
    );
    // The body carries its key; the newest reviews page back by cursor.
    let got: Value = serde_json::from_str(&ok(&["--json", "get", db, "products", "p1"])).unwrap();
    assert_eq!(got["body"]["_id"], "p1", "{got}");
    assert_eq!(got["body"]["name"], "lamp", "{got}");
    let page = json_lines(&ok(&[
        "--json", "items", db, "products", "p1", "reviews", "--desc", "--limit", "2",
    ]));
    assert_eq!(page.len(), 3, "two items and a cursor: {page:?}");
    assert_eq!(page[0]["payload"]["stars"], 5, "{page:?}");
    let cursor = page[2]["cursor"].as_str().unwrap();
    let rest = json_lines(&ok(&[
        "--json", "items", db, "products", "p1", "reviews", "--desc", "--cursor", cursor,
    ]));
    let stars: Vec<i64> = rest
        .iter()
        .map(|i| i["payload"]["stars"].as_i64().unwrap())
        .collect();
    assert_eq!(stars, [3, 2, 1]);
    let summary: Value =
        serde_json::from_str(&ok(&["--json", "summary", db, "products", "p1", "reviews"])).unwrap();
    assert_eq!(
        (summary["count"].as_u64(), summary["sum"].as_f64()),
        (Some(5), Some(15.0))
    );

    // Exported, imported into another collection and exported again: the same bytes.
    let first = dir.path().join("first.json");
    ok(&["export", db, "products", "--out", first.to_str().unwrap()]);
    let exported = std::fs::read_to_string(&first).unwrap();
    assert!(exported.contains(r#""name":"lamp""#), "{exported}");
    ok(&[
        "import",
        db,
        "--collection",
        "copy",
        "--file",
        first.to_str().unwrap(),
        "--array",
        "reviews=subset:3",
    ]);
    let second = dir.path().join("second.json");
    ok(&["export", db, "copy", "--out", second.to_str().unwrap()]);
    assert_eq!(std::fs::read(&second).unwrap(), exported.as_bytes());
    // And advise reads it as it reads an imported one.
    ok(&["advise", db, "products"]);
}

#[test]
fn bytes_keep_a_collection_of_the_applications_own_bytes() {
    let (_dir, db) = database();
    let db = db.as_str();
    ok(&[
        "create",
        db,
        "--collection",
        "raw",
        "--bytes",
        "--array",
        "a=embed",
    ]);
    ok(&["put", db, "raw", "k", r#"{"name":"#]);
    let got: Value = serde_json::from_str(&ok(&["--json", "get", db, "raw", "k"])).unwrap();
    assert_eq!(got["body"], r#"{"name":"#);
    let error = refused(&["export", db, "raw"]);
    assert!(
        error["error"].as_str().unwrap().contains("create --bytes"),
        "{error}"
    );
    // Document options do not go with --bytes.
    let usage = skewdb(&[
        "create",
        db,
        "--collection",
        "x",
        "--bytes",
        "--key-field",
        "id",
    ]);
    assert_eq!(usage.status.code(), Some(2), "{usage:?}");
}

/// `exec`'s create op makes documents as `create` does (the lines after it in its own batch
/// already read through its map), and one of bytes only when it says `"bytes": true`.
#[test]
fn exec_creates_documents_unless_it_says_bytes() {
    let (dir, db) = database();
    let db = db.as_str();
    ok(&["create", db, "--collection", "users", "--bytes"]);
    let input = [
        r#"{"op":"create","coll":"products","key_field":"sku","arrays":[{"field":"reviews","layout":"subset:2","item_key":"at"}]}"#,
        r#"{"op":"put","coll":"products","key":"p1","body":{"name":"lamp"}}"#,
        r#"{"op":"push","coll":"products","key":"p1","field":"reviews","payload":{"at":7,"text":"good"}}"#,
        r#"{"op":"push","coll":"products","key":"p1","field":"reviews","payload":{"at":9,"text":"fine"}}"#,
        r#"{"op":"commit"}"#,
        r#"{"op":"create","coll":"raw","bytes":true}"#,
        r#"{"op":"put","coll":"raw","key":"k","body":"{\"name\":"}"#,
        r#"{"op":"commit"}"#,
    ]
    .join("\n");
    let output = skewdb_with_input(&["exec", db], format!("{input}\n").as_bytes());
    assert!(output.status.success(), "{output:?}");
    let got: Value = serde_json::from_str(&ok(&["--json", "get", db, "products", "p1"])).unwrap();
    assert_eq!(
        (&got["body"]["sku"], &got["body"]["name"]),
        (&Value::from("p1"), &Value::from("lamp")),
        "{got}"
    );
    let items = json_lines(&ok(&["--json", "items", db, "products", "p1", "reviews"]));
    let keys: Vec<i64> = items.iter().map(|i| i["key"].as_i64().unwrap()).collect();
    assert_eq!(keys, [7, 9], "{items:?}");
    assert_eq!(items[1]["payload"]["text"], "fine", "{items:?}");
    // It exports as documents, and imports back to the same bytes.
    let first = dir.path().join("first.json");
    ok(&["export", db, "products", "--out", first.to_str().unwrap()]);
    let exported = std::fs::read_to_string(&first).unwrap();
    assert!(exported.contains(r#""sku":"p1""#), "{exported}");
    ok(&[
        "import",
        db,
        "--collection",
        "copy",
        "--file",
        first.to_str().unwrap(),
        "--key-field",
        "sku",
        "--array",
        "reviews=subset:2",
        "--item-key",
        "at",
    ]);
    let second = dir.path().join("second.json");
    ok(&["export", db, "copy", "--out", second.to_str().unwrap()]);
    assert_eq!(std::fs::read(&second).unwrap(), exported.as_bytes());
    // The collection of bytes keeps its bytes and is not exported as documents.
    let got: Value = serde_json::from_str(&ok(&["--json", "get", db, "raw", "k"])).unwrap();
    assert_eq!(got["body"], r#"{"name":"#);
    assert_eq!(refused(&["export", db, "raw"])["kind"], "invalid_input");
    // A malformed body in a document collection is refused with its line; document fields
    // beside "bytes": true are refused.
    for (line, wanted) in [
        (
            r#"{"op":"create","coll":"docs"}"#.to_string() + "\n"
                + r#"{"op":"put","coll":"docs","key":"k","body":"plain text"}"#,
            "not a document",
        ),
        (
            r#"{"op":"create","coll":"x","bytes":true,"key_field":"sku"}"#.to_string(),
            "no document fields",
        ),
        (
            r#"{"op":"create","coll":"x","bytes":true,"arrays":[{"field":"a","layout":"embed","item_key":"at"}]}"#
                .to_string(),
            "no document fields",
        ),
    ] {
        let output =
            skewdb_with_input(&["exec", db], format!("{line}\n{{\"op\":\"commit\"}}\n").as_bytes());
        assert_eq!(output.status.code(), Some(1), "{line}: {output:?}");
        let error: Value =
            serde_json::from_str(String::from_utf8_lossy(&output.stdout).lines().next().unwrap())
                .unwrap();
        assert_eq!(error["kind"], "invalid_input", "{line}: {error}");
        assert!(error["error"].as_str().unwrap().contains(wanted), "{line}: {error}");
    }
    let names = ok(&["collections", db]);
    assert!(
        !names.contains("docs") && !names.contains("\nx\t"),
        "{names}"
    );
}

/// A parent that `push --upsert` made has no body of its own: it exports (and reads) as
/// the document of its key alone.
#[test]
fn a_parent_made_by_a_push_exports_as_its_key() {
    let (_dir, db) = database();
    let db = db.as_str();
    ok(&["create", db, "--collection", "c", "--array", "a=embed"]);
    ok(&["push", db, "c", "k", "a", r#"{"x": 1}"#, "--upsert"]);
    let exported = ok(&["export", db, "c"]);
    assert_eq!(exported, "{\"_id\":\"k\",\"a\":[{\"x\":1}]}\n");
}

#[test]
fn a_bare_reading_makes_its_element_where_the_array_maps_its_fields() {
    let (dir, db) = database();
    let db = db.as_str();
    ok(&[
        "create",
        db,
        "--collection",
        "sensors",
        "--key-field",
        "name",
        "--array",
        "readings=bucket:60:1h",
        "--item-key",
        "readings=t",
        "--measures",
        "readings=temp,hum",
        "--array",
        "notes=embed",
    ]);
    ok(&["put", db, "sensors", "s1", r#"{"site": "roof"}"#]);
    let at = "2024-01-03T12:00:00Z";
    ok(&[
        "push", db, "sensors", "s1", "readings", "--key", at, "--value", "21.5",
    ]);
    ok(&[
        "push",
        db,
        "sensors",
        "s1",
        "readings",
        "--key",
        "2024-01-03T12:01:00Z",
        "--measure",
        "hum=0.4",
    ]);
    let error = refused(&[
        "push",
        db,
        "sensors",
        "s1",
        "readings",
        "--key",
        at,
        "--measure",
        "wind=3",
    ]);
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("no measure \"wind\""),
        "{error}"
    );
    // An array that keeps nothing in element fields needs its element.
    let error = refused(&["push", db, "sensors", "s1", "notes", "--value", "1"]);
    assert_eq!(error["kind"], "invalid_input", "{error}");
    // The same through exec.
    let input = concat!(
        r#"{"op":"push","coll":"sensors","key":"s1","field":"readings","item_key":1704283320000,"measures":{"temp":22.5}}"#,
        "\n",
        r#"{"op":"commit"}"#,
        "\n"
    );
    let output = skewdb_with_input(&["exec", db], input.as_bytes());
    assert!(output.status.success(), "{output:?}");

    let out = dir.path().join("sensors.json");
    ok(&["export", db, "sensors", "--out", out.to_str().unwrap()]);
    let exported: Value =
        serde_json::from_str(std::fs::read_to_string(&out).unwrap().trim()).unwrap();
    assert_eq!(exported["name"], "s1", "{exported}");
    let readings = exported["readings"].as_array().unwrap();
    assert_eq!(readings.len(), 3, "{exported}");
    assert_eq!(
        readings[0]["t"]["$date"], "2024-01-03T12:00:00Z",
        "{exported}"
    );
    assert_eq!(readings[0]["temp"], 21.5, "{exported}");
    assert_eq!(readings[1]["hum"], 0.4, "{exported}");
    assert!(readings[1].get("temp").is_none(), "{exported}");
    assert_eq!(readings[2]["temp"], 22.5, "{exported}");
    let summary: Value = serde_json::from_str(&ok(&[
        "--json",
        "summary",
        db,
        "sensors",
        "s1",
        "readings",
        "--measure",
        "temp",
    ]))
    .unwrap();
    assert_eq!(summary["count"], 2, "{summary}");
    assert_eq!(summary["min_date"], "2024-01-03T12:00:00Z", "{summary}");
    // Text speaks time: the span as a duration, keys and windows as dates, the count once.
    let got = ok(&["get", db, "sensors", "s1"]);
    assert!(
        got.contains(
            "array readings (bucket:60:1h): 3 items  keys \
             2024-01-03T12:00:00Z..2024-01-03T12:02:00Z"
        ),
        "{got}"
    );
    let windows = ok(&["summary", db, "sensors", "s1", "readings", "--every", "1h"]);
    assert!(
        windows.starts_with("window 2024-01-03T12:00:00Z: items 3  "),
        "{windows}"
    );
}

#[test]
fn document_options_name_what_they_map() {
    let (_dir, db) = database();
    let db = db.as_str();
    let error = refused(&[
        "create",
        db,
        "--collection",
        "c",
        "--array",
        "a=embed",
        "--item-key",
        "b=t",
    ]);
    assert_eq!(error["kind"], "invalid_input", "{error}");
    assert!(
        error["error"].as_str().unwrap().contains("\"b\""),
        "{error}"
    );
    let error = refused(&["create", db, "--collection", "c", "--key-field", ""]);
    assert_eq!(error["kind"], "invalid_input", "{error}");
}

/// The README's first session, run as written (in a temporary directory): each command
/// prints what the `#` lines after it say (spaces and tabs alike; a line ending in `...]}`
/// is the start of what prints).
#[test]
fn the_readmes_first_session_prints_what_it_says() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let start = readme
        .find("A first session")
        .expect("the README's first session");
    let block = &readme[start..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    // Commands (continued lines joined) with the output lines after each.
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    let mut continued = false;
    for line in block.lines() {
        if let Some(expected) = line.strip_prefix("#") {
            steps
                .last_mut()
                .unwrap()
                .1
                .push(expected.trim().to_string());
        } else if continued {
            let command = &mut steps.last_mut().unwrap().0;
            command.push(' ');
            command.push_str(line.trim().trim_end_matches('\\'));
            continued = line.ends_with('\\');
        } else {
            continued = line.ends_with('\\');
            steps.push((line.trim_end_matches('\\').to_string(), Vec::new()));
        }
    }
    assert!(steps.len() >= 8, "{steps:?}");
    let dir = tempfile::tempdir().unwrap();
    let normal = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    for (command, expected) in &steps {
        let words = shell_words(command);
        assert_eq!(words[0], "skewdb", "{command}");
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_skewdb"))
            .args(&words[1..])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "{command}: {output:?}");
        let printed = String::from_utf8(output.stdout).unwrap();
        let printed: Vec<&str> = printed.lines().collect();
        assert_eq!(printed.len(), expected.len(), "{command}: {printed:?}");
        for (printed, expected) in printed.iter().zip(expected) {
            let (printed, expected) = (normal(printed), normal(expected));
            match expected.strip_suffix("...]}") {
                Some(start) => assert!(printed.starts_with(start), "{command}: {printed}"),
                None => assert_eq!(printed, expected, "{command}"),
            }
        }
    }
}

/// The words of a command line as a shell splits them, for the README's lines: plain
/// words and single-quoted ones.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            if c == '\'' {
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            } else {
                word.push(c);
            }
        }
        words.push(word);
    }
    words
}
