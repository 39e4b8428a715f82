/* attention.cu: the row kernels of core/ops/attention.c's fused attention on the GPU; the products
 * (scores = scale q k^T, out = P v and the backward's four) are be->gemm calls from the core, batched
 * strided over batch * heads. Here: the masked softmax of the scores in place (P), and the softmax
 * backward dS = P (dP - rowsum(P dP)) in place of dP. Rows are [B, H, Tq] of Tk keys; query i of a
 * head sees keys 0 .. i + Tk - Tq when causal, all keys otherwise, minus the key padding mask
 * [B, Tk] (nonzero = padding, float32 or int64, read through its strides); no mask tensor is made.
 * A query that sees no key gets zeros, as on the CPU. A block per row (blocks stride over the
 * rows): threads stride over the keys, warp shuffles and one shared slot per warp combine the max
 * and the sums.
 *
 * defines: fnn_cuda_attn_softmax, fnn_cuda_attn_softmax_grad */
#include "common.cuh"

/* every thread of the block gets the block's max (is_max) or sum of v (blockDim a multiple of 32) */
__device__ float attn_block_reduce(float v, bool is_max) {
    __shared__ float part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        const float u = __shfl_down_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    __syncthreads();   /* the previous call's readers are done with part */
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? part[lane] : (is_max ? -INFINITY : 0.0f);
        for (int o = 16; o > 0; o >>= 1) {
            const float u = __shfl_down_sync(0xffffffffu, v, o);
            v = is_max ? fmaxf(v, u) : v + u;
        }
        if (lane == 0) part[0] = v;
    }
    __syncthreads();
    return part[0];
}

/* the keys row r (of [B, H, Tq]) may see: 0 .. n-1 */
__device__ __forceinline__ int64_t attn_visible(int64_t r, int64_t Tq, int64_t Tk, int causal) {
    if (!causal) return Tk;
    const int64_t last = r % Tq + Tk - Tq;
    return last + 1 < 0 ? 0 : last + 1 > Tk ? Tk : last + 1;
}

__device__ __forceinline__ bool attn_padded(const void *mask, int i64, int64_t off) {
    return i64 ? ((const int64_t *)mask)[off] != 0 : ((const float *)mask)[off] != 0.0f;
}

/* p [rows, Tk] scores -> probabilities; mask NULL or [B, Tk] at strides ms0, ms1 */
__global__ void __launch_bounds__(256) attn_softmax_kernel(float *p, int64_t rows, int64_t Tq, int64_t Tk, int64_t H,
                                                           int causal, const void *mask, int mask_i64, int64_t ms0,
                                                           int64_t ms1) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {   /* uniform per block: the syncs are safe */
        float *s = p + r * Tk;
        const int64_t n = attn_visible(r, Tq, Tk, causal);
        const int64_t mo = mask ? (r / Tq / H) * ms0 : 0;
        float mx = -INFINITY;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
            if (!mask || !attn_padded(mask, mask_i64, mo + j * ms1)) mx = fmaxf(mx, s[j]);
        mx = attn_block_reduce(mx, true);
        if (mx == -INFINITY) {   /* no visible key (or all -inf): zeros */
            for (int64_t j = threadIdx.x; j < Tk; j += blockDim.x) s[j] = 0.0f;
            continue;
        }
        float sum = 0.0f;
        for (int64_t j = threadIdx.x; j < Tk; j += blockDim.x) {
            const bool on = j < n && (!mask || !attn_padded(mask, mask_i64, mo + j * ms1));
            const float e = on ? __expf(s[j] - mx) : 0.0f;
            s[j] = e;
            sum += e;
        }
        const float inv = 1.0f / attn_block_reduce(sum, false);
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s[j] *= inv;
    }
}

/* d [rows, Tk] = dP -> dS = P (dP - sum_j P dP) over the visible keys, zeros after */
__global__ void __launch_bounds__(256) attn_softmax_grad_kernel(float *d, const float *p, int64_t rows, int64_t Tq,
                                                                int64_t Tk, int causal) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        float *dr = d + r * Tk;
        const float *pr = p + r * Tk;
        const int64_t n = attn_visible(r, Tq, Tk, causal);
        float acc = 0.0f;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) acc += pr[j] * dr[j];
        const float dot = attn_block_reduce(acc, false);
        for (int64_t j = threadIdx.x; j < Tk; j += blockDim.x) dr[j] = j < n ? pr[j] * (dr[j] - dot) : 0.0f;
    }
}

/* threads per row's block: a multiple of 32 up to 256 */
static inline int attn_threads(int64_t Tk) { return Tk >= 256 ? 256 : Tk <= 32 ? 32 : (int)((Tk + 31) / 32 * 32); }

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
static unsigned attn_blocks(int64_t rows) { return (unsigned)(rows < (1 << 20) ? rows : (1 << 20)); }

int fnn_cuda_attn_softmax(int ordinal, float *p, int64_t rows, int64_t Tq, int64_t Tk, int64_t H, int causal,
                          const void *mask, int mask_i64, int64_t ms0, int64_t ms1) {
    if (rows == 0 || Tk == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("attention", ordinal));
    FNN_LAUNCH_BLOCKS(attn_softmax_kernel, attn_blocks(rows), attn_threads(Tk), p, rows, Tq, Tk, H, causal, mask,
                      mask_i64, ms0, ms1);
    FNN_CUDA_CHECK("attention", cudaGetLastError());
    return FNN_STATUS_OK;
}

int fnn_cuda_attn_softmax_grad(int ordinal, float *ds, const float *p, int64_t rows, int64_t Tq, int64_t Tk,
                               int causal) {
    if (rows == 0 || Tk == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("attention", ordinal));
    FNN_LAUNCH_BLOCKS(attn_softmax_grad_kernel, attn_blocks(rows), attn_threads(Tk), ds, p, rows, Tq, Tk, causal);
    FNN_CUDA_CHECK("attention", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
