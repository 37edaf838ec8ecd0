//! The reply-based active flush on the live runtime: two runtimes in one process over the
//! in-memory transport (real engine threads, real memory, real handler threads).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use unpinned_aa_live::ActiveRuntime;
use unpinned_aa_live::{ActiveAccess, Notify, PageBits};
use unpinned_live::transport::mem::network;
use unpinned_live::{Config, LiveError, Perms};
use unpinned_os::mapping::Mapping;

fn pair_with(f: impl Fn(&mut Config)) -> Vec<ActiveRuntime> {
    let max = Config::new(0, 2).max_packet();
    network(2, max)
        .into_iter()
        .enumerate()
        .map(|(r, t)| {
            let mut c = Config::new(r as u32, 2);
            f(&mut c);
            ActiveRuntime::new(c, Box::new(t)).expect("runtime")
        })
        .collect()
}

/// Rank 0 exposes its reply words, rank 1 replies into them (no bootstrap needed).
fn connect(src: &ActiveRuntime, dst: &ActiveRuntime) {
    let (addr, key) = src.reply_words().unwrap();
    dst.reply_connect(0, addr, key).unwrap();
}

fn read_u64(addr: u64) -> u64 {
    // SAFETY: test memory from a live mapping, read after the writers completed.
    unsafe { std::ptr::read_volatile(addr as *const u64) }
}

fn median_us(mut v: Vec<Duration>) -> f64 {
    v.sort_unstable();
    v[v.len() / 2].as_secs_f64() * 1e6
}

#[test]
fn reply_flush_returns_only_after_a_slow_handler_processed_everything() {
    let rts = pair_with(|_| {});
    let (src, dst) = (&rts[0], &rts[1]);
    connect(src, dst);
    let mem = Mapping::anon(4096).unwrap();
    // SAFETY: the mapping outlives the runtimes' use; read only after completions.
    let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let aa = dst.active();
    let iuid = aa.create_log(1, 1 << 16).unwrap();
    aa.assoc_pages(mem.addr(), 4096, PageBits::active_put(iuid))
        .unwrap();
    let (sum, count) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (s, c) = (sum.clone(), count.clone());
    let h = aa
        .spawn_handler(1, Notify::Sleep, move |e| {
            std::thread::sleep(Duration::from_micros(300));
            s.fetch_add(
                u64::from_le_bytes(e.data[..8].try_into().unwrap()),
                Ordering::SeqCst,
            );
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let n = 100u64;
    let vals: Vec<[u8; 8]> = (1..=n).map(|i| i.to_le_bytes()).collect();
    for (i, v) in vals.iter().enumerate() {
        // SAFETY: `vals` lives until the flush below has completed every write.
        unsafe {
            src.write_active(1, v.as_ptr(), mem.addr() + 8 * i as u64, key, 8)
                .unwrap()
        };
    }
    let t = Instant::now();
    src.reply_flush(1).unwrap();
    let waited = t.elapsed();
    // The flush returned: the handler has processed every active put issued before it.
    assert_eq!(count.load(Ordering::SeqCst), n);
    assert_eq!(sum.load(Ordering::SeqCst), n * (n + 1) / 2);
    let st = src.reply_status(1).unwrap();
    assert_eq!((st.issued, st.confirmed), (n, n));
    println!("reply_flush behind a 300 us/entry handler waited {waited:?}");
    // The replies' completions stay inside the runtime: the target posted nothing, and its
    // application sees no completion and flushes at once.
    assert!(dst.poll_completion().is_none());
    dst.flush().unwrap();
    assert!(src.poll_completion().is_none());
    let t_st = dst.reply_status(0).unwrap();
    assert_eq!(t_st.processed, n);
    assert_eq!(t_st.reply_failures, 0);
    // Active puts were logged, not written.
    assert_eq!(read_u64(mem.addr()), 0);
    assert_eq!(h.stop().unwrap().entries, n);
}

#[test]
fn plain_rma_and_active_puts_mix_with_independent_flushes() {
    let rts = pair_with(|_| {});
    let (src, dst) = (&rts[0], &rts[1]);
    connect(src, dst);
    let mem = Mapping::anon(3 * 4096).unwrap();
    // SAFETY: as above.
    let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let (active, plain, flushing) = (mem.addr(), mem.addr() + 4096, mem.addr() + 8192);
    let aa = dst.active();
    let iuid = aa.create_log(2, 1 << 16).unwrap();
    aa.assoc_pages(active, 4096, PageBits::active_put(iuid))
        .unwrap();
    aa.assoc_pages(flushing, 4096, ActiveAccess::flush_page_bits(iuid))
        .unwrap();
    // The handler is held on a gate: it cannot process anything until the test opens it.
    let gate = Arc::new(Mutex::new(()));
    let closed = gate.lock().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let (g, c) = (gate.clone(), count.clone());
    let h = aa
        .spawn_handler(2, Notify::Poll, move |_| {
            drop(g.lock().unwrap());
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let n = 20u64;
    let vals: Vec<[u8; 8]> = (1..=n).map(|i| i.to_le_bytes()).collect();
    for (i, v) in vals.iter().enumerate() {
        let off = 8 * i as u64;
        // SAFETY: `vals` lives until the flushes below have completed every write.
        unsafe {
            src.write_active(1, v.as_ptr(), active + off, key, 8)
                .unwrap();
            src.write(1, v.as_ptr(), plain + off, key, 8).unwrap();
        }
    }
    // The RMA flush completes with the handler stuck: the plain data is there.
    src.flush().unwrap();
    for i in 0..n {
        assert_eq!(read_u64(plain + 8 * i), i + 1);
    }
    assert_eq!(count.load(Ordering::SeqCst), 0, "the handler is still held");
    assert_eq!(src.reply_status(1).unwrap().confirmed, 0);
    // Open the gate: the reply flush completes once everything is processed.
    drop(closed);
    src.reply_flush(1).unwrap();
    assert_eq!(count.load(Ordering::SeqCst), n);

    // Latency of one active put + flush, both flush kinds, with the handler free.
    let rounds = unpinned_testkit::number_or("UNPINNED_REPLY_ROUNDS", 100) as usize;
    let word = 7u64.to_le_bytes();
    let (mut held, mut reply) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        // SAFETY: `word` outlives the flushes, which complete the write.
        unsafe { src.write_active(1, word.as_ptr(), active, key, 8).unwrap() };
        let t = Instant::now();
        src.active_flush(1, flushing, key).unwrap();
        held.push(t.elapsed());
        // SAFETY: as above.
        unsafe { src.write_active(1, word.as_ptr(), active, key, 8).unwrap() };
        let t = Instant::now();
        src.reply_flush(1).unwrap();
        reply.push(t.elapsed());
    }
    println!(
        "active put + flush, median of {rounds}: IOMMU-held {:.1} us, reply {:.1} us",
        median_us(held),
        median_us(reply)
    );
    let rep = h.stop().unwrap();
    assert_eq!(rep.entries, n + 2 * rounds as u64);
    assert_eq!(dst.reply_status(0).unwrap().processed, rep.entries);
}

#[test]
fn reply_flush_bad_calls_and_missing_handler_are_typed_errors() {
    let dir = std::env::temp_dir().join(format!("unpinned-reply-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let rts = pair_with(|c| {
        c.timeouts.op_ms = 300;
        c.bootstrap_dir = Some(dir.clone());
    });
    let (src, dst) = (&rts[0], &rts[1]);
    assert!(matches!(src.reply_flush(1), Err(LiveError::Config(_))));
    assert!(matches!(src.reply_flush(0), Err(LiveError::Invalid(_))));
    assert!(matches!(src.reply_flush(7), Err(LiveError::Invalid(_))));
    assert!(matches!(
        dst.reply_connect(1, 0x1000, 1),
        Err(LiveError::Invalid(_))
    ));
    // The collective setup, both ranks at once.
    std::thread::scope(|s| {
        let a = s.spawn(|| src.reply_setup());
        let b = s.spawn(|| dst.reply_setup());
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
    // Nothing issued: the flush completes at once.
    src.reply_flush(1).unwrap();
    let mem = Mapping::anon(4096).unwrap();
    // SAFETY: as above.
    let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let iuid = dst.active().create_log(3, 4096).unwrap();
    dst.active()
        .assoc_pages(mem.addr(), 4096, PageBits::active_put(iuid))
        .unwrap();
    let v = 1u64.to_le_bytes();
    // SAFETY: `v` outlives the flush, which completes the write first.
    unsafe { src.write_active(1, v.as_ptr(), mem.addr(), key, 8).unwrap() };
    // No handler on the target: nobody processes the entry, nobody replies.
    let t = Instant::now();
    assert!(matches!(src.reply_flush(1), Err(LiveError::Timeout(_))));
    assert!(t.elapsed() < Duration::from_secs(5));
    // A handler started late processes it, and the reply follows.
    let h = dst
        .active()
        .spawn_handler(3, Notify::Sleep, |_| {})
        .unwrap();
    src.reply_flush(1).unwrap();
    assert_eq!(h.stop().unwrap().entries, 1);
    let _ = std::fs::remove_dir_all(&dir);
}
