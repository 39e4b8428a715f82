// spec/gpu/emulated_seq.cpp: cuda/rnn.cu and cuda/attention.cu's kernels on the host (see
// emulated.h): the elementwise step kernels and the strided copy as plain calls (their grid-stride
// loops run the whole grid as one thread), the attention row kernels as one block of
// attn_threads(Tk) host threads striding over every row (real barriers and shuffles), with the same
// index-width choices as the launchers.
#include "emulated.h"
#include "rnn_body.inc"   /* cut from cuda/rnn.cu */
#include "attention_body.inc"

static int m_lstm_cell(int, float *out, float *acts, const float *z, const float *c, int64_t N, int64_t H) {
    if (N * H == 0) return 0;
    if (seq_small(N * 5 * H)) lstm_cell_kernel<int32_t>(out, acts, z, c, (int32_t)N, (int32_t)H);
    else lstm_cell_kernel<int64_t>(out, acts, z, c, N, H);
    return 0;
}
static int m_lstm_cell_grad(int, float *dz, float *dc, const float *g, const float *acts, const float *c, int64_t N,
                            int64_t H) {
    if (N * H == 0) return 0;
    if (seq_small(N * 5 * H)) lstm_cell_grad_kernel<int32_t>(dz, dc, g, acts, c, (int32_t)N, (int32_t)H);
    else lstm_cell_grad_kernel<int64_t>(dz, dc, g, acts, c, N, H);
    return 0;
}
static int m_rnn_step(int, int kind, int64_t N, int64_t H, const float *z, const float *hz, const float *b_hh,
                      const float *h_prev, const float *c_prev, float *h, float *c, float *acts, float *out,
                      int64_t out_ld) {
    if (N * H == 0) return 0;
    if (seq_small(N * 5 * H) && seq_small(N * out_ld))
        rnn_step_kernel<int32_t>(kind, (int32_t)N, (int32_t)H, z, hz, b_hh, h_prev, c_prev, h, c, acts, out,
                                 (int32_t)out_ld);
    else
        rnn_step_kernel<int64_t>(kind, N, H, z, hz, b_hh, h_prev, c_prev, h, c, acts, out, out_ld);
    return 0;
}
static int m_rnn_step_grad(int, int kind, int64_t N, int64_t H, const float *g, int64_t g_ld, const float *dh,
                           const float *acts, const float *c_prev, const float *h, const float *h_prev, float *dz,
                           float *dhz, float *dc, float *dh_direct) {
    if (N * H == 0) return 0;
    if (seq_small(N * 5 * H) && seq_small(N * g_ld))
        rnn_step_grad_kernel<int32_t>(kind, (int32_t)N, (int32_t)H, g, (int32_t)g_ld, dh, acts, c_prev, h, h_prev, dz,
                                      dhz, dc, dh_direct);
    else
        rnn_step_grad_kernel<int64_t>(kind, N, H, g, g_ld, dh, acts, c_prev, h, h_prev, dz, dhz, dc, dh_direct);
    return 0;
}
static int m_seq_copy(int, float *dst, const int64_t *ds, const float *src, const int64_t *ss, const int64_t *shape) {
    SeqCopy L;
    int64_t n = 1;
    for (int d = 0; d < 4; d++) { L.shape[d] = shape[d]; L.ds[d] = ds[d]; L.ss[d] = ss[d]; n *= shape[d]; }
    if (n == 0) return 0;
    if (seq_small(n)) seq_copy_kernel<int32_t>(dst, src, (int32_t)n, L);
    else seq_copy_kernel<int64_t>(dst, src, n, L);
    return 0;
}
static int m_attn_softmax(int, float *p, int64_t rows, int64_t Tq, int64_t Tk, int64_t H, int causal, const void *mask,
                          int mask_i64, int64_t ms0, int64_t ms1) {
    if (rows == 0 || Tk == 0) return 0;
    run_block(attn_threads(Tk), [&] { attn_softmax_kernel(p, rows, Tq, Tk, H, causal, mask, mask_i64, ms0, ms1); });
    return 0;
}
static int m_attn_softmax_grad(int, float *ds, const float *p, int64_t rows, int64_t Tq, int64_t Tk, int causal) {
    if (rows == 0 || Tk == 0) return 0;
    run_block(attn_threads(Tk), [&] { attn_softmax_grad_kernel(ds, p, rows, Tq, Tk, causal); });
    return 0;
}

EMULATED_BACKEND_ADD(seq) {
    b->lstm_cell = m_lstm_cell;
    b->lstm_cell_grad = m_lstm_cell_grad;
    b->rnn_step = m_rnn_step;
    b->rnn_step_grad = m_rnn_step_grad;
    b->seq_copy = m_seq_copy;
    b->attn_softmax = m_attn_softmax;
    b->attn_softmax_grad = m_attn_softmax_grad;
}
