//! The driver-independent conformance scenarios (crates/conformance) on the live runtime: one
//! [`Runtime`] per scenario node, all in this process, connected by the in-memory transport
//! (`unpinned_live::transport::mem`), on real memory with real page faults.
//!
//! How a scenario's regions become real memory (each region its own fresh mapping, so its
//! address is wherever the kernel puts it; requests are translated from region-relative
//! terms):
//!
//! | `Start`     | live region                                                              |
//! |-------------|--------------------------------------------------------------------------|
//! | `Present`   | anonymous mapping, every page touched by writing the initial bytes      |
//! | `Fresh`     | file-backed shared mapping of the initial bytes, page cache dropped: no page present, the first access to each page is a (major) fault |
//! | `Alternate` | as `Fresh`, then every other page (offsets 0, 8 KiB, 16 KiB ...) touched by writing its first byte (unchanged) |
//!
//! Why `Fresh` is file-backed: a scenario's regions start with seeded non-zero contents
//! ([`initial_bytes`]), and anonymous memory cannot hold contents without its pages being
//! present (writing them is touching them; there is no swap to page them out again). A file
//! mapping whose pages were never touched through it has exactly the simulator's `Absent`
//! residence: contents defined, no page-table entry.
//!
//! The outcome is what [`unpinned_sim::conformance::run_sim`] reports: every request's status
//! and the xxh3 of every region's final bytes. PDIDs and keys are the live runtime's own; a
//! `wrong_key` request presents the region's key xor `0x5a5a`, like the simulator.

use std::sync::atomic::{AtomicU64, Ordering};

use unpinned_core::api::{Op, RemoteKey, WrId};
use unpinned_core::memory::PAGE_BYTES;
use unpinned_live::transport::mem::network;
use unpinned_live::{Config, LiveError, Runtime};
use unpinned_os::mapping::Mapping;
use unpinned_sim::conformance::{initial_bytes, op, perms, Outcome, Scenario, Start};
use xxhash_rust::xxh3::xxh3_64;

/// Distinguishes the backing files of concurrent runs in one process.
static RUN: AtomicU64 = AtomicU64::new(0);

/// One region of a scenario as live memory.
fn region_mapping(seed: u64, i: usize, len: u64, start: Start, run: u64) -> Mapping {
    let bytes = initial_bytes(seed, i, len);
    match start {
        Start::Present => {
            let m = Mapping::anon(len as usize).expect("anonymous mapping");
            // SAFETY: the mapping is new and not exposed yet: nothing else accesses it.
            unsafe { m.as_mut_slice()[..len as usize].copy_from_slice(&bytes) };
            m
        }
        Start::Fresh | Start::Alternate => {
            let path = std::env::temp_dir().join(format!(
                "unpinned-conformance-{}-{run}-{i}",
                std::process::id()
            ));
            let m = Mapping::file(&path, len as usize, |o| bytes.get(o).copied().unwrap_or(0))
                .expect("file-backed mapping");
            if start == Start::Alternate {
                for p in (0..len as usize).step_by(2 * PAGE_BYTES as usize) {
                    // SAFETY: `p` is inside our mapping, which is not exposed yet. A write fault
                    // maps only its own page (a read fault of a file page would also map its
                    // neighbours: fault-around); volatile, so that it is not elided. The byte
                    // written is the one already there.
                    unsafe { m.ptr().add(p).write_volatile(bytes[p]) };
                }
            }
            // The residency the scenario asks for is a precondition of what it tests.
            let pages = (len / PAGE_BYTES) as usize;
            let want = if start == Start::Fresh {
                0
            } else {
                pages.div_ceil(2)
            };
            assert_eq!(
                m.present_pages(),
                want,
                "region {i} ({start:?}): pages present"
            );
            m
        }
    }
}

/// Run scenario `s` with contents seeded by `seed` on live runtimes and report its outcome.
///
/// Sequential scenarios wait for each request's completion before posting the next; the
/// others post everything, then wait for every completion.
///
/// # Panics
///
/// If the runtimes cannot start, memory cannot be mapped, a request is refused before it
/// starts, or a completion does not arrive within 60 s: none of these is an outcome the
/// reference can describe.
pub fn run_live(s: &Scenario, seed: u64) -> Outcome {
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let maps: Vec<Mapping> = s
        .regions
        .iter()
        .enumerate()
        .map(|(i, r)| region_mapping(seed, i, r.len, r.start, run))
        .collect();
    let cfg = |rank| {
        let mut c = Config::new(rank, s.nodes);
        c.timeouts.op_ms = 60_000;
        c
    };
    let rts: Vec<Runtime> = network(s.nodes, cfg(0).max_packet())
        .into_iter()
        .enumerate()
        .map(|(rank, t)| Runtime::new(cfg(rank as u32), Box::new(t)).expect("live runtime"))
        .collect();
    let keys: Vec<Option<RemoteKey>> = s
        .regions
        .iter()
        .zip(&maps)
        .map(|(r, m)| {
            r.exposed.map(|p| {
                // SAFETY: the mapping outlives the runtimes (they are dropped first, below) and
                // is read only after every request completed.
                unsafe { rts[r.node as usize].expose(m.ptr(), r.len as usize, perms(p)) }
                    .expect("expose a conformance region")
            })
        })
        .collect();
    let status = |rt: &Runtime, id: WrId| match rt.wait(id) {
        Ok(_) => Ok(()),
        Err(LiveError::Failed { error, .. }) => Err(error),
        Err(e) => panic!("scenario {}: request {id} has no completion: {e}", s.name),
    };
    let mut posted: Vec<(usize, WrId)> = Vec::new();
    let mut statuses = Vec::new();
    for q in &s.requests {
        let rt = &rts[q.node as usize];
        let remote = &s.regions[q.remote.0];
        let key = keys[q.remote.0].unwrap_or(0) ^ if q.wrong_key { 0x5a5a } else { 0 };
        // Offsets stay inside the (page-rounded) mappings for every scenario: a request past an
        // exposure's end is still inside its mapping or refused before any byte moves.
        let local = maps[q.local.0].addr() + q.local.1;
        let remote_addr = maps[q.remote.0].addr() + q.remote.1;
        // SAFETY: the local range lies in a mapping that outlives the request (we wait for
        // every completion before reading or unmapping anything) and that we do not access
        // meanwhile.
        let id = unsafe {
            match op(q.op) {
                Op::Write => rt.write(
                    remote.node,
                    local as *const u8,
                    remote_addr,
                    key,
                    q.len as usize,
                ),
                Op::Read => rt.read(
                    remote.node,
                    local as *mut u8,
                    remote_addr,
                    key,
                    q.len as usize,
                ),
            }
        }
        .unwrap_or_else(|e| panic!("scenario {}: post {q:?}: {e}", s.name));
        if s.sequential {
            statuses.push(status(rt, id));
        } else {
            posted.push((q.node as usize, id));
        }
    }
    for (node, id) in posted {
        statuses.push(status(&rts[node], id));
    }
    for rt in &rts {
        rt.flush().expect("every request completed");
    }
    drop(rts);
    let region_hashes = s
        .regions
        .iter()
        .zip(&maps)
        // SAFETY: the runtimes are gone: nothing writes the mappings any more.
        .map(|(r, m)| xxh3_64(unsafe { &m.as_slice()[..r.len as usize] }))
        .collect();
    Outcome {
        statuses,
        region_hashes,
    }
}
