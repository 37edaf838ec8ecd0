//! Live `part-fault-all`: every destination page missing (fresh memory per transfer);
//! Transfer-Only (present memory), Touch-NoPres, Pin-NoPres, and PART with PIO, PI4, PIA.

use serde_json::json;
use unpinned_experiments::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::{MemoryMode, PageInPolicy};
use unpinned_os::mapping::Mapping;
use unpinned_report::{PlotSpec, Table};

use super::{fail, median, pattern, present, sizes_param, verify, Pair, FAULT_SIZES};

/// `part-fault-all`, live.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-all",
    system: "live",
    description: "Live: all destination pages missing: Transfer-Only, Touch-NoPres, Pin-NoPres vs PART PIO/PI4/PIA",
    run,
    ..ExperimentSpec::LIVE
};

/// Median latency and the counters of one PART transfer into fresh memory.
pub(crate) struct FaultPoint {
    pub latency_us: f64,
    pub fault_records: u64,
    pub errs: u64,
    pub resent_bytes: u64,
    pub retransmits_timeout: u64,
    pub retransmits_err: u64,
}

/// `reps` writes of `size` bytes into fresh memory on `pair`; median latency, counters of the
/// median repetition. `missing(page)` says which destination pages to leave missing.
pub(crate) fn fault_point(
    pair: &Pair,
    size: u64,
    reps: usize,
    missing: &dyn Fn(usize, usize) -> bool,
) -> Result<FaultPoint, ExperimentError> {
    let src = pattern(size ^ 0x5a, size as usize);
    let mut pts = Vec::new();
    for rep in 0..reps.max(1) {
        let dst = Mapping::anon(size as usize).map_err(fail)?;
        for p in 0..dst.len() / 4096 {
            if !missing(rep, p) {
                // SAFETY: our fresh mapping, not exposed yet.
                unsafe { crate::schemes::touch_pages(dst.ptr().add(p * 4096), 1) };
            }
        }
        // SAFETY: `dst` outlives the exposure (revoked below) and is read only after the write.
        let key = unsafe { pair.expose(dst.ptr(), dst.len()) }?;
        let (s0, t0) = pair.stats()?;
        let lat = pair.write_us(&src, dst.addr(), key)?;
        let (s1, t1) = pair.stats()?;
        verify(&dst, &src, "fault transfer")?;
        pair.revoke(key);
        pts.push(FaultPoint {
            latency_us: lat,
            fault_records: t1.handler.records - t0.handler.records,
            errs: t1.handler.errs - t0.handler.errs,
            resent_bytes: s1.engine.data_bytes_resent - s0.engine.data_bytes_resent,
            retransmits_timeout: s1.engine.retransmits_timeout - s0.engine.retransmits_timeout,
            retransmits_err: s1.engine.retransmits_err - s0.engine.retransmits_err,
        });
    }
    let m = median(pts.iter().map(|p| p.latency_us).collect());
    let i = pts.iter().position(|p| p.latency_us == m).unwrap_or(0);
    Ok(pts.swap_remove(i))
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let reps: usize = ctx.param("reps", 7)?;
    let sizes = sizes_param(ctx, &FAULT_SIZES)?;
    let total = (sizes.len() * 6) as u64;
    let mut done = 0;
    let mut table = Table::new(&[
        "scheme",
        "size_bytes",
        "latency_us",
        "fault_interrupts",
        "errs",
        "retransmitted_bytes",
    ]);
    {
        let pair = Pair::new(
            &ctx.profile,
            MemoryMode::TransferOnly,
            PageInConfig::default(),
        )?;
        for scheme in ["transfer-only", "touch-nopres", "pin-nopres"] {
            for &size in &sizes {
                let src = pattern(size, size as usize);
                let dst = present(size as usize)?;
                // SAFETY: `dst` outlives the exposure (revoked below).
                let key = unsafe { pair.expose(dst.ptr(), dst.len()) }?;
                pair.write_us(&src, dst.addr(), key)?;
                let mut v = Vec::new();
                for _ in 0..reps.max(1) {
                    let (c, x) = super::latency::one(&pair, scheme, &src, &dst, key)?;
                    v.push(c + x);
                }
                pair.revoke(key);
                table.push(vec![
                    scheme.into(),
                    size.into(),
                    median(v).into(),
                    0u64.into(),
                    0u64.into(),
                    0u64.into(),
                ]);
                done += 1;
                (ctx.progress)(done, total);
            }
        }
    }
    for policy in [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia] {
        let pair = Pair::new(
            &ctx.profile,
            MemoryMode::Part,
            PageInConfig {
                policy,
                send_err: true,
            },
        )?;
        for &size in &sizes {
            let p = fault_point(&pair, size, reps, &|_, _| true)?;
            table.push(vec![
                policy.name().into(),
                size.into(),
                p.latency_us.into(),
                p.fault_records.into(),
                p.errs.into(),
                p.resent_bytes.into(),
            ]);
            done += 1;
            (ctx.progress)(done, total);
        }
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Live: every destination page missing",
            "size_bytes",
            "latency_us",
            Some("scheme"),
        )
        .log(true, true)],
        sim_events: 0,
        meta: json!({
            "sizes_bytes": sizes,
            "reps": reps,
            "block_timeout_us": ctx.profile.engine.block_timeout_us,
            "transport": "shm (two runtimes in one process)",
            "note": "Medians of reps, fresh destination memory per PART transfer. fault_interrupts = fault records handed to the page-in thread (one per faulting block attempt: the live counterpart of the IOMMU fault interrupt); errs = ERRs requested; retransmitted_bytes = data bytes the source resent. Touch/Pin rows: CPU work at the destination plus a transfer on the Transfer-Only engine; their counters are 0.",
        }),
    })
}
