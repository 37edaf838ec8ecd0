//! The models against part.md's table at 16 nodes (within 5%), and their consistency.

use crate::{check_programs, model, program, totals, NodeRates};

const MIB: f64 = 1048576.0;

fn check(name: &str, sends: f64, mib: f64, mean_kib: f64) {
    let m = model(name, 16, NodeRates::default()).unwrap();
    let t = totals(m.as_ref(), 0..m.iterations());
    let (s, b, k) = (
        t.sends as f64,
        t.bytes as f64 / MIB,
        t.mean_bytes() / 1024.0,
    );
    println!("{name}: {} sends ({:+.2}%), {b:.0} MiB ({:+.2}%), {k:.2} KiB/send ({:+.2}%), compute {:.1} s/rank",
        t.sends, 100.0 * (s / sends - 1.0), 100.0 * (b / mib - 1.0), 100.0 * (k / mean_kib - 1.0), t.compute_ns as f64 / 16e9);
    assert!(
        (s / sends - 1.0).abs() < 0.05,
        "{name} send calls {s} vs {sends}"
    );
    assert!((b / mib - 1.0).abs() < 0.05, "{name} MiB {b} vs {mib}");
    assert!(
        (k / mean_kib - 1.0).abs() < 0.05,
        "{name} mean KiB {k} vs {mean_kib}"
    );
}

#[test]
fn lammps_matches_table() {
    check("lammps", 2_107_644.0, 31_035.0, 15.1);
}

#[test]
fn hpl_matches_table() {
    check("hpl", 176_404.0, 7_388.0, 42.9);
}

#[test]
fn hpcg_matches_table() {
    check("hpcg", 267_408.0, 6_041.0, 23.1);
}

#[test]
fn programs_are_matched_at_every_scale() {
    for app in ["lammps", "hpl", "hpcg"] {
        for ranks in [1, 2, 3, 4, 8, 16, 27] {
            let m = model(app, ranks, NodeRates::default()).unwrap();
            let progs: Vec<_> = (0..ranks)
                .map(|r| program(m.as_ref(), r, 0..m.iterations().min(3)))
                .collect();
            check_programs(&progs).unwrap_or_else(|e| panic!("{app} at {ranks}: {e}"));
        }
    }
}

/// Prints the table error over a grid of the calibration parameters (how the constants were
/// chosen): `cargo test -p unpinned-traffic scan -- --ignored --nocapture`.
#[test]
#[ignore]
fn scan() {
    use crate::{hpcg::Hpcg, hpl::Hpl, lammps::Lammps};
    let err = |t: crate::Totals, s: f64, mib: f64| {
        ((t.sends as f64 / s - 1.0).abs()).max((t.bytes as f64 / MIB / mib - 1.0).abs())
    };
    let mut best = (f64::MAX, 0.0, 0);
    for atoms in (1800..3400).step_by(50) {
        let mut m = Lammps::calibrated(16, NodeRates::default());
        m.atoms_per_rank = atoms as f64;
        m.steps = 100;
        let t = totals(&m, 0..100);
        let steps = (2_107_644.0 / (t.sends as f64 / 100.0)).round() as u64;
        m.steps = steps;
        let t = totals(&m, 0..steps);
        let e = err(t, 2_107_644.0, 31_035.0);
        if e < best.0 {
            best = (e, atoms as f64, steps);
        }
    }
    println!("lammps best {best:?}");
    let mut best = (f64::MAX, 0, 0);
    for nb in [16u64, 20, 24, 28, 32, 40, 48, 56, 64] {
        for n in (12_000..22_000).step_by(200) {
            let m = Hpl {
                p: 4,
                q: 4,
                n: n / nb * nb,
                nb,
                rates: NodeRates::default(),
            };
            let e = err(
                totals(&m, 0..crate::AppModel::iterations(&m)),
                176_404.0,
                7_388.0,
            );
            if e < best.0 {
                best = (e, n / nb * nb, nb);
            }
        }
    }
    println!("hpl best {best:?}");
    let mut best = (f64::MAX, 0, 0);
    for n in (64..200).step_by(4) {
        let mut m = Hpcg::calibrated(16, NodeRates::default());
        m.n = n;
        let t = totals(&m, 0..1);
        let its = (267_408.0 / t.sends as f64).round() as u64;
        m.iterations = its;
        let e = err(totals(&m, 0..its), 267_408.0, 6_041.0);
        if e < best.0 {
            best = (e, n, its);
        }
    }
    println!("hpcg best {best:?}");
}
