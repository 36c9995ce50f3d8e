//! Operation sequences (puts, pushes over all five layouts with sizes at the limits,
//! deletes, removals, checkpoints, compactions, reopens, power losses and I/O errors)
//! checked against a model of acknowledged and durable state. See
//! `skewdb_tests::fuzz::model`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    skewdb_tests::fuzz::model(data);
});
