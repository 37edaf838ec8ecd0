/* unpinned OpenSHMEM: point-to-point synchronization, memory ordering, locks, contexts.
 * Included by shmem.h. */
#ifndef UNPINNED_SHMEM_SYNC_H
#define UNPINNED_SHMEM_SYNC_H

#define SHMEM_UP_DECL_SYNC(T, N, A)                                                               \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                                   \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp,          \
                                    T cmp_value);                                                 \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp,        \
                                      T cmp_value);                                               \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,                  \
                                       const int *status, int cmp, T cmp_value);                  \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp,   \
                                           T *cmp_values);                                        \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp, \
                                             T *cmp_values);                                      \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices,           \
                                              const int *status, int cmp, T *cmp_values);         \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                                          \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value);   \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status,     \
                                 int cmp, T cmp_value);                                           \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp,          \
                                    T *cmp_values);                                               \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp,       \
                                       T *cmp_values);                                            \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,                 \
                                        const int *status, int cmp, T *cmp_values);
SHMEM_UP_SYNC_TYPES(SHMEM_UP_DECL_SYNC, _)

/* Deprecated: wait while *ivar == cmp_value. */
#define SHMEM_UP_DECL_DEP_WAIT(T, N, A) void shmem_##N##_wait(T *ivar, T cmp_value);
SHMEM_UP_SYNC_TYPES(SHMEM_UP_DECL_DEP_WAIT, _)
#if !defined(__cplusplus) && (!defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L)
/* Deprecated untyped names (long); in C11 the type-generic macros, in C++ the overloads of
 * shmem/generic.h. */
void shmem_wait(long *ivar, long cmp_value);
void shmem_wait_until(long *ivar, int cmp, long cmp_value);
#endif

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* Memory ordering. */
void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);

/* Distributed locks. */
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* Contexts. */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);

#endif
