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
 * defines: fnn_cuda_optim */
#include "common.cuh"

/* SGD, PyTorch semantics (see fnn_optim_sgd); buf NULL: no momentum */
__global__ void sgd_kernel(int64_t n, float *w, const float *g, float *buf, float lr, float wd, float mom, float damp,
                           int nesterov, int first_step) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float d = g[i] + wd * w[i];
        if (buf) {
            float b = first_step ? d : mom * buf[i] + damp * d;
            buf[i] = b;
            d = nesterov ? d + mom * b : b;
        }
        w[i] -= lr * d;
    }
}

/* Adam / AdamW (see fnn_optim_adam); vmax non-NULL: amsgrad */
__global__ void adam_kernel(int64_t n, float *w, const float *g, float *m, float *v, float *vmax, float decay,
                            float l2, float b1, float b2, float step_size, float inv_bc2_sqrt, float eps) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float wi = w[i] * decay;
        float gi = g[i] + l2 * wi;
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        if (vmax) {
            vi = vmax[i] > vi ? vmax[i] : vi;
            vmax[i] = vi;
        }
        w[i] = wi - step_size * mi / (sqrtf(vi) * inv_bc2_sqrt + eps);
    }
}

/* the rules of core/optim.c's *_span functions, element by element in the same order */
__global__ void rule_kernel(int op, int64_t n, float *w, const float *g, float *s0, float *s1, float *s2, float lr,
                            float a, float b, float eps, float wd, float mom, float extra) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        switch (op) {
        case FNN_OPT_RMSPROP: {   /* s0 square_avg, s1 grad_avg (centered), s2 momentum buffer */
            float gi = g[i] + wd * w[i];
            float si = a * s0[i] + (1.0f - a) * gi * gi;
            s0[i] = si;
            float avg;
            if (s1) {
                float gm = a * s1[i] + (1.0f - a) * gi;
                s1[i] = gm;
                avg = sqrtf(si - gm * gm) + eps;
            } else {
                avg = sqrtf(si) + eps;
            }
            if (s2) {
                float bb = mom * s2[i] + gi / avg;
                s2[i] = bb;
                w[i] -= lr * bb;
            } else {
                w[i] -= lr * gi / avg;
            }
            break;
        }
        case FNN_OPT_ADAGRAD: {   /* s0 sum; lr is the decayed lr */
            float gi = g[i] + wd * w[i];
            float si = s0[i] + gi * gi;
            s0[i] = si;
            w[i] -= lr * gi / (sqrtf(si) + eps);
            break;
        }
        case FNN_OPT_ADADELTA: {   /* s0 square_avg, s1 acc_delta; a = rho */
            float gi = g[i] + wd * w[i];
            float si = a * s0[i] + (1.0f - a) * gi * gi;
            s0[i] = si;
            float delta = sqrtf(s1[i] + eps) / sqrtf(si + eps) * gi;
            s1[i] = a * s1[i] + (1.0f - a) * delta * delta;
            w[i] -= lr * delta;
            break;
        }
        case FNN_OPT_RADAM: {   /* s0 m, s1 v; lr the whole factor on m, extra = 1 when rectified */
            float gi = g[i] + wd * w[i];
            float mi = a * s0[i] + (1.0f - a) * gi;
            float vi = b * s1[i] + (1.0f - b) * gi * gi;
            s0[i] = mi;
            s1[i] = vi;
            w[i] -= extra != 0 ? lr * mi / (sqrtf(vi) + eps) : lr * mi;
            break;
        }
        case FNN_OPT_LION: {   /* s0 m; extra = 1 - lr wd */
            float c = a * s0[i] + (1.0f - a) * g[i];
            float sign = c > 0 ? 1.0f : (c < 0 ? -1.0f : 0.0f);
            w[i] = w[i] * extra - lr * sign;
            s0[i] = b * s0[i] + (1.0f - b) * g[i];
            break;
        }
        case FNN_OPT_DECAY: w[i] *= lr; break;
        default: w[i] += lr * (g[i] - w[i]); break;   /* FNN_OPT_LERP */
        }
    }
}

/* ==== host side: the launchers. spec/gpu/emulate.sh compiles everything above this line for the host ==== */
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
        sgd_kernel<<<blocks, FNN_CUDA_THREADS>>>(n, w, g, s0, k[0], k[1], k[2], k[3], k[4] != 0, k[5] != 0);
    else if (op == FNN_OPT_ADAM || op == FNN_OPT_AMSGRAD)
        adam_kernel<<<blocks, FNN_CUDA_THREADS>>>(n, w, g, s0, s1, op == FNN_OPT_AMSGRAD ? s2 : NULL, k[0], k[1], k[2],
                                                  k[3], k[4], k[5], k[6]);
    else if (op == FNN_OPT_DECAY || op == FNN_OPT_LERP)   /* k holds one number */
        rule_kernel<<<blocks, FNN_CUDA_THREADS>>>(op, n, w, g, s0, s1, s2, k[0], 0, 0, 0, 0, 0, 0);
    else
        rule_kernel<<<blocks, FNN_CUDA_THREADS>>>(op, n, w, g, s0, s1, s2, k[0], k[1], k[2], k[3], k[4], k[5], k[6]);
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}
