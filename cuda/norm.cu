/* norm.cu: layer_norm, rms_norm and group_norm of core/ops/norm.c on the GPU, forward beside backward,
 * over contiguous rows x [rows, n] (group_norm: a row per (sample, group), n = its channels' elements,
 * the affine per channel). A block per row (blocks stride over the rows): each thread sums its
 * strided share of the row in double, then warp shuffles and one shared slot per warp give every
 * thread the row's sums. layer_norm takes two passes (the mean, then the centred squares: stable for
 * large means, as on the CPU); rms_norm one. dw and db: partial sums over chunks of rows, then a
 * thread per column adding the chunks in order, so they are deterministic. Statistics as the CPU saves them: layer [rows, 2] (mean,
 * rstd), rms [rows] (rstd). The family's rows (core/ops/norm.h) sit at the end; batch_norm's are
 * cuda/batch_norm.cu's.
 *
 * defines: fnn_cuda_norm_rows */
#include "common.cuh"
#include "ops/norm.h"

enum { FNN_NRM_LAYER, FNN_NRM_RMS };   /* the row kernels' two statistics */

#include "block_sum.cuh"

/* y = (x - mean) rstd w + b (layer) or x rstd w (rms); w, b may be NULL; stats may be NULL. res
 * (add_layer_norm; else NULL): sum = x + res is written first and normalized in x's place (each
 * thread reads back only the elements it wrote) */
__global__ void __launch_bounds__(256) norm_rows_kernel(int op, float *y, float *stats, const float *x,
                                                        const float *w, const float *b, const float *res, float *sum,
                                                        int64_t rows, int64_t n, double eps, int64_t G, int64_t S) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {   /* uniform per block: the syncs are safe */
        const float *xi = x + r * n;
        float *yi = y + r * n;
        if (res) {
            float *si = sum + r * n;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) si[j] = xi[j] + res[r * n + j];
            xi = si;
        }
        double s = 0, unused = 0;
        float m = 0, rs;
        if (op == FNN_NRM_LAYER) {
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += xi[j];
            fnn_block_sum2(s, unused);
            const double mean = s / (double)n;
            double v = 0;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) { const double d = xi[j] - mean; v += d * d; }
            fnn_block_sum2(v, unused);
            m = (float)mean;
            rs = (float)(1.0 / sqrt(v / (double)n + eps));   /* biased variance, eps inside */
        } else {
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += (double)xi[j] * xi[j];
            fnn_block_sum2(s, unused);
            rs = (float)(1.0 / sqrt(s / (double)n + eps));
        }
        const int64_t a0 = (r % G) * n;   /* the affine index of element j: (a0 + j) / S */
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            float v = (xi[j] - m) * rs;
            if (w) v *= w[(a0 + j) / S];
            if (b) v += b[(a0 + j) / S];
            yi[j] = v;
        }
        if (stats && threadIdx.x == 0) {
            if (op == FNN_NRM_LAYER) { stats[2 * r] = m; stats[2 * r + 1] = rs; }
            else stats[r] = rs;
        }
    }
}

/* dx per row, with gw = g w and xhat = (x - mean) rstd:
 * layer dx = rstd (gw - mean(gw) - xhat mean(gw xhat)); rms dx = rstd gw - rstd^3 sum(gw x) / n x */
__global__ void __launch_bounds__(256) norm_grad_rows_kernel(int op, float *dx, const float *g, const float *x,
                                                             const float *w, const float *stats, int64_t rows,
                                                             int64_t n, int64_t G, int64_t S) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xi = x + r * n, *gi = g + r * n;
        float *di = dx + r * n;
        const float m = op == FNN_NRM_LAYER ? stats[2 * r] : 0.0f;
        const float rs = op == FNN_NRM_LAYER ? stats[2 * r + 1] : stats[r];
        const int64_t a0 = (r % G) * n;
        double s1 = 0, s2 = 0;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            const float gw = w ? gi[j] * w[(a0 + j) / S] : gi[j];
            s1 += gw;
            s2 += op == FNN_NRM_LAYER ? gw * ((xi[j] - m) * rs) : gw * xi[j];
        }
        fnn_block_sum2(s1, s2);
        if (op == FNN_NRM_LAYER) {
            const float c1 = (float)(s1 / (double)n), c2 = (float)(s2 / (double)n);
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                const float gw = w ? gi[j] * w[(a0 + j) / S] : gi[j];
                di[j] = rs * (gw - c1 - (xi[j] - m) * rs * c2);
            }
        } else {
            const float kx = (float)(-(double)rs * rs * rs * s2 / (double)n);
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                const float gw = w ? gi[j] * w[(a0 + j) / S] : gi[j];
                di[j] = rs * gw + kx * xi[j];
            }
        }
    }
}

/* dw_c = sum of g xhat, db_c = sum of g over the elements of affine channel c (either may be NULL),
 * over the N = rows / G samples and the S elements of c in each; x is [N, C, S] with C = G n / S
 * (layer_norm and rms_norm: G = S = 1, C = n). Two passes, so that a few hundred channels over
 * thousands of rows keep the GPU busy (a thread per channel walking every row would be one block):
 * part: a thread per (chunk k, channel c), neighbouring threads on neighbouring channels
 * (coalesced), sums samples [k chunk, (k + 1) chunk) in order into part[2 (k C + c) + {0, 1}];
 * sum: a thread per channel adds its chunks in order. Deterministic: the chunking depends only
 * on the sizes (norm_chunks). */
__global__ void norm_grad_part_kernel(int op, double *part, const float *g, const float *x, const float *stats,
                                      int64_t rows, int64_t n, int64_t G, int64_t S, int64_t chunk, int64_t chunks) {
    const int64_t C = G * n / S, N = rows / G;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < chunks * C; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = t / C, c = t % C, i1 = (k + 1) * chunk < N ? (k + 1) * chunk : N;
        double sw = 0, sb = 0;
        for (int64_t i = k * chunk; i < i1; i++) {
            const int64_t e0 = (i * C + c) * S, r = e0 / n;   /* one channel's S elements lie in one row */
            const float m = op == FNN_NRM_LAYER ? stats[2 * r] : 0.0f;
            const float rs = op == FNN_NRM_LAYER ? stats[2 * r + 1] : stats[r];
            for (int64_t e = e0; e < e0 + S; e++) {
                const float gv = g[e];
                sw += gv * ((x[e] - m) * rs);
                sb += gv;
            }
        }
        part[2 * t] = sw;
        part[2 * t + 1] = sb;
    }
}
__global__ void norm_grad_sum_kernel(float *dw, float *db, const double *part, int64_t C, int64_t chunks) {
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
        double sw = 0, sb = 0;
        for (int64_t k = 0; k < chunks; k++) {
            sw += part[2 * (k * C + c)];
            sb += part[2 * (k * C + c) + 1];
        }
        if (dw) dw[c] = (float)sw;
        if (db) db[c] = (float)sb;
    }
}
/* chunks of samples for the two passes: about 16384 (chunk, channel) threads, at least one sample
 * per chunk, one chunk when there are no samples */
static inline void norm_chunks(int64_t N, int64_t C, int64_t *chunk, int64_t *chunks) {
    int64_t want = C >= 16384 ? 1 : 16384 / C;
    if (want > N) want = N;
    if (want < 1) want = 1;
    *chunk = N > 0 ? (N + want - 1) / want : 1;
    *chunks = N > 0 ? (N + *chunk - 1) / *chunk : 1;
}

/* threads per row's block: a multiple of 32 up to 256 */
static inline int norm_threads(int64_t n) { return n >= 256 ? 256 : n <= 32 ? 32 : (int)((n + 31) / 32 * 32); }

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
static const char *norm_name(int op) { return op == FNN_NRM_LAYER ? "layer_norm" : "rms_norm"; }
static unsigned norm_blocks(int64_t rows) { return (unsigned)(rows < (1 << 20) ? rows : (1 << 20)); }

static int norm_launch(int ordinal, int op, float *y, float *stats, const float *x, const float *w, const float *b,
                       const float *res, float *sum, int64_t rows, int64_t n, double eps, int64_t groups,
                       int64_t spatial) {
    if (rows == 0 || n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(norm_name(op), ordinal));
    FNN_LAUNCH_BLOCKS(norm_rows_kernel, norm_blocks(rows), norm_threads(n), op, y, stats, x, w, b, res, sum, rows, n,
                      eps, groups, spatial);
    FNN_CUDA_CHECK(norm_name(op), cudaGetLastError());
    return FNN_STATUS_OK;
}

static int norm_grad_launch(int ordinal, int op, float *dx, float *dw, float *db, const float *g, const float *x,
                            const float *w, const float *stats, int64_t rows, int64_t n, int64_t groups,
                            int64_t spatial) {
    if (n == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device(norm_name(op), ordinal));
    if (dx && rows > 0)
        FNN_LAUNCH_BLOCKS(norm_grad_rows_kernel, norm_blocks(rows), norm_threads(n), op, dx, g, x, w, stats, rows, n,
                          groups, spatial);
    FNN_CUDA_CHECK(norm_name(op), cudaGetLastError());
    if (dw || db) {   /* no rows: zeros */
        const int64_t C = groups * n / spatial;
        int64_t chunk, chunks;
        norm_chunks(rows / groups, C, &chunk, &chunks);
        const int64_t bytes = 2 * chunks * C * (int64_t)sizeof(double);
        const int dev = fnn_make_device(FNN_DEVICE_CUDA, ordinal);
        double *part = (double *)fnn_alloc(dev, bytes);
        if (!part) return fnn_last_status();
        FNN_LAUNCH(norm_grad_part_kernel, fnn_cuda_blocks(chunks * C), FNN_CUDA_THREADS, op, part, g, x, stats, rows, n,
                   groups, spatial, chunk, chunks);
        FNN_LAUNCH(norm_grad_sum_kernel, fnn_cuda_blocks(C), FNN_CUDA_THREADS, dw, db, part, C, chunks);
        cudaError_t e = cudaGetLastError();
        fnn_free(dev, part, bytes);   /* this thread's stream runs the kernels before any reuse */
        FNN_CUDA_CHECK(norm_name(op), e);
    }
    return FNN_STATUS_OK;
}

/* ---- the family's rows (core/ops/norm.h): x seen as [N, C, S] in `groups` groups, so a row of the
 * kernels above is a (sample, group) run of C / groups S elements (layer_norm, rms_norm: groups = S = 1) ---- */
template <int OP> static int norm_forward(int ordinal, const fnn_nrm_args *a) {
    return norm_launch(ordinal, OP, a->y, a->stats, a->x, a->w, a->b, a->res, a->sum, a->N * a->groups,
                       a->C / a->groups * a->S, a->eps, a->groups, a->S > 0 ? a->S : 1);
}
template <int OP> static int norm_backward(int ordinal, const fnn_nrm_args *a) {
    if (a->S == 0) {   /* group_norm of [N, C, 0]: nothing summed, dw and db zeros (the sum pass over no chunks) */
        if (a->C == 0 || (!a->dw && !a->db)) return FNN_STATUS_OK;
        FNN_TRY(fnn_cuda_use_device(norm_name(OP), ordinal));
        FNN_LAUNCH(norm_grad_sum_kernel, fnn_cuda_blocks(a->C), FNN_CUDA_THREADS, a->dw, a->db, (const double *)NULL,
                   a->C, (int64_t)0);
        FNN_CUDA_CHECK(norm_name(OP), cudaGetLastError());
        return FNN_STATUS_OK;
    }
    return norm_grad_launch(ordinal, OP, a->y, a->dw, a->db, a->g, a->x, a->w, a->stats, a->N * a->groups,
                            a->C / a->groups * a->S, a->groups, a->S);
}
extern "C" const fnn_nrm_row fnn_cuda_norm_rows[] = {
    {"layer_norm", norm_forward<FNN_NRM_LAYER>, norm_backward<FNN_NRM_LAYER>},
    {"batch_norm", fnn_cuda_batch_norm_row, fnn_cuda_batch_norm_grad_row},   /* cuda/batch_norm.cu */
    {"group_norm", norm_forward<FNN_NRM_LAYER>, norm_backward<FNN_NRM_LAYER>},   /* layer_norm's, per (sample, group) */
    {"rms_norm", norm_forward<FNN_NRM_RMS>, norm_backward<FNN_NRM_RMS>},
    {NULL, NULL, NULL},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
