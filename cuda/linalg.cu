/* linalg.cu: the GPU side of core/ops/linalg.c: batched gemm through cuBLAS.
 *
 * Our convention is row-major: C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C,
 * ld* = the row stride of each matrix as stored, stride_* = elements between
 * batch entries. cuBLAS is column-major, and a row-major matrix with leading
 * dimension ld is, read column-major, its transpose with the same ld. So we ask
 * cuBLAS for C^T[n,m] = op(B)^T op(A)^T: swap A with B and m with n, keep each
 * transpose flag as it is.
 *
 * defines: fnn_cuda_gemm */
#include "common.cuh"

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
