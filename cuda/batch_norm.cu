/* batch_norm.cu: batch_norm of core/ops/norm.c on the GPU, forward beside backward, over contiguous
 * x [N, C, S] (S the product of the spatial dims, 1 for [N, C]). Channels of at least 128
 * elements (N S) get a block each (blocks stride over the channels): its threads stride over the
 * channel's elements, sum in double, and combine by warp shuffles and one shared slot per warp,
 * then the same block writes the channel's outputs. Shorter channels (an [N, C] batch) get a
 * thread each, which reads its elements in order (neighbouring threads read neighbouring
 * channels: coalesced for [N, C]); the same channel code runs in both modes. Training takes one pass for the statistics, of sums shifted by the mean of
 * the channel's first 16 values as on the CPU (in double, so no cancellation), then one for y; the
 * batch mean and unbiased variance go out for the running stats (the Lua layer blends them in with its
 * momentum). Eval normalizes with the running stats, a thread per element. Saved stats [C, 2]:
 * mean, rstd, as the CPU's. Backward, per channel with sg = sum g, sgx = sum g (x - mean):
 *     dw = sgx rstd, db = sg; dx = w rstd g + (training: - w rstd^3 sgx / M (x - mean) - w rstd sg / M)
 * With activation relu (fnn_nrm_args.activation) the kernels that write y write max(y, 0), and the
 * backward reads g as relu's gradient (g where the saved output yo > 0, else 0) in its sums and dx, as
 * the CPU's rows do.
 *
 * defines: fnn_cuda_batch_norm_row, fnn_cuda_batch_norm_grad_row (the norm family's batch_norm row,
 * core/ops/norm.h, listed by cuda/norm.cu) */
#include "common.cuh"
#include "ops/norm.h"

#include <math.h>

#include "block_sum.cuh"

/* element e (0 .. N S - 1) of channel c: image e / S, position e % S */
__device__ __forceinline__ int64_t bn_at(int64_t e, int64_t c, int64_t C, int64_t S) {
    return ((e / S) * C + c) * S + e % S;
}

/* the channels a thread works and its share of each channel's elements: BLOCK, a block per channel
 * (threads stride over its elements, the sums combined by fnn_block_sum2); else a thread per channel
 * (all its elements in order: no barriers, for channels too short to keep a block busy) */
template <bool BLOCK> struct BnWalk {
    int64_t c0, cstep, e0, estep;
    __device__ BnWalk() {
        c0 = BLOCK ? (int64_t)blockIdx.x : blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
        cstep = BLOCK ? (int64_t)gridDim.x : (int64_t)gridDim.x * blockDim.x;
        e0 = BLOCK ? (int64_t)threadIdx.x : 0;
        estep = BLOCK ? (int64_t)blockDim.x : 1;
    }
};

/* y, then relu's formula when relu (NaN to 0, as its elementwise row) */
__device__ __forceinline__ float bn_act(float v, bool relu) { return relu ? (v > 0 ? v : 0.0f) : v; }

/* g, or relu's gradient when yo (the fused forward's output) is given: g where yo > 0, else 0 */
__device__ __forceinline__ float bn_masked(const float *g, const float *yo, int64_t at) {
    return yo && !(yo[at] > 0) ? 0.0f : g[at];
}

/* training: per channel the batch mean and biased variance, then y = (x - mean) (w rstd) + b (relu:
 * max(y, 0)); stats [C, 2] (mean, rstd), bmean, bvar (unbiased) [C]: each NULL when not wanted */
template <bool BLOCK>
__global__ void __launch_bounds__(256) bn_train_kernel(float *y, float *stats, float *bmean, float *bvar,
                                                       const float *x, const float *w, const float *b, int64_t N,
                                                       int64_t C, int64_t S, double eps, bool relu) {
    const int64_t M = N * S;
    const BnWalk<BLOCK> t;
    for (int64_t c = t.c0; c < C; c += t.cstep) {   /* BLOCK: uniform per block, so the syncs are safe */
        /* the shift: the mean of the channel's first (up to) 16 values, as the CPU's */
        const int64_t m16 = M < 16 ? M : 16;
        double k = 0;
        for (int64_t e = 0; e < m16; e++) k += x[bn_at(e, c, C, S)];
        k = (double)(float)(k / (double)m16);
        double s1 = 0, s2 = 0;
        for (int64_t e = t.e0; e < M; e += t.estep) {
            const double d = (double)x[bn_at(e, c, C, S)] - k;
            s1 += d;
            s2 += d * d;
        }
        if (BLOCK) fnn_block_sum2(s1, s2);
        const double d = s1 / (double)M, mean = k + d;
        double var = s2 / (double)M - d * d;
        if (var < 0) var = 0;
        const double rstd = 1.0 / sqrt(var + eps);
        const float m = (float)mean, a = (float)((w ? w[c] : 1.0) * rstd), bc = b ? b[c] : 0.0f;
        for (int64_t e = t.e0; e < M; e += t.estep) {
            const int64_t at = bn_at(e, c, C, S);
            y[at] = bn_act((x[at] - m) * a + bc, relu);
        }
        if (t.e0 == 0) {
            if (stats) { stats[2 * c] = m; stats[2 * c + 1] = (float)rstd; }
            if (bmean) bmean[c] = m;
            if (bvar) bvar[c] = (float)(var * (double)M / (double)(M - 1));
        }
    }
}

/* eval: y = (x - running mean) (w rstd) + b (relu: max(y, 0)), rstd = 1 / sqrt(running var + eps), a
 * thread per element */
__global__ void bn_eval_kernel(float *y, const float *x, const float *w, const float *b, const float *rm,
                               const float *rv, int64_t n, int64_t C, int64_t S, double eps, bool relu) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = i / S % C;
        const double rstd = 1.0 / sqrt((double)rv[c] + eps);
        const float a = (float)((w ? w[c] : 1.0) * rstd), bc = b ? b[c] : 0.0f;
        y[i] = bn_act((x[i] - rm[c]) * a + bc, relu);
    }
}

/* eval: the stats the backward reads, [C, 2] mean, rstd */
__global__ void bn_eval_stats_kernel(float *stats, const float *rm, const float *rv, int64_t C, double eps) {
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
        stats[2 * c] = rm[c];
        stats[2 * c + 1] = (float)(1.0 / sqrt((double)rv[c] + eps));
    }
}

/* backward per channel: sg, sgx over the channel, dw, db (each may be NULL), then dx (may be NULL); g
 * masked by yo > 0 where yo (the relu'd forward output) is given */
template <bool BLOCK>
__global__ void __launch_bounds__(256) bn_grad_kernel(float *dx, float *dw, float *db, const float *g, const float *x,
                                                      const float *w, const float *stats, const float *yo, int64_t N,
                                                      int64_t C, int64_t S, int training) {
    const int64_t M = N * S;
    const bool sums = training || dw || db;
    const BnWalk<BLOCK> t;
    for (int64_t c = t.c0; c < C; c += t.cstep) {
        const float m = stats[2 * c];
        const double r = stats[2 * c + 1], wc = w ? w[c] : 1.0;
        double sg = 0, sgx = 0;
        if (sums) {
            for (int64_t e = t.e0; e < M; e += t.estep) {
                const int64_t at = bn_at(e, c, C, S);
                const double gv = bn_masked(g, yo, at);
                sg += gv;
                sgx += gv * (double)(x[at] - m);
            }
            if (BLOCK) fnn_block_sum2(sg, sgx);
        }
        if (t.e0 == 0) {
            if (dw) dw[c] = (float)(sgx * r);
            if (db) db[c] = (float)sg;
        }
        if (!dx) continue;
        const float ka = (float)(wc * r);
        const float kb = training ? (float)(-wc * r * r * r * sgx / (double)M) : 0.0f;
        const float kc = training ? (float)(-wc * r * sg / (double)M) : 0.0f;
        for (int64_t e = t.e0; e < M; e += t.estep) {
            const int64_t at = bn_at(e, c, C, S);
            dx[at] = ka * bn_masked(g, yo, at) + kb * (x[at] - m) + kc;
        }
    }
}

/* a block per channel from 128 elements a channel (fewer: a thread per channel); its threads: a
 * multiple of 32 up to 256 */
static inline bool bn_block_mode(int64_t m) { return m >= 128; }
static inline int bn_threads(int64_t m) { return m >= 256 ? 256 : m <= 32 ? 32 : (int)((m + 31) / 32 * 32); }

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
static unsigned bn_blocks(int64_t c) { return (unsigned)(c < (1 << 20) ? c : (1 << 20)); }

static int bn_launch(int ordinal, float *y, float *stats, float *bmean, float *bvar, const float *x, const float *w,
                     const float *b, const float *rmean, const float *rvar, int64_t N, int64_t C, int64_t S,
                     int training, double eps, bool relu) {
    if (C == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("batch_norm", ordinal));
    if (training && bn_block_mode(N * S)) {
        FNN_LAUNCH_BLOCKS(bn_train_kernel<true>, bn_blocks(C), bn_threads(N * S), y, stats, bmean, bvar, x, w, b, N,
                          C, S, eps, relu);
    } else if (training) {
        FNN_LAUNCH(bn_train_kernel<false>, fnn_cuda_blocks(C), FNN_CUDA_THREADS, y, stats, bmean, bvar, x, w, b, N, C,
                   S, eps, relu);
    } else {
        if (N * S > 0)
            FNN_LAUNCH(bn_eval_kernel, fnn_cuda_blocks(N * C * S), FNN_CUDA_THREADS, y, x, w, b, rmean, rvar, N * C * S,
                       C, S, eps, relu);
        if (stats) FNN_LAUNCH(bn_eval_stats_kernel, fnn_cuda_blocks(C), FNN_CUDA_THREADS, stats, rmean, rvar, C, eps);
    }
    FNN_CUDA_CHECK("batch_norm", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int bn_grad_launch(int ordinal, float *dx, float *dw, float *db, const float *g, const float *x,
                          const float *w, const float *stats, const float *yo, int64_t N, int64_t C, int64_t S,
                          int training) {
    if (C == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("batch_norm", ordinal));
    if (bn_block_mode(N * S))
        FNN_LAUNCH_BLOCKS(bn_grad_kernel<true>, bn_blocks(C), bn_threads(N * S), dx, dw, db, g, x, w, stats, yo, N, C,
                          S, training);
    else
        FNN_LAUNCH(bn_grad_kernel<false>, fnn_cuda_blocks(C), FNN_CUDA_THREADS, dx, dw, db, g, x, w, stats, yo, N, C,
                   S, training);
    FNN_CUDA_CHECK("batch_norm", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* the row (core/ops/norm.h): x as [N, C, S] */
int fnn_cuda_batch_norm_row(int ordinal, const fnn_nrm_args *a) {
    return bn_launch(ordinal, a->y, a->stats, a->bmean, a->bvar, a->x, a->w, a->b, a->rmean, a->rvar, a->N,
                     a->C, a->S, a->training, a->eps, a->activation == FNN_NORM_ACT_RELU);
}
int fnn_cuda_batch_norm_grad_row(int ordinal, const fnn_nrm_args *a) {
    return bn_grad_launch(ordinal, a->y, a->dw, a->db, a->g, a->x, a->w, a->stats,
                          a->activation == FNN_NORM_ACT_RELU ? a->y_out : NULL, a->N, a->C, a->S, a->training);
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
