/* loss.cu: the losses of core/ops/loss.c on the GPU, forward beside backward: the class losses
 * (cross_entropy, nll_loss) and the elementwise ones (mse_loss, binary_cross_entropy, bce_with_logits).
 * Class losses: a thread per prediction site of x [N, C, D] (site i = n D + s, class c of x at
 * n sn + s sd + c sc; the softmax and dx contiguous, at (n C + c) D + s); int64 targets are read on
 * the device, so a bad id cannot raise without a host read: its site's loss and gradient become
 * nan instead (PyTorch raises a device-side assert). The rows sum the per-site losses and weights
 * with reduction.cu's fnn_cuda_reduce: nothing is read back to the host.
 *
 * defines: fnn_cuda_loss_rows (the family's rows, core/ops/loss.h) */
#include "common.cuh"
#include "ops/loss.h"
/* the math core/ops/loss_ops.h's formulas call, on the GPU: the fast-math intrinsics */
#define M_EXP __expf
#define M_LOG1P log1pf
#define M_ABS fabsf
#define M_SEL(c, x, y) ((c) ? (x) : (y))
#undef M_SIGMOID   /* the emulation (spec/gpu/emulated_backend.cpp) has map.cu's in the same unit */
#define M_SIGMOID(x) (1.0f / (1.0f + __expf(-(x))))
#define FNN_MAP_FN __device__ __forceinline__
#include "ops/loss_ops.h"

/* the kernels' op codes */
enum { CLS_CROSS_ENTROPY, CLS_NLL };
enum { EWL_MSE, EWL_BCE, EWL_BCEL };

/* the class losses' geometry (sites = N D, C classes, D inner; x's steps sn, sc, sd), ignore_index,
 * smoothing, FNN_REDUCTION_* */
typedef struct {
    int64_t sites, cols, inner, ignore;
    int has_ignore, reduction;
    double smooth;
    int64_t sn, sc, sd;
} class_args;

/* the 0-based class of site i: -1 ignored, -2 outside 1..C */
__device__ __forceinline__ int64_t class_of(const int64_t *t, int64_t i, const class_args &a) {
    int64_t v = t[i];
    if (a.has_ignore && v == a.ignore) return -1;
    return v >= 1 && v <= a.cols ? v - 1 : -2;
}

/* loss = w_y (lse - x_y), smoothed: (1-e) loss + e/C (lse W - sum_c w_c x_c) (cross_entropy);
 * loss = -w_y x_y (nll) */
__global__ void class_loss_kernel(int op, float *loss, float *wy, float *probs, const float *x, const int64_t *t,
                                  const float *w, class_args a) {
    const int64_t C = a.cols, D = a.inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.sites; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t n = i / D, s = i - n * D, y = class_of(t, i, a);
        const float *xi = x + n * a.sn + s * a.sd;
        float *pi = probs ? probs + n * C * D + s : NULL;
        if (y < 0) {   /* ignored: no loss, no weight; bad: nan */
            loss[i] = y == -1 ? 0.0f : NAN;
            wy[i] = y == -1 ? 0.0f : NAN;
            if (pi) for (int64_t j = 0; j < C; j++) pi[j * D] = y == -1 ? 0.0f : NAN;
            continue;
        }
        const float wv = w ? w[y] : 1.0f;
        wy[i] = wv;
        if (op == CLS_NLL) { loss[i] = -wv * xi[y * a.sc]; continue; }
        /* the softmax made anew from the max and the sum rather than kept (loss_ops.h) */
        const float mx = fnn_loss_row_max(xi, C, a.sc), sum = fnn_loss_row_sumexp(xi, C, a.sc, mx, NULL, 0);
        if (pi) fnn_loss_softmax_row(pi, D, xi, C, a.sc, mx, sum);
        const double lse = fnn_loss_lse(mx, sum);
        double sx = 0, wall = 0;
        if (a.smooth > 0) {
            for (int64_t j = 0; j < C; j++) {
                const double wj = w ? w[j] : 1.0;
                sx += wj * xi[j * a.sc];
                wall += wj;
            }
        }
        loss[i] = (float)fnn_loss_ce(lse, (double)xi[y * a.sc], wv, a.smooth, C, wall, sx);
    }
}

/* with s the site's scale (g[i], g / sum w_y or g): cross_entropy dx_c = s (p_c ((1-e) w_y + e W / C)
 * - (1-e) w_y [c = y] - e w_c / C); nll dx_c = -s w_y [c = y] */
__global__ void class_loss_grad_kernel(int op, float *dx, const float *probs, const int64_t *t, const float *w,
                                       const float *g, const float *den, class_args a) {
    const int64_t C = a.cols, D = a.inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.sites; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t n = i / D, s = i - n * D, y = class_of(t, i, a);
        float *di = dx + n * C * D + s;
        if (y < 0 || op == CLS_NLL) {
            for (int64_t j = 0; j < C; j++) di[j * D] = y == -2 ? NAN : 0.0f;
            if (y < 0) continue;
        }
        const float sc = a.reduction == FNN_REDUCTION_NONE ? g[i] : den ? g[0] / den[0] : g[0];
        const double wv = w ? w[y] : 1.0;
        if (op == CLS_NLL) { di[y * D] = (float)(-wv * sc); continue; }
        const float *pi = probs + n * C * D + s;
        double wall = (double)C;
        if (a.smooth > 0 && w) { wall = 0; for (int64_t j = 0; j < C; j++) wall += w[j]; }
        const float ka = (float)(((1 - a.smooth) * wv + a.smooth * wall / (double)C) * sc);
        const float kb = (float)((1 - a.smooth) * wv * sc), kc = (float)(a.smooth / (double)C * sc);
        for (int64_t j = 0; j < C; j++)
            di[j * D] = pi[j * D] * ka - (a.smooth > 0 ? (w ? w[j] : 1.0f) * kc : 0.0f);
        di[y * D] -= kb;
    }
}

/* ---- the elementwise losses (mse_loss, binary_cross_entropy, bce_with_logits): a thread per element ---- */

/* loss[i]: (x - t)^2; -w (t log p + (1 - t) log(1 - p)) with the logs clamped at -100 (a p outside
 * [0, 1] gives nan: the CPU's check needs a host read); w ((1 - t) x + (1 + (pw - 1) t) softplus(-x)) */
__global__ void ew_loss_kernel(int op, float *loss, const float *x, const float *t, const float *w, const float *pw,
                               int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float xi = x[i], ti = t[i];
        float l;
        if (op == EWL_MSE) {
            const float d = xi - ti;
            l = d * d;
        } else if (op == EWL_BCE) {
            const float lp = fmaxf(__logf(xi), -100.0f), lq = fmaxf(__logf(1.0f - xi), -100.0f);
            l = xi >= 0.0f && xi <= 1.0f ? -(ti * lp + (1.0f - ti) * lq) : NAN;
        } else {
            l = fnn_loss_bcel(xi, ti, pw, i);
        }
        loss[i] = w ? l * w[i] : l;
    }
}

/* with s = (g[i] or g[0] k) w: mse dx = 2 (x - t) s = -dt (k holds the 2 / n); bce dx = (x - t) /
 * max(x (1 - x), 1e-12) s, dt = (log(1 - x) - log x) s; bce_with_logits dx = ((1 - t) - (1 + (pw - 1) t)
 * sigmoid(-x)) s, dt = ((pw - 1) softplus(-x) - x) s */
__global__ void ew_loss_grad_kernel(int op, float *dx, float *dt, const float *x, const float *t, const float *w,
                                    const float *pw, const float *g, int per_elem, float k, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float s = per_elem ? g[i] : g[0] * k;
        if (w) s *= w[i];
        const float xi = x[i], ti = t[i];
        if (op == EWL_MSE) {
            const float d = (xi - ti) * s;
            if (dx) dx[i] = d;
            if (dt) dt[i] = -d;
        } else if (op == EWL_BCE) {
            if (dx) dx[i] = (xi - ti) / fmaxf(xi * (1.0f - xi), 1e-12f) * s;
            if (dt) dt[i] = (fmaxf(__logf(1.0f - xi), -100.0f) - fmaxf(__logf(xi), -100.0f)) * s;
        } else {
            const float pw1 = pw ? pw[i] - 1.0f : 0.0f;
            if (dx) dx[i] = fnn_loss_bcel_dx(xi, ti, pw1, s);
            if (dt) dt[i] = fnn_loss_bcel_dt(xi, pw1, s);
        }
    }
}

/* y[0] /= den[0]: a class loss's mean, its total over the summed weights, on the device */
__global__ void mean_div_kernel(float *y, const float *den) { y[0] = y[0] / den[0]; }

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
static const char *class_name(int op) { return op == CLS_NLL ? "nll_loss" : "cross_entropy"; }

static int class_loss(int ordinal, int op, float *loss, float *wy, float *probs, const float *x, const int64_t *t,
                      const float *w, const class_args *a) {
    if (a->sites == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(class_name(op), ordinal));
    FNN_LAUNCH(class_loss_kernel, fnn_cuda_blocks(a->sites), FNN_CUDA_THREADS, op, loss, wy, probs, x, t, w, *a);
    FNN_CUDA_CHECK(class_name(op), cudaGetLastError());
    return FNN_STATUS_OK;
}

static int class_loss_grad(int ordinal, int op, float *dx, const float *probs, const int64_t *t, const float *w,
                           const float *g, const float *den, const class_args *a) {
    if (a->sites == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(class_name(op), ordinal));
    FNN_LAUNCH(class_loss_grad_kernel, fnn_cuda_blocks(a->sites), FNN_CUDA_THREADS, op, dx, probs, t, w, g, den, *a);
    FNN_CUDA_CHECK(class_name(op), cudaGetLastError());
    return FNN_STATUS_OK;
}

static int mean_div(int ordinal, int op, float *y, const float *den) {
    FNN_TRY(fnn_cuda_use_device(class_name(op), ordinal));
    FNN_LAUNCH(mean_div_kernel, 1, 1, y, den);
    FNN_CUDA_CHECK(class_name(op), cudaGetLastError());
    return FNN_STATUS_OK;
}

static int ew_loss(int ordinal, int op, float *loss, const float *x, const float *t, const float *w, const float *pw,
                   int64_t n) {
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("loss", ordinal));
    FNN_LAUNCH(ew_loss_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, op, loss, x, t, w, pw, n);
    FNN_CUDA_CHECK("loss", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int ew_loss_grad(int ordinal, int op, float *dx, float *dt, const float *x, const float *t, const float *w,
                        const float *pw, const float *g, int per_elem, float k, int64_t n) {
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("loss", ordinal));
    FNN_LAUNCH(ew_loss_grad_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, op, dx, dt, x, t, w, pw, g, per_elem, k, n);
    FNN_CUDA_CHECK("loss", cudaGetLastError());
    return FNN_STATUS_OK;
}


/* ---- the rows (core/ops/loss.h): the per-site / per-element losses into scratch, summed on the device ---- */

/* n floats of scratch on the device (one at least, so an empty loss still has a pointer) */
static float *scratch(int ordinal, int64_t n, int64_t *bytes) {
    *bytes = (n > 0 ? n : 1) * (int64_t)sizeof(float);
    return (float *)fnn_alloc(fnn_make_device(FNN_DEVICE_CUDA, ordinal), *bytes);
}
static void scratch_free(int ordinal, float *p, int64_t bytes) {
    fnn_free(fnn_make_device(FNN_DEVICE_CUDA, ordinal), p, bytes);
}

static class_args class_args_of(const fnn_loss_args *a) {
    class_args c = {a->n, a->cols, a->inner, a->ignore, a->has_ignore, a->reduction, a->smooth, a->sn, a->sc, a->sd};
    return c;
}

/* per-site losses (out itself for NONE) and weights w_y, then out = their sum, or / (wsum = sum of w_y) */
template <int OP> static int class_forward(int ordinal, fnn_loss_args *a) {
    const class_args c = class_args_of(a);
    const bool reduced = a->reduction != FNN_REDUCTION_NONE;
    int64_t bytes = 0;
    float *wy = scratch(ordinal, a->n, &bytes), *per = reduced && wy ? scratch(ordinal, a->n, &bytes) : NULL;
    int rc = !wy || (reduced && !per) ? fnn_last_status() : FNN_STATUS_OK;
    if (!rc) rc = class_loss(ordinal, OP, reduced ? per : a->out, wy, a->probs, a->x, a->ids, a->w, &c);
    if (!rc && reduced) rc = fnn_cuda_reduce(ordinal, FNN_RED_SUM, a->out, NULL, per, 1, a->n, 1, 1.0, 0);
    if (!rc && a->reduction == FNN_REDUCTION_MEAN) {   /* total / sum of w_y, on the device */
        rc = fnn_cuda_reduce(ordinal, FNN_RED_SUM, a->wsum, NULL, wy, 1, a->n, 1, 1.0, 0);
        if (!rc) rc = mean_div(ordinal, OP, a->out, a->wsum);
    }
    scratch_free(ordinal, per, bytes);
    scratch_free(ordinal, wy, bytes);
    return rc;
}
template <int OP> static int class_backward(int ordinal, fnn_loss_args *a) {
    const class_args c = class_args_of(a);
    return class_loss_grad(ordinal, OP, a->out, a->probs, a->ids, a->w, a->g, a->wsum, &c);
}

/* per-element losses (out itself for NONE), then out = their sum, scaled by 1/n for the mean (empty: nan) */
template <int OP> static int ew_forward(int ordinal, fnn_loss_args *a) {
    if (a->reduction == FNN_REDUCTION_NONE) return ew_loss(ordinal, OP, a->out, a->x, a->t, a->w, a->pw, a->n);
    int64_t bytes = 0;
    float *per = scratch(ordinal, a->n, &bytes);
    int rc = per ? ew_loss(ordinal, OP, per, a->x, a->t, a->w, a->pw, a->n) : fnn_last_status();
    if (!rc) rc = fnn_cuda_reduce(ordinal, FNN_RED_SUM, a->out, NULL, per, 1, a->n, 1,
                                  a->reduction == FNN_REDUCTION_MEAN ? 1.0 / (double)a->n : 1.0, 0);
    scratch_free(ordinal, per, bytes);
    return rc;
}
/* the scale g[i] (NONE) or g[0] k: k = 1/n for the mean (mse_loss: 2/n), else 1 */
template <int OP> static int ew_backward(int ordinal, fnn_loss_args *a) {
    const double k = OP == EWL_MSE ? 2.0 / (double)a->n : a->reduction == FNN_REDUCTION_MEAN ? 1.0 / (double)a->n : 1.0;
    return ew_loss_grad(ordinal, OP, a->out, a->dt, a->x, a->t, a->w, a->pw, a->g, a->reduction == FNN_REDUCTION_NONE,
                        (float)k, a->n);
}

extern "C" const fnn_loss_row fnn_cuda_loss_rows[] = {
    {"cross_entropy", class_forward<CLS_CROSS_ENTROPY>, class_backward<CLS_CROSS_ENTROPY>, 0},
    {"nll_loss", class_forward<CLS_NLL>, class_backward<CLS_NLL>, 0},
    {"binary_cross_entropy", ew_forward<EWL_BCE>, ew_backward<EWL_BCE>, 0},
    {"bce_with_logits", ew_forward<EWL_BCEL>, ew_backward<EWL_BCEL>, 0},
    {"mse_loss", ew_forward<EWL_MSE>, ew_backward<EWL_MSE>, 0},
    {NULL, NULL, NULL, 0},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
