/* One-sided put/get latency and bandwidth of Open MPI on arbitrary (malloc'd) memory, the
 * peer of `unpinned live live-peers`. Rank 0 targets rank 1 through an MPI_Win_create window
 * (passive target: lock_all + flush), so the library must register or pin whatever the user
 * hands it, as real applications do.
 *
 * Prints CSV rows: system,op,size_bytes,latency_us,bandwidth_gbps
 * latency_us = mean time of one op + MPI_Win_flush; bandwidth from back-to-back ops + one flush.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now(void) { return MPI_Wtime(); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "mpi_rma: run with exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const size_t max = (size_t)4 << 20;
    const int reps_small = argc > 1 ? atoi(argv[1]) : 2000;
    char *buf = malloc(max);   /* arbitrary memory: never pre-registered by us */
    char *local = malloc(max);
    memset(buf, rank, max);
    memset(local, 7, max);
    MPI_Win win;
    MPI_Win_create(buf, max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    if (rank == 0) printf("system,op,size_bytes,latency_us,bandwidth_gbps\n");
    for (int op = 0; op < 2; op++) {
        for (size_t n = 8; n <= max; n *= 2) {
            int reps = n >= (1 << 20) ? 20 : n >= (64 << 10) ? 200 : reps_small;
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                /* warm-up */
                for (int i = 0; i < 5; i++) {
                    if (op == 0) MPI_Put(local, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
                    else MPI_Get(local, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
                    MPI_Win_flush(1, win);
                }
                double t0 = now();
                for (int i = 0; i < reps; i++) {
                    if (op == 0) MPI_Put(local, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
                    else MPI_Get(local, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
                    MPI_Win_flush(1, win);
                }
                double lat = (now() - t0) / reps;
                t0 = now();
                for (int i = 0; i < reps; i++) {
                    if (op == 0) MPI_Put(local, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
                    else MPI_Get(local, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
                }
                MPI_Win_flush(1, win);
                double bw = (double)n * reps * 8.0 / (now() - t0) / 1e9;
                printf("openmpi,%s,%zu,%.3f,%.3f\n", op == 0 ? "put" : "get", n, lat * 1e6, bw);
                fflush(stdout);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(buf);
    free(local);
    MPI_Finalize();
    return 0;
}
