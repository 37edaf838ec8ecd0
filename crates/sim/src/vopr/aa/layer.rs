//! The Active Access IOMMU extension in front of a simulated node's NI: the simulator's
//! counterpart of crates/aa-live's `ActiveMemory`, over crates/aa's decision
//! ([`unpinned_aa::access`]) like every driver. Page bits decide per packet (the page of its
//! first byte); logged accesses go to the node's access logs through their reassemblers; a
//! fault refuses the access (the source sees a protection error); a full log answers "not
//! present" so that the source resends (back-pressure).

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use unpinned_aa::access::{self, Decision, LogStore, Outcome, Packet, PacketMemory};
use unpinned_aa::log::{AccessLog, Backpressure};
use unpinned_aa::pte::{Iuid, PageBits};
use unpinned_aa::reassembly::{Fragment, FragmentOutcome, Reassembler};
use unpinned_core::memory::{page_of, AccessOrigin, MemError, Memory, Pdid};

use crate::memory::PacketHook;

/// One node's Active Access state: page bits, logs, counters.
#[derive(Default)]
pub(crate) struct AaState {
    /// Marked pages: page address -> bits.
    pub(crate) bits: FxHashMap<u64, PageBits>,
    /// Logs by IUID.
    pub(crate) logs: FxHashMap<u16, (AccessLog, Reassembler)>,
    /// Packets refused because a log was full.
    pub(crate) stalls: u64,
    /// Accesses refused as faults.
    pub(crate) faults: u64,
}

struct Logs<'a>(&'a mut FxHashMap<u16, (AccessLog, Reassembler)>);

impl LogStore for Logs<'_> {
    fn has_log(&self, iuid: Iuid) -> bool {
        self.0.contains_key(&iuid.get())
    }

    fn on_fragment(
        &mut self,
        iuid: Iuid,
        fragment: Fragment,
    ) -> Option<Result<FragmentOutcome, Backpressure>> {
        let (log, re) = self.0.get_mut(&iuid.get())?;
        Some(re.on_fragment(log, fragment))
    }
}

struct Pages<'a> {
    mem: &'a mut dyn Memory,
    pdid: Pdid,
}

impl PacketMemory for Pages<'_> {
    type Error = MemError;
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.mem.write(self.pdid, addr, data)
    }
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        self.mem.read(self.pdid, addr, out)
    }
}

/// The hook installed in a node's memory; the swarm keeps a second handle on the state.
pub(crate) struct ActiveLayer(pub(crate) Arc<Mutex<AaState>>);

fn packet(o: &AccessOrigin) -> Option<Packet> {
    Some(Packet {
        source: o.peer,
        txn: o.transfer_id,
        addr: o.xfer_addr,
        total_len: u32::try_from(o.xfer_len).ok()?,
        offset: u32::try_from(o.offset).ok()?,
    })
}

impl ActiveLayer {
    fn settle(st: &mut AaState, outcome: Outcome, addr: u64) -> Result<(), MemError> {
        match outcome {
            Outcome::Done { .. } | Outcome::Duplicate => Ok(()),
            Outcome::Fault(_) => {
                st.faults += 1;
                Err(MemError::Unmapped { addr })
            }
            Outcome::Stalled(_) => {
                st.stalls += 1;
                Err(MemError::NotPresent {
                    page_addr: page_of(addr),
                })
            }
            // The swarm marks no flushing page (`R=0, RL=1`): a held get is refused.
            Outcome::Hold => Err(MemError::Unmapped { addr }),
        }
    }
}

impl PacketHook for ActiveLayer {
    fn write_from(
        &mut self,
        mem: &mut dyn Memory,
        pdid: Pdid,
        addr: u64,
        data: &[u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError> {
        let mut st = self.0.lock().expect("aa state");
        let st = &mut *st;
        let Some(&bits) = st.bits.get(&page_of(addr)) else {
            return mem.write(pdid, addr, data);
        };
        if Decision::put(bits) == Decision::Plain {
            return mem.write(pdid, addr, data);
        }
        let Some(p) = packet(origin) else {
            return Err(MemError::Unmapped { addr });
        };
        let outcome = access::put(
            bits,
            &p,
            data,
            &mut Logs(&mut st.logs),
            &mut Pages { mem, pdid },
        )?;
        Self::settle(st, outcome, addr)
    }

    fn read_for(
        &mut self,
        mem: &mut dyn Memory,
        pdid: Pdid,
        addr: u64,
        out: &mut [u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError> {
        let mut st = self.0.lock().expect("aa state");
        let st = &mut *st;
        let Some(&bits) = st.bits.get(&page_of(addr)) else {
            return mem.read(pdid, addr, out);
        };
        if Decision::get(bits) == Decision::Plain {
            return mem.read(pdid, addr, out);
        }
        let Some(p) = packet(origin) else {
            return Err(MemError::Unmapped { addr });
        };
        let outcome = access::get(
            bits,
            &p,
            out,
            &mut Logs(&mut st.logs),
            &mut Pages { mem, pdid },
        )?;
        Self::settle(st, outcome, addr)
    }
}
