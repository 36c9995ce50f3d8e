//! The commands that speak MongoDB's documents: import, export, advise.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use skewdb_cli::failure::Failure;
use skewdb_cli::{advise, export, import};

use super::*;

#[derive(Args)]
pub struct Import {
    /// The database directory (made when it does not exist).
    pub db: PathBuf,
    /// The collection (created with the --array fields when it does not exist).
    #[arg(long)]
    pub collection: String,
    /// The file of documents (`-` for standard input).
    #[arg(long)]
    pub file: PathBuf,
    /// The file is one JSON array of documents, not one document per line.
    #[arg(long = "json-array", visible_alias = "jsonArray")]
    pub json_array: bool,
    /// The field whose value (an ObjectId, string, number, boolean or date) is the parent key.
    #[arg(long, default_value = "_id")]
    pub key_field: String,
    /// An array field and its layout: FIELD=embed|reference|subset:N|outlier:N|bucket:N[:SPAN]
    /// (SPAN in key units, or a duration such as 1h: a time series keyed by milliseconds).
    #[arg(long = "array", value_name = "FIELD=LAYOUT")]
    pub arrays: Vec<String>,
    /// The element field (a date or an integer) that keys each item: F for every array,
    /// or ARRAY=F for one (default: push order).
    #[arg(long = "item-key", value_name = "[ARRAY=]F")]
    pub item_keys: Vec<String>,
    /// An element field whose number is a measure: F for every array, or ARRAY=F; repeatable.
    #[arg(long = "measure", value_name = "[ARRAY=]F")]
    pub measures: Vec<String>,
    /// Fields to remove from every document (the bookkeeping a hand-made pattern kept).
    #[arg(long, value_delimiter = ',')]
    pub drop: Vec<String>,
    /// Stop at the first bad document instead of reporting and skipping it.
    #[arg(long)]
    pub stop_on_error: bool,
    /// A second collection's documents (same form as --file), each pushed as one item
    /// to its parent's --into array, skipped when that array already holds an element
    /// with its `_id`: a hand-made overflow collection or full history.
    #[arg(long, requires_all = ["parent_field", "into"])]
    pub children: Option<PathBuf>,
    /// The children's field holding their parent's key value (removed from each item).
    #[arg(long, requires = "children")]
    pub parent_field: Option<String>,
    /// The array field (an --array, or one of the collection's) the children join.
    #[arg(long, requires = "children")]
    pub into: Option<String>,
}

#[derive(Args)]
pub struct Export {
    /// The database directory.
    pub db: PathBuf,
    /// The collection.
    pub collection: String,
    /// Write here instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Only the items each parent holds inline, with FIELD_count and FIELD_has_overflow.
    #[arg(long)]
    pub inline_only: bool,
}

#[derive(Args)]
pub struct Advise {
    /// The database directory (with COLLECTION), instead of --file.
    #[arg(required_unless_present = "file", requires = "collection")]
    pub db: Option<PathBuf>,
    /// The collection of DB.
    pub collection: Option<String>,
    /// A `mongoexport` file (JSON lines, or one array with --json-array).
    #[arg(long, conflicts_with = "db")]
    pub file: Option<PathBuf>,
    /// The file is one JSON array of documents.
    #[arg(long = "json-array", visible_alias = "jsonArray")]
    pub json_array: bool,
    /// The field whose value is the parent key.
    #[arg(long, default_value = "_id")]
    pub key_field: String,
    /// The page cache budget the prediction is for (bytes, or with KiB, MiB, GiB).
    #[arg(long, default_value = "64MiB", value_parser = advise::parse_bytes)]
    pub budget: u64,
    /// The application shows only the newest N items of FIELD: FIELD=N (repeatable).
    #[arg(long = "reads-newest", value_name = "FIELD=N")]
    pub reads_newest: Vec<String>,
    /// The parent keys as the application reads them, one per line (Extended JSON or
    /// text), instead of Zipf(0.99) reads with the longest arrays read most.
    #[arg(long)]
    pub reads: Option<PathBuf>,
    /// Move DB COLLECTION's arrays to the layouts advised (waiting until every parent has
    /// moved), then replay the same reads on it and print the hit ratio measured beside
    /// the one predicted.
    #[arg(long, requires = "db")]
    pub apply: bool,
}

pub fn import(args: Import, cx: &Context) -> Result<(), Failure> {
    let Import {
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
    } = args;
    let json = cx.json;
    import_command(
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
    )?;
    Ok(())
}

pub fn export(args: Export, cx: &Context) -> Result<(), Failure> {
    let Export {
        db,
        collection,
        out,
        inline_only,
    } = args;
    let json = cx.json;
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
                cx.canonical,
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
            export::run(&collection, &mut stdout, inline_only, cx.canonical, |_| {})?;
        }
    }
    Ok(())
}

pub fn advise(args: Advise, cx: &Context) -> Result<(), Failure> {
    let Advise {
        db,
        collection,
        file,
        json_array,
        key_field,
        budget,
        reads_newest,
        reads,
        apply,
    } = args;
    let json = cx.json;
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
    let advice = advise_command(&request, file.as_deref(), target.clone(), json_array, json)?;
    if apply && let Some((db, name)) = target {
        apply_advice(&db, &name, &advice, json)?;
    }
    Ok(())
}

/// An `--array FIELD=LAYOUT` argument, as `create` and `import` take it.
pub(crate) fn array_arg(array: &str) -> Result<(&str, Layout), Failure> {
    let (field, layout) = array
        .split_once('=')
        .ok_or_else(|| Failure::invalid_input(format!("--array {array:?} is not FIELD=LAYOUT")))?;
    let layout = skewdb_cli::item_key::layout(layout)
        .map_err(|e| Failure::invalid_input(format!("--array {array:?}: {e}")))?;
    Ok((field, layout))
}

/// The `--array` fields of an import with the item keys and measures given for them.
pub(crate) fn import_arrays(
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
pub(crate) fn import_source(file: &Path, json_array: bool) -> Result<import::Source, Failure> {
    let input: Box<dyn std::io::BufRead + Send> = if file == Path::new("-") {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let opened = std::fs::File::open(file)
            .map_err(|e| Failure::invalid_input(format!("cannot read {}: {e}", file.display())))?;
        Box::new(std::io::BufReader::with_capacity(1 << 20, opened))
    };
    Ok(import::Source::Text { input, json_array })
}

pub(crate) fn import_command(
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

pub(crate) fn advise_command(
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
pub(crate) fn apply_advice(
    db: &Path,
    name: &str,
    advice: &advise::Advice,
    json: bool,
) -> Result<(), Failure> {
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
