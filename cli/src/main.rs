//! `skewdb`: the command-line tool. `skewdb COMMAND DB_DIR ...`; `--json` for scripts.

/// Writes a line to standard output; if its reader closed it (`| head`), the command stops
/// there with `CLOSED_OUTPUT`, which ends the tool quietly.
macro_rules! out {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout().lock(), $($arg)*)?
    };
}

mod commands;
mod demo;

// Import builds and drops a tree of small values per document, on two threads (one parses,
// one stores); glibc's allocator spent a third of an import's time on them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use skewdb_cli::failure::{self, Failure};

use commands::*;

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
        out: std::path::PathBuf,
        /// Only these workloads (followers, reviews, sensors); all by default.
        #[arg(long = "workload", value_parser = ["followers", "reviews", "sensors"])]
        workloads: Vec<String>,
        /// Also keep every run's cache trace here, with traces.csv listing each one's budget
        /// and warm-up requests (for replay in an outside simulator).
        #[arg(long)]
        traces: Option<std::path::PathBuf>,
    },
    /// Create a database (and its directory) or add a collection of documents to one.
    Create(commands::schema::Create),
    /// Set the body of a parent document.
    Put(commands::writes::Put),
    /// Push an item to an array field of an existing parent document (`--upsert` creates it).
    Push(commands::writes::Push),
    /// Remove every item with this key from an array field, wherever it lives.
    Remove(commands::writes::Remove),
    /// Drop the sealed buckets of a Bucket array whose newest key is below BEFORE, for one
    /// parent (--key) or every parent of the collection.
    Expire(commands::writes::Expire),
    /// Print items of an array field in key order, merged from wherever they live; with
    /// --limit, a cursor to continue from when more may remain.
    Items(commands::reads::Items),
    /// Print count, sum, min, max and key bounds of an array field's items in [--from, --to].
    Summary(commands::reads::Summary),
    /// Print the parents whose array field has items outside the parent record.
    Outliers(commands::reads::Outliers),
    /// Delete a parent document with all its arrays.
    Del(commands::writes::Del),
    /// Print a parent document.
    Get(commands::reads::Get),
    /// Print the parents whose keys lie in [--from, --to], in key order.
    Scan(commands::reads::Scan),
    /// Count the parents whose keys lie in [--from, --to].
    Count(commands::reads::Count),
    /// List the collections: each one's parents, format, array fields with their layouts
    /// and measures, and the mapping an import recorded.
    Collections(commands::schema::Collections),
    /// Drop a collection: gone at once, its records reclaimed in the background (and by
    /// `compact`).
    Drop(commands::schema::Drop),
    /// Change a collection's schema, every change at once: rename it, add and drop array
    /// fields (a dropped field's items are gone at once), add measures, change layouts.
    #[command(group(clap::ArgGroup::new("change").required(true).multiple(true)))]
    Alter(commands::schema::Alter),
    /// Apply JSON-line operations from standard input, one batch per commit.
    #[command(long_about = EXEC_HELP)]
    Exec(commands::admin::Exec),
    /// Print cache and log statistics.
    Stats(commands::admin::Stats),
    /// Check every checksum and invariant; exit 0 only when all hold.
    Verify(commands::admin::Verify),
    /// Describe files, segments, pages and records.
    Inspect(commands::admin::Inspect),
    /// Write the whole database, as of one snapshot, to one backup file (while other
    /// processes cannot write it: the database is locked while open).
    Backup(commands::admin::Backup),
    /// Make a new database directory from a backup file.
    Restore(commands::admin::Restore),
    /// Give back the space the log holds beyond the live data (a progress bar on a terminal).
    Compact(commands::admin::Compact),
    /// Import `mongoexport` output (Extended JSON, one document per line or --json-array)
    /// into a collection stored as BSON, each --array field split into items.
    Import(commands::mongodb::Import),
    /// Write a collection of documents as `mongoexport` does: one Extended JSON line per
    /// parent, its arrays embedded again in full.
    Export(commands::mongodb::Export),
    /// For each array field of a collection (a `mongoexport` file, or DB COLLECTION made by
    /// `import`): its length distribution and the layout to give it, with the page cache hit
    /// ratio that layout predicts against Embed.
    Advise(commands::mongodb::Advise),
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

fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let json = cli.json;
    let keys = Keys {
        base64: cli.key_base64,
    };
    let cx = Context {
        json,
        keys,
        canonical: cli.canonical,
    };
    match cli.command {
        Command::Demo { scale } => demo::run(scale, json)?,
        #[cfg(feature = "bench")]
        Command::Bench {
            scale,
            out,
            workloads,
            traces,
        } => commands::admin::bench(scale, out, &workloads, traces, json)?,
        Command::Import(args) => commands::mongodb::import(args, &cx)?,
        Command::Export(args) => commands::mongodb::export(args, &cx)?,
        Command::Advise(args) => commands::mongodb::advise(args, &cx)?,
        Command::Serve(args) => return skewdb_cli::cluster::run_serve(args),
        Command::Cluster { command } => return skewdb_cli::cluster::run_cluster(command),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "skewdb", &mut std::io::stdout());
        }
        Command::Create(args) => commands::schema::create(args, &cx)?,
        Command::Put(args) => commands::writes::put(args, &cx)?,
        Command::Push(args) => commands::writes::push(args, &cx)?,
        Command::Remove(args) => commands::writes::remove(args, &cx)?,
        Command::Expire(args) => commands::writes::expire(args, &cx)?,
        Command::Items(args) => commands::reads::items(args, &cx)?,
        Command::Summary(args) => commands::reads::summary(args, &cx)?,
        Command::Outliers(args) => commands::reads::outliers(args, &cx)?,
        Command::Del(args) => commands::writes::del(args, &cx)?,
        Command::Get(args) => commands::reads::get(args, &cx)?,
        Command::Scan(args) => commands::reads::scan(args, &cx)?,
        Command::Count(args) => commands::reads::count(args, &cx)?,
        Command::Collections(args) => commands::schema::collections(args, &cx)?,
        Command::Drop(args) => commands::schema::drop(args, &cx)?,
        Command::Alter(args) => commands::schema::alter(args, &cx)?,
        Command::Exec(args) => return commands::admin::exec(args, &cx),
        Command::Stats(args) => commands::admin::stats(args, &cx)?,
        Command::Verify(args) => commands::admin::verify(args, &cx)?,
        Command::Backup(args) => commands::admin::backup(args, &cx)?,
        Command::Restore(args) => commands::admin::restore(args, &cx)?,
        Command::Compact(args) => commands::admin::compact(args, &cx)?,
        Command::Inspect(args) => commands::admin::inspect(args, &cx)?,
    }
    Ok(ExitCode::SUCCESS)
}
