//! A changed record logged as the bytes that change: a push rewrites its parent's record
//! and the tail its item joins, and the patch of each against the stored value is usually a
//! few dozen bytes where the record is kilobytes. See `format-spec/hot-log.md`.

use bytes::Bytes;

use crate::limits::widths::u32_len;
use crate::page::redo::{self, Op};

/// Pages' worth of bytes a patched record may have. One past the inline bound is held in
/// memory, outside the cache's budget, until the next checkpoint: larger records are
/// logged whole, as the memory they would hold and the diff's work grow with them.
const MAX_PATCHED_PAGES: usize = 4;

/// Values up to this length are logged whole: a patch of one saves a few dozen bytes at
/// most (a push rewrites its array's header, 93 bytes, besides adding the item), and the
/// diff that finds it costs more than writing them (a bucket that seals leaves a short
/// record after a long one: a diff of every item against none).
const MIN_PATCHED_BYTES: usize = 256;

/// `put`, or the patch that turns `stored` (the value in the tree before the op) into its
/// value when the patch logs fewer bytes and the value is longer than `MIN_PATCHED_BYTES`
/// and at most `MAX_PATCHED_PAGES` pages; a patch's value goes to `patched`. `part_ends`
/// cuts a value into the parts the diff compares.
pub(in crate::store) fn patch_or_put(
    put: Op,
    stored: Option<Bytes>,
    page_bytes: usize,
    patched: &mut Vec<Bytes>,
    part_ends: impl Fn(&Bytes) -> std::result::Result<Vec<usize>, String>,
) -> Op {
    let (Op::Put { key, value }, Some(old)) = (&put, stored) else {
        return put;
    };
    if value.len() > MAX_PATCHED_PAGES * page_bytes || value.len() <= MIN_PATCHED_BYTES {
        return put;
    }
    let (Ok(old_ends), Ok(new_ends)) = (part_ends(&old), part_ends(value)) else {
        return put;
    };
    let edits = match redo::diff(&old, &old_ends, value, &new_ends) {
        // A patch logs its edit count in 16 bits.
        Some(edits) if !edits.is_empty() && edits.len() <= usize::from(u16::MAX) => edits,
        _ => return put,
    };
    // What replay will build, checked before it is logged.
    let rebuilt = redo::apply_patch(&old, u32_len(old.len()), &edits);
    if !rebuilt.is_ok_and(|rebuilt| rebuilt == value.as_ref()) {
        debug_assert!(false, "a patch that does not rebuild its value");
        return put;
    }
    let patch = Op::Patch {
        key: key.clone(),
        old_len: u32_len(old.len()),
        edits,
    };
    if patch.encoded_len() >= put.encoded_len() {
        return put;
    }
    patched.push(value.clone());
    patch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::{Item, Stored};
    use crate::record::{self, ParentRecord};

    /// A record with a 4-byte body and one array of `items` items of 37 stored bytes each:
    /// 104 bytes, then 37 per item.
    fn record_with(items: usize) -> Bytes {
        let mut record = ParentRecord::new(Bytes::from_static(b"body"), 1);
        for i in 0..items {
            let item = Item {
                key: i as i64,
                value: None,
                payload: Bytes::from_static(b"0123456789abcdef"),
                more: None,
            };
            record.arrays[0].summary.add(&item);
            record.arrays[0].inline.push(Stored {
                item,
                seq: i as u64,
            });
        }
        Bytes::from(record.encode(crate::record::Shape::identity(1)))
    }

    #[test]
    fn short_values_are_logged_whole_and_longer_ones_patched() {
        // One item pushed to records of 1 to 8 items: new values of 178 to 437 bytes.
        for items in 1..=8 {
            let (old, new) = (record_with(items), record_with(items + 1));
            assert_eq!(new.len(), 104 + 37 * (items + 1));
            let put = Op::Put {
                key: Bytes::from_static(b"k"),
                value: new.clone(),
            };
            let mut values = Vec::new();
            let op = patch_or_put(
                put,
                Some(old.clone()),
                16384,
                &mut values,
                record::part_ends,
            );
            let long = new.len() > 256;
            assert_eq!(matches!(op, Op::Patch { .. }), long, "{} bytes", new.len());
            if let Op::Patch { old_len, edits, .. } = &op {
                assert_eq!(redo::apply_patch(&old, *old_len, edits).unwrap(), new);
                assert_eq!(values, vec![new]);
            }
        }
    }
}
