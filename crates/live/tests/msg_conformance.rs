//! The message-layer conformance scenarios (crates/conformance's `msg` module) on the live
//! runtime: one [`Runtime`] per rank, all in this process over the in-memory transport, one
//! [`Messenger`] each, real memory with real page faults. The outcome must be the expected one
//! computed from the scenario alone (the simulator's test checks the same expectation,
//! crates/sim/tests/msg_conformance.rs).
//!
//! | scenario              | live                                                              |
//! |-----------------------|-------------------------------------------------------------------|
//! | send buffer           | a vector of the payload (present)                                 |
//! | receive buffer        | its own anonymous mapping, [`buffer_bytes`] long; `present`: every page touched before posting, else none (checked) |
//! | settle                | poll every rank until every event the expectation has by then arrived, then a grace period to catch any it does not have |
//!
//! A live settle cannot see that nothing more can happen, so it waits for what the
//! expectation says must have happened (for at most 30 s) and then keeps polling a little: an
//! event that comes early or that should never come is recorded with the settle it shows up
//! in, and the comparison fails on it.

use std::time::{Duration, Instant};

use unpinned_conformance::msg::{
    buffer_bytes, differences, digest, expected, payload, scenarios, Outcome, Scenario, Step,
};
use unpinned_live::msg::Messenger;
use unpinned_live::transport::mem::network;
use unpinned_live::{Config, Runtime};
use unpinned_msg::MsgConfig;
use unpinned_os::mapping::Mapping;
use unpinned_sim::apps::conformance::record;

/// Polling after the expected events of a settle, to catch unexpected ones.
const GRACE: Duration = Duration::from_millis(20);
/// The same after the last settle.
const FINAL_GRACE: Duration = Duration::from_millis(200);
/// Longest wait for the expected events of one settle.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);

/// Record the events of every rank's messenger as seen by settle `settle`.
fn poll_all(ms: &mut [Messenger], settle: u32, out: &mut Outcome) {
    for (n, m) in ms.iter_mut().enumerate() {
        loop {
            let ev = match m.poll_event() {
                Ok(Some(ev)) => ev,
                Ok(None) => break,
                Err(e) => {
                    out.anomalies
                        .push(format!("rank {n}: progress failed: {e}"));
                    break;
                }
            };
            record(out, n as u32, settle, ev);
        }
    }
}

/// Run scenario `s` on live runtimes and report its outcome.
fn run_live(s: &Scenario) -> Outcome {
    let want = expected(s);
    let cfg = |rank| {
        let mut c = Config::new(rank, s.ranks);
        c.timeouts.op_ms = 60_000;
        c
    };
    let mcfg = MsgConfig {
        eager_max_bytes: s.layer.eager_max_bytes,
        slots_per_peer: s.layer.slots_per_peer,
    };
    let send_bufs: Vec<Vec<u8>> = s.sends.iter().map(|q| payload(q.seed, q.len)).collect();
    let recv_bufs: Vec<Mapping> = s
        .recvs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let m = Mapping::anon(buffer_bytes(r.len) as usize).expect("receive buffer");
            if r.present {
                for p in (0..m.len()).step_by(4096) {
                    // SAFETY: inside our new mapping, which nothing else accesses yet; volatile
                    // so that the touch is not elided (the byte stays zero).
                    unsafe { m.ptr().add(p).write_volatile(0) };
                }
            }
            let want = if r.present { m.len() / 4096 } else { 0 };
            assert_eq!(m.present_pages(), want, "receive {i}: pages present");
            m
        })
        .collect();
    let rts: Vec<Runtime> = network(s.ranks, cfg(0).max_packet())
        .into_iter()
        .enumerate()
        .map(|(rank, t)| Runtime::new(cfg(rank as u32), Box::new(t)).expect("live runtime"))
        .collect();
    let mut ms: Vec<Messenger> = rts
        .iter()
        .map(|rt| Messenger::new(rt, mcfg).expect("messenger"))
        .collect();
    let regions: Vec<_> = ms.iter().map(|m| m.region()).collect();
    for m in &mut ms {
        m.connect(&regions).expect("connect");
    }
    let mut out = Outcome {
        sends: vec![None; s.sends.len()],
        recvs: vec![None; s.recvs.len()],
        buffers: Vec::new(),
        anomalies: Vec::new(),
    };
    let settles = s.steps.iter().filter(|&&t| t == Step::Settle).count() as u32;
    let mut settle = 0u32;
    for step in s.steps.iter().copied().chain([Step::Settle]) {
        match step {
            Step::Send(i) => {
                let q = s.sends[i];
                let b = &send_bufs[i];
                // SAFETY: the payload vectors outlive the runtimes and are never modified.
                if let Err(e) =
                    unsafe { ms[q.src as usize].isend(i as u64, q.dst, b.as_ptr(), b.len(), q.tag) }
                {
                    out.anomalies.push(format!("send {i} refused: {e}"));
                }
            }
            Step::Recv(i) => {
                let r = s.recvs[i];
                let m = &recv_bufs[i];
                // SAFETY: the mapping outlives the runtimes; we read it only after they are gone.
                if let Err(e) = unsafe {
                    ms[r.rank as usize].irecv(i as u64, r.from, m.ptr(), r.len as usize, r.tag)
                } {
                    out.anomalies.push(format!("recv {i} refused: {e}"));
                }
            }
            Step::Settle => {
                let due = |o: &Outcome| {
                    let sends = want.sends.iter().zip(&o.sends);
                    let recvs = want.recvs.iter().map(|d| d.as_ref().map(|d| d.settle));
                    sends
                        .filter(|(w, _)| w.as_ref().is_some_and(|w| w.settle <= settle))
                        .all(|(_, g)| g.is_some())
                        && recvs
                            .zip(&o.recvs)
                            .filter(|(w, _)| w.is_some_and(|w| w <= settle))
                            .all(|(_, g)| g.is_some())
                };
                let deadline = Instant::now() + SETTLE_LIMIT;
                while !due(&out) && Instant::now() < deadline {
                    poll_all(&mut ms, settle, &mut out);
                    std::thread::yield_now();
                }
                let grace = if settle == settles {
                    FINAL_GRACE
                } else {
                    GRACE
                };
                let end = Instant::now() + grace;
                while Instant::now() < end {
                    poll_all(&mut ms, settle, &mut out);
                    std::thread::yield_now();
                }
                settle += 1;
            }
        }
    }
    drop(ms);
    drop(rts);
    out.buffers = recv_bufs
        .iter()
        // SAFETY: the runtimes are gone: nothing writes the mappings any more.
        .map(|m| digest(unsafe { m.as_slice() }))
        .collect();
    out
}

#[test]
fn live_matches_the_expected_message_outcome() {
    for s in scenarios() {
        let diff = differences(&run_live(&s), &expected(&s));
        assert!(diff.is_empty(), "scenario {}:\n{}", s.name, diff.join("\n"));
    }
}
