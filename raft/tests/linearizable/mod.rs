//! A linearizability checker for the history of one parent (Wing and Gong's search, with
//! the memoization of Lowe's variant): every operation took effect at one instant between
//! its invocation and its completion, in an order a sequential model of the parent agrees
//! with. Operations whose outcome is unknown (a timeout, a killed node) may take effect at
//! any instant after their invocation, or never. Parents are independent (each read and
//! write touches one), so each is checked alone.

use std::collections::{BTreeSet, HashSet};

/// What one operation did.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Set the body to the value numbered so.
    Put(u64),
    /// Pushed an item of this (unique) key.
    Push(i64),
    /// Removed the item of this key (nothing if absent).
    Remove(i64),
    /// Read the parent: `None` when it did not exist, else its body (`None` when never
    /// put) and its items' keys.
    Read(Option<(Option<u64>, Vec<i64>)>),
}

/// One operation of the history: invoked and completed at these instants (nanoseconds
/// from any common origin); `completed` is `None` when its outcome is unknown.
#[derive(Clone, Debug)]
pub struct Operation {
    pub invoked: u64,
    pub completed: Option<u64>,
    pub action: Action,
}

/// The parent as the sequential model holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct State {
    exists: bool,
    body: Option<u64>,
    items: BTreeSet<i64>,
}

impl State {
    /// The state after `action`, or `None` when `action` (a read) disagrees with it.
    fn step(&self, action: &Action) -> Option<State> {
        let mut next = self.clone();
        match action {
            Action::Put(value) => {
                next.exists = true;
                next.body = Some(*value);
            }
            Action::Push(key) => {
                next.exists = true;
                next.items.insert(*key);
            }
            Action::Remove(key) => {
                next.items.remove(key);
            }
            Action::Read(seen) => {
                let now = self
                    .exists
                    .then(|| (self.body, self.items.iter().copied().collect::<Vec<_>>()));
                if *seen != now {
                    return None;
                }
            }
        }
        Some(next)
    }
}

/// Whether `history` (one parent's operations) is linearizable; on failure, the longest
/// prefix of operations the search could order, as a hint.
pub fn check(history: &[Operation]) -> Result<(), String> {
    let ops: Vec<&Operation> = history.iter().collect();
    let n = ops.len();
    let words = n.div_ceil(64).max(1);
    let must: usize = ops.iter().filter(|o| o.completed.is_some()).count();
    // Depth-first over (ordered set, state); each pair tried once.
    let mut seen: HashSet<(Vec<u64>, State)> = HashSet::new();
    let mut stack: Vec<(Vec<u64>, State, usize)> = vec![(vec![0; words], State::default(), 0)];
    let mut best = 0usize;
    while let Some((done, state, completed_done)) = stack.pop() {
        if completed_done == must {
            return Ok(());
        }
        best = best.max(completed_done);
        let is_done = |i: usize| done[i / 64] >> (i % 64) & 1 == 1;
        // An operation can come next only if it was invoked before every operation not
        // yet ordered completed.
        let horizon = (0..n)
            .filter(|&i| !is_done(i))
            .filter_map(|i| ops[i].completed)
            .min()
            .unwrap_or(u64::MAX);
        for i in 0..n {
            if is_done(i) || ops[i].invoked > horizon {
                continue;
            }
            let Some(next) = state.step(&ops[i].action) else {
                continue;
            };
            let mut ordered = done.clone();
            ordered[i / 64] |= 1 << (i % 64);
            if seen.insert((ordered.clone(), next.clone())) {
                let count = completed_done + ops[i].completed.is_some() as usize;
                stack.push((ordered, next, count));
            }
        }
    }
    Err(format!(
        "not linearizable: at most {best} of the {must} completed operations can be ordered"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(invoked: u64, completed: Option<u64>, action: Action) -> Operation {
        Operation {
            invoked,
            completed,
            action,
        }
    }

    fn read(body: Option<u64>, items: &[i64]) -> Action {
        Action::Read(Some((body, items.to_vec())))
    }

    #[test]
    fn concurrent_operations_may_take_either_order() {
        let history = [
            op(0, Some(10), Action::Push(1)),
            op(1, Some(11), Action::Push(2)),
            op(2, Some(3), read(None, &[2])),
            op(12, Some(13), read(None, &[1, 2])),
        ];
        assert!(check(&history).is_ok());
    }

    #[test]
    fn a_stale_read_after_an_acknowledged_write_is_caught() {
        let history = [
            op(0, Some(5), Action::Push(1)),
            op(6, Some(7), read(None, &[])),
        ];
        assert!(check(&history).is_err());
        let history = [
            op(0, Some(5), Action::Put(1)),
            op(6, Some(7), Action::Read(None)),
        ];
        assert!(check(&history).is_err());
    }

    #[test]
    fn a_write_seen_then_gone_is_caught() {
        // An unknown push may take effect or not, but not both.
        let history = [
            op(0, None, Action::Push(1)),
            op(5, Some(6), read(None, &[1])),
            op(7, Some(8), Action::Read(None)),
        ];
        assert!(check(&history).is_err());
        let history = [
            op(0, None, Action::Push(1)),
            op(5, Some(6), read(None, &[1])),
            op(7, Some(8), read(None, &[1])),
        ];
        assert!(check(&history).is_ok());
        // Or never.
        let history = [
            op(0, None, Action::Push(1)),
            op(5, Some(6), Action::Read(None)),
        ];
        assert!(check(&history).is_ok());
    }

    #[test]
    fn a_read_of_a_write_not_yet_invoked_is_caught() {
        let history = [
            op(0, Some(1), read(Some(7), &[])),
            op(2, Some(3), Action::Put(7)),
        ];
        assert!(check(&history).is_err());
    }

    #[test]
    fn puts_order_with_removes() {
        let history = [
            op(0, Some(2), Action::Push(1)),
            op(3, Some(4), Action::Put(9)),
            op(3, Some(6), Action::Remove(1)),
            op(5, Some(7), read(Some(9), &[1])),
            op(8, Some(9), read(Some(9), &[])),
        ];
        assert!(check(&history).is_ok());
        let history = [
            op(0, Some(2), Action::Push(1)),
            op(3, Some(4), Action::Remove(1)),
            op(5, Some(7), read(None, &[1])),
        ];
        assert!(check(&history).is_err());
    }
}
