/* shape.c: the copying shape ops (contiguous cat stack repeat pad pad_mode tril triu), the family
 * "shape" on kernel rows (core/ops/shape.h): each entry point checks, shapes and allocates once, then
 * calls the row of its tensor's backend (the CPU's at the end of this file, cuda/shape.cu's there).
 * The views (reshape, transpose, narrow, ...) copy nothing and are the family "view" (view.c).
 * The rules undo each forward with another op: pad <-> pad with the negated widths, pad_mode <-> a
 * gather of g onto the places read, cat <-> narrow, stack <-> select, tril/triu <-> same mask,
 * contiguous <-> g itself; repeat sums the repeated blocks back with a kernel of its own.
 *
 * Every op takes any dtype (an int64 tensor of ids joins, repeats, pads and masks like a float one).
 * On a device the copies run in cuda/shape.cu (cat and stack as one strided copy per input into its
 * slab of the output, pad and repeat as gathers over the output, tril/triu as a masked copy,
 * repeat's backward as a sum over the tiles). */
#include "shape.h"
#include <math.h>
#include <string.h>

/* ================= helpers ================= */

/* the row of op (its registry name) in device's backend, or an error naming name (the op as its
 * caller knows it: pad_mode's errors say "pad") and the device */
static int row_of(const char *name, const char *op, int device, bool backward, const fnn_shape_row **row) {
    *row = fnn_shape_row_for(device, op);
    if (!*row || !(backward ? (*row)->backward : (*row)->forward)) return FNN_ROW_REFUSED(name, device, backward);
    return FNN_STATUS_OK;
}

typedef struct {
    char *dst;
    const char *src;
    const int64_t *ds, *ss, *shape;
    int ndim, esize;
} copy_args;

/* rows lo..hi-1 of copy_nd (a row: the last dim) */
static void copy_rows(void *ctx, int64_t lo, int64_t hi) {
    const copy_args *a = ctx;
    const int ndim = a->ndim;
    const int64_t *shape = a->shape, *ds = a->ds, *ss = a->ss;
    int64_t inner = shape[ndim - 1], di = ds[ndim - 1], si = ss[ndim - 1];
    for (int64_t r = lo; r < hi; r++) {
        int64_t rem = r, doff = 0, soff = 0;
        for (int d = ndim - 2; d >= 0; d--) {
            int64_t i = rem % shape[d];
            rem /= shape[d];
            doff += i * ds[d];
            soff += i * ss[d];
        }
        char *y = a->dst + doff * a->esize;
        const char *x = a->src + soff * a->esize;
        if (di == 1 && si == 1) memcpy(y, x, (size_t)a->esize * (size_t)inner);
        else if (a->esize == 8)
            for (int64_t i = 0; i < inner; i++) ((int64_t *)(void *)y)[i * di] = ((const int64_t *)(const void *)x)[i * si];
        else for (int64_t i = 0; i < inner; i++) ((float *)(void *)y)[i * di] = ((const float *)(const void *)x)[i * si];
    }
}

/* dst[i] = src[i] over shape, both strided (in elements of esize bytes: float32 or int64); rows of
 * the last dim run in parallel. shape [d0..dn-1], dst strides ds, src strides ss */
static void copy_nd(void *dst, const int64_t *ds, const void *src, const int64_t *ss, int ndim,
                    const int64_t *shape, int esize) {
    int64_t n = fnn_numel_of(ndim, shape);
    if (n == 0) return;
    if (ndim == 0) { memcpy(dst, src, (size_t)esize); return; }
    copy_args a = {dst, src, ds, ss, shape, ndim, esize};
    fnn_parallel_for(n / shape[ndim - 1], fnn_threads_for(n), copy_rows, &a);
}

/* pad, pad_mode and repeat's rows move 4- and 8-byte elements (float32, int64): a bfloat16 tensor is
 * refused by name here, where those rows would read and write it as floats past its end (the Lua
 * layer widens bf16 before calling them: precision.lua) */
static int check_not_bf16(const char *op, const fnn_tensor *x) {
    FNN_CHECK(x->dtype != FNN_DTYPE_BFLOAT16, FNN_STATUS_ARG,
              "%s: takes float32 or int64, got a bfloat16 tensor %s; convert it with :float() first", op,
              fnn_shape_of(x).s);
    return FNN_STATUS_OK;
}

/* ================= contiguous ================= */

/* the gradient passes through unchanged */
static int contiguous_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    (void)n;
    return fnn_tensor_ref(&din[0], g);
}
static const fnn_op_def CONTIGUOUS = {.info = {.name = "contiguous", .family = "shape", .differentiable = 1},
    .backward = contiguous_rule};

/* contiguous: x -> same values in row-major order; x itself (one more reference) when already so */
int fnn_contiguous(fnn_tensor *out, const fnn_tensor *x) {
    FNN_TRY(fnn_check_input_any("contiguous", x));
    if (fnn_tensor_is_contiguous(x)) return fnn_tensor_ref(out, x);
    const fnn_shape_row *row;
    FNN_TRY(row_of("contiguous", "contiguous", x->device, false, &row));
    FNN_TRY(fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, x->shape));
    const fnn_shape_args a = {.y = fnn_bytes(out), .x = fnn_bytes(x), .xstride = x->stride, .yshape = x->shape,
                              .ndim = x->ndim, .esize = fnn_elem_size(x)};
    int rc = row->forward(fnn_device_ordinal(x->device), &a);
    if (rc) { fnn_tensor_clear(out); return rc; }
    const fnn_tensor *ins[1] = {x};
    return fnn_record(&CONTIGUOUS, out, 1, ins, NULL);
}

/* ================= cat, stack ================= */

/* cat and stack: the dim the inputs were joined along (stack: the new one) */
typedef struct { int dim; } join_attrs;

/* dx_k = g narrowed to [offset_k, offset_k + size_k) of dim: each input gets its own slice back (a view;
 * backward rules record no node) */
static int cat_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    int d = FNN_ATTRS(n, join_attrs)->dim;
    int64_t off = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int64_t len = n->in_shape[k][d];
        if (n->next[k]) FNN_TRY(fnn_narrow_view(&din[k], g, d, off, len));
        off += len;
    }
    return FNN_STATUS_OK;
}
static const fnn_op_def CAT = {.info = {.name = "cat", .family = "shape", .differentiable = 1}, .backward = cat_rule};

/* cat: n tensors equal outside dim -> one with the sizes along dim added */
int fnn_cat(fnn_tensor *out, int n, const fnn_tensor *const *xs, int dim) {
    FNN_CHECK(n >= 1 && xs != NULL, FNN_STATUS_ARG, "cat: expected at least one tensor, got %d", n);
    for (int k = 0; k < n; k++) FNN_TRY(fnn_check_input_any("cat", xs[k]));
    const fnn_tensor *x0 = xs[0];
    int d;
    FNN_TRY(fnn_wrap_dim("cat", x0, dim, 0, &d));
    int64_t shape[FNN_MAX_DIMS];
    memcpy(shape, x0->shape, sizeof shape);
    shape[d] = 0;
    for (int k = 0; k < n; k++) {
        const fnn_tensor *x = xs[k];
        FNN_TRY(fnn_check_same_device("cat", x0, x));
        FNN_TRY(fnn_check_same_dtype("cat", x0, x));
        bool ok = x->ndim == x0->ndim;
        for (int i = 0; ok && i < x->ndim; i++) ok = i == d || x->shape[i] == x0->shape[i];
        FNN_CHECK(ok, FNN_STATUS_SHAPE, "cat: shapes %s (tensor 1) and %s (tensor %d) differ outside dim %d",
                  fnn_shape_of(x0).s, fnn_shape_of(x).s, k + 1, d + 1);
        shape[d] += x->shape[d];
    }
    const fnn_shape_row *row;
    FNN_TRY(row_of("cat", "cat", x0->device, false, &row));
    FNN_TRY(fnn_new_output_dtype(out, x0->device, x0->dtype, x0->ndim, shape));
    int64_t off = 0;
    int esize = fnn_elem_size(x0);
    fnn_shape_args a = {.ystride = out->stride, .ndim = x0->ndim, .esize = esize};
    for (int k = 0; k < n; k++) {   /* each input into its slab of the output */
        a.y = (char *)fnn_bytes(out) + off * out->stride[d] * esize;
        a.x = fnn_bytes(xs[k]);
        a.xstride = xs[k]->stride;
        a.yshape = xs[k]->shape;
        int rc = row->forward(fnn_device_ordinal(x0->device), &a);
        if (rc) { fnn_tensor_clear(out); return rc; }
        off += xs[k]->shape[d];
    }
    fnn_node *nd;
    FNN_TRY(fnn_record(&CAT, out, n, xs, &nd));
    if (nd) FNN_ATTRS(nd, join_attrs)->dim = d;
    return FNN_STATUS_OK;
}

/* dx_k = g at position k of dim (a view) */
static int stack_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    for (int k = 0; k < n->n_inputs; k++)
        if (n->next[k]) FNN_TRY(fnn_select_view(&din[k], g, FNN_ATTRS(n, join_attrs)->dim, k));
    return FNN_STATUS_OK;
}
static const fnn_op_def STACK = {.info = {.name = "stack", .family = "shape", .differentiable = 1},
    .backward = stack_rule};

/* stack: n tensors of one shape [s...] -> [.., n, ..] with the new dim at dim (0..ndim) */
int fnn_stack(fnn_tensor *out, int n, const fnn_tensor *const *xs, int dim) {
    FNN_CHECK(n >= 1 && xs != NULL, FNN_STATUS_ARG, "stack: expected at least one tensor, got %d", n);
    for (int k = 0; k < n; k++) FNN_TRY(fnn_check_input_any("stack", xs[k]));
    const fnn_tensor *x0 = xs[0];
    int d;
    FNN_TRY(fnn_wrap_dim("stack", x0, dim, 1, &d));
    FNN_TRY(fnn_check_ndim("stack", x0->ndim + 1));
    for (int k = 1; k < n; k++) {
        FNN_TRY(fnn_check_same_device("stack", x0, xs[k]));
        FNN_TRY(fnn_check_same_dtype("stack", x0, xs[k]));
        FNN_CHECK(fnn_same_shape(x0, xs[k]), FNN_STATUS_SHAPE, "stack: shapes %s (tensor 1) and %s (tensor %d) differ",
                  fnn_shape_of(x0).s, fnn_shape_of(xs[k]).s, k + 1);
    }
    const fnn_shape_row *row;
    FNN_TRY(row_of("stack", "stack", x0->device, false, &row));
    int64_t shape[FNN_MAX_DIMS];
    for (int i = 0, j = 0; i <= x0->ndim; i++) shape[i] = i == d ? n : x0->shape[j++];
    FNN_TRY(fnn_new_output_dtype(out, x0->device, x0->dtype, x0->ndim + 1, shape));
    int64_t ds[FNN_MAX_DIMS];   /* out's strides without the new dim */
    for (int i = 0, j = 0; i <= x0->ndim; i++) if (i != d) ds[j++] = out->stride[i];
    int esize = fnn_elem_size(x0);
    fnn_shape_args a = {.ystride = ds, .yshape = x0->shape, .ndim = x0->ndim, .esize = esize};
    for (int k = 0; k < n; k++) {   /* each input into its slab of the output */
        a.y = (char *)fnn_bytes(out) + k * out->stride[d] * esize;
        a.x = fnn_bytes(xs[k]);
        a.xstride = xs[k]->stride;
        int rc = row->forward(fnn_device_ordinal(x0->device), &a);
        if (rc) { fnn_tensor_clear(out); return rc; }
    }
    fnn_node *nd;
    FNN_TRY(fnn_record(&STACK, out, n, xs, &nd));
    if (nd) FNN_ATTRS(nd, join_attrs)->dim = d;
    return FNN_STATUS_OK;
}

/* ================= repeat ================= */

/* the input (xndim dims) seen with the output's ndim: size 1 and stride 0 in the new leading dims */
static void repeat_source(int xndim, int ndim, const int64_t *xshape, const int64_t *xstride, int64_t *s, int64_t *st) {
    int lead = ndim - xndim;
    for (int i = 0; i < ndim; i++) {
        s[i] = i < lead ? 1 : xshape[i - lead];
        st[i] = i < lead ? 0 : xstride[i - lead];
    }
}

/* y [r0*s0, r1*s1, ...] (contiguous) from x [s0, s1, ...]: y[i] = x[i mod s];
 * add = 1 runs it the other way, dx[i mod s] += g[i], with x the gradient buffer */
static void repeat_kernel(float *y, float *x, const int64_t *st, const int64_t *s, int ndim, const int64_t *shape,
                          bool add) {
    int64_t n = fnn_numel_of(ndim, shape);
    if (n == 0) return;
    if (ndim == 0) { if (add) x[0] += y[0]; else y[0] = x[0]; return; }
    int64_t inner = shape[ndim - 1], rows = n / inner, si = s[ndim - 1], sti = st[ndim - 1];
    int64_t idx[FNN_MAX_DIMS] = {0};
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = 0;
        for (int d = 0; d < ndim - 1; d++) off += (idx[d] % s[d]) * st[d];
        float *yr = y + r * inner, *xr = x + off;
        if (add) for (int64_t j = 0; j < inner; j++) xr[(j % si) * sti] += yr[j];
        else for (int64_t j = 0; j < inner; j++) yr[j] = xr[(j % si) * sti];
        for (int d = ndim - 2; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
    }
}

/* repeat of int64 through a view: x [s0, s1, ...] seen as [r0, s0, r1, s1, ...] with stride 0
 * along each r, copied in row-major order, is the tiled [r0*s0, r1*s1, ...] */
static int repeat_by_expand(const fnn_shape_args *a) {
    const int ndim = a->ndim;
    if (fnn_numel_of(ndim, a->yshape) == 0) return FNN_STATUS_OK;
    FNN_CHECK(2 * ndim <= FNN_MAX_DIMS, FNN_STATUS_SHAPE, "repeat: an int64 tensor repeats over at most %d dims, got %d",
              FNN_MAX_DIMS / 2, ndim);
    int64_t vs[FNN_MAX_DIMS], vst[FNN_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        vs[2 * i] = a->yshape[i] / a->xshape[i]; vst[2 * i] = 0;   /* the count (no size is 0 here) */
        vs[2 * i + 1] = a->xshape[i]; vst[2 * i + 1] = a->xstride[i];
    }
    fnn_strided_copy(a->y, a->x, 8, 2 * ndim, vs, vst);
    return FNN_STATUS_OK;
}

/* dx = sum of g over the repeated blocks: dx[i] += g[j] for each j with j mod s = i */
static int repeat_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_shape_row *row;
    FNN_TRY(row_of("repeat", "repeat", g->device, true, &row));
    fnn_tensor tmp;
    int rc;
    const float *gd = fnn_contiguous_data(g, &tmp, &rc);
    if (rc) return rc;
    int64_t s[FNN_MAX_DIMS], st[FNN_MAX_DIMS], cs[FNN_MAX_DIMS];
    fnn_contiguous_strides(n->in_ndim[0], n->in_shape[0], cs);
    repeat_source(n->in_ndim[0], g->ndim, n->in_shape[0], cs, s, st);
    rc = fnn_new_output(&din[0], g->device, n->in_ndim[0], n->in_shape[0]);
    if (!rc) {
        const fnn_shape_args a = {.y = fnn_data(&din[0]), .x = gd, .xstride = st, .yshape = g->shape, .xshape = s,
                                  .ndim = g->ndim, .esize = 4};
        if ((rc = row->backward(fnn_device_ordinal(g->device), &a))) fnn_tensor_clear(&din[0]);
    }
    fnn_tensor_clear(&tmp);
    return rc;
}
static const fnn_op_def REPEAT = {.info = {.name = "repeat", .family = "shape", .differentiable = 1},
    .backward = repeat_rule};

/* repeat (Torch semantics): x [s...] tiled repeats[i] times along each dim -> [r0*s0, ...];
 * more counts than dims add leading dims */
int fnn_repeat(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *repeats) {
    FNN_TRY(fnn_check_input_any("repeat", x));
    FNN_TRY(check_not_bf16("repeat", x));
    FNN_TRY(fnn_check_ndim("repeat", ndim));
    FNN_CHECK(ndim >= x->ndim, FNN_STATUS_ARG, "repeat: %d repeat counts for %s; need at least %d (one per dim)",
              ndim, fnn_shape_of(x).s, x->ndim);
    int64_t s[FNN_MAX_DIMS], st[FNN_MAX_DIMS], shape[FNN_MAX_DIMS];
    repeat_source(x->ndim, ndim, x->shape, x->stride, s, st);
    for (int i = 0; i < ndim; i++) {
        FNN_CHECK(repeats[i] >= 0, FNN_STATUS_ARG, "repeat: count %lld for dim %d of %s must be >= 0",
                  (long long)repeats[i], i + 1, fnn_shape_of(x).s);
        shape[i] = repeats[i] * s[i];
    }
    const fnn_shape_row *row;
    FNN_TRY(row_of("repeat", "repeat", x->device, false, &row));
    FNN_TRY(fnn_new_output_dtype(out, x->device, x->dtype, ndim, shape));
    const fnn_shape_args a = {.y = fnn_bytes(out), .x = fnn_bytes(x), .xstride = st, .yshape = shape, .xshape = s,
                              .ndim = ndim, .esize = fnn_elem_size(x)};
    int rc = row->forward(fnn_device_ordinal(x->device), &a);
    if (rc) { fnn_tensor_clear(out); return rc; }
    if (fnn_is_int64(x)) return FNN_STATUS_OK;   /* ids get no gradient */
    const fnn_tensor *ins[1] = {x};
    return fnn_record(&REPEAT, out, 1, ins, NULL);
}

/* ================= pad ================= */

/* pad and pad_mode: npairs, the mode (pad: FNN_PAD_CONSTANT) and, in F.pad order (pair i is dim
 * ndim-1-i), the width before each padded dim. The width after is not kept (with npairs = 8, 16
 * widths would not fit the node's attribute area): pad's rule takes it from the shapes, the output
 * having before + n + after places where the input had n; pad_mode's rule does not need it. */
typedef struct { int64_t before[FNN_MAX_DIMS]; int npairs, mode; } pad_attrs;

/* dx = pad(g, -pads): padding is cropped back off and cropping is filled back with zeros */
static int pad_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const pad_attrs *a = FNN_ATTRS(n, pad_attrs);
    int64_t neg[2 * FNN_MAX_DIMS];
    for (int i = 0; i < a->npairs; i++) {
        const int d = n->in_ndim[0] - 1 - i;
        neg[2 * i] = -a->before[i];
        neg[2 * i + 1] = -(n->out_shape[d] - n->in_shape[0][d] - a->before[i]);
    }
    return fnn_pad(&din[0], g, a->npairs, neg, 0.0);
}
static const fnn_op_def PAD = {.info = {.name = "pad", .family = "shape", .differentiable = 1}, .backward = pad_rule};

/* pad: x [.., n] -> [.., before + n + after] for each of the last npairs dims (last dim first,
 * F.pad order), new places filled with value; negative widths crop */
int fnn_pad(fnn_tensor *out, const fnn_tensor *x, int npairs, const int64_t *pads, double value) {
    FNN_TRY(fnn_check_input_any("pad", x));
    FNN_TRY(check_not_bf16("pad", x));
    FNN_CHECK(npairs >= 0 && npairs <= x->ndim, FNN_STATUS_ARG, "pad: %d (before, after) pairs for %s, which has %d dims",
              npairs, fnn_shape_of(x).s, x->ndim);
    int64_t shape[FNN_MAX_DIMS], before[FNN_MAX_DIMS] = {0};
    memcpy(shape, x->shape, sizeof shape);
    for (int i = 0; i < npairs; i++) {
        int d = x->ndim - 1 - i;
        int64_t b = pads[2 * i], after = pads[2 * i + 1];
        shape[d] = x->shape[d] + b + after;
        FNN_CHECK(shape[d] >= 0, FNN_STATUS_ARG, "pad: padding (%lld, %lld) leaves dim %d of %s with size %lld",
                  (long long)b, (long long)after, d + 1, fnn_shape_of(x).s, (long long)shape[d]);
        before[d] = b;
    }
    const fnn_shape_row *row;
    FNN_TRY(row_of("pad", "pad", x->device, false, &row));
    FNN_CHECK(!fnn_is_int64(x) || (value == floor(value) && fabs(value) < 9223372036854775808.0), FNN_STATUS_ARG,
              "pad: an int64 tensor %s pads with whole numbers, got %g", fnn_shape_of(x).s, value);
    FNN_TRY(fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, shape));
    const fnn_shape_args a = {.y = fnn_bytes(out), .x = fnn_bytes(x), .xstride = x->stride, .yshape = shape,
                              .xshape = x->shape, .before = before, .ndim = x->ndim, .esize = fnn_elem_size(x),
                              .value = value};
    int rc = row->forward(fnn_device_ordinal(x->device), &a);
    if (rc) { fnn_tensor_clear(out); return rc; }
    const fnn_tensor *ins[1] = {x};
    fnn_node *nd;
    FNN_TRY(fnn_record(&PAD, out, 1, ins, &nd));
    if (nd) {
        pad_attrs *a = FNN_ATTRS(nd, pad_attrs);
        a->npairs = npairs;
        a->mode = FNN_PAD_CONSTANT;
        for (int i = 0; i < npairs; i++) a->before[i] = pads[2 * i];
    }
    return FNN_STATUS_OK;
}

/* ================= pad_mode: reflect, replicate, circular ================= */

static const char *const pad_kind_name[] = {"constant", "reflect", "replicate", "circular"};

/* the place of x (along a dim of size n, before >= 0 added in front) that output place j reads:
 * reflect mirrors about the edge element, replicate repeats it, circular wraps. cuda/shape.cu's
 * pad_src is the same expression. */
static int64_t pad_src(int mode, int64_t j, int64_t n, int64_t before) {
    int64_t p = j - before;
    if (p < 0) return mode == FNN_PAD_REFLECT ? -p : mode == FNN_PAD_REPLICATE ? 0 : p + n;
    if (p >= n) return mode == FNN_PAD_REFLECT ? 2 * n - 2 - p : mode == FNN_PAD_REPLICATE ? n - 1 : p - n;
    return p;
}

/* the output places j (along a dim of output size y) that read x place q, as up to 3 ranges
 * [lo, hi) in ascending j: the left border, the place itself, the right border. Returns the count.
 * cuda/shape.cu's pad_reads is the same. */
static int pad_reads(int mode, int64_t q, int64_t n, int64_t before, int64_t y, int64_t *lo, int64_t *hi) {
    int k = 0;
    const int64_t after = y - before - n;
    if (mode == FNN_PAD_REFLECT && q >= 1 && q <= before) { lo[k] = before - q; hi[k++] = before - q + 1; }
    if (mode == FNN_PAD_REPLICATE && q == 0 && before > 0) { lo[k] = 0; hi[k++] = before; }
    if (mode == FNN_PAD_CIRCULAR && q >= n - before) { lo[k] = q + before - n; hi[k++] = q + before - n + 1; }
    lo[k] = q + before; hi[k++] = q + before + 1;
    if (mode == FNN_PAD_REFLECT && n - 2 - q >= 0 && n - 2 - q < after) { lo[k] = before + n + (n - 2 - q); hi[k] = lo[k] + 1; k++; }
    if (mode == FNN_PAD_REPLICATE && q == n - 1 && after > 0) { lo[k] = before + n; hi[k++] = y; }
    if (mode == FNN_PAD_CIRCULAR && q < after) { lo[k] = before + n + q; hi[k] = lo[k] + 1; k++; }
    return k;
}

/* y places lo..hi-1 (contiguous, row-major) from x through its strides */
static void pad_mode_rows(void *ctx, int64_t lo, int64_t hi) {
    const fnn_shape_args *a = ctx;
    for (int64_t i = lo; i < hi; i++) {
        int64_t rem = i, off = 0;
        for (int d = a->ndim - 1; d >= 0; d--) {
            off += pad_src(a->mode, rem % a->yshape[d], a->xshape[d], a->before[d]) * a->xstride[d];
            rem /= a->yshape[d];
        }
        if (a->esize == 8) ((int64_t *)a->y)[i] = ((const int64_t *)a->x)[off];
        else ((float *)a->y)[i] = ((const float *)a->x)[off];
    }
}

/* dx places lo..hi-1 (contiguous x shape): the sum of g (contiguous y shape) over the places that
 * read each one, visited in g's row-major order */
static void pad_mode_grad_rows(void *ctx, int64_t lo, int64_t hi) {
    const fnn_shape_args *a = ctx;
    const int nd = a->ndim;
    const float *g = a->x;
    int64_t gs[FNN_MAX_DIMS], rlo[FNN_MAX_DIMS][3], rhi[FNN_MAX_DIMS][3], j[FNN_MAX_DIMS];
    int cnt[FNN_MAX_DIMS], r[FNN_MAX_DIMS];
    fnn_contiguous_strides(nd, a->yshape, gs);
    for (int64_t i = lo; i < hi; i++) {
        int64_t rem = i;
        for (int d = nd - 1; d >= 0; d--) {
            cnt[d] = pad_reads(a->mode, rem % a->xshape[d], a->xshape[d], a->before[d], a->yshape[d], rlo[d], rhi[d]);
            rem /= a->xshape[d];
            r[d] = 0;
            j[d] = rlo[d][0];
        }
        float acc = 0.0f;
        for (;;) {   /* an odometer over each dim's ranges, the last dim fastest */
            int64_t off = 0;
            for (int d = 0; d < nd; d++) off += j[d] * gs[d];
            acc += g[off];
            int d = nd - 1;
            for (; d >= 0; d--) {
                if (++j[d] < rhi[d][r[d]]) break;
                if (++r[d] < cnt[d]) { j[d] = rlo[d][r[d]]; break; }
                r[d] = 0;
                j[d] = rlo[d][0];
            }
            if (d < 0) break;
        }
        ((float *)a->y)[i] = acc;
    }
}

/* dx: each x place gets the gradient of every output place that read it */
static int pad_mode_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const pad_attrs *at = FNN_ATTRS(n, pad_attrs);
    const int npairs = at->npairs, mode = at->mode, nd = n->in_ndim[0];
    int64_t before[FNN_MAX_DIMS] = {0};
    for (int i = 0; i < npairs; i++) before[nd - 1 - i] = at->before[i];
    const fnn_shape_row *row;
    FNN_TRY(row_of("pad", "pad_mode", g->device, true, &row));
    fnn_tensor tmp;
    int rc;
    const float *gd = fnn_contiguous_data(g, &tmp, &rc);
    if (rc) return rc;
    rc = fnn_new_output(&din[0], g->device, nd, n->in_shape[0]);
    if (!rc) {
        const fnn_shape_args a = {.y = fnn_data(&din[0]), .x = gd, .yshape = g->shape, .xshape = n->in_shape[0],
                                  .before = before, .ndim = nd, .esize = 4, .mode = mode};
        if ((rc = row->backward(fnn_device_ordinal(g->device), &a))) fnn_tensor_clear(&din[0]);
    }
    fnn_tensor_clear(&tmp);
    return rc;
}
static const fnn_op_def PAD_MODE = {.info = {.name = "pad_mode", .family = "shape", .differentiable = 1},
    .backward = pad_mode_rule};

/* pad_mode: x [.., n] -> [.., before + n + after] for each of the last npairs dims (F.pad order), the
 * new places read from x by mode (reflect, replicate, circular; constant: fnn_pad with zeros) */
int fnn_pad_mode(fnn_tensor *out, const fnn_tensor *x, int npairs, const int64_t *pads, int mode) {
    FNN_CHECK(mode >= FNN_PAD_CONSTANT && mode <= FNN_PAD_CIRCULAR, FNN_STATUS_ARG,
              "pad: mode %d is not one of constant (0), reflect (1), replicate (2), circular (3)", mode);
    if (mode == FNN_PAD_CONSTANT) return fnn_pad(out, x, npairs, pads, 0.0);
    const char *m = pad_kind_name[mode];
    FNN_TRY(fnn_check_input_any("pad", x));
    FNN_TRY(check_not_bf16("pad", x));
    FNN_CHECK(npairs >= 0 && npairs <= x->ndim, FNN_STATUS_ARG,
              "pad (%s): %d (before, after) pairs for %s, which has %d dims", m, npairs, fnn_shape_of(x).s, x->ndim);
    int64_t shape[FNN_MAX_DIMS], before[FNN_MAX_DIMS] = {0};
    memcpy(shape, x->shape, sizeof shape);
    for (int i = 0; i < npairs; i++) {
        const int d = x->ndim - 1 - i;
        const int64_t b = pads[2 * i], a = pads[2 * i + 1], n = x->shape[d];
        FNN_CHECK(b >= 0 && a >= 0, FNN_STATUS_ARG, "pad (%s): padding (%lld, %lld) for dim %d of %s: widths must be "
                  ">= 0 in this mode (only constant crops)", m, (long long)b, (long long)a, d + 1, fnn_shape_of(x).s);
        FNN_CHECK(mode != FNN_PAD_REFLECT || (b < n && a < n), FNN_STATUS_ARG, "pad (reflect): padding (%lld, %lld) "
                  "for dim %d of %s: each width must be smaller than the dim's size %lld", (long long)b, (long long)a,
                  d + 1, fnn_shape_of(x).s, (long long)n);
        FNN_CHECK(mode != FNN_PAD_CIRCULAR || (b <= n && a <= n), FNN_STATUS_ARG, "pad (circular): padding (%lld, %lld) "
                  "for dim %d of %s: each width must be at most the dim's size %lld (it wraps around once)",
                  (long long)b, (long long)a, d + 1, fnn_shape_of(x).s, (long long)n);
        FNN_CHECK(mode != FNN_PAD_REPLICATE || n > 0 || (b == 0 && a == 0), FNN_STATUS_ARG, "pad (replicate): padding "
                  "(%lld, %lld) for dim %d of %s: an empty dim has no edge to repeat", (long long)b, (long long)a, d + 1,
                  fnn_shape_of(x).s);
        shape[d] = n + b + a;
        before[d] = b;
    }
    const fnn_shape_row *row;
    FNN_TRY(row_of("pad", "pad_mode", x->device, false, &row));
    FNN_TRY(fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, shape));
    const fnn_shape_args a = {.y = fnn_bytes(out), .x = fnn_bytes(x), .xstride = x->stride, .yshape = shape,
                              .xshape = x->shape, .before = before, .ndim = x->ndim, .esize = fnn_elem_size(x),
                              .mode = mode};
    int rc = row->forward(fnn_device_ordinal(x->device), &a);
    if (rc) { fnn_tensor_clear(out); return rc; }
    if (fnn_is_int64(x)) return FNN_STATUS_OK;   /* ids get no gradient */
    const fnn_tensor *ins[1] = {x};
    fnn_node *nd;
    FNN_TRY(fnn_record(&PAD_MODE, out, 1, ins, &nd));
    if (nd) {
        pad_attrs *at = FNN_ATTRS(nd, pad_attrs);
        at->npairs = npairs;
        at->mode = mode;
        for (int i = 0; i < npairs; i++) at->before[i] = pads[2 * i];
    }
    return FNN_STATUS_OK;
}

/* ================= tril, triu ================= */

/* tril and triu: the diagonal k that bounds what is kept */
typedef struct { int64_t k; } tri_attrs;

/* y [..., r, c] = x where the (row, col) pair is kept, else 0 (the row of def's op:
 * tril keeps col - row <= k, triu keeps col - row >= k) */
static int tri(const fnn_op_def *def, fnn_tensor *out, const fnn_tensor *x, int64_t k) {
    const char *op = def->info.name;
    FNN_TRY(fnn_check_input_any(op, x));
    FNN_CHECK(x->ndim >= 2, FNN_STATUS_SHAPE, "%s: needs at least 2 dims, got %s", op, fnn_shape_of(x).s);
    const fnn_shape_row *row;
    FNN_TRY(row_of(op, op, x->device, false, &row));
    fnn_tensor tmp;
    int rc;
    const void *xd = fnn_contiguous_bytes(x, &tmp, &rc);
    if (rc) return rc;
    rc = fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, x->shape);
    if (!rc) {
        const fnn_shape_args a = {.y = fnn_bytes(out), .x = xd, .yshape = x->shape, .ndim = x->ndim,
                                  .esize = fnn_elem_size(x), .k = k};
        if ((rc = row->forward(fnn_device_ordinal(x->device), &a))) fnn_tensor_clear(out);
    }
    fnn_tensor_clear(&tmp);
    FNN_TRY(rc);
    const fnn_tensor *ins[1] = {x};
    fnn_node *nd;
    FNN_TRY(fnn_record(def, out, 1, ins, &nd));
    if (nd) FNN_ATTRS(nd, tri_attrs)->k = k;
    return FNN_STATUS_OK;
}

/* dx = the same mask applied to g */
static int tril_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return fnn_tril(&din[0], g, FNN_ATTRS(n, tri_attrs)->k); }
static int triu_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return fnn_triu(&din[0], g, FNN_ATTRS(n, tri_attrs)->k); }
static const fnn_op_def TRIL = {.info = {.name = "tril", .family = "shape", .differentiable = 1},
    .backward = tril_rule};
static const fnn_op_def TRIU = {.info = {.name = "triu", .family = "shape", .differentiable = 1},
    .backward = triu_rule};

int fnn_tril(fnn_tensor *out, const fnn_tensor *x, int64_t k) { return tri(&TRIL, out, x, k); }
int fnn_triu(fnn_tensor *out, const fnn_tensor *x, int64_t k) { return tri(&TRIU, out, x, k); }

/* ================= the CPU's rows (shape.h's fnn_shape_row; the CUDA rows: cuda/shape.cu) ================= */

/* cat, stack: y[p . ystride] = x[p . xstride], rows of the last dim in parallel */
static int cpu_copy_into(int ordinal, const fnn_shape_args *a) {
    (void)ordinal;
    copy_nd(a->y, a->ystride, a->x, a->xstride, a->ndim, a->yshape, a->esize);
    return FNN_STATUS_OK;
}

/* contiguous: the shared strided copy (tensor.c: tiles a transposed plane) */
static int cpu_contiguous(int ordinal, const fnn_shape_args *a) {
    (void)ordinal;
    fnn_strided_copy(a->y, a->x, a->esize, a->ndim, a->yshape, a->xstride);
    return FNN_STATUS_OK;
}

static int cpu_repeat(int ordinal, const fnn_shape_args *a) {
    (void)ordinal;
    if (a->esize == 8) return repeat_by_expand(a);
    repeat_kernel(a->y, (float *)a->x, a->xstride, a->xshape, a->ndim, a->yshape, false);
    return FNN_STATUS_OK;
}
/* dx zeroed, then g added onto it tile by tile in g's row-major order */
static int cpu_repeat_grad(int ordinal, const fnn_shape_args *a) {
    (void)ordinal;
    const int64_t n = fnn_numel_of(a->ndim, a->xshape);
    if (n > 0) memset(a->y, 0, (size_t)n * sizeof(float));
    repeat_kernel((float *)a->x, a->y, a->xstride, a->xshape, a->ndim, a->yshape, true);
    return FNN_STATUS_OK;
}

/* pad: the fill everywhere, then the part of x that survives a crop copied to where it lands */
static int cpu_pad(int ordinal, const fnn_shape_args *a) {
    (void)ordinal;
    const int nd = a->ndim, esize = a->esize;
    const int64_t n = fnn_numel_of(nd, a->yshape);
    if (esize == 8) { int64_t *y = a->y, v = (int64_t)a->value; for (int64_t i = 0; i < n; i++) y[i] = v; }
    else { float *y = a->y, v = (float)a->value; for (int64_t i = 0; i < n; i++) y[i] = v; }
    int64_t ys[FNN_MAX_DIMS], len[FNN_MAX_DIMS], soff = 0, doff = 0;
    fnn_contiguous_strides(nd, a->yshape, ys);
    for (int d = 0; d < nd; d++) {
        const int64_t before = a->before[d], after = a->yshape[d] - a->xshape[d] - before;
        const int64_t src_start = before < 0 ? -before : 0, dst_start = before > 0 ? before : 0;
        len[d] = a->xshape[d] - src_start - (after < 0 ? -after : 0);
        if (len[d] < 0) len[d] = 0;
        soff += src_start * a->xstride[d];
        doff += dst_start * ys[d];
    }
    copy_nd((char *)a->y + doff * esize, ys, (const char *)a->x + soff * esize, a->xstride, nd, len, esize);
    return FNN_STATUS_OK;
}

static int cpu_pad_mode(int ordinal, const fnn_shape_args *a) {
    (void)ordinal;
    const int64_t n = fnn_numel_of(a->ndim, a->yshape);
    if (n > 0) fnn_parallel_for(n, fnn_threads_for(n), pad_mode_rows, (void *)a);
    return FNN_STATUS_OK;
}
static int cpu_pad_mode_grad(int ordinal, const fnn_shape_args *a) {
    (void)ordinal;
    const int64_t n = fnn_numel_of(a->ndim, a->xshape);
    if (n > 0) fnn_parallel_for(n, fnn_threads_for(fnn_numel_of(a->ndim, a->yshape)), pad_mode_grad_rows, (void *)a);
    return FNN_STATUS_OK;
}

/* tril (upper false), triu (upper true) over contiguous x [batch, rows, cols] */
static int cpu_tri(const fnn_shape_args *a, bool upper) {
    const int64_t rows = a->yshape[a->ndim - 2], cols = a->yshape[a->ndim - 1], k = a->k;
    const int64_t batch = rows > 0 && cols > 0 ? fnn_numel_of(a->ndim, a->yshape) / (rows * cols) : 0;
    const bool i64 = a->esize == 8;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                int64_t at = (b * rows + i) * cols + j;
                bool keep = upper ? j - i >= k : j - i <= k;
                if (i64) ((int64_t *)a->y)[at] = keep ? ((const int64_t *)a->x)[at] : 0;
                else ((float *)a->y)[at] = keep ? ((const float *)a->x)[at] : 0.0f;
            }
    return FNN_STATUS_OK;
}
static int cpu_tril(int ordinal, const fnn_shape_args *a) { (void)ordinal; return cpu_tri(a, false); }
static int cpu_triu(int ordinal, const fnn_shape_args *a) { (void)ordinal; return cpu_tri(a, true); }

/* every op of the family; the backward rows only where the rule is a kernel (the others' rules are
 * other ops: narrow, select, pad, the same mask) */
const fnn_shape_row fnn_cpu_shape_rows[] = {
    {"contiguous", cpu_contiguous, NULL},
    {"cat", cpu_copy_into, NULL},
    {"stack", cpu_copy_into, NULL},
    {"repeat", cpu_repeat, cpu_repeat_grad},
    {"pad", cpu_pad, NULL},
    {"pad_mode", cpu_pad_mode, cpu_pad_mode_grad},
    {"tril", cpu_tril, NULL},
    {"triu", cpu_triu, NULL},
    {NULL, NULL, NULL},
};

/* the numbers a shape node keeps, for fnn.onnx (fnn_node_attr): cat's and stack's "dim" (0-based) */
int fnn_shape_attr(const fnn_node *n, const char *name, double *value) {
    if ((n->op == &CAT || n->op == &STACK) && !strcmp(name, "dim")) {
        *value = FNN_ATTRS((fnn_node *)n, join_attrs)->dim;
        return FNN_STATUS_OK;
    }
    return FNN_FAIL(FNN_STATUS_ARG, "node_attr: %s has no '%s' (cat, stack: dim)", n->op->info.name, name);
}

const fnn_op_def *const fnn_ops_shape[] = {
    &CONTIGUOUS, &CAT, &STACK, &REPEAT, &PAD, &PAD_MODE, &TRIL, &TRIU, NULL,
};
