//! Schema changes: dropping and renaming collections, adding and dropping array fields,
//! adding measures. Each is checked against a model of what every reader should see, across
//! reopens, compaction, backups and power losses at every sync.

use std::sync::Arc;
use std::time::{Duration, Instant};

use skewdb::testing::{SimStorage, Storage};
use skewdb::{
    Alteration, CollectionSpec, Db, Durability, Error, ItemQuery, Layout, NewItem, Options,
};
use skewdb_tests::{
    MIRRORED, Model, ModelDoc, commit_maintained, open_db, read_all, sim, small_options, workload,
};

/// One schema change of the scenario, with what it does to the model.
struct Change {
    what: &'static str,
    apply: fn(&Db) -> skewdb::Result<()>,
    model: fn(&mut Model),
}

fn docs<'a>(model: &'a mut Model, collection: &str) -> impl Iterator<Item = &'a mut ModelDoc> {
    model
        .entry(collection.to_string())
        .or_default()
        .values_mut()
}

/// The changes, in order: every kind, on both collections of the workload (`users`:
/// followers Outlier, log Reference; `products`: reviews Subset, readings Bucket, tags
/// Embed), with writes between them under each new schema.
fn changes() -> Vec<Change> {
    vec![
        Change {
            what: "drop products.readings (a Bucket array with sealed buckets)",
            apply: |db| {
                db.alter_collection("products", Alteration::new().drop_array("readings"))
                    .map(drop)
            },
            model: |model| {
                for doc in docs(model, "products") {
                    doc.arrays.remove("readings");
                }
            },
        },
        Change {
            what: "add users.badges (Outlier), then push to it",
            apply: |db| {
                let badges = Layout::Outlier { inline_cap: 1 };
                db.alter_collection("users", Alteration::new().add_array("badges", badges))?;
                let mut batch = db.batch();
                for at in 0..3 {
                    batch.push("users", "u-badge", "badges", NewItem::new("b").key(at));
                }
                batch.commit()
            },
            model: |model| {
                let doc = model
                    .entry("users".to_string())
                    .or_default()
                    .entry(b"u-badge".to_vec())
                    .or_default();
                let items = (0..3).map(|at| (at, None, b"b".to_vec())).collect();
                doc.arrays.insert("badges".to_string(), items);
            },
        },
        Change {
            what: "drop users.followers (an Outlier array, overflowed) and add it again empty",
            apply: |db| {
                let alteration = Alteration::new()
                    .drop_array("followers")
                    .add_array("followers", Layout::Embed);
                db.alter_collection("users", alteration).map(drop)
            },
            model: |model| {
                for doc in docs(model, "users") {
                    doc.arrays.remove("followers");
                }
            },
        },
        Change {
            what: "add a measure to products.reviews",
            apply: |db| {
                db.alter_collection(
                    "products",
                    Alteration::new().add_measure("reviews", "stars"),
                )
                .map(drop)
            },
            model: |_| {},
        },
        Change {
            what: "rename users to people",
            apply: |db| db.rename_collection("users", "people").map(drop),
            model: |model| {
                if let Some(users) = model.remove("users") {
                    model.insert("people".to_string(), users);
                }
            },
        },
        Change {
            what: "drop products",
            apply: |db| db.drop_collection("products"),
            model: |model| {
                model.remove("products");
            },
        },
        Change {
            what: "create products again, empty, and write to it",
            apply: |db| {
                let spec = CollectionSpec::new("products").array("tags", Layout::Embed);
                db.create_collection(spec)?;
                let mut batch = db.batch();
                batch.put("products", "fresh", "new");
                batch.commit()
            },
            model: |model| {
                let doc = ModelDoc {
                    body: b"new".to_vec(),
                    ..ModelDoc::default()
                };
                model.insert(
                    "products".to_string(),
                    [(b"fresh".to_vec(), doc)].into_iter().collect(),
                );
            },
        },
    ]
}

/// The model without empty collections and arrays, as `read_all` reports it.
fn normal(model: &Model) -> Model {
    skewdb_tests::normalized(model)
}

/// The database in `storage` opened again: from an image of what is synced, when the
/// process that wrote it still has it open.
fn reopen(storage: &SimStorage, options: Options) -> Db {
    let storage: Arc<dyn Storage> = Arc::new(storage.crash_image(0));
    Db::open_with_storage(storage, options).expect("reopens")
}

#[test]
fn each_schema_change_reads_as_the_model_says_through_reopens_and_compaction() {
    let options = small_options(Durability::Immediate);
    let (sim, storage) = sim();
    let db = open_db(storage, options.clone()).unwrap();
    commit_maintained(&db, &workload(11, 120)).unwrap();
    let mut model = read_all(&db).unwrap();
    assert!(
        model["products"]
            .values()
            .any(|d| d.arrays.contains_key("readings"))
    );
    for change in changes() {
        (change.apply)(&db).unwrap_or_else(|e| panic!("{}: {e}", change.what));
        (change.model)(&mut model);
        let model = normal(&model);
        assert_eq!(read_all(&db).unwrap(), model, "after {}", change.what);
        db.verify()
            .unwrap_or_else(|e| panic!("verify after {}: {e}", change.what));
        drop(db.checkpoint());
        let reopened = reopen(&sim, options.clone());
        assert_eq!(
            read_all(&reopened).unwrap(),
            model,
            "reopened after {}",
            change.what
        );
        drop(reopened);
    }
    let model = normal(&model);
    let retired = db.stats().unwrap().retired;
    // products.readings went with products: one entry for the collection, one for
    // followers.
    assert_eq!(retired, 2, "the drops retired records");
    let cold_before = db.space().unwrap().cold.live_bytes;
    db.compact().unwrap();
    assert_eq!(
        db.stats().unwrap().retired,
        0,
        "compaction reclaims what drops retired"
    );
    let cold_after = db.space().unwrap().cold.live_bytes;
    assert!(
        cold_after < cold_before,
        "cold live bytes {cold_before} -> {cold_after}"
    );
    assert_eq!(read_all(&db).unwrap(), model);
    db.verify().unwrap();
    drop(db);
    let reopened = reopen(&sim, options);
    assert_eq!(reopened.stats().unwrap().retired, 0);
    assert_eq!(read_all(&reopened).unwrap(), model);
    reopened.verify().unwrap();
}

/// What readers see of each kind of change: a dropped array is no field, an added one reads
/// empty in every parent, an added measure has no value in old items, a renamed or dropped
/// collection's handles answer `UnknownCollection`, a snapshot from before still reads it.
#[test]
fn readers_see_each_change_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let spec = CollectionSpec::new("p")
        .array("reviews", Layout::Subset { keep: 2 })
        .array("tags", Layout::Embed);
    let products = db.create_collection(spec).unwrap();
    let mut batch = db.batch();
    for key in 0..5 {
        batch.push(
            "p",
            "a",
            "reviews",
            NewItem::new("r").key(key).value(key as f64),
        );
        batch.push("p", "a", "tags", NewItem::new("t").key(key));
    }
    batch.commit().unwrap();
    let before = db.snapshot();

    // Dropped: the handle made before reads under the new schema.
    db.alter_collection("p", Alteration::new().drop_array("reviews"))
        .unwrap();
    let doc = products.get("a").unwrap().unwrap();
    assert!(doc.array("reviews").is_none());
    assert_eq!(doc.array("tags").unwrap().total, 5);
    assert!(matches!(
        products.items("a", "reviews", &ItemQuery::new()),
        Err(Error::UnknownField { .. })
    ));
    assert!(matches!(
        products.outliers("reviews"),
        Err(Error::UnknownField { .. })
    ));
    // The snapshot from before still reads it whole, cold history included.
    let old = before.collection("p").unwrap();
    let page = old
        .items("a", "reviews", &ItemQuery::new())
        .unwrap()
        .unwrap();
    assert_eq!(page.items.len(), 5);

    // Added: empty everywhere, under every layout; then it takes items.
    let layouts = [
        ("e", Layout::Embed),
        ("r", Layout::Reference),
        ("s", Layout::Subset { keep: 1 }),
        ("o", Layout::Outlier { inline_cap: 1 }),
        (
            "b",
            Layout::Bucket {
                max_items: 2,
                span: Some(10),
            },
        ),
    ];
    let alteration = layouts
        .iter()
        .fold(Alteration::new(), |a, (field, layout)| {
            a.add_array(*field, *layout)
        });
    let products = db.alter_collection("p", alteration).unwrap();
    for (field, _) in layouts {
        let summary = products.summary("a", field, ..).unwrap().unwrap();
        assert_eq!((summary.count, summary.min_key), (0, None), "{field}");
        let page = products
            .items("a", field, &ItemQuery::new())
            .unwrap()
            .unwrap();
        assert!(page.items.is_empty(), "{field}");
        assert_eq!(
            products
                .get("a")
                .unwrap()
                .unwrap()
                .array(field)
                .unwrap()
                .total,
            0
        );
        let mut batch = db.batch();
        for key in 0..7 {
            batch.push("p", "a", field, NewItem::new("x").key(key).value(1.0));
        }
        batch.commit().unwrap();
        let page = products
            .items("a", field, &ItemQuery::new())
            .unwrap()
            .unwrap();
        assert_eq!(page.items.len(), 7, "{field}");
    }

    // A measure added: old items have no value of it; new ones do.
    let products = db
        .alter_collection("p", Alteration::new().add_measure("tags", "w"))
        .unwrap();
    let tags = products.array("tags").unwrap();
    let w = tags.measure_index("w").unwrap();
    let mut batch = db.batch();
    batch.push_to(
        &tags,
        "a",
        NewItem::new("t").key(9).value(2.0).measure("w", 4.0),
    );
    batch.commit().unwrap();
    let summary = products.summary("a", "tags", ..).unwrap().unwrap();
    assert_eq!((summary.items, summary.measure(w).count), (6, 1));
    assert_eq!(summary.measure(w).max, Some(4.0));
    let page = products
        .items("a", "tags", &ItemQuery::new())
        .unwrap()
        .unwrap();
    assert_eq!(
        page.items.iter().filter(|i| i.measure(w).is_some()).count(),
        1
    );

    // Renamed: the old name is free and unknown, the handle answers UnknownCollection.
    let renamed = db.rename_collection("p", "q").unwrap();
    assert!(matches!(
        products.get("a"),
        Err(Error::UnknownCollection { .. })
    ));
    assert!(matches!(
        db.collection("p"),
        Err(Error::UnknownCollection { .. })
    ));
    assert_eq!(
        renamed
            .get("a")
            .unwrap()
            .unwrap()
            .array("tags")
            .unwrap()
            .total,
        6
    );

    // Dropped: gone; its name takes a new, empty collection.
    db.drop_collection("q").unwrap();
    assert!(matches!(
        renamed.get("a"),
        Err(Error::UnknownCollection { .. })
    ));
    assert!(matches!(
        db.drop_collection("q"),
        Err(Error::UnknownCollection { .. })
    ));
    let fresh = db.create_collection(CollectionSpec::new("q")).unwrap();
    assert!(fresh.get("a").unwrap().is_none());
    assert_eq!(fresh.scan(..).unwrap().count(), 0);
    db.verify().unwrap();
}

#[test]
fn bad_changes_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let spec = CollectionSpec::new("p").array_with_measures("r", Layout::Embed, ["a", "b"]);
    db.create_collection(spec.clone()).unwrap();
    db.create_collection(CollectionSpec::new("other")).unwrap();
    let refused = |alteration: Alteration| db.alter_collection("p", alteration).unwrap_err();
    assert!(matches!(
        db.alter_collection("nope", Alteration::new().rename("x")),
        Err(Error::UnknownCollection { .. })
    ));
    assert!(matches!(
        refused(Alteration::new().drop_array("x")),
        Error::UnknownField { .. }
    ));
    assert!(matches!(
        refused(Alteration::new().add_measure("x", "m")),
        Error::UnknownField { .. }
    ));
    assert!(matches!(
        refused(Alteration::new().add_array("r", Layout::Embed)),
        Error::InvalidSchema { .. }
    ));
    assert!(matches!(
        refused(Alteration::new().add_measure("r", "a")),
        Error::InvalidSchema { .. }
    ));
    let nine = (0..7).fold(Alteration::new(), |a, m| {
        a.add_measure("r", format!("m{m}"))
    });
    assert!(matches!(refused(nine), Error::InvalidSchema { .. }));
    let eight = (0..6).fold(Alteration::new(), |a, m| {
        a.add_measure("r", format!("m{m}"))
    });
    assert_eq!(
        db.alter_collection("p", eight.clone())
            .unwrap()
            .spec()
            .arrays()[0]
            .measures
            .len(),
        8
    );
    let too_many = (0..64).fold(Alteration::new(), |a, f| {
        a.add_array(format!("f{f}"), Layout::Embed)
    });
    assert!(matches!(refused(too_many), Error::InvalidSchema { .. }));
    assert!(matches!(
        refused(Alteration::new().rename("")),
        Error::InvalidName { .. }
    ));
    assert!(matches!(
        refused(Alteration::new().rename("other")),
        Error::SchemaConflict { .. }
    ));
    assert!(matches!(
        refused(Alteration::new().add_array("bad", Layout::Subset { keep: 0 })),
        Error::InvalidSchema { .. }
    ));
    // A batch that wrote to the collection before changing its schema is refused whole.
    let mut batch = db.batch();
    batch.put("p", "k", "v");
    batch.alter_collection("p", Alteration::new().drop_array("r"));
    assert!(matches!(batch.commit(), Err(Error::InvalidSchema { .. })));
    // None of it took: the schema is the one the eight-measure change left.
    let p = db.collection("p").unwrap();
    assert_eq!(p.spec().arrays()[0].measures.len(), 8);
    assert!(p.get("k").unwrap().is_none());
    // Changed first, then written: the writes see the new schema.
    let mut batch = db.batch();
    batch.alter_collection("p", Alteration::new().add_array("n", Layout::Embed));
    batch.push("p", "k", "n", NewItem::new("x"));
    batch.commit().unwrap();
    assert_eq!(
        db.collection("p")
            .unwrap()
            .get("k")
            .unwrap()
            .unwrap()
            .array("n")
            .unwrap()
            .total,
        1
    );
    // An empty alteration changes nothing.
    let before = db.collection("p").unwrap().spec().clone();
    assert_eq!(
        db.alter_collection("p", Alteration::new()).unwrap().spec(),
        &before
    );
}

/// Power lost at every sync of a run of schema changes (and of the reclaiming after them):
/// each image opens to the state after some prefix of the acknowledged changes, whole, and
/// verifies.
#[test]
fn a_power_loss_at_any_sync_leaves_a_state_before_or_after_each_change() {
    let options = small_options(Durability::Immediate);
    let (sim, storage) = sim();
    let db = open_db(storage, options.clone()).unwrap();
    commit_maintained(&db, &workload(5, 40)).unwrap();
    let mut states = vec![read_all(&db).unwrap()];
    sim.capture_syncs(true);
    for change in changes() {
        (change.apply)(&db).unwrap();
        states.push(read_all(&db).unwrap());
        if change.what.starts_with("drop products") {
            db.compact().unwrap();
        }
    }
    db.compact().unwrap();
    drop(db);
    sim.capture_syncs(false);
    let snapshots = sim.take_captured();
    assert!(snapshots.len() > 20, "{} syncs", snapshots.len());
    let mut seen = vec![false; states.len()];
    for (at, snapshot) in snapshots.iter().enumerate() {
        for seed in 0..3 {
            let image = snapshot.crash_image(seed + at as u64 * 7);
            let db = reopen(&image, options.clone());
            let state = read_all(&db).unwrap();
            let index = states
                .iter()
                .position(|s| *s == state)
                .unwrap_or_else(|| panic!("sync {at}, seed {seed}: a state no prefix left"));
            seen[index] = true;
            db.verify()
                .unwrap_or_else(|e| panic!("sync {at}, seed {seed}: {e}"));
        }
    }
    assert!(
        seen.iter().filter(|s| **s).count() >= states.len() - 1,
        "{seen:?}"
    );
    let _ = MIRRORED;
}

/// A backup of a database whose collections were altered restores to the same reads.
#[test]
fn a_backup_after_schema_changes_restores_the_same_reads() {
    let options = small_options(Durability::Immediate);
    let (_sim, storage) = sim();
    let db = open_db(storage, options).unwrap();
    commit_maintained(&db, &workload(3, 60)).unwrap();
    for change in changes().into_iter().take(5) {
        (change.apply)(&db).unwrap();
    }
    let model = read_all(&db).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("altered.backup");
    db.backup(&file).unwrap();
    let restored = Db::restore(&file, dir.path().join("restored"), Options::new()).unwrap();
    assert_eq!(read_all(&restored).unwrap(), model);
    restored.verify().unwrap();
}

/// The maintenance thread reclaims a dropped collection by itself, in steps, while the
/// database takes writes.
#[test]
fn the_maintenance_thread_reclaims_a_drop_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let spec = CollectionSpec::new("big").array("r", Layout::Subset { keep: 2 });
    db.create_collection(spec).unwrap();
    db.create_collection(CollectionSpec::new("kept")).unwrap();
    for round in 0..10 {
        let mut batch = db.batch();
        for parent in 0..500 {
            let key = format!("p{round:02}{parent:04}");
            batch.put("big", &key, "body");
            for item in 0..4 {
                batch.push("big", &key, "r", NewItem::new("x").key(item));
            }
        }
        batch.commit().unwrap();
    }
    let started = Instant::now();
    db.drop_collection("big").unwrap();
    let dropped_in = started.elapsed();
    let mut batch = db.batch();
    batch.put("kept", "k", "v");
    batch.commit().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.stats().unwrap().retired > 0 {
        assert!(Instant::now() < deadline, "not reclaimed in a minute");
        std::thread::sleep(Duration::from_millis(10));
    }
    let report = db.verify().unwrap();
    assert_eq!(report.records, 1, "only the kept parent is left");
    assert!(
        dropped_in < Duration::from_secs(1),
        "the drop took {dropped_in:?}"
    );
}

/// The model fuzzer's target (`skewdb_tests::fuzz::model`), whose operations include clearing
/// an array by a schema change (drop, then add it again) among writes, checkpoints,
/// compactions, reopens, power losses and I/O faults, on inputs from a seeded generator.
#[test]
fn the_model_target_holds_with_array_clears_on_seeded_inputs() {
    use rand::{Rng, SeedableRng};
    for seed in 0..24 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let data: Vec<u8> = (0..1_200).map(|_| rng.random()).collect();
        skewdb_tests::fuzz::model(&data);
    }
}

/// A batch creates a collection and writes to it at once; created again with the same
/// schema it changes nothing, with another one the whole batch is refused.
#[test]
fn a_batch_creates_a_collection_and_writes_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = CollectionSpec::new("p").array("r", Layout::Subset { keep: 2 });
    {
        let db = Db::open(dir.path(), Options::new()).unwrap();
        let mut batch = db.batch();
        batch.create_collection(spec.clone());
        batch.put("p", "k", "v");
        batch.push("p", "k", "r", NewItem::new("x"));
        batch.commit().unwrap();
    }
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let p = db.collection("p").unwrap();
    assert_eq!(p.spec(), &spec);
    assert_eq!(p.get("k").unwrap().unwrap().array("r").unwrap().total, 1);

    let mut batch = db.batch();
    batch.create_collection(spec.clone());
    batch.push("p", "k", "r", NewItem::new("y"));
    batch.commit().unwrap();
    assert_eq!(p.get("k").unwrap().unwrap().array("r").unwrap().total, 2);

    let mut batch = db.batch();
    batch.put("p", "other", "v");
    batch.create_collection(CollectionSpec::new("p").array("r", Layout::Embed));
    assert!(matches!(batch.commit(), Err(Error::SchemaConflict { .. })));
    assert!(p.get("other").unwrap().is_none());
    let mut batch = db.batch();
    batch.create_collection(CollectionSpec::new("q").array("r", Layout::Subset { keep: 0 }));
    assert!(matches!(batch.commit(), Err(Error::InvalidSchema { .. })));
    assert!(db.collection("q").is_err());
}

/// A write through a handle made before its collection was renamed, dropped or re-created
/// under the same name is refused at commit with `UnknownCollection`, the whole batch with
/// it: through a batch (`put_in`, `delete_in`, `push_to`, `remove_from`, `remove_item_from`,
/// `expire_buckets_of`), a transaction, a typed handle, and a collection-wide expiry. A write
/// by name goes to whatever collection has the name at commit, as before.
#[test]
fn a_stale_handle_never_writes_into_another_collection() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let bucket = Layout::Bucket {
        max_items: 2,
        span: None,
    };
    let spec = |name: &str| {
        CollectionSpec::new(name)
            .array("r", Layout::Subset { keep: 2 })
            .array("b", bucket)
    };
    let books = db.create_collection(spec("books")).unwrap();
    let reviews = books.array("r").unwrap();
    let buckets = books.array("b").unwrap();
    let mut batch = db.batch();
    batch.put_in(&books, "k", "old");
    batch.push_to(&reviews, "k", NewItem::new("x").key(1));
    batch.commit().unwrap();
    let unknown = |result: skewdb::Result<()>| match result {
        Err(Error::UnknownCollection { name }) => assert_eq!(name, "books"),
        other => panic!("{other:?}"),
    };
    // Renamed, then a new collection made under the old name.
    db.rename_collection("books", "catalog").unwrap();
    let fresh = db.create_collection(spec("books")).unwrap();
    let id = skewdb::Cursor { key: 1, seq: 0 };
    type Write<'a> = Box<dyn Fn(&mut skewdb::Batch) + 'a>;
    let writes: Vec<(&str, Write)> = vec![
        (
            "put_in",
            Box::new(|b| {
                b.put_in(&books, "k", "stale");
            }),
        ),
        (
            "delete_in",
            Box::new(|b| {
                b.delete_in(&books, "k");
            }),
        ),
        (
            "push_to",
            Box::new(|b| {
                b.push_to(&reviews, "k", NewItem::new("stale").key(2));
            }),
        ),
        (
            "remove_from",
            Box::new(|b| {
                b.remove_from(&reviews, "k", 1);
            }),
        ),
        (
            "remove_item_from",
            Box::new(|b| {
                b.remove_item_from(&reviews, "k", id);
            }),
        ),
        (
            "expire_buckets_of",
            Box::new(|b| {
                b.expire_buckets_of(&buckets, "k", 10);
            }),
        ),
    ];
    for (what, write) in &writes {
        let mut batch = db.batch();
        // A write by name in the same batch: refused with it.
        batch.put("books", "by-name", what.as_bytes());
        write(&mut batch);
        unknown(batch.commit());
        assert!(fresh.get("k").unwrap().is_none(), "{what}");
        assert!(fresh.get("by-name").unwrap().is_none(), "{what}");
        // Through a transaction: refused likewise.
        let mut txn = db.transaction();
        txn.put_in(&books, "k", "stale");
        unknown(txn.commit().map(|_| ()));
    }
    // The renamed collection kept its data; writes by name go where the name is now.
    let catalog = db.collection("catalog").unwrap();
    assert_eq!(catalog.get("k").unwrap().unwrap().body(), b"old");
    let mut batch = db.batch();
    batch.put("books", "by-name", "new");
    batch.commit().unwrap();
    assert_eq!(fresh.get("by-name").unwrap().unwrap().body(), b"new");
    // A handle made now writes into the new collection; a batch that re-creates a name
    // before a stale handle's write is refused too.
    let mut batch = db.batch();
    batch.put_in(&fresh, "k", "fresh");
    batch.commit().unwrap();
    assert_eq!(fresh.get("k").unwrap().unwrap().body(), b"fresh");
    db.drop_collection("books").unwrap();
    let mut batch = db.batch();
    batch.create_collection(spec("books"));
    batch.put_in(&fresh, "k", "stale");
    unknown(batch.commit());
    assert!(
        db.collection("books").is_err(),
        "the refused batch created nothing"
    );
    // A dropped and re-created name: the array handle's push is refused.
    let again = db.create_collection(spec("books")).unwrap();
    let mut batch = db.batch();
    batch.push_to(
        &fresh.array("r").unwrap(),
        "k",
        NewItem::new("stale").key(3),
    );
    unknown(batch.commit());
    assert!(again.get("k").unwrap().is_none());
    // A collection-wide expiry through a stale handle.
    match fresh.expire_buckets("b", 10) {
        Err(Error::UnknownCollection { .. }) => {}
        other => panic!("{other:?}"),
    }
}
