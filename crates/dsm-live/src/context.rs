//! Handler contexts (spec dsm.md, "Handler contexts compared"): where the asynchronous
//! protocol handlers run when a control message lands.
//!
//! A message lands as an RDMA write into the mailbox; nothing interrupts anybody. A
//! *detector* thread per rank watches the mailbox (spin, then yield, then short sleeps) and
//! takes completions; what happens on a landed message depends on the context:
//!
//! | context      | the handler runs ...                                                        |
//! |--------------|-----------------------------------------------------------------------------|
//! | `progress`   | in the detector itself, at once (the closest user-space analogue of an ISR) |
//! | `deferred`   | in a worker thread the detector wakes (a task queue)                        |
//! | `signal`     | in a real-time signal handler: the detector sends a signal per notification (`tgkill`) to a handler thread (the user-level baseline) |
//! | `polling`    | in an application thread that waits (fault, barrier, lock) and polls; the detector handles only while no thread waits (selective polling) |

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::endpoint::Endpoint;
use crate::error::DsmLiveError;
use crate::wire::WireMsg;

/// Where handlers run (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerContext {
    /// In the progress (detector) thread.
    Progress,
    /// In a deferred worker thread.
    Deferred,
    /// In a signal handler, one signal per notification.
    Signal,
    /// In waiting application threads (selective polling).
    Polling,
}

impl HandlerContext {
    /// All contexts, in report order.
    pub const ALL: [HandlerContext; 4] = [
        HandlerContext::Progress,
        HandlerContext::Deferred,
        HandlerContext::Signal,
        HandlerContext::Polling,
    ];

    /// Name in tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            HandlerContext::Progress => "progress",
            HandlerContext::Deferred => "deferred",
            HandlerContext::Signal => "signal",
            HandlerContext::Polling => "polling",
        }
    }
}

impl std::str::FromStr for HandlerContext {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        HandlerContext::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown handler context {s:?} (valid: progress, deferred, signal, polling)"
                )
            })
    }
}

/// Idle back-off of pollers: busy-poll, then yield, then sleep.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    /// Busy-poll this long after the last activity.
    pub spin: Duration,
    /// Then yield the CPU until this long after the last activity.
    pub yield_until: Duration,
    /// Then sleep this long per turn.
    pub sleep: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        // On a 2-vCPU host shared by engine threads, a long spin starves the peer's engine.
        Backoff {
            spin: Duration::from_micros(20),
            yield_until: Duration::from_millis(2),
            sleep: Duration::from_micros(100),
        }
    }
}

impl Backoff {
    /// One idle turn, `idle` after the last activity.
    pub fn idle(&self, idle: Duration) {
        if idle < self.spin {
            std::hint::spin_loop();
        } else if idle < self.yield_until {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.sleep);
        }
    }
}

/// What handles messages: the DSM node, or an experiment's responder.
pub trait Service: Send + Sync + 'static {
    /// The endpoint messages arrive on.
    fn endpoint(&self) -> &Endpoint;
    /// Handle one message (asynchronous entry: must not block).
    fn handle(&self, from: u32, msg: WireMsg);
}

/// Handle everything waiting; returns how many messages were handled.
pub fn drain<S: Service + ?Sized>(svc: &S) -> usize {
    let ep = svc.endpoint();
    let mut total = 0;
    loop {
        ep.progress();
        let n = ep.handle_pending(|from, m| svc.handle(from, m));
        total += n;
        if n == 0 {
            ep.progress();
            return total;
        }
    }
}

/// Heartbeats while a thread waits this long without progress.
const HEARTBEAT_EVERY: Duration = Duration::from_millis(200);

/// The running handler machinery of one rank.
pub struct Contexts {
    ctx: HandlerContext,
    backoff: Backoff,
    stop: Arc<AtomicBool>,
    /// Application threads waiting now.
    waiting: Arc<AtomicU32>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    wake: Arc<Wake>,
}

struct Wake {
    pending: AtomicBool,
    signal_tid: AtomicI32,
    worker: Mutex<Option<std::thread::Thread>>,
}

struct SignalSlot {
    f: Box<dyn Fn() + Send + Sync>,
}

thread_local! {
    static SIGNAL_SLOT: Cell<*const SignalSlot> = const { Cell::new(std::ptr::null()) };
}

/// The real-time signal used by the `signal` context.
pub fn notify_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

extern "C" fn on_notify(_sig: libc::c_int) {
    let p = SIGNAL_SLOT.with(|s| s.get());
    if !p.is_null() {
        // SAFETY: the slot is owned by the signal thread's Arc, alive while the pointer is set
        // (cleared before the thread exits); only that thread receives the signal.
        unsafe { ((*p).f)() };
    }
}

fn install_notify_handler() -> Result<(), DsmLiveError> {
    static ONCE: Once = Once::new();
    static mut RESULT: i32 = 0;
    ONCE.call_once(|| {
        // SAFETY: installing a handler for a real-time signal nobody else in this process uses.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_notify as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            RESULT = libc::sigaction(notify_signal(), &sa, std::ptr::null_mut());
        }
    });
    // SAFETY: written once inside call_once, which synchronizes with this read.
    if unsafe { RESULT } != 0 {
        return Err(DsmLiveError::Os("sigaction(SIGRTMIN+4)".into()));
    }
    Ok(())
}

impl Contexts {
    /// Start the detector (and the worker or signal thread) for `svc`.
    pub fn start<S: Service>(
        svc: Arc<S>,
        ctx: HandlerContext,
        backoff: Backoff,
    ) -> Result<Contexts, DsmLiveError> {
        let stop = Arc::new(AtomicBool::new(false));
        let waiting = Arc::new(AtomicU32::new(0));
        let wake = Arc::new(Wake {
            pending: AtomicBool::new(false),
            signal_tid: AtomicI32::new(0),
            worker: Mutex::new(None),
        });
        let mut threads = Vec::new();
        match ctx {
            HandlerContext::Deferred => {
                let (svc, stop, wake2) = (svc.clone(), stop.clone(), wake.clone());
                let h = std::thread::Builder::new()
                    .name("dsm-deferred".into())
                    .spawn(move || {
                        while !stop.load(Ordering::Acquire) {
                            if wake2.pending.swap(false, Ordering::AcqRel) {
                                drain(&*svc);
                            } else {
                                std::thread::park_timeout(Duration::from_millis(50));
                            }
                        }
                    })
                    .map_err(|e| DsmLiveError::Os(format!("spawning the deferred worker: {e}")))?;
                *wake.worker.lock().expect("worker") = Some(h.thread().clone());
                threads.push(h);
            }
            HandlerContext::Signal => {
                install_notify_handler()?;
                let (svc, stop, wake2) = (svc.clone(), stop.clone(), wake.clone());
                let (tx, rx) = std::sync::mpsc::channel();
                let h = std::thread::Builder::new()
                    .name("dsm-signal".into())
                    .spawn(move || {
                        let w3 = wake2.clone();
                        let slot = Arc::new(SignalSlot {
                            f: Box::new(move || {
                                w3.pending.store(false, Ordering::Release);
                                drain(&*svc);
                            }),
                        });
                        SIGNAL_SLOT.with(|s| s.set(Arc::as_ptr(&slot)));
                        // SAFETY: signal mask manipulation of this thread only; sigsuspend
                        // atomically unblocks the notification signal while waiting.
                        unsafe {
                            let mut block: libc::sigset_t = std::mem::zeroed();
                            libc::sigemptyset(&mut block);
                            libc::sigaddset(&mut block, notify_signal());
                            libc::pthread_sigmask(libc::SIG_BLOCK, &block, std::ptr::null_mut());
                            let _ = tx.send(libc::gettid());
                            let mut open: libc::sigset_t = std::mem::zeroed();
                            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut open);
                            libc::sigdelset(&mut open, notify_signal());
                            while !stop.load(Ordering::Acquire) {
                                libc::sigsuspend(&open);
                            }
                        }
                        SIGNAL_SLOT.with(|s| s.set(std::ptr::null()));
                        drop(slot);
                    })
                    .map_err(|e| DsmLiveError::Os(format!("spawning the signal thread: {e}")))?;
                let tid = rx
                    .recv()
                    .map_err(|_| DsmLiveError::Os("the signal thread did not start".into()))?;
                wake.signal_tid.store(tid, Ordering::Release);
                threads.push(h);
            }
            HandlerContext::Progress | HandlerContext::Polling => {}
        }
        {
            let (svc, stop, wake2, waiting2) =
                (svc.clone(), stop.clone(), wake.clone(), waiting.clone());
            let h = std::thread::Builder::new()
                .name("dsm-detector".into())
                .spawn(move || detector(&*svc, ctx, backoff, &stop, &wake2, &waiting2))
                .map_err(|e| DsmLiveError::Os(format!("spawning the detector: {e}")))?;
            threads.push(h);
        }
        Ok(Contexts {
            ctx,
            backoff,
            stop,
            waiting,
            threads: Mutex::new(threads),
            wake,
        })
    }

    /// The context.
    pub fn context(&self) -> HandlerContext {
        self.ctx
    }

    /// Block the calling application thread until `done()` holds, handling messages meanwhile
    /// if the context is `polling`. Fails when the endpoint failed (a peer died).
    pub fn wait_until<S: Service + ?Sized>(
        &self,
        svc: &S,
        mut done: impl FnMut() -> bool,
    ) -> Result<(), DsmLiveError> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let r = (|| {
            let mut last = Instant::now();
            loop {
                if done() {
                    return Ok(());
                }
                if let Some(e) = svc.endpoint().failure() {
                    return Err(e);
                }
                if self.ctx == HandlerContext::Polling && drain(svc) > 0 {
                    last = Instant::now();
                    continue;
                }
                self.backoff.idle(last.elapsed());
            }
        })();
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        r
    }

    /// Stop the threads (idempotent).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        if let Some(w) = self.wake.worker.lock().expect("worker").as_ref() {
            w.unpark();
        }
        let tid = self.wake.signal_tid.load(Ordering::Acquire);
        if tid != 0 {
            // SAFETY: signalling our own signal thread, which handles the signal.
            unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, notify_signal()) };
        }
        let threads: Vec<_> = self.threads.lock().expect("threads").drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for Contexts {
    fn drop(&mut self) {
        self.stop();
    }
}

fn detector<S: Service>(
    svc: &S,
    ctx: HandlerContext,
    backoff: Backoff,
    stop: &AtomicBool,
    wake: &Wake,
    waiting: &AtomicU32,
) {
    let ep = svc.endpoint();
    let mut last = Instant::now();
    let mut last_beat = Instant::now();
    while !stop.load(Ordering::Acquire) {
        ep.progress();
        if ep.peek() {
            match ctx {
                HandlerContext::Progress => {
                    drain(svc);
                }
                HandlerContext::Polling => {
                    // Selective polling: waiting threads poll; handle here only if none waits.
                    if waiting.load(Ordering::SeqCst) == 0 {
                        drain(svc);
                    } else {
                        std::thread::yield_now();
                    }
                }
                HandlerContext::Deferred => {
                    if wake.pending.swap(true, Ordering::AcqRel) {
                        std::thread::yield_now(); // notified already: let the handler run
                    } else {
                        if let Some(w) = wake.worker.lock().expect("worker").as_ref() {
                            w.unpark();
                        }
                    }
                }
                HandlerContext::Signal => {
                    if wake.pending.swap(true, Ordering::AcqRel) {
                        std::thread::yield_now(); // signalled already: let the handler run
                    } else {
                        let tid = wake.signal_tid.load(Ordering::Acquire);
                        // SAFETY: a real-time signal to our own signal thread.
                        unsafe {
                            libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, notify_signal())
                        };
                    }
                }
            }
            last = Instant::now();
            continue;
        }
        if waiting.load(Ordering::Relaxed) > 0 && last_beat.elapsed() >= HEARTBEAT_EVERY {
            last_beat = Instant::now();
            ep.heartbeat();
        }
        backoff.idle(last.elapsed());
    }
}
