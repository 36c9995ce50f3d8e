//! `Db::backup` and `Db::restore`: a database as one self-contained file, written from one
//! snapshot while commits go on, and a new database made from such a file holding the same
//! records (`store/jobs/copy.rs`). The bytes: `format-spec/backup.md`.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes};

use std::collections::HashMap;

use crate::catalog::{CollectionId, CollectionInfo, CollectionSpec, SpecForm};
use crate::limits::widths::{index, u16_len, u32_len};
use crate::page::keys;
use crate::storage::{FsStorage, Storage};
use crate::store::{BatchOp, CopiedRecord, Engine, Version};
use crate::{
    error::{Error, Result},
    limits::MAX_RECORD_BYTES,
    options::{Durability, Options},
};

/// The first bytes of a backup file.
pub const BACKUP_MAGIC: [u8; 8] = *b"SKEWDBBK";
/// The version this build writes: 7, whose collection frames' specs end with their
/// arrays' rollup spans (`SpecForm::RolledUp`) and whose records may be rollup records.
/// Version 1 (items replayed as pushes, which lost placement after removals) was never
/// released; it is refused.
const BACKUP_VERSION: u32 = 7;
/// Backups whose chunks may be columnar sealed buckets (cold segment version 3), without
/// rollups: still read, never written.
const BACKUP_VERSION_UNROLLED: u32 = 6;
/// Backups whose chunks are all row chunks (cold segment versions 1 and 2): the same
/// frames, still read, never written.
const BACKUP_VERSION_ROWS: u32 = 5;
/// Backups whose collection frames lack the arrays' layout states (`SpecForm::Slotted`):
/// still read, never written.
const BACKUP_VERSION_UNMIGRATING: u32 = 4;
/// Backups whose collection frames lack the array slots (`SpecForm::Mapped`: each
/// collection's arrays in slots 0, 1, 2, ...): still read, never written.
const BACKUP_VERSION_UNSLOTTED: u32 = 3;
/// Backups whose collection frames lack the document map too (`SpecForm::Formatted`):
/// still read, never written.
const BACKUP_VERSION_UNMAPPED: u32 = 2;

const KIND_COLLECTION: u8 = 1;
const KIND_RECORD: u8 = 2;
const KIND_END: u8 = 3;

/// A record frame's flag: a chunk's bytes follow the value.
const HAS_CHUNK: u8 = 1;

/// Bytes of a frame around its payload: kind, length, CRC32.
const FRAME_OVERHEAD_BYTES: usize = 1 + 4 + 4;
/// The largest payload a frame may declare: a record of 16 MiB with its key, or a chunk
/// index entry with its chunk (a chunk holds at most 16 MiB too).
const MAX_FRAME_BYTES: usize = MAX_RECORD_BYTES + 64 * 1024;
/// Bytes of records (and chunks) a restore writes per commit group.
const RESTORE_STEP_BYTES: usize = 8 * 1024 * 1024;

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
    /// Tree records written: parents, tails, chunk index entries, outlier markers.
    pub records: u64,
    /// Cold chunks written (each beside its index entry).
    pub chunks: u64,
    /// The file's size.
    pub bytes: u64,
}

/// Appends one frame: kind, payload length (u32 LE), payload, CRC32 (LE) of all three.
fn frame(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    let start = out.len();
    out.put_u8(kind);
    out.put_u32_le(u32_len(payload.len()));
    out.put_slice(payload);
    let crc = crc32fast::hash(&out[start..]);
    out.put_u32_le(crc);
}

/// Writes a backup of `snapshot` to `path` (replaced atomically: written beside it,
/// synced, renamed, the directory synced). The directory must exist.
pub(crate) fn write(engine: &Engine, version: &Version, path: &Path) -> Result<BackupReport> {
    let (storage, name) = beside(path)?;
    write_to(engine, version, &storage, &name)
}

/// [`write`] through any storage: file `name` of `storage` replaced atomically (written as
/// `name.partial`, synced, renamed, the directory synced).
pub(crate) fn write_to(
    engine: &Engine,
    version: &Version,
    storage: &dyn Storage,
    name: &str,
) -> Result<BackupReport> {
    let partial = format!("{name}.partial");
    storage.create(&partial)?;
    // Frames gather in `buf`, written out a mebibyte at a time.
    let mut written = 0u64;
    let mut flush = |buf: &mut Vec<u8>| -> Result<()> {
        storage.write_at(&partial, written, buf)?;
        written += buf.len() as u64;
        buf.clear();
        Ok(())
    };
    let mut report = BackupReport {
        commits: version.commits,
        ..BackupReport::default()
    };
    let mut buf = Vec::new();
    buf.put_slice(&BACKUP_MAGIC);
    buf.put_u32_le(BACKUP_VERSION);
    let mut payload = Vec::new();
    for info in version.catalog.by_name.values() {
        payload.clear();
        payload.put_u32_le(info.id);
        info.spec.encode(&mut payload);
        info.encode_slots(&mut payload);
        frame(&mut buf, KIND_COLLECTION, &payload);
        report.collections += 1;
    }
    engine.copy_records(version, &mut |record| {
        payload.clear();
        payload.put_u8(if record.chunk.is_some() { HAS_CHUNK } else { 0 });
        payload.put_u16_le(u16_len(record.key.len()));
        payload.put_slice(&record.key);
        payload.put_u32_le(u32_len(record.value.len()));
        payload.put_slice(&record.value);
        if let Some(chunk) = &record.chunk {
            payload.put_u32_le(u32_len(chunk.len()));
            payload.put_slice(chunk);
            report.chunks += 1;
        }
        frame(&mut buf, KIND_RECORD, &payload);
        report.records += 1;
        report.parents += u64::from(keys::is_parent(&record.key));
        if buf.len() >= 1 << 20 {
            flush(&mut buf)?;
        }
        Ok(())
    })?;
    payload.clear();
    payload.put_u64_le(report.collections);
    payload.put_u64_le(report.records);
    payload.put_u64_le(report.chunks);
    frame(&mut buf, KIND_END, &payload);
    flush(&mut buf)?;
    storage.sync(&partial)?;
    report.bytes = written;
    storage.rename(&partial, name)?;
    storage.sync_dir()?;
    Ok(report)
}

/// The storage of the directory `path` is in (which must exist) and `path`'s file name.
fn beside(path: &Path) -> Result<(FsStorage, String)> {
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| Error::InvalidOption {
            option: "backup path",
            reason: format!("{} names no file (or not in UTF-8)", path.display()),
        })?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Error::io(
            "open",
            parent.display().to_string(),
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
        ));
    }
    Ok((FsStorage::new(parent)?, name.to_string()))
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

/// A file of a storage read from its start, as `Read`.
struct StorageReader<'a> {
    storage: &'a dyn Storage,
    name: &'a str,
    offset: u64,
    len: u64,
}

impl Read for StorageReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(index(self.len - self.offset));
        self.storage
            .read_at(self.name, self.offset, &mut buf[..n])
            .map_err(std::io::Error::other)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// Reads a backup's frames in order, each checked before it is handed out.
struct Frames<R> {
    input: R,
    file: String,
    offset: u64,
    /// The form of the collection specs, by the header's version.
    form: SpecForm,
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

    /// The frames of `input`, once its header is read and its version known.
    fn new(input: R, file: String) -> Result<Self> {
        let mut frames = Frames {
            input,
            file,
            offset: 0,
            form: SpecForm::RolledUp,
        };
        frames.header()?;
        Ok(frames)
    }

    fn header(&mut self) -> Result<()> {
        let mut header = [0u8; 12];
        self.read_exact(&mut header, "the header")?;
        if header[..8] != BACKUP_MAGIC {
            return Err(self.corrupt("not a skewdb backup (magic bytes differ)"));
        }
        let version = u32::from_le_bytes(header[8..].try_into().expect("4 bytes"));
        self.form = match version {
            BACKUP_VERSION => SpecForm::RolledUp,
            BACKUP_VERSION_UNROLLED | BACKUP_VERSION_ROWS => SpecForm::Migrating,
            BACKUP_VERSION_UNMIGRATING => SpecForm::Slotted,
            BACKUP_VERSION_UNSLOTTED => SpecForm::Mapped,
            BACKUP_VERSION_UNMAPPED => SpecForm::Formatted,
            _ => {
                return Err(Error::UnsupportedVersion {
                    file: self.file.clone(),
                    found: version,
                    supported: BACKUP_VERSION,
                });
            }
        };
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
pub(crate) fn restore(backup: &Path, dir: &Path, options: Options) -> Result<Engine> {
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
    let (source, name) = beside(backup)?;
    restore_into(
        &source,
        &name,
        Arc::new(FsStorage::new(&building)?),
        options.clone(),
    )?
    .checkpoint()?;
    std::fs::rename(&building, dir).map_err(|e| Error::io("rename", &shown, e))?;
    sync_parent(dir)?;
    Engine::open(Arc::new(FsStorage::new(dir)?), options)
}

/// Loads the backup file `name` of `source` into a new database over `target`, made durable
/// and open (with `options`' cache, buffered while it loads). A restore whose target is
/// not renamed into place after this returns, as [`restore`]'s is, is not whole.
pub(crate) fn restore_into(
    source: &dyn Storage,
    name: &str,
    target: Arc<dyn Storage>,
    options: Options,
) -> Result<Engine> {
    let len = source.len(name)?;
    let reader = StorageReader {
        storage: source,
        name,
        offset: 0,
        len,
    };
    let mut frames = Frames::new(
        BufReader::with_capacity(1 << 20, reader),
        format!("{}/{}", source.describe(), name),
    )?;
    let engine = Engine::open(target, options.durability(Durability::Buffered))?;
    load(&engine, &mut frames)?;
    engine.persist()?;
    Ok(engine)
}

/// Loads the frames into `db`: collections created (under ids of their own), records
/// written as they were with their keys moved to those ids, the end frame's counts checked
/// against what was read.
fn load<R: Read>(engine: &Engine, frames: &mut Frames<R>) -> Result<()> {
    // The backed-up database's collection ids, to this one's.
    let mut ids: HashMap<CollectionId, CollectionId> = HashMap::new();
    let (mut records, mut chunks) = (0u64, 0u64);
    let mut step: Vec<CopiedRecord> = Vec::new();
    let mut step_bytes = 0;
    loop {
        let at = frames.offset;
        let (kind, mut payload) = frames.next()?;
        let bad = |reason: String| Error::corruption(&frames.file, at, reason);
        match kind {
            KIND_COLLECTION => {
                if payload.remaining() < 4 || records > 0 {
                    return Err(bad("collection frame truncated or after records".into()));
                }
                let old = payload.get_u32_le();
                let form = frames.form.of_spec();
                let spec = CollectionSpec::decode(&mut payload, form).map_err(&bad)?;
                let name = spec.name().to_string();
                let info = match frames.form {
                    SpecForm::Slotted | SpecForm::Migrating | SpecForm::RolledUp => {
                        CollectionInfo::decode_slots(old, spec.clone(), &mut payload, frames.form)
                            .map_err(&bad)?
                    }
                    _ => CollectionInfo::new(old, spec.clone()),
                };
                engine.commit(vec![BatchOp::CreateCollection(spec)], Durability::Immediate)?;
                let new = engine.current().catalog.get(&name)?.id;
                // Its records' states carry the backed-up database's slots.
                engine.set_slots(new, &info)?;
                if ids.insert(old, new).is_some() {
                    return Err(bad(format!("collection id {old} given twice")));
                }
            }
            KIND_RECORD => {
                if payload.remaining() < 3 {
                    return Err(bad("record frame truncated".into()));
                }
                let flags = payload.get_u8();
                let key_len = payload.get_u16_le() as usize;
                if flags & !HAS_CHUNK != 0
                    || key_len > keys::MAX_TREE_KEY_BYTES
                    || payload.remaining() < key_len + 4
                {
                    return Err(bad("record frame with bad flags or key".into()));
                }
                let key = payload.split_to(key_len);
                let value_len = payload.get_u32_le() as usize;
                if payload.remaining() < value_len {
                    return Err(bad("record value past its frame".into()));
                }
                if value_len > MAX_RECORD_BYTES {
                    return Err(bad(format!(
                        "a record of {value_len} bytes, over the {MAX_RECORD_BYTES}"
                    )));
                }
                let value = payload.split_to(value_len);
                let chunk = match flags & HAS_CHUNK {
                    0 => None,
                    _ => {
                        if payload.remaining() < 4 {
                            return Err(bad("chunk length past its frame".into()));
                        }
                        let len = payload.get_u32_le() as usize;
                        if payload.remaining() != len {
                            return Err(bad("chunk length disagrees with the frame".into()));
                        }
                        chunks += 1;
                        Some(payload.split_to(len))
                    }
                };
                if payload.has_remaining() {
                    return Err(bad("bytes after a record".into()));
                }
                let moved = keys::collection_of(&key)
                    .and_then(|old| ids.get(&old))
                    .and_then(|new| keys::with_collection(&key, *new))
                    .ok_or_else(|| bad("a record of no collection in the file".into()))?;
                step_bytes += key.len() + value.len() + chunk.as_ref().map_or(0, |c| c.len());
                step.push(CopiedRecord {
                    key: moved,
                    value,
                    chunk,
                });
                records += 1;
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
                if counts != (ids.len() as u64, records, chunks) {
                    return Err(bad(format!(
                        "the end frame counts {counts:?} (collections, records, chunks), the file held ({}, {records}, {chunks})",
                        ids.len()
                    )));
                }
                if !step.is_empty() {
                    engine.load_records(&step)?;
                }
                return Ok(());
            }
            other => return Err(bad(format!("unknown frame kind {other}"))),
        }
        if step_bytes >= RESTORE_STEP_BYTES {
            engine.load_records(&std::mem::take(&mut step))?;
            step_bytes = 0;
        }
    }
}

#[cfg(feature = "testing")]
/// Loads arbitrary bytes as a backup into an in-memory database: for the decoders' fuzz
/// target, which requires an error or a database, never a panic.
pub(crate) fn fuzz_load(data: &[u8]) {
    let storage = std::sync::Arc::new(crate::storage::SimStorage::new());
    let Ok(engine) = Engine::open(storage, Options::new().background(false)) else {
        return;
    };
    if let Ok(mut frames) = Frames::new(data, "fuzz".to_string()) {
        let _ = load(&engine, &mut frames);
    }
}
