/* rnn.c: recurrent kernels. lstm_cell: the fused pointwise part of one LSTM step (one pass and
 * one node instead of ~15 ops), the GEMMs left to the caller. rnn_tanh, lstm, gru: one layer over
 * a whole sequence as one node, forward and backprop through time written here once, for every
 * backend, through the family's rows (rnn.h; the CPU's at the end of this file) (the layers of
 * nn.SimpleRNN, nn.LSTM and nn.GRU). */
#include "rnn.h"
#include "../fastmath.h"
#define FNN_CELL static inline __attribute__((always_inline))
#define FNN_CELL_SIGMOID fnn_sigmoidf
#define FNN_CELL_TANH fnn_tanhf
#include "rnn_cells.h"   /* the cells' arithmetic per unit, shared with cuda/rnn.cu */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ================= lstm_cell: z [N, 4H] (gates i, f, g, o), c [N, H] -> [N, 2H] = (h, c') ================= */
/* i, f, o = sigmoid, g = tanh; c' = f c + i g; h = o tanh(c') (rnn_cells.h). The activations are saved
 * by the forward as acts [N, 5H] = (i, f, g, o, tanh(c')) so the backward is plain arithmetic. */

/* compute-bound (five sigmoid/tanh per element): built for x86-64-v4 (AVX-512) and v3 (AVX2 + FMA) too,
 * picked at load time, as elementwise.c's unary rows are (lstm_cell's 32 x 256 forward on one thread,
 * Emerald Rapids: 53 us as v3, 39 us as v4) */

/* one row: z [4H], c [H] -> h [H], cn [H]; acts [5H] too when not NULL. Separate restrict
 * pointers and one loop per case so GCC vectorizes (it gives up on a row loop nest) */
FNN_CLONES_V4 static void lstm_fwd_row(const float *restrict z, const float *restrict c, float *restrict h,
                                    float *restrict cn, float *restrict acts, int64_t H) {
    if (acts) for (int64_t j = 0; j < H; j++) fnn_cell_lstm(z + j, c[j], H, &h[j], &cn[j], acts + j);
    else for (int64_t j = 0; j < H; j++) fnn_cell_lstm(z + j, c[j], H, &h[j], &cn[j], NULL);
}

/* rows lo..hi-1 (a: fnn_rnn_args, contiguous z [N, 4H], c_prev [N, H] -> out [N, 2H], acts [N, 5H] or NULL) */
static void lstm_fwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const fnn_rnn_args *a = ctx;
    const int64_t H = a->H;
    for (int64_t r = lo; r < hi; r++)
        lstm_fwd_row(a->z + r * 4 * H, a->c_prev + r * H, a->out + r * 2 * H, a->out + r * 2 * H + H,
                     a->acts ? a->acts + r * 5 * H : NULL, H);
}

/* backward of one row: g = (dh, dc') [2H] -> dz [4H], dc [H] (rnn_cells.h) */
FNN_CLONES_V4 static void lstm_bwd_row(const float *restrict g, const float *restrict acts, const float *restrict c,
                                    float *restrict dz, float *restrict dc, int64_t H) {
    for (int64_t j = 0; j < H; j++) {
        float d = g[H + j];
        fnn_cell_lstm_grad(acts + j, c[j], g[j], &d, H, dz + j);
        dc[j] = d;
    }
}

/* rows lo..hi-1 (g [N, 2H], acts [N, 5H], c_prev [N, H] -> dz [N, 4H], dc [N, H]) */
static void lstm_bwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const fnn_rnn_args *a = ctx;
    const int64_t H = a->H;
    for (int64_t r = lo; r < hi; r++)
        lstm_bwd_row(a->g + r * 2 * H, a->acts + r * 5 * H, a->c_prev + r * H, a->dz + r * 4 * H, a->dc + r * H, H);
}

/* transcendentals make an element cost several memory-bound ones; 32 puts lstm_seq's step cells
 * (32 x 256) on both threads, which pays now that OpenMP workers spin briefly between loops:
 * lstm_seq 20.9-22.5 against 22.0-28.9 ms/step at 16 (three interleaved pairs) */
enum { LSTM_WORK_PER_ELEM = 32 };

/* the row for op in device's backend, refusing the op by name when there is none (fwd: forward, else
 * backward); seq: a sequence layer's, which needs its moves too */
static const fnn_rnn_row *rnn_row(const char *op, int device, bool fwd, bool seq) {
    const fnn_rnn_row *row = fnn_rnn_row_for(device, op);
    if (row && (fwd ? row->forward : row->backward) && (row->moves || !seq)) return row;
    FNN_ROW_REFUSED(op, device, !fwd);
    return NULL;
}

/* the CPU's cell: rows split over the threads */
static int cpu_lstm_cell(int ordinal, const fnn_rnn_args *a) {
    (void)ordinal;
    fnn_parallel_for(a->N, fnn_threads_for(a->N * a->H * LSTM_WORK_PER_ELEM), lstm_fwd_rows, (void *)a);
    return FNN_STATUS_OK;
}
static int cpu_lstm_cell_grad(int ordinal, const fnn_rnn_args *a) {
    (void)ordinal;
    fnn_parallel_for(a->N, fnn_threads_for(a->N * a->H * 8), lstm_bwd_rows, (void *)a);
    return FNN_STATUS_OK;
}

/* saved[0] = acts [N, 5H], saved[1] = c [N, H] (the caller's, maybe strided) */
static int lstm_cell_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *acts = &n->saved[0], *c = &n->saved[1];
    const fnn_rnn_row *row = rnn_row("lstm_cell", c->device, false, false);
    if (!row) return fnn_last_status();
    int64_t N = c->shape[0], H = c->shape[1];
    int64_t zshape[2] = {N, 4 * H};
    fnn_tensor gt, ct;
    int rc, rc2;
    const float *gp = fnn_contiguous_data(g, &gt, &rc);   /* g may be expanded (a sum's backward) */
    const float *cp = fnn_contiguous_data(c, &ct, &rc2);
    if (!rc) rc = rc2;
    /* both gradients come out of one pass; the one no input needs is dropped after */
    if (!rc) rc = fnn_new_output(&din[0], c->device, 2, zshape);
    if (!rc) rc = fnn_new_output(&din[1], c->device, 2, c->shape);
    if (!rc) {
        const fnn_rnn_args a = {.N = N, .H = H, .g = gp, .acts = fnn_data(acts), .c_prev = cp,
                                .dz = fnn_data(&din[0]), .dc = fnn_data(&din[1])};
        rc = row->backward(fnn_device_ordinal(c->device), &a);
    }
    fnn_tensor_clear(&gt);
    fnn_tensor_clear(&ct);
    if (rc || !n->next[0]) fnn_tensor_clear(&din[0]);
    if (rc || !n->next[1]) fnn_tensor_clear(&din[1]);
    return rc;
}
static const fnn_op_def LSTM_CELL = {.info = {.name = "lstm_cell", .family = "rnn", .differentiable = 1},
    .backward = lstm_cell_rule};

int fnn_lstm_cell(fnn_tensor *out, const fnn_tensor *z, const fnn_tensor *c) {
    FNN_TRY(fnn_check_input("lstm_cell", z));
    FNN_TRY(fnn_check_input("lstm_cell", c));
    FNN_TRY(fnn_check_same_device("lstm_cell", z, c));
    FNN_CHECK(z->ndim == 2 && c->ndim == 2 && z->shape[0] == c->shape[0] && z->shape[1] == 4 * c->shape[1],
              FNN_STATUS_SHAPE,
              "lstm_cell: gates %s and cell %s do not agree (expected gates [N,4H] and cell [N,H])",
              fnn_shape_of(z).s, fnn_shape_of(c).s);
    const fnn_rnn_row *row = rnn_row("lstm_cell", z->device, true, false);
    if (!row) return fnn_last_status();
    int64_t N = c->shape[0], H = c->shape[1];
    int64_t oshape[2] = {N, 2 * H}, ashape[2] = {N, 5 * H};
    const fnn_tensor *ins[2] = {z, c};
    bool grad = fnn_needs_node(2, ins);
    fnn_tensor zt, ct, acts;
    fnn_tensor_init(&acts);
    int rc, rc2;
    const float *zp = fnn_contiguous_data(z, &zt, &rc);
    const float *cp = fnn_contiguous_data(c, &ct, &rc2);
    if (!rc) rc = rc2;
    if (!rc && grad) rc = fnn_new_output(&acts, z->device, 2, ashape);
    if (!rc) rc = fnn_new_output(out, z->device, 2, oshape);
    if (!rc) {
        const fnn_rnn_args a = {.N = N, .H = H, .z = zp, .c_prev = cp, .out = fnn_data(out),
                                .acts = grad ? fnn_data(&acts) : NULL};
        rc = row->forward(fnn_device_ordinal(z->device), &a);
    }
    fnn_tensor_clear(&zt);
    fnn_tensor_clear(&ct);
    if (!rc && grad) {
        fnn_node *n = fnn_attach_node(out, &LSTM_CELL, 2, ins);
        if (!n || fnn_save(n, 0, &acts) || fnn_save(n, 1, c)) rc = fnn_last_status();
    }
    fnn_tensor_clear(&acts);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= whole-sequence layers: rnn_tanh, lstm, gru ================= */
/* One layer over a whole sequence as ONE node (PyTorch's CPU path, without its per-step graph):
 *   x [N, T, I] batch first; h0, c0 [N, H] or NULL (zeros); w_ih [G H, I], w_hh [G H, H],
 *   b_ih, b_hh [G H] or NULL; G = 1 (tanh), 4 (lstm: i, f, g, o), 3 (gru: r, z, n).
 *   reverse: step s reads x[:, T-1-s] (Keras go_backwards); outputs stay in processing order.
 *   out [N, T, H] (lstm [N, T+1, H]: row T is the final cell state); out[:, T-1] is the final h.
 * Forward: the input projection of all steps is one GEMM [T N, I] x [I, G H]; each step is one
 * GEMM [N, H] x [H, G H] plus a fused cell pass. Everything is time-major inside (in processing
 * order), so a step's rows are one contiguous block. Backward (BPTT, below): per step the cell's
 * backward and one GEMM for dh; then the weight gradients as two GEMMs over all steps at once. */
static const int64_t RNN_GATES[3] = {1, 4, 3};
static const char *const RNN_OP[3] = {"rnn_tanh", "lstm", "gru"};
enum { IN_X, IN_H0, IN_C0, IN_WIH, IN_WHH, IN_BIH, IN_BHH, IN_COUNT };

/* the workspace saved for backward, offsets in floats: xs [T N, I] (x in processing order),
 * hs [T+1, N, H] (hs[0] = h0, hs[s+1] = h after step s), lstm: cs [T+1, N, H] and acts
 * [T N, 5H] (i, f, g, o, tanh c); gru: acts [T N, 4H] (r, z, n, W_hn h + b_hn) */
typedef struct { int64_t xs, hs, cs, acts, total; } rnn_layout;
static rnn_layout rnn_layout_of(int kind, int64_t N, int64_t T, int64_t I, int64_t H) {
    rnn_layout l;
    int64_t P = T * N, state = (T + 1) * N * H;
    l.xs = 0;
    l.hs = P * I;
    l.cs = l.hs + state;
    l.acts = kind == FNN_RNN_LSTM ? l.cs + state : l.cs;
    l.total = l.acts + (kind == FNN_RNN_LSTM ? P * 5 * H : kind == FNN_RNN_GRU ? P * 4 * H : 0);
    return l;
}

enum { RNN_STEP_ROWS = 256, RNN_PACK_MIN_STEPS = 4 };
/* row-major C[m, n] = op(A) op(B) + beta C (beta 0 or 1); empty sizes need no call */
static void rnn_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                     const float *b, int64_t ldb, float beta, float *c, int64_t ldc, unsigned exact) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        if (beta == 0.0f) for (int64_t r = 0; r < m; r++) memset(c + r * ldc, 0, sizeof(float) * (size_t)n);
        return;
    }
    /* the forward's per-step products (a batch of rows against W_hh^T) in oneDNN's matmul primitive,
     * which beat dnnl_sgemm there (lstm_seq's 32 x 256 x 1024 step: 0.076-0.082 against 0.109 ms at
     * 2 threads); the backward's steps (dZ W_hh: 0.109-0.116 against 0.101-0.105) and the all-steps
     * products (input projection, weight gradients) stay with the GEMM */
    if (m <= RNN_STEP_ROWS && !ta && tb &&
        fnn_gemm_fused_prec(FNN_PREC_RNN, exact, ta, tb, m, n, k, a, lda, b, ldb, NULL, beta, c, ldc))
        return;
    fnn_gemm_prec_exact(FNN_PREC_RNN, exact, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

/* ---- the cells' forward: one step, rows lo..hi-1 of the batch (fnn_rnn_args) ---- */
FNN_CLONES_V4 static void gru_fwd_row(const float *restrict x3, const float *restrict h3, const float *restrict bh,
                                   const float *restrict hp, float *restrict h, float *restrict acts, int64_t H) {
    for (int64_t j = 0; j < H; j++) h[j] = fnn_cell_gru(x3 + j, h3 + j, bh ? bh + j : NULL, hp[j], H, acts + j);
}

FNN_CLONES_V4 static void tanh_fwd_row(const float *restrict z, float *restrict h, int64_t H) {
    for (int64_t j = 0; j < H; j++) h[j] = fnn_tanhf(z[j]);
}

static void rnn_step_rows(void *ctx, int64_t lo, int64_t hi) {
    const fnn_rnn_args *a = ctx;
    const int64_t H = a->H;
    for (int64_t r = lo; r < hi; r++) {
        float *h = a->h + r * H;
        if (a->kind == FNN_RNN_LSTM)
            lstm_fwd_row(a->z + r * 4 * H, a->c_prev + r * H, h, a->c + r * H, a->acts ? a->acts + r * 5 * H : NULL, H);
        else if (a->kind == FNN_RNN_GRU)
            gru_fwd_row(a->z + r * 3 * H, a->hz + r * 3 * H, a->b_hh, a->h_prev + r * H, h, a->acts + r * 4 * H, H);
        else
            tanh_fwd_row(a->z + r * H, h, H);
        memcpy(a->out + r * a->out_ld, h, sizeof(float) * (size_t)H);
    }
}

/* ---- the cells' backward: one step, rows lo..hi-1 (fnn_rnn_args); the gradient at h is this step's
 * output gradient g plus dhn from the next step (rnn_cells.h) ---- */
FNN_CLONES_V4 static void lstm_back_row(const float *restrict g, const float *restrict dhn, const float *restrict acts,
                                     const float *restrict c, float *restrict dz, float *restrict dc, int64_t H) {
    for (int64_t j = 0; j < H; j++) {
        float d = dc[j];
        fnn_cell_lstm_grad(acts + j, c[j], g[j] + dhn[j], &d, H, dz + j);
        dc[j] = d;
    }
}

FNN_CLONES_V4 static void gru_back_row(const float *restrict g, const float *restrict dhn, const float *restrict acts,
                                    const float *restrict hp, float *restrict dx3, float *restrict dh3,
                                    float *restrict dhd, int64_t H) {
    for (int64_t j = 0; j < H; j++) dhd[j] = fnn_cell_gru_grad(acts + j, hp[j], g[j] + dhn[j], H, dx3 + j, dh3 + j);
}

FNN_CLONES_V4 static void tanh_back_row(const float *restrict g, const float *restrict dhn, const float *restrict h,
                                     float *restrict dz, int64_t H) {
    for (int64_t j = 0; j < H; j++) dz[j] = fnn_cell_tanh_grad(h[j], g[j] + dhn[j]);
}

static void rnn_back_rows(void *ctx, int64_t lo, int64_t hi) {
    const fnn_rnn_args *a = ctx;
    const int64_t H = a->H;
    for (int64_t r = lo; r < hi; r++) {
        const float *g = a->g + r * a->g_ld, *dh = a->dh + r * H;
        if (a->kind == FNN_RNN_LSTM)
            lstm_back_row(g, dh, a->acts + r * 5 * H, a->c_prev + r * H, a->dz + r * 4 * H, a->dc + r * H, H);
        else if (a->kind == FNN_RNN_GRU)
            gru_back_row(g, dh, a->acts + r * 4 * H, a->h_prev + r * H, a->dz + r * 3 * H, a->dhz + r * 3 * H,
                         a->dh_direct + r * H, H);
        else
            tanh_back_row(g, dh, a->h + r * H, a->dz + r * H, H);
    }
}

/* ---- the CPU's rows for the sequence layers: one step's cell over the threads, and the loop's moves ---- */
/* inside a block of rows (run_blocks) the cell runs on the block's thread */
static int cell_threads(const fnn_rnn_args *a) {
    return fnn_in_parallel() ? 1 : fnn_threads_for(a->N * a->H * LSTM_WORK_PER_ELEM);
}
static int cpu_rnn_step(int ordinal, const fnn_rnn_args *a) {
    (void)ordinal;
    fnn_parallel_for(a->N, cell_threads(a), rnn_step_rows, (void *)a);
    return FNN_STATUS_OK;
}
static int cpu_rnn_step_grad(int ordinal, const fnn_rnn_args *a) {
    (void)ordinal;
    fnn_parallel_for(a->N, cell_threads(a), rnn_back_rows, (void *)a);
    return FNN_STATUS_OK;
}

/* runs along dim 2 that are dense on both sides (every copy the loop makes) go by memcpy */
static int cpu_copy(int ordinal, float *dst, const int64_t *ds, const float *src, const int64_t *ss,
                    const int64_t *shape) {
    (void)ordinal;
    const bool run = shape[3] == 1 && ds[2] == 1 && ss[2] == 1;
    for (int64_t i = 0; i < shape[0]; i++)
        for (int64_t j = 0; j < shape[1]; j++) {
            float *d = dst + i * ds[0] + j * ds[1];
            const float *s = src + i * ss[0] + j * ss[1];
            if (run) {
                memcpy(d, s, sizeof(float) * (size_t)shape[2]);
                continue;
            }
            for (int64_t k = 0; k < shape[2]; k++)
                for (int64_t l = 0; l < shape[3]; l++) d[k * ds[2] + l * ds[3]] = s[k * ss[2] + l * ss[3]];
        }
    return FNN_STATUS_OK;
}

/* every row of y starts as b1 + b2: the first one summed, the rest copies of it (adding the biases
 * after the input projection's GEMM was a scalar pass over z, 5% of bench/lstm_seq: they and z may
 * alias as far as GCC knows); rows split over the pool (lstm_seq's z is 1600 x 1024: 6.5 MB) */
typedef struct { float *y; int64_t cols; bool zero; } fill_args;
static void fill_part(void *ctx, int64_t lo, int64_t hi) {
    const fill_args *f = ctx;
    if (f->zero) memset(f->y + lo * f->cols, 0, sizeof(float) * (size_t)((hi - lo) * f->cols));
    else for (int64_t r = lo < 1 ? 1 : lo; r < hi; r++) memcpy(f->y + r * f->cols, f->y, sizeof(float) * (size_t)f->cols);
}
static int cpu_fill_rows(int ordinal, float *y, int64_t rows, int64_t cols, const float *b1, const float *b2) {
    (void)ordinal;
    fill_args f = {y, cols, !b1 && !b2};
    if (!f.zero) for (int64_t j = 0; j < cols; j++) y[j] = (b1 ? b1[j] : 0.0f) + (b2 ? b2[j] : 0.0f);
    fnn_parallel_for(rows, fnn_threads_for(rows * cols), fill_part, &f);
    return FNN_STATUS_OK;
}

static int cpu_gemm(int ordinal, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c, int64_t ldc, unsigned exact) {
    (void)ordinal;
    rnn_gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc, exact);
    return FNN_STATUS_OK;
}

/* off the bf16 units every product under bf16 precision rounds its operands into copies: the backward's
 * dZ (lstm_seq: 1600 x 1024) is an operand of three (dW_ih, dW_hh, dx), rounded in place once instead
 * (lstm_seq under autocast: 14.3 -> 13.7 ms a step, medians of 5 interleaved pairs, Emerald Rapids) */
static bool cpu_round_bf16(int ordinal, float *x, int64_t n) {
    (void)ordinal;
    if (!fnn_prec_bf16(FNN_PREC_RNN) || fnn_bf16_native()) return false;
    fnn_round_bf16_matrix(x, x, 1, n, n);
    return true;
}

/* column sums of m [rows, cols] into out [cols]: blocks of columns over the pool, each summed down
 * every row (the bias gradients of lstm_seq: 1600 x 1024, serial 0.35-0.5 ms with the second thread idle) */
enum { COLSUM_BLOCK = 64 };
typedef struct { float *out; const float *m; int64_t rows, cols; } colsum_args;
static void colsum_part(void *ctx, int64_t lo, int64_t hi) {
    const colsum_args *a = ctx;
    const int64_t j0 = lo * COLSUM_BLOCK, j1 = hi * COLSUM_BLOCK < a->cols ? hi * COLSUM_BLOCK : a->cols;
    float *restrict out = a->out;
    memset(out + j0, 0, sizeof(float) * (size_t)(j1 - j0));
    for (int64_t r = 0; r < a->rows; r++) {
        const float *restrict row = a->m + r * a->cols;
        for (int64_t j = j0; j < j1; j++) out[j] += row[j];
    }
}
static int cpu_colsum(int ordinal, float *out, const float *m, int64_t rows, int64_t cols) {
    (void)ordinal;
    colsum_args a = {out, m, rows, cols};
    fnn_parallel_for((cols + COLSUM_BLOCK - 1) / COLSUM_BLOCK, fnn_threads_for(rows * cols), colsum_part, &a);
    return FNN_STATUS_OK;
}

/* W_hh for the steps' products, reordered once (blas.c's fnn_gemm_pack_b): a batch of rows against the
 * same weights at every step, where the plain matmul copied them into its layout each time. Under bf16
 * precision off the bf16 units W_hh is also rounded once, where rnn_gemm's emulated product rounded it at
 * every step (lstm_seq under autocast: 21.3 ms a step against 14.1 in float32); on the units the bf16
 * matmul takes the products as before */
static void *cpu_pack(int ordinal, bool tb, int64_t m, int64_t n, int64_t k, const float *b, int64_t ldb, int64_t lda,
                      float beta, int64_t ldc, bool serial) {
    (void)ordinal;
    const bool bf16 = fnn_prec_bf16(FNN_PREC_RNN);
    if (m > RNN_STEP_ROWS || (bf16 && fnn_bf16_native())) return NULL;
    return fnn_gemm_pack_b(tb, m, n, k, b, ldb, lda, beta, ldc, bf16, serial);
}
static bool cpu_gemm_packed(int ordinal, const void *packed, const float *a, float *c) {
    (void)ordinal;
    return fnn_gemm_packed(packed, a, c);
}
static void cpu_unpack(int ordinal, void *packed) {
    (void)ordinal;
    fnn_gemm_packed_free(packed);
}

/* a block of rows per thread: each thread's rows run every step, product and cell, with no barrier
 * between steps where the step-by-step loop entered two parallel regions a step (the product's and
 * the cell's); from RNN_BLOCK_ROWS rows a block, so that a block's product stays efficient */
enum { RNN_BLOCK_ROWS = 8 };
static int64_t cpu_row_blocks(int ordinal, int64_t rows) {
    (void)ordinal;
    if (fnn_in_parallel()) return 1;
    int64_t blocks = fnn_get_num_threads();
    while (blocks > 1 && rows / blocks < RNN_BLOCK_ROWS) blocks--;
    return blocks;
}
typedef struct {
    int64_t blocks, rows;
    int (*fn)(void *ctx, int64_t r0, int64_t r1);
    void *ctx;
    int *rc;
} block_job;
static void block_range(void *ctx, int64_t lo, int64_t hi) {
    const block_job *j = ctx;
    for (int64_t b = lo; b < hi; b++) j->rc[b] = j->fn(j->ctx, b * j->rows / j->blocks, (b + 1) * j->rows / j->blocks);
}
/* the CPU's moves never fail, so no block leaves an error message on its worker thread */
static int cpu_run_blocks(int ordinal, int64_t blocks, int64_t rows, int (*fn)(void *ctx, int64_t r0, int64_t r1),
                          void *ctx) {
    (void)ordinal;
    int *rc = calloc((size_t)blocks, sizeof *rc);
    if (!rc) return FNN_FAIL(FNN_STATUS_OOM, "rnn: out of memory for %lld blocks of rows", (long long)blocks);
    block_job j = {blocks, rows, fn, ctx, rc};
    fnn_parallel_team(blocks, (int)blocks, block_range, &j);
    int first = FNN_STATUS_OK;
    for (int64_t b = 0; b < blocks && !first; b++) first = rc[b];
    free(rc);
    return first;
}

static const fnn_rnn_moves cpu_moves = {cpu_copy, cpu_fill_rows, cpu_gemm, cpu_colsum, cpu_pack, cpu_gemm_packed,
                                        cpu_unpack, cpu_row_blocks, cpu_run_blocks, cpu_round_bf16};

/* ---- the loop's moves through a row, on any backend ---- */
typedef struct {
    const fnn_rnn_moves *mv;
    int ord;
} rnn_side;

/* dst [rows, cols] (row stride dld) = src [rows, cols] (row stride sld) */
static int side_rows(const rnn_side *d, float *dst, int64_t dld, const float *src, int64_t sld, int64_t rows,
                     int64_t cols) {
    const int64_t shape[4] = {1, rows, cols, 1}, ds[4] = {0, dld, 1, 0}, ss[4] = {0, sld, 1, 0};
    return d->mv->copy(d->ord, dst, ds, src, ss, shape);
}

/* row-major C[m, n] = op(A) op(B) + beta C; exact as the moves' gemm */
static int side_gemm(const rnn_side *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                     int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc, unsigned exact) {
    return d->mv->gemm(d->ord, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc, exact);
}

/* a loop's per-step product C [m, n] = A [m, k] op(B) + beta C, the same B at every step: B prepared once
 * where the backend can (moves->pack) and the loop has enough steps to repay it (the CPU's reorder
 * costs about one product), else B itself */
typedef struct {
    const rnn_side *d;
    void *packed[2];      /* B prepared for products of m[0] and m[1] rows (a block's floor and ceiling) */
    int64_t m[2];
    bool tb;
    int64_t n, k, ldb, lda, ldc;
    const float *b;
    float beta;
} rnn_product;

static void step_product_free(rnn_product *p) {
    for (int i = 0; i < 2; i++) {
        if (p->packed[i]) p->d->mv->unpack(p->d->ord, p->packed[i]);
        p->packed[i] = NULL;
    }
}
/* the products of `blocks` blocks of `rows` rows (blocks 1: all rows, on the backend's pool; more: each
 * block's on its thread, serial). false: blocks > 1 could not be prepared, and nothing was (the caller
 * then runs one block) */
static bool step_product(rnn_product *p, const rnn_side *d, int64_t steps, int64_t blocks, int64_t rows, bool tb,
                         int64_t n, int64_t k, const float *b, int64_t ldb, int64_t lda, float beta, int64_t ldc) {
    *p = (rnn_product){d, {NULL, NULL}, {rows / blocks, (rows + blocks - 1) / blocks}, tb, n, k, ldb, lda, ldc, b, beta};
    if (steps < RNN_PACK_MIN_STEPS || !d->mv->pack) return blocks == 1;
    for (int i = 0; i < (p->m[1] != p->m[0] ? 2 : 1); i++) {
        p->packed[i] = d->mv->pack(d->ord, tb, p->m[i], n, k, b, ldb, lda, beta, ldc, blocks > 1);
        if (!p->packed[i] && blocks > 1) { step_product_free(p); return false; }
    }
    return true;
}
/* C = A op(B) + beta C for m rows */
static int step_product_run(const rnn_product *p, int64_t m, const float *a, float *c) {
    const void *packed = m == p->m[0] ? p->packed[0] : m == p->m[1] ? p->packed[1] : NULL;
    if (packed && p->d->mv->gemm_packed(p->d->ord, packed, a, c)) return FNN_STATUS_OK;
    return side_gemm(p->d, false, p->tb, m, p->n, p->k, a, p->lda, p->b, p->ldb, p->beta, c, p->ldc, 0u);
}

/* how many blocks of rows a loop of `steps` steps runs in, with its product p prepared for them */
static int64_t plan_blocks(rnn_product *p, const rnn_side *d, int64_t steps, int64_t rows, bool tb, int64_t n,
                           int64_t k, const float *b, int64_t ldb, int64_t lda, float beta, int64_t ldc) {
    int64_t blocks = d->mv->row_blocks && d->mv->run_blocks ? d->mv->row_blocks(d->ord, rows) : 1;
    if (blocks > 1 && step_product(p, d, steps, blocks, rows, tb, n, k, b, ldb, lda, beta, ldc)) return blocks;
    step_product(p, d, steps, 1, rows, tb, n, k, b, ldb, lda, beta, ldc);
    return 1;
}
/* fn over the blocks: on the backend's threads, or one call for all rows */
static int run_blocks(const rnn_side *d, int64_t blocks, int64_t rows, int (*fn)(void *ctx, int64_t r0, int64_t r1),
                      void *ctx) {
    return blocks > 1 ? d->mv->run_blocks(d->ord, blocks, rows, fn, ctx) : fn(ctx, 0, rows);
}

/* an RNN layer's node: which cell (RNN_*), the sizes and the direction */
typedef struct {
    int64_t N, T, I, H;   /* batch, steps, input and hidden sizes */
    int kind;
    bool reverse;
} rnn_attrs;

/* the backward's steps for rows r0..r1-1 of the batch (all of them, or a block: run_blocks) */
typedef struct {
    const fnn_rnn_row *row;
    const rnn_side *d;
    int kind;
    bool want_h0;
    int64_t N, T, H, GH, rows_out;
    const float *gp, *cs;
    float *hs, *acts, *dZ, *dHZ, *dh, *dc, *dhd;
    rnn_product dh_step;
} rnn_bwd;

static int bwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const rnn_bwd *b = ctx;
    const int kind = b->kind;
    const int64_t N = b->N, H = b->H, GH = b->GH, m = r1 - r0, g_ld = b->rows_out * H;
    const int64_t act_w = kind == FNN_RNN_LSTM ? 5 * H : kind == FNN_RNN_GRU ? 4 * H : 0;
    const bool lstm = kind == FNN_RNN_LSTM;
    float *dh = b->dh + r0 * H;
    int rc = FNN_STATUS_OK;
    for (int64_t s = b->T - 1; s >= 0; s--) {
        const int64_t at = s * N + r0;   /* this block's first row of step s in the time-major buffers */
        const fnn_rnn_args a = {.kind = kind, .N = m, .H = H, .g = b->gp + r0 * g_ld + s * H, .g_ld = g_ld, .dh = dh,
                                .acts = act_w ? b->acts + at * act_w : NULL, .c_prev = lstm ? b->cs + at * H : NULL,
                                .h = b->hs + (at + N) * H, .h_prev = b->hs + at * H, .dz = b->dZ + at * GH,
                                .dhz = b->dHZ + at * GH, .dc = b->dc + r0 * H, .dh_direct = b->dhd + r0 * H};
        if ((rc = b->row->backward(b->d->ord, &a))) break;
        if (s == 0 && !b->want_h0) break;
        if (kind == FNN_RNN_GRU && (rc = side_rows(b->d, dh, H, b->dhd + r0 * H, H, m, H))) break;
        if ((rc = step_product_run(&b->dh_step, m, b->dHZ + at * GH, dh))) break;
    }
    return rc;
}

/* saved[0] = workspace, saved[1] = w_ih, saved[2] = w_hh; rnn_attrs. Per step the row's cell
 * backward and one GEMM for dh; then the weight gradients as GEMMs over all steps, the biases as
 * column sums and dx back from processing order to [N, T, I]. */
static int rnn_seq_rule(fnn_node *nd, const fnn_tensor *g, fnn_tensor *din) {
    const rnn_attrs *at = FNN_ATTRS(nd, rnn_attrs);
    const int kind = at->kind;
    const int64_t N = at->N, T = at->T, I = at->I, H = at->H;
    const bool reverse = at->reverse;
    const int64_t G = RNN_GATES[kind], GH = G * H, P = T * N, rows_out = kind == FNN_RNN_LSTM ? T + 1 : T;
    const int dev = nd->saved[0].device;
    const fnn_rnn_row *row = rnn_row(RNN_OP[kind], dev, false, true);
    if (!row) return fnn_last_status();
    const rnn_side d = {row->moves, fnn_device_ordinal(dev)};
    const rnn_layout L = rnn_layout_of(kind, N, T, I, H);
    float *ws = fnn_data(&nd->saved[0]);
    float *xs = ws + L.xs, *hs = ws + L.hs, *cs = ws + L.cs, *acts = ws + L.acts;
    fnn_tensor gt, wit, wht, dzt, dhzt, carry, tmp;
    fnn_tensor_init(&dzt); fnn_tensor_init(&dhzt); fnn_tensor_init(&carry); fnn_tensor_init(&tmp);
    int rc, rc2, rc3;
    const float *gp = fnn_contiguous_data(g, &gt, &rc);
    const float *w_ih = fnn_contiguous_data(&nd->saved[1], &wit, &rc2);
    if (!rc) rc = rc2;
    const float *w_hh = fnn_contiguous_data(&nd->saved[2], &wht, &rc3);
    if (!rc) rc = rc3;
    int64_t zshape[2] = {P, GH}, cshape[2] = {3, N * H};
    if (!rc) rc = fnn_new_output(&dzt, dev, 2, zshape);
    if (!rc && kind == FNN_RNN_GRU) rc = fnn_new_output(&dhzt, dev, 2, zshape);
    if (!rc) rc = fnn_new_output(&carry, dev, 2, cshape);   /* dh, dc (lstm) or dh_direct (gru), scratch */
    if (rc) goto done;
    float *dZ = fnn_data(&dzt), *dHZ = kind == FNN_RNN_GRU ? fnn_data(&dhzt) : dZ;
    float *dh = fnn_data(&carry), *dc = dh + N * H, *dhd = dc + N * H;
    rc = d.mv->fill_rows(d.ord, dh, N, H, NULL, NULL);
    /* the final cell's gradient: row T of the output */
    if (!rc && kind == FNN_RNN_LSTM) rc = side_rows(&d, dc, H, gp + T * H, rows_out * H, N, H);
    if (rc) goto done;
    const bool want_h0 = nd->next[IN_H0] != NULL;
    {
        /* dh_prev = dz W_hh (+ z dh for gru), at every step but the first unless h0 wants its gradient */
        rnn_bwd b = {.row = row, .d = &d, .kind = kind, .want_h0 = want_h0, .N = N, .T = T, .H = H, .GH = GH,
                     .rows_out = rows_out, .gp = gp, .cs = cs, .hs = hs, .acts = acts, .dZ = dZ, .dHZ = dHZ, .dh = dh,
                     .dc = dc, .dhd = dhd};
        const int64_t blocks = plan_blocks(&b.dh_step, &d, want_h0 ? T : T - 1, N, false, H, GH, w_hh, H, GH,
                                           kind == FNN_RNN_GRU ? 1.0f : 0.0f, H);
        rc = run_blocks(&d, blocks, N, bwd_rows, &b);
        step_product_free(&b.dh_step);
    }
    if (rc) goto done;
    int64_t hshape[2] = {N, H};
    if (want_h0) {
        if ((rc = fnn_new_output(&din[IN_H0], dev, 2, hshape))) goto done;
        if ((rc = side_rows(&d, fnn_data(&din[IN_H0]), H, dh, H, N, H))) goto done;
    }
    if (nd->next[IN_C0]) {
        if ((rc = fnn_new_output(&din[IN_C0], dev, 2, hshape))) goto done;
        if ((rc = side_rows(&d, fnn_data(&din[IN_C0]), H, dc, H, N, H))) goto done;
    }
    /* the biases first: their sums take dZ as it is, before it is rounded for the products below */
    for (int k = IN_BIH; k <= IN_BHH; k++) {
        if (!nd->next[k]) continue;
        int64_t bshape[1] = {GH};
        if ((rc = fnn_new_output(&din[k], dev, 1, bshape))) goto done;
        if (k == IN_BHH && dHZ == dZ && nd->next[IN_BIH])   /* both biases add to z: one sum serves */
            rc = side_rows(&d, fnn_data(&din[k]), GH, fnn_data(&din[IN_BIH]), GH, 1, GH);
        else
            rc = d.mv->colsum(d.ord, fnn_data(&din[k]), k == IN_BIH ? dZ : dHZ, P, GH);
        if (rc) goto done;
    }
    /* dZ read by two or three products (lstm: dW_ih, dW_hh, dx) is rounded once, in place, where each
     * would round a copy of its own (the same values: the bias sums above are done with it) */
    const int dz_uses = (nd->next[IN_WIH] != NULL) + (nd->next[IN_X] != NULL) + (dHZ == dZ && nd->next[IN_WHH] != NULL);
    const unsigned dze = dz_uses >= 2 && d.mv->round_bf16 && d.mv->round_bf16(d.ord, dZ, P * GH) ? 1u : 0u;
    if (nd->next[IN_WIH]) {   /* dW_ih = dZ^T xs: one GEMM over all steps */
        int64_t wshape[2] = {GH, I};
        if ((rc = fnn_new_output(&din[IN_WIH], dev, 2, wshape))) goto done;
        if ((rc = side_gemm(&d, true, false, GH, I, P, dZ, GH, xs, I, 0.0f, fnn_data(&din[IN_WIH]), I, dze))) goto done;
    }
    if (nd->next[IN_WHH]) {   /* dW_hh = dZh^T hs[0..T-1] */
        int64_t wshape[2] = {GH, H};
        if ((rc = fnn_new_output(&din[IN_WHH], dev, 2, wshape))) goto done;
        if ((rc = side_gemm(&d, true, false, GH, H, P, dHZ, GH, hs, H, 0.0f, fnn_data(&din[IN_WHH]), H,
                            dHZ == dZ ? dze : 0u)))
            goto done;
    }
    if (nd->next[IN_X]) {   /* dx = dZ W_ih, back from processing order to [N, T, I] */
        int64_t tshape[2] = {P, I}, xshape[3] = {N, T, I};
        if ((rc = fnn_new_output(&tmp, dev, 2, tshape))) goto done;
        if ((rc = fnn_new_output(&din[IN_X], dev, 3, xshape))) goto done;
        float *dxs = fnn_data(&tmp), *dx = fnn_data(&din[IN_X]);
        if ((rc = side_gemm(&d, false, false, P, I, GH, dZ, GH, w_ih, I, 0.0f, dxs, I, dze))) goto done;
        /* dx[n, t(s)] = dxs[s N + n], one strided copy */
        const int64_t shape[4] = {N, T, I, 1}, dst[4] = {T * I, I, 1, 0};
        const int64_t src[4] = {I, reverse ? -N * I : N * I, 1, 0};
        rc = d.mv->copy(d.ord, dx, dst, dxs + (reverse ? (T - 1) * N * I : 0), src, shape);
    }
done:
    fnn_tensor_clear(&gt); fnn_tensor_clear(&wit); fnn_tensor_clear(&wht);
    fnn_tensor_clear(&dzt); fnn_tensor_clear(&dhzt); fnn_tensor_clear(&carry); fnn_tensor_clear(&tmp);
    if (rc) for (int k = 0; k < IN_COUNT; k++) fnn_tensor_clear(&din[k]);
    return rc;
}
static const fnn_op_def RNN_TANH_SEQ = {.info = {.name = "rnn_tanh", .family = "rnn", .differentiable = 1},
    .backward = rnn_seq_rule};
static const fnn_op_def LSTM_SEQ = {.info = {.name = "lstm", .family = "rnn", .differentiable = 1},
    .backward = rnn_seq_rule};
static const fnn_op_def GRU_SEQ = {.info = {.name = "gru", .family = "rnn", .differentiable = 1},
    .backward = rnn_seq_rule};
static const fnn_op_def *const RNN_DEF[3] = {&RNN_TANH_SEQ, &LSTM_SEQ, &GRU_SEQ};

/* what the forward's steps read and write, set up once by rnn_seq: the workspace (xs, hs, cs, acts:
 * rnn_layout), z and hz (GRU), the output o, the contiguous weights, biases and states (NULL when
 * absent) */
typedef struct {
    int kind, reverse;
    bool grad;
    int64_t N, T, I, H, GH, P, rows_out;
    const fnn_tensor *x;
    const float *wi, *wh, *bi, *bh, *h0p, *c0p;
    float *xs, *hs, *cs, *acts, *z, *hz, *o;
} rnn_fwd;

/* the forward's steps for rows r0..r1-1 of the batch (all of them, or a block: run_blocks) */
typedef struct {
    const fnn_rnn_row *row;
    const rnn_side *d;
    const rnn_fwd *f;
    rnn_product h_step;
} rnn_fwd_loop;

static int fwd_rows(void *ctx, int64_t r0, int64_t r1) {
    const rnn_fwd_loop *l = ctx;
    const rnn_fwd *f = l->f;
    const int kind = f->kind;
    const int64_t N = f->N, H = f->H, GH = f->GH, m = r1 - r0, out_ld = f->rows_out * H;
    const int64_t act_w = kind == FNN_RNN_LSTM ? 5 * H : kind == FNN_RNN_GRU ? 4 * H : 0;
    const bool lstm = kind == FNN_RNN_LSTM;
    float *hz = f->hz ? f->hz + r0 * GH : NULL;
    int rc = FNN_STATUS_OK;
    for (int64_t s = 0; s < f->T && !rc; s++) {
        const int64_t at = s * N + r0;   /* this block's first row of step s in the time-major buffers */
        float *zs = f->z + at * GH;
        const float *hprev = f->hs + at * H;
        bool zero_h = s == 0 && !f->h0p;   /* h W_hh^T is zero: no GEMM */
        if (kind == FNN_RNN_GRU) {
            if (zero_h) rc = l->d->mv->fill_rows(l->d->ord, hz, m, GH, NULL, NULL);
            else rc = step_product_run(&l->h_step, m, hprev, hz);
        } else if (!zero_h) {
            rc = step_product_run(&l->h_step, m, hprev, zs);
        }
        const fnn_rnn_args a = {.kind = kind, .N = m, .H = H, .z = zs, .hz = hz, .b_hh = f->bh, .h_prev = hprev,
                                .c_prev = lstm ? f->cs + at * H : NULL, .h = f->hs + (at + N) * H,
                                .c = lstm ? f->cs + (at + N) * H : NULL,
                                .acts = act_w && (f->grad || !lstm) ? f->acts + at * act_w : NULL,
                                .out = f->o + r0 * out_ld + s * H, .out_ld = out_ld};
        if (!rc) rc = l->row->forward(l->d->ord, &a);
    }
    return rc;
}

/* the forward's steps through the row of x's backend (on a device: launches only, no host reads) */
static int rnn_fwd_steps(const fnn_rnn_row *row, int ord, const rnn_fwd *f) {
    const int kind = f->kind, reverse = f->reverse;
    const int64_t N = f->N, T = f->T, I = f->I, H = f->H, GH = f->GH, P = f->P, rows_out = f->rows_out;
    const fnn_tensor *x = f->x;
    const float *wi = f->wi, *wh = f->wh, *bi = f->bi, *bh = f->bh, *h0p = f->h0p, *c0p = f->c0p;
    float *xs = f->xs, *hs = f->hs, *cs = f->cs, *z = f->z, *o = f->o;
    const rnn_side d = {row->moves, ord};
    int rc = FNN_STATUS_OK;
    /* x in processing order, time-major, straight from x's strides: xs[s N + n] = x[n, t(s)] */
    const int64_t xshape[4] = {T, N, I, 1}, xd[4] = {N * I, I, 1, 0};
    const int64_t xsrc[4] = {reverse ? -x->stride[1] : x->stride[1], x->stride[0], x->stride[2], 0};
    if ((rc = d.mv->copy(ord, xs, xd, fnn_data(x) + (reverse ? (T - 1) * x->stride[1] : 0), xsrc, xshape)))
        return rc;
    /* the input projection of every step at once, with the biases the cell does not add itself:
     * every row of z starts as their sum and the GEMM adds onto it */
    const float *b2 = kind == FNN_RNN_GRU ? NULL : bh;
    if (bi || b2) rc = d.mv->fill_rows(ord, z, P, GH, bi, b2);
    if (!rc) rc = side_gemm(&d, false, true, P, GH, I, xs, I, wi, I, bi || b2 ? 1.0f : 0.0f, z, GH, 0u);
    if (!rc) rc = h0p ? side_rows(&d, hs, H, h0p, H, N, H) : d.mv->fill_rows(ord, hs, N, H, NULL, NULL);
    if (!rc && kind == FNN_RNN_LSTM)
        rc = c0p ? side_rows(&d, cs, H, c0p, H, N, H) : d.mv->fill_rows(ord, cs, N, H, NULL, NULL);
    if (rc) return rc;
    /* h W_hh^T at every step (but the first without h0): into hz for gru, onto z's row block otherwise */
    rnn_fwd_loop l = {.row = row, .d = &d, .f = f};
    const int64_t blocks = plan_blocks(&l.h_step, &d, h0p ? T : T - 1, N, true, GH, H, wh, H, H,
                                       kind == FNN_RNN_GRU ? 0.0f : 1.0f, GH);
    rc = run_blocks(&d, blocks, N, fwd_rows, &l);
    step_product_free(&l.h_step);
    if (!rc && kind == FNN_RNN_LSTM) rc = side_rows(&d, o + T * H, rows_out * H, cs + T * N * H, H, N, H);
    return rc;
}

/* a state h0/c0 must be [N, H] */
static int rnn_check_state(const char *op, const char *what, const fnn_tensor *s, const fnn_tensor *x, int64_t N,
                           int64_t H) {
    if (!s) return FNN_STATUS_OK;
    FNN_TRY(fnn_check_input(op, s));
    FNN_TRY(fnn_check_same_device(op, x, s));
    FNN_CHECK(s->ndim == 2 && s->shape[0] == N && s->shape[1] == H, FNN_STATUS_SHAPE,
              "%s: %s %s does not match input %s and hidden size %lld (expected [%lld,%lld])", op, what,
              fnn_shape_of(s).s, fnn_shape_of(x).s, (long long)H, (long long)N, (long long)H);
    return FNN_STATUS_OK;
}

static int rnn_seq(int kind, fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *h0, const fnn_tensor *c0,
                   const fnn_tensor *w_ih, const fnn_tensor *w_hh, const fnn_tensor *b_ih, const fnn_tensor *b_hh,
                   int reverse) {
    const char *op = RNN_OP[kind];
    FNN_TRY(fnn_check_input(op, x));
    FNN_TRY(fnn_check_input(op, w_ih));
    FNN_TRY(fnn_check_input(op, w_hh));
    FNN_TRY(fnn_check_same_device(op, x, w_ih));
    FNN_TRY(fnn_check_same_device(op, x, w_hh));
    const int64_t G = RNN_GATES[kind];
    FNN_CHECK(w_hh->ndim == 2 && w_hh->shape[1] >= 1 && w_hh->shape[0] == G * w_hh->shape[1], FNN_STATUS_SHAPE,
              "%s: weight_hh %s is not [%lldH,H]", op, fnn_shape_of(w_hh).s, (long long)G);
    const int64_t H = w_hh->shape[1], GH = G * H;
    FNN_CHECK(x->ndim == 3, FNN_STATUS_SHAPE, "%s: input %s is not [N,T,features] (batch first)", op,
              fnn_shape_of(x).s);
    const int64_t N = x->shape[0], T = x->shape[1], I = x->shape[2];
    FNN_CHECK(T >= 1, FNN_STATUS_SHAPE, "%s: input %s has no time steps", op, fnn_shape_of(x).s);
    FNN_CHECK(w_ih->ndim == 2 && w_ih->shape[0] == GH, FNN_STATUS_SHAPE,
              "%s: weight_ih %s and weight_hh %s do not agree (expected [%lld,input])", op, fnn_shape_of(w_ih).s,
              fnn_shape_of(w_hh).s, (long long)GH);
    FNN_CHECK(w_ih->shape[1] == I, FNN_STATUS_SHAPE, "%s: input %s has %lld features, weight_ih %s expects %lld", op,
              fnn_shape_of(x).s, (long long)I, fnn_shape_of(w_ih).s, (long long)w_ih->shape[1]);
    const fnn_tensor *bs[2] = {b_ih, b_hh};
    for (int k = 0; k < 2; k++) {
        if (!bs[k]) continue;
        FNN_TRY(fnn_check_input(op, bs[k]));
        FNN_TRY(fnn_check_same_device(op, x, bs[k]));
        FNN_CHECK(bs[k]->ndim == 1 && bs[k]->shape[0] == GH, FNN_STATUS_SHAPE, "%s: %s %s is not [%lld]", op,
                  k ? "bias_hh" : "bias_ih", fnn_shape_of(bs[k]).s, (long long)GH);
    }
    FNN_TRY(rnn_check_state(op, "h0", h0, x, N, H));
    FNN_CHECK(kind == FNN_RNN_LSTM || !c0, FNN_STATUS_ARG, "%s: takes no cell state c0", op);
    FNN_TRY(rnn_check_state(op, "c0", c0, x, N, H));
    FNN_CHECK(T * N < INT_MAX && GH < INT_MAX && I < INT_MAX && (T + 1) * H < INT_MAX, FNN_STATUS_SHAPE,
              "%s: input %s with hidden size %lld is too large for one GEMM", op, fnn_shape_of(x).s, (long long)H);
    const int dev = x->device;
    const fnn_rnn_row *row = rnn_row(op, dev, true, true);
    if (!row) return fnn_last_status();
    const int64_t P = T * N, rows_out = kind == FNN_RNN_LSTM ? T + 1 : T;
    const rnn_layout L = rnn_layout_of(kind, N, T, I, H);
    const fnn_tensor *ins[IN_COUNT] = {x, h0, c0, w_ih, w_hh, b_ih, b_hh};
    const bool grad = fnn_needs_node(IN_COUNT, ins);
    fnn_tensor wst, zt, hzt, wit, wht, bit, bht, h0t, c0t;
    fnn_tensor_init(&wst); fnn_tensor_init(&zt); fnn_tensor_init(&hzt);
    fnn_tensor_init(&wit); fnn_tensor_init(&wht); fnn_tensor_init(&bit); fnn_tensor_init(&bht);
    fnn_tensor_init(&h0t); fnn_tensor_init(&c0t);
    int64_t wsshape[1] = {L.total}, zshape[2] = {P, GH}, hzshape[2] = {N, GH}, oshape[3] = {N, rows_out, H};
    int rc = fnn_new_output(&wst, dev, 1, wsshape);
    if (!rc) rc = fnn_new_output(&zt, dev, 2, zshape);
    if (!rc && kind == FNN_RNN_GRU) rc = fnn_new_output(&hzt, dev, 2, hzshape);
    if (!rc) rc = fnn_new_output(out, dev, 3, oshape);
    const float *wi = NULL, *wh = NULL, *bi = NULL, *bh = NULL, *h0p = NULL, *c0p = NULL;
    if (!rc) wi = fnn_contiguous_data(w_ih, &wit, &rc);
    if (!rc) wh = fnn_contiguous_data(w_hh, &wht, &rc);
    if (!rc && b_ih) bi = fnn_contiguous_data(b_ih, &bit, &rc);
    if (!rc && b_hh) bh = fnn_contiguous_data(b_hh, &bht, &rc);
    if (!rc && h0) h0p = fnn_contiguous_data(h0, &h0t, &rc);
    if (!rc && c0) c0p = fnn_contiguous_data(c0, &c0t, &rc);
    if (rc) goto done;
    {
        float *ws = fnn_data(&wst);
        const rnn_fwd f = {kind, reverse, grad, N, T, I, H, GH, P, rows_out, x, wi, wh, bi, bh, h0p, c0p,
                           ws + L.xs, ws + L.hs, ws + L.cs, ws + L.acts, fnn_data(&zt),
                           kind == FNN_RNN_GRU ? fnn_data(&hzt) : NULL, fnn_data(out)};
        if ((rc = rnn_fwd_steps(row, fnn_device_ordinal(dev), &f))) goto done;
    }
    if (grad) {
        fnn_node *nd = fnn_attach_node(out, RNN_DEF[kind], IN_COUNT, ins);
        if (!nd || fnn_save(nd, 0, &wst) || fnn_save(nd, 1, w_ih) || fnn_save(nd, 2, w_hh)) {
            rc = fnn_last_status();
        } else {
            *FNN_ATTRS(nd, rnn_attrs) = (rnn_attrs){.N = N, .T = T, .I = I, .H = H, .kind = kind, .reverse = reverse != 0};
        }
    }
done:
    fnn_tensor_clear(&wst); fnn_tensor_clear(&zt); fnn_tensor_clear(&hzt);
    fnn_tensor_clear(&wit); fnn_tensor_clear(&wht); fnn_tensor_clear(&bit); fnn_tensor_clear(&bht);
    fnn_tensor_clear(&h0t); fnn_tensor_clear(&c0t);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

int fnn_rnn_tanh(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *h0, const fnn_tensor *w_ih,
                 const fnn_tensor *w_hh, const fnn_tensor *b_ih, const fnn_tensor *b_hh, int reverse) {
    return rnn_seq(FNN_RNN_TANH, out, x, h0, NULL, w_ih, w_hh, b_ih, b_hh, reverse);
}
int fnn_lstm(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *h0, const fnn_tensor *c0,
             const fnn_tensor *w_ih, const fnn_tensor *w_hh, const fnn_tensor *b_ih, const fnn_tensor *b_hh,
             int reverse) {
    return rnn_seq(FNN_RNN_LSTM, out, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse);
}
int fnn_gru(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *h0, const fnn_tensor *w_ih,
            const fnn_tensor *w_hh, const fnn_tensor *b_ih, const fnn_tensor *b_hh, int reverse) {
    return rnn_seq(FNN_RNN_GRU, out, x, h0, NULL, w_ih, w_hh, b_ih, b_hh, reverse);
}

const fnn_op_def *const fnn_ops_rnn[] = {&LSTM_CELL, &RNN_TANH_SEQ, &LSTM_SEQ, &GRU_SEQ, NULL};

/* the CPU's rows (rnn.h): the three sequence layers share the step engine (a.kind picks the cell) */
const fnn_rnn_row fnn_cpu_rnn_rows[] = {
    {"lstm_cell", cpu_lstm_cell, cpu_lstm_cell_grad, NULL},
    {"rnn_tanh", cpu_rnn_step, cpu_rnn_step_grad, &cpu_moves},
    {"lstm", cpu_rnn_step, cpu_rnn_step_grad, &cpu_moves},
    {"gru", cpu_rnn_step, cpu_rnn_step_grad, &cpu_moves},
    {NULL, NULL, NULL, NULL},
};
