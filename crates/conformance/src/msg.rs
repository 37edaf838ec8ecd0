//! Message-layer scenarios (crate `unpinned-msg`): a few ranks, sends and receives posted in a
//! given order with pauses ("settles") between them, run through every driver's message path
//! (the simulator's endpoints on PART engines, the live runtime's `Messenger`). What must agree
//! is what a program can observe: which sends and receives finished by which settle, which
//! message (per-pair sequence number) each receive got, with which length or error, and the
//! final bytes of every receive buffer.
//!
//! The expected outcome ([`expected`]) follows from the scenario alone, by the layer's rules:
//! per pair, receives match messages strictly in order (a tag that does not match is an
//! error that consumes the message, never a reorder); a message longer than its receive buffer
//! is refused whole; a sender has `slots_per_peer` messages outstanding at most, and gets the
//! credit of each consumed message back; an eager send is done once its payload is written, a
//! rendezvous send once the receiver matched it (read or refused) and said so with its FIN.
//!
//! A settle means: run until nothing more can happen. The sets of finished operations at that
//! point do not depend on timing as long as credits come back one by one, which the layer does
//! with at most 3 slots per peer (it returns them in batches of `slots_per_peer / 2`): the
//! scenarios stay in that range ([`check`]).

/// Bytes per page.
pub const PAGE: u64 = 4096;

/// How the layer is configured (`unpinned_msg::MsgConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Largest message sent eagerly; larger ones use the rendezvous.
    pub eager_max_bytes: u32,
    /// Receive slots per peer (the sender's credits).
    pub slots_per_peer: u32,
}

/// A send: `len` bytes of [`payload`]`(seed, len)` from rank `src` to rank `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Send {
    /// Sending rank.
    pub src: u32,
    /// Receiving rank.
    pub dst: u32,
    /// Tag.
    pub tag: u32,
    /// Bytes.
    pub len: u64,
    /// Seed of the payload bytes.
    pub seed: u64,
}

/// A receive of at most `len` bytes at rank `rank` from rank `from`, into a buffer of its own
/// ([`buffer_bytes`] long, zeros at the start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recv {
    /// Receiving rank.
    pub rank: u32,
    /// Expected sender.
    pub from: u32,
    /// Tag it expects.
    pub tag: u32,
    /// Bytes at most.
    pub len: u64,
    /// The buffer's pages are present when the receive is posted (else none is: the data
    /// lands in missing pages, by a copy out of a slot or an RDMA read).
    pub present: bool,
}

/// One step of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Post send `i` (index into [`Scenario::sends`]).
    Send(usize),
    /// Post receive `i` (index into [`Scenario::recvs`]).
    Recv(usize),
    /// Run until nothing more can happen. Every scenario ends with an implicit settle.
    Settle,
}

/// A scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name, for messages.
    pub name: &'static str,
    /// Ranks; every rank is a peer of every other.
    pub ranks: u32,
    /// The layer's configuration.
    pub layer: Layer,
    /// The sends.
    pub sends: Vec<Send>,
    /// The receives.
    pub recvs: Vec<Recv>,
    /// The order of posting.
    pub steps: Vec<Step>,
}

/// Why a receive failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The message is longer than the receive buffer (nothing copied).
    Truncated {
        /// Message length.
        msg_bytes: u64,
        /// Receive length.
        buf_bytes: u64,
    },
    /// The next message of the pair carries another tag (consumed, nothing copied).
    TagMismatch {
        /// Tag of the message.
        got: u32,
        /// Tag of the receive.
        want: u32,
    },
    /// Anything else (a transport error), as the driver prints it.
    Other(String),
}

/// A finished receive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecvDone {
    /// The settle by which it finished (0 for the first; the final implicit settle is the
    /// number of [`Step::Settle`]s).
    pub settle: u32,
    /// Per-pair sequence number of the message it matched (from 1).
    pub seq: u64,
    /// Message length, or why not.
    pub result: Result<u64, Failure>,
}

/// A finished send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendDone {
    /// The settle by which it finished.
    pub settle: u32,
    /// `None` on success, else the transport error as the driver prints it.
    pub error: Option<String>,
}

/// What the ranks observe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Per send, in scenario order: finished (how), or still outstanding at the end.
    pub sends: Vec<Option<SendDone>>,
    /// Per receive, in scenario order: finished (how), or still outstanding at the end.
    pub recvs: Vec<Option<RecvDone>>,
    /// Per receive, [`digest`] of its whole buffer at the end.
    pub buffers: Vec<u64>,
    /// Anything that must never happen (an event twice, an event of an unknown id, a failed
    /// pair, a refused post), in the order seen.
    pub anomalies: Vec<String>,
}

/// The payload bytes of a send: a xorshift stream of its seed.
pub fn payload(seed: u64, len: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Bytes of the buffer of a receive of `len` bytes: whole pages, at least one (bytes written
/// past `len` show in its digest).
pub fn buffer_bytes(len: u64) -> u64 {
    len.div_ceil(PAGE).max(1) * PAGE
}

/// FNV-1a of `bytes` (the crate has no dependencies; this is for comparing, not hashing keys).
pub fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Where `got` differs from `want`, one line per send, receive or buffer (empty: they agree).
pub fn differences(got: &Outcome, want: &Outcome) -> Vec<String> {
    let mut d = Vec::new();
    for (i, (g, w)) in got.sends.iter().zip(&want.sends).enumerate() {
        if g != w {
            d.push(format!("send {i}: got {g:?}, want {w:?}"));
        }
    }
    for (i, (g, w)) in got.recvs.iter().zip(&want.recvs).enumerate() {
        if g != w {
            d.push(format!("recv {i}: got {g:?}, want {w:?}"));
        }
    }
    for (i, (g, w)) in got.buffers.iter().zip(&want.buffers).enumerate() {
        if g != w {
            d.push(format!(
                "recv {i}: buffer bytes differ (digest {g:#x}, want {w:#x})"
            ));
        }
    }
    let counts = |o: &Outcome| (o.sends.len(), o.recvs.len(), o.buffers.len());
    if counts(got) != counts(want) {
        d.push(format!(
            "(sends, recvs, buffers): got {:?}, want {:?}",
            counts(got),
            counts(want)
        ));
    }
    d.extend(got.anomalies.iter().map(|a| format!("anomaly: {a}")));
    d
}

/// Whether a driver can run `s` and its expected outcome is timing-free: ranks and indices in
/// range, every send and receive posted exactly once, no rank sending to itself, at most 3
/// slots per peer (credits come back one by one).
pub fn check(s: &Scenario) -> Result<(), String> {
    if s.ranks < 2 {
        return Err("fewer than 2 ranks".into());
    }
    if !(1..=3).contains(&s.layer.slots_per_peer) {
        return Err(format!(
            "slots_per_peer {} outside 1..=3 (credits would come back in timing-dependent batches)",
            s.layer.slots_per_peer
        ));
    }
    for (i, q) in s.sends.iter().enumerate() {
        if q.src >= s.ranks || q.dst >= s.ranks || q.src == q.dst {
            return Err(format!(
                "send {i}: {} -> {} of {} ranks",
                q.src, q.dst, s.ranks
            ));
        }
    }
    for (i, r) in s.recvs.iter().enumerate() {
        if r.rank >= s.ranks || r.from >= s.ranks || r.rank == r.from {
            return Err(format!(
                "recv {i}: {} <- {} of {} ranks",
                r.rank, r.from, s.ranks
            ));
        }
    }
    let mut sent = vec![0u32; s.sends.len()];
    let mut recvd = vec![0u32; s.recvs.len()];
    for step in &s.steps {
        match *step {
            Step::Send(i) => *sent.get_mut(i).ok_or(format!("no send {i}"))? += 1,
            Step::Recv(i) => *recvd.get_mut(i).ok_or(format!("no recv {i}"))? += 1,
            Step::Settle => {}
        }
    }
    if sent.iter().chain(&recvd).any(|&c| c != 1) {
        return Err("every send and receive must be posted exactly once".into());
    }
    Ok(())
}

/// The outcome every driver must produce, from the scenario alone (see the module docs).
pub fn expected(s: &Scenario) -> Outcome {
    let k = s.layer.slots_per_peer as u64;
    let eager = s.layer.eager_max_bytes as u64;
    let n = s.ranks as usize;
    // Per pair (src, dst): send indices and receive indices, in posting order.
    let mut msgs: Vec<Vec<usize>> = vec![Vec::new(); n * n];
    let mut rcvs: Vec<Vec<usize>> = vec![Vec::new(); n * n];
    let mut out = Outcome {
        sends: vec![None; s.sends.len()],
        recvs: vec![None; s.recvs.len()],
        buffers: Vec::new(),
        anomalies: Vec::new(),
    };
    let settles = s.steps.iter().filter(|&&t| t == Step::Settle).count() as u32;
    let mut settle = 0u32;
    for step in s.steps.iter().copied().chain([Step::Settle]) {
        match step {
            Step::Send(i) => msgs[s.sends[i].src as usize * n + s.sends[i].dst as usize].push(i),
            Step::Recv(i) => rcvs[s.recvs[i].from as usize * n + s.recvs[i].rank as usize].push(i),
            Step::Settle => {
                for (m, r) in msgs.iter().zip(&rcvs) {
                    // Matched: every receive that has a message. Sent (given a slot): the
                    // credits of the matched ones plus the window.
                    let matched = m.len().min(r.len());
                    let slotted = m.len().min(matched + k as usize);
                    for (j, &si) in m.iter().enumerate().take(slotted) {
                        let done = if s.sends[si].len <= eager {
                            true
                        } else {
                            j < matched
                        };
                        if done && out.sends[si].is_none() {
                            out.sends[si] = Some(SendDone {
                                settle,
                                error: None,
                            });
                        }
                    }
                    for j in 0..matched {
                        let (q, ri) = (s.sends[m[j]], r[j]);
                        if out.recvs[ri].is_some() {
                            continue;
                        }
                        let want = s.recvs[ri];
                        let result = if q.tag != want.tag {
                            Err(Failure::TagMismatch {
                                got: q.tag,
                                want: want.tag,
                            })
                        } else if q.len > want.len {
                            Err(Failure::Truncated {
                                msg_bytes: q.len,
                                buf_bytes: want.len,
                            })
                        } else {
                            Ok(q.len)
                        };
                        out.recvs[ri] = Some(RecvDone {
                            settle,
                            seq: j as u64 + 1,
                            result,
                        });
                    }
                }
                settle += 1;
            }
        }
    }
    debug_assert_eq!(settle, settles + 1);
    // The buffers: the message where a receive succeeded, zeros elsewhere.
    for (ri, r) in s.recvs.iter().enumerate() {
        let mut buf = vec![0u8; buffer_bytes(r.len) as usize];
        if let Some(RecvDone {
            seq,
            result: Ok(len),
            ..
        }) = &out.recvs[ri]
        {
            let m = &msgs[r.from as usize * n + r.rank as usize];
            let q = s.sends[m[*seq as usize - 1]];
            buf[..*len as usize].copy_from_slice(&payload(q.seed, q.len));
        }
        out.buffers.push(digest(&buf));
    }
    out
}

/// Shorthand for a send.
const fn send(src: u32, dst: u32, tag: u32, len: u64, seed: u64) -> Send {
    Send {
        src,
        dst,
        tag,
        len,
        seed,
    }
}

/// Shorthand for a receive.
const fn recv(rank: u32, from: u32, tag: u32, len: u64, present: bool) -> Recv {
    Recv {
        rank,
        from,
        tag,
        len,
        present,
    }
}

/// Every send and receive posted in the given order of kinds: `order` lists `'s'`/`'r'`/`'|'`
/// (settle); sends and receives are taken in index order.
fn steps(order: &str) -> Vec<Step> {
    let (mut si, mut ri) = (0, 0);
    order
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| match c {
            's' => {
                si += 1;
                Step::Send(si - 1)
            }
            'r' => {
                ri += 1;
                Step::Recv(ri - 1)
            }
            '|' => Step::Settle,
            other => panic!("step kind {other:?}: use s, r or |"),
        })
        .collect()
}

/// The message-layer scenarios every driver runs.
pub fn scenarios() -> Vec<Scenario> {
    let layer = Layer {
        eager_max_bytes: 4096,
        slots_per_peer: 2,
    };
    vec![
        Scenario {
            name: "eager and rendezvous into missing pages, receives posted first",
            ranks: 2,
            layer,
            sends: vec![
                send(0, 1, 7, 0, 1),
                send(0, 1, 7, 1, 2),
                send(0, 1, 7, 4096, 3),
                send(0, 1, 7, 4097, 4),
                send(0, 1, 7, 20_000, 5),
                send(0, 1, 7, 300, 6),
                send(1, 0, 9, 12_345, 7),
                send(1, 0, 9, 100, 8),
            ],
            recvs: vec![
                recv(1, 0, 7, 16, false),
                recv(1, 0, 7, 16, false),
                recv(1, 0, 7, 4096, false),
                recv(1, 0, 7, 8192, false),
                recv(1, 0, 7, 20_000, false),
                recv(1, 0, 7, 4096, true),
                recv(0, 1, 9, 16_384, false),
                recv(0, 1, 9, 100, true),
            ],
            steps: steps("rrrrrrrr ssssssss"),
        },
        Scenario {
            name: "receives posted after the messages arrived, credits hold the rest back",
            ranks: 2,
            layer,
            sends: vec![
                send(0, 1, 1, 3000, 11),
                send(0, 1, 2, 9000, 12),
                send(0, 1, 3, 50, 13),
                send(0, 1, 4, 5000, 14),
                send(0, 1, 5, 4096, 15),
            ],
            recvs: vec![
                recv(1, 0, 1, 4096, true),
                recv(1, 0, 2, 9000, false),
                recv(1, 0, 3, 64, false),
                recv(1, 0, 4, 8192, true),
                recv(1, 0, 5, 4096, false),
            ],
            steps: steps("sssss | r | r | rrr"),
        },
        Scenario {
            name: "errors: too small a buffer and a wrong tag, eager and rendezvous; the pair goes on",
            ranks: 2,
            layer,
            sends: vec![
                send(0, 1, 1, 100, 21),
                send(0, 1, 1, 10_000, 22),
                send(0, 1, 2, 200, 23),
                send(0, 1, 2, 6000, 24),
                send(0, 1, 3, 4000, 25),
                send(0, 1, 3, 7000, 26),
                send(0, 1, 4, 9000, 27),
            ],
            recvs: vec![
                recv(1, 0, 1, 99, false),
                recv(1, 0, 1, 8192, false),
                recv(1, 0, 9, 4096, false),
                recv(1, 0, 9, 8192, true),
                recv(1, 0, 3, 4000, false),
                recv(1, 0, 3, 7000, false),
                // Wrong tag and too small: the tag is checked first.
                recv(1, 0, 5, 100, false),
            ],
            steps: steps("sssssss | rrrrrrr"),
        },
        Scenario {
            name: "one slot: messages trickle as receives come, order kept",
            ranks: 2,
            layer: Layer {
                eager_max_bytes: 2048,
                slots_per_peer: 1,
            },
            sends: vec![
                send(1, 0, 0, 10, 31),
                send(1, 0, 0, 2048, 32),
                send(1, 0, 0, 2049, 33),
                send(1, 0, 0, 0, 34),
                send(1, 0, 0, 777, 35),
            ],
            recvs: vec![
                recv(0, 1, 0, 4096, false),
                recv(0, 1, 0, 4096, false),
                recv(0, 1, 0, 4096, false),
                recv(0, 1, 0, 4096, false),
                recv(0, 1, 0, 4096, false),
            ],
            steps: steps("sssss | r | r | r | rr"),
        },
        Scenario {
            name: "three ranks crossing; a receive without a message and a send without a receive stay open",
            ranks: 3,
            layer: Layer {
                eager_max_bytes: 4096,
                slots_per_peer: 3,
            },
            sends: vec![
                send(0, 2, 1, 5000, 41),
                send(1, 2, 1, 100, 42),
                send(0, 2, 2, 64, 43),
                send(2, 0, 3, 8000, 44),
                send(2, 1, 4, 4096, 45),
                send(1, 0, 5, 1, 46),
                send(1, 2, 1, 12_000, 47),
                send(0, 1, 6, 9000, 48),
                send(2, 1, 8, 300, 49),
                send(1, 0, 9, 6000, 50),
            ],
            recvs: vec![
                recv(2, 0, 1, 8192, false),
                recv(2, 1, 1, 4096, false),
                recv(2, 0, 2, 64, true),
                recv(0, 2, 3, 8000, false),
                recv(1, 2, 4, 4096, false),
                recv(0, 1, 5, 4096, true),
                recv(2, 1, 1, 12_000, false),
                recv(1, 0, 7, 4096, false),
                recv(0, 2, 3, 4096, false),
            ],
            // Send 7 (0 -> 1, rendezvous, tag 6) meets receive 7 (tag 7): a mismatch;
            // receive 8 (0 <- 2) has no message; sends 8 (eager: done) and 9 (rendezvous:
            // waits for ever) have no receive.
            steps: steps("rr s s rr sss | r ss rrr s r ss"),
        },
    ]
}
