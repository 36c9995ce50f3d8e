//! Shared helpers for the benches.

use skewdb::{CollectionSpec, Db, Options};

/// A database in a fresh temporary directory with one collection, `docs`.
pub fn temp_db(options: Options) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Db::open(dir.path(), options).expect("open");
    db.create_collection(CollectionSpec::new("docs"))
        .expect("create collection");
    (dir, db)
}

/// The key of parent `i`: fixed width, so key order is numeric order.
pub fn key(i: u64) -> String {
    format!("parent{i:010}")
}
