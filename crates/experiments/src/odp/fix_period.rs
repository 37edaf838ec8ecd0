//! `odp-fix-period` (issue 17, section 3): the software-timer fix of odp.md ("The proposed
//! fix") evaluated against its one free parameter, the timer period, measured in units of the
//! fault-resolution time the QP waits out.
//!
//! `odp-fix` found that a period shorter than the fault-resolution time can make things worse.
//! This experiment sweeps the period from 0.1x to 10x (`exp.ratios`) of the local fault time
//! (local ODP) and of the remote one (remote ODP), for 2, 3 and 4 READs, several post
//! intervals and seeded trials, with the fix off as a baseline (`period_ratio` 0), and
//! optionally other fault times (`exp.fault_scales` multiplies the profile's local and remote
//! fault-resolution times) and RNR delays.
//!
//! A run is **stalled** when the client's hardware ACK timer expired before the last
//! application completion: the execution time includes a hardware timeout. An expiry after the
//! last completion (the timer fired on a dummy left over once the READs were done) does not
//! delay the application; it is counted in `late_timeouts`, not as a stall.
//!
//! Columns: `odp`, `rnr_delay_ms`, `fault_us` (the fault-resolution time the ratio refers to:
//! local for local ODP, remote for remote ODP, their sum for both), `fault_max_us` (its
//! longest value: `fault_us` plus the profile's jitter per fault), `period_ratio` (period /
//! `fault_us`; 0: fix off), `fix_period_us`, `num_ops`, `interval_us`, `trial`,
//! `exec_time_us`, `stalled` (0/1), `stall_timeouts`, `late_timeouts`, `dummies`.

use serde_json::json;
use unpinned_core::time::Duration;
use unpinned_ib::{FixConfig, VendorProfile};
use unpinned_sim::rc::bench::{run_reads, OdpSide, ReadBench};

use crate::part::harness::par_map;
use crate::{Cell, ExperimentError, ExperimentOutput, ExperimentSpec, PlotSpec, RunContext, Table};

pub(crate) static SPEC: ExperimentSpec = ExperimentSpec {
    name: "odp-fix-period",
    system: "odp",
    description: "The software-timer fix: stall probability and execution time vs its period, \
                  in units of the local / remote fault-resolution time",
    profile: crate::ProfileKind::Ib,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

crate::declare_params! {
    /// Parameters of `odp-fix-period`.
    pub struct Params {
        ratios: Vec<f64> {
            default: "0.1,0.2,0.5,0.8,1,1.1,1.2,1.5,2,3,5,10",
            unit: "",
            check: crate::params::positive(1000.0),
            doc: "Fix periods as multiples of the fault-resolution time (the fix-off baseline \
                  is always added, period_ratio 0)",
        },
        sides: Vec<String> {
            default: "local,remote",
            unit: "",
            check: crate::params::one_of(&["remote", "local", "both"]),
            doc: "ODP placements; the period refers to the remote, local or (both) summed \
                  fault-resolution time",
        },
        fault_scales: Vec<f64> {
            default: "0.25,1,4",
            unit: "",
            check: crate::params::positive(100.0),
            doc: "Multiples of the profile's local and remote fault-resolution times to run",
        },
        rnr_delays_us: Vec<u64> {
            default: "10,1280",
            unit: "us",
            check: crate::params::int(1, 1_000_000),
            doc: "Minimal RNR NAK delays (remote and both only; local ODP uses the first)",
        },
        num_ops: Vec<u32> {
            default: "2,3,4",
            unit: "",
            check: crate::params::int(2, 64),
            doc: "READs per run",
        },
        intervals_us: Vec<u64> {
            default: "0,100,300,500,1000,2000,4000",
            unit: "us",
            check: crate::params::int(0, 1_000_000),
            doc: "Post intervals between the READs",
        },
        trials: u64 {
            default: "3",
            unit: "",
            check: crate::params::int(1, 1_000_000),
            doc: "Seeded repetitions of every point",
        },
        threshold_factor: f64 {
            default: "1.0",
            unit: "",
            check: crate::params::positive(1e6),
            doc: "Stall threshold of the fix = period x this factor",
        },
    }
}

/// The CSV columns, in order.
pub(crate) const COLUMNS: [&str; 14] = [
    "odp",
    "rnr_delay_ms",
    "fault_us",
    "fault_max_us",
    "period_ratio",
    "fix_period_us",
    "num_ops",
    "interval_us",
    "trial",
    "exec_time_us",
    "stalled",
    "stall_timeouts",
    "late_timeouts",
    "dummies",
];

/// One point of the grid.
struct Point {
    odp: OdpSide,
    rnr_us: u64,
    fault_us: f64,
    fault_max_us: f64,
    scale: f64,
    ratio: f64,
    num_ops: u32,
    interval_us: u64,
    trial: u64,
}

fn side(name: &str) -> OdpSide {
    match name {
        "remote" => OdpSide::Remote,
        "local" => OdpSide::Local,
        _ => OdpSide::Both,
    }
}

/// The fault-resolution time a period is measured against, for ODP placement `odp`.
fn reference_fault_us(profile: &VendorProfile, odp: OdpSide) -> f64 {
    match odp {
        OdpSide::Remote => profile.odp.remote_fault_us,
        OdpSide::Local => profile.odp.local_fault_us,
        _ => profile.odp.remote_fault_us + profile.odp.local_fault_us,
    }
}

/// The longest value of [`reference_fault_us`]: every fault adds up to the profile's jitter.
fn reference_fault_max_us(profile: &VendorProfile, odp: OdpSide) -> f64 {
    let faults = if odp == OdpSide::Both { 2.0 } else { 1.0 };
    reference_fault_us(profile, odp) + faults * profile.odp.fault_jitter_us
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let p: Params = ctx.params()?;
    let base = ctx.vendor_profile()?;
    let mut points = Vec::new();
    let mut sides: Vec<OdpSide> = Vec::new();
    for s in &p.sides {
        let o = side(s);
        if !sides.contains(&o) {
            sides.push(o);
        }
    }
    // The fix-off baseline first, then the requested ratios in the order given.
    let mut ratios = vec![0.0];
    ratios.extend(p.ratios.iter().copied().filter(|r| *r > 0.0));
    for &scale in &p.fault_scales {
        let mut prof = base.clone();
        prof.odp.local_fault_us *= scale;
        prof.odp.remote_fault_us *= scale;
        for &odp in &sides {
            let rnrs: &[u64] = if odp == OdpSide::Local {
                &p.rnr_delays_us[..1]
            } else {
                &p.rnr_delays_us
            };
            for &rnr_us in rnrs {
                for &ratio in &ratios {
                    for &num_ops in &p.num_ops {
                        for &interval_us in &p.intervals_us {
                            for trial in 0..p.trials {
                                points.push(Point {
                                    odp,
                                    rnr_us,
                                    fault_us: reference_fault_us(&prof, odp),
                                    fault_max_us: reference_fault_max_us(&prof, odp),
                                    scale,
                                    ratio,
                                    num_ops,
                                    interval_us,
                                    trial,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    let results = par_map(&points, ctx.progress, |pt| {
        let mut prof = base.clone();
        prof.odp.local_fault_us *= pt.scale;
        prof.odp.remote_fault_us *= pt.scale;
        // The seed does not depend on the period: every period of a (placement, RNR delay,
        // fault time, READs, interval, trial) sees the same fault jitter draws.
        let label = format!(
            "fix-period/{}/{}/{}/{}/{}/{}",
            pt.odp.name(),
            pt.rnr_us,
            pt.scale,
            pt.num_ops,
            pt.interval_us,
            pt.trial
        );
        let mut b = ReadBench::new(
            prof,
            pt.odp,
            pt.num_ops,
            super::us(pt.interval_us),
            super::seed(ctx, &label),
        );
        b.min_rnr_delay = super::us(pt.rnr_us);
        let period_ns = (pt.ratio * pt.fault_us * 1e3).round() as u64;
        b.fix = (pt.ratio > 0.0).then(|| FixConfig {
            period: Duration(period_ns.max(1)),
            threshold: Duration(((period_ns as f64 * p.threshold_factor) as u64).max(1)),
        });
        (label, period_ns, run_reads(&b))
    });
    // The plots show the fault scale nearest the profile's own (1).
    let plot_scale = p
        .fault_scales
        .iter()
        .copied()
        .fold(p.fault_scales[0], |b, s| {
            if (s.ln()).abs() < (b.ln()).abs() {
                s
            } else {
                b
            }
        });
    let plot_faults: Vec<(OdpSide, f64)> = sides
        .iter()
        .map(|&o| {
            let mut prof = base.clone();
            prof.odp.local_fault_us *= plot_scale;
            prof.odp.remote_fault_us *= plot_scale;
            (o, reference_fault_us(&prof, o))
        })
        .collect();
    let mut t = Table::new(&COLUMNS);
    let mut events = 0;
    for (pt, (label, period_ns, r)) in points.iter().zip(results) {
        if !r.all_ok {
            return Err(ExperimentError::Sim(format!(
                "{label} (period {period_ns} ns): a READ failed or delivered wrong bytes"
            )));
        }
        events += r.events;
        t.push(vec![
            Cell::from(pt.odp.name()),
            Cell::from(pt.rnr_us as f64 / 1e3),
            Cell::from(pt.fault_us),
            Cell::from(pt.fault_max_us),
            Cell::from(pt.ratio),
            Cell::from(period_ns as f64 / 1e3),
            Cell::from(pt.num_ops),
            Cell::from(pt.interval_us),
            Cell::from(pt.trial),
            Cell::from(r.exec_time.as_us_f64()),
            Cell::from(u64::from(r.stall_timeouts > 0)),
            Cell::from(r.stall_timeouts),
            Cell::from(r.late_timeouts),
            Cell::from(r.dummies),
        ]);
    }
    Ok(ExperimentOutput {
        table: t,
        plots: plots(&plot_faults, &p.rnr_delays_us),
        sim_events: events,
        meta: json!({
            "vendor": base.name,
            "loss_model": base.odp.loss_model.enabled,
            "local_fault_us": base.odp.local_fault_us,
            "remote_fault_us": base.odp.remote_fault_us,
            "fault_jitter_us": base.odp.fault_jitter_us,
            "rnr_delay_factor": base.odp.rnr_delay_factor,
            "threshold": format!("{} x period", p.threshold_factor),
            "period_ratio": "fix period / fault_us; 0 = fix off",
            "stalled": "1 if the client's hardware ACK timer expired before the last application completion",
            "late_timeouts": "expiries after the last application completion (a leftover dummy); not a stall",
        }),
    })
}

/// Stall probability and mean execution time against the period ratio (bars: the mean over
/// intervals and trials), per placement and RNR delay, series by READ count, at one fault
/// scale (`fault_us` of each placement given in `faults`).
fn plots(faults: &[(OdpSide, f64)], rnrs: &[u64]) -> Vec<PlotSpec> {
    let mut v = Vec::new();
    for &(odp, fault_us) in faults {
        let rnr_list = if odp == OdpSide::Local {
            &rnrs[..1]
        } else {
            rnrs
        };
        for &rnr in rnr_list {
            let rnr_ms = unpinned_report::format_float(rnr as f64 / 1e3);
            let fault = unpinned_report::format_float(fault_us);
            let name = odp.name();
            let what = format!("{name} ODP, fault {fault} us, min RNR delay {rnr_ms} ms");
            let only = |p: PlotSpec| {
                p.only("odp", name)
                    .only("rnr_delay_ms", &rnr_ms)
                    .only("fault_us", &fault)
            };
            v.push(only(
                PlotSpec::line(
                    &format!("{what}: stall probability vs fix period / fault time (0 = fix off)"),
                    "period_ratio",
                    "stalled",
                    Some("num_ops"),
                )
                .bars()
                .suffix(&format!("stall-{name}-rnr{rnr_ms}")),
            ));
            v.push(only(
                PlotSpec::line(
                    &format!(
                        "{what}: mean execution time vs fix period / fault time (0 = fix off)"
                    ),
                    "period_ratio",
                    "exec_time_us",
                    Some("num_ops"),
                )
                .bars()
                .log(false, true)
                .suffix(&format!("exec-{name}-rnr{rnr_ms}")),
            ));
        }
    }
    // The first plot is the main one (no suffix).
    if let Some(first) = v.first_mut() {
        first.suffix = String::new();
    }
    v
}
