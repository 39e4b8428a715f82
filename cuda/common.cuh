/* common.cuh: what every .cu file in cuda/ shares: the core's internal header
 * (seen from C++), FNN_CUDA_CHECK, launch sizes, and the launchers each file
 * contributes to the backend table that backend.cu registers.
 *
 * defines: FNN_CUDA_CHECK, fnn_cuda_blocks, fnn_cuda_use_device,
 *          fnn_cuda_binary (elementwise.cu), fnn_cuda_gemm (linalg.cu), fnn_cuda_strided_copy
 *          (copy.cu), fnn_cuda_map (map.cu), fnn_cuda_reduce and fnn_cuda_reduce_grad (reduction.cu),
 *          fnn_cuda_optim (optim.cu), fnn_cuda_random (random.cu),
 *          fnn_cuda_index (index.cu), fnn_cuda_cast (cast.cu),
 *          fnn_cuda_int_binary (int64.cu) */
#ifndef FASTNN_CUDA_COMMON_CUH
#define FASTNN_CUDA_COMMON_CUH

/* internal.h takes atomic_long from C11 <stdatomic.h>, which C++17 lacks.
 * cuda/ never touches the refcounts, so a type of the same size and alignment
 * keeps the struct layouts identical to what the C core sees. */
#include <atomic>
typedef std::atomic<long> atomic_long;
static_assert(sizeof(atomic_long) == sizeof(long) && alignof(atomic_long) == alignof(long),
              "atomic_long must match the C11 layout");
#include "internal.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

/* ---- errors: a CUDA or cuBLAS status becomes an fnn status + message, never an abort ---- */
static inline int fnn_cuda_status(const char *op, const char *call, cudaError_t e, const char *file, int line) {
    (void)cudaGetLastError();   /* clear a non-sticky error so the next call starts clean */
    int status = e == cudaErrorMemoryAllocation ? FNN_STATUS_OOM : FNN_STATUS_DEVICE;
    return fnn_set_error(status, file, line, "%s: CUDA error: %s (%s in %s)", op, cudaGetErrorString(e),
                         cudaGetErrorName(e), call);
}
static inline int fnn_cuda_status(const char *op, const char *call, cublasStatus_t s, const char *file, int line) {
    int status = s == CUBLAS_STATUS_ALLOC_FAILED ? FNN_STATUS_OOM : FNN_STATUS_DEVICE;
    return fnn_set_error(status, file, line, "%s: cuBLAS error: %s (%s in %s)", op, cublasGetStatusString(s),
                         cublasGetStatusName(s), call);
}
static inline bool fnn_cuda_ok(cudaError_t e) { return e == cudaSuccess; }
static inline bool fnn_cuda_ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }

/* FNN_CUDA_CHECK("matmul", cublasSgemm(...)): return the mapped status from the
 * enclosing function when the call fails. op names the fastnn op for the message. */
#define FNN_CUDA_CHECK(op, call)                                                      \
    do {                                                                              \
        auto e_ = (call);                                                             \
        if (!fnn_cuda_ok(e_)) return fnn_cuda_status((op), #call, e_, __FILE__, __LINE__); \
    } while (0)

/* ---- launches: 256 threads per block, grid-stride loops cover the rest ---- */
enum { FNN_CUDA_THREADS = 256 };
static inline unsigned fnn_cuda_blocks(int64_t n) {
    int64_t b = (n + FNN_CUDA_THREADS - 1) / FNN_CUDA_THREADS;
    /* beyond ~1M blocks the grid-stride loop does the work; keeps the grid size in range */
    return (unsigned)(b < 1 ? 1 : b > (1 << 20) ? (1 << 20) : b);
}

/* A launch written once for the GPU and for the host emulation, which defines these as host calls
 * (spec/gpu/emulated.h): FNN_LAUNCH for grid-stride kernels without barriers (run there as one
 * thread covering the grid), FNN_LAUNCH_BLOCKS for grid-stride kernels whose threads meet at
 * __syncthreads or warp shuffles (one block of `threads` host threads covering the grid), and
 * FNN_LAUNCH_GRID for kernels that index their work by blockIdx without a grid-stride loop (every
 * block in turn, each as `threads` host threads). Launchers written with them sit above their file's
 * "host side" line, so the emulation runs them, not copies. */
#define FNN_LAUNCH(kernel, blocks, threads, ...) kernel<<<(blocks), (threads)>>>(__VA_ARGS__)
#define FNN_LAUNCH_BLOCKS(kernel, blocks, threads, ...) kernel<<<(blocks), (threads)>>>(__VA_ARGS__)
#define FNN_LAUNCH_GRID(kernel, blocks, threads, ...) kernel<<<(blocks), (threads)>>>(__VA_ARGS__)

/* make ordinal the calling thread's current device (every entry starts with it) */
static inline int fnn_cuda_use_device(const char *op, int ordinal) {
    FNN_CUDA_CHECK(op, cudaSetDevice(ordinal));
    return FNN_STATUS_OK;
}

/* ---- launchers the backend table points at (signatures as in struct fnn_backend) ---- */
int fnn_cuda_binary(int ordinal, int op, float *y, const float *a, const int64_t *astride, const float *b,
                    const int64_t *bstride, int ndim, const int64_t *shape);
int fnn_cuda_gemm(int ordinal, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                  int lda, int64_t stride_a, const float *b, int ldb, int64_t stride_b, float beta, float *c,
                  int ldc, int64_t stride_c, int batch);
int fnn_cuda_strided_copy(int ordinal, void *dst, const void *src, int esize, int ndim, const int64_t *shape,
                          const int64_t *stride);
int fnn_cuda_map(int ordinal, int op, float *y, const float *const *x, const int64_t *stride, int ndim,
                 const int64_t *shape, float k0, float k1);
int fnn_cuda_reduce(int ordinal, int op, float *y, int64_t *idx, const float *x, int64_t O, int64_t R, int64_t I,
                    double k0, double k1);
int fnn_cuda_reduce_grad(int ordinal, int op, float *dx, const float *g, const float *x, const float *y,
                         const int64_t *idx, int64_t O, int64_t R, int64_t I, double k0, double k1);
int fnn_cuda_optim(int ordinal, int op, int64_t n, float *w, const float *g, float *s0, float *s1, float *s2,
                   const float *k);
int fnn_cuda_random(int ordinal, int op, float *y, int64_t n, uint64_t seed, uint64_t offset, double k0, double k1);
int fnn_cuda_index(int ordinal, int op, void *x, void *y, const int64_t *ids, int esize, const fnn_index_args *a);
int fnn_cuda_cast(int ordinal, int dtype, void *y, const void *x, int64_t n);
int fnn_cuda_int_binary(int ordinal, int op, void *y, const void *a, int a_i64, const int64_t *as, const void *b,
                        int b_i64, const int64_t *bs, int ndim, const int64_t *shape);
/* ---- cuda/int64_reduce.cu: the int64 reductions ---- */
int fnn_cuda_int_reduce(int ordinal, int op, int64_t *y, int64_t *idx, const int64_t *x, int64_t O, int64_t R,
                        int64_t I);
/* (end of int64 reductions) */
/* ---- cuda/rnn.cu: the strided copy (the rnn rows' moves; attention.cu's rows write the KV cache with it) ---- */
int fnn_cuda_seq_copy(int ordinal, float *dst, const int64_t *dstride, const float *src, const int64_t *sstride,
                      const int64_t *shape);
/* (end of seq) */
/* ---- pinned host buffers and streams (cuda/backend.cu) ---- */
/* (end of xfer) */

#endif
