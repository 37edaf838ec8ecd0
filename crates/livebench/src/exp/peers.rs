//! `live-peers`: put/get latency and bandwidth, 8 B .. 4 MiB, on arbitrary (`malloc`'d)
//! memory: this runtime (`unpinned`: put = RDMA write, get = RDMA read) beside a peer
//! one-sided library on this machine, Open MPI's `MPI_Put`/`MPI_Get` on an `MPI_Win_create`
//! window (bench/peers/mpi_rma.c, run by bench/peers/run.sh). Same method on both sides:
//! latency = mean of `reps` operations each completed before the next (flush); bandwidth =
//! `reps` operations back to back, then one flush.
//!
//! Nothing is installed: without Open MPI the script exits with [`PEER_MISSING_CODE`] and the
//! command that installs it, and the experiment keeps this runtime's rows, skipping the peer
//! side with that message in its metadata's `skipped` (shown in the report).

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_report::{Cell, PlotSpec, Table};

use super::{fail, Pair};

/// `live-peers`.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "live-peers",
    system: "live",
    description:
        "Live: put/get latency and bandwidth vs a peer one-sided library (Open MPI MPI_Put/MPI_Get)",
    params: Some(<Params as Declared>::PARAMS),
    run,
    ..ExperimentSpec::LIVE
};

/// Repetitions per size, as in mpi_rma.c (scaled by `small` for small sizes).
fn reps_for(n: usize, small: usize) -> usize {
    if n >= 1 << 20 {
        5
    } else if n >= 64 << 10 {
        20
    } else {
        small
    }
}

/// Rows `(op, size, latency_us, bandwidth_gbps)` of this runtime, sizes 8 B .. `max` doubling.
pub fn ours(
    ctx: &RunContext,
    max: usize,
    small: usize,
) -> Result<Vec<(&'static str, usize, f64, f64)>, ExperimentError> {
    // Arbitrary memory: plain heap allocations, never registered.
    let local = vec![7u8; max];
    let window = vec![1u8; max];
    let mut local_rx = vec![0u8; max];
    // Started after the buffers, so dropped (engines stopped) before them on every path.
    let pair = Pair::part(&ctx.profile)?;
    // SAFETY: `window` outlives the exposure (revoked below) and is not accessed meanwhile.
    let key = unsafe { pair.expose(window.as_ptr(), window.len()) }?;
    let rt = &pair.rts[0];
    let mut rows = Vec::new();
    for op in ["put", "get"] {
        let mut n = 8;
        while n <= max {
            let reps = reps_for(n, small);
            let one = |rx: &mut Vec<u8>| -> Result<u64, ExperimentError> {
                // SAFETY: both buffers outlive the completions waited for below; the window is
                // only touched by the engine while transfers run.
                unsafe {
                    if op == "put" {
                        rt.write(1, local.as_ptr(), window.as_ptr() as u64, key, n)
                    } else {
                        rt.read(1, rx.as_mut_ptr(), window.as_ptr() as u64, key, n)
                    }
                }
                .map_err(fail)
            };
            for _ in 0..3 {
                let id = one(&mut local_rx)?;
                rt.wait(id).map_err(fail)?;
            }
            let t = Instant::now();
            for _ in 0..reps {
                let id = one(&mut local_rx)?;
                rt.wait(id).map_err(fail)?;
            }
            let lat = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
            let t = Instant::now();
            for _ in 0..reps {
                one(&mut local_rx)?;
            }
            rt.flush().map_err(fail)?;
            let gbps = (n * reps) as f64 * 8.0 / t.elapsed().as_secs_f64() / 1e9;
            rows.push((op, n, lat, gbps));
            n *= 2;
        }
    }
    pair.revoke(key);
    drop(pair);
    Ok(rows)
}

/// Exit code of bench/peers/run.sh when Open MPI is not installed (its last stderr line says
/// how to install it).
pub const PEER_MISSING_CODE: i32 = 3;

/// Run the peer benchmark script; its CSV rows, or why not.
pub fn peer(script: &std::path::Path, small: usize) -> Result<Vec<Vec<String>>, String> {
    let out = std::process::Command::new("bash")
        .arg(script)
        .arg(small.to_string())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if out.status.code() == Some(PEER_MISSING_CODE) {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err
            .lines()
            .last()
            .unwrap_or("Open MPI is missing")
            .to_string());
    }
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .skip_while(|l| !l.starts_with("system,"))
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>())
        .filter(|r| r.len() == 5)
        .collect())
}

unpinned_experiments::declare_params! {
    /// Parameters of `live-peers`.
    pub struct Params {
        max_bytes: usize {
            default: "4194304",
            unit: "bytes",
            check: unpinned_experiments::params::int(1, 1 << 30),
            doc: "Largest transfer of the sweep",
        },
        reps: usize {
            default: "200",
            unit: "",
            check: unpinned_experiments::params::int(1, 1_000_000),
            doc: "Repetitions per small transfer",
        },
        peer: bool {
            default: "true",
            unit: "",
            check: unpinned_experiments::params::Check::Any,
            doc: "Run the peer library too (bench/peers/run.sh)",
        },
        peer_script: String {
            default: "",
            unit: "",
            check: unpinned_experiments::params::Check::Any,
            doc: "Path of bench/peers/run.sh (empty: beside the workspace this binary was built from, else relative to the current directory)",
        },
    }
}

/// Where bench/peers/run.sh is: `--set exp.peer_script=PATH`, else beside the workspace this
/// binary was built from, else relative to the current directory.
pub fn script(ctx: &RunContext) -> Result<PathBuf, ExperimentError> {
    let Params { peer_script, .. } = ctx.params()?;
    if !peer_script.is_empty() {
        return Ok(PathBuf::from(peer_script));
    }
    let built = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bench/peers/run.sh"
    ));
    Ok(if built.exists() {
        built
    } else {
        PathBuf::from("bench/peers/run.sh")
    })
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        max_bytes: max,
        reps: small,
        peer: with_peer,
        ..
    } = ctx.params()?;
    let mut table = Table::new(&["system", "op", "size_bytes", "latency_us", "bandwidth_gbps"]);
    for (op, n, lat, bw) in ours(ctx, max, small)? {
        table.push(vec![
            "unpinned".into(),
            op.into(),
            (n as u64).into(),
            lat.into(),
            bw.into(),
        ]);
    }
    (ctx.progress)(1, 2);
    let mut peer_note = "not run (exp.peer=false)".to_string();
    let mut skipped = None;
    if with_peer {
        let s = script(ctx)?;
        match peer(&s, small) {
            Ok(rows) => {
                peer_note = format!("{} rows from {}", rows.len(), s.display());
                for r in rows {
                    let num = |x: &str| {
                        x.trim()
                            .parse::<f64>()
                            .map(Cell::from)
                            .unwrap_or_else(|_| Cell::from(x))
                    };
                    let size: u64 = r[2].trim().parse().unwrap_or(0);
                    if size as usize <= max {
                        table.push(vec![
                            r[0].clone().into(),
                            r[1].clone().into(),
                            size.into(),
                            num(&r[3]),
                            num(&r[4]),
                        ]);
                    }
                }
            }
            Err(e) => {
                peer_note = format!("peer benchmark unavailable: {e}");
                skipped = Some(format!("Open MPI side skipped: {e}"));
            }
        }
    }
    (ctx.progress)(2, 2);
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Live: put latency, unpinned vs Open MPI",
                "size_bytes",
                "latency_us",
                Some("system"),
            )
            .log(true, true)
            .only("op", "put"),
            PlotSpec::line(
                "Live: get latency, unpinned vs Open MPI",
                "size_bytes",
                "latency_us",
                Some("system"),
            )
            .log(true, true)
            .only("op", "get")
            .suffix("get"),
            PlotSpec::line(
                "Live: put bandwidth",
                "size_bytes",
                "bandwidth_gbps",
                Some("system"),
            )
            .log(true, true)
            .only("op", "put")
            .suffix("put-bw"),
        ],
        sim_events: 0,
        meta: json!({ "max_bytes": max, "reps_small": small, "peer": peer_note, "skipped": skipped, "bandwidth_unit": "Gb/s (bits)", "transport": "unpinned: shm (two runtimes in one process); openmpi: mpirun -np 2 --mca btl self,vader" }),
    })
}
