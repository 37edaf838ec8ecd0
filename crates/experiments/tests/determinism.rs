//! Every registered (simulated) experiment writes the same CSV bytes when run twice with the
//! same seed: the promise of `unpinned reproduce`'s simulated part. Each runs at a quick
//! setting of its own parameters (an experiment not listed here runs with its defaults), so the
//! whole test takes seconds; the points still run through the same code paths (thread pools,
//! seeded sub-streams, trace replay) as the full grid.

use std::collections::BTreeMap;

use unpinned_core::profile::Profile;
use unpinned_experiments::{all, ExperimentSpec, RunContext};
use unpinned_report::{write_experiment, Metadata};

/// Small grids for the experiments whose defaults take more than a fraction of a second.
fn quick(name: &str) -> &'static [(&'static str, &'static str)] {
    match name {
        "part-fault-frequency" => &[("seeds", "1")],
        "part-adaptive" => &[("seeds", "1"), ("sizes", "16384,262144")],
        "part-fault-patterns" => &[
            ("seeds", "1"),
            ("sizes", "65536"),
            ("fault_pct", "40"),
            ("uses", "2"),
            ("reclaim_per_ms", "128"),
        ],
        "part-apps" => &[("nodes", "1,2"), ("seeds", "2")],
        "part-major-faults" => &[
            ("sizes", "4096,65536"),
            ("major_us", "100,1000"),
            ("readahead_pages", "1,32"),
        ],
        "part-huge-pages" => &[("sizes", "16384,2097152"), ("zero_shares", "0.25")],
        "odp-fix" => &[("fix_periods_us", "1000")],
        "odp-fix-period" => &[
            ("ratios", "0.5,2"),
            ("fault_scales", "1"),
            ("intervals_us", "0,500"),
            ("trials", "1"),
        ],
        "aa-dht-scale" => &[("nodes", "1,4"), ("ops", "16")],
        "aa-dht-compute" => &[("ops", "16"), ("ratio_pct", "0,50")],
        "aa-dht-iotlb" => &[("entries", "8,128"), ("ops", "16")],
        "aa-dht-link" => &[("ops", "500")],
        "aa-counter" => &[("nodes", "1,4"), ("ops", "16")],
        "aa-log-gets" => &[("nodes", "1,4"), ("ops", "16")],
        "aa-sort" => &[("nodes", "1,4"), ("total_bytes", "16777216")],
        "dsm-apps" | "dsm-load" => &[
            ("apps", "sor,tsp,water"),
            ("nodes", "1,4"),
            ("threads", "1,2"),
        ],
        _ => &[],
    }
}

/// The CSV file `unpinned sim` would write for one run of `spec`.
fn csv(spec: &ExperimentSpec, run: &str) -> Vec<u8> {
    let ctx = RunContext {
        profile: Profile::forth_arm(),
        seed: 1,
        params: quick(spec.name)
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        kind_profile: None,
        progress: &|_, _| {},
    };
    let out = (spec.run)(&ctx).unwrap_or_else(|e| panic!("{} failed: {e}", spec.name));
    let dir = std::env::temp_dir().join(format!(
        "unpinned-determinism-{}-{run}-{}",
        spec.name,
        std::process::id()
    ));
    let meta = Metadata::new(spec.name, spec.system);
    let files = write_experiment(&dir, spec.name, &out.table, &[], &meta).unwrap();
    let bytes = std::fs::read(&files.csv).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

#[test]
fn every_simulated_experiment_writes_the_same_csv_twice() {
    let specs = all();
    assert!(specs.len() >= 20, "{} experiments registered", specs.len());
    let mut differ = Vec::new();
    for spec in specs {
        let (a, b) = (csv(spec, "a"), csv(spec, "b"));
        assert!(a.contains(&b'\n'), "{}: empty CSV", spec.name);
        if a != b {
            differ.push(spec.name);
        }
    }
    assert!(
        differ.is_empty(),
        "CSV differs between two runs: {differ:?}"
    );
}
