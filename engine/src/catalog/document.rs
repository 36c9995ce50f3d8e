//! How a collection's documents are stored and mapped: its document format and, for
//! MongoDB's documents, the map from their fields to keys and measures; and the names every
//! spec writes. Their bytes: the collection spec in `format-spec/hot-log.md`.

use bytes::{Buf, BufMut, Bytes};

use crate::limits::widths::u8_len;

/// The longest collection name, in bytes (and the longest name of a field or measure).
pub const MAX_COLLECTION_NAME_BYTES: usize = 255;

/// How a collection's keys, bodies and item payloads are encoded, as its spec records it:
/// the engine stores bytes either way; tools (the command line's `get`, `items`, `scan`,
/// `export`) read the record to print documents rather than bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DocumentFormat {
    /// The application's own bytes (the default).
    #[default]
    Bytes,
    /// MongoDB's: each key a BSON value in the order-keeping encoding of
    /// `skewdb::bson_key` (feature `serde`), each body and item payload a BSON
    /// document, as `skewdb import` writes them.
    Bson,
}

impl DocumentFormat {
    /// The format's name: `bytes` or `bson`.
    pub fn name(self) -> &'static str {
        match self {
            DocumentFormat::Bytes => "bytes",
            DocumentFormat::Bson => "bson",
        }
    }

    pub(super) fn tag(self) -> u8 {
        match self {
            DocumentFormat::Bytes => 0,
            DocumentFormat::Bson => 1,
        }
    }

    pub(super) fn from_tag(tag: u8) -> Result<Self, String> {
        match tag {
            0 => Ok(DocumentFormat::Bytes),
            1 => Ok(DocumentFormat::Bson),
            tag => Err(format!("unknown document format {tag}")),
        }
    }
}

/// How the documents of a collection stored as [`DocumentFormat::Bson`] carry what the
/// engine keeps apart from them, as `skewdb import` read them: the body field whose value
/// is the parent's key, and for each array field the element field whose value (a date or
/// an integer) keys its items and whether its measures are the element fields of their
/// names. The engine only records it; tools apply it to every later write of a document, so
/// that a document written after the import is stored as the import would have stored it.
///
/// ```
/// use skewdb::{CollectionSpec, DocumentFormat, DocumentMap, Layout};
///
/// let hourly = Layout::Bucket { max_items: 360, span: Some(3_600_000) };
/// let spec = CollectionSpec::new("sensors")
///     .stored_as(DocumentFormat::Bson)
///     .array_with_measures("readings", hourly, ["temp"])
///     .mapped(DocumentMap::new("_id").array("readings", Some("t"), true));
/// let map = spec.document_map().expect("mapped");
/// assert_eq!(map.key_field(), "_id");
/// assert_eq!(map.item_key_field("readings"), Some("t"));
/// assert!(map.measures_from_fields("readings"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocumentMap {
    pub(super) key_field: String,
    pub(super) arrays: Vec<ElementFields>,
}

/// What one array field's elements carry (see [`DocumentMap`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ElementFields {
    pub(super) array: String,
    pub(super) item_key: Option<String>,
    pub(super) measures: bool,
}

impl DocumentMap {
    /// A map whose parents are keyed by the value of body field `key_field` (`_id` for
    /// MongoDB's documents), with no array field mapped yet.
    pub fn new(key_field: impl Into<String>) -> Self {
        DocumentMap {
            key_field: key_field.into(),
            arrays: Vec::new(),
        }
    }

    /// Maps array field `array`: its items keyed by the value of element field `item_key`
    /// (`None`: in push order), its measures the element fields of their names when
    /// `measures_from_fields`. Checked when the collection is created: the array must be
    /// one of the collection's, mapped once.
    pub fn array(
        mut self,
        array: impl Into<String>,
        item_key: Option<&str>,
        measures_from_fields: bool,
    ) -> Self {
        self.arrays.push(ElementFields {
            array: array.into(),
            item_key: item_key.map(str::to_string),
            measures: measures_from_fields,
        });
        self
    }

    /// The body field whose value is the parent's key.
    pub fn key_field(&self) -> &str {
        &self.key_field
    }

    fn fields_of(&self, array: &str) -> Option<&ElementFields> {
        self.arrays.iter().find(|a| a.array == array)
    }

    /// The element field whose value keys the items of `array`, if it has one.
    pub fn item_key_field(&self, array: &str) -> Option<&str> {
        self.fields_of(array)?.item_key.as_deref()
    }

    /// Whether the measures of `array` are its elements' fields of their names.
    pub fn measures_from_fields(&self, array: &str) -> bool {
        self.fields_of(array).is_some_and(|a| a.measures)
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        put_name(out, &self.key_field);
        out.put_u8(u8_len(self.arrays.len()));
        for array in &self.arrays {
            put_name(out, &array.array);
            put_name(out, array.item_key.as_deref().unwrap_or(""));
            out.put_u8(u8::from(array.measures));
        }
    }

    pub(super) fn decode(bytes: &mut Bytes) -> Result<Self, String> {
        let key_field = get_name(bytes, "document map")?;
        if !bytes.has_remaining() {
            return Err("document map truncated".to_string());
        }
        let count = bytes.get_u8();
        let mut map = DocumentMap::new(key_field);
        for _ in 0..count {
            let array = get_name(bytes, "document map")?;
            let item_key = get_name(bytes, "document map")?;
            if !bytes.has_remaining() {
                return Err("document map truncated".to_string());
            }
            let measures = match bytes.get_u8() {
                0 => false,
                1 => true,
                flags => return Err(format!("document map flags {flags:#x} unknown")),
            };
            let item_key = (!item_key.is_empty()).then_some(item_key.as_str());
            map = map.array(array, item_key, measures);
        }
        Ok(map)
    }

    /// Checks the map against the collection's array fields, `is_array` saying which names
    /// are theirs.
    pub(super) fn validate(&self, is_array: impl Fn(&str) -> bool) -> Result<(), String> {
        let field_name = |what: &str, name: &str| {
            if name.is_empty() || name.len() > MAX_COLLECTION_NAME_BYTES || name.contains('\0') {
                return Err(format!(
                    "document map: {what} {name:?} is empty, longer than 255 bytes or holds NUL"
                ));
            }
            Ok(())
        };
        field_name("key field", &self.key_field)?;
        for (at, mapped) in self.arrays.iter().enumerate() {
            if !is_array(&mapped.array) {
                return Err(format!(
                    "document map names array field {:?}, which the collection lacks",
                    mapped.array
                ));
            }
            if self.arrays[..at].iter().any(|a| a.array == mapped.array) {
                return Err(format!(
                    "document map maps array field {:?} twice",
                    mapped.array
                ));
            }
            if let Some(item_key) = &mapped.item_key {
                field_name("item key field", item_key)?;
            }
        }
        Ok(())
    }
}

/// A name as a spec writes it: its length in a byte, then its UTF-8.
pub(super) fn put_name(out: &mut Vec<u8>, name: &str) {
    out.put_u8(u8_len(name.len()));
    out.put_slice(name.as_bytes());
}

/// A name written by [`put_name`].
fn get_name(bytes: &mut Bytes, what: &str) -> Result<String, String> {
    if !bytes.has_remaining() {
        return Err(format!("{what} truncated"));
    }
    let len = bytes.get_u8() as usize;
    if bytes.remaining() < len {
        return Err(format!("{what} truncated"));
    }
    String::from_utf8(bytes.split_to(len).to_vec())
        .map_err(|_| format!("{what}: a name is not UTF-8"))
}
