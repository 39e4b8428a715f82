// spec/gpu/emulated.h: what the host emulation of the CUDA backend (spec/gpu/emulated*.cpp, built
// by -DFASTNN_CUDA_EMULATED=ON or spec/gpu/emulate.sh) puts in place of the CUDA runtime: the
// keywords defined away, threadIdx/blockIdx/blockDim/gridDim, __syncthreads and __shfl_down_sync
// over real host threads and barriers, the fast-math intrinsics as libm's, a plain atomicAdd.
// A kernel called as a plain function runs its grid-stride loop as one thread of one block;
// run_block runs one block of `threads` host threads (kernels with barriers or warp shuffles),
// run_grid every block of a grid in turn (kernels that index by blockIdx). Each emulated_*.cpp
// includes this, then the device code of its cuda/*.cu files (cut at their "host side" line into
// <name>_body.inc), launchers included (written with FNN_LAUNCH above that line), and points the
// table at those launchers with EMULATED_BACKEND_ADD. The CUDA runtime calls that launchers make
// get host stand-ins below (cudaGetLastError, cudaMemcpyAsync, cudaMemsetAsync: done at once, one
// stream). What is still a copy rather than the real cuda/ code is listed in emulated_backend.cpp.
#ifndef FASTNN_EMULATED_H
#define FASTNN_EMULATED_H
#include <atomic>
typedef std::atomic<long> atomic_long;
#include "internal.h"
#include "kernels.h"   /* cuda/kernels.h: the kernels one file's rows call in another's */
#include "ops/elementwise_ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#define __device__
#define __global__
#define __launch_bounds__(x)
#define __forceinline__ inline
#define __shared__ static
#include <pthread.h>
#include <thread>
#include <vector>
struct Dim3 { unsigned x; };
static thread_local Dim3 threadIdx = {0};
static Dim3 blockIdx = {0}, blockDim = {1}, gridDim = {1};
/* one emulated block at a time: a host thread per CUDA thread, barriers per block and per warp */
static pthread_barrier_t block_bar, warp_bar[32];
static unsigned char shfl_slots[1024][8];
template <class T> static T __shfl_down_sync(unsigned, T v, int o) {
    unsigned t = threadIdx.x, lane = t & 31;
    memcpy(shfl_slots[t], &v, sizeof v);
    pthread_barrier_wait(&warp_bar[t >> 5]);
    T r = v;
    if (lane + o < 32) memcpy(&r, shfl_slots[t + o], sizeof r);
    pthread_barrier_wait(&warp_bar[t >> 5]);
    return r;
}
static void __syncthreads() { pthread_barrier_wait(&block_bar); }
#define __expf expf
#define __logf logf
#define __sinf sinf
#define __cosf cosf
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
/* one host thread runs a whole grid: an atomic add is a plain one */
static inline float atomicAdd(float *p, float v) { float old = *p; *p = old + v; return old; }
/* launches by mode, over every emulated_*.cpp file, for emulated_backend.cpp's report (defined there;
 * atomic: a prefetch worker may launch beside the main thread) */
extern std::atomic<long> mode_block, mode_thread;
/* a kernel run as one block of `threads` host threads (barriers as in emulate below) */
template <class F> static void run_block(int threads, F f) {
    blockDim.x = threads;
    pthread_barrier_init(&block_bar, NULL, threads);
    for (int w = 0; w < threads / 32; w++) pthread_barrier_init(&warp_bar[w], NULL, 32);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++) pool.emplace_back([t, &f] { threadIdx.x = t; f(); });
    for (auto &th : pool) th.join();
    pthread_barrier_destroy(&block_bar);
    for (int w = 0; w < threads / 32; w++) pthread_barrier_destroy(&warp_bar[w]);
    blockDim.x = 1;
    mode_block++;
}
/* every block of a grid in turn, each as `threads` host threads (1: the kernel has no barriers) */
template <class F> static void run_grid(unsigned blocks, int threads, F f) {
    gridDim.x = blocks;
    for (unsigned b = 0; b < blocks; b++) {
        blockIdx.x = b;
        if (threads == 1) f();
        else run_block(threads, f);
    }
    blockIdx.x = 0;
    gridDim.x = 1;
}
/* the launchers above a cuda/<name>.cu file's "host side" line, as host calls (see common.cuh): a
 * grid-stride kernel runs as one thread that covers the grid; a grid-stride kernel with barriers as
 * one block of `threads` host threads; a kernel indexed by blockIdx as every block in turn */
#define FNN_LAUNCH(kernel, blocks, threads, ...) ((void)(blocks), (void)(threads), mode_thread++, kernel(__VA_ARGS__))
#define FNN_LAUNCH_BLOCKS(kernel, blocks, threads, ...) ((void)(blocks), run_block((threads), [&] { kernel(__VA_ARGS__); }))
#define FNN_LAUNCH_GRID(kernel, blocks, threads, ...) run_grid((blocks), (threads), [&] { kernel(__VA_ARGS__); })
enum { FNN_CUDA_THREADS = 256 };
static inline unsigned fnn_cuda_blocks(int64_t n) { return (unsigned)(n < 1 ? 1 : n); }
static inline int fnn_cuda_use_device(const char *, int) { return FNN_STATUS_OK; }
typedef int cudaError_t;
static inline cudaError_t cudaGetLastError(void) { return 0; }
/* device-to-device copies on the host: the emulated allocator's memory is host memory */
enum { cudaMemcpyDeviceToDevice = 3 };
static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, int, int) {
    memcpy(dst, src, bytes);
    return 0;
}
/* sort_grad's zeroing (sort.cu): done at once, as every emulated launch is; one host stream */
enum { cudaStreamPerThread = 0 };
static inline cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, int) {
    memset(dst, value, bytes);
    return 0;
}
#define FNN_CUDA_CHECK(op, call) ((void)(op), (void)(call))
/* the emulated backend's table (emulated_backend.cpp); each family file fills its entries from a
 * static constructor, which runs before the core registers the table:
 *   EMULATED_BACKEND_ADD(shape) { b->copy_into = fnn_cuda_copy_into; ... } */
fnn_backend *emulated_backend(void);
#define EMULATED_BACKEND_ADD(family)                                                        \
    static void emulated_add_##family(fnn_backend *b);                                      \
    __attribute__((constructor)) static void emulated_register_##family(void) {             \
        emulated_add_##family(emulated_backend());                                          \
    }                                                                                       \
    static void emulated_add_##family(fnn_backend *b)
#endif
