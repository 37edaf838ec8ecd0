//! Live `part-fault-frequency`: each destination page independently missing with probability
//! f; PIO and PIA; mean over seeds; latency and slowdown vs f = 0.

use serde_json::json;
use unpinned_experiments::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::{MemoryMode, PageInPolicy};
use unpinned_report::{PlotSpec, Table};

use super::fault_all::fault_point;
use super::{sizes_param, Pair, FAULT_SIZES};

/// `part-fault-frequency`, live.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-frequency",
    system: "live",
    description: "Live: destination pages missing with probability f (0..100%): PIO vs PIA, mean of seeds, slowdown",
    run,
    ..ExperimentSpec::LIVE
};

const FAULT_PCT: [u32; 9] = [0, 1, 5, 10, 20, 40, 60, 80, 100];

fn missing(seed: u64, page: usize, pct: u32) -> bool {
    let x = unpinned_core::rng::splitmix64(seed ^ (page as u64).wrapping_mul(0x9e37_79b9));
    (x % 10_000) < pct as u64 * 100
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let seeds: u64 = ctx.param("seeds", 5)?;
    let sizes = sizes_param(ctx, &FAULT_SIZES)?;
    let mut table = Table::new(&[
        "policy",
        "size_bytes",
        "fault_pct",
        "latency_us",
        "slowdown",
        "seeds",
    ]);
    let total = (2 * sizes.len() * FAULT_PCT.len()) as u64;
    let mut done = 0;
    for policy in [PageInPolicy::Pio, PageInPolicy::Pia] {
        let pair = Pair::new(
            &ctx.profile,
            MemoryMode::Part,
            PageInConfig {
                policy,
                send_err: true,
            },
        )?;
        for &size in &sizes {
            let mut base = f64::NAN;
            for &f in &FAULT_PCT {
                let mut sum = 0.0;
                for s in 0..seeds.max(1) {
                    let seed = ctx.seed ^ (s << 32) ^ size;
                    let p = fault_point(&pair, size, 1, &|_, page| missing(seed, page, f))?;
                    sum += p.latency_us;
                }
                let m = sum / seeds.max(1) as f64;
                if f == 0 {
                    base = m;
                }
                table.push(vec![
                    policy.name().into(),
                    size.into(),
                    f.into(),
                    m.into(),
                    (m / base).into(),
                    seeds.into(),
                ]);
                done += 1;
                (ctx.progress)(done, total);
            }
        }
    }
    let mut plots = vec![PlotSpec::line(
        "Live: slowdown vs fault frequency, 4 MiB",
        "fault_pct",
        "slowdown",
        Some("policy"),
    )
    .only("size_bytes", "4194304")];
    for (size, label) in [(4096u64, "4k"), (65536, "64k"), (1 << 20, "1m")] {
        plots.push(
            PlotSpec::line(
                &format!("Live: slowdown vs fault frequency, {label}B"),
                "fault_pct",
                "slowdown",
                Some("policy"),
            )
            .only("size_bytes", &size.to_string())
            .suffix(label),
        );
    }
    plots.push(
        PlotSpec::line(
            "Live: latency vs size at each fault frequency, PIA",
            "size_bytes",
            "latency_us",
            Some("fault_pct"),
        )
        .log(true, true)
        .only("policy", "pia")
        .suffix("pia-latency"),
    );
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: 0,
        meta: json!({ "fault_pct": FAULT_PCT, "sizes_bytes": sizes, "seeds": seeds, "retransmission": "ERR or the live block timeout", "transport": "shm (two runtimes in one process)" }),
    })
}
