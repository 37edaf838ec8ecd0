//! `part-fault-frequency`: each destination page independently missing with probability f;
//! PIO and PIA; mean over seeds; latency and slowdown vs f = 0.

use serde_json::json;
use unpinned_core::os::PageInPolicy;
use unpinned_core::rng::derive_seed;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::Residence;

use super::harness::{one_write, par_map, WriteSetup, FAULT_SIZES};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-frequency",
    system: "part",
    description: "Destination pages missing with probability f (0..100%): PIO vs PIA, mean of seeds, slowdown",
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

const FAULT_PCT: [u32; 9] = [0, 1, 5, 10, 20, 40, 60, 80, 100];
const POLICIES: [PageInPolicy; 2] = [PageInPolicy::Pio, PageInPolicy::Pia];

crate::declare_params! {
    /// Parameters of `part-fault-frequency`.
    pub struct Params {
        seeds: u64 {
            default: "5",
            unit: "",
            check: crate::params::int(1, 10_000),
            doc: "Seeds per (policy, size, fault rate); the table shows their mean",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params { seeds } = ctx.params()?;
    let mut points = Vec::new();
    for (pi, _) in POLICIES.iter().enumerate() {
        for &size in &FAULT_SIZES {
            for &f in &FAULT_PCT {
                for s in 0..seeds {
                    points.push((pi, size, f, s));
                }
            }
        }
    }
    let results = par_map(&points, ctx.progress, |&(pi, size, f, s)| {
        let mut w = WriteSetup::new(
            size,
            derive_seed(ctx.seed, &format!("part-fault-frequency/{s}")),
        );
        w.policy = POLICIES[pi];
        w.dst = Residence::MissingWithProbability(f as f64 / 100.0);
        one_write(&ctx.profile, &w)
    });
    let results = super::collect(results)?;
    let mut table = Table::new(&[
        "policy",
        "size_bytes",
        "fault_pct",
        "latency_us",
        "slowdown",
        "seeds",
    ]);
    let events = results.iter().map(|r| r.events).sum();
    let mean = |pi: usize, size: u64, f: u32| {
        let v: Vec<f64> = points
            .iter()
            .zip(&results)
            .filter(|(p, _)| (p.0, p.1, p.2) == (pi, size, f))
            .map(|(_, r)| r.latency_us())
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    for (pi, policy) in POLICIES.iter().enumerate() {
        for &size in &FAULT_SIZES {
            let base = mean(pi, size, 0);
            for &f in &FAULT_PCT {
                let m = mean(pi, size, f);
                table.push(vec![
                    policy.name().into(),
                    size.into(),
                    f.into(),
                    m.into(),
                    (m / base).into(),
                    seeds.into(),
                ]);
            }
        }
    }
    let mut plots = vec![PlotSpec::line(
        "Slowdown vs fault frequency, 4 MiB",
        "fault_pct",
        "slowdown",
        Some("policy"),
    )
    .only("size_bytes", "4194304")];
    for (size, label) in [(4096u64, "4k"), (65536, "64k"), (1 << 20, "1m")] {
        plots.push(
            PlotSpec::line(
                &format!("Slowdown vs fault frequency, {label}B"),
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
            "Latency vs size at each fault frequency, PIA",
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
        sim_events: events,
        meta: json!({ "fault_pct": FAULT_PCT, "sizes_bytes": FAULT_SIZES, "seeds": seeds, "retransmission": "ERR or the profile's block timeout" }),
    })
}
