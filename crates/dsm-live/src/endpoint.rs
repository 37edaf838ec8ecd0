//! Sends over RDMA writes: per-peer mailbox rings in exposed memory, plus polling (the live
//! runtime has only one-sided writes and reads, so control messages are built the way RDMA
//! libraries build sends).
//!
//! Each rank exposes one mailbox region: a ring of `slots` 64-byte slots per sender, then one
//! credit word per peer, then a heartbeat word. Sender `s` writes its `n`-th message (1-based)
//! into slot `(n-1) % slots` of its ring at the receiver; the receiver consumes its rings in
//! sequence order (so a channel is FIFO even if two writes land out of order) and returns
//! credits by writing its consumed count into the sender's credit word every `slots / 4`
//! messages. A sender never has more than `slots` unconsumed messages in a ring, rewrites a
//! slot only after the write of its previous message completed (a retransmission of that
//! write, its ACK lost, would otherwise land on the new message), and a receiver has at most
//! one credit return in flight per sender (two in flight may land in either order, leaving a
//! smaller count in the word; crates/dsm's `credit.rs`). Both rules close deadlocks the VOPR's
//! DSM swarm found under packet loss and reordering (docs/vopr.md).
//!
//! Page data moves by RDMA write from the sender's private view straight into the receiver's
//! private view ([`Endpoint::send_data`]); the notice that follows is posted only after the
//! data write completed, and nothing behind it in that peer's queue overtakes it.
//!
//! A failed completion (a peer that stopped answering, a refused access) makes the endpoint
//! *failed*: every waiter then reports [`DsmLiveError::PeerDead`] instead of hanging.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use rustc_hash::FxHashMap;
use unpinned_dsm::credit::CreditReturn;
use unpinned_live::{Perms, Runtime, WrId};
use unpinned_os::mapping::Mapping;

use crate::error::DsmLiveError;
use crate::wire::{self, WireMsg, SLOT_BYTES};

#[derive(Clone, Copy, Debug)]
struct PeerInfo {
    mbox: u64,
    mbox_key: u32,
    data: u64,
    data_len: u64,
    data_key: u32,
}

enum TxItem {
    Control(WireMsg),
    Data {
        offset: u64,
        len: usize,
        then: WireMsg,
    },
}

#[derive(Default)]
struct PeerTx {
    queue: VecDeque<TxItem>,
    /// Messages posted into the peer's ring.
    sent: u64,
    /// A data write whose notice waits at the queue head.
    blocked_on: Option<WrId>,
    /// Per slot of the peer's ring: the write of its last message has not completed.
    slot_busy: Vec<bool>,
    /// Credit returns to this peer (for its ring at this rank).
    credit: CreditReturn,
}

enum Inflight {
    /// A heartbeat: the staging buffer lives until completion.
    Staged(u32, #[allow(dead_code)] Box<[u8; SLOT_BYTES]>),
    /// A control message into slot `.1` of the peer's ring.
    Slot(u32, u32, #[allow(dead_code)] Box<[u8; SLOT_BYTES]>),
    /// A credit return to the peer.
    Credit(u32, #[allow(dead_code)] Box<[u8; SLOT_BYTES]>),
    Data(u32),
    /// An RDMA read; on success `then` is delivered locally.
    Read(u32, WireMsg),
}

/// What a staged write is for.
#[derive(Clone, Copy)]
enum StageKind {
    /// A control message into this slot of the peer's ring.
    Slot(u32),
    /// A credit return.
    Credit,
    /// A heartbeat.
    Heartbeat,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FailKind {
    /// The peer stopped answering.
    Dead,
    /// The peer sent nonsense.
    Malformed,
    /// This rank asked for something impossible.
    Local,
}

struct Tx {
    peers: Vec<PeerTx>,
    inflight: FxHashMap<WrId, Inflight>,
}

/// The receive side's lock (handlers of one endpoint never run concurrently).
struct Rx;

/// Counters of an endpoint.
#[derive(Clone, Copy, Debug, Default)]
pub struct EndpointStats {
    /// Control messages sent to other ranks.
    pub sent: u64,
    /// Control messages received from other ranks.
    pub received: u64,
    /// Data writes posted.
    pub data_writes: u64,
    /// Data reads posted (read faults served from a shared copy).
    pub data_reads: u64,
    /// Bytes of data written or read.
    pub data_bytes: u64,
}

/// One rank's messaging endpoint over a live [`Runtime`].
pub struct Endpoint {
    rt: Runtime,
    rank: u32,
    size: u32,
    slots: u64,
    mbox: Mapping,
    data_base: u64,
    peers: Vec<PeerInfo>,
    /// Messages consumed per sender (readable without the rx lock, for [`Endpoint::peek`]).
    heads: Vec<AtomicU64>,
    tx: Mutex<Tx>,
    rx: Mutex<Rx>,
    local: Mutex<VecDeque<WireMsg>>,
    local_len: AtomicU64,
    failed: AtomicBool,
    failure: Mutex<Option<(u32, String, FailKind)>>,
    quiet: AtomicBool,
    sent: AtomicU64,
    received: AtomicU64,
    data_writes: AtomicU64,
    data_reads: AtomicU64,
    data_bytes: AtomicU64,
}

impl Endpoint {
    /// Collective: map and expose this rank's mailbox and the data range `[data_base,
    /// +data_len)` (the private view; may be empty), and learn every peer's. `slots` per ring
    /// must be a power of two >= 4.
    pub fn new(
        rt: Runtime,
        data_base: u64,
        data_len: usize,
        slots: usize,
    ) -> Result<Endpoint, DsmLiveError> {
        if !slots.is_power_of_two() || slots < 4 {
            return Err(DsmLiveError::Config(format!(
                "mailbox slots {slots}: must be a power of two >= 4"
            )));
        }
        let (rank, size) = (rt.rank(), rt.size());
        let n = size as usize;
        let len = (n * slots * SLOT_BYTES + n * 8 + 8).next_multiple_of(4096);
        let mbox =
            Mapping::anon(len).map_err(|e| DsmLiveError::Os(format!("mailbox mapping: {e}")))?;
        // SAFETY: the mailbox is ours, outlives the runtime's use (the endpoint owns both and
        // drops the runtime first), and is only read with volatile loads while peers write.
        let mbox_key = unsafe { rt.expose(mbox.ptr(), mbox.len(), Perms::RW)? };
        let data_key = if data_len > 0 {
            // SAFETY: the caller's private view outlives the endpoint (see LiveSpace); peers
            // write only minipages this rank is receiving, which nobody else touches meanwhile.
            unsafe { rt.expose(data_base as *const u8, data_len, Perms::RW)? }
        } else {
            0
        };
        let mut me = Vec::with_capacity(32);
        me.extend_from_slice(&mbox.addr().to_le_bytes());
        me.extend_from_slice(&mbox_key.to_le_bytes());
        me.extend_from_slice(&data_base.to_le_bytes());
        me.extend_from_slice(&(data_len as u64).to_le_bytes());
        me.extend_from_slice(&data_key.to_le_bytes());
        let all = rt.all_gather(&me)?;
        let mut peers = Vec::with_capacity(n);
        for (r, d) in all.iter().enumerate() {
            if d.len() != 32 {
                return Err(DsmLiveError::Malformed {
                    from: r as u32,
                    why: format!("{}-byte endpoint record (expected 32)", d.len()),
                });
            }
            let u64_at = |i: usize| u64::from_le_bytes(d[i..i + 8].try_into().expect("8"));
            let u32_at = |i: usize| u32::from_le_bytes(d[i..i + 4].try_into().expect("4"));
            peers.push(PeerInfo {
                mbox: u64_at(0),
                mbox_key: u32_at(8),
                data: u64_at(12),
                data_len: u64_at(20),
                data_key: u32_at(28),
            });
        }
        Ok(Endpoint {
            rt,
            rank,
            size,
            slots: slots as u64,
            mbox,
            data_base,
            peers,
            heads: (0..n).map(|_| AtomicU64::new(0)).collect(),
            tx: Mutex::new(Tx {
                peers: (0..n)
                    .map(|_| PeerTx {
                        slot_busy: vec![false; slots],
                        ..PeerTx::default()
                    })
                    .collect(),
                inflight: FxHashMap::default(),
            }),
            rx: Mutex::new(Rx),
            local: Mutex::new(VecDeque::new()),
            local_len: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            quiet: AtomicBool::new(false),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
            data_writes: AtomicU64::new(0),
            data_reads: AtomicU64::new(0),
            data_bytes: AtomicU64::new(0),
        })
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Ranks in the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The runtime (for bootstrap collectives).
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// Counters.
    pub fn stats(&self) -> EndpointStats {
        EndpointStats {
            sent: self.sent.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            data_writes: self.data_writes.load(Ordering::Relaxed),
            data_reads: self.data_reads.load(Ordering::Relaxed),
            data_bytes: self.data_bytes.load(Ordering::Relaxed),
        }
    }

    fn ring_slot(&self, sender: u32, seq: u64) -> *const u8 {
        let idx = sender as u64 * self.slots + (seq - 1) % self.slots;
        // SAFETY: `idx < size * slots`, inside the mailbox mapping.
        unsafe { self.mbox.ptr().add(idx as usize * SLOT_BYTES) }
    }

    fn credit_word(&self, peer: u32) -> *const u64 {
        let off = self.size as usize * self.slots as usize * SLOT_BYTES + peer as usize * 8;
        // SAFETY: inside the mailbox mapping, 8-byte aligned.
        unsafe { self.mbox.ptr().add(off) as *const u64 }
    }

    fn remote_credit_addr(&self, peer: u32) -> u64 {
        self.peers[peer as usize].mbox
            + (self.size as u64 * self.slots * SLOT_BYTES as u64)
            + self.rank as u64 * 8
    }

    fn remote_heartbeat_addr(&self, peer: u32) -> u64 {
        self.peers[peer as usize].mbox
            + (self.size as u64 * self.slots * SLOT_BYTES as u64)
            + self.size as u64 * 8
    }

    fn fail(&self, rank: u32, why: String) {
        self.fail_kind(rank, why, FailKind::Dead);
    }

    fn fail_kind(&self, rank: u32, why: String, kind: FailKind) {
        let mut f = self.failure.lock().expect("failure lock");
        if f.is_none() {
            *f = Some((rank, why, kind));
        }
        self.failed.store(true, Ordering::SeqCst);
    }

    /// The first failure, if any.
    pub fn failure(&self) -> Option<DsmLiveError> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        let f = self.failure.lock().expect("failure lock");
        f.as_ref().map(|(rank, why, kind)| match kind {
            FailKind::Malformed => DsmLiveError::Malformed {
                from: *rank,
                why: why.clone(),
            },
            FailKind::Dead => DsmLiveError::PeerDead {
                rank: *rank,
                why: why.clone(),
            },
            FailKind::Local => DsmLiveError::Refused(why.clone()),
        })
    }

    /// Record a protocol failure found by a handler (e.g. a malformed message).
    pub fn fail_with(&self, e: &DsmLiveError) {
        match e {
            DsmLiveError::Malformed { from, why } => {
                self.fail_kind(*from, why.clone(), FailKind::Malformed)
            }
            DsmLiveError::PeerDead { rank, why } => {
                self.fail_kind(*rank, why.clone(), FailKind::Dead)
            }
            other => self.fail_kind(self.rank, other.to_string(), FailKind::Local),
        }
    }

    /// From now on completion failures are expected (shutdown) and not recorded.
    pub fn set_quiet(&self) {
        self.quiet.store(true, Ordering::SeqCst);
    }

    /// Send `m` to `to` (to this rank: queued locally, delivered by the next poll).
    pub fn send(&self, to: u32, m: WireMsg) {
        if to == self.rank {
            self.local.lock().expect("local queue").push_back(m);
            self.local_len.fetch_add(1, Ordering::Release);
            return;
        }
        let mut tx = self.tx.lock().expect("tx lock");
        tx.peers[to as usize].queue.push_back(TxItem::Control(m));
        self.pump(&mut tx, to);
    }

    /// Write `len` bytes at `offset` of the private view to the same offset at `to`, then send
    /// `then` (after the data write completed).
    pub fn send_data(&self, to: u32, offset: u64, len: usize, then: WireMsg) {
        if to == self.rank {
            self.send(to, then);
            return;
        }
        let mut tx = self.tx.lock().expect("tx lock");
        tx.peers[to as usize]
            .queue
            .push_back(TxItem::Data { offset, len, then });
        self.pump(&mut tx, to);
    }

    /// Post a small write of `bytes` from a staging buffer; `kind` says what it is for.
    fn stage(
        &self,
        tx: &mut Tx,
        to: u32,
        remote: u64,
        key: u32,
        bytes: &[u8],
        kind: StageKind,
    ) -> bool {
        let mut b = Box::new([0u8; SLOT_BYTES]);
        b[..bytes.len()].copy_from_slice(bytes);
        // SAFETY: the staging box is kept in `inflight` until the completion arrives.
        match unsafe { self.rt.write(to, b.as_ptr(), remote, key, bytes.len()) } {
            Ok(id) => {
                let what = match kind {
                    StageKind::Slot(i) => Inflight::Slot(to, i, b),
                    StageKind::Credit => Inflight::Credit(to, b),
                    StageKind::Heartbeat => Inflight::Staged(to, b),
                };
                tx.inflight.insert(id, what);
                true
            }
            Err(e) => {
                self.fail_kind(
                    to,
                    format!("posting a write to rank {to}: {e}"),
                    FailKind::Local,
                );
                false
            }
        }
    }

    fn pump(&self, tx: &mut Tx, to: u32) {
        let p = self.peers[to as usize];
        loop {
            let pt = &mut tx.peers[to as usize];
            if pt.blocked_on.is_some() {
                return;
            }
            let Some(head) = pt.queue.front() else { return };
            match head {
                TxItem::Control(m) => {
                    // SAFETY: the credit word lies in our mailbox; peers write it, we only read.
                    let consumed = unsafe { std::ptr::read_volatile(self.credit_word(to)) };
                    // A torn or future value (cannot be real) is ignored: wait for the next.
                    let consumed = if consumed <= pt.sent { consumed } else { 0 };
                    if pt.sent - consumed >= self.slots {
                        return; // ring full: retried by `progress`
                    }
                    let seq = pt.sent + 1;
                    let index = ((seq - 1) % self.slots) as usize;
                    if pt.slot_busy[index] {
                        return; // the slot's last write has not completed: retried then
                    }
                    pt.slot_busy[index] = true;
                    let slot = wire::encode(seq, m);
                    let remote = p.mbox
                        + (self.rank as u64 * self.slots + (seq - 1) % self.slots)
                            * SLOT_BYTES as u64;
                    pt.sent = seq;
                    pt.queue.pop_front();
                    self.sent.fetch_add(1, Ordering::Relaxed);
                    let kind = StageKind::Slot(index as u32);
                    if !self.stage(tx, to, remote, p.mbox_key, &slot, kind) {
                        return;
                    }
                }
                TxItem::Data { offset, len, .. } => {
                    let (offset, len) = (*offset, *len);
                    if offset + len as u64 > p.data_len {
                        self.fail_kind(to, format!("data write [{offset}, +{len}) to rank {to} lies outside its {} B data range", p.data_len), FailKind::Local);
                        return;
                    }
                    // SAFETY: the private view is mapped for the endpoint's life; the server does
                    // not write a minipage it is sending (the protocol serializes it).
                    let r = unsafe {
                        self.rt.write(
                            to,
                            (self.data_base + offset) as *const u8,
                            p.data + offset,
                            p.data_key,
                            len,
                        )
                    };
                    match r {
                        Ok(id) => {
                            self.data_writes.fetch_add(1, Ordering::Relaxed);
                            self.data_bytes.fetch_add(len as u64, Ordering::Relaxed);
                            tx.inflight.insert(id, Inflight::Data(to));
                            let pt = &mut tx.peers[to as usize];
                            pt.blocked_on = Some(id);
                            if let Some(TxItem::Data { then, .. }) = pt.queue.pop_front() {
                                pt.queue.push_front(TxItem::Control(then));
                            }
                        }
                        Err(e) => {
                            self.fail_kind(
                                to,
                                format!("posting a data write to rank {to}: {e}"),
                                FailKind::Local,
                            );
                        }
                    }
                    return;
                }
            }
        }
    }

    /// Read `len` bytes at `offset` of `from`'s data range into the same offset of ours, then
    /// deliver `then` locally (as if this rank had sent it to itself).
    pub fn read_then(&self, from: u32, offset: u64, len: usize, then: WireMsg) {
        let Some(p) = self.peers.get(from as usize).copied() else {
            return self.fail_kind(
                from,
                format!("RDMA read from rank {from}: no such rank"),
                FailKind::Local,
            );
        };
        if from == self.rank || offset + len as u64 > p.data_len {
            return self.fail_kind(from, format!("RDMA read [{offset}, +{len}) from rank {from}: outside its data range or this rank"), FailKind::Local);
        }
        let mut tx = self.tx.lock().expect("tx lock");
        // SAFETY: the destination is this rank's private view at a minipage the protocol gives
        // to this read alone (the requestor's copy is invalid and its manager busy with it).
        match unsafe {
            self.rt.read(
                from,
                (self.data_base + offset) as *mut u8,
                p.data + offset,
                p.data_key,
                len,
            )
        } {
            Ok(id) => {
                self.data_reads.fetch_add(1, Ordering::Relaxed);
                self.data_bytes.fetch_add(len as u64, Ordering::Relaxed);
                tx.inflight.insert(id, Inflight::Read(from, then));
            }
            Err(e) => self.fail_kind(
                from,
                format!("posting an RDMA read from rank {from}: {e}"),
                FailKind::Local,
            ),
        }
    }

    /// Take completions (releasing staged buffers and blocked notices, recording failures)
    /// and retry sends that waited for credits.
    pub fn progress(&self) {
        let mut any = false;
        while let Some(c) = self.rt.poll_completion() {
            any = true;
            let mut tx = self.tx.lock().expect("tx lock");
            let Some(what) = tx.inflight.remove(&c.wr_id) else {
                continue;
            };
            let peer = match what {
                Inflight::Staged(p, _) => p,
                Inflight::Slot(p, i, _) => {
                    tx.peers[p as usize].slot_busy[i as usize] = false;
                    p
                }
                Inflight::Credit(p, _) => {
                    let head = self.heads[p as usize].load(Ordering::Acquire);
                    let batch = self.slots / 4;
                    if c.status.is_ok() {
                        if let Some(h) = tx.peers[p as usize].credit.completed(head, batch) {
                            let (remote, key) =
                                (self.remote_credit_addr(p), self.peers[p as usize].mbox_key);
                            self.stage(
                                &mut tx,
                                p,
                                remote,
                                key,
                                &h.to_le_bytes(),
                                StageKind::Credit,
                            );
                        }
                    }
                    p
                }
                Inflight::Read(p, then) => {
                    if c.status.is_ok() {
                        self.local.lock().expect("local queue").push_back(then);
                        self.local_len.fetch_add(1, Ordering::Release);
                    }
                    p
                }
                Inflight::Data(p) => {
                    if tx.peers[p as usize].blocked_on == Some(c.wr_id) {
                        tx.peers[p as usize].blocked_on = None;
                    }
                    p
                }
            };
            if let Err(e) = c.status {
                if !self.quiet.load(Ordering::SeqCst) {
                    self.fail(peer, format!("a write to it failed: {e}"));
                }
            }
            self.pump(&mut tx, peer);
        }
        let _ = any;
        let mut tx = self.tx.lock().expect("tx lock");
        for p in 0..self.size {
            if !tx.peers[p as usize].queue.is_empty() {
                self.pump(&mut tx, p);
            }
        }
    }

    /// The mailbox of `peer` as (address, key): where its ring for this rank starts is
    /// `addr + rank * slots * 64`. For tools and tests that talk to the mailbox directly.
    pub fn mailbox_of(&self, peer: u32) -> Option<(u64, u32)> {
        self.peers.get(peer as usize).map(|p| (p.mbox, p.mbox_key))
    }

    /// Slots per ring.
    pub fn slots(&self) -> usize {
        self.slots as usize
    }

    /// Sends queued or writes not yet completed.
    pub fn busy(&self) -> bool {
        let tx = self.tx.lock().expect("tx lock");
        !tx.inflight.is_empty() || tx.peers.iter().any(|p| !p.queue.is_empty())
    }

    fn landed_slot(&self, sender: u32) -> Option<[u8; SLOT_BYTES]> {
        let seq = self.heads[sender as usize].load(Ordering::Acquire) + 1;
        // SAFETY: a slot of our mailbox; peers may be writing it, hence the volatile copy and
        // the sequence/check test before use.
        let s: [u8; SLOT_BYTES] = unsafe {
            std::ptr::read_volatile(self.ring_slot(sender, seq) as *const [u8; SLOT_BYTES])
        };
        wire::landed(&s, seq).then_some(s)
    }

    /// Is a message waiting (without consuming it)?
    pub fn peek(&self) -> bool {
        if self.local_len.load(Ordering::Acquire) > 0 {
            return true;
        }
        (0..self.size).any(|s| s != self.rank && self.landed_slot(s).is_some())
    }

    /// Consume waiting messages and run `handle` on each, in order per sender, under the
    /// receive lock (so handlers of one endpoint never run concurrently and per-channel FIFO
    /// order holds). Returns how many were handled; 0 if another thread is polling.
    pub fn handle_pending(&self, mut handle: impl FnMut(u32, WireMsg)) -> usize {
        let Ok(_rx) = self.rx.try_lock() else {
            return 0;
        };
        let mut n = 0;
        loop {
            let mut round = 0;
            while let Some(m) = {
                let mut q = self.local.lock().expect("local queue");
                q.pop_front()
            } {
                self.local_len.fetch_sub(1, Ordering::Release);
                handle(self.rank, m);
                round += 1;
            }
            for s in 0..self.size {
                if s == self.rank {
                    continue;
                }
                while let Some(slot) = self.landed_slot(s) {
                    let head = self.heads[s as usize].fetch_add(1, Ordering::AcqRel) + 1;
                    {
                        let mut tx = self.tx.lock().expect("tx lock");
                        let batch = self.slots / 4;
                        if let Some(h) = tx.peers[s as usize].credit.consumed(head, batch) {
                            self.stage(
                                &mut tx,
                                s,
                                self.remote_credit_addr(s),
                                self.peers[s as usize].mbox_key,
                                &h.to_le_bytes(),
                                StageKind::Credit,
                            );
                        }
                    }
                    self.received.fetch_add(1, Ordering::Relaxed);
                    match wire::decode(&slot) {
                        Ok(m) => handle(s, m),
                        Err(e) => self.fail_kind(s, e.to_string(), FailKind::Malformed),
                    }
                    round += 1;
                }
            }
            n += round;
            if round == 0 {
                return n;
            }
        }
    }

    /// Post an 8-byte write to every peer's heartbeat word: a dead peer makes it fail (after
    /// the engine's retries) and the endpoint failed.
    pub fn heartbeat(&self) {
        let mut tx = self.tx.lock().expect("tx lock");
        for p in 0..self.size {
            if p != self.rank {
                self.stage(
                    &mut tx,
                    p,
                    self.remote_heartbeat_addr(p),
                    self.peers[p as usize].mbox_key,
                    &[1u8; 8],
                    StageKind::Heartbeat,
                );
            }
        }
    }
}
