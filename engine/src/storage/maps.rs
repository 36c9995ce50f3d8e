//! Memory maps of a store's segment files, by segment id: of a sealed segment, the whole
//! file; of the one being appended to, the file as long as it was when mapped. The hot log
//! and the cold store read through them, each with its own rule for when the segment being
//! written is mapped again.

use std::collections::HashMap;

use bytes::Bytes;
use parking_lot::Mutex;

use super::seam::Storage;
use crate::error::Result;

/// One map held.
struct SegmentMap {
    bytes: Bytes,
    /// Of a sealed segment, the whole file (a read past it is damage, not a later write).
    whole: bool,
}

/// The maps of one kind of segment.
#[derive(Default)]
pub struct SegmentMaps {
    maps: Mutex<HashMap<u32, SegmentMap>>,
}

/// Which segment a read is of, and how the one being appended to is mapped.
pub enum Segment {
    /// No longer written: mapped whole, once.
    Sealed,
    /// Being appended to: mapped as long as the file is when a read lies past the map held
    /// and the file has grown at least `min_growth` bytes past it (0: whenever a read lies
    /// past it; more asks the file's length first, so that a segment written a little at a
    /// time is not mapped again at every fresh read).
    Growing { min_growth: u64 },
}

impl SegmentMaps {
    /// A map of segment `id` reaching `end`: the map held when it does, else a new one of
    /// the file `name` gives (named only then: a read from the map held builds no string),
    /// which `check` sees before it is kept. `None` for a growing segment that the
    /// storage cannot map in place, or whose file does not reach `end`, or has not grown
    /// enough: read it from the file.
    pub fn get(
        &self,
        storage: &dyn Storage,
        id: u32,
        name: impl FnOnce() -> String,
        segment: Segment,
        end: u64,
        check: impl Fn(&[u8]) -> Result<()>,
    ) -> Result<Option<Bytes>> {
        let mut maps = self.maps.lock();
        let held = maps.get(&id);
        if let Some(map) = held
            && (map.whole || map.bytes.len() as u64 >= end)
        {
            return Ok(Some(map.bytes.clone()));
        }
        let name = name();
        let map = match segment {
            Segment::Sealed => SegmentMap {
                bytes: Bytes::from_owner(storage.map(&name)?),
                whole: true,
            },
            Segment::Growing { min_growth } => {
                if min_growth > 0 {
                    let held = held.map_or(0, |map| map.bytes.len() as u64);
                    let len = storage.len(&name)?;
                    if len < end || len < held.saturating_add(min_growth) {
                        return Ok(None);
                    }
                }
                let Some(mapped) = storage.map_growing(&name)? else {
                    return Ok(None);
                };
                let bytes = Bytes::from_owner(mapped);
                if (bytes.len() as u64) < end {
                    return Ok(None);
                }
                SegmentMap {
                    bytes,
                    whole: false,
                }
            }
        };
        check(&map.bytes)?;
        let bytes = map.bytes.clone();
        maps.insert(id, map);
        Ok(Some(bytes))
    }

    /// The length of the map held of segment `id` and whether it is whole; `None` without
    /// one.
    #[cfg(test)]
    pub fn held(&self, id: u32) -> Option<(usize, bool)> {
        let maps = self.maps.lock();
        maps.get(&id).map(|map| (map.bytes.len(), map.whole))
    }

    /// Forgets the map of segment `id` (about to be removed: views of it still held keep it).
    pub fn forget(&self, id: u32) {
        self.maps.lock().remove(&id);
    }
}
