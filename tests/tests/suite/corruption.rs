//! Damaged files: a flipped byte in any frame before the log's end is found by `verify`,
//! and every read that touches it returns `Error::Corruption`; nothing panics and no read
//! returns a wrong value.

use std::sync::Arc;

use skewdb::testing::{FrameLoc, parse_segment_name, scan_segment, segment_name};
use skewdb::testing::{SimStorage, Storage};
use skewdb::{Db, Durability, Error};
use skewdb_tests::{
    Model, apply, check_reads, commit, normalized, open_db, small_options, workload,
};

fn frames(sim: &SimStorage) -> Vec<FrameLoc> {
    let mut frames = Vec::new();
    for segment in log_segments(sim) {
        let stop = scan_segment(sim, segment, 32, |_, loc, _| {
            frames.push(loc);
            Ok(())
        })
        .unwrap();
        assert!(stop.bad.is_none());
    }
    frames
}

/// A copy of `image` with file `name` changed by `damage`, ready to open.
fn damaged_copy(
    image: &SimStorage,
    name: &str,
    damage: impl FnOnce(&mut Vec<u8>),
) -> Arc<dyn Storage> {
    let copy = image.crash_image(0);
    let mut bytes = copy.file_bytes(name).unwrap();
    damage(&mut bytes);
    copy.set_file_bytes(name, bytes);
    Arc::new(copy)
}

/// The log segment ids of `image`, in order.
fn log_segments(image: &SimStorage) -> Vec<u32> {
    let mut segments: Vec<u32> = image
        .list()
        .unwrap()
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .collect();
    segments.sort();
    segments
}

/// The cold segment files of `image`, in order.
fn cold_segments(image: &SimStorage) -> Vec<String> {
    let mut segments: Vec<String> = image
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("cold-"))
        .collect();
    segments.sort();
    segments
}

fn damaged_database(close_cleanly: bool) -> (SimStorage, Model) {
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    // Checkpoints only where the workload asks (and at close), so that the log keeps many
    // frames over several segments whatever the size of the workload's records.
    let options = small_options(Durability::Immediate).checkpoint_bytes(1 << 30);
    let db = open_db(storage, options).unwrap();
    let mut model = Model::new();
    for (index, batch) in workload(11, 60).iter().enumerate() {
        commit(&db, batch).unwrap();
        apply(&mut model, batch);
        if index == 30 {
            db.checkpoint().unwrap();
        }
    }
    let image = if close_cleanly {
        drop(db);
        sim.crash_image(0)
    } else {
        let image = sim.crash_image(0);
        drop(db);
        image
    };
    (image, normalized(&model))
}

fn flip_every_frame(close_cleanly: bool) -> (usize, u64) {
    let (image, model) = damaged_database(close_cleanly);
    let all = frames(&image);
    // Without a clean close the last frame is the log's end: damage there is a torn tail.
    let damaged = if close_cleanly {
        &all[..]
    } else {
        &all[..all.len() - 1]
    };
    let mut corrupt_reads = 0;
    for (index, frame) in damaged.iter().enumerate() {
        for position in [
            index as u64 % 25,
            25 + (index as u64 * 31) % (frame.len as u64 - 25).max(1),
        ] {
            let position = position.min(frame.len as u64 - 1);
            let name = segment_name(frame.segment_id);
            let storage = damaged_copy(&image, &name, |bytes| {
                bytes[(frame.offset + position) as usize] ^= 0x5a
            });
            match Db::open_with_storage(storage, small_options(Durability::Immediate)) {
                Err(error) => assert!(error.is_corruption(), "open: {error}"),
                Ok(db) => {
                    let verified = db.verify();
                    assert!(
                        matches!(&verified, Err(e) if e.is_corruption()),
                        "frame {index} byte {position}: verify said {verified:?}"
                    );
                    corrupt_reads += check_reads(&db, &model).1;
                }
            }
        }
    }
    (damaged.len(), corrupt_reads)
}

#[test]
fn flipped_byte_in_any_frame_of_a_closed_database() {
    let (frames, corrupt_reads) = flip_every_frame(true);
    assert!(frames > 50, "{frames} frames");
    assert!(corrupt_reads > 0);
}

#[test]
fn flipped_byte_before_the_end_of_a_crashed_log() {
    let (frames, _) = flip_every_frame(false);
    assert!(frames > 50, "{frames} frames");
}

#[test]
fn damaged_checkpoint_or_segment_header_is_corruption() {
    let (image, _) = damaged_database(true);
    let mut names = vec!["checkpoint".to_string(), segment_name(1)];
    names.retain(|n| image.file_bytes(n).is_some());
    for name in names {
        let len = image.file_bytes(&name).unwrap().len().min(64);
        for position in 0..len {
            let storage = damaged_copy(&image, &name, |bytes| bytes[position] ^= 0x01);
            let result = Db::open_with_storage(storage, small_options(Durability::Immediate))
                .and_then(|db| db.verify());
            match result {
                Err(Error::Corruption { file, .. }) => {
                    assert!(file.contains(&name) || name.starts_with("hot"))
                }
                Err(Error::UnsupportedVersion { .. }) => {}
                other => panic!("{name} byte {position}: {other:?}"),
            }
        }
    }
}

#[test]
fn missing_segment_is_reported_unless_nothing_needs_it() {
    let (image, model) = damaged_database(true);
    let segments = log_segments(&image);
    assert!(segments.len() >= 2, "{segments:?}");
    let mut detected = 0;
    for segment in &segments {
        let copy = image.crash_image(0);
        copy.remove(&segment_name(*segment)).unwrap();
        let storage: Arc<dyn Storage> = Arc::new(copy);
        match Db::open_with_storage(storage, small_options(Durability::Immediate)) {
            Err(error) => {
                assert!(error.is_corruption(), "{error}");
                detected += 1;
            }
            // Either nothing references the segment any more and every read is right, or
            // verify and the reads that need it report corruption.
            Ok(db) => {
                let corrupt_reads = check_reads(&db, &model).1;
                match db.verify() {
                    Ok(_) => assert_eq!(corrupt_reads, 0),
                    Err(error) => {
                        assert!(error.is_corruption(), "{error}");
                        assert!(corrupt_reads > 0);
                        detected += 1;
                    }
                }
            }
        }
    }
    // The segment where replay starts and those holding live pages are always needed.
    assert!(
        detected >= 2,
        "{detected} of {} removals detected",
        segments.len()
    );
}

#[test]
fn flipped_byte_in_any_cold_chunk() {
    let (image, model) = damaged_database(true);
    let segments = cold_segments(&image);
    assert!(!segments.is_empty(), "the workload wrote no cold chunk");
    let mut tried = 0;
    for name in &segments {
        let len = image.file_bytes(name).unwrap().len();
        // Every 7th byte after the segment header: headers and payloads of every chunk.
        for position in (32..len).step_by(7) {
            let storage = damaged_copy(&image, name, |bytes| bytes[position] ^= 0x5a);
            let db = Db::open_with_storage(storage, small_options(Durability::Immediate)).unwrap();
            let verified = db.verify();
            assert!(
                matches!(&verified, Err(e) if e.is_corruption()),
                "{name} byte {position}: {verified:?}"
            );
            // Reads that need the damaged chunk report it; every other read is right.
            let (good, _) = check_reads(&db, &model);
            assert!(good > 0, "no read succeeded beside the damaged chunk");
            tried += 1;
        }
    }
    assert!(tried > 10, "{tried} flips");
}

#[test]
fn cold_segment_shorter_than_its_durable_tail_is_corruption() {
    let (image, _) = damaged_database(true);
    let segments = cold_segments(&image);
    let last = segments
        .last()
        .expect("the workload wrote cold chunks")
        .clone();
    let storage = damaged_copy(&image, &last, |bytes| bytes.truncate(bytes.len() - 1));
    match Db::open_with_storage(storage, small_options(Durability::Immediate)) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, last),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a cold segment cut below its durable tail opened"),
    }
}

/// Regression (found by the corruption sweep): the segment replay starts in, cut to its
/// header or less, was taken for a segment torn while being created and removed, and
/// recovery then failed with an I/O error syncing it. The checkpoint found that segment
/// durable, so it is corruption.
#[test]
fn replay_segment_cut_to_its_header_is_corruption() {
    let (image, _) = damaged_database(true);
    let segments = log_segments(&image);
    let last = segment_name(*segments.last().unwrap());
    for len in [0, 16, 32] {
        let storage = damaged_copy(&image, &last, |bytes| bytes.truncate(len));
        match Db::open_with_storage(storage, small_options(Durability::Immediate)) {
            Err(error) => assert!(error.is_corruption(), "cut to {len}: {error}"),
            Ok(_) => panic!("cut to {len}: opened"),
        }
    }
}
