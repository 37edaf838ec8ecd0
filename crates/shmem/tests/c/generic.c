/* The type-generic interfaces (C11 _Generic, or C++ overloads when built as C++, with the
 * std::complex reductions), static and heap targets, and pshmem aliases: prints "generic ok"
 * on every PE. */
#include <shmem.h>
#include <pshmem.h>
#include <stdio.h>

static long x[4];
static int y;
static double d;
#ifdef __cplusplus
static std::complex<double> zs[3], zd[3];
static std::complex<float> fs[2], fd[2];
#endif

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
    long v[4] = {1, 2, 3, 4};
    long *h = (long *) shmem_malloc(4096 * sizeof(long));
    shmem_put(x, v, 4, right);
    shmem_put(SHMEM_CTX_DEFAULT, h + 4000, v, 4, right);
    shmem_atomic_add(&y, 2, right);
    shmem_p(&d, 1.5, right);
    pshmem_barrier_all();
    shmem_wait_until(&y, SHMEM_CMP_GE, 2);
    long back[4];
    shmem_get(back, h + 4000, 4, right);
    int ok = x[3] == 4 && h[4003] == 4 && back[2] == 3 && d == 1.5 &&
             shmem_g(&d, right) == 1.5 && shmem_atomic_fetch(SHMEM_CTX_DEFAULT, &y, me) == 2;
    shmem_barrier_all();
    ok = ok && shmem_atomic_fetch_add(&y, 1, right) == 2;
    shmem_barrier_all();
    ok = ok && y == 3;
#ifdef __cplusplus
    for (int i = 0; i < 3; i++) zs[i] = std::complex<double>(1.0, i);
    fs[1] = std::complex<float>(0.0f, 1.0f);
    shmem_sum_reduce(SHMEM_TEAM_WORLD, zd, zs, 3);
    ok = ok && zd[2] == std::complex<double>(n, 2.0 * n);
    shmem_prod_reduce(SHMEM_TEAM_WORLD, fd, fs, 2);
    /* i^n */
    std::complex<float> ipow(1.0f, 0.0f);
    for (int i = 0; i < n; i++) ipow *= std::complex<float>(0.0f, 1.0f);
    ok = ok && fd[1] == ipow;
    shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, zd, zs, 3);
    ok = ok && zd[1] == std::complex<double>(n, n);
#endif
    shmem_free(h);
    printf("PE %d of %d: generic %s\n", me, n, ok ? "ok" : "WRONG");
    shmem_finalize();
    return ok ? 0 : 1;
}
