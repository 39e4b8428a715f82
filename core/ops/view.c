/* view.c: the views (reshape view transpose permute expand narrow select squeeze unsqueeze
 * flatten), the registry family "view": each is a new header over the same storage
 * (fnn_make_view) with its own shape, strides and offset, so it costs no copy and works on any
 * device; no backend kernel, so this family is not on rows (reshape of a layout no view can show
 * copies through the shared strided copy, fnn_materialize). Every op still records a node, so
 * gradients flow back through views. The rules are short because each undoes its forward with
 * another view or shape op: reshape <-> reshape, transpose <-> transpose, permute <-> inverse
 * permute, expand <-> sum_to_shape, narrow/select <-> pad with zeros (core/ops/shape.c).
 * Views take any dtype. */
#include "../internal.h"
#include <stdio.h>
#include <string.h>

/* ================= reshape, view, flatten ================= */

/* the requested shape with its one -1 filled in, or an error naming both shapes and counts */
static int infer_shape(const char *op, const fnn_tensor *x, int ndim, const int64_t *req, int64_t *shape) {
    FNN_TRY(fnn_check_ndim(op, ndim));
    int64_t numel = fnn_tensor_numel(x), known = 1;
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        if (req[i] == -1) {
            FNN_CHECK(infer < 0, FNN_STATUS_SHAPE, "%s: only one size may be -1, got %s", op,
                      fnn_shape_dims(ndim, req).s);
            infer = i;
        } else {
            FNN_CHECK(req[i] >= 0, FNN_STATUS_SHAPE, "%s: invalid size %lld in %s", op, (long long)req[i],
                      fnn_shape_dims(ndim, req).s);
            known *= req[i];
        }
        shape[i] = req[i];
    }
    if (infer >= 0) {
        FNN_CHECK(known != 0, FNN_STATUS_SHAPE,
                  "%s: cannot reshape %s (%lld elements) into %s: the -1 is ambiguous next to a size 0", op,
                  fnn_shape_of(x).s, (long long)numel, fnn_shape_dims(ndim, req).s);
        FNN_CHECK(numel % known == 0, FNN_STATUS_SHAPE,
                  "%s: cannot reshape %s (%lld elements) into %s (%lld is not a multiple of %lld)", op,
                  fnn_shape_of(x).s, (long long)numel, fnn_shape_dims(ndim, req).s, (long long)numel,
                  (long long)known);
        shape[infer] = numel / known;
    } else {
        FNN_CHECK(known == numel, FNN_STATUS_SHAPE, "%s: cannot reshape %s (%lld elements) into %s (%lld elements)",
                  op, fnn_shape_of(x).s, (long long)numel, fnn_shape_dims(ndim, req).s, (long long)known);
    }
    return FNN_STATUS_OK;
}

/* strides that show x's elements in row-major order as `shape`, when x's layout allows it
 * (PyTorch's computeStride: walk x's dims from the last, in chunks that are contiguous
 * among themselves, and lay the new dims over each chunk). false: a copy is needed. */
static bool view_strides(const fnn_tensor *x, int ndim, const int64_t *shape, int64_t *stride) {
    if (x->ndim == 0 || fnn_tensor_numel(x) == 0) {
        fnn_contiguous_strides(ndim, shape, stride);
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = x->stride[x->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        tensor_numel *= x->shape[d];
        if (d == 0 || (x->shape[d - 1] != 1 && x->stride[d - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                stride[view_d] = view_numel * chunk_base;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) { chunk_base = x->stride[d - 1]; tensor_numel = 1; view_numel = 1; }
        }
    }
    return view_d == -1;
}

/* dx = reshape(g, x's shape): the rule of every op that only re-labels elements */
static int reshape_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    return fnn_reshape(&din[0], g, n->in_ndim[0], n->in_shape[0]);
}

static const fnn_op_def RESHAPE = {.info = {.name = "reshape", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = reshape_rule};
static const fnn_op_def VIEW = {.info = {.name = "view", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = reshape_rule};
static const fnn_op_def FLATTEN = {.info = {.name = "flatten", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = reshape_rule};
static const fnn_op_def SQUEEZE = {.info = {.name = "squeeze", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = reshape_rule};
static const fnn_op_def UNSQUEEZE = {.info = {.name = "unsqueeze", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = reshape_rule};

/* x -> shape (already checked to hold numel(x) elements): a view when the strides allow,
 * else (allow_copy) a contiguous copy; the node is def's either way */
static int reshape_to(const fnn_op_def *def, fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape,
                      bool allow_copy) {
    const char *op = def->info.name;
    int64_t stride[FNN_MAX_DIMS];
    if (view_strides(x, ndim, shape, stride)) {
        FNN_TRY(fnn_make_view(out, x, ndim, shape, stride, x->offset));
    } else {
        if (!allow_copy) {
            int64_t xs[FNN_MAX_DIMS];
            memcpy(xs, x->stride, sizeof xs);
            return FNN_FAIL(FNN_STATUS_SHAPE,
                            "%s: cannot view %s (strides %s) as %s without a copy; use reshape, or contiguous first",
                            op, fnn_shape_of(x).s, fnn_shape_dims(x->ndim, xs).s, fnn_shape_dims(ndim, shape).s);
        }
        fnn_tensor dense;
        FNN_TRY(fnn_materialize(&dense, x));   /* on a device too (its strided_copy) */
        fnn_contiguous_strides(ndim, shape, stride);
        int rc = fnn_make_view(out, &dense, ndim, shape, stride, 0);
        fnn_tensor_clear(&dense);
        FNN_TRY(rc);
    }
    const fnn_tensor *ins[1] = {x};
    return fnn_record(def, out, 1, ins, NULL);
}

/* reshape: x [any] -> shape with one -1 inferred; a view when possible */
int fnn_reshape(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape) {
    FNN_TRY(fnn_check_input_any("reshape", x));
    int64_t s[FNN_MAX_DIMS];
    FNN_TRY(infer_shape("reshape", x, ndim, shape, s));
    return reshape_to(&RESHAPE, out, x, ndim, s, true);
}

/* view: as reshape, but never copies */
int fnn_view(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape) {
    FNN_TRY(fnn_check_input_any("view", x));
    int64_t s[FNN_MAX_DIMS];
    FNN_TRY(infer_shape("view", x, ndim, shape, s));
    return reshape_to(&VIEW, out, x, ndim, s, false);
}

/* flatten: [a, b, c, d] with start 1, end 2 -> [a, b*c, d]; a scalar becomes [1] */
int fnn_flatten(fnn_tensor *out, const fnn_tensor *x, int start_dim, int end_dim) {
    FNN_TRY(fnn_check_input_any("flatten", x));
    int64_t shape[FNN_MAX_DIMS];
    if (x->ndim == 0) {
        shape[0] = 1;
        return reshape_to(&FLATTEN, out, x, 1, shape, true);
    }
    int s, e;
    FNN_TRY(fnn_wrap_dim("flatten", x, start_dim, 0, &s));
    FNN_TRY(fnn_wrap_dim("flatten", x, end_dim, 0, &e));
    FNN_CHECK(s <= e, FNN_STATUS_ARG, "flatten: start dim %d comes after end dim %d for %s", s + 1, e + 1,
              fnn_shape_of(x).s);
    int nd = 0;
    for (int i = 0; i < s; i++) shape[nd++] = x->shape[i];
    shape[nd++] = fnn_numel_of(e - s + 1, x->shape + s);
    for (int i = e + 1; i < x->ndim; i++) shape[nd++] = x->shape[i];
    return reshape_to(&FLATTEN, out, x, nd, shape, true);
}

/* squeeze: drops size-1 dims (dim = -1: all of them; a given dim of another size stays, as PyTorch) */
int fnn_squeeze(fnn_tensor *out, const fnn_tensor *x, int dim) {
    FNN_TRY(fnn_check_input_any("squeeze", x));
    int d = -1;
    if (dim != -1) FNN_TRY(fnn_wrap_dim("squeeze", x, dim, 0, &d));
    int64_t shape[FNN_MAX_DIMS], stride[FNN_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        bool drop = x->shape[i] == 1 && (d < 0 || d == i);
        if (drop) continue;
        shape[nd] = x->shape[i];
        stride[nd++] = x->stride[i];
    }
    FNN_TRY(fnn_make_view(out, x, nd, shape, stride, x->offset));
    const fnn_tensor *ins[1] = {x};
    return fnn_record(&SQUEEZE, out, 1, ins, NULL);
}

/* unsqueeze: inserts a size-1 dim at dim (0..ndim) */
int fnn_unsqueeze(fnn_tensor *out, const fnn_tensor *x, int dim) {
    FNN_TRY(fnn_check_input_any("unsqueeze", x));
    int d;
    FNN_TRY(fnn_wrap_dim("unsqueeze", x, dim, 1, &d));
    FNN_TRY(fnn_check_ndim("unsqueeze", x->ndim + 1));
    int64_t shape[FNN_MAX_DIMS], stride[FNN_MAX_DIMS];
    for (int i = 0, j = 0; i <= x->ndim; i++) {
        if (i == d) {
            shape[i] = 1;
            /* any stride works for size 1; this one keeps a contiguous tensor contiguous */
            stride[i] = d < x->ndim ? x->shape[d] * x->stride[d] : 1;
            continue;
        }
        shape[i] = x->shape[j];
        stride[i] = x->stride[j++];
    }
    FNN_TRY(fnn_make_view(out, x, x->ndim + 1, shape, stride, x->offset));
    const fnn_tensor *ins[1] = {x};
    return fnn_record(&UNSQUEEZE, out, 1, ins, NULL);
}

/* ================= transpose, permute ================= */

/* the two dims transpose swapped (0-based, wrapped) */
typedef struct { int dim1, dim2; } transpose_attrs;

/* dx = transpose(g, d1, d2): a swap is its own inverse */
static int transpose_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const transpose_attrs *a = FNN_ATTRS(n, transpose_attrs);
    return fnn_transpose(&din[0], g, a->dim1, a->dim2);
}
static const fnn_op_def TRANSPOSE = {.info = {.name = "transpose", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = transpose_rule};

/* transpose: swaps dims d1 and d2 (a view) */
int fnn_transpose(fnn_tensor *out, const fnn_tensor *x, int d1, int d2) {
    FNN_TRY(fnn_check_input_any("transpose", x));
    int a, b;
    FNN_TRY(fnn_wrap_dim("transpose", x, d1, 0, &a));
    FNN_TRY(fnn_wrap_dim("transpose", x, d2, 0, &b));
    int64_t shape[FNN_MAX_DIMS], stride[FNN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    memcpy(stride, x->stride, sizeof stride);
    shape[a] = x->shape[b]; shape[b] = x->shape[a];
    stride[a] = x->stride[b]; stride[b] = x->stride[a];
    FNN_TRY(fnn_make_view(out, x, x->ndim, shape, stride, x->offset));
    const fnn_tensor *ins[1] = {x};
    fnn_node *n;
    FNN_TRY(fnn_record(&TRANSPOSE, out, 1, ins, &n));
    if (n) *FNN_ATTRS(n, transpose_attrs) = (transpose_attrs){.dim1 = a, .dim2 = b};
    return FNN_STATUS_OK;
}

/* output dim i is input dim dims[i] (0-based, wrapped; the input's ndim entries) */
typedef struct { int dims[FNN_MAX_DIMS]; } permute_attrs;

/* dx = permute(g, inverse): output dim i came from input dim dims[i], so it goes back there */
static int permute_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const permute_attrs *a = FNN_ATTRS(n, permute_attrs);
    int inv[FNN_MAX_DIMS];
    for (int i = 0; i < n->in_ndim[0]; i++) inv[a->dims[i]] = i;
    return fnn_permute(&din[0], g, n->in_ndim[0], inv);
}
static const fnn_op_def PERMUTE = {.info = {.name = "permute", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = permute_rule};

/* permute: output dim i is input dim dims[i] (a view) */
int fnn_permute(fnn_tensor *out, const fnn_tensor *x, int ndim, const int *dims) {
    FNN_TRY(fnn_check_input_any("permute", x));
    FNN_CHECK(ndim == x->ndim, FNN_STATUS_ARG, "permute: %d dims given for %s, which has %d", ndim,
              fnn_shape_of(x).s, x->ndim);
    int d[FNN_MAX_DIMS];
    bool seen[FNN_MAX_DIMS] = {false};
    int64_t shape[FNN_MAX_DIMS], stride[FNN_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        FNN_TRY(fnn_wrap_dim("permute", x, dims[i], 0, &d[i]));
        FNN_CHECK(!seen[d[i]], FNN_STATUS_ARG, "permute: dim %d appears twice; dims must be a permutation of 1..%d for %s",
                  d[i] + 1, ndim, fnn_shape_of(x).s);
        seen[d[i]] = true;
        shape[i] = x->shape[d[i]];
        stride[i] = x->stride[d[i]];
    }
    FNN_TRY(fnn_make_view(out, x, ndim, shape, stride, x->offset));
    const fnn_tensor *ins[1] = {x};
    fnn_node *n;
    FNN_TRY(fnn_record(&PERMUTE, out, 1, ins, &n));
    if (n) for (int i = 0; i < ndim; i++) FNN_ATTRS(n, permute_attrs)->dims[i] = d[i];
    return FNN_STATUS_OK;
}

/* ================= expand ================= */

/* dx = g summed over the new leading dims and over the size-1 dims that were expanded */
static int expand_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    return fnn_sum_to_shape(&din[0], g, n->in_ndim[0], n->in_shape[0]);
}
static const fnn_op_def EXPAND = {.info = {.name = "expand", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = expand_rule};

/* expand: size-1 dims (and new leading dims) repeat with stride 0; -1 keeps a size */
int fnn_expand(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape) {
    FNN_TRY(fnn_check_input_any("expand", x));
    FNN_TRY(fnn_check_ndim("expand", ndim));
    FNN_CHECK(ndim >= x->ndim, FNN_STATUS_SHAPE, "expand: cannot expand %s to %s (fewer dims)", fnn_shape_of(x).s,
              fnn_shape_dims(ndim, shape).s);
    int lead = ndim - x->ndim;
    int64_t s[FNN_MAX_DIMS], st[FNN_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        if (i < lead) {
            FNN_CHECK(shape[i] >= 0, FNN_STATUS_SHAPE, "expand: cannot expand %s to %s (size %lld in new dim %d)",
                      fnn_shape_of(x).s, fnn_shape_dims(ndim, shape).s, (long long)shape[i], i + 1);
            s[i] = shape[i];
            st[i] = 0;
            continue;
        }
        int64_t have = x->shape[i - lead], want = shape[i] == -1 ? have : shape[i];
        FNN_CHECK(want == have || (have == 1 && want >= 0), FNN_STATUS_SHAPE,
                  "expand: cannot expand %s to %s (dim %d has size %lld; only size-1 dims expand)",
                  fnn_shape_of(x).s, fnn_shape_dims(ndim, shape).s, i + 1, (long long)have);
        s[i] = want;
        st[i] = want == have ? x->stride[i - lead] : 0;
    }
    FNN_TRY(fnn_make_view(out, x, ndim, s, st, x->offset));
    const fnn_tensor *ins[1] = {x};
    return fnn_record(&EXPAND, out, 1, ins, NULL);
}

/* ================= narrow, select ================= */

/* zeros of the input shape with g placed at [start, start + g.shape[dim]) along dim (a pad) */
static int embed_along(fnn_tensor *out, const fnn_tensor *g, int ndim, const int64_t *in_shape, int dim,
                       int64_t start) {
    int64_t pads[2 * FNN_MAX_DIMS] = {0};
    int pair = ndim - 1 - dim;   /* F.pad order: the last dim first */
    pads[2 * pair] = start;
    pads[2 * pair + 1] = in_shape[dim] - start - g->shape[dim];
    return fnn_pad(out, g, ndim - dim, pads, 0.0);
}

static int narrow_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_slice_attrs *a = FNN_ATTRS(n, fnn_slice_attrs);
    return embed_along(&din[0], g, n->in_ndim[0], n->in_shape[0], a->dim, a->start);
}
static const fnn_op_def NARROW = {.info = {.name = "narrow", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = narrow_rule,
    .embeds = FNN_EMBEDS_NARROW};

/* narrow: x [.., n, ..] -> [.., length, ..], elements start .. start+length-1 of dim (0-based) */
int fnn_narrow(fnn_tensor *out, const fnn_tensor *x, int dim, int64_t start, int64_t length) {
    FNN_TRY(fnn_check_input_any("narrow", x));
    int d;
    FNN_TRY(fnn_wrap_dim("narrow", x, dim, 0, &d));
    int64_t size = x->shape[d];
    FNN_CHECK(start >= 0 && length >= 0 && start <= size && length <= size - start, FNN_STATUS_ARG,
              "narrow: start %lld and length %lld out of range for dim %d of %s (positions 1..%lld)",
              (long long)start + 1, (long long)length, d + 1, fnn_shape_of(x).s, (long long)size);
    FNN_TRY(fnn_narrow_view(out, x, d, start, length));
    const fnn_tensor *ins[1] = {x};
    fnn_node *n;
    FNN_TRY(fnn_record(&NARROW, out, 1, ins, &n));
    if (n) *FNN_ATTRS(n, fnn_slice_attrs) = (fnn_slice_attrs){.dim = d, .start = start};
    return FNN_STATUS_OK;
}

/* dx = zeros with g placed at position index of dim */
static int select_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_slice_attrs *a = FNN_ATTRS(n, fnn_slice_attrs);
    int d = a->dim;
    fnn_tensor g1;
    FNN_TRY(fnn_unsqueeze(&g1, g, d));
    int rc = embed_along(&din[0], &g1, n->in_ndim[0], n->in_shape[0], d, a->start);
    fnn_tensor_clear(&g1);
    return rc;
}
static const fnn_op_def SELECT = {.info = {.name = "select", .family = "view", .differentiable = 1, .has_cuda = 1},
    .backward = select_rule,
    .embeds = FNN_EMBEDS_SELECT};

/* select: x [.., n, ..] -> [.., ..], position index of dim (0-based; negative counts from the end) */
int fnn_select(fnn_tensor *out, const fnn_tensor *x, int dim, int64_t index) {
    FNN_TRY(fnn_check_input_any("select", x));
    int d;
    FNN_TRY(fnn_wrap_dim("select", x, dim, 0, &d));
    int64_t size = x->shape[d], i = index < 0 ? index + size : index;
    FNN_CHECK(i >= 0 && i < size, FNN_STATUS_ARG, "select: index %lld out of range for dim %d of %s (positions 1..%lld)",
              (long long)(index >= 0 ? index + 1 : index), d + 1, fnn_shape_of(x).s, (long long)size);
    FNN_TRY(fnn_select_view(out, x, d, i));
    const fnn_tensor *ins[1] = {x};
    fnn_node *n;
    FNN_TRY(fnn_record(&SELECT, out, 1, ins, &n));
    if (n) *FNN_ATTRS(n, fnn_slice_attrs) = (fnn_slice_attrs){.dim = d, .start = i};
    return FNN_STATUS_OK;
}

/* the numbers a view node keeps, for fnn.onnx (fnn_node_attr; dims 0-based): transpose's "dim1" and
 * "dim2", permute's "dim0".."dim<n-1>" (output dim i is input dim "dim<i>"), narrow's and select's
 * "dim" and "start" */
int fnn_view_attr(const fnn_node *n, const char *name, double *value) {
    fnn_node *m = (fnn_node *)n;
    int i = -1;
    if (n->op == &TRANSPOSE && !strcmp(name, "dim1")) *value = FNN_ATTRS(m, transpose_attrs)->dim1;
    else if (n->op == &TRANSPOSE && !strcmp(name, "dim2")) *value = FNN_ATTRS(m, transpose_attrs)->dim2;
    else if (n->op == &PERMUTE && sscanf(name, "dim%d", &i) == 1 && i >= 0 && i < n->in_ndim[0])
        *value = FNN_ATTRS(m, permute_attrs)->dims[i];
    else if ((n->op == &NARROW || n->op == &SELECT) && !strcmp(name, "dim")) *value = FNN_ATTRS(m, fnn_slice_attrs)->dim;
    else if ((n->op == &NARROW || n->op == &SELECT) && !strcmp(name, "start"))
        *value = (double)FNN_ATTRS(m, fnn_slice_attrs)->start;
    else
        return FNN_FAIL(FNN_STATUS_ARG, "node_attr: %s has no '%s' (transpose: dim1, dim2; permute: dim0..; "
                        "narrow, select: dim, start)", n->op->info.name, name);
    return FNN_STATUS_OK;
}

const fnn_op_def *const fnn_ops_view[] = {
    &RESHAPE, &VIEW, &TRANSPOSE, &PERMUTE, &EXPAND, &NARROW, &SELECT, &SQUEEZE, &UNSQUEEZE, &FLATTEN, NULL,
};
