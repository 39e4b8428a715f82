/* rnn.cu: the pointwise halves of core/ops/rnn.c on the GPU, forward beside backward: the fused
 * lstm_cell, one time step of the sequence layers (rnn_tanh, lstm, gru) and its backward, and a
 * 4-d strided copy (any strides, negative too) that puts a sequence in processing order and back,
 * moves states and writes the KV cache (cuda/attention.cu's users). The core's host loop over time
 * calls them through the family's rows (end of the launchers), its GEMMs, fills and bias sums
 * through the rows' moves onto the backend's shared primitives; every kernel here is elementwise
 * over the batch rows and hidden units (a thread per (row, unit), grid-stride, coalesced along
 * the unit), reading the gates as the CPU lays them out. Activations: sigmoid as the CPU's
 * (exp of -|x|, so no overflow) through __expf, tanh through double tanh (seq_tanh).
 *
 * defines: fnn_cuda_rnn_rows (the family's rows, core/ops/rnn.h), fnn_cuda_seq_copy */
#include "common.cuh"
#include "ops/rnn.h"

__device__ __forceinline__ float seq_sigmoid(float x) {
    const float e = __expf(-fabsf(x));
    return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

/* tanh in double: under --use_fast_math nvcc turns tanhf into tanh.approx.f32 (MUFU.TANH, relative
 * error up to 2^-11), far outside the parity tolerances; the double path is exact to the float and
 * untouched by fast math (these kernels are memory bound, so its cost does not show) */
__device__ __forceinline__ float seq_tanh(float x) { return (float)tanh((double)x); }

/* the cells' arithmetic per unit, shared with core/ops/rnn.c, over the activations above */
#define FNN_CELL __device__ __forceinline__
#define FNN_CELL_SIGMOID seq_sigmoid
#define FNN_CELL_TANH seq_tanh
#include "ops/rnn_cells.h"

/* lstm_cell: z [N, 4H], c [N, H] -> out [N, 2H] = (h, c'), acts [N, 5H] or NULL */
template <typename I>
__global__ void lstm_cell_kernel(float *out, float *acts, const float *z, const float *c, I N, I H) {
    const I n = N * H;
    for (I e = blockIdx.x * (I)blockDim.x + threadIdx.x; e < n; e += (I)gridDim.x * blockDim.x) {
        const I r = e / H, j = e - r * H;
        fnn_cell_lstm(z + r * 4 * H + j, c[e], H, out + r * 2 * H + j, out + r * 2 * H + H + j,
                      acts ? acts + r * 5 * H + j : NULL);
    }
}

/* g [N, 2H] = (dh, dc') -> dz [N, 4H], dc [N, H] */
template <typename I>
__global__ void lstm_cell_grad_kernel(float *dz, float *dc, const float *g, const float *acts, const float *c, I N,
                                      I H) {
    const I n = N * H;
    for (I e = blockIdx.x * (I)blockDim.x + threadIdx.x; e < n; e += (I)gridDim.x * blockDim.x) {
        const I r = e / H, j = e - r * H;
        float d = g[r * 2 * H + H + j];
        fnn_cell_lstm_grad(acts + r * 5 * H + j, c[e], g[r * 2 * H + j], &d, H, dz + r * 4 * H + j);
        dc[e] = d;
    }
}

/* one step of a sequence layer, as rnn.c's rnn_step_rows: z [N, GH] (x W_ih^T + biases, + h W_hh^T
 * for tanh and lstm), gru: hz [N, 3H] = h W_hh^T and b_hh [3H] or NULL; h [N, H] (and c for lstm)
 * the new state, acts the saved activations (lstm: 5H per row or NULL, gru: 4H), out row r at
 * out + r out_ld gets h too */
template <typename I>
__global__ void rnn_step_kernel(int kind, I N, I H, const float *z, const float *hz, const float *b_hh,
                                const float *h_prev, const float *c_prev, float *h, float *c, float *acts, float *out,
                                I out_ld) {
    const I n = N * H;
    for (I e = blockIdx.x * (I)blockDim.x + threadIdx.x; e < n; e += (I)gridDim.x * blockDim.x) {
        const I r = e / H, j = e - r * H;
        float hv;
        if (kind == FNN_RNN_LSTM) {
            fnn_cell_lstm(z + r * 4 * H + j, c_prev[e], H, &hv, &c[e], acts ? acts + r * 5 * H + j : NULL);
        } else if (kind == FNN_RNN_GRU) {
            hv = fnn_cell_gru(z + r * 3 * H + j, hz + r * 3 * H + j, b_hh ? b_hh + j : NULL, h_prev[e], H,
                              acts + r * 4 * H + j);
        } else {
            hv = seq_tanh(z[e]);
        }
        h[e] = hv;
        out[r * out_ld + j] = hv;
    }
}

/* its backward, as rnn.c's rnn_back_rows: g row r at g + r g_ld (this step's output gradient), dh
 * [N, H] from the next step; dz [N, GH] the pre-activation gradients (gru: of the x side, dhz of the
 * h side), lstm: dc in place (this cell's in, the previous out), gru: dh_direct = z (g + dh) */
template <typename I>
__global__ void rnn_step_grad_kernel(int kind, I N, I H, const float *g, I g_ld, const float *dh, const float *acts,
                                     const float *c_prev, const float *h, const float *h_prev, float *dz, float *dhz,
                                     float *dc, float *dh_direct) {
    const I n = N * H;
    for (I e = blockIdx.x * (I)blockDim.x + threadIdx.x; e < n; e += (I)gridDim.x * blockDim.x) {
        const I r = e / H, j = e - r * H;
        const float d = g[r * g_ld + j] + dh[e];
        if (kind == FNN_RNN_LSTM) {
            float dcv = dc[e];
            fnn_cell_lstm_grad(acts + r * 5 * H + j, c_prev[e], d, &dcv, H, dz + r * 4 * H + j);
            dc[e] = dcv;
        } else if (kind == FNN_RNN_GRU) {
            dh_direct[e] = fnn_cell_gru_grad(acts + r * 4 * H + j, h_prev[e], d, H, dz + r * 3 * H + j,
                                             dhz + r * 3 * H + j);
        } else {
            dz[e] = fnn_cell_tanh_grad(h[e], d);
        }
    }
}

/* the 4-d copy's geometry, by value (kernel parameter space) */
struct SeqCopy { int64_t shape[4], ds[4], ss[4]; };

/* dst[i . ds] = src[i . ss] over every index i of shape (row-major) */
template <typename I> __global__ void seq_copy_kernel(float *dst, const float *src, I n, SeqCopy L) {
    for (I e = blockIdx.x * (I)blockDim.x + threadIdx.x; e < n; e += (I)gridDim.x * blockDim.x) {
        I rem = e;
        int64_t doff = 0, soff = 0;
        for (int d = 3; d >= 0; d--) {
            const I size = (I)L.shape[d], k = rem % size;
            rem /= size;
            doff += (int64_t)k * L.ds[d];
            soff += (int64_t)k * L.ss[d];
        }
        dst[doff] = src[soff];
    }
}

/* 32-bit indices when every index a kernel forms stays below 2^30 (room for the grid step) */
static inline bool seq_small(int64_t n) { return n < ((int64_t)1 << 30); }

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */

static int launch_lstm_cell(int ordinal, float *out, float *acts, const float *z, const float *c, int64_t N,
                            int64_t H) {
    if (N * H == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("lstm_cell", ordinal));
    const unsigned blocks = fnn_cuda_blocks(N * H);
    if (seq_small(N * 5 * H))
        FNN_LAUNCH(lstm_cell_kernel<int32_t>, blocks, FNN_CUDA_THREADS, out, acts, z, c, (int32_t)N, (int32_t)H);
    else
        FNN_LAUNCH(lstm_cell_kernel<int64_t>, blocks, FNN_CUDA_THREADS, out, acts, z, c, N, H);
    FNN_CUDA_CHECK("lstm_cell", cudaGetLastError());
    return FNN_STATUS_OK;
}

static int launch_lstm_cell_grad(int ordinal, float *dz, float *dc, const float *g, const float *acts,
                                 const float *c, int64_t N, int64_t H) {
    if (N * H == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("lstm_cell", ordinal));
    const unsigned blocks = fnn_cuda_blocks(N * H);
    if (seq_small(N * 5 * H))
        FNN_LAUNCH(lstm_cell_grad_kernel<int32_t>, blocks, FNN_CUDA_THREADS, dz, dc, g, acts, c, (int32_t)N,
                   (int32_t)H);
    else
        FNN_LAUNCH(lstm_cell_grad_kernel<int64_t>, blocks, FNN_CUDA_THREADS, dz, dc, g, acts, c, N, H);
    FNN_CUDA_CHECK("lstm_cell", cudaGetLastError());
    return FNN_STATUS_OK;
}

static const char *seq_name(int kind) {
    return kind == FNN_RNN_LSTM ? "lstm" : kind == FNN_RNN_GRU ? "gru" : "rnn_tanh";
}

static int launch_rnn_step(int ordinal, int kind, int64_t N, int64_t H, const float *z, const float *hz,
                           const float *b_hh, const float *h_prev, const float *c_prev, float *h, float *c, float *acts,
                           float *out, int64_t out_ld) {
    if (N * H == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(seq_name(kind), ordinal));
    const unsigned blocks = fnn_cuda_blocks(N * H);
    if (seq_small(N * 5 * H) && seq_small(N * out_ld))
        FNN_LAUNCH(rnn_step_kernel<int32_t>, blocks, FNN_CUDA_THREADS, kind, (int32_t)N, (int32_t)H, z, hz, b_hh,
                   h_prev, c_prev, h, c, acts, out, (int32_t)out_ld);
    else
        FNN_LAUNCH(rnn_step_kernel<int64_t>, blocks, FNN_CUDA_THREADS, kind, N, H, z, hz, b_hh, h_prev, c_prev, h, c,
                   acts, out, out_ld);
    FNN_CUDA_CHECK(seq_name(kind), cudaGetLastError());
    return FNN_STATUS_OK;
}

static int launch_rnn_step_grad(int ordinal, int kind, int64_t N, int64_t H, const float *g, int64_t g_ld,
                                const float *dh, const float *acts, const float *c_prev, const float *h,
                                const float *h_prev, float *dz, float *dhz, float *dc, float *dh_direct) {
    if (N * H == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(seq_name(kind), ordinal));
    const unsigned blocks = fnn_cuda_blocks(N * H);
    if (seq_small(N * 5 * H) && seq_small(N * g_ld))
        FNN_LAUNCH(rnn_step_grad_kernel<int32_t>, blocks, FNN_CUDA_THREADS, kind, (int32_t)N, (int32_t)H, g,
                   (int32_t)g_ld, dh, acts, c_prev, h, h_prev, dz, dhz, dc, dh_direct);
    else
        FNN_LAUNCH(rnn_step_grad_kernel<int64_t>, blocks, FNN_CUDA_THREADS, kind, N, H, g, g_ld, dh, acts, c_prev, h,
                   h_prev, dz, dhz, dc, dh_direct);
    FNN_CUDA_CHECK(seq_name(kind), cudaGetLastError());
    return FNN_STATUS_OK;
}

int fnn_cuda_seq_copy(int ordinal, float *dst, const int64_t *dstride, const float *src, const int64_t *sstride,
                      const int64_t *shape) {
    SeqCopy L;
    int64_t n = 1;
    for (int d = 0; d < 4; d++) {
        FNN_ASSERT(shape[d] >= 0);
        L.shape[d] = shape[d];
        L.ds[d] = dstride[d];
        L.ss[d] = sstride[d];
        n *= shape[d];
    }
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("copy", ordinal));
    if (seq_small(n))
        FNN_LAUNCH(seq_copy_kernel<int32_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, dst, src, (int32_t)n, L);
    else
        FNN_LAUNCH(seq_copy_kernel<int64_t>, fnn_cuda_blocks(n), FNN_CUDA_THREADS, dst, src, n, L);
    FNN_CUDA_CHECK("copy", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ---- the rows (core/ops/rnn.h): the launchers above, and the sequence loop's moves on the backend's
 * shared primitives (gemm, fill, binary, reduce), reached through its table as the core does ---- */
static int rnn_lstm_cell(int ordinal, const fnn_rnn_args *a) {
    return launch_lstm_cell(ordinal, a->out, a->acts, a->z, a->c_prev, a->N, a->H);
}
static int rnn_lstm_cell_grad(int ordinal, const fnn_rnn_args *a) {
    return launch_lstm_cell_grad(ordinal, a->dz, a->dc, a->g, a->acts, a->c_prev, a->N, a->H);
}
static int rnn_step(int ordinal, const fnn_rnn_args *a) {
    return launch_rnn_step(ordinal, a->kind, a->N, a->H, a->z, a->hz, a->b_hh, a->h_prev, a->c_prev, a->h, a->c,
                             a->acts, a->out, a->out_ld);
}
static int rnn_step_grad(int ordinal, const fnn_rnn_args *a) {
    return launch_rnn_step_grad(ordinal, a->kind, a->N, a->H, a->g, a->g_ld, a->dh, a->acts, a->c_prev, a->h,
                                  a->h_prev, a->dz, a->dhz, a->dc, a->dh_direct);
}

static const fnn_backend *seq_backend(int ordinal) {
    return fnn_backend_for(fnn_make_device(FNN_DEVICE_CUDA, ordinal));
}

static int seq_fill_rows(int ordinal, float *y, int64_t rows, int64_t cols, const float *b1, const float *b2) {
    const fnn_backend *be = seq_backend(ordinal);
    const int64_t bstride[2] = {0, 1}, shape[2] = {rows, cols};
    if (b1 && b2) return fnn_cuda_binary(ordinal, FNN_BIN_ADD, y, b1, bstride, b2, bstride, 2, shape);
    if (!b1 && !b2) return be->fill(ordinal, y, rows * cols, 0.0f);
    const int64_t cshape[4] = {1, rows, cols, 1}, ds[4] = {0, cols, 1, 0}, ss[4] = {0, 0, 1, 0};
    return fnn_cuda_seq_copy(ordinal, y, ds, b1 ? b1 : b2, ss, cshape);
}

/* exact unused: no move here rounds in place (round_bf16 NULL), cuBLAS's bf16 GEMM converts its operands */
static int seq_gemm(int ordinal, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c, int64_t ldc, unsigned exact) {
    (void)exact;
    return fnn_cuda_gemm_prec(FNN_PREC_RNN, ordinal, ta, tb, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, 0, b, (int)ldb,
                              0, beta, c, (int)ldc, 0, 1);
}

/* the reduction's SUM over [1, rows, cols] */
static int seq_colsum(int ordinal, float *out, const float *m, int64_t rows, int64_t cols) {
    return fnn_cuda_reduce(ordinal, FNN_RED_SUM, out, NULL, m, 1, rows, cols, 1.0, 0);
}

/* no packed weights (cuBLAS reads W_hh as it is), no blocks of rows (every step's launches cover the batch)
 * and no rounding in place */
static const fnn_rnn_moves seq_moves = {fnn_cuda_seq_copy, seq_fill_rows, seq_gemm, seq_colsum,
                                        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

extern "C" const fnn_rnn_row fnn_cuda_rnn_rows[] = {
    {"lstm_cell", rnn_lstm_cell, rnn_lstm_cell_grad, NULL},
    {"rnn_tanh", rnn_step, rnn_step_grad, &seq_moves},
    {"lstm", rnn_step, rnn_step_grad, &seq_moves},
    {"gru", rnn_step, rnn_step_grad, &seq_moves},
    {NULL, NULL, NULL, NULL},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
