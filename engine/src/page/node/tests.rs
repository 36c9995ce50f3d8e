use super::*;

fn sample_leaf() -> Node {
    Node::leaf(vec![
        (
            Bytes::from_static(b"a"),
            Value::Inline(Bytes::from_static(b"one")),
        ),
        (
            Bytes::from_static(b"b"),
            Value::Large(LargeRef {
                segment_id: 3,
                frame_offset: 4096,
                value_offset: 17,
                value_len: 1 << 20,
            }),
        ),
    ])
}

#[test]
fn nodes_round_trip_with_exact_length() {
    let internal = Node::internal(
        vec![Bytes::from_static(b"m"), Bytes::from_static(b"t")],
        vec![1, 2, 3],
    );
    for node in [sample_leaf(), internal, Node::empty_leaf()] {
        let mut bytes = Vec::new();
        node.encode(&mut bytes);
        assert_eq!(bytes.len(), node.encoded_len());
        assert_eq!(Node::decode(Bytes::from(bytes), 1024).unwrap(), node);
    }
}

/// A leaf decoded from its image answers lookups in place (nothing built), gives the
/// entries it was encoded from when walked or changed, and encodes to the same bytes.
#[test]
fn a_decoded_leaf_is_read_in_place() {
    let entries: Vec<(Bytes, Value)> = (0..50u32)
        .map(|i| {
            let key = Bytes::from(format!("key{:04}", i * 2));
            let value = if i % 7 == 3 {
                Value::Large(LargeRef {
                    segment_id: i,
                    frame_offset: u64::from(i) << 33,
                    value_offset: 3 * i,
                    value_len: 1 << 20,
                })
            } else {
                Value::Inline(Bytes::from(vec![i as u8; i as usize]))
            };
            (key, value)
        })
        .collect();
    let built = Node::leaf(entries.clone());
    let mut image = Vec::new();
    built.encode(&mut image);
    let node = Node::decode(Bytes::from(image.clone()), 1024).unwrap();
    let Node::Leaf { entries: read, .. } = &node else {
        panic!("a leaf decodes to a leaf");
    };
    assert!(matches!(read, Entries::Image { .. }));
    for (index, (key, value)) in entries.iter().enumerate() {
        assert_eq!(node.find(key), Ok(index));
        assert_eq!(read.key(index), key.as_ref());
        assert_eq!(read.value(index), *value);
        let inline = match value {
            Value::Inline(bytes) => Some(bytes.as_ref()),
            _ => None,
        };
        assert_eq!(read.in_place(index), (key.as_ref(), inline));
        assert_eq!(
            built_entries(&built).in_place(index),
            (key.as_ref(), inline)
        );
        let absent = format!("key{:04}", index * 2 + 1);
        assert_eq!(node.find(absent.as_bytes()), Err(index + 1));
    }
    // The node read in place weighs no entry vector: a built leaf's overhead less its
    // 50 entries.
    assert_eq!(
        built.decoded_overhead() - node.decoded_overhead(),
        50 * size_of::<(Bytes, Value)>()
    );
    assert_eq!(*read.all(), *entries.as_slice());
    assert_eq!(node, built);
    assert_eq!(node.encoded_len(), image.len());
    let mut again = Vec::new();
    node.encode(&mut again);
    assert_eq!(again, image);

    let mut changed = node.clone();
    let Node::Leaf {
        entries: changing, ..
    } = changed.changing()
    else {
        unreachable!()
    };
    changing.to_mut().remove(0);
    assert!(matches!(changing, Entries::Built(_)));
    assert_eq!(*changing.all(), entries[1..]);
    assert_eq!(
        changed.encoded_len(),
        image.len() - leaf_entry_len(&entries[0].0, &entries[0].1)
    );
}

fn built_entries(node: &Node) -> &Entries {
    match node {
        Node::Leaf { entries, .. } => entries,
        Node::Internal { .. } => panic!("a leaf"),
    }
}

/// The bytes of `entries` as a leaf of kind 1, the kind written before slotted leaves.
fn walked_leaf_bytes(entries: &[(Bytes, Value)]) -> Vec<u8> {
    let mut out = vec![KIND_LEAF_WALKED];
    out.put_u32_le(entries.len() as u32);
    for (key, value) in entries {
        out.put_u16_le(key.len() as u16);
        out.put_slice(key);
        match value {
            Value::Inline(bytes) => {
                out.put_u8(VALUE_INLINE);
                out.put_u32_le(bytes.len() as u32);
                out.put_slice(bytes);
            }
            Value::Large(large) => {
                out.put_u8(VALUE_LARGE);
                out.put_u32_le(large.segment_id);
                out.put_u64_le(large.frame_offset);
                out.put_u32_le(large.value_offset);
                out.put_u32_le(large.value_len);
            }
            Value::Held(_) => unreachable!(),
        }
    }
    out
}

/// A leaf written before slotted leaves reads as it did, and its next encoding is a
/// slotted leaf with the same entries, sized as `encoded_len` says.
#[test]
fn a_walked_leaf_reads_and_encodes_slotted() {
    let Node::Leaf { entries, .. } = sample_leaf() else {
        unreachable!()
    };
    let entries = entries.all().to_vec();
    let old = walked_leaf_bytes(&entries);
    let node = Node::decode(Bytes::from(old.clone()), 1024).unwrap();
    assert!(node.is_walked_leaf());
    assert_eq!(node, sample_leaf());
    for (index, (key, value)) in entries.iter().enumerate() {
        assert_eq!(node.find(key), Ok(index));
        let Node::Leaf { entries: read, .. } = &node else {
            unreachable!()
        };
        assert_eq!(read.entry(index), (key.clone(), value.clone()));
    }
    let mut again = Vec::new();
    node.encode(&mut again);
    assert_eq!(again[0], KIND_LEAF);
    assert_eq!(again.len(), node.encoded_len());
    // Slots of 4 bytes for the old 2-byte key length, 1-byte tag and 4-byte length of
    // an inline value; a large reference's entry grows by a byte.
    assert_eq!(again.len(), old.len() - 3 + 1);
    let slotted = Node::decode(Bytes::from(again), 1024).unwrap();
    assert!(!slotted.is_walked_leaf());
    assert_eq!(slotted, node);
    // Unsorted keys in an old leaf are refused at every level of checks.
    let unsorted = walked_leaf_bytes(&[entries[1].clone(), entries[0].clone()]);
    for checks in [Checks::All, Checks::Structure] {
        assert!(Node::decode_checked(Bytes::from(unsorted.clone()), 1024, checks).is_err());
    }
}

/// The slotted image of a leaf with three inline entries (keys "a", "bb", "ccc" with
/// values of 1, 2 and 3 bytes), for damaging.
fn three_entry_image() -> Vec<u8> {
    let node = Node::leaf(
        (1..=3usize)
            .map(|n| {
                let key = Bytes::from(vec![b'a' + n as u8 - 1; n]);
                (key, Value::Inline(Bytes::from(vec![b'v'; n])))
            })
            .collect(),
    );
    let mut bytes = Vec::new();
    node.encode(&mut bytes);
    bytes
}

/// Each way a slot can disagree with its entries is refused by either level of checks;
/// the key order only by `Checks::All`, and a leaf with its keys out of order read with
/// `Checks::Structure` answers lookups without going outside its entries.
#[test]
fn slots_are_checked_against_their_entries() {
    let image = three_entry_image();
    let header = NODE_HEADER_BYTES;
    let slot = |index: usize| header + index * SLOT_BYTES;
    let set_u16 = |bytes: &mut Vec<u8>, at: usize, value: u16| {
        bytes[at..at + 2].copy_from_slice(&value.to_le_bytes());
    };
    let u16_at = |bytes: &[u8], at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    assert_eq!(
        u16_at(&image, slot(0)),
        12,
        "the entries follow three slots"
    );
    let mut damaged: Vec<(&str, Vec<u8>)> = Vec::new();
    // (Moving a boundary between two entries within their bytes makes another sound
    // leaf, for the checksum to catch.)
    let mut inside_key = image.clone();
    set_u16(&mut inside_key, slot(1), 12);
    damaged.push(("an entry starting inside the previous key", inside_key));
    let mut backwards = image.clone();
    set_u16(&mut backwards, slot(2), 11);
    damaged.push(("an entry starting before the previous one", backwards));
    let mut past_end = image.clone();
    set_u16(&mut past_end, slot(2), (image.len() - header + 1) as u16);
    damaged.push(("an entry starting past the page's end", past_end));
    let mut first = image.clone();
    set_u16(&mut first, slot(0), 13);
    damaged.push(("the first entry not after the slots", first));
    let mut key_past_end = image.clone();
    set_u16(&mut key_past_end, slot(0) + 2, 3);
    damaged.push(("a key past its entry's end", key_past_end));
    let mut last_key_past_end = image.clone();
    set_u16(&mut last_key_past_end, slot(2) + 2, 7);
    damaged.push(("the last key past the page's end", last_key_past_end));
    let mut long_key = image.clone();
    set_u16(&mut long_key, slot(0) + 2, 1025);
    damaged.push(("a key over the limit", long_key));
    let mut large = image.clone();
    set_u16(&mut large, slot(2) + 2, 3 | SLOT_LARGE);
    damaged.push(("a large reference of 3 bytes", large));
    let mut trailing = image.clone();
    trailing.push(0);
    let mut trailing_empty = vec![KIND_LEAF, 0, 0, 0, 0];
    trailing_empty.push(0);
    damaged.push(("bytes after an empty leaf", trailing_empty));
    let mut count = image.clone();
    count[1..5].copy_from_slice(&5u32.to_le_bytes());
    damaged.push(("more slots than the page holds", count));
    for (what, bytes) in damaged {
        for checks in [Checks::All, Checks::Structure] {
            assert!(
                Node::decode_checked(Bytes::from(bytes.clone()), 1024, checks).is_err(),
                "{what} ({checks:?})"
            );
        }
    }
    // Trailing bytes after the last entry are its value's: the page reads, one longer.
    let longer = Node::decode(Bytes::from(trailing), 1024).unwrap();
    let Node::Leaf { entries, .. } = &longer else {
        unreachable!()
    };
    assert_eq!(
        entries.value(2),
        Value::Inline(Bytes::from_static(b"vvv\0"))
    );

    // The keys swapped ("bb" before "a", each slot's length changed with it).
    let node = Node::leaf(vec![
        (Bytes::from_static(b"bb"), Value::Inline(Bytes::new())),
        (
            Bytes::from_static(b"a"),
            Value::Inline(Bytes::from_static(b"x")),
        ),
    ]);
    let mut unsorted = Vec::new();
    node.encode(&mut unsorted);
    assert!(Node::decode(Bytes::from(unsorted.clone()), 1024).is_err());
    let read = Node::decode_checked(Bytes::from(unsorted), 1024, Checks::Structure).unwrap();
    for probe in [&b""[..], b"a", b"b", b"bb", b"c"] {
        let _ = (read.find(probe), read.search(probe), read.search(probe));
    }
    assert_eq!(read, node, "read as written");
}

#[test]
fn every_truncation_is_an_error() {
    let mut bytes = Vec::new();
    sample_leaf().encode(&mut bytes);
    for len in 0..bytes.len() {
        assert!(Node::decode(Bytes::copy_from_slice(&bytes[..len]), 1024).is_err());
    }
}

/// A leaf and an internal node over `keys` (sorted, distinct) find every probe where a
/// plain binary search over the keys does.
fn assert_search_agrees(keys: &[&[u8]], probes: &[&[u8]]) {
    let entries: Vec<(Bytes, Value)> = keys
        .iter()
        .map(|k| (Bytes::copy_from_slice(k), Value::Inline(Bytes::new())))
        .collect();
    let leaf = Node::leaf(entries.clone());
    let separators: Vec<Bytes> = keys.iter().map(|k| Bytes::copy_from_slice(k)).collect();
    let internal = Node::internal(separators.clone(), (0..=keys.len() as u64).collect());
    for probe in probes {
        // A node's first search bisects its keys; later ones use its index.
        let fresh_leaf = Node::leaf(entries.clone());
        let fresh_internal = Node::internal(separators.clone(), (0..=keys.len() as u64).collect());
        assert_eq!(fresh_leaf.find(probe), keys.binary_search(probe));
        assert_eq!(
            fresh_internal.search(probe),
            keys.partition_point(|k| *k <= *probe)
        );
        assert_eq!(
            leaf.search(probe),
            keys.partition_point(|k| *k < *probe),
            "{keys:?} {probe:?}"
        );
        assert_eq!(
            internal.search(probe),
            keys.partition_point(|k| *k <= *probe),
            "{keys:?} {probe:?}"
        );
        assert_eq!(
            leaf.find(probe),
            keys.binary_search(probe),
            "{keys:?} {probe:?}"
        );
        assert_eq!(
            leaf.search_past(probe),
            keys.partition_point(|k| *k <= *probe),
            "{keys:?} {probe:?}"
        );
    }
}

#[test]
fn search_agrees_with_plain_binary_search() {
    let sets: Vec<Vec<&[u8]>> = vec![
        vec![b"a", b"ab", b"ab\0", b"ab\0\0", b"abc", b"b"],
        vec![b"user:000100", b"user:000101", b"user:000199", b"user:0002"],
        vec![
            b"same-prefix-aaaaaaaaaa1",
            b"same-prefix-aaaaaaaaaa2",
            b"same-prefix-aaaaaaaaab",
        ],
        vec![b"only"],
        vec![
            b"a-shared-prefix-longer-than-thirty-two-bytes-1",
            b"a-shared-prefix-longer-than-thirty-two-bytes-2",
        ],
        vec![],
    ];
    let probes: Vec<&[u8]> = vec![
        b"",
        b"a",
        b"ab",
        b"ab\0",
        b"ab\0\0\0",
        b"abb",
        b"c",
        b"user:",
        b"user:000100",
        b"user:0001001",
        b"user:000150",
        b"user:1",
        b"same-prefix-aaaaaaaaaa",
        b"same-prefix-aaaaaaaaaa15",
        b"only",
        b"onlz",
        b"\xff",
    ];
    for keys in sets {
        assert_search_agrees(&keys, &probes);
    }
}

/// Parent keys and array keys in one node: the shared prefix is empty and every parent
/// key has the same fingerprint, so the ties are bisected.
#[test]
fn search_bisects_keys_whose_fingerprints_tie() {
    let mut keys: Vec<Vec<u8>> = (0..300u64)
        .map(|id| [&1u32.to_be_bytes()[..], &(id * 2).to_be_bytes()].concat())
        .collect();
    keys.extend(
        (0..20u64).map(|id| [&0x8000_0001u32.to_be_bytes()[..], &id.to_be_bytes()].concat()),
    );
    let mut probes: Vec<Vec<u8>> = (0..=601u64)
        .map(|id| [&1u32.to_be_bytes()[..], &id.to_be_bytes()].concat())
        .collect();
    probes.extend(keys.iter().cloned());
    probes.push(vec![0, 0, 0, 1]);
    probes.push(vec![0x80, 0, 0, 1, 0xff]);
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let probes: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
    assert_search_agrees(&keys, &probes);
}

/// Leaves of `count` keys, searched `searches` times for each of their keys: whether
/// the leaf built its index, as a decoded image and as built in memory.
fn leaf_indexed_after(count: u64, searches: usize) -> (bool, bool) {
    let entries: Vec<(Bytes, Value)> = (0..count)
        .map(|i| {
            (
                Bytes::from(format!("key{i:04}")),
                Value::Inline(Bytes::new()),
            )
        })
        .collect();
    let built = Node::leaf(entries.clone());
    let mut image = Vec::new();
    built.encode(&mut image);
    let decoded = Node::decode(Bytes::from(image), 1024).expect("decodes");
    for node in [&built, &decoded] {
        for _ in 0..searches {
            for (index, (key, _)) in entries.iter().enumerate() {
                assert_eq!(node.find(key), Ok(index));
            }
        }
    }
    let has_index = |node: &Node| match node {
        Node::Leaf { aid, .. } => aid.prints.get().is_some(),
        Node::Internal { .. } => unreachable!("a leaf"),
    };
    (has_index(&built), has_index(&decoded))
}

#[test]
fn a_leaf_of_few_keys_is_bisected_and_never_indexed() {
    let under = MIN_INDEXED_LEAF_KEYS as u64 - 1;
    assert_eq!(leaf_indexed_after(under, 5), (false, false));
    assert_eq!(leaf_indexed_after(1, 5), (false, false));
    // From the threshold on, the second search builds the index.
    let at = MIN_INDEXED_LEAF_KEYS as u64;
    assert_eq!(leaf_indexed_after(at, 5), (true, true));
    assert_eq!(leaf_indexed_after(at * 10, 1), (true, true));
}

#[test]
fn a_node_is_weighed_with_an_index_only_where_one_can_be_built() {
    // A decoded slotted leaf holds nothing beside its image but the node and its aids.
    let leaf_of = |count: u64| {
        let entries = (0..count)
            .map(|i| {
                (
                    Bytes::from(format!("key{i:04}")),
                    Value::Inline(Bytes::new()),
                )
            })
            .collect();
        let mut image = Vec::new();
        Node::leaf(entries).encode(&mut image);
        Node::decode(Bytes::from(image), 1024).expect("decodes")
    };
    let bare = size_of::<Node>() + size_of::<Summary>();
    let under = MIN_INDEXED_LEAF_KEYS - 1;
    assert_eq!(leaf_of(under as u64).decoded_overhead(), bare);
    let at = MIN_INDEXED_LEAF_KEYS;
    let index = MAX_INDEXED_PREFIX + at * size_of::<u64>();
    assert_eq!(leaf_of(at as u64).decoded_overhead(), bare + index);
    // An inner page of one key is indexed all the same.
    let inner = Node::internal(vec![Bytes::from_static(b"a")], vec![1, 2]);
    let without_index = bare + size_of::<Bytes>() + 2 * size_of::<PageId>();
    let index = MAX_INDEXED_PREFIX + size_of::<u64>();
    assert_eq!(inner.decoded_overhead(), without_index + index);
}

#[test]
fn huge_count_is_refused_before_allocation() {
    let bytes = vec![KIND_LEAF, 0xff, 0xff, 0xff, 0xff, 0, 0];
    assert!(Node::decode(Bytes::from(bytes), 1024).is_err());
}

#[test]
fn unsorted_keys_are_refused() {
    let node = Node::leaf(vec![
        (Bytes::from_static(b"b"), Value::Inline(Bytes::new())),
        (Bytes::from_static(b"a"), Value::Inline(Bytes::new())),
    ]);
    let mut bytes = Vec::new();
    node.encode(&mut bytes);
    assert!(Node::decode(Bytes::from(bytes), 1024).is_err());
}
