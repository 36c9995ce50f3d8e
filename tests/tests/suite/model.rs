//! Model test: random puts, deletes, checkpoints and reopens against a `BTreeMap`, with
//! every read compared.

use std::sync::Arc;

use proptest::prelude::*;
use skewdb::testing::{SimStorage, Storage};
use skewdb::{Db, Durability};
use skewdb_tests::{Model, Step, apply, normalized, open_db, read_all, small_options};

#[derive(Clone, Debug)]
enum Action {
    Batch(Vec<Step>),
    Checkpoint,
    Reopen,
    Get(&'static str, Vec<u8>),
    Scan(&'static str, Vec<u8>, Vec<u8>),
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    (0u32..400).prop_map(|k| format!("k{k:05}").into_bytes())
}

fn collection() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("users"), Just("products")]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (collection(), key(), prop_oneof![
            6 => proptest::collection::vec(any::<u8>(), 0..120),
            1 => proptest::collection::vec(any::<u8>(), 1000..5000),
        ]).prop_map(|(c, k, b)| Step::Put(c, k, b)),
        1 => (collection(), key()).prop_map(|(c, k)| Step::Delete(c, k)),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        12 => proptest::collection::vec(step(), 1..40).prop_map(Action::Batch),
        1 => Just(Action::Checkpoint),
        1 => Just(Action::Reopen),
        2 => (collection(), key()).prop_map(|(c, k)| Action::Get(c, k)),
        2 => (collection(), key(), key()).prop_map(|(c, a, b)| Action::Scan(c, a, b)),
    ]
}

fn run(actions: Vec<Action>) -> Result<(), TestCaseError> {
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let options = small_options(Durability::Buffered);
    let mut db: Db = open_db(storage.clone(), options.clone()).unwrap();
    let mut model = Model::new();
    for action in actions {
        match action {
            Action::Batch(steps) => {
                skewdb_tests::commit(&db, &steps).unwrap();
                apply(&mut model, &steps);
            }
            Action::Checkpoint => db.checkpoint().unwrap(),
            Action::Reopen => {
                drop(db);
                db = open_db(storage.clone(), options.clone()).unwrap();
            }
            Action::Get(collection, key) => {
                let got = db.collection(collection).unwrap().get(&key).unwrap();
                let expected = model
                    .get(collection)
                    .and_then(|m| m.get(&key))
                    .map(|d| &d.body);
                let got = got.map(|d| d.body().to_vec());
                prop_assert_eq!(got.as_ref(), expected);
            }
            Action::Scan(collection, low, high) => {
                let got: Vec<(Vec<u8>, Vec<u8>)> = db
                    .collection(collection)
                    .unwrap()
                    .scan(low.as_slice()..high.as_slice())
                    .unwrap()
                    .map(|d| d.map(|d| (d.key().to_vec(), d.body().to_vec())))
                    .collect::<Result<_, _>>()
                    .unwrap();
                let expected: Vec<(Vec<u8>, Vec<u8>)> = if low <= high {
                    model
                        .get(collection)
                        .map(|m| {
                            m.range(low..high)
                                .map(|(k, v)| (k.clone(), v.body.clone()))
                                .collect()
                        })
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                prop_assert_eq!(got, expected);
            }
        }
    }
    prop_assert_eq!(read_all(&db).unwrap(), normalized(&model));
    db.verify().unwrap();
    drop(db);
    let db = open_db(storage, options).unwrap();
    prop_assert_eq!(read_all(&db).unwrap(), normalized(&model));
    db.verify().unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn matches_model(actions in proptest::collection::vec(action(), 1..60)) {
        run(actions)?;
    }
}
