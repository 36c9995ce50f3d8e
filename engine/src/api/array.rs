//! A handle on one array field, checked against the schema when it is made.

use std::sync::Arc;

use crate::catalog::{ArraySpec, CollectionInfo, Layout};
use crate::error::{Error, Result};

/// One array field of a collection, checked against the schema when it is made
/// ([`crate::Collection::array`]): the batch methods that take it ([`crate::Batch::push_to`] and
/// the others) cannot name a collection or field that does not exist.
#[derive(Clone, Debug)]
pub struct Array {
    pub(crate) collection: Arc<str>,
    pub(crate) field: Arc<str>,
    pub(crate) info: Arc<CollectionInfo>,
    pub(crate) index: usize,
}

impl Array {
    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// The array field's name.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The field's layout.
    pub fn layout(&self) -> Layout {
        self.spec().layout
    }

    /// The field's spec: layout and measures.
    pub fn spec(&self) -> &ArraySpec {
        &self.info.spec.arrays()[self.index]
    }

    /// The names of the field's measures, in order (see [`ArraySpec::measures`]).
    pub fn measures(&self) -> &[String] {
        &self.spec().measures
    }

    /// The index of measure `name`, for [`crate::Item::measure`] and [`crate::Summary::measure`];
    /// `Error::UnknownMeasure` for a name the field does not declare.
    pub fn measure_index(&self, name: &str) -> Result<usize> {
        self.spec()
            .measure_index(name)
            .ok_or_else(|| Error::UnknownMeasure {
                collection: self.collection.to_string(),
                field: self.field.to_string(),
                measure: name.to_string(),
            })
    }

    /// The identity of the collection the handle was made for (a rename, a drop or a
    /// re-creation gives its name another).
    pub(crate) fn collection_id(&self) -> crate::catalog::CollectionId {
        self.info.id
    }

    /// The collection's and the field's names, shared with the batch operations.
    pub(crate) fn names(&self) -> (Arc<str>, Arc<str>) {
        (self.collection.clone(), self.field.clone())
    }
}
