//! `skewdb`: the command-line tool. `skewdb COMMAND DB_DIR ...`; `--json` for scripts.

mod demo;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use std::ops::Bound;

use skewdb::{Batch, CollectionSpec, Db, ItemQuery, Layout, NewItem, Options};
use skewdb_cli::{exec, text};

/// An inclusive key range from optional ends.
fn bounds(from: Option<i64>, to: Option<i64>) -> (Bound<i64>, Bound<i64>) {
    (
        from.map_or(Bound::Unbounded, Bound::Included),
        to.map_or(Bound::Unbounded, Bound::Included),
    )
}

#[derive(Parser)]
#[command(
    name = "skewdb",
    version,
    about = "An embedded storage engine for heavy-tailed data"
)]
struct Cli {
    /// Print one JSON value per line instead of text for people.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the seed scenarios in a temporary database and print what each costs.
    Demo {
        #[arg(long, value_enum, default_value_t = demo::Scale::Small)]
        scale: demo::Scale,
    },
    /// The working-set benchmark: each seed workload under its layouts and four cache
    /// budgets, hit ratios beside the offline optimum; writes a markdown table and plots.
    Bench {
        /// Multiplies every size (1 finishes in under 2 minutes).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
        scale: u64,
        /// Where to write working-set.md and one SVG plot per workload.
        #[arg(long, default_value = "working-set")]
        out: PathBuf,
        /// Only these workloads (followers, reviews, sensors); all by default.
        #[arg(long = "workload", value_parser = ["followers", "reviews", "sensors"])]
        workloads: Vec<String>,
    },
    /// Create a database (and its directory) or add a collection to one.
    Create {
        db: PathBuf,
        #[arg(long)]
        collection: String,
        /// An array field and its layout: FIELD=embed|reference|subset:N|outlier:N|bucket:N[:SPAN]
        #[arg(long = "array", value_name = "FIELD=LAYOUT")]
        arrays: Vec<String>,
    },
    /// Set the body of a parent document.
    Put {
        db: PathBuf,
        collection: String,
        key: String,
        body: String,
    },
    /// Push an item to an array field of a parent document.
    Push {
        db: PathBuf,
        collection: String,
        key: String,
        field: String,
        payload: String,
        /// The item's key (default: the array's next sequence number).
        #[arg(long = "key", allow_hyphen_values = true)]
        item_key: Option<i64>,
        /// The value summaries aggregate.
        #[arg(long, allow_hyphen_values = true)]
        value: Option<f64>,
    },
    /// Remove every item with this key from an array field, wherever it lives.
    Remove {
        db: PathBuf,
        collection: String,
        key: String,
        field: String,
        #[arg(allow_hyphen_values = true)]
        item_key: i64,
    },
    /// Drop the sealed buckets of a Bucket array whose newest key is below BEFORE, for one
    /// parent (--key) or every parent of the collection.
    Expire {
        db: PathBuf,
        collection: String,
        field: String,
        #[arg(allow_hyphen_values = true)]
        before: i64,
        /// Only this parent.
        #[arg(long)]
        key: Option<String>,
    },
    /// Print items of an array field in key order, merged from wherever they live.
    Items {
        db: PathBuf,
        collection: String,
        key: String,
        field: String,
        /// Smallest item key (inclusive).
        #[arg(long, allow_hyphen_values = true)]
        from: Option<i64>,
        /// Largest item key (inclusive).
        #[arg(long, allow_hyphen_values = true)]
        to: Option<i64>,
        /// Greatest keys first.
        #[arg(long)]
        desc: bool,
        /// Continue after this item key (exclusive, in the order printed).
        #[arg(long, allow_hyphen_values = true)]
        after: Option<i64>,
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Print count, sum, min, max and key bounds of an array field's items in [--from, --to].
    Summary {
        db: PathBuf,
        collection: String,
        key: String,
        field: String,
        #[arg(long, allow_hyphen_values = true)]
        from: Option<i64>,
        #[arg(long, allow_hyphen_values = true)]
        to: Option<i64>,
    },
    /// Print the parents whose array field has items outside the parent record.
    Outliers {
        db: PathBuf,
        collection: String,
        field: String,
    },
    /// Delete a parent document.
    Del {
        db: PathBuf,
        collection: String,
        key: String,
    },
    /// Print a parent document.
    Get {
        db: PathBuf,
        collection: String,
        key: String,
    },
    /// Print the parents whose keys lie in [--from, --to], in key order.
    Scan {
        db: PathBuf,
        collection: String,
        #[arg(long)]
        from: Option<String>,
        #[arg(long)]
        to: Option<String>,
    },
    /// Apply JSON-line operations from standard input, one batch per commit.
    Exec { db: PathBuf },
    /// Print cache and log statistics.
    Stats { db: PathBuf },
    /// Check every checksum and invariant; exit 0 only when all hold.
    Verify { db: PathBuf },
    /// Describe files, segments, pages and records.
    Inspect { db: PathBuf },
    /// Give back the space the log holds beyond the live data (a progress bar on a terminal).
    Compact { db: PathBuf },
}

/// A failure to report: one line on stderr, exit status 1.
pub struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure(error.to_string())
    }
}

fn main() -> ExitCode {
    // A bug must still end in one line and exit status 1, not a trace.
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "skewdb: internal error{location}: {}",
            panic_message(info.payload())
        );
    }));
    match std::panic::catch_unwind(main_inner) {
        Ok(code) => code,
        Err(_) => ExitCode::from(1),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string())
}

fn main_inner() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 1 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(Failure(message)) => {
            eprintln!("skewdb: error: {message}");
            ExitCode::from(1)
        }
    }
}

/// Opens an existing database; only `create` makes new ones.
fn open_existing(path: &Path) -> Result<Db, Failure> {
    if !path.join("checkpoint").is_file() {
        return Err(Failure(format!("no skewdb database at {}", path.display())));
    }
    Ok(Db::open(path, Options::new())?)
}

/// The error of a read whose parent does not exist.
fn not_found(key: &str) -> Failure {
    Failure(format!("not found: {key}"))
}

/// Commits one operation, durably; `--json` prints the acknowledgement.
fn commit_one(db: &Path, json: bool, add: impl FnOnce(&mut Batch)) -> Result<(), Failure> {
    let handle = open_existing(db)?;
    let mut batch = handle.batch();
    add(&mut batch);
    batch.commit()?;
    if json {
        print_value(&json!({"committed": 1}));
    }
    Ok(())
}

fn bench(scale: u64, out: PathBuf, names: &[String], json: bool) -> Result<(), Failure> {
    use skewdb_workload::Workload;
    use skewdb_workload::working_set::{self, Config};
    let workloads = Workload::ALL
        .into_iter()
        .filter(|w| names.is_empty() || names.iter().any(|n| n == w.name()))
        .collect();
    let report = working_set::run(Config {
        sizes: skewdb_workload::Sizes::at_scale(scale),
        workloads,
        out_dir: Some(out.clone()),
        progress: Box::new(move |line| {
            if !json {
                eprintln!("{line}");
            }
        }),
    })?;
    if json {
        for run in &report.runs {
            print_value(&json!({
                "workload": run.workload.name(), "layout": run.layout.describe(),
                "budget_fraction": run.budget_fraction, "budget_bytes": run.budget_bytes,
                "policy": run.policy.name(), "ops": run.ops, "requests": run.requests,
                "hits": run.hits, "misses": run.misses, "hit_ratio": run.hit_ratio(),
                "optimum_hit_ratio": run.optimum_ratio(), "read_misses": run.read_misses,
                "reads": run.reads, "bytes_read": run.bytes_read,
                "ops_per_second": run.ops_per_second(),
            }));
        }
    } else {
        print!("{}", working_set::markdown(&report));
        println!("\nwrote {}", out.join("working-set.md").display());
    }
    Ok(())
}

fn print_value(value: &Value) {
    println!("{value}");
}

fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let json = cli.json;
    match cli.command {
        Command::Demo { scale } => demo::run(scale, json)?,
        Command::Bench {
            scale,
            out,
            workloads,
        } => bench(scale, out, &workloads, json)?,
        Command::Create {
            db,
            collection,
            arrays,
        } => {
            let mut spec = CollectionSpec::new(&collection);
            for array in &arrays {
                let (field, layout) = array
                    .split_once('=')
                    .ok_or_else(|| Failure(format!("--array {array:?} is not FIELD=LAYOUT")))?;
                spec = spec.array(
                    field,
                    Layout::parse(layout)
                        .map_err(|e| Failure(format!("--array {array:?}: {e}")))?,
                );
            }
            let handle = Db::open(&db, Options::new())?;
            handle.create_collection(spec)?;
            if json {
                print_value(&json!({"created": collection}));
            } else {
                println!("collection {collection} ready in {}", db.display());
            }
        }
        Command::Put {
            db,
            collection,
            key,
            body,
        } => {
            commit_one(&db, json, |batch| {
                batch.put(&collection, &key, &body);
            })?;
        }
        Command::Push {
            db,
            collection,
            key,
            field,
            payload,
            item_key,
            value,
        } => {
            let mut item = NewItem::new(&payload);
            if let Some(item_key) = item_key {
                item = item.key(item_key);
            }
            if let Some(value) = value {
                item = item.value(value);
            }
            commit_one(&db, json, |batch| {
                batch.push(&collection, &key, &field, item);
            })?;
        }
        Command::Remove {
            db,
            collection,
            key,
            field,
            item_key,
        } => {
            commit_one(&db, json, |batch| {
                batch.remove(&collection, &key, &field, item_key);
            })?;
        }
        Command::Expire {
            db,
            collection,
            field,
            before,
            key,
        } => match key {
            Some(key) => commit_one(&db, json, |batch| {
                batch.expire_buckets(&collection, &key, &field, before);
            })?,
            None => {
                let handle = open_existing(&db)?;
                handle
                    .collection(&collection)?
                    .expire_buckets(&field, before)?;
                if json {
                    print_value(&json!({"expired": true}));
                }
            }
        },
        Command::Items {
            db,
            collection,
            key,
            field,
            from,
            to,
            desc,
            after,
            limit,
        } => {
            let handle = open_existing(&db)?;
            let mut query = ItemQuery::new().range(bounds(from, to));
            if desc {
                query = query.descending();
            }
            if let Some(after) = after {
                query = query.after_key(after);
            }
            if let Some(limit) = limit {
                query = query.limit(limit);
            }
            let page = handle
                .collection(&collection)?
                .items(&key, &field, &query)?
                .ok_or_else(|| not_found(&key))?;
            for item in &page.items {
                if json {
                    print_value(&text::item_json(item));
                } else {
                    println!("{}", text::item_text(item));
                }
            }
        }
        Command::Summary {
            db,
            collection,
            key,
            field,
            from,
            to,
        } => {
            let handle = open_existing(&db)?;
            let summary = handle
                .collection(&collection)?
                .summary(&key, &field, bounds(from, to))?
                .ok_or_else(|| not_found(&key))?;
            if json {
                print_value(&text::summary_json(&summary));
            } else {
                println!("{}", text::summary_text(&summary));
            }
        }
        Command::Outliers {
            db,
            collection,
            field,
        } => {
            let handle = open_existing(&db)?;
            for outlier in handle.collection(&collection)?.outliers(&field)? {
                if json {
                    print_value(
                        &json!({"key": text::bytes_json(&outlier.key), "total": outlier.total}),
                    );
                } else {
                    println!("{}\t{}", text::display(&outlier.key), outlier.total);
                }
            }
        }
        Command::Del {
            db,
            collection,
            key,
        } => {
            commit_one(&db, json, |batch| {
                batch.delete(&collection, &key);
            })?;
        }
        Command::Get {
            db,
            collection,
            key,
        } => {
            let handle = open_existing(&db)?;
            let document = handle
                .collection(&collection)?
                .get(&key)?
                .ok_or_else(|| not_found(&key))?;
            if json {
                print_value(&text::document_json(&document));
            } else {
                print!("{}", text::document_text(&document));
            }
        }
        Command::Scan {
            db,
            collection,
            from,
            to,
        } => {
            let handle = open_existing(&db)?;
            let collection = handle.collection(&collection)?;
            let from = from.map(String::into_bytes).unwrap_or_default();
            let scan = match to {
                Some(to) => collection.scan(from..=to.into_bytes())?,
                None => collection.scan(from..)?,
            };
            for document in scan {
                let document = document?;
                if json {
                    print_value(&text::document_json(&document));
                } else {
                    println!(
                        "{}\t{}",
                        text::display(document.key()),
                        text::display(document.body())
                    );
                }
            }
        }
        Command::Exec { db } => {
            let handle = open_existing(&db)?;
            return Ok(exec::run(
                &handle,
                std::io::stdin().lock(),
                &mut std::io::stdout().lock(),
            ));
        }
        Command::Stats { db } => {
            let handle = open_existing(&db)?;
            let stats = handle.stats()?;
            let space = handle.space()?;
            if json {
                print_value(&text::stats_json(&stats, &space));
            } else {
                print!("{}", text::stats_text(&stats, &space));
            }
        }
        Command::Verify { db } => {
            let handle = open_existing(&db)?;
            let report = handle.verify()?;
            if json {
                print_value(
                    &json!({"ok": true, "segments": report.segments.len(), "pages": report.leaf_pages + report.internal_pages, "records": report.records}),
                );
            } else {
                println!(
                    "ok: {} segments, {} pages, {} records; every checksum and invariant holds",
                    report.segments.len(),
                    report.leaf_pages + report.internal_pages,
                    report.records
                );
            }
        }
        Command::Compact { db } => {
            let handle = open_existing(&db)?;
            let bar = std::io::stderr().is_terminal().then(|| {
                let bar = indicatif::ProgressBar::new(0);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "compacting {bar:40} {bytes}/{total_bytes} of chunks and pages",
                    )
                    .expect("a valid template"),
                );
                bar
            });
            let report = handle.compact_with_progress(|done, total| {
                if let Some(bar) = &bar {
                    bar.set_length(total);
                    bar.set_position(done);
                }
            })?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            if json {
                print_value(&json!({
                    "log_bytes_before": report.hot_bytes_before,
                    "log_bytes_after": report.hot_bytes_after,
                    "cold_bytes_before": report.cold_bytes_before,
                    "cold_bytes_after": report.cold_bytes_after,
                    "chunks_moved": report.chunks_moved,
                    "chunks_merged": report.chunks_merged,
                    "merged_into": report.merged_into,
                }));
            } else {
                println!(
                    "log: {} bytes before, {} bytes after\ncold: {} bytes before, {} bytes after; {} chunks moved, {} small chunks merged into {}",
                    report.hot_bytes_before,
                    report.hot_bytes_after,
                    report.cold_bytes_before,
                    report.cold_bytes_after,
                    report.chunks_moved,
                    report.chunks_merged,
                    report.merged_into
                );
            }
        }
        Command::Inspect { db } => {
            let handle = open_existing(&db)?;
            let inspection = handle.inspect()?;
            if json {
                print_value(&text::inspection_json(&inspection));
            } else {
                print!("{}", text::inspection_text(&inspection));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
