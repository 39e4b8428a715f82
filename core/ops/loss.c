/* loss.c: fused losses. cross_entropy (log-softmax + negative log-likelihood
 * in one pass per row, stable by subtracting the row max) and mse_loss.
 * Both reduce to the mean, a scalar []. Fusing saves the [N, C] log-softmax
 * tensor and a pass over it, and keeps exp() away from large logits. */
#include "../internal.h"
#include "../fastmath.h"
#include <math.h>
#include <string.h>

/* ================= cross_entropy: logits [N, C], targets [N] 1-based ids -> [] ================= */

/* backward: dlogits = (softmax - onehot(target)) * g / N; only logits get a gradient.
 * saved[0] is the softmax from the forward, saved[1] the targets as 0-based int64 positions
 * (checked there). */
static int cross_entropy_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    const fnn_tensor *p = &n->saved[0], *t = &n->saved[1];
    int64_t rows = p->shape[0], cols = p->shape[1];
    FNN_TRY(fnn_new_output(&din[0], p->device, 2, p->shape));
    const float scale = (float)(fnn_data(g)[0] / (double)rows);
    const float *pp = fnn_data(p);
    const int64_t *tp = fnn_data_i64(t);
    float *d = fnn_data(&din[0]);
    for (int64_t i = 0; i < rows; i++) {   /* p and t are contiguous (made by the forward) */
        const float *pi = pp + i * cols;
        float *di = d + i * cols;
        for (int64_t j = 0; j < cols; j++) di[j] = pi[j] * scale;
        di[tp[i]] -= scale;
    }
    return FNN_STATUS_OK;
}
static const fnn_op_def CROSS_ENTROPY = {{"cross_entropy", "loss", 1, 0}, cross_entropy_backward, FNN_EMBEDS_NONE};

enum { CE_PARTS = 64, CE_PART_ELEMS = 4096 };

typedef struct {
    const float *x;
    const int64_t *t;                 /* 0-based class of each row */
    float *pr;                        /* softmax rows out, or NULL */
    int64_t s0, s1, rows, cols, chunk;
    double *part;                     /* part[p]: the loss summed over rows p*chunk .. */
} ce_args;

/* parts lo..hi-1: per row max, sum of exp(x - max), loss = max + log(sum) - x[target] */
static void ce_parts(void *ctx, int64_t lo, int64_t hi) {
    const ce_args *a = ctx;
    const int64_t s0 = a->s0, s1 = a->s1, cols = a->cols;
    for (int64_t p = lo; p < hi; p++) {
        int64_t r1 = (p + 1) * a->chunk < a->rows ? (p + 1) * a->chunk : a->rows;
        double total = 0;
        for (int64_t i = p * a->chunk; i < r1; i++) {
            const float *xi = a->x + i * s0;
            float mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < cols; j++) mx = fmaxf(mx, xi[j * s1]);
            if (mx == -INFINITY) mx = 0;   /* a row of -inf: avoid inf - inf */
            if (a->pr) {
                float *pi = a->pr + i * cols;
                for (int64_t j = 0; j < cols; j++) { pi[j] = fnn_expf(xi[j * s1] - mx); sum += pi[j]; }
                float inv = 1.0f / sum;
                for (int64_t j = 0; j < cols; j++) pi[j] *= inv;
            } else {
                for (int64_t j = 0; j < cols; j++) sum += fnn_expf(xi[j * s1] - mx);
            }
            int64_t target = a->t[i];
            total += (double)mx + log((double)sum) - (double)xi[target * s1];
        }
        a->part[p] = total;
    }
}

int fnn_cross_entropy(fnn_tensor *out, const fnn_tensor *logits, const fnn_tensor *targets) {
    FNN_TRY(fnn_check_input("cross_entropy", logits));
    FNN_TRY(fnn_check_index("cross_entropy", "targets", targets));
    FNN_TRY(fnn_check_same_device("cross_entropy", logits, targets));
    FNN_CHECK(logits->ndim == 2 && targets->ndim == 1 && targets->shape[0] == logits->shape[0], FNN_STATUS_SHAPE,
              "cross_entropy: logits %s and targets %s do not agree (expected logits [N,C] and targets [N])",
              fnn_shape_of(logits).s, fnn_shape_of(targets).s);
    FNN_CHECK(fnn_device_type_of(logits->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "cross_entropy: not implemented on cuda yet");
    int64_t rows = logits->shape[0], cols = logits->shape[1], st = targets->stride[0];
    /* ids first (int64, or float32 holding whole numbers), so a bad one fails before any work */
    fnn_tensor ids;
    FNN_TRY(fnn_new_output_dtype(&ids, logits->device, FNN_DTYPE_INT64, 1, &rows));
    int64_t *t = fnn_data_i64(&ids);
    for (int64_t i = 0; i < rows; i++) {
        double id = fnn_is_int64(targets) ? (double)fnn_data_i64(targets)[i * st] : fnn_data(targets)[i * st];
        if (!(id >= 1 && id <= (double)cols) || id != floor(id)) {
            fnn_tensor_clear(&ids);
            if (id != floor(id) && !isnan(id) && !isinf(id))
                return FNN_FAIL(FNN_STATUS_ARG, "cross_entropy: class id %g is not a whole number (row %lld)", id,
                                (long long)i + 1);
            return FNN_FAIL(FNN_STATUS_ARG, "cross_entropy: class id %.17g outside 1..%lld (row %lld of targets %s)",
                            id, (long long)cols, (long long)i + 1, fnn_shape_of(targets).s);
        }
        t[i] = (int64_t)id - 1;
    }
    const fnn_tensor *ins[1] = {logits};
    bool grad = fnn_needs_node(1, ins);
    fnn_tensor probs;   /* softmax rows, kept for the backward when a node is recorded */
    fnn_tensor_init(&probs);
    int rc = grad ? fnn_new_output(&probs, logits->device, 2, logits->shape) : FNN_STATUS_OK;
    if (!rc) rc = fnn_new_output(out, logits->device, 0, NULL);
    if (rc) { fnn_tensor_clear(&probs); fnn_tensor_clear(&ids); return rc; }

    const float *x = fnn_data(logits);
    float *pr = grad ? fnn_data(&probs) : NULL;
    int64_t s0 = logits->stride[0], s1 = logits->stride[1];
    /* rows in fixed parts of about CE_PART_ELEMS logits, each summed in order, then the parts in
     * order: the same bits at any thread count (and a plain running sum when one part covers all) */
    int64_t chunk = (CE_PART_ELEMS + cols - 1) / (cols > 0 ? cols : 1);
    if (chunk < (rows + CE_PARTS - 1) / CE_PARTS) chunk = (rows + CE_PARTS - 1) / CE_PARTS;
    if (chunk < 1) chunk = 1;
    double part[CE_PARTS];
    ce_args a = {x, t, pr, s0, s1, rows, cols, chunk, part};
    int64_t parts = (rows + chunk - 1) / chunk;
    fnn_parallel_for(parts, fnn_threads_for(rows * cols * 8), ce_parts, &a);   /* exp is costly: several flops */
    double total = 0;
    for (int64_t p = 0; p < parts; p++) total += part[p];
    fnn_data(out)[0] = (float)(total / (double)rows);   /* N = 0: 0/0 = nan, as PyTorch */
    if (grad) {
        fnn_node *n = fnn_attach_node(out, &CROSS_ENTROPY, 1, ins);
        if (!n || fnn_save(n, 0, &probs) || fnn_save(n, 1, &ids)) rc = fnn_last_status();
    }
    fnn_tensor_clear(&probs);
    fnn_tensor_clear(&ids);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= mse_loss: mean((pred - target)^2) -> [] ================= */

/* backward: dpred = 2 (pred - target) g / n, dtarget = -dpred, both in one pass */
static int mse_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *p = &n->saved[0], *t = &n->saved[1];
    int64_t count = fnn_tensor_numel(p);
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
static const fnn_op_def MSE_LOSS = {{"mse_loss", "loss", 1, 0}, mse_backward, FNN_EMBEDS_NONE};

int fnn_mse_loss(fnn_tensor *out, const fnn_tensor *pred, const fnn_tensor *target) {
    FNN_TRY(fnn_check_input("mse_loss", pred));
    FNN_TRY(fnn_check_input("mse_loss", target));
    FNN_TRY(fnn_check_same_device("mse_loss", pred, target));
    FNN_CHECK(fnn_same_shape(pred, target), FNN_STATUS_SHAPE,
              "mse_loss: pred %s and target %s differ in shape", fnn_shape_of(pred).s, fnn_shape_of(target).s);
    FNN_CHECK(fnn_device_type_of(pred->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "mse_loss: not implemented on cuda yet");
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

const fnn_op_def *const fnn_ops_loss[] = {&CROSS_ENTROPY, &MSE_LOSS, NULL};
