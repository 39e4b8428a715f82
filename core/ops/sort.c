/* sort.c: ops that order values along one dim (sort topk).
 *
 * defines: fnn_sort, fnn_topk, fnn_ops_sort
 *
 * x is seen as independent lines along dim d (a 0-dim x is one line of one value).
 * Each line is ordered through one 64-bit key per element: the high 32 bits map
 * the float to an unsigned integer in the order we want (nan above +inf, -0.0
 * equal to 0.0, flipped for descending), the low 32 bits hold the element's
 * position. Keys are then distinct, so ascending key order is the stable order
 * (equal values keep their positions' order in both directions), whatever
 * algorithm sorts them: an insertion sort for short lines, else an LSD radix sort
 * on the high 32 bits (stable, and the keys start in position order). topk with a
 * small k keeps the k best keys in a heap instead and sorts only those; with
 * distinct keys that is exactly the first k of the full sort.
 *
 * values are float32 and differentiable; indices are int64, 1-based along dim,
 * and never carry a node. The gradient of both ops scatters g back to the saved
 * indices into zeros of x's shape. Both directions run through the rows of x's backend
 * (sort.h): the CPU's at the end of this file, cuda/sort.cu's on a device (the same keys, a
 * bitonic sort per line). */
#include "sort.h"
#include <math.h>
#include <string.h>

/* a sort element costs a few memory-bound adds (key, passes, write back) */
enum { SORT_COST = 8, SORT_INSERTION_MAX = 48 };
#define SORT_MAX_LINE ((int64_t)UINT32_MAX)

/* ================= keys ================= */

/* v -> an unsigned key whose order is the wanted order of the values */
static inline uint32_t sort_key(float v, bool descending) {
    uint32_t b, key;
    if (isnan(v)) key = UINT32_MAX;          /* every nan above +inf */
    else {
        if (v == 0.0f) v = 0.0f;             /* -0.0 equals 0.0 */
        memcpy(&b, &v, sizeof b);
        key = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    }
    return descending ? ~key : key;
}

/* a [n] ascending, for short lines */
static void insertion_sort_u64(uint64_t *a, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        uint64_t v = a[i];
        int64_t j = i - 1;
        while (j >= 0 && a[j] > v) { a[j + 1] = a[j]; j--; }
        a[j + 1] = v;
    }
}

/* a [n] ascending by the high 32 bits, stably (tmp [n] scratch); returns a or tmp, whichever
 * holds the result. Keys built in position order therefore come out fully ascending. */
static uint64_t *sort_u64(uint64_t *a, uint64_t *tmp, int64_t n) {
    if (n <= SORT_INSERTION_MAX) { insertion_sort_u64(a, n); return a; }
    uint32_t count[4][256];
    memset(count, 0, sizeof count);
    for (int64_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)(a[i] >> 32);
        count[0][k & 255]++; count[1][(k >> 8) & 255]++; count[2][(k >> 16) & 255]++; count[3][k >> 24]++;
    }
    for (int p = 0; p < 4; p++) {
        int shift = 32 + 8 * p;
        if (count[p][(a[0] >> shift) & 255] == (uint32_t)n) continue;   /* one digit for all: nothing moves */
        uint32_t sum = 0;
        for (int b = 0; b < 256; b++) { uint32_t c = count[p][b]; count[p][b] = sum; sum += c; }
        for (int64_t i = 0; i < n; i++) tmp[count[p][(a[i] >> shift) & 255]++] = a[i];
        uint64_t *t = a; a = tmp; tmp = t;
    }
    return a;
}

/* heap [k] as a max-heap: move heap[0] down to its place */
static void sift_down_u64(uint64_t *heap, int64_t k, int64_t at) {
    uint64_t v = heap[at];
    for (;;) {
        int64_t c = 2 * at + 1;
        if (c >= k) break;
        if (c + 1 < k && heap[c + 1] > heap[c]) c++;
        if (heap[c] <= v) break;
        heap[at] = heap[c];
        at = c;
    }
    heap[at] = v;
}

/* ================= forward ================= */

typedef struct {
    const float *x;                 /* x's first element, read through its strides */
    int ndim, d;
    const int64_t *shape, *stride;  /* x's */
    int64_t n, xs, m, inner;        /* line length and stride in x, kept length, output inner size */
    int64_t nlines, chunks;
    bool descending, heap;          /* heap: keep the m best of each line in a heap (m small) */
    float *y;                       /* values [outer, m, inner], contiguous */
    int64_t *idx;                   /* indices, the same */
    uint64_t *buf;                  /* chunks x per_chunk keys of scratch */
    int64_t per_chunk;
} sort_job;

/* element offset in x of the first element of line L (lines run row-major over the dims but d) */
static int64_t line_offset(const sort_job *j, int64_t L) {
    int64_t off = 0;
    for (int i = j->ndim - 1; i >= 0; i--) {
        if (i == j->d) continue;
        off += (L % j->shape[i]) * j->stride[i];
        L /= j->shape[i];
    }
    return off;
}

/* one line: x [n] (stride xs) -> y, idx [m] (stride inner), the first m in key order */
static void sort_line(const sort_job *j, uint64_t *a, const float *x, float *y, int64_t *idx) {
    int64_t n = j->n, m = j->m, xs = j->xs, inner = j->inner;
    const uint64_t *sorted;
    if (j->heap) {
        /* the m smallest keys: a max-heap of m, replaced at the top by anything smaller */
        for (int64_t r = 0; r < m; r++) a[r] = (uint64_t)sort_key(x[r * xs], j->descending) << 32 | (uint64_t)r;
        for (int64_t r = m / 2 - 1; r >= 0; r--) sift_down_u64(a, m, r);
        for (int64_t r = m; r < n; r++) {
            uint64_t key = (uint64_t)sort_key(x[r * xs], j->descending) << 32 | (uint64_t)r;
            if (key < a[0]) { a[0] = key; sift_down_u64(a, m, 0); }
        }
        /* heap sort: pop the largest to the end, so a [m] ends ascending */
        for (int64_t end = m - 1; end > 0; end--) {
            uint64_t top = a[0];
            a[0] = a[end];
            a[end] = top;
            sift_down_u64(a, end, 0);
        }
        sorted = a;
    } else {
        for (int64_t r = 0; r < n; r++) a[r] = (uint64_t)sort_key(x[r * xs], j->descending) << 32 | (uint64_t)r;
        sorted = sort_u64(a, a + n, n);
    }
    for (int64_t r = 0; r < m; r++) {
        int64_t pos = (int64_t)(sorted[r] & 0xffffffffu);
        y[r * inner] = x[pos * xs];
        idx[r * inner] = pos + 1;
    }
}

/* chunks lo..hi-1, each a contiguous run of lines with its own scratch */
static void sort_chunks(void *ctx, int64_t lo, int64_t hi) {
    const sort_job *j = ctx;
    for (int64_t c = lo; c < hi; c++) {
        uint64_t *a = j->buf + c * j->per_chunk;
        int64_t first = j->nlines * c / j->chunks, last = j->nlines * (c + 1) / j->chunks;
        for (int64_t L = first; L < last; L++) {
            int64_t o = L / j->inner, i = L % j->inner, out = o * j->m * j->inner + i;
            sort_line(j, a, j->x + line_offset(j, L), j->y + out, j->idx + out);
        }
    }
}

/* values, indices [.., m, ..] = the first m of each line of x along d in the wanted order */
static int sort_forward_cpu(sort_job *j) {
    int64_t total = j->nlines * j->n;
    if (j->nlines == 0 || j->m == 0) return FNN_STATUS_OK;
    int threads = fnn_threads_for(total * SORT_COST);
    j->chunks = threads < j->nlines ? threads : j->nlines;
    j->per_chunk = 2 * (j->heap ? j->m : j->n);
    int cpu = fnn_make_device(FNN_DEVICE_CPU, 0);
    int64_t bytes = j->chunks * j->per_chunk * (int64_t)sizeof(uint64_t);
    j->buf = fnn_alloc(cpu, bytes);
    if (!j->buf) return fnn_last_status();
    fnn_parallel_for(j->chunks, (int)j->chunks, sort_chunks, j);
    fnn_free(cpu, j->buf, bytes);
    return FNN_STATUS_OK;
}

/* ================= backward ================= */

typedef struct {
    float *dx;                       /* [outer, n, inner], contiguous, zeroed */
    const float *g;                  /* [outer, m, inner], contiguous */
    const int64_t *idx;              /* the same, 1-based positions along the line */
    int64_t n, m, inner;
    atomic_int bad;                  /* set when an index falls outside 1..n (a bug) */
} scatter_job;

static void scatter_lines(void *ctx, int64_t lo, int64_t hi) {
    scatter_job *j = ctx;
    for (int64_t L = lo; L < hi; L++) {
        int64_t o = L / j->inner, i = L % j->inner;
        float *dx = j->dx + o * j->n * j->inner + i;
        const float *g = j->g + o * j->m * j->inner + i;
        const int64_t *idx = j->idx + o * j->m * j->inner + i;
        for (int64_t r = 0; r < j->m; r++) {
            int64_t pos = idx[r * j->inner] - 1;
            if (pos < 0 || pos >= j->n) { atomic_store_explicit(&j->bad, 1, memory_order_relaxed); continue; }
            dx[pos * j->inner] += g[r * j->inner];
        }
    }
}

/* a sort node (sort, topk): the dim sorted along, -1 for a 0-dim x */
typedef struct { int dim; } sort_attrs;

/* dx = zeros of x's shape with g scattered back to the saved indices along dim, through the
 * backward of the op's row in g's backend.
 * saved[0] = indices (int64, contiguous, g's shape); sort_attrs */
static int sort_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const char *op = n->op->info.name;
    const fnn_sort_row *row = fnn_sort_row_for(g->device, op);
    if (!row || !row->backward) return FNN_ROW_REFUSED(op, g->device, true);
    int d = FNN_ATTRS(n, sort_attrs)->dim, xnd = n->in_ndim[0];
    const int64_t *xshape = n->in_shape[0];
    const fnn_tensor *index = &n->saved[0];
    FNN_ASSERT(index->dtype == FNN_DTYPE_INT64 && fnn_tensor_is_contiguous(index));
    FNN_ASSERT(fnn_tensor_numel(index) == fnn_tensor_numel(g));
    fnn_sort_args a = {.sel = fnn_data_i64(index), .O = 1, .n = 1, .I = 1, .m = fnn_tensor_numel(index)};
    if (d >= 0) {
        a.O = fnn_numel_of(d, xshape);
        a.I = fnn_numel_of(xnd - d - 1, xshape + d + 1);
        a.n = xshape[d];
        a.m = index->shape[d];
    }
    fnn_tensor gtmp;
    int rc;
    a.g = fnn_contiguous_data(g, &gtmp, &rc);
    if (rc) return rc;
    rc = fnn_new_output(&din[0], g->device, xnd, xshape);
    if (!rc) {
        a.y = fnn_data(&din[0]);
        if ((rc = row->backward(fnn_device_ordinal(g->device), &a))) fnn_tensor_clear(&din[0]);
    }
    fnn_tensor_clear(&gtmp);
    return rc;
}
static const fnn_op_def SORT = {.info = {.name = "sort", .family = "sort", .differentiable = 1}, .backward = sort_rule};
static const fnn_op_def TOPK = {.info = {.name = "topk", .family = "sort", .differentiable = 1}, .backward = sort_rule};

/* ================= entries ================= */

/* the dim of x to order along: 0-based or negative; a 0-dim x takes 0 or -1 (its one line) */
static int sort_dim(const char *op, const fnn_tensor *x, int dim, int *d) {
    if (x->ndim == 0) {
        FNN_CHECK(dim == 0 || dim == -1, FNN_STATUS_ARG, "%s: dim %d out of range for [] (a 0-dim tensor "
                  "takes dim 1 or -1)", op, dim >= 0 ? dim + 1 : dim);
        *d = -1;
        return FNN_STATUS_OK;
    }
    return fnn_wrap_dim(op, x, dim, 0, d);
}

/* the checks, outputs, kernel and node shared by sort (whole: every element of each line) and
 * topk (the first k). indices may be NULL: the caller does not want them */
static int sort_common(const fnn_op_def *def, fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x,
                       bool whole, int64_t k, int dim, bool descending) {
    const char *op = def->info.name;
    FNN_CHECK(values != NULL, FNN_STATUS_ARG, "%s: values header is NULL", op);
    fnn_tensor own;
    if (!indices) indices = &own;
    fnn_tensor_init(values);
    fnn_tensor_init(indices);
    FNN_TRY(fnn_check_input(op, x));
    int d;
    FNN_TRY(sort_dim(op, x, dim, &d));
    const fnn_sort_row *row = fnn_sort_row_for(x->device, op);
    if (!row || !row->forward) return FNN_ROW_REFUSED(op, x->device, false);
    int64_t n = d >= 0 ? x->shape[d] : 1, m = whole ? n : k;
    if (m < 0 || m > n) {
        if (d < 0) return FNN_FAIL(FNN_STATUS_ARG, "%s: k = %lld out of range for [] (0..1)", op, (long long)m);
        return FNN_FAIL(FNN_STATUS_ARG, "%s: k = %lld out of range for dim %d of %s (0..%lld)", op, (long long)m,
                        d + 1, fnn_shape_of(x).s, (long long)n);
    }
    FNN_CHECK(n <= SORT_MAX_LINE, FNN_STATUS_SHAPE, "%s: dim %d of %s has %lld elements, at most %lld supported",
              op, d + 1, fnn_shape_of(x).s, (long long)n, (long long)SORT_MAX_LINE);

    /* outputs: x's shape with m along d; a 0-dim x gives 0-dim results, or [0] for k = 0 */
    int ondim = x->ndim;
    int64_t oshape[FNN_MAX_DIMS];
    memcpy(oshape, x->shape, sizeof oshape);
    if (d >= 0) oshape[d] = m;
    else if (m == 0) { ondim = 1; oshape[0] = 0; }
    FNN_TRY(fnn_new_output(values, x->device, ondim, oshape));
    int rc = fnn_new_output_dtype(indices, x->device, FNN_DTYPE_INT64, ondim, oshape);
    if (rc) { fnn_tensor_clear(values); return rc; }

    fnn_sort_args a = {.y = fnn_data(values), .idx = fnn_data_i64(indices), .x = fnn_data(x), .ndim = x->ndim,
                       .d = d, .shape = x->shape, .stride = x->stride, .O = 1, .n = n, .I = 1, .m = m,
                       .descending = descending};
    if (d >= 0) {
        a.O = fnn_numel_of(d, x->shape);
        a.I = fnn_numel_of(x->ndim - d - 1, x->shape + d + 1);
    }
    rc = row->forward(fnn_device_ordinal(x->device), &a);

    const fnn_tensor *ins[1] = {x};
    if (!rc && fnn_needs_node(1, ins)) {
        fnn_node *nd = fnn_attach_node(values, def, 1, ins);
        if (!nd || fnn_save(nd, 0, indices) != FNN_STATUS_OK) rc = fnn_last_status();
        else FNN_ATTRS(nd, sort_attrs)->dim = d;
    }
    if (rc || indices == &own) fnn_tensor_clear(indices);
    if (rc) fnn_tensor_clear(values);
    return rc;
}

/* sort: x [s...] -> values, indices [s...] ordered along dim (ascending, or descending) */
int fnn_sort(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int dim, int descending) {
    return sort_common(&SORT, values, indices, x, true, 0, dim, descending != 0);
}

/* topk: x [.., n, ..] -> values, indices [.., k, ..], the k largest (smallest) along dim, best first */
int fnn_topk(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int64_t k, int dim, int largest) {
    return sort_common(&TOPK, values, indices, x, false, k, dim, largest != 0);
}

const fnn_op_def *const fnn_ops_sort[] = {&SORT, &TOPK, NULL};

/* ================= the CPU's rows (sort.h) ================= */

/* the lines of the view x, read in place: values, indices [O, m, I] */
static int cpu_sort_forward(int ordinal, const fnn_sort_args *a) {
    (void)ordinal;
    sort_job j = {.x = a->x, .ndim = a->ndim, .d = a->d, .shape = a->shape, .stride = a->stride, .n = a->n,
                  .xs = a->d >= 0 ? a->stride[a->d] : 0, .m = a->m, .inner = a->I, .nlines = a->O * a->I,
                  .descending = a->descending != 0, .y = a->y, .idx = a->idx};
    /* a heap pays when few are kept from a long line */
    j.heap = a->m <= a->n / 16;
    return sort_forward_cpu(&j);
}

/* dx [O, n, I] = zeros with g added at the saved positions */
static int cpu_sort_backward(int ordinal, const fnn_sort_args *a) {
    (void)ordinal;
    int64_t total = a->O * a->n * a->I;
    for (int64_t i = 0; i < total; i++) a->y[i] = 0.0f;
    scatter_job j = {.dx = a->y, .g = a->g, .idx = a->sel, .n = a->n, .m = a->m, .inner = a->I};
    atomic_init(&j.bad, 0);
    if (j.m > 0) {
        int64_t nlines = a->O * a->I;
        fnn_parallel_for(nlines, fnn_threads_for(nlines * j.m), scatter_lines, &j);
        if (atomic_load(&j.bad)) return FNN_FAIL(FNN_STATUS_INTERNAL, "sort: internal error: saved index outside the "
                                                 "line (please report)");
    }
    return FNN_STATUS_OK;
}

const fnn_sort_row fnn_cpu_sort_rows[] = {
    {"sort", cpu_sort_forward, cpu_sort_backward},
    {"topk", cpu_sort_forward, cpu_sort_backward},
    {NULL, NULL, NULL},
};
