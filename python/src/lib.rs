//! skewdb from Python: the extension module `skewdb._skewdb`, which the package `skewdb`
//! (`pysrc/skewdb`) re-exports with its layouts and exceptions. Documents are dicts stored
//! as BSON through the same document map as the `skewdb` tool's (so a collection made
//! here exports with `skewdb export`, and one imported there reads here); the GIL is
//! released while the engine reads, commits and backs up.

// A method's Rust arguments are its Python keyword arguments, as many as Python callers
// name.
#![allow(clippy::too_many_arguments)]

use pyo3::prelude::*;

mod collection;
mod convert;
mod db;
mod errors;

#[pymodule]
fn _skewdb(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(db::open, module)?)?;
    module.add_function(wrap_pyfunction!(db::restore, module)?)?;
    module.add_class::<db::Db>()?;
    module.add_class::<db::Batch>()?;
    module.add_class::<db::Transaction>()?;
    module.add_class::<db::Snapshot>()?;
    module.add_class::<collection::Collection>()?;
    module.add_class::<collection::Items>()?;
    module.add_class::<collection::Item>()?;
    module.add("MAX_RECORD_BYTES", skewdb::MAX_RECORD_BYTES)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
