/* fastnn_dist.h: the C ABI of libfastnn_dist, the optional data-parallel library
 * (built with -DFASTNN_MPI=ON). Collectives over Open MPI for CPU buffers and over
 * NCCL for CUDA buffers (when the CUDA build found NCCL). lua/fastnn/distributed.lua
 * is its only user; it passes raw buffers of contiguous tensors it made itself.
 *
 * dtype: fnn_dtype codes (0 float32, 1 int64). device: the buffers' fnn device code
 * (fnn_device_type * 256 + ordinal): CPU goes over MPI, CUDA over NCCL.
 * op: FNN_DIST_SUM, MAX, MIN, MEAN (mean: float32 only, the sum divided by the world size).
 * Every entry returns 0 or a negative fnn_status with a message in fnn_dist_last_error().
 * The build strips '#' lines and FNN_API into lua/fastnn/dist_cdef.lua; fastnn.h's
 * declarations (fnn_tensor) are loaded before it.
 */
#ifndef FASTNN_DIST_H
#define FASTNN_DIST_H
#include "fastnn.h"
#ifdef __cplusplus
extern "C" {
#endif

enum { FNN_DIST_SUM = 0, FNN_DIST_MAX = 1, FNN_DIST_MIN = 2, FNN_DIST_MEAN = 3 };

/* ---- setup: dist/dist.c ---- */
/* MPI_Init (once; MPI_Finalize is registered for process exit), then rank and size */
FNN_API int fnn_dist_init(int *rank, int *world_size);
FNN_API int fnn_dist_initialized(void);              /* 1 after fnn_dist_init succeeded */
FNN_API int fnn_dist_has_nccl(void);                 /* 1 when built with NCCL */
FNN_API const char *fnn_dist_last_error(void);       /* thread-local */
FNN_API const char *fnn_dist_processor_name(void);   /* this rank's host name (MPI) */
FNN_API int fnn_dist_barrier(void);
/* ends the whole job: every rank exits with code (after flushing stdout and stderr) */
FNN_API void fnn_dist_abort(int code);
/* the first element of t's data as raw bytes, any dtype or device (NULL for an empty header) */
FNN_API void *fnn_dist_tensor_bytes(const fnn_tensor *t);

/* ---- collectives on count elements: dist/dist.c (CPU), dist/nccl.c (CUDA) ---- */
/* recv := op over ranks of send; recv may equal send (in place) */
FNN_API int fnn_dist_all_reduce(void *recv, const void *send, int64_t count, int dtype, int op, int device);
/* buf := root's src (src is read on root only; src may equal buf) */
FNN_API int fnn_dist_broadcast(void *buf, const void *src, int64_t count, int dtype, int root, int device);
/* recv (world_size * count elements) := every rank's send, rank 0 first */
FNN_API int fnn_dist_all_gather(void *recv, const void *send, int64_t count, int dtype, int device);
/* the gradients of a bucket: dst[i] := scale * sum over ranks of src[i] (float32, counts[i]
 * elements; a NULL src counts as zeros), through one flat buffer and one all-reduce */
FNN_API int fnn_dist_all_reduce_bucket(int n, const float *const *src, float *const *dst, const int64_t *counts,
                                       double scale, int device);

#ifdef __cplusplus
}
#endif
#endif
