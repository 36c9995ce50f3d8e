//! The hot log's tests: frames written and scanned, rolls and maps, pooled reads, damage,
//! failures, and a file system that shows bytes late.

use super::*;
use crate::storage::SimStorage;

fn log_with(frames: &[&[u8]]) -> (Arc<SimStorage>, HotLog, Vec<FrameLoc>) {
    let sim = Arc::new(SimStorage::new());
    let mut log = HotLog::create(sim.clone(), 1, 1, 1 << 20).unwrap();
    let mut locs = Vec::new();
    for payload in frames {
        let mut group = log.group().unwrap();
        let start = group.begin();
        group.buf().extend_from_slice(payload);
        locs.push(group.finish(start, FrameKind::BatchEnd));
        log.append(group).unwrap();
        log.sync().unwrap();
    }
    (sim, log, locs)
}

#[test]
fn all_zero_sees_one_set_byte_anywhere() {
    assert!(all_zero(&[]));
    let mut bytes = vec![0u8; 3 * 4096 + 5];
    assert!(all_zero(&bytes));
    for at in [0, 4095, 4096, 2 * 4096 + 17, bytes.len() - 1] {
        bytes[at] = 0x80;
        assert!(!all_zero(&bytes), "byte {at}");
        bytes[at] = 0;
    }
}

#[test]
fn scan_visits_frames_in_order() {
    let (sim, _log, locs) = log_with(&[b"one", b"two", b"three"]);
    let mut seen = Vec::new();
    let stop = scan_segment(sim.as_ref(), 1, 32, |header, loc, payload| {
        seen.push((header.lsn, loc, payload.to_vec()));
        Ok(())
    })
    .unwrap();
    assert!(stop.bad.is_none());
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[2].0, 3);
    assert_eq!(seen[1].1, locs[1]);
    assert_eq!(seen[2].2, b"three");
    let (_, payload) = read_frame(sim.as_ref(), locs[0]).unwrap();
    assert_eq!(&payload[..], b"one");
}

#[test]
fn a_roll_seals_the_segment_and_mapped_reads_agree_with_reads() {
    let big = vec![b'm'; 3000];
    let (sim, mut log, locs) = log_with(&[b"first", &big, b"third"]);
    let sealed = log.sealed_below();
    assert_eq!(
        sealed.load(Ordering::Acquire),
        1,
        "the active segment is not sealed"
    );
    log.seal().unwrap();
    assert_eq!(sealed.load(Ordering::Acquire), 2);
    let map = Bytes::from_owner(sim.map(&segment_name(1)).unwrap());
    for loc in &locs {
        let (header, payload, held) = read_frame_mapped(&map, *loc, Payload::Check).unwrap();
        let (read_header, read) = read_frame(sim.as_ref(), *loc).unwrap();
        assert_eq!((header, &payload[..]), (read_header, &read[..]));
        assert_eq!(held, ReadBuffers::size_for(loc.len as usize));
    }
    // A frame said to run past the segment's end, or with a damaged byte, is refused.
    let past = FrameLoc {
        offset: map.len() as u64 - 4,
        ..locs[2]
    };
    assert!(matches!(
        read_frame_mapped(&map, past, Payload::Check),
        Err(Error::Corruption { .. })
    ));
    let mut bytes = sim.file_bytes(&segment_name(1)).unwrap();
    bytes[locs[1].offset as usize + FRAME_HEADER_BYTES + 100] ^= 1;
    let damaged = Bytes::from(bytes);
    assert!(matches!(
        read_frame_mapped(&damaged, locs[1], Payload::Check),
        Err(Error::Corruption { .. })
    ));
    assert!(read_frame_mapped(&damaged, locs[0], Payload::Check).is_ok());
    // Told the frame was checked before, a read skips the payload's checksum (the
    // damaged byte is in the payload) but still checks the header.
    assert!(read_frame_mapped(&damaged, locs[1], Payload::CheckedBefore).is_ok());
    let mut bytes = sim.file_bytes(&segment_name(1)).unwrap();
    bytes[locs[1].offset as usize] ^= 0x80;
    let bad_header = Bytes::from(bytes);
    assert!(matches!(
        read_frame_mapped(&bad_header, locs[1], Payload::CheckedBefore),
        Err(Error::Corruption { .. })
    ));
}

#[test]
fn pooled_reads_reuse_buffers_once_their_views_are_gone() {
    let big = vec![b'b'; 1500];
    let (sim, _log, locs) = log_with(&[b"a longer payload", b"a longer payloa", &big]);
    let buffers = ReadBuffers::new(1, 4096);
    let (_, long, held) =
        read_frame_pooled(sim.as_ref(), locs[0], &buffers, Payload::Check).unwrap();
    assert_eq!(held, 1024, "a frame's length rounded up to a whole KiB");
    let (_, other, _) = read_frame_pooled(sim.as_ref(), locs[1], &buffers, Payload::Check).unwrap();
    assert_eq!(buffers.waiting(), 0, "both buffers are lent");
    // A view outlives its frame's other views and keeps the buffer lent.
    let kept = long.slice(2..6);
    drop(long);
    assert_eq!(buffers.waiting(), 0);
    drop(kept);
    drop(other);
    assert_eq!(buffers.waiting(), 1, "one buffer kept, the other freed");
    // The latest returned stays: a returned 2 KiB buffer replaces the kept 1 KiB one,
    // and a 1 KiB one replaces it back.
    let (_, third, _) = read_frame_pooled(sim.as_ref(), locs[2], &buffers, Payload::Check).unwrap();
    drop(third);
    let (_, third, held) =
        read_frame_pooled(sim.as_ref(), locs[2], &buffers, Payload::Check).unwrap();
    let waiting = buffers.waiting();
    assert_eq!((held, waiting), (2048, 0), "the 2 KiB buffer was kept");
    let (_, long, _) = read_frame_pooled(sim.as_ref(), locs[0], &buffers, Payload::Check).unwrap();
    drop(third);
    drop(long);
    assert_eq!(buffers.waiting(), 1);
    // A frame of another size gets a buffer of its own.
    let (_, third, held) =
        read_frame_pooled(sim.as_ref(), locs[2], &buffers, Payload::Check).unwrap();
    assert_eq!((&third[..], held), (&big[..], 2048));
    assert_eq!(buffers.waiting(), 1);
    // One of the same size takes the kept buffer and sees only its own bytes (the
    // buffer last held a longer frame).
    let (_, shorter, held) =
        read_frame_pooled(sim.as_ref(), locs[1], &buffers, Payload::Check).unwrap();
    assert_eq!(buffers.waiting(), 0);
    assert_eq!((&shorter[..], held), (&b"a longer payloa"[..], 1024));
    drop(third);
    drop(shorter);
    // Damage is found in a reused buffer as in a new one.
    let name = segment_name(1);
    let mut bytes = sim.file_bytes(&name).unwrap();
    bytes[locs[1].offset as usize + FRAME_HEADER_BYTES] ^= 0x01;
    sim.set_file_bytes(&name, bytes);
    assert!(matches!(
        read_frame_pooled(sim.as_ref(), locs[1], &buffers, Payload::Check),
        Err(Error::Corruption { .. })
    ));
    let below_header = FrameLoc { len: 8, ..locs[0] };
    assert!(matches!(
        read_frame_pooled(sim.as_ref(), below_header, &buffers, Payload::Check),
        Err(Error::Corruption { .. })
    ));
}

/// A file system that shows a frame's bytes late to a reader beside the writer (as FUSE
/// did: a read-only open found a frame header of zeros with the frames after it there):
/// the first reads of the segment see `window` as zeros.
struct LateBytes {
    inner: Arc<SimStorage>,
    window: std::ops::Range<u64>,
    late_reads: parking_lot::Mutex<u32>,
}

impl Storage for LateBytes {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn lock(&self) -> Result<Box<dyn crate::storage::LockGuard>> {
        self.inner.lock()
    }
    fn list(&self) -> Result<Vec<String>> {
        self.inner.list()
    }
    fn create(&self, name: &str) -> Result<()> {
        self.inner.create(name)
    }
    fn len(&self, name: &str) -> Result<u64> {
        self.inner.len(name)
    }
    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read_at(name, offset, buf)?;
        let mut late = self.late_reads.lock();
        if *late > 0 {
            *late -= 1;
            for (at, byte) in buf.iter_mut().enumerate() {
                if self.window.contains(&(offset + at as u64)) {
                    *byte = 0;
                }
            }
        }
        Ok(())
    }
    fn write_at(&self, name: &str, offset: u64, data: &[u8]) -> Result<()> {
        self.inner.write_at(name, offset, data)
    }
    fn set_len(&self, name: &str, len: u64) -> Result<()> {
        self.inner.set_len(name, len)
    }
    fn sync(&self, name: &str) -> Result<()> {
        self.inner.sync(name)
    }
    fn sync_dir(&self) -> Result<()> {
        self.inner.sync_dir()
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, name: &str) -> Result<()> {
        self.inner.remove(name)
    }
    fn beside_a_writer(&self) -> bool {
        true
    }
}

#[test]
fn beside_a_writer_a_frame_shown_late_is_read_again_not_called_bad() {
    let (sim, _log, locs) = log_with(&[b"one", b"two", b"three"]);
    let header = locs[1].offset..locs[1].offset + FRAME_HEADER_BYTES as u64;
    let late = LateBytes {
        inner: sim.clone(),
        window: header.clone(),
        late_reads: parking_lot::Mutex::new(3),
    };
    let mut seen = Vec::new();
    let stop = scan_segment(&late, 1, 32, |header, _, payload| {
        seen.push((header.lsn, payload.to_vec()));
        Ok(())
    })
    .unwrap();
    assert!(stop.bad.is_none(), "{stop:?}");
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[1].1, b"two");
    // Bytes that stay as they are (damage at rest) are bad after the tries, as before.
    let stuck = LateBytes {
        inner: sim,
        window: header,
        late_reads: parking_lot::Mutex::new(u32::MAX),
    };
    let stop = scan_segment(&stuck, 1, 32, |_, _, _| Ok(())).unwrap();
    assert_eq!(stop.end, locs[1].offset);
    assert!(stop.bad.is_some());
}

#[test]
fn damage_before_a_durable_claim_is_seen() {
    let (sim, _log, locs) = log_with(&[b"one", b"two", b"three"]);
    let name = segment_name(1);
    let mut bytes = sim.file_bytes(&name).unwrap();
    bytes[locs[1].offset as usize + FRAME_HEADER_BYTES] ^= 0x40;
    sim.set_file_bytes(&name, bytes);
    let stop = scan_segment(sim.as_ref(), 1, 32, |_, _, _| Ok(())).unwrap();
    assert_eq!(stop.end, locs[1].offset);
    assert_eq!(stop.bad, Some(BadFrame::Checksum));
    // The third frame was written after the second was synced, and says so.
    assert_eq!(stop.durable_after_bad, Some(2));
    assert!(
        read_frame(sim.as_ref(), locs[1])
            .unwrap_err()
            .is_corruption()
    );
}

#[test]
fn sync_failure_is_sticky() {
    let (sim, mut log, _) = log_with(&[b"one"]);
    let mut group = log.group().unwrap();
    let start = group.begin();
    group.finish(start, FrameKind::BatchEnd);
    log.append(group).unwrap();
    sim.fail_at(1, false);
    assert!(log.sync().is_err());
    assert!(matches!(log.sync(), Err(Error::WriteFailed { .. })));
    assert!(matches!(log.group(), Err(Error::WriteFailed { .. })));
}

#[test]
fn the_zeros_ahead_are_written_blocks_not_a_hole() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(crate::storage::FsStorage::new(dir.path()).unwrap());
    let segment_bytes = 1 << 20;
    let mut log = HotLog::create(storage, 1, 1, segment_bytes).unwrap();
    let mut group = log.group().unwrap();
    let start = group.begin();
    group.buf().extend_from_slice(b"one small frame");
    group.finish(start, FrameKind::BatchEnd);
    log.append(group).unwrap();
    log.sync().unwrap();
    let meta = std::fs::metadata(dir.path().join(segment_name(1))).unwrap();
    let step = extend_step(segment_bytes);
    assert_eq!(meta.len(), step);
    // A file system that stores zeros as holes would report fewer blocks than that.
    assert!(meta.blocks() * 512 >= step, "{} blocks", meta.blocks());
}

#[test]
fn the_active_segment_runs_ahead_in_zeros_and_a_rolled_one_is_cut_to_its_frames() {
    let segment_bytes = 256 * 1024;
    let step = extend_step(segment_bytes);
    assert_eq!(step, 16 * 1024);
    let sim = Arc::new(SimStorage::new());
    let mut log = HotLog::create(sim.clone(), 1, 1, segment_bytes).unwrap();
    let write = |log: &mut HotLog, bytes: usize| {
        let mut group = log.group().unwrap();
        let start = group.begin();
        group.buf().extend(std::iter::repeat_n(7u8, bytes));
        let loc = group.finish(start, FrameKind::BatchEnd);
        log.append(group).unwrap();
        log.sync().unwrap();
        loc
    };
    let first = write(&mut log, 100);
    let len = sim.len(&segment_name(1)).unwrap();
    assert_eq!(len, step, "extended by one step, not by the frame");
    // Frames that fit add no length; the first one past it adds one step.
    while log.tail().offset + 1_000 <= step {
        write(&mut log, 900);
    }
    assert_eq!(sim.len(&segment_name(1)).unwrap(), step);
    write(&mut log, 2_000);
    assert_eq!(sim.len(&segment_name(1)).unwrap(), 2 * step);
    // The scan ends at the zeros, which are not a bad frame.
    let stop = scan_segment(sim.as_ref(), 1, first.offset, |_, _, _| Ok(())).unwrap();
    assert_eq!((stop.end, stop.bad), (log.tail().offset, None));
    // A byte that is not zero past the last frame is one.
    let mut bytes = sim.file_bytes(&segment_name(1)).unwrap();
    bytes[log.tail().offset as usize + 100] = 1;
    sim.set_file_bytes(&segment_name(1), bytes);
    let stop = scan_segment(sim.as_ref(), 1, first.offset, |_, _, _| Ok(())).unwrap();
    assert_eq!(stop.end, log.tail().offset);
    assert!(stop.bad.is_some());
    // Rolling cuts the old segment back to its last frame, durably.
    let end = log.tail().offset;
    log.seal().unwrap();
    assert_eq!(log.tail().segment_id, 2);
    assert_eq!(sim.len(&segment_name(1)).unwrap(), end);
    assert_eq!(sim.crash_image(3).len(&segment_name(1)).unwrap(), end);
    // The limits: 4 KiB for small segments, 1 MiB for large ones.
    assert_eq!(extend_step(16 * 1024), 4096);
    assert_eq!(extend_step(1 << 30), 1 << 20);
}

#[test]
fn segment_names_round_trip() {
    assert_eq!(parse_segment_name(&segment_name(42)), Some(42));
    assert_eq!(parse_segment_name("hot-1.log"), None);
    assert_eq!(parse_segment_name("cold-00000001.seg"), None);
    assert_eq!(parse_segment_name("hot-+0000001.log"), None);
    assert_eq!(
        crate::cold::chunk::parse_segment_name(&crate::cold::chunk::segment_name(7)),
        Some(7)
    );
}
