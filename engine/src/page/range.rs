//! Removing a range of keys from the tree (`Op::DeleteRange`): a page wholly inside the
//! range is freed without being rewritten (a leaf is read, to take its large records and
//! chunks out of the space accounting), and only the pages the range's two ends cut through
//! are changed. Deleting a dropped collection's records thus rewrites a handful of pages,
//! however many it frees. See `format-spec/pages.md`.

use std::sync::Arc;

use bytes::Bytes;

use super::node::{Node, PageId};
use super::table::Slot;
use super::tree::{MAX_DEPTH, Tree};
use super::{Pages, keys};
use crate::error::Result;

impl Tree {
    /// Removes every entry with `start <= key < end`; returns the parent records' keys it
    /// removed (which the record tier must forget).
    pub fn remove_range(
        &mut self,
        store: &Pages<'_>,
        start: &[u8],
        end: &[u8],
    ) -> Result<Vec<Bytes>> {
        let mut removed = Vec::new();
        if start >= end {
            return Ok(removed);
        }
        let root = self.root;
        let bounds = Bounds {
            start,
            end,
            lo: None,
            hi: None,
        };
        if self.remove_in(store, root, bounds, &mut removed, 0)? {
            // The root lost every entry: the tree is one empty leaf.
            self.replace_slot(root, Slot::Dirty(Arc::new(Node::empty_leaf())));
        }
        self.collapse_root(store)?;
        Ok(removed)
    }

    /// Removes the range from the subtree at `id`, which holds keys in `[lo, hi)`; returns
    /// whether the subtree is left empty (the caller frees it, unless it is the root).
    fn remove_in(
        &mut self,
        store: &Pages<'_>,
        id: PageId,
        bounds: Bounds<'_>,
        removed: &mut Vec<Bytes>,
        depth: usize,
    ) -> Result<bool> {
        if depth > MAX_DEPTH {
            return Err(store.tree_corruption(id, "tree deeper than any valid tree"));
        }
        let node = self.node(store, id)?;
        let (keys, children) = match node.as_ref() {
            Node::Leaf { entries, .. } => {
                let all = entries.all();
                let from = all.partition_point(|(k, _)| k.as_ref() < bounds.start);
                let to = all.partition_point(|(k, _)| k.as_ref() < bounds.end);
                if from == to {
                    return Ok(false);
                }
                drop(all);
                let Node::Leaf { entries, .. } = self.node_mut(store, id)? else {
                    return Err(store.tree_corruption(id, "expected a leaf"));
                };
                let entries = entries.to_mut();
                let gone: Vec<_> = entries.drain(from..to).collect();
                let empty = entries.is_empty();
                for (key, value) in &gone {
                    if keys::is_parent(key) {
                        removed.push(key.clone());
                    }
                    self.account(key, value, false);
                }
                return Ok(empty);
            }
            Node::Internal { keys, children, .. } => (keys.clone(), children.clone()),
        };
        drop(node);
        let mut doomed = Vec::new();
        for (at, &child) in children.iter().enumerate() {
            let lo = if at == 0 {
                bounds.lo
            } else {
                Some(keys[at - 1].as_ref())
            };
            let hi = keys.get(at).map_or(bounds.hi, |k| Some(k.as_ref()));
            if hi.is_some_and(|hi| hi <= bounds.start) {
                continue;
            }
            if lo.is_some_and(|lo| lo >= bounds.end) {
                break;
            }
            let inside =
                lo.is_some_and(|lo| lo >= bounds.start) && hi.is_some_and(|hi| hi <= bounds.end);
            if inside {
                self.free_subtree(store, child, removed, depth + 1)?;
                doomed.push(at);
            } else {
                let child_bounds = Bounds { lo, hi, ..bounds };
                if self.remove_in(store, child, child_bounds, removed, depth + 1)? {
                    self.replace_slot(child, Slot::Free);
                    doomed.push(at);
                }
            }
        }
        if doomed.is_empty() {
            return Ok(false);
        }
        let Node::Internal { keys, children, .. } = self.node_mut(store, id)? else {
            return Err(store.tree_corruption(id, "expected an internal page"));
        };
        // From the right, so that the indexes still name the same children: each child
        // goes with the separator before it (the first, with the one after it).
        for &at in doomed.iter().rev() {
            children.remove(at);
            if !keys.is_empty() {
                keys.remove(at.saturating_sub(1));
            }
        }
        assert!(
            keys.len() + 1 == children.len() || (keys.is_empty() && children.is_empty()),
            "page {id}: keys and children after a range removal"
        );
        Ok(children.is_empty())
    }

    /// Frees every page of the subtree at `id`, taking its leaves' entries out of the
    /// accounting.
    fn free_subtree(
        &mut self,
        store: &Pages<'_>,
        id: PageId,
        removed: &mut Vec<Bytes>,
        depth: usize,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(store.tree_corruption(id, "tree deeper than any valid tree"));
        }
        let node = self.node(store, id)?;
        match node.as_ref() {
            Node::Leaf { entries, .. } => {
                for (key, value) in entries.all().iter() {
                    if keys::is_parent(key) {
                        removed.push(key.clone());
                    }
                    self.account(key, value, false);
                }
            }
            Node::Internal { children, .. } => {
                for &child in children {
                    self.free_subtree(store, child, removed, depth + 1)?;
                }
            }
        }
        self.replace_slot(id, Slot::Free);
        Ok(())
    }
}

/// The range being removed, and the keys a subtree holds: `[lo, hi)`, `None` for no bound.
#[derive(Clone, Copy)]
struct Bounds<'a> {
    start: &'a [u8],
    end: &'a [u8],
    lo: Option<&'a [u8]>,
    hi: Option<&'a [u8]>,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Bound;

    use bytes::Bytes;

    use crate::cache::PageCache;
    use crate::page::node::{Node, PageId, Value};
    use crate::page::table::Slot;
    use crate::page::tree::Tree;
    use crate::page::{PageStore, Pages};
    use crate::storage::SimStorage;

    /// The pages reachable from the root, each once.
    fn reachable(tree: &Tree, store: &Pages<'_>, id: PageId, out: &mut Vec<PageId>) {
        out.push(id);
        if let Node::Internal { children, .. } = tree.node(store, id).unwrap().as_ref() {
            for &child in children {
                reachable(tree, store, child, out);
            }
        }
    }

    /// Every entry in order, and the pages in use: exactly those reachable from the root.
    fn contents(tree: &Tree, store: &Pages<'_>) -> Vec<(Bytes, Value)> {
        let mut pages = Vec::new();
        reachable(tree, store, tree.root, &mut pages);
        pages.sort_unstable();
        let used: Vec<PageId> = tree
            .table
            .iter()
            .filter(|(_, slot)| !matches!(slot, Slot::Free))
            .map(|(id, _)| id)
            .collect();
        assert_eq!(pages, used, "pages in use are the reachable ones");
        let mut cursor = tree.cursor(store, Bound::Unbounded).unwrap();
        let mut out = Vec::new();
        while let Some(entry) = cursor.next(tree, store).unwrap() {
            out.push(entry);
        }
        out
    }

    #[test]
    fn ranges_removed_leave_what_a_btreemap_leaves_and_free_their_pages() {
        let owned = PageStore::new(
            std::sync::Arc::new(SimStorage::new()),
            std::sync::Arc::new(PageCache::new(1 << 20)),
            4096,
        );
        let store = owned.maintaining();
        let mut tree = Tree::new();
        let mut model = BTreeMap::new();
        for i in 0..6000u64 {
            let key = Bytes::from(format!("{:06}", (i * 7919) % 20_000));
            let value = Value::Inline(Bytes::from(vec![b'v'; (i % 90) as usize]));
            tree.insert(&store, key.clone(), value.clone()).unwrap();
            model.insert(key, value);
        }
        let used = |tree: &Tree| {
            tree.table
                .iter()
                .filter(|(_, s)| !matches!(s, Slot::Free))
                .count()
        };
        let before = used(&tree);
        // Empty and inverted ranges, a range inside one leaf, ranges over many pages, one
        // from before the first key, one past the last, and everything.
        for (start, end) in [
            ("005000", "005000"),
            ("007000", "006000"),
            ("001000", "001003"),
            ("002000", "009000"),
            ("", "000500"),
            ("015000", "999999"),
            ("009000", "009001"),
            ("", "\u{ff}"),
        ] {
            let removed = tree
                .remove_range(&store, start.as_bytes(), end.as_bytes())
                .unwrap();
            let doomed: Vec<Bytes> = model
                .keys()
                .filter(|k| k.as_ref() >= start.as_bytes() && k.as_ref() < end.as_bytes())
                .cloned()
                .collect();
            // Every key here reads as a parent record's (a leading byte below 0x40): each
            // removed one is reported, in order.
            assert_eq!(removed, doomed, "[{start}, {end})");
            for key in doomed {
                model.remove(&key);
            }
            let expected: Vec<(Bytes, Value)> =
                model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(contents(&tree, &store), expected, "after [{start}, {end})");
            if start == "002000" {
                // A third of the keys: their pages are gone, but for the two cut through.
                assert!(
                    used(&tree) < before * 3 / 4,
                    "{} of {before} pages",
                    used(&tree)
                );
            }
        }
        assert!(model.is_empty());
        assert_eq!(used(&tree), 1, "one empty leaf is left");
        // The tree takes keys again.
        tree.insert(
            &store,
            Bytes::from_static(b"again"),
            Value::Inline(Bytes::new()),
        )
        .unwrap();
        assert_eq!(contents(&tree, &store).len(), 1);
    }
}
