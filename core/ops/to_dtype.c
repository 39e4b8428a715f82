/* to_dtype.c: the op that converts a tensor's elements to another dtype (t:float(), t:long(),
 * t:bf16()). Between the float types (float32, bfloat16) it is differentiable: the gradient of a
 * bfloat16 tensor is kept in float32 (the precision its rule says: no rounding on the way back), so
 * dx = dy as float32 in both directions and the engine adds gradients in float32 only. To and from
 * int64 it carries no node (ids are not differentiable). Every conversion runs the int64 family's
 * "cast" row of the tensor's backend (bfloat16 by core/bf16.h's rounding: to nearest, ties to even). */
#include "../internal.h"
#include "int64.h"

static bool float_type(int dtype) { return dtype == FNN_DTYPE_FLOAT32 || dtype == FNN_DTYPE_BFLOAT16; }

static const char *op_name(int dtype) {
    return dtype == FNN_DTYPE_INT64 ? "long" : dtype == FNN_DTYPE_BFLOAT16 ? "bf16" : "float";
}

/* ---- to_dtype: y = x's values as dtype; dx = dy in float32 ---- */
static int to_dtype_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    if (g->dtype == FNN_DTYPE_FLOAT32) return fnn_tensor_ref(&din[0], g);
    return fnn_cast(&din[0], g, FNN_DTYPE_FLOAT32);
}
const fnn_op_def fnn_op_to_dtype = {.info = {.name = "to_dtype", .family = "device", .differentiable = 1, .has_cuda = 1},
    .backward = to_dtype_rule};

int fnn_cast(fnn_tensor *out, const fnn_tensor *x, int dtype) {
    const char *op = op_name(dtype);
    FNN_TRY(fnn_check_input_any(op, x));
    FNN_CHECK(fnn_dtype_size(dtype) > 0, FNN_STATUS_ARG, "to_dtype: unknown dtype code %d", dtype);
    if (x->dtype == dtype) return fnn_tensor_ref(out, x);
    const fnn_int64_row *row = fnn_int64_row_for(x->device, "cast");   /* core/ops/int64.c, cuda/int64.cu */
    if (!row) return FNN_ROW_REFUSED(op, x->device, false);
    fnn_tensor tmp;
    int rc;
    const void *src = fnn_contiguous_bytes(x, &tmp, &rc);
    FNN_TRY(rc);
    rc = fnn_new_output_dtype(out, x->device, dtype, x->ndim, x->shape);
    if (!rc) {
        fnn_int64_args a = {.op = dtype, .y = fnn_bytes(out), .a = src, .a_dtype = x->dtype,
                            .n = fnn_tensor_numel(x), .name = op, .src = x};
        rc = row->run(fnn_device_ordinal(x->device), &a);
    }
    if (rc) fnn_tensor_clear(out);
    fnn_tensor_clear(&tmp);
    return rc;
}

int fnn_to_dtype(fnn_tensor *out, const fnn_tensor *x, int dtype) {
    FNN_TRY(fnn_cast(out, x, dtype));
    if (x->dtype == dtype || !float_type(x->dtype) || !float_type(dtype)) return FNN_STATUS_OK;   /* x itself, or ids */
    const fnn_tensor *ins[1] = {x};
    if (fnn_needs_node(1, ins) && !fnn_attach_node(out, &fnn_op_to_dtype, 1, ins)) {
        fnn_tensor_clear(out);
        return fnn_last_status();
    }
    return FNN_STATUS_OK;
}
