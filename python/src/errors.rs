//! The library's errors as Python exceptions: `skewdb.Error` and one subclass per error
//! kind, defined in `skewdb/_errors.py` (where `NotFound` is also a `KeyError` and
//! `InvalidInput` a `ValueError`), each instance carrying its kind string as `kind`: the
//! strings of the Rust `Error::kind` and of the tool's `--json` errors.

use pyo3::prelude::*;

/// `message` as the exception of `kind` (`skewdb.Error` for a kind without a class).
pub fn of_kind(kind: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let made = || -> PyResult<PyErr> {
            let errors = py.import("skewdb._errors")?;
            let class = errors.getattr("class_of")?.call1((kind,))?;
            let value = class.call1((message.clone(), kind))?;
            Ok(PyErr::from_value(value))
        };
        made().unwrap_or_else(|error| error)
    })
}

/// The library's error as its exception.
pub fn to_py(error: skewdb::Error) -> PyErr {
    of_kind(error.kind(), error.to_string())
}

/// A bad argument.
pub fn invalid_input(message: impl Into<String>) -> PyErr {
    of_kind("invalid_input", message.into())
}

/// No parent of that key.
pub fn not_found(message: String) -> PyErr {
    of_kind("not_found", message)
}
