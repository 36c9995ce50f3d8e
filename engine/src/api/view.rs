//! Where a collection handle reads: the latest committed state at each read ([`Latest`]),
//! one snapshot's version ([`AtSnapshot`]), or a transaction's view with its own writes
//! (`InTransaction`, in `transaction.rs`). One [`View`] per kind of handle; the reads
//! themselves are written once, on [`super::CollectionHandle`].

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use crate::catalog::CollectionInfo;
use crate::error::{Error, Result};
use crate::store::{Engine, Version};

/// What a collection handle reads through: every read handle's view implements it (as
/// every read handle of redb implements `ReadableTable`), so each read is written once.
/// Sealed: the views are the crate's.
pub trait View: sealed::Sealed {}

// The sealed trait names the engine's own types: public in name only (its module is the
// crate's), so no one outside can name, implement or call it.
#[allow(private_interfaces)]
pub(crate) mod sealed {
    use super::*;

    pub trait Sealed {
        /// The engine read.
        fn engine(&self) -> &Engine;

        /// The version the next read of `info`'s collection sees.
        fn version(&self, info: &CollectionInfo) -> Result<Arc<Version>>;

        /// Remembers a read of parent `key`'s record, for a transaction's commit to check.
        fn note_parent(&self, _info: &CollectionInfo, _key: &[u8]) -> Result<()> {
            Ok(())
        }

        /// Remembers a read of every tree entry in the range `range` gives; a view that
        /// remembers nothing never asks for it.
        fn note_range(&self, _range: impl FnOnce() -> (Bound<Bytes>, Bound<Bytes>)) -> Result<()> {
            Ok(())
        }
    }
}

/// A [`crate::Collection`]'s view: the latest committed state, at each read.
#[derive(Clone)]
pub struct Latest {
    pub(crate) engine: Engine,
}

impl View for Latest {}

#[allow(private_interfaces)]
impl sealed::Sealed for Latest {
    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn version(&self, info: &CollectionInfo) -> Result<Arc<Version>> {
        let version = self.engine.current();
        check_known(info, &version)?;
        Ok(version)
    }
}

/// A [`crate::SnapshotCollection`]'s view: the snapshot's version, whatever has been
/// committed since.
#[derive(Clone)]
pub struct AtSnapshot {
    pub(crate) engine: Engine,
    pub(crate) version: Arc<Version>,
}

impl View for AtSnapshot {}

#[allow(private_interfaces)]
impl sealed::Sealed for AtSnapshot {
    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn version(&self, _: &CollectionInfo) -> Result<Arc<Version>> {
        Ok(self.version.clone())
    }
}

/// `info`'s collection as `version` knows it: the same collection (not one created later
/// under the same name), or `Error::UnknownCollection`.
fn check_known(info: &CollectionInfo, version: &Version) -> Result<()> {
    match version.catalog.by_name.get(info.spec.name()) {
        Some(known) if known.id == info.id => Ok(()),
        _ => Err(Error::UnknownCollection {
            name: info.spec.name().to_string(),
        }),
    }
}
