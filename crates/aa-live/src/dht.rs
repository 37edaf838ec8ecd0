//! The distributed hash table of spec "Use cases" across real processes: every rank owns a
//! volume in its own memory (crates/aa's [`VolumeLayout`]: a table, an overflow heap with
//! per-slot last pointers and a next-free-cell counter, a page for AA deletes), plus one
//! flushing page for the active flush.
//!
//! - **AA inserts**: one active put of the key to its slot's address; the owner's handler
//!   thread inserts with local atomics ([`LiveVolume::insert`], the same algorithm as
//!   crates/aa's `Volume::local_insert`).
//! - **RMA inserts**: crates/aa's [`RmaInsert`] protocol driven over the live runtime's remote
//!   atomics: a CAS on the slot; on a collision a fetch-and-add for a free cell, a put plus
//!   flush of the element, a fetch-and-replace of the last pointer and a CAS on the previous
//!   next pointer.
//! - **Lookups**: plain RMA gets walking the chain (crates/aa's [`RmaLookup`]).
//! - **AA deletes**: active puts of keys to the owner's delete page.
//!
//! Keys owned by the calling rank are inserted locally with the same local atomics (the
//! runtime does not send to itself); deleting them is refused ([`DhtError::LocalDelete`]),
//! because the delete algorithm assumes a single writer (the handler).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use unpinned_aa::atomics::WordMemory;
use unpinned_aa::dht::{
    DhtError as VolumeError, DhtMap, RemoteOp, RmaInsert, RmaLookup, VolumeLayout,
};
use unpinned_aa::log::{EntryKind, LogEntry};
use unpinned_core::api::{AtomicOp, WrId};
use unpinned_core::memory::PAGE_BYTES;

use crate::{ActiveAccess, ActiveError, Handler, Notify, PageBits};
use unpinned_live::{LiveError, Perms, Region};
use unpinned_os::mapping::Mapping;

use crate::runtime::ActiveRuntime;

/// The access log the DHT's handler uses.
pub const DHT_IUID: u32 = 1;

/// Errors of the live DHT.
#[derive(Debug, thiserror::Error)]
pub enum DhtError {
    /// The runtime failed.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// Active Access setup failed.
    #[error(transparent)]
    Active(#[from] ActiveError),
    /// The volume could not be mapped.
    #[error("cannot map the volume: {0}")]
    Map(std::io::Error),
    /// An operation on the volume of `rank` failed (its overflow heap is full, or the table
    /// is corrupted: a link taken, a chain that loops).
    #[error("the volume of rank {rank}: {source}")]
    Volume {
        /// The rank owning the volume.
        rank: u32,
        /// What went wrong there.
        source: VolumeError,
    },
    /// Deleting a key this rank owns: only the handler deletes.
    #[error("key {0:#x} is owned by this rank: delete it from another rank")]
    LocalDelete(u64),
    /// Deletes are active puts: the DHT was created with the RMA scheme.
    #[error("deletes need the AA scheme")]
    NoActiveDelete,
    /// Bad parameters.
    #[error("invalid DHT parameters: {0}")]
    Invalid(String),
}

/// How inserts are carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// One active put per insert, the owner's handler inserts.
    Aa,
    /// The RMA protocol with remote atomics.
    Rma,
}

impl Scheme {
    /// `aa` or `rma`.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Aa => "aa",
            Scheme::Rma => "rma",
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Scheme, String> {
        match s {
            "aa" => Ok(Scheme::Aa),
            "rma" => Ok(Scheme::Rma),
            o => Err(format!("{o:?} is not aa or rma")),
        }
    }
}

/// The words of a [`LiveVolume`] as crates/aa's volume operations see them: every access is
/// atomic, as the handler thread shares them with the engine (remote atomics and gets).
struct Words<'a>(&'a LiveVolume);

impl WordMemory for Words<'_> {
    fn load(&self, addr: u64) -> u64 {
        self.0.word(addr).load(Ordering::SeqCst)
    }
    fn store(&mut self, addr: u64, v: u64) {
        self.0.word(addr).store(v, Ordering::SeqCst)
    }
    fn atomic(&mut self, addr: u64, op: AtomicOp) -> u64 {
        op.apply_atomic(self.0.word(addr))
    }
}

/// One rank's volume, in a private anonymous mapping of this process.
pub struct LiveVolume {
    layout: VolumeLayout,
    map: Mapping,
    /// Handler entries that were not well-formed DHT operations (ignored, counted).
    pub rejected: AtomicU64,
}

impl LiveVolume {
    /// A zeroed volume of `2^slot_bits` slots and `heap_cells` overflow cells.
    pub fn new(slot_bits: u32, heap_cells: u32) -> Result<LiveVolume, DhtError> {
        if !(1..=24).contains(&slot_bits) || heap_cells == 0 {
            return Err(DhtError::Invalid(format!(
                "slot_bits {slot_bits} (1..=24), heap_cells {heap_cells} (>= 1)"
            )));
        }
        let probe = VolumeLayout {
            base: 0,
            table_slots: 1 << slot_bits,
            heap_cells,
        };
        // Volume, then the flushing page.
        let len = (probe.span() + PAGE_BYTES) as usize;
        let map = Mapping::anon(len).map_err(DhtError::Map)?;
        let layout = VolumeLayout {
            base: map.addr(),
            ..probe
        };
        Ok(LiveVolume {
            layout,
            map,
            rejected: AtomicU64::new(0),
        })
    }

    /// Make every page of the volume present, so that a measurement that follows sees no
    /// first-touch faults (the contents stay zero).
    pub fn page_in(&self) -> Result<(), DhtError> {
        let start = self.map.addr();
        unpinned_os::populate::page_in(start, start + self.map.len() as u64, true)
            .map_err(|e| DhtError::Map(std::io::Error::from_raw_os_error(e)))
    }

    /// Where the fields are.
    pub fn layout(&self) -> VolumeLayout {
        self.layout
    }

    /// The flushing page (after the delete page).
    pub fn flush_page(&self) -> u64 {
        self.layout.delete_page() + PAGE_BYTES
    }

    fn word(&self, addr: u64) -> &AtomicU64 {
        assert!(
            addr >= self.map.addr()
                && addr + 8 <= self.map.addr() + self.map.len() as u64
                && addr.is_multiple_of(8),
            "word {addr:#x} outside the volume"
        );
        // SAFETY: in bounds of our live mapping (checked above) and 8-byte aligned; the words
        // of a volume are only accessed atomically (here, by the engine's atomics) or read by
        // the engine for remote gets.
        unsafe { &*(addr as usize as *const AtomicU64) }
    }

    /// Insert with local atomics (crates/aa's [`VolumeLayout::local_insert`], on real memory).
    /// Returns the memory accesses made (1 without collision, 5 with).
    pub fn insert(&self, key: u64, slot: u32) -> Result<u32, VolumeError> {
        self.layout.local_insert(&mut Words(self), key, slot)
    }

    /// Delete (single writer: the handler; crates/aa's [`VolumeLayout::local_delete`]).
    /// Returns whether the key was found.
    pub fn delete(&self, key: u64, slot: u32) -> bool {
        self.layout.local_delete(&mut Words(self), key, slot).0
    }

    /// Keys of slot `s`, slot first then the chain.
    pub fn chain(&self, s: u32) -> Result<Vec<u64>, VolumeError> {
        self.layout.chain(&Words(self), s)
    }

    /// Every non-empty slot with its keys sorted (crates/aa `Volume::contents`' format).
    pub fn contents(&self) -> Result<BTreeMap<u32, Vec<u64>>, VolumeError> {
        self.layout
            .contents(&Words(self), 0..self.layout.table_slots)
    }

    /// The handler: active puts of 8-byte keys to a slot insert, to the delete page delete.
    pub fn handle(&self, map: DhtMap, e: &LogEntry) {
        let ok = e.header.kind == EntryKind::ActivePut && e.data.len() == 8;
        let key = if ok {
            u64::from_le_bytes(e.data[..8].try_into().expect("8 bytes"))
        } else {
            0
        };
        let l = self.layout;
        let done = if !ok || key == 0 {
            false
        } else if e.header.addr == l.delete_page() {
            self.delete(key, map.locate(key).1);
            true
        } else if let Some(slot) = l.slot_of(e.header.addr) {
            self.insert(key, slot).is_ok()
        } else {
            false
        };
        if !done {
            self.rejected.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Per-insert-batch counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InsertStats {
    /// Keys inserted.
    pub inserts: u64,
    /// Remote operations issued (puts, atomics, gets; flushes not counted).
    pub remote_ops: u64,
    /// Inserts that took the collision path (RMA only; AA collisions happen in the handler).
    pub collisions: u64,
}

/// One rank's part of the live DHT.
pub struct Dht<'rt> {
    rt: &'rt ActiveRuntime,
    vol: Arc<LiveVolume>,
    map: DhtMap,
    scheme: Scheme,
    regions: Vec<Region>,
    handler: Option<Handler>,
    key: u32,
    window: usize,
}

/// One RMA insert in flight: its protocol state and the words its requests use.
struct Flight {
    ins: RmaInsert,
    target: u32,
    /// Where an atomic's old value or a get's word lands.
    result: Box<u64>,
    /// The source of a put.
    data: Box<u64>,
    wr: Option<WrId>,
}

impl<'rt> Dht<'rt> {
    /// Collective: every rank creates its volume (`2^slot_bits` slots, `heap_cells` cells),
    /// exposes it and, for AA, marks the table and delete page active, the flushing page, and
    /// starts the handler (`notify`) on a log of `log_bytes`; then the ranks exchange their
    /// regions ([`Runtime::exchange`](unpinned_live::Runtime::exchange)).
    pub fn create(
        rt: &'rt ActiveRuntime,
        slot_bits: u32,
        heap_cells: u32,
        scheme: Scheme,
        notify: Notify,
        log_bytes: u32,
    ) -> Result<Dht<'rt>, DhtError> {
        let mut d = Dht::local(rt, slot_bits, heap_cells, scheme, notify, log_bytes)?;
        let r = d.region();
        let regions = rt.exchange(r.addr, r.len, r.key)?;
        d.connect(regions)?;
        Ok(d)
    }

    /// [`Dht::create`] without the exchange (for ranks that share an address space and learn
    /// each other's regions otherwise): give every rank's [`Dht::region`] to [`Dht::connect`]
    /// before use.
    pub fn local(
        rt: &'rt ActiveRuntime,
        slot_bits: u32,
        heap_cells: u32,
        scheme: Scheme,
        notify: Notify,
        log_bytes: u32,
    ) -> Result<Dht<'rt>, DhtError> {
        if rt.size() as u64 > 1u64 << (32 - slot_bits.min(31)) {
            return Err(DhtError::Invalid("too many ranks for the slot bits".into()));
        }
        let vol = Arc::new(LiveVolume::new(slot_bits, heap_cells)?);
        let l = vol.layout();
        let len = vol.flush_page() + PAGE_BYTES - l.base;
        // SAFETY: the mapping lives as long as the `Dht`, whose `Drop` revokes the exposure
        // before the mapping can go; no Rust references to its bytes exist (the volume
        // reaches them through atomics only).
        let key = unsafe { rt.expose(l.base as *const u8, len as usize, Perms::RW)? };
        let map = DhtMap {
            procs: rt.size(),
            slot_bits,
        };
        let mut handler = None;
        if scheme == Scheme::Aa {
            let aa = rt.active();
            // A log left by an earlier DHT of this runtime is reused (it was drained when that
            // DHT's handler stopped).
            let iuid = match aa.create_log(DHT_IUID, log_bytes) {
                Err(ActiveError::LogExists(_)) => {
                    crate::Iuid::new(DHT_IUID as u16).expect("DHT_IUID is a valid IUID")
                }
                r => r?,
            };
            aa.assoc_pages(l.base, l.heap() - l.base, PageBits::active_put(iuid))?;
            aa.assoc_pages(l.delete_page(), PAGE_BYTES, PageBits::active_put(iuid))?;
            aa.assoc_pages(
                vol.flush_page(),
                PAGE_BYTES,
                ActiveAccess::flush_page_bits(iuid),
            )?;
            let v = vol.clone();
            handler = Some(aa.spawn_handler(DHT_IUID, notify, move |e| v.handle(map, e))?);
        }
        let regions = vec![Region {
            rank: rt.rank(),
            addr: l.base,
            len,
            key,
        }];
        Ok(Dht {
            rt,
            vol,
            map,
            scheme,
            regions,
            handler,
            key,
            window: 16,
        })
    }

    /// This rank's exposed volume (what [`Dht::connect`] needs from every rank).
    pub fn region(&self) -> Region {
        *self
            .regions
            .iter()
            .find(|r| r.rank == self.rt.rank())
            .expect("own region")
    }

    /// Learn every rank's region, by rank.
    pub fn connect(&mut self, regions: Vec<Region>) -> Result<(), DhtError> {
        let ok = regions.len() == self.rt.size() as usize
            && regions
                .iter()
                .enumerate()
                .all(|(i, r)| r.rank == i as u32 && r.len == self.region().len);
        if !ok {
            return Err(DhtError::Invalid(
                "regions must be one per rank, by rank, of equal volumes".into(),
            ));
        }
        self.regions = regions;
        Ok(())
    }

    /// The key -> (rank, slot) map.
    pub fn map(&self) -> DhtMap {
        self.map
    }

    /// This rank's volume.
    pub fn volume(&self) -> &LiveVolume {
        &self.vol
    }

    /// Layout of `rank`'s volume (at its addresses).
    pub fn layout_of(&self, rank: u32) -> VolumeLayout {
        VolumeLayout {
            base: self.regions[rank as usize].addr,
            ..self.vol.layout()
        }
    }

    fn rkey(&self, rank: u32) -> u32 {
        self.regions[rank as usize].key
    }

    /// Inserts (and deletes) kept in flight at once by [`Dht::insert`] (default 16).
    pub fn set_window(&mut self, window: usize) {
        self.window = window.max(1);
    }

    /// Insert `keys` (nonzero), keeping up to the window in flight. AA: one active put per
    /// key, then an active flush to every rank touched, so that on return every key is in
    /// its table. RMA: the protocol per key (each key's operations in order, keys in
    /// parallel). Keys this rank owns are inserted locally.
    pub fn insert(&self, keys: &[u64]) -> Result<InsertStats, DhtError> {
        if keys.contains(&0) {
            return Err(DhtError::Invalid("key 0 means empty".into()));
        }
        match self.scheme {
            Scheme::Aa => self.insert_aa(keys),
            Scheme::Rma => self.insert_rma(keys),
        }
    }

    fn wait_done(&self, id: WrId) -> Result<(), DhtError> {
        loop {
            match self.rt.wait(id) {
                // The buffer is still lent to the engine: keep waiting.
                Err(LiveError::Timeout(_)) => continue,
                r => return r.map(|_| ()).map_err(DhtError::from),
            }
        }
    }

    fn local_insert(&self, key: u64, slot: u32, st: &mut InsertStats) -> Result<(), DhtError> {
        let me = self.rt.rank();
        match self.vol.insert(key, slot) {
            Ok(n) => {
                st.collisions += u64::from(n > 1);
                Ok(())
            }
            Err(source) => Err(DhtError::Volume { rank: me, source }),
        }
    }

    fn insert_aa(&self, keys: &[u64]) -> Result<InsertStats, DhtError> {
        let me = self.rt.rank();
        let mut st = InsertStats::default();
        let mut touched = vec![false; self.rt.size() as usize];
        let mut inflight = VecDeque::with_capacity(self.window);
        for key in keys {
            let (t, slot) = self.map.locate(*key);
            st.inserts += 1;
            if t == me {
                self.local_insert(*key, slot, &mut st)?;
                continue;
            }
            if inflight.len() >= self.window {
                self.wait_done(inflight.pop_front().expect("nonempty"))?;
            }
            let addr = self.layout_of(t).slot_key(slot);
            // SAFETY: `keys` is borrowed until we return, after every write completed.
            let id = unsafe {
                self.rt
                    .write(t, key as *const u64 as *const u8, addr, self.rkey(t), 8)?
            };
            inflight.push_back(id);
            touched[t as usize] = true;
            st.remote_ops += 1;
        }
        while let Some(id) = inflight.pop_front() {
            self.wait_done(id)?;
        }
        for (t, _) in touched.iter().enumerate().filter(|(_, &x)| x) {
            self.active_flush(t as u32)?;
        }
        Ok(st)
    }

    /// Issue the next operation of `f` (puts complete before the protocol goes on, so its
    /// "flush" step is already done); `f.wr` is `None` when the insert is complete.
    fn issue(&self, f: &mut Flight) -> Result<(), DhtError> {
        let rkey = self.rkey(f.target);
        loop {
            let Some(op) = f.ins.op() else {
                f.wr = None;
                return Ok(());
            };
            f.wr = Some(match op {
                RemoteOp::Flush => {
                    self.step(f, 0)?;
                    continue;
                }
                RemoteOp::Atomic { addr, op } => {
                    // SAFETY: `f.result` is a heap word owned by the flight, not accessed
                    // until this request completes.
                    unsafe {
                        self.rt
                            .post_atomic(f.target, &mut *f.result, addr, rkey, op)?
                    }
                }
                RemoteOp::Put { addr, value } => {
                    *f.data = value;
                    // SAFETY: `f.data` is a heap word owned by the flight, unchanged until
                    // this request completes.
                    unsafe {
                        self.rt.write(
                            f.target,
                            &*f.data as *const u64 as *const u8,
                            addr,
                            rkey,
                            8,
                        )?
                    }
                }
                RemoteOp::Get { addr } => {
                    // SAFETY: as for atomics.
                    unsafe {
                        self.rt.read(
                            f.target,
                            &mut *f.result as *mut u64 as *mut u8,
                            addr,
                            rkey,
                            8,
                        )?
                    }
                }
            });
            return Ok(());
        }
    }

    fn step(&self, f: &mut Flight, result: u64) -> Result<(), DhtError> {
        f.ins.on_result(result).map_err(|source| DhtError::Volume {
            rank: f.target,
            source,
        })
    }

    fn insert_rma(&self, keys: &[u64]) -> Result<InsertStats, DhtError> {
        let me = self.rt.rank();
        let mut st = InsertStats::default();
        let mut inflight: VecDeque<Flight> = VecDeque::with_capacity(self.window);
        let mut next = keys.iter();
        loop {
            while inflight.len() < self.window {
                let Some(&key) = next.next() else { break };
                let (t, slot) = self.map.locate(key);
                st.inserts += 1;
                if t == me {
                    self.local_insert(key, slot, &mut st)?;
                    continue;
                }
                let mut f = Flight {
                    ins: RmaInsert::new(self.layout_of(t), key, slot),
                    target: t,
                    result: Box::new(0),
                    data: Box::new(0),
                    wr: None,
                };
                self.issue(&mut f)?;
                inflight.push_back(f);
            }
            let Some(mut f) = inflight.pop_front() else {
                break;
            };
            let id = f.wr.expect("in flight");
            self.wait_done(id)?;
            // SAFETY: the request completed: the engine no longer writes `f.result`.
            let r = unsafe { std::ptr::read_volatile(&*f.result) };
            self.step(&mut f, r)?;
            self.issue(&mut f)?;
            if f.wr.is_some() {
                inflight.push_back(f);
            } else {
                st.remote_ops += f.ins.remote_ops() as u64;
                st.collisions += u64::from(f.ins.collided());
            }
        }
        Ok(st)
    }

    /// Active flush towards `rank`: its handler has processed everything we issued.
    pub fn active_flush(&self, rank: u32) -> Result<(), DhtError> {
        let fp = self.layout_of(rank).delete_page() + PAGE_BYTES;
        Ok(self.rt.active_flush(rank, fp, self.rkey(rank))?)
    }

    fn remote(&self, t: u32, op: RemoteOp) -> Result<u64, DhtError> {
        let rkey = self.rkey(t);
        Ok(match op {
            RemoteOp::Atomic { addr, op } => self.rt.atomic(t, addr, rkey, op)?,
            RemoteOp::Put { addr, value } => {
                // A blocking write is the put plus its flush.
                self.rt
                    .write_blocking(t, &value.to_le_bytes(), addr, rkey)?;
                0
            }
            RemoteOp::Flush => 0,
            RemoteOp::Get { addr } => {
                let mut b = [0u8; 8];
                self.rt.read_blocking(t, &mut b, addr, rkey)?;
                u64::from_le_bytes(b)
            }
        })
    }

    /// Look `key` up with RMA gets (local keys are read directly).
    pub fn lookup(&self, key: u64) -> Result<bool, DhtError> {
        let (t, slot) = self.map.locate(key);
        if t == self.rt.rank() {
            let chain = self
                .vol
                .chain(slot)
                .map_err(|source| DhtError::Volume { rank: t, source })?;
            return Ok(chain.contains(&key));
        }
        let mut lk = RmaLookup::new(self.layout_of(t), key, slot);
        while let Some(op) = lk.op() {
            let w = self.remote(t, op)?;
            lk.on_result(w);
        }
        Ok(lk.result().unwrap_or(false))
    }

    /// Delete `keys` (AA only: active puts to the owners' delete pages), then active-flush.
    pub fn delete(&self, keys: &[u64]) -> Result<(), DhtError> {
        if self.scheme != Scheme::Aa {
            return Err(DhtError::NoActiveDelete);
        }
        let me = self.rt.rank();
        if let Some(&k) = keys.iter().find(|&&k| self.map.locate(k).0 == me) {
            return Err(DhtError::LocalDelete(k));
        }
        let mut touched = vec![false; self.rt.size() as usize];
        for k in keys {
            let t = self.map.locate(*k).0;
            let addr = self.layout_of(t).delete_page();
            // SAFETY: `keys` is borrowed until the flush below completed every write.
            unsafe {
                self.rt
                    .write(t, k as *const u64 as *const u8, addr, self.rkey(t), 8)?
            };
            touched[t as usize] = true;
        }
        self.rt.flush()?;
        for (t, _) in touched.iter().enumerate().filter(|(_, &x)| x) {
            self.active_flush(t as u32)?;
        }
        Ok(())
    }

    /// Stop the handler (after it processed everything published) and report it.
    /// Call after a barrier: peers' later active puts would stay unprocessed.
    pub fn stop_handler(&mut self) -> Option<crate::HandlerReport> {
        self.handler.take().and_then(|h| h.stop())
    }
}

impl Drop for Dht<'_> {
    fn drop(&mut self) {
        let _ = self.rt.revoke(self.key);
        if self.scheme == Scheme::Aa {
            let l = self.vol.layout();
            let _ = self
                .rt
                .active()
                .clear_pages(l.base, self.vol.flush_page() + PAGE_BYTES - l.base);
        }
        let _ = self.stop_handler();
    }
}
