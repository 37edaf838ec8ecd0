//! Each checker catches what it is for and passes a clean run.

use unpinned_core::time::Instant;

use super::transport;
use crate::kernel::request::{ErrorKind, Expect, Outcome, Phase, ReqEvent as Ev};

fn posted(req: u64, stream: u64, phase: Phase, expect: Expect) -> Ev<'static> {
    Ev::Posted {
        req,
        stream,
        phase,
        expect,
    }
}

fn err(kind: ErrorKind) -> Outcome {
    Outcome::Err {
        kind,
        detail: format!("{kind:?}"),
    }
}

fn run(events: &[Ev<'_>], ordered: bool) -> Vec<&'static str> {
    let mut c = transport(ordered);
    for (i, e) in events.iter().enumerate() {
        c.observe(Instant(i as u64), e);
    }
    c.finish(Instant(99));
    c.violations().iter().map(|v| v.checker).collect()
}

#[test]
fn a_clean_run_passes_every_checker() {
    let prot = err(ErrorKind::Protection);
    let transport_err = err(ErrorKind::Transport);
    let ok = Outcome::Ok;
    let evs = [
        posted(0, 0, Phase::Safety, Expect::Succeed),
        posted(1, 0, Phase::Safety, Expect::Fail(ErrorKind::Protection)),
        posted(2, 1, Phase::Safety, Expect::Succeed),
        Ev::Completed {
            req: 0,
            outcome: &ok,
        },
        Ev::Bytes {
            req: 0,
            expected: b"ab",
            got: b"ab",
        },
        Ev::Completed {
            req: 1,
            outcome: &prot,
        },
        Ev::Untouched {
            req: 1,
            before: b"xy",
            after: b"xy",
        },
        Ev::Completed {
            req: 2,
            outcome: &transport_err,
        },
        posted(3, 1, Phase::Liveness, Expect::Succeed),
        Ev::Completed {
            req: 3,
            outcome: &ok,
        },
    ];
    assert_eq!(run(&evs, true), Vec::<&str>::new());
}

#[test]
fn each_concern_is_caught_by_its_checker() {
    let ok = Outcome::Ok;
    let prot = err(ErrorKind::Protection);
    let transport_err = err(ErrorKind::Transport);
    let s = Phase::Safety;
    let l = Phase::Liveness;
    // Bytes.
    let evs = [
        posted(0, 0, s, Expect::Succeed),
        Ev::Completed {
            req: 0,
            outcome: &ok,
        },
        Ev::Bytes {
            req: 0,
            expected: b"ab",
            got: b"aX",
        },
    ];
    assert_eq!(run(&evs, false), ["bytes"]);
    // Exactly once: twice, never, unknown.
    let evs = [
        posted(0, 0, s, Expect::Succeed),
        posted(1, 0, s, Expect::Succeed),
        Ev::Completed {
            req: 0,
            outcome: &ok,
        },
        Ev::Completed {
            req: 0,
            outcome: &ok,
        },
        Ev::Completed {
            req: 7,
            outcome: &ok,
        },
    ];
    assert_eq!(run(&evs, false), ["once", "once", "once"]);
    // Protection: a designed-to-fail write that succeeded, one that changed its target, the
    // world's memory model.
    let evs = [
        posted(0, 0, s, Expect::Fail(ErrorKind::Protection)),
        Ev::Completed {
            req: 0,
            outcome: &ok,
        },
        posted(1, 0, s, Expect::Fail(ErrorKind::Protection)),
        Ev::Completed {
            req: 1,
            outcome: &prot,
        },
        Ev::Untouched {
            req: 1,
            before: b"xy",
            after: b"xz",
        },
        Ev::World {
            what: "NI wrote outside",
        },
    ];
    assert_eq!(run(&evs, false), ["protection", "protection", "protection"]);
    // Success: liveness failures of either kind; a protection error on a legitimate request
    // even in the safety phase.
    let evs = [
        posted(0, 0, l, Expect::Succeed),
        Ev::Completed {
            req: 0,
            outcome: &transport_err,
        },
        posted(1, 0, l, Expect::Fail(ErrorKind::Protection)),
        Ev::Completed {
            req: 1,
            outcome: &transport_err,
        },
        posted(2, 0, s, Expect::Succeed),
        Ev::Completed {
            req: 2,
            outcome: &prot,
        },
    ];
    assert_eq!(run(&evs, false), ["success", "success", "success"]);
    // Ordering, only when registered.
    let evs = [
        posted(0, 3, s, Expect::Succeed),
        posted(1, 3, s, Expect::Succeed),
        posted(2, 4, s, Expect::Succeed),
        Ev::Completed {
            req: 2,
            outcome: &ok,
        },
        Ev::Completed {
            req: 1,
            outcome: &ok,
        },
        Ev::Completed {
            req: 0,
            outcome: &ok,
        },
    ];
    assert_eq!(run(&evs, true), ["order"]);
    assert_eq!(run(&evs, false), Vec::<&str>::new());
}

/// RC's error state: after an error on a stream only flushes; a flush only after an error,
/// unless the world posts requests the checkers do not see.
#[test]
fn the_error_state_is_checked_per_queue_pair() {
    use super::queue_pairs;
    let ok = Outcome::Ok;
    let retry = err(ErrorKind::Transport);
    let flushed = err(ErrorKind::Flushed);
    let s = Phase::Safety;
    let check = |evs: &[Ev<'_>], hidden: bool| {
        let mut c = queue_pairs(hidden);
        for (i, e) in evs.iter().enumerate() {
            c.observe(Instant(i as u64), e);
        }
        c.finish(Instant(99));
        c.violations().iter().map(|v| v.checker).collect::<Vec<_>>()
    };
    let completed = |req, outcome| Ev::Completed { req, outcome };
    let mut evs: Vec<Ev<'_>> = (0..4).map(|r| posted(r, 0, s, Expect::Succeed)).collect();
    evs.push(posted(4, 1, s, Expect::Succeed));
    // A clean failure: the first error, then flushes; another stream unaffected.
    let clean = [
        completed(0, &ok),
        completed(1, &retry),
        completed(2, &flushed),
        completed(3, &flushed),
        completed(4, &ok),
    ];
    let run = |tail: &[Ev<'_>], hidden| {
        let mut all = evs.clone();
        all.extend_from_slice(tail);
        check(&all, hidden)
    };
    assert_eq!(run(&clean, false), Vec::<&str>::new());
    // A success, or a second error, after the error.
    let bad = [
        completed(0, &retry),
        completed(1, &ok),
        completed(2, &retry),
        completed(3, &flushed),
        completed(4, &ok),
    ];
    assert_eq!(run(&bad, false), ["flush", "flush"]);
    // A flush with no error before it: only when the world has requests of its own.
    let first = [
        completed(0, &flushed),
        completed(1, &flushed),
        completed(2, &flushed),
        completed(3, &flushed),
        completed(4, &ok),
    ];
    assert_eq!(run(&first, false), ["flush"]);
    assert_eq!(run(&first, true), Vec::<&str>::new());
}
