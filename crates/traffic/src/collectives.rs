//! Collectives as point-to-point algorithms (what MPI libraries run underneath).

use crate::program::Op;

/// Allreduce of `bytes` among `group` (ranks, in group order) by recursive doubling; a group
/// that is not a power of two first folds its extra members into the others and sends them
/// the result at the end. `me` is this rank's index in `group`; `sbuf` / `rbuf` its buffers.
pub fn allreduce(
    group: &[u32],
    me: usize,
    bytes: u64,
    sbuf: u32,
    rbuf: u32,
    tag: u32,
    out: &mut Vec<Op>,
) {
    let n = group.len();
    if n <= 1 {
        return;
    }
    let pow2 = 1usize << (usize::BITS - 1 - n.leading_zeros());
    let extra = n - pow2;
    let xchg = |peer: usize, out: &mut Vec<Op>| {
        out.push(Op::Recv {
            peer: group[peer],
            bytes,
            buf: rbuf,
            tag,
        });
        out.push(Op::Send {
            peer: group[peer],
            bytes,
            buf: sbuf,
            tag,
        });
        out.push(Op::Wait);
    };
    if me >= pow2 {
        out.push(Op::Send {
            peer: group[me - pow2],
            bytes,
            buf: sbuf,
            tag,
        });
        out.push(Op::Wait);
        out.push(Op::Recv {
            peer: group[me - pow2],
            bytes,
            buf: rbuf,
            tag,
        });
        out.push(Op::Wait);
        return;
    }
    if me < extra {
        out.push(Op::Recv {
            peer: group[me + pow2],
            bytes,
            buf: rbuf,
            tag,
        });
        out.push(Op::Wait);
    }
    let mut mask = 1;
    while mask < pow2 {
        xchg(me ^ mask, out);
        mask <<= 1;
    }
    if me < extra {
        out.push(Op::Send {
            peer: group[me + pow2],
            bytes,
            buf: sbuf,
            tag,
        });
        out.push(Op::Wait);
    }
}

/// Ring broadcast of `bytes` from `group[root]` (HPL's "increasing ring"): each member
/// receives from its predecessor and forwards to its successor, the last one only receives.
pub fn ring_bcast(
    group: &[u32],
    me: usize,
    root: usize,
    bytes: u64,
    buf: u32,
    tag: u32,
    out: &mut Vec<Op>,
) {
    let n = group.len();
    if n <= 1 {
        return;
    }
    let pos = (me + n - root) % n;
    if pos > 0 {
        out.push(Op::Recv {
            peer: group[(me + n - 1) % n],
            bytes,
            buf,
            tag,
        });
        out.push(Op::Wait);
    }
    if pos < n - 1 {
        out.push(Op::Send {
            peer: group[(me + 1) % n],
            bytes,
            buf,
            tag,
        });
        out.push(Op::Wait);
    }
}

/// Ring allgather: `n - 1` steps, each member sends one piece of `piece_bytes` to its
/// successor and receives one from its predecessor.
pub fn ring_allgather(
    group: &[u32],
    me: usize,
    piece_bytes: u64,
    sbuf: u32,
    rbuf: u32,
    tag: u32,
    out: &mut Vec<Op>,
) {
    let n = group.len();
    for _ in 1..n {
        out.push(Op::Recv {
            peer: group[(me + n - 1) % n],
            bytes: piece_bytes,
            buf: rbuf,
            tag,
        });
        out.push(Op::Send {
            peer: group[(me + 1) % n],
            bytes: piece_bytes,
            buf: sbuf,
            tag,
        });
        out.push(Op::Wait);
    }
}

/// Scatter from `group[root]` in a flat tree: the root sends one piece to every other member.
#[allow(clippy::too_many_arguments)]
pub fn scatter(
    group: &[u32],
    me: usize,
    root: usize,
    piece_bytes: u64,
    sbuf: u32,
    rbuf: u32,
    tag: u32,
    out: &mut Vec<Op>,
) {
    let n = group.len();
    if n <= 1 {
        return;
    }
    if me == root {
        for (i, &g) in group.iter().enumerate() {
            if i != root {
                out.push(Op::Send {
                    peer: g,
                    bytes: piece_bytes,
                    buf: sbuf,
                    tag,
                });
            }
        }
    } else {
        out.push(Op::Recv {
            peer: group[root],
            bytes: piece_bytes,
            buf: rbuf,
            tag,
        });
    }
    out.push(Op::Wait);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{check_programs, Program};

    fn run(n: usize, f: impl Fn(&[u32], usize, &mut Vec<Op>)) -> Vec<Program> {
        let group: Vec<u32> = (0..n as u32).collect();
        (0..n)
            .map(|me| {
                let mut p = Program {
                    buffers: vec![1 << 20, 1 << 20],
                    ops: Vec::new(),
                };
                f(&group, me, &mut p.ops);
                p
            })
            .collect()
    }

    #[test]
    fn collectives_are_matched_for_any_group_size() {
        for n in 1..=13 {
            check_programs(&run(n, |g, me, o| allreduce(g, me, 8, 0, 1, 1, o))).unwrap();
            check_programs(&run(n, |g, me, o| ring_bcast(g, me, n / 2, 100, 0, 2, o))).unwrap();
            check_programs(&run(n, |g, me, o| ring_allgather(g, me, 64, 0, 1, 3, o))).unwrap();
            check_programs(&run(n, |g, me, o| scatter(g, me, 0, 64, 0, 1, 4, o))).unwrap();
        }
        let p = run(16, |g, me, o| allreduce(g, me, 8, 0, 1, 1, o));
        assert_eq!(
            p.iter().map(|p| p.totals().sends).sum::<u64>(),
            16 * 4,
            "recursive doubling: log2 n sends each"
        );
    }
}
