//! Trace formats: round trips, GOAL schedules, bad input.

use crate::goal::read_goal;
use crate::trace::{read_jsonl, to_jsonl_string};
use crate::{model, program, NodeRates, Op, Totals};

fn totals(p: &[crate::Program]) -> Totals {
    let mut t = Totals::default();
    p.iter().flat_map(|p| &p.ops).for_each(|o| t.add(o));
    t
}

#[test]
fn jsonl_round_trip_keeps_programs() {
    for app in ["lammps", "hpl", "hpcg"] {
        let m = model(app, 8, NodeRates::default()).unwrap();
        let progs: Vec<_> = (0..8).map(|r| program(m.as_ref(), r, 0..2)).collect();
        let back = read_jsonl(to_jsonl_string(&progs).as_bytes()).unwrap();
        assert_eq!(back, progs, "{app}");
    }
}

#[test]
fn jsonl_without_buffers_gets_reused_buffers() {
    let text = r#"{"format":"unpinned-trace","version":1,"ranks":2}
{"rank":0,"op":"send","peer":1,"bytes":100,"tag":1}
{"rank":1,"op":"recv","peer":0,"bytes":100,"tag":1}
{"rank":0,"op":"send","peer":1,"bytes":9000,"tag":1}
{"rank":1,"op":"recv","peer":0,"bytes":9000,"tag":1}
{"rank":0,"op":"wait"}
{"rank":1,"op":"compute","ns":5}
{"rank":1,"op":"wait"}
"#;
    let p = read_jsonl(text.as_bytes()).unwrap();
    assert_eq!(p[0].buffers, vec![9000]);
    assert_eq!(p[1].buffers, vec![9000]);
    assert_eq!(p[1].ops[2], Op::Compute { ns: 5 });
    assert_eq!(totals(&p).bytes, 9100);
}

#[test]
fn bad_traces_are_typed_errors() {
    let cases = [
        "",
        "{\"format\":\"other\",\"version\":1,\"ranks\":2}",
        "{\"format\":\"unpinned-trace\",\"version\":1,\"ranks\":0}",
        "{\"format\":\"unpinned-trace\",\"version\":1,\"ranks\":2}\n{\"rank\":5,\"op\":\"wait\"}",
        "{\"format\":\"unpinned-trace\",\"version\":1,\"ranks\":2}\n{\"rank\":0,\"op\":\"send\",\"peer\":0,\"bytes\":1,\"tag\":0}",
        "{\"format\":\"unpinned-trace\",\"version\":1,\"ranks\":2}\n{\"rank\":0,\"op\":\"send\",\"peer\":1,\"bytes\":1,\"tag\":0}",
        "{\"format\":\"unpinned-trace\",\"version\":1,\"ranks\":2}\n{\"rank\":0,\"op\":\"jump\"}",
        "{\"format\":\"unpinned-trace\",\"version\":1,\"ranks\":2}\nnot json",
    ];
    for c in cases {
        assert!(read_jsonl(c.as_bytes()).is_err(), "accepted {c:?}");
    }
}

const PINGPONG: &str = "
// a ping-pong with compute, as Schedgen writes them
num_ranks 2

rank 0 {
l1: calc 1000 cpu 0
l2: send 1024b to 1 tag 42 cpu 0 nic 0
l3: recv 1024b from 1 tag 43
l4: calc 500
l2 requires l1
l3 irequires l2
l4 requires l3
}

rank 1 {
l1: recv 1024b from 0 tag 42
l2: send 1024b to 0 tag 43
l2 requires l1
}
";

#[test]
fn goal_schedule_is_linearized() {
    let p = read_goal(PINGPONG).unwrap();
    assert_eq!(
        p[0].ops,
        vec![
            Op::Compute { ns: 1000 },
            Op::Send {
                peer: 1,
                bytes: 1024,
                buf: 1,
                tag: 42
            },
            Op::Recv {
                peer: 1,
                bytes: 1024,
                buf: 0,
                tag: 43
            },
            Op::Wait,
            Op::Compute { ns: 500 },
        ]
    );
    assert_eq!(
        p[1].ops,
        vec![
            Op::Recv {
                peer: 0,
                bytes: 1024,
                buf: 0,
                tag: 42
            },
            Op::Wait,
            Op::Send {
                peer: 0,
                bytes: 1024,
                buf: 1,
                tag: 43
            },
            Op::Wait
        ]
    );
    assert_eq!(totals(&p).sends, 2);
}

#[test]
fn bad_goal_is_a_typed_error() {
    for c in [
        "rank 0 {\n}",
        "num_ranks 2\nrank 0 {\nl1: send 8b to 0\n}",
        "num_ranks 2\nrank 0 {\nl1: recv 8b from -1\n}",
        "num_ranks 2\nrank 0 {\nl1: calc 5\nl2: calc 6\nl1 requires l2\nl2 requires l1\n}",
        "num_ranks 2\nrank 0 {\nl1: fly 5\n}",
        "num_ranks 2\nrank 0 {\nl1: calc 5\n",
        "num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\nrank 1 {\n}",
        "num_ranks 2\nrank 0 {\nl1: calc 5\nl1 requires l9\n}",
    ] {
        assert!(read_goal(c).is_err(), "accepted {c:?}");
    }
}

/// The error text of a reader that must refuse its input.
fn refused<T: std::fmt::Debug>(r: Result<T, crate::TrafficError>) -> String {
    r.expect_err("the input must be refused").to_string()
}

#[test]
fn sizes_and_counts_at_the_limits_are_refused_by_name() {
    let head = r#"{"format":"unpinned-trace","version":1,"ranks":2}"#;
    let send = |bytes: u64| {
        format!("{head}\n{{\"rank\":0,\"op\":\"send\",\"peer\":1,\"bytes\":{bytes},\"tag\":0}}\n")
    };
    let e = refused(read_jsonl(send(u64::MAX).as_bytes()));
    assert!(
        e.contains("larger than the limit") && e.contains("line 2"),
        "{e}"
    );
    // At the limit the size is accepted (the trace fails later, on its unmatched send).
    if let Err(e) = read_jsonl(send(crate::MAX_MESSAGE_BYTES).as_bytes()) {
        assert!(!e.to_string().contains("larger than the limit"), "{e}");
    }
    let bufs = format!("{head}\n{{\"rank\":1,\"buffers\":[4096,{}]}}\n", u64::MAX);
    assert!(refused(read_jsonl(bufs.as_bytes())).contains("buffer of"));
    for ranks in [0, u32::MAX] {
        let h = format!(r#"{{"format":"unpinned-trace","version":1,"ranks":{ranks}}}"#);
        assert!(refused(read_jsonl(h.as_bytes())).contains("not in 1..="));
    }

    let goal = |size: u64| {
        format!("num_ranks 2\nrank 0 {{\nl1: send {size}b to 1\n}}\nrank 1 {{\nl1: recv {size}b from 0\n}}\n")
    };
    let e = refused(read_goal(&goal(u64::MAX)));
    assert!(e.contains("larger than the limit"), "{e}");
    if let Err(e) = read_goal(&goal(crate::MAX_MESSAGE_BYTES)) {
        assert!(!e.to_string().contains("larger than the limit"), "{e}");
    }
    for ranks in [0, u32::MAX] {
        let e = refused(read_goal(&format!("num_ranks {ranks}\n")));
        assert!(e.contains("num_ranks"), "{e}");
    }
}
