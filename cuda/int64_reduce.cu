/* int64_reduce.cu: the int64 reductions of core/ops/reduction.c on the GPU (sum_i64, extreme_i64):
 * over contiguous x [O, R, I] -> y [O, I]: FNN_RED_SUM (wrapping, as the CPU's unsigned adds),
 * FNN_RED_MAX / FNN_RED_MIN with the 1-based position of the first extreme (idx, may be NULL).
 * Integer sums wrap and the extremes break ties by the lower position, so every combine order gives
 * the CPU's result exactly. Two modes as cuda/reduction.cu: a block of 256 per line (grid-stride
 * over lines, a shared-memory tree) when lines are few or I = 1 (strided reads would not coalesce
 * anyway), else a thread per line (neighbouring threads read neighbouring i: coalesced).
 *
 * defines: fnn_cuda_int_reduce */
#include "common.cuh"

enum { INT_RED_THREADS = 256 };

/* (v, p) is a better extreme than (w, q): p < 0 is "nothing yet"; ties go to the lower position */
__device__ __forceinline__ bool int_better(int op, int64_t v, int64_t p, int64_t w, int64_t q) {
    if (p < 0) return false;
    if (q < 0) return true;
    if (v == w) return p < q;
    return op == FNN_RED_MAX ? v > w : v < w;
}

/* one line's partial over r = r0, r0 + step, ...: the sum, or the first extreme and its position */
__device__ __forceinline__ void int_line_part(int op, const int64_t *xl, int64_t R, int64_t I, int64_t r0,
                                              int64_t step, int64_t *v, int64_t *p) {
    if (op == FNN_RED_SUM) {
        uint64_t acc = 0;
        for (int64_t r = r0; r < R; r += step) acc += (uint64_t)xl[r * I];
        *v = (int64_t)acc;
        *p = 0;
        return;
    }
    int64_t best = 0, at = -1;
    for (int64_t r = r0; r < R; r += step) {
        const int64_t e = xl[r * I];
        if (at < 0 || (op == FNN_RED_MAX ? e > best : e < best)) { best = e; at = r; }
    }
    *v = best;
    *p = at;
}

/* a block (INT_RED_THREADS, a power of two) per line */
__global__ void __launch_bounds__(INT_RED_THREADS)
int_reduce_block_kernel(int op, int64_t *y, int64_t *idx, const int64_t *x, int64_t O, int64_t R, int64_t I) {
    __shared__ int64_t sv[INT_RED_THREADS], sp[INT_RED_THREADS];
    const unsigned t = threadIdx.x;
    for (int64_t line = blockIdx.x; line < O * I; line += gridDim.x) {
        const int64_t o = line / I, i = line - o * I;
        int64_t v, p;
        int_line_part(op, x + o * R * I + i, R, I, t, blockDim.x, &v, &p);
        sv[t] = v;
        sp[t] = p;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
            if (t < s) {
                if (op == FNN_RED_SUM) sv[t] = (int64_t)((uint64_t)sv[t] + (uint64_t)sv[t + s]);
                else if (int_better(op, sv[t + s], sp[t + s], sv[t], sp[t])) { sv[t] = sv[t + s]; sp[t] = sp[t + s]; }
            }
            __syncthreads();
        }
        if (t == 0) {
            y[line] = sv[0];
            if (idx) idx[line] = sp[0] + 1;
        }
        __syncthreads();   /* the next line reuses sv, sp */
    }
}

/* a thread per line */
__global__ void int_reduce_thread_kernel(int op, int64_t *y, int64_t *idx, const int64_t *x, int64_t O, int64_t R,
                                         int64_t I) {
    for (int64_t line = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; line < O * I;
         line += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = line / I, i = line - o * I;
        int64_t v, p;
        int_line_part(op, x + o * R * I + i, R, I, 0, 1, &v, &p);
        y[line] = v;
        if (idx) idx[line] = p + 1;
    }
}

/* block mode for few long lines, or lines along the contiguous dim */
static inline bool int_reduce_by_block(int64_t lines, int64_t R, int64_t I) {
    return I == 1 || (lines < 2048 && R >= 64);
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
int fnn_cuda_int_reduce(int ordinal, int op, int64_t *y, int64_t *idx, const int64_t *x, int64_t O, int64_t R,
                        int64_t I) {
    FNN_ASSERT(op == FNN_RED_SUM || op == FNN_RED_MAX || op == FNN_RED_MIN);
    const int64_t lines = O * I;
    if (lines == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("int64 reduction", ordinal));
    if (int_reduce_by_block(lines, R, I)) {
        const unsigned blocks = (unsigned)(lines < (1 << 20) ? lines : (1 << 20));
        FNN_LAUNCH_BLOCKS(int_reduce_block_kernel, blocks, INT_RED_THREADS, op, y, idx, x, O, R, I);
    } else {
        FNN_LAUNCH(int_reduce_thread_kernel, fnn_cuda_blocks(lines), FNN_CUDA_THREADS, op, y, idx, x, O, R, I);
    }
    FNN_CUDA_CHECK("int64 reduction", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
