/* pool.cu: the GPU side of core/ops/pool.c (the pool family's rows, core/ops/pool.h): max and avg
 * pooling over 1..3 spatial dims, adaptive_avg_pool2d, upsample_nearest (1..3 dims) and
 * upsample_bilinear2d, forward beside backward. As on the CPU every input is `planes` contiguous
 * planes [D, H, W] (1-d and 2-d ops have leading 1s), windows and source indices as the CPU
 * computes them.
 *
 * Forward: a thread per output element (grid-stride). Backward: a thread per input element that
 * gathers from the outputs that read it, in the order the CPU adds them (outputs in row-major
 * order), so no atomics are needed and the result is deterministic: max pooling sums dy over
 * the covering windows whose saved argmax is this element; avg pooling sums dy / divisor;
 * upsampling sums over the outputs that read the element (bilinear: found by a binary search of
 * the monotone source-index map). Divisions that the CPU makes in IEEE arithmetic go through
 * __fdiv_rn, and the bilinear blends through __fmul_rn/__fadd_rn (no FMA contraction, no fast
 * division), so those ops give the CPU's bits. A 32-bit index is used when the element count
 * allows (the divisions of the index decomposition are much cheaper).
 *
 * defines: fnn_cuda_pool_rows (the family's rows, core/ops/pool.h) */
#include "common.cuh"
#include "ops/pool.h"

#include <math.h>

/* a pool's geometry along D, H, W (sizes 1, kernel 1, stride 1, padding 0 along absent dims) */
struct PoolGeom {
    int64_t planes, in[3], out[3], k[3], s[3], p[3];
    int cip;   /* avg: count_include_pad */
};

/* IEEE multiply / add that nvcc may not contract into an FMA (the CPU build has no FMA) */
__device__ __forceinline__ float pool_mul(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
__device__ __forceinline__ float pool_add(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

/* window o along an axis: [lo, hi) inside the input; returns its extent clipped to the padded
 * input (count_include_pad's divisor) */
template <class I> __device__ __forceinline__ I pool_window(I o, I k, I s, I p, I in, I &lo, I &hi) {
    const I start = o * s - p, end = start + k;
    const I padded_end = end < in + p ? end : in + p;
    lo = start < 0 ? 0 : start;
    hi = end < in ? end : in;
    return padded_end - start;
}

/* the outputs whose windows along an axis cover input i: [lo, hi] (empty when lo > hi) */
template <class I> __device__ __forceinline__ void pool_covering(I i, I k, I s, I p, I out, I &lo, I &hi) {
    const I a = i + p - k + 1;   /* o s - p + k > i */
    lo = a <= 0 ? 0 : (a + s - 1) / s;
    hi = (i + p) / s;            /* o s - p <= i */
    if (hi > out - 1) hi = out - 1;
}

/* output element i's position: plane p and (od, oh, ow) in sizes D, H, W */
template <class I> __device__ __forceinline__ void pool_split(I i, I D, I H, I W, I &p, I &d, I &h, I &w) {
    w = i % W;
    I t = i / W;
    h = t % H;
    t /= H;
    d = t % D;
    p = t / D;
}

/* y = the max of each window (padding -inf), idx = its offset in the plane: the first maximum in
 * row-major window order wins ties, a nan wins over numbers (the CPU's scan) */
template <class I>
__global__ void pool_max_kernel(float *y, int32_t *idx, const float *x, PoolGeom g, I n) {
    const I D = (I)g.in[0], H = (I)g.in[1], W = (I)g.in[2], Do = (I)g.out[0], Ho = (I)g.out[1], Wo = (I)g.out[2];
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, od, oh, ow, d0, d1, h0, h1, w0, w1;
        pool_split(i, Do, Ho, Wo, p, od, oh, ow);
        pool_window<I>(od, (I)g.k[0], (I)g.s[0], (I)g.p[0], D, d0, d1);
        pool_window<I>(oh, (I)g.k[1], (I)g.s[1], (I)g.p[1], H, h0, h1);
        pool_window<I>(ow, (I)g.k[2], (I)g.s[2], (I)g.p[2], W, w0, w1);
        const float *xp = x + p * D * H * W;
        float m = -INFINITY;
        I at = (d0 * H + h0) * W + w0;
        for (I id = d0; id < d1; id++)
            for (I ih = h0; ih < h1; ih++) {
                const I row = (id * H + ih) * W;
                for (I iw = w0; iw < w1; iw++) {
                    const float v = xp[row + iw];
                    if (v > m || isnan(v)) { m = v; at = row + iw; }
                }
            }
        y[i] = m;
        if (idx) idx[i] = (int32_t)at;
    }
}

/* dx = the sum of dy over the covering windows whose argmax is this element */
template <class I>
__global__ void pool_max_grad_kernel(float *dx, const float *dy, const int32_t *idx, PoolGeom g, I n) {
    const I D = (I)g.in[0], H = (I)g.in[1], W = (I)g.in[2], Do = (I)g.out[0], Ho = (I)g.out[1], Wo = (I)g.out[2];
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, id, ih, iw, d0, d1, h0, h1, w0, w1;
        pool_split(i, D, H, W, p, id, ih, iw);
        pool_covering<I>(id, (I)g.k[0], (I)g.s[0], (I)g.p[0], Do, d0, d1);
        pool_covering<I>(ih, (I)g.k[1], (I)g.s[1], (I)g.p[1], Ho, h0, h1);
        pool_covering<I>(iw, (I)g.k[2], (I)g.s[2], (I)g.p[2], Wo, w0, w1);
        const int32_t self = (int32_t)((id * H + ih) * W + iw);
        const I base = p * Do * Ho * Wo;
        float acc = 0.0f;
        for (I od = d0; od <= d1; od++)
            for (I oh = h0; oh <= h1; oh++)
                for (I ow = w0; ow <= w1; ow++) {
                    const I o = base + (od * Ho + oh) * Wo + ow;
                    if (idx[o] == self) acc += dy[o];
                }
        dx[i] = acc;
    }
}

/* window (od, oh, ow)'s divisor and extent inside the input */
template <class I>
__device__ __forceinline__ float pool_avg_window(const PoolGeom &g, I od, I oh, I ow, I &d0, I &d1, I &h0, I &h1,
                                                 I &w0, I &w1) {
    const I pd = pool_window<I>(od, (I)g.k[0], (I)g.s[0], (I)g.p[0], (I)g.in[0], d0, d1);
    const I ph = pool_window<I>(oh, (I)g.k[1], (I)g.s[1], (I)g.p[1], (I)g.in[1], h0, h1);
    const I pw = pool_window<I>(ow, (I)g.k[2], (I)g.s[2], (I)g.p[2], (I)g.in[2], w0, w1);
    /* int64 products: a padded 3-d window may pass 2^31 only in theory, but costs nothing here */
    return (float)(g.cip ? (int64_t)pd * ph * pw : (int64_t)(d1 - d0) * (h1 - h0) * (w1 - w0));
}

/* y = the sum over each window (in row-major order) / its divisor */
template <class I>
__global__ void pool_avg_kernel(float *y, const float *x, PoolGeom g, I n) {
    const I D = (I)g.in[0], H = (I)g.in[1], W = (I)g.in[2], Do = (I)g.out[0], Ho = (I)g.out[1], Wo = (I)g.out[2];
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, od, oh, ow, d0, d1, h0, h1, w0, w1;
        pool_split(i, Do, Ho, Wo, p, od, oh, ow);
        const float div = pool_avg_window<I>(g, od, oh, ow, d0, d1, h0, h1, w0, w1);
        const float *xp = x + p * D * H * W;
        float s = 0.0f;
        for (I id = d0; id < d1; id++)
            for (I ih = h0; ih < h1; ih++) {
                const float *xr = xp + (id * H + ih) * W;
                for (I iw = w0; iw < w1; iw++) s += xr[iw];
            }
        y[i] = __fdiv_rn(s, div);
    }
}

/* dx = the sum of dy / divisor over the covering windows, in output order */
template <class I>
__global__ void pool_avg_grad_kernel(float *dx, const float *dy, PoolGeom g, I n) {
    const I D = (I)g.in[0], H = (I)g.in[1], W = (I)g.in[2], Do = (I)g.out[0], Ho = (I)g.out[1], Wo = (I)g.out[2];
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, id, ih, iw, c0, c1, e0, e1, f0, f1;
        pool_split(i, D, H, W, p, id, ih, iw);
        pool_covering<I>(id, (I)g.k[0], (I)g.s[0], (I)g.p[0], Do, c0, c1);
        pool_covering<I>(ih, (I)g.k[1], (I)g.s[1], (I)g.p[1], Ho, e0, e1);
        pool_covering<I>(iw, (I)g.k[2], (I)g.s[2], (I)g.p[2], Wo, f0, f1);
        const I base = p * Do * Ho * Wo;
        float acc = 0.0f;
        for (I od = c0; od <= c1; od++)
            for (I oh = e0; oh <= e1; oh++)
                for (I ow = f0; ow <= f1; ow++) {
                    I d0, d1, h0, h1, w0, w1;
                    const float div = pool_avg_window<I>(g, od, oh, ow, d0, d1, h0, h1, w0, w1);
                    acc += __fdiv_rn(dy[base + (od * Ho + oh) * Wo + ow], div);
                }
        dx[i] = acc;
    }
}

/* adaptive: output o of n along an input of L averages [floor(o L / n), ceil((o + 1) L / n)) */
template <class I> __device__ __forceinline__ void pool_adaptive(I o, I L, I n, I &lo, I &hi) {
    lo = (I)((int64_t)o * L / n);
    hi = (I)(((int64_t)(o + 1) * L + n - 1) / n);
}

/* y [planes, Ho, Wo] = the mean of each adaptive window of x [planes, H, W] */
template <class I>
__global__ void pool_adaptive_kernel(float *y, const float *x, I H, I W, I Ho, I Wo, I n) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, unused, oy, ox, h0, h1, w0, w1;
        pool_split(i, (I)1, Ho, Wo, p, unused, oy, ox);
        pool_adaptive<I>(oy, H, Ho, h0, h1);
        pool_adaptive<I>(ox, W, Wo, w0, w1);
        const float *xp = x + p * H * W;
        float s = 0.0f;
        for (I iy = h0; iy < h1; iy++)
            for (I ix = w0; ix < w1; ix++) s += xp[iy * W + ix];
        y[i] = __fdiv_rn(s, (float)((int64_t)(h1 - h0) * (w1 - w0)));
    }
}

/* the outputs whose adaptive windows cover input i: [lo, hi] */
template <class I> __device__ __forceinline__ void pool_adaptive_covering(I i, I L, I n, I &lo, I &hi) {
    lo = (I)((int64_t)i * n / L);                 /* (o + 1) L > i n */
    hi = (I)(((int64_t)(i + 1) * n - 1) / L);     /* o L < (i + 1) n */
    if (hi > n - 1) hi = n - 1;
}

/* dx = the sum of dy / area over the covering windows, in output order */
template <class I>
__global__ void pool_adaptive_grad_kernel(float *dx, const float *dy, I H, I W, I Ho, I Wo, I n) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, unused, iy, ix, a0, a1, b0, b1;
        pool_split(i, (I)1, H, W, p, unused, iy, ix);
        pool_adaptive_covering<I>(iy, H, Ho, a0, a1);
        pool_adaptive_covering<I>(ix, W, Wo, b0, b1);
        const float *dp = dy + p * Ho * Wo;
        float acc = 0.0f;
        for (I oy = a0; oy <= a1; oy++) {
            I h0, h1;
            pool_adaptive<I>(oy, H, Ho, h0, h1);
            if (iy < h0 || iy >= h1) continue;
            for (I ox = b0; ox <= b1; ox++) {
                I w0, w1;
                pool_adaptive<I>(ox, W, Wo, w0, w1);
                if (ix < w0 || ix >= w1) continue;
                acc += __fdiv_rn(dp[oy * Wo + ox], (float)((int64_t)(h1 - h0) * (w1 - w0)));
            }
        }
        dx[i] = acc;
    }
}

/* nearest: output o reads input floor(o in / out); input i is read by [ceil(i out / in), ceil((i + 1) out / in)) */
__device__ __forceinline__ int64_t pool_nearest_src(int64_t o, int64_t in, int64_t out) { return o * in / out; }
__device__ __forceinline__ int64_t pool_nearest_first(int64_t i, int64_t in, int64_t out) { return (i * out + in - 1) / in; }

/* y [planes, out] = x [planes, in] at the source indices */
template <class I>
__global__ void pool_nearest_kernel(float *y, const float *x, PoolGeom g, I n) {
    const I D = (I)g.in[0], H = (I)g.in[1], W = (I)g.in[2], Do = (I)g.out[0], Ho = (I)g.out[1], Wo = (I)g.out[2];
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, od, oh, ow;
        pool_split(i, Do, Ho, Wo, p, od, oh, ow);
        const I id = (I)pool_nearest_src(od, D, Do), ih = (I)pool_nearest_src(oh, H, Ho), iw = (I)pool_nearest_src(ow, W, Wo);
        y[i] = x[((p * D + id) * H + ih) * W + iw];
    }
}

/* dx = the sum over the output columns that read it of the sums over the output rows (depth,
 * height) that read its row: the CPU's order (rows first, then columns) */
template <class I>
__global__ void pool_nearest_grad_kernel(float *dx, const float *dy, PoolGeom g, I n) {
    const I D = (I)g.in[0], H = (I)g.in[1], W = (I)g.in[2], Do = (I)g.out[0], Ho = (I)g.out[1], Wo = (I)g.out[2];
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, id, ih, iw;
        pool_split(i, D, H, W, p, id, ih, iw);
        const I d0 = (I)pool_nearest_first(id, D, Do), d1 = (I)pool_nearest_first(id + 1, D, Do);
        const I h0 = (I)pool_nearest_first(ih, H, Ho), h1 = (I)pool_nearest_first(ih + 1, H, Ho);
        const I w0 = (I)pool_nearest_first(iw, W, Wo), w1 = (I)pool_nearest_first(iw + 1, W, Wo);
        float acc = 0.0f;
        for (I ow = w0; ow < w1; ow++) {
            float t = 0.0f;
            for (I od = d0; od < d1; od++)
                for (I oh = h0; oh < h1; oh++) t += dy[((p * Do + od) * Ho + oh) * Wo + ow];
            acc += t;
        }
        dx[i] = acc;
    }
}

/* bilinear, one axis: the CPU's scale (IEEE division; host and device) */
static inline float pool_linear_scale(int64_t in, int64_t out, int align_corners) {
    return align_corners ? (out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f) : (float)in / (float)out;
}
/* output o blends inputs i0, i1 (i1 = i0 + 1, or i0 at the last input) with weights w0 + w1 = 1,
 * computed exactly as core/ops/pool.c's axis_fill */
__device__ __forceinline__ void pool_linear(int64_t o, int64_t in, float scale, int align, int64_t &i0, int64_t &i1,
                                            float &w0, float &w1) {
    float src = align ? pool_mul(scale, (float)o) : pool_add(pool_mul(scale, pool_add((float)o, 0.5f)), -0.5f);
    if (src < 0) src = 0;
    int64_t i = (int64_t)src;
    if (i > in - 1) i = in - 1;
    i0 = i;
    i1 = i < in - 1 ? i + 1 : i;
    w1 = pool_add(src, -(float)i);
    w0 = pool_add(1.0f, -w1);
}
/* the first output whose i1 reaches input i (i1 is nondecreasing in o): its readers start there */
__device__ __forceinline__ int64_t pool_linear_first(int64_t i, int64_t in, int64_t out, float scale, int align) {
    int64_t lo = 0, hi = out;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        int64_t i0, i1;
        float w0, w1;
        pool_linear(mid, in, scale, align, i0, i1, w0, w1);
        if (i1 < i) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}
/* reader o's weight on input i (the CPU's lists: 1 where o reads i twice) */
__device__ __forceinline__ float pool_linear_weight(int64_t i, int64_t i0, int64_t i1, float w0, float w1) {
    return i0 == i && i1 == i ? 1.0f : i0 == i ? w0 : i1 == i ? w1 : 0.0f;
}

/* y [planes, Ho, Wo]: rows blended along W first, then the two rows along H (the CPU's order) */
template <class I>
__global__ void pool_bilinear_kernel(float *y, const float *x, I H, I W, I Ho, I Wo, float sh, float sw, int align,
                                     I n) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, unused, oy, ox;
        pool_split(i, (I)1, Ho, Wo, p, unused, oy, ox);
        int64_t y0, y1, x0, x1;
        float a, b, c, d;
        pool_linear(oy, H, sh, align, y0, y1, a, b);
        pool_linear(ox, W, sw, align, x0, x1, c, d);
        const float *r0 = x + (p * H + (I)y0) * W, *r1 = x + (p * H + (I)y1) * W;
        const float t0 = pool_add(pool_mul(c, r0[x0]), pool_mul(d, r0[x1]));
        const float t1 = pool_add(pool_mul(c, r1[x0]), pool_mul(d, r1[x1]));
        y[i] = pool_add(pool_mul(a, t0), pool_mul(b, t1));
    }
}

/* dx [planes, H, W]: over the output columns that read it, the weighted sum over the output rows
 * that read its row, weighted again (the CPU's order: rows first, then columns) */
template <class I>
__global__ void pool_bilinear_grad_kernel(float *dx, const float *dy, I H, I W, I Ho, I Wo, float sh, float sw,
                                          int align, I n) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p, unused, iy, ix;
        pool_split(i, (I)1, H, W, p, unused, iy, ix);
        const float *dp = dy + p * Ho * Wo;
        const int64_t oy0 = pool_linear_first(iy, H, Ho, sh, align), ox0 = pool_linear_first(ix, W, Wo, sw, align);
        float acc = 0.0f;
        for (int64_t ox = ox0; ox < Wo; ox++) {
            int64_t x0, x1;
            float c, d;
            pool_linear(ox, W, sw, align, x0, x1, c, d);
            if (x0 > ix) break;
            const float cw = pool_linear_weight(ix, x0, x1, c, d);
            float t = 0.0f;
            bool first = true;
            for (int64_t oy = oy0; oy < Ho; oy++) {
                int64_t y0, y1;
                float a, b;
                pool_linear(oy, H, sh, align, y0, y1, a, b);
                if (y0 > iy) break;
                const float v = pool_mul(pool_linear_weight(iy, y0, y1, a, b), dp[oy * Wo + ox]);
                t = first ? v : pool_add(t, v);
                first = false;
            }
            if (!first) acc = pool_add(acc, pool_mul(cw, t));
        }
        dx[i] = acc;
    }
}

/* a 32-bit index fits an op whose input and output hold nin and nout elements (offsets into either,
 * with the grid-stride step added) */
static inline bool pool_small(int64_t nin, int64_t nout) { return (nin > nout ? nin : nout) <= INT32_MAX / 2; }
/* a row's arguments as the kernels' geometry; pools: with their windows, else kernel 1, stride 1, no padding */
static inline PoolGeom pool_geom(const fnn_pool_args *a, bool windows) {
    PoolGeom g;
    g.planes = a->planes;
    for (int i = 0; i < 3; i++) {
        g.in[i] = a->in[i]; g.out[i] = a->out[i];
        g.k[i] = windows ? a->k[i] : 1; g.s[i] = windows ? a->s[i] : 1; g.p[i] = windows ? a->p[i] : 0;
    }
    g.cip = windows && a->count_include_pad != 0;
    return g;
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */

/* launch kernel<int32_t or int64_t> over n elements (an op of nin input and nout output elements,
 * n one of them), then check the launch */
#define POOL_LAUNCH(op, kernel, n, nin, nout, ...)                                                         \
    do {                                                                                                   \
        if ((n) <= 0) return FNN_STATUS_OK;                                                                \
        FNN_TRY(fnn_cuda_use_device(op, ordinal));                                                         \
        if (pool_small(nin, nout))                                                                         \
            FNN_LAUNCH(kernel<int32_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, __VA_ARGS__, (int32_t)(n));  \
        else                                                                                               \
            FNN_LAUNCH(kernel<int64_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, __VA_ARGS__, (int64_t)(n));  \
        FNN_CUDA_CHECK(op, cudaGetLastError());                                                            \
        return FNN_STATUS_OK;                                                                              \
    } while (0)

/* the element counts of a's input and output */
#define POOL_SIZES(a)                                                                                      \
    const int64_t nin = (a)->planes * (a)->in[0] * (a)->in[1] * (a)->in[2],                               \
                  nout = (a)->planes * (a)->out[0] * (a)->out[1] * (a)->out[2]

static int max_pool_forward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES(a);
    const PoolGeom g = pool_geom(a, true);
    POOL_LAUNCH("max_pool", pool_max_kernel, nout, nin, nout, a->y, a->idx, a->x, g);
}

static int max_pool_backward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES(a);
    const PoolGeom g = pool_geom(a, true);
    POOL_LAUNCH("max_pool", pool_max_grad_kernel, nin, nin, nout, a->dx, a->dy, (const int32_t *)a->idx, g);
}

static int avg_pool_forward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES(a);
    const PoolGeom g = pool_geom(a, true);
    POOL_LAUNCH("avg_pool", pool_avg_kernel, nout, nin, nout, a->y, a->x, g);
}

static int avg_pool_backward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES(a);
    const PoolGeom g = pool_geom(a, true);
    POOL_LAUNCH("avg_pool", pool_avg_grad_kernel, nin, nin, nout, a->dx, a->dy, g);
}

/* the H, W, Ho, Wo of a 2-d op at the index width the launch picks */
#define POOL_LAUNCH_2D(op, kernel, n, a, b, ...)                                                           \
    do {                                                                                                   \
        if ((n) <= 0) return FNN_STATUS_OK;                                                                \
        FNN_TRY(fnn_cuda_use_device(op, ordinal));                                                         \
        if (pool_small(planes * H * W, planes * Ho * Wo))                                                  \
            FNN_LAUNCH(kernel<int32_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, a, b, (int32_t)H, (int32_t)W,     \
                       (int32_t)Ho, (int32_t)Wo, __VA_ARGS__(int32_t)(n));                                 \
        else                                                                                               \
            FNN_LAUNCH(kernel<int64_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, a, b, H, W, Ho, Wo, __VA_ARGS__(n)); \
        FNN_CUDA_CHECK(op, cudaGetLastError());                                                            \
        return FNN_STATUS_OK;                                                                              \
    } while (0)
/* a 2-d op's planes and sizes [planes, H, W] -> [planes, Ho, Wo] */
#define POOL_SIZES_2D(a)                                                                                   \
    const int64_t planes = (a)->planes, H = (a)->in[1], W = (a)->in[2], Ho = (a)->out[1], Wo = (a)->out[2]

static int adaptive_avg_pool_forward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES_2D(a);
    POOL_LAUNCH_2D("adaptive_avg_pool2d", pool_adaptive_kernel, planes * Ho * Wo, a->y, a->x, );
}

static int adaptive_avg_pool_backward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES_2D(a);
    POOL_LAUNCH_2D("adaptive_avg_pool2d", pool_adaptive_grad_kernel, planes * H * W, a->dx, a->dy, );
}

static int upsample_nearest_forward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES(a);
    const PoolGeom g = pool_geom(a, false);
    POOL_LAUNCH("upsample_nearest", pool_nearest_kernel, nout, nin, nout, a->y, a->x, g);
}

static int upsample_nearest_backward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES(a);
    const PoolGeom g = pool_geom(a, false);
    POOL_LAUNCH("upsample_nearest", pool_nearest_grad_kernel, nin, nin, nout, a->dx, a->dy, g);
}

static int upsample_bilinear_forward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES_2D(a);
    const float sh = pool_linear_scale(H, Ho, a->align_corners), sw = pool_linear_scale(W, Wo, a->align_corners);
    const int al = a->align_corners != 0;
    POOL_LAUNCH_2D("upsample_bilinear2d", pool_bilinear_kernel, planes * Ho * Wo, a->y, a->x, sh, sw, al, );
}

static int upsample_bilinear_backward(int ordinal, const fnn_pool_args *a) {
    POOL_SIZES_2D(a);
    const float sh = pool_linear_scale(H, Ho, a->align_corners), sw = pool_linear_scale(W, Wo, a->align_corners);
    const int al = a->align_corners != 0;
    POOL_LAUNCH_2D("upsample_bilinear2d", pool_bilinear_grad_kernel, planes * H * W, a->dx, a->dy, sh, sw, al, );
}

/* the family's rows: every op (registry_spec checks it); the 1-d, 2-d and 3-d pools share their
 * launchers, the geometry telling them apart */
/* forward_bf16 NULL: these rows take float32 only; autocast widens a bfloat16 tensor on the GPU */
extern "C" const fnn_pool_row fnn_cuda_pool_rows[] = {
    {"max_pool1d", max_pool_forward, max_pool_backward, NULL},
    {"max_pool2d", max_pool_forward, max_pool_backward, NULL},
    {"max_pool3d", max_pool_forward, max_pool_backward, NULL},
    {"avg_pool1d", avg_pool_forward, avg_pool_backward, NULL},
    {"avg_pool2d", avg_pool_forward, avg_pool_backward, NULL},
    {"avg_pool3d", avg_pool_forward, avg_pool_backward, NULL},
    {"adaptive_avg_pool2d", adaptive_avg_pool_forward, adaptive_avg_pool_backward, NULL},
    {"upsample_nearest", upsample_nearest_forward, upsample_nearest_backward, NULL},
    {"upsample_bilinear2d", upsample_bilinear_forward, upsample_bilinear_backward, NULL},
    {NULL, NULL, NULL, NULL},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
