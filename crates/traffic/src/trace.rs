//! Our trace format, JSON lines (`*.jsonl`), and replaying any set of per-rank programs.
//!
//! The first line names the format and the number of ranks; every other line is one
//! operation of one rank, in program order for that rank (lines of different ranks may be
//! interleaved):
//!
//! ```text
//! {"format":"unpinned-trace","version":1,"ranks":2}
//! {"rank":0,"op":"compute","ns":1500}
//! {"rank":0,"op":"send","peer":1,"bytes":4096,"tag":7}
//! {"rank":0,"op":"recv","peer":1,"bytes":4096,"tag":7}
//! {"rank":0,"op":"wait"}
//! ```
//!
//! `send` and `recv` are non-blocking; `wait` waits for every started one; `compute` keeps
//! the rank busy for `ns` nanoseconds. Messages of one ordered pair are matched in order
//! (their tags must agree). An optional `"buf"` field names the buffer a call uses (an index,
//! with a `{"rank":r,"buffers":[sizes]}` line declaring the rank's buffers); without it,
//! replay gives every (peer, direction) of a rank one buffer, reused by every call, sized
//! for the largest message: the way a code reuses its communication buffers.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use serde::Deserialize;
use serde_json::json;

use crate::model::AppModel;
use crate::program::{Op, Program, MAX_MESSAGE_BYTES};
use crate::TrafficError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
    version: u32,
    ranks: u32,
}

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Compute {
        rank: u32,
        ns: u64,
    },
    Send {
        rank: u32,
        peer: u32,
        bytes: u64,
        tag: u32,
        buf: Option<u32>,
    },
    Recv {
        rank: u32,
        peer: u32,
        bytes: u64,
        tag: u32,
        buf: Option<u32>,
    },
    Wait {
        rank: u32,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Buffers {
    rank: u32,
    buffers: Vec<u64>,
}

/// Largest number of ranks a trace may declare.
pub const MAX_RANKS: u32 = 1 << 20;

/// Write programs as a JSON-lines trace (with their buffers).
pub fn write_jsonl(programs: &[Program], out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{}",
        json!({ "format": "unpinned-trace", "version": 1, "ranks": programs.len() })
    )?;
    for (r, p) in programs.iter().enumerate() {
        writeln!(out, "{}", json!({ "rank": r, "buffers": p.buffers }))?;
        for op in &p.ops {
            let line = match *op {
                Op::Compute { ns } => json!({ "rank": r, "op": "compute", "ns": ns }),
                Op::Send {
                    peer,
                    bytes,
                    buf,
                    tag,
                } => {
                    json!({ "rank": r, "op": "send", "peer": peer, "bytes": bytes, "tag": tag, "buf": buf })
                }
                Op::Recv {
                    peer,
                    bytes,
                    buf,
                    tag,
                } => {
                    json!({ "rank": r, "op": "recv", "peer": peer, "bytes": bytes, "tag": tag, "buf": buf })
                }
                Op::Wait => json!({ "rank": r, "op": "wait" }),
            };
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// Read a JSON-lines trace. Every error names its line.
pub fn read_jsonl(input: impl BufRead) -> Result<Vec<Program>, TrafficError> {
    let perr = |line: usize, what: String| TrafficError::Parse { line, what };
    let mut lines = input.lines().enumerate();
    let (_, first) = lines.next().ok_or_else(|| perr(1, "empty trace".into()))?;
    let first = first.map_err(|e| perr(1, e.to_string()))?;
    let h: Header = serde_json::from_str(&first).map_err(|e| perr(1, format!("header: {e}")))?;
    if h.format != "unpinned-trace" || h.version != 1 {
        return Err(perr(
            1,
            format!(
                "format {:?} version {} (want unpinned-trace 1)",
                h.format, h.version
            ),
        ));
    }
    if h.ranks == 0 || h.ranks > MAX_RANKS {
        return Err(perr(1, format!("ranks {} not in 1..={MAX_RANKS}", h.ranks)));
    }
    let n = h.ranks;
    let mut ops: Vec<Vec<(Op, bool)>> = vec![Vec::new(); n as usize];
    let mut declared: Vec<Option<Vec<u64>>> = vec![None; n as usize];
    for (i, text) in lines {
        let ln = i + 1;
        let text = text.map_err(|e| perr(ln, e.to_string()))?;
        if text.trim().is_empty() {
            continue;
        }
        let check_rank = |r: u32| {
            if r < n {
                Ok(r as usize)
            } else {
                Err(perr(ln, format!("rank {r} >= ranks {n}")))
            }
        };
        if text.contains("\"buffers\"") {
            let b: Buffers = serde_json::from_str(&text).map_err(|e| perr(ln, e.to_string()))?;
            if let Some(big) = b.buffers.iter().find(|&&s| s > MAX_MESSAGE_BYTES) {
                return Err(perr(
                    ln,
                    format!("buffer of {big} bytes: larger than the limit, {MAX_MESSAGE_BYTES} (2^48) bytes"),
                ));
            }
            declared[check_rank(b.rank)?] = Some(b.buffers);
            continue;
        }
        let l: Line = serde_json::from_str(&text).map_err(|e| perr(ln, e.to_string()))?;
        let (rank, op, named) = match l {
            Line::Compute { rank, ns } => (rank, Op::Compute { ns }, true),
            Line::Wait { rank } => (rank, Op::Wait, true),
            Line::Send {
                rank,
                peer,
                bytes,
                tag,
                buf,
            } => (
                rank,
                Op::Send {
                    peer,
                    bytes,
                    tag,
                    buf: buf.unwrap_or(u32::MAX),
                },
                buf.is_some(),
            ),
            Line::Recv {
                rank,
                peer,
                bytes,
                tag,
                buf,
            } => (
                rank,
                Op::Recv {
                    peer,
                    bytes,
                    tag,
                    buf: buf.unwrap_or(u32::MAX),
                },
                buf.is_some(),
            ),
        };
        let r = check_rank(rank)?;
        if let Op::Send { bytes, .. } | Op::Recv { bytes, .. } = op {
            if bytes > MAX_MESSAGE_BYTES {
                return Err(perr(
                    ln,
                    format!("message of {bytes} bytes: larger than the limit, {MAX_MESSAGE_BYTES} (2^48) bytes"),
                ));
            }
        }
        if let Op::Send { peer, .. } | Op::Recv { peer, .. } = op {
            if peer >= n || peer == rank {
                return Err(perr(ln, format!("peer {peer} is not another rank of {n}")));
            }
        }
        ops[r].push((op, named));
    }
    let mut programs = Vec::with_capacity(n as usize);
    for (r, list) in ops.into_iter().enumerate() {
        let named: Vec<bool> = list.iter().map(|x| x.1).collect();
        let mut p = Program {
            buffers: declared[r].take().unwrap_or_default(),
            ops: list.into_iter().map(|x| x.0).collect(),
        };
        assign_buffers(&mut p, &named);
        programs.push(p);
    }
    crate::check_programs(&programs)?;
    Ok(programs)
}

/// Give every call without a named buffer the buffer of its (peer, direction), created after
/// the declared ones and sized for the largest message.
pub(crate) fn assign_buffers(p: &mut Program, named: &[bool]) {
    let mut by_key: BTreeMap<(u32, bool), (u32, u64)> = BTreeMap::new();
    for (op, &nm) in p.ops.iter().zip(named) {
        if let (Op::Send { peer, bytes, .. } | Op::Recv { peer, bytes, .. }, false) = (op, nm) {
            let e = by_key
                .entry((*peer, matches!(op, Op::Send { .. })))
                .or_insert((0, 0));
            e.1 = e.1.max(*bytes);
        }
    }
    for v in by_key.values_mut() {
        v.0 = p.buffer(v.1.max(1));
    }
    for (op, &nm) in p.ops.iter_mut().zip(named) {
        if nm {
            continue;
        }
        match op {
            Op::Send { peer, buf, .. } => *buf = by_key[&(*peer, true)].0,
            Op::Recv { peer, buf, .. } => *buf = by_key[&(*peer, false)].0,
            _ => {}
        }
    }
}

/// A fixed set of programs (a trace) as a model of one iteration.
#[derive(Clone, Debug)]
pub struct Replay {
    /// Name shown in tables.
    pub name: &'static str,
    /// The programs, one per rank.
    pub programs: Vec<Program>,
}

impl AppModel for Replay {
    fn name(&self) -> &'static str {
        self.name
    }
    fn ranks(&self) -> u32 {
        self.programs.len() as u32
    }
    fn iterations(&self) -> u64 {
        1
    }
    fn buffers(&self, rank: u32) -> Vec<u64> {
        self.programs[rank as usize].buffers.clone()
    }
    fn iteration(&self, rank: u32, _it: u64, out: &mut Vec<Op>) {
        out.extend_from_slice(&self.programs[rank as usize].ops);
    }
    fn params(&self) -> serde_json::Value {
        let t = self
            .programs
            .iter()
            .fold(crate::Totals::default(), |mut t, p| {
                p.ops.iter().for_each(|o| t.add(o));
                t
            });
        json!({ "ranks": self.programs.len(), "sends": t.sends, "bytes": t.bytes })
    }
}

/// Serialize helper for tests and tools: programs to a JSON-lines string.
pub fn to_jsonl_string(programs: &[Program]) -> String {
    let mut v = Vec::new();
    write_jsonl(programs, &mut v).expect("writing to memory");
    String::from_utf8(v).expect("JSON is UTF-8")
}
