//! The receive-side model (spec "Where the schemes' costs come from", docs/aa-receive-side.md):
//! who does the receive-side work in each scheme and what it is made of. These fail if AA
//! and AM are charged the same receive-side work.

use unpinned_aa::profile::AaProfile;

use super::dht::{run_dht, DhtParams};
use super::{RunStats, Scheme, WorldConfig};

/// A small DHT run: 2 nodes of 32 processes, `ops` inserts each, 25% collisions.
fn dht(s: Scheme, ops: u32, compute_ns: u64) -> (RunStats, u64) {
    let prof = AaProfile::cray_xe6();
    let cfg = WorldConfig::new(&prof, 2, s, 5);
    let mut p = DhtParams::new(ops, 0.25, 5);
    p.compute_ns = compute_ns;
    let (st, wl) = run_dht(&prof, cfg, p).unwrap_or_else(|e| panic!("{}: {e}", s.name()));
    (st, wl.total_ops())
}

#[test]
fn computing_processes_do_the_receive_work_only_in_am() {
    let prof = AaProfile::cray_xe6();
    let mem = prof.cpu.memory_access_ns;
    for s in [Scheme::AaPoll, Scheme::AaSp, Scheme::AmOnload { cores: 4 }] {
        let (st, _) = dht(s, 24, 0);
        assert!(st.recv.total_ns() > 0, "{}: its agent handles", s.name());
        assert_eq!(st.recv.app_ns, 0, "{}: an agent does the work", s.name());
    }
    for s in [
        Scheme::Am,
        Scheme::AmExp,
        Scheme::AaInt,
        Scheme::AmInts { batch: 10 },
    ] {
        let (st, _) = dht(s, 24, 0);
        assert!(st.recv.app_ns > 0, "{}", s.name());
        assert_eq!(
            st.recv.app_ns,
            st.recv.total_ns(),
            "{}: all of it on the computing processes",
            s.name()
        );
    }
    let (rma, _) = dht(Scheme::Rma, 24, 0);
    assert_eq!(
        rma.recv,
        Default::default(),
        "RMA: the NIC executes atomics"
    );
    // Per entry, AM takes the message out (header, copy-out, slot release: at least three
    // accesses) where AA reads the entry in place (one access, plus the head once per run).
    let (aa, _) = dht(Scheme::AaPoll, 24, 0);
    let (am, _) = dht(Scheme::Am, 24, 0);
    let aa_x = aa.recv.extract_ns as f64 / aa.handled as f64;
    let am_x = am.recv.extract_ns as f64 / am.handled as f64;
    assert!(
        aa_x <= 2.0 * mem as f64,
        "AA extraction {aa_x} ns per entry"
    );
    assert!(
        am_x >= 3.0 * mem as f64,
        "AM extraction {am_x} ns per message"
    );
    // The handler (the local insert) is the same work in both.
    let per = |st: &RunStats| st.recv.handler_ns as f64 / st.handled as f64;
    assert!(
        (per(&aa) - per(&am)).abs() <= prof.cpu.post_ns as f64,
        "handler per entry: AA {} vs AM {}",
        per(&aa),
        per(&am)
    );
}

#[test]
fn am_inserts_pay_for_receiving_when_the_cpu_is_the_bottleneck() {
    // Computation between inserts makes the processes' CPU time the bottleneck: AM's polls,
    // extraction and handlers come out of it, AA-Poll's do not.
    let rate = |s| {
        let (st, n) = dht(s, 24, 2000);
        n as f64 / st.makespan_ns as f64
    };
    let (aa, sp, am) = (rate(Scheme::AaPoll), rate(Scheme::AaSp), rate(Scheme::Am));
    eprintln!("aa-poll {aa:.4} aa-sp {sp:.4} am {am:.4} inserts/ns");
    assert!(aa > 1.05 * am, "AA-Poll {aa} vs AM {am}");
    assert!(sp > 1.05 * am, "AA-SP {sp} vs AM {am}");
}

#[test]
fn on_the_torus_a_put_is_one_message_and_an_atomic_two() {
    // Spec: on the reference platform a one-directional put is one message, a get or an
    // atomic a request and a response. One node, many inserts per process: the final
    // active flushes (a request and a response to each of at most 32 targets) stay few.
    let prof = AaProfile::cray_xe6();
    let ops = 200;
    let cfg = WorldConfig::new(&prof, 1, Scheme::AaPoll, 5);
    let (aa, wl) = run_dht(&prof, cfg, DhtParams::new(ops, 0.0, 5)).expect("aa-poll");
    let flushes_max = 32 * 32;
    assert!(
        aa.platform.messages <= wl.total_ops() + 2 * flushes_max,
        "{} messages for {} active puts",
        aa.platform.messages,
        wl.total_ops()
    );
    let cfg = WorldConfig::new(&prof, 1, Scheme::Rma, 5);
    let (rma, wl) = run_dht(&prof, cfg, DhtParams::new(ops, 0.0, 5)).expect("rma");
    assert_eq!(
        rma.platform.messages,
        2 * wl.remote_ops,
        "a CAS is a request and a response"
    );
}
