/* unpinned OpenSHMEM: atomic memory operations. Included by shmem.h. */
#ifndef UNPINNED_SHMEM_AMO_H
#define UNPINNED_SHMEM_AMO_H

/* Standard AMO types: compare_swap, fetch_inc, inc, fetch_add, add (+ _nbi fetching forms). */
#define SHMEM_UP_DECL_AMO(T, N, A)                                                                \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);                          \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, int pe);     \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                                              \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);                         \
    void shmem_##N##_atomic_inc(T *dest, int pe);                                                 \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);                            \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);                                     \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe);                \
    void shmem_##N##_atomic_add(T *dest, T value, int pe);                                        \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe);                   \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe);         \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T cond,      \
                                                 T value, int pe);                                \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                             \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe);        \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe);                    \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
SHMEM_UP_AMO_TYPES(SHMEM_UP_DECL_AMO, _)

/* Extended AMO types: fetch, set, swap (+ _nbi). */
#define SHMEM_UP_DECL_EXT_AMO(T, N, A)                                                            \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                                          \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);                     \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                                        \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);                   \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                                          \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);                     \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);                         \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, int pe);    \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);                         \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
SHMEM_UP_EXT_AMO_TYPES(SHMEM_UP_DECL_EXT_AMO, _)

/* Bitwise AMO types: and, or, xor (+ fetch and _nbi forms). */
#define SHMEM_UP_DECL_BIT_AMO1(T, N, OP)                                                          \
    T shmem_##N##_atomic_fetch_##OP(T *dest, T value, int pe);                                    \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);               \
    void shmem_##N##_atomic_##OP(T *dest, T value, int pe);                                       \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);                  \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *fetch, T *dest, T value, int pe);                 \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
SHMEM_UP_BIT_AMO_TYPES(SHMEM_UP_DECL_BIT_AMO1, and)
SHMEM_UP_BIT_AMO_TYPES(SHMEM_UP_DECL_BIT_AMO1, or)
SHMEM_UP_BIT_AMO_TYPES(SHMEM_UP_DECL_BIT_AMO1, xor)

/* Deprecated names (OpenSHMEM 1.3) that real codes still use. */
#define SHMEM_UP_DECL_DEP_AMO(T, N, A)                                                            \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);                                        \
    T shmem_##N##_finc(T *dest, int pe);                                                          \
    void shmem_##N##_inc(T *dest, int pe);                                                        \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                                 \
    void shmem_##N##_add(T *dest, T value, int pe);
SHMEM_UP_DEP_AMO_TYPES(SHMEM_UP_DECL_DEP_AMO, _)
#define SHMEM_UP_DECL_DEP_EXT_AMO(T, N, A)                                                        \
    T shmem_##N##_fetch(const T *source, int pe);                                                 \
    void shmem_##N##_set(T *dest, T value, int pe);                                               \
    T shmem_##N##_swap(T *dest, T value, int pe);
SHMEM_UP_DEP_EXT_AMO_TYPES(SHMEM_UP_DECL_DEP_EXT_AMO, _)

#endif
