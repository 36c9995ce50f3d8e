//! The page table: page id to where the page is, as a persistent two-level array. Cloning
//! it copies one pointer per group of pages; changing an entry copies only that entry's
//! group of leaf pointers and its leaf of slots, so each commit publishes a new table while
//! readers keep the one they started with, at a cost that does not grow with the table.
//!
//! The page table's bytes are the checkpoint's (`format-spec/checkpoint.md`); its shape in
//! memory: `format-spec/pages.md`.

use std::sync::Arc;

use super::node::{Node, PageId};
use crate::limits::widths::index;
use crate::log::FrameLoc;

/// Slots per leaf: the slots a change copies.
const LEAF_SLOTS: usize = 32;
/// Leaves per group: the leaf pointers a change copies.
const GROUP_LEAVES: usize = 64;
const GROUP_SLOTS: usize = LEAF_SLOTS * GROUP_LEAVES;

/// Where a page is.
#[derive(Clone, Debug, Default)]
pub enum Slot {
    /// No page has this id (never allocated, or freed).
    #[default]
    Free,
    /// The page's latest image is at this location in the log.
    Disk(FrameLoc),
    /// The page changed since the last checkpoint; the image lives only in memory.
    Dirty(Arc<Node>),
}

type Leaf = Vec<Slot>;
type Group = Vec<Arc<Leaf>>;

#[derive(Clone, Default)]
pub struct PageTable {
    groups: Vec<Arc<Group>>,
    dirty_count: usize,
}

/// The group, leaf and slot of page `id`.
fn place(id: PageId) -> (usize, usize, usize) {
    let index = index(id);
    (
        index / GROUP_SLOTS,
        index % GROUP_SLOTS / LEAF_SLOTS,
        index % LEAF_SLOTS,
    )
}

impl PageTable {
    pub fn get(&self, id: PageId) -> &Slot {
        static FREE: Slot = Slot::Free;
        let (group, leaf, slot) = place(id);
        self.groups
            .get(group)
            .and_then(|group| group.get(leaf))
            .map_or(&FREE, |leaf| &leaf[slot])
    }

    /// The slot of page `id` for changing: its group and leaf made (or copied when shared).
    fn slot_mut(&mut self, id: PageId) -> &mut Slot {
        let (group, leaf, slot) = place(id);
        if self.groups.len() <= group {
            self.groups.resize_with(group + 1, Default::default);
        }
        let group = Arc::make_mut(&mut self.groups[group]);
        if group.len() <= leaf {
            group.resize_with(leaf + 1, || Arc::new(vec![Slot::Free; LEAF_SLOTS]));
        }
        &mut Arc::make_mut(&mut group[leaf])[slot]
    }

    pub fn set(&mut self, id: PageId, slot: Slot) {
        let new_dirty = matches!(slot, Slot::Dirty(_));
        let old = std::mem::replace(self.slot_mut(id), slot);
        match (matches!(old, Slot::Dirty(_)), new_dirty) {
            (false, true) => self.dirty_count += 1,
            (true, false) => self.dirty_count -= 1,
            _ => {}
        }
    }

    /// The node of a dirty slot, for changing in place (copied first if shared).
    pub fn dirty_mut(&mut self, id: PageId) -> Option<&mut Arc<Node>> {
        if !matches!(self.get(id), Slot::Dirty(_)) {
            return None;
        }
        match self.slot_mut(id) {
            Slot::Dirty(node) => Some(node),
            _ => None,
        }
    }

    /// Pages changed since the last checkpoint.
    pub fn dirty_count(&self) -> usize {
        self.dirty_count
    }

    /// Every allocated page with its slot, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (PageId, &Slot)> {
        let leaves = self.groups.iter().enumerate().flat_map(|(g, group)| {
            group
                .iter()
                .enumerate()
                .map(move |(l, leaf)| (g * GROUP_SLOTS + l * LEAF_SLOTS, leaf))
        });
        leaves.flat_map(|(first, leaf)| {
            leaf.iter()
                .enumerate()
                .filter(|(_, slot)| !matches!(slot, Slot::Free))
                .map(move |(i, slot)| ((first + i) as PageId, slot))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_are_independent() {
        let mut table = PageTable::default();
        let loc = FrameLoc {
            segment_id: 1,
            offset: 32,
            len: 100,
        };
        table.set(3, Slot::Disk(loc));
        let before = table.clone();
        table.set(3, Slot::Dirty(Arc::new(Node::empty_leaf())));
        table.set(700, Slot::Disk(loc));
        assert!(matches!(before.get(3), Slot::Disk(_)));
        assert!(matches!(before.get(700), Slot::Free));
        assert!(matches!(table.get(3), Slot::Dirty(_)));
        assert_eq!(table.dirty_count(), 1);
        assert_eq!(
            table.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            vec![3, 700]
        );
        table.set(3, Slot::Free);
        assert_eq!(table.dirty_count(), 0);
    }

    #[test]
    fn a_change_copies_one_leaf_of_one_group() {
        let loc = |offset| FrameLoc {
            segment_id: 1,
            offset,
            len: 100,
        };
        let mut table = PageTable::default();
        // Pages in three groups, the last one past a gap.
        let ids = [0, 31, 32, 2047, 2048, 9000];
        for id in ids {
            table.set(id, Slot::Disk(loc(id)));
        }
        let before = table.clone();
        table.set(2048 + 40, Slot::Dirty(Arc::new(Node::empty_leaf())));
        let leaf = |table: &PageTable, id: PageId| {
            let (group, leaf, _) = place(id);
            table.groups[group][leaf].clone()
        };
        // The changed leaf is new, its group the table's own; every other one is shared.
        assert_eq!((table.groups[1].len(), before.groups[1].len()), (2, 1));
        assert!(!Arc::ptr_eq(&table.groups[1], &before.groups[1]));
        assert!(Arc::ptr_eq(&leaf(&table, 2048), &leaf(&before, 2048)));
        for id in [0, 32, 2047, 9000] {
            assert!(Arc::ptr_eq(&leaf(&table, id), &leaf(&before, id)), "{id}");
        }
        assert!(Arc::ptr_eq(&table.groups[4], &before.groups[4]));
        table.set(2048 + 41, Slot::Disk(loc(1)));
        let again = table.clone();
        table.set(2048 + 42, Slot::Disk(loc(2)));
        assert!(!Arc::ptr_eq(&leaf(&table, 2088), &leaf(&again, 2088)));
        assert!(Arc::ptr_eq(&leaf(&table, 2048), &leaf(&again, 2048)));
        table.set(2048 + 42, Slot::Free);
        assert!(matches!(before.get(2088), Slot::Free));
        assert!(matches!(table.get(100_000), Slot::Free));
        let listed: Vec<_> = table.iter().map(|(id, _)| id).collect();
        assert_eq!(listed, vec![0, 31, 32, 2047, 2048, 2088, 2089, 9000]);
        for id in ids {
            assert!(matches!(table.get(id), Slot::Disk(l) if l.offset == id));
        }
        // Only a dirty slot is changed in place, and a clone keeps its node.
        assert!(table.dirty_mut(31).is_none() && table.dirty_mut(50_000).is_none());
        let kept = table.clone();
        let node = table.dirty_mut(2088).expect("dirty");
        *node = Arc::new(Node::empty_leaf());
        let (Slot::Dirty(a), Slot::Dirty(b)) = (table.get(2088), kept.get(2088)) else {
            panic!("not dirty");
        };
        assert!(!Arc::ptr_eq(a, b));
        assert_eq!((table.dirty_count(), kept.dirty_count()), (1, 1));
    }
}
