//! `live-vs-sim`: how well the simulator, given this machine's calibrated component costs
//! (`unpinned calibrate`, [`crate::calibrate::to_profile`]), predicts the live runtime.
//! `part-latency` and `part-fault-all`, each written once over a testbed, run on the live
//! runtime and on the simulator (the calibrated profile with the live engine parameters):
//! the same grid gives two tables of one schema, joined row by row on (scheme, size).

use serde_json::json;
use unpinned_core::profile::Profile;
use unpinned_experiments::part::sim_testbed::SimTestbed;
use unpinned_experiments::part::{fault_all, latency};
use unpinned_experiments::testbed::Testbed;
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_report::{PlotSpec, Table};

use super::fail;
use super::testbed::LiveTestbed;

/// `live-vs-sim`.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "live-vs-sim",
    system: "live",
    description:
        "Live vs the simulator with this machine's calibrated profile: part-latency, part-fault-all",
    params: Some(<Params as Declared>::PARAMS),
    run,
    ..ExperimentSpec::LIVE
};

/// An experiment written once over a testbed.
type OnTestbed = fn(&RunContext, &mut dyn Testbed) -> Result<ExperimentOutput, ExperimentError>;

/// Experiments compared.
const COMPARED: [(&str, OnTestbed); 2] = [
    ("part-latency", latency::run),
    ("part-fault-all", fault_all::run),
];

unpinned_experiments::declare_params! {
    /// Parameters of `live-vs-sim`.
    pub struct Params {
        calibration: String {
            default: "",
            unit: "",
            check: unpinned_experiments::params::Check::Any,
            doc: "Calibrated profile file from `unpinned calibrate` (empty: calibrate at the start of the run)",
        },
        sizes: String {
            default: "",
            unit: "bytes",
            check: unpinned_experiments::params::Check::Any,
            doc: "Write sizes, comma-separated, for both compared experiments (empty: each one's default)",
        },
        reps: usize {
            default: "0",
            unit: "",
            check: unpinned_experiments::params::int(0, 10_000),
            doc: "Repetitions per point of the live runs, median (0: each compared experiment's default)",
        },
    }
}

/// The calibrated profile: `exp.calibration=FILE` (from `unpinned calibrate`), else measured
/// now. The engine section is the live one (block and packet size, timeouts).
pub fn calibrated(ctx: &RunContext) -> Result<(Profile, String), ExperimentError> {
    let Params { calibration, .. } = ctx.params()?;
    let mut p = match calibration.as_str() {
        "" => {
            let c = crate::calibrate::run(|_| {}).map_err(fail)?;
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "this-host".into());
            (
                crate::calibrate::to_profile(&c, &host),
                "measured at the start of this run".to_string(),
            )
        }
        path => (
            Profile::load(path).map_err(fail)?,
            format!("loaded from {path}"),
        ),
    };
    p.0.engine = ctx.profile.engine.clone();
    Ok(p)
}

/// Join two tables of one schema, row by row: (scheme, size, live us, simulated us).
fn join(
    name: &str,
    live: &Table,
    sim: &Table,
) -> Result<Vec<(String, u64, f64, f64)>, ExperimentError> {
    if live.columns != sim.columns || live.rows.len() != sim.rows.len() {
        return Err(fail(format!(
            "{name}: the live and simulated tables differ in schema or rows ({:?} x {} vs {:?} x {})",
            live.columns,
            live.rows.len(),
            sim.columns,
            sim.rows.len()
        )));
    }
    let (Some(s), Some(z), Some(l)) = (
        live.col("scheme"),
        live.col("size_bytes"),
        live.col("latency_us"),
    ) else {
        return Err(fail(format!(
            "{name}: no scheme, size_bytes or latency_us column"
        )));
    };
    let mut out = Vec::new();
    for (a, b) in live.rows.iter().zip(&sim.rows) {
        let key = (a[s].to_text(), a[z].to_text());
        if key != (b[s].to_text(), b[z].to_text()) {
            return Err(fail(format!("{name}: row {key:?} has no simulated twin")));
        }
        if let (Some(size), Some(lv), Some(sv)) = (a[z].as_f64(), a[l].as_f64(), b[l].as_f64()) {
            out.push((key.0, size as u64, lv, sv));
        }
    }
    Ok(out)
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let (profile, origin) = calibrated(ctx)?;
    let mut table = Table::new(&[
        "experiment",
        "scheme",
        "size_bytes",
        "live_us",
        "sim_us",
        "ratio",
    ]);
    let mut events = 0;
    // The compared experiments' own parameters (exp.sizes, exp.reps) go to both backends;
    // each one checks them.
    let Params { sizes, reps, .. } = ctx.params()?;
    let mut params = std::collections::BTreeMap::new();
    if !sizes.is_empty() {
        params.insert("sizes".to_string(), sizes);
    }
    if reps > 0 {
        params.insert("reps".to_string(), reps.to_string());
    }
    let quiet = |_: u64, _: u64| {};
    for (i, (name, run)) in COMPARED.iter().enumerate() {
        let on = |profile: &Profile| RunContext {
            profile: profile.clone(),
            kind_profile: None,
            seed: ctx.seed,
            params: params.clone(),
            progress: &quiet,
        };
        let live = run(&on(&ctx.profile), &mut LiveTestbed::new(&ctx.profile))?;
        let sim = run(&on(&profile), &mut SimTestbed::new(&profile))?;
        events += sim.sim_events;
        for (scheme, size, live_us, sim_us) in join(name, &live.table, &sim.table)? {
            table.push(vec![
                (*name).into(),
                scheme.into(),
                size.into(),
                live_us.into(),
                sim_us.into(),
                (live_us / sim_us).into(),
            ]);
        }
        (ctx.progress)(i as u64 + 1, COMPARED.len() as u64);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Live / simulated latency, part-latency",
                "size_bytes",
                "ratio",
                Some("scheme"),
            )
            .log(true, true)
            .only("experiment", "part-latency"),
            PlotSpec::line(
                "Live / simulated latency, part-fault-all",
                "size_bytes",
                "ratio",
                Some("scheme"),
            )
            .log(true, true)
            .only("experiment", "part-fault-all")
            .suffix("fault-all"),
        ],
        sim_events: events,
        meta: json!({
            "calibrated_profile": profile.name,
            "calibration": origin,
            "profile_used_by_the_simulator": serde_json::to_value(&profile).unwrap_or_default(),
            "ratio": "live_us / sim_us (1 = exact prediction)",
            "note": "The calibrated profile maps the live runtime's components onto the simulator's (see unpinned_livebench::calibrate::to_profile); it has no per-packet cost of the engine thread, so large transfers are predicted faster than they run.",
        }),
    })
}
