//! A database written before a format change opens with today's engine, reads as it did,
//! and takes writes in the new format. The image and how it was made:
//! `tests/data/before-measures/README.md`.

use std::fmt::Write;
use std::path::Path;

use skewdb::{CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};

/// The options the image was written with.
fn options() -> Options {
    skewdb_tests::fixture_options()
}

/// Every collection's documents, arrays, summaries (whole and over keys 100..2200) and
/// items, one line each, as the image's generator printed them.
fn dump(db: &Db) -> String {
    let mut out = String::new();
    for name in db.collection_names() {
        let collection = db.collection(&name).unwrap();
        let arrays = collection.spec().describe_arrays();
        writeln!(out, "collection {name}: {arrays}").unwrap();
        for document in collection.scan(..).unwrap() {
            let document = document.unwrap();
            let key = String::from_utf8_lossy(document.key()).into_owned();
            let body = String::from_utf8_lossy(document.body());
            writeln!(out, "  {key}: {body:?}").unwrap();
            for array in document.arrays() {
                let field = &array.field;
                let s = collection.summary(&key, field, ..).unwrap().unwrap();
                writeln!(
                    out,
                    "    {field} total {} overflow {} summary {} {} {:x} {:?} {:?} {:?} {:?}",
                    array.total,
                    array.has_overflow,
                    s.items,
                    s.count,
                    s.sum.to_bits(),
                    s.min,
                    s.max,
                    s.min_key,
                    s.max_key
                )
                .unwrap();
                let r = collection.summary(&key, field, 100..2200).unwrap().unwrap();
                let (items, count, sum) = (r.items, r.count, r.sum.to_bits());
                writeln!(
                    out,
                    "    range {items} {count} {sum:x} {:?} {:?}",
                    r.min, r.max
                )
                .unwrap();
                let page = collection.items(&key, field, &ItemQuery::new()).unwrap();
                for item in page.unwrap().items {
                    let payload = String::from_utf8_lossy(&item.payload);
                    writeln!(out, "      {} {:?} {payload:?}", item.key, item.value).unwrap();
                }
            }
        }
    }
    out
}

fn copy_image(to: &Path) {
    let image = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/before-measures/db");
    for entry in std::fs::read_dir(image).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Each cold segment's name and the version its header carries.
fn cold_versions(dir: &Path) -> Vec<(String, u32)> {
    let mut versions: Vec<(String, u32)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with("cold-"))
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
            (name, version)
        })
        .collect();
    versions.sort();
    versions
}

fn expected() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/before-measures/expected.txt");
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_database_written_before_measures_reads_as_it_did() {
    let dir = tempfile::tempdir().unwrap();
    copy_image(dir.path());
    let db = Db::open(dir.path(), options()).unwrap();
    db.verify().unwrap();
    let dumped = dump(&db);
    assert!(dumped.lines().count() > 3000);
    assert!(
        dumped == expected(),
        "the image reads differently:\n{dumped}"
    );
    // Reopened after a checkpoint in today's format: the same again.
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.verify().unwrap();
    assert!(dump(&db) == expected());
}

#[test]
fn a_database_written_before_measures_takes_new_writes() {
    let dir = tempfile::tempdir().unwrap();
    copy_image(dir.path());
    let db = Db::open(dir.path(), options()).unwrap();
    let feed = db.collection("feed").unwrap();
    let before = feed.summary("p00", "followers", ..).unwrap().unwrap();
    let mut batch = db.batch();
    for key in 5000..5010 {
        let item = NewItem::new("new").key(key).value(key as f64);
        batch.push("feed", "p00", "followers", item.clone());
        batch.push("feed", "p00", "readings", item);
    }
    batch.commit().unwrap();
    // A collection with measures beside the old ones, in the new format.
    let spec = CollectionSpec::new("sensors").array_with_measures(
        "readings",
        Layout::Bucket {
            max_items: 4,
            span: None,
        },
        ["t", "h"],
    );
    db.create_collection(spec).unwrap();
    let mut batch = db.batch();
    for key in 0..10 {
        let reading = NewItem::new("").key(key).measure("h", key as f64);
        batch.push("sensors", "s", "readings", reading);
    }
    batch.commit().unwrap();
    let check = |db: &Db| {
        let sensors = db.collection("sensors").unwrap();
        let h = sensors
            .summary("s", "readings", 2..)
            .unwrap()
            .unwrap()
            .measure(1);
        assert_eq!((h.count, h.sum, h.max), (8, 44.0, Some(9.0)));
        let feed = db.collection("feed").unwrap();
        let after = feed.summary("p00", "followers", ..).unwrap().unwrap();
        assert_eq!(after.items, before.items + 10);
        assert_eq!(after.count, before.count + 10);
        assert_eq!(after.max, Some(5009.0));
        assert_eq!(after.max_key, Some(5009));
        let new = feed.summary("p00", "readings", 5000..).unwrap().unwrap();
        assert_eq!((new.items, new.sum), (10, (5000..5010).sum::<i64>() as f64));
        db.verify().unwrap();
    };
    check(&db);
    // The new chunks went to a segment of today's cold version (3); the image's segments
    // keep theirs, so that a build from before refuses the new one by its version instead of
    // finding chunks it does not know.
    let image =
        cold_versions(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data/before-measures/db"));
    let now = cold_versions(dir.path());
    assert!(image.iter().all(|(_, version)| *version == 1), "{image:?}");
    for (name, version) in &image {
        assert!(
            now.contains(&(name.clone(), *version)),
            "{name} changed: {now:?}"
        );
    }
    assert!(
        now.iter()
            .any(|(name, version)| *version == 3 && !image.iter().any(|(n, _)| n == name)),
        "{now:?}"
    );
    drop(feed);
    db.compact().unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    check(&db);
}
