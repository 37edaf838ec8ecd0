//! Remote atomics on the live runtime: three runtimes in one process over the in-memory
//! transport, real engine threads and real memory.

use unpinned_live::transport::mem::network;
use unpinned_live::{AtomicOp, Config, LiveError, Perms, Runtime};
use unpinned_os::mapping::Mapping;

fn ranks(n: u32) -> Vec<Runtime> {
    let max = Config::new(0, n).max_packet();
    network(n, max)
        .into_iter()
        .enumerate()
        .map(|(r, t)| Runtime::new(Config::new(r as u32, n), Box::new(t)).expect("runtime"))
        .collect()
}

#[test]
fn concurrent_fetch_adds_are_each_executed_once_and_cas_works_on_a_fresh_page() {
    let rts = ranks(3);
    let mem = Mapping::anon(2 * 4096).unwrap();
    assert_eq!(
        mem.present_pages(),
        0,
        "the word's page starts missing: the fault path runs"
    );
    // SAFETY: the mapping outlives the runtimes; read only after all atomics completed.
    let key = unsafe { rts[0].expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let word = mem.addr() + 64;
    let n = 300u64;
    let olds: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = [1usize, 2]
            .iter()
            .map(|&r| {
                let rt = &rts[r];
                s.spawn(move || {
                    (0..n)
                        .map(|_| rt.atomic(0, word, key, AtomicOp::FetchAdd(1)).unwrap())
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<u64> = olds.concat();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..2 * n).collect::<Vec<_>>(),
        "every old value exactly once"
    );
    // SAFETY: all atomics completed; the engine no longer touches the word.
    assert_eq!(
        // SAFETY: `word` is an aligned u64 inside `mem`, which this test owns and keeps
        // mapped; every atomic on it has completed.
        unsafe { std::ptr::read_volatile(word as *const u64) },
        2 * n
    );
    // CAS: first wins, second sees the winner's value.
    let w2 = mem.addr() + 4096;
    assert_eq!(
        rts[1]
            .atomic(
                0,
                w2,
                key,
                AtomicOp::Cas {
                    expected: 0,
                    new: 11
                }
            )
            .unwrap(),
        0
    );
    assert_eq!(
        rts[2]
            .atomic(
                0,
                w2,
                key,
                AtomicOp::Cas {
                    expected: 0,
                    new: 22
                }
            )
            .unwrap(),
        11
    );
    assert_eq!(rts[2].atomic(0, w2, key, AtomicOp::Swap(5)).unwrap(), 11);
    // Refused: misaligned (caught at the API), outside the exposure, wrong key.
    assert!(matches!(
        rts[1].atomic(0, word + 4, key, AtomicOp::Swap(1)),
        Err(LiveError::Invalid(_))
    ));
    assert!(matches!(
        rts[1].atomic(0, mem.addr() + 8192, key, AtomicOp::Swap(1)),
        Err(LiveError::Failed { .. })
    ));
    assert!(matches!(
        rts[1].atomic(0, word, key ^ 1, AtomicOp::Swap(1)),
        Err(LiveError::Failed { .. })
    ));
    assert_eq!(
        // SAFETY: `word` is an aligned u64 inside `mem`, which this test owns and keeps
        // mapped; every atomic on it has completed.
        unsafe { std::ptr::read_volatile(word as *const u64) },
        2 * n
    );
}
