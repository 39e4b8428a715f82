/* device.c: the device registry (counts, availability, the CUDA backend's
 * registration on first use; the CPU backend lives in alloc.c), creators and
 * uploads on a device, synchronize. The to_device op is core/ops/to_device.c. */
#include "internal.h"
#include <string.h>

int fnn_cuda_built(void) {
#ifdef FASTNN_WITH_CUDA
    return 1;
#else
    return 0;
#endif
}

void fnn_ensure_backends(void) {
#ifdef FASTNN_WITH_CUDA
    static int done;
    if (!__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) fnn_cuda_register();
#endif
}

int fnn_device_count(int device_type) {
    fnn_ensure_backends();
    const fnn_backend *b = fnn_backend_for(fnn_make_device(device_type, 0));
    return b && b->device_count ? b->device_count() : 0;
}

/* an error naming op and the device when there is no such device here */
int fnn_check_device(const char *op, int device) {
    fnn_ensure_backends();
    char name[32];
    int type = fnn_device_type_of(device);
    FNN_CHECK(fnn_backend_for(device) != NULL && fnn_device_ordinal(device) < fnn_device_count(type),
              FNN_STATUS_DEVICE, "%s: device %s is not available (%s)", op, fnn_device_name(device, name, sizeof name),
              fnn_cuda_built() ? "no such GPU" : "this build has no CUDA backend; rebuild with -DFASTNN_CUDA=ON");
    return FNN_STATUS_OK;
}

/* ---- made on a device: full and empty where they are used ---- */
/* A float tensor is filled by the device's own kernel (be->fill): made on the CPU and copied
 * over, a GPU optimizer's state or a decoding cache crossed the bus once per buffer. int64 has
 * no device fill, so it is filled on the host and sent in one upload (no host wait). */
int fnn_empty_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, int dtype) {
    fnn_tensor_init(out);
    if (fnn_device_type_of(device) == FNN_DEVICE_CPU) return fnn_empty_dtype(out, ndim, shape, dtype);
    FNN_TRY(fnn_check_device("empty", device));
    fnn_set_op("empty");
    return fnn_new_output_dtype(out, device, dtype, ndim, shape);
}

int fnn_full_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, double value, int dtype) {
    fnn_tensor_init(out);
    if (fnn_device_type_of(device) == FNN_DEVICE_CPU) return fnn_full_dtype(out, ndim, shape, value, dtype);
    FNN_TRY(fnn_check_device("full", device));
    const fnn_backend *be = fnn_backend_for(device);
    if (dtype != FNN_DTYPE_FLOAT32 || !be->fill) {
        fnn_tensor host;
        FNN_TRY(fnn_full_dtype(&host, ndim, shape, value, dtype));   /* its checks of the value */
        int rc = fnn_upload(out, device, dtype, ndim, shape, fnn_bytes(&host));
        fnn_tensor_clear(&host);
        return rc;
    }
    fnn_set_op("full");
    FNN_TRY(fnn_new_output_dtype(out, device, dtype, ndim, shape));
    int64_t n = fnn_tensor_numel(out);
    int rc = n ? be->fill(fnn_device_ordinal(device), fnn_data(out), n, (float)value) : FNN_STATUS_OK;
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ---- transfers without a host wait (the backend's copy stream), synchronize, the pinned cache ---- */
/* out = a new tensor on device holding the host bytes src (dtype, shape). Where the backend has
 * pinned asynchronous copies, src is staged in a cached pinned buffer (so it may change once this
 * returns) and copied on the device's copy stream, which the calling thread's stream waits for on the
 * GPU: no host wait. A plain be->copy from pageable memory (cudaMemcpy) would make the host wait for
 * every kernel queued before it. The block comes from the copy pool (written by the copy stream, so
 * reused only after its last reader, cuda/backend.cu). Without those entries: a synchronous copy. */
int fnn_upload(fnn_tensor *out, int device, int dtype, int ndim, const int64_t *shape, const void *src) {
    fnn_tensor_init(out);   /* cleared on every failure below, so the caller may always clear it */
    const fnn_backend *be = fnn_backend_for(device);
    FNN_CHECK(be && be->copy, FNN_STATUS_DEVICE, "upload: no backend for device %d", device);
    const size_t bytes = (size_t)fnn_numel_of(ndim, shape) * (size_t)fnn_dtype_size(dtype);
    void *host = bytes && be->copy_async && be->host_alloc && be->host_free ? be->host_alloc(bytes) : NULL;
    int rc;
    if (!host) {
        FNN_TRY(fnn_new_output_dtype(out, device, dtype, ndim, shape));
        rc = bytes ? be->copy(fnn_bytes(out), device, src, fnn_make_device(FNN_DEVICE_CPU, 0), bytes) : FNN_STATUS_OK;
    } else {
        memcpy(host, src, bytes);
        if (be->copy_pool) be->copy_pool(1);
        rc = fnn_new_output_dtype(out, device, dtype, ndim, shape);
        if (be->copy_pool) be->copy_pool(0);
        if (!rc) rc = be->copy_async(fnn_device_ordinal(device), fnn_bytes(out), host, bytes);
        be->host_free(host, bytes);   /* reused once the copy is done */
    }
    if (rc) fnn_tensor_clear(out);
    return rc;
}

int fnn_device_synchronize(int device) {
    fnn_ensure_backends();
    if (fnn_device_type_of(device) == FNN_DEVICE_CPU) return FNN_STATUS_OK;
    const fnn_backend *be = fnn_backend_for(device);
    char name[32];
    FNN_CHECK(be && fnn_device_ordinal(device) < fnn_device_count(fnn_device_type_of(device)), FNN_STATUS_DEVICE,
              "synchronize: device %s is not available", fnn_device_name(device, name, sizeof name));
    return be->synchronize ? be->synchronize(fnn_device_ordinal(device), 0) : FNN_STATUS_OK;
}

int fnn_cuda_pinned_stats(int64_t *stats) {
    FNN_CHECK(stats != NULL, FNN_STATUS_ARG, "pinned_stats: no array for the 4 counts");
    memset(stats, 0, 4 * sizeof *stats);
    fnn_ensure_backends();
    const fnn_backend *be = fnn_backend_for(fnn_make_device(FNN_DEVICE_CUDA, 0));
    return be && be->host_stats ? be->host_stats(stats) : FNN_STATUS_OK;
}

#ifndef FASTNN_WITH_CUDA
int fnn_cuda_memory_stats(int64_t *live, int64_t *cached) {
    if (live) *live = 0;
    if (cached) *cached = 0;
    return FNN_FAIL(FNN_STATUS_DEVICE, "cuda: this build has no CUDA backend; rebuild with -DFASTNN_CUDA=ON");
}
void fnn_cuda_empty_cache(void) {}
#endif
