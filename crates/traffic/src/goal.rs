//! LogGOPSim's GOAL schedules (`*.goal`, as written by Schedgen): read and linearize.
//!
//! ```text
//! num_ranks 2
//! rank 0 {
//!   l1: calc 1000
//!   l2: send 1024b to 1 tag 5
//!   l3: recv 1024b from 1 tag 5
//!   l2 requires l1
//!   l3 irequires l1
//! }
//! rank 1 { ... }
//! ```
//!
//! Supported: `calc N` (N ns of compute), `send Nb to R [tag T]`, `recv Nb from R [tag T]`
//! (a size without the `b` suffix is bytes too), trailing `cpu C` / `nic N` (ignored: one
//! rank per node here), `A requires B` (A starts after B completed) and `A irequires B` (A
//! starts after B started), `//` and `#` comments. Receives from any source (`from -1`) are
//! refused: the message layer matches per pair.
//!
//! Our programs are sequential, so the dependency graph is linearized: operations in a
//! topological order that keeps the file's order where the graph allows, and a `wait` before
//! an operation that `requires` a message operation still in flight (it waits for all of
//! them: conservative, never earlier than the schedule allows).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::program::{Op, Program, MAX_MESSAGE_BYTES};
use crate::TrafficError;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Calc(u64),
    Send { peer: u32, bytes: u64, tag: u32 },
    Recv { peer: u32, bytes: u64, tag: u32 },
}

/// Largest rank count accepted.
pub const MAX_RANKS: u32 = 1 << 20;

fn size(word: &str) -> Option<u64> {
    word.strip_suffix('b').unwrap_or(word).parse().ok()
}

/// Parse a GOAL schedule into one program per rank.
pub fn read_goal(text: &str) -> Result<Vec<Program>, TrafficError> {
    let perr = |line: usize, what: String| TrafficError::Parse { line, what };
    let mut ranks: Option<u32> = None;
    let mut programs: Vec<Option<Program>> = Vec::new();
    // The rank being read: its number, its operations and labels, its dependencies.
    let mut cur: Option<(
        u32,
        Vec<Kind>,
        HashMap<String, usize>,
        Vec<(String, String, bool, usize)>,
    )> = None;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw
            .split("//")
            .next()
            .unwrap_or("")
            .split('#')
            .next()
            .unwrap_or("")
            .trim();
        if line.is_empty() {
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        if w[0] == "num_ranks" {
            let n: u32 = w
                .get(1)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| perr(ln, "num_ranks needs a number".into()))?;
            if n == 0 || n > MAX_RANKS || ranks.is_some() {
                return Err(perr(
                    ln,
                    format!("num_ranks {n}: must be in 1..={MAX_RANKS}, once"),
                ));
            }
            ranks = Some(n);
            programs = vec![None; n as usize];
            continue;
        }
        let n = ranks.ok_or_else(|| perr(ln, "num_ranks must come first".into()))?;
        if w[0] == "rank" {
            if cur.is_some() {
                return Err(perr(ln, "rank inside a rank".into()));
            }
            let r: u32 = w
                .get(1)
                .and_then(|s| s.parse().ok())
                .filter(|&r| r < n)
                .ok_or_else(|| perr(ln, format!("rank needs a number below {n}")))?;
            if w.get(2) != Some(&"{") || w.len() != 3 {
                return Err(perr(ln, "expected `rank R {`".into()));
            }
            if programs[r as usize].is_some() {
                return Err(perr(ln, format!("rank {r} defined twice")));
            }
            cur = Some((r, Vec::new(), HashMap::new(), Vec::new()));
            continue;
        }
        let Some((r, ops, labels, deps)) = cur.as_mut() else {
            return Err(perr(ln, format!("{:?} outside a rank block", w[0])));
        };
        if w[0] == "}" {
            let (r, ops, labels, deps) = cur.take().expect("inside a rank");
            programs[r as usize] =
                Some(linearize(r, n, &ops, &labels, &deps).map_err(|(l, what)| perr(l, what))?);
            continue;
        }
        if w.len() == 3 && (w[1] == "requires" || w[1] == "irequires") {
            deps.push((w[0].to_string(), w[2].to_string(), w[1] == "irequires", ln));
            continue;
        }
        let label = w[0]
            .strip_suffix(':')
            .ok_or_else(|| perr(ln, format!("expected `label: op ...`, got {line:?}")))?;
        let rest = &w[1..];
        let tag_of = |rest: &[&str]| -> Result<u32, TrafficError> {
            match rest.iter().position(|&x| x == "tag") {
                None => Ok(0),
                Some(p) => rest
                    .get(p + 1)
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| perr(ln, "tag needs a number".into())),
            }
        };
        let kind = match rest.first().copied() {
            Some("calc") => Kind::Calc(
                rest.get(1)
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| perr(ln, "calc needs a number".into()))?,
            ),
            Some(op @ ("send" | "recv")) => {
                let bytes = rest
                    .get(1)
                    .and_then(|s| size(s))
                    .ok_or_else(|| perr(ln, format!("{op} needs a size")))?;
                if bytes > MAX_MESSAGE_BYTES {
                    return Err(perr(
                        ln,
                        format!("{op} of {bytes} bytes: larger than the limit, {MAX_MESSAGE_BYTES} (2^48) bytes"),
                    ));
                }
                let dir = if op == "send" { "to" } else { "from" };
                if rest.get(2) != Some(&dir) {
                    return Err(perr(ln, format!("expected `{op} SIZE {dir} RANK`")));
                }
                let peer: i64 = rest
                    .get(3)
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| perr(ln, format!("{op} needs a rank")))?;
                if peer < 0 || peer >= n as i64 || peer as u32 == *r {
                    return Err(perr(
                        ln,
                        format!("peer {peer}: must be another rank of {n} (no wildcard receives)"),
                    ));
                }
                let tag = tag_of(rest)?;
                if op == "send" {
                    Kind::Send {
                        peer: peer as u32,
                        bytes,
                        tag,
                    }
                } else {
                    Kind::Recv {
                        peer: peer as u32,
                        bytes,
                        tag,
                    }
                }
            }
            other => return Err(perr(ln, format!("unknown operation {other:?}"))),
        };
        if labels.insert(label.to_string(), ops.len()).is_some() {
            return Err(perr(ln, format!("label {label} defined twice")));
        }
        ops.push(kind);
    }
    if cur.is_some() {
        return Err(perr(text.lines().count(), "unterminated rank block".into()));
    }
    let n = ranks.ok_or_else(|| perr(1, "no num_ranks".into()))?;
    let programs: Vec<Program> = programs
        .into_iter()
        .map(|p| p.unwrap_or_default())
        .collect();
    debug_assert_eq!(programs.len(), n as usize);
    crate::check_programs(&programs)?;
    Ok(programs)
}

fn linearize(
    _rank: u32,
    _n: u32,
    ops: &[Kind],
    labels: &HashMap<String, usize>,
    deps: &[(String, String, bool, usize)],
) -> Result<Program, (usize, String)> {
    let mut preds: Vec<Vec<(usize, bool)>> = vec![Vec::new(); ops.len()];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
    for (a, b, immediate, ln) in deps {
        let ia = *labels
            .get(a)
            .ok_or_else(|| (*ln, format!("unknown label {a}")))?;
        let ib = *labels
            .get(b)
            .ok_or_else(|| (*ln, format!("unknown label {b}")))?;
        preds[ia].push((ib, *immediate));
        succs[ib].push(ia);
    }
    let mut indeg: Vec<usize> = preds.iter().map(|p| p.len()).collect();
    let mut ready: BinaryHeap<Reverse<usize>> = (0..ops.len())
        .filter(|&i| indeg[i] == 0)
        .map(Reverse)
        .collect();
    let mut p = Program::default();
    let mut in_flight = vec![false; ops.len()];
    let mut any_in_flight = false;
    let mut done = 0;
    while let Some(Reverse(i)) = ready.pop() {
        done += 1;
        if any_in_flight
            && preds[i]
                .iter()
                .any(|&(b, immediate)| !immediate && in_flight[b])
        {
            p.ops.push(Op::Wait);
            in_flight.iter_mut().for_each(|f| *f = false);
            any_in_flight = false;
        }
        match ops[i] {
            Kind::Calc(ns) => p.ops.push(Op::Compute { ns }),
            Kind::Send { peer, bytes, tag } => {
                p.ops.push(Op::Send {
                    peer,
                    bytes,
                    buf: 0,
                    tag,
                });
                in_flight[i] = true;
                any_in_flight = true;
            }
            Kind::Recv { peer, bytes, tag } => {
                p.ops.push(Op::Recv {
                    peer,
                    bytes,
                    buf: 0,
                    tag,
                });
                in_flight[i] = true;
                any_in_flight = true;
            }
        }
        for &s in &succs[i] {
            indeg[s] -= 1;
            if indeg[s] == 0 {
                ready.push(Reverse(s));
            }
        }
    }
    if done != ops.len() {
        let ln = deps.first().map_or(0, |d| d.3);
        return Err((ln, "the dependencies form a cycle".into()));
    }
    if any_in_flight {
        p.ops.push(Op::Wait);
    }
    let named = vec![false; p.ops.len()];
    crate::trace::assign_buffers(&mut p, &named);
    Ok(p)
}
