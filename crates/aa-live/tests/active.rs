//! Active Access on the live runtime, two runtimes in one process over the in-memory
//! transport (real engine threads, real memory, real handler threads).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use unpinned_aa_live::ActiveRuntime;
use unpinned_aa_live::{ActiveAccess, ActiveError, EntryKind, Notify, PageBits};
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

fn read_u64(addr: u64) -> u64 {
    // SAFETY: test memory from a live mapping, read after the writers completed.
    unsafe { std::ptr::read_volatile(addr as *const u64) }
}

#[test]
fn active_puts_are_logged_not_written_and_plain_rma_mixes() {
    for notify in [
        Notify::Poll,
        Notify::Sleep,
        Notify::Batch {
            entries: 4,
            period_us: 200,
        },
    ] {
        let rts = pair();
        let (src, dst) = (&rts[0], &rts[1]);
        let mem = Mapping::anon(4 * 4096).unwrap();
        // SAFETY: the mapping outlives the runtimes' use; read only after completions.
        let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
        let aa = dst.active();
        let iuid = aa.create_log(3, 4096).unwrap();
        aa.assoc_pages(mem.addr(), 4096, PageBits::active_put(iuid))
            .unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        let h = aa
            .spawn_handler(3, notify, move |e| {
                g.lock().unwrap().push((e.header, e.data.clone()))
            })
            .unwrap();
        let n = 50u64;
        for i in 0..n {
            let v = (i + 1).to_le_bytes();
            src.write_blocking(1, &v, mem.addr() + 8 * i, key).unwrap();
            // Plain RMA to the next page of the same target, interleaved.
            src.write_blocking(1, &v, mem.addr() + 4096 + 8 * i, key)
                .unwrap();
        }
        let rep = h.stop().unwrap();
        assert_eq!(rep.entries, n, "{notify:?}");
        let got = got.lock().unwrap();
        for (i, (hd, data)) in got.iter().enumerate() {
            assert_eq!(hd.kind, EntryKind::ActivePut);
            assert_eq!(hd.source, 0);
            assert_eq!(hd.addr, mem.addr() + 8 * i as u64);
            assert_eq!(data, &(i as u64 + 1).to_le_bytes());
            assert_eq!(
                read_u64(mem.addr() + 8 * i as u64),
                0,
                "active page not written"
            );
            assert_eq!(read_u64(mem.addr() + 4096 + 8 * i as u64), i as u64 + 1);
        }
        let med = rep.notify_quantile_ns(0.5).unwrap();
        println!(
            "{}: {} wake-ups, notification delay median {} ns, p90 {} ns",
            notify.name(),
            rep.notify_ns.len(),
            med,
            rep.notify_quantile_ns(0.9).unwrap()
        );
        assert_eq!(dst.active().stats().puts_logged, n);
    }
}

#[test]
fn log_under_backpressure_loses_nothing_and_flush_waits_for_the_handler() {
    let rts = pair();
    let (src, dst) = (&rts[0], &rts[1]);
    let mem = Mapping::anon(2 * 4096).unwrap();
    // SAFETY: as above.
    let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let aa = dst.active();
    // Room for 4 entries of 32 + 8 bytes: the source outruns the slow handler.
    let iuid = aa.create_log(1, 160).unwrap();
    aa.assoc_pages(mem.addr(), 4096, PageBits::active_put(iuid))
        .unwrap();
    aa.assoc_pages(mem.addr() + 4096, 4096, ActiveAccess::flush_page_bits(iuid))
        .unwrap();
    let sum = Arc::new(AtomicU64::new(0));
    let count = Arc::new(AtomicU64::new(0));
    let (s, c) = (sum.clone(), count.clone());
    let h = aa
        .spawn_handler(1, Notify::Sleep, move |e| {
            std::thread::sleep(Duration::from_micros(200));
            s.fetch_add(
                u64::from_le_bytes(e.data[..8].try_into().unwrap()),
                Ordering::SeqCst,
            );
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let n = 200u64;
    let vals: Vec<[u8; 8]> = (1..=n).map(|i| i.to_le_bytes()).collect();
    for (i, v) in vals.iter().enumerate() {
        // SAFETY: `vals` lives until the flush below has completed every write.
        unsafe {
            src.write(1, v.as_ptr(), mem.addr() + 8 * (i as u64 % 512), key, 8)
                .unwrap()
        };
    }
    src.active_flush(1, mem.addr() + 4096, key).unwrap();
    // The flush returned: the handler has processed every put issued before it.
    assert_eq!(count.load(Ordering::SeqCst), n);
    assert_eq!(sum.load(Ordering::SeqCst), n * (n + 1) / 2);
    let st = aa.log_status(1).unwrap();
    println!(
        "back-pressure: {} refused reservations, {} stalled packets, {} flush holds",
        st.backpressure,
        aa.stats().stalls,
        aa.stats().flush_holds
    );
    assert!(st.backpressure > 0, "the test must exercise back-pressure");
    let rep = h.stop().unwrap();
    assert_eq!(rep.entries, n, "exactly once");
}

#[test]
fn counting_puts_and_gets_with_metadata_logging() {
    let rts = pair();
    let (src, dst) = (&rts[0], &rts[1]);
    let mem = Mapping::anon(4 * 4096).unwrap();
    // SAFETY: as above.
    let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let aa = dst.active();
    let iuid = aa.create_log(7, 1 << 16).unwrap();
    aa.assoc_pages(mem.addr(), 2 * 4096, PageBits::count_all(iuid))
        .unwrap();
    let counts = Arc::new(Mutex::new([0u64; 2]));
    let c = counts.clone();
    let h = aa
        .spawn_handler(7, Notify::Poll, move |e| {
            assert_eq!(e.data.len(), 0, "metadata only");
            let i = match e.header.kind {
                EntryKind::PutMeta => 0,
                EntryKind::GetMeta => 1,
                k => panic!("unexpected {k:?}"),
            };
            c.lock().unwrap()[i] += 1;
        })
        .unwrap();
    let (mut puts, mut gets) = (0u64, 0u64);
    let big = vec![0x5au8; 6000]; // two packets: still one access, one entry
    for i in 0..40u64 {
        if i % 3 == 0 {
            let mut out = [0u8; 16];
            src.read_blocking(1, &mut out, mem.addr() + 16 * i, key)
                .unwrap();
            gets += 1;
        } else if i % 5 == 0 {
            src.write_blocking(1, &big, mem.addr() + 4096 + 100, key)
                .unwrap();
            puts += 1;
        } else {
            src.write_blocking(1, &i.to_le_bytes(), mem.addr() + 16 * i, key)
                .unwrap();
            puts += 1;
        }
    }
    // Plain pages of the same target are not counted.
    src.write_blocking(1, &[1; 8], mem.addr() + 3 * 4096, key)
        .unwrap();
    h.stop().unwrap();
    assert_eq!(*counts.lock().unwrap(), [puts, gets]);
    assert_eq!(read_u64(mem.addr() + 16 * 7), 7, "counted puts are written");
}

#[test]
fn bad_calls_are_typed_errors() {
    let rts = pair();
    let aa = rts[1].active();
    assert_eq!(aa.create_log(1024, 4096), Err(ActiveError::BadIuid(1024)));
    assert_eq!(aa.create_log(1, 8), Err(ActiveError::LogTooSmall(8)));
    let i = aa.create_log(1, 4096).unwrap();
    assert_eq!(aa.create_log(1, 4096), Err(ActiveError::LogExists(1)));
    let other = unpinned_aa_live::Iuid::new(2).unwrap();
    assert_eq!(
        aa.assoc_pages(0x1000, 4096, PageBits::active_put(other)),
        Err(ActiveError::NoLog(2))
    );
    assert!(matches!(
        aa.assoc_pages(u64::MAX - 10, 100, PageBits::active_put(i)),
        Err(ActiveError::BadRange { .. })
    ));
    // Refused before it starts (the word it reads into is freed again: capi_args found it
    // leaked under LeakSanitizer).
    assert!(matches!(
        rts[0].active_flush(9, 0x1000, 1),
        Err(unpinned_live::LiveError::Invalid(_))
    ));
    let h = aa.spawn_handler(1, Notify::Sleep, |_| {}).unwrap();
    assert!(matches!(
        aa.spawn_handler(1, Notify::Poll, |_| {}),
        Err(ActiveError::HandlerAttached(1))
    ));
    drop(h);
    assert!(aa.spawn_handler(1, Notify::Poll, |_| {}).is_ok());
}

/// The DHT between two runtimes of one process (regions given by hand): AA and RMA inserts
/// give the same table as the sequential reference, for several windows.
#[test]
fn dht_in_one_process_matches_the_reference() {
    use unpinned_aa::dht::{DhtMap, Volume};
    use unpinned_aa_live::dht::{Dht, Scheme};
    for (scheme, window) in [
        (Scheme::Aa, 1),
        (Scheme::Aa, 16),
        (Scheme::Rma, 1),
        (Scheme::Rma, 16),
    ] {
        let rts = pair();
        let mk = |rt| Dht::local(rt, 6, 4096, scheme, Notify::Sleep, 1 << 14).unwrap();
        let (mut d0, mut d1) = (mk(&rts[0]), mk(&rts[1]));
        let regions = vec![d0.region(), d1.region()];
        d0.connect(regions.clone()).unwrap();
        d1.connect(regions).unwrap();
        d0.set_window(window);
        let map = DhtMap {
            procs: 2,
            slot_bits: 6,
        };
        let keys: Vec<u64> = (0..1000u32)
            .map(|i| map.make_key(i + 1, 1, (i * 7919) % 64))
            .collect();
        let t = std::time::Instant::now();
        let st = d0.insert(&keys).unwrap();
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{} window {window}: {:.0} inserts/s, {} remote ops, {} collisions",
            scheme.name(),
            keys.len() as f64 / secs,
            st.remote_ops,
            st.collisions
        );
        let mut reference = Volume::new(d1.volume().layout());
        for &k in &keys {
            reference.local_insert(k, map.locate(k).1).unwrap();
        }
        assert_eq!(
            d1.volume().contents(),
            reference.contents(),
            "{scheme:?} window {window}"
        );
        for &k in keys.iter().step_by(97) {
            assert!(d0.lookup(k).unwrap());
        }
        assert!(!d0.lookup(map.make_key(5000, 1, 3)).unwrap());
    }
}

/// Logging gets for fault tolerance (spec "Use cases"): `R=1, RL=1, RLD=1` pages serve gets
/// and log a copy of the data returned, so the target can replay them; a multi-packet get is
/// one entry with all its bytes.
#[test]
fn logged_gets_keep_a_copy_of_the_data_returned() {
    let rts = pair();
    let (src, dst) = (&rts[0], &rts[1]);
    let mem = Mapping::anon(4 * 4096).unwrap();
    // SAFETY: the mapping outlives the runtimes' use; written before exposure, then only read.
    unsafe {
        for i in 0..mem.len() {
            *mem.ptr().add(i) = (i * 7 + 3) as u8;
        }
    }
    let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let aa = dst.active();
    let iuid = aa.create_log(2, 1 << 16).unwrap();
    aa.assoc_pages(mem.addr(), mem.len() as u64, PageBits::log_get_data(iuid))
        .unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let h = aa
        .spawn_handler(2, Notify::Sleep, move |e| {
            g.lock().unwrap().push((e.header, e.data.clone()))
        })
        .unwrap();
    let reads = [(0u64, 16usize), (100, 5000), (8192, 4096)];
    let mut outs = Vec::new();
    for &(off, len) in &reads {
        let mut out = vec![0u8; len];
        src.read_blocking(1, &mut out, mem.addr() + off, key)
            .unwrap();
        outs.push(out);
    }
    h.stop().unwrap();
    let got = got.lock().unwrap();
    assert_eq!(got.len(), reads.len(), "one entry per get");
    for ((hd, data), (&(off, len), out)) in got.iter().zip(reads.iter().zip(&outs)) {
        assert_eq!(hd.kind, EntryKind::GetData);
        assert_eq!(hd.addr, mem.addr() + off);
        assert_eq!(hd.access_len as usize, len);
        assert_eq!(
            data, out,
            "the log holds exactly the bytes the get returned"
        );
    }
    assert_eq!(aa.stats().gets_logged, 3);
}

/// A handler that panics does not stall the log (the entry counts as processed, the panic is
/// reported), and a flush towards a log nobody handles ends with an error, not a hang.
#[test]
fn panicking_handler_and_missing_handler_do_not_hang_flushes() {
    let max = Config::new(0, 2).max_packet();
    let rts: Vec<ActiveRuntime> = network(2, max)
        .into_iter()
        .enumerate()
        .map(|(r, t)| {
            let mut c = Config::new(r as u32, 2);
            // Long enough for the first flush behind five panicking handler calls (a panic
            // message with a backtrace can take long on a loaded machine); the second flush
            // waits the whole timeout by design.
            c.timeouts.op_ms = 2000;
            // The initiator gives a held get up after `max_timeouts` silent periods (30 x 10
            // ms with the live defaults): five panics printing backtraces on a loaded machine
            // took longer than that (RetryExceeded on the first flush, 3 of 30 runs two at a
            // time at load average ~7). Allow more than the operation timeout, so that the
            // second flush ends by the timeout as intended.
            c.engine.max_timeouts = 1000;
            ActiveRuntime::new(c, Box::new(t)).unwrap()
        })
        .collect();
    let (src, dst) = (&rts[0], &rts[1]);
    let mem = Mapping::anon(4 * 4096).unwrap();
    // SAFETY: as above.
    let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let aa = dst.active();
    let a = aa.create_log(1, 4096).unwrap();
    let b = aa.create_log(2, 4096).unwrap();
    aa.assoc_pages(mem.addr(), 4096, PageBits::active_put(a))
        .unwrap();
    aa.assoc_pages(mem.addr() + 4096, 4096, ActiveAccess::flush_page_bits(a))
        .unwrap();
    aa.assoc_pages(mem.addr() + 8192, 4096, PageBits::active_put(b))
        .unwrap();
    aa.assoc_pages(mem.addr() + 12288, 4096, ActiveAccess::flush_page_bits(b))
        .unwrap();
    let h = aa
        .spawn_handler(1, Notify::Sleep, |e| {
            if e.data[0] % 2 == 1 {
                panic!("handler bug (expected by the test)");
            }
        })
        .unwrap();
    for i in 0..10u64 {
        src.write_blocking(1, &i.to_le_bytes(), mem.addr() + 8 * i, key)
            .unwrap();
    }
    src.active_flush(1, mem.addr() + 4096, key).unwrap();
    let rep = h.stop().unwrap();
    assert_eq!((rep.entries, rep.panics), (10, 5));
    // Log 2 has no handler: its flush cannot complete.
    src.write_blocking(1, &[1; 8], mem.addr() + 8192, key)
        .unwrap();
    let t = std::time::Instant::now();
    let r = src.active_flush(1, mem.addr() + 12288, key);
    // The operation timeout or the engine's retry limit on the held get, whichever ends first.
    assert!(
        matches!(
            r,
            Err(unpinned_live::LiveError::Timeout(_))
                | Err(unpinned_live::LiveError::Failed {
                    error: unpinned_live::CompletionError::RetryExceeded,
                    ..
                })
        ),
        "{r:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(20));
    // Release the held get (a plain page now) so that the runtimes shut down at once.
    aa.clear_pages(mem.addr() + 12288, 4096).unwrap();
    std::thread::sleep(Duration::from_millis(50));
}
