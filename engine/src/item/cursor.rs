//! An item's identity as a cursor: its key and push sequence, and the checked token it
//! prints as and is read back from.

/// A position in an array's iteration: the last item returned. Items with equal keys are
/// told apart by their push order, so paging never skips or repeats one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// The item's key.
    pub key: i64,
    /// Its push sequence in the array: ties of `key` are ordered by it.
    pub seq: u64,
}

/// Hex digits of a cursor token: the key and push order (8 bytes each, big-endian) and a
/// CRC32 of them (4 bytes).
const CURSOR_TOKEN_LEN: usize = 2 * (8 + 8 + 4);

/// The cursor as a token to print and read back: 40 hex digits, checked by a CRC32 so that
/// a token damaged in a copy is refused, not taken for another position.
impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut bytes = [0u8; 20];
        bytes[..8].copy_from_slice(&self.key.to_be_bytes());
        bytes[8..16].copy_from_slice(&self.seq.to_be_bytes());
        let crc = crc32fast::hash(&bytes[..16]);
        bytes[16..].copy_from_slice(&crc.to_be_bytes());
        for byte in bytes {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Cursor {
    type Err = crate::error::Error;

    fn from_str(token: &str) -> Result<Cursor, crate::error::Error> {
        let bad = |reason: &str| crate::error::Error::InvalidCursor {
            token: token.chars().take(2 * CURSOR_TOKEN_LEN).collect(),
            reason: reason.to_string(),
        };
        if token.len() != CURSOR_TOKEN_LEN || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("a cursor token is 40 hex digits"));
        }
        let mut bytes = [0u8; 20];
        for (at, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&token[2 * at..2 * at + 2], 16)
                .map_err(|_| bad("a cursor token is 40 hex digits"))?;
        }
        let crc = u32::from_be_bytes(bytes[16..].try_into().expect("4 bytes"));
        if crc != crc32fast::hash(&bytes[..16]) {
            return Err(bad("its check digits do not match (a damaged token)"));
        }
        Ok(Cursor {
            key: i64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")),
            seq: u64::from_be_bytes(bytes[8..16].try_into().expect("8 bytes")),
        })
    }
}

/// A cursor serializes as its token (a string), so it can travel in a web page's query or
/// a job's state and come back checked.
#[cfg(feature = "serde")]
impl serde::Serialize for Cursor {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Cursor {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let token = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        token.parse().map_err(serde::de::Error::custom)
    }
}
