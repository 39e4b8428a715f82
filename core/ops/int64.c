/* int64.c: the CPU's int64 kernels (core/ops/int64.h): arithmetic and comparisons with broadcasting,
 * the sum / max / min reductions as plain loops, and every dtype cast (float32, bfloat16, int64). Their
 * callers (elementwise.c, reduction.c, to_dtype.c's fnn_cast) check, shape and allocate; these only run. */
#include "../bf16.h"
#include "int64.h"
#include <math.h>

/* a op b in int64, wrapping on overflow (unsigned arithmetic, so it is defined) */
static inline int64_t int_arith(int op, int64_t a, int64_t b) {
    uint64_t x = (uint64_t)a, y = (uint64_t)b;
    return (int64_t)(op == FNN_INT_ADD ? x + y : op == FNN_INT_SUB ? x - y : x * y);
}
/* the comparison from the order of a and b (lt, eq, gt); unordered (a nan) is only "ne" */
static inline float cmp_result(int op, bool lt, bool eq, bool gt) {
    bool r;
    switch (op) {
    case FNN_INT_EQ: r = eq; break;
    case FNN_INT_NE: r = !eq; break;
    case FNN_INT_LT: r = lt; break;
    case FNN_INT_LE: r = lt || eq; break;
    case FNN_INT_GT: r = gt; break;
    default: r = gt || eq; break;
    }
    return r ? 1.0f : 0.0f;
}
static inline double as_double(const void *p, int dtype, int64_t off) {
    return dtype == FNN_DTYPE_INT64 ? (double)((const int64_t *)p)[off] : (double)((const float *)p)[off];
}

static int binary_cpu(int ordinal, const fnn_int64_args *a) {
    (void)ordinal;
    const int ndim = a->ndim, op = a->op;
    const int64_t *shape = a->shape, *as = a->as, *bs = a->bs;
    const bool compare = op >= FNN_INT_EQ, exact = a->a_dtype == FNN_DTYPE_INT64 && a->b_dtype == FNN_DTYPE_INT64;
    const int64_t *ai = a->a, *bi = a->b;
    int64_t n = fnn_numel_of(ndim, shape), idx[FNN_MAX_DIMS] = {0}, ao = 0, bo = 0;
    for (int64_t k = 0; k < n; k++) {
        if (!compare) ((int64_t *)a->y)[k] = int_arith(op, ai[ao], bi[bo]);
        else if (exact) ((float *)a->y)[k] = cmp_result(op, ai[ao] < bi[bo], ai[ao] == bi[bo], ai[ao] > bi[bo]);
        else {
            double x = as_double(a->a, a->a_dtype, ao), y = as_double(a->b, a->b_dtype, bo);
            ((float *)a->y)[k] = cmp_result(op, x < y, x == y, x > y);
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

/* exact, wrapping on overflow as PyTorch */
static int sum_cpu(int ordinal, const fnn_int64_args *a) {
    (void)ordinal;
    const int64_t O = a->O, R = a->R, I = a->I, *xs = a->a;
    int64_t *y = a->y;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            uint64_t acc = 0;
            for (int64_t r = 0; r < R; r++) acc += (uint64_t)xs[(o * R + r) * I + i];
            y[o * I + i] = (int64_t)acc;
        }
    return FNN_STATUS_OK;
}

/* the values and 1-based positions of the first extreme of each line */
static int extreme(const fnn_int64_args *a, bool is_max) {
    const int64_t O = a->O, R = a->R, I = a->I, *xs = a->a;
    int64_t *v = a->y, *at = a->idx;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            const int64_t *line = xs + o * R * I + i;
            int64_t best = line[0], pos = 0;
            for (int64_t r = 1; r < R; r++) {
                int64_t e = line[r * I];
                if (is_max ? e > best : e < best) { best = e; pos = r; }
            }
            v[o * I + i] = best;
            if (at) at[o * I + i] = pos + 1;
        }
    return FNN_STATUS_OK;
}
static int max_cpu(int ordinal, const fnn_int64_args *a) { (void)ordinal; return extreme(a, true); }
static int min_cpu(int ordinal, const fnn_int64_args *a) { (void)ordinal; return extreme(a, false); }

/* dtype casts between float32, bfloat16 and int64 (a->a_dtype to a->op). A float that is not a whole
 * number refuses its cast to int64, naming it (fnn_whole_number); bfloat16 rounds to nearest, ties to
 * even (core/bf16.h), over precision.c's parallel conversions where the other side is float32. */
static int cast_cpu(int ordinal, const fnn_int64_args *a) {
    (void)ordinal;
    const int from = a->a_dtype, to = a->op;
    const int64_t n = a->n;
    if (from == FNN_DTYPE_FLOAT32 && to == FNN_DTYPE_BFLOAT16) {
        fnn_to_bf16_matrix(a->y, a->a, 1, n, n);
    } else if (from == FNN_DTYPE_BFLOAT16 && to == FNN_DTYPE_FLOAT32) {
        fnn_from_bf16(a->y, a->a, n);
    } else if (to == FNN_DTYPE_INT64) {
        int64_t *y = a->y;
        for (int64_t i = 0; i < n; i++) {
            const double v = from == FNN_DTYPE_BFLOAT16 ? fnn_bf16_to_f32(((const uint16_t *)a->a)[i])
                                                        : ((const float *)a->a)[i];
            if (v == floor(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0) y[i] = (int64_t)v;
            else return fnn_whole_number(a->name, v, i, fnn_shape_of(a->src).s, &y[i]);   /* its message */
        }
    } else if (to == FNN_DTYPE_BFLOAT16) {   /* from int64: through float32, as PyTorch's */
        uint16_t *y = a->y;
        for (int64_t i = 0; i < n; i++) y[i] = fnn_bf16_from_f32((float)((const int64_t *)a->a)[i]);
    } else {
        float *y = a->y;
        for (int64_t i = 0; i < n; i++) y[i] = (float)((const int64_t *)a->a)[i];
    }
    return FNN_STATUS_OK;
}

const fnn_int64_row fnn_cpu_int64_rows[] = {
    {"binary", binary_cpu}, {"sum", sum_cpu}, {"max", max_cpu}, {"min", min_cpu}, {"cast", cast_cpu}, {NULL, NULL},
};
