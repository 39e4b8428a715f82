/* optim.cu: the GPU side of core/optim.c's fused updates: SGD (momentum,
 * dampening, nesterov, weight decay), Adam / AdamW (amsgrad included),
 * RMSprop, Adagrad, Adadelta, RAdam, Lion, and the decay / lerp helpers; one
 * pass over each parameter, in place on the param and its state tensors. The
 * core computes the step's constants on the host (bias corrections) and
 * passes them in k, so no value ever comes back from the device.
 *
 * The rows and their arguments are core/optim.h's contract (the constants in fnn_optim_args, named);
 * the rules themselves are core/optim_rules.h, shared with core/optim.c.
 *
 * defines: fnn_cuda_optim_rows */
#include "common.cuh"
#include "optim.h"

#define FNN_RULE __device__ __forceinline__
#include "optim_rules.h"   /* each rule's element update, shared with core/optim.c */

__global__ void sgd_kernel(int64_t n, float *w, const float *g, float *buf, float lr, float wd, float mom, float damp,
                           int nesterov, int first_step) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        fnn_rule_sgd(i, w, g, buf, lr, wd, mom, damp, nesterov, first_step);
}

__global__ void adam_kernel(int64_t n, float *w, const float *g, float *m, float *v, float *vmax, float decay,
                            float l2, float b1, float b2, float step_size, float inv_bc2_sqrt, float eps) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        fnn_rule_adam(i, w, g, m, v, vmax, decay, l2, b1, b2, step_size, inv_bc2_sqrt, eps);
}

/* the other rules, by code (this file's own numbering) */
enum { RULE_RMSPROP, RULE_ADAGRAD, RULE_ADADELTA, RULE_RADAM, RULE_LION, RULE_DECAY, RULE_LERP };
__global__ void rule_kernel(int op, int64_t n, float *w, const float *g, float *s0, float *s1, float *s2,
                            fnn_optim_args k) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        switch (op) {
        case RULE_RMSPROP: fnn_rule_rmsprop(i, w, g, s0, s1, s2, k.lr, k.alpha, k.eps, k.wd, k.momentum); break;
        case RULE_ADAGRAD: fnn_rule_adagrad(i, w, g, s0, k.lr, k.eps, k.wd); break;
        case RULE_ADADELTA: fnn_rule_adadelta(i, w, g, s0, s1, k.lr, k.alpha, k.eps, k.wd); break;
        case RULE_RADAM: fnn_rule_radam(i, w, g, s0, s1, k.lr, k.beta1, k.beta2, k.eps, k.wd, k.rectified); break;
        case RULE_LION: fnn_rule_lion(i, w, g, s0, k.lr, k.beta1, k.beta2, k.decay); break;
        case RULE_DECAY: w[i] *= k.decay; break;
        default: w[i] += k.weight * (g[i] - w[i]); break;   /* RULE_LERP */
        }
    }
}

/* ==== the rows (core/optim.h): plain C++ with FNN_LAUNCH, so spec/gpu/emulate.sh runs them too ==== */
static int sgd_row(int ordinal, const fnn_optim_args *a) {
    if (a->n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("sgd", ordinal));
    FNN_LAUNCH(sgd_kernel, fnn_cuda_blocks(a->n), FNN_CUDA_THREADS, a->n, (float *)a->w, (const float *)a->g,
               (float *)a->s[0], a->lr, a->wd, a->momentum, a->damp, a->nesterov, a->first_step);
    FNN_CUDA_CHECK("sgd", cudaGetLastError());
    return FNN_STATUS_OK;
}
static int adam_row(int ordinal, const fnn_optim_args *a) {
    if (a->n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("adam", ordinal));
    FNN_LAUNCH(adam_kernel, fnn_cuda_blocks(a->n), FNN_CUDA_THREADS, a->n, (float *)a->w, (const float *)a->g,
               (float *)a->s[0], (float *)a->s[1], (float *)a->s[2], a->decay, a->l2, a->beta1, a->beta2, a->step_size,
               a->inv_bc2_sqrt, a->eps);
    FNN_CUDA_CHECK("adam", cudaGetLastError());
    return FNN_STATUS_OK;
}
static int rule(int op, const char *name, int ordinal, const fnn_optim_args *a) {
    if (a->n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(name, ordinal));
    FNN_LAUNCH(rule_kernel, fnn_cuda_blocks(a->n), FNN_CUDA_THREADS, op, a->n, (float *)a->w, (const float *)a->g,
               (float *)a->s[0], (float *)a->s[1], (float *)a->s[2], *a);
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}
static int rmsprop_row(int ordinal, const fnn_optim_args *a) { return rule(RULE_RMSPROP, "rmsprop", ordinal, a); }
static int adagrad_row(int ordinal, const fnn_optim_args *a) { return rule(RULE_ADAGRAD, "adagrad", ordinal, a); }
static int adadelta_row(int ordinal, const fnn_optim_args *a) { return rule(RULE_ADADELTA, "adadelta", ordinal, a); }
static int radam_row(int ordinal, const fnn_optim_args *a) { return rule(RULE_RADAM, "radam", ordinal, a); }
static int lion_row(int ordinal, const fnn_optim_args *a) { return rule(RULE_LION, "lion", ordinal, a); }
static int decay_row(int ordinal, const fnn_optim_args *a) { return rule(RULE_DECAY, "decay", ordinal, a); }
static int lerp_row(int ordinal, const fnn_optim_args *a) { return rule(RULE_LERP, "lerp", ordinal, a); }

extern "C" const fnn_optim_row fnn_cuda_optim_rows[] = {   /* no step_many: a kernel per parameter */
    {"sgd", sgd_row, NULL}, {"adam", adam_row, NULL}, {"rmsprop", rmsprop_row, NULL}, {"adagrad", adagrad_row, NULL},
    {"adadelta", adadelta_row, NULL}, {"radam", radam_row, NULL}, {"lion", lion_row, NULL}, {"decay", decay_row, NULL},
    {"lerp", lerp_row, NULL}, {NULL, NULL, NULL},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
