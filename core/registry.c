/* registry.c: every op the core defines, joined from the family tables, so
 * specs can iterate them (gradcheck, CUDA parity) and fail on a missing case.
 * For the families whose backends hold kernel rows by op name (internal.h's
 * fnn_red_row), has_cuda is derived from the CUDA backend's rows. */
#include "internal.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const fnn_op_def *const *const families[] = {
    fnn_ops_elementwise, fnn_ops_reduction, fnn_ops_linalg, fnn_ops_conv, fnn_ops_shape, fnn_ops_index, fnn_ops_loss, fnn_ops_norm, fnn_ops_device, fnn_ops_rnn, fnn_ops_embedding, fnn_ops_attention, fnn_ops_sort, fnn_ops_pool,
};

int fnn_op_count(void) {
    int n = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const fnn_op_def *const *p = families[f]; *p; p++) n++;
    return n;
}

/* the families whose backends hold kernel rows by op name */
static const char *const row_families[] = {"reduction", NULL};

const char *fnn_row_family_at(int i) {
    return i >= 0 && i < (int)(sizeof row_families / sizeof row_families[0]) ? row_families[i] : NULL;
}

/* a backend's rows for family, or NULL when it has none (the family is not on rows, or the
 * backend is not built) */
static const fnn_red_row *rows_of(int device_type, const char *family) {
    if (device_type == FNN_DEVICE_CUDA) fnn_device_count(FNN_DEVICE_CUDA);   /* registers the backend */
    const fnn_backend *be = fnn_backend_for(fnn_make_device(device_type, 0));
    if (!be || !family) return NULL;
    if (!strcmp(family, "reduction")) return be->reductions;
    return NULL;
}

static bool on_rows(const char *family) {
    for (int i = 0; row_families[i]; i++) if (!strcmp(row_families[i], family)) return true;
    return false;
}

const char *fnn_kernel_at(int device_type, const char *family, int i) {
    const fnn_red_row *r = rows_of(device_type, family);
    for (int k = 0; r && r[k].op; k++)
        if (k == i) return r[k].op;
    return NULL;
}

static fnn_op_info *infos;   /* written once under `once`, read-only after */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void derive(void) {
    int n = fnn_op_count(), i = 0;
    infos = calloc((size_t)n, sizeof *infos);
    if (!infos) return;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const fnn_op_def *const *p = families[f]; *p; p++, i++) {
            infos[i] = (*p)->info;
            if (on_rows(infos[i].family)) {   /* on rows: has_cuda is the CUDA row's presence */
                const fnn_red_row *r = rows_of(FNN_DEVICE_CUDA, infos[i].family);
                infos[i].has_cuda = 0;
                for (; r && r->op; r++) if (!strcmp(r->op, infos[i].name)) infos[i].has_cuda = 1;
            }
        }
}

const fnn_op_info *fnn_op_at(int i) {
    pthread_once(&once, derive);
    if (infos) return i >= 0 && i < fnn_op_count() ? &infos[i] : NULL;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)   /* out of memory: the typed flags */
        for (const fnn_op_def *const *p = families[f]; *p; p++)
            if (i-- == 0) return &(*p)->info;
    return NULL;
}
