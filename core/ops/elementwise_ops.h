/* elementwise_ops.h: the codes of the elementwise row kernels, shared by
 * core/ops/elementwise.c (which maps each row function to its code) and
 * cuda/map.cu (which has a device expression for each). One X entry per row
 * of elementwise.c, named as the row without "_row": a row missing here runs
 * on the CPU only, and a code without a device expression fails to compile.
 * Unary ops come in pairs: name_f (forward, a = x) and name_g (gradient:
 * a = g, b = x, c = y). */
#ifndef FASTNN_ELEMENTWISE_OPS_H
#define FASTNN_ELEMENTWISE_OPS_H

#define FNN_MAP_OPS(X)                                                                              \
    /* binary, and the rows their gradients use (a = g, b = x0, c = x1) */                           \
    X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum) X(copy) X(neg)                          \
    X(g_times_c) X(g_times_b) X(g_over_c) X(div_d1) X(pow_d0) X(pow_d1)                              \
    X(max_d0) X(max_d1) X(min_d0) X(min_d1)                                                          \
    /* comparisons */                                                                                \
    X(eq) X(ne) X(lt) X(le) X(gt) X(ge)                                                              \
    /* with a number k0 */                                                                           \
    X(add_s) X(mul_s) X(rsub_s) X(rdiv_s) X(pow_s) X(rpow_s)                                         \
    X(g_times_k) X(rdiv_s_d) X(pow_s_d) X(rpow_s_d)                                                  \
    /* unary */                                                                                      \
    X(neg_f) X(neg_g) X(abs_f) X(abs_g) X(exp_f) X(exp_g) X(log_f) X(log_g)                          \
    X(sqrt_f) X(sqrt_g) X(rsqrt_f) X(rsqrt_g) X(sin_f) X(sin_g) X(cos_f) X(cos_g)                    \
    X(tanh_f) X(tanh_g) X(sigmoid_f) X(sigmoid_g) X(relu_f) X(relu_g) X(gelu_f) X(gelu_g)            \
    X(gelu_tanh_f) X(gelu_tanh_g) X(silu_f) X(silu_g) X(softplus_f) X(softplus_g)                    \
    X(clamp_f) X(clamp_g) X(leaky_relu_f) X(leaky_relu_g) X(elu_f) X(elu_g) X(selu_f) X(selu_g)      \
    X(celu_f) X(celu_g) X(mish_f) X(mish_g) X(hardsigmoid_f) X(hardsigmoid_g)                        \
    X(hardswish_f) X(hardswish_g) X(softsign_f) X(softsign_g)                                        \
    /* where (a = cond) and its gradients (a = g, b = cond) */                                       \
    X(where) X(where_d1) X(where_d2)

#define FNN_MAP_ENUM_(name) FNN_MAP_##name,
enum { FNN_MAP_OPS(FNN_MAP_ENUM_) FNN_MAP_COUNT };
#undef FNN_MAP_ENUM_

#endif
