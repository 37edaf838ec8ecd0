//! The Active Access conformance scenarios (crates/conformance) on the live runtime's memory
//! decorator, [`ActiveMemory`] over real memory: every scenario's observable outcome (packet
//! results, popped entries, final bytes) must equal the IOMMU model's
//! (`unpinned_sim::aa::conformance::run_model`), so drift between the drivers fails here.

use std::sync::atomic::Ordering;

use unpinned_conformance::active::{payload, Observed, PacketResult, Popped, Scenario, Step};
use unpinned_core::memory::{AccessOrigin, MemError, Memory};
use unpinned_live::memory::LiveMemory;
use unpinned_os::mapping::Mapping;
use unpinned_sim::aa::conformance::{page_bits, run_model, scenarios};

use crate::memory::ActiveMemory;
use crate::ActiveAccess;

const PDID: u16 = 1;

fn result(r: Result<(), MemError>) -> PacketResult {
    match r {
        Ok(()) => PacketResult::Ok,
        Err(MemError::NotPresent { .. }) => PacketResult::Retry,
        Err(_) => PacketResult::Fault,
    }
}

/// Run `s` on [`ActiveMemory`] over a fresh, touched mapping.
fn run_live(s: &Scenario) -> Observed {
    let page = unpinned_conformance::active::PAGE;
    let map = Mapping::anon((s.pages * page) as usize).expect("mmap");
    let base = map.addr();
    // SAFETY: our own fresh mapping; touched through this slice only, before any access.
    unsafe { map.as_mut_slice() }.fill(0);
    let aa = ActiveAccess::new(0);
    for &(iuid, bytes) in &s.logs {
        aa.create_log(iuid as u32, bytes).expect("log");
    }
    for &(p, bits) in &s.marks {
        aa.assoc_pages(base + p * page, page, page_bits(bits))
            .expect("marks");
    }
    let inner = LiveMemory::new(PDID).expect("live memory");
    let mut mem = ActiveMemory::new(inner, aa.state.clone());
    let mut packets = Vec::new();
    let mut popped = Vec::new();
    for step in &s.steps {
        match *step {
            Step::Packet {
                put,
                source,
                txn,
                addr,
                total_len,
                offset,
                len,
            } => {
                let origin = AccessOrigin {
                    peer: source,
                    transfer_id: txn,
                    xfer_addr: base + addr,
                    xfer_len: total_len as u64,
                    offset: offset as u64,
                };
                let at = base + addr + offset as u64;
                mem.as_mut().begin_turn();
                let r = if put {
                    let data = payload(source, txn, offset, len);
                    mem.write_from(PDID, at, &data, &origin)
                } else {
                    let mut out = vec![0u8; len as usize];
                    mem.read_for(PDID, at, &mut out, &origin)
                };
                packets.push(result(r));
            }
            Step::Pop { iuid, n } => {
                let log = aa
                    .state
                    .log(unpinned_aa::Iuid::new(iuid).expect("iuid"))
                    .expect("log");
                let mut out = Vec::new();
                log.take(n as usize, &mut out);
                for (e, _) in out {
                    // What the handler thread does after its call: the entry is processed.
                    log.processed.fetch_add(1, Ordering::SeqCst);
                    popped.push(Popped {
                        iuid,
                        kind: format!("{:?}", e.header.kind),
                        source: e.header.source,
                        addr: e.header.addr - base,
                        access_len: e.header.access_len,
                        data: e.data,
                    });
                }
            }
        }
    }
    // SAFETY: our own mapping; the decorator is done with it.
    let memory = unsafe { map.as_slice() }.to_vec();
    Observed {
        packets,
        popped,
        memory,
    }
}

#[test]
fn the_live_decorator_matches_the_iommu_model_on_every_scenario() {
    for s in scenarios() {
        let want = run_model(&s);
        let got = run_live(&s);
        assert_eq!(got.packets, want.packets, "packet results: {}", s.name);
        assert_eq!(got.popped, want.popped, "popped entries: {}", s.name);
        assert!(got.memory == want.memory, "final bytes: {}", s.name);
    }
}
