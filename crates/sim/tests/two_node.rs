//! Two-node scenarios: the engines stepped by the simulator, checked byte for byte.

use unpinned_core::api::{CompletionError, Op, Perms, WorkRequest};
use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::Profile;
use unpinned_core::time::Duration;
use unpinned_sim::{Residence, Sim, SimConfig};

const SRC: u64 = 0x10_0000_0000;
const DST: u64 = 0x20_0000_0000;

fn write(wr_id: u64, len: u64, rkey: u32) -> WorkRequest {
    WorkRequest {
        wr_id,
        op: Op::Write,
        peer: 1,
        local_pdid: 1,
        local_addr: SRC,
        remote_pdid: 1,
        remote_addr: DST,
        rkey,
        len,
    }
}

fn setup(cfg: SimConfig, len: u64, dst: Residence) -> (Sim, u32) {
    let mut sim = Sim::new(cfg);
    sim.map(0, 1, SRC, len, Residence::Present);
    sim.fill_random(0, 1, SRC, len);
    sim.map(1, 1, DST, len, dst);
    let key = sim.expose(1, 1, DST, len, Perms::RW);
    (sim, key)
}

fn latency_us(cfg: SimConfig, len: u64, dst: Residence) -> f64 {
    let (mut sim, key) = setup(cfg, len, dst);
    sim.post(sim.now(), 0, write(1, len, key));
    sim.run_until_idle(Duration::from_ms(1000)).unwrap();
    let p = &sim.posts()[0];
    assert_eq!(p.completion.unwrap().status, Ok(()));
    p.latency().unwrap().as_us_f64()
}

#[test]
fn small_write_without_faults_takes_about_the_base_latency() {
    let lat = latency_us(
        SimConfig::two_nodes(Profile::forth_arm(), 1),
        64,
        Residence::Present,
    );
    // Initiation 3 us + sub-microsecond hardware path (part.md calibration).
    assert!((3.0..5.0).contains(&lat), "64 B write latency {lat} us");
}

#[test]
fn writes_of_every_shape_deliver_their_bytes() {
    for len in [1, 255, 256, 257, 4096, 16384, 16385, 100_000, 1 << 20] {
        for dst in [
            Residence::Present,
            Residence::Absent,
            Residence::MissingWithProbability(0.3),
        ] {
            for policy in [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia] {
                let mut cfg = SimConfig::two_nodes(Profile::forth_arm(), len);
                cfg.policy = policy;
                latency_us(cfg, len, dst);
            }
        }
    }
}

#[test]
fn faulting_4k_write_follows_the_fault_path() {
    let base = latency_us(
        SimConfig::two_nodes(Profile::forth_arm(), 1),
        4096,
        Residence::Present,
    );
    let mut cfg = SimConfig::two_nodes(Profile::forth_arm(), 1);
    cfg.policy = PageInPolicy::Pio;
    let fault = latency_us(cfg, 4096, Residence::Absent);
    // Interrupt 1 + page-in task ~19 + ERR 1 + retransmission: tens of microseconds more.
    assert!(
        fault > base + 20.0 && fault < base + 60.0,
        "base {base} us, with fault {fault} us"
    );
}

#[test]
fn reads_deliver_their_bytes_even_with_faults_on_both_sides() {
    for len in [100, 4096, 50_000] {
        let mut sim = Sim::new(SimConfig::two_nodes(Profile::forth_arm(), 9));
        sim.map(1, 1, DST, len, Residence::Absent);
        sim.fill_random(1, 1, DST, len);
        let key = sim.expose(1, 1, DST, len, Perms::R);
        sim.map(0, 1, SRC, len, Residence::Absent);
        let wr = WorkRequest {
            wr_id: 7,
            op: Op::Read,
            peer: 1,
            local_pdid: 1,
            local_addr: SRC,
            remote_pdid: 1,
            remote_addr: DST,
            rkey: key,
            len,
        };
        sim.post(sim.now(), 0, wr);
        sim.run_until_idle(Duration::from_ms(1000)).unwrap();
        assert_eq!(sim.posts()[0].completion.unwrap().status, Ok(()));
    }
}

#[test]
fn out_of_range_and_wrong_key_fail_and_write_nothing() {
    let (mut sim, key) = setup(
        SimConfig::two_nodes(Profile::forth_arm(), 3),
        8192,
        Residence::Present,
    );
    // One byte past the exposed range, and a wrong key.
    let mut past = write(1, 8192, key);
    past.remote_addr += 1;
    sim.post(sim.now(), 0, past);
    sim.post(sim.now(), 0, write(2, 100, key ^ 0xdead));
    let mut read = write(3, 100, key);
    read.op = Op::Read;
    read.rkey = key ^ 1;
    sim.post(sim.now(), 0, read);
    sim.run_until_idle(Duration::from_ms(1000)).unwrap();
    for p in sim.posts() {
        assert_eq!(
            p.completion.unwrap().status,
            Err(CompletionError::RemoteAccess),
            "wr {}",
            p.wr.wr_id
        );
    }
    let mut got = vec![0u8; 8192];
    sim.node(1).mem.host_read(1, DST, &mut got);
    assert!(got.iter().all(|&b| b == 0), "nothing was written");
}

/// Early ERR (`os.early_err`): with every destination page missing, PIA and no block timeout,
/// the page-in task answers each faulted block once its pages are in, so the resend overlaps
/// the rest of the page-in; plain NTO waits for the whole page-in first. No block times out
/// either way, and every byte arrives (invariants checked).
#[test]
fn early_err_overlaps_the_resend_with_the_page_in_without_a_timeout() {
    let len = 256 << 10;
    let run = |early: bool| {
        let mut p = Profile::forth_arm();
        p.engine.block_timeout_us = 0.0;
        p.os.early_err = early;
        let (mut sim, key) = setup(SimConfig::two_nodes(p, 3), len, Residence::Absent);
        sim.post(sim.now(), 0, write(1, len, key));
        sim.run_until_idle(Duration::from_ms(1000)).unwrap();
        let post = &sim.posts()[0];
        assert_eq!(post.completion.unwrap().status, Ok(()));
        assert_eq!(sim.stats(0).engine.retransmits_timeout, 0);
        (post.latency().unwrap().as_us_f64(), sim.stats(1).handler)
    };
    let (nto, h_nto) = run(false);
    let (early, h_early) = run(true);
    // 64 pages at 3 us each: about 190 us of page-in that NTO serializes with the resend.
    assert!(
        early < 0.75 * nto,
        "early ERR {early:.1} us vs NTO {nto:.1} us"
    );
    assert_eq!(h_early.pages_in, h_nto.pages_in, "the same pages come in");
}

/// Early ERR and kernel-context ERRs change only when the handler answers: writes of every
/// shape, with any page-in policy, with and without a block timeout, and reads faulting on
/// both sides still deliver every byte exactly once (invariants checked throughout).
#[test]
fn early_and_kernel_errs_deliver_every_shape() {
    use unpinned_core::profile::ErrFrom;
    for (early, from) in [
        (true, ErrFrom::User),
        (true, ErrFrom::Kernel),
        (false, ErrFrom::Kernel),
    ] {
        let mut p = Profile::forth_arm();
        p.os.early_err = early;
        p.os.err_from = from;
        for len in [1, 4096, 16385, 100_000, 1 << 20] {
            for dst in [Residence::Absent, Residence::MissingWithProbability(0.3)] {
                for policy in [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia] {
                    for timeout_us in [0.0, 100.0] {
                        let mut q = p.clone();
                        q.engine.block_timeout_us = timeout_us;
                        let mut cfg = SimConfig::two_nodes(q, len);
                        cfg.policy = policy;
                        latency_us(cfg, len, dst);
                    }
                }
            }
        }
        for len in [100, 50_000] {
            let mut sim = Sim::new(SimConfig::two_nodes(p.clone(), 9));
            sim.map(1, 1, DST, len, Residence::Absent);
            sim.fill_random(1, 1, DST, len);
            let key = sim.expose(1, 1, DST, len, Perms::R);
            sim.map(0, 1, SRC, len, Residence::Absent);
            let wr = WorkRequest {
                wr_id: 7,
                op: Op::Read,
                peer: 1,
                local_pdid: 1,
                local_addr: SRC,
                remote_pdid: 1,
                remote_addr: DST,
                rkey: key,
                len,
            };
            sim.post(sim.now(), 0, wr);
            sim.run_until_idle(Duration::from_ms(1000)).unwrap();
            assert_eq!(sim.posts()[0].completion.unwrap().status, Ok(()));
        }
    }
}
