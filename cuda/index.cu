/* index.cu: the index walk behind index_select, gather, scatter_add, take_rows and embedding
 * (core/ops/index.c, embedding.c, core/io/data.c) on the GPU, a thread per position of the walked
 * shape. ids are int64 on the device and read there, so a bad id cannot raise without a host read:
 * a gather writes nan (int64: 0) and a scatter adds nothing. Scatters go through atomicAdd: where
 * ids repeat, the order of the adds (and so the last bits) may differ from run to run. */
#include "common.cuh"

__device__ __forceinline__ void index_bad(float *v) { *v = NAN; }
__device__ __forceinline__ void index_bad(int64_t *v) { *v = 0; }

/* position p of a.shape -> its offsets in x (without dim) and y, its coordinate along dim */
__device__ __forceinline__ void index_offsets(int64_t p, const fnn_index_args &a, int64_t *xo, int64_t *yo,
                                              int64_t *cd) {
    int64_t rem = p, x = 0, y = 0, c_dim = 0;
    for (int d = a.ndim - 1; d >= 0; d--) {
        const int64_t c = rem % a.shape[d];
        rem /= a.shape[d];
        y += c * a.ystride[d];
        if (d == a.dim) c_dim = c;
        else x += c * a.xstride[d];
    }
    *xo = x, *yo = y, *cd = c_dim;
}

template <typename T>
__global__ void index_gather_kernel(T *y, const T *x, const int64_t *ids, int64_t n, fnn_index_args a) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n; p += (int64_t)gridDim.x * blockDim.x) {
        int64_t xo, yo, cd;
        index_offsets(p, a, &xo, &yo, &cd);
        const int64_t id = ids[a.select ? cd : p];
        if (id < 1 || id > a.size) index_bad(&y[yo]);
        else y[yo] = x[xo + (id - 1) * a.xstride[a.dim]];
    }
}

__global__ void index_scatter_kernel(float *x, const float *y, const int64_t *ids, int64_t n, fnn_index_args a) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n; p += (int64_t)gridDim.x * blockDim.x) {
        int64_t xo, yo, cd;
        index_offsets(p, a, &xo, &yo, &cd);
        const int64_t id = ids[a.select ? cd : p];
        if (id >= 1 && id <= a.size && id != a.skip) atomicAdd(&x[xo + (id - 1) * a.xstride[a.dim]], y[yo]);
    }
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
int fnn_cuda_index(int ordinal, int op, void *x, void *y, const int64_t *ids, int esize, const fnn_index_args *a) {
    FNN_ASSERT((op == FNN_IDX_GATHER && (esize == 4 || esize == 8)) || (op == FNN_IDX_SCATTER && esize == 4));
    const char *name = op == FNN_IDX_GATHER ? "gather" : "scatter_add";
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(name, ordinal));
    const unsigned blocks = fnn_cuda_blocks(n);
    if (op == FNN_IDX_SCATTER)
        FNN_LAUNCH(index_scatter_kernel, blocks, FNN_CUDA_THREADS, (float *)x, (const float *)y, ids, n, *a);
    else if (esize == 8)
        FNN_LAUNCH(index_gather_kernel<int64_t>, blocks, FNN_CUDA_THREADS, (int64_t *)y, (const int64_t *)x, ids, n,
                   *a);
    else
        FNN_LAUNCH(index_gather_kernel<float>, blocks, FNN_CUDA_THREADS, (float *)y, (const float *)x, ids, n, *a);
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
