//! Running an app on an in-process space: setup, one thread per worker, check.

use unpinned_dsm::space::{SharedSpace, Worker};

use crate::{App, AppError, LocalSpace, Trace, TracingSpace};

/// Runs `app` on `space` in this process: setup, every worker on its own thread, then the
/// check. `Err` carries a setup error or the check's complaint. A worker that panics (a bug)
/// is reported as an error too; the other workers may then wait forever in a barrier of a
/// space that cannot be poisoned (the local and tracing spaces are, see [`run_local`]).
pub fn run_app(app: &mut dyn App, space: &dyn SharedSpace) -> Result<(), String> {
    run_with(app, space, &|| {})
}

/// [`run_app`], calling `poison` when a worker panics so the others stop waiting for it.
fn run_with(
    app: &mut dyn App,
    space: &dyn SharedSpace,
    poison: &(dyn Fn() + Sync),
) -> Result<(), String> {
    app.setup(space).map_err(|e| e.to_string())?;
    let count = space.ranks() * space.threads_per_rank();
    let app: &dyn App = app;
    let panicked = std::thread::scope(|s| {
        let handles: Vec<_> = (0..count)
            .map(|id| {
                s.spawn(move || {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        app.work(space, Worker { id, count })
                    }));
                    if r.is_err() {
                        poison();
                    }
                    r.is_err()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(true))
            .filter(|&p| p)
            .count()
    });
    if panicked > 0 {
        return Err(format!("{}: {panicked} worker(s) panicked", app.name()));
    }
    app.check(space)
}

/// Runs `app` on a [`LocalSpace`] of `ranks x threads_per_rank` workers.
pub fn run_local(app: &mut dyn App, ranks: usize, threads_per_rank: usize) -> Result<(), String> {
    let space = LocalSpace::new(ranks, threads_per_rank).map_err(|e| e.to_string())?;
    run_with(app, &space, &|| space.poison())
}

/// Runs `app` on a [`TracingSpace`] and returns its trace and the check's verdict (a trace of
/// a run that computed a wrong answer is still returned, marked by the `Err`).
pub fn run_traced(
    app: &mut dyn App,
    ranks: usize,
    threads_per_rank: usize,
) -> Result<(Trace, Result<(), String>), AppError> {
    let space = TracingSpace::new(app.name(), ranks, threads_per_rank)?;
    let verdict = run_with(app, &space, &|| space.poison());
    Ok((space.finish(), verdict))
}
