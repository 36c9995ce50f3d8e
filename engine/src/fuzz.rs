//! Entry points for the fuzz targets in `fuzz/` and for the stable test that replays their
//! corpora. Not part of the supported API.

use bytes::Bytes;

use crate::catalog::{Catalog, SpecForm};
use crate::log::frame::{FRAME_HEADER_BYTES, check_payload, decode_header, decode_segment_header};
use crate::page::MAX_TREE_KEY_BYTES;
use crate::page::checkpoint::Checkpoint;
use crate::page::node::{Checks, Node};
use crate::page::redo::{DecodedOp, Op, apply_patch};
use crate::record::ParentRecord;

/// Runs every decoder on `data`. Each must return a value or an error; none may panic,
/// loop, or allocate more than the bytes given justify. The first byte selects one (modulo
/// 8; 5 is the parent record's, 7 loads the rest as a backup file into a database in
/// memory).
pub fn decoders(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 8 {
        0 => {
            if let Ok(header) = decode_header(rest, rest.len() as u64) {
                let end = FRAME_HEADER_BYTES + header.payload_len as usize;
                let _ = check_payload(rest, &rest[FRAME_HEADER_BYTES..end]);
            }
        }
        1 => {
            let _ = decode_segment_header(rest, "fuzz");
        }
        2 => {
            let bytes = Bytes::copy_from_slice(rest);
            if let Ok(node) = Node::decode(bytes.clone(), MAX_TREE_KEY_BYTES) {
                // A node that decodes must encode back to the same bytes, or, a leaf of the
                // kind written before slotted leaves, to a slotted leaf equal to it.
                let mut again = Vec::new();
                node.encode(&mut again);
                let decoded_again = Node::decode(Bytes::from(again.clone()), MAX_TREE_KEY_BYTES)
                    .expect("an encoded node decodes");
                assert_eq!(decoded_again, node, "page decode/encode");
                if !node.is_walked_leaf() {
                    assert_eq!(again, rest, "page decode/encode is not a round trip");
                }
            }
            // Checked for its structure alone (keys in any order), a node answers every
            // read without a panic.
            if let Ok(node) = Node::decode_checked(bytes, MAX_TREE_KEY_BYTES, Checks::Structure) {
                for probe in [&rest[..rest.len().min(8)], rest] {
                    let _ = (
                        node.search(probe),
                        node.find(probe),
                        node.search_past(probe),
                    );
                }
                if let Node::Leaf { entries, .. } = &node {
                    for index in 0..entries.len() {
                        let _ = entries.entry(index);
                    }
                    let _ = entries.all();
                }
            }
        }
        3 => {
            if let Ok(checkpoint) = Checkpoint::decode(rest) {
                // Collections re-encode in name order, so compare decoded forms.
                let again = Checkpoint::decode(&checkpoint.encode())
                    .expect("re-encoded checkpoint decodes");
                assert_eq!(again.pages, checkpoint.pages);
                assert_eq!(again.catalog, checkpoint.catalog);
                assert_eq!(again.large_live, checkpoint.large_live);
                assert_eq!(again.cold_live, checkpoint.cold_live);
            }
        }
        4 => {
            if let Ok(ops) = Op::decode_all(Bytes::copy_from_slice(rest)) {
                let mut again = Vec::new();
                for decoded in &ops {
                    decoded.op.encode(&mut again);
                }
                // Byte for byte, but for collections created in the form before measures
                // (op 1), which encode again in today's (op 8): those decode alike.
                let decoded_again =
                    Op::decode_all(Bytes::from(again.clone())).expect("re-encoded redo decodes");
                let ops_of =
                    |ops: &[DecodedOp]| ops.iter().map(|d| d.op.clone()).collect::<Vec<_>>();
                assert_eq!(ops_of(&decoded_again), ops_of(&ops), "redo decode/encode");
                if !ops
                    .iter()
                    .any(|d| matches!(d.op, Op::CreateCollection { .. }))
                {
                    assert_eq!(again, rest, "redo decode/encode is not a round trip");
                }
                for decoded in &ops {
                    // A patch that decodes fits any value of its old length.
                    if let Op::Patch { old_len, edits, .. } = &decoded.op
                        && *old_len <= 1 << 16
                    {
                        let old = vec![0xa5; *old_len as usize];
                        apply_patch(&old, *old_len, edits).expect("a decoded patch applies");
                    }
                }
            }
        }
        6 => {
            let _ = crate::cold::chunk::check_framing(rest);
            let _ = crate::cold::chunk::decode_standalone(rest);
            let _ = crate::cold::ChunkRef::decode(Bytes::copy_from_slice(rest));
            let _ = crate::cold::chunk::check_segment_header(rest, 1);
        }
        7 => crate::backup::fuzz_load(rest),
        _ => {
            for arrays in 0..3 {
                let shape = crate::record::Shape::identity(arrays);
                let decoded = ParentRecord::decode(Bytes::copy_from_slice(rest), shape);
                // Skipping the items of the first array (a projection) accepts whatever
                // decoding them does (it steps over the items by their length without
                // reading them), and agrees on everything else.
                let skipped =
                    ParentRecord::decode_fields(Bytes::copy_from_slice(rest), shape, |f| f > 0);
                assert!(
                    decoded.is_err() || skipped.is_ok(),
                    "{decoded:?} / {skipped:?}"
                );
                // A reader's decoding accepts exactly what decoding does, with the same
                // items in (key, push) order, and the same state besides.
                let read = ParentRecord::decode_read(Bytes::copy_from_slice(rest), shape, |_| true);
                assert_eq!(decoded.is_ok(), read.is_ok(), "{decoded:?} / {read:?}");
                if let (Ok(record), Ok(read)) = (&decoded, &read) {
                    assert_eq!(record.body, read.body);
                    for (array, read) in record.arrays.iter().zip(&read.arrays) {
                        let mut sorted = array.inline.clone();
                        sorted.sort_by_key(crate::item::Stored::order);
                        let items: Vec<_> = sorted.into_iter().map(|s| s.item).collect();
                        // Item values are never NaN (decoding refuses them): equality holds.
                        assert_eq!(items, read.inline);
                        assert_eq!(
                            (array.total, array.has_overflow, array.inline_bytes),
                            (read.total, read.has_overflow, read.inline_bytes)
                        );
                    }
                }
                if let (Ok(record), Ok(mut skipped)) = (decoded, skipped) {
                    // Records are written in the current version, with a state per array; one
                    // of an older version, or with fewer states, reads as the same record.
                    let encoded = record.encode(shape);
                    let count_at = 5 + u32::from_le_bytes(rest[1..5].try_into().expect("4 bytes"));
                    let count = rest.get(count_at as usize..count_at as usize + 2);
                    let whole =
                        count == Some(&crate::limits::widths::u16_len(arrays).to_le_bytes()[..]);
                    if rest.first() == Some(&crate::record::RECORD_VERSION) && whole {
                        assert_eq!(encoded, rest, "record decode/encode is not a round trip");
                    } else {
                        let again = ParentRecord::decode(Bytes::from(encoded.clone()), shape)
                            .expect("an older record encodes to one that decodes");
                        assert_eq!(
                            again.encode(shape),
                            encoded,
                            "an older record reads differently"
                        );
                    }
                    // Compared by their encodings: a summary's sum may be NaN (infinities of
                    // both signs added), which no decoded record equals.
                    if let Some(first) = skipped.arrays.first_mut() {
                        assert!(first.inline.is_empty());
                        first.inline = record.arrays[0].inline.clone();
                    }
                    assert_eq!(skipped.encode(shape), encoded);
                    assert!(
                        skipped
                            .arrays
                            .iter()
                            .zip(&record.arrays)
                            .all(|(a, b)| a.inline_bytes == b.inline_bytes)
                    );
                    // Its parts for diffs cover it, in order.
                    let ends = crate::record::part_ends(&Bytes::copy_from_slice(rest))
                        .expect("a record that decodes has parts");
                    assert!(ends.windows(2).all(|w| w[0] < w[1]));
                    assert_eq!(ends.last(), Some(&rest.len()));
                }
            }
            for form in [
                SpecForm::Unmeasured,
                SpecForm::Measured,
                SpecForm::Formatted,
                SpecForm::Mapped,
                SpecForm::Slotted,
            ] {
                let _ = Catalog::decode(&mut Bytes::copy_from_slice(rest), form);
            }
        }
    }
}
