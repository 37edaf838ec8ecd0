//! `odp-fix-period`: a stall is a hardware timeout inside the application's execution time;
//! the timer firing on a dummy left over after the last READ completed is counted apart.

use std::collections::BTreeMap;

use unpinned_core::profile::Profile;
use unpinned_experiments::{find, RunContext, Table};

fn run(params: &[(&str, &str)]) -> Table {
    let ctx = RunContext {
        profile: Profile::forth_arm(),
        seed: 1,
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        kind_profile: None,
        progress: &|_, _| {},
    };
    (find("odp-fix-period").unwrap().run)(&ctx).unwrap().table
}

fn rows<'a>(t: &'a Table, want: &[(&str, &str)]) -> Vec<&'a Vec<unpinned_experiments::Cell>> {
    t.rows
        .iter()
        .filter(|r| {
            want.iter()
                .all(|(c, v)| r[t.col(c).unwrap()].to_text() == *v)
        })
        .collect()
}

fn int(t: &Table, r: &[unpinned_experiments::Cell], c: &str) -> f64 {
    r[t.col(c).unwrap()].as_f64().unwrap()
}

#[test]
fn a_period_below_the_local_fault_time_stalls_and_a_longer_one_only_leaves_late_timeouts() {
    // Local ODP, 3 READs posted at once: the fault wait is 500 us + up to 50 us of jitter.
    let t = run(&[
        ("sides", "local"),
        ("ratios", "0.5,1.2"),
        ("fault_scales", "1"),
        ("num_ops", "3"),
        ("intervals_us", "0"),
        ("trials", "2"),
    ]);
    assert_eq!(t.rows.len(), 3 * 2, "fix off + two ratios, two trials");
    for r in rows(&t, &[("period_ratio", "0.5")]) {
        // A dummy posted during the fault wait is lost in the replay burst; the responder's one
        // sequence NAK is spent, so the hardware timer ends the stall.
        assert_eq!(int(&t, r, "stalled"), 1.0);
        assert!(int(&t, r, "stall_timeouts") >= 1.0);
        assert!(int(&t, r, "exec_time_us") > 100_000.0);
    }
    for r in rows(&t, &[("period_ratio", "1.2")]) {
        // Each dummy arrives alone and recovers one READ: done in about 2 periods, and the
        // timer only fires later, on the dummies left over.
        assert_eq!(int(&t, r, "stalled"), 0.0);
        assert_eq!(int(&t, r, "stall_timeouts"), 0.0);
        assert!(int(&t, r, "late_timeouts") >= 1.0);
        assert!(int(&t, r, "exec_time_us") < 2_000.0);
        assert_eq!(int(&t, r, "fix_period_us"), 600.0);
        assert_eq!(int(&t, r, "fault_max_us"), 550.0);
    }
}

#[test]
fn remote_odp_never_stalls_with_the_fix_and_the_baseline_does() {
    let t = run(&[
        ("sides", "remote"),
        ("ratios", "0.2,5"),
        ("fault_scales", "1"),
        ("rnr_delays_us", "1280"),
        ("num_ops", "2"),
        ("intervals_us", "1000"),
        ("trials", "1"),
    ]);
    let stalled = |ratio: &str| int(&t, rows(&t, &[("period_ratio", ratio)])[0], "stalled");
    assert_eq!(
        stalled("0"),
        1.0,
        "READ 2 posted during the RNR wait is lost"
    );
    assert_eq!(stalled("0.2"), 0.0);
    assert_eq!(stalled("5"), 0.0);
}
