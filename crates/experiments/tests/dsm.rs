//! The DSM experiments: columns as the issue names them, correct runs only, replays that
//! reproduce their traces' totals, the relations the mechanisms imply, and tables that are the
//! same bytes run after run (the shipped traces).

use std::collections::BTreeMap;

use unpinned_core::profile::Profile;
use unpinned_dsm_apps::{create, run_traced, Input};
use unpinned_experiments::{find, ExperimentOutput, RunContext, Table};
use unpinned_sim::dsm::{replay, Context, DsmProfile, ReplayConfig};

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
    assert_eq!(spec.system, "dsm");
    (spec.run)(&ctx).unwrap_or_else(|e| panic!("{name} failed: {e}"))
}

fn col(t: &Table, name: &str) -> usize {
    t.col(name)
        .unwrap_or_else(|| panic!("missing column {name} in {:?}", t.columns))
}

#[test]
fn app_traces_replay_with_the_same_totals_deterministically() {
    let p = DsmProfile::dsm_ib1();
    for app in unpinned_dsm_apps::names() {
        let mut a = create(app, Input::Small).unwrap();
        let (trace, verdict) = run_traced(a.as_mut(), 3, 2).unwrap();
        verdict.unwrap();
        let totals = trace.totals();
        for ctx in Context::ALL {
            let cfg = ReplayConfig {
                context: ctx,
                load_procs_per_node: 0,
            };
            let s = replay(&p, &trace, &cfg).unwrap_or_else(|e| panic!("{app} {ctx:?}: {e}"));
            assert_eq!(
                (s.faults, s.barriers, s.locks, s.unlocks),
                (totals.faults, totals.barriers, totals.locks, totals.unlocks),
                "{app} {ctx:?}"
            );
            assert_eq!(
                s,
                replay(&p, &trace, &cfg).unwrap(),
                "{app} {ctx:?}: deterministic"
            );
        }
        // The file form replays the same.
        let back = unpinned_dsm::trace::Trace::parse(&trace.to_json_lines()).unwrap();
        let cfg = ReplayConfig {
            context: Context::Interrupt,
            load_procs_per_node: 0,
        };
        assert_eq!(
            replay(&p, &back, &cfg).unwrap(),
            replay(&p, &trace, &cfg).unwrap()
        );
    }
}

#[test]
fn dsm_apps_and_dsm_load_have_the_issue_columns_and_only_correct_runs() {
    let params = [
        ("apps", "sor,is,tsp"),
        ("nodes", "1,2,4"),
        ("threads", "1,2"),
        ("input", "small"),
        ("traces", "tracing"),
    ];
    let o = run("dsm-apps", &params);
    let t = &o.table;
    // The one shared schema, which the live experiments write too.
    assert_eq!(t.columns, unpinned_experiments::dsm::COLUMNS);
    assert_eq!(t.rows.len(), 3 * 3 * 2 * 4);
    for r in &t.rows {
        assert_eq!(r[col(t, "correct")].to_text(), "1");
        assert_eq!(r[col(t, "driver")].to_text(), "sim");
        let time = r[col(t, "time_s")].as_f64().unwrap();
        assert!(time > 0.0 && time.is_finite());
        if r[col(t, "nodes")].to_text() == "1" {
            assert_eq!(
                r[col(t, "faults_per_s")].as_f64().unwrap(),
                0.0,
                "one node never faults"
            );
        } else {
            assert!(r[col(t, "faults_per_s")].as_f64().unwrap() > 0.0);
        }
    }
    // The user-level baseline is never faster than the interrupt design on the same trace.
    let key = |r: &Vec<unpinned_report::Cell>| [0, 2, 3].map(|i| r[i].to_text());
    for r in t.rows.iter().filter(|r| r[1].to_text() == "signal") {
        let i = t
            .rows
            .iter()
            .find(|q| q[1].to_text() == "interrupt" && key(q) == key(r))
            .unwrap();
        let (ts, ti) = (
            r[col(t, "time_s")].as_f64().unwrap(),
            i[col(t, "time_s")].as_f64().unwrap(),
        );
        assert!(ts >= ti, "{:?}: signal {ts} < interrupt {ti}", key(r));
    }
    assert!(o.plots.len() >= 4);
    for p in &o.plots {
        unpinned_report::render_svg(t, p).unwrap();
    }

    let l = run(
        "dsm-load",
        &[
            ("apps", "sor"),
            ("nodes", "1,2"),
            ("threads", "2"),
            ("contexts", "interrupt"),
            ("input", "small"),
            ("traces", "tracing"),
        ],
    );
    assert_eq!(l.table.rows.len(), 2);
    assert!(l
        .table
        .rows
        .iter()
        .all(|r| r[col(&l.table, "correct")].to_text() == "1"));
}

#[test]
fn bad_parameters_are_named() {
    let ctx = RunContext {
        profile: Profile::forth_arm(),
        kind_profile: None,
        seed: 1,
        params: [("contexts".to_string(), "psychic".to_string())]
            .into_iter()
            .collect(),
        progress: &|_, _| {},
    };
    let e = (find("dsm-apps").unwrap().run)(&ctx)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("contexts"), "{e}");
    // The CPU factor is a profile field now (`--set cpu.cpu_scale=X`): the old parameter is
    // refused by name, and an impossible factor by the profile's checks.
    let ctx = RunContext {
        params: [("cpu_scale".to_string(), "5".to_string())]
            .into_iter()
            .collect(),
        ..ctx
    };
    let e = (find("dsm-apps").unwrap().run)(&ctx)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("unknown parameter exp.cpu_scale"), "{e}");
    let dsm = unpinned_experiments::AnyProfile::builtin(unpinned_experiments::ProfileKind::Dsm);
    let e = dsm.with_override("cpu.cpu_scale=-2").unwrap_err();
    assert!(e.contains("cpu_scale"), "{e}");
}

#[test]
fn the_tracing_emulation_agrees_with_the_protocol_on_barrier_ordered_apps() {
    // With one thread per node and every minipage's accesses ordered by barriers, every fault
    // the tracing space recorded must also miss in the replayed protocol
    // (`unpinned_dsm::Node`) and send exactly one request: the emulation and the protocol
    // agree on who holds what. (Not so for lock-ordered data such as Water's forces or IS's
    // buckets: a replay keeps the recorded faults, not the recorded interleaving.)
    let p = DsmProfile::dsm_ib1();
    for app in ["sor", "lu", "nbody"] {
        let mut a = create(app, Input::Small).unwrap();
        let (trace, verdict) = run_traced(a.as_mut(), 4, 1).unwrap();
        verdict.unwrap();
        let s = replay(
            &p,
            &trace,
            &ReplayConfig {
                context: Context::Interrupt,
                load_procs_per_node: 0,
            },
        )
        .unwrap();
        assert_eq!(s.requests, s.faults, "{app}");
    }
}

#[test]
fn traces_from_a_directory_are_replayed_and_bad_ones_are_named() {
    // The files `unpinned live dsm-apps --set exp.traces=DIR` writes (APP-NxT.jsonl and the
    // run's result APP-NxT.json); here written from tracing-space runs.
    let dir = std::env::temp_dir().join(format!("dsm-traces-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (n, correct) in [(1u32, true), (2, false)] {
        let mut a = create("sor", Input::Small).unwrap();
        let (trace, verdict) = run_traced(a.as_mut(), n as usize, 1).unwrap();
        verdict.unwrap();
        std::fs::write(dir.join(format!("sor-{n}x1.jsonl")), trace.to_json_lines()).unwrap();
        std::fs::write(
            dir.join(format!("sor-{n}x1.json")),
            format!("{{\"correct\": {correct}}}"),
        )
        .unwrap();
    }
    let d = dir.display().to_string();
    let o = run(
        "dsm-apps",
        &[
            ("apps", "sor"),
            ("nodes", "1,2,4"),
            ("threads", "1"),
            ("contexts", "interrupt"),
            ("traces", &d),
        ],
    );
    let t = &o.table;
    // No trace for 4 nodes: skipped and listed.
    assert_eq!(t.rows.len(), 2);
    assert_eq!(o.meta["trace_source"], "directory");
    assert_eq!(o.meta["missing_traces"][0], "sor-4x1");
    // The recorded verdict, not a recomputed one.
    let correct: Vec<String> = t
        .rows
        .iter()
        .map(|r| r[col(t, "correct")].to_text())
        .collect();
    assert_eq!(correct, ["1", "0"]);
    std::fs::write(dir.join("sor-2x1.jsonl"), "{\"not\": \"a trace\"}\n").unwrap();
    let ctx = RunContext {
        profile: Profile::forth_arm(),
        kind_profile: None,
        seed: 1,
        params: [
            ("apps", "sor"),
            ("nodes", "1,2"),
            ("threads", "1"),
            ("traces", d.as_str()),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        progress: &|_, _| {},
    };
    let e = (find("dsm-apps").unwrap().run)(&ctx)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("sor-2x1.jsonl"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The CSV bytes `unpinned sim` writes for `o`.
fn csv_bytes(name: &str, o: &ExperimentOutput, tag: &str) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("dsm-csv-{tag}-{}", std::process::id()));
    let meta = unpinned_report::Metadata::new(name, "dsm");
    let files = unpinned_report::write_experiment(&dir, name, &o.table, &[], &meta).unwrap();
    let bytes = std::fs::read(&files.csv).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

fn ctx_err(name: &str, params: &[(&str, &str)]) -> String {
    let ctx = RunContext {
        profile: Profile::forth_arm(),
        seed: 1,
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        kind_profile: None,
        progress: &|_, _| {},
    };
    match (find(name).unwrap().run)(&ctx) {
        Ok(_) => panic!("{name} {params:?} should be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn dsm_apps_and_dsm_load_are_the_same_bytes_run_after_run() {
    // The default source: the shipped traces (bench/traces/dsm/), replayed deterministically.
    let params = [
        ("apps", "sor,tsp,water"),
        ("nodes", "1,2,4"),
        ("threads", "1,2"),
        ("contexts", "interrupt,signal"),
    ];
    for name in ["dsm-apps", "dsm-load"] {
        let a = run(name, &params);
        let b = run(name, &params);
        assert_eq!(a.meta["trace_source"], "shipped", "{name}");
        assert_eq!(a.table.rows.len(), 3 * 3 * 2 * 2, "{name}");
        assert!(a
            .table
            .rows
            .iter()
            .all(|r| r[col(&a.table, "correct")].to_text() == "1"));
        let (ca, cb) = (csv_bytes(name, &a, "a"), csv_bytes(name, &b, "b"));
        assert!(ca.len() > 1000, "{name}: {} bytes", ca.len());
        assert!(ca == cb, "{name}: two runs wrote different CSVs");
    }
}

#[test]
fn shipped_traces_refuse_what_they_cannot_honour() {
    let e = ctx_err("dsm-apps", &[("apps", "sor"), ("input", "small")]);
    assert!(e.contains("input") && e.contains("tracing"), "{e}");
    let e = ctx_err(
        "dsm-apps",
        &[("apps", "sor"), ("nodes", "3"), ("threads", "1")],
    );
    assert!(e.contains("3 nodes") && e.contains("12x2"), "{e}");
    let e = ctx_err("dsm-apps", &[("apps", "sor"), ("repeats", "3")]);
    assert!(e.contains("repeats") && e.contains("tracing"), "{e}");
    let e = ctx_err("dsm-apps", &[("traces", "/nonexistent/traces")]);
    assert!(e.contains("not a directory"), "{e}");
}

#[test]
fn recorded_traces_replay_as_they_were_traced() {
    // `exp.record` writes the shipped format (gzip JSON lines, result, provenance); replaying
    // that directory gives the table of the run that recorded it, byte for byte.
    let dir = std::env::temp_dir().join(format!("dsm-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display().to_string();
    let base = [
        ("apps", "sor,is"),
        ("nodes", "1,2"),
        ("threads", "1,2"),
        ("contexts", "interrupt"),
        ("input", "small"),
    ];
    let mut rec = base.to_vec();
    rec.extend([("traces", "tracing"), ("record", d.as_str())]);
    let traced = run("dsm-apps", &rec);
    for f in [
        "sor-1x1.jsonl.gz",
        "sor-2x2.json",
        "is-2x1.jsonl.gz",
        "recorded.json",
    ] {
        assert!(dir.join(f).is_file(), "{f} recorded");
    }
    let prov: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("recorded.json")).unwrap()).unwrap();
    assert_eq!(prov["input"], "small");
    let mut again = base.to_vec();
    again.push(("traces", d.as_str()));
    let replayed = run("dsm-apps", &again);
    assert_eq!(replayed.meta["trace_source"], "directory");
    assert!(
        csv_bytes("dsm-apps", &traced, "t") == csv_bytes("dsm-apps", &replayed, "r"),
        "replaying the recorded traces changed the table"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
