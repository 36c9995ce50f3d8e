use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use super::*;
use crate::cache::PageCache;
use crate::page::PageStore;
use crate::storage::SimStorage;

fn store() -> PageStore {
    PageStore::new(
        Arc::new(SimStorage::new()),
        Arc::new(PageCache::new(1 << 20)),
        4096,
    )
}

#[test]
fn cursors_agree_with_a_btreemap_both_ways() {
    let owned = store();
    let store = owned.maintaining();
    let mut tree = Tree::new();
    let mut model = BTreeMap::new();
    for i in 0..3000u64 {
        let key = Bytes::from(format!("{:06}", (i * 7919) % 10_000));
        let value = Value::Inline(Bytes::from(vec![b'v'; (i % 50) as usize]));
        tree.insert(&store, key.clone(), value.clone()).unwrap();
        model.insert(key, value);
    }
    for i in (0..10_000u64).step_by(997) {
        tree.remove(&store, format!("{i:06}").as_bytes()).unwrap();
        model.remove(format!("{i:06}").as_bytes());
    }
    let probes = ["000000", "004321", "004322", "009999", "5", ""];
    for probe in probes {
        let probe = probe.as_bytes();
        for bound in [
            Bound::Included(probe),
            Bound::Excluded(probe),
            Bound::Unbounded,
        ] {
            let mut back = tree.cursor_back(&store, bound).unwrap();
            let mut got = Vec::new();
            while let Some((key, _)) = back.prev(&tree, &store).unwrap() {
                got.push(key);
            }
            let expected: Vec<Bytes> = model
                .range::<[u8], _>((Bound::Unbounded, bound))
                .rev()
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(got, expected, "backwards from {bound:?}");
            let mut forward = tree.cursor(&store, bound).unwrap();
            let mut got = Vec::new();
            while let Some((key, _)) = forward.next(&tree, &store).unwrap() {
                got.push(key);
            }
            let expected: Vec<Bytes> = model
                .range::<[u8], _>((bound, Bound::Unbounded))
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(got, expected, "forwards from {bound:?}");
        }
    }
}

/// The leaves of `tree` (all changed, none written yet): how many, and their bytes
/// over what that many pages hold.
fn leaf_fill(tree: &Tree, store: &Pages) -> (usize, f64) {
    let (mut leaves, mut bytes) = (0, 0);
    for (_, slot) in tree.table.iter() {
        if let Slot::Dirty(node) = slot
            && !node.is_internal()
        {
            leaves += 1;
            bytes += node.encoded_len();
        }
    }
    (leaves, bytes as f64 / (leaves * store.page_bytes) as f64)
}

fn spaced_key(space: u32, i: u64) -> Bytes {
    Bytes::from([&space.to_be_bytes()[..], &i.to_be_bytes()].concat())
}

/// Keys inserted in order fill their leaves (a split leaves the run's leaf full), also
/// when another key space follows the run in its leaf; keys in scattered order split
/// leaves in balanced halves. Every key reads back either way.
#[test]
fn an_ordered_load_fills_its_leaves() {
    let load = |order: &[u64], before: &[u64]| {
        let owned = store();
        let store = owned.maintaining();
        let mut tree = Tree::new();
        let value = |i: u64| Value::Inline(Bytes::from(vec![i as u8; 40]));
        for &i in before {
            tree.insert(&store, spaced_key(2, i), value(i)).unwrap();
        }
        for &i in order {
            tree.insert(&store, spaced_key(1, i), value(i)).unwrap();
        }
        for &i in order {
            let got = tree.get(&store, &spaced_key(1, i)).unwrap();
            assert_eq!(got, Some(value(i)), "{i}");
        }
        for &i in before {
            assert_eq!(tree.get(&store, &spaced_key(2, i)).unwrap(), Some(value(i)));
        }
        leaf_fill(&tree, &store)
    };
    let ordered: Vec<u64> = (0..5000).collect();
    let scattered: Vec<u64> = (0..5000).map(|i| (i * 7919) % 5000).collect();
    let (leaves, fill) = load(&ordered, &[]);
    assert!(fill > 0.97, "in order: {leaves} leaves, {fill:.3} full");
    let (leaves, fill) = load(&scattered, &[]);
    assert!(fill < 0.8, "scattered: {leaves} leaves, {fill:.3} full");
    // A later space already in the leaves: each split moves it right of the run.
    let (leaves, fill) = load(&ordered, &[0, 1, 2]);
    assert!(
        fill > 0.95,
        "in order before another space: {leaves} leaves, {fill:.3}"
    );
    // Keys in descending order are not a run that ends: halves.
    let descending: Vec<u64> = (0..5000).rev().collect();
    let (leaves, fill) = load(&descending, &[]);
    assert!(fill < 0.8, "descending: {leaves} leaves, {fill:.3} full");
}

/// What a back cursor's leaf settles about a key below its bound is what the tree
/// holds, and it settles most keys close below the bound.
#[test]
fn a_back_cursor_finds_keys_just_behind_it_in_its_leaf() {
    let owned = store();
    let store = owned.maintaining();
    let mut tree = Tree::new();
    for i in (0..10_000u64).step_by(3) {
        let key = Bytes::from(format!("{i:06}"));
        let value = Value::Inline(Bytes::from(format!("v{i}")));
        tree.insert(&store, key, value).unwrap();
    }
    let mut settled = 0;
    for end in (0..10_000u64).step_by(101) {
        let end = format!("{end:06}");
        let back = tree
            .cursor_back(&store, Bound::Excluded(end.as_bytes()))
            .unwrap();
        for below in 1..=6u64 {
            let Some(key) = end.parse::<u64>().unwrap().checked_sub(below) else {
                continue;
            };
            let key = format!("{key:06}");
            if let Some(value) = back.find_behind(key.as_bytes()) {
                settled += 1;
                assert_eq!(value, tree.get(&store, key.as_bytes()).unwrap(), "{key}");
            }
        }
    }
    // 99 bounds, up to 6 keys below each: most are in the bound's own leaf.
    assert!(settled > 400, "{settled} settled");
}
