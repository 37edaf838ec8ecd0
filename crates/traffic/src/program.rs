//! Per-rank programs: compute phases and non-blocking message calls.

use serde::{Deserialize, Serialize};

/// Largest message or buffer a trace may name, bytes (2^48 = 256 TiB): far above any
/// machine's memory (the replay refuses what does not fit long before), and low enough that
/// a rank's buffers laid one after another cannot overflow a 64-bit address.
pub const MAX_MESSAGE_BYTES: u64 = 1 << 48;

/// One step of a rank's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Compute for `ns` nanoseconds (the rank does nothing else meanwhile).
    Compute {
        /// Duration, ns.
        ns: u64,
    },
    /// Start sending `bytes` from buffer `buf` to rank `peer` (non-blocking).
    Send {
        /// Destination rank.
        peer: u32,
        /// Message length.
        bytes: u64,
        /// Source buffer (an index into the program's buffers).
        buf: u32,
        /// Tag (matched per pair, in order).
        tag: u32,
    },
    /// Post a receive of `bytes` into buffer `buf` from rank `peer` (non-blocking).
    Recv {
        /// Source rank.
        peer: u32,
        /// Message length (the buffer's capacity for it).
        bytes: u64,
        /// Destination buffer.
        buf: u32,
        /// Tag.
        tag: u32,
    },
    /// Wait until every started send and receive finished.
    Wait,
}

/// A rank's program: its buffers (reused for the whole run, as real codes reuse them) and
/// its operations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Program {
    /// Sizes of the rank's message buffers, bytes.
    pub buffers: Vec<u64>,
    /// Operations in order.
    pub ops: Vec<Op>,
}

/// Totals of a set of programs (what the calibration table counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Send calls.
    pub sends: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Compute time summed over ranks, ns.
    pub compute_ns: u64,
}

impl Totals {
    /// Add one operation.
    pub fn add(&mut self, op: &Op) {
        match *op {
            Op::Send { bytes, .. } => {
                self.sends += 1;
                self.bytes += bytes;
            }
            Op::Compute { ns } => self.compute_ns += ns,
            _ => {}
        }
    }

    /// Mean bytes per send.
    pub fn mean_bytes(&self) -> f64 {
        self.bytes as f64 / self.sends.max(1) as f64
    }
}

impl Program {
    /// Totals of this program.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        self.ops.iter().for_each(|o| t.add(o));
        t
    }

    /// Add a buffer of `bytes`, returning its index.
    pub fn buffer(&mut self, bytes: u64) -> u32 {
        self.buffers.push(bytes);
        (self.buffers.len() - 1) as u32
    }
}

/// Check a set of programs for consistency: every peer a valid rank, every buffer index valid
/// and large enough, and per ordered pair the sends of one side match the receives of the other
/// (same count, lengths and tags, in order).
pub fn check_programs(programs: &[Program]) -> Result<(), crate::TrafficError> {
    use crate::TrafficError as E;
    let n = programs.len() as u32;
    let mut sends: std::collections::HashMap<(u32, u32), Vec<(u64, u32)>> = Default::default();
    let mut recvs: std::collections::HashMap<(u32, u32), Vec<(u64, u32)>> = Default::default();
    for (r, p) in programs.iter().enumerate() {
        let r = r as u32;
        for op in &p.ops {
            let (peer, bytes, buf, tag, is_send) = match *op {
                Op::Send {
                    peer,
                    bytes,
                    buf,
                    tag,
                } => (peer, bytes, buf, tag, true),
                Op::Recv {
                    peer,
                    bytes,
                    buf,
                    tag,
                } => (peer, bytes, buf, tag, false),
                _ => continue,
            };
            if peer >= n || peer == r {
                return Err(E::Invalid(format!(
                    "rank {r}: peer {peer} is not another rank of {n}"
                )));
            }
            let cap = *p
                .buffers
                .get(buf as usize)
                .ok_or_else(|| E::Invalid(format!("rank {r}: buffer {buf} does not exist")))?;
            if bytes > cap {
                return Err(E::Invalid(format!(
                    "rank {r}: {bytes} bytes do not fit buffer {buf} of {cap}"
                )));
            }
            if is_send {
                sends.entry((r, peer)).or_default().push((bytes, tag));
            } else {
                recvs.entry((peer, r)).or_default().push((bytes, tag));
            }
        }
    }
    for (pair, s) in &sends {
        let got = recvs.get(pair).map(|v| v.as_slice()).unwrap_or(&[]);
        if got.len() != s.len() || got.iter().zip(s).any(|(r, s)| r.1 != s.1 || r.0 < s.0) {
            return Err(E::Invalid(format!(
                "rank {} -> {}: {} sends but the receives do not match them",
                pair.0,
                pair.1,
                s.len()
            )));
        }
    }
    for (pair, r) in &recvs {
        if !sends.contains_key(pair) && !r.is_empty() {
            return Err(E::Invalid(format!(
                "rank {} <- {}: {} receives without sends",
                pair.1,
                pair.0,
                r.len()
            )));
        }
    }
    Ok(())
}
