/* attention.cu: core/ops/attention.c's fused attention on the GPU, as the family's rows
 * (core/ops/attention.h, at the end of the launchers): the products (scores = scale q k^T, out = P v
 * and the backward's four) on the backend's shared gemm (reached through its table, as the core
 * does), batched strided over batch * heads, and between them the row kernels here: the masked
 * softmax of the scores in place (P), and the softmax backward dS = P (dP - rowsum(P dP)) in place
 * of dP; the KV cache's write is one strided copy (cuda/rnn.cu's). Rows are [B, H, Tq] of Tk keys;
 * query i of a head sees keys 0 .. i + Tk - Tq when causal, all keys otherwise, minus the key padding
 * mask [B, Tk] (nonzero = padding, float32 or int64, read through its strides); no mask tensor is made.
 * A query that sees no key gets zeros, as on the CPU. A block per row (blocks stride over the
 * rows): threads stride over the keys, warp shuffles and one shared slot per warp combine the max
 * and the sums.
 *
 * defines: fnn_cuda_attention_rows (the family's rows) */
#include "common.cuh"
#include "ops/attention.h"

#include <limits.h>

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

static int attn_softmax(int ordinal, float *p, int64_t rows, int64_t Tq, int64_t Tk, int64_t H, int causal,
                        const void *mask, int mask_i64, int64_t ms0, int64_t ms1) {
    if (rows == 0 || Tk == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("attention", ordinal));
    FNN_LAUNCH_BLOCKS(attn_softmax_kernel, attn_blocks(rows), attn_threads(Tk), p, rows, Tq, Tk, H, causal, mask,
                      mask_i64, ms0, ms1);
    FNN_CUDA_CHECK("attention", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int attn_softmax_grad(int ordinal, float *ds, const float *p, int64_t rows, int64_t Tq, int64_t Tk,
                             int causal) {
    if (rows == 0 || Tk == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("attention", ordinal));
    FNN_LAUNCH_BLOCKS(attn_softmax_grad_kernel, attn_blocks(rows), attn_threads(Tk), ds, p, rows, Tq, Tk, causal);
    FNN_CUDA_CHECK("attention", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ---- the rows (core/ops/attention.h) ---- */

/* c = alpha op(a) op(b) for every (batch, head): one strided-batched call over B H when every operand's
 * batch stride is its head stride times H (or B or H is 1), else a call per batch entry over its H heads */
static int attn_dgemm(int ord, int ta, int tb, int64_t B, int64_t H, int64_t m, int64_t n,
                      int64_t k, float alpha, const fnn_attn_mat *a, const fnn_attn_mat *b, float *c,
                      const int64_t cs[3]) {
    const fnn_attn_mat *ops[2] = {a, b};
    bool flat = B == 1 || H == 1;
    if (!flat) {
        flat = cs[0] == H * cs[1];
        for (int i = 0; i < 2; i++) flat = flat && ops[i]->s[0] == H * ops[i]->s[1];
    }
    if (flat) {   /* entry e = b H + h at e times the head stride (or the batch stride when H is 1) */
        const int64_t sa = H == 1 ? a->s[0] : a->s[1], sb = H == 1 ? b->s[0] : b->s[1], sc = H == 1 ? cs[0] : cs[1];
        return fnn_cuda_gemm_prec(FNN_PREC_MATMUL, ord, ta, tb, (int)m, (int)n, (int)k, alpha, a->p, (int)a->s[2], sa,
                                  b->p, (int)b->s[2], sb, 0.0f, c, (int)cs[2], sc, (int)(B * H));
    }
    for (int64_t i = 0; i < B; i++)
        FNN_TRY(fnn_cuda_gemm_prec(FNN_PREC_MATMUL, ord, ta, tb, (int)m, (int)n, (int)k, alpha, a->p + i * a->s[0],
                                   (int)a->s[2], a->s[1], b->p + i * b->s[0], (int)b->s[2], b->s[1], 0.0f,
                                   c + i * cs[0], (int)cs[2], cs[1], (int)H));
    return FNN_STATUS_OK;
}

/* S = scale q k^T, the masked softmax in place, o = P v */
static int attn_forward(int ord, const fnn_attn_args *a) {
    const int64_t B = a->B, H = a->H, Tq = a->Tq, Tk = a->Tk, D = a->D, Dv = a->Dv;
    const int64_t qshape[4] = {B, H, Tq, D}, kshape[4] = {B, H, Tk, D};
    FNN_CHECK(B * H < INT_MAX && Tq < INT_MAX && Tk < INT_MAX && D < INT_MAX && Dv < INT_MAX, FNN_STATUS_SHAPE,
              "attention: q %s and k %s are too large for one GEMM", fnn_shape_dims(4, qshape).s,
              fnn_shape_dims(4, kshape).s);
    const int64_t ps[3] = {H * Tq * Tk, Tq * Tk, Tk}, os[3] = {Tq * H * Dv, Dv, H * Dv};
    const fnn_attn_mat mp = {a->p, {ps[0], ps[1], ps[2]}, nullptr};
    int rc = attn_dgemm(ord, 0, 1, B, H, Tq, Tk, D, a->scale, &a->q, &a->k, a->p, ps);
    if (!rc) rc = attn_softmax(ord, a->p, B * H * Tq, Tq, Tk, H, a->causal, a->mask, a->mask_i64, a->ms0, a->ms1);
    if (!rc) rc = attn_dgemm(ord, 0, 0, B, H, Tq, Dv, Tk, 1.0f, &mp, &a->v, a->o, os);
    return rc;
}

/* the backward: the same products as the CPU's attn_bwd_heads, dS by the row kernel */
static int attn_backward(int ord, const fnn_attn_args *a) {
    const int64_t B = a->B, H = a->H, Tq = a->Tq, Tk = a->Tk, D = a->D, Dv = a->Dv;
    const int64_t ps[3] = {H * Tq * Tk, Tq * Tk, Tk};
    const fnn_attn_mat mp = {a->p, {ps[0], ps[1], ps[2]}, nullptr};
    int rc = FNN_STATUS_OK;
    if (a->dv) {   /* dv = P^T dO */
        const int64_t cs[3] = {Tk * H * Dv, Dv, H * Dv};
        rc = attn_dgemm(ord, 1, 0, B, H, Tk, Dv, Tq, 1.0f, &mp, &a->g, a->dv, cs);
    }
    if (!rc && a->ds) {
        const fnn_attn_mat mds = {a->ds, {ps[0], ps[1], ps[2]}, nullptr};
        rc = attn_dgemm(ord, 0, 1, B, H, Tq, Tk, Dv, 1.0f, &a->g, &a->v, a->ds, ps);   /* dP = dO v^T */
        if (!rc) rc = attn_softmax_grad(ord, a->ds, a->p, B * H * Tq, Tq, Tk, a->causal);
        if (!rc && a->dq) {   /* dq = scale dS k */
            const int64_t cs[3] = {Tq * H * D, D, H * D};
            rc = attn_dgemm(ord, 0, 0, B, H, Tq, D, Tk, a->scale, &mds, &a->k, a->dq, cs);
        }
        if (!rc && a->dk) {   /* dk = scale dS^T q */
            const int64_t cs[3] = {Tk * H * D, D, H * D};
            rc = attn_dgemm(ord, 1, 0, B, H, Tk, D, Tq, a->scale, &mds, &a->q, a->dk, cs);
        }
    }
    return rc;
}

/* the KV cache: rows pos.. of buf [B,H,cap,C] from x's strides, one strided copy (cuda/rnn.cu) */
static int attn_cache_write(int ord, float *buf, int64_t cap, int64_t pos, const float *x, const int64_t *xstride,
                            const int64_t *xshape) {
    const int64_t H = xshape[1], C = xshape[3];
    const int64_t ds[4] = {H * cap * C, cap * C, C, 1};
    return fnn_cuda_seq_copy(ord, buf + pos * C, ds, x, xstride, xshape);
}

/* lse_from_tk 0: these rows keep P at every length (the backward's products read it whole) */
extern "C" const fnn_attn_row fnn_cuda_attention_rows[] = {
    {"attention", attn_forward, attn_backward, attn_cache_write, 0},
    {NULL, NULL, NULL, NULL, 0},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
