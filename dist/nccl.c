/* dist/nccl.c: the collectives on CUDA buffers, over NCCL (CUDA build with NCCL found).
 *
 * One communicator per process over all ranks, made on the first CUDA collective: rank 0 makes
 * the unique id and MPI_Bcast hands it to the others. Work runs on the legacy default stream,
 * as the CUDA backend's own kernels do (cuda/backend.cu), and each call waits for it, so a
 * result is ready when Lua gets it back.
 *
 * defines: fnn_dist_nccl_* (dist/internal.h).
 */
#include "internal.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <stdint.h>

/* made and used by the thread that calls MPI (MPI_THREAD_FUNNELED: the Lua thread) */
static _Thread_local ncclComm_t comm;
static _Thread_local int comm_device = -1;
static _Thread_local int comm_rank, comm_size;
static _Thread_local float *scratch;   /* the bucket buffer on comm_device */
static _Thread_local int64_t scratch_count;

static int cuda_fail(const char *op, cudaError_t e) {
    return fnn_dist_fail(FNN_STATUS_DEVICE, "%s: CUDA: %s", op, cudaGetErrorString(e));
}
static int nccl_fail(const char *op, ncclResult_t r) {
    return fnn_dist_fail(FNN_STATUS_DEVICE, "%s: NCCL: %s", op, ncclGetErrorString(r));
}

static int communicator(const char *op, int device) {
    int ordinal = device & 255;
    cudaError_t e = cudaSetDevice(ordinal);
    if (e != cudaSuccess) return cuda_fail(op, e);
    if (comm_device == ordinal) return FNN_STATUS_OK;
    if (comm_device >= 0)
        return fnn_dist_fail(FNN_STATUS_DEVICE, "%s: this rank's NCCL communicator is on cuda:%d, the tensor on "
                             "cuda:%d (one GPU per rank)", op, comm_device, ordinal);
    MPI_Comm_rank(MPI_COMM_WORLD, &comm_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &comm_size);
    ncclUniqueId id;
    if (comm_rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess) return nccl_fail(op, r);
    }
    if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return fnn_dist_fail(FNN_STATUS_INTERNAL, "%s: MPI_Bcast of the NCCL unique id failed", op);
    ncclResult_t r = ncclCommInitRank(&comm, comm_size, id, comm_rank);
    if (r != ncclSuccess) return nccl_fail(op, r);
    comm_device = ordinal;
    return FNN_STATUS_OK;
}

static ncclDataType_t nccl_type(int dtype) { return dtype == FNN_DTYPE_INT64 ? ncclInt64 : ncclFloat32; }

static ncclRedOp_t nccl_op(int op) {
    switch (op) {
    case FNN_DIST_MAX: return ncclMax;
    case FNN_DIST_MIN: return ncclMin;
    case FNN_DIST_MEAN: return ncclAvg;
    default: return ncclSum;
    }
}

static int finish(const char *op, ncclResult_t r) {
    if (r != ncclSuccess) return nccl_fail(op, r);
    cudaError_t e = cudaStreamSynchronize(0);
    return e == cudaSuccess ? FNN_STATUS_OK : cuda_fail(op, e);
}

int fnn_dist_nccl_all_reduce(void *recv, const void *send, int64_t count, int dtype, int op, int device) {
    int st = communicator("all_reduce", device);
    if (st) return st;
    return finish("all_reduce", ncclAllReduce(send, recv, (size_t)count, nccl_type(dtype), nccl_op(op), comm, 0));
}

int fnn_dist_nccl_broadcast(void *buf, const void *src, int64_t count, int dtype, int root, int device) {
    int st = communicator("broadcast", device);
    if (st) return st;
    const void *from = comm_rank == root ? src : buf;
    return finish("broadcast", ncclBroadcast(from, buf, (size_t)count, nccl_type(dtype), root, comm, 0));
}

int fnn_dist_nccl_all_gather(void *recv, const void *send, int64_t count, int dtype, int device) {
    int st = communicator("all_gather", device);
    if (st) return st;
    return finish("all_gather", ncclAllGather(send, recv, (size_t)count, nccl_type(dtype), comm, 0));
}

/* pack with device copies, one all-reduce (ncclAvg when scale is 1/world), unpack */
int fnn_dist_nccl_bucket(int n, const float *const *src, float *const *dst, const int64_t *counts,
                         double scale, int device) {
    const char *op = "DataParallel:sync";
    int st = communicator(op, device);
    if (st) return st;
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += counts[i];
    if (total > scratch_count) {
        if (scratch) cudaFree(scratch);
        scratch = NULL;
        scratch_count = 0;
        cudaError_t e = cudaMalloc((void **)&scratch, (size_t)total * sizeof(float));
        if (e != cudaSuccess) return cuda_fail(op, e);
        scratch_count = total;
    }
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)counts[i] * sizeof(float);
        cudaError_t e = src[i] ? cudaMemcpyAsync(scratch + at, src[i], bytes, cudaMemcpyDeviceToDevice, 0)
                               : cudaMemsetAsync(scratch + at, 0, bytes, 0);
        if (e != cudaSuccess) return cuda_fail(op, e);
        at += counts[i];
    }
    int mean = scale * comm_size > 0.999999 && scale * comm_size < 1.000001;
    if (!mean && scale != 1.0)   /* DataParallel only averages; other scales would need PreMulSum */
        return fnn_dist_fail(FNN_STATUS_ARG, "%s: the CUDA path averages (scale 1/world) or sums only", op);
    ncclResult_t r = ncclAllReduce(scratch, scratch, (size_t)total, ncclFloat32, mean ? ncclAvg : ncclSum, comm, 0);
    if (r != ncclSuccess) return nccl_fail(op, r);
    at = 0;
    for (int i = 0; i < n; i++) {
        cudaError_t e = cudaMemcpyAsync(dst[i], scratch + at, (size_t)counts[i] * sizeof(float),
                                        cudaMemcpyDeviceToDevice, 0);
        if (e != cudaSuccess) return cuda_fail(op, e);
        at += counts[i];
    }
    cudaError_t e = cudaStreamSynchronize(0);
    return e == cudaSuccess ? FNN_STATUS_OK : cuda_fail(op, e);
}

void fnn_dist_nccl_finalize(void) {
    if (comm_device < 0) return;
    ncclCommDestroy(comm);
    comm_device = -1;
    if (scratch) cudaFree(scratch);
    scratch = NULL;
    scratch_count = 0;
}
