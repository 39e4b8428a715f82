/* copy.cu: the GPU side of fnn_materialize (core/tensor.c): any strided view
 * on the device copied into a fresh contiguous buffer on the same device, for
 * 4- and 8-byte elements (float32, int64). Everything that needs a contiguous
 * cuda input (reductions, softmax, fnn_contiguous) goes through it.
 *
 * defines: fnn_cuda_strided_copy */
#include "common.cuh"

/* the source layout after coalescing; passed by value (kernel parameter space) */
struct CopyLayout {
    int ndim;
    int64_t shape[FNN_MAX_DIMS], stride[FNN_MAX_DIMS];
};

/* dst[i] = src[offset of row-major index i]; I is the index type (32-bit when it fits) */
template <typename T, typename I> __global__ void strided_copy_kernel(T *dst, const T *src, I n, CopyLayout L) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I rem = i, off = 0;
        for (int d = L.ndim - 1; d >= 0; d--) {
            I size = (I)L.shape[d];
            I idx = rem % size;
            rem /= size;
            off += idx * (I)L.stride[d];
        }
        dst[i] = src[off];
    }
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
template <typename T> static void launch_copy(void *dst, const void *src, int64_t n, const CopyLayout &L) {
    /* the farthest element read, for the index width (negative strides never occur in views) */
    int64_t reach = 0;
    for (int d = 0; d < L.ndim; d++) reach += (L.shape[d] - 1) * L.stride[d];
    const int64_t limit = (int64_t)1 << 30;   /* leaves room for i + the grid-stride step */
    unsigned blocks = fnn_cuda_blocks(n);
    if (n < limit && reach < limit)
        FNN_LAUNCH((strided_copy_kernel<T, int32_t>), blocks, FNN_CUDA_THREADS, (T *)dst, (const T *)src, (int32_t)n,
                   L);
    else
        FNN_LAUNCH((strided_copy_kernel<T, int64_t>), blocks, FNN_CUDA_THREADS, (T *)dst, (const T *)src, n, L);
}

int fnn_cuda_strided_copy(int ordinal, void *dst, const void *src, int esize, int ndim, const int64_t *shape,
                          const int64_t *stride) {
    FNN_ASSERT((esize == 2 || esize == 4 || esize == 8) && ndim >= 0 && ndim <= FNN_MAX_DIMS);
    CopyLayout L;
    int64_t n = 1;
    L.ndim = 0;
    /* drop size-1 dims and merge neighbours that step as one: fewer divisions per element */
    for (int d = 0; d < ndim; d++) {
        n *= shape[d];
        if (shape[d] == 1) continue;
        if (L.ndim > 0 && L.stride[L.ndim - 1] == stride[d] * shape[d]) {
            L.shape[L.ndim - 1] *= shape[d];
            L.stride[L.ndim - 1] = stride[d];
            continue;
        }
        L.shape[L.ndim] = shape[d];
        L.stride[L.ndim] = stride[d];
        L.ndim++;
    }
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("contiguous", ordinal));
    if (L.ndim <= 1 && (L.ndim == 0 || L.stride[0] == 1)) {   /* already one run: a plain device copy */
        FNN_CUDA_CHECK("contiguous", cudaMemcpyAsync(dst, src, (size_t)n * (size_t)esize, cudaMemcpyDeviceToDevice, 0));
        return FNN_STATUS_OK;
    }
    if (esize == 8) launch_copy<int64_t>(dst, src, n, L);
    else if (esize == 2) launch_copy<uint16_t>(dst, src, n, L);   /* bfloat16 */
    else launch_copy<float>(dst, src, n, L);
    FNN_CUDA_CHECK("contiguous", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
