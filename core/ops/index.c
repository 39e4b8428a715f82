/* index.c: ops driven by index tensors (index_select gather scatter_add) and
 * by a mask (masked_fill).
 *
 * Index tensors hold 1-based ids, as Lua users see them: int64, or float32
 * holding whole numbers (exact only up to 2^24). The kernels read each one
 * through fnn_index_at, which checks it is a whole number inside 1..size and
 * names the 1-based value, the range, the dim and the shape. index_select and
 * gather copy elements of any dtype (an int64 x is gathered exactly);
 * scatter_add and masked_fill are float32. Index and mask tensors are never
 * differentiated: nodes take edges only from the data inputs, and keep the
 * index or mask as a saved tensor for the rule. The kernels run through the rows
 * of the tensor's backend (index.h): the CPU's at the end of this file, cuda/index.cu's
 * on a device (int64 ids only, read there: a bad id gives nan or adds nothing). */
#include "index.h"
#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct {
    char *y;
    const char *x;
    int64_t stride;
    size_t row;
    const int64_t *ids;
    int64_t base;
    bool stream;   /* rows of 64 bytes and up, y and row 16-byte aligned: non-temporal stores (copy_stream) */
} gather_ctx;

/* n bytes from src to dst (16-byte aligned) with non-temporal stores: no read of dst's lines before they
 * are written, and no eviction of what the cache holds for them (a loader's fresh batch: a shuffled
 * Fashion-MNIST epoch ~25% faster) */
static void copy_stream(char *restrict dst, const char *restrict src, size_t n) {
#ifdef __SSE2__
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i)), b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32)), d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    memcpy(dst + i, src + i, n - i);
#else
    memcpy(dst, src, n);
#endif
}

/* rows of a fixed small size: a load and a store each, no call (a loader's labels: 4-byte rows) */
#define GATHER_SMALL(T)                                                                  \
    for (int64_t j = lo; j < hi; j++) {                                                  \
        T v;                                                                             \
        memcpy(&v, x + (ids[j] - base) * stride, sizeof v);                              \
        memcpy(y + (size_t)j * sizeof v, &v, sizeof v);                                  \
    }
/* rows lo..hi-1 of a gather */
static void gather_range(void *ctx, int64_t lo, int64_t hi) {
    /* the fields in locals: the copies below cannot then be taken to overwrite them */
    const gather_ctx *c = ctx;
    char *y = c->y;
    const char *x = c->x;
    const int64_t stride = c->stride, base = c->base, *ids = c->ids;
    const size_t row = c->row;
    switch (row) {
    case 1: GATHER_SMALL(uint8_t) return;
    case 2: GATHER_SMALL(uint16_t) return;
    case 4: GATHER_SMALL(uint32_t) return;
    case 8: GATHER_SMALL(uint64_t) return;
    default: break;
    }
    for (int64_t j = lo; j < hi; j++) {
        /* a shuffled row is a cache miss that the hardware prefetcher cannot guess: ask for the
         * next row while this one is copied (a shuffled Fashion-MNIST epoch ~8% faster), its
         * first 4 KB: past that the hardware prefetcher follows the row. Not for rows of a
         * line or less: the prefetch would cost as much as the copy */
        if (j + 1 < hi && row > 64) {
            const char *next = x + (ids[j + 1] - base) * stride;
            for (size_t b = 0; b < row && b < 4096; b += 64) __builtin_prefetch(next + b);
        }
        if (c->stream) copy_stream(y + (size_t)j * row, x + (ids[j] - base) * stride, row);
        else memcpy(y + (size_t)j * row, x + (ids[j] - base) * stride, row);
    }
#ifdef __SSE2__
    if (c->stream) _mm_sfence();   /* this thread's streamed stores ordered before the team's join publishes y */
#endif
}
#undef GATHER_SMALL

/* y's m rows = x's rows ids[j] - base (the loader's take_rows and index_select): see internal.h.
 * Split over the threads from GATHER_SPLIT bytes: a random row is a run of cache misses whose
 * latency a second thread overlaps (a loader's batch of 128 Fashion-MNIST rows, 400 KB, is past it) */
enum { GATHER_SPLIT = 1 << 16 };
void fnn_gather_rows(char *y, const char *x, int64_t stride, size_t row, const int64_t *ids, int64_t m, int64_t base,
                     bool stream) {
    gather_ctx c = {y, x, stride, row, ids, base, stream && row >= 64 && row % 16 == 0 && (uintptr_t)y % 16 == 0};
    const int threads = (double)m * (double)row >= GATHER_SPLIT && !fnn_in_parallel() ? fnn_get_num_threads() : 1;
    fnn_parallel_for(m, threads, gather_range, &c);
}

/* ================= helpers ================= */

/* index tensors are read on x's device (a GPU x's rows read them there, cuda/index.cu), or on the CPU */
static int check_ids(const char *op, const fnn_tensor *x, const fnn_tensor *index) {
    if (x && index && index->device == x->device) return fnn_check_input_any(op, index);
    return fnn_check_index(op, "index", index);
}

/* an index op's node (index_select, gather, scatter_add, ...): the dim it indexes along */
typedef struct { int dim; } index_attrs;

/* attach def's node with edges from the data inputs only; on failure out is cleared */
static int record(const fnn_op_def *def, fnn_tensor *out, int n, const fnn_tensor *const *ins, const fnn_tensor *keep,
                  int dim) {
    if (!fnn_needs_node(n, ins)) return FNN_STATUS_OK;
    fnn_node *nd = fnn_attach_node(out, def, n, ins);
    if (!nd || fnn_save(nd, 0, keep) != FNN_STATUS_OK) { fnn_tensor_clear(out); return fnn_last_status(); }
    FNN_ATTRS(nd, index_attrs)->dim = dim;
    return FNN_STATUS_OK;
}

/* outer, size, inner of x around dim (x seen as [outer, size, inner]) */
static void split_at(const fnn_tensor *x, int d, int64_t *outer, int64_t *inner) {
    *outer = fnn_numel_of(d, x->shape);
    *inner = fnn_numel_of(x->ndim - d - 1, x->shape + d + 1);
}

/* ================= through the backends' rows (index.h's fnn_idx_row) ================= */

/* the row for op in device's backend, with the kernel the caller runs; NULL (an error naming the
 * device) when that backend has none */
static const fnn_idx_row *row_of(const char *op, int device, bool backward) {
    const fnn_idx_row *row = fnn_index_row_for(device, op);
    if (row && (backward ? row->backward : row->forward)) return row;
    FNN_ROW_REFUSED(op, device, backward);
    return NULL;
}

/* a->out through kernel f on device; a->out is cleared when it fails */
static int run(fnn_idx_fn f, int device, const fnn_idx_args *a) {
    int rc = f(fnn_device_ordinal(device), a);
    if (rc) fnn_tensor_clear(a->out);
    return rc;
}

/* ================= index_select ================= */

/* y [outer, m, inner] = x [outer, n, inner] at rows ids[0..m-1] (0-based), elements of esize bytes */
static void index_select_forward_cpu(char *y, const char *x, int esize, const int64_t *ids, int64_t outer,
                                     int64_t n, int64_t m, int64_t inner) {
    size_t row = (size_t)inner * (size_t)esize;
    for (int64_t o = 0; o < outer; o++)
        fnn_gather_rows(y + (size_t)(o * m) * row, x + (size_t)(o * n) * row, (int64_t)row, row, ids, m, 0, false);
}

/* dx [outer, n, inner] += g [outer, m, inner] at rows ids (repeated ids add up) */
static void index_select_backward_cpu(float *dx, const float *g, const int64_t *ids, int64_t outer, int64_t n,
                                      int64_t m, int64_t inner) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < m; j++) {
            float *dst = dx + (o * n + ids[j]) * inner;
            const float *src = g + (o * m + j) * inner;
            for (int64_t i = 0; i < inner; i++) dst[i] += src[i];
        }
}

/* the ids of a 1-D (or 0-D) index tensor as 0-based positions checked against dim d of x
 * (x may be a shape-only header), in a buffer from fnn_alloc: free it with free_ids */
static int64_t *load_ids(const char *op, const fnn_tensor *index, const fnn_tensor *x, int d, int *rc) {
    int64_t m = fnn_tensor_numel(index), st = index->ndim == 1 ? index->stride[0] : 0;
    int64_t *ids = fnn_alloc(fnn_make_device(FNN_DEVICE_CPU, 0), (m > 0 ? m : 1) * (int64_t)sizeof(int64_t));
    if (!ids) { *rc = fnn_last_status(); return NULL; }
    *rc = FNN_STATUS_OK;
    for (int64_t j = 0; j < m && !*rc; j++) *rc = fnn_index_at(op, index, j * st, x->shape[d], d, x, &ids[j]);
    return ids;
}
static void free_ids(int64_t *ids, const fnn_tensor *index) {
    int64_t m = fnn_tensor_numel(index);
    fnn_free(fnn_make_device(FNN_DEVICE_CPU, 0), ids, (m > 0 ? m : 1) * (int64_t)sizeof(int64_t));
}

/* x [s...] with only its shape, for rules that check ids against the input's shape */
static fnn_tensor shape_only(const fnn_node *n, int k) {
    fnn_tensor t;
    fnn_tensor_init(&t);
    t.ndim = n->in_ndim[k];
    memcpy(t.shape, n->in_shape[k], sizeof(int64_t) * (size_t)t.ndim);
    return t;
}

/* index_select, gather: dx = zeros of x's shape with g added back at the ids, through the backward
 * of the op's row in g's backend */
static int index_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const char *op = n->op->info.name;
    const fnn_idx_row *row = row_of(op, g->device, true);
    if (!row) return fnn_last_status();
    fnn_tensor xs = shape_only(n, 0);
    FNN_TRY(fnn_new_output(&din[0], g->device, xs.ndim, xs.shape));
    fnn_idx_args a = {.op = op, .out = &din[0], .g = g, .shape = &xs, .index = &n->saved[0],
                      .dim = FNN_ATTRS(n, index_attrs)->dim};
    return run(row->backward, g->device, &a);
}
static const fnn_op_def INDEX_SELECT = {.info = {.name = "index_select", .family = "index", .differentiable = 1},
    .backward = index_rule};

/* index_select: x [.., n, ..], index [m] of ids in 1..n -> [.., m, ..] */
int fnn_index_select(fnn_tensor *out, const fnn_tensor *x, int dim, const fnn_tensor *index) {
    const char *op = "index_select";
    FNN_TRY(fnn_check_input_any(op, x));
    FNN_TRY(check_ids(op, x, index));
    int d;
    FNN_TRY(fnn_wrap_dim(op, x, dim, 0, &d));
    FNN_CHECK(index->ndim <= 1, FNN_STATUS_SHAPE, "%s: index must be 1-D, got %s for input %s", op,
              fnn_shape_of(index).s, fnn_shape_of(x).s);
    FNN_TRY(fnn_check_same_device(op, x, index));
    const fnn_idx_row *row = row_of(op, x->device, false);
    if (!row) return fnn_last_status();
    int64_t shape[FNN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = fnn_tensor_numel(index);
    FNN_TRY(fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, shape));
    fnn_idx_args a = {.op = op, .out = out, .x = x, .shape = x, .index = index, .dim = d};
    FNN_TRY(run(row->forward, x->device, &a));
    const fnn_tensor *ins[1] = {x};
    return record(&INDEX_SELECT, out, 1, ins, index, d);
}

/* ================= gather, scatter_add ================= */

/* what index_walk does at each position */
typedef enum { GATHER_F32, GATHER_I64, SCATTER_ADD_F32 } walk_kind;

/* the shared loop of gather and scatter_add: for every position p of index [s...]
 * (row-major), with q = p but q[dim] = index[p] - 1:
 *   gather:      y[p] = x[q]              (y contiguous like index; float32 or int64 elements)
 *   scatter_add: x[q] += src[p]           (x the output, contiguous; float32) */
static int index_walk(const char *op, walk_kind kind, void *x, const int64_t *xs, const fnn_tensor *xshape,
                      const fnn_tensor *index, void *y, const int64_t *ys, int d) {
    int ndim = index->ndim;
    int64_t n = fnn_tensor_numel(index);
    if (n == 0) return FNN_STATUS_OK;
    int64_t idx[FNN_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) {
        int64_t ioff = 0, xoff = 0, yoff = 0;
        for (int i = 0; i < ndim; i++) {
            ioff += idx[i] * index->stride[i];
            yoff += idx[i] * ys[i];
            if (i != d) xoff += idx[i] * xs[i];
        }
        int64_t pos = 0;
        FNN_TRY(fnn_index_at(op, index, ioff, xshape->shape[d], d, xshape, &pos));
        xoff += pos * xs[d];
        switch (kind) {
        case GATHER_F32: ((float *)y)[yoff] = ((const float *)x)[xoff]; break;
        case GATHER_I64: ((int64_t *)y)[yoff] = ((const int64_t *)x)[xoff]; break;
        case SCATTER_ADD_F32: ((float *)x)[xoff] += ((const float *)y)[yoff]; break;
        }
        for (int i = ndim - 1; i >= 0; i--) { if (++idx[i] < index->shape[i]) break; idx[i] = 0; }
    }
    return FNN_STATUS_OK;
}

/* index [s...] against x (and src): same ndim; index fits in x outside dim (and in src everywhere) */
static int check_index_shape(const char *op, const fnn_tensor *x, const fnn_tensor *index, const fnn_tensor *src,
                             int d) {
    FNN_CHECK(index->ndim == x->ndim, FNN_STATUS_SHAPE, "%s: index %s must have as many dims as input %s", op,
              fnn_shape_of(index).s, fnn_shape_of(x).s);
    for (int i = 0; i < x->ndim; i++) {
        FNN_CHECK(i == d || index->shape[i] <= x->shape[i], FNN_STATUS_SHAPE,
                  "%s: index %s is larger than input %s in dim %d (only dim %d may differ)", op,
                  fnn_shape_of(index).s, fnn_shape_of(x).s, i + 1, d + 1);
    }
    if (src) {
        FNN_CHECK(src->ndim == x->ndim, FNN_STATUS_SHAPE, "%s: src %s must have as many dims as input %s", op,
                  fnn_shape_of(src).s, fnn_shape_of(x).s);
        for (int i = 0; i < x->ndim; i++)
            FNN_CHECK(index->shape[i] <= src->shape[i], FNN_STATUS_SHAPE,
                      "%s: index %s is larger than src %s in dim %d", op, fnn_shape_of(index).s, fnn_shape_of(src).s,
                      i + 1);
    }
    return FNN_STATUS_OK;
}

static const fnn_op_def GATHER = {.info = {.name = "gather", .family = "index", .differentiable = 1},
    .backward = index_rule};

/* gather: x [s...], index [t...] (same ndim, t <= s outside dim) -> [t...], y[p] = x[p with dim = index[p]] */
int fnn_gather(fnn_tensor *out, const fnn_tensor *x, int dim, const fnn_tensor *index) {
    const char *op = "gather";
    FNN_TRY(fnn_check_input_any(op, x));
    FNN_TRY(check_ids(op, x, index));
    int d;
    FNN_TRY(fnn_wrap_dim(op, x, dim, 0, &d));
    FNN_TRY(check_index_shape(op, x, index, NULL, d));
    FNN_TRY(fnn_check_same_device(op, x, index));
    const fnn_idx_row *row = row_of(op, x->device, false);
    if (!row) return fnn_last_status();
    FNN_TRY(fnn_new_output_dtype(out, x->device, x->dtype, index->ndim, index->shape));
    fnn_idx_args a = {.op = op, .out = out, .x = x, .shape = x, .index = index, .dim = d};
    FNN_TRY(run(row->forward, x->device, &a));
    const fnn_tensor *ins[1] = {x};
    return record(&GATHER, out, 1, ins, index, d);
}

/* dx = g; dsrc = gather(g, dim, index), zero-padded to src's shape where index is smaller */
static int scatter_add_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    int d = FNN_ATTRS(n, index_attrs)->dim;
    const fnn_tensor *index = &n->saved[0];
    if (n->next[0]) FNN_TRY(fnn_tensor_ref(&din[0], g));
    if (!n->next[1]) return FNN_STATUS_OK;
    fnn_tensor part;
    FNN_TRY(fnn_gather(&part, g, d, index));
    int nd = n->in_ndim[1];
    int64_t pads[2 * FNN_MAX_DIMS];
    bool same = true;
    for (int i = 0; i < nd; i++) {
        pads[2 * (nd - 1 - i)] = 0;
        pads[2 * (nd - 1 - i) + 1] = n->in_shape[1][i] - index->shape[i];
        same = same && index->shape[i] == n->in_shape[1][i];
    }
    if (same) { din[1] = part; return FNN_STATUS_OK; }
    int rc = fnn_pad(&din[1], &part, nd, pads, 0.0);
    fnn_tensor_clear(&part);
    return rc;
}
static const fnn_op_def SCATTER_ADD = {.info = {.name = "scatter_add", .family = "index", .differentiable = 1},
    .backward = scatter_add_rule};

/* scatter_add: x [s...], index [t...], src [u...] (t <= u, t <= s outside dim) -> [s...]:
 * a copy of x with src[p] added at p with dim = index[p] */
int fnn_scatter_add(fnn_tensor *out, const fnn_tensor *x, int dim, const fnn_tensor *index, const fnn_tensor *src) {
    const char *op = "scatter_add";
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(check_ids(op, x, index));
    FNN_TRY(fnn_check_input(op, src));
    int d;
    FNN_TRY(fnn_wrap_dim(op, x, dim, 0, &d));
    FNN_TRY(check_index_shape(op, x, index, src, d));
    FNN_TRY(fnn_check_same_device(op, x, index));
    FNN_TRY(fnn_check_same_device(op, x, src));
    const fnn_idx_row *row = row_of(op, x->device, false);
    if (!row) return fnn_last_status();
    FNN_TRY(fnn_materialize(out, x));
    fnn_idx_args a = {.op = op, .out = out, .x = x, .shape = x, .index = index, .src = src, .dim = d};
    FNN_TRY(run(row->forward, x->device, &a));
    const fnn_tensor *ins[2] = {x, src};
    return record(&SCATTER_ADD, out, 2, ins, index, d);
}

/* ================= masked_fill ================= */

/* y [s...] = mask != 0 ? value : x, mask broadcast to x's shape */
static void masked_fill_forward_cpu(float *y, const float *x, const int64_t *xs, const float *m, const int64_t *ms,
                                    int ndim, const int64_t *shape, float value) {
    int64_t n = fnn_numel_of(ndim, shape);
    int64_t idx[FNN_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) {
        int64_t xoff = 0, moff = 0;
        for (int i = 0; i < ndim; i++) { xoff += idx[i] * xs[i]; moff += idx[i] * ms[i]; }
        y[k] = m[moff] != 0.0f ? value : x[xoff];
        for (int i = ndim - 1; i >= 0; i--) { if (++idx[i] < shape[i]) break; idx[i] = 0; }
    }
}

/* dx = g with zeros where the mask is set (those places no longer depend on x) */
static int masked_fill_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    return fnn_masked_fill(&din[0], g, &n->saved[0], 0.0);
}
static const fnn_op_def MASKED_FILL = {.info = {.name = "masked_fill", .family = "index", .differentiable = 1},
    .backward = masked_fill_rule};

/* masked_fill: x [s...], mask broadcastable to [s...] -> [s...] with value where mask != 0 */
int fnn_masked_fill(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *mask, double value) {
    const char *op = "masked_fill";
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(fnn_check_input(op, mask));
    int nb;
    int64_t bshape[FNN_MAX_DIMS];
    FNN_TRY(fnn_broadcast_shapes(op, x->ndim, x->shape, mask->ndim, mask->shape, &nb, bshape));
    FNN_CHECK(nb == x->ndim && memcmp(bshape, x->shape, sizeof(int64_t) * (size_t)nb) == 0, FNN_STATUS_SHAPE,
              "%s: mask %s does not broadcast to input %s (it would make %s)", op, fnn_shape_of(mask).s,
              fnn_shape_of(x).s, fnn_shape_dims(nb, bshape).s);
    FNN_TRY(fnn_check_same_device(op, x, mask));
    const fnn_idx_row *row = row_of(op, x->device, false);
    if (!row) return fnn_last_status();
    int64_t ms[FNN_MAX_DIMS];
    fnn_broadcast_strides(mask, x->ndim, x->shape, ms);
    FNN_TRY(fnn_new_output(out, x->device, x->ndim, x->shape));
    fnn_idx_args a = {.op = op, .out = out, .x = x, .shape = x, .index = mask, .mstride = ms, .value = value};
    FNN_TRY(run(row->forward, x->device, &a));
    const fnn_tensor *ins[1] = {x};
    return record(&MASKED_FILL, out, 1, ins, mask, 0);
}

const fnn_op_def *const fnn_ops_index[] = {&INDEX_SELECT, &GATHER, &SCATTER_ADD, &MASKED_FILL, NULL};

/* ================= the CPU's rows (index.h) ================= */

/* index_select: the ids checked against dim of x, then whole rows of contiguous x copied */
static int cpu_index_select(int ordinal, const fnn_idx_args *a) {
    (void)ordinal;
    const fnn_tensor *x = a->x;
    int d = a->dim, rc;
    fnn_tensor xtmp;
    fnn_tensor_init(&xtmp);
    int64_t *ids = load_ids(a->op, a->index, x, d, &rc);
    if (!ids) return rc;
    const void *xd = rc ? NULL : fnn_contiguous_bytes(x, &xtmp, &rc);
    if (!rc) {
        int64_t outer, inner;
        split_at(x, d, &outer, &inner);
        index_select_forward_cpu(fnn_bytes(a->out), xd, fnn_elem_size(x), ids, outer, x->shape[d],
                                 fnn_tensor_numel(a->index), inner);
    }
    free_ids(ids, a->index);
    fnn_tensor_clear(&xtmp);
    return rc;
}

/* its backward: each row of g added back at its id */
static int cpu_index_select_backward(int ordinal, const fnn_idx_args *a) {
    (void)ordinal;
    const fnn_tensor *xs = a->shape;
    int d = a->dim, rc;
    fnn_tensor gtmp;
    fnn_tensor_init(&gtmp);
    int64_t *ids = load_ids(a->op, a->index, xs, d, &rc);
    if (!ids) return rc;
    const float *gd = rc ? NULL : fnn_contiguous_data(a->g, &gtmp, &rc);
    if (!rc) {
        float *dx = fnn_data(a->out);
        for (int64_t i = 0, n = fnn_tensor_numel(a->out); i < n; i++) dx[i] = 0.0f;
        int64_t outer, inner;
        split_at(xs, d, &outer, &inner);
        index_select_backward_cpu(dx, gd, ids, outer, xs->shape[d], fnn_tensor_numel(a->index), inner);
    }
    free_ids(ids, a->index);
    fnn_tensor_clear(&gtmp);
    return rc;
}

/* gather: x read through its strides at each id */
static int cpu_gather(int ordinal, const fnn_idx_args *a) {
    (void)ordinal;
    const fnn_tensor *x = a->x;
    return index_walk(a->op, fnn_is_int64(x) ? GATHER_I64 : GATHER_F32, (void *)fnn_bytes(x), x->stride, x,
                      a->index, fnn_bytes(a->out), a->out->stride, a->dim);
}

/* its backward: g added at the gathered positions */
static int cpu_gather_backward(int ordinal, const fnn_idx_args *a) {
    (void)ordinal;
    float *dx = fnn_data(a->out);
    for (int64_t i = 0, n = fnn_tensor_numel(a->out); i < n; i++) dx[i] = 0.0f;
    fnn_tensor gtmp;
    int rc;
    const float *gd = fnn_contiguous_data(a->g, &gtmp, &rc);
    if (!rc) {
        int64_t gs[FNN_MAX_DIMS];
        fnn_contiguous_strides(a->g->ndim, a->g->shape, gs);
        rc = index_walk(a->op, SCATTER_ADD_F32, dx, a->out->stride, a->shape, a->index, (float *)gd, gs, a->dim);
    }
    fnn_tensor_clear(&gtmp);
    return rc;
}

/* scatter_add: src (read through its strides) added into the copy of x */
static int cpu_scatter_add(int ordinal, const fnn_idx_args *a) {
    (void)ordinal;
    return index_walk(a->op, SCATTER_ADD_F32, fnn_data(a->out), a->out->stride, a->shape, a->index,
                      (float *)fnn_data(a->src), a->src->stride, a->dim);
}

/* masked_fill: x and the mask read through their strides */
static int cpu_masked_fill(int ordinal, const fnn_idx_args *a) {
    (void)ordinal;
    const fnn_tensor *x = a->x;
    masked_fill_forward_cpu(fnn_data(a->out), fnn_data(x), x->stride, fnn_data(a->index), a->mstride, x->ndim,
                            x->shape, (float)a->value);
    return FNN_STATUS_OK;
}

const fnn_idx_row fnn_cpu_index_rows[] = {
    {"index_select", cpu_index_select, cpu_index_select_backward},
    {"gather", cpu_gather, cpu_gather_backward},
    {"scatter_add", cpu_scatter_add, NULL},
    {"masked_fill", cpu_masked_fill, NULL},
    {NULL, NULL, NULL},
};
