/* core/precision.c: the float32 precision of the GEMM-bound families (fnn_set_float32_precision),
 * PyTorch's torch.backends.mkldnn.{matmul,conv,rnn}.fp32_precision. "ieee" (the default) computes in
 * float32; "bf16" lets the family's products take bfloat16 operands with float32 sums. Tensors stay
 * float32 either way: the operands are rounded inside the op, and that conversion is part of its cost.
 *
 * fnn_gemm_prec is the one GEMM the families call. Under "bf16" it runs oneDNN's bf16 matmul where
 * the CPU has bf16 units (blas.c, fnn_gemm_bf16), and elsewhere (no such units, the portable kernels,
 * inside an image or head slot's parallel part, a scale other than 1) it rounds the operands to
 * bfloat16 in float32 buffers and runs the float32 GEMM on them: a product of two bf16 values is exact
 * in float32, so both give the same numbers up to the order of the sums. */
#include "bf16.h"
#include "internal.h"

#include <stdatomic.h>
#include <string.h>

enum { PREC_IEEE, PREC_BF16 };
static const char *const FAMILY_NAMES[FNN_PREC_FAMILIES] = {"matmul", "conv", "rnn"};
static const char *const MODE_NAMES[] = {"ieee", "bf16"};

/* read by every GEMM from any host thread: process-wide, as PyTorch's setting is */
static atomic_int precision[FNN_PREC_FAMILIES];
/* fnn.autocast's regions on this thread: inside one, every family computes with bf16 operands */
static _Thread_local int autocast_depth;

static int family_of(const char *name) {
    for (int f = 0; f < FNN_PREC_FAMILIES; f++)
        if (name && strcmp(name, FAMILY_NAMES[f]) == 0) return f;
    return -1;
}

int fnn_set_float32_precision(const char *family, const char *mode) {
    int m = -1;
    for (int i = 0; i < 2; i++)
        if (mode && strcmp(mode, MODE_NAMES[i]) == 0) m = i;
    FNN_CHECK(m >= 0, FNN_STATUS_ARG, "set_float32_precision: precision '%s' unknown (expected 'ieee' or 'bf16')",
              mode ? mode : "(null)");
    if (family == NULL || strcmp(family, "all") == 0) {
        for (int f = 0; f < FNN_PREC_FAMILIES; f++) atomic_store_explicit(&precision[f], m, memory_order_relaxed);
        return FNN_STATUS_OK;
    }
    int f = family_of(family);
    FNN_CHECK(f >= 0, FNN_STATUS_ARG, "set_float32_precision: family '%s' unknown (expected matmul, conv or rnn)",
              family);
    atomic_store_explicit(&precision[f], m, memory_order_relaxed);
    return FNN_STATUS_OK;
}

const char *fnn_get_float32_precision(const char *family) {
    int f = family_of(family);
    return f < 0 ? NULL : MODE_NAMES[atomic_load_explicit(&precision[f], memory_order_relaxed)];
}

bool fnn_prec_bf16(int family) {
    return autocast_depth > 0 || atomic_load_explicit(&precision[family], memory_order_relaxed) == PREC_BF16;
}

int fnn_autocast_enter(void) { return ++autocast_depth; }
int fnn_autocast_exit(void) { return autocast_depth > 0 ? --autocast_depth : 0; }

/* ---- operand conversion: a rows x cols matrix at leading dimension ld into a dense one ---- */
typedef struct {
    const float *src;
    int64_t cols, ld;
    void *dst;
} conv_job;

FNN_CLONES_V4 static void to_bf16_rows(void *ctx, int64_t lo, int64_t hi) {
    const conv_job *j = ctx;
    uint16_t *dst = j->dst;
    for (int64_t r = lo; r < hi; r++) {
        const float *s = j->src + r * j->ld;
        uint16_t *d = dst + r * j->cols;
        for (int64_t c = 0; c < j->cols; c++) d[c] = fnn_bf16_from_f32(s[c]);
    }
}

FNN_CLONES_V4 static void round_rows(void *ctx, int64_t lo, int64_t hi) {
    const conv_job *j = ctx;
    float *dst = j->dst;
    for (int64_t r = lo; r < hi; r++) {
        const float *s = j->src + r * j->ld;
        float *d = dst + r * j->cols;
        for (int64_t c = 0; c < j->cols; c++) d[c] = fnn_bf16_round(s[c]);
    }
}

static void convert(fnn_range_fn fn, const float *src, int64_t rows, int64_t cols, int64_t ld, void *dst) {
    conv_job j = {src, cols, ld, dst};
    fnn_parallel_for(rows, fnn_in_parallel() ? 1 : fnn_threads_for(rows * cols), fn, &j);
}

void fnn_to_bf16_matrix(uint16_t *dst, const float *src, int64_t rows, int64_t cols, int64_t ld) {
    convert(to_bf16_rows, src, rows, cols, ld, dst);
}

void fnn_round_bf16_matrix(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld) {
    convert(round_rows, src, rows, cols, ld, dst);
}

/* the rounded copy of op(X)'s storage: X is (t ? inner x outer : outer x inner) at ld */
static float *rounded(const float *x, bool t, int64_t outer, int64_t inner, int64_t ld, int64_t *ld_out) {
    int64_t rows = t ? inner : outer, cols = t ? outer : inner;
    float *r = fnn_alloc(FNN_DEVICE_CPU, (int64_t)sizeof(float) * rows * cols);
    if (r) fnn_round_bf16_matrix(r, x, rows, cols, ld);
    *ld_out = cols;
    return r;
}

void fnn_gemm_prec(int family, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (!fnn_prec_bf16(family) || m <= 0 || n <= 0 || k <= 0) {
        fnn_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f) &&
        fnn_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, NULL, beta, c, ldc))
        return;
    int64_t la, lb;
    float *ra = rounded(a, ta, m, k, lda, &la), *rb = rounded(b, tb, k, n, ldb, &lb);
    if (ra && rb) fnn_sgemm(ta, tb, m, n, k, alpha, ra, la, rb, lb, beta, c, ldc);
    else fnn_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);   /* no memory for the copies: exact */
    if (ra) fnn_free(FNN_DEVICE_CPU, ra, (int64_t)sizeof(float) * m * k);
    if (rb) fnn_free(FNN_DEVICE_CPU, rb, (int64_t)sizeof(float) * k * n);
}

bool fnn_gemm_fused_prec(int family, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         const float *b, int64_t ldb, const float *bias, float beta, float *c, int64_t ldc) {
    if (fnn_prec_bf16(family)) return fnn_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, bias, beta, c, ldc);
    return fnn_gemm_fused(ta, tb, m, n, k, a, lda, b, ldb, bias, beta, c, ldc);
}
