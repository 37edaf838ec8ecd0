//! Applications on the simulator: the calibrated models run to completion over the message
//! layer, PART pays only first-use faults, pre-touch none.

use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::Profile;
use unpinned_core::time::Duration;
use unpinned_msg::MsgConfig;
use unpinned_sim::apps::{run_app, AppSimConfig, BufferMode};
use unpinned_sim::{FaultConfig, SimConfig, Topology};
use unpinned_traffic::{model, totals, NodeRates};

fn cfg(nodes: u32, mode: BufferMode, seed: u64) -> AppSimConfig {
    let mut profile = Profile::forth_arm();
    profile.engine.packet_bytes = 4096;
    AppSimConfig {
        sim: SimConfig {
            profile,
            policy: PageInPolicy::Pia,
            send_err: true,
            seed,
            nodes,
            topology: Topology::Uniform { hops: 1 },
            faults: FaultConfig::NONE,
            check_invariants: false,
            trace: false,
        },
        mode,
        msg: MsgConfig::default(),
        copy_gbps: 2.0,
        copy_bytes: true,
        evict_every: 0,
        time_limit: Duration::from_us(100_000_000),
        threads: 1,
    }
}

#[test]
fn every_app_runs_in_both_modes() {
    for app in ["lammps", "hpl", "hpcg"] {
        for nodes in [1, 2, 4] {
            let m = model(app, nodes, NodeRates::default()).unwrap();
            let iters = 0..3;
            let want = totals(m.as_ref(), iters.clone());
            let part =
                run_app(&cfg(nodes, BufferMode::Part, 1), m.as_ref(), iters.clone()).unwrap();
            let pre = run_app(
                &cfg(nodes, BufferMode::PreTouch, 1),
                m.as_ref(),
                iters.clone(),
            )
            .unwrap();
            println!("{app} {nodes}: part {:.6} s ({} irq, {} errs, {} minor), pretouch {:.6} s, {} sends {} bytes, {} events",
                part.time_s, part.fault_interrupts, part.errs, part.minor_faults, pre.time_s, part.sends, part.bytes, part.events);
            for r in [&part, &pre] {
                assert_eq!(
                    (r.sends, r.bytes),
                    (want.sends, want.bytes),
                    "{app} {nodes}: every send call made"
                );
                assert_eq!(r.recvs, r.sends, "{app} {nodes}: every message received");
                assert_eq!(r.msg_errors, 0);
            }
            assert_eq!(
                pre.fault_interrupts + pre.minor_faults,
                0,
                "pre-touch: no faults"
            );
            if nodes > 1 {
                assert!(
                    part.fault_interrupts > 0,
                    "{app} {nodes}: first use faults under PART"
                );
                assert!(part.time_s >= pre.time_s, "{app} {nodes}: faults cost time");
            }
        }
    }
}

#[test]
fn replay_of_a_recorded_trace_gives_the_same_totals_and_time() {
    use unpinned_traffic::trace::{read_jsonl, to_jsonl_string, Replay};
    for app in ["lammps", "hpl", "hpcg"] {
        let m = model(app, 4, NodeRates::default()).unwrap();
        let progs: Vec<_> = (0..4)
            .map(|r| unpinned_traffic::program(m.as_ref(), r, 0..2))
            .collect();
        let replay = Replay {
            name: "trace",
            programs: read_jsonl(to_jsonl_string(&progs).as_bytes()).unwrap(),
        };
        let a = run_app(&cfg(4, BufferMode::Part, 3), m.as_ref(), 0..2).unwrap();
        let b = run_app(&cfg(4, BufferMode::Part, 3), &replay, 0..1).unwrap();
        assert_eq!(
            (a.sends, a.bytes, a.recvs),
            (b.sends, b.bytes, b.recvs),
            "{app}: same totals"
        );
        assert_eq!(
            (a.time_s, a.fault_interrupts, a.errs),
            (b.time_s, b.fault_interrupts, b.errs),
            "{app}: same run"
        );
    }
}

#[test]
fn goal_schedule_replays() {
    let text = "num_ranks 3\nrank 0 {\na: calc 2000\nb: send 20000b to 1 tag 1\nc: send 100b to 2 tag 2\nb requires a\nc requires a\n}\nrank 1 {\na: recv 20000b from 0 tag 1\nb: send 20000b to 2 tag 3\nb requires a\n}\nrank 2 {\na: recv 100b from 0 tag 2\nb: recv 20000b from 1 tag 3\n}\n";
    let programs = unpinned_traffic::goal::read_goal(text).unwrap();
    let replay = unpinned_traffic::trace::Replay {
        name: "goal",
        programs,
    };
    let r = run_app(&cfg(3, BufferMode::Part, 1), &replay, 0..1).unwrap();
    assert_eq!((r.sends, r.bytes, r.recvs, r.msg_errors), (3, 40100, 3, 0));
    assert!(r.time_s > 2e-6, "after the compute phase");
}

#[test]
fn memory_pressure_faults_again() {
    let m = model("lammps", 4, NodeRates::default()).unwrap();
    let mut c = cfg(4, BufferMode::Part, 1);
    let calm = run_app(&c, m.as_ref(), 0..6).unwrap();
    c.evict_every = 2;
    let pressed = run_app(&c, m.as_ref(), 0..6).unwrap();
    assert!(
        pressed.fault_interrupts + pressed.minor_faults > calm.fault_interrupts + calm.minor_faults,
        "reclaimed pages fault again"
    );
    assert!(pressed.time_s > calm.time_s);
    assert_eq!((pressed.recvs, pressed.msg_errors), (calm.recvs, 0));
}
