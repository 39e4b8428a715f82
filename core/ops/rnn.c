/* rnn.c: the fused LSTM cell. One step of an LSTM composed from narrow, sigmoid, tanh, mul
 * and add is ~15 ops and graph nodes; here the pointwise part is one pass and one node, as
 * PyTorch fuses it. The GEMMs (x W_ih^T, h W_hh^T) stay with the caller (linalg's linear). */
#include "../internal.h"
#include "../fastmath.h"

/* ================= lstm_cell: z [N, 4H] (gates i, f, g, o), c [N, H] -> [N, 2H] = (h, c') ================= */
/* i, f, o = sigmoid, g = tanh; c' = f c + i g; h = o tanh(c'). The activations are saved by the
 * forward as acts [N, 5H] = (i, f, g, o, tanh(c')) so the backward is plain arithmetic. */

/* compute-bound (five sigmoid/tanh per element): built for x86-64-v3 (AVX2 + FMA) too, picked at
 * load time, as elementwise.c's unary rows are */
#if defined(__x86_64__) && defined(__GLIBC__) && !defined(__clang__) && __GNUC__ >= 11
#define AVX2_CLONE __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define AVX2_CLONE
#endif

/* one row: z [4H], c [H] -> h [H], cn [H]; acts [5H] too when not NULL. Separate restrict
 * pointers and one loop per case so GCC vectorizes (it gives up on a row loop nest) */
AVX2_CLONE static void lstm_fwd_row(const float *restrict z, const float *restrict c, float *restrict h,
                                    float *restrict cn, float *restrict acts, int64_t H) {
    const float *zi = z, *zf = z + H, *zg = z + 2 * H, *zo = z + 3 * H;
    if (acts) {
        float *restrict ai = acts, *restrict af = acts + H, *restrict ag = acts + 2 * H;
        float *restrict ao = acts + 3 * H, *restrict at = acts + 4 * H;
        for (int64_t j = 0; j < H; j++) {
            float i = fnn_sigmoidf(zi[j]), f = fnn_sigmoidf(zf[j]), g = fnn_tanhf(zg[j]), o = fnn_sigmoidf(zo[j]);
            float cc = f * c[j] + i * g, tc = fnn_tanhf(cc);
            h[j] = o * tc;
            cn[j] = cc;
            ai[j] = i; af[j] = f; ag[j] = g; ao[j] = o; at[j] = tc;
        }
    } else {
        for (int64_t j = 0; j < H; j++) {
            float i = fnn_sigmoidf(zi[j]), f = fnn_sigmoidf(zf[j]), g = fnn_tanhf(zg[j]), o = fnn_sigmoidf(zo[j]);
            float cc = f * c[j] + i * g;
            h[j] = o * fnn_tanhf(cc);
            cn[j] = cc;
        }
    }
}

typedef struct {
    const float *z, *c;   /* contiguous [N, 4H], [N, H] */
    float *out, *acts;    /* [N, 2H]; [N, 5H] or NULL */
    int64_t H;
} lstm_fwd_args;

/* rows lo..hi-1 */
static void lstm_fwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const lstm_fwd_args *a = ctx;
    const int64_t H = a->H;
    for (int64_t r = lo; r < hi; r++)
        lstm_fwd_row(a->z + r * 4 * H, a->c + r * H, a->out + r * 2 * H, a->out + r * 2 * H + H,
                     a->acts ? a->acts + r * 5 * H : NULL, H);
}

/* backward of one row: with dh = g[:H] and dc' = g[H:] + dh o (1 - tanh(c')^2),
 * dz = (dc' g i(1-i), dc' c f(1-f), dc' i (1-g^2), dh tanh(c') o(1-o)) and dc = dc' f */
AVX2_CLONE static void lstm_bwd_row(const float *restrict g, const float *restrict acts, const float *restrict c,
                                    float *restrict dz, float *restrict dc, int64_t H) {
    const float *dh = g, *dcn = g + H;
    const float *ai = acts, *af = acts + H, *ag = acts + 2 * H, *ao = acts + 3 * H, *at = acts + 4 * H;
    float *restrict di = dz, *restrict df = dz + H, *restrict dg = dz + 2 * H, *restrict dob = dz + 3 * H;
    for (int64_t j = 0; j < H; j++) {
        float i = ai[j], f = af[j], gg = ag[j], o = ao[j], tc = at[j], d_h = dh[j];
        float dcc = dcn[j] + d_h * o * (1.0f - tc * tc);
        di[j] = dcc * gg * i * (1.0f - i);
        df[j] = dcc * c[j] * f * (1.0f - f);
        dg[j] = dcc * i * (1.0f - gg * gg);
        dob[j] = d_h * tc * o * (1.0f - o);
        dc[j] = dcc * f;
    }
}

typedef struct {
    const float *g, *acts, *c;   /* contiguous [N, 2H], [N, 5H], [N, H] */
    float *dz, *dc;              /* [N, 4H], [N, H] */
    int64_t H;
} lstm_bwd_args;

static void lstm_bwd_rows(void *ctx, int64_t lo, int64_t hi) {
    const lstm_bwd_args *a = ctx;
    const int64_t H = a->H;
    for (int64_t r = lo; r < hi; r++)
        lstm_bwd_row(a->g + r * 2 * H, a->acts + r * 5 * H, a->c + r * H, a->dz + r * 4 * H, a->dc + r * H, H);
}

/* transcendentals make an element cost several memory-bound ones */
enum { LSTM_WORK_PER_ELEM = 16 };

/* saved[0] = acts [N, 5H], saved[1] = c [N, H] (the caller's, maybe strided) */
static int lstm_cell_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *acts = &n->saved[0], *c = &n->saved[1];
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
        lstm_bwd_args a = {gp, fnn_data(acts), cp, fnn_data(&din[0]), fnn_data(&din[1]), H};
        fnn_parallel_for(N, fnn_threads_for(N * H * 8), lstm_bwd_rows, &a);
    }
    fnn_tensor_clear(&gt);
    fnn_tensor_clear(&ct);
    if (rc || !n->next[0]) fnn_tensor_clear(&din[0]);
    if (rc || !n->next[1]) fnn_tensor_clear(&din[1]);
    return rc;
}
static const fnn_op_def LSTM_CELL = {{"lstm_cell", "rnn", 1, 0}, lstm_cell_backward, FNN_EMBEDS_NONE};

int fnn_lstm_cell(fnn_tensor *out, const fnn_tensor *z, const fnn_tensor *c) {
    FNN_TRY(fnn_check_input("lstm_cell", z));
    FNN_TRY(fnn_check_input("lstm_cell", c));
    FNN_TRY(fnn_check_same_device("lstm_cell", z, c));
    FNN_CHECK(z->ndim == 2 && c->ndim == 2 && z->shape[0] == c->shape[0] && z->shape[1] == 4 * c->shape[1],
              FNN_STATUS_SHAPE,
              "lstm_cell: gates %s and cell %s do not agree (expected gates [N,4H] and cell [N,H])",
              fnn_shape_of(z).s, fnn_shape_of(c).s);
    FNN_CHECK(fnn_device_type_of(z->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "lstm_cell: not implemented on cuda yet");
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
        lstm_fwd_args a = {zp, cp, fnn_data(out), grad ? fnn_data(&acts) : NULL, H};
        fnn_parallel_for(N, fnn_threads_for(N * H * LSTM_WORK_PER_ELEM), lstm_fwd_rows, &a);
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

const fnn_op_def *const fnn_ops_rnn[] = {&LSTM_CELL, NULL};
