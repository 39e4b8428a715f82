/* conv_depthwise.c: direct kernels for depthwise convolutions (groups = input channels C > 1,
 * weight [C*m, 1, k...]), which conv.c runs instead of im2col + sgemm: there every group is a
 * gemm of m rows by kd*kh*kw columns, far too small for BLAS, after an im2col that copies the
 * input once per tap for one multiply-add per copied element. With o = c*m + j:
 *     y[n, o]  = b[o] + sum over taps t of w[o, t] * x[n, c] read at the tap's offset
 *     dx[n, c] = sum over j and taps of w[o, t] * dy[n, o] scattered back to the tap's offset
 *     dw[o, t] = sum over n of <dy[n, o], x[n, c] read at the tap's offset>,  db[o] = sum of dy[n, o]
 * The forward runs over the output planes (n, o), the input gradient over the input planes
 * (n, c), the weight gradient over the channels o (each owns its row of dw and its db): no two
 * threads write one element, and each thread's plane stays in cache while every tap adds onto it.
 * Rows go along W, the contiguous dim, so a stride-1 tap is one vectorized axpy or dot per row. */
#include "conv.h"
#include <string.h>

typedef struct {
    const conv_geom *g;
    const float *x, *w, *b, *dy;
    float *y, *dx, *dw, *db;
} dw_job;

/* a dot product in 8 lanes, so it vectorizes without reassociating a single sum; b NULL: the sum of a */
static float dot(const float *restrict a, const float *restrict b, int64_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    if (b)
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    else
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; k++) acc[k] += a[i + k];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++) s += b ? a[i] * b[i] : a[i];
    return s;
}

/* the same with b read every `step` elements */
static float dot_strided(const float *restrict a, const float *restrict b, int64_t step, int64_t n) {
    float acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) acc[k] += a[i + k] * b[(i + k) * step];
    float s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    for (; i < n; i++) s += a[i] * b[i * step];
    return s;
}

/* the rows of one tap (kz, ki, kj) over a plane: the output depths [z0, z1), rows [y0, y1) and
 * columns [x0, x1) whose input falls inside, and the input offset of output (z0, y0, x0) */
typedef struct { int64_t z0, z1, y0, y1, x0, x1, in0; } tap_rows;

static bool tap_of(const conv_geom *g, int64_t kz, int64_t ki, int64_t kj, tap_rows *t) {
    int64_t zoff = kz * g->dd - g->pd, yoff = ki * g->dh - g->ph, xoff = kj * g->dw - g->pw;
    conv_valid_range(g->D, g->Do, zoff, g->sd, &t->z0, &t->z1);
    conv_valid_range(g->H, g->Ho, yoff, g->sh, &t->y0, &t->y1);
    conv_valid_range(g->W, g->Wo, xoff, g->sw, &t->x0, &t->x1);
    if (t->z0 >= t->z1 || t->y0 >= t->y1 || t->x0 >= t->x1) return false;
    t->in0 = ((t->z0 * g->sd + zoff) * g->H + t->y0 * g->sh + yoff) * g->W + t->x0 * g->sw + xoff;
    return true;
}

/* every tap t of one output plane's weights w, as multiply-adds along rows: forward (adjoint false),
 * the output plane dst += w[t] * the input plane src read at the tap (xrow[ox*sw + kj*dw - pw]),
 * over the columns that read inside; adjoint, the input plane dst += w[t] * the output plane src
 * scattered back through the same reads. Inlined, so each caller's loops are its own */
static inline __attribute__((always_inline)) void tap_axpys(const conv_geom *g, const float *w, float *dst,
                                                            const float *src, bool adjoint) {
    const int64_t H = g->H, W = g->W, Ho = g->Ho, Wo = g->Wo, sw = g->sw;
    for (int64_t kz = 0, t = 0; kz < g->kd; kz++)
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++, t++) {
                tap_rows r;
                if (!tap_of(g, kz, ki, kj, &r)) continue;
                const float wv = w[t];
                const int64_t len = r.x1 - r.x0;
                for (int64_t od = r.z0; od < r.z1; od++)
                    for (int64_t oy = r.y0; oy < r.y1; oy++) {
                        const int64_t orow = (od * Ho + oy) * Wo + r.x0,
                                      irow = r.in0 + ((od - r.z0) * g->sd * H + (oy - r.y0) * g->sh) * W;
                        if (!adjoint) {
                            float *d = dst + orow;
                            const float *x = src + irow;
                            if (sw == 1) for (int64_t i = 0; i < len; i++) d[i] += wv * x[i];
                            else for (int64_t i = 0; i < len; i++) d[i] += wv * x[i * sw];
                        } else {
                            float *d = dst + irow;
                            const float *dy = src + orow;
                            if (sw == 1) for (int64_t i = 0; i < len; i++) d[i] += wv * dy[i];
                            else for (int64_t i = 0; i < len; i++) d[i * sw] += wv * dy[i];
                        }
                    }
            }
}

/* output planes [lo, hi) of y [N, O, Do, Ho, Wo]: the bias, then one pass per tap over the plane
 * (in cache) */
static void forward_planes(void *ctx, int64_t lo, int64_t hi) {
    const dw_job *j = ctx;
    const conv_geom *g = j->g;
    for (int64_t p = lo; p < hi; p++) {
        int64_t n = p / g->O, o = p % g->O, c = o / g->Og;
        float *y = j->y + p * g->L;
        const float bias = j->b ? j->b[o] : 0.0f;
        for (int64_t i = 0; i < g->L; i++) y[i] = bias;
        tap_axpys(g, j->w + o * g->taps, y, j->x + (n * g->C + c) * g->S, false);
    }
}

/* input planes [lo, hi) of dx [N, C, D, H, W]: the bias (or zero), then each of the channel's m
 * output planes scattered back through every tap (the adjoint of forward_planes' reads) */
static void input_grad_planes(void *ctx, int64_t lo, int64_t hi) {
    const dw_job *j = ctx;
    const conv_geom *g = j->g;
    const int64_t m = g->Og;
    for (int64_t p = lo; p < hi; p++) {
        int64_t n = p / g->C, c = p % g->C;
        float *dx = j->dx + p * g->S;
        const float bias = j->b ? j->b[c] : 0.0f;
        for (int64_t i = 0; i < g->S; i++) dx[i] = bias;
        for (int64_t jm = 0; jm < m; jm++) {
            int64_t o = c * m + jm;
            tap_axpys(g, j->w + o * g->taps, dx, j->dy + (n * g->O + o) * g->L, true);
        }
    }
}

/* channels [lo, hi): dw[o, t] = sum over images and rows of <dy row, x row at tap t>,
 * db[o] = sum of dy[., o] */
static void weight_grad_channels(void *ctx, int64_t lo, int64_t hi) {
    const dw_job *j = ctx;
    const conv_geom *g = j->g;
    const int64_t H = g->H, W = g->W, Ho = g->Ho, Wo = g->Wo, sw = g->sw, m = g->Og;
    for (int64_t o = lo; o < hi; o++) {
        int64_t c = o / m;
        float *dw = j->dw ? j->dw + o * g->taps : NULL;
        float db = 0;
        if (dw) memset(dw, 0, sizeof(float) * (size_t)g->taps);
        for (int64_t n = 0; n < g->N; n++) {
            const float *dy = j->dy + (n * g->O + o) * g->L;
            if (j->db) db += dot(dy, NULL, g->L);
            if (!dw) continue;
            const float *x = j->x + (n * g->C + c) * g->S;
            for (int64_t kz = 0, t = 0; kz < g->kd; kz++)
                for (int64_t ki = 0; ki < g->kh; ki++)
                    for (int64_t kj = 0; kj < g->kw; kj++, t++) {
                        tap_rows r;
                        if (!tap_of(g, kz, ki, kj, &r)) continue;
                        const int64_t len = r.x1 - r.x0;
                        float s = 0;
                        for (int64_t od = r.z0; od < r.z1; od++)
                            for (int64_t oy = r.y0; oy < r.y1; oy++) {
                                const float *dr = dy + (od * Ho + oy) * Wo + r.x0;
                                const float *xr = x + r.in0 + ((od - r.z0) * g->sd * H + (oy - r.y0) * g->sh) * W;
                                s += sw == 1 ? dot(dr, xr, len) : dot_strided(dr, xr, sw, len);
                            }
                        dw[t] += s;
                    }
        }
        if (j->db) j->db[o] = db;
    }
}

/* a multiply-add of these loops costs about as much as an element of a memory-bound loop */
static int64_t work_of(const conv_geom *g) { return g->N * g->O * g->L * g->taps; }

void fnn_depthwise_forward(const conv_geom *g, const float *x, const float *w, const float *b, float *y) {
    dw_job j = {g, x, w, b, NULL, y, NULL, NULL, NULL};
    fnn_parallel_for(g->N * g->O, fnn_threads_for(work_of(g)), forward_planes, &j);
}

void fnn_depthwise_input_grad(const conv_geom *g, const float *w, const float *dy, const float *bias_in, float *dx) {
    dw_job j = {g, NULL, w, bias_in, dy, NULL, dx, NULL, NULL};
    fnn_parallel_for(g->N * g->C, fnn_threads_for(work_of(g)), input_grad_planes, &j);
}

void fnn_depthwise_weight_grad(const conv_geom *g, const float *x, const float *dy, float *dw, float *db) {
    dw_job j = {g, x, NULL, NULL, dy, NULL, NULL, dw, db};
    fnn_parallel_for(g->O, fnn_threads_for(work_of(g)), weight_grad_channels, &j);
}
