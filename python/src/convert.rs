//! Python values and the bytes skewdb stores: documents as BSON (a `dict` in, a `dict`
//! out), parent keys, item keys and spans (a `datetime` or `timedelta` where the array is a
//! time series), the library's error kinds as exceptions.

use bson::{Bson, Document, RawBsonRef, RawDocument};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use skewdb::{ArraySpec, CollectionSpec, bson_key};
use skewdb_cli::failure::Failure;
use skewdb_cli::item_key::{SpanArg, keyed_by_time};
use skewdb_cli::mapped::Mapped;

use crate::errors;

/// A Python value as BSON: `None`, `bool`, `int` (Int32 when it fits, else Int64), `float`,
/// `str`, `bytes`, `dict` with `str` keys, `list` or `tuple`, `datetime` (UTC when naive).
pub fn to_bson(value: &Bound<'_, PyAny>) -> PyResult<Bson> {
    if value.is_none() {
        return Ok(Bson::Null);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Bson::Boolean(flag.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        let number: i64 = value
            .extract()
            .map_err(|_| PyTypeError::new_err("an int outside the 64-bit range"))?;
        return Ok(match i32::try_from(number) {
            Ok(small) => Bson::Int32(small),
            Err(_) => Bson::Int64(number),
        });
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(Bson::Double(value.extract()?));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Bson::String(text.to_cow()?.to_string()));
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(Bson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes: bytes.as_bytes().to_vec(),
        }));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut document = Document::new();
        for (name, field) in dict.iter() {
            let name = name
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("a document's field names are str"))?;
            document.insert(name.to_cow()?, to_bson(&field)?);
        }
        return Ok(Bson::Document(document));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let elements = value
            .try_iter()?
            .map(|element| to_bson(&element?))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Bson::Array(elements));
    }
    if let Some(millis) = datetime_millis(value)? {
        return Ok(Bson::DateTime(bson::DateTime::from_millis(millis)));
    }
    Err(PyTypeError::new_err(format!(
        "a {} is not a document value (None, bool, int, float, str, bytes, dict, list, \
         datetime)",
        value.get_type().name()?
    )))
}

/// BSON as Python: a document a `dict` (field order kept), an array a `list`, binary
/// `bytes`, a date an aware `datetime` in UTC, integers `int`; an ObjectId its 24 hex
/// digits, a decimal its text, any other type its relaxed Extended JSON text.
pub fn from_bson<'py>(py: Python<'py>, value: &Bson) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Bson::Null | Bson::Undefined => py.None().into_bound(py),
        Bson::Boolean(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Bson::Int32(n) => n.into_pyobject(py)?.into_any(),
        Bson::Int64(n) => n.into_pyobject(py)?.into_any(),
        Bson::Double(x) => x.into_pyobject(py)?.into_any(),
        Bson::String(text) => PyString::new(py, text).into_any(),
        Bson::Binary(binary) => PyBytes::new(py, &binary.bytes).into_any(),
        Bson::Document(document) => document_to_dict(py, document)?.into_any(),
        Bson::Array(elements) => {
            let list = PyList::empty(py);
            for element in elements {
                list.append(from_bson(py, element)?)?;
            }
            list.into_any()
        }
        Bson::DateTime(at) => datetime(py, at.timestamp_millis())?,
        Bson::ObjectId(id) => PyString::new(py, &id.to_hex()).into_any(),
        Bson::Decimal128(decimal) => PyString::new(py, &decimal.to_string()).into_any(),
        other => {
            let text = skewdb_cli::mongo::extjson(other.clone(), false).to_string();
            PyString::new(py, &text).into_any()
        }
    })
}

/// The document of BSON bytes as a `dict`, read in place (no `bson::Document` built on
/// the way).
pub fn bytes_to_dict<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let raw = RawDocument::from_bytes(bytes)
        .map_err(|e| errors::invalid_input(format!("not a BSON document: {e}")))?;
    raw_document(py, raw)
}

fn raw_document<'py>(py: Python<'py>, raw: &RawDocument) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for element in raw.iter() {
        let (name, value) =
            element.map_err(|e| errors::invalid_input(format!("not a BSON document: {e}")))?;
        dict.set_item(PyString::intern(py, name.as_str()), raw_value(py, value)?)?;
    }
    Ok(dict)
}

/// [`from_bson`] of a value read in place.
fn raw_value<'py>(py: Python<'py>, value: RawBsonRef<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        RawBsonRef::Null | RawBsonRef::Undefined => py.None().into_bound(py),
        RawBsonRef::Boolean(flag) => PyBool::new(py, flag).to_owned().into_any(),
        RawBsonRef::Int32(n) => n.into_pyobject(py)?.into_any(),
        RawBsonRef::Int64(n) => n.into_pyobject(py)?.into_any(),
        RawBsonRef::Double(x) => x.into_pyobject(py)?.into_any(),
        RawBsonRef::String(text) => PyString::new(py, text).into_any(),
        RawBsonRef::Binary(binary) => PyBytes::new(py, binary.bytes).into_any(),
        RawBsonRef::DateTime(at) => datetime(py, at.timestamp_millis())?,
        RawBsonRef::Document(document) => raw_document(py, document)?.into_any(),
        RawBsonRef::Array(array) => {
            let list = PyList::empty(py);
            for element in array {
                let element =
                    element.map_err(|e| errors::invalid_input(format!("not a BSON array: {e}")))?;
                list.append(raw_value(py, element)?)?;
            }
            list.into_any()
        }
        // The types shown as text (an ObjectId, a decimal, ...), one value owned.
        other => {
            let owned = Bson::try_from(other)
                .map_err(|e| errors::invalid_input(format!("not a BSON value: {e}")))?;
            from_bson(py, &owned)?
        }
    })
}

pub fn document_to_dict<'py>(py: Python<'py>, document: &Document) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, value) in document {
        dict.set_item(name, from_bson(py, value)?)?;
    }
    Ok(dict)
}

/// What the date conversions use of the `datetime` module, looked up once.
struct Dates {
    datetime: Py<PyAny>,
    timedelta: Py<PyAny>,
    utc: Py<PyAny>,
    epoch: Py<PyAny>,
}

fn dates(py: Python<'_>) -> PyResult<&Dates> {
    static DATES: PyOnceLock<Dates> = PyOnceLock::new();
    DATES.get_or_try_init(py, || {
        let module = py.import("datetime")?;
        let utc = module.getattr("timezone")?.getattr("utc")?;
        let datetime = module.getattr("datetime")?;
        let epoch = datetime.call1((1970, 1, 1, 0, 0, 0, 0, &utc))?;
        Ok(Dates {
            datetime: datetime.unbind(),
            timedelta: module.getattr("timedelta")?.unbind(),
            utc: utc.unbind(),
            epoch: epoch.unbind(),
        })
    })
}

/// Milliseconds since 1970 of a `datetime.datetime` (naive ones taken as UTC); `None` for
/// any other value.
fn datetime_millis(value: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    let py = value.py();
    let dates = dates(py)?;
    if !value.is_instance(dates.datetime.bind(py))? {
        return Ok(None);
    }
    let aware = match value.getattr("tzinfo")?.is_none() {
        true => {
            let kwargs = PyDict::new(py);
            kwargs.set_item("tzinfo", dates.utc.bind(py))?;
            value.call_method("replace", (), Some(&kwargs))?
        }
        false => value.clone(),
    };
    // Whole milliseconds, from the days, seconds and microseconds apart: nothing rounded.
    let delta = aware.call_method1("__sub__", (dates.epoch.bind(py),))?;
    timedelta_millis(&delta).map(Some)
}

/// Milliseconds of a `datetime.timedelta`, floored.
fn timedelta_millis(delta: &Bound<'_, PyAny>) -> PyResult<i64> {
    let days: i64 = delta.getattr("days")?.extract()?;
    let seconds: i64 = delta.getattr("seconds")?.extract()?;
    let micros: i64 = delta.getattr("microseconds")?.extract()?;
    Ok(days * 86_400_000 + seconds * 1000 + micros.div_euclid(1000))
}

/// An aware `datetime` in UTC for milliseconds since 1970.
pub fn datetime(py: Python<'_>, millis: i64) -> PyResult<Bound<'_, PyAny>> {
    let dates = dates(py)?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("milliseconds", millis)?;
    let delta = dates.timedelta.bind(py).call((), Some(&kwargs))?;
    dates.epoch.bind(py).call_method1("__add__", (delta,))
}

/// Whether `value` is a `datetime.timedelta`.
fn is_timedelta(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    value.is_instance(dates(value.py())?.timedelta.bind(value.py()))
}

/// How a collection takes and gives its values: through its document map (a collection of
/// documents) or as the application's bytes.
pub struct Codec<'a> {
    spec: &'a CollectionSpec,
    mapped: Option<Mapped<'a>>,
}

impl<'a> Codec<'a> {
    pub fn of(spec: &'a CollectionSpec) -> Self {
        Codec {
            spec,
            mapped: Mapped::of(spec),
        }
    }

    /// A parent key as stored: any document value in a collection of documents (a `str`,
    /// an `int`, ...), `bytes` or `str` (its UTF-8) in one of bytes.
    pub fn key(&self, key: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        match self.mapped {
            Some(_) => bson_key::encode(&to_bson(key)?).map_err(errors::invalid_input),
            None => raw_bytes(key, "a key"),
        }
    }

    /// A stored parent key as Python: the value it encodes, or `bytes`.
    pub fn key_out<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        match self.mapped {
            Some(_) => from_bson(py, &bson_key::decode(key).map_err(errors::invalid_input)?),
            None => Ok(PyBytes::new(py, key).into_any()),
        }
    }

    /// A body to store under `key`: a `dict` in a collection of documents (its key field
    /// added when absent, and checked when present), `bytes` or `str` in one of bytes.
    pub fn body(&self, key: &[u8], body: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        match &self.mapped {
            Some(mapped) => {
                if !body.is_instance_of::<PyDict>() {
                    return Err(PyTypeError::new_err(format!(
                        "a body of collection {:?} is a dict (a document), not a {}",
                        self.spec.name(),
                        body.get_type().name()?
                    )));
                }
                mapped
                    .body(key, to_bson(body)?)
                    .map_err(errors::invalid_input)
            }
            None => raw_bytes(body, "a body"),
        }
    }

    /// A stored body as Python: a `dict` (of its key alone for a parent a push made),
    /// or `bytes`.
    pub fn body_out<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
        body: &[u8],
    ) -> PyResult<Bound<'py, PyAny>> {
        match &self.mapped {
            Some(_) if !body.is_empty() => Ok(bytes_to_dict(py, body)?.into_any()),
            Some(mapped) => {
                let document = mapped.document(key, body).map_err(errors::invalid_input)?;
                Ok(document_to_dict(py, &document)?.into_any())
            }
            None => Ok(PyBytes::new(py, body).into_any()),
        }
    }

    /// The item a push makes: `item` the element (any document value) in a collection of
    /// documents, its key and measures from its fields where the map says so; the payload
    /// (`bytes`, `str` or `None`) in one of bytes.
    pub fn item(
        &self,
        field: &str,
        item: &Bound<'_, PyAny>,
        stated: skewdb_cli::mapped::Stated,
    ) -> PyResult<skewdb::NewItem> {
        match &self.mapped {
            Some(mapped) => {
                let mut stated = stated;
                let element = match item.is_none() {
                    true => mapped
                        .bare_element(field, &mut stated)
                        .map_err(errors::invalid_input)?,
                    false => to_bson(item)?,
                };
                mapped
                    .item(field, &element, stated)
                    .map_err(errors::invalid_input)
            }
            None => {
                let payload = match item.is_none() {
                    true => Vec::new(),
                    false => raw_bytes(item, "a payload")?,
                };
                Ok(skewdb_cli::mapped::with_stated(
                    skewdb::NewItem::new(payload),
                    stated,
                ))
            }
        }
    }

    /// A stored payload as Python: the element, or `bytes`.
    pub fn payload_out<'py>(&self, py: Python<'py>, payload: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        match self.mapped {
            Some(_) => {
                // An element that is no plain document is stored wrapped as `{"": element}`
                // (`skewdb_cli::mongo::element_payload`).
                let document = bytes_to_dict(py, payload)?;
                match (document.len(), document.get_item("")?) {
                    (1, Some(element)) => Ok(element),
                    _ => Ok(document.into_any()),
                }
            }
            None => Ok(PyBytes::new(py, payload).into_any()),
        }
    }

    /// Array `field` of the collection.
    pub fn array(&self, field: &str) -> PyResult<&'a ArraySpec> {
        self.spec
            .arrays()
            .iter()
            .find(|a| a.field == field)
            .ok_or_else(|| {
                errors::to_py(skewdb::Error::UnknownField {
                    collection: self.spec.name().to_string(),
                    field: field.to_string(),
                })
            })
    }
}

/// `bytes`, or a `str` as its UTF-8.
fn raw_bytes(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_cow()?.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "{what} of a collection of bytes is bytes or str, not a {}",
        value.get_type().name()?
    )))
}

/// An item key (or a bound of a range of them) in `array`: an `int`, or a `datetime` in a
/// time series (keyed by milliseconds since 1970).
pub fn item_key(array: &ArraySpec, key: &Bound<'_, PyAny>) -> PyResult<i64> {
    if key.is_instance_of::<PyInt>() && !key.is_instance_of::<PyBool>() {
        return key.extract();
    }
    if let Some(millis) = datetime_millis(key)? {
        if !keyed_by_time(&array.layout) {
            return Err(errors::invalid_input(format!(
                "{:?} is not a time series ({}): its item keys are int, not datetime",
                array.field,
                array.layout.describe()
            )));
        }
        return Ok(millis);
    }
    Err(PyTypeError::new_err(format!(
        "an item key is an int (or a datetime in a time series), not a {}",
        key.get_type().name()?
    )))
}

/// An item key as Python: a `datetime` in a time series, else an `int`.
pub fn item_key_out<'py>(
    py: Python<'py>,
    array: &ArraySpec,
    key: i64,
) -> PyResult<Bound<'py, PyAny>> {
    match keyed_by_time(&array.layout) {
        true => datetime(py, key),
        false => Ok(key.into_pyobject(py)?.into_any()),
    }
}

/// A span in `array`'s key units: an `int`, a `timedelta` or a duration text (`"1h"`) on a
/// time series.
pub fn span(array: &ArraySpec, span: &Bound<'_, PyAny>) -> PyResult<i64> {
    span_text(span)?
        .parse::<SpanArg>()
        .and_then(|span| span.resolve(array))
        .map_err(errors::invalid_input)
}

/// A span as the schema's text takes it (`"1h"`, `"3600"`): from an `int`, a `str` or a
/// `timedelta`.
pub fn span_text(span: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = span.cast::<PyString>() {
        return Ok(text.to_cow()?.to_string());
    }
    if span.is_instance_of::<PyInt>() && !span.is_instance_of::<PyBool>() {
        return Ok(span.extract::<i64>()?.to_string());
    }
    if is_timedelta(span)? {
        return Ok(format!("{}ms", timedelta_millis(span)?));
    }
    Err(PyTypeError::new_err(
        "a span is an int, a timedelta or a duration such as \"1h\"",
    ))
}

/// A CLI failure (a schema given wrongly) as the exception of its kind.
pub fn failure(failure: Failure) -> PyErr {
    errors::of_kind(failure.kind, failure.message)
}
