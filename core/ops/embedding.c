/* embedding.c: the lookup table of nn.Embedding. weight [V, W]; ids of any shape, 1-based
 * (int64, or float32 holding whole numbers) -> [*ids, W], row k of the result = weight row id_k.
 * The weight's gradient adds each result row's gradient into the row of its id, in a fixed
 * order (the same bits at any thread count); the row of padding_idx gets none (PyTorch). */
#include "../internal.h"
#include <math.h>
#include <string.h>

/* ids as 0-based rows into rows[0..n): each checked, the message naming the id, its position
 * and the vocabulary */
static int embedding_rows(const fnn_tensor *ids, const fnn_tensor *weight, int64_t *rows, int64_t n) {
    const int64_t V = weight->shape[0];
    fnn_tensor tmp;
    int rc;
    const void *p = fnn_contiguous_bytes(ids, &tmp, &rc);
    for (int64_t i = 0; !rc && i < n; i++) {
        int64_t v;
        if (fnn_is_int64(ids)) {
            v = ((const int64_t *)p)[i];
        } else {
            float f = ((const float *)p)[i];
            if (!(f == floorf(f) && fabsf(f) < 9.0e18f)) {
                rc = FNN_FAIL(FNN_STATUS_ARG, "embedding: id %g at position %lld of ids %s is not a whole number",
                              (double)f, (long long)(i + 1), fnn_shape_of(ids).s);
                break;
            }
            v = (int64_t)f;
        }
        if (v < 1 || v > V) {
            rc = FNN_FAIL(FNN_STATUS_ARG,
                          "embedding: id %lld at position %lld of ids %s is outside the vocabulary 1..%lld (weight %s)",
                          (long long)v, (long long)(i + 1), fnn_shape_of(ids).s, (long long)V,
                          fnn_shape_of(weight).s);
            break;
        }
        rows[i] = v - 1;
    }
    fnn_tensor_clear(&tmp);
    return rc;
}

/* ================= embedding: weight [V, W], ids [*] -> [*, W] ================= */
typedef struct {
    const float *w;        /* [V, W] contiguous */
    const int64_t *rows;   /* [n] 0-based */
    float *out;            /* [n, W] */
    int64_t W;
} emb_fwd_args;

static void emb_fwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const emb_fwd_args *a = ctx;
    for (int64_t i = lo; i < hi; i++)
        memcpy(a->out + i * a->W, a->w + a->rows[i] * a->W, sizeof(float) * (size_t)a->W);
}

/* backward: dW [V, W] = sum over results k of g[k] into row id_k, padding row skipped. Threads
 * split the columns, so each element is summed by one thread in the order of k */
typedef struct {
    const float *g;        /* [n, W] contiguous */
    const int64_t *rows;
    float *dw;             /* [V, W], zeroed */
    int64_t n, W, pad;     /* pad: the 0-based padding row or -1 */
} emb_bwd_args;

static void emb_bwd_cols(void *ctx, int64_t lo, int64_t hi) {
    const emb_bwd_args *a = ctx;
    for (int64_t k = 0; k < a->n; k++) {
        int64_t r = a->rows[k];
        if (r == a->pad) continue;
        const float *gk = a->g + k * a->W;
        float *d = a->dw + r * a->W;
        for (int64_t j = lo; j < hi; j++) d[j] += gk[j];
    }
}

/* an embedding node (on the CPU and on a device) */
typedef struct {
    int64_t pad_row;   /* the padding row, 0-based (-1: none) */
    int64_t n;         /* ids looked up */
    int64_t V, W;      /* the weight's [vocabulary, width] */
} embedding_attrs;

/* ================= on a device (cuda/index.cu): the index walk over [n, W] =================
 * int64 ids, read on the device: an id outside 1..V gives a row of nan (no host read to raise), and
 * the backward adds the rows through atomicAdd (order-dependent bits where ids repeat). The node
 * saves the ids (contiguous, as given); embedding_attrs as on the CPU. */
static int device_embedding_backward(fnn_node *nd, const fnn_tensor *g, fnn_tensor *din) {
    const embedding_attrs *at = FNN_ATTRS(nd, embedding_attrs);
    const int64_t pad = at->pad_row, n = at->n, V = at->V, W = at->W;
    const fnn_backend *be = fnn_backend_for(g->device);
    FNN_CHECK(be && be->index && be->fill, FNN_STATUS_DEVICE, "embedding: backward not implemented on this device");
    int64_t wshape[2] = {V, W};
    fnn_tensor gt;
    int rc;
    const float *gp = fnn_contiguous_data(g, &gt, &rc);
    if (!rc) rc = fnn_new_output(&din[0], g->device, 2, wshape);
    if (!rc && (rc = be->fill(fnn_device_ordinal(g->device), fnn_data(&din[0]), V * W, 0.0f))) fnn_tensor_clear(&din[0]);
    if (!rc) {
        fnn_index_args a;
        memset(&a, 0, sizeof a);
        a.ndim = 2, a.dim = 0, a.select = 1, a.size = V, a.skip = pad + 1;   /* skip: the 1-based padding id */
        a.shape[0] = n, a.shape[1] = W, a.xstride[0] = W, a.xstride[1] = 1, a.ystride[0] = W, a.ystride[1] = 1;
        if ((rc = be->index(fnn_device_ordinal(g->device), FNN_IDX_SCATTER, fnn_data(&din[0]), (void *)gp,
                            fnn_data_i64(&nd->saved[0]), 4, &a)))
            fnn_tensor_clear(&din[0]);
    }
    fnn_tensor_clear(&gt);
    return rc;
}

/* saved[0] = rows (int64 [n]); embedding_attrs */
static int embedding_backward(fnn_node *nd, const fnn_tensor *g, fnn_tensor *din) {
    const embedding_attrs *at = FNN_ATTRS(nd, embedding_attrs);
    const int64_t pad = at->pad_row, n = at->n, V = at->V, W = at->W;
    int64_t wshape[2] = {V, W};
    if (fnn_device_type_of(g->device) != FNN_DEVICE_CPU) return device_embedding_backward(nd, g, din);
    fnn_tensor gt;
    int rc;
    const float *gp = fnn_contiguous_data(g, &gt, &rc);
    if (!rc) rc = fnn_zeros(&din[0], 2, wshape);
    if (!rc) {
        emb_bwd_args a = {gp, fnn_data_i64(&nd->saved[0]), fnn_data(&din[0]), n, W, pad};
        fnn_parallel_for(W, fnn_threads_for(n * W), emb_bwd_cols, &a);
    }
    fnn_tensor_clear(&gt);
    if (rc) fnn_tensor_clear(&din[0]);
    return rc;
}
static const fnn_op_def EMBEDDING = {{"embedding", "embedding", 1, 1}, embedding_backward, FNN_EMBEDS_NONE};

static int device_embedding(fnn_tensor *out, const fnn_tensor *weight, const fnn_tensor *ids, int64_t padding_idx) {
    FNN_TRY(fnn_check_input_any("embedding", ids));
    FNN_TRY(fnn_check_same_device("embedding", weight, ids));
    const fnn_backend *be = fnn_backend_for(weight->device);
    FNN_CHECK(be && be->index && be->fill, FNN_STATUS_DEVICE, "embedding: not implemented on this device");
    FNN_CHECK(weight->ndim == 2, FNN_STATUS_SHAPE, "embedding: weight %s is not [vocabulary,width]",
              fnn_shape_of(weight).s);
    FNN_CHECK(fnn_is_int64(ids), FNN_STATUS_ARG, "embedding: ids %s on a GPU must be int64 (t:long()), not float32",
              fnn_shape_of(ids).s);
    FNN_CHECK(ids->ndim < FNN_MAX_DIMS, FNN_STATUS_SHAPE, "embedding: ids %s have %d dims, at most %d supported",
              fnn_shape_of(ids).s, ids->ndim, FNN_MAX_DIMS - 1);
    const int64_t V = weight->shape[0], W = weight->shape[1], n = fnn_tensor_numel(ids);
    FNN_CHECK(padding_idx >= 0 && padding_idx <= V, FNN_STATUS_ARG,
              "embedding: padding_idx %lld outside the vocabulary 1..%lld (weight %s)", (long long)padding_idx,
              (long long)V, fnn_shape_of(weight).s);
    int64_t oshape[FNN_MAX_DIMS];
    memcpy(oshape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
    oshape[ids->ndim] = W;
    fnn_tensor rows;
    int rc = fnn_tensor_is_contiguous(ids) ? fnn_tensor_ref(&rows, ids) : fnn_materialize(&rows, ids);
    if (rc) return rc;
    rc = fnn_new_output(out, weight->device, ids->ndim + 1, oshape);
    if (!rc) {
        fnn_index_args a;
        memset(&a, 0, sizeof a);
        a.ndim = 2, a.dim = 0, a.select = 1, a.size = V;
        a.shape[0] = n, a.shape[1] = W, a.xstride[0] = weight->stride[0], a.xstride[1] = weight->stride[1];
        a.ystride[0] = W, a.ystride[1] = 1;
        if ((rc = be->index(fnn_device_ordinal(weight->device), FNN_IDX_GATHER, (void *)fnn_data(weight), fnn_data(out),
                            fnn_data_i64(&rows), 4, &a)))
            fnn_tensor_clear(out);
    }
    const fnn_tensor *ins[1] = {weight};
    if (!rc && fnn_needs_node(1, ins)) {
        fnn_node *nd = fnn_attach_node(out, &EMBEDDING, 1, ins);
        if (!nd || fnn_save(nd, 0, &rows)) {
            rc = fnn_last_status();
            fnn_tensor_clear(out);
        } else {
            *FNN_ATTRS(nd, embedding_attrs) = (embedding_attrs){.pad_row = padding_idx - 1, .n = n, .V = V, .W = W};
        }
    }
    fnn_tensor_clear(&rows);
    return rc;
}

int fnn_embedding(fnn_tensor *out, const fnn_tensor *weight, const fnn_tensor *ids, int64_t padding_idx) {
    FNN_TRY(fnn_check_input("embedding", weight));
    if (ids && fnn_device_type_of(weight->device) != FNN_DEVICE_CPU) return device_embedding(out, weight, ids, padding_idx);
    FNN_TRY(fnn_check_index("embedding", "ids", ids));
    FNN_CHECK(fnn_device_type_of(weight->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "embedding: not implemented on cuda yet");
    FNN_CHECK(weight->ndim == 2, FNN_STATUS_SHAPE, "embedding: weight %s is not [vocabulary,width]",
              fnn_shape_of(weight).s);
    FNN_CHECK(ids->ndim < FNN_MAX_DIMS, FNN_STATUS_SHAPE, "embedding: ids %s have %d dims, at most %d supported",
              fnn_shape_of(ids).s, ids->ndim, FNN_MAX_DIMS - 1);
    const int64_t V = weight->shape[0], W = weight->shape[1];
    FNN_CHECK(padding_idx >= 0 && padding_idx <= V, FNN_STATUS_ARG,
              "embedding: padding_idx %lld outside the vocabulary 1..%lld (weight %s)", (long long)padding_idx,
              (long long)V, fnn_shape_of(weight).s);
    const int64_t n = fnn_tensor_numel(ids);
    int64_t oshape[FNN_MAX_DIMS], rshape[1] = {n};
    memcpy(oshape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
    oshape[ids->ndim] = W;
    fnn_tensor rows, wt;
    fnn_tensor_init(&wt);
    int rc = fnn_new_output_dtype(&rows, FNN_DEVICE_CPU, FNN_DTYPE_INT64, 1, rshape);
    if (rc) return rc;
    rc = embedding_rows(ids, weight, fnn_data_i64(&rows), n);
    const float *wp = NULL;
    if (!rc) wp = fnn_contiguous_data(weight, &wt, &rc);
    if (!rc) rc = fnn_new_output(out, weight->device, ids->ndim + 1, oshape);
    if (!rc) {
        emb_fwd_args a = {wp, fnn_data_i64(&rows), fnn_data(out), W};
        fnn_parallel_for(n, fnn_threads_for(n * W), emb_fwd_rows, &a);
    }
    const fnn_tensor *ins[1] = {weight};
    if (!rc && fnn_needs_node(1, ins)) {
        fnn_node *nd = fnn_attach_node(out, &EMBEDDING, 1, ins);
        if (!nd || fnn_save(nd, 0, &rows)) {
            rc = fnn_last_status();
        } else {
            *FNN_ATTRS(nd, embedding_attrs) = (embedding_attrs){.pad_row = padding_idx - 1, .n = n, .V = V, .W = W};
        }
    }
    fnn_tensor_clear(&rows);
    fnn_tensor_clear(&wt);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

const fnn_op_def *const fnn_ops_embedding[] = {&EMBEDDING, NULL};
