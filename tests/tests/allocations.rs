//! Allocations per item of the array reads, counted by a global allocator on the reading
//! thread: the borrowed read (`for_each_item`, untyped and typed) allocates nothing per
//! item on any layout, inline or cold, forward or newest first, with or without a limit;
//! the owned read (`items`) allocates its page's two vectors and nothing per item.
//!
//! `cargo test -p skewdb-tests --test allocations -- --nocapture` prints the counts.

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::cell::Cell;

use skewdb::{Collection, CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};

/// Counts the allocations (and reallocations) of each thread.
struct Counting;

thread_local! {
    /// Const-initialized and without a destructor: the allocator may touch it at any time.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: a thread being torn down has no counter left; nothing to count there.
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        count_one();
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        count_one();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The allocations `read` makes on this thread.
fn allocations(read: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    read();
    ALLOCATIONS.with(Cell::get) - before
}

/// Items per parent: enough for every layout to hold most of them cold (several chunks
/// and a tail), and for the larger reads to lend 100 times the items of the small one.
const ITEMS: i64 = 2_000;

fn layouts() -> Vec<(&'static str, Layout)> {
    vec![
        ("embed", Layout::Embed),
        ("reference", Layout::Reference),
        ("subset", Layout::Subset { keep: 20 }),
        ("outlier", Layout::Outlier { inline_cap: 50 }),
        (
            "bucket",
            Layout::Bucket {
                max_items: 60,
                span: Some(3_600),
            },
        ),
    ]
}

fn loaded(dir: &std::path::Path) -> (Db, Collection) {
    let db = Db::open(dir, Options::new().background(false)).unwrap();
    let spec = layouts()
        .into_iter()
        .fold(CollectionSpec::new("p"), |spec, (field, layout)| {
            spec.array(field, layout)
        });
    let coll = db.create_collection(spec).unwrap();
    for start in (0..ITEMS).step_by(500) {
        let mut batch = db.batch();
        for key in start..start + 500 {
            for (field, _) in layouts() {
                // Readings a minute apart, each with a value and a payload.
                let item = NewItem::new(format!("payload {key}"))
                    .key(key * 60)
                    .value(key as f64);
                batch.push("p", "parent", field, item);
            }
        }
        batch.commit().unwrap();
    }
    db.checkpoint().unwrap();
    (db, coll)
}

/// What a read of many chunks may allocate beyond a read of one: the chunk index walk's
/// steps to further leaves, not its items.
const INDEX_WALK_ALLOCATIONS: u64 = 2;

/// The queries each read is counted with, as (name, small, large): the large one lends 100
/// times the items of the small one (or more).
fn queries() -> Vec<(&'static str, ItemQuery, ItemQuery)> {
    let last = ITEMS * 60;
    vec![
        (
            "range",
            ItemQuery::new().range(last - 20 * 60..last),
            ItemQuery::new().range(0..last),
        ),
        (
            "old range",
            ItemQuery::new().range(600..1_800),
            ItemQuery::new().range(600..last),
        ),
        (
            "newest first, limited",
            ItemQuery::new().descending().limit(10),
            ItemQuery::new().descending().limit(1_000),
        ),
        (
            "limited",
            ItemQuery::new().limit(10),
            ItemQuery::new().limit(1_000),
        ),
        (
            "newest first",
            ItemQuery::new().descending().range(last - 20 * 60..),
            ItemQuery::new().descending(),
        ),
    ]
}

/// The reads' allocations for the small and the large query, after warm-up reads of each
/// (which load what the reads need into the cache and the thread's buffers).
fn counted(
    mut read: impl FnMut(&ItemQuery) -> usize,
    small: &ItemQuery,
    large: &ItemQuery,
) -> [(usize, u64); 2] {
    [small, large].map(|query| {
        // The first read loads the record into the record tier; the second, its first hit
        // there, may build what the tier keeps beside it.
        read(query);
        read(query);
        let mut items = 0;
        let count = allocations(|| items = read(query));
        (items, count)
    })
}

/// Reads every layout's array with each query pair through `read` (which returns the items
/// it read) and checks that a hundred times the items cost no more allocations, but for a
/// step or two more of the walk over the chunk index (its cursor's stack when it climbs to
/// a further index leaf).
fn check_nothing_per_item(read: impl Fn(&Collection, &str, &ItemQuery) -> usize) {
    let dir = tempfile::tempdir().unwrap();
    let (_db, coll) = loaded(dir.path());
    for (field, layout) in layouts() {
        for (name, small, large) in queries() {
            let read = |query: &ItemQuery| read(&coll, field, query);
            let [(few, few_allocations), (many, many_allocations)] = counted(read, &small, &large);
            println!(
                "{layout:?} {name}: {few} items {few_allocations} allocations, \
                 {many} items {many_allocations} allocations"
            );
            assert!(
                many >= 50 * few,
                "{field} {name}: {many} items against {few}"
            );
            assert!(
                many_allocations <= few_allocations + INDEX_WALK_ALLOCATIONS,
                "{field} {name}: allocations grew with the items read"
            );
        }
    }
}

#[test]
fn a_borrowed_read_allocates_nothing_per_item() {
    check_nothing_per_item(|coll, field, query| {
        let mut sum = 0.0;
        let mut bytes = 0;
        let visited = coll
            .for_each_item("parent", field, query, |item| {
                sum += item.value().unwrap_or(0.0);
                bytes += item.payload().len();
            })
            .unwrap()
            .unwrap();
        assert!(sum > 0.0 && bytes > 0);
        visited.items
    });
}

/// The owned page: its two vectors, and nothing per item (each payload shares the buffer
/// it was read from).
#[test]
fn an_owned_read_allocates_its_page_and_nothing_per_item() {
    check_nothing_per_item(|coll, field, query| {
        let page = coll.items("parent", field, query).unwrap().unwrap();
        page.items.len()
    });
}
