//! Shared helpers for the integration tests: a plain model of committed state and a
//! deterministic workload that the crash and fault tests replay.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skewdb::storage::{SimStorage, Storage};
use skewdb::{CollectionSpec, Db, Durability, Options, Result};

/// Committed state as plain maps: collection name, then key to body.
pub type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// One batch of the workload.
#[derive(Clone, Debug)]
pub enum Step {
    Put(&'static str, Vec<u8>, Vec<u8>),
    Delete(&'static str, Vec<u8>),
}

pub const COLLECTIONS: [&str; 2] = ["users", "products"];

/// Small pages and segments so that a short workload splits pages, rolls segments and
/// checkpoints several times.
pub fn small_options(durability: Durability) -> Options {
    Options::new()
        .page_bytes(4096)
        .segment_bytes(64 * 1024)
        .checkpoint_bytes(64 * 1024)
        .cache_bytes(256 * 1024)
        .durability(durability)
}

/// A deterministic workload of `batches` batches of 1 to 8 steps each. Bodies vary from
/// empty to past the inline limit so that some records are stored large.
pub fn workload(seed: u64, batches: usize) -> Vec<Vec<Step>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..batches)
        .map(|_| {
            (0..rng.random_range(1..=8))
                .map(|_| {
                    let collection = COLLECTIONS[rng.random_range(0..COLLECTIONS.len())];
                    let key = format!("key{:04}", rng.random_range(0..300)).into_bytes();
                    if rng.random_bool(0.2) {
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

/// Opens (or creates) a database with the workload's collections.
pub fn open_db(storage: Arc<dyn Storage>, options: Options) -> Result<Db> {
    let db = Db::open_with_storage(storage, options)?;
    for name in COLLECTIONS {
        db.create_collection(CollectionSpec::new(name))?;
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
        };
    }
    batch.commit()
}

/// Applies one batch of steps to the model.
pub fn apply(model: &mut Model, steps: &[Step]) {
    for step in steps {
        match step {
            Step::Put(collection, key, body) => {
                model
                    .entry(collection.to_string())
                    .or_default()
                    .insert(key.clone(), body.clone());
            }
            Step::Delete(collection, key) => {
                model.entry(collection.to_string()).or_default().remove(key);
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
        for document in collection.scan::<&[u8]>(..)? {
            let document = document?;
            entries.insert(document.key().to_vec(), document.body().to_vec());
        }
        for (key, body) in &entries {
            let got = collection.get(key)?.map(|d| d.body().to_vec());
            assert_eq!(got.as_ref(), Some(body), "get disagrees with scan");
        }
        if !entries.is_empty() {
            model.insert(name, entries);
        }
    }
    Ok(model)
}

/// The model without empty collections, as `read_all` reports it.
pub fn normalized(model: &Model) -> Model {
    model
        .iter()
        .filter(|(_, entries)| !entries.is_empty())
        .map(|(name, entries)| (name.clone(), entries.clone()))
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

/// A new simulated directory behind the trait object the engine takes.
pub fn sim() -> (SimStorage, Arc<dyn Storage>) {
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    (sim, storage)
}
