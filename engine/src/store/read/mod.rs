//! The read path: `Reads` at one version (records through the record tier, documents, an
//! array's items merged from wherever they live and lent in place, summaries).

/// Parent and tail records decoded for readers, the stager and `verify`.
pub(crate) mod decode;
/// An array's items, merged from the record, its tail and its chunks.
pub(in crate::store) mod items;
/// `Reads`: point reads, documents and records at one version.
pub(in crate::store) mod reads;
/// A walk over a collection's parents, from either end.
pub(crate) mod scan;
/// Summaries and windows of an array's measures.
pub(in crate::store) mod summaries;
