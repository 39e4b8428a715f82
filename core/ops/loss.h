/* loss.h: the loss family's backend contract (core/internal.h's fnn_row_table): its arguments and
 * row type, filled by core/ops/loss.c (the CPU) and cuda/loss.cu.
 * Class losses (cross_entropy, nll_loss): x [N, C, d...] read in place through the strides sn, sc, sd
 * by every backend, so a transposed [N, C] is not copied (the entry point copies only an x with d...
 * dims that is not contiguous); the softmax and dx are contiguous. Elementwise losses (binary_cross_entropy,
 * bce_with_logits, mse_loss): x, t, w, pw contiguous (their entry points make them so, and save
 * those). A row reduces itself: out is the reduced loss, or one per site / element for NONE. */
#ifndef FASTNN_OPS_LOSS_H
#define FASTNN_OPS_LOSS_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_loss_args {
    float *out;             /* forward: the loss, [] (MEAN, SUM) or per site / element (NONE); backward: dx or NULL */
    float *dt;              /* elementwise backward: the target's gradient, or NULL */
    float *probs;           /* cross_entropy: the softmax (contiguous, x's shape): forward out (NULL: not kept), backward in */
    float *wsum;            /* class MEAN on a row without host_ids: the sum of w_y over counted sites ([], on the
                             * device): forward out, backward in; else NULL */
    const float *x;         /* class: x at sn, sc, sd; elementwise: contiguous [n] */
    const float *t;         /* elementwise: the target [n] */
    const int64_t *ids;     /* class: per site, host_ids rows: 0-based ids, -1 ignored; else the 1-based int64 targets */
    const float *w;         /* class: weights [C]; elementwise: the weight broadcast to [n]; NULL when absent */
    const float *pw;        /* bce_with_logits: pos_weight broadcast to [n], or NULL */
    const float *g;         /* backward: the output's gradient, contiguous ([] unless NONE) */
    int64_t n;              /* class: the sites N D; elementwise: the elements */
    int64_t cols, inner;    /* class: C, and D the sites per sample */
    int64_t sn, sc, sd;     /* class: x's steps per sample, class, site within the sample */
    int64_t ignore;         /* class, without host_ids: the ignored id as given, when has_ignore */
    int has_ignore;
    int reduction;          /* FNN_REDUCTION_* (mse_loss: MEAN) */
    int ndim;               /* x's shape, for messages */
    const int64_t *shape;
    double smooth;          /* cross_entropy's label smoothing */
    double weight_sum;      /* class, host_ids rows: the mean's denominator: forward out, backward in */
    double wall;            /* cross_entropy, host_ids rows: the sum of the class weights (C without): forward out,
                             * backward in */
} fnn_loss_args;
typedef int (*fnn_loss_fn)(int ordinal, fnn_loss_args *a);
typedef struct fnn_loss_row {
    const char *op;         /* the registry name; NULL ends a table */
    fnn_loss_fn forward, backward;
    /* class losses: 1 when the backend reads the targets on the host (checked there, a bad id refused
     * by name; the sums come back as doubles); 0 when nothing is read back (int64 targets checked by
     * the kernel, a bad id gives nan; the mean's denominator stays on the device in wsum) */
    int host_ids;
} fnn_loss_row;
/* the CPU rows: core/ops/loss.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(loss, fnn_loss_row)

#ifdef __cplusplus
}
#endif
#endif
