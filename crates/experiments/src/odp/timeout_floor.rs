//! `odp-timeout-floor` (odp.md): `T_o` vs `C_ACK` (0..20) for each vendor floor, by forcing
//! loss (the QP's destination QP does not exist) with retry count 7; `T_o` = time to
//! RETRY_EXC_ERR / 8.

use serde_json::json;
use unpinned_ib::ack_timer::t_tr;
use unpinned_ib::VendorProfile;
use unpinned_sim::rc::bench::measure_t_o;

use crate::{Cell, ExperimentError, ExperimentOutput, ExperimentSpec, PlotSpec, RunContext, Table};

pub(crate) static SPEC: ExperimentSpec = ExperimentSpec {
    name: "odp-timeout-floor",
    system: "odp",
    description: "ACK timeout T_o vs C_ACK on ConnectX-3/4/5/6 (vendor floors), by forced loss",
    profile: crate::ProfileKind::Ib,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: true,
    run,
};

crate::declare_params! {
    /// Parameters of `odp-timeout-floor`.
    pub struct Params {
        trials: u64 {
            default: "1",
            unit: "",
            check: crate::params::int(1, 1_000_000),
            doc: "Seeded repetitions of every (profile, C_ACK)",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params { trials } = ctx.params()?;
    // Every vendor floor by default; only the given profile with --profile or --set.
    let profiles = match ctx.kind_profile {
        None => VendorProfile::all_builtin(),
        Some(_) => vec![ctx.vendor_profile()?],
    };
    let mut t = Table::new(&["profile", "c_ack", "t_tr_ms", "t_o_ms"]);
    let total = profiles.len() as u64 * 21 * trials;
    let (mut done, mut events) = (0, 0);
    for p in &profiles {
        for c in 0..=20u8 {
            for trial in 0..trials {
                let (t_o, ev) = measure_t_o(
                    p,
                    c,
                    super::seed(ctx, &format!("floor/{}/{c}/{trial}", p.name)),
                );
                events += ev;
                let t_tr_ms = t_tr(c).map_or(0.0, |d| d.as_ns() as f64 / 1e6);
                t.push(vec![
                    Cell::from(p.name.as_str()),
                    Cell::from(u64::from(c)),
                    Cell::from(t_tr_ms),
                    Cell::from(t_o.as_ns() as f64 / 1e6),
                ]);
                done += 1;
                (ctx.progress)(done, total);
            }
        }
    }
    Ok(ExperimentOutput {
        table: t,
        plots: vec![
            PlotSpec::line(
                "T_o vs C_ACK (forced loss, retry count 7)",
                "c_ack",
                "t_o_ms",
                Some("profile"),
            )
            .log(false, true),
            PlotSpec::line("Nominal T_tr vs C_ACK", "c_ack", "t_tr_ms", None)
                .log(false, true)
                .only("profile", "connectx4")
                .suffix("t_tr"),
        ],
        sim_events: events,
        meta: json!({
            "trials": trials,
            "t_tr_ms": "4.096 us * 2^c_ack of the configured C_ACK (0 = disabled); the NIC uses max(c_ack, floor)",
            "mechanism": "per-QP mark-and-sweep ACK-timer scan with period T_tr and seeded phase: first T_o in (T_tr, 2 T_tr], later ones 2 T_tr",
        }),
    })
}
