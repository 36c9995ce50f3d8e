//! `skewdb exec`: JSON-line operations from standard input; the ops between two commits
//! form one atomic batch. Input is strict: an unknown field, a duplicate key, a wrong type
//! or a value out of range is an error naming the line and the field, and drops that
//! line's batch.

use std::fmt;
use std::io::{BufRead, Write};
use std::process::ExitCode;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde_json::json;
use serde_json::value::RawValue;
use skewdb::{Batch, Db, NewItem};

use crate::failure::Failure;

/// The longest input line accepted: a record at the limit, base64-encoded, plus room.
const MAX_LINE_BYTES: usize = skewdb::MAX_RECORD_BYTES / 3 * 4 + 64 * 1024;

/// Bytes as the input writes them: a string (its UTF-8) or `{"base64": "..."}`.
struct JsonBytes(Vec<u8>);

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
                crate::text::base64_decode(&encoded)
                    .map(JsonBytes)
                    .map_err(de::Error::custom)
            }
        }

        deserializer.deserialize_any(BytesVisitor)
    }
}

/// The fields of one input line, each still as its JSON text, in input order; a field
/// given twice is refused here (a JSON parser would keep the last silently).
struct Fields(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;

        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut fields: Vec<(String, Box<RawValue>)> = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    if fields.iter().any(|(seen, _)| *seen == name) {
                        return Err(de::Error::custom(format!("duplicate field {name:?}")));
                    }
                    fields.push((name, map.next_value()?));
                }
                Ok(Fields(fields))
            }
        }

        deserializer.deserialize_map(FieldsVisitor)
    }
}

/// A serde_json message without the position inside the value it came from.
fn without_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    match message.rsplit_once(" at line ") {
        Some((message, _)) => message.to_string(),
        None => message,
    }
}

impl Fields {
    /// Field `name` when present (JSON `null` counts as absent), decoded as `T`.
    fn optional<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, Failure> {
        let Some(at) = self.0.iter().position(|(field, _)| field == name) else {
            return Ok(None);
        };
        let (_, raw) = self.0.remove(at);
        serde_json::from_str::<Option<T>>(raw.get()).map_err(|e| {
            Failure::invalid_input(format!("field {name:?}: {}", without_position(&e)))
        })
    }

    fn required<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, Failure> {
        self.optional(name)?
            .ok_or_else(|| Failure::invalid_input(format!("missing field {name:?}")))
    }

    /// Refuses any field the op did not take.
    fn finish(self, op: &str) -> Result<(), Failure> {
        match self.0.first() {
            None => Ok(()),
            Some((name, _)) => Err(Failure::invalid_input(format!(
                "unknown field {name:?} in a {op:?} op"
            ))),
        }
    }
}

/// A parent key, checked against its limit on its own line.
fn parent_key(fields: &mut Fields) -> Result<Vec<u8>, Failure> {
    let key: JsonBytes = fields.required("key")?;
    if key.0.len() > skewdb::MAX_KEY_BYTES {
        return Err(Failure::new(
            "key_too_large",
            format!(
                "field \"key\": key of {} bytes exceeds the limit of {} bytes",
                key.0.len(),
                skewdb::MAX_KEY_BYTES
            ),
        ));
    }
    Ok(key.0)
}

/// Adds one op to the batch; `Ok(true)` for a commit. Every field is checked: an unknown
/// or repeated one, a wrong type or a value out of range is an error naming the field.
fn parse_line(line: &str, batch: &mut Batch) -> Result<bool, Failure> {
    let mut fields: Fields = serde_json::from_str(line)
        .map_err(|e| Failure::invalid_input(format!("invalid JSON: {e}")))?;
    let op: String = fields.required("op")?;
    match op.as_str() {
        "put" => {
            let coll: String = fields.required("coll")?;
            let key = parent_key(&mut fields)?;
            let body: JsonBytes = fields.required("body")?;
            fields.finish(&op)?;
            batch.put(&coll, key, body.0);
        }
        "del" => {
            let coll: String = fields.required("coll")?;
            let key = parent_key(&mut fields)?;
            fields.finish(&op)?;
            batch.delete(&coll, key);
        }
        "push" => {
            let coll: String = fields.required("coll")?;
            let key = parent_key(&mut fields)?;
            let field: String = fields.required("field")?;
            let item_key: Option<i64> = fields.optional("item_key")?;
            let value: Option<f64> = fields.optional("value")?;
            let measures: Option<Fields> = fields.optional("measures")?;
            let payload: Option<JsonBytes> = fields.optional("payload")?;
            fields.finish(&op)?;
            let mut item = NewItem::new(payload.map(|p| p.0).unwrap_or_default());
            if let Some(item_key) = item_key {
                item = item.key(item_key);
            }
            if let Some(value) = value {
                item = item.value(crate::failure::finite(value, "field \"value\"")?);
            }
            for (name, value) in measures.map(|m| m.0).unwrap_or_default() {
                let what = format!("measure {name:?}");
                let value: f64 = serde_json::from_str(value.get()).map_err(|e| {
                    Failure::invalid_input(format!("{what}: {}", without_position(&e)))
                })?;
                item = item.measure(name, crate::failure::finite(value, &what)?);
            }
            batch.push(&coll, key, &field, item);
        }
        "remove" => {
            let coll: String = fields.required("coll")?;
            let key = parent_key(&mut fields)?;
            let field: String = fields.required("field")?;
            let item_key: i64 = fields.required("item_key")?;
            fields.finish(&op)?;
            batch.remove(&coll, key, &field, item_key);
        }
        "expire" => {
            let coll: String = fields.required("coll")?;
            let key = parent_key(&mut fields)?;
            let field: String = fields.required("field")?;
            let before: i64 = fields.required("before")?;
            fields.finish(&op)?;
            batch.expire_buckets(&coll, key, &field, before);
        }
        "commit" => {
            fields.finish(&op)?;
            return Ok(true);
        }
        other => {
            return Err(Failure::invalid_input(format!(
                "unknown op {other:?} (put, del, push, remove, expire, commit)"
            )));
        }
    }
    Ok(false)
}

/// Parses one input line into `batch`, as `exec` does: `Ok(true)` for a commit, the
/// message of a refused line as `Err`. For the fuzz target (`skewdb-tests`'s `exec_line`);
/// not part of the supported API.
#[doc(hidden)]
pub fn parse_input_line(line: &str, batch: &mut Batch) -> Result<bool, String> {
    parse_line(line, batch).map_err(|failure| failure.message)
}

/// Where `exec` reports: acknowledgements and per-line errors on `output`, a line for
/// people (or, with `--json`, one JSON object) on stderr for each error.
struct Reporter<'a, W: Write> {
    output: &'a mut W,
    json: bool,
}

impl<W: Write> Reporter<'_, W> {
    fn error(&mut self, line: usize, failure: &Failure) {
        let value = json!({"error": failure.message, "kind": failure.kind, "line": line});
        if self.json {
            eprintln!("{value}");
        } else {
            eprintln!("skewdb: error: line {line}: {}", failure.message);
        }
        let _ = writeln!(self.output, "{value}");
        let _ = self.output.flush();
    }

    fn committed(&mut self, committed: u64) {
        let _ = writeln!(self.output, "{}", json!({"committed": committed}));
        let _ = self.output.flush();
    }
}

/// Runs the loop; exit status 1 when any line or batch failed, or the input ended inside
/// a batch (which applies nothing of it).
pub fn run(db: &Db, mut input: impl BufRead, output: &mut impl Write, json: bool) -> ExitCode {
    let mut report = Reporter { output, json };
    let mut committed = 0u64;
    let mut failed = false;
    let mut batch = db.batch();
    // Set by a bad line: the rest of its batch is read but not applied.
    let mut batch_failed = false;
    // Lines of the batch being read (bad ones included), to tell an unfinished batch.
    let mut batch_lines = 0usize;
    let mut number = 0usize;
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        match input.read_until(b'\n', &mut bytes) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) => {
                report.error(
                    number + 1,
                    &Failure::new("io", format!("cannot read input: {error}")),
                );
                failed = true;
                break;
            }
        }
        number += 1;
        if bytes.len() > MAX_LINE_BYTES {
            let message = format!(
                "line of {} bytes over the limit of {MAX_LINE_BYTES}",
                bytes.len()
            );
            report.error(number, &Failure::invalid_input(message));
            (failed, batch_failed) = (true, true);
            batch_lines += 1;
            continue;
        }
        let line = match std::str::from_utf8(&bytes) {
            Ok(line) => line,
            Err(error) => {
                let message = format!("line is not UTF-8: {error}");
                report.error(number, &Failure::invalid_input(message));
                (failed, batch_failed) = (true, true);
                batch_lines += 1;
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line, &mut batch) {
            Ok(false) => batch_lines += 1,
            Ok(true) => {
                batch_lines = 0;
                if std::mem::take(&mut batch_failed) {
                    // A bad line refused its batch: what was read of it is discarded.
                    batch = db.batch();
                    continue;
                }
                match batch.commit() {
                    Ok(()) => {
                        committed += 1;
                        report.committed(committed);
                    }
                    Err(error) => {
                        report.error(number, &Failure::from(error));
                        failed = true;
                    }
                }
            }
            Err(failure) => {
                report.error(number, &failure);
                (failed, batch_failed) = (true, true);
                batch_lines += 1;
            }
        }
    }
    if batch_lines > 0 {
        let message = format!(
            "input ended inside a batch ({batch_lines} lines after the last commit): \
             nothing of it was applied"
        );
        report.error(number, &Failure::new("incomplete_input", message));
        failed = true;
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
