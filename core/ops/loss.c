/* loss.c: fused losses, forward beside backward.
 *   cross_entropy         log-softmax + nll in one pass per prediction site (stable: the row max is
 *                         subtracted), with class weights, ignore_index and label smoothing
 *   nll_loss              -w[y] log_probs[y] per site
 *   binary_cross_entropy  on probabilities, logs clamped at -100 (PyTorch)
 *   bce_with_logits       on logits through softplus, stable for any x, with pos_weight
 *   mse_loss              mean((pred - target)^2)
 * Fusing saves the [N, C] log-softmax (or the per-element logs) and passes over them, and keeps
 * exp() away from large logits. Sums run in fixed parts, each summed in order, then the parts in
 * order: the same bits at any thread count. The other losses of nn are compositions in Lua.
 * The entry points and backward rules are written once and call the row of the tensor's backend
 * (loss.h): the CPU's rows are at the end, cuda/loss.cu's there. */
#include "loss.h"
#include "../fastmath.h"
#define M_EXP fnn_expf
#define M_LOG1P fnn_log1pf
#define M_ABS fnn_absf
#define M_SEL fnn_sel
#define M_SIGMOID fnn_sigmoidf
#define FNN_MAP_FN static inline __attribute__((always_inline))
#include "loss_ops.h"
#include <math.h>
#include <string.h>

enum { LOSS_PARTS = 64, LOSS_PART_ELEMS = 4096, LOSS_BLOCK = 1024 };

static int check_reduction(const char *op, int reduction) {
    FNN_CHECK(reduction == FNN_REDUCTION_NONE || reduction == FNN_REDUCTION_MEAN || reduction == FNN_REDUCTION_SUM,
              FNN_STATUS_ARG, "%s: reduction %d is not FNN_REDUCTION_NONE, _MEAN or _SUM", op, reduction);
    return FNN_STATUS_OK;
}

/* the row of op in device's backend (fnn_cpu_loss_rows below, cuda/loss.cu's), refused by name without one */
static int loss_row(const char *op, int device, bool backward, const fnn_loss_row **row) {
    *row = fnn_loss_row_for(device, op);
    if (!*row || !(backward ? (*row)->backward : (*row)->forward)) return FNN_ROW_REFUSED(op, device, backward);
    return FNN_STATUS_OK;
}

/* a saved tensor's data, or NULL for an empty slot */
static float *saved_or_null(const fnn_node *n, int slot) {
    return n->saved[slot].ndim >= 0 ? fnn_data(&n->saved[slot]) : NULL;
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

/* the class losses' node (cross_entropy, nll_loss): saved[0] the softmax (cross_entropy), [1] the ids
 * (host_ids rows) or the int64 targets, [2] the weights when given, [3] wsum (MEAN without host_ids) */
typedef struct {
    double smoothing;       /* cross_entropy's label smoothing */
    double weight_sum;      /* host_ids: the mean's denominator, the summed weights of the counted sites */
    double class_weights;   /* host_ids, cross_entropy: the sum of the class weights (C without) */
    int64_t inner;          /* D, the sites per sample */
    int64_t ignore_index;   /* the ignored id as given, when has_ignore */
    int reduction;          /* FNN_REDUCTION_* */
    int has_ignore;
    int device;             /* x's: the backward runs the row of the forward's backend */
} class_loss_attrs;

/* cross_entropy (keep_probs: the softmax is saved for the backward) and nll_loss: checks, output,
 * then the row of x's backend. A row with host_ids gets checked 0-based ids (a bad id fails naming
 * itself); one without gets the int64 targets as they are (a bad id gives nan there) */
static int class_loss(const fnn_op_def *def, const char *xname, bool keep_probs, fnn_tensor *out, const fnn_tensor *x,
                      const fnn_tensor *targets, const fnn_tensor *weight, int has_ignore, int64_t ignore,
                      double smooth, int reduction) {
    const char *op = def->info.name;
    const fnn_loss_row *row;
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(loss_row(op, x->device, false, &row));
    FNN_TRY(row->host_ids ? fnn_check_index(op, "targets", targets) : fnn_check_input_any(op, targets));
    FNN_TRY(fnn_check_same_device(op, x, targets));
    FNN_TRY(check_reduction(op, reduction));
    FNN_TRY(class_shapes(op, xname, x, targets));
    FNN_CHECK(row->host_ids || fnn_is_int64(targets), FNN_STATUS_ARG,
              "%s: targets %s on a GPU must be int64 class ids (t:long()), not float32", op, fnn_shape_of(targets).s);
    const int64_t cols = x->shape[x->ndim == 1 ? 0 : 1];
    fnn_tensor wc, tc, xc, probs, wsum;
    fnn_tensor_init(&tc), fnn_tensor_init(&xc), fnn_tensor_init(&probs), fnn_tensor_init(&wsum);
    FNN_TRY(class_weight(op, x, weight, cols, &wc));
    int rc = row->host_ids ? read_class_ids(op, targets, cols, has_ignore, ignore, &tc)
             : fnn_tensor_is_contiguous(targets) ? fnn_tensor_ref(&tc, targets) : fnn_materialize(&tc, targets);
    class_geom geo = {0, 0, 0, 0, 0, 0, 0};
    const float *xs = NULL;
    if (!rc) rc = class_geometry(x, &geo, &xc, &xs);
    const fnn_tensor *ins[1] = {x};
    const bool grad = fnn_needs_node(1, ins);
    if (!rc && grad && keep_probs) rc = fnn_new_output(&probs, x->device, x->ndim, x->shape);
    if (!rc) {
        if (reduction == FNN_REDUCTION_NONE) rc = fnn_new_output(out, x->device, targets->ndim, targets->shape);
        else rc = fnn_new_output(out, x->device, 0, NULL);
    }
    if (!rc && !row->host_ids && reduction == FNN_REDUCTION_MEAN) rc = fnn_new_output(&wsum, x->device, 0, NULL);
    fnn_loss_args a = {.x = xs, .n = geo.sites, .cols = geo.cols, .inner = geo.inner, .sn = geo.sn, .sc = geo.sc,
                       .sd = geo.sd, .ignore = ignore, .has_ignore = has_ignore, .reduction = reduction,
                       .ndim = x->ndim, .shape = x->shape, .smooth = smooth};
    if (!rc) {
        a.out = fnn_data(out), a.ids = fnn_data_i64(&tc), a.w = wc.ndim >= 0 ? fnn_data(&wc) : NULL;
        a.probs = probs.ndim >= 0 ? fnn_data(&probs) : NULL, a.wsum = wsum.ndim >= 0 ? fnn_data(&wsum) : NULL;
        rc = row->forward(fnn_device_ordinal(x->device), &a);
    }
    if (!rc && grad) {
        fnn_node *n = fnn_attach_node(out, def, 1, ins);
        if (!n || (probs.ndim >= 0 && fnn_save(n, 0, &probs)) || fnn_save(n, 1, &tc) ||
            (wc.ndim >= 0 && fnn_save(n, 2, &wc)) || (wsum.ndim >= 0 && fnn_save(n, 3, &wsum))) {
            rc = fnn_last_status();
        } else {
            class_loss_attrs *at = FNN_ATTRS(n, class_loss_attrs);
            at->smoothing = smooth, at->weight_sum = a.weight_sum, at->class_weights = a.wall;
            at->inner = geo.inner, at->ignore_index = ignore, at->reduction = reduction, at->has_ignore = has_ignore;
            at->device = x->device;
        }
    }
    fnn_tensor_clear(&wc), fnn_tensor_clear(&tc), fnn_tensor_clear(&xc), fnn_tensor_clear(&probs);
    fnn_tensor_clear(&wsum);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* only x gets a gradient, of its shape (contiguous), from the row of the forward's backend */
static int class_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    const class_loss_attrs *at = FNN_ATTRS(n, class_loss_attrs);
    const fnn_loss_row *row;
    FNN_TRY(loss_row(n->op->info.name, at->device, true, &row));
    const fnn_tensor *t = &n->saved[1];
    int64_t numel = 1;
    for (int k = 0; k < n->in_ndim[0]; k++) numel *= n->in_shape[0][k];
    fnn_loss_args a = {.probs = saved_or_null(n, 0), .wsum = saved_or_null(n, 3), .ids = fnn_data_i64(t),
                       .w = saved_or_null(n, 2), .n = fnn_tensor_numel(t), .inner = at->inner,
                       .ignore = at->ignore_index, .has_ignore = at->has_ignore, .reduction = at->reduction,
                       .ndim = n->in_ndim[0], .shape = n->in_shape[0], .smooth = at->smoothing,
                       .weight_sum = at->weight_sum, .wall = at->class_weights};
    a.cols = a.n > 0 ? numel / a.n : 0;
    fnn_tensor gc;
    int rc;
    a.g = fnn_contiguous_data(g, &gc, &rc);
    if (!rc) rc = fnn_new_output(&din[0], at->device, n->in_ndim[0], n->in_shape[0]);
    if (!rc) {
        a.out = fnn_data(&din[0]);
        if ((rc = row->backward(fnn_device_ordinal(at->device), &a))) fnn_tensor_clear(&din[0]);
    }
    fnn_tensor_clear(&gc);
    return rc;
}

/* has_cuda (0 here): the registry derives it from cuda/loss.cu's rows */
static const fnn_op_def CROSS_ENTROPY = {.info = {.name = "cross_entropy", .family = "loss", .differentiable = 1},
    .backward = class_rule};
static const fnn_op_def NLL_LOSS = {.info = {.name = "nll_loss", .family = "loss", .differentiable = 1},
    .backward = class_rule};

/* cross_entropy: logits [N, C, d...], targets [N, d...] -> [] or [N, d...] */
int fnn_cross_entropy_loss(fnn_tensor *out, const fnn_tensor *logits, const fnn_tensor *targets,
                           const fnn_tensor *weight, int has_ignore, int64_t ignore_index, double label_smoothing,
                           int reduction) {
    FNN_CHECK(label_smoothing >= 0 && label_smoothing <= 1, FNN_STATUS_ARG,
              "cross_entropy: label_smoothing %g is outside [0, 1] (logits %s)", label_smoothing,
              fnn_shape_of(logits).s);
    return class_loss(&CROSS_ENTROPY, "logits", true, out, logits, targets, weight, has_ignore, ignore_index,
                      label_smoothing, reduction);
}

int fnn_cross_entropy(fnn_tensor *out, const fnn_tensor *logits, const fnn_tensor *targets) {
    return fnn_cross_entropy_loss(out, logits, targets, NULL, 0, 0, 0.0, FNN_REDUCTION_MEAN);
}

/* nll_loss: log_probs [N, C, d...], targets [N, d...] -> [] or [N, d...] */
int fnn_nll_loss(fnn_tensor *out, const fnn_tensor *log_probs, const fnn_tensor *targets, const fnn_tensor *weight,
                 int has_ignore, int64_t ignore_index, int reduction) {
    return class_loss(&NLL_LOSS, "input", false, out, log_probs, targets, weight, has_ignore, ignore_index, 0.0,
                      reduction);
}

/* ================= elementwise losses: x, target same shape ================= */

/* binary_cross_entropy, bce_with_logits, mse_loss (MEAN); the device for the backward's row */
typedef struct { int reduction, device; } ew_loss_attrs;

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
    int64_t st[FNN_MAX_DIMS];
    fnn_broadcast_strides(w, x->ndim, x->shape, st);
    fnn_tensor view;   /* w seen through x's shape (stride 0 where broadcast), copied contiguous on its device */
    FNN_TRY(fnn_make_view(&view, w, x->ndim, x->shape, st, w->offset));
    int rc = fnn_materialize(wc, &view);
    fnn_tensor_clear(&view);
    return rc;
}

/* x and target float32, same shape and device: checks, output, then the row of x's backend on contiguous
 * x, target and broadcast weights (saved for the backward: [0] x, [1] target, [2] weight, [3] pos_weight) */
static int ew_loss(const fnn_op_def *def, const char *xname, fnn_tensor *out, const fnn_tensor *x,
                   const fnn_tensor *target, const fnn_tensor *weight, const fnn_tensor *pos_weight, int reduction) {
    const char *op = def->info.name;
    const fnn_loss_row *row;
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(fnn_check_input(op, target));
    FNN_TRY(fnn_check_same_device(op, x, target));
    FNN_TRY(check_reduction(op, reduction));
    FNN_CHECK(fnn_same_shape(x, target), FNN_STATUS_SHAPE, "%s: %s %s and target %s differ in shape", op, xname,
              fnn_shape_of(x).s, fnn_shape_of(target).s);
    FNN_TRY(loss_row(op, x->device, false, &row));
    fnn_tensor xc, tc, wc, pc;
    fnn_tensor_init(&xc), fnn_tensor_init(&tc), fnn_tensor_init(&pc);
    FNN_TRY(broadcast_weight(op, "weight", x, weight, &wc));
    int rc = broadcast_weight(op, "pos_weight", x, pos_weight, &pc);
    if (!rc) rc = fnn_tensor_is_contiguous(x) ? fnn_tensor_ref(&xc, x) : fnn_materialize(&xc, x);
    if (!rc) rc = fnn_tensor_is_contiguous(target) ? fnn_tensor_ref(&tc, target) : fnn_materialize(&tc, target);
    if (!rc) {
        if (reduction == FNN_REDUCTION_NONE) rc = fnn_new_output(out, x->device, x->ndim, x->shape);
        else rc = fnn_new_output(out, x->device, 0, NULL);
    }
    if (!rc) {
        fnn_loss_args a = {.out = fnn_data(out), .x = fnn_data(&xc), .t = fnn_data(&tc),
                           .w = wc.ndim >= 0 ? fnn_data(&wc) : NULL, .pw = pc.ndim >= 0 ? fnn_data(&pc) : NULL,
                           .n = fnn_tensor_numel(x), .reduction = reduction, .ndim = x->ndim, .shape = x->shape};
        rc = row->forward(fnn_device_ordinal(x->device), &a);
    }
    const fnn_tensor *ins[2] = {x, target};
    if (!rc && fnn_needs_node(2, ins)) {
        fnn_node *n = fnn_attach_node(out, def, 2, ins);
        if (!n || fnn_save(n, 0, &xc) || fnn_save(n, 1, &tc) || (wc.ndim >= 0 && fnn_save(n, 2, &wc)) ||
            (pc.ndim >= 0 && fnn_save(n, 3, &pc)))
            rc = fnn_last_status();
        else *FNN_ATTRS(n, ew_loss_attrs) = (ew_loss_attrs){reduction, x->device};
    }
    fnn_tensor_clear(&xc), fnn_tensor_clear(&tc), fnn_tensor_clear(&wc), fnn_tensor_clear(&pc);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* dx = din[0], dt = din[1] (where wanted), from the row of the forward's backend */
static int ew_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const ew_loss_attrs *at = FNN_ATTRS(n, ew_loss_attrs);
    const fnn_loss_row *row;
    FNN_TRY(loss_row(n->op->info.name, at->device, true, &row));
    const fnn_tensor *x = &n->saved[0];
    fnn_loss_args a = {.x = fnn_data(x), .t = fnn_data(&n->saved[1]), .w = saved_or_null(n, 2),
                       .pw = saved_or_null(n, 3), .n = fnn_tensor_numel(x), .reduction = at->reduction,
                       .ndim = x->ndim, .shape = x->shape};
    fnn_tensor gc;
    int rc;
    a.g = fnn_contiguous_data(g, &gc, &rc);
    if (!rc && n->next[0] && !(rc = fnn_new_output(&din[0], at->device, n->in_ndim[0], n->in_shape[0])))
        a.out = fnn_data(&din[0]);
    if (!rc && n->next[1] && !(rc = fnn_new_output(&din[1], at->device, n->in_ndim[1], n->in_shape[1])))
        a.dt = fnn_data(&din[1]);
    if (!rc && (a.out || a.dt)) rc = row->backward(fnn_device_ordinal(at->device), &a);
    fnn_tensor_clear(&gc);
    if (rc) { fnn_tensor_clear(&din[0]); fnn_tensor_clear(&din[1]); }
    return rc;
}

static const fnn_op_def BINARY_CROSS_ENTROPY = {.info = {.name = "binary_cross_entropy", .family = "loss", .differentiable = 1},
    .backward = ew_rule};
static const fnn_op_def BCE_WITH_LOGITS = {.info = {.name = "bce_with_logits", .family = "loss", .differentiable = 1},
    .backward = ew_rule};
static const fnn_op_def MSE_LOSS = {.info = {.name = "mse_loss", .family = "loss", .differentiable = 1},
    .backward = ew_rule};

/* binary_cross_entropy: pred, target same shape (probabilities) */
int fnn_binary_cross_entropy(fnn_tensor *out, const fnn_tensor *pred, const fnn_tensor *target,
                             const fnn_tensor *weight, int reduction) {
    return ew_loss(&BINARY_CROSS_ENTROPY, "input", out, pred, target, weight, NULL, reduction);
}

/* bce_with_logits: x, target same shape (logits) */
int fnn_bce_with_logits(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *target, const fnn_tensor *weight,
                        const fnn_tensor *pos_weight, int reduction) {
    return ew_loss(&BCE_WITH_LOGITS, "input", out, x, target, weight, pos_weight, reduction);
}

/* mse_loss: mean((pred - target)^2) -> [] */
int fnn_mse_loss(fnn_tensor *out, const fnn_tensor *pred, const fnn_tensor *target) {
    return ew_loss(&MSE_LOSS, "pred", out, pred, target, NULL, NULL, FNN_REDUCTION_MEAN);
}

/* ================= the CPU's rows ================= */

/* rows (sites or elements) per part: about LOSS_PART_ELEMS of work, at most LOSS_PARTS parts */
static int64_t part_chunk(int64_t rows, int64_t per_row) {
    int64_t chunk = (LOSS_PART_ELEMS + per_row - 1) / (per_row > 0 ? per_row : 1);
    if (chunk < (rows + LOSS_PARTS - 1) / LOSS_PARTS) chunk = (rows + LOSS_PARTS - 1) / LOSS_PARTS;
    return chunk < 1 ? 1 : chunk;
}

/* the backward scale of each site or element: g[i] (NONE: returned), or one number g / denom (MEAN) or
 * g (SUM) in *one (NULL returned) */
static const float *grad_scale(const fnn_loss_args *a, double denom, float *one) {
    if (a->reduction == FNN_REDUCTION_NONE) return a->g;
    double g0 = a->g[0];
    *one = (float)(a->reduction == FNN_REDUCTION_MEAN ? g0 / denom : g0);
    return NULL;
}

/* the class geometry of the args (class_geometry's, handed over by the entry point) */
static class_geom geom_of(const fnn_loss_args *a) {
    class_geom g = {a->inner > 0 ? a->n / a->inner : 0, a->cols, a->inner, a->n, a->sn, a->sc, a->sd};
    return g;
}

/* ---- cross_entropy ---- */

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
 * both loops vectorize (a running float max or sum does not: it fixes the order); *mx gets the max.
 * loss_ops.h's row loops, with the max and the sum in lanes. Not inlined: inside ce_parts its loops' speed
 * swung by 5-10% with unrelated edits there (register allocation and loop placement) */
static __attribute__((noinline)) float ce_row_exp(const float *x, int64_t cols, float *e, float *mx) {
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
            float mx, sum;
            if (lanes) {
                float *e = a->pr ? a->pr + n * cols : buf;
                sum = ce_row_exp(xi, cols, e, &mx);
                if (a->pr) fnn_loss_softmax_scale(e, 1, cols, sum);
            } else {   /* strided or short rows: loss_ops.h's loops as written */
                float *pi = a->pr ? a->pr + n * cols * inner + s : NULL;
                mx = fnn_loss_row_max(xi, cols, sc);
                sum = fnn_loss_row_sumexp(xi, cols, sc, mx, pi, inner);
                if (pi) fnn_loss_softmax_scale(pi, inner, cols, sum);
            }
            double lse = fnn_loss_lse(mx, sum);
            double wy = a->w ? a->w[target] : 1.0, sx = 0;
            if (a->smooth > 0) {   /* sum_c w_c x_c, for the smoothing (fnn_loss_ce) */
                if (a->w) for (int64_t j = 0; j < cols; j++) sx += (double)a->w[j] * xi[j * sc];
                else for (int64_t j = 0; j < cols; j++) sx += xi[j * sc];
            }
            double l = fnn_loss_ce(lse, (double)xi[target * sc], wy, a->smooth, cols, a->wall, sx);
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

/* the losses (per site into out for NONE) and their total; weight_sum and wall for the backward */
static int ce_cpu_forward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    const class_geom geo = geom_of(a);
    double wall = (double)geo.cols;
    if (a->w) { wall = 0; for (int64_t j = 0; j < geo.cols; j++) wall += a->w[j]; }
    double part[LOSS_PARTS], wpart[LOSS_PARTS];
    int64_t chunk = part_chunk(geo.sites, geo.cols), parts = (geo.sites + chunk - 1) / chunk;
    ce_args c = {a->x, a->w, a->ids, a->probs, a->reduction == FNN_REDUCTION_NONE ? a->out : NULL, geo, chunk,
                 a->smooth, wall, part, wpart};
    /* exp is costly: several flops per logit */
    fnn_parallel_for(parts, fnn_threads_for(geo.sites * geo.cols * 8), ce_parts, &c);
    double total = 0, wsum = 0;
    for (int64_t p = 0; p < parts; p++) { total += part[p]; wsum += wpart[p]; }
    /* no counted site: 0/0 = nan for the mean, as PyTorch */
    if (a->reduction == FNN_REDUCTION_MEAN) a->out[0] = (float)(total / wsum);
    else if (a->reduction == FNN_REDUCTION_SUM) a->out[0] = (float)total;
    a->weight_sum = wsum, a->wall = wall;
    return FNN_STATUS_OK;
}

static int ce_cpu_backward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    float one = 0;
    const float *gp = grad_scale(a, a->weight_sum, &one);
    ce_bwd_args c = {a->probs, a->w, gp, a->ids, a->out, a->cols, a->inner, one, a->smooth, a->wall};
    fnn_parallel_for(a->n, fnn_threads_for(a->n * a->cols * 2), ce_bwd_sites, &c);
    return FNN_STATUS_OK;
}

/* ---- nll_loss ---- */

static int nll_cpu_forward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    const class_geom geo = geom_of(a);
    const float *x = a->x, *w = a->w;
    const int64_t *t = a->ids;
    float *per = a->reduction == FNN_REDUCTION_NONE ? a->out : NULL;
    double total = 0, wsum = 0;
    for (int64_t i = 0; i < geo.sites; i++) {   /* one read per site: a plain loop */
        int64_t y = t[i];
        if (y < 0) { if (per) per[i] = 0; continue; }
        int64_t n = geo.inner == 1 ? i : i / geo.inner, s = i - n * geo.inner;
        double wy = w ? w[y] : 1.0;
        double l = -wy * (double)x[n * geo.sn + s * geo.sd + y * geo.sc];
        if (per) per[i] = (float)l;
        total += l;
        wsum += wy;
    }
    if (a->reduction == FNN_REDUCTION_MEAN) a->out[0] = (float)(total / wsum);   /* none counted: nan */
    else if (a->reduction == FNN_REDUCTION_SUM) a->out[0] = (float)total;
    a->weight_sum = wsum;
    return FNN_STATUS_OK;
}

/* dx[site, y] = -w[y] s, zero elsewhere */
static int nll_cpu_backward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    float one = 0;
    const float *gp = grad_scale(a, a->weight_sum, &one), *w = a->w;
    const int64_t inner = a->inner, sites = a->n, cols = a->cols;
    float *d = a->out;
    memset(d, 0, sizeof(float) * (size_t)(sites * cols));
    const int64_t *tp = a->ids;
    for (int64_t i = 0; i < sites; i++) {
        int64_t y = tp[i];
        if (y < 0) continue;
        int64_t nn = i / inner, s = i - nn * inner;
        d[(nn * cols + y) * inner + s] = -(w ? w[y] : 1.0f) * (gp ? gp[i] : one);
    }
    return FNN_STATUS_OK;
}

/* ---- the elementwise losses: a shared driver ---- */

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

/* out := the losses of a reduced (NONE: one per element); cost counts flops per element for the threads */
static int ew_cpu_run(fnn_loss_args *a, ew_loss_fn fn, int cost) {
    const ew_in in = {a->x, a->t, a->w, a->pw, a->n};
    double part[LOSS_PARTS];
    int64_t chunk = part_chunk(in.n, 1), parts = (in.n + chunk - 1) / chunk;
    ew_args c = {fn, &in, a->reduction == FNN_REDUCTION_NONE ? a->out : NULL, chunk, part};
    fnn_parallel_for(parts, fnn_threads_for(in.n * cost), ew_parts, &c);
    double total = 0;
    for (int64_t p = 0; p < parts; p++) total += part[p];
    if (a->reduction == FNN_REDUCTION_MEAN) a->out[0] = (float)(total / (double)in.n);   /* empty: nan */
    else if (a->reduction == FNN_REDUCTION_SUM) a->out[0] = (float)total;
    return FNN_STATUS_OK;
}

/* ---- binary_cross_entropy ---- */

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

static int bce_cpu_forward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    /* probabilities only: a logit passed by mistake fails here, naming the first one */
    for (int64_t i = 0; i < a->n; i++) {
        if (!(a->x[i] >= 0.0f && a->x[i] <= 1.0f)) {
            return FNN_FAIL(FNN_STATUS_ARG,
                            "%s: input %g at element %lld of %s is outside [0, 1] (expected probabilities; "
                            "bce_with_logits takes logits)", "binary_cross_entropy",
                            isnan(a->x[i]) ? NAN : (double)a->x[i], (long long)i + 1, fnn_shape_dims(a->ndim, a->shape).s);
        }
    }
    return ew_cpu_run(a, bce_losses, 8);
}

static int bce_cpu_backward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    float one = 0;
    const float *gp = grad_scale(a, (double)a->n, &one);
    bce_bwd_args c = {a->x, a->t, a->w, gp, a->out, a->dt, one};
    fnn_parallel_for(a->n, fnn_threads_for(a->n * 8), bce_bwd_elems, &c);
    return FNN_STATUS_OK;
}

/* ---- bce_with_logits ---- */

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

static int bcel_cpu_forward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    return ew_cpu_run(a, bcel_losses, 12);
}

static int bcel_cpu_backward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    float one = 0;
    const float *gp = grad_scale(a, (double)a->n, &one);
    bcel_bwd_args c = {a->x, a->t, a->w, a->pw, gp, a->out, a->dt, one};
    fnn_parallel_for(a->n, fnn_threads_for(a->n * 8), bcel_bwd_elems, &c);
    return FNN_STATUS_OK;
}

/* ---- mse_loss ---- */

static int mse_cpu_forward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    const float *p = a->x, *t = a->t;
    /* blocks of 8 float lanes (vectorizable) summed into a double per 4096 elements */
    int64_t count = a->n;
    double total = 0;
    for (int64_t base = 0; base < count; base += 4096) {
        int64_t end = base + 4096 < count ? base + 4096 : count, i = base;
        float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (; i + 8 <= end; i += 8)
            for (int l = 0; l < 8; l++) { float d = p[i + l] - t[i + l]; lane[l] += d * d; }
        for (; i < end; i++) { float d = p[i] - t[i]; lane[0] += d * d; }
        for (int l = 0; l < 8; l++) total += lane[l];
    }
    a->out[0] = (float)(total / (double)count);   /* empty: nan, as PyTorch */
    return FNN_STATUS_OK;
}

/* dpred = 2 (pred - target) g / n, dtarget = -dpred, both in one pass */
static int mse_cpu_backward(int ordinal, fnn_loss_args *a) {
    (void)ordinal;
    const int64_t count = a->n;
    const float scale = (float)(2.0 * a->g[0] / (double)count);
    const float *pp = a->x, *tp = a->t;
    float *dp = a->out, *dt = a->dt;
    if (dp && dt) for (int64_t i = 0; i < count; i++) { float d = (pp[i] - tp[i]) * scale; dp[i] = d; dt[i] = -d; }
    else if (dp) for (int64_t i = 0; i < count; i++) dp[i] = (pp[i] - tp[i]) * scale;
    else if (dt) for (int64_t i = 0; i < count; i++) dt[i] = (tp[i] - pp[i]) * scale;
    return FNN_STATUS_OK;
}

/* The CPU's rows: every op of the family; the class losses read their ids on the host (host_ids) */
const fnn_loss_row fnn_cpu_loss_rows[] = {
    {"cross_entropy", ce_cpu_forward, ce_cpu_backward, 1},
    {"nll_loss", nll_cpu_forward, nll_cpu_backward, 1},
    {"binary_cross_entropy", bce_cpu_forward, bce_cpu_backward, 0},
    {"bce_with_logits", bcel_cpu_forward, bcel_cpu_backward, 0},
    {"mse_loss", mse_cpu_forward, mse_cpu_backward, 0},
    {NULL, NULL, NULL, 0},
};

const fnn_op_def *const fnn_ops_loss[] = {&CROSS_ENTROPY, &NLL_LOSS, &BINARY_CROSS_ENTROPY, &BCE_WITH_LOGITS,
                                          &MSE_LOSS, NULL};
