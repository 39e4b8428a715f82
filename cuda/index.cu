/* index.cu: the index walk behind index_select, gather, scatter_add, take_rows and embedding
 * (core/ops/index.c, embedding.c, core/io/data.c) on the GPU, a thread per position of the walked
 * shape. ids are int64 on the device and read there, so a bad id cannot raise without a host read:
 * a gather writes nan (int64: 0) and a scatter adds nothing. Scatters go through atomicAdd: where
 * ids repeat, the order of the adds (and so the last bits) may differ from run to run. The index
 * family's rows (core/ops/index.h) wrap the walk, and masked_fill's where (map.cu); so do the
 * embedding family's (core/ops/embedding.h).
 *
 * defines: fnn_cuda_index (the shared walk), fnn_cuda_index_rows, fnn_cuda_embedding_rows (the rows) */
#include "common.cuh"
#include "ops/elementwise_ops.h"
#include "ops/index.h"
#include "ops/embedding.h"

__device__ __forceinline__ void index_bad(float *v) { *v = NAN; }
__device__ __forceinline__ void index_bad(int64_t *v) { *v = 0; }

/* position p of a.shape -> its offsets in x (without dim) and y, its coordinate along dim */
__device__ __forceinline__ void index_offsets(int64_t p, const fnn_index_args &a, int64_t *xo, int64_t *yo,
                                              int64_t *cd) {
    int64_t rem = p, x = 0, y = 0, c_dim = 0;
    for (int d = a.ndim - 1; d >= 0; d--) {
        const int64_t c = rem % a.shape[d];
        rem /= a.shape[d];
        y += c * a.ystride[d];
        if (d == a.dim) c_dim = c;
        else x += c * a.xstride[d];
    }
    *xo = x, *yo = y, *cd = c_dim;
}

template <typename T>
__global__ void index_gather_kernel(T *y, const T *x, const int64_t *ids, int64_t n, fnn_index_args a) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n; p += (int64_t)gridDim.x * blockDim.x) {
        int64_t xo, yo, cd;
        index_offsets(p, a, &xo, &yo, &cd);
        const int64_t id = ids[a.select ? cd : p];
        if (id < 1 || id > a.size) index_bad(&y[yo]);
        else y[yo] = x[xo + (id - 1) * a.xstride[a.dim]];
    }
}

__global__ void index_scatter_kernel(float *x, const float *y, const int64_t *ids, int64_t n, fnn_index_args a) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n; p += (int64_t)gridDim.x * blockDim.x) {
        int64_t xo, yo, cd;
        index_offsets(p, a, &xo, &yo, &cd);
        const int64_t id = ids[a.select ? cd : p];
        if (id >= 1 && id <= a.size && id != a.skip) atomicAdd(&x[xo + (id - 1) * a.xstride[a.dim]], y[yo]);
    }
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
int fnn_cuda_index(int ordinal, int op, void *x, void *y, const int64_t *ids, int esize, const fnn_index_args *a) {
    FNN_ASSERT((op == FNN_IDX_GATHER && (esize == 4 || esize == 8)) || (op == FNN_IDX_SCATTER && esize == 4));
    const char *name = op == FNN_IDX_GATHER ? "gather" : "scatter_add";
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(name, ordinal));
    const unsigned blocks = fnn_cuda_blocks(n);
    if (op == FNN_IDX_SCATTER)
        FNN_LAUNCH(index_scatter_kernel, blocks, FNN_CUDA_THREADS, (float *)x, (const float *)y, ids, n, *a);
    else if (esize == 8)
        FNN_LAUNCH(index_gather_kernel<int64_t>, blocks, FNN_CUDA_THREADS, (int64_t *)y, (const int64_t *)x, ids, n,
                   *a);
    else
        FNN_LAUNCH(index_gather_kernel<float>, blocks, FNN_CUDA_THREADS, (float *)y, (const float *)x, ids, n, *a);
    FNN_CUDA_CHECK(name, cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ---- the index family's rows (core/ops/index.h) ---- */

/* the walk over shape: x's strides (dim's too), y's strides, one id per slice of dim (select) or per position */
static fnn_index_args walk_args(int ndim, const int64_t *shape, int d, int select, int64_t size, const int64_t *xs,
                                const int64_t *ys) {
    fnn_index_args a;
    memset(&a, 0, sizeof a);
    a.ndim = ndim, a.dim = d, a.select = select, a.size = size;
    memcpy(a.shape, shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(a.xstride, xs, sizeof(int64_t) * (size_t)ndim);
    memcpy(a.ystride, ys, sizeof(int64_t) * (size_t)ndim);
    return a;
}

/* the ids of a->index, contiguous on the device (tmp holds a copy of a view); int64 only: the
 * kernels read them there */
static const int64_t *device_ids(const fnn_idx_args *a, fnn_tensor *tmp, int *rc) {
    fnn_tensor_init(tmp);
    if (!fnn_is_int64(a->index)) {
        *rc = FNN_FAIL(FNN_STATUS_ARG, "%s: index %s on a GPU must be int64 (t:long()), not float32", a->op,
                       fnn_shape_of(a->index).s);
        return NULL;
    }
    return (const int64_t *)fnn_contiguous_bytes(a->index, tmp, rc);
}

/* out (contiguous, the walked shape) = x gathered at the ids (select: 1-D, one id per slice of dim) */
static int gather_rows_of(int ordinal, const fnn_idx_args *a, int select) {
    fnn_tensor itmp;
    int rc;
    const int64_t *ids = device_ids(a, &itmp, &rc);
    if (!rc) {
        const fnn_tensor *x = a->x;
        fnn_index_args w = walk_args(a->out->ndim, a->out->shape, a->dim, select, x->shape[a->dim], x->stride,
                                     a->out->stride);
        rc = fnn_cuda_index(ordinal, FNN_IDX_GATHER, (void *)fnn_bytes(x), fnn_bytes(a->out), ids, fnn_elem_size(x),
                            &w);
    }
    fnn_tensor_clear(&itmp);
    return rc;
}
static int select_forward(int ordinal, const fnn_idx_args *a) { return gather_rows_of(ordinal, a, 1); }
static int gather_forward(int ordinal, const fnn_idx_args *a) { return gather_rows_of(ordinal, a, 0); }

/* dx = zeros with g (the walked shape) added at the ids */
static int scatter_grad(int ordinal, const fnn_idx_args *a, int select) {
    fnn_tensor itmp, gtmp;
    fnn_tensor_init(&gtmp);
    int rc;
    const int64_t *ids = device_ids(a, &itmp, &rc);
    const float *gd = rc ? NULL : fnn_contiguous_data(a->g, &gtmp, &rc);
    fnn_tensor *dx = a->out;
    if (!rc) rc = fnn_backend_for(dx->device)->fill(ordinal, fnn_data(dx), fnn_tensor_numel(dx), 0.0f);
    if (!rc) {
        const fnn_tensor *g = a->g;
        int64_t gs[FNN_MAX_DIMS];
        fnn_contiguous_strides(g->ndim, g->shape, gs);
        fnn_index_args w = walk_args(g->ndim, g->shape, a->dim, select, a->shape->shape[a->dim], dx->stride, gs);
        rc = fnn_cuda_index(ordinal, FNN_IDX_SCATTER, fnn_data(dx), (void *)gd, ids, 4, &w);
    }
    fnn_tensor_clear(&itmp);
    fnn_tensor_clear(&gtmp);
    return rc;
}
static int select_backward(int ordinal, const fnn_idx_args *a) { return scatter_grad(ordinal, a, 1); }
static int gather_backward(int ordinal, const fnn_idx_args *a) { return scatter_grad(ordinal, a, 0); }

/* src added into the copy of x through atomicAdd */
static int scatter_add_forward(int ordinal, const fnn_idx_args *a) {
    fnn_tensor itmp;
    int rc;
    const int64_t *ids = device_ids(a, &itmp, &rc);
    if (!rc) {
        const fnn_tensor *index = a->index;
        fnn_index_args w = walk_args(index->ndim, index->shape, a->dim, 0, a->x->shape[a->dim], a->out->stride,
                                     a->src->stride);
        rc = fnn_cuda_index(ordinal, FNN_IDX_SCATTER, fnn_data(a->out), (void *)fnn_data(a->src), ids, 4, &w);
    }
    fnn_tensor_clear(&itmp);
    return rc;
}

/* masked_fill: where(mask, value, x) through map.cu, the value one element on the device read at stride 0 */
static int masked_fill_forward(int ordinal, const fnn_idx_args *a) {
    const fnn_tensor *x = a->x;
    fnn_tensor v;
    FNN_TRY(fnn_new_output(&v, x->device, 0, NULL));
    int rc = fnn_backend_for(x->device)->fill(ordinal, fnn_data(&v), 1, (float)a->value);
    if (!rc) {
        const float *in[3] = {fnn_data(a->index), fnn_data(&v), fnn_data(x)};
        int64_t st[3][FNN_MAX_DIMS];
        memset(st, 0, sizeof st);
        memcpy(st[0], a->mstride, sizeof(int64_t) * (size_t)x->ndim);
        memcpy(st[2], x->stride, sizeof(int64_t) * (size_t)x->ndim);
        rc = fnn_cuda_map(ordinal, FNN_MAP_where, fnn_data(a->out), in, &st[0][0], x->ndim, x->shape, 0, 0);
    }
    fnn_tensor_clear(&v);
    return rc;
}

extern "C" const fnn_idx_row fnn_cuda_index_rows[] = {
    {"index_select", select_forward, select_backward},
    {"gather", gather_forward, gather_backward},
    {"scatter_add", scatter_add_forward, NULL},
    {"masked_fill", masked_fill_forward, NULL},
    {NULL, NULL, NULL},
};

/* ---- the embedding family's rows (core/ops/embedding.h): the walk over [n, W] ----
 * int64 ids, read on the device: an id outside 1..V gives a row of nan, and the backward adds the
 * rows through atomicAdd (order-dependent bits where ids repeat). saved: the ids, contiguous. */
static int embedding_forward(int ordinal, fnn_emb_args *a) {
    const fnn_tensor *ids = a->ids, *weight = a->weight;
    FNN_CHECK(fnn_is_int64(ids), FNN_STATUS_ARG, "embedding: ids %s on a GPU must be int64 (t:long()), not float32",
              fnn_shape_of(ids).s);
    FNN_TRY(fnn_tensor_is_contiguous(ids) ? fnn_tensor_ref(a->saved, ids) : fnn_materialize(a->saved, ids));
    fnn_index_args w;
    memset(&w, 0, sizeof w);
    w.ndim = 2, w.dim = 0, w.select = 1, w.size = a->V;
    w.shape[0] = a->n, w.shape[1] = a->W, w.xstride[0] = weight->stride[0], w.xstride[1] = weight->stride[1];
    w.ystride[0] = a->W, w.ystride[1] = 1;
    return fnn_cuda_index(ordinal, FNN_IDX_GATHER, (void *)fnn_data(weight), fnn_data(a->out),
                          fnn_data_i64(a->saved), 4, &w);
}

static int embedding_backward(int ordinal, fnn_emb_args *a) {
    fnn_tensor gt;
    int rc;
    const float *gp = fnn_contiguous_data(a->g, &gt, &rc);
    if (!rc) rc = fnn_backend_for(a->out->device)->fill(ordinal, fnn_data(a->out), a->V * a->W, 0.0f);
    if (!rc) {
        fnn_index_args w;
        memset(&w, 0, sizeof w);
        w.ndim = 2, w.dim = 0, w.select = 1, w.size = a->V, w.skip = a->pad_row + 1;   /* the 1-based padding id */
        w.shape[0] = a->n, w.shape[1] = a->W, w.xstride[0] = a->W, w.xstride[1] = 1, w.ystride[0] = a->W,
        w.ystride[1] = 1;
        rc = fnn_cuda_index(ordinal, FNN_IDX_SCATTER, fnn_data(a->out), (void *)gp, fnn_data_i64(a->saved), 4, &w);
    }
    fnn_tensor_clear(&gt);
    return rc;
}

extern "C" const fnn_emb_row fnn_cuda_embedding_rows[] = {
    {"embedding", embedding_forward, embedding_backward},
    {NULL, NULL, NULL},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
