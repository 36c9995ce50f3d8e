//! `skewdb export`: a collection stored as `bson` as `mongoexport` writes one, a JSON line per
//! parent with its arrays embedded again, in the body's field order.

use std::io::Write;

use bson::{Bson, Document};
use skewdb::{Collection, DocumentFormat, ItemQuery};

use crate::failure::Failure;
use crate::mongo;

/// The document a parent exports as: its body with each array's placeholder filled with
/// every item (`inline_only`: the items the parent holds, beside `FIELD_count` and
/// `FIELD_has_overflow`). An array the body does not place comes last when it has items.
pub fn parent_document(
    collection: &Collection,
    document: &skewdb::Document,
    inline_only: bool,
) -> Result<Document, Failure> {
    let bad = |e: String| {
        Failure::invalid_input(format!(
            "parent {}: {e}",
            mongo::Shown::of(collection.spec(), false).key_text(document.key())
        ))
    };
    let mut out = match crate::mapped::Mapped::of(collection.spec()) {
        Some(mapped) => mapped.document(document.key(), document.body()),
        None => mongo::body_document(document.body()),
    }
    .map_err(bad)?;
    for array in document.arrays() {
        let all;
        let items = if inline_only {
            &array.inline
        } else {
            all = collection
                .items(document.key(), &array.field, &ItemQuery::new())?
                .map(|page| page.items)
                .unwrap_or_default();
            &all
        };
        let elements = items
            .iter()
            .map(|item| mongo::payload_element(&item.payload))
            .collect::<Result<Vec<Bson>, String>>()
            .map_err(bad)?;
        if out.contains_key(&array.field) || !elements.is_empty() {
            out.insert(array.field.clone(), Bson::Array(elements));
        }
        if inline_only {
            out.insert(
                format!("{}_count", array.field),
                Bson::Int64(array.total as i64),
            );
            out.insert(
                format!("{}_has_overflow", array.field),
                Bson::Boolean(array.has_overflow),
            );
        }
    }
    Ok(out)
}

/// Refuses a collection whose documents are not MongoDB's (one `import` did not make), as
/// `export` and `advise` do.
pub fn require_imported(collection: &Collection) -> Result<(), Failure> {
    if collection.spec().document_format() != DocumentFormat::Bson {
        return Err(Failure::invalid_input(format!(
            "collection {:?} holds bytes, not documents (it was made with create --bytes)",
            collection.name()
        )));
    }
    Ok(())
}

/// Writes every parent of `collection`, in key order, one Extended JSON line each; the
/// number written.
pub fn run(
    collection: &Collection,
    out: &mut impl Write,
    inline_only: bool,
    canonical: bool,
    mut progress: impl FnMut(u64),
) -> Result<u64, Failure> {
    require_imported(collection)?;
    let mut written = 0;
    for document in collection.scan(..)? {
        let document = parent_document(collection, &document?, inline_only)?;
        let json = mongo::extjson(Bson::Document(document), canonical);
        writeln!(out, "{json}")?;
        written += 1;
        if written % 1024 == 0 {
            progress(written);
        }
    }
    out.flush()?;
    Ok(written)
}
