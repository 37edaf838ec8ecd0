//! `part-major-faults` (issue 17, section 4; spec part.md, "Beyond the reference design"):
//! destination pages backed by a file that is not in the page cache, or by swap, so that
//! bringing one in waits for a device read of 100 us to milliseconds.
//!
//! Two kinds of rows:
//! - `transfer`: one write whose destination pages are all missing, every page-in policy, the
//!   device time per read request swept (not fitted: the spec gives only the range), one page
//!   per request (scattered swap) or a readahead window of pages of one `get_user_pages` run;
//!   slowdown against the same write whose missing pages are anonymous (minor faults).
//! - `hit-resident` / `hit-minor`: while a 16 KiB write waits for its major page-in, a second
//!   4 KiB write from the same source to the same target, into resident pages or into one
//!   missing anonymous page; its latency against the same write alone. The NI keeps serving
//!   other transfers during a fault (mechanism 4), but the target has one page-in task, which
//!   blocks for the device: a minor fault queued behind a major one waits for it.

use serde_json::json;
use unpinned_core::api::{Op, Perms, WorkRequest};
use unpinned_core::os::{PageInPolicy, PageSource};
use unpinned_core::profile::Profile;
use unpinned_core::rng::derive_seed;
use unpinned_core::time::Duration;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::{NodeStats, Residence};

use super::harness::{par_map, setup_write, WriteSetup, DST};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str = "Major faults (file / swap page-in of 100 us to ms): PIO/PI4/PIA \
                               slowdown vs minor faults, and a second transfer during the fault";

/// `part-major-faults` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-major-faults",
    system: "part",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

/// The policies compared: every policy the core knows (an adaptive policy joins the sweep
/// when it is added to [`PageInPolicy::ALL`]).
fn policies() -> Vec<PageInPolicy> {
    PageInPolicy::ALL.to_vec()
}

/// Bytes of the write that waits for its major page-in in the hit rows (one block).
pub const HIT_FIRST_BYTES: u64 = 16 << 10;
/// Bytes of the second write of the hit rows.
pub const HIT_SECOND_BYTES: u64 = 4 << 10;
/// When the second write is posted after the first, us: the first's page-in task is then
/// waiting for the device (its first packet arrives ~4 us after the post, the fault path
/// reaches the read after the interrupt, the FIFO drain and the `get_user_pages` call).
pub const HIT_DELAY_US: u64 = 30;
/// Source and destination of the second write (node 0 and node 1).
const SRC2: u64 = 0x30_0000_0000;
const DST2: u64 = 0x40_0000_0000;

crate::declare_params! {
    /// Parameters of `part-major-faults`.
    pub struct Params {
        sizes: Vec<u64> {
            default: "4096,65536,1048576,4194304",
            unit: "bytes",
            check: crate::params::int(1, 1 << 28),
            doc: "Write sizes of the transfer rows (every destination page missing)",
        },
        major_us: Vec<u64> {
            default: "100,250,500,1000,2000",
            unit: "us",
            check: crate::params::int(1, 100_000),
            doc: "Device time of one read request of a major fault (the spec's range: 100 us \
                  to ms, swept)",
        },
        readahead_pages: Vec<u64> {
            default: "1,32",
            unit: "pages",
            check: crate::params::int(1, 4096),
            doc: "Pages one read request brings into the page cache (1: scattered swap; 32: a \
                  128 KiB file readahead window); window pages not mapped fault minor later",
        },
    }
}

/// One simulated point.
#[derive(Clone, Debug)]
struct Point {
    case: &'static str,
    policy: PageInPolicy,
    size: u64,
    major_us: u64,
    readahead: u64,
}

/// What a point measured.
struct Out {
    latency_us: f64,
    dst: NodeStats,
    src: NodeStats,
    events: u64,
}

fn major(major_us: u64, readahead: u64) -> PageSource {
    if major_us == 0 {
        PageSource::Minor
    } else {
        PageSource::Major {
            io: Duration::from_us(major_us),
            readahead_pages: readahead,
        }
    }
}

/// A write of `size` into missing destination pages of `source` (transfer rows).
fn transfer(profile: &Profile, p: &Point, seed: u64) -> Result<Out, ExperimentError> {
    let mut w = WriteSetup::new(p.size, seed);
    w.policy = p.policy;
    w.dst = Residence::Absent;
    let (mut sim, wr) = setup_write(profile, &w, &[]);
    sim.node_mut(1)
        .mem
        .set_source(1, DST, p.size, major(p.major_us, p.readahead));
    sim.post(sim.now(), 0, wr);
    finish(sim, 1, p)
}

/// The hit rows: the second write alone (`major_us` 0 and no first write: the baseline) or
/// posted [`HIT_DELAY_US`] after a 16 KiB write into missing major pages.
fn hit(profile: &Profile, p: &Point, first: bool, seed: u64) -> Result<Out, ExperimentError> {
    let mut w = WriteSetup::new(HIT_FIRST_BYTES, seed);
    w.policy = p.policy;
    w.dst = Residence::Absent;
    let (mut sim, wr) = setup_write(profile, &w, &[]);
    sim.node_mut(1)
        .mem
        .set_source(1, DST, HIT_FIRST_BYTES, major(p.major_us, p.readahead));
    let second_dst = if p.case == "hit-minor" {
        Residence::Absent
    } else {
        Residence::Present
    };
    sim.map(0, 1, SRC2, HIT_SECOND_BYTES, Residence::Present);
    sim.fill_random(0, 1, SRC2, HIT_SECOND_BYTES);
    sim.map(1, 1, DST2, HIT_SECOND_BYTES, second_dst);
    let key = sim.expose(1, 1, DST2, HIT_SECOND_BYTES, Perms::W);
    let t0 = sim.now();
    if first {
        sim.post(t0, 0, wr);
    }
    sim.post(
        t0 + Duration::from_us(HIT_DELAY_US),
        0,
        WorkRequest {
            wr_id: 2,
            op: Op::Write,
            peer: 1,
            local_pdid: 1,
            local_addr: SRC2,
            remote_pdid: 1,
            remote_addr: DST2,
            rkey: key,
            len: HIT_SECOND_BYTES,
        },
    );
    finish(sim, 2, p)
}

/// Run to idle; the latency of the request `wr_id`.
fn finish(mut sim: unpinned_sim::Sim, wr_id: u64, p: &Point) -> Result<Out, ExperimentError> {
    sim.run_until_idle(Duration::from_ms(600_000))
        .map_err(|e| ExperimentError::Sim(e.to_string()))?;
    let mut latency_us = None;
    for rec in sim.posts() {
        let c = rec.completion.expect("idle run completed every request");
        if let Err(e) = c.status {
            return Err(ExperimentError::Sim(format!(
                "part-major-faults {p:?}: request {} failed: {e}",
                rec.wr.wr_id
            )));
        }
        if rec.wr.wr_id == wr_id {
            latency_us = Some((c.at - rec.posted_at).as_us_f64());
        }
    }
    Ok(Out {
        latency_us: latency_us.expect("the measured request was posted"),
        dst: sim.stats(1),
        src: sim.stats(0),
        events: sim.events(),
    })
}

/// Run `part-major-faults` on the simulator.
pub fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        sizes,
        major_us,
        readahead_pages,
    } = ctx.params()?;
    let seed = derive_seed(ctx.seed, "part-major-faults");
    // (point, whether the hit rows' first write runs); baselines have major_us 0.
    let mut points: Vec<(Point, bool)> = Vec::new();
    for policy in policies() {
        for &size in &sizes {
            let mut push = |major_us, readahead| {
                points.push((
                    Point {
                        case: "transfer",
                        policy,
                        size,
                        major_us,
                        readahead,
                    },
                    true,
                ))
            };
            push(0, 0);
            for &m in &major_us {
                for &r in &readahead_pages {
                    push(m, r);
                }
            }
        }
        for case in ["hit-resident", "hit-minor"] {
            let base = Point {
                case,
                policy,
                size: HIT_SECOND_BYTES,
                major_us: 0,
                readahead: 0,
            };
            points.push((base.clone(), false));
            for &m in &major_us {
                for &r in &readahead_pages {
                    points.push((
                        Point {
                            major_us: m,
                            readahead: r,
                            ..base.clone()
                        },
                        true,
                    ));
                }
            }
        }
    }
    let results = par_map(&points, ctx.progress, |(p, first)| match p.case {
        "transfer" => transfer(&ctx.profile, p, seed),
        _ => hit(&ctx.profile, p, *first, seed),
    });
    let results = super::collect(results)?;
    let mut table = Table::new(&[
        "case",
        "policy",
        "size_bytes",
        "source",
        "major_us",
        "readahead_pages",
        "latency_us",
        "baseline_us",
        "slowdown",
        "fault_interrupts",
        "errs",
        "io_requests",
        "io_wait_us",
        "retransmits_timeout",
    ]);
    let mut events = 0;
    let mut baseline = 0.0;
    for ((p, _), r) in points.iter().zip(&results) {
        events += r.events;
        if p.major_us == 0 {
            baseline = r.latency_us;
        }
        let h = &r.dst.handler;
        table.push(vec![
            p.case.into(),
            p.policy.name().into(),
            p.size.into(),
            if p.major_us == 0 { "minor" } else { "major" }.into(),
            p.major_us.into(),
            p.readahead.into(),
            r.latency_us.into(),
            baseline.into(),
            (r.latency_us / baseline).into(),
            h.interrupts.into(),
            h.errs.into(),
            h.io_requests.into(),
            h.io_wait.as_us_f64().into(),
            r.src.engine.retransmits_timeout.into(),
        ]);
    }
    let last = sizes.last().copied().unwrap_or(4 << 20).to_string();
    let ra = readahead_pages.first().copied().unwrap_or(1).to_string();
    let mut plots = Vec::new();
    for r in &readahead_pages {
        plots.push(
            PlotSpec::line(
                &format!("Latency vs device time, {last} B, readahead {r} pages"),
                "major_us",
                "latency_us",
                Some("policy"),
            )
            .log(true, true)
            .only("case", "transfer")
            .only("source", "major")
            .only("size_bytes", &last)
            .only("readahead_pages", &r.to_string())
            .suffix(&format!("ra{r}")),
        );
    }
    plots.push(
        PlotSpec::line(
            "Second 4 KiB write during a major fault: slowdown vs device time, PIA",
            "major_us",
            "slowdown",
            Some("case"),
        )
        .only_any("case", &["hit-resident", "hit-minor"])
        .only("policy", "pia")
        .only("readahead_pages", &ra)
        .suffix("hit"),
    );
    let mut meta = json!({
        "sizes_bytes": sizes,
        "major_us": major_us,
        "readahead_pages": readahead_pages,
        "policies": policies().iter().map(|p| p.name()).collect::<Vec<_>>(),
        "hit_first_bytes": HIT_FIRST_BYTES,
        "hit_second_bytes": HIT_SECOND_BYTES,
        "hit_delay_us": HIT_DELAY_US,
        "retransmission": "ERR or the profile's block timeout",
        "assumptions": "a major fault's device time is one fixed read per request (swept); \
                        a request reads readahead_pages pages from its first page on into the \
                        page cache (those the policy did not ask for fault minor later); the \
                        page cache is not reclaimed during a write; the page-in task waits for \
                        the device (no CPU, interrupts do not lengthen the wait), then maps \
                        each page at the profile's gup_page_us; one page-in task per node, \
                        serial",
    });
    if let Some(m) = meta.as_object_mut() {
        m.insert(
            "hit_rows".into(),
            json!("second write's latency; baseline: it alone"),
        );
    }
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: events,
        meta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(case: &'static str, policy: PageInPolicy, size: u64, major_us: u64) -> Point {
        Point {
            case,
            policy,
            size,
            major_us,
            readahead: 1,
        }
    }

    /// A major fault costs its device time per read on top of the minor path, and readahead
    /// saves reads (PIA's run in one request, PIO's later pages found in the page cache).
    #[test]
    fn major_page_in_costs_the_device_time_per_read() {
        let profile = Profile::forth_arm();
        let size = 16 << 10;
        let t = |p: &Point| transfer(&profile, p, 1).unwrap();
        let minor = t(&point("transfer", PageInPolicy::Pia, size, 0));
        let pia = t(&point("transfer", PageInPolicy::Pia, size, 500));
        assert_eq!(pia.dst.handler.io_requests, 4);
        assert_eq!(pia.dst.handler.major_pages_in, 4);
        let extra = pia.latency_us - minor.latency_us;
        assert!(
            (0.9 * 4.0 * 500.0..4.0 * 500.0 + 1100.0).contains(&extra),
            "4 reads of 500 us added {extra} us"
        );
        let mut ra = point("transfer", PageInPolicy::Pia, size, 500);
        ra.readahead = 32;
        let ra = t(&ra);
        assert_eq!(ra.dst.handler.io_requests, 1);
        assert!(ra.latency_us < pia.latency_us - 1000.0);
        let mut pio = point("transfer", PageInPolicy::Pio, size, 500);
        pio.readahead = 32;
        let pio = t(&pio);
        assert_eq!(
            pio.dst.handler.io_requests, 1,
            "PIO's later pages were read ahead into the page cache"
        );
        assert!(pio.latency_us > ra.latency_us);
        let pio1 = t(&point("transfer", PageInPolicy::Pio, size, 500));
        assert_eq!(
            pio1.dst.handler.io_requests, 4,
            "no readahead: a read per page"
        );
    }

    /// The report's headline is derived from a small grid: one sentence per readahead, one
    /// for the second write.
    #[test]
    fn the_report_states_the_headline() {
        let params = [
            ("sizes", "4096,65536"),
            ("major_us", "100,1000"),
            ("readahead_pages", "1,8"),
        ];
        let ctx = RunContext {
            profile: Profile::forth_arm(),
            seed: 1,
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            kind_profile: None,
            progress: &|_, _| {},
        };
        let out = run(&ctx).unwrap();
        let f = unpinned_report::findings::for_experiment("part-major-faults", &out.table);
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(
            f[0].contains("64 KiB") && f[0].contains("1000 us per device read"),
            "{}",
            f[0]
        );
        assert!(f[1].contains("8 page(s) per read"), "{}", f[1]);
        assert!(f[2].contains("resident pages"), "{}", f[2]);
    }

    /// During a major page-in a write into resident pages completes as if alone; one that
    /// needs a minor page-in waits behind the device read.
    #[test]
    fn a_second_write_proceeds_unless_it_needs_the_page_in_task() {
        let profile = Profile::forth_arm();
        let h = |case, major_us, first| {
            hit(
                &profile,
                &point(case, PageInPolicy::Pia, HIT_SECOND_BYTES, major_us),
                first,
                1,
            )
            .unwrap()
            .latency_us
        };
        let alone = h("hit-resident", 0, false);
        let during = h("hit-resident", 1000, true);
        assert!(
            (during - alone).abs() < 0.05 * alone,
            "resident: {during} us during vs {alone} us alone"
        );
        let alone = h("hit-minor", 0, false);
        let during = h("hit-minor", 1000, true);
        assert!(
            during > alone + 500.0,
            "minor: {during} us during vs {alone} us alone"
        );
    }
}
