//! Bytes on disk per reading for the `Bucket` layout against the raw item bytes (key and
//! value, 16 bytes), for a year of minute readings from one sensor at 0.1 degree resolution.
//! A plain harness: prints one line.
//!
//! Run: `cargo bench -p skewdb-benches --bench arrays_table`

use skewdb::{Durability, Options};
use skewdb_benches::{readings_db, readings_db_kept};

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
    rolled_up_year();
}

/// The same year with hourly rollups, every sealed bucket expired: what the year costs
/// once only its hourly summaries are kept, and a summary of it per day.
fn rolled_up_year() {
    let options = Options::new().durability(Durability::Buffered);
    let (_dir, db, minutes) = readings_db_kept(options, false, Some(3600));
    let sensors = db.collection("sensors").unwrap();
    let before = db.verify().unwrap();
    let expired = sensors.expire_buckets("readings", minutes * 60).unwrap();
    db.compact().unwrap();
    db.checkpoint().unwrap();
    let after = db.verify().unwrap();
    let started = std::time::Instant::now();
    let days = sensors
        .summary_windows("s1", "readings", .., 86_400)
        .unwrap()
        .unwrap();
    let per_day = started.elapsed();
    let year = sensors.summary("s1", "readings", ..).unwrap().unwrap();
    println!(
        "rolled-up year: {} of {minutes} readings rolled up into {} hourly rollups of {} B \
         ({:.1} B each, {:.3} B/reading); leaf pages {} -> {}; cold segments after compaction \
         {} B; the year per day: {} windows in {:.3} ms (first call), {} items from rollups",
        expired.rolled_up,
        after.rollups,
        after.rollup_bytes,
        after.rollup_bytes as f64 / after.rollups as f64,
        after.rollup_bytes as f64 / minutes as f64,
        before.leaf_pages,
        after.leaf_pages,
        after
            .cold_segments
            .iter()
            .map(|(_, bytes)| bytes)
            .sum::<u64>(),
        days.len(),
        per_day.as_secs_f64() * 1e3,
        year.rolled_up,
    );
}
