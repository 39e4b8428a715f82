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

/* ---- conversions: a rows x cols matrix at leading dimension ld into a dense one ----
 * A dense matrix (ld == cols: every tensor conversion) is cut into flat chunks, so a single long row
 * (to_dtype's vectors) still spreads over the team; each chunk is a loop the compiler vectorizes. */
enum { CONV_CHUNK = 16384 };
typedef struct {
    const void *src;
    int64_t cols, ld, n;   /* n > 0: dense, n elements in CONV_CHUNK pieces */
    void *dst;
    int kind;              /* CONV_TO_BF16, CONV_ROUND, CONV_WIDEN */
} conv_job;
enum { CONV_TO_BF16, CONV_ROUND, CONV_WIDEN };

/* n elements of one run: src + s into dst + d (element offsets) */
FNN_CLONES_V4 static void convert_run(const conv_job *j, int64_t s, int64_t d, int64_t n) {
    if (j->kind == CONV_TO_BF16) {
        const float *x = (const float *)j->src + s;
        uint16_t *y = (uint16_t *)j->dst + d;
        for (int64_t i = 0; i < n; i++) y[i] = fnn_bf16_from_f32(x[i]);
    } else if (j->kind == CONV_ROUND) {
        const float *x = (const float *)j->src + s;
        float *y = (float *)j->dst + d;
        for (int64_t i = 0; i < n; i++) y[i] = fnn_bf16_round(x[i]);
    } else {
        const uint16_t *x = (const uint16_t *)j->src + s;
        float *y = (float *)j->dst + d;
        for (int64_t i = 0; i < n; i++) y[i] = fnn_bf16_to_f32(x[i]);
    }
}

static void convert_range(void *ctx, int64_t lo, int64_t hi) {
    const conv_job *j = ctx;
    if (j->n > 0) {   /* dense: chunks lo..hi */
        int64_t a = lo * CONV_CHUNK, b = hi * CONV_CHUNK < j->n ? hi * CONV_CHUNK : j->n;
        convert_run(j, a, a, b - a);
        return;
    }
    for (int64_t r = lo; r < hi; r++) convert_run(j, r * j->ld, r * j->cols, j->cols);
}

static void convert(int kind, const void *src, int64_t rows, int64_t cols, int64_t ld, void *dst) {
    conv_job j = {.src = src, .cols = cols, .ld = ld, .dst = dst, .kind = kind};
    int64_t units = rows;
    if (ld == cols || rows == 1) {
        j.n = rows * cols;
        units = (j.n + CONV_CHUNK - 1) / CONV_CHUNK;
    }
    if (units <= 0) return;
    fnn_parallel_for(units, fnn_in_parallel() ? 1 : fnn_threads_for(rows * cols), convert_range, &j);
}

void fnn_to_bf16_matrix(uint16_t *dst, const float *src, int64_t rows, int64_t cols, int64_t ld) {
    convert(CONV_TO_BF16, src, rows, cols, ld, dst);
}

void fnn_round_bf16_matrix(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld) {
    convert(CONV_ROUND, src, rows, cols, ld, dst);
}

void fnn_from_bf16(float *dst, const uint16_t *src, int64_t n) { convert(CONV_WIDEN, src, 1, n, n, dst); }

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
