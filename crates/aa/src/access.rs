//! The IOMMU's decision for one put or get packet on a marked page (spec "IOMMU extensions"),
//! written once for every driver: the IOMMU model ([`crate::AaIommu`]), the live runtime's
//! memory decorator, and (for the entry kinds and what is accessed) the simulator's cost model.
//!
//! [`Decision`] is what the page bits mean for an access; [`put`] and [`get`] carry one packet
//! through it against the driver's logs ([`LogStore`]) and memory ([`PacketMemory`]). A driver
//! only adds what is its own: costs, counters, system calls, and holding the active flush.
//!
//! Rules every driver gets from here:
//! - plain pages go straight to memory;
//! - written-and-logged puts are written *before* they are logged: if the write fails (a page
//!   not present in the live runtime) nothing is logged and the retransmission does both;
//!   rewriting the same bytes is idempotent, so a write whose entry is stalled or a duplicate
//!   is harmless;
//! - served-and-logged gets read before they are logged, for the same reason;
//! - a metadata-only entry is one per access: it is logged with the packet at offset 0 only;
//! - an entry with data is reassembled from the packets (per source and transaction);
//! - a marked page naming a log that does not exist is a system fault, never a silent access:
//!   it is refused before memory is touched (a refused access writes nothing);
//! - a full log refuses the packet untouched (back-pressure): the source retries it.

use crate::log::{Backpressure, EntryHeader, EntryKind};
use crate::pte::{GetAction, Iuid, PageBits, PutAction};
use crate::reassembly::{Fragment, FragmentOutcome};

/// What the page bits do with one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Plain RMA: the access goes to memory, nothing is logged.
    Plain,
    /// An entry of `kind` is logged (with the access's data if `data`); `memory`: the access
    /// also writes (put) or reads (get) the page.
    Log {
        /// Kind of the entry.
        kind: EntryKind,
        /// The entry carries the access's data (else metadata only).
        data: bool,
        /// The page is written / read too (false: an active put, or a fault entry).
        memory: bool,
    },
    /// Refused as a fault recorded in the legacy system fault log (E=0).
    SystemFault,
    /// A get on a page with `R=0, RL=1`: the active flush's get on the flushing page, held by
    /// the IOMMU until the page's log is drained, then served (spec "Active flush").
    Hold,
}

impl Decision {
    /// The decision for a put on a page with `bits`.
    pub fn put(bits: PageBits) -> Decision {
        let log = |kind, data, memory| Decision::Log { kind, data, memory };
        match bits.put_action() {
            PutAction::Write => Decision::Plain,
            PutAction::WriteLogMeta => log(EntryKind::PutMeta, false, true),
            PutAction::WriteLogData => log(EntryKind::PutData, true, true),
            PutAction::Active => log(EntryKind::ActivePut, true, false),
            PutAction::FaultToAccessLog => log(EntryKind::Fault, false, false),
            PutAction::FaultToSystemLog => Decision::SystemFault,
        }
    }

    /// The decision for a get on a page with `bits`.
    pub fn get(bits: PageBits) -> Decision {
        let log = |kind, data, memory| Decision::Log { kind, data, memory };
        match bits.get_action() {
            GetAction::Read => Decision::Plain,
            GetAction::ReadLogMeta => log(EntryKind::GetMeta, false, true),
            GetAction::ReadLogData => log(EntryKind::GetData, true, true),
            GetAction::Active => Decision::Hold,
            GetAction::FaultToAccessLog => log(EntryKind::Fault, false, false),
            GetAction::FaultToSystemLog => Decision::SystemFault,
        }
    }
}

/// The driver's access logs: an [`crate::AccessLog`] with its
/// [`crate::reassembly::Reassembler`] per IUID.
pub trait LogStore {
    /// Whether log `iuid` exists (an access to a page naming a missing log is refused before
    /// it touches memory).
    fn has_log(&self, iuid: Iuid) -> bool;

    /// Offer one fragment of an entry to log `iuid`: `None` if there is no such log, else the
    /// reassembler's outcome (`Err`: the log is full, nothing was taken).
    fn on_fragment(
        &mut self,
        iuid: Iuid,
        fragment: Fragment,
    ) -> Option<Result<FragmentOutcome, Backpressure>>;
}

/// Process memory as the IOMMU reaches it. Fallible: in the live runtime a page may be
/// missing (the engine NACKs the block and pages it in).
pub trait PacketMemory {
    /// Why an access failed.
    type Error;
    /// Write `data` at `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), Self::Error>;
    /// Read `out.len()` bytes at `addr`.
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), Self::Error>;
}

/// One packet of a put or a get as it reaches the IOMMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Source process (global id).
    pub source: u32,
    /// Transaction id at the source (with `source`, names the access in its log).
    pub txn: u32,
    /// Start address of the whole access.
    pub addr: u64,
    /// Length of the whole access, bytes.
    pub total_len: u32,
    /// Offset of this packet within the access, bytes.
    pub offset: u32,
}

impl Packet {
    /// Address of this packet's first byte.
    pub fn at(&self) -> u64 {
        self.addr + self.offset as u64
    }
}

/// Where a refused access was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultLog {
    /// A `Fault` entry in the page's access log (E=1).
    Access,
    /// The legacy system fault log (E=0), or a marked page naming a log that does not exist.
    System,
}

/// A get's entry is named `(source, txn | GET_TXN)` in its log (and by the reassembler), so
/// that a get and a put of one source with the same transaction id are different accesses; a
/// put's transaction id has the bit cleared.
pub const GET_TXN: u32 = 1 << 31;

/// What one packet did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Accessed (and logged per the decision); `completed`: this packet completed an entry.
    Done {
        /// What the page bits decided.
        decision: Decision,
        /// An entry became complete in the log with this packet.
        completed: bool,
    },
    /// A duplicate of a packet already logged: not logged again (a put on a written page is
    /// written again, which is idempotent).
    Duplicate,
    /// Refused as a fault; nothing was written.
    Fault(FaultLog),
    /// The log is full: nothing was logged; the source must retry (back-pressure).
    Stalled(Backpressure),
    /// A get held for the active flush ([`Decision::Hold`]): the driver holds it until the
    /// log is drained, then serves it with a plain read.
    Hold,
}

/// Log the packet's share of an access decided `Log { kind, data, .. }` (`payload`: this
/// packet's bytes).
fn log<L: LogStore + ?Sized>(
    logs: &mut L,
    bits: PageBits,
    p: &Packet,
    kind: EntryKind,
    data: bool,
    payload: &[u8],
) -> Result<bool, Outcome> {
    // A metadata-only entry is one per access: logged with the packet at offset 0.
    if !data && p.offset != 0 {
        return Ok(false);
    }
    let header = EntryHeader {
        kind,
        source: p.source,
        txn: p.txn,
        addr: p.addr,
        access_len: p.total_len,
        data_len: if data { p.total_len } else { 0 },
    };
    let fragment = Fragment {
        header,
        offset: p.offset,
        data: if data { payload } else { &[] },
    };
    match logs.on_fragment(bits.iuid, fragment) {
        None => Err(Outcome::Fault(FaultLog::System)),
        Some(Err(bp)) => Err(Outcome::Stalled(bp)),
        Some(Ok(FragmentOutcome::Duplicate)) => Err(Outcome::Duplicate),
        Some(Ok(o)) => Ok(o == FragmentOutcome::Completed),
    }
}

/// Carry one put packet (`data`: its bytes, at [`Packet::at`]) through the decision of its
/// page's `bits`. `Err` only when the memory refused the write (nothing was logged then).
pub fn put<L: LogStore + ?Sized, M: PacketMemory + ?Sized>(
    bits: PageBits,
    p: &Packet,
    data: &[u8],
    logs: &mut L,
    mem: &mut M,
) -> Result<Outcome, M::Error> {
    let p = &Packet {
        txn: p.txn & !GET_TXN,
        ..*p
    };
    let decision = Decision::put(bits);
    let (kind, with_data, memory) = match decision {
        Decision::Plain => {
            mem.write(p.at(), data)?;
            return Ok(Outcome::Done {
                decision,
                completed: false,
            });
        }
        Decision::SystemFault => return Ok(Outcome::Fault(FaultLog::System)),
        Decision::Hold => unreachable!("a put is never held"),
        Decision::Log { .. } if !logs.has_log(bits.iuid) => {
            return Ok(Outcome::Fault(FaultLog::System))
        }
        Decision::Log { kind, data, memory } => (kind, data, memory),
    };
    if memory {
        mem.write(p.at(), data)?;
    }
    Ok(finish(
        log(logs, bits, p, kind, with_data, data),
        decision,
        kind,
    ))
}

/// Carry one get packet (`out`: its bytes, read from [`Packet::at`]) through the decision
/// of its page's `bits`. `Err` only when the memory refused the read (nothing was logged).
pub fn get<L: LogStore + ?Sized, M: PacketMemory + ?Sized>(
    bits: PageBits,
    p: &Packet,
    out: &mut [u8],
    logs: &mut L,
    mem: &mut M,
) -> Result<Outcome, M::Error> {
    let p = &Packet {
        txn: p.txn | GET_TXN,
        ..*p
    };
    let decision = Decision::get(bits);
    let (kind, with_data, memory) = match decision {
        Decision::Plain => {
            mem.read(p.at(), out)?;
            return Ok(Outcome::Done {
                decision,
                completed: false,
            });
        }
        Decision::SystemFault => return Ok(Outcome::Fault(FaultLog::System)),
        Decision::Hold => return Ok(Outcome::Hold),
        Decision::Log { .. } if !logs.has_log(bits.iuid) => {
            return Ok(Outcome::Fault(FaultLog::System))
        }
        Decision::Log { kind, data, memory } => (kind, data, memory),
    };
    if memory {
        mem.read(p.at(), out)?;
    }
    Ok(finish(
        log(logs, bits, p, kind, with_data, out),
        decision,
        kind,
    ))
}

fn finish(logged: Result<bool, Outcome>, decision: Decision, kind: EntryKind) -> Outcome {
    match logged {
        // A resent or duplicated packet of a refused access is refused again: its fault entry
        // is logged once, but the access never becomes a success (the VOPR's AA swarm found a
        // retransmission of a faulted put acknowledged as written).
        Err(Outcome::Duplicate) if kind == EntryKind::Fault => Outcome::Fault(FaultLog::Access),
        Err(o) => o,
        Ok(_) if kind == EntryKind::Fault => Outcome::Fault(FaultLog::Access),
        Ok(completed) => Outcome::Done {
            decision,
            completed,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::AccessLog;
    use crate::memory::{ByteMemory, SparseMemory};
    use crate::reassembly::Reassembler;

    struct OneLog(Iuid, AccessLog, Reassembler);
    impl LogStore for OneLog {
        fn has_log(&self, iuid: Iuid) -> bool {
            iuid == self.0
        }
        fn on_fragment(
            &mut self,
            iuid: Iuid,
            f: Fragment,
        ) -> Option<Result<FragmentOutcome, Backpressure>> {
            (iuid == self.0).then(|| self.2.on_fragment(&mut self.1, f))
        }
    }
    /// A memory whose page at 0x9000 is missing (as a live page not present yet).
    struct Holey(SparseMemory);
    impl PacketMemory for Holey {
        type Error = ();
        fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), ()> {
            if addr / 4096 == 9 {
                return Err(());
            }
            self.0.write(addr, data);
            Ok(())
        }
        fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), ()> {
            self.0.read(addr, out);
            Ok(())
        }
    }

    fn pkt(addr: u64, total_len: u32, offset: u32) -> Packet {
        Packet {
            source: 2,
            txn: 7,
            addr,
            total_len,
            offset,
        }
    }

    #[test]
    fn tracked_put_is_written_before_it_is_logged_and_once_per_access() {
        let i = Iuid::new(1).unwrap();
        let mut logs = OneLog(i, AccessLog::new(4096), Reassembler::new());
        let mut mem = Holey(SparseMemory::new());
        let bits = PageBits::track_puts(i);
        // The write fails (page missing): nothing is logged.
        assert_eq!(
            put(bits, &pkt(0x9000, 8, 0), b"abcdefgh", &mut logs, &mut mem),
            Err(())
        );
        assert_eq!(logs.1.published(), 0);
        // Two packets of one tracked put: both written, one metadata entry.
        let o = put(bits, &pkt(0x5000, 16, 0), b"abcdefgh", &mut logs, &mut mem).unwrap();
        assert!(
            matches!(
                o,
                Outcome::Done {
                    completed: true,
                    ..
                }
            ),
            "{o:?}"
        );
        let o = put(bits, &pkt(0x5000, 16, 8), b"ijklmnop", &mut logs, &mut mem).unwrap();
        assert!(
            matches!(
                o,
                Outcome::Done {
                    completed: false,
                    ..
                }
            ),
            "{o:?}"
        );
        let mut b = [0u8; 16];
        mem.0.read(0x5000, &mut b);
        assert_eq!(&b, b"abcdefghijklmnop");
        assert_eq!(logs.1.pop().unwrap().header.kind, EntryKind::PutMeta);
        assert!(logs.1.pop().is_none());
    }

    #[test]
    fn active_put_reassembles_and_missing_log_is_a_system_fault() {
        let i = Iuid::new(1).unwrap();
        let mut logs = OneLog(i, AccessLog::new(4096), Reassembler::new());
        let mut mem = Holey(SparseMemory::new());
        let bits = PageBits::active_put(i);
        let o = put(bits, &pkt(0x5000, 8, 4), b"efgh", &mut logs, &mut mem).unwrap();
        assert!(matches!(
            o,
            Outcome::Done {
                completed: false,
                ..
            }
        ));
        let o = put(bits, &pkt(0x5000, 8, 0), b"abcd", &mut logs, &mut mem).unwrap();
        assert!(matches!(
            o,
            Outcome::Done {
                completed: true,
                ..
            }
        ));
        assert_eq!(
            put(bits, &pkt(0x5000, 8, 0), b"abcd", &mut logs, &mut mem).unwrap(),
            Outcome::Duplicate
        );
        assert_eq!(logs.1.pop().unwrap().data, b"abcdefgh");
        let mut b = [0u8; 8];
        mem.0.read(0x5000, &mut b);
        assert_eq!(b, [0; 8], "an active put does not write the page");
        let other = PageBits::active_put(Iuid::new(2).unwrap());
        assert_eq!(
            put(other, &pkt(0x5000, 8, 0), b"abcdefgh", &mut logs, &mut mem).unwrap(),
            Outcome::Fault(FaultLog::System)
        );
    }

    /// A written-and-logged page naming a missing log: refused before the write (the VOPR's
    /// AA swarm found the bytes written while the source was told the access was refused).
    #[test]
    fn a_missing_log_or_a_fault_page_refuses_every_packet_and_writes_nothing() {
        let i = Iuid::new(1).unwrap();
        let mut logs = OneLog(i, AccessLog::new(4096), Reassembler::new());
        let mut mem = Holey(SparseMemory::new());
        let missing = Iuid::new(2).unwrap();
        assert_eq!(
            put(
                PageBits::track_puts(missing),
                &pkt(0x5000, 8, 0),
                b"abcdefgh",
                &mut logs,
                &mut mem
            ),
            Ok(Outcome::Fault(FaultLog::System))
        );
        let mut b = [0u8; 8];
        mem.0.read(0x5000, &mut b);
        assert_eq!(b, [0; 8], "a refused put writes nothing");
        // A fault page (E=1): the first packet logs the fault, a resent copy is refused too.
        let fault = PageBits {
            e: true,
            iuid: i,
            ..PageBits::default()
        };
        for _ in 0..2 {
            assert_eq!(
                put(fault, &pkt(0x6000, 8, 0), b"abcdefgh", &mut logs, &mut mem),
                Ok(Outcome::Fault(FaultLog::Access))
            );
        }
        assert_eq!(logs.1.pop().unwrap().header.kind, EntryKind::Fault);
        assert!(logs.1.pop().is_none(), "one fault entry per access");
        let mut out = [0u8; 8];
        assert_eq!(
            get(
                PageBits::log_get_data(missing),
                &pkt(0x5000, 8, 0),
                &mut out,
                &mut logs,
                &mut mem
            ),
            Ok(Outcome::Fault(FaultLog::System))
        );
    }

    #[test]
    fn gets_log_data_hold_on_the_flushing_page_and_stall_on_a_full_log() {
        let i = Iuid::new(1).unwrap();
        let mut logs = OneLog(i, AccessLog::new(64), Reassembler::new());
        let mut mem = Holey(SparseMemory::new());
        mem.0.write(0x5000, b"hello!!!");
        let mut out = [0u8; 8];
        let o = get(
            PageBits::log_get_data(i),
            &pkt(0x5000, 8, 0),
            &mut out,
            &mut logs,
            &mut mem,
        );
        assert!(matches!(
            o,
            Ok(Outcome::Done {
                completed: true,
                ..
            })
        ));
        assert_eq!(&out, b"hello!!!");
        let flushing = PageBits {
            rl: true,
            iuid: i,
            ..PageBits::default()
        };
        assert_eq!(Decision::get(flushing), Decision::Hold);
        assert_eq!(
            get(flushing, &pkt(0x6000, 8, 0), &mut out, &mut logs, &mut mem),
            Ok(Outcome::Hold)
        );
        // The 64-byte log holds one 40-byte entry: the next is refused untouched.
        let mut p = pkt(0x5000, 8, 0);
        p.txn = 8;
        let o = get(PageBits::log_get_data(i), &p, &mut out, &mut logs, &mut mem);
        assert!(matches!(o, Ok(Outcome::Stalled(_))), "{o:?}");
    }
}
