//! The page table: page id to where the page is, as a persistent array. Cloning it copies
//! one pointer per chunk; changing an entry copies only that entry's chunk, so each commit
//! publishes a new table while readers keep the one they started with.

use std::sync::Arc;

use super::node::{Node, PageId};
use crate::log::FrameLoc;

const CHUNK_SLOTS: usize = 256;

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

#[derive(Clone, Default)]
pub struct PageTable {
    chunks: Vec<Arc<Vec<Slot>>>,
    dirty_count: usize,
}

impl PageTable {
    pub fn get(&self, id: PageId) -> &Slot {
        static FREE: Slot = Slot::Free;
        let index = id as usize;
        self.chunks
            .get(index / CHUNK_SLOTS)
            .map_or(&FREE, |chunk| &chunk[index % CHUNK_SLOTS])
    }

    pub fn set(&mut self, id: PageId, slot: Slot) {
        let index = id as usize;
        while self.chunks.len() <= index / CHUNK_SLOTS {
            self.chunks.push(Arc::new(vec![Slot::Free; CHUNK_SLOTS]));
        }
        let chunk = Arc::make_mut(&mut self.chunks[index / CHUNK_SLOTS]);
        let old = std::mem::replace(&mut chunk[index % CHUNK_SLOTS], slot);
        let new_dirty = matches!(chunk[index % CHUNK_SLOTS], Slot::Dirty(_));
        match (matches!(old, Slot::Dirty(_)), new_dirty) {
            (false, true) => self.dirty_count += 1,
            (true, false) => self.dirty_count -= 1,
            _ => {}
        }
    }

    /// The node of a dirty slot, for changing in place (copied first if shared).
    pub fn dirty_mut(&mut self, id: PageId) -> Option<&mut Arc<Node>> {
        let index = id as usize;
        let chunk = Arc::make_mut(self.chunks.get_mut(index / CHUNK_SLOTS)?);
        match &mut chunk[index % CHUNK_SLOTS] {
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
        self.chunks.iter().enumerate().flat_map(|(c, chunk)| {
            chunk
                .iter()
                .enumerate()
                .filter(|(_, slot)| !matches!(slot, Slot::Free))
                .map(move |(i, slot)| ((c * CHUNK_SLOTS + i) as PageId, slot))
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
}
