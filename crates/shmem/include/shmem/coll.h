/* unpinned OpenSHMEM: collectives. Included by shmem.h. */
#ifndef UNPINNED_SHMEM_COLL_H
#define UNPINNED_SHMEM_COLL_H

void shmem_barrier_all(void);
void shmem_sync_all(void);

#endif
