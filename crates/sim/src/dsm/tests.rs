//! Replay tests on synthetic traces (app traces are replayed in the experiments' tests).

use unpinned_dsm::trace::{Trace, TraceHeader, TraceOp};

use super::*;

fn header(ranks: u32, threads: u32, minipages: u32) -> TraceHeader {
    TraceHeader {
        app: "synthetic".into(),
        ranks,
        threads_per_rank: threads,
        minipage_bytes: 4096,
        minipages,
    }
}

fn cfg(context: Context) -> ReplayConfig {
    ReplayConfig {
        context,
        load_procs_per_node: 0,
    }
}

/// Every worker computes, faults on shared and own minipages, takes a lock, and meets the
/// others at barriers: a bit of everything, deterministic.
fn mixed(ranks: u32, threads: u32) -> Trace {
    let mps = 4 * ranks * threads;
    let mut t = Trace::new(header(ranks, threads, mps));
    let workers = (ranks * threads) as usize;
    for (w, ops) in t.threads.iter_mut().enumerate() {
        for round in 0..3u32 {
            ops.push(TraceOp::Compute {
                ns: 20_000 + 1_000 * w as u64,
            });
            ops.push(TraceOp::Fault {
                mp: (w as u32 * 4 + round) % mps,
                write: true,
            });
            ops.push(TraceOp::Fault {
                mp: ((w + 1) % workers) as u32 * 4,
                write: false,
            });
            ops.push(TraceOp::Lock { id: round });
            ops.push(TraceOp::Fault {
                mp: mps - 1,
                write: true,
            });
            ops.push(TraceOp::Compute { ns: 3_000 });
            ops.push(TraceOp::Unlock { id: round });
            ops.push(TraceOp::Barrier);
        }
    }
    t
}

#[test]
fn replay_reproduces_the_trace_totals_in_every_context() {
    let p = DsmProfile::dsm_ib1();
    for (ranks, threads) in [(1, 1), (1, 2), (3, 1), (3, 2), (5, 2)] {
        let trace = mixed(ranks, threads);
        let totals = trace.totals();
        for ctx in Context::ALL {
            let s = replay(&p, &trace, &cfg(ctx))
                .unwrap_or_else(|e| panic!("{ranks}x{threads} {ctx:?}: {e}"));
            assert_eq!(s.faults, totals.faults, "{ctx:?}");
            assert_eq!(s.barriers, totals.barriers);
            assert_eq!(s.locks, totals.locks);
            assert_eq!(s.unlocks, totals.unlocks);
            assert_eq!(
                s.barrier_episodes,
                totals.barriers / (ranks * threads) as u64
            );
            assert!(s.requests <= s.faults);
            if ranks == 1 {
                assert_eq!(
                    (s.requests, s.messages),
                    (0, 0),
                    "one node: every minipage is local"
                );
            } else {
                assert!(s.requests > 0 && s.data_bytes > 0);
            }
        }
    }
}

#[test]
fn replay_is_deterministic() {
    let p = DsmProfile::dsm_ib1();
    let trace = mixed(4, 2);
    for ctx in Context::ALL {
        let a = replay(&p, &trace, &cfg(ctx)).unwrap();
        let b = replay(&p, &trace, &cfg(ctx)).unwrap();
        assert_eq!(a, b, "{ctx:?}");
    }
}

#[test]
fn computation_is_scaled_and_shared_with_the_load() {
    let p = DsmProfile::dsm_ib1();
    let mut t = Trace::new(header(1, 2, 1));
    t.threads[0] = vec![TraceOp::Compute { ns: 1_000_000 }];
    t.threads[1] = vec![TraceOp::Compute { ns: 1_000_000 }];
    let s = replay(&p, &t, &cfg(Context::Interrupt)).unwrap();
    assert_eq!(
        s.time_ns, 3_340_000,
        "1 ms x cpu_scale 3.34 on two idle CPUs"
    );
    // Two threads and one CPU-bound process on two CPUs: each thread gets 2/3 of a CPU.
    let s = replay(
        &p,
        &t,
        &ReplayConfig {
            context: Context::Interrupt,
            load_procs_per_node: 1,
        },
    )
    .unwrap();
    assert_eq!(s.time_ns, 5_010_000);
}

#[test]
fn one_remote_write_fault_costs_what_the_calibration_says() {
    // Node 1 writes minipage 0 (managed and held by node 0): fault entry 5, post 2, SEND 22.5
    // to the manager, which is also the server: interrupt 10, protection change 0.9 (drops its
    // copy), post 2 of the data: RDMA write 8.5 + 4 KiB at 103 MB/s (39.8) > SEND 22.5, then
    // the requestor's interrupt 10, protection 0.9, wake 0.7: 91.3 us (+ the ack, after).
    let p = DsmProfile::dsm_ib1();
    let mut t = Trace::new(header(2, 1, 1));
    t.threads[1] = vec![TraceOp::Fault { mp: 0, write: true }];
    let s = replay(&p, &t, &cfg(Context::Interrupt)).unwrap();
    let expect_us = 5.0 + 2.0 + 22.5 + 10.0 + 0.9 + 2.0 + 8.5 + 39.767 + 10.0 + 0.9 + 0.7;
    assert_eq!(s.time_ns, (expect_us * 1e3f64).round() as u64);
    assert_eq!((s.requests, s.data_bytes), (1, 4096));
    // The user-level baseline pays the signal (5) at both ends, mprotect (0.7 + 0.9 + 1) instead
    // of 0.9 twice, and the wake-up's extra microsecond: 5 + 5 + 1.7 + 1.7 + 1 = 14.4 us more.
    let u = replay(&p, &t, &cfg(Context::Signal)).unwrap();
    assert_eq!(u.time_ns - s.time_ns, 14_400);
    // Deferred: two deferral delays (10 us each).
    let d = replay(&p, &t, &cfg(Context::Deferred)).unwrap();
    assert_eq!(d.time_ns - s.time_ns, 20_000);
}

#[test]
fn polling_sees_the_reply_at_the_next_poll_and_saves_the_interrupt() {
    let p = DsmProfile::dsm_ib1();
    let mut t = Trace::new(header(2, 1, 1));
    t.threads[1] = vec![TraceOp::Fault { mp: 0, write: true }];
    // Node 0 has nobody waiting (its worker is done): it takes an interrupt. Node 1's thread
    // waits from 5 us (after the fault entry) and polls every 7 us.
    let s = replay(&p, &t, &cfg(Context::Polling)).unwrap();
    let i = replay(&p, &t, &cfg(Context::Interrupt)).unwrap();
    assert!(
        s.time_ns < i.time_ns,
        "polling {} vs interrupt {}",
        s.time_ns,
        i.time_ns
    );
    let data_at = 5_000 + 2_000 + 22_500 + 10_000 + 900 + 2_000 + 8_500 + 39_767;
    let seen = 5_000 + (data_at - 5_000u64).div_ceil(7_000) * 7_000;
    assert_eq!(s.time_ns, seen + 900 + 700);
}

#[test]
fn bad_traces_are_typed_errors() {
    let p = DsmProfile::dsm_ib1();
    let mut t = Trace::new(header(2, 1, 2));
    t.threads[0] = vec![TraceOp::Unlock { id: 3 }];
    assert!(matches!(
        replay(&p, &t, &cfg(Context::Interrupt)),
        Err(ReplayError::BadTrace(_))
    ));
    t.threads[0] = vec![TraceOp::Barrier];
    assert!(matches!(
        replay(&p, &t, &cfg(Context::Interrupt)),
        Err(ReplayError::BadTrace(_))
    ));
    t.threads[0] = vec![TraceOp::Fault {
        mp: 2,
        write: false,
    }];
    assert!(matches!(
        replay(&p, &t, &cfg(Context::Interrupt)),
        Err(ReplayError::BadTrace(_))
    ));
    t.threads[0] = vec![TraceOp::Lock { id: 1 }];
    assert!(matches!(
        replay(&p, &t, &cfg(Context::Interrupt)),
        Err(ReplayError::BadTrace(_))
    ));
    t.threads[0] = vec![
        TraceOp::Compute { ns: u64::MAX / 2 },
        TraceOp::Compute { ns: u64::MAX / 2 },
    ];
    assert!(matches!(
        replay(&p, &t, &cfg(Context::Interrupt)),
        Err(ReplayError::BadTrace(_))
    ));
    t.threads.pop();
    assert!(matches!(
        replay(&p, &t, &cfg(Context::Interrupt)),
        Err(ReplayError::BadTrace(_))
    ));
    let mut bad = DsmProfile::dsm_ib1();
    bad.cpu.cpus_per_node = 0;
    assert!(replay(&bad, &mixed(2, 1), &cfg(Context::Interrupt)).is_err());
}
