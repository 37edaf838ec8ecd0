//! Scenario tests of odp.md's "pitfall" section on the RC simulator, the conformance of the
//! pure protocol (loss model off), the software-timer fix, and retries running out under
//! total loss.

use unpinned_core::api::Perms;
use unpinned_core::time::{Duration, Instant};
use unpinned_ib::ack_timer::t_tr;
use unpinned_ib::{FixConfig, IbOp, MrAttrs, Psn, QpAttrs, Region, SendWr, VendorProfile};
use unpinned_sim::rc::bench::{
    read_wr, run_reads, setup_reads, OdpSide, ReadBench, ReadResult, CLIENT_BUF, SERVER_BUF,
};

fn cx4() -> VendorProfile {
    VendorProfile::builtin("connectx4")
}

fn reads(odp: OdpSide, n: u32, interval_us: u64, loss: bool, seed: u64) -> ReadResult {
    let mut b = ReadBench::new(cx4(), odp, n, Duration::from_us(interval_us), seed);
    b.loss_model = Some(loss);
    let r = run_reads(&b);
    assert!(
        r.all_ok,
        "{odp:?} n={n} iv={interval_us}: every READ completes with the right bytes"
    );
    r
}

fn stall_bounds() -> (f64, f64) {
    let t = t_tr(16).unwrap().as_us_f64();
    (t, 2.0 * t)
}

#[test]
fn two_reads_stall_for_an_ack_timeout_with_remote_local_and_both() {
    let (lo, hi) = stall_bounds();
    // READ 2 posted inside the fault wait: remote (RNR wait 3.84 ms), local (~0.5 ms fault),
    // both (RNR wait then local fault).
    for (odp, iv) in [
        (OdpSide::Remote, 3000),
        (OdpSide::Local, 300),
        (OdpSide::Both, 3000),
    ] {
        for seed in 0..5 {
            let r = reads(odp, 2, iv, true, seed);
            assert!(r.timed_out, "{odp:?} seed {seed}");
            assert_eq!(r.client.timeouts, 1);
            assert!(r.server.loss_model_discards >= 1);
            let t = r.exec_time.as_us_f64();
            assert!(
                t > lo && t < hi + 10_000.0,
                "{odp:?}: stall {t} us within (T_tr, 2 T_tr] plus the fault wait"
            );
        }
    }
}

#[test]
fn one_read_or_a_second_read_after_the_wait_does_not_stall() {
    for odp in [OdpSide::Remote, OdpSide::Local, OdpSide::Both] {
        let r = reads(odp, 1, 0, true, 1);
        assert!(
            !r.timed_out && r.exec_time < Duration::from_ms(10),
            "{odp:?} one READ: {:?}",
            r.exec_time
        );
        let r = reads(odp, 2, 9000, true, 1);
        assert!(!r.timed_out, "{odp:?}: READ 2 after the wait");
    }
}

#[test]
fn a_third_read_posted_after_the_wait_recovers_by_sequence_nak() {
    // READ 3 arrives out of sequence after the lost READ 2: NAK, go-back-N, no timeout.
    let r = reads(OdpSide::Remote, 3, 3000, true, 2);
    assert!(!r.timed_out);
    assert!(r.client.seq_naks_received >= 1);
    assert!(r.exec_time < Duration::from_ms(10));
    let r = reads(OdpSide::Both, 3, 3000, true, 2);
    assert!(!r.timed_out);
    // All three inside the wait: the burst loses READ 2 and READ 3; only the timeout helps.
    let r = reads(OdpSide::Remote, 3, 1000, true, 2);
    assert!(r.timed_out);
}

#[test]
fn the_pure_protocol_never_waits_for_a_hardware_timeout() {
    for odp in [OdpSide::Remote, OdpSide::Local, OdpSide::Both] {
        for n in [1, 2, 3, 4] {
            for iv in [0, 50, 300, 500, 1000, 3000, 5000] {
                for rnr in [10, 640, 1280] {
                    let mut b =
                        ReadBench::new(cx4(), odp, n, Duration::from_us(iv), iv + u64::from(n));
                    b.loss_model = Some(false);
                    b.min_rnr_delay = Duration::from_us(rnr);
                    let r = run_reads(&b);
                    assert!(r.all_ok);
                    assert_eq!(r.client.timeouts, 0, "{odp:?} n={n} iv={iv} rnr={rnr}");
                    assert!(
                        r.exec_time < Duration::from_ms(30),
                        "{odp:?} n={n} iv={iv}: {:?}",
                        r.exec_time
                    );
                }
            }
        }
    }
}

#[test]
fn stall_happens_with_implicit_odp_and_whatever_the_page_sharing() {
    let mut b = ReadBench::new(cx4(), OdpSide::Remote, 2, Duration::from_ms(3), 4);
    b.implicit = true;
    assert!(run_reads(&b).timed_out, "implicit ODP");
    // READ 2 on another page than READ 1 (only READ 1's page faults first, READ 2's later).
    let b = ReadBench::new(cx4(), OdpSide::Remote, 2, Duration::from_ms(3), 4);
    let (mut sim, qc, rkey) = setup_reads(&b);
    sim.post(Instant::ZERO, 0, qc, read_wr(0, rkey));
    let mut far = read_wr(1, rkey);
    far.remote_addr = SERVER_BUF + 4096;
    far.local_addr = CLIENT_BUF + 4096;
    sim.post(Instant::ZERO + Duration::from_ms(3), 0, qc, far);
    sim.run_until_idle(Duration::from_ms(10_000)).unwrap();
    assert!(sim.stats(0).timeouts >= 1, "separate pages stall too");
}

#[test]
fn the_stall_is_per_qp_and_other_qps_do_not_help() {
    let b = ReadBench::new(cx4(), OdpSide::Remote, 2, Duration::from_ms(3), 5);
    let (mut sim, qc, rkey) = setup_reads(&b);
    // A second QP pair on a pinned region keeps reading every 100 us during the stall.
    let span = 1 << 16;
    sim.register(
        1,
        MrAttrs {
            pdid: 1,
            region: Region::Explicit {
                base: 0x30_0000_0000,
                len: span,
            },
            access: Perms::R,
            odp: false,
        },
    );
    let mr2 = sim.register(
        1,
        MrAttrs {
            pdid: 1,
            region: Region::Explicit {
                base: 0x30_0000_0000,
                len: span,
            },
            access: Perms::R,
            odp: false,
        },
    );
    sim.register(
        0,
        MrAttrs {
            pdid: 1,
            region: Region::Explicit {
                base: 0x40_0000_0000,
                len: span,
            },
            access: Perms::RW,
            odp: false,
        },
    );
    let (q2, _) = sim.connect_pair(
        0,
        QpAttrs::odp_default(1),
        1,
        QpAttrs::odp_default(1),
        Psn::new(7),
    );
    sim.post(Instant::ZERO, 0, qc, read_wr(0, rkey));
    sim.post(
        Instant::ZERO + Duration::from_ms(3),
        0,
        qc,
        read_wr(1, rkey),
    );
    for i in 0..2000u64 {
        let wr = SendWr {
            wr_id: 1000 + i,
            op: IbOp::Read,
            local_addr: 0x40_0000_0000 + (i % 64) * 8,
            len: 8,
            remote_addr: 0x30_0000_0000 + (i % 64) * 8,
            rkey: mr2.rkey,
        };
        sim.post(Instant::ZERO + Duration::from_us(100 * i), 0, q2, wr);
    }
    sim.run_until_idle(Duration::from_ms(10_000)).unwrap();
    let done_qc: Vec<_> = sim
        .completions()
        .iter()
        .filter(|c| c.wc.qpn == qc)
        .map(|c| c.wc.at)
        .collect();
    let other: Vec<_> = sim
        .completions()
        .iter()
        .filter(|c| c.wc.qpn == q2)
        .collect();
    assert_eq!(other.len(), 2000);
    assert!(other.iter().all(|c| c.wc.status.is_ok()));
    assert!(
        done_qc[1] > Instant::ZERO + t_tr(16).unwrap(),
        "READ 2 still waits for the ACK timeout"
    );
    assert_eq!(sim.stats(0).timeouts, 1, "only the stalled QP timed out");
}

#[test]
fn the_fix_turns_the_stall_into_a_short_wait() {
    for (odp, iv) in [
        (OdpSide::Remote, 3000),
        (OdpSide::Local, 300),
        (OdpSide::Both, 3000),
    ] {
        for period in [100, 1000] {
            let mut b = ReadBench::new(cx4(), odp, 2, Duration::from_us(iv), 3);
            b.fix = Some(FixConfig {
                period: Duration::from_us(period),
                threshold: Duration::from_us(period),
            });
            let r = run_reads(&b);
            assert!(r.all_ok);
            assert!(!r.timed_out, "{odp:?} period {period}");
            assert!(r.dummies >= 1);
            assert!(r.client.seq_naks_received >= 1, "recovery by sequence NAK");
            assert!(
                r.exec_time < Duration::from_ms(12),
                "{odp:?} period {period}: {:?}",
                r.exec_time
            );
        }
    }
}

#[test]
fn invalidation_makes_the_next_access_fault_again() {
    let b = ReadBench::new(cx4(), OdpSide::Remote, 1, Duration::ZERO, 6);
    let (mut sim, qc, rkey) = setup_reads(&b);
    sim.post(Instant::ZERO, 0, qc, read_wr(0, rkey));
    sim.run_until_idle(Duration::from_ms(2000)).unwrap();
    assert_eq!(sim.stats(1).rnr_naks_sent, 1);
    let t = sim.now();
    sim.invalidate_at(t, 1, 1, SERVER_BUF);
    sim.post(t + Duration::from_us(1), 0, qc, read_wr(0, rkey));
    sim.run_until_idle(Duration::from_ms(2000)).unwrap();
    assert_eq!(
        sim.stats(1).rnr_naks_sent,
        2,
        "the OS moved the page: the NIC faults again"
    );
    assert!(sim.completions().iter().all(|c| c.wc.status.is_ok()));
}

/// Every packet lost: the first READ fails with RETRY_EXC_ERR once its retries run out, the
/// queue pair goes to the error state and the READs after it are flushed.
#[test]
fn heavy_loss_exhausts_retries() {
    use unpinned_ib::WcError;
    let b = ReadBench::new(
        VendorProfile::builtin("connectx5"),
        OdpSide::None,
        3,
        Duration::ZERO,
        9,
    );
    let mut faults = unpinned_sim::FaultConfig::NONE;
    faults.loss = 1.0;
    let (mut sim, qc, rkey) =
        unpinned_sim::rc::bench::setup_reads_with(&b, |cfg| cfg.faults = faults);
    for i in 0..3 {
        sim.post(Instant::ZERO, 0, qc, read_wr(i, rkey));
    }
    sim.run_until_idle(Duration::from_ms(100_000)).unwrap();
    let st: Vec<_> = sim.completions().iter().map(|c| c.wc.status).collect();
    assert_eq!(
        st,
        vec![
            Err(WcError::RetryExceeded),
            Err(WcError::Flushed),
            Err(WcError::Flushed)
        ]
    );
}
