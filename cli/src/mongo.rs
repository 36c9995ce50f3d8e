//! MongoDB's documents in a collection stored as `bson`: how an array element becomes an
//! item's payload and back, how keys, bodies and payloads print (Extended JSON, relaxed or
//! canonical, field order kept), and how a key is read from the command line. The bytes:
//! `format-spec/records.md`, "BSON keys, bodies and payloads".

use bson::{Bson, Document};
use serde_json::Value;
use skewdb::{CollectionSpec, DocumentFormat, bson_key};

use crate::text;

/// The field name a payload wraps an element in when the element is no plain document.
const WRAPPED: &str = "";

/// An array element as an item's payload: the element itself when it is a document that
/// does not look wrapped, else `{"": element}`.
pub fn element_payload(element: &Bson) -> Result<Vec<u8>, String> {
    let wrapped;
    let document = match element {
        Bson::Document(document) if !looks_wrapped(document) => document,
        other => {
            wrapped = bson::doc! { WRAPPED: other.clone() };
            &wrapped
        }
    };
    document.to_vec().map_err(|e| e.to_string())
}

fn looks_wrapped(document: &Document) -> bool {
    document.len() == 1 && document.contains_key(WRAPPED)
}

/// The array element an item's payload holds.
pub fn payload_element(payload: &[u8]) -> Result<Bson, String> {
    let mut document = body_document(payload)?;
    if looks_wrapped(&document) {
        Ok(document.remove(WRAPPED).expect("checked"))
    } else {
        Ok(Bson::Document(document))
    }
}

/// A body (or payload) as the BSON document it holds.
pub fn body_document(bytes: &[u8]) -> Result<Document, String> {
    Document::from_reader(bytes).map_err(|e| format!("not a BSON document: {e}"))
}

/// Extended JSON v2 (canonical or relaxed) text as the BSON value it stands for. Objects
/// with a `$` key (`$oid`, `$numberLong`, ...) are read by `bson` (`$date` in its two
/// common forms directly); plain objects, arrays and scalars are built straight from the
/// parser, as `bson` builds them (an integer is an Int32 when it fits, else an Int64, else
/// a Double), with no `serde_json::Value` in between.
pub fn parse_extjson(text: &str) -> Result<Bson, String> {
    read_value(serde_json::Deserializer::from_str(text))
}

/// [`parse_extjson`] of everything `reader` holds (one `--json-array` file).
pub fn read_extjson(reader: impl std::io::Read) -> Result<Bson, String> {
    read_value(serde_json::Deserializer::from_reader(reader))
}

/// One value from `parser`, and nothing after it.
fn read_value<'de, R: serde_json::de::Read<'de>>(
    mut parser: serde_json::Deserializer<R>,
) -> Result<Bson, String> {
    use serde::de::DeserializeSeed;
    let value = ExtJson
        .deserialize(&mut parser)
        .map_err(|e| e.to_string())?;
    parser.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// One Extended JSON value read from a parser as BSON.
struct ExtJson;

impl<'de> serde::de::DeserializeSeed<'de> for ExtJson {
    type Value = Bson;

    fn deserialize<D: serde::Deserializer<'de>>(self, parser: D) -> Result<Bson, D::Error> {
        parser.deserialize_any(self)
    }
}

fn integer(int: i64) -> Bson {
    match i32::try_from(int) {
        Ok(small) => Bson::Int32(small),
        Err(_) => Bson::Int64(int),
    }
}

impl<'de> serde::de::Visitor<'de> for ExtJson {
    type Value = Bson;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an Extended JSON value")
    }

    fn visit_bool<E>(self, flag: bool) -> Result<Bson, E> {
        Ok(Bson::Boolean(flag))
    }

    fn visit_i64<E>(self, int: i64) -> Result<Bson, E> {
        Ok(integer(int))
    }

    fn visit_u64<E>(self, int: u64) -> Result<Bson, E> {
        Ok(i64::try_from(int).map_or(Bson::Double(int as f64), integer))
    }

    fn visit_f64<E>(self, float: f64) -> Result<Bson, E> {
        Ok(Bson::Double(float))
    }

    fn visit_str<E>(self, text: &str) -> Result<Bson, E> {
        Ok(Bson::String(text.to_string()))
    }

    fn visit_string<E>(self, text: String) -> Result<Bson, E> {
        Ok(Bson::String(text))
    }

    fn visit_unit<E>(self) -> Result<Bson, E> {
        Ok(Bson::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Bson, A::Error> {
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(value) = seq.next_element_seed(ExtJson)? {
            values.push(value);
        }
        Ok(Bson::Array(values))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Bson, A::Error> {
        let mut document = Document::new();
        while let Some(name) = map.next_key::<String>()? {
            if name.starts_with('$') {
                // A `$` object (or a plain one with a `$` key, which bson refuses): the
                // whole object goes to bson, the fields read so far as they were.
                let mut object = match Bson::Document(document).into_canonical_extjson() {
                    Value::Object(object) => object,
                    _ => serde_json::Map::new(),
                };
                let value: Value = map.next_value()?;
                let next = map.next_key::<String>()?;
                if object.is_empty()
                    && next.is_none()
                    && let Some(date) = date(&name, &value)
                {
                    return Ok(date);
                }
                object.insert(name, value);
                if let Some(name) = next {
                    object.insert(name, map.next_value()?);
                }
                while let Some((name, value)) = map.next_entry::<String, Value>()? {
                    object.insert(name, value);
                }
                let shown = Value::Object(object.clone()).to_string();
                return Bson::try_from(Value::Object(object))
                    .map_err(|e| serde::de::Error::custom(refused_extjson(&shown, &e)));
            }
            let value = map.next_value_seed(ExtJson)?;
            document.insert(name, value);
        }
        Ok(Bson::Document(document))
    }
}

/// Why bson refused `$`-object `shown`, in a reader's words rather than the library's
/// ("BSON error. Kind: ...").
fn refused_extjson(shown: &str, error: &bson::error::Error) -> String {
    let reason = match (&error.kind, &error.message) {
        (bson::error::ErrorKind::ObjectId { kind, .. }, _) => kind.to_string(),
        (_, Some(message)) => message.clone(),
        (kind, None) => kind.to_string(),
    };
    format!("{shown}: {reason}")
}

/// `{"$date": ...}` in its two common forms, canonical (`{"$numberLong": "ms"}`) and relaxed
/// (an RFC 3339 string, which `bson` parses), read without the general path: a time series
/// has one in every reading, and the general path cost most of an import's parsing. Any
/// other form is `None`, left to `bson`.
fn date(name: &str, value: &Value) -> Option<Bson> {
    if name != "$date" {
        return None;
    }
    let millis = match value {
        Value::String(text) => {
            return bson::DateTime::parse_rfc3339_str(text)
                .ok()
                .map(Bson::DateTime);
        }
        Value::Object(body) if body.len() == 1 => {
            body.get("$numberLong")?.as_str()?.parse().ok()?
        }
        _ => return None,
    };
    Some(Bson::DateTime(bson::DateTime::from_millis(millis)))
}

/// A value as Extended JSON v2, relaxed or canonical; field order kept.
pub fn extjson(value: Bson, canonical: bool) -> Value {
    if canonical {
        value.into_canonical_extjson()
    } else {
        value.into_relaxed_extjson()
    }
}

/// How a collection's keys, bodies and payloads print.
#[derive(Clone, Copy, Debug)]
pub enum Shown {
    /// As bytes: UTF-8 text, or base64.
    Bytes,
    /// As Extended JSON of the BSON they hold.
    Bson { canonical: bool },
}

impl Shown {
    /// How `spec`'s collection prints, `canonical` asked or not.
    pub fn of(spec: &CollectionSpec, canonical: bool) -> Shown {
        match spec.document_format() {
            DocumentFormat::Bson => Shown::Bson { canonical },
            _ => Shown::Bytes,
        }
    }

    fn value(self, bytes: &[u8], decode: fn(&[u8]) -> Result<Bson, String>) -> Value {
        match self {
            Shown::Bytes => text::bytes_json(bytes),
            // Bytes that do not hold what the format says print as bytes, never fail a read.
            Shown::Bson { canonical } => match decode(bytes) {
                Ok(value) => extjson(value, canonical),
                Err(_) => text::bytes_json(bytes),
            },
        }
    }

    pub fn key(self, key: &[u8]) -> Value {
        self.value(key, bson_key::decode)
    }

    pub fn body(self, body: &[u8]) -> Value {
        self.value(body, |b| body_document(b).map(Bson::Document))
    }

    pub fn payload(self, payload: &[u8]) -> Value {
        self.value(payload, payload_element)
    }

    fn text(self, value: Value, bytes: &[u8]) -> String {
        match self {
            Shown::Bytes => text::display(bytes),
            Shown::Bson { .. } => value.to_string(),
        }
    }

    pub fn key_text(self, key: &[u8]) -> String {
        self.text(self.key(key), key)
    }

    pub fn body_text(self, body: &[u8]) -> String {
        self.text(self.body(body), body)
    }

    pub fn payload_text(self, payload: &[u8]) -> String {
        self.text(self.payload(payload), payload)
    }
}

/// A value as given on the command line: Extended JSON (`42`, `"abc"`, `{"$oid": "..."}`),
/// or, when the text is no JSON and does not begin as JSON's strings, objects and arrays
/// do, the text as a string. Text that begins as JSON and is not is refused, not stored
/// as the string it happens to be.
pub fn value_arg(what: &str, text: &str) -> Result<Bson, String> {
    match parse_extjson(text) {
        Ok(value) => Ok(value),
        Err(e) if text.trim_start().starts_with(['{', '[', '"']) => {
            Err(format!("{what} {text:?} is not Extended JSON: {e}"))
        }
        Err(_) => Ok(Bson::String(text.to_string())),
    }
}

/// A parent key as given on the command line, for a collection stored as `bson`
/// ([`value_arg`]).
pub fn key_arg(text: &str) -> Result<Vec<u8>, String> {
    let value = value_arg("key", text)?;
    bson_key::encode(&value).map_err(|e| format!("key {text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_round_trip_through_payloads() {
        let elements = [
            Bson::Document(bson::doc! {"a": 1, "b": "x"}),
            Bson::Int32(5),
            Bson::String("tag".into()),
            Bson::Array(vec![Bson::Int64(1), Bson::Null]),
            // A document that looks like a wrapped element is wrapped itself.
            Bson::Document(bson::doc! {"": 3}),
            Bson::Document(bson::doc! {}),
        ];
        for element in elements {
            let payload = element_payload(&element).unwrap();
            assert_eq!(payload_element(&payload).unwrap(), element);
        }
        // A plain document is stored as itself, so a typed BSON reader decodes it.
        let plain = bson::doc! {"stars": 4};
        let payload = element_payload(&Bson::Document(plain.clone())).unwrap();
        assert_eq!(payload, plain.to_vec().unwrap());
    }

    #[test]
    fn extended_json_reads_as_bson_reads_it() {
        let cases = [
            r#"{"a":1,"b":2147483648,"c":1.5,"d":-2147483649,"e":18446744073709551615}"#,
            r#"{"x":{"$oid":"65f0a1b2c3d4e5f6a7b8c9d0"},"y":[{"$date":"2024-01-01T00:00:00Z"},null,true,"s"]}"#,
            r#"{"n":{"m":[{"k":{"$numberLong":"7"}},{"k":{"$numberInt":"7"}}]},"z":{}}"#,
            r#"{"$numberDecimal":"1.10"}"#,
            r#"[1,{"a":{"$binary":{"base64":"AAEC","subType":"04"}}}]"#,
            r#"{"d":{"$date":{"$numberLong":"-5"}},"e":{"$date":"1969-12-31T23:59:59.995Z"}}"#,
            r#"{"d":{"$date":"2024-01-01T10:00:00+02:00"},"e":{"$date":1704067200000}}"#,
        ];
        for case in cases {
            let value: Value = serde_json::from_str(case).unwrap();
            let ours = read_extjson(case.as_bytes()).unwrap();
            let expected = Bson::try_from(value).unwrap();
            assert_eq!(ours, expected, "{case}");
            assert_eq!(parse_extjson(case).unwrap(), expected, "{case}");
        }
        let bad_cases = [
            r#"{"a":{"$oid":"zz"}}"#,
            r#"[{"$numberInt":"x"}]"#,
            r#"{"a":1,"$oid":"65f0a1b2c3d4e5f6a7b8c9d0"}"#,
            r#"{"d":{"$date":{"$numberLong":"x"}}}"#,
            r#"{"d":{"$date":{"$numberLong":"99999999999999999999"}}}"#,
            r#"{"d":{"$date":"yesterday"}}"#,
            r#"{"d":{"$date":{"$numberLong":"1","x":2}}}"#,
            r#"{"d":{"$date":"2024-01-01T00:00:00Z","x":1}}"#,
        ];
        for bad in bad_cases {
            let value: Value = serde_json::from_str(bad).unwrap();
            assert!(read_extjson(bad.as_bytes()).is_err(), "{bad}");
            assert!(parse_extjson(bad).is_err(), "{bad}");
            assert!(Bson::try_from(value).is_err(), "{bad}");
        }
        // A name given twice: the last value stands, as serde_json keeps it, but an invalid
        // earlier value is refused, where serde_json would drop it unread.
        assert_eq!(
            parse_extjson(r#"{"a":1,"a":{"$numberLong":"2"}}"#),
            Ok(Bson::Document(bson::doc! {"a": 2i64}))
        );
        assert!(parse_extjson(r#"{"a":{"$oid":"zz"},"a":1}"#).is_err());
        // Text after the value, or no JSON at all, is refused.
        assert!(parse_extjson("{} {}").is_err());
        assert!(parse_extjson("{").is_err());
    }

    /// JSON text with plain values and the `$` forms, well formed or not.
    fn extjson_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let scalar = prop_oneof![
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            (-1e300f64..1e300).prop_map(|f| format!("{f:?}")),
            "[a-z$]{0,4}".prop_map(|s| format!("{s:?}")),
            Just("null".to_string()),
            Just("true".to_string()),
            (any::<i64>(), "[0-9a-z-]{0,6}").prop_map(|(n, s)| format!(
                r#"{{"$date":{{"$numberLong":"{}"}}}}"#,
                if s.is_empty() { n.to_string() } else { s }
            )),
            "[0-9T:Z-]{0,20}".prop_map(|s| format!(r#"{{"$date":"{s}"}}"#)),
            Just(r#"{"$date":"2024-01-01T00:00:00.5Z"}"#.to_string()),
            any::<i64>().prop_map(|n| format!(r#"{{"$date":{n}}}"#)),
            "[0-9a-f]{22,26}".prop_map(|s| format!(r#"{{"$oid":"{s}"}}"#)),
            "[0-9x-]{1,5}".prop_map(|s| format!(r#"{{"$numberInt":"{s}"}}"#)),
        ];
        scalar.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                // Unique names: of a name given twice serde_json keeps the last value before
                // bson reads it, where the direct parser has read (and may refuse) both.
                prop::collection::btree_map("[a-z$]{0,3}", inner, 0..4).prop_map(|fields| {
                    let fields: Vec<String> =
                        fields.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
                    format!("{{{}}}", fields.join(","))
                }),
            ]
        })
    }

    proptest::proptest! {
        /// The direct parser reads every text as `bson` reads it through serde_json: the
        /// same value, or an error for both.
        #[test]
        fn the_direct_parser_agrees_with_bson(text in extjson_text()) {
            let through_bson = serde_json::from_str::<Value>(&text)
                .map_err(|e| e.to_string())
                .and_then(|v| Bson::try_from(v).map_err(|e| e.to_string()));
            let direct = parse_extjson(&text);
            match (direct, through_bson) {
                (Ok(ours), Ok(theirs)) => proptest::prop_assert_eq!(ours, theirs, "{}", text),
                (Err(_), Err(_)) => {}
                (ours, theirs) => proptest::prop_assert!(
                    false,
                    "{}: direct {:?}, through bson {:?}",
                    text,
                    ours,
                    theirs
                ),
            }
        }
    }

    #[test]
    fn keys_read_from_the_command_line() {
        let oid = "65f0a1b2c3d4e5f6a7b8c9d0";
        let id = bson::oid::ObjectId::parse_str(oid).unwrap();
        let expect = |value: Bson| bson_key::encode(&value).unwrap();
        assert_eq!(
            key_arg(&format!("{{\"$oid\":\"{oid}\"}}")),
            Ok(expect(Bson::ObjectId(id)))
        );
        assert_eq!(key_arg("42"), Ok(expect(Bson::Int64(42))));
        assert_eq!(key_arg("\"42\""), Ok(expect(Bson::String("42".into()))));
        assert_eq!(key_arg("alice"), Ok(expect(Bson::String("alice".into()))));
        assert!(key_arg("{\"a\":1}").unwrap_err().contains("not a key"));
        assert!(key_arg("{\"$oid\":\"zz\"}").is_err());
    }

    #[test]
    fn bytes_that_hold_no_bson_print_as_bytes() {
        let shown = Shown::Bson { canonical: false };
        assert_eq!(shown.body(b"plain"), Value::String("plain".into()));
        let body = bson::doc! {"n": 1}.to_vec().unwrap();
        assert_eq!(shown.body(&body), serde_json::json!({"n": 1}));
        let canonical = Shown::Bson { canonical: true };
        assert_eq!(
            canonical.body(&body),
            serde_json::json!({"n": {"$numberInt": "1"}})
        );
    }
}
