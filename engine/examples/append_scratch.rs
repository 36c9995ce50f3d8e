use skewdb::*;
fn main() {
    let dir = tempfile::tempdir_in(".").unwrap();
    let db = Db::open(dir.path(), Options::new()).unwrap();
    db.create_collection(CollectionSpec::new("p").array("r", Layout::Subset { keep: 5 }))
        .unwrap();
    let n = 3000;
    let t = std::time::Instant::now();
    for i in 0..n {
        let mut b = db.batch();
        b.push(
            "p",
            format!("k{}", i % 50),
            "r",
            NewItem::new(vec![b'x'; 300]).key(i),
        );
        b.commit().unwrap();
    }
    println!("{:.0} appends/s", n as f64 / t.elapsed().as_secs_f64());
}
