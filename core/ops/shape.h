/* shape.h: the shape family's backend contract (core/internal.h's fnn_row_table): its arguments and
 * row type, filled by core/ops/shape.c (the CPU) and cuda/shape.cu. The family's ops copy (the
 * views, which copy nothing, are the "view" family, core/ops/view.c). Inputs are read in place
 * through their strides (cat, stack, contiguous, repeat, pad, pad_mode: no copy first); tril/triu
 * and the backward rows read a contiguous x / g (the entry points make one, as before). */
#ifndef FASTNN_OPS_SHAPE_H
#define FASTNN_OPS_SHAPE_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_shape_args {
    void *y;                   /* forward: the output, contiguous (cat/stack: one input's slab of it, at
                                  ystride); backward: dx [xshape] contiguous, every element written */
    const void *x;             /* forward: the input, read at xstride (tril/triu: contiguous);
                                  backward: the output's gradient g [yshape], contiguous */
    const int64_t *ystride;    /* cat, stack: the slab's strides */
    const int64_t *xstride;    /* forward: x's strides (repeat: 0 along the new leading dims);
                                  repeat's backward: dx's contiguous strides, 0 along the leading dims */
    const int64_t *yshape;     /* the output's shape (cat/stack: the input's, the slab's) */
    const int64_t *xshape;     /* pad, pad_mode, repeat: the input's shape (repeat: with yshape's ndim,
                                  1 along the new leading dims) */
    const int64_t *before;     /* pad, pad_mode: the width added in front of each dim (pad: < 0 crops) */
    int ndim;                  /* dims of yshape */
    int esize;                 /* bytes per element: 4 (float32) or 8 (int64); the backward rows: 4 */
    int mode;                  /* pad_mode: FNN_PAD_REFLECT, REPLICATE or CIRCULAR */
    double value;              /* pad: the fill (a whole number for an int64 x) */
    int64_t k;                 /* tril/triu: the diagonal bounding what is kept (x, y [.., rows, cols]) */
} fnn_shape_args;
/* forward: y of x (cat, stack, contiguous: y[p . ystride] = x[p . xstride]; repeat: y[p] = x[p mod
 * xshape]; pad: x shifted by before, value outside; pad_mode: x read about its edges; tril: x where
 * col - row <= k, triu: >= k, else 0). backward (repeat, pad_mode; the others' rules are other ops):
 * dx of g, the sum over the places that read each dx place, in g's row-major order */
typedef int (*fnn_shape_fn)(int ordinal, const fnn_shape_args *a);
typedef struct fnn_shape_row {
    const char *op;            /* the registry name; NULL ends a table */
    fnn_shape_fn forward, backward;
} fnn_shape_row;
/* the CPU rows: core/ops/shape.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(shape, fnn_shape_row)

#ifdef __cplusplus
}
#endif
#endif
