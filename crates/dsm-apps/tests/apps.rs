//! Every application gives the sequential answer on 1, 2 and 4 workers (and 2 ranks x 2
//! threads), on the local space and on the tracing space; traces are consistent.

use unpinned_dsm::trace::TraceOp;
use unpinned_dsm_apps::{create, names, run_local, run_traced, Input};

#[test]
fn every_app_matches_its_sequential_reference_on_1_2_4_workers() {
    for name in names() {
        for (ranks, threads) in [(1, 1), (1, 2), (1, 4), (2, 2), (4, 1)] {
            let mut app = create(name, Input::Small).unwrap();
            run_local(app.as_mut(), ranks, threads)
                .unwrap_or_else(|e| panic!("{name} on {ranks}x{threads}: {e}"));
        }
    }
}

#[test]
fn traced_runs_are_correct_and_record_faults_only_with_several_ranks() {
    for name in names() {
        let mut app = create(name, Input::Small).unwrap();
        let (trace, verdict) = run_traced(app.as_mut(), 1, 2).unwrap();
        verdict.unwrap_or_else(|e| panic!("{name} traced 1x2: {e}"));
        let t = trace.totals();
        assert_eq!(t.faults, 0, "{name}: one rank holds every minipage");
        assert!(t.barriers >= 2, "{name}: every app ends with a barrier");
        assert_eq!(t.locks, t.unlocks, "{name}");

        let mut app = create(name, Input::Small).unwrap();
        let (trace, verdict) = run_traced(app.as_mut(), 3, 1).unwrap();
        verdict.unwrap_or_else(|e| panic!("{name} traced 3x1: {e}"));
        let t = trace.totals();
        assert!(t.faults > 0, "{name}: three ranks share data");
        assert!(t.compute_ns > 0, "{name}: computation is measured");
        // Every worker sees the same barriers.
        let per: Vec<usize> = trace
            .threads
            .iter()
            .map(|ops| ops.iter().filter(|o| **o == TraceOp::Barrier).count())
            .collect();
        assert!(
            per.iter().all(|&b| b == per[0]),
            "{name}: barriers per worker {per:?}"
        );
        // Faults name minipages that exist.
        let mps = trace.header.minipages;
        assert!(trace
            .threads
            .iter()
            .flatten()
            .all(|o| !matches!(o, TraceOp::Fault { mp, .. } if *mp >= mps)));
        // The JSON-lines form round-trips.
        let back = unpinned_dsm::trace::Trace::parse(&trace.to_json_lines()).unwrap();
        assert_eq!(back, trace);
    }
}

#[test]
fn sor_bands_share_only_edge_rows() {
    // 2 ranks x 1 thread, 64x64 grid: each half-iteration a worker reads the neighbour's
    // edge row (one minipage of 64 doubles = 512 B) after the neighbour rewrote it.
    let mut app = create("sor", Input::Small).unwrap();
    let (trace, verdict) = run_traced(app.as_mut(), 2, 1).unwrap();
    verdict.unwrap();
    let faults: Vec<u64> = trace
        .threads
        .iter()
        .map(|ops| {
            ops.iter()
                .filter(|o| matches!(o, TraceOp::Fault { .. }))
                .count() as u64
        })
        .collect();
    // 4 iterations x 2 colours: at most a read of the edge row and a write-back of the own band
    // (one or two minipages) per half-iteration.
    for f in faults {
        assert!(f <= 8 * 4, "faults per worker {f}");
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    assert!(create("nope", Input::Small).is_err());
    let mut app = create("sor", Input::Small).unwrap();
    // 64x64 SOR has 62 interior rows: 70 workers cannot each get a band.
    let e = run_local(app.as_mut(), 70, 1).unwrap_err();
    assert!(e.contains("ranks") || e.contains("bands"), "{e}");
    let mut app = create("nbody", Input::Small).unwrap();
    let e = run_local(app.as_mut(), 1, 200).unwrap_err();
    assert!(e.contains("bodies"), "{e}");
    assert!(unpinned_dsm_apps::LocalSpace::new(0, 1).is_err());
}

/// An app whose worker 1 fails before a barrier the others wait in.
struct Failing;

impl unpinned_dsm_apps::App for Failing {
    fn name(&self) -> &'static str {
        "failing"
    }
    fn setup(
        &mut self,
        _space: &dyn unpinned_dsm_apps::SharedSpace,
    ) -> Result<(), unpinned_dsm_apps::AppError> {
        Ok(())
    }
    fn work(&self, space: &dyn unpinned_dsm_apps::SharedSpace, worker: unpinned_dsm_apps::Worker) {
        if worker.id == 1 {
            panic!("worker 1 fails (on purpose)");
        }
        space.lock(worker, 0);
        space.unlock(worker, 0);
        space.barrier(worker);
    }
    fn check(&self, _space: &dyn unpinned_dsm_apps::SharedSpace) -> Result<(), String> {
        Ok(())
    }
}

#[test]
fn a_failing_worker_is_an_error_not_a_hang() {
    let e = run_local(&mut Failing, 2, 2).unwrap_err();
    assert!(e.contains("panicked"), "{e}");
    let (_, verdict) = run_traced(&mut Failing, 1, 3).unwrap();
    assert!(verdict.unwrap_err().contains("panicked"));
}
