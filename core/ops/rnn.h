/* rnn.h: the rnn family's backend contract (core/internal.h's fnn_row_table), filled by
 * core/ops/rnn.c (the CPU) and cuda/rnn.cu. The ops are composites: a sequence layer is GEMMs and
 * a fused pointwise cell per time step, looped over time by rnn.c (written once for every backend).
 * So a row holds the op's pointwise kernels, not the whole op:
 *   lstm_cell: forward / backward are the fused cell over the batch (no moves);
 *   rnn_tanh, lstm, gru: forward / backward are ONE time step's cell (the backends' shared step
 *     engine, the cell chosen by a.kind), and `moves` the loop's copies, fills, GEMMs and bias
 *     sums (the same table for the three rows of a backend). On a device the GEMMs, fills and sums
 *     are the backend's shared primitives (gemm, fill, binary, reduce); on the CPU the GEMM picks
 *     oneDNN's matmul for the forward's per-step products.
 * Every buffer is contiguous with the row strides given; rnn.c puts x in processing order with
 * moves->copy, which reads x through its strides (no contiguous copy of x on the CPU either). */
#ifndef FASTNN_OPS_RNN_H
#define FASTNN_OPS_RNN_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

enum { FNN_RNN_TANH = 0, FNN_RNN_LSTM = 1, FNN_RNN_GRU = 2 };   /* the cell of a sequence layer */

/* one call's arguments: the cell's forward fills the first group, its backward the second; a
 * pointer a cell does not use is NULL. Rows r = 0..N-1, H hidden units; G = 1, 4 (i, f, g, o) or
 * 3 (r, z, n) gates. */
typedef struct fnn_rnn_args {
    int kind;               /* FNN_RNN_*: the sequence rows' shared step engine (lstm_cell: unused) */
    int64_t N, H;
    /* forward (lstm_cell: z, c_prev -> out [N, 2H] = (h, c'), acts) */
    const float *z;         /* [N, G H]: x W_ih^T + biases (+ h_prev W_hh^T for tanh and lstm) */
    const float *hz;        /* gru: [N, 3H] = h_prev W_hh^T (no bias) */
    const float *b_hh;      /* gru: [3H] or NULL (added inside the cell: r gates W_hn h + b_hn) */
    const float *h_prev;    /* gru: [N, H] the previous state (forward and backward) */
    const float *c_prev;    /* lstm, lstm_cell: [N, H] the previous cell (forward and backward) */
    float *h;               /* [N, H] the new state (forward); tanh backward: read */
    float *c;               /* lstm: [N, H] the new cell */
    float *acts;            /* saved activations, written by the forward (NULL: not kept; lstm and
                             * lstm_cell [N, 5H] = (i, f, g, o, tanh c'), gru [N, 4H] = (r, z, n,
                             * W_hn h + b_hn)), read by the backward */
    float *out;             /* h again at out + r out_ld (lstm_cell: [N, 2H], out_ld unused) */
    int64_t out_ld;
    /* backward */
    const float *g;         /* the output's gradient, row r at g + r g_ld (lstm_cell: [N, 2H] = (dh, dc')) */
    int64_t g_ld;
    const float *dh;        /* [N, H] the gradient reaching h from the next step */
    float *dz;              /* [N, G H] pre-activation gradients (gru: of the x side) */
    float *dhz;             /* gru: [N, 3H] of the h side (dn times r) */
    float *dc;              /* lstm: [N, H] in place (in: this step's cell, out: the previous one's);
                             * lstm_cell: out */
    float *dh_direct;       /* gru: [N, H] the part of dh_prev that skips W_hh (z dh) */
} fnn_rnn_args;
typedef int (*fnn_rnn_fn)(int ordinal, const fnn_rnn_args *a);

/* the sequence loop's moves and products on one backend */
typedef struct fnn_rnn_moves {
    /* dst[i . ds] = src[i . ss] over every index i of shape[4] (strides in elements, any sign) */
    int (*copy)(int ordinal, float *dst, const int64_t *ds, const float *src, const int64_t *ss,
                const int64_t *shape);
    /* y [rows, cols] contiguous = b1 + b2 on every row (NULL adds nothing; both NULL: zeros) */
    int (*fill_rows)(int ordinal, float *y, int64_t rows, int64_t cols, const float *b1, const float *b2);
    /* row-major C [m, n] = op(A) op(B) + beta C, beta 0 or 1 (k = 0: beta C); exact: bit 0 A, bit 1 B hold
     * bfloat16 values already (round_bf16 made them), which bf16 precision need not round again */
    int (*gemm)(int ordinal, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                const float *b, int64_t ldb, float beta, float *c, int64_t ldc, unsigned exact);
    /* out [cols] = the column sums of m [rows, cols] */
    int (*colsum)(int ordinal, float *out, const float *m, int64_t rows, int64_t cols);
    /* optional (NULL: every step calls gemm): op(B) prepared once for the steps' products C [m, n] =
     * A [m, k] op(B) + beta C with the same B, sizes, lda and ldc. pack returns NULL where the backend
     * prepares nothing, gemm_packed false where it did not run the product (the step then calls gemm
     * with B itself); unpack frees what pack made */
    void *(*pack)(int ordinal, bool tb, int64_t m, int64_t n, int64_t k, const float *b, int64_t ldb, int64_t lda,
                  float beta, int64_t ldc, bool serial);
    bool (*gemm_packed)(int ordinal, const void *packed, const float *a, float *c);
    void (*unpack)(int ordinal, void *packed);
    /* optional (NULL: one block): the batch's rows never meet inside a step, so blocks of them can run
     * their whole loop of steps at once, each on one thread, without waiting for each other between
     * steps. row_blocks says how many blocks (1: none) suit the rows; run_blocks calls fn(ctx, r0, r1)
     * once per block, concurrently, and returns the first failure. Blocks run only where every block
     * size's product could be packed with serial = true (they run inside the block's thread), which a
     * loop of fewer than 4 steps never is */
    int64_t (*row_blocks)(int ordinal, int64_t rows);
    int (*run_blocks)(int ordinal, int64_t blocks, int64_t rows, int (*fn)(void *ctx, int64_t r0, int64_t r1),
                      void *ctx);
    /* optional (NULL: never): x [n] rounded in place to the bfloat16 values the backend's products would
     * round it to, where they round their operands themselves (bf16 precision off the bf16 units), so that
     * an operand of several products is rounded once; false where nothing was done */
    bool (*round_bf16)(int ordinal, float *x, int64_t n);
} fnn_rnn_moves;

typedef struct fnn_rnn_row {
    const char *op;                 /* the registry name; NULL ends a table */
    fnn_rnn_fn forward, backward;   /* the cell (lstm_cell) or one time step's cell (the sequences) */
    const fnn_rnn_moves *moves;     /* the sequences' loop; NULL for lstm_cell */
} fnn_rnn_row;
/* the CPU rows: core/ops/rnn.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(rnn, fnn_rnn_row)

#ifdef __cplusplus
}
#endif
#endif
