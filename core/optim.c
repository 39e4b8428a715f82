/* optim.c: fused optimizer updates, one pass per parameter, in place on the
 * Param's value (the Param owns it; tensors handed out by fnn_param_tensor
 * share it and see the step, as in PyTorch). State tensors (momentum, Adam
 * moments) are made by the caller with fnn_zeros and owned by the optimizer,
 * so they are updated in place too. Gradient helpers for clipping and mixed
 * precision: all-finite check, squared norm, scaling. */
#include "internal.h"
#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#define FNN_RULE static inline
#include "optim_rules.h"   /* each rule's element update, shared with cuda/optim.cu */

/* the Param's value, gradient (contiguous, *gtmp filled when a copy was needed) and size;
 * *g = NULL when the Param has no gradient */
static int param_parts(const char *op, fnn_node *p, float **value, const float **g, fnn_tensor *gtmp, int64_t *n) {
    fnn_tensor_init(gtmp);
    fnn_set_op(op);   /* the step's name in out-of-memory errors and in fnn.profile */
    FNN_CHECK(p != NULL && p->is_leaf, FNN_STATUS_ARG, "%s: expected a Param", op);
    *g = NULL;
    *value = NULL;
    *n = fnn_tensor_numel(&p->value);
    if (p->leaf_grad.ndim < 0) return FNN_STATUS_OK;
    FNN_CHECK(fnn_device_type_of(p->value.device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "%s: not implemented on cuda yet", op);
    FNN_CHECK(fnn_same_shape(&p->leaf_grad, &p->value), FNN_STATUS_INTERNAL,
              "%s: gradient %s does not match param %s (please report)", op, fnn_shape_of(&p->leaf_grad).s,
              fnn_shape_of(&p->value).s);
    FNN_CHECK(fnn_tensor_is_contiguous(&p->value), FNN_STATUS_INTERNAL, "%s: param value is not contiguous (please report)", op);
    int rc;
    *g = fnn_contiguous_data(&p->leaf_grad, gtmp, &rc);   /* a gradient may be expanded (sum's backward) */
    FNN_TRY(rc);
    *value = fnn_data(&p->value);
    return FNN_STATUS_OK;
}

/* a state tensor must be a contiguous CPU tensor shaped like the param */
static int check_state(const char *op, const char *what, const fnn_tensor *s, const fnn_node *p) {
    FNN_TRY(fnn_check_input(op, s));
    FNN_CHECK(fnn_same_shape(s, &p->value) && fnn_tensor_is_contiguous(s) &&
              fnn_device_type_of(s->device) == FNN_DEVICE_CPU, FNN_STATUS_SHAPE,
              "%s: %s %s does not match param %s (make it with zeros of the param's shape)", op, what,
              fnn_shape_of(s).s, fnn_shape_of(&p->value).s);
    return FNN_STATUS_OK;
}

/* on a device: the update runs there (cuda/optim.cu, FNN_OPT_* code) with constants k computed on the
 * host; states[k] (NULL: unused) must be contiguous, shaped like the param and on its device */
static int device_step(const char *op, int code, fnn_node *p, fnn_tensor *const *states, const char *const *names,
                       int nstates, const float *k) {
    if (p->leaf_grad.ndim < 0) return FNN_STATUS_OK;
    const fnn_backend *be = fnn_backend_for(p->value.device);
    FNN_CHECK(be && be->optim, FNN_STATUS_DEVICE, "%s: not implemented on this device", op);
    FNN_CHECK(fnn_same_shape(&p->leaf_grad, &p->value) && p->leaf_grad.device == p->value.device &&
              fnn_tensor_is_contiguous(&p->value), FNN_STATUS_INTERNAL,
              "%s: gradient %s does not match param %s (please report)", op, fnn_shape_of(&p->leaf_grad).s,
              fnn_shape_of(&p->value).s);
    float *s[3] = {NULL, NULL, NULL};
    for (int j = 0; j < nstates; j++) {
        if (!states[j]) continue;
        FNN_TRY(fnn_check_input(op, states[j]));
        FNN_CHECK(fnn_same_shape(states[j], &p->value) && fnn_tensor_is_contiguous(states[j]) &&
                  states[j]->device == p->value.device, FNN_STATUS_SHAPE,
                  "%s: %s %s does not match param %s (make it with zeros of the param's shape, on its device)", op,
                  names[j], fnn_shape_of(states[j]).s, fnn_shape_of(&p->value).s);
        s[j] = fnn_data(states[j]);
    }
    fnn_tensor gtmp;
    int rc;
    const float *g = fnn_contiguous_data(&p->leaf_grad, &gtmp, &rc);   /* a device copy when expanded */
    FNN_TRY(rc);
    rc = be->optim(fnn_device_ordinal(p->value.device), code, fnn_tensor_numel(&p->value), fnn_data(&p->value), g,
                   s[0], s[1], s[2], k);
    fnn_tensor_clear(&gtmp);
    return rc;
}
static inline bool on_device(const fnn_node *p) {
    return p && p->is_leaf && fnn_device_type_of(p->value.device) != FNN_DEVICE_CPU;
}

/* the SGD update of elements lo..hi-1 (see fnn_optim_sgd) */
typedef struct {
    float *w, *buf;
    const float *g;
    float lr, wd, mom, damp;
    int nesterov, first_step;
} sgd_args;

static void sgd_span(void *ctx, int64_t lo, int64_t hi) {
    const sgd_args *a = ctx;
    float *w = a->w, *buf = a->buf;
    const float *g = a->g;
    const float lr = a->lr, wd = a->wd, mom = a->mom, damp = a->damp;
    const int nesterov = a->nesterov;
    /* a loop per case, each calling the rule with its constants, so each vectorizes on its own */
    if (!buf) for (int64_t i = lo; i < hi; i++) fnn_rule_sgd(i, w, g, NULL, lr, wd, 0, 0, 0, 0);
    else if (a->first_step) for (int64_t i = lo; i < hi; i++) fnn_rule_sgd(i, w, g, buf, lr, wd, mom, damp, nesterov, 1);
    else for (int64_t i = lo; i < hi; i++) fnn_rule_sgd(i, w, g, buf, lr, wd, mom, damp, nesterov, 0);
}

/* SGD, PyTorch semantics:
 *   d = g + wd * p
 *   momentum: buf = first_step ? d : momentum * buf + (1 - dampening) * d
 *             d = nesterov ? d + momentum * buf : buf
 *   p -= lr * d */
int fnn_optim_sgd(fnn_node *p, fnn_tensor *momentum_buf, double lr, double momentum, double dampening,
                  double weight_decay, int nesterov, int first_step) {
    if (on_device(p)) {
        FNN_CHECK(momentum == 0 || momentum_buf, FNN_STATUS_ARG, "sgd: momentum %g needs a momentum buffer", momentum);
        fnn_tensor *st[3] = {momentum != 0 ? momentum_buf : NULL, NULL, NULL};
        const char *names[3] = {"momentum buffer", "", ""};
        const float k[6] = {(float)lr, (float)weight_decay, (float)momentum, 1.0f - (float)dampening,
                            (float)(nesterov != 0), (float)(first_step != 0)};
        return device_step("sgd", FNN_OPT_SGD, p, st, names, 1, k);
    }
    float *w;
    const float *g;
    fnn_tensor gtmp;
    int64_t n;
    FNN_TRY(param_parts("sgd", p, &w, &g, &gtmp, &n));
    if (!g) return FNN_STATUS_OK;
    float *buf = NULL;
    if (momentum != 0) {
        int rc = momentum_buf ? check_state("sgd", "momentum buffer", momentum_buf, p)
                              : FNN_FAIL(FNN_STATUS_ARG, "sgd: momentum %g needs a momentum buffer", momentum);
        if (rc) { fnn_tensor_clear(&gtmp); return rc; }
        buf = fnn_data(momentum_buf);
    }
    sgd_args a = {w, buf, g, (float)lr, (float)weight_decay, (float)momentum, 1.0f - (float)dampening,
                  nesterov, first_step};
    fnn_parallel_for(n, fnn_threads_for(n), sgd_span, &a);   /* memory-bound: a plain count */
    fnn_tensor_clear(&gtmp);
    return FNN_STATUS_OK;
}

typedef struct { float decay, l2, b1, b2, step_size, inv_bc2_sqrt, eps; } adam_consts;
enum { ADAM_CHUNK = 4096 };


/* elements lo..hi-1. sqrtf keeps an errno path that stops gcc's vectorizer, so the lanes are
 * written with SSE (x86-64 baseline); results are bit-identical to fnn_rule_adam's */
static void adam_span(const adam_consts *k, float *w, const float *g, float *m, float *v, int64_t lo, int64_t hi) {
    int64_t i = lo;
#ifdef __SSE2__
    const __m128 decay = _mm_set1_ps(k->decay), l2 = _mm_set1_ps(k->l2), b1 = _mm_set1_ps(k->b1),
                 b2 = _mm_set1_ps(k->b2), c1 = _mm_set1_ps(1.0f - k->b1), c2 = _mm_set1_ps(1.0f - k->b2),
                 ss = _mm_set1_ps(k->step_size), ibc2 = _mm_set1_ps(k->inv_bc2_sqrt), eps = _mm_set1_ps(k->eps);
    for (; i + 4 <= hi; i += 4) {
        __m128 wi = _mm_mul_ps(_mm_loadu_ps(w + i), decay);
        __m128 gi = _mm_add_ps(_mm_loadu_ps(g + i), _mm_mul_ps(l2, wi));
        __m128 mi = _mm_add_ps(_mm_mul_ps(b1, _mm_loadu_ps(m + i)), _mm_mul_ps(c1, gi));
        __m128 vi = _mm_add_ps(_mm_mul_ps(b2, _mm_loadu_ps(v + i)), _mm_mul_ps(_mm_mul_ps(c2, gi), gi));
        _mm_storeu_ps(m + i, mi);
        _mm_storeu_ps(v + i, vi);
        __m128 denom = _mm_add_ps(_mm_mul_ps(_mm_sqrt_ps(vi), ibc2), eps);
        _mm_storeu_ps(w + i, _mm_sub_ps(wi, _mm_div_ps(_mm_mul_ps(ss, mi), denom)));
    }
#endif
    for (; i < hi; i++)
        fnn_rule_adam(i, w, g, m, v, NULL, k->decay, k->l2, k->b1, k->b2, k->step_size, k->inv_bc2_sqrt, k->eps);
}

/* amsgrad: the denominator uses the running max of v (vmax) */
static void amsgrad_span(const adam_consts *k, float *w, const float *g, float *m, float *v, float *vmax,
                         int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i++)
        fnn_rule_adam(i, w, g, m, v, vmax, k->decay, k->l2, k->b1, k->b2, k->step_size, k->inv_bc2_sqrt, k->eps);
}

/* chunks lo..hi-1 of ADAM_CHUNK elements (the last one may be short) */
typedef struct {
    const adam_consts *k;
    float *w;
    const float *g;
    float *m, *v, *vmax;
    int64_t n;
} adam_args;

static void adam_chunks(void *ctx, int64_t lo, int64_t hi) {
    const adam_args *a = ctx;
    int64_t e0 = lo * ADAM_CHUNK, e1 = hi * ADAM_CHUNK < a->n ? hi * ADAM_CHUNK : a->n;
    if (a->vmax) amsgrad_span(a->k, a->w, a->g, a->m, a->v, a->vmax, e0, e1);
    else adam_span(a->k, a->w, a->g, a->m, a->v, e0, e1);
}

/* Adam / AdamW, PyTorch semantics (t = step >= 1):
 *   decoupled: p *= 1 - lr * wd        else: g += wd * p
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * (the division by sqrt(1 - b2^t) is a multiplication by its reciprocal: one divider use less) */
int fnn_optim_adam(fnn_node *p, fnn_tensor *m, fnn_tensor *v, fnn_tensor *vmax, double lr, double beta1,
                   double beta2, double eps, double weight_decay, int decoupled, int64_t step) {
    if (on_device(p)) {
        FNN_CHECK(step >= 1, FNN_STATUS_ARG, "adam: step %lld, steps count from 1", (long long)step);
        FNN_CHECK(m && v, FNN_STATUS_ARG, "adam: needs its first and second moments");
        fnn_tensor *st[3] = {m, v, vmax};
        const char *names[3] = {"first moment", "second moment", "max second moment"};
        const float k[7] = {decoupled ? (float)(1.0 - lr * weight_decay) : 1.0f, decoupled ? 0.0f : (float)weight_decay,
                            (float)beta1, (float)beta2, (float)(lr / (1.0 - pow(beta1, (double)step))),
                            (float)(1.0 / sqrt(1.0 - pow(beta2, (double)step))), (float)eps};
        return device_step("adam", vmax ? FNN_OPT_AMSGRAD : FNN_OPT_ADAM, p, st, names, 3, k);
    }
    float *w = NULL;   /* set by param_parts; initialised for GCC, which cannot see it through the early return */
    const float *g = NULL;
    fnn_tensor gtmp;
    int64_t n = 0;
    FNN_TRY(param_parts("adam", p, &w, &g, &gtmp, &n));
    if (!g) return FNN_STATUS_OK;
    int rc = step >= 1 ? FNN_STATUS_OK
                       : FNN_FAIL(FNN_STATUS_ARG, "adam: step %lld, steps count from 1", (long long)step);
    if (!rc) rc = check_state("adam", "first moment", m, p);
    if (!rc) rc = check_state("adam", "second moment", v, p);
    if (!rc && vmax) rc = check_state("adam", "max second moment", vmax, p);
    if (rc) { fnn_tensor_clear(&gtmp); return rc; }
    float *mp = fnn_data(m), *vp = fnn_data(v);
    const float b1 = (float)beta1, b2 = (float)beta2, fe = (float)eps;
    const float step_size = (float)(lr / (1.0 - pow(beta1, (double)step)));
    const float inv_bc2_sqrt = (float)(1.0 / sqrt(1.0 - pow(beta2, (double)step)));
    const float decay = decoupled ? (float)(1.0 - lr * weight_decay) : 1.0f;
    const float l2 = decoupled ? 0.0f : (float)weight_decay;
    const adam_consts k = {decay, l2, b1, b2, step_size, inv_bc2_sqrt, fe};
    int64_t chunks = (n + ADAM_CHUNK - 1) / ADAM_CHUNK;
    /* ~4x an add's cost per element (a sqrt and a divide), counted as 2: a second thread also
     * wakes a core OpenBLAS may be using */
    adam_args a = {&k, w, g, mp, vp, vmax ? fnn_data(vmax) : NULL, n};
    fnn_parallel_for(chunks, fnn_threads_for(2 * n), adam_chunks, &a);
    fnn_tensor_clear(&gtmp);
    return FNN_STATUS_OK;
}

/* ================= the other optimizers =================
 * One pass per parameter each, split over threads like SGD (memory-bound: a plain count per
 * element, two for those with a sqrt and a divide). Each span is the published update rule
 * element by element, in PyTorch's order of operations. */

/* the parameter, its gradient and up to three state tensors, checked; *g NULL: no gradient */
typedef struct {
    float *w;
    const float *g;
    float *s[3];
    int64_t n;
    fnn_tensor gtmp;
} opt_parts;

static int opt_begin(const char *op, fnn_node *p, opt_parts *o, fnn_tensor *const *states, const char *const *names,
                     int nstates) {
    FNN_TRY(param_parts(op, p, &o->w, &o->g, &o->gtmp, &o->n));
    for (int k = 0; k < 3; k++) o->s[k] = NULL;
    if (!o->g) return FNN_STATUS_OK;
    for (int k = 0; k < nstates; k++) {
        if (!states[k]) continue;
        int rc = check_state(op, names[k], states[k], p);
        if (rc) { fnn_tensor_clear(&o->gtmp); return rc; }
        o->s[k] = fnn_data(states[k]);
    }
    return FNN_STATUS_OK;
}

typedef struct {
    opt_parts *o;
    float lr, a, b, eps, wd, mom, extra;
} opt_args;

static void rmsprop_span(void *ctx, int64_t lo, int64_t hi) {
    const opt_args *a = ctx;
    for (int64_t i = lo; i < hi; i++)
        fnn_rule_rmsprop(i, a->o->w, a->o->g, a->o->s[0], a->o->s[1], a->o->s[2], a->lr, a->a, a->eps, a->wd, a->mom);
}

/* RMSprop (PyTorch): g += wd p; sq = alpha sq + (1 - alpha) g^2;
 * centered: ga = alpha ga + (1 - alpha) g, avg = sqrt(sq - ga^2) + eps, else avg = sqrt(sq) + eps;
 * momentum: buf = momentum buf + g / avg, p -= lr buf; else p -= lr g / avg */
int fnn_optim_rmsprop(fnn_node *p, fnn_tensor *square_avg, fnn_tensor *grad_avg, fnn_tensor *momentum_buf,
                      double lr, double alpha, double eps, double weight_decay, double momentum) {
    const char *op = "rmsprop";
    FNN_CHECK(square_avg != NULL, FNN_STATUS_ARG, "%s: needs a square_avg state tensor", op);
    FNN_CHECK(momentum == 0 || momentum_buf != NULL, FNN_STATUS_ARG, "%s: momentum %g needs a momentum buffer", op,
              momentum);
    opt_parts o;
    fnn_tensor *const st[3] = {square_avg, grad_avg, momentum > 0 ? momentum_buf : NULL};
    const char *const names[3] = {"square_avg", "grad_avg", "momentum buffer"};
    if (on_device(p)) {   /* k as opt_args: lr, a, b, eps, wd, mom, extra */
        const float k[7] = {(float)lr, (float)alpha, 0, (float)eps, (float)weight_decay, (float)momentum, 0};
        return device_step(op, FNN_OPT_RMSPROP, p, st, names, 3, k);
    }
    FNN_TRY(opt_begin(op, p, &o, st, names, 3));
    if (!o.g) return FNN_STATUS_OK;
    opt_args a = {&o, (float)lr, (float)alpha, 0, (float)eps, (float)weight_decay, (float)momentum, 0};
    fnn_parallel_for(o.n, fnn_threads_for(2 * o.n), rmsprop_span, &a);
    fnn_tensor_clear(&o.gtmp);
    return FNN_STATUS_OK;
}

static void adagrad_span(void *ctx, int64_t lo, int64_t hi) {
    const opt_args *a = ctx;
    for (int64_t i = lo; i < hi; i++) fnn_rule_adagrad(i, a->o->w, a->o->g, a->o->s[0], a->lr, a->eps, a->wd);
}

/* Adagrad (PyTorch): g += wd p; clr = lr / (1 + (step - 1) lr_decay); sum += g^2;
 * p -= clr g / (sqrt(sum) + eps) */
int fnn_optim_adagrad(fnn_node *p, fnn_tensor *sum, double lr, double lr_decay, double weight_decay, double eps,
                      int64_t step) {
    const char *op = "adagrad";
    FNN_CHECK(sum != NULL, FNN_STATUS_ARG, "%s: needs a sum state tensor", op);
    FNN_CHECK(step >= 1, FNN_STATUS_ARG, "%s: step %lld, steps count from 1", op, (long long)step);
    opt_parts o;
    fnn_tensor *const st[1] = {sum};
    const char *const names[1] = {"sum"};
    if (on_device(p)) {
        const float k[7] = {(float)(lr / (1.0 + (double)(step - 1) * lr_decay)), 0, 0, (float)eps, (float)weight_decay, 0, 0};
        return device_step(op, FNN_OPT_ADAGRAD, p, st, names, 1, k);
    }
    FNN_TRY(opt_begin(op, p, &o, st, names, 1));
    if (!o.g) return FNN_STATUS_OK;
    double clr = lr / (1.0 + (double)(step - 1) * lr_decay);
    opt_args a = {&o, (float)clr, 0, 0, (float)eps, (float)weight_decay, 0, 0};
    fnn_parallel_for(o.n, fnn_threads_for(2 * o.n), adagrad_span, &a);
    fnn_tensor_clear(&o.gtmp);
    return FNN_STATUS_OK;
}

static void adadelta_span(void *ctx, int64_t lo, int64_t hi) {
    const opt_args *a = ctx;
    for (int64_t i = lo; i < hi; i++)
        fnn_rule_adadelta(i, a->o->w, a->o->g, a->o->s[0], a->o->s[1], a->lr, a->a, a->eps, a->wd);
}

/* Adadelta (PyTorch): g += wd p; sq = rho sq + (1 - rho) g^2;
 * delta = sqrt(acc + eps) / sqrt(sq + eps) g; acc = rho acc + (1 - rho) delta^2; p -= lr delta */
int fnn_optim_adadelta(fnn_node *p, fnn_tensor *square_avg, fnn_tensor *acc_delta, double lr, double rho, double eps,
                       double weight_decay) {
    const char *op = "adadelta";
    FNN_CHECK(square_avg != NULL && acc_delta != NULL, FNN_STATUS_ARG, "%s: needs square_avg and acc_delta", op);
    opt_parts o;
    fnn_tensor *const st[2] = {square_avg, acc_delta};
    const char *const names[2] = {"square_avg", "acc_delta"};
    if (on_device(p)) {
        const float k[7] = {(float)lr, (float)rho, 0, (float)eps, (float)weight_decay, 0, 0};
        return device_step(op, FNN_OPT_ADADELTA, p, st, names, 2, k);
    }
    FNN_TRY(opt_begin(op, p, &o, st, names, 2));
    if (!o.g) return FNN_STATUS_OK;
    opt_args a = {&o, (float)lr, (float)rho, 0, (float)eps, (float)weight_decay, 0, 0};
    fnn_parallel_for(o.n, fnn_threads_for(2 * o.n), adadelta_span, &a);
    fnn_tensor_clear(&o.gtmp);
    return FNN_STATUS_OK;
}

/* RAdam: lr here is the whole factor on m (lr / bc1, times the rectification and sqrt(bc2) when
 * rectified); `extra` = 1 when rectified (the adaptive denominator applies) */
static void radam_span(void *ctx, int64_t lo, int64_t hi) {
    const opt_args *a = ctx;
    const int rect = a->extra != 0;
    for (int64_t i = lo; i < hi; i++)
        fnn_rule_radam(i, a->o->w, a->o->g, a->o->s[0], a->o->s[1], a->lr, a->a, a->b, a->eps, a->wd, rect);
}

/* RAdam (PyTorch): g += wd p; m, v as Adam; rho_inf = 2 / (1 - b2) - 1,
 * rho_t = rho_inf - 2 t b2^t / (1 - b2^t); rho_t > 5: p -= lr m / bc1 * r * sqrt(bc2) / (sqrt(v) + eps)
 * with r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)); else p -= lr m / bc1 */
int fnn_optim_radam(fnn_node *p, fnn_tensor *m, fnn_tensor *v, double lr, double beta1, double beta2, double eps,
                    double weight_decay, int64_t step) {
    const char *op = "radam";
    FNN_CHECK(m != NULL && v != NULL, FNN_STATUS_ARG, "%s: needs the two moment tensors", op);
    FNN_CHECK(step >= 1, FNN_STATUS_ARG, "%s: step %lld, steps count from 1", op, (long long)step);
    opt_parts o;
    fnn_tensor *const st[2] = {m, v};
    const char *const names[2] = {"first moment", "second moment"};
    double t = (double)step, bc1 = 1.0 - pow(beta1, t), bc2 = 1.0 - pow(beta2, t);
    double rho_inf = 2.0 / (1.0 - beta2) - 1.0, rho_t = rho_inf - 2.0 * t * pow(beta2, t) / bc2;
    bool rect = rho_t > 5.0;
    double f = lr / bc1;
    if (rect)
        f *= sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)) * sqrt(bc2);
    if (on_device(p)) {
        const float k[7] = {(float)f, (float)beta1, (float)beta2, (float)eps, (float)weight_decay, 0, rect ? 1.0f : 0.0f};
        return device_step(op, FNN_OPT_RADAM, p, st, names, 2, k);
    }
    FNN_TRY(opt_begin(op, p, &o, st, names, 2));
    if (!o.g) return FNN_STATUS_OK;
    opt_args a = {&o, (float)f, (float)beta1, (float)beta2, (float)eps, (float)weight_decay, 0, rect ? 1.0f : 0.0f};
    fnn_parallel_for(o.n, fnn_threads_for(2 * o.n), radam_span, &a);
    fnn_tensor_clear(&o.gtmp);
    return FNN_STATUS_OK;
}

static void lion_span(void *ctx, int64_t lo, int64_t hi) {
    const opt_args *a = ctx;
    for (int64_t i = lo; i < hi; i++) fnn_rule_lion(i, a->o->w, a->o->g, a->o->s[0], a->lr, a->a, a->b, a->extra);
}

/* Lion (Chen et al. 2023): p *= 1 - lr wd; p -= lr sign(b1 m + (1 - b1) g); m = b2 m + (1 - b2) g */
int fnn_optim_lion(fnn_node *p, fnn_tensor *m, double lr, double beta1, double beta2, double weight_decay) {
    const char *op = "lion";
    FNN_CHECK(m != NULL, FNN_STATUS_ARG, "%s: needs a momentum tensor", op);
    opt_parts o;
    fnn_tensor *const st[1] = {m};
    const char *const names[1] = {"momentum"};
    if (on_device(p)) {
        const float k[7] = {(float)lr, (float)beta1, (float)beta2, 0, 0, 0, (float)(1.0 - lr * weight_decay)};
        return device_step(op, FNN_OPT_LION, p, st, names, 1, k);
    }
    FNN_TRY(opt_begin(op, p, &o, st, names, 1));
    if (!o.g) return FNN_STATUS_OK;
    opt_args a = {&o, (float)lr, (float)beta1, (float)beta2, 0, 0, 0, (float)(1.0 - lr * weight_decay)};
    fnn_parallel_for(o.n, fnn_threads_for(o.n), lion_span, &a);
    fnn_tensor_clear(&o.gtmp);
    return FNN_STATUS_OK;
}

int fnn_optim_decay(fnn_node *p, double factor) {
    FNN_CHECK(p != NULL && p->is_leaf, FNN_STATUS_ARG, "decay: expected a Param");
    if (on_device(p)) {   /* w *= factor there; no gradient needed */
        const fnn_backend *be = fnn_backend_for(p->value.device);
        FNN_CHECK(be && be->optim, FNN_STATUS_DEVICE, "decay: not implemented on this device");
        const float k[1] = {(float)factor};
        return be->optim(fnn_device_ordinal(p->value.device), FNN_OPT_DECAY, fnn_tensor_numel(&p->value),
                         fnn_data(&p->value), NULL, NULL, NULL, NULL, k);
    }
    float *w = fnn_data(&p->value), f = (float)factor;
    int64_t n = fnn_tensor_numel(&p->value);
    for (int64_t i = 0; i < n; i++) w[i] *= f;
    return FNN_STATUS_OK;
}

int fnn_optim_lerp(fnn_tensor *state, const fnn_tensor *target, double weight) {
    FNN_TRY(fnn_check_input("lerp", state));
    FNN_TRY(fnn_check_input("lerp", target));
    if (fnn_device_type_of(state->device) != FNN_DEVICE_CPU) {   /* state += weight (target - state) there */
        FNN_CHECK(fnn_same_shape(state, target) && fnn_tensor_is_contiguous(state) && state->device == target->device,
                  FNN_STATUS_SHAPE, "lerp: state %s and target %s must be tensors of one shape on one device (state "
                  "contiguous)", fnn_shape_of(state).s, fnn_shape_of(target).s);
        const fnn_backend *be = fnn_backend_for(state->device);
        FNN_CHECK(be && be->optim, FNN_STATUS_DEVICE, "lerp: not implemented on this device");
        fnn_tensor tmp;
        int rc;
        const float *t = fnn_contiguous_data(target, &tmp, &rc);
        FNN_TRY(rc);
        const float k[1] = {(float)weight};
        rc = be->optim(fnn_device_ordinal(state->device), FNN_OPT_LERP, fnn_tensor_numel(state), fnn_data(state), t,
                       NULL, NULL, NULL, k);
        fnn_tensor_clear(&tmp);
        return rc;
    }
    FNN_CHECK(fnn_same_shape(state, target) && fnn_tensor_is_contiguous(state) &&
              fnn_device_type_of(state->device) == FNN_DEVICE_CPU && state->device == target->device,
              FNN_STATUS_SHAPE, "lerp: state %s and target %s must be CPU tensors of one shape (state contiguous)",
              fnn_shape_of(state).s, fnn_shape_of(target).s);
    fnn_tensor tmp;
    int rc;
    const float *t = fnn_contiguous_data(target, &tmp, &rc);
    FNN_TRY(rc);
    float *s = fnn_data(state), wgt = (float)weight;
    int64_t n = fnn_tensor_numel(state);
    for (int64_t i = 0; i < n; i++) s[i] += wgt * (t[i] - s[i]);
    fnn_tensor_clear(&tmp);
    return FNN_STATUS_OK;
}

/* 1 when p has no gradient or a finite one, 0 when some element is inf or nan */
int fnn_grad_all_finite(fnn_node *p) {
    FNN_CHECK(p != NULL && p->is_leaf, FNN_STATUS_ARG, "grad_all_finite: expected a Param");
    if (p->leaf_grad.ndim < 0) return 1;
    fnn_tensor host, tmp;
    fnn_tensor_init(&host);
    const fnn_tensor *gt = &p->leaf_grad;
    if (fnn_device_type_of(gt->device) != FNN_DEVICE_CPU) {   /* read it on the host */
        FNN_TRY(fnn_to_device(&host, gt, fnn_make_device(FNN_DEVICE_CPU, 0)));
        gt = &host;
    }
    int rc;
    const float *g = fnn_contiguous_data(gt, &tmp, &rc);
    if (rc) { fnn_tensor_clear(&host); return rc; }
    int64_t n = fnn_tensor_numel(gt);
    /* exponent bits all ones <=> inf or nan; an integer or-reduction vectorizes */
    unsigned bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &g[i], sizeof u);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    fnn_tensor_clear(&tmp);
    fnn_tensor_clear(&host);
    return bad ? 0 : 1;
}

/* sum of the gradient's squares (0 without a gradient); nan with the error set on failure */
double fnn_grad_sq_norm(fnn_node *p) {
    if (!p || !p->is_leaf) { FNN_FAIL(FNN_STATUS_ARG, "grad_sq_norm: expected a Param"); return NAN; }
    if (p->leaf_grad.ndim < 0) return 0;
    fnn_tensor host, tmp;
    fnn_tensor_init(&host);
    const fnn_tensor *gt = &p->leaf_grad;
    if (fnn_device_type_of(gt->device) != FNN_DEVICE_CPU) {
        if (fnn_to_device(&host, gt, fnn_make_device(FNN_DEVICE_CPU, 0))) return NAN;
        gt = &host;
    }
    int rc;
    const float *g = fnn_contiguous_data(gt, &tmp, &rc);
    if (rc) { fnn_tensor_clear(&host); return NAN; }
    int64_t n = fnn_tensor_numel(gt), i = 0;
    /* four double lanes: vectorizable and accurate for millions of elements */
    double lane[4] = {0, 0, 0, 0};
    for (; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; l++) lane[l] += (double)g[i + l] * (double)g[i + l];
    for (; i < n; i++) lane[0] += (double)g[i] * (double)g[i];
    fnn_tensor_clear(&tmp);
    fnn_tensor_clear(&host);
    return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

/* gradient *= s. The old gradient may be shared with a tensor Lua holds from p:grad(),
 * and tensors are immutable: make a fresh one and swap it in. */
int fnn_grad_scale(fnn_node *p, double s) {
    FNN_CHECK(p != NULL && p->is_leaf, FNN_STATUS_ARG, "grad_scale: expected a Param");
    if (p->leaf_grad.ndim < 0) return FNN_STATUS_OK;
    fnn_tensor scaled;
    int was = fnn_grad_enabled();
    fnn_set_grad_enabled(0);
    int rc = fnn_mul_scalar(&scaled, &p->leaf_grad, s);
    fnn_set_grad_enabled(was);
    FNN_TRY(rc);
    if (scaled.node) { fnn_node_release(scaled.node); scaled.node = NULL; }
    fnn_tensor_clear(&p->leaf_grad);
    p->leaf_grad = scaled;
    return FNN_STATUS_OK;
}
