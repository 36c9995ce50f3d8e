//! `skewdb import`: `mongoexport` output (JSON lines, or one JSON array) into a collection
//! stored as `bson`, each named array field split into items under its layout.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use bson::{Bson, Document};
use skewdb::{CollectionSpec, Db, DocumentFormat, Layout, NewItem, bson_key};

use crate::failure::Failure;
use crate::mongo;

/// One `--array` field with where its items' keys and measures come from.
#[derive(Clone, Debug)]
pub struct ArrayField {
    pub field: String,
    pub layout: Layout,
    /// The element field whose value (a date or an integer) keys each item; `None`: push order.
    pub item_key: Option<String>,
    /// Element fields whose numbers are the array's measures, in order.
    pub measures: Vec<String>,
}

/// What to import and how.
#[derive(Clone, Debug)]
pub struct Import {
    pub collection: String,
    pub key_field: String,
    pub arrays: Vec<ArrayField>,
    pub drop: Vec<String>,
    pub stop_on_error: bool,
    /// Source documents per atomic batch.
    pub batch_documents: usize,
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    pub documents: u64,
    pub items: u64,
    /// Documents refused, each with its line (1-based) and why.
    pub refused: Vec<(u64, String)>,
}

/// One source document, parsed and checked: nothing of it is written unless all of it is.
struct Unit {
    line: u64,
    key: Vec<u8>,
    body: Document,
    /// Per array field (in spec order): the item of each element.
    items: Vec<Vec<NewItem>>,
}

impl Import {
    fn spec(&self) -> CollectionSpec {
        let mut spec = CollectionSpec::new(&self.collection).stored_as(DocumentFormat::Bson);
        for array in &self.arrays {
            spec = match array.measures.is_empty() {
                true => spec.array(&array.field, array.layout),
                false => spec.array_with_measures(&array.field, array.layout, &array.measures),
            };
        }
        spec
    }

    fn unit(&self, line: u64, mut document: Document) -> Result<Unit, String> {
        let key_value = document
            .get(&self.key_field)
            .ok_or_else(|| format!("no key field {:?}", self.key_field))?;
        let key = bson_key::encode(key_value)?;
        if key.len() > skewdb::MAX_KEY_BYTES {
            return Err(format!(
                "key of {} bytes, over the {}",
                key.len(),
                skewdb::MAX_KEY_BYTES
            ));
        }
        for field in &self.drop {
            document.remove(field);
        }
        let mut items = Vec::with_capacity(self.arrays.len());
        for array in &self.arrays {
            let elements = match document.get_mut(&array.field) {
                None => Vec::new(),
                Some(Bson::Array(elements)) => std::mem::take(elements),
                Some(other) => {
                    return Err(format!(
                        "field {:?} is a {:?}, not an array",
                        array.field,
                        other.element_type()
                    ));
                }
            };
            let mut new = Vec::with_capacity(elements.len());
            for (at, element) in elements.iter().enumerate() {
                new.push(item(array, element).map_err(|e| format!("{}[{at}]: {e}", array.field))?);
            }
            items.push(new);
        }
        Ok(Unit {
            line,
            key,
            body: document,
            items,
        })
    }
}

/// An element's item: its key and measures from the fields the array names.
fn item(array: &ArrayField, element: &Bson) -> Result<NewItem, String> {
    let mut item = NewItem::new(mongo::element_payload(element)?);
    let field = |name: &str| match element {
        Bson::Document(d) => d.get(name),
        _ => None,
    };
    if let Some(name) = &array.item_key {
        let key = match field(name) {
            Some(Bson::DateTime(at)) => at.timestamp_millis(),
            Some(Bson::Int32(v)) => *v as i64,
            Some(Bson::Int64(v)) => *v,
            Some(Bson::Double(v)) if v.fract() == 0.0 && v.abs() < 9.2e18 => *v as i64,
            Some(other) => {
                return Err(format!(
                    "item key {name:?} is {other}, not a date or an integer"
                ));
            }
            None => return Err(format!("no item key field {name:?}")),
        };
        item = item.key(key);
    }
    for name in &array.measures {
        let value = match field(name) {
            None | Some(Bson::Null) => continue,
            Some(Bson::Int32(v)) => *v as f64,
            Some(Bson::Int64(v)) => *v as f64,
            Some(Bson::Double(v)) if v.is_finite() => *v,
            Some(other) => return Err(format!("measure {name:?} is {other}, not a finite number")),
        };
        item = item.measure(name, value);
    }
    Ok(item)
}

/// Merges a later document's body into an earlier one's: its fields set in place, new ones
/// appended (the pattern arrays' empty placeholders kept where they first stood).
fn merge(into: &mut Document, from: Document) {
    for (field, value) in from {
        match into.get_mut(&field) {
            Some(Bson::Array(existing)) if existing.is_empty() && value == Bson::Array(vec![]) => {}
            Some(slot) => *slot = value,
            None => {
                into.insert(field, value);
            }
        }
    }
}

/// Reads `mongoexport` documents: one per line, or (`json_array`) one JSON array of them.
/// Each is `(line, document or why not)`.
pub fn documents(
    input: impl BufRead + 'static,
    json_array: bool,
) -> Box<dyn Iterator<Item = (u64, Result<Document, String>)>> {
    fn document(value: serde_json::Value) -> Result<Document, String> {
        match Bson::try_from(value).map_err(|e| e.to_string())? {
            Bson::Document(d) => Ok(d),
            other => Err(format!("a {:?}, not a document", other.element_type())),
        }
    }
    if json_array {
        let parsed: Result<Vec<serde_json::Value>, String> =
            serde_json::from_reader(input).map_err(|e| format!("not a JSON array: {e}"));
        return match parsed {
            Ok(values) => Box::new(
                values
                    .into_iter()
                    .enumerate()
                    .map(|(at, v)| (at as u64 + 1, document(v))),
            ),
            Err(e) => Box::new(std::iter::once((1, Err(e)))),
        };
    }
    Box::new(
        input
            .lines()
            .enumerate()
            .map(|(at, line)| (at as u64 + 1, line))
            .filter(|(_, line)| !matches!(line, Ok(l) if l.trim().is_empty()))
            .map(|(at, line)| {
                let parsed = line.map_err(|e| e.to_string()).and_then(|line| {
                    serde_json::from_str(&line).map_err(|e| format!("not JSON: {e}"))
                });
                (at, parsed.and_then(document))
            }),
    )
}

/// Imports `documents` into `db`; `progress` hears the documents done so far.
pub fn run(
    db: &Db,
    import: &Import,
    documents: impl Iterator<Item = (u64, Result<Document, String>)>,
    mut progress: impl FnMut(u64),
) -> Result<Imported, Failure> {
    let spec = match db.collection(&import.collection) {
        Ok(existing) if import.arrays.is_empty() => existing.spec().clone(),
        _ => import.spec(),
    };
    if spec.document_format() != DocumentFormat::Bson {
        return Err(Failure::invalid_input(format!(
            "collection {:?} was not made by import: its documents are not stored as BSON",
            import.collection
        )));
    }
    let collection = db.create_collection(spec.clone())?;
    let import = &Import {
        arrays: spec
            .arrays()
            .iter()
            .map(|a| {
                let given = import.arrays.iter().find(|g| g.field == a.field);
                ArrayField {
                    field: a.field.clone(),
                    layout: a.layout,
                    item_key: given.and_then(|g| g.item_key.clone()),
                    measures: given.map(|g| g.measures.clone()).unwrap_or_default(),
                }
            })
            .collect(),
        ..import.clone()
    };
    let fresh = collection.scan(..)?.next().is_none();
    let mut state = State {
        db,
        collection: &collection,
        fresh,
        seen: HashSet::new(),
        done: Imported::default(),
    };
    let mut pending = Vec::new();
    for (line, document) in documents {
        match document.and_then(|d| import.unit(line, d)) {
            Ok(unit) => pending.push(unit),
            Err(reason) => state.refuse(import, line, reason)?,
        }
        if pending.len() >= import.batch_documents {
            state.commit(import, std::mem::take(&mut pending))?;
            progress(state.done.documents + state.done.refused.len() as u64);
        }
    }
    state.commit(import, pending)?;
    progress(state.done.documents + state.done.refused.len() as u64);
    Ok(state.done)
}

struct State<'a> {
    db: &'a Db,
    collection: &'a skewdb::Collection,
    /// The collection held nothing when the import began: a key not seen yet is new.
    fresh: bool,
    seen: HashSet<Vec<u8>>,
    done: Imported,
}

impl State<'_> {
    fn refuse(&mut self, import: &Import, line: u64, reason: String) -> Result<(), Failure> {
        if import.stop_on_error {
            return Err(Failure::invalid_input(format!("line {line}: {reason}")));
        }
        self.done.refused.push((line, reason));
        Ok(())
    }

    /// Commits `units` as one batch; when the batch is refused, each unit alone, so that a
    /// bad one is reported and the others land.
    fn commit(&mut self, import: &Import, units: Vec<Unit>) -> Result<(), Failure> {
        if units.is_empty() {
            return Ok(());
        }
        match self.try_commit(import, &units) {
            Ok(()) => Ok(()),
            Err(error) if units.len() == 1 => self.refuse(import, units[0].line, error.to_string()),
            Err(_) => {
                for unit in units {
                    self.commit(import, vec![unit])?;
                }
                Ok(())
            }
        }
    }

    fn try_commit(&mut self, import: &Import, units: &[Unit]) -> skewdb::Result<()> {
        let mut bodies: HashMap<&[u8], Document> = HashMap::new();
        let mut order: Vec<&[u8]> = Vec::new();
        for unit in units {
            let key = unit.key.as_slice();
            match bodies.get_mut(key) {
                Some(body) => merge(body, unit.body.clone()),
                None => {
                    let mut body = None;
                    if (!self.fresh || self.seen.contains(key))
                        && let Some(stored) = self.collection.get(key)?
                    {
                        body = mongo::body_document(stored.body()).ok();
                    }
                    let body = match body {
                        Some(mut stored) => {
                            merge(&mut stored, unit.body.clone());
                            stored
                        }
                        None => unit.body.clone(),
                    };
                    bodies.insert(key, body);
                    order.push(key);
                }
            }
        }
        let mut batch = self.db.batch();
        let mut items = 0;
        for key in &order {
            let bytes = bodies[key].to_vec().map_err(|e| skewdb::Error::Codec {
                codec: "bson",
                reason: e.to_string(),
            })?;
            batch.put(&import.collection, key, bytes);
        }
        for unit in units {
            for (array, new) in import.arrays.iter().zip(&unit.items) {
                for item in new {
                    batch.push(&import.collection, &unit.key, &array.field, item.clone());
                    items += 1;
                }
            }
        }
        batch.commit()?;
        self.seen.extend(order.iter().map(|k| k.to_vec()));
        self.done.documents += units.len() as u64;
        self.done.items += items;
        Ok(())
    }
}
