//! `part-fault-all`: every destination page missing; Transfer-Only, Touch-NoPres, Pin-NoPres,
//! and PART with PIO, PI4, PIA. Written once over a [`Testbed`]: `unpinned sim` and
//! `unpinned live` run the same grid and fill the same columns.

use serde_json::json;
use unpinned_core::os::PageInPolicy;
use unpinned_report::{PlotSpec, Table};

use super::sim_testbed::SimTestbed;
use crate::testbed::{Missing, Scheme, Testbed, Write};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "All destination pages missing: Transfer-Only, Touch-NoPres, Pin-NoPres vs PART PIO/PI4/PIA";

/// `part-fault-all` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-all",
    system: "part",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run: |ctx| run(ctx, &mut SimTestbed::new(&ctx.profile)),
};

crate::declare_params! {
    /// Parameters of `part-fault-all`.
    pub struct Params {
        sizes: Vec<u64> {
            default: "4096,16384,65536,262144,1048576,4194304",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Write sizes (the spec's sweep: 4 KiB .. 4 MiB)",
        },
        reps: usize {
            default: "7",
            unit: "",
            check: crate::params::int(1, 10_000),
            doc: "Repetitions per point, median (live; the simulator is deterministic and runs one)",
        },
    }
}

const POLICIES: [PageInPolicy; 3] = [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia];

/// The point of one row: the present-memory schemes, then PART with each policy, per size.
fn grid(sizes: &[u64], seed: u64, reps: usize) -> Vec<Write> {
    let mut points = Vec::new();
    for &size in sizes {
        for scheme in [Scheme::TransferOnly, Scheme::TouchNoPres, Scheme::PinNoPres] {
            points.push(Write {
                reps,
                ..Write::new(scheme, size, seed)
            });
        }
        for policy in POLICIES {
            points.push(Write {
                missing: Missing::All,
                policy,
                reps,
                ..Write::new(Scheme::Part, size, seed)
            });
        }
    }
    points
}

/// Run `part-fault-all` on `tb`.
pub fn run(ctx: &RunContext, tb: &mut dyn Testbed) -> Result<ExperimentOutput, ExperimentError> {
    let Params { sizes, reps } = ctx.params()?;
    let points = grid(&sizes, ctx.seed, reps);
    let results = tb.measure(&points, ctx.progress)?;
    let mut table = Table::new(&[
        "scheme",
        "size_bytes",
        "latency_us",
        "fault_interrupts",
        "errs",
        "retransmitted_bytes",
    ]);
    for (w, r) in points.iter().zip(&results) {
        let scheme = match w.scheme {
            Scheme::Part => w.policy.name(),
            s => s.name(),
        };
        table.push(vec![
            scheme.into(),
            w.size.into(),
            r.latency_us.into(),
            r.fault_interrupts.into(),
            r.errs.into(),
            r.resent_bytes.into(),
        ]);
    }
    let mut meta = json!({
        "sizes_bytes": sizes,
        "block_timeout_us": ctx.profile.engine.block_timeout_us,
        "note": "PART rows retransmit on ERR or the profile's block timeout, whichever comes first. Touch/Pin rows: CPU cost at the destination, then a transfer into present pages. Counters (interrupts, ERRs, resent bytes) belong to the PART rows; for the other schemes they are those of the fault-free transfer.",
    });
    super::extend(&mut meta, tb.meta(&points));
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Every destination page missing",
            "size_bytes",
            "latency_us",
            Some("scheme"),
        )
        .log(true, true)],
        sim_events: results.iter().map(|r| r.events).sum(),
        meta,
    })
}
