/* index.c: STUB, being written. */
#include "../internal.h"

int fnn_index_select(fnn_tensor *out, const fnn_tensor *x, int dim, const fnn_tensor *index) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "index_select: not implemented yet"); }
int fnn_gather(fnn_tensor *out, const fnn_tensor *x, int dim, const fnn_tensor *index) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "gather: not implemented yet"); }
int fnn_scatter_add(fnn_tensor *out, const fnn_tensor *x, int dim, const fnn_tensor *index, const fnn_tensor *src) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "scatter_add: not implemented yet"); }
int fnn_masked_fill(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *mask, double value) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "masked_fill: not implemented yet"); }
const fnn_op_def *const fnn_ops_index[] = {NULL};
