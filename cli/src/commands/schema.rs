//! The commands that make and change collections: create, collections, drop, alter.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use skewdb::{Db, Options};
use skewdb_cli::failure::Failure;
use skewdb_cli::text;

use super::*;

#[derive(Args)]
pub struct Create {
    /// The database directory (made when it does not exist).
    pub db: PathBuf,
    /// The collection's name.
    #[arg(long)]
    pub collection: String,
    /// A collection of the application's own bytes (bodies and payloads stored as they
    /// are given), not of documents.
    #[arg(long, conflicts_with_all = ["key_field", "item_keys"])]
    pub bytes: bool,
    /// The body field whose value is a document's key: a put adds it to the body, an
    /// export writes it back.
    #[arg(long, default_value = "_id")]
    pub key_field: String,
    /// The element field (a date or an integer) that keys each item: F for every array,
    /// or ARRAY=F for one (default: the key given with push, kept beside the element).
    #[arg(long = "item-key", value_name = "[ARRAY=]F")]
    pub item_keys: Vec<String>,
    /// An array field and its layout: FIELD=embed|reference|subset:N|outlier:N|bucket:N[:SPAN]
    /// (SPAN in key units, or a duration such as 1h: a time series keyed by milliseconds)
    #[arg(long = "array", value_name = "FIELD=LAYOUT")]
    pub arrays: Vec<String>,
    /// The named measures of an array field (up to 8), in order: FIELD=NAME,NAME,...
    /// (default: one, "value", given with push --value). In a collection of documents
    /// they are its elements' fields of those names.
    #[arg(long = "measures", value_name = "FIELD=NAMES")]
    pub measures: Vec<String>,
    /// Keep, when buckets of this Bucket array expire, one summary per window of SPAN
    /// of what they drop: FIELD=SPAN (in the keys' units, or a duration such as 1h
    /// where the array's keys are times).
    #[arg(long = "rollup", value_name = "FIELD=SPAN")]
    pub rollups: Vec<String>,
}

#[derive(Args)]
pub struct Collections {
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args)]
pub struct Drop {
    #[command(flatten)]
    pub db: DbArg,
    /// The collection.
    pub collection: String,
}

#[derive(Args)]
pub struct Alter {
    #[command(flatten)]
    pub db: DbArg,
    /// The collection.
    pub collection: String,
    /// Its new name.
    #[arg(long, group = "change", value_name = "NEW")]
    pub rename: Option<String>,
    /// An array field to add, empty in every parent: FIELD=LAYOUT.
    #[arg(long = "add-array", group = "change", value_name = "FIELD=LAYOUT")]
    pub add_arrays: Vec<String>,
    /// An array field to drop, with every item it holds.
    #[arg(long = "drop-array", group = "change", value_name = "FIELD")]
    pub drop_arrays: Vec<String>,
    /// A measure to add to an array field (items already stored have no value of it):
    /// FIELD=NAME.
    #[arg(long = "add-measure", group = "change", value_name = "FIELD=NAME")]
    pub add_measures: Vec<String>,
    /// A new layout for an array field, FIELD=LAYOUT: committed at once, every parent
    /// then moved in the background while reads and writes go on (setting the layout it
    /// moves from cancels a move).
    #[arg(long = "set-layout", group = "change", value_name = "FIELD=LAYOUT")]
    pub set_layouts: Vec<String>,
    /// Rollups of what expiries drop from a Bucket array, FIELD=SPAN (key units, or a
    /// duration such as 1d on a time series): set on an array without them, or widened
    /// to a multiple of its span; rollups already stored keep theirs.
    #[arg(long = "set-rollup", group = "change", value_name = "FIELD=SPAN")]
    pub set_rollups: Vec<String>,
    /// Return once every parent has moved (with a progress bar on a terminal), not as
    /// soon as the change is committed.
    #[arg(long)]
    pub wait: bool,
}

pub fn create(args: Create, cx: &Context) -> Result<(), Failure> {
    let Create {
        db,
        collection,
        bytes,
        key_field,
        item_keys,
        arrays,
        measures,
        rollups,
    } = args;
    let json = cx.json;
    let names = ["--array", "--measures", "--rollup"];
    let mut spec =
        skewdb_cli::schema::collection_spec(&collection, &arrays, &measures, &rollups, names)?;
    if !bytes {
        let declared: Vec<&str> = measures
            .iter()
            .filter_map(|given| given.split_once('=').map(|(field, _)| field))
            .collect();
        spec = skewdb_cli::schema::of_documents(spec, &key_field, &item_keys, &declared)?;
    }
    let handle = Db::open(&db, Options::new())?;
    handle.create_collection(spec)?;
    if json {
        print_value(&json!({"created": collection}))?;
    } else {
        out!("collection {collection} ready in {}", db.display());
    }
    Ok(())
}

pub fn collections(args: Collections, cx: &Context) -> Result<(), Failure> {
    let Collections { db } = args;
    let json = cx.json;
    let handle = open_for_reading(&db.db)?;
    for name in handle.collection_names() {
        let collection = handle.collection(&name)?;
        let mut parents = 0u64;
        for document in collection.scan(..)? {
            document?;
            parents += 1;
        }
        let spec = collection.spec();
        if json {
            print_value(&text::collection_json(spec, parents))?;
        } else {
            out!("{}", text::collection_text(spec, parents));
        }
    }
    Ok(())
}

pub fn drop(args: Drop, cx: &Context) -> Result<(), Failure> {
    let Drop { db, collection } = args;
    let json = cx.json;
    open_existing(&db.db)?.drop_collection(&collection)?;
    if json {
        print_value(&json!({ "dropped": collection }))?;
    } else {
        out!("collection {collection} dropped");
    }
    Ok(())
}

pub fn alter(args: Alter, cx: &Context) -> Result<(), Failure> {
    let Alter {
        db,
        collection,
        rename,
        add_arrays,
        drop_arrays,
        add_measures,
        set_layouts,
        set_rollups,
        wait,
    } = args;
    let json = cx.json;
    let changes = skewdb_cli::schema::Changes {
        rename,
        drop_arrays,
        add_arrays,
        add_measures,
        set_layouts,
        set_rollups,
    };
    let names = [
        "--add-array",
        "--add-measure",
        "--set-layout",
        "--set-rollup",
    ];
    let handle = open_existing(&db.db)?;
    let current = handle.collection(&collection).ok();
    let current = current.as_ref().map(|c| c.spec());
    let alteration = skewdb_cli::schema::alteration(changes, names, current)?;
    let altered = handle.alter_collection(&collection, alteration)?;
    if wait {
        wait_for_migrations(&handle, json)?;
    }
    if json {
        print_value(&text::schema_json(altered.spec()))?;
    } else {
        out!(
            "collection {}: {}",
            altered.name(),
            altered.spec().describe_arrays()
        );
    }
    Ok(())
}
