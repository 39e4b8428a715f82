/* elementwise.cu: the GPU side of core/ops/elementwise.c: y = a op b for
 * add, sub, mul, div over a broadcast shape. core/ops/elementwise.c checks
 * the shapes, makes the contiguous output and the autograd node; this file
 * only runs the kernel (the backward rules reuse these same ops).
 *
 * defines: fnn_cuda_binary */
#include "common.cuh"

/* ---- kernels ---- */
template <int OP> __device__ __forceinline__ float binop(float a, float b) {
    if constexpr (OP == FNN_BIN_ADD) return a + b;
    else if constexpr (OP == FNN_BIN_SUB) return a - b;
    else if constexpr (OP == FNN_BIN_MUL) return a * b;
    else return __fdiv_rn(a, b);   /* IEEE division despite --use_fast_math, so it matches the CPU bit for bit */
}

/* y[n] = a[n] op b[n]: all three contiguous, same shape */
template <int OP> __global__ void binary_contiguous(float *y, const float *a, const float *b, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = binop<OP>(a[i], b[i]);
}

/* the broadcast shape and each input's strides through it (0 where broadcast) */
struct Layout {
    int ndim;
    int64_t shape[FNN_MAX_DIMS], astride[FNN_MAX_DIMS], bstride[FNN_MAX_DIMS];
};

/* y[shape] (contiguous) = a[shape; astride] op b[shape; bstride]. I is the index
 * type: 32-bit when everything fits, since 64-bit division is slow on a GPU. */
template <int OP, typename I> __global__ void binary_strided(float *y, const float *a, const float *b, I n, Layout L) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I rem = i, ao = 0, bo = 0;
        for (int d = L.ndim - 1; d >= 0; d--) {
            I size = (I)L.shape[d];
            I idx = rem % size;
            rem /= size;
            ao += idx * (I)L.astride[d];
            bo += idx * (I)L.bstride[d];
        }
        y[i] = binop<OP>(a[ao], b[bo]);
    }
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
/* Drop size-1 dims and merge neighbours that both inputs walk as one run, so
 * [64,128] + [64,128] becomes one dim (the contiguous case) and [64,128] + [128]
 * two; fewer dims means fewer divisions per element. */
static void coalesce(Layout &L) {
    int n = 0;
    for (int d = 0; d < L.ndim; d++) {
        if (L.shape[d] == 1) continue;
        if (n > 0 && L.astride[n - 1] == L.astride[d] * L.shape[d] && L.bstride[n - 1] == L.bstride[d] * L.shape[d]) {
            L.shape[n - 1] *= L.shape[d];   /* dim d continues dim n-1 in both inputs */
            L.astride[n - 1] = L.astride[d];
            L.bstride[n - 1] = L.bstride[d];
            continue;
        }
        L.shape[n] = L.shape[d];
        L.astride[n] = L.astride[d];
        L.bstride[n] = L.bstride[d];
        n++;
    }
    L.ndim = n;
}

template <int OP> static void launch(float *y, const float *a, const float *b, int64_t n, const Layout &L) {
    unsigned blocks = fnn_cuda_blocks(n);
    if (L.ndim == 0 || (L.ndim == 1 && L.astride[0] == 1 && L.bstride[0] == 1)) {
        FNN_LAUNCH(binary_contiguous<OP>, blocks, FNN_CUDA_THREADS, y, a, b, n);
        return;
    }
    /* the largest offset either input reaches, to choose the index width; the margin
     * keeps i + (grid-stride step, at most 2^28) from overflowing 32 bits */
    int64_t reach_a = 0, reach_b = 0;
    for (int d = 0; d < L.ndim; d++) {
        reach_a += (L.shape[d] - 1) * L.astride[d];
        reach_b += (L.shape[d] - 1) * L.bstride[d];
    }
    const int64_t limit = (int64_t)1 << 30;
    if (n < limit && reach_a < limit && reach_b < limit)
        FNN_LAUNCH((binary_strided<OP, int32_t>), blocks, FNN_CUDA_THREADS, y, a, b, (int32_t)n, L);
    else
        FNN_LAUNCH((binary_strided<OP, int64_t>), blocks, FNN_CUDA_THREADS, y, a, b, n, L);
}

int fnn_cuda_binary(int ordinal, int op, float *y, const float *a, const int64_t *astride, const float *b,
                    const int64_t *bstride, int ndim, const int64_t *shape) {
    static const char *const names[] = {"add", "sub", "mul", "div"};
    FNN_ASSERT(op >= FNN_BIN_ADD && op <= FNN_BIN_DIV && ndim >= 0 && ndim <= FNN_MAX_DIMS);
    const char *name = names[op];
    Layout L;
    L.ndim = ndim;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        L.shape[d] = shape[d];
        L.astride[d] = astride[d];
        L.bstride[d] = bstride[d];
        n *= shape[d];
    }
    if (n == 0) return FNN_STATUS_OK;
    coalesce(L);
    FNN_TRY(fnn_cuda_use_device(name, ordinal));
    switch (op) {
    case FNN_BIN_ADD: launch<FNN_BIN_ADD>(y, a, b, n, L); break;
    case FNN_BIN_SUB: launch<FNN_BIN_SUB>(y, a, b, n, L); break;
    case FNN_BIN_MUL: launch<FNN_BIN_MUL>(y, a, b, n, L); break;
    default: launch<FNN_BIN_DIV>(y, a, b, n, L); break;
    }
    /* launch errors only; a fault inside the kernel surfaces at the next synchronising call */
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
