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

#[test]
fn opening_keeps_the_state_current_names_and_removes_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("node");
    node_with(&dir, "first");
    // An install replaced `state/` by `state-2/`; `state-1/` and `state-3/` are leftovers
    // (a replaced state not yet removed, an install cut short).
    whole_database(&dir.join("state-2"), "current");
    whole_database(&dir.join("state-1"), "replaced");
    std::fs::create_dir_all(dir.join("state-3")).unwrap();
    std::fs::write(dir.join("state.current"), "state-2").unwrap();
    assert_eq!(collections(&dir), ["_raft", "current"]);
    for gone in ["state", "state-1", "state-3"] {
        assert!(!dir.join(gone).exists(), "{gone}");
    }
    // A pointer to something that is not a state directory is an error, not a guess.
    std::fs::write(dir.join("state.current"), "../elsewhere").unwrap();
    let Err(error) = skewdb_raft::open(&dir) else {
        panic!("opened with a bad state.current");
    };
    assert!(error.to_string().contains("state.current"), "{error}");
}

/// The bug this layout fixes: an install renamed the live `state/` aside while a handle to
/// its database was still open (a read, a snapshot being built); when that handle closed,
/// its final checkpoint wrote into `state/` by name, into the installed database, which
/// then failed to open ("unknown frame kind 0").
#[tokio::test]
async fn a_handle_to_the_replaced_state_closing_later_leaves_the_new_one_whole() {
    use openraft::RaftSnapshotBuilder;
    use openraft::storage::RaftStateMachine;

    let root = tempfile::tempdir().unwrap();
    // Node B's state, to be sent as a snapshot.
    let (_b_log, mut b) = skewdb_raft::open(root.path().join("b")).unwrap();
    let b_db = b.reader().db();
    b_db.create_collection(CollectionSpec::new("from_b"))
        .unwrap();
    let mut batch = b_db.batch();
    for n in 0..200 {
        batch.put("from_b", format!("key{n}"), vec![7u8; 300]);
    }
    batch.commit().unwrap();
    let snapshot = b
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();

    // Node A, with a handle on its state kept open across the install, and changes in it
    // that its final checkpoint will write.
    let a_dir = root.path().join("a");
    let (_a_log, mut a) = skewdb_raft::open(&a_dir).unwrap();
    let held = a.reader().db();
    held.create_collection(CollectionSpec::new("from_a"))
        .unwrap();
    let mut batch = held.batch();
    for n in 0..200 {
        batch.put("from_a", format!("key{n}"), vec![9u8; 300]);
    }
    batch.commit().unwrap();
    a.install_snapshot(&snapshot.meta, snapshot.snapshot)
        .await
        .unwrap();
    assert!(a.reader().db().collection("from_b").is_ok());
    // The held handle closes now, with a final checkpoint: into its own directory, or
    // nowhere (it was removed), never into the installed state's.
    let current = std::fs::read_to_string(a_dir.join("state.current")).unwrap_or("state".into());
    let files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let before = files(&a_dir.join(&current));
    let _ = held.close();
    assert!(
        before == files(&a_dir.join(&current)),
        "the replaced state's last handle wrote into the installed one"
    );
    drop(a);
    drop(_a_log);
    let (_a_log, a) = skewdb_raft::open(&a_dir).unwrap();
    let db = a.reader().db();
    assert_eq!(db.collection_names(), ["_raft", "from_b"]);
    let got = db
        .collection("from_b")
        .unwrap()
        .get("key199")
        .unwrap()
        .unwrap();
    assert_eq!(got.body(), vec![7u8; 300].as_slice());
    db.verify().unwrap();
}
