/* optim.c: STUB, being written. */
#include "internal.h"

int fnn_optim_sgd(fnn_node *p, fnn_tensor *momentum_buf, double lr, double momentum, double dampening, double weight_decay, int nesterov, int first_step) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "optim_sgd: not implemented yet"); }
int fnn_optim_adam(fnn_node *p, fnn_tensor *m, fnn_tensor *v, double lr, double beta1, double beta2, double eps, double weight_decay, int decoupled, int64_t step) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "optim_adam: not implemented yet"); }
int fnn_grad_all_finite(fnn_node *p) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "grad_all_finite: not implemented yet"); }
double fnn_grad_sq_norm(fnn_node *p) { (void)0; return 0; }
int fnn_grad_scale(fnn_node *p, double s) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "grad_scale: not implemented yet"); }
