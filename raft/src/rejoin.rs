//! A node that starts on an empty directory takes no part in elections until it has caught
//! up with a leader once.
//!
//! Raft's safety rests on what a voter wrote to disk: the votes it granted and the entries
//! it acknowledged. A node whose directory was wiped (a disk replaced) and that is restarted
//! under the id the cluster knows has lost both, so it could grant a second vote in a term
//! it already voted in, or help elect a node that lacks entries committed with its own
//! acknowledgement. A new node being added starts empty too. So a node that finds its
//! directory empty when it opens it writes a marker, `rejoining`, and until the marker is
//! gone it refuses every vote request, except those of a cluster being formed (a candidate
//! whose log holds only the initial membership, index 0: nothing can have been committed);
//! the first append a leader sends it names the leader's commit index, and once its own log
//! reaches that index (by log, or by a snapshot installed) the marker is removed and it
//! votes again. It still takes entries and snapshots while rejoining: the leader (built with
//! openraft's `loosen-follower-log-revert`, which lets a follower's log go back to empty)
//! finds where its log ends and brings it up to date. The marker survives restarts while it
//! catches up. DISTRIBUTION.md, "Replacing a node", says what an operator does.

use std::path::{Path, PathBuf};

use openraft::error::RaftError;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, VoteRequest};
use std::sync::{Mutex, MutexGuard};

use crate::NodeId;
use crate::error::io_error;

/// The marker's file name in a node's directory.
pub const REJOINING_MARKER: &str = "rejoining";

/// Whether a node is rejoining, and what it must reach to stop.
#[derive(Debug)]
pub struct Rejoin {
    marker: PathBuf,
    state: Mutex<Phase>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Votes as any node does.
    Voting,
    /// Catching up: refuses votes; the leader's commit index once an append named it.
    Rejoining(Option<u64>),
}

impl Rejoin {
    /// The rejoin state of the node directory `dir`, before the node's databases are opened
    /// in it: a directory with nothing in it (or none) starts rejoining, with its marker
    /// written durably; one with the marker left by an earlier run goes on rejoining.
    pub fn open(dir: &Path) -> Result<Rejoin, crate::StorageError> {
        let marker = dir.join(REJOINING_MARKER);
        let empty = match std::fs::read_dir(dir) {
            Ok(mut entries) => entries.next().is_none(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => true,
            Err(error) => return Err(io_error(error, "read the node directory")),
        };
        let phase = if empty {
            std::fs::create_dir_all(dir).map_err(|e| io_error(e, "create the node directory"))?;
            std::fs::File::create(&marker)
                .and_then(|file| file.sync_all())
                .and_then(|()| std::fs::File::open(dir)?.sync_all())
                .map_err(|e| io_error(e, "write the rejoining marker"))?;
            Phase::Rejoining(None)
        } else if marker.exists() {
            Phase::Rejoining(None)
        } else {
            Phase::Voting
        };
        Ok(Rejoin {
            marker,
            state: Mutex::new(phase),
        })
    }

    /// The state of a node in `dir` that votes (for a state machine opened on its own).
    pub(crate) fn voting(dir: &Path) -> Rejoin {
        Rejoin {
            marker: dir.join(REJOINING_MARKER),
            state: Mutex::new(Phase::Voting),
        }
    }

    fn phase(&self) -> MutexGuard<'_, Phase> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the node is still catching up (and refusing votes).
    pub fn rejoining(&self) -> bool {
        *self.phase() != Phase::Voting
    }

    /// Whether the node may answer `vote` now: always once it has caught up; while
    /// rejoining, only a cluster's formation (a candidate whose log ends at index 0).
    pub fn admits(&self, vote: &VoteRequest<NodeId>) -> bool {
        !self.rejoining() || vote.last_log_id.is_none_or(|last| last.index == 0)
    }

    /// Gives `rpc` to `raft` and, while the node rejoins, sees whether the log it leaves has
    /// caught up (every transport's append goes through here). A marker that cannot be
    /// removed leaves the node rejoining (refusing votes: the safe side); the next append
    /// tries again.
    pub async fn append_entries(
        &self,
        raft: &openraft::Raft<crate::TypeConfig>,
        rpc: AppendEntriesRequest<crate::TypeConfig>,
    ) -> Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>> {
        let leader_commit = rpc.leader_commit.map(|id| id.index);
        let appended = raft.append_entries(rpc).await?;
        if self.rejoining() {
            let last = raft.metrics().borrow().last_log_index;
            let _ = self.caught_up_to(leader_commit, last);
        }
        Ok(appended)
    }

    /// After the node took an append naming the leader's commit index `leader_commit`
    /// (the first one it took sets what it must reach), with its log now ending at
    /// `last_log_index`: stops rejoining once that reaches the target, removing the marker.
    pub fn caught_up_to(
        &self,
        leader_commit: Option<u64>,
        last_log_index: Option<u64>,
    ) -> Result<(), crate::StorageError> {
        let mut state = self.phase();
        let Phase::Rejoining(target) = *state else {
            return Ok(());
        };
        let Some(target) = target.or(leader_commit) else {
            // Nothing committed yet: a cluster being formed.
            return Ok(());
        };
        if last_log_index.is_none_or(|last| last < target) {
            *state = Phase::Rejoining(Some(target));
            return Ok(());
        }
        match std::fs::remove_file(&self.marker) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(error, "remove the rejoining marker")),
        }
        if let Some(dir) = self.marker.parent() {
            std::fs::File::open(dir)
                .and_then(|dir| dir.sync_all())
                .map_err(|e| io_error(e, "sync the node directory"))?;
        }
        *state = Phase::Voting;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::{CommittedLeaderId, LogId, Vote};

    fn vote(last_index: Option<u64>) -> VoteRequest<NodeId> {
        VoteRequest {
            vote: Vote::new(3, 1),
            last_log_id: last_index.map(|index| LogId::new(CommittedLeaderId::new(2, 1), index)),
        }
    }

    #[test]
    fn an_empty_directory_rejoins_until_its_log_reaches_the_first_commit_it_heard_of() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("node");
        let rejoin = Rejoin::open(&node).unwrap();
        assert!(rejoin.rejoining());
        assert!(node.join(REJOINING_MARKER).exists());
        // A cluster being formed gets its vote; an established one does not.
        assert!(rejoin.admits(&vote(Some(0))));
        assert!(rejoin.admits(&vote(None)));
        assert!(!rejoin.admits(&vote(Some(7))));

        // The first append names commit 40; the log reaches 39, then a later append (whose
        // leader has committed more meanwhile) brings it to 40: the target stays 40.
        rejoin.caught_up_to(Some(40), Some(12)).unwrap();
        rejoin.caught_up_to(Some(55), Some(39)).unwrap();
        assert!(rejoin.rejoining());
        // A restart meanwhile keeps it rejoining (the marker is still there).
        std::fs::write(node.join("log"), b"").unwrap();
        assert!(Rejoin::open(&node).unwrap().rejoining());
        rejoin.caught_up_to(Some(60), Some(40)).unwrap();
        assert!(!rejoin.rejoining());
        assert!(!node.join(REJOINING_MARKER).exists());
        assert!(rejoin.admits(&vote(Some(7))));
        // Opened again: it votes.
        assert!(!Rejoin::open(&node).unwrap().rejoining());
    }

    #[test]
    fn a_directory_with_data_and_no_marker_votes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("log")).unwrap();
        let rejoin = Rejoin::open(dir.path()).unwrap();
        assert!(!rejoin.rejoining());
        assert!(rejoin.admits(&vote(Some(7))));
        rejoin.caught_up_to(Some(9), None).unwrap();
        assert!(!rejoin.rejoining());
    }
}
