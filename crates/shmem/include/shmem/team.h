/* unpinned OpenSHMEM: teams. Included by shmem.h (inside its extern "C"). */
#ifndef UNPINNED_SHMEM_TEAM_H
#define UNPINNED_SHMEM_TEAM_H

/* Team configuration (the fields a config_mask selects). */
typedef struct {
    int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* The predefined teams: every PE, the PEs of this host, and the invalid team. */
extern struct shmem_up_team shmem_up_team_world;
extern struct shmem_up_team shmem_up_team_shared;
#define SHMEM_TEAM_WORLD (&shmem_up_team_world)
#define SHMEM_TEAM_SHARED (&shmem_up_team_shared)
#define SHMEM_TEAM_INVALID ((shmem_team_t) 0)

int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);
int shmem_team_sync(shmem_team_t team);

#endif
