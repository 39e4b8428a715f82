/* loss.cu: the losses of core/ops/loss.c on the GPU, forward beside backward: the class losses
 * (cross_entropy, nll_loss) and the elementwise ones (mse_loss, binary_cross_entropy, bce_with_logits).
 * Class losses: a thread per prediction site of contiguous x [N, C, D] (site i = n D + s, class c at
 * (n C + c) D + s); int64 targets are read on the device, so a bad id cannot raise without a host
 * read: its site's loss and gradient become nan instead (PyTorch raises a device-side assert).
 * The per-site losses and weights are summed by the core through the backend's reduce. */
#include "common.cuh"

/* the 0-based class of site i: -1 ignored, -2 outside 1..C */
__device__ __forceinline__ int64_t class_of(const int64_t *t, int64_t i, const fnn_class_args &a) {
    int64_t v = t[i];
    if (a.has_ignore && v == a.ignore) return -1;
    return v >= 1 && v <= a.cols ? v - 1 : -2;
}

/* loss = w_y (lse - x_y), smoothed: (1-e) loss + e/C (lse W - sum_c w_c x_c) (cross_entropy);
 * loss = -w_y x_y (nll) */
__global__ void class_loss_kernel(int op, float *loss, float *wy, float *probs, const float *x, const int64_t *t,
                                  const float *w, fnn_class_args a) {
    const int64_t C = a.cols, D = a.inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.sites; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t n = i / D, s = i - n * D, y = class_of(t, i, a);
        const float *xi = x + n * C * D + s;
        float *pi = probs ? probs + n * C * D + s : NULL;
        if (y < 0) {   /* ignored: no loss, no weight; bad: nan */
            loss[i] = y == -1 ? 0.0f : NAN;
            wy[i] = y == -1 ? 0.0f : NAN;
            if (pi) for (int64_t j = 0; j < C; j++) pi[j * D] = y == -1 ? 0.0f : NAN;
            continue;
        }
        const float wv = w ? w[y] : 1.0f;
        wy[i] = wv;
        if (op == FNN_CLS_NLL) { loss[i] = -wv * xi[y * D]; continue; }
        float mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < C; j++) mx = fmaxf(mx, xi[j * D]);
        if (mx == -INFINITY) mx = 0;   /* a row of -inf: avoid inf - inf */
        for (int64_t j = 0; j < C; j++) sum += __expf(xi[j * D] - mx);
        if (pi) {
            const float inv = 1.0f / sum;
            for (int64_t j = 0; j < C; j++) pi[j * D] = __expf(xi[j * D] - mx) * inv;
        }
        const double lse = (double)mx + log((double)sum);
        double l = wv * (lse - (double)xi[y * D]);
        if (a.smooth > 0) {
            double sx = 0, wall = 0;
            for (int64_t j = 0; j < C; j++) {
                const double wj = w ? w[j] : 1.0;
                sx += wj * xi[j * D];
                wall += wj;
            }
            l = (1 - a.smooth) * l + a.smooth / (double)C * (lse * wall - sx);
        }
        loss[i] = (float)l;
    }
}

/* with s the site's scale (g[i], g / sum w_y or g): cross_entropy dx_c = s (p_c ((1-e) w_y + e W / C)
 * - (1-e) w_y [c = y] - e w_c / C); nll dx_c = -s w_y [c = y] */
__global__ void class_loss_grad_kernel(int op, float *dx, const float *probs, const int64_t *t, const float *w,
                                       const float *g, const float *den, fnn_class_args a) {
    const int64_t C = a.cols, D = a.inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.sites; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t n = i / D, s = i - n * D, y = class_of(t, i, a);
        float *di = dx + n * C * D + s;
        if (y < 0 || op == FNN_CLS_NLL) {
            for (int64_t j = 0; j < C; j++) di[j * D] = y == -2 ? NAN : 0.0f;
            if (y < 0) continue;
        }
        const float sc = a.reduction == FNN_REDUCTION_NONE ? g[i] : den ? g[0] / den[0] : g[0];
        const double wv = w ? w[y] : 1.0;
        if (op == FNN_CLS_NLL) { di[y * D] = (float)(-wv * sc); continue; }
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

/* softplus(-x) = max(-x, 0) + log1p(e^-|x|): no overflow for any x */
__device__ __forceinline__ float ew_softplus_neg(float x) { return fmaxf(-x, 0.0f) + log1pf(__expf(-fabsf(x))); }

/* loss[i]: (x - t)^2; -w (t log p + (1 - t) log(1 - p)) with the logs clamped at -100 (a p outside
 * [0, 1] gives nan: the CPU's check needs a host read); w ((1 - t) x + (1 + (pw - 1) t) softplus(-x)) */
__global__ void ew_loss_kernel(int op, float *loss, const float *x, const float *t, const float *w, const float *pw,
                               int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float xi = x[i], ti = t[i];
        float l;
        if (op == FNN_EWL_MSE) {
            const float d = xi - ti;
            l = d * d;
        } else if (op == FNN_EWL_BCE) {
            const float lp = fmaxf(__logf(xi), -100.0f), lq = fmaxf(__logf(1.0f - xi), -100.0f);
            l = xi >= 0.0f && xi <= 1.0f ? -(ti * lp + (1.0f - ti) * lq) : NAN;
        } else {
            const float lw = pw ? 1.0f + (pw[i] - 1.0f) * ti : 1.0f;
            l = (1.0f - ti) * xi + lw * ew_softplus_neg(xi);
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
        if (op == FNN_EWL_MSE) {
            const float d = (xi - ti) * s;
            if (dx) dx[i] = d;
            if (dt) dt[i] = -d;
        } else if (op == FNN_EWL_BCE) {
            if (dx) dx[i] = (xi - ti) / fmaxf(xi * (1.0f - xi), 1e-12f) * s;
            if (dt) dt[i] = (fmaxf(__logf(1.0f - xi), -100.0f) - fmaxf(__logf(xi), -100.0f)) * s;
        } else {
            const float pw1 = pw ? pw[i] - 1.0f : 0.0f;
            if (dx) dx[i] = ((1.0f - ti) - (1.0f + pw1 * ti) / (1.0f + __expf(xi))) * s;
            if (dt) dt[i] = (pw1 * ew_softplus_neg(xi) - xi) * s;
        }
    }
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
static const char *class_name(int op) { return op == FNN_CLS_NLL ? "nll_loss" : "cross_entropy"; }

int fnn_cuda_class_loss(int ordinal, int op, float *loss, float *wy, float *probs, const float *x, const int64_t *t,
                        const float *w, const fnn_class_args *a) {
    if (a->sites == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(class_name(op), ordinal));
    FNN_LAUNCH(class_loss_kernel, fnn_cuda_blocks(a->sites), FNN_CUDA_THREADS, op, loss, wy, probs, x, t, w, *a);
    FNN_CUDA_CHECK(class_name(op), cudaGetLastError());
    return FNN_STATUS_OK;
}

int fnn_cuda_class_loss_grad(int ordinal, int op, float *dx, const float *probs, const int64_t *t, const float *w,
                             const float *g, const float *den, const fnn_class_args *a) {
    if (a->sites == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(class_name(op), ordinal));
    FNN_LAUNCH(class_loss_grad_kernel, fnn_cuda_blocks(a->sites), FNN_CUDA_THREADS, op, dx, probs, t, w, g, den, *a);
    FNN_CUDA_CHECK(class_name(op), cudaGetLastError());
    return FNN_STATUS_OK;
}

int fnn_cuda_ew_loss(int ordinal, int op, float *loss, const float *x, const float *t, const float *w, const float *pw,
                     int64_t n) {
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("loss", ordinal));
    FNN_LAUNCH(ew_loss_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, op, loss, x, t, w, pw, n);
    FNN_CUDA_CHECK("loss", cudaGetLastError());
    return FNN_STATUS_OK;
}

int fnn_cuda_ew_loss_grad(int ordinal, int op, float *dx, float *dt, const float *x, const float *t, const float *w,
                          const float *pw, const float *g, int per_elem, float k, int64_t n) {
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("loss", ordinal));
    FNN_LAUNCH(ew_loss_grad_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, op, dx, dt, x, t, w, pw, g, per_elem, k, n);
    FNN_CUDA_CHECK("loss", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
