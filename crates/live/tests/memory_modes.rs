//! The baseline memory modes of the spec's comparison (same engine, same benchmark):
//! Transfer-Only and Blocking copy without the residency check; PART checks and faults pages in.

use unpinned_live::{MemoryMode, Perms, Runtime};
use unpinned_os::mapping::Mapping;

fn pair(mode: MemoryMode) -> Vec<Runtime> {
    Runtime::in_process(2, |c| c.memory.mode = mode).expect("runtimes")
}

fn write_fresh(mode: MemoryMode, touch_first: bool) -> (bool, u64) {
    let rts = pair(mode);
    const LEN: usize = 256 << 10;
    let dst = Mapping::anon(LEN).unwrap();
    if touch_first {
        // SAFETY: our mapping, not exposed yet.
        unsafe {
            dst.as_mut_slice()
                .iter_mut()
                .step_by(4096)
                .for_each(|b| *b = 0)
        };
    }
    // SAFETY: dst outlives the runtimes' use.
    let key = unsafe { rts[1].expose(dst.ptr(), LEN, Perms::RW).unwrap() };
    let src: Vec<u8> = (0..LEN).map(|i| (i * 13 + 1) as u8).collect();
    rts[0].write_blocking(1, &src, dst.addr(), key).unwrap();
    let mut back = vec![0u8; LEN];
    rts[0].read_blocking(1, &mut back, dst.addr(), key).unwrap();
    // SAFETY: completed.
    let ok = unsafe { dst.as_slice() } == &src[..] && back == src;
    (ok, rts[1].stats().unwrap().engine.nacks_fault_sent)
}

#[test]
fn transfer_only_on_present_memory_is_correct_without_checks() {
    let (ok, nacks) = write_fresh(MemoryMode::TransferOnly, true);
    assert!(ok);
    assert_eq!(nacks, 0);
}

#[test]
fn blocking_takes_the_faults_in_the_engine_and_is_correct() {
    let (ok, nacks) = write_fresh(MemoryMode::Blocking, false);
    assert!(ok);
    assert_eq!(nacks, 0, "the blocking engine never NACKs a fault");
}

#[test]
fn part_faults_missing_pages_in() {
    let (ok, nacks) = write_fresh(MemoryMode::Part, false);
    assert!(ok);
    assert!(nacks > 0);
}

/// `PAGEMAP_SCAN` reports a present range in 2 MiB chunks: the memory checker goes on from a
/// chunk boundary instead of calling the page after it missing.
#[test]
fn a_scan_chunk_boundary_is_not_a_missing_page() {
    use unpinned_live::memory::{Access, LiveMemory, LOCAL_PDID};
    // 6 MiB present: the kernel's walk crosses 2 MiB chunk boundaries.
    let len = 6usize << 20;
    let m = Mapping::anon(len).unwrap();
    // SAFETY: the mapping is ours and nothing else accesses it.
    let s = unsafe { m.as_mut_slice() };
    for i in (0..len).step_by(4096) {
        s[i] = 1;
    }
    let b = m.addr();
    let mut mem = LiveMemory::new(LOCAL_PDID).unwrap();
    let mid = (b + (4 << 20)) & !((2 << 20) - 1);
    assert_eq!(mem.check(mid - 8192, 16384, Access::Write), Ok(()));
}
