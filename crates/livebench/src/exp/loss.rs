//! `live-loss`: goodput and completion of PART over UDP under packet loss, per retransmission
//! policy (issue 18, "Loss that does not collapse goodput").
//!
//! Two runtimes in this process, each with a UDP socket in its own network namespace, joined
//! by a veth pair on which nftables drops `loss_percent` % of the UDP packets in each
//! direction (and duplicates `dup_percent` %; see [`crate::netns`]). This kernel has no
//! netem, so reordering comes from the runtime's fault-injecting transport wrapper
//! (`reorder_percent`, `transport.inject_reorder`). Per (loss rate, policy)
//! rank 0 posts `transfers` writes of `bytes` each into memory of rank 1 (every page present:
//! loss, not page faults, is measured), all at once,
//! and waits for their completions until `deadline_s`; goodput is the bytes of the writes
//! that completed successfully over the time until the last completion (or the deadline).
//! Completed writes are checked byte for byte. Without root, `ip` or `nft` the experiment
//! returns no rows and says why in its metadata's `skipped`.
//!
//! The engine is the profile's (the live defaults: `unpinned live live-loss --set
//! engine.block_timeout_us=3000` changes the block timeout) except for the two fields the
//! experiment sets per point: `engine.retransmit` (`exp.policies`) and `engine.packet_bytes`
//! (`exp.packet_bytes`, default 1 KiB: with the live default of one 16 KiB packet per block,
//! nftables drops whole datagrams before IP fragmentation, and both policies resend the same
//! single packet).

use std::time::{Duration, Instant};

use serde_json::json;
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, FixedField, RunContext,
};
use unpinned_live::{Perms, Runtime};
use unpinned_report::{PlotSpec, Table};

use super::{base_config, fail, pattern, present};
use crate::netns::{self, NetnsPair};

/// `live-loss`.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "live-loss",
    system: "live",
    description: "Live: goodput and completion over UDP between two network namespaces at 0..30 % packet loss, whole-block vs selective retransmission",
    params: Some(<Params as Declared>::PARAMS),
    fixed: &[
        FixedField {
            field: "engine.retransmit",
            instead: "exp.policies",
        },
        FixedField {
            field: "engine.packet_bytes",
            instead: "exp.packet_bytes",
        },
    ],
    run,
    ..ExperimentSpec::LIVE
};

unpinned_experiments::declare_params! {
    /// Parameters of `live-loss`.
    pub struct Params {
        losses: Vec<u32> {
            default: "0,1,5,10,20,30",
            unit: "%",
            check: unpinned_experiments::params::int(0, 90),
            doc: "Packet loss rates, each direction",
        },
        policies: Vec<String> {
            default: "block,selective",
            unit: "",
            check: unpinned_experiments::params::one_of(&["block", "selective"]),
            doc: "Retransmission policies (engine.retransmit)",
        },
        dup_percent: u32 {
            default: "0",
            unit: "%",
            check: unpinned_experiments::params::int(0, 50),
            doc: "Packets duplicated, each direction (nftables dup)",
        },
        reorder_percent: u32 {
            default: "0",
            unit: "%",
            check: unpinned_experiments::params::int(0, 50),
            doc: "Packets each rank holds back behind a later one (transport.inject_reorder)",
        },
        transfers: usize {
            default: "16",
            unit: "",
            check: unpinned_experiments::params::int(1, 1024),
            doc: "Writes per point, all outstanding at once",
        },
        bytes: usize {
            default: "1048576",
            unit: "bytes",
            check: unpinned_experiments::params::int(1, 64 << 20),
            doc: "Bytes per write",
        },
        packet_bytes: u32 {
            default: "1024",
            unit: "bytes",
            check: unpinned_experiments::params::int(64, 16384),
            doc: "Packet payload (engine.packet_bytes; one datagram each)",
        },
        deadline_s: f64 {
            default: "20",
            unit: "s",
            check: unpinned_experiments::params::positive(600.0),
            doc: "A point stops waiting for completions after this long",
        },
    }
}

/// One point's outcome.
struct Point {
    ok: usize,
    failed: usize,
    time_s: f64,
    sent_bytes: u64,
    resent_bytes: u64,
    timeouts: u64,
    sack_retransmits: u64,
    dropped: u64,
    duplicated: u64,
}

/// UDP port of both ranks (each namespace has its own port space).
const PORT: u16 = 7481;

fn point(
    ctx: &RunContext,
    net: &NetnsPair,
    p: &Params,
    loss: u32,
    policy: &str,
) -> Result<Point, ExperimentError> {
    net.set_faults(loss, p.dup_percent).map_err(fail)?;
    let mut profile = ctx.profile.clone();
    for set in [
        format!("engine.retransmit={policy}"),
        format!("engine.packet_bytes={}", p.packet_bytes),
    ] {
        profile = profile.with_override(&set).map_err(fail)?;
    }
    // Buffers first: they outlive the runtimes (dropped at the end of this function, writes
    // that missed the deadline may still be reading the sources).
    let len = p.bytes;
    let srcs: Vec<Vec<u8>> = (0..p.transfers)
        .map(|i| pattern(i as u64 + 1, len))
        .collect();
    // Present memory: the loss is the point, not the page faults of fresh memory.
    let dst = present(len * p.transfers)?;
    let mut rts = Vec::new();
    for rank in 0..2u32 {
        let mut c = base_config(rank);
        c.engine = profile.engine.clone();
        c.transport.inject_reorder = f64::from(p.reorder_percent) / 100.0;
        c.transport.inject_seed = ctx.seed;
        let t = net.udp(rank, PORT, c.max_packet()).map_err(fail)?;
        rts.push(Runtime::new(c, Box::new(t)).map_err(fail)?);
    }
    // SAFETY: `dst` outlives the runtimes (declared before them); it is read only after the
    // completions of the writes into it.
    let key = unsafe { rts[1].expose(dst.ptr(), dst.len(), Perms::RW) }.map_err(fail)?;
    let t0 = Instant::now();
    let mut ids = Vec::new();
    for (i, src) in srcs.iter().enumerate() {
        let at = dst.addr() + (i * len) as u64;
        // SAFETY: `srcs` outlives the runtimes (declared before them).
        ids.push(unsafe { rts[0].write(1, src.as_ptr(), at, key, len) }.map_err(fail)?);
    }
    let deadline = t0 + Duration::from_secs_f64(p.deadline_s);
    let mut status = vec![None; ids.len()];
    let mut last = t0;
    while status.iter().any(Option::is_none) && Instant::now() < deadline {
        match rts[0].poll_completion() {
            Some(c) => {
                let i = ids
                    .iter()
                    .position(|&id| id == c.wr_id)
                    .ok_or_else(|| fail(format!("completion of an unknown request: {c:?}")))?;
                if status[i].is_some() {
                    return Err(fail(format!("write {i} completed twice")));
                }
                status[i] = Some(c.status.is_ok());
                last = Instant::now();
            }
            None => std::thread::sleep(Duration::from_micros(100)),
        }
    }
    let time_s = if status.iter().all(Option::is_some) {
        last - t0
    } else {
        deadline - t0
    }
    .as_secs_f64();
    for (i, s) in status.iter().enumerate() {
        if *s == Some(true) {
            // SAFETY: the write into this slice completed; nothing else writes it.
            let got = unsafe { &dst.as_slice()[i * len..(i + 1) * len] };
            if got != &srcs[i][..] {
                return Err(fail(format!(
                    "{policy} at {loss}% loss: write {i} completed but its bytes differ"
                )));
            }
        }
    }
    let st = rts[0].stats().map_err(fail)?.engine;
    drop(rts);
    let (dropped, duplicated) = net.counters().map_err(fail)?;
    Ok(Point {
        ok: status.iter().filter(|s| **s == Some(true)).count(),
        failed: status.iter().filter(|s| **s == Some(false)).count(),
        time_s,
        sent_bytes: st.data_bytes_sent,
        resent_bytes: st.data_bytes_resent,
        timeouts: st.retransmits_timeout,
        sack_retransmits: st.retransmits_sack,
        dropped,
        duplicated,
    })
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let p: Params = ctx.params()?;
    let mut table = Table::new(&[
        "loss_percent",
        "dup_percent",
        "reorder_percent",
        "policy",
        "transfers",
        "completed",
        "failed",
        "incomplete",
        "bytes_per_transfer",
        "time_s",
        "goodput_mbps",
        "resent_percent",
        "timeout_retransmits",
        "sack_retransmits",
        "packets_dropped",
        "packets_duplicated",
    ]);
    let plots = vec![
        PlotSpec::line(
            "Live UDP goodput under packet loss",
            "loss_percent",
            "goodput_mbps",
            Some("policy"),
        ),
        PlotSpec::line(
            "Live UDP writes completed under packet loss",
            "loss_percent",
            "completed",
            Some("policy"),
        )
        .suffix("completed"),
    ];
    let meta = |skipped: Option<String>| {
        json!({
            "transport": "udp between two network namespaces (veth), nftables loss on each side's output",
            "reordering": "reorder_percent of each rank's packets held back behind its next packet (at most 1 ms) by the runtime's transport::faulty wrapper: no netem on this kernel",
            "memory": "destination pages present before the writes",
            "packet_bytes": p.packet_bytes,
            "block_timeout_us": ctx.profile.engine.block_timeout_us,
            "max_timeouts": ctx.profile.engine.max_timeouts,
            "deadline_s": p.deadline_s,
            "goodput_mbps": "bytes of the writes completed successfully * 8 / time_s / 1e6",
            "time_s": "post of the first write to the last completion (the deadline if some never completed)",
            "resent_percent": "payload bytes resent / payload bytes sent once, rank 0",
            "skipped": skipped,
        })
    };
    let net = match netns::available().and_then(|()| NetnsPair::create()) {
        Ok(n) => n,
        Err(why) => {
            let msg = format!("live-loss skipped: network namespaces unavailable: {why}");
            eprintln!("{msg}");
            return Ok(ExperimentOutput {
                table,
                plots,
                sim_events: 0,
                meta: meta(Some(msg)),
            });
        }
    };
    let total = (p.losses.len() * p.policies.len()) as u64;
    let mut done = 0;
    for &loss in &p.losses {
        for policy in &p.policies {
            let r = point(ctx, &net, &p, loss, policy)?;
            let good = (r.ok * p.bytes) as f64;
            table.push(vec![
                loss.into(),
                p.dup_percent.into(),
                p.reorder_percent.into(),
                policy.clone().into(),
                p.transfers.into(),
                r.ok.into(),
                r.failed.into(),
                (p.transfers - r.ok - r.failed).into(),
                p.bytes.into(),
                r.time_s.into(),
                (good * 8.0 / r.time_s / 1e6).into(),
                (100.0 * r.resent_bytes as f64 / r.sent_bytes.max(1) as f64).into(),
                r.timeouts.into(),
                r.sack_retransmits.into(),
                r.dropped.into(),
                r.duplicated.into(),
            ]);
            done += 1;
            (ctx.progress)(done, total);
        }
    }
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: 0,
        meta: meta(None),
    })
}
