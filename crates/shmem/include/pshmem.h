/* The OpenSHMEM profiling interface: pshmem_ names for the routines of shmem.h. This library
 * has no separate profiling layer, so each pshmem_ name is declared as an alias of its shmem_
 * routine (a GCC / Clang asm label); covered so far: setup and query, ordering, barrier_all,
 * and the typed RMA routines. */
#ifndef UNPINNED_PSHMEM_H
#define UNPINNED_PSHMEM_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_UP_PALIAS(RET, NAME, PARAMS) RET p##NAME PARAMS __asm__(#NAME);
SHMEM_UP_PALIAS(void, shmem_init, (void))
SHMEM_UP_PALIAS(void, shmem_finalize, (void))
SHMEM_UP_PALIAS(int, shmem_my_pe, (void))
SHMEM_UP_PALIAS(int, shmem_n_pes, (void))
SHMEM_UP_PALIAS(void, shmem_quiet, (void))
SHMEM_UP_PALIAS(void, shmem_fence, (void))
SHMEM_UP_PALIAS(void, shmem_barrier_all, (void))
SHMEM_UP_PALIAS(void, shmem_sync_all, (void))
SHMEM_UP_PALIAS(void, shmem_global_exit, (int status))
SHMEM_UP_PALIAS(void *, shmem_malloc, (size_t size))
SHMEM_UP_PALIAS(void, shmem_free, (void *ptr))

#define SHMEM_UP_PDECL_RMA(T, N, A)                                                               \
    SHMEM_UP_PALIAS(void, shmem_##N##_put, (T *dest, const T *source, size_t nelems, int pe))     \
    SHMEM_UP_PALIAS(void, shmem_##N##_get, (T *dest, const T *source, size_t nelems, int pe))     \
    SHMEM_UP_PALIAS(void, shmem_##N##_put_nbi, (T *dest, const T *source, size_t nelems, int pe)) \
    SHMEM_UP_PALIAS(void, shmem_##N##_get_nbi, (T *dest, const T *source, size_t nelems, int pe)) \
    SHMEM_UP_PALIAS(void, shmem_##N##_iput, (T *dest, const T *source, ptrdiff_t dst,            \
                                             ptrdiff_t sst, size_t nelems, int pe))               \
    SHMEM_UP_PALIAS(void, shmem_##N##_iget, (T *dest, const T *source, ptrdiff_t dst,            \
                                             ptrdiff_t sst, size_t nelems, int pe))
SHMEM_UP_RMA_TYPES(SHMEM_UP_PDECL_RMA, _)
#define SHMEM_UP_PDECL_PG(T, N, A)                                                                \
    SHMEM_UP_PALIAS(void, shmem_##N##_p, (T *dest, T value, int pe))                              \
    SHMEM_UP_PALIAS(T, shmem_##N##_g, (const T *source, int pe))
SHMEM_UP_PG_TYPES(SHMEM_UP_PDECL_PG, _)

static inline void pshmem_longdouble_p(long double *dest, long double value, int pe) {
    shmem_longdouble_p(dest, value, pe);
}
static inline long double pshmem_longdouble_g(const long double *source, int pe) {
    return shmem_longdouble_g(source, pe);
}

#ifdef __cplusplus
}
#endif

#endif
