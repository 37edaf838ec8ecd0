//! `unpinned calibrate`: this machine's component costs, measured, written as a profile.
//!
//! Each measurement is the median of several repetitions of a real operation: touching present
//! pages, first-touch minor faults, major faults of a file-backed mapping whose page cache was
//! dropped, `MADV_POPULATE_WRITE` over runs of pages (the live page-in, fitted as a fixed cost
//! per call plus a cost per page), `mlock`/`munlock`, the residency check of the live runtime,
//! a cross-thread wake-up (how the live engine hands a fault to its page-in thread), and the
//! one-way latency and bandwidth of the shared-memory ring.
//!
//! The profile keeps forth-arm's structure and replaces each component the live runtime has
//! with its measured counterpart; the mapping is in [`to_profile`] and in the profile's
//! description. Nothing is fitted to an end-to-end result.

use std::time::Instant as WallInstant;

use serde::Serialize;
use unpinned_core::profile::Profile;

use crate::os::{page_size, Anon, FileMap};

/// Measured component costs of this machine.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// Touching a present page (read + write one byte), ns.
    pub touch_present_ns: f64,
    /// First touch of fresh anonymous memory (a minor fault), us.
    pub minor_fault_us: f64,
    /// First touch of a file-backed page whose page cache was dropped (a major fault), us.
    pub major_fault_us: f64,
    /// `MADV_POPULATE_WRITE` fixed cost per call, us.
    pub populate_call_us: f64,
    /// `MADV_POPULATE_WRITE` cost per page not present, us.
    pub populate_page_us: f64,
    /// `mlock` + `munlock` of one present page, us.
    pub mlock_one_present_us: f64,
    /// `mlock` per additional present page, ns.
    pub mlock_page_ns: f64,
    /// `mlock` of one page not present (faults it in), us.
    pub mlock_one_absent_us: f64,
    /// `munlock` of one page, us.
    pub munlock_us: f64,
    /// Residency check per page (pagemap, with the runtime's window), ns.
    pub residency_check_ns: f64,
    /// Cross-thread wake-up (park/unpark ping-pong, one way), us.
    pub thread_wakeup_us: f64,
    /// Shared-memory ring one-way latency (ping-pong / 2, both threads spinning), ns.
    pub ring_one_way_ns: f64,
    /// Shared-memory ring bandwidth with maximum-size packets, Gb/s.
    pub ring_gbps: f64,
    /// Packet size used for the bandwidth, bytes.
    pub ring_packet_bytes: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

fn time_us(f: impl FnOnce()) -> f64 {
    let t = WallInstant::now();
    f();
    t.elapsed().as_secs_f64() * 1e6
}

/// Run every measurement. `progress` gets a line per step.
pub fn run(mut progress: impl FnMut(&str)) -> std::io::Result<Calibration> {
    let ps = page_size();
    const PAGES: usize = 512;
    const REPS: usize = 7;

    progress("touch of present pages");
    let touch_present_ns = median(
        (0..REPS)
            .map(|_| {
                let m = Anon::new(PAGES * ps).expect("mmap");
                m.madvise(0, PAGES * ps, libc::MADV_POPULATE_WRITE).ok();
                time_us(|| (0..PAGES).for_each(|p| m.touch(p * ps))) * 1e3 / PAGES as f64
            })
            .collect(),
    );

    progress("minor faults");
    let minor_fault_us = median(
        (0..REPS)
            .map(|_| {
                let m = Anon::new(PAGES * ps).expect("mmap");
                time_us(|| (0..PAGES).for_each(|p| m.touch(p * ps))) / PAGES as f64
            })
            .collect(),
    );

    progress("major faults (file-backed, page cache dropped)");
    let major_fault_us = major_fault(ps)?;

    progress("MADV_POPULATE_WRITE");
    let populate = |n: usize| {
        median(
            (0..REPS)
                .map(|_| {
                    let m = Anon::new(n * ps).expect("mmap");
                    time_us(|| {
                        m.madvise(0, n * ps, libc::MADV_POPULATE_WRITE)
                            .expect("MADV_POPULATE_WRITE (Linux >= 5.14)")
                    })
                })
                .collect(),
        )
    };
    let (p1, p256) = (populate(1), populate(256));
    let populate_page_us = ((p256 - p1) / 255.0).max(0.0);
    let populate_call_us = (p1 - populate_page_us).max(0.0);

    progress("mlock / munlock");
    let lock = |n: usize, present: bool| {
        let mut lock_us = Vec::new();
        let mut unlock_us = Vec::new();
        for _ in 0..REPS {
            let m = Anon::new(n * ps).expect("mmap");
            if present {
                m.madvise(0, n * ps, libc::MADV_POPULATE_WRITE).ok();
            }
            lock_us.push(time_us(|| {
                m.mlock(0, n * ps, true).expect("mlock (RLIMIT_MEMLOCK?)")
            }));
            unlock_us.push(time_us(|| m.mlock(0, n * ps, false).expect("munlock")));
        }
        (median(lock_us), median(unlock_us))
    };
    let (l1, u1) = lock(1, true);
    let (l256, _) = lock(256, true);
    let (la1, _) = lock(1, false);

    progress("residency check");
    let r = unpinned_live::memory::bench_residency(PAGES);

    progress("cross-thread wake-up");
    let thread_wakeup_us = wakeup();

    progress("shared-memory ring");
    let (ring_one_way_ns, ring_gbps, ring_packet_bytes) = ring()?;

    Ok(Calibration {
        touch_present_ns,
        minor_fault_us,
        major_fault_us,
        populate_call_us,
        populate_page_us,
        mlock_one_present_us: l1 + u1,
        mlock_page_ns: ((l256 - l1) / 255.0 * 1e3).max(0.0),
        mlock_one_absent_us: la1,
        munlock_us: u1,
        residency_check_ns: r.pagemap_window_ns,
        thread_wakeup_us,
        ring_one_way_ns,
        ring_gbps,
        ring_packet_bytes,
    })
}

fn major_fault(ps: usize) -> std::io::Result<f64> {
    use std::io::Write;
    const PAGES: usize = 64;
    let path = std::env::temp_dir().join(format!("unpinned-calibrate-{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&path)?;
        let block: Vec<u8> = (0..ps).map(|i| i as u8).collect();
        for _ in 0..PAGES {
            f.write_all(&block)?;
        }
        f.sync_all()?;
    }
    let mut samples = Vec::new();
    for _ in 0..5 {
        let m = FileMap::open(&path, PAGES * ps)?;
        m.evict()?;
        samples.push(
            time_us(|| {
                (0..PAGES).for_each(|p| {
                    m.touch(p * ps);
                })
            }) / PAGES as f64,
        );
    }
    let _ = std::fs::remove_file(&path);
    Ok(median(samples))
}

fn wakeup() -> f64 {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    const ROUNDS: usize = 2000;
    let flag = Arc::new(AtomicBool::new(false));
    let main = std::thread::current();
    let f2 = flag.clone();
    let t = WallInstant::now();
    let peer = std::thread::spawn(move || {
        for _ in 0..ROUNDS {
            while !f2.load(Ordering::Acquire) {
                std::thread::park();
            }
            f2.store(false, Ordering::Release);
            main.unpark();
        }
    });
    for _ in 0..ROUNDS {
        flag.store(true, Ordering::Release);
        peer.thread().unpark();
        while flag.load(Ordering::Acquire) {
            std::thread::park();
        }
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / (2 * ROUNDS) as f64;
    peer.join().expect("peer thread");
    us
}

fn ring() -> std::io::Result<(f64, f64, usize)> {
    use unpinned_live::transport::shm::{create_segment, ShmGeometry, ShmTransport};
    use unpinned_live::transport::Transport;
    let err = |e: unpinned_live::transport::shm::ShmError| std::io::Error::other(e.to_string());
    let path = std::path::PathBuf::from(format!(
        "/dev/shm/unpinned-calibrate-{}",
        std::process::id()
    ));
    let max_packet = 4096;
    create_segment(&path, ShmGeometry::new(2, max_packet, 256)).map_err(err)?;
    let mut a = ShmTransport::open(&path, 0).map_err(err)?;
    let p2 = path.clone();
    const PINGS: usize = 20_000;
    const STREAM: usize = 200_000;
    let peer = std::thread::spawn(move || -> std::io::Result<()> {
        let mut b = ShmTransport::open(&p2, 1).map_err(err)?;
        let mut buf = vec![0u8; max_packet];
        for _ in 0..PINGS {
            let n = loop {
                if let Some((_, n)) = b.recv(&mut buf) {
                    break n;
                }
                std::hint::spin_loop();
            };
            while b.send(0, &buf[..n]).is_err() {
                std::hint::spin_loop();
            }
        }
        let mut got = 0;
        while got < STREAM {
            if b.recv(&mut buf).is_some() {
                got += 1;
            } else {
                std::hint::spin_loop();
            }
        }
        while b.send(0, &buf[..8]).is_err() {}
        Ok(())
    });
    let mut buf = vec![0u8; max_packet];
    let t = WallInstant::now();
    for _ in 0..PINGS {
        while a.send(1, &buf[..8]).is_err() {
            std::hint::spin_loop();
        }
        while a.recv(&mut buf).is_none() {
            std::hint::spin_loop();
        }
    }
    let one_way_ns = t.elapsed().as_secs_f64() * 1e9 / (2 * PINGS) as f64;
    let t = WallInstant::now();
    for _ in 0..STREAM {
        while a.send(1, &buf[..max_packet]).is_err() {
            std::hint::spin_loop();
        }
    }
    while a.recv(&mut buf).is_none() {
        std::hint::spin_loop();
    }
    let gbps = (STREAM * max_packet) as f64 * 8.0 / t.elapsed().as_secs_f64() / 1e9;
    peer.join().expect("ring peer thread")?;
    let _ = std::fs::remove_file(&path);
    Ok((one_way_ns, gbps, max_packet))
}

/// The simulator profile of this machine: forth-arm's structure with every component the live
/// runtime has replaced by its measured counterpart. Live mapping: the IOMMU interrupt is the
/// hand-off of a fault to the page-in thread (a wake-up); `get_user_pages` is
/// `MADV_POPULATE_WRITE`; the kernel-to-user notification is the wake-up back to the engine;
/// the NI is the engine thread (no co-processor: initiation is one wake-up of the engine);
/// links are the shared-memory ring.
pub fn to_profile(c: &Calibration, host: &str) -> Profile {
    let mut p = Profile::forth_arm();
    p.name = format!("calibrated-{host}");
    p.description = format!(
        "Measured on {host} by `unpinned calibrate`: shared-memory ring as the link, engine thread as the NI, page-in thread with MADV_POPULATE_WRITE as the fault handler"
    );
    p.net.link_gbps = c.ring_gbps.max(0.001);
    p.net.board_link_gbps = p.net.link_gbps;
    p.net.hop_latency_ns = c.ring_one_way_ns.round() as u64;
    p.net.hops = 1;
    p.net.ni_packet_ns = 0;
    p.engine.initiation_us = c.thread_wakeup_us;
    p.os.irq_us = c.thread_wakeup_us;
    p.os.irq_coalesce_us = 0.0;
    p.os.fifo_read_ns = 0;
    p.os.gup_call_us = c.populate_call_us;
    p.os.gup_page_us = c.populate_page_us;
    p.os.notify_us = c.thread_wakeup_us;
    p.os.bookkeeping_us = 0.0;
    p.os.err_send_us = c.ring_one_way_ns / 1e3;
    p.os.sched_us = 0.0;
    p.cpu.touch_present_ns = c.touch_present_ns.round() as u64;
    p.cpu.minor_fault_us = c.minor_fault_us;
    p.cpu.mlock_call_us = c.mlock_one_present_us - c.munlock_us;
    p.cpu.mlock_nopres_call_us =
        (c.mlock_one_absent_us - (c.mlock_one_present_us - c.munlock_us) - c.minor_fault_us)
            .max(0.0);
    p.cpu.mlock_page_ns = c.mlock_page_ns.round() as u64;
    p.cpu.munlock_call_us = c.munlock_us;
    p.iommu.walk_ns = c.residency_check_ns.round() as u64;
    p
}
