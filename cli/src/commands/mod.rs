//! The commands' shared parts: the arguments several commands take, opening a database
//! for a command, reading keys as given, committing one write, printing; one module per
//! command group beside them.

use std::io::{IsTerminal, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;
use skewdb::{Batch, Db, Layout, Options};
use skewdb_cli::failure::{self, Failure};
use skewdb_cli::item_key::ItemKeyArg;
use skewdb_cli::text;

pub(crate) mod admin;
pub(crate) mod mongodb;
pub(crate) mod reads;
pub(crate) mod schema;
pub(crate) mod writes;

/// What every command reads of the global flags.
pub(crate) struct Context {
    pub(crate) json: bool,
    pub(crate) keys: Keys,
    pub(crate) canonical: bool,
}

/// An inclusive key range from optional ends.
pub(crate) fn bounds(from: Option<i64>, to: Option<i64>) -> (Bound<i64>, Bound<i64>) {
    (
        from.map_or(Bound::Unbounded, Bound::Included),
        to.map_or(Bound::Unbounded, Bound::Included),
    )
}

/// A database directory.
#[derive(Args)]
pub(crate) struct DbArg {
    /// The database directory.
    pub(crate) db: PathBuf,
}

/// One parent document.
#[derive(Args)]
pub(crate) struct ParentArgs {
    /// The database directory.
    pub(crate) db: PathBuf,
    /// The collection.
    pub(crate) collection: String,
    /// The parent document's key (base64 with --key-base64).
    pub(crate) key: String,
}

/// The parents of a collection whose keys lie in [--from, --to].
#[derive(Args)]
pub(crate) struct KeyRange {
    /// The database directory.
    pub(crate) db: PathBuf,
    /// The collection.
    pub(crate) collection: String,
    /// Smallest parent key (inclusive; base64 with --key-base64).
    #[arg(long)]
    pub(crate) from: Option<String>,
    /// Largest parent key (inclusive; base64 with --key-base64).
    #[arg(long)]
    pub(crate) to: Option<String>,
}

impl KeyRange {
    /// The collection, read-only, and a scan of the range.
    pub(crate) fn scan(&self, keys: Keys) -> Result<(skewdb::Collection, skewdb::Scan), Failure> {
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
pub(crate) struct ArrayArgs {
    #[command(flatten)]
    pub(crate) parent: ParentArgs,
    /// The array field.
    pub(crate) field: String,
}

/// A spinner on stderr while a long command works, when stderr is a terminal and the output
/// is for people (nothing otherwise): what it does, the time so far, and a count when the
/// command reports one. Cleared when dropped.
pub(crate) struct Working(pub(crate) Option<indicatif::ProgressBar>);

impl Working {
    pub(crate) fn start(json: bool, what: &'static str) -> Working {
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
    pub(crate) fn at(&self, done: u64) {
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

/// An item key argument of `array`, when given (`ItemKeyArg::resolve`).
pub(crate) fn item_key_of(
    given: Option<&ItemKeyArg>,
    array: &skewdb::Array,
) -> Result<Option<i64>, Failure> {
    given
        .map(|key| key.resolve(array.spec()).map_err(Failure::invalid_input))
        .transpose()
}

/// Waits until no layout change is moving parents (`Db::wait_for_migrations`, which moves
/// them from this process too), with a progress bar on a terminal (the parents walked of
/// the total, which only grow); a migration left with refused parents ends the wait with
/// an error naming them.
pub(crate) fn wait_for_migrations(db: &Db, json: bool) -> Result<(), Failure> {
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
pub(crate) fn open_existing(path: &Path) -> Result<Db, Failure> {
    check_exists(path)?;
    Ok(Db::open(path, Options::new())?)
}

/// The database at `path` for a command that only reads it: read-only, so that it runs
/// beside a process writing the database, and shows the state durable when it opened.
pub(crate) fn open_for_reading(path: &Path) -> Result<Db, Failure> {
    check_exists(path)?;
    Ok(Db::open_read_only(path, Options::new())?)
}

pub(crate) fn check_exists(path: &Path) -> Result<(), Failure> {
    if !path.join("checkpoint").is_file() {
        return Err(Failure::new(
            failure::NO_DATABASE,
            format!("no skewdb database at {}", path.display()),
        ));
    }
    Ok(())
}

/// The error of a read whose parent does not exist.
pub(crate) fn not_found(key: &[u8]) -> Failure {
    Failure::new(
        failure::NOT_FOUND,
        format!("not found: {}", text::display(key)),
    )
}

/// How parent keys are read from the command line.
#[derive(Clone, Copy)]
pub(crate) struct Keys {
    pub(crate) base64: bool,
}

impl Keys {
    /// A key of `collection`: Extended JSON (or a plain string) when it is stored as BSON.
    pub(crate) fn read_for(
        self,
        key: &str,
        collection: &skewdb::Collection,
    ) -> Result<Vec<u8>, Failure> {
        if !self.base64 && stores_bson(collection) {
            return skewdb_cli::mongo::key_arg(key).map_err(Failure::invalid_input);
        }
        self.read(key)
    }

    pub(crate) fn read(self, key: &str) -> Result<Vec<u8>, Failure> {
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
pub(crate) fn stores_bson(collection: &skewdb::Collection) -> bool {
    collection.spec().document_format() == skewdb::DocumentFormat::Bson
}

pub(crate) fn print_value(value: &Value) -> Result<(), Failure> {
    out!("{value}");
    Ok(())
}

/// `count` and `noun`, plural unless the count is one (`1 document`, `3 documents`).
pub(crate) fn counted(count: impl Into<u64>, noun: &str) -> String {
    match count.into() {
        1 => format!("1 {noun}"),
        count => format!("{count} {noun}s"),
    }
}
