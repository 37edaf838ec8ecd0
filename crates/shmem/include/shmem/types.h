/* unpinned OpenSHMEM: constants, handle types and the type tables (X-macros) of the typed
 * families. Included by shmem.h; not meant to be included alone. */
#ifndef UNPINNED_SHMEM_TYPES_H
#define UNPINNED_SHMEM_TYPES_H

#include <stddef.h>
#include <stdint.h>

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "unpinned OpenSHMEM (no registration, no pinning)"
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

/* Thread levels. */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Comparison operators of the point-to-point synchronization routines. */
#define SHMEM_CMP_EQ 1
#define SHMEM_CMP_NE 2
#define SHMEM_CMP_GT 3
#define SHMEM_CMP_GE 4
#define SHMEM_CMP_LT 5
#define SHMEM_CMP_LE 6
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

/* Signal operators of put-with-signal. */
#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Context options. */
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

/* Hints of shmem_malloc_with_hints. */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* A communication context (opaque). SHMEM_CTX_DEFAULT is the default context. */
typedef struct shmem_up_ctx *shmem_ctx_t;
extern struct shmem_up_ctx shmem_up_ctx_default;
#define SHMEM_CTX_DEFAULT (&shmem_up_ctx_default)
#define SHMEM_CTX_INVALID ((shmem_ctx_t) 0)

/* A team (opaque; the teams are declared in shmem/team.h). */
typedef struct shmem_up_team *shmem_team_t;

/* ---- Type tables (OpenSHMEM 1.5, tables 5, 6, 10), as X-macros: X(TYPE, TYPENAME, A) ---- */

/* Standard RMA types. */
#define SHMEM_UP_RMA_TYPES(X, A)                                                             \
    X(float, float, A) X(double, double, A) X(long double, longdouble, A) X(char, char, A)   \
    X(signed char, schar, A) X(short, short, A) X(int, int, A) X(long, long, A)              \
    X(long long, longlong, A) X(unsigned char, uchar, A) X(unsigned short, ushort, A)        \
    X(unsigned int, uint, A) X(unsigned long, ulong, A) X(unsigned long long, ulonglong, A)  \
    X(int8_t, int8, A) X(int16_t, int16, A) X(int32_t, int32, A) X(int64_t, int64, A)        \
    X(uint8_t, uint8, A) X(uint16_t, uint16, A) X(uint32_t, uint32, A)                       \
    X(uint64_t, uint64, A) X(size_t, size, A) X(ptrdiff_t, ptrdiff, A)

/* Sized RMA: X(BITS, A) for put8 .. put128 (putmem is declared separately). */
#define SHMEM_UP_SIZES(X, A) X(8, A) X(16, A) X(32, A) X(64, A) X(128, A)

/* Standard AMO types. */
#define SHMEM_UP_AMO_TYPES(X, A)                                                             \
    X(int, int, A) X(long, long, A) X(long long, longlong, A) X(unsigned int, uint, A)       \
    X(unsigned long, ulong, A) X(unsigned long long, ulonglong, A) X(int32_t, int32, A)      \
    X(int64_t, int64, A) X(uint32_t, uint32, A) X(uint64_t, uint64, A) X(size_t, size, A)   \
    X(ptrdiff_t, ptrdiff, A)

/* Extended AMO types (fetch, set, swap): the standard ones plus float and double. */
#define SHMEM_UP_EXT_AMO_TYPES(X, A) X(float, float, A) X(double, double, A) SHMEM_UP_AMO_TYPES(X, A)

/* Bitwise AMO types. */
#define SHMEM_UP_BIT_AMO_TYPES(X, A)                                                         \
    X(unsigned int, uint, A) X(unsigned long, ulong, A) X(unsigned long long, ulonglong, A)  \
    X(int32_t, int32, A) X(int64_t, int64, A) X(uint32_t, uint32, A) X(uint64_t, uint64, A)

/* Point-to-point synchronization types. */
#define SHMEM_UP_SYNC_TYPES(X, A)                                                            \
    X(short, short, A) X(int, int, A) X(long, long, A) X(long long, longlong, A)             \
    X(unsigned short, ushort, A) X(unsigned int, uint, A) X(unsigned long, ulong, A)         \
    X(unsigned long long, ulonglong, A) X(int32_t, int32, A) X(int64_t, int64, A)            \
    X(uint32_t, uint32, A) X(uint64_t, uint64, A) X(size_t, size, A) X(ptrdiff_t, ptrdiff, A)

/* Deprecated AMO names (shmem_int_cswap, shmem_ulong_fadd, ...): the same types. */
#define SHMEM_UP_DEP_AMO_TYPES(X, A) SHMEM_UP_AMO_TYPES(X, A)
#define SHMEM_UP_DEP_EXT_AMO_TYPES(X, A) SHMEM_UP_EXT_AMO_TYPES(X, A)

/* Distinct C types of each table, for the C11 type-generic selections (a _Generic may not
 * name a type twice; on LP64 int32_t is int, int64_t is long, size_t is unsigned long ...). */
#define SHMEM_UP_GEN_RMA_TYPES(X, A)                                                         \
    X(float, float, A) X(double, double, A) X(long double, longdouble, A) X(char, char, A)   \
    X(signed char, schar, A) X(short, short, A) X(int, int, A) X(long, long, A)              \
    X(long long, longlong, A) X(unsigned char, uchar, A) X(unsigned short, ushort, A)        \
    X(unsigned int, uint, A) X(unsigned long, ulong, A) X(unsigned long long, ulonglong, A)
#define SHMEM_UP_GEN_AMO_TYPES(X, A)                                                         \
    X(int, int, A) X(long, long, A) X(long long, longlong, A) X(unsigned int, uint, A)       \
    X(unsigned long, ulong, A) X(unsigned long long, ulonglong, A)
#define SHMEM_UP_GEN_EXT_AMO_TYPES(X, A) X(float, float, A) X(double, double, A) SHMEM_UP_GEN_AMO_TYPES(X, A)
#define SHMEM_UP_GEN_BIT_AMO_TYPES(X, A)                                                     \
    X(unsigned int, uint, A) X(unsigned long, ulong, A) X(unsigned long long, ulonglong, A)  \
    X(int, int32, A) X(long, int64, A)
#define SHMEM_UP_GEN_SYNC_TYPES(X, A)                                                        \
    X(short, short, A) X(int, int, A) X(long, long, A) X(long long, longlong, A)             \
    X(unsigned short, ushort, A) X(unsigned int, uint, A) X(unsigned long, ulong, A)         \
    X(unsigned long long, ulonglong, A)

#endif
