//! skewdb: an embedded storage engine whose on-disk format implements the document-modeling
//! patterns for heavy-tailed data (Subset, Outlier, Bucket), so the normal parent stays one
//! page read and the outlier can never blow up.
//!
//! ```
//! use skewdb::{CollectionSpec, Db, Options};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), Options::new())?;
//! db.create_collection(CollectionSpec::new("users"))?;
//! let mut batch = db.batch();
//! batch.put("users", "alice", "{\"name\":\"Alice\"}");
//! batch.commit()?;
//! let users = db.collection("users")?;
//! let alice = users.get("alice")?.expect("committed");
//! assert_eq!(alice.body(), &b"{\"name\":\"Alice\"}"[..]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(unsafe_code)]
#![deny(missing_docs)]

mod alter;
mod api;
mod backup;
#[cfg(feature = "serde")]
pub mod bson_key;
mod cache;
mod cached;
mod catalog;
mod cold;
mod document;
mod error;
mod events;
#[cfg(feature = "testing")]
mod fuzz;
mod item;
mod item_ref;
mod limits;
mod log;
mod options;
mod page;
mod pattern;
mod record;
mod rollup;
// The one `unsafe` block (mapping a segment file: sealed cold and hot segments, and the active
// hot segment, when `Options::memory_map` is on) is allowed where it stands, in `fs.rs`.
#[cfg(feature = "policy")]
pub mod policy;
mod storage;
mod store;
#[doc(hidden)]
#[cfg(feature = "testing")]
pub mod testing;

pub use alter::Alteration;
pub use api::Snapshot;
#[cfg(feature = "serde")]
pub use api::typed;
pub use api::{
    Array, AtSnapshot, Batch, Collection, CollectionHandle, Db, InTransaction, KeyRange, Latest,
    Scan, SnapshotCollection, View, Writes,
};
pub use api::{Transaction, TransactionCollection};
pub use backup::BackupReport;
pub use cache::{CachePolicy, CacheStats, CollectionCacheStats, TierStats, WhatIf};
pub use catalog::{
    ArraySpec, CollectionSpec, DEFAULT_MEASURE, DocumentFormat, DocumentMap, Layout, MAX_ARRAYS,
    MAX_COLLECTION_NAME_BYTES, MAX_INLINE_ITEMS,
};
pub use document::{ArrayView, Cursor, Document, ItemPage, ItemQuery, Outlier, VisitFlow, Visited};
pub use error::{Error, Result};
pub use item::{Item, MAX_MEASURES, MeasureSummary, NewItem, Order, Summary};
pub use item_ref::ItemRef;
pub use limits::{MAX_BATCH_BYTES, MAX_KEY_BYTES, MAX_RECORD_BYTES};
pub use options::{Durability, Options};
pub use record::RECORD_OVERHEAD_BYTES;
pub use store::{CompactReport, Expired, SegmentSpace, SpaceStats, TierSpace};
pub use store::{Inspection, MigrationProgress, SegmentInfo, Stats, VerifyReport};

/// The README's example, compiled as a doctest so that it stays true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
