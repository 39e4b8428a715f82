/* engine.c: backward. Orders the graph topologically from the root (Kahn's
 * algorithm over consumer counts), runs each rule once, accumulates fan-out,
 * checks gradients in anomaly mode, accumulates into Param leaves, and frees
 * each node's saved tensors as soon as its rule has run. */
#include "../internal.h"
#include "../ops/elementwise.h"
#include "../ops/elementwise_ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct { fnn_node **v; size_t len, cap; } node_list;

static int push(node_list *l, fnn_node *n) {
    if (l->len == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        fnn_node **v = realloc(l->v, cap * sizeof *v);
        FNN_CHECK(v != NULL, FNN_STATUS_OOM, "backward: out of memory ordering the graph");
        l->v = v; l->cap = cap;
    }
    l->v[l->len++] = n;
    return FNN_STATUS_OK;
}

static void add_into(fnn_tensor *dst, const float *src);

/* acc holds a buffer nobody else sees: contiguous CPU storage with one reference */
static bool owns_buffer(const fnn_tensor *acc) {
    return acc->ndim >= 0 && acc->storage && atomic_load(&acc->storage->refcount) == 1 &&
           fnn_tensor_is_contiguous(acc) && fnn_device_type_of(acc->device) == FNN_DEVICE_CPU;
}

/* out = a + b with no node, by the elementwise family's "map" row of their backend
 * (core/ops/elementwise.h): the kernel, checks and messages of fnn_add, without the op */
static int add_grads(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) {
    FNN_TRY(fnn_check_input("add", a));
    FNN_TRY(fnn_check_input("add", b));
    FNN_TRY(fnn_check_same_device("add", a, b));
    int ndim = a->ndim;
    int64_t shape[FNN_MAX_DIMS], s[3][FNN_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    if (!fnn_same_shape(a, b)) FNN_TRY(fnn_broadcast_shapes("add", a->ndim, a->shape, b->ndim, b->shape, &ndim, shape));
    static fnn_row_cache map_row_cache;   /* one lookup per device type (internal.h) */
    const fnn_map_row *row = fnn_row_cached(&map_row_cache, a->device, "elementwise", "map");
    if (!row) return FNN_ROW_REFUSED("add", a->device, false);
    fnn_broadcast_strides(a, ndim, shape, s[0]);
    fnn_broadcast_strides(b, ndim, shape, s[1]);
    memcpy(s[2], s[0], sizeof s[2]);   /* the unused third input repeats the first */
    fnn_map_args m = {.dtype = FNN_DTYPE_FLOAT32, .code = FNN_MAP_add, .nin = 2, .x = {fnn_data(a), fnn_data(b), fnn_data(a)},
                      .stride = &s[0][0], .ndim = ndim, .shape = shape};
    FNN_TRY(fnn_new_output(out, a->device, ndim, shape));
    m.y = fnn_data(out);
    int rc = row->run(fnn_device_ordinal(a->device), &m);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* accumulate g into *acc (g is consumed); in place when acc owns its buffer, so a weight
 * shared by 50 unrolled steps accumulates into one buffer instead of 50 fresh ones */
static int accumulate(fnn_tensor *acc, fnn_tensor *g) {
    if (acc->ndim < 0) { *acc = *g; fnn_tensor_init(g); return FNN_STATUS_OK; }
    if (owns_buffer(acc) && fnn_same_shape(acc, g) && g->device == acc->device) {
        fnn_tensor tmp;
        int rc;
        const float *src = fnn_contiguous_data(g, &tmp, &rc);
        if (!rc) add_into(acc, src);
        fnn_tensor_clear(&tmp);
        fnn_tensor_clear(g);
        return rc;
    }
    fnn_tensor sum;
    int rc = add_grads(&sum, acc, g);
    fnn_tensor_clear(g);
    if (rc) return rc;
    fnn_tensor_clear(acc);
    *acc = sum;
    return FNN_STATUS_OK;
}

static int check_finite(const fnn_node *n, const fnn_tensor *g, int k) {
    fnn_tensor tmp;
    int rc;
    const float *d = fnn_contiguous_data(g, &tmp, &rc);
    if (rc) return rc;
    int64_t count = fnn_tensor_numel(g);
    for (int64_t i = 0; i < count; i++) {
        if (!isfinite(d[i])) {
            fnn_set_error(FNN_STATUS_ARG, __FILE__, __LINE__,
                          "anomaly: %s produced %s at element %lld of %s in the gradient for input %d",
                          n->op->info.name, isnan(d[i]) ? "nan" : "inf", (long long)i + 1,
                          fnn_shape_of(g).s, k + 1);
            fnn_tensor_clear(&tmp);
            return FNN_STATUS_ARG;
        }
    }
    fnn_tensor_clear(&tmp);
    return FNN_STATUS_OK;
}

/* dst[i] += src[i] for i in [lo, hi): blocks over the pool (add_into's dense case) */
typedef struct { float *dst; const float *src; } add_flat_job;
static void add_flat_range(void *ctx, int64_t lo, int64_t hi) {
    const add_flat_job *j = ctx;
    float *d = j->dst;
    const float *s = j->src;
    for (int64_t i = lo; i < hi; i++) d[i] += s[i];
}

/* t (a CPU float32 tensor, maybe a strided view) += src (contiguous, t's shape). A contiguous t (an
 * accumulator the engine holds alone, a slice along the first dim) splits over the pool: the residual
 * stream's gradient, LayerNorm's dx added into the one the residual add passed on, is 2048 x 128 in
 * char_gpt */
static void add_into(fnn_tensor *t, const float *src) {
    const int ndim = t->ndim;
    const int64_t *shape = t->shape, *stride = t->stride;
    const int64_t n = fnn_numel_of(ndim, shape);
    float *dst = fnn_data(t);
    if (n == 0) return;
    if (fnn_tensor_is_contiguous(t)) {
        add_flat_job j = {dst, src};
        fnn_parallel_for(n, fnn_in_parallel() ? 1 : fnn_threads_for(n), add_flat_range, &j);
        return;
    }
    int64_t inner = shape[ndim - 1], is = stride[ndim - 1], idx[FNN_MAX_DIMS] = {0};
    for (int64_t done = 0; done < n; done += inner) {
        int64_t off = 0;
        for (int d = 0; d < ndim - 1; d++) off += idx[d] * stride[d];
        float *row = dst + off;
        const float *s = src + done;
        if (is == 1) for (int64_t i = 0; i < inner; i++) row[i] += s[i];
        else for (int64_t i = 0; i < inner; i++) row[i * is] += s[i];
        for (int d = ndim - 2; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
    }
}

/* ---- lazy slice accumulators ----
 * q, k, v = qkv:split(C, 3): each narrow's gradient lands in a slice of qkv's accumulator. Zero-filling
 * the whole accumulator for the first slice and adding every slice in wrote and read it twice over;
 * instead the buffer starts uninitialised, a slice that overlaps no earlier one is copied in, and the
 * parts no slice wrote are zeroed once, before anything else reads or adds to the accumulator (its node
 * is run, or a gradient of another kind arrives). A slice along another dim, or overlapping, ends it. */
enum { LAZY_MAX = 16, LAZY_RANGES = 8 };
typedef struct { fnn_node *node; int dim, n; int64_t lo[LAZY_RANGES], hi[LAZY_RANGES]; } lazy_acc;
typedef struct { lazy_acc v[LAZY_MAX]; int len; } lazy_set;

static int lazy_find(const lazy_set *l, const fnn_node *node) {
    for (int k = 0; k < l->len; k++) if (l->v[k].node == node) return k;
    return -1;
}

/* the contiguous accumulator acc seen as [outer, size, inner] around dim */
static void around(const fnn_tensor *acc, int dim, int64_t *outer, int64_t *size, int64_t *inner) {
    *outer = fnn_numel_of(dim, acc->shape);
    *size = acc->shape[dim];
    *inner = fnn_numel_of(acc->ndim - dim - 1, acc->shape + dim + 1);
}

/* positions lo..hi-1 of dim in acc: zeroed (src NULL) or copied from src ([outer, hi - lo, inner], contiguous),
 * blocks of outer over the pool (char_gpt's q, k, v gradients into qkv's: 2048 rows of 512 bytes each) */
typedef struct { float *y; const float *src; int64_t size, inner, lo, hi; } slab_job;
static void slab_rows(void *ctx, int64_t o0, int64_t o1) {
    const slab_job *j = ctx;
    const int64_t width = (j->hi - j->lo) * j->inner;
    for (int64_t o = o0; o < o1; o++) {
        float *dst = j->y + (o * j->size + j->lo) * j->inner;
        if (j->src) memcpy(dst, j->src + o * width, sizeof(float) * (size_t)width);
        else memset(dst, 0, sizeof(float) * (size_t)width);
    }
}
static void write_slab(fnn_tensor *acc, int dim, int64_t lo, int64_t hi, const float *src) {
    int64_t outer, size, inner;
    around(acc, dim, &outer, &size, &inner);
    slab_job j = {fnn_data(acc), src, size, inner, lo, hi};
    fnn_parallel_for(outer, fnn_threads_for(outer * (hi - lo) * inner), slab_rows, &j);
}

/* entry k's accumulator made whole (what no slice wrote is zeroed) and dropped from the set */
static void lazy_finish(lazy_set *l, int k) {
    lazy_acc *e = &l->v[k];
    fnn_tensor *acc = &e->node->grad;
    for (int i = 1; i < e->n; i++)   /* the ranges in order (at most LAZY_RANGES) */
        for (int j = i; j > 0 && e->lo[j - 1] > e->lo[j]; j--) {
            int64_t lo = e->lo[j], hi = e->hi[j];
            e->lo[j] = e->lo[j - 1]; e->hi[j] = e->hi[j - 1];
            e->lo[j - 1] = lo; e->hi[j - 1] = hi;
        }
    int64_t pos = 0;
    for (int i = 0; i < e->n; i++) {
        if (e->lo[i] > pos) write_slab(acc, e->dim, pos, e->lo[i], NULL);
        if (e->hi[i] > pos) pos = e->hi[i];
    }
    if (pos < acc->shape[e->dim]) write_slab(acc, e->dim, pos, acc->shape[e->dim], NULL);
    l->v[k] = l->v[--l->len];
}

/* node's accumulator, if lazy, made whole before it is read or added to */
static void lazy_settle(lazy_set *l, const fnn_node *node) {
    int k = lazy_find(l, node);
    if (k >= 0) lazy_finish(l, k);
}

/* the gradient of a narrow/select, added in place into the slice of its input's accumulator
 * (made unique and contiguous first), or copied there while the accumulator is lazy (above).
 * *done = false: not applicable, run the rule instead. */
static int embed_into(fnn_node *n, lazy_set *lazy, bool *done) {
    *done = false;
    fnn_node *nx = n->next[0];
    const fnn_tensor *g = &n->grad;
    if (!nx || fnn_device_type_of(g->device) != FNN_DEVICE_CPU ||
        fnn_numel_of(n->in_ndim[0], n->in_shape[0]) <= FNN_INLINE_FLOATS)
        return FNN_STATUS_OK;
    if (fnn_anomaly_enabled()) FNN_TRY(check_finite(n, g, 0));
    const fnn_slice_attrs *a = FNN_ATTRS(n, fnn_slice_attrs);
    int d = a->dim;
    int64_t lo = a->start, hi = lo + (n->op->embeds == FNN_EMBEDS_NARROW ? g->shape[d] : 1);
    fnn_tensor *acc = &nx->grad;
    int k = lazy_find(lazy, nx);
    if (k < 0 && acc->ndim < 0 && lazy->len < LAZY_MAX) {
        FNN_TRY(fnn_empty(acc, n->in_ndim[0], n->in_shape[0]));
        k = lazy->len++;
        lazy->v[k] = (lazy_acc){.node = nx, .dim = d};
    }
    if (k >= 0) {
        lazy_acc *e = &lazy->v[k];
        bool apart = e->dim == d && e->n < LAZY_RANGES;
        for (int i = 0; i < e->n && apart; i++) apart = hi <= e->lo[i] || lo >= e->hi[i];
        if (apart) {
            fnn_tensor tmp;
            int rc;
            const float *src = fnn_contiguous_data(g, &tmp, &rc);
            if (!rc) {
                write_slab(acc, d, lo, hi, src);
                e->lo[e->n] = lo; e->hi[e->n++] = hi;
                *done = true;
            }
            fnn_tensor_clear(&tmp);
            return rc;
        }
        lazy_finish(lazy, k);
    }
    if (!owns_buffer(acc)) {
        fnn_tensor fresh;
        if (acc->ndim < 0) FNN_TRY(fnn_zeros(&fresh, n->in_ndim[0], n->in_shape[0]));
        else FNN_TRY(fnn_materialize(&fresh, acc));
        fnn_tensor_clear(acc);
        *acc = fresh;
    }
    fnn_tensor view, tmp;
    if (n->op->embeds == FNN_EMBEDS_NARROW) FNN_TRY(fnn_narrow_view(&view, acc, d, a->start, g->shape[d]));
    else FNN_TRY(fnn_select_view(&view, acc, d, a->start));
    int rc;
    const float *src = fnn_contiguous_data(g, &tmp, &rc);
    if (!rc) add_into(&view, src);
    fnn_tensor_clear(&tmp);
    fnn_tensor_clear(&view);
    if (!rc) *done = true;
    return rc;
}

int fnn_backward(const fnn_tensor *root, const fnn_tensor *grad) {
    /* a bfloat16 root is fine: its gradient, like every bfloat16 tensor's, is float32 (ops/to_dtype.c) */
    if (root && !root->freed && root->dtype == FNN_DTYPE_BFLOAT16) FNN_TRY(fnn_check_input_any("backward", root));
    else FNN_TRY(fnn_check_input("backward", root));
    FNN_CHECK(root->node != NULL, FNN_STATUS_GRAPH,
              "backward: tensor %s has no graph (it was not computed from a Param, or under no_grad)",
              fnn_shape_of(root).s);
    if (grad) {
        FNN_TRY(fnn_check_input("backward", grad));
        FNN_CHECK(fnn_same_shape(root, grad), FNN_STATUS_SHAPE,
                  "backward: gradient %s does not match tensor %s", fnn_shape_of(grad).s, fnn_shape_of(root).s);
    } else {
        FNN_CHECK(fnn_tensor_numel(root) == 1, FNN_STATUS_SHAPE,
                  "backward: tensor %s is not a scalar; pass a gradient of the same shape (y:backward(grad))",
                  fnn_shape_of(root).s);
    }
    fnn_node *start = root->node;
    FNN_CHECK(!start->freed, FNN_STATUS_GRAPH,
              "backward: the graph of %s was already freed by an earlier backward; run the forward again",
              start->op->info.name);

    /* 1. find every node and count its consumers */
    node_list all = {0}, stack = {0}, ready = {0};
    lazy_set lazy = {.len = 0};
    int rc = FNN_STATUS_OK;
    if ((rc = push(&stack, start))) goto done;
    start->visited = 1;
    start->pending = 0;
    while (stack.len) {
        fnn_node *n = stack.v[--stack.len];
        if ((rc = push(&all, n))) goto done;
        if (n->freed && !n->is_leaf) {
            rc = FNN_FAIL(FNN_STATUS_GRAPH, "backward: part of the graph (%s) was already freed by an earlier "
                          "backward; run the forward again", n->op->info.name);
            goto done;
        }
        for (int i = 0; i < n->n_inputs; i++) {
            fnn_node *nx = n->next[i];
            if (!nx) continue;
            if (!nx->visited) { nx->visited = 1; nx->pending = 0; if ((rc = push(&stack, nx))) goto done; }
            nx->pending++;
        }
    }

    /* 2. seed the root's gradient */
    fnn_tensor seed;
    if (grad) rc = fnn_tensor_ref(&seed, grad);
    else rc = fnn_full_on(&seed, root->device, root->ndim, root->shape, 1.0, FNN_DTYPE_FLOAT32);   /* with the root */
    if (rc) goto done;
    if (seed.node) { fnn_node_release(seed.node); seed.node = NULL; }
    fnn_tensor_clear(&start->grad);
    start->grad = seed;

    /* 3. run rules in topological order */
    int was_enabled = fnn_grad_enabled();
    fnn_set_grad_enabled(0);
    if ((rc = push(&ready, start))) goto restore;
    while (ready.len) {
        fnn_node *n = ready.v[--ready.len];
        lazy_settle(&lazy, n);   /* every slice is in: what none wrote is zero */
        if (n->is_leaf) {
            if (!n->frozen && n->grad.ndim >= 0) {
                fnn_tensor g;
                if ((rc = fnn_sum_to_shape(&g, &n->grad, n->value.ndim, n->value.shape))) goto restore;
                fnn_tensor_clear(&n->grad);
                if ((rc = accumulate(&n->leaf_grad, &g))) goto restore;
            }
            fnn_tensor_clear(&n->grad);
            continue;
        }
        fnn_tensor dins_local[4], *dins = n->n_inputs <= 4 ? dins_local : malloc(sizeof(fnn_tensor) * (size_t)n->n_inputs);
        if (!dins) { rc = FNN_FAIL(FNN_STATUS_OOM, "backward: out of memory"); goto restore; }
        for (int i = 0; i < n->n_inputs; i++) fnn_tensor_init(&dins[i]);
        bool embedded = false;
        const int64_t t_rule = fnn_profile_maybe() && fnn_profiling() ? fnn_profile_now() : 0;   /* fnn.profile */
        fnn_pin_op(n->op->info.name);   /* out-of-memory errors while n's gradient is made name its op */
        if (n->op->embeds && n->grad.ndim >= 0 && (rc = embed_into(n, &lazy, &embedded))) {
            if (dins != dins_local) free(dins);
            goto restore;
        }
        if (embedded) {
            /* input 0 got its gradient in place; nothing else to run for this node */
        } else if (n->grad.ndim >= 0) {
            if (!n->op->backward)
                rc = FNN_FAIL(FNN_STATUS_INTERNAL, "backward: %s has no backward rule (please report)", n->op->info.name);
            else {
                /* a node made under autocast computes its products as it did forward, whenever backward()
                 * runs (PyTorch runs an autocast product's backward in bf16 too) */
                const int depth = n->autocast && fnn_autocast_depth() == 0 ? fnn_autocast_set_depth(1) : -1;
                rc = n->op->backward(n, &n->grad, dins);
                if (depth >= 0) fnn_autocast_set_depth(depth);
            }
        }
        for (int i = 0; i < n->n_inputs && !rc; i++) {
            fnn_node *nx = n->next[i];
            if (!nx || dins[i].ndim < 0) continue;
            if (dins[i].ndim != n->in_ndim[i] ||
                memcmp(dins[i].shape, n->in_shape[i], sizeof(int64_t) * (size_t)dins[i].ndim) != 0) {
                rc = FNN_FAIL(FNN_STATUS_INTERNAL, "backward: %s gave a gradient %s for input %d of shape %s (please report)",
                              n->op->info.name, fnn_shape_of(&dins[i]).s, i + 1, fnn_shape_dims(n->in_ndim[i], n->in_shape[i]).s);
                break;
            }
            if (fnn_anomaly_enabled() && (rc = check_finite(n, &dins[i], i))) break;
            lazy_settle(&lazy, nx);
            rc = accumulate(&nx->grad, &dins[i]);
        }
        for (int i = 0; i < n->n_inputs; i++) fnn_tensor_clear(&dins[i]);
        if (dins != dins_local) free(dins);
        if (t_rule) fnn_profile_add(n->op->info.name, 1, fnn_profile_now() - t_rule);
        if (rc) goto restore;
        /* this node is done: free what it saved */
        fnn_tensor_clear(&n->grad);
        for (int i = 0; i < FNN_NODE_SAVED; i++) fnn_tensor_clear(&n->saved[i]);
        n->freed = 1;
        for (int i = 0; i < n->n_inputs; i++) {
            fnn_node *nx = n->next[i];
            if (nx && --nx->pending == 0 && (rc = push(&ready, nx))) goto restore;
        }
    }
restore:
    fnn_pin_op(NULL);
    fnn_set_grad_enabled(was_enabled);
done:
    for (size_t i = 0; i < all.len; i++) {
        all.v[i]->visited = 0;
        if (rc) fnn_tensor_clear(&all.v[i]->grad);
    }
    free(all.v); free(stack.v); free(ready.v);
    return rc;
}
