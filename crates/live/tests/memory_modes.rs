//! The baseline memory modes (issue 3, "same engine, same benchmark"): Transfer-Only and
//! Blocking copy without the residency check; PART checks and faults pages in.

use unpinned_live::mapping::Mapping;
use unpinned_live::transport::mem::network;
use unpinned_live::{Config, MemoryMode, Perms, Runtime};

fn pair(mode: MemoryMode) -> Vec<Runtime> {
    let max = Config::new(0, 2).max_packet();
    network(2, max)
        .into_iter()
        .enumerate()
        .map(|(r, t)| {
            let mut c = Config::new(r as u32, 2);
            c.memory.mode = mode;
            Runtime::new(c, Box::new(t)).expect("runtime")
        })
        .collect()
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
