/* map.cu: the GPU side of core/ops/elementwise.c's broadcast driver: every
 * row kernel of that file (binary ops, comparisons, ops with a number, the
 * unary ops and where, forward and gradient rows alike) as a device
 * expression of a = x0, b = x1, c = x2 and the numbers k0, k1, one template
 * instance per FNN_MAP_* code (core/ops/elementwise_ops.h). elementwise.c
 * checks shapes and devices, makes the output and the autograd node, and
 * runs the same rules it runs on the CPU; so every backward rule of the
 * family runs here too (then fnn_sum_to_shape, a cuda sum, undoes broadcasts).
 *
 * The formulas are core/ops/elementwise_ops.h's, written once for both sides;
 * this file names the GPU's math for them (M_*). The build uses fast math
 * (--use_fast_math): exp, log, sin, cos, pow and
 * division are the hardware approximations (a few ulp; exp's error grows with
 * |x|). spec/cuda_parity_spec.lua states the tolerance it checks per op.
 *
 * defines: fnn_cuda_elementwise_rows (the "map" row of core/ops/elementwise.h), fnn_cuda_map */
#include "common.cuh"
#include "ops/elementwise.h"
/* ---- the math the formulas of core/ops/elementwise_ops.h call, on the GPU ---- */
__device__ __forceinline__ float sigmoidf_(float x) {
    float e = __expf(-fabsf(x));   /* never overflows */
    return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
/* tanh in double: under --use_fast_math nvcc makes tanhf tanh.approx.f32 (relative error ~2^-11),
 * far outside the parity tolerance; the ops are memory bound, so the double costs nothing visible */
__device__ __forceinline__ float tanhf_(float x) { return (float)tanh((double)x); }
#define M_EXP __expf
#define M_LOG __logf
#define M_LOG1P log1pf
#define M_TANH tanhf_
#define M_SIGMOID sigmoidf_
#define M_ERF erff
#define M_ERF_WITH(z, e) erff(z)
#define M_ABS fabsf
#define M_SEL(c, x, y) ((c) ? (x) : (y))
#define M_EXPM1_NEG expm1f
#define M_SIN __sinf
#define M_COS __cosf
#define M_RSQRT rsqrtf
#define M_DIV __fdiv_rn   /* IEEE, as fnn_cuda_binary: the same op must not differ by path */
#define FNN_MAP_FN __device__ __forceinline__
#include "ops/elementwise_ops.h"

/* ---- one expression per code ---- */
template <int OP> struct Expr;
#define DEV(name, EXPR)                                                                          \
    template <> struct Expr<FNN_MAP_##name> {                                                    \
        static __device__ __forceinline__ float f(float a, float b, float c, float k0, float k1) { \
            (void)a; (void)b; (void)c; (void)k0; (void)k1;                                       \
            return (EXPR);                                                                       \
        }                                                                                        \
    };
#define DEV_UNARY(name, FWD, GRAD) DEV(name##_f, FWD) DEV(name##_g, GRAD)
FNN_MAP_ROWS(DEV)
FNN_MAP_UNARY(DEV_UNARY)
#undef DEV
#undef DEV_UNARY

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

/* ==== the launchers: plain C++ with FNN_LAUNCH, so spec/gpu/emulate.sh runs them too ==== */
template <int OP>
static void launch(float *y, const float *const *x, int64_t n, const MapLayout &L, float k0, float k1) {
    unsigned blocks = fnn_cuda_blocks(n);
    if (L.ndim == 0) {
        FNN_LAUNCH(map_flat<OP>, 1, 1, y, x[0], x[1], x[2], 1, 0, 0, 0, k0, k1);
        return;
    }
    if (L.ndim == 1 && L.stride[0][0] <= 1 && L.stride[1][0] <= 1 && L.stride[2][0] <= 1) {
        FNN_LAUNCH(map_flat<OP>, blocks, FNN_CUDA_THREADS, y, x[0], x[1], x[2], n, L.stride[0][0],
                   L.stride[1][0], L.stride[2][0], k0, k1);
        return;
    }
    bool narrow = n < ((int64_t)1 << 30);
    for (int k = 0; k < 3; k++) {
        int64_t reach = 0;
        for (int d = 0; d < L.ndim; d++) reach += (L.shape[d] - 1) * L.stride[k][d];
        narrow = narrow && reach < ((int64_t)1 << 30);
    }
    /* the template's comma would split a macro argument: name the instance first */
    auto *narrow_kernel = map_strided<OP, int32_t>;
    auto *wide_kernel = map_strided<OP, int64_t>;
    if (narrow) FNN_LAUNCH(narrow_kernel, blocks, FNN_CUDA_THREADS, y, x[0], x[1], x[2], (int32_t)n, L, k0, k1);
    else FNN_LAUNCH(wide_kernel, blocks, FNN_CUDA_THREADS, y, x[0], x[1], x[2], n, L, k0, k1);
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
#define CASE(name, EXPR) case FNN_MAP_##name: launch<FNN_MAP_##name>(y, x, n, L, k0, k1); break;
#define CASE_UNARY(name, FWD, GRAD) CASE(name##_f, FWD) CASE(name##_g, GRAD)
        FNN_MAP_ROWS(CASE)
        FNN_MAP_UNARY(CASE_UNARY)
#undef CASE
#undef CASE_UNARY
    default: break;
    }
    FNN_CUDA_CHECK("map", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* the "map" row: add, sub, mul, div of two inputs through elementwise.cu's broadcast kernel (its IEEE
 * division matches the CPU bit for bit), every other formula through the template instance of its code */
static int map_row(int ordinal, const fnn_map_args *a) {
    const float *x[3] = {(const float *)a->x[0], (const float *)a->x[1], (const float *)a->x[2]};
    float *y = (float *)a->y;
    if (a->nin == 2) {
        const int64_t *as = a->stride, *bs = a->stride + FNN_MAX_DIMS;
        switch (a->code) {
        case FNN_MAP_add: return fnn_cuda_binary(ordinal, FNN_BIN_ADD, y, x[0], as, x[1], bs, a->ndim, a->shape);
        case FNN_MAP_sub: return fnn_cuda_binary(ordinal, FNN_BIN_SUB, y, x[0], as, x[1], bs, a->ndim, a->shape);
        case FNN_MAP_mul: return fnn_cuda_binary(ordinal, FNN_BIN_MUL, y, x[0], as, x[1], bs, a->ndim, a->shape);
        case FNN_MAP_div: return fnn_cuda_binary(ordinal, FNN_BIN_DIV, y, x[0], as, x[1], bs, a->ndim, a->shape);
        default: break;
        }
    }
    return fnn_cuda_map(ordinal, a->code, y, x, a->stride, a->ndim, a->shape, a->k0, a->k1);
}
extern "C" const fnn_map_row fnn_cuda_elementwise_rows[] = {{"map", map_row}, {NULL, NULL}};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
