/* sort.h: the sort family's backend contract (core/internal.h's fnn_row_table): its arguments and
 * row type, filled by core/ops/sort.c (the CPU) and cuda/sort.cu. x is seen as lines [O, n, I]
 * along the sorted dim; the forward reads x as a view in place, through its shape and strides (the
 * CPU kernel walks them; the CUDA row copies a view to a contiguous scratch first), so a transposed
 * x costs the CPU no copy. Outputs, g and positions are contiguous. */
#ifndef FASTNN_OPS_SORT_H
#define FASTNN_OPS_SORT_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_sort_args {
    float *y;                /* forward: values [O, m, I]; backward: dx [O, n, I] (every element written) */
    int64_t *idx;            /* forward: the 1-based positions along the line [O, m, I] */
    const int64_t *sel;      /* backward: the forward's positions [O, m, I] */
    const float *x;          /* forward: x's first element, at shape / stride (a view, read in place) */
    const float *g;          /* backward: the values' gradient [O, m, I] */
    int ndim, d;             /* forward: x's dims, and d the one sorted along (-1: a 0-dim x, one line of one) */
    const int64_t *shape, *stride;   /* forward: x's */
    int64_t O, n, I, m;      /* lines [O, n, I], m of each kept (sort: m = n; topk: k) */
    int descending;          /* the wanted order: descending (topk's largest) or ascending */
} fnn_sort_args;
typedef int (*fnn_sort_fn)(int ordinal, const fnn_sort_args *a);
typedef struct fnn_sort_row {
    const char *op;          /* the registry name; NULL ends a table */
    fnn_sort_fn forward, backward;
} fnn_sort_row;
/* the CPU rows: core/ops/sort.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(sort, fnn_sort_row)

#ifdef __cplusplus
}
#endif
#endif
