//! The commands that write to a collection's parents: put, push, remove, expire, del.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use skewdb::{ItemQuery, NewItem};
use skewdb_cli::failure::{self, Failure};
use skewdb_cli::item_key::ItemKeyArg;
use skewdb_cli::mapped::{Mapped, Stated, with_stated};

use super::*;

#[derive(Args)]
pub struct Put {
    #[command(flatten)]
    pub parent: ParentArgs,
    /// The body: an Extended JSON document (its key field added when absent); in a
    /// collection made with `create --bytes`, stored as its UTF-8 bytes.
    #[arg(required_unless_present = "body_file")]
    pub body: Option<String>,
    /// Read the body from this file instead, or from standard input with `-` (its bytes
    /// as they are: any size up to the 16 MiB record limit, any bytes).
    #[arg(long, value_name = "PATH|-", conflicts_with = "body")]
    pub body_file: Option<PathBuf>,
}

#[derive(Args)]
pub struct Push {
    #[command(flatten)]
    pub array: ArrayArgs,
    /// The item's payload: an Extended JSON array element (in a collection made with
    /// `create --bytes`, stored as its UTF-8 bytes). Optional: a bare reading is a key
    /// and a value.
    pub payload: Option<String>,
    /// Read the payload from this file instead, or from standard input with `-`.
    #[arg(long, value_name = "PATH|-", conflicts_with = "payload")]
    pub payload_file: Option<PathBuf>,
    /// The item's own key, a time or a sequence (default: the array's greatest key + 1);
    /// not the parent's KEY. A Bucket array with a span also takes a date (2024-01-03,
    /// 2024-01-03T12:00:00Z), as milliseconds since 1970, as every item key below.
    #[arg(long = "key", visible_alias = "item-key", allow_hyphen_values = true)]
    pub item_key: Option<ItemKeyArg>,
    /// The value of the array's first measure (a finite number).
    #[arg(long, allow_hyphen_values = true)]
    pub value: Option<f64>,
    /// The value of a named measure, NAME=V (a finite number); repeatable.
    #[arg(long = "measure", value_name = "NAME=V", allow_hyphen_values = true)]
    pub measures: Vec<String>,
    /// Create the parent (with an empty body) when it does not exist; without it a push
    /// to a missing parent is refused (`not_found`), so that a mistyped key makes nothing.
    #[arg(long)]
    pub upsert: bool,
}

#[derive(Args)]
pub struct Remove {
    #[command(flatten)]
    pub array: ArrayArgs,
    /// The key of the items to remove.
    #[arg(allow_hyphen_values = true)]
    pub item_key: ItemKeyArg,
}

#[derive(Args)]
pub struct Expire {
    /// The database directory.
    pub db: PathBuf,
    /// The collection.
    pub collection: String,
    /// The Bucket array field.
    pub field: String,
    /// Buckets whose newest item key is below this go.
    #[arg(allow_hyphen_values = true)]
    pub before: ItemKeyArg,
    /// Only this parent (base64 with --key-base64).
    #[arg(long)]
    pub key: Option<String>,
}

#[derive(Args)]
pub struct Del {
    #[command(flatten)]
    pub parent: ParentArgs,
}

pub fn put(args: Put, cx: &Context) -> Result<(), Failure> {
    let Put {
        parent,
        body,
        body_file,
    } = args;
    let json = cx.json;
    let keys = cx.keys;
    let body = given_bytes(body, body_file.as_deref())?;
    commit_one(&parent.db, &parent.collection, json, |batch, collection| {
        let key = keys.read_for(&parent.key, collection)?;
        let body = match Mapped::of(collection.spec()) {
            None => body,
            Some(mapped) => utf8("the body", body)
                .and_then(|body| skewdb_cli::mongo::value_arg("body", &body))
                .and_then(|body| mapped.body(&key, body))
                .map_err(Failure::invalid_input)?,
        };
        batch.put_in(collection, &key, body);
        Ok(())
    })?;
    Ok(())
}

pub fn push(args: Push, cx: &Context) -> Result<(), Failure> {
    let Push {
        array,
        payload,
        payload_file,
        item_key,
        value,
        measures,
        upsert,
    } = args;
    let json = cx.json;
    let keys = cx.keys;
    let payload = match (&payload, &payload_file) {
        (None, None) => None,
        _ => Some(given_bytes(payload, payload_file.as_deref())?),
    };
    let mut stated = Stated {
        item_key: None,
        value: value.map(|v| failure::finite(v, "--value")).transpose()?,
        measures: Vec::new(),
    };
    for given in &measures {
        let bad = || Failure::invalid_input(format!("--measure {given:?} is not NAME=V"));
        let (name, value) = given.split_once('=').ok_or_else(bad)?;
        let value: f64 = value.parse().map_err(|_| bad())?;
        let value = failure::finite(value, "--measure")?;
        stated.measures.push((name.to_string(), value));
    }
    commit_one(
        &array.parent.db,
        &array.parent.collection,
        json,
        |batch, c| {
            let key = keys.read_for(&array.parent.key, c)?;
            let field = c.array(&array.field)?;
            // The tool holds the database's lock: no other writer can make or
            // delete the parent between this look and the commit.
            if !upsert && c.get_projected(&key, &[])?.is_none() {
                return Err(Failure::new(
                    "not_found",
                    format!(
                        "no parent {:?} in {} (--upsert creates it)",
                        array.parent.key, array.parent.collection
                    ),
                ));
            }
            stated.item_key = item_key_of(item_key.as_ref(), &field)?;
            let item = match (Mapped::of(c.spec()), payload) {
                (None, payload) => with_stated(NewItem::new(payload.unwrap_or_default()), stated),
                (Some(mapped), None) => mapped
                    .bare_element(&array.field, &mut stated)
                    .and_then(|element| mapped.item(&array.field, &element, stated))
                    .map_err(Failure::invalid_input)?,
                (Some(mapped), Some(payload)) => utf8("the payload", payload)
                    .and_then(|text| skewdb_cli::mongo::value_arg("payload", &text))
                    .and_then(|element| mapped.item(&array.field, &element, stated))
                    .map_err(Failure::invalid_input)?,
            };
            batch.push_to(&field, &key, item);
            Ok(())
        },
    )?;
    Ok(())
}

pub fn remove(args: Remove, cx: &Context) -> Result<(), Failure> {
    let Remove { array, item_key } = args;
    let json = cx.json;
    let keys = cx.keys;
    let handle = open_existing(&array.parent.db)?;
    let collection = handle.collection(&array.parent.collection)?;
    let key = keys.read_for(&array.parent.key, &collection)?;
    let field = collection.array(&array.field)?;
    let item_key = item_key
        .resolve(field.spec())
        .map_err(Failure::invalid_input)?;
    let query = ItemQuery::new().range(item_key..=item_key);
    let removed = match collection.items(&key, &array.field, &query)? {
        Some(page) => page.items.len() as u64,
        None => return Err(not_found(&key)),
    };
    let mut batch = handle.batch();
    batch.remove_from(&field, &key, item_key);
    batch.commit()?;
    print_removed(removed, "item", json)?;
    Ok(())
}

pub fn expire(args: Expire, cx: &Context) -> Result<(), Failure> {
    let Expire {
        db,
        collection,
        field,
        before,
        key,
    } = args;
    let json = cx.json;
    let keys = cx.keys;
    let handle = open_existing(&db)?;
    let collection = handle.collection(&collection)?;
    let array = collection.array(&field)?;
    let before = before
        .resolve(array.spec())
        .map_err(Failure::invalid_input)?;
    let expired = match key {
        Some(key) => {
            let key = keys.read_for(&key, &collection)?;
            if collection.get_projected(&key, &[])?.is_none() {
                return Err(not_found(&key));
            }
            let mut batch = handle.batch();
            batch.expire_buckets_of(&array, &key, before);
            batch.commit_expiring()?
        }
        None => collection.expire_buckets(&field, before)?,
    };
    if json {
        print_value(&json!({
            "buckets": expired.buckets,
            "items": expired.items,
            "rolled_up": expired.rolled_up,
        }))?;
    } else if expired.rolled_up > 0 {
        out!(
            "dropped {} and {}, every one kept in rollups",
            counted(expired.buckets, "bucket"),
            counted(expired.items, "item")
        );
    } else {
        out!(
            "dropped {} holding {}",
            counted(expired.buckets, "bucket"),
            counted(expired.items, "item")
        );
    }
    Ok(())
}

pub fn del(args: Del, cx: &Context) -> Result<(), Failure> {
    let Del { parent } = args;
    let json = cx.json;
    let keys = cx.keys;
    let handle = open_existing(&parent.db)?;
    let collection = handle.collection(&parent.collection)?;
    let key = keys.read_for(&parent.key, &collection)?;
    // The writer's lock is held: nothing changes between the look and the delete.
    let removed = u64::from(collection.get_projected(&key, &[])?.is_some());
    let mut batch = handle.batch();
    batch.delete_in(&collection, &key);
    batch.commit()?;
    print_removed(removed, "parent", json)?;
    Ok(())
}

/// The bytes given as an argument or read from `file` (`-`: standard input).
pub(crate) fn given_bytes(given: Option<String>, file: Option<&Path>) -> Result<Vec<u8>, Failure> {
    use std::io::Read;
    match (given, file) {
        (Some(text), _) => Ok(text.into_bytes()),
        (None, Some(path)) if path == Path::new("-") => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|e| Failure::new("io", format!("cannot read standard input: {e}")))?;
            Ok(bytes)
        }
        (None, Some(path)) => std::fs::read(path)
            .map_err(|e| Failure::new("io", format!("cannot read {}: {e}", path.display()))),
        // clap requires one of the two.
        (None, None) => Err(Failure::usage("give the value or a file to read it from")),
    }
}

/// `bytes` as text, for Extended JSON.
pub(crate) fn utf8(what: &str, bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| format!("{what} is not UTF-8: {e}"))
}

/// What `del` and `remove` say: how many parents or items they removed.
pub(crate) fn print_removed(removed: u64, what: &str, json: bool) -> Result<(), Failure> {
    if json {
        print_value(&json!({"committed": 1, "removed": removed}))
    } else {
        let plural = if removed == 1 { "" } else { "s" };
        out!("removed {removed} {what}{plural}");
        Ok(())
    }
}

/// Commits one operation on `collection`, durably; `--json` prints the acknowledgement.
pub(crate) fn commit_one(
    db: &Path,
    collection: &str,
    json: bool,
    add: impl FnOnce(&mut Batch, &skewdb::Collection) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let handle = open_existing(db)?;
    let collection = handle.collection(collection)?;
    let mut batch = handle.batch();
    add(&mut batch, &collection)?;
    batch.commit()?;
    if json {
        print_value(&json!({"committed": 1}))?;
    }
    Ok(())
}
