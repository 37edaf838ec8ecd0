//! Message passing for live programs: the sans-IO message layer of `unpinned-msg` on a
//! [`Runtime`] (eager sends into per-peer slots of a message region, rendezvous by RDMA read;
//! see that crate). Every other rank is a peer.
//!
//! The [`Messenger`] owns the runtime's completion queue while it is used (it takes every
//! completion with [`Runtime::poll_completion`]). Large send buffers are exposed read-only
//! for the rendezvous and revoked when the send completes; receive buffers need no exposure
//! (the data arrives by our own RDMA read, or by a copy out of a slot).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{fence, Ordering};

use unpinned_core::api::{Completion, Op, Perms, RemoteKey, WrId};
use unpinned_msg::{Endpoint, HostMem, Layout, MsgConfig, MsgEvent, PeerInfo};

use crate::api::{LiveError, Region, Runtime};
use unpinned_os::mapping::Mapping;

/// The process's own memory for the message layer (the engine thread writes the region on
/// packet arrival: reads are volatile and followed by an acquire fence).
struct Local;

impl HostMem for Local {
    fn read(&mut self, addr: u64, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: the endpoint reads only its own region (mapped for the Messenger's
            // life) and the user's receive buffers it was handed; volatile because the engine
            // thread writes them concurrently.
            *b = unsafe { std::ptr::read_volatile((addr as usize + i) as *const u8) };
        }
        fence(Ordering::Acquire);
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        // SAFETY: staging words of our own region; the engine reads them only for requests
        // posted after this store (the command channel orders them).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), addr as usize as *mut u8, data.len())
        };
    }

    fn copy(&mut self, src: u64, dst: u64, len: u64) {
        fence(Ordering::Acquire);
        // SAFETY: `src` is a slot payload whose header was seen (the bytes are complete and
        // no longer written), `dst` the user's receive buffer, lent until the receive ends.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src as usize as *const u8,
                dst as usize as *mut u8,
                len as usize,
            )
        };
    }
}

/// A rank's message endpoint on the live runtime.
pub struct Messenger<'a> {
    rt: &'a Runtime,
    ep: Option<Endpoint>,
    cfg: MsgConfig,
    region: Mapping,
    key: RemoteKey,
    inflight: HashMap<WrId, u64>,
    rndv_keys: HashMap<u64, RemoteKey>,
    events: VecDeque<MsgEvent>,
}

impl<'a> Messenger<'a> {
    /// Allocate and expose this rank's message region. Hand [`Messenger::region`] to every
    /// other rank, then call [`Messenger::connect`] with all ranks' regions (or use
    /// [`Messenger::establish`], which exchanges them with the runtime's bootstrap).
    pub fn new(rt: &'a Runtime, cfg: MsgConfig) -> Result<Messenger<'a>, LiveError> {
        cfg.validate()
            .map_err(|e| LiveError::Config(e.to_string()))?;
        let layout = Layout::new(&cfg, 0, rt.size().saturating_sub(1));
        let region = Mapping::anon(layout.region_bytes() as usize)
            .map_err(|e| LiveError::Config(format!("message region: {e}")))?;
        // SAFETY: the region lives as long as the Messenger, which revokes nothing before it is
        // dropped; we never hold references into it (all access is through raw pointers).
        let key = unsafe { rt.expose(region.ptr(), region.len(), Perms::RW)? };
        Ok(Messenger {
            rt,
            ep: None,
            cfg,
            region,
            key,
            inflight: HashMap::new(),
            rndv_keys: HashMap::new(),
            events: VecDeque::new(),
        })
    }

    /// This rank's region, for the others.
    pub fn region(&self) -> Region {
        Region {
            rank: self.rt.rank(),
            addr: self.region.ptr() as u64,
            len: self.region.len() as u64,
            key: self.key,
        }
    }

    /// Build the endpoint from every rank's region (indexed by rank).
    pub fn connect(&mut self, regions: &[Region]) -> Result<(), LiveError> {
        let (me, n) = (self.rt.rank(), self.rt.size());
        if regions.len() != n as usize {
            return Err(LiveError::Config(format!(
                "{} regions for {n} ranks",
                regions.len()
            )));
        }
        let peers = (0..n)
            .filter(|&p| p != me)
            .map(|p| PeerInfo {
                node: p,
                pdid: 0,
                region_base: regions[p as usize].addr,
                peer_peers: n - 1,
                index_at_peer: if me < p { me } else { me - 1 },
                msg_rkey: regions[p as usize].key,
            })
            .collect();
        let ep = Endpoint::new(me, 0, self.cfg, self.region.ptr() as u64, 0, peers)
            .map_err(|e| LiveError::Config(e.to_string()))?;
        self.ep = Some(ep);
        Ok(())
    }

    /// `new` + exchange of the regions through the runtime's bootstrap + `connect`.
    pub fn establish(rt: &'a Runtime, cfg: MsgConfig) -> Result<Messenger<'a>, LiveError> {
        let mut m = Messenger::new(rt, cfg)?;
        let r = m.region();
        let all = rt.exchange(r.addr, r.len, r.key)?;
        m.connect(&all)?;
        Ok(m)
    }

    fn ep(&mut self) -> Result<&mut Endpoint, LiveError> {
        self.ep
            .as_mut()
            .ok_or_else(|| LiveError::Config("Messenger not connected".into()))
    }

    /// Start sending `len` bytes at `buf` to `peer`. One `SendDone` with `id` follows.
    ///
    /// # Safety
    ///
    /// `[buf, buf+len)` must stay mapped and unmodified until the send is done.
    pub unsafe fn isend(
        &mut self,
        id: u64,
        peer: u32,
        buf: *const u8,
        len: usize,
        tag: u32,
    ) -> Result<(), LiveError> {
        let mut key = 0;
        if len as u64 > self.cfg.eager_max_bytes as u64 {
            // SAFETY: the caller lends the buffer until the send is done; the key is revoked then.
            key = unsafe { self.rt.expose(buf, len, Perms::R)? };
            self.rndv_keys.insert(id, key);
        }
        self.ep()?
            .isend_keyed(id, peer, buf as u64, len as u64, tag, key)
            .map_err(|e| LiveError::Config(e.to_string()))?;
        self.progress()
    }

    /// Post a receive of at most `len` bytes into `buf` from `peer`. One `Recv` with `id`
    /// follows.
    ///
    /// # Safety
    ///
    /// `[buf, buf+len)` must stay mapped and must not be accessed until the receive is done.
    pub unsafe fn irecv(
        &mut self,
        id: u64,
        peer: u32,
        buf: *mut u8,
        len: usize,
        tag: u32,
    ) -> Result<(), LiveError> {
        self.ep()?
            .irecv(id, peer, buf as u64, len as u64, tag)
            .map_err(|e| LiveError::Config(e.to_string()))?;
        self.progress()
    }

    /// Make progress: completions in, region polled, work requests out.
    pub fn progress(&mut self) -> Result<(), LiveError> {
        while let Some(c) = self.rt.poll_completion() {
            let Some(wr) = self.inflight.remove(&c.wr_id) else {
                continue;
            };
            let c = Completion { wr_id: wr, ..c };
            self.ep()?.handle_completion(&c, &mut Local);
        }
        let ep = self
            .ep
            .as_mut()
            .ok_or_else(|| LiveError::Config("Messenger not connected".into()))?;
        ep.poll(&mut Local);
        while let Some(wr) = ep.poll_post(&mut Local) {
            // SAFETY: the layer posts from the user's lent buffers or its own region, and
            // reads into lent receive buffers; all stay valid until the completion.
            let id = unsafe {
                match wr.op {
                    Op::Write => self.rt.write(
                        wr.peer,
                        wr.local_addr as usize as *const u8,
                        wr.remote_addr,
                        wr.rkey,
                        wr.len as usize,
                    )?,
                    Op::Read => self.rt.read(
                        wr.peer,
                        wr.local_addr as usize as *mut u8,
                        wr.remote_addr,
                        wr.rkey,
                        wr.len as usize,
                    )?,
                }
            };
            self.inflight.insert(id, wr.wr_id);
        }
        while let Some(ev) = ep.poll_event() {
            if let MsgEvent::SendDone { id, .. } = ev {
                if let Some(k) = self.rndv_keys.remove(&id) {
                    self.rt.revoke(k)?;
                }
            }
            self.events.push_back(ev);
        }
        Ok(())
    }

    /// The next event, after making progress.
    pub fn poll_event(&mut self) -> Result<Option<MsgEvent>, LiveError> {
        self.progress()?;
        Ok(self.events.pop_front())
    }
}
