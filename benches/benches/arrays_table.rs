//! Bytes on disk per reading for the `Bucket` layout against the raw item bytes (key and
//! value, 16 bytes), for a year of minute readings from one sensor at 0.1 degree resolution.
//! A plain harness: prints one line.
//!
//! Run: `cargo bench -p skewdb-benches --bench arrays_table`

use skewdb::{Durability, Options};
use skewdb_benches::readings_db;

fn main() {
    let (dir, db, minutes) = readings_db(Options::new().durability(Durability::Buffered));
    db.checkpoint().unwrap();
    let report = db.verify().unwrap();
    drop(db);
    let cold: u64 = report.cold_segments.iter().map(|(_, bytes)| bytes).sum();
    let disk: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let raw = minutes as u64 * 16;
    println!(
        "bucket bytes per reading: {minutes} readings, raw {raw} B (16 B each); cold segments {cold} B = {:.2} B/reading, \
         ratio {:.3}; whole directory {disk} B = {:.2} B/reading (includes the hot log's redo of every push), {} chunks",
        cold as f64 / minutes as f64,
        cold as f64 / raw as f64,
        disk as f64 / minutes as f64,
        report.chunks,
    );
}
