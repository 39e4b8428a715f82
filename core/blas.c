/* blas.c: the CPU compute layer's matrix products and the kernel libraries behind them.
 *
 * Every CPU GEMM of the core (linear, matmul, bmm, convolution, the recurrent layers, attention)
 * calls fnn_sgemm. It runs oneDNN's dnnl_sgemm when the build has oneDNN (-DFASTNN_ONEDNN=ON) and
 * the oneDNN kernels are selected (the default), else OpenBLAS's cblas_sgemm: the portable
 * kernels, which FASTNN_KERNELS=portable or fnn_set_kernels("portable") selects at run time so
 * that specs can hold the two paths against each other.
 *
 * One thread runtime: oneDNN threads with OpenMP, in the same libgomp pool as the core's own loops
 * (fnn_set_num_threads sets its size), and runs serially inside a parallel region, so a kernel
 * that splits images over threads can call it as is. OpenBLAS, a pthread pool of its own, is held
 * at one thread while the oneDNN kernels are selected, so no second pool spins beside OpenMP's.
 *
 * OpenBLAS's core: a DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU model, and an older
 * one does not know newer models (Debian 12's 0.3.21 runs its generic SSE3 "Prescott" kernels on
 * Sapphire and Emerald Rapids, at about 12% of peak). When libfastnn loads, it compares the core
 * OpenBLAS chose with the instruction sets cpuid reports; if the core is below them it selects
 * the matching one through OpenBLAS's own re-initialisation (gotoblas_dynamic_quit/init with
 * OPENBLAS_CORETYPE), checks a small sgemm against a plain loop, and keeps it only if it agrees.
 * What it cannot fix it says once on stderr. fnn_config reports all of it. */
#define _DEFAULT_SOURCE   /* setenv, strcasecmp, clock_gettime under -std=c11 */
#include "internal.h"
#include <cblas.h>
#include <cpuid.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef FASTNN_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#ifndef FASTNN_BUILD_INFO   /* CMakeLists.txt: build type and options */
#define FASTNN_BUILD_INFO "unknown"
#endif

void openblas_set_num_threads(int n);
char *openblas_get_corename(void);
/* DYNAMIC_ARCH builds export these; weak, so an OpenBLAS built for one core still links */
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
void *blas_memory_alloc(int procpos) __attribute__((weak));
int blas_thread_shutdown_(void) __attribute__((weak));   /* its pool; the next threaded call starts it again */
int blas_memory_free(void *buffer) __attribute__((weak));

/* ================= which kernels run ================= */

enum { KERNELS_ONEDNN, KERNELS_PORTABLE };

#ifdef FASTNN_WITH_ONEDNN
/* read by every GEMM from any host thread; set by fnn_set_kernels or FASTNN_KERNELS at load */
static atomic_int kernels = KERNELS_ONEDNN;
#else
static atomic_int kernels = KERNELS_PORTABLE;
#endif

static inline bool onednn_on(void) {
    return atomic_load_explicit(&kernels, memory_order_relaxed) == KERNELS_ONEDNN;
}

bool fnn_blas_portable(void) { return !onednn_on(); }

/* OpenBLAS's own pool follows fnn_get_num_threads lazily: each portable GEMM outside a parallel
 * region (fnn_in_parallel, threads.c) tells it the count when it changed (threads.c knows nothing of
 * the BLAS); inside one (fnn_sgemm_parallel_for's parts) it runs on one thread. blas_threads: what it
 * was last told. */
static atomic_int blas_threads;
static void blas_threads_set(int n) {
    if (atomic_exchange_explicit(&blas_threads, n, memory_order_relaxed) != n) openblas_set_num_threads(n);
}

int fnn_set_kernels(const char *name) {
    int want;
    if (name && strcmp(name, "portable") == 0) want = KERNELS_PORTABLE;
    else if (name && strcmp(name, "onednn") == 0) want = KERNELS_ONEDNN;
    else return FNN_FAIL(FNN_STATUS_ARG, "set_kernels: unknown kernels '%s' (choices: onednn, portable)",
                         name ? name : "(null)");
#ifndef FASTNN_WITH_ONEDNN
    FNN_CHECK(want == KERNELS_PORTABLE, FNN_STATUS_ARG,
              "set_kernels: this build has no oneDNN (built with -DFASTNN_ONEDNN=OFF); only 'portable' runs");
#endif
    atomic_store_explicit(&kernels, want, memory_order_relaxed);
    return FNN_STATUS_OK;
}

const char *fnn_get_kernels(void) { return onednn_on() ? "onednn" : "portable"; }

/* ================= the GEMM ================= */

#ifdef FASTNN_WITH_ONEDNN
/* dnnl_sgemm reads a transposed A whose rows lie a power of two of 512 floats or more apart at half
 * speed (cache-set aliasing while it packs A). The weight gradients of a layer with 512, 1024 or 2048
 * outputs are such products: lstm_seq's dW_hh = dZ^T hs, [1024, 1600] x [1600, 256] at lda 1024,
 * took 10.7 ms (78 GFLOP/s) against 4.9 ms at lda 1040 (2 threads, Zen 3; the other operand and
 * OpenBLAS do not show it). A large enough product copies A at a padded stride first. At 512 the
 * penalty is small where B is narrow (char_gpt's fc1 dW, [512, 2048] x [2048, 128]: 2.44 ms plain,
 * 2.62 copied) and pays from 256 columns on ([512, 2048] x [2048, 512]: 9.2 against 7.6 ms); from
 * 1024 it pays for any width (dW_ih, [1024, 1600] x [1600, 64]: 2.56 against 1.90 ms). */
enum { PAD_LD_MIN = 512, PAD_LD_WIDE = 1024, PAD_MIN_COLS = 256, PAD_LD = 16, PAD_MIN_WORK = 1 << 22 };
typedef struct { float *dst; const float *src; int64_t cols, dld, sld; } pad_args;
static void pad_rows(void *ctx, int64_t lo, int64_t hi) {
    const pad_args *p = ctx;
    for (int64_t r = lo; r < hi; r++) memcpy(p->dst + r * p->dld, p->src + r * p->sld, sizeof(float) * (size_t)p->cols);
}
/* true when it ran C = op(A) op(B) with A copied at a padded stride; false: nothing done */
static bool sgemm_padded(bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (lda < PAD_LD_MIN || (lda & (lda - 1)) != 0 || m * n * k < PAD_MIN_WORK) return false;
    if (lda < PAD_LD_WIDE && n < PAD_MIN_COLS) return false;
    const int64_t pld = lda + PAD_LD, bytes = (int64_t)sizeof(float) * k * pld;   /* A^T is stored [k, m] */
    float *pa = fnn_alloc(FNN_DEVICE_CPU, bytes);
    if (!pa) return false;
    pad_args p = {pa, a, m, pld, lda};
    fnn_parallel_for(k, fnn_threads_for(k * m), pad_rows, &p);
    dnnl_sgemm('T', tb ? 'T' : 'N', m, n, k, alpha, pa, pld, b, ldb, beta, c, ldc);
    fnn_free(FNN_DEVICE_CPU, pa, bytes);
    return true;
}
#endif

void fnn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
#ifdef FASTNN_WITH_ONEDNN
    if (onednn_on()) {
        /* row-major, as cblas_sgemm with CblasRowMajor; it fails only on arguments the callers
         * have already checked (sizes, leading dimensions) */
        fnn_onednn_team_mark();
        if (ta && sgemm_padded(tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
        dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
#endif
    if (!fnn_in_parallel()) {
        blas_threads_set(fnn_get_num_threads());
        fnn_omp_team_mark(fnn_get_num_threads());   /* an OpenMP build of OpenBLAS starts one */
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* ================= oneDNN's matmul primitive: the bias (or C) added inside ================= */

#ifdef FASTNN_WITH_ONEDNN
/* A GEMM that adds a bias as a separate pass costs that pass and the beta = 1 read of C: on
 * char_gpt's qkv product (2048 x 128 x 384) linear with a bias took 1.57 ms against 0.97 without.
 * oneDNN's matmul primitive (brgemm) adds the bias inside the kernel. Primitives are made once per
 * shape and kept (a training step makes none after its first, as PyTorch's ideep caches them):
 * a table under a lock that only grows, up to MM_CACHE shapes (a primitive in the table may be
 * running in another thread, so none is ever replaced; past the cap, new shapes take the GEMM
 * path). Each call brings its own scratchpad (user mode), so threads can run one primitive at once. */
enum { MM_CACHE = 256, MM_MIN_WORK = 1 << 18 };
typedef struct {
    int64_t m, n, k, lda, ldw, ldc;
    int ta, tw, bias, sum, threads;
    int bf16;             /* bfloat16 src and weights (precision.c), float32 bias and dst */
    int act;              /* FNN_ACT_RELU: an eltwise relu post-op after the bias (linear's activation) */
    int packed;           /* weights in the layout the primitive picks (format "any"; fnn_gemm_pack_b), not strided */
    dnnl_primitive_t prim;
    dnnl_memory_desc_t src, wei, bia, dst, scr;
    int64_t scratch;      /* scratchpad bytes */
} mm_entry;
static struct {
    pthread_once_t once;
    dnnl_engine_t engine;
    pthread_mutex_t lock;
    int count;
    mm_entry entry[MM_CACHE];
} mm = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void mm_engine(void) {
    if (dnnl_engine_create(&mm.engine, dnnl_cpu, 0) != dnnl_success) mm.engine = NULL;
}

/* primitives made so far (matmul and convolution): a training step should make none after its
 * first, which fnn_config's onednn_primitives lets a spec check */
static atomic_long primitives_made;
void fnn_onednn_made(void) { atomic_fetch_add_explicit(&primitives_made, 1, memory_order_relaxed); }

/* the process's one CPU engine, for every oneDNN primitive of the core (conv_onednn.c too) */
dnnl_engine_t fnn_onednn_engine(void) {
    pthread_once(&mm.once, mm_engine);
    return mm.engine;
}

/* makes the entry's primitive; false when oneDNN has none for it */
static bool mm_make(mm_entry *e) {
    fnn_onednn_made();
    /* a transposed operand is the same bytes with swapped strides */
    dnnl_dims_t sd = {e->m, e->k}, ss = {e->ta ? 1 : e->lda, e->ta ? e->lda : 1};
    dnnl_dims_t wd = {e->k, e->n}, ws = {e->tw ? 1 : e->ldw, e->tw ? e->ldw : 1};
    dnnl_dims_t bd = {1, e->n}, bs = {e->n, 1}, dd = {e->m, e->n}, ds = {e->ldc, 1};
    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t post = NULL;
    dnnl_primitive_desc_t pd = NULL;
    const dnnl_data_type_t in = e->bf16 ? dnnl_bf16 : dnnl_f32;
    bool ok = dnnl_memory_desc_init_by_strides(&e->src, 2, sd, in, ss) == dnnl_success &&
              (e->packed ? dnnl_memory_desc_init_by_tag(&e->wei, 2, wd, in, dnnl_format_tag_any)
                         : dnnl_memory_desc_init_by_strides(&e->wei, 2, wd, in, ws)) == dnnl_success &&
              dnnl_memory_desc_init_by_strides(&e->bia, 2, bd, dnnl_f32, bs) == dnnl_success &&
              dnnl_memory_desc_init_by_strides(&e->dst, 2, dd, dnnl_f32, ds) == dnnl_success &&
              dnnl_matmul_desc_init(&desc, &e->src, &e->wei, e->bias ? &e->bia : NULL, &e->dst) == dnnl_success &&
              dnnl_primitive_attr_create(&attr) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    if (ok && (e->sum || e->act)) {
        ok = dnnl_post_ops_create(&post) == dnnl_success;
        /* C += ...: the "sum" post-op reads C inside the kernel (beta = 1) */
        if (ok && e->sum) ok = dnnl_post_ops_append_sum(post, 1.0f) == dnnl_success;
        /* relu on the finished sum, in the kernel's registers: no pass over C of its own */
        if (ok && e->act == FNN_ACT_RELU)
            ok = dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) == dnnl_success;
        ok = ok && dnnl_primitive_attr_set_post_ops(attr, post) == dnnl_success;
    }
    ok = ok && dnnl_primitive_desc_create(&pd, &desc, attr, mm.engine, NULL) == dnnl_success;
    if (ok && e->bf16) {   /* a reference implementation would be far slower than the rounded f32 GEMM */
        const char *impl = NULL;
        ok = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
             strncmp(impl, "ref", 3) != 0;
    }
    if (ok && e->packed) {   /* the layout it picked: what fnn_gemm_pack_b reorders B into */
        const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        ok = wmd != NULL;
        if (ok) e->wei = *wmd;
    }
    if (ok) {
        const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        e->scratch = smd ? (int64_t)dnnl_memory_desc_get_size(smd) : 0;
        if (smd) e->scr = *smd;
        ok = dnnl_primitive_create(&e->prim, pd) == dnnl_success;
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (post) dnnl_post_ops_destroy(post);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return ok;
}

static bool same_shape(const mm_entry *a, const mm_entry *b) {
    return a->m == b->m && a->n == b->n && a->k == b->k && a->lda == b->lda && a->ldw == b->ldw &&
           a->ldc == b->ldc && a->ta == b->ta && a->tw == b->tw && a->bias == b->bias && a->sum == b->sum &&
           a->threads == b->threads && a->bf16 == b->bf16 && a->act == b->act && a->packed == b->packed;
}

/* the cached primitive for this shape, made on first use; NULL: none (a shape oneDNN refused stays
 * in the table without a primitive, so it is asked once; or the table is full) */
static const mm_entry *mm_find(const mm_entry *key) {
    pthread_once(&mm.once, mm_engine);
    if (!mm.engine) return NULL;
    pthread_mutex_lock(&mm.lock);
    int i = 0;
    while (i < mm.count && !same_shape(&mm.entry[i], key)) i++;
    if (i == mm.count && mm.count < MM_CACHE) {
        mm_entry *e = &mm.entry[mm.count++];
        *e = *key;
        e->prim = NULL;
        if (!mm_make(e)) e->prim = NULL;
    }
    const mm_entry *found = i < mm.count && mm.entry[i].prim ? &mm.entry[i] : NULL;
    pthread_mutex_unlock(&mm.lock);
    return found;
}

static bool mm_run(const mm_entry *e, const void *a, const void *w, const float *bias, float *c) {
    dnnl_stream_t stream = NULL;
    dnnl_memory_t mem[5] = {NULL, NULL, NULL, NULL, NULL};
    void *scratch = e->scratch ? fnn_alloc(FNN_DEVICE_CPU, e->scratch) : NULL;
    bool ok = (!e->scratch || scratch) && dnnl_stream_create(&stream, mm.engine, dnnl_stream_default_flags) == dnnl_success &&
              dnnl_memory_create(&mem[0], &e->src, mm.engine, (void *)a) == dnnl_success &&
              dnnl_memory_create(&mem[1], &e->wei, mm.engine, (void *)w) == dnnl_success &&
              dnnl_memory_create(&mem[2], &e->dst, mm.engine, c) == dnnl_success;
    int nargs = 3;
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]}};
    if (ok && e->bias) {
        ok = dnnl_memory_create(&mem[3], &e->bia, mm.engine, (void *)bias) == dnnl_success;
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mem[3]};
    }
    if (ok && scratch) {
        ok = dnnl_memory_create(&mem[4], &e->scr, mm.engine, scratch) == dnnl_success;
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mem[4]};
    }
    fnn_onednn_team_mark();
    ok = ok && dnnl_primitive_execute(e->prim, stream, nargs, args) == dnnl_success &&
         dnnl_stream_wait(stream) == dnnl_success;
    for (int i = 0; i < 5; i++) if (mem[i]) dnnl_memory_destroy(mem[i]);
    if (stream) dnnl_stream_destroy(stream);
    if (scratch) fnn_free(FNN_DEVICE_CPU, scratch, e->scratch);
    return ok;
}
#endif

#ifdef FASTNN_WITH_ONEDNN
/* the products the fused matmul primitive takes: oneDNN's kernels, enough work, C = AB or C += AB */
static bool fused_shape_ok(int64_t m, int64_t n, int64_t k, float beta) {
    return onednn_on() && m * n * k >= MM_MIN_WORK && m > 0 && n > 0 && k > 0 && (beta == 0.0f || beta == 1.0f);
}
#endif

static bool gemm_fused(int act, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                       const float *b, int64_t ldb, const float *bias, float beta, float *c, int64_t ldc) {
#ifdef FASTNN_WITH_ONEDNN
    if (!fused_shape_ok(m, n, k, beta)) return false;
#ifdef _OPENMP
    /* a primitive made for the pool's threads would split its work for them; inside a parallel
     * region it would get a team of one and compute only the first share: dnnl_sgemm there */
    if (omp_in_parallel()) return false;
    int threads = omp_get_max_threads();   /* what oneDNN runs with */
#else
    int threads = 1;
#endif
    mm_entry key = {.m = m, .n = n, .k = k, .lda = lda, .ldw = ldb, .ldc = ldc, .ta = ta, .tw = tb,
                    .bias = bias != NULL, .sum = beta != 0.0f, .threads = threads, .act = act};
    const mm_entry *e = mm_find(&key);
    return e && mm_run(e, a, b, bias, c);
#else
    (void)act; (void)ta; (void)tb; (void)m; (void)n; (void)k; (void)a; (void)lda; (void)b; (void)ldb; (void)bias; (void)beta;
    (void)c; (void)ldc;
    return false;
#endif
}

bool fnn_gemm_fused(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                    int64_t ldb, const float *bias, float beta, float *c, int64_t ldc) {
    return gemm_fused(FNN_ACT_NONE, ta, tb, m, n, k, a, lda, b, ldb, bias, beta, c, ldc);
}

/* ================= one B for many products: the recurrent layers' weights =================
 * A recurrent layer multiplies the same W_hh by a new batch of rows at every time step. oneDNN's
 * matmul on strided weights copies them into its blocked layout on every call: for lstm_seq's W_hh
 * (1 MB) a quarter of the 32 x 256 x 1024 step (75 us at 2 threads, Emerald Rapids). Reordered once
 * into the layout the primitive picks (weights format "any"), every step runs on them as they are
 * (55 us; the reorder costs about one step). */
struct fnn_packed_b {
#ifdef FASTNN_WITH_ONEDNN
    const mm_entry *e;    /* the primitive of the products, made for packed weights */
#endif
    void *w;              /* op(B) in the primitive's layout (rounded to bfloat16 values when round) */
    int64_t bytes;
    bool round;           /* bf16 precision off the bf16 units: A is rounded into a dense copy per product */
    int64_t m, k, lda;
};

#ifdef FASTNN_WITH_ONEDNN
/* w (e->wei's layout) = op(B) [k, n] from b at ldb (tb: b is [n, k]) */
static bool pack_reorder(const mm_entry *e, bool tb, int64_t n, int64_t k, const float *b, int64_t ldb, void *w) {
    dnnl_dims_t dims = {k, n}, strides = {tb ? 1 : ldb, tb ? ldb : 1};
    dnnl_memory_desc_t user;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t r = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t from = NULL, to = NULL;
    bool ok = dnnl_memory_desc_init_by_strides(&user, 2, dims, dnnl_f32, strides) == dnnl_success &&
              dnnl_reorder_primitive_desc_create(&pd, &user, mm.engine, &e->wei, mm.engine, NULL) == dnnl_success &&
              dnnl_primitive_create(&r, pd) == dnnl_success &&
              dnnl_stream_create(&stream, mm.engine, dnnl_stream_default_flags) == dnnl_success &&
              dnnl_memory_create(&from, &user, mm.engine, (void *)b) == dnnl_success &&
              dnnl_memory_create(&to, &e->wei, mm.engine, w) == dnnl_success;
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    fnn_onednn_team_mark();
    ok = ok && dnnl_primitive_execute(r, stream, 2, args) == dnnl_success && dnnl_stream_wait(stream) == dnnl_success;
    if (from) dnnl_memory_destroy(from);
    if (to) dnnl_memory_destroy(to);
    if (stream) dnnl_stream_destroy(stream);
    if (r) dnnl_primitive_destroy(r);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return ok;
}
#endif

fnn_packed_b *fnn_gemm_pack_b(bool tb, int64_t m, int64_t n, int64_t k, const float *b, int64_t ldb, int64_t lda,
                              float beta, int64_t ldc, bool round_bf16, bool serial) {
#ifdef FASTNN_WITH_ONEDNN
    if (!fused_shape_ok(m, n, k, beta)) return NULL;
#ifdef _OPENMP
    if (omp_in_parallel()) return NULL;   /* as gemm_fused: a primitive planned for the pool */
    const int pool = omp_get_max_threads(), threads = serial ? 1 : pool;
#else
    const int threads = 1;
#endif
    /* rounding, every A is a dense copy: the primitive reads it at lda k */
    mm_entry key = {.m = m, .n = n, .k = k, .lda = round_bf16 ? k : lda, .ldc = ldc, .sum = beta != 0.0f,
                    .threads = threads, .packed = 1};
#ifdef _OPENMP
    /* oneDNN plans a primitive for the threads it may use when it is made: one, for a serial one */
    if (threads != pool) omp_set_num_threads(threads);
    const mm_entry *e = mm_find(&key);
    if (threads != pool) omp_set_num_threads(pool);
#else
    const mm_entry *e = mm_find(&key);
#endif
    if (!e) return NULL;
    fnn_packed_b *p = malloc(sizeof *p);
    if (!p) return NULL;
    *p = (fnn_packed_b){.e = e, .bytes = (int64_t)dnnl_memory_desc_get_size(&e->wei), .round = round_bf16, .m = m,
                        .k = k, .lda = lda};
    p->w = fnn_alloc(FNN_DEVICE_CPU, p->bytes);
    bool ok = p->w != NULL;
    if (ok && round_bf16) {   /* B's bfloat16 values, rounded once for every product (op(B)'s storage, dense) */
        const int64_t rows = tb ? n : k, cols = tb ? k : n, bytes = (int64_t)sizeof(float) * rows * cols;
        float *r = fnn_alloc(FNN_DEVICE_CPU, bytes);
        ok = r != NULL;
        if (ok) {
            fnn_round_bf16_matrix(r, b, rows, cols, ldb);
            ok = pack_reorder(e, tb, n, k, r, cols, p->w);
            fnn_free(FNN_DEVICE_CPU, r, bytes);
        }
    } else if (ok) {
        ok = pack_reorder(e, tb, n, k, b, ldb, p->w);
    }
    if (!ok) {
        fnn_gemm_packed_free(p);   /* no memory for the copy: the products take B as it is */
        return NULL;
    }
    return p;
#else
    (void)tb; (void)m; (void)n; (void)k; (void)b; (void)ldb; (void)lda; (void)beta; (void)ldc; (void)round_bf16;
    (void)serial;
    return NULL;
#endif
}

bool fnn_gemm_packed(const fnn_packed_b *p, const float *a, float *c) {
#ifdef FASTNN_WITH_ONEDNN
#ifdef _OPENMP
    /* a serial primitive runs anywhere on its caller's thread; one planned for the pool, outside a region */
    if (p->e->threads != 1 && (omp_in_parallel() || omp_get_max_threads() != p->e->threads)) return false;
#endif
    if (!onednn_on()) return false;
    if (!p->round) return mm_run(p->e, a, p->w, NULL, c);
    const int64_t bytes = (int64_t)sizeof(float) * p->m * p->k;
    float *r = fnn_alloc(FNN_DEVICE_CPU, bytes);
    if (!r) return false;
    fnn_round_bf16_matrix(r, a, p->m, p->k, p->lda);
    bool ok = mm_run(p->e, r, p->w, NULL, c);
    fnn_free(FNN_DEVICE_CPU, r, bytes);
    return ok;
#else
    (void)p; (void)a; (void)c;
    return false;
#endif
}

void fnn_gemm_packed_free(fnn_packed_b *p) {
    if (!p) return;
    if (p->w) fnn_free(FNN_DEVICE_CPU, p->w, p->bytes);
    free(p);
}

#ifdef FASTNN_WITH_ONEDNN
/* oneDNN runs here with bf16 units (AVX512-BF16 or better); *amx: its ISA has AMX tiles. The ISA values
 * are nested bit sets */
static bool onednn_bf16_units(bool *amx) {
    const unsigned bf16 = dnnl_cpu_isa_avx512_core_bf16, tiles = dnnl_cpu_isa_avx512_core_amx;
    const unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    *amx = (isa & tiles) == tiles;
    return onednn_on() && (isa & bf16) == bf16;
}
#endif

bool fnn_bf16_native(void) {
#ifdef FASTNN_WITH_ONEDNN
    bool amx;
    return onednn_bf16_units(&amx) && fnn_bf16_units_pay(amx);
#else
    return false;
#endif
}

static bool gemm_bf16(int act, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                      const float *b, int64_t ldb, const float *bias, float beta, float *c, int64_t ldc) {
#ifdef FASTNN_WITH_ONEDNN
    if (!fnn_bf16_native() || m <= 0 || n <= 0 || k <= 0 || (beta != 0.0f && beta != 1.0f)) return false;
#ifdef _OPENMP
    if (omp_in_parallel()) return false;   /* as fnn_gemm_fused: a primitive planned for the pool */
    int threads = omp_get_max_threads();
#else
    int threads = 1;
#endif
    /* the operands as dense bfloat16 copies in their stored layout (op(A) is A's bytes read transposed) */
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int64_t abytes = 2 * ar * ac, bbytes = 2 * br * bc;
    uint16_t *a16 = fnn_alloc(FNN_DEVICE_CPU, abytes), *b16 = a16 ? fnn_alloc(FNN_DEVICE_CPU, bbytes) : NULL;
    bool ok = false;
    if (b16) {
        /* linear's bfloat16 x reaches here widened (ops/linalg.c's entry); its own bytes could stand for a16 */
        fnn_to_bf16_matrix(a16, a, ar, ac, lda);
        fnn_to_bf16_matrix(b16, b, br, bc, ldb);
        mm_entry key = {.m = m, .n = n, .k = k, .lda = ac, .ldw = bc, .ldc = ldc, .ta = ta, .tw = tb,
                        .bias = bias != NULL, .sum = beta != 0.0f, .threads = threads, .bf16 = 1, .act = act};
        const mm_entry *e = mm_find(&key);
        ok = e && mm_run(e, a16, b16, bias, c);
    }
    if (a16) fnn_free(FNN_DEVICE_CPU, a16, abytes);
    if (b16) fnn_free(FNN_DEVICE_CPU, b16, bbytes);
    return ok;
#else
    (void)act; (void)ta; (void)tb; (void)m; (void)n; (void)k; (void)a; (void)lda; (void)b; (void)ldb; (void)bias; (void)beta;
    (void)c; (void)ldc;
    return false;
#endif
}

bool fnn_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                   int64_t ldb, const float *bias, float beta, float *c, int64_t ldc) {
    return gemm_bf16(FNN_ACT_NONE, ta, tb, m, n, k, a, lda, b, ldb, bias, beta, c, ldc);
}

/* a kernel that splits its work over the threads and calls fnn_sgemm inside each part: oneDNN
 * already runs serially there; OpenBLAS is held at one thread meanwhile (process-wide: a GEMM that
 * another host thread runs meanwhile also runs on one thread, correct but slower), and the next
 * GEMM outside a parallel region gives it the count back */
void fnn_sgemm_parallel_for(int64_t n, int threads, fnn_range_fn fn, void *ctx) {
    if (threads > 1 && !onednn_on()) blas_threads_set(1);
    fnn_parallel_for(n, threads, fn, ctx);
}

/* ================= under the float32 precision (core/precision.c's setting) =================
 * fnn_gemm_prec is the one GEMM the GEMM-bound families call. Under "bf16" it runs oneDNN's bf16
 * matmul where the CPU has bf16 units (fnn_gemm_bf16), and elsewhere (no such units, the portable
 * kernels, inside an image or head slot's parallel part, a scale other than 1) it rounds the operands
 * to bfloat16 in float32 buffers (precision.c's conversions) and runs the float32 GEMM on them: a
 * product of two bf16 values is exact in float32, so both give the same numbers up to the order of
 * the sums. */

/* every value of a rows x cols matrix at ld is a bfloat16 already (its low 16 bits zero): autocast's
 * activations, widened exactly, need no rounded copy. A row's bits are OR-ed (a loop that vectorizes)
 * and the scan stops at the first row that is not, which for float32 data is the first */
static bool bf16_exact(const float *x, int64_t rows, int64_t cols, int64_t ld) {
    for (int64_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        uint32_t low = 0;
        for (int64_t c = 0; c < cols; c++) {
            uint32_t u;
            memcpy(&u, &row[c], sizeof u);
            low |= u & 0xffffu;
        }
        if (low) return false;
    }
    return true;
}

/* the rounded copy of op(X)'s storage: X is (t ? inner x outer : outer x inner) at ld; NULL with *ld_out
 * = ld when X holds bfloat16 values already (exact: known, so not scanned; the caller uses X itself) or
 * there is no memory for it */
static float *rounded(const float *x, bool exact, bool t, int64_t outer, int64_t inner, int64_t ld, int64_t *ld_out) {
    int64_t rows = t ? inner : outer, cols = t ? outer : inner;
    *ld_out = ld;
    if (exact || bf16_exact(x, rows, cols, ld)) return NULL;
    float *r = fnn_alloc(FNN_DEVICE_CPU, (int64_t)sizeof(float) * rows * cols);
    if (r) {
        fnn_round_bf16_matrix(r, x, rows, cols, ld);
        *ld_out = cols;
    }
    return r;
}

/* op(A), op(B) of an m x n x k product as bf16 precision multiplies them: each rounded into a copy (rounded()),
 * or used as is where it holds bf16 values already (exact: bit 0 a, bit 1 b) or no memory was left */
typedef struct {
    const float *a, *b;
    int64_t lda, ldb;
    float *own_a, *own_b;
    int64_t bytes_a, bytes_b;
} operands;

static void round_operands(operands *r, unsigned exact, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                           const float *a, int64_t lda, const float *b, int64_t ldb) {
    r->own_a = rounded(a, exact & 1u, ta, m, k, lda, &r->lda);
    r->own_b = rounded(b, exact & 2u, tb, k, n, ldb, &r->ldb);
    r->a = r->own_a ? r->own_a : a, r->b = r->own_b ? r->own_b : b;
    r->bytes_a = (int64_t)sizeof(float) * m * k, r->bytes_b = (int64_t)sizeof(float) * k * n;
}

static void free_operands(const operands *r) {
    if (r->own_a) fnn_free(FNN_DEVICE_CPU, r->own_a, r->bytes_a);
    if (r->own_b) fnn_free(FNN_DEVICE_CPU, r->own_b, r->bytes_b);
}

const float *fnn_bf16_values(const float *x, int64_t n, float **owned) {
    *owned = NULL;
    /* scanned in rows of 4096, so float32 data stops the scan within its first row */
    const int64_t cols = 4096, full = n / cols;
    if (bf16_exact(x, full, cols, cols) && bf16_exact(x + full * cols, 1, n - full * cols, n - full * cols))
        return x;
    float *r = fnn_alloc(FNN_DEVICE_CPU, (int64_t)sizeof(float) * n);
    if (!r) return NULL;
    fnn_round_bf16_matrix(r, x, 1, n, n);
    *owned = r;
    return r;
}

void fnn_gemm_prec(int family, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    fnn_gemm_prec_exact(family, 0, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void fnn_gemm_prec_exact(int family, unsigned exact, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (!fnn_prec_bf16(family) || m <= 0 || n <= 0 || k <= 0) {
        fnn_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f) &&
        fnn_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, NULL, beta, c, ldc))
        return;
    operands r;
    round_operands(&r, exact, ta, tb, m, n, k, a, lda, b, ldb);
    fnn_sgemm(ta, tb, m, n, k, alpha, r.a, r.lda, r.b, r.ldb, beta, c, ldc);
    free_operands(&r);
}

/* bf16 precision's fused GEMM off the bf16 units: the operands rounded as fnn_gemm_prec_exact rounds them,
 * then the float32 primitive with its bias and activation inside, as under 'ieee' (the same bits as the
 * float32 op on rounded operands). false, before any copy, where gemm_fused would refuse the shape */
static bool gemm_fused_emulated(int act, unsigned exact, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias, float beta,
                                float *c, int64_t ldc) {
#ifdef FASTNN_WITH_ONEDNN
    if (!fused_shape_ok(m, n, k, beta)) return false;
#ifdef _OPENMP
    if (omp_in_parallel()) return false;
#endif
    operands r;
    round_operands(&r, exact, ta, tb, m, n, k, a, lda, b, ldb);
    bool ok = gemm_fused(act, ta, tb, m, n, k, r.a, r.lda, r.b, r.ldb, bias, beta, c, ldc);
    free_operands(&r);
    return ok;
#else
    (void)act; (void)exact; (void)ta; (void)tb; (void)m; (void)n; (void)k; (void)a; (void)lda; (void)b; (void)ldb;
    (void)bias; (void)beta; (void)c; (void)ldc;
    return false;
#endif
}

bool fnn_gemm_fused_prec(int family, unsigned exact, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                         int64_t lda, const float *b, int64_t ldb, const float *bias, float beta, float *c, int64_t ldc) {
    if (fnn_prec_bf16(family))
        return fnn_bf16_native() ? fnn_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, bias, beta, c, ldc)
                                 : gemm_fused_emulated(FNN_ACT_NONE, exact, ta, tb, m, n, k, a, lda, b, ldb, bias, beta,
                                                       c, ldc);
    return fnn_gemm_fused(ta, tb, m, n, k, a, lda, b, ldb, bias, beta, c, ldc);
}

bool fnn_gemm_fused_act_prec(int family, int act, unsigned exact, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                             const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias, float *c,
                             int64_t ldc) {
    if (act != FNN_ACT_NONE && act != FNN_ACT_RELU) return false;   /* gelu: the caller's pass (it keeps z) */
    if (fnn_prec_bf16(family))
        return fnn_bf16_native() ? gemm_bf16(act, ta, tb, m, n, k, a, lda, b, ldb, bias, 0.0f, c, ldc)
                                 : gemm_fused_emulated(act, exact, ta, tb, m, n, k, a, lda, b, ldb, bias, 0.0f, c, ldc);
    return gemm_fused(act, ta, tb, m, n, k, a, lda, b, ldb, bias, 0.0f, c, ldc);
}

/* ================= the CPU ================= */

typedef struct {
    char model[49];
    char vendor[13];
    unsigned family, model_id, stepping;
    bool sse42, avx, avx2, fma, avx512, avx512_bf16, avx512_vnni, amx;
} cpu_info;

static void read_cpu(cpu_info *c) {
    memset(c, 0, sizeof *c);
    unsigned r[4] = {0, 0, 0, 0};
    if (__get_cpuid(0, &r[0], &r[1], &r[2], &r[3])) {
        memcpy(c->vendor, &r[1], 4); memcpy(c->vendor + 4, &r[3], 4); memcpy(c->vendor + 8, &r[2], 4);
    }
    if (__get_cpuid(1, &r[0], &r[1], &r[2], &r[3])) {   /* the display family and model, as lscpu */
        unsigned fam = (r[0] >> 8) & 15, mod = (r[0] >> 4) & 15;
        c->family = fam == 15 ? fam + ((r[0] >> 20) & 255) : fam;
        c->model_id = fam == 6 || fam == 15 ? mod | (((r[0] >> 16) & 15) << 4) : mod;
        c->stepping = r[0] & 15;
    }
    unsigned top = __get_cpuid_max(0x80000000u, NULL);
    if (top >= 0x80000004u) {
        for (unsigned i = 0; i < 3; i++) {
            __get_cpuid(0x80000002u + i, &r[0], &r[1], &r[2], &r[3]);
            memcpy(c->model + 16 * i, r, 16);
        }
    }
    char *s = c->model;   /* brand strings are padded with spaces on the left */
    while (*s == ' ') s++;
    memmove(c->model, s, strlen(s) + 1);
    /* __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0) */
    __builtin_cpu_init();
    c->sse42 = __builtin_cpu_supports("sse4.2");
    c->avx = __builtin_cpu_supports("avx");
    c->avx2 = __builtin_cpu_supports("avx2");
    c->fma = __builtin_cpu_supports("fma");
    c->avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512cd");
    c->avx512_vnni = __builtin_cpu_supports("avx512vnni");
    c->avx512_bf16 = __builtin_cpu_supports("avx512bf16");
    unsigned a7, b7, c7, d7;
    c->amx = __get_cpuid_count(7, 0, &a7, &b7, &c7, &d7) && (d7 & (1u << 24));   /* AMX-TILE */
}

/* the widest vector level: 3 AVX-512, 2 AVX2+FMA, 1 AVX, 0 below */
static int cpu_level(const cpu_info *c) {
    return c->avx512 ? 3 : c->avx2 && c->fma ? 2 : c->avx ? 1 : 0;
}

static void isa_text(const cpu_info *c, char *buf, size_t cap) {
    snprintf(buf, cap, "%s%s%s%s%s%s%s%s", c->sse42 ? "SSE4.2" : "SSE", c->avx ? " AVX" : "",
             c->avx2 ? " AVX2" : "", c->fma ? " FMA" : "", c->avx512 ? " AVX-512" : "",
             c->avx512_vnni ? " AVX512-VNNI" : "", c->avx512_bf16 ? " AVX512-BF16" : "", c->amx ? " AMX" : "");
}

/* ================= OpenBLAS's core ================= */

/* the vector level of an OpenBLAS core, as above */
static int core_level(const char *core) {
    static const char *const l3[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    static const char *const l2[] = {"Haswell", "Zen", "Excavator"};
    static const char *const l1[] = {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller"};
    for (size_t i = 0; i < sizeof l3 / sizeof *l3; i++) if (strcasecmp(core, l3[i]) == 0) return 3;
    for (size_t i = 0; i < sizeof l2 / sizeof *l2; i++) if (strcasecmp(core, l2[i]) == 0) return 2;
    for (size_t i = 0; i < sizeof l1 / sizeof *l1; i++) if (strcasecmp(core, l1[i]) == 0) return 1;
    return 0;
}

/* OpenBLAS's name for the core that matches a level on this CPU (its own choice for such CPUs) */
static const char *core_for(const cpu_info *c, int level) {
    if (level >= 3) return c->avx512_bf16 ? "Cooperlake" : "SkylakeX";
    if (level == 2) return strcmp(c->vendor, "AuthenticAMD") == 0 ? "Zen" : "Haswell";
    return "Sandybridge";
}

static struct {
    pthread_once_t once;
    cpu_info cpu;
    char found[32];      /* the core OpenBLAS chose itself */
    char running[32];    /* the core it runs now */
    char note[160];      /* what the check did, for fnn_config */
} blas = {.once = PTHREAD_ONCE_INIT};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* does cblas_sgemm agree with a plain loop in double on small odd shapes, both transposes? */
static bool sgemm_agrees(void) {
    enum { M = 37, N = 29, K = 53 };
    static float a[M * K], b[K * N], c[M * N];
    uint32_t s = 12345;
    for (int i = 0; i < M * K; i++) { s = s * 1664525u + 1013904223u; a[i] = (float)(s >> 8) / 16777216.0f - 0.5f; }
    for (int i = 0; i < K * N; i++) { s = s * 1664525u + 1013904223u; b[i] = (float)(s >> 8) / 16777216.0f - 0.5f; }
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        for (int i = 0; i < M * N; i++) c[i] = 1.0f;
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
                    0.5f, a, ta ? M : K, b, tb ? K : N, 2.0f, c, N);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int p = 0; p < K; p++)
                    acc += (double)(ta ? a[p * M + i] : a[i * K + p]) * (double)(tb ? b[j * K + p] : b[p * N + j]);
                double want = 0.5 * acc + 2.0;
                if (!(fabs((double)c[i * N + j] - want) <= 1e-4 * (1.0 + fabs(want)))) return false;
            }
    }
    return true;
}

/* GFLOP/s of a 256^3 sgemm on one thread, for the warning's figures */
static double sgemm_gflops(void) {
    enum { S = 256 };
    float *a = calloc(3 * S * S, sizeof(float));
    if (!a) return 0;
    blas_threads_set(1);
    double t0 = now_s();
    for (int r = 0; r < 4; r++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, S, S, 1.0f, a, S, a + S * S, S, 0.0f,
                    a + 2 * S * S, S);
    double dt = now_s() - t0;
    free(a);
    return dt > 0 ? 4.0 * 2.0 * S * S * S / dt * 1e-9 : 0;
}

/* OpenBLAS's pool threads, started by its constructor, each call blas_memory_alloc first; the
 * first such call anywhere runs gotoblas_dynamic_init, unsynchronised with the quit/init below (a
 * pool thread read the table as NULL between them and crashed, now and then, at load). One
 * allocation here, under OpenBLAS's allocation lock, finishes that first call before we touch the
 * table: later ones skip the init. */
static void settle_openblas_memory(void) {
    if (!blas_memory_alloc || !blas_memory_free) return;
    void *buffer = blas_memory_alloc(0);
    if (buffer) blas_memory_free(buffer);
}

static void select_core(const char *name) {
    settle_openblas_memory();
    const char *old = getenv("OPENBLAS_CORETYPE");
    char saved[64] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("OPENBLAS_CORETYPE", name, 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    if (old) setenv("OPENBLAS_CORETYPE", saved, 1);
    else unsetenv("OPENBLAS_CORETYPE");
}

static void check_core(void) {
    read_cpu(&blas.cpu);
    const char *core = openblas_get_corename();
    snprintf(blas.found, sizeof blas.found, "%s", core ? core : "unknown");
    snprintf(blas.running, sizeof blas.running, "%s", blas.found);
    int want = cpu_level(&blas.cpu), have = core_level(blas.found);
    /* ONEDNN_MAX_CPU_ISA caps oneDNN to run as an older CPU would (AVX2 for an AVX2-only CPU): the
     * OpenBLAS core follows the same cap */
    const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
    if (cap && *cap) {
        int capped = strncasecmp(cap, "AVX512", 6) == 0 || strcasecmp(cap, "ALL") == 0 ? 3
                     : strncasecmp(cap, "AVX2", 4) == 0 ? 2 : strncasecmp(cap, "AVX", 3) == 0 ? 1 : 0;
        if (capped < want) want = capped;
    }
    /* only a generic core (below AVX2) is replaced: an AVX2 core on an AVX-512 CPU is a choice
     * (OPENBLAS_CORETYPE=Haswell runs as an AVX2-only CPU would), not a failure to recognise it */
    if (have >= 2 || want < 2) {
        snprintf(blas.note, sizeof blas.note, "chosen by OpenBLAS");
        return;
    }
    char isa[128];
    isa_text(&blas.cpu, isa, sizeof isa);
    const char *keep = getenv("FASTNN_BLAS_CORE");
    bool may_fix = !(keep && strcmp(keep, "keep") == 0) && gotoblas_dynamic_init && gotoblas_dynamic_quit;
    if (may_fix) {
        const char *target = core_for(&blas.cpu, want);
        select_core(target);
        const char *now = openblas_get_corename();
        if (now && strcasecmp(now, target) == 0 && sgemm_agrees()) {
            snprintf(blas.running, sizeof blas.running, "%s", now);
            snprintf(blas.note, sizeof blas.note, "corrected from %s, which OpenBLAS chose on this CPU", blas.found);
            return;
        }
        select_core(blas.found);   /* back to what OpenBLAS chose itself */
    }
    double gf = sgemm_gflops();
    openblas_set_num_threads(fnn_get_num_threads());
    snprintf(blas.note, sizeof blas.note, "left at %s: %s; a 256^3 sgemm ran at %.0f GFLOP/s on one thread",
             blas.found, may_fix ? "the matching core failed its check" : "not allowed to change it", gf);
    fprintf(stderr,
            "fastnn: OpenBLAS runs its '%s' kernels on this CPU (%s), below what it supports; a 256^3 sgemm "
            "ran at %.0f GFLOP/s on one thread. %s\n",
            blas.found, isa, gf,
            may_fix ? "Selecting the matching core failed its check against a plain loop, so it was left."
                    : "FASTNN_BLAS_CORE=keep (or an OpenBLAS without DYNAMIC_ARCH) kept it.");
#ifdef FASTNN_WITH_ONEDNN
    fprintf(stderr, "fastnn: the oneDNN kernels (the default) do not use OpenBLAS.\n");
#endif
}

/* at load, on the loading thread, before any GEMM: OpenBLAS's constructor has run (a dependency).
 * That constructor started OpenBLAS's pool (a thread per core but one), whose threads poll for work,
 * yielding, for ~0.27 s before they sleep: on a machine with few cores they take the CPU from the
 * first steps of a run (group_norm's forward and backward, [32, 64, 32, 32]: 3.4-4.5 ms a step for
 * the first ~80 ms after load against 1.6-1.9 with OPENBLAS_NUM_THREADS=1, 2 vCPUs). The oneDNN
 * kernels (the default) never call OpenBLAS on more than one thread, so the pool is stopped; the
 * portable kernels' first threaded GEMM starts it again (exec_blas's lazy start, as after a fork). */
__attribute__((constructor)) static void blas_load(void) {
    const char *env = getenv("FASTNN_KERNELS");
    if (env && *env && fnn_set_kernels(env) != FNN_STATUS_OK)
        fprintf(stderr, "fastnn: FASTNN_KERNELS=%s ignored: %s\n", env, fnn_last_error());
    pthread_once(&blas.once, check_core);
    if (onednn_on() && blas_thread_shutdown_) blas_thread_shutdown_();
}

/* ================= fnn_config ================= */

#ifdef FASTNN_WITH_ONEDNN
static const char *onednn_isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "SSE4.1";
    case dnnl_cpu_isa_avx: return "AVX";
    case dnnl_cpu_isa_avx2: return "AVX2";
    case dnnl_cpu_isa_avx2_vnni: return "AVX2-VNNI";
    case dnnl_cpu_isa_avx512_core: return "AVX-512";
    case dnnl_cpu_isa_avx512_core_vnni: return "AVX-512 VNNI";
    case dnnl_cpu_isa_avx512_core_bf16: return "AVX-512 BF16";
    case dnnl_cpu_isa_avx512_core_amx: return "AVX-512 AMX";
    default: return "other";
    }
}
#endif

/* "key\tvalue\n" lines into buf (cut at cap); returns the length it needed */
int64_t fnn_config(char *buf, int64_t cap) {
    pthread_once(&blas.once, check_core);
    char isa[128];
    isa_text(&blas.cpu, isa, sizeof isa);
    char text[2048], version[32];
    const char *ov = OPENBLAS_VERSION;   /* " OpenBLAS 0.3.21 " */
    while (*ov == ' ') ov++;
    snprintf(version, sizeof version, "%s", ov);
    for (size_t n = strlen(version); n > 0 && version[n - 1] == ' '; n--) version[n - 1] = '\0';
    int len = snprintf(text, sizeof text,
                       "cpu\t%s (family %u, model %u, stepping %u)\nvendor\t%s\nisa\t%s\nkernels\t%s\nblas\t%s\n"
                       "blas_core\t%s\nblas_core_note\t%s\n",
                       blas.cpu.model[0] ? blas.cpu.model : "unknown", blas.cpu.family, blas.cpu.model_id,
                       blas.cpu.stepping, blas.cpu.vendor, isa, fnn_get_kernels(), version, blas.running, blas.note);
#ifdef FASTNN_WITH_ONEDNN
    const dnnl_version_t *v = dnnl_version();
    len += snprintf(text + len, sizeof text - (size_t)len, "onednn\t%d.%d.%d (%s)\nonednn_isa\t%s\nonednn_primitives\t%ld\n",
                    v->major, v->minor, v->patch, v->hash ? v->hash : "", onednn_isa_name(dnnl_get_effective_cpu_isa()),
                    atomic_load_explicit(&primitives_made, memory_order_relaxed));
#else
    len += snprintf(text + len, sizeof text - (size_t)len, "onednn\tnot built (-DFASTNN_ONEDNN=OFF)\n");
#endif
    len += snprintf(text + len, sizeof text - (size_t)len, "threads\t%d\nopenmp\t%s\n", fnn_get_num_threads(),
#ifdef _OPENMP
                    "yes"
#else
                    "no"
#endif
    );
    len += snprintf(text + len, sizeof text - (size_t)len, "float32_precision\tmatmul=%s conv=%s rnn=%s\n",
                    fnn_get_float32_precision("matmul"), fnn_get_float32_precision("conv"),
                    fnn_get_float32_precision("rnn"));
#ifdef FASTNN_WITH_ONEDNN
    bool amx;
    const bool units = onednn_bf16_units(&amx);
    char why[160];
    if (fnn_bf16_dot_ratio() > 0)
        snprintf(why, sizeof why, "; the AVX512-BF16 dot product retires %.2fx the float32 FMA's FLOPs here",
                 fnn_bf16_dot_ratio());
    else
        why[0] = '\0';
    if (fnn_bf16_native())
        len += snprintf(text + len, sizeof text - (size_t)len,
                        "bf16_path\tonednn bf16 matmul and convolution (%s%s; set_bf16_path '%s')\n",
                        onednn_isa_name(dnnl_get_effective_cpu_isa()), why, fnn_get_bf16_path());
    else if (units)
        len += snprintf(text + len, sizeof text - (size_t)len, "bf16_path\temulated: operands rounded to bf16, "
                        "float32 products (%s%s; set_bf16_path '%s')\n",
                        strcmp(fnn_get_bf16_path(), "emulated") == 0 ? "asked for" : "the bf16 units are no faster",
                        why, fnn_get_bf16_path());
    else
#endif
        len += snprintf(text + len, sizeof text - (size_t)len, "bf16_path\temulated: operands rounded to bf16, "
                        "float32 products (no bf16 units, or the portable kernels)\n");
    len += snprintf(text + len, sizeof text - (size_t)len, "build\t%s\n", FASTNN_BUILD_INFO);
    if (buf && cap > 0) {
        int64_t n = len < cap ? len : cap - 1;
        memcpy(buf, text, (size_t)n);
        buf[n] = '\0';
    }
    return len;
}
