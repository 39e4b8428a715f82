/* elementwise.h: the elementwise family's backend contract (core/internal.h's fnn_row_table), a kernel
 * family: one engine row, "map", runs any of the family's per-element formulas by its FNN_MAP_* code
 * (core/ops/elementwise_ops.h, written once for every backend), forward and gradient rows alike. Its
 * rows are named by kernel, not by registry op: the registry's elementwise ops (add, exp, where, ...)
 * all call this one row with their formula's code. Filled by core/ops/elementwise.c (the CPU: the
 * vectorized row kernels over its broadcast driver) and cuda/map.cu (a template instance per code;
 * add, sub, mul, div of two inputs through cuda/elementwise.cu's broadcast kernel). The entry points
 * in elementwise.c check, broadcast, allocate and record the node; a backend without the row refuses
 * the op by name. */
#ifndef FASTNN_OPS_ELEMENTWISE_H
#define FASTNN_OPS_ELEMENTWISE_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_map_args {
    int dtype;              /* the element type of y and the inputs (FNN_DTYPE_FLOAT32: the rows' only one) */
    int code;               /* the formula: an FNN_MAP_* code (elementwise_ops.h) */
    int nin;                /* inputs the formula reads (1 to 3); the unused x[k] repeat x[0] */
    void *y;                /* the output, contiguous over shape */
    const void *x[3];       /* the inputs, read in place through their strides */
    int64_t *stride;        /* input k's stride along dim d at stride[k * FNN_MAX_DIMS + d], 0 where broadcast */
    int ndim;
    int64_t *shape;         /* the broadcast shape (y's). shape and stride are the caller's scratch: a row may
                             * merge dims in them in place (the CPU's does) */
    float k0, k1;           /* the op's numbers (the scalar of add_scalar, clamp's bounds, ...) */
} fnn_map_args;
typedef int (*fnn_map_fn)(int ordinal, const fnn_map_args *a);
typedef struct fnn_map_row {
    const char *op;         /* the kernel's name ("map"); NULL ends a table */
    fnn_map_fn run;
} fnn_map_row;
/* the CPU rows: core/ops/elementwise.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(elementwise, fnn_map_row)

/* out = the formula `code` (an FNN_MAP_* code, elementwise_ops.h) of nin float inputs, broadcast, on
 * their backend's map row; op names it in errors. No node: for another family's rule that needs one of
 * the formulas (conv's activation gradient: relu_g of the gradient and the saved output) */
FNN_LAYER int fnn_elementwise_map(const char *op, fnn_tensor *out, int nin, const fnn_tensor *const *ins, int code);

#ifdef __cplusplus
}
#endif
#endif
