/* norm.c: fused normalizations, each one graph node: layer_norm (rows of trailing elements),
 * batch_norm (per channel over N and the spatial dims; training and eval), group_norm (per
 * sample and group of channels; instance norm is one group per channel) and rms_norm. The
 * forward computes the statistics (in one pass of shifted sums, float lanes within chunks), writes
 * y = (x - mean) * rstd * w + b, and keeps only mean and rstd for the backward, which recomputes
 * xhat from them instead of storing it. Composed from mean/var/rsqrt the same op costs ~8 tensors of x's size and as many
 * graph nodes. Every reduction runs in a fixed order, so results do not depend on the thread count.
 * batch_norm can apply a relu in its own passes ({activation = 'relu'}), and add_layer_norm adds a
 * residual in layer_norm's (s = x + r, y = layer_norm(s)), each the bits of the composition.
 * The entry points and backward rules are written once and run the kernels through the row of x's
 * backend (norm.h): the CPU rows at the end of this file, cuda/norm.cu's on a GPU. */
#include "norm.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================= shared by every normalization ================= */

/* a norm op's node: what its rule reads, and eps as the forward had it (no rule reads it) */
typedef struct {
    double eps;
    int64_t normalized;   /* layer_norm, rms_norm: the trailing elements normalized together */
    int64_t groups;       /* group_norm */
    bool training;        /* batch_norm: batch statistics (else the running ones) */
    bool has_weight;      /* saved[2] holds the weight */
    int activation;       /* batch_norm: FNN_NORM_ACT_*; with relu, saved[3] holds the output (its mask) */
} norm_attrs;

/* the hot rows are memory-bound but gain from 8-lane AVX2 where the CPU has it: GCC on x86-64
 * glibc builds them twice and picks at load time (as elementwise.c does) */

enum { NORM_CHUNK = 1024 };   /* floats summed in float lanes before the partial goes to a double */

/* 8 float lanes (GCC/clang vector extension: two SSE registers, or one AVX register in the
 * x86-64-v3 clone; the same lanes and sum order either way). GCC 12 turns a float a[8] lane array
 * into shuffles and scalar adds */
typedef float norm_v8 __attribute__((vector_size(32)));
/* vectors never cross a call boundary (a 32-byte vector argument changes the ABI without AVX) */
#define LOAD8(v, ptr) memcpy(&(v), (ptr), sizeof(v))
static inline float sum8(const norm_v8 *v) {
    const float *a = (const float *)v;
    return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/* s1 += sum(p w - kp), s2 += sum((p w - kp) * (x - kx)) over n elements, w a weight per element
 * or NULL (1): with p = x, kp = kx = a shift near the mean, the moments of a one-pass variance
 * s2/n - (s1/n)^2 that does not cancel; with p = g, kp = 0, kx = mean, the sums of a
 * normalization's backward (weighted: layer_norm's and rms_norm's g w). 8 float lanes within
 * chunks of NORM_CHUNK (one accumulator would be a chain of dependent adds), chunks in double */
static inline void pair_sums(const float *p, const float *w, const float *x, int64_t n, float kp, float kx,
                             double *s1, double *s2) {
    double d1 = 0, d2 = 0;
    for (int64_t i0 = 0; i0 < n; i0 += NORM_CHUNK) {
        const int64_t i1 = i0 + NORM_CHUNK < n ? i0 + NORM_CHUNK : n;
        norm_v8 a = {0}, b = {0};
        int64_t i = i0;
        for (; i + 8 <= i1; i += 8) {
            norm_v8 pv, xv;
            LOAD8(pv, p + i);
            LOAD8(xv, x + i);
            if (w) {
                norm_v8 wv;
                LOAD8(wv, w + i);
                pv *= wv;
            }
            const norm_v8 u = pv - kp;
            a += u;
            b += u * (xv - kx);
        }
        float ta = sum8(&a), tb = sum8(&b);
        for (; i < i1; i++) {
            float u = (w ? p[i] * w[i] : p[i]) - kp;
            ta += u;
            tb += u * (x[i] - kx);
        }
        d1 += ta;
        d2 += tb;
    }
    *s1 += d1;
    *s2 += d2;
}

/* pair_sums for p = g where yo > 0, else 0 (kp = 0, no weight): batch norm's backward sums over
 * relu's gradient (yo the fused forward's output; relu's own row's select, so 0 at 0 and a NaN g
 * masked out), in pair_sums' lanes and order, so the sums are the bits of the unfused pair */
typedef int norm_i8 __attribute__((vector_size(32)));
static inline void masked_sums(const float *g, const float *yo, const float *x, int64_t n, float kx, double *s1,
                               double *s2) {
    double d1 = 0, d2 = 0;
    const norm_v8 zero = {0};
    for (int64_t i0 = 0; i0 < n; i0 += NORM_CHUNK) {
        const int64_t i1 = i0 + NORM_CHUNK < n ? i0 + NORM_CHUNK : n;
        norm_v8 a = {0}, b = {0};
        int64_t i = i0;
        for (; i + 8 <= i1; i += 8) {
            norm_v8 gv, yv, xv;
            LOAD8(gv, g + i);
            LOAD8(yv, yo + i);
            LOAD8(xv, x + i);
            const norm_v8 u = (norm_v8)((norm_i8)gv & (yv > zero));   /* the lanes' -1 where yo > 0 */
            a += u;
            b += u * (xv - kx);
        }
        float ta = sum8(&a), tb = sum8(&b);
        for (; i < i1; i++) {
            const float u = yo[i] > 0 ? g[i] : 0.0f;
            ta += u;
            tb += u * (x[i] - kx);
        }
        d1 += ta;
        d2 += tb;
    }
    *s1 += d1;
    *s2 += d2;
}

/* y = (x - m) a + b over n elements */
static inline void affine_row(float *y, const float *x, int64_t n, float m, float a, float b) {
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) * a + b;
}

/* the same, then relu (its row's formula: NaN goes to 0), in the one pass that writes y */
static inline void affine_relu_row(float *y, const float *x, int64_t n, float m, float a, float b) {
    for (int64_t i = 0; i < n; i++) {
        const float v = (x[i] - m) * a + b;
        y[i] = v > 0 ? v : 0.0f;
    }
}

/* dx = a g + b (x - m) + c over n elements: every normalization's input gradient has this form
 * per channel once its sums are known */
static inline void dx_row(float *dx, const float *g, const float *x, int64_t n, float m, float a, float b, float c) {
    for (int64_t i = 0; i < n; i++) dx[i] = a * g[i] + b * (x[i] - m) + c;
}

/* dx_row of relu's gradient: g where yo (the fused forward's output) > 0, else 0 */
static inline void dx_masked_row(float *dx, const float *g, const float *yo, const float *x, int64_t n, float m,
                                 float a, float b, float c) {
    for (int64_t i = 0; i < n; i++) {
        const float gi = yo[i] > 0 ? g[i] : 0.0f;
        dx[i] = a * gi + b * (x[i] - m) + c;
    }
}

/* op's row in device's backend; a backend without one (or without its backward) refuses op by name */
static int norm_row(const char *op, int device, bool backward, const fnn_nrm_row **row) {
    *row = fnn_norm_row_for(device, op);
    if (!*row || !(backward ? (*row)->backward : (*row)->forward)) return FNN_ROW_REFUSED(op, device, backward);
    return FNN_STATUS_OK;
}

/* an optional per-channel tensor (weight, bias, running stats): float32, x's device, [C] */
static int check_channels(const char *op, const fnn_tensor *x, const fnn_tensor *t, const char *what, int64_t c) {
    if (!t) return FNN_STATUS_OK;
    FNN_TRY(fnn_check_input(op, t));
    FNN_TRY(fnn_check_same_device(op, x, t));
    FNN_CHECK(t->ndim == 1 && t->shape[0] == c, FNN_STATUS_SHAPE,
              "%s: %s %s does not match the %lld channels of input %s (expected [%lld])", op, what,
              fnn_shape_of(t).s, (long long)c, fnn_shape_of(x).s, (long long)c);
    return FNN_STATUS_OK;
}

/* ================= layer_norm: x [..., N] (rows of N trailing elements) -> x's shape ================= */

typedef struct {
    const float *x, *w, *b;   /* x contiguous [rows, n]; w, b [n] or NULL */
    float *y, *stats;         /* y [rows, n]; stats [rows, 2] (mean, rstd) or NULL */
    const float *res;         /* add_layer_norm: the residual [rows, n] added first, or NULL */
    float *sum;               /* with res: x + res [rows, n], normalized in x's place */
    int64_t n;
    double eps;
} ln_fwd_args;

/* rows lo..hi-1: the moments in one pass of shifted sums in float lanes (pair_sums, as group_norm
 * does; two passes with a double accumulator were a chain of dependent adds, 7% of a char_gpt
 * step), then y */
static FNN_CLONES_V4 void ln_fwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const ln_fwd_args *a = ctx;
    const int64_t n = a->n, m16 = n < 16 ? n : 16;
    for (int64_t i = lo; i < hi; i++) {
        const float *xi = a->x + i * n;
        float *yi = a->y + i * n;
        if (a->res) {   /* the row's sum first: the passes below read it while it is in cache */
            float *si = a->sum + i * n;
            const float *ri = a->res + i * n;
            for (int64_t j = 0; j < n; j++) si[j] = xi[j] + ri[j];
            xi = si;
        }
        double k0 = 0;
        for (int64_t j = 0; j < m16; j++) k0 += xi[j];
        const float k = m16 > 0 ? (float)(k0 / (double)m16) : 0.0f;   /* a shift near the mean */
        double s1 = 0, s2 = 0;
        pair_sums(xi, NULL, xi, n, k, k, &s1, &s2);
        const double d = s1 / (double)n, var = s2 / (double)n - d * d;
        const double rstd = 1.0 / sqrt((var > 0 ? var : 0) + a->eps);   /* biased variance, eps inside */
        const float m = (float)(k + d), r = (float)rstd;
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
    int64_t rows, n, per_part;        /* rows per part (LN_PARTS fixed parts, by rows alone) */
    double *part;                     /* [parts, 2, n]: each part's sums of g xhat and of g (dw, db) */
} ln_bwd_args;

/* parts lo..hi-1 of the rows, in one pass over x and g: dx with gw = g*w and xhat = (x - mean) * rstd,
 * dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), and the part's column sums of g xhat and g
 * for dw and db (added in part order after: the same bits at any thread count). The sums were a
 * second pass over x and g by blocks of columns */
enum { LN_PARTS = 32 };
static FNN_CLONES_V4 void ln_bwd_parts(void *ctx, int64_t lo, int64_t hi) {
    const ln_bwd_args *a = ctx;
    const int64_t n = a->n;
    for (int64_t k = lo; k < hi; k++) {
        double *sw = a->part ? a->part + k * 2 * n : NULL, *sb = sw ? sw + n : NULL;
        if (sw) for (int64_t j = 0; j < 2 * n; j++) sw[j] = 0;
        const int64_t end = (k + 1) * a->per_part < a->rows ? (k + 1) * a->per_part : a->rows;
        for (int64_t i = k * a->per_part; i < end; i++) {
            const float *xi = a->x + i * n, *gi = a->g + i * n;
            const float m = a->stats[2 * i], r = a->stats[2 * i + 1];
            if (a->dx) {
                float *di = a->dx + i * n;
                double s1 = 0, s2 = 0;   /* sum g w, sum g w (x - m) */
                pair_sums(gi, a->w, xi, n, 0.0f, m, &s1, &s2);
                const float c1 = (float)(s1 / (double)n), c2 = (float)(s2 * r / (double)n);
                for (int64_t j = 0; j < n; j++) {
                    float gw = a->w ? gi[j] * a->w[j] : gi[j];
                    di[j] = r * (gw - c1 - (xi[j] - m) * r * c2);
                }
            }
            if (sw)
                for (int64_t j = 0; j < n; j++) {
                    sw[j] += gi[j] * ((xi[j] - m) * r);
                    sb[j] += gi[j];
                }
        }
    }
}

static int layer_norm_cpu(int ordinal, const fnn_nrm_args *p) {
    (void)ordinal;
    ln_fwd_args a = {p->x, p->w, p->b, p->y, p->stats, p->res, p->sum, p->C, p->eps};
    /* 3 passes + a sqrt per row, and the residual's add */
    fnn_parallel_for(p->N, fnn_threads_for(p->N * p->C * (p->res ? 5 : 4)), ln_fwd_rows, &a);
    return FNN_STATUS_OK;
}

static int layer_norm_grad_cpu(int ordinal, const fnn_nrm_args *p) {
    const int64_t rows = p->N, cols = p->C, total = rows * cols;
    const int64_t parts = rows < LN_PARTS ? rows : LN_PARTS, per_part = parts ? (rows + parts - 1) / parts : 0;
    if (per_part == 0) {   /* no rows: dw and db are zeros */
        for (int64_t j = 0; j < cols; j++) { if (p->dw) p->dw[j] = 0; if (p->db) p->db[j] = 0; }
        return FNN_STATUS_OK;
    }
    const int64_t used = (rows + per_part - 1) / per_part, bytes = (int64_t)sizeof(double) * used * 2 * cols;
    const bool sums = p->dw || p->db;
    const int dev = fnn_make_device(FNN_DEVICE_CPU, ordinal);
    double *part = sums && bytes > 0 ? fnn_alloc(dev, bytes) : NULL;
    if (sums && bytes > 0 && !part) return fnn_last_status();
    ln_bwd_args a = {p->x, p->g, p->w, p->stats, p->y, p->dw, p->db, rows, cols, per_part, part};
    fnn_parallel_for(used, fnn_threads_for(total * (p->y ? 6 : 2)), ln_bwd_parts, &a);
    if (part) {
        for (int64_t j = 0; j < cols; j++) {
            double w = 0, b = 0;
            for (int64_t k = 0; k < used; k++) { w += part[k * 2 * cols + j]; b += part[k * 2 * cols + cols + j]; }
            if (p->dw) p->dw[j] = (float)w;
            if (p->db) p->db[j] = (float)b;
        }
        fnn_free(dev, part, bytes);
    }
    return FNN_STATUS_OK;
}

/* backward: saved[0] x (contiguous), saved[1] stats [rows, 2], saved[2] w when given */
static int layer_norm_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *x = &n->saved[0], *st = &n->saved[1];
    const norm_attrs *at = FNN_ATTRS(n, norm_attrs);
    const fnn_nrm_row *row;
    FNN_TRY(norm_row("layer_norm", x->device, true, &row));
    const int64_t cols = at->normalized, total = fnn_tensor_numel(x), rows = cols > 0 ? total / cols : 0;
    fnn_tensor gc;
    int rc;
    const float *gp = fnn_contiguous_data(g, &gc, &rc);
    if (rc) return rc;
    fnn_nrm_args a = {.x = fnn_data(x), .g = gp, .w = at->has_weight ? fnn_data(&n->saved[2]) : NULL,
                      .stats = fnn_data(st), .N = rows, .C = cols, .S = 1, .groups = 1};
    if (n->next[0] && !(rc = fnn_new_output(&din[0], x->device, n->in_ndim[0], n->in_shape[0])))
        a.y = fnn_data(&din[0]);
    if (!rc && n->next[1] && !(rc = fnn_new_output(&din[1], x->device, n->in_ndim[1], n->in_shape[1])))
        a.dw = fnn_data(&din[1]);
    if (!rc && n->next[2] && !(rc = fnn_new_output(&din[2], x->device, n->in_ndim[2], n->in_shape[2])))
        a.db = fnn_data(&din[2]);
    if (!rc) rc = row->backward(fnn_device_ordinal(x->device), &a);
    fnn_tensor_clear(&gc);
    if (rc) for (int k = 0; k < 3; k++) fnn_tensor_clear(&din[k]);
    return rc;
}
static const fnn_op_def LAYER_NORM = {.info = {.name = "layer_norm", .family = "norm", .differentiable = 1},
    .backward = layer_norm_rule};

/* the node of a norm op: its attributes (has_weight set here), saved x and w as the forward read
 * them (the contiguous copies xc / wc when one was made, so the backward reads them flat) and the
 * per-row statistics */
/* fnn_node_attr's reader for the family (fnn.onnx.export): eps, normalized (layer_norm, rms_norm),
 * groups (group_norm), training and activation (batch_norm), has_weight */
int fnn_norm_attr(const fnn_node *n, const char *name, double *value) {
    const norm_attrs *a = FNN_ATTRS((fnn_node *)n, norm_attrs);
    if (!strcmp(name, "eps")) *value = a->eps;
    else if (!strcmp(name, "normalized")) *value = (double)a->normalized;
    else if (!strcmp(name, "groups")) *value = (double)a->groups;
    else if (!strcmp(name, "training")) *value = a->training;
    else if (!strcmp(name, "has_weight")) *value = a->has_weight;
    else if (!strcmp(name, "activation")) *value = a->activation;
    else return FNN_FAIL(FNN_STATUS_ARG,
                         "node_attr: %s has eps, normalized, groups, training, has_weight and activation, not '%s'",
                         n->op->info.name, name);
    return FNN_STATUS_OK;
}

static int record_norm(const fnn_op_def *def, fnn_tensor *out, int nin, const fnn_tensor *const *ins,
                       norm_attrs attrs, const fnn_tensor *x, const fnn_tensor *xc, const fnn_tensor *stats,
                       const fnn_tensor *w, const fnn_tensor *wc) {
    fnn_node *n = fnn_attach_node(out, def, nin, ins);
    if (!n) return fnn_last_status();
    attrs.has_weight = w != NULL;
    *FNN_ATTRS(n, norm_attrs) = attrs;
    if (fnn_save(n, 0, fnn_tensor_is_contiguous(x) ? x : xc) || fnn_save(n, 1, stats) ||
        (w && fnn_save(n, 2, fnn_tensor_is_contiguous(w) ? w : wc)))
        return fnn_last_status();
    return FNN_STATUS_OK;
}

/* check an optional affine tensor: same device as x, `normalized` elements */
static int ln_check_affine(const char *op, const fnn_tensor *x, const fnn_tensor *t, const char *what,
                           int64_t normalized) {
    if (!t) return FNN_STATUS_OK;
    FNN_TRY(fnn_check_input(op, t));
    FNN_TRY(fnn_check_same_device(op, x, t));
    FNN_CHECK(fnn_tensor_numel(t) == normalized, FNN_STATUS_SHAPE,
              "%s: %s %s has %lld elements, expected %lld (the normalized size) for input %s", op, what,
              fnn_shape_of(t).s, (long long)fnn_tensor_numel(t), (long long)normalized, fnn_shape_of(x).s);
    return FNN_STATUS_OK;
}

/* layer_norm's and add_layer_norm's checks of x, the normalized size, eps, w and b */
static int ln_check(const char *op, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int64_t normalized,
                    double eps) {
    FNN_TRY(fnn_check_input(op, x));
    /* normalized must be the product of some trailing dims (none: 1) */
    bool trailing = false;
    int64_t p = 1;
    for (int d = x->ndim; d >= 0 && !trailing; d--) {
        if (d < x->ndim) p *= x->shape[d];
        trailing = p == normalized;
    }
    FNN_CHECK(normalized >= 1 && trailing, FNN_STATUS_SHAPE,
              "%s: normalized size %lld is not the product of trailing dims of input %s", op,
              (long long)normalized, fnn_shape_of(x).s);
    FNN_CHECK(eps >= 0, FNN_STATUS_ARG, "%s: eps %g is negative (input %s)", op, eps, fnn_shape_of(x).s);
    FNN_TRY(ln_check_affine(op, x, w, "weight", normalized));
    return ln_check_affine(op, x, b, "bias", normalized);
}

int fnn_layer_norm(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b,
                   int64_t normalized, double eps) {
    FNN_TRY(ln_check("layer_norm", x, w, b, normalized, eps));
    const fnn_nrm_row *row;
    FNN_TRY(norm_row("layer_norm", x->device, false, &row));

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
        fnn_nrm_args a = {.y = fnn_data(out), .stats = grad ? fnn_data(&stats) : NULL, .x = xp, .w = wp, .b = bp,
                          .N = rows, .C = normalized, .S = 1, .groups = 1, .eps = eps};
        rc = row->forward(fnn_device_ordinal(x->device), &a);
    }
    if (!rc && grad) rc = record_norm(&LAYER_NORM, out, 3, ins, (norm_attrs){.normalized = normalized, .eps = eps}, x, &xc, &stats, w, &wc);
    fnn_tensor_clear(&xc);
    fnn_tensor_clear(&wc);
    fnn_tensor_clear(&bc);
    fnn_tensor_clear(&stats);
    if (rc) fnn_tensor_clear(out);
    return rc;
}


/* ================= add_layer_norm: s = x + r, y = layer_norm(s), from one pass =================
 * The layer_norm row with a residual writes each row's sum and normalizes it while the row is in
 * cache (a pre-norm block's x + attn(x), then its norm). The graph is the composition's: s gets an
 * ordinary add node over x and r (elementwise's "add", whose rule reads its saved inputs), y a
 * layer_norm node over s, so the backward is those ops' own rules and the values are their bits. */

/* elementwise's add, found once in its family's table (its definition is elementwise.c's) */
static const fnn_op_def *add_def(void) {
    static const fnn_op_def *def;
    if (!def)
        for (const fnn_op_def *const *p = fnn_ops_elementwise; *p; p++)
            if (!strcmp((*p)->info.name, "add")) def = *p;
    return def;
}

int fnn_add_layer_norm(fnn_tensor *sum, fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *r,
                       const fnn_tensor *w, const fnn_tensor *b, int64_t normalized, double eps) {
    FNN_TRY(ln_check("add_layer_norm", x, w, b, normalized, eps));
    FNN_TRY(fnn_check_input("add_layer_norm", r));
    FNN_TRY(fnn_check_same_device("add_layer_norm", x, r));
    bool same = r->ndim == x->ndim;
    for (int d = 0; same && d < x->ndim; d++) same = r->shape[d] == x->shape[d];
    FNN_CHECK(same, FNN_STATUS_SHAPE,
              "add_layer_norm: residual %s does not have input %s's shape (no broadcasting: add them with fnn.add)",
              fnn_shape_of(r).s, fnn_shape_of(x).s);
    const fnn_op_def *add = add_def();
    FNN_CHECK(add != NULL, FNN_STATUS_INTERNAL, "add_layer_norm: the registry has no elementwise add");
    const fnn_nrm_row *row;
    FNN_TRY(norm_row("layer_norm", x->device, false, &row));

    const fnn_tensor *sum_ins[2] = {x, r};
    const bool sum_grad = fnn_needs_node(2, sum_ins);
    const bool grad = sum_grad || fnn_needs_node(2, (const fnn_tensor *const[]){w, b});
    const int64_t total = fnn_tensor_numel(x), rows = total / normalized;
    fnn_tensor xc, rc_, wc, bc, stats;
    fnn_tensor_init(&rc_); fnn_tensor_init(&wc); fnn_tensor_init(&bc); fnn_tensor_init(&stats);
    int rc = 0, r1 = 0, r2 = 0, r3 = 0;
    const float *xp = fnn_contiguous_data(x, &xc, &rc);
    const float *rp = fnn_contiguous_data(r, &rc_, &r1);
    const float *wp = w ? fnn_contiguous_data(w, &wc, &r2) : NULL;
    const float *bp = b ? fnn_contiguous_data(b, &bc, &r3) : NULL;
    if (!rc) rc = r1 ? r1 : r2 ? r2 : r3;
    int64_t sshape[2] = {rows, 2};
    if (!rc && grad) rc = fnn_new_output(&stats, x->device, 2, sshape);
    if (!rc) rc = fnn_new_output(sum, x->device, x->ndim, x->shape);
    if (!rc) rc = fnn_new_output(out, x->device, x->ndim, x->shape);
    if (!rc) {
        fnn_nrm_args a = {.y = fnn_data(out), .stats = grad ? fnn_data(&stats) : NULL, .x = xp, .w = wp, .b = bp,
                          .res = rp, .sum = fnn_data(sum), .N = rows, .C = normalized, .S = 1, .groups = 1,
                          .eps = eps};
        rc = row->forward(fnn_device_ordinal(x->device), &a);
    }
    /* s's node: what elementwise's binary add records (both inputs saved, k0 = k1 = 0) */
    if (!rc && sum_grad) {
        fnn_node *n = fnn_attach_node(sum, add, 2, sum_ins);
        if (!n || fnn_save(n, 0, x) || fnn_save(n, 1, r)) rc = fnn_last_status();
    }
    const fnn_tensor *ins[3] = {sum, w, b};
    if (!rc && grad)
        rc = record_norm(&LAYER_NORM, out, 3, ins, (norm_attrs){.normalized = normalized, .eps = eps}, sum, sum,
                         &stats, w, &wc);
    fnn_tensor_clear(&xc); fnn_tensor_clear(&rc_); fnn_tensor_clear(&wc); fnn_tensor_clear(&bc);
    fnn_tensor_clear(&stats);
    if (rc) { fnn_tensor_clear(out); fnn_tensor_clear(sum); }
    return rc;
}

/* ================= batch_norm: x [N, C, *] (S = the product of the spatial dims) -> x's shape =================
 * Training: per channel the mean and biased variance over N and S in one pass (shifted sums),
 * y = (x - mean) rstd w + b; the batch mean and unbiased variance go out for the running stats.
 * Eval: the same with the running stats. Backward, per channel with sg = sum g, sgx = sum g (x - m):
 *     dw = sgx rstd, db = sg
 *     training: dx = w rstd (g - sg/M - (x - m) rstd^2 sgx/M)    (M = N S)
 *     eval:     dx = w rstd g
 * With activation relu the forward writes max(y, 0) in the same pass, and the backward reads g as
 * relu's gradient (g where the saved output > 0, else 0) in both passes, sums and dx: no tensor and
 * no pass of its own for the relu, the same bits as the unfused pair.
 * Channels of at least BN_PLANE_MIN elements per image are split over the threads, each channel's
 * sums and rows done by one task (so the rows are still in cache for the second pass, and the
 * result does not depend on the thread count); narrower layouts ([N, C]) go by blocks of rows
 * with per-block partial sums added in block order. A cuda input goes to cuda/batch_norm.cu (a
 * block or a thread per channel), which needs no host scratch. */

enum { BN_PLANE_MIN = 32, BN_BLOCK = 8192 };

typedef struct {
    const float *x, *g, *w, *b;   /* x, g contiguous [N, C, S] (g: backward); w, b [C] or NULL */
    float *y;                     /* forward y / backward dx [N, C, S], or NULL */
    float *stats;                 /* [C, 2] mean, rstd: written by the forward, read by the backward */
    float *bmean, *bvar;          /* training forward: batch mean, unbiased variance [C], or NULL */
    float *dw, *db;               /* backward [C] or NULL */
    float *coef;                  /* [4, C] scratch: per channel m, a, b, c (y = (x - m) a + b, dx = dx_row) */
    double *part;                 /* row path: [blocks, 2, C] partial sums, then [C] shifts */
    int64_t N, C, S, rpb, blocks; /* rpb rows per block */
    double eps;
    int training;
    bool relu;                    /* forward: y = max(y, 0) */
    const float *yo;              /* backward: the relu'd forward output [N, C, S] (g counts where > 0), or NULL */
} bn_args;

/* a shift near channel c's mean: the mean of its first (up to) 16 values */
static float bn_shift(const bn_args *a, int64_t c) {
    const int64_t m = a->N * a->S < 16 ? a->N * a->S : 16;
    double s = 0;
    for (int64_t i = 0; i < m; i++) s += a->x[((i / a->S) * a->C + c) * a->S + i % a->S];
    return m > 0 ? (float)(s / (double)m) : 0.0f;
}

/* channel c's coefficients and saved stats from its mean and rstd */
static void bn_set_channel(bn_args *a, int64_t c, double mean, double rstd) {
    const int64_t C = a->C;
    a->coef[c] = (float)mean;
    a->coef[C + c] = (float)((a->w ? a->w[c] : 1.0) * rstd);
    a->coef[2 * C + c] = a->b ? a->b[c] : 0.0f;
    if (a->stats) { a->stats[2 * c] = (float)mean; a->stats[2 * c + 1] = (float)rstd; }
}

/* training: channel c's batch statistics from its shifted sums s1 = sum(x - k), s2 = sum((x - k)^2) */
static void bn_batch_channel(bn_args *a, int64_t c, float k, double s1, double s2) {
    const double M = (double)(a->N * a->S), d = s1 / M;
    double var = s2 / M - d * d;
    if (var < 0) var = 0;
    if (a->bmean) a->bmean[c] = (float)(k + d);
    if (a->bvar) a->bvar[c] = (float)(var * M / (M - 1));
    bn_set_channel(a, c, k + d, 1.0 / sqrt(var + a->eps));
}

/* y for planes lo..hi-1 (plane p = image p / C, channel p % C) */
static FNN_CLONES_V3 void bn_apply_planes(void *ctx, int64_t lo, int64_t hi) {
    const bn_args *a = ctx;
    const int64_t C = a->C, S = a->S;
    for (int64_t p = lo; p < hi; p++) {
        const int64_t c = p % C;
        if (a->relu) affine_relu_row(a->y + p * S, a->x + p * S, S, a->coef[c], a->coef[C + c], a->coef[2 * C + c]);
        else affine_row(a->y + p * S, a->x + p * S, S, a->coef[c], a->coef[C + c], a->coef[2 * C + c]);
    }
}

/* y for images lo..hi-1 of a narrow layout */
static FNN_CLONES_V3 void bn_apply_rows(void *ctx, int64_t lo, int64_t hi) {
    const bn_args *a = ctx;
    const int64_t C = a->C, S = a->S;
    const float *m = a->coef, *ca = a->coef + C, *cb = a->coef + 2 * C;
    for (int64_t n = lo; n < hi; n++) {
        const float *x = a->x + n * C * S;
        float *y = a->y + n * C * S;
        if (S == 1 && a->relu)
            for (int64_t c = 0; c < C; c++) {
                const float v = (x[c] - m[c]) * ca[c] + cb[c];
                y[c] = v > 0 ? v : 0.0f;
            }
        else if (S == 1) for (int64_t c = 0; c < C; c++) y[c] = (x[c] - m[c]) * ca[c] + cb[c];
        else if (a->relu) for (int64_t c = 0; c < C; c++) affine_relu_row(y + c * S, x + c * S, S, m[c], ca[c], cb[c]);
        else for (int64_t c = 0; c < C; c++) affine_row(y + c * S, x + c * S, S, m[c], ca[c], cb[c]);
    }
}

/* training, wide layout: channels lo..hi-1, each its sums over all images, then its rows */
static FNN_CLONES_V3 void bn_fwd_channels(void *ctx, int64_t lo, int64_t hi) {
    bn_args *a = ctx;
    const int64_t C = a->C, S = a->S;
    for (int64_t c = lo; c < hi; c++) {
        const float k = bn_shift(a, c);
        double s1 = 0, s2 = 0;
        for (int64_t n = 0; n < a->N; n++) {
            const float *x = a->x + (n * C + c) * S;
            pair_sums(x, NULL, x, S, k, k, &s1, &s2);
        }
        bn_batch_channel(a, c, k, s1, s2);
        for (int64_t n = 0; n < a->N; n++) {
            float *y = a->y + (n * C + c) * S;
            const float *x = a->x + (n * C + c) * S;
            if (a->relu) affine_relu_row(y, x, S, a->coef[c], a->coef[C + c], a->coef[2 * C + c]);
            else affine_row(y, x, S, a->coef[c], a->coef[C + c], a->coef[2 * C + c]);
        }
    }
}

/* narrow layout: partial sums of blocks lo..hi-1 into part[blk] = {sum u, sum u v} per channel with
 * forward u = v = x - shift, backward u = g, v = x - mean; the shifts are part[blocks * 2C ..] */
static FNN_CLONES_V3 void bn_partial_blocks(void *ctx, int64_t lo, int64_t hi) {
    const bn_args *a = ctx;
    const int64_t C = a->C, S = a->S;
    const double *k = a->part + a->blocks * 2 * C;
    const bool bwd = a->g != NULL;
    for (int64_t blk = lo; blk < hi; blk++) {
        double *p1 = a->part + blk * 2 * C, *p2 = p1 + C;
        for (int64_t c = 0; c < C; c++) p1[c] = p2[c] = 0;
        const int64_t n1 = (blk + 1) * a->rpb < a->N ? (blk + 1) * a->rpb : a->N;
        for (int64_t n = blk * a->rpb; n < n1; n++) {
            const float *x = a->x + n * C * S, *u = bwd ? a->g + n * C * S : x;
            const float *yo = bwd && a->yo ? a->yo + n * C * S : NULL;   /* relu's mask on g */
            if (S == 1) {
                for (int64_t c = 0; c < C; c++) {
                    double v = (double)x[c] - k[c], w = bwd ? (double)(yo && !(yo[c] > 0) ? 0.0f : u[c]) : v;
                    p1[c] += w;
                    p2[c] += w * v;
                }
            } else {
                for (int64_t c = 0; c < C; c++) {
                    const float kc = (float)k[c];
                    if (yo) masked_sums(u + c * S, yo + c * S, x + c * S, S, kc, &p1[c], &p2[c]);
                    else pair_sums(u + c * S, NULL, x + c * S, S, bwd ? 0.0f : kc, kc, &p1[c], &p2[c]);
                }
            }
        }
    }
}

/* narrow layout: the partial sums of every block, in block order, per channel */
static void bn_sum_blocks(const bn_args *a, int64_t c, double *s1, double *s2) {
    double t1 = 0, t2 = 0;
    for (int64_t blk = 0; blk < a->blocks; blk++) {
        t1 += a->part[blk * 2 * a->C + c];
        t2 += a->part[blk * 2 * a->C + a->C + c];
    }
    *s1 = t1;
    *s2 = t2;
}

/* backward: channel c's coefficients (dx = a g + b (x - m) + c) and dw, db from sg, sgx */
static void bn_grad_channel(bn_args *a, int64_t c, double sg, double sgx) {
    const int64_t C = a->C;
    const double m = a->stats[2 * c], r = a->stats[2 * c + 1], wc = a->w ? a->w[c] : 1.0;
    const double M = (double)(a->N * a->S);
    if (a->dw) a->dw[c] = (float)(sgx * r);
    if (a->db) a->db[c] = (float)sg;
    a->coef[c] = (float)m;
    a->coef[C + c] = (float)(wc * r);
    a->coef[2 * C + c] = a->training ? (float)(-wc * r * r * r * sgx / M) : 0.0f;
    a->coef[3 * C + c] = a->training ? (float)(-wc * r * sg / M) : 0.0f;
}

/* dx for images lo..hi-1 of a narrow layout */
static FNN_CLONES_V3 void bn_dx_rows(void *ctx, int64_t lo, int64_t hi) {
    const bn_args *a = ctx;
    const int64_t C = a->C, S = a->S;
    const float *m = a->coef, *ka = a->coef + C, *kb = a->coef + 2 * C, *kc = a->coef + 3 * C;
    for (int64_t n = lo; n < hi; n++) {
        const float *x = a->x + n * C * S, *g = a->g + n * C * S, *yo = a->yo ? a->yo + n * C * S : NULL;
        float *dx = a->y + n * C * S;
        if (S == 1 && yo)
            for (int64_t c = 0; c < C; c++) {
                const float gc = yo[c] > 0 ? g[c] : 0.0f;
                dx[c] = ka[c] * gc + kb[c] * (x[c] - m[c]) + kc[c];
            }
        else if (S == 1) for (int64_t c = 0; c < C; c++) dx[c] = ka[c] * g[c] + kb[c] * (x[c] - m[c]) + kc[c];
        else if (yo)
            for (int64_t c = 0; c < C; c++)
                dx_masked_row(dx + c * S, g + c * S, yo + c * S, x + c * S, S, m[c], ka[c], kb[c], kc[c]);
        else for (int64_t c = 0; c < C; c++) dx_row(dx + c * S, g + c * S, x + c * S, S, m[c], ka[c], kb[c], kc[c]);
    }
}

/* backward, wide layout: channels lo..hi-1, each its sums over all images (when needed), then dx */
static FNN_CLONES_V3 void bn_bwd_channels(void *ctx, int64_t lo, int64_t hi) {
    bn_args *a = ctx;
    const int64_t C = a->C, S = a->S;
    const bool sums = a->training || a->dw || a->db;
    for (int64_t c = lo; c < hi; c++) {
        const float m = a->stats[2 * c];
        double sg = 0, sgx = 0;
        if (sums)
            for (int64_t n = 0; n < a->N; n++) {
                const int64_t p = (n * C + c) * S;
                if (a->yo) masked_sums(a->g + p, a->yo + p, a->x + p, S, m, &sg, &sgx);
                else pair_sums(a->g + p, NULL, a->x + p, S, 0.0f, m, &sg, &sgx);
            }
        bn_grad_channel(a, c, sg, sgx);
        if (a->y)
            for (int64_t n = 0; n < a->N; n++) {
                const int64_t p = (n * C + c) * S;
                if (a->yo)
                    dx_masked_row(a->y + p, a->g + p, a->yo + p, a->x + p, S, m, a->coef[C + c], a->coef[2 * C + c],
                                  a->coef[3 * C + c]);
                else dx_row(a->y + p, a->g + p, a->x + p, S, m, a->coef[C + c], a->coef[2 * C + c], a->coef[3 * C + c]);
            }
    }
}

/* the layout's scratch: coef [4, C] floats, and for the narrow path part [blocks, 2, C] + shifts [C]
 * doubles, in one counted block; *bytes is what to give back to fnn_free */
static void *bn_scratch(bn_args *a, int dev, int64_t *bytes) {
    const bool wide = a->S >= BN_PLANE_MIN;
    a->rpb = a->C * a->S > 0 ? BN_BLOCK / (a->C * a->S) : 1;
    if (a->rpb < 1) a->rpb = 1;
    a->blocks = wide ? 0 : (a->N + a->rpb - 1) / a->rpb;
    const int64_t nd = wide ? 0 : (a->blocks * 2 + 1) * a->C;
    *bytes = nd * (int64_t)sizeof(double) + 4 * a->C * (int64_t)sizeof(float) + 8;
    char *p = fnn_alloc(dev, *bytes);
    if (!p) return NULL;
    a->part = nd ? (double *)(void *)p : NULL;
    a->coef = (float *)(void *)(p + nd * (int64_t)sizeof(double));
    return p;
}

/* the CPU forward: the layout's scratch, then eval, or training by channel (wide) or by blocks of
 * rows (narrow) */
static int batch_norm_cpu(int ordinal, const fnn_nrm_args *p) {
    bn_args a = {.x = p->x, .w = p->w, .b = p->b, .y = p->y, .stats = p->stats, .bmean = p->bmean,
                 .bvar = p->bvar, .N = p->N, .C = p->C, .S = p->S, .eps = p->eps, .training = p->training,
                 .relu = p->activation == FNN_NORM_ACT_RELU};
    const int64_t N = a.N, C = a.C, S = a.S, total = N * C * S;
    const double eps = a.eps;
    const float *rm = p->rmean, *rv = p->rvar;
    const int dev = fnn_make_device(FNN_DEVICE_CPU, ordinal);
    int64_t bytes = 0;
    void *block = bn_scratch(&a, dev, &bytes);
    if (!block) return fnn_last_status();
    const int threads = fnn_threads_for(total);   /* one pass over x counts as an add */
    const bool wide = S >= BN_PLANE_MIN;
    if (!a.training) {
        for (int64_t c = 0; c < C; c++) bn_set_channel(&a, c, rm[c], 1.0 / sqrt((double)rv[c] + eps));
        if (wide) fnn_parallel_for(N * C, threads, bn_apply_planes, &a);
        else fnn_parallel_for(N, threads, bn_apply_rows, &a);
    } else if (wide) {
        fnn_parallel_for(C, fnn_threads_for(2 * total), bn_fwd_channels, &a);   /* two passes */
    } else {
        double *k = a.part + a.blocks * 2 * C;
        for (int64_t c = 0; c < C; c++) k[c] = bn_shift(&a, c);
        fnn_parallel_for(a.blocks, threads, bn_partial_blocks, &a);
        for (int64_t c = 0; c < C; c++) {
            double s1, s2;
            bn_sum_blocks(&a, c, &s1, &s2);
            bn_batch_channel(&a, c, (float)k[c], s1, s2);
        }
        fnn_parallel_for(N, threads, bn_apply_rows, &a);
    }
    fnn_free(dev, block, bytes);
    return FNN_STATUS_OK;
}

/* the CPU backward: the layout's scratch, then by channel (wide) or by blocks of rows (narrow) */
static int batch_norm_grad_cpu(int ordinal, const fnn_nrm_args *p) {
    bn_args a = {.x = p->x, .g = p->g, .w = p->w, .stats = p->stats, .y = p->y, .dw = p->dw, .db = p->db,
                 .N = p->N, .C = p->C, .S = p->S, .training = p->training,
                 .yo = p->activation == FNN_NORM_ACT_RELU ? p->y_out : NULL};
    const int64_t C = a.C, N = a.N, total = N * C * a.S;
    const int dev = fnn_make_device(FNN_DEVICE_CPU, ordinal);
    int64_t bytes = 0;
    void *block = bn_scratch(&a, dev, &bytes);
    if (!block) return fnn_last_status();
    /* work per loop: each pass over x and g counts as an add's (threads.c's unit) */
    const int threads = fnn_threads_for(total);
    if (a.S >= BN_PLANE_MIN) {
        fnn_parallel_for(C, fnn_threads_for(2 * total), bn_bwd_channels, &a);   /* two passes */
    } else {
        const bool sums = a.training || a.dw || a.db;
        if (sums) {
            double *k = a.part + a.blocks * 2 * C;
            for (int64_t c = 0; c < C; c++) k[c] = a.stats[2 * c];
            fnn_parallel_for(a.blocks, threads, bn_partial_blocks, &a);
        }
        for (int64_t c = 0; c < C; c++) {
            double sg = 0, sgx = 0;
            if (sums) bn_sum_blocks(&a, c, &sg, &sgx);
            bn_grad_channel(&a, c, sg, sgx);
        }
        if (a.y) fnn_parallel_for(N, threads, bn_dx_rows, &a);
    }
    fnn_free(dev, block, bytes);
    return FNN_STATUS_OK;
}

/* batch and group norm's backward: saved[0] x (contiguous), saved[1] the stats ([C, 2] batch, [N, G, 2] group:
 * mean, rstd), saved[2] w when given; a brings the family's own fields (training, groups) */
static int stats_norm_backward(const char *op, fnn_node *n, const fnn_tensor *g, fnn_tensor *din, fnn_nrm_args a) {
    const fnn_tensor *x = &n->saved[0];
    const fnn_nrm_row *row;
    FNN_TRY(norm_row(op, x->device, true, &row));
    fnn_tensor gc;
    int rc;
    const float *gp = fnn_contiguous_data(g, &gc, &rc);
    if (rc) return rc;
    const int64_t N = x->shape[0], C = x->shape[1], total = fnn_tensor_numel(x);
    a.x = fnn_data(x);
    a.g = gp;
    a.w = FNN_ATTRS(n, norm_attrs)->has_weight ? fnn_data(&n->saved[2]) : NULL;
    a.stats = fnn_data(&n->saved[1]);
    a.N = N;
    a.C = C;
    a.S = N * C > 0 ? total / (N * C) : 0;
    if (n->next[0] && !(rc = fnn_new_output(&din[0], x->device, n->in_ndim[0], n->in_shape[0])))
        a.y = fnn_data(&din[0]);
    if (!rc && n->next[1] && !(rc = fnn_new_output(&din[1], x->device, 1, &C))) a.dw = fnn_data(&din[1]);
    if (!rc && n->next[2] && !(rc = fnn_new_output(&din[2], x->device, 1, &C))) a.db = fnn_data(&din[2]);
    if (!rc) rc = row->backward(fnn_device_ordinal(x->device), &a);
    fnn_tensor_clear(&gc);
    if (rc) for (int k = 0; k < 3; k++) fnn_tensor_clear(&din[k]);
    return rc;
}

/* norm_attrs training, has_weight, activation (relu: saved[3] the output, whose > 0 masks g) */
static int batch_norm_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const norm_attrs *at = FNN_ATTRS(n, norm_attrs);
    const bool relu = at->activation == FNN_NORM_ACT_RELU;
    return stats_norm_backward("batch_norm", n, g, din,
                               (fnn_nrm_args){.groups = 1, .training = at->training, .activation = at->activation,
                                              .y_out = relu ? fnn_data(&n->saved[3]) : NULL});
}
static const fnn_op_def BATCH_NORM = {.info = {.name = "batch_norm", .family = "norm", .differentiable = 1},
    .backward = batch_norm_rule};

int fnn_batch_norm(fnn_tensor *out, fnn_tensor *batch_mean, fnn_tensor *batch_var, const fnn_tensor *x,
                   const fnn_tensor *running_mean, const fnn_tensor *running_var, const fnn_tensor *w,
                   const fnn_tensor *b, int training, double eps, int activation) {
    FNN_TRY(fnn_check_input("batch_norm", x));
    FNN_CHECK(activation == FNN_NORM_ACT_NONE || activation == FNN_NORM_ACT_RELU, FNN_STATUS_ARG,
              "batch_norm: activation %d is not one of %d (none), %d (relu) (input %s)", activation,
              FNN_NORM_ACT_NONE, FNN_NORM_ACT_RELU, fnn_shape_of(x).s);
    FNN_CHECK(x->ndim >= 2, FNN_STATUS_SHAPE, "batch_norm: input %s must be [N, C] or [N, C, *] (2 or more dims)",
              fnn_shape_of(x).s);
    FNN_CHECK(eps >= 0, FNN_STATUS_ARG, "batch_norm: eps %g is negative (input %s)", eps, fnn_shape_of(x).s);
    const int64_t N = x->shape[0], C = x->shape[1], total = fnn_tensor_numel(x);
    const int64_t S = N * C > 0 ? total / (N * C) : fnn_numel_of(x->ndim - 2, x->shape + 2);
    FNN_TRY(check_channels("batch_norm", x, w, "weight", C));
    FNN_TRY(check_channels("batch_norm", x, b, "bias", C));
    FNN_TRY(check_channels("batch_norm", x, running_mean, "running_mean", C));
    FNN_TRY(check_channels("batch_norm", x, running_var, "running_var", C));
    FNN_CHECK(training || (running_mean && running_var), FNN_STATUS_ARG,
              "batch_norm: eval mode needs running_mean and running_var (input %s)", fnn_shape_of(x).s);
    FNN_CHECK(!training || N * S > 1, FNN_STATUS_SHAPE,
              "batch_norm: expected more than 1 value per channel when training, got input %s", fnn_shape_of(x).s);
    const fnn_nrm_row *row;
    FNN_TRY(norm_row("batch_norm", x->device, false, &row));

    const fnn_tensor *ins[3] = {x, w, b};
    const bool grad = fnn_needs_node(3, ins);
    fnn_tensor xc, wc, bc, mc, vc, stats;
    fnn_tensor_init(&wc); fnn_tensor_init(&bc); fnn_tensor_init(&mc); fnn_tensor_init(&vc);
    fnn_tensor_init(&stats);
    int rc = 0, r1 = 0, r2 = 0, r3 = 0, r4 = 0;
    const float *xp = fnn_contiguous_data(x, &xc, &rc);
    fnn_nrm_args a = {.x = xp, .N = N, .C = C, .S = S, .groups = 1, .eps = eps, .training = training != 0,
                      .activation = activation};
    a.w = w ? fnn_contiguous_data(w, &wc, &r1) : NULL;
    a.b = b ? fnn_contiguous_data(b, &bc, &r2) : NULL;
    a.rmean = !training ? fnn_contiguous_data(running_mean, &mc, &r3) : NULL;
    a.rvar = !training ? fnn_contiguous_data(running_var, &vc, &r4) : NULL;
    if (!rc) rc = r1 ? r1 : r2 ? r2 : r3 ? r3 : r4;
    int64_t sshape[2] = {C, 2};
    if (!rc && grad && !(rc = fnn_new_output(&stats, x->device, 2, sshape))) a.stats = fnn_data(&stats);
    if (!rc && !(rc = fnn_new_output(out, x->device, x->ndim, x->shape))) a.y = fnn_data(out);
    if (!rc && training && batch_mean && !(rc = fnn_new_output(batch_mean, x->device, 1, &C)))
        a.bmean = fnn_data(batch_mean);
    if (!rc && training && batch_var && !(rc = fnn_new_output(batch_var, x->device, 1, &C)))
        a.bvar = fnn_data(batch_var);
    if (!rc) rc = row->forward(fnn_device_ordinal(x->device), &a);
    if (!rc && grad)
        rc = record_norm(&BATCH_NORM, out, 3, ins, (norm_attrs){.training = training != 0, .eps = eps,
                         .activation = activation}, x, &xc, &stats, w, &wc);
    /* relu's mask is the output's sign: saved detached, as relu's own node keeps its input */
    if (!rc && grad && activation == FNN_NORM_ACT_RELU && fnn_save(out->node, 3, out)) rc = fnn_last_status();
    fnn_tensor_clear(&xc); fnn_tensor_clear(&wc); fnn_tensor_clear(&bc);
    fnn_tensor_clear(&mc); fnn_tensor_clear(&vc); fnn_tensor_clear(&stats);
    if (rc) {
        fnn_tensor_clear(out);
        if (batch_mean) fnn_tensor_clear(batch_mean);
        if (batch_var) fnn_tensor_clear(batch_var);
    }
    return rc;
}

/* ================= group_norm: x [N, C, *], C = groups Cg -> x's shape =================
 * Statistics per (image, group) over its Cg channels and S spatial elements, one contiguous run
 * of L = Cg S (biased variance, eps inside the sqrt); y = (x - mean) rstd w_c + b_c. Backward per
 * (n, group) from its per-channel sums sg_c = sum g, sgx_c = sum g (x - mean):
 *     A1 = sum_c w_c sg_c, A2 = rstd sum_c w_c sgx_c      (the sums of dxhat and dxhat xhat)
 *     dx = rstd w_c g - rstd^2 A2/L (x - mean) - rstd A1/L
 *     dw_c = sum_n rstd_n sgx_nc, db_c = sum_n sg_nc      (added over n in order after the tasks)
 * Tasks are the N groups-of-an-image, so the bits do not depend on the thread count. */

typedef struct {
    const float *x, *g, *w, *b;   /* x, g contiguous [N, C, S]; w, b [C] or NULL */
    float *y;                     /* forward y / backward dx, or NULL */
    float *stats;                 /* [N, G, 2] mean, rstd */
    double *part;                 /* backward [N, C, 2]: sg, sgx */
    int64_t N, C, G, S;
    double eps;
} gn_args;

static FNN_CLONES_V3 void gn_fwd_groups(void *ctx, int64_t lo, int64_t hi) {
    const gn_args *a = ctx;
    const int64_t Cg = a->C / a->G, S = a->S, L = Cg * S, m16 = L < 16 ? L : 16;
    for (int64_t t = lo; t < hi; t++) {   /* t = n G + group */
        const float *x = a->x + t * L;
        double k0 = 0;
        for (int64_t i = 0; i < m16; i++) k0 += x[i];
        const float k = m16 > 0 ? (float)(k0 / (double)m16) : 0.0f;   /* a shift near the mean */
        double s1 = 0, s2 = 0;
        pair_sums(x, NULL, x, L, k, k, &s1, &s2);
        const double d = L > 0 ? s1 / (double)L : 0, var = L > 0 ? s2 / (double)L - d * d : 0;
        const double mean = k + d, rstd = 1.0 / sqrt((var > 0 ? var : 0) + a->eps);
        if (a->stats) { a->stats[2 * t] = (float)mean; a->stats[2 * t + 1] = (float)rstd; }
        const int64_t c0 = (t % a->G) * Cg;
        for (int64_t j = 0; j < Cg; j++) {
            const int64_t c = c0 + j;
            affine_row(a->y + t * L + j * S, x + j * S, S, (float)mean,
                       (float)((a->w ? a->w[c] : 1.0) * rstd), a->b ? a->b[c] : 0.0f);
        }
    }
}

static FNN_CLONES_V3 void gn_bwd_groups(void *ctx, int64_t lo, int64_t hi) {
    const gn_args *a = ctx;
    const int64_t C = a->C, Cg = C / a->G, S = a->S, L = Cg * S;
    for (int64_t t = lo; t < hi; t++) {
        const float m = a->stats[2 * t];
        const double r = a->stats[2 * t + 1];
        const int64_t c0 = (t % a->G) * Cg, n = t / a->G;
        double A1 = 0, A2 = 0;
        for (int64_t j = 0; j < Cg; j++) {
            const int64_t c = c0 + j;
            double sg = 0, sgx = 0;
            pair_sums(a->g + t * L + j * S, NULL, a->x + t * L + j * S, S, 0.0f, m, &sg, &sgx);
            a->part[2 * (n * C + c)] = sg;
            a->part[2 * (n * C + c) + 1] = sgx;
            const double wc = a->w ? a->w[c] : 1.0;
            A1 += wc * sg;
            A2 += wc * sgx;
        }
        A2 *= r;
        if (!a->y || L == 0) continue;
        const float kb = (float)(-r * r * A2 / (double)L), kc = (float)(-r * A1 / (double)L);
        for (int64_t j = 0; j < Cg; j++) {
            const int64_t p = t * L + j * S, c = c0 + j;
            dx_row(a->y + p, a->g + p, a->x + p, S, m, (float)(r * (a->w ? a->w[c] : 1.0)), kb, kc);
        }
    }
}

/* the CPU forward: a task per (sample, group) */
static int group_norm_cpu(int ordinal, const fnn_nrm_args *p) {
    (void)ordinal;
    gn_args a = {.x = p->x, .w = p->w, .b = p->b, .y = p->y, .stats = p->stats, .N = p->N, .C = p->C,
                 .G = p->groups, .S = p->S, .eps = p->eps};
    fnn_parallel_for(a.N * a.G, fnn_threads_for(2 * a.N * a.C * a.S), gn_fwd_groups, &a);   /* two passes */
    return FNN_STATUS_OK;
}

/* the CPU backward: dx and the per-(sample, channel) sums by (sample, group) tasks, then dw, db */
static int group_norm_grad_cpu(int ordinal, const fnn_nrm_args *p) {
    gn_args a = {.x = p->x, .g = p->g, .w = p->w, .y = p->y, .stats = p->stats, .N = p->N, .C = p->C,
                 .G = p->groups, .S = p->S};
    const int64_t N = a.N, C = a.C, total = N * C * a.S;
    float *dw = p->dw, *db = p->db;
    const int dev = fnn_make_device(FNN_DEVICE_CPU, ordinal);
    const int64_t bytes = (2 * N * C + 1) * (int64_t)sizeof(double);
    if (!(a.part = fnn_alloc(dev, bytes))) return fnn_last_status();
    fnn_parallel_for(N * a.G, fnn_threads_for(2 * total), gn_bwd_groups, &a);   /* two passes */
    const int64_t Cg = C / a.G;
    for (int64_t c = 0; c < C && (dw || db); c++) {
        double sw = 0, sb = 0;
        for (int64_t i = 0; i < N; i++) {
            sw += a.stats[2 * (i * a.G + c / Cg) + 1] * a.part[2 * (i * C + c) + 1];
            sb += a.part[2 * (i * C + c)];
        }
        if (dw) dw[c] = (float)sw;
        if (db) db[c] = (float)sb;
    }
    fnn_free(dev, a.part, bytes);
    return FNN_STATUS_OK;
}

/* norm_attrs groups, has_weight */
static int group_norm_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    return stats_norm_backward("group_norm", n, g, din, (fnn_nrm_args){.groups = FNN_ATTRS(n, norm_attrs)->groups});
}
static const fnn_op_def GROUP_NORM = {.info = {.name = "group_norm", .family = "norm", .differentiable = 1},
    .backward = group_norm_rule};

int fnn_group_norm(fnn_tensor *out, const fnn_tensor *x, int64_t groups, const fnn_tensor *w, const fnn_tensor *b,
                   double eps) {
    FNN_TRY(fnn_check_input("group_norm", x));
    FNN_CHECK(x->ndim >= 2, FNN_STATUS_SHAPE, "group_norm: input %s must be [N, C, *] (2 or more dims)",
              fnn_shape_of(x).s);
    const int64_t N = x->shape[0], C = x->shape[1], total = fnn_tensor_numel(x);
    FNN_CHECK(groups >= 1 && C % groups == 0, FNN_STATUS_ARG,
              "group_norm: the %lld channels of input %s do not split into %lld groups", (long long)C,
              fnn_shape_of(x).s, (long long)groups);
    FNN_CHECK(eps >= 0, FNN_STATUS_ARG, "group_norm: eps %g is negative (input %s)", eps, fnn_shape_of(x).s);
    FNN_TRY(check_channels("group_norm", x, w, "weight", C));
    FNN_TRY(check_channels("group_norm", x, b, "bias", C));
    const fnn_nrm_row *row;
    FNN_TRY(norm_row("group_norm", x->device, false, &row));

    const fnn_tensor *ins[3] = {x, w, b};
    const bool grad = fnn_needs_node(3, ins);
    fnn_tensor xc, wc, bc, stats;
    fnn_tensor_init(&wc); fnn_tensor_init(&bc); fnn_tensor_init(&stats);
    int rc = 0, r1 = 0, r2 = 0;
    const float *xp = fnn_contiguous_data(x, &xc, &rc);
    fnn_nrm_args a = {.x = xp, .N = N, .C = C, .groups = groups, .S = N * C > 0 ? total / (N * C) : 0, .eps = eps};
    a.w = w ? fnn_contiguous_data(w, &wc, &r1) : NULL;
    a.b = b ? fnn_contiguous_data(b, &bc, &r2) : NULL;
    if (!rc) rc = r1 ? r1 : r2;
    int64_t sshape[3] = {N, groups, 2};
    if (!rc && grad && !(rc = fnn_new_output(&stats, x->device, 3, sshape))) a.stats = fnn_data(&stats);
    if (!rc && !(rc = fnn_new_output(out, x->device, x->ndim, x->shape))) a.y = fnn_data(out);
    if (!rc) rc = row->forward(fnn_device_ordinal(x->device), &a);
    if (!rc && grad) rc = record_norm(&GROUP_NORM, out, 3, ins, (norm_attrs){.groups = groups, .eps = eps}, x, &xc, &stats, w, &wc);
    fnn_tensor_clear(&xc); fnn_tensor_clear(&wc); fnn_tensor_clear(&bc); fnn_tensor_clear(&stats);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= rms_norm: x [..., n] (rows of the trailing n elements) -> x's shape =================
 * y = x rstd w with rstd = 1 / sqrt(mean(x^2) + eps) per row (no centring, no bias: PyTorch's
 * RMSNorm). Backward per row, with gw = g w and s = sum(gw x):
 *     dx = rstd gw - rstd^3 s / n x,   dw_j = sum over rows of g x rstd (column blocks, row order) */

typedef struct {
    const float *x, *g, *w;   /* x, g contiguous [rows, n]; w [n] or NULL */
    float *y, *rstd, *dw;     /* y / dx [rows, n] or NULL; rstd [rows] or NULL; dw [n] or NULL */
    int64_t rows, n;
    double eps;
} rms_args;

static FNN_CLONES_V3 void rms_fwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const rms_args *a = ctx;
    const int64_t n = a->n;
    for (int64_t i = lo; i < hi; i++) {
        const float *x = a->x + i * n;
        float *y = a->y + i * n;
        double s1 = 0, s2 = 0;
        pair_sums(x, NULL, x, n, 0.0f, 0.0f, &s1, &s2);
        const float r = (float)(1.0 / sqrt(s2 / (double)n + a->eps));
        if (a->w) for (int64_t j = 0; j < n; j++) y[j] = x[j] * r * a->w[j];
        else for (int64_t j = 0; j < n; j++) y[j] = x[j] * r;
        if (a->rstd) a->rstd[i] = r;
    }
}

static FNN_CLONES_V3 void rms_bwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const rms_args *a = ctx;
    const int64_t n = a->n;
    for (int64_t i = lo; i < hi; i++) {
        const float *x = a->x + i * n, *g = a->g + i * n;
        float *dx = a->y + i * n;
        const float r = a->rstd[i];
        double s = 0, s1 = 0;   /* sum(g w x) (sum(g x) without w) into s; s1 is not used */
        pair_sums(g, a->w, x, n, 0.0f, 0.0f, &s1, &s);
        const float kx = (float)(-(double)r * r * r * s / (double)n);
        if (a->w) for (int64_t j = 0; j < n; j++) dx[j] = r * a->w[j] * g[j] + kx * x[j];
        else for (int64_t j = 0; j < n; j++) dx[j] = r * g[j] + kx * x[j];
    }
}

enum { RMS_COLS = 16 };   /* columns per dw task: one 64-byte line of each row */

static void rms_bwd_cols(void *ctx, int64_t lo, int64_t hi) {
    const rms_args *a = ctx;
    const int64_t n = a->n;
    for (int64_t blk = lo; blk < hi; blk++) {
        const int64_t j0 = blk * RMS_COLS, j1 = j0 + RMS_COLS < n ? j0 + RMS_COLS : n;
        double sw[RMS_COLS] = {0};
        for (int64_t i = 0; i < a->rows; i++) {
            const float *x = a->x + i * n, *g = a->g + i * n, r = a->rstd[i];
            for (int64_t j = j0; j < j1; j++) sw[j - j0] += g[j] * x[j] * r;
        }
        for (int64_t j = j0; j < j1; j++) a->dw[j] = (float)sw[j - j0];
    }
}

static int rms_norm_cpu(int ordinal, const fnn_nrm_args *p) {
    (void)ordinal;
    rms_args a = {.x = p->x, .w = p->w, .y = p->y, .rstd = p->stats, .rows = p->N, .n = p->C, .eps = p->eps};
    fnn_parallel_for(a.rows, fnn_threads_for(2 * a.rows * a.n), rms_fwd_rows, &a);
    return FNN_STATUS_OK;
}

static int rms_norm_grad_cpu(int ordinal, const fnn_nrm_args *p) {
    (void)ordinal;
    rms_args a = {.x = p->x, .g = p->g, .w = p->w, .y = p->y, .rstd = p->stats, .dw = p->dw, .rows = p->N,
                  .n = p->C};
    const int64_t rows = a.rows, n = a.n, total = rows * n;
    if (a.y) fnn_parallel_for(rows, fnn_threads_for(2 * total), rms_bwd_rows, &a);
    if (a.dw) fnn_parallel_for((n + RMS_COLS - 1) / RMS_COLS, fnn_threads_for(total * 2), rms_bwd_cols, &a);
    return FNN_STATUS_OK;
}

/* backward: saved[0] x (contiguous), saved[1] rstd [rows], saved[2] w when given; norm_attrs
 * normalized (n), has_weight */
static int rms_norm_rule(fnn_node *nd, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *x = &nd->saved[0];
    const norm_attrs *at = FNN_ATTRS(nd, norm_attrs);
    const fnn_nrm_row *row;
    FNN_TRY(norm_row("rms_norm", x->device, true, &row));
    const int64_t n = at->normalized, total = fnn_tensor_numel(x), rows = n > 0 ? total / n : 0;
    fnn_tensor gc;
    int rc;
    const float *gp = fnn_contiguous_data(g, &gc, &rc);
    if (rc) return rc;
    fnn_nrm_args a = {.x = fnn_data(x), .g = gp, .w = at->has_weight ? fnn_data(&nd->saved[2]) : NULL,
                      .stats = fnn_data(&nd->saved[1]), .N = rows, .C = n, .S = 1, .groups = 1};
    if (nd->next[0] && !(rc = fnn_new_output(&din[0], x->device, nd->in_ndim[0], nd->in_shape[0])))
        a.y = fnn_data(&din[0]);
    if (!rc && nd->next[1] && !(rc = fnn_new_output(&din[1], x->device, nd->in_ndim[1], nd->in_shape[1])))
        a.dw = fnn_data(&din[1]);
    if (!rc) rc = row->backward(fnn_device_ordinal(x->device), &a);
    fnn_tensor_clear(&gc);
    if (rc) for (int k = 0; k < 2; k++) fnn_tensor_clear(&din[k]);
    return rc;
}
static const fnn_op_def RMS_NORM = {.info = {.name = "rms_norm", .family = "norm", .differentiable = 1},
    .backward = rms_norm_rule};

int fnn_rms_norm(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, int64_t normalized, double eps) {
    FNN_TRY(fnn_check_input("rms_norm", x));
    bool trailing = false;   /* normalized must be the product of some trailing dims */
    int64_t p = 1;
    for (int d = x->ndim; d >= 0 && !trailing; d--) {
        if (d < x->ndim) p *= x->shape[d];
        trailing = p == normalized;
    }
    FNN_CHECK(normalized >= 1 && trailing, FNN_STATUS_SHAPE,
              "rms_norm: normalized size %lld is not the product of trailing dims of input %s",
              (long long)normalized, fnn_shape_of(x).s);
    FNN_CHECK(eps >= 0, FNN_STATUS_ARG, "rms_norm: eps %g is negative (input %s)", eps, fnn_shape_of(x).s);
    if (w) {
        FNN_TRY(fnn_check_input("rms_norm", w));
        FNN_TRY(fnn_check_same_device("rms_norm", x, w));
        FNN_CHECK(fnn_tensor_numel(w) == normalized, FNN_STATUS_SHAPE,
                  "rms_norm: weight %s has %lld elements, expected %lld (the normalized size) for input %s",
                  fnn_shape_of(w).s, (long long)fnn_tensor_numel(w), (long long)normalized, fnn_shape_of(x).s);
    }
    const fnn_nrm_row *row;
    FNN_TRY(norm_row("rms_norm", x->device, false, &row));

    const fnn_tensor *ins[2] = {x, w};
    const bool grad = fnn_needs_node(2, ins);
    const int64_t total = fnn_tensor_numel(x), rows = total / normalized;
    fnn_tensor xc, wc, rstd;
    fnn_tensor_init(&wc); fnn_tensor_init(&rstd);
    int rc = 0, r1 = 0;
    const float *xp = fnn_contiguous_data(x, &xc, &rc);
    fnn_nrm_args a = {.x = xp, .N = rows, .C = normalized, .S = 1, .groups = 1, .eps = eps};
    a.w = w ? fnn_contiguous_data(w, &wc, &r1) : NULL;
    if (!rc) rc = r1;
    if (!rc && grad && !(rc = fnn_new_output(&rstd, x->device, 1, &rows))) a.stats = fnn_data(&rstd);
    if (!rc && !(rc = fnn_new_output(out, x->device, x->ndim, x->shape))) a.y = fnn_data(out);
    if (!rc) rc = row->forward(fnn_device_ordinal(x->device), &a);
    if (!rc && grad) rc = record_norm(&RMS_NORM, out, 2, ins, (norm_attrs){.normalized = normalized, .eps = eps}, x, &xc, &rstd, w, &wc);
    fnn_tensor_clear(&xc); fnn_tensor_clear(&wc); fnn_tensor_clear(&rstd);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* the CPU's rows (norm.h): the kernels above, behind the entry points' shared checks and nodes */
const fnn_nrm_row fnn_cpu_norm_rows[] = {
    {"layer_norm", layer_norm_cpu, layer_norm_grad_cpu},
    {"batch_norm", batch_norm_cpu, batch_norm_grad_cpu},
    {"group_norm", group_norm_cpu, group_norm_grad_cpu},
    {"rms_norm", rms_norm_cpu, rms_norm_grad_cpu},
    {NULL, NULL, NULL},
};

const fnn_op_def *const fnn_ops_norm[] = {&LAYER_NORM, &BATCH_NORM, &GROUP_NORM, &RMS_NORM, NULL};
