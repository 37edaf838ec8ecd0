/* unpinned OpenSHMEM: collectives, team-based (1.5) and active-set (pSync) forms, with the
 * reduction type tables and the C11 type-generic collectives. Included by shmem.h (inside its
 * extern "C"). */
#ifndef UNPINNED_SHMEM_COLL_H
#define UNPINNED_SHMEM_COLL_H

void shmem_barrier_all(void);
void shmem_sync_all(void);

/* ---- pSync / pWrk of the active-set forms ---- */
/* Words of pSync every active-set collective uses (src/coll/mod.rs GROUP_WORDS). */
#define SHMEM_UP_SYNC_WORDS 34
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_UP_SYNC_WORDS
#define SHMEM_BCAST_SYNC_SIZE SHMEM_UP_SYNC_WORDS
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_UP_SYNC_WORDS
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_UP_SYNC_WORDS
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_UP_SYNC_WORDS
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_UP_SYNC_WORDS
#define SHMEM_SYNC_SIZE SHMEM_UP_SYNC_WORDS
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 16
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_SYNC_SIZE SHMEM_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ---- Reduction type tables (OpenSHMEM 1.5 table 10), X(TYPE, TYPENAME, A) ---- */
/* and, or, xor. */
#define SHMEM_UP_BITRED_TYPES(X, A)                                                          \
    X(unsigned char, uchar, A) X(unsigned short, ushort, A) X(unsigned int, uint, A)         \
    X(unsigned long, ulong, A) X(unsigned long long, ulonglong, A) X(int8_t, int8, A)        \
    X(int16_t, int16, A) X(int32_t, int32, A) X(int64_t, int64, A) X(uint8_t, uint8, A)      \
    X(uint16_t, uint16, A) X(uint32_t, uint32, A) X(uint64_t, uint64, A) X(size_t, size, A)
/* max, min (and, with the complex types, sum, prod); long double is inline below. */
#define SHMEM_UP_ORDRED_TYPES(X, A)                                                          \
    X(char, char, A) X(signed char, schar, A) X(short, short, A) X(int, int, A)              \
    X(long, long, A) X(long long, longlong, A) X(ptrdiff_t, ptrdiff, A)                      \
    SHMEM_UP_BITRED_TYPES(X, A) X(float, float, A) X(double, double, A)
#define SHMEM_UP_CPLXRED_TYPES(X, A) X(float _Complex, complexf, A) X(double _Complex, complexd, A)
/* The _to_all forms. */
#define SHMEM_UP_TOALL_INT_TYPES(X, A)                                                       \
    X(short, short, A) X(int, int, A) X(long, long, A) X(long long, longlong, A)
#define SHMEM_UP_TOALL_FLT_TYPES(X, A) X(float, float, A) X(double, double, A)

/* ---- Team-based collectives ---- */
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);

#define SHMEM_UP_DECL_COLL(T, N, A)                                                          \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems,    \
                              int PE_root);                                                  \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems);     \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems);    \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems);    \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst,    \
                              ptrdiff_t sst, size_t nelems);
SHMEM_UP_RMA_TYPES(SHMEM_UP_DECL_COLL, 0)

#define SHMEM_UP_DECL_RED(T, N, OP)                                                          \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
SHMEM_UP_BITRED_TYPES(SHMEM_UP_DECL_RED, and)
SHMEM_UP_BITRED_TYPES(SHMEM_UP_DECL_RED, or)
SHMEM_UP_BITRED_TYPES(SHMEM_UP_DECL_RED, xor)
SHMEM_UP_ORDRED_TYPES(SHMEM_UP_DECL_RED, max)
SHMEM_UP_ORDRED_TYPES(SHMEM_UP_DECL_RED, min)
SHMEM_UP_ORDRED_TYPES(SHMEM_UP_DECL_RED, sum)
SHMEM_UP_ORDRED_TYPES(SHMEM_UP_DECL_RED, prod)
SHMEM_UP_CPLXRED_TYPES(SHMEM_UP_DECL_RED, sum)
SHMEM_UP_CPLXRED_TYPES(SHMEM_UP_DECL_RED, prod)

/* ---- Active-set collectives (deprecated in 1.5) ---- */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root,
                       int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root,
                       int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_collect32(void *dest, const void *source, size_t nelems, int PE_start,
                     int logPE_stride, int PE_size, long *pSync);
void shmem_collect64(void *dest, const void *source, size_t nelems, int PE_start,
                     int logPE_stride, int PE_size, long *pSync);
void shmem_fcollect32(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_fcollect64(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_alltoall32(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_alltoall64(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);

#define SHMEM_UP_DECL_TOALL(T, N, OP)                                                        \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start,      \
                                   int logPE_stride, int PE_size, T *pWrk, long *pSync);
SHMEM_UP_TOALL_INT_TYPES(SHMEM_UP_DECL_TOALL, and)
SHMEM_UP_TOALL_INT_TYPES(SHMEM_UP_DECL_TOALL, or)
SHMEM_UP_TOALL_INT_TYPES(SHMEM_UP_DECL_TOALL, xor)
SHMEM_UP_TOALL_INT_TYPES(SHMEM_UP_DECL_TOALL, max)
SHMEM_UP_TOALL_INT_TYPES(SHMEM_UP_DECL_TOALL, min)
SHMEM_UP_TOALL_INT_TYPES(SHMEM_UP_DECL_TOALL, sum)
SHMEM_UP_TOALL_INT_TYPES(SHMEM_UP_DECL_TOALL, prod)
SHMEM_UP_TOALL_FLT_TYPES(SHMEM_UP_DECL_TOALL, max)
SHMEM_UP_TOALL_FLT_TYPES(SHMEM_UP_DECL_TOALL, min)
SHMEM_UP_TOALL_FLT_TYPES(SHMEM_UP_DECL_TOALL, sum)
SHMEM_UP_TOALL_FLT_TYPES(SHMEM_UP_DECL_TOALL, prod)
SHMEM_UP_CPLXRED_TYPES(SHMEM_UP_DECL_TOALL, sum)
SHMEM_UP_CPLXRED_TYPES(SHMEM_UP_DECL_TOALL, prod)

/* ---- long double reductions: the arithmetic is the C compiler's, the collective the
 * library's (a combine callback folds n elements of other into acc). ---- */
typedef void (*shmem_up_combine_fn)(void *acc, const void *other, size_t n);
int shmem_up_reduce_cb(const char *call, shmem_team_t team, void *dest, const void *source,
                       size_t nreduce, size_t size, shmem_up_combine_fn combine);
void shmem_up_to_all_cb(const char *call, void *dest, const void *source, int nreduce,
                        int PE_start, int logPE_stride, int PE_size, long *pSync, size_t size,
                        shmem_up_combine_fn combine);
#define SHMEM_UP_LD_REDUCTION(OP, STEP)                                                      \
    static inline void shmem_up_ld_##OP(void *acc, const void *other, size_t n) {            \
        long double *a = (long double *) acc;                                                \
        const long double *b = (const long double *) other;                                  \
        size_t i;                                                                            \
        for (i = 0; i < n; i++) {                                                            \
            STEP;                                                                            \
        }                                                                                    \
    }                                                                                        \
    static inline int shmem_longdouble_##OP##_reduce(shmem_team_t team, long double *dest,   \
                                                     const long double *source,              \
                                                     size_t nreduce) {                       \
        return shmem_up_reduce_cb("shmem_longdouble_" #OP "_reduce", team, dest, source,     \
                                  nreduce, sizeof(long double), shmem_up_ld_##OP);           \
    }                                                                                        \
    static inline void shmem_longdouble_##OP##_to_all(                                       \
        long double *dest, const long double *source, int nreduce, int PE_start,             \
        int logPE_stride, int PE_size, long double *pWrk, long *pSync) {                     \
        (void) pWrk;                                                                         \
        shmem_up_to_all_cb("shmem_longdouble_" #OP "_to_all", dest, source, nreduce,         \
                           PE_start, logPE_stride, PE_size, pSync, sizeof(long double),      \
                           shmem_up_ld_##OP);                                                \
    }
SHMEM_UP_LD_REDUCTION(max, if (b[i] > a[i]) a[i] = b[i])
SHMEM_UP_LD_REDUCTION(min, if (b[i] < a[i]) a[i] = b[i])
SHMEM_UP_LD_REDUCTION(sum, a[i] += b[i])
SHMEM_UP_LD_REDUCTION(prod, a[i] *= b[i])

/* ---- Type-generic collectives (C11 _Generic, C++ overloads) ---- */
/* Distinct C types of the reduction tables. */
#define SHMEM_UP_GEN_BITRED_TYPES(X, A)                                                      \
    X(unsigned char, uchar, A) X(unsigned short, ushort, A) X(unsigned int, uint, A)         \
    X(unsigned long, ulong, A) X(unsigned long long, ulonglong, A) X(signed char, int8, A)   \
    X(short, int16, A) X(int, int32, A) X(long, int64, A)
#define SHMEM_UP_GEN_ORDRED_TYPES(X, A)                                                      \
    X(char, char, A) X(signed char, schar, A) X(short, short, A) X(int, int, A)              \
    X(long, long, A) X(long long, longlong, A) X(unsigned char, uchar, A)                    \
    X(unsigned short, ushort, A) X(unsigned int, uint, A) X(unsigned long, ulong, A)         \
    X(unsigned long long, ulonglong, A) X(float, float, A) X(double, double, A)              \
    X(long double, longdouble, A)
#define SHMEM_UP_GEN_ARITHRED_TYPES(X, A)                                                    \
    SHMEM_UP_GEN_ORDRED_TYPES(X, A) SHMEM_UP_CPLXRED_TYPES(X, A)
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* Select on the second argument (the first is the team). */
#define SHMEM_UP_SECOND(a, b, ...) (b)
#define SHMEM_UP_GT(TABLE, OP, ...)                                                          \
    _Generic(SHMEM_UP_SECOND(__VA_ARGS__, 0),                                                \
        TABLE(SHMEM_UP_A, OP) default: shmem_up_generic_type_error)(__VA_ARGS__)

#define shmem_broadcast(...) SHMEM_UP_GT(SHMEM_UP_GEN_RMA_TYPES, broadcast, __VA_ARGS__)
#define shmem_collect(...) SHMEM_UP_GT(SHMEM_UP_GEN_RMA_TYPES, collect, __VA_ARGS__)
#define shmem_fcollect(...) SHMEM_UP_GT(SHMEM_UP_GEN_RMA_TYPES, fcollect, __VA_ARGS__)
#define shmem_alltoall(...) SHMEM_UP_GT(SHMEM_UP_GEN_RMA_TYPES, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) SHMEM_UP_GT(SHMEM_UP_GEN_RMA_TYPES, alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...) SHMEM_UP_GT(SHMEM_UP_GEN_BITRED_TYPES, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) SHMEM_UP_GT(SHMEM_UP_GEN_BITRED_TYPES, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) SHMEM_UP_GT(SHMEM_UP_GEN_BITRED_TYPES, xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) SHMEM_UP_GT(SHMEM_UP_GEN_ORDRED_TYPES, max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) SHMEM_UP_GT(SHMEM_UP_GEN_ORDRED_TYPES, min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) SHMEM_UP_GT(SHMEM_UP_GEN_ARITHRED_TYPES, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) SHMEM_UP_GT(SHMEM_UP_GEN_ARITHRED_TYPES, prod_reduce, __VA_ARGS__)
/* shmem_sync(team) is shmem_team_sync; shmem_sync(PE_start, logPE_stride, PE_size, pSync)
 * the active-set form. */
#define shmem_sync(...)                                                                      \
    _Generic(SHMEM_UP_FIRST(__VA_ARGS__, 0),                                                 \
        shmem_team_t: shmem_team_sync, default: shmem_sync)(__VA_ARGS__)
#endif /* C11 */

#ifdef __cplusplus
/* C++: the same generic names as overloads (C++ linkage, so that they may overload). */
extern "C++" {
#define SHMEM_UP_CXX_COLL(T, N, A)                                                           \
    static inline int shmem_broadcast(shmem_team_t t, T *d, const T *s, size_t n, int r) {   \
        return shmem_##N##_broadcast(t, d, s, n, r);                                         \
    }                                                                                        \
    static inline int shmem_collect(shmem_team_t t, T *d, const T *s, size_t n) {            \
        return shmem_##N##_collect(t, d, s, n);                                              \
    }                                                                                        \
    static inline int shmem_fcollect(shmem_team_t t, T *d, const T *s, size_t n) {           \
        return shmem_##N##_fcollect(t, d, s, n);                                             \
    }                                                                                        \
    static inline int shmem_alltoall(shmem_team_t t, T *d, const T *s, size_t n) {           \
        return shmem_##N##_alltoall(t, d, s, n);                                             \
    }                                                                                        \
    static inline int shmem_alltoalls(shmem_team_t t, T *d, const T *s, ptrdiff_t dst,       \
                                      ptrdiff_t sst, size_t n) {                             \
        return shmem_##N##_alltoalls(t, d, s, dst, sst, n);                                  \
    }
SHMEM_UP_GEN_RMA_TYPES(SHMEM_UP_CXX_COLL, _)
#define SHMEM_UP_CXX_RED(T, N, OP)                                                           \
    static inline int shmem_##OP##_reduce(shmem_team_t t, T *d, const T *s, size_t n) {      \
        return shmem_##N##_##OP##_reduce(t, d, s, n);                                        \
    }
SHMEM_UP_GEN_BITRED_TYPES(SHMEM_UP_CXX_RED, and)
SHMEM_UP_GEN_BITRED_TYPES(SHMEM_UP_CXX_RED, or)
SHMEM_UP_GEN_BITRED_TYPES(SHMEM_UP_CXX_RED, xor)
SHMEM_UP_GEN_ORDRED_TYPES(SHMEM_UP_CXX_RED, max)
SHMEM_UP_GEN_ORDRED_TYPES(SHMEM_UP_CXX_RED, min)
SHMEM_UP_GEN_ARITHRED_TYPES(SHMEM_UP_CXX_RED, sum)
SHMEM_UP_GEN_ARITHRED_TYPES(SHMEM_UP_CXX_RED, prod)
/* std::complex<float> / <double> (whose layout is T[2], as T _Complex's): the generic sum and
 * prod reductions, the typed complexf / complexd names and their _to_all forms. */
#define SHMEM_UP_CXX_STDCPLX(T, N, OP)                                                       \
    static inline int shmem_##N##_##OP##_reduce(shmem_team_t t, std::complex<T> *d,          \
                                                const std::complex<T> *s, size_t n) {        \
        return shmem_##N##_##OP##_reduce(t, reinterpret_cast<T _Complex *>(d),               \
                                         reinterpret_cast<const T _Complex *>(s), n);        \
    }                                                                                        \
    static inline int shmem_##OP##_reduce(shmem_team_t t, std::complex<T> *d,                \
                                          const std::complex<T> *s, size_t n) {              \
        return shmem_##N##_##OP##_reduce(t, d, s, n);                                        \
    }                                                                                        \
    static inline void shmem_##N##_##OP##_to_all(std::complex<T> *d, const std::complex<T> *s, \
                                                 int n, int PE_start, int logPE_stride,      \
                                                 int PE_size, std::complex<T> *pWrk,         \
                                                 long *pSync) {                              \
        shmem_##N##_##OP##_to_all(reinterpret_cast<T _Complex *>(d),                         \
                                  reinterpret_cast<const T _Complex *>(s), n, PE_start,      \
                                  logPE_stride, PE_size,                                     \
                                  reinterpret_cast<T _Complex *>(pWrk), pSync);              \
    }
SHMEM_UP_CXX_STDCPLX(float, complexf, sum)
SHMEM_UP_CXX_STDCPLX(float, complexf, prod)
SHMEM_UP_CXX_STDCPLX(double, complexd, sum)
SHMEM_UP_CXX_STDCPLX(double, complexd, prod)
/* shmem_sync(team) next to the active-set shmem_sync. */
static inline int shmem_sync(shmem_team_t t) { return shmem_team_sync(t); }
}
#endif /* C++ */

#endif
