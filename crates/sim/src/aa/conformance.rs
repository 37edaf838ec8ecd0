//! The Active Access conformance scenarios (crates/conformance's [`active`] module, data only)
//! on the IOMMU model, [`unpinned_aa::AaIommu`] over a sparse memory: the reference the live
//! runtime's memory decorator must match (its tests run the same scenarios).

use unpinned_aa::iommu::{GetOutcome, PutPacket};
use unpinned_aa::memory::{ByteMemory, SparseMemory};
use unpinned_aa::{access, AaIommu, Iuid, PageBits};
use unpinned_conformance::active::{
    self, payload, Bits, Observed, PacketResult, Popped, Scenario, Step,
};

pub use active::scenarios;

/// Base of the target's region in the model.
const BASE: u64 = 0x10_0000_0000;
/// The target's address space.
const PDID: u16 = 1;

/// crates/aa's page bits for a scenario's.
pub fn page_bits(b: Bits) -> PageBits {
    PageBits {
        w: b.w,
        r: b.r,
        wl: b.wl,
        wld: b.wld,
        rl: b.rl,
        rld: b.rld,
        e: b.e,
        iuid: Iuid::new(b.iuid).expect("scenario IUIDs fit in 10 bits"),
    }
}

/// Run `s` on the IOMMU model.
pub fn run_model(s: &Scenario) -> Observed {
    let mut io = AaIommu::new();
    let mut mem = SparseMemory::new();
    for &(iuid, bytes) in &s.logs {
        let i = Iuid::new(iuid).expect("scenario IUIDs fit in 10 bits");
        io.create_log(i, PDID, 0x7000_0000 + iuid as u64 * 0x10_0000, bytes);
    }
    for &(page, bits) in &s.marks {
        io.assoc_pages(
            PDID,
            BASE + page * active::PAGE,
            active::PAGE,
            page_bits(bits),
        );
    }
    let mut packets = Vec::new();
    let mut popped = Vec::new();
    for step in &s.steps {
        match *step {
            Step::Packet {
                put: true,
                source,
                txn,
                addr,
                total_len,
                offset,
                len,
            } => {
                let data = payload(source, txn, offset, len);
                let o = io.put(
                    PutPacket {
                        pdid: PDID,
                        source,
                        txn,
                        addr: BASE + addr,
                        total_len,
                        offset,
                        data: &data,
                    },
                    &mut mem,
                );
                packets.push(match o {
                    access::Outcome::Done { .. } | access::Outcome::Duplicate => PacketResult::Ok,
                    access::Outcome::Fault(_) => PacketResult::Fault,
                    access::Outcome::Stalled(_) | access::Outcome::Hold => PacketResult::Retry,
                });
            }
            Step::Packet {
                put: false,
                source,
                txn,
                addr,
                len,
                ..
            } => {
                let o = io.get(PDID, source, txn, BASE + addr, len, &mem);
                packets.push(match o {
                    GetOutcome::Data(_) => PacketResult::Ok,
                    GetOutcome::Fault => PacketResult::Fault,
                    GetOutcome::Held | GetOutcome::Stalled(_) => PacketResult::Retry,
                });
            }
            Step::Pop { iuid, n } => {
                let i = Iuid::new(iuid).expect("scenario IUIDs fit in 10 bits");
                for _ in 0..n {
                    let Some(e) = io.pop(i) else { break };
                    popped.push(Popped {
                        iuid,
                        kind: format!("{:?}", e.header.kind),
                        source: e.header.source,
                        addr: e.header.addr - BASE,
                        access_len: e.header.access_len,
                        data: e.data,
                    });
                }
            }
        }
    }
    let mut memory = vec![0u8; (s.pages * active::PAGE) as usize];
    mem.read(BASE, &mut memory);
    Observed {
        packets,
        popped,
        memory,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_runs_every_scenario_with_the_expected_shape() {
        for s in scenarios() {
            let o = run_model(&s);
            let n = s
                .steps
                .iter()
                .filter(|s| matches!(s, Step::Packet { .. }))
                .count();
            assert_eq!(o.packets.len(), n, "{}", s.name);
        }
        // Spot checks of the reference itself.
        let all = scenarios();
        let o = run_model(&all[0]);
        assert_eq!(o.popped.len(), 2, "two active puts, the duplicate dropped");
        assert!(o.popped.iter().all(|p| p.kind == "ActivePut"));
        let o = run_model(&all[3]);
        assert_eq!(
            o.packets,
            [
                PacketResult::Ok,
                PacketResult::Retry,
                PacketResult::Retry,
                PacketResult::Ok
            ],
            "back-pressure, then the retry after a pop"
        );
        let o = run_model(&all[4]);
        assert_eq!(
            &o.packets[2..],
            [PacketResult::Retry, PacketResult::Retry, PacketResult::Ok],
            "the flush get waits for both entries"
        );
    }
}
