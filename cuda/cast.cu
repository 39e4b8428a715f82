/* cast.cu: fnn_to_dtype (core/tensor.c) on the GPU, float32 <-> int64 over contiguous elements, a thread
 * each. The CPU refuses a float that is not a whole number naming it; here that needs a host read, so
 * such a value (nan, inf, a fraction, beyond int64) becomes INT64_MIN instead. */
#include "common.cuh"

__global__ void cast_to_long_kernel(int64_t *y, const float *x, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        /* 2^63 is exactly a float: [-2^63, 2^63) converts without overflow */
        y[i] = v == floorf(v) && v >= -9223372036854775808.0f && v < 9223372036854775808.0f ? (int64_t)v : INT64_MIN;
    }
}

__global__ void cast_to_float_kernel(float *y, const int64_t *x, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = (float)x[i];
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
int fnn_cuda_cast(int ordinal, int dtype, void *y, const void *x, int64_t n) {
    const char *name = dtype == FNN_DTYPE_INT64 ? "long" : "float";
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(name, ordinal));
    if (dtype == FNN_DTYPE_INT64)
        FNN_LAUNCH(cast_to_long_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (int64_t *)y, (const float *)x, n);
    else
        FNN_LAUNCH(cast_to_float_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (float *)y, (const int64_t *)x, n);
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
