/* reduction.c: reductions over one dim or over everything (sum mean prod var
 * std norm logsumexp max min argmax argmin) and softmax / log_softmax along
 * one dim.
 *
 * A reduction sees its input as [outer, red, inner]: the dims before the
 * reduced one, the reduced one, the dims after it (dim = -1: [1, numel, 1]).
 * The outer dims may stay strided (an offset per outer index); the inner dims
 * must coalesce into one stride, else the input is copied contiguous once. The
 * output is contiguous [outer, inner] (keepdim only changes its shape).
 *
 * Each op is a line kernel (one output from `red` values at a stride) and,
 * beside it, a gradient line kernel (`red` gradients from one output's
 * gradient). Lines at a large stride (reducing a leading dim) are first
 * copied into contiguous rows by a tiled transpose, since walking them
 * directly costs a cache line per element.
 *
 * sum and softmax have kernels of their own. Autograd runs sum's row on every
 * step to undo broadcasting (fnn_sum_to_shape, core/autograd/sum_to_shape.c):
 * it adds whole rows into a block of double accumulators when a leading dim
 * is reduced, and runs 16 float lanes per line otherwise. softmax / log_softmax work a row at a time (along the
 * last dim) or on column blocks (along a leading dim), with an inlined exp so
 * the loops vectorize. Sums accumulate in double.
 *
 * Every op runs through its backend's row (reduction.h); the CPU's rows (at the end) are the kernels
 * here, their forwards reading x's view in place (views = 1), so the entry points and rules are
 * written once. The int64 sum/max/min run through the int64 family's rows (core/ops/int64.h). */
#include "reduction.h"
#include "int64.h"
#include "../fastmath.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================= geometry ================= */

typedef struct {
    const float *base;
    int64_t outer, red, inner;                        /* input [outer, red, inner] -> output [outer, inner] */
    int64_t sr, si;                                   /* strides of the reduced dim and of the inner dims */
    int nouter;                                       /* outer dims after coalescing */
    bool swapped;                                     /* a single outer dim is read as the inner dim */
    int64_t oshape[FNN_MAX_DIMS], ostride[FNN_MAX_DIMS];
    fnn_tensor tmp;                                   /* a contiguous copy, when x's layout needed one */
} geom;

/* drop size-1 dims and merge neighbours that step as one; returns the dims left */
static int coalesce_dims(int n, const int64_t *shape, const int64_t *stride, int64_t *cs, int64_t *cst) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (shape[i] == 1) continue;
        if (k > 0 && cst[k - 1] == stride[i] * shape[i]) { cs[k - 1] *= shape[i]; cst[k - 1] = stride[i]; }
        else { cs[k] = shape[i]; cst[k] = stride[i]; k++; }
    }
    return k;
}

/* see x as [outer, red, inner] around dim d (d < 0: everything); clear g->tmp after use */
static int geom_init(geom *g, const fnn_tensor *x, int d) {
    memset(g, 0, sizeof *g);
    fnn_tensor_init(&g->tmp);
    g->outer = g->inner = g->sr = g->si = 1;
    g->base = fnn_data(x);
    if (fnn_tensor_numel(x) == 0) {   /* nothing is read: only the sizes matter */
        if (d < 0) g->red = 0;
        else {
            g->outer = fnn_numel_of(d, x->shape);
            g->red = x->shape[d];
            g->inner = fnn_numel_of(x->ndim - d - 1, x->shape + d + 1);
        }
        return FNN_STATUS_OK;
    }
    const fnn_tensor *src = x;
    for (int attempt = 0; attempt < 2; attempt++) {
        int64_t cs[FNN_MAX_DIMS], cst[FNN_MAX_DIMS];
        g->base = fnn_data(src);
        if (d < 0) {
            int k = coalesce_dims(src->ndim, src->shape, src->stride, cs, cst);
            if (k <= 1) {
                g->red = k ? cs[0] : 1;
                g->sr = k ? cst[0] : 1;
                return FNN_STATUS_OK;
            }
        } else {
            int k = coalesce_dims(src->ndim - d - 1, src->shape + d + 1, src->stride + d + 1, cs, cst);
            if (k <= 1) {
                g->inner = k ? cs[0] : 1;
                g->si = k ? cst[0] : 1;
                g->red = src->shape[d];
                g->sr = src->stride[d];
                g->nouter = coalesce_dims(d, src->shape, src->stride, g->oshape, g->ostride);
                g->outer = fnn_numel_of(g->nouter, g->oshape);
                /* one outer dim that steps closer than the reduced dim (a transposed input): read it
                 * as the inner dim instead; the output order is the same and memory is walked in order */
                if (g->inner == 1 && g->nouter == 1 && llabs(g->ostride[0]) < llabs(g->sr)) {
                    g->inner = g->outer;
                    g->si = g->ostride[0];
                    g->outer = 1;
                    g->nouter = 0;
                    g->swapped = true;
                }
                return FNN_STATUS_OK;
            }
        }
        if (attempt) break;
        FNN_TRY(fnn_materialize(&g->tmp, x));   /* a contiguous copy always coalesces */
        src = &g->tmp;
    }
    fnn_tensor_clear(&g->tmp);
    return FNN_FAIL(FNN_STATUS_INTERNAL, "reduction: layout of %s did not coalesce (please report)",
                    fnn_shape_of(x).s);
}

/* element offset of outer index o */
static inline int64_t outer_off(const geom *g, int64_t o) {
    if (g->nouter == 1) return o * g->ostride[0];
    int64_t off = 0;
    for (int k = g->nouter - 1; k >= 0; k--) {
        int64_t i = o % g->oshape[k];
        o /= g->oshape[k];
        off += i * g->ostride[k];
    }
    return off;
}

/* the geometry of a contiguous [O, R, I] array (what backward rules read) */
static void geom_contig(geom *g, const float *data, int64_t O, int64_t R, int64_t I) {
    memset(g, 0, sizeof *g);
    fnn_tensor_init(&g->tmp);
    g->base = data;
    g->outer = O; g->red = R; g->inner = I;
    g->sr = I; g->si = 1;
    g->nouter = 1; g->oshape[0] = O; g->ostride[0] = R * I;
}

/* a line along the reduced dim that is strided while its neighbours share cache lines reads
 * badly (one cache line per element): such lines are copied into contiguous rows first */
static inline bool wants_rows(const geom *g) { return g->inner > 1 && g->sr != 1 && g->red > 1; }

enum { TILE = 16 };

/* the tiled transposes below: TILE x TILE tiles t of [outer, red, inner], tr x ti tiles per outer index */
typedef struct {
    const geom *g;
    float *y;                /* scatter_rows: the output */
    float *rows;             /* gather_rows: the output */
    const float *src;        /* scatter_rows: the rows */
    int64_t O, R, I, tr, ti;
} tile_args;

/* tile t -> outer index *o, rows [*r0, *r1) and columns [*i0, *i1) */
static inline void tile_bounds(const tile_args *a, int64_t t, int64_t *o, int64_t *r0, int64_t *r1, int64_t *i0,
                               int64_t *i1) {
    int64_t per = a->tr * a->ti, rest;
    *o = t / per;
    rest = t - *o * per;
    *r0 = (rest / a->ti) * TILE;
    *i0 = (rest % a->ti) * TILE;
    *r1 = *r0 + TILE < a->R ? *r0 + TILE : a->R;
    *i1 = *i0 + TILE < a->I ? *i0 + TILE : a->I;
}

static void gather_tiles(void *ctx, int64_t lo, int64_t hi) {
    const tile_args *a = ctx;
    const geom *g = a->g;
    const int64_t R = a->R, I = a->I;
    for (int64_t t = lo; t < hi; t++) {
        int64_t o, r0, r1, i0, i1;
        tile_bounds(a, t, &o, &r0, &r1, &i0, &i1);
        const float *src = g->base + outer_off(g, o);
        float *dst = a->rows + o * I * R;
        for (int64_t i = i0; i < i1; i++)
            for (int64_t r = r0; r < r1; r++) dst[i * R + r] = src[r * g->sr + i * g->si];
    }
}

/* [outer, red, inner] view -> rows [outer * inner, red] (row o*I + i), a tiled transpose so that
 * both the reads and the writes stay in cache */
static void gather_rows(float *rows, const geom *g) {
    int64_t O = g->outer, R = g->red, I = g->inner;
    tile_args a = {g, NULL, rows, NULL, O, R, I, (R + TILE - 1) / TILE, (I + TILE - 1) / TILE};
    fnn_parallel_for(O * a.tr * a.ti, fnn_threads_for(O * R * I), gather_tiles, &a);
}

static void scatter_tiles(void *ctx, int64_t lo, int64_t hi) {
    const tile_args *a = ctx;
    const int64_t R = a->R, I = a->I;
    for (int64_t t = lo; t < hi; t++) {
        int64_t o, r0, r1, i0, i1;
        tile_bounds(a, t, &o, &r0, &r1, &i0, &i1);
        const float *src = a->src + o * I * R;
        float *dst = a->y + o * R * I;
        for (int64_t r = r0; r < r1; r++)
            for (int64_t i = i0; i < i1; i++) dst[r * I + i] = src[i * R + r];
    }
}

/* rows [outer * inner, red] -> y [outer, red, inner] contiguous (the inverse of gather_rows) */
static void scatter_rows(float *y, const float *rows, int64_t O, int64_t R, int64_t I) {
    tile_args a = {NULL, y, NULL, rows, O, R, I, (R + TILE - 1) / TILE, (I + TILE - 1) / TILE};
    fnn_parallel_for(O * a.tr * a.ti, fnn_threads_for(O * R * I), scatter_tiles, &a);
}

/* a temporary CPU buffer of n floats (counted like any tensor); clear it after use */
static int scratch(fnn_tensor *t, int64_t n) {
    return fnn_new_output(t, fnn_make_device(FNN_DEVICE_CPU, 0), 1, &n);
}

/* sizes of [outer, red, inner] for a contiguous tensor of this shape (backward rules) */
static void split_shape(int nd, const int64_t *shape, int d, int64_t *O, int64_t *R, int64_t *I) {
    if (d < 0) { *O = 1; *R = fnn_numel_of(nd, shape); *I = 1; return; }
    *O = fnn_numel_of(d, shape);
    *R = shape[d];
    *I = fnn_numel_of(nd - d - 1, shape + d + 1);
}

/* the output shape: dim d removed (kept as 1 with keepdim); d < 0: [] (or all ones) */
static void reduced_shape(const fnn_tensor *x, int d, int keepdim, int *ndim, int64_t *shape) {
    int k = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (d < 0 || i == d) { if (keepdim) shape[k++] = 1; }
        else shape[k++] = x->shape[i];
    }
    *ndim = k;
}

/* checks every reduction runs first; dim -1 (or 0 on a scalar) means everything -> *d = -1 */
static int prelude_dim(const char *name, const fnn_tensor *x, int dim, int *d) {
    if (dim == -1 || (x->ndim == 0 && dim == 0)) { *d = -1; return FNN_STATUS_OK; }
    return fnn_wrap_dim(name, x, dim, 0, d);
}
static int prelude(const char *name, const fnn_tensor *x, int dim, int *d) {
    FNN_TRY(fnn_check_input(name, x));
    return prelude_dim(name, x, dim, d);
}

/* a reduction's node (every op of the family) */
typedef struct {
    double k[2];    /* the op's numbers, as its line kernels and rows take them: sum/mean {mean ? 1 : 0, 0},
                     * var {unbiased, 0}, std {unbiased, 1}, norm {p, 0}, the others {0, 0} */
    int dim;        /* the dim reduced (0-based), -1: all of x (softmax, cumsum: a scalar) */
    bool keepdim;   /* as given to the forward (no rule reads it) */
} reduction_attrs;

/* fnn_node_attr's reader for the family: dim, k0, k1 */
int fnn_reduction_attr(const fnn_node *n, const char *name, double *value) {
    const reduction_attrs *a = FNN_ATTRS((fnn_node *)n, reduction_attrs);
    if (!strcmp(name, "dim")) *value = a->dim;
    else if (!strcmp(name, "k0")) *value = a->k[0];
    else if (!strcmp(name, "k1")) *value = a->k[1];
    else return FNN_FAIL(FNN_STATUS_ARG, "node_attr: %s has dim, k0 and k1, not '%s'", n->op->info.name, name);
    return FNN_STATUS_OK;
}

/* record the node of a one-input reduction: saved[0] = x (when save_x), saved[1] = extra;
 * reduction_attrs {k0, k1}, d, keepdim */
static int record(const fnn_op_def *def, fnn_tensor *out, const fnn_tensor *x, bool save_x,
                  const fnn_tensor *extra, int d, int keepdim, double k0, double k1) {
    const fnn_tensor *ins[1] = {x};
    if (!def->backward || !fnn_needs_node(1, ins)) return FNN_STATUS_OK;
    fnn_node *n = fnn_attach_node(out, def, 1, ins);
    if (!n || (save_x && fnn_save(n, 0, x)) || (extra && fnn_save(n, 1, extra))) {
        fnn_tensor_clear(out);
        return fnn_last_status();
    }
    reduction_attrs *a = FNN_ATTRS(n, reduction_attrs);
    a->k[0] = k0;
    a->k[1] = k1;
    a->dim = d;
    a->keepdim = keepdim != 0;
    return FNN_STATUS_OK;
}

/* ================= through the backends' rows (reduction.h's fnn_red_row) =================
 * the row of the tensor's backend runs the op or its rule; x is made contiguous [O, R, I] only for a
 * row without views (the CPU's rows of sum ... log_softmax read it in place through geom_init) */

/* y (and the 1-based positions idx, for max/min) of op `name` over dim d of x, through the row of
 * x's backend; keep_shape: y has x's shape (softmax), else the reduced one */
static int row_forward(const char *name, bool keep_shape, fnn_tensor *y, fnn_tensor *idx, const fnn_tensor *x,
                         int d, int keepdim, double k0, double k1) {
    const fnn_red_row *row = fnn_reduction_row_for(x->device, name);
    if (!row || !row->forward) return FNN_ROW_REFUSED(name, x->device, false);
    int ondim = x->ndim;
    int64_t oshape[FNN_MAX_DIMS], O = 0, R = 0, I = 0;
    const int64_t *os = x->shape;
    if (!keep_shape) { reduced_shape(x, d, keepdim, &ondim, oshape); os = oshape; }
    fnn_tensor tmp;   /* x's contiguous copy, for a row without views */
    int rc = FNN_STATUS_OK;
    const float *xs = NULL;
    if (!row->views) {   /* a row with views reads xv and dim only */
        split_shape(x->ndim, x->shape, d, &O, &R, &I);
        xs = fnn_contiguous_data(x, &tmp, &rc);
        FNN_TRY(rc);
    }
    if (idx) fnn_tensor_init(idx);
    rc = fnn_new_output(y, x->device, ondim, os);
    if (!rc && idx && (rc = fnn_new_output_dtype(idx, x->device, FNN_DTYPE_INT64, ondim, os))) fnn_tensor_clear(y);
    fnn_red_args a = {.out = rc ? NULL : fnn_data(y), .idx = idx && !rc ? fnn_data_i64(idx) : NULL, .x = xs,
                      .O = O, .R = R, .I = I, .k0 = k0, .k1 = k1, .xv = x, .dim = d};
    if (!rc && (rc = row->forward(fnn_device_ordinal(x->device), &a))) {
        fnn_tensor_clear(y);
        if (idx) fnn_tensor_clear(idx);
    }
    if (!row->views) fnn_tensor_clear(&tmp);
    return rc;
}

/* din of n's input from dout through the backward of its op's row in dout's backend; x, y, idx:
 * what the rule reads (or NULL) */
static int row_backward(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din, const fnn_tensor *x,
                              const fnn_tensor *y, const fnn_tensor *idx, double k0, double k1) {
    const fnn_red_row *row = fnn_reduction_row_for(dout->device, n->op->info.name);
    if (!row || !row->backward) return FNN_ROW_REFUSED(n->op->info.name, dout->device, true);
    int nd = n->in_ndim[0];
    int64_t O, R, I;
    split_shape(nd, n->in_shape[0], FNN_ATTRS(n, reduction_attrs)->dim, &O, &R, &I);
    fnn_tensor tg, tx, ty, ti;
    fnn_tensor_init(&tx);
    fnn_tensor_init(&ty);
    fnn_tensor_init(&ti);
    int rc;
    const float *g = fnn_contiguous_data(dout, &tg, &rc), *xs = NULL, *ys = NULL;
    const int64_t *is = NULL;
    if (!rc && x) xs = fnn_contiguous_data(x, &tx, &rc);
    if (!rc && y) ys = fnn_contiguous_data(y, &ty, &rc);
    if (!rc && idx) is = fnn_contiguous_bytes(idx, &ti, &rc);
    if (!rc) rc = fnn_new_output(din, dout->device, nd, n->in_shape[0]);
    if (!rc) {
        fnn_red_args a = {.out = fnn_data(din), .x = xs, .g = g, .y = ys, .sel = is, .O = O, .R = R, .I = I,
                          .k0 = k0, .k1 = k1};
        if ((rc = row->backward(fnn_device_ordinal(dout->device), &a))) fnn_tensor_clear(din);
    }
    fnn_tensor_clear(&tg);
    fnn_tensor_clear(&tx);
    fnn_tensor_clear(&ty);
    fnn_tensor_clear(&ti);
    return rc;
}

/* ================= drivers ================= */

/* a line kernel: n values at stride s -> *y (and a 1-based *idx when idx != NULL); k = op numbers */
typedef void (*line_fn)(const float *x, int64_t n, int64_t s, const double *k, float *y, int64_t *idx);
/* a gradient line kernel: dx[r*s] for r < n from the output gradient g and output y (or index) */
typedef void (*grad_fn)(float *dx, const float *x, int64_t n, int64_t s, float g, float y, const double *k);

typedef struct {
    const geom *g;
    line_fn f;
    const double *k;
    float *y;
    int64_t *idx;
    const float *rows;   /* the lines gathered into contiguous rows, or NULL: read them through g */
} lines_args;

/* outputs lo..hi-1 of run_lines */
static void lines_span(void *ctx, int64_t lo, int64_t hi) {
    const lines_args *a = ctx;
    const geom *g = a->g;
    const int64_t R = g->red;
    for (int64_t p = lo; p < hi; p++) {
        int64_t *idx = a->idx ? a->idx + p : NULL;
        if (a->rows) a->f(a->rows + p * R, R, 1, a->k, a->y + p, idx);
        else {
            int64_t o = p / g->inner, i = p - o * g->inner;
            a->f(g->base + outer_off(g, o) + i * g->si, R, g->sr, a->k, a->y + p, idx);
        }
    }
}

/* [outer, red, inner] -> y [outer, inner], one line kernel call per output */
static int run_lines(const geom *g, line_fn f, const double *k, float *y, int64_t *idx) {
    int64_t nout = g->outer * g->inner, R = g->red;
    int threads = fnn_threads_for(nout * (R > 0 ? R : 1));
    lines_args a = {g, f, k, y, idx, NULL};
    if (wants_rows(g)) {
        fnn_tensor buf;
        FNN_TRY(scratch(&buf, nout * R));
        float *rows = fnn_data(&buf);
        gather_rows(rows, g);
        a.rows = rows;
        fnn_parallel_for(nout, threads, lines_span, &a);
        fnn_tensor_clear(&buf);
        return FNN_STATUS_OK;
    }
    fnn_parallel_for(nout, threads, lines_span, &a);
    return FNN_STATUS_OK;
}

typedef struct {
    grad_fn f;
    const double *k;
    const float *g, *y, *x;   /* x: the input (rows when by_rows), or NULL */
    float *dx;                /* the gradient (rows when by_rows) */
    int64_t R, I;
    bool by_rows;             /* line p is row p of [O * I, R], else the line at stride I in [O, R, I] */
} grad_args;

/* gradient lines lo..hi-1 of grad_lines */
static void grad_span(void *ctx, int64_t lo, int64_t hi) {
    const grad_args *a = ctx;
    const int64_t R = a->R, I = a->I;
    for (int64_t p = lo; p < hi; p++) {
        float gy = a->y ? a->y[p] : 0.0f;
        if (a->by_rows) a->f(a->dx + p * R, a->x ? a->x + p * R : NULL, R, 1, a->g[p], gy, a->k);
        else {
            int64_t o = p / I, i = p - o * I, at = o * R * I + i;
            a->f(a->dx + at, a->x ? a->x + at : NULL, R, I, a->g[p], gy, a->k);
        }
    }
}

/* din [outer, red, inner] from dout [outer, inner] through the row; x = saved[0] and y = saved[1]
 * when the kernel reads them */
static int grad_lines(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din, bool use_x, bool use_y) {
    if (!n->next[0]) return FNN_STATUS_OK;
    const reduction_attrs *at = FNN_ATTRS(n, reduction_attrs);
    return row_backward(n, dout, din, use_x ? &n->saved[0] : NULL, use_y ? &n->saved[1] : NULL, NULL, at->k[0],
                        at->k[1]);
}

/* a CPU row's backward: dx = a->out [O, R, I] by f, line by line; reads a->x when given */
static int grad_lines_cpu(const fnn_red_args *a, grad_fn f) {
    const int64_t O = a->O, R = a->R, I = a->I;
    const bool use_x = a->x != NULL;
    const float *x = a->x, *y = a->y, *g = a->g;
    const double k[2] = {a->k0, a->k1};
    int rc = FNN_STATUS_OK;
    int threads = fnn_threads_for(O * R * I);
    if (I > 1 && R > 1) {
        /* lines at stride I: work on rows (x gathered, dx scattered back) */
        fnn_tensor bx, bd;
        fnn_tensor_init(&bx);
        fnn_tensor_init(&bd);
        rc = scratch(&bd, O * R * I);
        if (!rc && use_x) rc = scratch(&bx, O * R * I);
        if (!rc) {
            float *xr = use_x ? fnn_data(&bx) : NULL, *dr = fnn_data(&bd);
            if (use_x) { geom gx; geom_contig(&gx, x, O, R, I); gather_rows(xr, &gx); }
            grad_args ga = {f, k, g, y, xr, dr, R, I, true};
            fnn_parallel_for(O * I, threads, grad_span, &ga);
            scatter_rows(a->out, dr, O, R, I);
        }
        fnn_tensor_clear(&bx);
        fnn_tensor_clear(&bd);
    } else {
        grad_args ga = {f, k, g, y, x, a->out, R, I, false};
        fnn_parallel_for(O * I, threads, grad_span, &ga);
    }
    return rc;
}

/* a CPU row's forward: x read in place through its view, one line kernel call per output */
static int lines_cpu(const fnn_red_args *a, line_fn f) {
    geom g;
    FNN_TRY(geom_init(&g, a->xv, a->dim));
    const double k[2] = {a->k0, a->k1};
    int rc = run_lines(&g, f, k, a->out, a->idx);
    fnn_tensor_clear(&g.tmp);
    return rc;
}

/* ================= sum, mean ================= */

enum { SUM_BLOCK = 512, SUM_PARTS = 64, SUM_PART_MIN = 65536 };

/* x [n] at stride s -> sum in double. A contiguous run is added in 16 float lanes over
 * blocks of 256 (vectorizes; each lane adds only 16 values) and the blocks in double. */
static double line_sum(const float *x, int64_t n, int64_t s) {
    double total = 0;
    int64_t i = 0;
    if (s == 1) {
        for (; i + 256 <= n; i += 256) {
            float lane[16] = {0};
            for (int j = 0; j < 256; j += 16)
                for (int k = 0; k < 16; k++) lane[k] += x[i + j + k];
            double b = 0;
            for (int k = 0; k < 16; k++) b += lane[k];
            total += b;
        }
        for (; i < n; i++) total += x[i];
    } else {
        for (; i < n; i++) total += x[i * s];
    }
    return total;
}

/* x [n], y [n] contiguous -> sum of x*y in double, in float lanes over blocks as line_sum */
static double line_dot(const float *x, const float *y, int64_t n) {
    double total = 0;
    int64_t i = 0;
    for (; i + 256 <= n; i += 256) {
        float lane[16] = {0};
        for (int j = 0; j < 256; j += 16)
            for (int k = 0; k < 16; k++) lane[k] += x[i + j + k] * y[i + j + k];
        double b = 0;
        for (int k = 0; k < 16; k++) b += lane[k];
        total += b;
    }
    for (; i < n; i++) total += (double)x[i] * y[i];
    return total;
}

/* float <-> its bits, for the masks below */
static inline int32_t f2bits(float f) { int32_t b; memcpy(&b, &f, sizeof b); return b; }
static inline float bits2f(int32_t b) { float f; memcpy(&f, &b, sizeof f); return f; }

/* x [n] contiguous -> the largest value (nan ignored; -inf when n = 0), in 16 independent lanes */
static float line_max(const float *x, int64_t n) {
    float lane[16];
    for (int k = 0; k < 16; k++) lane[k] = -INFINITY;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++) lane[k] = x[i + k] > lane[k] ? x[i + k] : lane[k];
    float m = -INFINITY;
    for (int k = 0; k < 16; k++) m = lane[k] > m ? lane[k] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* x [n] contiguous -> sum of exp(x - m) in double (exps computed 256 at a time, vectorized) */
static double sum_exp(const float *x, int64_t n, float m) {
    double total = 0;
    float e[256];
    for (int64_t i0 = 0; i0 < n; i0 += 256) {
        int k = n - i0 < 256 ? (int)(n - i0) : 256;
        for (int j = 0; j < k; j++) e[j] = fnn_expf(x[i0 + j] - m);
        total += line_sum(e, k, 1);
    }
    return total;
}

typedef struct {
    const geom *g;
    float *y;
    double scale;
    int64_t chunk, nblk;   /* sum_parts: elements per part; sum_blocks: blocks per outer index */
    double *part;          /* sum_parts: the parts' sums */
} sum_args;

/* parts lo..hi-1 of one long line, chunk elements each */
static void sum_parts(void *ctx, int64_t lo, int64_t hi) {
    const sum_args *a = ctx;
    const geom *g = a->g;
    const int64_t R = g->red;
    for (int64_t p = lo; p < hi; p++) {
        int64_t l0 = p * a->chunk, l1 = l0 + a->chunk < R ? l0 + a->chunk : R;
        a->part[p] = l0 < l1 ? line_sum(g->base + l0 * g->sr, l1 - l0, g->sr) : 0.0;
    }
}

/* outputs lo..hi-1, one line each */
static void sum_lines(void *ctx, int64_t lo, int64_t hi) {
    const sum_args *a = ctx;
    const geom *g = a->g;
    const int64_t I = g->inner;
    for (int64_t p = lo; p < hi; p++) {
        int64_t o = p / I, i = p - o * I;
        a->y[p] = (float)(line_sum(g->base + outer_off(g, o) + i * g->si, g->red, g->sr) * a->scale);
    }
}

/* blocks lo..hi-1 of SUM_BLOCK outputs, adding whole rows (unit-stride reads) */
static void sum_blocks(void *ctx, int64_t lo, int64_t hi) {
    const sum_args *a = ctx;
    const geom *g = a->g;
    const int64_t R = g->red, I = g->inner, nblk = a->nblk;
    for (int64_t p = lo; p < hi; p++) {
        int64_t o = p / nblk, i0 = (p - o * nblk) * SUM_BLOCK;
        int m = (int)(I - i0 < SUM_BLOCK ? I - i0 : SUM_BLOCK);
        double acc[SUM_BLOCK];
        for (int j = 0; j < m; j++) acc[j] = 0;
        const float *src = g->base + outer_off(g, o) + i0 * g->si;
        int64_t si = g->si;
        int64_t r = 0, sr = g->sr;
        if (si == 1)   /* four rows added in float, then into double: fewer conversions, still exact enough */
            for (; r + 4 <= R; r += 4) {
                const float *r0 = src + r * sr, *r1 = r0 + sr, *r2 = r1 + sr, *r3 = r2 + sr;
                for (int j = 0; j < m; j++) acc[j] += (double)((r0[j] + r1[j]) + (r2[j] + r3[j]));
            }
        for (; r < R; r++) {
            const float *row = src + r * sr;
            if (si == 1) for (int j = 0; j < m; j++) acc[j] += row[j];
            else for (int j = 0; j < m; j++) acc[j] += row[j * si];
        }
        float *dst = a->y + o * I + i0;
        for (int j = 0; j < m; j++) dst[j] = (float)(acc[j] * a->scale);
    }
}

/* [outer, red, inner] -> y [outer, inner] = scale * sum over red */
static void sum_run(const geom *g, float *y, double scale) {
    int64_t O = g->outer, R = g->red, I = g->inner;
    if (O * I == 0) return;
    int threads = fnn_threads_for(O * R * I);
    sum_args a = {g, y, scale, 0, 0, NULL};
    if (O == 1 && I == 1 && R >= 2 * SUM_PART_MIN) {
        /* one long line: a fixed split, parts added in order (the same bits whatever the thread count) */
        int parts = R / SUM_PART_MIN < SUM_PARTS ? (int)(R / SUM_PART_MIN) : SUM_PARTS;
        double part[SUM_PARTS];
        a.chunk = (R + parts - 1) / parts;
        a.part = part;
        fnn_parallel_for(parts, threads, sum_parts, &a);
        double t = 0;
        for (int p = 0; p < parts; p++) t += part[p];
        y[0] = (float)(t * scale);
        return;
    }
    if (I == 1 || llabs(g->sr) <= llabs(g->si)) {   /* the reduced dim steps closest: one line per output */
        fnn_parallel_for(O * I, threads, sum_lines, &a);
        return;
    }
    /* reduce a leading dim: SUM_BLOCK outputs at a time */
    a.nblk = (I + SUM_BLOCK - 1) / SUM_BLOCK;
    fnn_parallel_for(O * a.nblk, threads, sum_blocks, &a);
}

typedef struct {
    const float *g;
    float *dx;
    int64_t R, I;
    float scale;
} spread_args;

/* rows lo..hi-1 of dx [outer * red, inner]: row r is g's row r / red, scaled. The output row is counted
 * along, one division a part: a reduction over the last dim (inner 1: a global average pool's
 * backward, 262,144 rows of one float in resnet_small) spent its time dividing; there each output's
 * red rows are one run of the same value */
static void spread_rows(void *ctx, int64_t lo, int64_t hi) {
    const spread_args *a = ctx;
    const int64_t R = a->R > 0 ? a->R : 1, I = a->I;
    const float scale = a->scale;
    int64_t o = lo / R, r = lo % R;
    if (I == 1) {
        for (int64_t row = lo; row < hi; o++, r = 0) {
            const int64_t n = R - r < hi - row ? R - r : hi - row;
            const float v = a->g[o] * scale;
            float *d = a->dx + row;
            for (int64_t k = 0; k < n; k++) d[k] = v;
            row += n;
        }
        return;
    }
    for (int64_t row = lo; row < hi; row++) {
        const float *gr = a->g + o * I;
        float *d = a->dx + row * I;
        for (int64_t i = 0; i < I; i++) d[i] = gr[i] * scale;
        if (++r == R) r = 0, o++;
    }
}

/* the CPU rows of sum and mean (k0: the scale, 1 or mean's 1/R): x read in place; the gradient
 * dx [O, R, I] = g [O, I] * k0 */
static int sum_cpu(int ordinal, const fnn_red_args *a) {
    (void)ordinal;
    geom g;
    FNN_TRY(geom_init(&g, a->xv, a->dim));
    sum_run(&g, a->out, a->k0);
    fnn_tensor_clear(&g.tmp);
    return FNN_STATUS_OK;
}
static int sum_grad_cpu(int ordinal, const fnn_red_args *a) {
    (void)ordinal;
    spread_args s = {a->g, a->out, a->R, a->I, (float)a->k0};
    fnn_parallel_for(a->O * a->R, fnn_threads_for(a->O * a->R * a->I), spread_rows, &s);
    return FNN_STATUS_OK;
}

/* sum/mean backward: dx [outer, red, inner] = dout [outer, inner] (/ red for mean, k[0] = 1) */
static int sum_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    const reduction_attrs *at = FNN_ATTRS(n, reduction_attrs);
    int64_t O, R, I;
    split_shape(n->in_ndim[0], n->in_shape[0], at->dim, &O, &R, &I);
    return row_backward(n, dout, din, NULL, NULL, NULL, at->k[0] != 0 ? 1.0 / (double)R : 1.0, 0);
}

/* has_cuda (0 here): the registry derives it from cuda/reduction.cu's rows */
static const fnn_op_def SUM = {.info = {.name = "sum", .family = "reduction", .differentiable = 1},
    .backward = sum_rule};
static const fnn_op_def MEAN = {.info = {.name = "mean", .family = "reduction", .differentiable = 1},
    .backward = sum_rule};

/* sum and mean: x any shape -> reduced shape (sum of none = 0, mean of none = nan) */
static int sum_mean(const fnn_op_def *def, fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim, bool mean) {
    int d;
    FNN_TRY(prelude(def->info.name, x, dim, &d));
    int64_t R = d < 0 ? fnn_tensor_numel(x) : x->shape[d];
    /* mean of none: 1/0 = inf, 0 * inf = nan */
    FNN_TRY(row_forward(def->info.name, false, out, NULL, x, d, keepdim, mean ? 1.0 / (double)R : 1.0, 0));
    return record(def, out, x, false, NULL, d, keepdim, mean ? 1 : 0, 0);
}

/* int64 sum (counts, ids): exact, wrapping on overflow as PyTorch, through the int64 family's row
 * (core/ops/int64.h), no gradient */
static int sum_i64(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) {
    int d, ondim;
    int64_t oshape[FNN_MAX_DIMS], O, R, I;
    FNN_TRY(fnn_check_input_any("sum", x));
    FNN_TRY(prelude_dim("sum", x, dim, &d));
    const fnn_int64_row *row = fnn_int64_row_for(x->device, "sum");
    if (!row) return FNN_ROW_REFUSED("sum", x->device, false);
    reduced_shape(x, d, keepdim, &ondim, oshape);
    split_shape(x->ndim, x->shape, d, &O, &R, &I);
    fnn_tensor tmp;
    int rc;
    const int64_t *xs = fnn_contiguous_bytes(x, &tmp, &rc);
    FNN_TRY(rc);
    rc = fnn_new_output_dtype(out, x->device, FNN_DTYPE_INT64, ondim, oshape);
    fnn_int64_args a = {.y = rc ? NULL : fnn_bytes(out), .a = xs, .a_dtype = FNN_DTYPE_INT64, .O = O, .R = R, .I = I};
    if (!rc && (rc = row->run(fnn_device_ordinal(x->device), &a))) fnn_tensor_clear(out);
    fnn_tensor_clear(&tmp);
    return rc;
}

int fnn_sum(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) {
    if (x && fnn_is_int64(x)) return sum_i64(out, x, dim, keepdim);
    return sum_mean(&SUM, out, x, dim, keepdim, false);
}
int fnn_mean(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) { return sum_mean(&MEAN, out, x, dim, keepdim, true); }

/* ================= the other reductions: line kernels and their gradients ================= */

/* one reduction through its row (the CPU's: run_lines); saves x when save_x and the output when save_out */
static int reduce(const fnn_op_def *def, fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim, double k0,
                  double k1, bool save_x, bool save_out) {
    int d;
    FNN_TRY(prelude(def->info.name, x, dim, &d));
    FNN_TRY(row_forward(def->info.name, false, out, NULL, x, d, keepdim, k0, k1));
    return record(def, out, x, save_x, save_out ? out : NULL, d, keepdim, k0, k1);
}

/* ---- prod: product of none = 1 ---- */
static void prod_line(const float *x, int64_t n, int64_t s, const double *k, float *y, int64_t *idx) {
    (void)k; (void)idx;
    double p = 1;
    for (int64_t r = 0; r < n; r++) p *= x[r * s];
    *y = (float)p;
}
/* d prod / dx_r = product of the others: exact with one zero in the line, all zero with two */
static void prod_grad(float *dx, const float *x, int64_t n, int64_t s, float g, float y, const double *k) {
    (void)y; (void)k;
    int64_t zeros = 0, at = 0;
    double p = 1;
    for (int64_t r = 0; r < n; r++) {
        float v = x[r * s];
        if (v == 0) { zeros++; at = r; }
        else p *= v;
    }
    for (int64_t r = 0; r < n; r++) dx[r * s] = zeros == 0 ? (float)(g * (p / x[r * s])) : 0.0f;
    if (zeros == 1) dx[at * s] = (float)(g * p);
}
static int prod_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return lines_cpu(a, prod_line); }
static int prod_grad_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return grad_lines_cpu(a, prod_grad); }
static int prod_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_lines(n, g, din, true, false); }
static const fnn_op_def PROD = {.info = {.name = "prod", .family = "reduction", .differentiable = 1},
    .backward = prod_rule};
int fnn_prod(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) {
    return reduce(&PROD, out, x, dim, keepdim, 0, 0, true, false);
}

/* ---- var, std: two passes in double; k[0] = ddof (1 unbiased), k[1] = 1 for std ---- */
static void var_line(const float *x, int64_t n, int64_t s, const double *k, float *y, int64_t *idx) {
    (void)idx;
    double m = line_sum(x, n, s) / (double)n, ss = 0;
    for (int64_t r = 0; r < n; r++) { double dv = x[r * s] - m; ss += dv * dv; }
    double v = (double)n - k[0] > 0 ? ss / ((double)n - k[0]) : NAN;   /* none, or one unbiased: nan */
    *y = (float)(k[1] != 0 ? sqrt(v) : v);
}
/* var: 2 (x - mean) / (n - ddof); std: (x - mean) / ((n - ddof) std), 0 where std = 0 */
static void var_grad(float *dx, const float *x, int64_t n, int64_t s, float g, float y, const double *k) {
    double m = line_sum(x, n, s) / (double)n, div = (double)n - k[0];
    double c = k[1] != 0 ? (y != 0 ? g / (div * y) : 0.0) : 2.0 * g / div;
    for (int64_t r = 0; r < n; r++) dx[r * s] = (float)(c * (x[r * s] - m));
}
static int var_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return lines_cpu(a, var_line); }
static int var_grad_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return grad_lines_cpu(a, var_grad); }
static int var_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_lines(n, g, din, true, false); }
static int std_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_lines(n, g, din, true, true); }
static const fnn_op_def VAR = {.info = {.name = "var", .family = "reduction", .differentiable = 1},
    .backward = var_rule};
static const fnn_op_def STD = {.info = {.name = "std", .family = "reduction", .differentiable = 1},
    .backward = std_rule};
int fnn_var(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim, int unbiased) {
    return reduce(&VAR, out, x, dim, keepdim, unbiased ? 1 : 0, 0, true, false);
}
int fnn_std(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim, int unbiased) {
    return reduce(&STD, out, x, dim, keepdim, unbiased ? 1 : 0, 1, true, true);
}

/* ---- norm: (sum |x|^p)^(1/p); p = inf: max |x|, -inf: min |x|, 0: count of non-zeros ---- */
static void norm_line(const float *x, int64_t n, int64_t s, const double *k, float *y, int64_t *idx) {
    (void)idx;
    double p = k[0], acc = 0;
    if (p == 2) {
        for (int64_t r = 0; r < n; r++) { double v = x[r * s]; acc += v * v; }
        acc = sqrt(acc);
    } else if (p == 1) {
        for (int64_t r = 0; r < n; r++) acc += fabs((double)x[r * s]);
    } else if (isinf(p)) {
        acc = p > 0 ? 0.0 : INFINITY;
        for (int64_t r = 0; r < n; r++) {
            double a = fabs((double)x[r * s]);
            if (isnan(a)) { acc = a; break; }
            acc = p > 0 ? (a > acc ? a : acc) : (a < acc ? a : acc);
        }
    } else if (p == 0) {
        for (int64_t r = 0; r < n; r++) acc += x[r * s] != 0;
    } else {
        for (int64_t r = 0; r < n; r++) acc += pow(fabs((double)x[r * s]), p);
        acc = pow(acc, 1.0 / p);
    }
    *y = (float)acc;
}
/* sign(x) (|x| / norm)^(p-1); inf norms: split evenly among the |x| that reach the norm; 0 where x = 0 or norm = 0 */
static void norm_grad(float *dx, const float *x, int64_t n, int64_t s, float g, float y, const double *k) {
    double p = k[0];
    if (p == 0 || y == 0) { for (int64_t r = 0; r < n; r++) dx[r * s] = 0.0f; return; }
    if (isinf(p)) {
        int64_t ties = 0;
        for (int64_t r = 0; r < n; r++) ties += fabsf(x[r * s]) == y;
        float share = ties ? g / (float)ties : 0.0f;
        for (int64_t r = 0; r < n; r++) {
            float v = x[r * s];
            dx[r * s] = fabsf(v) == y ? (v > 0 ? share : -share) : 0.0f;
        }
        return;
    }
    for (int64_t r = 0; r < n; r++) {
        double v = x[r * s], a = fabs(v), t;
        if (v == 0) t = 0;
        else if (p == 2) t = g * v / y;
        else if (p == 1) t = v > 0 ? g : -g;
        else t = copysign(g * pow(a / y, p - 1), v);
        dx[r * s] = (float)t;
    }
}
static int norm_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return lines_cpu(a, norm_line); }
static int norm_grad_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return grad_lines_cpu(a, norm_grad); }
static int norm_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_lines(n, g, din, true, true); }
static const fnn_op_def NORM = {.info = {.name = "norm", .family = "reduction", .differentiable = 1},
    .backward = norm_rule};
int fnn_norm(fnn_tensor *out, const fnn_tensor *x, double p, int dim, int keepdim) {
    FNN_CHECK(!isnan(p), FNN_STATUS_ARG, "norm: p must be a number or +-inf, got nan");
    return reduce(&NORM, out, x, dim, keepdim, p, 0, true, true);
}

/* ---- logsumexp: m + log(sum exp(x - m)), m = max (stable); of none = -inf ---- */
static void lse_line(const float *x, int64_t n, int64_t s, const double *k, float *y, int64_t *idx) {
    (void)k; (void)idx;
    float m = -INFINITY;
    for (int64_t r = 0; r < n; r++) {
        float v = x[r * s];
        if (isnan(v)) { *y = v; return; }
        if (v > m) m = v;
    }
    if (isinf(m)) { *y = m; return; }   /* all -inf (or none): -inf; any +inf: +inf */
    double acc = 0;
    if (s == 1) acc = sum_exp(x, n, m);
    else for (int64_t r = 0; r < n; r++) acc += fnn_expf(x[r * s] - m);
    *y = (float)(m + log(acc));
}
/* softmax of the line times g (0 when the result was -inf) */
static void lse_grad(float *dx, const float *x, int64_t n, int64_t s, float g, float y, const double *k) {
    (void)k;
    for (int64_t r = 0; r < n; r++) dx[r * s] = (isinf(y) && y < 0) ? 0.0f : g * fnn_expf(x[r * s] - y);
}
static int lse_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return lines_cpu(a, lse_line); }
static int lse_grad_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return grad_lines_cpu(a, lse_grad); }
static int lse_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_lines(n, g, din, true, true); }
static const fnn_op_def LOGSUMEXP = {.info = {.name = "logsumexp", .family = "reduction", .differentiable = 1},
    .backward = lse_rule};
int fnn_logsumexp(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) {
    return reduce(&LOGSUMEXP, out, x, dim, keepdim, 0, 0, true, true);
}

/* ================= max, min, argmax, argmin ================= */

/* the first largest (smallest) value and its 1-based position; a nan wins, as PyTorch */
static void max_line(const float *x, int64_t n, int64_t s, const double *k, float *y, int64_t *idx) {
    (void)k;
    float best = x[0];
    int64_t at = 0;
    for (int64_t r = 1; r < n && !isnan(best); r++) {
        float v = x[r * s];
        if (v > best || isnan(v)) { best = v; at = r; }
    }
    *y = best;
    if (idx) *idx = at + 1;
}
static void min_line(const float *x, int64_t n, int64_t s, const double *k, float *y, int64_t *idx) {
    (void)k;
    float best = x[0];
    int64_t at = 0;
    for (int64_t r = 1; r < n && !isnan(best); r++) {
        float v = x[r * s];
        if (v < best || isnan(v)) { best = v; at = r; }
    }
    *y = best;
    if (idx) *idx = at + 1;
}
/* over everything: g split evenly among the elements equal to the result y */
static void ties_grad(float *dx, const float *x, int64_t n, int64_t s, float g, float y, const double *k) {
    (void)k;
    int64_t ties = 0;
    for (int64_t r = 0; r < n; r++) ties += x[r * s] == y;
    float share = ties ? g / (float)ties : 0.0f;
    for (int64_t r = 0; r < n; r++) dx[r * s] = x[r * s] == y ? share : 0.0f;
}
/* the CPU rows of max and min (argmax, argmin: the same forward); x read in place */
static int max_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return lines_cpu(a, max_line); }
static int min_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return lines_cpu(a, min_line); }
/* along a dim (a->sel): zeros, with g [O, I] put at the forward's positions sel [O, I] along R;
 * over everything: ties_grad */
static int extreme_grad_cpu(int ordinal, const fnn_red_args *a) {
    (void)ordinal;
    if (!a->sel) return grad_lines_cpu(a, ties_grad);
    const int64_t O = a->O, R = a->R, I = a->I, *is = a->sel;
    const float *gs = a->g;
    float *dx = a->out;
    for (int64_t j = 0, n = O * R * I; j < n; j++) dx[j] = 0.0f;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) dx[(o * R + is[o * I + i] - 1) * I + i] = gs[o * I + i];
    return FNN_STATUS_OK;
}
/* saved[0] = x, saved[1] = the value (over everything: ties share g) or the int64 indices (along a
 * dim: all of g goes to the selected position, scattered back into zeros) */
static int extreme_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    int d = FNN_ATTRS(n, reduction_attrs)->dim;
    if (d < 0) return grad_lines(n, g, din, true, true);
    if (!n->next[0]) return FNN_STATUS_OK;
    return row_backward(n, g, din, NULL, NULL, &n->saved[1], 0, 0);
}
static const fnn_op_def MAX = {.info = {.name = "max", .family = "reduction", .differentiable = 1},
    .backward = extreme_rule};
static const fnn_op_def MIN = {.info = {.name = "min", .family = "reduction", .differentiable = 1},
    .backward = extreme_rule};
static const fnn_op_def ARGMAX = {.info = {.name = "argmax", .family = "reduction"}};
static const fnn_op_def ARGMIN = {.info = {.name = "argmin", .family = "reduction"}};

/* values and 1-based indices of the max (min), through the row of op `name`; refuses to reduce
 * over no elements */
static int extreme(const char *name, fnn_tensor *vals, fnn_tensor *idx, const fnn_tensor *x, int dim, int keepdim,
                   int *d_out) {
    int d;
    int64_t O, R, I;
    FNN_TRY(prelude(name, x, dim, &d));
    *d_out = d;
    split_shape(x->ndim, x->shape, d, &O, &R, &I);
    if (R == 0) {
        if (d < 0)
            return FNN_FAIL(FNN_STATUS_SHAPE, "%s: tensor %s has no elements to reduce", name, fnn_shape_of(x).s);
        return FNN_FAIL(FNN_STATUS_SHAPE, "%s: dim %d of %s has size 0, nothing to reduce", name, d + 1,
                        fnn_shape_of(x).s);
    }
    return row_forward(name, false, vals, idx, x, d, keepdim, 0, 0);
}

/* max/min of an int64 x (ids, counts): int64 values and 1-based int64 indices of the first extreme,
 * through the int64 family's row (core/ops/int64.h), no gradient */
static int extreme_i64(const char *name, bool is_max, fnn_tensor *vals, fnn_tensor *idx, const fnn_tensor *x,
                       int dim, int keepdim) {
    int d, ondim;
    int64_t oshape[FNN_MAX_DIMS], O, R, I;
    FNN_TRY(fnn_check_input_any(name, x));
    FNN_TRY(prelude_dim(name, x, dim, &d));
    const fnn_int64_row *row = fnn_int64_row_for(x->device, is_max ? "max" : "min");
    if (!row) return FNN_ROW_REFUSED(name, x->device, false);
    reduced_shape(x, d, keepdim, &ondim, oshape);
    split_shape(x->ndim, x->shape, d, &O, &R, &I);
    FNN_CHECK(R > 0, FNN_STATUS_SHAPE, "%s: tensor %s has nothing to reduce along %s", name, fnn_shape_of(x).s,
              d < 0 ? "its elements" : "that dim");
    fnn_tensor tmp;
    int rc;
    const int64_t *xs = fnn_contiguous_bytes(x, &tmp, &rc);
    FNN_TRY(rc);
    fnn_tensor_init(idx);
    rc = fnn_new_output_dtype(vals, x->device, FNN_DTYPE_INT64, ondim, oshape);
    if (!rc) rc = fnn_new_output_dtype(idx, x->device, FNN_DTYPE_INT64, ondim, oshape);
    if (!rc) {
        fnn_int64_args a = {.y = fnn_bytes(vals), .idx = fnn_data_i64(idx), .a = xs, .a_dtype = FNN_DTYPE_INT64,
                            .O = O, .R = R, .I = I};
        rc = row->run(fnn_device_ordinal(x->device), &a);
    }
    if (rc) {
        fnn_tensor_clear(vals);
        fnn_tensor_clear(idx);
    }
    fnn_tensor_clear(&tmp);
    return rc;
}

static int maxmin(const fnn_op_def *def, fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int dim,
                  int keepdim) {
    fnn_tensor idx;
    int d;
    if (x && fnn_is_int64(x)) {
        FNN_TRY(extreme_i64(def->info.name, def == &MAX, values, &idx, x, dim, keepdim));
        if (indices) *indices = idx;
        else fnn_tensor_clear(&idx);
        return FNN_STATUS_OK;
    }
    FNN_TRY(extreme(def->info.name, values, &idx, x, dim, keepdim, &d));
    int rc = record(def, values, x, true, d < 0 ? values : &idx, d, keepdim, 0, 0);
    if (rc) { fnn_tensor_clear(&idx); return rc; }
    if (indices) *indices = idx;
    else fnn_tensor_clear(&idx);
    return FNN_STATUS_OK;
}
int fnn_max(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int dim, int keepdim) {
    return maxmin(&MAX, values, indices, x, dim, keepdim);
}
int fnn_min(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int dim, int keepdim) {
    return maxmin(&MIN, values, indices, x, dim, keepdim);
}

static int arg_extreme(const char *name, bool is_max, fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) {
    fnn_tensor vals;
    int d;
    if (x && fnn_is_int64(x)) {
        FNN_TRY(extreme_i64(name, is_max, &vals, out, x, dim, keepdim));
        fnn_tensor_clear(&vals);
        return FNN_STATUS_OK;
    }
    FNN_TRY(extreme(name, &vals, out, x, dim, keepdim, &d));
    fnn_tensor_clear(&vals);
    return FNN_STATUS_OK;
}
int fnn_argmax(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) { return arg_extreme("argmax", true, out, x, dim, keepdim); }
int fnn_argmin(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim) { return arg_extreme("argmin", false, out, x, dim, keepdim); }

/* ================= softmax, log_softmax ================= */

/* one row x [n] -> y [n] (y may be x): softmax, or log_softmax when lg. Shifted by the max so no
 * exp overflows; every loop vectorizes (fnn_expf), so a row costs a few passes in cache.
 * A nan, or a row of -inf only, gives nan, as PyTorch. */
static void softmax_row(float *y, const float *x, int64_t n, bool lg) {
    float m = line_max(x, n);
    if (m == -INFINITY) m = 0;
    if (lg) {
        float ls = (float)log(sum_exp(x, n, m));   /* (x - m) - ls, not x - (m + ls): keeps precision for large m */
        for (int64_t r = 0; r < n; r++) y[r] = (x[r] - m) - ls;
    } else {
        for (int64_t r = 0; r < n; r++) y[r] = fnn_expf(x[r] - m);
        float inv = (float)(1.0 / line_sum(y, n, 1));
        for (int64_t r = 0; r < n; r++) y[r] *= inv;
    }
}
/* one row: softmax dx = y (g - sum g y); log_softmax dx = g - exp(y) sum g (dx may be g) */
static void softmax_grad_row(float *dx, const float *g, const float *y, int64_t n, bool lg) {
    if (lg) {
        float total = (float)line_sum(g, n, 1);
        for (int64_t r = 0; r < n; r++) dx[r] = g[r] - fnn_expf(y[r]) * total;
    } else {
        float dot = (float)line_dot(g, y, n);
        for (int64_t r = 0; r < n; r++) dx[r] = y[r] * (g[r] - dot);
    }
}

/* COL_BLOCK columns per softmax_cols step; a softmax element costs ~4 adds or more (exp, several passes) */
enum { COL_BLOCK = 256, SOFTMAX_COST = 4 };

typedef struct {
    const geom *g;                 /* softmax_cols: the input */
    const float *gr, *y;           /* softmax_grad_cols: the output gradient and softmax output */
    float *out;                    /* y (softmax_cols) or dx (softmax_grad_cols) */
    int64_t O, R, I, nblk;
    bool lg;
} cols_args;

/* column blocks lo..hi-1 of softmax_cols */
static void softmax_col_blocks(void *ctx, int64_t lo, int64_t hi) {
    const cols_args *a = ctx;
    const geom *g = a->g;
    float *y = a->out;
    const int64_t R = a->R, I = a->I, sr = g->sr, nblk = a->nblk;
    const bool lg = a->lg;
    for (int64_t t = lo; t < hi; t++) {
        int64_t o = t / nblk, i0 = (t - o * nblk) * COL_BLOCK;
        int m = (int)(I - i0 < COL_BLOCK ? I - i0 : COL_BLOCK);
        const float *src = g->base + outer_off(g, o) + i0;
        float *dst = y + o * R * I + i0;
        float mx[COL_BLOCK], fac[COL_BLOCK];
        double sm[COL_BLOCK];
        for (int j = 0; j < m; j++) { mx[j] = -INFINITY; sm[j] = 0; }
        for (int64_t r = 0; r < R; r++) {
            const float *row = src + r * sr;
            for (int j = 0; j < m; j++) {   /* a mask, not a select: see core/fastmath.h */
                int32_t gt = -(int32_t)(row[j] > mx[j]);
                mx[j] = bits2f((f2bits(row[j]) & gt) | (f2bits(mx[j]) & ~gt));
            }
        }
        for (int j = 0; j < m; j++) if (mx[j] == -INFINITY) mx[j] = 0;
        if (lg) {
            for (int64_t r = 0; r < R; r++) {
                const float *row = src + r * sr;
                for (int j = 0; j < m; j++) sm[j] += fnn_expf(row[j] - mx[j]);
            }
            for (int j = 0; j < m; j++) fac[j] = (float)log(sm[j]);
            for (int64_t r = 0; r < R; r++) {
                const float *row = src + r * sr;
                float *out = dst + r * I;
                for (int j = 0; j < m; j++) out[j] = (row[j] - mx[j]) - fac[j];
            }
        } else {
            for (int64_t r = 0; r < R; r++) {
                const float *row = src + r * sr;
                float *out = dst + r * I;
                for (int j = 0; j < m; j++) { float e = fnn_expf(row[j] - mx[j]); out[j] = e; sm[j] += e; }
            }
            for (int j = 0; j < m; j++) fac[j] = (float)(1.0 / sm[j]);
            for (int64_t r = 0; r < R; r++) {
                float *out = dst + r * I;
                for (int j = 0; j < m; j++) out[j] *= fac[j];
            }
        }
    }
}

/* [outer, red, inner] view with unit inner stride -> y [outer, red, inner], normalised along red,
 * COL_BLOCK columns at a time: every pass reads whole row pieces in order (no transposes) */
static void softmax_cols(float *y, const geom *g, bool lg) {
    int64_t O = g->outer, R = g->red, I = g->inner;
    cols_args a = {g, NULL, NULL, y, O, R, I, (I + COL_BLOCK - 1) / COL_BLOCK, lg};
    fnn_parallel_for(O * a.nblk, fnn_threads_for(O * R * I * SOFTMAX_COST), softmax_col_blocks, &a);
}

/* column blocks lo..hi-1 of softmax_grad_cols */
static void softmax_grad_col_blocks(void *ctx, int64_t lo, int64_t hi) {
    const cols_args *a = ctx;
    const float *g = a->gr, *y = a->y;
    float *dx = a->out;
    const int64_t R = a->R, I = a->I, nblk = a->nblk;
    const bool lg = a->lg;
    for (int64_t t = lo; t < hi; t++) {
        int64_t o = t / nblk, i0 = (t - o * nblk) * COL_BLOCK, at = o * R * I + i0;
        int m = (int)(I - i0 < COL_BLOCK ? I - i0 : COL_BLOCK);
        double acc[COL_BLOCK];
        float fac[COL_BLOCK];
        for (int j = 0; j < m; j++) acc[j] = 0;
        for (int64_t r = 0; r < R; r++) {
            const float *gr = g + at + r * I, *yr = y + at + r * I;
            if (lg) for (int j = 0; j < m; j++) acc[j] += gr[j];
            else for (int j = 0; j < m; j++) acc[j] += gr[j] * yr[j];
        }
        for (int j = 0; j < m; j++) fac[j] = (float)acc[j];
        for (int64_t r = 0; r < R; r++) {
            const float *gr = g + at + r * I, *yr = y + at + r * I;
            float *d = dx + at + r * I;
            if (lg) for (int j = 0; j < m; j++) d[j] = gr[j] - fnn_expf(yr[j]) * fac[j];
            else for (int j = 0; j < m; j++) d[j] = yr[j] * (gr[j] - fac[j]);
        }
    }
}

/* the backward of softmax_cols: g, y, dx contiguous [O, R, I], COL_BLOCK columns at a time */
static void softmax_grad_cols(float *dx, const float *g, const float *y, int64_t O, int64_t R, int64_t I, bool lg) {
    cols_args a = {NULL, g, y, dx, O, R, I, (I + COL_BLOCK - 1) / COL_BLOCK, lg};
    fnn_parallel_for(O * a.nblk, fnn_threads_for(O * R * I), softmax_grad_col_blocks, &a);
}

typedef struct {
    const geom *g;     /* rows read through g's outer offsets (inner 1, unit stride), or NULL: */
    const float *x;    /* rows of R at x */
    float *y;
    int64_t R;
    bool lg;
} rows_args;

/* rows lo..hi-1 -> y's rows lo..hi-1 */
static void softmax_rows(void *ctx, int64_t lo, int64_t hi) {
    const rows_args *a = ctx;
    const int64_t R = a->R;
    for (int64_t p = lo; p < hi; p++)
        softmax_row(a->y + p * R, a->g ? a->g->base + outer_off(a->g, p) : a->x + p * R, R, a->lg);
}

/* [outer, red, inner] view -> y [outer, red, inner] contiguous, normalised along red */
static int softmax_run(const geom *g, float *y, bool lg) {
    int64_t O = g->outer, R = g->red, I = g->inner, rows = O * I;
    if (R == 0 || rows == 0) return FNN_STATUS_OK;
    int threads = fnn_threads_for(rows * R * SOFTMAX_COST);
    if (I == 1 && g->sr == 1) {   /* rows of a contiguous tensor: the common case, no copy */
        rows_args a = {g, NULL, y, R, lg};
        fnn_parallel_for(O, threads, softmax_rows, &a);
        return FNN_STATUS_OK;
    }
    if (I == 1 || g->swapped) {   /* strided rows (in y's order when swapped): gather them into y, work in place */
        gather_rows(y, g);
        rows_args a = {NULL, y, y, R, lg};
        fnn_parallel_for(rows, threads, softmax_rows, &a);
        return FNN_STATUS_OK;
    }
    if (g->si == 1) { softmax_cols(y, g, lg); return FNN_STATUS_OK; }   /* along a leading dim */
    fnn_tensor buf;   /* inner dims at a stride: rows in a buffer, then back */
    FNN_TRY(scratch(&buf, rows * R));
    float *b = fnn_data(&buf);
    gather_rows(b, g);
    rows_args a = {NULL, b, b, R, lg};
    fnn_parallel_for(rows, threads, softmax_rows, &a);
    scatter_rows(y, b, O, R, I);
    fnn_tensor_clear(&buf);
    return FNN_STATUS_OK;
}

/* lines lo..hi-1 of softmax_rule's I == 1 or R <= 1 case (a->gr, a->y, a->out: g, y, dx) */
static void softmax_grad_lines(void *ctx, int64_t lo, int64_t hi) {
    const cols_args *a = ctx;
    const int64_t R = a->R, I = a->I;
    for (int64_t p = lo; p < hi; p++) {
        int64_t o = p / I, i = p - o * I, at = o * R * I + i;
        softmax_grad_row(a->out + at, a->gr + at, a->y + at, R, a->lg);
    }
}

/* the CPU rows of softmax (lg: log_softmax): x read in place; the gradient from g and y */
static int softmax_cpu_run(const fnn_red_args *a, bool lg) {
    geom g;
    FNN_TRY(geom_init(&g, a->xv, a->dim));
    int rc = softmax_run(&g, a->out, lg);
    fnn_tensor_clear(&g.tmp);
    return rc;
}
static int softmax_grad_cpu_run(const fnn_red_args *a, bool lg) {
    const int64_t O = a->O, R = a->R, I = a->I;
    if (I == 1 || R <= 1) {   /* I == 1: rows; R == 1: lines of one */
        cols_args c = {NULL, a->g, a->y, a->out, O, R, I, 0, lg};
        fnn_parallel_for(O * I, fnn_threads_for(O * R * I), softmax_grad_lines, &c);
    } else {   /* along a leading dim: column blocks */
        softmax_grad_cols(a->out, a->g, a->y, O, R, I, lg);
    }
    return FNN_STATUS_OK;
}
static int softmax_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return softmax_cpu_run(a, false); }
static int log_softmax_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return softmax_cpu_run(a, true); }
static int softmax_grad_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return softmax_grad_cpu_run(a, false); }
static int log_softmax_grad_cpu(int ordinal, const fnn_red_args *a) { (void)ordinal; return softmax_grad_cpu_run(a, true); }

/* saved[1] = y; reduction_attrs: dim (-1 on a scalar); the row (softmax's or log_softmax's) knows which */
static int softmax_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    return row_backward(n, dout, din, NULL, &n->saved[1], NULL, 0, 0);
}
static const fnn_op_def SOFTMAX = {.info = {.name = "softmax", .family = "reduction", .differentiable = 1},
    .backward = softmax_rule};
static const fnn_op_def LOG_SOFTMAX = {.info = {.name = "log_softmax", .family = "reduction", .differentiable = 1},
    .backward = softmax_rule};

/* x any shape -> same shape, normalised along dim (negative counts from the end) */
static int softmax_common(const fnn_op_def *def, fnn_tensor *out, const fnn_tensor *x, int dim) {
    const char *name = def->info.name;
    FNN_TRY(fnn_check_input(name, x));
    int d = -1;   /* a scalar is one line of one */
    if (!(x->ndim == 0 && (dim == 0 || dim == -1))) FNN_TRY(fnn_wrap_dim(name, x, dim, 0, &d));
    FNN_TRY(row_forward(name, true, out, NULL, x, d, 0, 0, 0));
    return record(def, out, x, false, out, d, 0, 0, 0);
}
int fnn_softmax(fnn_tensor *out, const fnn_tensor *x, int dim) { return softmax_common(&SOFTMAX, out, x, dim); }
int fnn_log_softmax(fnn_tensor *out, const fnn_tensor *x, int dim) { return softmax_common(&LOG_SOFTMAX, out, x, dim); }

/* ================= cumsum: running sums along a dim =================
 * y[.., r, ..] = x[.., 0, ..] + ... + x[.., r, ..], summed in double; its gradient is the same sum
 * run from the end over g. One entry point for every device: the rows below (the CPU's) and in
 * cuda/reduction.cu do the lines. */
enum { SCAN_BLOCK = 64 };   /* columns summed side by side: rows of I read in order */
/* SCAN_SUM: cumsum (reverse: its gradient); SCAN_LSE: logcumsumexp; SCAN_LSE_GRAD: its gradient (x, y, g) */
enum { SCAN_SUM, SCAN_LSE, SCAN_LSE_GRAD };
typedef struct { float *out; const float *x, *y, *g; int64_t R, I, nblk; int kind; bool reverse; } scan_args;

/* logcumsumexp's step: log(e^acc + e^v), in double, without overflow; NaN stays, +-inf as the math */
static double log_add_exp(double acc, double v) {
    if (isnan(acc) || isnan(v)) return NAN;
    double m = acc > v ? acc : v, lo = acc > v ? v : acc;
    return isinf(m) ? m : m + log1p(exp(lo - m));
}

/* items lo..hi-1, each SCAN_BLOCK columns of one outer index */
static void scan_blocks(void *ctx, int64_t lo, int64_t hi) {
    const scan_args *a = ctx;
    const int64_t R = a->R, I = a->I;
    const bool reverse = a->reverse || a->kind == SCAN_LSE_GRAD;
    for (int64_t t = lo; t < hi; t++) {
        int64_t o = t / a->nblk, i0 = (t - o * a->nblk) * SCAN_BLOCK, base = o * R * I + i0;
        int m = (int)(I - i0 < SCAN_BLOCK ? I - i0 : SCAN_BLOCK);
        double acc[SCAN_BLOCK];
        for (int j = 0; j < m; j++) acc[j] = a->kind == SCAN_LSE ? -INFINITY : 0.0;
        for (int64_t k = 0; k < R; k++) {
            int64_t r = reverse ? R - 1 - k : k;
            const float *x = a->x + base + r * I;
            float *out = a->out + base + r * I;
            if (a->kind == SCAN_SUM) {
                for (int j = 0; j < m; j++) { acc[j] += x[j]; out[j] = (float)acc[j]; }
            } else if (a->kind == SCAN_LSE) {
                for (int j = 0; j < m; j++) { acc[j] = log_add_exp(acc[j], x[j]); out[j] = (float)acc[j]; }
            } else {
                /* dx_r = e^(x_r - y_r) B_r, B_r = g_r + e^(y_r - y_r+1) B_r+1: y rises along the line, so
                 * every exponent is <= 0 (a -inf y, all -inf so far, weighs 0) */
                const float *y = a->y + base + r * I, *g = a->g + base + r * I, *yn = y + I;
                for (int j = 0; j < m; j++) {
                    double carry = k == 0 || y[j] == -INFINITY ? 0.0 : exp((double)y[j] - yn[j]) * acc[j];
                    acc[j] = g[j] + carry;
                    out[j] = x[j] == -INFINITY ? 0.0f : (float)(exp((double)x[j] - y[j]) * acc[j]);
                }
            }
        }
    }
}
static int scan_cpu(const fnn_red_args *a, int kind, bool reverse) {
    scan_args s = {a->out, kind == SCAN_SUM && reverse ? a->g : a->x, a->y, a->g, a->R, a->I,
                   (a->I + SCAN_BLOCK - 1) / SCAN_BLOCK, kind, reverse};
    fnn_parallel_for(a->O * s.nblk, fnn_threads_for(a->O * a->R * a->I * (kind == SCAN_SUM ? 1 : 8)), scan_blocks, &s);
    return FNN_STATUS_OK;
}
static int cumsum_cpu(int ordinal, const fnn_red_args *a) {
    (void)ordinal;
    return scan_cpu(a, SCAN_SUM, false);
}
static int cumsum_grad_cpu(int ordinal, const fnn_red_args *a) {
    (void)ordinal;
    return scan_cpu(a, SCAN_SUM, true);
}
static int logcumsumexp_cpu(int ordinal, const fnn_red_args *a) {
    (void)ordinal;
    return scan_cpu(a, SCAN_LSE, false);
}
static int logcumsumexp_grad_cpu(int ordinal, const fnn_red_args *a) {
    (void)ordinal;
    return scan_cpu(a, SCAN_LSE_GRAD, true);
}

/* reduction_attrs: dim (-1 on a scalar) */
static int cumsum_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    return row_backward(n, dout, din, NULL, NULL, NULL, 0, 0);
}
static const fnn_op_def CUMSUM = {.info = {.name = "cumsum", .family = "reduction", .differentiable = 1},
    .backward = cumsum_rule};
int fnn_cumsum(fnn_tensor *out, const fnn_tensor *x, int dim) {
    FNN_TRY(fnn_check_input("cumsum", x));
    int d = -1;   /* a scalar is one line of one */
    if (!(x->ndim == 0 && (dim == 0 || dim == -1))) FNN_TRY(fnn_wrap_dim("cumsum", x, dim, 0, &d));
    FNN_TRY(row_forward("cumsum", true, out, NULL, x, d, 0, 0, 0));
    return record(&CUMSUM, out, x, false, NULL, d, 0, 0, 0);
}

/* logcumsumexp: y[.., r, ..] = log(e^x[.., 0, ..] + ... + e^x[.., r, ..]), a running logsumexp in double
 * (the forward's x and y saved: the gradient reads both) */
static int logcumsumexp_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    return row_backward(n, dout, din, &n->saved[0], &n->saved[1], NULL, 0, 0);
}
static const fnn_op_def LOGCUMSUMEXP = {.info = {.name = "logcumsumexp", .family = "reduction", .differentiable = 1},
    .backward = logcumsumexp_rule};
int fnn_logcumsumexp(fnn_tensor *out, const fnn_tensor *x, int dim) {
    FNN_TRY(fnn_check_input("logcumsumexp", x));
    int d = -1;
    if (!(x->ndim == 0 && (dim == 0 || dim == -1))) FNN_TRY(fnn_wrap_dim("logcumsumexp", x, dim, 0, &d));
    FNN_TRY(row_forward("logcumsumexp", true, out, NULL, x, d, 0, 0, 0));
    return record(&LOGCUMSUMEXP, out, x, true, out, d, 0, 0, 0);
}

/* The CPU's rows, one per op as cuda/reduction.cu's. The forwards of sum ... log_softmax read x's
 * view in place (views = 1: no copy of a transposed input); cumsum takes contiguous lines. */
const fnn_red_row fnn_cpu_reduction_rows[] = {
    {"sum", sum_cpu, sum_grad_cpu, 1},
    {"mean", sum_cpu, sum_grad_cpu, 1},   /* k0 = 1/R */
    {"prod", prod_cpu, prod_grad_cpu, 1},
    {"var", var_cpu, var_grad_cpu, 1},
    {"std", var_cpu, var_grad_cpu, 1},    /* k1 = 1 */
    {"norm", norm_cpu, norm_grad_cpu, 1},
    {"logsumexp", lse_cpu, lse_grad_cpu, 1},
    {"max", max_cpu, extreme_grad_cpu, 1},
    {"min", min_cpu, extreme_grad_cpu, 1},
    {"argmax", max_cpu, NULL, 1},
    {"argmin", min_cpu, NULL, 1},
    {"softmax", softmax_cpu, softmax_grad_cpu, 1},
    {"log_softmax", log_softmax_cpu, log_softmax_grad_cpu, 1},
    {"cumsum", cumsum_cpu, cumsum_grad_cpu, 0},
    {"logcumsumexp", logcumsumexp_cpu, logcumsumexp_grad_cpu, 0},
    {NULL, NULL, NULL, 0},
};

const fnn_op_def *const fnn_ops_reduction[] = {
    &SUM, &MEAN, &PROD, &VAR, &STD, &NORM, &LOGSUMEXP, &MAX, &MIN, &ARGMAX, &ARGMIN, &SOFTMAX, &LOG_SOFTMAX, &CUMSUM,
    &LOGCUMSUMEXP, NULL,
};
