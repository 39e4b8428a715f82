/* linalg.c: STUB, being written. */
#include "../internal.h"

int fnn_matmul(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "matmul: not implemented yet"); }
int fnn_bmm(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "bmm: not implemented yet"); }
int fnn_outer(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "outer: not implemented yet"); }
int fnn_linear(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "linear: not implemented yet"); }
const fnn_op_def *const fnn_ops_linalg[] = {NULL};
