//! Followers under `Outlier`: most users have a handful of followers, one celebrity has
//! two hundred thousand. Profiles stay one small record each; the celebrity's followers
//! overflow to cold chunks, flagged, and every read still sees them all.

use serde::{Deserialize, Serialize};
use skewdb::typed::{ItemFields, Json};
use skewdb::{CollectionSpec, Db, Durability, ItemQuery, Layout, Options};

#[derive(Serialize, Deserialize)]
struct Profile {
    name: String,
}

#[derive(Serialize, Deserialize)]
struct Follower {
    user: u64,
    since: i64,
}

impl ItemFields for Follower {
    fn item_key(&self) -> Option<i64> {
        Some(self.since)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path(), Options::new().durability(Durability::Buffered))?;
    let spec =
        CollectionSpec::new("users").array("followers", Layout::Outlier { inline_cap: 1000 });
    let users = db.create_collection(spec)?.typed::<u64, Profile, Json>();
    let followers = users.array::<Follower>("followers")?;

    // A bulk load: buffered batches, then one sync for all of them.
    let mut batch = db.batch();
    for user in 1..=2_000u64 {
        users.put(
            &mut batch,
            &user,
            &Profile {
                name: format!("user {user}"),
            },
        )?;
        for n in 0..user % 7 {
            let follower = Follower {
                user: (user + n) % 2_000 + 1,
                since: n as i64,
            };
            followers.push(&mut batch, &user, &follower)?;
        }
    }
    users.put(
        &mut batch,
        &0,
        &Profile {
            name: "the celebrity".into(),
        },
    )?;
    for fan in 0..200_000u64 {
        let fan = Follower {
            user: fan % 2_000 + 1,
            since: fan as i64,
        };
        followers.push(&mut batch, &0, &fan)?;
        if batch.len() >= 20_000 {
            batch.commit()?;
        }
    }
    batch.commit()?;
    db.persist()?;

    // A profile read is one parent record, whatever the follower count.
    let celebrity = users.get(&0)?.ok_or("the celebrity is gone")?;
    let counted = celebrity
        .document
        .array("followers")
        .ok_or("no followers field")?;
    println!(
        "{}: {} followers, {} inline, overflowed: {}",
        celebrity.body.name,
        counted.total,
        counted.inline.len(),
        counted.has_overflow
    );
    let outliers = users.untyped().outliers("followers")?;
    println!("parents past the cap: {}", outliers.len());

    // Unfollow by follower id: find the item, remove that one item by its identity.
    let leaving = 1_234u64;
    let mut query = ItemQuery::new().limit(5_000);
    let found = loop {
        let page = followers.items(&0, &query)?.ok_or("no celebrity")?;
        if let Some(at) = page.items.iter().position(|f| f.user == leaving) {
            break Some(page.ids[at]);
        }
        match page.next {
            Some(next) => query = query.after(next),
            None => break None,
        }
    };
    let id = found.ok_or("user 1234 does not follow the celebrity")?;
    let mut batch = db.batch();
    followers.remove_item(&mut batch, &0, id);
    batch.commit()?;
    let after = users.get(&0)?.ok_or("the celebrity is gone")?;
    let total = after.document.array("followers").map_or(0, |a| a.total);
    println!("after one unfollow: {total} followers");
    assert_eq!(total, 199_999);
    Ok(())
}
