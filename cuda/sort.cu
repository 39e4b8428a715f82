/* sort.cu: sort and topk (core/ops/sort.c) on the GPU, and their backward.
 *
 * Each line of x [O, n, I] (contiguous) is ordered by the CPU's 64-bit keys: the high 32 bits the
 * float mapped to an unsigned integer in the wanted order (nan above +inf, -0.0 equal to 0.0,
 * flipped for descending), the low 32 bits the element's position. Keys are distinct, so their
 * ascending order is the CPU's stable order in both directions, whatever algorithm sorts them:
 * here a bitonic sort by one block per line (grid-stride over lines), padded to a power of two
 * P with UINT64_MAX (above every real key, as positions stay below 2^32 - 1). Lines up to
 * SORT_SHARED keys sort in shared memory; longer lines in a global scratch slab per block
 * (correct, not fast: one block does the O(P log^2 P) compares). The first m keys give values
 * and 1-based indices [O, m, I]; topk is the same with m = k.
 *
 * The backward writes g to the saved positions of zeros of x's shape: the positions of one line
 * are distinct, so a plain store per element, no atomics, deterministic.
 *
 * defines: fnn_cuda_sort_rows (the family's rows, core/ops/sort.h) */
#include "common.cuh"
#include "ops/sort.h"

#include <string.h>

enum { SORT_SHARED = 2048, SORT_MAX_THREADS = 1024 };

/* v -> an unsigned key whose order is the wanted order of the values (as sort.c's sort_key) */
__device__ __forceinline__ uint32_t sort_key_of(float v, int descending) {
    uint32_t b, key;
    memcpy(&b, &v, sizeof b);
    if ((b & 0x7fffffffu) > 0x7f800000u) key = 0xffffffffu;   /* every nan above +inf */
    else {
        if ((b & 0x7fffffffu) == 0) b = 0;                      /* -0.0 equals 0.0 */
        key = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    }
    return descending ? ~key : key;
}

/* one block per line (grid-stride over the O I lines); P the padded line length (a power of two);
 * scratch [gridDim.x, P] keys, used when P > SORT_SHARED (else NULL) */
__global__ void __launch_bounds__(SORT_MAX_THREADS)
sort_lines_kernel(float *y, int64_t *idx, const float *x, int64_t O, int64_t n, int64_t I, int64_t m, int descending,
                  int64_t P, uint64_t *scratch) {
    __shared__ uint64_t shared_keys[SORT_SHARED];
    uint64_t *k = P <= SORT_SHARED ? shared_keys : scratch + (int64_t)blockIdx.x * P;
    const int64_t lines = O * I, half = P / 2;
    for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
        const int64_t o = line / I, i = line - o * I;
        const float *xl = x + o * n * I + i;
        for (int64_t r = threadIdx.x; r < P; r += blockDim.x)
            k[r] = r < n ? (uint64_t)sort_key_of(xl[r * I], descending) << 32 | (uint64_t)r : ~(uint64_t)0;
        __syncthreads();
        for (int64_t size = 2; size <= P; size <<= 1)
            for (int64_t stride = size >> 1; stride > 0; stride >>= 1) {
                for (int64_t t = threadIdx.x; t < half; t += blockDim.x) {
                    const int64_t lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
                    const uint64_t a = k[lo], b = k[hi];
                    if ((a > b) == ((lo & size) == 0)) { k[lo] = b; k[hi] = a; }   /* ascending where lo & size is 0 */
                }
                __syncthreads();
            }
        for (int64_t r = threadIdx.x; r < m; r += blockDim.x) {
            const int64_t pos = (int64_t)(k[r] & 0xffffffffu), at = (o * m + r) * I + i;
            y[at] = xl[pos * I];
            idx[at] = pos + 1;
        }
        __syncthreads();   /* the next line overwrites the keys */
    }
}

/* dx [O, n, I] (zeroed where m < n) gets g [O, m, I] at the 1-based positions idx (same shape as g);
 * a position outside 1..n (never made by the forward) writes nothing */
__global__ void sort_grad_kernel(float *dx, const float *g, const int64_t *idx, int64_t O, int64_t n, int64_t I,
                                 int64_t m) {
    const int64_t total = O * m * I;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = e / (m * I), i = e % I, pos = idx[e] - 1;
        if (pos >= 0 && pos < n) dx[(o * n + pos) * I + i] = g[e];
    }
}

/* the padded length and the block size of a line of n */
static inline int64_t sort_padded(int64_t n) {
    int64_t P = 1;
    while (P < n) P <<= 1;
    return P;
}
static inline int sort_threads(int64_t P) {
    return P / 2 >= SORT_MAX_THREADS ? SORT_MAX_THREADS : P / 2 < 32 ? 32 : (int)(P / 2);
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
static int fnn_cuda_sort(int ordinal, float *y, int64_t *idx, const float *x, int64_t O, int64_t n, int64_t I,
                         int64_t m, int descending) {
    const int64_t lines = O * I;
    if (lines == 0 || m == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("sort", ordinal));
    const int64_t P = sort_padded(n);
    uint64_t *scratch = NULL;
    int64_t blocks = lines < (1 << 20) ? lines : (1 << 20), bytes = 0;
    const int device = fnn_make_device(FNN_DEVICE_CUDA, ordinal);
    if (P > SORT_SHARED) {   /* a slab per block; fewer blocks bound the scratch (1024, and 1 GiB in all) */
        const int64_t fit = ((int64_t)1 << 30) / (P * (int64_t)sizeof(uint64_t));
        if (blocks > 1024) blocks = 1024;
        if (blocks > fit) blocks = fit > 1 ? fit : 1;
        bytes = blocks * P * (int64_t)sizeof(uint64_t);
        scratch = (uint64_t *)fnn_alloc(device, bytes);
        if (!scratch) return fnn_last_status();
    }
    FNN_LAUNCH_BLOCKS(sort_lines_kernel, (unsigned)blocks, sort_threads(P), y, idx, x, O, n, I, m, descending, P,
                      scratch);
    cudaError_t e = cudaGetLastError();
    /* freed into the cache: the next user of the block runs after this kernel on the same stream */
    if (scratch) fnn_free(device, scratch, bytes);
    FNN_CUDA_CHECK("sort", e);
    return FNN_STATUS_OK;
}

static int fnn_cuda_sort_grad(int ordinal, float *dx, const float *g, const int64_t *idx, int64_t O, int64_t n,
                              int64_t I, int64_t m) {
    const int64_t total = O * m * I;
    if (O * n * I == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("sort", ordinal));
    if (m < n) {
        FNN_CUDA_CHECK("sort", cudaMemsetAsync(dx, 0, (size_t)(O * n * I) * sizeof(float), cudaStreamPerThread));
    }
    if (total == 0) return FNN_STATUS_OK;
    FNN_LAUNCH(sort_grad_kernel, fnn_cuda_blocks(total), FNN_CUDA_THREADS, dx, g, idx, O, n, I, m);
    FNN_CUDA_CHECK("sort", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* the rows (core/ops/sort.h). The kernel reads the lines of a contiguous x at stride I: a view
 * (a.stride not x's row-major ones) is copied to a contiguous scratch first */
static int sort_forward(int ordinal, const fnn_sort_args *a) {
    int64_t numel = 1;   /* along the walk: dim i's row-major stride; after it, x's size */
    bool contiguous = true;
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] != 1 && a->stride[i] != numel) contiguous = false;
        numel *= a->shape[i];
    }
    if (contiguous || numel == 0) return fnn_cuda_sort(ordinal, a->y, a->idx, a->x, a->O, a->n, a->I, a->m, a->descending);
    const int device = fnn_make_device(FNN_DEVICE_CUDA, ordinal);
    const int64_t bytes = numel * (int64_t)sizeof(float);
    float *xc = (float *)fnn_alloc(device, bytes);
    if (!xc) return fnn_last_status();
    /* through the backend's table: the copy kernels live in copy.cu (the emulation's too) */
    int rc = fnn_backend_for(device)->strided_copy(ordinal, xc, a->x, (int)sizeof(float), a->ndim, a->shape,
                                                   a->stride);
    if (!rc) rc = fnn_cuda_sort(ordinal, a->y, a->idx, xc, a->O, a->n, a->I, a->m, a->descending);
    fnn_free(device, xc, bytes);   /* into the cache: its next user runs after the sort on this stream */
    return rc;
}
static int sort_backward(int ordinal, const fnn_sort_args *a) {
    return fnn_cuda_sort_grad(ordinal, a->y, a->g, a->sel, a->O, a->n, a->I, a->m);
}
extern "C" const fnn_sort_row fnn_cuda_sort_rows[] = {
    {"sort", sort_forward, sort_backward},
    {"topk", sort_forward, sort_backward},
    {NULL, NULL, NULL},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
