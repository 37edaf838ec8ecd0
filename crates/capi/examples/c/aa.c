/*
 * aa.c -- Active Access and remote atomics from C.
 *
 * Every rank allocates three pages and exposes them:
 *
 *     page 0   mailbox, marked UP_AA_ACTIVE_PUT: puts into it are not written; the handler
 *              thread of this rank gets each put's data and adds it up
 *     page 1   flushing page (UP_AA_FLUSH_PAGE) for up_aa_flush
 *     page 2   a plain counter word, target of remote fetch-and-adds
 *
 * Every rank puts ROUNDS values into every other rank's mailbox with plain up_write, then
 * calls up_aa_flush towards it: when that returns, the other rank's handler has processed
 * them. Ranks other than 0 add (rank + 1) to rank 0's counter with up_atomic. After a
 * barrier, each rank checks its handler's count and sum, that its mailbox was never written,
 * and rank 0 checks the counter.
 *
 *     cc -std=c99 -I crates/capi/include crates/capi/examples/c/aa.c \
 *        target/release/libunpinned.a -lpthread -ldl -lm -lrt -o aa
 *     unpinned run -n 3 -- ./aa [poll|sleep]
 *
 * Exit status 0 if every check passed; 1 (with a message on stderr) otherwise.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unpinned.h"

#define PAGE ((size_t)4096)
#define ROUNDS 200u
#define IUID 1u

/* What the handler accumulates (written by the handler thread only; read after
 * up_aa_handler_stop, which joins it). */
struct tally {
    unsigned long long count;
    unsigned long long sum;
    unsigned long long bad;
};

static void on_entry(const up_aa_entry_t *e, void *arg) {
    struct tally *t = (struct tally *)arg;
    unsigned long long v = 0;
    if (e->kind != UP_AA_ENTRY_ACTIVE_PUT || e->data_len != sizeof v) {
        t->bad++;
        return;
    }
    memcpy(&v, e->data, sizeof v);
    t->count++;
    t->sum += v;
}

/* The error path: report, withdraw every request still in flight (up_cancel_all: their
 * buffers are not used any more once it returns; the process then exits, which frees them),
 * finalize. */
static int fail(up_runtime_t *rt, const char *what, int code, int rank) {
    fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, what, up_strerror(code),
            up_last_error_message());
    up_cancel_all(rt);
    up_finalize(rt);
    return 1;
}

int main(int argc, char **argv) {
    up_runtime_t *rt = NULL;
    int notify = (argc > 1 && strcmp(argv[1], "poll") == 0) ? UP_AA_POLL : UP_AA_SLEEP;
    int rc = up_init(&rt);
    if (rc != UP_OK) {
        fprintf(stderr, "up_init failed: %s: %s\n", up_strerror(rc), up_last_error_message());
        return 1;
    }
    int me = up_rank(rt), n = up_size(rt);
    unsigned char *buf = NULL;
    if (posix_memalign((void **)&buf, PAGE, 3 * PAGE) != 0) {
        return fail(rt, "posix_memalign", UP_ERR_ARG, me);
    }
    memset(buf, 0, 3 * PAGE);
    uint32_t key = 0;
    struct tally tally = {0, 0, 0};
    if ((rc = up_expose(rt, buf, 3 * PAGE, UP_PERM_READ | UP_PERM_WRITE, &key)) != UP_OK)
        return fail(rt, "up_expose", rc, me);
    if ((rc = up_aa_create_log(rt, IUID, 1u << 14)) != UP_OK)
        return fail(rt, "up_aa_create_log", rc, me);
    if ((rc = up_aa_assoc_pages(rt, buf, PAGE, UP_AA_ACTIVE_PUT, IUID)) != UP_OK)
        return fail(rt, "up_aa_assoc_pages (mailbox)", rc, me);
    if ((rc = up_aa_assoc_pages(rt, buf + PAGE, PAGE, UP_AA_FLUSH_PAGE, IUID)) != UP_OK)
        return fail(rt, "up_aa_assoc_pages (flush page)", rc, me);
    if ((rc = up_aa_handler_start(rt, IUID, notify, on_entry, &tally)) != UP_OK)
        return fail(rt, "up_aa_handler_start", rc, me);

    up_region_t *regions = calloc((size_t)n, sizeof *regions);
    unsigned long long *vals = calloc(ROUNDS, sizeof *vals);
    if (regions == NULL || vals == NULL) return fail(rt, "calloc", UP_ERR_ARG, me);
    if ((rc = up_exchange(rt, buf, 3 * PAGE, key, regions, (size_t)n)) != UP_OK)
        return fail(rt, "up_exchange", rc, me);

    for (unsigned i = 0; i < ROUNDS; i++) vals[i] = (unsigned long long)me * 1000u + i + 1u;
    for (int p = 0; p < n; p++) {
        if (p == me) continue;
        for (unsigned i = 0; i < ROUNDS; i++) {
            rc = up_write(rt, (uint32_t)p, &vals[i], regions[p].addr + 8u * (i % 512u),
                          regions[p].key, sizeof vals[i], NULL);
            if (rc != UP_OK) return fail(rt, "up_write", rc, me);
        }
        /* The other rank's handler has processed all of them when this returns. */
        if ((rc = up_aa_flush(rt, (uint32_t)p, regions[p].addr + PAGE, regions[p].key)) != UP_OK)
            return fail(rt, "up_aa_flush", rc, me);
    }
    if (me != 0) {
        uint64_t old = 0;
        rc = up_atomic(rt, 0, regions[0].addr + 2 * PAGE, regions[0].key, UP_ATOMIC_FETCH_ADD,
                       (uint64_t)me + 1u, 0, &old);
        if (rc != UP_OK) return fail(rt, "up_atomic", rc, me);
    }
    if ((rc = up_barrier(rt)) != UP_OK) return fail(rt, "up_barrier", rc, me);

    up_aa_handler_stats_t st;
    if ((rc = up_aa_handler_stop(rt, IUID, &st)) != UP_OK)
        return fail(rt, "up_aa_handler_stop", rc, me);
    unsigned long long want_count = (unsigned long long)(n - 1) * ROUNDS, want_sum = 0;
    for (int r = 0; r < n; r++) {
        if (r == me) continue;
        for (unsigned i = 0; i < ROUNDS; i++) want_sum += (unsigned long long)r * 1000u + i + 1u;
    }
    int ok = tally.count == want_count && tally.sum == want_sum && tally.bad == 0 &&
             st.entries == want_count;
    for (size_t i = 0; i < PAGE; i++) {
        if (buf[i] != 0) ok = 0; /* active puts never write the mailbox */
    }
    unsigned long long counter = 0, want_counter = 0;
    if (me == 0) {
        memcpy(&counter, buf + 2 * PAGE, sizeof counter);
        for (int r = 1; r < n; r++) want_counter += (unsigned long long)r + 1u;
        if (counter != want_counter) ok = 0;
    }
    if (!ok) {
        fprintf(stderr, "rank %d: handler saw %llu entries (want %llu), sum %llu (want %llu), "
                        "%llu bad; counter %llu (want %llu)\n",
                me, tally.count, want_count, tally.sum, want_sum, tally.bad, counter,
                want_counter);
        return 1;
    }
    if ((rc = up_barrier(rt)) != UP_OK) return fail(rt, "up_barrier", rc, me);
    printf("rank %d of %d: aa ok: %llu active puts handled (%s), sum %llu, %llu wake-ups, "
           "notification median %llu ns\n",
           me, n, tally.count, notify == UP_AA_POLL ? "poll" : "sleep", tally.sum,
           (unsigned long long)st.wakeups, (unsigned long long)st.notify_median_ns);
    up_finalize(rt);
    free(vals);
    free(regions);
    free(buf);
    return 0;
}
