//! Writes to a collection stored as `bson`, as `put`, `push` and `exec` take them: Extended
//! JSON read through the collection's document map, so that what is stored is what an
//! import of the same document would have stored, or nothing at all.

use bson::{Bson, Document};
use skewdb::{CollectionSpec, DocumentFormat, NewItem, bson_key};

use crate::import::{self, ArrayField};
use crate::mongo;

/// The body field that keys a collection's documents when its spec records no map (one
/// imported before collections recorded their maps): MongoDB's.
const DEFAULT_KEY_FIELD: &str = "_id";

/// What a write states about an item beside its element: flags on the command line, fields
/// of an `exec` line.
#[derive(Debug, Default)]
pub struct Stated {
    pub item_key: Option<i64>,
    pub value: Option<f64>,
    /// Measures by name, in the order given.
    pub measures: Vec<(String, f64)>,
}

/// A collection stored as `bson`, read through its document map.
pub struct Mapped<'a> {
    spec: &'a CollectionSpec,
}

impl<'a> Mapped<'a> {
    /// `spec`'s map when its documents are stored as `bson`; `None` for a collection of the
    /// application's own bytes.
    pub fn of(spec: &'a CollectionSpec) -> Option<Self> {
        (spec.document_format() == DocumentFormat::Bson).then_some(Mapped { spec })
    }

    /// The body field whose value is a parent's key.
    pub fn key_field(&self) -> &str {
        self.spec
            .document_map()
            .map_or(DEFAULT_KEY_FIELD, |map| map.key_field())
    }

    /// The document a stored body holds: an empty body (a parent a push created, which
    /// has no body of its own) is the document of its key alone.
    pub fn document(&self, key: &[u8], body: &[u8]) -> Result<Document, String> {
        if !body.is_empty() {
            return mongo::body_document(body);
        }
        let mut document = Document::new();
        document.insert(self.key_field(), bson_key::decode(key)?);
        Ok(document)
    }

    /// The body to store under `key`: `body`, a document, with the key in its key field
    /// (added first when absent). Refused when the field holds another value, or when an
    /// array field holds elements: those are items, added by `push`.
    pub fn body(&self, key: &[u8], body: Bson) -> Result<Vec<u8>, String> {
        let Bson::Document(body) = body else {
            return Err(format!(
                "the body is {}, not a document",
                bson_key::type_name(&body)
            ));
        };
        let field = self.key_field();
        let key_value = bson_key::decode(key)?;
        let body = match body.get(field) {
            Some(value) if bson_key::encode(value).ok().as_deref() == Some(key) => body,
            Some(value) => {
                return Err(format!(
                    "the body's {field:?} is {}, but the key is {}",
                    shown(value),
                    shown(&key_value)
                ));
            }
            None => {
                let mut keyed = Document::new();
                keyed.insert(field, key_value);
                keyed.extend(body);
                keyed
            }
        };
        for array in self.spec.arrays() {
            match body.get(&array.field) {
                None => {}
                Some(Bson::Array(elements)) if elements.is_empty() => {}
                Some(Bson::Array(elements)) => {
                    return Err(format!(
                        "the body's {:?} holds {}: the elements of an array field are its \
                         items, added one at a time by push",
                        array.field,
                        match elements.len() {
                            1 => "an element".to_string(),
                            count => format!("{count} elements"),
                        }
                    ));
                }
                Some(other) => {
                    return Err(format!(
                        "the body's {:?} is {}, not an array",
                        array.field,
                        bson_key::type_name(other)
                    ));
                }
            }
        }
        body.to_vec().map_err(|e| format!("the body: {e}"))
    }

    /// The item `element` makes in array field `field`: its key and measures from the
    /// element's fields where the map names them, as the import read them; what the write
    /// states must then agree (a key) or be absent (measures).
    pub fn item(&self, field: &str, element: &Bson, mut stated: Stated) -> Result<NewItem, String> {
        let Some(array) = self.spec.arrays().iter().find(|a| a.field == field) else {
            // Not an array of the collection: the commit refuses it, as for any collection.
            return Ok(with_stated(
                NewItem::new(mongo::element_payload(element)?),
                stated,
            ));
        };
        let fields = ArrayField::mapped(self.spec, array);
        let item_key = fields.item_key.as_deref();
        let measures_from_fields = !fields.measures.is_empty();
        let item = import::item(&fields, element).map_err(|e| format!("the payload: {e}"))?;
        if let Some(name) = item_key
            && let Some(given) = stated.item_key.take()
        {
            let held = import::element_key(element, name)?;
            if given != held {
                return Err(format!(
                    "the item key given, {given}, is not the element's {name:?}, {held}"
                ));
            }
        }
        if measures_from_fields && (stated.value.is_some() || !stated.measures.is_empty()) {
            return Err(format!(
                "the measures of {field:?} are its elements' fields {}: give them there",
                fields.measures.join(", ")
            ));
        }
        Ok(with_stated(item, stated))
    }
}

impl Mapped<'_> {
    /// The element of a push to array `field` that gives no payload, made of what it states:
    /// its item key in the element field that keys the array's items (a date in a time
    /// series, `item_key::keyed_by_time`, else an integer), and its values in the fields of their measures'
    /// names when the array's measures are its elements' fields. What goes into the element
    /// is taken out of `stated`, but for the item key, which the element then agrees with.
    /// A measure the array does not have is refused, and so is an element that would be
    /// empty (an array that keeps neither its item keys nor its values in element fields).
    pub fn bare_element(&self, field: &str, stated: &mut Stated) -> Result<Bson, String> {
        let mut element = Document::new();
        let Some(array) = self.spec.arrays().iter().find(|a| a.field == field) else {
            // Not an array of the collection: the commit refuses it, as for any collection.
            return Ok(Bson::Document(element));
        };
        if let Some((name, _)) = stated
            .measures
            .iter()
            .find(|(n, _)| !array.measures.contains(n))
        {
            return Err(format!(
                "{field:?} has no measure {name:?} (its measures: {})",
                array.measures.join(", ")
            ));
        }
        let fields = ArrayField::mapped(self.spec, array);
        if let (Some(name), Some(key)) = (fields.item_key.as_deref(), stated.item_key) {
            let value = match crate::item_key::keyed_by_time(&array.layout) {
                true => Bson::DateTime(bson::DateTime::from_millis(key)),
                false => Bson::Int64(key),
            };
            element.insert(name, value);
        }
        if !fields.measures.is_empty() {
            if let Some(value) = stated.value.take() {
                element.insert(array.measures[0].clone(), value);
            }
            for (name, value) in std::mem::take(&mut stated.measures) {
                element.insert(name, value);
            }
        }
        if element.is_empty() {
            return Err(format!(
                "an item of a document collection is an Extended JSON element: give it as \
                 PAYLOAD or --payload-file (a push without one makes its element of its \
                 --key and values, when {field:?} keeps them in element fields: create \
                 --item-key, --measures)"
            ));
        }
        Ok(Bson::Document(element))
    }
}

/// `item` with what the write states applied: all of an item's write for a collection of
/// the application's own bytes.
pub fn with_stated(mut item: NewItem, stated: Stated) -> NewItem {
    if let Some(key) = stated.item_key {
        item = item.key(key);
    }
    if let Some(value) = stated.value {
        item = item.value(value);
    }
    for (name, value) in stated.measures {
        item = item.measure(name, value);
    }
    item
}

/// A value as the user would write it: relaxed Extended JSON.
fn shown(value: &Bson) -> String {
    mongo::extjson(value.clone(), false).to_string()
}
