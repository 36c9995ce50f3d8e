//! Every on-disk decoder on arbitrary bytes: frame and segment headers, pages, checkpoints,
//! redo operations, parent records, backup files. The first byte selects the decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    skewdb::testing::decoders(data);
});
