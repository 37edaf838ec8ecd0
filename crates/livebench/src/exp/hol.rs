//! `live-hol`: head-of-line blocking. Several transfers run concurrently towards one target;
//! one of them writes file-backed memory whose page cache was dropped (a major fault per page,
//! read-ahead disabled). Under PART the faulting transfer is NACKed and paged in by the page-in
//! thread while the others keep flowing; the blocking engine takes each major fault inside the
//! engine thread and every other transfer waits. `no-fault` runs the same other transfers
//! without the faulting one (on PART).
//!
//! Diagnostics: with `--set exp.debug=true`, both ranks' counters are printed to stderr after
//! each engine's run (drops, timeouts, ERRs, pagemap reads, page-in time).

use serde_json::json;
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::MemoryMode;
use unpinned_os::mapping::Mapping;
use unpinned_report::{PlotSpec, Table};

use super::{fail, median, pattern, present, Pair};

/// `live-hol`.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "live-hol",
    system: "live",
    description: "Live: concurrent transfers, one hitting major faults: latency of the others, PART vs the blocking engine",
    params: Some(<Params as Declared>::PARAMS),
    run,
    ..ExperimentSpec::LIVE
};

/// Engines compared.
pub const ENGINES: [&str; 3] = ["part", "blocking", "no-fault"];

/// Parameters of one run.
#[derive(Clone, Copy, Debug)]
pub struct HolParams {
    /// Other (non-faulting) transfers.
    pub others: usize,
    /// Bytes per other transfer.
    pub other_bytes: usize,
    /// Bytes of the faulting transfer (file-backed destination).
    pub fault_bytes: usize,
    /// Repetitions (median per transfer).
    pub reps: usize,
    /// The faulting destination is fresh anonymous memory (minor faults) instead of a file
    /// whose page cache was dropped (major faults): `--set exp.fault_memory=anon`.
    pub anon_fault: bool,
    /// Slots per shared-memory ring (`--set exp.ring_slots=N`; default [`super::ring_slots`]).
    pub ring_slots: u32,
    /// Print both ranks' counters to stderr after each engine's run (`--set exp.debug=true`).
    pub debug: bool,
}

/// Median latency (us) per transfer for `engine`: `other-0..` then `faulting` (absent for
/// `no-fault`).
pub fn hol(
    ctx: &RunContext,
    engine: &str,
    p: HolParams,
) -> Result<Vec<(String, f64)>, ExperimentError> {
    let mode = if engine == "blocking" {
        MemoryMode::Blocking
    } else {
        MemoryMode::Part
    };
    let srcs: Vec<Vec<u8>> = (0..p.others)
        .map(|i| pattern(i as u64 + 9, p.other_bytes))
        .collect();
    let dsts: Vec<Mapping> = (0..p.others)
        .map(|_| present(p.other_bytes))
        .collect::<Result<_, _>>()?;
    // Unique per run: the mapping removes its file again when dropped.
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("unpinned-live-hol-{}-{run}", std::process::id()));
    let fmap = if p.anon_fault {
        Mapping::anon(p.fault_bytes)
    } else {
        Mapping::file(&path, p.fault_bytes, |i| i as u8)
    }
    .map_err(fail)?;
    let _ = std::fs::remove_file(&path);
    // SAFETY: advice on our own mapping: no read-ahead, so every page is its own major fault.
    unsafe {
        libc::madvise(
            fmap.ptr() as *mut libc::c_void,
            fmap.len(),
            libc::MADV_RANDOM,
        )
    };
    let fsrc = pattern(77, p.fault_bytes);
    // Started after the buffers, so dropped (engines stopped) before them on every path.
    let pair = Pair::with_ring(
        &ctx.profile,
        mode,
        PageInConfig::default(),
        super::base_fill_pages(),
        p.ring_slots,
        |_, _| {},
    )?;
    // SAFETY: the destinations outlive the pair (declared before it).
    let keys: Vec<u32> = dsts
        .iter()
        .map(|d| unsafe { pair.expose(d.ptr(), d.len()) })
        .collect::<Result<_, _>>()?;
    // SAFETY: as above; `fmap` is read only between repetitions.
    let fkey = unsafe { pair.expose(fmap.ptr(), fmap.len()) }?;
    // Warm-up of the other transfers.
    for i in 0..p.others {
        pair.write_us(&srcs[i], dsts[i].addr(), keys[i])?;
    }
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); p.others + 1];
    let rt = &pair.rts[0];
    for _ in 0..p.reps.max(1) {
        fmap.drop_cache().map_err(fail)?;
        // Latency in the engine's clock (post to the completion's time stamp), so that the
        // poster's own scheduling does not count.
        let t0 = rt.now();
        let mut ids = Vec::new();
        if engine != "no-fault" {
            // SAFETY: `fsrc` lives until the completion below.
            ids.push((
                p.others,
                unsafe { rt.write(1, fsrc.as_ptr(), fmap.addr(), fkey, fsrc.len()) }
                    .map_err(fail)?,
            ));
        }
        for i in 0..p.others {
            // SAFETY: `srcs[i]` lives until the completion below.
            ids.push((
                i,
                unsafe { rt.write(1, srcs[i].as_ptr(), dsts[i].addr(), keys[i], p.other_bytes) }
                    .map_err(fail)?,
            ));
        }
        for &(i, id) in &ids {
            let c = rt.wait(id).map_err(fail)?;
            lat[i].push((c.at - t0).as_us_f64());
        }
        for i in 0..p.others {
            super::verify(&dsts[i], &srcs[i], "other transfer")?;
        }
        if engine != "no-fault" {
            super::verify(&fmap, &fsrc, "faulting transfer")?;
        }
    }
    if p.debug {
        let (a, b) = pair.stats()?;
        eprintln!("{engine}: sender {a:?}\n target {b:?}");
    }
    let mut out: Vec<(String, f64)> = (0..p.others)
        .map(|i| (format!("other-{i}"), median(lat[i].clone())))
        .collect();
    if engine != "no-fault" {
        out.push(("faulting".into(), median(lat[p.others].clone())));
    }
    Ok(out)
}

unpinned_experiments::declare_params! {
    /// Parameters of `live-hol`.
    pub struct Params {
        others: usize {
            default: "3",
            unit: "",
            check: unpinned_experiments::params::int(1, 64),
            doc: "Other (non-faulting) transfers",
        },
        other_bytes: usize {
            default: "262144",
            unit: "bytes",
            check: unpinned_experiments::params::int(1, 1 << 30),
            doc: "Bytes per other transfer",
        },
        fault_bytes: usize {
            default: "1048576",
            unit: "bytes",
            check: unpinned_experiments::params::int(1, 1 << 30),
            doc: "Bytes of the faulting transfer",
        },
        reps: usize {
            default: "7",
            unit: "",
            check: unpinned_experiments::params::int(1, 10_000),
            doc: "Repetitions, median per transfer",
        },
        ring_slots: u32 {
            default: "0",
            unit: "",
            check: unpinned_experiments::params::int(0, 1 << 20),
            doc: "Slots per shared-memory ring (0: transport.ring_slots of the runtime configuration; else at least 2)",
        },
        fault_memory: String {
            default: "file",
            unit: "",
            check: unpinned_experiments::params::one_of(&["file", "anon"]),
            doc: "Faulting destination: a file with its page cache dropped (major faults) or fresh anonymous memory (minor faults)",
        },
        debug: bool {
            default: "false",
            unit: "",
            check: unpinned_experiments::params::Check::Any,
            doc: "Print both ranks' counters to stderr after each engine's run",
        },
    }
}

/// The parameters from `--set exp.NAME=VALUE` (declared in [`Params`]).
pub fn params(ctx: &RunContext) -> Result<HolParams, ExperimentError> {
    let p: Params = ctx.params()?;
    Ok(HolParams {
        others: p.others,
        other_bytes: p.other_bytes,
        fault_bytes: p.fault_bytes,
        reps: p.reps,
        ring_slots: match p.ring_slots {
            0 => super::ring_slots(),
            n => n,
        },
        debug: p.debug,
        anon_fault: p.fault_memory == "anon",
    })
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let p = params(ctx)?;
    let mut table = Table::new(&["engine", "transfer", "latency_us"]);
    for (i, engine) in ENGINES.iter().enumerate() {
        for (t, l) in hol(ctx, engine, p)? {
            table.push(vec![(*engine).into(), t.into(), l.into()]);
        }
        (ctx.progress)(i as u64 + 1, ENGINES.len() as u64);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Live: latency per transfer with one major-faulting transfer",
            "transfer",
            "latency_us",
            Some("engine"),
        )
        .bars()],
        sim_events: 0,
        meta: json!({
            "others": p.others, "other_bytes": p.other_bytes, "ring_slots": p.ring_slots, "fault_bytes": p.fault_bytes, "reps": p.reps, "fault_memory": if p.anon_fault { "anon" } else { "file" },
            "note": "All transfers posted together (the faulting one first); latency = post to completion seen by the poster; medians of reps. The faulting destination is a shared file mapping in the temp directory with its page cache dropped and MADV_RANDOM (one major fault per page).",
            "transport": "shm (two runtimes in one process)",
        }),
    })
}
