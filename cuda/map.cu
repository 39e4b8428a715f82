/* map.cu: the GPU side of core/ops/elementwise.c's broadcast driver: every
 * row kernel of that file (binary ops, comparisons, ops with a number, the
 * unary ops and where, forward and gradient rows alike) as a device
 * expression of a = x0, b = x1, c = x2 and the numbers k0, k1, one template
 * instance per FNN_MAP_* code (core/ops/elementwise_ops.h). elementwise.c
 * checks shapes and devices, makes the output and the autograd node, and
 * runs the same rules it runs on the CPU; so every backward rule of the
 * family runs here too (then fnn_sum_to_shape, a cuda sum, undoes broadcasts).
 *
 * The build uses fast math (--use_fast_math): exp, log, sin, cos, pow and
 * division are the hardware approximations (a few ulp; exp's error grows with
 * |x|). spec/cuda_parity_spec.lua states the tolerance it checks per op.
 *
 * defines: fnn_cuda_map */
#include "common.cuh"
#include "ops/elementwise_ops.h"

/* ---- device helpers: the same formulas as elementwise.c's ---- */
__device__ __forceinline__ float sigmoidf_(float x) {
    float e = __expf(-fabsf(x));   /* never overflows */
    return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
__device__ __forceinline__ float softplusf_(float x) { return fmaxf(x, 0.0f) + log1pf(__expf(-fabsf(x))); }
/* tanh in double: under --use_fast_math nvcc makes tanhf tanh.approx.f32 (relative error ~2^-11),
 * far outside the parity tolerance; the ops are memory bound, so the double costs nothing visible */
__device__ __forceinline__ float tanhf_(float x) { return (float)tanh((double)x); }
__device__ __forceinline__ float gelu_tanhf_(float x) {
    const float k = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf_(k * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float gelu_tanh_grad_(float x) {
    const float k = 0.7978845608028654f;
    float u = k * (x + 0.044715f * x * x * x), t = tanhf_(u);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
}
__device__ __forceinline__ float tanh_softplusf_(float x) {
    float e = __expf(fminf(x, 20.0f)), n = e * (e + 2.0f);
    return x > 20.0f ? 1.0f : n / (n + 2.0f);
}
__device__ __forceinline__ float mish_grad_(float x) {
    float t = tanh_softplusf_(x);
    return t + x * sigmoidf_(x) * (1.0f - t * t);
}
__device__ __forceinline__ float hardsigmoidf_(float x) {
    float v = x + 3.0f;
    v = v < 0.0f ? 0.0f : v;   /* nan stays nan */
    return (v > 6.0f ? 6.0f : v) * (1.0f / 6.0f);
}
#define SELU_SCALE 1.0507009873554804934f
#define SELU_ALPHA 1.6732632423543772848f

/* ---- one expression per code ---- */
template <int OP> struct Expr;
#define DEV(name, EXPR)                                                                          \
    template <> struct Expr<FNN_MAP_##name> {                                                    \
        static __device__ __forceinline__ float f(float a, float b, float c, float k0, float k1) { \
            (void)a; (void)b; (void)c; (void)k0; (void)k1;                                       \
            return (EXPR);                                                                       \
        }                                                                                        \
    };

DEV(add, a + b)
DEV(sub, a - b)
DEV(mul, a * b)
DEV(div, __fdiv_rn(a, b))   /* IEEE, as fnn_cuda_binary: the same op must not differ by path */
DEV(pow, powf(a, b))
DEV(maximum, (a > b || isnan(a)) ? a : b)
DEV(minimum, (a < b || isnan(a)) ? a : b)
DEV(copy, a)
DEV(neg, -a)
DEV(g_times_c, a * c)
DEV(g_times_b, a * b)
DEV(g_over_c, __fdiv_rn(a, c))
DEV(div_d1, -a * b / (c * c))
DEV(pow_d0, a * c * powf(b, c - 1.0f))
DEV(pow_d1, b > 0 ? a * powf(b, c) * __logf(b) : 0.0f)
DEV(max_d0, b > c ? a : (b == c ? 0.5f * a : 0.0f))
DEV(max_d1, c > b ? a : (b == c ? 0.5f * a : 0.0f))
DEV(min_d0, b < c ? a : (b == c ? 0.5f * a : 0.0f))
DEV(min_d1, c < b ? a : (b == c ? 0.5f * a : 0.0f))

DEV(eq, a == b ? 1.0f : 0.0f)
DEV(ne, a != b ? 1.0f : 0.0f)
DEV(lt, a < b ? 1.0f : 0.0f)
DEV(le, a <= b ? 1.0f : 0.0f)
DEV(gt, a > b ? 1.0f : 0.0f)
DEV(ge, a >= b ? 1.0f : 0.0f)

DEV(add_s, a + k0)
DEV(mul_s, a * k0)
DEV(rsub_s, k0 - a)
DEV(rdiv_s, k0 / a)
DEV(pow_s, powf(a, k0))
DEV(rpow_s, powf(k0, a))
DEV(g_times_k, a * k0)
DEV(rdiv_s_d, -a * k0 / (b * b))
DEV(pow_s_d, a * k0 * powf(b, k0 - 1.0f))
DEV(rpow_s_d, a * c * __logf(k0))

/*  op            forward (a = x)                               gradient (a = g, b = x, c = y) */
DEV(neg_f, -a)                                                DEV(neg_g, -a)
DEV(abs_f, fabsf(a))                                          DEV(abs_g, b > 0 ? a : (b < 0 ? -a : 0.0f))
DEV(exp_f, __expf(a))                                         DEV(exp_g, a * c)
DEV(log_f, __logf(a))                                         DEV(log_g, a / b)
DEV(sqrt_f, sqrtf(a))                                         DEV(sqrt_g, a * 0.5f / c)
DEV(rsqrt_f, rsqrtf(a))                                       DEV(rsqrt_g, a * -0.5f * c * c * c)
DEV(sin_f, __sinf(a))                                         DEV(sin_g, a * __cosf(b))
DEV(cos_f, __cosf(a))                                         DEV(cos_g, -a * __sinf(b))
DEV(tanh_f, tanhf_(a))                                        DEV(tanh_g, a * (1.0f - c * c))
DEV(sigmoid_f, sigmoidf_(a))                                  DEV(sigmoid_g, a * c * (1.0f - c))
DEV(relu_f, a > 0 ? a : 0.0f)                                 DEV(relu_g, b > 0 ? a : 0.0f)
DEV(gelu_f, 0.5f * a * (1.0f + erff(a * 0.70710678f)))
DEV(gelu_g, a * (0.5f * (1.0f + erff(b * 0.70710678f)) + b * 0.3989422804f * __expf(-0.5f * b * b)))
DEV(gelu_tanh_f, gelu_tanhf_(a))                              DEV(gelu_tanh_g, a * gelu_tanh_grad_(b))
DEV(silu_f, a * sigmoidf_(a))
DEV(silu_g, a * (sigmoidf_(b) * (1.0f + b * (1.0f - sigmoidf_(b)))))
DEV(softplus_f, softplusf_(a))                                DEV(softplus_g, a * sigmoidf_(b))
DEV(clamp_f, a < k0 ? k0 : (a > k1 ? k1 : a))                 DEV(clamp_g, (b >= k0 && b <= k1) ? a : 0.0f)
DEV(leaky_relu_f, a > 0 ? a : a * k0)                         DEV(leaky_relu_g, b > 0 ? a : a * k0)
DEV(elu_f, a > 0 ? a : k0 * expm1f(a))                        DEV(elu_g, b > 0 ? a : a * (c + k0))
DEV(selu_f, SELU_SCALE * (a > 0 ? a : SELU_ALPHA * expm1f(a)))
DEV(selu_g, b > 0 ? a * SELU_SCALE : a * (c + SELU_SCALE * SELU_ALPHA))
DEV(celu_f, a > 0 ? a : k0 * expm1f(a / k0))                  DEV(celu_g, b > 0 ? a : a * __expf(b / k0))
DEV(mish_f, a * tanh_softplusf_(a))                           DEV(mish_g, a * mish_grad_(b))
DEV(hardsigmoid_f, hardsigmoidf_(a))
DEV(hardsigmoid_g, (b > -3.0f && b < 3.0f) ? a * (1.0f / 6.0f) : 0.0f)
DEV(hardswish_f, a * hardsigmoidf_(a))
DEV(hardswish_g, b < -3.0f ? 0.0f : (b > 3.0f ? a : a * (b * (1.0f / 3.0f) + 0.5f)))
DEV(softsign_f, a / (1.0f + fabsf(a)))
DEV(softsign_g, a / ((1.0f + fabsf(b)) * (1.0f + fabsf(b))))

DEV(where, a != 0 ? b : c)
DEV(where_d1, b != 0 ? a : 0.0f)
DEV(where_d2, b != 0 ? 0.0f : a)
#undef DEV

/* ---- kernels ---- */
struct MapLayout {
    int ndim;
    int64_t shape[FNN_MAX_DIMS], stride[3][FNN_MAX_DIMS];
};

/* all three inputs contiguous with the output's shape (or a broadcast scalar: stride 0 throughout,
 * coalesced to unit stride 0) */
template <int OP> __global__ void map_flat(float *y, const float *x0, const float *x1, const float *x2, int64_t n,
                                           int64_t s0, int64_t s1, int64_t s2, float k0, float k1) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = Expr<OP>::f(x0[i * s0], x1[i * s1], x2[i * s2], k0, k1);
}

/* any broadcast and strides; I the index type (32-bit when every offset fits) */
template <int OP, typename I>
__global__ void map_strided(float *y, const float *x0, const float *x1, const float *x2, I n, MapLayout L, float k0,
                            float k1) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I rem = i, o0 = 0, o1 = 0, o2 = 0;
        for (int d = L.ndim - 1; d >= 0; d--) {
            I size = (I)L.shape[d];
            I idx = rem % size;
            rem /= size;
            o0 += idx * (I)L.stride[0][d];
            o1 += idx * (I)L.stride[1][d];
            o2 += idx * (I)L.stride[2][d];
        }
        y[i] = Expr<OP>::f(x0[o0], x1[o1], x2[o2], k0, k1);
    }
}

/* drop size-1 dims; merge neighbours every input walks as one run */
static void coalesce(MapLayout &L) {
    int n = 0;
    for (int d = 0; d < L.ndim; d++) {
        if (L.shape[d] == 1) continue;
        bool merge = n > 0;
        for (int k = 0; k < 3 && merge; k++) merge = L.stride[k][n - 1] == L.stride[k][d] * L.shape[d];
        if (merge) {
            L.shape[n - 1] *= L.shape[d];
            for (int k = 0; k < 3; k++) L.stride[k][n - 1] = L.stride[k][d];
            continue;
        }
        L.shape[n] = L.shape[d];
        for (int k = 0; k < 3; k++) L.stride[k][n] = L.stride[k][d];
        n++;
    }
    L.ndim = n;
}

/* ==== host side: the launchers. spec/gpu/emulate.sh compiles everything above this line for the host ==== */
template <int OP>
static void launch(float *y, const float *const *x, int64_t n, const MapLayout &L, float k0, float k1) {
    unsigned blocks = fnn_cuda_blocks(n);
    if (L.ndim == 0) {
        map_flat<OP><<<1, 1>>>(y, x[0], x[1], x[2], 1, 0, 0, 0, k0, k1);
        return;
    }
    if (L.ndim == 1 && L.stride[0][0] <= 1 && L.stride[1][0] <= 1 && L.stride[2][0] <= 1) {
        map_flat<OP><<<blocks, FNN_CUDA_THREADS>>>(y, x[0], x[1], x[2], n, L.stride[0][0], L.stride[1][0],
                                                   L.stride[2][0], k0, k1);
        return;
    }
    bool narrow = n < ((int64_t)1 << 30);
    for (int k = 0; k < 3; k++) {
        int64_t reach = 0;
        for (int d = 0; d < L.ndim; d++) reach += (L.shape[d] - 1) * L.stride[k][d];
        narrow = narrow && reach < ((int64_t)1 << 30);
    }
    if (narrow) map_strided<OP, int32_t><<<blocks, FNN_CUDA_THREADS>>>(y, x[0], x[1], x[2], (int32_t)n, L, k0, k1);
    else map_strided<OP, int64_t><<<blocks, FNN_CUDA_THREADS>>>(y, x[0], x[1], x[2], n, L, k0, k1);
}

int fnn_cuda_map(int ordinal, int op, float *y, const float *const *x, const int64_t *stride, int ndim,
                 const int64_t *shape, float k0, float k1) {
    FNN_ASSERT(op >= 0 && op < FNN_MAP_COUNT && ndim >= 0 && ndim <= FNN_MAX_DIMS);
    MapLayout L;
    L.ndim = ndim;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        L.shape[d] = shape[d];
        for (int k = 0; k < 3; k++) L.stride[k][d] = stride[k * FNN_MAX_DIMS + d];
        n *= shape[d];
    }
    if (n == 0) return FNN_STATUS_OK;
    coalesce(L);
    FNN_TRY(fnn_cuda_use_device("map", ordinal));
    switch (op) {
#define CASE(name) case FNN_MAP_##name: launch<FNN_MAP_##name>(y, x, n, L, k0, k1); break;
        FNN_MAP_OPS(CASE)
#undef CASE
    default: break;
    }
    FNN_CUDA_CHECK("map", cudaGetLastError());
    return FNN_STATUS_OK;
}
