/* registry.c: every op the core defines, joined from the family tables, so
 * specs can iterate them (gradcheck, CUDA parity) and fail on a missing case. */
#include "internal.h"

static const fnn_op_def *const *const families[] = {
    fnn_ops_elementwise, fnn_ops_reduction, fnn_ops_linalg, fnn_ops_conv, fnn_ops_shape, fnn_ops_index, fnn_ops_loss, fnn_ops_norm, fnn_ops_device, fnn_ops_rnn, fnn_ops_embedding, fnn_ops_attention, fnn_ops_sort, fnn_ops_pool,
};

int fnn_op_count(void) {
    int n = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const fnn_op_def *const *p = families[f]; *p; p++) n++;
    return n;
}

const fnn_op_info *fnn_op_at(int i) {
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const fnn_op_def *const *p = families[f]; *p; p++)
            if (i-- == 0) return &(*p)->info;
    return NULL;
}
