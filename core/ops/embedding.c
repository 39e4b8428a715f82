/* embedding.c: the lookup table of nn.Embedding. weight [V, W]; ids of any shape, 1-based
 * (int64, or float32 holding whole numbers) -> [*ids, W], row k of the result = weight row id_k.
 * The weight's gradient adds each result row's gradient into the row of its id, in a fixed
 * order (the same bits at any thread count); the row of padding_idx gets none (PyTorch). The
 * kernels run through the rows of the weight's backend (embedding.h): the CPU's at the end of this
 * file, cuda/index.cu's on a device. */
#include "embedding.h"
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

/* an embedding node: saved[0] = the forward row's `saved` (embedding.h) */
typedef struct {
    int64_t pad_row;   /* the padding row, 0-based (-1: none) */
    int64_t n;         /* ids looked up */
    int64_t V, W;      /* the weight's [vocabulary, width] */
} embedding_attrs;

/* the row for the weight's backend, with the kernel the caller runs; NULL (an error naming the
 * device) when that backend has none */
static const fnn_emb_row *row_of(int device, bool backward) {
    const fnn_emb_row *row = fnn_embedding_row_for(device, "embedding");
    if (row && (backward ? row->backward : row->forward)) return row;
    FNN_ROW_REFUSED("embedding", device, backward);
    return NULL;
}

static int embedding_rule(fnn_node *nd, const fnn_tensor *g, fnn_tensor *din) {
    const embedding_attrs *at = FNN_ATTRS(nd, embedding_attrs);
    const fnn_emb_row *row = row_of(g->device, true);
    if (!row) return fnn_last_status();
    int64_t wshape[2] = {at->V, at->W};
    FNN_TRY(fnn_new_output(&din[0], g->device, 2, wshape));
    fnn_emb_args a = {.out = &din[0], .saved = &nd->saved[0], .g = g, .n = at->n, .V = at->V, .W = at->W,
                      .pad_row = at->pad_row};
    int rc = row->backward(fnn_device_ordinal(g->device), &a);
    if (rc) fnn_tensor_clear(&din[0]);
    return rc;
}
static const fnn_op_def EMBEDDING = {.info = {.name = "embedding", .family = "embedding", .differentiable = 1},
    .backward = embedding_rule};

/* ids are read on the weight's device (a GPU weight's rows read them there, cuda/index.cu), or on the CPU */
static int check_ids(const fnn_tensor *weight, const fnn_tensor *ids) {
    if (ids && ids->device == weight->device) return fnn_check_input_any("embedding", ids);
    return fnn_check_index("embedding", "ids", ids);
}

int fnn_embedding(fnn_tensor *out, const fnn_tensor *weight, const fnn_tensor *ids, int64_t padding_idx) {
    FNN_TRY(fnn_check_input("embedding", weight));
    FNN_TRY(check_ids(weight, ids));
    FNN_TRY(fnn_check_same_device("embedding", weight, ids));
    const fnn_emb_row *row = row_of(weight->device, false);
    if (!row) return fnn_last_status();
    FNN_CHECK(weight->ndim == 2, FNN_STATUS_SHAPE, "embedding: weight %s is not [vocabulary,width]",
              fnn_shape_of(weight).s);
    FNN_CHECK(ids->ndim < FNN_MAX_DIMS, FNN_STATUS_SHAPE, "embedding: ids %s have %d dims, at most %d supported",
              fnn_shape_of(ids).s, ids->ndim, FNN_MAX_DIMS - 1);
    const int64_t V = weight->shape[0], W = weight->shape[1];
    FNN_CHECK(padding_idx >= 0 && padding_idx <= V, FNN_STATUS_ARG,
              "embedding: padding_idx %lld outside the vocabulary 1..%lld (weight %s)", (long long)padding_idx,
              (long long)V, fnn_shape_of(weight).s);
    const int64_t n = fnn_tensor_numel(ids);
    int64_t oshape[FNN_MAX_DIMS];
    memcpy(oshape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
    oshape[ids->ndim] = W;
    FNN_TRY(fnn_new_output(out, weight->device, ids->ndim + 1, oshape));
    fnn_tensor saved;
    fnn_tensor_init(&saved);
    fnn_emb_args a = {.out = out, .saved = &saved, .weight = weight, .ids = ids, .n = n, .V = V, .W = W,
                      .pad_row = padding_idx - 1};
    int rc = row->forward(fnn_device_ordinal(weight->device), &a);
    const fnn_tensor *ins[1] = {weight};
    if (!rc && fnn_needs_node(1, ins)) {
        fnn_node *nd = fnn_attach_node(out, &EMBEDDING, 1, ins);
        if (!nd || fnn_save(nd, 0, &saved)) {
            rc = fnn_last_status();
        } else {
            *FNN_ATTRS(nd, embedding_attrs) = (embedding_attrs){.pad_row = padding_idx - 1, .n = n, .V = V, .W = W};
        }
    }
    fnn_tensor_clear(&saved);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= the CPU rows ================= */

/* saved = the ids as 0-based rows (int64 [n]), each checked; out = the weight's rows */
static int cpu_embedding(int ordinal, fnn_emb_args *a) {
    (void)ordinal;
    int64_t rshape[1] = {a->n};
    fnn_tensor wt;
    fnn_tensor_init(&wt);
    int rc = fnn_new_output_dtype(a->saved, FNN_DEVICE_CPU, FNN_DTYPE_INT64, 1, rshape);
    if (rc) return rc;
    rc = embedding_rows(a->ids, a->weight, fnn_data_i64(a->saved), a->n);
    const float *wp = NULL;
    if (!rc) wp = fnn_contiguous_data(a->weight, &wt, &rc);
    if (!rc) {
        emb_fwd_args f = {wp, fnn_data_i64(a->saved), fnn_data(a->out), a->W};
        fnn_parallel_for(a->n, fnn_threads_for(a->n * a->W), emb_fwd_rows, &f);
    }
    fnn_tensor_clear(&wt);
    return rc;
}

static int cpu_embedding_backward(int ordinal, fnn_emb_args *a) {
    (void)ordinal;
    fnn_tensor gt;
    int rc;
    const float *gp = fnn_contiguous_data(a->g, &gt, &rc);
    if (!rc) {
        if (a->V * a->W != 0) memset(fnn_data(a->out), 0, sizeof(float) * (size_t)(a->V * a->W));
        emb_bwd_args b = {gp, fnn_data_i64(a->saved), fnn_data(a->out), a->n, a->W, a->pad_row};
        fnn_parallel_for(a->W, fnn_threads_for(a->n * a->W), emb_bwd_cols, &b);
    }
    fnn_tensor_clear(&gt);
    return rc;
}

const fnn_emb_row fnn_cpu_embedding_rows[] = {
    {"embedding", cpu_embedding, cpu_embedding_backward},
    {NULL, NULL, NULL},
};

const fnn_op_def *const fnn_ops_embedding[] = {&EMBEDDING, NULL};
