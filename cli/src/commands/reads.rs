//! The commands that read a collection: items, summary, outliers, get, scan, count.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use skewdb::ItemQuery;
use skewdb_cli::failure::Failure;
use skewdb_cli::item_key::{ItemKeyArg, SpanArg};
use skewdb_cli::text;
use skewdb_cli::text::Shown;

use super::*;

/// An array field of one parent, and the item keys [--from, --to] a read takes of it.
#[derive(Args)]
pub struct ItemRange {
    #[command(flatten)]
    pub array: ArrayArgs,
    /// Smallest item key (inclusive).
    #[arg(long, allow_hyphen_values = true)]
    pub from: Option<ItemKeyArg>,
    /// Largest item key (inclusive).
    #[arg(long, allow_hyphen_values = true)]
    pub to: Option<ItemKeyArg>,
}

#[derive(Args)]
pub struct Items {
    #[command(flatten)]
    pub range: ItemRange,
    /// Greatest keys first.
    #[arg(long)]
    pub desc: bool,
    /// Only items with a key after this one (greater, or smaller with --desc).
    #[arg(long, allow_hyphen_values = true, conflicts_with = "cursor")]
    pub after: Option<ItemKeyArg>,
    /// Continue exactly after the last item of the previous page (ties included): the
    /// token that page printed. Give the same --desc, --from and --to.
    #[arg(long)]
    pub cursor: Option<String>,
    /// At most this many items.
    #[arg(long)]
    pub limit: Option<usize>,
}

#[derive(Args)]
pub struct Summary {
    #[command(flatten)]
    pub range: ItemRange,
    /// Only this measure's count, sum, min and max (default: the first, and every
    /// measure's by name when the array names its own).
    #[arg(long)]
    pub measure: Option<String>,
    /// One summary per window of this span (aligned to its multiples, as buckets are),
    /// for the windows that hold items: an integer, or for a Bucket array with a span a
    /// duration (1h, 15min, 1day) in milliseconds.
    #[arg(long, value_name = "SPAN")]
    pub every: Option<SpanArg>,
}

#[derive(Args)]
pub struct Outliers {
    /// The database directory.
    pub db: PathBuf,
    /// The collection.
    pub collection: String,
    /// The array field.
    pub field: String,
}

#[derive(Args)]
pub struct Get {
    #[command(flatten)]
    pub parent: ParentArgs,
}

#[derive(Args)]
pub struct Scan {
    #[command(flatten)]
    pub range: KeyRange,
    /// Print at most this many parents.
    #[arg(long)]
    pub limit: Option<u64>,
}

#[derive(Args)]
pub struct Count {
    #[command(flatten)]
    pub range: KeyRange,
}

pub fn items(args: Items, cx: &Context) -> Result<(), Failure> {
    let Items {
        range: ItemRange { array, from, to },
        desc,
        after,
        cursor,
        limit,
    } = args;
    let json = cx.json;
    let keys = cx.keys;
    let handle = open_for_reading(&array.parent.db)?;
    let collection = handle.collection(&array.parent.collection)?;
    let key = keys.read_for(&array.parent.key, &collection)?;
    let shown = Shown::of(collection.spec(), cx.canonical);
    let field = collection.array(&array.field)?;
    let (from, to) = (
        item_key_of(from.as_ref(), &field)?,
        item_key_of(to.as_ref(), &field)?,
    );
    let mut query = ItemQuery::new().range(bounds(from, to));
    if desc {
        query = query.descending();
    }
    if let Some(after) = item_key_of(after.as_ref(), &field)? {
        query = query.after_key(after);
    }
    if let Some(cursor) = cursor {
        query = query.after(skewdb_cli::item_key::parse_cursor(&cursor, desc)?);
    }
    if let Some(limit) = limit {
        query = query.limit(limit);
    }
    let spec = collection.array(&array.field)?.spec().clone();
    let page = collection
        .items(&key, &array.field, &query)?
        .ok_or_else(|| not_found(&key))?;
    for item in &page.items {
        if json {
            print_value(&text::item_json(item, &spec, shown))?;
        } else {
            out!("{}", text::item_text(item, &spec, shown));
        }
    }
    if let Some(next) = page.next {
        let next = skewdb_cli::item_key::cursor_token(next, desc);
        if json {
            print_value(&json!({"cursor": next}))?;
        } else {
            out!("next page: --cursor {next}");
        }
    }
    Ok(())
}

pub fn summary(args: Summary, cx: &Context) -> Result<(), Failure> {
    let Summary {
        range: ItemRange { array, from, to },
        measure,
        every,
    } = args;
    let json = cx.json;
    let keys = cx.keys;
    let handle = open_for_reading(&array.parent.db)?;
    let collection = handle.collection(&array.parent.collection)?;
    let key = keys.read_for(&array.parent.key, &collection)?;
    let array_handle = collection.array(&array.field)?;
    let index = measure
        .map(|name| array_handle.measure_index(&name))
        .transpose()?;
    let measures = array_handle.measures();
    let (from, to) = (
        item_key_of(from.as_ref(), &array_handle)?,
        item_key_of(to.as_ref(), &array_handle)?,
    );
    let windows = match every {
        None => vec![(
            None,
            collection
                .summary(&key, &array.field, bounds(from, to))?
                .ok_or_else(|| not_found(&key))?,
        )],
        Some(span) => {
            let span = span
                .resolve(array_handle.spec())
                .map_err(Failure::invalid_input)?;
            collection
                .summary_windows(&key, &array.field, bounds(from, to), span)?
                .ok_or_else(|| not_found(&key))?
                .into_iter()
                .map(|(start, summary)| (Some(start), summary))
                .collect()
        }
    };
    for (window, summary) in windows {
        match (json, index) {
            (true, index) => {
                let mut value = match index {
                    Some(index) => {
                        let mut value =
                            text::measure_summary_json(&summary, array_handle.spec(), index);
                        value["measure"] = json!(measures[index]);
                        value
                    }
                    None => text::summary_json(&summary, array_handle.spec()),
                };
                if let Some(window) = window {
                    value["window"] = json!(window);
                    value = text::with_dates(value, array_handle.spec(), &["window"]);
                }
                print_value(&value)?;
            }
            (false, index) => {
                let line = text::summary_text(&summary, array_handle.spec(), index);
                match window {
                    Some(window) => {
                        let start = text::key_text(window, array_handle.spec());
                        out!("window {start}: {line}")
                    }
                    None => out!("{line}"),
                }
            }
        }
    }
    Ok(())
}

pub fn outliers(args: Outliers, cx: &Context) -> Result<(), Failure> {
    let Outliers {
        db,
        collection,
        field,
    } = args;
    let json = cx.json;
    let handle = open_for_reading(&db)?;
    let collection = handle.collection(&collection)?;
    let shown = Shown::of(collection.spec(), cx.canonical);
    for outlier in collection.outliers(&field)? {
        if json {
            print_value(&json!({"key": shown.key(&outlier.key), "total": outlier.total}))?;
        } else {
            out!("{}\t{}", shown.key_text(&outlier.key), outlier.total);
        }
    }
    Ok(())
}

pub fn get(args: Get, cx: &Context) -> Result<(), Failure> {
    let Get { parent } = args;
    let json = cx.json;
    let keys = cx.keys;
    let handle = open_for_reading(&parent.db)?;
    let collection = handle.collection(&parent.collection)?;
    let key = keys.read_for(&parent.key, &collection)?;
    let shown = Shown::of(collection.spec(), cx.canonical);
    let document = collection.get(&key)?.ok_or_else(|| not_found(&key))?;
    if json {
        print_value(&text::document_json(&document, collection.spec(), shown))?;
    } else {
        print!(
            "{}",
            text::document_text(&document, collection.spec(), shown)
        );
    }
    Ok(())
}

pub fn scan(args: Scan, cx: &Context) -> Result<(), Failure> {
    let Scan { range, limit } = args;
    let json = cx.json;
    let keys = cx.keys;
    let (collection, scan) = range.scan(keys)?;
    let shown = Shown::of(collection.spec(), cx.canonical);
    for document in scan.take(limit.map_or(usize::MAX, |n| n.try_into().unwrap_or(usize::MAX))) {
        let document = document?;
        if json {
            print_value(&text::document_json(&document, collection.spec(), shown))?;
        } else {
            out!(
                "{}\t{}",
                shown.key_text(document.key()),
                shown.body_text(document.body())
            );
        }
    }
    Ok(())
}

pub fn count(args: Count, cx: &Context) -> Result<(), Failure> {
    let Count { range } = args;
    let json = cx.json;
    let keys = cx.keys;
    let (_, scan) = range.scan(keys)?;
    let mut count = 0u64;
    for document in scan {
        document?;
        count += 1;
    }
    if json {
        print_value(&json!({ "count": count }))?;
    } else {
        out!("{count}");
    }
    Ok(())
}
