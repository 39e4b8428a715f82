/* elementwise.c: binary ops with NumPy broadcasting (add sub mul div pow
 * maximum minimum, comparisons eq ne lt le gt ge), ops with a number
 * (add_scalar mul_scalar rsub_scalar rdiv_scalar pow_scalar rpow_scalar),
 * unary ops (neg abs exp log sqrt rsqrt sin cos tanh sigmoid relu gelu
 * gelu_tanh silu softplus clamp leaky_relu elu selu celu mish hardsigmoid hardswish
 * softsign) and where.
 *
 * One driver (map) broadcasts up to three inputs to the output shape and runs
 * a formula over it through the "map" row of their backend (elementwise.h; the
 * CPU's row, at the end, runs the row kernels here); each op is a formula for
 * its forward and one for each input's gradient, so the rules read like a table.
 *
 * int64 operands (indices, ids, counts) follow PyTorch's promotion, chosen at
 * the entry: int64 with int64 (or a whole number) adds, subtracts, multiplies
 * and negates exactly in int64 (wrapping on overflow, as PyTorch), through the
 * int64 family's binary row (int64.h; int_binary, int_scalar); anything else with an int64
 * operand (a float tensor, a fractional number, div, pow, maximum, minimum)
 * converts the int64 side to float32 and runs the float op, so gradients still
 * reach the float side. Comparisons give float32 1/0 and compare int64 with
 * int64 exactly, int64 with float32 as doubles. Unary float ops (exp, tanh,
 * ...) refuse int64, as every float-only op does. */
#include "../internal.h"
#include "../fastmath.h"
#include "int64.h"
#include "elementwise.h"

/* e^x - 1 without the cancellation of exp(x) - 1 near 0 (Kahan: (u - 1) x / log u, exact where
 * u = e^x rounds to 1); meant for x <= 0, where elu, selu and celu use it */
static inline float expm1_neg(float x) {
    float u = fnn_expf(x);
    float r = fnn_sel(u == 1.0f, x, (u - 1.0f) * x / fnn_logf(u));
    return fnn_sel(u == 0.0f, -1.0f, r);
}
/* the math the formulas of elementwise_ops.h call, on the CPU: core/fastmath.h's branch-free
 * functions and selects, so the rows vectorize (cuda/map.cu names the GPU's) */
#define M_EXP fnn_expf
#define M_LOG fnn_logf
#define M_LOG1P fnn_log1pf
#define M_TANH fnn_tanhf
#define M_SIGMOID fnn_sigmoidf
#define M_ERF fnn_erff
#define M_ERF_WITH fnn_erff_with
#define M_ABS fnn_absf
#define M_SEL fnn_sel
#define M_EXPM1_NEG expm1_neg
#define M_SIN sinf
#define M_COS cosf
#define M_RSQRT(x) (1.0f / sqrtf(x))
#define M_DIV(x, y) ((x) / (y))
#define FNN_MAP_FN static inline __attribute__((always_inline))
#include "elementwise_ops.h"
#include <math.h>
#include <string.h>

/* a row kernel: y[i] = EXPR(a, b, c) with a = x0[i*s0], b = x1[i*s1], c = x2[i*s2];
 * k0, k1 are the op's numbers (the scalar of add_scalar, clamp's bounds) */
typedef void (*row_fn)(float *y, const float *x0, int64_t s0, const float *x1, int64_t s1,
                       const float *x2, int64_t s2, int64_t n, float k0, float k1);

#define ROW(name, EXPR) ROW_FOR(, name, EXPR)
#define ROW_FOR(TARGET, name, EXPR)                                                                   \
    TARGET static void name##_row(float *y, const float *x0, int64_t s0, const float *x1, int64_t s1, \
                           const float *x2, int64_t s2, int64_t n, float k0, float k1) {              \
        (void)k0; (void)k1;                                                                           \
        if (s0 == 1 && s1 == 1 && s2 == 1)                                                            \
            for (int64_t i = 0; i < n; i++) { float a = x0[i], b = x1[i], c = x2[i]; (void)b; (void)c; y[i] = (EXPR); } \
        else                                                                                          \
            for (int64_t i = 0; i < n; i++) {                                                         \
                float a = x0[i * s0], b = x1[i * s1], c = x2[i * s2]; (void)b; (void)c; y[i] = (EXPR); \
            }                                                                                         \
    }

/* every plain row of elementwise_ops.h (binary ops and their gradient rows, comparisons, ops
 * with a number, where); the unary ops' rows come with their rules below */
FNN_MAP_ROWS(ROW)

/* ================= the broadcast driver ================= */

/* merge neighbouring dims that are contiguous in every operand */
static int coalesce(int ndim, int64_t *shape, int64_t (*s)[FNN_MAX_DIMS]) {
    if (ndim == 0) return 0;
    int out = 0;
    for (int i = 1; i < ndim; i++) {
        bool merge = true;
        for (int k = 0; k < 3; k++) merge = merge && s[k][out] == s[k][i] * shape[i];
        out += !merge;
        shape[out] = merge ? shape[out] * shape[i] : shape[i];
        for (int k = 0; k < 3; k++) s[k][out] = s[k][i];
    }
    return out + 1;
}

typedef struct {
    row_fn row;
    float *y;
    const float *const *x;
    int64_t (*s)[FNN_MAX_DIMS];
    int ndim;
    const int64_t *shape;
    int64_t inner;
    float k0, k1;
} map_args;

/* rows lo..hi-1 of [rows, inner] (a row's operands found from its index) */
static void map_rows(void *ctx, int64_t lo, int64_t hi) {
    const map_args *a = ctx;
    const int ndim = a->ndim;
    const int64_t *shape = a->shape, inner = a->inner;
    int64_t (*s)[FNN_MAX_DIMS] = a->s;
    for (int64_t r = lo; r < hi; r++) {
        int64_t rem = r, o[3] = {0, 0, 0};
        for (int d = ndim - 2; d >= 0; d--) {
            int64_t i = rem % shape[d];
            rem /= shape[d];
            for (int k = 0; k < 3; k++) o[k] += i * s[k][d];
        }
        a->row(a->y + r * inner, a->x[0] + o[0], s[0][ndim - 1], a->x[1] + o[1], s[1][ndim - 1],
               a->x[2] + o[2], s[2][ndim - 1], inner, a->k0, a->k1);
    }
}

/* pieces lo..hi-1 of MAP_PIECE elements of the only row, so one long row can be split too.
 * Pieces start at multiples of 64 floats: each keeps the vector lanes a whole-row call gives it. */
enum { MAP_PIECE = 64 };
static void map_pieces(void *ctx, int64_t lo, int64_t hi) {
    const map_args *a = ctx;
    const int last = a->ndim - 1;   /* leading size-1 dims may remain: their strides need not merge */
    const int64_t s0 = a->s[0][last], s1 = a->s[1][last], s2 = a->s[2][last];
    int64_t e0 = lo * MAP_PIECE, e1 = hi * MAP_PIECE < a->inner ? hi * MAP_PIECE : a->inner;
    a->row(a->y + e0, a->x[0] + e0 * s0, s0, a->x[1] + e0 * s1, s1, a->x[2] + e0 * s2, s2, e1 - e0, a->k0, a->k1);
}

static void map_run(row_fn row, float *y, const float *const *x, int64_t (*s)[FNN_MAX_DIMS], int ndim,
                    int64_t *shape, float k0, float k1) {
    ndim = coalesce(ndim, shape, s);
    if (ndim == 0) { row(y, x[0], 1, x[1], 1, x[2], 1, 1, k0, k1); return; }
    int64_t inner = shape[ndim - 1], rows = fnn_numel_of(ndim - 1, shape);
    if (inner == 0 || rows == 0) return;
    int threads = fnn_threads_for(rows * inner);
    map_args a = {row, y, x, s, ndim, shape, inner, k0, k1};
    if (rows == 1) fnn_parallel_for((inner + MAP_PIECE - 1) / MAP_PIECE, threads, map_pieces, &a);
    else fnn_parallel_for(rows, threads, map_rows, &a);
}

static int map_f32(const char *name, fnn_tensor *out, int nin, const fnn_tensor *const *ins, int code, float k0,
                   float k1);

static row_fn cpu_kernel(int code);

/* The CPU's bfloat16 map in one pass (inputs of the output's shape, contiguous): tiles of MAP_TILE
 * elements, each bf16 input widened into a float32 tile on the stack, the float32 row run on the
 * tiles, the result rounded back tile by tile while it is in L1. Three full-size passes through two
 * float32 temporaries cost relu on a [128,32,28,28] bf16 activation 2.3x the float32 op. */
enum { MAP_TILE = 1024 };
typedef struct {
    row_fn row;
    int nin;
    const void *x[3];
    bool bf[3], ybf;
    void *y;
    int64_t n;
    float k0, k1;
} tile_args;

static void map_tiles(void *ctx, int64_t lo, int64_t hi) {
    const tile_args *a = ctx;
    _Alignas(64) float buf[4][MAP_TILE];
    for (int64_t t = lo; t < hi; t++) {
        const int64_t e0 = t * MAP_TILE, m = a->n - e0 < MAP_TILE ? a->n - e0 : MAP_TILE;
        const float *x[3] = {NULL, NULL, NULL};
        for (int k = 0; k < 3; k++) {
            if (k >= a->nin) x[k] = x[0];   /* an unused operand repeats the first (nin >= 1) */
            else if (a->bf[k]) { fnn_bf16_widen_run(buf[k], (const uint16_t *)a->x[k] + e0, m); x[k] = buf[k]; }
            else x[k] = (const float *)a->x[k] + e0;
        }
        float *y = a->ybf ? buf[3] : (float *)a->y + e0;
        a->row(y, x[0], 1, x[1], 1, x[2], 1, m, a->k0, a->k1);
        if (a->ybf) fnn_bf16_narrow_run((uint16_t *)a->y + e0, buf[3], m);
    }
}

/* the tiled path when it applies (*done); out is bf16 when ybf, else float32 */
static int map_bf16_tiled(const char *name, fnn_tensor *out, int nin, const fnn_tensor *const *ins, int code,
                          float k0, float k1, bool ybf, bool *done) {
    *done = false;
    for (int k = 0; k < nin; k++) {
        const fnn_tensor *t = ins[k];
        if (t->freed || fnn_device_type_of(t->device) != FNN_DEVICE_CPU || !fnn_tensor_is_contiguous(t) ||
            (t->dtype != FNN_DTYPE_BFLOAT16 && t->dtype != FNN_DTYPE_FLOAT32) || !fnn_same_shape(t, ins[0]))
            return FNN_STATUS_OK;   /* the general path checks and broadcasts */
    }
    for (int k = 0; k < nin; k++) FNN_TRY(fnn_check_input_any(name, ins[k]));
    tile_args a = {.row = cpu_kernel(code), .nin = nin, .ybf = ybf, .n = fnn_tensor_numel(ins[0]), .k0 = k0, .k1 = k1};
    FNN_ASSERT(a.row != NULL);
    for (int k = 0; k < nin; k++) { a.x[k] = fnn_data(ins[k]); a.bf[k] = ins[k]->dtype == FNN_DTYPE_BFLOAT16; }
    FNN_TRY(fnn_empty_on(out, ins[0]->device, ins[0]->ndim, ins[0]->shape,
                         ybf ? FNN_DTYPE_BFLOAT16 : FNN_DTYPE_FLOAT32));
    a.y = fnn_data(out);
    fnn_parallel_for((a.n + MAP_TILE - 1) / MAP_TILE, fnn_threads_for(a.n), map_tiles, &a);
    *done = true;
    return FNN_STATUS_OK;
}

/* bfloat16 inputs: widened exactly to float32, the formula run in float32, and the result rounded back
 * to bfloat16 when every input was bfloat16 (PyTorch's promotion: with a float32 input it is float32),
 * except the comparisons' 0/1 masks, which stay float32 as for any dtype. A gradient rule mixes its
 * float32 gradient with saved bf16 inputs, so its result is float32: a bf16 tensor's gradient is
 * float32 (core/ops/to_dtype.c). */
static int map_bf16(const char *name, fnn_tensor *out, int nin, const fnn_tensor *const *ins, int code, float k0,
                    float k1) {
    fnn_set_op(name);   /* named before its casts (which name themselves), so fnn.profile counts the op */
    bool all_bf16 = true;
    for (int k = 0; k < nin; k++) all_bf16 = all_bf16 && ins[k]->dtype == FNN_DTYPE_BFLOAT16;
    const bool mask = code == FNN_MAP_eq || code == FNN_MAP_ne || code == FNN_MAP_lt || code == FNN_MAP_le ||
                      code == FNN_MAP_gt || code == FNN_MAP_ge;
    const bool narrow = all_bf16 && !mask;
    bool tiled = false;
    FNN_TRY(map_bf16_tiled(name, out, nin, ins, code, k0, k1, narrow, &tiled));
    if (tiled) return FNN_STATUS_OK;
    fnn_tensor wide[3], mid;
    const fnn_tensor *use[3];
    int rc = FNN_STATUS_OK, made = 0;
    for (int k = 0; k < nin && !rc; k++) {
        use[k] = ins[k];
        if (ins[k]->dtype != FNN_DTYPE_BFLOAT16) continue;
        if (!(rc = fnn_cast(&wide[made], ins[k], FNN_DTYPE_FLOAT32))) use[k] = &wide[made++];
    }
    if (!rc) rc = map_f32(name, narrow ? &mid : out, nin, use, code, k0, k1);
    if (!rc && narrow) {
        rc = fnn_cast(out, &mid, FNN_DTYPE_BFLOAT16);
        fnn_tensor_clear(&mid);
    }
    for (int k = 0; k < made; k++) fnn_tensor_clear(&wide[k]);
    return rc;
}

/* out = the formula code of ins... over the broadcast shape of the nin inputs (no node), through the
 * "map" row of their backend (core/ops/elementwise.h) */
static int map(const char *name, fnn_tensor *out, int nin, const fnn_tensor *const *ins, int code, float k0, float k1) {
    for (int k = 0; k < nin; k++)
        if (ins[k] && !ins[k]->freed && ins[k]->dtype == FNN_DTYPE_BFLOAT16)
            return map_bf16(name, out, nin, ins, code, k0, k1);
    return map_f32(name, out, nin, ins, code, k0, k1);
}

int fnn_elementwise_map(const char *op, fnn_tensor *out, int nin, const fnn_tensor *const *ins, int code) {
    fnn_tensor_init(out);
    return map(op, out, nin, ins, code, 0.0f, 0.0f);
}

static int map_f32(const char *name, fnn_tensor *out, int nin, const fnn_tensor *const *ins, int code, float k0,
                   float k1) {
    int ndim = 0;
    int64_t shape[FNN_MAX_DIMS];
    for (int k = 0; k < nin; k++) {
        FNN_TRY(fnn_check_input(name, ins[k]));
        if (k == 0) { ndim = ins[0]->ndim; memcpy(shape, ins[0]->shape, sizeof shape); continue; }
        FNN_TRY(fnn_check_same_device(name, ins[0], ins[k]));
        if (ndim != ins[k]->ndim || memcmp(shape, ins[k]->shape, sizeof(int64_t) * (size_t)ndim) != 0) {
            int64_t so_far[FNN_MAX_DIMS];
            memcpy(so_far, shape, sizeof so_far);
            FNN_TRY(fnn_broadcast_shapes(name, ndim, so_far, ins[k]->ndim, ins[k]->shape, &ndim, shape));
        }
    }
    const int device = ins[0]->device;
    static fnn_row_cache map_row_cache;   /* one lookup per device type (internal.h) */
    const fnn_map_row *row = fnn_row_cached(&map_row_cache, device, "elementwise", "map");
    if (!row) return FNN_ROW_REFUSED(name, device, false);
    int64_t s[3][FNN_MAX_DIMS];
    fnn_map_args a = {.dtype = FNN_DTYPE_FLOAT32, .code = code, .nin = nin, .stride = &s[0][0], .ndim = ndim,
                      .shape = shape, .k0 = k0, .k1 = k1};
    for (int k = 0; k < 3; k++) {
        const fnn_tensor *t = ins[k < nin ? k : 0];
        fnn_broadcast_strides(t, ndim, shape, s[k]);
        a.x[k] = fnn_data(t);
    }
    FNN_TRY(fnn_new_output(out, device, ndim, shape));
    a.y = fnn_data(out);
    int rc = row->run(fnn_device_ordinal(device), &a);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* the gradient for input k: out = row(ins...) summed back to input k's shape */
static int grad_map(fnn_node *n, int k, fnn_tensor *din, int nin, const fnn_tensor *const *ins, int code,
                    float k0, float k1) {
    if (!n->next[k]) return FNN_STATUS_OK;
    fnn_tensor full;
    FNN_TRY(map(n->op->info.name, &full, nin, ins, code, k0, k1));
    int rc = fnn_sum_to_shape(din, &full, n->in_ndim[k], n->in_shape[k]);
    fnn_tensor_clear(&full);
    return rc;
}

/* an elementwise node: the two numbers its rows take (the scalar of a scalar op, a unary op's
 * parameters; 0 where unused), floats as the rows have them */
typedef struct { float k0, k1; } elementwise_attrs;

/* fnn_node_attr's reader for the family: k0, k1 */
int fnn_elementwise_attr(const fnn_node *n, const char *name, double *value) {
    const elementwise_attrs *a = FNN_ATTRS((fnn_node *)n, elementwise_attrs);
    if (!strcmp(name, "k0")) *value = a->k0;
    else if (!strcmp(name, "k1")) *value = a->k1;
    else return FNN_FAIL(FNN_STATUS_ARG, "node_attr: %s has k0 and k1, not '%s'", n->op->info.name, name);
    return FNN_STATUS_OK;
}

/* run an op's forward through map and record its node, saving its inputs (and the output when
 * save_out) for the rule, and k0, k1 in its elementwise_attrs */
static int apply(const fnn_op_def *def, fnn_tensor *out, int nin, const fnn_tensor *const *ins, int code,
                 float k0, float k1, bool save_out) {
    FNN_TRY(map(def->info.name, out, nin, ins, code, k0, k1));
    if (!def->backward || !fnn_needs_node(nin, ins)) return FNN_STATUS_OK;
    fnn_node *n = fnn_attach_node(out, def, nin, ins);
    bool ok = n != NULL;
    for (int k = 0; ok && k < nin; k++) ok = fnn_save(n, k, ins[k]) == FNN_STATUS_OK;
    if (ok && save_out) ok = fnn_save(n, nin, out) == FNN_STATUS_OK;
    if (!ok) { fnn_tensor_clear(out); return fnn_last_status(); }
    *FNN_ATTRS(n, elementwise_attrs) = (elementwise_attrs){k0, k1};
    return FNN_STATUS_OK;
}

/* the gradient itself is needed in rules: saved[] hold inputs, g is the incoming gradient */
#define G(n, g) ((const fnn_tensor *const[]){(g), &(n)->saved[0], &(n)->saved[1], &(n)->saved[2]})

/* ================= binary ops ================= */

/* gradient rows: a = g, b = saved[0] (first input), c = saved[1] (second input) */

/* g itself as input k's gradient, summed down to its shape where it was broadcast: no copy. Sharing
 * g's buffer is safe: gradients are never written in place except by the engine's accumulation,
 * which adds into a buffer only when it holds it alone (engine.c's owns_buffer) */
static int grad_pass(fnn_node *n, int k, fnn_tensor *din, const fnn_tensor *g) {
    if (!n->next[k]) return FNN_STATUS_OK;
    return fnn_sum_to_shape(din, g, n->in_ndim[k], n->in_shape[k]);
}

static int add_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_pass(n, 0, &din[0], g));
    return grad_pass(n, 1, &din[1], g);
}
static int sub_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_pass(n, 0, &din[0], g));
    return grad_map(n, 1, &din[1], 1, G(n, g), FNN_MAP_neg, 0, 0);
}
static int mul_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), FNN_MAP_g_times_c, 0, 0));
    return grad_map(n, 1, &din[1], 2, G(n, g), FNN_MAP_g_times_b, 0, 0);
}
static int div_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), FNN_MAP_g_over_c, 0, 0));
    return grad_map(n, 1, &din[1], 3, G(n, g), FNN_MAP_div_d1, 0, 0);
}
static int pow_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), FNN_MAP_pow_d0, 0, 0));
    return grad_map(n, 1, &din[1], 3, G(n, g), FNN_MAP_pow_d1, 0, 0);
}
static int maximum_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), FNN_MAP_max_d0, 0, 0));
    return grad_map(n, 1, &din[1], 3, G(n, g), FNN_MAP_max_d1, 0, 0);
}
static int minimum_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), FNN_MAP_min_d0, 0, 0));
    return grad_map(n, 1, &din[1], 3, G(n, g), FNN_MAP_min_d1, 0, 0);
}

static const fnn_op_def ADD = {.info = {.name = "add", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = add_rule};
static const fnn_op_def SUB = {.info = {.name = "sub", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = sub_rule};
static const fnn_op_def MUL = {.info = {.name = "mul", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = mul_rule};
static const fnn_op_def DIV = {.info = {.name = "div", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = div_rule};
static const fnn_op_def POW = {.info = {.name = "pow", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = pow_rule};
static const fnn_op_def MAXIMUM = {.info = {.name = "maximum", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = maximum_rule};
static const fnn_op_def MINIMUM = {.info = {.name = "minimum", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = minimum_rule};

/* ================= int64 operands: the int64 family's binary row (core/ops/int64.h) ================= */
typedef enum { IOP_NONE = -1, IOP_ADD = FNN_INT_ADD, IOP_SUB = FNN_INT_SUB, IOP_MUL = FNN_INT_MUL, IOP_EQ = FNN_INT_EQ,
               IOP_NE = FNN_INT_NE, IOP_LT = FNN_INT_LT, IOP_LE = FNN_INT_LE, IOP_GT = FNN_INT_GT,
               IOP_GE = FNN_INT_GE } int_op;

/* a op b broadcast, with at least one int64 operand: arithmetic on two int64 tensors gives int64,
 * comparisons take either dtype and give float32 */
static int int_binary(const char *name, int_op op, fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) {
    FNN_TRY(fnn_check_input_any(name, a));
    FNN_TRY(fnn_check_input_any(name, b));
    bool compare = op >= IOP_EQ;
    FNN_TRY(fnn_check_same_device(name, a, b));
    const fnn_int64_row *row = fnn_int64_row_for(a->device, "binary");
    if (!row) return FNN_ROW_REFUSED(name, a->device, false);
    int ndim;
    int64_t shape[FNN_MAX_DIMS], as[FNN_MAX_DIMS], bs[FNN_MAX_DIMS];
    FNN_TRY(fnn_broadcast_shapes(name, a->ndim, a->shape, b->ndim, b->shape, &ndim, shape));
    fnn_broadcast_strides(a, ndim, shape, as);
    fnn_broadcast_strides(b, ndim, shape, bs);
    FNN_TRY(fnn_new_output_dtype(out, a->device, compare ? FNN_DTYPE_FLOAT32 : FNN_DTYPE_INT64, ndim, shape));
    fnn_int64_args k = {.op = (int)op, .y = fnn_bytes(out), .a = fnn_bytes(a), .b = fnn_bytes(b), .a_dtype = a->dtype,
                        .b_dtype = b->dtype, .as = as, .bs = bs, .ndim = ndim, .shape = shape};
    int rc = row->run(fnn_device_ordinal(a->device), &k);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* x op s for an int64 x and a whole number s (checked by the caller); rsub computes s - x: s as an
 * int64 scalar tensor on x's device (no host wait), then int_binary */
static int int_scalar(const char *name, int_op op, bool reversed, fnn_tensor *out, const fnn_tensor *x, double s) {
    FNN_TRY(fnn_check_input_any(name, x));
    const int64_t k = (int64_t)s;
    fnn_tensor ks;
    FNN_TRY(fnn_upload(&ks, x->device, FNN_DTYPE_INT64, 0, NULL, &k));
    int rc = reversed ? int_binary(name, op, out, &ks, x) : int_binary(name, op, out, x, &ks);
    fnn_tensor_clear(&ks);
    return rc;
}
static inline bool any_int64(const fnn_tensor *a, const fnn_tensor *b) {
    return (a && fnn_is_int64(a)) || (b && fnn_is_int64(b));
}
static inline bool whole(double s) { return s == floor(s) && fabs(s) < 9223372036854775808.0; }

static int binary(const fnn_op_def *def, int_op iop, int code, fnn_tensor *out, const fnn_tensor *a,
                  const fnn_tensor *b);

/* the float op on operands whose int64 ones are converted to float32 first (PyTorch's promotion) */
static int promoted(const fnn_op_def *def, int code, fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) {
    fnn_tensor fa, fb;
    fnn_tensor_init(&fa);
    fnn_tensor_init(&fb);
    int rc = fnn_check_input_any(def->info.name, a);
    if (!rc) rc = fnn_check_input_any(def->info.name, b);
    if (!rc && fnn_is_int64(a)) rc = fnn_to_dtype(&fa, a, FNN_DTYPE_FLOAT32);
    if (!rc && fnn_is_int64(b)) rc = fnn_to_dtype(&fb, b, FNN_DTYPE_FLOAT32);
    if (!rc) rc = binary(def, IOP_NONE, code, out, fnn_is_int64(a) ? &fa : a, fnn_is_int64(b) ? &fb : b);
    fnn_tensor_clear(&fa);
    fnn_tensor_clear(&fb);
    return rc;
}

static int binary(const fnn_op_def *def, int_op iop, int code, fnn_tensor *out, const fnn_tensor *a,
                  const fnn_tensor *b) {
    if (any_int64(a, b)) {
        bool both = a && b && fnn_is_int64(a) && fnn_is_int64(b);
        if (iop >= IOP_EQ || (iop != IOP_NONE && both)) return int_binary(def->info.name, iop, out, a, b);
        return promoted(def, code, out, a, b);
    }
    const fnn_tensor *ins[2] = {a, b};
    return apply(def, out, 2, ins, code, 0, 0, false);
}

int fnn_add(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&ADD, IOP_ADD, FNN_MAP_add, out, a, b); }
int fnn_sub(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&SUB, IOP_SUB, FNN_MAP_sub, out, a, b); }
int fnn_mul(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&MUL, IOP_MUL, FNN_MAP_mul, out, a, b); }
int fnn_div(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&DIV, IOP_NONE, FNN_MAP_div, out, a, b); }
int fnn_pow(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&POW, IOP_NONE, FNN_MAP_pow, out, a, b); }
int fnn_maximum(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&MAXIMUM, IOP_NONE, FNN_MAP_maximum, out, a, b); }
int fnn_minimum(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&MINIMUM, IOP_NONE, FNN_MAP_minimum, out, a, b); }

/* ---- comparisons: 1.0 / 0.0, no gradient ---- */
static const fnn_op_def EQ = {.info = {.name = "eq", .family = "elementwise", .has_cuda = 1}};
static const fnn_op_def NE = {.info = {.name = "ne", .family = "elementwise", .has_cuda = 1}};
static const fnn_op_def LT = {.info = {.name = "lt", .family = "elementwise", .has_cuda = 1}};
static const fnn_op_def LE = {.info = {.name = "le", .family = "elementwise", .has_cuda = 1}};
static const fnn_op_def GT = {.info = {.name = "gt", .family = "elementwise", .has_cuda = 1}};
static const fnn_op_def GE = {.info = {.name = "ge", .family = "elementwise", .has_cuda = 1}};
int fnn_eq(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&EQ, IOP_EQ, FNN_MAP_eq, out, a, b); }
int fnn_ne(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&NE, IOP_NE, FNN_MAP_ne, out, a, b); }
int fnn_lt(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&LT, IOP_LT, FNN_MAP_lt, out, a, b); }
int fnn_le(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&LE, IOP_LE, FNN_MAP_le, out, a, b); }
int fnn_gt(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&GT, IOP_GT, FNN_MAP_gt, out, a, b); }
int fnn_ge(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&GE, IOP_GE, FNN_MAP_ge, out, a, b); }

/* ================= with a number (k0 = s) ================= */

static int add_s_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_pass(n, 0, &din[0], g); }
static int mul_s_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 1, G(n, g), FNN_MAP_g_times_k, FNN_ATTRS(n, elementwise_attrs)->k0, 0); }
static int rsub_s_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 1, G(n, g), FNN_MAP_neg, 0, 0); }
static int rdiv_s_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 2, G(n, g), FNN_MAP_rdiv_s_d, FNN_ATTRS(n, elementwise_attrs)->k0, 0); }
static int pow_s_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 2, G(n, g), FNN_MAP_pow_s_d, FNN_ATTRS(n, elementwise_attrs)->k0, 0); }
static int rpow_s_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 3, G(n, g), FNN_MAP_rpow_s_d, FNN_ATTRS(n, elementwise_attrs)->k0, 0); }

static const fnn_op_def ADD_S = {.info = {.name = "add_scalar", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = add_s_rule};
static const fnn_op_def MUL_S = {.info = {.name = "mul_scalar", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = mul_s_rule};
static const fnn_op_def RSUB_S = {.info = {.name = "rsub_scalar", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = rsub_s_rule};
static const fnn_op_def RDIV_S = {.info = {.name = "rdiv_scalar", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = rdiv_s_rule};
static const fnn_op_def POW_S = {.info = {.name = "pow_scalar", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = pow_s_rule};
static const fnn_op_def RPOW_S = {.info = {.name = "rpow_scalar", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = rpow_s_rule};

static int scalar_op(const fnn_op_def *def, int code, fnn_tensor *out, const fnn_tensor *a, double s, bool save_out) {
    if (any_int64(a, NULL)) {
        int_op iop = def == &ADD_S ? IOP_ADD : def == &MUL_S ? IOP_MUL : def == &RSUB_S ? IOP_SUB : IOP_NONE;
        if (iop != IOP_NONE && whole(s)) return int_scalar(def->info.name, iop, def == &RSUB_S, out, a, s);
        fnn_tensor fa;   /* a fractional number, or an op int64 lacks: in float32 */
        FNN_TRY(fnn_to_dtype(&fa, a, FNN_DTYPE_FLOAT32));
        int rc = scalar_op(def, code, out, &fa, s, save_out);
        fnn_tensor_clear(&fa);
        return rc;
    }
    const fnn_tensor *ins[1] = {a};
    return apply(def, out, 1, ins, code, (float)s, 0, save_out);
}
int fnn_add_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&ADD_S, FNN_MAP_add_s, out, a, s, false); }
int fnn_mul_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&MUL_S, FNN_MAP_mul_s, out, a, s, false); }
int fnn_rsub_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&RSUB_S, FNN_MAP_rsub_s, out, a, s, false); }
int fnn_rdiv_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&RDIV_S, FNN_MAP_rdiv_s, out, a, s, false); }
int fnn_pow_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&POW_S, FNN_MAP_pow_s, out, a, s, false); }
int fnn_rpow_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&RPOW_S, FNN_MAP_rpow_s, out, a, s, true); }

/* ================= unary: forward row (a = x) and gradient row (a = g, b = x, c = y) ================= */
/* exp, log, tanh, sigmoid and erf come from fastmath.h: branch-free, so these rows vectorize. Being
 * compute-bound, with GCC on x86-64 glibc they are also built for x86-64-v3 (AVX2 + FMA, 8 lanes)
 * and x86-64-v4 (AVX-512, 16 lanes), the copy picked at load time: 2-3x faster again where the CPU
 * has AVX2, and the exact GELU about 1.6x faster again with AVX-512 (1.96 to 0.83-1.3 ns an
 * element forward on one thread; relu, all memory, runs 0.6 on the same [2048,512]) */


#define UNARY(op, FWD, GRAD, DIFF)                                                                               \
    ROW_FOR(FNN_CLONES_V4, op##_f, FWD)                                                                          \
    ROW_FOR(FNN_CLONES_V4, op##_g, GRAD)                                                                         \
    static int op##_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {                                    \
        const elementwise_attrs *a = FNN_ATTRS(n, elementwise_attrs);                                            \
        return grad_map(n, 0, &din[0], 3, G(n, g), FNN_MAP_##op##_g, a->k0, a->k1);                              \
    }                                                                                                            \
    static const fnn_op_def UNARY_##op = {.info = {.name = #op, .family = "elementwise", .differentiable = DIFF, \
        .has_cuda = 1}, .backward = op##_rule};

/* each unary op of elementwise_ops.h: its rows, backward rule and registry entry */
#define UNARY_OP(name, FWD, GRAD) UNARY(name, FWD, GRAD, 1)
FNN_MAP_UNARY(UNARY_OP)
#undef UNARY_OP

static int unary(const fnn_op_def *def, int code, fnn_tensor *out, const fnn_tensor *x, float k0, float k1) {
    const fnn_tensor *ins[1] = {x};
    return apply(def, out, 1, ins, code, k0, k1, true);
}
/* the entry points of FNN_MAP_UNARY_PLAIN's ops; FNN_MAP_UNARY_ARGS's are below */
#define PLAIN_ENTRY(name, FWD, GRAD)                                                                  \
    int fnn_##name(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_##name, FNN_MAP_##name##_f, out, x, 0, 0); }
FNN_MAP_UNARY_PLAIN(PLAIN_ENTRY)
#undef PLAIN_ENTRY
int fnn_neg(fnn_tensor *out, const fnn_tensor *x) {
    if (any_int64(x, NULL)) return int_scalar("neg", IOP_MUL, false, out, x, -1.0);
    return unary(&UNARY_neg, FNN_MAP_neg_f, out, x, 0, 0);
}
int fnn_clamp(fnn_tensor *out, const fnn_tensor *x, double lo, double hi) {
    FNN_CHECK(!(lo > hi), FNN_STATUS_ARG, "clamp: min %g is greater than max %g", lo, hi);
    return unary(&UNARY_clamp, FNN_MAP_clamp_f, out, x, (float)lo, (float)hi);
}
int fnn_leaky_relu(fnn_tensor *out, const fnn_tensor *x, double negative_slope) {
    FNN_CHECK(isfinite(negative_slope), FNN_STATUS_ARG, "leaky_relu: negative_slope is %g, expected a finite number",
              negative_slope);
    return unary(&UNARY_leaky_relu, FNN_MAP_leaky_relu_f, out, x, (float)negative_slope, 0);
}
int fnn_elu(fnn_tensor *out, const fnn_tensor *x, double alpha) {
    FNN_CHECK(isfinite(alpha), FNN_STATUS_ARG, "elu: alpha is %g, expected a finite number", alpha);
    return unary(&UNARY_elu, FNN_MAP_elu_f, out, x, (float)alpha, 0);
}
int fnn_celu(fnn_tensor *out, const fnn_tensor *x, double alpha) {
    FNN_CHECK(isfinite(alpha) && alpha != 0, FNN_STATUS_ARG, "celu: alpha is %g, expected a finite non-zero number",
              alpha);
    return unary(&UNARY_celu, FNN_MAP_celu_f, out, x, (float)alpha, 0);
}
int fnn_logit(fnn_tensor *out, const fnn_tensor *x, double eps) {
    FNN_CHECK(eps < 0 || eps <= 0.5, FNN_STATUS_ARG, "logit: eps is %g, expected a number in [0, 0.5] (or none)", eps);
    return unary(&UNARY_logit, FNN_MAP_logit_f, out, x, eps < 0 ? -1.0f : (float)eps, 0);
}

/* ================= where: cond != 0 picks a, else b ================= */
static int where_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 1, &din[1], 2, G(n, g), FNN_MAP_where_d1, 0, 0));
    return grad_map(n, 2, &din[2], 2, G(n, g), FNN_MAP_where_d2, 0, 0);
}
static const fnn_op_def WHERE = {.info = {.name = "where", .family = "elementwise", .differentiable = 1, .has_cuda = 1},
    .backward = where_rule};
int fnn_where(fnn_tensor *out, const fnn_tensor *cond, const fnn_tensor *a, const fnn_tensor *b) {
    const fnn_tensor *ins[3] = {cond, a, b};
    return apply(&WHERE, out, 3, ins, FNN_MAP_where, 0, 0, false);
}

const fnn_op_def *const fnn_ops_elementwise[] = {
    &ADD, &SUB, &MUL, &DIV, &POW, &MAXIMUM, &MINIMUM, &EQ, &NE, &LT, &LE, &GT, &GE,
    &ADD_S, &MUL_S, &RSUB_S, &RDIV_S, &POW_S, &RPOW_S, &WHERE,
#define UNARY_ENTRY(name, FWD, GRAD) &UNARY_##name,
    FNN_MAP_UNARY(UNARY_ENTRY)   /* every unary op of elementwise_ops.h */
#undef UNARY_ENTRY
    NULL,
};

/* ================= the CPU's row (core/ops/elementwise.h) ================= */
/* each code's row kernel, picked at run time, never through a static table: the FNN_CLONES_V4 rows are
 * ifuncs, and a static initializer's address of one is not the address a call site passes */
static row_fn cpu_kernel(int code) {
    switch (code) {
#define CPU_ROW(name, EXPR) case FNN_MAP_##name: return name##_row;
#define CPU_UNARY(name, FWD, GRAD) CPU_ROW(name##_f, FWD) CPU_ROW(name##_g, GRAD)
    FNN_MAP_ROWS(CPU_ROW)
    FNN_MAP_UNARY(CPU_UNARY)
#undef CPU_ROW
#undef CPU_UNARY
    default: return NULL;
    }
}
static int map_cpu(int ordinal, const fnn_map_args *a) {
    (void)ordinal;
    row_fn row = cpu_kernel(a->code);
    FNN_ASSERT(row != NULL);
    const float *x[3] = {a->x[0], a->x[1], a->x[2]};
    map_run(row, a->y, x, (int64_t (*)[FNN_MAX_DIMS])a->stride, a->ndim, a->shape, a->k0, a->k1);   /* coalesced in place */
    return FNN_STATUS_OK;
}
const fnn_map_row fnn_cpu_elementwise_rows[] = {{"map", map_cpu}, {NULL, NULL}};
