//! `aa-notify` (live): what it costs to tell a handler thread that an access was logged
//! (spec "Notifying the CPU": polling vs an interrupt). Rank 0 writes one active put at a
//! time to rank 1 (the next only after the previous completed, so the handler is idle each
//! time); rank 1's handler either polls the log, sleeps on a futex the engine thread wakes
//! at every publication, or batches (woken at 16 waiting entries or every 100 us: a lone put
//! waits for the period).
//!
//! Per scheme: the notification delay (from the engine thread publishing the entry to the
//! handler taking it; quantiles over the puts), the sender's put latency, and the handler
//! thread's CPU time as a share of its wall time (polling burns a core, sleeping does not).
//!
//! Then, per scheme, `flushes` rounds of one active put followed by an active flush, each
//! kind in turn: the IOMMU-held flush (a get on the flushing page, held until the log is
//! drained) and the reply-based flush (the target's engine writes the processed count back);
//! their median latencies are the `*_flush_median_us` columns.

use std::time::Instant;

use serde_json::json;
use unpinned_aa_live::{ActiveAccess, Notify, PageBits};
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_os::mapping::Mapping;
use unpinned_report::{PlotSpec, Table};

use super::{fail, median, Pair};

/// `aa-notify` (live).
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-notify",
    system: "live",
    description:
        "Live: handler notification delay and CPU cost, polling vs sleeping (futex) handler",
    params: Some(<Params as Declared>::PARAMS),
    run,
    ..ExperimentSpec::LIVE
};

unpinned_experiments::declare_params! {
    /// Parameters of `aa-notify`.
    pub struct Params {
        puts: u32 {
            default: "2000",
            unit: "",
            check: unpinned_experiments::params::int(1, 1 << 24),
            doc: "Active puts per handler",
        },
        flushes: u32 {
            default: "500",
            unit: "",
            check: unpinned_experiments::params::int(1, 1 << 24),
            doc: "Rounds of one active put then an active flush, per handler",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params { puts, flushes } = ctx.params()?;
    let mut table = Table::new(&[
        "driver",
        "notify",
        "puts",
        "quantile",
        "notify_us",
        "put_latency_median_us",
        "handler_cpu_pct",
        "iommu_flush_median_us",
        "reply_flush_median_us",
    ]);
    let mut meta_rows = Vec::new();
    for notify in [
        Notify::Poll,
        Notify::Sleep,
        Notify::Batch {
            entries: 16,
            period_us: 100,
        },
    ] {
        let pair = Pair::part(&ctx.profile)?;
        let mem = Mapping::anon(2 * 4096).map_err(fail)?;
        // SAFETY: the mapping outlives the pair's use (dropped after the pair below); active
        // puts never write it.
        let key = unsafe { pair.expose(mem.ptr(), mem.len()) }?;
        let aa = pair.rts[1].active();
        let iuid = aa.create_log(1, 1 << 16).map_err(fail)?;
        aa.assoc_pages(mem.addr(), 4096, PageBits::active_put(iuid))
            .map_err(fail)?;
        aa.assoc_pages(mem.addr() + 4096, 4096, ActiveAccess::flush_page_bits(iuid))
            .map_err(fail)?;
        let (words, wkey) = pair.rts[0].reply_words().map_err(fail)?;
        pair.rts[1].reply_connect(0, words, wkey).map_err(fail)?;
        let h = aa.spawn_handler(1, notify, |_| {}).map_err(fail)?;
        let mut lat = Vec::with_capacity(puts as usize);
        for i in 0..puts as u64 {
            // Active puts through `write_active`, so that the reply flush below counts them.
            let v = i.to_le_bytes();
            let t = Instant::now();
            // SAFETY: `v` is borrowed until the completion we wait for.
            let id = unsafe {
                pair.rts[0].write_active(1, v.as_ptr(), mem.addr() + 8 * (i % 512), key, 8)
            }
            .map_err(fail)?;
            loop {
                match pair.rts[0].wait(id) {
                    // `v` is still lent to the engine: keep waiting.
                    Err(unpinned_live::LiveError::Timeout(_)) => continue,
                    r => break r.map(|_| ()).map_err(fail)?,
                }
            }
            lat.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let (src, flush_page) = (&pair.rts[0], mem.addr() + 4096);
        let (mut held, mut reply) = (Vec::new(), Vec::new());
        for i in 0..flushes as u64 {
            let v = i.to_le_bytes();
            for (out, by_reply) in [(&mut held, false), (&mut reply, true)] {
                // SAFETY: `v` lives until the flush below, which completes the write first.
                unsafe { src.write_active(1, v.as_ptr(), mem.addr(), key, 8) }.map_err(fail)?;
                let t = Instant::now();
                if by_reply {
                    src.reply_flush(1).map_err(fail)?;
                } else {
                    src.active_flush(1, flush_page, key).map_err(fail)?;
                }
                out.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        let (held_med, reply_med) = (median(held), median(reply));
        let rep = h
            .stop()
            .ok_or_else(|| fail("the handler thread panicked"))?;
        if rep.entries != puts as u64 + 2 * flushes as u64 {
            return Err(fail(format!(
                "handler processed {} of {} puts",
                rep.entries,
                puts as u64 + 2 * flushes as u64
            )));
        }
        let cpu_pct = rep.cpu_ns as f64 / rep.wall_ns.max(1) as f64 * 100.0;
        let lat_med = median(lat);
        for (q, name) in [(0.1, "p10"), (0.5, "median"), (0.9, "p90"), (0.99, "p99")] {
            let v = rep
                .notify_quantile_ns(q)
                .map_or(f64::NAN, |ns| ns as f64 / 1e3);
            table.push(vec![
                "live".into(),
                notify.name().into(),
                puts.into(),
                name.into(),
                v.into(),
                lat_med.into(),
                cpu_pct.into(),
                held_med.into(),
                reply_med.into(),
            ]);
        }
        meta_rows.push(json!({ "notify": notify.name(), "wakeups": rep.notify_ns.len(), "sleeps": rep.sleeps }));
        drop(pair);
        drop(mem);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Live: handler notification delay (publication -> handler)",
            "quantile",
            "notify_us",
            Some("notify"),
        )
        .bars()],
        sim_events: 0,
        meta: json!({ "puts": puts, "flushes": flushes, "transport": "shm (two runtimes in one process)", "handlers": meta_rows }),
    })
}
