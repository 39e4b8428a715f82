/* threads.c: one setting for the core's OpenMP loops, oneDNN (the same pool) and OpenBLAS, so the
 * two never oversubscribe the cores. The core's kernels use OpenMP only for
 * loops large enough to pay for waking the team, and enter no OpenMP region at
 * all otherwise (fnn_parallel_for). */
#include "internal.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* 0: not set yet. Host threads read it at once (every op asks), so it is an atomic, and the
 * first read takes FASTNN_NUM_THREADS once (pthread_once), not once per racing thread. */
static atomic_int num_threads;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* Fork safety. libgomp cannot rebuild its pool in the child of a fork: the pool's threads are not
 * copied, and the child's next parallel region waits for them forever (GCC PR 60035), as nginx's
 * workers would after a forward pass in its master (init_by_lua). So the first team this process
 * may start (fnn_omp_team_mark, before the core's own regions and oneDNN's calls) registers a fork
 * handler, and a child forked after that runs every kernel on one thread: no region is entered,
 * oneDNN plans for one thread. fnn_threads_forked() says so to hosts (fastnn.serve logs it). */
static atomic_int team_started, forked_after_team;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void) {
    atomic_store(&forked_after_team, 1);
    atomic_store(&num_threads, 1);
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
}

static void register_fork_handler(void) { pthread_atfork(NULL, NULL, child_after_fork); }

void fnn_omp_team_mark(int threads) {
    if (threads <= 1 || atomic_load_explicit(&team_started, memory_order_relaxed)) return;
    pthread_once(&atfork_once, register_fork_handler);
    atomic_store(&team_started, 1);
}

void fnn_onednn_team_mark(void) {
#ifdef _OPENMP
    if (!omp_in_parallel()) fnn_omp_team_mark(omp_get_max_threads());
#endif
}

int fnn_threads_forked(void) { return atomic_load(&forked_after_team); }

void fnn_set_num_threads(int n) {
    if (n < 1 || atomic_load(&forked_after_team)) n = 1;   /* after such a fork: one thread (above) */
    atomic_store_explicit(&num_threads, n, memory_order_relaxed);   /* OpenBLAS reads it: blas.c */
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}

static void threads_from_env(void) {
    if (atomic_load_explicit(&num_threads, memory_order_relaxed)) return;   /* set before the first read */
    const char *env = getenv("FASTNN_NUM_THREADS");
    int n = env ? atoi(env) : 0;
#ifdef _OPENMP
    if (n <= 0) n = omp_get_num_procs();
#endif
    fnn_set_num_threads(n > 0 ? n : 1);
}

/* inside an OpenMP parallel region (a kernel that splits its work calls fnn_sgemm in its parts) */
bool fnn_in_parallel(void) {
#ifdef _OPENMP
    return omp_in_parallel();
#else
    return false;
#endif
}

/* a background thread of the core's own (a DataLoader's prefetch worker) runs its kernels on one
 * thread: its work overlaps the training step's, whose kernels have the cores */
static _Thread_local bool serial_thread;
void fnn_thread_serial(void) { serial_thread = true; }

int fnn_get_num_threads(void) {
    if (serial_thread) return 1;
    int n = atomic_load_explicit(&num_threads, memory_order_relaxed);
    if (n) return n;
    pthread_once(&env_once, threads_from_env);
    return atomic_load_explicit(&num_threads, memory_order_relaxed);
}

/* fnn_threads_for (internal.h) and its threshold FNN_PARALLEL_MIN_WORK = 2^18: work is counted in
 * elements of a memory-bound loop (an add, a copy, a sum: ~0.2-0.3 ns each); kernels with costlier
 * elements (exp, softmax, Adam) count each as several. Waking a passive (futex-sleeping) worker
 * and joining it costs ~10 us on an idle 2-core machine, 15-20 us on a busy one, so a second
 * thread breaks even near 40-60 us of serial work and gains ~1.2-1.5x from about 2^18 elements
 * (~60-70 us). Below that: one thread and no OpenMP region at all (fnn_parallel_for). */

void fnn_parallel_team(int64_t n, int threads, fnn_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (threads > n) threads = (int)n;
#ifdef _OPENMP
    if (threads > 1) {
        fnn_omp_team_mark(threads);
        /* autocast's depth is per thread: the workers take the caller's for the region, so a product
         * on a worker rounds its operands as the caller's would (conv's image slots, attention's heads) */
        const int depth = fnn_autocast_depth();
        #pragma omp parallel num_threads(threads)
        {
            const int own = depth ? fnn_autocast_set_depth(depth) : 0;
            /* schedule(static)'s split: the first n % T threads take one item more */
            int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
            int64_t q = n / nt, r = n % nt;
            int64_t lo = t * q + (t < r ? t : r), hi = lo + q + (t < r);
            if (lo < hi) fn(ctx, lo, hi);
            if (depth) fnn_autocast_set_depth(own);
        }
        return;
    }
#endif
    fn(ctx, 0, n);
}
