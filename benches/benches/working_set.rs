//! The working-set benchmark as a plain harness: `cargo bench -p skewdb-benches --bench
//! working_set` writes `target/working-set/working-set.md` and one SVG per workload, the
//! same as `skewdb bench --out target/working-set`. `SKEWDB_BENCH_SCALE` multiplies sizes.

use skewdb_workload::working_set::{self, Config};
use skewdb_workload::{Sizes, Workload};

fn main() {
    let scale = std::env::var("SKEWDB_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("working-set");
    let report = working_set::run(Config {
        sizes: Sizes::at_scale(scale),
        workloads: Workload::ALL.to_vec(),
        out_dir: Some(out.clone()),
        traces_dir: std::env::var_os("SKEWDB_BENCH_TRACES").map(Into::into),
        progress: Box::new(|line| eprintln!("{line}")),
    })
    .expect("the working-set benchmark runs");
    print!("{}", working_set::markdown(&report));
    println!("\nwrote {}", out.join("working-set.md").display());
}
