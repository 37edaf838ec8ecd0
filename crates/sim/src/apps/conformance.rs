//! The message-layer conformance scenarios (crates/conformance's [`msg`] module, data only) on
//! the simulator: one message endpoint per rank on the PART engines, the host's memory
//! accesses through [`Host`] (as the application driver does), every rank a peer of every
//! other. The outcome is compared with [`msg::expected`] by the tests; the live runtime's
//! tests run the same scenarios through its `Messenger`.
//!
//! A settle runs the simulator until no event is left, handing every arrival and completion
//! to the endpoint concerned at once (a busy-polling progress engine).

use unpinned_conformance::msg::{
    self, buffer_bytes, digest, payload, Failure, Outcome, RecvDone, Scenario, SendDone, Step,
};
use unpinned_core::api::Perms;
use unpinned_core::memory::Pdid;
use unpinned_core::time::Duration;
use unpinned_msg::{Endpoint, Layout, MsgConfig, MsgEvent, PeerInfo, RecvError};

use super::host::Host;
use crate::memory::Residence;
use crate::world::{Sim, SimConfig, SimError};

pub use msg::scenarios;

const PDID: Pdid = 1;
const MSG_BASE: u64 = 1 << 32;
const SEND_BASE: u64 = 1 << 40;
const RECV_BASE: u64 = 1 << 41;

/// Host copy bandwidth, GB/s: it only sets when things happen, never what (outcomes are
/// timing-free), so any value does.
const COPY_GBPS: f64 = 10.0;

/// Simulated time a settle may take before the run is declared stuck.
const SETTLE_LIMIT: Duration = Duration(10_000_000_000);

/// A receive error as the scenarios name it.
pub fn failure(e: RecvError) -> Failure {
    match e {
        RecvError::Truncated {
            msg_bytes,
            buf_bytes,
        } => Failure::Truncated {
            msg_bytes,
            buf_bytes,
        },
        RecvError::TagMismatch { got, want } => Failure::TagMismatch { got, want },
        RecvError::Transport(e) => Failure::Other(format!("transport: {e:?}")),
    }
}

/// Record one message-layer event of rank `n`, seen by settle `settle`, in `out`: a
/// completion at most once per id, anything else an anomaly. Both drivers' runners record
/// through this (the live one in crates/live/tests/msg_conformance.rs), so they judge events
/// alike.
pub fn record(out: &mut Outcome, n: u32, settle: u32, ev: MsgEvent) {
    match ev {
        MsgEvent::SendDone { id, result } => {
            let done = SendDone {
                settle,
                error: result.err().map(|e| format!("{e:?}")),
            };
            match out.sends.get_mut(id as usize) {
                Some(slot @ None) => *slot = Some(done),
                _ => out
                    .anomalies
                    .push(format!("rank {n}: send {id} done again or unknown")),
            }
        }
        MsgEvent::Recv(d) => {
            let done = RecvDone {
                settle,
                seq: d.seq,
                result: d.result.map_err(failure),
            };
            match out.recvs.get_mut(d.id as usize) {
                Some(slot @ None) => *slot = Some(done),
                _ => out
                    .anomalies
                    .push(format!("rank {n}: recv {} done again or unknown", d.id)),
            }
        }
        MsgEvent::PeerFailed { peer, error } => out
            .anomalies
            .push(format!("rank {n}: pair with {peer} failed: {error:?}")),
    }
}

/// Addresses of the sends' and receives' buffers: each its own pages, one after the other.
fn buffers(lens: impl Iterator<Item = u64>, base: u64) -> Vec<u64> {
    let mut at = base;
    lens.map(|len| {
        let a = at;
        at += buffer_bytes(len);
        a
    })
    .collect()
}

/// Run `s` on the simulator configured by `cfg` (its node count is the scenario's ranks).
pub fn run_sim(s: &Scenario, cfg: &SimConfig) -> Result<Outcome, SimError> {
    let mut scfg = cfg.clone();
    scfg.nodes = s.ranks;
    let mut sim = Sim::new(scfg);
    let mcfg = MsgConfig {
        eager_max_bytes: s.layer.eager_max_bytes,
        slots_per_peer: s.layer.slots_per_peer,
    };
    let n = s.ranks;
    let peers: Vec<Vec<u32>> = (0..n)
        .map(|r| (0..n).filter(|&p| p != r).collect())
        .collect();
    let layout = Layout::new(&mcfg, MSG_BASE, n - 1);
    let send_at = buffers(s.sends.iter().map(|q| q.len), SEND_BASE);
    let recv_at = buffers(s.recvs.iter().map(|r| r.len), RECV_BASE);
    let mut msg_keys = Vec::new();
    for r in 0..n {
        // The message region: nothing touched yet.
        sim.map(r, PDID, MSG_BASE, layout.region_bytes(), Residence::Absent);
        msg_keys.push(sim.expose(r, PDID, MSG_BASE, layout.region_bytes(), Perms::RW));
    }
    // Send buffers: written by the program, so present.
    for (q, &at) in s.sends.iter().zip(&send_at) {
        sim.map(q.src, PDID, at, buffer_bytes(q.len), Residence::Present);
        sim.node_mut(q.src)
            .mem
            .host_write(PDID, at, &payload(q.seed, q.len));
    }
    for (q, &at) in s.recvs.iter().zip(&recv_at) {
        let residence = if q.present {
            Residence::Present
        } else {
            Residence::Absent
        };
        sim.map(q.rank, PDID, at, buffer_bytes(q.len), residence);
    }
    let mut eps = Vec::new();
    for r in 0..n {
        // Every send buffer of the rank, read-only, for the peers' rendezvous reads.
        let buf_key = sim.expose(r, PDID, SEND_BASE, RECV_BASE - SEND_BASE, Perms::R);
        let infos = peers[r as usize]
            .iter()
            .map(|&p| PeerInfo {
                node: p,
                pdid: PDID,
                region_base: MSG_BASE,
                peer_peers: n - 1,
                index_at_peer: peers[p as usize].binary_search(&r).expect("all peers") as u32,
                msg_rkey: msg_keys[p as usize],
            })
            .collect();
        let ep = Endpoint::new(r, PDID, mcfg, MSG_BASE, buf_key, infos).map_err(|e| SimError {
            what: format!("scenario {}: {e}", s.name),
            seed: cfg.seed,
            at_us: 0.0,
        })?;
        eps.push(ep);
    }
    let mut run = Run {
        sim,
        eps,
        cpu: cfg.profile.cpu.clone(),
        settle: 0,
        seed: cfg.seed,
        out: Outcome {
            sends: vec![None; s.sends.len()],
            recvs: vec![None; s.recvs.len()],
            buffers: Vec::new(),
            anomalies: Vec::new(),
        },
    };
    for step in s.steps.iter().copied().chain([Step::Settle]) {
        match step {
            Step::Send(i) => {
                let q = s.sends[i];
                let (_, ep) = run.host(q.src);
                if let Err(e) = ep.isend(i as u64, q.dst, send_at[i], q.len, q.tag) {
                    run.out.anomalies.push(format!("send {i} refused: {e}"));
                }
                run.pump(q.src);
            }
            Step::Recv(i) => {
                let q = s.recvs[i];
                let (mut host, ep) = run.host(q.rank);
                let posted = ep.irecv(i as u64, q.from, recv_at[i], q.len, q.tag);
                ep.poll_node(q.from, &mut host);
                if let Err(e) = posted {
                    run.out.anomalies.push(format!("recv {i} refused: {e}"));
                }
                run.pump(q.rank);
            }
            Step::Settle => {
                run.settle_all()?;
                run.settle += 1;
            }
        }
    }
    for (q, &at) in s.recvs.iter().zip(&recv_at) {
        let mut buf = vec![0u8; buffer_bytes(q.len) as usize];
        run.sim.node(q.rank).mem.host_read(PDID, at, &mut buf);
        run.out.buffers.push(digest(&buf));
    }
    Ok(run.out)
}

/// A scenario in progress.
struct Run {
    sim: Sim,
    eps: Vec<Endpoint>,
    cpu: unpinned_core::profile::CpuProfile,
    /// The settle the events seen now count for.
    settle: u32,
    /// The simulator's seed (for errors).
    seed: u64,
    out: Outcome,
}

impl Run {
    fn host(&mut self, n: u32) -> (Host<'_>, &mut Endpoint) {
        let host = Host {
            mem: &mut self.sim.node_mut(n).mem,
            pdid: PDID,
            cpu: &self.cpu,
            copy_gbps: COPY_GBPS,
            spent: Duration::ZERO,
            minor_faults: 0,
            copy_bytes: true,
        };
        (host, &mut self.eps[n as usize])
    }

    /// Post the endpoint's work requests now and record its events.
    fn pump(&mut self, n: u32) {
        let now = self.sim.now();
        loop {
            let (mut host, ep) = self.host(n);
            let Some(wr) = ep.poll_post(&mut host) else {
                break;
            };
            self.sim.post(now, n, wr);
        }
        let settle = self.settle;
        while let Some(ev) = self.eps[n as usize].poll_event() {
            record(&mut self.out, n, settle, ev);
        }
    }

    /// Run until no event is left.
    fn settle_all(&mut self) -> Result<(), SimError> {
        let limit = self.sim.now() + SETTLE_LIMIT;
        while let Some(t) = self.sim.next_event_at() {
            if t > limit {
                return Err(SimError {
                    what: format!("settle {} did not end", self.settle),
                    seed: self.seed,
                    at_us: self.sim.now().as_us_f64(),
                });
            }
            self.sim.step()?;
            if let Some((src, n)) = self.sim.take_arrival() {
                let (mut host, ep) = self.host(n);
                ep.poll_node(src, &mut host);
                self.pump(n);
            }
            for rec in self.sim.forget_completed() {
                let Some(c) = rec.completion else { continue };
                let (mut host, ep) = self.host(rec.node);
                ep.handle_completion(&c, &mut host);
                self.pump(rec.node);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_core::memory::PAGE_BYTES;

    #[test]
    fn buffers_take_whole_pages_each() {
        let at = buffers([0, 1, PAGE_BYTES, PAGE_BYTES + 1].into_iter(), 0);
        assert_eq!(at, [0, PAGE_BYTES, 2 * PAGE_BYTES, 3 * PAGE_BYTES]);
    }
}
