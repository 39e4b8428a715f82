/* dist/dist.c: libfastnn_dist over Open MPI: setup, exit, and the collectives on CPU buffers.
 *
 * One communicator (MPI_COMM_WORLD). MPI is called from the Lua thread only (MPI_THREAD_FUNNELED).
 * MPI_Finalize runs from an atexit handler, so a script that ends or calls os.exit leaves its
 * rank cleanly; the library is linked -z nodelete so the handler stays mapped after LuaJIT
 * dlclose()s it at lua_close.
 *
 * defines: the fnn_dist_* entry points of fastnn_dist.h (CUDA buffers go to dist/nccl.c).
 */
#include "internal.h"     /* dist/internal.h */
#include "../core/internal.h"

#include <mpi.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[512];
static _Thread_local float *scratch;          /* the bucket buffer, kept between syncs */
static _Thread_local int64_t scratch_count;
static _Atomic int initialized;                /* written once by the Lua thread, read anywhere */

int fnn_dist_fail(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

const char *fnn_dist_last_error(void) { return last_error; }

static int mpi_fail(const char *op, int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", code);
    return fnn_dist_fail(FNN_STATUS_INTERNAL, "%s: %s", op, text);
}

static void finalize_at_exit(void) {
    int done = 0, init = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&done);
    if (!init || done) return;
#ifdef FASTNN_WITH_NCCL
    fnn_dist_nccl_finalize();
#endif
    free(scratch);
    scratch = NULL;
    fflush(stdout);
    fflush(stderr);
    MPI_Finalize();
}

int fnn_dist_init(int *rank, int *world_size) {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
        int provided = 0;
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return fnn_dist_fail(FNN_STATUS_INTERNAL, "distributed.init: MPI_Init failed (%d)", rc);
        /* errors come back as codes, so Lua raises them instead of MPI killing the job */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        atexit(finalize_at_exit);
    }
    initialized = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, world_size);
    return FNN_STATUS_OK;
}

int fnn_dist_initialized(void) { return initialized; }

int fnn_dist_has_nccl(void) {
#ifdef FASTNN_WITH_NCCL
    return 1;
#else
    return 0;
#endif
}

const char *fnn_dist_processor_name(void) {
    static _Thread_local char name[MPI_MAX_PROCESSOR_NAME + 1];
    int len = 0;
    if (!initialized || MPI_Get_processor_name(name, &len) != MPI_SUCCESS) return "";
    name[len] = '\0';
    return name;
}

void fnn_dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    if (initialized) MPI_Abort(MPI_COMM_WORLD, code);
    _Exit(code);
}

void *fnn_dist_tensor_bytes(const fnn_tensor *t) {
    if (t == NULL || t->ndim < 0 || t->freed) return NULL;
    return fnn_bytes(t);
}

/* ---- CPU collectives ---- */

static int check(const char *op, int64_t count, int dtype) {
    if (!initialized) return fnn_dist_fail(FNN_STATUS_ARG, "%s: call distributed.init() first", op);
    if (count < 0) return fnn_dist_fail(FNN_STATUS_ARG, "%s: negative count %lld", op, (long long)count);
    if (dtype != FNN_DTYPE_FLOAT32 && dtype != FNN_DTYPE_INT64)
        return fnn_dist_fail(FNN_STATUS_ARG, "%s: unsupported dtype %d", op, dtype);
    return FNN_STATUS_OK;
}

static MPI_Datatype mpi_type(int dtype) { return dtype == FNN_DTYPE_INT64 ? MPI_INT64_T : MPI_FLOAT; }
static size_t elem_size(int dtype) { return dtype == FNN_DTYPE_INT64 ? 8 : 4; }

static int mpi_op(int op, MPI_Op *out) {
    switch (op) {
    case FNN_DIST_SUM: case FNN_DIST_MEAN: *out = MPI_SUM; return 1;
    case FNN_DIST_MAX: *out = MPI_MAX; return 1;
    case FNN_DIST_MIN: *out = MPI_MIN; return 1;
    default: return 0;
    }
}

/* MPI counts are int: big buffers go in pieces of at most 2^30 elements */
enum { MPI_PIECE = 1 << 30 };

static int is_cuda(int device) { return (device >> 8) == FNN_DEVICE_CUDA; }

#ifndef FASTNN_WITH_NCCL
static int no_nccl(const char *op) {
    return fnn_dist_fail(FNN_STATUS_DEVICE, "%s: CUDA tensors need NCCL, and this libfastnn_dist was built "
                         "without it (build with -DFASTNN_CUDA=ON -DFASTNN_MPI=ON where nccl.h is found)", op);
}
#endif

int fnn_dist_all_reduce(void *recv, const void *send, int64_t count, int dtype, int op, int device) {
    const char *name = "all_reduce";
    int st = check(name, count, dtype);
    if (st) return st;
    MPI_Op mop;
    if (!mpi_op(op, &mop)) return fnn_dist_fail(FNN_STATUS_ARG, "%s: unknown op %d", name, op);
    if (op == FNN_DIST_MEAN && dtype != FNN_DTYPE_FLOAT32)
        return fnn_dist_fail(FNN_STATUS_ARG, "%s: op 'mean' needs a float32 tensor, got int64", name);
    if (is_cuda(device)) {
#ifdef FASTNN_WITH_NCCL
        return fnn_dist_nccl_all_reduce(recv, send, count, dtype, op, device);
#else
        return no_nccl(name);
#endif
    }
    size_t es = elem_size(dtype);
    for (int64_t at = 0; at < count; at += MPI_PIECE) {
        int n = (int)(count - at < MPI_PIECE ? count - at : MPI_PIECE);
        char *r = (char *)recv + at * es;
        const void *s = send == recv ? MPI_IN_PLACE : (const char *)send + at * es;
        int rc = MPI_Allreduce(s, r, n, mpi_type(dtype), mop, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_fail(name, rc);
    }
    if (op == FNN_DIST_MEAN) {
        int size = 1;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        float inv = 1.0f / (float)size, *r = recv;
        for (int64_t i = 0; i < count; i++) r[i] *= inv;
    }
    return FNN_STATUS_OK;
}

int fnn_dist_broadcast(void *buf, const void *src, int64_t count, int dtype, int root, int device) {
    const char *name = "broadcast";
    int st = check(name, count, dtype);
    if (st) return st;
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (root < 0 || root >= size)
        return fnn_dist_fail(FNN_STATUS_ARG, "%s: root %d is not a rank of this world of %d (ranks are 0..%d)",
                             name, root, size, size - 1);
    if (is_cuda(device)) {
#ifdef FASTNN_WITH_NCCL
        return fnn_dist_nccl_broadcast(buf, src, count, dtype, root, device);
#else
        return no_nccl(name);
#endif
    }
    size_t es = elem_size(dtype);
    if (rank == root && src != buf && count > 0) memcpy(buf, src, (size_t)count * es);
    for (int64_t at = 0; at < count; at += MPI_PIECE) {
        int n = (int)(count - at < MPI_PIECE ? count - at : MPI_PIECE);
        int rc = MPI_Bcast((char *)buf + at * es, n, mpi_type(dtype), root, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_fail(name, rc);
    }
    return FNN_STATUS_OK;
}

int fnn_dist_all_gather(void *recv, const void *send, int64_t count, int dtype, int device) {
    const char *name = "all_gather";
    int st = check(name, count, dtype);
    if (st) return st;
    if (is_cuda(device)) {
#ifdef FASTNN_WITH_NCCL
        return fnn_dist_nccl_all_gather(recv, send, count, dtype, device);
#else
        return no_nccl(name);
#endif
    }
    if (count > INT_MAX)
        return fnn_dist_fail(FNN_STATUS_ARG, "%s: %lld elements per rank, at most %d", name, (long long)count, INT_MAX);
    int rc = MPI_Allgather(send, (int)count, mpi_type(dtype), recv, (int)count, mpi_type(dtype), MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? FNN_STATUS_OK : mpi_fail(name, rc);
}

int fnn_dist_all_reduce_bucket(int n, const float *const *src, float *const *dst, const int64_t *counts,
                               double scale, int device) {
    const char *name = "DataParallel:sync";
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += counts[i];
    int st = check(name, total, FNN_DTYPE_FLOAT32);
    if (st) return st;
    if (is_cuda(device)) {
#ifdef FASTNN_WITH_NCCL
        return fnn_dist_nccl_bucket(n, src, dst, counts, scale, device);
#else
        return no_nccl(name);
#endif
    }
    if (total > scratch_count) {
        float *p = realloc(scratch, (size_t)total * sizeof(float));
        if (p == NULL)
            return fnn_dist_fail(FNN_STATUS_OOM, "%s: cannot allocate a bucket of %lld floats", name, (long long)total);
        scratch = p;
        scratch_count = total;
    }
    float *flat = scratch;
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (src[i]) memcpy(flat + at, src[i], (size_t)counts[i] * sizeof(float));
        else memset(flat + at, 0, (size_t)counts[i] * sizeof(float));
        at += counts[i];
    }
    st = fnn_dist_all_reduce(flat, flat, total, FNN_DTYPE_FLOAT32, FNN_DIST_SUM, device);
    if (st) return st;
    float s = (float)scale;
    at = 0;
    for (int i = 0; i < n; i++) {
        const float *f = flat + at;
        float *d = dst[i];
        for (int64_t k = 0; k < counts[i]; k++) d[k] = f[k] * s;
        at += counts[i];
    }
    return FNN_STATUS_OK;
}

int fnn_dist_barrier(void) {
    if (!initialized) return fnn_dist_fail(FNN_STATUS_ARG, "barrier: call distributed.init() first");
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? FNN_STATUS_OK : mpi_fail("barrier", rc);
}
