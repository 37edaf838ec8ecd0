//! Unit tests of the C ABI from Rust: the code mapping (also against the header), NULL
//! handling, caught panics, and the entry points on two in-process runtimes.

use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::ptr::{null, null_mut};
use std::time::Duration;

use unpinned_live::bootstrap::BootstrapError;
use unpinned_live::memory::{MapsError, MemoryError};
use unpinned_live::transport::mem::network;
use unpinned_live::transport::shm::ShmError;
use unpinned_live::Config;

use super::*;

fn io() -> std::io::Error {
    std::io::Error::other("test")
}

fn last() -> String {
    // SAFETY: up_last_error_message never returns NULL and the string is NUL-terminated and
    // valid until the next failing call on this thread (we copy it at once).
    unsafe { CStr::from_ptr(up_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn text(code: c_int) -> String {
    // SAFETY: up_strerror returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(up_strerror(code)) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_error_variant_has_its_own_code() {
    let errors = vec![
        (
            LiveError::Env {
                var: "UNPINNED_RANK",
                why: "not set".into(),
            },
            UP_ERR_ENV,
        ),
        (LiveError::Config("x".into()), UP_ERR_CONFIG),
        (LiveError::Memory(MemoryError::Pagemap(io())), UP_ERR_MEMORY),
        (
            LiveError::Shm(ShmError::Invalid {
                path: "/x".into(),
                why: "y".into(),
            }),
            UP_ERR_SHM,
        ),
        (LiveError::Udp(io()), UP_ERR_UDP),
        (
            LiveError::Expose {
                addr: 0,
                len: 1,
                source: MapsError::Unmapped(0),
            },
            UP_ERR_EXPOSE,
        ),
        (LiveError::Invalid("x".into()), UP_ERR_INVALID),
        (LiveError::Timeout(Duration::from_secs(1)), UP_ERR_TIMEOUT),
        (LiveError::EngineGone, UP_ERR_ENGINE_GONE),
        (
            LiveError::Bootstrap(BootstrapError::Io {
                dir: "/x".into(),
                err: io(),
            }),
            UP_ERR_BOOTSTRAP,
        ),
        (LiveError::NoBootstrap, UP_ERR_NO_BOOTSTRAP),
        (
            LiveError::Failed {
                wr_id: 1,
                error: CompletionError::RemoteAccess,
                detail: String::new(),
            },
            UP_ERR_REMOTE_ACCESS,
        ),
        (
            LiveError::Failed {
                wr_id: 1,
                error: CompletionError::LocalAccess,
                detail: String::new(),
            },
            UP_ERR_LOCAL_ACCESS,
        ),
        (
            LiveError::Failed {
                wr_id: 1,
                error: CompletionError::RetryExceeded,
                detail: String::new(),
            },
            UP_ERR_RETRY_EXCEEDED,
        ),
        (
            LiveError::Failed {
                wr_id: 1,
                error: CompletionError::Invalid,
                detail: String::new(),
            },
            UP_ERR_WR_INVALID,
        ),
        (
            LiveError::Failed {
                wr_id: 1,
                error: CompletionError::Cancelled,
                detail: String::new(),
            },
            UP_ERR_CANCELLED,
        ),
        (
            LiveError::Failed {
                wr_id: 1,
                error: CompletionError::PeerGone,
                detail: "rank 1 exited or was killed".into(),
            },
            UP_ERR_PEER_GONE,
        ),
    ];
    let mut seen = HashSet::new();
    for (e, code) in &errors {
        assert_eq!(live_error_code(e), *code, "{e:?}");
        assert!(*code < 0, "{e:?}");
        assert!(seen.insert(*code), "code {code} used twice");
        // The message users get names what failed.
        let f = Fail::from(LiveError::Config(e.to_string()));
        assert!(!f.msg.is_empty());
    }
    for ce in [
        CompletionError::RemoteAccess,
        CompletionError::LocalAccess,
        CompletionError::RetryExceeded,
        CompletionError::Invalid,
        CompletionError::Cancelled,
        CompletionError::PeerGone,
    ] {
        assert_eq!(
            completion_error_code(ce),
            live_error_code(&LiveError::Failed {
                wr_id: 7,
                error: ce,
                detail: String::new(),
            })
        );
    }
    // The C-only codes are distinct from the runtime's.
    for c in [UP_ERR_NULL, UP_ERR_ARG, UP_ERR_PANIC] {
        assert!(seen.insert(c), "code {c} used twice");
    }
    // Active Access: one code per ActiveError variant that is not an argument error.
    use crate::active::{
        active_error_code, UP_ERR_AA_EXISTS, UP_ERR_AA_HANDLER, UP_ERR_AA_NO_LOG, UP_ERR_AA_THREAD,
    };
    use unpinned_aa_live::ActiveError;
    for (e, code) in [
        (ActiveError::LogExists(1), UP_ERR_AA_EXISTS),
        (ActiveError::NoLog(1), UP_ERR_AA_NO_LOG),
        (ActiveError::HandlerAttached(1), UP_ERR_AA_HANDLER),
        (ActiveError::Thread("x".into()), UP_ERR_AA_THREAD),
    ] {
        assert_eq!(active_error_code(&e), code, "{e:?}");
        assert!(seen.insert(code), "code {code} used twice");
    }
    for e in [
        ActiveError::BadIuid(2000),
        ActiveError::LogTooSmall(1),
        ActiveError::BadRange { addr: 0, len: 0 },
        ActiveError::TooLarge {
            addr: 0,
            len: 1 << 62,
        },
    ] {
        assert_eq!(active_error_code(&e), UP_ERR_ARG, "{e:?}");
    }
    // Every code has a name, a description, and they are all distinct.
    let named: HashSet<c_int> = code_names().map(|(_, c)| c).collect();
    assert_eq!(named.len(), CODES.len(), "duplicate code in the table");
    assert_eq!(
        named,
        seen.iter().copied().chain([UP_OK]).collect::<HashSet<_>>()
    );
    for (_, c) in code_names() {
        let t = text(c);
        assert!(!t.is_empty() && !t.contains("unknown"), "{c}: {t}");
    }
    assert!(text(12345).contains("unknown"));
    assert!(text(-1000).contains("unknown"));
}

/// `include/unpinned.h` declares exactly the codes, permission bits and op values of this crate.
#[test]
fn header_matches_the_rust_constants() {
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/unpinned.h"))
        .unwrap();
    let mut enum_codes = HashMap::new();
    let mut defines = HashMap::new();
    for line in h.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("#define UP_") {
            let mut it = rest.split_whitespace();
            let (name, val) = (it.next().unwrap(), it.next().unwrap_or(""));
            defines.insert(
                format!("UP_{name}"),
                val.trim_end_matches('u').parse::<i64>().unwrap(),
            );
        } else if t.starts_with("UP_") && t.contains(" = ") {
            let (name, rest) = t.split_once(" = ").unwrap();
            let val: String = rest
                .chars()
                .take_while(|c| *c == '-' || c.is_ascii_digit())
                .collect();
            enum_codes.insert(name.to_string(), val.parse::<c_int>().unwrap());
        }
    }
    let rust: HashMap<String, c_int> = code_names().map(|(n, c)| (n.to_string(), c)).collect();
    assert_eq!(
        enum_codes, rust,
        "up_error_t in unpinned.h and CODES in lib.rs differ"
    );
    assert_eq!(defines["UP_PERM_READ"], UP_PERM_READ as i64);
    assert_eq!(defines["UP_PERM_WRITE"], UP_PERM_WRITE as i64);
    assert_eq!(defines["UP_OP_UNKNOWN"], UP_OP_UNKNOWN as i64);
    assert_eq!(defines["UP_OP_WRITE"], UP_OP_WRITE as i64);
    assert_eq!(defines["UP_OP_READ"], UP_OP_READ as i64);
    // The struct layouts the header declares.
    assert_eq!(std::mem::size_of::<UpRegion>(), 24);
    assert_eq!(std::mem::size_of::<UpCompletion>(), 24);
    for f in [
        "up_init",
        "up_finalize",
        "up_rank",
        "up_size",
        "up_expose",
        "up_revoke",
        "up_exchange",
        "up_write",
        "up_read",
        "up_wait",
        "up_poll",
        "up_flush",
        "up_cancel_all",
        "up_barrier",
        "up_strerror",
        "up_last_error_message",
    ] {
        assert!(
            h.contains(&format!(" {f}(")) || h.contains(&format!("*{f}(")),
            "{f} is not declared in unpinned.h"
        );
    }
}

#[test]
fn null_pointers_give_up_err_null_and_a_message() {
    let mut key = 0u32;
    let mut id = 0u64;
    let mut c = UpCompletion::default();
    let mut regions = [UpRegion::default(); 2];
    let mut buf = [0u8; 8];
    let p = buf.as_mut_ptr() as *mut c_void;
    // SAFETY: every call gets NULL for `rt` (or `out`), which the functions check before any
    // use; the other pointers are valid locals.
    unsafe {
        assert_eq!(up_init(null_mut()), UP_ERR_NULL);
        assert!(last().contains("up_init: out is NULL"), "{}", last());
        assert_eq!(up_finalize(null_mut()), UP_OK, "finalize(NULL) is a no-op");
        assert_eq!(up_rank(null()), UP_ERR_NULL);
        assert_eq!(up_size(null()), UP_ERR_NULL);
        assert!(last().contains("up_size: rt is NULL"), "{}", last());
        assert_eq!(
            up_expose(null_mut(), p, 8, UP_PERM_READ, &mut key),
            UP_ERR_NULL
        );
        assert_eq!(up_revoke(null_mut(), 1), UP_ERR_NULL);
        assert_eq!(
            up_exchange(null_mut(), p, 8, 1, regions.as_mut_ptr(), 2),
            UP_ERR_NULL
        );
        assert_eq!(up_write(null_mut(), 1, p, 0, 1, 8, &mut id), UP_ERR_NULL);
        assert_eq!(up_read(null_mut(), 1, p, 0, 1, 8, &mut id), UP_ERR_NULL);
        assert_eq!(up_wait(null_mut(), 1, &mut c), UP_ERR_NULL);
        assert_eq!(up_poll(null_mut(), &mut c), UP_ERR_NULL);
        assert_eq!(up_flush(null_mut()), UP_ERR_NULL);
        assert_eq!(up_cancel_all(null_mut()), UP_ERR_NULL);
        assert_eq!(up_barrier(null_mut()), UP_ERR_NULL);
        assert!(last().contains("up_barrier: rt is NULL"), "{}", last());
    }
    assert_eq!((key, id), (0, 0), "nothing is written on failure");
}

#[test]
fn init_outside_the_launcher_says_how_to_run() {
    if std::env::var_os(unpinned_live::edge::ENV_RANK).is_some() {
        eprintln!("skipped: this test process runs under the launcher (UNPINNED_RANK is set)");
        return;
    }
    let mut rt: *mut UpRuntime = null_mut();
    // SAFETY: `rt` is a valid local pointer slot.
    assert_eq!(unsafe { up_init(&mut rt) }, UP_ERR_ENV);
    assert!(rt.is_null(), "*out untouched on failure");
    let m = last();
    assert!(
        m.contains("UNPINNED_RANK") && m.contains("unpinned run"),
        "{m}"
    );
}

#[test]
fn panics_are_caught_at_the_boundary() {
    let code = guard("up_test", || -> Result<c_int, Fail> { panic!("boom") });
    assert_eq!(code, UP_ERR_PANIC);
    let m = last();
    assert!(
        m.contains("up_test") && m.contains("boom") && m.contains("bug"),
        "{m}"
    );
    // Messages are per thread.
    std::thread::spawn(|| assert_eq!(last(), ""))
        .join()
        .unwrap();
}

/// Two in-process runtimes wrapped into C handles.
struct Pair([*mut UpRuntime; 2]);

impl Pair {
    fn new() -> Pair {
        let max = Config::new(0, 2).max_packet();
        let mut ts = network(2, max).into_iter();
        let mut h = [null_mut(); 2];
        for (r, slot) in h.iter_mut().enumerate() {
            let rt =
                ActiveRuntime::new(Config::new(r as u32, 2), Box::new(ts.next().unwrap())).unwrap();
            *slot = UpRuntime::into_handle(rt);
        }
        Pair(h)
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for h in self.0 {
            // SAFETY: the handles came from `into_handle` and are finalized once, here.
            assert_eq!(unsafe { up_finalize(h) }, UP_OK);
        }
    }
}

#[test]
fn entry_points_on_in_process_runtimes() {
    let pair = Pair::new();
    let [a, b] = pair.0;
    const LEN: usize = 64 << 10;
    let mut target = vec![0u8; LEN];
    let mut src: Vec<u8> = (0..LEN).map(|i| (i * 7 + 3) as u8).collect();
    let mut back = vec![0u8; LEN];
    let mut key = 0u32;
    let mut id = 0u64;
    let mut c = UpCompletion::default();
    let tp = target.as_mut_ptr() as *mut c_void;
    // SAFETY: the handles are live until `pair` drops at the end; every buffer outlives the
    // requests on it (each is waited for or flushed before the buffers are read or dropped).
    unsafe {
        assert_eq!(
            (up_rank(a), up_size(a), up_rank(b), up_size(b)),
            (0, 2, 1, 2)
        );
        assert_eq!(up_expose(b, tp, LEN, 0, &mut key), UP_ERR_ARG);
        assert_eq!(up_expose(b, tp, LEN, 4, &mut key), UP_ERR_ARG);
        assert!(last().contains("UP_PERM_READ"), "{}", last());
        assert_eq!(
            up_expose(b, null_mut(), LEN, UP_PERM_WRITE, &mut key),
            UP_ERR_NULL
        );
        assert_eq!(
            up_expose(b, tp, LEN, UP_PERM_WRITE, null_mut()),
            UP_ERR_NULL
        );
        assert_eq!(
            up_expose(b, 0x10 as *mut c_void, 4096, UP_PERM_WRITE, &mut key),
            UP_ERR_EXPOSE,
            "unmapped"
        );
        assert_eq!(
            up_expose(b, tp, LEN, UP_PERM_READ | UP_PERM_WRITE, &mut key),
            UP_OK
        );
        let addr = target.as_ptr() as u64;

        // A write, waited for.
        assert_eq!(
            up_write(a, 1, src.as_ptr() as *const c_void, addr, key, LEN, &mut id),
            UP_OK
        );
        assert_ne!(id, 0);
        assert_eq!(up_wait(a, id, &mut c), UP_OK);
        assert_eq!(
            c,
            UpCompletion {
                wr_id: id,
                len: LEN as u64,
                op: UP_OP_WRITE,
                status: UP_OK
            }
        );
        assert_eq!(up_wait(a, id, &mut c), UP_ERR_ARG, "already returned");
        assert!(last().contains("not outstanding"), "{}", last());
        assert_eq!(target, src);

        // A read, polled for.
        assert_eq!(
            up_read(
                a,
                1,
                back.as_mut_ptr() as *mut c_void,
                addr,
                key,
                LEN,
                &mut id
            ),
            UP_OK
        );
        let mut got = 0;
        for _ in 0..10_000 {
            got = up_poll(a, &mut c);
            if got != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(got, 1);
        assert_eq!(
            c,
            UpCompletion {
                wr_id: id,
                len: LEN as u64,
                op: UP_OP_READ,
                status: UP_OK
            }
        );
        assert_eq!(up_poll(a, &mut c), 0, "queue is empty");
        assert_eq!(up_poll(a, null_mut()), UP_ERR_NULL);
        assert_eq!(back, src);

        // Wrong key: the completion carries the remote access error, and up_wait fills *out.
        assert_eq!(
            up_write(
                a,
                1,
                src.as_ptr() as *const c_void,
                addr,
                key ^ 0x5a5a,
                LEN,
                &mut id
            ),
            UP_OK
        );
        c = UpCompletion::default();
        assert_eq!(up_wait(a, id, &mut c), UP_ERR_REMOTE_ACCESS);
        assert_eq!(
            (c.wr_id, c.op, c.status),
            (id, UP_OP_WRITE, UP_ERR_REMOTE_ACCESS)
        );
        assert!(last().contains("remote access"), "{}", last());

        // Refused before posting: to self, out of range, NULL source.
        assert_eq!(
            up_write(a, 0, src.as_ptr() as *const c_void, addr, key, LEN, &mut id),
            UP_ERR_INVALID
        );
        assert_eq!(
            up_read(
                a,
                9,
                back.as_mut_ptr() as *mut c_void,
                addr,
                key,
                LEN,
                &mut id
            ),
            UP_ERR_INVALID
        );
        assert!(last().contains("out of range"), "{}", last());
        assert_eq!(up_write(a, 1, null(), addr, key, LEN, &mut id), UP_ERR_NULL);

        // Flush: a fence, reporting the first failure; wr_id may be NULL.
        src.iter_mut().for_each(|x| *x = x.wrapping_add(1));
        assert_eq!(
            up_write(
                a,
                1,
                src.as_ptr() as *const c_void,
                addr,
                key,
                LEN,
                null_mut()
            ),
            UP_OK
        );
        assert_eq!(up_flush(a), UP_OK);
        assert_eq!(target, src);
        assert_eq!(
            up_write(
                a,
                1,
                src.as_ptr() as *const c_void,
                addr + 8,
                key,
                LEN,
                null_mut()
            ),
            UP_OK
        );
        assert_eq!(
            up_flush(a),
            UP_ERR_REMOTE_ACCESS,
            "past the end of the exposure"
        );
        assert_eq!(up_flush(a), UP_OK);

        // Cancel: every request posted before is completed (as it did, or cancelled) and
        // consumed; none is outstanding afterwards.
        let mut ids = Vec::new();
        for i in 0..16u64 {
            assert_eq!(
                up_write(
                    a,
                    1,
                    src.as_ptr() as *const c_void,
                    addr + (i % 2) * 8,
                    key,
                    LEN - 8,
                    &mut id
                ),
                UP_OK
            );
            ids.push(id);
        }
        let n = up_cancel_all(a);
        assert!((0..=16).contains(&n), "{n}");
        assert_eq!(up_poll(a, &mut c), 0, "everything was consumed");
        assert_eq!(
            up_wait(a, ids[0], &mut c),
            UP_ERR_ARG,
            "not outstanding any more"
        );
        assert_eq!(up_flush(a), UP_OK);
        assert_eq!(up_cancel_all(a), 0);

        // Revoke: later writes are refused.
        assert_eq!(up_revoke(b, key), 1);
        assert_eq!(up_revoke(b, key), 0);
        assert_eq!(
            up_write(a, 1, src.as_ptr() as *const c_void, addr, key, 16, &mut id),
            UP_OK
        );
        assert_eq!(up_wait(a, id, &mut c), UP_ERR_REMOTE_ACCESS);

        // No bootstrap directory: collectives say so.
        let mut regions = [UpRegion::default(); 2];
        assert_eq!(
            up_exchange(a, tp, LEN, key, regions.as_mut_ptr(), 2),
            UP_ERR_NO_BOOTSTRAP
        );
        assert_eq!(up_exchange(a, tp, LEN, key, null_mut(), 2), UP_ERR_NULL);
        assert_eq!(up_barrier(a), UP_ERR_NO_BOOTSTRAP);
    }
}

#[test]
fn exchange_and_barrier_with_a_bootstrap_directory() {
    let dir = std::env::temp_dir().join(format!("unpinned-capi-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let max = Config::new(0, 2).max_packet();
    let handles: Vec<usize> = network(2, max)
        .into_iter()
        .enumerate()
        .map(|(r, t)| {
            let mut cfg = Config::new(r as u32, 2);
            cfg.bootstrap_dir = Some(dir.clone());
            UpRuntime::into_handle(ActiveRuntime::new(cfg, Box::new(t)).unwrap()) as usize
        })
        .collect();
    let threads: Vec<_> = handles
        .iter()
        .map(|&h| {
            std::thread::spawn(move || {
                let h = h as *mut UpRuntime;
                let mut small = [UpRegion::default(); 1];
                let mut regions = [UpRegion::default(); 3];
                // SAFETY: `h` is a live handle used by this thread only until it is finalized
                // below; the region arrays are valid for the lengths passed.
                unsafe {
                    let me = up_rank(h) as u64;
                    assert_eq!(
                        up_exchange(
                            h,
                            (0x1000 * (me + 1)) as *const c_void,
                            10,
                            40 + me as u32,
                            small.as_mut_ptr(),
                            1
                        ),
                        UP_ERR_ARG
                    );
                    assert!(last().contains("nregions is 1"), "{}", last());
                    assert_eq!(
                        up_exchange(
                            h,
                            (0x1000 * (me + 1)) as *const c_void,
                            10,
                            40 + me as u32,
                            regions.as_mut_ptr(),
                            3
                        ),
                        UP_OK
                    );
                    assert_eq!(up_barrier(h), UP_OK);
                    assert_eq!(up_finalize(h), UP_OK);
                }
                regions
            })
        })
        .collect();
    for t in threads {
        let r = t.join().unwrap();
        assert_eq!(
            r[0],
            UpRegion {
                rank: 0,
                key: 40,
                addr: 0x1000,
                len: 10
            }
        );
        assert_eq!(
            r[1],
            UpRegion {
                rank: 1,
                key: 41,
                addr: 0x2000,
                len: 10
            }
        );
        assert_eq!(
            r[2],
            UpRegion::default(),
            "entries past up_size() are not written"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Active Access calls: NULL and out-of-range arguments are typed errors, never a crash.
#[test]
fn active_access_calls_refuse_bad_arguments() {
    use crate::active::*;
    unsafe extern "C" fn nop(_: *const UpAaEntry, _: *mut c_void) {}
    // SAFETY: NULL handles and pointers are part of the contract (UP_ERR_NULL).
    unsafe {
        assert_eq!(up_aa_create_log(null_mut(), 1, 4096), UP_ERR_NULL);
        assert_eq!(
            up_aa_assoc_pages(null_mut(), null_mut(), 1, UP_AA_ACTIVE_PUT, 1),
            UP_ERR_NULL
        );
        assert_eq!(
            up_aa_handler_start(null_mut(), 1, UP_AA_POLL, Some(nop), null_mut()),
            UP_ERR_NULL
        );
        assert_eq!(up_aa_handler_stop(null_mut(), 1, null_mut()), UP_ERR_NULL);
        assert_eq!(up_aa_flush(null_mut(), 1, 0, 0), UP_ERR_NULL);
        assert_eq!(up_aa_reply_setup(null_mut()), UP_ERR_NULL);
        assert_eq!(up_aa_reply_flush(null_mut(), 1), UP_ERR_NULL);
        assert_eq!(
            up_aa_write_active(null_mut(), 1, null_mut(), 0, 0, 8, null_mut()),
            UP_ERR_NULL
        );
        assert_eq!(
            up_atomic(null_mut(), 1, 0, 0, UP_ATOMIC_SWAP, 0, 0, null_mut()),
            UP_ERR_NULL
        );
    }
    let p = Pair::new();
    let h = p.0[1];
    // SAFETY: `h` is a live handle of the pair; other pointers are NULL or unused.
    unsafe {
        assert_eq!(up_aa_create_log(h, 2000, 4096), UP_ERR_ARG);
        assert_eq!(up_aa_create_log(h, 1, 4096), UP_OK);
        assert_eq!(up_aa_create_log(h, 1, 4096), UP_ERR_AA_EXISTS);
        assert_eq!(
            up_aa_assoc_pages(h, 0x1000 as *const c_void, 4096, 1 << 9, 1),
            UP_ERR_ARG
        );
        assert_eq!(
            up_aa_assoc_pages(h, 0x1000 as *const c_void, 4096, UP_AA_ACTIVE_PUT, 3),
            UP_ERR_AA_NO_LOG
        );
        assert_eq!(
            up_aa_handler_start(h, 1, 7, Some(nop), null_mut()),
            UP_ERR_ARG
        );
        assert_eq!(
            up_aa_handler_start(h, 1, UP_AA_SLEEP, None, null_mut()),
            UP_ERR_NULL
        );
        assert_eq!(
            up_aa_handler_start(h, 1, UP_AA_SLEEP, Some(nop), null_mut()),
            UP_OK
        );
        assert_eq!(
            up_aa_handler_start(h, 1, UP_AA_POLL, Some(nop), null_mut()),
            UP_ERR_AA_HANDLER
        );
        let mut st = UpAaHandlerStats::default();
        assert_eq!(up_aa_handler_stop(h, 1, &mut st), UP_OK);
        assert_eq!(st.entries, 0);
        assert_eq!(up_aa_handler_stop(h, 1, &mut st), UP_ERR_AA_HANDLER);
        assert_eq!(up_aa_reply_flush(h, 0), UP_ERR_CONFIG, "no reply words yet");
        assert_eq!(up_aa_reply_flush(h, 1), UP_ERR_INVALID, "this rank");
        assert_eq!(up_aa_reply_setup(h), UP_ERR_NO_BOOTSTRAP);
        assert_eq!(
            up_atomic(h, 0, 4, 1, UP_ATOMIC_SWAP, 0, 0, null_mut()),
            UP_ERR_INVALID
        );
        assert_eq!(up_atomic(h, 0, 8, 1, 99, 0, 0, null_mut()), UP_ERR_ARG);
    }
    assert!(last().contains("up_atomic"), "{}", last());
}

/// The reply-based active flush through the C ABI: after `up_aa_reply_flush`, the peer's
/// (slow) handler has processed every `up_aa_write_active`.
#[test]
fn reply_flush_through_the_c_abi() {
    use crate::active::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    unsafe extern "C" fn count(_: *const UpAaEntry, arg: *mut c_void) {
        std::thread::sleep(Duration::from_micros(200));
        // SAFETY: `arg` is the test's `AtomicU64`, alive until the handler is stopped.
        unsafe { &*(arg as *const AtomicU64) }.fetch_add(1, Ordering::SeqCst);
    }
    let dir = std::env::temp_dir().join(format!("unpinned-capi-reply-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let max = Config::new(0, 2).max_packet();
    let h: Vec<usize> = network(2, max)
        .into_iter()
        .enumerate()
        .map(|(r, t)| {
            let mut cfg = Config::new(r as u32, 2);
            cfg.bootstrap_dir = Some(dir.clone());
            UpRuntime::into_handle(ActiveRuntime::new(cfg, Box::new(t)).unwrap()) as usize
        })
        .collect();
    let (src, dst) = (h[0] as *mut UpRuntime, h[1] as *mut UpRuntime);
    let mem = unpinned_os::mapping::Mapping::anon(4096).unwrap();
    let counted = AtomicU64::new(0);
    let mut key = 0u32;
    // SAFETY: live handles; `mem` and `counted` outlive every use (the handler is stopped and
    // the runtimes finalized before they are dropped).
    unsafe {
        assert_eq!(
            up_expose(
                dst,
                mem.ptr() as *mut c_void,
                4096,
                UP_PERM_READ | UP_PERM_WRITE,
                &mut key
            ),
            UP_OK
        );
        assert_eq!(up_aa_create_log(dst, 5, 1 << 16), UP_OK);
        assert_eq!(
            up_aa_assoc_pages(dst, mem.ptr() as *const c_void, 4096, UP_AA_ACTIVE_PUT, 5),
            UP_OK
        );
        let arg = &counted as *const AtomicU64 as *mut c_void;
        assert_eq!(
            up_aa_handler_start(dst, 5, UP_AA_SLEEP, Some(count), arg),
            UP_OK
        );
        let d = h[1];
        let t = std::thread::spawn(move || up_aa_reply_setup(d as *mut UpRuntime));
        assert_eq!(up_aa_reply_setup(src), UP_OK);
        assert_eq!(t.join().unwrap(), UP_OK);
        let v = 9u64.to_le_bytes();
        for i in 0..20u64 {
            let p = v.as_ptr() as *const c_void;
            assert_eq!(
                up_aa_write_active(src, 1, p, mem.addr() + 8 * i, key, 8, null_mut()),
                UP_OK
            );
        }
        assert_eq!(up_aa_reply_flush(src, 1), UP_OK);
        assert_eq!(counted.load(Ordering::SeqCst), 20);
        let mut c = UpCompletion::default();
        assert_eq!(
            up_poll(dst, &mut c),
            0,
            "replies stay out of the target's completions"
        );
        assert_eq!(up_aa_handler_stop(dst, 5, null_mut()), UP_OK);
        assert_eq!(up_finalize(src), UP_OK);
        assert_eq!(up_finalize(dst), UP_OK);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
