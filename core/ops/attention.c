/* attention.c: fused scaled-dot-product attention, one graph node per call, and the in-place
 * append of a key/value cache.
 *   attention: q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] -> [B,H,Tq,Dv]
 *       per (batch, head): S = scale q k^T, P = softmax(S) over the keys a query may see, out = P v.
 *       Masks are applied while the softmax runs, never as a tensor: causal (query i sees key j when
 *       j <= i + Tk - Tq, so Tq new queries after Tk - Tq cached keys see the whole prefix) and a key
 *       padding mask [B,Tk] (nonzero = padding). A query that sees no key gets zeros (PyTorch: nan).
 *       Backward (dS = P (dP - rowsum(P dP)), dP = dO v^T):
 *           dv = P^T dO,  dq = scale dS k,  dk = scale dS^T q
 *   attention_cache_append: writes k, v [B,H,t,D] into caller-owned buffers at a position (no node).
 * q, k, v and the incoming gradient are read in place through their strides when their last dim is
 * dense (the [B,T,H,D] -> [B,H,T,D] transposes of a projection cost no copy). The output and the
 * gradients are stored [B,T,H,D] and handed out as [B,H,T,D] views, so the usual transpose back to
 * [B,T,H*D] is free too. The entry points are written once; the compute goes through the family's
 * rows (attention.h; the CPU's at the end of this file, cuda/attention.cu's on a device). On the
 * CPU the heads are split over the threads (fnn_sgemm_parallel_for);
 * per head the products run in mm_nn (below) or, for one or two query rows (a decode step), in
 * plain loops, and in fnn_sgemm (blas.c) above ATTN_OWN_MAX or under the oneDNN kernels. */
#include "attention.h"
#include "../fastmath.h"
#include <math.h>
#include <string.h>

/* ================= shared ================= */

/* below this many multiply-adds a cblas call costs more than plain loops */
enum { ATTN_GEMM_MIN = 4096 };

/* c[m,n] = alpha op(a) op(b), row-major; ta: a is stored [k,m]; tb: b is stored [n,k] (ta && tb unused) */
static void attn_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float *c, int64_t ldc) {
    /* one or two rows (a decode step's query) stay in plain loops at any length: a cblas call on a
     * single row costs more than the row itself */
    if ((m > 2 && m * n * k >= ATTN_GEMM_MIN) || fnn_prec_bf16(FNN_PREC_MATMUL)) {   /* bf16: rounded operands */
        fnn_gemm_prec(FNN_PREC_MATMUL, ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc);
        return;
    }
    if (!ta && tb) {   /* rows of a against rows of b: contiguous dots in 8 lanes (they vectorize) */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                const float *ai = a + i * lda, *bj = b + j * ldb;
                float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                int64_t p = 0;
                for (; p + 8 <= k; p += 8)
                    for (int l = 0; l < 8; l++) acc[l] += ai[p + l] * bj[p + l];
                float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
                for (; p < k; p++) s += ai[p] * bj[p];
                c[i * ldc + j] = alpha * s;
            }
        return;
    }
    for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, sizeof(float) * (size_t)n);
    for (int64_t p = 0; p < k; p++)
        for (int64_t i = 0; i < m; i++) {
            const float av = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
            const float *bp = b + p * ldb;
            float *ci = c + i * ldc;
            for (int64_t j = 0; j < n; j++) ci[j] += av * bp[j];
        }
}

/* Per-head products are small (64 x 64 x 32 in char_gpt), where a cblas call spends more on
 * packing and dispatch than on arithmetic: they run here as a 4 x 16 register-blocked kernel
 * (8 float lanes; built for x86-64-v3 too and picked at load time, as rnn.c's cells), every
 * product in the form c = alpha a b with b's rows dense (the other operand transposed into a
 * scratch buffer first, which costs O(T D) against the product's O(T T D)). Causal products skip
 * the blocks the mask hides. Above ATTN_OWN_MAX multiply-adds per product, and whenever the oneDNN
 * kernels run, fnn_sgemm takes over. */
typedef float attn_v8 __attribute__((vector_size(32)));
enum { ATTN_OWN_MAX = 1 << 22 };
/* causal limits of mm_nn: none, on the columns of c, on the last or on the first terms of the sum */
enum { LIM_NONE = 0, LIM_N = 1, LIM_K = 2, LIM_K_LO = 3 };

/* c[m,n] = alpha a[m,k] b[k,n], row-major (b's rows dense). With a limit, rows i0..i0+3 need only
 * columns (LIM_N) or terms (LIM_K) below i0 + 4 + lim (the causal band; P is zero beyond it), or
 * (LIM_K_LO) terms from i0 + lim on (P^T and dS^T, zero before it); columns past a limit are left
 * unwritten */
FNN_CLONES_V3 static void mm_nn(int64_t m, int64_t n, int64_t k, float alpha, const float *restrict a, int64_t lda,
                             const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc, int lim_mode,
                             int64_t lim) {
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
        const int64_t mr = m - i0 < 4 ? m - i0 : 4;
        int64_t nn = n, kk = k, p0 = 0;
        if (lim_mode != LIM_NONE) {
            int64_t e = i0 + mr + lim;
            if (e < 0) e = 0;
            if (lim_mode == LIM_N && e < nn) nn = e;
            if (lim_mode == LIM_K && e < kk) kk = e;
            if (lim_mode == LIM_K_LO) p0 = i0 + lim < 0 ? 0 : (i0 + lim < k ? i0 + lim : k);
        }
        const float *a0 = a + i0 * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        float *c0 = c + i0 * ldc, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;
        int64_t j = 0;
        if (mr == 4) {
            for (; j + 16 <= nn; j += 16) {
                attn_v8 s00 = {0}, s01 = {0}, s10 = {0}, s11 = {0}, s20 = {0}, s21 = {0}, s30 = {0}, s31 = {0};
                for (int64_t p = p0; p < kk; p++) {
                    attn_v8 b0, b1;
                    memcpy(&b0, b + p * ldb + j, sizeof b0);
                    memcpy(&b1, b + p * ldb + j + 8, sizeof b1);
                    s00 += a0[p] * b0; s01 += a0[p] * b1;
                    s10 += a1[p] * b0; s11 += a1[p] * b1;
                    s20 += a2[p] * b0; s21 += a2[p] * b1;
                    s30 += a3[p] * b0; s31 += a3[p] * b1;
                }
                s00 *= alpha; s01 *= alpha; s10 *= alpha; s11 *= alpha;
                s20 *= alpha; s21 *= alpha; s30 *= alpha; s31 *= alpha;
                memcpy(c0 + j, &s00, sizeof s00); memcpy(c0 + j + 8, &s01, sizeof s01);
                memcpy(c1 + j, &s10, sizeof s10); memcpy(c1 + j + 8, &s11, sizeof s11);
                memcpy(c2 + j, &s20, sizeof s20); memcpy(c2 + j + 8, &s21, sizeof s21);
                memcpy(c3 + j, &s30, sizeof s30); memcpy(c3 + j + 8, &s31, sizeof s31);
            }
            for (; j + 8 <= nn; j += 8) {
                attn_v8 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
                for (int64_t p = p0; p < kk; p++) {
                    attn_v8 b0;
                    memcpy(&b0, b + p * ldb + j, sizeof b0);
                    s0 += a0[p] * b0; s1 += a1[p] * b0; s2 += a2[p] * b0; s3 += a3[p] * b0;
                }
                s0 *= alpha; s1 *= alpha; s2 *= alpha; s3 *= alpha;
                memcpy(c0 + j, &s0, sizeof s0); memcpy(c1 + j, &s1, sizeof s1);
                memcpy(c2 + j, &s2, sizeof s2); memcpy(c3 + j, &s3, sizeof s3);
            }
        }
        /* what is left (the last columns, or the rows of a short block): row by row */
        for (int64_t r = 0; r < mr; r++) {
            const float *ar = a + (i0 + r) * lda;
            float *cr = c + (i0 + r) * ldc;
            for (int64_t jj = j; jj < nn; jj++) cr[jj] = 0;
            for (int64_t p = p0; p < kk; p++) {
                const float av = alpha * ar[p];
                const float *bp = b + p * ldb;
                for (int64_t jj = j; jj < nn; jj++) cr[jj] += av * bp[jj];
            }
        }
    }
}

/* dst [cols, rows] = src [rows, cols]^T (src rows lds apart) */
static void attn_transpose(float *restrict dst, const float *restrict src, int64_t rows, int64_t cols, int64_t lds) {
    for (int64_t r0 = 0; r0 < rows; r0 += 8)   /* 8 x 8 tiles: both sides stay in a few lines */
        for (int64_t c0 = 0; c0 < cols; c0 += 8) {
            const int64_t r1 = r0 + 8 < rows ? r0 + 8 : rows, c1 = c0 + 8 < cols ? c0 + 8 : cols;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++) dst[c * rows + r] = src[r * lds + c];
        }
}

/* t as fnn_attn_mat when its last dim is dense and its rows do not overlap (cblas needs ld >= C), else a
 * contiguous copy in *tmp (cleared by the caller); *used is the tensor read (t or *tmp) */
static int attn_read(const fnn_tensor *t, fnn_tensor *tmp, fnn_attn_mat *m, const fnn_tensor **used) {
    fnn_tensor_init(tmp);
    const int64_t T = t->shape[2], Cc = t->shape[3];
    const bool direct = (Cc <= 1 || t->stride[3] == 1) && (T <= 1 || t->stride[2] >= (Cc > 1 ? Cc : 1));
    if (direct) *used = t;
    else { FNN_TRY(fnn_materialize(tmp, t)); *used = tmp; }
    const fnn_tensor *u = *used;
    m->p = fnn_data(u);
    m->s[0] = u->stride[0];
    m->s[1] = u->stride[1];
    m->s[2] = T <= 1 ? (Cc > 1 ? Cc : 1) : u->stride[2];   /* one row: any ld >= C will do */
    return FNN_STATUS_OK;
}

/* [B,T,H,C] storage seen as [B,H,T,C]: out becomes the view, tmp is released */
static int attn_view_bhtc(fnn_tensor *out, fnn_tensor *tmp, int64_t B, int64_t H, int64_t T, int64_t Cc) {
    int64_t shape[4] = {B, H, T, Cc}, stride[4] = {T * H * Cc, Cc, H * Cc, 1};
    int rc = fnn_make_view(out, tmp, 4, shape, stride, 0);
    fnn_tensor_clear(tmp);
    return rc;
}

/* heads run one per thread slot when there is enough work and enough heads; else in order, each
 * gemm threaded by the GEMM library. A flop counts about an eighth of fnn_threads_for's unit (as in conv.c) */
static void attn_run(int64_t heads, double flops, fnn_range_fn fn, void *ctx) {
    int t = fnn_threads_for((int64_t)(flops > 1e15 ? 1e15 : flops) / 8);
    if (t <= 1 || heads < t) { fn(ctx, 0, heads); return; }
    fnn_sgemm_parallel_for(heads, t, fn, ctx);
}

/* ================= attention: q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] -> [B,H,Tq,Dv] ================= */

/* the CPU forward's heads: the op's arguments and the padding mask as bytes [B, Tk] (1 = padding) or NULL */
typedef struct {
    const fnn_attn_args *a;
    const unsigned char *pad;
} attn_fwd_ctx;

/* one row of scores -> probabilities over the keys query i may see (keys 0..last, not padding) */
static FNN_CLONES_V3 void attn_softmax_row(float *restrict s, int64_t Tk, int64_t last, const unsigned char *restrict pad) {
    if (last > Tk - 1) last = Tk - 1;
    const int64_t n = last + 1 > 0 ? last + 1 : 0;
    float mx = -FNN_INFF;
    if (pad) {
        for (int64_t j = 0; j < n; j++)
            if (!pad[j] && s[j] > mx) mx = s[j];
    } else {   /* 8 lanes, so the loops vectorize */
        float m8[8] = {-FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF};
        int64_t j = 0;
        for (; j + 8 <= n; j += 8)
            for (int l = 0; l < 8; l++) m8[l] = s[j + l] > m8[l] ? s[j + l] : m8[l];
        for (; j < n; j++) mx = s[j] > mx ? s[j] : mx;
        for (int l = 0; l < 8; l++) mx = m8[l] > mx ? m8[l] : mx;
    }
    if (mx == -FNN_INFF) {   /* no visible key (or all -inf): zeros */
        memset(s, 0, sizeof(float) * (size_t)Tk);
        return;
    }
    for (int64_t j = 0; j < n; j++) s[j] = fnn_expf(s[j] - mx);
    if (pad)
        for (int64_t j = 0; j < n; j++) s[j] = pad[j] ? 0.0f : s[j];
    float a8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) a8[l] += s[j + l];
    float sum = ((a8[0] + a8[4]) + (a8[1] + a8[5])) + ((a8[2] + a8[6]) + (a8[3] + a8[7]));
    for (; j < n; j++) sum += s[j];
    const float inv = 1.0f / sum;
    for (j = 0; j < n; j++) s[j] *= inv;
    for (j = n; j < Tk; j++) s[j] = 0;
}

/* the own kernel's path for a product of m rows and m*n*k multiply-adds */
/* the own kernel runs only under the portable kernels: oneDNN's GEMM beat it on char_gpt's heads
 * (64 x 64 x 32, causal), even with the whole product computed: attention backward 165-172 against
 * 226-277 ms, forward 130-146 against 139-171 ms over 51 steps (three interleaved pairs); never under
 * bf16 precision, whose rounded operands only fnn_gemm_prec makes (as attn_gemm's small products) */
static inline bool attn_own(int64_t m, int64_t mnk) {
    return m > 2 && mnk <= ATTN_OWN_MAX && fnn_blas_portable() && !fnn_prec_bf16(FNN_PREC_MATMUL);
}

static void attn_fwd_heads(void *ctx, int64_t lo, int64_t hi) {
    const attn_fwd_ctx *cx = ctx;
    const fnn_attn_args *a = cx->a;
    const int64_t H = a->H, Tq = a->Tq, Tk = a->Tk, D = a->D, Dv = a->Dv, off = Tk - Tq;
    const bool own = attn_own(Tq, Tq * Tk * (D > Dv ? D : Dv));
    const int64_t sbytes = (int64_t)sizeof(float) * (D * Tk > 0 ? D * Tk : 1);
    float *kt = own ? fnn_alloc(FNN_DEVICE_CPU, sbytes) : NULL;   /* k^T of one head; NULL: the cblas path */
    const int lim_n = a->causal ? LIM_N : LIM_NONE, lim_k = a->causal ? LIM_K : LIM_NONE;
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / H, h = bh % H;
        const float *q = a->q.p + b * a->q.s[0] + h * a->q.s[1];
        const float *k = a->k.p + b * a->k.s[0] + h * a->k.s[1];
        const float *v = a->v.p + b * a->v.s[0] + h * a->v.s[1];
        float *p = a->p + bh * Tq * Tk, *o = a->o + b * Tq * H * Dv + h * Dv;
        if (kt) {
            attn_transpose(kt, k, Tk, D, a->k.s[2]);
            mm_nn(Tq, Tk, D, a->scale, q, a->q.s[2], kt, Tk, p, Tk, lim_n, off);
        } else {
            attn_gemm(0, 1, Tq, Tk, D, a->scale, q, a->q.s[2], k, a->k.s[2], p, Tk);
        }
        const unsigned char *pad = cx->pad ? cx->pad + b * Tk : NULL;
        for (int64_t i = 0; i < Tq; i++)
            attn_softmax_row(p + i * Tk, Tk, a->causal ? i + off : Tk - 1, pad);
        if (kt) mm_nn(Tq, Dv, Tk, 1.0f, p, Tk, v, a->v.s[2], o, H * Dv, lim_k, off);
        else attn_gemm(0, 0, Tq, Dv, Tk, 1.0f, p, Tk, v, a->v.s[2], o, H * Dv);
    }
    if (kt) fnn_free(FNN_DEVICE_CPU, kt, sbytes);
}

/* one row of dS = P (dP - rowsum(P dP)) over keys 0..n-1 in place of dP, zeros after (8 lanes) */
static FNN_CLONES_V3 void attn_ds_row(const float *restrict p, float *restrict d, int64_t n, int64_t Tk) {
    float a8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) a8[l] += p[j + l] * d[j + l];
    float r = ((a8[0] + a8[4]) + (a8[1] + a8[5])) + ((a8[2] + a8[6]) + (a8[3] + a8[7]));
    for (; j < n; j++) r += p[j] * d[j];
    for (j = 0; j < n; j++) d[j] = p[j] * (d[j] - r);
    for (j = n; j < Tk; j++) d[j] = 0;
}

static void attn_bwd_heads(void *ctx, int64_t lo, int64_t hi) {
    const fnn_attn_args *a = ctx;
    const int64_t H = a->H, Tq = a->Tq, Tk = a->Tk, D = a->D, Dv = a->Dv, off = Tk - Tq;
    const bool own = Tk > 2 && attn_own(Tq, Tq * Tk * (D > Dv ? D : Dv));
    /* one scratch for P^T, then v^T, then dS^T, in turn */
    const int64_t sfloats = Tk * (Tq > Dv ? Tq : Dv), sbytes = (int64_t)sizeof(float) * (sfloats > 0 ? sfloats : 1);
    float *t = own ? fnn_alloc(FNN_DEVICE_CPU, sbytes) : NULL;   /* NULL: the cblas path */
    const int lim_n = a->causal ? LIM_N : LIM_NONE, lim_k = a->causal ? LIM_K : LIM_NONE;
    const int lim_lo = a->causal ? LIM_K_LO : LIM_NONE;
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / H, h = bh % H;
        const float *q = a->q.p + b * a->q.s[0] + h * a->q.s[1];
        const float *k = a->k.p + b * a->k.s[0] + h * a->k.s[1];
        const float *v = a->v.p + b * a->v.s[0] + h * a->v.s[1];
        const float *g = a->g.p + b * a->g.s[0] + h * a->g.s[1];
        const float *p = a->p + bh * Tq * Tk;
        float *dv = a->dv ? a->dv + b * Tk * H * Dv + h * Dv : NULL;
        float *dq = a->dq ? a->dq + b * Tq * H * D + h * D : NULL;
        float *dk = a->dk ? a->dk + b * Tk * H * D + h * D : NULL;
        if (dv && t) {
            attn_transpose(t, p, Tq, Tk, Tk);
            mm_nn(Tk, Dv, Tq, 1.0f, t, Tq, g, a->g.s[2], dv, H * Dv, lim_lo, -off);
        } else if (dv) {
            attn_gemm(1, 0, Tk, Dv, Tq, 1.0f, p, Tk, g, a->g.s[2], dv, H * Dv);
        }
        if (!dq && !dk) continue;
        float *ds = a->ds + bh * Tq * Tk;
        if (t) {   /* dP (only the causal band is written) */
            attn_transpose(t, v, Tk, Dv, a->v.s[2]);
            mm_nn(Tq, Tk, Dv, 1.0f, g, a->g.s[2], t, Tk, ds, Tk, lim_n, off);
        } else {
            attn_gemm(0, 1, Tq, Tk, Dv, 1.0f, g, a->g.s[2], v, a->v.s[2], ds, Tk);
        }
        for (int64_t i = 0; i < Tq; i++) {   /* dS, zero outside the causal band */
            int64_t last = a->causal ? i + off : Tk - 1;
            if (last > Tk - 1) last = Tk - 1;
            attn_ds_row(p + i * Tk, ds + i * Tk, last + 1 > 0 ? last + 1 : 0, Tk);
        }
        if (dq && t) mm_nn(Tq, D, Tk, a->scale, ds, Tk, k, a->k.s[2], dq, H * D, lim_k, off);
        else if (dq) attn_gemm(0, 0, Tq, D, Tk, a->scale, ds, Tk, k, a->k.s[2], dq, H * D);
        if (dk && t) {
            attn_transpose(t, ds, Tq, Tk, Tk);
            mm_nn(Tk, D, Tq, a->scale, t, Tq, q, a->q.s[2], dk, H * D, lim_lo, -off);
        } else if (dk) {
            attn_gemm(1, 0, Tk, D, Tq, a->scale, ds, Tk, q, a->q.s[2], dk, H * D);
        }
    }
    if (t) fnn_free(FNN_DEVICE_CPU, t, sbytes);
}

/* an attention node (on the CPU and on a device): the scale as given (a double), the causal mask */
typedef struct { double scale; bool causal, padded; } attention_attrs;

/* the numbers an attention node keeps, for fnn.onnx (fnn_node_attr): scale, causal (0/1) and padded
 * (1: a key padding mask took part, which the node does not keep) */
int fnn_attention_attr(const fnn_node *n, const char *name, double *value) {
    const attention_attrs *a = FNN_ATTRS((fnn_node *)n, attention_attrs);
    if (!strcmp(name, "scale")) *value = a->scale;
    else if (!strcmp(name, "causal")) *value = a->causal;
    else if (!strcmp(name, "padded")) *value = a->padded;
    else return FNN_FAIL(FNN_STATUS_ARG, "node_attr: %s has scale, causal and padded, not '%s'", n->op->info.name, name);
    return FNN_STATUS_OK;
}

/* saved: q, k, v as read (views or contiguous copies), P [B,H,Tq,Tk]; attention_attrs */
static int attention_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *q = &n->saved[0], *k = &n->saved[1], *v = &n->saved[2], *p = &n->saved[3];
    const int64_t B = q->shape[0], H = q->shape[1], Tq = q->shape[2], D = q->shape[3];
    const int64_t Tk = k->shape[2], Dv = v->shape[3];
    fnn_tensor tmp[4], t[3], ds;
    fnn_tensor_init(&ds);
    for (int i = 0; i < 4; i++) fnn_tensor_init(&tmp[i]);
    for (int i = 0; i < 3; i++) fnn_tensor_init(&t[i]);
    const fnn_attn_row *row = fnn_attention_row_for(q->device, "attention");
    if (!row || !row->backward) return FNN_ROW_REFUSED("attention", q->device, true);
    fnn_attn_args a = {0};
    const fnn_tensor *used;
    int rc = attn_read(q, &tmp[0], &a.q, &used);   /* saved as read: no copies but g's */
    if (!rc) rc = attn_read(k, &tmp[1], &a.k, &used);
    if (!rc) rc = attn_read(v, &tmp[2], &a.v, &used);
    if (!rc) rc = attn_read(g, &tmp[3], &a.g, &used);
    const int64_t T[3] = {Tq, Tk, Tk}, Cc[3] = {D, D, Dv};
    for (int i = 0; i < 3 && !rc; i++) {
        if (!n->next[i]) continue;
        int64_t shape[4] = {B, T[i], H, Cc[i]};
        rc = fnn_new_output(&t[i], q->device, 4, shape);
    }
    int64_t sshape[4] = {B, H, Tq, Tk};
    if (!rc && (n->next[0] || n->next[1])) rc = fnn_new_output(&ds, q->device, 4, sshape);
    if (!rc) {
        a.p = fnn_data(p);
        a.dq = n->next[0] ? fnn_data(&t[0]) : NULL;
        a.dk = n->next[1] ? fnn_data(&t[1]) : NULL;
        a.dv = n->next[2] ? fnn_data(&t[2]) : NULL;
        a.ds = ds.ndim >= 0 ? fnn_data(&ds) : NULL;
        a.B = B; a.H = H; a.Tq = Tq; a.Tk = Tk; a.D = D; a.Dv = Dv;
        a.scale = (float)FNN_ATTRS(n, attention_attrs)->scale;
        a.causal = FNN_ATTRS(n, attention_attrs)->causal;
        rc = row->backward(fnn_device_ordinal(q->device), &a);
    }
    for (int i = 0; i < 3; i++)
        if (t[i].ndim >= 0 && !rc) rc = attn_view_bhtc(&din[i], &t[i], B, H, T[i], Cc[i]);
    for (int i = 0; i < 3; i++) fnn_tensor_clear(&t[i]);
    for (int i = 0; i < 4; i++) fnn_tensor_clear(&tmp[i]);
    fnn_tensor_clear(&ds);
    if (rc) for (int i = 0; i < 3; i++) fnn_tensor_clear(&din[i]);
    return rc;
}
static const fnn_op_def ATTENTION = {.info = {.name = "attention", .family = "attention", .differentiable = 1},
    .backward = attention_rule};

/* the padding mask as bytes [B, Tk] (1 = padding) in buf */
static void attn_pad_bytes(const fnn_attn_args *a, unsigned char *buf) {
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t j = 0; j < a->Tk; j++) {
            int64_t off = b * a->ms0 + j * a->ms1;
            buf[b * a->Tk + j] = a->mask_i64 ? ((const int64_t *)a->mask)[off] != 0
                                             : ((const float *)a->mask)[off] != 0.0f;
        }
}

/* the CPU's rows: the heads split over the threads (attn_run), the mask as bytes for the forward */
static int cpu_attention(int ordinal, const fnn_attn_args *a) {
    (void)ordinal;
    const int64_t pad_bytes = a->mask ? a->B * a->Tk : 0;
    unsigned char *pad = NULL;
    if (pad_bytes > 0) {
        if (!(pad = fnn_alloc(FNN_DEVICE_CPU, pad_bytes))) return fnn_last_status();
        attn_pad_bytes(a, pad);
    }
    attn_fwd_ctx cx = {a, pad};
    attn_run(a->B * a->H, 2.0 * (double)(a->B * a->H) * (double)(a->Tq * a->Tk) * (double)(a->D + a->Dv),
             attn_fwd_heads, &cx);
    if (pad) fnn_free(FNN_DEVICE_CPU, pad, pad_bytes);
    return FNN_STATUS_OK;
}
static int cpu_attention_grad(int ordinal, const fnn_attn_args *a) {
    (void)ordinal;
    attn_run(a->B * a->H, 2.0 * (double)(a->B * a->H) * (double)(a->Tq * a->Tk) * (double)(2 * a->D + 2 * a->Dv),
             attn_bwd_heads, (void *)a);
    return FNN_STATUS_OK;
}

int fnn_attention(fnn_tensor *out, const fnn_tensor *q, const fnn_tensor *k, const fnn_tensor *v,
                  const fnn_tensor *key_padding_mask, int causal, double scale) {
    FNN_TRY(fnn_check_input("attention", q));
    FNN_TRY(fnn_check_input("attention", k));
    FNN_TRY(fnn_check_input("attention", v));
    FNN_TRY(fnn_check_same_device("attention", q, k));
    FNN_TRY(fnn_check_same_device("attention", q, v));
    FNN_CHECK(q->ndim == 4 && k->ndim == 4 && v->ndim == 4 && k->shape[0] == q->shape[0] &&
              v->shape[0] == q->shape[0] && k->shape[1] == q->shape[1] && v->shape[1] == q->shape[1] &&
              k->shape[3] == q->shape[3] && v->shape[2] == k->shape[2],
              FNN_STATUS_SHAPE,
              "attention: q %s, k %s and v %s do not agree (expected q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv])",
              fnn_shape_of(q).s, fnn_shape_of(k).s, fnn_shape_of(v).s);
    const int64_t B = q->shape[0], H = q->shape[1], Tq = q->shape[2], D = q->shape[3];
    const int64_t Tk = k->shape[2], Dv = v->shape[3];
    const fnn_tensor *m = key_padding_mask;
    if (m) {
        FNN_TRY(fnn_check_input_any("attention", m));
        FNN_TRY(fnn_check_same_device("attention", q, m));
        FNN_CHECK(m->ndim == 2 && m->shape[0] == B && m->shape[1] == Tk, FNN_STATUS_SHAPE,
                  "attention: key_padding_mask %s does not match keys %s (expected [%lld,%lld])",
                  fnn_shape_of(m).s, fnn_shape_of(k).s, (long long)B, (long long)Tk);
    }
    FNN_CHECK(isfinite(scale), FNN_STATUS_ARG, "attention: scale %g is not finite (q %s)", scale, fnn_shape_of(q).s);
    const fnn_attn_row *row = fnn_attention_row_for(q->device, "attention");
    if (!row || !row->forward) return FNN_ROW_REFUSED("attention", q->device, false);
    const fnn_tensor *ins[3] = {q, k, v};
    const bool grad = fnn_needs_node(3, ins);
    fnn_tensor qt, kt, vt, o, p;
    fnn_tensor_init(&o);
    fnn_tensor_init(&p);
    fnn_tensor_init(&qt);
    fnn_tensor_init(&kt);
    fnn_tensor_init(&vt);
    fnn_attn_args a = {0};
    const fnn_tensor *qu = NULL, *ku = NULL, *vu = NULL;
    int rc = attn_read(q, &qt, &a.q, &qu);
    if (!rc) rc = attn_read(k, &kt, &a.k, &ku);
    if (!rc) rc = attn_read(v, &vt, &a.v, &vu);
    int64_t oshape[4] = {B, Tq, H, Dv}, pshape[4] = {B, H, Tq, Tk};
    if (!rc) rc = fnn_new_output(&o, q->device, 4, oshape);
    if (!rc) rc = fnn_new_output(&p, q->device, 4, pshape);
    if (!rc) {
        a.mask = m ? fnn_bytes(m) : NULL;
        a.mask_i64 = m && fnn_is_int64(m);
        a.ms0 = m ? m->stride[0] : 0;
        a.ms1 = m ? m->stride[1] : 0;
        a.p = fnn_data(&p);
        a.o = fnn_data(&o);
        a.B = B; a.H = H; a.Tq = Tq; a.Tk = Tk; a.D = D; a.Dv = Dv;
        a.scale = (float)scale;
        a.causal = causal != 0;
        rc = row->forward(fnn_device_ordinal(q->device), &a);
        if (!rc) rc = attn_view_bhtc(out, &o, B, H, Tq, Dv);   /* after the kernel: a small o's data is copied */
    }
    if (!rc && grad) {
        fnn_node *n = fnn_attach_node(out, &ATTENTION, 3, ins);
        if (!n) rc = fnn_last_status();
        else {
            *FNN_ATTRS(n, attention_attrs) =
                (attention_attrs){.scale = scale, .causal = causal != 0, .padded = key_padding_mask != NULL};
            if (fnn_save(n, 0, qu) || fnn_save(n, 1, ku) || fnn_save(n, 2, vu) || fnn_save(n, 3, &p))
                rc = fnn_last_status();
        }
    }
    fnn_tensor_clear(&qt);
    fnn_tensor_clear(&kt);
    fnn_tensor_clear(&vt);
    fnn_tensor_clear(&o);
    fnn_tensor_clear(&p);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= attention_cache_append: k, v [B,H,t,D] into buffers [B,H,cap,D] at pos ================= */

/* one buffer (the CPU row's cache_write): rows pos..pos+t-1 of every (batch, head) */
static int cpu_cache_write(int ordinal, float *dst, int64_t cap, int64_t pos, const float *src, const int64_t *xstride,
                           const int64_t *xshape) {
    (void)ordinal;
    const int64_t B = xshape[0], H = xshape[1], t = xshape[2], C = xshape[3];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < t; i++) {
                float *d = dst + ((b * H + h) * cap + pos + i) * C;
                const float *s = src + b * xstride[0] + h * xstride[1] + i * xstride[2];
                if (xstride[3] == 1) memcpy(d, s, sizeof(float) * (size_t)C);
                else for (int64_t c = 0; c < C; c++) d[c] = s[c * xstride[3]];
            }
    return FNN_STATUS_OK;
}

/* one buffer through the row of its backend */
static int cache_write(fnn_tensor *buf, const fnn_tensor *x, int64_t pos) {
    const fnn_attn_row *row = fnn_attention_row_for(buf->device, "attention");
    return row->cache_write(fnn_device_ordinal(buf->device), fnn_data(buf), buf->shape[2], pos, fnn_data(x), x->stride,
                            x->shape);
}

static int cache_check(const char *what, const fnn_tensor *buf, const fnn_tensor *x, int64_t pos) {
    FNN_TRY(fnn_check_input("attention_cache_append", buf));
    FNN_TRY(fnn_check_input("attention_cache_append", x));
    FNN_TRY(fnn_check_same_device("attention_cache_append", buf, x));
    const fnn_attn_row *row = fnn_attention_row_for(buf->device, "attention");
    if (!row || !row->cache_write) return FNN_ROW_REFUSED("attention_cache_append", buf->device, false);
    FNN_CHECK(buf->ndim == 4 && fnn_tensor_is_contiguous(buf) && buf->node == NULL, FNN_STATUS_ARG,
              "attention_cache_append: %s buffer %s must be a contiguous 4-d tensor without a graph", what,
              fnn_shape_of(buf).s);
    FNN_CHECK(x->ndim == 4 && x->shape[0] == buf->shape[0] && x->shape[1] == buf->shape[1] &&
              x->shape[3] == buf->shape[3], FNN_STATUS_SHAPE,
              "attention_cache_append: %s %s does not fit the buffer %s (expected [%lld,%lld,t,%lld])", what,
              fnn_shape_of(x).s, fnn_shape_of(buf).s, (long long)buf->shape[0], (long long)buf->shape[1],
              (long long)buf->shape[3]);
    FNN_CHECK(pos >= 0 && pos + x->shape[2] <= buf->shape[2], FNN_STATUS_ARG,
              "attention_cache_append: positions %lld..%lld of %s %s are outside the buffer %s", (long long)pos + 1,
              (long long)(pos + x->shape[2]), what, fnn_shape_of(x).s, fnn_shape_of(buf).s);
    return FNN_STATUS_OK;
}

int fnn_attention_cache_append(fnn_tensor *k_cache, fnn_tensor *v_cache, const fnn_tensor *k, const fnn_tensor *v,
                               int64_t pos) {
    FNN_TRY(cache_check("keys", k_cache, k, pos));
    FNN_TRY(cache_check("values", v_cache, v, pos));
    FNN_CHECK(k->shape[2] == v->shape[2], FNN_STATUS_SHAPE,
              "attention_cache_append: keys %s and values %s have different lengths", fnn_shape_of(k).s,
              fnn_shape_of(v).s);
    FNN_TRY(cache_write(k_cache, k, pos));
    return cache_write(v_cache, v, pos);
}

const fnn_op_def *const fnn_ops_attention[] = {&ATTENTION, NULL};

/* the CPU's rows (attention.h) */
const fnn_attn_row fnn_cpu_attention_rows[] = {
    {"attention", cpu_attention, cpu_attention_grad, cpu_cache_write},
    {NULL, NULL, NULL, NULL},
};
