/* unpinned OpenSHMEM: the C11 type-generic interfaces (shmem_put, shmem_atomic_add, ...),
 * _Generic selections over the distinct C types of each type table (shmem/types.h). A call
 * whose first argument is a shmem_ctx_t selects the shmem_ctx_ form on the second argument.
 * A type outside the table selects shmem_up_generic_type_error, which is never defined: the
 * program fails to compile or link instead of calling the wrong routine. Included by shmem.h. */
#ifndef UNPINNED_SHMEM_GENERIC_H
#define UNPINNED_SHMEM_GENERIC_H

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

void shmem_up_generic_type_error(void);

#define SHMEM_UP_A(T, N, OP) T *: shmem_##N##_##OP,
#define SHMEM_UP_AC(T, N, OP) T *: shmem_ctx_##N##_##OP,
#define SHMEM_UP_CA(T, N, OP) T *: shmem_##N##_##OP, const T *: shmem_##N##_##OP,
#define SHMEM_UP_CAC(T, N, OP) T *: shmem_ctx_##N##_##OP, const T *: shmem_ctx_##N##_##OP,
#define SHMEM_UP_FIRST(x, ...) (x)
#define SHMEM_UP_SEL(TABLE, ASSOC, OP, x)                                                         \
    _Generic((x), TABLE(ASSOC, OP) default: shmem_up_generic_type_error)
/* With or without a leading context. */
#define SHMEM_UP_GCTX(TABLE, A, AC, OP, first, ...)                                               \
    _Generic((first),                                                                             \
        shmem_ctx_t: SHMEM_UP_SEL(TABLE, AC, OP, SHMEM_UP_FIRST(__VA_ARGS__, 0)),                 \
        default: SHMEM_UP_SEL(TABLE, A, OP, first))(first, __VA_ARGS__)
#define SHMEM_UP_G(TABLE, A, OP, first, ...) SHMEM_UP_SEL(TABLE, A, OP, first)(first, __VA_ARGS__)

/* RMA. */
#define shmem_put(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_A, SHMEM_UP_AC, put, __VA_ARGS__)
#define shmem_get(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_A, SHMEM_UP_AC, get, __VA_ARGS__)
#define shmem_put_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_A, SHMEM_UP_AC, put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_A, SHMEM_UP_AC, get_nbi, __VA_ARGS__)
#define shmem_p(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_A, SHMEM_UP_AC, p, __VA_ARGS__)
#define shmem_g(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_CA, SHMEM_UP_CAC, g, __VA_ARGS__)
#define shmem_iput(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_A, SHMEM_UP_AC, iput, __VA_ARGS__)
#define shmem_iget(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_A, SHMEM_UP_AC, iget, __VA_ARGS__)
#define shmem_put_signal(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_A, SHMEM_UP_AC, put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_RMA_TYPES, SHMEM_UP_A, SHMEM_UP_AC, put_signal_nbi, __VA_ARGS__)

/* AMO. */
#define shmem_atomic_fetch(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_EXT_AMO_TYPES, SHMEM_UP_CA, SHMEM_UP_CAC, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_EXT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_EXT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_EXT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_EXT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_add, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_BIT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_BIT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_BIT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_BIT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_and, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_BIT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_or, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_BIT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_BIT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_BIT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) SHMEM_UP_GCTX(SHMEM_UP_GEN_BIT_AMO_TYPES, SHMEM_UP_A, SHMEM_UP_AC, atomic_fetch_xor_nbi, __VA_ARGS__)

/* Deprecated AMO names. */
#define SHMEM_UP_GEN_DEP_AMO_TYPES(X, A) SHMEM_UP_GEN_AMO_TYPES(X, A)
#define SHMEM_UP_GEN_DEP_EXT_AMO_TYPES(X, A) SHMEM_UP_GEN_EXT_AMO_TYPES(X, A)
#define shmem_cswap(...) SHMEM_UP_G(SHMEM_UP_GEN_DEP_AMO_TYPES, SHMEM_UP_A, cswap, __VA_ARGS__)
#define shmem_finc(...) SHMEM_UP_G(SHMEM_UP_GEN_DEP_AMO_TYPES, SHMEM_UP_A, finc, __VA_ARGS__)
#define shmem_inc(...) SHMEM_UP_G(SHMEM_UP_GEN_DEP_AMO_TYPES, SHMEM_UP_A, inc, __VA_ARGS__)
#define shmem_fadd(...) SHMEM_UP_G(SHMEM_UP_GEN_DEP_AMO_TYPES, SHMEM_UP_A, fadd, __VA_ARGS__)
#define shmem_add(...) SHMEM_UP_G(SHMEM_UP_GEN_DEP_AMO_TYPES, SHMEM_UP_A, add, __VA_ARGS__)
#define shmem_fetch(...) SHMEM_UP_G(SHMEM_UP_GEN_DEP_EXT_AMO_TYPES, SHMEM_UP_CA, fetch, __VA_ARGS__)
#define shmem_set(...) SHMEM_UP_G(SHMEM_UP_GEN_DEP_EXT_AMO_TYPES, SHMEM_UP_A, set, __VA_ARGS__)
#define shmem_swap(...) SHMEM_UP_G(SHMEM_UP_GEN_DEP_EXT_AMO_TYPES, SHMEM_UP_A, swap, __VA_ARGS__)

/* Point-to-point synchronization. */
#define shmem_wait(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, wait, __VA_ARGS__)
#define shmem_wait_until(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, wait_until, __VA_ARGS__)
#define shmem_wait_until_all(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, wait_until_some_vector, __VA_ARGS__)
#define shmem_test(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, test, __VA_ARGS__)
#define shmem_test_all(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, test_all, __VA_ARGS__)
#define shmem_test_any(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, test_any, __VA_ARGS__)
#define shmem_test_some(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) SHMEM_UP_G(SHMEM_UP_GEN_SYNC_TYPES, SHMEM_UP_A, test_some_vector, __VA_ARGS__)

#endif /* C11 */

#ifdef __cplusplus
/* C++: the same generic names as overloads over the distinct C types of each table. */
#define SHMEM_UP_CXX_RMA(T, N, A)                                                                 \
    static inline void shmem_put(T *d, const T *s, size_t n, int pe) { shmem_##N##_put(d, s, n, pe); } \
    static inline void shmem_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_put(c, d, s, n, pe); } \
    static inline void shmem_get(T *d, const T *s, size_t n, int pe) { shmem_##N##_get(d, s, n, pe); } \
    static inline void shmem_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_get(c, d, s, n, pe); } \
    static inline void shmem_put_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_put_nbi(d, s, n, pe); } \
    static inline void shmem_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_put_nbi(c, d, s, n, pe); } \
    static inline void shmem_get_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_get_nbi(d, s, n, pe); } \
    static inline void shmem_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_get_nbi(c, d, s, n, pe); } \
    static inline void shmem_p(T *d, T v, int pe) { shmem_##N##_p(d, v, pe); }                   \
    static inline void shmem_p(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_p(c, d, v, pe); } \
    static inline T shmem_g(const T *s, int pe) { return shmem_##N##_g(s, pe); }                 \
    static inline T shmem_g(shmem_ctx_t c, const T *s, int pe) { return shmem_ctx_##N##_g(c, s, pe); } \
    static inline void shmem_iput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_##N##_iput(d, s, dst, sst, n, pe); } \
    static inline void shmem_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_ctx_##N##_iput(c, d, s, dst, sst, n, pe); } \
    static inline void shmem_iget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_##N##_iget(d, s, dst, sst, n, pe); } \
    static inline void shmem_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_ctx_##N##_iget(c, d, s, dst, sst, n, pe); } \
    static inline void shmem_put_signal(T *d, const T *s, size_t n, uint64_t *sa, uint64_t sv, int so, int pe) { shmem_##N##_put_signal(d, s, n, sa, sv, so, pe); } \
    static inline void shmem_put_signal(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sa, uint64_t sv, int so, int pe) { shmem_ctx_##N##_put_signal(c, d, s, n, sa, sv, so, pe); } \
    static inline void shmem_put_signal_nbi(T *d, const T *s, size_t n, uint64_t *sa, uint64_t sv, int so, int pe) { shmem_##N##_put_signal_nbi(d, s, n, sa, sv, so, pe); } \
    static inline void shmem_put_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sa, uint64_t sv, int so, int pe) { shmem_ctx_##N##_put_signal_nbi(c, d, s, n, sa, sv, so, pe); }
SHMEM_UP_GEN_RMA_TYPES(SHMEM_UP_CXX_RMA, _)

#define SHMEM_UP_CXX_EXT_AMO(T, N, A)                                                             \
    static inline T shmem_atomic_fetch(const T *s, int pe) { return shmem_##N##_atomic_fetch(s, pe); } \
    static inline T shmem_atomic_fetch(shmem_ctx_t c, const T *s, int pe) { return shmem_ctx_##N##_atomic_fetch(c, s, pe); } \
    static inline void shmem_atomic_set(T *d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); } \
    static inline void shmem_atomic_set(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_atomic_set(c, d, v, pe); } \
    static inline T shmem_atomic_swap(T *d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); } \
    static inline T shmem_atomic_swap(shmem_ctx_t c, T *d, T v, int pe) { return shmem_ctx_##N##_atomic_swap(c, d, v, pe); } \
    static inline void shmem_atomic_fetch_nbi(T *f, const T *s, int pe) { shmem_##N##_atomic_fetch_nbi(f, s, pe); } \
    static inline void shmem_atomic_fetch_nbi(shmem_ctx_t c, T *f, const T *s, int pe) { shmem_ctx_##N##_atomic_fetch_nbi(c, f, s, pe); } \
    static inline void shmem_atomic_swap_nbi(T *f, T *d, T v, int pe) { shmem_##N##_atomic_swap_nbi(f, d, v, pe); } \
    static inline void shmem_atomic_swap_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) { shmem_ctx_##N##_atomic_swap_nbi(c, f, d, v, pe); }
SHMEM_UP_GEN_EXT_AMO_TYPES(SHMEM_UP_CXX_EXT_AMO, _)

#define SHMEM_UP_CXX_AMO(T, N, A)                                                                 \
    static inline T shmem_atomic_compare_swap(T *d, T k, T v, int pe) { return shmem_##N##_atomic_compare_swap(d, k, v, pe); } \
    static inline T shmem_atomic_compare_swap(shmem_ctx_t c, T *d, T k, T v, int pe) { return shmem_ctx_##N##_atomic_compare_swap(c, d, k, v, pe); } \
    static inline T shmem_atomic_fetch_inc(T *d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); } \
    static inline T shmem_atomic_fetch_inc(shmem_ctx_t c, T *d, int pe) { return shmem_ctx_##N##_atomic_fetch_inc(c, d, pe); } \
    static inline void shmem_atomic_inc(T *d, int pe) { shmem_##N##_atomic_inc(d, pe); }         \
    static inline void shmem_atomic_inc(shmem_ctx_t c, T *d, int pe) { shmem_ctx_##N##_atomic_inc(c, d, pe); } \
    static inline T shmem_atomic_fetch_add(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_add(d, v, pe); } \
    static inline T shmem_atomic_fetch_add(shmem_ctx_t c, T *d, T v, int pe) { return shmem_ctx_##N##_atomic_fetch_add(c, d, v, pe); } \
    static inline void shmem_atomic_add(T *d, T v, int pe) { shmem_##N##_atomic_add(d, v, pe); } \
    static inline void shmem_atomic_add(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_atomic_add(c, d, v, pe); } \
    static inline void shmem_atomic_compare_swap_nbi(T *f, T *d, T k, T v, int pe) { shmem_##N##_atomic_compare_swap_nbi(f, d, k, v, pe); } \
    static inline void shmem_atomic_compare_swap_nbi(shmem_ctx_t c, T *f, T *d, T k, T v, int pe) { shmem_ctx_##N##_atomic_compare_swap_nbi(c, f, d, k, v, pe); } \
    static inline void shmem_atomic_fetch_inc_nbi(T *f, T *d, int pe) { shmem_##N##_atomic_fetch_inc_nbi(f, d, pe); } \
    static inline void shmem_atomic_fetch_inc_nbi(shmem_ctx_t c, T *f, T *d, int pe) { shmem_ctx_##N##_atomic_fetch_inc_nbi(c, f, d, pe); } \
    static inline void shmem_atomic_fetch_add_nbi(T *f, T *d, T v, int pe) { shmem_##N##_atomic_fetch_add_nbi(f, d, v, pe); } \
    static inline void shmem_atomic_fetch_add_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) { shmem_ctx_##N##_atomic_fetch_add_nbi(c, f, d, v, pe); }
SHMEM_UP_GEN_AMO_TYPES(SHMEM_UP_CXX_AMO, _)

#define SHMEM_UP_CXX_BIT(T, N, OP)                                                                \
    static inline T shmem_atomic_fetch_##OP(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_##OP(d, v, pe); } \
    static inline T shmem_atomic_fetch_##OP(shmem_ctx_t c, T *d, T v, int pe) { return shmem_ctx_##N##_atomic_fetch_##OP(c, d, v, pe); } \
    static inline void shmem_atomic_##OP(T *d, T v, int pe) { shmem_##N##_atomic_##OP(d, v, pe); } \
    static inline void shmem_atomic_##OP(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_atomic_##OP(c, d, v, pe); } \
    static inline void shmem_atomic_fetch_##OP##_nbi(T *f, T *d, T v, int pe) { shmem_##N##_atomic_fetch_##OP##_nbi(f, d, v, pe); } \
    static inline void shmem_atomic_fetch_##OP##_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) { shmem_ctx_##N##_atomic_fetch_##OP##_nbi(c, f, d, v, pe); }
SHMEM_UP_GEN_BIT_AMO_TYPES(SHMEM_UP_CXX_BIT, and)
SHMEM_UP_GEN_BIT_AMO_TYPES(SHMEM_UP_CXX_BIT, or)
SHMEM_UP_GEN_BIT_AMO_TYPES(SHMEM_UP_CXX_BIT, xor)

#define SHMEM_UP_CXX_SYNC(T, N, A)                                                                \
    static inline void shmem_wait(T *i, T v) { shmem_##N##_wait(i, v); }                         \
    static inline void shmem_wait_until(T *i, int c, T v) { shmem_##N##_wait_until(i, c, v); }   \
    static inline void shmem_wait_until_all(T *i, size_t n, const int *s, int c, T v) { shmem_##N##_wait_until_all(i, n, s, c, v); } \
    static inline size_t shmem_wait_until_any(T *i, size_t n, const int *s, int c, T v) { return shmem_##N##_wait_until_any(i, n, s, c, v); } \
    static inline size_t shmem_wait_until_some(T *i, size_t n, size_t *x, const int *s, int c, T v) { return shmem_##N##_wait_until_some(i, n, x, s, c, v); } \
    static inline void shmem_wait_until_all_vector(T *i, size_t n, const int *s, int c, T *v) { shmem_##N##_wait_until_all_vector(i, n, s, c, v); } \
    static inline size_t shmem_wait_until_any_vector(T *i, size_t n, const int *s, int c, T *v) { return shmem_##N##_wait_until_any_vector(i, n, s, c, v); } \
    static inline size_t shmem_wait_until_some_vector(T *i, size_t n, size_t *x, const int *s, int c, T *v) { return shmem_##N##_wait_until_some_vector(i, n, x, s, c, v); } \
    static inline int shmem_test(T *i, int c, T v) { return shmem_##N##_test(i, c, v); }         \
    static inline int shmem_test_all(T *i, size_t n, const int *s, int c, T v) { return shmem_##N##_test_all(i, n, s, c, v); } \
    static inline size_t shmem_test_any(T *i, size_t n, const int *s, int c, T v) { return shmem_##N##_test_any(i, n, s, c, v); } \
    static inline size_t shmem_test_some(T *i, size_t n, size_t *x, const int *s, int c, T v) { return shmem_##N##_test_some(i, n, x, s, c, v); } \
    static inline int shmem_test_all_vector(T *i, size_t n, const int *s, int c, T *v) { return shmem_##N##_test_all_vector(i, n, s, c, v); } \
    static inline size_t shmem_test_any_vector(T *i, size_t n, const int *s, int c, T *v) { return shmem_##N##_test_any_vector(i, n, s, c, v); } \
    static inline size_t shmem_test_some_vector(T *i, size_t n, size_t *x, const int *s, int c, T *v) { return shmem_##N##_test_some_vector(i, n, x, s, c, v); }
SHMEM_UP_GEN_SYNC_TYPES(SHMEM_UP_CXX_SYNC, _)
#endif /* C++ */
#endif
