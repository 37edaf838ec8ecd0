//! The simulator's standard load, for `unpinned bench sim`: many concurrent 4 MiB all-fault
//! transfers at the profile's packet granularity, destination buffers reused (evicted between
//! rounds so every round faults again). Invariant checks and tracing are off: this measures the
//! event loop and the models, not the checker.

use std::time::Instant as WallInstant;

use unpinned_core::api::{Op, Perms, WorkRequest};
use unpinned_core::profile::Profile;
use unpinned_core::time::Duration;

use crate::memory::Residence;
use crate::world::{Sim, SimConfig, SimError};

/// Shape of the load.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadSpec {
    /// Nodes in the ring (node i writes to node i+1).
    pub nodes: u32,
    /// Concurrent transfers per node per round.
    pub concurrent: u32,
    /// Bytes per transfer.
    pub transfer_bytes: u64,
    /// Rounds (each waits for all transfers of the previous one).
    pub rounds: u32,
}

/// The speed target: simulated events per second on one core.
pub const TARGET_EVENTS_PER_S: f64 = 10e6;

/// What one run measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadReport {
    /// The load.
    pub spec: LoadSpec,
    /// Transfers completed.
    pub transfers: u64,
    /// Events processed.
    pub events: u64,
    /// Wall time of the simulation proper, s.
    pub wall_s: f64,
    /// Events per wall second.
    pub events_per_s: f64,
    /// Packets the engines sent (data and control), the simulated work behind the events.
    pub packets: u64,
    /// Data packets among them.
    pub data_packets: u64,
    /// Packets per wall second.
    pub packets_per_s: f64,
    /// Packets per CPU second of the simulating thread.
    pub packets_per_cpu_s: f64,
    /// CPU time of the simulating thread, s (the denominator that does not depend on what else
    /// the machine runs).
    pub cpu_s: f64,
    /// Events per CPU second of the simulating thread.
    pub events_per_cpu_s: f64,
    /// Simulated time, s.
    pub simulated_s: f64,
    /// Resident memory after the first round, bytes.
    pub rss_after_first_round_bytes: u64,
    /// Resident memory after the last round, bytes.
    pub rss_after_last_round_bytes: u64,
    /// Peak resident memory of the process, bytes.
    pub peak_rss_bytes: u64,
    /// Superseded timer entries popped (not counted in `events`).
    pub stale_timer_entries: u64,
    /// Largest event-queue length.
    pub max_queue: usize,
}

/// Run the standard load once.
pub fn run_load(
    profile: &Profile,
    seed: u64,
    spec: &LoadSpec,
    progress: impl FnMut(u32),
) -> Result<LoadReport, SimError> {
    run_load_with(profile, seed, spec, LoadOptions::default(), progress)
}

/// Variations of the standard load that do not change its shape.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// Check invariants (bytes delivered == bytes sent, exactly-once) after every event.
    pub check_invariants: bool,
    /// Fill the source buffers with seeded random bytes first. The standard load sends the
    /// zeros of never-written sources, which the destinations need not store (pages without
    /// bytes read as zeros); with random bytes every destination page gets its 4 KiB.
    pub random_sources: bool,
}

/// [`run_load`] with options (tests run the load checked: every byte a completion reports
/// delivered is compared with its source).
pub fn run_load_with(
    profile: &Profile,
    seed: u64,
    spec: &LoadSpec,
    opts: LoadOptions,
    mut progress: impl FnMut(u32),
) -> Result<LoadReport, SimError> {
    let mut cfg = SimConfig::two_nodes(profile.clone(), seed);
    cfg.nodes = spec.nodes;
    cfg.check_invariants = opts.check_invariants;
    let mut sim = Sim::new(cfg);
    let region = spec.transfer_bytes * spec.concurrent as u64;
    const SRC: u64 = 0x1000_0000_0000;
    const DST: u64 = 0x2000_0000_0000;
    let mut keys = Vec::new();
    for n in 0..spec.nodes {
        sim.map(n, 1, SRC, region, Residence::Present);
        if opts.random_sources {
            sim.fill_random(n, 1, SRC, region);
        }
        sim.map(n, 1, DST, region, Residence::Absent);
        keys.push(sim.expose(n, 1, DST, region, Perms::W));
    }
    let started = WallInstant::now();
    let cpu_started = thread_cpu_s();
    let mut rss_first = 0;
    let mut wr_id = 0;
    for round in 0..spec.rounds {
        for n in 0..spec.nodes {
            let peer = (n + 1) % spec.nodes;
            for c in 0..spec.concurrent as u64 {
                wr_id += 1;
                let off = c * spec.transfer_bytes;
                let wr = WorkRequest {
                    wr_id,
                    op: Op::Write,
                    peer,
                    local_pdid: 1,
                    local_addr: SRC + off,
                    remote_pdid: 1,
                    remote_addr: DST + off,
                    rkey: keys[peer as usize],
                    len: spec.transfer_bytes,
                };
                sim.post(sim.now(), n, wr);
            }
        }
        sim.run_until_idle(Duration::from_ms(600_000))?;
        sim.forget_completed();
        for n in 0..spec.nodes {
            sim.evict(n, 1, DST, region);
        }
        if round == 0 {
            rss_first = rss_bytes().0;
        }
        progress(round + 1);
    }
    let wall_s = started.elapsed().as_secs_f64();
    let cpu_s = thread_cpu_s() - cpu_started;
    let (rss_last, peak) = rss_bytes();
    let (mut packets, mut data_packets) = (0, 0);
    for n in 0..spec.nodes {
        let e = sim.stats(n).engine;
        packets += e.data_packets_sent + e.ctrl_packets_sent;
        data_packets += e.data_packets_sent;
    }
    Ok(LoadReport {
        spec: spec.clone(),
        transfers: wr_id,
        events: sim.events(),
        wall_s,
        events_per_s: sim.events() as f64 / wall_s,
        packets,
        data_packets,
        packets_per_s: packets as f64 / wall_s,
        packets_per_cpu_s: packets as f64 / cpu_s,
        cpu_s,
        events_per_cpu_s: sim.events() as f64 / cpu_s,
        simulated_s: sim.now().as_ns() as f64 / 1e9,
        rss_after_first_round_bytes: rss_first,
        rss_after_last_round_bytes: rss_last,
        peak_rss_bytes: peak,
        stale_timer_entries: sim.queue_stats().0,
        max_queue: sim.queue_stats().1,
    })
}

/// CPU time consumed by the calling thread, s (from /proc/thread-self/stat: utime + stime).
pub fn thread_cpu_s() -> f64 {
    stat_cpu_s("/proc/thread-self/stat")
}

/// CPU time consumed by the whole process (every thread, ended ones included), s (from
/// /proc/self/stat: utime + stime).
pub fn process_cpu_s() -> f64 {
    stat_cpu_s("/proc/self/stat")
}

/// utime + stime of a /proc `stat` file, s.
fn stat_cpu_s(path: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(path) else {
        return f64::NAN;
    };
    // Fields after the parenthesised command name: state is field 3; utime 14, stime 15.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return f64::NAN;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    // USER_HZ is 100 on Linux (the kernel ABI fixes it for /proc).
    (ticks(11) + ticks(12)) / 100.0
}

/// (current, peak) resident set size of this process from /proc/self/status; (0, 0) elsewhere.
pub fn rss_bytes() -> (u64, u64) {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return (0, 0);
    };
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small standard load completes every transfer, with the same events whether or not
    /// the invariant checker (bytes delivered == bytes sent, exactly once) watches it, and
    /// whether its payloads are zeros (destination pages stay without bytes) or random bytes.
    #[test]
    fn small_load_is_checked_and_deterministic() {
        let spec = LoadSpec {
            nodes: 4,
            concurrent: 2,
            transfer_bytes: 256 << 10,
            rounds: 2,
        };
        let p = Profile::forth_arm();
        let fast = run_load(&p, 3, &spec, |_| {}).expect("unchecked run");
        assert_eq!(fast.transfers, 16);
        assert!(
            fast.data_packets >= 16 * (256 << 10) / 256,
            "every payload byte sent at least once"
        );
        for random_sources in [false, true] {
            let opts = LoadOptions {
                check_invariants: true,
                random_sources,
            };
            let checked = run_load_with(&p, 3, &spec, opts, |_| {}).expect("checked run");
            assert_eq!(
                (checked.events, checked.packets, checked.data_packets),
                (fast.events, fast.packets, fast.data_packets),
                "{opts:?}"
            );
        }
    }
}
