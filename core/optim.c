/* optim.c: fused optimizer updates, one pass per parameter, in place on the
 * Param's value (the Param owns it; tensors handed out by fnn_param_tensor
 * share it and see the step, as in PyTorch). State tensors (momentum, Adam
 * moments) are made by the caller with fnn_zeros and owned by the optimizer,
 * so they are updated in place too. Gradient helpers for clipping and mixed
 * precision: all-finite check, squared norm, scaling.
 *
 * Each step is written once: the entry point checks the Param, its gradient
 * and its state tensors, computes the step's constants on the host and calls
 * the row of the parameter's backend (core/optim.h; the CPU's rows at the end
 * of this file, cuda/optim.cu's on a GPU). */
#include "internal.h"
#include "optim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#define FNN_RULE static inline
#include "optim_rules.h"   /* each rule's element update, shared with cuda/optim.cu */

/* The checks and arrays of rule op's step on Param p: p's gradient (contiguous: a copy into *gtmp
 * when it is expanded, as sum's backward gives it; clear *gtmp after the row ran) and the states
 * (NULL: unused by this step), each checked against the param; a gets the arrays and n (-1: p has no
 * gradient, nothing to do), *row the row of p's backend. a has the step's constants already. */
static int prepare(const char *op, fnn_node *p, fnn_tensor *const *states, const char *const *names, int nstates,
                   fnn_optim_args *a, fnn_tensor *gtmp, const fnn_optim_row **row) {
    fnn_set_op(op);   /* the step's name in out-of-memory errors and in fnn.profile */
    FNN_CHECK(p != NULL && p->is_leaf, FNN_STATUS_ARG, "%s: expected a Param", op);
    a->n = -1;
    if (p->leaf_grad.ndim < 0) return FNN_STATUS_OK;
    const int device = p->value.device;
    *row = fnn_optim_row_for(device, op);
    if (!*row) return FNN_ROW_REFUSED(op, device, false);
    FNN_CHECK(fnn_same_shape(&p->leaf_grad, &p->value) && p->leaf_grad.device == device, FNN_STATUS_INTERNAL,
              "%s: gradient %s does not match param %s (please report)", op, fnn_shape_of(&p->leaf_grad).s,
              fnn_shape_of(&p->value).s);
    FNN_CHECK(fnn_tensor_is_contiguous(&p->value), FNN_STATUS_INTERNAL, "%s: param value is not contiguous (please report)", op);
    for (int k = 0; k < 3; k++) a->s[k] = NULL;
    for (int k = 0; k < nstates; k++) {
        const fnn_tensor *s = states[k];
        if (!s) continue;
        FNN_TRY(fnn_check_input(op, s));
        FNN_CHECK(fnn_same_shape(s, &p->value) && fnn_tensor_is_contiguous(s) && s->device == device, FNN_STATUS_SHAPE,
                  "%s: %s %s does not match param %s (make it with zeros of the param's shape, on its device)", op,
                  names[k], fnn_shape_of(s).s, fnn_shape_of(&p->value).s);
        a->s[k] = fnn_data(s);
    }
    int rc;
    a->g = fnn_contiguous_data(&p->leaf_grad, gtmp, &rc);
    FNN_TRY(rc);
    a->dtype = p->value.dtype;
    a->n = fnn_tensor_numel(&p->value);
    a->w = fnn_data(&p->value);
    return FNN_STATUS_OK;
}

/* the step of rule op on Param p through the row of p's backend; no gradient: nothing to do */
static int step(const char *op, fnn_node *p, fnn_tensor *const *states, const char *const *names, int nstates,
                fnn_optim_args *a) {
    fnn_tensor gtmp;
    fnn_tensor_init(&gtmp);
    const fnn_optim_row *row = NULL;
    int rc = prepare(op, p, states, names, nstates, a, &gtmp, &row);
    if (!rc && a->n >= 0) rc = row->step(fnn_device_ordinal(p->value.device), a);
    fnn_tensor_clear(&gtmp);
    return rc;
}

/* SGD, PyTorch semantics:
 *   d = g + wd * p
 *   momentum: buf = first_step ? d : momentum * buf + (1 - dampening) * d
 *             d = nesterov ? d + momentum * buf : buf
 *   p -= lr * d */
int fnn_optim_sgd(fnn_node *p, fnn_tensor *momentum_buf, double lr, double momentum, double dampening,
                  double weight_decay, int nesterov, int first_step) {
    FNN_CHECK(p == NULL || !p->is_leaf || p->leaf_grad.ndim < 0 || momentum == 0 || momentum_buf, FNN_STATUS_ARG,
              "sgd: momentum %g needs a momentum buffer", momentum);
    fnn_tensor *st[1] = {momentum != 0 ? momentum_buf : NULL};
    const char *names[1] = {"momentum buffer"};
    fnn_optim_args a = {.lr = (float)lr, .wd = (float)weight_decay, .momentum = (float)momentum,
                        .damp = 1.0f - (float)dampening, .nesterov = nesterov != 0, .first_step = first_step != 0};
    return step("sgd", p, st, names, 1, &a);
}

/* Adam / AdamW, PyTorch semantics (t = step >= 1):
 *   decoupled: p *= 1 - lr * wd        else: g += wd * p
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * (the division by sqrt(1 - b2^t) is a multiplication by its reciprocal: one divider use less);
 * amsgrad (vmax given): the denominator uses the running max of v */
static fnn_optim_args adam_constants(double lr, double beta1, double beta2, double eps, double weight_decay,
                                     int decoupled, int64_t t) {
    return (fnn_optim_args){.decay = decoupled ? (float)(1.0 - lr * weight_decay) : 1.0f,
                            .l2 = decoupled ? 0.0f : (float)weight_decay, .beta1 = (float)beta1,
                            .beta2 = (float)beta2, .step_size = (float)(lr / (1.0 - pow(beta1, (double)t))),
                            .inv_bc2_sqrt = (float)(1.0 / sqrt(1.0 - pow(beta2, (double)t))), .eps = (float)eps};
}

int fnn_optim_adam(fnn_node *p, fnn_tensor *m, fnn_tensor *v, fnn_tensor *vmax, double lr, double beta1,
                   double beta2, double eps, double weight_decay, int decoupled, int64_t step_) {
    return fnn_optim_adam_many(1, &p, &m, &v, vmax ? &vmax : NULL, lr, beta1, beta2, eps, weight_decay, decoupled,
                               &step_);
}

/* the runs of consecutive parameters on one device go to that backend's row together: step_many where
 * the row has it (the CPU's: one parallel loop over every element of the run), else step each */
static int run_many(const fnn_optim_row *const *rows, const int *devices, const fnn_optim_args *a, int count) {
    for (int lo = 0, hi; lo < count; lo = hi) {
        for (hi = lo + 1; hi < count && devices[hi] == devices[lo]; hi++) {}
        const int ordinal = fnn_device_ordinal(devices[lo]);
        if (rows[lo]->step_many) {
            FNN_TRY(rows[lo]->step_many(ordinal, a + lo, hi - lo));
        } else {
            for (int i = lo; i < hi; i++) FNN_TRY(rows[lo]->step(ordinal, a + i));
        }
    }
    return FNN_STATUS_OK;
}

int fnn_optim_adam_many(int count, fnn_node *const *params, fnn_tensor *const *m, fnn_tensor *const *v,
                        fnn_tensor *const *vmax, double lr, double beta1, double beta2, double eps,
                        double weight_decay, int decoupled, const int64_t *steps) {
    FNN_CHECK(count >= 0 && (count == 0 || (params && m && v && steps)), FNN_STATUS_ARG,
              "adam: %d parameters without their lists of moments and steps", count);
    /* one block for the arguments, gradient copies, rows and devices of every parameter */
    const size_t each = sizeof(fnn_optim_args) + sizeof(fnn_tensor) + sizeof(fnn_optim_row *) + sizeof(int);
    char *block = malloc(each * (size_t)(count > 0 ? count : 1));
    if (!block) return fnn_alloc_failed(FNN_DEVICE_CPU, (double)each * count, "adam's parameter list");
    fnn_optim_args *args = (fnn_optim_args *)(void *)block;
    fnn_tensor *gtmp = (fnn_tensor *)(void *)(args + count);
    const fnn_optim_row **rows = (const fnn_optim_row **)(void *)(gtmp + count);
    int *devices = (int *)(void *)(rows + count);
    const char *names[3] = {"first moment", "second moment", "max second moment"};
    int used = 0, rc = FNN_STATUS_OK;
    for (int i = 0; i < count && !rc; i++) {
        fnn_node *p = params[i];
        if (p != NULL && p->is_leaf && p->leaf_grad.ndim >= 0) {
            if (steps[i] < 1) { rc = FNN_FAIL(FNN_STATUS_ARG, "adam: step %lld, steps count from 1", (long long)steps[i]); break; }
            if (!m[i] || !v[i]) { rc = FNN_FAIL(FNN_STATUS_ARG, "adam: needs its first and second moments"); break; }
        }
        fnn_tensor *st[3] = {m[i], v[i], vmax ? vmax[i] : NULL};
        args[used] = adam_constants(lr, beta1, beta2, eps, weight_decay, decoupled, steps[i]);
        fnn_tensor_init(&gtmp[used]);
        rc = prepare("adam", p, st, names, 3, &args[used], &gtmp[used], &rows[used]);
        if (rc) fnn_tensor_clear(&gtmp[used]);
        else if (args[used].n < 0) fnn_tensor_clear(&gtmp[used]);   /* no gradient: skipped */
        else devices[used++] = p->value.device;
    }
    if (!rc) rc = run_many(rows, devices, args, used);
    for (int i = 0; i < used; i++) fnn_tensor_clear(&gtmp[i]);
    free(block);
    return rc;
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
    fnn_tensor *const st[3] = {square_avg, grad_avg, momentum > 0 ? momentum_buf : NULL};
    const char *const names[3] = {"square_avg", "grad_avg", "momentum buffer"};
    fnn_optim_args a = {.lr = (float)lr, .alpha = (float)alpha, .eps = (float)eps, .wd = (float)weight_decay,
                        .momentum = (float)momentum};
    return step(op, p, st, names, 3, &a);
}

/* Adagrad (PyTorch): g += wd p; clr = lr / (1 + (step - 1) lr_decay); sum += g^2;
 * p -= clr g / (sqrt(sum) + eps) */
int fnn_optim_adagrad(fnn_node *p, fnn_tensor *sum, double lr, double lr_decay, double weight_decay, double eps,
                      int64_t step_) {
    const char *op = "adagrad";
    FNN_CHECK(sum != NULL, FNN_STATUS_ARG, "%s: needs a sum state tensor", op);
    FNN_CHECK(step_ >= 1, FNN_STATUS_ARG, "%s: step %lld, steps count from 1", op, (long long)step_);
    fnn_tensor *const st[1] = {sum};
    const char *const names[1] = {"sum"};
    fnn_optim_args a = {.lr = (float)(lr / (1.0 + (double)(step_ - 1) * lr_decay)), .eps = (float)eps,
                        .wd = (float)weight_decay};
    return step(op, p, st, names, 1, &a);
}

/* Adadelta (PyTorch): g += wd p; sq = rho sq + (1 - rho) g^2;
 * delta = sqrt(acc + eps) / sqrt(sq + eps) g; acc = rho acc + (1 - rho) delta^2; p -= lr delta */
int fnn_optim_adadelta(fnn_node *p, fnn_tensor *square_avg, fnn_tensor *acc_delta, double lr, double rho, double eps,
                       double weight_decay) {
    const char *op = "adadelta";
    FNN_CHECK(square_avg != NULL && acc_delta != NULL, FNN_STATUS_ARG, "%s: needs square_avg and acc_delta", op);
    fnn_tensor *const st[2] = {square_avg, acc_delta};
    const char *const names[2] = {"square_avg", "acc_delta"};
    fnn_optim_args a = {.lr = (float)lr, .alpha = (float)rho, .eps = (float)eps, .wd = (float)weight_decay};
    return step(op, p, st, names, 2, &a);
}

/* RAdam (PyTorch): g += wd p; m, v as Adam; rho_inf = 2 / (1 - b2) - 1,
 * rho_t = rho_inf - 2 t b2^t / (1 - b2^t); rho_t > 5: p -= lr m / bc1 * r * sqrt(bc2) / (sqrt(v) + eps)
 * with r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)); else p -= lr m / bc1 */
int fnn_optim_radam(fnn_node *p, fnn_tensor *m, fnn_tensor *v, double lr, double beta1, double beta2, double eps,
                    double weight_decay, int64_t step_) {
    const char *op = "radam";
    FNN_CHECK(m != NULL && v != NULL, FNN_STATUS_ARG, "%s: needs the two moment tensors", op);
    FNN_CHECK(step_ >= 1, FNN_STATUS_ARG, "%s: step %lld, steps count from 1", op, (long long)step_);
    fnn_tensor *const st[2] = {m, v};
    const char *const names[2] = {"first moment", "second moment"};
    double t = (double)step_, bc1 = 1.0 - pow(beta1, t), bc2 = 1.0 - pow(beta2, t);
    double rho_inf = 2.0 / (1.0 - beta2) - 1.0, rho_t = rho_inf - 2.0 * t * pow(beta2, t) / bc2;
    bool rect = rho_t > 5.0;
    double f = lr / bc1;
    if (rect)
        f *= sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)) * sqrt(bc2);
    fnn_optim_args a = {.lr = (float)f, .beta1 = (float)beta1, .beta2 = (float)beta2, .eps = (float)eps,
                        .wd = (float)weight_decay, .rectified = rect};
    return step(op, p, st, names, 2, &a);
}

/* Lion (Chen et al. 2023): p *= 1 - lr wd; p -= lr sign(b1 m + (1 - b1) g); m = b2 m + (1 - b2) g */
int fnn_optim_lion(fnn_node *p, fnn_tensor *m, double lr, double beta1, double beta2, double weight_decay) {
    const char *op = "lion";
    FNN_CHECK(m != NULL, FNN_STATUS_ARG, "%s: needs a momentum tensor", op);
    fnn_tensor *const st[1] = {m};
    const char *const names[1] = {"momentum"};
    fnn_optim_args a = {.lr = (float)lr, .beta1 = (float)beta1, .beta2 = (float)beta2,
                        .decay = (float)(1.0 - lr * weight_decay)};
    return step(op, p, st, names, 1, &a);
}

/* w *= factor (no gradient needed) */
int fnn_optim_decay(fnn_node *p, double factor) {
    FNN_CHECK(p != NULL && p->is_leaf, FNN_STATUS_ARG, "decay: expected a Param");
    const fnn_optim_row *row = fnn_optim_row_for(p->value.device, "decay");
    if (!row) return FNN_ROW_REFUSED("decay", p->value.device, false);
    fnn_optim_args a = {.dtype = p->value.dtype, .n = fnn_tensor_numel(&p->value), .w = fnn_data(&p->value),
                        .decay = (float)factor};
    return row->step(fnn_device_ordinal(p->value.device), &a);
}

/* state += weight (target - state) */
int fnn_optim_lerp(fnn_tensor *state, const fnn_tensor *target, double weight) {
    FNN_TRY(fnn_check_input("lerp", state));
    FNN_TRY(fnn_check_input("lerp", target));
    FNN_CHECK(fnn_same_shape(state, target) && fnn_tensor_is_contiguous(state) && state->device == target->device,
              FNN_STATUS_SHAPE, "lerp: state %s and target %s must be tensors of one shape on one device (state "
              "contiguous)", fnn_shape_of(state).s, fnn_shape_of(target).s);
    const fnn_optim_row *row = fnn_optim_row_for(state->device, "lerp");
    if (!row) return FNN_ROW_REFUSED("lerp", state->device, false);
    fnn_tensor tmp;
    int rc;
    const float *t = fnn_contiguous_data(target, &tmp, &rc);
    FNN_TRY(rc);
    fnn_optim_args a = {.dtype = state->dtype, .n = fnn_tensor_numel(state), .w = fnn_data(state), .g = t,
                        .weight = (float)weight};
    rc = row->step(fnn_device_ordinal(state->device), &a);
    fnn_tensor_clear(&tmp);
    return rc;
}

/* 1 when p has no gradient or a finite one, 0 when some element is inf or nan */
int fnn_grad_all_finite(fnn_node *p) {
    FNN_CHECK(p != NULL && p->is_leaf, FNN_STATUS_ARG, "grad_all_finite: expected a Param");
    if (p->leaf_grad.ndim < 0) return 1;
    fnn_tensor host, tmp;
    fnn_tensor_init(&host);
    const fnn_tensor *gt = &p->leaf_grad;
    FNN_TRY(fnn_to_device(&host, gt, fnn_make_device(FNN_DEVICE_CPU, 0)));   /* read it on the host (a ref there) */
    gt = &host;
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
    if (fnn_to_device(&host, gt, fnn_make_device(FNN_DEVICE_CPU, 0))) return NAN;   /* on the host (a ref there) */
    gt = &host;
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

/* ================= the CPU's rows (core/optim.h) =================
 * One pass per parameter each, split over threads (memory-bound: a plain count per element, two for
 * the rules with a sqrt and a divide: a second thread also wakes a core OpenBLAS may be using). Each
 * span is the published update rule element by element, in PyTorch's order of operations. */

/* elements lo..hi-1 of a's step, by rule */
typedef void (*span_fn)(const fnn_optim_args *a, float *w, const float *g, float *s0, float *s1, float *s2,
                        int64_t lo, int64_t hi);
typedef struct { const fnn_optim_args *a; span_fn span; } span_ctx;
static void run_span(void *ctx, int64_t lo, int64_t hi) {
    const span_ctx *c = ctx;
    const fnn_optim_args *a = c->a;
    c->span(a, a->w, a->g, a->s[0], a->s[1], a->s[2], lo, hi);
}
static int run(const fnn_optim_args *a, span_fn span, int64_t work) {
    span_ctx c = {a, span};
    fnn_parallel_for(a->n, fnn_threads_for(work), run_span, &c);
    return FNN_STATUS_OK;
}

/* The spans below are written as adam_span is (restrict pointers, the rule's constants hoisted, a loop per
 * case, AVX2 and AVX-512 variants): element for element the rule's bits at any lane width. As the
 * plain loops they replace (an option's branch inside, pointers that might alias), 4M parameters took
 * 5.1 ms a step of RMSprop and 3.7 of Lion against Adam's 1.4 (Emerald Rapids, 2 threads) */
FNN_CLONES_V4 static void sgd_span(const fnn_optim_args *a, float *restrict w, const float *restrict g,
                                   float *restrict buf, float *s1, float *s2, int64_t lo, int64_t hi) {
    (void)s1, (void)s2;
    const float lr = a->lr, wd = a->wd, mom = a->momentum, damp = a->damp;
    const int nesterov = a->nesterov;
    if (!buf) for (int64_t i = lo; i < hi; i++) fnn_rule_sgd(i, w, g, NULL, lr, wd, 0, 0, 0, 0);
    else if (a->first_step) for (int64_t i = lo; i < hi; i++) fnn_rule_sgd(i, w, g, buf, lr, wd, mom, damp, nesterov, 1);
    else if (nesterov) for (int64_t i = lo; i < hi; i++) fnn_rule_sgd(i, w, g, buf, lr, wd, mom, damp, 1, 0);
    else for (int64_t i = lo; i < hi; i++) fnn_rule_sgd(i, w, g, buf, lr, wd, mom, damp, 0, 0);
}
static int sgd_cpu(int ordinal, const fnn_optim_args *a) { (void)ordinal; return run(a, sgd_span, a->n); }

enum { ADAM_CHUNK = 4096 };
/* elements lo..hi-1 through the rule itself: optim.c is built with -fno-math-errno (sqrtf without an
 * errno path, which stopped gcc's vectorizer) and -ffp-contract=off (no fused multiply-adds, so every
 * lane width gives the bits the scalar rule gives), for AVX-512 and AVX2 too. 10M parameters in 100
 * tensors on Zen 3 (AVX2, 2 threads): 10.0-12.2 ms with the SSE lanes this replaces */
FNN_CLONES_V4 static void adam_span(const fnn_optim_args *k, float *restrict w, const float *restrict g,
                                    float *restrict m, float *restrict v, int64_t lo, int64_t hi) {
    const float decay = k->decay, l2 = k->l2, b1 = k->beta1, b2 = k->beta2, ss = k->step_size,
                ibc2 = k->inv_bc2_sqrt, eps = k->eps;
    for (int64_t i = lo; i < hi; i++) fnn_rule_adam(i, w, g, m, v, NULL, decay, l2, b1, b2, ss, ibc2, eps);
}
/* chunks lo..hi-1 of ADAM_CHUNK elements (the last one may be short); amsgrad (vmax): the rule's loop */
static void adam_chunks(void *ctx, int64_t lo, int64_t hi) {
    const fnn_optim_args *k = ctx;
    float *w = k->w, *m = k->s[0], *v = k->s[1], *vmax = k->s[2];
    const float *g = k->g;
    int64_t e0 = lo * ADAM_CHUNK, e1 = hi * ADAM_CHUNK < k->n ? hi * ADAM_CHUNK : k->n;
    if (!vmax) { adam_span(k, w, g, m, v, e0, e1); return; }
    for (int64_t i = e0; i < e1; i++)
        fnn_rule_adam(i, w, g, m, v, vmax, k->decay, k->l2, k->beta1, k->beta2, k->step_size, k->inv_bc2_sqrt, k->eps);
}
static int adam_cpu(int ordinal, const fnn_optim_args *a) {
    (void)ordinal;
    /* ~4x an add's cost per element (a sqrt and a divide), counted as 2 */
    fnn_parallel_for((a->n + ADAM_CHUNK - 1) / ADAM_CHUNK, fnn_threads_for(2 * a->n), adam_chunks, (void *)a);
    return FNN_STATUS_OK;
}
/* count parameters' chunks numbered one after another: parameter i's are first[i] .. first[i + 1] - 1 */
typedef struct { const fnn_optim_args *a; const int64_t *first; int count; } adam_many_ctx;
static void adam_many_chunks(void *ctx, int64_t lo, int64_t hi) {
    const adam_many_ctx *c = ctx;
    int i = 0, top = c->count;   /* the parameter holding chunk lo: the last i with first[i] <= lo */
    while (top - i > 1) {
        const int mid = (i + top) / 2;
        if (c->first[mid] <= lo) i = mid; else top = mid;
    }
    for (; lo < hi; i++) {
        const int64_t end = hi < c->first[i + 1] ? hi : c->first[i + 1];
        if (end > lo) adam_chunks((void *)&c->a[i], lo - c->first[i], end - c->first[i]);
        lo = end > lo ? end : lo;
    }
}
/* PyTorch's multi-tensor apply on the CPU: one thread team over every chunk of every parameter, so
 * many small parameters cost one team start, not one each (100 tensors of 100,000: 8.5 against 6.3 ms
 * for one tensor of 10M, Zen 3, 2 threads, before this) */
static int adam_many_cpu(int ordinal, const fnn_optim_args *a, int count) {
    int64_t stack[65], *first = count < 65 ? stack : malloc(sizeof(int64_t) * (size_t)(count + 1));
    if (!first) {
        for (int i = 0; i < count; i++) adam_cpu(ordinal, a + i);
        return FNN_STATUS_OK;
    }
    int64_t work = 0;
    first[0] = 0;
    for (int i = 0; i < count; i++) {
        first[i + 1] = first[i] + (a[i].n + ADAM_CHUNK - 1) / ADAM_CHUNK;
        work += 2 * a[i].n;
    }
    adam_many_ctx c = {a, first, count};
    fnn_parallel_for(first[count], fnn_threads_for(work), adam_many_chunks, &c);
    if (first != stack) free(first);
    return FNN_STATUS_OK;
}

FNN_CLONES_V4 static void rmsprop_span(const fnn_optim_args *a, float *restrict w, const float *restrict g,
                                       float *restrict sq, float *restrict ga, float *restrict buf, int64_t lo,
                                       int64_t hi) {
    const float lr = a->lr, alpha = a->alpha, eps = a->eps, wd = a->wd, mom = a->momentum;
    if (ga && buf) for (int64_t i = lo; i < hi; i++) fnn_rule_rmsprop(i, w, g, sq, ga, buf, lr, alpha, eps, wd, mom);
    else if (ga) for (int64_t i = lo; i < hi; i++) fnn_rule_rmsprop(i, w, g, sq, ga, NULL, lr, alpha, eps, wd, mom);
    else if (buf) for (int64_t i = lo; i < hi; i++) fnn_rule_rmsprop(i, w, g, sq, NULL, buf, lr, alpha, eps, wd, mom);
    else for (int64_t i = lo; i < hi; i++) fnn_rule_rmsprop(i, w, g, sq, NULL, NULL, lr, alpha, eps, wd, mom);
}
static int rmsprop_cpu(int ordinal, const fnn_optim_args *a) { (void)ordinal; return run(a, rmsprop_span, 2 * a->n); }

FNN_CLONES_V4 static void adagrad_span(const fnn_optim_args *a, float *restrict w, const float *restrict g,
                                       float *restrict sum, float *s1, float *s2, int64_t lo, int64_t hi) {
    (void)s1, (void)s2;
    const float lr = a->lr, eps = a->eps, wd = a->wd;
    for (int64_t i = lo; i < hi; i++) fnn_rule_adagrad(i, w, g, sum, lr, eps, wd);
}
static int adagrad_cpu(int ordinal, const fnn_optim_args *a) { (void)ordinal; return run(a, adagrad_span, 2 * a->n); }

FNN_CLONES_V4 static void adadelta_span(const fnn_optim_args *a, float *restrict w, const float *restrict g,
                                        float *restrict sq, float *restrict acc, float *s2, int64_t lo, int64_t hi) {
    (void)s2;
    const float lr = a->lr, rho = a->alpha, eps = a->eps, wd = a->wd;
    for (int64_t i = lo; i < hi; i++) fnn_rule_adadelta(i, w, g, sq, acc, lr, rho, eps, wd);
}
static int adadelta_cpu(int ordinal, const fnn_optim_args *a) { (void)ordinal; return run(a, adadelta_span, 2 * a->n); }

FNN_CLONES_V4 static void radam_span(const fnn_optim_args *a, float *restrict w, const float *restrict g,
                                     float *restrict m, float *restrict v, float *s2, int64_t lo, int64_t hi) {
    (void)s2;
    const float f = a->lr, b1 = a->beta1, b2 = a->beta2, eps = a->eps, wd = a->wd;
    if (a->rectified) for (int64_t i = lo; i < hi; i++) fnn_rule_radam(i, w, g, m, v, f, b1, b2, eps, wd, 1);
    else for (int64_t i = lo; i < hi; i++) fnn_rule_radam(i, w, g, m, v, f, b1, b2, eps, wd, 0);
}
static int radam_cpu(int ordinal, const fnn_optim_args *a) { (void)ordinal; return run(a, radam_span, 2 * a->n); }

FNN_CLONES_V4 static void lion_span(const fnn_optim_args *a, float *restrict w, const float *restrict g,
                                    float *restrict m, float *s1, float *s2, int64_t lo, int64_t hi) {
    (void)s1, (void)s2;
    const float lr = a->lr, b1 = a->beta1, b2 = a->beta2, decay = a->decay;
    for (int64_t i = lo; i < hi; i++) fnn_rule_lion(i, w, g, m, lr, b1, b2, decay);
}
static int lion_cpu(int ordinal, const fnn_optim_args *a) { (void)ordinal; return run(a, lion_span, a->n); }

static int decay_cpu(int ordinal, const fnn_optim_args *a) {
    (void)ordinal;
    float *w = a->w, f = a->decay;
    for (int64_t i = 0; i < a->n; i++) w[i] *= f;
    return FNN_STATUS_OK;
}
static int lerp_cpu(int ordinal, const fnn_optim_args *a) {
    (void)ordinal;
    float *s = a->w, wgt = a->weight;
    const float *t = a->g;
    for (int64_t i = 0; i < a->n; i++) s[i] += wgt * (t[i] - s[i]);
    return FNN_STATUS_OK;
}

const fnn_optim_row fnn_cpu_optim_rows[] = {
    {"sgd", sgd_cpu, NULL}, {"adam", adam_cpu, adam_many_cpu}, {"rmsprop", rmsprop_cpu, NULL},
    {"adagrad", adagrad_cpu, NULL}, {"adadelta", adadelta_cpu, NULL}, {"radam", radam_cpu, NULL},
    {"lion", lion_cpu, NULL}, {"decay", decay_cpu, NULL}, {"lerp", lerp_cpu, NULL}, {NULL, NULL, NULL},
};
