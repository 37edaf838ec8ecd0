//! `unpinned replay TRACE`: replay a communication trace (our JSON lines or a LogGOPSim GOAL
//! schedule) on the simulator, PART against pre-touch, one rank per node.

use std::path::PathBuf;

use clap::Args;
use unpinned_experiments::part::apps::{app_config, Point, MAX_PACKET_BYTES};
use unpinned_sim::apps::{run_app, BufferMode};
use unpinned_traffic::trace::{read_jsonl, Replay};

use crate::args::ProfileArgs;
use crate::error::CliError;
use crate::run::setup;

/// Arguments of `unpinned replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace file (`.jsonl`: our format, see docs/ARCHITECTURE.md; `.goal`: GOAL).
    pub trace: PathBuf,
    /// `auto` (by extension), `jsonl` or `goal`.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// `torus` or `fattree`.
    #[arg(long, default_value = "torus")]
    pub topology: String,
    /// Packet size (the scale knob; the reference NI's is 256 B).
    #[arg(long, default_value_t = 4096)]
    pub packet_bytes: u32,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

/// Run `unpinned replay`: prints a tidy CSV table (one row per mode).
pub fn run(a: &ReplayArgs) -> Result<(), CliError> {
    let s = setup(&a.profile)?;
    let text = std::fs::read_to_string(&a.trace)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", a.trace.display())))?;
    let goal = match a.format.as_str() {
        "goal" => true,
        "jsonl" => false,
        "auto" => a.trace.extension().is_some_and(|e| e == "goal"),
        f => {
            return Err(CliError::Usage(format!(
                "unknown trace format {f:?} (auto, jsonl, goal)"
            )))
        }
    };
    let programs = if goal {
        unpinned_traffic::goal::read_goal(&text)
    } else {
        read_jsonl(text.as_bytes())
    }
    .map_err(|e| CliError::Usage(format!("{}: {e}", a.trace.display())))?;
    if a.packet_bytes == 0 || a.packet_bytes > MAX_PACKET_BYTES {
        return Err(CliError::Usage(format!(
            "--packet-bytes must be in 1..={MAX_PACKET_BYTES}"
        )));
    }
    let topology: &'static str = match a.topology.as_str() {
        "torus" => "torus",
        "fattree" => "fattree",
        t => {
            return Err(CliError::Usage(format!(
                "unknown topology {t:?} (torus, fattree)"
            )))
        }
    };
    let nodes = programs.len() as u32;
    let replay = Replay {
        name: "trace",
        programs,
    };
    let p = Point {
        app: "trace".into(),
        nodes,
        topology,
        seed: 0,
        iterations: 1,
        packet_bytes: a.packet_bytes,
    };
    crate::memcheck::check_app("replay", "the trace's message sizes or ranks", &replay)
        .map_err(CliError::Usage)?;
    // What the run will cost, said before it starts: a big trace runs long (one event per
    // packet) and its page tables take 16 B per mapped 4 KiB page.
    let (mut sent_bytes, mut packets) = (0u64, 0u64);
    for op in replay.programs.iter().flat_map(|p| p.ops.iter()) {
        if let unpinned_traffic::Op::Send { bytes, .. } = *op {
            sent_bytes = sent_bytes.saturating_add(bytes);
            packets = packets.saturating_add(bytes.div_ceil(a.packet_bytes as u64).max(1));
        }
    }
    let mapped = unpinned_sim::sizing::app_buffer_bytes(&replay).unwrap_or(u64::MAX);
    let need =
        unpinned_sim::sizing::run_bytes(nodes as u64, mapped.div_ceil(nodes.max(1) as u64), 0)
            .unwrap_or(u64::MAX);
    eprintln!(
        "replay: {nodes} ranks, {} operations; {} sent in {packets} packets of {} B per mode; needs at least {} of memory",
        replay.programs.iter().map(|p| p.ops.len()).sum::<usize>(),
        crate::memcheck::human(sent_bytes),
        a.packet_bytes,
        crate::memcheck::human(need),
    );
    let mut rows = Vec::new();
    for mode in [BufferMode::Part, BufferMode::PreTouch] {
        let cfg = app_config(&s.profile, &p, mode, s.seed);
        eprintln!("replay: simulating the {} mode", mode.name());
        let r = run_app(&cfg, &replay, 0..1).map_err(|e| CliError::Run(e.to_string()))?;
        rows.push((mode, r));
    }
    let pre = rows[1].1.time_s;
    println!("trace,nodes,mode,time_s,slowdown,fault_interrupts,errs,sends,total_bytes,msg_errors");
    for (mode, r) in rows {
        println!(
            "{},{nodes},{},{},{},{},{},{},{},{}",
            a.trace.display(),
            mode.name(),
            r.time_s,
            r.time_s / pre,
            r.fault_interrupts,
            r.errs,
            r.sends,
            r.bytes,
            r.msg_errors
        );
    }
    Ok(())
}
