/* loss_ops.h: the loss family's formulas, written once for core/ops/loss.c (the CPU rows) and
 * cuda/loss.cu (the GPU's kernels; the host emulation compiles the same), as elementwise_ops.h's
 * are for the elementwise family: in the M_* math names, which each side defines before it
 * includes this file (the CPU: core/fastmath.h's functions; the GPU: its fast-math intrinsics),
 * with FNN_MAP_FN, the includer's function qualifiers. These need M_EXP, M_LOG1P, M_ABS, M_SEL
 * (softplus, elementwise_ops.h's) and M_SIGMOID. A loop that only one side runs (the CPU's
 * vectorized rows) stays with it; the numbers it computes are the ones written here. */
#ifndef FASTNN_LOSS_OPS_H
#define FASTNN_LOSS_OPS_H
#include "elementwise_ops.h"
#include <math.h>
#include <stdint.h>

/* softplus(-x) = max(-x, 0) + log1p(e^-|x|): no overflow for any x */
FNN_MAP_FN float fnn_loss_softplus_neg(float x) { return fnn_map_softplus(-x); }

/* bce_with_logits' loss of element i, unweighted: (1 - t) x + (1 + (pw - 1) t) softplus(-x), with pw
 * the pos_weight (NULL: 1) */
FNN_MAP_FN float fnn_loss_bcel(float x, float t, const float *pw, int64_t i) {
    const float lw = pw ? 1.0f + (pw[i] - 1.0f) * t : 1.0f;
    return (1.0f - t) * x + lw * fnn_loss_softplus_neg(x);
}
/* its gradients for the scale s (the output's gradient times the weight), pw1 = pw - 1 (0 without):
 * dx = ((1 - t) - (1 + pw1 t) sigmoid(-x)) s, which is (sigmoid(x) - t) s without pw;
 * dt = (pw1 softplus(-x) - x) s */
FNN_MAP_FN float fnn_loss_bcel_dx(float x, float t, float pw1, float s) {
    return ((1.0f - t) - (1.0f + pw1 * t) * M_SIGMOID(-x)) * s;
}
FNN_MAP_FN float fnn_loss_bcel_dt(float x, float pw1, float s) { return (pw1 * fnn_loss_softplus_neg(x) - x) * s; }

/* ---- softmax along a row of n logits `step` apart (cross_entropy) ----
 * the max, the sum of e^(x - max), the softmax e^(x - max) / sum and the log-sum-exp max + log(sum) */

/* the row's max; 0 for a row of -inf (no inf - inf) */
FNN_MAP_FN float fnn_loss_row_max(const float *x, int64_t n, int64_t step) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; j++) mx = fmaxf(mx, x[j * step]);
    return mx == -INFINITY ? 0.0f : mx;
}
/* sum_j e^(x_j - mx); with e, each term kept at e[j estep] too (the CPU then scales them into the
 * softmax, fnn_loss_softmax_scale; the GPU makes them again, fnn_loss_softmax_row, rather than reread) */
FNN_MAP_FN float fnn_loss_row_sumexp(const float *x, int64_t n, int64_t step, float mx, float *e, int64_t estep) {
    float sum = 0;
    if (e) for (int64_t j = 0; j < n; j++) sum += (e[j * estep] = M_EXP(x[j * step] - mx));
    else for (int64_t j = 0; j < n; j++) sum += M_EXP(x[j * step] - mx);
    return sum;
}
/* the softmax from the kept terms: e[j estep] /= sum (as e * (1 / sum)) */
FNN_MAP_FN void fnn_loss_softmax_scale(float *e, int64_t estep, int64_t n, float sum) {
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; j++) e[j * estep] *= inv;
}
/* the softmax made anew: p[j pstep] = e^(x_j - mx) * (1 / sum) */
FNN_MAP_FN void fnn_loss_softmax_row(float *p, int64_t pstep, const float *x, int64_t n, int64_t step, float mx,
                                     float sum) {
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; j++) p[j * pstep] = M_EXP(x[j * step] - mx) * inv;
}
/* the log-sum-exp, in double */
FNN_MAP_FN double fnn_loss_lse(float mx, float sum) { return (double)mx + log((double)sum); }
/* cross_entropy's loss of a site with target y and weight wy: wy (lse - x_y); with label smoothing e,
 * (1 - e) that + e / C (lse W - sx), W the summed class weights and sx = sum_c w_c x_c */
FNN_MAP_FN double fnn_loss_ce(double lse, double xy, double wy, double smooth, int64_t C, double wall, double sx) {
    const double l = wy * (lse - xy);
    return smooth > 0 ? (1 - smooth) * l + smooth / (double)C * (lse * wall - sx) : l;
}

#endif
