//! Randomized runs with packet faults (loss recovered by retransmission, duplicates) and
//! tiny logs (constant back-pressure): counts stay exact, logged gets stay replayable, the
//! sort exchange stays complete. Every failure names its seed.

use unpinned_aa::profile::AaProfile;
use unpinned_aa::sort::SortPlan;

use super::counter::{CounterScheme, CounterWorkload};
use super::loggets::{LogGetsScheme, LogGetsWorkload};
use super::sort::SortWorkload;
use super::{AaWorld, Scheme, WorldConfig};

fn faulty(prof: &AaProfile, nodes: u32, s: Scheme, seed: u64) -> WorldConfig {
    let mut cfg = WorldConfig::new(prof, nodes, s, seed);
    cfg.loss = 0.05;
    cfg.duplicate = 0.05;
    cfg.log_bytes = 160;
    cfg
}

#[test]
fn counter_is_exact_under_faults() {
    let prof = AaProfile::cray_xe6();
    for seed in 0..5u64 {
        for s in [
            CounterScheme::AaPoll,
            CounterScheme::Rma,
            CounterScheme::Akv,
            CounterScheme::Allreduce,
        ] {
            let cfg = faulty(&prof, 2, s.model(), seed);
            let wl = CounterWorkload::new(64, s, 20, 8, seed);
            let mut w = AaWorld::new(&prof, cfg, wl);
            w.run()
                .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", s.name()));
            assert_eq!(
                w.wl.counted().unwrap(),
                w.wl.truth,
                "{} seed {seed}",
                s.name()
            );
        }
    }
}

#[test]
fn logged_gets_replay_under_faults() {
    let prof = AaProfile::cray_xe6();
    for seed in 0..5u64 {
        for s in [
            LogGetsScheme::Aa(Scheme::AaPoll),
            LogGetsScheme::Aa(Scheme::AaInt),
            LogGetsScheme::Aa(Scheme::AaSp),
            LogGetsScheme::Am,
        ] {
            let mut cfg = faulty(&prof, 2, s.model(), seed);
            // Room for one entry: gets are blocking, so only a one-entry log stalls reliably.
            cfg.log_bytes = 40;
            let wl = LogGetsWorkload::new(64, s, 20, 128, seed);
            let mut w = AaWorld::new(&prof, cfg, wl);
            let st = w
                .run()
                .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", s.name()));
            w.wl.check_replay()
                .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", s.name()));
            // AA-SP drains within 15 ns and may never fill even a one-entry log.
            if matches!(
                s,
                LogGetsScheme::Aa(Scheme::AaPoll) | LogGetsScheme::Aa(Scheme::AaInt)
            ) {
                assert!(
                    st.stalls > 0,
                    "{} seed {seed}: back-pressure exercised",
                    s.name()
                );
            }
        }
    }
}

#[test]
fn sort_exchange_completes_under_faults() {
    let prof = AaProfile::cray_xe6();
    for seed in 0..3u64 {
        for s in [
            LogGetsScheme::Aa(Scheme::AaPoll),
            LogGetsScheme::Am,
            LogGetsScheme::Rma,
            LogGetsScheme::NoFt,
        ] {
            let cfg = faulty(&prof, 2, s.model(), seed);
            let plan = SortPlan::new(8 << 20, 64, 64, seed);
            let mut w = AaWorld::new(&prof, cfg, SortWorkload::new(&plan, s, 16384));
            w.run()
                .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", s.name()));
            assert_eq!(
                w.wl.fetched,
                SortWorkload::expected(&plan),
                "{} seed {seed}",
                s.name()
            );
            if s != LogGetsScheme::NoFt {
                assert_eq!(
                    w.wl.kept.iter().sum::<u64>(),
                    plan.remote_bytes(),
                    "{} seed {seed}",
                    s.name()
                );
            }
        }
    }
}

#[test]
fn same_seed_same_run() {
    let prof = AaProfile::cray_xe6();
    let once = || {
        let cfg = faulty(&prof, 2, Scheme::AaInt, 9);
        let mut w = AaWorld::new(
            &prof,
            cfg,
            LogGetsWorkload::new(64, LogGetsScheme::Aa(Scheme::AaInt), 20, 128, 9),
        );
        let st = w.run().unwrap();
        (st.makespan_ns, st.events, st.stalls)
    };
    assert_eq!(once(), once());
}
