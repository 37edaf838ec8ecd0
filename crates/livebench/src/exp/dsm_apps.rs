//! Live `dsm-apps` and `dsm-load` (spec dsm.md, "Experiments"): the DSM applications on the
//! live Multiview DSM, every rank a real process started like `unpinned run` (shared-memory
//! transport), per handler context, 1, 2, 4 ranks x 1, 2 threads per rank; `dsm-load` adds
//! one CPU-bound process per rank for the duration of each run. The columns are the simulator's
//! (one definition, `unpinned_experiments::dsm::row`, which says what the live backend fills)
//! with `driver = live`; the live run has no per-worker time counters, so the five `*_share`
//! cells are empty.
//!
//! The points are the simulator's ([`unpinned_experiments::dsm::grid`]: apps, then ranks, then
//! threads), each run once per handler context, so the rows come in the simulator's order; the
//! point function differs (a launch per context here, one trace replayed in every context
//! there: docs/experiments.md, "dsm-apps and dsm-load on two backends").
//!
//! Each point is one launch of `unpinned-dsm-run` (or `unpinned dsm-run`, see
//! [`unpinned_dsm_run::command`]); rank 0 times the parallel phase, checks the answer and
//! reports the counters of all ranks. Parameters (`--set exp.NAME=...`): `apps`, `nodes`,
//! `threads`, `contexts` (comma lists), `input` (small|medium|spec, default small), `reps`
//! (launches per point, the fastest correct one is kept; default 1), and `traces=DIR`: record
//! the trace of every run of the first context into `DIR/APP-NxT.jsonl` (with its result in
//! `DIR/APP-NxT.json`), which `unpinned sim dsm-apps --set exp.traces=DIR` replays.
//!
//! All ranks share the machine: on the 2-vCPU development VM, 4 ranks x 2 threads are 8
//! workers plus a detector (and a page-in thread) per rank on 2 CPUs, so live "speedups" mostly
//! measure overhead and oversubscription, not the cluster's scaling (that is what the replay
//! predicts).
//!
//! Measurements on the development VM: docs/performance.md, "Live DSM".

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use unpinned_dsm_apps::names;
use unpinned_dsm_live::{HandlerContext, ProtectMode};
use unpinned_dsm_run::{command, result_file, trace_file, RunArgs, RunResult};
use unpinned_experiments::dsm::{grid, DsmRow};
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_live::launch::{launch, LaunchOptions};
use unpinned_report::PlotSpec;

use super::fail;

/// `dsm-apps`, live.
pub static SPEC_APPS: ExperimentSpec = ExperimentSpec {
    name: "dsm-apps",
    system: "live",
    description: "Live DSM apps: time, speedup and rates per handler context on 1, 2, 4 ranks x 1, 2 threads (real processes, real faults)",
    params: Some(<Params as Declared>::PARAMS),
    run: run_apps,
    ..ExperimentSpec::LIVE
};

/// `dsm-load`, live.
pub static SPEC_LOAD: ExperimentSpec = ExperimentSpec {
    name: "dsm-load",
    system: "live",
    description: "Live dsm-apps with one extra CPU-bound process per rank during each run",
    params: Some(<Params as Declared>::PARAMS),
    run: run_load,
    ..ExperimentSpec::LIVE
};

fn run_apps(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    run(ctx, false)
}

fn run_load(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    run(ctx, true)
}

unpinned_experiments::declare_params! {
    /// Parameters of `dsm-apps` and `dsm-load`.
    pub struct Params {
        apps: Vec<String> {
            default: "sor,lu,is,tsp,water,nbody,nbody-write,barnes",
            unit: "",
            check: unpinned_experiments::params::one_of(&["sor", "lu", "is", "tsp", "water", "nbody", "nbody-write", "barnes"]),
            doc: "Applications",
        },
        nodes: Vec<u32> {
            default: "1,2,4",
            unit: "",
            check: unpinned_experiments::params::int(1, 16),
            doc: "Ranks (processes) per run",
        },
        threads: Vec<usize> {
            default: "1,2",
            unit: "",
            check: unpinned_experiments::params::int(1, 8),
            doc: "Worker threads per rank",
        },
        contexts: Vec<String> {
            default: "progress,deferred,signal,polling",
            unit: "",
            check: unpinned_experiments::params::one_of(&["progress", "deferred", "signal", "polling"]),
            doc: "Handler contexts",
        },
        input: String {
            default: "small",
            unit: "",
            check: unpinned_experiments::params::one_of(&["small", "medium", "spec"]),
            doc: "Input size of the applications",
        },
        reps: u32 {
            default: "1",
            unit: "",
            check: unpinned_experiments::params::int(1, 1000),
            doc: "Launches per point; the fastest correct one is kept",
        },
        traces: String {
            default: "",
            unit: "",
            check: unpinned_experiments::params::Check::Any,
            doc: "Directory to record the traces of the first context's runs into (`unpinned sim dsm-apps --set exp.traces=DIR` replays them; empty: none)",
        },
    }
}

/// CPU-bound processes that live as long as this value.
struct Burners(Vec<Child>);

impl Burners {
    fn start(n: u32, prog: &PathBuf, prefix: &[String]) -> Result<Burners, ExperimentError> {
        let mut v = Burners(Vec::new());
        for _ in 0..n {
            let c = Command::new(prog)
                .args(prefix)
                .args(["--burn", "600"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| fail(format!("starting a CPU-bound process: {e}")))?;
            v.0.push(c);
        }
        Ok(v)
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One point: the fastest correct of `reps` launches (or the last failure).
#[allow(clippy::too_many_arguments)]
fn point(
    prog: &PathBuf,
    prefix: &[String],
    args: &RunArgs,
    nodes: u32,
    reps: u32,
    load: bool,
    scratch: &std::path::Path,
) -> Result<Result<RunResult, String>, ExperimentError> {
    let mut best: Option<RunResult> = None;
    let mut last_err = String::new();
    for _ in 0..reps.max(1) {
        let mut a = args.clone();
        let out = a
            .result
            .clone()
            .unwrap_or_else(|| scratch.join("result.json"));
        a.result = Some(out.clone());
        let _ = std::fs::remove_file(&out);
        let mut o = LaunchOptions::new(nodes, prog);
        o.args = prefix.iter().cloned().chain(a.to_args()).collect();
        o.timeout = Duration::from_secs(300);
        o.grace = Duration::from_secs(10);
        let burners = if load {
            Some(Burners::start(nodes, prog, prefix)?)
        } else {
            None
        };
        let rep = launch(&o).map_err(fail)?;
        drop(burners);
        let res: Option<RunResult> = std::fs::read_to_string(&out)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        match res {
            Some(r) if r.correct && rep.success() => {
                if best.as_ref().is_none_or(|b| r.time_s < b.time_s) {
                    best = Some(r);
                }
            }
            Some(r) => last_err = format!("wrong answer: {}", r.error.unwrap_or_default()),
            None => last_err = rep.failures().join("; "),
        }
    }
    Ok(best.ok_or(last_err))
}

fn run(ctx: &RunContext, load: bool) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        apps,
        nodes,
        threads,
        contexts,
        input,
        reps,
        traces,
    } = ctx.params()?;
    let contexts: Vec<HandlerContext> = contexts
        .iter()
        .map(|c| c.parse())
        .collect::<Result<_, _>>()
        .map_err(|e| ExperimentError::BadParam("contexts".into(), e))?;
    let input: unpinned_dsm_apps::Input = input
        .parse()
        .map_err(|e| ExperimentError::BadParam("input".into(), e))?;
    if let Some(a) = apps.iter().find(|a| !names().contains(&a.as_str())) {
        return Err(ExperimentError::BadParam(
            "apps".into(),
            format!("unknown app {a:?} (known: {})", names().join(", ")),
        ));
    }
    let trace_dir = (!traces.is_empty()).then(|| PathBuf::from(&traces));
    if let Some(d) = &trace_dir {
        std::fs::create_dir_all(d)
            .map_err(|e| ExperimentError::BadParam("traces".into(), format!("{traces}: {e}")))?;
    }
    let (prog, prefix) = command().map_err(fail)?;
    let scratch = std::env::temp_dir().join(format!("unpinned-live-dsm-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(fail)?;
    let mut table = DsmRow::table();
    let total = (apps.len() * contexts.len() * nodes.len() * threads.len()) as u64;
    let mut done = 0;
    let mut failures = Vec::new();
    let threads: Vec<u32> = threads.iter().map(|&t| t as u32).collect();
    for app in &apps {
        // The speedup baseline (the 1 x 1 row) of each context.
        let mut base_s: Vec<Option<f64>> = vec![None; contexts.len()];
        for pt in grid(std::slice::from_ref(app), &nodes, &threads) {
            let (n, t) = (pt.nodes, pt.threads);
            for (ci, &c) in contexts.iter().enumerate() {
                let mut a = RunArgs {
                    app: app.clone(),
                    input,
                    threads: t as usize,
                    context: c,
                    protect: ProtectMode::Batched,
                    trace: None,
                    result: None,
                    die_rank: None,
                };
                if let (Some(d), 0) = (&trace_dir, ci) {
                    a.trace = Some(trace_file(d, app, n, t));
                    a.result = Some(result_file(d, app, n, t));
                }
                let r = point(&prog, &prefix, &a, n, reps, load, &scratch)?;
                done += 1;
                (ctx.progress)(done, total);
                let (time_s, correct, faults, barriers, locks, control, transfers, bytes) = match &r
                {
                    Ok(r) => (
                        r.time_s,
                        true,
                        r.faults(),
                        r.barriers,
                        r.locks,
                        r.messages,
                        r.data_transfers,
                        r.data_bytes,
                    ),
                    Err(e) => {
                        failures.push(format!("{app} {} {n}x{t}: {e}", c.name()));
                        (f64::NAN, false, 0, 0, 0, 0, 0, 0)
                    }
                };
                if pt.is_baseline() && correct {
                    base_s[ci] = Some(time_s);
                }
                let rate = |x: u64| {
                    if correct {
                        x as f64 / time_s
                    } else {
                        f64::NAN
                    }
                };
                DsmRow {
                    app: app.clone(),
                    context: c.name().into(),
                    nodes: n,
                    threads_per_node: t,
                    time_s,
                    speedup: base_s[ci].map_or(f64::NAN, |b| b / time_s),
                    faults_per_s: rate(faults),
                    barriers_per_s: rate(barriers),
                    locks_per_s: rate(locks),
                    correct,
                    driver: "live",
                    requests: faults,
                    messages: control + transfers,
                    rdma_mb_per_s: rate(bytes) / 1e6,
                    sends_per_s: rate(control),
                    shares: None,
                }
                .push_to(&mut table);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let what = if load {
        " with one CPU-bound process per rank"
    } else {
        ""
    };
    let max_nodes = nodes.iter().max().copied().unwrap_or(1).to_string();
    let mut plots = Vec::new();
    for &t in &threads {
        let mut p = PlotSpec::line(
            &format!("Live speedup, progress context, {t} thread(s) per rank{what}"),
            "nodes",
            "speedup",
            Some("app"),
        )
        .only("context", "progress")
        .only("threads_per_node", &t.to_string());
        if !plots.is_empty() {
            p = p.suffix(&format!("speedup-{t}t"));
        }
        plots.push(p);
    }
    for &t in &threads {
        plots.push(
            PlotSpec::line(
                &format!(
                    "Live run time on {max_nodes} ranks x {t} thread(s) per handler context{what}"
                ),
                "app",
                "time_s",
                Some("context"),
            )
            .bars()
            .only("nodes", &max_nodes)
            .only("threads_per_node", &t.to_string())
            .suffix(&format!("contexts-{t}t")),
        );
    }
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: 0,
        meta: json!({
            "driver": "live",
            "load_procs_per_node": u32::from(load),
            "input": format!("{input:?}").to_lowercase(),
            "reps": reps,
            "apps": apps,
            "traces": traces,
            "program": prog.display().to_string(),
            "time_s": "parallel phase on rank 0 (bootstrap barrier release to its workers' end), fastest correct of reps launches",
            "speedup": "time on 1 rank x 1 thread / time, same app and context",
            "requests": "read + write faults of all ranks in the parallel phase (the live runtime counts faults, not requests)",
            "messages": "control messages plus minipage RDMA transfers, all ranks",
            "sends_per_s": "control messages (no page data) per second",
            "shares": "not measured live: empty cells",
            "machine": format!("{} CPUs online; every rank, thread, detector and page-in thread shares them", std::thread::available_parallelism().map_or(0, |n| n.get())),
            "failed_points": failures,
        }),
    })
}
