/* linalg.cu: the GPU side of core/ops/linalg.c: batched gemm through cuBLAS.
 *
 * Our convention is row-major: C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C,
 * ld* = the row stride of each matrix as stored, stride_* = elements between
 * batch entries. cuBLAS is column-major, and a row-major matrix with leading
 * dimension ld is, read column-major, its transpose with the same ld. So we ask
 * cuBLAS for C^T[n,m] = op(B)^T op(A)^T: swap A with B and m with n, keep each
 * transpose flag as it is.
 *
 * The linalg family's rows (core/ops/linalg.h) sit above the host-side line and reach cuBLAS through
 * the backend's `gemm` (fnn_cuda_gemm below; the host emulation puts its own loop there), the bias
 * through its `binary`, linear's activation and its gradient through the map row's kernels
 * (map.cu, by the FNN_MAP_* codes of the elementwise formulas).
 *
 * defines: fnn_cuda_linalg_rows, fnn_cuda_gemm_prec, fnn_cuda_gemm, fnn_cuda_gemm_bf16 */
#include "common.cuh"
#include "ops/elementwise_ops.h"
#include "ops/linalg.h"

static const fnn_backend *backend_of(int ordinal) { return fnn_backend_for(fnn_make_device(FNN_DEVICE_CUDA, ordinal)); }

/* zero, then the batched GEMM; a batched call may not write one C twice at once, so a sum over the
 * batch (sc 0) accumulates one matrix at a time */
static int gemm_rows(int ordinal, const fnn_mm_args *a) {
    const fnn_backend *be = backend_of(ordinal);
    if (a->zero && a->zero_n > 0) FNN_TRY(be->fill(ordinal, a->zero, a->zero_n, 0.0f));
    const int step = a->sc == 0 && a->batch > 1 ? 1 : (int)a->batch;
    for (int64_t i = 0; i < a->batch; i += step)
        FNN_TRY(fnn_cuda_gemm_prec(FNN_PREC_MATMUL, ordinal, a->ta, a->tb, (int)a->m, (int)a->n, (int)a->k, 1.0f,
                                   a->a + i * a->sa, (int)a->lda, a->sa, a->b + i * a->sb, (int)a->ldb, a->sb, a->beta,
                                   a->c + i * a->sc, (int)a->ldc, a->sc, step));
    return FNN_STATUS_OK;
}

/* linear's forward: the GEMM, then the bias added to every row through the elementwise add, then the
 * activation (y = act(z), in place when y is C) by its map formula */
static int linear_forward(int ordinal, const fnn_mm_args *a) {
    FNN_TRY(gemm_rows(ordinal, a));
    int64_t shape[2] = {a->m, a->n}, cs[2] = {a->ldc, 1}, bs[2] = {0, a->bias_stride};
    if (a->bias) FNN_TRY(fnn_cuda_binary(ordinal, FNN_BIN_ADD, a->c, a->c, cs, a->bias, bs, 2, shape));
    if (!a->act) return FNN_STATUS_OK;
    int64_t st[3][FNN_MAX_DIMS] = {{a->ldc, 1}, {a->ldc, 1}, {a->ldc, 1}};
    const float *x[3] = {a->c, a->c, a->c};
    return fnn_cuda_map(ordinal, a->act == FNN_ACT_RELU ? FNN_MAP_relu_f : FNN_MAP_gelu_f, a->y, x, &st[0][0], 2, shape,
                        0, 0);
}

/* linear's backward: its GEMMs; or, with an activation, dz = g act'(saved) by the map formula (g at its
 * strides), then db = dz summed over its rows; or db = g summed over its rows, by the device's own sum */
static int linear_backward(int ordinal, const fnn_mm_args *a) {
    if (!a->db && !a->dz) return gemm_rows(ordinal, a);
    if (a->dz) {
        int64_t shape[2] = {a->m, a->n}, st[3][FNN_MAX_DIMS] = {{a->g_s0, a->g_s1}, {a->n, 1}, {a->g_s0, a->g_s1}};
        const float *x[3] = {a->gp, a->saved, a->gp};
        FNN_TRY(fnn_cuda_map(ordinal, a->act == FNN_ACT_RELU ? FNN_MAP_relu_g : FNN_MAP_gelu_g, (float *)fnn_data(a->dz),
                             x, &st[0][0], 2, shape, 0, 0));
        if (!a->db) return FNN_STATUS_OK;
    }
    int64_t shape2[2] = {-1, a->n};
    fnn_tensor g2;
    fnn_tensor_init(&g2);
    int rc = fnn_reshape(&g2, a->dz ? a->dz : a->g, 2, shape2);
    if (!rc) rc = fnn_sum(a->db, &g2, 0, 0);
    fnn_tensor_clear(&g2);
    return rc;
}

int fnn_cuda_gemm_prec(int family, int ordinal, int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, int64_t stride_a, const float *b, int ldb, int64_t stride_b,
                       float beta, float *c, int ldc, int64_t stride_c, int batch) {
    return fnn_prec_bf16(family)
        ? fnn_cuda_gemm_bf16(ordinal, trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
                             ldc, stride_c, batch)
        : fnn_cuda_gemm(ordinal, trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                        stride_c, batch);
}

extern "C" const fnn_mm_row fnn_cuda_linalg_rows[] = {
    {"matmul", gemm_rows, gemm_rows},
    {"bmm", gemm_rows, gemm_rows},
    {"outer", gemm_rows, gemm_rows},
    {"linear", linear_forward, linear_backward},
    {NULL, NULL, NULL},
};

/* ==== host side: cuBLAS. spec/gpu/emulate.sh compiles everything above this line for the host;
 * emulated_backend.cpp's m_gemm stands in for fnn_cuda_gemm ==== */

/* one cuBLAS handle per (host thread, device), made on first use: a handle's workspace must not be
 * shared by two threads at once, and each thread launches onto its own stream (cuda/ is built with
 * --default-stream per-thread), which cublasSetStream(cudaStreamPerThread) gives cuBLAS too. Never
 * destroyed, since tearing down at process exit races the driver's own shutdown (a thread's handles
 * outlive it: a few KiB each). */
static thread_local cublasHandle_t handles[256];

static int handle_for(int ordinal, cublasHandle_t *out) {
    if (!handles[ordinal]) {
        /* cublasCreate binds the handle to the current device, set by the caller */
        cublasHandle_t h = NULL;
        FNN_CUDA_CHECK("matmul", cublasCreate(&h));
        cublasStatus_t s = cublasSetStream(h, cudaStreamPerThread);
        if (s != CUBLAS_STATUS_SUCCESS) {
            cublasDestroy(h);
            return fnn_cuda_status("matmul", "cublasSetStream", s, __FILE__, __LINE__);
        }
        handles[ordinal] = h;
    }
    *out = handles[ordinal];
    return FNN_STATUS_OK;
}

int fnn_cuda_gemm(int ordinal, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                  int lda, int64_t stride_a, const float *b, int ldb, int64_t stride_b, float beta, float *c,
                  int ldc, int64_t stride_c, int batch) {
    FNN_ASSERT(ordinal >= 0 && ordinal < 256 && m >= 0 && n >= 0 && k >= 0 && batch >= 0);
    if (m == 0 || n == 0 || batch == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("matmul", ordinal));
    cublasHandle_t h = NULL;
    FNN_TRY(handle_for(ordinal, &h));
    if (k == 0) {
        /* nothing of A or B is read: C = beta C. Give cuBLAS the smallest legal
         * leading dims, since a caller's ld for an empty matrix may be 0. */
        lda = trans_a ? (m > 1 ? m : 1) : 1;
        ldb = trans_b ? 1 : (n > 1 ? n : 1);
    }
    cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    FNN_CUDA_CHECK("matmul", cublasSgemmStridedBatched(h, op_b, op_a, n, m, k, &alpha, b, ldb, stride_b, a, lda,
                                                      stride_a, &beta, c, ldc, stride_c, batch));
    return FNN_STATUS_OK;
}

/* a matrix operand's elements from its first to its last, over the batch (gaps between rows included:
 * converting them costs little and keeps one contiguous cast) */
static int64_t span_of(int rows, int cols, int ld, int64_t stride, int batch) {
    if (rows == 0 || cols == 0) return 0;
    return (int64_t)(rows - 1) * ld + cols + (stride > 0 ? (int64_t)(batch - 1) * stride : 0);
}

int fnn_cuda_gemm_bf16(int ordinal, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                       int lda, int64_t stride_a, const float *b, int ldb, int64_t stride_b, float beta, float *c,
                       int ldc, int64_t stride_c, int batch) {
    FNN_ASSERT(ordinal >= 0 && ordinal < 256 && m >= 0 && n >= 0 && k >= 0 && batch >= 0);
    if (m == 0 || n == 0 || batch == 0 || k == 0)   /* nothing of A or B to round */
        return fnn_cuda_gemm(ordinal, trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                             stride_c, batch);
    FNN_TRY(fnn_cuda_use_device("matmul", ordinal));
    cublasHandle_t h = NULL;
    FNN_TRY(handle_for(ordinal, &h));
    const int device = fnn_make_device(FNN_DEVICE_CUDA, ordinal);
    const int64_t na = span_of(trans_a ? k : m, trans_a ? m : k, lda, stride_a, batch);
    const int64_t nb = span_of(trans_b ? n : k, trans_b ? k : n, ldb, stride_b, batch);
    const int64_t bytes = (na + nb) * (int64_t)sizeof(uint16_t);
    uint16_t *a16 = (uint16_t *)fnn_alloc(device, bytes);   /* the caching allocator, counted */
    if (!a16) return FNN_STATUS_OOM;
    uint16_t *b16 = a16 + na;
    int rc = fnn_cuda_cast(ordinal, FNN_DTYPE_BFLOAT16, FNN_DTYPE_FLOAT32, a16, a, na);
    if (!rc) rc = fnn_cuda_cast(ordinal, FNN_DTYPE_BFLOAT16, FNN_DTYPE_FLOAT32, b16, b, nb);
    if (!rc) {
        cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasStatus_t s = cublasGemmStridedBatchedEx(h, op_b, op_a, n, m, k, &alpha, b16, CUDA_R_16BF, ldb, stride_b,
                                                      a16, CUDA_R_16BF, lda, stride_a, &beta, c, CUDA_R_32F, ldc,
                                                      stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (s != CUBLAS_STATUS_SUCCESS)
            rc = fnn_cuda_status("matmul", "cublasGemmStridedBatchedEx", s, __FILE__, __LINE__);
    }
    fnn_free(device, a16, bytes);   /* stream-ordered: reused only by later work on this thread's stream */
    return rc;
}
