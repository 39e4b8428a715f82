/* reduction.c: STUB, being written. */
#include "../internal.h"

int fnn_sum(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "sum: not implemented yet"); }
int fnn_mean(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "mean: not implemented yet"); }
int fnn_prod(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "prod: not implemented yet"); }
int fnn_var(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim, int unbiased) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "var: not implemented yet"); }
int fnn_std(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim, int unbiased) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "std: not implemented yet"); }
int fnn_norm(fnn_tensor *out, const fnn_tensor *x, double p, int dim, int keepdim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "norm: not implemented yet"); }
int fnn_logsumexp(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "logsumexp: not implemented yet"); }
int fnn_max(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int dim, int keepdim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "max: not implemented yet"); }
int fnn_min(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int dim, int keepdim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "min: not implemented yet"); }
int fnn_argmax(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "argmax: not implemented yet"); }
int fnn_argmin(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "argmin: not implemented yet"); }
int fnn_softmax(fnn_tensor *out, const fnn_tensor *x, int dim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "softmax: not implemented yet"); }
int fnn_log_softmax(fnn_tensor *out, const fnn_tensor *x, int dim) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "log_softmax: not implemented yet"); }
const fnn_op_def *const fnn_ops_reduction[] = {NULL};
