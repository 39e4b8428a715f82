// spec/gpu/emulated_backend.cpp: the CUDA backend's kernels run on the host, for checking the
// device paths without a GPU (spec/gpu/emulate.sh builds it; see there). The device code of
// cuda/map.cu, reduction.cu, optim.cu, copy.cu, loss.cu, index.cu, norm.cu, cast.cu and int64.cu (everything above each file's "host side" line)
// is compiled here as C++ with the CUDA keywords defined away: a kernel is a plain function whose
// grid-stride loop covers everything as one thread; a reduction that runs a block per line on a
// GPU runs here as blockDim host threads with real barriers for __syncthreads and a per-warp
// exchange for __shfl_down_sync, so the warp and block reductions run as written. The math
// intrinsics (__expf, __sinf, ...) become libm's, the allocator is malloc (no caching), matmul a
// naive loop, and random draws a hash of (seed, index), not cuRAND. What this cannot show: the
// real hardware (memory model, fast-math accuracy, launch limits, cuRAND, cuBLAS).
#include "emulated.h"
#include "map_body.inc"   /* cut from each cuda/<name>.cu at its host-side line (cmake/cut_device_code.cmake) */
#include "reduction_body.inc"
#include "optim_body.inc"
#include "copy_body.inc"
#include "loss_body.inc"
#include "index_body.inc"
#include "norm_body.inc"
#include "cast_body.inc"
#include "int64_body.inc"

static int count(void) { return 1; }
static void *m_alloc(int, size_t b) { return malloc(b ? b : 1); }
static void m_free(int, void *p, size_t) { free(p); }
static int m_copy(void *d, int, const void *s, int, size_t b) { memcpy(d, s, b); return 0; }
static int m_fill(int, float *y, int64_t n, float v) { for (int64_t i = 0; i < n; i++) y[i] = v; return 0; }
static int m_binary(int, int op, float *y, const float *a, const int64_t *as, const float *b, const int64_t *bs, int nd,
                    const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, ao = 0, bo = 0;
        for (int d = nd - 1; d >= 0; d--) { int64_t k = rem % shape[d]; rem /= shape[d]; ao += k * as[d]; bo += k * bs[d]; }
        float x = a[ao], z = b[bo];
        y[i] = op == FNN_BIN_ADD ? x + z : op == FNN_BIN_SUB ? x - z : op == FNN_BIN_MUL ? x * z : x / z;
    }
    return 0;
}
static int m_gemm(int, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, int64_t sa,
                  const float *b, int ldb, int64_t sb, float beta, float *c, int ldc, int64_t sc, int batch) {
    for (int q = 0; q < batch; q++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int l = 0; l < k; l++)
                    acc += (double)(ta ? a[q * sa + l * lda + i] : a[q * sa + i * lda + l]) *
                           (tb ? b[q * sb + j * ldb + l] : b[q * sb + l * ldb + j]);
                float *o = &c[q * sc + i * ldc + j];
                *o = (float)(alpha * acc + (beta == 0 ? 0 : beta * *o));
            }
    return 0;
}
static int m_strided_copy(int, void *dst, const void *src, int esize, int ndim, const int64_t *shape, const int64_t *stride) {
    CopyLayout L;
    int64_t n = 1;
    L.ndim = ndim;
    for (int d = 0; d < ndim; d++) { L.shape[d] = shape[d]; L.stride[d] = stride[d]; n *= shape[d]; }
    if (esize == 8) strided_copy_kernel<int64_t, int64_t>((int64_t *)dst, (const int64_t *)src, n, L);
    else strided_copy_kernel<float, int64_t>((float *)dst, (const float *)src, n, L);
    return 0;
}
static uint64_t mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static int m_random(int, int op, float *y, int64_t n, uint64_t seed, uint64_t, double k0, double k1) {
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(mix(seed ^ mix((uint64_t)i)) >> 11) * (1.0 / 9007199254740992.0);
        double u2 = (double)(mix(seed + 7 * (uint64_t)i + 1) >> 11) * (1.0 / 9007199254740992.0) + 1e-300;
        y[i] = op == FNN_RNG_UNIFORM ? (float)(k0 + (k1 - k0) * u)
             : op == FNN_RNG_NORMAL ? (float)(k0 + k1 * sqrt(-2 * log(u2)) * cos(6.283185307179586 * u))
             : (u < k0 ? 1.0f : 0.0f);
    }
    return 0;
}
static int m_class_loss(int, int op, float *loss, float *wy, float *probs, const float *x, const int64_t *t,
                        const float *w, const fnn_class_args *a) {
    class_loss_kernel(op, loss, wy, probs, x, t, w, *a);
    return 0;
}
static int m_class_loss_grad(int, int op, float *dx, const float *probs, const int64_t *t, const float *w,
                             const float *g, const float *den, const fnn_class_args *a) {
    class_loss_grad_kernel(op, dx, probs, t, w, g, den, *a);
    return 0;
}
static int m_ew_loss(int, int op, float *loss, const float *x, const float *t, const float *w, const float *pw,
                     int64_t n) {
    ew_loss_kernel(op, loss, x, t, w, pw, n);
    return 0;
}
static int m_ew_loss_grad(int, int op, float *dx, float *dt, const float *x, const float *t, const float *w,
                          const float *pw, const float *g, int per_elem, float k, int64_t n) {
    ew_loss_grad_kernel(op, dx, dt, x, t, w, pw, g, per_elem, k, n);
    return 0;
}
static int m_index(int, int op, void *x, void *y, const int64_t *ids, int esize, const fnn_index_args *a) {
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
    if (n == 0) return 0;
    if (op == FNN_IDX_SCATTER) index_scatter_kernel((float *)x, (const float *)y, ids, n, *a);
    else if (esize == 8) index_gather_kernel<int64_t>((int64_t *)y, (const int64_t *)x, ids, n, *a);
    else index_gather_kernel<float>((float *)y, (const float *)x, ids, n, *a);
    return 0;
}
static int m_norm(int, int op, float *y, float *stats, const float *x, const float *w, const float *b, int64_t rows,
                  int64_t n, double eps, int64_t G, int64_t S) {
    if (rows && n) run_block(norm_threads(n), [&] { norm_rows_kernel(op, y, stats, x, w, b, rows, n, eps, G, S); });
    return 0;
}
static int m_norm_grad(int, int op, float *dx, float *dw, float *db, const float *g, const float *x, const float *w,
                       const float *stats, int64_t rows, int64_t n, int64_t G, int64_t S) {
    if (!n) return 0;
    if (dx && rows) run_block(norm_threads(n), [&] { norm_grad_rows_kernel(op, dx, g, x, w, stats, rows, n, G, S); });
    if (dw || db) {   /* the launcher's two passes, scratch by malloc */
        const int64_t C = G * n / S;
        int64_t chunk, chunks;
        norm_chunks(rows / G, C, &chunk, &chunks);
        double *part = (double *)malloc(2 * chunks * C * sizeof(double));
        if (!part) return FNN_FAIL(FNN_STATUS_OOM, "emulated norm_grad: no scratch");
        norm_grad_part_kernel(op, part, g, x, stats, rows, n, G, S, chunk, chunks);
        norm_grad_sum_kernel(dw, db, part, C, chunks);
        free(part);
    }
    return 0;
}
static int m_cast(int, int dtype, void *y, const void *x, int64_t n) {
    if (dtype == FNN_DTYPE_INT64) cast_to_long_kernel((int64_t *)y, (const float *)x, n);
    else cast_to_float_kernel((float *)y, (const int64_t *)x, n);
    return 0;
}
static int m_int_binary(int, int op, void *y, const void *a, int a_i64, const int64_t *as, const void *b, int b_i64,
                        const int64_t *bs, int ndim, const int64_t *shape) {
    IntLayout L;
    L.ndim = ndim;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) { L.shape[d] = shape[d]; L.as[d] = as[d]; L.bs[d] = bs[d]; n *= shape[d]; }
    if (n) int_binary_kernel(op, y, a, a_i64, b, b_i64, n, L);
    return 0;
}
static fnn_backend table = {"cuda", count, m_alloc, m_free, m_copy, m_fill, m_binary, m_gemm, m_strided_copy,
                                 fnn_cuda_map, fnn_cuda_reduce, fnn_cuda_reduce_grad, fnn_cuda_optim, m_random, m_class_loss, m_class_loss_grad,
                                 m_ew_loss, m_ew_loss_grad, m_index, m_norm, m_norm_grad, m_cast,
                                 m_int_binary};
fnn_backend *emulated_backend(void) { return &table; }
EMULATED_BACKEND_ADD(reduction) { b->reductions = fnn_cuda_reduction_rows; }
extern "C" {
void fnn_cuda_register(void) { fnn_register_backend(FNN_DEVICE_CUDA, &table); }
__attribute__((visibility("default"))) int fnn_cuda_memory_stats(int64_t *live, int64_t *cached) { *live = 0; *cached = 0; return 0; }
__attribute__((visibility("default"))) void fnn_cuda_empty_cache(void) {}
__attribute__((destructor)) static void report(void) { fprintf(stderr, "emulated backend: %ld block-mode and %ld grid-stride launches\n", mode_block, mode_thread); }
}
