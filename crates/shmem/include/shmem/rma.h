/* unpinned OpenSHMEM: remote memory access (put, get, p, g, iput, iget, _nbi, put-with-signal).
 * Included by shmem.h. */
#ifndef UNPINNED_SHMEM_RMA_H
#define UNPINNED_SHMEM_RMA_H

#define SHMEM_UP_DECL_RMA(T, N, A)                                                                \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);                        \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);   \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);                        \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);   \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);                    \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);                    \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,          \
                              ptrdiff_t sst, size_t nelems, int pe);                              \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,          \
                              ptrdiff_t sst, size_t nelems, int pe);                              \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,      \
                                uint64_t signal, int sig_op, int pe);                             \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,     \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);     \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,  \
                                    uint64_t signal, int sig_op, int pe);                         \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                                        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEM_UP_RMA_TYPES(SHMEM_UP_DECL_RMA, _)

/* p and g pass the element by value: every standard RMA type but long double, which the
 * inline definitions below carry through putmem / getmem. */
#define SHMEM_UP_DECL_PG(T, N, A)                                                                 \
    void shmem_##N##_p(T *dest, T value, int pe);                                                 \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                            \
    T shmem_##N##_g(const T *source, int pe);                                                     \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);
#define SHMEM_UP_PG_TYPES(X, A)                                                                   \
    X(float, float, A) X(double, double, A) X(char, char, A)                                     \
    X(signed char, schar, A) X(short, short, A) X(int, int, A) X(long, long, A)                   \
    X(long long, longlong, A) X(unsigned char, uchar, A) X(unsigned short, ushort, A)             \
    X(unsigned int, uint, A) X(unsigned long, ulong, A) X(unsigned long long, ulonglong, A)       \
    X(int8_t, int8, A) X(int16_t, int16, A) X(int32_t, int32, A) X(int64_t, int64, A)             \
    X(uint8_t, uint8, A) X(uint16_t, uint16, A) X(uint32_t, uint32, A)                            \
    X(uint64_t, uint64, A) X(size_t, size, A) X(ptrdiff_t, ptrdiff, A)
SHMEM_UP_PG_TYPES(SHMEM_UP_DECL_PG, _)

#define SHMEM_UP_DECL_SIZED(S, A)                                                                 \
    void shmem_put##S(void *dest, const void *source, size_t nelems, int pe);                     \
    void shmem_ctx_put##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##S(void *dest, const void *source, size_t nelems, int pe);                     \
    void shmem_ctx_get##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_put##S##_nbi(void *dest, const void *source, size_t nelems, int pe);               \
    void shmem_ctx_put##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##S##_nbi(void *dest, const void *source, size_t nelems, int pe);               \
    void shmem_ctx_get##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_iput##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iput##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,       \
                           ptrdiff_t sst, size_t nelems, int pe);                                 \
    void shmem_iget##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iget##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,       \
                           ptrdiff_t sst, size_t nelems, int pe);                                 \
    void shmem_put##S##_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, \
                               uint64_t signal, int sig_op, int pe);                              \
    void shmem_ctx_put##S##_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);      \
    void shmem_put##S##_signal_nbi(void *dest, const void *source, size_t nelems,                 \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);      \
    void shmem_ctx_put##S##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,           \
                                       size_t nelems, uint64_t *sig_addr, uint64_t signal,        \
                                       int sig_op, int pe);
SHMEM_UP_SIZES(SHMEM_UP_DECL_SIZED, _)
/* putmem / getmem: sized by bytes (no strided form). */
void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                         uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);

static inline void shmem_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest, long double value, int pe) {
    shmem_ctx_putmem(ctx, dest, &value, sizeof value, pe);
}
static inline void shmem_longdouble_p(long double *dest, long double value, int pe) {
    shmem_putmem(dest, &value, sizeof value, pe);
}
static inline long double shmem_ctx_longdouble_g(shmem_ctx_t ctx, const long double *source, int pe) {
    long double v;
    shmem_ctx_getmem(ctx, &v, source, sizeof v, pe);
    return v;
}
static inline long double shmem_longdouble_g(const long double *source, int pe) {
    long double v;
    shmem_getmem(&v, source, sizeof v, pe);
    return v;
}

/* Signals. */
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);

#endif
