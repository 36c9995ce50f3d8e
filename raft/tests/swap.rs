//! Installing a snapshot swaps the state machine's database directory; a node opened after
//! a crash at any point of the swap finds one whole database.

use std::path::Path;

use skewdb::{CollectionSpec, Db, Options};

/// A node directory whose state machine holds collection `marker`.
fn node_with(dir: &Path, marker: &str) {
    let (_log, state) = skewdb_raft::open(dir).unwrap();
    let db = state.reader().db();
    db.create_collection(CollectionSpec::new(marker)).unwrap();
}

fn collections(dir: &Path) -> Vec<String> {
    let (_log, state) = skewdb_raft::open(dir).unwrap();
    state.reader().db().collection_names()
}

/// A whole database for `state.new`, as a restore leaves it before the renames.
fn whole_database(at: &Path, marker: &str) {
    let db = Db::open(at, Options::new()).unwrap();
    db.create_collection(CollectionSpec::new("_raft")).unwrap();
    db.create_collection(CollectionSpec::new(marker)).unwrap();
    db.close().unwrap();
}

#[test]
fn a_swap_cut_short_is_finished_or_undone_at_open() {
    let root = tempfile::tempdir().unwrap();

    // Crash after `state/` moved aside, before `state.new/` took its place: the new one.
    let dir = root.path().join("moved-aside");
    node_with(&dir, "old");
    std::fs::rename(dir.join("state"), dir.join("state.old")).unwrap();
    whole_database(&dir.join("state.new"), "new");
    assert_eq!(collections(&dir), ["_raft", "new"]);
    assert!(!dir.join("state.old").exists() && !dir.join("state.new").exists());

    // Crash while the restore was still building `state.new/` (or before the first
    // rename): the old state stays, the partial one goes.
    let dir = root.path().join("building");
    node_with(&dir, "old");
    for partial in ["state.new", "state.new.restoring"] {
        std::fs::create_dir_all(dir.join(partial)).unwrap();
        std::fs::write(dir.join(partial).join("junk"), b"partial").unwrap();
    }
    assert_eq!(collections(&dir), ["_raft", "old"]);
    assert!(!dir.join("state.new").exists() && !dir.join("state.new.restoring").exists());

    // Crash after both renames, before the old state was removed: the new state stays.
    let dir = root.path().join("renamed");
    node_with(&dir, "old");
    std::fs::rename(dir.join("state"), dir.join("state.old")).unwrap();
    whole_database(&dir.join("state"), "new");
    assert_eq!(collections(&dir), ["_raft", "new"]);
    assert!(!dir.join("state.old").exists());
}
