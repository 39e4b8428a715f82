/* threads.c: one setting for OpenBLAS's pool and the core's own loops, so the
 * two never oversubscribe the cores. The core's kernels use OpenMP only for
 * loops large enough to pay for waking the team. */
#include "internal.h"
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);

static int num_threads = 0;  /* 0: not set yet */

void fnn_set_num_threads(int n) {
    if (n < 1) n = 1;
    num_threads = n;
    openblas_set_num_threads(n);
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}

int fnn_get_num_threads(void) {
    if (!num_threads) {
        const char *env = getenv("FASTNN_NUM_THREADS");
        int n = env ? atoi(env) : 0;
#ifdef _OPENMP
        if (n <= 0) n = omp_get_num_procs();
#endif
        fnn_set_num_threads(n > 0 ? n : 1);
    }
    return num_threads;
}

int fnn_threads_for(int64_t work) {
    int n = fnn_get_num_threads();
    if (work < 32768) return 1;
    return n;
}
