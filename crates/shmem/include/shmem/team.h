/* unpinned OpenSHMEM: teams. Included by shmem.h. */
#ifndef UNPINNED_SHMEM_TEAM_H
#define UNPINNED_SHMEM_TEAM_H

#endif
