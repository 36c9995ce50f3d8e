//! Collections and their schemas, as stored in checkpoints and in the redo of
//! `create_collection`.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes};

use crate::{Error, Result};

/// The longest collection name, in bytes.
pub const MAX_COLLECTION_NAME_BYTES: usize = 255;
/// The most collections one database holds.
pub const MAX_COLLECTIONS: usize = 65_536;

/// A collection's identity inside the database; the prefix of its keys in the tree.
pub type CollectionId = u32;

/// A collection's name and schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionSpec {
    name: String,
}

impl CollectionSpec {
    /// A collection named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        CollectionSpec { name: name.into() }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let invalid = |reason: &str| {
            Err(Error::InvalidName {
                name: self.name.clone(),
                reason: reason.to_string(),
            })
        };
        if self.name.is_empty() {
            return invalid("empty");
        }
        if self.name.len() > MAX_COLLECTION_NAME_BYTES {
            return invalid("longer than 255 bytes");
        }
        if self.name.chars().any(char::is_control) {
            return invalid("contains control characters");
        }
        Ok(())
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.name.len() as u8);
        out.put_slice(self.name.as_bytes());
        // The number of array fields; arrays come with the pattern layouts.
        out.put_u16_le(0);
    }

    pub(crate) fn decode(bytes: &mut Bytes) -> Result<Self, String> {
        if bytes.remaining() < 1 {
            return Err("collection spec truncated".to_string());
        }
        let len = bytes.get_u8() as usize;
        if bytes.remaining() < len + 2 {
            return Err("collection spec truncated".to_string());
        }
        let name = String::from_utf8(bytes.split_to(len).to_vec())
            .map_err(|_| "collection name is not UTF-8".to_string())?;
        let arrays = bytes.get_u16_le();
        if arrays != 0 {
            return Err(format!(
                "collection {name:?} declares {arrays} unknown array fields"
            ));
        }
        let spec = CollectionSpec { name };
        spec.validate().map_err(|e| e.to_string())?;
        Ok(spec)
    }
}

/// A collection as the database knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionInfo {
    pub id: CollectionId,
    pub spec: CollectionSpec,
}

/// All collections, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalog {
    pub by_name: BTreeMap<String, Arc<CollectionInfo>>,
    pub next_id: CollectionId,
}

impl Catalog {
    pub fn get(&self, name: &str) -> Result<&Arc<CollectionInfo>> {
        self.by_name
            .get(name)
            .ok_or_else(|| Error::UnknownCollection {
                name: name.to_string(),
            })
    }

    pub fn by_id(&self, id: CollectionId) -> Option<&Arc<CollectionInfo>> {
        self.by_name.values().find(|info| info.id == id)
    }

    pub fn insert(&mut self, info: CollectionInfo) {
        self.next_id = self.next_id.max(info.id + 1);
        self.by_name.insert(info.spec.name.clone(), Arc::new(info));
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.next_id);
        out.put_u32_le(self.by_name.len() as u32);
        for info in self.by_name.values() {
            out.put_u32_le(info.id);
            info.spec.encode(out);
        }
    }

    pub fn decode(bytes: &mut Bytes) -> Result<Self, String> {
        if bytes.remaining() < 8 {
            return Err("catalog truncated".to_string());
        }
        let next_id = bytes.get_u32_le();
        let count = bytes.get_u32_le() as usize;
        if count > MAX_COLLECTIONS {
            return Err(format!("catalog claims {count} collections"));
        }
        let mut catalog = Catalog {
            by_name: BTreeMap::new(),
            next_id,
        };
        for _ in 0..count {
            if bytes.remaining() < 4 {
                return Err("catalog truncated".to_string());
            }
            let id = bytes.get_u32_le();
            let spec = CollectionSpec::decode(bytes)?;
            if id >= next_id
                || catalog.by_id(id).is_some()
                || catalog.by_name.contains_key(&spec.name)
            {
                return Err(format!(
                    "collection {:?} has a duplicate or out-of-range id {id}",
                    spec.name
                ));
            }
            catalog
                .by_name
                .insert(spec.name.clone(), Arc::new(CollectionInfo { id, spec }));
        }
        Ok(catalog)
    }
}
