/* reduction.cu: the GPU side of core/ops/reduction.c: sum (mean), prod, var
 * (std), norm, logsumexp, max/min with their positions, softmax and
 * log_softmax, cumsum, logcumsumexp, and every backward rule of those ops.
 *
 * The core hands over a contiguous x seen as [O, R, I] (reduced dim R). Each
 * output (o, i) reads one line: R values at stride I from o*R*I + i. A line
 * is worked either by a whole block (threads stride over the line, partial
 * results combined by warp shuffles and one shared-memory step) or by one
 * thread. Lines along the last dim (I = 1), and few long lines, get a block
 * each; many lines along a leading dim get a thread each, so a warp reads 32
 * neighbouring columns at once (coalesced) and no atomics are needed. The
 * same line code runs in both modes, so the two agree by construction.
 * Sums accumulate in double, as on the CPU.
 *
 * defines: fnn_cuda_reduction_rows (the family's rows), fnn_cuda_reduce, fnn_cuda_reduce_grad */
#include "common.cuh"
#include "ops/reduction.h"

#include <math.h>

typedef fnn_red_args RedArgs;   /* core/ops/reduction.h: the family's arguments, a.op the FNN_RED_* code */

/* ---- combining partial results across a block ---- */
struct AddOp { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct MulOp { template <class T> __device__ T operator()(T a, T b) const { return a * b; } };
/* the larger / smaller, a nan winning (as the CPU's scans, which stop at the first nan) */
struct MaxNanOp { __device__ float operator()(float a, float b) const { return isnan(a) ? a : isnan(b) ? b : fmaxf(a, b); } };
struct MinNanOp { __device__ float operator()(float a, float b) const { return isnan(a) ? a : isnan(b) ? b : fminf(a, b); } };
struct MaxOp { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };   /* nan ignored */
struct MinI64Op { __device__ int64_t operator()(int64_t a, int64_t b) const { return a < b ? a : b; } };

/* every thread of the block gets f over all threads' v (id: f's identity, for missing warps) */
template <class T, class F> __device__ T block_all(T v, F f, T id) {
    __shared__ T part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, o));
    __syncthreads();   /* the previous call's readers are done with part */
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? part[lane] : id;
        for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, o));
        if (lane == 0) part[0] = v;
    }
    __syncthreads();
    return part[0];
}

/* does (bv, bi) beat (av, ai) for max (min)? a nan beats a number; ties go to the lower position */
__device__ __forceinline__ bool beats(float av, int64_t ai, float bv, int64_t bi, bool is_max) {
    if (isnan(av)) return isnan(bv) && bi < ai;
    if (isnan(bv)) return true;
    if (bv == av) return bi < ai;
    return is_max ? bv > av : bv < av;
}
__device__ void block_best(float &v, int64_t &at, bool is_max) {
    __shared__ float pv[32];
    __shared__ int64_t pi[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_down_sync(0xffffffffu, v, o);
        int64_t oi = __shfl_down_sync(0xffffffffu, at, o);
        if (beats(v, at, ov, oi, is_max)) { v = ov; at = oi; }
    }
    __syncthreads();
    if (lane == 0) { pv[warp] = v; pi[warp] = at; }
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? pv[lane] : pv[0];
        at = lane < warps ? pi[lane] : pi[0];
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_down_sync(0xffffffffu, v, o);
            int64_t oi = __shfl_down_sync(0xffffffffu, at, o);
            if (beats(v, at, ov, oi, is_max)) { v = ov; at = oi; }
        }
        if (lane == 0) { pv[0] = v; pi[0] = at; }
    }
    __syncthreads();
    v = pv[0];
    at = pi[0];
}

/* how a line is walked: BLOCK = one block per line, else one thread per line */
template <bool BLOCK> struct Walk {
    static __device__ int64_t first() { return BLOCK ? threadIdx.x : 0; }
    static __device__ int64_t step() { return BLOCK ? blockDim.x : 1; }
    static __device__ bool leader() { return BLOCK ? threadIdx.x == 0 : true; }
    template <class T, class F> static __device__ T all(T v, F f, T id) {
        if constexpr (BLOCK) return block_all(v, f, id);
        else return v;
    }
    static __device__ void best(float &v, int64_t &at, bool is_max) {
        if constexpr (BLOCK) block_best(v, at, is_max);
    }
};

/* sum of x[r*s] (and of x*w when w) over the line, in double */
template <bool B> __device__ double line_sum(const float *x, const float *w, int64_t n, int64_t s) {
    double acc = 0;
    for (int64_t r = Walk<B>::first(); r < n; r += Walk<B>::step())
        acc += w ? (double)x[r * s] * w[r * s] : (double)x[r * s];
    return Walk<B>::all(acc, AddOp(), 0.0);
}
/* the largest value of the line, nan winning; -inf for none */
template <bool B> __device__ float line_max(const float *x, int64_t n, int64_t s) {
    float m = -INFINITY;
    for (int64_t r = Walk<B>::first(); r < n; r += Walk<B>::step()) m = MaxNanOp()(m, x[r * s]);
    return Walk<B>::all(m, MaxNanOp(), -INFINITY);
}

/* ---- the forward of line p ---- */
template <bool B> __device__ void forward_line(const RedArgs &a, int64_t p) {
    const int64_t R = a.R, I = a.I, o = p / I, i = p - o * I, base = o * R * I + i;
    const float *x = a.x + base;
    const int64_t s = I;
    float *y = a.out + p;
    switch (a.op) {
    case FNN_RED_SUM: {
        double t = line_sum<B>(x, NULL, R, s);
        if (Walk<B>::leader()) *y = (float)(t * a.k0);
        break;
    }
    case FNN_RED_PROD: {
        double t = 1;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) t *= x[r * s];
        t = Walk<B>::all(t, MulOp(), 1.0);
        if (Walk<B>::leader()) *y = (float)t;
        break;
    }
    case FNN_RED_VAR: {   /* two passes: mean, then squared deviations */
        double m = line_sum<B>(x, NULL, R, s) / (double)R, ss = 0;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) { double d = x[r * s] - m; ss += d * d; }
        ss = Walk<B>::all(ss, AddOp(), 0.0);
        double v = (double)R - a.k0 > 0 ? ss / ((double)R - a.k0) : NAN;
        if (Walk<B>::leader()) *y = (float)(a.k1 != 0 ? sqrt(v) : v);
        break;
    }
    case FNN_RED_NORM: {
        const double pw = a.k0;
        double t;
        if (isinf(pw)) {
            float m = pw > 0 ? 0.0f : INFINITY;
            for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) {
                float v = fabsf(x[r * s]);
                m = pw > 0 ? MaxNanOp()(m, v) : MinNanOp()(m, v);
            }
            t = pw > 0 ? Walk<B>::all(m, MaxNanOp(), 0.0f) : Walk<B>::all(m, MinNanOp(), (float)INFINITY);
        } else {
            double acc = 0;
            for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) {
                double v = fabs((double)x[r * s]);
                acc += pw == 2 ? v * v : pw == 1 ? v : pw == 0 ? (double)(v != 0) : pow(v, pw);
            }
            acc = Walk<B>::all(acc, AddOp(), 0.0);
            t = pw == 2 ? sqrt(acc) : (pw == 1 || pw == 0) ? acc : pow(acc, 1.0 / pw);
        }
        if (Walk<B>::leader()) *y = (float)t;
        break;
    }
    case FNN_RED_LSE: {
        float m = line_max<B>(x, R, s);
        if (isnan(m) || isinf(m)) { if (Walk<B>::leader()) *y = m; break; }   /* uniform across the block */
        double acc = 0;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) acc += __expf(x[r * s] - m);
        acc = Walk<B>::all(acc, AddOp(), 0.0);
        if (Walk<B>::leader()) *y = (float)(m + log(acc));
        break;
    }
    case FNN_RED_MAX:
    case FNN_RED_MIN: {
        const bool is_max = a.op == FNN_RED_MAX;
        float best = is_max ? -INFINITY : INFINITY;
        int64_t at = INT64_MAX;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step())
            if (beats(best, at, x[r * s], r, is_max)) { best = x[r * s]; at = r; }
        Walk<B>::best(best, at, is_max);
        if (Walk<B>::leader()) {
            *y = best;
            if (a.idx) a.idx[p] = at + 1;
        }
        break;
    }
    case FNN_RED_SOFTMAX:
    case FNN_RED_LOG_SOFTMAX: {   /* shifted by the max; a nan, or a row of -inf only, gives nan */
        float m = -INFINITY;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) m = fmaxf(m, x[r * s]);   /* nan ignored */
        m = Walk<B>::all(m, MaxOp(), -INFINITY);
        if (m == -INFINITY) m = 0;
        double acc = 0;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) acc += __expf(x[r * s] - m);
        acc = Walk<B>::all(acc, AddOp(), 0.0);
        float *yl = a.out + base;
        if (a.op == FNN_RED_LOG_SOFTMAX) {
            float ls = (float)log(acc);
            for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) yl[r * s] = (x[r * s] - m) - ls;
        } else {
            float inv = (float)(1.0 / acc);
            for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) yl[r * s] = __expf(x[r * s] - m) * inv;
        }
        break;
    }
    default: break;
    }
}

/* ---- the gradient of line p: dx along the line from g[p] (softmax: g along the line) ---- */
template <bool B> __device__ void backward_line(const RedArgs &a, int64_t p) {
    const int64_t R = a.R, I = a.I, o = p / I, i = p - o * I, base = o * R * I + i, s = I;
    const float *x = a.x ? a.x + base : NULL;
    float *dx = a.out + base;
    const float gp = a.op == FNN_RED_SOFTMAX || a.op == FNN_RED_LOG_SOFTMAX ? 0.0f : a.g[p];
    const float yp = a.y && a.op != FNN_RED_SOFTMAX && a.op != FNN_RED_LOG_SOFTMAX ? a.y[p] : 0.0f;
    switch (a.op) {
    case FNN_RED_SUM: {
        float v = (float)(gp * a.k0);
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) dx[r * s] = v;
        break;
    }
    case FNN_RED_PROD: {   /* the product of the others: exact with one zero, all zero with two */
        double t = 1, zeros = 0;
        int64_t at = INT64_MAX;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) {
            float v = x[r * s];
            if (v == 0) { zeros += 1; at = r < at ? r : at; }
            else t *= v;
        }
        t = Walk<B>::all(t, MulOp(), 1.0);
        zeros = Walk<B>::all(zeros, AddOp(), 0.0);
        at = Walk<B>::all(at, MinI64Op(), (int64_t)INT64_MAX);
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step())
            dx[r * s] = zeros == 0 ? (float)(gp * (t / x[r * s])) : (zeros == 1 && r == at) ? (float)(gp * t) : 0.0f;
        break;
    }
    case FNN_RED_VAR: {
        double m = line_sum<B>(x, NULL, R, s) / (double)R, div = (double)R - a.k0;
        double c = a.k1 != 0 ? (yp != 0 ? gp / (div * yp) : 0.0) : 2.0 * gp / div;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) dx[r * s] = (float)(c * (x[r * s] - m));
        break;
    }
    case FNN_RED_NORM: {
        const double pw = a.k0;
        if (pw == 0 || yp == 0) {
            for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) dx[r * s] = 0.0f;
        } else if (isinf(pw)) {   /* split evenly among the |x| that reach the norm */
            double ties = 0;
            for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) ties += fabsf(x[r * s]) == yp;
            ties = Walk<B>::all(ties, AddOp(), 0.0);
            float share = ties > 0 ? gp / (float)ties : 0.0f;
            for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) {
                float v = x[r * s];
                dx[r * s] = fabsf(v) == yp ? (v > 0 ? share : -share) : 0.0f;
            }
        } else {
            for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) {
                double v = x[r * s], t;
                if (v == 0) t = 0;
                else if (pw == 2) t = gp * v / yp;
                else if (pw == 1) t = v > 0 ? gp : -gp;
                else t = copysign(gp * pow(fabs(v) / yp, pw - 1), v);
                dx[r * s] = (float)t;
            }
        }
        break;
    }
    case FNN_RED_LSE:
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step())
            dx[r * s] = (isinf(yp) && yp < 0) ? 0.0f : gp * __expf(x[r * s] - yp);
        break;
    case FNN_RED_TIES: {   /* max/min over everything: g split among the elements equal to y */
        double ties = 0;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) ties += x[r * s] == yp;
        ties = Walk<B>::all(ties, AddOp(), 0.0);
        float share = ties > 0 ? gp / (float)ties : 0.0f;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) dx[r * s] = x[r * s] == yp ? share : 0.0f;
        break;
    }
    case FNN_RED_SELECT: {   /* max/min along a dim: all of g to the selected position */
        int64_t at = a.sel[p] - 1;
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step()) dx[r * s] = r == at ? gp : 0.0f;
        break;
    }
    case FNN_RED_SOFTMAX:
    case FNN_RED_LOG_SOFTMAX: {   /* softmax: y (g - sum g y); log_softmax: g - exp(y) sum g */
        const float *gl = a.g + base, *yl = a.y + base;
        bool lg = a.op == FNN_RED_LOG_SOFTMAX;
        float t = (float)line_sum<B>(gl, lg ? NULL : yl, R, s);
        for (int64_t r = Walk<B>::first(); r < R; r += Walk<B>::step())
            dx[r * s] = lg ? gl[r * s] - __expf(yl[r * s]) * t : yl[r * s] * (gl[r * s] - t);
        break;
    }
    default: break;
    }
}

/* up to 1024 threads (a single long line): the bound keeps the kernel within 64 registers */
template <bool GRAD> __global__ void __launch_bounds__(1024) lines_by_block(RedArgs a) {
    const int64_t lines = a.O * a.I;
    for (int64_t p = blockIdx.x; p < lines; p += gridDim.x) {   /* uniform per block: the syncs are safe */
        if constexpr (GRAD) backward_line<true>(a, p);
        else forward_line<true>(a, p);
    }
}
template <bool GRAD> __global__ void lines_by_thread(RedArgs a) {
    const int64_t lines = a.O * a.I;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < lines; p += (int64_t)gridDim.x * blockDim.x) {
        if constexpr (GRAD) backward_line<false>(a, p);
        else forward_line<false>(a, p);
    }
}

/* ==== the launchers and the backend's rows: plain C++ with FNN_LAUNCH, so spec/gpu/emulate.sh runs them too ==== */
/* a block per line for rows (I = 1) and for few long lines; a thread per line for many lines
 * across a leading dim (neighbouring threads read neighbouring columns) */
template <bool GRAD> static int run(const char *name, int ordinal, const RedArgs &a) {
    const int64_t lines = a.O * a.I;
    if (lines == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(name, ordinal));
    if (a.I == 1 || (lines < 2048 && a.R >= 64)) {
        /* threads for the line's length: 32..256, or 1024 for a single long line */
        int threads = lines == 1 && a.R >= 4096 ? 1024 : a.R >= 256 ? 256 : (int)((a.R + 31) / 32 * 32);
        if (threads < 32) threads = 32;
        unsigned blocks = (unsigned)(lines < (1 << 20) ? lines : (1 << 20));
        FNN_LAUNCH_BLOCKS(lines_by_block<GRAD>, blocks, threads, a);
    } else {
        FNN_LAUNCH(lines_by_thread<GRAD>, fnn_cuda_blocks(lines), FNN_CUDA_THREADS, a);
    }
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}

static const char *op_name(int op) {
    static const char *const names[] = {"sum", "prod", "var", "norm", "logsumexp", "max", "min",
                                        "max", "max", "softmax", "log_softmax"};
    return op >= 0 && op <= FNN_RED_LOG_SOFTMAX ? names[op] : "reduction";
}

int fnn_cuda_reduce(int ordinal, int op, float *y, int64_t *idx, const float *x, int64_t O, int64_t R, int64_t I,
                    double k0, double k1) {
    FNN_ASSERT(op >= FNN_RED_SUM && op <= FNN_RED_LOG_SOFTMAX && op != FNN_RED_TIES && op != FNN_RED_SELECT);
    FNN_ASSERT(R > 0 || (op != FNN_RED_MAX && op != FNN_RED_MIN));
    RedArgs a = {op, y, idx, x, NULL, NULL, NULL, O, R, I, k0, k1, NULL, -1};
    return run<false>(op_name(op), ordinal, a);
}

int fnn_cuda_reduce_grad(int ordinal, int op, float *dx, const float *g, const float *x, const float *y,
                         const int64_t *idx, int64_t O, int64_t R, int64_t I, double k0, double k1) {
    FNN_ASSERT(op >= FNN_RED_SUM && op <= FNN_RED_LOG_SOFTMAX && op != FNN_RED_MAX && op != FNN_RED_MIN);
    RedArgs a = {op, dx, NULL, x, g, y, idx, O, R, I, k0, k1, NULL, -1};
    return run<true>(op_name(op), ordinal, a);
}

/* the rows: each op's forward and backward as an FNN_RED_* line op of the engine above */
template <int OP> static int line_forward(int ordinal, const RedArgs *in) {
    RedArgs a = *in;
    a.op = OP;
    return run<false>(op_name(OP), ordinal, a);
}
template <int OP> static int line_backward(int ordinal, const RedArgs *in) {
    RedArgs a = *in;
    a.op = OP;
    return run<true>(op_name(OP), ordinal, a);
}
/* max/min: along a dim all of g goes to the forward's position, over everything ties share it */
template <int OP> static int extreme_backward(int ordinal, const RedArgs *in) {
    RedArgs a = *in;
    a.op = in->sel ? FNN_RED_SELECT : FNN_RED_TIES;
    return run<true>(op_name(OP), ordinal, a);
}
/* cumsum: a thread per line runs the sum along it in double, from the start, or for the gradient
 * from the end (neighbouring threads take neighbouring columns when I > 1) */
__global__ void cumsum_lines(float *y, const float *x, int64_t O, int64_t R, int64_t I, bool reverse) {
    const int64_t lines = O * I;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < lines; p += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = p / I, i = p - o * I, base = o * R * I + i;
        double acc = 0;
        for (int64_t k = 0; k < R; k++) {
            int64_t r = reverse ? R - 1 - k : k;
            acc += x[base + r * I];
            y[base + r * I] = (float)acc;
        }
    }
}
static int cumsum_run(int ordinal, float *y, const float *x, int64_t O, int64_t R, int64_t I, bool reverse) {
    if (O * I == 0 || R == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("cumsum", ordinal));
    FNN_LAUNCH(cumsum_lines, fnn_cuda_blocks(O * I), FNN_CUDA_THREADS, y, x, O, R, I, reverse);
    FNN_CUDA_CHECK("cumsum", cudaGetLastError());
    return FNN_STATUS_OK;
}
static int cumsum_forward(int ordinal, const RedArgs *a) { return cumsum_run(ordinal, a->out, a->x, a->O, a->R, a->I, false); }
static int cumsum_backward(int ordinal, const RedArgs *a) { return cumsum_run(ordinal, a->out, a->g, a->O, a->R, a->I, true); }
/* logcumsumexp, a thread per line as cumsum: forward y_r = log(e^y_r-1 + e^x_r) in double; the gradient
 * from the end, dx_r = e^(x_r - y_r) B_r with B_r = g_r + e^(y_r - y_r+1) B_r+1 (every exponent <= 0;
 * a -inf y or x weighs 0), as core/ops/reduction.c's scan_blocks */
__global__ void logcumsumexp_lines(float *out, const float *x, const float *y, const float *g, int64_t O, int64_t R,
                                   int64_t I, bool grad) {
    const int64_t lines = O * I;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < lines; p += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = p / I, i = p - o * I, base = o * R * I + i;
        double acc = grad ? 0.0 : -INFINITY;
        for (int64_t k = 0; k < R; k++) {
            int64_t at = base + (grad ? R - 1 - k : k) * I;
            if (!grad) {
                double v = x[at], m = acc > v ? acc : v, lo = acc > v ? v : acc;
                acc = isnan(acc) || isnan(v) ? NAN : isinf(m) ? m : m + log1p(exp(lo - m));
                out[at] = (float)acc;
            } else {
                double carry = k == 0 || y[at] == -INFINITY ? 0.0 : exp((double)y[at] - y[at + I]) * acc;
                acc = g[at] + carry;
                out[at] = x[at] == -INFINITY ? 0.0f : (float)(exp((double)x[at] - y[at]) * acc);
            }
        }
    }
}
static int logcumsumexp_run(int ordinal, const RedArgs *a, bool grad) {
    if (a->O * a->I == 0 || a->R == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("logcumsumexp", ordinal));
    FNN_LAUNCH(logcumsumexp_lines, fnn_cuda_blocks(a->O * a->I), FNN_CUDA_THREADS, a->out, a->x, a->y, a->g, a->O, a->R,
               a->I, grad);
    FNN_CUDA_CHECK("logcumsumexp", cudaGetLastError());
    return FNN_STATUS_OK;
}
static int logcumsumexp_forward(int ordinal, const RedArgs *a) { return logcumsumexp_run(ordinal, a, false); }
static int logcumsumexp_backward(int ordinal, const RedArgs *a) { return logcumsumexp_run(ordinal, a, true); }
extern "C" const fnn_red_row fnn_cuda_reduction_rows[] = {
    {"sum", line_forward<FNN_RED_SUM>, line_backward<FNN_RED_SUM>, 0},
    {"mean", line_forward<FNN_RED_SUM>, line_backward<FNN_RED_SUM>, 0},   /* k0 = 1/R */
    {"prod", line_forward<FNN_RED_PROD>, line_backward<FNN_RED_PROD>, 0},
    {"var", line_forward<FNN_RED_VAR>, line_backward<FNN_RED_VAR>, 0},
    {"std", line_forward<FNN_RED_VAR>, line_backward<FNN_RED_VAR>, 0},     /* k1 = 1 */
    {"norm", line_forward<FNN_RED_NORM>, line_backward<FNN_RED_NORM>, 0},
    {"logsumexp", line_forward<FNN_RED_LSE>, line_backward<FNN_RED_LSE>, 0},
    {"max", line_forward<FNN_RED_MAX>, extreme_backward<FNN_RED_MAX>, 0},
    {"min", line_forward<FNN_RED_MIN>, extreme_backward<FNN_RED_MIN>, 0},
    {"argmax", line_forward<FNN_RED_MAX>, NULL, 0},
    {"argmin", line_forward<FNN_RED_MIN>, NULL, 0},
    {"softmax", line_forward<FNN_RED_SOFTMAX>, line_backward<FNN_RED_SOFTMAX>, 0},
    {"log_softmax", line_forward<FNN_RED_LOG_SOFTMAX>, line_backward<FNN_RED_LOG_SOFTMAX>, 0},
    {"cumsum", cumsum_forward, cumsum_backward, 0},
    {"logcumsumexp", logcumsumexp_forward, logcumsumexp_backward, 0},
    {NULL, NULL, NULL, 0},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
