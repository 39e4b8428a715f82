/* conv.c: convolutions, 1-, 2- and 3-d, plain (conv1d/2d/3d) and transposed
 * (conv_transpose1d/2d/3d), with stride, padding per side, dilation, groups, bias and
 * output_padding. CPU, PyTorch's semantics and output sizes; inputs [N,C,...] or unbatched
 * [C,...]. (The pools are in pool.c.)
 *
 * Every convolution is described by one geometry (conv.h): a forward convolution from
 * [N, C, D, H, W] to [N, O, Do, Ho, Wo], 1-d and 2-d ones with their leading dims at 1. It runs
 * as im2col + one fnn_sgemm (blas.c) per image and group:
 *     y[n,g] [Og, L] = w[g] [Og, Kg] @ col [Kg, L]     Kg = C/groups*kd*kh*kw, L = Do*Ho*Wo
 * col is rebuilt per image in a buffer that stays in cache, and a 1x1 / stride 1 / pad 0 conv
 * reads the input itself as col. Backward per image:
 *     dw[g] += dy[n,g] @ col^T    (col rebuilt from x, not saved: it is kd*kh*kw times x)
 *     dx[n,g] = col2im(w[g]^T @ dy[n,g])
 *     db      = sum of dy over N and the spatial dims
 * A transposed convolution is the dx part of the convolution whose input is its output (gemm,
 * then col2im), and its backward is that convolution's forward (dx) and weight gradient (dw).
 * Images are split over the threads, each with its own col buffer and dw/db partial sums, and each
 * gemm runs on its slot's thread (fnn_sgemm_parallel_for): so im2col and col2im run in parallel too
 * (not only the gemms, which are small: M 64, N 196, K 288 in a small CNN, where a library's own
 * split gains little), and threads never nest. With one thread (or fewer images than threads) the
 * images run in order and the GEMM library threads each gemm as usual. Depthwise convolutions (groups =
 * input channels) skip all this for the direct kernels of conv_depthwise.c.
 * With the oneDNN kernels selected (blas.c; the default where the build has oneDNN), run_forward and
 * run_backward first hand the geometry to oneDNN's convolution primitives (conv_onednn.c: cached per
 * shape, blocked layouts inside the op, NCHW outside), depthwise ones included; im2col and the
 * depthwise kernels are the portable kernels and run whatever oneDNN declines.
 * The entry points check, shape, allocate and record the node once, and run the kernels through the
 * row of the tensors' backend (conv.h's fnn_conv_row): the CPU's rows sit at the end of this file,
 * the device's (im2col / col2im + cuBLAS, direct depthwise kernels) in cuda/conv.cu. */
#include "conv.h"
#include "elementwise.h"
#include "elementwise_ops.h"
#include <limits.h>
#include <math.h>
#include <string.h>

/* ================= shared ================= */

/* sum of n floats in 8 lanes (vectorizes; a single accumulator would be a chain of dependent adds) */
static float sum_floats(const float *x, int64_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[i + k];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++) s += x[i];
    return s;
}

/* split [0, n) into `parts` near-equal ranges; range t */
static inline void split_range(int64_t n, int64_t parts, int64_t t, int64_t *lo, int64_t *hi) {
    int64_t q = n / parts, r = n % parts;
    *lo = t * q + (t < r ? t : r);
    *hi = *lo + q + (t < r);
}

/* run fn(ctx, slot, slot + 1) for slots 0..slots-1, one slot per thread. slots > 1 only where the
 * caller split the images over the threads: the gemms inside each slot then run on the thread that
 * calls them (fnn_sgemm_parallel_for) */
static void run_slots(int slots, fnn_range_fn fn, void *ctx) {
    if (slots <= 1) { fn(ctx, 0, 1); return; }
    fnn_sgemm_parallel_for(slots, slots, fn, ctx);
}

/* ================= convolution ================= */

/* the geometry from sizes given in the op's nd spatial dims; the leading ones of D, H, W stay at
 * size 1 (kernel 1, stride 1, no padding, dilation 1) */
static void geom_init(conv_geom *g, int nd, int64_t N, int64_t C, int64_t O, int64_t groups, const int64_t *in,
                      const int64_t *out, const int64_t *k, const int64_t *s, const int64_t *p, const int64_t *d) {
    int64_t v[6][3] = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}};
    for (int i = 0; i < nd; i++) {
        int at = 3 - nd + i;
        v[0][at] = in[i]; v[1][at] = out[i]; v[2][at] = k[i]; v[3][at] = s[i]; v[4][at] = p[i]; v[5][at] = d[i];
    }
    g->N = N; g->C = C; g->O = O; g->groups = groups;
    g->D = v[0][0]; g->H = v[0][1]; g->W = v[0][2];
    g->Do = v[1][0]; g->Ho = v[1][1]; g->Wo = v[1][2];
    g->kd = v[2][0]; g->kh = v[2][1]; g->kw = v[2][2];
    g->sd = v[3][0]; g->sh = v[3][1]; g->sw = v[3][2];
    g->pd = v[4][0]; g->ph = v[4][1]; g->pw = v[4][2];
    g->dd = v[5][0]; g->dh = v[5][1]; g->dw = v[5][2];
    g->Cg = C / groups; g->Og = O / groups;
    g->taps = g->kd * g->kh * g->kw;
    g->Kg = g->Cg * g->taps;
    g->S = g->D * g->H * g->W;
    g->L = g->Do * g->Ho * g->Wo;
    g->pointwise = g->taps == 1 && g->sd == 1 && g->sh == 1 && g->sw == 1 && g->pd == 0 && g->ph == 0 &&
                   g->pw == 0 && g->L == g->S;
    g->depthwise = groups > 1 && g->Cg == 1;
}

/* stride 1 with Wo == W ('same'-sized rows): a col row of one [H, W] plane is the plane shifted by
 * one offset, so it is one block copy, with the padding columns zeroed after */
static inline bool block_rows(const conv_geom *g) { return g->sh == 1 && g->sw == 1 && g->Wo == g->W; }

/* channels planes of x [H, W] (channel stride cs) -> rows [Ho*Wo] of col (row stride rs), row
 * (c, ki, kj) holding x[c, oy*sh - ph + ki*dh, ox*sw - pw + kj*dw], zero where that is padding.
 * A 2-d conv is one call over its Cg channels; a 3-d one calls it per input plane and output depth */
static void im2col_2d(float *restrict col, int64_t rs, const float *restrict x, int64_t cs, int64_t channels,
                      const conv_geom *g) {
    const int64_t H = g->H, W = g->W, Ho = g->Ho, Wo = g->Wo, sw = g->sw, L = Ho * Wo;
    const bool block = block_rows(g);
    for (int64_t c = 0; c < channels; c++)
        for (int64_t ki = 0; ki < g->kh; ki++) {
            int64_t ylo, yhi;
            conv_valid_range(H, Ho, ki * g->dh - g->ph, g->sh, &ylo, &yhi);
            for (int64_t kj = 0; kj < g->kw; kj++) {
                float *row = col + ((c * g->kh + ki) * g->kw + kj) * rs;
                const float *xc = x + c * cs;
                int64_t lo, hi, xoff = kj * g->dw - g->pw;
                conv_valid_range(W, Wo, xoff, sw, &lo, &hi);
                if (block) {
                    /* row[i] = xc[i + shift] over the valid rows; positions that would read outside
                     * the plane are padding columns, zeroed below with the rest */
                    int64_t shift = (ki * g->dh - g->ph) * W + xoff, a = ylo * W, b = yhi * W;
                    int64_t i0 = a > -shift ? a : -shift, i1 = b < H * W - shift ? b : H * W - shift;
                    memset(row, 0, sizeof(float) * (size_t)a);
                    if (i1 > i0) memcpy(row + i0, xc + i0 + shift, sizeof(float) * (size_t)(i1 - i0));
                    else i0 = i1 = b;
                    for (int64_t i = a; i < i0; i++) row[i] = 0;
                    for (int64_t i = i1; i < b; i++) row[i] = 0;
                    memset(row + b, 0, sizeof(float) * (size_t)(L - b));
                    if (lo > 0 || hi < Wo)
                        for (int64_t oy = ylo; oy < yhi; oy++) {
                            for (int64_t ox = 0; ox < lo; ox++) row[oy * Wo + ox] = 0;
                            for (int64_t ox = hi; ox < Wo; ox++) row[oy * Wo + ox] = 0;
                        }
                    continue;
                }
                memset(row, 0, sizeof(float) * (size_t)(ylo * Wo));
                memset(row + yhi * Wo, 0, sizeof(float) * (size_t)((Ho - yhi) * Wo));
                for (int64_t oy = ylo; oy < yhi; oy++) {
                    float *r = row + oy * Wo;
                    const float *xr = xc + (oy * g->sh - g->ph + ki * g->dh) * W + xoff;
                    for (int64_t ox = 0; ox < lo; ox++) r[ox] = 0;
                    if (sw == 1) for (int64_t ox = lo; ox < hi; ox++) r[ox] = xr[ox];
                    else for (int64_t ox = lo; ox < hi; ox++) r[ox] = xr[ox * sw];
                    for (int64_t ox = hi; ox < Wo; ox++) r[ox] = 0;
                }
            }
        }
}

/* the adjoint of im2col_2d: channels planes of dx (stride cs) += col rows (stride rs) at the
 * positions im2col_2d read. col is scratch: the block path zeroes its padding columns so that
 * one long add does a plane */
static void col2im_2d(float *restrict dx, int64_t cs, float *restrict col, int64_t rs, int64_t channels,
                      const conv_geom *g) {
    const int64_t H = g->H, W = g->W, Wo = g->Wo, sw = g->sw;
    const bool block = block_rows(g);
    for (int64_t c = 0; c < channels; c++)
        for (int64_t ki = 0; ki < g->kh; ki++) {
            int64_t ylo, yhi;
            conv_valid_range(H, g->Ho, ki * g->dh - g->ph, g->sh, &ylo, &yhi);
            for (int64_t kj = 0; kj < g->kw; kj++) {
                float *row = col + ((c * g->kh + ki) * g->kw + kj) * rs;
                float *dxc = dx + c * cs;
                int64_t lo, hi, xoff = kj * g->dw - g->pw;
                conv_valid_range(W, Wo, xoff, sw, &lo, &hi);
                if (block) {
                    int64_t shift = (ki * g->dh - g->ph) * W + xoff, a = ylo * W, b = yhi * W;
                    int64_t i0 = a > -shift ? a : -shift, i1 = b < H * W - shift ? b : H * W - shift;
                    if (lo > 0 || hi < Wo)
                        for (int64_t oy = ylo; oy < yhi; oy++) {
                            for (int64_t ox = 0; ox < lo; ox++) row[oy * Wo + ox] = 0;
                            for (int64_t ox = hi; ox < Wo; ox++) row[oy * Wo + ox] = 0;
                        }
                    for (int64_t i = i0; i < i1; i++) dxc[i + shift] += row[i];
                    continue;
                }
                for (int64_t oy = ylo; oy < yhi; oy++) {
                    const float *r = row + oy * Wo;
                    float *xr = dxc + (oy * g->sh - g->ph + ki * g->dh) * W + xoff;
                    if (sw == 1) for (int64_t ox = lo; ox < hi; ox++) xr[ox] += r[ox];
                    else for (int64_t ox = lo; ox < hi; ox++) xr[ox * sw] += r[ox];
                }
            }
        }
}

/* one depth, read as is: every 1-d and 2-d conv (a 3-d one only when its depth is trivial) */
static inline bool flat_depth(const conv_geom *g) { return g->D == 1 && g->Do == 1 && g->kd == 1 && g->pd == 0; }

/* x [Cg, D, H, W] -> col [Cg*kd*kh*kw, Do*Ho*Wo]; row (c, kz, ki, kj) holds
 * x[c, oz*sd - pd + kz*dd, oy*sh - ph + ki*dh, ox*sw - pw + kj*dw], zero where that is padding:
 * per (c, kz, oz) the [Ho*Wo] parts of kh*kw rows come from one input plane, or are zero */
static void im2col(float *restrict col, const float *restrict x, const conv_geom *g) {
    const int64_t HW = g->H * g->W, HoWo = g->Ho * g->Wo, L = g->L, k2 = g->kh * g->kw;
    if (flat_depth(g)) { im2col_2d(col, L, x, HW, g->Cg, g); return; }
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t kz = 0; kz < g->kd; kz++) {
            int64_t zlo, zhi, zoff = kz * g->dd - g->pd;
            conv_valid_range(g->D, g->Do, zoff, g->sd, &zlo, &zhi);
            float *rows = col + (c * g->kd + kz) * k2 * L;
            for (int64_t oz = 0; oz < g->Do; oz++) {
                if (oz >= zlo && oz < zhi)
                    im2col_2d(rows + oz * HoWo, L, x + (c * g->D + oz * g->sd + zoff) * HW, 0, 1, g);
                else
                    for (int64_t r = 0; r < k2; r++) memset(rows + r * L + oz * HoWo, 0, sizeof(float) * (size_t)HoWo);
            }
        }
}

/* the adjoint of im2col: dx [Cg, D, H, W] += col [Cg*kd*kh*kw, Do*Ho*Wo] (col is scratch) */
static void col2im(float *restrict dx, float *restrict col, const conv_geom *g) {
    const int64_t HW = g->H * g->W, HoWo = g->Ho * g->Wo, L = g->L, k2 = g->kh * g->kw;
    if (flat_depth(g)) { col2im_2d(dx, HW, col, L, g->Cg, g); return; }
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t kz = 0; kz < g->kd; kz++) {
            int64_t zlo, zhi, zoff = kz * g->dd - g->pd;
            conv_valid_range(g->D, g->Do, zoff, g->sd, &zlo, &zhi);
            float *rows = col + (c * g->kd + kz) * k2 * L;
            for (int64_t oz = zlo; oz < zhi; oz++)
                col2im_2d(dx + (c * g->D + oz * g->sd + zoff) * HW, 0, rows + oz * HoWo, L, 1, g);
        }
}

typedef struct {
    const conv_geom *g;
    int slots;
    const float *x, *w, *b, *dy;
    float *y, *dx, *dw, *db;
    const float *bias_in;      /* added to dx per input channel (a transposed convolution's bias) */
    float *col;                /* per slot: col [Kg, L] */
    float *dw_part, *db_part;  /* partial sums of slots 1.. (slot 0 writes dw / db itself) */
    unsigned exact;            /* CONV_EXACT_* (conv.h): x, w, dy hold bfloat16 values, used by fnn_gemm_prec_exact
                                  as they are (col, im2col's copy of x, holds them too) */
} conv_job;

/* fnn_gemm_prec_exact's flags for a product of the job's inputs a_bit and b_bit (CONV_EXACT_*) */
static inline unsigned exact_ab(unsigned exact, unsigned a_bit, unsigned b_bit) {
    return (exact & a_bit ? 1u : 0u) | (exact & b_bit ? 2u : 0u);
}

/* forward of the images of one slot, per image and group:
 *     y[n, g] [Og, L] = w[g] [Og, Kg] @ col [Kg, L] + b
 * the bias goes into y first and the gemm adds onto it (beta = 1): one pass over y, in cache */
static void conv_forward_slot(void *ctx, int64_t s0, int64_t s1) {
    const conv_job *j = ctx;
    const conv_geom *g = j->g;
    const int64_t Og = g->Og, Kg = g->Kg, L = g->L, S = g->S;
    for (int64_t s = s0; s < s1; s++) {
        int64_t n0, n1;
        split_range(g->N, j->slots, s, &n0, &n1);
        float *col = j->col ? j->col + s * Kg * L : NULL;
        for (int64_t n = n0; n < n1; n++)
            for (int64_t gr = 0; gr < g->groups; gr++) {
                const float *bias = j->b ? j->b + gr * Og : NULL;
                float *yg = j->y + (n * g->O + gr * Og) * L;
                if (bias || Kg == 0)
                    for (int64_t o = 0; o < Og; o++)
                        for (int64_t l = 0; l < L; l++) yg[o * L + l] = bias ? bias[o] : 0.0f;
                if (Kg == 0) continue;   /* no input channels: the bias alone */
                const float *xg = j->x + (n * g->C + gr * g->Cg) * S, *src = xg;
                if (!g->pointwise) { im2col(col, xg, g); src = col; }
                fnn_gemm_prec_exact(FNN_PREC_CONV, exact_ab(j->exact, CONV_EXACT_W, CONV_EXACT_X), false, false, Og, L,
                                    Kg, 1.0f, j->w + gr * Og * Kg, Kg, src, L, bias ? 1.0f : 0.0f, yg, L);
            }
    }
}

/* backward of the images of one slot, per image and group:
 *     dw[g] += dy[n, g] @ col^T          (col rebuilt from x)
 *     col    = w[g]^T @ dy[n, g],  dx[n, g] = col2im(col)   (1x1: the gemm writes dx itself)
 *     db    += row sums of dy[n, g]
 * A transposed convolution's forward is the dx part alone (its input as dy, its bias as bias_in) */
static void conv_backward_slot(void *ctx, int64_t s0, int64_t s1) {
    const conv_job *j = ctx;
    const conv_geom *g = j->g;
    const int64_t Og = g->Og, Kg = g->Kg, L = g->L, O = g->O, S = g->S;
    for (int64_t s = s0; s < s1; s++) {
        int64_t n0, n1;
        split_range(g->N, j->slots, s, &n0, &n1);
        float *col = j->col ? j->col + s * Kg * L : NULL;
        float *dw = j->dw ? (s == 0 ? j->dw : j->dw_part + (s - 1) * O * Kg) : NULL;
        float *db = j->db ? (s == 0 ? j->db : j->db_part + (s - 1) * O) : NULL;
        if (dw) memset(dw, 0, sizeof(float) * (size_t)(O * Kg));
        if (db) memset(db, 0, sizeof(float) * (size_t)O);
        for (int64_t n = n0; n < n1; n++) {
            float *dxn = j->dx ? j->dx + n * g->C * S : NULL;
            if (dxn && !g->pointwise) memset(dxn, 0, sizeof(float) * (size_t)(g->C * S));
            for (int64_t gr = 0; gr < g->groups; gr++) {
                const float *dyg = j->dy + (n * O + gr * Og) * L;
                if (db)
                    for (int64_t o = 0; o < Og; o++) db[gr * Og + o] += sum_floats(dyg + o * L, L);
                if (Kg == 0) continue;
                if (dw) {   /* dw[g] [Og, Kg] += dy [Og, L] @ col^T [L, Kg] */
                    const float *xg = j->x + (n * g->C + gr * g->Cg) * S, *src = xg;
                    if (!g->pointwise) { im2col(col, xg, g); src = col; }
                    fnn_gemm_prec_exact(FNN_PREC_CONV, exact_ab(j->exact, CONV_EXACT_DY, CONV_EXACT_X), false, true, Og,
                                        Kg, L, 1.0f, dyg, L, src, L, 1.0f, dw + gr * Og * Kg, Kg);
                }
                if (dxn) {   /* col [Kg, L] = w[g]^T [Kg, Og] @ dy [Og, L], folded back onto dx */
                    const float *wg = j->w + gr * Og * Kg;
                    float *dxg = dxn + gr * g->Cg * S;
                    fnn_gemm_prec_exact(FNN_PREC_CONV, exact_ab(j->exact, CONV_EXACT_W, CONV_EXACT_DY), true, false, Kg,
                                        L, Og, 1.0f, wg, Kg, dyg, L, 0.0f, g->pointwise ? dxg : col, L);
                    if (!g->pointwise) col2im(dxg, col, g);
                }
            }
            if (dxn && j->bias_in)
                for (int64_t c = 0; c < g->C; c++)
                    for (int64_t i = 0; i < S; i++) dxn[c * S + i] += j->bias_in[c];
        }
    }
}

/* the job's scratch in one counted block: a col buffer per slot, then the slots' dw / db partial
 * sums (backward); *bytes is what to give back to fnn_free */
static int job_scratch(conv_job *j, int dev, bool need_col, bool want_dw, bool want_db, void **block, int64_t *bytes) {
    const conv_geom *g = j->g;
    int64_t col_n = need_col && !g->pointwise && g->Kg > 0 ? j->slots * g->Kg * g->L : 0;
    int64_t dwp_n = want_dw ? (j->slots - 1) * g->O * g->Kg : 0, dbp_n = want_db ? (j->slots - 1) * g->O : 0;
    *bytes = (col_n + dwp_n + dbp_n) * (int64_t)sizeof(float);
    *block = NULL;
    if (*bytes == 0) return FNN_STATUS_OK;
    float *p = fnn_alloc(dev, *bytes);
    if (!p) return fnn_last_status();
    *block = p;
    if (col_n) { j->col = p; p += col_n; }
    if (dwp_n) { j->dw_part = p; p += dwp_n; }
    if (dbp_n) j->db_part = p;
    return FNN_STATUS_OK;
}

/* y (n floats) rounded into yh, the op's bfloat16 output, when it has one */
static void narrow_into(uint16_t *yh, const float *y, int64_t n) {
    if (yh && n > 0) fnn_to_bf16_matrix(yh, y, 1, n, n);
}

/* y = relu(y) over n floats (the elementwise family's relu formula), split over the pool */
static void relu_range(void *ctx, int64_t lo, int64_t hi) {
    float *y = ctx;
    for (int64_t i = lo; i < hi; i++) y[i] = y[i] > 0 ? y[i] : 0.0f;
}

/* y = act(conv(x, w) + b) over the whole batch: oneDNN (the activation a post-op), the depthwise kernel,
 * or im2col + sgemm per image (the activation a pass after). exact: CONV_EXACT_X, _W for the inputs that
 * hold bfloat16 values (the depthwise kernels are float32 only); yh: NULL, or where y is also written
 * rounded to bfloat16 (fnn_conv_args.yh), after the activation */
static int run_forward(const conv_geom *g, int dev, const float *x, const float *w, const float *b, float *y,
                       fnn_tensor *keep_x, unsigned exact, uint16_t *yh, int act) {
    if (g->N * g->O * g->L == 0) return FNN_STATUS_OK;
    int rc = fnn_onednn_conv_forward(g, dev, x, w, b, y, keep_x, exact, yh, act);
    if (rc != FNN_ONEDNN_DECLINED) return rc;
    if (g->depthwise) {
        fnn_depthwise_forward(g, x, w, b, y);
    } else {
        conv_job j = {g, conv_image_slots(g->N, 2.0 * (double)g->N * (double)g->O * (double)g->Kg * (double)g->L),
                      x, w, b, NULL, y, NULL, NULL, NULL, NULL, NULL, NULL, NULL, exact};
        void *block;
        int64_t bytes;
        FNN_TRY(job_scratch(&j, dev, true, false, false, &block, &bytes));
        run_slots(j.slots, conv_forward_slot, &j);
        if (block) fnn_free(dev, block, bytes);
    }
    const int64_t n = g->N * g->O * g->L;
    if (act == FNN_ACT_RELU) fnn_parallel_for(n, fnn_in_parallel() ? 1 : fnn_threads_for(n), relu_range, y);
    narrow_into(yh, y, n);
    return FNN_STATUS_OK;
}

/* any of dx = conv^T(dy, w) + bias_in, dw and db (pointers NULL when not wanted; x is read only
 * for dw, w only for dx); dw / db come out as sums in a fixed order whatever the threads */
static int run_backward(const conv_geom *g, int dev, const float *x, const float *w, const float *dy,
                        const float *bias_in, float *dx, float *dw, float *db, const void *x_kept,
                        unsigned exact) {
    if (g->N == 0 || g->O == 0 || g->C == 0) {   /* nothing flows through: bias_in or zeros */
        if (dx) for (int64_t i = 0; i < g->N * g->C * g->S; i++) dx[i] = bias_in ? bias_in[(i / g->S) % g->C] : 0.0f;
        if (dw) memset(dw, 0, sizeof(float) * (size_t)(g->O * g->Kg));
        if (db) for (int64_t o = 0; o < g->O; o++) db[o] = 0;
        if (db && g->C == 0)
            for (int64_t n = 0; n < g->N; n++)
                for (int64_t o = 0; o < g->O; o++) db[o] += sum_floats(dy + (n * g->O + o) * g->L, g->L);
        return FNN_STATUS_OK;
    }
    int rc = fnn_onednn_conv_backward(g, dev, x, w, dy, bias_in, dx, dw, db, x_kept, exact);
    if (rc != FNN_ONEDNN_DECLINED) return rc;
    if (g->depthwise) {
        if (dx) fnn_depthwise_input_grad(g, w, dy, bias_in, dx);
        if (dw || db) fnn_depthwise_weight_grad(g, x, dy, dw, db);
        return FNN_STATUS_OK;
    }
    double flops = 2.0 * (double)g->N * (double)g->O * (double)g->Kg * (double)g->L * ((dx != NULL) + (dw != NULL));
    conv_job j = {g, conv_image_slots(g->N, flops), x, w, NULL, dy, NULL, dx, dw, db, bias_in, NULL, NULL, NULL,
                  exact};
    void *block;
    int64_t bytes;
    FNN_TRY(job_scratch(&j, dev, dx || dw, dw != NULL, db != NULL, &block, &bytes));
    run_slots(j.slots, conv_backward_slot, &j);
    for (int s = 1; s < j.slots; s++) {   /* the slots' partial sums, in a fixed order */
        if (dw) for (int64_t i = 0; i < g->O * g->Kg; i++) dw[i] += j.dw_part[(s - 1) * g->O * g->Kg + i];
        if (db) for (int64_t i = 0; i < g->O; i++) db[i] += j.db_part[(s - 1) * g->O + i];
    }
    if (block) fnn_free(dev, block, bytes);
    return FNN_STATUS_OK;
}

/* ---- arguments: checks shared by the convolutions and their transposes ---- */

/* sizes as text for messages: "3x3" (1-d: "3"); padding per dim "1" or, when its sides differ,
 * "(before,after)": "(0,1)x1" */
typedef struct { char s[160]; } dims_text;
static void text_add(dims_text *t, int *at, const char *fmt, const char *sep, long long a, long long b) {
    if (*at >= (int)sizeof t->s) return;
    *at += snprintf(t->s + *at, sizeof t->s - (size_t)*at, fmt, sep, a, b);
}
static dims_text dims_of(int nd, const int64_t *v) {
    dims_text t = {{0}};
    int at = 0;
    for (int i = 0; i < nd; i++) text_add(&t, &at, "%s%lld", i ? "x" : "", (long long)v[i], 0);
    return t;
}
static dims_text pads_of(int nd, const int64_t *p) {
    dims_text t = {{0}};
    int at = 0;
    for (int i = 0; i < nd; i++)
        text_add(&t, &at, p[2 * i] == p[2 * i + 1] ? "%s%lld" : "%s(%lld,%lld)", i ? "x" : "", (long long)p[2 * i],
                 (long long)p[2 * i + 1]);
    return t;
}

static const char *const CONV_NAMES[2][4] = {{"", "conv1d", "conv2d", "conv3d"},
                                             {"", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}};
static const char *const INPUT_LAYOUT[4][2] = {{"", ""}, {"[N,C,L]", "[C,L]"}, {"[N,C,H,W]", "[C,H,W]"},
                                               {"[N,C,D,H,W]", "[C,D,H,W]"}};
static const char *const KERNEL_NAMES[4] = {"", "k", "kh, kw", "kd, kh, kw"};

/* the options of one call, widened, with defaults where a pointer is NULL */
typedef struct {
    int nd;
    bool transposed;
    const char *op;
    int64_t stride[3], pad[6], outpad[3], dil[3], groups;
    int act;   /* conv1d/2d/3d: FNN_ACT_RELU or FNN_ACT_NONE (opts_read's default; the entry sets it) */
} conv_opts;

static void opts_read(conv_opts *o, int nd, bool transposed, const int *stride, const int *padding,
                      const int *output_padding, const int *dilation, int groups) {
    o->nd = nd; o->transposed = transposed; o->op = CONV_NAMES[transposed][nd]; o->groups = groups;
    o->act = FNN_ACT_NONE;
    for (int i = 0; i < nd; i++) {
        o->stride[i] = stride ? stride[i] : 1;
        o->dil[i] = dilation ? dilation[i] : 1;
        o->outpad[i] = output_padding ? output_padding[i] : 0;
        o->pad[2 * i] = padding ? padding[2 * i] : 0;
        o->pad[2 * i + 1] = padding ? padding[2 * i + 1] : 0;
    }
}

/* every check of a convolution (plain or transposed) on x, w and b; then its geometry and the
 * output shape (oshape, *ondim) */
static int conv_setup(const conv_opts *o, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b,
                      conv_geom *g, int *ondim, int64_t *oshape, const fnn_conv_row **row) {
    const char *op = o->op;
    const int nd = o->nd;
    FNN_TRY(fnn_check_float_or_host_bf16(op, x, "input"));
    FNN_TRY(fnn_check_float_or_host_bf16(op, w, "weight"));
    FNN_TRY(fnn_check_same_device(op, x, w));
    if (b) {
        FNN_TRY(fnn_check_float_or_host_bf16(op, b, "bias"));
        FNN_TRY(fnn_check_same_device(op, x, b));
    }
    *row = fnn_conv_row_for(x->device, op);
    if (!*row || !(*row)->forward) return FNN_ROW_REFUSED(op, x->device, false);
    FNN_CHECK(x->ndim == nd + 2 || x->ndim == nd + 1, FNN_STATUS_SHAPE, "%s: input %s must be %d-D %s or %d-D %s", op,
              fnn_shape_of(x).s, nd + 2, INPUT_LAYOUT[nd][0], nd + 1, INPUT_LAYOUT[nd][1]);
    FNN_CHECK(w->ndim == nd + 2, FNN_STATUS_SHAPE, "%s: weight %s must be %d-D %s, %s]", op, fnn_shape_of(w).s,
              nd + 2, o->transposed ? "[in, out/groups" : "[out, in/groups", KERNEL_NAMES[nd]);
    bool pos_s = true, pos_d = true, pos_p = true, small_op = true;
    for (int i = 0; i < nd; i++) {
        pos_s = pos_s && o->stride[i] >= 1;
        pos_d = pos_d && o->dil[i] >= 1;
        pos_p = pos_p && o->pad[2 * i] >= 0 && o->pad[2 * i + 1] >= 0;
        small_op = small_op && o->outpad[i] >= 0 && (o->outpad[i] < o->stride[i] || o->outpad[i] < o->dil[i]);
    }
    FNN_CHECK(pos_s, FNN_STATUS_ARG, "%s: stride %s must be positive", op, dims_of(nd, o->stride).s);
    FNN_CHECK(pos_p, FNN_STATUS_ARG, "%s: padding %s must not be negative", op, pads_of(nd, o->pad).s);
    FNN_CHECK(pos_d, FNN_STATUS_ARG, "%s: dilation %s must be positive", op, dims_of(nd, o->dil).s);
    FNN_CHECK(small_op, FNN_STATUS_ARG,
              "%s: output_padding %s must be non-negative and smaller than the stride %s or the dilation %s", op,
              dims_of(nd, o->outpad).s, dims_of(nd, o->stride).s, dims_of(nd, o->dil).s);
    FNN_CHECK(o->groups >= 1, FNN_STATUS_ARG, "%s: groups %lld must be positive", op, (long long)o->groups);
    const int64_t *xs = x->shape + (x->ndim - nd), *ks = w->shape + 2;
    int64_t Cx = x->shape[x->ndim - nd - 1], groups = o->groups, Cy;
    FNN_CHECK(Cx % groups == 0, FNN_STATUS_SHAPE, "%s: input %s has %lld channels, not divisible by groups %lld", op,
              fnn_shape_of(x).s, (long long)Cx, (long long)groups);
    if (!o->transposed) {
        Cy = w->shape[0];
        FNN_CHECK(Cy % groups == 0, FNN_STATUS_SHAPE,
                  "%s: weight %s has %lld output channels, not divisible by groups %lld", op, fnn_shape_of(w).s,
                  (long long)Cy, (long long)groups);
        FNN_CHECK(w->shape[1] * groups == Cx, FNN_STATUS_SHAPE,
                  "%s: input %s has %lld channels, weight %s expects %lld (groups %lld)", op, fnn_shape_of(x).s,
                  (long long)Cx, fnn_shape_of(w).s, (long long)(w->shape[1] * groups), (long long)groups);
    } else {
        Cy = w->shape[1] * groups;
        FNN_CHECK(w->shape[0] == Cx, FNN_STATUS_SHAPE, "%s: input %s has %lld channels, weight %s expects %lld", op,
                  fnn_shape_of(x).s, (long long)Cx, fnn_shape_of(w).s, (long long)w->shape[0]);
    }
    bool empty_k = false, empty_x = false;
    for (int i = 0; i < nd; i++) { empty_k = empty_k || ks[i] < 1; empty_x = empty_x || xs[i] < 1; }
    FNN_CHECK(!empty_k, FNN_STATUS_SHAPE, "%s: weight %s has an empty kernel", op, fnn_shape_of(w).s);
    FNN_CHECK(!empty_x, FNN_STATUS_SHAPE, "%s: input %s has an empty spatial size %s", op, fnn_shape_of(x).s,
              dims_of(nd, xs).s);
    FNN_CHECK(!b || (b->ndim == 1 && b->shape[0] == Cy), FNN_STATUS_SHAPE,
              "%s: bias %s does not match weight %s (expected [%lld])", op, b ? fnn_shape_of(b).s : "",
              fnn_shape_of(w).s, (long long)Cy);

    int64_t ext[3], out[3], padded[3], before[3];
    bool fits = true, positive = true;
    for (int i = 0; i < nd; i++) {
        ext[i] = o->dil[i] * (ks[i] - 1) + 1;
        padded[i] = xs[i] + o->pad[2 * i] + o->pad[2 * i + 1];
        before[i] = o->pad[2 * i];
        if (!o->transposed) {
            fits = fits && ext[i] <= padded[i];
            out[i] = fits ? (padded[i] - ext[i]) / o->stride[i] + 1 : 0;
        } else {
            out[i] = (xs[i] - 1) * o->stride[i] - o->pad[2 * i] - o->pad[2 * i + 1] + ext[i] + o->outpad[i];
            positive = positive && out[i] >= 1;
        }
    }
    FNN_CHECK(fits, FNN_STATUS_SHAPE,
              "%s: kernel %s (dilation %s) is larger than the padded input %s (input %s, padding %s)", op,
              dims_of(nd, ks).s, dims_of(nd, o->dil).s, dims_of(nd, padded).s, fnn_shape_of(x).s,
              pads_of(nd, o->pad).s);
    FNN_CHECK(positive, FNN_STATUS_SHAPE,
              "%s: output size %s is not positive (input %s, kernel %s, stride %s, padding %s, output_padding %s)",
              op, dims_of(nd, out).s, fnn_shape_of(x).s, dims_of(nd, ks).s, dims_of(nd, o->stride).s,
              pads_of(nd, o->pad).s, dims_of(nd, o->outpad).s);

    bool batched = x->ndim == nd + 2;
    int64_t N = batched ? x->shape[0] : 1;
    if (!o->transposed) geom_init(g, nd, N, Cx, Cy, groups, xs, out, ks, o->stride, before, o->dil);
    else geom_init(g, nd, N, Cy, Cx, groups, out, xs, ks, o->stride, before, o->dil);
    FNN_CHECK(g->Kg <= INT_MAX && g->L <= INT_MAX && g->Og <= INT_MAX, FNN_STATUS_SHAPE,
              "%s: input %s and weight %s are too large for BLAS", op, fnn_shape_of(x).s, fnn_shape_of(w).s);
    *ondim = x->ndim;
    int k = 0;
    if (batched) oshape[k++] = N;
    oshape[k++] = Cy;
    for (int i = 0; i < nd; i++) oshape[k++] = out[i];
    return FNN_STATUS_OK;
}

/* a convolution node's numbers (conv and conv_transpose, 1d to 3d): the first nd entries of each
 * array are used; the padding after and output_padding are in the shapes. saved[0] = x
 * (contiguous; kept only when w needs a gradient), saved[1] = w (contiguous; only when x needs one),
 * saved[2] = x in the row's own layout where the forward kept it (fnn_conv_args.keep_x) */
typedef struct {
    int64_t stride[3], pad_before[3], dilation[3];
    int64_t groups;
    int nd;   /* spatial dims: 1, 2 or 3 */
    int act;  /* FNN_ACT_RELU: y = relu(conv + b), saved[3] the float32 y its gradient reads */
} conv_attrs;

/* fnn_node_attr's reader for the family (fnn.onnx.export): nd, groups, activation (FNN_ACT_*: 0 none,
 * 1 relu), and stride<i>, pad<i> (before), dilation<i> for spatial dim i = 0 .. nd-1 */
int fnn_conv_attr(const fnn_node *n, const char *name, double *value) {
    const conv_attrs *a = FNN_ATTRS((fnn_node *)n, conv_attrs);
    int i = -1;
    if (!strcmp(name, "nd")) { *value = a->nd; return FNN_STATUS_OK; }
    if (!strcmp(name, "groups")) { *value = (double)a->groups; return FNN_STATUS_OK; }
    if (!strcmp(name, "activation")) { *value = a->act; return FNN_STATUS_OK; }
    const char *digit = name + strcspn(name, "012");
    if (digit[0] && !digit[1] && digit[0] - '0' < a->nd) i = digit[0] - '0';
    size_t stem = (size_t)(digit - name);
    if (i >= 0 && stem == 6 && !strncmp(name, "stride", 6)) *value = (double)a->stride[i];
    else if (i >= 0 && stem == 3 && !strncmp(name, "pad", 3)) *value = (double)a->pad_before[i];
    else if (i >= 0 && stem == 8 && !strncmp(name, "dilation", 8)) *value = (double)a->dilation[i];
    else return FNN_FAIL(FNN_STATUS_ARG, "node_attr: %s has nd, groups, activation and stride<i>, pad<i>, "
                         "dilation<i> (i < %d), not '%s'", n->op->info.name, a->nd, name);
    return FNN_STATUS_OK;
}

static void node_record(fnn_node *n, const conv_opts *o) {
    conv_attrs *a = FNN_ATTRS(n, conv_attrs);
    for (int i = 0; i < o->nd; i++) {
        a->stride[i] = o->stride[i];
        a->pad_before[i] = o->pad[2 * i];
        a->dilation[i] = o->dil[i];
    }
    a->groups = o->groups;
    a->nd = o->nd;
    a->act = o->act;
}

/* the geometry of a node's convolution, from its input, weight and output shapes */
static void node_geom(conv_geom *g, const fnn_node *n, bool transposed) {
    const conv_attrs *a = FNN_ATTRS(n, conv_attrs);
    int nd = a->nd, xnd = n->in_ndim[0];
    const int64_t *xs = n->in_shape[0], *ys = n->out_shape;
    int64_t N = xnd == nd + 2 ? xs[0] : 1, Cx = xs[xnd - nd - 1], Cy = ys[n->out_ndim - nd - 1];
    const int64_t *xsp = xs + xnd - nd, *ysp = ys + n->out_ndim - nd, *ks = n->in_shape[1] + 2;
    if (!transposed) geom_init(g, nd, N, Cx, Cy, a->groups, xsp, ysp, ks, a->stride, a->pad_before, a->dilation);
    else geom_init(g, nd, N, Cy, Cx, a->groups, ysp, xsp, ks, a->stride, a->pad_before, a->dilation);
}

/* the gradients a node's inputs want, as fresh outputs of their shapes (din[k] empty otherwise) */
static int grad_outputs(const fnn_node *n, int dev, fnn_tensor *din, float **dx, float **dw, float **db) {
    *dx = *dw = *db = NULL;
    if (n->next[0]) { FNN_TRY(fnn_new_output(&din[0], dev, n->in_ndim[0], n->in_shape[0])); *dx = fnn_data(&din[0]); }
    if (n->next[1]) { FNN_TRY(fnn_new_output(&din[1], dev, n->in_ndim[1], n->in_shape[1])); *dw = fnn_data(&din[1]); }
    if (n->n_inputs > 2 && n->next[2]) {
        FNN_TRY(fnn_new_output(&din[2], dev, 1, n->in_shape[2]));
        *db = fnn_data(&din[2]);
    }
    return FNN_STATUS_OK;
}

/* the shared part of a convolution's entry, once out is made: borrow the operands contiguous, run
 * the forward through the row of x's backend (nothing to run for an empty output, its activation too)
 * and record def's node, which keeps x (for dw), w (for dx) and, with an activation, the float32 y.
 * bfloat16 operands (the CPU only) are widened, exactly,
 * and flagged so (fnn_conv_args.exact); a bfloat16 out gets the row's float32 result rounded (to
 * nearest even), so the numbers are those of the float32 op on the widened operands, rounded. x and
 * w are saved as given (a bfloat16 x: half the bytes), widened again by the backward */
static int conv_apply(const fnn_op_def *def, const fnn_conv_row *row, fnn_tensor *out, const fnn_tensor *x,
                      const fnn_tensor *w, const fnn_tensor *b, const conv_geom *g, const conv_opts *o) {
    const bool narrow = fnn_is_bf16(out);
    fnn_tensor xt, wt, bt, xw, ww, bw, y32, kept;
    fnn_tensor *tmps[8] = {&xt, &wt, &bt, &xw, &ww, &bw, &y32, &kept};
    for (int i = 0; i < 8; i++) fnn_tensor_init(tmps[i]);
    int rc = FNN_STATUS_OK;
    const fnn_tensor *xf = x, *wf = w, *bf = b;
    if (fnn_is_bf16(x)) rc = fnn_cast(&xw, x, FNN_DTYPE_FLOAT32), xf = &xw;
    if (!rc && fnn_is_bf16(w)) rc = fnn_cast(&ww, w, FNN_DTYPE_FLOAT32), wf = &ww;
    if (!rc && b && fnn_is_bf16(b)) rc = fnn_cast(&bw, b, FNN_DTYPE_FLOAT32), bf = &bw;
    if (!rc && narrow) rc = fnn_new_output(&y32, out->device, out->ndim, out->shape);
    fnn_set_op(o->op);   /* the casts named themselves: what follows is the convolution's */
    /* the CPU's rows round y into out themselves (fnn_conv_args.yh); another backend's result is rounded here */
    const bool row_narrows = narrow && fnn_device_type_of(x->device) == FNN_DEVICE_CPU;
    fnn_conv_args a = {g, NULL, NULL, NULL, narrow ? fnn_data(&y32) : fnn_data(out), NULL, NULL, NULL, NULL, NULL,
                       NULL, (fnn_is_bf16(x) ? 1u : 0u) | (fnn_is_bf16(w) ? 2u : 0u),
                       row_narrows ? (uint16_t *)fnn_bytes(out) : NULL, o->act};
    /* dw will be wanted (a node whose weight needs a gradient): the row may keep x in its kernels'
     * layout for the backward weights, one more copy of x until the backward (saved[2]) */
    const fnn_tensor *wdep[1] = {w};
    if (fnn_needs_node(1, wdep)) a.keep_x = &kept;
    if (!rc) a.x = fnn_contiguous_data(xf, &xt, &rc);
    if (!rc) a.w = fnn_contiguous_data(wf, &wt, &rc);
    if (!rc && bf) a.b = fnn_contiguous_data(bf, &bt, &rc);
    const int64_t numel = fnn_tensor_numel(out);
    if (!rc && numel > 0) rc = row->forward(fnn_device_ordinal(x->device), &a);
    if (!rc && narrow && !row_narrows && numel > 0) fnn_to_bf16_matrix(fnn_bytes(out), fnn_data(&y32), 1, numel, numel);
    const fnn_tensor *ins[3] = {x, w, b};
    if (!rc && fnn_needs_node(3, ins)) {
        fnn_node *n = fnn_attach_node(out, def, 3, ins);
        if (!n) rc = fnn_last_status();
        else {
            node_record(n, o);
            /* x for dw, w for dx: float32 ones contiguous, bfloat16 ones as given */
            if (n->next[1]) rc = fnn_save(n, 0, fnn_is_bf16(x) || xt.ndim < 0 ? x : &xt);
            if (!rc && n->next[0]) rc = fnn_save(n, 1, fnn_is_bf16(w) || wt.ndim < 0 ? w : &wt);
            if (!rc && n->next[1] && kept.ndim >= 0) rc = fnn_save(n, 2, &kept);   /* x as the row keeps it */
            if (!rc && o->act) rc = fnn_save(n, 3, narrow ? &y32 : out);   /* relu's gradient reads y */
        }
    }
    for (int i = 0; i < 8; i++) fnn_tensor_clear(tmps[i]);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* din of n's inputs from dout through the backward of its op's row in dout's backend: the saved x
 * where dw is wanted, the saved w where dx is (widened where they were saved as bfloat16) */
static int row_backward(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din, bool transposed) {
    const fnn_conv_row *row = fnn_conv_row_for(dout->device, n->op->info.name);
    if (!row || !row->backward) return FNN_ROW_REFUSED(n->op->info.name, dout->device, true);
    conv_geom g;
    node_geom(&g, n, transposed);
    fnn_tensor dyt, xw, ww;
    fnn_tensor_init(&xw);
    fnn_tensor_init(&ww);
    int rc;
    fnn_conv_args a = {&g, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, FNN_ACT_NONE};
    a.dy = fnn_contiguous_data(dout, &dyt, &rc);
    if (!rc) rc = grad_outputs(n, dout->device, din, &a.dx, &a.dw, &a.db);
    const fnn_tensor *x = &n->saved[0], *w = &n->saved[1];
    if (!rc && a.dw && fnn_is_bf16(x)) rc = fnn_cast(&xw, x, FNN_DTYPE_FLOAT32), x = &xw, a.exact |= 1u;
    if (!rc && a.dx && fnn_is_bf16(w)) rc = fnn_cast(&ww, w, FNN_DTYPE_FLOAT32), w = &ww, a.exact |= 2u;
    if (!rc) {
        a.x = a.dw ? fnn_data(x) : NULL;
        a.w = a.dx ? fnn_data(w) : NULL;
        a.x_kept = a.dw && n->saved[2].ndim >= 0 ? fnn_data(&n->saved[2]) : NULL;
        rc = row->backward(fnn_device_ordinal(dout->device), &a);
    }
    fnn_tensor_clear(&dyt);
    fnn_tensor_clear(&xw);
    fnn_tensor_clear(&ww);
    if (rc) for (int i = 0; i < 3; i++) fnn_tensor_clear(&din[i]);
    return rc;
}

/* ---- conv1d, conv2d, conv3d ---- */

/* dx = conv^T(dy, w), dw, db: the convolution's own backward; with an activation dy = g relu'(y) first
 * (the elementwise family's relu gradient formula, y > 0 ? g : 0, on dout's backend) */
static int conv_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    if (!FNN_ATTRS(n, conv_attrs)->act) return row_backward(n, dout, din, false);
    fnn_tensor dz;
    const fnn_tensor *ins[2] = {dout, &n->saved[3]};
    FNN_TRY(fnn_elementwise_map(n->op->info.name, &dz, 2, ins, FNN_MAP_relu_g));
    int rc = row_backward(n, &dz, din, false);
    fnn_tensor_clear(&dz);
    return rc;
}
static const fnn_op_def CONV1D = {.info = {.name = "conv1d", .family = "conv", .differentiable = 1},
    .backward = conv_rule};
static const fnn_op_def CONV2D = {.info = {.name = "conv2d", .family = "conv", .differentiable = 1},
    .backward = conv_rule};
static const fnn_op_def CONV3D = {.info = {.name = "conv3d", .family = "conv", .differentiable = 1},
    .backward = conv_rule};
static const fnn_op_def *const CONV_DEFS[4] = {NULL, &CONV1D, &CONV2D, &CONV3D};

/* conv and conv_transpose once their options are read: the geometry, the output, then the row. The
 * output's dtype: float32 or bfloat16 as asked, or for -1 precision.lua's rule, so the numbers the
 * wrapper made around the float32 op: bfloat16 inside an autocast region (not held: a GEMM-bound op
 * there returns bfloat16) or when every float input is bfloat16 (promotion), float32 otherwise */
static int conv_run(const fnn_op_def *def, const conv_opts *o, fnn_tensor *out, const fnn_tensor *x,
                    const fnn_tensor *w, const fnn_tensor *b, int dtype) {
    FNN_CHECK(dtype == -1 || dtype == FNN_DTYPE_FLOAT32 || dtype == FNN_DTYPE_BFLOAT16, FNN_STATUS_ARG,
              "%s: output dtype code %d is not float32 (%d), bfloat16 (%d) or -1 (the rule)", o->op, dtype,
              FNN_DTYPE_FLOAT32, FNN_DTYPE_BFLOAT16);
    conv_geom g;
    int ondim;
    int64_t oshape[FNN_MAX_DIMS];
    const fnn_conv_row *row;
    FNN_TRY(conv_setup(o, x, w, b, &g, &ondim, oshape, &row));
    const bool all_bf16 = fnn_is_bf16(x) && fnn_is_bf16(w) && (!b || fnn_is_bf16(b));
    const bool narrow = dtype == -1 ? fnn_in_host_memory(x) && (all_bf16 || fnn_autocast_on())
                                    : dtype == FNN_DTYPE_BFLOAT16;
    if (narrow && !fnn_in_host_memory(x)) {
        char dev[32];
        return FNN_FAIL(FNN_STATUS_ARG, "%s: the %s backend makes a float32 output only, not bfloat16", o->op,
                        fnn_device_name(x->device, dev, sizeof dev));
    }
    FNN_TRY(fnn_new_output_dtype(out, x->device, narrow ? FNN_DTYPE_BFLOAT16 : FNN_DTYPE_FLOAT32, ondim, oshape));
    return conv_apply(def, row, out, x, w, b, &g, o);
}

/* x [N, C, *in] or [C, *in], w [O, C/groups, *k], b [O] or NULL -> [N, O, *out] (or [O, *out]),
 * out = (in + pad_before + pad_after - dil (k - 1) - 1) / stride + 1 per spatial dim */
int fnn_conv(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd,
             const int *stride, const int *padding, const int *dilation, int groups) {
    return fnn_conv_to(out, x, w, b, nd, stride, padding, dilation, groups, -1);
}

int fnn_conv_to(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd,
                const int *stride, const int *padding, const int *dilation, int groups, int dtype) {
    return fnn_conv_act_to(out, x, w, b, nd, stride, padding, dilation, groups, NULL, dtype);
}

/* with an activation applied in the same node (Keras' Conv2D(..., activation = 'relu')): NULL or "none",
 * or "relu", which the CPU's oneDNN kernels apply as a post-op, with no pass or tensor between */
int fnn_conv_act_to(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd,
                    const int *stride, const int *padding, const int *dilation, int groups, const char *activation,
                    int dtype) {
    fnn_tensor_init(out);
    FNN_CHECK(nd >= 1 && nd <= 3, FNN_STATUS_ARG, "conv: %d spatial dims, expected 1, 2 or 3", nd);
    conv_opts o;
    opts_read(&o, nd, false, stride, padding, NULL, dilation, groups);
    if (activation && !strcmp(activation, "relu")) o.act = FNN_ACT_RELU;
    else FNN_CHECK(!activation || !strcmp(activation, "none"), FNN_STATUS_ARG,
                   "%s: activation '%s' is not 'relu' or 'none'", o.op, activation);
    return conv_run(CONV_DEFS[nd], &o, out, x, w, b, dtype);
}

/* the 2-d form with symmetric padding, kept for C callers */
int fnn_conv2d(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int stride_h,
               int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups) {
    const int s[2] = {stride_h, stride_w}, p[4] = {pad_h, pad_h, pad_w, pad_w}, d[2] = {dil_h, dil_w};
    return fnn_conv(out, x, w, b, 2, s, p, d, groups);
}

/* ---- conv_transpose1d, conv_transpose2d, conv_transpose3d ---- */

/* y = conv^T(x, w) + b, so dx = conv(dy, w), dw = the weight gradient of conv(dy, .) against x,
 * db = sums of dy per channel */
static int conv_transpose_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    return row_backward(n, dout, din, true);
}
static const fnn_op_def CONV_TRANSPOSE1D = {.info = {.name = "conv_transpose1d", .family = "conv", .differentiable = 1},
    .backward = conv_transpose_rule};
static const fnn_op_def CONV_TRANSPOSE2D = {.info = {.name = "conv_transpose2d", .family = "conv", .differentiable = 1},
    .backward = conv_transpose_rule};
static const fnn_op_def CONV_TRANSPOSE3D = {.info = {.name = "conv_transpose3d", .family = "conv", .differentiable = 1},
    .backward = conv_transpose_rule};
static const fnn_op_def *const CONV_TRANSPOSE_DEFS[4] = {NULL, &CONV_TRANSPOSE1D, &CONV_TRANSPOSE2D, &CONV_TRANSPOSE3D};

/* x [N, Cin, *in] or [Cin, *in], w [Cin, Cout/groups, *k], b [Cout] or NULL -> [N, Cout, *out],
 * out = (in - 1) stride - pad_before - pad_after + dil (k - 1) + output_padding + 1: the input
 * gradient of the convolution of an [N, Cout, *out] input by w (gemm, then col2im) */
int fnn_conv_transpose(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd,
                       const int *stride, const int *padding, const int *output_padding, const int *dilation,
                       int groups) {
    return fnn_conv_transpose_to(out, x, w, b, nd, stride, padding, output_padding, dilation, groups, -1);
}

int fnn_conv_transpose_to(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd,
                          const int *stride, const int *padding, const int *output_padding, const int *dilation,
                          int groups, int dtype) {
    fnn_tensor_init(out);
    FNN_CHECK(nd >= 1 && nd <= 3, FNN_STATUS_ARG, "conv_transpose: %d spatial dims, expected 1, 2 or 3", nd);
    conv_opts o;
    opts_read(&o, nd, true, stride, padding, output_padding, dilation, groups);
    return conv_run(CONV_TRANSPOSE_DEFS[nd], &o, out, x, w, b, dtype);
}

const fnn_op_def *const fnn_ops_conv[] = {&CONV1D, &CONV2D, &CONV3D, &CONV_TRANSPOSE1D, &CONV_TRANSPOSE2D,
                                          &CONV_TRANSPOSE3D, NULL};

/* ================= the CPU's rows (conv.h's fnn_conv_row) =================
 * the op's terms onto run_forward / run_backward: a transposed op's forward is the input-gradient
 * pass of its geometry's convolution (its bias as bias_in), its backward that convolution's
 * forward (dx) and weight gradient (dw) */

/* the args' exact bits (x: bit 0, w: bit 1) as run_forward / run_backward's, x and w in the roles given */
static unsigned exact_of(const fnn_conv_args *a, unsigned x_role, unsigned w_role) {
    return (a->exact & 1u ? x_role : 0u) | (a->exact & 2u ? w_role : 0u);
}

static int cpu_conv_forward(int ordinal, const fnn_conv_args *a) {
    return run_forward(a->g, fnn_make_device(FNN_DEVICE_CPU, ordinal), a->x, a->w, a->b, a->y, a->keep_x,
                       exact_of(a, CONV_EXACT_X, CONV_EXACT_W), a->yh, a->act);
}
static int cpu_conv_backward(int ordinal, const fnn_conv_args *a) {
    return run_backward(a->g, fnn_make_device(FNN_DEVICE_CPU, ordinal), a->x, a->w, a->dy, NULL, a->dx, a->dw, a->db,
                        a->x_kept, exact_of(a, CONV_EXACT_X, CONV_EXACT_W));
}
static int cpu_conv_transpose_forward(int ordinal, const fnn_conv_args *a) {
    const conv_geom *g = a->g;
    FNN_TRY(run_backward(g, fnn_make_device(FNN_DEVICE_CPU, ordinal), NULL, a->w, a->x, a->b, a->y, NULL, NULL,
                         NULL, exact_of(a, CONV_EXACT_DY, CONV_EXACT_W)));
    narrow_into(a->yh, a->y, g->N * g->C * g->S);   /* y is the geometry's input gradient */
    return FNN_STATUS_OK;
}
static int cpu_conv_transpose_backward(int ordinal, const fnn_conv_args *a) {
    const conv_geom *g = a->g;
    const int dev = fnn_make_device(FNN_DEVICE_CPU, ordinal);
    int rc = FNN_STATUS_OK;
    if (a->dx)
        rc = run_forward(g, dev, a->dy, a->w, NULL, a->dx, NULL, exact_of(a, 0, CONV_EXACT_W), NULL, FNN_ACT_NONE);
    if (!rc && a->dw)
        rc = run_backward(g, dev, a->dy, NULL, a->x, NULL, NULL, a->dw, NULL, NULL, exact_of(a, CONV_EXACT_DY, 0));
    if (!rc && a->db)
        for (int64_t c = 0; c < g->C; c++) {
            float s = 0;
            for (int64_t i = 0; i < g->N; i++) s += sum_floats(a->dy + (i * g->C + c) * g->S, g->S);
            a->db[c] = s;
        }
    return rc;
}

const fnn_conv_row fnn_cpu_conv_rows[] = {
    {"conv1d", cpu_conv_forward, cpu_conv_backward},
    {"conv2d", cpu_conv_forward, cpu_conv_backward},
    {"conv3d", cpu_conv_forward, cpu_conv_backward},
    {"conv_transpose1d", cpu_conv_transpose_forward, cpu_conv_transpose_backward},
    {"conv_transpose2d", cpu_conv_transpose_forward, cpu_conv_transpose_backward},
    {"conv_transpose3d", cpu_conv_transpose_forward, cpu_conv_transpose_backward},
    {NULL, NULL, NULL},
};
