//! Reviews under `Subset`: a product page shows the five newest reviews and the average
//! rating from one parent read; "show all" pages through the full history, newest first,
//! at one consistent version.

use serde::{Deserialize, Serialize};
use skewdb::typed::{ItemFields, Json};
use skewdb::{CollectionSpec, Db, ItemQuery, Layout, Options};

#[derive(Serialize, Deserialize)]
struct Product {
    name: String,
    price_cents: u32,
}

#[derive(Serialize, Deserialize)]
struct Review {
    posted: i64,
    stars: u8,
    text: String,
}

impl ItemFields for Review {
    fn item_key(&self) -> Option<i64> {
        Some(self.posted)
    }

    fn item_value(&self) -> Option<f64> {
        Some(f64::from(self.stars))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path(), Options::new())?;
    let spec = CollectionSpec::new("products").array("reviews", Layout::Subset { keep: 5 });
    let products = db.create_collection(spec)?.typed::<String, Product, Json>();
    let reviews = products.array::<Review>("reviews")?;

    let mut batch = db.batch();
    let kettle = Product {
        name: "Kettle".into(),
        price_cents: 3_999,
    };
    products.put(&mut batch, "kettle", &kettle)?;
    for posted in 0..120u8 {
        let review = Review {
            posted: i64::from(posted),
            stars: posted % 5 + 1,
            text: format!("review number {posted}"),
        };
        reviews.push(&mut batch, "kettle", &review)?;
    }
    batch.commit()?;

    // The product page: body, five newest reviews and the average, from one record.
    let page = products.get("kettle")?.ok_or("no kettle")?;
    let newest = reviews.inline(&page.document)?;
    let summary = page
        .document
        .array("reviews")
        .map(|a| a.summary.clone())
        .ok_or("no reviews")?;
    println!(
        "{} at {} cents: {} reviews, {:.2} stars on average",
        page.body.name,
        page.body.price_cents,
        summary.items,
        summary.mean().unwrap_or(0.0)
    );
    for review in newest.iter().rev() {
        println!("  {} stars: {}", review.stars, review.text);
    }

    // "Show all", twenty a page, newest first, at one version however reviews arrive.
    let snapshot = db.snapshot();
    let history = snapshot.collection("products")?;
    let mut shown = 0;
    let mut query = ItemQuery::new().descending().limit(20);
    loop {
        let page = history
            .items("kettle", "reviews", &query)?
            .ok_or("no kettle")?;
        shown += page.items.len();
        let mut batch = db.batch(); // a review posted while the reader pages
        let late = Review {
            posted: 1_000 + shown as i64,
            stars: 5,
            text: "late".into(),
        };
        reviews.push(&mut batch, "kettle", &late)?;
        batch.commit()?;
        match page.next {
            Some(next) => query = query.after(next),
            None => break,
        }
    }
    println!("show all: {shown} reviews, as of the snapshot");
    assert_eq!(shown, 120);
    let now = products.get("kettle")?.ok_or("no kettle")?;
    let total = now.document.array("reviews").map_or(0, |a| a.total);
    println!("reviews now: {total}");
    Ok(())
}
