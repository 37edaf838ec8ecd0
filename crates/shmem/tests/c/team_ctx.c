/* RMA and atomics on a context of a team number PEs in that team (tests/coll.rs): at 4 PEs, the
 * odd-PE team is world PEs {1, 3}; its PE 1 is world PE 3. Every check prints what differs. */
#include <shmem.h>
#include <stdio.h>

static long box[4], counter;
static uint64_t sig;
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

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (n != 4) {
        if (me == 0) printf("team_ctx: needs 4 PEs, got %d\n", n);
        shmem_finalize();
        return 1;
    }
    shmem_team_t odd;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, 2, NULL, 0, &odd) == 0, "split");
    shmem_barrier_all();
    if (me == 1) {
        shmem_ctx_t ctx;
        CHECK(shmem_team_create_ctx(odd, 0, &ctx) == 0, "create_ctx");
        long v[4] = {11, 12, 13, 14};
        shmem_ctx_long_put(ctx, box, v, 4, 1); /* team PE 1 = world PE 3 */
        shmem_ctx_long_p(ctx, &box[0], 21, 1);
        shmem_ctx_long_atomic_add(ctx, &counter, 5, 1);
        long old = shmem_ctx_long_atomic_fetch_add(ctx, &counter, 1, 1);
        CHECK(old == 5, "fetch_add on team PE 1 returned %ld", old);
        long got = shmem_ctx_long_g(ctx, &box[1], 1);
        CHECK(got == 12, "get from team PE 1 returned %ld", got);
        shmem_ctx_putmem_signal(ctx, &box[3], &v[0], sizeof(long), &sig, 7,
                                SHMEM_SIGNAL_SET, 1);
        shmem_ctx_quiet(ctx);
        shmem_ctx_destroy(ctx);
    }
    shmem_barrier_all();
    long want[4] = {0, 0, 0, 0};
    long want_counter = 0;
    uint64_t want_sig = 0;
    if (me == 3) {
        want[0] = 21, want[1] = 12, want[2] = 13, want[3] = 11;
        want_counter = 6, want_sig = 7;
    }
    for (int i = 0; i < 4; i++) CHECK(box[i] == want[i], "box[%d] = %ld, want %ld", i, box[i], want[i]);
    CHECK(counter == want_counter, "counter = %ld, want %ld", counter, want_counter);
    CHECK(sig == want_sig, "signal = %lu, want %lu", (unsigned long) sig, (unsigned long) want_sig);
    shmem_team_destroy(odd);
    shmem_finalize();
    return errors != 0;
}
