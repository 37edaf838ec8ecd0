//! `dsm-apps` and `dsm-load`: run time, speedup and per-application statistics of each
//! application in each handler context, 1..12 nodes x 1 and 2 threads per node, by replaying
//! traced runs; `dsm-load` adds one CPU-bound process per node.
//!
//! The traces are the shipped ones by default (`bench/traces/dsm/`, see `traces.rs`),
//! so the tables are the same bytes on every machine; `--set exp.traces=tracing` traces the
//! apps on this machine instead, `--set exp.traces=DIR` replays recorded ones (from live runs:
//! `unpinned live dsm-apps --set exp.traces=DIR`); points without a trace in a directory are
//! skipped (listed in the metadata as `missing_traces`). Rows are replays: `driver` is `sim`
//! whatever the source, the metadata's `trace_source` says which traces.
//!
//! The points are [`super::point::grid`]'s and the rows [`super::row`]'s, as live; the point
//! function is the simulator's own (one trace replayed in every context; see `point.rs`).

use std::collections::HashMap;

use serde_json::json;
use unpinned_dsm_apps::Input;
use unpinned_report::PlotSpec;
use unpinned_sim::dsm::{replay, Context, DsmProfile, ReplayConfig, ReplayStats};

use super::point::grid;
use super::row::{DsmRow, Shares};
use super::traces::Source;
use crate::aa::per_s;
use crate::params::{int, one_of};
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

/// The DSM profile (built-in `dsm-ib1`, or `--profile` / `--set`) and where its CPU factor
/// comes from (for the metadata).
fn profile(ctx: &RunContext) -> Result<(DsmProfile, &'static str), ExperimentError> {
    let source = match ctx.kind_profile {
        None => "profile file (clock ratio of the tracing machine to 733 MHz, a lower bound)",
        Some(_) => "--profile / --set cpu.cpu_scale (see the metadata's profile)",
    };
    Ok((ctx.dsm_profile()?, source))
}

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
        traces: String {
            default: "shipped",
            unit: "",
            check: crate::params::Check::Any,
            doc: "Traces replayed: shipped (bench/traces/dsm, the same bytes everywhere), tracing (trace the apps now, on this machine) or a directory of recorded traces",
        },
        repeats: u32 {
            default: "1",
            unit: "runs",
            check: int(1, 1000),
            doc: "With traces=tracing: traced runs per point (the least computing one is replayed)",
        },
        record: String {
            default: "",
            unit: "directory",
            check: crate::params::Check::Any,
            doc: "With traces=tracing: write the traces there, in the shipped format",
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

/// The trace of one point replayed in every context (`None`: the trace directory has none).
fn trace_and_replay(
    source: &Source,
    app: &str,
    input: Input,
    (nodes, threads): (u32, u32),
    prof: &DsmProfile,
    contexts: &[Context],
    load: u32,
) -> Result<Option<Point>, ExperimentError> {
    let Some((trace, correct)) = source.load(app, input, nodes, threads)? else {
        return Ok(None);
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

fn run(ctx: &RunContext, load: u32) -> Result<ExperimentOutput, ExperimentError> {
    let (prof, scale_source) = profile(ctx)?;
    let Params {
        apps,
        nodes,
        threads,
        contexts,
        input,
        traces,
        repeats,
        record,
    } = ctx.params()?;
    let contexts: Vec<Context> = contexts
        .iter()
        .map(|c| c.parse().expect("declared contexts parse"))
        .collect();
    let input: Input = input.parse().expect("declared inputs parse");
    let source = Source::new(&traces, repeats, &record, input)?;
    let mut missing = Vec::new();
    // The traced runs run one at a time: each already uses a thread per worker.
    let mut points = Vec::new();
    let mut failures = Vec::new();
    let total = (apps.len() * (nodes.len() * threads.len() + 1)) as u64;
    let mut done = 0;
    for app in &apps {
        // The speedup baseline: the same app on one node with one thread, same context.
        // Every speedup of the app divides by it: trace it a few more times than the others.
        let base = trace_and_replay(&source, app, input, (1, 1), &prof, &contexts, load)?
            .ok_or_else(|| {
                ExperimentError::BadParam(
                    "traces".into(),
                    format!("no {app}-1x1.jsonl (the speedup baseline)"),
                )
            })?;
        done += 1;
        (ctx.progress)(done, total);
        let base_ns: HashMap<Context, u64> =
            base.replays.iter().map(|(c, s)| (*c, s.time_ns)).collect();
        let mut base = Some(base);
        for pt in grid(std::slice::from_ref(app), &nodes, &threads) {
            let (n, t) = (pt.nodes, pt.threads);
            // 1 x 1 is the baseline run itself (speedup exactly 1).
            let p = match (pt.is_baseline(), base.take()) {
                (true, Some(b)) => b,
                (_, b) => {
                    base = b;
                    match trace_and_replay(&source, app, input, (n, t), &prof, &contexts, load)? {
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
    let mut table = DsmRow::table();
    let mut events = 0;
    for (p, base) in &points {
        for (c, s) in &p.replays {
            events += s.events;
            let worker_ns = (s.time_ns.max(1) * (p.nodes * p.threads) as u64) as f64;
            let share = |x: u64| x as f64 / worker_ns;
            let sends = s.messages - s.data_messages;
            DsmRow {
                app: p.app.clone(),
                context: c.name().into(),
                nodes: p.nodes,
                threads_per_node: p.threads,
                time_s: s.time_ns as f64 / 1e9,
                speedup: base[c] as f64 / s.time_ns.max(1) as f64,
                faults_per_s: per_s(s.faults, s.time_ns),
                barriers_per_s: per_s(s.barrier_episodes, s.time_ns),
                locks_per_s: per_s(s.locks, s.time_ns),
                correct: p.correct,
                driver: "sim",
                requests: s.requests,
                messages: s.messages,
                rdma_mb_per_s: s.data_bytes as f64 / 1e6 / (s.time_ns.max(1) as f64 / 1e9),
                sends_per_s: per_s(sends, s.time_ns),
                shares: Some(Shares {
                    compute: share(s.compute_ns),
                    fault: share(s.fault_ns),
                    barrier: share(s.barrier_ns),
                    lock: share(s.lock_ns),
                    stolen: share(s.stolen_ns),
                }),
            }
            .push_to(&mut table);
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
            "dsm_profile": serde_json::to_value(&prof).unwrap_or_default(),
            "apps": apps,
            "trace_source": source.name(),
            "missing_traces": missing,
            "traces": source.describe(),
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
