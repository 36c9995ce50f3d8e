//! The B+tree over pages, keyed by (collection, parent key). A [`Tree`] is one version:
//! cloning it is cheap (the page table is persistent), and changing a clone never touches
//! the original, so a transaction is a clone that is published whole or dropped.
//!
//! The tree's rules: `format-spec/pages.md`.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use super::keys::MAX_TREE_KEY_BYTES;
use super::node::{
    Entries, NODE_HEADER_BYTES, Node, PageId, Value, internal_entry_len, leaf_entry_len,
};
use super::table::{PageTable, Slot};
use super::{Pages, keys};
use crate::cache::Admission;
use crate::cache::CacheKey;
use crate::cached::Unkept;
use crate::cold::ChunkRef;
use crate::error::Result;
use crate::log::{FrameLoc, segment_name};

/// One version of the tree.
#[derive(Clone)]
pub struct Tree {
    pub root: PageId,
    pub next_page_id: PageId,
    pub table: PageTable,
    /// Bytes of large records the tree refers to, per hot log segment: a segment holding
    /// any cannot be deleted. Kept current by `insert` and `remove`, stored in checkpoints.
    pub large_live: Arc<BTreeMap<u32, u64>>,
    /// Bytes of chunks the chunk index refers to, per cold segment: a segment with none
    /// can be deleted once no reader holds an older version. Kept like `large_live`.
    pub cold_live: Arc<BTreeMap<u32, u64>>,
    /// Bytes of the held records (`Value::Held`) in the tree: memory a checkpoint gives back.
    pub held_bytes: u64,
    /// Cached objects this version stopped naming since it was cloned: page frames of pages
    /// changed or freed, large records and chunks whose entries were replaced or removed.
    /// Taken when the version is published (`Shared::publish`), which drops them from the
    /// cache, so a published version holds none.
    pub superseded: Vec<CacheKey>,
    /// The root page as last published, held outside the cache: every lookup starts there,
    /// so it skips the cache's lock and bookkeeping. Used only while the root's slot still
    /// names the same place in the log.
    pinned: Option<Pinned>,
}

#[derive(Clone)]
struct Pinned {
    id: PageId,
    loc: FrameLoc,
    node: Arc<Node>,
}

/// Adds `bytes` to (or takes them from) a segment's count; a segment at zero is absent.
fn count(live: &mut BTreeMap<u32, u64>, segment_id: u32, bytes: u64, added: bool) {
    let entry = live.entry(segment_id).or_default();
    if added {
        *entry += bytes;
    } else {
        *entry = entry.saturating_sub(bytes);
        if *entry == 0 {
            live.remove(&segment_id);
        }
    }
}

/// Index of the child of an internal node that holds `key`.
fn child_index(keys: &[Bytes], key: &[u8]) -> usize {
    keys.partition_point(|k| k.as_ref() <= key)
}

/// A key's entry as its leaf holds it: the key and its value.
pub type LeafEntry = (Bytes, Value);

impl Tree {
    /// A tree holding one empty leaf.
    pub fn new() -> Self {
        let mut table = PageTable::default();
        table.set(0, Slot::Dirty(Arc::new(Node::empty_leaf())));
        Tree::with_root(0, 1, table)
    }

    pub fn with_root(root: PageId, next_page_id: PageId, table: PageTable) -> Self {
        Tree {
            root,
            next_page_id,
            table,
            large_live: Arc::default(),
            cold_live: Arc::default(),
            held_bytes: 0,
            superseded: Vec::new(),
            pinned: None,
        }
    }

    /// Counts a large record, a held record or a chunk named by a chunk index entry, in
    /// (`added`) or out of the tree.
    pub(super) fn account(&mut self, key: &Bytes, value: &Value, added: bool) {
        let (live, segment_id, bytes) = match value {
            Value::Held(bytes) => {
                let held = bytes.len() as u64;
                if added {
                    self.held_bytes += held;
                } else {
                    self.held_bytes -= held;
                }
                return;
            }
            Value::Large(large) => {
                self.note_superseded(
                    CacheKey::Large {
                        segment_id: large.segment_id,
                        offset: large.frame_offset,
                    },
                    added,
                );
                (
                    &mut self.large_live,
                    large.segment_id,
                    large.value_len as u64,
                )
            }
            Value::Inline(bytes) if keys::is_chunk_entry(key) => {
                // A malformed entry counts nothing; verify reports it.
                let Ok(entry) = ChunkRef::decode_slice(bytes) else {
                    return;
                };
                self.note_superseded(
                    CacheKey::Chunk {
                        segment_id: entry.loc.segment_id,
                        offset: entry.loc.offset,
                    },
                    added,
                );
                (
                    &mut self.cold_live,
                    entry.loc.segment_id,
                    entry.loc.len as u64,
                )
            }
            Value::Inline(_) => return,
        };
        count(Arc::make_mut(live), segment_id, bytes, added);
    }

    /// Notes a large record or chunk leaving the tree (`added` false) as superseded; one
    /// coming back at once (an entry replaced by one naming the same object) is not.
    fn note_superseded(&mut self, key: CacheKey, added: bool) {
        if !added {
            self.superseded.push(key);
        } else if self.superseded.last() == Some(&key) {
            self.superseded.pop();
        }
    }

    /// Sets page `id`'s slot, noting the page frame it named, if any, as superseded.
    pub fn replace_slot(&mut self, id: PageId, slot: Slot) {
        if let Slot::Disk(loc) = *self.table.get(id) {
            self.superseded.push(CacheKey::Page {
                segment_id: loc.segment_id,
                offset: loc.offset,
            });
        }
        self.table.set(id, slot);
    }

    /// Every held record, by key. Only changed pages can hold one.
    pub fn held(&self) -> Vec<(Bytes, Bytes)> {
        let mut held = Vec::new();
        if self.held_bytes == 0 {
            return held;
        }
        for (_, slot) in self.table.iter() {
            if let Slot::Dirty(node) = slot
                && let Node::Leaf { entries, .. } = node.as_ref()
            {
                for (key, value) in entries.all().iter() {
                    if let Value::Held(bytes) = value {
                        held.push((key.clone(), bytes.clone()));
                    }
                }
            }
        }
        held
    }

    pub fn node(&self, store: &Pages<'_>, id: PageId) -> Result<Arc<Node>> {
        match self.pinned_node(id) {
            Some(node) => Ok(node),
            None => store.node(&self.table, id),
        }
    }

    /// [`Tree::node`], keeping in the cache only what `keep` says of a page read from
    /// storage.
    fn node_kept(&self, store: &Pages<'_>, id: PageId, keep: Keep) -> Result<Arc<Node>> {
        if keep == Keep::Everything {
            return self.node(store, id);
        }
        if let Some(node) = self.pinned_node(id) {
            return Ok(node);
        }
        let (node, unkept) = store.node_or_read(&self.table, id)?;
        if let Some(unkept) = unkept {
            // A leaf the cache does not keep is dropped once the walk leaves it.
            let _ = store.cache.admit(unkept, Admission::InnerPagesOnly);
        }
        Ok(node)
    }

    /// Page `id`, if it is the pinned root.
    fn pinned_node(&self, id: PageId) -> Option<Arc<Node>> {
        let pinned = self.pinned.as_ref()?;
        let current = matches!(self.table.get(id), Slot::Disk(loc) if *loc == pinned.loc);
        (pinned.id == id && current).then(|| pinned.node.clone())
    }

    /// Pins the root page for readers of the version about to be published (a root that
    /// changes since the last publish is read once through the cache). A root that is not
    /// on disk yet, or cannot be read, is not pinned; lookups then go through the cache.
    pub fn pin_root(mut self, store: &Pages<'_>) -> Self {
        let Slot::Disk(loc) = *self.table.get(self.root) else {
            self.pinned = None;
            return self;
        };
        if self
            .pinned
            .as_ref()
            .is_some_and(|p| p.id == self.root && p.loc == loc)
        {
            return self;
        }
        self.pinned = store.node(&self.table, self.root).ok().map(|node| Pinned {
            id: self.root,
            loc,
            node,
        });
        self
    }

    /// The node `id` for changing: made dirty in this version, copied if shared.
    pub(super) fn node_mut(&mut self, store: &Pages<'_>, id: PageId) -> Result<&mut Node> {
        if !matches!(self.table.get(id), Slot::Dirty(_)) {
            let node = self.node(store, id)?;
            self.replace_slot(id, Slot::Dirty(node));
        }
        match self.table.dirty_mut(id) {
            Some(node) => Ok(Arc::make_mut(node).changing()),
            // The slot was made dirty just above.
            None => unreachable!("page {id} is dirty"),
        }
    }

    fn allocate(&mut self, node: Node) -> PageId {
        let id = self.next_page_id;
        assert!(
            matches!(self.table.get(id), Slot::Free),
            "page {id} allocated while in use"
        );
        self.next_page_id += 1;
        self.table.set(id, Slot::Dirty(Arc::new(node)));
        id
    }

    /// The internal nodes from the root down to the leaf for `key`, each with the index of
    /// the child taken, and the leaf's id.
    fn descend(&self, store: &Pages<'_>, key: &[u8]) -> Result<(Vec<(PageId, usize)>, PageId)> {
        let mut path = Vec::new();
        let mut id = self.root;
        loop {
            let node = self.node(store, id)?;
            match node.as_ref() {
                Node::Internal { keys, children, .. } => {
                    let index = child_index(keys, key);
                    path.push((id, index));
                    id = children[index];
                }
                Node::Leaf { .. } => return Ok((path, id)),
            }
            if path.len() > MAX_DEPTH {
                return Err(store.tree_corruption(id, "tree deeper than any valid tree"));
            }
        }
    }

    /// The value of `key`: one walk from the root, searching each page's index.
    pub fn get(&self, store: &Pages<'_>, key: &[u8]) -> Result<Option<Value>> {
        self.find_with(store, key, Entries::value)
    }

    /// The record bytes of `key`'s value (a large record read from the log): the one tree
    /// read of a record the store makes outside a point read of a parent.
    pub fn get_bytes(&self, store: &Pages<'_>, key: &[u8]) -> Result<Option<Bytes>> {
        match self.get(store, key)? {
            Some(value) => Ok(Some(store.value_bytes(&value)?)),
            None => Ok(None),
        }
    }

    /// `key`'s entry as the leaf holds it: the key (a slice of the page image for a leaf
    /// read in place, so a reader that keeps it copies nothing) and its value.
    pub fn get_entry(&self, store: &Pages<'_>, key: &[u8]) -> Result<Option<LeafEntry>> {
        self.find_with(store, key, Entries::entry)
    }

    /// [`Tree::get_entry`], except that a leaf read from storage is not kept in the cache
    /// yet: it comes back for the caller to hand to the cache ([`crate::cache::PageCache::admit`])
    /// with what it knows of it. Internal pages read on the way are kept as usual.
    pub fn get_entry_or_read(
        &self,
        store: &Pages<'_>,
        key: &[u8],
    ) -> Result<(Option<LeafEntry>, Option<Unkept>)> {
        let mut unkept_leaf = None;
        let node = |id| {
            let (node, unkept) = match self.pinned_node(id) {
                Some(node) => (node, None),
                None => store.node_or_read(&self.table, id)?,
            };
            if let Some(unkept) = unkept {
                // The last page the walk reads is the leaf: what the cache gives back.
                unkept_leaf = store.cache.admit(unkept, Admission::InnerPagesOnly);
            }
            Ok(node)
        };
        let found = self.find_in(store, key, node, Entries::entry)?;
        Ok((found, unkept_leaf))
    }

    /// What `take` makes of `key`'s entry in its leaf, if the tree holds `key`.
    fn find_with<T>(
        &self,
        store: &Pages<'_>,
        key: &[u8],
        take: impl FnOnce(&Entries, usize) -> T,
    ) -> Result<Option<T>> {
        self.find_in(store, key, |id| self.node(store, id), take)
    }

    /// [`Tree::find_with`], each page got through `node`.
    fn find_in<T>(
        &self,
        store: &Pages<'_>,
        key: &[u8],
        mut node: impl FnMut(PageId) -> Result<Arc<Node>>,
        take: impl FnOnce(&Entries, usize) -> T,
    ) -> Result<Option<T>> {
        let mut id = self.root;
        for _ in 0..=MAX_DEPTH {
            let node = node(id)?;
            match node.as_ref() {
                Node::Internal { children, .. } => id = children[node.search(key)],
                Node::Leaf { entries, .. } => {
                    return Ok(node.find(key).ok().map(|index| take(entries, index)));
                }
            }
        }
        Err(store.tree_corruption(id, "tree deeper than any valid tree"))
    }

    /// Where page `id` is, as a corruption error names it: the hot segment file and the
    /// offset of the frame holding its image, or, for a page changed since the last
    /// checkpoint, that it lives in memory only.
    pub fn place_of(&self, id: PageId) -> (String, u64) {
        match self.table.get(id) {
            Slot::Disk(loc) => (segment_name(loc.segment_id), loc.offset),
            Slot::Dirty(_) => (format!("page {id} (changed since the last checkpoint)"), 0),
            Slot::Free => (format!("page {id} (free)"), 0),
        }
    }

    /// Where `key`'s value is: the frame of a large record, or that of the leaf holding the
    /// value; `None` if the tree does not hold `key` or the walk to it fails. For errors: a
    /// record that did not decode is reported at the place this gives.
    pub fn locate(&self, store: &Pages<'_>, key: &[u8]) -> Option<(String, u64)> {
        // The walk of every lookup, remembering the last page it read: the leaf.
        let mut leaf = self.root;
        let node = |id| {
            leaf = id;
            self.node(store, id)
        };
        let value = self.find_in(store, key, node, Entries::value).ok()??;
        Some(match value {
            Value::Large(large) => (segment_name(large.segment_id), large.frame_offset),
            _ => self.place_of(leaf),
        })
    }

    /// Inserts or replaces `key`'s value.
    pub fn insert(&mut self, store: &Pages<'_>, key: Bytes, value: Value) -> Result<()> {
        // A longer key would make a page that decoding refuses.
        assert!(key.len() <= MAX_TREE_KEY_BYTES, "tree key over the limit");
        let page_room = store.page_bytes - NODE_HEADER_BYTES;
        let (path, leaf_id) = self.descend(store, &key)?;
        let leaf = self.node_mut(store, leaf_id)?;
        let Node::Leaf { entries, .. } = leaf else {
            return Err(store.tree_corruption(leaf_id, "expected a leaf"));
        };
        let entries = entries.to_mut();
        let (counted_key, added) = (key.clone(), value.clone());
        let mut appended = None;
        let replaced = match entries.binary_search_by(|(k, _)| k.as_ref().cmp(&key)) {
            Ok(index) => Some(std::mem::replace(&mut entries[index].1, value)),
            Err(index) => {
                appended = Some(index);
                entries.insert(index, (key, value));
                // The search kept the leaf strictly ascending around the new key.
                assert!(
                    index == 0 || entries[index - 1].0 < entries[index].0,
                    "leaf {leaf_id} out of order after an insert"
                );
                assert!(
                    index + 1 == entries.len() || entries[index].0 < entries[index + 1].0,
                    "leaf {leaf_id} out of order after an insert"
                );
                None
            }
        };
        let total: usize = entries.iter().map(|(k, v)| leaf_entry_len(k, v)).sum();
        let right = (total > page_room).then(|| {
            let sizes: Vec<usize> = entries.iter().map(|(k, v)| leaf_entry_len(k, v)).collect();
            let at = appended
                .filter(|&index| ends_a_run(entries, index))
                .and_then(|index| split_after_run(&sizes, total, index, page_room))
                .unwrap_or_else(|| balanced_split(&sizes, page_room));
            let left_bytes: usize = sizes[..at].iter().sum();
            // Both halves fit a page: a split that cannot is a page the log must never get.
            assert!(
                at > 0 && at < sizes.len(),
                "leaf {leaf_id} split into an empty half"
            );
            assert!(
                left_bytes <= page_room && total - left_bytes <= page_room,
                "leaf {leaf_id} split into a half over the page size"
            );
            entries.split_off(at)
        });
        if let Some(right) = &right
            && let Node::Leaf { entries, .. } = &*leaf
        {
            assert!(
                entries.all().last().map(|(k, _)| k) < right.first().map(|(k, _)| k),
                "leaf {leaf_id} split out of order"
            );
        }
        if let Some(old) = &replaced {
            self.account(&counted_key, old, false);
        }
        self.account(&counted_key, &added, true);
        let Some(right) = right else {
            return Ok(());
        };
        let separator = right[0].0.clone();
        let right_id = self.allocate(Node::leaf(right));
        self.insert_separator(store, path, separator, right_id)
    }

    fn insert_separator(
        &mut self,
        store: &Pages<'_>,
        mut path: Vec<(PageId, usize)>,
        mut separator: Bytes,
        mut right_id: PageId,
    ) -> Result<()> {
        let page_room = store.page_bytes - NODE_HEADER_BYTES - 8;
        loop {
            let Some((parent_id, index)) = path.pop() else {
                let root = Node::internal(vec![separator], vec![self.root, right_id]);
                self.root = self.allocate(root);
                return Ok(());
            };
            let parent = self.node_mut(store, parent_id)?;
            let Node::Internal { keys, children, .. } = parent else {
                return Err(store.tree_corruption(parent_id, "expected an internal page"));
            };
            keys.insert(index, separator);
            children.insert(index + 1, right_id);
            assert_eq!(
                keys.len() + 1,
                children.len(),
                "page {parent_id}: keys and children"
            );
            assert!(
                index == 0 || keys[index - 1] < keys[index],
                "page {parent_id}: separator out of order"
            );
            assert!(
                index + 1 == keys.len() || keys[index] < keys[index + 1],
                "page {parent_id}: separator out of order"
            );
            let sizes: Vec<usize> = keys.iter().map(|k| internal_entry_len(k)).collect();
            let total: usize = sizes.iter().sum();
            if total <= page_room {
                return Ok(());
            }
            // The middle key moves up; the left keeps keys[..mid], the right keys[mid + 1..].
            let mid = middle_key(&sizes);
            let left_bytes: usize = sizes[..mid].iter().sum();
            assert!(
                left_bytes <= page_room && total - left_bytes - sizes[mid] <= page_room,
                "page {parent_id} split into a half over the page size"
            );
            let right_keys = keys.split_off(mid + 1);
            let right_children = children.split_off(mid + 1);
            separator = keys.pop().expect("mid is a valid key index");
            assert!(
                keys.last().is_none_or(|last| *last < separator)
                    && right_keys.first().is_some_and(|first| separator < *first),
                "page {parent_id} split out of order"
            );
            assert_eq!(
                keys.len() + 1,
                children.len(),
                "page {parent_id}: left half"
            );
            assert_eq!(
                right_keys.len() + 1,
                right_children.len(),
                "page {parent_id}: right half"
            );
            right_id = self.allocate(Node::internal(right_keys, right_children));
        }
    }

    /// Removes `key`; returns whether it was present.
    pub fn remove(&mut self, store: &Pages<'_>, key: &[u8]) -> Result<bool> {
        let (mut path, leaf_id) = self.descend(store, key)?;
        let leaf = self.node_mut(store, leaf_id)?;
        let Node::Leaf { entries, .. } = leaf else {
            return Err(store.tree_corruption(leaf_id, "expected a leaf"));
        };
        let entries = entries.to_mut();
        let Ok(index) = entries.binary_search_by(|(k, _)| k.as_ref().cmp(key)) else {
            return Ok(false);
        };
        let (old_key, old) = entries.remove(index);
        let leaf_len = leaf.encoded_len();
        let empty = matches!(leaf, Node::Leaf { entries, .. } if entries.is_empty());
        self.account(&old_key, &old, false);
        let Some(&(parent_id, child)) = path.last() else {
            return Ok(true);
        };
        if empty {
            self.replace_slot(leaf_id, Slot::Free);
            self.remove_child(store, &mut path)?;
        } else if leaf_len < store.page_bytes / 4 {
            self.merge_leaf(store, parent_id, child)?;
        }
        self.collapse_root(store)?;
        Ok(true)
    }

    /// Removes the child named by the last path entry from its parent, and parents that
    /// become empty from theirs.
    fn remove_child(&mut self, store: &Pages<'_>, path: &mut Vec<(PageId, usize)>) -> Result<()> {
        while let Some((parent_id, index)) = path.pop() {
            let parent = self.node_mut(store, parent_id)?;
            let Node::Internal { keys, children, .. } = parent else {
                return Err(store.tree_corruption(parent_id, "expected an internal page"));
            };
            children.remove(index);
            if !keys.is_empty() {
                keys.remove(index.saturating_sub(1));
            }
            assert!(
                keys.len() + 1 == children.len() || (keys.is_empty() && children.is_empty()),
                "page {parent_id}: keys and children after a removal"
            );
            if !children.is_empty() {
                return Ok(());
            }
            if path.is_empty() {
                // The root lost its last child: the tree is empty.
                self.table
                    .set(parent_id, Slot::Dirty(Arc::new(Node::empty_leaf())));
                return Ok(());
            }
            self.replace_slot(parent_id, Slot::Free);
        }
        Ok(())
    }

    /// Merges the small leaf at `index` of `parent_id` with a neighbour when both fit a page.
    fn merge_leaf(&mut self, store: &Pages<'_>, parent_id: PageId, index: usize) -> Result<()> {
        let parent = self.node(store, parent_id)?;
        let Node::Internal { children, .. } = parent.as_ref() else {
            return Err(store.tree_corruption(parent_id, "expected an internal page"));
        };
        if children.len() < 2 {
            return Ok(());
        }
        let left_index = if index + 1 < children.len() {
            index
        } else {
            index - 1
        };
        let (left_id, right_id) = (children[left_index], children[left_index + 1]);
        let right = self.node(store, right_id)?;
        let left = self.node(store, left_id)?;
        let (
            Node::Leaf {
                entries: right_entries,
                ..
            },
            Node::Leaf { .. },
        ) = (right.as_ref(), left.as_ref())
        else {
            return Ok(());
        };
        let combined = left.encoded_len() + right.encoded_len() - NODE_HEADER_BYTES;
        if combined > store.page_bytes {
            return Ok(());
        }
        let moved = right_entries.all().to_vec();
        if let Node::Leaf { entries, .. } = self.node_mut(store, left_id)? {
            let entries = entries.to_mut();
            assert!(
                entries.last().map(|(k, _)| k) < moved.first().map(|(k, _)| k),
                "leaves {left_id} and {right_id} merged out of order"
            );
            entries.extend(moved);
        }
        assert!(
            self.node(store, left_id)?.encoded_len() <= store.page_bytes,
            "leaves {left_id} and {right_id} merged over the page size"
        );
        self.replace_slot(right_id, Slot::Free);
        if let Node::Internal { keys, children, .. } = self.node_mut(store, parent_id)? {
            keys.remove(left_index);
            children.remove(left_index + 1);
            assert_eq!(
                keys.len() + 1,
                children.len(),
                "page {parent_id} after a merge"
            );
        }
        Ok(())
    }

    /// While the root is an internal page with one child, that child becomes the root.
    pub(super) fn collapse_root(&mut self, store: &Pages<'_>) -> Result<()> {
        loop {
            let root = self.node(store, self.root)?;
            match root.as_ref() {
                Node::Internal { children, .. } if children.len() == 1 => {
                    let child = children[0];
                    self.replace_slot(self.root, Slot::Free);
                    self.root = child;
                }
                _ => return Ok(()),
            }
        }
    }

    /// A cursor at the first key inside `start`.
    pub fn cursor(&self, store: &Pages<'_>, start: Bound<&[u8]>) -> Result<Cursor> {
        self.cursor_keeping(store, start, Keep::Everything)
    }

    /// [`Tree::cursor`] for maintenance walks (a compaction's plan): a leaf it reads from
    /// storage is not kept in the cache, so that walking the whole index neither evicts what
    /// readers use nor fills the cache with what no reader asked for.
    pub fn cursor_passing(&self, store: &Pages<'_>, start: Bound<&[u8]>) -> Result<Cursor> {
        self.cursor_keeping(store, start, Keep::InternalPages)
    }

    fn cursor_keeping(&self, store: &Pages<'_>, start: Bound<&[u8]>, keep: Keep) -> Result<Cursor> {
        let (stack, leaf) = self.seek(store, start, Edge::Left, keep)?;
        let position = match start {
            Bound::Unbounded => 0,
            Bound::Included(key) => leaf.search(key),
            Bound::Excluded(key) => leaf.search_past(key),
        };
        Ok(Cursor {
            stack,
            leaf,
            position,
            keep,
        })
    }

    /// The path from the root to the leaf that holds `bound`'s key (or the leftmost or
    /// rightmost leaf for an unbounded side), each internal page with the child taken.
    fn seek(
        &self,
        store: &Pages<'_>,
        bound: Bound<&[u8]>,
        unbounded: Edge,
        keep: Keep,
    ) -> Result<(PathStack, Arc<Node>)> {
        let mut stack = Vec::new();
        let mut id = self.root;
        loop {
            let node = self.node_kept(store, id, keep)?;
            let Node::Internal { children, .. } = node.as_ref() else {
                return Ok((stack, node));
            };
            let index = match (bound, unbounded) {
                (Bound::Included(key) | Bound::Excluded(key), _) => node.search(key),
                (Bound::Unbounded, Edge::Left) => 0,
                (Bound::Unbounded, Edge::Right) => children.len() - 1,
            };
            id = children[index];
            stack.push((node.clone(), index));
            if stack.len() > MAX_DEPTH {
                return Err(store.tree_corruption(id, "tree deeper than any valid tree"));
            }
        }
    }
}

impl Default for Tree {
    fn default() -> Self {
        Self::new()
    }
}

/// No valid tree is deeper: with at least two entries per page, 64 levels hold 2^64 keys.
pub(super) const MAX_DEPTH: usize = 64;

/// Whether the entry just inserted at `index` continues an ascending run of its key space
/// (`keys::space_of`: collection and record kind) and ends it: the entry before
/// is of the same space, the one after, if any, of another. Keys loaded in order arrive
/// this way.
fn ends_a_run(entries: &[(Bytes, Value)], index: usize) -> bool {
    let this = keys::space_of(&entries[index].0);
    index > 0
        && keys::space_of(&entries[index - 1].0) == this
        && entries
            .get(index + 1)
            .is_none_or(|(next, _)| keys::space_of(next) != this)
}

/// Where to split a leaf whose new entry at `index` ended a run (`ends_a_run`): right
/// after it, the run's leaf left full, or else right before it, so that a load in key
/// order fills its leaves instead of leaving each half empty; `None` when neither leaves
/// both halves within `room` and non-empty. `total` is the sum of `sizes`.
fn split_after_run(sizes: &[usize], total: usize, index: usize, room: usize) -> Option<usize> {
    let fits = |at: usize| {
        let left: usize = sizes[..at].iter().sum();
        at > 0 && at < sizes.len() && left <= room && total - left <= room
    };
    [index + 1, index].into_iter().find(|&at| fits(at))
}

/// The split index that balances the two halves' bytes while both fit `room`.
fn balanced_split(sizes: &[usize], room: usize) -> usize {
    let total: usize = sizes.iter().sum();
    let mut best = (usize::MAX, 1);
    let mut left = 0;
    for split in 1..sizes.len() {
        left += sizes[split - 1];
        let right = total - left;
        if left <= room && right <= room {
            let imbalance = left.abs_diff(right);
            if imbalance < best.0 {
                best = (imbalance, split);
            }
        }
    }
    best.1
}

/// The index of the key to move up when an internal page splits.
fn middle_key(sizes: &[usize]) -> usize {
    let total: usize = sizes.iter().sum();
    let mut left = 0;
    for (index, size) in sizes.iter().enumerate() {
        if left + size / 2 >= total / 2 {
            return index.clamp(1, sizes.len() - 2);
        }
        left += size;
    }
    sizes.len() / 2
}

/// The internal pages from the root down to a leaf, each with the index of the child taken.
type PathStack = Vec<(Arc<Node>, usize)>;

/// Which edge of a subtree to walk down.
#[derive(Clone, Copy)]
enum Edge {
    Left,
    Right,
}

/// Walks from page `id` down its leftmost or rightmost edge to a leaf, pushing each internal
/// page with the index of the child taken.
fn descend_edge(
    tree: &Tree,
    store: &Pages<'_>,
    stack: &mut PathStack,
    mut id: PageId,
    edge: Edge,
    keep: Keep,
) -> Result<Arc<Node>> {
    loop {
        let node = tree.node_kept(store, id, keep)?;
        let Node::Internal { children, .. } = node.as_ref() else {
            return Ok(node);
        };
        let index = match edge {
            Edge::Left => 0,
            Edge::Right => children.len() - 1,
        };
        id = children[index];
        stack.push((node.clone(), index));
        if stack.len() > MAX_DEPTH {
            return Err(store.tree_corruption(id, "tree deeper than any valid tree"));
        }
    }
}

/// A position in the leaves; yields entries in key order.
pub struct Cursor {
    stack: PathStack,
    leaf: Arc<Node>,
    position: usize,
    keep: Keep,
}

/// What a walk keeps in the cache of the pages it reads from storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    /// Every page, as any read does.
    Everything,
    /// Internal pages only: the leaves of a maintenance walk pass through.
    InternalPages,
}

impl Cursor {
    /// The next entry, moving to the next leaf when this one is done.
    pub fn next(&mut self, tree: &Tree, store: &Pages<'_>) -> Result<Option<(Bytes, Value)>> {
        loop {
            if let Node::Leaf { entries, .. } = self.leaf.as_ref()
                && self.position < entries.len()
            {
                self.position += 1;
                return Ok(Some(entries.entry(self.position - 1)));
            }
            if !self.next_leaf(tree, store)? {
                return Ok(None);
            }
        }
    }

    /// Calls `visit` with every entry from here on, in key order, until it returns `false`
    /// (an entry of a leaf read in place is built as it is visited: its key and an inline
    /// value are slices of the page).
    pub fn for_each(
        &mut self,
        tree: &Tree,
        store: &Pages<'_>,
        mut visit: impl FnMut(&Bytes, &Value) -> Result<bool>,
    ) -> Result<()> {
        loop {
            if let Node::Leaf { entries, .. } = self.leaf.as_ref() {
                while self.position < entries.len() {
                    let (key, value) = entries.entry(self.position);
                    self.position += 1;
                    if !visit(&key, &value)? {
                        return Ok(());
                    }
                }
            }
            if !self.next_leaf(tree, store)? {
                return Ok(());
            }
        }
    }

    /// Calls `visit` with each leaf from the cursor's on and the index of its first entry
    /// not yet visited, until it returns `false` or the tree ends.
    pub fn for_each_leaf(
        &mut self,
        tree: &Tree,
        store: &Pages<'_>,
        mut visit: impl FnMut(&Node, usize) -> Result<bool>,
    ) -> Result<()> {
        loop {
            if !visit(&self.leaf, self.position)? {
                return Ok(());
            }
            if !self.next_leaf(tree, store)? {
                return Ok(());
            }
        }
    }

    /// Moves to the first entry of the next leaf; `false` at the end of the tree.
    fn next_leaf(&mut self, tree: &Tree, store: &Pages<'_>) -> Result<bool> {
        // Up to the nearest ancestor with a child to the right, then down its left edge.
        loop {
            let Some((node, index)) = self.stack.last_mut() else {
                return Ok(false);
            };
            let Node::Internal { children, .. } = node.as_ref() else {
                return Ok(false);
            };
            if *index + 1 < children.len() {
                *index += 1;
                break;
            }
            self.stack.pop();
        }
        let (node, index) = self.stack.last().expect("checked above");
        let Node::Internal { children, .. } = node.as_ref() else {
            return Ok(false);
        };
        let id = children[*index];
        self.leaf = descend_edge(tree, store, &mut self.stack, id, Edge::Left, self.keep)?;
        self.position = 0;
        Ok(true)
    }
}

impl Tree {
    /// A cursor that walks backwards from the last key inside `end`.
    pub fn cursor_back(&self, store: &Pages<'_>, end: Bound<&[u8]>) -> Result<BackCursor> {
        let (stack, leaf) = self.seek(store, end, Edge::Right, Keep::Everything)?;
        // The number of entries inside the bound: the next one back is before it.
        let position = match (end, leaf.as_ref()) {
            (Bound::Unbounded, Node::Leaf { entries, .. }) => entries.len(),
            (Bound::Unbounded, Node::Internal { .. }) => 0,
            (Bound::Excluded(key), _) => leaf.search(key),
            (Bound::Included(key), _) => leaf.search_past(key),
        };
        Ok(BackCursor {
            stack,
            leaf,
            position,
        })
    }
}

/// A position in the leaves that yields entries in descending key order.
pub struct BackCursor {
    stack: PathStack,
    leaf: Arc<Node>,
    /// Entries before this index are still to be yielded.
    position: usize,
}

impl BackCursor {
    /// `key`'s value when the cursor's leaf settles it, without a descent: `Some(Some(_))`
    /// when `key` is among the leaf's entries still to be yielded, `Some(None)` when it
    /// would lie after one of them (the tree does not hold it), `None` when it would lie
    /// before all of them (an earlier leaf may hold it). `key` must be below the cursor's
    /// bound and every entry it has yielded.
    pub fn find_behind(&self, key: &[u8]) -> Option<Option<Value>> {
        let Node::Leaf { entries, .. } = self.leaf.as_ref() else {
            return None;
        };
        match entries.find_before(self.position, key) {
            Ok(index) => Some(Some(entries.value(index))),
            Err(0) => None,
            Err(_) => Some(None),
        }
    }

    /// The previous entry, moving to the previous leaf when this one is done.
    pub fn prev(&mut self, tree: &Tree, store: &Pages<'_>) -> Result<Option<(Bytes, Value)>> {
        loop {
            if self.position > 0
                && let Node::Leaf { entries, .. } = self.leaf.as_ref()
            {
                self.position -= 1;
                return Ok(Some(entries.entry(self.position)));
            }
            // Up to the nearest ancestor with a child to the left, then down its right edge.
            loop {
                let Some((_, index)) = self.stack.last_mut() else {
                    return Ok(None);
                };
                if *index > 0 {
                    *index -= 1;
                    break;
                }
                self.stack.pop();
            }
            let (node, index) = self.stack.last().expect("checked above");
            let Node::Internal { children, .. } = node.as_ref() else {
                return Ok(None);
            };
            let id = children[*index];
            self.leaf = descend_edge(
                tree,
                store,
                &mut self.stack,
                id,
                Edge::Right,
                Keep::Everything,
            )?;
            self.position = match self.leaf.as_ref() {
                Node::Leaf { entries, .. } => entries.len(),
                Node::Internal { .. } => 0,
            };
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests;
