/* norm.h: the norm family's backend contract (core/internal.h's fnn_row_table): layer_norm,
 * batch_norm, group_norm and rms_norm, filled by core/ops/norm.c (the CPU) and cuda/norm.cu (which
 * wraps cuda/batch_norm.cu's launchers too). Every kernel reads x and g contiguous (the entry points
 * borrow them so, as the kernels always did: no strided CPU kernel here), seen as [N, C, S]:
 *   layer_norm, rms_norm: N rows of C = the normalized size, S = 1, groups = 1;
 *   group_norm:           N samples, C channels in `groups` groups, S the spatial product;
 *   batch_norm:           N images, C channels, S the spatial product, groups = 1. */
#ifndef FASTNN_OPS_NORM_H
#define FASTNN_OPS_NORM_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_nrm_args {
    float *y;                   /* forward: y [N, C, S]; backward: dx [N, C, S], or NULL when not wanted */
    float *stats;               /* written by the forward (NULL: not kept), read by the backward: mean, rstd
                                   [N, 2] (layer), [N, groups, 2] (group), [C, 2] (batch); rstd [N] (rms) */
    float *bmean, *bvar;        /* batch_norm training forward: batch mean, unbiased variance [C], or NULL */
    float *dw, *db;             /* backward: the weight's and bias's gradients (their sizes), or NULL */
    const float *x;             /* the input [N, C, S] */
    const float *g;             /* backward: y's gradient [N, C, S] */
    const float *w, *b;         /* the affine weight and bias (C elements, or NULL); the backward reads w */
    const float *rmean, *rvar;  /* batch_norm eval forward: the running stats [C] */
    int64_t N, C, S, groups;
    double eps;                 /* forward: added to the variance inside the sqrt */
    int training;               /* batch_norm: batch statistics (else the running ones) */
    int activation;             /* batch_norm: FNN_NORM_ACT_RELU: the forward writes max(y, 0) in the pass that
                                   writes y; the backward takes g only where y_out > 0 (relu's gradient, 0 at 0)
                                   inside its own sums and dx pass. FNN_NORM_ACT_NONE (0) elsewhere */
    const float *y_out;         /* batch_norm backward with activation: the forward's output [N, C, S], contiguous
                                   (its > 0 is the relu's mask); else NULL */
    const float *res;           /* layer_norm forward (add_layer_norm): a residual [N, C] added to x first, or NULL */
    float *sum;                 /* layer_norm forward with res: receives x + res [N, C], which the statistics and y
                                   are of (the row's own pass writes it; later reads of x read it) */
} fnn_nrm_args;
typedef int (*fnn_nrm_fn)(int ordinal, const fnn_nrm_args *a);
typedef struct fnn_nrm_row {
    const char *op;             /* the registry name; NULL ends a table */
    fnn_nrm_fn forward, backward;
} fnn_nrm_row;
/* the CPU rows: core/ops/norm.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(norm, fnn_nrm_row)
/* cuda/batch_norm.cu's rows, which cuda/norm.cu's table names */
int fnn_cuda_batch_norm_row(int ordinal, const fnn_nrm_args *a);
int fnn_cuda_batch_norm_grad_row(int ordinal, const fnn_nrm_args *a);

#ifdef __cplusplus
}
#endif
#endif
