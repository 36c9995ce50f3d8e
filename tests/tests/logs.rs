//! The engine's `tracing` events: a warning for a failure no caller receives, and the
//! sticky error an application can ask for.

use std::io::Write;
use std::sync::{Arc, Mutex};

use skewdb::testing::{SimStorage, Storage};
use skewdb::{Db, Durability};
use skewdb_tests::{commit, open_db, small_options, workload};

/// What a subscriber printed, shared with the test.
#[derive(Clone, Default)]
struct Printed(Arc<Mutex<Vec<u8>>>);

impl Write for Printed {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Printed {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Runs `f` with a subscriber that prints `level` and above; what it printed.
fn printed(level: &str, f: impl FnOnce()) -> String {
    let out = Printed::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(level))
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    out.text()
}

/// A checkpoint at close that fails (its storage failing from then on) reaches no caller:
/// it is a warning naming the error. A failed write is then the error every write answers,
/// and `Db::write_error` says so before any write is tried.
#[test]
fn failures_no_caller_receives_are_warnings() {
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let logs = printed("warn", || {
        let db = open_db(storage, small_options(Durability::Immediate)).unwrap();
        for batch in workload(21, 5) {
            commit(&db, &batch).unwrap();
        }
        assert!(db.write_error().is_none());
        sim.fail_at(1, true);
        drop(db);
    });
    assert!(
        logs.contains("WARN") && logs.contains("the checkpoint at close failed"),
        "{logs}"
    );
    assert!(logs.contains("kind=\"io\""), "{logs}");

    sim.clear_faults();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let db = Db::open_with_storage(storage, small_options(Durability::Immediate)).unwrap();
    sim.fail_at(1, true);
    let mut batch = db.batch();
    batch.put("users", "k", "v");
    assert!(batch.commit().is_err());
    let sticky = db.write_error().expect("a failed write is sticky");
    assert_eq!(sticky.kind(), "write_failed", "{sticky}");
    sim.clear_faults();
    let mut batch = db.batch();
    batch.put("users", "k", "v");
    assert_eq!(batch.commit().unwrap_err().kind(), "write_failed");
}

/// Recovery, checkpoints and compactions are spans with events at `info` and `debug`; at
/// `warn` a healthy database prints nothing.
#[test]
fn recovery_checkpoints_and_compactions_are_logged() {
    let sim = SimStorage::new();
    let quiet = printed("warn", || {
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let db = open_db(storage, small_options(Durability::Immediate)).unwrap();
        for batch in workload(22, 40) {
            commit(&db, &batch).unwrap();
        }
        db.compact().unwrap();
    });
    assert_eq!(quiet, "");
    let logs = printed("skewdb=debug", || {
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let db = Db::open_with_storage(storage, small_options(Durability::Immediate)).unwrap();
        for batch in workload(23, 10) {
            commit(&db, &batch).unwrap();
        }
        db.compact().unwrap();
    });
    for said in [
        "recovery",
        "recovered",
        "checkpoint written",
        "compaction",
        "compacted",
    ] {
        assert!(logs.contains(said), "{said:?} missing from:\n{logs}");
    }
    // A read-only open's sticky answer is that it is read-only.
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let reader =
        Db::open_read_only_with_storage(storage, small_options(Durability::Immediate)).unwrap();
    assert_eq!(reader.write_error().unwrap().kind(), "read_only");
}
