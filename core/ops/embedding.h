/* embedding.h: the embedding family's backend contract (core/internal.h's fnn_row_table): its
 * arguments and row type, filled by core/ops/embedding.c (the CPU) and cuda/index.cu (the shared
 * index walk). The weight is read in place through its strides by the CUDA row; the CPU row reads
 * it contiguous (a copy only for a strided view, as before). The forward row makes `saved`, the ids
 * as that backend's backward reads them: on the CPU 0-based rows checked on the host (a bad id is
 * refused by name), on a GPU the int64 ids themselves, contiguous (a bad id gives a row of nan). */
#ifndef FASTNN_OPS_EMBEDDING_H
#define FASTNN_OPS_EMBEDDING_H
#include "../internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_emb_args {
    fnn_tensor *out;            /* made by the caller on the op's device, contiguous: the forward's
                                 * [*ids, W], or the backward's dW [V, W], not yet zeroed */
    fnn_tensor *saved;          /* forward: made here (see above), kept by the node; backward: read */
    const fnn_tensor *weight;   /* forward: the weight [V, W], any strides */
    const fnn_tensor *ids;      /* forward: the ids as given (any shape) */
    const fnn_tensor *g;        /* backward: the output's gradient, [*ids, W] */
    int64_t n, V, W;            /* ids looked up; the weight's [vocabulary, width] */
    int64_t pad_row;            /* backward: the 0-based padding row, which gets no gradient (-1: none) */
} fnn_emb_args;
typedef int (*fnn_emb_fn)(int ordinal, fnn_emb_args *a);
typedef struct fnn_emb_row {
    const char *op;             /* the registry name; NULL ends a table */
    fnn_emb_fn forward, backward;
} fnn_emb_row;
/* the CPU rows: core/ops/embedding.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(embedding, fnn_emb_row)

#ifdef __cplusplus
}
#endif
#endif
