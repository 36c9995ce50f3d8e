//! Model test of the array layouts: random puts, pushes, item removals, expiry, deletes,
//! layout changes (each left running, parents moved as they are written, until a compaction
//! finishes it), fields dropped and added again, checkpoints and reopens over all five layouts against a plain in-memory
//! model; every read compared.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

use proptest::prelude::*;
use skewdb::testing::{SimStorage, Storage};
use skewdb::{
    CollectionSpec, Cursor, Db, Durability, Item, ItemQuery, Layout, NewItem, Order, Summary,
};
use skewdb_tests::{LAYOUT_CHOICES, small_options};

const FIELDS: [(&str, Layout); 5] = [
    ("e", Layout::Embed),
    ("r", Layout::Reference),
    ("s", Layout::Subset { keep: 3 }),
    ("o", Layout::Outlier { inline_cap: 4 }),
    (
        "b",
        Layout::Bucket {
            max_items: 5,
            span: Some(20),
        },
    ),
];

/// An item as the model keeps it: key, push sequence, value, payload.
type ModelItem = (i64, u64, Option<f64>, Vec<u8>);

#[derive(Clone, Debug, Default)]
struct ModelArray {
    items: Vec<ModelItem>,
    next_seq: u64,
    /// Bucket layout: the open bucket's start and its items' seqs.
    bucket: Option<(i64, Vec<u64>)>,
    /// Outlier layout: the seqs of the inline items.
    outlier_inline: Vec<u64>,
    /// Bucket layout: the seqs of each sealed bucket.
    sealed: Vec<Vec<u64>>,
    /// The layout the items are placed under (`None` before the first push).
    under: Option<Layout>,
}

#[derive(Clone, Debug, Default)]
struct ModelParent {
    body: Vec<u8>,
    arrays: [ModelArray; 5],
}

#[derive(Clone, Debug)]
enum Action {
    Put(u8, Vec<u8>),
    Push(u8, usize, Option<i64>, Option<i8>, u8),
    Delete(u8),
    /// Removes the key of the model's item picked by the selector (or a key no item has).
    Remove(u8, usize, u16),
    /// Removes the one item the selector picks, by its identity (key and push sequence).
    RemoveItem(u8, usize, u16),
    /// One batch: `count` pushes with the next keys, then a remove picked by the selector.
    PushesThenRemove(u8, usize, u8, u16),
    /// Expires the sealed buckets older than the key, for one parent or all (refused
    /// unless the field's layout is Bucket).
    Expire(Option<u8>, usize, i64),
    /// Moves a field to one of [`LAYOUT_CHOICES`] (refused while it moves to another).
    SetLayout(usize, usize),
    /// Drops a field and adds it again under its layout: every parent's array empty, a
    /// move of it over.
    ClearField(usize),
    Checkpoint,
    /// Moves live chunks out of sparse cold segments, merges small chunks, cleans the log.
    Compact,
    Reopen,
    Items(u8, usize, Option<i64>, Option<i64>, bool, Option<usize>),
    Summary(u8, usize, i64, i64),
}

fn action() -> impl Strategy<Value = Action> {
    let parent = 0u8..6;
    let field = 0usize..5;
    prop_oneof![
        2 => (parent.clone(), proptest::collection::vec(any::<u8>(), 0..20)).prop_map(|(p, b)| Action::Put(p, b)),
        12 => (parent.clone(), field.clone(), proptest::option::of(-50i64..100), proptest::option::of(-5i8..6), 0u8..40)
            .prop_map(|(p, f, k, v, len)| Action::Push(p, f, k, v, len)),
        1 => parent.clone().prop_map(Action::Delete),
        4 => (parent.clone(), field.clone(), any::<u16>()).prop_map(|(p, f, s)| Action::Remove(p, f, s)),
        3 => (parent.clone(), field.clone(), any::<u16>()).prop_map(|(p, f, s)| Action::RemoveItem(p, f, s)),
        1 => (parent.clone(), field.clone(), 1u8..60, any::<u16>())
            .prop_map(|(p, f, n, s)| Action::PushesThenRemove(p, f, n, s)),
        2 => (proptest::option::of(parent.clone()), field.clone(), -60i64..120).prop_map(|(p, f, b)| Action::Expire(p, f, b)),
        2 => (field.clone(), 0..LAYOUT_CHOICES.len()).prop_map(|(f, l)| Action::SetLayout(f, l)),
        1 => field.clone().prop_map(Action::ClearField),
        1 => Just(Action::Checkpoint),
        1 => Just(Action::Compact),
        1 => Just(Action::Reopen),
        3 => (parent.clone(), field.clone(), proptest::option::of(-60i64..110), proptest::option::of(-60i64..110), any::<bool>(), proptest::option::of(1usize..7))
            .prop_map(|(p, f, a, b, d, l)| Action::Items(p, f, a, b, d, l)),
        2 => (parent, field, -60i64..110, -60i64..110).prop_map(|(p, f, a, b)| Action::Summary(p, f, a, b)),
    ]
}

fn parent_key(p: u8) -> Vec<u8> {
    format!("parent{p}").into_bytes()
}

fn spec() -> CollectionSpec {
    FIELDS
        .iter()
        .fold(CollectionSpec::new("docs"), |spec, (field, layout)| {
            spec.array(*field, *layout)
        })
}

/// Opens the database, creating the collection the first time (its layouts change later).
fn open(storage: &Arc<dyn Storage>) -> Db {
    let db = Db::open_with_storage(storage.clone(), small_options(Durability::Buffered)).unwrap();
    if db.collection("docs").is_err() {
        db.create_collection(spec()).unwrap();
    }
    db
}

fn model_push(
    array: &mut ModelArray,
    layout: Layout,
    key: Option<i64>,
    value: Option<f64>,
    payload: Vec<u8>,
) {
    let key = key.unwrap_or_else(|| array.items.iter().map(|i| i.0).max().map_or(0, |m| m + 1));
    let seq = array.next_seq;
    array.next_seq += 1;
    model_migrate(array, layout);
    place(array, layout, (key, seq, value, payload));
}

/// Moves `array` to `layout` as a layout change moves a parent: every item placed again in
/// push order, each keeping its push sequence.
fn model_migrate(array: &mut ModelArray, layout: Layout) {
    if array.under == Some(layout) {
        return;
    }
    let mut items = std::mem::take(&mut array.items);
    items.sort_by_key(|i| i.1);
    *array = ModelArray {
        next_seq: array.next_seq,
        under: Some(layout),
        ..ModelArray::default()
    };
    for item in items {
        place(array, layout, item);
    }
}

/// Places a pushed item under `layout`.
fn place(array: &mut ModelArray, layout: Layout, item: ModelItem) {
    let (key, seq) = (item.0, item.1);
    // Outlier: inline while under the cap and nothing of the array is outside the record.
    if let Layout::Outlier { inline_cap } = layout
        && array.outlier_inline.len() < inline_cap as usize
        && array.outlier_inline.len() == array.items.len()
    {
        array.outlier_inline.push(seq);
    }
    array.items.push(item);
    if let Layout::Bucket { max_items, span } = layout {
        let span = span.unwrap();
        let start_of = |k: i64| k.div_euclid(span) * span;
        match &mut array.bucket {
            None => array.bucket = Some((start_of(key), vec![seq])),
            Some((start, _)) if key < *start => {}
            Some((start, seqs)) => {
                let outside = key >= *start + span;
                if outside || seqs.len() >= max_items as usize {
                    if !seqs.is_empty() {
                        array.sealed.push(seqs.clone());
                    }
                    *start = if outside { start_of(key) } else { key };
                    *seqs = vec![seq];
                } else {
                    seqs.push(seq);
                }
            }
        }
    }
}

/// Whether some of the array's items are outside the record under the layout it is placed
/// under.
fn has_overflow(array: &ModelArray) -> bool {
    let layout = array.under.unwrap_or(Layout::Embed);
    array.items.len() > expected_inline(array, layout).len()
}

/// The items a layout keeps inline, in key order.
fn expected_inline(array: &ModelArray, layout: Layout) -> Vec<ModelItem> {
    let mut sorted = array.items.clone();
    sorted.sort_by_key(|i| (i.0, i.1));
    let mut inline: Vec<ModelItem> = match layout {
        Layout::Embed => sorted,
        Layout::Reference => Vec::new(),
        Layout::Subset { keep } => sorted[sorted.len().saturating_sub(keep as usize)..].to_vec(),
        Layout::Outlier { .. } => array
            .items
            .iter()
            .filter(|i| array.outlier_inline.contains(&i.1))
            .cloned()
            .collect(),
        Layout::Bucket { .. } => {
            let seqs = array
                .bucket
                .as_ref()
                .map(|b| b.1.clone())
                .unwrap_or_default();
            sorted.into_iter().filter(|i| seqs.contains(&i.1)).collect()
        }
    };
    inline.sort_by_key(|i| (i.0, i.1));
    inline
}

/// The key a remove action targets: one an item has, picked by `selector`, or a key none has.
fn removal_key(array: Option<&ModelArray>, selector: u16) -> i64 {
    match array {
        Some(array) if !array.items.is_empty() && !selector.is_multiple_of(8) => {
            array.items[selector as usize % array.items.len()].0
        }
        _ => 10_000 + i64::from(selector),
    }
}

fn model_remove(array: &mut ModelArray, key: i64) {
    model_remove_where(array, |item_key, _| item_key == key);
}

/// Removes the items `gone(key, seq)` names, wherever the model keeps them.
fn model_remove_where(array: &mut ModelArray, gone: impl Fn(i64, u64) -> bool) {
    let gone: Vec<u64> = array
        .items
        .iter()
        .filter(|i| gone(i.0, i.1))
        .map(|i| i.1)
        .collect();
    array.items.retain(|i| !gone.contains(&i.1));
    array.outlier_inline.retain(|seq| !gone.contains(seq));
    if let Some((_, seqs)) = &mut array.bucket {
        seqs.retain(|seq| !gone.contains(seq));
    }
    for sealed in &mut array.sealed {
        sealed.retain(|seq| !gone.contains(seq));
    }
    array.sealed.retain(|sealed| !sealed.is_empty());
}

/// Drops the model's sealed buckets whose newest key is below `before`; returns the buckets
/// and items dropped.
fn model_expire(array: &mut ModelArray, before: i64) -> (u64, u64) {
    let key_of = |seq: u64| array.items.iter().find(|i| i.1 == seq).map(|i| i.0);
    let (expired, kept): (Vec<Vec<u64>>, Vec<Vec<u64>>) = array
        .sealed
        .iter()
        .cloned()
        .partition(|sealed| sealed.iter().filter_map(|s| key_of(*s)).max() < Some(before));
    array.sealed = kept;
    let buckets = expired.len() as u64;
    let gone: Vec<u64> = expired.into_iter().flatten().collect();
    let before_len = array.items.len();
    array.items.retain(|i| !gone.contains(&i.1));
    (buckets, (before_len - array.items.len()) as u64)
}

fn summary_of(items: &[&ModelItem]) -> Summary {
    let mut summary = Summary::default();
    for item in items {
        summary.add(&skewdb::Item::new(item.0, &[item.2], item.3.clone()));
    }
    summary
}

fn same(a: &Summary, b: &Summary) -> bool {
    a.items == b.items
        && a.count == b.count
        && a.min == b.min
        && a.max == b.max
        && a.min_key == b.min_key
        && a.max_key == b.max_key
        && (a.sum - b.sum).abs() < 1e-9
}

fn run(actions: Vec<Action>) -> Result<(), TestCaseError> {
    let storage: Arc<dyn Storage> = Arc::new(SimStorage::new());
    let mut db = open(&storage);
    let mut model: BTreeMap<u8, ModelParent> = BTreeMap::new();
    // Each field's layout, and the one it is moving from while a layout change runs.
    let mut layouts = FIELDS.map(|(_, layout)| layout);
    let mut previous: [Option<Layout>; 5] = [None; 5];
    for action in actions {
        let docs = db.collection("docs").unwrap();
        match action {
            Action::Put(p, body) => {
                let mut batch = db.batch();
                batch.put("docs", parent_key(p), &body);
                batch.commit().unwrap();
                model.entry(p).or_default().body = body;
            }
            Action::Push(p, f, key, value, len) => {
                let value = value.map(f64::from);
                let payload = vec![len; len as usize];
                let mut item = NewItem::new(&payload);
                if let Some(key) = key {
                    item = item.key(key);
                }
                if let Some(value) = value {
                    item = item.value(value);
                }
                let mut batch = db.batch();
                batch.push("docs", parent_key(p), FIELDS[f].0, item);
                batch.commit().unwrap();
                model_push(
                    &mut model.entry(p).or_default().arrays[f],
                    layouts[f],
                    key,
                    value,
                    payload,
                );
            }
            Action::Delete(p) => {
                let mut batch = db.batch();
                batch.delete("docs", parent_key(p));
                batch.commit().unwrap();
                model.remove(&p);
            }
            Action::Remove(p, f, selector) => {
                let key = removal_key(model.get(&p).map(|m| &m.arrays[f]), selector);
                let mut batch = db.batch();
                batch.remove("docs", parent_key(p), FIELDS[f].0, key);
                batch.commit().unwrap();
                if let Some(parent) = model.get_mut(&p) {
                    model_migrate(&mut parent.arrays[f], layouts[f]);
                    model_remove(&mut parent.arrays[f], key);
                }
            }
            Action::RemoveItem(p, f, selector) => {
                // An item of the model, or an identity no item has.
                let picked = model.get(&p).and_then(|m| {
                    let items = &m.arrays[f].items;
                    (!items.is_empty()).then(|| items[selector as usize % items.len()].clone())
                });
                let id = picked.map_or(
                    skewdb::Cursor {
                        key: 7,
                        seq: u64::MAX,
                    },
                    |i| skewdb::Cursor { key: i.0, seq: i.1 },
                );
                let mut batch = db.batch();
                batch.remove_item("docs", parent_key(p), FIELDS[f].0, id);
                batch.commit().unwrap();
                if let Some(parent) = model.get_mut(&p) {
                    model_migrate(&mut parent.arrays[f], layouts[f]);
                    model_remove_where(&mut parent.arrays[f], |key, seq| {
                        (key, seq) == (id.key, id.seq)
                    });
                }
            }
            Action::PushesThenRemove(p, f, count, selector) => {
                let mut batch = db.batch();
                let parent = model.entry(p).or_default();
                model_migrate(&mut parent.arrays[f], layouts[f]);
                for n in 0..count {
                    let payload = vec![n; 30];
                    batch.push("docs", parent_key(p), FIELDS[f].0, NewItem::new(&payload));
                    model_push(&mut parent.arrays[f], layouts[f], None, None, payload);
                }
                let key = removal_key(Some(&parent.arrays[f]), selector);
                batch.remove("docs", parent_key(p), FIELDS[f].0, key);
                batch.commit().unwrap();
                model_remove(&mut parent.arrays[f], key);
            }
            Action::Expire(p, f, before) => {
                let field = FIELDS[f].0;
                let reported = match p {
                    Some(p) => {
                        let mut batch = db.batch();
                        batch.expire_buckets("docs", parent_key(p), field, before);
                        batch.commit().map(|_| None)
                    }
                    None => docs.expire_buckets(field, before).map(Some),
                };
                if !matches!(layouts[f], Layout::Bucket { .. }) {
                    prop_assert!(reported.is_err(), "expiry of {:?}", layouts[f]);
                    continue;
                }
                let reported = reported.unwrap();
                let mut dropped = (0, 0);
                for (q, parent) in model.iter_mut() {
                    let array = &mut parent.arrays[f];
                    // Expiry of every parent visits those with items outside the record.
                    if p.is_none_or(|p| p == *q) && (p.is_some() || has_overflow(array)) {
                        model_migrate(array, layouts[f]);
                        let (buckets, items) = model_expire(array, before);
                        dropped = (dropped.0 + buckets, dropped.1 + items);
                    }
                }
                if let Some(reported) = reported {
                    prop_assert_eq!((reported.buckets, reported.items), dropped, "what expired");
                }
            }
            Action::SetLayout(f, choice) => {
                let layout = LAYOUT_CHOICES[choice];
                let result = db.alter_collection(
                    "docs",
                    skewdb::Alteration::new().set_layout(FIELDS[f].0, layout),
                );
                if layout == layouts[f] {
                    prop_assert!(result.is_ok(), "{:?}", result);
                } else if previous[f].is_some_and(|from| from != layout) {
                    // A third layout while one move runs.
                    prop_assert!(
                        matches!(result, Err(skewdb::Error::InvalidSchema { .. })),
                        "{:?}",
                        result
                    );
                } else {
                    prop_assert!(result.is_ok(), "{:?}", result);
                    previous[f] = Some(layouts[f]);
                    layouts[f] = layout;
                }
            }
            Action::Checkpoint => db.checkpoint().unwrap(),
            Action::ClearField(f) => {
                let (field, layout) = (FIELDS[f].0, layouts[f]);
                let alteration = skewdb::Alteration::new()
                    .drop_array(field)
                    .add_array(field, layout);
                db.alter_collection("docs", alteration).unwrap();
                for parent in model.values_mut() {
                    parent.arrays[f] = ModelArray::default();
                }
                previous[f] = None;
            }
            Action::Compact => {
                db.compact().unwrap();
                // It finishes every layout change: each parent moved.
                for f in 0..FIELDS.len() {
                    if previous[f].take().is_some() {
                        for parent in model.values_mut() {
                            model_migrate(&mut parent.arrays[f], layouts[f]);
                        }
                    }
                }
                prop_assert!(db.stats().unwrap().migrations.is_empty());
            }
            Action::Reopen => {
                drop(docs);
                drop(db);
                db = open(&storage);
                continue;
            }
            Action::Items(p, f, low, high, descending, limit) => {
                let range = (
                    low.map_or(Bound::Unbounded, Bound::Included),
                    high.map_or(Bound::Unbounded, Bound::Excluded),
                );
                let mut query = ItemQuery::new().range(range);
                if descending {
                    query = query.order(Order::Descending);
                }
                let Some(parent) = model.get(&p) else {
                    prop_assert!(
                        docs.items(parent_key(p), FIELDS[f].0, &query)
                            .unwrap()
                            .is_none()
                    );
                    continue;
                };
                let mut expected: Vec<ModelItem> = parent.arrays[f]
                    .items
                    .iter()
                    .filter(|i| low.is_none_or(|l| i.0 >= l) && high.is_none_or(|h| i.0 < h))
                    .cloned()
                    .collect();
                expected.sort_by_key(|i| (i.0, i.1));
                if descending {
                    expected.reverse();
                }
                // Page through with the limit; the pages together must be the whole answer.
                let mut got = Vec::new();
                let mut ids = Vec::new();
                let mut page_query = query.clone();
                if let Some(limit) = limit {
                    page_query = page_query.limit(limit);
                }
                for _ in 0..200 {
                    let page = docs
                        .items(parent_key(p), FIELDS[f].0, &page_query)
                        .unwrap()
                        .unwrap();
                    if let Some(limit) = limit {
                        prop_assert!(page.items.len() <= limit);
                    }
                    prop_assert_eq!(page.items.len(), page.ids.len());
                    // The borrowed read lends the same items in place, and the same cursor.
                    let mut lent = Vec::new();
                    let visited = docs
                        .for_each_item(parent_key(p), FIELDS[f].0, &page_query, |item| {
                            // What the item lends in place is what its owned copy holds.
                            let owned = item.to_item();
                            let in_place = (item.key(), item.value(), item.payload().to_vec());
                            lent.push((item.id(), owned, in_place));
                        })
                        .unwrap()
                        .unwrap();
                    for (_, owned, in_place) in &lent {
                        prop_assert_eq!(
                            in_place,
                            &(owned.key, owned.value, owned.payload.to_vec())
                        );
                    }
                    let lent_ids: Vec<Cursor> = lent.iter().map(|(id, ..)| *id).collect();
                    prop_assert_eq!(&lent_ids, &page.ids);
                    let lent_items: Vec<Item> = lent.into_iter().map(|(_, item, _)| item).collect();
                    prop_assert_eq!(&lent_items, &page.items);
                    prop_assert_eq!(visited.items, page.items.len());
                    prop_assert_eq!(visited.next, page.next);
                    // A visitor that stops at the first item is told where to go on.
                    if page.items.len() > 1 {
                        let stopped = docs
                            .for_each_item(parent_key(p), FIELDS[f].0, &page_query, |_| {
                                ControlFlow::Break(())
                            })
                            .unwrap()
                            .unwrap();
                        prop_assert_eq!(stopped.items, 1);
                        prop_assert_eq!(stopped.next, Some(page.ids[0]));
                    }
                    ids.extend(page.ids.iter().map(|id| (id.key, id.seq)));
                    got.extend(page.items);
                    match page.next {
                        Some(cursor) => page_query = page_query.clone().after(cursor),
                        None => break,
                    }
                }
                // Each item's identity is the model's (key, push sequence).
                let expected_ids: Vec<(i64, u64)> = expected.iter().map(|i| (i.0, i.1)).collect();
                prop_assert_eq!(&ids, &expected_ids);
                let got: Vec<(i64, Option<f64>, Vec<u8>)> = got
                    .into_iter()
                    .map(|i| (i.key, i.value, i.payload.to_vec()))
                    .collect();
                let expected: Vec<(i64, Option<f64>, Vec<u8>)> =
                    expected.into_iter().map(|i| (i.0, i.2, i.3)).collect();
                prop_assert_eq!(got, expected);
            }
            Action::Summary(p, f, low, high) => {
                let got = docs.summary(parent_key(p), FIELDS[f].0, low..high).unwrap();
                let Some(parent) = model.get(&p) else {
                    prop_assert!(got.is_none());
                    continue;
                };
                let items: Vec<&ModelItem> = parent.arrays[f]
                    .items
                    .iter()
                    .filter(|i| i.0 >= low && i.0 < high)
                    .collect();
                let expected = summary_of(&items);
                let got = got.unwrap();
                prop_assert!(same(&got, &expected), "{:?} != {:?}", got, expected);
            }
        }
        // After every action: every parent's document agrees with the model.
        let docs = db.collection("docs").unwrap();
        for (p, parent) in &model {
            let document = docs.get(parent_key(*p)).unwrap().unwrap();
            prop_assert_eq!(document.body(), parent.body.as_slice());
            for (f, (field, _)) in FIELDS.iter().enumerate() {
                let array = document.array(field).unwrap();
                let model_array = &parent.arrays[f];
                let all: Vec<&ModelItem> = model_array.items.iter().collect();
                prop_assert_eq!(array.total, all.len() as u64);
                prop_assert!(same(&array.summary, &summary_of(&all)));
                let inline: Vec<(i64, Vec<u8>)> = array
                    .inline
                    .iter()
                    .map(|i| (i.key, i.payload.to_vec()))
                    .collect();
                let layout = model_array.under.unwrap_or(layouts[f]);
                let expected: Vec<(i64, Vec<u8>)> = expected_inline(model_array, layout)
                    .into_iter()
                    .map(|i| (i.0, i.3))
                    .collect();
                prop_assert_eq!(&inline, &expected, "inline of {} ({:?})", field, layout);
                prop_assert_eq!(array.has_overflow, all.len() > expected.len());
            }
        }
        let stored: Vec<Vec<u8>> = docs
            .scan(..)
            .unwrap()
            .map(|d| d.unwrap().key().to_vec())
            .collect();
        prop_assert_eq!(
            stored,
            model.keys().map(|p| parent_key(*p)).collect::<Vec<_>>()
        );
        for (f, (field, _)) in FIELDS.iter().enumerate() {
            let outliers: Vec<Vec<u8>> = docs
                .outliers(field)
                .unwrap()
                .iter()
                .map(|o| o.key.to_vec())
                .collect();
            let expected: Vec<Vec<u8>> = model
                .iter()
                .filter(|(_, parent)| has_overflow(&parent.arrays[f]))
                .map(|(p, _)| parent_key(*p))
                .collect();
            prop_assert_eq!(outliers, expected);
        }
    }
    db.verify().unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arrays_match_model(actions in proptest::collection::vec(action(), 1..120)) {
        run(actions)?;
    }
}
