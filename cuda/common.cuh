/* common.cuh: what every .cu file in cuda/ shares: the core's internal header
 * (seen from C++), FNN_CUDA_CHECK, launch sizes, and the kernels one file's
 * rows call in another's (cuda/kernels.h).
 *
 * defines: FNN_CUDA_CHECK, fnn_cuda_blocks, fnn_cuda_use_device; includes cuda/kernels.h, the
 *          kernels the rows share */
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

/* ---- the kernels the CUDA rows share (cuda/kernels.h) ---- */
#include "kernels.h"
/* ---- cuda/rnn.cu: the strided copy (the rnn rows' moves; attention.cu's rows write the KV cache with it) ---- */
int fnn_cuda_seq_copy(int ordinal, float *dst, const int64_t *dstride, const float *src, const int64_t *sstride,
                      const int64_t *shape);
/* (end of seq) */
/* ---- pinned host buffers and streams (cuda/backend.cu) ---- */
/* (end of xfer) */

#endif
