/* optim_rules.h: each optimizer's update of one element, written once for core/optim.c's CPU
 * spans and cuda/optim.cu's kernels (the host emulation compiles the same). The includer defines
 * FNN_RULE, its function qualifiers, first. Element i of the parameter w is updated in place with
 * its gradient g and its state tensors (NULL where an option leaves one out); the caller computes
 * the step's constants (bias corrections, decayed learning rates) once per step. PyTorch's rules;
 * core/optim.c states each beside its entry point. */
#ifndef FASTNN_OPTIM_RULES_H
#define FASTNN_OPTIM_RULES_H

/* Every state that decays by a factor a step (momentum buffers, moments, running averages) flushes to
 * zero below the smallest normal float, where PyTorch keeps it subnormal. Where the gradient stops (a
 * dead ReLU unit, an embedding row no batch uses) such a state decays through the subnormals for 150
 * (factor 0.9) to 16,000 steps (0.999), each element a microcode assist on x86: 2,000 steps of an mlp
 * with dead units left 97% of its first layer's Adam m subnormal and Adam 3.7x slower; with every state
 * subnormal, 4M parameters took 48 ms a step of SGD momentum against 1.2, 233 of RMSprop against 5 (Emerald
 * Rapids, 2 threads). A subnormal state moves w by under lr 1e-38 (over eps for the adaptive rules),
 * below float32's resolution of any w but 0 */
#define FNN_FLUSH_SUBNORMAL(x) ((x) < 1.17549435e-38f && (x) > -1.17549435e-38f ? 0.0f : (x))

/* SGD: d = g + wd w; with a momentum buffer: buf = first_step ? d : mom buf + damp d (damp =
 * 1 - dampening), d = nesterov ? d + mom buf : buf; then w -= lr d */
FNN_RULE void fnn_rule_sgd(int64_t i, float *w, const float *g, float *buf, float lr, float wd, float mom,
                           float damp, int nesterov, int first_step) {
    float d = g[i] + wd * w[i];
    if (buf) {
        float b = FNN_FLUSH_SUBNORMAL(first_step ? d : mom * buf[i] + damp * d);
        buf[i] = b;
        d = nesterov ? d + mom * b : b;
    }
    w[i] -= lr * d;
}

/* Adam / AdamW: decay = 1 - lr wd (AdamW) or 1, l2 = wd (Adam) or 0; step_size = lr / bc1;
 * vmax non-NULL: amsgrad (the denominator uses the running max of v) */
FNN_RULE void fnn_rule_adam(int64_t i, float *w, const float *g, float *m, float *v, float *vmax, float decay,
                            float l2, float b1, float b2, float step_size, float inv_bc2_sqrt, float eps) {
    float wi = w[i] * decay;
    float gi = g[i] + l2 * wi;
    float mi = b1 * m[i] + (1.0f - b1) * gi;
    float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    mi = FNN_FLUSH_SUBNORMAL(mi);
    vi = FNN_FLUSH_SUBNORMAL(vi);
    m[i] = mi;
    v[i] = vi;
    if (vmax) {
        vi = vmax[i] > vi ? vmax[i] : vi;
        vmax[i] = vi;
    }
    w[i] = wi - step_size * mi / (sqrtf(vi) * inv_bc2_sqrt + eps);
}

/* RMSprop: sq square_avg, ga grad_avg (centered, or NULL), buf momentum buffer (or NULL) */
FNN_RULE void fnn_rule_rmsprop(int64_t i, float *w, const float *g, float *sq, float *ga, float *buf, float lr,
                               float alpha, float eps, float wd, float mom) {
    float gi = g[i] + wd * w[i];
    float si = FNN_FLUSH_SUBNORMAL(alpha * sq[i] + (1.0f - alpha) * gi * gi);
    sq[i] = si;
    float avg;
    if (ga) {
        float gm = FNN_FLUSH_SUBNORMAL(alpha * ga[i] + (1.0f - alpha) * gi);
        ga[i] = gm;
        avg = sqrtf(si - gm * gm) + eps;
    } else {
        avg = sqrtf(si) + eps;
    }
    if (buf) {
        float b = FNN_FLUSH_SUBNORMAL(mom * buf[i] + gi / avg);
        buf[i] = b;
        w[i] -= lr * b;
    } else {
        w[i] -= lr * gi / avg;
    }
}

/* Adagrad: sum of squares; clr the decayed learning rate */
FNN_RULE void fnn_rule_adagrad(int64_t i, float *w, const float *g, float *sum, float clr, float eps, float wd) {
    float gi = g[i] + wd * w[i];
    float si = sum[i] + gi * gi;
    sum[i] = si;
    w[i] -= clr * gi / (sqrtf(si) + eps);
}

/* Adadelta: sq square_avg, acc acc_delta */
FNN_RULE void fnn_rule_adadelta(int64_t i, float *w, const float *g, float *sq, float *acc, float lr, float rho,
                                float eps, float wd) {
    float gi = g[i] + wd * w[i];
    float si = FNN_FLUSH_SUBNORMAL(rho * sq[i] + (1.0f - rho) * gi * gi);
    sq[i] = si;
    float delta = sqrtf(acc[i] + eps) / sqrtf(si + eps) * gi;
    acc[i] = FNN_FLUSH_SUBNORMAL(rho * acc[i] + (1.0f - rho) * delta * delta);
    w[i] -= lr * delta;
}

/* RAdam: f the whole factor on m (lr / bc1, times the rectification and sqrt(bc2) when rectified);
 * rect: the adaptive denominator applies */
FNN_RULE void fnn_rule_radam(int64_t i, float *w, const float *g, float *m, float *v, float f, float b1, float b2,
                             float eps, float wd, int rect) {
    float gi = g[i] + wd * w[i];
    float mi = FNN_FLUSH_SUBNORMAL(b1 * m[i] + (1.0f - b1) * gi);
    float vi = FNN_FLUSH_SUBNORMAL(b2 * v[i] + (1.0f - b2) * gi * gi);
    m[i] = mi;
    v[i] = vi;
    w[i] -= rect ? f * mi / (sqrtf(vi) + eps) : f * mi;
}

/* Lion: w = w decay - lr sign(b1 m + (1 - b1) g), decay = 1 - lr wd; m = b2 m + (1 - b2) g. m does not
 * flush (FNN_FLUSH_SUBNORMAL): its sign moves w by a whole lr however small it is, so a subnormal m still
 * steps w as PyTorch's does, for up to ~1,600 steps (b2 0.99) after the gradient stops */
FNN_RULE void fnn_rule_lion(int64_t i, float *w, const float *g, float *m, float lr, float b1, float b2,
                            float decay) {
    float c = b1 * m[i] + (1.0f - b1) * g[i];
    float sign = c > 0 ? 1.0f : (c < 0 ? -1.0f : 0.0f);
    w[i] = w[i] * decay - lr * sign;
    m[i] = b2 * m[i] + (1.0f - b2) * g[i];
}

#endif
