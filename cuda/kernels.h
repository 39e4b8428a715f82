/* kernels.h: the CUDA backend's shared kernels: plain functions of cuda/ that rows of several
 * families call (cuBLAS's gemm for linalg, conv, rnn and attention; the broadcast binary ops for the
 * map row and the bias adds; the line reductions for conv's bias gradient; the int64 kernels for
 * int64.cu's rows) and that the backend table points at for the device mechanics it keeps
 * (strided_copy, random). Declared once here, for cuda/common.cuh and the host emulation
 * (spec/gpu/emulated.h), which compiles the same launchers, or a stand-in where the real one is a
 * CUDA library (spec/gpu/emulated_backend.cpp: a naive loop for cuBLAS's gemm). No CUDA types here. */
#ifndef FASTNN_CUDA_KERNELS_H
#define FASTNN_CUDA_KERNELS_H
#include "internal.h"

/* elementwise.cu's binary ops */
enum { FNN_BIN_ADD, FNN_BIN_SUB, FNN_BIN_MUL, FNN_BIN_DIV };
int fnn_cuda_binary(int ordinal, int op, float *y, const float *a, const int64_t *astride, const float *b,
                    const int64_t *bstride, int ndim, const int64_t *shape);
/* linalg.cu: row-major batched C = alpha op(A) op(B) + beta C through cuBLAS */
int fnn_cuda_gemm(int ordinal, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                  int lda, int64_t stride_a, const float *b, int ldb, int64_t stride_b, float beta, float *c,
                  int ldc, int64_t stride_c, int batch);
/* the same product with bfloat16 operands and float32 sums (cublasGemmStridedBatchedEx, CUDA_R_16BF in,
 * CUBLAS_COMPUTE_32F; A and B rounded into device copies first, core/bf16.h's rounding); the emulation
 * rounds the operands in its loop */
int fnn_cuda_gemm_bf16(int ordinal, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                       int lda, int64_t stride_a, const float *b, int ldb, int64_t stride_b, float beta, float *c,
                       int ldc, int64_t stride_c, int batch);
/* the GEMM a family (FNN_PREC_MATMUL, _CONV, _RNN) calls: fnn_cuda_gemm_bf16 where its float32 precision
 * is bf16 (fnn_set_float32_precision, or inside fnn.autocast), else fnn_cuda_gemm: the CPU's
 * fnn_gemm_prec on the GPU */
int fnn_cuda_gemm_prec(int family, int ordinal, int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, int64_t stride_a, const float *b, int ldb, int64_t stride_b,
                       float beta, float *c, int ldc, int64_t stride_c, int batch);
/* map.cu: y = formula op (FNN_MAP_*) of x[0..2] over shape, input k's strides at stride[k * FNN_MAX_DIMS + d]
 * (0 where broadcast), y contiguous: the map row's template instances (index.cu's masked_fill uses where) */
int fnn_cuda_map(int ordinal, int op, float *y, const float *const *x, const int64_t *stride, int ndim,
                 const int64_t *shape, float k0, float k1);
int fnn_cuda_strided_copy(int ordinal, void *dst, const void *src, int esize, int ndim, const int64_t *shape,
                          const int64_t *stride);
/* reduction.cu: the line engine under the reduction rows, by FNN_RED_* code, over contiguous x [O, R, I]
 * -> y [O, I] (idx: 1-based positions, max/min only, may be NULL); softmax ops give y [O, R, I] */
int fnn_cuda_reduce(int ordinal, int op, float *y, int64_t *idx, const float *x, int64_t O, int64_t R, int64_t I,
                    double k0, double k1);
int fnn_cuda_reduce_grad(int ordinal, int op, float *dx, const float *g, const float *x, const float *y,
                         const int64_t *idx, int64_t O, int64_t R, int64_t I, double k0, double k1);
int fnn_cuda_random(int ordinal, int op, float *y, int64_t n, uint64_t seed, uint64_t offset, double k0, double k1);
/* index.cu: the index walk of the index and embedding rows (and so of the loader's take_rows, through
 * index_select's row): over every position p of a.shape (row-major), q = p with q[dim] = id - 1, where
 * id = ids[p] (ids contiguous in a.shape) or ids[p[dim]] (a.select: one id per slice, index_select);
 * FNN_IDX_GATHER  y[p . ystride] = x[q . xstride], elements of esize bytes (4 or 8); an id outside
 *                 1..a.size gives nan (int64: 0), as there is no host read to raise;
 * FNN_IDX_SCATTER x[q . xstride] += y[p . ystride], float32 through atomicAdd (the order of the adds,
 *                 so the bits, may differ run to run); ids outside 1..a.size or equal to a.skip add nothing */
enum { FNN_IDX_GATHER, FNN_IDX_SCATTER };
/* the walk's geometry: skip a 1-based id that adds nothing (0: none) */
typedef struct {
    int ndim, dim, select;
    int64_t size, skip;
    int64_t shape[FNN_MAX_DIMS], xstride[FNN_MAX_DIMS], ystride[FNN_MAX_DIMS];
} fnn_index_args;
int fnn_cuda_index(int ordinal, int op, void *x, void *y, const int64_t *ids, int esize, const fnn_index_args *a);
/* ---- the int64 family's kernels, which cuda/int64.cu's rows run ---- */
/* cast.cu: y[n] (dtype to) = x[n] (dtype from: float32, bfloat16, int64), contiguous; a float that is
 * not a whole int64 becomes INT64_MIN (no host read to raise) */
int fnn_cuda_cast(int ordinal, int to, int from, void *y, const void *x, int64_t n);
/* int64.cu: y = a op b (FNN_INT_*) over shape, a/b strides 0 where broadcast, y contiguous */
int fnn_cuda_int_binary(int ordinal, int op, void *y, const void *a, int a_i64, const int64_t *as, const void *b,
                        int b_i64, const int64_t *bs, int ndim, const int64_t *shape);
/* int64_reduce.cu: int64 FNN_RED_SUM (wrapping) / MAX / MIN over contiguous x [O, R, I] -> y [O, I]; idx
 * (MAX/MIN, may be NULL) the 1-based position of the first extreme */
int fnn_cuda_int_reduce(int ordinal, int op, int64_t *y, int64_t *idx, const int64_t *x, int64_t O, int64_t R,
                        int64_t I);

#endif
