/* linalg.h: the linalg family's backend contract (core/internal.h's fnn_row_table): its arguments
 * and row type, filled by core/ops/linalg.c (the CPU, through blas.c: oneDNN or OpenBLAS) and
 * cuda/linalg.cu (cuBLAS, reached through the backend's `gemm`, which the host emulation replaces).
 * The arguments describe one batched GEMM in BLAS terms: linalg.c's engine views every operand in
 * place through its strides (a transpose is a flag, not a copy; only operands BLAS cannot read are
 * copied), folds the batch dims where it can and calls the row once per remaining GEMM, so a row
 * sees only row-major matrices with leading dimensions. */
#ifndef FASTNN_OPS_LINALG_H
#define FASTNN_OPS_LINALG_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_mm_args {
    const char *op;             /* the registry name, for the messages */
    /* first, when zero is set: zero[0..zero_n) = 0 (C's whole tensor: a sum over a broadcast batch,
     * or an empty inner dim) */
    float *zero;
    int64_t zero_n;
    /* then, for i < batch (0: no product), row-major C[i] = op(A[i]) op(B[i]) + beta C[i], where
     * X[i] = x + i sx; op(A) = A^T when ta (A stored [k, m]), op(B) = B^T when tb; all sizes and
     * leading dims fit an int (the engine checks) */
    int ta, tb;
    int64_t m, n, k;
    const float *a;
    int64_t lda, sa;
    const float *b;
    int64_t ldb, sb;
    float beta;                 /* 0 or 1 (accumulate into C) */
    float *c;
    int64_t ldc, sc;            /* sc 0 with batch > 1: every product summed into one C */
    int64_t batch;
    /* linear's forward: bias [n] at stride bias_stride added to every row of C (NULL: none; batch 1,
     * beta 0) */
    const float *bias;
    int64_t bias_stride;
    /* linear's activation (FNN_ACT_NONE, _RELU, _GELU; internal.h), 0 in every other call. Forward: C
     * (dense, ldc = n) is the pre-activation z = X W^T + b, and y = act(z) goes to y (dense [m, n]);
     * y == c when z is not kept (relu, whose backward reads y, or no gradient wanted): computed in place.
     * Backward (with dz): dz = g * act'(saved) and, when db is set, db = the column sums of dz */
    int act;
    float *y;
    const float *saved;         /* backward: what act' reads, dense [m, n]: y for relu (y > 0 exactly where
                                 * z > 0), z for gelu */
    fnn_tensor *dz;             /* backward: made by the engine, dense [m, n] on g's device; NULL: no activation */
    /* linear's forward with a bfloat16 output (NULL: none): the row's float32 result (y with an activation,
     * else C; dense, ldc = n) rounded into yh [m, n] (to nearest even, bf16.h). matmul's, bmm's and outer's:
     * a call of its own after the products (batch 0, m 1, n the output's size, C their float32 scratch).
     * Only the CPU's row reads it: the entries take bfloat16 operands on the CPU only (cuda/linalg.cu's rows
     * take float32) */
    uint16_t *yh;
    /* operands known to hold bfloat16 values (bit 0: a, bit 1: b; a widened bf16 operand): the CPU's
     * bf16-precision GEMM uses them as they are without scanning them (a hint: 0 is always right) */
    unsigned exact;
    /* linear's backward, when db is set: db (made by the row, [n]) = the column sums of G [m, n]
     * (g the output's gradient, G its rows at g_s0 / g_s1 as the engine folded them), or of dz when
     * dz is set (the one pass over G that makes dz adds them up) */
    fnn_tensor *db;
    const fnn_tensor *g;
    const float *gp;
    int64_t g_s0, g_s1;
} fnn_mm_args;
typedef int (*fnn_mm_fn)(int ordinal, const fnn_mm_args *a);
typedef struct fnn_mm_row {
    const char *op;             /* the registry name; NULL ends a table */
    fnn_mm_fn forward;          /* the products of the op's forward */
    fnn_mm_fn backward;         /* the products of its gradients (and linear's dz and db) */
} fnn_mm_row;
/* the CPU rows: core/ops/linalg.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(linalg, fnn_mm_row)

#ifdef __cplusplus
}
#endif
#endif
