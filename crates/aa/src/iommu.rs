//! The IOMMU of one node extended for Active Access (spec "IOMMU extensions"): per-page bits,
//! the access-log table `(IUID, base, head, tail, size)`, the logs themselves, the system fault
//! log for E=0 pages, and the held gets of the active flush. Every put and get packet goes
//! through the shared decision of [`crate::access`], as in the live runtime's decorator.
//!
//! Translation costs (IOTLB, walks) are the driver's business (the simulator models them with
//! `unpinned_core::iommu::Tlb`); this type decides *what* happens to an access.

use rustc_hash::FxHashMap;
use unpinned_core::memory::{Pdid, PAGE_BYTES};

use crate::access::{self, Decision, FaultLog, LogStore, Outcome, Packet, PacketMemory};
use crate::flush::FlushHolds;
use crate::log::{AccessLog, Backpressure};
use crate::memory::ByteMemory;
use crate::pte::{Iuid, PageBits};
use crate::reassembly::{Fragment, FragmentOutcome, Reassembler};

/// One row of the access-log table, as the IOMMU holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogDescriptor {
    /// The owning process (its PDID names its address space).
    pub owner: Pdid,
    /// Virtual address of the ring in the owner's memory.
    pub base: u64,
    /// Ring size in bytes.
    pub size: u64,
    /// Consumer position (mirrors the log).
    pub head: u64,
    /// Published tail (mirrors the log).
    pub tail: u64,
}

/// A fault recorded in the legacy system fault log (E=0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemFault {
    /// Address space.
    pub pdid: Pdid,
    /// Faulting address.
    pub addr: u64,
    /// Source process.
    pub source: u32,
    /// True for a put, false for a get.
    pub write: bool,
}

/// One put packet as it reaches the IOMMU.
#[derive(Clone, Copy, Debug)]
pub struct PutPacket<'a> {
    /// Target address space.
    pub pdid: Pdid,
    /// Source process (global id).
    pub source: u32,
    /// Transaction id at the source.
    pub txn: u32,
    /// Start address of the whole put.
    pub addr: u64,
    /// Length of the whole put.
    pub total_len: u32,
    /// Offset of this packet within the put.
    pub offset: u32,
    /// Payload.
    pub data: &'a [u8],
}

/// Result of one get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetOutcome {
    /// Served with these bytes (and possibly logged).
    Data(Vec<u8>),
    /// The active flush's get on a flushing page: held until the log is drained; ask again.
    Held,
    /// A fault (recorded per E).
    Fault,
    /// The log is full: nothing happened; retry (back-pressure).
    Stalled(Backpressure),
}

/// The logs with their reassemblers, as the decision sees them.
#[derive(Default)]
struct Logs(FxHashMap<u16, (AccessLog, Reassembler)>);

impl LogStore for Logs {
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

/// A [`ByteMemory`] as the decision's memory (it cannot fail).
struct Infallible<'a, M: ?Sized>(&'a mut M);

impl<M: ByteMemory + ?Sized> PacketMemory for Infallible<'_, M> {
    type Error = std::convert::Infallible;
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), Self::Error> {
        self.0.write(addr, data);
        Ok(())
    }
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), Self::Error> {
        self.0.read(addr, out);
        Ok(())
    }
}

/// A memory that is only read (gets), as the decision's memory.
struct ReadOnly<'a, M: ?Sized>(&'a M);

impl<M: ByteMemory + ?Sized> PacketMemory for ReadOnly<'_, M> {
    type Error = std::convert::Infallible;
    fn write(&mut self, _addr: u64, _data: &[u8]) -> Result<(), Self::Error> {
        unreachable!("a get does not write")
    }
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), Self::Error> {
        self.0.read(addr, out);
        Ok(())
    }
}

fn infallible<T>(r: Result<T, std::convert::Infallible>) -> T {
    match r {
        Ok(t) => t,
        Err(e) => match e {},
    }
}

/// The extended IOMMU of one node.
#[derive(Default)]
pub struct AaIommu {
    pages: FxHashMap<(Pdid, u64), PageBits>,
    table: FxHashMap<u16, LogDescriptor>,
    logs: Logs,
    system_faults: Vec<SystemFault>,
    holds: FlushHolds<(u32, u32)>,
}

impl AaIommu {
    /// An IOMMU with no pages and no logs.
    pub fn new() -> AaIommu {
        AaIommu::default()
    }

    /// Create access log `iuid` of `size` bytes at `base` in `owner`'s memory (the runtime
    /// allocates it; the IOMMU learns it through the access-log table).
    pub fn create_log(&mut self, iuid: Iuid, owner: Pdid, base: u64, size: u32) {
        let log = AccessLog::new(size);
        self.table.insert(
            iuid.get(),
            LogDescriptor {
                owner,
                base,
                size: log.size(),
                head: 0,
                tail: 0,
            },
        );
        self.logs.0.insert(iuid.get(), (log, Reassembler::new()));
    }

    /// The access-log table row of `iuid`.
    pub fn descriptor(&self, iuid: Iuid) -> Option<LogDescriptor> {
        self.table.get(&iuid.get()).copied()
    }

    /// Mark every page of `[addr, addr+len)` of `pdid` with `bits` (the `assoc_page` of the
    /// spec's API, without the handler, which the runtime binds to the IUID).
    pub fn assoc_pages(&mut self, pdid: Pdid, addr: u64, len: u64, bits: PageBits) {
        let first = addr / PAGE_BYTES;
        let last = (addr + len.max(1) - 1) / PAGE_BYTES;
        for vpn in first..=last {
            self.pages.insert((pdid, vpn), bits);
        }
    }

    /// Bits of the page holding `addr` (unmarked pages are plain read-write).
    pub fn bits(&self, pdid: Pdid, addr: u64) -> PageBits {
        self.pages
            .get(&(pdid, addr / PAGE_BYTES))
            .copied()
            .unwrap_or_else(PageBits::plain)
    }

    /// The access log `iuid` (for the handler).
    pub fn log_mut(&mut self, iuid: Iuid) -> Option<&mut AccessLog> {
        self.logs.0.get_mut(&iuid.get()).map(|(l, _)| l)
    }

    /// Handler side: take the oldest entry of log `iuid` and mirror the head into the table.
    pub fn pop(&mut self, iuid: Iuid) -> Option<crate::log::LogEntry> {
        let (log, _) = self.logs.0.get_mut(&iuid.get())?;
        let e = log.pop();
        let head = log.head();
        if let Some(d) = self.table.get_mut(&iuid.get()) {
            d.head = head;
        }
        e
    }

    /// Faults recorded in the legacy system fault log.
    pub fn system_faults(&self) -> &[SystemFault] {
        &self.system_faults
    }

    fn sync_tail(&mut self, iuid: u16) {
        if let (Some(d), Some((l, _))) = (self.table.get_mut(&iuid), self.logs.0.get(&iuid)) {
            d.tail = l.published();
            d.head = l.head();
        }
    }

    /// Process one put packet against `mem` (the target's memory): the decision of
    /// [`access::put`], plus the system fault log and the table's tail.
    pub fn put(&mut self, p: PutPacket, mem: &mut dyn ByteMemory) -> Outcome {
        let bits = self.bits(p.pdid, p.addr + p.offset as u64);
        let pkt = Packet {
            source: p.source,
            txn: p.txn,
            addr: p.addr,
            total_len: p.total_len,
            offset: p.offset,
        };
        let o = infallible(access::put(
            bits,
            &pkt,
            p.data,
            &mut self.logs,
            &mut Infallible(mem),
        ));
        self.after(p.pdid, &pkt, true, bits, o);
        o
    }

    /// Process one get of `len` bytes at `addr` of `pdid` from `source` (transaction `txn`),
    /// in one packet: the decision of [`access::get`]; the active flush's get is held
    /// ([`GetOutcome::Held`]) until the handler has consumed every entry reserved when it
    /// first arrived.
    pub fn get(
        &mut self,
        pdid: Pdid,
        source: u32,
        txn: u32,
        addr: u64,
        len: u32,
        mem: &dyn ByteMemory,
    ) -> GetOutcome {
        let bits = self.bits(pdid, addr);
        let pkt = Packet {
            source,
            txn,
            addr,
            total_len: len,
            offset: 0,
        };
        let mut d = vec![0; len as usize];
        let o = infallible(access::get(
            bits,
            &pkt,
            &mut d,
            &mut self.logs,
            &mut ReadOnly(mem),
        ));
        self.after(pdid, &pkt, false, bits, o);
        match o {
            Outcome::Done { .. } | Outcome::Duplicate => GetOutcome::Data(d),
            Outcome::Fault(_) => GetOutcome::Fault,
            Outcome::Stalled(bp) => GetOutcome::Stalled(bp),
            Outcome::Hold => {
                let Some((log, _)) = self.logs.0.get(&bits.iuid.get()) else {
                    self.system_fault(pdid, &pkt, false);
                    return GetOutcome::Fault;
                };
                let (reserved, head) = (log.reserved(), log.head());
                if !self.holds.poll((source, txn), || reserved, head) {
                    return GetOutcome::Held;
                }
                self.holds.done(&(source, txn));
                mem.read(addr, &mut d);
                GetOutcome::Data(d)
            }
        }
    }

    fn system_fault(&mut self, pdid: Pdid, p: &Packet, write: bool) {
        self.system_faults.push(SystemFault {
            pdid,
            addr: p.addr,
            source: p.source,
            write,
        });
    }

    /// Record what the decision did: a system fault, or the log's new tail.
    fn after(&mut self, pdid: Pdid, p: &Packet, write: bool, bits: PageBits, o: Outcome) {
        match o {
            Outcome::Fault(FaultLog::System) => self.system_fault(pdid, p, write),
            Outcome::Done {
                decision: Decision::Plain,
                ..
            } => {}
            _ => self.sync_tail(bits.iuid.get()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::EntryKind;
    use crate::memory::SparseMemory;

    #[test]
    fn active_put_is_logged_not_written_and_plain_rma_mixes() {
        let mut io = AaIommu::new();
        let mut mem = SparseMemory::new();
        let i = Iuid::new(5).unwrap();
        io.create_log(i, 1, 0x7000_0000, 4096);
        io.assoc_pages(1, 0x10_0000, 4096, PageBits::active_put(i));
        let pkt = |addr, data: &'static [u8]| PutPacket {
            pdid: 1,
            source: 9,
            txn: addr as u32,
            addr,
            total_len: data.len() as u32,
            offset: 0,
            data,
        };
        assert_eq!(
            io.put(pkt(0x10_0010, b"active!!"), &mut mem),
            Outcome::Done {
                decision: Decision::put(PageBits::active_put(i)),
                completed: true
            }
        );
        // Plain RMA on an unmarked page of the same target in between.
        assert_eq!(
            io.put(pkt(0x20_0000, b"plainrma"), &mut mem),
            Outcome::Done {
                decision: Decision::Plain,
                completed: false
            }
        );
        let mut b = [0u8; 8];
        mem.read(0x10_0010, &mut b);
        assert_eq!(b, [0; 8], "an active put does not write the page");
        mem.read(0x20_0000, &mut b);
        assert_eq!(&b, b"plainrma");
        let e = io.pop(i).unwrap();
        assert_eq!(e.header.kind, EntryKind::ActivePut);
        assert_eq!(e.data, b"active!!");
        assert_eq!(
            io.descriptor(i).unwrap().head,
            io.descriptor(i).unwrap().tail
        );
    }

    #[test]
    fn get_logging_and_legacy_faults() {
        let mut io = AaIommu::new();
        let mut mem = SparseMemory::new();
        mem.write(0x5000, b"hello");
        let i = Iuid::new(1).unwrap();
        io.create_log(i, 1, 0, 4096);
        io.assoc_pages(1, 0x5000, 10, PageBits::log_get_data(i));
        assert_eq!(
            io.get(1, 3, 1, 0x5000, 5, &mem),
            GetOutcome::Data(b"hello".to_vec())
        );
        assert_eq!(io.pop(i).unwrap().data, b"hello");
        let legacy = PageBits {
            w: false,
            r: false,
            ..PageBits::default()
        };
        io.assoc_pages(1, 0x9000, 1, legacy);
        assert_eq!(io.get(1, 3, 2, 0x9000, 8, &mem), GetOutcome::Fault);
        assert_eq!(io.system_faults().len(), 1);
    }

    #[test]
    fn the_flush_get_is_held_until_the_handler_drained_the_log() {
        let mut io = AaIommu::new();
        let mut mem = SparseMemory::new();
        let i = Iuid::new(2).unwrap();
        io.create_log(i, 1, 0, 4096);
        io.assoc_pages(1, 0x10_0000, 4096, PageBits::active_put(i));
        let flushing = PageBits {
            rl: true,
            iuid: i,
            ..PageBits::default()
        };
        io.assoc_pages(1, 0x20_0000, 4096, flushing);
        let put = PutPacket {
            pdid: 1,
            source: 4,
            txn: 1,
            addr: 0x10_0000,
            total_len: 8,
            offset: 0,
            data: b"activeXX",
        };
        assert!(matches!(io.put(put, &mut mem), Outcome::Done { .. }));
        assert_eq!(io.get(1, 4, 2, 0x20_0000, 8, &mem), GetOutcome::Held);
        // A put after the flush arrived is not waited for.
        let later = PutPacket { txn: 3, ..put };
        assert!(matches!(io.put(later, &mut mem), Outcome::Done { .. }));
        assert_eq!(io.get(1, 4, 2, 0x20_0000, 8, &mem), GetOutcome::Held);
        io.pop(i).unwrap();
        assert_eq!(
            io.get(1, 4, 2, 0x20_0000, 8, &mem),
            GetOutcome::Data(vec![0; 8])
        );
    }
}
