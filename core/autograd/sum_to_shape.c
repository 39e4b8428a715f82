/* sum_to_shape.c: fnn_sum_to_shape, the gradient of a broadcast summed back to its input's shape,
 * which the engine (a Param's gradient), expand's rule and the elementwise rules call. It runs the
 * reduction family's "sum" row (core/ops/reduction.h) with no node, not the op: the spine calls
 * no op. A file of its own so that tensor.c, which reduction.c calls, names nothing of reduction's. */
#include "../internal.h"
#include "../ops/reduction.h"
#include <string.h>

/* x summed over dim d (kept as 1 with keepdim) with no checks and no node, by the "sum" row of x's
 * backend (core/ops/reduction.h): the kernel fnn_sum runs, without the op */
static int sum_dim(fnn_tensor *out, const fnn_tensor *x, int d, bool keepdim) {
    const fnn_red_row *row = fnn_reduction_row_for(x->device, "sum");
    if (!row || !row->forward) return FNN_ROW_REFUSED("sum", x->device, false);
    int ondim = 0;
    int64_t oshape[FNN_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        if (i != d || keepdim) oshape[ondim++] = i == d ? 1 : x->shape[i];
    fnn_red_args a = {.k0 = 1.0, .xv = x, .dim = d};
    fnn_tensor tmp;
    int rc = FNN_STATUS_OK;
    if (!row->views) {   /* a row without views takes x contiguous [O, R, I] */
        a.O = fnn_numel_of(d, x->shape);
        a.R = x->shape[d];
        a.I = fnn_numel_of(x->ndim - d - 1, x->shape + d + 1);
        a.x = fnn_contiguous_data(x, &tmp, &rc);
        FNN_TRY(rc);
    }
    if (!(rc = fnn_new_output(out, x->device, ondim, oshape))) {
        a.out = fnn_data(out);
        if ((rc = row->forward(fnn_device_ordinal(x->device), &a))) fnn_tensor_clear(out);
    }
    if (!row->views) fnn_tensor_clear(&tmp);
    return rc;
}

/* g summed down to shape (undoing broadcasting): over its leading dims and where shape has 1 */
int fnn_sum_to_shape(fnn_tensor *out, const fnn_tensor *g, int ndim, const int64_t *shape) {
    if (g->ndim == ndim && memcmp(g->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0)
        return fnn_tensor_ref(out, g);
    FNN_TRY(fnn_check_input("sum", g));
    /* sum over leading dims and over dims where shape has 1 */
    fnn_tensor cur, next;
    FNN_TRY(fnn_tensor_ref(&cur, g));
    int lead = g->ndim - ndim;
    for (int i = 0; i < lead; i++) {
        int rc = sum_dim(&next, &cur, 0, false);
        fnn_tensor_clear(&cur);
        if (rc) return rc;
        cur = next;
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 1 && cur.shape[i] != 1) {
            int rc = sum_dim(&next, &cur, i, true);
            fnn_tensor_clear(&cur);
            if (rc) return rc;
            cur = next;
        }
    }
    *out = cur;
    return FNN_STATUS_OK;
}
