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
