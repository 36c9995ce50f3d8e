//! B+tree nodes and their page encoding: the one place that reads and writes page bytes.
//! See `format-spec/pages.md`.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use bytes::{Buf, BufMut, Bytes};

use crate::item::Summary;
use crate::limits::widths::{u16_len, u32_len};
use crate::log::FrameLoc;

/// A page's identity; the page table maps it to the page image's location in the log.
pub type PageId = u64;

/// A leaf whose entries are found by walking them (written before checkpoint version 6;
/// read, never written).
const KIND_LEAF_WALKED: u8 = 1;
const KIND_INTERNAL: u8 = 2;
/// A leaf that begins with a slot per entry: found without reading the entries.
const KIND_LEAF: u8 = 3;
const VALUE_INLINE: u8 = 0;
const VALUE_LARGE: u8 = 1;
/// Bytes of a leaf's slot: the entry's offset u16, its key length u16 with `SLOT_LARGE`.
const SLOT_BYTES: usize = 4;
/// In a slot's key length: the value is a large-record reference.
const SLOT_LARGE: u16 = 0x8000;

/// Bytes of a page's fixed header: kind and entry count.
pub const NODE_HEADER_BYTES: usize = 1 + 4;
/// Bytes of a large-record reference inside a leaf.
pub const LARGE_REF_BYTES: usize = 4 + 8 + 4 + 4;

/// A record too large to sit in a leaf: it stays in the log frame that carried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LargeRef {
    /// The frame holding the record (its header offset; its length is read from the header).
    pub segment_id: u32,
    pub frame_offset: u64,
    /// Where the record's bytes start inside the frame's payload, and how many there are.
    pub value_offset: u32,
    pub value_len: u32,
}

impl LargeRef {
    pub fn frame(&self, frame_len: u32) -> FrameLoc {
        FrameLoc {
            segment_id: self.segment_id,
            offset: self.frame_offset,
            len: frame_len,
        }
    }
}

/// A leaf's value: the record bytes, or where the log holds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Inline(Bytes),
    Large(LargeRef),
    /// A large record a patch made, held in memory until the next checkpoint writes it to
    /// the log and leaves a `Large` in its place; never in a page image.
    Held(Bytes),
}

impl Value {
    fn encoded_len(&self) -> usize {
        match self {
            Value::Inline(bytes) => bytes.len(),
            // The reference it becomes at the next checkpoint.
            Value::Large(_) | Value::Held(_) => LARGE_REF_BYTES,
        }
    }
}

/// A decoded page.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// Sorted, distinct keys with their values.
    Leaf { entries: Entries, aid: SearchAid },
    /// `children.len() == keys.len() + 1`; child `i` holds keys `k` with
    /// `keys[i-1] <= k < keys[i]`.
    Internal {
        keys: Vec<Bytes>,
        children: Vec<PageId>,
        aid: SearchAid,
    },
}

/// A leaf's entries. A leaf decoded from its page image is read in place: a lookup finds
/// its key through the page's slots and builds only the value it returns, a walk builds
/// one entry at a time, and a page that leaves the cache frees nothing but its node. A
/// writer builds them all (`to_mut`): the node is then its own copy, out of the cache.
#[derive(Clone, Debug)]
pub enum Entries {
    Built(Vec<(Bytes, Value)>),
    Image {
        /// The page image after its header; every slot and entry in it was checked by
        /// `decode`.
        image: Bytes,
        layout: Layout,
    },
}

/// How a leaf read in place finds its entries in its image.
#[derive(Clone, Debug)]
pub enum Layout {
    /// `count` slots at the image's start (a leaf of kind 3): reading entry `i` reads slot
    /// `i`, and the next one's offset for where the entry ends.
    Slotted { count: u32 },
    /// A leaf of kind 1: where each entry (its key length) starts, found by walking them.
    Walked { starts: Box<[u32]> },
}

/// What a slotted leaf's slot says of its entry: where it starts, its key's length, whether
/// its value is a large reference, and where it ends (the next entry's start, the last
/// entry at the image's end).
struct SlotRead {
    at: usize,
    key_len: usize,
    large: bool,
    end: usize,
}

/// Slot `index` of a slotted leaf's `count` (`image` is the page after its header): reads
/// the slot and the next; the bounds are the caller's to check (`check_slots`) or rely on.
#[inline]
fn read_slot(image: &[u8], count: usize, index: usize) -> SlotRead {
    let u16_at = |at: usize| u16::from_le_bytes([image[at], image[at + 1]]);
    let slot = index * SLOT_BYTES;
    let meta = u16_at(slot + 2);
    SlotRead {
        at: u16_at(slot) as usize,
        key_len: (meta & !SLOT_LARGE) as usize,
        large: meta & SLOT_LARGE != 0,
        end: match index + 1 < count {
            true => u16_at(slot + SLOT_BYTES) as usize,
            false => image.len(),
        },
    }
}

/// Where an entry's value lies in a checked image.
enum ValueAt {
    Inline(std::ops::Range<usize>),
    /// The 20 bytes of a reference start here.
    Large(usize),
}

/// Which of a page's rules `decode` checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checks {
    /// Every rule, key order too.
    All,
    /// Every length and bound, so that no read of the node goes outside its entries, but
    /// not the order of a slotted leaf's keys (checking it reads every key): for a page
    /// whose frame was checked whole before, its bytes unchanged since.
    Structure,
}

impl Entries {
    pub fn len(&self) -> usize {
        match self {
            Entries::Built(entries) => entries.len(),
            Entries::Image {
                layout: Layout::Slotted { count },
                ..
            } => *count as usize,
            Entries::Image {
                layout: Layout::Walked { starts },
                ..
            } => starts.len(),
        }
    }

    /// Where entry `index` of a checked image has its key and its value.
    fn locate(image: &[u8], layout: &Layout, index: usize) -> (std::ops::Range<usize>, ValueAt) {
        match layout {
            Layout::Slotted { count } => {
                let slot = read_slot(image, *count as usize, index);
                let key = slot.at..slot.at + slot.key_len;
                let value = match slot.large {
                    true => ValueAt::Large(key.end),
                    false => ValueAt::Inline(key.end..slot.end),
                };
                (key, value)
            }
            Layout::Walked { starts } => {
                let start = starts[index] as usize;
                let key_len = u16::from_le_bytes([image[start], image[start + 1]]) as usize;
                let key = start + 2..start + 2 + key_len;
                let at = key.end;
                let value = match image[at] {
                    VALUE_INLINE => {
                        let len =
                            u32::from_le_bytes(image[at + 1..at + 5].try_into().expect("4 bytes"));
                        ValueAt::Inline(at + 5..at + 5 + len as usize)
                    }
                    // `decode` let no other tag through.
                    _ => ValueAt::Large(at + 1),
                };
                (key, value)
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key of entry `index`.
    pub fn key(&self, index: usize) -> &[u8] {
        match self {
            Entries::Built(entries) => &entries[index].0,
            Entries::Image { image, layout, .. } => &image[Self::locate(image, layout, index).0],
        }
    }

    /// The value of entry `index`; an inline value is a slice of the page image.
    pub fn value(&self, index: usize) -> Value {
        match self {
            Entries::Built(entries) => entries[index].1.clone(),
            Entries::Image { image, layout, .. } => {
                image_value(image, Self::locate(image, layout, index).1)
            }
        }
    }

    /// Entry `index`'s key, and its value's bytes if it is inline, where they lie (slices
    /// of the page image for a leaf read in place): read without a handle to either.
    pub fn in_place(&self, index: usize) -> (&[u8], Option<&[u8]>) {
        match self {
            Entries::Built(entries) => {
                let (key, value) = &entries[index];
                match value {
                    Value::Inline(bytes) => (key, Some(bytes)),
                    Value::Large(_) | Value::Held(_) => (key, None),
                }
            }
            Entries::Image { image, layout } => match Self::locate(image, layout, index) {
                (key, ValueAt::Inline(value)) => (&image[key], Some(&image[value])),
                (key, ValueAt::Large(_)) => (&image[key], None),
            },
        }
    }

    /// `key`'s place among the first `end` entries, by bisection: `Ok` where it is,
    /// `Err` where it would go.
    pub fn find_before(&self, end: usize, key: &[u8]) -> std::result::Result<usize, usize> {
        match bisect(&|i| self.key(i), 0, end, key) {
            (index, true) => Ok(index),
            (index, false) => Err(index),
        }
    }

    /// Entry `index`, its key a slice of the page image for a leaf read in place.
    pub fn entry(&self, index: usize) -> (Bytes, Value) {
        match self {
            Entries::Built(entries) => entries[index].clone(),
            Entries::Image { image, layout, .. } => {
                let (key, value) = Self::locate(image, layout, index);
                (image.slice(key), image_value(image, value))
            }
        }
    }

    /// Every entry: a leaf read in place builds them for this call, kept nowhere, so a
    /// cached page holds no memory its weight does not count.
    pub fn all(&self) -> Cow<'_, [(Bytes, Value)]> {
        match self {
            Entries::Built(entries) => Cow::Borrowed(entries),
            Entries::Image { .. } => Cow::Owned((0..self.len()).map(|i| self.entry(i)).collect()),
        }
    }

    /// The entries for changing: a leaf read in place is built first.
    pub fn to_mut(&mut self) -> &mut Vec<(Bytes, Value)> {
        if let Entries::Image { .. } = self {
            *self = Entries::Built(self.all().into_owned());
        }
        match self {
            Entries::Built(entries) => entries,
            Entries::Image { .. } => unreachable!("built just above"),
        }
    }

    /// Bytes of memory beside the page image.
    fn overhead(&self) -> usize {
        match self {
            Entries::Built(entries) => entries.capacity() * size_of::<(Bytes, Value)>(),
            Entries::Image {
                layout: Layout::Slotted { .. },
                ..
            } => 0,
            Entries::Image {
                layout: Layout::Walked { starts },
                ..
            } => starts.len() * size_of::<u32>(),
        }
    }
}

impl PartialEq for Entries {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && (0..self.len())
                .all(|i| self.key(i) == other.key(i) && self.value(i) == other.value(i))
    }
}

/// The value at `at` in a checked image.
fn image_value(image: &Bytes, at: ValueAt) -> Value {
    let u32_at = |at: usize| u32::from_le_bytes(image[at..at + 4].try_into().expect("4 bytes"));
    match at {
        ValueAt::Inline(range) => Value::Inline(image.slice(range)),
        ValueAt::Large(at) => Value::Large(LargeRef {
            segment_id: u32_at(at),
            frame_offset: u64::from_le_bytes(image[at + 4..at + 12].try_into().expect("8 bytes")),
            value_offset: u32_at(at + 12),
            value_len: u32_at(at + 16),
        }),
    }
}

/// What readers build over a node on first use, never stored and not part of equality:
/// a search index over its keys (the length of the prefix all keys share, and for each key
/// the 8 bytes after it as a big-endian number: binary search then runs over one dense
/// array instead of chasing a pointer per probe, which is what a lookup in a cached page
/// costs), and for a leaf the summary of all its entries read as chunk index entries.
#[derive(Debug, Default)]
pub struct SearchAid {
    prints: OnceLock<Fingerprints>,
    chunks: OnceLock<Option<Summary>>,
    /// Whether the node was searched before: the first search bisects the keys and the
    /// second builds the index, so a leaf loaded for one lookup and evicted never pays for
    /// it (a leaf of fewer than [`MIN_INDEXED_LEAF_KEYS`] keys never builds one).
    searched: AtomicBool,
}

impl Clone for SearchAid {
    fn clone(&self) -> Self {
        SearchAid {
            prints: self.prints.clone(),
            chunks: self.chunks.clone(),
            searched: AtomicBool::new(self.searched.load(AtomicOrdering::Relaxed)),
        }
    }
}

/// Keys' common prefix is kept inline up to this length (longer shared prefixes are cut
/// here, which keeps the search correct: any common prefix will do).
const MAX_INDEXED_PREFIX: usize = 32;

#[derive(Clone, Debug)]
struct Fingerprints {
    prefix_len: usize,
    prefix: [u8; MAX_INDEXED_PREFIX],
    values: Vec<u64>,
}

impl PartialEq for SearchAid {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

fn fingerprint(key: &[u8], prefix_len: usize) -> u64 {
    let mut bytes = [0u8; 8];
    let rest = key.get(prefix_len..).unwrap_or(&[]);
    let n = rest.len().min(8);
    bytes[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(bytes)
}

/// A leaf of fewer keys than this is always bisected, never indexed. A leaf is loaded for
/// the lookups the record tier misses, which seldom come back to it while it is cached:
/// building its index reads every key, where bisecting a few dozen reads five or six of
/// them. (Inner pages, which every lookup passes, are indexed whatever their size.)
const MIN_INDEXED_LEAF_KEYS: usize = 32;

/// Whether a node of `count` keys is indexed on its second search (see [`SearchAid`]).
fn indexed(leaf: bool, count: usize) -> bool {
    !leaf || count >= MIN_INDEXED_LEAF_KEYS
}

/// The number of keys below `key` (the keys are sorted and distinct), and whether the key
/// at that index is `key`.
fn lower_bound<'a>(
    keys: impl Fn(usize) -> &'a [u8],
    count: usize,
    aid: &SearchAid,
    key: &[u8],
    leaf: bool,
) -> (usize, bool) {
    if count == 0 {
        return (0, false);
    }
    if !indexed(leaf, count)
        || aid.prints.get().is_none() && !aid.searched.swap(true, AtomicOrdering::Relaxed)
    {
        return bisect(&keys, 0, count, key);
    }
    let prints = aid.prints.get_or_init(|| {
        let (first, last) = (keys(0), keys(count - 1));
        let prefix_len = first
            .iter()
            .zip(last)
            .take(MAX_INDEXED_PREFIX)
            .take_while(|(a, b)| a == b)
            .count();
        let mut prefix = [0u8; MAX_INDEXED_PREFIX];
        prefix[..prefix_len].copy_from_slice(&first[..prefix_len]);
        Fingerprints {
            prefix_len,
            prefix,
            values: (0..count)
                .map(|i| fingerprint(keys(i), prefix_len))
                .collect(),
        }
    });
    let prefix = &prints.prefix[..prints.prefix_len];
    let key_prefix = &key[..prints.prefix_len.min(key.len())];
    match key_prefix.cmp(prefix) {
        Ordering::Less => return (0, false),
        Ordering::Greater => return (count, false),
        Ordering::Equal if key.len() < prints.prefix_len => return (0, false),
        Ordering::Equal => {}
    }
    let wanted = fingerprint(key, prints.prefix_len);
    let low = prints.values.partition_point(|f| *f < wanted);
    let high = low + prints.values[low..].partition_point(|f| *f == wanted);
    // Keys whose fingerprints tie are told apart by the keys themselves, by bisection: a
    // node whose keys agree on the 8 bytes past the shared prefix (keys of two key spaces
    // in one node make that prefix empty) would otherwise cost a comparison per key. A key
    // whose fingerprint no key shares is absent, and is placed without reading any key.
    bisect(&keys, low, high, key)
}

/// Checks a slotted leaf's slots against its image (the bytes after the header): the
/// entries follow the slots in slot order with neither gap nor overlap, the last ending
/// where the image does, each at least its key long, a key within `max_key_bytes`, a
/// large reference exactly its length. Reads only the slots.
fn check_slots(image: &[u8], count: usize, max_key_bytes: usize) -> Result<Layout, String> {
    let slots_end = count
        .checked_mul(SLOT_BYTES)
        .filter(|end| *end <= image.len())
        .ok_or_else(|| format!("{count} slots larger than the page"))?;
    if image.len() > u16::MAX as usize {
        return Err(format!("leaf of {} bytes", image.len()));
    }
    // Each entry ends where the next slot says the next one starts, so only the first
    // start needs checking against the slots' end; the last entry ends at the image's.
    let (slots, _) = image[..slots_end].as_chunks::<SLOT_BYTES>();
    let start = |slot: &[u8; SLOT_BYTES]| u16::from_le_bytes([slot[0], slot[1]]) as usize;
    if let Some(first) = slots.first()
        && start(first) != slots_end
    {
        return Err(format!("entry 0 at {}, not at {slots_end}", start(first)));
    }
    let mut at = slots_end;
    for (index, slot) in slots.iter().enumerate() {
        let meta = u16::from_le_bytes([slot[2], slot[3]]);
        let key_len = (meta & !SLOT_LARGE) as usize;
        let end = slots.get(index + 1).map_or(image.len(), start);
        if key_len > max_key_bytes {
            return Err(format!(
                "key length {key_len} over the limit {max_key_bytes}"
            ));
        }
        let value_len = end
            .checked_sub(at + key_len)
            .ok_or_else(|| format!("entry {index}'s key runs past its end"))?;
        if meta & SLOT_LARGE != 0 && value_len != LARGE_REF_BYTES {
            return Err(format!("large reference of {value_len} bytes"));
        }
        at = end;
    }
    // The last entry ends at the image's end: only a leaf of no entries can fail here.
    if at != image.len() {
        return Err(format!("{} bytes after the entries", image.len() - at));
    }
    Ok(Layout::Slotted {
        count: u32_len(count),
    })
}

/// `lower_bound` among the keys from `low` to `high`, which `key` lies within.
fn bisect<'a>(
    keys: &impl Fn(usize) -> &'a [u8],
    mut low: usize,
    mut high: usize,
    key: &[u8],
) -> (usize, bool) {
    while low < high {
        let middle = low + (high - low) / 2;
        match keys(middle).cmp(key) {
            Ordering::Less => low = middle + 1,
            Ordering::Equal => return (middle, true),
            Ordering::Greater => high = middle,
        }
    }
    (low, false)
}

/// Bytes one leaf entry takes in its page, its slot included.
pub fn leaf_entry_len(key: &[u8], value: &Value) -> usize {
    SLOT_BYTES + key.len() + value.encoded_len()
}

/// Bytes one internal separator with its right child takes in its page.
pub fn internal_entry_len(key: &[u8]) -> usize {
    2 + key.len() + 8
}

impl Node {
    pub fn empty_leaf() -> Self {
        Self::leaf(Vec::new())
    }

    #[cfg(any(test, feature = "testing"))]
    /// Whether this is a leaf read from a page of the kind written before slotted leaves
    /// (its next encoding is slotted).
    pub fn is_walked_leaf(&self) -> bool {
        matches!(
            self,
            Node::Leaf {
                entries: Entries::Image {
                    layout: Layout::Walked { .. },
                    ..
                },
                ..
            }
        )
    }

    /// Whether this is an inner page (keys and children) rather than a leaf.
    pub fn is_internal(&self) -> bool {
        matches!(self, Node::Internal { .. })
    }

    pub fn leaf(entries: Vec<(Bytes, Value)>) -> Self {
        Node::Leaf {
            entries: Entries::Built(entries),
            aid: SearchAid::default(),
        }
    }

    pub fn internal(keys: Vec<Bytes>, children: Vec<PageId>) -> Self {
        Node::Internal {
            keys,
            children,
            aid: SearchAid::default(),
        }
    }

    /// In a leaf: the index of the first key above `key`.
    pub fn search_past(&self, key: &[u8]) -> usize {
        match self {
            Node::Leaf { entries, aid } => {
                let (index, equal) = lower_bound(|i| entries.key(i), entries.len(), aid, key, true);
                index + usize::from(equal)
            }
            Node::Internal { .. } => self.search(key),
        }
    }

    /// In a leaf: the index of `key`'s entry, or where it would go.
    pub fn find(&self, key: &[u8]) -> std::result::Result<usize, usize> {
        match self {
            Node::Leaf { entries, aid } => {
                match lower_bound(|i| entries.key(i), entries.len(), aid, key, true) {
                    (index, true) => Ok(index),
                    (index, false) => Err(index),
                }
            }
            Node::Internal { .. } => Err(self.search(key)),
        }
    }

    /// The summaries of every entry of a leaf merged, each entry read by `summary` (`None`
    /// when one is not a chunk index entry, or for an internal node); computed once per
    /// node, by the first reader that asks. An aggregate that covers the whole leaf takes
    /// it instead of visiting the entries.
    pub fn chunk_summary(
        &self,
        summary: impl Fn(&Bytes, &Value) -> Option<Summary>,
    ) -> Option<&Summary> {
        let Node::Leaf { entries, aid } = self else {
            return None;
        };
        aid.chunks
            .get_or_init(|| {
                let mut merged = Summary::default();
                for index in 0..entries.len() {
                    let (key, value) = entries.entry(index);
                    merged.merge(&summary(&key, &value)?);
                }
                Some(merged)
            })
            .as_ref()
    }

    /// Forgets the readers' aids; called before the node is changed.
    pub fn changing(&mut self) -> &mut Self {
        match self {
            Node::Leaf { aid, .. } | Node::Internal { aid, .. } => *aid = SearchAid::default(),
        }
        self
    }

    /// In a leaf: the index of the first key not below `key`. In an internal node: the
    /// index of the child that holds `key`.
    pub fn search(&self, key: &[u8]) -> usize {
        match self {
            Node::Leaf { entries, aid } => {
                lower_bound(|i| entries.key(i), entries.len(), aid, key, true).0
            }
            Node::Internal { keys, aid, .. } => {
                let (low, equal) = lower_bound(|i| &keys[i], keys.len(), aid, key, false);
                low + usize::from(equal)
            }
        }
    }

    /// The bytes this node takes when encoded.
    pub fn encoded_len(&self) -> usize {
        match self {
            Node::Leaf { entries, .. } => {
                NODE_HEADER_BYTES
                    + match entries {
                        // A slotted image is encoded as it was read.
                        Entries::Image {
                            image,
                            layout: Layout::Slotted { .. },
                            ..
                        } => image.len(),
                        _ => entries
                            .all()
                            .iter()
                            .map(|(k, v)| leaf_entry_len(k, v))
                            .sum::<usize>(),
                    }
            }
            Node::Internal { keys, .. } => {
                NODE_HEADER_BYTES + 8 + keys.iter().map(|k| internal_entry_len(k)).sum::<usize>()
            }
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        match self {
            Node::Leaf { entries, .. } => {
                out.put_u8(KIND_LEAF);
                out.put_u32_le(u32_len(entries.len()));
                if let Entries::Image {
                    image,
                    layout: Layout::Slotted { .. },
                    ..
                } = entries
                {
                    out.put_slice(image);
                } else {
                    let all = entries.all();
                    let entries: &[(Bytes, Value)] = &all;
                    let mut at = entries.len() * SLOT_BYTES;
                    for (key, value) in entries {
                        let large = match value {
                            Value::Inline(_) => 0,
                            Value::Large(_) | Value::Held(_) => SLOT_LARGE,
                        };
                        out.put_u16_le(u16::try_from(at).expect("a leaf is at most 64 KiB"));
                        out.put_u16_le(u16_len(key.len()) | large);
                        at += key.len() + value.encoded_len();
                    }
                    for (key, value) in entries {
                        out.put_slice(key);
                        match value {
                            Value::Inline(bytes) => out.put_slice(bytes),
                            Value::Large(large) => {
                                out.put_u32_le(large.segment_id);
                                out.put_u64_le(large.frame_offset);
                                out.put_u32_le(large.value_offset);
                                out.put_u32_le(large.value_len);
                            }
                            // Invariant: a checkpoint writes every held record to the log
                            // (`Shared::write_held`) before it encodes a page.
                            Value::Held(_) => unreachable!("held record in a page image"),
                        }
                    }
                }
            }
            Node::Internal { keys, children, .. } => {
                out.put_u8(KIND_INTERNAL);
                out.put_u32_le(u32_len(keys.len()));
                out.put_u64_le(children[0]);
                for (key, child) in keys.iter().zip(&children[1..]) {
                    out.put_u16_le(u16_len(key.len()));
                    out.put_slice(key);
                    out.put_u64_le(*child);
                }
            }
        }
        assert_eq!(
            out.len() - start,
            self.encoded_len(),
            "a page encodes to the length its size checks used"
        );
    }

    /// Memory a decoded page holds beside its image: the entry vectors, and the search
    /// aid a reader builds on first use. A page's cache weight is its image plus this.
    pub fn decoded_overhead(&self) -> usize {
        let aid = |leaf: bool, count: usize| {
            let index = match indexed(leaf, count) {
                true => MAX_INDEXED_PREFIX + count * size_of::<u64>(),
                false => 0,
            };
            index + size_of::<Summary>()
        };
        size_of::<Node>()
            + match self {
                Node::Leaf { entries, .. } => entries.overhead() + aid(true, entries.len()),
                Node::Internal { keys, children, .. } => {
                    keys.capacity() * size_of::<Bytes>()
                        + children.capacity() * size_of::<PageId>()
                        + aid(false, keys.len())
                }
            }
    }

    #[cfg(any(test, feature = "testing"))]
    /// Decodes a page; every length is checked against the bytes present and the limits
    /// before anything is allocated, and keys must be strictly ascending.
    pub fn decode(bytes: Bytes, max_key_bytes: usize) -> Result<Node, String> {
        Self::decode_checked(bytes, max_key_bytes, Checks::All)
    }

    /// `decode`, checking the rules `checks` names: a slotted leaf checked for its
    /// structure alone reads its header and slots, not its entries.
    pub fn decode_checked(
        mut bytes: Bytes,
        max_key_bytes: usize,
        checks: Checks,
    ) -> Result<Node, String> {
        fn need(bytes: &impl Buf, n: usize, what: &str) -> Result<(), String> {
            if bytes.remaining() < n {
                Err(format!("page truncated reading {what}"))
            } else {
                Ok(())
            }
        }
        /// Reads a key's length, checked against the limit and what is left.
        fn key_len(bytes: &mut impl Buf, max_key_bytes: usize) -> Result<usize, String> {
            need(bytes, 2, "key length")?;
            let len = bytes.get_u16_le() as usize;
            if len > max_key_bytes {
                return Err(format!("key length {len} over the limit {max_key_bytes}"));
            }
            need(bytes, len, "key")?;
            Ok(len)
        }
        fn key(bytes: &mut Bytes, max_key_bytes: usize) -> Result<Bytes, String> {
            let len = key_len(bytes, max_key_bytes)?;
            Ok(bytes.split_to(len))
        }
        need(&bytes, NODE_HEADER_BYTES, "header")?;
        let kind = bytes.get_u8();
        let count = bytes.get_u32_le() as usize;
        // Every entry takes at least 3 bytes, so a count beyond that cannot be genuine.
        if count > bytes.remaining() / 3 {
            return Err(format!("entry count {count} larger than the page can hold"));
        }
        let node = match kind {
            KIND_LEAF => {
                let image = bytes.split_off(0);
                let layout = check_slots(&image, count, max_key_bytes)?;
                let entries = Entries::Image { image, layout };
                if checks == Checks::All && (1..count).any(|i| entries.key(i - 1) >= entries.key(i))
                {
                    return Err("leaf keys out of order".to_string());
                }
                Node::Leaf {
                    entries,
                    aid: SearchAid::default(),
                }
            }
            KIND_LEAF_WALKED => {
                // Walked over a plain slice: checking an entry builds nothing.
                let image = bytes.clone();
                if image.len() > u32::MAX as usize {
                    return Err(format!("page of {} bytes", image.len()));
                }
                let mut rest: &[u8] = &image;
                let mut starts = Vec::with_capacity(count);
                let mut last: Option<&[u8]> = None;
                for _ in 0..count {
                    starts.push(u32_len(image.len() - rest.len()));
                    let len = key_len(&mut rest, max_key_bytes)?;
                    let (key, after) = rest.split_at(len);
                    rest = after;
                    need(&rest, 1, "value tag")?;
                    let value_len = match rest.get_u8() {
                        VALUE_INLINE => {
                            need(&rest, 4, "value length")?;
                            rest.get_u32_le() as usize
                        }
                        VALUE_LARGE => LARGE_REF_BYTES,
                        tag => return Err(format!("unknown value tag {tag}")),
                    };
                    need(&rest, value_len, "value")?;
                    rest.advance(value_len);
                    if last.is_some_and(|last| last >= key) {
                        return Err("leaf keys out of order".to_string());
                    }
                    last = Some(key);
                }
                bytes.advance(image.len() - rest.len());
                Node::Leaf {
                    entries: Entries::Image {
                        image,
                        layout: Layout::Walked {
                            starts: starts.into(),
                        },
                    },
                    aid: SearchAid::default(),
                }
            }
            KIND_INTERNAL => {
                need(&bytes, 8, "first child")?;
                let mut keys: Vec<Bytes> = Vec::with_capacity(count);
                let mut children = Vec::with_capacity(count + 1);
                children.push(bytes.get_u64_le());
                for _ in 0..count {
                    let key = key(&mut bytes, max_key_bytes)?;
                    need(&bytes, 8, "child")?;
                    if keys.last().is_some_and(|last| *last >= key) {
                        return Err("internal keys out of order".to_string());
                    }
                    keys.push(key);
                    children.push(bytes.get_u64_le());
                }
                Node::internal(keys, children)
            }
            kind => return Err(format!("unknown page kind {kind}")),
        };
        if bytes.has_remaining() {
            return Err(format!(
                "{} trailing bytes after the page",
                bytes.remaining()
            ));
        }
        Ok(node)
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "tests narrow small known values"
)]
mod tests;
