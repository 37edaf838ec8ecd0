/* OpenSHMEM 1.5 on unpinned: one-sided PGAS over the PART engine of the live runtime, with
 * nothing registered, pinned or mlocked. Build with `oshcc`, run with `oshrun -np N`
 * (docs/openshmem.md). */
#ifndef UNPINNED_SHMEM_H
#define UNPINNED_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
/* The std::complex overloads of the reductions (shmem/coll.h). */
#include <complex>
extern "C" {
#endif

#include "shmem/types.h"

/* ---- Setup, exit and query ---- */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);
void shmem_pcontrol(int level, ...);
/* Deprecated setup names. */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
int my_pe(void);
int num_pes(void);
/* Deprecated cache management (OpenSHMEM 1.0): nothing to do on a cache-coherent host. */
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

/* ---- Memory management (collective over all PEs) ---- */
void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void *shmem_align(size_t alignment, size_t size);
void shmem_free(void *ptr);
void *shmem_malloc_with_hints(size_t size, long hints);
/* Deprecated. */
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);

#include "shmem/rma.h"
#include "shmem/amo.h"
#include "shmem/sync.h"
#include "shmem/team.h"
#include "shmem/coll.h"

#ifdef __cplusplus
}
#endif

#include "shmem/generic.h"

#endif
