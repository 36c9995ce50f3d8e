//! The public API: thin handles over the engine (`store::Engine`), each holding it directly.
//!
//! - `db`: [`Db`], which opens the engine and hands out everything else;
//! - `batch`: [`Batch`], writes committed atomically, and [`Writes`], the typed layer's way in;
//! - `array`: [`Array`], one array field checked against the schema;
//! - `collection`: [`Collection`] (the latest state at each read), [`SnapshotCollection`]
//!   (one version), the reads of one collection at one version, and [`Scan`];
//! - `snapshot`: [`Snapshot`], a consistent view of every collection;
//! - `transaction`: [`Transaction`], reads and writes checked at commit;
//! - `typed`: documents and items through serde (feature `serde`).

mod array;
mod batch;
mod collection;
mod db;
mod snapshot;
mod transaction;
#[cfg(feature = "serde")]
pub mod typed;
mod view;
mod writes;

pub use array::Array;
pub use batch::{Batch, Writes};
pub use collection::{Collection, CollectionHandle, KeyRange, Scan, SnapshotCollection};
pub use db::Db;
pub use snapshot::Snapshot;
pub use transaction::{InTransaction, Transaction, TransactionCollection};
pub use view::{AtSnapshot, Latest, View};
