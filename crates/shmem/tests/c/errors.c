/* Misuse that must end the job with a message naming the call, the PE and the address or
 * size (argv[1] selects it), and shmem_global_exit's code. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "before-init")) {
        return shmem_n_pes();
    }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long local[4] = {0};
    long v = 1;
    if (!strcmp(what, "not-symmetric") && me == 0) {
        shmem_long_put(local, &v, 1, n - 1);
    } else if (!strcmp(what, "bad-pe") && me == 0) {
        shmem_long_p((long *) shmem_ptr(local, me), v, n + 3);
    } else if (!strcmp(what, "exhausted")) {
        shmem_malloc((size_t) 1 << 40);
    } else if (!strcmp(what, "global-exit")) {
        if (me == n - 1) {
            shmem_global_exit(7);
        }
        for (;;) {
            shmem_barrier_all();
        }
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
