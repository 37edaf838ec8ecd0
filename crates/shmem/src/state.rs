//! The global state of this PE: the runtime, the job's shape, the symmetric heap, every
//! peer's bases and keys; initialization, finalization, fatal errors and the global exit.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use unpinned_live::{Perms, RemoteKey, Runtime};

use crate::bounce::Pool;
use crate::coll::staged::Stage;
use crate::ctx::Ctx;
use crate::heap::{Allocator, Heap, HeapKind};
use crate::segments::{data_segments, Segment};

/// Bytes at the start of the heap reserved for the library (barrier flags, the global-exit
/// word, internal scratch); user allocations start after it.
pub const INTERNAL_BYTES: usize = 2 << 20;
/// Offset of the barrier flags (two u64 per dissemination round: crates/shmem/src/sync.rs).
pub const BARRIER_FLAGS_OFF: usize = 0;
/// Offset of the global-exit word: `1 << 32 | code` once a PE called `shmem_global_exit`.
pub const EXIT_WORD_OFF: usize = 512;
/// Offset of the barrier's signal sources: the value a PART write of a barrier flag sends,
/// one u64 per flag (crates/shmem/src/sync.rs). A write reads its source again when it is
/// retransmitted, so the source lives as long as the write; here, in the exposed heap whose
/// residency verdicts the runtime trusts until the kernel reports a change, the engine's
/// check of a source costs no `PAGEMAP_SCAN`, which a fresh heap allocation per signal did
/// whenever its verdict had expired (docs/performance.md has the measurements).
pub const BARRIER_SOURCES_OFF: usize = 1024;
/// Offset of the sink word: where a posted atomic whose old value nobody reads (a
/// collective's signal) has it stored, for the same reason as [`BARRIER_SOURCES_OFF`].
pub const SINK_OFF: usize = 1536;
const _: () = assert!(EXIT_WORD_OFF + 8 <= BARRIER_SOURCES_OFF && SINK_OFF + 8 <= SCRATCH_OFF);
/// Offset where internal scratch allocations start ([`State::scratch_alloc`]).
pub const SCRATCH_OFF: usize = 4096;
/// Offset of the bounce-buffer pool ([`crate::bounce`]), at the end of the internal area
/// (scratch allocations stop before it).
pub const BOUNCE_OFF: usize = INTERNAL_BYTES - crate::bounce::POOL_BYTES;
const _: () = assert!(SCRATCH_OFF < BOUNCE_OFF && BOUNCE_OFF.is_multiple_of(4096));
/// Offset of the stage area of small broadcasts ([`crate::coll::staged`]), before the
/// bounce-buffer pool (scratch allocations stop before it).
pub const STAGE_OFF: usize = BOUNCE_OFF - crate::coll::staged::STAGE_BYTES;
const _: () = assert!(SCRATCH_OFF + (256 << 10) <= STAGE_OFF && STAGE_OFF.is_multiple_of(4096));

/// What this PE knows about another PE's symmetric memory.
pub struct Peer {
    /// Base address of its heap (in its address space).
    pub heap_addr: u64,
    /// Key of its heap exposure.
    pub heap_key: RemoteKey,
    /// Its heap mapped into this process (load/store path), or null.
    pub heap_map: *mut u8,
    /// Its data segments, in the same order as ours: (address there, key).
    pub segs: Vec<(u64, RemoteKey)>,
}

/// The state of an initialized PE (see the module doc).
pub struct State {
    /// The live runtime of this PE.
    pub rt: Runtime,
    /// This PE.
    pub me: u32,
    /// PEs in the job.
    pub npes: u32,
    /// Every PE's heap is mapped here (load/store path): heap flags need no PART traffic.
    pub all_mapped: bool,
    /// The symmetric heap.
    pub heap: Heap,
    /// The user allocator over the heap (after [`INTERNAL_BYTES`]).
    pub alloc: Mutex<Allocator>,
    /// Bump pointer of the internal scratch area.
    scratch_next: Mutex<usize>,
    /// Our writable data segments.
    pub segs: Vec<Segment>,
    /// Every PE, by PE number (ours included).
    pub peers: Vec<Peer>,
    /// The default context.
    pub default_ctx: Ctx,
    /// Bounce buffers of small blocking puts and result words of blocking atomics.
    pub bounce: Pool,
    /// The context of the library's own traffic (collectives' transfers and signals, locks).
    pub internal_ctx: Ctx,
    /// The context of the world barrier's flag writes only (see `sync::sync_all`, which
    /// needs to know exactly which of them are outstanding).
    pub barrier_ctx: Ctx,
    /// The context of the team barrier's signals only (see `coll::sync`).
    pub sync_ctx: Ctx,
    /// Every context created with `shmem_ctx_create` and not destroyed (addresses).
    pub contexts: Mutex<Vec<usize>>,
    /// Barrier epoch (number of barriers started).
    pub barrier_epoch: AtomicU64,
    /// The thread level granted.
    pub thread_level: AtomicI32,
    /// Small broadcasts in one message per member ([`crate::coll::staged`]).
    pub stage: Stage,
}

// SAFETY: the raw pointers in `Peer` are mappings that live as long as the process; all
// mutation goes through atomics or mutexes.
unsafe impl Sync for State {}
// SAFETY: as above.
unsafe impl Send for State {}

static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());
static INIT_LOCK: Mutex<()> = Mutex::new(());
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// The state, or `None` before `shmem_init` (or after `shmem_finalize`).
pub fn try_state() -> Option<&'static State> {
    if FINALIZED.load(Ordering::Acquire) {
        return None;
    }
    // SAFETY: set once from a leaked Box and never freed.
    unsafe { STATE.load(Ordering::Acquire).as_ref() }
}

/// The state for the entry point `call`; before `shmem_init` a clear error and exit.
pub fn state(call: &str) -> &'static State {
    match try_state() {
        Some(s) => s,
        None => {
            let when = if FINALIZED.load(Ordering::Acquire) {
                "after shmem_finalize"
            } else {
                "before shmem_init"
            };
            eprintln!("shmem: {call} called {when}: call shmem_init (or shmem_init_thread) first and no OpenSHMEM routine after shmem_finalize");
            std::process::exit(1)
        }
    }
}

/// Report a fatal error of `call` on this PE and end the job with code 1 (every other PE is
/// told through its global-exit word).
pub fn fatal(call: &str, msg: impl std::fmt::Display) -> ! {
    match try_state() {
        Some(s) => {
            eprintln!("shmem: {call} on PE {} of {}: {msg}", s.me, s.npes);
            s.global_exit(1)
        }
        None => {
            eprintln!("shmem: {call}: {msg}");
            std::process::exit(1)
        }
    }
}

/// The heap size asked for in the environment: `SHMEM_SYMMETRIC_SIZE` (or its older name
/// `SMA_SYMMETRIC_SIZE`), a number with an optional K/M/G/T suffix (powers of 1024).
pub fn heap_size_from_env() -> Result<usize, String> {
    for var in ["SHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"] {
        if let Ok(v) = std::env::var(var) {
            return parse_size(&v).map_err(|e| format!("{var}={v:?}: {e}"));
        }
    }
    Ok(1 << 30)
}

/// Parse `512M`, `2G`, `1048576`, `1.5G`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mul) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        Some('T') => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| "not a size (examples: 512M, 2G, 1048576)".to_string())?;
    if v.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return Err("the size must be positive".into());
    }
    Ok((v * mul as f64) as usize)
}

/// Whether the on-node load/store path is on: `SHMEM_LOADSTORE=0` (or `off`, `false`, `no`)
/// turns it off, so that every transfer goes through PART.
pub fn loadstore_from_env() -> bool {
    !matches!(
        std::env::var("SHMEM_LOADSTORE").as_deref().map(str::trim),
        Ok("0") | Ok("off") | Ok("false") | Ok("no")
    )
}

fn put_u64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}

struct Reader<'a>(&'a [u8]);
impl Reader<'_> {
    fn u64(&mut self) -> u64 {
        let (a, b) = self.0.split_at(8);
        self.0 = b;
        u64::from_le_bytes(a.try_into().expect("8 bytes"))
    }
}

/// This host's identity for the load/store path: boot id and host name.
fn host_id() -> u64 {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    // FNV-1a over both.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in boot.bytes().chain(host.bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    h
}

/// Initialize this PE (idempotent). Errors end the process with a message.
pub fn init(call: &str, level: c_int) {
    let _g = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if !STATE.load(Ordering::Acquire).is_null() {
        return;
    }
    let mut shmem_sets = Vec::new();
    let rt = match unpinned_live::edge::Edge::from_env().and_then(|mut edge| {
        // Before the runtime's threads start: they inherit the binding.
        if crate::bind::bind_from_env(edge.rank, edge.size) {
            // First, so that the job's own settings (later) win.
            edge.sets.insert(
                0,
                format!("progress.wait_spin_us={}", crate::bind::BOUND_WAIT_SPIN_US),
            );
            edge.sets.insert(
                1,
                format!("progress.yield_us={}", crate::bind::BOUND_YIELD_US),
            );
        }
        // The library's own section (`shmem.loadstore=false`), not the runtime's.
        shmem_sets = edge.take_section("shmem");
        // The runtime's own defaults: a peer descheduled on a loaded host is not declared dead
        // (crates/live LIVE_DEFAULTS, `engine.timeout_backoff_max`).
        edge.connect()
    }) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("shmem: {call}: cannot join the job: {e}\n(start OpenSHMEM programs with `oshrun -np N ./prog` or `unpinned run -n N -- ./prog`)");
            std::process::exit(1)
        }
    };
    let (me, npes) = (rt.rank(), rt.size());
    let die = |what: String| -> ! {
        eprintln!("shmem: {call} on PE {me} of {npes}: {what}");
        std::process::exit(1)
    };
    let size = heap_size_from_env().unwrap_or_else(|e| die(e));
    let size = size
        .max(INTERNAL_BYTES + (1 << 20))
        .next_multiple_of(1 << 21);
    let settings = crate::settings::Settings {
        loadstore: loadstore_from_env(),
    };
    let loadstore = crate::settings::apply(settings, &shmem_sets)
        .unwrap_or_else(|e| die(format!("UNPINNED_SET / oshrun --set: {e}")))
        .loadstore;
    let kind = if loadstore {
        HeapKind::SharedFile
    } else {
        HeapKind::PrivateAnonymous
    };
    let heap = Heap::reserve(size, kind).unwrap_or_else(|e| {
        die(format!(
            "cannot reserve the symmetric heap of {size} bytes (SHMEM_SYMMETRIC_SIZE): {e}"
        ))
    });
    let rw = Perms {
        read: true,
        write: true,
    };
    // SAFETY: the heap mapping lives as long as the process; peers write it only through
    // OpenSHMEM calls the program makes, which is the OpenSHMEM memory model.
    let heap_key = unsafe { rt.expose(heap.base, heap.size, rw) }
        .unwrap_or_else(|e| die(format!("cannot expose the symmetric heap: {e}")));
    let segs = data_segments();
    let mut seg_keys = Vec::with_capacity(segs.len());
    for s in &segs {
        // SAFETY: the executable's data segments live as long as the process.
        let k = unsafe { rt.expose(s.base as *const u8, s.len, rw) }.unwrap_or_else(|e| {
            die(format!(
                "cannot expose the data segment {:#x}+{:#x}: {e}",
                s.base, s.len
            ))
        });
        seg_keys.push(k);
    }
    // Exchange: heap addr, size, key, pid, fd, host, segment count, then per segment addr,len,key.
    let mut b = Vec::new();
    put_u64(&mut b, heap.base as u64);
    put_u64(&mut b, heap.size as u64);
    put_u64(&mut b, heap_key as u64);
    put_u64(&mut b, std::process::id() as u64);
    put_u64(&mut b, heap.fd.map_or(u64::MAX, |f| f as u64));
    put_u64(&mut b, host_id());
    put_u64(&mut b, segs.len() as u64);
    for (s, k) in segs.iter().zip(&seg_keys) {
        put_u64(&mut b, s.base as u64);
        put_u64(&mut b, s.len as u64);
        put_u64(&mut b, *k as u64);
    }
    let all = rt
        .all_gather(&b)
        .unwrap_or_else(|e| die(format!("exchange of the symmetric addresses failed: {e}")));
    let my_host = host_id();
    let mut peers = Vec::with_capacity(npes as usize);
    for (pe, d) in all.iter().enumerate() {
        let mut r = Reader(d);
        let (addr, psize, key, pid, fd, host, nsegs) = (
            r.u64(),
            r.u64(),
            r.u64(),
            r.u64(),
            r.u64(),
            r.u64(),
            r.u64(),
        );
        if psize as usize != heap.size {
            die(format!("PE {pe} has a symmetric heap of {psize} bytes, this PE {}: give every PE the same SHMEM_SYMMETRIC_SIZE", heap.size));
        }
        if nsegs as usize != segs.len() {
            die(format!("PE {pe} has {nsegs} data segments, this PE {}: every PE must run the same executable", segs.len()));
        }
        let mut psegs = Vec::new();
        for s in &segs {
            let (a, l, k) = (r.u64(), r.u64(), r.u64());
            if l as usize != s.len {
                die(format!("PE {pe}'s data segment is {l} bytes, ours {}: every PE must run the same executable", s.len));
            }
            psegs.push((a, k as RemoteKey));
        }
        let heap_map = if pe as u32 == me {
            heap.base
        } else if loadstore && fd != u64::MAX && host == my_host {
            Heap::map_peer(pid as u32, fd as i32, heap.size).unwrap_or(std::ptr::null_mut())
        } else {
            std::ptr::null_mut()
        };
        peers.push(Peer {
            heap_addr: addr,
            heap_key: key as RemoteKey,
            heap_map,
            segs: psegs,
        });
    }
    let all_mapped = peers.iter().all(|p| !p.heap_map.is_null());
    // Whether and up to what size broadcasts are staged is the job's decision: every PE must
    // take the same one (a member waits for a message only if the root sends one).
    let mut mine = Vec::new();
    put_u64(&mut mine, all_mapped as u64);
    put_u64(&mut mine, rt.single_packet_bytes() as u64);
    let views = rt
        .all_gather(&mine)
        .unwrap_or_else(|e| die(format!("exchange of the transport limits failed: {e}")));
    let (job_all_mapped, job_single_packet) = views.iter().fold((true, usize::MAX), |(m, p), v| {
        let mut r = Reader(v);
        let (mapped, single) = (r.u64(), r.u64());
        (m && mapped == 1, p.min(single as usize))
    });
    let stage_max = crate::coll::staged::max_len_for(npes, job_all_mapped, job_single_packet);
    // SAFETY: the stage area lies inside the heap's internal area (asserted at STAGE_OFF).
    let stage = Stage::new(unsafe { heap.base.add(STAGE_OFF) }, npes, stage_max);
    // SAFETY: the pool lies inside the heap's internal area (asserted at BOUNCE_OFF).
    let bounce = Pool::new(unsafe { heap.base.add(BOUNCE_OFF) });
    let st = Box::new(State {
        rt,
        all_mapped,
        me,
        npes,
        alloc: Mutex::new(Allocator::new(INTERNAL_BYTES, heap.size)),
        heap,
        scratch_next: Mutex::new(SCRATCH_OFF),
        segs,
        peers,
        default_ctx: Ctx::new(0),
        internal_ctx: Ctx::new(0),
        bounce,
        barrier_ctx: Ctx::new(0),
        sync_ctx: Ctx::new(0),
        contexts: Mutex::new(Vec::new()),
        barrier_epoch: AtomicU64::new(0),
        thread_level: AtomicI32::new(level),
        stage,
    });
    STATE.store(Box::into_raw(st), Ordering::Release);
    let st = try_state().expect("just set");
    crate::team::init(st);
    // Everyone mapped everyone before anyone goes on (a PE's file must stay open until its
    // peers opened it through /proc: it does, the memfd lives as long as the process).
    if let Err(e) = st.rt.barrier() {
        fatal(call, format!("initial barrier failed: {e}"));
    }
    if me == 0 {
        print_requested_info(st, loadstore);
    }
    std::thread::Builder::new()
        .name("shmem-exit-watch".into())
        .spawn(watch_exit_word)
        .expect("spawn the global-exit watcher");
}

/// The spec's `SHMEM_VERSION` (print the library version) and `SHMEM_INFO` (print the
/// environment variables this implementation reads), on PE 0 at `shmem_init`.
fn print_requested_info(st: &State, loadstore: bool) {
    let set = |v: &str| std::env::var_os(v).is_some();
    if set("SHMEM_VERSION") || set("SHMEM_INFO") {
        println!("unpinned OpenSHMEM, specification 1.5 ({} PEs)", st.npes);
    }
    if set("SHMEM_INFO") {
        println!(
            "  SHMEM_SYMMETRIC_SIZE  symmetric heap per PE: 512M, 2G, bytes (now {} bytes; also SMA_SYMMETRIC_SIZE)\n  \
             SHMEM_LOADSTORE       0: every transfer through PART, no on-node load/store path (now {})\n  \
             SHMEM_VERSION         print the version at start\n  \
             SHMEM_INFO            print this text\n  \
             UNPINNED_SET          live runtime knobs (docs/knobs.md)",
            st.heap.size,
            if loadstore { 1 } else { 0 }
        );
    }
}

/// Ends this process when another PE called `shmem_global_exit` (its code is in our exit word).
fn watch_exit_word() {
    loop {
        std::thread::sleep(Duration::from_millis(2));
        if let Some(st) = try_state() {
            st.check_exit_word();
        }
    }
}

impl State {
    /// This PE's sink word ([`SINK_OFF`]), written now: the engine stores an atomic's old
    /// value only into a present page (it takes no fault on local memory, and fails the
    /// request instead), so the caller posts right after this.
    pub fn sink(&self) -> *mut u64 {
        // SAFETY: inside the heap's internal area (asserted at SINK_OFF), 8-byte aligned,
        // lives forever; an atomic store, as other threads may store there at once.
        let w = unsafe { &*(self.heap.base.add(SINK_OFF) as *const AtomicU64) };
        w.store(0, Ordering::Relaxed);
        w.as_ptr()
    }

    /// This PE's exit word.
    fn exit_word(&self) -> &AtomicU64 {
        // SAFETY: inside the heap's internal area, 8-byte aligned, lives forever.
        unsafe { &*(self.heap.base.add(EXIT_WORD_OFF) as *const AtomicU64) }
    }

    /// If another PE called `shmem_global_exit`, exit with its code now.
    pub fn check_exit_word(&self) {
        let w = self.exit_word().load(Ordering::Acquire);
        if w >> 32 != 0 {
            // SAFETY: flushing C stdio and leaving at once is what a global exit is.
            unsafe {
                libc::fflush(std::ptr::null_mut());
                libc::_exit(w as u32 as i32);
            }
        }
    }

    /// End the whole job with `code`: tell every other PE (its exit word), then exit.
    pub fn global_exit(&self, code: c_int) -> ! {
        let word = (1u64 << 32) | code as u32 as u64;
        let mut ids = Vec::new();
        let src = Box::new(word);
        for pe in 0..self.npes {
            if pe == self.me {
                continue;
            }
            let p = &self.peers[pe as usize];
            if !p.heap_map.is_null() {
                // SAFETY: the peer's heap mapping, internal area, aligned.
                unsafe { &*(p.heap_map.add(EXIT_WORD_OFF) as *const AtomicU64) }
                    .store(word, Ordering::Release);
            } else {
                // SAFETY: `src` lives until the process ends below.
                if let Ok(id) = unsafe {
                    self.rt.write(
                        pe,
                        &*src as *const u64 as *const u8,
                        p.heap_addr + EXIT_WORD_OFF as u64,
                        p.heap_key,
                        8,
                    )
                } {
                    ids.push(id);
                }
            }
        }
        // Give the writes a moment (a dead peer must not keep us here).
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        for id in ids {
            while std::time::Instant::now() < deadline {
                match self.rt.wait(id) {
                    Err(unpinned_live::LiveError::Timeout(_)) => continue,
                    _ => break,
                }
            }
        }
        // SAFETY: exit the process with C stdio flushed.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::_exit(code)
        }
    }

    /// Allocate `len` bytes (aligned to `align`, a power of two) in the internal symmetric
    /// scratch area and return the local address. Symmetric only if every PE makes the same
    /// sequence of scratch allocations; never freed. `None` when the area is exhausted.
    pub fn scratch_alloc(&self, len: usize, align: usize) -> Option<*mut u8> {
        let mut n = self.scratch_next.lock().unwrap_or_else(|e| e.into_inner());
        let off = n.next_multiple_of(align.max(8));
        if off + len > STAGE_OFF {
            return None;
        }
        *n = off + len;
        // SAFETY: inside the heap.
        Some(unsafe { self.heap.base.add(off) })
    }

    /// Every context: default, created ones.
    pub fn for_each_ctx(&self, mut f: impl FnMut(&Ctx)) {
        f(&self.default_ctx);
        let list = self
            .contexts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for c in list {
            // SAFETY: registered contexts are live until shmem_ctx_destroy unregisters them.
            f(unsafe { &*(c as *const Ctx) });
        }
    }
}

/// Finalize: complete everything, synchronize, and refuse later calls.
pub fn finalize() {
    let Some(st) = try_state() else { return };
    crate::sync::barrier_all(st);
    // The barrier's last flag writes (and any signal) must leave this process before it may
    // exit.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    for c in [&st.barrier_ctx, &st.sync_ctx, &st.internal_ctx] {
        c.quiet_lenient(deadline);
    }
    st.stage.quiet_lenient(deadline);
    FINALIZED.store(true, Ordering::Release);
    // The runtime lives to the end of the process: `trace.file` is written now.
    if let Err(e) = st.rt.write_trace() {
        eprintln!("shmem: PE {}: {e}", st.me);
    }
}
