/* bench/allreduce/raw_allreduce.c: the raw MPI_Allreduce of a float32 buffer, the yardstick for
 * fastnn.distributed.all_reduce (bench/allreduce/allreduce.lua does the same through Lua).
 *
 *   mpirun -np 2 build/raw_allreduce [megabytes = 100] [repeats = 10]
 *
 * Rank 0 prints one line: `raw_allreduce <MB> MB: <seconds> s/op, <GB/s> GB/s` (algorithm
 * bandwidth: bytes / time, the best of the repeats after one warm-up). Send and receive are
 * separate buffers, as the binding's (input -> new output tensor).
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double mb = argc > 1 ? atof(argv[1]) : 100.0;
    int repeats = argc > 2 ? atoi(argv[2]) : 10;
    long n = (long)(mb * 1e6 / sizeof(float));
    float *send = malloc((size_t)n * sizeof(float)), *recv = malloc((size_t)n * sizeof(float));
    if (!send || !recv) {
        fprintf(stderr, "raw_allreduce: cannot allocate %.0f MB\n", mb);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < n; i++) send[i] = (float)(i % 1000) * 1e-3f, recv[i] = 0;
    double best = 1e30;
    for (int r = 0; r <= repeats; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(send, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);   /* the slowest rank */
        if (r > 0 && t < best) best = t;   /* r == 0: warm-up (page faults) */
    }
    if (rank == 0) printf("raw_allreduce %.0f MB: %.4f s/op, %.2f GB/s\n", mb, best, n * 4.0 / best / 1e9);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
