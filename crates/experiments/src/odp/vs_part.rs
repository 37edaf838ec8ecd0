//! `odp-vs-part` (odp.md): the same two-READ pattern on RC with ODP (loss model on, pure
//! protocol, and with the fix) and on PART (fault NACK + ERR + selective retransmission), for
//! remote, local and remote+local faults. Each point is the mean over `trials` (default 5).
//!
//! RC runs on the vendor profile (`--profile`, default connectx4, with `--set` overrides); PART
//! on the built-in forth-arm profile (recorded as `part_profile`) with the simulator's default
//! page-in policy. The two platforms differ in
//! link speed and fault-path costs, so the comparison is of the recovery mechanisms, which
//! dominate: a stall of hundreds of milliseconds against tens of microseconds.

use serde_json::json;
use unpinned_core::api::{Op, Perms, WorkRequest};
use unpinned_core::time::{Duration, Instant};
use unpinned_ib::FixConfig;
use unpinned_sim::rc::bench::{run_reads, OdpSide, ReadBench};
use unpinned_sim::{Residence, Sim, SimConfig};

use super::ODP_SIDES;
use crate::{Cell, ExperimentError, ExperimentOutput, ExperimentSpec, PlotSpec, RunContext, Table};

pub(crate) static SPEC: ExperimentSpec = ExperimentSpec {
    name: "odp-vs-part",
    system: "odp",
    description:
        "Two READs with faults: RC/ODP (with and without the loss model, with the fix) vs PART",
    profile: crate::ProfileKind::Ib,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

const INTERVALS_US: [u64; 12] = [
    0, 100, 200, 400, 600, 800, 1000, 2000, 3000, 4000, 6000, 10000,
];
const CLIENT: u64 = 0x10_0000_0000;
const SERVER: u64 = 0x20_0000_0000;

/// Two 100-byte READs on PART, `interval` apart; execution time from the first post.
fn part_reads(
    ctx: &RunContext,
    odp: OdpSide,
    interval: Duration,
    seed: u64,
) -> Result<(f64, u64), ExperimentError> {
    let mut sim = Sim::new(SimConfig::two_nodes(ctx.profile.clone(), seed));
    let absent = |on: bool| {
        if on {
            Residence::Absent
        } else {
            Residence::Present
        }
    };
    let len = 4096;
    sim.map(
        1,
        1,
        SERVER,
        len,
        absent(matches!(odp, OdpSide::Remote | OdpSide::Both)),
    );
    sim.fill_random(1, 1, SERVER, len);
    let key = sim.expose(1, 1, SERVER, len, Perms::R);
    sim.map(
        0,
        1,
        CLIENT,
        len,
        absent(matches!(odp, OdpSide::Local | OdpSide::Both)),
    );
    for i in 0..2u64 {
        let wr = WorkRequest {
            wr_id: i + 1,
            op: Op::Read,
            peer: 1,
            local_pdid: 1,
            local_addr: CLIENT + i * 100,
            remote_pdid: 1,
            remote_addr: SERVER + i * 100,
            rkey: key,
            len: 100,
        };
        sim.post(Instant::ZERO + interval.times(i), 0, wr);
    }
    sim.run_until_idle(Duration::from_ms(60_000))
        .map_err(|e| ExperimentError::Sim(e.to_string()))?;
    let mut end = Instant::ZERO;
    for p in sim.posts() {
        let c = p.completion.ok_or_else(|| {
            ExperimentError::Sim(format!(
                "PART read {} did not complete (seed {seed})",
                p.wr.wr_id
            ))
        })?;
        if c.status.is_err() {
            return Err(ExperimentError::Sim(format!(
                "PART read {} failed: {:?} (seed {seed})",
                p.wr.wr_id, c.status
            )));
        }
        end = end.max(c.at);
    }
    Ok((end.as_us_f64(), sim.events()))
}

crate::declare_params! {
    /// Parameters of `odp-vs-part`.
    pub struct Params {
        trials: u64 {
            default: "5",
            unit: "",
            check: crate::params::int(1, 1_000_000),
            doc: "Seeded repetitions of every point (the table shows their mean)",
        },
        fix_period_us: u64 {
            default: "1000",
            unit: "us",
            check: crate::params::int(1, 1_000_000_000),
            doc: "Software-timer period of the rc-odp-fix transport",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        trials,
        fix_period_us: fix_us,
    } = ctx.params()?;
    let profile = ctx.vendor_profile()?;
    let transports = ["rc-odp", "rc-odp-pure", "rc-odp-fix", "part"];
    let mut t = Table::new(&["transport", "odp", "interval_us", "exec_time_us"]);
    let total = (transports.len() * ODP_SIDES.len() * INTERVALS_US.len()) as u64;
    let (mut done, mut events) = (0u64, 0u64);
    for tr in transports {
        for odp in ODP_SIDES {
            for iv in INTERVALS_US {
                let mut sum = 0.0;
                for trial in 0..trials {
                    let seed =
                        super::seed(ctx, &format!("vs-part/{tr}/{}/{iv}/{trial}", odp.name()));
                    let (us, ev) = if tr == "part" {
                        part_reads(ctx, odp, super::us(iv), seed)?
                    } else {
                        let mut b = ReadBench::new(profile.clone(), odp, 2, super::us(iv), seed);
                        b.loss_model = Some(tr != "rc-odp-pure" && profile.odp.loss_model.enabled);
                        if tr == "rc-odp-fix" {
                            b.fix = Some(FixConfig {
                                period: super::us(fix_us),
                                threshold: super::us(fix_us),
                            });
                        }
                        let r = run_reads(&b);
                        if !r.all_ok {
                            return Err(ExperimentError::Sim(format!(
                                "RC READ failed ({tr}, seed {seed})"
                            )));
                        }
                        (r.exec_time.as_us_f64(), r.events)
                    };
                    sum += us;
                    events += ev;
                }
                t.push(vec![
                    Cell::from(tr),
                    Cell::from(odp.name()),
                    Cell::from(iv),
                    Cell::from(sum / trials as f64),
                ]);
                done += 1;
                (ctx.progress)(done, total);
            }
        }
    }
    let mut plots = Vec::new();
    for (i, odp) in ["remote", "local", "both"].iter().enumerate() {
        let p = PlotSpec::line(
            &format!("Two READs, {odp} faults: RC/ODP vs PART"),
            "interval_us",
            "exec_time_us",
            Some("transport"),
        )
        .log(false, true)
        .only("odp", odp);
        plots.push(if i == 0 { p } else { p.suffix(odp) });
    }
    Ok(ExperimentOutput {
        table: t,
        plots,
        sim_events: events,
        meta: json!({
            "vendor": profile.name,
            "part_profile": ctx.profile.name,
            "trials": trials,
            "rc_min_rnr_delay_ms": 1.28,
            "rc_fix_period_us": fix_us,
            "exec_time_us": "mean over trials, first post to last completion",
        }),
    })
}
