//! Shared helpers for the integration tests: a plain model of committed state and a
//! deterministic workload that the crash and fault tests replay.

pub mod fuzz;

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skewdb::testing::{SimStorage, Storage};
use skewdb::{
    CollectionSpec, Db, Durability, Error, Item, ItemQuery, Layout, NewItem, Options, Result,
    Summary,
};

/// An item as the models keep it: key, value, payload.
pub type ModelItem = (i64, Option<f64>, Vec<u8>);

/// A parent document as the models keep it: body, and per array field its items in key
/// order (ties in push order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelDoc {
    pub body: Vec<u8>,
    pub arrays: BTreeMap<String, Vec<ModelItem>>,
}

/// Parents as (key, body), in key order.
pub type Bodies = Vec<(Vec<u8>, Vec<u8>)>;

/// Committed state as plain maps: collection name, then key to document.
pub type Model = BTreeMap<String, BTreeMap<Vec<u8>, ModelDoc>>;

/// One step of a batch of the workload.
#[derive(Clone, Debug)]
pub enum Step {
    Put(&'static str, Vec<u8>, Vec<u8>),
    Delete(&'static str, Vec<u8>),
    Push(&'static str, Vec<u8>, &'static str, ModelItem),
    /// Removes every item with this key from the array.
    Remove(&'static str, Vec<u8>, &'static str, i64),
    /// Drops the array field and adds it again, as it was and empty (a schema change, which
    /// must come before the batch's writes to the collection).
    ClearArray(&'static str, &'static str),
    /// Moves the array field to another layout (a schema change, as above); what reads
    /// answer does not change.
    SetLayout(&'static str, &'static str, Layout),
}

pub const COLLECTIONS: [&str; 2] = ["users", "products"];

/// The layouts the model tests move an array field among: every kind, with small caps and
/// two settings of each but Embed and Reference.
pub const LAYOUT_CHOICES: [Layout; 8] = [
    Layout::Embed,
    Layout::Reference,
    Layout::Subset { keep: 3 },
    Layout::Subset { keep: 1 },
    Layout::Outlier { inline_cap: 4 },
    Layout::Outlier { inline_cap: 2 },
    Layout::Bucket {
        max_items: 5,
        span: Some(20),
    },
    Layout::Bucket {
        max_items: 3,
        span: Some(10),
    },
];

/// The array fields of each collection: every layout, with small caps so that a short
/// workload moves items cold, fills tails and seals buckets.
pub fn arrays_of(collection: &str) -> Vec<(&'static str, Layout)> {
    match collection {
        "users" => vec![
            ("followers", Layout::Outlier { inline_cap: 3 }),
            ("log", Layout::Reference),
        ],
        _ => vec![
            ("reviews", Layout::Subset { keep: 2 }),
            (
                "readings",
                Layout::Bucket {
                    max_items: 4,
                    span: Some(100),
                },
            ),
            ("tags", Layout::Embed),
        ],
    }
}

/// The collection whose arrays have a second measure, `mirror`: every item with a value
/// gets its negation as its mirror value, so that the models (one value per item) check the
/// second measure of every item and summary read back (see [`check_mirror`]).
pub const MIRRORED: &str = "products";

fn spec(collection: &str) -> CollectionSpec {
    arrays_of(collection).into_iter().fold(
        CollectionSpec::new(collection),
        |spec, (field, layout)| {
            if collection == MIRRORED {
                spec.array_with_measures(field, layout, ["value", "mirror"])
            } else {
                spec.array(field, layout)
            }
        },
    )
}

/// Checks that every item of `document`'s arrays and their summaries carry the mirror
/// measure as [`MIRRORED`]'s pushes set it: the negation of the first measure.
fn check_mirror(items: &[Item], summary: &Summary) {
    for item in items {
        assert_eq!(
            item.measure(1),
            item.value.map(|v| -v),
            "an item's second measure"
        );
    }
    let (first, mirror) = (summary.measure(0), summary.measure(1));
    let neg = |v: Option<f64>| v.map(|v| -v);
    assert_eq!(mirror.count, first.count, "the second measure's count");
    assert_eq!((mirror.min, mirror.max), (neg(first.max), neg(first.min)));
    assert!(
        mirror.sum == -first.sum || (mirror.sum.is_nan() && first.sum.is_nan()),
        "the second measure's sum {} against {}",
        mirror.sum,
        first.sum
    );
}

/// Small pages and segments so that a short workload splits pages, rolls segments and
/// checkpoints several times.
pub fn small_options(durability: Durability) -> Options {
    Options::new()
        .page_bytes(4096)
        .segment_bytes(64 * 1024)
        .checkpoint_bytes(64 * 1024)
        .cache_bytes(256 * 1024)
        .durability(durability)
        // Checkpoints on the committing thread: the crash and I/O-error tests count and
        // replay storage operations, which must come in the same order on every run.
        .background(false)
}

/// The options the format fixtures (`tests/data/`, `tests/fixtures/`) are written and read
/// with: small pages and segments, no automatic checkpoint, every write durable, no
/// maintenance thread.
pub fn fixture_options() -> Options {
    Options::new()
        .page_bytes(4096)
        .segment_bytes(64 * 1024)
        .checkpoint_bytes(1 << 30)
        .durability(Durability::Immediate)
        .background(false)
}

/// A deterministic workload of `batches` batches of 1 to 8 steps each. Bodies vary from
/// empty to past the inline limit so that some records are stored large; removals take keys
/// pushed earlier, so that they find items inline, in tails and in chunks.
pub fn workload(seed: u64, batches: usize) -> Vec<Vec<Step>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pushed: Vec<(&'static str, Vec<u8>, &'static str, i64)> = Vec::new();
    (0..batches)
        .map(|_| {
            (0..rng.random_range(1..=8))
                .map(|_| {
                    let collection = COLLECTIONS[rng.random_range(0..COLLECTIONS.len())];
                    let key = format!("key{:04}", rng.random_range(0..300)).into_bytes();
                    let choice = rng.random_range(0..11);
                    if choice == 5 && !pushed.is_empty() {
                        let (collection, key, field, item_key) =
                            pushed[rng.random_range(0..pushed.len())].clone();
                        Step::Remove(collection, key, field, item_key)
                    } else if choice < 4 {
                        // Pushes go to a few parents, so that their arrays grow past the caps.
                        let key = format!("key{:04}", rng.random_range(0..6)).into_bytes();
                        let fields = arrays_of(collection);
                        let field = fields[rng.random_range(0..fields.len())].0;
                        let payload = vec![rng.random::<u8>(); rng.random_range(0..60)];
                        let value = rng
                            .random_bool(0.7)
                            .then(|| rng.random_range(-100..100) as f64);
                        let item_key = rng.random_range(-200..2000);
                        pushed.push((collection, key.clone(), field, item_key));
                        Step::Push(collection, key, field, (item_key, value, payload))
                    } else if choice == 4 {
                        Step::Delete(collection, key)
                    } else {
                        let len = match rng.random_range(0..20) {
                            0 => rng.random_range(1500..6000),
                            1 => 0,
                            _ => rng.random_range(1..200),
                        };
                        let fill = rng.random::<u8>();
                        Step::Put(collection, key, vec![fill; len])
                    }
                })
                .collect()
        })
        .collect()
}

/// A workload for cold compaction: long `Reference` histories on a few parents (many small
/// chunks), then deletions of some parents and removals from others, so that cold segments
/// go sparse and runs of small chunks wait to be merged; more pushes follow.
pub fn compaction_workload() -> Vec<Vec<Step>> {
    let mut rng = StdRng::seed_from_u64(11);
    let parent = |p: usize| format!("key{p:04}").into_bytes();
    let mut batches = Vec::new();
    let mut next_key = 0i64;
    // Parent 4's history is short (a chunk or two, too little to merge), so compaction
    // moves its chunks rather than merging them.
    let mut pushes = |rng: &mut StdRng, batches: &mut Vec<Vec<Step>>, count: usize| {
        for b in 0..count {
            let batch = (0..8)
                .map(|_| {
                    next_key += 1;
                    let payload = vec![rng.random::<u8>(); rng.random_range(60..120)];
                    let p = rng.random_range(0..if b < 10 { 5 } else { 4 });
                    Step::Push("users", parent(p), "log", (next_key, Some(1.0), payload))
                })
                .collect();
            batches.push(batch);
        }
    };
    pushes(&mut rng, &mut batches, 100);
    batches.push(vec![Step::Delete("users", parent(0))]);
    batches.push(vec![
        Step::Delete("users", parent(1)),
        Step::Delete("users", parent(3)),
    ]);
    batches.push(
        (1..40)
            .map(|k| Step::Remove("users", parent(2), "log", k * 3))
            .collect(),
    );
    pushes(&mut rng, &mut batches, 30);
    batches
}

/// Opens (or creates) a database with the workload's collections (those it has already
/// are left as they are: their layouts may have changed).
pub fn open_db(storage: Arc<dyn Storage>, options: Options) -> Result<Db> {
    let db = Db::open_with_storage(storage, options)?;
    for name in COLLECTIONS {
        if db.collection(name).is_err() {
            db.create_collection(spec(name))?;
        }
    }
    Ok(db)
}

/// Commits one batch of steps.
pub fn commit(db: &Db, steps: &[Step]) -> Result<()> {
    let mut batch = db.batch();
    for step in steps {
        match step {
            Step::Put(collection, key, body) => batch.put(collection, key, body),
            Step::Delete(collection, key) => batch.delete(collection, key),
            Step::Push(collection, key, field, (item_key, value, payload)) => {
                let mut item = NewItem::new(payload).key(*item_key);
                if let Some(value) = value {
                    item = item.value(*value);
                    if *collection == MIRRORED {
                        item = item.measure("mirror", -value);
                    }
                }
                batch.push(collection, key, field, item)
            }
            Step::Remove(collection, key, field, item_key) => {
                batch.remove(collection, key, field, *item_key)
            }
            Step::ClearArray(collection, field) => {
                let layout = arrays_of(collection)
                    .into_iter()
                    .find(|(f, _)| f == field)
                    .expect("one of the workload's arrays")
                    .1;
                let measures: &[&str] = match *collection == MIRRORED {
                    true => &["value", "mirror"],
                    false => &["value"],
                };
                let alteration = skewdb::Alteration::new()
                    .drop_array(*field)
                    .add_array_with_measures(*field, layout, measures.iter().copied());
                batch.alter_collection(collection, alteration)
            }
            Step::SetLayout(collection, field, layout) => batch.alter_collection(
                collection,
                skewdb::Alteration::new().set_layout(*field, *layout),
            ),
        };
    }
    batch.commit()
}

/// Commits every batch of `batches`, with a compaction after every 20th and a checkpoint
/// after every other 10th, so that crash images and readers meet both.
pub fn commit_maintained(db: &Db, batches: &[Vec<Step>]) -> Result<()> {
    for (index, batch) in batches.iter().enumerate() {
        commit(db, batch)?;
        if index % 20 == 19 {
            db.compact()?;
        } else if index % 10 == 9 {
            db.checkpoint()?;
        }
    }
    Ok(())
}

/// Applies one batch of steps to the model.
pub fn apply(model: &mut Model, steps: &[Step]) {
    for step in steps {
        match step {
            Step::Put(collection, key, body) => {
                model
                    .entry(collection.to_string())
                    .or_default()
                    .entry(key.clone())
                    .or_default()
                    .body = body.clone();
            }
            Step::Delete(collection, key) => {
                model.entry(collection.to_string()).or_default().remove(key);
            }
            Step::Push(collection, key, field, item) => {
                let items = model
                    .entry(collection.to_string())
                    .or_default()
                    .entry(key.clone())
                    .or_default()
                    .arrays
                    .entry(field.to_string())
                    .or_default();
                // Key order, ties in push order: after every item with a key not above it.
                let at = items.partition_point(|i| i.0 <= item.0);
                items.insert(at, item.clone());
            }
            Step::SetLayout(..) => {}
            Step::ClearArray(collection, field) => {
                for doc in model
                    .entry(collection.to_string())
                    .or_default()
                    .values_mut()
                {
                    doc.arrays.remove(*field);
                }
            }
            Step::Remove(collection, key, field, item_key) => {
                let doc = model
                    .get_mut(*collection)
                    .and_then(|parents| parents.get_mut(key));
                if let Some(doc) = doc
                    && let Some(items) = doc.arrays.get_mut(*field)
                {
                    items.retain(|i| i.0 != *item_key);
                    // Reads list only arrays that hold items.
                    if items.is_empty() {
                        doc.arrays.remove(*field);
                    }
                }
            }
        }
    }
}

/// The whole database as a model, read by scans, with every `get` checked against it.
pub fn read_all(db: &Db) -> Result<Model> {
    let mut model = Model::new();
    for name in db.collection_names() {
        let collection = db.collection(&name)?;
        let mut entries = BTreeMap::new();
        for document in collection.scan(..)? {
            let document = document?;
            let mut doc = ModelDoc {
                body: document.body().to_vec(),
                arrays: BTreeMap::new(),
            };
            for array in document.arrays() {
                if array.total == 0 {
                    continue;
                }
                let page = collection
                    .items(document.key(), &array.field, &ItemQuery::new())?
                    .expect("parent exists");
                if name == MIRRORED {
                    check_mirror(&page.items, &array.summary);
                    check_mirror(&array.inline, &array.summary);
                }
                let items: Vec<ModelItem> = page
                    .items
                    .into_iter()
                    .map(|i| (i.key, i.value, i.payload.to_vec()))
                    .collect();
                assert_eq!(
                    items.len() as u64,
                    array.total,
                    "items disagree with the total"
                );
                doc.arrays.insert(array.field.clone(), items);
            }
            entries.insert(document.key().to_vec(), doc);
        }
        for (key, doc) in &entries {
            let got = collection.get(key)?.map(|d| d.body().to_vec());
            assert_eq!(got.as_ref(), Some(&doc.body), "get disagrees with scan");
        }
        if !entries.is_empty() {
            model.insert(name, entries);
        }
    }
    Ok(model)
}

/// What each parent shows without reading its cold items, every collection but `skip`:
/// per array, the inline items, the total, the overflow flag and the summary. Layouts place
/// items by push order and by what was removed (an Outlier whose inline item was removed
/// keeps that slot empty), so two databases that agree on `read_all` may differ here.
pub fn inline_views(db: &Db, skip: &str) -> Vec<String> {
    let mut views = Vec::new();
    for name in db.collection_names() {
        if name == skip {
            continue;
        }
        let collection = db.collection(&name).expect("listed");
        for document in collection.scan(..).expect("scan") {
            let document = document.expect("scan");
            for array in document.arrays() {
                views.push(format!(
                    "{name} {:?} {}: {:?} total {} overflow {} {:?}",
                    document.key(),
                    array.field,
                    array.inline,
                    array.total,
                    array.has_overflow,
                    array.summary
                ));
            }
        }
    }
    views
}

/// The model without empty collections or arrays, as `read_all` reports it.
pub fn normalized(model: &Model) -> Model {
    model
        .iter()
        .filter(|(_, entries)| !entries.is_empty())
        .map(|(name, entries)| {
            let entries = entries
                .iter()
                .map(|(key, doc)| {
                    let mut doc = doc.clone();
                    doc.arrays.retain(|_, items| !items.is_empty());
                    (key.clone(), doc)
                })
                .collect();
            (name.clone(), entries)
        })
        .collect()
}

/// The states after each prefix of the workload: `states[i]` is the model after `i` batches.
pub fn prefix_states(batches: &[Vec<Step>]) -> Vec<Model> {
    let mut model = Model::new();
    let mut states = vec![normalized(&model)];
    for steps in batches {
        apply(&mut model, steps);
        states.push(normalized(&model));
    }
    states
}

/// The states a database may hold after a run with failures: every acknowledged batch, and
/// any failed batch that reached the log before its error.
pub fn possible_states(candidates: &mut Vec<Model>, batch: &[Step], result: &Result<()>) {
    match result {
        Ok(()) => candidates.iter_mut().for_each(|m| apply(m, batch)),
        // Refused before anything was written: a poisoned writer, or a batch over a limit.
        Err(
            Error::WriteFailed { .. }
            | Error::UnknownCollection { .. }
            | Error::UnknownField { .. }
            | Error::RecordTooLarge { .. }
            | Error::KeyTooLarge { .. }
            | Error::BatchTooLarge { .. }
            | Error::InvalidItem { .. }
            | Error::WrongLayout { .. },
        ) => {}
        // A read failed: a commit reads what it changes while it stages its batches, before
        // it writes anything, and nothing it reads after its writes can fail it. So the
        // batch did not apply; a state that holds it fails the check.
        Err(Error::Io { op: "read", .. }) => {}
        Err(_) => {
            let with: Vec<Model> = candidates
                .iter()
                .map(|m| {
                    let mut m = m.clone();
                    apply(&mut m, batch);
                    m
                })
                .collect();
            for model in with {
                if !candidates.contains(&model) {
                    candidates.push(model);
                }
            }
        }
    }
}

/// A small database holding every layout (chunks, sealed buckets, large records, a
/// checkpoint and redo after it), closed cleanly, and what it holds.
pub fn all_layouts_image() -> (SimStorage, Model) {
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let db = open_db(storage, small_options(Durability::Immediate)).expect("open");
    let mut model = Model::new();
    for (index, batch) in workload(17, 45).iter().enumerate() {
        commit(&db, batch).expect("commit");
        apply(&mut model, batch);
        if index == 20 {
            db.checkpoint().expect("checkpoint");
        }
    }
    drop(db);
    (sim.crash_image(0), normalized(&model))
}

/// Reads every parent, array and scan of the model from a (possibly damaged) database:
/// each must agree with the model or be `Corruption`; panics otherwise. Returns the reads
/// that agreed and those that reported corruption.
pub fn check_reads(db: &Db, model: &Model) -> (u64, u64) {
    let (mut good, mut corrupt) = (0, 0);
    let mut tally = |result: Result<bool, Error>| match result {
        Ok(true) => good += 1,
        Ok(false) => panic!("a read returned a wrong value"),
        Err(error) if error.is_corruption() => corrupt += 1,
        Err(error) => panic!("unexpected error {error}"),
    };
    for (name, entries) in model {
        let collection = db.collection(name).unwrap();
        for (key, doc) in entries {
            tally(
                collection
                    .get(key)
                    .map(|d| d.is_some_and(|d| d.body() == doc.body.as_slice())),
            );
            for (field, _) in arrays_of(name) {
                let expected = doc.arrays.get(field).cloned().unwrap_or_default();
                tally(collection.items(key, field, &ItemQuery::new()).map(|page| {
                    page.is_some_and(|page| {
                        page.items
                            .into_iter()
                            .map(|i| (i.key, i.value, i.payload.to_vec()))
                            .collect::<Vec<_>>()
                            == expected
                    })
                }));
            }
        }
        let scanned: Result<Bodies, Error> = collection.scan(..).and_then(|scan| {
            scan.map(|d| d.map(|d| (d.key().to_vec(), d.body().to_vec())))
                .collect()
        });
        tally(scanned.map(|s| {
            s == entries
                .iter()
                .map(|(k, v)| (k.clone(), v.body.clone()))
                .collect::<Vec<_>>()
        }));
    }
    (good, corrupt)
}

/// A new simulated directory behind the trait object the engine takes.
pub fn sim() -> (SimStorage, Arc<dyn Storage>) {
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    (sim, storage)
}

/// What the format fixtures (`tests/fixtures/`) check a database against: every
/// collection's schema, parents, arrays (totals, overflow, every measure's summary whole and
/// over keys 100..=400) and items (key, every measure's value, payload), one line each, with
/// doubles as their bits.
pub fn dump(db: &Db) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let bits = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:x}", v.to_bits()));
    for name in db.collection_names() {
        let collection = db.collection(&name).unwrap();
        writeln!(out, "collection {name}: {}", collection.spec().describe()).unwrap();
        for document in collection.scan(..).unwrap() {
            let document = document.unwrap();
            let key = String::from_utf8_lossy(document.key()).into_owned();
            writeln!(
                out,
                "  {key}: {:?}",
                String::from_utf8_lossy(document.body())
            )
            .unwrap();
            for array in document.arrays() {
                let field = &array.field;
                let measures = collection.array(field).unwrap().measures().len();
                writeln!(
                    out,
                    "    {field} total {} overflow {} inline {}",
                    array.total,
                    array.has_overflow,
                    array.inline.len()
                )
                .unwrap();
                for (what, summary) in [
                    ("all", collection.summary(&key, field, ..)),
                    ("100..=400", collection.summary(&key, field, 100..=400)),
                ] {
                    // A range that cuts a window of rolled-up items has no exact answer.
                    let summary = match summary {
                        Err(error) if error.kind() == "range_cuts_rollup" => {
                            writeln!(out, "    {what}: {}", error.kind()).unwrap();
                            continue;
                        }
                        summary => summary.unwrap().unwrap(),
                    };
                    write!(
                        out,
                        "    {what}: {} items, keys {:?}..{:?}",
                        summary.items, summary.min_key, summary.max_key
                    )
                    .unwrap();
                    for index in 0..measures {
                        let m = summary.measure(index);
                        let sum = format!("{:x}", m.sum.to_bits());
                        write!(out, "; {} {sum} {} {}", m.count, bits(m.min), bits(m.max)).unwrap();
                    }
                    writeln!(out).unwrap();
                }
                let page = collection.items(&key, field, &ItemQuery::new()).unwrap();
                for item in page.unwrap().items {
                    let values: Vec<String> =
                        (0..measures).map(|i| bits(item.measure(i))).collect();
                    writeln!(
                        out,
                        "      {} [{}] {:?}",
                        item.key,
                        values.join(" "),
                        String::from_utf8_lossy(&item.payload)
                    )
                    .unwrap();
                }
            }
        }
    }
    out
}

/// Copies the files of directory `from` into `to` (a fixture into a scratch directory).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// A simulated directory that calls a hook with a file's name before each sync of it: to
/// count syncs, or to hold a thread at one.
pub struct SyncHook {
    inner: SimStorage,
    on_sync: Box<dyn Fn(&str) + Send + Sync>,
}

impl SyncHook {
    pub fn new(inner: SimStorage, on_sync: impl Fn(&str) + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(SyncHook {
            inner,
            on_sync: Box::new(on_sync),
        })
    }
}

impl Storage for SyncHook {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn lock(&self) -> skewdb::Result<Box<dyn skewdb::testing::LockGuard>> {
        self.inner.lock()
    }
    fn list(&self) -> skewdb::Result<Vec<String>> {
        self.inner.list()
    }
    fn create(&self, name: &str) -> skewdb::Result<()> {
        self.inner.create(name)
    }
    fn len(&self, name: &str) -> skewdb::Result<u64> {
        self.inner.len(name)
    }
    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> skewdb::Result<()> {
        self.inner.read_at(name, offset, buf)
    }
    fn write_at(&self, name: &str, offset: u64, data: &[u8]) -> skewdb::Result<()> {
        self.inner.write_at(name, offset, data)
    }
    fn set_len(&self, name: &str, len: u64) -> skewdb::Result<()> {
        self.inner.set_len(name, len)
    }
    fn sync(&self, name: &str) -> skewdb::Result<()> {
        (self.on_sync)(name);
        self.inner.sync(name)
    }
    fn sync_dir(&self) -> skewdb::Result<()> {
        self.inner.sync_dir()
    }
    fn rename(&self, from: &str, to: &str) -> skewdb::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, name: &str) -> skewdb::Result<()> {
        self.inner.remove(name)
    }
}

/// `VmHWM` (peak resident memory) and `VmRSS` of this process, in bytes (Linux).
pub fn process_memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .unwrap_or_else(|| panic!("{name} in /proc/self/status"))
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Starts a new peak of this process's resident memory: the kernel sets `VmHWM` back to the
/// present resident memory (Linux).
pub fn reset_memory_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak of /proc/self");
}
