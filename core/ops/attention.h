/* attention.h: the attention family's backend contract (core/internal.h's fnn_row_table), filled by
 * core/ops/attention.c (the CPU) and cuda/attention.cu. The row holds the WHOLE op, products and
 * masked softmax together, not the softmax alone: the CPU runs each (batch, head) start to end on
 * one thread (its own small-GEMM kernel, the causal blocks skipped, the scores still in cache),
 * which a row of separate products and softmax would undo (char_gpt); the CUDA rows run strided
 * batched products on the backend's shared gemm and the softmax row kernels. The entry points
 * (checks, reading q, k, v in place, the outputs, the node) are attention.c's, once.
 * q, k, v and g are read in place when their last dim is dense (attn_read); the output and the
 * gradients are written [B,T,H,C] (a [B,H,T,C] view of them is handed out).
 * What the forward keeps for the backward is the row's choice, by the key count (lse_from_tk): the
 * probabilities P [B,H,Tq,Tk], or (FlashAttention's) only the log-sum-exp of each query's scores,
 * with the output and the padding mask, from which the backward recomputes P block by block. The
 * entry point allocates only what the row keeps. */
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
    /* bfloat16 values in place of p (NULL then), read through the same strides: only the CPU's whole-P rows
     * take them, each head widened into a thread's scratch as it starts (no float32 copy of the tensor) */
    const uint16_t *h;
} fnn_attn_mat;

typedef struct fnn_attn_args {
    fnn_attn_mat q, k, v;   /* q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] */
    fnn_attn_mat g;         /* backward: the output's gradient [B,H,Tq,Dv] */
    const void *mask;       /* the key padding mask [B,Tk] (nonzero = padding), or NULL: the forward's, and the
                             * backward's when it keeps lse (then float32 0/1, contiguous) */
    int mask_i64;           /* the mask is int64 (else float32) */
    int64_t ms0, ms1;       /* the mask's strides */
    /* what the forward keeps: P when Tk < the row's lse_from_tk (or that is 0), else lse */
    float *p;               /* [B,H,Tq,Tk] probabilities: written by the forward, read by the backward; or NULL */
    float *lse;             /* [B,H,Tq] log of each query's softmax denominator, max included (+inf: the query
                             * sees no key): written by the forward (NULL there: no backward will run), read by
                             * the backward; or NULL (P kept) */
    float *o;               /* forward: the output [B,Tq,H,Dv]; backward (lse kept): that output, read */
    float *dq, *dk, *dv;    /* backward: [B,Tq,H,D], [B,Tk,H,D], [B,Tk,H,Dv], each NULL when not wanted */
    float *ds;              /* backward (P kept): scratch [B,H,Tq,Tk] for dP and dS, NULL when dq and dk are not
                             * wanted or lse is kept */
    int64_t B, H, Tq, Tk, D, Dv;
    float scale;
    int causal;             /* query i sees keys 0 .. i + Tk - Tq */
    /* forward with a bfloat16 output (NULL: none): o's [B,Tq,H,Dv] values rounded into oh [B,Tq,H,Dv] (to
     * nearest even, bf16.h) after the heads; o stays float32 (the lse backward reads it). Only the CPU's row
     * reads it: the entry takes and makes bfloat16 on the CPU only (cuda/attention.cu's rows take float32) */
    uint16_t *oh;
    /* bits 0, 1, 2: q, k, v hold bfloat16 values (widened from bfloat16 tensors), so bf16 precision's products
     * take them as they are, unscanned and unrounded (fnn_gemm_prec_exact). Only the CPU's rows read it */
    unsigned exact;
} fnn_attn_args;
typedef int (*fnn_attn_fn)(int ordinal, const fnn_attn_args *a);

typedef struct fnn_attn_row {
    const char *op;                 /* the registry name; NULL ends a table */
    fnn_attn_fn forward, backward;  /* the op and its rule */
    /* attention_cache_append's write (the family's entry point without a node, so without a row of
     * its own): rows pos .. pos+t-1 of buf [B,H,cap,C] (contiguous) = x [B,H,t,C] through its strides */
    int (*cache_write)(int ordinal, float *buf, int64_t cap, int64_t pos, const float *x, const int64_t *xstride,
                       const int64_t *xshape);
    /* from this many keys on (Tk >= lse_from_tk) the forward gets lse instead of P, and the backward lse, the
     * output and the mask; 0: P at every length. The CPU's: past one key block (attention.c's ATTN_BK), where
     * it runs FlashAttention-2's blocks and no [Tq,Tk] buffer exists; CUDA's: 0 */
    int64_t lse_from_tk;
} fnn_attn_row;
/* the CPU rows: core/ops/attention.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(attention, fnn_attn_row)

#ifdef __cplusplus
}
#endif
#endif
