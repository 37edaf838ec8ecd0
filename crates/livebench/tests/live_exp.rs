//! Smoke tests of the live experiments with tiny parameters: columns, and the mechanism-level
//! relations that hold on a noisy 2-vCPU machine (correct bytes, which engine is stale).

use std::collections::BTreeMap;

use unpinned_core::profile::Profile;
use unpinned_experiments::{ExperimentOutput, ExperimentSpec, RunContext};
use unpinned_livebench::exp;
use unpinned_report::Table;

fn run(name: &str, params: &[(&str, &str)]) -> ExperimentOutput {
    let spec = exp::find(name).unwrap_or_else(|| panic!("{name} registered"));
    run_spec(spec, exp::live_profile(), params)
}

/// Run `spec` (live or simulated) with `profile`, seed 1 and `params`.
fn run_spec(spec: &ExperimentSpec, profile: Profile, params: &[(&str, &str)]) -> ExperimentOutput {
    let params: BTreeMap<String, String> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let progress = |_: u64, _: u64| {};
    let ctx = RunContext {
        profile,
        kind_profile: None,
        seed: 1,
        params,
        progress: &progress,
    };
    let t = std::time::Instant::now();
    let out = (spec.run)(&ctx).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    eprintln!("{}: {:?}", spec.name, t.elapsed());
    out
}

fn cols(t: &Table) -> Vec<&str> {
    t.columns.iter().map(String::as_str).collect()
}

fn text(t: &Table, row: usize, col: &str) -> String {
    t.rows[row][t.col(col).expect("column")].to_text()
}

fn num(t: &Table, row: usize, col: &str) -> f64 {
    t.rows[row][t.col(col).expect("column")]
        .as_f64()
        .expect("number")
}

#[test]
fn part_latency_columns_and_schemes() {
    let o = run("part-latency", &[("sizes", "64,8192"), ("reps", "1")]);
    assert_eq!(
        cols(&o.table),
        [
            "scheme",
            "size_bytes",
            "latency_us",
            "cpu_us",
            "transfer_us"
        ]
    );
    // The simulator's grid: 2 sizes x 5 schemes.
    assert_eq!(o.table.rows.len(), 10);
    for r in 0..o.table.rows.len() {
        assert!(num(&o.table, r, "latency_us") > 0.0);
    }
}

#[test]
fn part_fault_all_columns_and_counters() {
    let o = run("part-fault-all", &[("sizes", "16384"), ("reps", "1")]);
    assert_eq!(
        cols(&o.table),
        [
            "scheme",
            "size_bytes",
            "latency_us",
            "fault_interrupts",
            "errs",
            "retransmitted_bytes"
        ]
    );
    let schemes: Vec<String> = (0..o.table.rows.len())
        .map(|r| text(&o.table, r, "scheme"))
        .collect();
    assert_eq!(
        schemes,
        [
            "transfer-only",
            "touch-nopres",
            "pin-nopres",
            "pio",
            "pi4",
            "pia"
        ]
    );
    // Every PART row faulted and asked for retransmission.
    for r in 3..6 {
        assert!(
            num(&o.table, r, "fault_interrupts") >= 1.0 && num(&o.table, r, "errs") >= 1.0,
            "row {r}"
        );
    }
}

#[test]
fn part_fault_small_timeout_frequency_columns() {
    let o = run("part-fault-small", &[("sizes", "64"), ("reps", "1")]);
    assert_eq!(
        cols(&o.table),
        ["size_bytes", "retransmit", "latency_us", "retransmissions"]
    );
    assert_eq!(o.table.rows.len(), 3);
    let o = run("part-timeout", &[("sizes", "16384"), ("reps", "1")]);
    assert_eq!(
        cols(&o.table),
        [
            "timeout",
            "size_bytes",
            "latency_us",
            "speedup_vs_nto",
            "retransmits_timeout",
            "retransmits_err"
        ]
    );
    assert_eq!(o.table.rows.len(), 4);
    let o = run(
        "part-fault-frequency",
        &[("sizes", "16384"), ("seeds", "1")],
    );
    assert_eq!(
        cols(&o.table),
        [
            "policy",
            "size_bytes",
            "fault_pct",
            "latency_us",
            "slowdown",
            "seeds"
        ]
    );
    assert_eq!(o.table.rows.len(), 18);
}

/// Pages of `m` present in this process's page table (pagemap), one flag per page.
fn present_pages(m: &unpinned_os::mapping::Mapping) -> Vec<bool> {
    use std::os::unix::fs::FileExt;
    let pagemap = std::fs::File::open("/proc/self/pagemap").expect("open pagemap");
    (0..m.len() as u64 / 4096)
        .map(|i| {
            let mut e = [0u8; 8];
            pagemap
                .read_exact_at(&mut e, (m.addr() / 4096 + i) * 8)
                .expect("read pagemap");
            u64::from_ne_bytes(e) & (1 << 63) != 0
        })
        .collect()
}

/// For a seed and a fault rate, the simulator and the live runtime leave the same destination
/// pages missing: both take them from `missing_pages`.
#[test]
fn both_backends_miss_the_same_pages_for_a_seed() {
    use unpinned_experiments::part::sim_testbed::SimTestbed;
    use unpinned_experiments::testbed::{missing_pages, Missing, Scheme, Write};
    let sim = SimTestbed::new(&exp::live_profile());
    for seed in [1, 2, 3] {
        let w = Write {
            missing: Missing::Fraction(0.5),
            ..Write::new(Scheme::Part, 256 << 10, seed)
        };
        let want = missing_pages(seed, w.size, w.missing);
        assert!(want.iter().any(|&m| m) && want.iter().any(|&m| !m));
        assert_eq!(sim.missing_before(&w), want, "simulator, seed {seed}");
        let dst = exp::testbed::destination(w.size, &want).unwrap();
        let live: Vec<bool> = present_pages(&dst).iter().map(|&p| !p).collect();
        assert_eq!(live, want, "live runtime, seed {seed}");
    }
}

/// One experiment through the testbed on both backends: the same grid gives tables of one
/// schema and the same rows.
#[test]
fn part_fault_small_has_one_schema_on_both_backends() {
    let live = run("part-fault-small", &[("sizes", "64,4096"), ("reps", "1")]);
    let params: BTreeMap<String, String> = [("sizes", "64,4096"), ("reps", "1")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let progress = |_: u64, _: u64| {};
    let ctx = RunContext {
        profile: exp::live_profile(),
        kind_profile: None,
        seed: 1,
        params,
        progress: &progress,
    };
    let sim = (unpinned_experiments::find("part-fault-small").unwrap().run)(&ctx).unwrap();
    assert_eq!(cols(&live.table), cols(&sim.table));
    assert_eq!(live.table.rows.len(), 6);
    for r in 0..6 {
        for c in ["size_bytes", "retransmit"] {
            assert_eq!(text(&live.table, r, c), text(&sim.table, r, c));
        }
        assert!(num(&live.table, r, "latency_us") > 0.0);
    }
    // ERR mode retransmits on ERRs, the timeout modes without them: every row retransmitted.
    for r in 0..6 {
        assert!(num(&live.table, r, "retransmissions") >= 1.0, "row {r}");
    }
}

#[test]
fn live_stale_part_is_correct_and_the_cache_is_stale() {
    let o = run("live-stale", &[("bytes", "16384")]);
    assert_eq!(cols(&o.table), ["engine", "step", "correct"]);
    for r in 0..o.table.rows.len() {
        let (engine, step, ok) = (
            text(&o.table, r, "engine"),
            text(&o.table, r, "step"),
            num(&o.table, r, "correct"),
        );
        let expect = !(engine == "pin-cache" && step == "remap");
        assert_eq!(ok == 1.0, expect, "{engine} {step}");
    }
}

#[test]
fn live_hol_every_transfer_completes() {
    let o = run(
        "live-hol",
        &[
            ("others", "2"),
            ("other_bytes", "16384"),
            ("fault_bytes", "65536"),
            ("reps", "1"),
        ],
    );
    assert_eq!(cols(&o.table), ["engine", "transfer", "latency_us"]);
    // part and blocking: 2 others + the faulting one; no-fault: 2 others.
    assert_eq!(o.table.rows.len(), 8);
    for r in 0..o.table.rows.len() {
        assert!(num(&o.table, r, "latency_us") > 0.0);
    }
}

#[test]
fn live_peers_ours_without_the_peer() {
    let o = run(
        "live-peers",
        &[("max_bytes", "64"), ("reps", "5"), ("peer", "false")],
    );
    assert_eq!(
        cols(&o.table),
        ["system", "op", "size_bytes", "latency_us", "bandwidth_gbps"]
    );
    assert_eq!(o.table.rows.len(), 8); // 8, 16, 32, 64 B x put, get
    assert!((0..8).all(|r| text(&o.table, r, "system") == "unpinned"));
}

#[test]
fn dsm_roundtrip_every_context_answers() {
    let o = run(
        "dsm-roundtrip",
        &[("pings", "20"), ("warmup", "2"), ("rounds", "1")],
    );
    assert_eq!(
        cols(&o.table),
        ["context", "rtt_us", "rtt_p10_us", "rtt_p90_us", "pings"]
    );
    let ctxs: Vec<String> = (0..o.table.rows.len())
        .map(|r| text(&o.table, r, "context"))
        .collect();
    assert_eq!(ctxs, ["progress", "deferred", "signal", "polling"]);
    for r in 0..o.table.rows.len() {
        assert_eq!(num(&o.table, r, "pings"), 20.0);
        assert!(num(&o.table, r, "rtt_us") > 0.0);
    }
}

#[test]
fn dsm_protect_batched_makes_one_call() {
    let o = run("dsm-protect", &[("reps", "5")]);
    assert_eq!(cols(&o.table), ["mechanism", "pages", "time_us", "calls"]);
    for r in 0..o.table.rows.len() {
        let calls = num(&o.table, r, "calls");
        let pages = num(&o.table, r, "pages");
        match text(&o.table, r, "mechanism").as_str() {
            "mprotect-per-page" => assert_eq!(calls, pages),
            _ => assert_eq!(calls, 1.0),
        }
        assert!(num(&o.table, r, "time_us") > 0.0);
    }
}

#[test]
fn aa_notify_measures_both_active_flushes() {
    let o = run("aa-notify", &[("puts", "30"), ("flushes", "10")]);
    let c = cols(&o.table);
    assert_eq!(
        &c[c.len() - 2..],
        ["iommu_flush_median_us", "reply_flush_median_us"]
    );
    assert_eq!(o.table.rows.len(), 12); // 3 handlers x 4 quantiles
    for r in 0..o.table.rows.len() {
        assert!(num(&o.table, r, "iommu_flush_median_us") > 0.0);
        assert!(num(&o.table, r, "reply_flush_median_us") > 0.0);
    }
}

/// `live-residency`: one row per engine and size; with the translation cache the target scans
/// nothing once its exposure is registered, without it at least once per write.
#[test]
fn live_residency_rows_and_the_cache_removes_the_target_scans() {
    let o = run(
        "live-residency",
        &[("sizes", "65536,262144"), ("rounds", "2"), ("block", "2")],
    );
    assert_eq!(
        cols(&o.table),
        [
            "engine",
            "size_bytes",
            "writes",
            "latency_us",
            "latency_p25_us",
            "latency_p75_us",
            "over_transfer_only",
            "scans_per_write_sender",
            "scans_per_write_target"
        ]
    );
    assert_eq!(o.table.rows.len(), 6);
    // Every plot renders (the files need distinct suffixes).
    for p in &o.plots {
        unpinned_report::render_svg(&o.table, p).expect("plot renders");
    }
    for r in 0..6 {
        assert!(num(&o.table, r, "latency_us") > 0.0);
        assert_eq!(num(&o.table, r, "writes"), 4.0);
    }
    // Rows per size: part-cache, part-ttl, transfer-only.
    assert_eq!(text(&o.table, 2, "engine"), "transfer-only");
    assert_eq!(num(&o.table, 2, "scans_per_write_target"), 0.0);
    // Under the TTL rule a verdict lives 20 us: writes that follow each other faster than
    // that (64 KiB took ~14-18 us in a release build once ring slots stayed warm) share a
    // scan, so the rule's row has some scans, not one per write.
    assert!(num(&o.table, 1, "scans_per_write_target") > 0.0);
    if o.meta["cache_registrations"]["target"].as_u64() > Some(0) {
        for r in [0, 3] {
            assert_eq!(num(&o.table, r, "scans_per_write_target"), 0.0);
        }
        // The 256 KiB source is watched too.
        assert_eq!(num(&o.table, 3, "scans_per_write_sender"), 0.0);
    } else {
        eprintln!("no userfaultfd here: the cache was not used");
    }
    // Bad parameters are refused, not a panic.
    let params: BTreeMap<String, String> = [("sizes".to_string(), "0".to_string())].into();
    let progress = |_: u64, _: u64| {};
    let ctx = RunContext {
        profile: exp::live_profile(),
        kind_profile: None,
        seed: 1,
        params,
        progress: &progress,
    };
    assert!((exp::find("live-residency").unwrap().run)(&ctx).is_err());
}

#[test]
fn aa_dht_link_is_the_simulators_experiment_on_the_same_inserts() {
    let params = [
        ("collision_pct", "0,50"),
        ("ops", "256"),
        ("window", "16"),
        ("reps", "1"),
    ];
    let live = run("aa-dht-link", &params);
    let sim_spec = unpinned_experiments::find("aa-dht-link").expect("simulated aa-dht-link");
    let sim = run_spec(sim_spec, Profile::forth_arm(), &params);
    assert_eq!(live.table.columns, sim.table.columns);
    assert_eq!(live.table.rows.len(), 8); // 2 collision shares x 4 schemes
    assert_eq!(live.table.rows.len(), sim.table.rows.len());
    for r in 0..live.table.rows.len() {
        for key in ["scheme", "collision_pct"] {
            assert_eq!(text(&live.table, r, key), text(&sim.table, r, key));
        }
        assert_eq!(text(&live.table, r, "driver"), "live");
        assert!(num(&live.table, r, "inserts_per_s") > 0.0);
        // The same keys into the same prefilled volume: every fresh slot has one winner, so
        // the same inserts take the collision path, and the operation count is the same.
        assert_eq!(
            text(&live.table, r, "remote_ops_per_insert"),
            text(&sim.table, r, "remote_ops_per_insert"),
            "row {r}"
        );
    }
    let rma50 = (0..8)
        .find(|&r| {
            text(&live.table, r, "scheme") == "rma" && text(&live.table, r, "collision_pct") == "50"
        })
        .expect("rma at 50%");
    assert!(num(&live.table, rma50, "remote_ops_per_insert") > 2.0);
}
