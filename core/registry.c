/* registry.c: every op the core defines, joined from the family tables, so
 * specs can iterate them (gradcheck, CUDA parity) and fail on a missing case;
 * the CPU backend's list of kernel row tables, the row lookup and its refusal.
 * For the families whose backends hold kernel rows by op name (internal.h's
 * fnn_row_table), has_cuda is derived from the CUDA backend's rows. */
#include "internal.h"
#include "ops/pool.h"
#include "ops/reduction.h"
#include "ops/norm.h"
#include "ops/sort.h"
#include "ops/index.h"
#include "ops/loss.h"
#include "ops/attention.h"
#include "ops/rnn.h"
#include "ops/conv.h"
#include "ops/shape.h"
#include "ops/embedding.h"
#include "ops/linalg.h"
#include "optim.h"
#include "ops/int64.h"
#include "ops/elementwise.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Adding a family: its line in internal.h's lists, its op table and case file, its module in
 * lua/fastnn/ops/, its rows in each backend; then this count. */
_Static_assert(FNN_OP_FAMILY_COUNT == 15 && FNN_ROW_FAMILY_COUNT == 12 && FNN_KERNEL_FAMILY_COUNT == 3,
               "a family was added or removed: see the comment above, then update these counts");

#define FAMILY_OPS_(family) fnn_ops_##family,
static const fnn_op_def *const *const families[] = {FNN_OP_FAMILIES(FAMILY_OPS_)};

int fnn_op_count(void) {
    int n = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const fnn_op_def *const *p = families[f]; *p; p++) n++;
    return n;
}

/* The CPU's row tables: every family on rows has one, so this list (less the kernel families, whose
 * rows are not registry ops) is also the list of families on rows (fnn_row_family_at). */
#define CPU_ROWS_(family) FNN_ROW_TABLE(#family, fnn_cpu_##family##_rows),
#define CPU_KERNELS_(family) FNN_KERNEL_TABLE(#family, fnn_cpu_##family##_rows),
const fnn_row_table fnn_cpu_row_tables[] = {
    FNN_ROW_FAMILIES(CPU_ROWS_) FNN_KERNEL_FAMILIES(CPU_KERNELS_) {NULL, NULL, 0, false},
};

const char *fnn_row_family_at(int i) {
    for (const fnn_row_table *t = fnn_cpu_row_tables; t->family; t++)
        if (!t->by_kernel && i-- == 0) return t->family;
    return NULL;
}

/* a backend's table for family, or NULL when it has none (the family is not on rows, or the backend
 * is not built); kernels: kernel families too, else only the registry's */
static const fnn_row_table *table_of(int device_type, const char *family, bool kernels) {
    if (device_type == FNN_DEVICE_CUDA) fnn_device_count(FNN_DEVICE_CUDA);   /* registers the backend */
    const fnn_backend *be = fnn_backend_for(fnn_make_device(device_type, 0));
    if (!be || !family) return NULL;
    for (const fnn_row_table *t = be->rows; t && t->family; t++)
        if ((kernels || !t->by_kernel) && !strcmp(t->family, family)) return t;
    return NULL;
}

/* Lookups by name cost tens of ns (string compares over the lists), paid by every op call; a
 * per-thread direct-mapped cache keyed by the name pointers answers a repeated one in a few. Safe:
 * the tables are constant once a backend is registered, and callers pass names that live forever
 * (literals, an op's registry name). */
typedef struct { const char *family, *op; int type; const void *row; } row_hit;
static _Thread_local row_hit row_cache[64];

const void *fnn_row_for(int device, const char *family, const char *op) {
    int type = fnn_device_type_of(device);
    row_hit *hit = &row_cache[(((uintptr_t)op >> 4) ^ (uintptr_t)type) & 63];
    if (hit->op == op && hit->family == family && hit->type == type) return hit->row;
    const fnn_backend *be = fnn_backend_for(device);
    const void *row = NULL;
    for (const fnn_row_table *t = be ? be->rows : NULL; t && t->family && !row; t++) {
        if (strcmp(t->family, family)) continue;
        for (size_t i = 0; fnn_row_name(t, i); i++)
            if (!strcmp(fnn_row_name(t, i), op)) { row = (const char *)t->rows + i * t->row_size; break; }
        break;
    }
    if (row) *hit = (row_hit){family, op, type, row};   /* misses are not kept: a backend may register later */
    return row;
}

int fnn_row_refused(const char *op, int device, bool backward, const char *file, int line) {
    char dev[32];
    return fnn_set_error(FNN_STATUS_DEVICE, file, line, "%s: %snot implemented on %s", op, backward ? "backward " : "",
                         fnn_device_name(device, dev, sizeof dev));
}

const char *fnn_kernel_at(int device_type, const char *family, int i) {
    const fnn_row_table *t = table_of(device_type, family, true);
    for (size_t k = 0; t && fnn_row_name(t, k); k++)
        if ((int)k == i) return fnn_row_name(t, k);
    return NULL;
}

static fnn_op_info *infos;   /* written once under `once`, read-only after */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void derive(void) {
    int n = fnn_op_count(), i = 0;
    fnn_device_count(FNN_DEVICE_CUDA);   /* registers the backend when built */
    bool cuda = fnn_backend_for(fnn_make_device(FNN_DEVICE_CUDA, 0)) != NULL;
    infos = calloc((size_t)n, sizeof *infos);
    if (!infos) return;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const fnn_op_def *const *p = families[f]; *p; p++, i++) {
            infos[i] = (*p)->info;
            if (table_of(FNN_DEVICE_CPU, infos[i].family, false)) {   /* on rows: has_cuda is the CUDA row's presence */
                const fnn_row_table *t = table_of(FNN_DEVICE_CUDA, infos[i].family, false);
                infos[i].has_cuda = 0;
                for (size_t k = 0; t && fnn_row_name(t, k); k++)
                    if (!strcmp(fnn_row_name(t, k), infos[i].name)) infos[i].has_cuda = 1;
            } else if (!cuda) {   /* elementwise, view, device: their typed flag, in a build with the backend */
                infos[i].has_cuda = 0;
            }
        }
}

/* a node's attribute, through its family's reader (the families fnn.onnx needs numbers from) */
int fnn_node_attr(const fnn_node *n, const char *name, double *value) {
    static const struct { const char *family; fnn_attr_reader read; } readers[] = {
        {"elementwise", fnn_elementwise_attr}, {"reduction", fnn_reduction_attr}, {"conv", fnn_conv_attr},
        {"pool", fnn_pool_attr}, {"norm", fnn_norm_attr}, {"attention", fnn_attention_attr},
        {"view", fnn_view_attr}, {"shape", fnn_shape_attr}, {"linalg", fnn_linalg_attr}};
    FNN_CHECK(n && name && value, FNN_STATUS_ARG, "node_attr: no node, name or place for the value");
    FNN_CHECK(!n->is_leaf, FNN_STATUS_ARG, "node_attr: a Param has no attributes");
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++)
        if (!strcmp(readers[i].family, n->op->info.family)) return readers[i].read(n, name, value);
    return FNN_FAIL(FNN_STATUS_ARG, "node_attr: %s nodes (%s) have no readable attributes", n->op->info.name,
                    n->op->info.family);
}

const fnn_op_info *fnn_op_at(int i) {
    pthread_once(&once, derive);
    if (infos) return i >= 0 && i < fnn_op_count() ? &infos[i] : NULL;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)   /* out of memory: the typed flags */
        for (const fnn_op_def *const *p = families[f]; *p; p++)
            if (i-- == 0) return &(*p)->info;
    return NULL;
}
