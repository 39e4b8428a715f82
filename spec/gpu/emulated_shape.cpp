// spec/gpu/emulated_shape.cpp: the host emulation (spec/gpu/emulated.h) of cuda/shape.cu (cat/stack
// copies, pad, pad_mode, repeat, tril/triu), cuda/sort.cu (sort, topk) and cuda/int64_reduce.cu. Grid-stride
// kernels run as one plain call; the block-per-line kernels (sort, the int64 block reduction) run
// through run_grid with real barriers, on at most 4 blocks so that their grid-stride over lines runs
// too, and with fewer threads per block than the GPU launch (at most 128 for sort, 64 for the int64
// tree): both kernels stride over their elements by blockDim, so the logic is the same, and each
// emulated thread is a host thread that every barrier wakes.
#include "emulated.h"
#include "shape_body.inc"   // cut from cuda/shape.cu, sort.cu, int64_reduce.cu by CMake
#include "sort_body.inc"
#include "int64_reduce_body.inc"

static unsigned few_blocks(int64_t lines) { return (unsigned)(lines < 4 ? lines : 4); }

static int m_copy_into(int, void *dst, const int64_t *ds, const void *src, const int64_t *ss, int esize, int ndim,
                       const int64_t *shape) {
    ShapeLayout L;
    L.ndim = ndim;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) { L.shape[d] = shape[d]; L.a[d] = ds[d]; L.b[d] = ss[d]; n *= shape[d]; }
    if (n == 0) return 0;
    if (esize == 8) copy_into_kernel<int64_t, int64_t>((int64_t *)dst, (const int64_t *)src, n, L);
    else copy_into_kernel<float, int32_t>((float *)dst, (const float *)src, (int32_t)n, L);   /* both widths run */
    return 0;
}

static int m_pad(int, void *y, const void *x, const int64_t *xs, int esize, int ndim, const int64_t *yshape,
                 const int64_t *xshape, const int64_t *before, double value) {
    ShapeLayout L;
    const int64_t n = pad_layout(&L, ndim, yshape, xshape, before, xs);
    if (n == 0) return 0;
    if (esize == 8) pad_kernel<int64_t>((int64_t *)y, (const int64_t *)x, (int64_t)value, n, L);
    else pad_kernel<float>((float *)y, (const float *)x, (float)value, n, L);
    return 0;
}

static int m_pad_mode(int, void *y, const void *x, const int64_t *xs, int esize, int ndim, const int64_t *yshape,
                      const int64_t *xshape, const int64_t *before, int mode) {
    ShapeLayout L;
    const int64_t n = pad_layout(&L, ndim, yshape, xshape, before, xs);
    if (n == 0) return 0;
    if (esize == 8) pad_mode_kernel<int64_t>((int64_t *)y, (const int64_t *)x, mode, n, L);
    else pad_mode_kernel<float>((float *)y, (const float *)x, mode, n, L);
    return 0;
}

static int m_pad_mode_grad(int, float *dx, const float *g, int ndim, const int64_t *yshape, const int64_t *xshape,
                           const int64_t *before, int mode) {
    ShapeLayout L;
    const int64_t n = pad_layout(&L, ndim, yshape, xshape, before, NULL);
    if (n) pad_mode_grad_kernel(dx, g, mode, n, L);
    return 0;
}

static int m_repeat(int, void *y, const void *x, const int64_t *xs, int esize, int ndim, const int64_t *yshape,
                    const int64_t *xshape) {
    ShapeLayout L;
    L.ndim = ndim;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) { L.shape[d] = yshape[d]; L.a[d] = xshape[d]; L.b[d] = xs[d]; n *= yshape[d]; }
    if (n == 0) return 0;
    if (esize == 8) repeat_kernel<int64_t>((int64_t *)y, (const int64_t *)x, n, L);
    else repeat_kernel<float>((float *)y, (const float *)x, n, L);
    return 0;
}

static int m_repeat_grad(int, float *dx, const float *g, int ndim, const int64_t *xshape, const int64_t *repeats) {
    ShapeLayout L;
    L.ndim = ndim;
    int64_t n = 1, tiles = 1, stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        L.shape[d] = xshape[d] * repeats[d]; L.a[d] = xshape[d]; L.b[d] = repeats[d]; L.c[d] = stride;
        stride *= L.shape[d];
        n *= xshape[d];
        tiles *= repeats[d];
    }
    if (n) repeat_grad_kernel(dx, g, n, tiles, L);
    return 0;
}

static int m_tri(int, void *y, const void *x, int esize, int64_t batch, int64_t rows, int64_t cols, int64_t k,
                 int upper) {
    const int64_t n = batch * rows * cols;
    if (n == 0) return 0;
    if (esize == 8) tri_kernel<int64_t>((int64_t *)y, (const int64_t *)x, n, rows, cols, k, upper);
    else tri_kernel<float>((float *)y, (const float *)x, n, rows, cols, k, upper);
    return 0;
}

static int m_sort(int, float *y, int64_t *idx, const float *x, int64_t O, int64_t n, int64_t I, int64_t m,
                  int descending) {
    const int64_t lines = O * I;
    if (lines == 0 || m == 0) return 0;
    const int64_t P = sort_padded(n);
    const unsigned blocks = few_blocks(lines);
    uint64_t *scratch = P > SORT_SHARED ? (uint64_t *)malloc((size_t)(blocks * P) * sizeof(uint64_t)) : NULL;
    const int threads = sort_threads(P) < 128 ? sort_threads(P) : 128;
    run_grid(blocks, threads, [&] { sort_lines_kernel(y, idx, x, O, n, I, m, descending, P, scratch); });
    free(scratch);
    return 0;
}

static int m_sort_grad(int, float *dx, const float *g, const int64_t *idx, int64_t O, int64_t n, int64_t I,
                       int64_t m) {
    if (O * n * I == 0) return 0;
    if (m < n) memset(dx, 0, (size_t)(O * n * I) * sizeof(float));
    sort_grad_kernel(dx, g, idx, O, n, I, m);
    return 0;
}

static int m_int_reduce(int, int op, int64_t *y, int64_t *idx, const int64_t *x, int64_t O, int64_t R, int64_t I) {
    const int64_t lines = O * I;
    if (lines == 0) return 0;
    if (int_reduce_by_block(lines, R, I))
        run_grid(few_blocks(lines), 64, [&] { int_reduce_block_kernel(op, y, idx, x, O, R, I); });
    else int_reduce_thread_kernel(op, y, idx, x, O, R, I);
    return 0;
}

EMULATED_BACKEND_ADD(shape) {
    b->copy_into = m_copy_into;
    b->pad = m_pad;
    b->pad_mode = m_pad_mode;
    b->pad_mode_grad = m_pad_mode_grad;
    b->repeat = m_repeat;
    b->repeat_grad = m_repeat_grad;
    b->tri = m_tri;
    b->sort = m_sort;
    b->sort_grad = m_sort_grad;
    b->int_reduce = m_int_reduce;
}
