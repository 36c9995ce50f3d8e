//! The RAM-limited run: the product pages on each engine (skewdb's native Subset, each peer's
//! hand-coded Subset) in a process of its own, inside a memory limit that counts the page
//! cache too (a memory cgroup: v1 `memory.limit_in_bytes`, or v2 `memory.max`), on data
//! several times the limit. Every engine gets the same 64 MiB cache, loads the products a
//! slice at a time (the harness never holds them all), opens its files again, warms its
//! cache and times its views and pages one by one. Beside each rate: the process's peak
//! resident memory, the cgroup's peak (page cache included), and the bytes the process read
//! from the device per operation (`/proc/self/io`, `read_bytes`: what the page cache did
//! not hold). An engine whose process the limit kills, or that does not finish in time, is
//! reported as such.
//!
//! Run: `cargo run --release -p skewdb-peers -- --ram-limit 320 --products 400000 --views
//! 200000` (as root, for the cgroup; without one the limit is not applied and the table says
//! so). With `--load-transaction 1000` every engine loads in transactions of 1,000 products
//! (the first holding about a million reviews), as an import in large transactions does.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::engines::{self, Model};
use crate::{CACHE_BYTES, Percentiles, Store, data};

/// Products loaded per slice, at most...
const SLICE: usize = 10_000;
/// ...and reviews: the most viewed products come first and hold most of the reviews (the
/// first 10,000 of 400,000 hold about half), so a slice ends at whichever comes first.
const SLICE_REVIEWS: usize = 50_000;
/// What a lean engine's process holds beside its records, which the yardstick's RAM leaves
/// out of the limit (redb's process peaks at its 64 MiB cache plus 14 MiB, SQLite's plus 24).
const PROCESS_BYTES: u64 = 32 << 20;
/// How long one engine's process may take before it is stopped and reported.
const CHILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// What the child prints before its phases and its result.
const PHASE: &str = "ram-phase ";
const RESULT: &str = "ram-result ";

/// The engines and models the RAM-limited run measures.
fn measured() -> [(&'static str, Model); 4] {
    [
        ("skewdb", Model::Native),
        ("redb", Model::HandSubset),
        ("fjall", Model::HandSubset),
        ("sqlite", Model::HandSubset),
    ]
}

/// What one engine's process measured.
#[derive(Clone, Debug, Default)]
struct Measured {
    views_per_second: f64,
    view_latency: Percentiles,
    pages_per_second: f64,
    page_latency: Percentiles,
    /// `VmHWM` of the engine's process.
    peak_rss_bytes: u64,
    /// Device bytes read by the process over the warm-up and the passes, per operation.
    read_bytes_per_operation: f64,
    disk_bytes: u64,
    load_seconds: f64,
}

impl Measured {
    fn encode(&self) -> String {
        format!(
            "{} {} {} {} {} {} {} {} {} {} {} {}",
            self.views_per_second,
            self.view_latency.p50_us,
            self.view_latency.p99_us,
            self.view_latency.p999_us,
            self.pages_per_second,
            self.page_latency.p50_us,
            self.page_latency.p99_us,
            self.page_latency.p999_us,
            self.peak_rss_bytes,
            self.read_bytes_per_operation,
            self.disk_bytes,
            self.load_seconds
        )
    }

    fn decode(line: &str) -> Option<Measured> {
        let f: Vec<f64> = line
            .split_whitespace()
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        let [
            views,
            v50,
            v99,
            v999,
            pages,
            p50,
            p99,
            p999,
            rss,
            read,
            disk,
            load,
        ] = f[..]
        else {
            return None;
        };
        Some(Measured {
            views_per_second: views,
            view_latency: Percentiles {
                p50_us: v50,
                p99_us: v99,
                p999_us: v999,
            },
            pages_per_second: pages,
            page_latency: Percentiles {
                p50_us: p50,
                p99_us: p99,
                p999_us: p999,
            },
            peak_rss_bytes: rss as u64,
            read_bytes_per_operation: read,
            disk_bytes: disk as u64,
            load_seconds: load,
        })
    }
}

/// How one engine's process ended.
enum Outcome {
    Measured(Measured),
    /// It did not finish: why, and the phase it was in.
    Failed {
        why: String,
        phase: String,
    },
}

/// A memory cgroup made for one process, removed when dropped.
struct Cgroup {
    dir: PathBuf,
    /// The file whose peak the cgroup reports (v1 `memory.max_usage_in_bytes`, v2
    /// `memory.peak`, where the kernel has it).
    peak_file: &'static str,
}

impl Cgroup {
    /// A new cgroup limited to `limit_bytes`, or why none could be made.
    fn create(limit_bytes: u64, name: &str) -> Result<Cgroup, String> {
        let v1 = Path::new("/sys/fs/cgroup/memory");
        let v2 = Path::new("/sys/fs/cgroup");
        let fail = |what: &str, e: std::io::Error| format!("{what}: {e}");
        if v1.join("memory.limit_in_bytes").exists() {
            let dir = v1.join(name);
            std::fs::create_dir_all(&dir).map_err(|e| fail(&dir.display().to_string(), e))?;
            let group = Cgroup {
                dir,
                peak_file: "memory.max_usage_in_bytes",
            };
            std::fs::write(
                group.dir.join("memory.limit_in_bytes"),
                limit_bytes.to_string(),
            )
            .map_err(|e| fail("memory.limit_in_bytes", e))?;
            return Ok(group);
        }
        let controllers =
            std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "memory") {
            // The memory controller must be on for the root's children.
            let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+memory");
            let dir = v2.join(name);
            std::fs::create_dir_all(&dir).map_err(|e| fail(&dir.display().to_string(), e))?;
            let group = Cgroup {
                dir,
                peak_file: "memory.peak",
            };
            std::fs::write(group.dir.join("memory.max"), limit_bytes.to_string())
                .map_err(|e| fail("memory.max", e))?;
            return Ok(group);
        }
        Err(
            "no memory cgroup (neither v1 /sys/fs/cgroup/memory nor v2 with the memory controller)"
                .into(),
        )
    }

    /// The cgroup's peak memory (page cache included), where the kernel reports it.
    fn peak_bytes(&self) -> Option<u64> {
        std::fs::read_to_string(self.dir.join(self.peak_file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Empty once its process has ended; v1 may take a moment to uncharge.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("skewdb-peers: could not remove {}", self.dir.display());
    }
}

/// What a RAM-limited run printed, and each engine's views per second (`None` for one that
/// did not finish), for a sweep over limits.
pub struct RamRun {
    pub report: String,
    pub views: Vec<(&'static str, Option<f64>)>,
}

/// Runs every measured engine in a process of its own inside `limit_mib`; returns the
/// report (the table) and the views per second of each engine.
pub fn run(
    products: u64,
    views: usize,
    limit_mib: u64,
    settings: crate::Settings,
    only: Option<&str>,
    per_transaction: Option<usize>,
) -> RamRun {
    let limit_bytes = limit_mib << 20;
    let exe = std::env::current_exe().expect("the bench's own executable");
    let mut rows = Vec::new();
    let mut limit_note = format!(
        "each engine's process in a memory cgroup limited to {limit_mib} MiB (page cache included)"
    );
    for (engine, model) in measured() {
        if only.is_some_and(|only| only != engine) {
            continue;
        }
        let name = format!("skewdb-peers-{}-{engine}", std::process::id());
        let group = match Cgroup::create(limit_bytes, &name) {
            Ok(group) => Some(group),
            Err(why) => {
                limit_note =
                    format!("NO MEMORY LIMIT APPLIED ({why}); peaks as measured without one");
                eprintln!("skewdb-peers: {limit_note}");
                None
            }
        };
        let mut command = Command::new(&exe);
        command
            .args(["--ram-child", engine])
            .args(["--products", &products.to_string()])
            .args(["--views", &views.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(group) = &group {
            command.arg("--ram-cgroup").arg(&group.dir);
        }
        if let Some(count) = per_transaction {
            command.args(["--load-transaction", &count.to_string()]);
        }
        if let Some(bytes) = settings.page_bytes {
            command.args(["--page-bytes", &bytes.to_string()]);
        }
        if let Some(percent) = settings.record_cache_percent {
            command.args(["--record-cache-percent", &percent.to_string()]);
        }
        let started = Instant::now();
        let outcome = run_child(&mut command);
        let cgroup_peak = group.as_ref().and_then(Cgroup::peak_bytes);
        match &outcome {
            Outcome::Measured(m) => eprintln!(
                "{engine} {model}: {:.0} views/s, peak RSS {} MiB ({:.0} s)",
                m.views_per_second,
                m.peak_rss_bytes >> 20,
                started.elapsed().as_secs_f64()
            ),
            Outcome::Failed { why, phase } => {
                eprintln!("{engine} {model}: did not finish ({why}, during {phase})")
            }
        }
        rows.push((engine, model, outcome, cgroup_peak));
        drop(group);
    }
    let rates = rows
        .iter()
        .map(|(engine, _, outcome, _)| match outcome {
            Outcome::Measured(m) => (*engine, Some(m.views_per_second)),
            Outcome::Failed { .. } => (*engine, None),
        })
        .collect();
    let mut table = table(&rows);
    // The yardstick: the same operations over records, with the RAM the limit leaves a
    // lean process beside its records.
    let ram_bytes = limit_bytes.saturating_sub(PROCESS_BYTES);
    let optimum = crate::optimum::run(products, views, ram_bytes);
    for (policy, per_operation) in [
        ("Belady's MIN", optimum.belady_per_operation),
        ("LRU", optimum.lru_per_operation),
    ] {
        table.push_str(&format!(
            "| record-granular yardstick | {policy} over records, {} MiB of RAM | | | | | {:.2} | | | | |\n",
            ram_bytes >> 20,
            per_operation / 1024.0
        ));
    }
    let load = match per_transaction {
        Some(count) => format!(
            "loaded in transactions of {count} products each, largest first, whatever their reviews (the first holds the most), each product made as the transaction takes it"
        ),
        None => format!(
            "loaded a slice of at most {SLICE} products and {SLICE_REVIEWS} reviews at a time"
        ),
    };
    let report = format!(
        "RAM-limited product pages: {products} products (the product-pages workload, {load}), {limit_note}; every engine's cache {} MiB (skewdb: {settings}); after the load the engine opens its files again, takes {} views to warm its cache (not timed), then {RUNS} passes of {views} views and {} pages, each timed (the median pass). Device reads: `read_bytes` of the process's `/proc/self/io` over the warm-up and the passes, per operation (view or page). The yardstick rows replay the same operations over records (a view reads its product's record, a page that record and its next fifteen reviews as one object), each miss reading the record's bytes and no more, starting cold, with the limit less {} MiB of RAM: what an engine that kept exactly the records read would read.\n\n{table}",
        CACHE_BYTES >> 20,
        data::WARM_VIEWS.min(views * crate::RUNS),
        data::PAGES.min(views),
        PROCESS_BYTES >> 20,
        RUNS = crate::RUNS,
    );
    RamRun {
        report,
        views: rates,
    }
}

/// Runs one engine's process to its end (or its timeout); its outcome.
fn run_child(command: &mut Command) -> Outcome {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Outcome::Failed {
                why: format!("could not start: {e}"),
                phase: "start".into(),
            };
        }
    };
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let (mut phase, mut result) = ("start".to_string(), None);
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(p) = line.strip_prefix(PHASE) {
                phase = p.to_string();
            } else if let Some(r) = line.strip_prefix(RESULT) {
                result = Measured::decode(r);
            }
        }
        (phase, result)
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() > CHILD_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "stopped after {} minutes",
                    CHILD_TIMEOUT.as_secs() / 60
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => break Err(format!("wait: {e}")),
        }
    };
    let (phase, result) = reader.join().expect("reader thread");
    match (status, result) {
        (Ok(status), Some(measured)) if status.success() => Outcome::Measured(measured),
        (Ok(status), _) => {
            use std::os::unix::process::ExitStatusExt;
            let why = match status.signal() {
                Some(9) => "killed (SIGKILL: the memory limit's OOM killer)".to_string(),
                Some(signal) => format!("killed by signal {signal}"),
                None => format!("exited with {status}"),
            };
            Outcome::Failed { why, phase }
        }
        (Err(why), _) => Outcome::Failed { why, phase },
    }
}

fn table(rows: &[(&str, Model, Outcome, Option<u64>)]) -> String {
    let mib = |bytes: u64| format!("{:.0}", bytes as f64 / (1 << 20) as f64);
    let mut out = String::from(
        "| engine | model | views/s | view p50 / p99 / p99.9 us | pages/s | page p99 us | device KiB read per operation | peak RSS MiB | cgroup peak MiB | disk MiB | load s |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (engine, model, outcome, cgroup_peak) in rows {
        let cgroup = cgroup_peak.map_or("-".to_string(), mib);
        match outcome {
            Outcome::Measured(m) => out.push_str(&format!(
                "| {engine} | {model} | {:.0} | {:.1} / {:.1} / {:.1} | {:.0} | {:.1} | {:.2} | {} | {cgroup} | {} | {:.0} |\n",
                m.views_per_second,
                m.view_latency.p50_us,
                m.view_latency.p99_us,
                m.view_latency.p999_us,
                m.pages_per_second,
                m.page_latency.p99_us,
                m.read_bytes_per_operation / 1024.0,
                mib(m.peak_rss_bytes),
                mib(m.disk_bytes),
                m.load_seconds,
            )),
            Outcome::Failed { why, phase } => out.push_str(&format!(
                "| {engine} | {model} | did not finish: {why}, during {phase} | | | | | | {cgroup} | | |\n"
            )),
        }
    }
    out
}

/// `/proc/self/status` `VmHWM`, in bytes.
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// `/proc/self/io` `read_bytes`: bytes this process caused to be read from the device.
fn device_read_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines()
        .find_map(|line| line.strip_prefix("read_bytes:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

fn phase(name: &str) {
    println!("{PHASE}{name}");
}

/// One engine's process: joins `cgroup` first, then loads (a slice at a time, or in
/// transactions of `per_transaction` products), reopens and times the views.
pub fn child(
    engine: &str,
    products: u64,
    views: usize,
    cgroup: Option<&Path>,
    per_transaction: Option<usize>,
) {
    if let Some(cgroup) = cgroup {
        std::fs::write(cgroup.join("cgroup.procs"), std::process::id().to_string())
            .expect("join the memory cgroup");
    }
    let (_, model) = measured()
        .into_iter()
        .find(|(name, _)| *name == engine)
        .expect("a measured engine");
    let what = format!("{engine} {model}");
    phase("load");
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut store: Box<dyn Store> = engines::open(engine, model, dir.path(), CACHE_BYTES);
    let started = Instant::now();
    let places = crate::checked_places(products as usize);
    let mut checked = Vec::new();
    let mut stream = data::product_stream(products);
    let mut at = 0;
    if let Some(count) = per_transaction {
        let mut remaining = products as usize;
        while remaining > 0 {
            let take = count.min(remaining);
            remaining -= take;
            let mut transaction = stream.by_ref().take(take).inspect(|product| {
                if places.contains(&at) {
                    checked.push(crate::Expected::of(product));
                }
                at += 1;
            });
            store.load_transaction(&mut transaction);
        }
    }
    let mut next = stream.next();
    while next.is_some() {
        let mut slice = Vec::new();
        let mut reviews = 0;
        while let Some(product) = next.take_if(|_| slice.len() < SLICE && reviews < SLICE_REVIEWS) {
            reviews += product.reviews.len();
            slice.push(product);
            next = stream.next();
        }
        for product in &slice {
            if places.contains(&at) {
                checked.push(crate::Expected::of(product));
            }
            at += 1;
        }
        store.load(&slice);
    }
    store.finish_load();
    let load_seconds = started.elapsed().as_secs_f64();
    phase("reopen");
    store.reopen(CACHE_BYTES);
    for expected in &checked {
        crate::check_expected(store.as_mut(), expected, &what);
    }
    phase("views");
    let before = device_read_bytes();
    let viewed = crate::view_passes(store.as_mut(), products, views, views);
    let read = device_read_bytes() - before;
    // Over every operation that read: the warm-up's views, and each pass's views and pages.
    let operations =
        data::WARM_VIEWS.min(views * crate::RUNS) + crate::RUNS * (views + data::PAGES.min(views));
    let measured = Measured {
        views_per_second: viewed.views_per_second,
        view_latency: viewed.view_latency,
        pages_per_second: viewed.pages_per_second,
        page_latency: viewed.page_latency,
        peak_rss_bytes: peak_rss_bytes(),
        read_bytes_per_operation: read as f64 / operations as f64,
        disk_bytes: store.disk_bytes(),
        load_seconds,
    };
    phase("done");
    println!("{RESULT}{}", measured.encode());
}
