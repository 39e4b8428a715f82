/* loss.c: fused losses, forward beside backward.
 *   cross_entropy         log-softmax + nll in one pass per prediction site (stable: the row max is
 *                         subtracted), with class weights, ignore_index and label smoothing
 *   nll_loss              -w[y] log_probs[y] per site
 *   binary_cross_entropy  on probabilities, logs clamped at -100 (PyTorch)
 *   bce_with_logits       on logits through softplus, stable for any x, with pos_weight
 *   mse_loss              mean((pred - target)^2)
 * Fusing saves the [N, C] log-softmax (or the per-element logs) and passes over them, and keeps
 * exp() away from large logits. Sums run in fixed parts, each summed in order, then the parts in
 * order: the same bits at any thread count. The other losses of nn are compositions in Lua. */
#include "../internal.h"
#include "../fastmath.h"
#include <math.h>
#include <string.h>

enum { LOSS_PARTS = 64, LOSS_PART_ELEMS = 4096, LOSS_BLOCK = 1024 };

static int check_reduction(const char *op, int reduction) {
    FNN_CHECK(reduction == FNN_REDUCTION_NONE || reduction == FNN_REDUCTION_MEAN || reduction == FNN_REDUCTION_SUM,
              FNN_STATUS_ARG, "%s: reduction %d is not FNN_REDUCTION_NONE, _MEAN or _SUM", op, reduction);
    return FNN_STATUS_OK;
}

/* rows (sites or elements) per part: about LOSS_PART_ELEMS of work, at most LOSS_PARTS parts */
static int64_t part_chunk(int64_t rows, int64_t per_row) {
    int64_t chunk = (LOSS_PART_ELEMS + per_row - 1) / (per_row > 0 ? per_row : 1);
    if (chunk < (rows + LOSS_PARTS - 1) / LOSS_PARTS) chunk = (rows + LOSS_PARTS - 1) / LOSS_PARTS;
    return chunk < 1 ? 1 : chunk;
}

/* the backward scale of each site or element: g[i] (NONE), or one number g / denom (MEAN) or g (SUM) */
static int grad_scale(const fnn_tensor *g, int reduction, double denom, fnn_tensor *tmp, const float **per,
                      float *one) {
    fnn_tensor_init(tmp);
    *per = NULL;
    if (reduction == FNN_REDUCTION_NONE) {
        int rc;
        *per = fnn_contiguous_data(g, tmp, &rc);
        return rc;
    }
    double g0 = fnn_data(g)[0];
    *one = (float)(reduction == FNN_REDUCTION_MEAN ? g0 / denom : g0);
    return FNN_STATUS_OK;
}

/* ================= class losses: geometry, ids, weights ================= */

/* logits [N, C, d...] are read as N * D prediction sites of C classes (D = the product of d...):
 * site i = n * D + s starts at n * sn + s * sd and steps sc per class. [N, C] has D = 1, [C] is
 * one site. The backward writes the contiguous layout (n * C + c) * D + s. */
typedef struct {
    int64_t n, cols, inner, sites;
    int64_t sn, sc, sd;
} class_geom;

/* logits [N, C, d...] take targets [N, d...]; [N, C] take [N]; [C] take [] */
static int class_shapes(const char *op, const char *xname, const fnn_tensor *x, const fnn_tensor *t) {
    bool ok = x->ndim >= 1 && t->ndim == x->ndim - 1;
    if (ok && x->ndim >= 2) {
        ok = t->shape[0] == x->shape[0];
        for (int k = 1; ok && k < t->ndim; k++) ok = t->shape[k] == x->shape[k + 1];
    }
    if (ok) return FNN_STATUS_OK;
    FNN_CHECK(x->ndim >= 1, FNN_STATUS_SHAPE, "%s: %s [] has no class dim (expected [N,C], [N,C,d...] or [C])",
              op, xname);
    int64_t want[FNN_MAX_DIMS];
    int nw = 0;
    if (x->ndim >= 2) {
        want[nw++] = x->shape[0];
        for (int k = 2; k < x->ndim; k++) want[nw++] = x->shape[k];
    }
    return FNN_FAIL(FNN_STATUS_SHAPE,
                    "%s: %s %s and targets %s do not agree (expected targets %s: %s [N,C,d...] takes targets [N,d...])",
                    op, xname, fnn_shape_of(x).s, fnn_shape_of(t).s, fnn_shape_dims(nw, want).s, xname);
}

/* geometry of x; xc holds a contiguous copy when x has d... dims and is not contiguous */
static int class_geometry(const fnn_tensor *x, class_geom *g, fnn_tensor *xc, const float **data) {
    fnn_tensor_init(xc);
    memset(g, 0, sizeof *g);
    if (x->ndim == 1) {
        g->n = 1, g->cols = x->shape[0], g->inner = 1, g->sc = x->stride[0];
    } else if (x->ndim == 2) {
        g->n = x->shape[0], g->cols = x->shape[1], g->inner = 1, g->sn = x->stride[0], g->sc = x->stride[1];
    } else {
        g->n = x->shape[0], g->cols = x->shape[1], g->inner = 1;
        for (int k = 2; k < x->ndim; k++) g->inner *= x->shape[k];
        g->sn = g->cols * g->inner, g->sc = g->inner, g->sd = 1;
        int rc;
        *data = fnn_contiguous_data(x, xc, &rc);
        g->sites = g->n * g->inner;
        return rc;
    }
    *data = fnn_data(x);
    g->sites = g->n * g->inner;
    return FNN_STATUS_OK;
}

/* the id at flat position i refused: outside 1..C, or not a whole number */
static int bad_id(const char *op, double id, const char *as_int, int64_t classes, int64_t i, const fnn_tensor *t) {
    char where[160];
    if (t->ndim == 1) snprintf(where, sizeof where, "row %lld of targets %s", (long long)i + 1, fnn_shape_of(t).s);
    else if (t->ndim == 0) snprintf(where, sizeof where, "targets []");
    else snprintf(where, sizeof where, "element %lld of targets %s", (long long)i + 1, fnn_shape_of(t).s);
    if (!as_int && id != floor(id) && !isnan(id) && !isinf(id))
        return FNN_FAIL(FNN_STATUS_ARG, "%s: class id %g is not a whole number (%s)", op, id, where);
    if (as_int)
        return FNN_FAIL(FNN_STATUS_ARG, "%s: class id %s outside 1..%lld (%s)", op, as_int, (long long)classes, where);
    return FNN_FAIL(FNN_STATUS_ARG, "%s: class id %.17g outside 1..%lld (%s)", op, id, (long long)classes, where);
}

/* targets (int64 or whole floats, any strides) -> ids [sites] int64: 0-based classes, -1 where the id
 * is ignore_index; checked before any work, so a bad id fails naming itself, C and its position */
static int read_class_ids(const char *op, const fnn_tensor *targets, int64_t classes, int has_ignore,
                          int64_t ignore, fnn_tensor *ids) {
    int64_t count = fnn_tensor_numel(targets);
    fnn_tensor tmp;
    int rc;
    const void *raw = fnn_contiguous_bytes(targets, &tmp, &rc);
    if (!rc) rc = fnn_new_output_dtype(ids, FNN_DEVICE_CPU, FNN_DTYPE_INT64, 1, &count);
    if (rc) { fnn_tensor_clear(&tmp); return rc; }
    int64_t *t = fnn_data_i64(ids);
    for (int64_t i = 0; i < count && !rc; i++) {
        if (fnn_is_int64(targets)) {
            int64_t v = ((const int64_t *)raw)[i];
            if (has_ignore && v == ignore) t[i] = -1;
            else if (v >= 1 && v <= classes) t[i] = v - 1;
            else {
                char s[32];
                snprintf(s, sizeof s, "%lld", (long long)v);
                rc = bad_id(op, (double)v, s, classes, i, targets);
            }
        } else {
            double v = ((const float *)raw)[i];
            if (has_ignore && v == (double)ignore) t[i] = -1;
            else if (v >= 1 && v <= (double)classes && v == floor(v)) t[i] = (int64_t)v - 1;
            else rc = bad_id(op, v, NULL, classes, i, targets);
        }
    }
    fnn_tensor_clear(&tmp);
    if (rc) fnn_tensor_clear(ids);
    return rc;
}

/* class weights [C] as a contiguous tensor in *wc (a reference, or a copy); NULL weight: wc stays empty */
static int class_weight(const char *op, const fnn_tensor *x, const fnn_tensor *w, int64_t classes, fnn_tensor *wc) {
    fnn_tensor_init(wc);
    if (!w) return FNN_STATUS_OK;
    FNN_TRY(fnn_check_input(op, w));
    FNN_TRY(fnn_check_same_device(op, x, w));
    FNN_CHECK(w->ndim == 1 && w->shape[0] == classes, FNN_STATUS_SHAPE,
              "%s: weight %s should hold one value per class ([%lld]) for input %s", op, fnn_shape_of(w).s,
              (long long)classes, fnn_shape_of(x).s);
    return fnn_tensor_is_contiguous(w) ? fnn_tensor_ref(wc, w) : fnn_materialize(wc, w);
}

/* shared checks of cross_entropy and nll_loss, then ids and weights */
static int class_setup(const char *op, const char *xname, const fnn_tensor *x, const fnn_tensor *targets,
                       const fnn_tensor *weight, int has_ignore, int64_t ignore, int reduction, fnn_tensor *ids,
                       fnn_tensor *wc) {
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(fnn_check_index(op, "targets", targets));
    FNN_TRY(fnn_check_same_device(op, x, targets));
    FNN_TRY(check_reduction(op, reduction));
    FNN_TRY(class_shapes(op, xname, x, targets));
    FNN_CHECK(fnn_device_type_of(x->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE, "%s: not implemented on cuda yet",
              op);
    int64_t classes = x->shape[x->ndim == 1 ? 0 : 1];
    FNN_TRY(class_weight(op, x, weight, classes, wc));
    int rc = read_class_ids(op, targets, classes, has_ignore, ignore, ids);
    if (rc) fnn_tensor_clear(wc);
    return rc;
}

/* the class losses' node (cross_entropy, nll_loss): what their rules read, on the CPU (C) or on a
 * device (G); nll_loss leaves smoothing at 0 */
typedef struct {
    double smoothing;       /* C G: cross_entropy's label smoothing */
    double weight_sum;      /* C: the mean's denominator, the summed weights of the counted sites */
    double class_weights;   /* C, cross_entropy: the sum of the class weights (C without) */
    int64_t inner;          /* C G: D, the sites per sample */
    int64_t ignore_index;   /* G: the ignored class (0-based) when has_ignore */
    int reduction;          /* C G: FNN_REDUCTION_* */
    int has_ignore;         /* G */
    int kind;               /* G: FNN_CLS_* */
} class_loss_attrs;

/* ================= on a device (cuda/loss.cu): cross_entropy and nll_loss =================
 * Per-site losses and weights from the backend, summed there by its reduce: nothing is read back to
 * the host, so a class id outside 1..C gives nan (no error). Targets must be int64 there. The node
 * saves [0] the softmax (cross_entropy), [1] the targets, [2] the weights, [3] the mean's sum of
 * weights; class_loss_attrs (G). */
static int device_class_loss(const fnn_op_def *def, int kind, fnn_tensor *out, const fnn_tensor *x,
                             const fnn_tensor *targets, const fnn_tensor *weight, int has_ignore, int64_t ignore,
                             double smooth, int reduction) {
    const char *op = def->info.name;
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(fnn_check_input_any(op, targets));
    FNN_TRY(fnn_check_same_device(op, x, targets));
    FNN_TRY(check_reduction(op, reduction));
    FNN_TRY(class_shapes(op, kind == FNN_CLS_NLL ? "input" : "logits", x, targets));
    const fnn_backend *be = fnn_backend_for(x->device);
    FNN_CHECK(be && be->class_loss && be->reduce && be->binary, FNN_STATUS_DEVICE, "%s: not implemented on this device",
              op);
    FNN_CHECK(fnn_is_int64(targets), FNN_STATUS_ARG,
              "%s: targets %s on a GPU must be int64 class ids (t:long()), not float32", op, fnn_shape_of(targets).s);
    const int ord = fnn_device_ordinal(x->device);
    fnn_class_args a = {fnn_tensor_numel(targets), x->shape[x->ndim == 1 ? 0 : 1], 1, ignore, has_ignore, reduction,
                        smooth};
    for (int k = 2; k < x->ndim; k++) a.inner *= x->shape[k];
    fnn_tensor wc, xc, tc, probs, per, wy, wsum;
    FNN_TRY(class_weight(op, x, weight, a.cols, &wc));
    fnn_tensor_init(&xc), fnn_tensor_init(&tc), fnn_tensor_init(&probs), fnn_tensor_init(&per);
    fnn_tensor_init(&wy), fnn_tensor_init(&wsum);
    const fnn_tensor *ins[1] = {x};
    const bool grad = fnn_needs_node(1, ins);
    int rc;
    const float *xs = fnn_contiguous_data(x, &xc, &rc);
    if (!rc) rc = fnn_tensor_is_contiguous(targets) ? fnn_tensor_ref(&tc, targets) : fnn_materialize(&tc, targets);
    if (!rc && grad && kind == FNN_CLS_CROSS_ENTROPY) rc = fnn_new_output(&probs, x->device, x->ndim, x->shape);
    if (!rc) {
        if (reduction == FNN_REDUCTION_NONE) rc = fnn_new_output(out, x->device, targets->ndim, targets->shape);
        else if (!(rc = fnn_new_output(&per, x->device, 1, &a.sites))) rc = fnn_new_output(out, x->device, 0, NULL);
    }
    if (!rc) rc = fnn_new_output(&wy, x->device, 1, &a.sites);
    if (!rc) rc = be->class_loss(ord, kind, fnn_data(reduction == FNN_REDUCTION_NONE ? out : &per), fnn_data(&wy),
                                 probs.ndim >= 0 ? fnn_data(&probs) : NULL, xs, fnn_data_i64(&tc),
                                 wc.ndim >= 0 ? fnn_data(&wc) : NULL, &a);
    if (!rc && reduction != FNN_REDUCTION_NONE)
        rc = be->reduce(ord, FNN_RED_SUM, fnn_data(out), NULL, fnn_data(&per), 1, a.sites, 1, 1.0, 0);
    if (!rc && reduction == FNN_REDUCTION_MEAN) {   /* total / sum of w_y, on the device */
        const int64_t one = 1, unit = 1;
        rc = fnn_new_output(&wsum, x->device, 0, NULL);
        if (!rc) rc = be->reduce(ord, FNN_RED_SUM, fnn_data(&wsum), NULL, fnn_data(&wy), 1, a.sites, 1, 1.0, 0);
        if (!rc) rc = be->binary(ord, FNN_BIN_DIV, fnn_data(out), fnn_data(out), &unit, fnn_data(&wsum), &unit, 1, &one);
    }
    if (!rc && grad) {
        fnn_node *n = fnn_attach_node(out, def, 1, ins);
        if (!n || (kind == FNN_CLS_CROSS_ENTROPY && fnn_save(n, 0, &probs)) || fnn_save(n, 1, &tc) ||
            (wc.ndim >= 0 && fnn_save(n, 2, &wc)) || (reduction == FNN_REDUCTION_MEAN && fnn_save(n, 3, &wsum))) {
            rc = fnn_last_status();
        } else {
            class_loss_attrs *at = FNN_ATTRS(n, class_loss_attrs);
            at->smoothing = smooth;
            at->reduction = reduction, at->inner = a.inner, at->has_ignore = has_ignore, at->ignore_index = ignore;
            at->kind = kind;
        }
    }
    fnn_tensor_clear(&wc), fnn_tensor_clear(&xc), fnn_tensor_clear(&tc), fnn_tensor_clear(&probs);
    fnn_tensor_clear(&per), fnn_tensor_clear(&wy), fnn_tensor_clear(&wsum);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

static int device_class_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    const fnn_backend *be = fnn_backend_for(g->device);
    FNN_CHECK(be && be->class_loss_grad, FNN_STATUS_DEVICE, "%s: backward not implemented on this device",
              n->op->info.name);
    const fnn_tensor *t = &n->saved[1];
    const class_loss_attrs *at = FNN_ATTRS(n, class_loss_attrs);
    const int kind = at->kind;
    fnn_class_args a = {fnn_tensor_numel(t), 0, at->inner, at->ignore_index, at->has_ignore, at->reduction,
                        at->smoothing};
    int64_t numel = 1;
    for (int k = 0; k < n->in_ndim[0]; k++) numel *= n->in_shape[0][k];
    a.cols = a.sites > 0 ? numel / a.sites : 0;
    fnn_tensor gc;
    int rc;
    const float *gs = fnn_contiguous_data(g, &gc, &rc);
    if (!rc) rc = fnn_new_output(&din[0], g->device, n->in_ndim[0], n->in_shape[0]);
    if (!rc && (rc = be->class_loss_grad(fnn_device_ordinal(g->device), kind, fnn_data(&din[0]),
                                         kind == FNN_CLS_CROSS_ENTROPY ? fnn_data(&n->saved[0]) : NULL,
                                         fnn_data_i64(t), n->saved[2].ndim >= 0 ? fnn_data(&n->saved[2]) : NULL, gs,
                                         n->saved[3].ndim >= 0 ? fnn_data(&n->saved[3]) : NULL, &a)))
        fnn_tensor_clear(&din[0]);
    fnn_tensor_clear(&gc);
    return rc;
}

/* ================= cross_entropy: logits [N, C, d...], targets [N, d...] -> [] or [N, d...] ================= */

typedef struct {
    const float *x, *w;       /* w: class weights [C] or NULL */
    const int64_t *t;         /* 0-based class per site, -1: ignored */
    float *pr, *per;          /* softmax (contiguous layout) and per-site losses, each or NULL */
    class_geom g;
    int64_t chunk;
    double smooth, wall;      /* label smoothing; sum of the class weights (C without) */
    double *part, *wpart;     /* per part: the summed losses, the summed w[y] */
} ce_args;

enum { CE_LANES = 8, CE_ROW_BUF = 1024 };

/* a contiguous row: e[j] = exp(x[j] - max) and their sum, with the max and the sum in 8 lanes so
 * both loops vectorize (a running float max or sum does not: it fixes the order); *mx gets the max */
static float ce_row_exp(const float *x, int64_t cols, float *e, float *mx) {
    float lm[CE_LANES], ls[CE_LANES], m = -INFINITY, sum = 0;
    for (int l = 0; l < CE_LANES; l++) lm[l] = -INFINITY, ls[l] = 0;
    int64_t j = 0;
    for (; j + CE_LANES <= cols; j += CE_LANES)
        for (int l = 0; l < CE_LANES; l++) lm[l] = fnn_sel(x[j + l] > lm[l], x[j + l], lm[l]);
    for (; j < cols; j++) lm[0] = fmaxf(lm[0], x[j]);
    for (int l = 0; l < CE_LANES; l++) m = fmaxf(m, lm[l]);
    if (m == -INFINITY) m = 0;   /* a row of -inf: avoid inf - inf */
    for (j = 0; j < cols; j++) e[j] = fnn_expf(x[j] - m);
    for (j = 0; j + CE_LANES <= cols; j += CE_LANES)
        for (int l = 0; l < CE_LANES; l++) ls[l] += e[j + l];
    for (; j < cols; j++) ls[0] += e[j];
    for (int l = 0; l < CE_LANES; l++) sum += ls[l];
    *mx = m;
    return sum;
}

/* parts lo..hi-1: per site max, sum of exp(x - max), loss = max + log(sum) - x[target], smoothed
 * and weighted */
static void ce_parts(void *ctx, int64_t lo, int64_t hi) {
    const ce_args *a = ctx;
    const int64_t sc = a->g.sc, cols = a->g.cols, inner = a->g.inner;
    /* rows of at least 2 lane widths, contiguous: the vectorized row kernel */
    const bool lanes = sc == 1 && inner == 1 && cols >= 2 * CE_LANES && (a->pr || cols <= CE_ROW_BUF);
    float buf[CE_ROW_BUF];
    for (int64_t p = lo; p < hi; p++) {
        int64_t r1 = (p + 1) * a->chunk < a->g.sites ? (p + 1) * a->chunk : a->g.sites;
        double total = 0, wtotal = 0;
        for (int64_t i = p * a->chunk; i < r1; i++) {
            int64_t target = a->t[i];
            if (target < 0) {   /* ignored: no loss, no weight, and the backward never reads its softmax */
                if (a->per) a->per[i] = 0;
                continue;
            }
            int64_t n = inner == 1 ? i : i / inner, s = i - n * inner;
            const float *xi = a->x + n * a->g.sn + s * a->g.sd;
            float mx = -INFINITY, sum = 0;
            if (lanes) {
                float *e = a->pr ? a->pr + n * cols : buf;
                sum = ce_row_exp(xi, cols, e, &mx);
                if (a->pr) { float inv = 1.0f / sum; for (int64_t j = 0; j < cols; j++) e[j] *= inv; }
            } else {   /* strided or short rows */
                for (int64_t j = 0; j < cols; j++) mx = fmaxf(mx, xi[j * sc]);
                if (mx == -INFINITY) mx = 0;   /* a row of -inf: avoid inf - inf */
                float *pi = a->pr ? a->pr + n * cols * inner + s : NULL;
                if (pi) {
                    for (int64_t j = 0; j < cols; j++) { pi[j * inner] = fnn_expf(xi[j * sc] - mx); sum += pi[j * inner]; }
                    float inv = 1.0f / sum;
                    for (int64_t j = 0; j < cols; j++) pi[j * inner] *= inv;
                } else {
                    for (int64_t j = 0; j < cols; j++) sum += fnn_expf(xi[j * sc] - mx);
                }
            }
            double lse = (double)mx + log((double)sum);
            double wy = a->w ? a->w[target] : 1.0;
            double l = wy * (lse - (double)xi[target * sc]);
            if (a->smooth > 0) {   /* e/C sum_c w_c (lse - x_c) = e/C (lse W - sum_c w_c x_c) */
                double sx = 0;
                if (a->w) for (int64_t j = 0; j < cols; j++) sx += (double)a->w[j] * xi[j * sc];
                else for (int64_t j = 0; j < cols; j++) sx += xi[j * sc];
                l = (1 - a->smooth) * l + a->smooth / (double)cols * (lse * a->wall - sx);
            }
            if (a->per) a->per[i] = (float)l;
            total += l;
            wtotal += wy;
        }
        a->part[p] = total;
        a->wpart[p] = wtotal;
    }
}

typedef struct {
    const float *p, *w, *g;   /* softmax; class weights or NULL; per-site gradient (NONE) or NULL */
    const int64_t *t;
    float *d;
    int64_t cols, inner;
    float gscale;             /* MEAN / SUM: the one scale */
    double smooth, wall;
} ce_bwd_args;

/* sites lo..hi-1: with s the site's scale, dx_c = s (p_c ((1-e) w_y + e W / C) - (1-e) w_y [c = y] - e w_c / C);
 * plain: s (p_c - [c = y]) */
static void ce_bwd_sites(void *ctx, int64_t lo, int64_t hi) {
    const ce_bwd_args *a = ctx;
    const int64_t cols = a->cols, inner = a->inner;
    for (int64_t i = lo; i < hi; i++) {
        int64_t n = inner == 1 ? i : i / inner, s = i - n * inner, y = a->t[i];
        const float *pi = a->p + n * cols * inner + s;
        float *di = a->d + n * cols * inner + s;
        if (y < 0) {
            for (int64_t j = 0; j < cols; j++) di[j * inner] = 0;
            continue;
        }
        const float sc = a->g ? a->g[i] : a->gscale;
        if (!a->w && a->smooth == 0) {
            for (int64_t j = 0; j < cols; j++) di[j * inner] = pi[j * inner] * sc;
            di[y * inner] -= sc;
            continue;
        }
        double wy = a->w ? a->w[y] : 1.0;
        const float ka = (float)(((1 - a->smooth) * wy + a->smooth * a->wall / (double)cols) * sc);
        const float kb = (float)((1 - a->smooth) * wy * sc), kc = (float)(a->smooth / (double)cols * sc);
        if (a->smooth == 0) for (int64_t j = 0; j < cols; j++) di[j * inner] = pi[j * inner] * ka;
        else if (a->w) for (int64_t j = 0; j < cols; j++) di[j * inner] = pi[j * inner] * ka - a->w[j] * kc;
        else for (int64_t j = 0; j < cols; j++) di[j * inner] = pi[j * inner] * ka - kc;
        di[y * inner] -= kb;
    }
}

/* backward: only the logits get a gradient. saved[0] the softmax (contiguous), saved[1] the ids,
 * saved[2] the weights when given; class_loss_attrs (C) */
static int cross_entropy_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    if (fnn_device_type_of(g->device) != FNN_DEVICE_CPU) return device_class_backward(n, g, din);
    const fnn_tensor *p = &n->saved[0], *t = &n->saved[1];
    const class_loss_attrs *at = FNN_ATTRS(n, class_loss_attrs);
    const int reduction = at->reduction;
    const int64_t inner = at->inner, sites = fnn_tensor_numel(t);
    const int64_t cols = sites > 0 ? fnn_tensor_numel(p) / sites : 0;
    fnn_tensor gc;
    const float *gp;
    float one = 0;
    FNN_TRY(grad_scale(g, reduction, at->weight_sum, &gc, &gp, &one));
    int rc = fnn_new_output(&din[0], p->device, n->in_ndim[0], n->in_shape[0]);
    if (!rc) {
        ce_bwd_args a = {fnn_data(p), n->saved[2].ndim >= 0 ? fnn_data(&n->saved[2]) : NULL, gp, fnn_data_i64(t),
                         fnn_data(&din[0]), cols, inner, one, at->smoothing, at->class_weights};
        fnn_parallel_for(sites, fnn_threads_for(sites * cols * 2), ce_bwd_sites, &a);
    }
    fnn_tensor_clear(&gc);
    return rc;
}
static const fnn_op_def CROSS_ENTROPY = {{"cross_entropy", "loss", 1, 1}, cross_entropy_backward, FNN_EMBEDS_NONE};

int fnn_cross_entropy_loss(fnn_tensor *out, const fnn_tensor *logits, const fnn_tensor *targets,
                           const fnn_tensor *weight, int has_ignore, int64_t ignore_index, double label_smoothing,
                           int reduction) {
    FNN_CHECK(label_smoothing >= 0 && label_smoothing <= 1, FNN_STATUS_ARG,
              "cross_entropy: label_smoothing %g is outside [0, 1] (logits %s)", label_smoothing,
              fnn_shape_of(logits).s);
    if (logits && fnn_device_type_of(logits->device) != FNN_DEVICE_CPU)
        return device_class_loss(&CROSS_ENTROPY, FNN_CLS_CROSS_ENTROPY, out, logits, targets, weight, has_ignore,
                                 ignore_index, label_smoothing, reduction);
    fnn_tensor ids, wc, xc, probs;
    FNN_TRY(class_setup("cross_entropy", "logits", logits, targets, weight, has_ignore, ignore_index, reduction, &ids,
                        &wc));
    fnn_tensor_init(&probs);
    class_geom geo;
    const float *x = NULL;
    int rc = class_geometry(logits, &geo, &xc, &x);
    const fnn_tensor *ins[1] = {logits};
    const bool grad = fnn_needs_node(1, ins);
    const float *w = wc.ndim >= 0 ? fnn_data(&wc) : NULL;
    double wall = (double)geo.cols;
    if (w) { wall = 0; for (int64_t j = 0; j < geo.cols; j++) wall += w[j]; }
    if (!rc && grad) rc = fnn_new_output(&probs, logits->device, logits->ndim, logits->shape);
    if (!rc) {
        if (reduction == FNN_REDUCTION_NONE) rc = fnn_new_output(out, logits->device, targets->ndim, targets->shape);
        else rc = fnn_new_output(out, logits->device, 0, NULL);
    }
    if (!rc) {
        double part[LOSS_PARTS], wpart[LOSS_PARTS];
        int64_t chunk = part_chunk(geo.sites, geo.cols), parts = (geo.sites + chunk - 1) / chunk;
        ce_args a = {x, w, fnn_data_i64(&ids), grad ? fnn_data(&probs) : NULL,
                     reduction == FNN_REDUCTION_NONE ? fnn_data(out) : NULL, geo, chunk, label_smoothing, wall,
                     part, wpart};
        /* exp is costly: several flops per logit */
        fnn_parallel_for(parts, fnn_threads_for(geo.sites * geo.cols * 8), ce_parts, &a);
        double total = 0, wsum = 0;
        for (int64_t p = 0; p < parts; p++) { total += part[p]; wsum += wpart[p]; }
        /* no counted site: 0/0 = nan for the mean, as PyTorch */
        if (reduction == FNN_REDUCTION_MEAN) fnn_data(out)[0] = (float)(total / wsum);
        else if (reduction == FNN_REDUCTION_SUM) fnn_data(out)[0] = (float)total;
        if (grad) {
            fnn_node *n = fnn_attach_node(out, &CROSS_ENTROPY, 1, ins);
            if (!n || fnn_save(n, 0, &probs) || fnn_save(n, 1, &ids) || (w && fnn_save(n, 2, &wc))) {
                rc = fnn_last_status();
            } else {
                class_loss_attrs *at = FNN_ATTRS(n, class_loss_attrs);
                at->smoothing = label_smoothing, at->weight_sum = wsum, at->class_weights = wall;
                at->reduction = reduction, at->inner = geo.inner;
            }
        }
    }
    fnn_tensor_clear(&probs);
    fnn_tensor_clear(&ids);
    fnn_tensor_clear(&wc);
    fnn_tensor_clear(&xc);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

int fnn_cross_entropy(fnn_tensor *out, const fnn_tensor *logits, const fnn_tensor *targets) {
    return fnn_cross_entropy_loss(out, logits, targets, NULL, 0, 0, 0.0, FNN_REDUCTION_MEAN);
}

/* ================= nll_loss: log_probs [N, C, d...], targets [N, d...] -> [] or [N, d...] ================= */

/* backward: dx[site, y] = -w[y] s, zero elsewhere. saved[0] the ids, saved[1] the weights when given;
 * class_loss_attrs (C) */
static int nll_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    if (fnn_device_type_of(g->device) != FNN_DEVICE_CPU) return device_class_backward(n, g, din);
    const fnn_tensor *t = &n->saved[0];
    const class_loss_attrs *at = FNN_ATTRS(n, class_loss_attrs);
    const int reduction = at->reduction;
    const int64_t inner = at->inner, sites = fnn_tensor_numel(t);
    const float *w = n->saved[1].ndim >= 0 ? fnn_data(&n->saved[1]) : NULL;
    fnn_tensor gc;
    const float *gp;
    float one = 0;
    FNN_TRY(grad_scale(g, reduction, at->weight_sum, &gc, &gp, &one));
    int rc = fnn_new_output(&din[0], t->device, n->in_ndim[0], n->in_shape[0]);
    if (!rc) {
        float *d = fnn_data(&din[0]);
        int64_t total = fnn_tensor_numel(&din[0]), cols = sites > 0 ? total / sites : 0;
        memset(d, 0, sizeof(float) * (size_t)total);
        const int64_t *tp = fnn_data_i64(t);
        for (int64_t i = 0; i < sites; i++) {
            int64_t y = tp[i];
            if (y < 0) continue;
            int64_t nn = i / inner, s = i - nn * inner;
            d[(nn * cols + y) * inner + s] = -(w ? w[y] : 1.0f) * (gp ? gp[i] : one);
        }
    }
    fnn_tensor_clear(&gc);
    return rc;
}
static const fnn_op_def NLL_LOSS = {{"nll_loss", "loss", 1, 1}, nll_backward, FNN_EMBEDS_NONE};

int fnn_nll_loss(fnn_tensor *out, const fnn_tensor *log_probs, const fnn_tensor *targets, const fnn_tensor *weight,
                 int has_ignore, int64_t ignore_index, int reduction) {
    if (log_probs && fnn_device_type_of(log_probs->device) != FNN_DEVICE_CPU)
        return device_class_loss(&NLL_LOSS, FNN_CLS_NLL, out, log_probs, targets, weight, has_ignore, ignore_index,
                                 0.0, reduction);
    fnn_tensor ids, wc, xc;
    FNN_TRY(class_setup("nll_loss", "input", log_probs, targets, weight, has_ignore, ignore_index, reduction, &ids,
                        &wc));
    class_geom geo;
    const float *x = NULL;
    int rc = class_geometry(log_probs, &geo, &xc, &x);
    const float *w = wc.ndim >= 0 ? fnn_data(&wc) : NULL;
    if (!rc) {
        if (reduction == FNN_REDUCTION_NONE) rc = fnn_new_output(out, log_probs->device, targets->ndim, targets->shape);
        else rc = fnn_new_output(out, log_probs->device, 0, NULL);
    }
    double wsum = 0;
    if (!rc) {   /* one read per site: a plain loop */
        const int64_t *t = fnn_data_i64(&ids);
        float *per = reduction == FNN_REDUCTION_NONE ? fnn_data(out) : NULL;
        double total = 0;
        for (int64_t i = 0; i < geo.sites; i++) {
            int64_t y = t[i];
            if (y < 0) { if (per) per[i] = 0; continue; }
            int64_t n = geo.inner == 1 ? i : i / geo.inner, s = i - n * geo.inner;
            double wy = w ? w[y] : 1.0;
            double l = -wy * (double)x[n * geo.sn + s * geo.sd + y * geo.sc];
            if (per) per[i] = (float)l;
            total += l;
            wsum += wy;
        }
        if (reduction == FNN_REDUCTION_MEAN) fnn_data(out)[0] = (float)(total / wsum);   /* none counted: nan */
        else if (reduction == FNN_REDUCTION_SUM) fnn_data(out)[0] = (float)total;
    }
    const fnn_tensor *ins[1] = {log_probs};
    if (!rc && fnn_needs_node(1, ins)) {
        fnn_node *n = fnn_attach_node(out, &NLL_LOSS, 1, ins);
        if (!n || fnn_save(n, 0, &ids) || (w && fnn_save(n, 1, &wc))) {
            rc = fnn_last_status();
        } else {
            class_loss_attrs *at = FNN_ATTRS(n, class_loss_attrs);
            at->weight_sum = wsum;
            at->reduction = reduction, at->inner = geo.inner;
        }
    }
    fnn_tensor_clear(&ids);
    fnn_tensor_clear(&wc);
    fnn_tensor_clear(&xc);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= elementwise losses: shared driver ================= */

/* binary_cross_entropy and bce_with_logits: FNN_REDUCTION_* */
typedef struct { int reduction; } ew_loss_attrs;

/* w broadcast to x's shape, contiguous, in *wc (a reference when it already is); NULL w: wc stays empty */
static int broadcast_weight(const char *op, const char *what, const fnn_tensor *x, const fnn_tensor *w,
                            fnn_tensor *wc) {
    fnn_tensor_init(wc);
    if (!w) return FNN_STATUS_OK;
    FNN_TRY(fnn_check_input(op, w));
    FNN_TRY(fnn_check_same_device(op, x, w));
    bool ok = w->ndim <= x->ndim;
    for (int k = 0; ok && k < w->ndim; k++) {
        int64_t have = w->shape[w->ndim - 1 - k], want = x->shape[x->ndim - 1 - k];
        ok = have == want || have == 1;
    }
    FNN_CHECK(ok, FNN_STATUS_SHAPE, "%s: %s %s does not broadcast to input %s", op, what, fnn_shape_of(w).s,
              fnn_shape_of(x).s);
    if (fnn_same_shape(w, x) && fnn_tensor_is_contiguous(w)) return fnn_tensor_ref(wc, w);
    FNN_TRY(fnn_new_output(wc, x->device, x->ndim, x->shape));
    int64_t st[FNN_MAX_DIMS];
    fnn_broadcast_strides(w, x->ndim, x->shape, st);
    if (fnn_device_type_of(x->device) != FNN_DEVICE_CPU) {   /* the backend's strided copy reads stride 0 too */
        const fnn_backend *be = fnn_backend_for(x->device);
        int rc = be && be->strided_copy ? be->strided_copy(fnn_device_ordinal(x->device), fnn_data(wc), fnn_data(w), 4,
                                                           x->ndim, x->shape, st)
                                        : FNN_FAIL(FNN_STATUS_DEVICE, "%s: not implemented on this device", op);
        if (rc) fnn_tensor_clear(wc);
        return rc;
    }
    fnn_strided_copy(fnn_data(wc), fnn_data(w), 4, x->ndim, x->shape, st);
    return FNN_STATUS_OK;
}

/* inputs of an elementwise loss (contiguous views or copies) */
typedef struct {
    const float *x, *t, *w, *pw;   /* w, pw NULL when absent */
    int64_t n;
} ew_in;

/* losses of elements lo..hi-1 into out[0 .. hi-lo) */
typedef void (*ew_loss_fn)(const ew_in *in, int64_t lo, int64_t hi, float *out);

typedef struct {
    ew_loss_fn fn;
    const ew_in *in;
    float *per;                 /* NONE: the losses out; else NULL (a block buffer is used) */
    int64_t chunk;
    double *part;
} ew_args;

/* 8 float lanes (vectorizable), then a double */
static double sum_lanes(const float *v, int64_t n) {
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) lane[l] += v[i + l];
    for (; i < n; i++) lane[0] += v[i];
    double s = 0;
    for (int l = 0; l < 8; l++) s += lane[l];
    return s;
}

static void ew_parts(void *ctx, int64_t lo, int64_t hi) {
    const ew_args *a = ctx;
    float buf[LOSS_BLOCK];
    for (int64_t p = lo; p < hi; p++) {
        int64_t end = (p + 1) * a->chunk < a->in->n ? (p + 1) * a->chunk : a->in->n;
        double total = 0;
        for (int64_t b = p * a->chunk; b < end; b += LOSS_BLOCK) {
            int64_t e = b + LOSS_BLOCK < end ? b + LOSS_BLOCK : end;
            float *dst = a->per ? a->per + b : buf;
            a->fn(a->in, b, e, dst);
            total += sum_lanes(dst, e - b);
        }
        a->part[p] = total;
    }
}

/* out := the losses of in reduced (NONE: x's shape); cost counts flops per element for the threads */
static int ew_forward(fnn_tensor *out, const fnn_tensor *like, const ew_in *in, ew_loss_fn fn, int reduction,
                      int cost) {
    if (reduction == FNN_REDUCTION_NONE) FNN_TRY(fnn_new_output(out, like->device, like->ndim, like->shape));
    else FNN_TRY(fnn_new_output(out, like->device, 0, NULL));
    double part[LOSS_PARTS];
    int64_t chunk = part_chunk(in->n, 1), parts = (in->n + chunk - 1) / chunk;
    ew_args a = {fn, in, reduction == FNN_REDUCTION_NONE ? fnn_data(out) : NULL, chunk, part};
    fnn_parallel_for(parts, fnn_threads_for(in->n * cost), ew_parts, &a);
    double total = 0;
    for (int64_t p = 0; p < parts; p++) total += part[p];
    if (reduction == FNN_REDUCTION_MEAN) fnn_data(out)[0] = (float)(total / (double)in->n);   /* empty: nan */
    else if (reduction == FNN_REDUCTION_SUM) fnn_data(out)[0] = (float)total;
    return FNN_STATUS_OK;
}

/* checks shared by the elementwise losses: x and target float32, same shape and device */
static int ew_check(const char *op, const char *xname, const fnn_tensor *x, const fnn_tensor *t, int reduction) {
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(fnn_check_input(op, t));
    FNN_TRY(fnn_check_same_device(op, x, t));
    FNN_TRY(check_reduction(op, reduction));
    FNN_CHECK(fnn_same_shape(x, t), FNN_STATUS_SHAPE, "%s: %s %s and target %s differ in shape", op, xname,
              fnn_shape_of(x).s, fnn_shape_of(t).s);
    const fnn_backend *be = fnn_device_type_of(x->device) == FNN_DEVICE_CPU ? NULL : fnn_backend_for(x->device);
    FNN_CHECK(fnn_device_type_of(x->device) == FNN_DEVICE_CPU || (be && be->ew_loss && be->reduce), FNN_STATUS_DEVICE,
              "%s: not implemented on this device", op);
    return FNN_STATUS_OK;
}

/* ---- on a device (cuda/loss.cu): per-element losses there, reduced by the backend's reduce; nothing
 * is read back, so binary_cross_entropy's probability check becomes nan for a value outside [0, 1] ---- */
static int device_ew_forward(fnn_tensor *out, const fnn_tensor *like, int op, const ew_in *in, int reduction) {
    const fnn_backend *be = fnn_backend_for(like->device);
    const int ord = fnn_device_ordinal(like->device);
    fnn_tensor per;
    fnn_tensor_init(&per);
    int rc;
    if (reduction == FNN_REDUCTION_NONE) rc = fnn_new_output(out, like->device, like->ndim, like->shape);
    else if (!(rc = fnn_new_output(&per, like->device, 1, &in->n))) rc = fnn_new_output(out, like->device, 0, NULL);
    if (!rc) rc = be->ew_loss(ord, op, fnn_data(reduction == FNN_REDUCTION_NONE ? out : &per), in->x, in->t, in->w,
                              in->pw, in->n);
    if (!rc && reduction != FNN_REDUCTION_NONE)   /* the mean: the sum scaled by 1/n (empty: nan) */
        rc = be->reduce(ord, FNN_RED_SUM, fnn_data(out), NULL, fnn_data(&per), 1, in->n, 1,
                        reduction == FNN_REDUCTION_MEAN ? 1.0 / (double)in->n : 1.0, 0);
    fnn_tensor_clear(&per);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* dx = din[0], dt = din[1] (where wanted) of an elementwise loss on a device: g[i] (NONE) or g[0] k */
static int device_ew_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din, int op, const float *x,
                              const float *t, const float *w, const float *pw, int64_t count, int reduction,
                              double k) {
    const fnn_backend *be = fnn_backend_for(g->device);
    FNN_CHECK(be && be->ew_loss_grad, FNN_STATUS_DEVICE, "%s: backward not implemented on this device",
              n->op->info.name);
    fnn_tensor gc;
    int rc;
    const float *gp = fnn_contiguous_data(g, &gc, &rc);
    float *dx = NULL, *dt = NULL;
    if (!rc && n->next[0] && !(rc = fnn_new_output(&din[0], g->device, n->in_ndim[0], n->in_shape[0])))
        dx = fnn_data(&din[0]);
    if (!rc && n->next[1] && !(rc = fnn_new_output(&din[1], g->device, n->in_ndim[1], n->in_shape[1])))
        dt = fnn_data(&din[1]);
    if (!rc && (dx || dt))
        rc = be->ew_loss_grad(fnn_device_ordinal(g->device), op, dx, dt, x, t, w, pw, gp,
                              reduction == FNN_REDUCTION_NONE, (float)k, count);
    fnn_tensor_clear(&gc);
    if (rc) { fnn_tensor_clear(&din[0]); fnn_tensor_clear(&din[1]); }
    return rc;
}

/* a saved tensor's data, or NULL for an empty slot */
static const float *saved_or_null(const fnn_node *n, int slot) {
    return n->saved[slot].ndim >= 0 ? fnn_data(&n->saved[slot]) : NULL;
}

/* ================= binary_cross_entropy: pred, target same shape (probabilities) ================= */

/* log p and log(1 - p), each clamped at -100 so p = 0 or 1 gives a finite loss (PyTorch) */
static void bce_losses(const ew_in *in, int64_t lo, int64_t hi, float *out) {
    const float *p = in->x, *t = in->t, *w = in->w;
    for (int64_t i = lo; i < hi; i++) {
        float lp = fmaxf(fnn_logf(p[i]), -100.0f), lq = fmaxf(fnn_logf(1.0f - p[i]), -100.0f);
        float l = -(t[i] * lp + (1.0f - t[i]) * lq);
        out[i - lo] = w ? l * w[i] : l;
    }
}

typedef struct {
    const float *p, *t, *w, *g;   /* g: per-element gradient (NONE) or NULL */
    float *dp, *dt;               /* either may be NULL */
    float gscale;
} bce_bwd_args;

/* dp = w (p - t) / max(p (1 - p), 1e-12) s; dt = w (log(1 - p) - log p) s with the clamped logs */
static void bce_bwd_elems(void *ctx, int64_t lo, int64_t hi) {
    const bce_bwd_args *a = ctx;
    for (int64_t i = lo; i < hi; i++) {
        float s = a->g ? a->g[i] : a->gscale;
        if (a->w) s *= a->w[i];
        float p = a->p[i];
        if (a->dp) a->dp[i] = (p - a->t[i]) / fmaxf(p * (1.0f - p), 1e-12f) * s;
        if (a->dt) a->dt[i] = (fmaxf(fnn_logf(1.0f - p), -100.0f) - fmaxf(fnn_logf(p), -100.0f)) * s;
    }
}

/* backward: saved[0] pred, saved[1] target (contiguous), saved[2] the broadcast weight when given */
static int bce_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *p = &n->saved[0];
    int64_t count = fnn_tensor_numel(p);
    const int reduction = FNN_ATTRS(n, ew_loss_attrs)->reduction;
    if (fnn_device_type_of(g->device) != FNN_DEVICE_CPU)
        return device_ew_backward(n, g, din, FNN_EWL_BCE, fnn_data(p), fnn_data(&n->saved[1]), saved_or_null(n, 2),
                                  NULL, count, reduction, reduction == FNN_REDUCTION_MEAN ? 1.0 / (double)count : 1.0);
    fnn_tensor gc;
    const float *gp;
    float one = 0;
    FNN_TRY(grad_scale(g, reduction, (double)count, &gc, &gp, &one));
    int rc = FNN_STATUS_OK;
    float *dp = NULL, *dt = NULL;
    if (n->next[0] && !(rc = fnn_new_output(&din[0], p->device, p->ndim, p->shape))) dp = fnn_data(&din[0]);
    if (!rc && n->next[1] && !(rc = fnn_new_output(&din[1], p->device, p->ndim, p->shape))) dt = fnn_data(&din[1]);
    if (!rc) {
        bce_bwd_args a = {fnn_data(p), fnn_data(&n->saved[1]), saved_or_null(n, 2), gp, dp, dt, one};
        fnn_parallel_for(count, fnn_threads_for(count * 8), bce_bwd_elems, &a);
    }
    fnn_tensor_clear(&gc);
    if (rc) { fnn_tensor_clear(&din[0]); fnn_tensor_clear(&din[1]); }
    return rc;
}
static const fnn_op_def BINARY_CROSS_ENTROPY = {{"binary_cross_entropy", "loss", 1, 1}, bce_backward,
                                                FNN_EMBEDS_NONE};

int fnn_binary_cross_entropy(fnn_tensor *out, const fnn_tensor *pred, const fnn_tensor *target,
                             const fnn_tensor *weight, int reduction) {
    static const char *op = "binary_cross_entropy";
    FNN_TRY(ew_check(op, "input", pred, target, reduction));
    fnn_tensor pc, tc, wc;
    fnn_tensor_init(&pc), fnn_tensor_init(&tc);
    FNN_TRY(broadcast_weight(op, "weight", pred, weight, &wc));
    int rc = fnn_tensor_is_contiguous(pred) ? fnn_tensor_ref(&pc, pred) : fnn_materialize(&pc, pred);
    if (!rc) rc = fnn_tensor_is_contiguous(target) ? fnn_tensor_ref(&tc, target) : fnn_materialize(&tc, target);
    ew_in in = {NULL, NULL, NULL, NULL, fnn_tensor_numel(pred)};
    if (!rc && fnn_device_type_of(pred->device) != FNN_DEVICE_CPU) {
        in.x = fnn_data(&pc), in.t = fnn_data(&tc), in.w = wc.ndim >= 0 ? fnn_data(&wc) : NULL;
        rc = device_ew_forward(out, pred, FNN_EWL_BCE, &in, reduction);
    } else if (!rc) {
        in.x = fnn_data(&pc), in.t = fnn_data(&tc), in.w = wc.ndim >= 0 ? fnn_data(&wc) : NULL;
        /* probabilities only: a logit passed by mistake fails here, naming the first one */
        for (int64_t i = 0; i < in.n; i++) {
            if (!(in.x[i] >= 0.0f && in.x[i] <= 1.0f)) {
                rc = FNN_FAIL(FNN_STATUS_ARG,
                              "%s: input %g at element %lld of %s is outside [0, 1] (expected probabilities; "
                              "bce_with_logits takes logits)", op, isnan(in.x[i]) ? NAN : (double)in.x[i], (long long)i + 1,
                              fnn_shape_of(pred).s);
                break;
            }
        }
        if (!rc) rc = ew_forward(out, pred, &in, bce_losses, reduction, 8);
    }
    const fnn_tensor *ins[2] = {pred, target};
    if (!rc && fnn_needs_node(2, ins)) {
        fnn_node *n = fnn_attach_node(out, &BINARY_CROSS_ENTROPY, 2, ins);
        if (!n || fnn_save(n, 0, &pc) || fnn_save(n, 1, &tc) || (in.w && fnn_save(n, 2, &wc))) rc = fnn_last_status();
        else FNN_ATTRS(n, ew_loss_attrs)->reduction = reduction;
    }
    fnn_tensor_clear(&pc);
    fnn_tensor_clear(&tc);
    fnn_tensor_clear(&wc);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= bce_with_logits: x, target same shape (logits) ================= */

/* softplus(-x) = max(-x, 0) + log1p(e^-|x|): no overflow for any x */
static inline float softplus_neg(float x) { return fmaxf(-x, 0.0f) + fnn_log1pf(fnn_expf(-fnn_absf(x))); }

/* w ((1 - t) x + (1 + (pw - 1) t) softplus(-x)) */
static void bcel_losses(const ew_in *in, int64_t lo, int64_t hi, float *out) {
    const float *x = in->x, *t = in->t, *w = in->w, *pw = in->pw;
    for (int64_t i = lo; i < hi; i++) {
        float lw = pw ? 1.0f + (pw[i] - 1.0f) * t[i] : 1.0f;
        float l = (1.0f - t[i]) * x[i] + lw * softplus_neg(x[i]);
        out[i - lo] = w ? l * w[i] : l;
    }
}

typedef struct {
    const float *x, *t, *w, *pw, *g;
    float *dx, *dt;
    float gscale;
} bcel_bwd_args;

/* dx = w ((1 - t) - (1 + (pw - 1) t) sigmoid(-x)) s  (sigmoid(x) - t without pw);
 * dt = w ((pw - 1) softplus(-x) - x) s */
static void bcel_bwd_elems(void *ctx, int64_t lo, int64_t hi) {
    const bcel_bwd_args *a = ctx;
    for (int64_t i = lo; i < hi; i++) {
        float s = a->g ? a->g[i] : a->gscale;
        if (a->w) s *= a->w[i];
        float x = a->x[i], t = a->t[i], pw1 = a->pw ? a->pw[i] - 1.0f : 0.0f;
        if (a->dx) a->dx[i] = ((1.0f - t) - (1.0f + pw1 * t) * fnn_sigmoidf(-x)) * s;
        if (a->dt) a->dt[i] = (pw1 * softplus_neg(x) - x) * s;
    }
}

/* backward: saved[0] x, saved[1] target (contiguous), saved[2] weight, saved[3] pos_weight (broadcast,
 * each when given) */
static int bcel_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *x = &n->saved[0];
    int64_t count = fnn_tensor_numel(x);
    const int reduction = FNN_ATTRS(n, ew_loss_attrs)->reduction;
    if (fnn_device_type_of(g->device) != FNN_DEVICE_CPU)
        return device_ew_backward(n, g, din, FNN_EWL_BCEL, fnn_data(x), fnn_data(&n->saved[1]), saved_or_null(n, 2),
                                  saved_or_null(n, 3), count, reduction,
                                  reduction == FNN_REDUCTION_MEAN ? 1.0 / (double)count : 1.0);
    fnn_tensor gc;
    const float *gp;
    float one = 0;
    FNN_TRY(grad_scale(g, reduction, (double)count, &gc, &gp, &one));
    int rc = FNN_STATUS_OK;
    float *dx = NULL, *dt = NULL;
    if (n->next[0] && !(rc = fnn_new_output(&din[0], x->device, x->ndim, x->shape))) dx = fnn_data(&din[0]);
    if (!rc && n->next[1] && !(rc = fnn_new_output(&din[1], x->device, x->ndim, x->shape))) dt = fnn_data(&din[1]);
    if (!rc) {
        bcel_bwd_args a = {fnn_data(x), fnn_data(&n->saved[1]), saved_or_null(n, 2), saved_or_null(n, 3), gp,
                           dx, dt, one};
        fnn_parallel_for(count, fnn_threads_for(count * 8), bcel_bwd_elems, &a);
    }
    fnn_tensor_clear(&gc);
    if (rc) { fnn_tensor_clear(&din[0]); fnn_tensor_clear(&din[1]); }
    return rc;
}
static const fnn_op_def BCE_WITH_LOGITS = {{"bce_with_logits", "loss", 1, 1}, bcel_backward, FNN_EMBEDS_NONE};

int fnn_bce_with_logits(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *target, const fnn_tensor *weight,
                        const fnn_tensor *pos_weight, int reduction) {
    static const char *op = "bce_with_logits";
    FNN_TRY(ew_check(op, "input", x, target, reduction));
    fnn_tensor xc, tc, wc, pc;
    fnn_tensor_init(&xc), fnn_tensor_init(&tc), fnn_tensor_init(&pc);
    FNN_TRY(broadcast_weight(op, "weight", x, weight, &wc));
    int rc = broadcast_weight(op, "pos_weight", x, pos_weight, &pc);
    if (!rc) rc = fnn_tensor_is_contiguous(x) ? fnn_tensor_ref(&xc, x) : fnn_materialize(&xc, x);
    if (!rc) rc = fnn_tensor_is_contiguous(target) ? fnn_tensor_ref(&tc, target) : fnn_materialize(&tc, target);
    ew_in in = {NULL, NULL, NULL, NULL, fnn_tensor_numel(x)};
    if (!rc) {
        in.x = fnn_data(&xc), in.t = fnn_data(&tc);
        in.w = wc.ndim >= 0 ? fnn_data(&wc) : NULL, in.pw = pc.ndim >= 0 ? fnn_data(&pc) : NULL;
        rc = fnn_device_type_of(x->device) != FNN_DEVICE_CPU ? device_ew_forward(out, x, FNN_EWL_BCEL, &in, reduction)
                                                              : ew_forward(out, x, &in, bcel_losses, reduction, 12);
    }
    const fnn_tensor *ins[2] = {x, target};
    if (!rc && fnn_needs_node(2, ins)) {
        fnn_node *n = fnn_attach_node(out, &BCE_WITH_LOGITS, 2, ins);
        if (!n || fnn_save(n, 0, &xc) || fnn_save(n, 1, &tc) || (in.w && fnn_save(n, 2, &wc)) ||
            (in.pw && fnn_save(n, 3, &pc)))
            rc = fnn_last_status();
        else FNN_ATTRS(n, ew_loss_attrs)->reduction = reduction;
    }
    fnn_tensor_clear(&xc);
    fnn_tensor_clear(&tc);
    fnn_tensor_clear(&wc);
    fnn_tensor_clear(&pc);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= mse_loss: mean((pred - target)^2) -> [] ================= */

/* backward: dpred = 2 (pred - target) g / n, dtarget = -dpred, both in one pass */
static int mse_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *p = &n->saved[0], *t = &n->saved[1];
    int64_t count = fnn_tensor_numel(p);
    if (fnn_device_type_of(g->device) != FNN_DEVICE_CPU)   /* saved contiguous on a device */
        return device_ew_backward(n, g, din, FNN_EWL_MSE, fnn_data(p), fnn_data(t), NULL, NULL, count,
                                  FNN_REDUCTION_MEAN, 2.0 / (double)count);
    const float scale = (float)(2.0 * fnn_data(g)[0] / (double)count);
    fnn_tensor pc, tc;
    int rc, rc2;
    const float *pp = fnn_contiguous_data(p, &pc, &rc);
    const float *tp = fnn_contiguous_data(t, &tc, &rc2);
    if (!rc) rc = rc2;
    float *dp = NULL, *dt = NULL;
    if (!rc && n->next[0] && !(rc = fnn_new_output(&din[0], p->device, p->ndim, p->shape))) dp = fnn_data(&din[0]);
    if (!rc && n->next[1] && !(rc = fnn_new_output(&din[1], t->device, t->ndim, t->shape))) dt = fnn_data(&din[1]);
    if (!rc) {
        if (dp && dt) for (int64_t i = 0; i < count; i++) { float d = (pp[i] - tp[i]) * scale; dp[i] = d; dt[i] = -d; }
        else if (dp) for (int64_t i = 0; i < count; i++) dp[i] = (pp[i] - tp[i]) * scale;
        else if (dt) for (int64_t i = 0; i < count; i++) dt[i] = (tp[i] - pp[i]) * scale;
    }
    fnn_tensor_clear(&pc);
    fnn_tensor_clear(&tc);
    if (rc) { fnn_tensor_clear(&din[0]); fnn_tensor_clear(&din[1]); }
    return rc;
}
static const fnn_op_def MSE_LOSS = {{"mse_loss", "loss", 1, 1}, mse_backward, FNN_EMBEDS_NONE};

int fnn_mse_loss(fnn_tensor *out, const fnn_tensor *pred, const fnn_tensor *target) {
    FNN_TRY(fnn_check_input("mse_loss", pred));
    FNN_TRY(fnn_check_input("mse_loss", target));
    FNN_TRY(fnn_check_same_device("mse_loss", pred, target));
    FNN_CHECK(fnn_same_shape(pred, target), FNN_STATUS_SHAPE,
              "mse_loss: pred %s and target %s differ in shape", fnn_shape_of(pred).s, fnn_shape_of(target).s);
    if (fnn_device_type_of(pred->device) != FNN_DEVICE_CPU) {   /* cuda/loss.cu; saves contiguous x, t */
        const fnn_backend *be = fnn_backend_for(pred->device);
        FNN_CHECK(be && be->ew_loss && be->reduce, FNN_STATUS_DEVICE, "mse_loss: not implemented on this device");
        fnn_tensor pc, tc;
        fnn_tensor_init(&pc), fnn_tensor_init(&tc);
        int rc = fnn_tensor_is_contiguous(pred) ? fnn_tensor_ref(&pc, pred) : fnn_materialize(&pc, pred);
        if (!rc) rc = fnn_tensor_is_contiguous(target) ? fnn_tensor_ref(&tc, target) : fnn_materialize(&tc, target);
        ew_in in = {rc ? NULL : fnn_data(&pc), rc ? NULL : fnn_data(&tc), NULL, NULL, fnn_tensor_numel(pred)};
        if (!rc) rc = device_ew_forward(out, pred, FNN_EWL_MSE, &in, FNN_REDUCTION_MEAN);
        const fnn_tensor *ins[2] = {pred, target};
        if (!rc && fnn_needs_node(2, ins)) {
            fnn_node *n = fnn_attach_node(out, &MSE_LOSS, 2, ins);
            if (!n || fnn_save(n, 0, &pc) || fnn_save(n, 1, &tc)) { fnn_tensor_clear(out); rc = fnn_last_status(); }
        }
        fnn_tensor_clear(&pc);
        fnn_tensor_clear(&tc);
        return rc;
    }
    fnn_tensor pc, tc;
    int rc, rc2;
    const float *p = fnn_contiguous_data(pred, &pc, &rc);
    const float *t = fnn_contiguous_data(target, &tc, &rc2);
    if (!rc) rc = rc2;
    if (!rc) rc = fnn_new_output(out, pred->device, 0, NULL);
    if (!rc) {
        /* blocks of 8 float lanes (vectorizable) summed into a double per 4096 elements */
        int64_t count = fnn_tensor_numel(pred);
        double total = 0;
        for (int64_t base = 0; base < count; base += 4096) {
            int64_t end = base + 4096 < count ? base + 4096 : count, i = base;
            float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (; i + 8 <= end; i += 8)
                for (int l = 0; l < 8; l++) { float d = p[i + l] - t[i + l]; lane[l] += d * d; }
            for (; i < end; i++) { float d = p[i] - t[i]; lane[0] += d * d; }
            for (int l = 0; l < 8; l++) total += lane[l];
        }
        fnn_data(out)[0] = (float)(total / (double)count);   /* empty: nan, as PyTorch */
    }
    fnn_tensor_clear(&pc);
    fnn_tensor_clear(&tc);
    FNN_TRY(rc);
    const fnn_tensor *ins[2] = {pred, target};
    if (!fnn_needs_node(2, ins)) return FNN_STATUS_OK;
    fnn_node *n = fnn_attach_node(out, &MSE_LOSS, 2, ins);
    if (!n || fnn_save(n, 0, pred) || fnn_save(n, 1, target)) { fnn_tensor_clear(out); return fnn_last_status(); }
    return FNN_STATUS_OK;
}

const fnn_op_def *const fnn_ops_loss[] = {&CROSS_ENTROPY, &NLL_LOSS, &BINARY_CROSS_ENTROPY, &BCE_WITH_LOGITS,
                                          &MSE_LOSS, NULL};
