/* shape.c: STUB, being written. */
#include "../internal.h"

int fnn_reshape(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "reshape: not implemented yet"); }
int fnn_view(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "view: not implemented yet"); }
int fnn_transpose(fnn_tensor *out, const fnn_tensor *x, int d1, int d2) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "transpose: not implemented yet"); }
int fnn_permute(fnn_tensor *out, const fnn_tensor *x, int ndim, const int *dims) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "permute: not implemented yet"); }
int fnn_expand(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "expand: not implemented yet"); }
int fnn_narrow(fnn_tensor *out, const fnn_tensor *x, int dim, int64_t start, int64_t length) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "narrow: not implemented yet"); }
int fnn_select(fnn_tensor *out, const fnn_tensor *x, int dim, int64_t index) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "select: not implemented yet"); }
int fnn_squeeze(fnn_tensor *out, const fnn_tensor *x, int dim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "squeeze: not implemented yet"); }
int fnn_unsqueeze(fnn_tensor *out, const fnn_tensor *x, int dim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "unsqueeze: not implemented yet"); }
int fnn_flatten(fnn_tensor *out, const fnn_tensor *x, int start_dim, int end_dim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "flatten: not implemented yet"); }
int fnn_contiguous(fnn_tensor *out, const fnn_tensor *x) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "contiguous: not implemented yet"); }
int fnn_cat(fnn_tensor *out, int n, const fnn_tensor *const *xs, int dim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "cat: not implemented yet"); }
int fnn_stack(fnn_tensor *out, int n, const fnn_tensor *const *xs, int dim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "stack: not implemented yet"); }
int fnn_repeat(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *repeats) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "repeat: not implemented yet"); }
int fnn_pad(fnn_tensor *out, const fnn_tensor *x, int npairs, const int64_t *pads, double value) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "pad: not implemented yet"); }
int fnn_tril(fnn_tensor *out, const fnn_tensor *x, int64_t k) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "tril: not implemented yet"); }
int fnn_triu(fnn_tensor *out, const fnn_tensor *x, int64_t k) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "triu: not implemented yet"); }
const fnn_op_def *const fnn_ops_shape[] = {NULL};
