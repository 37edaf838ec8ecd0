/* OSU-style OpenSHMEM micro-benchmark: one source for every OpenSHMEM >= 1.4 implementation
 * (unpinned's and Open MPI's), run with exactly 2 PEs. PE 0 is the origin, PE 1 the target.
 *
 *   put_lat / get_lat   blocking shmem_putmem + shmem_quiet / shmem_getmem, one at a time
 *   put_bw  / get_bw    windows of 64 shmem_putmem_nbi / shmem_getmem_nbi, then shmem_quiet
 *   put_rate            8 B shmem_putmem, windows of 256, then shmem_quiet (message rate)
 *   fadd_lat / cswap_lat shmem_long_atomic_fetch_add / _compare_swap on PE 1's word
 *   barrier_lat         shmem_barrier_all
 *   bcast_lat           shmem_broadcast64 from PE 0 (the slower PE's mean call time)
 *
 * Output (stdout of PE 0): CSV, header `test,size_bytes,iterations,time_per_op_us`, one line per
 * measurement. time_per_op_us is the mean time of one operation after the warm-up; for the
 * windowed tests it is the window's time divided by its operations (bandwidth = size / time,
 * rate = 1 / time). Iterations are scaled by size so that every line takes a bounded time.
 *
 * Options: -q quick (tiny sizes, few iterations: a smoke test), -m MAX_BYTES (default 4 MiB),
 * -f FACTOR (2 or 4, default 4: sizes are MAX / FACTOR^k down to 16, and 8), -t TESTS (comma
 * list of the names above, default all). Transfers are checked (first and last byte): a wrong
 * byte ends the job with exit code 1 and a message naming the test and size.
 */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 64
#define RATE_WINDOW 256

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

struct opts {
    int quick;
    size_t max_bytes;
    size_t factor;
    const char *tests;
};

static int wanted(const struct opts *o, const char *name) {
    if (!o->tests) return 1;
    size_t n = strlen(name);
    for (const char *p = o->tests; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* Most iterations of a one-at-a-time test of `size` bytes: ~budget bytes moved, within
 * [lo, hi]. The time budget below may lower it. */
static long iters_for(const struct opts *o, size_t size) {
    long hi = o->quick ? 50 : 10000, lo = o->quick ? 3 : 20;
    double budget = o->quick ? (double)(1 << 20) : (double)(256u << 20);
    long n = (long)(budget / (double)size);
    return n > hi ? hi : n < lo ? lo : n;
}

/* Most windows of a windowed test of `size` bytes. */
static long windows_for(const struct opts *o, size_t size) {
    long hi = o->quick ? 5 : 500, lo = o->quick ? 2 : 4;
    double budget = o->quick ? (double)(4 << 20) : (double)(1u << 30);
    long n = (long)(budget / ((double)size * WINDOW));
    return n > hi ? hi : n < lo ? lo : n;
}

/* Warm-up iterations before a measurement of at most `most` iterations. */
static long warmup_for(long most) {
    long w = most / 20;
    return w < 2 ? 2 : w > 200 ? 200 : w;
}

/* The time one line may take (warm-up + measurement), about. */
static double budget_us(const struct opts *o) { return o->quick ? 20e3 : 250e3; }

static long *agreed; /* symmetric: PE 0's decision, for collective tests */

/* Collective: PE 0's `n` on every PE. */
static long agree(int me, long n) {
    if (me == 0) {
        *agreed = n;
        shmem_long_p(agreed, n, 1);
    }
    shmem_barrier_all();
    return *agreed;
}

static void row(const char *test, size_t size, long iters, double us) {
    printf("%s,%zu,%ld,%.4f\n", test, size, iters, us);
    fflush(stdout);
}

static void check(const char *test, size_t size, const unsigned char *buf, unsigned char want) {
    if (buf[0] != want || buf[size - 1] != want) {
        fprintf(stderr,
                "osu_shmem: PE %d: %s at %zu B: wrong bytes (first %u, last %u, expected %u)\n",
                shmem_my_pe(), test, size, buf[0], buf[size - 1], want);
        shmem_global_exit(1);
    }
}

/* Run the body (the last arguments; it may use `i`, the iteration number from 0) for the
 * warm-up (warmup_for(most) times, or fewer once it took a quarter of the line's budget), then
 * up to `most` times, stopping once the line's budget is spent (the clock is read every
 * iteration when one takes more than a microsecond, else every 64th); `iters` is the count,
 * `us` the mean time of one. */
#define MEASURE(o, most, iters, us, ...)                                                       \
    do {                                                                                       \
        long warm_ = warmup_for(most), i = 0;                                                  \
        double t0_ = now_us();                                                                 \
        for (; i < warm_; i++) {                                                               \
            __VA_ARGS__;                                                                       \
            if (now_us() - t0_ > budget_us(o) / 4) warm_ = i + 1;                              \
        }                                                                                      \
        long every_ = (now_us() - t0_) / (double)warm_ > 1.0 ? 1 : 64;                         \
        (iters) = 0;                                                                           \
        t0_ = now_us();                                                                        \
        while ((iters) < (most)) {                                                             \
            __VA_ARGS__;                                                                       \
            i++;                                                                               \
            (iters)++;                                                                         \
            if ((iters) % every_ == 0 && now_us() - t0_ > budget_us(o)) break;                 \
        }                                                                                      \
        (us) = (now_us() - t0_) / (double)(iters);                                             \
    } while (0)

/* The same for collectives: every PE runs the whole warm-up and the same chunks of up to 64
 * iterations; between chunks (untimed) PE 0 tells every PE whether the budget allows another. */
#define MEASURE_ALL(o, me, most, iters, us, ...)                                               \
    do {                                                                                       \
        long warm_ = warmup_for(most), i = 0;                                                  \
        for (; i < warm_; i++) {                                                               \
            __VA_ARGS__;                                                                       \
        }                                                                                      \
        double spent_ = 0;                                                                     \
        (iters) = 0;                                                                           \
        while ((iters) < (most)) {                                                             \
            long chunk_ = (most) - (iters) < 64 ? (most) - (iters) : 64;                       \
            double t0_ = now_us();                                                             \
            for (long k_ = 0; k_ < chunk_; k_++, i++) {                                        \
                __VA_ARGS__;                                                                   \
            }                                                                                  \
            spent_ += now_us() - t0_;                                                          \
            (iters) += chunk_;                                                                 \
            if (!agree((me), spent_ < budget_us(o))) break;                                    \
        }                                                                                      \
        (us) = spent_ / (double)(iters);                                                       \
    } while (0)

/* Sizes, ascending: 8, then MAX / FACTOR^k >= 16. Returns the count. */
static int sizes(const struct opts *o, size_t *out, int cap) {
    size_t tmp[64];
    int n = 0;
    for (size_t s = o->max_bytes; s >= 16 && n < 64; s /= o->factor) tmp[n++] = s;
    int k = 0;
    out[k++] = 8;
    for (int i = n - 1; i >= 0 && k < cap; i--) out[k++] = tmp[i];
    return k;
}

static unsigned char *src, *dst; /* symmetric, max_bytes each */
static long *counter;           /* symmetric atomic target */
static double *peer_time_us;    /* symmetric: PE 1's mean broadcast time, for PE 0 */
static long *psync; /* symmetric pSync for broadcast */

static void lat(const struct opts *o, int me, int put, size_t size, unsigned char tag) {
    const char *name = put ? "put_lat" : "get_lat";
    /* put: PE 0's src -> PE 1's dst; get: PE 1's src -> PE 0's dst. */
    if ((put && me == 0) || (!put && me == 1)) memset(src, tag, size);
    shmem_barrier_all();
    if (me == 0) {
        long iters;
        double us;
        if (put)
            MEASURE(o, iters_for(o, size), iters, us, {
                shmem_putmem(dst, src, size, 1);
                shmem_quiet();
            });
        else
            MEASURE(o, iters_for(o, size), iters, us, shmem_getmem(dst, src, size, 1));
        row(name, size, iters, us);
        if (!put) check(name, size, dst, tag);
    }
    shmem_barrier_all();
    if (put && me == 1) check(name, size, dst, tag);
}

static void bw(const struct opts *o, int me, int put, size_t size, unsigned char tag) {
    const char *name = put ? "put_bw" : "get_bw";
    if ((put && me == 0) || (!put && me == 1)) memset(src, tag, size);
    shmem_barrier_all();
    if (me == 0) {
        long windows;
        double us;
        if (put)
            MEASURE(o, windows_for(o, size), windows, us, {
                for (int k = 0; k < WINDOW; k++) shmem_putmem_nbi(dst, src, size, 1);
                shmem_quiet();
            });
        else
            MEASURE(o, windows_for(o, size), windows, us, {
                for (int k = 0; k < WINDOW; k++) shmem_getmem_nbi(dst, src, size, 1);
                shmem_quiet();
            });
        row(name, size, windows * WINDOW, us / WINDOW);
        if (!put) check(name, size, dst, tag);
    }
    shmem_barrier_all();
    if (put && me == 1) check(name, size, dst, tag);
}

static void rate(const struct opts *o, int me) {
    const size_t size = 8;
    if (me == 0) memset(src, 0x5a, size);
    shmem_barrier_all();
    if (me == 0) {
        long windows;
        double us;
        MEASURE(o, o->quick ? 5 : 2000, windows, us, {
            for (int k = 0; k < RATE_WINDOW; k++) shmem_putmem(dst, src, size, 1);
            shmem_quiet();
        });
        row("put_rate", size, windows * RATE_WINDOW, us / RATE_WINDOW);
    }
    shmem_barrier_all();
    if (me == 1) check("put_rate", size, dst, 0x5a);
}

static void atomics(const struct opts *o, int me, int cswap) {
    const char *name = cswap ? "cswap_lat" : "fadd_lat";
    long most = o->quick ? 50 : 20000;
    *counter = 0;
    shmem_barrier_all();
    if (me == 0) {
        long iters, done = 0;
        double us;
        if (cswap)
            MEASURE(o, most, iters, us, {
                done++;
                /* Always succeeds: the word alternates 0, 1, 0, ... */
                long old = shmem_long_atomic_compare_swap(counter, i & 1, (i + 1) & 1, 1);
                if (old != (i & 1)) {
                    fprintf(stderr,
                            "osu_shmem: cswap_lat: iteration %ld returned %ld, expected %ld\n", i,
                            old, i & 1);
                    shmem_global_exit(1);
                }
            });
        else
            MEASURE(o, most, iters, us, {
                done++;
                (void)shmem_long_atomic_fetch_add(counter, 1, 1);
            });
        row(name, sizeof(long), iters, us);
        long final = shmem_long_g(counter, 1), want = cswap ? (done & 1) : done;
        if (final != want) {
            fprintf(stderr, "osu_shmem: %s: PE 1's word is %ld, expected %ld\n", name, final, want);
            shmem_global_exit(1);
        }
    }
    shmem_barrier_all();
}

static void barrier(const struct opts *o, int me) {
    long iters;
    double us;
    MEASURE_ALL(o, me, o->quick ? 50 : 20000, iters, us, shmem_barrier_all());
    if (me == 0) row("barrier_lat", 0, iters, us);
    shmem_barrier_all();
}

/* Broadcast latency: only the broadcast call is timed (a barrier after each lets pSync be
 * reused); the line is the slower PE's mean. */
static void bcast(const struct opts *o, int me, size_t size, unsigned char tag) {
    long most = iters_for(o, size), iters;
    double us, bcast_us = 0;
    if (most > 5000) most = 5000;
    if (me == 0) memset(src, tag, size);
    shmem_barrier_all();
    MEASURE_ALL(o, me, most, iters, us, {
        double t_ = now_us();
        shmem_broadcast64(dst, src, size / 8, 0, 0, 0, 2, psync);
        if (i >= warmup_for(most)) bcast_us += now_us() - t_;
        shmem_barrier_all();
    });
    (void)us;
    double mean = bcast_us / (double)iters;
    if (me == 1) {
        check("bcast_lat", size, dst, tag);
        shmem_double_p(peer_time_us, mean, 0);
    }
    shmem_barrier_all();
    if (me == 0) row("bcast_lat", size, iters, mean > *peer_time_us ? mean : *peer_time_us);
    shmem_barrier_all();
}

int main(int argc, char **argv) {
    struct opts o = {0, (size_t)4 << 20, 4, NULL};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q")) {
            o.quick = 1;
            o.max_bytes = 4096;
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            o.max_bytes = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "-f") && i + 1 < argc) {
            o.factor = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            o.tests = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [-q] [-m MAX_BYTES] [-f 2|4] [-t TEST,...]\n", argv[0]);
            return 2;
        }
    }
    if (o.factor < 2 || o.max_bytes < 8 || (o.max_bytes & 7)) {
        fprintf(stderr, "osu_shmem: -f must be >= 2 and -m a multiple of 8, >= 8\n");
        return 2;
    }
    shmem_init();
    int me = shmem_my_pe();
    if (shmem_n_pes() != 2) {
        if (me == 0) fprintf(stderr, "osu_shmem: run with exactly 2 PEs (got %d)\n", shmem_n_pes());
        shmem_global_exit(2);
    }
    src = shmem_malloc(o.max_bytes);
    dst = shmem_malloc(o.max_bytes);
    counter = shmem_malloc(sizeof(long));
    peer_time_us = shmem_malloc(sizeof(double));
    agreed = shmem_malloc(sizeof(long));
    if (!src || !dst || !counter || !peer_time_us || !agreed) {
        fprintf(stderr, "osu_shmem: PE %d: shmem_malloc of 2 x %zu B failed\n", me, o.max_bytes);
        shmem_global_exit(1);
    }
    psync = shmem_malloc(sizeof(long) * SHMEM_BCAST_SYNC_SIZE);
    if (!psync) {
        fprintf(stderr, "osu_shmem: PE %d: shmem_malloc of pSync failed\n", me);
        shmem_global_exit(1);
    }
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    memset(src, 0, o.max_bytes);
    memset(dst, 0, o.max_bytes);
    shmem_barrier_all();

    size_t sz[64];
    int n = sizes(&o, sz, 64);
    if (me == 0) printf("test,size_bytes,iterations,time_per_op_us\n");
    for (int put = 1; put >= 0; put--)
        if (wanted(&o, put ? "put_lat" : "get_lat"))
            for (int i = 0; i < n; i++) lat(&o, me, put, sz[i], (unsigned char)(i + 1));
    for (int put = 1; put >= 0; put--)
        if (wanted(&o, put ? "put_bw" : "get_bw"))
            for (int i = 0; i < n; i++) bw(&o, me, put, sz[i], (unsigned char)(i + 17));
    if (wanted(&o, "put_rate")) rate(&o, me);
    if (wanted(&o, "fadd_lat")) atomics(&o, me, 0);
    if (wanted(&o, "cswap_lat")) atomics(&o, me, 1);
    if (wanted(&o, "barrier_lat")) barrier(&o, me);
    if (wanted(&o, "bcast_lat"))
        for (int i = 0; i < n; i++) bcast(&o, me, sz[i], (unsigned char)(i + 33));

    shmem_barrier_all();
    shmem_free(agreed);
    shmem_free(psync);
    shmem_free(peer_time_us);
    shmem_free(counter);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
