/* rnn_cells.h: each recurrent cell's arithmetic for one hidden unit, written once for core/ops/rnn.c's
 * row loops and cuda/rnn.cu's kernels (the host emulation compiles the same), as elementwise_ops.h
 * and loss_ops.h are for their families. A row's gate pre-activations and saved activations are
 * blocks of H: the functions take pointers at unit j of a row's first block and step H between
 * blocks (lstm: gates i, f, g, o, saved i, f, g, o, tanh c'; gru: gates r, z, n, saved r, z, n and the
 * h side's n pre-activation hn, PyTorch's linear-before-reset form). The includer defines FNN_CELL
 * (the functions' qualifiers) and the activations FNN_CELL_SIGMOID(x) and FNN_CELL_TANH(x) first: the
 * CPU's branch-free fastmath.h ones, the GPU's __expf sigmoid and double tanh. */
#ifndef FASTNN_RNN_CELLS_H
#define FASTNN_RNN_CELLS_H

/* LSTM: i, f, o = sigmoid, g = tanh of the gates at z; c' = f c + i g, h = o tanh(c'); the five saved
 * activations at acts when it is not NULL */
FNN_CELL void fnn_cell_lstm(const float *z, float c, int64_t H, float *h, float *cn, float *acts) {
    const float i = FNN_CELL_SIGMOID(z[0]), f = FNN_CELL_SIGMOID(z[H]), g = FNN_CELL_TANH(z[2 * H]),
                o = FNN_CELL_SIGMOID(z[3 * H]);
    const float cc = f * c + i * g, tc = FNN_CELL_TANH(cc);
    *h = o * tc;
    *cn = cc;
    if (acts) { acts[0] = i; acts[H] = f; acts[2 * H] = g; acts[3 * H] = o; acts[4 * H] = tc; }
}

/* its backward: d_h the gradient at h; *dc in: at c', out: at c; the gates' gradients at dz. With
 * dc' = dc + d_h o (1 - tanh(c')^2): dz = (dc' g i(1-i), dc' c f(1-f), dc' i (1-g^2), d_h tanh(c') o(1-o)),
 * dc = dc' f */
FNN_CELL void fnn_cell_lstm_grad(const float *acts, float c, float d_h, float *dc, int64_t H, float *dz) {
    const float i = acts[0], f = acts[H], g = acts[2 * H], o = acts[3 * H], tc = acts[4 * H];
    const float dcc = *dc + d_h * o * (1.0f - tc * tc);
    dz[0] = dcc * g * i * (1.0f - i);
    dz[H] = dcc * c * f * (1.0f - f);
    dz[2 * H] = dcc * i * (1.0f - g * g);
    dz[3 * H] = d_h * tc * o * (1.0f - o);
    *dc = dcc * f;
}

/* GRU: x3, h3 the x and h sides' pre-activations (r, z, n blocks), b the h side's bias at unit j or NULL,
 * hp the previous h: r = sigmoid(x_r + h_r + b_r), z likewise, hn = h_n + b_n, n = tanh(x_n + r hn),
 * h' = (1 - z) n + z hp, returned; r, z, n, hn saved at acts */
FNN_CELL float fnn_cell_gru(const float *x3, const float *h3, const float *b, float hp, int64_t H, float *acts) {
    const float br = b ? b[0] : 0.0f, bz = b ? b[H] : 0.0f, bn = b ? b[2 * H] : 0.0f;
    const float r = FNN_CELL_SIGMOID(x3[0] + h3[0] + br);
    const float z = FNN_CELL_SIGMOID(x3[H] + h3[H] + bz);
    const float hn = h3[2 * H] + bn;
    const float n = FNN_CELL_TANH(x3[2 * H] + r * hn);
    acts[0] = r; acts[H] = z; acts[2 * H] = n; acts[3 * H] = hn;
    return (1.0f - z) * n + z * hp;
}

/* its backward: d the gradient at h'; dz = d (hp - n) z(1-z), dn = d (1-z)(1-n^2), dr = dn hn r(1-r):
 * the x side gets (dr, dz, dn) at dx3, the h side (dr, dz, dn r) at dh3; returns the gradient at hp
 * through the z hp term (d z) */
FNN_CELL float fnn_cell_gru_grad(const float *acts, float hp, float d, int64_t H, float *dx3, float *dh3) {
    const float r = acts[0], z = acts[H], n = acts[2 * H], hn = acts[3 * H];
    const float dzp = d * (hp - n) * z * (1.0f - z);
    const float dnp = d * (1.0f - z) * (1.0f - n * n);
    const float drp = dnp * hn * r * (1.0f - r);
    dx3[0] = drp; dx3[H] = dzp; dx3[2 * H] = dnp;
    dh3[0] = drp; dh3[H] = dzp; dh3[2 * H] = dnp * r;
    return d * z;
}

/* the tanh cell's backward from its output h: dz = d (1 - h^2) (its forward is FNN_CELL_TANH itself) */
FNN_CELL float fnn_cell_tanh_grad(float h, float d) { return d * (1.0f - h * h); }

#endif
