/* pool.h: the pool family's backend contract (core/internal.h's fnn_row_table): its arguments and
 * row type, filled by core/ops/pool.c (the CPU) and cuda/pool.cu. Every op sees its input as
 * `planes` contiguous planes [D, H, W] (1-d and 2-d ops have leading 1s; the entry points make a
 * strided input contiguous first, as before, so no row reads strides). */
#ifndef FASTNN_OPS_POOL_H
#define FASTNN_OPS_POOL_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_pool_args {
    const float *x;            /* forward: the input [planes, in] */
    float *y;                  /* forward: the output [planes, out] */
    const float *dy;           /* backward: the output's gradient [planes, out] */
    float *dx;                 /* backward: the input's gradient [planes, in], every element written */
    int32_t *idx;              /* max pools: each output's argmax offset in its input plane [planes, out];
                                  forward writes it (NULL: not kept, no graph), backward reads it */
    int64_t planes;            /* N*C: the dims before the spatial ones */
    int64_t in[3], out[3];     /* D, H, W and Do, Ho, Wo (1 along dims the op lacks) */
    int64_t k[3], s[3], p[3];  /* max/avg pools: kernel, stride, padding (1, 1, 0 along dims the op lacks) */
    int count_include_pad;     /* avg pools: divide by the window clipped to the padded input, not the input */
    int align_corners;         /* upsample_bilinear2d: corner centres meet, else half-pixel centres */
    const uint16_t *xh;        /* forward_bf16: the input as bfloat16 [planes, in] (x unused) */
    uint16_t *yh;              /* forward_bf16: the output as bfloat16 [planes, out] (y unused) */
} fnn_pool_args;
/* forward: y of x (max: windows padded with -inf, the first maximum in row-major window order wins
 * ties, a nan wins; avg: the window's sum / its divisor; adaptive_avg_pool2d: output o of n along an
 * input of L averages [floor(o L / n), ceil((o + 1) L / n)); upsample_nearest: output o reads input
 * floor(o in / out); upsample_bilinear2d: the weights of pool.c's axis_fill). backward: dx of dy,
 * every element written (max: dy routed to the saved argmax, summed where windows overlap) */
typedef int (*fnn_pool_fn)(int ordinal, const fnn_pool_args *a);
typedef struct fnn_pool_row {
    const char *op;            /* the registry name; NULL ends a table */
    fnn_pool_fn forward, backward;
    /* a bfloat16 input into a bfloat16 output (xh, yh), the same numbers as the float32 forward on the
     * widened input rounded back; NULL: the row takes float32 only, and the entry point refuses a
     * bfloat16 tensor (autocast's wrapper widens it first). The backward is the float32 one either
     * way: a bfloat16 tensor's gradient is float32 (to_dtype.c) */
    fnn_pool_fn forward_bf16;
} fnn_pool_row;
/* the CPU rows: core/ops/pool.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(pool, fnn_pool_row)

#ifdef __cplusplus
}
#endif
#endif
