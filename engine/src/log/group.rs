//! Frames built in memory before one write: where a frame lives (`FrameLoc`) and a group of
//! frames (`Group`), for the hot log's segments and for page files alike.

use super::frame::{self, FRAME_HEADER_BYTES, FrameKind};
use crate::limits::widths::u32_len;

/// Where a frame lives: segment, byte offset of its header, and total length with header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameLoc {
    /// The hot log segment.
    pub segment_id: u32,
    /// Byte offset of the frame's header in it.
    pub offset: u64,
    /// Length of the frame, header included.
    pub len: u32,
}

impl FrameLoc {
    #[cfg(feature = "testing")]
    /// The offset of the frame's payload in its segment.
    pub fn payload_offset(&self) -> u64 {
        self.offset + FRAME_HEADER_BYTES as u64
    }
}

/// A set of frames built in memory and written with one write.
pub struct Group {
    pub(super) buf: Vec<u8>,
    pub(super) segment_id: u32,
    pub(super) base_offset: u64,
    pub(super) next_lsn: u64,
    pub(super) durable_lsn: u64,
    pub(super) frames: u64,
}

/// A point in a group to roll back to when a batch is refused after encoding started.
#[derive(Clone, Copy, Debug)]
pub struct GroupMark {
    len: usize,
    next_lsn: u64,
    frames: u64,
}

impl Group {
    /// Starts a frame; append its payload to [`Group::buf`], then call [`Group::finish`].
    pub fn begin(&mut self) -> usize {
        frame::begin_frame(&mut self.buf)
    }

    /// The buffer the current frame's payload is appended to.
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// The segment offset the buffer position `at` will be written to.
    pub fn offset_of(&self, at: usize) -> u64 {
        self.base_offset + at as u64
    }

    pub fn segment_id(&self) -> u32 {
        self.segment_id
    }

    /// Bytes of payload in the frame begun at `start`, so far.
    pub fn payload_len(&self, start: usize) -> usize {
        self.buf.len() - start - FRAME_HEADER_BYTES
    }

    /// Ends the frame begun at `start`.
    pub fn finish(&mut self, start: usize, kind: FrameKind) -> FrameLoc {
        let lsn = self.next_lsn;
        frame::finish_frame(&mut self.buf, start, kind, lsn, self.durable_lsn);
        self.next_lsn += 1;
        self.frames += 1;
        FrameLoc {
            segment_id: self.segment_id,
            offset: self.offset_of(start),
            len: u32_len(self.buf.len() - start),
        }
    }

    pub fn mark(&self) -> GroupMark {
        GroupMark {
            len: self.buf.len(),
            next_lsn: self.next_lsn,
            frames: self.frames,
        }
    }

    pub fn rollback(&mut self, mark: GroupMark) {
        self.buf.truncate(mark.len);
        self.next_lsn = mark.next_lsn;
        self.frames = mark.frames;
    }

    pub fn bytes(&self) -> usize {
        self.buf.len()
    }
}
