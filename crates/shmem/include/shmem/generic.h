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
#endif
