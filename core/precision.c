/* core/precision.c: the float32 precision of the GEMM-bound families (fnn_set_float32_precision),
 * PyTorch's torch.backends.mkldnn.{matmul,conv,rnn}.fp32_precision. "ieee" (the default) computes in
 * float32; "bf16" lets the family's products take bfloat16 operands with float32 sums. Tensors stay
 * float32 either way: the operands are rounded inside the op, and that conversion is part of its cost.
 *
 * Below the compute layer: this file holds the setting (and the thread's autocast regions) and the
 * bfloat16 conversions of matrices; blas.c reads the setting in fnn_gemm_prec, the one GEMM the
 * families call, and converts with these. Nothing here calls a GEMM. */
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

/* fastnn.precision's wrapped ops and layers running on this thread (fnn_autocast_hold) */
static _Thread_local int autocast_held;

/* an autocast region is open on this thread and not held: linear narrows its own output to bfloat16
 * (ops/linalg.c) */
bool fnn_autocast_on(void) { return autocast_depth > 0 && autocast_held == 0; }

int fnn_autocast_hold(int delta) {
    autocast_held += delta;
    if (autocast_held < 0) autocast_held = 0;
    return autocast_held;
}

/* an operand of a GEMM-bound op that takes bfloat16 in C: float32 anywhere, or bfloat16 in host memory
 * (the CUDA rows take float32 only: fastnn.precision widens there, and a C caller is told so) */
int fnn_check_float_or_host_bf16(const char *op, const fnn_tensor *t, const char *what) {
    if (!t || t->freed || t->dtype != FNN_DTYPE_BFLOAT16) return fnn_check_input(op, t);
    FNN_TRY(fnn_check_input_any(op, t));
    if (!fnn_in_host_memory(t)) {
        char dev[32];
        return FNN_FAIL(FNN_STATUS_ARG, "%s: the %s backend takes float32 only, got a bfloat16 %s %s; convert it "
                        "with :float()", op, fnn_device_name(t->device, dev, sizeof dev), what, fnn_shape_of(t).s);
    }
    return FNN_STATUS_OK;
}

int fnn_autocast_enter(void) { return ++autocast_depth; }
int fnn_autocast_exit(void) { return autocast_depth > 0 ? --autocast_depth : 0; }

/* the depth is per thread: fnn_parallel_team hands the caller's to its workers for the region */
int fnn_autocast_depth(void) { return autocast_depth; }
int fnn_autocast_set_depth(int depth) {
    int was = autocast_depth;
    autocast_depth = depth;
    return was;
}

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

/* rows x cols elements of a kind's conversion, serially: row r from src + s + r sld into dst + d + r dld
 * (element offsets). Many short rows go in one call (a head's 32 values: a call per row cost more than
 * its values); the dense case is one long row. ROUND may run in place (dst == src) */
FNN_CLONES_V4 static void convert_rows(int kind, const void *src, int64_t s, int64_t sld, void *dst, int64_t d,
                                       int64_t dld, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++, s += sld, d += dld) {
        if (kind == CONV_TO_BF16) {
            const float *x = (const float *)src + s;
            uint16_t *y = (uint16_t *)dst + d;
            for (int64_t i = 0; i < cols; i++) y[i] = fnn_bf16_from_f32(x[i]);
        } else if (kind == CONV_ROUND) {
            const float *x = (const float *)src + s;
            float *y = (float *)dst + d;
            for (int64_t i = 0; i < cols; i++) y[i] = fnn_bf16_round(x[i]);
        } else {
            const uint16_t *x = (const uint16_t *)src + s;
            float *y = (float *)dst + d;
            for (int64_t i = 0; i < cols; i++) y[i] = fnn_bf16_to_f32(x[i]);
        }
    }
}

static void convert_range(void *ctx, int64_t lo, int64_t hi) {
    const conv_job *j = ctx;
    if (j->n > 0) {   /* dense: chunks lo..hi */
        int64_t a = lo * CONV_CHUNK, b = hi * CONV_CHUNK < j->n ? hi * CONV_CHUNK : j->n;
        convert_rows(j->kind, j->src, a, 0, j->dst, a, 0, 1, b - a);
        return;
    }
    convert_rows(j->kind, j->src, lo * j->ld, j->ld, j->dst, lo * j->cols, j->cols, hi - lo, j->cols);
}

/* A conversion runs beside a GEMM (its operands rounded, its result narrowed) whose OpenMP team,
 * under the oneDNN kernels, spins a little after it (GOMP_SPINCOUNT, fastnn/C.lua) before it sleeps:
 * waking it costs little there, and a second thread pays from CONV_SPLIT_WARM elements (an mlp layer's
 * 128 x 784 operand: 11 us on one thread; mlp_fmnist under autocast 0.585 -> 0.525 ms a step,
 * Emerald Rapids, 2 vCPUs). Under the portable kernels the team sleeps (passive): the usual threshold */
enum { CONV_SPLIT_WARM = 1 << 15 };
static int convert_threads(int64_t n) {
    if (fnn_in_parallel()) return 1;
    if (!fnn_blas_portable() && n >= CONV_SPLIT_WARM) return fnn_get_num_threads();
    return fnn_threads_for(n);
}

static void convert(int kind, const void *src, int64_t rows, int64_t cols, int64_t ld, void *dst) {
    conv_job j = {.src = src, .cols = cols, .ld = ld, .dst = dst, .kind = kind};
    int64_t units = rows;
    if (ld == cols || rows == 1) {
        j.n = rows * cols;
        units = (j.n + CONV_CHUNK - 1) / CONV_CHUNK;
    }
    if (units <= 0) return;
    fnn_parallel_for(units, convert_threads(rows * cols), convert_range, &j);
}

void fnn_to_bf16_matrix(uint16_t *dst, const float *src, int64_t rows, int64_t cols, int64_t ld) {
    convert(CONV_TO_BF16, src, rows, cols, ld, dst);
}

void fnn_round_bf16_matrix(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld) {
    convert(CONV_ROUND, src, rows, cols, ld, dst);
}

void fnn_from_bf16(float *dst, const uint16_t *src, int64_t n) { convert(CONV_WIDEN, src, 1, n, n, dst); }

/* the same on the calling thread, for kernels already inside their own parallel loop (a tile, a plane) */
void fnn_bf16_widen_run(float *dst, const uint16_t *src, int64_t n) {
    convert_rows(CONV_WIDEN, src, 0, 0, dst, 0, 0, 1, n);
}
void fnn_bf16_narrow_run(uint16_t *dst, const float *src, int64_t n) {
    convert_rows(CONV_TO_BF16, src, 0, 0, dst, 0, 0, 1, n);
}
void fnn_bf16_widen_rows(float *dst, int64_t dld, const uint16_t *src, int64_t sld, int64_t rows, int64_t cols) {
    convert_rows(CONV_WIDEN, src, 0, sld, dst, 0, dld, rows, cols);
}
void fnn_bf16_narrow_rows(uint16_t *dst, int64_t dld, const float *src, int64_t sld, int64_t rows, int64_t cols) {
    convert_rows(CONV_TO_BF16, src, 0, sld, dst, 0, dld, rows, cols);
}

/* a bfloat16 view's rows (its last dim) widened into a dense float32 array, rows lo..hi-1 of units of
 * rows_per: each row's offset found once per unit, then stepped as fnn_strided_copy steps it */
typedef struct {
    const uint16_t *src;
    float *dst;
    int ndim;
    const int64_t *shape, *stride;
    int64_t rows, rows_per;
} view_job;

/* each row's conversion inline, in this function's AVX2 / AVX-512 variants: a view's rows are often short
 * (attention's heads: 32 values, 8,192 rows a tensor), where a call per row cost more than its values */
FNN_CLONES_V4 static void widen_view_units(void *ctx, int64_t lo, int64_t hi) {
    const view_job *j = ctx;
    const int nd = j->ndim;
    const int64_t inner = j->shape[nd - 1], is = j->stride[nd - 1];
    int64_t r = lo * j->rows_per, end = hi * j->rows_per < j->rows ? hi * j->rows_per : j->rows;
    int64_t idx[FNN_MAX_DIMS] = {0};
    for (int64_t d = nd - 2, rest = r; d >= 0; d--) idx[d] = rest % j->shape[d], rest /= j->shape[d];
    for (; r < end; r++) {
        int64_t off = 0;
        for (int d = 0; d < nd - 1; d++) off += idx[d] * j->stride[d];
        const uint16_t *restrict src = j->src + off;
        float *restrict dst = j->dst + r * inner;
        if (is == 1) for (int64_t i = 0; i < inner; i++) dst[i] = fnn_bf16_to_f32(src[i]);
        else for (int64_t i = 0; i < inner; i++) dst[i] = fnn_bf16_to_f32(src[i * is]);
        for (int d = nd - 2; d >= 0; d--) { if (++idx[d] < j->shape[d]) break; idx[d] = 0; }
    }
}

int fnn_bf16_widen_view(fnn_tensor *out, const fnn_tensor *x) {
    if (!fnn_in_host_memory(x) || x->dtype != FNN_DTYPE_BFLOAT16 || x->ndim == 0 || fnn_tensor_is_contiguous(x))
        return fnn_cast(out, x, FNN_DTYPE_FLOAT32);
    FNN_TRY(fnn_new_output(out, x->device, x->ndim, x->shape));
    const int64_t n = fnn_tensor_numel(x), inner = x->shape[x->ndim - 1];
    if (n == 0) return FNN_STATUS_OK;
    view_job j = {.src = fnn_bytes(x), .dst = fnn_data(out), .ndim = x->ndim, .shape = x->shape,
                  .stride = x->stride, .rows = n / inner};
    j.rows_per = inner >= CONV_CHUNK ? 1 : CONV_CHUNK / inner;
    fnn_parallel_for((j.rows + j.rows_per - 1) / j.rows_per, convert_threads(n), widen_view_units, &j);
    return FNN_STATUS_OK;
}
