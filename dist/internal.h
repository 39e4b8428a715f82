/* dist/internal.h: what dist.c and nccl.c share (not installed). */
#ifndef FASTNN_DIST_INTERNAL_H
#define FASTNN_DIST_INTERNAL_H
#include "fastnn_dist.h"

/* set the thread's message and return status */
int fnn_dist_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef FASTNN_WITH_NCCL
/* dist/nccl.c: the same collectives on CUDA buffers of device (one communicator per process,
 * made on first use with the unique id broadcast over MPI) */
int fnn_dist_nccl_all_reduce(void *recv, const void *send, int64_t count, int dtype, int op, int device);
int fnn_dist_nccl_broadcast(void *buf, const void *src, int64_t count, int dtype, int root, int device);
int fnn_dist_nccl_all_gather(void *recv, const void *send, int64_t count, int dtype, int device);
int fnn_dist_nccl_bucket(int n, const float *const *src, float *const *dst, const int64_t *counts,
                         double scale, int device);
void fnn_dist_nccl_finalize(void);
#endif
#endif
