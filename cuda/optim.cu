/* optim.cu: the GPU side of core/optim.c's fused updates: SGD (momentum,
 * dampening, nesterov, weight decay), Adam / AdamW (amsgrad included),
 * RMSprop, Adagrad, Adadelta, RAdam, Lion, and the decay / lerp helpers; one
 * pass over each parameter, in place on the param and its state tensors. The
 * core computes the step's constants on the host (bias corrections) and
 * passes them in k, so no value ever comes back from the device.
 *
 * k for FNN_OPT_SGD: lr, weight_decay, momentum, 1 - dampening, nesterov, first_step
 * k for FNN_OPT_ADAM / AMSGRAD: decay, l2, beta1, beta2, step_size, 1/sqrt(1 - beta2^t), eps
 * k for RMSPROP ADAGRAD ADADELTA RADAM LION: core/optim.c's opt_args: lr, a, b, eps, wd, mom, extra
 * k for DECAY (w *= k0) and LERP (w += k0 (g - w), w the state and g the target): k0
 *
 * The rules themselves are core/optim_rules.h, shared with core/optim.c.
 *
 * defines: fnn_cuda_optim */
#include "common.cuh"

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

/* the other rules, by code; k as core/optim.c's opt_args */
__global__ void rule_kernel(int op, int64_t n, float *w, const float *g, float *s0, float *s1, float *s2, float lr,
                            float a, float b, float eps, float wd, float mom, float extra) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        switch (op) {
        case FNN_OPT_RMSPROP: fnn_rule_rmsprop(i, w, g, s0, s1, s2, lr, a, eps, wd, mom); break;
        case FNN_OPT_ADAGRAD: fnn_rule_adagrad(i, w, g, s0, lr, eps, wd); break;
        case FNN_OPT_ADADELTA: fnn_rule_adadelta(i, w, g, s0, s1, lr, a, eps, wd); break;
        case FNN_OPT_RADAM: fnn_rule_radam(i, w, g, s0, s1, lr, a, b, eps, wd, extra != 0); break;
        case FNN_OPT_LION: fnn_rule_lion(i, w, g, s0, lr, a, b, extra); break;
        case FNN_OPT_DECAY: w[i] *= lr; break;
        default: w[i] += lr * (g[i] - w[i]); break;   /* FNN_OPT_LERP */
        }
    }
}

/* ==== the launcher: plain C++ with FNN_LAUNCH, so spec/gpu/emulate.sh runs it too ==== */
int fnn_cuda_optim(int ordinal, int op, int64_t n, float *w, const float *g, float *s0, float *s1, float *s2,
                   const float *k) {
    static const char *const names[] = {"sgd", "adam", "adam", "rmsprop", "adagrad", "adadelta", "radam", "lion",
                                        "decay", "lerp"};
    FNN_ASSERT(op >= FNN_OPT_SGD && op <= FNN_OPT_LERP && n >= 0);
    const char *name = names[op];
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(name, ordinal));
    unsigned blocks = fnn_cuda_blocks(n);
    if (op == FNN_OPT_SGD)
        FNN_LAUNCH(sgd_kernel, blocks, FNN_CUDA_THREADS, n, w, g, s0, k[0], k[1], k[2], k[3], k[4] != 0, k[5] != 0);
    else if (op == FNN_OPT_ADAM || op == FNN_OPT_AMSGRAD)
        FNN_LAUNCH(adam_kernel, blocks, FNN_CUDA_THREADS, n, w, g, s0, s1, op == FNN_OPT_AMSGRAD ? s2 : NULL, k[0],
                   k[1], k[2], k[3], k[4], k[5], k[6]);
    else if (op == FNN_OPT_DECAY || op == FNN_OPT_LERP)   /* k holds one number */
        FNN_LAUNCH(rule_kernel, blocks, FNN_CUDA_THREADS, op, n, w, g, s0, s1, s2, k[0], 0, 0, 0, 0, 0, 0);
    else
        FNN_LAUNCH(rule_kernel, blocks, FNN_CUDA_THREADS, op, n, w, g, s0, s1, s2, k[0], k[1], k[2], k[3], k[4], k[5],
                   k[6]);
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
