//! A linearizability checker for the history of one parent (Wing and Gong's search, with
//! the memoization of Lowe's variant): every operation took effect at one instant between
//! its invocation and its completion, in an order a sequential model of the parent agrees
//! with. Operations whose outcome is unknown (a timeout, a killed node) may take effect at
//! any instant after their invocation, or never. Parents are independent (each read and
//! write touches one), so each is checked alone.

use std::collections::HashSet;

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
    Read(Option<Parent>),
}

/// What a read saw of an existing parent: its body (`None` when never put) and its item
/// keys.
pub type Parent = (Option<u64>, Vec<i64>);

/// One operation of the history: invoked and completed at these instants (nanoseconds
/// from any common origin); `completed` is `None` when its outcome is unknown. `index`: the
/// log index an acknowledged write was applied at, or the one a read answered (the state it
/// read had applied that far); `None` where unknown.
#[derive(Clone, Debug)]
pub struct Operation {
    pub invoked: u64,
    pub completed: Option<u64>,
    pub action: Action,
    pub index: Option<u64>,
}

/// A key's contribution to the hash of a set of keys (SplitMix64's finalizer).
fn mix(key: i64) -> u64 {
    let mut z = (key as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The parent as the sequential model holds it: whether it exists, its body, and its set
/// of item keys as their count and the XOR of their mixes (the sets compared are the ones
/// reads returned, which a 64-bit hash tells apart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct State {
    exists: bool,
    body: Option<u64>,
    count: usize,
    items: u64,
}

/// What a read saw, in the form the state is compared in.
#[derive(Clone, Copy, PartialEq)]
struct Seen {
    exists: bool,
    body: Option<u64>,
    count: usize,
    items: u64,
}

/// One operation as the search takes it.
struct Step {
    invoked: u64,
    completed: u64,
    action: Action,
    seen: Option<Seen>,
}

impl State {
    /// The state after `step`, or `None` when `step` (a read) disagrees with it. A push
    /// adds a key not there (keys are unique); a remove takes one that is there (its push
    /// completed before it was invoked, so the search ordered the push first).
    fn step(&self, step: &Step) -> Option<State> {
        let mut next = *self;
        match &step.action {
            Action::Put(value) => {
                next.exists = true;
                next.body = Some(*value);
            }
            Action::Push(key) => {
                next.exists = true;
                next.count += 1;
                next.items ^= mix(*key);
            }
            Action::Remove(key) => {
                next.count = next.count.checked_sub(1)?;
                next.items ^= mix(*key);
            }
            Action::Read(_) => {
                let seen = step.seen.expect("a read's view");
                let now = Seen {
                    exists: self.exists,
                    body: self.body,
                    count: self.count,
                    items: self.items,
                };
                if seen != now {
                    return None;
                }
            }
        }
        Some(next)
    }
}

/// The operations to search: unknown outcomes settled by what reads saw. An unknown push
/// (keys are unique) that some read saw took effect before the first such read completed;
/// one no read saw is dropped (had it taken effect, a later read would show it: items are
/// removed only by the client that saw their push acknowledged). Likewise an unknown put
/// by its body, and an unknown remove by a read, invoked after it, missing its key (which
/// was there when the remove was invoked). The settled history is linearizable exactly
/// when the first is.
fn settle(history: &[Operation]) -> Vec<Step> {
    let reads: Vec<(&Operation, Option<&Parent>)> = history
        .iter()
        .filter_map(|o| match &o.action {
            Action::Read(seen) => Some((o, seen.as_ref())),
            _ => None,
        })
        .collect();
    let first_read = |saw: &dyn Fn(Option<&Parent>) -> bool| {
        reads
            .iter()
            .filter(|(_, seen)| saw(*seen))
            .filter_map(|(read, _)| read.completed)
            .min()
    };
    let mut steps = Vec::new();
    for op in history {
        let completed = match (op.completed, &op.action) {
            (Some(at), _) => Some(at),
            (None, Action::Push(key)) => {
                first_read(&|seen| seen.is_some_and(|(_, items)| items.contains(key)))
            }
            (None, Action::Put(value)) => {
                first_read(&|seen| seen.is_some_and(|(body, _)| *body == Some(*value)))
            }
            (None, Action::Remove(key)) => reads
                .iter()
                .filter(|(read, _)| read.invoked > op.invoked)
                .filter(|(_, seen)| seen.is_some_and(|(_, items)| !items.contains(key)))
                .filter_map(|(read, _)| read.completed)
                .min(),
            (None, Action::Read(_)) => None,
        };
        let Some(completed) = completed else {
            continue;
        };
        let seen = match &op.action {
            Action::Read(seen) => Some(match seen {
                None => Seen {
                    exists: false,
                    body: None,
                    count: 0,
                    items: 0,
                },
                Some((body, items)) => Seen {
                    exists: true,
                    body: *body,
                    count: items.len(),
                    items: items.iter().fold(0, |h, k| h ^ mix(*k)),
                },
            }),
            _ => None,
        };
        steps.push(Step {
            invoked: op.invoked,
            completed,
            action: op.action.clone(),
            seen,
        });
    }
    steps.sort_by_key(|s| s.invoked);
    steps
}

/// Whether `history` (one parent's operations) is linearizable; on failure, how far the
/// search got, as a hint.
pub fn check(history: &[Operation]) -> Result<(), String> {
    let steps = settle(history);
    let n = steps.len();
    let words = n.div_ceil(64).max(1);
    // Depth-first over (ordered set, state); each pair tried once. Each entry also keeps
    // the number ordered and the first step not yet ordered.
    let mut seen: HashSet<(Vec<u64>, State)> = HashSet::new();
    let mut stack: Vec<(Vec<u64>, State, usize, usize)> =
        vec![(vec![0; words], State::default(), 0, 0)];
    let mut best = 0usize;
    while let Some((done, state, count, first)) = stack.pop() {
        if count == n {
            return Ok(());
        }
        best = best.max(count);
        let is_done = |i: usize| done[i / 64] >> (i % 64) & 1 == 1;
        let first = (first..n).find(|&i| !is_done(i)).expect("a step left");
        // The candidates to come next: not yet ordered, invoked before every step not yet
        // ordered completed. Steps are in invocation order, so the scan stops at the first
        // one invoked after the earliest completion met.
        let mut horizon = u64::MAX;
        let mut candidates = Vec::new();
        for (i, step) in steps.iter().enumerate().skip(first) {
            if step.invoked > horizon {
                break;
            }
            if !is_done(i) {
                horizon = horizon.min(step.completed);
                candidates.push(i);
            }
        }
        for i in candidates {
            if steps[i].invoked > horizon {
                continue;
            }
            let Some(next) = state.step(&steps[i]) else {
                continue;
            };
            let mut ordered = done.clone();
            ordered[i / 64] |= 1 << (i % 64);
            if seen.insert((ordered.clone(), next)) {
                stack.push((ordered, next, count + 1, first));
            }
        }
    }
    Err(format!(
        "not linearizable: at most {best} of the {n} operations can be ordered"
    ))
}

/// Whether the index each read of `history` (one parent's operations, follower reads
/// included) answered agrees with the items it saw: every item whose push was acknowledged
/// at an index up to the read's is there unless some remove of it may have come first; none
/// whose push was acknowledged after the read's index is; none whose remove was acknowledged
/// up to it is; a body put acknowledged after it is not the one read; and a read that found
/// no parent comes before every acknowledged write. (Whether the reads agree with real time
/// is [`check`]'s question; this one is whether the index a client passes on as its session
/// token stands for the state it saw.)
pub fn check_indexes(history: &[Operation]) -> Result<(), String> {
    use std::collections::HashMap;
    let acked = |o: &Operation| o.completed.and(o.index);
    let mut pushed: HashMap<i64, u64> = HashMap::new();
    let mut removed: HashMap<i64, Vec<Option<u64>>> = HashMap::new();
    let mut put: HashMap<u64, u64> = HashMap::new();
    let mut first_write = None::<u64>;
    for op in history {
        if let (Some(index), false) = (acked(op), matches!(op.action, Action::Read(_))) {
            first_write = Some(first_write.map_or(index, |first| first.min(index)));
        }
        match op.action {
            Action::Push(key) => {
                if let Some(index) = acked(op) {
                    pushed.insert(key, index);
                }
            }
            Action::Remove(key) => removed.entry(key).or_default().push(acked(op)),
            Action::Put(value) => {
                if let Some(index) = acked(op) {
                    put.insert(value, index);
                }
            }
            Action::Read(_) => {}
        }
    }
    for op in history {
        let (Action::Read(seen), Some(at)) = (&op.action, op.index) else {
            continue;
        };
        let Some((body, items)) = seen else {
            if let Some(first) = first_write.filter(|first| *first <= at) {
                return Err(format!(
                    "a read at index {at} found no parent, written at {first}"
                ));
            }
            continue;
        };
        for key in items {
            if let Some(index) = pushed.get(key).filter(|index| **index > at) {
                return Err(format!(
                    "a read at index {at} saw item {key}, pushed at {index}"
                ));
            }
            let gone = removed.get(key).into_iter().flatten();
            if let Some(index) = gone.flatten().find(|index| **index <= at) {
                return Err(format!(
                    "a read at index {at} saw item {key}, removed at {index}"
                ));
            }
        }
        for (key, index) in &pushed {
            // A remove whose index is unknown, or up to the read's, may have taken it.
            let may_be_gone = removed
                .get(key)
                .is_some_and(|removes| removes.iter().any(|r| r.is_none_or(|r| r <= at)));
            if *index <= at && !may_be_gone && !items.contains(key) {
                return Err(format!(
                    "a read at index {at} missed item {key}, pushed at {index}"
                ));
            }
        }
        if let Some(index) = body.and_then(|body| put.get(&body)).filter(|i| **i > at) {
            return Err(format!("a read at index {at} saw a body put at {index}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(invoked: u64, completed: Option<u64>, action: Action) -> Operation {
        Operation {
            invoked,
            completed,
            action,
            index: None,
        }
    }

    fn at(index: u64, op: Operation) -> Operation {
        Operation {
            index: Some(index),
            ..op
        }
    }

    #[test]
    fn a_push_applied_twice_is_caught() {
        let history = [
            op(0, None, Action::Push(1)),
            op(5, Some(6), read(None, &[1, 1])),
        ];
        assert!(check(&history).is_err());
    }

    #[test]
    fn reads_whose_index_disagrees_with_what_they_saw_are_caught() {
        let history = [
            at(10, op(0, Some(1), Action::Push(1))),
            at(11, op(2, Some(3), Action::Push(2))),
            at(12, op(4, Some(5), Action::Remove(1))),
            op(6, None, Action::Push(3)),
            at(13, op(6, Some(7), Action::Put(5))),
        ];
        let with = |read: Operation| {
            let mut all = history.to_vec();
            all.push(read);
            check_indexes(&all)
        };
        // Consistent: at 11 both items; at 12 only the second; an unknown push may show.
        assert!(with(at(11, op(8, Some(9), read(None, &[1, 2])))).is_ok());
        assert!(with(at(12, op(8, Some(9), read(None, &[2, 3])))).is_ok());
        assert!(with(at(13, op(8, Some(9), read(Some(5), &[2])))).is_ok());
        assert!(with(at(9, op(8, Some(9), Action::Read(None)))).is_ok());
        // Doctored: an item acknowledged at or before the index missing, one acknowledged
        // after it present, one removed by then present, a body put after it, no parent
        // after it was written.
        assert!(with(at(11, op(8, Some(9), read(None, &[2])))).is_err());
        assert!(with(at(10, op(8, Some(9), read(None, &[1, 2])))).is_err());
        assert!(with(at(12, op(8, Some(9), read(None, &[1, 2])))).is_err());
        assert!(with(at(12, op(8, Some(9), read(Some(5), &[2])))).is_err());
        assert!(with(at(10, op(8, Some(9), Action::Read(None)))).is_err());
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
