//! `skewdb exec`: JSON-line operations from standard input; the ops between two commits
//! form one atomic batch.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use skewdb::testing::SimStorage;
use skewdb::{Batch, Db, NewItem, Options};

use crate::text::bytes_from_json;

/// The longest input line accepted: a record at the limit, base64-encoded, plus room.
const MAX_LINE_BYTES: usize = skewdb::MAX_RECORD_BYTES / 3 * 4 + 64 * 1024;

fn field<'a>(op: &'a Value, name: &str) -> Result<&'a Value, String> {
    op.get(name)
        .ok_or_else(|| format!("missing field {name:?}"))
}

fn string_field<'a>(op: &'a Value, name: &str) -> Result<&'a str, String> {
    field(op, name)?
        .as_str()
        .ok_or_else(|| format!("field {name:?} must be a string"))
}

fn whole_number(value: &Value, name: &str) -> Result<i64, String> {
    value
        .as_i64()
        .ok_or_else(|| format!("field {name:?} must be a whole number"))
}

/// Adds one op to the batch; `Ok(true)` for a commit.
fn parse_line(line: &str, batch: &mut Batch) -> Result<bool, String> {
    let op: Value = serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    match string_field(&op, "op")? {
        "put" => {
            let key = bytes_from_json(field(&op, "key")?)?;
            let body = bytes_from_json(field(&op, "body")?)?;
            batch.put(string_field(&op, "coll")?, key, body);
        }
        "del" => {
            let key = bytes_from_json(field(&op, "key")?)?;
            batch.delete(string_field(&op, "coll")?, key);
        }
        "push" => {
            let key = bytes_from_json(field(&op, "key")?)?;
            let payload = match op.get("payload") {
                Some(payload) => bytes_from_json(payload)?,
                None => Vec::new(),
            };
            let mut item = NewItem::new(payload);
            match op.get("item_key") {
                None | Some(Value::Null) => {}
                Some(key) => item = item.key(whole_number(key, "item_key")?),
            }
            match op.get("value") {
                None | Some(Value::Null) => {}
                Some(value) => {
                    item = item.value(value.as_f64().ok_or("field \"value\" must be a number")?)
                }
            }
            batch.push(
                string_field(&op, "coll")?,
                key,
                string_field(&op, "field")?,
                item,
            );
        }
        "remove" => {
            let key = bytes_from_json(field(&op, "key")?)?;
            let item_key = whole_number(field(&op, "item_key")?, "item_key")?;
            batch.remove(
                string_field(&op, "coll")?,
                key,
                string_field(&op, "field")?,
                item_key,
            );
        }
        "expire" => {
            let key = bytes_from_json(field(&op, "key")?)?;
            let before = whole_number(field(&op, "before")?, "before")?;
            batch.expire_buckets(
                string_field(&op, "coll")?,
                key,
                string_field(&op, "field")?,
                before,
            );
        }
        "commit" => return Ok(true),
        other => return Err(format!("unknown op {other:?}")),
    }
    Ok(false)
}

/// Feeds one input line to the parser, for the fuzz target and its corpus replay: any
/// bytes, no panic; an accepted line adds exactly one op to the batch (none for a commit),
/// a refused one adds nothing.
pub fn fuzz_line(data: &[u8]) {
    static DB: OnceLock<Db> = OnceLock::new();
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let db = DB.get_or_init(|| {
        Db::open_with_storage(Arc::new(SimStorage::new()), Options::new())
            .expect("a database in memory opens")
    });
    let mut batch = db.batch();
    match parse_line(line, &mut batch) {
        Ok(true) => assert_eq!(batch.len(), 0, "a commit line added an op"),
        Ok(false) => assert_eq!(batch.len(), 1, "an accepted line added no op"),
        Err(_) => assert_eq!(batch.len(), 0, "a refused line added an op"),
    }
}

/// Runs the loop; exit status 1 when any line or batch failed.
pub fn run(db: &Db, input: impl BufRead, output: &mut impl Write) -> ExitCode {
    let mut committed = 0u64;
    let mut failed = false;
    let mut batch = db.batch();
    // Set by a bad line: the rest of its batch is read but not applied.
    let mut batch_failed = false;
    let report = |output: &mut dyn Write, line: usize, message: &str| {
        eprintln!("skewdb: error: line {line}: {message}");
        let _ = writeln!(output, "{}", json!({"error": message, "line": line}));
        let _ = output.flush();
    };
    for (index, line) in input.lines().enumerate() {
        let number = index + 1;
        let line = match line {
            Ok(line) => line,
            Err(error) => {
                report(output, number, &format!("cannot read input: {error}"));
                failed = true;
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > MAX_LINE_BYTES {
            report(
                output,
                number,
                &format!(
                    "line of {} bytes over the limit of {MAX_LINE_BYTES}",
                    line.len()
                ),
            );
            failed = true;
            batch_failed = true;
            continue;
        }
        match parse_line(&line, &mut batch) {
            Ok(false) => {}
            Ok(true) => {
                let ready = std::mem::replace(&mut batch, db.batch());
                if std::mem::take(&mut batch_failed) {
                    continue;
                }
                match ready.commit() {
                    Ok(()) => {
                        committed += 1;
                        let _ = writeln!(output, "{}", json!({"committed": committed}));
                        let _ = output.flush();
                    }
                    Err(error) => {
                        report(output, number, &error.to_string());
                        failed = true;
                    }
                }
            }
            Err(message) => {
                report(output, number, &message);
                failed = true;
                batch_failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
