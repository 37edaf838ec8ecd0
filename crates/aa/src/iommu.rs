//! The IOMMU of one node extended for Active Access (spec "IOMMU extensions"): per-page bits,
//! the access-log table `(IUID, base, head, tail, size)`, the logs themselves, the system fault
//! log for E=0 pages, and the decision for every put and get packet.
//!
//! Translation costs (IOTLB, walks) are the driver's business (the simulator models them with
//! `unpinned_core::iommu::Tlb`); this type decides *what* happens to an access.

use rustc_hash::FxHashMap;
use unpinned_core::memory::{Pdid, PAGE_BYTES};

use crate::log::{AccessLog, Backpressure, EntryHeader, EntryKind};
use crate::memory::ByteMemory;
use crate::pte::{GetAction, Iuid, PageBits, PutAction};
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

/// Result of one put packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    /// Written (and possibly logged); `logged` says whether an entry was completed.
    Done {
        /// The IOMMU action taken.
        action: PutAction,
        /// An entry became complete in the log with this packet.
        logged: bool,
    },
    /// Duplicate of a packet already processed: ignored (idempotent).
    Duplicate,
    /// A fault (recorded per E).
    Fault,
    /// The log is full: nothing happened; the packet must be retried (back-pressure).
    Stalled(Backpressure),
}

/// Result of one get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetOutcome {
    /// Served with these bytes (and possibly logged).
    Data(Vec<u8>),
    /// An active get: logged for the handler, no data.
    Logged,
    /// A fault (recorded per E).
    Fault,
    /// The log is full: nothing happened; retry (back-pressure).
    Stalled(Backpressure),
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

/// The extended IOMMU of one node.
#[derive(Default)]
pub struct AaIommu {
    pages: FxHashMap<(Pdid, u64), PageBits>,
    table: FxHashMap<u16, LogDescriptor>,
    logs: FxHashMap<u16, (AccessLog, Reassembler)>,
    system_faults: Vec<SystemFault>,
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
        self.logs.insert(iuid.get(), (log, Reassembler::new()));
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
        self.logs.get_mut(&iuid.get()).map(|(l, _)| l)
    }

    /// Handler side: take the oldest entry of log `iuid` and mirror the head into the table.
    pub fn pop(&mut self, iuid: Iuid) -> Option<crate::log::LogEntry> {
        let (log, _) = self.logs.get_mut(&iuid.get())?;
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
        if let (Some(d), Some((l, _))) = (self.table.get_mut(&iuid), self.logs.get(&iuid)) {
            d.tail = l.published();
            d.head = l.head();
        }
    }

    /// Process one put packet against `mem` (the target's memory).
    pub fn put(&mut self, p: PutPacket, mem: &mut dyn ByteMemory) -> PutOutcome {
        let bits = self.bits(p.pdid, p.addr + p.offset as u64);
        let action = bits.put_action();
        let (kind, data_len) = match action {
            PutAction::Write => {
                mem.write(p.addr + p.offset as u64, p.data);
                return PutOutcome::Done {
                    action,
                    logged: false,
                };
            }
            PutAction::WriteLogMeta => (EntryKind::PutMeta, 0),
            PutAction::WriteLogData => (EntryKind::PutData, p.total_len),
            PutAction::Active => (EntryKind::ActivePut, p.total_len),
            PutAction::FaultToAccessLog => (EntryKind::Fault, 0),
            PutAction::FaultToSystemLog => {
                self.system_faults.push(SystemFault {
                    pdid: p.pdid,
                    addr: p.addr,
                    source: p.source,
                    write: true,
                });
                return PutOutcome::Fault;
            }
        };
        let iuid = bits.iuid.get();
        let Some((log, re)) = self.logs.get_mut(&iuid) else {
            // A page naming a log that does not exist: a system fault (never a silent write).
            self.system_faults.push(SystemFault {
                pdid: p.pdid,
                addr: p.addr,
                source: p.source,
                write: true,
            });
            return PutOutcome::Fault;
        };
        let header = EntryHeader {
            kind,
            source: p.source,
            txn: p.txn,
            addr: p.addr,
            access_len: p.total_len,
            data_len,
        };
        // Metadata-only entries are one per access: logged with the first packet (offset 0)
        // only, so a multi-packet tracked put is one entry.
        let outcome = if data_len == 0 && p.offset != 0 {
            Ok(FragmentOutcome::Accepted)
        } else {
            let data: &[u8] = if data_len == 0 { &[] } else { p.data };
            re.on_fragment(
                log,
                Fragment {
                    header,
                    offset: p.offset,
                    data,
                },
            )
        };
        let r = match outcome {
            Err(bp) => return PutOutcome::Stalled(bp),
            Ok(FragmentOutcome::Duplicate) => return PutOutcome::Duplicate,
            Ok(o) => o,
        };
        if matches!(action, PutAction::WriteLogMeta | PutAction::WriteLogData) {
            mem.write(p.addr + p.offset as u64, p.data);
        }
        self.sync_tail(iuid);
        if action == PutAction::FaultToAccessLog {
            return PutOutcome::Fault;
        }
        PutOutcome::Done {
            action,
            logged: r == FragmentOutcome::Completed,
        }
    }

    /// Process one get of `len` bytes at `addr` of `pdid` from `source` (transaction `txn`).
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
        let action = bits.get_action();
        let kind = match action {
            GetAction::Read => {
                let mut d = vec![0; len as usize];
                mem.read(addr, &mut d);
                return GetOutcome::Data(d);
            }
            GetAction::ReadLogMeta => EntryKind::GetMeta,
            GetAction::ReadLogData => EntryKind::GetData,
            GetAction::Active => EntryKind::ActiveGet,
            GetAction::FaultToAccessLog => EntryKind::Fault,
            GetAction::FaultToSystemLog => {
                self.system_faults.push(SystemFault {
                    pdid,
                    addr,
                    source,
                    write: false,
                });
                return GetOutcome::Fault;
            }
        };
        let iuid = bits.iuid.get();
        let Some((log, _)) = self.logs.get_mut(&iuid) else {
            self.system_faults.push(SystemFault {
                pdid,
                addr,
                source,
                write: false,
            });
            return GetOutcome::Fault;
        };
        let mut d = Vec::new();
        if matches!(action, GetAction::ReadLogMeta | GetAction::ReadLogData) {
            d = vec![0; len as usize];
            mem.read(addr, &mut d);
        }
        let data_len = if action == GetAction::ReadLogData {
            len
        } else {
            0
        };
        let header = EntryHeader {
            kind,
            source,
            txn,
            addr,
            access_len: len,
            data_len,
        };
        let logged: &[u8] = if data_len == 0 { &[] } else { &d };
        if let Err(bp) = log.append(header, logged) {
            return GetOutcome::Stalled(bp);
        }
        self.sync_tail(iuid);
        match action {
            GetAction::Active => GetOutcome::Logged,
            GetAction::FaultToAccessLog => GetOutcome::Fault,
            _ => GetOutcome::Data(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            PutOutcome::Done {
                action: PutAction::Active,
                logged: true
            }
        );
        // Plain RMA on an unmarked page of the same target in between.
        assert_eq!(
            io.put(pkt(0x20_0000, b"plainrma"), &mut mem),
            PutOutcome::Done {
                action: PutAction::Write,
                logged: false
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
}
