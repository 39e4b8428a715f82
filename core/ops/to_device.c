/* to_device.c: the op that moves a tensor between devices (x:to('cuda:0')), with its gradient
 * copied back; and its asynchronous form for the loader (a pinned upload on the copy stream,
 * core/device.c's fnn_upload, when nothing needs a node). */
#include "../internal.h"

/* ---- to_device: y = x on another device; dx = dy copied back ---- */
/* the device x was on (an fnn device number) */
typedef struct { int from_device; } to_device_attrs;

static int to_device_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    return fnn_to_device(&din[0], g, FNN_ATTRS(n, to_device_attrs)->from_device);
}
static const fnn_op_def TO_DEVICE = {.info = {.name = "to_device", .family = "device", .differentiable = 1, .has_cuda = 1},
    .backward = to_device_rule};
/* the device family: the conversions between representations, where (to_device) and what (to_dtype.c) */
extern const fnn_op_def fnn_op_to_dtype;
const fnn_op_def *const fnn_ops_device[] = {&TO_DEVICE, &fnn_op_to_dtype, NULL};

int fnn_to_device(fnn_tensor *out, const fnn_tensor *x, int device) {
    FNN_TRY(fnn_check_input_any("to", x));
    FNN_TRY(fnn_check_device("to", device));
    int type = fnn_device_type_of(device);
    if (device == x->device) return fnn_tensor_ref(out, x);
    fnn_tensor src;
    int rc;
    const void *data = fnn_contiguous_bytes(x, &src, &rc);
    FNN_TRY(rc);
    rc = fnn_new_output_dtype(out, device, x->dtype, x->ndim, x->shape);
    if (!rc) {
        /* the side that is not the CPU does the copy */
        const fnn_backend *b = fnn_backend_for(type != FNN_DEVICE_CPU ? device : x->device);
        rc = b->copy(fnn_bytes(out), device, data, x->device, (size_t)fnn_tensor_numel(x) * (size_t)fnn_elem_size(x));
        if (rc) fnn_tensor_clear(out);
    }
    fnn_tensor_clear(&src);
    FNN_TRY(rc);
    const fnn_tensor *ins[1] = {x};
    if (fnn_needs_node(1, ins)) {
        fnn_node *n = fnn_attach_node(out, &TO_DEVICE, 1, ins);
        if (!n) { fnn_tensor_clear(out); return fnn_last_status(); }
        FNN_ATTRS(n, to_device_attrs)->from_device = x->device;
    }
    return FNN_STATUS_OK;
}

int fnn_to_device_async(fnn_tensor *out, const fnn_tensor *x, int device) {
    FNN_TRY(fnn_check_input_any("to", x));
    fnn_ensure_backends();
    const fnn_backend *be = fnn_backend_for(device);
    const fnn_tensor *ins[1] = {x};
    if (fnn_device_type_of(device) == FNN_DEVICE_CPU || fnn_device_type_of(x->device) != FNN_DEVICE_CPU || !be ||
        !be->copy_async || fnn_tensor_numel(x) == 0 ||
        fnn_device_ordinal(device) >= fnn_device_count(fnn_device_type_of(device)) || fnn_needs_node(1, ins))
        return fnn_to_device(out, x, device);   /* its checks and messages, its autograd node */
    fnn_tensor tmp;
    int rc;
    const void *data = fnn_contiguous_bytes(x, &tmp, &rc);
    FNN_TRY(rc);
    rc = fnn_upload(out, device, x->dtype, x->ndim, x->shape, data);
    fnn_tensor_clear(&tmp);
    return rc;
}
