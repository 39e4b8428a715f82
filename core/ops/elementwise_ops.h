/* elementwise_ops.h: every per-element formula of the elementwise family, written once, for
 * core/ops/elementwise.c (the CPU rows) and cuda/map.cu (the GPU's expressions; the host
 * emulation compiles the same), and the FNN_MAP_* codes that name them in the "map" row's arguments (elementwise.h).
 *
 * A formula is an expression of a = x0, b = x1, c = x2 and the op's numbers k0, k1, written with
 * the M_* math names, which each side defines before it includes this file: on the CPU the
 * branch-free core/fastmath.h functions (so the rows vectorize), on the GPU the fast-math
 * intrinsics (spec/cuda_parity_spec.lua states the tolerance per op). So a formula cannot differ
 * between the two sides, and a new op is one line here:
 *   FNN_MAP_ROWS:  X(name, EXPR)        a row: binary ops, their gradient rows, comparisons, ops
 *                                       with a number, where
 *   FNN_MAP_UNARY: U(name, FWD, GRAD)   a unary op: forward (a = x) and gradient (a = g, b = x,
 *                                       c = y) rows name_f and name_g; elementwise.c makes its
 *                                       rows, backward rule and registry entry from this line,
 *                                       and for FNN_MAP_UNARY_PLAIN's its C entry point too.
 * The helpers the formulas share (softplus, GELU's derivative, ...) follow at the end, built
 * where the includer defines FNN_MAP_FN (its function qualifiers) first; softplus serves the loss
 * family's formulas too (loss_ops.h). */
#ifndef FASTNN_ELEMENTWISE_OPS_H
#define FASTNN_ELEMENTWISE_OPS_H

#define FNN_SELU_SCALE 1.0507009873554804934f
#define FNN_SELU_ALPHA 1.6732632423543772848f

#define FNN_MAP_ROWS(X)                                                                             \
    /* binary ops */                                                                                \
    X(add, a + b) X(sub, a - b) X(mul, a * b) X(div, M_DIV(a, b)) X(pow, powf(a, b))                \
    X(maximum, (a > b || isnan(a)) ? a : b) X(minimum, (a < b || isnan(a)) ? a : b)                 \
    X(copy, a) X(neg, -a)                                                                           \
    /* their gradient rows: a = g, b = the first input, c = the second */                           \
    X(g_times_c, a * c)                   /* mul: d/dx0 */                                          \
    X(g_times_b, a * b)                   /* mul: d/dx1 */                                          \
    X(g_over_c, M_DIV(a, c))              /* div: d/dx0 */                                          \
    X(div_d1, -a * b / (c * c))           /* div: d/dx1 */                                          \
    X(pow_d0, a * c * powf(b, c - 1.0f))                                                            \
    X(pow_d1, b > 0 ? a * powf(b, c) * M_LOG(b) : 0.0f)                                             \
    /* maximum/minimum: ties split evenly, as PyTorch */                                            \
    X(max_d0, b > c ? a : (b == c ? 0.5f * a : 0.0f)) X(max_d1, c > b ? a : (b == c ? 0.5f * a : 0.0f)) \
    X(min_d0, b < c ? a : (b == c ? 0.5f * a : 0.0f)) X(min_d1, c < b ? a : (b == c ? 0.5f * a : 0.0f)) \
    /* comparisons: 1 / 0 */                                                                        \
    X(eq, a == b ? 1.0f : 0.0f) X(ne, a != b ? 1.0f : 0.0f) X(lt, a < b ? 1.0f : 0.0f)              \
    X(le, a <= b ? 1.0f : 0.0f) X(gt, a > b ? 1.0f : 0.0f) X(ge, a >= b ? 1.0f : 0.0f)              \
    /* with a number k0, and their gradients (rpow_s_d: c = the saved output k0^x) */               \
    X(add_s, a + k0) X(mul_s, a * k0) X(rsub_s, k0 - a) X(rdiv_s, k0 / a) X(pow_s, powf(a, k0))     \
    X(rpow_s, powf(k0, a)) X(g_times_k, a * k0) X(rdiv_s_d, -a * k0 / (b * b))                      \
    X(pow_s_d, a * k0 * powf(b, k0 - 1.0f)) X(rpow_s_d, a * c * M_LOG(k0))                          \
    /* where (a = cond) and its gradients (a = g, b = cond) */                                      \
    X(where, a != 0 ? b : c) X(where_d1, b != 0 ? a : 0.0f) X(where_d2, b != 0 ? 0.0f : a)

/* a unary op without numbers: elementwise.c also makes its C entry point fnn_<name>(out, x) */
#define FNN_MAP_UNARY_PLAIN(U)                                                                      \
    /*  op          forward y(a)                                gradient dx(a = g, b = x, c = y) */ \
    U(abs,         M_ABS(a),                                    b > 0 ? a : (b < 0 ? -a : 0.0f))    \
    U(exp,         M_EXP(a),                                    a * c)                              \
    U(log,         M_LOG(a),                                    a / b)                              \
    U(sqrt,        sqrtf(a),                                    a * 0.5f / c)                       \
    U(rsqrt,       M_RSQRT(a),                                  a * -0.5f * c * c * c)              \
    U(sin,         M_SIN(a),                                    a * M_COS(b))                       \
    U(cos,         M_COS(a),                                    -a * M_SIN(b))                      \
    U(tanh,        M_TANH(a),                                   a * (1.0f - c * c))                 \
    U(sigmoid,     M_SIGMOID(a),                                a * c * (1.0f - c))                 \
    U(relu,        a > 0 ? a : 0.0f,                            b > 0 ? a : 0.0f)                   \
    U(gelu,        0.5f * a * (1.0f + M_ERF(a * 0.70710678f)),  a * fnn_map_gelu_grad(b))           \
    U(gelu_tanh,   fnn_map_gelu_tanh(a),                        a * fnn_map_gelu_tanh_grad(b))      \
    U(silu,        a * M_SIGMOID(a),                   a * (M_SIGMOID(b) * (1.0f + b * (1.0f - M_SIGMOID(b))))) \
    U(softplus,    fnn_map_softplus(a),                         a * M_SIGMOID(b))                   \
    U(selu,        FNN_SELU_SCALE * M_SEL(a > 0, a, FNN_SELU_ALPHA * M_EXPM1_NEG(a)),               \
                   M_SEL(b > 0, a * FNN_SELU_SCALE, a * (c + FNN_SELU_SCALE * FNN_SELU_ALPHA)))     \
    U(mish,        a * fnn_map_tanh_softplus(a),                a * fnn_map_mish_grad(b))           \
    U(hardsigmoid, fnn_map_hardsigmoid(a),                      M_SEL((b > -3.0f) & (b < 3.0f), a * (1.0f / 6.0f), 0.0f)) \
    U(hardswish,   a * fnn_map_hardsigmoid(a),                                                      \
                   M_SEL(b < -3.0f, 0.0f, M_SEL(b > 3.0f, a, a * (b * (1.0f / 3.0f) + 0.5f))))      \
    U(softsign,    a / (1.0f + M_ABS(a)),                       a / ((1.0f + M_ABS(b)) * (1.0f + M_ABS(b)))) \
    U(erf,         M_ERF(a),                                    a * 1.1283791671f * M_EXP(-(b * b)))

/* a unary op with numbers or another path (neg's int64 one): its entry point is written in
 * elementwise.c. k0 = clamp's low bound (k1 the high one), leaky_relu's negative_slope, elu's and
 * celu's alpha (celu's is never 0), logit's eps (< 0: none) */
#define FNN_MAP_UNARY_ARGS(U)                                                                       \
    /*  op          forward y(a)                                gradient dx(a = g, b = x, c = y) */ \
    U(neg,         -a,                                          -a)                                 \
    U(clamp,       a < k0 ? k0 : (a > k1 ? k1 : a),             (b >= k0 && b <= k1) ? a : 0.0f)    \
    U(leaky_relu,  M_SEL(a > 0, a, a * k0),                     M_SEL(b > 0, a, a * k0))            \
    U(elu,         M_SEL(a > 0, a, k0 * M_EXPM1_NEG(a)),        M_SEL(b > 0, a, a * (c + k0)))      \
    U(celu,        M_SEL(a > 0, a, k0 * M_EXPM1_NEG(a / k0)),   M_SEL(b > 0, a, a * M_EXP(b / k0))) \
    U(logit,       fnn_map_logit(a, k0),                        fnn_map_logit_grad(a, b, k0))

#define FNN_MAP_UNARY(U) FNN_MAP_UNARY_PLAIN(U) FNN_MAP_UNARY_ARGS(U)

/* the codes: one per row, a unary op's two rows as name_f and name_g */
#define FNN_MAP_CODE_ROW_(name, EXPR) FNN_MAP_##name,
#define FNN_MAP_CODE_UNARY_(name, FWD, GRAD) FNN_MAP_##name##_f, FNN_MAP_##name##_g,
enum { FNN_MAP_ROWS(FNN_MAP_CODE_ROW_) FNN_MAP_UNARY(FNN_MAP_CODE_UNARY_) FNN_MAP_COUNT };
#undef FNN_MAP_CODE_ROW_
#undef FNN_MAP_CODE_UNARY_

#endif

/* ---- the helpers the formulas share, in M_* terms; FNN_MAP_FN: the includer's qualifiers ---- */
/* softplus, which the loss family's formulas use too (loss_ops.h): built wherever FNN_MAP_FN is,
 * from M_SEL, M_LOG1P, M_EXP and M_ABS */
#if defined(FNN_MAP_FN) && !defined(FASTNN_ELEMENTWISE_SOFTPLUS)
#define FASTNN_ELEMENTWISE_SOFTPLUS
/* log(1 + e^x) = max(x, 0) + log1p(e^-|x|): nothing overflows, large x give x itself */
FNN_MAP_FN float fnn_map_softplus(float x) { return M_SEL(x > 0, x, 0.0f) + M_LOG1P(M_EXP(-M_ABS(x))); }
#endif
/* the others: built where the includer names the whole math (elementwise.c, cuda/map.cu) */
#if defined(FNN_MAP_FN) && defined(M_TANH) && defined(M_ERF_WITH) && !defined(FASTNN_ELEMENTWISE_HELPERS)
#define FASTNN_ELEMENTWISE_HELPERS
/* logit: log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps >= 0 (PyTorch's logit(x, eps));
 * its gradient g / (x (1 - x)), 0 where the clamp holds x (as PyTorch) */
FNN_MAP_FN float fnn_map_logit(float x, float eps) {
    float z = M_SEL(eps >= 0.0f, M_SEL(x < eps, eps, M_SEL(x > 1.0f - eps, 1.0f - eps, x)), x);
    return M_LOG(z / (1.0f - z));
}
FNN_MAP_FN float fnn_map_logit_grad(float g, float x, float eps) {
    return M_SEL(eps >= 0.0f && (x < eps || x > 1.0f - eps), 0.0f, g / (x * (1.0f - x)));
}
/* d/dx x Phi(x) = Phi(x) + x phi(x): one e^(-x^2/2) serves phi and erf's tail */
FNN_MAP_FN float fnn_map_gelu_grad(float x) {
    float z = x * 0.70710678f, e = M_EXP(-(z * z));
    return 0.5f * (1.0f + M_ERF_WITH(z, e)) + x * 0.3989422804f * e;
}
FNN_MAP_FN float fnn_map_gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + M_TANH(k * (x + 0.044715f * x * x * x)));
}
FNN_MAP_FN float fnn_map_gelu_tanh_grad(float x) {
    const float k = 0.7978845608028654f;
    float u = k * (x + 0.044715f * x * x * x), t = M_TANH(u);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
}
/* tanh(softplus(x)) = n / (n + 2) with n = e^x (e^x + 2); 1 in float32 beyond x = 20 */
FNN_MAP_FN float fnn_map_tanh_softplus(float x) {
    float e = M_EXP(M_SEL(x > 20.0f, 20.0f, x)), n = e * (e + 2.0f);
    return M_SEL(x > 20.0f, 1.0f, n / (n + 2.0f));
}
FNN_MAP_FN float fnn_map_mish_grad(float x) {
    float t = fnn_map_tanh_softplus(x);
    return t + x * M_SIGMOID(x) * (1.0f - t * t);
}
/* relu6(x + 3) / 6; nan stays nan */
FNN_MAP_FN float fnn_map_hardsigmoid(float x) {
    float v = x + 3.0f;
    v = M_SEL(v < 0.0f, 0.0f, v);
    return M_SEL(v > 6.0f, 6.0f, v) * (1.0f / 6.0f);
}
#endif
