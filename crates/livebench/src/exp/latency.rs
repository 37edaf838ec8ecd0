//! Live `part-latency`: no faults in the network; latency vs size 64 B .. 4 MiB for
//! Transfer-Only, Touch-Pres, Touch-NoPres, Pin-Pres, Pin-NoPres (the simulator's columns), plus
//! `part`: PART with its residency check on present memory (the cost of the check).

use serde_json::json;
use unpinned_experiments::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::MemoryMode;
use unpinned_os::mapping::Mapping;
use unpinned_report::{PlotSpec, Table};

use super::{fail, median, pattern, present, sizes_param, verify, Pair};
use crate::schemes::{mlock_range, touch_pages};

/// `part-latency`, live.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-latency",
    system: "live",
    description: "Live: latency vs size without faults: Transfer-Only, Touch-Pres/NoPres, Pin-Pres/NoPres, PART",
    run,
    ..ExperimentSpec::LIVE
};

/// Schemes run on the Transfer-Only engine (memory made present by the scheme itself).
const NOCHECK: [&str; 5] = [
    "transfer-only",
    "touch-pres",
    "touch-nopres",
    "pin-pres",
    "pin-nopres",
];

/// One transfer of `scheme`: (cpu_us, transfer_us). `dst` is the present destination.
pub(crate) fn one(
    pair: &Pair,
    scheme: &str,
    src: &[u8],
    dst: &Mapping,
    key: u32,
) -> Result<(f64, f64), ExperimentError> {
    let t = std::time::Instant::now;
    let us = |t0: std::time::Instant| t0.elapsed().as_secs_f64() * 1e6;
    let len = src.len();
    match scheme {
        "transfer-only" | "part" => Ok((0.0, pair.write_us(src, dst.addr(), key)?)),
        "touch-pres" => {
            let t0 = t();
            // SAFETY: `dst` is ours and no transfer is in flight.
            unsafe { touch_pages(dst.ptr(), len) };
            let cpu = us(t0);
            Ok((cpu, pair.write_us(src, dst.addr(), key)?))
        }
        "pin-pres" => {
            let t0 = t();
            mlock_range(dst.ptr(), len, true).map_err(fail)?;
            let mut cpu = us(t0);
            let x = pair.write_us(src, dst.addr(), key)?;
            let t0 = t();
            mlock_range(dst.ptr(), len, false).map_err(fail)?;
            cpu += us(t0);
            Ok((cpu, x))
        }
        "touch-nopres" | "pin-nopres" => {
            let fresh = Mapping::anon(len).map_err(fail)?;
            // SAFETY: `fresh` outlives the exposure (revoked below).
            let k = unsafe { pair.expose(fresh.ptr(), len) }?;
            let t0 = t();
            if scheme == "touch-nopres" {
                // SAFETY: our fresh mapping, not yet written by anyone.
                unsafe { touch_pages(fresh.ptr(), len) };
            } else {
                mlock_range(fresh.ptr(), len, true).map_err(fail)?;
            }
            let mut cpu = us(t0);
            let x = pair.write_us(src, fresh.addr(), k)?;
            if scheme == "pin-nopres" {
                let t0 = t();
                mlock_range(fresh.ptr(), len, false).map_err(fail)?;
                cpu += us(t0);
            }
            verify(&fresh, src, scheme)?;
            pair.revoke(k);
            Ok((cpu, x))
        }
        other => Err(fail(format!("unknown scheme {other}"))),
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let reps: usize = ctx.param("reps", 11)?;
    let default: Vec<u64> = (0..=8).map(|i| 64u64 << (2 * i)).collect();
    let sizes = sizes_param(ctx, &default)?;
    let total = (sizes.len() * (NOCHECK.len() + 1)) as u64;
    let mut done = 0;
    let mut rows: Vec<(String, u64, f64, f64, f64)> = Vec::new();
    for (mode, schemes) in [
        (MemoryMode::TransferOnly, &NOCHECK[..]),
        (MemoryMode::Part, &["part"][..]),
    ] {
        let pair = Pair::new(&ctx.profile, mode, PageInConfig::default())?;
        for &size in &sizes {
            let src = pattern(size, size as usize);
            let dst = present(size as usize)?;
            // SAFETY: `dst` outlives the exposure (revoked below) and is read between transfers only.
            let key = unsafe { pair.expose(dst.ptr(), dst.len()) }?;
            // Warm-up: the first transfer after start pays thread wake-ups.
            pair.write_us(&src, dst.addr(), key)?;
            for &scheme in schemes {
                let mut tot = Vec::new();
                let mut cpu = Vec::new();
                let mut xfer = Vec::new();
                for _ in 0..reps.max(1) {
                    let (c, x) = one(&pair, scheme, &src, &dst, key)?;
                    tot.push(c + x);
                    cpu.push(c);
                    xfer.push(x);
                }
                verify(&dst, &src, scheme)?;
                rows.push((
                    scheme.to_string(),
                    size,
                    median(tot),
                    median(cpu),
                    median(xfer),
                ));
                done += 1;
                (ctx.progress)(done, total);
            }
            pair.revoke(key);
        }
    }
    let mut table = Table::new(&[
        "scheme",
        "size_bytes",
        "latency_us",
        "cpu_us",
        "transfer_us",
    ]);
    for s in NOCHECK.iter().chain(["part"].iter()) {
        for r in rows.iter().filter(|r| r.0 == *s) {
            table.push(vec![
                r.0.clone().into(),
                r.1.into(),
                r.2.into(),
                r.3.into(),
                r.4.into(),
            ]);
        }
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Live latency without faults",
            "size_bytes",
            "latency_us",
            Some("scheme"),
        )
        .log(true, true)],
        sim_events: 0,
        meta: json!({
            "sizes_bytes": sizes,
            "reps": reps,
            "transport": "shm (two runtimes in one process)",
            "note": "Medians of reps. Touch/Pin rows: the CPU work at the destination (touch, or mlock before and munlock after) plus a transfer on the Transfer-Only engine (no residency check). 'part' is PART's engine with its pagemap residency check on present memory. NoPres rows use fresh memory per repetition.",
        }),
    })
}
