//! `import` and `export`: MongoDB's Extended JSON in and out, arrays split under a layout.

use super::support::skewdb;
use std::path::Path;
use std::process::{Command, Output};

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Documents with every Extended JSON type, in canonical form, the arrays in the middle.
const CANONICAL: &str = r#"{"_id":{"$oid":"65f0a1b2c3d4e5f6a7b8c9d0"},"name":"Ann","reviews":[{"at":{"$date":{"$numberLong":"1704153600000"}},"stars":{"$numberInt":"5"},"text":"good"},{"at":{"$date":{"$numberLong":"1704240000000"}},"stars":{"$numberDouble":"2.5"},"text":"meh"},{"at":{"$date":{"$numberLong":"1704326400000"}},"stars":{"$numberLong":"4"},"text":"ok"}],"i":{"$numberInt":"-7"},"l":{"$numberLong":"9007199254740993"},"d":{"$numberDouble":"-0.5"},"inf":{"$numberDouble":"Infinity"},"nan":{"$numberDouble":"NaN"},"dec":{"$numberDecimal":"1.10"},"bin":{"$binary":{"base64":"AAEC","subType":"04"}},"t":{"$timestamp":{"t":5,"i":1}},"re":{"$regularExpression":{"pattern":"^a","options":"i"}},"code":{"$code":"f()"},"min":{"$minKey":1},"max":{"$maxKey":1},"null":null,"yes":true,"nested":{"a":[{"$numberInt":"1"},"two",{"b":null}]},"tags":[]}
{"_id":{"$numberInt":"7"},"name":"Bo","reviews":[],"tags":["x",{"$numberInt":"3"},{"":{"$numberInt":"1"}}]}
{"_id":"str-key","reviews":[{"at":{"$date":{"$numberLong":"1"}},"stars":{"$numberInt":"1"},"text":"first"}]}
"#;

fn import(db: &Path, file: &Path, extra: &[&str]) -> Output {
    let (db, file) = (db.to_str().unwrap(), file.to_str().unwrap());
    let mut args = vec!["import", db, "--collection", "c", "--file", file];
    args.extend_from_slice(extra);
    skewdb(&args)
}

#[test]
fn import_then_export_gives_back_every_document_and_type() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    std::fs::write(&file, CANONICAL).unwrap();
    for layout in ["embed", "reference", "subset:1", "outlier:1", "bucket:2"] {
        let db = dir.path().join(layout.replace(':', "-"));
        let arrays = [
            "--array",
            &format!("reviews={layout}"),
            "--array",
            "tags=outlier:1",
            "--item-key",
            "reviews=at",
            "--measure",
            "reviews=stars",
        ];
        let output = import(&db, &file, &arrays);
        assert!(output.status.success(), "{layout}: {output:?}");
        assert!(stdout(&output).contains("imported 3 documents (7 items)"));
        let db = db.to_str().unwrap();
        let exported = skewdb(&["export", db, "c", "--canonical"]);
        assert!(exported.status.success(), "{exported:?}");
        // Parents in key order: numbers, then strings, then ObjectIds.
        let mut expected: Vec<&str> = CANONICAL.lines().collect();
        expected.rotate_left(1);
        let got = stdout(&exported);
        assert_eq!(got.lines().collect::<Vec<_>>(), expected, "{layout}");
        // The measure is summarized; the inline view has the layout's shape.
        let summary = skewdb(&[
            "--json",
            "summary",
            db,
            "c",
            r#"{"$oid":"65f0a1b2c3d4e5f6a7b8c9d0"}"#,
            "reviews",
        ]);
        let summary: serde_json::Value = serde_json::from_slice(&summary.stdout).unwrap();
        assert_eq!(summary["count"], 3, "{summary}");
        assert_eq!(summary["sum"], 11.5);
        let inline = skewdb(&["export", db, "c", "--inline-only"]);
        let first: serde_json::Value =
            serde_json::from_str(stdout(&inline).lines().next().unwrap()).unwrap();
        assert_eq!(first["tags_count"], 3);
        assert_eq!(first["tags_has_overflow"], true);
        assert_eq!(first["tags"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn documents_with_one_key_merge_and_bookkeeping_fields_drop() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("buckets.json");
    let mut lines = String::new();
    for bucket in 0..4 {
        let readings: Vec<String> = (0..3)
            .map(|r| format!(r#"{{"t":{},"v":{}}}"#, bucket * 3 + r, bucket + r))
            .collect();
        lines += &format!(
            r#"{{"sensor":"s1","bucket":{bucket},"site":"north","readings":[{}],"count":3,"sum":9}}"#,
            readings.join(",")
        );
        lines.push('\n');
    }
    std::fs::write(&file, lines).unwrap();
    let db = dir.path().join("db");
    let output = import(
        &db,
        &file,
        &[
            "--key-field",
            "sensor",
            "--array",
            "readings=bucket:5",
            "--item-key",
            "t",
            "--measure",
            "v",
            "--drop",
            "count,sum,bucket",
        ],
    );
    assert!(output.status.success(), "{output:?}");
    let db = db.to_str().unwrap();
    let exported = stdout(&skewdb(&["export", db, "c"]));
    assert_eq!(exported.lines().count(), 1, "{exported}");
    let parent: serde_json::Value = serde_json::from_str(exported.trim()).unwrap();
    assert_eq!(parent["readings"].as_array().unwrap().len(), 12);
    assert!(parent.get("count").is_none() && parent.get("bucket").is_none());
    assert_eq!(parent["site"], "north");
    // Advice on the stored collection, whose key came from `sensor`, not `_id`.
    let (advice, output) = advise(&[db, "c"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(advice[0]["field"], "readings", "{advice:?}");
    assert_eq!(advice[0]["max"], 12);
    let summary = skewdb(&[
        "--json", "summary", db, "c", "s1", "readings", "--from", "3", "--to", "5",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&summary.stdout).unwrap();
    assert_eq!(
        (summary["count"].clone(), summary["sum"].clone()),
        (3.into(), 6.0.into())
    );
}

#[test]
fn bad_documents_are_reported_by_line_and_skipped_or_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    std::fs::write(
        &file,
        "{\"_id\":1,\"a\":[1]}\nnot json\n{\"_id\":{\"x\":1}}\n{\"_id\":2,\"a\":5}\n{\"_id\":3,\"a\":[{\"k\":\"no\"}]}\n[1]\n{\"_id\":4}\n",
    )
    .unwrap();
    let db = dir.path().join("db");
    let output = import(&db, &file, &["--array", "a=embed", "--item-key", "k"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    for line in [
        "line 1:",
        "line 2: not JSON",
        "line 3:",
        "line 4:",
        "line 5:",
        "line 6:",
    ] {
        assert!(stderr.contains(line), "{line} in {stderr}");
    }
    assert!(!stderr.contains("line 7"), "{stderr}");
    let exported = stdout(&skewdb(&["export", db.to_str().unwrap(), "c"]));
    assert_eq!(exported, "{\"_id\":4}\n");
    // With --stop-on-error the first bad line ends the import.
    let db = dir.path().join("db2");
    let output = import(&db, &file, &["--array", "a=embed", "--stop-on-error"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("line 2: not JSON") && !stderr.contains("line 3"),
        "{stderr}"
    );
}

#[test]
fn a_celebrity_past_16_mib_is_refused_under_embed_and_kept_under_outlier() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    let follower = format!("\"{}\"", "f".repeat(200));
    let followers = vec![follower; 90_000].join(",");
    std::fs::write(
        &file,
        format!("{{\"_id\":\"small\",\"followers\":[\"a\"]}}\n{{\"_id\":\"celebrity\",\"followers\":[{followers}]}}\n"),
    )
    .unwrap();
    let embed = dir.path().join("embed");
    let output = import(&embed, &file, &["--array", "followers=embed"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("line 2:") && stderr.contains("16"),
        "{stderr}"
    );
    let exported = stdout(&skewdb(&["export", embed.to_str().unwrap(), "c"]));
    assert_eq!(exported.lines().count(), 1, "the small parent landed");
    let outlier = dir.path().join("outlier");
    let output = import(&outlier, &file, &["--array", "followers=outlier:100"]);
    assert!(output.status.success(), "{output:?}");
    let db = outlier.to_str().unwrap();
    let exported = stdout(&skewdb(&["export", db, "c"]));
    let original = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<&str> = original.lines().collect();
    lines.reverse();
    assert_eq!(exported.lines().collect::<Vec<_>>(), lines);
    let outliers = stdout(&skewdb(&["outliers", db, "c", "followers"]));
    assert_eq!(outliers.trim(), "\"celebrity\"\t90000");
}

/// A hand-made Subset: products embed their three newest reviews, a second collection holds
/// every review with its product's id. Imported into one Subset array, each review once.
#[test]
fn a_hand_made_subset_and_its_history_collection_become_one_array() {
    let dir = tempfile::tempdir().unwrap();
    let (mut products, mut reviews) = (String::new(), String::new());
    let mut expected = Vec::new();
    for product in 0..6 {
        let all: Vec<String> = (0..product * 2)
            .map(|r| {
                format!(
                    r#"{{"_id":"r{product}-{r}","at":{{"$date":{{"$numberLong":"{}"}}}},"stars":{}}}"#,
                    1_700_000_000_000i64 + r * 1000,
                    1 + r % 5
                )
            })
            .collect();
        let recent: Vec<&String> = all.iter().rev().take(3).collect();
        products += &format!(
            r#"{{"_id":{product},"name":"p{product}","recent_reviews":[{}],"review_count":{}}}"#,
            recent
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(","),
            all.len()
        );
        products.push('\n');
        // The history repeats the embedded reviews, each with its parent's id.
        for review in &all {
            reviews += &review.replacen('{', &format!(r#"{{"product_id":{product},"#), 1);
            reviews.push('\n');
        }
        expected.push((product, all));
    }
    reviews += "{\"_id\":\"orphan\",\"product_id\":99,\"at\":1}\n{\"_id\":\"lost\"}\n";
    let (products_file, reviews_file) = (dir.path().join("p.json"), dir.path().join("r.json"));
    std::fs::write(&products_file, products).unwrap();
    std::fs::write(&reviews_file, reviews).unwrap();
    let db = dir.path().join("db");
    let args = [
        "--array",
        "recent_reviews=subset:3",
        "--item-key",
        "at",
        "--measure",
        "stars",
        "--drop",
        "review_count",
        "--children",
        reviews_file.to_str().unwrap(),
        "--parent-field",
        "product_id",
        "--into",
        "recent_reviews",
    ];
    let output = import(&db, &products_file, &args);
    // 30 reviews, 14 of them embedded already; the orphan and the one without a parent
    // field are refused by their line in the children's file.
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let out = stdout(&output);
    assert!(
        out.contains("imported 6 documents (30 items, 16 of them children; 14 children already"),
        "{out}"
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("children line 31: no parent 99") && stderr.contains("children line 32:"),
        "{stderr}"
    );
    let db = db.to_str().unwrap();
    let exported = stdout(&skewdb(&["export", db, "c"]));
    for (line, (product, all)) in exported.lines().zip(&expected) {
        let parent: serde_json::Value = serde_json::from_str(line).unwrap();
        let ids: Vec<String> = parent["recent_reviews"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["_id"].as_str().unwrap().to_string())
            .collect();
        let want: Vec<String> = (0..all.len()).map(|r| format!("r{product}-{r}")).collect();
        assert_eq!(ids, want, "every review once, oldest first");
        assert!(parent.get("review_count").is_none());
    }
    // The window holds the newest three, as the hand-made one did.
    let inline = stdout(&skewdb(&["export", db, "c", "--inline-only"]));
    let last: serde_json::Value = serde_json::from_str(inline.lines().last().unwrap()).unwrap();
    assert_eq!(last["recent_reviews_count"], 10);
    let window: Vec<&str> = last["recent_reviews"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["_id"].as_str().unwrap())
        .collect();
    assert_eq!(window, ["r5-7", "r5-8", "r5-9"]);
    // Importing the history again adds nothing: every review is there already.
    let again = [
        "--children",
        reviews_file.to_str().unwrap(),
        "--parent-field",
        "product_id",
        "--into",
        "recent_reviews",
    ];
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let output = import(Path::new(db), &empty, &again);
    assert!(
        stdout(&output).contains("(0 items, 0 of them children; 30 children already"),
        "{output:?}"
    );
    let summary = skewdb(&["--json", "summary", db, "c", "5", "recent_reviews"]);
    let summary: serde_json::Value = serde_json::from_slice(&summary.stdout).unwrap();
    assert_eq!(summary["count"], 10);
}

#[test]
fn children_need_an_array_to_join() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    std::fs::write(&file, "{\"_id\":1}\n").unwrap();
    let db = dir.path().join("db");
    let args = [
        "--children",
        file.to_str().unwrap(),
        "--parent-field",
        "p",
        "--into",
        "x",
    ];
    let output = import(&db, &file, &args);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("--into \"x\" names no array"), "{stderr}");
    // --children without --into is a usage error.
    let output = import(&db, &file, &["--children", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
}

/// `advise --json`: one line per array field, then the prediction.
fn advise(args: &[&str]) -> (Vec<serde_json::Value>, Output) {
    let mut all = vec!["--json", "advise"];
    all.extend_from_slice(args);
    let output = skewdb(&all);
    let lines = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, output)
}

/// A small deterministic generator, so the files need no randomness crate.
fn lcg(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn uniform_small_arrays_are_advised_to_embed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    let mut state = 1;
    let mut lines = String::new();
    for id in 0..3000 {
        let tags: Vec<String> = (0..1 + (lcg(&mut state) * 8.0) as u32)
            .map(|t| format!("\"t{t}\""))
            .collect();
        lines += &format!("{{\"_id\":{id},\"tags\":[{}]}}\n", tags.join(","));
    }
    std::fs::write(&file, lines).unwrap();
    let (advice, output) = advise(&["--file", file.to_str().unwrap(), "--budget", "1MiB"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(advice.len(), 2, "{advice:?}");
    let tags = &advice[0];
    assert_eq!(tags["field"], "tags");
    assert_eq!(tags["layout"], "embed", "{tags}");
    assert_eq!(
        (tags["documents"].clone(), tags["max"].clone()),
        (3000.into(), 8.into())
    );
    assert!(tags["reason"].as_str().unwrap().contains("light"));
    let prediction = &advice[1]["prediction"];
    assert_eq!(prediction["budget_bytes"], 1 << 20);
    for layout in ["advised", "embed"] {
        let hit_ratio = prediction[layout]["hit_ratio"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&hit_ratio), "{prediction}");
        assert!(prediction[layout]["requests"].as_u64().unwrap() > 0);
    }
}

#[test]
fn a_follower_collection_with_a_celebrity_is_advised_to_outlier_and_imports_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    let mut state = 7;
    let mut lines = String::new();
    for id in 0..2000 {
        // Pareto(1.2) follower counts; account 0 is the celebrity, past 16 MiB embedded.
        let count = match id {
            0 => 90_000,
            _ => ((1.0 - lcg(&mut state)).powf(-1.0 / 1.2) - 1.0).min(500.0) as usize,
        };
        let followers: Vec<String> = (0..count)
            .map(|f| format!("\"{:0>200}\"", format!("{id}-{f}")))
            .collect();
        lines += &format!(
            "{{\"_id\":\"u{id:04}\",\"name\":\"n{id}\",\"followers\":[{}]}}\n",
            followers.join(",")
        );
    }
    std::fs::write(&file, &lines).unwrap();
    let (advice, output) = advise(&["--file", file.to_str().unwrap(), "--budget", "512KiB"]);
    assert!(output.status.success(), "{output:?}");
    let followers = &advice[0];
    let layout = followers["layout"].as_str().unwrap().to_string();
    assert!(layout.starts_with("outlier:"), "{followers}");
    let cap: u64 = layout["outlier:".len()..].parse().unwrap();
    assert!(
        cap >= followers["p90"].as_u64().unwrap() && cap < 1000,
        "{followers}"
    );
    assert_eq!(followers["max"], 90_000);
    assert!(followers["over_limit_share"].as_f64().unwrap() > 0.0);
    let alpha = followers["tail_exponent"].as_f64().unwrap();
    assert!(alpha > 0.5 && alpha < 2.5, "{followers}");
    // Embed refuses the celebrity; the advice keeps every account, and the page cache
    // serves the Zipf reads better than Embed's.
    let prediction = &advice[1]["prediction"];
    assert_eq!(prediction["embed"]["refused_documents"], 1, "{prediction}");
    assert_eq!(prediction["advised"]["refused_documents"], 0);
    assert!(
        prediction["advised"]["hit_ratio"].as_f64() > prediction["embed"]["hit_ratio"].as_f64(),
        "{prediction}"
    );
    // Imported under the advice: the celebrity's followers all readable, the file given back.
    let db = dir.path().join("db");
    let output = import(&db, &file, &["--array", &format!("followers={layout}")]);
    assert!(output.status.success(), "{output:?}");
    let db = db.to_str().unwrap();
    let parent = skewdb(&["--json", "get", db, "c", "u0000"]);
    let parent: serde_json::Value = serde_json::from_slice(&parent.stdout).unwrap();
    assert_eq!(parent["arrays"]["followers"]["total"], 90_000, "{parent}");
    assert_eq!(parent["arrays"]["followers"]["has_overflow"], true);
    let items = stdout(&skewdb(&["items", db, "c", "u0000", "followers"]));
    assert_eq!(items.lines().count(), 90_000);
    assert_eq!(stdout(&skewdb(&["export", db, "c"])), lines);
    // Advice read back from the database agrees with the file's.
    let (stored, output) = advise(&[db, "c", "--budget", "4MiB"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stored[0]["layout"], followers["layout"]);
    assert_eq!(stored[0]["max"], followers["max"]);
}

#[test]
fn hand_made_windows_and_buckets_are_recognized() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    let mut lines = String::new();
    for id in 0..200u64 {
        // A window capped by the application at 10 newest reviews, and a day of readings
        // every minute as a hand-made bucket.
        let reviews: Vec<String> = (0..(id % 40).min(10))
            .map(|r| format!("{{\"_id\":\"r{id}-{r}\",\"stars\":4}}"))
            .collect();
        let readings: Vec<String> = (0..100)
            .map(|m| {
                format!(
                    "{{\"at\":{{\"$date\":{{\"$numberLong\":\"{}\"}}}},\"v\":{m}}}",
                    1_700_000_000_000u64 + (id * 100 + m) * 60_000
                )
            })
            .collect();
        // Dated things that are no readings (they carry an id): not a stream.
        let visits: Vec<String> = (0..80)
            .map(|v| format!("{{\"who\":\"v{v}\",\"at\":{{\"$date\":\"2024-01-01T00:00:00Z\"}}}}"))
            .collect();
        lines += &format!(
            "{{\"_id\":{id},\"recent_reviews\":[{}],\"readings\":[{}],\"visits\":[{}]}}\n",
            reviews.join(","),
            readings.join(","),
            visits.join(",")
        );
    }
    std::fs::write(&file, lines).unwrap();
    let (advice, output) = advise(&["--file", file.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(advice[0]["layout"], "subset:10", "{}", advice[0]);
    assert!(
        advice[0]["reason"]
            .as_str()
            .unwrap()
            .contains("hand-made window")
    );
    assert_eq!(advice[1]["time_key"], "at");
    let bucket = advice[1]["layout"].as_str().unwrap();
    assert!(bucket.starts_with("bucket:"), "{}", advice[1]);
    assert_eq!(advice[2]["time_key"], "at");
    assert_eq!(advice[2]["layout"], "embed", "{}", advice[2]);
    // The application's own word wins: it shows only the newest 3.
    let newest = [
        "--file",
        file.to_str().unwrap(),
        "--reads-newest",
        "recent_reviews=3",
    ];
    let (advice, _) = advise(&newest);
    assert_eq!(advice[0]["layout"], "subset:3");
    // Reads given as keys replace the Zipf stream; the text output names each field.
    let reads = dir.path().join("reads.txt");
    std::fs::write(&reads, "1\n2\n\n3\n1\n").unwrap();
    let text = skewdb(&[
        "advise",
        "--file",
        file.to_str().unwrap(),
        "--reads",
        reads.to_str().unwrap(),
    ]);
    assert!(text.status.success(), "{text:?}");
    let text = stdout(&text);
    assert!(
        text.contains("advice: --array recent_reviews=subset:10"),
        "{text}"
    );
    assert!(text.contains("predicted page cache at 64.0 MiB"), "{text}");
}

#[test]
fn advise_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    std::fs::write(&file, "{\"_id\":1,\"a\":[1,2]}\n").unwrap();
    let file = file.to_str().unwrap();
    // Neither a file nor a database; a budget that is no byte count: usage errors.
    assert_eq!(skewdb(&["advise"]).status.code(), Some(2));
    let output = skewdb(&["advise", "--file", file, "--budget", "lots"]);
    assert_eq!(output.status.code(), Some(2));
    for bad in [
        vec!["advise", "--file", file, "--reads-newest", "a"],
        vec!["advise", "--file", file, "--reads-newest", "a=0"],
        vec!["advise", "--file", "/nonexistent/in.json"],
        vec!["advise", "--file", file, "--reads", "/nonexistent/keys"],
        vec!["advise", "--file", "-"],
    ] {
        let output = skewdb(&bad);
        assert_eq!(output.status.code(), Some(1), "{bad:?}: {output:?}");
        assert!(!output.stderr.is_empty());
    }
    // A database that does not exist.
    let missing = dir.path().join("none");
    let output = skewdb(&["advise", missing.to_str().unwrap(), "c"]);
    assert_eq!(output.status.code(), Some(1));
    // Documents without arrays: nothing to advise, said so.
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, "{\"_id\":1,\"n\":2}\nnot json\n").unwrap();
    let output = skewdb(&["advise", "--file", plain.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout(&output).contains("no array field"));
    assert!(
        stdout(&output).starts_with("1 documents left out"),
        "{output:?}"
    );
}

#[test]
fn writes_to_an_imported_collection_take_extended_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    std::fs::write(&file, "{\"_id\":1,\"name\":\"a\",\"tags\":[\"x\"]}\n").unwrap();
    let db = dir.path().join("db");
    assert!(
        import(&db, &file, &["--array", "tags=outlier:1"])
            .status
            .success()
    );
    let db = db.to_str().unwrap();
    let oid = r#"{"$oid":"65f0a1b2c3d4e5f6a7b8c9d0"}"#;
    let ok = |args: &[&str]| {
        let output = skewdb(args);
        assert!(output.status.success(), "{args:?}: {output:?}");
    };
    ok(&[
        "put",
        db,
        "c",
        oid,
        r#"{"_id":{"$oid":"65f0a1b2c3d4e5f6a7b8c9d0"},"n":{"$numberLong":"5"}}"#,
    ]);
    ok(&[
        "push",
        db,
        "c",
        oid,
        "tags",
        r#"{"k":{"$date":"2024-01-01T00:00:00Z"}}"#,
    ]);
    ok(&["push", db, "c", oid, "tags", "plain words"]);
    ok(&["push", db, "c", "1", "tags", "7", "--key", "9"]);
    ok(&["remove", db, "c", "1", "tags", "9"]);
    let exported = stdout(&skewdb(&["export", db, "c", "--canonical"]));
    let expected = concat!(
        r#"{"_id":{"$numberInt":"1"},"name":"a","tags":["x"]}"#,
        "\n",
        r#"{"_id":{"$oid":"65f0a1b2c3d4e5f6a7b8c9d0"},"n":{"$numberLong":"5"},"tags":[{"k":{"$date":{"$numberLong":"1704067200000"}}},"plain words"]}"#,
        "\n"
    );
    assert_eq!(exported, expected);
    ok(&["del", db, "c", oid]);
    assert_eq!(stdout(&skewdb(&["export", db, "c"])).lines().count(), 1);
    // A body that is no document is refused, nothing written.
    for body in ["not json", "[1,2]", r#"{"a":{"$oid":"zz"}}"#] {
        let output = skewdb(&["--json", "put", db, "c", "2", body]);
        assert_eq!(output.status.code(), Some(1), "{body}");
        let error: serde_json::Value = serde_json::from_slice(&output.stderr).unwrap();
        assert_eq!(error["kind"], "invalid_input", "{body}");
    }
    assert_eq!(stdout(&skewdb(&["export", db, "c"])).lines().count(), 1);
}

/// The README's "Coming from MongoDB" commands, on the files it names.
#[test]
fn the_readme_example_runs_as_shown() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mongo");
    let (products, reviews) = (example.join("products.json"), example.join("reviews.json"));
    let (advice, output) = advise(&["--file", products.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(advice[0]["layout"], "subset:3");
    // Six parents sit in the root page: no request, no hit ratio.
    let prediction = &advice[1]["prediction"];
    assert_eq!(prediction["advised"]["requests"], 0);
    assert!(prediction["advised"]["hit_ratio"].is_null());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shop.db");
    let output = skewdb(&[
        "import",
        db.to_str().unwrap(),
        "--collection",
        "products",
        "--file",
        products.to_str().unwrap(),
        "--array",
        "recent_reviews=subset:3",
        "--item-key",
        "at",
        "--measure",
        "stars",
        "--drop",
        "review_count",
        "--children",
        reviews.to_str().unwrap(),
        "--parent-field",
        "product_id",
        "--into",
        "recent_reviews",
    ]);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout(&output).starts_with(
        "imported 6 documents (62 items, 49 of them children; 13 children already embedded"
    ));
    let inline = stdout(&skewdb(&[
        "export",
        db.to_str().unwrap(),
        "products",
        "--inline-only",
    ]));
    let kettle: serde_json::Value = serde_json::from_str(inline.lines().next().unwrap()).unwrap();
    assert_eq!(kettle["name"], "Kettle");
    assert_eq!(kettle["recent_reviews_count"], 40);
    // The window is what the file embedded, less the count the engine now keeps.
    let original: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&products)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(kettle["recent_reviews"], original["recent_reviews"]);
}

#[test]
fn a_json_array_file_imports_as_its_lines_do() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines.json");
    std::fs::write(&lines, CANONICAL).unwrap();
    let array = dir.path().join("array.json");
    let documents: Vec<&str> = CANONICAL.lines().collect();
    std::fs::write(&array, format!("[\n{}\n]\n", documents.join(",\n"))).unwrap();
    let args = ["--array", "reviews=subset:1", "--item-key", "reviews=at"];
    let (from_lines, from_array) = (dir.path().join("a"), dir.path().join("b"));
    assert!(import(&from_lines, &lines, &args).status.success());
    let mut with_flag = args.to_vec();
    with_flag.push("--json-array");
    let output = import(&from_array, &array, &with_flag);
    assert!(output.status.success(), "{output:?}");
    let export = |db: &Path| {
        stdout(&skewdb(&[
            "export",
            db.to_str().unwrap(),
            "c",
            "--canonical",
        ]))
    };
    assert_eq!(export(&from_array), export(&from_lines));
    // Not an array, or not JSON: refused as line 1.
    for (text, said) in [
        ("{\"_id\":1}", "not a JSON array"),
        ("[{\"_id\":1},", "not a JSON array"),
    ] {
        std::fs::write(&array, text).unwrap();
        let output = import(&dir.path().join("c"), &array, &["--json-array"]);
        assert_eq!(output.status.code(), Some(1), "{text}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(
            stderr.contains("line 1") && stderr.contains(said),
            "{stderr}"
        );
    }
}

/// A copy of `tests/data/before-mapping/db` in a new temporary directory.
fn before_mapping() -> (tempfile::TempDir, String) {
    let image = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/before-mapping/db");
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(image).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let db = dir.path().to_str().unwrap().to_string();
    (dir, db)
}

/// What the tool prints for the image (`tests/data/before-mapping/README.md`).
fn before_mapping_printed(db: &str) -> String {
    let mut printed = String::new();
    for args in [
        &["export", db, "sensors"][..],
        &["export", db, "products"],
        &["get", db, "plain", "k1"],
        &["items", db, "plain", "k1", "tags"],
    ] {
        let output = skewdb(args);
        assert!(output.status.success(), "{args:?}: {output:?}");
        printed += &stdout(&output);
    }
    printed
}

#[test]
fn a_database_written_before_document_mappings_reads_as_it_did() {
    let (_dir, db) = before_mapping();
    let expected = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/before-mapping/expected.txt"),
    )
    .unwrap();
    assert_eq!(before_mapping_printed(&db), expected);
    let verified = skewdb(&["verify", &db]);
    assert!(verified.status.success(), "{verified:?}");
    // Written to with today's tool, then read again: the old documents as they were.
    let pushed = skewdb(&["push", &db, "plain", "k1", "tags", "blue", "--key", "4"]);
    assert!(pushed.status.success(), "{pushed:?}");
    let compacted = skewdb(&["compact", &db]);
    assert!(compacted.status.success(), "{compacted:?}");
    let again = before_mapping_printed(&db);
    assert!(again.starts_with(&expected[..expected.find("key:").unwrap()]));
    assert!(again.ends_with("3\t1.5\tred\n4\t-\tblue\n"), "{again}");
}

#[test]
fn a_backup_written_before_document_mappings_restores_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let backup =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/before-mapping/db.backup");
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let restored = skewdb(&["restore", backup.to_str().unwrap(), db]);
    assert!(restored.status.success(), "{restored:?}");
    let expected = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/before-mapping/expected.txt"),
    )
    .unwrap();
    assert_eq!(before_mapping_printed(db), expected);
}

/// Sensors imported with an item-key field and a measure, as in the issue that found
/// later writes stored without them; the database path.
fn imported_sensors(dir: &Path) -> String {
    let file = dir.join("sensors.json");
    std::fs::write(
        &file,
        concat!(
            r#"{"_id":{"$oid":"65a000000000000000000901"},"site":"north","readings":["#,
            r#"{"t":{"$date":"2024-01-01T00:00:00Z"},"temp":18},"#,
            r#"{"t":{"$date":"2024-01-02T00:00:00Z"},"temp":19}]}"#,
            "\n"
        ),
    )
    .unwrap();
    let db = dir.join("db");
    let (db_text, file) = (db.to_str().unwrap(), file.to_str().unwrap());
    let output = skewdb(&[
        "import",
        db_text,
        "--collection",
        "sensors",
        "--file",
        file,
        "--array",
        "readings=bucket:2",
        "--item-key",
        "t",
        "--measure",
        "temp",
    ]);
    assert!(output.status.success(), "{output:?}");
    db_text.to_string()
}

const SENSOR: &str = r#"{"$oid":"65a000000000000000000901"}"#;

/// A write the tool must refuse as `invalid_input` with `said` in its message.
fn refused(args: &[&str], said: &str) {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let output = skewdb(&with_json);
    assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
    let error: serde_json::Value = serde_json::from_slice(&output.stderr).unwrap();
    assert_eq!(error["kind"], "invalid_input", "{args:?}: {error}");
    let message = error["error"].as_str().unwrap();
    assert!(message.contains(said), "{args:?}: {message}");
    assert!(
        !message.contains("BSON error") && !message.contains("a Array"),
        "{message}"
    );
}

#[test]
fn writes_after_an_import_apply_its_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let db = imported_sensors(dir.path());
    let exported = || stdout(&skewdb(&["export", &db, "sensors"]));
    let before = exported();
    // The element's "t" is the item's key and its "temp" the measure, as the import read them.
    let pushed = skewdb(&[
        "push",
        &db,
        "sensors",
        SENSOR,
        "readings",
        r#"{"t":{"$date":"2024-01-03T00:00:00Z"},"temp":20}"#,
    ]);
    assert!(pushed.status.success(), "{pushed:?}");
    // A key given beside the element agrees with it or is refused.
    let agreeing = skewdb(&[
        "push",
        &db,
        "sensors",
        SENSOR,
        "readings",
        r#"{"t":{"$date":"2024-01-04T00:00:00Z"},"temp":21}"#,
        "--key",
        "1704326400000",
    ]);
    assert!(agreeing.status.success(), "{agreeing:?}");
    let items = stdout(&skewdb(&["items", &db, "sensors", SENSOR, "readings"]));
    let keys: Vec<&str> = items
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "1704067200000",
            "1704153600000",
            "1704240000000",
            "1704326400000"
        ]
    );
    assert!(items.contains("1704240000000\ttemp=20\t"), "{items}");
    let after = exported();
    assert!(
        after.contains(r#"{"t":{"$date":"2024-01-03T00:00:00Z"},"temp":20}"#),
        "{after}"
    );
    let written = exported();
    // Each of these is refused and changes nothing.
    let push = |payload: &'static str| ["push", &db, "sensors", SENSOR, "readings", payload];
    refused(&push(r#"{"a":"#), "is not Extended JSON");
    refused(&push(r#"{"temp":20}"#), "no item key field \"t\"");
    refused(
        &push(r#"{"t":"soon","temp":20}"#),
        "not a date or an integer",
    );
    refused(
        &push(r#"{"t":{"$date":"not a date"},"temp":1}"#),
        "{\"$date\":\"not a date\"}",
    );
    refused(&push(r#"{"t":5,"temp":"hot"}"#), "measure \"temp\"");
    let mut with_key = push(r#"{"t":{"$date":"2024-01-05T00:00:00Z"},"temp":1}"#).to_vec();
    with_key.extend(["--key", "5"]);
    refused(
        &with_key,
        "the item key given, 5, is not the element's \"t\"",
    );
    let mut with_value = push(r#"{"t":{"$date":"2024-01-05T00:00:00Z"},"temp":1}"#).to_vec();
    with_value.extend(["--value", "3"]);
    refused(&with_value, "are its elements' fields temp");
    let put = |body: &'static str| ["put", &db, "sensors", SENSOR, body];
    refused(&put(r#"{"_id":"other"}"#), r#"the body's "_id" is "other""#);
    refused(&put(r#"{"site":"x""#), "is not Extended JSON");
    refused(&put("[1]"), "the body is an array, not a document");
    refused(&put("words"), "the body is a string, not a document");
    refused(
        &put(r#"{"readings":[{"t":1}]}"#),
        "the elements of an array field are its items",
    );
    refused(
        &put(r#"{"readings":5}"#),
        "is a 32-bit integer, not an array",
    );
    refused(
        &["push", &db, "sensors", r#"{"$oid":"zz"}"#, "readings", "{}"],
        "invalid character 'z'",
    );
    assert_eq!(exported(), written);
    // A body without its key field gets the key as `_id`, first; one with it, as given.
    let put = skewdb(&["put", &db, "sensors", SENSOR, r#"{"site":"east"}"#]);
    assert!(put.status.success(), "{put:?}");
    let line = exported();
    assert!(
        line.starts_with(
            r#"{"_id":{"$oid":"65a000000000000000000901"},"site":"east","readings":["#
        ),
        "{line}"
    );
    let put = skewdb(&[
        "put",
        &db,
        "sensors",
        "7",
        r#"{"_id":7.0,"site":"west","readings":[]}"#,
    ]);
    assert!(put.status.success(), "{put:?}");
    assert!(exported().contains(r#"{"_id":7.0,"site":"west","readings":[]}"#));
    assert_ne!(before, after);
}

#[test]
fn exec_lines_on_an_imported_collection_apply_its_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let db = imported_sensors(dir.path());
    let input = concat!(
        r#"{"op":"push","coll":"sensors","key":{"$oid":"65a000000000000000000901"},"field":"readings","payload":{"t":{"$date":"2024-01-03T00:00:00Z"},"temp":20}}"#,
        "\n",
        r#"{"op":"put","coll":"sensors","key":"k2","body":{"site":"south"}}"#,
        "\n",
        r#"{"op":"commit"}"#,
        "\n",
        // Each batch below holds one refused line: nothing of it is applied.
        r#"{"op":"put","coll":"sensors","key":"k3","body":{"_id":"other"}}"#,
        "\n",
        r#"{"op":"commit"}"#,
        "\n",
        r#"{"op":"put","coll":"sensors","key":"k4","body":"{\"site\":1}"}"#,
        "\n",
        r#"{"op":"commit"}"#,
        "\n",
        r#"{"op":"push","coll":"sensors","key":"k2","field":"readings","payload":{"temp":1}}"#,
        "\n",
        r#"{"op":"commit"}"#,
        "\n",
        r#"{"op":"push","coll":"sensors","key":"k2","field":"readings","payload":{"t":1,"temp":1},"value":2}"#,
        "\n",
        r#"{"op":"commit"}"#,
        "\n",
        r#"{"op":"put","coll":"sensors","key":{"$oid":"zz"},"body":{}}"#,
        "\n",
        r#"{"op":"commit"}"#,
        "\n",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_skewdb"))
        .args(["exec", &db])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let lines: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0], serde_json::json!({"committed": 1}));
    let errors: Vec<(u64, &str)> = lines[1..]
        .iter()
        .map(|e| (e["line"].as_u64().unwrap(), e["error"].as_str().unwrap()))
        .collect();
    let said = [
        (4, r#"the body's "_id" is "other""#),
        (6, "the body is a string, not a document"),
        (8, "no item key field \"t\""),
        (10, "are its elements' fields temp"),
        (12, "invalid character 'z'"),
    ];
    assert_eq!(errors.len(), said.len(), "{errors:?}");
    for ((line, message), (want_line, want)) in errors.iter().zip(said) {
        assert_eq!(*line, want_line, "{message}");
        assert!(message.contains(want), "{message}");
    }
    let exported = stdout(&skewdb(&["export", &db, "sensors"]));
    assert_eq!(
        exported,
        concat!(
            // Strings sort before ObjectIds, as in MongoDB.
            r#"{"_id":"k2","site":"south"}"#,
            "\n",
            r#"{"_id":{"$oid":"65a000000000000000000901"},"site":"north","readings":[{"t":{"$date":"2024-01-01T00:00:00Z"},"temp":18},{"t":{"$date":"2024-01-02T00:00:00Z"},"temp":19},{"t":{"$date":"2024-01-03T00:00:00Z"},"temp":20}]}"#,
            "\n",
        )
    );
    let items = stdout(&skewdb(&["items", &db, "sensors", SENSOR, "readings"]));
    assert!(items.contains("1704240000000\ttemp=20\t"), "{items}");
}

#[test]
fn a_second_import_reads_documents_as_the_first_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let db = imported_sensors(dir.path());
    let more = dir.path().join("more.json");
    std::fs::write(
        &more,
        r#"{"_id":"s2","readings":[{"t":{"$date":"2024-02-01T00:00:00Z"},"temp":5}]}"#,
    )
    .unwrap();
    let more = more.to_str().unwrap();
    let base = ["import", &db, "--collection", "sensors", "--file", more];
    // Without --array, the recorded map: the item keyed by its date, its measure kept.
    let output = skewdb(&base);
    assert!(output.status.success(), "{output:?}");
    let items = stdout(&skewdb(&["items", &db, "sensors", "s2", "readings"]));
    assert_eq!(
        items.split('\t').take(2).collect::<Vec<_>>(),
        ["1706745600000", "temp=5"]
    );
    // Another mapping is refused, naming both.
    let mut other = base.to_vec();
    other.extend(["--array", "readings=bucket:2", "--measure", "temp"]);
    let output = skewdb(&other);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("readings keyed by t with measures from fields")
            && stderr.contains("asked for readings=bucket:2 [temp], stored as bson, keyed by _id, readings with measures from fields"),
        "{stderr}"
    );
    let mut key_field = base.to_vec();
    key_field.extend(["--key-field", "site"]);
    let output = skewdb(&key_field);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is keyed by field \"_id\", not \"site\""),
        "{stderr}"
    );
}

#[test]
fn a_collection_imported_before_mappings_takes_a_second_import_with_its_flags() {
    let (dir, db) = before_mapping();
    let more = Path::new(dir.path()).join("more.json");
    std::fs::write(
        &more,
        r#"{"_id":"s3","readings":[{"t":{"$date":"2024-02-01T00:00:00Z"},"temp":5}]}"#,
    )
    .unwrap();
    let output = skewdb(&[
        "import",
        &db,
        "--collection",
        "sensors",
        "--file",
        more.to_str().unwrap(),
        "--array",
        "readings=bucket:2:86400000",
        "--item-key",
        "t",
        "--measure",
        "temp",
    ]);
    assert!(output.status.success(), "{output:?}");
    let items = stdout(&skewdb(&["items", &db, "sensors", "s3", "readings"]));
    assert_eq!(
        items.split('\t').take(2).collect::<Vec<_>>(),
        ["2024-02-01T00:00:00Z", "temp=5"]
    );
}

/// Item keys and ranges of a Bucket array with a span take dates (milliseconds since 1970,
/// as the import keys `$date`s); other arrays refuse them by name.
#[test]
fn a_time_series_takes_dates_for_item_keys() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(
        &file,
        concat!(
            r#"{"_id":"s1","readings":[{"t":{"$date":"2024-01-01T00:00:00Z"},"temp":1},"#,
            r#"{"t":{"$date":"2024-01-01T12:00:00Z"},"temp":2},"#,
            r#"{"t":{"$date":"2024-01-02T00:00:00Z"},"temp":3},"#,
            r#"{"t":{"$date":"2024-01-03T06:00:00Z"},"temp":4}],"tags":["a"]}"#,
            "\n"
        ),
    )
    .unwrap();
    let db = dir.path().join("db");
    let output = import(
        &db,
        &file,
        &[
            "--array",
            "readings=bucket:2:86400000",
            "--array",
            "tags=embed",
            "--item-key",
            "readings=t",
            "--measure",
            "readings=temp",
        ],
    );
    assert!(output.status.success(), "{output:?}");
    let db = db.to_str().unwrap();
    let ok = |args: &[&str]| {
        let output = skewdb(args);
        assert!(output.status.success(), "{args:?}: {output:?}");
        stdout(&output)
    };
    let keys = |printed: String| -> Vec<String> {
        printed
            .lines()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    };
    let day = ["items", db, "c", "s1", "readings", "--from", "2024-01-01"];
    let mut first_day = day.to_vec();
    first_day.extend(["--to", "2024-01-01T23:59:59.999Z"]);
    // Printed as dates; JSON keeps the integers and adds the dates beside them.
    assert_eq!(
        keys(ok(&first_day)),
        ["2024-01-01T00:00:00Z", "2024-01-01T12:00:00Z"]
    );
    let mut as_json = vec!["--json"];
    as_json.extend_from_slice(&first_day);
    let items: Vec<serde_json::Value> = ok(&as_json)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(items[1]["key"], 1704110400000i64);
    assert_eq!(items[1]["date"], "2024-01-01T12:00:00Z");
    let summary = ok(&[
        "--json",
        "summary",
        db,
        "c",
        "s1",
        "readings",
        "--from",
        "2024-01-02",
    ]);
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(summary["count"], 2, "{summary}");
    let mut after = day.to_vec();
    after.extend(["--after", "2024-01-02T00:00:00+00:00"]);
    assert_eq!(keys(ok(&after)), ["2024-01-03T06:00:00Z"]);
    assert_eq!(
        ok(&["remove", db, "c", "s1", "readings", "2024-01-01T12:00:00Z"]),
        "removed 1 item\n"
    );
    ok(&[
        "push",
        db,
        "c",
        "s1",
        "readings",
        r#"{"t":{"$date":"2024-01-04T00:00:00Z"},"temp":5}"#,
        "--key",
        "2024-01-04",
    ]);
    let expired = ok(&[
        "--json",
        "expire",
        db,
        "c",
        "readings",
        "2024-01-02T12:00:00Z",
    ]);
    let expired: serde_json::Value = serde_json::from_str(&expired).unwrap();
    assert!(expired["items"].as_u64().unwrap() >= 1, "{expired}");
    // Not a time series: a date is refused, naming the array's layout.
    let refused = skewdb(&[
        "--json",
        "items",
        db,
        "c",
        "s1",
        "tags",
        "--from",
        "2024-01-01",
    ]);
    assert_eq!(refused.status.code(), Some(1));
    let error: serde_json::Value = serde_json::from_slice(&refused.stderr).unwrap();
    assert_eq!(error["kind"], "invalid_input");
    let message = error["error"].as_str().unwrap();
    assert!(
        message.contains("Bucket arrays with a span") && message.contains("embed"),
        "{message}"
    );
    let bad = skewdb(&[
        "--json",
        "items",
        db,
        "c",
        "s1",
        "readings",
        "--from",
        "2024-02-30",
    ]);
    let error: serde_json::Value = serde_json::from_slice(&bad.stderr).unwrap();
    assert!(
        error["error"].as_str().unwrap().contains("RFC 3339"),
        "{error}"
    );
}

/// The advisor names why documents were refused, sets no cap from a handful of documents,
/// and answers a collection `import` did not make as `export` does.
#[test]
fn advice_names_refusals_wants_a_sample_and_reads_only_imported_collections() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    let mut lines = String::new();
    for id in 0..40 {
        let key = match id < 3 {
            true => format!("\"{}\"", "k".repeat(2000)),
            false => id.to_string(),
        };
        let tags: Vec<&str> = (0..id % 5).map(|_| "\"a\"").collect();
        lines += &format!("{{\"_id\":{key},\"tags\":[{}]}}\n", tags.join(","));
    }
    std::fs::write(&file, lines).unwrap();
    let (advice, output) = advise(&["--file", file.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(advice[0]["skipped"], 3, "{advice:?}");
    let prediction = &advice[2]["prediction"];
    for layout in ["advised", "embed"] {
        assert_eq!(prediction[layout]["refused_documents"], 3, "{prediction}");
        let reasons = &prediction[layout]["refusals"];
        assert_eq!(reasons[0]["documents"], 3, "{prediction}");
        let reason = reasons[0]["reason"].as_str().unwrap();
        assert!(
            reason.contains("key of 2001 bytes") && !reason.contains("16 MiB"),
            "{reason}"
        );
    }
    let text = skewdb(&["advise", "--file", file.to_str().unwrap()]);
    let text = stdout(&text);
    assert!(
        text.contains("3 documents refused: key of 2001 bytes, over the 1024 (3)"),
        "{text}"
    );

    // One document in four at 3, the rest at 1: a window would be a guess.
    let few = dir.path().join("few.json");
    let lines: String = (0..4)
        .map(|id| {
            let n = if id == 0 { 3 } else { 1 };
            let r: Vec<&str> = (0..n).map(|_| "\"x\"").collect();
            format!("{{\"_id\":{id},\"r\":[{}]}}\n", r.join(","))
        })
        .collect();
    std::fs::write(&few, lines).unwrap();
    let (advice, output) = advise(&["--file", few.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let field = advice.iter().find(|a| a["field"] == "r").unwrap();
    assert_eq!(field["layout"], "embed", "{field}");
    assert!(
        field["reason"]
            .as_str()
            .unwrap()
            .contains("only 1 of 4 documents stop at 3, too few to take for a cap"),
        "{field}"
    );
    // With enough documents the same shape is a window.
    let many = dir.path().join("many.json");
    let lines: String = (0..40)
        .map(|id| {
            let n = if id % 4 == 0 { 3 } else { 1 };
            let r: Vec<&str> = (0..n).map(|_| "\"x\"").collect();
            format!("{{\"_id\":{id},\"r\":[{}]}}\n", r.join(","))
        })
        .collect();
    std::fs::write(&many, lines).unwrap();
    let (advice, _) = advise(&["--file", many.to_str().unwrap()]);
    let field = advice.iter().find(|a| a["field"] == "r").unwrap();
    assert_eq!(field["layout"], "subset:3", "{field}");

    // A collection of the application's own bytes: what export says.
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    assert!(
        skewdb(&["create", "--bytes", db, "--collection", "plain"])
            .status
            .success()
    );
    for command in [&["export", db, "plain"][..], &["advise", db, "plain"]] {
        let mut args = vec!["--json"];
        args.extend_from_slice(command);
        let output = skewdb(&args);
        assert_eq!(output.status.code(), Some(1), "{command:?}");
        let error: serde_json::Value = serde_json::from_slice(&output.stderr).unwrap();
        assert_eq!(error["kind"], "invalid_input");
        assert!(
            error["error"]
                .as_str()
                .unwrap()
                .contains("holds bytes, not documents"),
            "{error}"
        );
    }
}

/// `advise DB COLL --apply`: the collection, imported under Embed, moves to the layout the
/// advice gives; its reads stay the same; the hit ratio measured on it after the move is
/// printed beside the predicted one, and is near it.
#[test]
fn advise_apply_moves_the_collection_to_the_advice_and_measures_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    let mut state = 11;
    let mut lines = String::new();
    for id in 0..1500 {
        let count = ((1.0 - lcg(&mut state)).powf(-1.0 / 1.2) - 1.0).min(3000.0) as usize;
        let followers: Vec<String> = (0..count)
            .map(|f| format!("\"{:0>100}\"", format!("{id}-{f}")))
            .collect();
        lines += &format!(
            "{{\"_id\":\"u{id:04}\",\"followers\":[{}]}}\n",
            followers.join(",")
        );
    }
    std::fs::write(&file, &lines).unwrap();
    let db = dir.path().join("db");
    let output = import(&db, &file, &["--array", "followers=embed"]);
    assert!(output.status.success(), "{output:?}");
    let db = db.to_str().unwrap();
    let newest = ["--reads-newest", "followers=5"];
    let mut args = vec![db, "c", "--budget", "256KiB", "--apply"];
    args.extend(newest);
    let (advice, output) = advise(&args);
    assert!(output.status.success(), "{output:?}");
    let layout = advice[0]["layout"].as_str().unwrap();
    assert_ne!(layout, "embed", "{advice:?}");
    let applied = &advice[2];
    assert_eq!(applied["applied"][0]["from"], "embed", "{applied}");
    assert_eq!(applied["applied"][0]["to"], layout);
    let predicted = applied["predicted_hit_ratio"].as_f64().unwrap();
    let measured = applied["measured_hit_ratio"].as_f64().unwrap();
    assert!((predicted - measured).abs() < 0.2, "{applied}");
    let collections = stdout(&skewdb(&["collections", db]));
    assert!(
        collections.contains(&format!("followers={layout}")),
        "{collections}"
    );
    assert_eq!(stdout(&skewdb(&["export", db, "c"])), lines);
    assert!(skewdb(&["verify", db]).status.success());
    // Applied again: nothing to move.
    let output = skewdb(&[&["advise"], &args[..]].concat());
    assert!(
        stdout(&output).contains("already has the layout advised"),
        "{output:?}"
    );
}

/// A collection stored with a Subset window is advised for reads of that window (the
/// application said it shows its newest N): `--apply` keeps the window where the same
/// data under `advise --file` without `--reads-newest` would be advised `embed`, and an
/// explicit `--reads-newest` still decides.
#[test]
fn advise_takes_a_stored_subset_window_as_the_reads() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    let mut lines = String::new();
    for id in 0..20 {
        let count = [1, 2, 5, 8, 40, 1, 2, 3, 6, 9][id % 10];
        let reviews: Vec<String> = (0..count)
            .map(|r| format!("{{\"stars\":{},\"text\":\"{:0>200}\"}}", r % 5, r))
            .collect();
        lines += &format!(
            "{{\"_id\":\"p{id}\",\"reviews\":[{}]}}\n",
            reviews.join(",")
        );
    }
    std::fs::write(&file, &lines).unwrap();
    let (from_file, output) = advise(&["--file", file.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(from_file[0]["layout"], "embed", "{from_file:?}");
    let db = dir.path().join("db");
    let output = import(&db, &file, &["--array", "reviews=subset:3"]);
    assert!(output.status.success(), "{output:?}");
    let db = db.to_str().unwrap();
    let (advice, output) = advise(&[db, "c", "--apply"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        advice[0]["reads_newest"],
        serde_json::json!({"field": "reviews", "n": 3, "from_layout": "subset:3"}),
        "{advice:?}"
    );
    assert_eq!(advice[1]["layout"], "subset:3", "{advice:?}");
    let applied = advice.last().unwrap();
    assert_eq!(applied["applied"], serde_json::json!([]), "{applied}");
    assert!(
        applied["measured_hit_ratio"].as_f64().is_some(),
        "{applied}"
    );
    assert!(stdout(&skewdb(&["collections", db])).contains("reviews=subset:3"));
    // Said otherwise, the flag decides and no window is implied.
    let (advice, output) = advise(&[db, "c", "--reads-newest", "reviews=2"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(advice[0]["layout"], "subset:2", "{advice:?}");
}
