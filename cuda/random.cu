/* random.cu: draws on the GPU from cuRAND's Philox4x32-10 counter-based
 * generator: uniform, normal and bernoulli (dropout masks). The core passes
 * a seed taken from the calling thread's random stream (core/random.c), so
 * fnn.manual_seed makes GPU draws reproducible. Element i comes from
 * subsequence i / 4 of that seed (4 values per Philox call), which does not
 * depend on the launch shape: the same seed gives the same tensor on any GPU.
 *
 * defines: fnn_cuda_random */
#include "common.cuh"

#include <curand_kernel.h>

__global__ void random_kernel(float *y, int64_t n, unsigned long long seed, unsigned long long offset, int op,
                              float k0, float k1) {
    const int64_t groups = (n + 3) / 4;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < groups; q += (int64_t)gridDim.x * blockDim.x) {
        curandStatePhilox4_32_10_t st;
        curand_init(seed, (unsigned long long)q, offset, &st);
        float4 v;
        if (op == FNN_RNG_NORMAL) v = curand_normal4(&st);
        else v = curand_uniform4(&st);   /* (0, 1] */
        float r[4] = {v.x, v.y, v.z, v.w};
        for (int j = 0; j < 4; j++) {
            int64_t i = q * 4 + j;
            if (i >= n) break;
            float u = r[j];
            y[i] = op == FNN_RNG_NORMAL    ? k0 + k1 * u
                   : op == FNN_RNG_UNIFORM ? k0 + (k1 - k0) * (1.0f - u)   /* [0, 1) as the CPU's */
                                           : ((1.0f - u) < k0 ? 1.0f : 0.0f);
        }
    }
}

int fnn_cuda_random(int ordinal, int op, float *y, int64_t n, uint64_t seed, uint64_t offset, double k0, double k1) {
    FNN_ASSERT(op >= FNN_RNG_UNIFORM && op <= FNN_RNG_BERNOULLI && n >= 0);
    if (n == 0) return FNN_STATUS_OK;
    const char *name = op == FNN_RNG_NORMAL ? "randn" : op == FNN_RNG_UNIFORM ? "rand" : "bernoulli";
    FNN_TRY(fnn_cuda_use_device(name, ordinal));
    random_kernel<<<fnn_cuda_blocks((n + 3) / 4), FNN_CUDA_THREADS>>>(y, n, seed, offset, op, (float)k0, (float)k1);
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}
