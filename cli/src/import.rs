//! `skewdb import`: `mongoexport` output (JSON lines, or one JSON array) into a collection
//! stored as `bson`, each named array field split into items under its layout.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use bson::{Bson, Document};
use skewdb::{
    ArraySpec, CollectionSpec, Db, DocumentFormat, DocumentMap, ItemQuery, Layout, NewItem,
    bson_key,
};

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

impl ArrayField {
    /// Array `array` of `spec` as the collection's map says its elements are read; an
    /// array the map does not name (or a collection imported before maps were recorded)
    /// has its items in push order and no measures from fields.
    pub fn mapped(spec: &CollectionSpec, array: &ArraySpec) -> ArrayField {
        let map = spec.document_map();
        let measures_from_fields = map.is_some_and(|m| m.measures_from_fields(&array.field));
        ArrayField {
            field: array.field.clone(),
            layout: array.layout,
            item_key: map
                .and_then(|m| m.item_key_field(&array.field))
                .map(str::to_string),
            measures: match measures_from_fields {
                true => array.measures.clone(),
                false => Vec::new(),
            },
        }
    }
}

/// What to import and how.
#[derive(Clone, Debug)]
pub struct Import {
    pub collection: String,
    pub key_field: String,
    pub arrays: Vec<ArrayField>,
    pub drop: Vec<String>,
    pub stop_on_error: bool,
    /// Source documents per atomic batch, at most; a batch also ends once it holds
    /// [`BATCH_ITEMS`] items (a document's items are never split over two batches).
    pub batch_documents: usize,
    /// Where the documents of a second collection go, one item each, when there is one.
    pub children: Option<Children>,
}

/// A second collection whose documents are items of the first's parents: a hand-made
/// overflow collection, or a full history beside an embedded window.
#[derive(Clone, Debug)]
pub struct Children {
    /// The child's field holding its parent's key value; removed from the item.
    pub parent_field: String,
    /// The array field (one of the import's arrays) the children are pushed to.
    pub into: String,
}

/// The items after which a batch is committed: large enough to amortize a commit, small
/// enough that parsing the next batch overlaps storing this one.
pub const BATCH_ITEMS: usize = 20_000;

/// The field whose value names a child, for the deduplication against embedded copies.
const CHILD_ID: &str = "_id";

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    pub documents: u64,
    pub items: u64,
    /// Children pushed (included in `items`).
    pub children: u64,
    /// Children skipped because their parent's array held an element with their `_id`.
    pub duplicates: u64,
    /// Documents refused.
    pub refused: Vec<Refusal>,
}

/// A document the import refused.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    /// It came from the children's file, not the parents'.
    pub child: bool,
    /// Its line (1-based; its place in a `--json-array` file).
    pub line: u64,
    pub reason: String,
}

/// One source document, parsed and checked: nothing of it is written unless all of it is.
struct Unit {
    child: bool,
    line: u64,
    key: Vec<u8>,
    /// The parent's body as BSON; `None` for a child, which only adds an item.
    body: Option<Vec<u8>>,
    /// Per array field (in spec order): the item of each element.
    items: Vec<Vec<NewItem>>,
}

impl Import {
    /// The collection the import makes: its arrays, and the map that says where in a
    /// document its key, each item's key and each item's measures are, recorded so that
    /// later writes read documents as the import did.
    fn spec(&self) -> CollectionSpec {
        let mut map = DocumentMap::new(&self.key_field);
        for array in &self.arrays {
            map = map.array(
                &array.field,
                array.item_key.as_deref(),
                !array.measures.is_empty(),
            );
        }
        self.unmapped_spec().mapped(map)
    }

    /// The collection's arrays and format without the map, as imports made it before
    /// collections recorded their maps.
    fn unmapped_spec(&self) -> CollectionSpec {
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
                        "field {:?} is {}, not an array",
                        array.field,
                        bson_key::type_name(other)
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
            child: false,
            line,
            key,
            body: Some(document.to_vec().map_err(|e| e.to_string())?),
            items,
        })
    }

    /// A child document as the item it adds to its parent's `children.into` array, with
    /// its `_id` (when it has one) for the deduplication.
    fn child_unit(
        &self,
        children: &Children,
        line: u64,
        mut document: Document,
    ) -> Result<(Unit, Option<Vec<u8>>), String> {
        let parent = document
            .remove(&children.parent_field)
            .ok_or_else(|| format!("no parent field {:?}", children.parent_field))?;
        let key = bson_key::encode(&parent)?;
        let at = self
            .arrays
            .iter()
            .position(|a| a.field == children.into)
            .ok_or_else(|| format!("--into {:?} is no array of the collection", children.into))?;
        let id = document.get(CHILD_ID).and_then(element_id);
        let element = Bson::Document(document);
        let new = item(&self.arrays[at], &element)?;
        let mut items = vec![Vec::new(); self.arrays.len()];
        items[at].push(new);
        let unit = Unit {
            child: true,
            line,
            key,
            body: None,
            items,
        };
        Ok((unit, id))
    }
}

/// An element's `_id` as bytes that are equal exactly when MongoDB holds the values equal:
/// numbers by value (`1` and `NumberLong(1)` are one `_id`), other keys by type and bytes.
fn element_id(id: &Bson) -> Option<Vec<u8>> {
    match bson_key::encode(id) {
        Ok(key) => Some([&[0u8][..], &key].concat()),
        // Not a key type (a document, an array): its exact BSON bytes.
        Err(_) => {
            let bytes = bson::doc! { "": id.clone() }.to_vec().ok()?;
            Some([&[1u8][..], &bytes].concat())
        }
    }
}

/// An element's item: its key and measures from the fields the array names.
pub(crate) fn item(array: &ArrayField, element: &Bson) -> Result<NewItem, String> {
    let mut item = NewItem::new(mongo::element_payload(element)?);
    if let Some(name) = &array.item_key {
        item = item.key(element_key(element, name)?);
    }
    for (at, name) in array.measures.iter().enumerate() {
        let value = match element_field(element, name) {
            None | Some(Bson::Null) => continue,
            Some(Bson::Int32(v)) => *v as f64,
            Some(Bson::Int64(v)) => *v as f64,
            Some(Bson::Double(v)) if v.is_finite() => *v,
            Some(other) => return Err(format!("measure {name:?} is {other}, not a finite number")),
        };
        // The first measure is the item's value; naming it would cost a string per item.
        item = match at {
            0 => item.value(value),
            _ => item.measure(name, value),
        };
    }
    Ok(item)
}

/// Field `name` of an element that is a document.
fn element_field<'a>(element: &'a Bson, name: &str) -> Option<&'a Bson> {
    match element {
        Bson::Document(d) => d.get(name),
        _ => None,
    }
}

/// The item key element field `name` holds: a date (its milliseconds) or an integer.
pub(crate) fn element_key(element: &Bson, name: &str) -> Result<i64, String> {
    match element_field(element, name) {
        Some(Bson::DateTime(at)) => Ok(at.timestamp_millis()),
        Some(Bson::Int32(v)) => Ok(i64::from(*v)),
        Some(Bson::Int64(v)) => Ok(*v),
        Some(Bson::Double(v)) if v.fract() == 0.0 && v.abs() < 9.2e18 => Ok(*v as i64),
        Some(other) => Err(format!(
            "item key {name:?} is {other}, not a date or an integer"
        )),
        None => Err(format!("no item key field {name:?}")),
    }
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

/// How an import opens its database: a bulk load, so its batches are buffered and the
/// import makes them durable once, at its end ([`run`] calls `Db::persist`).
pub fn bulk_options() -> skewdb::Options {
    skewdb::Options::new().durability(skewdb::Durability::Buffered)
}

/// Documents read from a file, each `(line, document or why not)`.
pub type Documents = Box<dyn Iterator<Item = (u64, Result<Document, String>)>>;

/// Where an import's documents come from.
pub enum Source {
    /// `mongoexport` text: one document per line, or (`json_array`) one JSON array of them.
    Text {
        input: Box<dyn BufRead + Send>,
        json_array: bool,
    },
    /// Documents already read.
    Parsed(Documents),
}

impl Source {
    /// The documents, each passed through `convert`: on the parsing thread when the source
    /// is lines of text, so that what a document becomes is made beside its parsing while
    /// the caller stores the ones before.
    pub fn convert<T: Send + 'static>(
        self,
        convert: impl Fn(u64, Document) -> Result<T, String> + Send + 'static,
    ) -> Box<dyn Iterator<Item = (u64, Result<T, String>)>> {
        match self {
            Source::Parsed(documents) => {
                Box::new(documents.map(move |(at, d)| (at, d.and_then(|d| convert(at, d)))))
            }
            Source::Text {
                input,
                json_array: true,
            } => match mongo::read_extjson(input) {
                Ok(Bson::Array(values)) => {
                    Box::new(values.into_iter().enumerate().map(move |(at, v)| {
                        let at = at as u64 + 1;
                        (at, document(Ok(v)).and_then(|d| convert(at, d)))
                    }))
                }
                Ok(other) => Box::new(std::iter::once((
                    1,
                    Err(format!("{}, not a JSON array", bson_key::type_name(&other))),
                ))),
                Err(e) => Box::new(std::iter::once((1, Err(format!("not a JSON array: {e}"))))),
            },
            Source::Text {
                input,
                json_array: false,
            } => lines(input, convert),
        }
    }

    /// The documents as they are.
    pub fn documents(self) -> Documents {
        self.convert(|_, d| Ok(d))
    }
}

/// A parsed value that must be a document.
fn document(value: Result<Bson, String>) -> Result<Document, String> {
    match value? {
        Bson::Document(d) => Ok(d),
        other => Err(format!("{}, not a document", bson_key::type_name(&other))),
    }
}

/// JSON lines parsed, and converted, on a thread of their own, a chunk at a time.
fn lines<T: Send + 'static>(
    input: Box<dyn BufRead + Send>,
    convert: impl Fn(u64, Document) -> Result<T, String> + Send + 'static,
) -> Box<dyn Iterator<Item = (u64, Result<T, String>)>> {
    let (sender, receiver) =
        std::sync::mpsc::sync_channel::<Vec<(u64, Result<T, String>)>>(PARSED_CHUNKS_AHEAD);
    std::thread::spawn(move || {
        let mut chunk = Vec::with_capacity(PARSED_CHUNK_DOCUMENTS);
        let mut chunk_bytes = 0;
        for (at, line) in input.lines().enumerate() {
            if matches!(&line, Ok(l) if l.trim().is_empty()) {
                continue;
            }
            let at = at as u64 + 1;
            chunk_bytes += line.as_ref().map_or(0, String::len);
            let parsed = line.map_err(|e| e.to_string()).and_then(|line| {
                document(mongo::parse_extjson(&line).map_err(|e| format!("not JSON: {e}")))
            });
            chunk.push((at, parsed.and_then(|d| convert(at, d))));
            if chunk.len() == PARSED_CHUNK_DOCUMENTS || chunk_bytes >= PARSED_CHUNK_BYTES {
                chunk_bytes = 0;
                let full =
                    std::mem::replace(&mut chunk, Vec::with_capacity(PARSED_CHUNK_DOCUMENTS));
                if sender.send(full).is_err() {
                    return; // The import stopped reading.
                }
            }
        }
        let _ = sender.send(chunk);
    });
    Box::new(receiver.into_iter().flatten())
}

/// Documents (or bytes of them) parsed per chunk handed from the parsing thread, and
/// chunks parsed ahead.
const PARSED_CHUNK_DOCUMENTS: usize = 256;
const PARSED_CHUNK_BYTES: usize = 256 * 1024;
const PARSED_CHUNKS_AHEAD: usize = 8;

/// Imports `documents` into `db`, then, when the import names them, `children`, each an
/// item of its parent; `progress` hears the documents done so far.
pub fn run(
    db: &Db,
    import: &Import,
    documents: Source,
    children: Option<Source>,
    mut progress: impl FnMut(u64),
) -> Result<Imported, Failure> {
    let spec = match db.collection(&import.collection) {
        Ok(existing) if import.arrays.is_empty() => existing.spec().clone(),
        // Imported before collections recorded their maps: the arrays must agree; where
        // items' keys and measures come from is what this import says.
        Ok(existing)
            if existing.spec().document_map().is_none()
                && *existing.spec() == import.unmapped_spec() =>
        {
            existing.spec().clone()
        }
        _ => import.spec(),
    };
    if let Some(map) = spec.document_map()
        && map.key_field() != import.key_field
    {
        return Err(Failure::invalid_input(format!(
            "collection {:?} is keyed by field {:?}, not {:?}: import into it with \
             --key-field {}",
            import.collection,
            map.key_field(),
            import.key_field,
            map.key_field()
        )));
    }
    if spec.document_format() != DocumentFormat::Bson {
        return Err(Failure::invalid_input(format!(
            "collection {:?} holds bytes, not documents (it was made with create --bytes)",
            import.collection
        )));
    }
    if let Some(children) = &import.children
        && spec.arrays().iter().all(|a| a.field != children.into)
    {
        return Err(Failure::invalid_input(format!(
            "--into {:?} names no array of collection {:?} (declare it with --array)",
            children.into, import.collection
        )));
    }
    let collection = db.create_collection(spec.clone())?;
    let import = &Import {
        arrays: spec
            .arrays()
            .iter()
            .map(|a| {
                let given = import.arrays.iter().find(|g| g.field == a.field);
                match (spec.document_map(), given) {
                    (None, Some(given)) => given.clone(),
                    _ => ArrayField::mapped(&spec, a),
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
    let (mut pending, mut pending_items) = (Vec::new(), 0);
    let converter = import.clone();
    let units = documents.convert(move |line, d| converter.unit(line, d));
    for (line, unit) in units {
        match unit {
            Ok(unit) => {
                pending_items += unit.items.iter().map(Vec::len).sum::<usize>();
                pending.push(unit);
            }
            Err(reason) => state.refuse(import, false, line, reason)?,
        }
        if pending.len() >= import.batch_documents || pending_items >= BATCH_ITEMS {
            pending_items = 0;
            state.commit(import, std::mem::take(&mut pending))?;
            progress(state.done_so_far());
        }
    }
    state.commit(import, pending)?;
    progress(state.done_so_far());
    if let (Some(wanted), Some(children)) = (&import.children, children) {
        state.children(import, wanted, children, &mut progress)?;
    }
    // Every batch durable before the import says it is done, whatever the durability.
    db.persist()?;
    Ok(state.done)
}

impl State<'_> {
    fn children(
        &mut self,
        import: &Import,
        wanted: &Children,
        children: Source,
        progress: &mut impl FnMut(u64),
    ) -> Result<(), Failure> {
        let (converter, into) = (import.clone(), wanted.clone());
        let children = children.convert(move |line, d| converter.child_unit(&into, line, d));
        // Per parent: the `_id`s its array holds (read once, then kept up to date), or `None`
        // when there is no such parent.
        let mut ids: HashMap<Vec<u8>, Option<HashSet<Vec<u8>>>> = HashMap::new();
        let mut pending = Vec::new();
        for (line, unit) in children {
            let (unit, id) = match unit {
                Ok(parsed) => parsed,
                Err(reason) => {
                    self.refuse(import, true, line, reason)?;
                    continue;
                }
            };
            let known = match ids.get_mut(&unit.key) {
                Some(known) => known,
                None => {
                    let stored = self.stored_ids(&unit.key, &wanted.into)?;
                    ids.entry(unit.key.clone()).or_insert(stored)
                }
            };
            let Some(known) = known else {
                let reason = format!(
                    "no parent {} in the collection",
                    mongo::Shown::Bson { canonical: false }.key_text(&unit.key)
                );
                self.refuse(import, true, line, reason)?;
                continue;
            };
            if let Some(id) = id
                && !known.insert(id)
            {
                self.done.duplicates += 1;
                continue;
            }
            pending.push(unit);
            if pending.len() >= import.batch_documents {
                self.commit(import, std::mem::take(&mut pending))?;
                progress(self.done_so_far());
            }
        }
        self.commit(import, pending)?;
        progress(self.done_so_far());
        Ok(())
    }

    fn done_so_far(&self) -> u64 {
        self.done.documents + self.done.children + self.done.refused.len() as u64
    }
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
    fn refuse(
        &mut self,
        import: &Import,
        child: bool,
        line: u64,
        reason: String,
    ) -> Result<(), Failure> {
        let refusal = Refusal {
            child,
            line,
            reason,
        };
        if import.stop_on_error {
            return Err(Failure::invalid_input(refusal.to_string()));
        }
        self.done.refused.push(refusal);
        Ok(())
    }

    /// The `_id`s of the elements `key`'s array `field` holds; `None` when there is no
    /// such parent.
    fn stored_ids(&self, key: &[u8], field: &str) -> skewdb::Result<Option<HashSet<Vec<u8>>>> {
        let Some(page) = self.collection.items(key, field, &ItemQuery::new())? else {
            return Ok(None);
        };
        let ids = page
            .items
            .iter()
            .filter_map(|item| match mongo::payload_element(&item.payload) {
                Ok(Bson::Document(element)) => element.get(CHILD_ID).and_then(element_id),
                _ => None,
            })
            .collect();
        Ok(Some(ids))
    }

    /// Commits `units` as one batch; when the batch is refused, each unit alone, so that a
    /// bad one is reported and the others land.
    fn commit(&mut self, import: &Import, units: Vec<Unit>) -> Result<(), Failure> {
        if units.is_empty() {
            return Ok(());
        }
        match self.try_commit(import, &units) {
            Ok(()) => Ok(()),
            Err(error) if units.len() == 1 => {
                self.refuse(import, units[0].child, units[0].line, error.to_string())
            }
            Err(_) => {
                for unit in units {
                    self.commit(import, vec![unit])?;
                }
                Ok(())
            }
        }
    }

    fn try_commit(&mut self, import: &Import, units: &[Unit]) -> skewdb::Result<()> {
        let codec = |e: String| skewdb::Error::Codec {
            codec: "bson",
            reason: e,
        };
        // A parent's body as the batch puts it: a document's own bytes when it is the
        // parent's only one, else the merge of what is stored and every later document.
        enum Body<'a> {
            Bytes(&'a [u8]),
            Merged(Document),
        }
        let mut bodies: HashMap<&[u8], Body> = HashMap::new();
        let mut order: Vec<&[u8]> = Vec::new();
        for unit in units {
            let key = unit.key.as_slice();
            let Some(unit_body) = &unit.body else {
                continue;
            };
            match bodies.get_mut(key) {
                Some(body) => {
                    let mut merged = match body {
                        Body::Bytes(bytes) => mongo::body_document(bytes).map_err(codec)?,
                        Body::Merged(document) => std::mem::take(document),
                    };
                    merge(&mut merged, mongo::body_document(unit_body).map_err(codec)?);
                    *body = Body::Merged(merged);
                }
                None => {
                    let mut stored = None;
                    if !self.fresh || self.seen.contains(key) {
                        stored = self.collection.get_projected(key, &[])?;
                    }
                    let body = match stored.and_then(|s| mongo::body_document(s.body()).ok()) {
                        Some(mut stored) => {
                            merge(&mut stored, mongo::body_document(unit_body).map_err(codec)?);
                            Body::Merged(stored)
                        }
                        None => Body::Bytes(unit_body),
                    };
                    bodies.insert(key, body);
                    order.push(key);
                }
            }
        }
        let mut batch = self.db.batch();
        let mut items = 0;
        for key in &order {
            match &bodies[key] {
                Body::Bytes(bytes) => batch.put(&import.collection, key, bytes),
                Body::Merged(document) => {
                    let bytes = document.to_vec().map_err(|e| codec(e.to_string()))?;
                    batch.put(&import.collection, key, bytes)
                }
            };
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
        let children = units.iter().filter(|u| u.child).count() as u64;
        self.done.documents += units.len() as u64 - children;
        self.done.children += children;
        self.done.items += items;
        Ok(())
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = if self.child { "children " } else { "" };
        write!(f, "{file}line {}: {}", self.line, self.reason)
    }
}
