//! Where `dsm-apps` and `dsm-load` get the traces they replay (`--set exp.traces=...`):
//!
//! - `shipped` (the default): the traces in `bench/traces/dsm/`, embedded in the binary at
//!   build time. They were recorded once on the tracing space (command and machine in
//!   `recorded.json` there), so the experiments' tables are the same bytes on every machine.
//! - `tracing`: run the applications on the tracing space now. Computation then comes from
//!   this machine's thread CPU clocks and faults from this run's thread interleaving, so the
//!   tables differ from run to run; `--set exp.record=DIR` writes the traces in the shipped
//!   format (this is how `bench/traces/dsm/` is made).
//! - a directory: traces recorded by live runs (`unpinned live dsm-apps --set
//!   exp.traces=DIR`) or by `exp.record`: `APP-NxT.jsonl` (or `.jsonl.gz`) and the run's
//!   result `APP-NxT.json` with a boolean `correct`. Points without a trace are skipped.
//!
//! Why ship traces instead of deriving them: a traced run is not deterministic in two ways,
//! its computation (a clock) and its faults (which worker of which rank touches a minipage
//! first depends on the threads' interleaving; TSP's work distribution and every lock order
//! do too). A computation model from counted work would still need a deterministic scheduler,
//! which would invent an interleaving, and per-application costs per unit of work, which would
//! be invented or calibrated with a clock anyway. Shipped traces are real, checked runs of the
//! applications, and the profile's `cpu_scale` then describes one known machine: the one that
//! recorded them.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::json;
use unpinned_dsm_apps::{create, run_traced, Input, Trace};

use crate::ExperimentError;

/// The shipped files: (file name, bytes), from `build.rs`.
static SHIPPED: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/shipped_dsm_traces.rs"));

/// The provenance file of a recorded set.
pub const RECORDED: &str = "recorded.json";

/// Traced runs of the 1 node x 1 thread baseline with `exp.traces=tracing` (the least
/// computing one is replayed): every speedup of an app divides by it.
const BASE_REPEATS: u32 = 3;

/// The traces' origin.
pub enum Source {
    /// `bench/traces/dsm/`, embedded.
    Shipped,
    /// The tracing space, now: `repeats` runs per point, the least computing one kept;
    /// written to `record` when given.
    Tracing {
        /// Traced runs per point.
        repeats: u32,
        /// Directory to write the traces to.
        record: Option<PathBuf>,
    },
    /// A directory of recorded traces.
    Dir(PathBuf),
}

fn bad(param: &str, why: impl Into<String>) -> ExperimentError {
    ExperimentError::BadParam(param.into(), why.into())
}

impl Source {
    /// From `exp.traces` (`shipped`, `tracing` or a directory), `exp.repeats` and
    /// `exp.record` (both for `tracing` only: other sources refuse a value other than their
    /// defaults); `input` must be the shipped set's for `shipped`.
    pub fn new(
        traces: &str,
        repeats: u32,
        record: &str,
        input: Input,
    ) -> Result<Source, ExperimentError> {
        let repeats = (repeats != 1).then_some(repeats);
        let record = (!record.is_empty()).then(|| record.to_string());
        let tracing_only = |what: &str| {
            bad(
                what,
                format!("exp.{what} applies to exp.traces=tracing only (exp.traces={traces})"),
            )
        };
        let source = match traces {
            "shipped" | "" => {
                let rec = shipped_recorded()?;
                let shipped_input = rec["input"].as_str().unwrap_or("?");
                if input_name(input) != shipped_input {
                    return Err(bad(
                        "input",
                        format!(
                            "{}: the shipped traces are of input {shipped_input}; \
                             --set exp.traces=tracing traces other inputs on this machine \
                             (times then vary from run to run)",
                            input_name(input)
                        ),
                    ));
                }
                Source::Shipped
            }
            "tracing" => Source::Tracing {
                repeats: repeats.unwrap_or(1),
                record: record.clone().filter(|r| !r.is_empty()).map(PathBuf::from),
            },
            dir => {
                let d = PathBuf::from(dir);
                if !d.is_dir() {
                    return Err(bad(
                        "traces",
                        format!("{dir}: not a directory (exp.traces is shipped, tracing or a directory)"),
                    ));
                }
                Source::Dir(d)
            }
        };
        if !matches!(source, Source::Tracing { .. }) {
            if repeats.is_some() {
                return Err(tracing_only("repeats"));
            }
            if record.is_some() {
                return Err(tracing_only("record"));
            }
        }
        if let Source::Tracing {
            record: Some(d), ..
        } = &source
        {
            std::fs::create_dir_all(d)
                .map_err(|e| bad("record", format!("{}: {e}", d.display())))?;
        }
        Ok(source)
    }

    /// `shipped`, `tracing` or `directory` (the metadata's `trace_source`).
    pub fn name(&self) -> &'static str {
        match self {
            Source::Shipped => "shipped",
            Source::Tracing { .. } => "tracing",
            Source::Dir(_) => "directory",
        }
    }

    /// The trace of `app` on `nodes x threads` and whether its run computed the right answer;
    /// `None` for a directory without that trace.
    pub fn load(
        &self,
        app: &str,
        input: Input,
        nodes: u32,
        threads: u32,
    ) -> Result<Option<(Trace, bool)>, ExperimentError> {
        let stem = format!("{app}-{nodes}x{threads}");
        let (trace, correct) = match self {
            Source::Shipped => {
                let file = |name: &str| SHIPPED.iter().find(|(n, _)| *n == name).map(|(_, b)| *b);
                let (Some(gz), Some(result)) = (
                    file(&format!("{stem}.jsonl.gz")),
                    file(&format!("{stem}.json")),
                ) else {
                    return Err(bad(
                        "nodes/threads",
                        format!(
                            "no shipped trace of {app} on {nodes} nodes x {threads} threads \
                             (shipped: {}); --set exp.traces=tracing traces it on this machine",
                            shipped_geometries(app)
                        ),
                    ));
                };
                let what = format!("shipped {stem}.jsonl.gz");
                let text = gunzip(gz).map_err(|e| ExperimentError::Sim(format!("{what}: {e}")))?;
                let trace = Trace::parse(&text)
                    .map_err(|e| ExperimentError::Sim(format!("{what}: {e}")))?;
                let correct = correct_of(result)
                    .map_err(|e| ExperimentError::Sim(format!("shipped {stem}.json: {e}")))?;
                (trace, correct)
            }
            Source::Tracing { repeats, record } => {
                let runs = if (nodes, threads) == (1, 1) {
                    (*repeats).max(BASE_REPEATS)
                } else {
                    *repeats
                };
                let (trace, correct) = traced(app, input, runs, nodes, threads)?;
                if let Some(d) = record {
                    write_recorded(d, &stem, &trace, correct, input, *repeats)?;
                }
                (trace, correct)
            }
            Source::Dir(dir) => match dir_trace(dir, &stem)? {
                Some(t) => t,
                None => return Ok(None),
            },
        };
        let h = &trace.header;
        if (h.ranks, h.threads_per_rank) != (nodes, threads) || h.app != app {
            return Err(bad(
                "traces",
                format!(
                    "{stem}: header says {} on {}x{}",
                    h.app, h.ranks, h.threads_per_rank
                ),
            ));
        }
        Ok(Some((trace, correct)))
    }

    /// What the metadata says about the traces.
    pub fn describe(&self) -> serde_json::Value {
        match self {
            Source::Shipped => json!({
                "source": "shipped",
                "what": "traces of the apps on unpinned_dsm_apps::TracingSpace (software coherence per rank and 4 KiB minipage, computation from thread CPU clocks), recorded once and embedded from bench/traces/dsm/; the replay is deterministic, so the table is the same on every machine",
                "recorded": shipped_recorded().unwrap_or_default(),
            }),
            Source::Tracing { repeats, record } => json!({
                "source": "tracing",
                "what": "apps run now on unpinned_dsm_apps::TracingSpace: software coherence per rank and 4 KiB minipage, computation from this machine's thread CPU clocks; of `repeats` traced runs per point (3 at least for the 1x1 baseline) the least computing one is replayed. Times vary between runs (clocks, thread interleaving)",
                "repeats": repeats,
                "recorded_to": record.as_ref().map(|d| d.display().to_string()),
                "machine": machine(),
            }),
            Source::Dir(d) => json!({
                "source": "directory",
                "dir": d.display().to_string(),
                "what": "traces read from a directory: from live runs (unpinned live dsm-apps --set exp.traces=DIR: computation is wall time between DSM events, faults are real protection faults, `correct` is the live run's check) or from exp.record",
                "recorded": std::fs::read_to_string(d.join(RECORDED)).ok().and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok()),
            }),
        }
    }
}

fn input_name(input: Input) -> String {
    format!("{input:?}").to_lowercase()
}

/// The shipped set's `recorded.json`.
fn shipped_recorded() -> Result<serde_json::Value, ExperimentError> {
    let bytes = SHIPPED
        .iter()
        .find(|(n, _)| *n == RECORDED)
        .map(|(_, b)| *b)
        .ok_or_else(|| {
            bad(
                "traces",
                "shipped: this binary was built without bench/traces/dsm/ (use \
                 exp.traces=tracing, or rebuild from the repository)",
            )
        })?;
    serde_json::from_slice(bytes)
        .map_err(|e| ExperimentError::Sim(format!("shipped {RECORDED}: {e}")))
}

/// `nodes x threads` geometries shipped for `app`, for error messages.
fn shipped_geometries(app: &str) -> String {
    let prefix = format!("{app}-");
    let mut g: Vec<(u32, u32)> = SHIPPED
        .iter()
        .filter_map(|(n, _)| n.strip_prefix(&prefix)?.strip_suffix(".jsonl.gz"))
        .filter_map(|g| {
            let (n, t) = g.split_once('x')?;
            Some((n.parse().ok()?, t.parse().ok()?))
        })
        .collect();
    g.sort();
    if g.is_empty() {
        return "none".into();
    }
    g.iter()
        .map(|(n, t)| format!("{n}x{t}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn gunzip(bytes: &[u8]) -> std::io::Result<String> {
    let mut s = String::new();
    flate2::read::GzDecoder::new(bytes).read_to_string(&mut s)?;
    Ok(s)
}

fn gzip(text: &str) -> std::io::Result<Vec<u8>> {
    // No file name and mtime 0 in the header: the same trace gives the same bytes.
    let mut e = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    e.write_all(text.as_bytes())?;
    e.finish()
}

/// `correct` of a run's result file.
fn correct_of(bytes: &[u8]) -> Result<bool, String> {
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    v.get("correct")
        .and_then(serde_json::Value::as_bool)
        .ok_or_else(|| "no boolean `correct`".to_string())
}

/// The trace `DIR/STEM.jsonl` (or `.jsonl.gz`) with its result `DIR/STEM.json`; `None` if
/// there is no trace.
fn dir_trace(dir: &Path, stem: &str) -> Result<Option<(Trace, bool)>, ExperimentError> {
    let plain = dir.join(format!("{stem}.jsonl"));
    let packed = dir.join(format!("{stem}.jsonl.gz"));
    let read =
        |p: &Path| std::fs::read(p).map_err(|e| bad("traces", format!("{}: {e}", p.display())));
    let (path, text) = if plain.exists() {
        let b = read(&plain)?;
        let t =
            String::from_utf8(b).map_err(|e| bad("traces", format!("{}: {e}", plain.display())))?;
        (plain, t)
    } else if packed.exists() {
        let t = gunzip(&read(&packed)?)
            .map_err(|e| bad("traces", format!("{}: {e}", packed.display())))?;
        (packed, t)
    } else {
        return Ok(None);
    };
    let trace =
        Trace::parse(&text).map_err(|e| bad("traces", format!("{}: {e}", path.display())))?;
    let rpath = dir.join(format!("{stem}.json"));
    let correct = correct_of(&read(&rpath)?).map_err(|e| {
        bad(
            "traces",
            format!("{} (the run's result): {e}", rpath.display()),
        )
    })?;
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
        let mut a = create(app, input).map_err(|e| bad("apps", e.to_string()))?;
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

/// This machine, as `recorded.json` describes the tracing machine: the CPU model and clock
/// (the profile's `cpu_scale` is that clock over the reference node's 733 MHz) and the CPUs.
fn machine() -> serde_json::Value {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    json!({
        "cpu_model": field("model name"),
        "cpu_mhz": field("cpu MHz").and_then(|m| m.parse::<f64>().ok()),
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
    })
}

/// Writes `DIR/STEM.jsonl.gz`, `DIR/STEM.json` and (once) `DIR/recorded.json`.
fn write_recorded(
    dir: &Path,
    stem: &str,
    trace: &Trace,
    correct: bool,
    input: Input,
    repeats: u32,
) -> Result<(), ExperimentError> {
    let io = |p: &Path, e: std::io::Error| bad("record", format!("{}: {e}", p.display()));
    let tp = dir.join(format!("{stem}.jsonl.gz"));
    let gz = gzip(&trace.to_json_lines()).map_err(|e| io(&tp, e))?;
    std::fs::write(&tp, gz).map_err(|e| io(&tp, e))?;
    let rp = dir.join(format!("{stem}.json"));
    std::fs::write(&rp, format!("{{\"correct\": {correct}}}\n")).map_err(|e| io(&rp, e))?;
    let pp = dir.join(RECORDED);
    if !pp.exists() {
        let v = json!({
            "input": input_name(input),
            "repeats": repeats,
            "repeats_baseline": repeats.max(BASE_REPEATS),
            "how": "unpinned sim dsm-apps --set exp.traces=tracing --set exp.repeats=N --set exp.record=DIR: each point traced N times on unpinned_dsm_apps::TracingSpace (the 1x1 baseline at least 3 times), the least computing run kept",
            "machine": machine(),
        });
        let text = serde_json::to_string_pretty(&v).expect("json serializes") + "\n";
        std::fs::write(&pp, text).map_err(|e| io(&pp, e))?;
    }
    Ok(())
}
