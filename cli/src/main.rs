//! `skewdb`: the command-line tool. `skewdb COMMAND DB_DIR ...`; `--json` for scripts.

mod demo;

// Import builds and drops a tree of small values per document, on two threads (one parses,
// one stores); glibc's allocator spent a third of an import's time on them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};
use serde_json::{Value, json};
use std::ops::Bound;

use skewdb::{Batch, Db, ItemQuery, Layout, NewItem, Options};
use skewdb_cli::failure::{self, Failure};
use skewdb_cli::item_key::{ItemKeyArg, SpanArg};
use skewdb_cli::mapped::{Mapped, Stated, with_stated};
use skewdb_cli::text::Shown;
use skewdb_cli::{advise, exec, export, import, text};

/// An inclusive key range from optional ends.
fn bounds(from: Option<i64>, to: Option<i64>) -> (Bound<i64>, Bound<i64>) {
    (
        from.map_or(Bound::Unbounded, Bound::Included),
        to.map_or(Bound::Unbounded, Bound::Included),
    )
}

const EXEC_HELP: &str = "\
Reads operations from standard input, one JSON object per line. The operations between two
commits form one atomic batch; after each batch is durable, `{\"committed\":N}` is printed
(N counts batches). Keys, bodies and payloads are strings (their UTF-8) or
{\"base64\": \"...\"}. Every field is checked: an unknown or repeated field, a wrong type or a
value out of range is an error.

One example per operation:
  {\"op\":\"put\",\"coll\":\"users\",\"key\":\"alice\",\"body\":\"{\\\"name\\\":\\\"Alice\\\"}\"}
  {\"op\":\"push\",\"coll\":\"users\",\"key\":\"alice\",\"field\":\"followers\",\"item_key\":17,\"value\":4.5,\"payload\":\"bob\"}
  {\"op\":\"push\",\"coll\":\"sensors\",\"key\":\"s1\",\"field\":\"readings\",\"measures\":{\"temperature\":21.5,\"humidity\":0.4}}
  {\"op\":\"remove\",\"coll\":\"users\",\"key\":\"alice\",\"field\":\"followers\",\"item_key\":17}
  {\"op\":\"expire\",\"coll\":\"sensors\",\"key\":\"s1\",\"field\":\"readings\",\"before\":1700000000}
  {\"op\":\"del\",\"coll\":\"users\",\"key\":{\"base64\":\"AAE=\"}}
  {\"op\":\"alter\",\"coll\":\"users\",\"add_array\":[\"badges=embed\"],\"drop_array\":[\"log\"],\"add_measure\":[\"followers=weight\"],\"rename\":\"people\"}
  {\"op\":\"create\",\"coll\":\"sensors\",\"arrays\":[{\"field\":\"readings\",\"layout\":\"bucket:60:3600000\",\"measures\":[\"temperature\",\"humidity\"],\"rollup\":86400000}]}
  {\"op\":\"drop\",\"coll\":\"sessions\"}
  {\"op\":\"commit\"}
In push, item_key (default: the array's greatest key + 1), value (the first measure's,
finite), measures (values of named measures, finite) and payload (default: empty) may be
left out. An alter takes any of its changes (rename, add_array, drop_array, add_measure,
set_layout, set_rollup: at least one) and applies them at once,
as `skewdb alter` does; a batch must change a collection's schema before it writes to it.
A create (its arrays' measures and rollup optional) makes the collection as `skewdb create`
does, in the batch: the writes after it may use it. Like `skewdb create`, it makes a
collection of documents: key_field (default _id) and each array's item_key name their
document fields; \"bytes\":true makes one of the application's bytes instead
(`create --bytes`), as the examples above (the users collection) are.

In a collection of documents (made by `skewdb create` or `skewdb import`, or an exec
create without \"bytes\":true: stored as bson), keys, bodies and payloads are Extended
JSON values instead, read through the collection's mapping as `put` and `push`
read them: the body a document, the payload an array element, each item's key and measures
from the element's fields when the import took them from there.
  {\"op\":\"push\",\"coll\":\"sensors\",\"key\":{\"$oid\":\"65a000000000000000000901\"},\"field\":\"readings\",\"payload\":{\"t\":{\"$date\":\"2024-01-03T00:00:00Z\"},\"temp\":20}}

A bad line prints {\"error\":\"...\",\"kind\":\"...\",\"line\":N} (and a line on stderr); its batch
is not applied and later batches go on. Input that ends inside a batch applies nothing of it
and is reported the same way (kind incomplete_input). The exit status is 1 when anything
failed.";

#[derive(Parser)]
#[command(
    name = "skewdb",
    version,
    about = "An embedded storage engine for heavy-tailed data",
    after_help = "Errors exit 1 (2 for a command line that cannot be parsed); with --json they are one \
                  JSON object on stderr, {\"error\":\"...\",\"kind\":\"...\"}. The README lists the kinds."
)]
struct Cli {
    /// Print one JSON value per line instead of text for people, and errors as one JSON
    /// object on stderr.
    #[arg(long, global = true)]
    json: bool,
    /// Read every parent key argument (KEY, and scan's --from and --to, expire's --key) as
    /// standard base64: for keys that are not UTF-8 or hold NUL bytes.
    #[arg(long, global = true)]
    key_base64: bool,
    /// Print the documents of collections of documents (stored as BSON) as canonical
    /// Extended JSON (every number with its type) instead of relaxed.
    #[arg(long, global = true)]
    canonical: bool,
    /// Print the engine's log on stderr: -v its recoveries and compactions, -vv also its
    /// commit groups and checkpoints, -vvv everything. Warnings (failures no command
    /// reports, such as a checkpoint at close) print without it. RUST_LOG, when set, says
    /// instead (`RUST_LOG=skewdb=debug`).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

/// A database directory.
#[derive(Args)]
struct DbArg {
    /// The database directory.
    db: PathBuf,
}

/// One parent document.
#[derive(Args)]
struct ParentArgs {
    /// The database directory.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// The parent document's key (base64 with --key-base64).
    key: String,
}

/// The parents of a collection whose keys lie in [--from, --to].
#[derive(Args)]
struct KeyRange {
    /// The database directory.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// Smallest parent key (inclusive; base64 with --key-base64).
    #[arg(long)]
    from: Option<String>,
    /// Largest parent key (inclusive; base64 with --key-base64).
    #[arg(long)]
    to: Option<String>,
}

impl KeyRange {
    /// The collection, read-only, and a scan of the range.
    fn scan(&self, keys: Keys) -> Result<(skewdb::Collection, skewdb::Scan), Failure> {
        let handle = open_for_reading(&self.db)?;
        let collection = handle.collection(&self.collection)?;
        let from = match &self.from {
            Some(from) => keys.read_for(from, &collection)?,
            None => Vec::new(),
        };
        let scan = match &self.to {
            Some(to) => collection.scan(from..=keys.read_for(to, &collection)?)?,
            None => collection.scan(from..)?,
        };
        Ok((collection, scan))
    }
}

/// One array field of one parent document.
#[derive(Args)]
struct ArrayArgs {
    #[command(flatten)]
    parent: ParentArgs,
    /// The array field.
    field: String,
}

#[derive(Subcommand)]
enum Command {
    /// Build the seed scenarios in a temporary database and print what each costs.
    Demo {
        /// How large the scenarios are.
        #[arg(long, value_enum, default_value_t = demo::Scale::Small)]
        scale: demo::Scale,
    },
    /// The working-set benchmark: each seed workload under its layouts and four cache
    /// budgets, hit ratios beside the offline optimum; writes a markdown table and plots
    /// (feature `bench`).
    #[cfg(feature = "bench")]
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
        /// Also keep every run's cache trace here, with traces.csv listing each one's budget
        /// and warm-up requests (for replay in an outside simulator).
        #[arg(long)]
        traces: Option<PathBuf>,
    },
    /// Create a database (and its directory) or add a collection of documents to one.
    Create {
        /// The database directory (made when it does not exist).
        db: PathBuf,
        /// The collection's name.
        #[arg(long)]
        collection: String,
        /// A collection of the application's own bytes (bodies and payloads stored as they
        /// are given), not of documents.
        #[arg(long, conflicts_with_all = ["key_field", "item_keys"])]
        bytes: bool,
        /// The body field whose value is a document's key: a put adds it to the body, an
        /// export writes it back.
        #[arg(long, default_value = "_id")]
        key_field: String,
        /// The element field (a date or an integer) that keys each item: F for every array,
        /// or ARRAY=F for one (default: the key given with push, kept beside the element).
        #[arg(long = "item-key", value_name = "[ARRAY=]F")]
        item_keys: Vec<String>,
        /// An array field and its layout: FIELD=embed|reference|subset:N|outlier:N|bucket:N[:SPAN]
        /// (SPAN in key units, or a duration such as 1h: a time series keyed by milliseconds)
        #[arg(long = "array", value_name = "FIELD=LAYOUT")]
        arrays: Vec<String>,
        /// The named measures of an array field (up to 8), in order: FIELD=NAME,NAME,...
        /// (default: one, "value", given with push --value). In a collection of documents
        /// they are its elements' fields of those names.
        #[arg(long = "measures", value_name = "FIELD=NAMES")]
        measures: Vec<String>,
        /// Keep, when buckets of this Bucket array expire, one summary per window of SPAN
        /// of what they drop: FIELD=SPAN (in the keys' units, or a duration such as 1h
        /// where the array's keys are times).
        #[arg(long = "rollup", value_name = "FIELD=SPAN")]
        rollups: Vec<String>,
    },
    /// Set the body of a parent document.
    Put {
        #[command(flatten)]
        parent: ParentArgs,
        /// The body: an Extended JSON document (its key field added when absent); in a
        /// collection made with `create --bytes`, stored as its UTF-8 bytes.
        #[arg(required_unless_present = "body_file")]
        body: Option<String>,
        /// Read the body from this file instead, or from standard input with `-` (its bytes
        /// as they are: any size up to the 16 MiB record limit, any bytes).
        #[arg(long, value_name = "PATH|-", conflicts_with = "body")]
        body_file: Option<PathBuf>,
    },
    /// Push an item to an array field of an existing parent document (`--upsert` creates it).
    Push {
        #[command(flatten)]
        array: ArrayArgs,
        /// The item's payload: an Extended JSON array element (in a collection made with
        /// `create --bytes`, stored as its UTF-8 bytes). Optional: a bare reading is a key
        /// and a value.
        payload: Option<String>,
        /// Read the payload from this file instead, or from standard input with `-`.
        #[arg(long, value_name = "PATH|-", conflicts_with = "payload")]
        payload_file: Option<PathBuf>,
        /// The item's own key, a time or a sequence (default: the array's greatest key + 1);
        /// not the parent's KEY. A Bucket array with a span also takes a date (2024-01-03,
        /// 2024-01-03T12:00:00Z), as milliseconds since 1970, as every item key below.
        #[arg(long = "key", visible_alias = "item-key", allow_hyphen_values = true)]
        item_key: Option<ItemKeyArg>,
        /// The value of the array's first measure (a finite number).
        #[arg(long, allow_hyphen_values = true)]
        value: Option<f64>,
        /// The value of a named measure, NAME=V (a finite number); repeatable.
        #[arg(long = "measure", value_name = "NAME=V", allow_hyphen_values = true)]
        measures: Vec<String>,
        /// Create the parent (with an empty body) when it does not exist; without it a push
        /// to a missing parent is refused (`not_found`), so that a mistyped key makes nothing.
        #[arg(long)]
        upsert: bool,
    },
    /// Remove every item with this key from an array field, wherever it lives.
    Remove {
        #[command(flatten)]
        array: ArrayArgs,
        /// The key of the items to remove.
        #[arg(allow_hyphen_values = true)]
        item_key: ItemKeyArg,
    },
    /// Drop the sealed buckets of a Bucket array whose newest key is below BEFORE, for one
    /// parent (--key) or every parent of the collection.
    Expire {
        /// The database directory.
        db: PathBuf,
        /// The collection.
        collection: String,
        /// The Bucket array field.
        field: String,
        /// Buckets whose newest item key is below this go.
        #[arg(allow_hyphen_values = true)]
        before: ItemKeyArg,
        /// Only this parent (base64 with --key-base64).
        #[arg(long)]
        key: Option<String>,
    },
    /// Print items of an array field in key order, merged from wherever they live; with
    /// --limit, a cursor to continue from when more may remain.
    Items {
        #[command(flatten)]
        array: ArrayArgs,
        /// Smallest item key (inclusive).
        #[arg(long, allow_hyphen_values = true)]
        from: Option<ItemKeyArg>,
        /// Largest item key (inclusive).
        #[arg(long, allow_hyphen_values = true)]
        to: Option<ItemKeyArg>,
        /// Greatest keys first.
        #[arg(long)]
        desc: bool,
        /// Only items with a key after this one (greater, or smaller with --desc).
        #[arg(long, allow_hyphen_values = true, conflicts_with = "cursor")]
        after: Option<ItemKeyArg>,
        /// Continue exactly after the last item of the previous page (ties included): the
        /// token that page printed. Give the same --desc, --from and --to.
        #[arg(long)]
        cursor: Option<String>,
        /// At most this many items.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Print count, sum, min, max and key bounds of an array field's items in [--from, --to].
    Summary {
        #[command(flatten)]
        array: ArrayArgs,
        /// Smallest item key (inclusive).
        #[arg(long, allow_hyphen_values = true)]
        from: Option<ItemKeyArg>,
        /// Largest item key (inclusive).
        #[arg(long, allow_hyphen_values = true)]
        to: Option<ItemKeyArg>,
        /// Only this measure's count, sum, min and max (default: the first, and every
        /// measure's by name when the array names its own).
        #[arg(long)]
        measure: Option<String>,
        /// One summary per window of this span (aligned to its multiples, as buckets are),
        /// for the windows that hold items: an integer, or for a Bucket array with a span a
        /// duration (1h, 15min, 1day) in milliseconds.
        #[arg(long, value_name = "SPAN")]
        every: Option<SpanArg>,
    },
    /// Print the parents whose array field has items outside the parent record.
    Outliers {
        /// The database directory.
        db: PathBuf,
        /// The collection.
        collection: String,
        /// The array field.
        field: String,
    },
    /// Delete a parent document with all its arrays.
    Del {
        #[command(flatten)]
        parent: ParentArgs,
    },
    /// Print a parent document.
    Get {
        #[command(flatten)]
        parent: ParentArgs,
    },
    /// Print the parents whose keys lie in [--from, --to], in key order.
    Scan {
        #[command(flatten)]
        range: KeyRange,
        /// Print at most this many parents.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Count the parents whose keys lie in [--from, --to].
    Count {
        #[command(flatten)]
        range: KeyRange,
    },
    /// List the collections: each one's parents, format, array fields with their layouts
    /// and measures, and the mapping an import recorded.
    Collections {
        #[command(flatten)]
        db: DbArg,
    },
    /// Drop a collection: gone at once, its records reclaimed in the background (and by
    /// `compact`).
    Drop {
        #[command(flatten)]
        db: DbArg,
        /// The collection.
        collection: String,
    },
    /// Change a collection's schema, every change at once: rename it, add and drop array
    /// fields (a dropped field's items are gone at once), add measures, change layouts.
    #[command(group(clap::ArgGroup::new("change").required(true).multiple(true)))]
    Alter {
        #[command(flatten)]
        db: DbArg,
        /// The collection.
        collection: String,
        /// Its new name.
        #[arg(long, group = "change", value_name = "NEW")]
        rename: Option<String>,
        /// An array field to add, empty in every parent: FIELD=LAYOUT.
        #[arg(long = "add-array", group = "change", value_name = "FIELD=LAYOUT")]
        add_arrays: Vec<String>,
        /// An array field to drop, with every item it holds.
        #[arg(long = "drop-array", group = "change", value_name = "FIELD")]
        drop_arrays: Vec<String>,
        /// A measure to add to an array field (items already stored have no value of it):
        /// FIELD=NAME.
        #[arg(long = "add-measure", group = "change", value_name = "FIELD=NAME")]
        add_measures: Vec<String>,
        /// A new layout for an array field, FIELD=LAYOUT: committed at once, every parent
        /// then moved in the background while reads and writes go on (setting the layout it
        /// moves from cancels a move).
        #[arg(long = "set-layout", group = "change", value_name = "FIELD=LAYOUT")]
        set_layouts: Vec<String>,
        /// Rollups of what expiries drop from a Bucket array, FIELD=SPAN (key units, or a
        /// duration such as 1d on a time series): set on an array without them, or widened
        /// to a multiple of its span; rollups already stored keep theirs.
        #[arg(long = "set-rollup", group = "change", value_name = "FIELD=SPAN")]
        set_rollups: Vec<String>,
        /// Return once every parent has moved (with a progress bar on a terminal), not as
        /// soon as the change is committed.
        #[arg(long)]
        wait: bool,
    },
    /// Apply JSON-line operations from standard input, one batch per commit.
    #[command(long_about = EXEC_HELP)]
    Exec {
        #[command(flatten)]
        db: DbArg,
    },
    /// Print cache and log statistics.
    Stats {
        #[command(flatten)]
        db: DbArg,
    },
    /// Check every checksum and invariant; exit 0 only when all hold.
    Verify {
        #[command(flatten)]
        db: DbArg,
    },
    /// Describe files, segments, pages and records.
    Inspect {
        #[command(flatten)]
        db: DbArg,
    },
    /// Write the whole database, as of one snapshot, to one backup file (while other
    /// processes cannot write it: the database is locked while open).
    Backup {
        #[command(flatten)]
        db: DbArg,
        /// The backup file (replaced only once the new one is complete).
        file: PathBuf,
    },
    /// Make a new database directory from a backup file.
    Restore {
        /// The backup file.
        file: PathBuf,
        /// The new database directory (must not exist).
        db: PathBuf,
    },
    /// Give back the space the log holds beyond the live data (a progress bar on a terminal).
    Compact {
        #[command(flatten)]
        db: DbArg,
    },
    /// Import `mongoexport` output (Extended JSON, one document per line or --json-array)
    /// into a collection stored as BSON, each --array field split into items.
    Import {
        /// The database directory (made when it does not exist).
        db: PathBuf,
        /// The collection (created with the --array fields when it does not exist).
        #[arg(long)]
        collection: String,
        /// The file of documents (`-` for standard input).
        #[arg(long)]
        file: PathBuf,
        /// The file is one JSON array of documents, not one document per line.
        #[arg(long = "json-array", visible_alias = "jsonArray")]
        json_array: bool,
        /// The field whose value (an ObjectId, string, number, boolean or date) is the parent key.
        #[arg(long, default_value = "_id")]
        key_field: String,
        /// An array field and its layout: FIELD=embed|reference|subset:N|outlier:N|bucket:N[:SPAN]
        /// (SPAN in key units, or a duration such as 1h: a time series keyed by milliseconds).
        #[arg(long = "array", value_name = "FIELD=LAYOUT")]
        arrays: Vec<String>,
        /// The element field (a date or an integer) that keys each item: F for every array,
        /// or ARRAY=F for one (default: push order).
        #[arg(long = "item-key", value_name = "[ARRAY=]F")]
        item_keys: Vec<String>,
        /// An element field whose number is a measure: F for every array, or ARRAY=F; repeatable.
        #[arg(long = "measure", value_name = "[ARRAY=]F")]
        measures: Vec<String>,
        /// Fields to remove from every document (the bookkeeping a hand-made pattern kept).
        #[arg(long, value_delimiter = ',')]
        drop: Vec<String>,
        /// Stop at the first bad document instead of reporting and skipping it.
        #[arg(long)]
        stop_on_error: bool,
        /// A second collection's documents (same form as --file), each pushed as one item
        /// to its parent's --into array, skipped when that array already holds an element
        /// with its `_id`: a hand-made overflow collection or full history.
        #[arg(long, requires_all = ["parent_field", "into"])]
        children: Option<PathBuf>,
        /// The children's field holding their parent's key value (removed from each item).
        #[arg(long, requires = "children")]
        parent_field: Option<String>,
        /// The array field (an --array, or one of the collection's) the children join.
        #[arg(long, requires = "children")]
        into: Option<String>,
    },
    /// Write a collection of documents as `mongoexport` does: one Extended JSON line per
    /// parent, its arrays embedded again in full.
    Export {
        /// The database directory.
        db: PathBuf,
        /// The collection.
        collection: String,
        /// Write here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Only the items each parent holds inline, with FIELD_count and FIELD_has_overflow.
        #[arg(long)]
        inline_only: bool,
    },
    /// For each array field of a collection (a `mongoexport` file, or DB COLLECTION made by
    /// `import`): its length distribution and the layout to give it, with the page cache hit
    /// ratio that layout predicts against Embed.
    Advise {
        /// The database directory (with COLLECTION), instead of --file.
        #[arg(required_unless_present = "file", requires = "collection")]
        db: Option<PathBuf>,
        /// The collection of DB.
        collection: Option<String>,
        /// A `mongoexport` file (JSON lines, or one array with --json-array).
        #[arg(long, conflicts_with = "db")]
        file: Option<PathBuf>,
        /// The file is one JSON array of documents.
        #[arg(long = "json-array", visible_alias = "jsonArray")]
        json_array: bool,
        /// The field whose value is the parent key.
        #[arg(long, default_value = "_id")]
        key_field: String,
        /// The page cache budget the prediction is for (bytes, or with KiB, MiB, GiB).
        #[arg(long, default_value = "64MiB", value_parser = advise::parse_bytes)]
        budget: u64,
        /// The application shows only the newest N items of FIELD: FIELD=N (repeatable).
        #[arg(long = "reads-newest", value_name = "FIELD=N")]
        reads_newest: Vec<String>,
        /// The parent keys as the application reads them, one per line (Extended JSON or
        /// text), instead of Zipf(0.99) reads with the longest arrays read most.
        #[arg(long)]
        reads: Option<PathBuf>,
        /// Move DB COLLECTION's arrays to the layouts advised (waiting until every parent has
        /// moved), then replay the same reads on it and print the hit ratio measured beside
        /// the one predicted.
        #[arg(long, requires = "db")]
        apply: bool,
    },
    /// Run one node of a cluster: skewdb-raft over HTTP, until SIGINT or SIGTERM.
    Serve(skewdb_cli::cluster::ServeArgs),
    /// Form and change a cluster of `serve` nodes, write and read through it.
    Cluster {
        #[command(subcommand)]
        command: skewdb_cli::cluster::ClusterCommand,
    },
    /// Print a completion script for a shell (bash, elvish, fish, powershell, zsh).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Writes a line to standard output; if its reader closed it (`| head`), the command stops
/// there with `CLOSED_OUTPUT`, which ends the tool quietly.
macro_rules! out {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout().lock(), $($arg)*)?
    };
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

fn report(failure: &Failure, json: bool) -> ExitCode {
    if failure.kind == failure::CLOSED_OUTPUT {
        return ExitCode::SUCCESS;
    }
    if json {
        eprintln!("{}", failure.json());
    } else {
        eprintln!("skewdb: error: {}", failure.message);
    }
    ExitCode::from(failure.exit_status())
}

fn main_inner() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => {
            // --help and --version.
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            // The parse failed, so --json is looked for among the words themselves.
            if std::env::args_os().any(|arg| arg == "--json") {
                // The whole message, up to the usage line: a missing argument's names are
                // on the lines after the first.
                let rendered = error.render().to_string();
                let lines: Vec<&str> = rendered
                    .lines()
                    .take_while(|line| !line.starts_with("Usage:"))
                    .map(str::trim)
                    .filter(|line| !line.is_empty())
                    .collect();
                let message = lines.join(" ");
                let message = message.strip_prefix("error: ").unwrap_or(&message);
                return report(&Failure::usage(message), true);
            }
            let _ = error.print();
            return ExitCode::from(2);
        }
    };
    let json = cli.json;
    print_logs(cli.verbose, json);
    match run(cli) {
        Ok(code) => code,
        Err(failure) => report(&failure, json),
    }
}

/// Prints the engine's `tracing` events on stderr, at the level `-v` asks (warnings
/// without it) or as `RUST_LOG` says; as JSON lines with `--json`.
fn print_logs(verbose: u8, json: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::new(directives),
        _ => EnvFilter::new(match verbose {
            0 => "warn",
            1 => "info",
            2 => "debug",
            _ => "trace",
        }),
    };
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    // Set once, at the start: no subscriber can be set before it.
    let _ = match json {
        true => logs.json().try_init(),
        false => logs.try_init(),
    };
}

/// `compact`'s progress: a spinner saying what runs while there is no total yet (finishing
/// layout moves, reclaiming what drops left), then a bar of the chunk and page bytes, once
/// the compaction has planned them. It never shows a total of nothing.
struct CompactBar(indicatif::ProgressBar, bool);

impl CompactBar {
    fn new(bar: indicatif::ProgressBar) -> CompactBar {
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} compacting: {msg} {elapsed}")
                .expect("a valid template"),
        );
        bar.set_message("finishing layout moves and reclaiming what drops left");
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
        CompactBar(bar, false)
    }

    /// `done` of `total` bytes planned: the bar once there is a total.
    fn at(&mut self, done: u64, total: u64) {
        let CompactBar(bar, sized) = self;
        if total == 0 {
            return;
        }
        if !*sized {
            bar.disable_steady_tick();
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "compacting {bar:40} {bytes}/{total_bytes} of chunks and pages",
                )
                .expect("a valid template"),
            );
            *sized = true;
        }
        bar.set_length(total);
        bar.set_position(done);
    }
}

/// A spinner on stderr while a long command works, when stderr is a terminal and the output
/// is for people (nothing otherwise): what it does, the time so far, and a count when the
/// command reports one. Cleared when dropped.
struct Working(Option<indicatif::ProgressBar>);

impl Working {
    fn start(json: bool, what: &'static str) -> Working {
        let bar = (!json && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed} {pos}")
                    .expect("a valid template"),
            );
            bar.set_message(what);
            bar.enable_steady_tick(std::time::Duration::from_millis(100));
            bar
        });
        Working(bar)
    }

    /// The count so far (documents, ...).
    fn at(&self, done: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(done);
        }
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// The bytes given as an argument or read from `file` (`-`: standard input).
fn given_bytes(given: Option<String>, file: Option<&Path>) -> Result<Vec<u8>, Failure> {
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
fn utf8(what: &str, bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| format!("{what} is not UTF-8: {e}"))
}

/// An item key argument of `array`, when given (`ItemKeyArg::resolve`).
fn item_key_of(given: Option<&ItemKeyArg>, array: &skewdb::Array) -> Result<Option<i64>, Failure> {
    given
        .map(|key| key.resolve(array.spec()).map_err(Failure::invalid_input))
        .transpose()
}

/// What `del` and `remove` say: how many parents or items they removed.
fn print_removed(removed: u64, what: &str, json: bool) -> Result<(), Failure> {
    if json {
        print_value(&json!({"committed": 1, "removed": removed}))
    } else {
        let plural = if removed == 1 { "" } else { "s" };
        out!("removed {removed} {what}{plural}");
        Ok(())
    }
}

/// `count` and `noun`, plural unless the count is one (`1 document`, `3 documents`).
fn counted(count: impl Into<u64>, noun: &str) -> String {
    match count.into() {
        1 => format!("1 {noun}"),
        count => format!("{count} {noun}s"),
    }
}

/// Waits until no layout change is moving parents (`Db::wait_for_migrations`, which moves
/// them from this process too), with a progress bar on a terminal (the parents walked of
/// the total, which only grow); a migration left with refused parents ends the wait with
/// an error naming them.
fn wait_for_migrations(db: &Db, json: bool) -> Result<(), Failure> {
    let bar = (!json && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("moving {msg} {bar:30} {pos}/{len} parents")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let waiting = {
        let db = db.clone();
        std::thread::spawn(move || db.wait_for_migrations())
    };
    while !waiting.is_finished() {
        if let (Some(bar), Some(first)) = (&bar, db.stats()?.migrations.first()) {
            bar.set_message(format!("{}.{}", first.collection, first.field));
            bar.set_length(first.parents_total);
            bar.set_position(first.parents_walked);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let open = waiting.join().map_err(|_| {
        Failure::new(
            "internal",
            "the thread moving the parents panicked".to_string(),
        )
    })??;
    if let Some(bar) = &bar {
        bar.set_position(bar.length().unwrap_or(0));
        bar.finish_and_clear();
    }
    if let Some(first) = open.iter().find(|m| !m.refused.is_empty()) {
        return Err(Failure::new(
            "record_too_large",
            format!(
                "{} parents of {} cannot move to {} (their {} would pass the record \
                 limit); they stay under {}: set the layout back to end the move",
                first.refused.len(),
                first.collection,
                first.to.describe(),
                first.field,
                first.from.describe()
            ),
        ));
    }
    Ok(())
}

/// Opens an existing database; only `create` makes new ones.
fn open_existing(path: &Path) -> Result<Db, Failure> {
    check_exists(path)?;
    Ok(Db::open(path, Options::new())?)
}

/// The database at `path` for a command that only reads it: read-only, so that it runs
/// beside a process writing the database, and shows the state durable when it opened.
fn open_for_reading(path: &Path) -> Result<Db, Failure> {
    check_exists(path)?;
    Ok(Db::open_read_only(path, Options::new())?)
}

fn check_exists(path: &Path) -> Result<(), Failure> {
    if !path.join("checkpoint").is_file() {
        return Err(Failure::new(
            failure::NO_DATABASE,
            format!("no skewdb database at {}", path.display()),
        ));
    }
    Ok(())
}

/// The error of a read whose parent does not exist.
fn not_found(key: &[u8]) -> Failure {
    Failure::new(
        failure::NOT_FOUND,
        format!("not found: {}", text::display(key)),
    )
}

/// How parent keys are read from the command line.
#[derive(Clone, Copy)]
struct Keys {
    base64: bool,
}

impl Keys {
    /// A key of `collection`: Extended JSON (or a plain string) when it is stored as BSON.
    fn read_for(self, key: &str, collection: &skewdb::Collection) -> Result<Vec<u8>, Failure> {
        if !self.base64 && stores_bson(collection) {
            return skewdb_cli::mongo::key_arg(key).map_err(Failure::invalid_input);
        }
        self.read(key)
    }

    fn read(self, key: &str) -> Result<Vec<u8>, Failure> {
        if self.base64 {
            text::base64_decode(key).map_err(|e| Failure::invalid_input(format!("key: {e}")))
        } else {
            Ok(key.as_bytes().to_vec())
        }
    }
}

/// Whether `collection` holds documents (made by `create` without `--bytes`, or by
/// `import`): its keys, bodies and payloads are BSON, and the command line gives them as
/// Extended JSON.
fn stores_bson(collection: &skewdb::Collection) -> bool {
    collection.spec().document_format() == skewdb::DocumentFormat::Bson
}

/// Commits one operation on `collection`, durably; `--json` prints the acknowledgement.
fn commit_one(
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

#[cfg(feature = "bench")]
fn bench(
    scale: u64,
    out: PathBuf,
    names: &[String],
    traces_dir: Option<PathBuf>,
    json: bool,
) -> Result<(), Failure> {
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
        traces_dir,
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
                "optimum_hit_ratio": run.optimum_ratio(), "optimum_misses": run.optimum_misses(),
                "lru_misses": run.simulated_misses(skewdb::CachePolicy::Lru),
                "read_misses": run.read_misses,
                "reads": run.reads, "bytes_read": run.bytes_read,
                "ops_per_second": run.ops_per_second(),
            }))?;
        }
    } else {
        print!("{}", working_set::markdown(&report));
        out!("\nwrote {}", out.join("working-set.md").display());
    }
    Ok(())
}

/// An `--array FIELD=LAYOUT` argument, as `create` and `import` take it.
fn array_arg(array: &str) -> Result<(&str, Layout), Failure> {
    let (field, layout) = array
        .split_once('=')
        .ok_or_else(|| Failure::invalid_input(format!("--array {array:?} is not FIELD=LAYOUT")))?;
    let layout = skewdb_cli::item_key::layout(layout)
        .map_err(|e| Failure::invalid_input(format!("--array {array:?}: {e}")))?;
    Ok((field, layout))
}

/// The `--array` fields of an import with the item keys and measures given for them.
fn import_arrays(
    arrays: &[String],
    item_keys: &[String],
    measures: &[String],
) -> Result<Vec<import::ArrayField>, Failure> {
    let mut fields = Vec::new();
    for array in arrays {
        let (field, layout) = array_arg(array)?;
        fields.push(import::ArrayField {
            field: field.to_string(),
            layout,
            item_key: None,
            measures: Vec::new(),
        });
    }
    // `ARRAY=F` for one array, `F` for every one.
    let names: Vec<String> = fields.iter().map(|f| f.field.clone()).collect();
    let targets = |given: &str, option: &str| -> Result<(Vec<usize>, String), Failure> {
        match given.split_once('=') {
            Some((array, name)) => match names.iter().position(|f| f == array) {
                Some(at) => Ok((vec![at], name.to_string())),
                None => Err(Failure::invalid_input(format!(
                    "{option} {given:?} names {array:?}, which no --array declares"
                ))),
            },
            None => Ok(((0..names.len()).collect(), given.to_string())),
        }
    };
    for given in item_keys {
        let (at, name) = targets(given, "--item-key")?;
        for at in at {
            fields[at].item_key = Some(name.clone());
        }
    }
    for given in measures {
        let (at, name) = targets(given, "--measure")?;
        for at in at {
            fields[at].measures.push(name.clone());
        }
    }
    Ok(fields)
}

/// The documents of a file given to `import` (`-`: standard input).
fn import_source(file: &Path, json_array: bool) -> Result<import::Source, Failure> {
    let input: Box<dyn std::io::BufRead + Send> = if file == Path::new("-") {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let opened = std::fs::File::open(file)
            .map_err(|e| Failure::invalid_input(format!("cannot read {}: {e}", file.display())))?;
        Box::new(std::io::BufReader::with_capacity(1 << 20, opened))
    };
    Ok(import::Source::Text { input, json_array })
}

fn import_command(
    db: &Path,
    import: import::Import,
    (file, children): (&Path, Option<&Path>),
    json_array: bool,
    json: bool,
) -> Result<(), Failure> {
    if children == Some(Path::new("-")) && file == Path::new("-") {
        return Err(Failure::invalid_input(
            "--file and --children cannot both be standard input",
        ));
    }
    let documents = import_source(file, json_array)?;
    let children = children
        .map(|children| import_source(children, json_array))
        .transpose()?;
    let handle = Db::open(db, import::bulk_options())?;
    let bar = (!json && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("importing {spinner} {pos} documents {rate}")
                .expect("a valid template")
                // Whole documents a second: indicatif's own `{per_sec}` prints four decimals.
                .with_key(
                    "rate",
                    |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                        let _ = write!(out, "{:.0}/s", state.per_sec());
                    },
                ),
        );
        bar
    });
    let started = std::time::Instant::now();
    let done = import::run(&handle, &import, documents, children, |documents| {
        if let Some(bar) = &bar {
            bar.set_position(documents);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    for refusal in &done.refused {
        if json {
            let file = if refusal.child { "children" } else { "file" };
            print_value(&json!({"error": refusal.reason, "line": refusal.line, "file": file}))?;
        }
        eprintln!("skewdb: {refusal} (skipped)");
    }
    if json {
        print_value(&json!({
            "imported": done.documents, "items": done.items, "children": done.children,
            "duplicates": done.duplicates, "refused": done.refused.len(),
        }))?;
    } else {
        let children = match import.children {
            Some(_) => format!(
                ", {} of them children; {} children already embedded, skipped",
                done.children, done.duplicates
            ),
            None => String::new(),
        };
        out!(
            "imported {} ({}{children}) into {} in {:.1} s; {} refused",
            counted(done.documents, "document"),
            counted(done.items, "item"),
            import.collection,
            started.elapsed().as_secs_f64(),
            done.refused.len()
        );
    }
    if done.refused.is_empty() {
        Ok(())
    } else {
        Err(Failure::invalid_input(format!(
            "{} documents refused",
            done.refused.len()
        )))
    }
}

fn advise_command(
    request: &advise::Request,
    file: Option<&Path>,
    collection: Option<(PathBuf, String)>,
    json_array: bool,
    json: bool,
) -> Result<advise::Advice, Failure> {
    let talk = !json && std::io::stderr().is_terminal();
    let progress = |line: &str| {
        if talk {
            eprintln!("{line}");
        }
    };
    let advice = match (file, collection) {
        (Some(file), _) => {
            if file == Path::new("-") {
                return Err(Failure::invalid_input(
                    "advise reads its file more than once: give a file, not standard input",
                ));
            }
            advise::run(request, &|| import_source(file, json_array), progress)?
        }
        (None, Some((db, name))) => {
            let handle = open_for_reading(&db)?;
            let collection = handle.collection(&name)?;
            export::require_imported(&collection)?;
            let source = || -> Result<import::Source, Failure> {
                let of = collection.clone();
                let key_field = request.key_field.clone();
                let documents = collection.scan(..)?.enumerate().map(move |(at, document)| {
                    let document = document.map_err(Failure::from).and_then(|d| {
                        let mut exported = export::parent_document(&of, &d, false)?;
                        // A collection imported under another --key-field: its stored key
                        // stands in for the field the advice reads.
                        if !exported.contains_key(&key_field)
                            && let Ok(key) = skewdb::bson_key::decode(d.key())
                        {
                            exported.insert(key_field.clone(), key);
                        }
                        Ok(exported)
                    });
                    (at as u64 + 1, document.map_err(|e| e.message))
                });
                Ok(import::Source::Parsed(Box::new(documents)))
            };
            advise::run(request, &source, progress)?
        }
        (None, None) => return Err(Failure::usage("advise needs --file F or DB COLLECTION")),
    };
    if json {
        if advice.skipped > 0 {
            print_value(&json!({"skipped": advice.skipped}))?;
        }
        for field in &advice.fields {
            print_value(&advise::field_json(field))?;
        }
        if let Some(prediction) = &advice.prediction {
            print_value(&advise::prediction_json(prediction))?;
        }
    } else {
        print!("{}", advise::text(&advice));
    }
    Ok(advice)
}

/// Moves collection `name`'s arrays to the layouts `advice` recommends, waits for every
/// parent to move and compacts; then replays the prediction's reads on it and prints the hit
/// ratio predicted beside the one measured.
fn apply_advice(db: &Path, name: &str, advice: &advise::Advice, json: bool) -> Result<(), Failure> {
    let handle = open_existing(db)?;
    let spec = handle.collection(name)?.spec().clone();
    let mut alteration = skewdb::Alteration::new();
    let mut moved = Vec::new();
    for field in &advice.fields {
        let current = spec.arrays().iter().find(|a| a.field == field.field);
        if let Some(current) = current
            && current.layout != field.layout
        {
            alteration = alteration.set_layout(&field.field, field.layout);
            moved.push(json!({
                "field": field.field,
                "from": current.layout.describe(),
                "to": field.layout.describe(),
            }));
        }
    }
    if !alteration.is_empty() {
        handle.alter_collection(name, alteration)?;
        wait_for_migrations(&handle, json)?;
        handle.compact()?;
    }
    handle.close()?;
    let Some(prediction) = &advice.prediction else {
        return Err(Failure::invalid_input(
            "the advice has no prediction to check (no array field, or no parent)",
        ));
    };
    let measured = advise::measure(db, name, prediction)?;
    let predicted = prediction.recommended.hit_ratio;
    if json {
        print_value(&json!({
            "applied": moved,
            "predicted_hit_ratio": predicted,
            "measured_hit_ratio": measured,
        }))
    } else {
        let ratio = |r: Option<f64>| {
            r.map_or(
                "none (no read after the warm-up asked the page cache)".to_string(),
                |r| format!("{r:.3}"),
            )
        };
        for m in &moved {
            let text = |key: &str| m[key].as_str().unwrap_or_default().to_string();
            out!(
                "moved {} from {} to {}",
                text("field"),
                text("from"),
                text("to")
            );
        }
        if moved.is_empty() {
            out!("every array already has the layout advised");
        }
        out!(
            "hit ratio over the same {} reads at {} bytes: predicted {}, measured {}",
            prediction.reads,
            prediction.budget_bytes,
            ratio(predicted),
            ratio(measured)
        );
        Ok(())
    }
}

fn print_value(value: &Value) -> Result<(), Failure> {
    out!("{value}");
    Ok(())
}

fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let json = cli.json;
    let keys = Keys {
        base64: cli.key_base64,
    };
    match cli.command {
        Command::Demo { scale } => demo::run(scale, json)?,
        #[cfg(feature = "bench")]
        Command::Bench {
            scale,
            out,
            workloads,
            traces,
        } => bench(scale, out, &workloads, traces, json)?,
        Command::Import {
            db,
            collection,
            file,
            json_array,
            key_field,
            arrays,
            item_keys,
            measures,
            drop,
            stop_on_error,
            children,
            parent_field,
            into,
        } => import_command(
            &db,
            import::Import {
                collection,
                key_field,
                arrays: import_arrays(&arrays, &item_keys, &measures)?,
                drop,
                stop_on_error,
                batch_documents: 1000,
                children: parent_field
                    .zip(into)
                    .map(|(parent_field, into)| import::Children { parent_field, into }),
            },
            (&file, children.as_deref()),
            json_array,
            json,
        )?,
        Command::Export {
            db,
            collection,
            out,
            inline_only,
        } => {
            let handle = open_for_reading(&db)?;
            let collection = handle.collection(&collection)?;
            match out {
                Some(path) => {
                    let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
                    let working = Working::start(json, "exporting");
                    let written = export::run(
                        &collection,
                        &mut file,
                        inline_only,
                        cli.canonical,
                        |documents| working.at(documents),
                    )?;
                    drop(working);
                    if json {
                        print_value(&json!({"exported": written}))?;
                    } else {
                        out!("exported {written} documents to {}", path.display());
                    }
                }
                None => {
                    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
                    export::run(&collection, &mut stdout, inline_only, cli.canonical, |_| {})?;
                }
            }
        }
        Command::Advise {
            db,
            collection,
            file,
            json_array,
            key_field,
            budget,
            reads_newest,
            reads,
            apply,
        } => {
            let mut newest = Vec::new();
            for given in &reads_newest {
                let bad = || {
                    Failure::invalid_input(format!(
                        "--reads-newest {given:?} is not FIELD=N with N from 1"
                    ))
                };
                let (field, n) = given.split_once('=').ok_or_else(bad)?;
                let n: u32 = n.parse().ok().filter(|&n| n > 0).ok_or_else(bad)?;
                newest.push((field.to_string(), n));
            }
            // A stored Subset window says how many newest items the application shows:
            // advice that ignored it would move the window away (to embed) unasked.
            if file.is_none()
                && let Some((db, name)) = db.as_ref().zip(collection.as_ref())
            {
                let handle = open_for_reading(db)?;
                for array in handle.collection(name)?.spec().arrays() {
                    let skewdb::Layout::Subset { keep } = array.layout else {
                        continue;
                    };
                    if newest.iter().any(|(field, _)| *field == array.field) {
                        continue;
                    }
                    newest.push((array.field.clone(), keep));
                    if json {
                        print_value(&json!({"reads_newest": {
                            "field": array.field, "n": keep, "from_layout": array.layout.describe(),
                        }}))?;
                    } else {
                        out!(
                            "{} is stored as {}: advising for reads of its newest {keep} \
                             (--reads-newest {}=N to say otherwise)",
                            array.field,
                            array.layout.describe(),
                            array.field
                        );
                    }
                }
            }
            let request = advise::Request {
                key_field,
                budget_bytes: budget,
                reads_newest: newest,
                reads: reads.as_deref().map(advise::read_keys).transpose()?,
            };
            let target = db.zip(collection);
            let advice =
                advise_command(&request, file.as_deref(), target.clone(), json_array, json)?;
            if apply && let Some((db, name)) = target {
                apply_advice(&db, &name, &advice, json)?;
            }
        }
        Command::Serve(args) => return skewdb_cli::cluster::run_serve(args),
        Command::Cluster { command } => return skewdb_cli::cluster::run_cluster(command),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "skewdb", &mut std::io::stdout());
        }
        Command::Create {
            db,
            collection,
            bytes,
            key_field,
            item_keys,
            arrays,
            measures,
            rollups,
        } => {
            let names = ["--array", "--measures", "--rollup"];
            let mut spec = skewdb_cli::schema::collection_spec(
                &collection,
                &arrays,
                &measures,
                &rollups,
                names,
            )?;
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
        }
        Command::Put {
            parent,
            body,
            body_file,
        } => {
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
        }
        Command::Push {
            array,
            payload,
            payload_file,
            item_key,
            value,
            measures,
            upsert,
        } => {
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
                        (None, payload) => {
                            with_stated(NewItem::new(payload.unwrap_or_default()), stated)
                        }
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
        }
        Command::Remove { array, item_key } => {
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
        }
        Command::Expire {
            db,
            collection,
            field,
            before,
            key,
        } => {
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
        }
        Command::Items {
            array,
            from,
            to,
            desc,
            after,
            cursor,
            limit,
        } => {
            let handle = open_for_reading(&array.parent.db)?;
            let collection = handle.collection(&array.parent.collection)?;
            let key = keys.read_for(&array.parent.key, &collection)?;
            let shown = Shown::of(collection.spec(), cli.canonical);
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
        }
        Command::Summary {
            array,
            from,
            to,
            measure,
            every,
        } => {
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
                                let mut value = text::measure_summary_json(
                                    &summary,
                                    array_handle.spec(),
                                    index,
                                );
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
        }
        Command::Outliers {
            db,
            collection,
            field,
        } => {
            let handle = open_for_reading(&db)?;
            let collection = handle.collection(&collection)?;
            let shown = Shown::of(collection.spec(), cli.canonical);
            for outlier in collection.outliers(&field)? {
                if json {
                    print_value(&json!({"key": shown.key(&outlier.key), "total": outlier.total}))?;
                } else {
                    out!("{}\t{}", shown.key_text(&outlier.key), outlier.total);
                }
            }
        }
        Command::Del { parent } => {
            let handle = open_existing(&parent.db)?;
            let collection = handle.collection(&parent.collection)?;
            let key = keys.read_for(&parent.key, &collection)?;
            // The writer's lock is held: nothing changes between the look and the delete.
            let removed = u64::from(collection.get_projected(&key, &[])?.is_some());
            let mut batch = handle.batch();
            batch.delete_in(&collection, &key);
            batch.commit()?;
            print_removed(removed, "parent", json)?;
        }
        Command::Get { parent } => {
            let handle = open_for_reading(&parent.db)?;
            let collection = handle.collection(&parent.collection)?;
            let key = keys.read_for(&parent.key, &collection)?;
            let shown = Shown::of(collection.spec(), cli.canonical);
            let document = collection.get(&key)?.ok_or_else(|| not_found(&key))?;
            if json {
                print_value(&text::document_json(&document, collection.spec(), shown))?;
            } else {
                print!(
                    "{}",
                    text::document_text(&document, collection.spec(), shown)
                );
            }
        }
        Command::Scan { range, limit } => {
            let (collection, scan) = range.scan(keys)?;
            let shown = Shown::of(collection.spec(), cli.canonical);
            for document in
                scan.take(limit.map_or(usize::MAX, |n| n.try_into().unwrap_or(usize::MAX)))
            {
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
        }
        Command::Count { range } => {
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
        }
        Command::Collections { db } => {
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
        }
        Command::Drop { db, collection } => {
            open_existing(&db.db)?.drop_collection(&collection)?;
            if json {
                print_value(&json!({ "dropped": collection }))?;
            } else {
                out!("collection {collection} dropped");
            }
        }
        Command::Alter {
            db,
            collection,
            rename,
            add_arrays,
            drop_arrays,
            add_measures,
            set_layouts,
            set_rollups,
            wait,
        } => {
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
        }
        Command::Exec { db } => {
            let handle = open_existing(&db.db)?;
            return Ok(exec::run(
                &handle,
                std::io::stdin().lock(),
                &mut std::io::stdout().lock(),
                json,
            ));
        }
        Command::Stats { db } => {
            let handle = open_for_reading(&db.db)?;
            let stats = handle.stats()?;
            let space = handle.space()?;
            if json {
                print_value(&text::stats_json(&stats, &space))?;
            } else {
                print!("{}", text::stats_text(&stats, &space));
            }
        }
        Command::Verify { db } => {
            let handle = open_for_reading(&db.db)?;
            let working = Working::start(json, "verifying");
            let report = handle.verify()?;
            drop(working);
            if json {
                print_value(
                    &json!({"ok": true, "segments": report.segments.len(), "pages": report.leaf_pages + report.internal_pages, "records": report.records}),
                )?;
            } else {
                out!(
                    "ok: {} segments, {} pages, {} records; every checksum and invariant holds",
                    report.segments.len(),
                    report.leaf_pages + report.internal_pages,
                    report.records
                );
            }
        }
        Command::Backup { db, file } => {
            let handle = open_for_reading(&db.db)?;
            let working = Working::start(json, "backing up");
            let report = handle.backup(&file)?;
            drop(working);
            if json {
                print_value(&json!({
                    "commits": report.commits, "collections": report.collections,
                    "parents": report.parents, "records": report.records,
                    "chunks": report.chunks, "bytes": report.bytes,
                }))?;
            } else {
                out!(
                    "backed up {} collections, {} parents ({} records, {} chunks) to {}: {} bytes",
                    report.collections,
                    report.parents,
                    report.records,
                    report.chunks,
                    file.display(),
                    report.bytes
                );
            }
        }
        Command::Restore { file, db } => {
            let working = Working::start(json, "restoring");
            let handle = Db::restore(&file, &db, Options::new())?;
            drop(working);
            let names = handle.collection_names();
            if json {
                print_value(&json!({"restored": db.display().to_string(), "collections": names}))?;
            } else {
                out!(
                    "restored {} into {} ({} collections)",
                    file.display(),
                    db.display(),
                    names.len()
                );
            }
        }
        Command::Compact { db } => {
            let handle = open_existing(&db.db)?;
            let mut bar = std::io::stderr()
                .is_terminal()
                .then(|| CompactBar::new(indicatif::ProgressBar::new_spinner()));
            let report = handle.compact_with_progress(|done, total| {
                if let Some(bar) = &mut bar {
                    bar.at(done, total);
                }
            })?;
            if let Some(bar) = bar {
                bar.0.finish_and_clear();
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
                }))?;
            } else {
                out!(
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
            let handle = open_for_reading(&db.db)?;
            let inspection = handle.verify()?;
            if json {
                print_value(&text::inspection_json(&inspection))?;
            } else {
                print!("{}", text::inspection_text(&inspection));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::CompactBar;

    /// The bar shows no total until there is one, then the true total.
    #[test]
    fn the_compact_bar_waits_for_a_total() {
        let mut bar = CompactBar::new(indicatif::ProgressBar::hidden());
        bar.at(0, 0);
        assert!(!bar.1, "no bar of nothing");
        assert!(bar.0.message().contains("reclaiming"));
        bar.at(10, 4096);
        assert!(bar.1);
        assert_eq!((bar.0.position(), bar.0.length()), (10, Some(4096)));
        bar.at(4096, 8192);
        assert_eq!((bar.0.position(), bar.0.length()), (4096, Some(8192)));
    }
}
