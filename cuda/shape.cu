/* shape.cu: the copying shape ops of core/ops/shape.c on the GPU, a thread per element written
 * (grid-stride loops, no atomics, so every result is deterministic and exact):
 *   copy_into    dst (strided) = src (strided) over a shape: cat and stack copy each input into its
 *                slab of the output (a narrowed or selected view of it) through this;
 *   pad          y (contiguous) = x shifted by the leading widths, value outside x (negative widths crop);
 *   pad_mode     y (contiguous) = x read about its edges (reflect, replicate, circular), and its
 *                backward: a thread per dx place sums the g places that read it, in g's row-major order;
 *   repeat       y (contiguous) = x tiled: y[p] = x[p mod s];
 *   repeat_grad  dx[c] = the sum of g over the tiles, added in g's row-major order as the CPU adds
 *                them, so the bits match;
 *   tri          tril/triu: y = x where col - row <= k (triu: >= k), else 0.
 * Elements of 4 or 8 bytes (float32, int64), except repeat_grad (float32 gradients). contiguous is
 * the backend's shared strided copy (copy.cu).
 *
 * defines: fnn_cuda_shape_rows (the family's rows, core/ops/shape.h) */
#include "common.cuh"
#include "ops/shape.h"

/* a shape and up to three per-dim vectors (strides, sizes, offsets); passed by value (kernel
 * parameter space) */
struct ShapeLayout {
    int ndim;
    int64_t shape[FNN_MAX_DIMS], a[FNN_MAX_DIMS], b[FNN_MAX_DIMS], c[FNN_MAX_DIMS];
};

/* dst[p . L.a] = src[p . L.b] over p in L.shape; I the index type (32-bit when everything fits) */
template <typename T, typename I> __global__ void copy_into_kernel(T *dst, const T *src, I n, ShapeLayout L) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I rem = i, doff = 0, soff = 0;
        for (int d = L.ndim - 1; d >= 0; d--) {
            const I size = (I)L.shape[d], p = rem % size;
            rem /= size;
            doff += p * (I)L.a[d];
            soff += p * (I)L.b[d];
        }
        dst[doff] = src[soff];
    }
}

/* y [L.shape] contiguous: q = p - before (L.a); inside x's shape (L.b): x[q . xstride (L.c)], else value */
template <typename T> __global__ void pad_kernel(T *y, const T *x, T value, int64_t n, ShapeLayout L) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = i, off = 0;
        bool inside = true;
        for (int d = L.ndim - 1; d >= 0; d--) {
            const int64_t q = rem % L.shape[d] - L.a[d];
            rem /= L.shape[d];
            inside = inside && q >= 0 && q < L.b[d];
            off += q * L.c[d];
        }
        y[i] = inside ? x[off] : value;
    }
}

/* pad_mode's source place along a dim of size n with before >= 0 added in front (mode: fnn_pad_kind,
 * 1 reflect, 2 replicate, 3 circular); core/ops/shape.c's pad_src is the same expression */
__device__ __forceinline__ int64_t pad_src(int mode, int64_t j, int64_t n, int64_t before) {
    const int64_t p = j - before;
    if (p < 0) return mode == 1 ? -p : mode == 2 ? 0 : p + n;
    if (p >= n) return mode == 1 ? 2 * n - 2 - p : mode == 2 ? n - 1 : p - n;
    return p;
}

/* the output places along a dim (output size y) that read x place q: up to 3 ranges [lo, hi) in
 * ascending order (left border, q itself, right border); the count. As core/ops/shape.c's pad_reads */
__device__ __forceinline__ int pad_reads(int mode, int64_t q, int64_t n, int64_t before, int64_t y, int64_t *lo,
                                         int64_t *hi) {
    int k = 0;
    const int64_t after = y - before - n;
    if (mode == 1 && q >= 1 && q <= before) { lo[k] = before - q; hi[k++] = before - q + 1; }
    if (mode == 2 && q == 0 && before > 0) { lo[k] = 0; hi[k++] = before; }
    if (mode == 3 && q >= n - before) { lo[k] = q + before - n; hi[k++] = q + before - n + 1; }
    lo[k] = q + before; hi[k++] = q + before + 1;
    if (mode == 1 && n - 2 - q >= 0 && n - 2 - q < after) { lo[k] = before + n + (n - 2 - q); hi[k] = lo[k] + 1; k++; }
    if (mode == 2 && q == n - 1 && after > 0) { lo[k] = before + n; hi[k++] = y; }
    if (mode == 3 && q < after) { lo[k] = before + n + q; hi[k] = lo[k] + 1; k++; }
    return k;
}

/* y [L.shape] contiguous = x [pad_src(p) per dim] through x's strides L.c; before L.a, x's shape L.b */
template <typename T> __global__ void pad_mode_kernel(T *y, const T *x, int mode, int64_t n, ShapeLayout L) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = i, off = 0;
        for (int d = L.ndim - 1; d >= 0; d--) {
            off += pad_src(mode, rem % L.shape[d], L.b[d], L.a[d]) * L.c[d];
            rem /= L.shape[d];
        }
        y[i] = x[off];
    }
}

/* dx [L.b] contiguous: the sum of g [L.shape] contiguous (strides L.c) over the places that read each
 * dx place, in g's row-major order (an odometer over each dim's ranges, the last dim fastest); no atomics */
__global__ void pad_mode_grad_kernel(float *dx, const float *g, int mode, int64_t n, ShapeLayout L) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t lo[FNN_MAX_DIMS][3], hi[FNN_MAX_DIMS][3], j[FNN_MAX_DIMS], rem = i;
        int cnt[FNN_MAX_DIMS], r[FNN_MAX_DIMS];
        for (int d = L.ndim - 1; d >= 0; d--) {
            cnt[d] = pad_reads(mode, rem % L.b[d], L.b[d], L.a[d], L.shape[d], lo[d], hi[d]);
            rem /= L.b[d];
            r[d] = 0;
            j[d] = lo[d][0];
        }
        float acc = 0.0f;
        for (;;) {
            int64_t off = 0;
            for (int d = 0; d < L.ndim; d++) off += j[d] * L.c[d];
            acc += g[off];
            int d = L.ndim - 1;
            for (; d >= 0; d--) {
                if (++j[d] < hi[d][r[d]]) break;
                if (++r[d] < cnt[d]) { j[d] = lo[d][r[d]]; break; }
                r[d] = 0;
                j[d] = lo[d][0];
            }
            if (d < 0) break;
        }
        dx[i] = acc;
    }
}

/* y [L.shape] contiguous = x [p mod L.a] read through x's strides L.b */
template <typename T> __global__ void repeat_kernel(T *y, const T *x, int64_t n, ShapeLayout L) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = i, off = 0;
        for (int d = L.ndim - 1; d >= 0; d--) {
            const int64_t p = rem % L.shape[d];
            rem /= L.shape[d];
            off += (p % L.a[d]) * L.b[d];
        }
        y[i] = x[off];
    }
}

/* dx [L.a] contiguous, g [L.shape] = [r0 s0, r1 s1, ...] contiguous with strides L.c, repeats L.b:
 * dx[c] = sum over tiles k (row-major) of g[k s + c]; tiles tiles in all */
__global__ void repeat_grad_kernel(float *dx, const float *g, int64_t n, int64_t tiles, ShapeLayout L) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = i, base = 0;
        for (int d = L.ndim - 1; d >= 0; d--) {
            base += rem % L.a[d] * L.c[d];
            rem /= L.a[d];
        }
        float acc = 0.0f;
        for (int64_t k = 0; k < tiles; k++) {
            int64_t kr = k, off = base;
            for (int d = L.ndim - 1; d >= 0; d--) {
                off += kr % L.b[d] * L.a[d] * L.c[d];
                kr /= L.b[d];
            }
            acc += g[off];
        }
        dx[i] = acc;
    }
}

/* y, x [batch, rows, cols] contiguous: keep x where col - row <= k (upper: >= k), else 0 */
template <typename T> __global__ void tri_kernel(T *y, const T *x, int64_t n, int64_t rows, int64_t cols, int64_t k,
                                                 int upper) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t col = i % cols, row = i / cols % rows, diff = col - row;
        const bool keep = upper ? diff >= k : diff <= k;
        y[i] = keep ? x[i] : (T)0;
    }
}

/* the pads' layout (above the host-side line, so the emulation's launchers share it): per dim the
 * output size, the leading width, the input size and c[d], x's stride (forward) or the output
 * gradient's dense stride (pad_mode's backward); returns the elements the launch covers: the
 * output's (forward) or the input's (backward) */
static inline int64_t pad_layout(ShapeLayout *L, int ndim, const int64_t *yshape, const int64_t *xshape,
                                 const int64_t *before, const int64_t *xstride) {
    L->ndim = ndim;
    int64_t ny = 1, nx = 1, dense = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        L->shape[d] = yshape[d];
        L->a[d] = before[d];
        L->b[d] = xshape[d];
        L->c[d] = xstride ? xstride[d] : dense;
        dense *= yshape[d];
        ny *= yshape[d];
        nx *= xshape[d];
    }
    return xstride ? ny : nx;
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
static int fnn_cuda_copy_into(int ordinal, void *dst, const int64_t *dstride, const void *src, const int64_t *sstride,
                       int esize, int ndim, const int64_t *shape) {
    FNN_ASSERT((esize == 4 || esize == 8) && ndim >= 0 && ndim <= FNN_MAX_DIMS);
    ShapeLayout L;
    L.ndim = ndim;
    int64_t n = 1, dreach = 0, sreach = 0;
    for (int d = 0; d < ndim; d++) {
        L.shape[d] = shape[d];
        L.a[d] = dstride[d];
        L.b[d] = sstride[d];
        n *= shape[d];
        dreach += (shape[d] - 1) * dstride[d];
        sreach += (shape[d] - 1) * sstride[d];
    }
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("copy", ordinal));
    const int64_t limit = (int64_t)1 << 30;   /* leaves room for i + the grid-stride step */
    const bool narrow = n < limit && dreach < limit && sreach < limit;
    const unsigned blocks = fnn_cuda_blocks(n);
    if (esize == 8) {
        if (narrow) FNN_LAUNCH((copy_into_kernel<int64_t, int32_t>), blocks, FNN_CUDA_THREADS, (int64_t *)dst,
                               (const int64_t *)src, (int32_t)n, L);
        else FNN_LAUNCH((copy_into_kernel<int64_t, int64_t>), blocks, FNN_CUDA_THREADS, (int64_t *)dst,
                        (const int64_t *)src, n, L);
    } else {
        if (narrow) FNN_LAUNCH((copy_into_kernel<float, int32_t>), blocks, FNN_CUDA_THREADS, (float *)dst,
                               (const float *)src, (int32_t)n, L);
        else FNN_LAUNCH((copy_into_kernel<float, int64_t>), blocks, FNN_CUDA_THREADS, (float *)dst, (const float *)src,
                        n, L);
    }
    FNN_CUDA_CHECK("copy", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int fnn_cuda_pad(int ordinal, void *y, const void *x, const int64_t *xstride, int esize, int ndim,
                 const int64_t *yshape, const int64_t *xshape, const int64_t *before, double value) {
    FNN_ASSERT((esize == 4 || esize == 8) && ndim >= 0 && ndim <= FNN_MAX_DIMS);
    ShapeLayout L;
    const int64_t n = pad_layout(&L, ndim, yshape, xshape, before, xstride);
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("pad", ordinal));
    if (esize == 8)
        FNN_LAUNCH(pad_kernel<int64_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (int64_t *)y, (const int64_t *)x,
                   (int64_t)value, n, L);
    else FNN_LAUNCH(pad_kernel<float>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (float *)y, (const float *)x, (float)value,
                    n, L);
    FNN_CUDA_CHECK("pad", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int fnn_cuda_pad_mode(int ordinal, void *y, const void *x, const int64_t *xstride, int esize, int ndim,
                      const int64_t *yshape, const int64_t *xshape, const int64_t *before, int mode) {
    FNN_ASSERT((esize == 4 || esize == 8) && ndim >= 0 && ndim <= FNN_MAX_DIMS && mode >= 1 && mode <= 3);
    ShapeLayout L;
    const int64_t n = pad_layout(&L, ndim, yshape, xshape, before, xstride);
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("pad", ordinal));
    if (esize == 8)
        FNN_LAUNCH(pad_mode_kernel<int64_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (int64_t *)y, (const int64_t *)x,
                   mode, n, L);
    else FNN_LAUNCH(pad_mode_kernel<float>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (float *)y, (const float *)x, mode, n,
                    L);
    FNN_CUDA_CHECK("pad", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int fnn_cuda_pad_mode_grad(int ordinal, float *dx, const float *g, int ndim, const int64_t *yshape,
                           const int64_t *xshape, const int64_t *before, int mode) {
    FNN_ASSERT(ndim >= 0 && ndim <= FNN_MAX_DIMS && mode >= 1 && mode <= 3);
    ShapeLayout L;
    const int64_t n = pad_layout(&L, ndim, yshape, xshape, before, NULL);
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("pad", ordinal));
    FNN_LAUNCH(pad_mode_grad_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, dx, g, mode, n, L);
    FNN_CUDA_CHECK("pad", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int fnn_cuda_repeat(int ordinal, void *y, const void *x, const int64_t *xstride, int esize, int ndim,
                    const int64_t *yshape, const int64_t *xshape) {
    FNN_ASSERT((esize == 4 || esize == 8) && ndim >= 0 && ndim <= FNN_MAX_DIMS);
    ShapeLayout L;
    L.ndim = ndim;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        L.shape[d] = yshape[d];
        L.a[d] = xshape[d];
        L.b[d] = xstride[d];
        n *= yshape[d];
    }
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("repeat", ordinal));
    if (esize == 8) FNN_LAUNCH(repeat_kernel<int64_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (int64_t *)y,
                               (const int64_t *)x, n, L);
    else FNN_LAUNCH(repeat_kernel<float>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (float *)y, (const float *)x, n, L);
    FNN_CUDA_CHECK("repeat", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int fnn_cuda_repeat_grad(int ordinal, float *dx, const float *g, int ndim, const int64_t *xshape,
                         const int64_t *repeats) {
    FNN_ASSERT(ndim >= 0 && ndim <= FNN_MAX_DIMS);
    ShapeLayout L;
    L.ndim = ndim;
    int64_t n = 1, tiles = 1, stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        L.shape[d] = xshape[d] * repeats[d];
        L.a[d] = xshape[d];
        L.b[d] = repeats[d];
        L.c[d] = stride;
        stride *= L.shape[d];
        n *= xshape[d];
        tiles *= repeats[d];
    }
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("repeat", ordinal));
    FNN_LAUNCH(repeat_grad_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, dx, g, n, tiles, L);
    FNN_CUDA_CHECK("repeat", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int fnn_cuda_tri(int ordinal, void *y, const void *x, int esize, int64_t batch, int64_t rows, int64_t cols,
                 int64_t k, int upper) {
    FNN_ASSERT(esize == 4 || esize == 8);
    const int64_t n = batch * rows * cols;
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(upper ? "triu" : "tril", ordinal));
    if (esize == 8)
        FNN_LAUNCH(tri_kernel<int64_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (int64_t *)y, (const int64_t *)x, n, rows,
                   cols, k, upper);
    else FNN_LAUNCH(tri_kernel<float>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, (float *)y, (const float *)x, n, rows,
                    cols, k, upper);
    FNN_CUDA_CHECK(upper ? "triu" : "tril", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* the rows (core/ops/shape.h), over the launchers above */
static int copy_into_forward(int ordinal, const fnn_shape_args *a) {
    return fnn_cuda_copy_into(ordinal, a->y, a->ystride, a->x, a->xstride, a->esize, a->ndim, a->yshape);
}
static int contiguous_forward(int ordinal, const fnn_shape_args *a) {
    /* through the backend's table: the copy kernels live in copy.cu (the emulation's too) */
    return fnn_backend_for(fnn_make_device(FNN_DEVICE_CUDA, ordinal))
        ->strided_copy(ordinal, a->y, a->x, a->esize, a->ndim, a->yshape, a->xstride);
}
static int repeat_forward(int ordinal, const fnn_shape_args *a) {
    return fnn_cuda_repeat(ordinal, a->y, a->x, a->xstride, a->esize, a->ndim, a->yshape, a->xshape);
}
static int repeat_backward(int ordinal, const fnn_shape_args *a) {
    int64_t reps[FNN_MAX_DIMS];   /* g's size over x's along each dim (x with g's ndim) */
    for (int d = 0; d < a->ndim; d++) reps[d] = a->xshape[d] ? a->yshape[d] / a->xshape[d] : 0;
    return fnn_cuda_repeat_grad(ordinal, (float *)a->y, (const float *)a->x, a->ndim, a->xshape, reps);
}
static int pad_forward(int ordinal, const fnn_shape_args *a) {
    return fnn_cuda_pad(ordinal, a->y, a->x, a->xstride, a->esize, a->ndim, a->yshape, a->xshape, a->before, a->value);
}
static int pad_mode_forward(int ordinal, const fnn_shape_args *a) {
    return fnn_cuda_pad_mode(ordinal, a->y, a->x, a->xstride, a->esize, a->ndim, a->yshape, a->xshape, a->before,
                             a->mode);
}
static int pad_mode_backward(int ordinal, const fnn_shape_args *a) {
    return fnn_cuda_pad_mode_grad(ordinal, (float *)a->y, (const float *)a->x, a->ndim, a->yshape, a->xshape,
                                  a->before, a->mode);
}
/* x, y [batch, rows, cols] contiguous */
static int tri_forward(int ordinal, const fnn_shape_args *a, int upper) {
    const int64_t rows = a->yshape[a->ndim - 2], cols = a->yshape[a->ndim - 1];
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++) n *= a->yshape[d];
    const int64_t batch = rows > 0 && cols > 0 ? n / (rows * cols) : 0;
    return fnn_cuda_tri(ordinal, a->y, a->x, a->esize, batch, rows, cols, a->k, upper);
}
static int tril_forward(int ordinal, const fnn_shape_args *a) { return tri_forward(ordinal, a, 0); }
static int triu_forward(int ordinal, const fnn_shape_args *a) { return tri_forward(ordinal, a, 1); }
extern "C" const fnn_shape_row fnn_cuda_shape_rows[] = {
    {"contiguous", contiguous_forward, NULL},
    {"cat", copy_into_forward, NULL},
    {"stack", copy_into_forward, NULL},
    {"repeat", repeat_forward, repeat_backward},
    {"pad", pad_forward, NULL},
    {"pad_mode", pad_mode_forward, pad_mode_backward},
    {"tril", tril_forward, NULL},
    {"triu", triu_forward, NULL},
    {NULL, NULL, NULL},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
