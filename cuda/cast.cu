/* cast.cu: fnn_to_dtype (core/ops/to_dtype.c) on the GPU, between float32, bfloat16 and int64 over
 * contiguous elements, a thread each; bfloat16 rounds as the CPU does (core/bf16.h, one formula: to
 * nearest, ties to even, NaN kept). The CPU refuses a float that is not a whole number naming it; here
 * that needs a host read, so such a value (nan, inf, a fraction, beyond int64) becomes INT64_MIN. */
#include "common.cuh"
#include "../core/bf16.h"

/* an element as float32 (int64 rounds once, as (float) does on the CPU), and a float32 stored as To */
__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(uint16_t v) { return fnn_bf16_to_f32(v); }
__device__ __forceinline__ float widen(int64_t v) { return (float)v; }
__device__ __forceinline__ void store(float *y, float v) { *y = v; }
__device__ __forceinline__ void store(uint16_t *y, float v) { *y = fnn_bf16_from_f32(v); }
__device__ __forceinline__ void store(int64_t *y, float v) {
    /* 2^63 is exactly a float: [-2^63, 2^63) converts without overflow */
    *y = v == floorf(v) && v >= -9223372036854775808.0f && v < 9223372036854775808.0f ? (int64_t)v : INT64_MIN;
}

template <typename To, typename From>
__global__ void cast_kernel(To *y, const From *x, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        store(&y[i], widen(x[i]));
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
template <typename To, typename From>
static void launch(void *y, const void *x, int64_t n) {
    void (*kernel)(To *, const From *, int64_t) = cast_kernel<To, From>;   /* one name for the macro */
    FNN_LAUNCH(kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (To *)y, (const From *)x, n);
}

int fnn_cuda_cast(int ordinal, int to, int from, void *y, const void *x, int64_t n) {
    const char *name = to == FNN_DTYPE_INT64 ? "long" : to == FNN_DTYPE_BFLOAT16 ? "bf16" : "float";
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(name, ordinal));
    const bool f32 = from == FNN_DTYPE_FLOAT32, bf16 = from == FNN_DTYPE_BFLOAT16;
    if (to == FNN_DTYPE_INT64) f32 ? launch<int64_t, float>(y, x, n) : launch<int64_t, uint16_t>(y, x, n);
    else if (to == FNN_DTYPE_BFLOAT16) f32 ? launch<uint16_t, float>(y, x, n) : launch<uint16_t, int64_t>(y, x, n);
    else bf16 ? launch<float, uint16_t>(y, x, n) : launch<float, int64_t>(y, x, n);
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
