//! The per-node endpoint: sends, receives, credits, rendezvous.

use std::collections::{BTreeSet, VecDeque};

use unpinned_core::api::{Completion, CompletionError, NodeId, Op, RemoteKey, WorkRequest};
use unpinned_core::memory::Pdid;

use crate::header::{Header, Kind, HEADER_BYTES};
use crate::inflight::InFlight;
use crate::layout::Layout;
use crate::{MsgConfig, MsgError};

/// The host CPU's access to the endpoint's own address space (no NI, no faults: the host
/// touches its memory; a driver may charge the CPU cost of doing so).
pub trait HostMem {
    /// Read `out.len()` bytes at `addr`.
    fn read(&mut self, addr: u64, out: &mut [u8]);
    /// Write `data` at `addr`.
    fn write(&mut self, addr: u64, data: &[u8]);
    /// Copy `len` bytes from `src` to `dst` (an eager message into the user's buffer).
    fn copy(&mut self, src: u64, dst: u64, len: u64) {
        let mut buf = vec![0u8; len.min(1 << 16) as usize];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(buf.len() as u64) as usize;
            self.read(src + done, &mut buf[..n]);
            self.write(dst + done, &buf[..n]);
            done += n as u64;
        }
    }
}

/// What an endpoint needs to know about one peer (exchanged at start-up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerInfo {
    /// The peer's node.
    pub node: NodeId,
    /// The peer's address space.
    pub pdid: Pdid,
    /// Base of the peer's message region.
    pub region_base: u64,
    /// Number of peers the peer has (its region's layout depends on it).
    pub peer_peers: u32,
    /// Our index in the peer's peer list.
    pub index_at_peer: u32,
    /// Key of the peer's message region exposure (read-write).
    pub msg_rkey: RemoteKey,
}

/// Why a receive failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecvError {
    /// The message is longer than the receive buffer (nothing was copied).
    #[error("message of {msg_bytes} bytes does not fit a {buf_bytes}-byte receive")]
    Truncated {
        /// Message length.
        msg_bytes: u64,
        /// Receive buffer length.
        buf_bytes: u64,
    },
    /// The next message of the pair carries another tag.
    #[error("next message has tag {got}, the receive expects {want}")]
    TagMismatch {
        /// Tag of the message.
        got: u32,
        /// Tag of the receive.
        want: u32,
    },
    /// The RDMA operation behind it failed.
    #[error("transport: {0}")]
    Transport(CompletionError),
}

/// A finished receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvDone {
    /// The receive's id.
    pub id: u64,
    /// Sender.
    pub peer: NodeId,
    /// Per-pair sequence number of the message (from 1).
    pub seq: u64,
    /// Message length, or why not.
    pub result: Result<u64, RecvError>,
}

/// Something the endpoint tells its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgEvent {
    /// A send finished: the user's buffer may be reused.
    SendDone {
        /// The send's id.
        id: u64,
        /// Success, or the transport error.
        result: Result<(), CompletionError>,
    },
    /// A receive finished.
    Recv(RecvDone),
    /// A control write (header, credit, FIN) to a peer failed: the pair cannot go on.
    PeerFailed {
        /// The peer.
        peer: NodeId,
        /// Why.
        error: CompletionError,
    },
}

#[derive(Clone, Copy, Debug)]
struct SendReq {
    id: u64,
    addr: u64,
    len: u64,
    tag: u32,
    rkey: RemoteKey,
}

#[derive(Clone, Copy, Debug)]
struct RecvReq {
    id: u64,
    addr: u64,
    len: u64,
    tag: u32,
}

#[derive(Default)]
struct PeerState {
    // Sending side.
    next_seq: u64,
    credit_seen: u64,
    queue: VecDeque<SendReq>,
    rndv_posted: u64,
    fin_seen: u64,
    rndv_wait: VecDeque<(u64, u64)>,
    /// Per slot: its header write is still in flight (the staging area must stay stable, so
    /// the slot is not reused before that write completed, whatever the credits say).
    header_busy: Vec<bool>,
    // Receiving side.
    expected: u64,
    recvs: VecDeque<RecvReq>,
    consumed: u64,
    credit_sent: u64,
    credit_inflight: bool,
    rndv_matched: u64,
    rndv_done: BTreeSet<u64>,
    fin_value: u64,
    fin_sent: u64,
    fin_inflight: bool,
}

#[derive(Clone, Copy, Debug)]
enum Pending {
    Payload {
        peer: u32,
        slot: u32,
        hdr: Header,
        id: u64,
    },
    Header {
        peer: u32,
        slot: u32,
    },
    Credit {
        peer: u32,
        value: u64,
    },
    Fin {
        peer: u32,
        value: u64,
    },
    Read {
        peer: u32,
        rndv_no: u64,
        id: u64,
        seq: u64,
        len: u64,
    },
}

/// One node's message endpoint (see the crate docs).
pub struct Endpoint {
    me: NodeId,
    pdid: Pdid,
    buf_rkey: RemoteKey,
    cfg: MsgConfig,
    layout: Layout,
    infos: Vec<PeerInfo>,
    states: Vec<PeerState>,
    /// (peer node, its index in `infos`), sorted by node: a binary search over a few cache
    /// lines (a hash table per endpoint missed the cache on every arrival at scale).
    index: Vec<(NodeId, u32)>,
    pending: InFlight<Pending>,
    next_wr: u64,
    out: VecDeque<WorkRequest>,
    events: VecDeque<MsgEvent>,
    /// Host stores (headers, counter words) to do before the next work request is posted.
    staged: Vec<(u64, Vec<u8>)>,
    stats: MsgStats,
}

/// Counters of an endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgStats {
    /// Eager messages sent.
    pub eager_sent: u64,
    /// Rendezvous messages sent.
    pub rndv_sent: u64,
    /// Messages received.
    pub received: u64,
    /// Credit words written.
    pub credit_writes: u64,
    /// FIN words written.
    pub fin_writes: u64,
}

impl Endpoint {
    /// An endpoint at node `me` whose message region starts at `region_base` of address space
    /// `pdid`. `buf_rkey` is the key of a read-only exposure covering every user buffer that
    /// may be sent by rendezvous (the receiver reads from it). `peers` in the order that fixes
    /// the slot layout (the peers' `index_at_peer` must agree with it).
    pub fn new(
        me: NodeId,
        pdid: Pdid,
        cfg: MsgConfig,
        region_base: u64,
        buf_rkey: RemoteKey,
        peers: Vec<PeerInfo>,
    ) -> Result<Endpoint, MsgError> {
        cfg.validate()?;
        let layout = Layout::new(&cfg, region_base, peers.len() as u32);
        if region_base.checked_add(layout.region_bytes()).is_none() {
            return Err(MsgError::BadRange);
        }
        let mut index: Vec<(NodeId, u32)> = peers
            .iter()
            .enumerate()
            .map(|(i, p)| (p.node, i as u32))
            .collect();
        index.sort_unstable();
        if index.iter().any(|&(n, _)| n == me) || index.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(MsgError::BadConfig(
                "peers must be distinct and not this node",
            ));
        }
        let k = cfg.slots_per_peer as usize;
        let states = peers
            .iter()
            .map(|_| PeerState {
                next_seq: 1,
                expected: 1,
                header_busy: vec![false; k],
                ..PeerState::default()
            })
            .collect();
        Ok(Endpoint {
            me,
            pdid,
            buf_rkey,
            cfg,
            layout,
            infos: peers,
            states,
            index,
            pending: InFlight::new(1),
            next_wr: 1,
            out: VecDeque::new(),
            events: VecDeque::new(),
            staged: Vec::new(),
            stats: MsgStats::default(),
        })
    }

    /// The layout of this endpoint's region.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Counters so far.
    pub fn stats(&self) -> MsgStats {
        self.stats
    }

    /// Start sending `len` bytes at `addr` to `peer`. Exactly one [`MsgEvent::SendDone`] with
    /// `id` follows.
    pub fn isend(
        &mut self,
        id: u64,
        peer: NodeId,
        addr: u64,
        len: u64,
        tag: u32,
    ) -> Result<(), MsgError> {
        self.isend_keyed(id, peer, addr, len, tag, self.buf_rkey)
    }

    /// Like [`Endpoint::isend`], naming the key of a read-only exposure of this buffer (used
    /// by a rendezvous; a runtime may expose each large send buffer on its own).
    pub fn isend_keyed(
        &mut self,
        id: u64,
        peer: NodeId,
        addr: u64,
        len: u64,
        tag: u32,
        rkey: RemoteKey,
    ) -> Result<(), MsgError> {
        let p = self.peer_index(peer).ok_or(MsgError::UnknownPeer(peer))?;
        addr.checked_add(len).ok_or(MsgError::BadRange)?;
        self.states[p as usize].queue.push_back(SendReq {
            id,
            addr,
            len,
            tag,
            rkey,
        });
        self.pump_sends(p);
        Ok(())
    }

    /// Post a receive of at most `len` bytes into `addr` from `peer`. Exactly one
    /// [`MsgEvent::Recv`] with `id` follows.
    pub fn irecv(
        &mut self,
        id: u64,
        peer: NodeId,
        addr: u64,
        len: u64,
        tag: u32,
    ) -> Result<(), MsgError> {
        let p = self.peer_index(peer).ok_or(MsgError::UnknownPeer(peer))?;
        addr.checked_add(len).ok_or(MsgError::BadRange)?;
        self.states[p as usize]
            .recvs
            .push_back(RecvReq { id, addr, len, tag });
        Ok(())
    }

    /// Look at what landed in the region (doorbells, credits, FINs) and make progress. Call it
    /// after the NI wrote into the region and after posting receives.
    pub fn poll(&mut self, host: &mut impl HostMem) {
        for p in 0..self.states.len() as u32 {
            self.poll_peer(p, host);
        }
    }

    /// Like [`Endpoint::poll`], for one peer only.
    pub fn poll_node(&mut self, peer: NodeId, host: &mut impl HostMem) {
        if let Some(p) = self.peer_index(peer) {
            self.poll_peer(p, host);
        }
    }

    /// Index of `peer` in our peer list.
    #[inline]
    fn peer_index(&self, peer: NodeId) -> Option<u32> {
        self.index
            .binary_search_by_key(&peer, |&(n, _)| n)
            .ok()
            .map(|i| self.index[i].1)
    }

    fn poll_peer(&mut self, p: u32, host: &mut impl HostMem) {
        let mut w = [0u8; 8];
        host.read(self.layout.credit_in(p), &mut w);
        let credit = u64::from_le_bytes(w);
        host.read(self.layout.fin_in(p), &mut w);
        let fin = u64::from_le_bytes(w);
        let st = &mut self.states[p as usize];
        // Counter words only grow; a value behind the one seen is ignored.
        st.fin_seen = st.fin_seen.max(fin);
        while let Some(&(no, id)) = st.rndv_wait.front() {
            if no > st.fin_seen {
                break;
            }
            st.rndv_wait.pop_front();
            self.events
                .push_back(MsgEvent::SendDone { id, result: Ok(()) });
        }
        let st = &mut self.states[p as usize];
        if credit > st.credit_seen && credit < st.next_seq {
            st.credit_seen = credit;
            self.pump_sends(p);
        }
        self.match_arrivals(p, host);
    }

    fn pump_sends(&mut self, p: u32) {
        let k = self.cfg.slots_per_peer as u64;
        loop {
            let st = &mut self.states[p as usize];
            if st.next_seq - 1 - st.credit_seen >= k {
                return;
            }
            let slot = ((st.next_seq - 1) % k) as u32;
            if st.header_busy[slot as usize] {
                return;
            }
            let Some(req) = st.queue.pop_front() else {
                return;
            };
            let seq = st.next_seq;
            st.next_seq += 1;
            st.header_busy[slot as usize] = true;
            let info = self.infos[p as usize];
            let rl = Layout::new(&self.cfg, info.region_base, info.peer_peers);
            let remote_payload = rl.recv_payload(info.index_at_peer, slot);
            if req.len <= self.cfg.eager_max_bytes as u64 {
                self.stats.eager_sent += 1;
                let hdr = Header {
                    seq,
                    kind: Kind::Eager,
                    tag: req.tag,
                    len: req.len,
                    src_addr: 0,
                    rkey: 0,
                    pdid: 0,
                };
                if req.len == 0 {
                    self.events.push_back(MsgEvent::SendDone {
                        id: req.id,
                        result: Ok(()),
                    });
                    self.pending_header(p, slot, hdr);
                } else {
                    let wr_id = self.alloc_wr(Pending::Payload {
                        peer: p,
                        slot,
                        hdr,
                        id: req.id,
                    });
                    self.out.push_back(WorkRequest {
                        wr_id,
                        op: Op::Write,
                        peer: info.node,
                        local_pdid: self.pdid,
                        local_addr: req.addr,
                        remote_pdid: info.pdid,
                        remote_addr: remote_payload,
                        rkey: info.msg_rkey,
                        len: req.len,
                    });
                }
            } else {
                self.stats.rndv_sent += 1;
                let st = &mut self.states[p as usize];
                st.rndv_posted += 1;
                st.rndv_wait.push_back((st.rndv_posted, req.id));
                let hdr = Header {
                    seq,
                    kind: Kind::Rts,
                    tag: req.tag,
                    len: req.len,
                    src_addr: req.addr,
                    rkey: req.rkey,
                    pdid: self.pdid,
                };
                self.pending_header(p, slot, hdr);
            }
        }
    }

    /// Stage a header and queue its write (the doorbell). The staging area of a slot is reused
    /// only after the receiver consumed the slot, so it is stable while the write is in flight.
    fn pending_header(&mut self, p: u32, slot: u32, hdr: Header) {
        self.staged
            .push((self.layout.stage_header(p, slot), hdr.emit().to_vec()));
        let info = self.infos[p as usize];
        let rl = Layout::new(&self.cfg, info.region_base, info.peer_peers);
        let wr_id = self.alloc_wr(Pending::Header { peer: p, slot });
        self.out.push_back(WorkRequest {
            wr_id,
            op: Op::Write,
            peer: info.node,
            local_pdid: self.pdid,
            local_addr: self.layout.stage_header(p, slot),
            remote_pdid: info.pdid,
            remote_addr: rl.recv_slot(info.index_at_peer, slot),
            rkey: info.msg_rkey,
            len: HEADER_BYTES as u64,
        });
    }

    fn match_arrivals(&mut self, p: u32, host: &mut impl HostMem) {
        let k = self.cfg.slots_per_peer as u64;
        loop {
            let st = &self.states[p as usize];
            if st.recvs.is_empty() {
                break;
            }
            let slot = ((st.expected - 1) % k) as u32;
            let addr = self.layout.recv_slot(p, slot);
            let mut hb = [0u8; HEADER_BYTES];
            host.read(addr, &mut hb);
            let Some(h) = Header::parse(&hb) else { break };
            if h.seq != st.expected {
                break;
            }
            let st = &mut self.states[p as usize];
            let r = st.recvs.pop_front().expect("checked non-empty");
            st.expected += 1;
            st.consumed += 1;
            let peer = self.infos[p as usize].node;
            let err = if h.tag != r.tag {
                Some(RecvError::TagMismatch {
                    got: h.tag,
                    want: r.tag,
                })
            } else if h.len > r.len {
                Some(RecvError::Truncated {
                    msg_bytes: h.len,
                    buf_bytes: r.len,
                })
            } else {
                None
            };
            self.stats.received += 1;
            match (err, h.kind) {
                (Some(e), Kind::Rts) => {
                    // The sender still waits for its FIN: finish the rendezvous without data.
                    let st = &mut self.states[p as usize];
                    st.rndv_matched += 1;
                    let no = st.rndv_matched;
                    self.events.push_back(MsgEvent::Recv(RecvDone {
                        id: r.id,
                        peer,
                        seq: h.seq,
                        result: Err(e),
                    }));
                    self.rndv_finished(p, no);
                }
                (Some(e), Kind::Eager) => self.events.push_back(MsgEvent::Recv(RecvDone {
                    id: r.id,
                    peer,
                    seq: h.seq,
                    result: Err(e),
                })),
                (None, Kind::Eager) => {
                    if h.len > 0 {
                        host.copy(self.layout.recv_payload(p, slot), r.addr, h.len);
                    }
                    self.events.push_back(MsgEvent::Recv(RecvDone {
                        id: r.id,
                        peer,
                        seq: h.seq,
                        result: Ok(h.len),
                    }));
                }
                (None, Kind::Rts) => {
                    let st = &mut self.states[p as usize];
                    st.rndv_matched += 1;
                    let no = st.rndv_matched;
                    let wr_id = self.alloc_wr(Pending::Read {
                        peer: p,
                        rndv_no: no,
                        id: r.id,
                        seq: h.seq,
                        len: h.len,
                    });
                    self.out.push_back(WorkRequest {
                        wr_id,
                        op: Op::Read,
                        peer,
                        local_pdid: self.pdid,
                        local_addr: r.addr,
                        remote_pdid: h.pdid,
                        remote_addr: h.src_addr,
                        rkey: h.rkey,
                        len: h.len,
                    });
                }
            }
            self.maybe_credit(p);
        }
    }

    fn maybe_credit(&mut self, p: u32) {
        let k = self.cfg.slots_per_peer as u64;
        let st = &mut self.states[p as usize];
        // Return credits in batches of half the slots (at least one), one write at a time.
        if st.credit_inflight || st.consumed - st.credit_sent < (k / 2).max(1) {
            return;
        }
        let value = st.consumed;
        st.credit_inflight = true;
        self.stats.credit_writes += 1;
        self.staged
            .push((self.layout.stage_credit(p), value.to_le_bytes().to_vec()));
        let info = self.infos[p as usize];
        let rl = Layout::new(&self.cfg, info.region_base, info.peer_peers);
        let wr_id = self.alloc_wr(Pending::Credit { peer: p, value });
        self.out.push_back(WorkRequest {
            wr_id,
            op: Op::Write,
            peer: info.node,
            local_pdid: self.pdid,
            local_addr: self.layout.stage_credit(p),
            remote_pdid: info.pdid,
            remote_addr: rl.credit_in(info.index_at_peer),
            rkey: info.msg_rkey,
            len: 8,
        });
    }

    fn rndv_finished(&mut self, p: u32, no: u64) {
        let st = &mut self.states[p as usize];
        st.rndv_done.insert(no);
        while st.rndv_done.remove(&(st.fin_value + 1)) {
            st.fin_value += 1;
        }
        self.maybe_fin(p);
    }

    fn maybe_fin(&mut self, p: u32) {
        let st = &mut self.states[p as usize];
        if st.fin_inflight || st.fin_value == st.fin_sent {
            return;
        }
        let value = st.fin_value;
        st.fin_inflight = true;
        self.stats.fin_writes += 1;
        self.staged
            .push((self.layout.stage_fin(p), value.to_le_bytes().to_vec()));
        let info = self.infos[p as usize];
        let rl = Layout::new(&self.cfg, info.region_base, info.peer_peers);
        let wr_id = self.alloc_wr(Pending::Fin { peer: p, value });
        self.out.push_back(WorkRequest {
            wr_id,
            op: Op::Write,
            peer: info.node,
            local_pdid: self.pdid,
            local_addr: self.layout.stage_fin(p),
            remote_pdid: info.pdid,
            remote_addr: rl.fin_in(info.index_at_peer),
            rkey: info.msg_rkey,
            len: 8,
        });
    }

    fn alloc_wr(&mut self, what: Pending) -> u64 {
        let id = self.next_wr;
        self.next_wr += 1;
        self.pending.insert(id, what);
        id
    }

    /// A work request of ours completed at the NI. Completions of unknown ids are ignored.
    pub fn handle_completion(&mut self, c: &Completion, host: &mut impl HostMem) {
        let Some(what) = self.pending.remove(c.wr_id) else {
            return;
        };
        match what {
            Pending::Payload {
                peer,
                slot,
                hdr,
                id,
            } => {
                self.events.push_back(MsgEvent::SendDone {
                    id,
                    result: c.status,
                });
                match c.status {
                    Ok(()) => self.pending_header(peer, slot, hdr),
                    Err(e) => {
                        self.states[peer as usize].header_busy[slot as usize] = false;
                        self.events.push_back(MsgEvent::PeerFailed {
                            peer: self.infos[peer as usize].node,
                            error: e,
                        });
                    }
                }
            }
            Pending::Header { peer, slot } => {
                self.states[peer as usize].header_busy[slot as usize] = false;
                match c.status {
                    Ok(()) => self.pump_sends(peer),
                    Err(e) => self.events.push_back(MsgEvent::PeerFailed {
                        peer: self.infos[peer as usize].node,
                        error: e,
                    }),
                }
            }
            Pending::Credit { peer, value } => {
                let st = &mut self.states[peer as usize];
                st.credit_inflight = false;
                match c.status {
                    Ok(()) => {
                        st.credit_sent = value;
                        self.maybe_credit(peer);
                    }
                    Err(e) => self.events.push_back(MsgEvent::PeerFailed {
                        peer: self.infos[peer as usize].node,
                        error: e,
                    }),
                }
            }
            Pending::Fin { peer, value } => {
                let st = &mut self.states[peer as usize];
                st.fin_inflight = false;
                match c.status {
                    Ok(()) => {
                        st.fin_sent = value;
                        self.maybe_fin(peer);
                    }
                    Err(e) => self.events.push_back(MsgEvent::PeerFailed {
                        peer: self.infos[peer as usize].node,
                        error: e,
                    }),
                }
            }
            Pending::Read {
                peer,
                rndv_no,
                id,
                seq,
                len,
            } => {
                let result = c.status.map(|()| len).map_err(RecvError::Transport);
                self.events.push_back(MsgEvent::Recv(RecvDone {
                    id,
                    peer: self.infos[peer as usize].node,
                    seq,
                    result,
                }));
                self.rndv_finished(peer, rndv_no);
            }
        }
        self.flush_staged(host);
    }

    /// The next work request to post to the NI. Staged control words must be in memory first:
    /// call [`Endpoint::flush_staged`] (done by `handle_completion`) before posting.
    pub fn poll_post(&mut self, host: &mut impl HostMem) -> Option<WorkRequest> {
        self.flush_staged(host);
        self.out.pop_front()
    }

    /// Write staged headers and counter words into the region (host stores).
    pub fn flush_staged(&mut self, host: &mut impl HostMem) {
        for (addr, bytes) in self.staged.drain(..) {
            host.write(addr, &bytes);
        }
    }

    /// The next event for the host.
    pub fn poll_event(&mut self) -> Option<MsgEvent> {
        self.events.pop_front()
    }

    /// Whether work is left: queued sends, pending receives, operations in flight.
    pub fn is_busy(&self) -> bool {
        self.pending.len() > 0
            || !self.out.is_empty()
            || self
                .states
                .iter()
                .any(|s| !s.queue.is_empty() || !s.recvs.is_empty() || !s.rndv_wait.is_empty())
    }

    /// The configuration.
    pub fn config(&self) -> MsgConfig {
        self.cfg
    }

    /// This endpoint's node.
    pub fn node(&self) -> NodeId {
        self.me
    }
}
