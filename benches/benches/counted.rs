//! A fixed workload to count instructions of, under `valgrind --tool=callgrind`, where
//! timings on a shared machine drift: `counted GETS COMMITS PUSHES` loads 100,000 parents of
//! 100-byte bodies and 1,000 parents with a `Subset { keep: 5 }` array of 10 valued items
//! (`Buffered`, no maintenance thread), then does GETS `get`s of random parents, COMMITS
//! one-put commits, PUSHES one-push commits (a valued item to a random array) and, with a
//! fourth number, SUMMARIES ranged summaries (items 2 to 7 of a random array: some inline,
//! some not; the loaded items only, taken before the pushes). A figure
//! is a count less the count of `counted 0 0 0` (the load alone), divided by the number of
//! operations. It uses only API older than the figures it gave, so that the same file
//! builds against an earlier commit (see BENCHMARKS.md).

use skewdb::{CollectionSpec, Db, Durability, Layout, NewItem, Options};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(|a| a.parse().expect("GETS COMMITS PUSHES [SUMMARIES]"))
        .collect();
    let (gets, commits, pushes, summaries) = match args[..] {
        [gets, commits, pushes] => (gets, commits, pushes, 0),
        [gets, commits, pushes, summaries] => (gets, commits, pushes, summaries),
        _ => {
            eprintln!("usage: counted GETS COMMITS PUSHES [SUMMARIES]");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let options = Options::new()
        .durability(Durability::Buffered)
        .background(false);
    let db = Db::open(dir.path(), options).expect("open");
    db.create_collection(CollectionSpec::new("c"))
        .expect("create");
    let subset = Layout::Subset { keep: 5 };
    db.create_collection(CollectionSpec::new("p").array("reviews", subset))
        .expect("create");
    let body = vec![b'x'; 100];
    for chunk in 0..100u64 {
        let mut batch = db.batch();
        for i in 0..1000u64 {
            batch.put("c", format!("k{:08}", chunk * 1000 + i), &body);
        }
        batch.commit().expect("load");
    }
    let mut batch = db.batch();
    for p in 0..1000u64 {
        for i in 0..10 {
            let item = NewItem::new("a review").key(i).value(i as f64);
            batch.push("p", format!("p{p:04}"), "reviews", item);
        }
    }
    batch.commit().expect("load");
    db.checkpoint().expect("checkpoint");
    let c = db.collection("c").expect("collection");
    let mut x = 12345u64;
    let mut next = move |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let mut found = 0u64;
    for _ in 0..gets {
        let key = format!("k{:08}", next(100_000));
        found += c
            .get(key)
            .expect("get")
            .map_or(0, |d| d.body().len() as u64);
    }
    let p = db.collection("p").expect("collection");
    for _ in 0..summaries {
        let key = format!("p{:04}", next(1000));
        let summary = p.summary(key, "reviews", 2..8).expect("summary");
        found += summary.map_or(0, |s| s.count);
    }
    for i in 0..commits {
        let mut batch = db.batch();
        batch.put("c", format!("n{i:08}"), &body);
        batch.commit().expect("commit");
    }
    for i in 0..pushes {
        let mut batch = db.batch();
        let item = NewItem::new("a review").key(100 + i as i64).value(4.0);
        batch.push("p", format!("p{:04}", next(1000)), "reviews", item);
        batch.commit().expect("push");
    }
    println!("{found}");
}
