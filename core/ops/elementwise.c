/* elementwise.c: binary ops with NumPy broadcasting (add sub mul div pow
 * maximum minimum, comparisons eq ne lt le gt ge), ops with a number
 * (add_scalar mul_scalar rsub_scalar rdiv_scalar pow_scalar rpow_scalar),
 * unary ops (neg abs exp log sqrt rsqrt sin cos tanh sigmoid relu gelu
 * gelu_tanh silu softplus clamp leaky_relu elu selu celu mish hardsigmoid hardswish
 * softsign) and where.
 *
 * One driver (map) broadcasts up to three inputs to the output shape and runs
 * a row kernel over it; each op is a row expression for its forward and one
 * for each input's gradient, so the rules read like a table.
 *
 * int64 operands (indices, ids, counts) follow PyTorch's promotion, chosen at
 * the entry: int64 with int64 (or a whole number) adds, subtracts, multiplies
 * and negates exactly in int64 (wrapping on overflow, as PyTorch), through a
 * plain loop of its own (int_binary, int_scalar); anything else with an int64
 * operand (a float tensor, a fractional number, div, pow, maximum, minimum)
 * converts the int64 side to float32 and runs the float op, so gradients still
 * reach the float side. Comparisons give float32 1/0 and compare int64 with
 * int64 exactly, int64 with float32 as doubles. Unary float ops (exp, tanh,
 * ...) refuse int64, as every float-only op does. */
#include "../internal.h"
#include "../fastmath.h"

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

static int device_map(const char *name, fnn_tensor *out, int device, row_fn row, const float *const *x,
                      int64_t (*s)[FNN_MAX_DIMS], int ndim, const int64_t *shape, float k0, float k1);

/* out = row(ins...) over the broadcast shape of the nin inputs (no node) */
static int map(const char *name, fnn_tensor *out, int nin, const fnn_tensor *const *ins, row_fn row,
               float k0, float k1) {
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
    int64_t s[3][FNN_MAX_DIMS];
    const float *x[3];
    for (int k = 0; k < 3; k++) {
        const fnn_tensor *t = ins[k < nin ? k : 0];
        fnn_broadcast_strides(t, ndim, shape, s[k]);
        x[k] = fnn_data(t);
    }
    if (fnn_device_type_of(ins[0]->device) != FNN_DEVICE_CPU)
        return device_map(name, out, ins[0]->device, row, x, s, ndim, shape, k0, k1);
    FNN_TRY(fnn_new_output(out, ins[0]->device, ndim, shape));
    int64_t run_shape[FNN_MAX_DIMS];
    memcpy(run_shape, shape, sizeof run_shape);
    map_run(row, fnn_data(out), x, s, ndim, run_shape, k0, k1);
    return FNN_STATUS_OK;
}

/* the gradient for input k: out = row(ins...) summed back to input k's shape */
static int grad_map(fnn_node *n, int k, fnn_tensor *din, int nin, const fnn_tensor *const *ins, row_fn row,
                    float k0, float k1) {
    if (!n->next[k]) return FNN_STATUS_OK;
    fnn_tensor full;
    FNN_TRY(map(n->op->info.name, &full, nin, ins, row, k0, k1));
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
static int apply(const fnn_op_def *def, fnn_tensor *out, int nin, const fnn_tensor *const *ins, row_fn row,
                 float k0, float k1, bool save_out) {
    FNN_TRY(map(def->info.name, out, nin, ins, row, k0, k1));
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

static int add_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 1, G(n, g), copy_row, 0, 0));
    return grad_map(n, 1, &din[1], 1, G(n, g), copy_row, 0, 0);
}
static int sub_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 1, G(n, g), copy_row, 0, 0));
    return grad_map(n, 1, &din[1], 1, G(n, g), neg_row, 0, 0);
}
static int mul_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), g_times_c_row, 0, 0));
    return grad_map(n, 1, &din[1], 2, G(n, g), g_times_b_row, 0, 0);
}
static int div_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), g_over_c_row, 0, 0));
    return grad_map(n, 1, &din[1], 3, G(n, g), div_d1_row, 0, 0);
}
static int pow_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), pow_d0_row, 0, 0));
    return grad_map(n, 1, &din[1], 3, G(n, g), pow_d1_row, 0, 0);
}
static int maximum_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), max_d0_row, 0, 0));
    return grad_map(n, 1, &din[1], 3, G(n, g), max_d1_row, 0, 0);
}
static int minimum_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 0, &din[0], 3, G(n, g), min_d0_row, 0, 0));
    return grad_map(n, 1, &din[1], 3, G(n, g), min_d1_row, 0, 0);
}

static const fnn_op_def ADD = {{"add", "elementwise", 1, 1}, add_backward, FNN_EMBEDS_NONE};
static const fnn_op_def SUB = {{"sub", "elementwise", 1, 1}, sub_backward, FNN_EMBEDS_NONE};
static const fnn_op_def MUL = {{"mul", "elementwise", 1, 1}, mul_backward, FNN_EMBEDS_NONE};
static const fnn_op_def DIV = {{"div", "elementwise", 1, 1}, div_backward, FNN_EMBEDS_NONE};
static const fnn_op_def POW = {{"pow", "elementwise", 1, 1}, pow_backward, FNN_EMBEDS_NONE};
static const fnn_op_def MAXIMUM = {{"maximum", "elementwise", 1, 1}, maximum_backward, FNN_EMBEDS_NONE};
static const fnn_op_def MINIMUM = {{"minimum", "elementwise", 1, 1}, minimum_backward, FNN_EMBEDS_NONE};

/* ================= int64 operands ================= */
typedef enum { IOP_NONE = -1, IOP_ADD, IOP_SUB, IOP_MUL, IOP_EQ, IOP_NE, IOP_LT, IOP_LE, IOP_GT, IOP_GE } int_op;

/* a op b in int64, wrapping on overflow (unsigned arithmetic, so it is defined) */
static inline int64_t int_arith(int_op op, int64_t a, int64_t b) {
    uint64_t x = (uint64_t)a, y = (uint64_t)b;
    return (int64_t)(op == IOP_ADD ? x + y : op == IOP_SUB ? x - y : x * y);
}
/* the comparison from the order of a and b (lt, eq, gt); unordered (a nan) is only "ne" */
static inline float cmp_result(int_op op, bool lt, bool eq, bool gt) {
    bool r;
    switch (op) {
    case IOP_EQ: r = eq; break;
    case IOP_NE: r = !eq; break;
    case IOP_LT: r = lt; break;
    case IOP_LE: r = lt || eq; break;
    case IOP_GT: r = gt; break;
    default: r = gt || eq; break;
    }
    return r ? 1.0f : 0.0f;
}
static inline double as_double(const fnn_tensor *t, int64_t off) {
    return fnn_is_int64(t) ? (double)fnn_data_i64(t)[off] : (double)fnn_data(t)[off];
}

/* a op b broadcast, with at least one int64 operand: arithmetic on two int64 tensors gives int64,
 * comparisons take either dtype and give float32 */
static int int_binary(const char *name, int_op op, fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) {
    FNN_TRY(fnn_check_input_any(name, a));
    FNN_TRY(fnn_check_input_any(name, b));
    bool compare = op >= IOP_EQ;
    FNN_TRY(fnn_check_same_device(name, a, b));
    const fnn_backend *be = fnn_device_type_of(a->device) == FNN_DEVICE_CPU ? NULL : fnn_backend_for(a->device);
    FNN_CHECK(fnn_device_type_of(a->device) == FNN_DEVICE_CPU || (be && be->int_binary), FNN_STATUS_DEVICE,
              "%s: int64 tensors are not implemented on this device", name);
    int ndim;
    int64_t shape[FNN_MAX_DIMS], as[FNN_MAX_DIMS], bs[FNN_MAX_DIMS];
    FNN_TRY(fnn_broadcast_shapes(name, a->ndim, a->shape, b->ndim, b->shape, &ndim, shape));
    fnn_broadcast_strides(a, ndim, shape, as);
    fnn_broadcast_strides(b, ndim, shape, bs);
    FNN_TRY(fnn_new_output_dtype(out, a->device, compare ? FNN_DTYPE_FLOAT32 : FNN_DTYPE_INT64, ndim, shape));
    if (be) {   /* cuda/int64.cu: FNN_INT_* numbered as IOP_* */
        int rc = be->int_binary(fnn_device_ordinal(a->device), (int)op, fnn_bytes(out), fnn_bytes(a), fnn_is_int64(a),
                                as, fnn_bytes(b), fnn_is_int64(b), bs, ndim, shape);
        if (rc) fnn_tensor_clear(out);
        return rc;
    }
    bool exact = fnn_is_int64(a) && fnn_is_int64(b);
    const int64_t *ai = fnn_data_i64(a), *bi = fnn_data_i64(b);
    int64_t n = fnn_tensor_numel(out), idx[FNN_MAX_DIMS] = {0}, ao = 0, bo = 0;
    for (int64_t k = 0; k < n; k++) {
        if (!compare) fnn_data_i64(out)[k] = int_arith(op, ai[ao], bi[bo]);
        else if (exact) fnn_data(out)[k] = cmp_result(op, ai[ao] < bi[bo], ai[ao] == bi[bo], ai[ao] > bi[bo]);
        else {
            double x = as_double(a, ao), y = as_double(b, bo);
            fnn_data(out)[k] = cmp_result(op, x < y, x == y, x > y);
        }
        for (int d = ndim - 1; d >= 0; d--) {   /* next position; offsets follow incrementally */
            ao += as[d];
            bo += bs[d];
            if (++idx[d] < shape[d]) break;
            ao -= as[d] * shape[d];
            bo -= bs[d] * shape[d];
            idx[d] = 0;
        }
    }
    return FNN_STATUS_OK;
}

/* x op s for an int64 x and a whole number s (checked by the caller); rsub computes s - x */
static int int_scalar(const char *name, int_op op, bool reversed, fnn_tensor *out, const fnn_tensor *x, double s) {
    FNN_TRY(fnn_check_input_any(name, x));
    if (fnn_device_type_of(x->device) != FNN_DEVICE_CPU) {   /* s as an int64 scalar there, then int_binary */
        const fnn_backend *be = fnn_backend_for(x->device);
        FNN_CHECK(be && be->int_binary && be->copy, FNN_STATUS_DEVICE,
                  "%s: int64 tensors are not implemented on this device", name);
        const int64_t k = (int64_t)s;
        fnn_tensor ks;
        FNN_TRY(fnn_upload(&ks, x->device, FNN_DTYPE_INT64, 0, NULL, &k));   /* no host wait */
        int rc = reversed ? int_binary(name, op, out, &ks, x) : int_binary(name, op, out, x, &ks);
        fnn_tensor_clear(&ks);
        return rc;
    }
    fnn_tensor tmp;
    int rc;
    const int64_t *xs = fnn_contiguous_bytes(x, &tmp, &rc);
    FNN_TRY(rc);
    rc = fnn_new_output_dtype(out, x->device, FNN_DTYPE_INT64, x->ndim, x->shape);
    if (!rc) {
        int64_t n = fnn_tensor_numel(x), k = (int64_t)s, *y = fnn_data_i64(out);
        for (int64_t i = 0; i < n; i++) y[i] = reversed ? int_arith(op, k, xs[i]) : int_arith(op, xs[i], k);
    }
    fnn_tensor_clear(&tmp);
    return rc;
}
static inline bool any_int64(const fnn_tensor *a, const fnn_tensor *b) {
    return (a && fnn_is_int64(a)) || (b && fnn_is_int64(b));
}
static inline bool whole(double s) { return s == floor(s) && fabs(s) < 9223372036854775808.0; }

static int binary(const fnn_op_def *def, int backend_op, int_op iop, row_fn row, fnn_tensor *out,
                  const fnn_tensor *a, const fnn_tensor *b);

/* the float op on operands whose int64 ones are converted to float32 first (PyTorch's promotion) */
static int promoted(const fnn_op_def *def, int backend_op, row_fn row, fnn_tensor *out, const fnn_tensor *a,
                    const fnn_tensor *b) {
    fnn_tensor fa, fb;
    fnn_tensor_init(&fa);
    fnn_tensor_init(&fb);
    int rc = fnn_check_input_any(def->info.name, a);
    if (!rc) rc = fnn_check_input_any(def->info.name, b);
    if (!rc && fnn_is_int64(a)) rc = fnn_to_dtype(&fa, a, FNN_DTYPE_FLOAT32);
    if (!rc && fnn_is_int64(b)) rc = fnn_to_dtype(&fb, b, FNN_DTYPE_FLOAT32);
    if (!rc) rc = binary(def, backend_op, IOP_NONE, row, out, fnn_is_int64(a) ? &fa : a, fnn_is_int64(b) ? &fb : b);
    fnn_tensor_clear(&fa);
    fnn_tensor_clear(&fb);
    return rc;
}

/* add, sub, mul, div also run on a GPU through the backend table */
static int binary(const fnn_op_def *def, int backend_op, int_op iop, row_fn row, fnn_tensor *out,
                  const fnn_tensor *a, const fnn_tensor *b) {
    if (any_int64(a, b)) {
        bool both = a && b && fnn_is_int64(a) && fnn_is_int64(b);
        if (iop >= IOP_EQ || (iop != IOP_NONE && both)) return int_binary(def->info.name, iop, out, a, b);
        return promoted(def, backend_op, row, out, a, b);
    }
    const fnn_tensor *ins[2] = {a, b};
    if (a && b && a->ndim >= 0 && b->ndim >= 0 && fnn_device_type_of(a->device) != FNN_DEVICE_CPU &&
        a->device == b->device && backend_op >= 0) {
        const char *name = def->info.name;
        FNN_TRY(fnn_check_input(name, a));
        FNN_TRY(fnn_check_input(name, b));
        int ndim;
        int64_t shape[FNN_MAX_DIMS], as[FNN_MAX_DIMS], bs[FNN_MAX_DIMS];
        FNN_TRY(fnn_broadcast_shapes(name, a->ndim, a->shape, b->ndim, b->shape, &ndim, shape));
        fnn_broadcast_strides(a, ndim, shape, as);
        fnn_broadcast_strides(b, ndim, shape, bs);
        const fnn_backend *be = fnn_backend_for(a->device);
        FNN_CHECK(be && be->binary, FNN_STATUS_DEVICE, "%s: not implemented on this device", name);
        FNN_TRY(fnn_new_output(out, a->device, ndim, shape));
        int rc = be->binary(fnn_device_ordinal(a->device), backend_op, fnn_data(out), fnn_data(a), as,
                            fnn_data(b), bs, ndim, shape);
        if (rc) { fnn_tensor_clear(out); return rc; }
        if (fnn_needs_node(2, ins)) {
            fnn_node *n = fnn_attach_node(out, def, 2, ins);
            if (!n || fnn_save(n, 0, a) || fnn_save(n, 1, b)) { fnn_tensor_clear(out); return fnn_last_status(); }
        }
        return FNN_STATUS_OK;
    }
    return apply(def, out, 2, ins, row, 0, 0, false);
}

int fnn_add(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&ADD, FNN_BIN_ADD, IOP_ADD, add_row, out, a, b); }
int fnn_sub(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&SUB, FNN_BIN_SUB, IOP_SUB, sub_row, out, a, b); }
int fnn_mul(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&MUL, FNN_BIN_MUL, IOP_MUL, mul_row, out, a, b); }
int fnn_div(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&DIV, FNN_BIN_DIV, IOP_NONE, div_row, out, a, b); }
int fnn_pow(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&POW, -1, IOP_NONE, pow_row, out, a, b); }
int fnn_maximum(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&MAXIMUM, -1, IOP_NONE, maximum_row, out, a, b); }
int fnn_minimum(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&MINIMUM, -1, IOP_NONE, minimum_row, out, a, b); }

/* ---- comparisons: 1.0 / 0.0, no gradient ---- */
static const fnn_op_def EQ = {{"eq", "elementwise", 0, 1}, NULL, FNN_EMBEDS_NONE};
static const fnn_op_def NE = {{"ne", "elementwise", 0, 1}, NULL, FNN_EMBEDS_NONE};
static const fnn_op_def LT = {{"lt", "elementwise", 0, 1}, NULL, FNN_EMBEDS_NONE};
static const fnn_op_def LE = {{"le", "elementwise", 0, 1}, NULL, FNN_EMBEDS_NONE};
static const fnn_op_def GT = {{"gt", "elementwise", 0, 1}, NULL, FNN_EMBEDS_NONE};
static const fnn_op_def GE = {{"ge", "elementwise", 0, 1}, NULL, FNN_EMBEDS_NONE};
int fnn_eq(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&EQ, -1, IOP_EQ, eq_row, out, a, b); }
int fnn_ne(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&NE, -1, IOP_NE, ne_row, out, a, b); }
int fnn_lt(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&LT, -1, IOP_LT, lt_row, out, a, b); }
int fnn_le(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&LE, -1, IOP_LE, le_row, out, a, b); }
int fnn_gt(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&GT, -1, IOP_GT, gt_row, out, a, b); }
int fnn_ge(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) { return binary(&GE, -1, IOP_GE, ge_row, out, a, b); }

/* ================= with a number (k0 = s) ================= */

static int add_s_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 1, G(n, g), copy_row, 0, 0); }
static int mul_s_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 1, G(n, g), g_times_k_row, FNN_ATTRS(n, elementwise_attrs)->k0, 0); }
static int rsub_s_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 1, G(n, g), neg_row, 0, 0); }
static int rdiv_s_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 2, G(n, g), rdiv_s_d_row, FNN_ATTRS(n, elementwise_attrs)->k0, 0); }
static int pow_s_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 2, G(n, g), pow_s_d_row, FNN_ATTRS(n, elementwise_attrs)->k0, 0); }
static int rpow_s_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) { return grad_map(n, 0, &din[0], 3, G(n, g), rpow_s_d_row, FNN_ATTRS(n, elementwise_attrs)->k0, 0); }

static const fnn_op_def ADD_S = {{"add_scalar", "elementwise", 1, 1}, add_s_backward, FNN_EMBEDS_NONE};
static const fnn_op_def MUL_S = {{"mul_scalar", "elementwise", 1, 1}, mul_s_backward, FNN_EMBEDS_NONE};
static const fnn_op_def RSUB_S = {{"rsub_scalar", "elementwise", 1, 1}, rsub_s_backward, FNN_EMBEDS_NONE};
static const fnn_op_def RDIV_S = {{"rdiv_scalar", "elementwise", 1, 1}, rdiv_s_backward, FNN_EMBEDS_NONE};
static const fnn_op_def POW_S = {{"pow_scalar", "elementwise", 1, 1}, pow_s_backward, FNN_EMBEDS_NONE};
static const fnn_op_def RPOW_S = {{"rpow_scalar", "elementwise", 1, 1}, rpow_s_backward, FNN_EMBEDS_NONE};

static int scalar_op(const fnn_op_def *def, row_fn row, fnn_tensor *out, const fnn_tensor *a, double s, bool save_out) {
    if (any_int64(a, NULL)) {
        int_op iop = def == &ADD_S ? IOP_ADD : def == &MUL_S ? IOP_MUL : def == &RSUB_S ? IOP_SUB : IOP_NONE;
        if (iop != IOP_NONE && whole(s)) return int_scalar(def->info.name, iop, def == &RSUB_S, out, a, s);
        fnn_tensor fa;   /* a fractional number, or an op int64 lacks: in float32 */
        FNN_TRY(fnn_to_dtype(&fa, a, FNN_DTYPE_FLOAT32));
        int rc = scalar_op(def, row, out, &fa, s, save_out);
        fnn_tensor_clear(&fa);
        return rc;
    }
    const fnn_tensor *ins[1] = {a};
    return apply(def, out, 1, ins, row, (float)s, 0, save_out);
}
int fnn_add_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&ADD_S, add_s_row, out, a, s, false); }
int fnn_mul_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&MUL_S, mul_s_row, out, a, s, false); }
int fnn_rsub_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&RSUB_S, rsub_s_row, out, a, s, false); }
int fnn_rdiv_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&RDIV_S, rdiv_s_row, out, a, s, false); }
int fnn_pow_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&POW_S, pow_s_row, out, a, s, false); }
int fnn_rpow_scalar(fnn_tensor *out, const fnn_tensor *a, double s) { return scalar_op(&RPOW_S, rpow_s_row, out, a, s, true); }

/* ================= unary: forward row (a = x) and gradient row (a = g, b = x, c = y) ================= */
/* exp, log, tanh, sigmoid and erf come from fastmath.h: branch-free, so these rows vectorize. Being
 * compute-bound, with GCC on x86-64 glibc they are also built for x86-64-v3 (AVX2 + FMA, 8 lanes)
 * and x86-64-v4 (AVX-512, 16 lanes), the copy picked at load time: 2-3x faster again where the CPU
 * has AVX2, and the exact GELU about 1.6x faster again with AVX-512 (1.96 to 0.83-1.3 ns an
 * element forward on one thread; relu, all memory, runs 0.6 on the same [2048,512]) */


#define UNARY(name, FWD, GRAD, DIFF)                                                                  \
    ROW_FOR(FNN_CLONES_V4, name##_f, FWD)                                                                \
    ROW_FOR(FNN_CLONES_V4, name##_g, GRAD)                                                               \
    static int name##_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {                   \
        const elementwise_attrs *a = FNN_ATTRS(n, elementwise_attrs);                                 \
        return grad_map(n, 0, &din[0], 3, G(n, g), name##_g_row, a->k0, a->k1);                       \
    }                                                                                                 \
    static const fnn_op_def UNARY_##name = {{#name, "elementwise", DIFF, 1}, name##_backward, FNN_EMBEDS_NONE};

/* each unary op of elementwise_ops.h: its rows, backward rule and registry entry */
#define UNARY_OP(name, FWD, GRAD) UNARY(name, FWD, GRAD, 1)
FNN_MAP_UNARY(UNARY_OP)
#undef UNARY_OP

static int unary(const fnn_op_def *def, row_fn row, fnn_tensor *out, const fnn_tensor *x, float k0, float k1) {
    const fnn_tensor *ins[1] = {x};
    return apply(def, out, 1, ins, row, k0, k1, true);
}
int fnn_neg(fnn_tensor *out, const fnn_tensor *x) {
    if (any_int64(x, NULL)) return int_scalar("neg", IOP_MUL, false, out, x, -1.0);
    return unary(&UNARY_neg, neg_f_row, out, x, 0, 0);
}
int fnn_abs(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_abs, abs_f_row, out, x, 0, 0); }
int fnn_exp(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_exp, exp_f_row, out, x, 0, 0); }
int fnn_log(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_log, log_f_row, out, x, 0, 0); }
int fnn_sqrt(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_sqrt, sqrt_f_row, out, x, 0, 0); }
int fnn_rsqrt(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_rsqrt, rsqrt_f_row, out, x, 0, 0); }
int fnn_sin(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_sin, sin_f_row, out, x, 0, 0); }
int fnn_cos(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_cos, cos_f_row, out, x, 0, 0); }
int fnn_tanh(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_tanh, tanh_f_row, out, x, 0, 0); }
int fnn_sigmoid(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_sigmoid, sigmoid_f_row, out, x, 0, 0); }
int fnn_relu(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_relu, relu_f_row, out, x, 0, 0); }
int fnn_gelu(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_gelu, gelu_f_row, out, x, 0, 0); }
int fnn_gelu_tanh(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_gelu_tanh, gelu_tanh_f_row, out, x, 0, 0); }
int fnn_silu(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_silu, silu_f_row, out, x, 0, 0); }
int fnn_softplus(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_softplus, softplus_f_row, out, x, 0, 0); }
int fnn_clamp(fnn_tensor *out, const fnn_tensor *x, double lo, double hi) {
    FNN_CHECK(!(lo > hi), FNN_STATUS_ARG, "clamp: min %g is greater than max %g", lo, hi);
    return unary(&UNARY_clamp, clamp_f_row, out, x, (float)lo, (float)hi);
}
int fnn_leaky_relu(fnn_tensor *out, const fnn_tensor *x, double negative_slope) {
    FNN_CHECK(isfinite(negative_slope), FNN_STATUS_ARG, "leaky_relu: negative_slope is %g, expected a finite number",
              negative_slope);
    return unary(&UNARY_leaky_relu, leaky_relu_f_row, out, x, (float)negative_slope, 0);
}
int fnn_elu(fnn_tensor *out, const fnn_tensor *x, double alpha) {
    FNN_CHECK(isfinite(alpha), FNN_STATUS_ARG, "elu: alpha is %g, expected a finite number", alpha);
    return unary(&UNARY_elu, elu_f_row, out, x, (float)alpha, 0);
}
int fnn_selu(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_selu, selu_f_row, out, x, 0, 0); }
int fnn_celu(fnn_tensor *out, const fnn_tensor *x, double alpha) {
    FNN_CHECK(isfinite(alpha) && alpha != 0, FNN_STATUS_ARG, "celu: alpha is %g, expected a finite non-zero number",
              alpha);
    return unary(&UNARY_celu, celu_f_row, out, x, (float)alpha, 0);
}
int fnn_mish(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_mish, mish_f_row, out, x, 0, 0); }
int fnn_hardsigmoid(fnn_tensor *out, const fnn_tensor *x) {
    return unary(&UNARY_hardsigmoid, hardsigmoid_f_row, out, x, 0, 0);
}
int fnn_hardswish(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_hardswish, hardswish_f_row, out, x, 0, 0); }
int fnn_softsign(fnn_tensor *out, const fnn_tensor *x) { return unary(&UNARY_softsign, softsign_f_row, out, x, 0, 0); }

/* ================= where: cond != 0 picks a, else b ================= */
static int where_backward(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    FNN_TRY(grad_map(n, 1, &din[1], 2, G(n, g), where_d1_row, 0, 0));
    return grad_map(n, 2, &din[2], 2, G(n, g), where_d2_row, 0, 0);
}
static const fnn_op_def WHERE = {{"where", "elementwise", 1, 1}, where_backward, FNN_EMBEDS_NONE};
int fnn_where(fnn_tensor *out, const fnn_tensor *cond, const fnn_tensor *a, const fnn_tensor *b) {
    const fnn_tensor *ins[3] = {cond, a, b};
    return apply(&WHERE, out, 3, ins, where_row, 0, 0, false);
}

const fnn_op_def *const fnn_ops_elementwise[] = {
    &ADD, &SUB, &MUL, &DIV, &POW, &MAXIMUM, &MINIMUM, &EQ, &NE, &LT, &LE, &GT, &GE,
    &ADD_S, &MUL_S, &RSUB_S, &RDIV_S, &POW_S, &RPOW_S,
    &UNARY_neg, &UNARY_abs, &UNARY_exp, &UNARY_log, &UNARY_sqrt, &UNARY_rsqrt, &UNARY_sin, &UNARY_cos,
    &UNARY_tanh, &UNARY_sigmoid, &UNARY_relu, &UNARY_gelu, &UNARY_gelu_tanh, &UNARY_silu, &UNARY_softplus,
    &UNARY_clamp, &UNARY_leaky_relu, &UNARY_elu, &UNARY_selu, &UNARY_celu, &UNARY_mish, &UNARY_hardsigmoid,
    &UNARY_hardswish, &UNARY_softsign, &WHERE, NULL,
};

/* ================= on a device: each row's code for the backend's map (cuda/map.cu) ================= */
/* compared at run time, never through a static table: the FNN_CLONES_V4 rows are ifuncs, and a static
 * initializer's address of one is not the address a call site passes */
static int device_code(row_fn row) {
#define DEVICE_ROW(name, EXPR) if (row == name##_row) return FNN_MAP_##name;
#define DEVICE_UNARY(name, FWD, GRAD) DEVICE_ROW(name##_f, FWD) DEVICE_ROW(name##_g, GRAD)
    FNN_MAP_ROWS(DEVICE_ROW)
    FNN_MAP_UNARY(DEVICE_UNARY)
#undef DEVICE_ROW
#undef DEVICE_UNARY
    return -1;
}

static int device_map(const char *name, fnn_tensor *out, int device, row_fn row, const float *const *x,
                      int64_t (*s)[FNN_MAX_DIMS], int ndim, const int64_t *shape, float k0, float k1) {
    const fnn_backend *be = fnn_backend_for(device);
    int code = device_code(row);
    FNN_CHECK(be && be->map && code >= 0, FNN_STATUS_DEVICE, "%s: not implemented on this device", name);
    FNN_TRY(fnn_new_output(out, device, ndim, shape));
    int rc = be->map(fnn_device_ordinal(device), code, fnn_data(out), x, &s[0][0], ndim, shape, k0, k1);
    if (rc) fnn_tensor_clear(out);
    return rc;
}
