//! `live-residency`: what PART's residency check costs on present memory (issue 3's target:
//! at most 5% against Transfer-Only for transfers of 64 KiB and more), with and without the
//! translation cache ([`unpinned_os::residency_cache`]).
//!
//! Three pairs of runtimes in this process write the same source into the same exposed,
//! present destination:
//!
//! - `part-cache`: PART as configured by default: scan verdicts of watched memory (the
//!   exposure, the large source) trusted until a kernel event;
//! - `part-ttl`: PART with the cache off: every verdict trusted for 20 us
//!   ([`unpinned_live::memory::RESIDENCY_TTL`]), as before the cache;
//! - `transfer-only`: the same engine copying without any check (the spec's ideal).
//!
//! Per size and round, each pair writes a block of writes in turn, the pair that goes first
//! rotating between rounds (whichever ran second was measured faster), after a pause that lets
//! the other pairs' threads fall asleep. One row per (engine, size): median and quartiles of
//! the write latency, the ratio of medians to Transfer-Only, and the `PAGEMAP_SCAN`s per write
//! on each side (the deterministic part of the cost, free of this machine's noise).

use serde_json::json;
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::MemoryMode;
use unpinned_report::{PlotSpec, Table};

use super::{pattern, present, Pair};

/// `live-residency`.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "live-residency",
    system: "live",
    description: "Live: residency check cost on present memory, PART with and without the translation cache vs Transfer-Only, 64 KiB .. 4 MiB",
    params: Some(<Params as Declared>::PARAMS),
    run,
    ..ExperimentSpec::LIVE
};

/// The engines compared, in table order.
pub const ENGINES: [&str; 3] = ["part-cache", "part-ttl", "transfer-only"];

/// Quantile `q` (0..=1) of `v` (nearest rank); NaN for none.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

unpinned_experiments::declare_params! {
    /// Parameters of `live-residency`.
    pub struct Params {
        sizes: Vec<usize> {
            default: "65536,262144,1048576,4194304",
            unit: "bytes",
            check: unpinned_experiments::params::int(1, 1 << 30),
            doc: "Exposure sizes",
        },
        rounds: usize {
            default: "10",
            unit: "",
            check: unpinned_experiments::params::int(1, 10_000),
            doc: "Rounds per size, median",
        },
        block: usize {
            default: "5",
            unit: "",
            check: unpinned_experiments::params::int(1, 10_000),
            doc: "Writes per block, per pair and round",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        sizes,
        rounds,
        block,
    } = ctx.params()?;
    let max = sizes.iter().copied().max().unwrap_or(1);
    // Declared before the pairs so that it outlives them.
    let dst = present(max)?;
    let pairs = [
        Pair::with_loop(
            &ctx.profile,
            MemoryMode::Part,
            PageInConfig::default(),
            0,
            |_, _| {},
        )?,
        Pair::with_loop(
            &ctx.profile,
            MemoryMode::Part,
            PageInConfig::default(),
            0,
            |_, c| c.memory.residency_cache = false,
        )?,
        Pair::new(
            &ctx.profile,
            MemoryMode::TransferOnly,
            PageInConfig::default(),
        )?,
    ];
    let mut keys = Vec::new();
    for p in &pairs {
        // SAFETY: `dst` outlives every pair and is never read while transfers run.
        keys.push(unsafe { p.expose(dst.ptr(), max)? });
    }
    let mut table = Table::new(&[
        "engine",
        "size_bytes",
        "writes",
        "latency_us",
        "latency_p25_us",
        "latency_p75_us",
        "over_transfer_only",
        "scans_per_write_sender",
        "scans_per_write_target",
    ]);
    let mut summary = Vec::new();
    for (si, &size) in sizes.iter().enumerate() {
        let src = pattern(si as u64 + 7, size);
        // Warm-up: the cache registers what it watches at the third scan.
        for (p, &k) in pairs.iter().zip(&keys) {
            for _ in 0..4 {
                p.write_us(&src, dst.addr(), k)?;
            }
        }
        let before: Vec<_> = pairs.iter().map(|p| p.stats()).collect::<Result<_, _>>()?;
        let mut lat: Vec<Vec<f64>> = vec![Vec::new(); pairs.len()];
        for r in 0..rounds {
            for k in 0..pairs.len() {
                let e = (r + k) % pairs.len();
                std::thread::sleep(std::time::Duration::from_millis(3));
                pairs[e].write_us(&src, dst.addr(), keys[e])?;
                for _ in 0..block {
                    lat[e].push(pairs[e].write_us(&src, dst.addr(), keys[e])?);
                }
            }
        }
        let after: Vec<_> = pairs.iter().map(|p| p.stats()).collect::<Result<_, _>>()?;
        let to_median = quantile(lat[2].clone(), 0.5);
        for (e, name) in ENGINES.iter().enumerate() {
            let n = (rounds * (block + 1)) as f64;
            let scans = |b: &unpinned_live::RuntimeStats, a: &unpinned_live::RuntimeStats| {
                (a.memory.range_scans - b.memory.range_scans + a.memory.pagemap_reads
                    - b.memory.pagemap_reads) as f64
                    / n
            };
            let m = quantile(lat[e].clone(), 0.5);
            let ratio = m / to_median;
            summary.push(json!({"engine": name, "size_bytes": size, "over_transfer_only": ratio}));
            table.push(vec![
                (*name).into(),
                (size as u64).into(),
                (lat[e].len() as u64).into(),
                m.into(),
                quantile(lat[e].clone(), 0.25).into(),
                quantile(lat[e].clone(), 0.75).into(),
                ratio.into(),
                scans(&before[e].0, &after[e].0).into(),
                scans(&before[e].1, &after[e].1).into(),
            ]);
        }
        (ctx.progress)(si as u64 + 1, sizes.len() as u64);
    }
    let (s, t) = pairs[0].stats()?;
    for (p, k) in pairs.iter().zip(keys) {
        p.revoke(k);
    }
    drop(pairs);
    drop(dst);
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Live: write latency over Transfer-Only (present memory)",
                "size_bytes",
                "over_transfer_only",
                Some("engine"),
            )
            .log(true, false),
            PlotSpec::line(
                "Live: residency scans per write at the target",
                "size_bytes",
                "scans_per_write_target",
                Some("engine"),
            )
            .log(true, false)
            .only_any("engine", &["part-cache", "part-ttl"])
            .suffix("scans"),
        ],
        sim_events: 0,
        meta: json!({
            "sizes_bytes": sizes,
            "rounds": rounds,
            "block": block,
            "transport": "shm (two runtimes per pair in one process, three pairs)",
            "residency_ttl_us": unpinned_live::memory::RESIDENCY_TTL.as_micros() as u64,
            "cache_registrations": {"sender": s.memory.cache_registrations, "target": t.memory.cache_registrations},
            "cache_fallbacks": {"sender": s.memory.cache_fallbacks, "target": t.memory.cache_fallbacks},
            "summary": summary,
        }),
    })
}
