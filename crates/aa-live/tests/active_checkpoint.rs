//! Incremental checkpointing of remotely written pages on the live runtime: two runtimes in
//! one process over the in-memory transport (real engine threads, handler thread, memory).

use unpinned_aa_live::checkpoint::{restore_into, CheckpointError, Checkpointer};
use unpinned_aa_live::ActiveRuntime;
use unpinned_aa_live::Notify;
use unpinned_live::transport::mem::network;
use unpinned_live::{Config, Perms};
use unpinned_os::mapping::Mapping;

fn pair() -> Vec<ActiveRuntime> {
    let max = Config::new(0, 2).max_packet();
    network(2, max)
        .into_iter()
        .enumerate()
        .map(|(r, t)| ActiveRuntime::new(Config::new(r as u32, 2), Box::new(t)).expect("runtime"))
        .collect()
}

/// xorshift64*: a seeded generator without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn image(m: &Mapping) -> Vec<u8> {
    // SAFETY: the mapping is alive and the writers' puts are complete (flushed).
    unsafe { std::slice::from_raw_parts(m.ptr(), m.len()).to_vec() }
}

#[test]
fn remote_writes_checkpoint_incrementally_and_restore_exactly() {
    let pages = 64u64;
    for (seed, notify) in [(1u64, Notify::Sleep), (7, Notify::Poll)] {
        let rts = pair();
        let (src, dst) = (&rts[0], &rts[1]);
        let mem = Mapping::anon((pages * 4096) as usize).unwrap();
        // SAFETY: the mapping outlives the runtimes' use of it.
        let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
        // SAFETY: the mapping stays mapped while the checkpointer lives.
        let mut cp = unsafe {
            Checkpointer::start(
                dst.active(),
                5,
                1 << 14,
                mem.addr(),
                mem.len() as u64,
                notify,
            )
        }
        .unwrap();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut deltas = vec![cp.full().unwrap()];
        let full_bytes = pages * 4096;
        let mut incremental_bytes = 0u64;
        let epochs = 6;
        for epoch in 0..epochs {
            // A few hot pages per epoch; writes of 1..6000 bytes (up to three pages, several
            // packets), some crossing page boundaries.
            let hot: Vec<u64> = (0..1 + rng.below(5)).map(|_| rng.below(pages)).collect();
            for _ in 0..20 {
                let p = hot[rng.below(hot.len() as u64) as usize];
                let len = 1 + rng.below(6000);
                let off = (p * 4096 + rng.below(4096)).min(pages * 4096 - len);
                let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                src.write_blocking(1, &data, mem.addr() + off, key).unwrap();
            }
            // One local write by the target itself, reported like the MMU's dirty bit.
            let lp = rng.below(pages);
            // SAFETY: inside the mapping; no remote put is in flight.
            unsafe { *mem.ptr().add((lp * 4096 + 17) as usize) = epoch as u8 + 1 };
            cp.mark_local(mem.addr() + lp * 4096 + 17, 1);
            let d = cp.checkpoint().unwrap();
            assert!(!d.pages.is_empty());
            assert!(
                d.pages.len() as u64 <= hot.len() as u64 * 3 + 1,
                "only written pages are copied ({} pages, {} hot)",
                d.pages.len(),
                hot.len()
            );
            incremental_bytes += d.pages.len() as u64 * 4096;
            deltas.push(d);
            let mut restored = vec![0xeeu8; mem.len()];
            restore_into(&deltas, mem.addr(), &mut restored).unwrap();
            assert!(
                restored == image(&mem),
                "seed {seed} epoch {epoch}: restored image differs"
            );
        }
        let rep = cp.stop().unwrap();
        assert!(rep.entries > 0);
        println!(
            "{}: {} epochs, incremental {} bytes vs {} bytes for full checkpoints ({:.1} %), {} log entries",
            notify.name(),
            epochs,
            incremental_bytes,
            full_bytes * epochs as u64,
            100.0 * incremental_bytes as f64 / (full_bytes * epochs as u64) as f64,
            rep.entries
        );
        assert!(incremental_bytes < full_bytes * epochs as u64);
    }
}

#[test]
fn bad_regions_and_restores_are_typed_errors() {
    let rts = pair();
    let aa = rts[1].active();
    // SAFETY: rejected before any memory is touched.
    let r = unsafe { Checkpointer::start(aa, 1, 4096, 0x1001, 4096, Notify::Sleep) };
    assert!(matches!(r, Err(CheckpointError::BadRegion { .. })));
    // SAFETY: as above.
    let r = unsafe { Checkpointer::start(aa, 1, 4096, 0x1000, 0, Notify::Sleep) };
    assert!(matches!(r, Err(CheckpointError::BadRegion { .. })));
    let d = unpinned_aa_live::checkpoint::Delta {
        pages: vec![(99, vec![0; 4096])],
    };
    let mut out = vec![0u8; 4096];
    assert!(matches!(
        restore_into(&[d], 0x1000, &mut out),
        Err(CheckpointError::Restore(_))
    ));
}
