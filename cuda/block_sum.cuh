/* block_sum.cuh: the block reduction that norm.cu and batch_norm.cu share (device code only, so
 * the host emulation compiles it too; static: each .cu file, and each emulated one, has its copy).
 * Every thread of the block gets the block's sums of a and b (blockDim a multiple of 32); the
 * shared slots are reused, so calls in a row are safe. */
#ifndef FASTNN_CUDA_BLOCK_SUM_CUH
#define FASTNN_CUDA_BLOCK_SUM_CUH
static __device__ __forceinline__ void fnn_block_sum2(double &a, double &b) {
    __shared__ double pa[32], pb[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, o);
        b += __shfl_down_sync(0xffffffffu, b, o);
    }
    __syncthreads();   /* the previous call's readers are done with pa, pb */
    if (lane == 0) { pa[warp] = a; pb[warp] = b; }
    __syncthreads();
    if (warp == 0) {
        a = lane < warps ? pa[lane] : 0.0;
        b = lane < warps ? pb[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) {
            a += __shfl_down_sync(0xffffffffu, a, o);
            b += __shfl_down_sync(0xffffffffu, b, o);
        }
        if (lane == 0) { pa[0] = a; pb[0] = b; }
    }
    __syncthreads();
    a = pa[0];
    b = pb[0];
}
#endif
