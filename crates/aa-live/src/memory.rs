//! [`ActiveMemory`]: the live runtime's [`LiveMemory`] behind the Active Access IOMMU
//! extension (spec active-access.md, "IOMMU extensions").
//!
//! The engine thread reaches process memory only through the core `Memory` trait; remote
//! puts arrive as [`Memory::write_from`] and packets served to remote gets as
//! [`Memory::read_for`], both with their origin (peer, transfer id, offset, whole range). Each
//! such packet on a marked page goes through crates/aa's decision ([`unpinned_aa::access`]),
//! the same code the IOMMU model and the simulator use; this file adds only the live parts:
//! the logs under their locks, the counters, and holding the active flush:
//!
//! - plain pages (and every access while no page is marked): straight to [`LiveMemory`];
//! - `R=0, RL=1` (active get, the flushing page): held until the page's log is drained, then
//!   served (the active flush, crates/aa's [`unpinned_aa::flush::FlushHolds`] rule);
//! - faults refuse the access (a protection error at the source), and nothing is written.
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use unpinned_aa::access::{self, Decision, LogStore, Outcome, Packet, PacketMemory};
use unpinned_aa::log::Backpressure;
use unpinned_aa::pte::{Iuid, PageBits};
use unpinned_aa::reassembly::{Fragment, FragmentOutcome};
use unpinned_core::api::AtomicOp;
use unpinned_core::memory::{page_of, AccessOrigin, MemError, Memory, Pdid};

use crate::state::ActiveState;
use unpinned_live::memory::LiveMemory;

/// This process's access logs as crates/aa's decision sees them: each under its lock, and
/// the handler told about newly published entries.
struct Logs<'a>(&'a ActiveState);

impl LogStore for Logs<'_> {
    fn has_log(&self, iuid: Iuid) -> bool {
        self.0.log(iuid).is_some()
    }

    fn on_fragment(
        &mut self,
        iuid: Iuid,
        fragment: Fragment,
    ) -> Option<Result<FragmentOutcome, Backpressure>> {
        let log = self.0.log(iuid)?;
        let mut ring = log.ring.lock().expect("access log");
        let r = &mut *ring;
        let out = r.re.on_fragment(&mut r.log, fragment);
        if out.is_ok() {
            log.after_change(r, self.0.now_ns());
        }
        Some(out)
    }
}

/// The address space `pdid` of [`LiveMemory`] as crates/aa's decision sees it.
struct Pages<'a> {
    inner: &'a mut LiveMemory,
    pdid: Pdid,
}

impl PacketMemory for Pages<'_> {
    type Error = MemError;
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.inner.write(self.pdid, addr, data)
    }
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        self.inner.read(self.pdid, addr, out)
    }
}

/// [`LiveMemory`] with the Active Access checks and logging in front of it.
pub struct ActiveMemory {
    inner: LiveMemory,
    state: Arc<ActiveState>,
}

impl ActiveMemory {
    pub(crate) fn new(inner: LiveMemory, state: Arc<ActiveState>) -> ActiveMemory {
        ActiveMemory { inner, state }
    }

    /// The packet of `o`, or `None` if the access is too large for a log entry (up to 4 GiB).
    fn packet(o: &AccessOrigin) -> Option<Packet> {
        Some(Packet {
            source: o.peer,
            txn: o.transfer_id,
            addr: o.xfer_addr,
            total_len: u32::try_from(o.xfer_len).ok()?,
            offset: u32::try_from(o.offset).ok()?,
        })
    }

    fn put(
        &mut self,
        pdid: Pdid,
        addr: u64,
        data: &[u8],
        o: &AccessOrigin,
        bits: PageBits,
    ) -> Result<(), MemError> {
        if Decision::put(bits) == Decision::Plain {
            return self.inner.write(pdid, addr, data);
        }
        let Some(p) = Self::packet(o) else {
            return Err(MemError::Unmapped { addr });
        };
        debug_assert_eq!(p.at(), addr, "the origin names this packet");
        let mut logs = Logs(&self.state);
        let mut mem = Pages {
            inner: &mut self.inner,
            pdid,
        };
        let outcome = access::put(bits, &p, data, &mut logs, &mut mem)?;
        self.settle(outcome, addr, &self.state.counters.puts_logged)
    }

    fn get(
        &mut self,
        pdid: Pdid,
        addr: u64,
        out: &mut [u8],
        o: &AccessOrigin,
        bits: PageBits,
    ) -> Result<(), MemError> {
        match Decision::get(bits) {
            Decision::Plain => return self.inner.read(pdid, addr, out),
            Decision::Hold => return self.held_get(pdid, addr, out, o, bits),
            _ => {}
        }
        let Some(p) = Self::packet(o) else {
            return Err(MemError::Unmapped { addr });
        };
        debug_assert_eq!(p.at(), addr, "the origin names this packet");
        let mut logs = Logs(&self.state);
        let mut mem = Pages {
            inner: &mut self.inner,
            pdid,
        };
        let outcome = access::get(bits, &p, out, &mut logs, &mut mem)?;
        self.settle(outcome, addr, &self.state.counters.gets_logged)
    }

    /// Count what the decision did and answer the engine: a fault refuses the access, a
    /// stalled packet (log full) is answered as a missing page so that the source resends it.
    fn settle(&self, outcome: Outcome, addr: u64, logged: &AtomicU64) -> Result<(), MemError> {
        let c = &self.state.counters;
        match outcome {
            Outcome::Done { completed, .. } => {
                if completed {
                    logged.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }
            Outcome::Duplicate => Ok(()),
            Outcome::Fault(_) => {
                c.faults.fetch_add(1, Ordering::Relaxed);
                Err(MemError::Unmapped { addr })
            }
            Outcome::Stalled(_) => {
                c.stalls.fetch_add(1, Ordering::Relaxed);
                Err(MemError::NotPresent {
                    page_addr: page_of(addr),
                })
            }
            Outcome::Hold => unreachable!("held gets are answered by held_get"),
        }
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
        let reserved = || log.ring.lock().expect("access log").log.stats().reserved;
        if !holds.poll(key, reserved, log.processed.load(Ordering::SeqCst)) {
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
            holds.done(&key);
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
