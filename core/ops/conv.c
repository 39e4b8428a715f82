/* conv.c: conv2d (stride, padding, dilation, groups, bias), max_pool2d and
 * avg_pool2d (stride, padding, ceil_mode; count_include_pad), CPU, PyTorch's
 * semantics and output sizes. Inputs are [N,C,H,W] or unbatched [C,H,W].
 *
 * conv2d is im2col + one cblas_sgemm per image and group:
 *     y[n,g] [Og, L] = w[g] [Og, Kg] @ col [Kg, L]     Kg = C/groups*kh*kw, L = Ho*Wo
 * col is rebuilt per image in a buffer that stays in cache, and a 1x1 / stride 1 /
 * pad 0 conv reads the input itself as col. Backward per image:
 *     dw[g] += dy[n,g] @ col^T    (col rebuilt from x, not saved: it is kh*kw times x)
 *     dx[n,g] = col2im(w[g]^T @ dy[n,g])
 *     db      = sum of dy over N, H, W
 * Images are split over the threads, each with its own col buffer and dw/db
 * partial sums, while OpenBLAS is held at one thread: so im2col and col2im run
 * in parallel too (not only the gemms, which are small: M 64, N 196, K 288 in a
 * small CNN, where OpenBLAS's own split gains little), and the two kinds of
 * threads never nest. With one thread (or fewer images than threads) the images
 * run in order and OpenBLAS threads each gemm as usual.
 *
 * Pooling walks each [H, W] plane; max_pool2d saves the argmax of every output
 * (int32 offsets into its plane) for backward; a 2x2 stride-2 unpadded pool,
 * the common case, has kernels of its own that write every input gradient once. */
#include "../internal.h"
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

void openblas_set_num_threads(int n);

/* ================= shared ================= */

static int check_cpu(const char *op, const fnn_tensor *x) {
    FNN_CHECK(fnn_device_type_of(x->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE, "%s: not implemented on cuda yet", op);
    return FNN_STATUS_OK;
}

/* float <-> bits, and c ? a : b through a mask: branch-free, so the pooling loops vectorize
 * (a float ternary may stay a branch under GCC's default -ftrapping-math) */
static inline uint32_t f2u(float x) { uint32_t u; memcpy(&u, &x, sizeof u); return u; }
static inline float u2f(uint32_t u) { float x; memcpy(&x, &u, sizeof x); return x; }
static inline float fsel(uint32_t mask, float a, float b) { return u2f((f2u(a) & mask) | (f2u(b) & ~mask)); }
static inline int32_t isel(uint32_t mask, int32_t a, int32_t b) { return (int32_t)(((uint32_t)a & mask) | ((uint32_t)b & ~mask)); }

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

/* PyTorch's pooling/conv output size: floor((in + 2p - ext) / s) + 1, or ceil in ceil_mode,
 * where the last window must start inside the input or the left padding */
static int64_t out_size(int64_t in, int64_t pad, int64_t ext, int64_t stride, bool ceil_mode) {
    int64_t span = in + 2 * pad - ext;   /* >= 0: checked by the callers */
    int64_t o = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    if (ceil_mode && (o - 1) * stride >= in + pad) o--;
    return o;
}

/* split [0, n) into `parts` near-equal ranges; range t */
static inline void split_range(int64_t n, int64_t parts, int64_t t, int64_t *lo, int64_t *hi) {
    int64_t q = n / parts, r = n % parts;
    *lo = t * q + (t < r ? t : r);
    *hi = *lo + q + (t < r);
}

/* run fn(ctx, slot, slot + 1) for slots 0..slots-1, one slot per thread. slots > 1 only where the
 * caller split the images over the threads: OpenBLAS is held at one thread meanwhile, so the gemms
 * inside each slot run on the thread that calls them (the setting is process-wide: a gemm that
 * another host thread runs meanwhile also runs on one thread, correct but slower) */
static void run_slots(int slots, fnn_range_fn fn, void *ctx) {
    if (slots <= 1) { fn(ctx, 0, 1); return; }
    openblas_set_num_threads(1);
    fnn_parallel_for(slots, slots, fn, ctx);
    openblas_set_num_threads(fnn_get_num_threads());
}

/* how many threads split `n` images costing `flops` in all (1: the images in order, OpenBLAS
 * threading each gemm; also where there are fewer images than threads). A flop of a gemm costs
 * about an eighth of an element of a memory-bound loop, fnn_threads_for's unit. */
static int image_slots(int64_t n, double flops) {
    int t = fnn_threads_for((int64_t)(flops > 1e15 ? 1e15 : flops) / 8);
    return n >= t ? t : 1;
}

/* ================= conv2d ================= */

typedef struct {
    int64_t N, C, H, W, O, kh, kw, Ho, Wo;
    int64_t sh, sw, ph, pw, dh, dw, groups;
    int64_t Cg, Og, Kg, L;     /* per group: input and output channels, col rows, col columns */
    bool pointwise;            /* 1x1, stride 1, no padding: col is the input itself */
    int batched;               /* 1: x is [N,C,H,W]; 0: [C,H,W] */
} conv_geom;

static void conv_geom_fill(conv_geom *g, int xnd, const int64_t *xs, const int64_t *ws, const int64_t *p) {
    g->batched = xnd == 4;
    g->N = g->batched ? xs[0] : 1;
    g->C = xs[xnd - 3]; g->H = xs[xnd - 2]; g->W = xs[xnd - 1];
    g->O = ws[0]; g->kh = ws[2]; g->kw = ws[3];
    g->sh = p[0]; g->sw = p[1]; g->ph = p[2]; g->pw = p[3]; g->dh = p[4]; g->dw = p[5]; g->groups = p[6];
    g->Ho = out_size(g->H, g->ph, g->dh * (g->kh - 1) + 1, g->sh, false);
    g->Wo = out_size(g->W, g->pw, g->dw * (g->kw - 1) + 1, g->sw, false);
    g->Cg = g->C / g->groups; g->Og = g->O / g->groups;
    g->Kg = g->Cg * g->kh * g->kw;
    g->L = g->Ho * g->Wo;
    g->pointwise = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* the valid output columns [lo, hi) of kernel column kj: 0 <= ox*sw + kj*dw - pw < W */
static inline void col_range(const conv_geom *g, int64_t kj, int64_t *lo, int64_t *hi) {
    int64_t off = kj * g->dw - g->pw;
    *lo = off >= 0 ? 0 : (-off + g->sw - 1) / g->sw;
    *hi = g->W - off <= 0 ? 0 : (g->W - off + g->sw - 1) / g->sw;
    if (*hi > g->Wo) *hi = g->Wo;
    if (*lo > *hi) *lo = *hi;
}

/* the valid output rows [lo, hi) of kernel row ki: 0 <= oy*sh + ki*dh - ph < H */
static inline void row_range(const conv_geom *g, int64_t ki, int64_t *lo, int64_t *hi) {
    int64_t off = ki * g->dh - g->ph;
    *lo = off >= 0 ? 0 : (-off + g->sh - 1) / g->sh;
    *hi = g->H - off <= 0 ? 0 : (g->H - off + g->sh - 1) / g->sh;
    if (*hi > g->Ho) *hi = g->Ho;
    if (*lo > *hi) *lo = *hi;
}

/* stride 1 with Wo == W ('same'-sized rows): a col row is the input plane shifted by one offset,
 * so it is one block copy, with the padding columns zeroed after */
static inline bool block_rows(const conv_geom *g) { return g->sh == 1 && g->sw == 1 && g->Wo == g->W; }

/* x [Cg, H, W] -> col [Cg*kh*kw, Ho*Wo]; row (c, ki, kj) holds x[c, oy*sh - ph + ki*dh, ox*sw - pw + kj*dw],
 * zero where that falls in the padding */
static void im2col(float *restrict col, const float *restrict x, const conv_geom *g) {
    const int64_t H = g->H, W = g->W, Ho = g->Ho, Wo = g->Wo, sw = g->sw, L = g->L;
    const bool block = block_rows(g);
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t ki = 0; ki < g->kh; ki++) {
            int64_t ylo, yhi;
            row_range(g, ki, &ylo, &yhi);
            for (int64_t kj = 0; kj < g->kw; kj++) {
                float *row = col + ((c * g->kh + ki) * g->kw + kj) * L;
                const float *xc = x + c * H * W;
                int64_t lo, hi, xoff = kj * g->dw - g->pw;
                col_range(g, kj, &lo, &hi);
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

/* the adjoint of im2col: dx [Cg, H, W] += col [Cg*kh*kw, Ho*Wo] at the positions im2col read.
 * col is scratch: the block path zeroes its padding columns so that one long add does a row */
static void col2im(float *restrict dx, float *restrict col, const conv_geom *g) {
    const int64_t H = g->H, W = g->W, Wo = g->Wo, sw = g->sw, L = g->L;
    const bool block = block_rows(g);
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t ki = 0; ki < g->kh; ki++) {
            int64_t ylo, yhi;
            row_range(g, ki, &ylo, &yhi);
            for (int64_t kj = 0; kj < g->kw; kj++) {
                float *row = col + ((c * g->kh + ki) * g->kw + kj) * L;
                float *dxc = dx + c * H * W;
                int64_t lo, hi, xoff = kj * g->dw - g->pw;
                col_range(g, kj, &lo, &hi);
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

typedef struct {
    const conv_geom *g;
    int slots;
    const float *x, *w, *b, *dy;
    float *y, *dx, *dw, *db;
    float *col;                /* per slot: col [Kg, L] */
    float *dw_part, *db_part;  /* partial sums of slots 1.. (slot 0 writes dw / db itself) */
} conv_job;

/* forward of the images of one slot, per image and group:
 *     y[n, g] [Og, L] = w[g] [Og, Kg] @ col [Kg, L] + b
 * the bias goes into y first and the gemm adds onto it (beta = 1): one pass over y, in cache */
static void conv_forward_slot(void *ctx, int64_t s0, int64_t s1) {
    const conv_job *j = ctx;
    const conv_geom *g = j->g;
    const int64_t Og = g->Og, Kg = g->Kg, L = g->L, HW = g->H * g->W;
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
                const float *xg = j->x + (n * g->C + gr * g->Cg) * HW, *src = xg;
                if (!g->pointwise) { im2col(col, xg, g); src = col; }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)Og, (int)L, (int)Kg, 1.0f,
                            j->w + gr * Og * Kg, (int)Kg, src, (int)L, bias ? 1.0f : 0.0f, yg, (int)L);
            }
    }
}

/* backward of the images of one slot, per image and group:
 *     dw[g] += dy[n, g] @ col^T          (col rebuilt from x)
 *     col    = w[g]^T @ dy[n, g],  dx[n, g] = col2im(col)   (1x1: the gemm writes dx itself)
 *     db    += row sums of dy[n, g] */
static void conv_backward_slot(void *ctx, int64_t s0, int64_t s1) {
    const conv_job *j = ctx;
    const conv_geom *g = j->g;
    const int64_t Og = g->Og, Kg = g->Kg, L = g->L, O = g->O, HW = g->H * g->W;
    for (int64_t s = s0; s < s1; s++) {
        int64_t n0, n1;
        split_range(g->N, j->slots, s, &n0, &n1);
        float *col = j->col ? j->col + s * Kg * L : NULL;
        float *dw = j->dw ? (s == 0 ? j->dw : j->dw_part + (s - 1) * O * Kg) : NULL;
        float *db = j->db ? (s == 0 ? j->db : j->db_part + (s - 1) * O) : NULL;
        if (dw) memset(dw, 0, sizeof(float) * (size_t)(O * Kg));
        if (db) memset(db, 0, sizeof(float) * (size_t)O);
        for (int64_t n = n0; n < n1; n++) {
            if (j->dx && !g->pointwise) memset(j->dx + n * g->C * HW, 0, sizeof(float) * (size_t)(g->C * HW));
            for (int64_t gr = 0; gr < g->groups; gr++) {
                const float *dyg = j->dy + (n * O + gr * Og) * L;
                if (db)
                    for (int64_t o = 0; o < Og; o++) db[gr * Og + o] += sum_floats(dyg + o * L, L);
                if (Kg == 0) continue;
                if (dw) {   /* dw[g] [Og, Kg] += dy [Og, L] @ col^T [L, Kg] */
                    const float *xg = j->x + (n * g->C + gr * g->Cg) * HW, *src = xg;
                    if (!g->pointwise) { im2col(col, xg, g); src = col; }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Og, (int)Kg, (int)L, 1.0f, dyg, (int)L,
                                src, (int)L, 1.0f, dw + gr * Og * Kg, (int)Kg);
                }
                if (j->dx) {   /* col [Kg, L] = w[g]^T [Kg, Og] @ dy [Og, L], folded back onto dx */
                    const float *wg = j->w + gr * Og * Kg;
                    float *dxg = j->dx + (n * g->C + gr * g->Cg) * HW;
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)Kg, (int)L, (int)Og, 1.0f, wg, (int)Kg,
                                dyg, (int)L, 0.0f, g->pointwise ? dxg : col, (int)L);
                    if (!g->pointwise) col2im(dxg, col, g);
                }
            }
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

/* conv2d's numbers in a node: iattr[0..6] = sh, sw, ph, pw, dh, dw, groups.
 * saved[0] = x (contiguous; kept only when w needs a gradient), saved[1] = w (contiguous; only
 * when x needs one) */
static int conv2d_backward(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    conv_geom g;
    conv_geom_fill(&g, n->in_ndim[0], n->in_shape[0], n->in_shape[1], n->iattr);
    bool want_dx = n->next[0] != NULL, want_dw = n->next[1] != NULL, want_db = n->n_inputs > 2 && n->next[2];
    fnn_tensor dyt;
    int rc;
    const float *dy = fnn_contiguous_data(dout, &dyt, &rc);
    if (rc) return rc;
    conv_job j = {&g, image_slots(g.N, 4.0 * (double)g.N * (double)g.O * (double)g.Kg * (double)g.L), NULL, NULL, NULL,
                  dy, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    int dev = dout->device;
    void *block = NULL;
    int64_t bytes = 0;
    if (want_dx) rc = fnn_new_output(&din[0], dev, n->in_ndim[0], n->in_shape[0]);
    if (!rc && want_dw) rc = fnn_new_output(&din[1], dev, 4, n->in_shape[1]);
    if (!rc && want_db) rc = fnn_new_output(&din[2], dev, 1, n->in_shape[2]);
    if (rc) goto done;
    if (want_dx) { j.dx = fnn_data(&din[0]); j.w = fnn_data(&n->saved[1]); }
    if (want_dw) { j.dw = fnn_data(&din[1]); j.x = fnn_data(&n->saved[0]); }
    if (want_db) j.db = fnn_data(&din[2]);
    if (g.N == 0 || g.O == 0) {   /* nothing flows back: zero gradients */
        if (j.dx) memset(j.dx, 0, sizeof(float) * (size_t)(g.N * g.C * g.H * g.W));
        if (j.dw) memset(j.dw, 0, sizeof(float) * (size_t)(g.O * g.Kg));
        if (j.db) memset(j.db, 0, sizeof(float) * (size_t)g.O);
        goto done;
    }
    if ((rc = job_scratch(&j, dev, want_dx || want_dw, want_dw, want_db, &block, &bytes))) goto done;
    run_slots(j.slots, conv_backward_slot, &j);
    for (int s = 1; s < j.slots; s++) {   /* the slots' partial sums, in a fixed order */
        if (j.dw) for (int64_t i = 0; i < g.O * g.Kg; i++) j.dw[i] += j.dw_part[(s - 1) * g.O * g.Kg + i];
        if (j.db) for (int64_t i = 0; i < g.O; i++) j.db[i] += j.db_part[(s - 1) * g.O + i];
    }
done:
    if (block) fnn_free(dev, block, bytes);
    fnn_tensor_clear(&dyt);
    if (rc) for (int i = 0; i < 3; i++) fnn_tensor_clear(&din[i]);
    return rc;
}
static const fnn_op_def CONV2D = {{"conv2d", "conv", 1, 0}, conv2d_backward, FNN_EMBEDS_NONE};

/* x [N,C,H,W] or [C,H,W], w [O, C/groups, kh, kw], b [O] or NULL -> [N,O,Ho,Wo] (or [O,Ho,Wo]),
 * Ho = (H + 2 ph - dh (kh - 1) - 1) / sh + 1, likewise Wo */
int fnn_conv2d(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int stride_h,
               int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups) {
    const char *op = "conv2d";
    fnn_tensor_init(out);
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(fnn_check_input(op, w));
    FNN_TRY(fnn_check_same_device(op, x, w));
    if (b) {
        FNN_TRY(fnn_check_input(op, b));
        FNN_TRY(fnn_check_same_device(op, x, b));
    }
    FNN_TRY(check_cpu(op, x));
    FNN_CHECK(x->ndim == 4 || x->ndim == 3, FNN_STATUS_SHAPE, "conv2d: input %s must be 4-D [N,C,H,W] or 3-D [C,H,W]",
              fnn_shape_of(x).s);
    FNN_CHECK(w->ndim == 4, FNN_STATUS_SHAPE, "conv2d: weight %s must be 4-D [out, in/groups, kh, kw]",
              fnn_shape_of(w).s);
    FNN_CHECK(stride_h >= 1 && stride_w >= 1, FNN_STATUS_ARG, "conv2d: stride %dx%d must be positive", stride_h, stride_w);
    FNN_CHECK(pad_h >= 0 && pad_w >= 0, FNN_STATUS_ARG, "conv2d: padding %dx%d must not be negative", pad_h, pad_w);
    FNN_CHECK(dil_h >= 1 && dil_w >= 1, FNN_STATUS_ARG, "conv2d: dilation %dx%d must be positive", dil_h, dil_w);
    FNN_CHECK(groups >= 1, FNN_STATUS_ARG, "conv2d: groups %d must be positive", groups);
    int64_t C = x->shape[x->ndim - 3], H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1];
    int64_t O = w->shape[0], kh = w->shape[2], kw = w->shape[3];
    FNN_CHECK(C % groups == 0, FNN_STATUS_SHAPE, "conv2d: input %s has %lld channels, not divisible by groups %d",
              fnn_shape_of(x).s, (long long)C, groups);
    FNN_CHECK(O % groups == 0, FNN_STATUS_SHAPE, "conv2d: weight %s has %lld output channels, not divisible by groups %d",
              fnn_shape_of(w).s, (long long)O, groups);
    FNN_CHECK(w->shape[1] * groups == C, FNN_STATUS_SHAPE,
              "conv2d: input %s has %lld channels, weight %s expects %lld (groups %d)", fnn_shape_of(x).s,
              (long long)C, fnn_shape_of(w).s, (long long)(w->shape[1] * groups), groups);
    FNN_CHECK(kh >= 1 && kw >= 1, FNN_STATUS_SHAPE, "conv2d: weight %s has an empty kernel", fnn_shape_of(w).s);
    FNN_CHECK(!b || (b->ndim == 1 && b->shape[0] == O), FNN_STATUS_SHAPE,
              "conv2d: bias %s does not match weight %s (expected [%lld])", b ? fnn_shape_of(b).s : "",
              fnn_shape_of(w).s, (long long)O);
    int64_t eh = (int64_t)dil_h * (kh - 1) + 1, ew = (int64_t)dil_w * (kw - 1) + 1;
    FNN_CHECK(eh <= H + 2 * (int64_t)pad_h && ew <= W + 2 * (int64_t)pad_w, FNN_STATUS_SHAPE,
              "conv2d: kernel %lldx%lld (dilation %dx%d) is larger than the padded input %lldx%lld "
              "(input %s, padding %dx%d)", (long long)kh, (long long)kw, dil_h, dil_w,
              (long long)(H + 2 * pad_h), (long long)(W + 2 * pad_w), fnn_shape_of(x).s, pad_h, pad_w);

    conv_geom g;
    int64_t params[7] = {stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups};
    conv_geom_fill(&g, x->ndim, x->shape, w->shape, params);
    FNN_CHECK(g.Kg <= INT_MAX && g.L <= INT_MAX && g.Og <= INT_MAX, FNN_STATUS_SHAPE,
              "conv2d: input %s and weight %s are too large for BLAS", fnn_shape_of(x).s, fnn_shape_of(w).s);
    int64_t oshape[4] = {g.N, O, g.Ho, g.Wo};
    FNN_TRY(fnn_new_output(out, x->device, x->ndim, g.batched ? oshape : oshape + 1));

    fnn_tensor xt, wt, bt;
    fnn_tensor_init(&wt);
    fnn_tensor_init(&bt);
    int rc;
    conv_job j = {&g, image_slots(g.N, 2.0 * (double)g.N * (double)O * (double)g.Kg * (double)g.L), NULL, NULL, NULL,
                  NULL, fnn_data(out), NULL, NULL, NULL, NULL, NULL, NULL};
    void *block = NULL;
    int64_t bytes = 0;
    j.x = fnn_contiguous_data(x, &xt, &rc);
    if (!rc) j.w = fnn_contiguous_data(w, &wt, &rc);
    if (!rc && b) j.b = fnn_contiguous_data(b, &bt, &rc);
    if (rc) goto done;
    if (g.N * O * g.L > 0) {
        if ((rc = job_scratch(&j, x->device, true, false, false, &block, &bytes))) goto done;
        run_slots(j.slots, conv_forward_slot, &j);
    }
    const fnn_tensor *ins[3] = {x, w, b};
    if (fnn_needs_node(3, ins)) {
        fnn_node *n = fnn_attach_node(out, &CONV2D, 3, ins);
        if (!n) { rc = fnn_last_status(); goto done; }
        for (int i = 0; i < 7; i++) n->iattr[i] = params[i];
        if (n->next[1] && (rc = fnn_save(n, 0, xt.ndim >= 0 ? &xt : x))) goto done;   /* x for dw */
        if (n->next[0] && (rc = fnn_save(n, 1, wt.ndim >= 0 ? &wt : w))) goto done;   /* w for dx */
    }
done:
    if (block) fnn_free(x->device, block, bytes);
    fnn_tensor_clear(&xt);
    fnn_tensor_clear(&wt);
    fnn_tensor_clear(&bt);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= pooling ================= */

typedef struct {
    int64_t planes, H, W, Ho, Wo, kh, kw, sh, sw, ph, pw;
    bool count_include_pad;
    bool fast;                 /* 2x2, stride 2, no padding, every window inside the input */
} pool_geom;

/* checks shared by the pools, then the geometry; out gets [.., Ho, Wo] */
static int pool_setup(const char *op, pool_geom *g, fnn_tensor *out, const fnn_tensor *x, int kh, int kw, int sh,
                      int sw, int ph, int pw, int ceil_mode) {
    fnn_tensor_init(out);
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(check_cpu(op, x));
    FNN_CHECK(x->ndim == 4 || x->ndim == 3, FNN_STATUS_SHAPE, "%s: input %s must be 4-D [N,C,H,W] or 3-D [C,H,W]",
              op, fnn_shape_of(x).s);
    FNN_CHECK(kh >= 1 && kw >= 1, FNN_STATUS_ARG, "%s: kernel %dx%d must be positive", op, kh, kw);
    FNN_CHECK(sh >= 1 && sw >= 1, FNN_STATUS_ARG, "%s: stride %dx%d must be positive", op, sh, sw);
    FNN_CHECK(ph >= 0 && pw >= 0 && ph <= kh / 2 && pw <= kw / 2, FNN_STATUS_ARG,
              "%s: padding %dx%d must be between 0 and half the kernel %dx%d", op, ph, pw, kh, kw);
    int nd = x->ndim;
    int64_t H = x->shape[nd - 2], W = x->shape[nd - 1];
    FNN_CHECK(H >= 1 && W >= 1, FNN_STATUS_SHAPE, "%s: input %s has an empty %lldx%lld plane", op,
              fnn_shape_of(x).s, (long long)H, (long long)W);
    FNN_CHECK(kh <= H + 2 * (int64_t)ph && kw <= W + 2 * (int64_t)pw, FNN_STATUS_SHAPE,
              "%s: kernel %dx%d is larger than the padded input %lldx%lld (input %s, padding %dx%d)", op, kh, kw,
              (long long)(H + 2 * ph), (long long)(W + 2 * pw), fnn_shape_of(x).s, ph, pw);
    g->planes = fnn_numel_of(nd - 2, x->shape);
    g->H = H; g->W = W;
    g->kh = kh; g->kw = kw; g->sh = sh; g->sw = sw; g->ph = ph; g->pw = pw;
    g->Ho = out_size(H, ph, kh, sh, ceil_mode != 0);
    g->Wo = out_size(W, pw, kw, sw, ceil_mode != 0);
    g->count_include_pad = false;
    g->fast = kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && 2 * g->Ho <= H && 2 * g->Wo <= W;
    int64_t shape[FNN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 2] = g->Ho;
    shape[nd - 1] = g->Wo;
    return fnn_new_output(out, x->device, nd, shape);
}

/* a node's pool geometry: iattr[0..6] = kh, kw, sh, sw, ph, pw, count_include_pad; the input shape */
static void pool_geom_of(pool_geom *g, const fnn_node *n) {
    int nd = n->in_ndim[0];
    g->planes = fnn_numel_of(nd - 2, n->in_shape[0]);
    g->H = n->in_shape[0][nd - 2]; g->W = n->in_shape[0][nd - 1];
    g->Ho = n->out_shape[nd - 2]; g->Wo = n->out_shape[nd - 1];
    g->kh = n->iattr[0]; g->kw = n->iattr[1]; g->sh = n->iattr[2]; g->sw = n->iattr[3];
    g->ph = n->iattr[4]; g->pw = n->iattr[5]; g->count_include_pad = n->iattr[6] != 0;
    g->fast = g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0 &&
              2 * g->Ho <= g->H && 2 * g->Wo <= g->W;
}

static void pool_record(fnn_node *n, const pool_geom *g) {
    n->iattr[0] = g->kh; n->iattr[1] = g->kw; n->iattr[2] = g->sh; n->iattr[3] = g->sw;
    n->iattr[4] = g->ph; n->iattr[5] = g->pw; n->iattr[6] = g->count_include_pad;
}

/* int32 argmax offsets live in a float tensor's buffer (same width); memcpy keeps the accesses typed */
static inline void put_i32(float *p, int64_t i, int32_t v) { memcpy(p + i, &v, sizeof v); }
static inline int32_t get_i32(const float *p, int64_t i) { int32_t v; memcpy(&v, p + i, sizeof v); return v; }

typedef struct {
    const pool_geom *g;
    const float *x, *dy;
    float *y, *dx, *idx;       /* idx: int32 argmax offsets (max), or NULL */
} pool_job;

/* ---- max_pool2d ---- */

/* planes [lo, hi): y [Ho, Wo] = max over each window of x [H, W] (padding is -inf), idx = its offset
 * in the plane; the first maximum in row-major window order wins ties, a nan wins over numbers */
static void max_forward_planes(void *ctx, int64_t lo, int64_t hi) {
    const pool_job *j = ctx;
    const pool_geom *g = j->g;
    const int64_t H = g->H, W = g->W, Ho = g->Ho, Wo = g->Wo;
    for (int64_t p = lo; p < hi; p++) {
        const float *x = j->x + p * H * W;
        float *y = j->y + p * Ho * Wo, *idx = j->idx ? j->idx + p * Ho * Wo : NULL;
        if (g->fast && !idx) {   /* no graph: the maxima alone (a nan wins, as below) */
            for (int64_t oy = 0; oy < Ho; oy++) {
                const float *r0 = x + 2 * oy * W, *r1 = r0 + W;
                float *yr = y + oy * Wo;
                for (int64_t ox = 0; ox < Wo; ox++) {
                    float m = r0[2 * ox], c1 = r0[2 * ox + 1], c2 = r1[2 * ox], c3 = r1[2 * ox + 1];
                    m = fsel(-(uint32_t)((c1 > m) | (c1 != c1)), c1, m);
                    m = fsel(-(uint32_t)((c2 > m) | (c2 != c2)), c2, m);
                    yr[ox] = fsel(-(uint32_t)((c3 > m) | (c3 != c3)), c3, m);
                }
            }
            continue;
        }
        if (g->fast) {   /* 2x2 / 2: the candidates in order a b / c d, branch-free so the row vectorizes */
            for (int64_t oy = 0; oy < Ho; oy++) {
                const float *r0 = x + 2 * oy * W, *r1 = r0 + W;
                float *yr = y + oy * Wo, *ir = idx + oy * Wo;
                const int32_t base = (int32_t)(2 * oy * W), w1 = (int32_t)W;
                for (int64_t ox = 0; ox < Wo; ox++) {
                    float m = r0[2 * ox], c1 = r0[2 * ox + 1], c2 = r1[2 * ox], c3 = r1[2 * ox + 1];
                    int32_t at = base + 2 * (int32_t)ox;
                    uint32_t t = -(uint32_t)((c1 > m) | (c1 != c1));   /* c != c: nan wins, as PyTorch */
                    m = fsel(t, c1, m); at = isel(t, base + 2 * (int32_t)ox + 1, at);
                    t = -(uint32_t)((c2 > m) | (c2 != c2));
                    m = fsel(t, c2, m); at = isel(t, base + w1 + 2 * (int32_t)ox, at);
                    t = -(uint32_t)((c3 > m) | (c3 != c3));
                    m = fsel(t, c3, m); at = isel(t, base + w1 + 2 * (int32_t)ox + 1, at);
                    yr[ox] = m;
                    put_i32(ir, ox, at);
                }
            }
            continue;
        }
        for (int64_t oy = 0; oy < Ho; oy++) {
            int64_t h0 = oy * g->sh - g->ph, h1 = h0 + g->kh < H ? h0 + g->kh : H;
            if (h0 < 0) h0 = 0;
            for (int64_t ox = 0; ox < Wo; ox++) {
                int64_t w0 = ox * g->sw - g->pw, w1 = w0 + g->kw < W ? w0 + g->kw : W;
                if (w0 < 0) w0 = 0;
                float m = -INFINITY;
                int64_t at = h0 * W + w0;
                for (int64_t iy = h0; iy < h1; iy++)
                    for (int64_t ix = w0; ix < w1; ix++) {
                        float v = x[iy * W + ix];
                        if (v > m || isnan(v)) { m = v; at = iy * W + ix; }
                    }
                y[oy * Wo + ox] = m;
                if (idx) put_i32(idx, oy * Wo + ox, (int32_t)at);
            }
        }
    }
}

/* planes [lo, hi): dx [H, W] = dy routed to each window's argmax (summed where windows overlap) */
static void max_backward_planes(void *ctx, int64_t lo, int64_t hi) {
    const pool_job *j = ctx;
    const pool_geom *g = j->g;
    const int64_t H = g->H, W = g->W, Ho = g->Ho, Wo = g->Wo;
    for (int64_t p = lo; p < hi; p++) {
        float *dx = j->dx + p * H * W;
        const float *dy = j->dy + p * Ho * Wo, *idx = j->idx + p * Ho * Wo;
        if (g->fast) {   /* windows tile the input: every covered element is written once, the rest zeroed */
            for (int64_t oy = 0; oy < Ho; oy++) {
                float *r0 = dx + 2 * oy * W, *r1 = r0 + W;
                const float *dr = dy + oy * Wo, *ir = idx + oy * Wo;
                const int32_t base = (int32_t)(2 * oy * W), w1 = (int32_t)W;
                for (int64_t ox = 0; ox < Wo; ox++) {
                    int32_t at = get_i32(ir, ox) - (base + 2 * (int32_t)ox);
                    float d = dr[ox];
                    r0[2 * ox] = fsel(-(uint32_t)(at == 0), d, 0.0f);
                    r0[2 * ox + 1] = fsel(-(uint32_t)(at == 1), d, 0.0f);
                    r1[2 * ox] = fsel(-(uint32_t)(at == w1), d, 0.0f);
                    r1[2 * ox + 1] = fsel(-(uint32_t)(at == w1 + 1), d, 0.0f);
                }
                for (int64_t ix = 2 * Wo; ix < W; ix++) r0[ix] = r1[ix] = 0;
            }
            if (2 * Ho < H) memset(dx + 2 * Ho * W, 0, sizeof(float) * (size_t)((H - 2 * Ho) * W));
            continue;
        }
        memset(dx, 0, sizeof(float) * (size_t)(H * W));
        for (int64_t o = 0; o < Ho * Wo; o++) dx[get_i32(idx, o)] += dy[o];
    }
}

/* both pools' backward: dx of the input's shape, filled plane by plane by `planes_fn`;
 * idx: the saved argmax offsets (max) or NULL (avg) */
static int pool_backward(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din, fnn_range_fn planes_fn, float *idx) {
    pool_geom g;
    pool_geom_of(&g, n);
    fnn_tensor dyt;
    int rc;
    pool_job j = {&g, NULL, NULL, NULL, NULL, idx};
    j.dy = fnn_contiguous_data(dout, &dyt, &rc);
    if (!rc) rc = fnn_new_output(&din[0], dout->device, n->in_ndim[0], n->in_shape[0]);
    if (!rc) {
        j.dx = fnn_data(&din[0]);
        fnn_parallel_for(g.planes, fnn_threads_for(g.planes * g.H * g.W), planes_fn, &j);
    }
    fnn_tensor_clear(&dyt);
    return rc;
}

/* saved[0] = the argmax offsets [planes * Ho * Wo] (int32 bits) */
static int max_pool2d_backward(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    return pool_backward(n, dout, din, max_backward_planes, fnn_data(&n->saved[0]));
}
static const fnn_op_def MAX_POOL2D = {{"max_pool2d", "conv", 1, 0}, max_pool2d_backward, FNN_EMBEDS_NONE};

int fnn_max_pool2d(fnn_tensor *out, const fnn_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, int ceil_mode) {
    pool_geom g;
    FNN_TRY(pool_setup("max_pool2d", &g, out, x, kh, kw, sh, sw, ph, pw, ceil_mode));
    if (g.H * g.W > INT32_MAX) {   /* the argmax offsets are int32 */
        fnn_tensor_clear(out);
        return FNN_FAIL(FNN_STATUS_SHAPE, "max_pool2d: input %s has planes of over 2^31 elements", fnn_shape_of(x).s);
    }
    fnn_tensor xt, idx;
    fnn_tensor_init(&idx);
    int rc;
    int64_t nout = g.planes * g.Ho * g.Wo;
    const fnn_tensor *ins[1] = {x};
    bool node = fnn_needs_node(1, ins);
    pool_job j = {&g, NULL, NULL, fnn_data(out), NULL, NULL};
    j.x = fnn_contiguous_data(x, &xt, &rc);
    if (!rc && node) rc = fnn_new_output(&idx, x->device, 1, &nout);   /* argmax offsets, for backward only */
    if (rc) goto done;
    if (node) j.idx = fnn_data(&idx);
    fnn_parallel_for(g.planes, fnn_threads_for(nout * g.kh * g.kw), max_forward_planes, &j);
    if (node) {
        fnn_node *n = fnn_attach_node(out, &MAX_POOL2D, 1, ins);
        if (!n || fnn_save(n, 0, &idx)) { rc = fnn_last_status(); goto done; }
        pool_record(n, &g);
    }
done:
    fnn_tensor_clear(&xt);
    fnn_tensor_clear(&idx);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ---- avg_pool2d ---- */

/* window (oy, ox): its rows [*h0, *h1) and columns [*w0, *w1) inside the input, and the divisor:
 * the window clipped to the padded input (count_include_pad), or to the input itself */
static inline float avg_window(const pool_geom *g, int64_t oy, int64_t ox, int64_t *h0, int64_t *h1, int64_t *w0,
                               int64_t *w1) {
    int64_t a = oy * g->sh - g->ph, b = ox * g->sw - g->pw;
    int64_t ae = a + g->kh < g->H + g->ph ? a + g->kh : g->H + g->ph;
    int64_t be = b + g->kw < g->W + g->pw ? b + g->kw : g->W + g->pw;
    int64_t padded = (ae - a) * (be - b);
    *h0 = a < 0 ? 0 : a; *w0 = b < 0 ? 0 : b;
    *h1 = ae < g->H ? ae : g->H; *w1 = be < g->W ? be : g->W;
    return (float)(g->count_include_pad ? padded : (*h1 - *h0) * (*w1 - *w0));
}

/* planes [lo, hi): y [Ho, Wo] = mean of each window of x [H, W] */
static void avg_forward_planes(void *ctx, int64_t lo, int64_t hi) {
    const pool_job *j = ctx;
    const pool_geom *g = j->g;
    const int64_t H = g->H, W = g->W, Ho = g->Ho, Wo = g->Wo;
    for (int64_t p = lo; p < hi; p++) {
        const float *x = j->x + p * H * W;
        float *y = j->y + p * Ho * Wo;
        if (g->fast) {
            for (int64_t oy = 0; oy < Ho; oy++) {
                const float *r0 = x + 2 * oy * W, *r1 = r0 + W;
                for (int64_t ox = 0; ox < Wo; ox++)
                    y[oy * Wo + ox] = 0.25f * ((r0[2 * ox] + r0[2 * ox + 1]) + (r1[2 * ox] + r1[2 * ox + 1]));
            }
            continue;
        }
        for (int64_t oy = 0; oy < Ho; oy++)
            for (int64_t ox = 0; ox < Wo; ox++) {
                int64_t h0, h1, w0, w1;
                float div = avg_window(g, oy, ox, &h0, &h1, &w0, &w1), s = 0;
                for (int64_t iy = h0; iy < h1; iy++)
                    for (int64_t ix = w0; ix < w1; ix++) s += x[iy * W + ix];
                y[oy * Wo + ox] = s / div;
            }
    }
}

/* planes [lo, hi): dx [H, W] = each window's dy / divisor spread over the window */
static void avg_backward_planes(void *ctx, int64_t lo, int64_t hi) {
    const pool_job *j = ctx;
    const pool_geom *g = j->g;
    const int64_t H = g->H, W = g->W, Ho = g->Ho, Wo = g->Wo;
    for (int64_t p = lo; p < hi; p++) {
        float *dx = j->dx + p * H * W;
        const float *dy = j->dy + p * Ho * Wo;
        if (g->fast) {
            for (int64_t oy = 0; oy < Ho; oy++) {
                float *r0 = dx + 2 * oy * W, *r1 = r0 + W;
                for (int64_t ox = 0; ox < Wo; ox++) {
                    float d = 0.25f * dy[oy * Wo + ox];
                    r0[2 * ox] = r0[2 * ox + 1] = r1[2 * ox] = r1[2 * ox + 1] = d;
                }
                for (int64_t ix = 2 * Wo; ix < W; ix++) r0[ix] = r1[ix] = 0;
            }
            if (2 * Ho < H) memset(dx + 2 * Ho * W, 0, sizeof(float) * (size_t)((H - 2 * Ho) * W));
            continue;
        }
        memset(dx, 0, sizeof(float) * (size_t)(H * W));
        for (int64_t oy = 0; oy < Ho; oy++)
            for (int64_t ox = 0; ox < Wo; ox++) {
                int64_t h0, h1, w0, w1;
                float d = dy[oy * Wo + ox] / avg_window(g, oy, ox, &h0, &h1, &w0, &w1);
                for (int64_t iy = h0; iy < h1; iy++)
                    for (int64_t ix = w0; ix < w1; ix++) dx[iy * W + ix] += d;
            }
    }
}

static int avg_pool2d_backward(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    return pool_backward(n, dout, din, avg_backward_planes, NULL);
}
static const fnn_op_def AVG_POOL2D = {{"avg_pool2d", "conv", 1, 0}, avg_pool2d_backward, FNN_EMBEDS_NONE};

int fnn_avg_pool2d(fnn_tensor *out, const fnn_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, int ceil_mode,
                   int count_include_pad) {
    pool_geom g;
    FNN_TRY(pool_setup("avg_pool2d", &g, out, x, kh, kw, sh, sw, ph, pw, ceil_mode));
    g.count_include_pad = count_include_pad != 0;
    fnn_tensor xt;
    int rc;
    pool_job j = {&g, NULL, NULL, fnn_data(out), NULL, NULL};
    j.x = fnn_contiguous_data(x, &xt, &rc);
    if (rc) goto done;
    fnn_parallel_for(g.planes, fnn_threads_for(g.planes * g.Ho * g.Wo * g.kh * g.kw), avg_forward_planes, &j);
    const fnn_tensor *ins[1] = {x};
    if (fnn_needs_node(1, ins)) {
        fnn_node *n = fnn_attach_node(out, &AVG_POOL2D, 1, ins);
        if (!n) { rc = fnn_last_status(); goto done; }
        pool_record(n, &g);
    }
done:
    fnn_tensor_clear(&xt);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

const fnn_op_def *const fnn_ops_conv[] = {&CONV2D, &MAX_POOL2D, &AVG_POOL2D, NULL};
