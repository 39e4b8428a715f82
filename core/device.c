/* device.c: device queries and copies between devices. The CPU backend lives
 * in alloc.c; the CUDA one registers itself on first use when built. */
#include "internal.h"
#include <string.h>

int fnn_cuda_built(void) {
#ifdef FASTNN_WITH_CUDA
    return 1;
#else
    return 0;
#endif
}

static void ensure_backends(void) {
#ifdef FASTNN_WITH_CUDA
    static int done;
    if (!__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) fnn_cuda_register();
#endif
}

int fnn_device_count(int device_type) {
    ensure_backends();
    const fnn_backend *b = fnn_backend_for(fnn_make_device(device_type, 0));
    return b && b->device_count ? b->device_count() : 0;
}

/* ---- to_device: y = x on another device; dx = dy copied back ---- */
static int to_device_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    if (!n->next[0]) return FNN_STATUS_OK;
    return fnn_to_device(&din[0], g, (int)n->iattr[0]);
}
static const fnn_op_def TO_DEVICE = {{"to_device", "device", 1, 1}, to_device_backward, FNN_EMBEDS_NONE};
const fnn_op_def *const fnn_ops_device[] = {&TO_DEVICE, NULL};

int fnn_to_device(fnn_tensor *out, const fnn_tensor *x, int device) {
    FNN_TRY(fnn_check_input_any("to", x));
    ensure_backends();
    char name[32];
    int type = fnn_device_type_of(device);
    FNN_CHECK(fnn_backend_for(device) != NULL && fnn_device_ordinal(device) < fnn_device_count(type),
              FNN_STATUS_DEVICE, "to: device %s is not available (%s)", fnn_device_name(device, name, sizeof name),
              fnn_cuda_built() ? "no such GPU" : "this build has no CUDA backend; rebuild with -DFASTNN_CUDA=ON");
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
        n->iattr[0] = x->device;
    }
    return FNN_STATUS_OK;
}

#ifndef FASTNN_WITH_CUDA
int fnn_cuda_memory_stats(int64_t *live, int64_t *cached) {
    if (live) *live = 0;
    if (cached) *cached = 0;
    return FNN_FAIL(FNN_STATUS_DEVICE, "cuda: this build has no CUDA backend; rebuild with -DFASTNN_CUDA=ON");
}
void fnn_cuda_empty_cache(void) {}
#endif
