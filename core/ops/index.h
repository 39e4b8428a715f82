/* index.h: the index family's backend contract (core/internal.h's fnn_row_table): its arguments and
 * row type, filled by core/ops/index.c (the CPU) and cuda/index.cu. The arguments are the tensors
 * themselves, read in place as views: the CPU rows read ids of either dtype through fnn_index_at
 * (which names a bad id, its range and the shape) and walk x's strides; the CUDA rows read int64 ids
 * on the device (a bad id gives nan or adds nothing, as no host read is made) and refuse float32
 * ones. The CUDA index walk itself (cuda/kernels.h's fnn_cuda_index) is shared with the embedding
 * rows; the data loader's take_rows runs index_select's row on a device. */
#ifndef FASTNN_OPS_INDEX_H
#define FASTNN_OPS_INDEX_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_idx_args {
    const char *op;             /* the registry name, for the messages */
    fnn_tensor *out;            /* made by the caller on the op's device, contiguous: the forward's result
                                 * (scatter_add: a copy of x that src is added into), or the backward's
                                 * dx of the indexed input's shape, not yet zeroed */
    const fnn_tensor *x;        /* forward: the input */
    const fnn_tensor *g;        /* backward: the output's gradient */
    const fnn_tensor *shape;    /* the indexed tensor (x, or a header with only the node's input shape):
                                 * the ids' range along dim, and the shape the messages name */
    const fnn_tensor *index;    /* the ids as given (index_select: 1-D or 0-D), or masked_fill's mask */
    const fnn_tensor *src;      /* scatter_add: the values added */
    const int64_t *mstride;     /* masked_fill: the mask's strides broadcast to x's shape */
    int dim;                    /* the dim the ids run along (0-based) */
    double value;               /* masked_fill: the value put where the mask is set */
} fnn_idx_args;
typedef int (*fnn_idx_fn)(int ordinal, const fnn_idx_args *a);
typedef struct fnn_idx_row {
    const char *op;             /* the registry name; NULL ends a table */
    fnn_idx_fn forward, backward;   /* backward NULL: the op's rule is made of other ops */
} fnn_idx_row;
/* the CPU rows: core/ops/index.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(index, fnn_idx_row)

#ifdef __cplusplus
}
#endif
#endif
