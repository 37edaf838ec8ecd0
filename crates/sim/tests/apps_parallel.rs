//! The parallel (window-synchronous) application run: every thread count gives the same run,
//! event for event, and a partitioning that the run cannot use is a typed error.

use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::Profile;
use unpinned_core::time::Duration;
use unpinned_msg::MsgConfig;
use unpinned_sim::apps::{run_app, AppResult, AppSimConfig, BufferMode};
use unpinned_sim::{FaultConfig, Sim, SimConfig, Topology};
use unpinned_traffic::{model, NodeRates};

fn cfg(nodes: u32, topology: Topology, mode: BufferMode, threads: usize) -> AppSimConfig {
    let mut profile = Profile::forth_arm();
    profile.engine.packet_bytes = 4096;
    AppSimConfig {
        sim: SimConfig {
            profile,
            policy: PageInPolicy::Pia,
            send_err: true,
            seed: 7,
            nodes,
            topology,
            faults: FaultConfig::NONE,
            check_invariants: false,
            trace: false,
        },
        mode,
        msg: MsgConfig::default(),
        copy_gbps: 2.0,
        copy_bytes: false,
        evict_every: 0,
        time_limit: Duration::from_us(100_000_000),
        threads,
    }
}

/// Everything a run measured except how it was run (threads, windows, parks, queue length).
fn outcome(r: &AppResult) -> impl PartialEq + std::fmt::Debug {
    (
        r.time_s.to_bits(),
        (r.sends, r.bytes, r.recvs, r.msg_errors),
        (r.fault_interrupts, r.errs, r.minor_faults),
        (r.events, r.stale_timers),
    )
}

#[test]
fn thread_counts_give_the_same_run() {
    let nodes = 8;
    let iters = [("lammps", 0..2), ("hpl", 0..1), ("hpcg", 0..1)];
    for (app, it) in iters {
        for topology in [
            Topology::Torus3d { x: 2, y: 2, z: 2 },
            Topology::FatTree { down: 4 },
        ] {
            for mode in [BufferMode::Part, BufferMode::PreTouch] {
                let m = model(app, nodes, NodeRates::default()).unwrap();
                let one = run_app(&cfg(nodes, topology, mode, 1), m.as_ref(), it.clone()).unwrap();
                assert_eq!(one.threads, 1);
                assert!(one.windows > 0 && one.events > 0);
                assert_eq!(one.recvs, one.sends, "{app}: every message received");
                for threads in [2, 3] {
                    let r = run_app(&cfg(nodes, topology, mode, threads), m.as_ref(), it.clone())
                        .unwrap();
                    assert_eq!(r.threads, threads as u32);
                    assert_eq!(
                        outcome(&r),
                        outcome(&one),
                        "{app} {topology:?} {mode:?}: {threads} threads vs 1"
                    );
                    assert_eq!(r.windows, one.windows, "windows depend on the events only");
                }
            }
        }
    }
}

#[test]
fn more_threads_than_nodes_use_one_per_node() {
    let m = model("lammps", 2, NodeRates::default()).unwrap();
    let c = cfg(2, Topology::Uniform { hops: 1 }, BufferMode::Part, 16);
    let r = run_app(&c, m.as_ref(), 0..2).unwrap();
    assert_eq!(r.threads, 2);
    let one = run_app(
        &cfg(2, Topology::Uniform { hops: 1 }, BufferMode::Part, 1),
        m.as_ref(),
        0..2,
    )
    .unwrap();
    assert_eq!(outcome(&r), outcome(&one));
}

#[test]
fn runs_that_need_one_global_state_use_one_partition() {
    let m = model("lammps", 4, NodeRates::default()).unwrap();
    let mut c = cfg(4, Topology::Uniform { hops: 1 }, BufferMode::Part, 2);
    c.sim.check_invariants = true;
    let r = run_app(&c, m.as_ref(), 0..1).unwrap();
    assert_eq!(r.threads, 1);
}

#[test]
fn bad_splits_are_typed_errors() {
    let c = cfg(4, Topology::Uniform { hops: 1 }, BufferMode::Part, 1).sim;
    for starts in [&[][..], &[1], &[0, 0], &[0, 4], &[0, 3, 2]] {
        let e = Sim::new(c.clone()).split(starts).err().expect("refused");
        assert!(e.what.contains("cannot split"), "{}", e.what);
    }
    let parts = Sim::new(c.clone()).split(&[0, 1, 3]).unwrap();
    let ranges: Vec<_> = parts.iter().map(|s| s.node_range()).collect();
    assert_eq!(ranges, vec![0..1, 1..3, 3..4]);
    let mut c2 = c;
    c2.check_invariants = true;
    assert!(Sim::new(c2).split(&[0, 2]).is_err());
}

#[test]
fn lookahead_is_the_closest_pair_delay() {
    let c = cfg(
        8,
        Topology::Torus3d { x: 2, y: 2, z: 2 },
        BufferMode::Part,
        1,
    )
    .sim;
    let p = c.profile.net.clone();
    let ser = unpinned_core::time::serialization(p.header_bytes as usize, p.link_gbps);
    let want = p.ni_packet_ns + ser.0 + p.hop_latency_ns;
    assert_eq!(Sim::new(c.clone()).lookahead().0, want);
    let mut f = c;
    f.topology = Topology::FatTree { down: 4 };
    assert_eq!(Sim::new(f).lookahead().0, want + p.hop_latency_ns);
}
