/* Teams and collectives (tests/coll.rs): every check prints what differs and the job fails. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

static int errors;
#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("PE %d: ", shmem_my_pe());                                                \
            printf(__VA_ARGS__);                                                             \
            printf("\n");                                                                    \
            errors++;                                                                        \
        }                                                                                    \
    } while (0)

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long data[64], out[256];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();

    /* Broadcast in place from the last PE; the root's dest is updated too. OpenSHMEM 1.5:
     * before any PE calls a broadcast, dest on every PE must be ready to accept the data,
     * so the writes into it are followed by a barrier (as SOS's bcast_in_place.c does). */
    for (int i = 0; i < 8; i++) data[i] = me * 100 + i;
    shmem_barrier_all();
    shmem_broadcast(SHMEM_TEAM_WORLD, data, data, 8, n - 1);
    for (int i = 0; i < 8; i++) CHECK(data[i] == (n - 1) * 100 + i, "bcast[%d] = %ld", i, data[i]);

    /* Collect: PE i contributes i + 1 elements. */
    for (int i = 0; i <= me; i++) data[i] = me;
    shmem_collect(SHMEM_TEAM_WORLD, out, data, (size_t) me + 1);
    for (int p = 0, k = 0; p < n; p++)
        for (int i = 0; i <= p; i++, k++) CHECK(out[k] == p, "collect[%d] = %ld", k, out[k]);

    /* A team of the world in reverse order (negative stride): reductions and team numbering. */
    shmem_team_t rev;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev) == 0, "split");
    CHECK(shmem_team_my_pe(rev) == n - 1 - me, "rev my_pe %d", shmem_team_my_pe(rev));
    CHECK(shmem_team_translate_pe(rev, 0, SHMEM_TEAM_WORLD) == n - 1, "translate");
    for (int i = 0; i < 4; i++) data[i] = me + i;
    shmem_long_sum_reduce(rev, out, data, 4);
    for (int i = 0; i < 4; i++)
        CHECK(out[i] == (long) n * (n - 1) / 2 + (long) n * i, "sum[%d] = %ld", i, out[i]);
    shmem_long_max_reduce(rev, data, data, 4); /* in place */
    CHECK(data[0] == n - 1, "max in place = %ld", data[0]);

    /* Alltoall over the reverse team: block j comes from team PE j. */
    for (int j = 0; j < n; j++) data[j] = (n - 1 - me) * 10 + j;
    shmem_long_alltoall(rev, out, data, 1);
    for (int j = 0; j < n; j++)
        CHECK(out[j] == j * 10 + (n - 1 - me), "alltoall[%d] = %ld", j, out[j]);

    /* 2-D split: rows of 2. */
    shmem_team_t x, y;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y) == 0, "split_2d");
    CHECK(shmem_team_n_pes(x) == ((me / 2) * 2 + 2 <= n ? 2 : 1), "x size %d", shmem_team_n_pes(x));
    CHECK(shmem_team_n_pes(y) == (n - me % 2 + 1) / 2, "y size %d", shmem_team_n_pes(y));
    data[0] = me;
    shmem_long_sum_reduce(y, out, data, 1);
    long ysum = 0;
    for (int p = me % 2; p < n; p += 2) ysum += p;
    CHECK(out[0] == ysum, "y sum %ld, expected %ld", out[0], ysum);

    /* Active set of the even PEs with pSync: barrier, _to_all, fcollect64. */
    if (me % 2 == 0) {
        int size = (n + 1) / 2;
        shmem_barrier(0, 1, size, psync);
        data[0] = me + 1;
        shmem_long_prod_to_all(out, data, 1, 0, 1, size, pwrk, psync);
        long prod = 1;
        for (int p = 0; p < n; p += 2) prod *= p + 1;
        CHECK(out[0] == prod, "prod_to_all %ld, expected %ld", out[0], prod);
        shmem_fcollect64(out, data, 1, 0, 1, size, psync);
        for (int i = 0; i < size; i++) CHECK(out[i] == 2 * i + 1, "fcollect64[%d] = %ld", i, out[i]);
        shmem_barrier(0, 1, size, psync);
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
            CHECK(psync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after use", i, psync[i]);
    }

    shmem_team_destroy(x);
    shmem_team_destroy(y);
    shmem_team_destroy(rev);
    shmem_sync(SHMEM_TEAM_WORLD);
    shmem_finalize();
    return errors != 0;
}
