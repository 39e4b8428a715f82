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
 * plain loops, and in fnn_sgemm (blas.c) above ATTN_OWN_MAX or under the oneDNN kernels.
 * Up to ATTN_BK keys the forward writes P [B,H,Tq,Tk] whole and the backward reads it; past that
 * (the flash path, below attn_bwd_heads) it runs FlashAttention-2's blocks with an online softmax
 * and keeps only each query's log-sum-exp: no [Tq,Tk] buffer exists at any length. */
#include "attention.h"
#include "../fastmath.h"
#include <math.h>
#include <string.h>

/* ================= shared ================= */

/* below this many multiply-adds a cblas call costs more than plain loops */
enum { ATTN_GEMM_MIN = 4096 };

/* c[m,n] = alpha op(a) op(b) (+ c when sum_into), row-major; ta: a is stored [k,m]; tb: b is stored [n,k]
 * (ta && tb unused); exact: bit 0 a, bit 1 b hold bf16 values already (bf16 precision rounds neither) */
static void attn_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float *c, int64_t ldc, int sum_into, unsigned exact) {
    /* one or two rows (a decode step's query) stay in plain loops at any length: a cblas call on a
     * single row costs more than the row itself */
    if ((m > 2 && m * n * k >= ATTN_GEMM_MIN) || fnn_prec_bf16(FNN_PREC_MATMUL)) {   /* bf16: rounded operands */
        fnn_gemm_prec_exact(FNN_PREC_MATMUL, exact, ta, tb, m, n, k, alpha, a, lda, b, ldb, sum_into ? 1.0f : 0.0f,
                            c, ldc);
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
                c[i * ldc + j] = alpha * s + (sum_into ? c[i * ldc + j] : 0.0f);
            }
        return;
    }
    if (!sum_into)
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

/* c[m,n] = alpha a[m,k] b[k,n] (+ c when acc: the flash blocks' sums), row-major (b's rows dense). With a
 * limit, rows i0..i0+3 need only columns (LIM_N) or terms (LIM_K) below i0 + 4 + lim (the causal band; P
 * is zero beyond it), or (LIM_K_LO) terms from i0 + lim on (P^T and dS^T, zero before it); columns past a
 * limit are left unwritten */
FNN_CLONES_V3 static void mm_nn(int64_t m, int64_t n, int64_t k, float alpha, const float *restrict a, int64_t lda,
                             const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc, int lim_mode,
                             int64_t lim, int acc) {
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
                if (acc) {
                    attn_v8 t;
                    memcpy(&t, c0 + j, sizeof t); s00 += t; memcpy(&t, c0 + j + 8, sizeof t); s01 += t;
                    memcpy(&t, c1 + j, sizeof t); s10 += t; memcpy(&t, c1 + j + 8, sizeof t); s11 += t;
                    memcpy(&t, c2 + j, sizeof t); s20 += t; memcpy(&t, c2 + j + 8, sizeof t); s21 += t;
                    memcpy(&t, c3 + j, sizeof t); s30 += t; memcpy(&t, c3 + j + 8, sizeof t); s31 += t;
                }
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
                if (acc) {
                    attn_v8 t;
                    memcpy(&t, c0 + j, sizeof t); s0 += t; memcpy(&t, c1 + j, sizeof t); s1 += t;
                    memcpy(&t, c2 + j, sizeof t); s2 += t; memcpy(&t, c3 + j, sizeof t); s3 += t;
                }
                memcpy(c0 + j, &s0, sizeof s0); memcpy(c1 + j, &s1, sizeof s1);
                memcpy(c2 + j, &s2, sizeof s2); memcpy(c3 + j, &s3, sizeof s3);
            }
        }
        /* what is left (the last columns, or the rows of a short block): row by row */
        for (int64_t r = 0; r < mr; r++) {
            const float *ar = a + (i0 + r) * lda;
            float *cr = c + (i0 + r) * ldc;
            if (!acc)
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
    m->p = fnn_is_bf16(u) ? NULL : fnn_data(u);   /* bfloat16: the CPU's whole-P rows widen it by head */
    m->h = fnn_is_bf16(u) ? (const uint16_t *)fnn_bytes(u) : NULL;
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
    /* the workers take the caller's autocast depth (fnn_parallel_team), so every head rounds its
     * operands under autocast at any thread count */
    fnn_sgemm_parallel_for(heads, t, fn, ctx);
}

/* ================= attention: q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] -> [B,H,Tq,Dv] ================= */

/* the CPU forward's heads: the op's arguments and the padding mask as bytes [B, Tk] (1 = padding) or NULL */
typedef struct {
    const fnn_attn_args *a;
    const unsigned char *pad;
    int failed;   /* a part could not allocate its heads' widening scratch */
} attn_fwd_ctx;

/* head (b, h) of m, rows x cols, as float32 rows: in place, or (bfloat16) widened into buf, dense; *ld is
 * their stride. A head's values widen in cache, where a pass over each whole tensor first cost 12% of
 * char_gpt's attention forward under autocast (its rows are 32 values, 768 bytes apart) */
static const float *attn_head(const fnn_attn_mat *m, int64_t b, int64_t h, int64_t rows, int64_t cols, float *buf,
                              int64_t *ld) {
    const int64_t off = b * m->s[0] + h * m->s[1];
    if (!m->h) {
        *ld = m->s[2];
        return m->p + off;
    }
    fnn_bf16_widen_rows(buf, cols, m->h + off, m->s[2], rows, cols);
    *ld = cols;
    return buf;
}

/* a thread's scratch for attn_head: q's, k's and v's parts (NULL where float32). false, with *failed set
 * for the part's caller, when it cannot be allocated */
typedef struct { float *q, *k, *v, *all; int64_t bytes; } attn_wide;
static bool attn_wide_alloc(attn_wide *w, const fnn_attn_args *a, int *failed) {
    const int64_t n = (a->q.h ? a->Tq * a->D : 0) + (a->k.h ? a->Tk * a->D : 0) + (a->v.h ? a->Tk * a->Dv : 0);
    *w = (attn_wide){NULL, NULL, NULL, NULL, (int64_t)sizeof(float) * n};
    if (n == 0) return true;
    if (!(w->all = fnn_alloc(FNN_DEVICE_CPU, w->bytes))) {
        __atomic_store_n(failed, 1, __ATOMIC_RELAXED);
        return false;
    }
    float *at = w->all;
    if (a->q.h) w->q = at, at += a->Tq * a->D;
    if (a->k.h) w->k = at, at += a->Tk * a->D;
    if (a->v.h) w->v = at;
    return true;
}
static void attn_wide_free(attn_wide *w) {
    if (w->all) fnn_free(FNN_DEVICE_CPU, w->all, w->bytes);
}

/* the largest of s[0..n) over the keys that are not padding (pad NULL: every key), -inf when none */
static inline float attn_row_max(const float *restrict s, int64_t n, const unsigned char *restrict pad) {
    float mx = -FNN_INFF;
    if (pad) {
        for (int64_t j = 0; j < n; j++)
            if (!pad[j] && s[j] > mx) mx = s[j];
        return mx;
    }
    /* 8 lanes, so the loops vectorize */
    float m8[8] = {-FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF, -FNN_INFF};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) m8[l] = s[j + l] > m8[l] ? s[j + l] : m8[l];
    for (; j < n; j++) mx = s[j] > mx ? s[j] : mx;
    for (int l = 0; l < 8; l++) mx = m8[l] > mx ? m8[l] : mx;
    return mx;
}

/* the exps of a row's first n scores, computed over whole vectors: up to n rounded up to 8, within the row's
 * cap entries. A row's keys past n are zeroed after it anyway, and a loop that stops at n runs its last
 * (n mod 16) exps one by one: on char_gpt's causal 64 x 64 heads (n 1..64) the softmax took 1.5x as long */
static inline int64_t attn_exp_end(int64_t n, int64_t cap) {
    const int64_t full = (n + 7) / 8 * 8;
    return full < cap ? full : cap;
}

/* s[0..n) -> exp(s - m), 0 at padding keys; s[n..cap) are overwritten (the caller zeroes them) */
static inline void attn_exps(float *restrict s, int64_t n, int64_t cap, float m, const unsigned char *restrict pad) {
    const int64_t end = attn_exp_end(n, cap);
    for (int64_t j = 0; j < end; j++) s[j] = fnn_expf(s[j] - m);
    if (pad)
        for (int64_t j = 0; j < n; j++) s[j] = pad[j] ? 0.0f : s[j];
}

/* attn_exps, returning the sum of s[0..n) (8 lanes, a fixed order) */
static inline float attn_exp_sum(float *restrict s, int64_t n, int64_t cap, float m, const unsigned char *restrict pad) {
    attn_exps(s, n, cap, m, pad);
    float a8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) a8[l] += s[j + l];
    float sum = ((a8[0] + a8[4]) + (a8[1] + a8[5])) + ((a8[2] + a8[6]) + (a8[3] + a8[7]));
    for (; j < n; j++) sum += s[j];
    return sum;
}

/* one row of scores -> probabilities over the keys query i may see (keys 0..last, not padding) */
static FNN_CLONES_V4 void attn_softmax_row(float *restrict s, int64_t Tk, int64_t last, const unsigned char *restrict pad) {
    if (last > Tk - 1) last = Tk - 1;
    const int64_t n = last + 1 > 0 ? last + 1 : 0;
    const float mx = attn_row_max(s, n, pad);
    if (mx == -FNN_INFF) {   /* no visible key (or all -inf): zeros */
        memset(s, 0, sizeof(float) * (size_t)Tk);
        return;
    }
    const float inv = 1.0f / attn_exp_sum(s, n, Tk, mx, pad);
    for (int64_t j = 0; j < n; j++) s[j] *= inv;
    for (int64_t j = n; j < Tk; j++) s[j] = 0;
}

/* the own kernel's path for a product of m rows and m*n*k multiply-adds */
/* the own kernel runs only under the portable kernels: oneDNN's GEMM beat it on char_gpt's heads
 * (64 x 64 x 32, causal), even with the whole product computed: attention backward 165-172 against
 * 226-277 ms, forward 130-146 against 139-171 ms over 51 steps (three interleaved pairs); never under
 * bf16 precision, whose rounded operands only fnn_gemm_prec makes (as attn_gemm's small products) */
static inline bool attn_own(int64_t m, int64_t mnk) {
    return m > 2 && mnk <= ATTN_OWN_MAX && fnn_blas_portable() && !fnn_prec_bf16(FNN_PREC_MATMUL);
}

/* bf16 precision off the bf16 units (operands rounded, float32 products): a head's operands that are used
 * twice or are kept float32 (P, g, dS) are rounded once into a thread's scratch, not by each product */
static inline bool attn_round_once(void) { return fnn_prec_bf16(FNN_PREC_MATMUL) && !fnn_bf16_native(); }

/* a's exact bits for q, k, v (fnn_attn_args.exact) as attn_gemm's bit for its operand a (1) or b (2) */
static inline unsigned attn_exact(const fnn_attn_args *a, unsigned which, unsigned as) {
    return a->exact & which ? as : 0u;
}

static void attn_fwd_heads(void *ctx, int64_t lo, int64_t hi) {
    attn_fwd_ctx *cx = ctx;
    const fnn_attn_args *a = cx->a;
    attn_wide wide;
    if (!attn_wide_alloc(&wide, a, &cx->failed)) return;
    const int64_t H = a->H, Tq = a->Tq, Tk = a->Tk, D = a->D, Dv = a->Dv, off = Tk - Tq;
    const bool own = attn_own(Tq, Tq * Tk * (D > Dv ? D : Dv)), round_p = !own && attn_round_once();
    const int64_t sfloats = own ? D * Tk : round_p ? Tq * Tk : 0;
    const int64_t sbytes = (int64_t)sizeof(float) * (sfloats > 0 ? sfloats : 1);
    /* own: k^T of one head (mm_nn); round_p: P rounded for the product with v; else NULL (if the allocation
     * fails under round_p, the products round P themselves) */
    float *scratch = sfloats > 0 ? fnn_alloc(FNN_DEVICE_CPU, sbytes) : NULL;
    float *kt = own ? scratch : NULL, *rp = round_p ? scratch : NULL;
    const int lim_n = a->causal ? LIM_N : LIM_NONE, lim_k = a->causal ? LIM_K : LIM_NONE;
    const unsigned qk = attn_exact(a, 1u, 1u) | attn_exact(a, 2u, 2u), ve = attn_exact(a, 4u, 2u);
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / H, h = bh % H;
        int64_t ldq, ldk, ldv;
        const float *q = attn_head(&a->q, b, h, Tq, D, wide.q, &ldq);
        const float *k = attn_head(&a->k, b, h, Tk, D, wide.k, &ldk);
        const float *v = attn_head(&a->v, b, h, Tk, Dv, wide.v, &ldv);
        float *p = a->p + bh * Tq * Tk, *o = a->o + b * Tq * H * Dv + h * Dv;
        if (kt) {
            attn_transpose(kt, k, Tk, D, ldk);
            mm_nn(Tq, Tk, D, a->scale, q, ldq, kt, Tk, p, Tk, lim_n, off, 0);
        } else {
            attn_gemm(0, 1, Tq, Tk, D, a->scale, q, ldq, k, ldk, p, Tk, 0, qk);
        }
        const unsigned char *pad = cx->pad ? cx->pad + b * Tk : NULL;
        for (int64_t i = 0; i < Tq; i++)
            attn_softmax_row(p + i * Tk, Tk, a->causal ? i + off : Tk - 1, pad);
        if (kt) {
            mm_nn(Tq, Dv, Tk, 1.0f, p, Tk, v, ldv, o, H * Dv, lim_k, off, 0);
        } else if (rp) {   /* P stays float32 for the backward; its rounded copy multiplies v */
            fnn_round_bf16_matrix(rp, p, Tq, Tk, Tk);
            attn_gemm(0, 0, Tq, Dv, Tk, 1.0f, rp, Tk, v, ldv, o, H * Dv, 0, 1u | ve);
        } else {
            attn_gemm(0, 0, Tq, Dv, Tk, 1.0f, p, Tk, v, ldv, o, H * Dv, 0, ve);
        }
        if (a->oh)   /* the head's bfloat16 output, while its rows are in cache */
            fnn_bf16_narrow_rows(a->oh + (o - a->o), H * Dv, o, H * Dv, Tq, Dv);
    }
    if (scratch) fnn_free(FNN_DEVICE_CPU, scratch, sbytes);
    attn_wide_free(&wide);
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

/* the CPU backward's heads: the op's arguments, and a part that could not allocate its scratch */
typedef struct {
    const fnn_attn_args *a;
    int failed;
} attn_bwd_ctx;

static void attn_bwd_heads(void *ctx, int64_t lo, int64_t hi) {
    attn_bwd_ctx *cx = ctx;
    const fnn_attn_args *a = cx->a;
    attn_wide wide;
    if (!attn_wide_alloc(&wide, a, &cx->failed)) return;
    const int64_t H = a->H, Tq = a->Tq, Tk = a->Tk, D = a->D, Dv = a->Dv, off = Tk - Tq;
    const bool own = Tk > 2 && attn_own(Tq, Tq * Tk * (D > Dv ? D : Dv));
    /* one scratch for P^T, then v^T, then dS^T, in turn */
    const int64_t sfloats = Tk * (Tq > Dv ? Tq : Dv), sbytes = (int64_t)sizeof(float) * (sfloats > 0 ? sfloats : 1);
    float *t = own ? fnn_alloc(FNN_DEVICE_CPU, sbytes) : NULL;   /* NULL: the cblas path */
    /* bf16 precision off the units: P and the head's g rounded once into rp, rg (g multiplies twice); dS,
     * scratch of its own, rounded in place before its two products */
    const bool round_once = !t && attn_round_once();
    const int64_t rfloats = round_once ? Tq * Tk + Tq * Dv : 0, rbytes = (int64_t)sizeof(float) * rfloats;
    float *rp = rfloats > 0 ? fnn_alloc(FNN_DEVICE_CPU, rbytes) : NULL, *rg = rp ? rp + Tq * Tk : NULL;
    const int lim_n = a->causal ? LIM_N : LIM_NONE, lim_k = a->causal ? LIM_K : LIM_NONE;
    const int lim_lo = a->causal ? LIM_K_LO : LIM_NONE;
    const unsigned qe = attn_exact(a, 1u, 2u), ke = attn_exact(a, 2u, 2u), ve = attn_exact(a, 4u, 2u);
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / H, h = bh % H;
        int64_t ldq, ldk, ldv;
        const float *q = attn_head(&a->q, b, h, Tq, D, wide.q, &ldq);
        const float *k = attn_head(&a->k, b, h, Tk, D, wide.k, &ldk);
        const float *v = attn_head(&a->v, b, h, Tk, Dv, wide.v, &ldv);
        const float *g = a->g.p + b * a->g.s[0] + h * a->g.s[1];
        const float *p = a->p + bh * Tq * Tk;
        float *dv = a->dv ? a->dv + b * Tk * H * Dv + h * Dv : NULL;
        float *dq = a->dq ? a->dq + b * Tq * H * D + h * D : NULL;
        float *dk = a->dk ? a->dk + b * Tk * H * D + h * D : NULL;
        /* g as the products read it: rounded once (rg, dense) or in place through its stride */
        const float *gr = g;
        int64_t ldg = a->g.s[2];
        unsigned ge = 0;
        if (rg) {
            fnn_round_bf16_matrix(rg, g, Tq, Dv, ldg);
            gr = rg, ldg = Dv, ge = 1u;
        }
        if (dv && t) {
            attn_transpose(t, p, Tq, Tk, Tk);
            mm_nn(Tk, Dv, Tq, 1.0f, t, Tq, g, a->g.s[2], dv, H * Dv, lim_lo, -off, 0);
        } else if (dv && rp) {
            fnn_round_bf16_matrix(rp, p, Tq, Tk, Tk);
            attn_gemm(1, 0, Tk, Dv, Tq, 1.0f, rp, Tk, gr, ldg, dv, H * Dv, 0, 1u | 2u);
        } else if (dv) {   /* no scratch: g as it is (gr), each product rounding its own copies */
            attn_gemm(1, 0, Tk, Dv, Tq, 1.0f, p, Tk, gr, ldg, dv, H * Dv, 0, 0u);
        }
        if (!dq && !dk) continue;
        float *ds = a->ds + bh * Tq * Tk;
        if (t) {   /* dP (only the causal band is written) */
            attn_transpose(t, v, Tk, Dv, ldv);
            mm_nn(Tq, Tk, Dv, 1.0f, g, a->g.s[2], t, Tk, ds, Tk, lim_n, off, 0);
        } else {
            attn_gemm(0, 1, Tq, Tk, Dv, 1.0f, gr, ldg, v, ldv, ds, Tk, 0, ge | ve);
        }
        for (int64_t i = 0; i < Tq; i++) {   /* dS, zero outside the causal band */
            int64_t last = a->causal ? i + off : Tk - 1;
            if (last > Tk - 1) last = Tk - 1;
            attn_ds_row(p + i * Tk, ds + i * Tk, last + 1 > 0 ? last + 1 : 0, Tk);
        }
        /* dS is read by its two products only: rounded in place, as each would round it */
        const unsigned dse = rp ? 1u : 0u;
        if (rp) fnn_round_bf16_matrix(ds, ds, Tq, Tk, Tk);
        if (dq && t) mm_nn(Tq, D, Tk, a->scale, ds, Tk, k, ldk, dq, H * D, lim_k, off, 0);
        else if (dq) attn_gemm(0, 0, Tq, D, Tk, a->scale, ds, Tk, k, ldk, dq, H * D, 0, dse | ke);
        if (dk && t) {
            attn_transpose(t, ds, Tq, Tk, Tk);
            mm_nn(Tk, D, Tq, a->scale, t, Tq, q, ldq, dk, H * D, lim_lo, -off, 0);
        } else if (dk) {
            attn_gemm(1, 0, Tk, D, Tq, a->scale, ds, Tk, q, ldq, dk, H * D, 0, dse | qe);
        }
    }
    if (t) fnn_free(FNN_DEVICE_CPU, t, sbytes);
    if (rp) fnn_free(FNN_DEVICE_CPU, rp, rbytes);
    attn_wide_free(&wide);
}

/* ================= the flash path: past one key block, FlashAttention-2 in blocks ================= */

/* Past ATTN_BK keys the CPU writes no [Tq,Tk] matrix (the row's lse_from_tk): each (batch, head) runs
 * in blocks of ATTN_BQ queries x ATTN_BK keys whose scores live in a per-thread scratch (64 KB at 128 x
 * 128, in L2). The forward keeps each query's running max and sum (the online softmax), rescales its
 * partial output when the max grows, and saves the output and lse = max + log(sum); the backward
 * recomputes each block's P = exp(S - lse) (FlashAttention-2, Dao 2023): Di = rowsum(dO O), dV += P^T dO,
 * dP = dO V^T, dS = P (dP - Di), dQ += scale dS K, dK += scale dS^T Q. The products are the ones the
 * whole-matrix path takes (mm_nn under the portable kernels, else attn_gemm / fnn_gemm_prec), summing
 * into the outputs block after block; the causal key blocks past a query block's last query are skipped.
 * 128 x 128 against 64 x 64, 128 x 256 and 256 x 256 (AMD EPYC Zen 3, oneDNN's GEMM; B 2, H 4, D 64,
 * causal forward+backward, 1 thread, min of 3): T 1024 65 ms against 70, 69, 69; T 2048 239 against
 * 261, 244, 245; T 256 6.0 against 6.3, 7.4, 7.2 */
enum { ATTN_BQ = 128, ATTN_BK = 128 };

/* the keys 0 .. n-1 of a block of nk from key j0 that query i sees (causal: j <= i + Tk - Tq) */
static inline int64_t attn_seen(const fnn_attn_args *a, int64_t i, int64_t j0, int64_t nk) {
    if (!a->causal) return nk;
    const int64_t n = i + a->Tk - a->Tq - j0 + 1;
    return n < 0 ? 0 : n > nk ? nk : n;
}

/* one query's scores s[0..nk) in a key block -> exp(s - m) over the keys it sees (0..n-1, not padding),
 * zeros after, with m its running max raised to this block's; *m and *l (the running sum of exp(s - m))
 * updated. Returns the factor its partial output is rescaled by (1: the max did not move) */
static FNN_CLONES_V4 float attn_online_row(float *restrict s, int64_t nk, int64_t n, const unsigned char *restrict pad,
                                           float *m, float *l) {
    const float mx = attn_row_max(s, n, pad);
    const float m0 = *m, m1 = mx > m0 ? mx : m0;
    if (m1 == -FNN_INFF) {   /* no key seen yet (or only -inf scores): the output stays zero */
        memset(s, 0, sizeof(float) * (size_t)nk);
        return 1.0f;
    }
    const float sum = attn_exp_sum(s, n, nk, m1, pad);
    for (int64_t j = n; j < nk; j++) s[j] = 0;
    const float r = m0 == m1 ? 1.0f : m0 == -FNN_INFF ? 0.0f : fnn_expf(m0 - m1);
    *l = *l * r + sum;
    *m = m1;
    return r;
}

/* one query's P over a key block from its lse: exp(s - lse) over the keys it sees, zeros after */
static FNN_CLONES_V4 void attn_lse_row(float *restrict s, int64_t nk, int64_t n, const unsigned char *restrict pad,
                                       float lse) {
    if (lse == FNN_INFF) n = 0;   /* the query sees no key */
    attn_exps(s, n, nk, lse, pad);
    for (int64_t j = n; j < nk; j++) s[j] = 0;
}

/* dS = P (dP - di) in place of dP over the keys 0..n-1 a query sees, zeros after */
static FNN_CLONES_V3 void attn_ds_block_row(const float *restrict p, float *restrict d, int64_t n, int64_t nk, float di) {
    for (int64_t j = 0; j < n; j++) d[j] = p[j] * (d[j] - di);
    for (int64_t j = n; j < nk; j++) d[j] = 0;
}

/* the flash rows' parts: the op's arguments, the padding mask as bytes [B, Tk] (1 = padding) or NULL,
 * query blocks per head, and a part that could not allocate its scratch */
typedef struct {
    const fnn_attn_args *a;
    const unsigned char *pad;
    int64_t nqb;
    int failed;
} attn_flash_ctx;

/* the own kernel's path for the blocks (attn_own on a block's product) */
static bool attn_flash_own(const fnn_attn_args *a) {
    return attn_own(a->Tq < ATTN_BQ ? a->Tq : ATTN_BQ, (int64_t)ATTN_BQ * ATTN_BK * (a->D > a->Dv ? a->D : a->Dv));
}

/* the forward's parts: (batch, head, query block), the query blocks of a head paired first and last so
 * that contiguous ranges of them carry near-equal causal work. Under bf16 precision the products take P
 * normalized, as the composition rounds it (round(P) round(v)): a first pass over the key blocks finds
 * lse, a second takes exp(S - lse) (one more q k^T product) */
static void attn_fwd_flash(void *ctx, int64_t lo, int64_t hi) {
    if (lo >= hi) return;   /* no parts (an empty tensor): no scratch */
    attn_flash_ctx *cx = ctx;
    const fnn_attn_args *a = cx->a;
    const int64_t H = a->H, Tq = a->Tq, Tk = a->Tk, D = a->D, Dv = a->Dv, off = Tk - Tq, nqb = cx->nqb;
    const int64_t ldo = H * Dv;
    const bool own = attn_flash_own(a), two_pass = fnn_prec_bf16(FNN_PREC_MATMUL);
    const unsigned qk = attn_exact(a, 1u, 1u) | attn_exact(a, 2u, 2u), ve = attn_exact(a, 4u, 2u);
    const int lim_n = a->causal ? LIM_N : LIM_NONE, lim_k = a->causal ? LIM_K : LIM_NONE;
    const int64_t bq = Tq < ATTN_BQ ? Tq : ATTN_BQ;   /* a decode step's one query: a small scratch */
    const int64_t sbytes = (int64_t)sizeof(float) * (bq * ATTN_BK + 3 * bq + (own ? D * ATTN_BK : 0));
    float *s = fnn_alloc(FNN_DEVICE_CPU, sbytes);   /* scores, then P, of one block pair */
    if (!s) { __atomic_store_n(&cx->failed, 1, __ATOMIC_RELAXED); return; }
    float *mrow = s + bq * ATTN_BK, *lrow = mrow + bq, *lse = lrow + bq;   /* max, sum, lse */
    float *kt = own ? lse + bq : NULL;   /* a key block transposed, for mm_nn */
    for (int64_t u = lo; u < hi; u++) {
        const int64_t bh = u / nqb, r = u % nqb, qb = r % 2 ? nqb - 1 - r / 2 : r / 2;
        const int64_t b = bh / H, h = bh % H, i0 = qb * ATTN_BQ, mq = Tq - i0 < ATTN_BQ ? Tq - i0 : ATTN_BQ;
        const float *q = a->q.p + b * a->q.s[0] + h * a->q.s[1] + i0 * a->q.s[2];
        const float *k = a->k.p + b * a->k.s[0] + h * a->k.s[1];
        const float *v = a->v.p + b * a->v.s[0] + h * a->v.s[1];
        float *o = a->o + b * Tq * ldo + h * Dv + i0 * ldo;
        const unsigned char *pad = cx->pad ? cx->pad + b * Tk : NULL;
        int64_t kend = a->causal ? i0 + mq + off : Tk;   /* the keys the block's last query sees */
        kend = kend < 0 ? 0 : kend > Tk ? Tk : kend;
        for (int64_t i = 0; i < mq; i++) {
            mrow[i] = -FNN_INFF;
            lrow[i] = 0;
            memset(o + i * ldo, 0, sizeof(float) * (size_t)Dv);
        }
        for (int pass = two_pass ? 0 : 1; pass < 2; pass++) {   /* pass 0: bf16's lse pass */
            for (int64_t j0 = 0; j0 < kend; j0 += ATTN_BK) {
                const int64_t nk = Tk - j0 < ATTN_BK ? Tk - j0 : ATTN_BK, lim = i0 + off - j0;
                const float *kj = k + j0 * a->k.s[2], *vj = v + j0 * a->v.s[2];
                const unsigned char *pj = pad ? pad + j0 : NULL;
                if (own) {
                    attn_transpose(kt, kj, nk, D, a->k.s[2]);
                    mm_nn(mq, nk, D, a->scale, q, a->q.s[2], kt, nk, s, ATTN_BK, lim_n, lim, 0);
                } else {
                    attn_gemm(0, 1, mq, nk, D, a->scale, q, a->q.s[2], kj, a->k.s[2], s, ATTN_BK, 0, qk);
                }
                for (int64_t i = 0; i < mq; i++) {
                    float *si = s + i * ATTN_BK;
                    const int64_t n = attn_seen(a, i0 + i, j0, nk);
                    if (two_pass && pass == 1) {
                        attn_lse_row(si, nk, n, pj, lse[i]);
                        continue;
                    }
                    const float f = attn_online_row(si, nk, n, pj, &mrow[i], &lrow[i]);
                    if (!two_pass && f != 1.0f)
                        for (int64_t e = 0; e < Dv; e++) o[i * ldo + e] *= f;
                }
                if (pass == 0) continue;
                if (own) mm_nn(mq, Dv, nk, 1.0f, s, ATTN_BK, vj, a->v.s[2], o, ldo, lim_k, lim, 1);
                else attn_gemm(0, 0, mq, Dv, nk, 1.0f, s, ATTN_BK, vj, a->v.s[2], o, ldo, 1, ve);
            }
            if (pass == 0 || !two_pass)
                for (int64_t i = 0; i < mq; i++) lse[i] = lrow[i] > 0 ? mrow[i] + logf(lrow[i]) : FNN_INFF;
        }
        if (!two_pass)   /* the sums divided out; a query that saw no key keeps its zeros */
            for (int64_t i = 0; i < mq; i++) {
                const float inv = lrow[i] > 0 ? 1.0f / lrow[i] : 0.0f;
                for (int64_t e = 0; e < Dv; e++) o[i * ldo + e] *= inv;
            }
        if (a->lse) memcpy(a->lse + bh * Tq + i0, lse, sizeof(float) * (size_t)mq);
    }
    fnn_free(FNN_DEVICE_CPU, s, sbytes);
}

/* the backward's parts: (batch, head), key blocks outside, query blocks inside (FlashAttention-2's
 * order): dK and dV of a key block sum over its query blocks, dQ of each query block over the key blocks,
 * all in the outputs (each part writes only its own head's rows) */
static void attn_bwd_flash(void *ctx, int64_t lo, int64_t hi) {
    if (lo >= hi) return;   /* no parts (an empty tensor): no scratch */
    attn_flash_ctx *cx = ctx;
    const fnn_attn_args *a = cx->a;
    const int64_t H = a->H, Tq = a->Tq, Tk = a->Tk, D = a->D, Dv = a->Dv, off = Tk - Tq;
    const int64_t ldq = H * D, ldv = H * Dv, BB = (Tq < ATTN_BQ ? Tq : ATTN_BQ) * (int64_t)ATTN_BK;
    const bool own = attn_flash_own(a), ds = a->dq || a->dk, bf16 = fnn_prec_bf16(FNN_PREC_MATMUL);
    const unsigned qk = attn_exact(a, 1u, 1u) | attn_exact(a, 2u, 2u), qe = attn_exact(a, 1u, 2u),
                   ke = attn_exact(a, 2u, 2u), ve = attn_exact(a, 4u, 2u);
    const int lim_n = a->causal ? LIM_N : LIM_NONE, lim_k = a->causal ? LIM_K : LIM_NONE;
    const int lim_lo = a->causal ? LIM_K_LO : LIM_NONE;
    /* P, dP then dS, a transposed block (own), k^T and v^T of a key block (own), and Di of the head's queries */
    const int64_t sfloats = 2 * BB + (own ? BB + (D + Dv) * ATTN_BK : 0) + Tq;
    const int64_t sbytes = (int64_t)sizeof(float) * sfloats;
    float *s = fnn_alloc(FNN_DEVICE_CPU, sbytes);
    if (!s) { __atomic_store_n(&cx->failed, 1, __ATOMIC_RELAXED); return; }
    float *dp = s + BB, *tt = own ? dp + BB : NULL, *kt = own ? tt + BB : NULL, *vt = own ? kt + D * ATTN_BK : NULL;
    float *di = s + sfloats - Tq;
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / H, h = bh % H;
        const float *q = a->q.p + b * a->q.s[0] + h * a->q.s[1];
        const float *k = a->k.p + b * a->k.s[0] + h * a->k.s[1];
        const float *v = a->v.p + b * a->v.s[0] + h * a->v.s[1];
        const float *g = a->g.p + b * a->g.s[0] + h * a->g.s[1];
        const float *o = a->o + b * Tq * ldv + h * Dv, *lse = a->lse + bh * Tq;
        const unsigned char *pad = cx->pad ? cx->pad + b * Tk : NULL;
        float *dv = a->dv ? a->dv + b * Tk * ldv + h * Dv : NULL;
        float *dq = a->dq ? a->dq + b * Tq * ldq + h * D : NULL;
        float *dk = a->dk ? a->dk + b * Tk * ldq + h * D : NULL;
        for (int64_t i = 0; i < Tq && dq; i++) memset(dq + i * ldq, 0, sizeof(float) * (size_t)D);
        for (int64_t j = 0; j < Tk && dk; j++) memset(dk + j * ldq, 0, sizeof(float) * (size_t)D);
        for (int64_t j = 0; j < Tk && dv; j++) memset(dv + j * ldv, 0, sizeof(float) * (size_t)Dv);
        for (int64_t i = 0; i < Tq && ds && !bf16; i++) {   /* Di = rowsum(dO O) = rowsum(P dP) */
            const float *gi = g + i * a->g.s[2], *oi = o + i * ldv;
            float acc = 0;
            for (int64_t e = 0; e < Dv; e++) acc += gi[e] * oi[e];
            di[i] = acc;
        }
        /* under bf16 the output was made from rounded P and v, and rowsum(dO O) would differ from the
         * composition's softmax backward, rowsum(P dP) with dP = round(dO) round(v)^T, by bf16's error
         * on P: a pass over the blocks for rowsum(P dP) itself (two products more per block pair) */
        for (int64_t i0 = 0; i0 < Tq && ds && bf16; i0 += ATTN_BQ) {
            const int64_t mq = Tq - i0 < ATTN_BQ ? Tq - i0 : ATTN_BQ;
            const float *qi = q + i0 * a->q.s[2], *gi = g + i0 * a->g.s[2];
            int64_t kend = a->causal ? i0 + mq + off : Tk;
            kend = kend < 0 ? 0 : kend > Tk ? Tk : kend;
            for (int64_t i = 0; i < mq; i++) di[i0 + i] = 0;
            for (int64_t j0 = 0; j0 < kend; j0 += ATTN_BK) {
                const int64_t nk = Tk - j0 < ATTN_BK ? Tk - j0 : ATTN_BK;
                const float *kj = k + j0 * a->k.s[2], *vj = v + j0 * a->v.s[2];
                attn_gemm(0, 1, mq, nk, D, a->scale, qi, a->q.s[2], kj, a->k.s[2], s, ATTN_BK, 0, qk);
                attn_gemm(0, 1, mq, nk, Dv, 1.0f, gi, a->g.s[2], vj, a->v.s[2], dp, ATTN_BK, 0, ve);
                for (int64_t i = 0; i < mq; i++) {
                    float *si = s + i * ATTN_BK, *dpi = dp + i * ATTN_BK;
                    const int64_t n = attn_seen(a, i0 + i, j0, nk);
                    attn_lse_row(si, nk, n, pad ? pad + j0 : NULL, lse[i0 + i]);
                    float acc = 0;
                    for (int64_t j = 0; j < n; j++) acc += si[j] * dpi[j];
                    di[i0 + i] += acc;
                }
            }
        }
        for (int64_t j0 = 0; j0 < Tk; j0 += ATTN_BK) {
            const int64_t nk = Tk - j0 < ATTN_BK ? Tk - j0 : ATTN_BK;
            const float *kj = k + j0 * a->k.s[2], *vj = v + j0 * a->v.s[2];
            const unsigned char *pj = pad ? pad + j0 : NULL;
            if (own) {
                attn_transpose(kt, kj, nk, D, a->k.s[2]);
                if (ds) attn_transpose(vt, vj, nk, Dv, a->v.s[2]);
            }
            /* causal: the query blocks before the first query that sees key j0 are skipped */
            const int64_t first = a->causal && j0 - off > 0 ? j0 - off : 0;
            for (int64_t i0 = first / ATTN_BQ * ATTN_BQ; i0 < Tq; i0 += ATTN_BQ) {
                const int64_t mq = Tq - i0 < ATTN_BQ ? Tq - i0 : ATTN_BQ, lim = i0 + off - j0;
                const float *qi = q + i0 * a->q.s[2], *gi = g + i0 * a->g.s[2];
                if (own) mm_nn(mq, nk, D, a->scale, qi, a->q.s[2], kt, nk, s, ATTN_BK, lim_n, lim, 0);
                else attn_gemm(0, 1, mq, nk, D, a->scale, qi, a->q.s[2], kj, a->k.s[2], s, ATTN_BK, 0, qk);
                for (int64_t i = 0; i < mq; i++)
                    attn_lse_row(s + i * ATTN_BK, nk, attn_seen(a, i0 + i, j0, nk), pj, lse[i0 + i]);
                if (dv && own) {   /* dV += P^T dO */
                    attn_transpose(tt, s, mq, nk, ATTN_BK);
                    mm_nn(nk, Dv, mq, 1.0f, tt, mq, gi, a->g.s[2], dv + j0 * ldv, ldv, lim_lo, -lim, 1);
                } else if (dv) {
                    attn_gemm(1, 0, nk, Dv, mq, 1.0f, s, ATTN_BK, gi, a->g.s[2], dv + j0 * ldv, ldv, 1, 0u);
                }
                if (!ds) continue;
                if (own) mm_nn(mq, nk, Dv, 1.0f, gi, a->g.s[2], vt, nk, dp, ATTN_BK, lim_n, lim, 0);   /* dP = dO V^T */
                else attn_gemm(0, 1, mq, nk, Dv, 1.0f, gi, a->g.s[2], vj, a->v.s[2], dp, ATTN_BK, 0, ve);
                for (int64_t i = 0; i < mq; i++)
                    attn_ds_block_row(s + i * ATTN_BK, dp + i * ATTN_BK, attn_seen(a, i0 + i, j0, nk), nk, di[i0 + i]);
                if (dq && own)   /* dQ += scale dS K */
                    mm_nn(mq, D, nk, a->scale, dp, ATTN_BK, kj, a->k.s[2], dq + i0 * ldq, ldq, lim_k, lim, 1);
                else if (dq)
                    attn_gemm(0, 0, mq, D, nk, a->scale, dp, ATTN_BK, kj, a->k.s[2], dq + i0 * ldq, ldq, 1, ke);
                if (dk && own) {   /* dK += scale dS^T Q */
                    attn_transpose(tt, dp, mq, nk, ATTN_BK);
                    mm_nn(nk, D, mq, a->scale, tt, mq, qi, a->q.s[2], dk + j0 * ldq, ldq, lim_lo, -lim, 1);
                } else if (dk) {
                    attn_gemm(1, 0, nk, D, mq, a->scale, dp, ATTN_BK, qi, a->q.s[2], dk + j0 * ldq, ldq, 1, qe);
                }
            }
        }
    }
    fnn_free(FNN_DEVICE_CPU, s, sbytes);
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

/* saved: q, k, v as read (views or contiguous copies), and what the row keeps: P [B,H,Tq,Tk], or the flat
 * storage the output is a view of, [o | lse | the mask as float32 0/1 when one was given]; attention_attrs */
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
    /* a bfloat16 q, k or v (saved as given): read as it is by the whole-P rows (widened by head), widened
     * whole, exactly, for the flash path (lse kept): the float32 op of the widened composition */
    const bool lse_kept = p->ndim == 1;
    fnn_tensor wide[3];
    const fnn_tensor *qkv[3] = {q, k, v};
    int rc = FNN_STATUS_OK;
    for (int i = 0; i < 3; i++) {
        fnn_tensor_init(&wide[i]);
        if (fnn_is_bf16(qkv[i])) a.exact |= 1u << i;
        if (!rc && lse_kept && fnn_is_bf16(qkv[i])) rc = fnn_bf16_widen_view(&wide[i], qkv[i]), qkv[i] = &wide[i];
    }
    q = qkv[0], k = qkv[1], v = qkv[2];
    fnn_set_op("attention");
    if (!rc) rc = attn_read(q, &tmp[0], &a.q, &used);   /* saved as read: no copies but g's (and the widened) */
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
    if (!rc && !lse_kept && (n->next[0] || n->next[1])) rc = fnn_new_output(&ds, q->device, 4, sshape);
    if (!rc && lse_kept) {
        a.o = fnn_data(p);
        a.lse = a.o + B * Tq * H * Dv;
        if (FNN_ATTRS(n, attention_attrs)->padded) {
            a.mask = a.lse + B * H * Tq;
            a.ms0 = Tk;
            a.ms1 = 1;
        }
    }
    if (!rc) {
        a.p = lse_kept ? NULL : fnn_data(p);
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
    for (int i = 0; i < 3; i++) fnn_tensor_clear(&wide[i]);
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

/* the padding mask as float32 0/1 [B, Tk] in buf (the backward's copy, when lse is kept) */
static void attn_mask_floats(const fnn_attn_args *a, float *buf) {
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t j = 0; j < a->Tk; j++) {
            int64_t off = b * a->ms0 + j * a->ms1;
            buf[b * a->Tk + j] = (a->mask_i64 ? ((const int64_t *)a->mask)[off] != 0
                                              : ((const float *)a->mask)[off] != 0.0f) ? 1.0f : 0.0f;
        }
}

/* the CPU's rows: the heads (or the flash path's query blocks) split over the threads (attn_run), the
 * mask as bytes; P kept (a->p) below ATTN_BK + 1 keys, lse from there (fnn_cpu_attention_rows) */
static int cpu_attention(int ordinal, const fnn_attn_args *a) {
    (void)ordinal;
    const int64_t pad_bytes = a->mask ? a->B * a->Tk : 0;
    unsigned char *pad = NULL;
    if (pad_bytes > 0) {
        if (!(pad = fnn_alloc(FNN_DEVICE_CPU, pad_bytes))) return fnn_last_status();
        attn_pad_bytes(a, pad);
    }
    const double flops = 2.0 * (double)(a->B * a->H) * (double)(a->Tq * a->Tk) * (double)(a->D + a->Dv);
    attn_flash_ctx fx = {a, pad, (a->Tq + ATTN_BQ - 1) / ATTN_BQ, 0};
    if (a->p) {
        attn_fwd_ctx cx = {a, pad, 0};
        attn_run(a->B * a->H, flops, attn_fwd_heads, &cx);
        fx.failed = cx.failed;
    } else {
        attn_run(a->B * a->H * fx.nqb, flops, attn_fwd_flash, &fx);
    }
    if (pad) fnn_free(FNN_DEVICE_CPU, pad, pad_bytes);
    if (fx.failed) return FNN_FAIL(FNN_STATUS_OOM, "attention: cannot allocate a thread's block scratch");
    /* the bfloat16 output: the whole-P heads round theirs; after the flash path's blocks (their output rows
     * are rescaled until the last key block), one pass over the threads (as linear's narrow_output) */
    const int64_t on = a->B * a->Tq * a->H * a->Dv;
    if (a->oh && !a->p && on > 0) fnn_to_bf16_matrix(a->oh, a->o, 1, on, on);
    return FNN_STATUS_OK;
}
static int cpu_attention_grad(int ordinal, const fnn_attn_args *a) {
    (void)ordinal;
    const double flops = 2.0 * (double)(a->B * a->H) * (double)(a->Tq * a->Tk) * (double)(2 * a->D + 2 * a->Dv);
    if (a->p) {
        attn_bwd_ctx cx = {a, 0};
        attn_run(a->B * a->H, flops, attn_bwd_heads, &cx);
        if (cx.failed) return FNN_FAIL(FNN_STATUS_OOM, "attention: cannot allocate a thread's head scratch");
        return FNN_STATUS_OK;
    }
    const int64_t pad_bytes = a->mask ? a->B * a->Tk : 0;
    unsigned char *pad = NULL;
    if (pad_bytes > 0) {
        if (!(pad = fnn_alloc(FNN_DEVICE_CPU, pad_bytes))) return fnn_last_status();
        attn_pad_bytes(a, pad);
    }
    /* P recomputed: one product more than the whole-matrix backward */
    attn_flash_ctx fx = {a, pad, 0, 0};
    attn_run(a->B * a->H, flops * 1.25, attn_bwd_flash, &fx);
    if (pad) fnn_free(FNN_DEVICE_CPU, pad, pad_bytes);
    if (fx.failed) return FNN_FAIL(FNN_STATUS_OOM, "attention: cannot allocate a thread's block scratch");
    return FNN_STATUS_OK;
}

int fnn_attention(fnn_tensor *out, const fnn_tensor *q, const fnn_tensor *k, const fnn_tensor *v,
                  const fnn_tensor *key_padding_mask, int causal, double scale) {
    FNN_TRY(fnn_check_float_or_host_bf16("attention", q, "q"));
    FNN_TRY(fnn_check_float_or_host_bf16("attention", k, "k"));
    FNN_TRY(fnn_check_float_or_host_bf16("attention", v, "v"));
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
    /* bfloat16 out (precision.lua's rule, so the wrapper's numbers): inside an autocast region not held, or
     * when q, k and v are all bfloat16 (the mask, inside the options, is not an input to it); float32
     * otherwise. The row computes in float32 on the widened operands (its products rounded under bf16
     * precision or autocast) and rounds o into out (oh) */
    const bool narrow =
        fnn_in_host_memory(q) && ((fnn_is_bf16(q) && fnn_is_bf16(k) && fnn_is_bf16(v)) || fnn_autocast_on());
    fnn_tensor qt, kt, vt, o, p, oh, wide[4];
    fnn_tensor_init(&o);
    fnn_tensor_init(&p);
    fnn_tensor_init(&oh);
    fnn_tensor_init(&qt);
    fnn_tensor_init(&kt);
    fnn_tensor_init(&vt);
    for (int i = 0; i < 4; i++) fnn_tensor_init(&wide[i]);
    fnn_attn_args a = {0};
    const fnn_tensor *qu = NULL, *ku = NULL, *vu = NULL;
    /* what the row keeps (attention.h): P, or lse. With lse and a backward to come, the output's storage
     * holds [o | lse | the mask as float32 0/1], saved whole (a node has four slots: q, k, v and this) */
    const bool keep_lse = row->lse_from_tk > 0 && Tk >= row->lse_from_tk;
    /* bfloat16 q, k, v: read as they are by the whole-P rows (each head widened in a thread's scratch), or
     * for the flash path widened once, exactly, into contiguous float32 operands (the composition's
     * :float()); a bfloat16 mask as float32 (the rows read float32 or int64) */
    const fnn_tensor *qf = q, *kf = k, *vf = v;
    int rc = FNN_STATUS_OK;
    if (keep_lse && fnn_is_bf16(q)) rc = fnn_bf16_widen_view(&wide[0], q), qf = &wide[0];
    if (!rc && keep_lse && fnn_is_bf16(k)) rc = fnn_bf16_widen_view(&wide[1], k), kf = &wide[1];
    if (!rc && keep_lse && fnn_is_bf16(v)) rc = fnn_bf16_widen_view(&wide[2], v), vf = &wide[2];
    if (!rc && m && fnn_is_bf16(m)) rc = fnn_cast(&wide[3], m, FNN_DTYPE_FLOAT32), m = &wide[3];
    fnn_set_op("attention");   /* the casts named themselves */
    a.exact = (fnn_is_bf16(q) ? 1u : 0u) | (fnn_is_bf16(k) ? 2u : 0u) | (fnn_is_bf16(v) ? 4u : 0u);   /* bf16 values */
    if (!rc) rc = attn_read(qf, &qt, &a.q, &qu);
    if (!rc) rc = attn_read(kf, &kt, &a.k, &ku);
    if (!rc) rc = attn_read(vf, &vt, &a.v, &vu);
    const int64_t on = B * Tq * H * Dv, ln = keep_lse && grad ? B * H * Tq : 0, mn = ln && m ? B * Tk : 0;
    int64_t oshape[4] = {B, Tq, H, Dv}, pshape[4] = {B, H, Tq, Tk}, flat[1] = {on + ln + mn};
    if (!rc) rc = keep_lse ? fnn_new_output(&o, q->device, 1, flat) : fnn_new_output(&o, q->device, 4, oshape);
    if (!rc && !keep_lse) rc = fnn_new_output(&p, q->device, 4, pshape);
    if (!rc && narrow) rc = fnn_new_output_dtype(&oh, q->device, FNN_DTYPE_BFLOAT16, 4, oshape);
    if (!rc) {
        a.mask = m ? fnn_bytes(m) : NULL;
        a.mask_i64 = m && fnn_is_int64(m);
        a.ms0 = m ? m->stride[0] : 0;
        a.ms1 = m ? m->stride[1] : 0;
        a.p = keep_lse ? NULL : fnn_data(&p);
        a.o = fnn_data(&o);
        a.lse = ln ? a.o + on : NULL;
        a.B = B; a.H = H; a.Tq = Tq; a.Tk = Tk; a.D = D; a.Dv = Dv;
        a.scale = (float)scale;
        a.causal = causal != 0;
        if (mn) attn_mask_floats(&a, a.o + on + ln);   /* on the host: only the CPU's row keeps lse */
        a.oh = narrow ? fnn_bytes(&oh) : NULL;
        rc = row->forward(fnn_device_ordinal(q->device), &a);
        /* after the kernel: a small o's data is copied; o itself is kept for the node */
        int64_t shape[4] = {B, H, Tq, Dv}, stride[4] = {Tq * H * Dv, Dv, H * Dv, 1};
        if (!rc) rc = fnn_make_view(out, narrow ? &oh : &o, 4, shape, stride, 0);
    }
    if (!rc && grad) {
        fnn_node *n = fnn_attach_node(out, &ATTENTION, 3, ins);
        if (!n) rc = fnn_last_status();
        else {
            *FNN_ATTRS(n, attention_attrs) =
                (attention_attrs){.scale = scale, .causal = causal != 0, .padded = key_padding_mask != NULL};
            /* a bfloat16 q, k or v saved as given (half the bytes), widened again by the rule */
            if (fnn_save(n, 0, fnn_is_bf16(q) ? q : qu) || fnn_save(n, 1, fnn_is_bf16(k) ? k : ku) ||
                fnn_save(n, 2, fnn_is_bf16(v) ? v : vu) || fnn_save(n, 3, keep_lse ? &o : &p))
                rc = fnn_last_status();
        }
    }
    fnn_tensor_clear(&qt);
    fnn_tensor_clear(&kt);
    fnn_tensor_clear(&vt);
    fnn_tensor_clear(&o);
    fnn_tensor_clear(&p);
    fnn_tensor_clear(&oh);
    for (int i = 0; i < 4; i++) fnn_tensor_clear(&wide[i]);
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
    {"attention", cpu_attention, cpu_attention_grad, cpu_cache_write, ATTN_BK + 1},
    {NULL, NULL, NULL, NULL, 0},
};
