//! The swarm's model of the live DSM's endpoint (crates/dsm-live `endpoint.rs`), over the
//! simulator's PART engines: per-peer mailbox rings written by RDMA write, consumed in
//! sequence order, credits returned by write every `slots / 4` messages and read back from
//! the credit word as the live sender reads it; page data by RDMA write with the notice held
//! until the write completed; `ReadFrom` by RDMA read. A failed completion fails the run (the
//! live endpoint then fails every waiter).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use unpinned_core::api::{Completion, Op, RemoteKey, WorkRequest, WrId};
use unpinned_dsm::credit::CreditReturn;

use super::slot::{self, SlotMsg, SLOT_BYTES};
use super::{Swarm, DATA_BASE, MBOX_BASE, PDID, STAGE_BASE, STAGE_SLOTS};

/// Bytes of a node's mailbox: the rings, then one credit word per peer.
pub(crate) fn mbox_len(nodes: u32, slots: u64) -> u64 {
    (nodes as u64 * slots * SLOT_BYTES as u64 + nodes as u64 * 8).next_multiple_of(4096)
}

/// Address of sender `sender`'s slot for message `seq` in a mailbox.
fn ring_slot(nodes: u32, slots: u64, sender: u32, seq: u64) -> u64 {
    let _ = nodes;
    MBOX_BASE + (sender as u64 * slots + (seq - 1) % slots) * SLOT_BYTES as u64
}

/// Address of the credit word for `peer` in a mailbox.
fn credit_word(nodes: u32, slots: u64, peer: u32) -> u64 {
    MBOX_BASE + nodes as u64 * slots * SLOT_BYTES as u64 + peer as u64 * 8
}

enum TxItem {
    Control(SlotMsg),
    Data { mp: u32, then: SlotMsg },
}

#[derive(Default)]
struct PeerTx {
    queue: VecDeque<TxItem>,
    /// Messages posted into the peer's ring.
    sent: u64,
    /// A data write whose notice waits at the queue head.
    blocked_on: Option<WrId>,
    /// Per ring slot: its last write has not completed yet. A slot is rewritten only after
    /// that: a retransmission of the old write (its ACK lost) would otherwise land on the new
    /// message, and the receiver would wait for it forever.
    slot_busy: Vec<bool>,
}

/// A request in flight.
pub(crate) enum Inflight {
    /// A control message into ring slot `slot`, from staging slot `stage`.
    Staged { peer: u32, stage: u32, slot: u32 },
    /// A credit return (at most one in flight per sender), from staging slot `stage`.
    Credit { peer: u32, stage: u32 },
    /// A page's data.
    Data { peer: u32 },
    /// An RDMA read of `mp` (a `ReadFrom`): on success, `Data` is delivered locally.
    Read { peer: u32, mp: u32 },
}

/// One node's endpoint.
pub(crate) struct Endpoint {
    nodes: u32,
    slots: u64,
    /// Every node's (mailbox key, data key).
    pub(crate) keys: Vec<(RemoteKey, RemoteKey)>,
    tx: Vec<PeerTx>,
    /// Messages consumed per sender.
    heads: Vec<u64>,
    /// Credit returns, per sender.
    credits: Vec<CreditReturn>,
    inflight: FxHashMap<WrId, Inflight>,
    next_wr: WrId,
    stage_free: Vec<u32>,
    /// Messages to this node itself, in order.
    pub(crate) local: VecDeque<SlotMsg>,
    /// Control messages posted.
    pub(crate) sent: u64,
}

impl Endpoint {
    pub(crate) fn new(
        _node: u32,
        nodes: u32,
        slots: u64,
        keys: Vec<(RemoteKey, RemoteKey)>,
    ) -> Endpoint {
        Endpoint {
            nodes,
            slots,
            keys,
            tx: (0..nodes)
                .map(|_| PeerTx {
                    slot_busy: vec![false; slots as usize],
                    ..PeerTx::default()
                })
                .collect(),
            heads: vec![0; nodes as usize],
            credits: vec![CreditReturn::default(); nodes as usize],
            inflight: FxHashMap::default(),
            next_wr: 1,
            stage_free: (0..STAGE_SLOTS).rev().collect(),
            local: VecDeque::new(),
            sent: 0,
        }
    }

    /// Why the endpoint is not quiet, if it is not.
    pub(crate) fn busy(&self) -> Option<String> {
        if !self.inflight.is_empty() {
            return Some(format!("{} requests in flight", self.inflight.len()));
        }
        if let Some(p) = self.tx.iter().position(|p| !p.queue.is_empty()) {
            return Some(format!("messages queued for node {p}"));
        }
        if !self.local.is_empty() {
            return Some("messages to itself queued".into());
        }
        None
    }

    /// The endpoint's state, for a stuck run's report.
    pub(crate) fn summary(&self, n: u32) -> String {
        let mut s = format!(
            "  node {n} endpoint: {} in flight, heads {:?}\n",
            self.inflight.len(),
            self.heads
        );
        for (p, t) in self.tx.iter().enumerate() {
            if !t.queue.is_empty() || t.blocked_on.is_some() {
                s += &format!(
                    "    to {p}: sent {}, {} queued, blocked on {:?}\n",
                    t.sent,
                    t.queue.len(),
                    t.blocked_on
                );
            }
        }
        s
    }
}

impl Swarm {
    /// Send `m` from `n` to `to` (to itself: queued locally, delivered in order).
    pub(crate) fn send(&mut self, n: u32, to: u32, m: SlotMsg) {
        if to == n {
            self.eps[n as usize].local.push_back(m);
            return;
        }
        self.eps[n as usize].tx[to as usize]
            .queue
            .push_back(TxItem::Control(m));
        self.pump(n, to);
    }

    /// Write minipage `mp` from `n`'s private view into `to`'s, then send `then`.
    pub(crate) fn send_data(&mut self, n: u32, to: u32, mp: u32, then: SlotMsg) {
        if to == n {
            return self.send(n, to, then);
        }
        self.eps[n as usize].tx[to as usize]
            .queue
            .push_back(TxItem::Data { mp, then });
        self.pump(n, to);
    }

    /// Post what `n` may post to `to` now (credits and data writes permitting).
    pub(crate) fn pump(&mut self, n: u32, to: u32) {
        loop {
            let ep = &mut self.eps[n as usize];
            let (nodes, slots) = (ep.nodes, ep.slots);
            let pt = &mut ep.tx[to as usize];
            if pt.blocked_on.is_some() {
                return;
            }
            match pt.queue.front() {
                None => return,
                Some(TxItem::Control(_)) => {
                    // The credit word as the live sender reads it: a value above what was sent
                    // cannot be real and counts as nothing.
                    let mut w = [0u8; 8];
                    self.sim
                        .node(n)
                        .mem
                        .host_read(PDID, credit_word(nodes, slots, to), &mut w);
                    let consumed = u64::from_le_bytes(w);
                    let ep = &mut self.eps[n as usize];
                    let pt = &mut ep.tx[to as usize];
                    let consumed = if consumed <= pt.sent { consumed } else { 0 };
                    if pt.sent - consumed >= slots {
                        return; // ring full: retried when a credit lands
                    }
                    let seq = pt.sent + 1;
                    let ring_index = ((seq - 1) % slots) as usize;
                    if pt.slot_busy[ring_index] {
                        return; // the slot's last write is not complete: retried then
                    }
                    pt.slot_busy[ring_index] = true;
                    let Some(TxItem::Control(m)) = pt.queue.pop_front() else {
                        unreachable!("head is a control message")
                    };
                    pt.sent = seq;
                    ep.sent += 1;
                    let bytes = slot::encode(seq, &m);
                    let remote = ring_slot(nodes, slots, n, seq);
                    let key = ep.keys[to as usize].0;
                    self.stage(n, to, remote, key, &bytes, Some(ring_index as u32));
                }
                Some(TxItem::Data { mp, .. }) => {
                    let at = DATA_BASE + *mp as u64 * self.cfg.mp_bytes as u64;
                    let wr = WorkRequest {
                        wr_id: 0,
                        op: Op::Write,
                        peer: to,
                        local_pdid: PDID,
                        local_addr: at,
                        remote_pdid: PDID,
                        remote_addr: at,
                        rkey: ep.keys[to as usize].1,
                        len: self.cfg.mp_bytes as u64,
                    };
                    let Some(TxItem::Data { then, .. }) = pt.queue.pop_front() else {
                        unreachable!("head is a data write")
                    };
                    pt.queue.push_front(TxItem::Control(then));
                    let id = self.post(n, wr, Inflight::Data { peer: to });
                    self.eps[n as usize].tx[to as usize].blocked_on = Some(id);
                    self.report.data_moves += 1;
                    return;
                }
            }
        }
    }

    /// Post the credit return `head` of `n` to sender `to`.
    fn return_credit(&mut self, n: u32, to: u32, head: u64) {
        let ep = &self.eps[n as usize];
        let key = ep.keys[to as usize].0;
        let remote = credit_word(ep.nodes, ep.slots, n);
        self.stage(n, to, remote, key, &head.to_le_bytes(), None);
    }

    /// Post a small write from a staging slot (its bytes written there first).
    /// `ring_slot`: the ring slot a control message goes to (`None`: a credit return).
    fn stage(
        &mut self,
        n: u32,
        to: u32,
        remote: u64,
        key: RemoteKey,
        bytes: &[u8],
        ring_slot: Option<u32>,
    ) {
        let Some(s) = self.eps[n as usize].stage_free.pop() else {
            return self.fail(format!(
                "node {n}: all {STAGE_SLOTS} staging slots in flight"
            ));
        };
        let local = STAGE_BASE + s as u64 * SLOT_BYTES as u64;
        self.sim.node_mut(n).mem.host_write(PDID, local, bytes);
        let wr = WorkRequest {
            wr_id: 0,
            op: Op::Write,
            peer: to,
            local_pdid: PDID,
            local_addr: local,
            remote_pdid: PDID,
            remote_addr: remote,
            rkey: key,
            len: bytes.len() as u64,
        };
        let what = match ring_slot {
            Some(slot) => Inflight::Staged {
                peer: to,
                stage: s,
                slot,
            },
            None => Inflight::Credit { peer: to, stage: s },
        };
        self.post(n, wr, what);
    }

    /// Post `wr` at `n` now, remembering what it is for.
    pub(crate) fn post(&mut self, n: u32, mut wr: WorkRequest, what: Inflight) -> WrId {
        let ep = &mut self.eps[n as usize];
        let id = ep.next_wr;
        ep.next_wr += 1;
        wr.wr_id = id;
        ep.inflight.insert(id, what);
        let now = self.sim.now();
        self.sim.post(now, n, wr);
        id
    }

    /// What the next expected slot of every ring at `n` holds (a stuck run's report).
    pub(crate) fn ring_summary(&self, n: u32) -> String {
        let ep = &self.eps[n as usize];
        let mut out = String::new();
        for from in 0..ep.nodes {
            if from == n {
                continue;
            }
            let seq = ep.heads[from as usize] + 1;
            let mut s = [0u8; SLOT_BYTES];
            self.sim
                .node(n)
                .mem
                .host_read(PDID, ring_slot(ep.nodes, ep.slots, from, seq), &mut s);
            let found = u64::from_le_bytes(s[..8].try_into().expect("8 bytes"));
            if found != seq {
                out += &format!(
                    "    ring from {from}: expects message {seq}, its slot holds message {found} (check {})\n",
                    slot::landed(&s, found)
                );
            }
        }
        out
    }

    /// Consume the messages of `from` that have landed in `n`'s ring, in order.
    pub(crate) fn poll_ring(&mut self, n: u32, from: u32) {
        if n == from {
            return;
        }
        loop {
            let ep = &self.eps[n as usize];
            let (nodes, slots) = (ep.nodes, ep.slots);
            let seq = ep.heads[from as usize] + 1;
            let mut s = [0u8; SLOT_BYTES];
            self.sim
                .node(n)
                .mem
                .host_read(PDID, ring_slot(nodes, slots, from, seq), &mut s);
            if !slot::landed(&s, seq) {
                return;
            }
            let ep = &mut self.eps[n as usize];
            ep.heads[from as usize] = seq;
            if let Some(head) = ep.credits[from as usize].consumed(seq, slots / 4) {
                self.return_credit(n, from, head);
            }
            match slot::decode(&s) {
                Some(m) => self.deliver(n, from, m),
                None => return self.fail(format!("node {n}: malformed slot {seq} from {from}")),
            }
            self.process(n);
        }
    }

    /// A request of `n` finished.
    pub(crate) fn on_completion(&mut self, n: u32, c: Completion) {
        let ep = &mut self.eps[n as usize];
        let Some(what) = ep.inflight.remove(&c.wr_id) else {
            return self.fail(format!(
                "node {n}: completion of unknown request {}",
                c.wr_id
            ));
        };
        let peer = match what {
            Inflight::Staged { peer, stage, slot } => {
                ep.stage_free.push(stage);
                ep.tx[peer as usize].slot_busy[slot as usize] = false;
                peer
            }
            Inflight::Credit { peer, stage } => {
                ep.stage_free.push(stage);
                let head = ep.heads[peer as usize];
                if c.status.is_ok() {
                    if let Some(head) = ep.credits[peer as usize].completed(head, ep.slots / 4) {
                        self.return_credit(n, peer, head);
                    }
                }
                peer
            }
            Inflight::Data { peer } => {
                if ep.tx[peer as usize].blocked_on == Some(c.wr_id) {
                    ep.tx[peer as usize].blocked_on = None;
                }
                peer
            }
            Inflight::Read { peer, mp } => {
                if c.status.is_ok() {
                    ep.local.push_back(SlotMsg::Dsm(unpinned_dsm::Msg::Data {
                        mp,
                        write: false,
                        notices: 0,
                        bytes: Vec::new(),
                    }));
                }
                peer
            }
        };
        if let Err(e) = c.status {
            return self.fail(format!(
                "node {n}: a {} to node {peer} failed: {e}",
                if c.op == Op::Read { "read" } else { "write" }
            ));
        }
        self.pump(n, peer);
        self.process(n);
    }
}
