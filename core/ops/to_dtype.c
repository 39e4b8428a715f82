/* to_dtype.c: the op that converts a tensor's elements to another dtype (t:float(), t:long(),
 * t:bf16()). Between the float types (float32, bfloat16) it is differentiable: the gradient of a
 * bfloat16 tensor is kept in float32 (the precision its rule says: no rounding on the way back), so
 * dx = dy as float32 in both directions and the engine adds gradients in float32 only. To and from
 * int64 it carries no node (ids are not differentiable). float32 <-> int64 runs the int64 family's
 * "cast" row of the tensor's backend; bfloat16 converts on the CPU (core/bf16.h: to nearest, ties to
 * even), and a device without that refuses it by name. */
#include "../bf16.h"
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

/* n contiguous elements of x's dtype at src into y (dtype), on the CPU; rc from int64's checks */
static int convert_cpu(const char *op, const fnn_tensor *x, const void *src, void *y, int dtype, int64_t n) {
    const int from = x->dtype;
    if (dtype == FNN_DTYPE_BFLOAT16) {
        uint16_t *d = y;
        if (from == FNN_DTYPE_FLOAT32) fnn_to_bf16_matrix(d, src, 1, n, n);
        else for (int64_t i = 0; i < n; i++) d[i] = fnn_bf16_from_f32((float)((const int64_t *)src)[i]);
        return FNN_STATUS_OK;
    }
    const uint16_t *s = src;   /* from bfloat16 */
    if (dtype == FNN_DTYPE_FLOAT32) {
        fnn_from_bf16(y, s, n);
        return FNN_STATUS_OK;
    }
    int64_t *d = y;
    fnn_shape_text where = fnn_shape_of(x);
    for (int64_t i = 0; i < n; i++) FNN_TRY(fnn_whole_number(op, fnn_bf16_to_f32(s[i]), i, where.s, &d[i]));
    return FNN_STATUS_OK;
}

int fnn_cast(fnn_tensor *out, const fnn_tensor *x, int dtype) {
    const char *op = op_name(dtype);
    FNN_TRY(fnn_check_input_any(op, x));
    FNN_CHECK(fnn_dtype_size(dtype) > 0, FNN_STATUS_ARG, "to_dtype: unknown dtype code %d", dtype);
    if (x->dtype == dtype) return fnn_tensor_ref(out, x);
    const bool bf16 = dtype == FNN_DTYPE_BFLOAT16 || x->dtype == FNN_DTYPE_BFLOAT16;
    const fnn_int64_row *row = NULL;
    if (bf16) {
        if (!fnn_in_host_memory(x)) return FNN_ROW_REFUSED(op, x->device, false);
    } else if (!(row = fnn_int64_row_for(x->device, "cast"))) {   /* core/ops/int64.c, cuda/int64.cu */
        return FNN_ROW_REFUSED(op, x->device, false);
    }
    fnn_tensor tmp;
    int rc;
    const void *src = fnn_contiguous_bytes(x, &tmp, &rc);
    FNN_TRY(rc);
    rc = fnn_new_output_dtype(out, x->device, dtype, x->ndim, x->shape);
    if (!rc && bf16) {
        rc = convert_cpu(op, x, src, fnn_bytes(out), dtype, fnn_tensor_numel(x));
    } else if (!rc) {
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
