/* reduction.h: the reduction family's backend contract (core/internal.h's fnn_row_table): its
 * arguments and row type, filled by core/ops/reduction.c (the CPU) and cuda/reduction.cu.
 * The input is seen as [O, R, I] with R the dim the op runs along. A row with `views` set reads the
 * forward's x in place through its view (xv, dim): the CPU's sum ... log_softmax, so a transposed
 * input is not copied; the others (CUDA, the CPU's cumsum) get x contiguous. Every backward gets its
 * inputs contiguous. */
#ifndef FASTNN_OPS_REDUCTION_H
#define FASTNN_OPS_REDUCTION_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_red_args {
    int op;                 /* FNN_RED_*: the CUDA rows' shared line engine; callers leave it 0 */
    float *out;             /* forward: y [O, I], or [O, R, I] for ops that keep the shape; backward: dx [O, R, I] */
    int64_t *idx;           /* forward of max/min: 1-based positions [O, I], or NULL */
    const float *x;         /* the input, contiguous [O, R, I] (forward: rows without views), or NULL when the
                             * rule does not read it */
    const float *g;         /* backward: the output's gradient (of y's shape) */
    const float *y;         /* backward: the forward's output, or NULL */
    const int64_t *sel;     /* backward of max/min along a dim: the forward's positions, else NULL */
    int64_t O, R, I;        /* 0 in the forward of a row with views (it reads xv, dim) */
    double k0, k1;          /* the op's numbers: mean's 1/R, var's ddof and std flag, norm's p */
    const fnn_tensor *xv;   /* forward: x as given (any strides), for rows with views; NULL in backward */
    int dim;                /* forward: the dim reduced (0-based), -1: all of x */
} fnn_red_args;
typedef int (*fnn_red_fn)(int ordinal, const fnn_red_args *a);
typedef struct fnn_red_row {
    const char *op;         /* the registry name; NULL ends a table */
    fnn_red_fn forward, backward;   /* backward NULL: not differentiable */
    int views;              /* 1: forward reads xv in place (no copy made); 0: forward takes x contiguous */
} fnn_red_row;
/* the CPU rows: core/ops/reduction.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(reduction, fnn_red_row)

#ifdef __cplusplus
}
#endif
#endif
