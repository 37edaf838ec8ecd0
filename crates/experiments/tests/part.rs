//! Every PART experiment runs on the built-in profile, has the columns the issue names, and
//! shows the relations its mechanism implies (not fitted values).

use std::collections::BTreeMap;

use unpinned_core::profile::Profile;
use unpinned_experiments::{find, ExperimentOutput, RunContext, Table};

fn run(name: &str, params: &[(&str, &str)]) -> ExperimentOutput {
    let ctx = RunContext {
        profile: Profile::forth_arm(),
        kind_profile: None,
        seed: 1,
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        progress: &|_, _| {},
    };
    let spec = find(name).unwrap_or_else(|| panic!("{name} is registered"));
    (spec.run)(&ctx).unwrap_or_else(|e| panic!("{name} failed: {e}"))
}

fn has_columns(t: &Table, cols: &[&str]) {
    for c in cols {
        assert!(t.col(c).is_some(), "missing column {c} in {:?}", t.columns);
    }
}

/// Value of `y` in the row where every `(column, value)` of `key` matches (as text).
fn value(t: &Table, key: &[(&str, &str)], y: &str) -> f64 {
    let yi = t.col(y).unwrap();
    let rows: Vec<_> = t
        .rows
        .iter()
        .filter(|r| {
            key.iter()
                .all(|(c, v)| r[t.col(c).unwrap()].to_text() == *v)
        })
        .collect();
    assert_eq!(rows.len(), 1, "exactly one row for {key:?}");
    rows[0][yi].as_f64().unwrap()
}

#[test]
fn part_latency() {
    let o = run("part-latency", &[]);
    has_columns(&o.table, &["scheme", "size_bytes", "latency_us"]);
    for size in ["64", "4096", "4194304"] {
        let lat = |s: &str| {
            value(
                &o.table,
                &[("scheme", s), ("size_bytes", size)],
                "latency_us",
            )
        };
        assert!(lat("transfer-only") < lat("touch-pres"));
        assert!(lat("touch-pres") < lat("touch-nopres"));
        assert!(lat("pin-pres") < lat("pin-nopres"));
    }
}

#[test]
fn part_fault_all_policies_order_by_page_in_granularity() {
    let o = run("part-fault-all", &[]);
    has_columns(&o.table, &["scheme", "size_bytes", "latency_us"]);
    for size in ["65536", "1048576", "4194304"] {
        let lat = |s: &str| {
            value(
                &o.table,
                &[("scheme", s), ("size_bytes", size)],
                "latency_us",
            )
        };
        assert!(
            lat("pia") < lat("pi4") && lat("pi4") < lat("pio"),
            "size {size}: pia {} pi4 {} pio {}",
            lat("pia"),
            lat("pi4"),
            lat("pio")
        );
        assert!(lat("transfer-only") < lat("pia"));
    }
}

#[test]
fn part_breakdown_has_sum_and_measured() {
    let o = run("part-breakdown", &[]);
    has_columns(&o.table, &["size_bytes", "component", "time_us"]);
    for size in ["4096", "4194304"] {
        let sum = value(
            &o.table,
            &[("size_bytes", size), ("component", "sum")],
            "time_us",
        );
        let measured = value(
            &o.table,
            &[("size_bytes", size), ("component", "measured")],
            "time_us",
        );
        let gup = value(
            &o.table,
            &[("size_bytes", size), ("component", "get_user_pages")],
            "time_us",
        );
        assert!(gup > 0.0 && sum > 0.0 && measured > 0.0);
        // No component runs longer than the whole transfer.
        assert!(gup < measured);
        // With the default 1 ms block timeout, the resend overlaps the page-in at 4 MiB
        // (the NTO run serializes them); at 4 KiB the ERR comes long before the timeout.
        let timed = value(
            &o.table,
            &[("size_bytes", size), ("component", "measured_timeout")],
            "time_us",
        );
        if size == "4096" {
            assert_eq!(timed, measured);
        } else {
            assert!(timed < measured, "{timed} vs {measured}");
        }
    }
}

#[test]
fn part_fault_small_err_beats_timeouts() {
    let o = run("part-fault-small", &[]);
    has_columns(&o.table, &["size_bytes", "retransmit", "latency_us"]);
    for size in ["64", "4096", "16384"] {
        let lat = |m: &str| {
            value(
                &o.table,
                &[("size_bytes", size), ("retransmit", m)],
                "latency_us",
            )
        };
        assert!(lat("err") < lat("to100us") && lat("to100us") < lat("to1ms"));
        // A timeout-only retransmission waits at least the timeout.
        assert!(lat("to1ms") > 1000.0);
    }
}

#[test]
fn part_timeout_short_timeouts_overlap_page_in_with_transfer() {
    let o = run("part-timeout", &[]);
    has_columns(
        &o.table,
        &["timeout", "size_bytes", "latency_us", "speedup_vs_nto"],
    );
    let s = |t: &str| {
        value(
            &o.table,
            &[("timeout", t), ("size_bytes", "4194304")],
            "speedup_vs_nto",
        )
    };
    assert_eq!(s("nto"), 1.0);
    assert!(
        s("100us") > s("1ms") && s("1ms") > 1.0,
        "100us {} 1ms {}",
        s("100us"),
        s("1ms")
    );
}

#[test]
fn part_fault_frequency_slowdown_grows_with_faults() {
    let o = run("part-fault-frequency", &[("seeds", "2")]);
    has_columns(
        &o.table,
        &[
            "policy",
            "size_bytes",
            "fault_pct",
            "latency_us",
            "slowdown",
        ],
    );
    for policy in ["pio", "pia"] {
        let sd = |f: &str| {
            value(
                &o.table,
                &[
                    ("policy", policy),
                    ("size_bytes", "1048576"),
                    ("fault_pct", f),
                ],
                "slowdown",
            )
        };
        assert_eq!(sd("0"), 1.0);
        assert!(sd("100") > sd("10") && sd("10") >= 1.0);
    }
}

#[test]
fn part_isend_pretouch_costs_grow_with_size() {
    let o = run("part-isend", &[("samples", "50")]);
    has_columns(&o.table, &["size_bytes", "pretouch", "call_us"]);
    let t = &o.table;
    let (si, pi, ci) = (
        t.col("size_bytes").unwrap(),
        t.col("pretouch").unwrap(),
        t.col("call_us").unwrap(),
    );
    let mut yes: Vec<(f64, f64)> = t
        .rows
        .iter()
        .filter(|r| r[pi].to_text() == "yes")
        .map(|r| (r[si].as_f64().unwrap(), r[ci].as_f64().unwrap()))
        .collect();
    yes.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    assert!(yes.first().unwrap().1 < yes.last().unwrap().1);
    assert_eq!(t.rows.len(), 100);
}

#[test]
fn bad_parameters_are_rejected() {
    let ctx = RunContext {
        profile: Profile::forth_arm(),
        kind_profile: None,
        seed: 1,
        params: [("seeds".to_string(), "many".to_string())].into(),
        progress: &|_, _| {},
    };
    assert!((find("part-fault-frequency").unwrap().run)(&ctx).is_err());
}

#[test]
fn part_apps_part_pays_first_use_faults_only() {
    let o = run(
        "part-apps",
        &[
            ("nodes", "1,4"),
            ("seeds", "2"),
            ("lammps_steps", "30"),
            ("hpl_panels", "6"),
            ("hpcg_iterations", "1"),
        ],
    );
    has_columns(
        &o.table,
        &[
            "app",
            "nodes",
            "mode",
            "seed",
            "time_s",
            "slowdown",
            "fault_interrupts",
            "errs",
        ],
    );
    assert_eq!(o.table.rows.len(), 3 * 2 * 2 * 2);
    for app in ["lammps", "hpl", "hpcg"] {
        for seed in ["1", "2"] {
            let v = |mode: &str, nodes: &str, y: &str| {
                value(
                    &o.table,
                    &[
                        ("app", app),
                        ("mode", mode),
                        ("nodes", nodes),
                        ("seed", seed),
                    ],
                    y,
                )
            };
            assert_eq!(
                v("pretouch", "4", "fault_interrupts"),
                0.0,
                "{app}: pre-touch takes no network fault"
            );
            assert!(
                v("part", "4", "fault_interrupts") > 0.0 && v("part", "4", "errs") > 0.0,
                "{app}: first use faults under PART"
            );
            assert!(v("part", "4", "slowdown") >= 1.0, "{app}: faults cost time");
            assert_eq!(
                v("part", "1", "slowdown"),
                1.0,
                "{app}: one node sends nothing"
            );
        }
    }
}

#[test]
fn part_apps_rejects_impossible_parameters() {
    for (k, v) in [
        ("packet_bytes", "0"),
        ("packet_bytes", "70000"),
        ("nodes", "0"),
        ("scale", "huge"),
        ("apps", "quake"),
        ("mem_gbps", "-1"),
    ] {
        let ctx = RunContext {
            profile: Profile::forth_arm(),
            kind_profile: None,
            seed: 1,
            params: [(k.to_string(), v.to_string())].into(),
            progress: &|_, _| {},
        };
        assert!(
            (find("part-apps").unwrap().run)(&ctx).is_err(),
            "{k}={v} accepted"
        );
    }
}

#[test]
fn part_early_err_overlaps_without_a_timeout() {
    let o = run("part-early-err", &[]);
    has_columns(
        &o.table,
        &[
            "scheme",
            "size_bytes",
            "latency_us",
            "speedup_vs_nto",
            "retransmits_timeout",
        ],
    );
    for size in ["4096", "16384", "65536", "262144", "1048576", "4194304"] {
        let lat = |s: &str| {
            value(
                &o.table,
                &[("scheme", s), ("size_bytes", size)],
                "latency_us",
            )
        };
        // Early ERR overlaps the resend with the page-in: faster than waiting for all pages,
        // and than a 100 us timeout (which fires only after 100 us, or not at all when the
        // page-in is shorter).
        assert!(
            lat("early-err") < lat("nto") && lat("early-err") < lat("to-100us"),
            "size {size}: early {} nto {} to-100us {}",
            lat("early-err"),
            lat("nto"),
            lat("to-100us")
        );
    }
    let speedup = value(
        &o.table,
        &[("scheme", "early-err"), ("size_bytes", "4194304")],
        "speedup_vs_nto",
    );
    assert!(speedup > 1.5, "4 MiB speedup over NTO {speedup}");
    // The report states the headline from these rows.
    let f = unpinned_report::findings::for_experiment("part-early-err", &o.table);
    assert!(
        f[0].contains("at 4 MiB:") && f[0].contains("to-100us"),
        "{f:?}"
    );
    for line in &f {
        eprintln!("{line}");
    }
    // No block timeout is involved.
    for size in ["4096", "4194304"] {
        let to = value(
            &o.table,
            &[("scheme", "early-err"), ("size_bytes", size)],
            "retransmits_timeout",
        );
        assert_eq!(to, 0.0, "size {size}");
    }
}

#[test]
fn part_kernel_err_saves_the_notification() {
    let o = run("part-kernel-err", &[]);
    has_columns(
        &o.table,
        &[
            "err_point",
            "size_bytes",
            "user_us",
            "kernel_us",
            "saved_us",
            "saved_pct",
        ],
    );
    // With the ERR at the end of the page-in, one notification per task loop is saved.
    let saved = value(
        &o.table,
        &[("err_point", "end"), ("size_bytes", "4096")],
        "saved_us",
    );
    assert!((6.9..7.1).contains(&saved), "4 KiB saves {saved} us");
    // Early ERR notifies once per early point: kernel context saves one notification per ERR.
    let saved = value(
        &o.table,
        &[("err_point", "early"), ("size_bytes", "4194304")],
        "saved_us",
    );
    assert!(saved > 7.0, "4 MiB early saves {saved} us");
    let f = unpinned_report::findings::for_experiment("part-kernel-err", &o.table);
    assert!(
        f[0].contains("at 4 KiB") && f[0].contains("at 4 MiB"),
        "{f:?}"
    );
    for line in &f {
        eprintln!("{line}");
    }
}

/// The adaptive policy against the better of PIO and PIA over a part of part-fault-frequency's
/// grid: where PIA's page-in of the rest pays (dense faults), it does the same; nowhere is it
/// far from the better fixed policy.
#[test]
fn part_adaptive_tracks_the_better_fixed_policy() {
    let o = run(
        "part-adaptive",
        &[("seeds", "2"), ("sizes", "65536,1048576")],
    );
    has_columns(
        &o.table,
        &[
            "policy",
            "size_bytes",
            "fault_pct",
            "latency_us",
            "best_fixed",
            "vs_best_fixed",
        ],
    );
    let t = &o.table;
    let (pol, vs) = (t.col("policy").unwrap(), t.col("vs_best_fixed").unwrap());
    let adaptive: Vec<f64> = t
        .rows
        .iter()
        .filter(|r| r[pol].to_text() == "adaptive")
        .map(|r| r[vs].as_f64().unwrap())
        .collect();
    assert_eq!(adaptive.len(), 18);
    assert!(
        adaptive.iter().all(|&v| v < 1.10),
        "adaptive / better fixed: {adaptive:?}"
    );
    let lat = |p: &str| {
        value(
            t,
            &[
                ("policy", p),
                ("size_bytes", "1048576"),
                ("fault_pct", "60"),
            ],
            "latency_us",
        )
    };
    assert!(lat("pio") > 1.5 * lat("pia"), "dense faults: PIA's regime");
    assert!(lat("adaptive") <= 1.01 * lat("pia"));
    let findings = unpinned_report::findings::for_experiment("part-adaptive", t);
    assert!(
        findings
            .iter()
            .any(|f| f.contains("of 18 (size, f) points")),
        "{findings:?}"
    );
}

/// Fault patterns: every pattern has its three policies; under dense reclaim of a fresh buffer
/// the pages PIA brings in ahead are evicted before the data arrives (more pages brought in
/// than the buffer has), and the adaptive policy, which sees the refaults and looks less far
/// ahead, is faster than PIA.
#[test]
fn part_fault_patterns_reclaim_defeats_pia_lookahead() {
    let o = run(
        "part-fault-patterns",
        &[
            ("seeds", "1"),
            ("sizes", "1048576"),
            ("fault_pct", "40"),
            ("uses", "3"),
            ("reclaim_per_ms", "128"),
        ],
    );
    let t = &o.table;
    has_columns(
        t,
        &[
            "pattern",
            "level",
            "size_bytes",
            "policy",
            "latency_us",
            "first_us",
            "vs_best_fixed",
            "pages_in",
            "evicted",
            "refaults",
        ],
    );
    assert_eq!(t.rows.len(), 5 * 3, "five patterns x three policies");
    let v = |pat: &str, p: &str, col: &str| value(t, &[("pattern", pat), ("policy", p)], col);
    // First use: the later uses find the buffer present, so the mean is below the first.
    assert!(v("first-use", "pio", "latency_us") < v("first-use", "pio", "first_us"));
    // Clustered runs: PIA pages a run in with one call, PIO pays a round per page.
    assert!(v("clustered", "pio", "latency_us") > v("clustered", "pia", "latency_us"));
    assert!(
        v("reclaim-fresh", "pia", "pages_in") > 256.0,
        "PIA re-brings evicted pages"
    );
    assert!(v("reclaim-fresh", "adaptive", "refaults") > 0.0);
    assert!(v("reclaim-fresh", "adaptive", "latency_us") < v("reclaim-fresh", "pia", "latency_us"));
    assert!(v("reclaim", "pio", "evicted") > 0.0);
    let findings = unpinned_report::findings::for_experiment("part-fault-patterns", t);
    assert_eq!(
        findings.len(),
        6,
        "one per pattern and the mechanism: {findings:?}"
    );
}
