//! The engine's hard limits, checked on every write: a record, a parent key and a batch.

/// The hard limit on every record the engine writes, as BSON's: 16 MiB.
pub const MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;
/// The longest parent key: 1 KiB.
pub const MAX_KEY_BYTES: usize = 1024;
/// The largest batch, counted as the bytes of its logged operations: 256 MiB.
pub const MAX_BATCH_BYTES: usize = 256 * 1024 * 1024;

/// Conversions between the widths the format stores and the widths memory uses, each with
/// the bound that makes it lossless: a narrowing the limits cannot rule out is checked
/// where it happens, not here.
pub(crate) mod widths {
    // File offsets and lengths index memory (a mapped or read segment): the engine builds
    // for 64-bit targets only, where that is lossless.
    #[cfg(not(target_pointer_width = "64"))]
    compile_error!("skewdb needs a 64-bit target: file offsets and lengths index memory");

    /// A file offset or length as a memory index: lossless on the 64-bit targets the
    /// engine builds for (see the `compile_error!` above).
    #[inline(always)]
    #[allow(
        clippy::cast_possible_truncation,
        reason = "64-bit targets only: u64 and usize are the same width"
    )]
    pub(crate) const fn index(n: u64) -> usize {
        n as usize
    }

    /// A length the format stores in 32 bits. Every such length is bounded by a limit
    /// under 4 GiB (a record's 16 MiB, a batch's 256 MiB, a segment's or a page's size):
    /// a longer one is a bug, not an input.
    #[inline(always)]
    pub(crate) fn u32_len(n: usize) -> u32 {
        u32::try_from(n).expect("a length the format stores in 32 bits is under 4 GiB")
    }

    /// A length the format stores in 16 bits: a key (at most `MAX_TREE_KEY_BYTES`), an
    /// array index or count (a collection has at most `MAX_ARRAYS`), a patch's edit count.
    #[inline(always)]
    pub(crate) fn u16_len(n: usize) -> u16 {
        u16::try_from(n).expect("a length the format stores in 16 bits is bounded by a limit")
    }

    /// A length the format stores in 8 bits: a name (at most 255 bytes, checked when a
    /// collection is created) or a count of measures (at most `MAX_MEASURES`).
    #[inline(always)]
    pub(crate) fn u8_len(n: usize) -> u8 {
        u8::try_from(n).expect("a length the format stores in 8 bits is bounded by a limit")
    }
}
