/* norm.c: fused layer_norm. One pass over each row computes its mean and
 * variance, a second writes y = (x - mean) * rstd * w + b; the per-row mean
 * and rstd are kept for the backward, which recomputes xhat from them instead
 * of storing it. Composed from mean/var/rsqrt the same op costs ~8 tensors of
 * x's size and as many graph nodes. */
#include "../internal.h"
#include <math.h>
#include <stdlib.h>

/* ================= layer_norm: x [..., N] (rows of N trailing elements) -> x's shape ================= */

typedef struct {
    const float *x, *w, *b;   /* x contiguous [rows, n]; w, b [n] or NULL */
    float *y, *stats;         /* y [rows, n]; stats [rows, 2] (mean, rstd) or NULL */
    int64_t n;
    double eps;
} ln_fwd_args;

/* rows lo..hi-1: two passes over the row in double (stable for large means), then y */
static void ln_fwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const ln_fwd_args *a = ctx;
    const int64_t n = a->n;
    for (int64_t i = lo; i < hi; i++) {
        const float *xi = a->x + i * n;
        float *yi = a->y + i * n;
        double s = 0;
        for (int64_t j = 0; j < n; j++) s += xi[j];
        const double mean = s / (double)n;
        double v = 0;
        for (int64_t j = 0; j < n; j++) { double d = xi[j] - mean; v += d * d; }
        const double rstd = 1.0 / sqrt(v / (double)n + a->eps);   /* biased variance, eps inside */
        const float m = (float)mean, r = (float)rstd;
        if (a->w && a->b) for (int64_t j = 0; j < n; j++) yi[j] = (xi[j] - m) * r * a->w[j] + a->b[j];
        else if (a->w)    for (int64_t j = 0; j < n; j++) yi[j] = (xi[j] - m) * r * a->w[j];
        else if (a->b)    for (int64_t j = 0; j < n; j++) yi[j] = (xi[j] - m) * r + a->b[j];
        else              for (int64_t j = 0; j < n; j++) yi[j] = (xi[j] - m) * r;
        if (a->stats) { a->stats[2 * i] = m; a->stats[2 * i + 1] = r; }
    }
}

typedef struct {
    const float *x, *g, *w, *stats;   /* x, g contiguous [rows, n]; w [n] or NULL; stats [rows, 2] */
    float *dx, *dw, *db;              /* dx [rows, n]; dw, db [n]; any may be NULL */
    int64_t rows, n;
} ln_bwd_args;

/* dx rows lo..hi-1: with gw = g*w and xhat = (x - mean) * rstd,
 * dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) */
static void ln_bwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const ln_bwd_args *a = ctx;
    const int64_t n = a->n;
    for (int64_t i = lo; i < hi; i++) {
        const float *xi = a->x + i * n, *gi = a->g + i * n;
        float *di = a->dx + i * n;
        const float m = a->stats[2 * i], r = a->stats[2 * i + 1];
        double s1 = 0, s2 = 0;
        for (int64_t j = 0; j < n; j++) {
            float gw = a->w ? gi[j] * a->w[j] : gi[j];
            s1 += gw;
            s2 += gw * ((xi[j] - m) * r);
        }
        const float c1 = (float)(s1 / (double)n), c2 = (float)(s2 / (double)n);
        for (int64_t j = 0; j < n; j++) {
            float gw = a->w ? gi[j] * a->w[j] : gi[j];
            di[j] = r * (gw - c1 - (xi[j] - m) * r * c2);
        }
    }
}

enum { LN_COLS = 16 };   /* columns per dw/db task: one 64-byte line of each row */

/* dw, db for column blocks lo..hi-1: sums over all rows in row order, so the bits do not
 * depend on the thread count (each column is owned by one task) */
static void ln_bwd_cols(void *ctx, int64_t lo, int64_t hi) {
    const ln_bwd_args *a = ctx;
    const int64_t n = a->n;
    for (int64_t blk = lo; blk < hi; blk++) {
        int64_t j0 = blk * LN_COLS, j1 = j0 + LN_COLS < n ? j0 + LN_COLS : n;
        double sw[LN_COLS] = {0}, sb[LN_COLS] = {0};
        for (int64_t i = 0; i < a->rows; i++) {
            const float *xi = a->x + i * n, *gi = a->g + i * n;
            const float m = a->stats[2 * i], r = a->stats[2 * i + 1];
            for (int64_t j = j0; j < j1; j++) {
                sw[j - j0] += gi[j] * ((xi[j] - m) * r);
                sb[j - j0] += gi[j];
            }
        }
        for (int64_t j = j0; j < j1; j++) {
            if (a->dw) a->dw[j] = (float)sw[j - j0];
            if (a->db) a->db[j] = (float)sb[j - j0];
        }
    }
}

/* backward: saved[0] x (contiguous), saved[1] stats [rows, 2], saved[2] w when given */
static int layer_norm_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *x = &n->saved[0], *st = &n->saved[1];
    const bool has_w = n->iattr[1] != 0;
    const int64_t cols = n->iattr[0], total = fnn_tensor_numel(x), rows = cols > 0 ? total / cols : 0;
    fnn_tensor gc;
    int rc;
    const float *gp = fnn_contiguous_data(g, &gc, &rc);
    if (rc) return rc;
    float *dx = NULL, *dw = NULL, *db = NULL;
    if (n->next[0] && !(rc = fnn_new_output(&din[0], x->device, n->in_ndim[0], n->in_shape[0])))
        dx = fnn_data(&din[0]);
    if (!rc && n->next[1] && !(rc = fnn_new_output(&din[1], x->device, n->in_ndim[1], n->in_shape[1])))
        dw = fnn_data(&din[1]);
    if (!rc && n->next[2] && !(rc = fnn_new_output(&din[2], x->device, n->in_ndim[2], n->in_shape[2])))
        db = fnn_data(&din[2]);
    if (!rc) {
        ln_bwd_args a = {fnn_data(x), gp, has_w ? fnn_data(&n->saved[2]) : NULL, fnn_data(st),
                         dx, dw, db, rows, cols};
        if (dx) fnn_parallel_for(rows, fnn_threads_for(total * 4), ln_bwd_rows, &a);
        if (dw || db) fnn_parallel_for((cols + LN_COLS - 1) / LN_COLS, fnn_threads_for(total * 2), ln_bwd_cols, &a);
    }
    fnn_tensor_clear(&gc);
    if (rc) for (int k = 0; k < 3; k++) fnn_tensor_clear(&din[k]);
    return rc;
}
static const fnn_op_def LAYER_NORM = {{"layer_norm", "norm", 1, 0}, layer_norm_backward, FNN_EMBEDS_NONE};

/* check an optional affine tensor: same device as x, `normalized` elements */
static int ln_check_affine(const fnn_tensor *x, const fnn_tensor *t, const char *what, int64_t normalized) {
    if (!t) return FNN_STATUS_OK;
    FNN_TRY(fnn_check_input("layer_norm", t));
    FNN_TRY(fnn_check_same_device("layer_norm", x, t));
    FNN_CHECK(fnn_tensor_numel(t) == normalized, FNN_STATUS_SHAPE,
              "layer_norm: %s %s has %lld elements, expected %lld (the normalized size) for input %s", what,
              fnn_shape_of(t).s, (long long)fnn_tensor_numel(t), (long long)normalized, fnn_shape_of(x).s);
    return FNN_STATUS_OK;
}

int fnn_layer_norm(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b,
                   int64_t normalized, double eps) {
    FNN_TRY(fnn_check_input("layer_norm", x));
    /* normalized must be the product of some trailing dims (none: 1) */
    bool trailing = false;
    int64_t p = 1;
    for (int d = x->ndim; d >= 0 && !trailing; d--) {
        if (d < x->ndim) p *= x->shape[d];
        trailing = p == normalized;
    }
    FNN_CHECK(normalized >= 1 && trailing, FNN_STATUS_SHAPE,
              "layer_norm: normalized size %lld is not the product of trailing dims of input %s",
              (long long)normalized, fnn_shape_of(x).s);
    FNN_CHECK(eps >= 0, FNN_STATUS_ARG, "layer_norm: eps %g is negative (input %s)", eps, fnn_shape_of(x).s);
    FNN_TRY(ln_check_affine(x, w, "weight", normalized));
    FNN_TRY(ln_check_affine(x, b, "bias", normalized));
    FNN_CHECK(fnn_device_type_of(x->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "layer_norm: not implemented on cuda yet");

    const fnn_tensor *ins[3] = {x, w, b};
    const bool grad = fnn_needs_node(3, ins);
    const int64_t total = fnn_tensor_numel(x), rows = total / normalized;
    fnn_tensor xc, wc, bc, stats;
    fnn_tensor_init(&stats);
    fnn_tensor_init(&wc);
    fnn_tensor_init(&bc);
    int rc = 0, rc2 = 0, rc3 = 0;
    const float *xp = fnn_contiguous_data(x, &xc, &rc);
    const float *wp = w ? fnn_contiguous_data(w, &wc, &rc2) : NULL;
    const float *bp = b ? fnn_contiguous_data(b, &bc, &rc3) : NULL;
    if (!rc) rc = rc2;
    if (!rc) rc = rc3;
    int64_t sshape[2] = {rows, 2};
    if (!rc && grad) rc = fnn_new_output(&stats, x->device, 2, sshape);
    if (!rc) rc = fnn_new_output(out, x->device, x->ndim, x->shape);
    if (!rc) {
        ln_fwd_args a = {xp, wp, bp, fnn_data(out), grad ? fnn_data(&stats) : NULL, normalized, eps};
        fnn_parallel_for(rows, fnn_threads_for(total * 4), ln_fwd_rows, &a);   /* 3 passes + a sqrt per row */
    }
    if (!rc && grad) {
        fnn_node *n = fnn_attach_node(out, &LAYER_NORM, 3, ins);
        if (!n) rc = fnn_last_status();
        else {
            n->iattr[0] = normalized;
            n->iattr[1] = w != NULL;
            n->attr[0] = eps;
            /* x as read (the contiguous copy when one was made), so the backward reads it flat */
            if (fnn_save(n, 0, fnn_tensor_is_contiguous(x) ? x : &xc) || fnn_save(n, 1, &stats) ||
                (w && fnn_save(n, 2, fnn_tensor_is_contiguous(w) ? w : &wc)))
                rc = fnn_last_status();
        }
    }
    fnn_tensor_clear(&xc);
    fnn_tensor_clear(&wc);
    fnn_tensor_clear(&bc);
    fnn_tensor_clear(&stats);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

const fnn_op_def *const fnn_ops_norm[] = {&LAYER_NORM, NULL};
