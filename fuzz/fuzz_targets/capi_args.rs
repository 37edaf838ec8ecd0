//! C API argument checks (crates/capi): every `up_*` entry point is called with fuzzed
//! arguments on two real in-process runtimes (ranks 0 and 1 of one job, joined by the
//! in-process transport, no bootstrap directory). Checked for every call:
//!
//! - no panic reaches the boundary (`UP_ERR_PANIC` is a bug) and the process survives;
//! - a NULL handle gives `UP_ERR_NULL`; every failure code has its own `up_strerror` text and
//!   leaves a message for `up_last_error_message`;
//! - output arguments are written only on success (`key`, `wr_id`, `old`);
//! - no wait, flush or atomic times out (both ranks are alive and progress on their own;
//!   the active flushes may: they wait for a handler, or a reply connection, that need not
//!   exist).
//!
//! Pointers the runtime dereferences are never arbitrary (that would be undefined behaviour
//! the API cannot check): they are NULL, a range inside a buffer of this target, or a range
//! in the first pages of the address space, which nothing maps (unmapped memory the runtime
//! must report, not crash on). Integers (lengths, keys, remote addresses, peers, bits, IUIDs,
//! op codes) are fuzzed freely, except an access log's size, kept below 1 MiB (a log is
//! allocated whole, so a 4 GiB request is honoured, not refused).
//!
//! Input: records of an op byte and its argument bytes (missing bytes read as 0).
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::ffi::{c_int, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::{Mutex, OnceLock};
use unpinned::active::*;
use unpinned::*;
use unpinned_aa_live::ActiveRuntime;
use unpinned_live::transport::mem::network;
use unpinned_live::Config;

/// Bytes of each rank's source, destination and exposed buffers.
const BUF: usize = 64 << 10;
/// Unmapped addresses handed out as local buffers: `[LOW, LOW + LOW_LEN)`.
const LOW: usize = 0x1000;
const LOW_LEN: usize = 0x8000;

/// Reads the argument bytes of a record; missing bytes are 0.
struct Args<'a>(&'a [u8]);

impl Args<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | u32::from(self.u16()) << 16
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }
}

/// Each rank's buffers (boxed: they do not move while requests use them).
struct Bufs {
    src: Box<[u8]>,
    dst: Box<[u8]>,
    exposed: Box<[u8]>,
}

struct World {
    h: [*mut UpRuntime; 2],
    bufs: [Bufs; 2],
    /// Keys returned by up_expose, and ids returned by up_write / up_read.
    keys: Vec<u32>,
    ids: Vec<u64>,
    /// Handlers started: (rank, IUID).
    handlers: Vec<(usize, u32)>,
}

impl World {
    fn handle(&self, a: &mut Args) -> (*mut UpRuntime, usize) {
        let r = a.u8();
        match r % 3 {
            2 => (null_mut(), 0),
            i => (self.h[usize::from(i)], usize::from(i)),
        }
    }
    fn peer(a: &mut Args) -> u32 {
        match a.u8() {
            b @ 0..=3 => u32::from(b),
            _ => a.u32(),
        }
    }
    fn key(&self, a: &mut Args) -> u32 {
        let sel = a.u8();
        match self.keys.get(usize::from(sel)) {
            Some(&k) if sel < 0x80 => k,
            _ => a.u32(),
        }
    }
    /// A remote address: inside the peer's exposed buffer, or arbitrary.
    fn remote(&self, a: &mut Args) -> u64 {
        let sel = a.u8();
        if sel < 0xc0 {
            let b = &self.bufs[usize::from(sel & 1)].exposed;
            b.as_ptr() as u64 + u64::from(a.u16())
        } else {
            a.u64()
        }
    }
    /// A local range: NULL, inside `buf`, or unmapped; the length fits the range.
    fn local(a: &mut Args, buf: *mut u8) -> (*mut c_void, usize) {
        let sel = a.u8();
        let off = usize::from(a.u16());
        let len = a.u32() as usize;
        match sel % 4 {
            0 => (null_mut(), len),
            3 => {
                let off = off % LOW_LEN;
                ((LOW + off) as *mut c_void, len % (LOW_LEN - off + 1))
            }
            _ => {
                let off = off % BUF;
                // SAFETY: `off < BUF`, inside the buffer.
                (
                    unsafe { buf.add(off) } as *mut c_void,
                    len % (BUF - off + 1),
                )
            }
        }
    }
    fn wr_id(&self, a: &mut Args) -> u64 {
        let sel = a.u8();
        match self.ids.get(usize::from(sel)) {
            Some(&id) if sel < 0x80 => id,
            _ => a.u64(),
        }
    }
}

/// The checks every call's result passes.
fn check(func: &str, rc: c_int, rt: *mut UpRuntime) {
    assert_ne!(rc, UP_ERR_PANIC, "{func}: {}", last());
    // The active flushes wait for the peer's handler (and, for the reply flush, its reply
    // connection), which need not exist: their timeout is the documented answer.
    if func != "up_aa_flush" && func != "up_aa_reply_flush" {
        assert_ne!(rc, UP_ERR_TIMEOUT, "{func} timed out: {}", last());
    }
    if rt.is_null() {
        assert_eq!(rc, UP_ERR_NULL, "{func}(NULL, ...)");
    }
    if rc < 0 {
        // SAFETY: up_strerror returns a static NUL-terminated string.
        let text = unsafe { CStr::from_ptr(up_strerror(rc)) };
        assert_ne!(
            text.to_bytes(),
            b"unknown unpinned error code",
            "{func} returned {rc}, a code without a text"
        );
        let m = last();
        assert!(
            m.starts_with(func),
            "{func} returned {rc}, last message {m:?}"
        );
    }
}

fn last() -> String {
    // SAFETY: never NULL; NUL-terminated; copied at once.
    unsafe { CStr::from_ptr(up_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

unsafe extern "C" fn nop(_: *const UpAaEntry, _: *mut c_void) {}

/// Runs one record: the op byte picks the entry point, `a` holds its arguments.
///
/// # Safety
///
/// The world's handles are live.
unsafe fn step(w: &mut World, op: u8, a: &mut Args) {
    const SENTINEL: u64 = 0x5eed_5eed_5eed_5eed;
    match op % 21 {
        0 => {
            let (h, r) = w.handle(a);
            let rank = unsafe { up_rank(h) };
            check("up_rank", rank, h);
            let size = unsafe { up_size(h) };
            check("up_size", size, h);
            if !h.is_null() {
                assert_eq!((rank, size), (r as c_int, 2));
            }
        }
        1 => {
            let (h, r) = w.handle(a);
            let base = w.bufs[r].exposed.as_mut_ptr();
            let (addr, len) = World::local(a, base);
            let perms = match a.u8() {
                b @ 0..=7 => u32::from(b),
                _ => a.u32(),
            };
            let mut key = 0xdead_beef_u32;
            let kp = if a.u8() == 0xff {
                null_mut()
            } else {
                &mut key as *mut u32
            };
            let rc = unsafe { up_expose(h, addr, len, perms, kp) };
            check("up_expose", rc, h);
            if rc == UP_OK {
                w.keys.push(key);
            } else {
                assert_eq!(key, 0xdead_beef, "up_expose wrote the key on failure");
            }
        }
        2 => {
            let (h, _) = w.handle(a);
            let key = w.key(a);
            let rc = unsafe { up_revoke(h, key) };
            check("up_revoke", rc, h);
            assert!(rc < 0 || rc <= 1, "up_revoke removed {rc} exposures");
        }
        3 | 4 | 17 => {
            let (h, r) = w.handle(a);
            let peer = World::peer(a);
            let buf = if op % 21 == 4 {
                w.bufs[r].dst.as_mut_ptr()
            } else {
                w.bufs[r].src.as_mut_ptr()
            };
            let (local, len) = World::local(a, buf);
            let remote = w.remote(a);
            let rkey = w.key(a);
            let mut id = SENTINEL;
            let ip = if a.u8() == 0xff {
                null_mut()
            } else {
                &mut id as *mut u64
            };
            let (func, rc) = match op % 21 {
                3 => ("up_write", unsafe {
                    up_write(h, peer, local, remote, rkey, len, ip)
                }),
                4 => ("up_read", unsafe {
                    up_read(h, peer, local, remote, rkey, len, ip)
                }),
                _ => ("up_aa_write_active", unsafe {
                    up_aa_write_active(h, peer, local, remote, rkey, len, ip)
                }),
            };
            check(func, rc, h);
            if rc == UP_OK && !ip.is_null() {
                w.ids.push(id);
            } else {
                assert_eq!(id, SENTINEL, "{func} wrote wr_id without posting");
            }
        }
        5 => {
            let (h, _) = w.handle(a);
            let id = w.wr_id(a);
            let mut c = UpCompletion::default();
            let cp = if a.u8() == 0xff {
                null_mut()
            } else {
                &mut c as *mut UpCompletion
            };
            let rc = unsafe { up_wait(h, id, cp) };
            check("up_wait", rc, h);
            if rc == UP_OK && !cp.is_null() {
                assert_eq!((c.wr_id, c.status), (id, UP_OK));
            }
        }
        6 => {
            let (h, _) = w.handle(a);
            let mut c = UpCompletion::default();
            let cp = if a.u8() == 0xff {
                null_mut()
            } else {
                &mut c as *mut UpCompletion
            };
            let rc = unsafe { up_poll(h, cp) };
            check("up_poll", rc, h);
            assert!(rc <= 1, "up_poll returned {rc}");
            if rc == 1 {
                assert!(c.op == UP_OP_WRITE || c.op == UP_OP_READ, "{c:?}");
            }
        }
        7 => {
            let (h, _) = w.handle(a);
            check("up_flush", unsafe { up_flush(h) }, h);
        }
        8 => {
            let (h, _) = w.handle(a);
            check("up_cancel_all", unsafe { up_cancel_all(h) }, h);
        }
        9 => {
            let (h, r) = w.handle(a);
            let rc = if a.u8() & 1 == 0 {
                let addr = w.bufs[r].exposed.as_ptr() as *const c_void;
                let len = a.u32() as usize;
                let key = w.key(a);
                let mut regions = [UpRegion::default(); 4];
                let n = usize::from(a.u8() % 5);
                let rp = if n == 4 {
                    null_mut()
                } else {
                    regions.as_mut_ptr()
                };
                let rc = unsafe { up_exchange(h, addr, len, key, rp, n) };
                check("up_exchange", rc, h);
                rc
            } else {
                let rc = unsafe { up_barrier(h) };
                check("up_barrier", rc, h);
                rc
            };
            // No bootstrap directory: collectives cannot succeed.
            assert_ne!(rc, UP_OK);
        }
        10 => {
            let code = a.u32() as c_int;
            // SAFETY: static NUL-terminated strings.
            let s = unsafe { CStr::from_ptr(up_strerror(code)) };
            assert!(!s.to_bytes().is_empty());
            let _ = last();
        }
        11 => {
            let (h, _) = w.handle(a);
            let iuid = World::small_or_raw(a, 1100);
            let size = a.u32() % (1 << 20);
            check(
                "up_aa_create_log",
                unsafe { up_aa_create_log(h, iuid, size) },
                h,
            );
        }
        12 => {
            let (h, _) = w.handle(a);
            let addr = a.u64() as *const c_void;
            let len = a.u64() as usize;
            let bits = a.u32();
            let iuid = World::small_or_raw(a, 1100);
            check(
                "up_aa_assoc_pages",
                unsafe { up_aa_assoc_pages(h, addr, len, bits, iuid) },
                h,
            );
        }
        13 => {
            let (h, _) = w.handle(a);
            let addr = a.u64() as *const c_void;
            let len = a.u64() as usize;
            check(
                "up_aa_clear_pages",
                unsafe { up_aa_clear_pages(h, addr, len) },
                h,
            );
        }
        14 => {
            let (h, r) = w.handle(a);
            let iuid = World::small_or_raw(a, 1100);
            let notify = match a.u8() {
                b @ 0..=2 => c_int::from(b),
                _ => a.u32() as c_int,
            };
            let f: UpAaHandlerFn = if a.u8() == 0xff { None } else { Some(nop) };
            let rc = unsafe { up_aa_handler_start(h, iuid, notify, f, null_mut()) };
            check("up_aa_handler_start", rc, h);
            if rc == UP_OK {
                w.handlers.push((r, iuid));
            }
        }
        15 => {
            let (h, r) = w.handle(a);
            let iuid = World::small_or_raw(a, 1100);
            let mut s = UpAaHandlerStats::default();
            let sp = if a.u8() == 0xff {
                null_mut()
            } else {
                &mut s as *mut UpAaHandlerStats
            };
            let rc = unsafe { up_aa_handler_stop(h, iuid, sp) };
            check("up_aa_handler_stop", rc, h);
            let started = w
                .handlers
                .iter()
                .position(|&(hr, hi)| !h.is_null() && (hr, hi) == (r, iuid));
            // Exactly the handlers started (and not stopped yet) stop.
            assert_eq!(
                rc == UP_OK,
                started.is_some(),
                "up_aa_handler_stop: {}",
                last()
            );
            if let Some(i) = started {
                w.handlers.swap_remove(i);
            }
        }
        16 => {
            let (h, _) = w.handle(a);
            let peer = World::peer(a);
            let addr = w.remote(a);
            let rkey = w.key(a);
            check(
                "up_aa_flush",
                unsafe { up_aa_flush(h, peer, addr, rkey) },
                h,
            );
        }
        18 => {
            let (h, _) = w.handle(a);
            check("up_aa_reply_setup", unsafe { up_aa_reply_setup(h) }, h);
        }
        19 => {
            let (h, _) = w.handle(a);
            let peer = World::peer(a);
            check(
                "up_aa_reply_flush",
                unsafe { up_aa_reply_flush(h, peer) },
                h,
            );
        }
        _ => {
            let (h, _) = w.handle(a);
            let peer = World::peer(a);
            let addr = w.remote(a) & !7;
            let rkey = w.key(a);
            let op = match a.u8() {
                b @ 0..=4 => c_int::from(b),
                _ => a.u32() as c_int,
            };
            let (operand, compare) = (a.u64(), a.u64());
            let mut old = SENTINEL;
            let op_ptr = if a.u8() == 0xff {
                null_mut()
            } else {
                &mut old as *mut u64
            };
            let rc = unsafe { up_atomic(h, peer, addr, rkey, op, operand, compare, op_ptr) };
            check("up_atomic", rc, h);
            if rc != UP_OK {
                assert_eq!(old, SENTINEL, "up_atomic wrote old on failure");
            }
        }
    }
}

impl World {
    fn small_or_raw(a: &mut Args, bound: u32) -> u32 {
        match a.u8() {
            0..=0xef => u32::from(a.u16()) % bound,
            _ => a.u32(),
        }
    }
}

/// The runtimes and buffers, made once per fuzzing process: starting two runtimes per input
/// costs about as much as a hundred inputs.
struct Shared(World);
// SAFETY: the C API's handles may be used from any thread (header: every call but
// up_finalize); the target is called from one thread at a time (the Mutex below).
unsafe impl Send for Shared {}

fn world() -> World {
    let max = Config::new(0, 2).max_packet();
    let mut ts = network(2, max).into_iter();
    let mut h = [null_mut(); 2];
    for (r, slot) in h.iter_mut().enumerate() {
        let cfg = Config::new(r as u32, 2)
            .with_overrides(&["timeouts.op_ms=2000"])
            .expect("config");
        let rt = ActiveRuntime::new(cfg, Box::new(ts.next().expect("transport"))).expect("runtime");
        *slot = UpRuntime::into_handle(rt);
    }
    let bufs = || Bufs {
        src: vec![0x5a; BUF].into_boxed_slice(),
        dst: vec![0; BUF].into_boxed_slice(),
        exposed: vec![0; BUF].into_boxed_slice(),
    };
    World {
        h,
        bufs: [bufs(), bufs()],
        keys: Vec::new(),
        ids: Vec::new(),
        handlers: Vec::new(),
    }
}

/// Undo what an input did, so the next one starts from the same state: requests cancelled,
/// exposures revoked, handlers stopped, pages plain. Access logs stay (there is no call to
/// delete one): a later input's `up_aa_create_log` of the same IUID gets `UP_ERR_AA_EXISTS`.
///
/// # Safety
///
/// The world's handles are live.
unsafe fn reset(w: &mut World) {
    for h in w.h {
        unsafe {
            assert!(up_cancel_all(h) >= 0, "up_cancel_all: {}", last());
            for &k in &w.keys {
                let _ = up_revoke(h, k);
            }
            assert_eq!(
                up_aa_clear_pages(h, null(), usize::MAX),
                UP_OK,
                "{}",
                last()
            );
        }
    }
    for (r, iuid) in w.handlers.drain(..) {
        // SAFETY: as above.
        let rc = unsafe { up_aa_handler_stop(w.h[r], iuid, null_mut()) };
        assert_eq!(rc, UP_OK, "{}", last());
    }
    w.keys.clear();
    w.ids.clear();
}

fuzz_target!(|data: &[u8]| {
    static WORLD: OnceLock<Mutex<Shared>> = OnceLock::new();
    let mut guard = WORLD
        .get_or_init(|| Mutex::new(Shared(world())))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let w = &mut guard.0;
    let mut rest = data;
    // Each record: op byte, argument length byte, argument bytes.
    while let [op, n, tail @ ..] = rest {
        let n = usize::from(*n).min(tail.len());
        let (args, next) = tail.split_at(n);
        rest = next;
        // SAFETY: the handles live for the whole process (never finalized: the buffers they
        // may still use live as long).
        unsafe { step(w, *op, &mut Args(args)) };
    }
    // SAFETY: as above.
    unsafe { reset(w) };
});
