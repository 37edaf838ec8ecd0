/*
 * unpinned.h -- C interface of the unpinned live runtime: RDMA without pinned memory.
 *
 * Any virtual address of the process can be the source or destination of a one-sided
 * transfer. Nothing is pinned or registered: up_expose() only records a range, a key and
 * permissions. A page that is not present when data arrives is faulted in by the runtime's
 * page-in thread and the block is retransmitted (spec part.md), so plain malloc() memory,
 * even never touched, works as is.
 *
 * Build (C99 or later, or C++):
 *
 *     cargo build --release -p unpinned-capi
 *     cc -std=c99 -I crates/capi/include prog.c target/release/libunpinned.a \
 *        -lpthread -ldl -lm -lrt -o prog
 *
 * (or link the shared library with -L target/release -lunpinned). Run N ranks with the
 * launcher, which sets the UNPINNED_* environment variables up_init() reads:
 *
 *     unpinned run -n 4 -- ./prog ARGS
 *
 * Conventions of every function below:
 *
 *   - Return value: UP_OK (0) or a non-negative result on success, a negative up_error_t
 *     code on failure. On failure the function writes nothing through its output pointers
 *     (exceptions are documented: up_wait fills its completion for failed requests), and
 *     up_last_error_message() returns a sentence saying what went wrong and what to do.
 *   - NULL: a required pointer that is NULL gives UP_ERR_NULL; it is never dereferenced.
 *   - Panics: no Rust panic crosses this interface; an internal error gives UP_ERR_PANIC.
 *   - Threads: a runtime handle may be used from any number of threads at once, except
 *     up_finalize(), which must be the last call on the handle. Completions go to one queue
 *     per runtime, shared by all threads (up_wait, up_poll, up_flush).
 *   - Ownership: the handle is owned by the caller from up_init() to up_finalize(). Memory
 *     passed in (exposed ranges, write sources, read destinations, region arrays) stays owned
 *     by the caller; the runtime never frees it, and never keeps a pointer to caller memory
 *     beyond the documented lifetimes.
 */
#ifndef UNPINNED_H
#define UNPINNED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes. One code per error of the Rust runtime (LiveError, CompletionError), plus
 * three of the C interface itself. All are negative; 0 is success. */
typedef enum up_error {
    UP_OK = 0,                 /* success */
    UP_ERR_ENV = -1,           /* UNPINNED_* launcher variables missing/malformed: run the
                                  program with `unpinned run -n N -- PROGRAM` */
    UP_ERR_CONFIG = -2,        /* inconsistent configuration (e.g. UNPINNED_SET overrides) */
    UP_ERR_MEMORY = -3,        /* page residency checks unavailable (/proc/self/pagemap) */
    UP_ERR_SHM = -4,           /* the shared-memory transport failed to open */
    UP_ERR_UDP = -5,           /* the UDP transport failed to open */
    UP_ERR_EXPOSE = -6,        /* range not mapped with the requested permissions */
    UP_ERR_INVALID = -7,       /* work request refused before it started: peer out of range,
                                  peer is this rank, or the range wraps around */
    UP_ERR_TIMEOUT = -8,       /* no completion within the operation timeout (60 s); the
                                  request may still be in flight */
    UP_ERR_ENGINE_GONE = -9,   /* the engine thread has stopped */
    UP_ERR_BOOTSTRAP = -10,    /* a bootstrap collective (exchange, barrier) failed: a rank
                                  died, or ranks called different collectives */
    UP_ERR_NO_BOOTSTRAP = -11, /* no bootstrap directory (not started by `unpinned run`) */
    /* Completion errors: the status of a finished request that failed. */
    UP_ERR_REMOTE_ACCESS = -20,  /* the target refused: outside its exposed ranges, wrong key,
                                    missing permission, or revoked; nothing was written */
    UP_ERR_LOCAL_ACCESS = -21,   /* the local buffer is not mapped */
    UP_ERR_RETRY_EXCEEDED = -22, /* the peer stopped answering (dead or unreachable) */
    UP_ERR_WR_INVALID = -23,     /* the engine rejected the request as invalid */
    UP_ERR_CANCELLED = -24,      /* withdrawn by up_cancel_all before it finished */
    UP_ERR_PEER_GONE = -25,      /* the target rank exited, was killed or left the job */
    /* Errors of the C interface. */
    UP_ERR_NULL = -30,  /* a required pointer argument is NULL */
    UP_ERR_ARG = -31,   /* an argument is out of range (permission bits, array too small,
                           waiting on an id that is not outstanding) */
    UP_ERR_PANIC = -32, /* internal error caught at the boundary: a bug, please report it */
    /* Errors of Active Access (up_aa_*). */
    UP_ERR_AA_EXISTS = -40,  /* the access log exists already */
    UP_ERR_AA_NO_LOG = -41,  /* no access log with this IUID: up_aa_create_log it first */
    UP_ERR_AA_HANDLER = -42, /* the log has a handler already (start), or none (stop) */
    UP_ERR_AA_THREAD = -43   /* the handler thread could not start */
} up_error_t;

/* Permissions of an exposed range (bit set). */
#define UP_PERM_READ 1u  /* peers may read the range (up_read) */
#define UP_PERM_WRITE 2u /* peers may write the range (up_write) */

/* Operation of a completion. */
#define UP_OP_UNKNOWN 0
#define UP_OP_WRITE 1
#define UP_OP_READ 2

/* Opaque runtime handle: one per process (rank). */
typedef struct up_runtime up_runtime_t;

/* One rank's exposed region, as gathered by up_exchange(). */
typedef struct up_region {
    uint32_t rank; /* the rank that exposed it */
    uint32_t key;  /* the key to pass as `rkey` to up_write / up_read */
    uint64_t addr; /* its virtual address in that rank (pass as `remote_addr`, plus offset) */
    uint64_t len;  /* its length in bytes */
} up_region_t;

/* A finished work request. */
typedef struct up_completion {
    uint64_t wr_id; /* the id up_write / up_read returned */
    uint64_t len;   /* bytes moved: the full length on success; do not rely on it on failure */
    int32_t op;     /* UP_OP_WRITE or UP_OP_READ */
    int32_t status; /* UP_OK, or UP_ERR_REMOTE_ACCESS, UP_ERR_LOCAL_ACCESS,
                       UP_ERR_RETRY_EXCEEDED, UP_ERR_WR_INVALID, UP_ERR_CANCELLED,
                       UP_ERR_PEER_GONE */
} up_completion_t;

/*
 * up_init: join the job described by the launcher's environment (UNPINNED_RANK, _SIZE,
 * _TRANSPORT, _SHM or _PEERS, _DIR; optional _POLICY, _SET) and start this rank's engine and
 * page-in threads.
 *
 * On success *out receives a new handle, owned by the caller until up_finalize(). Call it once
 * per process. Errors: UP_ERR_NULL (out is NULL), UP_ERR_ENV (not started by `unpinned run`),
 * UP_ERR_CONFIG, UP_ERR_MEMORY, UP_ERR_SHM, UP_ERR_UDP; *out is then untouched.
 * Thread-safety: may be called from any thread.
 */
int up_init(up_runtime_t **out);

/*
 * up_finalize: stop the runtime's threads and free the handle. NULL is accepted (no-op).
 *
 * Must be the last call on the handle, with no other thread using it. Requests still in
 * flight are abandoned: call up_flush() first, and up_barrier() if peers may still access
 * this rank's exposed memory (after finalize, their requests fail). Exposed memory is not
 * freed (it belongs to the caller). Returns UP_OK, or UP_ERR_PANIC.
 */
int up_finalize(up_runtime_t *rt);

/*
 * up_rank: this process's rank, 0 <= rank < up_size(rt). Returns the rank, or UP_ERR_NULL.
 * Thread-safe, never blocks.
 */
int up_rank(const up_runtime_t *rt);

/*
 * up_size: the number of ranks in the job. Returns it (>= 1), or UP_ERR_NULL.
 * Thread-safe, never blocks.
 */
int up_size(const up_runtime_t *rt);

/*
 * up_expose: let peers access [addr, addr+len) with `perms` (UP_PERM_READ | UP_PERM_WRITE),
 * and return the key peers must present in *key.
 *
 * Nothing is pinned or registered and the pages need not be present (fresh malloc() memory
 * is fine): a remote access to a missing page faults it in. The range must be mapped with at
 * least the permissions granted (checked once, here).
 *
 * Ownership: the memory stays the caller's. Until up_revoke(key) or up_finalize(), the caller
 * must keep the range mapped (do not free() it), and must not read bytes peers may be writing
 * until synchronized with them (e.g. by up_barrier()).
 * Errors: UP_ERR_NULL (rt, addr or key), UP_ERR_ARG (perms is 0 or has unknown bits),
 * UP_ERR_EXPOSE (range not mapped with these permissions), UP_ERR_ENGINE_GONE,
 * UP_ERR_TIMEOUT. Thread-safe.
 */
int up_expose(up_runtime_t *rt, void *addr, size_t len, unsigned perms, uint32_t *key);

/*
 * up_revoke: withdraw an exposure; later peer accesses with `key` complete with
 * UP_ERR_REMOTE_ACCESS at the peer. Returns 1 if the key was revoked, 0 if it was not known,
 * or a negative code (UP_ERR_NULL, UP_ERR_ENGINE_GONE, UP_ERR_TIMEOUT). Thread-safe.
 */
int up_revoke(up_runtime_t *rt, uint32_t key);

/*
 * up_exchange: all-gather of exposed regions. Every rank contributes (addr, len, key) and
 * gets every rank's contribution, by rank: regions[r] is rank r's region.
 *
 * A collective: every rank must call it (the same number of times, in the same order as other
 * collectives); it blocks until all ranks arrived (bootstrap timeout 30 s).
 * `regions` is caller-owned, with room for `nregions` >= up_size(rt) entries; only the first
 * up_size(rt) entries are written. `addr` is not dereferenced (it may be any value).
 * Errors: UP_ERR_NULL (rt or regions), UP_ERR_ARG (nregions too small; the rank still took
 * part in the collective, so the others are not left waiting), UP_ERR_BOOTSTRAP,
 * UP_ERR_NO_BOOTSTRAP, UP_ERR_CONFIG (ranks disagree on collectives).
 * Thread-safety: collectives of one rank must not run concurrently from several threads.
 */
int up_exchange(up_runtime_t *rt, const void *addr, size_t len, uint32_t key,
                up_region_t *regions, size_t nregions);

/*
 * up_write: post an RDMA write of `len` bytes from `local` to `remote_addr` at rank `peer`
 * (inside a region `peer` exposed with UP_PERM_WRITE and key `rkey`). Returns at once; the
 * outcome is the completion of the request (up_wait, up_poll or up_flush).
 *
 * On success *wr_id receives the request's id (nonzero; wr_id may be NULL if the caller only
 * uses up_flush). Ownership: [local, local+len) stays the caller's but must stay mapped and
 * unmodified until the completion has been returned; it need not be resident, pinned or
 * registered. Errors: UP_ERR_NULL (rt or local), UP_ERR_INVALID (peer out of range or this
 * rank, range wraps around), UP_ERR_ENGINE_GONE. A refused access at the peer is reported by
 * the completion (UP_ERR_REMOTE_ACCESS), not here. Thread-safe.
 */
int up_write(up_runtime_t *rt, uint32_t peer, const void *local, uint64_t remote_addr,
             uint32_t rkey, size_t len, uint64_t *wr_id);

/*
 * up_read: post an RDMA read of `len` bytes at `remote_addr` of rank `peer` (inside a region
 * exposed with UP_PERM_READ and key `rkey`) into `local`. Returns at once, like up_write.
 *
 * Ownership: [local, local+len) must stay mapped (and writable) and must not be accessed
 * until the completion has been returned; its pages need not be present. *wr_id as for
 * up_write. Errors: as up_write. Thread-safe.
 */
int up_read(up_runtime_t *rt, uint32_t peer, void *local, uint64_t remote_addr,
            uint32_t rkey, size_t len, uint64_t *wr_id);

/*
 * up_wait: block until request `wr_id` completes and return its completion in *out (out may
 * be NULL). Other completions stay queued.
 *
 * Returns UP_OK if the request succeeded. If it failed, returns its status (a completion
 * code, e.g. UP_ERR_REMOTE_ACCESS) and still fills *out. Other errors leave *out untouched:
 * UP_ERR_NULL (rt), UP_ERR_ARG (wr_id is not outstanding: never posted on this handle, or
 * already returned by up_wait, up_poll or up_flush), UP_ERR_TIMEOUT (60 s; the request is
 * still in flight, so its buffer is still lent: wait again, do not free it),
 * UP_ERR_ENGINE_GONE. Thread-safe; two threads must not wait for the same id.
 */
int up_wait(up_runtime_t *rt, uint64_t wr_id, up_completion_t *out);

/*
 * up_poll: take any one queued completion, without blocking.
 *
 * Returns 1 and fills *out if a completion was queued (check out->status: a failed request
 * is returned here like a successful one), 0 if none was, or UP_ERR_NULL (rt or out).
 * Thread-safe.
 */
int up_poll(up_runtime_t *rt, up_completion_t *out);

/*
 * up_flush: wait until every request this rank posted so far has completed, consume all
 * queued completions, and return UP_OK or the status of the first failed one (a fence for
 * this rank's requests; completions already taken by up_wait / up_poll count as done).
 * Errors: UP_ERR_NULL, completion codes, UP_ERR_TIMEOUT, UP_ERR_ENGINE_GONE. Thread-safe.
 */
int up_flush(up_runtime_t *rt);

/*
 * up_cancel_all: the way out of an error path. Withdraw every request this rank has in
 * flight (writes, reads, atomics; they complete as UP_ERR_CANCELLED), and consume every
 * queued completion (like up_flush, without waiting). When it returns, no request of the
 * handle is outstanding and the runtime reads and writes none of their buffers again: they
 * may be freed. What a cancelled request did at its peer is unknown (part of a write may have
 * landed). Returns the number of requests cancelled (>= 0), or UP_ERR_NULL,
 * UP_ERR_ENGINE_GONE. Thread-safety: any thread; requests other threads post concurrently
 * are either cancelled or start after it.
 */
int up_cancel_all(up_runtime_t *rt);

/*
 * up_barrier: block until every rank called up_barrier (a collective, see up_exchange). It
 * does not flush: call up_flush() (or wait for your requests) first if peers should see your
 * writes after the barrier. Errors: UP_ERR_NULL, UP_ERR_BOOTSTRAP, UP_ERR_NO_BOOTSTRAP.
 */
int up_barrier(up_runtime_t *rt);

/*
 * up_strerror: a static, NUL-terminated description of `code` ("unknown unpinned error
 * code" for values not in up_error_t). Never NULL; do not free. Thread-safe.
 */
const char *up_strerror(int code);

/*
 * up_last_error_message: the detailed message of the most recent failed up_* call made by
 * the calling thread (messages are per thread, so concurrent threads do not overwrite each
 * other's), e.g. "up_init: environment variable UNPINNED_RANK: not set (...run the program
 * through the launcher)". Successful calls leave it unchanged; "" if no call failed yet.
 * Never NULL; do not free. Valid until the next failing up_* call on the same thread or the
 * thread's exit: copy it if you need it longer.
 */
const char *up_last_error_message(void);

/* ------------------------------------------------------------------------------------------
 * Active Access (spec active-access.md): puts and gets on marked pages are logged, with or
 * without their data, into an access log (a ring buffer in this process), and a handler thread
 * of this process processes the log. The put/get interface does not change: peers use
 * up_write / up_read. Pages must also be exposed (up_expose) for peers to reach them.
 *
 * Page bits (up_aa_assoc_pages), the IOMMU page-table extension of the spec:
 *   UP_AA_W, UP_AA_R   puts may write / gets may read the page
 *   UP_AA_WL, UP_AA_WLD  log puts (metadata) / with their data
 *   UP_AA_RL, UP_AA_RLD  log gets (metadata) / with the data returned
 *   UP_AA_E            faults (W=0 or R=0 without an active meaning) go to the access log
 * Meanings: W=0,WL=1,WLD=1 = active put (the page is not written; the handler gets the data);
 * W=1,WL=1 = written and counted; R=1,RL=1 = served and counted (RLD: data copied to the log);
 * R=0,RL=1 = a flushing page: a get on it is held until the log is drained (up_aa_flush).
 * A full log is never overwritten: the sender's packet is refused and resent (back-pressure).
 * ------------------------------------------------------------------------------------------ */
#define UP_AA_W 1u
#define UP_AA_R 2u
#define UP_AA_WL 4u
#define UP_AA_WLD 8u
#define UP_AA_RL 16u
#define UP_AA_RLD 32u
#define UP_AA_E 64u
/* Common combinations. */
#define UP_AA_ACTIVE_PUT 78u /* R | WL | WLD | E */
#define UP_AA_COUNT 87u      /* W | R | WL | RL | E: puts and gets served and counted */
#define UP_AA_FLUSH_PAGE 16u /* RL: the flushing page of up_aa_flush */

/* How a handler learns of new entries. */
#define UP_AA_POLL 0  /* busy-polls the log (yielding now and then) */
#define UP_AA_SLEEP 1 /* sleeps on a futex the runtime wakes (the interrupt analogue) */

/* Kinds of log entries. */
#define UP_AA_ENTRY_ACTIVE_PUT 1
#define UP_AA_ENTRY_PUT_META 2
#define UP_AA_ENTRY_PUT_DATA 3
#define UP_AA_ENTRY_GET_META 4
#define UP_AA_ENTRY_GET_DATA 5
#define UP_AA_ENTRY_ACTIVE_GET 6
#define UP_AA_ENTRY_FAULT 7

/* Remote atomic operations (up_atomic). */
#define UP_ATOMIC_CAS 1       /* if word == compare: word = operand */
#define UP_ATOMIC_FETCH_ADD 2 /* word += operand */
#define UP_ATOMIC_SWAP 3      /* word = operand */

/* One access-log entry, as passed to a handler. */
typedef struct up_aa_entry {
    uint32_t kind;       /* UP_AA_ENTRY_* */
    uint32_t source;     /* rank that made the access */
    uint64_t addr;       /* target address of the whole access (in this process) */
    uint64_t access_len; /* bytes the access touched */
    const void *data;    /* logged data, valid during the call only; NULL if none */
    uint64_t data_len;   /* bytes of data */
} up_aa_entry_t;

/* A handler: called on the handler thread for every entry, in log order. */
typedef void (*up_aa_handler_fn)(const up_aa_entry_t *entry, void *arg);

/* What a stopped handler did. */
typedef struct up_aa_handler_stats {
    uint64_t entries;          /* entries processed */
    uint64_t wakeups;          /* times it found new entries after an empty log */
    uint64_t notify_median_ns; /* median delay from publication to the handler, ns */
} up_aa_handler_stats_t;

/*
 * up_aa_create_log: create access log `iuid` (0..1023) of `size_bytes` (>= 64; an entry takes
 * 32 bytes plus its data rounded up to 8). Errors: UP_ERR_NULL, UP_ERR_ARG, UP_ERR_AA_EXISTS.
 * Thread-safe.
 */
int up_aa_create_log(up_runtime_t *rt, uint32_t iuid, uint32_t size_bytes);

/*
 * up_aa_assoc_pages: mark every page of [addr, addr+len) (rounded out to 4 KiB pages) with
 * `bits` (UP_AA_*) and log `iuid`. `addr` is not dereferenced. The spec's
 * assoc_page(addr, actions, handler) is up_aa_assoc_pages + up_aa_handler_start.
 * Errors: UP_ERR_NULL (rt), UP_ERR_ARG (unknown bits, IUID out of range, empty or wrapping
 * range, more than 16 GiB of pages in one call), UP_ERR_AA_NO_LOG (logging bits name a log that does not exist). Thread-safe.
 */
int up_aa_assoc_pages(up_runtime_t *rt, const void *addr, size_t len, unsigned bits,
                      uint32_t iuid);

/*
 * up_aa_clear_pages: make [addr, addr+len) plain pages again. Errors: UP_ERR_NULL, UP_ERR_ARG.
 */
int up_aa_clear_pages(up_runtime_t *rt, const void *addr, size_t len);

/*
 * up_aa_handler_start: start the handler thread of log `iuid`: fn(entry, arg) is called for
 * every entry, in order, on that thread (one handler per log). `notify` is UP_AA_POLL or
 * UP_AA_SLEEP. Ownership: fn and arg must stay usable from that thread until
 * up_aa_handler_stop or up_finalize returns; synchronize what arg points to yourself.
 * Errors: UP_ERR_NULL (rt or fn), UP_ERR_ARG (notify), UP_ERR_AA_NO_LOG, UP_ERR_AA_HANDLER,
 * UP_ERR_AA_THREAD. Thread-safe.
 */
int up_aa_handler_start(up_runtime_t *rt, uint32_t iuid, int notify, up_aa_handler_fn fn,
                        void *arg);

/*
 * up_aa_handler_stop: let the handler of log `iuid` process every entry published so far,
 * stop it, and report in *out (out may be NULL). Call it after a barrier, or peers' later
 * accesses stay in the log unprocessed. Errors: UP_ERR_NULL, UP_ERR_AA_HANDLER (none running).
 */
int up_aa_handler_stop(up_runtime_t *rt, uint32_t iuid, up_aa_handler_stats_t *out);

/*
 * up_aa_flush: the active flush. Returns when rank `peer`'s handler has processed every
 * access this rank issued before the call, whose log is the one of the flushing page at
 * `flush_addr` of `peer` (marked UP_AA_FLUSH_PAGE there, exposed readable with `rkey`).
 * It first completes all of this rank's requests (as up_flush: completions are consumed),
 * then issues a get that the peer holds until its log is drained. Independent of up_flush,
 * which does not wait for handlers. Errors: as up_flush and up_read.
 */
int up_aa_flush(up_runtime_t *rt, uint32_t peer, uint64_t flush_addr, uint32_t rkey);

/*
 * The reply-based active flush (no flushing page): peers' handlers reply with an RDMA write of
 * how many active puts of this rank they processed.
 * up_aa_reply_setup: collective (every rank): expose this rank's reply words and tell every
 * peer where to reply. Errors: UP_ERR_NULL, those of up_exchange.
 * up_aa_write_active: an active put: as up_write, to a page of `peer` marked for active puts
 * (UP_AA_ACTIVE_PUT), counted for up_aa_reply_flush. Use it for every put to active pages:
 * the peer cannot tell counted puts from plain ones, and a plain up_write there would make a
 * later up_aa_reply_flush return early.
 * up_aa_reply_flush: complete this rank's requests (as up_flush), then wait until `peer`'s
 * handlers have processed every up_aa_write_active issued to it before the call.
 * UP_ERR_CONFIG without up_aa_reply_setup, UP_ERR_TIMEOUT if the peer never confirms (e.g.
 * it runs no handler). Independent of up_flush and up_aa_flush.
 */
int up_aa_reply_setup(up_runtime_t *rt);
int up_aa_write_active(up_runtime_t *rt, uint32_t peer, const void *local, uint64_t remote_addr,
                       uint32_t rkey, size_t len, uint64_t *wr_id);
int up_aa_reply_flush(up_runtime_t *rt, uint32_t peer);

/*
 * up_atomic: a remote atomic on the 64-bit word at `remote_addr` of rank `peer` (8-byte
 * aligned, inside a region exposed read-write with `rkey`): UP_ATOMIC_CAS (compare, operand),
 * UP_ATOMIC_FETCH_ADD (operand), UP_ATOMIC_SWAP (operand). Blocks until done; the word's
 * previous value goes to *old (old may be NULL). Executed exactly once at the target, with a
 * real atomic instruction (local atomics there are coherent with it).
 * Errors: UP_ERR_NULL, UP_ERR_ARG (op), UP_ERR_INVALID (peer, alignment),
 * UP_ERR_REMOTE_ACCESS (refused: range, key, permission), UP_ERR_RETRY_EXCEEDED,
 * UP_ERR_ENGINE_GONE. Thread-safe.
 */
int up_atomic(up_runtime_t *rt, uint32_t peer, uint64_t remote_addr, uint32_t rkey, int op,
              uint64_t operand, uint64_t compare, uint64_t *old);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UNPINNED_H */
