//! Entry points for the fuzz targets that need the models or a database: `db_image` (open,
//! verify and read mutated database images), `model` (operation sequences with power
//! losses and I/O errors against a model of acknowledged and durable state) and
//! `exec_line` (the CLI's `exec` input parser). The targets in `fuzz/`
//! call them; `tests/fuzz_corpus.rs` replays the checked-in corpora through them on stable.

use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use skewdb::testing::{SimStorage, Storage};
use skewdb::{CollectionSpec, Db, DocumentFormat, DocumentMap, Durability, Error, Layout};

use crate::{
    COLLECTIONS, LAYOUT_CHOICES, Model, ModelItem, Step, all_layouts_image, arrays_of, commit,
    open_db, possible_states, read_all, small_options,
};

/// Opens a copy of the all-layouts image changed by `data`, verifies it and reads it
/// whole. Every answer must be the right one or `Error::Corruption` (`UnsupportedVersion`
/// for a changed format version); a panic, another error or a wrong value is a finding.
///
/// `data` is a list of changes of 6 bytes each: kind, file, offset (u32 LE). Kind 0..=5
/// flips bits of the byte at the offset (by `kind + 1`), 6 zeroes the 512-byte sector
/// holding it, 7 cuts the file there.
pub fn db_image(data: &[u8]) {
    static IMAGE: OnceLock<(SimStorage, Model)> = OnceLock::new();
    let (image, expected) = IMAGE.get_or_init(all_layouts_image);
    let copy = image.crash_image(0);
    let mut names = copy.list().expect("list");
    names.sort();
    for change in data.chunks_exact(6) {
        let name = &names[change[1] as usize % names.len()];
        let mut bytes = copy.file_bytes(name).expect("file");
        if bytes.is_empty() {
            continue;
        }
        let at =
            u32::from_le_bytes(change[2..6].try_into().expect("4 bytes")) as usize % bytes.len();
        match change[0] % 8 {
            kind @ 0..=5 => bytes[at] ^= kind + 1,
            6 => {
                let start = at / 512 * 512;
                let end = (start + 512).min(bytes.len());
                bytes[start..end].fill(0);
            }
            _ => bytes.truncate(at),
        }
        copy.set_file_bytes(name, bytes);
    }
    let storage: Arc<dyn Storage> = Arc::new(copy);
    let db = match Db::open_with_storage(storage, small_options(Durability::Immediate)) {
        Ok(db) => db,
        Err(error) => return allowed(error),
    };
    if let Err(error) = db.verify() {
        allowed(error);
    }
    match read_all(&db) {
        Ok(state) => assert_eq!(&state, expected, "a read returned a wrong value"),
        Err(error) => allowed(error),
    }
}

fn allowed(error: Error) {
    assert!(
        error.is_corruption() || matches!(error, Error::UnsupportedVersion { .. }),
        "damage gave {error}"
    );
}

/// A size biased to the limits: empty, small, around the largest record a 4 KiB leaf holds
/// inline (993 bytes), or large.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Size {
    Empty,
    Small(u8),
    NearInline(i8),
    Large(u16),
}

impl Size {
    fn bytes(self) -> usize {
        match self {
            Size::Empty => 0,
            Size::Small(n) => n as usize,
            Size::NearInline(d) => (993 + d as i64).max(0) as usize,
            Size::Large(n) => 993 + n as usize % 20_000,
        }
    }
}

/// One operation of the model fuzzer. Writes gather in a batch until `Commit`.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Operation {
    Put {
        parent: u8,
        size: Size,
    },
    Push {
        parent: u8,
        field: u8,
        key: i16,
        value: Option<i8>,
        size: Size,
    },
    Delete {
        parent: u8,
    },
    Remove {
        parent: u8,
        field: u8,
        key: i16,
    },
    /// Drops an array field and adds it again, empty, in a batch of its own.
    ClearArray {
        parent: u8,
        field: u8,
    },
    /// Moves an array field to another layout, in a batch of its own; the move runs on as
    /// parents are written, until a compaction finishes it.
    SetLayout {
        parent: u8,
        field: u8,
        layout: u8,
    },
    Commit,
    Checkpoint,
    Compact,
    /// Close (cleanly, unless a fault stops it) and open again.
    Reopen,
    /// Power loss: the directory as a crash would leave it, opened again.
    Crash {
        seed: u8,
    },
    /// The storage operation `after` operations from now fails, once.
    FailSoon {
        after: u8,
    },
}

/// The collection and key of parent `p`: few parents, so arrays grow past their caps.
fn parent(p: u8) -> (&'static str, Vec<u8>) {
    (
        COLLECTIONS[p as usize % 2],
        format!("key{:02}", p / 2 % 6).into_bytes(),
    )
}

/// Runs `data` as a sequence of operations on a simulated directory and checks, after
/// every reopen and power loss, that the database holds one of the states the model allows:
/// every acknowledged batch (all of it or, for a batch that failed, none of it), and under
/// `Durability::Buffered` any state since the last one made durable.
pub fn model(data: &[u8]) {
    let mut input = Unstructured::new(data);
    let durability = match input.arbitrary::<bool>() {
        Ok(true) => Durability::Buffered,
        _ => Durability::Immediate,
    };
    let options = small_options(durability);
    let mut sim = SimStorage::new();
    let open = |sim: &SimStorage| -> Db {
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        open_db(storage, options.clone()).expect("a directory without faults opens")
    };
    let mut db = Some(open(&sim));
    // States the database may hold now, and those a power loss may bring back.
    let mut candidates = vec![Model::new()];
    let mut since_durable = candidates.clone();
    let mut batch: Vec<Step> = Vec::new();
    let mut operations = 0;
    while let Ok(operation) = input.arbitrary::<Operation>() {
        operations += 1;
        if operations > 200 {
            break;
        }
        let live = db.as_ref().expect("open");
        match operation {
            Operation::Put { parent: p, size } => {
                let (collection, key) = parent(p);
                batch.push(Step::Put(collection, key, vec![b'b'; size.bytes()]));
            }
            Operation::Push {
                parent: p,
                field,
                key,
                value,
                size,
            } => {
                let (collection, parent_key) = parent(p);
                let fields = arrays_of(collection);
                let field = fields[field as usize % fields.len()].0;
                let item: ModelItem =
                    (key as i64, value.map(model_value), vec![b'i'; size.bytes()]);
                batch.push(Step::Push(collection, parent_key, field, item));
            }
            Operation::Delete { parent: p } => {
                let (collection, key) = parent(p);
                batch.push(Step::Delete(collection, key));
            }
            Operation::Remove {
                parent: p,
                field,
                key,
            } => {
                let (collection, parent_key) = parent(p);
                let fields = arrays_of(collection);
                let field = fields[field as usize % fields.len()].0;
                batch.push(Step::Remove(collection, parent_key, field, key as i64));
            }
            Operation::ClearArray { .. } | Operation::SetLayout { .. } | Operation::Commit => {
                let steps = match operation {
                    Operation::ClearArray { parent: p, field } => {
                        let collection = parent(p).0;
                        let fields = arrays_of(collection);
                        let field = fields[field as usize % fields.len()].0;
                        vec![Step::ClearArray(collection, field)]
                    }
                    Operation::SetLayout {
                        parent: p,
                        field,
                        layout,
                    } => {
                        let collection = parent(p).0;
                        let fields = arrays_of(collection);
                        let field = fields[field as usize % fields.len()].0;
                        let layout = LAYOUT_CHOICES[layout as usize % LAYOUT_CHOICES.len()];
                        vec![Step::SetLayout(collection, field, layout)]
                    }
                    _ => std::mem::take(&mut batch),
                };
                let lists = (&mut candidates, &mut since_durable);
                committed(live, &steps, durability, lists);
            }
            Operation::Checkpoint | Operation::Compact => {
                let result = match operation {
                    Operation::Checkpoint => live.checkpoint(),
                    _ => live.compact().map(|_| ()),
                };
                if result.is_ok() {
                    since_durable = candidates.clone();
                }
            }
            Operation::Reopen => {
                batch.clear();
                drop(db.take());
                sim.clear_faults();
                let reopened = open(&sim);
                candidates = vec![check(&reopened, &candidates, "reopen")];
                since_durable = candidates.clone();
                db = Some(reopened);
            }
            Operation::Crash { seed } => {
                batch.clear();
                let image = sim.crash_image(seed as u64);
                drop(db.take());
                sim = image;
                let reopened = open(&sim);
                candidates = vec![check(&reopened, &since_durable, "power loss")];
                since_durable = candidates.clone();
                db = Some(reopened);
            }
            Operation::FailSoon { after } => {
                sim.fail_at(sim.operations() + 1 + after as u64, false);
            }
        }
    }
    drop(db.take());
    sim.clear_faults();
    let reopened = open(&sim);
    check(&reopened, &candidates, "final reopen");
}

/// Commits `steps` as one batch and moves the states the database may hold (and those a
/// power loss may bring back) past it.
fn committed(
    db: &Db,
    steps: &[Step],
    durability: Durability,
    (candidates, since_durable): (&mut Vec<Model>, &mut Vec<Model>),
) {
    let result = commit(db, steps);
    possible_states(candidates, steps, &result);
    if durability == Durability::Immediate && result.is_ok() {
        *since_durable = candidates.clone();
    } else {
        extend(since_durable, candidates);
    }
}

/// Adds the states of `more` that `into` lacks.
fn extend(into: &mut Vec<Model>, more: &[Model]) {
    for state in more {
        if !into.contains(state) {
            into.push(state.clone());
        }
    }
}

/// Reads the whole database (which must verify) and returns its state, which must be one
/// of `allowed`.
fn check(db: &Db, allowed: &[Model], when: &str) -> Model {
    db.verify().expect("a recovered database verifies");
    let state = read_all(db).expect("a recovered database reads");
    let normalized: Vec<Model> = allowed.iter().map(crate::normalized).collect();
    assert!(
        normalized.contains(&state),
        "after {when}: a state the model does not allow ({} allowed)",
        allowed.len()
    );
    state
}

/// An item value: small integers, and at the ends of the range the values that overflow a
/// summary's sum (the largest finite ones) or make it infinite or NaN (the infinities).
fn model_value(value: i8) -> f64 {
    match value {
        i8::MIN => f64::NEG_INFINITY,
        i8::MAX => f64::INFINITY,
        -127 => -f64::MAX,
        126 => f64::MAX,
        value => f64::from(value),
    }
}

/// Feeds one input line to the CLI's `exec` parser: any bytes, no panic; an accepted line
/// adds exactly one op to the batch (none for a commit), a refused one adds nothing.
pub fn exec_line(data: &[u8]) {
    static DB: OnceLock<Db> = OnceLock::new();
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let db = DB.get_or_init(|| {
        let db = Db::open_with_storage(Arc::new(SimStorage::new()), skewdb::Options::new())
            .expect("a database in memory opens");
        // A collection as `skewdb import` makes one, so that lines naming it go through its
        // document map (corpus file `mapped`).
        let map = DocumentMap::new("_id").array("readings", Some("t"), true);
        let spec = CollectionSpec::new("sensors")
            .stored_as(DocumentFormat::Bson)
            .array_with_measures(
                "readings",
                Layout::Bucket {
                    max_items: 4,
                    span: None,
                },
                ["temp"],
            )
            .mapped(map);
        db.create_collection(spec)
            .expect("a mapped collection is made");
        db
    });
    let mut batch = db.batch();
    match skewdb_cli::exec::parse_input_line(line, db, &mut batch) {
        Ok(true) => assert_eq!(batch.len(), 0, "a commit line added an op"),
        Ok(false) => assert_eq!(batch.len(), 1, "an accepted line added no op"),
        Err(_) => assert_eq!(batch.len(), 0, "a refused line added an op"),
    }
}
