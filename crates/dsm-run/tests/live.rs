//! The applications on the live DSM: real processes launched like `unpinned run`, real page
//! faults, PART moving the minipages. Small inputs (a run takes well under a second).

use std::time::Duration;

use unpinned_dsm::trace::Trace;
use unpinned_dsm_apps::{create, names, run_traced, Input};
use unpinned_dsm_run::RunResult;
use unpinned_live::launch::{launch, LaunchOptions, LaunchReport};

fn run(ranks: u32, args: &[String]) -> LaunchReport {
    let mut o = LaunchOptions::new(ranks, env!("CARGO_BIN_EXE_unpinned-dsm-run"));
    o.args = args.to_vec();
    o.timeout = Duration::from_secs(90);
    o.grace = Duration::from_secs(10);
    launch(&o).expect("launch")
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("dsm-run-{}-{name}", std::process::id()))
}

fn result(path: &std::path::Path) -> RunResult {
    let r = serde_json::from_str(&std::fs::read_to_string(path).expect("result file"))
        .expect("result parses");
    let _ = std::fs::remove_file(path);
    r
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn every_app_gives_the_sequential_answer_on_1_2_and_4_ranks() {
    let contexts = ["progress", "deferred", "signal", "polling"];
    for (i, app) in names().iter().enumerate() {
        for (k, (ranks, threads)) in [(1u32, 2u32), (2, 2), (4, 1)].into_iter().enumerate() {
            let ctx = contexts[(i + k) % contexts.len()];
            let out = tmp(&format!("{app}-{ranks}.json"));
            let what = format!("{app} on {ranks} ranks x {threads} threads, context {ctx}");
            let r = run(
                ranks,
                &s(&[
                    app,
                    "--threads",
                    &threads.to_string(),
                    "--context",
                    ctx,
                    "--result",
                    &out.display().to_string(),
                ]),
            );
            assert!(r.success(), "{what}: {:?}", r.failures());
            let res = result(&out);
            assert!(res.correct, "{what}: {:?}", res.error);
            assert_eq!(
                (res.ranks, res.threads_per_rank, res.context.as_str()),
                (ranks, threads, ctx)
            );
            assert!(res.barriers >= 1 && res.time_s > 0.0, "{what}: {res:?}");
            if ranks > 1 {
                // Sharing across processes happened through the DSM, not by accident.
                assert!(
                    res.faults() > 0 && res.data_transfers > 0,
                    "{what}: {res:?}"
                );
            }
        }
    }
}

#[test]
fn a_rank_that_dies_makes_the_others_fail_clearly_not_hang() {
    let r = run(2, &s(&["sor", "--die-rank", "1"]));
    assert!(!r.timed_out, "the job hung");
    assert!(
        !r.ranks[0].killed_by_launcher,
        "rank 0 still waited after the grace period: {:?}",
        r.failures()
    );
    assert_eq!(
        r.ranks[0].status.code(),
        Some(75),
        "rank 0 must exit with the peer-failure code: {:?}",
        r.failures()
    );
    assert_eq!(r.ranks[1].status.code(), Some(3));
}

#[test]
fn bad_arguments_fail_with_the_usage_code_on_every_rank() {
    let r = run(2, &s(&["sor", "--threads", "zero"]));
    assert!(
        r.ranks.iter().all(|o| o.status.code() == Some(2)),
        "{:?}",
        r.failures()
    );
    // An input the app cannot split: a clear error (exit 1), not a hang or a panic.
    let r = run(1, &s(&["sor", "--threads", "64"]));
    assert_eq!(r.ranks[0].status.code(), Some(1), "{:?}", r.failures());
}

/// A live trace and a TracingSpace trace of the same app and shape: same synchronisation,
/// faults of the same order (differences explained in the crate doc).
#[test]
fn trace_totals_of_live_and_tracing_runs_agree_on_synchronisation() {
    let path = tmp("sor-2x2.jsonl");
    let r = run(
        2,
        &s(&[
            "sor",
            "--threads",
            "2",
            "--trace",
            &path.display().to_string(),
        ]),
    );
    assert!(r.success(), "{:?}", r.failures());
    let live =
        Trace::parse(&std::fs::read_to_string(&path).expect("trace")).expect("live trace parses");
    let _ = std::fs::remove_file(&path);
    let mut app = create("sor", Input::Small).unwrap();
    let (traced, verdict) = run_traced(app.as_mut(), 2, 2).unwrap();
    verdict.unwrap();
    let (l, t) = (live.totals(), traced.totals());
    eprintln!("sor small 2x2 live: {l:?}\nsor small 2x2 tracing space: {t:?}");
    assert_eq!((live.header.ranks, live.header.threads_per_rank), (2, 2));
    assert_eq!(l.barriers, t.barriers);
    assert_eq!((l.locks, l.unlocks), (t.locks, t.unlocks));
    assert!(l.faults > 0 && t.faults > 0);
    assert!(
        l.faults <= 4 * t.faults && t.faults <= 4 * l.faults,
        "fault counts of different orders: live {} vs traced {}",
        l.faults,
        t.faults
    );
}

/// `unpinned live dsm-apps` / `dsm-load` with tiny parameters: the columns, correct
/// live rows, speedups against the 1 x 1 run, traces and results where the replay finds them.
#[test]
fn live_dsm_apps_and_dsm_load_experiments() {
    use unpinned_experiments::RunContext;
    use unpinned_livebench::exp;
    unpinned_dsm_run::set_binary(env!("CARGO_BIN_EXE_unpinned-dsm-run"));
    let dir = tmp("traces");
    let run = |name: &str, params: &[(&str, &str)]| {
        let ctx = RunContext {
            profile: exp::live_profile(),
            kind_profile: None,
            seed: 1,
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            progress: &|_, _| {},
        };
        (exp::find(name).expect("registered").run)(&ctx).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let d = dir.display().to_string();
    let o = run(
        "dsm-apps",
        &[
            ("apps", "sor,is"),
            ("nodes", "1,2"),
            ("threads", "1"),
            ("contexts", "progress,polling"),
            ("traces", &d),
        ],
    );
    let t = &o.table;
    // The same header, in the same order, as the simulated dsm-apps (one shared schema).
    let sim = unpinned_experiments::find("dsm-apps").expect("simulated dsm-apps registered");
    let sim_ctx = RunContext {
        profile: exp::live_profile(),
        kind_profile: None,
        seed: 1,
        params: [("apps", "sor"), ("nodes", "1"), ("threads", "1")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        progress: &|_, _| {},
    };
    let sim_table = (sim.run)(&sim_ctx).expect("simulated dsm-apps").table;
    assert_eq!(t.columns, sim_table.columns);
    assert_eq!(t.columns, unpinned_experiments::dsm::COLUMNS);
    assert_eq!(t.rows.len(), 2 * 2 * 2);
    let c = |n: &str| t.col(n).unwrap();
    for r in &t.rows {
        assert_eq!(r[c("correct")].to_text(), "1", "{r:?}");
        assert_eq!(r[c("driver")].to_text(), "live");
        assert!(r[c("time_s")].as_f64().unwrap() > 0.0);
        let one = r[c("nodes")].to_text() == "1";
        assert_eq!(r[c("faults_per_s")].as_f64().unwrap() == 0.0, one, "{r:?}");
        assert_eq!(r[c("requests")].as_f64().unwrap() == 0.0, one, "{r:?}");
        assert_eq!(r[c("rdma_mb_per_s")].as_f64().unwrap() == 0.0, one, "{r:?}");
        // Not measured live: empty cells.
        assert_eq!(r[c("compute_share")].to_text(), "", "{r:?}");
        if one {
            assert_eq!(r[c("speedup")].as_f64().unwrap(), 1.0);
        }
    }
    for p in &o.plots {
        unpinned_report::render_svg(t, p).unwrap();
    }
    // Traces of the first context's runs, with results, where `unpinned sim dsm-apps` reads them.
    for app in ["sor", "is"] {
        for n in [1, 2] {
            let tr = Trace::parse(
                &std::fs::read_to_string(unpinned_dsm_run::trace_file(&dir, app, n, 1)).unwrap(),
            )
            .unwrap();
            assert_eq!((tr.header.app.as_str(), tr.header.ranks), (app, n));
            assert!(result(&unpinned_dsm_run::result_file(&dir, app, n, 1)).correct);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let l = run(
        "dsm-load",
        &[
            ("apps", "nbody"),
            ("nodes", "2"),
            ("threads", "1"),
            ("contexts", "signal"),
        ],
    );
    assert_eq!(l.table.rows.len(), 1);
    assert_eq!(
        l.table.rows[0][l.table.col("correct").unwrap()].to_text(),
        "1"
    );
}
