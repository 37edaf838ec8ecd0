//! Randomized RC runs with injected packet faults (loss, duplication, reordering, corruption,
//! delay) and ODP faults on both sides: every READ completes exactly once with the right bytes,
//! or the QP fails with RETRY_EXC_ERR (and later requests are flushed) when retries run out.

use unpinned_core::memory::Memory;
use unpinned_core::rng::{rng_for, Rng};
use unpinned_core::time::{Duration, Instant};
use unpinned_ib::{FixConfig, VendorProfile, WcError};
use unpinned_sim::rc::bench::{read_wr, OdpSide, ReadBench, CLIENT_BUF, READ_BYTES, SERVER_BUF};
use unpinned_sim::FaultConfig;

fn one_run(seed: u64, loss_model: bool, fix: bool) -> (usize, usize) {
    let mut rng = rng_for(seed, "rc-random-test");
    // ConnectX-5 (floor 12, T_o ~32 ms) keeps simulated time short.
    let profile = VendorProfile::builtin("connectx5");
    let odp = [
        OdpSide::Remote,
        OdpSide::Local,
        OdpSide::Both,
        OdpSide::None,
    ][rng.gen_range(0..4)];
    let n: u32 = rng.gen_range(1..12);
    let mut b = ReadBench::new(
        profile,
        odp,
        n,
        Duration::from_us(rng.gen_range(0..2000)),
        seed,
    );
    b.loss_model = Some(loss_model);
    b.min_rnr_delay = Duration::from_us([10, 640, 1280][rng.gen_range(0..3)]);
    if fix {
        b.fix = Some(FixConfig {
            period: Duration::from_us(500),
            threshold: Duration::from_us(500),
        });
    }
    let p = rng.gen_range(0.0..0.25);
    let mut faults = FaultConfig::uniform(p / 2.0);
    faults.loss = p;
    let (mut sim, qc, rkey) = setup_with_faults(&b, faults);
    let mut at = Instant::ZERO;
    for i in 0..n {
        sim.post(at, 0, qc, read_wr(i, rkey));
        at += Duration::from_us(rng.gen_range(0..3000));
    }
    sim.run_until_idle(Duration::from_ms(3_600_000)).unwrap();
    let comps: Vec<_> = sim
        .completions()
        .iter()
        .filter(|c| c.node == 0)
        .map(|c| c.wc)
        .collect();
    // Exactly once, in order.
    let ids: Vec<u64> = comps.iter().map(|c| c.wr_id).collect();
    assert_eq!(
        ids,
        (1..=u64::from(n)).collect::<Vec<_>>(),
        "seed {seed}: every READ completes exactly once, in order"
    );
    let mut ok = 0;
    let mut failed = 0;
    let mut seen_error = false;
    for c in &comps {
        match c.status {
            Ok(()) => {
                assert!(!seen_error, "seed {seed}: success after the QP failed");
                let off = (c.wr_id - 1) * u64::from(READ_BYTES);
                let (mut got, mut want) = (
                    vec![0u8; READ_BYTES as usize],
                    vec![0u8; READ_BYTES as usize],
                );
                sim.node_mut(0)
                    .mem
                    .read(1, CLIENT_BUF + off, &mut got)
                    .unwrap();
                sim.node_mut(1)
                    .mem
                    .read(1, SERVER_BUF + off, &mut want)
                    .unwrap();
                assert_eq!(got, want, "seed {seed}: READ {} bytes", c.wr_id);
                ok += 1;
            }
            Err(WcError::RetryExceeded) if !seen_error => {
                seen_error = true;
                failed += 1;
            }
            Err(WcError::Flushed) if seen_error => failed += 1,
            // With the fix, the hidden dummy may be the request that took the RETRY_EXC_ERR.
            Err(WcError::Flushed) if fix => {
                seen_error = true;
                failed += 1;
            }
            Err(e) => panic!("seed {seed}: unexpected {e:?}"),
        }
    }
    (ok, failed)
}

fn setup_with_faults(b: &ReadBench, faults: FaultConfig) -> (unpinned_sim::rc::RcSim, u32, u32) {
    unpinned_sim::rc::bench::setup_reads_with(b, |cfg| cfg.faults = faults)
}

#[test]
fn reads_complete_exactly_once_with_the_right_bytes_or_fail_with_retry_exceeded() {
    let (mut ok, mut failed) = (0, 0);
    // Seeds: the workspace convention (200 by default; UNPINNED_TEST_SEEDS=N for a soak,
    // UNPINNED_TEST_SEED=S for one; the totals below apply to the default list only).
    let seeds = unpinned_testkit::seeds(200);
    let default_list = seeds.len() == 200 && seeds[0] == 0;
    unpinned_testkit::for_each_seed("cargo test -p unpinned-sim --test rc_random", 200, |seed| {
        let (o, f) = one_run(seed, seed % 2 == 0, seed % 3 == 0);
        ok += o;
        failed += f;
    });
    // The default list used to have one seed whose READs failed (120: loss model and fix,
    // RETRY_EXC_ERR after the fix's dummies piled up, 22 s of this test); it completes since
    // the fix posts one dummy per silence. RETRY_EXC_ERR and the flush after it are checked by
    // `heavy_loss_exhausts_retries`.
    assert!(
        !default_list || ok > 300,
        "most READs succeed ({ok} ok, {failed} failed)"
    );
}

#[test]
fn heavy_loss_exhausts_retries() {
    let b = ReadBench::new(
        VendorProfile::builtin("connectx5"),
        OdpSide::None,
        3,
        Duration::ZERO,
        9,
    );
    let mut faults = FaultConfig::NONE;
    faults.loss = 1.0;
    let (mut sim, qc, rkey) = setup_with_faults(&b, faults);
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
