//! `live-vs-sim`: how well the simulator, given this machine's calibrated component costs
//! (`unpinned calibrate`, [`crate::calibrate::to_profile`]), predicts the live runtime.
//! `part-latency` and `part-fault-all` run live and in the simulator with the calibrated
//! profile and the live engine parameters; rows are joined on (scheme, size).

use serde_json::json;
use unpinned_core::profile::Profile;
use unpinned_experiments::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};
use unpinned_report::{PlotSpec, Table};

use super::fail;

/// `live-vs-sim`.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "live-vs-sim",
    system: "live",
    description:
        "Live vs the simulator with this machine's calibrated profile: part-latency, part-fault-all",
    run,
    ..ExperimentSpec::LIVE
};

/// Experiments compared.
const COMPARED: [&str; 2] = ["part-latency", "part-fault-all"];

/// The calibrated profile: `exp.calibration=FILE` (from `unpinned calibrate`), else measured
/// now. The engine section is the live one (block and packet size, timeouts).
pub fn calibrated(ctx: &RunContext) -> Result<(Profile, String), ExperimentError> {
    let mut p = match ctx.params.get("calibration") {
        Some(path) => (
            Profile::load(path).map_err(fail)?,
            format!("loaded from {path}"),
        ),
        None => {
            let c = crate::calibrate::run(|_| {}).map_err(fail)?;
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "this-host".into());
            (
                crate::calibrate::to_profile(&c, &host),
                "measured at the start of this run".to_string(),
            )
        }
    };
    p.0.engine = ctx.profile.engine.clone();
    Ok(p)
}

fn rows(t: &Table) -> Vec<(String, u64, f64)> {
    let (s, z, l) = (t.col("scheme"), t.col("size_bytes"), t.col("latency_us"));
    let (Some(s), Some(z), Some(l)) = (s, z, l) else {
        return Vec::new();
    };
    t.rows
        .iter()
        .filter_map(|r| Some((r[s].to_text(), r[z].as_f64()? as u64, r[l].as_f64()?)))
        .collect()
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
    for (i, name) in COMPARED.iter().enumerate() {
        let live_spec =
            super::find(name).ok_or_else(|| fail(format!("{name} is not a live experiment")))?;
        let sim_spec = unpinned_experiments::find(name)
            .ok_or_else(|| fail(format!("{name} is not a simulator experiment")))?;
        let live = (live_spec.run)(ctx)?;
        let quiet = |_: u64, _: u64| {};
        let sim_ctx = RunContext {
            profile: profile.clone(),
            kind_profile: None,
            seed: ctx.seed,
            params: Default::default(),
            progress: &quiet,
        };
        let sim = (sim_spec.run)(&sim_ctx)?;
        events += sim.sim_events;
        let sim_rows = rows(&sim.table);
        for (scheme, size, live_us) in rows(&live.table) {
            if let Some((_, _, sim_us)) = sim_rows.iter().find(|r| r.0 == scheme && r.1 == size) {
                table.push(vec![
                    (*name).into(),
                    scheme.into(),
                    size.into(),
                    live_us.into(),
                    (*sim_us).into(),
                    (live_us / sim_us).into(),
                ]);
            }
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
