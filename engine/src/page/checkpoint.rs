//! The checkpoint file: the page table, the tree's root, the catalog and where redo replay
//! starts. Written whole to `checkpoint.tmp`, synced, renamed over `checkpoint`, and the
//! directory synced. The one place that encodes and decodes it; see
//! `format-spec/checkpoint.md`.

use std::collections::BTreeSet;

use bytes::{Buf, BufMut, Bytes};

use super::node::PageId;
use super::table::{PageTable, Slot};
use crate::catalog::{Catalog, SpecForm};
use crate::cold::ColdTail;
use crate::error::{Error, Result};
use crate::limits::widths::{index, u32_len};
use crate::log::{FrameLoc, LogTail, is_page_file};
use crate::storage::Storage;

pub const CHECKPOINT_FILE: &str = "checkpoint";
pub const CHECKPOINT_TEMP_FILE: &str = "checkpoint.tmp";
const MAGIC: &[u8; 8] = b"SKEWCKPT";
/// Version 11: a page's location may name a page file (its segment id with the top bit
/// set: `log::PAGE_FILE_BIT`), which a build from before it would look for as a log
/// segment; the checkpoint is otherwise version 10's.
pub const CHECKPOINT_VERSION: u32 = 11;
/// Version 10: the catalog's specs end with their arrays' rollup spans
/// (`SpecForm::RolledUp`), and the tree may hold rollup records (array record kind 2),
/// which a build from before it cannot read; every page is in a log segment. Still read,
/// never written.
const CHECKPOINT_VERSION_PAGES_IN_LOG: u32 = 10;
/// Version 9: the catalog carries each array's layout state after its slot
/// (`SpecForm::Migrating`), without rollups. Still read, never written.
const CHECKPOINT_VERSION_UNROLLED: u32 = 9;
/// Version 8: the catalog carries each collection's array slots and what dropped
/// collections and arrays left to reclaim (`SpecForm::Slotted`), without layout states:
/// every array's parity 0, no migration. Still read, never written.
const CHECKPOINT_VERSION_UNMIGRATING: u32 = 8;
/// Version 7: the catalog's specs carry their document maps (`SpecForm::Mapped`), its
/// collections have their arrays in slots 0, 1, 2, ... and nothing is retired. Still read,
/// never written.
const CHECKPOINT_VERSION_UNSLOTTED: u32 = 7;
/// Version 6: the pages may hold slotted leaves (kind 3), which a build from before it
/// cannot read; the catalog lacks document maps. Still read, never written.
const CHECKPOINT_VERSION_UNMAPPED: u32 = 6;
/// Checkpoints whose pages are all of the kinds before slotted leaves: still read, never
/// written.
const CHECKPOINT_VERSION_WALKED_LEAVES: u32 = 5;
/// Checkpoints whose catalog lacks the collections' document formats (each is
/// `DocumentFormat::Bytes`): still read, never written.
const CHECKPOINT_VERSION_UNFORMATTED: u32 = 4;
/// Checkpoints whose catalog lacks the arrays' measures too (each array has the one default
/// measure): still read, never written.
const CHECKPOINT_VERSION_UNMEASURED: u32 = 3;
const HEADER_BYTES: usize = 8 + 4 + 8 + 4 + 4;
/// The largest checkpoint payload read back: 64 M pages' worth of page table.
pub const MAX_CHECKPOINT_BYTES: u64 = 2 * 1024 * 1024 * 1024;
const PAGE_ENTRY_BYTES: usize = 8 + 4 + 8 + 4;
const SEGMENT_ENTRY_BYTES: usize = 4 + 8;

/// Everything a checkpoint holds.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// Counts checkpoints; informational.
    pub sequence: u64,
    pub page_bytes: u32,
    /// Replay starts here: the first frame after the checkpoint's page images.
    pub replay_from: LogTail,
    /// Where the cold store appends next; every chunk before it is durable.
    pub cold_tail: ColdTail,
    pub root: PageId,
    pub next_page_id: PageId,
    pub catalog: Catalog,
    /// Every allocated page and its image's location.
    pub pages: Vec<(PageId, FrameLoc)>,
    /// Bytes of large records the tree refers to, per hot log segment (segments with none
    /// are absent), in segment order.
    pub large_live: Vec<(u32, u64)>,
    /// Bytes of chunks the chunk index refers to, per cold segment, likewise.
    pub cold_live: Vec<(u32, u64)>,
}

impl Checkpoint {
    /// The page table the checkpoint describes.
    pub fn page_table(&self) -> PageTable {
        let mut table = PageTable::default();
        for (id, loc) in &self.pages {
            table.set(*id, Slot::Disk(*loc));
        }
        table
    }

    /// The log segments before the replay point and the page files this checkpoint needs:
    /// those holding a page image of its table or a large record of its tree. Every other
    /// one can be removed once this checkpoint is durable.
    pub fn needed_segments(&self) -> BTreeSet<u32> {
        self.pages
            .iter()
            .map(|(_, loc)| loc.segment_id)
            .chain(self.large_live.iter().map(|(id, _)| *id))
            .filter(|id| *id < self.replay_from.segment_id || is_page_file(*id))
            .collect()
    }

    /// The cold segments before the cold tail's this checkpoint needs: those holding a chunk
    /// of its chunk index. Replay only adds chunks at or after the cold tail, so every other
    /// one before it can be removed once this checkpoint is durable.
    pub fn needed_cold_segments(&self) -> BTreeSet<u32> {
        self.cold_live
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| *id < self.cold_tail.segment_id)
            .collect()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut payload = Vec::with_capacity(64 + self.pages.len() * PAGE_ENTRY_BYTES);
        payload.put_u64_le(self.sequence);
        payload.put_u32_le(self.page_bytes);
        payload.put_u32_le(self.replay_from.segment_id);
        payload.put_u64_le(self.replay_from.offset);
        payload.put_u64_le(self.replay_from.next_lsn);
        payload.put_u32_le(self.cold_tail.segment_id);
        payload.put_u64_le(self.cold_tail.offset);
        payload.put_u64_le(self.root);
        payload.put_u64_le(self.next_page_id);
        self.catalog.encode(&mut payload);
        payload.put_u64_le(self.pages.len() as u64);
        for (id, loc) in &self.pages {
            payload.put_u64_le(*id);
            payload.put_u32_le(loc.segment_id);
            payload.put_u64_le(loc.offset);
            payload.put_u32_le(loc.len);
        }
        for list in [&self.large_live, &self.cold_live] {
            payload.put_u32_le(u32_len(list.len()));
            for (segment_id, bytes) in list {
                payload.put_u32_le(*segment_id);
                payload.put_u64_le(*bytes);
            }
        }
        framed(CHECKPOINT_VERSION, &payload)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let bad = |offset: u64, reason: String| Error::corruption(CHECKPOINT_FILE, offset, reason);
        if bytes.len() < HEADER_BYTES {
            return Err(bad(0, "checkpoint header truncated".to_string()));
        }
        let mut header = &bytes[..HEADER_BYTES];
        let header_crc = u32::from_le_bytes(
            bytes[HEADER_BYTES - 4..HEADER_BYTES]
                .try_into()
                .expect("4 bytes"),
        );
        if crc32fast::hash(&bytes[..HEADER_BYTES - 4]) != header_crc {
            return Err(bad(0, "checkpoint header checksum mismatch".to_string()));
        }
        if &header[..8] != MAGIC {
            return Err(bad(0, "not a checkpoint file (bad magic)".to_string()));
        }
        header.advance(8);
        let version = header.get_u32_le();
        let form = match version {
            CHECKPOINT_VERSION | CHECKPOINT_VERSION_PAGES_IN_LOG => Some(SpecForm::RolledUp),
            CHECKPOINT_VERSION_UNROLLED => Some(SpecForm::Migrating),
            CHECKPOINT_VERSION_UNMIGRATING => Some(SpecForm::Slotted),
            CHECKPOINT_VERSION_UNSLOTTED => Some(SpecForm::Mapped),
            CHECKPOINT_VERSION_UNMAPPED | CHECKPOINT_VERSION_WALKED_LEAVES => {
                Some(SpecForm::Formatted)
            }
            CHECKPOINT_VERSION_UNFORMATTED => Some(SpecForm::Measured),
            CHECKPOINT_VERSION_UNMEASURED => Some(SpecForm::Unmeasured),
            _ => None,
        };
        let Some(form) = form else {
            return Err(Error::UnsupportedVersion {
                file: CHECKPOINT_FILE.to_string(),
                found: version,
                supported: CHECKPOINT_VERSION,
            });
        };
        let payload_len = header.get_u64_le();
        let payload_crc = header.get_u32_le();
        if payload_len != (bytes.len() - HEADER_BYTES) as u64 {
            return Err(bad(
                12,
                format!("payload length {payload_len} differs from the file's"),
            ));
        }
        let payload = &bytes[HEADER_BYTES..];
        if crc32fast::hash(payload) != payload_crc {
            return Err(bad(
                HEADER_BYTES as u64,
                "checkpoint payload checksum mismatch".to_string(),
            ));
        }
        let bad_list = |reason: String| bad(HEADER_BYTES as u64, reason);
        let truncated = || {
            bad(
                HEADER_BYTES as u64,
                "checkpoint payload truncated".to_string(),
            )
        };
        let mut p = Bytes::copy_from_slice(payload);
        if p.remaining() < 64 {
            return Err(truncated());
        }
        let sequence = p.get_u64_le();
        let page_bytes = p.get_u32_le();
        let replay_from = LogTail {
            segment_id: p.get_u32_le(),
            offset: p.get_u64_le(),
            next_lsn: p.get_u64_le(),
        };
        let cold_tail = ColdTail {
            segment_id: p.get_u32_le(),
            offset: p.get_u64_le(),
        };
        let root = p.get_u64_le();
        let next_page_id = p.get_u64_le();
        let catalog =
            Catalog::decode(&mut p, form).map_err(|reason| bad(HEADER_BYTES as u64, reason))?;
        if p.remaining() < 8 {
            return Err(truncated());
        }
        let count = p.get_u64_le();
        let pages_len = count.checked_mul(PAGE_ENTRY_BYTES as u64);
        if pages_len.is_none_or(|len| len + 4 > p.remaining() as u64) {
            return Err(bad(
                HEADER_BYTES as u64,
                format!("page count {count} does not match the payload"),
            ));
        }
        let mut pages = Vec::with_capacity(index(count));
        for _ in 0..count {
            let id = p.get_u64_le();
            let loc = FrameLoc {
                segment_id: p.get_u32_le(),
                offset: p.get_u64_le(),
                len: p.get_u32_le(),
            };
            if id >= next_page_id {
                return Err(bad(
                    HEADER_BYTES as u64,
                    format!("page {id} at or past next page id {next_page_id}"),
                ));
            }
            pages.push((id, loc));
        }
        let large_live = decode_segment_bytes(&mut p, "large record", false).map_err(&bad_list)?;
        let cold_live = decode_segment_bytes(&mut p, "cold chunk", true).map_err(&bad_list)?;
        if replay_from.next_lsn == 0 {
            return Err(bad(HEADER_BYTES as u64, "replay lsn 0".to_string()));
        }
        Ok(Checkpoint {
            sequence,
            page_bytes,
            replay_from,
            cold_tail,
            root,
            next_page_id,
            catalog,
            pages,
            large_live,
            cold_live,
        })
    }

    /// Writes the checkpoint durably: temporary file, sync, rename, directory sync.
    pub fn write(&self, storage: &dyn Storage) -> Result<()> {
        let bytes = self.encode();
        storage.create(CHECKPOINT_TEMP_FILE)?;
        storage.write_at(CHECKPOINT_TEMP_FILE, 0, &bytes)?;
        storage.sync(CHECKPOINT_TEMP_FILE)?;
        storage.rename(CHECKPOINT_TEMP_FILE, CHECKPOINT_FILE)?;
        storage.sync_dir()
    }

    /// Reads the checkpoint file.
    pub fn read(storage: &dyn Storage) -> Result<Self> {
        let len = storage.len(CHECKPOINT_FILE)?;
        if len > MAX_CHECKPOINT_BYTES {
            return Err(Error::corruption(
                CHECKPOINT_FILE,
                0,
                format!("checkpoint of {len} bytes over the limit"),
            ));
        }
        let bytes = storage.read_vec(CHECKPOINT_FILE, 0, index(len))?;
        Self::decode(&bytes)
    }
}

/// A list of (segment id u32, bytes u64) after its count u32: ascending ids, no zero
/// bytes; `last` when it must end the payload.
fn decode_segment_bytes(
    p: &mut Bytes,
    what: &str,
    last: bool,
) -> std::result::Result<Vec<(u32, u64)>, String> {
    if p.remaining() < 4 {
        return Err(format!("{what} list truncated"));
    }
    let count = p.get_u32_le() as usize;
    let fits = count.checked_mul(SEGMENT_ENTRY_BYTES).is_some_and(|len| {
        if last {
            len == p.remaining()
        } else {
            len <= p.remaining()
        }
    });
    if !fits {
        return Err(format!(
            "{what} segment count {count} does not match the payload"
        ));
    }
    let mut list: Vec<(u32, u64)> = Vec::with_capacity(count);
    for _ in 0..count {
        let (segment_id, bytes) = (p.get_u32_le(), p.get_u64_le());
        if bytes == 0 || list.last().is_some_and(|(last, _)| *last >= segment_id) {
            return Err(format!("{what} bytes not in segment order"));
        }
        list.push((segment_id, bytes));
    }
    Ok(list)
}

/// A checkpoint file of `version` holding `payload`: the header, then the payload.
fn framed(version: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len());
    out.put_slice(MAGIC);
    out.put_u32_le(version);
    out.put_u64_le(payload.len() as u64);
    out.put_u32_le(crc32fast::hash(payload));
    let header_crc = crc32fast::hash(&out);
    out.put_u32_le(header_crc);
    out.extend_from_slice(payload);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{CollectionInfo, CollectionSpec};

    fn sample() -> Checkpoint {
        let mut catalog = Catalog::default();
        catalog.insert(CollectionInfo::new(0, CollectionSpec::new("users")));
        Checkpoint {
            sequence: 2,
            page_bytes: 16384,
            replay_from: LogTail {
                segment_id: 1,
                offset: 4096,
                next_lsn: 10,
            },
            cold_tail: ColdTail {
                segment_id: 2,
                offset: 4000,
            },
            root: 4,
            next_page_id: 5,
            catalog,
            pages: vec![(
                4,
                FrameLoc {
                    segment_id: 1,
                    offset: 32,
                    len: 99,
                },
            )],
            large_live: vec![(1, 20_000), (3, 17)],
            cold_live: vec![(1, 700), (2, 5)],
        }
    }

    #[test]
    fn round_trip() {
        let bytes = sample().encode();
        let back = Checkpoint::decode(&bytes).unwrap();
        assert_eq!(back.encode(), bytes);
        assert_eq!(back.catalog.get("users").unwrap().id, 0);
        assert_eq!(back.large_live, vec![(1, 20_000), (3, 17)]);
        assert_eq!(back.cold_live, vec![(1, 700), (2, 5)]);
        assert_eq!(back.needed_cold_segments(), BTreeSet::from([1]));
    }

    /// `bytes` with its version set to `version` and its header checksum made again.
    fn with_version(bytes: &[u8], version: u32) -> Vec<u8> {
        let mut out = bytes.to_vec();
        out[8..12].copy_from_slice(&version.to_le_bytes());
        let crc = crc32fast::hash(&out[..HEADER_BYTES - 4]);
        out[HEADER_BYTES - 4..HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// `bytes` (the sample's, of one collection) as a build of `version` wrote them: its
    /// catalog without slots and retired records (7), and its collection's spec without the
    /// document map's tag too (5 and 6).
    fn older(bytes: &[u8], version: u32) -> Vec<u8> {
        if version >= 8 {
            // A collection without arrays has no layout states and no rollups: its bytes
            // are version 9's, 10's and 11's.
            return framed(version, &bytes[HEADER_BYTES..]);
        }
        let mut catalog = Vec::new();
        sample().catalog.encode(&mut catalog);
        let mut payload = bytes[HEADER_BYTES..].to_vec();
        let at = payload
            .windows(catalog.len())
            .position(|w| w == catalog)
            .expect("the catalog is in the payload");
        // The one collection's slots (next slot, no arrays) and the empty retired list.
        let end = at + catalog.len();
        assert_eq!(payload[end - 6..end], [0, 0, 0, 0, 0, 0]);
        payload.drain(end - 6..end);
        if version < 7 {
            let tag = payload.remove(end - 7);
            assert_eq!(tag, 0, "the sample's collection has no map");
        }
        framed(version, &payload)
    }

    /// Versions 5 (pages without slotted leaves), 6 (specs without document maps), 7
    /// (catalogs without slots), 8 (without layout states), 9 (without rollups) and 10
    /// (every page in the log) read as version 11 and are written as 11; a version past
    /// this build's is refused by its number.
    #[test]
    fn versions_5_to_10_are_read_and_a_newer_one_refused() {
        let bytes = sample().encode();
        for version in [5, 6, 7, 8, 9, 10] {
            let old = Checkpoint::decode(&older(&bytes, version)).unwrap();
            assert_eq!(old.encode(), bytes, "version {version}");
            // Its bytes read as the next version's are refused, not misread (7's as 8's
            // lack the retired count; 8's are 9's when no collection has arrays).
            if version < 8 {
                let next = with_version(&older(&bytes, version), version.max(6) + 1);
                assert!(Checkpoint::decode(&next).is_err(), "version {version}");
            }
        }
        match Checkpoint::decode(&with_version(&bytes, CHECKPOINT_VERSION + 1)) {
            Err(Error::UnsupportedVersion {
                found, supported, ..
            }) => assert_eq!((found, supported), (12, 11)),
            other => panic!("{other:?}"),
        }
    }

    /// A version 9 catalog with an array: its spec lacks the rollup spans, which version
    /// 10 writes after the map; it reads as the array without rollups.
    #[test]
    fn version_9_reads_arrays_without_rollups() {
        let mut checkpoint = sample();
        let hourly = crate::catalog::Layout::Bucket {
            max_items: 60,
            span: Some(3600),
        };
        let spec = CollectionSpec::new("sensors").array("t", hourly);
        checkpoint.catalog = Catalog::default();
        checkpoint
            .catalog
            .insert(CollectionInfo::new(0, spec.clone()));
        let bytes = checkpoint.encode();
        let mut catalog = Vec::new();
        checkpoint.catalog.encode(&mut catalog);
        let mut payload = bytes[HEADER_BYTES..].to_vec();
        let at = payload
            .windows(catalog.len())
            .position(|w| w == catalog)
            .expect("the catalog is in the payload");
        // Next id, count and id, then the spec, whose last 8 bytes are the array's span.
        let spec_end = at + 12 + spec.encoded_len();
        assert_eq!(payload[spec_end - 8..spec_end], [0; 8]);
        payload.drain(spec_end - 8..spec_end);
        let old = Checkpoint::decode(&framed(9, &payload)).unwrap();
        assert_eq!(old.catalog, checkpoint.catalog);
        assert_eq!(old.encode(), bytes);
        // Read as version 10's, the same bytes are refused, not misread.
        assert!(Checkpoint::decode(&framed(10, &payload)).is_err());
    }

    #[test]
    fn any_damage_is_corruption() {
        let bytes = sample().encode();
        for index in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[index] ^= 0x10;
            assert!(Checkpoint::decode(&damaged).is_err(), "byte {index}");
        }
        for len in 0..bytes.len() {
            assert!(Checkpoint::decode(&bytes[..len]).is_err());
        }
    }
}
