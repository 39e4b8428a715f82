// spec/gpu/emulated_backend.cpp: the CUDA backend's kernels run on the host, for checking the
// device paths without a GPU (spec/gpu/emulate.sh builds it; see there). The device code of
// cuda/map.cu, reduction.cu, optim.cu, copy.cu, loss.cu, index.cu, norm.cu, cast.cu, int64.cu and linalg.cu
// (everything above each file's "host side" line) is compiled here as C++ with the CUDA keywords
// defined away, their launchers too (written with FNN_LAUNCH above that line), as are conv, pool,
// batch_norm, shape, sort, int64_reduce, rnn, attention, elementwise and backend.cu's fill in the
// other emulated_*.cpp files: a kernel is a plain function whose grid-stride loop covers everything
// as one thread; a reduction that runs a block per line on a GPU runs here as blockDim host threads
// with real barriers for __syncthreads and a per-warp exchange for __shfl_down_sync, so the warp
// and block reductions run as written. The math intrinsics (__expf, __sinf, ...) become libm's.
// Still host copies or stand-ins, here: the allocator is malloc (no caching) and copies memcpy
// (backend.cu's are the CUDA runtime), fnn_cuda_gemm a naive loop (cuBLAS in linalg.cu) and random draws
// a hash of (seed, index), not cuRAND (random.cu); emulated_xfer.cpp stands in for the pinned
// buffers and streams. What this cannot show: the real hardware (memory model, fast-math accuracy,
// launch limits, cuRAND, cuBLAS).
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
#include "linalg_body.inc"   /* the linalg rows; their gemm is fnn_cuda_gemm below */

std::atomic<long> mode_block, mode_thread;   /* emulated.h's launch counts */

static int count(void) { return 1; }
static void *m_alloc(int, size_t b) { return malloc(b ? b : 1); }
static void m_free(int, void *p, size_t) { free(p); }
static int m_copy(void *d, int, const void *s, int, size_t b) { memcpy(d, s, b); return 0; }
/* cuBLAS's stand-ins (linalg.cu's fnn_cuda_gemm and fnn_cuda_gemm_bf16 sit below its host-side line): a
 * naive loop, in double; the bf16 product reads its operands rounded to bfloat16 (core/bf16.h) */
static float operand(float v, bool bf16) { return bf16 ? fnn_bf16_round(v) : v; }
static int naive_gemm(bool bf16, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, int64_t sa,
                      const float *b, int ldb, int64_t sb, float beta, float *c, int ldc, int64_t sc, int batch) {
    for (int q = 0; q < batch; q++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int l = 0; l < k; l++)
                    acc += (double)operand(ta ? a[q * sa + l * lda + i] : a[q * sa + i * lda + l], bf16) *
                           operand(tb ? b[q * sb + j * ldb + l] : b[q * sb + l * ldb + j], bf16);
                float *o = &c[q * sc + i * ldc + j];
                *o = (float)(alpha * acc + (beta == 0 ? 0 : beta * *o));
            }
    return 0;
}
int fnn_cuda_gemm(int, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, int64_t sa,
                  const float *b, int ldb, int64_t sb, float beta, float *c, int ldc, int64_t sc, int batch) {
    return naive_gemm(false, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}
int fnn_cuda_gemm_bf16(int, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, int64_t sa,
                       const float *b, int ldb, int64_t sb, float beta, float *c, int ldc, int64_t sc, int batch) {
    return naive_gemm(true, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
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
/* the runtime's stand-ins here; each family's real launchers (above its .cu file's host-side line),
 * one entry a line, here or in the other emulated_*.cpp files */
static fnn_backend table;   /* zero until the constructors fill it, before the core registers it */
fnn_backend *emulated_backend(void) { return &table; }
EMULATED_BACKEND_ADD(runtime) {
    b->name = "cuda";
    b->device_count = count;
    b->alloc = m_alloc;
    b->free = m_free;
    b->copy = m_copy;
    b->random = m_random;
}
EMULATED_BACKEND_ADD(device_families) {
    b->strided_copy = fnn_cuda_strided_copy;
}
EMULATED_BACKEND_ADD(rows) { b->rows = fnn_cuda_row_tables; }   /* backend.cu's, cut into emulated_xfer.cpp */
extern "C" {
void fnn_cuda_register(void) { fnn_register_backend(FNN_DEVICE_CUDA, &table); }
__attribute__((visibility("default"))) int fnn_cuda_memory_stats(int64_t *live, int64_t *cached) { *live = 0; *cached = 0; return 0; }
__attribute__((visibility("default"))) void fnn_cuda_empty_cache(void) {}
__attribute__((destructor)) static void report(void) {
    fprintf(stderr, "emulated backend: %ld block-mode and %ld grid-stride launches\n", mode_block.load(), mode_thread.load());
}
}
