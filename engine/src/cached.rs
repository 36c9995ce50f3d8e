//! What the engine keeps in its cache: decoded pages, large records' bytes and decoded cold
//! chunks (by their place in a file), and the record tier's documents. The cache (`cache/`)
//! is generic over these and knows none of them.

use std::sync::Arc;

use bytes::Bytes;

use crate::cache::{self, CacheValue, PageCache};
use crate::cold::items::ChunkItems;
use crate::document::Document;
use crate::page::node::Node;

/// A cached object.
#[derive(Clone, Debug)]
pub enum Cached {
    /// A decoded page.
    Node(Arc<Node>),
    /// A large record's bytes.
    Bytes(Bytes),
    /// A cold chunk's items, decompressed and decoded.
    Items(Arc<ChunkItems>),
}

impl CacheValue for Cached {
    fn is_inner_page(&self) -> bool {
        matches!(self, Cached::Node(node) if node.is_internal())
    }
}

/// The engine's cache: its objects, and documents in the record tier.
pub type Cache = PageCache<Cached, Document>;
/// An object read and not kept (see [`PageCache::get_or_read`]).
pub type Unkept = cache::Unkept<Cached>;
/// What a loader hands the cache on a miss.
pub type Loaded = cache::Loaded<Cached>;

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests {
    use super::*;
    use crate::cache::records::{ENTRY_OVERHEAD, slot_bytes};

    /// The record tier weighs an entry of the engine's documents at least what it holds:
    /// its slot, its place in the table (an index and a control byte, at most half full
    /// after growing), the buffer's allocation header, and the shared header a buffer gets
    /// on its first hit (with its own allocation header).
    #[test]
    fn a_record_tier_entry_is_weighed_at_least_what_it_holds() {
        let slot = slot_bytes::<Document>();
        let least = slot + 2 * (4 + 1) + 16 + 32 + 16;
        assert!(
            ENTRY_OVERHEAD as usize >= least,
            "slot {slot}, at least {least}"
        );
    }
}
