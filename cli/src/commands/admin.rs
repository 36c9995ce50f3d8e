//! The commands that run a database: exec, stats, verify, backup, restore, compact, inspect.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use skewdb::{Db, Options};
use skewdb_cli::failure::Failure;
use skewdb_cli::{exec, text};

use super::*;

#[derive(Args)]
pub struct Exec {
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args)]
pub struct Stats {
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args)]
pub struct Verify {
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args)]
pub struct Backup {
    #[command(flatten)]
    pub db: DbArg,
    /// The backup file (replaced only once the new one is complete).
    pub file: PathBuf,
}

#[derive(Args)]
pub struct Restore {
    /// The backup file.
    pub file: PathBuf,
    /// The new database directory (must not exist).
    pub db: PathBuf,
}

#[derive(Args)]
pub struct Compact {
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args)]
pub struct Inspect {
    #[command(flatten)]
    pub db: DbArg,
}

/// Runs `exec`'s lines: its exit status says whether any line or batch failed.
pub fn exec(args: Exec, cx: &Context) -> Result<ExitCode, Failure> {
    let handle = open_existing(&args.db.db)?;
    Ok(exec::run(
        &handle,
        std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
        cx.json,
    ))
}

pub fn stats(args: Stats, cx: &Context) -> Result<(), Failure> {
    let Stats { db } = args;
    let json = cx.json;
    let handle = open_for_reading(&db.db)?;
    let stats = handle.stats()?;
    let space = handle.space()?;
    if json {
        print_value(&text::stats_json(&stats, &space))?;
    } else {
        print!("{}", text::stats_text(&stats, &space));
    }
    Ok(())
}

pub fn verify(args: Verify, cx: &Context) -> Result<(), Failure> {
    let Verify { db } = args;
    let json = cx.json;
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
    Ok(())
}

pub fn backup(args: Backup, cx: &Context) -> Result<(), Failure> {
    let Backup { db, file } = args;
    let json = cx.json;
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
    Ok(())
}

pub fn restore(args: Restore, cx: &Context) -> Result<(), Failure> {
    let Restore { file, db } = args;
    let json = cx.json;
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
    Ok(())
}

pub fn compact(args: Compact, cx: &Context) -> Result<(), Failure> {
    let Compact { db } = args;
    let json = cx.json;
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
    Ok(())
}

pub fn inspect(args: Inspect, cx: &Context) -> Result<(), Failure> {
    let Inspect { db } = args;
    let json = cx.json;
    let handle = open_for_reading(&db.db)?;
    let inspection = handle.verify()?;
    if json {
        print_value(&text::inspection_json(&inspection))?;
    } else {
        print!("{}", text::inspection_text(&inspection));
    }
    Ok(())
}

/// `compact`'s progress: a spinner saying what runs while there is no total yet (finishing
/// layout moves, reclaiming what drops left), then a bar of the chunk and page bytes, once
/// the compaction has planned them. It never shows a total of nothing.
pub(crate) struct CompactBar(pub(crate) indicatif::ProgressBar, pub(crate) bool);

impl CompactBar {
    pub(crate) fn new(bar: indicatif::ProgressBar) -> CompactBar {
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} compacting: {msg} {elapsed}")
                .expect("a valid template"),
        );
        bar.set_message("finishing layout moves and reclaiming what drops left");
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
        CompactBar(bar, false)
    }

    /// `done` of `total` bytes planned: the bar once there is a total.
    pub(crate) fn at(&mut self, done: u64, total: u64) {
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

#[cfg(feature = "bench")]
pub(crate) fn bench(
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

#[cfg(test)]
mod tests {
    use super::CompactBar;

    /// The bar shows no total until there is one, then the true total.
    #[test]
    pub(crate) fn the_compact_bar_waits_for_a_total() {
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
