/* int64.cu: the int64 family's rows (core/ops/int64.h) on the GPU. Its own kernel is the binary one:
 * add, sub, mul of two int64 tensors (wrapping, as the CPU's unsigned arithmetic), and comparisons of
 * int64 with int64 (exact) or with float32 (in double), giving float32 0/1; broadcast through strides
 * (0 where broadcast), a thread per element of the contiguous result. The sum / max / min rows run
 * int64_reduce.cu's launcher, the cast row cast.cu's.
 *
 * defines: fnn_cuda_int64_rows */
#include "common.cuh"
#include "ops/int64.h"

struct IntLayout {
    int ndim;
    int64_t shape[FNN_MAX_DIMS], as[FNN_MAX_DIMS], bs[FNN_MAX_DIMS];
};

__device__ __forceinline__ float int_cmp(int op, bool lt, bool eq, bool gt) {
    const bool r = op == FNN_INT_EQ ? eq : op == FNN_INT_NE ? !eq : op == FNN_INT_LT ? lt : op == FNN_INT_LE ? lt || eq
                 : op == FNN_INT_GT ? gt : gt || eq;
    return r ? 1.0f : 0.0f;
}

__global__ void int_binary_kernel(int op, void *y, const void *a, int a_i64, const void *b, int b_i64, int64_t n,
                                  IntLayout L) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = i, ao = 0, bo = 0;
        for (int d = L.ndim - 1; d >= 0; d--) {
            const int64_t c = rem % L.shape[d];
            rem /= L.shape[d];
            ao += c * L.as[d];
            bo += c * L.bs[d];
        }
        if (op < FNN_INT_EQ) {   /* both int64 */
            const uint64_t x = (uint64_t)((const int64_t *)a)[ao], z = (uint64_t)((const int64_t *)b)[bo];
            ((int64_t *)y)[i] = (int64_t)(op == FNN_INT_ADD ? x + z : op == FNN_INT_SUB ? x - z : x * z);
        } else if (a_i64 && b_i64) {
            const int64_t x = ((const int64_t *)a)[ao], z = ((const int64_t *)b)[bo];
            ((float *)y)[i] = int_cmp(op, x < z, x == z, x > z);
        } else {
            const double x = a_i64 ? (double)((const int64_t *)a)[ao] : (double)((const float *)a)[ao];
            const double z = b_i64 ? (double)((const int64_t *)b)[bo] : (double)((const float *)b)[bo];
            ((float *)y)[i] = int_cmp(op, x < z, x == z, x > z);
        }
    }
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
int fnn_cuda_int_binary(int ordinal, int op, void *y, const void *a, int a_i64, const int64_t *as, const void *b,
                        int b_i64, const int64_t *bs, int ndim, const int64_t *shape) {
    IntLayout L;
    L.ndim = ndim;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) { L.shape[d] = shape[d]; L.as[d] = as[d]; L.bs[d] = bs[d]; n *= shape[d]; }
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("int64", ordinal));
    FNN_LAUNCH(int_binary_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, op, y, a, a_i64, b, b_i64, n, L);
    FNN_CUDA_CHECK("int64", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== the rows (core/ops/int64.h) ==== */
static int binary_row(int ordinal, const fnn_int64_args *a) {
    return fnn_cuda_int_binary(ordinal, a->op, a->y, a->a, a->a_dtype == FNN_DTYPE_INT64, a->as, a->b,
                               a->b_dtype == FNN_DTYPE_INT64, a->bs, a->ndim, a->shape);
}
static int sum_row(int ordinal, const fnn_int64_args *a) {
    return fnn_cuda_int_reduce(ordinal, FNN_RED_SUM, (int64_t *)a->y, NULL, (const int64_t *)a->a, a->O, a->R, a->I);
}
static int max_row(int ordinal, const fnn_int64_args *a) {
    return fnn_cuda_int_reduce(ordinal, FNN_RED_MAX, (int64_t *)a->y, a->idx, (const int64_t *)a->a, a->O, a->R, a->I);
}
static int min_row(int ordinal, const fnn_int64_args *a) {
    return fnn_cuda_int_reduce(ordinal, FNN_RED_MIN, (int64_t *)a->y, a->idx, (const int64_t *)a->a, a->O, a->R, a->I);
}
static int cast_row(int ordinal, const fnn_int64_args *a) { return fnn_cuda_cast(ordinal, a->op, a->a_dtype, a->y, a->a, a->n); }

extern "C" const fnn_int64_row fnn_cuda_int64_rows[] = {
    {"binary", binary_row}, {"sum", sum_row}, {"max", max_row}, {"min", min_row}, {"cast", cast_row}, {NULL, NULL},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
