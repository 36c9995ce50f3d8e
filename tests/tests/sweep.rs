//! Corruption sweep over a small database holding every layout: every single-byte change
//! of every file, every 512-byte sector zeroed, and truncation at every record boundary
//! (log frames, cold chunks, the checkpoint's header). Each damaged copy is opened,
//! verified and read whole; every answer must be the right one or `Error::Corruption`
//! (`Error::UnsupportedVersion` for a changed format version): never a panic, a wrong
//! value, or an allocation sized from bytes nothing checked. The outcomes are counted.
//!
//! CI changes one byte in 23; the long mode changes every byte:
//! `SKEWDB_SWEEP_STRIDE=1 cargo test --release -p skewdb-tests --test sweep -- --nocapture`

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use skewdb::testing::{SimStorage, Storage};
use skewdb::testing::{parse_segment_name, scan_segment};
use skewdb::{Db, Durability, Error};
use skewdb_tests::{Model, all_layouts_image, small_options};

/// Records the largest single allocation, to show no length read from a damaged file is
/// trusted before it is checked.
struct Tracking;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// No allocation above this: the largest legitimate one is a 16 MiB record and its buffer.
const ALLOCATION_LIMIT: usize = 40 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// Every read right and `verify` clean: the damage hit bytes nothing needs.
    Right,
    /// Open refused the directory with `Error::Corruption`.
    CorruptAtOpen,
    /// Opened; `verify` or some read reported `Error::Corruption`, every other read right.
    CorruptOnRead,
    /// Open refused a changed format version with `Error::UnsupportedVersion`.
    Unsupported,
}

/// Opens a damaged copy and reads everything; panics on a wrong value or another error.
fn outcome(storage: Arc<dyn Storage>, model: &Model) -> Outcome {
    let db = match Db::open_with_storage(storage, small_options(Durability::Immediate)) {
        Ok(db) => db,
        Err(error) if error.is_corruption() => return Outcome::CorruptAtOpen,
        Err(Error::UnsupportedVersion { .. }) => return Outcome::Unsupported,
        Err(error) => panic!("open failed with {error}"),
    };
    let verify_corrupt = match db.verify() {
        Ok(_) => false,
        Err(error) if error.is_corruption() => true,
        Err(error) => panic!("verify failed with {error}"),
    };
    // Every read agrees with the model or reports corruption (a wrong value panics).
    let corrupt_reads = skewdb_tests::check_reads(&db, model).1;
    if verify_corrupt || corrupt_reads > 0 {
        Outcome::CorruptOnRead
    } else {
        Outcome::Right
    }
}

/// Runs `outcome` on a copy of `image` with `name` changed by `damage`, naming the damage
/// if anything panics.
fn try_damage(
    image: &SimStorage,
    model: &Model,
    name: &str,
    what: &str,
    damage: impl FnOnce(&mut Vec<u8>),
) -> Outcome {
    let copy = image.crash_image(0);
    let mut bytes = copy.file_bytes(name).unwrap();
    damage(&mut bytes);
    copy.set_file_bytes(name, bytes);
    let storage: Arc<dyn Storage> = Arc::new(copy);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| outcome(storage, model))) {
        Ok(outcome) => outcome,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{name}, {what}: {message}")
        }
    }
}

/// Offsets where a record starts in each file: log frames, cold chunks, the checkpoint's
/// payload; and each file's end.
fn boundaries(image: &SimStorage, name: &str) -> Vec<usize> {
    let len = image.file_bytes(name).unwrap().len();
    let mut cuts = vec![0, len];
    if let Some(segment) = parse_segment_name(name) {
        scan_segment(image, segment, 32, |_, loc, _| {
            cuts.push(loc.offset as usize);
            Ok(())
        })
        .unwrap();
        cuts.push(32);
    } else if name.starts_with("cold-") {
        let bytes = image.file_bytes(name).unwrap();
        let mut offset = 32;
        while offset + 4 <= bytes.len() {
            cuts.push(offset);
            let compressed = u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap());
            offset += 69 + compressed as usize;
        }
    } else {
        cuts.push(28);
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

#[test]
fn corruption_sweep() {
    let stride: usize = std::env::var("SKEWDB_SWEEP_STRIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(23)
        .max(1);
    let (image, model) = all_layouts_image();
    let mut names = image.list().unwrap();
    names.sort();
    assert!(names.iter().any(|n| n.starts_with("cold-")), "{names:?}");
    let mut counts: BTreeMap<(&str, Outcome), u64> = BTreeMap::new();
    let mut total_bytes = 0;
    for name in &names {
        let bytes = image.file_bytes(name).unwrap();
        total_bytes += bytes.len();
        for position in (0..bytes.len()).step_by(stride) {
            let what = format!("byte {position} changed");
            let outcome = try_damage(&image, &model, name, &what, |b| b[position] ^= 0x5a);
            *counts.entry(("byte changed", outcome)).or_default() += 1;
        }
        for sector in (0..bytes.len()).step_by(512) {
            let what = format!("sector at {sector} zeroed");
            let outcome = try_damage(&image, &model, name, &what, |b| {
                let end = (sector + 512).min(b.len());
                b[sector..end].fill(0);
            });
            *counts.entry(("sector zeroed", outcome)).or_default() += 1;
        }
        for cut in boundaries(&image, name) {
            let what = format!("cut at {cut}");
            let outcome = try_damage(&image, &model, name, &what, |b| b.truncate(cut));
            *counts.entry(("truncated", outcome)).or_default() += 1;
        }
    }
    println!(
        "{} files, {total_bytes} bytes, one byte in {stride} changed:",
        names.len()
    );
    for ((damage, outcome), count) in &counts {
        println!("  {damage:<14} {outcome:?}: {count}");
    }
    let largest = LARGEST.load(Ordering::Relaxed);
    println!("largest single allocation: {largest} bytes");
    assert!(
        largest <= ALLOCATION_LIMIT,
        "an allocation of {largest} bytes"
    );
    // The sweep found damage of every kind, and reported it.
    for damage in ["byte changed", "sector zeroed", "truncated"] {
        assert!(
            counts.contains_key(&(damage, Outcome::CorruptAtOpen))
                || counts.contains_key(&(damage, Outcome::CorruptOnRead)),
            "{damage}: {counts:?}"
        );
    }
}
