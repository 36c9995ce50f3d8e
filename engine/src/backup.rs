//! `Db::backup` and `Db::restore`: a database as one self-contained file, written from one
//! snapshot while commits go on, and a new database made from such a file. The bytes, and
//! what a restore keeps and renumbers: `format-spec/backup.md`.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use bytes::{Buf, BufMut, Bytes};

use crate::catalog::{CollectionSpec, SpecForm};
use crate::db::Db;
use crate::item::{self, Stored};
use crate::snapshot::Snapshot;
use crate::{
    Durability, Error, ItemQuery, MAX_KEY_BYTES, MAX_RECORD_BYTES, NewItem, Options, Result,
};

/// The first bytes of a backup file.
pub const BACKUP_MAGIC: [u8; 8] = *b"SKEWDBBK";
/// The version this build writes and reads.
const BACKUP_VERSION: u32 = 1;

const KIND_COLLECTION: u8 = 1;
const KIND_PARENT: u8 = 2;
const KIND_ITEMS: u8 = 3;
const KIND_END: u8 = 4;

/// Bytes of a frame around its payload: kind, length, CRC32.
const FRAME_OVERHEAD_BYTES: usize = 1 + 4 + 4;
/// The largest payload a frame may declare: a parent with a body of 16 MiB and a key, or a
/// run of items (cut at [`ITEMS_FRAME_BYTES`], but one item may be up to the record limit).
const MAX_FRAME_BYTES: usize = MAX_RECORD_BYTES + 64 * 1024;
/// Items per frame are cut once their bytes pass this.
const ITEMS_FRAME_BYTES: usize = 1024 * 1024;
/// Items per batch when restoring (a parent's items may span batches).
const RESTORE_BATCH_ITEMS: usize = 20_000;

/// What a backup wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackupReport {
    /// The snapshot's commit count ([`crate::Snapshot::commits`]): the backup holds every
    /// batch committed up to it and none after.
    pub commits: u64,
    /// Collections written.
    pub collections: u64,
    /// Parents written.
    pub parents: u64,
    /// Items written.
    pub items: u64,
    /// The file's size.
    pub bytes: u64,
}

/// Appends one frame: kind, payload length (u32 LE), payload, CRC32 (LE) of all three.
fn frame(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    let start = out.len();
    out.put_u8(kind);
    out.put_u32_le(payload.len() as u32);
    out.put_slice(payload);
    let crc = crc32fast::hash(&out[start..]);
    out.put_u32_le(crc);
}

/// Writes a backup of `snapshot` to `path` (replaced atomically: written beside it,
/// synced, renamed, the directory synced).
pub(crate) fn write(snapshot: &Snapshot, path: &Path) -> Result<BackupReport> {
    let shown = path.display().to_string();
    let partial = sibling(path, "partial")?;
    let io = |op| {
        let shown = shown.clone();
        move |e| Error::io(op, shown, e)
    };
    let file = std::fs::File::create(&partial).map_err(io("create"))?;
    let mut out = BufWriter::new(file);
    let mut report = BackupReport {
        commits: snapshot.commits(),
        ..BackupReport::default()
    };
    let mut buf = Vec::new();
    buf.put_slice(&BACKUP_MAGIC);
    buf.put_u32_le(BACKUP_VERSION);
    let mut payload = Vec::new();
    let names = snapshot.collection_names();
    for (ordinal, name) in names.iter().enumerate() {
        let collection = snapshot.collection(name)?;
        let spec = collection.spec().clone();
        payload.clear();
        spec.encode(&mut payload);
        frame(&mut buf, KIND_COLLECTION, &payload);
        report.collections += 1;
        for document in collection.scan(..)? {
            let document = document?;
            payload.clear();
            payload.put_u32_le(ordinal as u32);
            payload.put_u16_le(document.key().len() as u16);
            payload.put_slice(document.key());
            payload.put_u32_le(document.body().len() as u32);
            payload.put_slice(document.body());
            frame(&mut buf, KIND_PARENT, &payload);
            report.parents += 1;
            for (index, array) in spec.arrays().iter().enumerate() {
                let Some(page) =
                    collection.items(document.key(), &array.field, &ItemQuery::new())?
                else {
                    continue;
                };
                // Push order, so that a restore pushing them again rebuilds what depends
                // on it (an Outlier's first N, where buckets were cut).
                let mut stored: Vec<Stored> = page
                    .items
                    .into_iter()
                    .zip(page.ids)
                    .map(|(item, id)| Stored { item, seq: id.seq })
                    .collect();
                stored.sort_by_key(|s| s.seq);
                report.items += stored.len() as u64;
                for run in runs(&stored) {
                    payload.clear();
                    payload.put_u16_le(index as u16);
                    item::encode_items(run, &mut payload);
                    frame(&mut buf, KIND_ITEMS, &payload);
                }
            }
            out.write_all(&buf).map_err(io("write"))?;
            buf.clear();
        }
        out.write_all(&buf).map_err(io("write"))?;
        buf.clear();
    }
    payload.clear();
    payload.put_u64_le(report.collections);
    payload.put_u64_le(report.parents);
    payload.put_u64_le(report.items);
    frame(&mut buf, KIND_END, &payload);
    out.write_all(&buf).map_err(io("write"))?;
    let file = out
        .into_inner()
        .map_err(|e| Error::io("write", &shown, e.into_error()))?;
    file.sync_all().map_err(io("sync"))?;
    report.bytes = file.metadata().map_err(io("stat"))?.len();
    drop(file);
    std::fs::rename(&partial, path).map_err(io("rename"))?;
    sync_parent(path)?;
    Ok(report)
}

/// `stored` cut into runs of at most [`ITEMS_FRAME_BYTES`] (each at least one item).
fn runs(stored: &[Stored]) -> Vec<&[Stored]> {
    let mut runs = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (at, s) in stored.iter().enumerate() {
        let len = item::stored_len(&s.item);
        if at > start && bytes + len > ITEMS_FRAME_BYTES {
            runs.push(&stored[start..at]);
            (start, bytes) = (at, 0);
        }
        bytes += len;
    }
    if start < stored.len() {
        runs.push(&stored[start..]);
    }
    runs
}

/// `path` with `.suffix` added to its file name.
fn sibling(path: &Path, suffix: &str) -> Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| Error::InvalidOption {
        option: "backup path",
        reason: format!("{} names no file", path.display()),
    })?;
    let mut name = name.to_os_string();
    name.push(format!(".{suffix}"));
    Ok(path.with_file_name(name))
}

fn sync_parent(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = std::fs::File::open(parent)
        .map_err(|e| Error::io("open", parent.display().to_string(), e))?;
    dir.sync_all()
        .map_err(|e| Error::io("sync", parent.display().to_string(), e))
}

/// Reads a backup's frames in order, each checked before it is handed out.
struct Frames<R> {
    input: R,
    file: String,
    offset: u64,
}

impl<R: Read> Frames<R> {
    fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::corruption(&self.file, self.offset, reason)
    }

    fn read_exact(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => self.corrupt(format!("file ends inside {what}")),
            _ => Error::io("read", &self.file, e),
        })
    }

    fn header(&mut self) -> Result<()> {
        let mut header = [0u8; 12];
        self.read_exact(&mut header, "the header")?;
        if header[..8] != BACKUP_MAGIC {
            return Err(self.corrupt("not a skewdb backup (magic bytes differ)"));
        }
        let version = u32::from_le_bytes(header[8..].try_into().expect("4 bytes"));
        if version != BACKUP_VERSION {
            return Err(Error::UnsupportedVersion {
                file: self.file.clone(),
                found: version,
                supported: BACKUP_VERSION,
            });
        }
        self.offset = header.len() as u64;
        Ok(())
    }

    /// The next frame's kind and payload.
    fn next(&mut self) -> Result<(u8, Bytes)> {
        let mut head = [0u8; 5];
        self.read_exact(&mut head, "a frame header")?;
        let len = u32::from_le_bytes(head[1..].try_into().expect("4 bytes")) as usize;
        if len > MAX_FRAME_BYTES {
            return Err(self.corrupt(format!("frame of {len} bytes, over the {MAX_FRAME_BYTES}")));
        }
        let mut rest = vec![0u8; len + 4];
        self.read_exact(&mut rest, "a frame")?;
        let crc = u32::from_le_bytes(rest[len..].try_into().expect("4 bytes"));
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&head);
        hasher.update(&rest[..len]);
        if hasher.finalize() != crc {
            return Err(self.corrupt("frame checksum mismatch"));
        }
        rest.truncate(len);
        let kind = head[0];
        self.offset += (FRAME_OVERHEAD_BYTES + len) as u64;
        Ok((kind, Bytes::from(rest)))
    }
}

/// Makes a new database at `dir` from the backup at `backup`, and opens it with `options`.
/// The database is built beside `dir` and renamed into place once whole, so `dir` never
/// holds half of one; `dir` must not exist.
pub(crate) fn restore(backup: &Path, dir: &Path, options: Options) -> Result<Db> {
    let shown = dir.display().to_string();
    if dir.exists() {
        return Err(Error::io(
            "restore",
            &shown,
            std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the directory exists"),
        ));
    }
    let building = sibling(dir, "restoring")?;
    if building.exists() {
        // A restore that stopped part way: nothing of it is in use.
        std::fs::remove_dir_all(&building)
            .map_err(|e| Error::io("remove", building.display().to_string(), e))?;
    }
    let file = std::fs::File::open(backup)
        .map_err(|e| Error::io("open", backup.display().to_string(), e))?;
    let mut frames = Frames {
        input: BufReader::with_capacity(1 << 20, file),
        file: backup.display().to_string(),
        offset: 0,
    };
    frames.header()?;
    {
        let db = Db::open(&building, options.clone().durability(Durability::Buffered))?;
        load(&db, &mut frames)?;
        db.persist()?;
        db.close()?;
    }
    std::fs::rename(&building, dir).map_err(|e| Error::io("rename", &shown, e))?;
    sync_parent(dir)?;
    Db::open(dir, options)
}

/// Replays the frames into `db`: collections created, parents put, items pushed in the
/// order they were pushed; the end frame's counts checked against what was read.
fn load<R: Read>(db: &Db, frames: &mut Frames<R>) -> Result<()> {
    let mut specs: Vec<CollectionSpec> = Vec::new();
    let (mut parents, mut items) = (0u64, 0u64);
    // The parent the items that follow belong to: its collection's ordinal and its key.
    let mut parent: Option<(usize, Bytes)> = None;
    let mut batch = db.batch();
    let mut pending = 0;
    loop {
        let at = frames.offset;
        let (kind, mut payload) = frames.next()?;
        let bad = |reason: String| Error::corruption(&frames.file, at, reason);
        match kind {
            KIND_COLLECTION => {
                let spec =
                    CollectionSpec::decode(&mut payload, SpecForm::Formatted).map_err(&bad)?;
                db.create_collection(spec.clone())?;
                specs.push(spec);
                parent = None;
            }
            KIND_PARENT => {
                if payload.remaining() < 6 {
                    return Err(bad("parent frame truncated".into()));
                }
                let ordinal = payload.get_u32_le() as usize;
                let key_len = payload.get_u16_le() as usize;
                if ordinal >= specs.len()
                    || key_len > MAX_KEY_BYTES
                    || payload.remaining() < key_len + 4
                {
                    return Err(bad(format!(
                        "parent frame names collection {ordinal} of {} or has a bad key",
                        specs.len()
                    )));
                }
                let key = payload.split_to(key_len);
                let body_len = payload.get_u32_le() as usize;
                if payload.remaining() != body_len {
                    return Err(bad("parent body length disagrees with the frame".into()));
                }
                batch.put(specs[ordinal].name(), &key, &payload);
                parents += 1;
                pending += 1;
                parent = Some((ordinal, key));
            }
            KIND_ITEMS => {
                let Some((ordinal, key)) = &parent else {
                    return Err(bad("items before any parent".into()));
                };
                if payload.remaining() < 2 {
                    return Err(bad("items frame truncated".into()));
                }
                let spec = &specs[*ordinal];
                let index = payload.get_u16_le() as usize;
                let array = spec.arrays().get(index).ok_or_else(|| {
                    bad(format!("items of array {index} of {}", spec.arrays().len()))
                })?;
                let stored = item::decode_items(&mut payload).map_err(&bad)?;
                for s in stored {
                    let mut new = NewItem::new(&s.item.payload).key(s.item.key);
                    if let Some(value) = s.item.value {
                        new = new.value(value);
                    }
                    for (at, name) in array.measures.iter().enumerate().skip(1) {
                        if let Some(value) = s.item.measure(at) {
                            new = new.measure(name, value);
                        }
                    }
                    batch.push(spec.name(), key, &array.field, new);
                    items += 1;
                    pending += 1;
                }
            }
            KIND_END => {
                if payload.remaining() != 24 {
                    return Err(bad("end frame of the wrong size".into()));
                }
                let counts = (
                    payload.get_u64_le(),
                    payload.get_u64_le(),
                    payload.get_u64_le(),
                );
                if counts != (specs.len() as u64, parents, items) {
                    return Err(bad(format!(
                        "the end frame counts {counts:?} (collections, parents, items), the file held ({}, {parents}, {items})",
                        specs.len()
                    )));
                }
                batch.commit()?;
                return Ok(());
            }
            other => return Err(bad(format!("unknown frame kind {other}"))),
        }
        if pending >= RESTORE_BATCH_ITEMS {
            batch.commit()?;
            pending = 0;
        }
    }
}
