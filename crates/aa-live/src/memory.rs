//! [`ActiveMemory`]: the live runtime's [`LiveMemory`] behind the Active Access IOMMU
//! extension (spec active-access.md, "IOMMU extensions").
//!
//! The engine thread reaches process memory only through the core `Memory` trait; remote
//! puts arrive as [`Memory::write_from`] and packets served to remote gets as
//! [`Memory::read_for`], both with their origin (peer, transfer id, offset, whole range). Here
//! each such packet is decided by the bits of its page (crates/aa's [`PageBits`] decision
//! table), exactly as the IOMMU model does:
//!
//! - plain pages (and every access while no page is marked): straight to [`LiveMemory`];
//! - `W=1, WL=1`: written, then its metadata (or metadata + data) logged;
//! - `W=0, WL=1, WLD=1` (active put): not written; metadata + data reassembled into the log;
//! - `R=1, RL=1`: served, then counted or its data logged;
//! - `R=0, RL=1` (active get, the flushing page): held until the page's log is drained, then
//!   served (the active flush);
//! - faults: `E=1` logs a fault entry, both refuse the access (a protection error at the
//!   source), and nothing is written.
//!
//! Back-pressure: a packet whose entry does not fit the log is answered as a missing page
//! ([`MemError::NotPresent`]): the engine NACKs the block, the page-in thread (which finds the
//! page mappable) sends the ERR, and the source resends the block: the spec's "the sender
//! drops and retries". Nothing is overwritten or lost; duplicates of already logged packets
//! are recognised by the reassembler (per source, transfer and offset) and not logged twice.
//!
//! The page of a packet's first byte decides for the whole packet (accesses that straddle a
//! marked and an unmarked page are decided by their first page, as in the simulator's model).

use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use unpinned_aa::log::{EntryHeader, EntryKind};
use unpinned_aa::pte::{GetAction, PageBits, PutAction};
use unpinned_aa::reassembly::{Fragment, FragmentOutcome};
use unpinned_core::api::AtomicOp;
use unpinned_core::memory::{page_of, AccessOrigin, MemError, Memory, Pdid};

use crate::state::ActiveState;
use unpinned_live::memory::LiveMemory;

/// Gets are named `(peer, transfer id | GET_TXN)` in the logs, so that a get and a put of the
/// same peer with the same numeric transfer id are different accesses.
const GET_TXN: u32 = 1 << 31;

/// [`LiveMemory`] with the Active Access checks and logging in front of it.
pub struct ActiveMemory {
    inner: LiveMemory,
    state: Arc<ActiveState>,
}

impl ActiveMemory {
    pub(crate) fn new(inner: LiveMemory, state: Arc<ActiveState>) -> ActiveMemory {
        ActiveMemory { inner, state }
    }

    /// Log one fragment into the log of `bits.iuid`. `Err` = back-pressure or no such log.
    fn log_fragment(
        &self,
        bits: PageBits,
        header: EntryHeader,
        offset: u32,
        data: &[u8],
    ) -> Result<FragmentOutcome, MemError> {
        let Some(log) = self.state.log(bits.iuid) else {
            // A marked page naming a log that does not exist: refused, never a silent write.
            return Err(MemError::Unmapped { addr: header.addr });
        };
        let mut ring = log.ring.lock().expect("access log");
        let r = &mut *ring;
        let out = r.re.on_fragment(
            &mut r.log,
            Fragment {
                header,
                offset,
                data,
            },
        );
        match out {
            Ok(o) => {
                log.after_change(r, self.state.now_ns());
                Ok(o)
            }
            Err(_) => {
                self.state.counters.stalls.fetch_add(1, Ordering::Relaxed);
                Err(MemError::NotPresent {
                    page_addr: page_of(header.addr + offset as u64),
                })
            }
        }
    }

    fn put(
        &mut self,
        pdid: Pdid,
        addr: u64,
        data: &[u8],
        o: &AccessOrigin,
        bits: PageBits,
    ) -> Result<(), MemError> {
        let action = bits.put_action();
        let (kind, with_data) = match action {
            PutAction::Write => return self.inner.write(pdid, addr, data),
            PutAction::WriteLogMeta => (EntryKind::PutMeta, false),
            PutAction::WriteLogData => (EntryKind::PutData, true),
            PutAction::Active => (EntryKind::ActivePut, true),
            PutAction::FaultToAccessLog => (EntryKind::Fault, false),
            PutAction::FaultToSystemLog => {
                self.state.counters.faults.fetch_add(1, Ordering::Relaxed);
                return Err(MemError::Unmapped { addr });
            }
        };
        if o.xfer_len > u32::MAX as u64 || o.offset > u32::MAX as u64 {
            // Log entries describe accesses of up to 4 GiB.
            return Err(MemError::Unmapped { addr });
        }
        if matches!(action, PutAction::WriteLogMeta | PutAction::WriteLogData) {
            // Written first: if this fails (page missing) nothing is logged, and the
            // retransmission after the page-in does both. Rewriting is idempotent.
            self.inner.write(pdid, addr, data)?;
        }
        self.log_access(
            addr,
            bits,
            kind,
            with_data,
            o.transfer_id & !GET_TXN,
            o,
            data,
            false,
        )
    }

    fn get(
        &mut self,
        pdid: Pdid,
        addr: u64,
        out: &mut [u8],
        o: &AccessOrigin,
        bits: PageBits,
    ) -> Result<(), MemError> {
        let action = bits.get_action();
        let (kind, with_data) = match action {
            GetAction::Read => return self.inner.read(pdid, addr, out),
            GetAction::ReadLogMeta => (EntryKind::GetMeta, false),
            GetAction::ReadLogData => (EntryKind::GetData, true),
            GetAction::Active => return self.held_get(pdid, addr, out, o, bits),
            GetAction::FaultToAccessLog => (EntryKind::Fault, false),
            GetAction::FaultToSystemLog => {
                self.state.counters.faults.fetch_add(1, Ordering::Relaxed);
                return Err(MemError::Unmapped { addr });
            }
        };
        if o.xfer_len > u32::MAX as u64 || o.offset > u32::MAX as u64 {
            return Err(MemError::Unmapped { addr });
        }
        if kind != EntryKind::Fault {
            self.inner.read(pdid, addr, out)?;
        }
        self.log_access(
            addr,
            bits,
            kind,
            with_data,
            o.transfer_id | GET_TXN,
            o,
            out,
            true,
        )
    }

    /// Log one packet's share of a put or get (`payload`: its bytes) and count the access
    /// once its entry is complete; a `Fault` entry then answers the access as unmapped.
    #[allow(clippy::too_many_arguments)]
    fn log_access(
        &mut self,
        addr: u64,
        bits: PageBits,
        kind: EntryKind,
        with_data: bool,
        txn: u32,
        o: &AccessOrigin,
        payload: &[u8],
        is_get: bool,
    ) -> Result<(), MemError> {
        let header = EntryHeader {
            kind,
            source: o.peer,
            txn,
            addr: o.xfer_addr,
            access_len: o.xfer_len as u32,
            data_len: if with_data { o.xfer_len as u32 } else { 0 },
        };
        // A metadata-only entry is one per access: logged with the packet at offset 0.
        if with_data || o.offset == 0 {
            let payload: &[u8] = if with_data { payload } else { &[] };
            if self.log_fragment(bits, header, o.offset as u32, payload)?
                == FragmentOutcome::Completed
            {
                let c = &self.state.counters;
                let logged = if is_get {
                    &c.gets_logged
                } else {
                    &c.puts_logged
                };
                logged.fetch_add(1, Ordering::Relaxed);
            }
        }
        if kind == EntryKind::Fault {
            self.state.counters.faults.fetch_add(1, Ordering::Relaxed);
            return Err(MemError::Unmapped { addr });
        }
        Ok(())
    }

    /// The active flush's get on a flushing page: on first sight remember how many entries
    /// the page's log has reserved (the caller's puts were all acknowledged, so each of them
    /// has its entry reserved and written, though one may still wait behind an incomplete
    /// entry of another source before it is published); answer "not present" (the engine
    /// suspends the response and retries after the page-in thread's pass) until the handler
    /// has processed that many; then serve the page's bytes.
    fn held_get(
        &mut self,
        pdid: Pdid,
        addr: u64,
        out: &mut [u8],
        o: &AccessOrigin,
        bits: PageBits,
    ) -> Result<(), MemError> {
        let Some(log) = self.state.log(bits.iuid) else {
            return Err(MemError::Unmapped { addr });
        };
        let key = (o.peer, o.transfer_id);
        let mut holds = self.state.holds.lock().expect("flush holds");
        let mark = *holds
            .entry(key)
            .or_insert_with(|| log.ring.lock().expect("access log").log.stats().reserved);
        if log.processed.load(Ordering::SeqCst) < mark {
            self.state
                .counters
                .flush_holds
                .fetch_add(1, Ordering::Relaxed);
            return Err(MemError::NotPresent {
                page_addr: page_of(addr),
            });
        }
        self.inner.read(pdid, addr, out)?;
        if o.offset + out.len() as u64 >= o.xfer_len {
            holds.remove(&key);
        }
        Ok(())
    }
}

impl Deref for ActiveMemory {
    type Target = LiveMemory;
    fn deref(&self) -> &LiveMemory {
        &self.inner
    }
}

impl DerefMut for ActiveMemory {
    fn deref_mut(&mut self) -> &mut LiveMemory {
        &mut self.inner
    }
}

impl AsRef<LiveMemory> for ActiveMemory {
    fn as_ref(&self) -> &LiveMemory {
        &self.inner
    }
}

impl AsMut<LiveMemory> for ActiveMemory {
    fn as_mut(&mut self) -> &mut LiveMemory {
        &mut self.inner
    }
}

impl Memory for ActiveMemory {
    fn write(&mut self, pdid: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.inner.write(pdid, addr, data)
    }

    fn read(&mut self, pdid: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        self.inner.read(pdid, addr, out)
    }

    fn write_from(
        &mut self,
        pdid: Pdid,
        addr: u64,
        data: &[u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError> {
        if !self.state.any_marked.load(Ordering::Acquire) {
            return self.inner.write_from(pdid, addr, data, origin);
        }
        match self.state.bits(addr) {
            None => self.inner.write_from(pdid, addr, data, origin),
            Some(bits) => self.put(pdid, addr, data, origin, bits),
        }
    }

    fn read_for(
        &mut self,
        pdid: Pdid,
        addr: u64,
        out: &mut [u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError> {
        if !self.state.any_marked.load(Ordering::Acquire) {
            return self.inner.read(pdid, addr, out);
        }
        match self.state.bits(addr) {
            None => self.inner.read(pdid, addr, out),
            Some(bits) => self.get(pdid, addr, out, origin, bits),
        }
    }

    /// A remote atomic with a real atomic instruction: handler threads and the application
    /// may update the same words with local atomics concurrently (the DHT's handler inserts
    /// and the RMA inserts of other ranks share the algorithm).
    fn atomic(&mut self, pdid: Pdid, addr: u64, op: AtomicOp) -> Result<u64, MemError> {
        if pdid != self.inner.pdid() {
            return Err(MemError::NoSuchDomain(pdid));
        }
        if !addr.is_multiple_of(8) || addr.checked_add(8).is_none() {
            return Err(MemError::Unmapped { addr });
        }
        if self.state.any_marked.load(Ordering::Acquire)
            && self.state.bits(addr).is_some_and(|b| !b.w || !b.r)
        {
            // An atomic on an active or protected page is refused (it has no logged form).
            self.state.counters.faults.fetch_add(1, Ordering::Relaxed);
            return Err(MemError::Unmapped { addr });
        }
        // The word itself: a real atomic instruction on the live memory.
        self.inner.atomic(pdid, addr, op)
    }
}
