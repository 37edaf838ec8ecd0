//! Live `part-fault-small`: small writes whose destination page is missing; retransmission by
//! ERR (no block timeout) vs by a 100 us or 1 ms block timeout alone (no ERR).

use serde_json::json;
use unpinned_experiments::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::{MemoryMode, PageInPolicy};
use unpinned_report::{PlotSpec, Table};

use super::fault_all::fault_point;
use super::{fail, sizes_param, Pair};

/// `part-fault-small`, live.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-small",
    system: "live",
    description:
        "Live: small writes with a destination fault: retransmission by ERR vs TO=100us vs TO=1ms",
    run,
    ..ExperimentSpec::LIVE
};

/// (name, send ERR, block timeout us; 0 = none).
const MODES: [(&str, bool, f64); 3] = [
    ("err", true, 0.0),
    ("to100us", false, 100.0),
    ("to1ms", false, 1000.0),
];

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let reps: usize = ctx.param("reps", 9)?;
    let sizes = sizes_param(ctx, &[64, 256, 1 << 10, 4 << 10, 16 << 10])?;
    let mut table = Table::new(&["size_bytes", "retransmit", "latency_us", "retransmissions"]);
    let mut rows = Vec::new();
    let mut done = 0;
    for (name, err, to) in MODES {
        let mut p = ctx.profile.clone();
        p.engine.block_timeout_us = to;
        // Timeouts that fire before the page is in are normal here: do not call the peer dead.
        p = p.with_override("engine.max_timeouts=1000").map_err(fail)?;
        let pair = Pair::new(
            &p,
            MemoryMode::Part,
            PageInConfig {
                policy: PageInPolicy::Pia,
                send_err: err,
            },
        )?;
        for &size in &sizes {
            let r = fault_point(&pair, size, reps, &|_, _| true)?;
            rows.push((
                size,
                name,
                r.latency_us,
                r.retransmits_err + r.retransmits_timeout,
            ));
            done += 1;
            (ctx.progress)(done, (MODES.len() * sizes.len()) as u64);
        }
    }
    rows.sort_by_key(|r| r.0);
    for (size, name, lat, n) in rows {
        table.push(vec![size.into(), name.into(), lat.into(), n.into()]);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Live: small writes with a destination fault",
            "size_bytes",
            "latency_us",
            Some("retransmit"),
        )
        .bars()],
        sim_events: 0,
        meta: json!({ "sizes_bytes": sizes, "reps": reps, "policy": "pia", "modes": "err = ERR, no timeout (NTO); toX = no ERR, block timeout X", "transport": "shm (two runtimes in one process)" }),
    })
}
