/* conv.h: the conv family's header: the geometry shared by the convolution kernels of
 * core/ops/conv.c (im2col + sgemm), core/ops/conv_depthwise.c (direct loops where groups = input
 * channels), conv_onednn.c and cuda/conv.cu; and the family's backend contract (core/internal.h's
 * fnn_row_table, at the end), filled by core/ops/conv.c (the CPU) and cuda/conv.cu.
 *
 * Every convolution, plain or transposed, 1-, 2- or 3-d, is described as one forward
 * convolution from an input [N, C, D, H, W] to an output [N, O, Do, Ho, Wo]:
 *     y[n, o, z, y, x] = sum over c in o's group and taps (a, b, e) of
 *                        w[o, c, a, b, e] * in[n, c, z*sd - pd + a*dd, y*sh - ph + b*dh, x*sw - pw + e*dw]
 * (zero outside the input). 1-d and 2-d convolutions have their missing leading dims at size 1
 * (kernel 1, stride 1, dilation 1, no padding), so one set of kernels serves all three. The
 * padding after the input only sets the output size, so only the padding before appears here.
 * A transposed convolution is the adjoint of the convolution whose input is its output: its
 * geometry is that convolution's, with C and D, H, W its output's, O and Do, Ho, Wo its input's. */
#ifndef FASTNN_OPS_CONV_H
#define FASTNN_OPS_CONV_H
#include "../internal.h"
#include <stdbool.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t N, C, O;                   /* images, input channels, output channels */
    int64_t D, H, W, Do, Ho, Wo;       /* input and output sizes */
    int64_t kd, kh, kw, sd, sh, sw;    /* kernel, stride */
    int64_t pd, ph, pw, dd, dh, dw;    /* padding before, dilation */
    int64_t groups, Cg, Og;            /* per group: input and output channels */
    int64_t taps, Kg, S, L;            /* kd*kh*kw; col rows Cg*taps; input and output plane sizes */
    bool pointwise;                    /* 1x1x1, stride 1, no padding: the input is its own col */
    bool depthwise;                    /* groups = C > 1: one input channel per group (direct kernels) */
} conv_geom;

/* the output positions [lo, hi) of [0, out) whose input position o*s + off falls in [0, in) */
static inline void conv_valid_range(int64_t in, int64_t out, int64_t off, int64_t s, int64_t *lo, int64_t *hi) {
    *lo = off >= 0 ? 0 : (-off + s - 1) / s;
    *hi = in - off <= 0 ? 0 : (in - off + s - 1) / s;
    if (*hi > out) *hi = out;
    if (*lo > *hi) *lo = *hi;
}

/* how many threads split `n` images costing `flops` in all (1: the images in order, the library
 * threading each call; also where there are fewer images than threads). A flop of a gemm costs
 * about an eighth of an element of a memory-bound loop, fnn_threads_for's unit. */
static inline int conv_image_slots(int64_t n, double flops) {
    int t = fnn_threads_for((int64_t)(flops > 1e15 ? 1e15 : flops) / 8);
    return n >= t ? t : 1;
}

/* depthwise kernels (conv_depthwise.c), m = O / C output channels per input channel; every
 * buffer contiguous. The forward writes y [N, O, L] = conv(x [N, C, S], w [O, taps]) + b (b may
 * be NULL); the input gradient writes dx [N, C, S] = conv^T(dy [N, O, L]) + bias_in (per input
 * channel, NULL for none: a transposed convolution's bias); the weight gradient writes
 * dw [O, taps] and db [O] (either may be NULL). */
void fnn_depthwise_forward(const conv_geom *g, const float *x, const float *w, const float *b, float *y);
void fnn_depthwise_input_grad(const conv_geom *g, const float *w, const float *dy, const float *bias_in, float *dx);
void fnn_depthwise_weight_grad(const conv_geom *g, const float *x, const float *dy, float *dw, float *db);

/* the oneDNN convolutions (conv_onednn.c), run first on the CPU when the oneDNN kernels are
 * selected (blas.c); every buffer contiguous, as run_forward / run_backward in conv.c. Each
 * returns FNN_STATUS_OK, an error status, or FNN_ONEDNN_DECLINED: not run (the portable kernels
 * are selected, the build has no oneDNN, oneDNN refuses the geometry), use im2col. The backward
 * fills any of dx (+ bias_in per input channel), dw and db (dx or dw must be wanted); x is read
 * only for dw, w only for dx. keep_x (NULL: not wanted): the forward may make it a float tensor holding
 * x in the primitives' blocked layout (left empty where there is no reorder to save); x_kept (NULL:
 * none) is that tensor's data, which the backward weights read instead of reordering x again where
 * its layout and batch split still match (else x is reordered as without it). exact (CONV_EXACT_*):
 * the inputs known to hold bfloat16 values (widened from bf16 tensors), which bf16 precision without
 * bf16 units uses as they are, without scanning or rounding them again (a hint: 0 is always right).
 * yh (forward; NULL: none): y also rounded to bfloat16 there, each image slot's part as it is made.
 * act (forward): FNN_ACT_RELU makes y = relu(conv + b), oneDNN's eltwise post-op inside the kernel,
 * before yh's rounding; FNN_ACT_NONE none. */
enum { FNN_ONEDNN_DECLINED = 1 };
enum { CONV_EXACT_X = 1u, CONV_EXACT_W = 2u, CONV_EXACT_DY = 4u };
bool fnn_onednn_conv_wants(const conv_geom *g);
int fnn_onednn_conv_forward(const conv_geom *g, int dev, const float *x, const float *w, const float *b, float *y,
                            fnn_tensor *keep_x, unsigned exact, uint16_t *yh, int act);
int fnn_onednn_conv_backward(const conv_geom *g, int dev, const float *x, const float *w, const float *dy,
                             const float *bias_in, float *dx, float *dw, float *db, const void *x_kept,
                             unsigned exact);

/* the rows. Arguments in the op's own terms (a transposed op's x is the [N, O, Do, Ho, Wo] side of
 * its geometry, its y the [N, C, D, H, W] side); every buffer contiguous (the entry points borrow
 * strided operands contiguous, as before, so no row reads strides), and the entry points skip the
 * forward of an empty output. The CPU's rows pick oneDNN, the depthwise kernels or im2col + sgemm
 * per call, as run_forward / run_backward did before rows. */
typedef struct fnn_conv_args {
    const conv_geom *g;        /* the op as one forward convolution (above) */
    const float *x, *w;        /* the op's input and weight; backward: as saved (x only where dw is
                                  wanted, w only where dx is) */
    const float *b;            /* forward: the bias (NULL: none) */
    float *y;                  /* forward: the output, every element written */
    const float *dy;           /* backward: the output's gradient */
    float *dx, *dw, *db;       /* backward: the gradients wanted (NULL: not), every element written */
    fnn_tensor *keep_x;        /* forward, NULL or an empty tensor: conv1d/2d/3d's backward will want dw, so
                                  the row may keep x in its kernels' own layout there (the CPU's: oneDNN's
                                  blocked copy), for the node to save */
    const void *x_kept;        /* backward: that tensor's data where dw is wanted and it was kept (NULL: none) */
    /* x and w known to hold bfloat16 values (bit 0: x, bit 1: w; the entry widened them from bfloat16
     * tensors, which only the CPU's rows get): bf16 precision uses them without rounding them again.
     * A hint, 0 always right; the CUDA rows ignore it */
    unsigned exact;
    /* forward, the CPU's rows only (a bfloat16 output is the host's): NULL, or the op's bfloat16 output,
     * where the row also writes y rounded to nearest even (oneDNN's image slots while their part of y
     * is in cache, the other kernels in one pass after) */
    uint16_t *yh;
    /* forward of conv1d/2d/3d: FNN_ACT_RELU (internal.h) makes y = relu(conv(x, w) + b) (a > 0 ? a : 0, and
     * oneDNN's post-op on the CPU), applied before yh's rounding; FNN_ACT_NONE (0) none. Every row applies it */
    int act;
} fnn_conv_args;
/* conv1d/2d/3d: forward y = act(conv(x, w) + b); backward (of the convolution: the entry's rule makes
 * dy = g relu'(y) first where there is an activation) dx = conv^T(dy, w), dw, db = the sums of dy per
 * output channel. conv_transpose1d/2d/3d: forward y = conv^T(x, w) + b (the input gradient of the
 * geometry's convolution, b per its input channel); backward dx = conv(dy, w), dw = the weight
 * gradient of conv(dy, .) against x, db = the sums of dy per channel. dw and db come out as sums in
 * a fixed order (the same bits every run). */
typedef int (*fnn_conv_fn)(int ordinal, const fnn_conv_args *a);
typedef struct fnn_conv_row {
    const char *op;            /* the registry name; NULL ends a table */
    fnn_conv_fn forward, backward;
} fnn_conv_row;
/* the CPU rows: core/ops/conv.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(conv, fnn_conv_row)

#ifdef __cplusplus
}
#endif

#ifdef FASTNN_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
dnnl_engine_t fnn_onednn_engine(void);   /* blas.c: the process's one CPU engine; NULL without one */
void fnn_onednn_made(void);               /* blas.c: counts a primitive made (fnn_config reports it) */
#endif

#endif
