// spec/gpu/emulated_pool.cpp: the device code of cuda/pool.cu and cuda/batch_norm.cu run on the host
// (spec/gpu/emulated.h; see emulated_backend.cpp). The pooling and upsampling kernels are
// grid-stride loops: a plain call runs the whole grid as one thread, with the index width the real
// launcher picks. The batch_norm kernels that reduce per channel run, in block mode, as one block of
// real host threads (barriers, warp shuffles) whose grid-stride loop covers every channel; in thread
// mode (short channels) and eval as plain grid-stride calls.
#include "emulated.h"
#include "pool_body.inc"   /* cut from cuda/pool.cu and batch_norm.cu by CMake */
#include "batch_norm_body.inc"

/* kernel<int32_t or int64_t>(args..., n), as POOL_LAUNCH in cuda/pool.cu */
#define M_POOL(kernel, n, ...)                                          \
    do {                                                                \
        if ((n) <= 0) return 0;                                         \
        if (pool_small(planes * in[0] * in[1] * in[2], planes * out[0] * out[1] * out[2])) kernel<int32_t>(__VA_ARGS__, (int32_t)(n));  \
        else kernel<int64_t>(__VA_ARGS__, (int64_t)(n));                \
        return 0;                                                       \
    } while (0)

static int m_max_pool(int, float *y, int32_t *idx, const float *x, int64_t planes, const int64_t *in,
                      const int64_t *out, const int64_t *k, const int64_t *s, const int64_t *p) {
    M_POOL(pool_max_kernel, planes * out[0] * out[1] * out[2], y, idx, x, pool_geom(planes, in, out, k, s, p, 0));
}
static int m_max_pool_grad(int, float *dx, const float *dy, const int32_t *idx, int64_t planes, const int64_t *in,
                           const int64_t *out, const int64_t *k, const int64_t *s, const int64_t *p) {
    M_POOL(pool_max_grad_kernel, planes * in[0] * in[1] * in[2], dx, dy, idx, pool_geom(planes, in, out, k, s, p, 0));
}
static int m_avg_pool(int, float *y, const float *x, int64_t planes, const int64_t *in, const int64_t *out,
                      const int64_t *k, const int64_t *s, const int64_t *p, int cip) {
    M_POOL(pool_avg_kernel, planes * out[0] * out[1] * out[2], y, x, pool_geom(planes, in, out, k, s, p, cip != 0));
}
static int m_avg_pool_grad(int, float *dx, const float *dy, int64_t planes, const int64_t *in, const int64_t *out,
                           const int64_t *k, const int64_t *s, const int64_t *p, int cip) {
    M_POOL(pool_avg_grad_kernel, planes * in[0] * in[1] * in[2], dx, dy, pool_geom(planes, in, out, k, s, p, cip != 0));
}
static int m_adaptive(int, float *y, const float *x, int64_t planes, int64_t H, int64_t W, int64_t Ho, int64_t Wo) {
    const int64_t n = planes * Ho * Wo;
    if (n <= 0) return 0;
    if (pool_small(planes * H * W, planes * Ho * Wo)) pool_adaptive_kernel<int32_t>(y, x, (int32_t)H, (int32_t)W, (int32_t)Ho, (int32_t)Wo, (int32_t)n);
    else pool_adaptive_kernel<int64_t>(y, x, H, W, Ho, Wo, n);
    return 0;
}
static int m_adaptive_grad(int, float *dx, const float *dy, int64_t planes, int64_t H, int64_t W, int64_t Ho,
                           int64_t Wo) {
    const int64_t n = planes * H * W;
    if (n <= 0) return 0;
    if (pool_small(planes * H * W, planes * Ho * Wo))
        pool_adaptive_grad_kernel<int32_t>(dx, dy, (int32_t)H, (int32_t)W, (int32_t)Ho, (int32_t)Wo, (int32_t)n);
    else pool_adaptive_grad_kernel<int64_t>(dx, dy, H, W, Ho, Wo, n);
    return 0;
}
static int m_nearest(int, float *y, const float *x, int64_t planes, const int64_t *in, const int64_t *out) {
    M_POOL(pool_nearest_kernel, planes * out[0] * out[1] * out[2], y, x, pool_geom(planes, in, out, NULL, NULL, NULL, 0));
}
static int m_nearest_grad(int, float *dx, const float *dy, int64_t planes, const int64_t *in, const int64_t *out) {
    M_POOL(pool_nearest_grad_kernel, planes * in[0] * in[1] * in[2], dx, dy,
           pool_geom(planes, in, out, NULL, NULL, NULL, 0));
}
static int m_bilinear(int, float *y, const float *x, int64_t planes, int64_t H, int64_t W, int64_t Ho, int64_t Wo,
                      int al) {
    const float sh = pool_linear_scale(H, Ho, al), sw = pool_linear_scale(W, Wo, al);
    const int64_t n = planes * Ho * Wo;
    if (n <= 0) return 0;
    if (pool_small(planes * H * W, planes * Ho * Wo))
        pool_bilinear_kernel<int32_t>(y, x, (int32_t)H, (int32_t)W, (int32_t)Ho, (int32_t)Wo, sh, sw, al != 0, (int32_t)n);
    else pool_bilinear_kernel<int64_t>(y, x, H, W, Ho, Wo, sh, sw, al != 0, n);
    return 0;
}
static int m_bilinear_grad(int, float *dx, const float *dy, int64_t planes, int64_t H, int64_t W, int64_t Ho,
                           int64_t Wo, int al) {
    const float sh = pool_linear_scale(H, Ho, al), sw = pool_linear_scale(W, Wo, al);
    const int64_t n = planes * H * W;
    if (n <= 0) return 0;
    if (pool_small(planes * H * W, planes * Ho * Wo))
        pool_bilinear_grad_kernel<int32_t>(dx, dy, (int32_t)H, (int32_t)W, (int32_t)Ho, (int32_t)Wo, sh, sw, al != 0,
                                           (int32_t)n);
    else pool_bilinear_grad_kernel<int64_t>(dx, dy, H, W, Ho, Wo, sh, sw, al != 0, n);
    return 0;
}

static int m_batch_norm(int, float *y, float *stats, float *bmean, float *bvar, const float *x, const float *w,
                        const float *b, const float *rm, const float *rv, int64_t N, int64_t C, int64_t S, int training,
                        double eps) {
    if (C == 0) return 0;
    if (training && bn_block_mode(N * S)) {
        run_block(bn_threads(N * S), [&] { bn_train_kernel<true>(y, stats, bmean, bvar, x, w, b, N, C, S, eps); });
    } else if (training) {
        bn_train_kernel<false>(y, stats, bmean, bvar, x, w, b, N, C, S, eps);
    } else {
        if (N * S > 0) bn_eval_kernel(y, x, w, b, rm, rv, N * C * S, C, S, eps);
        if (stats) bn_eval_stats_kernel(stats, rm, rv, C, eps);
    }
    return 0;
}
static int m_batch_norm_grad(int, float *dx, float *dw, float *db, const float *g, const float *x, const float *w,
                             const float *stats, int64_t N, int64_t C, int64_t S, int training) {
    if (C == 0) return 0;
    if (bn_block_mode(N * S))
        run_block(bn_threads(N * S), [&] { bn_grad_kernel<true>(dx, dw, db, g, x, w, stats, N, C, S, training); });
    else bn_grad_kernel<false>(dx, dw, db, g, x, w, stats, N, C, S, training);
    return 0;
}

EMULATED_BACKEND_ADD(pool) {
    b->max_pool = m_max_pool;
    b->max_pool_grad = m_max_pool_grad;
    b->avg_pool = m_avg_pool;
    b->avg_pool_grad = m_avg_pool_grad;
    b->adaptive_avg_pool = m_adaptive;
    b->adaptive_avg_pool_grad = m_adaptive_grad;
    b->upsample_nearest = m_nearest;
    b->upsample_nearest_grad = m_nearest_grad;
    b->upsample_bilinear = m_bilinear;
    b->upsample_bilinear_grad = m_bilinear_grad;
    b->batch_norm = m_batch_norm;
    b->batch_norm_grad = m_batch_norm_grad;
}
