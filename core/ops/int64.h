/* int64.h: the int64 kernels' backend contract (core/internal.h's fnn_row_table), a kernel family:
 * its rows are named by kernel, not by registry op, since the registry's ops (add, eq, sum, max,
 * argmax, ...) take int64 tensors through these beside their float rows. Filled by core/ops/int64.c
 * (the CPU) and cuda/int64.cu (its rows call int64.cu, int64_reduce.cu and cast.cu's kernels).
 * The callers: core/ops/elementwise.c (binary), core/ops/reduction.c (sum, max, min) and
 * core/ops/to_dtype.c's fnn_cast (cast: float32, bfloat16, int64), which check, shape and allocate, then call the row of the
 * tensor's backend; a backend without the row refuses the op by name. */
#ifndef FASTNN_OPS_INT64_H
#define FASTNN_OPS_INT64_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_int64_args {
    int op;                 /* binary: FNN_INT_*; cast: the target dtype (float32, bfloat16, int64) */
    void *y;                /* the output, contiguous: binary int64 (add, sub, mul: wrapping) or float32 0/1
                             * (comparisons); sum, max, min int64 [O, I]; cast the target dtype [n] */
    int64_t *idx;           /* max, min: 1-based positions of the first extreme [O, I], or NULL */
    const void *a, *b;      /* binary: the operands, read through as/bs; sum, max, min, cast: a, contiguous */
    int a_dtype, b_dtype;   /* binary: each operand's dtype (comparisons take float32 beside int64, compared
                             * as doubles); cast: a's */
    const int64_t *as, *bs; /* binary: a's and b's strides through shape, 0 where broadcast */
    int ndim;               /* binary: y's shape */
    const int64_t *shape;
    int64_t O, R, I;        /* sum, max, min: a [O, R, I] -> y [O, I] (R > 0 for max, min) */
    int64_t n;              /* cast: elements */
    const char *name;       /* cast: the op ("long", "float", "bf16") and the tensor cast, for the CPU's refusal of a */
    const fnn_tensor *src;  /* float that is not a whole number (a device gives INT64_MIN: no host read) */
} fnn_int64_args;
/* the rows: "binary", "sum", "max", "min", "cast" */
typedef int (*fnn_int64_fn)(int ordinal, const fnn_int64_args *a);
typedef struct fnn_int64_row {
    const char *op;         /* the kernel's name; NULL ends a table */
    fnn_int64_fn run;
} fnn_int64_row;
/* the CPU rows: core/ops/int64.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(int64, fnn_int64_row)

#ifdef __cplusplus
}
#endif
#endif
