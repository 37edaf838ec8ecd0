//! The invalidation side of the live runtime's software translation cache: a userfaultfd that
//! sees `munmap`, `madvise(MADV_DONTNEED / MADV_FREE / MADV_REMOVE)` and `mremap` of exposed
//! memory, so that `unpinned_live::memory::LiveMemory` may trust a residency verdict
//! of such memory until one of those happens, instead of for `unpinned_live::memory::RESIDENCY_TTL` only.
//!
//! # Registration changes nothing for the application
//!
//! Ranges are registered in write-protect mode only (`UFFDIO_REGISTER_MODE_WP`), and no page
//! is ever write-protected (`UFFDIO_WRITEPROTECT` is never called with the WP bit,
//! `UFFD_FEATURE_WP_UNPOPULATED` is not asked for): the kernel routes a fault to a
//! userfaultfd in WP mode only for a page whose entry carries the uffd-wp bit, which none ever
//! gets. First touches by the application, `MADV_POPULATE_WRITE` by the page-in path and
//! copy-on-write of the zero page are ordinary faults, resolved by the kernel as before (tests
//! below). The descriptor is opened with `UFFD_USER_MODE_ONLY`, which an unprivileged process
//! may do even with `vm.unprivileged_userfaultfd = 0`. What the registration buys is the
//! *events* (`UFFD_FEATURE_EVENT_UNMAP | EVENT_REMOVE | EVENT_REMAP`): the kernel queues one
//! per `munmap` (also `mmap(MAP_FIXED)` over the range, `brk` shrinking, `mremap` shrinking),
//! `madvise` that drops pages, or `mremap` that moves the range, *after* the page tables
//! changed, and blocks the calling thread until the event is read.
//!
//! # The reader thread and the epoch
//!
//! One thread per [`Watch`] polls the descriptor. For every event it
//! 1. bumps the watch's *epoch* (an atomic counter),
//! 2. reads exactly one event (the oldest: the kernel delivers events in order, so the one
//!    read was queued before the bump, i.e. after its change of the page tables),
//! 3. for `UNMAP` / `REMAP`, removes the range from the list of registered ranges (the kernel
//!    dropped the registration with the mapping; a mapping made there later is not watched),
//! 4. bumps the epoch again (a verdict taken while the list still held the removed range
//!    carries the old epoch).
//!
//! A verdict is tagged with the epoch read *before* its scan; it is trusted while the epoch is
//! unchanged. So when `munmap` (or `madvise`) returns to the application, every verdict taken
//! before it is already dead: a later `mmap` at the same address, or an access to a dropped
//! page, is scanned again. Any event invalidates every verdict of the watch (simpler than per
//! range, and events on exposed memory are rare).
//!
//! # What it cannot see (those keep the `RESIDENCY_TTL` rule of `unpinned_live::memory`)
//!
//! - Reclaim of anonymous pages to swap: no event. The cache is used only while the system has
//!   no active swap (`/proc/swaps`, read at registration and every second by the reader
//!   thread; a swap appearing bumps the epoch and stops the cache).
//! - Page-cache eviction of file pages: file and shared mappings are never registered. Shared
//!   memory (shmem, memfd, hugetlbfs) is not either, although userfaultfd could register it in
//!   WP mode: any process sharing the file can `ftruncate` it or punch a hole
//!   (`fallocate`, `MADV_REMOVE` in *its* address space), which zaps the pages from our
//!   mapping too and sends no event to our userfaultfd.
//! - Copy-on-write sharing after `fork`: once this process has forked
//!   ([`crate::scan::forked`]) no verdict is trusted longer than the TTL.
//! - Page migration (compaction, NUMA balancing), NUMA hinting faults, KSM merging and
//!   khugepaged collapse change a present page's entry without an event; what the engine then
//!   meets is at most one transient minor fault (a migration entry is waited for, a NUMA-hinting
//!   `PROT_NONE` entry or a KSM page is fixed up by the kernel), never a wrong result.
//! - Ranges another userfaultfd already owns (`EBUSY`, e.g. crates/dsm-live's write
//!   protection), kernels without userfaultfd WP (`EINVAL`, `ENOSYS`) or a refused descriptor
//!   (`EPERM`): the range keeps the TTL rule, counted in
//!   `unpinned_live::memory::MemStats::cache_fallbacks`.
//!
//! One side effect for the application: while a range is registered, another userfaultfd
//! cannot register it (`EBUSY`) until the exposure is revoked (revoking unregisters it).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::uffd_abi::*;

/// The events asked for.
const FEATURES: u64 =
    UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_REMAP;

/// How often the reader thread looks at `/proc/swaps` while no event comes, ms.
pub const SWAP_CHECK_MS: i32 = 1000;

/// `struct uffd_msg`: 32 bytes, the event code first, then a union of 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct UffdMsg {
    event: u8,
    reserved1: u8,
    reserved2: u16,
    reserved3: u32,
    /// `remove.start` / `remap.from` / `pagefault.flags`.
    a: u64,
    /// `remove.end` / `remap.to` / `pagefault.address`.
    b: u64,
    /// `remap.len`.
    c: u64,
}

/// Why memory cannot be watched (the caller falls back to the TTL rule).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WatchError {
    /// `userfaultfd(2)` failed (errno): no kernel support (`ENOSYS`) or not allowed (`EPERM`).
    #[error("userfaultfd: errno {0}")]
    Open(i32),
    /// The kernel lacks the unmap / remove / remap events (errno of `UFFDIO_API`).
    #[error("userfaultfd events unsupported: errno {0}")]
    Api(i32),
    /// `UFFDIO_REGISTER` refused the range (errno): `EBUSY` another userfaultfd owns it,
    /// `EINVAL` not a kind of memory that can be registered, `ENOMEM` unmapped.
    #[error("UFFDIO_REGISTER: errno {0}")]
    Register(i32),
    /// The system has active swap: anonymous pages may leave without an event.
    #[error("active swap: anonymous pages can be reclaimed without an event")]
    Swap,
    /// The reader thread could not be started.
    #[error("cannot start the userfaultfd reader thread")]
    Thread,
}

/// Counters of a [`Watch`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchStats {
    /// `UNMAP` events read.
    pub unmaps: u64,
    /// `REMOVE` events read (`madvise` dropping pages).
    pub removes: u64,
    /// `REMAP` events read.
    pub remaps: u64,
    /// Page-fault messages read: never expected (no page is write-protected); each one is
    /// answered by clearing the page's write protection, which wakes the faulting thread.
    pub unexpected_faults: u64,
}

#[derive(Default)]
struct Shared {
    epoch: AtomicU64,
    /// Registered ranges not unmapped since (may overlap; page aligned).
    live: Mutex<Vec<(u64, u64)>>,
    swap: AtomicBool,
    stop: AtomicBool,
    unmaps: AtomicU64,
    removes: AtomicU64,
    remaps: AtomicU64,
    unexpected: AtomicU64,
}

/// A userfaultfd watching registered ranges for unmapping and page removal, with its reader
/// thread (see the module doc). Dropping it stops the thread and closes the descriptor, which
/// unregisters everything.
pub struct Watch {
    uffd: Arc<OwnedFd>,
    /// eventfd that stops the reader thread.
    stop: Arc<OwnedFd>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Whether the system has an active swap area (`/proc/swaps` lists one); unreadable counts as
/// active (the cautious answer).
pub fn swap_active() -> bool {
    match std::fs::read_to_string("/proc/swaps") {
        Ok(s) => s.lines().skip(1).any(|l| !l.trim().is_empty()),
        Err(_) => true,
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl Watch {
    /// Open a userfaultfd with the unmap / remove / remap events and start its reader thread.
    pub fn open() -> Result<Watch, WatchError> {
        // SAFETY: the userfaultfd system call creates a new descriptor; checked below.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_userfaultfd,
                libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY,
            )
        };
        if fd < 0 {
            return Err(WatchError::Open(errno()));
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        let uffd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let mut api = UffdioApi {
            api: UFFD_API,
            features: FEATURES,
            ioctls: 0,
        };
        // SAFETY: UFFDIO_API on our own userfaultfd with a correctly sized argument.
        if unsafe { libc::ioctl(uffd.as_raw_fd(), UFFDIO_API, &mut api) } != 0 {
            return Err(WatchError::Api(errno()));
        }
        // SAFETY: eventfd creates a new descriptor; checked below.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(WatchError::Open(errno()));
        }
        // SAFETY: `efd` is a fresh descriptor we own.
        let stop = Arc::new(unsafe { OwnedFd::from_raw_fd(efd) });
        let uffd = Arc::new(uffd);
        let shared = Arc::new(Shared::default());
        shared.swap.store(swap_active(), Ordering::SeqCst);
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let thread = {
            let (uffd, stop, shared) = (uffd.clone(), stop.clone(), shared.clone());
            std::thread::Builder::new()
                .name("unpinned-uffd".into())
                .spawn(move || read_events(&uffd, &stop, &shared, ready_tx))
                .map_err(|_| WatchError::Thread)?
        };
        // The thread's own set-up maps memory (its signal stack, its malloc arena): let it
        // finish now, not right after an application's munmap, where it would take the hole
        // the application may be about to map again.
        ready.recv().map_err(|_| WatchError::Thread)?;
        Ok(Watch {
            uffd,
            stop,
            shared,
            thread: Some(thread),
        })
    }

    /// The current epoch: a verdict tagged with it stays valid while it is unchanged.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.shared.epoch.load(Ordering::SeqCst)
    }

    /// Whether the cache may be used at all now (no active swap).
    pub fn usable(&self) -> bool {
        !self.shared.swap.load(Ordering::SeqCst)
    }

    /// Register `[start, end)` (page aligned, private anonymous memory) in WP mode.
    pub fn register(&self, start: u64, end: u64) -> Result<(), WatchError> {
        if swap_active() {
            self.shared.swap.store(true, Ordering::SeqCst);
            return Err(WatchError::Swap);
        }
        if end <= start {
            return Ok(());
        }
        // Listed first: an unmap event between the registration and the listing would
        // otherwise find nothing to remove, and leave an unwatched range listed.
        self.live().push((start, end));
        let mut reg = UffdioRegister {
            range: UffdioRange {
                start,
                len: end - start,
            },
            mode: UFFDIO_REGISTER_MODE_WP,
            ioctls: 0,
        };
        // SAFETY: UFFDIO_REGISTER on our own userfaultfd with a correctly sized argument; in
        // WP mode with no page write-protected it changes no access's behaviour.
        if unsafe { libc::ioctl(self.uffd.as_raw_fd(), UFFDIO_REGISTER, &mut reg) } != 0 {
            let e = errno();
            let mut live = self.live();
            if let Some(i) = live.iter().rposition(|&r| r == (start, end)) {
                live.remove(i);
            }
            return Err(WatchError::Register(e));
        }
        Ok(())
    }

    /// Unregister `[start, end)` (page aligned) and stop listing it as watched.
    pub fn unregister(&self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        subtract(&mut self.live(), start, end);
        // Verdicts over the range must not outlive the registration.
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        let mut r = UffdioRange {
            start,
            len: end - start,
        };
        // SAFETY: UFFDIO_UNREGISTER on our own userfaultfd with a correctly sized argument;
        // a range that is no longer mapped or registered is refused or ignored by the kernel.
        unsafe { libc::ioctl(self.uffd.as_raw_fd(), UFFDIO_UNREGISTER, &mut r) };
    }

    /// Whether `[start, end)` lies in one watched range; the end of that range if so.
    pub fn covering(&self, start: u64, end: u64) -> Option<u64> {
        self.live()
            .iter()
            .filter(|&&(s, e)| s <= start && end <= e)
            .map(|&(_, e)| e)
            .max()
    }

    /// Counters so far.
    pub fn stats(&self) -> WatchStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        WatchStats {
            unmaps: l(&self.shared.unmaps),
            removes: l(&self.shared.removes),
            remaps: l(&self.shared.remaps),
            unexpected_faults: l(&self.shared.unexpected),
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
        self.shared.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let one = 1u64;
        // SAFETY: writing 8 bytes to our own eventfd wakes the reader thread's poll.
        unsafe {
            libc::write(
                self.stop.as_raw_fd(),
                &one as *const u64 as *const libc::c_void,
                8,
            )
        };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The descriptor closes with the last Arc: the kernel unregisters every range and
        // releases any thread still waiting for an event to be read.
    }
}

/// Remove `[start, end)` from every range of `live`.
fn subtract(live: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let mut out = Vec::with_capacity(live.len() + 1);
    for &(s, e) in live.iter() {
        if e <= start || s >= end {
            out.push((s, e));
            continue;
        }
        if s < start {
            out.push((s, start));
        }
        if e > end {
            out.push((end, e));
        }
    }
    *live = out;
}

/// The reader thread's body (see the module doc).
fn read_events(
    uffd: &OwnedFd,
    stop: &OwnedFd,
    shared: &Shared,
    ready: std::sync::mpsc::Sender<()>,
) {
    // The first allocation of a thread makes glibc map a new arena (a large reservation,
    // trimmed at once): done before `open` returns (see there).
    drop(std::hint::black_box(Vec::<u64>::with_capacity(64)));
    let _ = ready.send(());
    let mut fds = [
        libc::pollfd {
            fd: uffd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    while !shared.stop.load(Ordering::SeqCst) {
        fds[0].revents = 0;
        fds[1].revents = 0;
        // SAFETY: poll on two descriptors we hold, with a correctly sized array.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, SWAP_CHECK_MS) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        if n == 0 {
            let swap = swap_active();
            if swap != shared.swap.load(Ordering::SeqCst) {
                shared.swap.store(swap, Ordering::SeqCst);
                shared.epoch.fetch_add(1, Ordering::SeqCst);
            }
            continue;
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            return;
        }
        // An event is queued: its change of the page tables is done. Invalidate before reading
        // it (reading releases the thread that unmapped).
        shared.epoch.fetch_add(1, Ordering::SeqCst);
        let mut msg = UffdMsg::default();
        // SAFETY: reading one 32-byte `uffd_msg` into a plain repr(C) struct of that size.
        let r = unsafe {
            libc::read(
                uffd.as_raw_fd(),
                &mut msg as *mut UffdMsg as *mut libc::c_void,
                std::mem::size_of::<UffdMsg>(),
            )
        };
        if r != std::mem::size_of::<UffdMsg>() as isize {
            continue;
        }
        match msg.event {
            UFFD_EVENT_UNMAP => {
                shared.unmaps.fetch_add(1, Ordering::Relaxed);
                subtract(
                    &mut shared.live.lock().unwrap_or_else(|e| e.into_inner()),
                    msg.a,
                    msg.b,
                );
            }
            UFFD_EVENT_REMAP => {
                shared.remaps.fetch_add(1, Ordering::Relaxed);
                // The registration moved with the mapping to `msg.b`; the old range is gone.
                // The moved one is not listed (it was not exposed there).
                subtract(
                    &mut shared.live.lock().unwrap_or_else(|e| e.into_inner()),
                    msg.a,
                    msg.a.saturating_add(msg.c),
                );
            }
            UFFD_EVENT_REMOVE => {
                shared.removes.fetch_add(1, Ordering::Relaxed);
            }
            UFFD_EVENT_PAGEFAULT => {
                shared.unexpected.fetch_add(1, Ordering::Relaxed);
                let page = msg.b & !(crate::PAGE_BYTES - 1);
                let mut wp = UffdioWriteprotect {
                    range: UffdioRange {
                        start: page,
                        len: crate::PAGE_BYTES,
                    },
                    mode: 0,
                };
                // SAFETY: clearing write protection of one page on our own userfaultfd (and
                // waking the faulting thread); never sets it.
                unsafe { libc::ioctl(uffd.as_raw_fd(), UFFDIO_WRITEPROTECT, &mut wp) };
            }
            _ => {}
        }
        shared.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const PAGE: u64 = crate::PAGE_BYTES;

    fn anon(pages: u64) -> u64 {
        // SAFETY: a fresh private anonymous mapping owned by the test.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                (pages * PAGE) as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        p as u64
    }

    /// The reader counts an event and updates its list just after reading it (the caller of
    /// `munmap` may run first); wait for that, bounded.
    fn eventually(mut f: impl FnMut() -> bool) -> bool {
        let t0 = Instant::now();
        while !f() {
            if t0.elapsed() > Duration::from_secs(5) {
                return false;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        true
    }

    /// Registers, or says why not (no write-protect support for anonymous memory on this
    /// kernel or architecture) and unmaps the test's mapping.
    fn registered(w: &Watch, b: u64, pages: u64) -> bool {
        match w.register(b, b + pages * PAGE) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("cannot register here ({e}): skipped");
                // SAFETY: unmapping the test's own mapping.
                unsafe { libc::munmap(b as *mut libc::c_void, (pages * PAGE) as usize) };
                false
            }
        }
    }

    fn open_or_skip() -> Option<Watch> {
        match Watch::open() {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!("no userfaultfd events here ({e}): skipped");
                None
            }
        }
    }

    /// Wait (bounded) for `f` to run on another thread: a fault routed to the userfaultfd
    /// would block it (our reader would count and release it).
    fn finishes(f: impl FnOnce() + Send + 'static) -> bool {
        let t = std::thread::spawn(f);
        let t0 = Instant::now();
        while !t.is_finished() {
            if t0.elapsed() > Duration::from_secs(10) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        t.join().is_ok()
    }

    #[test]
    fn registration_changes_no_access() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let Some(w) = open_or_skip() else { return };
        let b = anon(64);
        let t = Instant::now();
        if !registered(&w, b, 64) {
            return;
        }
        eprintln!(
            "UFFDIO_REGISTER of 256 KiB: {:.1} us",
            t.elapsed().as_secs_f64() * 1e6
        );
        let e0 = w.epoch();
        assert!(finishes(move || {
            // First touches (writes), reads of the zero page then writes (copy on write of
            // the zero page), and the page-in path's populate.
            for i in 0..16 {
                // SAFETY: pages of the test's own mapping.
                unsafe { ((b + i * PAGE) as *mut u8).write_volatile(1) };
            }
            for i in 16..24 {
                // SAFETY: as above.
                let v = unsafe { ((b + i * PAGE) as *const u8).read_volatile() };
                assert_eq!(v, 0);
                // SAFETY: as above.
                unsafe { ((b + i * PAGE) as *mut u8).write_volatile(2) };
            }
            crate::populate::page_in(b + 24 * PAGE, b + 64 * PAGE, true).unwrap();
            // SAFETY: as above; the populated pages are present and writable.
            unsafe { ((b + 40 * PAGE) as *mut u8).write_volatile(3) };
        }));
        assert_eq!(w.stats(), WatchStats::default(), "no fault, no event");
        assert_eq!(w.epoch(), e0);
        assert_eq!(w.covering(b, b + 64 * PAGE), Some(b + 64 * PAGE));
        w.unregister(b, b + 64 * PAGE);
        assert_eq!(w.covering(b, b + PAGE), None);
        // SAFETY: unmapping the test's own mapping.
        unsafe { libc::munmap(b as *mut libc::c_void, (64 * PAGE) as usize) };
        // Unregistered: no event.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(w.stats().unmaps, 0);
    }

    #[test]
    fn unmap_remove_and_remap_invalidate_before_the_call_returns() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let Some(w) = open_or_skip() else { return };
        let b = anon(16);
        if !registered(&w, b, 16) {
            return;
        }
        // SAFETY: touching the test's own mapping.
        unsafe { std::ptr::write_bytes(b as *mut u8, 1, (16 * PAGE) as usize) };
        // madvise(DONTNEED): pages gone, registration stays.
        let e = w.epoch();
        // SAFETY: dropping pages of the test's own mapping.
        assert_eq!(
            unsafe { libc::madvise(b as *mut libc::c_void, PAGE as usize, libc::MADV_DONTNEED) },
            0
        );
        assert!(w.epoch() > e, "invalidated before madvise returned");
        assert!(eventually(|| w.stats().removes == 1));
        assert!(w.covering(b, b + 16 * PAGE).is_some());
        // munmap of the last 4 pages: no longer watched there.
        let e = w.epoch();
        // SAFETY: unmapping pages of the test's own mapping.
        unsafe { libc::munmap((b + 12 * PAGE) as *mut libc::c_void, (4 * PAGE) as usize) };
        assert!(w.epoch() > e, "invalidated before munmap returned");
        assert!(eventually(|| w.stats().unmaps == 1));
        assert_eq!(w.covering(b, b + 12 * PAGE), Some(b + 12 * PAGE));
        assert!(eventually(|| w
            .covering(b + 12 * PAGE, b + 13 * PAGE)
            .is_none()));
        // mremap moving pages 8..12 onto a reservation of the test's.
        let to = anon(4) as *mut libc::c_void;
        let e = w.epoch();
        // SAFETY: moving pages of the test's own mapping onto another mapping of its own.
        let to = unsafe {
            libc::mremap(
                (b + 8 * PAGE) as *mut libc::c_void,
                (4 * PAGE) as usize,
                (4 * PAGE) as usize,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                to,
            )
        };
        assert_ne!(to, libc::MAP_FAILED);
        assert!(w.epoch() > e, "invalidated before mremap returned");
        assert!(eventually(|| w.stats().remaps == 1));
        assert!(eventually(|| w
            .covering(b + 8 * PAGE, b + 9 * PAGE)
            .is_none()));
        assert_eq!(w.covering(b, b + 8 * PAGE), Some(b + 8 * PAGE));
        assert_eq!(w.stats().unexpected_faults, 0);
        // SAFETY: unmapping what is left of the test's mappings.
        unsafe {
            libc::munmap(b as *mut libc::c_void, (8 * PAGE) as usize);
            libc::munmap(to, (4 * PAGE) as usize);
        }
    }

    #[test]
    fn a_range_owned_by_another_userfaultfd_is_refused() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let Some(a) = open_or_skip() else { return };
        let Some(b) = open_or_skip() else { return };
        let p = anon(4);
        if !registered(&a, p, 4) {
            return;
        }
        assert_eq!(
            b.register(p, p + 4 * PAGE),
            Err(WatchError::Register(libc::EBUSY))
        );
        assert_eq!(b.covering(p, p + PAGE), None);
        drop(a);
        // Closing the first one released the range.
        b.register(p, p + 4 * PAGE).unwrap();
        drop(b);
        // SAFETY: unmapping the test's own mapping (nothing watches it any more: no block).
        unsafe { libc::munmap(p as *mut libc::c_void, (4 * PAGE) as usize) };
    }

    #[test]
    fn subtract_splits_and_trims() {
        let mut v = vec![(0, 100), (50, 60), (200, 300)];
        subtract(&mut v, 40, 210);
        assert_eq!(v, vec![(0, 40), (210, 300)]);
    }
}
