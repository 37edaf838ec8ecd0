/*
 * ring.c -- the unpinned C interface on plain malloc() memory.
 *
 * Every rank mallocs one buffer (never registered, never pinned, never touched in its first
 * half) and exposes it. The buffer has two halves:
 *
 *     [0, HALF)        inbox: the left neighbour writes its message here
 *     [HALF, 2*HALF)   outbox: this rank's own message, read by the right neighbour
 *
 * Each rank writes its message into its right neighbour's inbox (up_write) and reads its left
 * neighbour's outbox into another fresh malloc() buffer (up_read), waits for both, flushes,
 * meets the others at a barrier, then checks both copies byte for byte. The untouched pages
 * of the inbox and of the read buffer are faulted in by the runtime on the fly.
 *
 * Build and run (see docs/user-guide.md, "The C API"):
 *
 *     cc -std=c99 -I crates/capi/include crates/capi/examples/c/ring.c \
 *        target/release/libunpinned.a -lpthread -ldl -lm -lrt -o ring
 *     unpinned run -n 3 -- ./ring
 *
 * Exit status 0 if every check passed; 1 (with a message on stderr) otherwise.
 */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unpinned.h"

/* 160 KiB: above glibc's mmap threshold, so malloc() hands out fresh, non-resident pages,
 * and 10 blocks of 16 KiB per transfer. */
#define HALF ((size_t)160 * 1024)

/* The message of rank `r`: a text line, then a rank-dependent byte pattern. */
static void fill_message(unsigned char *p, unsigned r, unsigned n) {
    size_t i;
    int head = snprintf((char *)p, HALF, "hello from rank %u of %u", r, n);
    for (i = (size_t)head + 1; i < HALF; i++) {
        p[i] = (unsigned char)(i * 31u + r * 7u + 1u);
    }
}

/* Index of the first byte where `p` differs from rank r's message, or HALF. */
static size_t check_message(const unsigned char *p, unsigned r, unsigned n) {
    static unsigned char expect[HALF];
    size_t i;
    fill_message(expect, r, n);
    for (i = 0; i < HALF; i++) {
        if (p[i] != expect[i]) {
            return i;
        }
    }
    return HALF;
}

/* Report a failed call with both the code's description and the detailed message. The error
 * path: withdraw every request still in flight (their buffers are not used any more once
 * up_cancel_all returns; here the process then exits, which frees them) and finalize. */
static int fail(up_runtime_t *rt, const char *what, int code, int rank) {
    if (rank >= 0) {
        fprintf(stderr, "ring: rank %d: ", rank);
    } else {
        fprintf(stderr, "ring: ");
    }
    fprintf(stderr, "%s failed: %s (%d): %s\n", what, up_strerror(code), code,
            up_last_error_message());
    if (rt != NULL) {
        up_cancel_all(rt);
        up_finalize(rt);
    }
    return 1;
}

int main(void) {
    up_runtime_t *rt = NULL;
    up_region_t *regions;
    up_completion_t c;
    unsigned char *buf, *got;
    uint32_t key;
    uint64_t wr_write, wr_read;
    unsigned rank, size, left, right;
    size_t bad;
    time_t start;
    int rc, have_read = 0;

    rc = up_init(&rt);
    if (rc != UP_OK) {
        return fail(NULL, "up_init", rc, -1);
    }
    rank = (unsigned)up_rank(rt);
    size = (unsigned)up_size(rt);
    if (size < 2) {
        fprintf(stderr, "ring: needs at least 2 ranks (unpinned run -n 2 -- ./ring)\n");
        up_finalize(rt);
        return 1;
    }
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;

    buf = malloc(2 * HALF); /* plain malloc: no registration, no pinning */
    got = malloc(HALF);
    regions = calloc(size, sizeof *regions);
    if (buf == NULL || got == NULL || regions == NULL) {
        fprintf(stderr, "ring: rank %u: out of memory\n", rank);
        return 1;
    }
    fill_message(buf + HALF, rank, size); /* the outbox; the inbox stays untouched */

    if ((rc = up_expose(rt, buf, 2 * HALF, UP_PERM_READ | UP_PERM_WRITE, &key)) != UP_OK) {
        return fail(rt, "up_expose", rc, (int)rank);
    }
    if ((rc = up_exchange(rt, buf, 2 * HALF, key, regions, size)) != UP_OK) {
        return fail(rt, "up_exchange", rc, (int)rank);
    }

    /* My message into my right neighbour's inbox; my left neighbour's outbox into `got`. */
    rc = up_write(rt, right, buf + HALF, regions[right].addr, regions[right].key, HALF, &wr_write);
    if (rc != UP_OK) {
        return fail(rt, "up_write", rc, (int)rank);
    }
    rc = up_read(rt, left, got, regions[left].addr + HALF, regions[left].key, HALF, &wr_read);
    if (rc != UP_OK) {
        return fail(rt, "up_read", rc, (int)rank);
    }
    if ((rc = up_wait(rt, wr_write, &c)) != UP_OK) {
        return fail(rt, "up_wait (write)", rc, (int)rank);
    }
    if (c.op != UP_OP_WRITE || c.len != HALF || c.wr_id != wr_write) {
        fprintf(stderr, "ring: rank %u: unexpected write completion\n", rank);
        return 1;
    }
    /* The read with the non-blocking interface: poll until its completion shows up. */
    start = time(NULL);
    while (!have_read) {
        rc = up_poll(rt, &c);
        if (rc < 0) {
            return fail(rt, "up_poll", rc, (int)rank);
        }
        if (rc == 1) {
            if (c.wr_id != wr_read || c.op != UP_OP_READ) {
                fprintf(stderr, "ring: rank %u: unexpected completion %llu\n", rank,
                        (unsigned long long)c.wr_id);
                return 1;
            }
            if (c.status != UP_OK) {
                return fail(rt, "up_read (completion)", c.status, (int)rank);
            }
            have_read = 1;
        } else if (time(NULL) - start > 30) {
            fprintf(stderr, "ring: rank %u: no read completion after 30 s\n", rank);
            return 1;
        } else {
            sched_yield();
        }
    }
    if ((rc = up_flush(rt)) != UP_OK) {
        return fail(rt, "up_flush", rc, (int)rank);
    }
    /* After the barrier every rank's write into my inbox has completed. */
    if ((rc = up_barrier(rt)) != UP_OK) {
        return fail(rt, "up_barrier", rc, (int)rank);
    }

    if ((bad = check_message(buf, left, size)) != HALF) {
        fprintf(stderr, "ring: rank %u: inbox byte %zu differs from rank %u's message\n", rank, bad,
                left);
        return 1;
    }
    if ((bad = check_message(got, left, size)) != HALF) {
        fprintf(stderr, "ring: rank %u: read byte %zu differs from rank %u's message\n", rank, bad,
                left);
        return 1;
    }
    printf("rank %u of %u: ok: \"%s\" written into my inbox, %zu bytes read from rank %u\n", rank,
           size, (const char *)buf, HALF, left);
    fflush(stdout);

    /* Peers stopped accessing my memory before the first barrier (each waited for its own
     * requests); the second one just lets every rank finish its checks before any shuts down. */
    if ((rc = up_barrier(rt)) != UP_OK) {
        return fail(rt, "up_barrier", rc, (int)rank);
    }
    up_finalize(rt);
    free(regions);
    free(got);
    free(buf);
    return 0;
}
