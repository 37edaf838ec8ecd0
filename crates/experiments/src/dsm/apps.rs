//! `dsm-apps` and `dsm-load`: run time, speedup and per-application statistics of each
//! application in each handler context, 1..12 nodes x 1 and 2 threads per node, by replaying
//! traced runs; `dsm-load` adds one CPU-bound process per node.
//!
//! The traces come from the tracing space by default (no live run needed); with
//! `--set exp.traces=DIR` they are the ones live runs recorded (`unpinned live dsm-apps --set
//! exp.traces=DIR`: `DIR/APP-NxT.jsonl` and the run's result `APP-NxT.json`); points without a
//! trace there are skipped (listed in the metadata as `missing_traces`). Rows are replays:
//! `driver` is `sim` either way, the metadata's `trace_source` says which traces.

use std::collections::HashMap;

use serde_json::json;
use unpinned_dsm_apps::{create, run_traced, Input, Trace};
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::dsm::{replay, Context, DsmProfile, ReplayConfig, ReplayStats};

use crate::aa::per_s;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC_APPS: ExperimentSpec = ExperimentSpec {
    name: "dsm-apps",
    system: "dsm",
    description: "DSM apps (SOR, LU, IS, TSP, Water, N-Body, N-Body-Write, Barnes-Hut): time and speedup per handler context, 1..12 nodes x 1|2 threads (trace replay)",
    profile: crate::ProfileKind::Dsm,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run: run_apps,
};

pub static SPEC_LOAD: ExperimentSpec = ExperimentSpec {
    name: "dsm-load",
    system: "dsm",
    description: "dsm-apps with one extra CPU-bound process per node (trace replay, CPU share)",
    profile: crate::ProfileKind::Dsm,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run: run_load,
};

fn run_apps(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    run(ctx, 0)
}

fn run_load(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    run(ctx, 1)
}

/// Traced runs of the 1 node x 1 thread baseline (the least computing one is replayed).
const BASE_REPEATS: u32 = 3;

/// The DSM profile (built-in `dsm-ib1`, or `--profile` / `--set`) and where its CPU factor
/// comes from (for the metadata).
fn profile(ctx: &RunContext) -> Result<(DsmProfile, &'static str), ExperimentError> {
    let source = match ctx.kind_profile {
        None => "profile file (clock ratio of the tracing machine to 733 MHz, a lower bound)",
        Some(_) => "--profile / --set cpu.cpu_scale (see the metadata's profile)",
    };
    Ok((ctx.dsm_profile()?, source))
}

use crate::params::{int, one_of};

crate::declare_params! {
    /// Parameters of `dsm-apps` and `dsm-load`.
    pub struct Params {
        apps: Vec<String> {
            default: "sor,lu,is,tsp,water,nbody,nbody-write,barnes",
            unit: "",
            check: one_of(&["sor", "lu", "is", "tsp", "water", "nbody", "nbody-write", "barnes"]),
            doc: "Applications",
        },
        nodes: Vec<u32> {
            default: "1,2,4,8,12",
            unit: "nodes",
            check: int(1, 64),
            doc: "Node counts",
        },
        threads: Vec<u32> {
            default: "1,2",
            unit: "threads per node",
            check: int(1, 8),
            doc: "Application threads per node",
        },
        contexts: Vec<String> {
            default: "polling,interrupt,deferred,signal",
            unit: "",
            check: one_of(&["polling", "interrupt", "deferred", "signal"]),
            doc: "Handler contexts replayed",
        },
        input: String {
            default: "medium",
            unit: "",
            check: one_of(&["small", "medium", "spec"]),
            doc: "Input size of the traced runs (spec: the spec's inputs, slow)",
        },
        repeats: u32 {
            default: "1",
            unit: "runs",
            check: int(1, 1000),
            doc: "Traced runs per point (at least 3 for the 1x1 baseline); the least computing one is replayed",
        },
        traces: String {
            default: "",
            unit: "directory",
            check: crate::params::Check::Any,
            doc: "Replay the traces live runs recorded there (empty: trace the apps in this process)",
        },
    }
}

/// One traced run: its trace's replays per context, and whether the app's answer was right.
struct Point {
    app: String,
    nodes: u32,
    threads: u32,
    correct: bool,
    replays: Vec<(Context, ReplayStats)>,
}

#[allow(clippy::too_many_arguments)]
fn trace_and_replay(
    app: &str,
    input: Input,
    repeats: u32,
    nodes: u32,
    threads: u32,
    prof: &DsmProfile,
    contexts: &[Context],
    load: u32,
    traces: Option<&std::path::Path>,
) -> Result<Option<Point>, ExperimentError> {
    let (trace, correct) = match traces {
        Some(dir) => match live_trace(dir, app, nodes, threads)? {
            Some(t) => t,
            None => return Ok(None),
        },
        None => traced(app, input, repeats, nodes, threads)?,
    };
    let mut replays = Vec::new();
    for &c in contexts {
        let s = replay(
            prof,
            &trace,
            &ReplayConfig {
                context: c,
                load_procs_per_node: load,
            },
        )
        .map_err(|e| {
            ExperimentError::Sim(format!("{app} on {nodes}x{threads}, {}: {e}", c.name()))
        })?;
        replays.push((c, s));
    }
    Ok(Some(Point {
        app: app.to_string(),
        nodes,
        threads,
        correct,
        replays,
    }))
}

/// The trace a live run recorded (`unpinned live dsm-apps --set exp.traces=DIR` writes
/// `DIR/APP-NxT.jsonl` and the run's result `DIR/APP-NxT.json`, see
/// `unpinned_dsm_run::trace_file`), with the live check's verdict; `None` if there is none.
fn live_trace(
    dir: &std::path::Path,
    app: &str,
    nodes: u32,
    threads: u32,
) -> Result<Option<(Trace, bool)>, ExperimentError> {
    let path = dir.join(format!("{app}-{nodes}x{threads}.jsonl"));
    let bad = |what: String| ExperimentError::BadParam("traces".into(), what);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(format!("{}: {e}", path.display()))),
    };
    let trace = Trace::parse(&text).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    if (trace.header.ranks, trace.header.threads_per_rank) != (nodes, threads)
        || trace.header.app != app
    {
        return Err(bad(format!(
            "{}: header says {} on {}x{}",
            path.display(),
            trace.header.app,
            trace.header.ranks,
            trace.header.threads_per_rank
        )));
    }
    let rpath = dir.join(format!("{app}-{nodes}x{threads}.json"));
    let result: serde_json::Value = std::fs::read_to_string(&rpath)
        .map_err(|e| bad(format!("{} (the live run's result): {e}", rpath.display())))
        .and_then(|t| {
            serde_json::from_str(&t).map_err(|e| bad(format!("{}: {e}", rpath.display())))
        })?;
    let correct = result
        .get("correct")
        .and_then(serde_json::Value::as_bool)
        .ok_or_else(|| bad(format!("{}: no boolean `correct`", rpath.display())))?;
    Ok(Some((trace, correct)))
}

/// Traced runs on the tracing space: the least computing trace and whether every run was
/// right.
fn traced(
    app: &str,
    input: Input,
    repeats: u32,
    nodes: u32,
    threads: u32,
) -> Result<(Trace, bool), ExperimentError> {
    // Measured computation is noisy on a shared machine: of `repeats` traced runs keep the
    // one that computed least (the least disturbed); every run's answer must be right.
    let mut best: Option<Trace> = None;
    let mut correct = true;
    for _ in 0..repeats.max(1) {
        let mut a = create(app, input)
            .map_err(|e| ExperimentError::BadParam("apps".into(), e.to_string()))?;
        let (trace, verdict) = run_traced(a.as_mut(), nodes as usize, threads as usize)
            .map_err(|e| ExperimentError::Sim(format!("{app} on {nodes}x{threads}: {e}")))?;
        correct &= verdict.is_ok();
        if best
            .as_ref()
            .is_none_or(|b| trace.totals().compute_ns < b.totals().compute_ns)
        {
            best = Some(trace);
        }
    }
    Ok((best.expect("at least one run"), correct))
}

fn run(ctx: &RunContext, load: u32) -> Result<ExperimentOutput, ExperimentError> {
    let (prof, scale_source) = profile(ctx)?;
    let Params {
        apps,
        nodes,
        threads,
        contexts,
        input,
        repeats,
        traces,
    } = ctx.params()?;
    let contexts: Vec<Context> = contexts
        .iter()
        .map(|c| c.parse().expect("declared contexts parse"))
        .collect();
    let input: Input = input.parse().expect("declared inputs parse");
    let trace_dir = (!traces.is_empty()).then(|| std::path::PathBuf::from(&traces));
    if let Some(d) = &trace_dir {
        if !d.is_dir() {
            return Err(ExperimentError::BadParam(
                "traces".into(),
                format!("{traces}: not a directory"),
            ));
        }
    }
    let mut missing = Vec::new();
    // The traced runs run one at a time: each already uses a thread per worker.
    let mut points = Vec::new();
    let mut failures = Vec::new();
    let total = (apps.len() * (nodes.len() * threads.len() + 1)) as u64;
    let mut done = 0;
    for app in &apps {
        // The speedup baseline: the same app on one node with one thread, same context.
        // Every speedup of the app divides by it: trace it a few more times than the others.
        let base = trace_and_replay(
            app,
            input,
            repeats.max(BASE_REPEATS),
            1,
            1,
            &prof,
            &contexts,
            load,
            trace_dir.as_deref(),
        )?
        .ok_or_else(|| {
            ExperimentError::BadParam(
                "traces".into(),
                format!("{traces}: no {app}-1x1.jsonl (the speedup baseline)"),
            )
        })?;
        done += 1;
        (ctx.progress)(done, total);
        let base_ns: HashMap<Context, u64> =
            base.replays.iter().map(|(c, s)| (*c, s.time_ns)).collect();
        let mut base = Some(base);
        for &n in &nodes {
            for &t in &threads {
                // 1 x 1 is the baseline run itself (speedup exactly 1).
                let p = match (n, t, base.take()) {
                    (1, 1, Some(b)) => b,
                    (_, _, b) => {
                        base = b;
                        match trace_and_replay(
                            app,
                            input,
                            repeats,
                            n,
                            t,
                            &prof,
                            &contexts,
                            load,
                            trace_dir.as_deref(),
                        )? {
                            Some(p) => p,
                            None => {
                                done += 1;
                                (ctx.progress)(done, total);
                                missing.push(format!("{app}-{n}x{t}"));
                                continue;
                            }
                        }
                    }
                };
                done += 1;
                (ctx.progress)(done, total);
                if !p.correct {
                    failures.push(format!("{app} {n}x{t}"));
                }
                points.push((p, base_ns.clone()));
            }
        }
    }
    let mut table = Table::new(&[
        "app",
        "context",
        "nodes",
        "threads_per_node",
        "time_s",
        "speedup",
        "faults_per_s",
        "barriers_per_s",
        "locks_per_s",
        "correct",
        "driver",
        "requests",
        "messages",
        "rdma_mb_per_s",
        "sends_per_s",
        "compute_share",
        "fault_share",
        "barrier_share",
        "lock_share",
        "stolen_share",
    ]);
    let mut events = 0;
    for (p, base) in &points {
        for (c, s) in &p.replays {
            events += s.events;
            let worker_ns = (s.time_ns.max(1) * (p.nodes * p.threads) as u64) as f64;
            let share = |x: u64| x as f64 / worker_ns;
            let sends = s.messages - s.data_messages;
            table.push(vec![
                p.app.clone().into(),
                c.name().into(),
                p.nodes.into(),
                p.threads.into(),
                (s.time_ns as f64 / 1e9).into(),
                (base[c] as f64 / s.time_ns.max(1) as f64).into(),
                per_s(s.faults, s.time_ns).into(),
                per_s(s.barrier_episodes, s.time_ns).into(),
                per_s(s.locks, s.time_ns).into(),
                u32::from(p.correct).into(),
                "sim".into(),
                s.requests.into(),
                s.messages.into(),
                (s.data_bytes as f64 / 1e6 / (s.time_ns.max(1) as f64 / 1e9)).into(),
                per_s(sends, s.time_ns).into(),
                share(s.compute_ns).into(),
                share(s.fault_ns).into(),
                share(s.barrier_ns).into(),
                share(s.lock_ns).into(),
                share(s.stolen_ns).into(),
            ]);
        }
    }
    let max_nodes = nodes.iter().max().copied().unwrap_or(1).to_string();
    let what = if load > 0 {
        " with one CPU-bound process per node"
    } else {
        ""
    };
    let mut plots = Vec::new();
    for &t in &threads {
        let mut p = PlotSpec::line(
            &format!("Speedup, interrupt context, {t} thread(s) per node{what}"),
            "nodes",
            "speedup",
            Some("app"),
        )
        .only("context", "interrupt")
        .only("threads_per_node", &t.to_string());
        if !plots.is_empty() {
            p = p.suffix(&format!("speedup-{t}t"));
        }
        plots.push(p);
    }
    let t_max = threads.iter().max().copied().unwrap_or(1).to_string();
    plots.push(
        PlotSpec::line(
            &format!("Speedup on {max_nodes} nodes x {t_max} threads per handler context{what}"),
            "app",
            "speedup",
            Some("context"),
        )
        .bars()
        .only("nodes", &max_nodes)
        .only("threads_per_node", &t_max)
        .suffix("contexts"),
    );
    for (col, name) in [
        ("compute_share", "computing"),
        ("fault_share", "faults (entry + wait)"),
        ("barrier_share", "barrier wait"),
        ("lock_share", "lock wait"),
        ("stolen_share", "handlers' CPU stolen"),
    ] {
        plots.push(
            PlotSpec::line(&format!("Time breakdown: share of worker time {name}, {max_nodes} nodes x {t_max} threads{what}"), "app", col, Some("context"))
                .bars()
                .only("nodes", &max_nodes)
                .only("threads_per_node", &t_max)
                .suffix(&format!("breakdown-{}", col.trim_end_matches("_share"))),
        );
    }
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: events,
        meta: json!({
            "profile": prof.name,
            "cpu_scale": prof.cpu.cpu_scale,
            "cpu_scale_source": scale_source,
            "load_procs_per_node": load,
            "input": format!("{input:?}").to_lowercase(),
            "repeats": repeats,
            "dsm_profile": serde_json::to_value(&prof).unwrap_or_default(),
            "apps": apps,
            "trace_source": if trace_dir.is_some() { "live" } else { "tracing" },
            "trace_dir": traces,
            "missing_traces": missing,
            "traces": if trace_dir.is_some() { "traces recorded by live runs (unpinned live dsm-apps --set exp.traces=DIR): compute is wall time between DSM events on the live machine, faults are real protection faults; `correct` is the live run's check" } else { "apps run on unpinned_dsm_apps::TracingSpace: software coherence per (rank, 4 KiB minipage), compute from thread CPU clocks; of `repeats` traced runs per point (3 at least for the 1x1 baseline) the one with the least computation is replayed (on a busy shared machine single runs vary by tens of %)" },
            "speedup": "time on 1 node x 1 thread / time, same app, context and load",
            "shares": "per-worker time fractions summed over workers / (workers x time); they need not add to 1 (posting, wake-ups)",
            "sends_per_s": "messages that carry no page data, per second",
            "incorrect_runs": failures,
        }),
    })
}

#[cfg(test)]
mod tests {
    use crate::Declared;

    #[test]
    fn declared_apps_and_contexts_are_the_real_ones() {
        let apps = super::Params::PARAMS
            .iter()
            .find(|p| p.name == "apps")
            .unwrap();
        assert_eq!(apps.default, unpinned_dsm_apps::names().join(","));
        let ctxs = super::Params::PARAMS
            .iter()
            .find(|p| p.name == "contexts")
            .unwrap();
        let all: Vec<&str> = unpinned_sim::dsm::Context::ALL
            .iter()
            .map(|c| c.name())
            .collect();
        assert_eq!(ctxs.default, all.join(","));
    }
}
