//! openraft's own compliance suite for log stores and state machines, written by its
//! maintainers, run against this storage: every case on a fresh node directory.

use openraft::testing::{StoreBuilder, Suite};
use skewdb_raft::{LogStore, StateMachine, StorageError, TypeConfig};
use tempfile::TempDir;

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachine), StorageError> {
        let dir = TempDir::new().expect("a temporary directory");
        let (log, state) = skewdb_raft::open(dir.path())?;
        Ok((dir, log, state))
    }
}

#[test]
fn openraft_suite_passes() {
    if let Err(error) = Suite::test_all(Builder) {
        panic!("openraft's suite failed: {error}");
    }
}
