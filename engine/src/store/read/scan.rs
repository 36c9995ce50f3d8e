//! A walk over a collection's parents at one version, in key order from either end: the
//! tree cursors behind `Collection::scan`, so that the API walks no cursor itself.

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use crate::cache::Owner;
use crate::catalog::CollectionInfo;
use crate::document::Document;
use crate::error::Result;
use crate::page::node::Value;
use crate::page::tree::{BackCursor, Cursor};
use crate::page::{Pages, keys};
use crate::store::read::decode::decode_document;
use crate::store::read::reads::Reads;
use crate::store::versions::Version;

/// The parents of one collection between two tree keys, at one version, walked from the
/// front, the back or both (the two halves stop where they meet).
pub(crate) struct ParentScan {
    info: Arc<CollectionInfo>,
    version: Arc<Version>,
    start: Bound<Bytes>,
    end: Bound<Bytes>,
    /// Opened on the first step from the front, and the last key it yielded.
    front: Option<(Cursor, Option<Bytes>)>,
    /// Opened on the first step from the back, and the last key it yielded.
    back: Option<(BackCursor, Option<Bytes>)>,
}

fn inside_end(key: &Bytes, end: &Bound<Bytes>) -> bool {
    match end {
        Bound::Included(end) => key <= end,
        Bound::Excluded(end) => key < end,
        Bound::Unbounded => true,
    }
}

fn inside_start(key: &Bytes, start: &Bound<Bytes>) -> bool {
    match start {
        Bound::Included(start) => key >= start,
        Bound::Excluded(start) => key > start,
        Bound::Unbounded => true,
    }
}

impl Reads<'_> {
    /// The parents of collection `info` at `version` whose tree keys fall between `start`
    /// and `end` (parent record keys of the collection: `keys::parent`).
    pub(crate) fn scan(
        &self,
        version: Arc<Version>,
        info: Arc<CollectionInfo>,
        (start, end): (Bound<Bytes>, Bound<Bytes>),
    ) -> ParentScan {
        ParentScan {
            info,
            version,
            start,
            end,
            front: None,
            back: None,
        }
    }
}

impl ParentScan {
    /// The next parent from the front, read with `reads`.
    pub(crate) fn next(&mut self, reads: &Reads<'_>) -> Result<Option<Document>> {
        let pages = reads.pages.reading(Owner::collection(self.info.id));
        if self.front.is_none() {
            let start = self.start.as_ref().map(|k| k.as_ref());
            self.front = Some((self.version.tree.cursor(&pages, start)?, None));
        }
        let Some((cursor, last)) = self.front.as_mut() else {
            return Ok(None);
        };
        let Some((key, value)) = cursor.next(&self.version.tree, &pages)? else {
            return Ok(None);
        };
        // Stop at the range's end, or where the back half of the scan has been.
        let met = self.back.as_ref().and_then(|(_, back)| back.as_ref());
        if !inside_end(&key, &self.end) || met.is_some_and(|back| key >= *back) {
            return Ok(None);
        }
        *last = Some(key.clone());
        self.document(reads, &pages, key, &value).map(Some)
    }

    /// The next parent from the back, read with `reads`.
    pub(crate) fn next_back(&mut self, reads: &Reads<'_>) -> Result<Option<Document>> {
        let pages = reads.pages.reading(Owner::collection(self.info.id));
        if self.back.is_none() {
            let end = self.end.as_ref().map(|k| k.as_ref());
            self.back = Some((self.version.tree.cursor_back(&pages, end)?, None));
        }
        let Some((cursor, last)) = self.back.as_mut() else {
            return Ok(None);
        };
        let Some((key, value)) = cursor.prev(&self.version.tree, &pages)? else {
            return Ok(None);
        };
        let met = self.front.as_ref().and_then(|(_, front)| front.as_ref());
        if !inside_start(&key, &self.start) || met.is_some_and(|front| key <= *front) {
            return Ok(None);
        }
        *last = Some(key.clone());
        self.document(reads, &pages, key, &value).map(Some)
    }

    /// The document of a tree entry the scan reached.
    fn document(
        &self,
        reads: &Reads<'_>,
        pages: &Pages<'_>,
        key: Bytes,
        value: &Value,
    ) -> Result<Document> {
        pages
            .value_bytes(value)
            .and_then(|bytes| decode_document(&self.info, keys::parent_key_of(&key), bytes))
            .map_err(|e| reads.placed(e, &self.version.tree, &key))
    }
}
