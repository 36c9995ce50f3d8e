//! The working-set benchmark: each workload under each fitting layout and each cache budget,
//! with the live policy and LRU, beside the offline optimum on the same recorded trace.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use skewdb::{CachePolicy, Db, Layout, Options, Result};
pub use skewdb_cachesim::{ClassedTrace, read_classed_trace, read_trace};
use skewdb_cachesim::{SimPolicy, Simulator, belady_hits};

use crate::{Op, Sizes, Workload, build, build_options, operations, run_op};

/// Budgets as fractions of the Embed layout's data size.
pub const BUDGETS: [f64; 5] = [0.01, 0.05, 0.10, 0.20, 0.25];
/// The live policies each configuration runs with: the default, and LRU at one budget.
pub const POLICIES: [CachePolicy; 2] = [CachePolicy::S3FifoSized, CachePolicy::Lru];

/// The budget at which LRU also runs live. Elsewhere LRU's misses come from simulating it on
/// the default policy's run's trace: the requests do not depend on the policy, and the live cache
/// decides as the simulator does on one thread (the live LRU run shows it; only the pages a
/// checkpoint writes enter the live cache without a request), so a second live run per budget
/// would repeat them.
pub const LIVE_LRU_BUDGET: f64 = 0.05;

pub struct Config {
    pub sizes: Sizes,
    pub workloads: Vec<Workload>,
    /// Where the table and plots go; none writes nothing.
    pub out_dir: Option<PathBuf>,
    /// Where to keep each layout and budget's cache trace (`WORKLOAD-LAYOUT-PCT.csv`, as
    /// `Options::cache_trace` writes it) and `traces.csv`, which lists them with their
    /// budget, warm-up requests and measured requests (the lines after those, made by
    /// closing the database, belong to no reader), for replay in an outside simulator;
    /// none keeps none.
    pub traces_dir: Option<PathBuf>,
    /// Called with a line of progress.
    pub progress: Box<dyn FnMut(&str)>,
}

/// What one layout's database cost to build.
pub struct Built {
    pub workload: Workload,
    pub layout: Layout,
    pub seconds: f64,
    pub refused_batches: u64,
    pub disk_bytes: u64,
}

/// One run: a workload, a layout, a budget, a live policy.
#[derive(Clone)]
pub struct Run {
    pub workload: Workload,
    pub layout: Layout,
    pub budget_fraction: f64,
    pub budget_bytes: u64,
    pub policy: CachePolicy,
    pub ops: u64,
    pub reads: u64,
    pub requests: u64,
    pub hits: u64,
    pub misses: u64,
    pub read_misses: u64,
    pub bytes_read: u64,
    pub seconds: f64,
    /// Offline on the same trace after the same warm-up: the optimum, and every policy.
    pub optimum_hits: u64,
    pub simulated: Vec<(SimPolicy, u64)>,
    pub peak_resident_bytes: u64,
    /// The live cache's share of objects in its what-if sample.
    pub sample_rate: f64,
    /// Its what-if estimates over the measured phase, each beside a full simulation of the
    /// run's trace at that budget under the run's policy.
    pub what_if: Vec<WhatIfCheck>,
}

/// One what-if estimate and the full simulation it estimates.
#[derive(Clone, Copy, Debug)]
pub struct WhatIfCheck {
    pub factor: f64,
    pub budget_bytes: u64,
    pub estimate: f64,
    /// The measured phase's hit ratio, the whole trace replayed at `budget_bytes`.
    pub simulated: f64,
}

impl Run {
    pub fn hit_ratio(&self) -> f64 {
        ratio(self.hits, self.requests)
    }

    pub fn optimum_ratio(&self) -> f64 {
        ratio(self.optimum_hits, self.requests)
    }

    /// The optimum's misses on this run's trace (Belady, measured phase).
    pub fn optimum_misses(&self) -> u64 {
        self.requests.saturating_sub(self.optimum_hits)
    }

    /// `misses` (of this run, or any other count of misses on its trace) as a multiple of
    /// the optimum's: 1 is optimal; `None` when the optimum misses nothing or was not run.
    pub fn over_optimum(&self, misses: u64) -> Option<f64> {
        (self.optimum_hits > 0 && self.optimum_misses() > 0)
            .then(|| misses as f64 / self.optimum_misses() as f64)
    }

    pub fn ops_per_second(&self) -> f64 {
        self.ops as f64 / self.seconds.max(1e-9)
    }

    /// The largest gap between a what-if estimate and its full simulation, as a ratio.
    pub fn worst_what_if_error(&self) -> f64 {
        self.what_if
            .iter()
            .map(|w| (w.estimate - w.simulated).abs())
            .fold(0.0, f64::max)
    }

    /// Measured-phase misses of `policy` simulated on this run's trace.
    pub fn simulated_misses(&self, policy: impl Into<SimPolicy>) -> u64 {
        let policy = policy.into();
        let hits = self
            .simulated
            .iter()
            .find(|(p, _)| *p == policy)
            .map_or(0, |&(_, hits)| hits);
        self.requests - hits
    }
}

/// A sample rate: 1, or the share to two places.
fn sample_rate(rate: f64) -> String {
    if rate >= 1.0 {
        "1".to_string()
    } else {
        format!("{rate:.2}")
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

pub struct Report {
    pub sizes: Sizes,
    pub built: Vec<Built>,
    /// Per workload, the Embed layout's data size in cache bytes.
    pub data_bytes: Vec<(Workload, u64)>,
    pub runs: Vec<Run>,
    pub peak_process_bytes: Option<u64>,
    pub seconds: f64,
}

fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).map_err(io)? {
        total += entry.map_err(io)?.metadata().map_err(io)?.len();
    }
    Ok(total)
}

pub(crate) fn io(source: std::io::Error) -> skewdb::Error {
    skewdb::Error::Io {
        op: "benchmark files",
        file: String::new(),
        source,
    }
}

/// The number of a segment file name's tail (`00000003.log` of a hot segment,
/// `00000003.seg` of a cold one).
fn segment_number(rest: &str) -> Option<u64> {
    let digits = rest
        .strip_suffix(".log")
        .or_else(|| rest.strip_suffix(".seg"))?;
    digits.parse().ok()
}

/// A private copy of a built database for one run. Segment files other than the newest of
/// each kind are never written again, so they are hard-linked; the newest ones, which the
/// run appends to, and every other file are copied.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    let mut newest: rustc_hash::FxHashMap<String, (u64, std::ffi::OsString)> = Default::default();
    let mut names = Vec::new();
    for entry in std::fs::read_dir(from).map_err(io)? {
        let name = entry.map_err(io)?.file_name();
        let text = name.to_string_lossy().to_string();
        if let Some((kind, rest)) = text.split_once('-')
            && let Some(number) = segment_number(rest)
        {
            let slot = newest
                .entry(kind.to_string())
                .or_insert((number, name.clone()));
            if number >= slot.0 {
                *slot = (number, name.clone());
            }
        }
        names.push((text, name));
    }
    for (text, name) in names {
        if text == "LOCK" {
            continue;
        }
        let is_segment = text
            .split_once('-')
            .is_some_and(|(_, rest)| segment_number(rest).is_some());
        let is_newest = newest.values().any(|(_, n)| *n == name);
        if is_segment && !is_newest {
            std::fs::hard_link(from.join(&name), to.join(&name)).map_err(io)?;
        } else {
            std::fs::copy(from.join(&name), to.join(&name)).map_err(io)?;
        }
    }
    Ok(())
}

/// The Embed layout's data size as the cache weighs it: every object a full read touches,
/// once each, read from a trace (so nothing has to be held in memory to measure it).
fn data_bytes(dir: &Path, scratch: &Path) -> Result<u64> {
    let trace_path = scratch.join("size-trace.csv");
    {
        let options = build_options()
            .cache_bytes(0)
            .cache_what_if(false)
            .cache_trace(&trace_path);
        let db = Db::open(dir, options)?;
        let collection = db.collection(crate::COLLECTION)?;
        for doc in collection.scan(..)? {
            let doc = doc?;
            collection.items(doc.key(), crate::FIELD, &skewdb::ItemQuery::new())?;
        }
    }
    let mut seen = rustc_hash::FxHashMap::default();
    for (id, bytes) in read_trace(&trace_path)? {
        seen.insert(id, bytes);
    }
    std::fs::remove_file(&trace_path).map_err(io)?;
    Ok(seen.values().sum())
}

/// What every run of one workload and layout shares.
struct Setup<'a> {
    source: &'a Path,
    scratch: &'a Path,
    workload: Workload,
    layout: Layout,
    ops: &'a [Op],
    sizes: &'a Sizes,
}

/// A budget's offline results, from its first run's trace: the optimum's hits, every
/// policy's simulated hits, and the trace.
type Offline = (u64, Vec<(SimPolicy, u64)>, std::rc::Rc<Recorded>);

/// Where in the scratch directory each run writes its trace (the last run's stays there).
const TRACE_FILE: &str = "trace.csv";

/// The requests a run made, and how many of them were the warm-up.
struct Recorded {
    trace: ClassedTrace,
    warmup: usize,
}

/// One run; with `keep_trace`, also the requests it made. Every run records its trace, so
/// all pay the same for it.
fn run_one(
    setup: &Setup,
    budget: (f64, u64),
    policy: CachePolicy,
    keep_trace: bool,
) -> Result<(Run, Option<Recorded>)> {
    let Setup {
        source,
        scratch,
        workload,
        layout,
        ops,
        sizes,
    } = *setup;
    let dir = scratch.join("run");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(io)?;
    copy_dir(source, &dir)?;
    let trace_path = scratch.join(TRACE_FILE);
    // The page cache alone, as the benchmark studies it: all of the budget for pages and
    // chunks, every read a request to it (the record tier would answer repeated gets
    // before they reach it, and its hits are not in the trace the optimum replays).
    let options: Options = build_options()
        .cache_bytes(budget.1 as usize)
        .record_cache_percent(0)
        .cache_policy(policy)
        .cache_what_if(true)
        .cache_trace(&trace_path);
    let (run, warmup_requests) = {
        let db = Db::open(&dir, options)?;
        let collection = db.collection(crate::COLLECTION)?;
        let (warmup, measured) = ops.split_at(sizes.warmup_ops.min(ops.len()));
        for op in warmup {
            run_op(&db, &collection, workload, layout, op)?;
        }
        let warmup_requests = db.cache_stats().total().requests as usize;
        db.reset_stats();
        let (mut seconds, mut reads, mut read_misses, mut peak) = (0.0, 0, 0, 0);
        for op in measured {
            let is_read = matches!(op, Op::Read(_));
            let before = if is_read {
                db.cache_stats().total().misses
            } else {
                0
            };
            let started = Instant::now();
            std::hint::black_box(run_op(&db, &collection, workload, layout, op)?);
            seconds += started.elapsed().as_secs_f64();
            if is_read {
                let stats = db.cache_stats().total();
                reads += 1;
                read_misses += stats.misses - before;
                peak = peak.max(stats.resident_bytes);
            }
        }
        let stats = db.cache_stats();
        let total = stats.total();
        assert!(
            total.resident_bytes <= budget.1,
            "resident bytes over the budget"
        );
        let what_if = stats
            .what_if
            .iter()
            .map(|w| WhatIfCheck {
                factor: w.factor,
                budget_bytes: w.budget_bytes,
                estimate: w.hit_ratio,
                simulated: f64::NAN,
            })
            .collect();
        let run = Run {
            workload,
            layout,
            budget_fraction: budget.0,
            budget_bytes: budget.1,
            policy,
            ops: measured.len() as u64,
            reads,
            requests: total.requests,
            hits: total.hits,
            misses: total.misses,
            read_misses,
            bytes_read: total.bytes_read,
            seconds,
            optimum_hits: 0,
            simulated: Vec::new(),
            peak_resident_bytes: peak.max(total.resident_bytes),
            sample_rate: stats.sample_rate,
            what_if,
        };
        (run, warmup_requests)
    };
    let recorded = if keep_trace {
        // The trace goes on past the measured phase: closing the database (its last
        // checkpoint) makes requests the counters above never saw. They are no reader's.
        let mut trace = read_classed_trace(&trace_path)?;
        trace.truncate(warmup_requests + run.requests as usize);
        Some(Recorded {
            trace,
            warmup: warmup_requests,
        })
    } else {
        None
    };
    std::fs::remove_dir_all(&dir).map_err(io)?;
    Ok((run, recorded))
}

fn simulate(recorded: &Recorded, budget: u64, policy: impl Into<SimPolicy>) -> u64 {
    recorded
        .trace
        .replay(&mut Simulator::new(policy, budget), recorded.warmup)
}

/// The peak resident memory of this process, where the system tells it.
pub fn peak_process_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

pub fn run(mut config: Config) -> Result<Report> {
    let started = Instant::now();
    let sizes = config.sizes;
    let scratch = tempfile::tempdir().map_err(io)?;
    let mut report = Report {
        sizes,
        built: Vec::new(),
        data_bytes: Vec::new(),
        runs: Vec::new(),
        peak_process_bytes: None,
        seconds: 0.0,
    };
    let mut trace_index =
        String::from("file,workload,layout,budget_bytes,warmup_requests,measured_requests\n");
    for &workload in &config.workloads {
        let ops = operations(workload, &sizes);
        let mut dirs = Vec::new();
        for layout in workload.layouts() {
            let dir = scratch
                .path()
                .join(format!("{}-{}", workload.name(), dirs.len()));
            std::fs::create_dir_all(&dir).map_err(io)?;
            let started = Instant::now();
            let refused = {
                let options = build_options()
                    .cache_bytes(8 << 20)
                    .checkpoint_bytes(4 << 20);
                let db = Db::open(&dir, options)?;
                let refused = build(&db, workload, layout, &sizes)?;
                // As after any bulk load: the log cleaned, small history chunks merged.
                db.compact()?;
                refused
            };
            let built = Built {
                workload,
                layout,
                seconds: started.elapsed().as_secs_f64(),
                refused_batches: refused,
                disk_bytes: dir_bytes(&dir)?,
            };
            (config.progress)(&format!(
                "built {} under {} in {:.1} s (peak process memory so far {})",
                workload.name(),
                layout.describe(),
                built.seconds,
                peak_process_bytes().map_or("unknown".to_string(), mib)
            ));
            report.built.push(built);
            dirs.push((layout, dir));
        }
        let embed_dir = &dirs[0].1;
        let data = data_bytes(embed_dir, scratch.path())?;
        report.data_bytes.push((workload, data));
        for (layout, dir) in &dirs {
            for fraction in BUDGETS {
                let budget = (data as f64 * fraction) as u64;
                // The requests do not depend on the policy, so the first run's trace
                // serves the optimum and the simulations of every run at this budget.
                let mut offline: Option<Offline> = None;
                let policies = if fraction == LIVE_LRU_BUDGET {
                    &POLICIES[..]
                } else {
                    &POLICIES[..1]
                };
                for &policy in policies {
                    let setup = Setup {
                        source: dir,
                        scratch: scratch.path(),
                        workload,
                        layout: *layout,
                        ops: &ops,
                        sizes: &sizes,
                    };
                    let (mut run, recorded) =
                        run_one(&setup, (fraction, budget), policy, offline.is_none())?;
                    if let (Some(dir), Some(recorded)) = (&config.traces_dir, &recorded) {
                        let name = format!(
                            "{}-{}-{:.0}.csv",
                            workload.name(),
                            layout.describe().replace(':', "-"),
                            fraction * 100.0
                        );
                        std::fs::create_dir_all(dir).map_err(io)?;
                        std::fs::copy(scratch.path().join(TRACE_FILE), dir.join(&name))
                            .map_err(io)?;
                        trace_index.push_str(&format!(
                            "{name},{},{},{budget},{},{}\n",
                            workload.name(),
                            layout.describe(),
                            recorded.warmup,
                            recorded.trace.requests.len() - recorded.warmup
                        ));
                    }
                    if let Some(recorded) = recorded {
                        let simulated = SimPolicy::ALL
                            .iter()
                            .map(|&p| (p, simulate(&recorded, budget, p)))
                            .collect();
                        offline = Some((
                            belady_hits(&recorded.trace.requests, budget, recorded.warmup),
                            simulated,
                            std::rc::Rc::new(recorded),
                        ));
                    }
                    let (optimum_hits, simulated, trace) =
                        offline.clone().expect("the first run records");
                    run.optimum_hits = optimum_hits;
                    run.simulated = simulated;
                    for check in &mut run.what_if {
                        let hits = simulate(&trace, check.budget_bytes, policy);
                        check.simulated = ratio(hits, run.requests);
                    }
                    (config.progress)(&format!(
                        "{} {} {:.0}% {}: hit ratio {:.3} (optimum {:.3}), {:.0} ops/s",
                        workload.name(),
                        layout.describe(),
                        fraction * 100.0,
                        policy.name(),
                        run.hit_ratio(),
                        run.optimum_ratio(),
                        run.ops_per_second()
                    ));
                    report.runs.push(run);
                }
            }
        }
    }
    if let Some(dir) = &config.traces_dir {
        std::fs::write(dir.join("traces.csv"), trace_index).map_err(io)?;
    }
    report.peak_process_bytes = peak_process_bytes();
    report.seconds = started.elapsed().as_secs_f64();
    if let Some(out) = &config.out_dir {
        std::fs::create_dir_all(out).map_err(io)?;
        std::fs::write(out.join("working-set.md"), markdown(&report)).map_err(io)?;
        for &workload in &config.workloads {
            let path = out.join(format!("working-set-{}.svg", workload.name()));
            crate::plot::hit_ratio_plot(&report, workload, &path)?;
        }
    }
    Ok(report)
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

/// The report as markdown: one table per workload, then the policies side by side.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let s = &report.sizes;
    let _ = writeln!(
        out,
        "Sizes: followers {} users (celebrity {} followers); reviews {} products, {} reviews; \
         sensors {} sensors x {} days of minute readings. Each run: {} warm-up operations, then \
         {} measured, from seed {}.\n",
        s.users,
        s.celebrity_followers,
        s.products,
        s.reviews,
        s.sensors,
        s.days,
        s.warmup_ops,
        s.measured_ops,
        crate::SEED
    );
    for &(workload, data) in &report.data_bytes {
        let _ = writeln!(
            out,
            "### {} ({})\n\nEmbed data size {}; budgets are fractions of it. Live policy {}; \
             optimum: Belady on the same trace. Misses are compared as multiples of the \
             optimum's on the same trace (1 is optimal; Belady here ignores object sizes, so a \
             live policy can come slightly under it), the live policy's and LRU's (simulated); \
             the hit ratios are kept beside them.\n",
            workload.name(),
            workload.operation(),
            mib(data),
            CachePolicy::default().name()
        );
        let _ = writeln!(
            out,
            "| layout | budget | hit ratio | optimum | misses / optimum's | LRU's / optimum's | misses/op | misses/read | KiB read/op | ops/s |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for run in report
            .runs
            .iter()
            .filter(|r| r.workload == workload && r.policy == CachePolicy::default())
        {
            let over = |misses| {
                run.over_optimum(misses)
                    .map_or("-".to_string(), |x| format!("{x:.2}x"))
            };
            let _ = writeln!(
                out,
                "| {} | {:.0}% ({}) | {:.3} | {:.3} | {} | {} | {:.2} | {} | {:.1} | {:.0} |",
                run.layout.describe(),
                run.budget_fraction * 100.0,
                mib(run.budget_bytes),
                run.hit_ratio(),
                run.optimum_ratio(),
                over(run.requests - run.hits),
                over(run.simulated_misses(CachePolicy::Lru)),
                ratio(run.misses, run.ops),
                if run.reads == 0 {
                    "-".to_string()
                } else {
                    format!("{:.2}", ratio(run.read_misses, run.reads))
                },
                run.bytes_read as f64 / 1024.0 / run.ops.max(1) as f64,
                run.ops_per_second()
            );
        }
        let live = CachePolicy::default();
        let names: String = SimPolicy::ALL
            .iter()
            .map(|p| format!(" {} (sim) |", p.name()))
            .collect();
        let _ = writeln!(
            out,
            "\nEvery policy on the same trace, as misses over the optimum's (simulated; the live \
             run's own, {live}, first, and LRU also live at the {:.0}% budget, both in misses per \
             operation). Live and simulated runs see the same requests and decide alike; they \
             part only where a checkpoint puts the pages it wrote into the live cache, which is \
             not a request and not in the trace:\n\n\
             | layout | budget | {live} live | fewer than LRU |{names} LRU live |\n\
             |---|---|---|---|{}---|",
            LIVE_LRU_BUDGET * 100.0,
            "---|".repeat(SimPolicy::ALL.len()),
            live = live.name(),
        );
        let runs = report.runs.iter().filter(|r| r.workload == workload);
        for run in runs.clone().filter(|r| r.policy == live) {
            let lru_live = runs.clone().find(|r| {
                r.policy == CachePolicy::Lru
                    && r.layout == run.layout
                    && r.budget_fraction == run.budget_fraction
            });
            let simulated: String = SimPolicy::ALL
                .iter()
                .map(|&p| {
                    let over = run.over_optimum(run.simulated_misses(p));
                    over.map_or(" - |".to_string(), |x| format!(" {x:.2}x |"))
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {:.0}% | {:.3} | {} |{simulated} {} |",
                run.layout.describe(),
                run.budget_fraction * 100.0,
                ratio(run.misses, run.ops),
                match run.misses.cmp(&run.simulated_misses(CachePolicy::Lru)) {
                    std::cmp::Ordering::Less => "yes",
                    std::cmp::Ordering::Equal => "equal",
                    std::cmp::Ordering::Greater => "no",
                },
                lru_live.map_or("-".to_string(), |r| format!(
                    "{:.3}",
                    ratio(r.misses, r.ops)
                )),
            );
        }
        let first = runs.clone().find(|r| r.policy == live);
        let factors: Vec<f64> =
            first.map_or(Vec::new(), |r| r.what_if.iter().map(|w| w.factor).collect());
        let header: String = factors.iter().map(|f| format!(" {f}x |")).collect();
        let _ = writeln!(
            out,
            "\nWhat-if estimates of the {live} runs (hit ratios over the measured phase, from \
             the live cache's hash-sampled miniature caches, corrected for the sample's share \
             of requests) against a full simulation of the run's trace at each budget, as \
             estimate / simulation:\n\n\
             | layout | budget | sample rate |{header} worst error |\n\
             |---|---|---|{}---|",
            "---|".repeat(factors.len()),
            live = live.name(),
        );
        for run in runs.clone().filter(|r| r.policy == live) {
            let cells: String = run
                .what_if
                .iter()
                .map(|w| format!(" {:.3} / {:.3} |", w.estimate, w.simulated))
                .collect();
            let _ = writeln!(
                out,
                "| {} | {:.0}% | {} |{cells} {:.1} points |",
                run.layout.describe(),
                run.budget_fraction * 100.0,
                sample_rate(run.sample_rate),
                run.worst_what_if_error() * 100.0,
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "Builds:\n\n| workload | layout | build s | refused batches | disk |\n|---|---|---|---|---|"
    );
    for b in &report.built {
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {} | {} |",
            b.workload.name(),
            b.layout.describe(),
            b.seconds,
            b.refused_batches,
            mib(b.disk_bytes)
        );
    }
    let largest_budget = report
        .runs
        .iter()
        .map(|r| r.budget_bytes)
        .max()
        .unwrap_or(0);
    let peak_resident = report
        .runs
        .iter()
        .map(|r| r.peak_resident_bytes)
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "\nLargest budget {}; largest resident cache bytes seen {}; peak process memory {}; whole run {:.0} s.",
        mib(largest_budget),
        mib(peak_resident),
        report.peak_process_bytes.map_or("unknown".to_string(), mib),
        report.seconds
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(dir: &Path) -> Vec<(String, u64)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().to_string(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        files.sort();
        files
    }

    #[test]
    fn writing_to_a_copy_leaves_the_source_alone() {
        let source = tempfile::tempdir().unwrap();
        let options = build_options().segment_bytes(64 * 1024);
        {
            let db = Db::open(source.path(), options.clone()).unwrap();
            build(
                &db,
                Workload::Reviews,
                Layout::Subset { keep: 5 },
                &Sizes::tiny(),
            )
            .unwrap();
            // New parents in batches past the segment size: the checkpoints' page files
            // roll over while the built pages stay where they are, so the source keeps more
            // than one page file.
            for round in 0..3 {
                let mut batch = db.batch();
                for i in 0..500 {
                    batch.put(
                        crate::COLLECTION,
                        format!("more{round}-{i}"),
                        vec![1u8; 200],
                    );
                }
                batch.commit().unwrap();
            }
        }
        let before = lengths(source.path());
        // Segments older than the newest of their kind are hard-linked into the copy.
        let segments = |kind: &str| before.iter().filter(|(n, _)| n.starts_with(kind)).count();
        assert!(segments("pages-") > 1, "{before:?}");
        let copy = tempfile::tempdir().unwrap();
        copy_dir(source.path(), copy.path()).unwrap();
        {
            let db = Db::open(copy.path(), options).unwrap();
            let mut batch = db.batch();
            for i in 0..500 {
                batch.put(crate::COLLECTION, format!("new{i}"), vec![7u8; 200]);
            }
            batch.commit().unwrap();
            db.checkpoint().unwrap();
        }
        assert_eq!(lengths(source.path()), before);
        assert_ne!(lengths(copy.path()), before);
    }
}
