//! Open, verify and read whole a database image (every layout) changed by the input:
//! bit flips, zeroed sectors and cuts in any of its files. See `skewdb_tests::fuzz::db_image`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    skewdb_tests::fuzz::db_image(data);
});
