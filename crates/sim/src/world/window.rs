//! Windowed runs: a simulation split into partitions of contiguous node ranges that advance
//! through windows of simulated time no longer than the lookahead (see "Parallel application
//! runs" in docs/ARCHITECTURE.md).
//!
//! In a windowed run a sent packet does not claim its destination's input port at send time
//! (that would write into another partition): it is recorded ([`Sent`]), and at the window's
//! end the destination's partition claims the ports for every packet sent to its nodes, in
//! (send time, sender) order ([`Sim::claim`]). A packet to a node of another partition leaves
//! with its bytes ([`Transit`]).

use unpinned_core::api::NodeId;
use unpinned_core::rng::rng_for;
use unpinned_core::time::{serialization, Duration, Instant};
use xxhash_rust::xxh3::Xxh3;

use super::{LinkBuf, Sim, SimError};
use crate::invariants::Checker;
use crate::kernel::FaultyLink;
use crate::linkbuf;
use crate::queue::EventQueue;
use crate::slab::Slab;

/// A packet sent in the current window whose arrival at the destination's input port is not
/// claimed yet.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    pub(super) send_at: Instant,
    pub(super) src: NodeId,
    pub(super) dst: NodeId,
    /// Arrival at the destination's port if the port is free (raw: before port contention).
    pub(super) raw: Instant,
    /// Serialization time into the destination's port.
    pub(super) ser: Duration,
    /// Its link buffer, in the sending partition's pool.
    pub(super) buf: u32,
}

/// A packet on its way to another partition, with its bytes.
pub struct Transit {
    sent: Sent,
    lb: LinkBuf,
}

impl Transit {
    /// The destination node.
    pub fn dst(&self) -> NodeId {
        self.sent.dst
    }
}

impl Sim {
    /// The least simulated time between a node sending a packet and any other node seeing it:
    /// the NI's per-packet time, the serialization of the smallest packet (a header alone) and
    /// the hops between the two closest nodes. Nothing else crosses nodes, so partitions can
    /// run this far ahead of each other.
    pub fn lookahead(&self) -> Duration {
        self.ni_packet
            + serialization(self.header_bytes, self.link_gbps)
            + self.hop.times(self.cfg.topology.min_hops() as u64)
    }

    /// Split a simulation that has not run yet (nothing queued, nothing posted) into windowed
    /// partitions: partition `i` holds nodes `starts[i]..starts[i + 1]` (the last one up to
    /// the last node). `starts` must begin with 0 and increase. With one partition, the
    /// simulation stays whole but becomes windowed. Node ids stay global.
    pub fn split(mut self, starts: &[NodeId]) -> Result<Vec<Sim>, SimError> {
        let n = self.cfg.nodes;
        let ok = starts.first() == Some(&0)
            && starts.windows(2).all(|w| w[0] < w[1])
            && starts.last().is_some_and(|&s| s < n.max(1));
        if !ok {
            return Err(self.error(format!(
                "cannot split {n} nodes at {starts:?} (must start at 0 and increase)"
            )));
        }
        if !self.queue.is_empty() || self.pending.len() != 0 || !self.bufs.is_empty() {
            return Err(self.error("cannot split a simulation that has started".into()));
        }
        if starts.len() > 1 && (self.cfg.check_invariants || self.cfg.trace || self.faults_any) {
            return Err(self
                .error("invariant checks, tracing and fault injection need one partition".into()));
        }
        let mut parts = Vec::with_capacity(starts.len());
        let mut rest = std::mem::take(&mut self.nodes);
        for (i, &start) in starts.iter().enumerate().rev() {
            let nodes = rest.split_off((start - self.base) as usize);
            if i == 0 {
                // The first partition keeps the run's random streams (one partition: the
                // whole run, drawn as before).
                self.nodes = nodes;
                self.windowed = true;
                parts.push(self);
                break;
            }
            parts.push(self.partition(start, nodes, i));
        }
        parts.reverse();
        Ok(parts)
    }

    /// An empty partition of this simulation holding `nodes` from `base`.
    fn partition(&self, base: NodeId, nodes: Vec<super::Node>, index: usize) -> Sim {
        Sim {
            cfg: self.cfg.clone(),
            base,
            windowed: true,
            sent: Vec::new(),
            now: Instant::ZERO,
            queue: EventQueue::new(),
            nodes,
            bufs: Vec::new(),
            free_bufs: Vec::new(),
            free_compact: Vec::new(),
            rx_zeroed: Vec::new(),
            rx_free_at: vec![Instant::ZERO; self.cfg.nodes as usize],
            compact_ok: self.compact_ok,
            buf_len: self.buf_len,
            // Never drawn from: runs with fault injection have one partition.
            link: FaultyLink::new(
                self.cfg.faults,
                rng_for(self.cfg.seed, &format!("faults/partition/{index}")),
            ),
            setup_rng: rng_for(self.cfg.seed, &format!("setup/partition/{index}")),
            pending: Slab::new(),
            completed: Vec::new(),
            next_post: 0,
            by_wr: Default::default(),
            checker: Checker::new(false),
            events: 0,
            stale_events: 0,
            max_queue: 0,
            trace: Xxh3::new(),
            initiation: self.initiation,
            ni_packet: self.ni_packet,
            hop: self.hop,
            hops: self.hops.clone(),
            link_gbps: self.link_gbps,
            header_bytes: self.header_bytes,
            last_ser: (usize::MAX, Duration::ZERO),
            faults_any: self.faults_any,
            arrived: None,
            arrived_write: unpinned_wire::part::WriteTarget::Any,
        }
    }

    /// The nodes held here: `first..first + count`.
    pub fn node_range(&self) -> std::ops::Range<NodeId> {
        self.base..self.base + self.nodes.len() as NodeId
    }

    /// Hand over the packets sent in this window: those to nodes held here go to `local`,
    /// the others, with their bytes, to `remote[owner[dst]]` (`owner`: partition by node;
    /// this one is `me`). Returns the earliest raw arrival among them (no arrival they cause
    /// can be earlier).
    pub fn take_sent(
        &mut self,
        owner: &[u32],
        me: u32,
        local: &mut Vec<Sent>,
        remote: &mut [Vec<Transit>],
    ) -> Option<Instant> {
        let mut earliest: Option<Instant> = None;
        let mut sent = std::mem::take(&mut self.sent);
        for s in sent.drain(..) {
            earliest = Some(earliest.map_or(s.raw, |e| e.min(s.raw)));
            let p = owner[s.dst as usize];
            if p == me {
                local.push(s);
                continue;
            }
            let lb = self.export(s.buf);
            remote[p as usize].push(Transit { sent: s, lb });
        }
        self.sent = sent;
        earliest
    }

    /// A copy of link buffer `b`'s packet, and `b` back to its pool.
    fn export(&mut self, b: u32) -> LinkBuf {
        let lb = &self.bufs[b as usize];
        let copy = LinkBuf {
            len: lb.len,
            src: lb.src,
            dst: lb.dst,
            intact: lb.intact,
            compact: lb.compact,
            zero_payload: lb.zero_payload,
            bytes: if lb.compact {
                Vec::new()
            } else {
                lb.bytes[..lb.len as usize].to_vec()
            },
            small: lb.small,
        };
        if lb.compact {
            self.free_compact.push(b);
        } else {
            self.free_bufs.push(b);
        }
        copy
    }

    /// A link buffer of this partition's pools holding `lb`'s packet.
    fn import(&mut self, lb: LinkBuf) -> u32 {
        let pool = if lb.compact {
            self.free_compact.pop()
        } else {
            self.free_bufs.pop()
        };
        let b = match pool {
            Some(b) => b,
            None => {
                self.bufs.push(LinkBuf {
                    bytes: if lb.compact {
                        Vec::new()
                    } else {
                        vec![0; self.buf_len]
                    },
                    small: [0; linkbuf::COMPACT_CAP],
                    len: 0,
                    src: 0,
                    dst: 0,
                    intact: true,
                    compact: lb.compact,
                    zero_payload: false,
                });
                (self.bufs.len() - 1) as u32
            }
        };
        let to = &mut self.bufs[b as usize];
        (to.len, to.src, to.dst, to.intact, to.zero_payload) =
            (lb.len, lb.src, lb.dst, lb.intact, lb.zero_payload);
        if lb.compact {
            to.small = lb.small;
        } else {
            to.bytes[..lb.len as usize].copy_from_slice(&lb.bytes);
        }
        b
    }

    /// At a window's end: claim the input ports of this partition's nodes for the packets
    /// sent to them (`local`, from here; `incoming`, from other partitions; both emptied), in
    /// (send time, sender) order, and queue their arrivals. A sender's packets keep their
    /// order (the sort is stable and all of a sender's packets come from one partition, in its
    /// order), so the outcome does not depend on the partitioning.
    pub fn claim(&mut self, local: &mut Vec<Sent>, incoming: &mut Vec<Transit>) {
        for t in incoming.drain(..) {
            let buf = self.import(t.lb);
            local.push(Sent { buf, ..t.sent });
        }
        local.sort_by_key(|s| (s.send_at, s.src));
        for s in local.drain(..) {
            let free = &mut self.rx_free_at[s.dst as usize];
            let at = s.raw.max(*free + s.ser);
            *free = at;
            self.queue
                .push_lane(s.dst, at, super::Ev::Arrive { buf: s.buf });
        }
    }
}
