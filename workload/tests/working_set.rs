//! The working-set benchmark end to end at a tiny size: every run stays in its budget (the
//! runner asserts it), the optimum is never beaten, and the table and plots are written.

use skewdb::CachePolicy;
use skewdb_workload::working_set::{self, BUDGETS, Config, LIVE_LRU_BUDGET};
use skewdb_workload::{Sizes, Workload};

#[test]
fn tiny_run_writes_table_and_plots() {
    let out = tempfile::tempdir().unwrap();
    let report = working_set::run(Config {
        sizes: Sizes::tiny(),
        workloads: Workload::ALL.to_vec(),
        out_dir: Some(out.path().to_path_buf()),
        traces_dir: Some(out.path().join("traces")),
        progress: Box::new(|_| {}),
    })
    .unwrap();
    assert_eq!(working_set::POLICIES[0], CachePolicy::default());
    // The default policy at every budget, LRU live at one.
    assert_eq!(
        report.runs.len(),
        Workload::ALL.len() * 3 * (BUDGETS.len() + 1)
    );
    let lru_runs: Vec<_> = report
        .runs
        .iter()
        .filter(|r| r.policy == CachePolicy::Lru)
        .collect();
    assert_eq!(lru_runs.len(), Workload::ALL.len() * 3);
    for lru in lru_runs {
        assert_eq!(lru.budget_fraction, LIVE_LRU_BUDGET);
        // The same requests as the default policy's run, and the live LRU decides exactly as the
        // simulated one: the table's simulated LRU column is what a live run would count.
        let simulated = lru.simulated_misses(CachePolicy::Lru);
        assert!(
            lru.misses == simulated,
            "{:?} {:?}: live {} simulated {simulated} of {} requests",
            lru.workload,
            lru.layout,
            lru.misses,
            lru.requests
        );
    }
    for run in &report.runs {
        assert_eq!(run.ops, Sizes::tiny().measured_ops as u64);
        assert!(run.requests > 0, "{:?} {:?}", run.workload, run.layout);
        assert_eq!(run.hits + run.misses, run.requests);
        assert!(run.peak_resident_bytes <= run.budget_bytes);
        // Belady's bound holds for equal sizes; with sizes it is the usual estimate, so
        // allow the live policy a small edge only.
        assert!(
            run.hits <= run.optimum_hits + run.requests / 20,
            "{:?} {:?} {} beat the optimum: {} > {}",
            run.workload,
            run.layout,
            run.policy.name(),
            run.hits,
            run.optimum_hits
        );
        let simulated = run
            .simulated
            .iter()
            .find(|(p, _)| *p == CachePolicy::default().into())
            .unwrap();
        assert!(simulated.1 <= run.requests);
        // Small budgets are simulated whole, so each what-if estimate is its full
        // simulation of the same trace.
        assert_eq!(run.what_if.len(), 5);
        if run.sample_rate == 1.0 {
            assert!(
                run.worst_what_if_error() < 1e-9,
                "{:?} {:?} {:?}",
                run.workload,
                run.layout,
                run.what_if
            );
        }
    }
    assert!(
        report.runs.iter().all(|r| r.sample_rate == 1.0),
        "tiny budgets sample whole"
    );
    for (workload, data) in &report.data_bytes {
        assert!(*data > 0, "{workload:?}");
    }
    // One kept trace per layout and budget, listed with the requests it replays: the
    // simulated default policy of each run's trace, cut to its warm-up and measured requests,
    // decides as the run's own simulation did.
    let index = std::fs::read_to_string(out.path().join("traces").join("traces.csv")).unwrap();
    let rows: Vec<Vec<&str>> = index
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), Workload::ALL.len() * 3 * BUDGETS.len());
    for (row, run) in rows.iter().zip(
        report
            .runs
            .iter()
            .filter(|r| r.policy == CachePolicy::default()),
    ) {
        let trace =
            working_set::read_classed_trace(&out.path().join("traces").join(row[0])).unwrap();
        let budget: u64 = row[3].parse().unwrap();
        let (warmup, measured): (usize, usize) = (row[4].parse().unwrap(), row[5].parse().unwrap());
        assert_eq!((budget, measured as u64), (run.budget_bytes, run.requests));
        assert!(trace.requests.len() >= warmup + measured, "{}", row[0]);
        let mut sim = skewdb_cachesim::Simulator::new(CachePolicy::default(), budget);
        let mut hits = 0;
        let mut drops = trace.drops.iter();
        let mut next_drop = drops.next();
        for (i, (&(id, bytes), &inner)) in trace.requests[..warmup + measured]
            .iter()
            .zip(&trace.inner)
            .enumerate()
        {
            while let Some(&(_, dropped)) = next_drop.filter(|(before, _)| *before == i) {
                sim.remove(&dropped);
                next_drop = drops.next();
            }
            if sim.access_as(id, bytes, inner) && i >= warmup {
                hits += 1;
            }
        }
        assert_eq!(
            run.requests - hits,
            run.simulated_misses(CachePolicy::default()),
            "{}",
            row[0]
        );
    }
    let table = std::fs::read_to_string(out.path().join("working-set.md")).unwrap();
    for workload in Workload::ALL {
        assert!(table.contains(&format!("### {}", workload.name())));
        let svg = std::fs::read_to_string(
            out.path()
                .join(format!("working-set-{}.svg", workload.name())),
        )
        .unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("hit ratio"));
    }
}

#[test]
fn operations_are_the_same_for_every_run() {
    for workload in Workload::ALL {
        let a = format!(
            "{:?}",
            skewdb_workload::operations(workload, &Sizes::tiny())
        );
        let b = format!(
            "{:?}",
            skewdb_workload::operations(workload, &Sizes::tiny())
        );
        assert_eq!(a, b);
    }
}

#[test]
fn a_bad_trace_line_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.csv");
    std::fs::write(
        &path,
        "seq,object_id,object_bytes,tier\n0,12,300,hot\n1,x,3,hot\n",
    )
    .unwrap();
    assert!(working_set::read_trace(&path).is_err());
    std::fs::write(&path, "seq,object_id,object_bytes,tier\n0,12,300,hot\n").unwrap();
    assert_eq!(working_set::read_trace(&path).unwrap(), vec![(12, 300)]);
    // The class names the inner pages; an unknown one is refused.
    std::fs::write(
        &path,
        "seq,object_id,object_bytes,tier\n0,12,300,inner\n1,13,20,cold\n",
    )
    .unwrap();
    assert_eq!(
        working_set::read_classed_trace(&path).unwrap(),
        working_set::ClassedTrace {
            requests: vec![(12, 300), (13, 20)],
            inner: vec![true, false],
            drops: Vec::new(),
        }
    );
    // A drop is not a request: it is kept apart, after the requests made before it.
    std::fs::write(
        &path,
        "seq,object_id,object_bytes,tier\n0,12,300,hot\n1,12,0,drop\n2,13,20,cold\n",
    )
    .unwrap();
    let trace = working_set::read_classed_trace(&path).unwrap();
    assert_eq!(trace.requests, vec![(12, 300), (13, 20)]);
    assert_eq!(trace.drops, vec![(1, 12)]);
    assert_eq!(
        working_set::read_trace(&path).unwrap(),
        vec![(12, 300), (13, 20)]
    );
    // Replayed, the dropped object is gone: asked for again, it misses.
    let mut again = trace;
    again.requests.push((12, 300));
    again.inner.push(false);
    let mut sim = skewdb_cachesim::Simulator::new(CachePolicy::default(), 1 << 20);
    assert_eq!(again.replay(&mut sim, 0), 0);
    again.drops.clear();
    let mut sim = skewdb_cachesim::Simulator::new(CachePolicy::default(), 1 << 20);
    assert_eq!(again.replay(&mut sim, 0), 1);
    // A drop line with a bad object is refused like any other.
    std::fs::write(&path, "seq,object_id,object_bytes,tier\n0,x,0,drop\n").unwrap();
    assert!(working_set::read_trace(&path).is_err());
    std::fs::write(&path, "seq,object_id,object_bytes,tier\n0,12,300,warm\n").unwrap();
    assert!(working_set::read_trace(&path).is_err());
}

#[test]
fn runs_leave_the_built_database_as_it_was() {
    // Two identical tiny runs give identical counts: no run writes into the database the
    // next one copies (segments are hard-linked, so a write through a link would show).
    let run = || {
        working_set::run(Config {
            sizes: Sizes::tiny(),
            workloads: vec![Workload::Reviews],
            out_dir: None,
            traces_dir: None,
            progress: Box::new(|_| {}),
        })
        .unwrap()
    };
    let first = run();
    let key = |r: &working_set::Run| (r.requests, r.hits, r.bytes_read);
    let s3: Vec<_> = first
        .runs
        .iter()
        .filter(|r| r.policy == CachePolicy::default())
        .map(key)
        .collect();
    let second = run();
    let again: Vec<_> = second
        .runs
        .iter()
        .filter(|r| r.policy == CachePolicy::default())
        .map(key)
        .collect();
    assert_eq!(s3, again);
    // Within one report, every budget replays the same requests on its own copy.
    for runs in first.runs.chunks(BUDGETS.len() + 1) {
        assert!(
            runs.iter().all(|r| r.requests == runs[0].requests),
            "{:?}",
            runs.iter().map(|r| r.requests).collect::<Vec<_>>()
        );
    }
}
