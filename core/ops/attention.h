/* attention.h: the attention family's backend contract (core/internal.h's fnn_row_table), filled by
 * core/ops/attention.c (the CPU) and cuda/attention.cu. The row holds the WHOLE op, products and
 * masked softmax together, not the softmax alone: the CPU runs each (batch, head) start to end on
 * one thread (its own small-GEMM kernel, the causal blocks skipped, the scores still in cache),
 * which a row of separate products and softmax would undo (char_gpt); the CUDA rows run strided
 * batched products on the backend's shared gemm and the softmax row kernels. The entry points
 * (checks, reading q, k, v in place, the outputs, the node) are attention.c's, once.
 * q, k, v and g are read in place when their last dim is dense (attn_read); the output and the
 * gradients are written [B,T,H,C] (a [B,H,T,C] view of them is handed out). */
#ifndef FASTNN_OPS_ATTENTION_H
#define FASTNN_OPS_ATTENTION_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

/* a [B,H,T,C] tensor read in place: its first element and the strides of B, H, T (C dense) */
typedef struct fnn_attn_mat {
    const float *p;
    int64_t s[3];
} fnn_attn_mat;

typedef struct fnn_attn_args {
    fnn_attn_mat q, k, v;   /* q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] */
    fnn_attn_mat g;         /* backward: the output's gradient [B,H,Tq,Dv] */
    const void *mask;       /* forward: the key padding mask [B,Tk] (nonzero = padding), or NULL */
    int mask_i64;           /* the mask is int64 (else float32) */
    int64_t ms0, ms1;       /* the mask's strides */
    float *p;               /* [B,H,Tq,Tk] probabilities: written by the forward, read by the backward */
    float *o;               /* forward: the output [B,Tq,H,Dv] */
    float *dq, *dk, *dv;    /* backward: [B,Tq,H,D], [B,Tk,H,D], [B,Tk,H,Dv], each NULL when not wanted */
    float *ds;              /* backward: scratch [B,H,Tq,Tk] for dP and dS, NULL when dq and dk are not wanted */
    int64_t B, H, Tq, Tk, D, Dv;
    float scale;
    int causal;             /* query i sees keys 0 .. i + Tk - Tq */
} fnn_attn_args;
typedef int (*fnn_attn_fn)(int ordinal, const fnn_attn_args *a);

typedef struct fnn_attn_row {
    const char *op;                 /* the registry name; NULL ends a table */
    fnn_attn_fn forward, backward;  /* the op and its rule */
    /* attention_cache_append's write (the family's entry point without a node, so without a row of
     * its own): rows pos .. pos+t-1 of buf [B,H,cap,C] (contiguous) = x [B,H,t,C] through its strides */
    int (*cache_write)(int ordinal, float *buf, int64_t cap, int64_t pos, const float *x, const int64_t *xstride,
                       const int64_t *xshape);
} fnn_attn_row;
/* the CPU rows: core/ops/attention.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(attention, fnn_attn_row)

#ifdef __cplusplus
}
#endif
#endif
