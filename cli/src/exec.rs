//! `skewdb exec`: JSON-line operations from standard input; the ops between two commits
//! form one atomic batch. Input is strict: an unknown field, a duplicate key, a wrong type
//! or a value out of range is an error naming the line and the field, and drops that
//! line's batch.

use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, Write};
use std::process::ExitCode;

use bson::Bson;
use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde_json::json;
use serde_json::value::RawValue;
use skewdb::{Batch, CollectionSpec, Db, NewItem, bson_key};
// Bytes as the input writes them: a string (its UTF-8) or `{"base64": "..."}`, read alike
// by the cluster's `exec`.
use skewdb_raft::api::JsonBytes;

use crate::failure::Failure;
use crate::mapped::{Mapped, Stated, with_stated};
use crate::mongo;

/// The longest input line accepted: a record at the limit, base64-encoded, plus room.
const MAX_LINE_BYTES: usize = skewdb::MAX_RECORD_BYTES / 3 * 4 + 64 * 1024;

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

impl Fields {
    /// Field `name` when present (JSON `null` counts as absent), read as Extended JSON.
    fn extjson(&mut self, name: &str) -> Result<Option<Bson>, Failure> {
        let Some(at) = self.0.iter().position(|(field, _)| field == name) else {
            return Ok(None);
        };
        let (_, raw) = self.0.remove(at);
        match mongo::parse_extjson(raw.get()) {
            Ok(Bson::Null) => Ok(None),
            Ok(value) => Ok(Some(value)),
            Err(e) => Err(Failure::invalid_input(format!(
                "field {name:?} is not Extended JSON: {e}"
            ))),
        }
    }

    fn required_extjson(&mut self, name: &str) -> Result<Bson, Failure> {
        self.extjson(name)?
            .ok_or_else(|| Failure::invalid_input(format!("missing field {name:?}")))
    }
}

/// A parent key, checked against its limit on its own line: bytes, or for a collection
/// stored as `bson` an Extended JSON key value.
fn parent_key(fields: &mut Fields, mapped: Option<&Mapped>) -> Result<Vec<u8>, Failure> {
    let key = match mapped {
        None => fields.required::<JsonBytes>("key")?.0,
        Some(_) => {
            let value = fields.required_extjson("key")?;
            bson_key::encode(&value)
                .map_err(|e| Failure::invalid_input(format!("field \"key\": {e}")))?
        }
    };
    if key.len() > skewdb::MAX_KEY_BYTES {
        return Err(Failure::new(
            "key_too_large",
            format!(
                "field \"key\": key of {} bytes exceeds the limit of {} bytes",
                key.len(),
                skewdb::MAX_KEY_BYTES
            ),
        ));
    }
    Ok(key)
}

/// Adds one op to the batch; `Ok(true)` for a commit. Every field is checked: an unknown
/// or repeated one, a wrong type or a value out of range is an error naming the field.
/// Keys, bodies and payloads of a collection stored as `bson` are Extended JSON, read
/// through its document map as `put` and `push` read them.
/// A collection created by the batch being read (`created`, by name) maps the lines after
/// its creation as it will once the batch commits.
fn parse_line(
    line: &str,
    db: &Db,
    batch: &mut Batch,
    created: &mut HashMap<String, CollectionSpec>,
) -> Result<bool, Failure> {
    let mut fields: Fields = serde_json::from_str(line)
        .map_err(|e| Failure::invalid_input(format!("invalid JSON: {e}")))?;
    let op: String = fields.required("op")?;
    if op == "commit" {
        fields.finish(&op)?;
        return Ok(true);
    }
    if op == "drop" || op == "alter" {
        return schema_change(&op, fields, db, batch).map(|()| false);
    }
    if op == "create" {
        return create(fields, batch, created).map(|()| false);
    }
    if !OPS.contains(&op.as_str()) {
        return Err(Failure::invalid_input(format!(
            "unknown op {op:?} (put, del, push, remove, expire, create, alter, drop, commit)"
        )));
    }
    let coll: String = fields.required("coll")?;
    // A collection that does not exist is refused by the commit, as before any map.
    let collection = db.collection(&coll).ok();
    let spec = match created.get(&coll) {
        Some(spec) => Some(spec),
        None => collection.as_ref().map(|c| c.spec()),
    };
    let mapped = spec.and_then(Mapped::of);
    let key = parent_key(&mut fields, mapped.as_ref())?;
    let refused = |message: String| Failure::invalid_input(message);
    match op.as_str() {
        "put" => {
            let body = match &mapped {
                None => fields.required::<JsonBytes>("body")?.0,
                Some(mapped) => {
                    let body = fields.required_extjson("body")?;
                    mapped.body(&key, body).map_err(refused)?
                }
            };
            fields.finish(&op)?;
            batch.put(&coll, key, body);
        }
        "del" => {
            fields.finish(&op)?;
            batch.delete(&coll, key);
        }
        "push" => {
            let field: String = fields.required("field")?;
            let mut stated = Stated {
                item_key: fields.optional("item_key")?,
                value: None,
                measures: Vec::new(),
            };
            if let Some(value) = fields.optional("value")? {
                stated.value = Some(crate::failure::finite(value, "field \"value\"")?);
            }
            let measures: Option<Fields> = fields.optional("measures")?;
            for (name, value) in measures.map(|m| m.0).unwrap_or_default() {
                let what = format!("measure {name:?}");
                let value: f64 = serde_json::from_str(value.get()).map_err(|e| {
                    Failure::invalid_input(format!("{what}: {}", without_position(&e)))
                })?;
                stated
                    .measures
                    .push((name, crate::failure::finite(value, &what)?));
            }
            let item = match &mapped {
                None => {
                    let payload: Option<JsonBytes> = fields.optional("payload")?;
                    with_stated(
                        NewItem::new(payload.map(|p| p.0).unwrap_or_default()),
                        stated,
                    )
                }
                Some(mapped) => {
                    let element = match fields.extjson("payload")? {
                        Some(element) => element,
                        None => mapped.bare_element(&field, &mut stated).map_err(refused)?,
                    };
                    mapped.item(&field, &element, stated).map_err(refused)?
                }
            };
            fields.finish(&op)?;
            batch.push(&coll, key, &field, item);
        }
        "remove" => {
            let field: String = fields.required("field")?;
            let item_key: i64 = fields.required("item_key")?;
            fields.finish(&op)?;
            batch.remove(&coll, key, &field, item_key);
        }
        "expire" => {
            let field: String = fields.required("field")?;
            let before: i64 = fields.required("before")?;
            fields.finish(&op)?;
            batch.expire_buckets(&coll, key, &field, before);
        }
        other => unreachable!("op {other:?} is one of OPS"),
    }
    Ok(false)
}

/// An array field of an `exec` create op, as the cluster's `exec` spells it too (but
/// `item_key`, a document field, which a cluster's collections of bytes do not have).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArrayField {
    field: String,
    /// As `skewdb create` spells it.
    layout: String,
    #[serde(default)]
    measures: Vec<String>,
    /// A span in the keys' units.
    #[serde(default)]
    rollup: Option<i64>,
    /// The element field holding an item's key (`create --item-key`).
    #[serde(default)]
    item_key: Option<String>,
}

/// Adds a collection's creation to the batch: `{"op":"create","coll":..,"key_field":..,
/// "arrays":[{"field":..,"layout":..,"measures":[..],"rollup":SPAN,"item_key":..},..]}`
/// (all but `coll` optional) makes a collection of documents, as `skewdb create` does;
/// `"bytes":true` one of the application's bytes (`create --bytes`), which takes no
/// `key_field` or `item_key`. As [`skewdb::Db::create_collection`] creates it: nothing when
/// it exists with the same schema, the batch refused when its schema differs.
fn create(
    mut fields: Fields,
    batch: &mut Batch,
    created: &mut HashMap<String, CollectionSpec>,
) -> Result<(), Failure> {
    let coll: String = fields.required("coll")?;
    let arrays: Vec<ArrayField> = fields.optional("arrays")?.unwrap_or_default();
    let bytes: bool = fields.optional("bytes")?.unwrap_or(false);
    let key_field: Option<String> = fields.optional("key_field")?;
    fields.finish("create")?;
    let mut spec = CollectionSpec::new(&coll);
    let mut item_keys = Vec::new();
    let mut declared = Vec::new();
    for array in &arrays {
        let layout = crate::item_key::layout(&array.layout).map_err(|e| {
            Failure::invalid_input(format!(
                "array {:?}: layout {:?}: {e}",
                array.field, array.layout
            ))
        })?;
        spec = match array.measures.is_empty() {
            true => spec.array(&array.field, layout),
            false => {
                declared.push(array.field.as_str());
                spec.array_with_measures(&array.field, layout, &array.measures)
            }
        };
        if let Some(span) = array.rollup {
            spec = spec.rollup(&array.field, span);
        }
        if let Some(name) = &array.item_key {
            item_keys.push(format!("{}={name}", array.field));
        }
    }
    if bytes {
        if key_field.is_some() || !item_keys.is_empty() {
            return Err(Failure::invalid_input(
                "a collection of bytes (\"bytes\": true) has no document fields: \
                 \"key_field\" and \"item_key\" are for a collection of documents",
            ));
        }
    } else {
        let key_field = key_field.as_deref().unwrap_or("_id");
        spec = crate::schema::of_documents(spec, key_field, &item_keys, &declared)?;
    }
    created.insert(coll, spec.clone());
    batch.create_collection(spec);
    Ok(())
}

/// Adds a schema change to the batch: `{"op":"drop","coll":..}`, or `{"op":"alter",
/// "coll":.., "rename":.., "add_array":["FIELD=LAYOUT",..], "drop_array":["FIELD",..],
/// "add_measure":["FIELD=NAME",..], "set_layout":["FIELD=LAYOUT",..],
/// "set_rollup":["FIELD=SPAN",..]}` with at least one change.
fn schema_change(op: &str, mut fields: Fields, db: &Db, batch: &mut Batch) -> Result<(), Failure> {
    let coll: String = fields.required("coll")?;
    if op == "drop" {
        fields.finish(op)?;
        batch.drop_collection(&coll);
        return Ok(());
    }
    let changes = crate::schema::Changes {
        rename: fields.optional("rename")?,
        drop_arrays: fields.optional("drop_array")?.unwrap_or_default(),
        add_arrays: fields.optional("add_array")?.unwrap_or_default(),
        add_measures: fields.optional("add_measure")?.unwrap_or_default(),
        set_layouts: fields.optional("set_layout")?.unwrap_or_default(),
        set_rollups: fields.optional("set_rollup")?.unwrap_or_default(),
    };
    fields.finish(op)?;
    let names = [
        "field \"add_array\"",
        "field \"add_measure\"",
        "field \"set_layout\"",
        "field \"set_rollup\"",
    ];
    let current = db.collection(&coll).ok();
    let alteration = crate::schema::alteration(changes, names, current.as_ref().map(|c| c.spec()))?;
    if alteration.is_empty() {
        return Err(Failure::invalid_input(
            "an \"alter\" op needs rename, add_array, drop_array, add_measure, set_layout or \
             set_rollup"
                .to_string(),
        ));
    }
    batch.alter_collection(&coll, alteration);
    Ok(())
}

/// The ops that name a collection and a parent key.
const OPS: [&str; 5] = ["put", "del", "push", "remove", "expire"];

/// Parses one input line into `batch`, as `exec` does: `Ok(true)` for a commit, the
/// message of a refused line as `Err`. For the fuzz target (`skewdb-tests`'s `exec_line`);
/// not part of the supported API.
#[doc(hidden)]
pub fn parse_input_line(line: &str, db: &Db, batch: &mut Batch) -> Result<bool, String> {
    parse_line(line, db, batch, &mut HashMap::new()).map_err(|failure| failure.message)
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
    // Collections the batch being read creates.
    let mut created = HashMap::new();
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
        match parse_line(line, db, &mut batch, &mut created) {
            Ok(false) => batch_lines += 1,
            Ok(true) => {
                batch_lines = 0;
                created.clear();
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
