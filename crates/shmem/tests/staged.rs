//! Small broadcasts through PART go as one message per member (crates/shmem/src/coll/staged.rs):
//! back-to-back broadcasts from rotating roots with no synchronization between them (the
//! slots' credits), two groups whose broadcasts one PE takes in the other order than the root
//! sent them (two, then more than the root's slots), two roots that each send to the other
//! first (the stash), an active set that reuses a group's words with another geometry, the
//! largest staged size and the first one that is not, with bytes checked everywhere.
//!
//! The tests launch this test binary three times under the launcher (3 PEs, load/store path
//! off; shared-memory rings, then UDP), running the ignored test `pe_program` in each.

mod support;

use unpinned_live::launch::LaunchTransport;
use unpinned_shmem::coll::{self, Group, GROUP_WORDS};
use unpinned_shmem::state::{self, State};

fn byte(round: u64, i: usize) -> u8 {
    (round.wrapping_mul(131) as usize ^ i.wrapping_mul(7)) as u8
}

/// Symmetric allocation (every PE makes the same sequence).
fn alloc(st: &State, len: usize) -> *mut u8 {
    let off = st.alloc.lock().unwrap().alloc(len, 64).unwrap();
    // SAFETY: inside the heap.
    unsafe { st.heap.base.add(off) }
}

/// Broadcast `len` bytes of round `round` from `root` on `g` into `dest` and check them.
fn bcast(st: &State, g: &Group, src: *mut u8, dest: *mut u8, len: usize, root: u32, round: u64) {
    if g.me == root {
        for i in 0..len {
            // SAFETY: `src` has room for the largest length.
            unsafe { *src.add(i) = byte(round, i) };
        }
    }
    // SAFETY: symmetric buffers of at least `len` bytes.
    unsafe { coll::broadcast(st, "test", g, dest, src, len, root, false) };
    if g.me != root {
        for i in 0..len {
            // SAFETY: as above.
            let b = unsafe { *dest.add(i) };
            assert_eq!(
                b,
                byte(round, i),
                "round {round}, {len} bytes, byte {i}, PE {}",
                st.me
            );
        }
    }
}

#[test]
#[ignore = "one PE of `staged_broadcasts_arrive_whole_in_any_order`, run under the launcher"]
fn pe_program() {
    // One PE may keep its heap to itself (the other PEs map each other's): see
    // `staged_broadcasts_arrive_whole_with_some_heaps_mapped`.
    if let Ok(rank) = std::env::var(UNMAPPED_RANK) {
        let me = std::env::var(unpinned_live::edge::ENV_RANK).unwrap_or_default();
        let on = if me == rank { "0" } else { "1" };
        std::env::set_var("SHMEM_LOADSTORE", on);
    }
    state::init("pe_program", 0);
    let st = state::state("pe_program");
    assert_eq!(st.npes, 3);
    if std::env::var(UNMAPPED_RANK).is_ok() {
        let mapped = |pe: usize| !st.peers[pe].heap_map.is_null();
        match st.me {
            0 | 1 => assert!(mapped(1 - st.me as usize) && !mapped(2), "PE {}", st.me),
            _ => assert!(!mapped(0) && !mapped(1), "PE 2 maps a heap"),
        }
    }
    let max = st.stage.max_len();
    assert!(max >= 1024, "staging is off or tiny: {max}");
    let words_a = alloc(st, GROUP_WORDS * 8) as *mut u64;
    let words_b = alloc(st, GROUP_WORDS * 8) as *mut u64;
    let words_c = alloc(st, GROUP_WORDS * 8) as *mut u64;
    let big = max + 64;
    let (src, dest, dest2) = (alloc(st, big), alloc(st, big), alloc(st, big));
    let world = Group::new(0, 1, 3, st.me, words_a);
    let pair = (st.me < 2).then(|| Group::new(0, 1, 2, st.me, words_b));
    coll::sync(st, "test", &world);

    // Back to back, rotating roots, lengths from 0 to the largest staged one.
    for round in 0..300u64 {
        let len = match round % 5 {
            0 => 0,
            1 => 8,
            2 => max,
            _ => (round as usize * 37) % (max + 1),
        };
        bcast(st, &world, src, dest, len, (round % 3) as u32, round);
    }
    coll::sync(st, "test", &world);

    // PE 0 roots a world broadcast, then one on the pair; PE 1 takes the pair's first.
    if let Some(pair) = &pair {
        match st.me {
            0 => {
                bcast(st, &world, src, dest, 100, 0, 1000);
                bcast(st, pair, src, dest2, 200, 0, 1001);
            }
            _ => {
                bcast(st, pair, src, dest2, 200, 0, 1001);
                bcast(st, &world, src, dest, 100, 0, 1000);
            }
        }
    } else {
        bcast(st, &world, src, dest, 100, 0, 1000);
    }
    coll::sync(st, "test", &world);

    // More than a root's slots in the other order: PE 0 roots six broadcasts on the pair,
    // then six on the world; PE 1 takes the world's first (its slots fill with the pair's).
    if let Some(pair) = &pair {
        let mut order: Vec<(bool, u64)> = (0..6).map(|k| (true, 4000 + k)).collect();
        order.extend((0..6).map(|k| (false, 4100 + k)));
        if st.me == 1 {
            order.rotate_left(6);
        }
        for (on_pair, round) in order {
            let (g, d) = if on_pair {
                (pair, dest2)
            } else {
                (&world, dest)
            };
            bcast(st, g, src, d, 24, 0, round);
        }
    } else {
        for k in 0..6 {
            bcast(st, &world, src, dest, 24, 0, 4100 + k);
        }
    }
    coll::sync(st, "test", &world);

    // Two roots that send to each other first: PE 0 roots six on one pair group, PE 1 six on
    // another, each sends its own before taking the other's (each waits for slots the other
    // holds until the waiting side empties them into its stash).
    if st.me < 2 {
        let x = Group::new(0, 1, 2, st.me, words_b);
        let y = Group::new(0, 1, 2, st.me, words_c);
        let mine: Vec<(&Group, u32, u64)> = if st.me == 0 {
            (0..6).map(|k| (&x, 0, 5000 + k)).collect()
        } else {
            (0..6).map(|k| (&y, 1, 5100 + k)).collect()
        };
        let theirs: Vec<(&Group, u32, u64)> = if st.me == 0 {
            (0..6).map(|k| (&y, 1, 5100 + k)).collect()
        } else {
            (0..6).map(|k| (&x, 0, 5000 + k)).collect()
        };
        for (g, root, round) in mine.into_iter().chain(theirs) {
            bcast(st, g, src, dest2, 40, root, round);
        }
    }
    coll::sync(st, "test", &world);

    // An active set on the pair's words with another geometry (PEs 1 and 2).
    if st.me >= 1 {
        let other = Group::new(1, 1, 2, st.me - 1, words_b);
        for round in 0..20 {
            bcast(st, &other, src, dest, 64, (round % 2) as u32, 2000 + round);
        }
    }
    coll::sync(st, "test", &world);

    // The first size past the stage goes the push way.
    let (sent, received) = (
        st.stage
            .sent_total
            .load(std::sync::atomic::Ordering::Relaxed),
        st.stage
            .received_total
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    bcast(st, &world, src, dest, max + 8, 1, 3000);
    coll::sync(st, "test", &world);
    assert_eq!(
        st.stage
            .sent_total
            .load(std::sync::atomic::Ordering::Relaxed)
            + st.stage
                .received_total
                .load(std::sync::atomic::Ordering::Relaxed),
        sent + received,
        "a broadcast of {} bytes was staged",
        max + 8
    );
    assert!(
        sent > 0 && received > 0,
        "PE {}: sent {sent}, received {received}",
        st.me
    );
    println!("PE {}: {sent} messages sent, {received} received", st.me);
    state::finalize();
}

#[test]
fn staged_broadcasts_arrive_whole_in_any_order() {
    support::run_pe_program(3, LaunchTransport::Shm);
}

/// The PE that runs with its load/store path off, when set.
const UNMAPPED_RANK: &str = "STAGED_TEST_UNMAPPED_RANK";

/// PEs 0 and 1 map each other's heaps, PE 2 maps none and is mapped by none: staging is on
/// (not every heap is mapped), and between PEs 0 and 1 the root stores its messages and the
/// member its credits through the mapping.
#[test]
fn staged_broadcasts_arrive_whole_with_some_heaps_mapped() {
    support::run_pe_program_with(3, LaunchTransport::Shm, &[(UNMAPPED_RANK, "2")]);
}

#[test]
fn staged_broadcasts_arrive_whole_over_udp() {
    support::run_pe_program(3, LaunchTransport::Udp);
}

#[test]
#[ignore = "one PE of `different_lengths_end_the_job_with_a_message`, run under oshrun"]
fn pe_mismatch() {
    state::init("pe_mismatch", 0);
    let st = state::state("pe_mismatch");
    let words = alloc(st, GROUP_WORDS * 8) as *mut u64;
    let (src, dest) = (alloc(st, 64), alloc(st, 64));
    let world = Group::new(0, 1, st.npes, st.me, words);
    let len = if st.me == 0 { 16 } else { 8 };
    // SAFETY: symmetric buffers of 64 bytes.
    unsafe { coll::broadcast(st, "shmem_broadcast64", &world, dest, src, len, 0, false) };
    state::finalize();
}

#[test]
fn different_lengths_end_the_job_with_a_message() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oshrun"))
        .args(["-np", "2", "--timeout", "30"])
        .arg(exe)
        .args(["pe_mismatch", "--exact", "--ignored", "--nocapture"])
        .env("SHMEM_LOADSTORE", "0")
        .output()
        .expect("run oshrun");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("shmem_broadcast64")
            && text.contains("broadcasts 16 bytes and this PE expects 8"),
        "{text}"
    );
}
