//! Typed handles: bodies and items through JSON, BSON and an application's own codec, keys
//! that keep their order, item keys and values taken from the items.

use serde::{Deserialize, Serialize};
use skewdb::typed::{Bson, Codec, ItemFields, Json};
use skewdb::{CollectionSpec, Db, Error, ItemQuery, Layout, Options};

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Sensor {
    site: String,
    floor: i32,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Reading {
    at: i64,
    celsius: f64,
}

impl ItemFields for Reading {
    fn item_key(&self) -> Option<i64> {
        Some(self.at)
    }

    fn item_value(&self) -> Option<f64> {
        Some(self.celsius)
    }
}

fn db() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let spec = CollectionSpec::new("sensors").array(
        "readings",
        Layout::Bucket {
            max_items: 10,
            span: Some(3600),
        },
    );
    db.create_collection(spec).unwrap();
    (dir, db)
}

fn round_trip<C: Codec>() {
    let (_dir, db) = db();
    let sensors = db.collection("sensors").unwrap().typed::<u64, Sensor, C>();
    let readings = sensors.array::<Reading>("readings").unwrap();
    let mut batch = db.batch();
    for id in [30u64, 7, 1_000_000] {
        let sensor = Sensor {
            site: format!("site {id}"),
            floor: id as i32 % 5,
        };
        sensors.put(&mut batch, &id, &sensor).unwrap();
        for minute in 0..25 {
            let reading = Reading {
                at: minute * 60,
                celsius: 20.0 + minute as f64,
            };
            readings.push(&mut batch, &id, &reading).unwrap();
        }
    }
    batch.commit().unwrap();
    let seven = sensors.get(&7).unwrap().unwrap();
    assert_eq!(seven.key, 7);
    assert_eq!(seven.body.site, "site 7");
    let array = seven.document.array("readings").unwrap();
    assert_eq!(array.total, 25);
    // Bucket of ten: two sealed, the open bucket inline.
    let inline = readings.inline(&seven.document).unwrap();
    assert_eq!(inline.len(), 5);
    assert_eq!(inline[0].at, 20 * 60);
    // Keys and values came from the items.
    let summary = readings.summary(&7, ..).unwrap().unwrap();
    assert_eq!((summary.min_key, summary.max_key), (Some(0), Some(24 * 60)));
    assert_eq!(summary.max, Some(44.0));
    let page = readings
        .items(&7, &ItemQuery::new().descending().limit(3))
        .unwrap()
        .unwrap();
    let newest: Vec<i64> = page.items.iter().map(|r| r.at).collect();
    assert_eq!(newest, [24 * 60, 23 * 60, 22 * 60]);
    assert!(page.next.is_some());
    // The borrowed read lends the same items, decoded only when asked, and the same cursor.
    let mut lent = Vec::new();
    let visited = readings
        .for_each_item(&7, &ItemQuery::new().descending().limit(3), |reading| {
            let decoded = reading.decode().unwrap();
            assert_eq!(
                (reading.key(), reading.value()),
                (decoded.at, Some(decoded.celsius))
            );
            lent.push((reading.id(), decoded));
        })
        .unwrap()
        .unwrap();
    assert_eq!(visited.next, page.next);
    let lent_ids: Vec<_> = lent.iter().map(|(id, _)| *id).collect();
    assert_eq!(lent_ids, page.ids);
    let lent: Vec<Reading> = lent.into_iter().map(|(_, reading)| reading).collect();
    assert_eq!(lent, page.items);
    // Keys alone over the whole array (sealed buckets and the open one), nothing decoded;
    // a parent that does not exist lends nothing.
    let mut keys = Vec::new();
    readings
        .for_each_item(&7, &ItemQuery::new(), |reading| keys.push(reading.key()))
        .unwrap()
        .unwrap();
    assert_eq!(keys, (0..25).map(|minute| minute * 60).collect::<Vec<_>>());
    assert!(
        readings
            .for_each_item(&8, &ItemQuery::new(), |_| ())
            .unwrap()
            .is_none()
    );
    // Numeric keys scan in numeric order, both ways, over ranges of the key type.
    let ids: Vec<u64> = sensors.scan(..).unwrap().map(|d| d.unwrap().key).collect();
    assert_eq!(ids, [7, 30, 1_000_000]);
    let back: Vec<u64> = sensors
        .scan(8..)
        .unwrap()
        .rev()
        .map(|d| d.unwrap().key)
        .collect();
    assert_eq!(back, [1_000_000, 30]);
    // Removing an item through its identity, and a parent.
    let mut batch = db.batch();
    readings.remove_item(&mut batch, &7, page.ids[0]);
    sensors.delete(&mut batch, &30);
    batch.commit().unwrap();
    assert_eq!(readings.summary(&7, ..).unwrap().unwrap().items, 24);
    assert!(sensors.get(&30).unwrap().is_none());
}

#[test]
fn json_bodies_and_items_round_trip() {
    round_trip::<Json>();
}

#[test]
fn bson_bodies_and_items_round_trip() {
    round_trip::<Bson>();
}

/// An application's own codec: here JSON behind a marker prefix, enough to show that the
/// handle writes and reads through it and nothing else.
struct Compact;

impl Codec for Compact {
    const NAME: &'static str = "compact";

    fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
        Ok(marked_json(value)?.into_bytes())
    }

    fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        let text = text.strip_prefix("compact:").ok_or("not a compact value")?;
        Json::decode(text.as_bytes())
    }
}

fn marked_json<T: Serialize>(value: &T) -> Result<String, String> {
    let json = Json::encode(value)?;
    Ok(format!(
        "compact:{}",
        String::from_utf8(json).map_err(|e| e.to_string())?
    ))
}

#[test]
fn an_applications_own_codec_is_used_for_bodies_and_items() {
    let (_dir, db) = db();
    let sensors = db
        .collection("sensors")
        .unwrap()
        .typed::<String, Sensor, Compact>();
    let mut batch = db.batch();
    let sensor = Sensor {
        site: "roof".into(),
        floor: 9,
    };
    sensors.put(&mut batch, "s1", &sensor).unwrap();
    batch.commit().unwrap();
    let raw = db
        .collection("sensors")
        .unwrap()
        .get("s1")
        .unwrap()
        .unwrap();
    assert!(raw.body().starts_with(b"compact:"));
    assert_eq!(sensors.get("s1").unwrap().unwrap().body, sensor);
}

#[test]
fn bodies_that_do_not_decode_are_codec_errors() {
    let (_dir, db) = db();
    let mut batch = db.batch();
    batch.put("sensors", "s1", "not json at all");
    batch.commit().unwrap();
    let sensors = db
        .collection("sensors")
        .unwrap()
        .typed::<String, Sensor, Json>();
    let error = sensors.get("s1").unwrap_err();
    assert!(
        matches!(error, Error::Codec { codec: "json", .. }),
        "{error}"
    );
    assert_eq!(error.kind(), "codec");
    // BSON encodes documents only: a bare number is refused before anything is written.
    let numbers = db
        .collection("sensors")
        .unwrap()
        .typed::<String, u32, Bson>();
    let mut batch = db.batch();
    let refused = numbers.put(&mut batch, "n", &5).unwrap_err();
    assert!(
        matches!(refused, Error::Codec { codec: "bson", .. }),
        "{refused}"
    );
    assert!(batch.is_empty());
    // An unknown array is refused when its handle is made.
    assert!(matches!(
        sensors.array::<Reading>("nosuch"),
        Err(Error::UnknownField { .. })
    ));
}

/// String keys scan over ranges as they are written: `"a".."m"`, owned `String`s, bound
/// pairs of `&str`, inclusive and open-ended ranges.
#[test]
fn string_keys_scan_over_ranges_as_written() {
    use std::ops::Bound;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let words = db
        .create_collection(CollectionSpec::new("words"))
        .unwrap()
        .typed::<String, u32, Json>();
    let mut batch = db.batch();
    for (at, word) in ["apple", "banana", "cherry", "mango", "zebra"]
        .iter()
        .enumerate()
    {
        words.put(&mut batch, word, &(at as u32)).unwrap();
    }
    batch.commit().unwrap();
    let keys = |scan: skewdb::typed::TypedScan<String, u32, Json>| -> Vec<String> {
        scan.map(|d| d.unwrap().key).collect()
    };
    assert_eq!(keys(words.scan("b".."m").unwrap()), ["banana", "cherry"]);
    assert_eq!(
        keys(words.scan("b"..="mango").unwrap()),
        ["banana", "cherry", "mango"]
    );
    assert_eq!(
        keys(words.scan(String::from("c")..).unwrap()),
        ["cherry", "mango", "zebra"]
    );
    assert_eq!(keys(words.scan(..="banana").unwrap()), ["apple", "banana"]);
    let after_cherry = (Bound::Excluded("cherry"), Bound::Unbounded);
    assert_eq!(keys(words.scan(after_cherry).unwrap()), ["mango", "zebra"]);
    assert_eq!(keys(words.scan(..).unwrap()).len(), 5);
    let back: Vec<String> = words
        .scan("a".."d")
        .unwrap()
        .rev()
        .map(|d| d.unwrap().key)
        .collect();
    assert_eq!(back, ["cherry", "banana", "apple"]);
}

#[test]
fn signed_keys_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let events = db
        .create_collection(CollectionSpec::new("events"))
        .unwrap()
        .typed::<i64, String, Json>();
    let mut batch = db.batch();
    for key in [5i64, -1, i64::MIN, 0, i64::MAX, -300] {
        events.put(&mut batch, &key, &key.to_string()).unwrap();
    }
    batch.commit().unwrap();
    let keys: Vec<i64> = events.scan(..).unwrap().map(|d| d.unwrap().key).collect();
    assert_eq!(keys, [i64::MIN, -300, -1, 0, 5, i64::MAX]);
    let negative: Vec<i64> = events.scan(..0).unwrap().map(|d| d.unwrap().key).collect();
    assert_eq!(negative, [i64::MIN, -300, -1]);
    assert_eq!(events.get(&-300).unwrap().unwrap().body, "-300");
}

#[test]
fn typed_handles_write_into_a_transaction() {
    let (_dir, db) = db();
    let sensors = db
        .collection("sensors")
        .unwrap()
        .typed::<String, Sensor, Json>();
    let readings = sensors.array::<Reading>("readings").unwrap();
    let mut txn = db.transaction();
    let sensor = Sensor {
        site: "hall".into(),
        floor: 1,
    };
    sensors.put(&mut txn, "s1", &sensor).unwrap();
    readings
        .push(
            &mut txn,
            "s1",
            &Reading {
                at: 60,
                celsius: 21.5,
            },
        )
        .unwrap();
    // Its own writes, read back through the untyped reads of the transaction.
    let own = txn
        .collection("sensors")
        .unwrap()
        .get("s1")
        .unwrap()
        .unwrap();
    assert_eq!(own.array("readings").unwrap().total, 1);
    assert!(
        sensors.get("s1").unwrap().is_none(),
        "not before the commit"
    );
    // A typed handle made from the transaction writes into it too (`&txn`), and reads its
    // writes back through itself.
    let hall = sensor.clone();
    {
        let in_txn = txn
            .collection("sensors")
            .unwrap()
            .typed::<String, Sensor, Json>();
        let readings_in_txn = in_txn.array::<Reading>("readings").unwrap();
        let porch = Sensor {
            site: "porch".into(),
            floor: 0,
        };
        in_txn.put(&txn, "s2", &porch).unwrap();
        let cold = Reading {
            at: 120,
            celsius: -3.0,
        };
        readings_in_txn.push(&txn, "s2", &cold).unwrap();
        assert_eq!(in_txn.get("s2").unwrap().unwrap().body, porch);
        let page = readings_in_txn
            .items("s2", &ItemQuery::new())
            .unwrap()
            .unwrap();
        assert_eq!(page.items, [cold]);
        in_txn.delete(&txn, "s1");
        assert!(in_txn.get("s1").unwrap().is_none());
        in_txn.put(&txn, "s1", &hall).unwrap();
    }
    assert_eq!(txn.len(), 6);
    txn.commit().unwrap();
    let stored = sensors.get("s1").unwrap().unwrap();
    assert_eq!(stored.body, sensor);
    assert_eq!(sensors.get("s2").unwrap().unwrap().body.site, "porch");
    assert!(
        readings
            .summary("s1", ..)
            .unwrap()
            .is_none_or(|s| s.items == 0)
    );
    assert_eq!(readings.summary("s2", ..).unwrap().unwrap().min, Some(-3.0));
}

#[test]
fn a_collections_document_format_survives_replay_and_checkpoint() {
    use skewdb::DocumentFormat;
    let dir = tempfile::tempdir().unwrap();
    let spec = CollectionSpec::new("people")
        .array("tags", Layout::Embed)
        .stored_as(DocumentFormat::Bson);
    let plain = CollectionSpec::new("plain");
    let image = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::new()).unwrap();
        db.create_collection(spec.clone()).unwrap();
        db.create_collection(plain).unwrap();
        // The files as a crash would leave them, before any checkpoint: opening them
        // replays the create ops.
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() && entry.file_name() != "lock" {
                std::fs::copy(entry.path(), image.path().join(entry.file_name())).unwrap();
            }
        }
    }
    let check = |db: &Db| {
        let people = db.collection("people").unwrap();
        assert_eq!(people.spec(), &spec);
        assert_eq!(people.spec().document_format(), DocumentFormat::Bson);
        let plain = db.collection("plain").unwrap();
        assert_eq!(plain.spec().document_format(), DocumentFormat::Bytes);
    };
    let db = Db::open(image.path(), Options::new()).unwrap();
    check(&db);
    // Creating it again with the same format is nothing; with another, a conflict.
    db.create_collection(spec.clone()).unwrap();
    let other = spec.clone().stored_as(DocumentFormat::Bytes);
    assert!(matches!(
        db.create_collection(other),
        Err(Error::SchemaConflict { .. })
    ));
    db.checkpoint().unwrap();
    db.close().unwrap();
    let db = Db::open(image.path(), Options::new()).unwrap();
    check(&db);
}

/// Typed reads through every handle: a snapshot reads bodies, items and summaries typed at
/// its version; a transaction reads typed (each read checked at its commit: a typed read of
/// a parent another commit changed is a conflict) and takes typed writes.
#[test]
fn typed_reads_through_snapshots_and_transactions() {
    let (_dir, db) = db();
    let sensors = db
        .collection("sensors")
        .unwrap()
        .typed::<String, Sensor, Json>();
    let readings = sensors.array::<Reading>("readings").unwrap();
    let mut batch = db.batch();
    let site = Sensor {
        site: "north".into(),
        floor: 1,
    };
    sensors.put(&mut batch, "s1", &site).unwrap();
    for at in 0..25 {
        let reading = Reading {
            at,
            celsius: at as f64,
        };
        readings.push(&mut batch, "s1", &reading).unwrap();
    }
    batch.commit().unwrap();
    let snapshot = db.snapshot();

    // Changed after the snapshot: the snapshot's typed handles do not see it.
    let mut batch = db.batch();
    let moved = Sensor {
        site: "south".into(),
        floor: 2,
    };
    sensors.put(&mut batch, "s1", &moved).unwrap();
    batch.commit().unwrap();
    let then = snapshot
        .collection("sensors")
        .unwrap()
        .typed::<String, Sensor, Json>();
    assert_eq!(then.get("s1").unwrap().unwrap().body, site);
    let then_readings = then.array::<Reading>("readings").unwrap();
    let page = then_readings
        .items("s1", &ItemQuery::new().descending().limit(3))
        .unwrap()
        .unwrap();
    assert_eq!(
        page.items.iter().map(|r| r.at).collect::<Vec<_>>(),
        [24, 23, 22]
    );
    let summary = then_readings.summary("s1", 10..20).unwrap().unwrap();
    assert_eq!(summary.count, 10);
    assert_eq!(then.scan(..).unwrap().count(), 1);

    // A transaction reads typed and writes typed; its commit checks the typed read.
    let mut txn = db.transaction();
    let seen = txn
        .collection("sensors")
        .unwrap()
        .typed::<String, Sensor, Json>()
        .get("s1")
        .unwrap()
        .unwrap();
    assert_eq!(seen.body, moved);
    let upstairs = Sensor {
        floor: seen.body.floor + 1,
        ..seen.body
    };
    sensors.put(&mut txn, "s1", &upstairs).unwrap();
    let in_txn = txn
        .collection("sensors")
        .unwrap()
        .typed::<String, Sensor, Json>()
        .get("s1")
        .unwrap()
        .unwrap();
    assert_eq!(in_txn.body, upstairs, "a transaction reads its own writes");
    txn.commit().unwrap();
    assert_eq!(sensors.get("s1").unwrap().unwrap().body.floor, 3);

    let mut txn = db.transaction();
    txn.collection("sensors")
        .unwrap()
        .typed::<String, Sensor, Json>()
        .get("s1")
        .unwrap();
    let mut batch = db.batch();
    sensors.put(&mut batch, "s1", &site).unwrap();
    batch.commit().unwrap();
    sensors.put(&mut txn, "s1", &moved).unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict { .. })));
    assert_eq!(sensors.get("s1").unwrap().unwrap().body, site);
}

/// Typed writes through handles made before the collection was dropped and made again
/// under its name are refused at commit (`UnknownCollection`), bodies and items alike, and
/// nothing lands in the new collection.
#[test]
fn stale_typed_handles_write_nothing_into_a_new_collection() {
    let (_dir, db) = db();
    let sensors = db
        .collection("sensors")
        .unwrap()
        .typed::<u64, Sensor, Json>();
    let readings = sensors.array::<Reading>("readings").unwrap();
    db.drop_collection("sensors").unwrap();
    let spec = CollectionSpec::new("sensors").array(
        "readings",
        Layout::Bucket {
            max_items: 10,
            span: Some(3600),
        },
    );
    let fresh = db.create_collection(spec).unwrap();
    let sensor = Sensor {
        site: "roof".to_string(),
        floor: 9,
    };
    let reading = Reading {
        at: 60,
        celsius: 21.5,
    };
    let mut batch = db.batch();
    sensors.put(&mut batch, &1, &sensor).unwrap();
    assert!(matches!(
        batch.commit(),
        Err(Error::UnknownCollection { .. })
    ));
    let mut batch = db.batch();
    readings.push(&mut batch, &1, &reading).unwrap();
    assert!(matches!(
        batch.commit(),
        Err(Error::UnknownCollection { .. })
    ));
    let mut batch = db.batch();
    sensors.delete(&mut batch, &1);
    assert!(matches!(
        batch.commit(),
        Err(Error::UnknownCollection { .. })
    ));
    assert!(
        fresh
            .clone()
            .typed::<u64, Sensor, Json>()
            .get(&1)
            .unwrap()
            .is_none()
    );
    // Handles made now write.
    let sensors = fresh.typed::<u64, Sensor, Json>();
    let mut batch = db.batch();
    sensors.put(&mut batch, &1, &sensor).unwrap();
    sensors
        .array::<Reading>("readings")
        .unwrap()
        .push(&mut batch, &1, &reading)
        .unwrap();
    batch.commit().unwrap();
    assert_eq!(sensors.get(&1).unwrap().unwrap().body, sensor);
}

/// The typed array reads and expires as the untyped one: windows of summaries and bucket
/// expiry; and a handle made before an array was added finds the new array.
#[test]
fn typed_arrays_summarize_by_windows_expire_and_handles_see_added_arrays() {
    let (_dir, db) = db();
    let sensors = db
        .collection("sensors")
        .unwrap()
        .typed::<u64, Sensor, Json>();
    let readings = sensors.array::<Reading>("readings").unwrap();
    let mut batch = db.batch();
    for minute in 0..180 {
        let reading = Reading {
            at: minute * 60,
            celsius: minute as f64,
        };
        readings.push(&mut batch, &1, &reading).unwrap();
    }
    batch.commit().unwrap();
    let hours = readings.summary_windows(&1, .., 3600).unwrap().unwrap();
    let counts: Vec<(i64, u64)> = hours.iter().map(|(start, s)| (*start, s.items)).collect();
    assert_eq!(counts, [(0, 60), (3600, 60), (7200, 60)]);
    let expired = readings.expire_buckets(3600).unwrap();
    assert_eq!(expired.items, 60);
    assert_eq!(readings.summary(&1, ..).unwrap().unwrap().items, 120);
    // An array added after the handle was made: the old handle finds it and writes to it.
    let untyped = db.collection("sensors").unwrap();
    let alteration = skewdb::Alteration::new().add_array("notes", Layout::Embed);
    db.alter_collection("sensors", alteration).unwrap();
    let notes = untyped.array("notes").unwrap();
    let mut batch = db.batch();
    batch.push_to(&notes, 1u64.to_be_bytes(), skewdb::NewItem::new("cleaned"));
    batch.commit().unwrap();
    let fresh = db.collection("sensors").unwrap();
    let page = fresh
        .items(1u64.to_be_bytes(), "notes", &ItemQuery::new())
        .unwrap()
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(matches!(
        untyped.array("nosuch"),
        Err(Error::UnknownField { .. })
    ));
}

/// An Outlier array's flagged parents through the typed handle, keys decoded.
#[test]
fn typed_arrays_list_their_outliers_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    let spec = CollectionSpec::new("sensors").array("readings", Layout::Outlier { inline_cap: 2 });
    let sensors = db
        .create_collection(spec)
        .unwrap()
        .typed::<String, Sensor, Json>();
    let readings = sensors.array::<Reading>("readings").unwrap();
    let mut batch = db.batch();
    let sensor = Sensor {
        site: "roof".into(),
        floor: 3,
    };
    for (key, count) in [("busy", 5), ("quiet", 2), ("loud", 3)] {
        sensors.put(&mut batch, key, &sensor).unwrap();
        for at in 0..count {
            let reading = Reading {
                at,
                celsius: at as f64,
            };
            readings.push(&mut batch, key, &reading).unwrap();
        }
    }
    batch.commit().unwrap();
    let mut outliers = readings.outliers().unwrap();
    outliers.sort();
    assert_eq!(outliers, [("busy".to_string(), 5), ("loud".to_string(), 3)]);
}
