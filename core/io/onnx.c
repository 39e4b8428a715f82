/* onnx.c: ONNX model files (fnn.onnx.export), built node by node and encoded by the code protoc-c
 * generates from onnx.proto (ONNX's own field numbers).
 *
 * The model is a tree of protobuf-c messages whose every part (strings, arrays, sub-messages) is
 * malloc'ed, so protobuf_c_message_free_unpacked, which frees with the same allocator, frees it
 * whole. Tensors go in as raw_data (little-endian, as ONNX defines it; this is x86-64/aarch64 only).
 * defines: fnn_onnx_new, fnn_onnx_node, fnn_onnx_attr_int, fnn_onnx_attr_float, fnn_onnx_attr_ints,
 * fnn_onnx_initializer, fnn_onnx_value, fnn_onnx_save, fnn_onnx_free. */
#define _GNU_SOURCE
#include "internal.h"
#include "onnx.pb-c.h"
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "onnx.c writes tensors as raw_data, which ONNX defines as little-endian"
#endif

struct fnn_onnx_model {
    Onnx__ModelProto *model;
};

static atomic_ulong tmp_counter;

/* a grown copy of an array of n pointers with room for one more; NULL when out of memory */
static void *grow(void *arr, size_t n, size_t elem) { return realloc(arr, (n + 1) * elem); }

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

#define OOM(what) FNN_FAIL(FNN_STATUS_OOM, "onnx: out of memory (%s)", what)

int fnn_onnx_new(fnn_onnx_model **out, const char *graph_name, int opset) {
    FNN_CHECK(out, FNN_STATUS_ARG, "onnx: no place for the model");
    *out = NULL;
    FNN_CHECK(opset >= 7, FNN_STATUS_ARG, "onnx: opset %d (expected >= 7)", opset);
    fnn_onnx_model *m = calloc(1, sizeof *m);
    Onnx__ModelProto *model = malloc(sizeof *model);
    Onnx__GraphProto *graph = malloc(sizeof *graph);
    Onnx__OperatorSetIdProto *set = malloc(sizeof *set);
    Onnx__OperatorSetIdProto **sets = malloc(sizeof *sets);
    if (!m || !model || !graph || !set || !sets) {
        free(m); free(model); free(graph); free(set); free(sets);
        return OOM("model");
    }
    onnx__model_proto__init(model);
    onnx__graph_proto__init(graph);
    onnx__operator_set_id_proto__init(set);
    /* the IR version of the opset's ONNX release: 17 -> 8 (ONNX 1.12), then one per two opsets */
    model->has_ir_version = 1;
    model->ir_version = opset <= 12 ? 7 : opset <= 17 ? 8 : opset <= 20 ? 9 : 10;
    set->has_version = 1;
    set->version = opset;
    set->domain = strdup("");
    sets[0] = set;
    model->n_opset_import = 1;
    model->opset_import = sets;
    model->producer_name = strdup("fastnn-lua");
    model->producer_version = strdup(fnn_version());
    graph->name = dup_or_empty(graph_name);
    model->graph = graph;
    m->model = model;
    if (!set->domain || !model->producer_name || !model->producer_version || !graph->name) {
        fnn_onnx_free(m);
        return OOM("model");
    }
    *out = m;
    return FNN_STATUS_OK;
}

void fnn_onnx_free(fnn_onnx_model *m) {
    if (!m) return;
    if (m->model) protobuf_c_message_free_unpacked(&m->model->base, NULL);
    free(m);
}

static char **strings(int n, const char *const *names) {
    char **out = calloc((size_t)(n > 0 ? n : 1), sizeof *out);
    if (!out) return NULL;
    for (int i = 0; i < n; i++) {
        out[i] = dup_or_empty(names[i]);
        if (!out[i]) {
            for (int j = 0; j < i; j++) free(out[j]);
            free(out);
            return NULL;
        }
    }
    return out;
}

/* a node op_type(inputs) -> outputs, appended; attributes added next go to it. An empty input name
 * is ONNX's "absent optional input" */
int fnn_onnx_node(fnn_onnx_model *m, const char *op_type, const char *name, int n_in, const char *const *inputs,
                  int n_out, const char *const *outputs) {
    FNN_CHECK(m && op_type && *op_type, FNN_STATUS_ARG, "onnx: no model or no op_type");
    FNN_CHECK(n_in >= 0 && n_out >= 1 && (n_in == 0 || inputs) && outputs, FNN_STATUS_ARG,
              "onnx: %s: %d inputs, %d outputs", op_type, n_in, n_out);
    Onnx__GraphProto *g = m->model->graph;
    Onnx__NodeProto **nodes = grow(g->node, g->n_node, sizeof *nodes);
    if (!nodes) return OOM(op_type);
    g->node = nodes;
    Onnx__NodeProto *node = malloc(sizeof *node);
    if (!node) return OOM(op_type);
    onnx__node_proto__init(node);
    node->op_type = strdup(op_type);
    node->name = dup_or_empty(name);
    node->input = strings(n_in, inputs);
    node->output = strings(n_out, outputs);
    node->n_input = node->input ? (size_t)n_in : 0;
    node->n_output = node->output ? (size_t)n_out : 0;
    g->node[g->n_node++] = node;   /* owned by the graph from here: freed with it */
    if (!node->op_type || !node->name || !node->input || !node->output) return OOM(op_type);
    return FNN_STATUS_OK;
}

/* a new attribute of the last node */
static int attr(fnn_onnx_model *m, const char *name, Onnx__AttributeProto__AttributeType type,
                Onnx__AttributeProto **out) {
    FNN_CHECK(m && name && *name, FNN_STATUS_ARG, "onnx: no model or no attribute name");
    Onnx__GraphProto *g = m->model->graph;
    FNN_CHECK(g->n_node > 0, FNN_STATUS_ARG, "onnx: attribute %s before any node", name);
    Onnx__NodeProto *node = g->node[g->n_node - 1];
    Onnx__AttributeProto **attrs = grow(node->attribute, node->n_attribute, sizeof *attrs);
    if (!attrs) return OOM(name);
    node->attribute = attrs;
    Onnx__AttributeProto *a = malloc(sizeof *a);
    if (!a) return OOM(name);
    onnx__attribute_proto__init(a);
    a->has_type = 1;
    a->type = type;
    a->name = strdup(name);
    node->attribute[node->n_attribute++] = a;
    if (!a->name) return OOM(name);
    *out = a;
    return FNN_STATUS_OK;
}

int fnn_onnx_attr_int(fnn_onnx_model *m, const char *name, int64_t v) {
    Onnx__AttributeProto *a = NULL;
    FNN_TRY(attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, &a));
    a->has_i = 1;
    a->i = v;
    return FNN_STATUS_OK;
}

int fnn_onnx_attr_float(fnn_onnx_model *m, const char *name, double v) {
    Onnx__AttributeProto *a = NULL;
    FNN_TRY(attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, &a));
    a->has_f = 1;
    a->f = (float)v;
    return FNN_STATUS_OK;
}

int fnn_onnx_attr_ints(fnn_onnx_model *m, const char *name, int n, const int64_t *v) {
    FNN_CHECK(n >= 0 && (n == 0 || v), FNN_STATUS_ARG, "onnx: attribute %s: %d values", name ? name : "?", n);
    Onnx__AttributeProto *a = NULL;
    FNN_TRY(attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, &a));
    a->ints = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!a->ints) return OOM(name);
    if (n > 0) memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
    a->n_ints = (size_t)n;
    return FNN_STATUS_OK;
}

/* a weight: t (float32 or int64, any strides, on the CPU) copied in as the initializer `name` */
int fnn_onnx_initializer(fnn_onnx_model *m, const char *name, const fnn_tensor *t) {
    FNN_CHECK(m && name && *name, FNN_STATUS_ARG, "onnx: no model or no initializer name");
    FNN_TRY(fnn_check_input_any("onnx.initializer", t));
    int is64 = t->dtype == FNN_DTYPE_INT64;
    FNN_CHECK(is64 || t->dtype == FNN_DTYPE_FLOAT32, FNN_STATUS_ARG, "onnx: initializer %s is %s (float32 or int64 only)",
              name, fnn_dtype_name(t->dtype));
    Onnx__GraphProto *g = m->model->graph;
    Onnx__TensorProto **inits = grow(g->initializer, g->n_initializer, sizeof *inits);
    if (!inits) return OOM(name);
    g->initializer = inits;
    Onnx__TensorProto *p = malloc(sizeof *p);
    if (!p) return OOM(name);
    onnx__tensor_proto__init(p);
    g->initializer[g->n_initializer++] = p;
    p->name = strdup(name);
    p->has_data_type = 1;
    p->data_type = is64 ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    p->dims = malloc(sizeof(int64_t) * (size_t)(t->ndim > 0 ? t->ndim : 1));
    int64_t n = fnn_tensor_numel(t);
    size_t bytes = (size_t)n * (is64 ? 8 : 4);
    p->raw_data.data = malloc(bytes > 0 ? bytes : 1);
    if (!p->name || !p->dims || !p->raw_data.data) return OOM(name);
    for (int d = 0; d < t->ndim; d++) p->dims[d] = t->shape[d];
    p->n_dims = (size_t)t->ndim;
    p->has_raw_data = 1;
    p->raw_data.len = bytes;
    if (is64) return fnn_copy_to_int64(t, (int64_t *)p->raw_data.data, n);
    return fnn_copy_to_floats(t, (float *)p->raw_data.data, n);
}

/* a graph input (output = 0) or output (1): name, elem_type (1 float, 7 int64) and shape; a dim < 0
 * is the free size named dim_params[d] (the dynamic batch) */
int fnn_onnx_value(fnn_onnx_model *m, int output, const char *name, int elem_type, int ndim, const int64_t *dims,
                   const char *const *dim_params) {
    FNN_CHECK(m && name && *name, FNN_STATUS_ARG, "onnx: no model or no value name");
    FNN_CHECK(ndim >= 0 && ndim <= FNN_MAX_DIMS && (ndim == 0 || dims), FNN_STATUS_ARG, "onnx: %s: %d dims", name, ndim);
    Onnx__GraphProto *g = m->model->graph;
    size_t *count = output ? &g->n_output : &g->n_input;
    Onnx__ValueInfoProto ***list = output ? &g->output : &g->input;
    Onnx__ValueInfoProto **grown = grow(*list, *count, sizeof **list);
    if (!grown) return OOM(name);
    *list = grown;
    Onnx__ValueInfoProto *v = malloc(sizeof *v);
    if (!v) return OOM(name);
    onnx__value_info_proto__init(v);
    (*list)[(*count)++] = v;
    v->name = strdup(name);
    Onnx__TypeProto *type = malloc(sizeof *type);
    Onnx__TypeProto__Tensor *tt = malloc(sizeof *tt);
    Onnx__TensorShapeProto *shape = malloc(sizeof *shape);
    if (type) { onnx__type_proto__init(type); v->type = type; }
    if (tt && type) {
        onnx__type_proto__tensor__init(tt);
        type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        type->tensor_type = tt;
    } else free(tt);
    if (shape && type && tt) { onnx__tensor_shape_proto__init(shape); tt->shape = shape; } else { free(shape); shape = NULL; }
    if (!v->name || !shape) return OOM(name);
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    shape->dim = calloc((size_t)(ndim > 0 ? ndim : 1), sizeof *shape->dim);
    if (!shape->dim) return OOM(name);
    for (int d = 0; d < ndim; d++) {
        Onnx__TensorShapeProto__Dimension *dim = malloc(sizeof *dim);
        if (!dim) return OOM(name);
        onnx__tensor_shape_proto__dimension__init(dim);
        shape->dim[shape->n_dim++] = dim;
        if (dims[d] >= 0) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = dims[d];
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = dup_or_empty(dim_params ? dim_params[d] : NULL);
            if (!dim->dim_param) return OOM(name);
        }
    }
    return FNN_STATUS_OK;
}

/* path <- the model (a temporary file beside it, then rename: a failed save leaves no half file) */
int fnn_onnx_save(fnn_onnx_model *m, const char *path) {
    FNN_CHECK(m && path && *path, FNN_STATUS_ARG, "onnx: no model or no path");
    size_t n = protobuf_c_message_get_packed_size(&m->model->base);
    uint8_t *buf = malloc(n > 0 ? n : 1);
    FNN_CHECK(buf, FNN_STATUS_OOM, "onnx: %s: out of memory (%zu bytes)", path, n);
    protobuf_c_message_pack(&m->model->base, buf);
    size_t tlen = strlen(path) + 64;
    char *tmp = malloc(tlen);
    if (!tmp) { free(buf); return FNN_FAIL(FNN_STATUS_OOM, "onnx: %s: out of memory", path); }
    snprintf(tmp, tlen, "%s.tmp.%ld.%lu", path, (long)getpid(), (unsigned long)atomic_fetch_add(&tmp_counter, 1));
    int rc = FNN_STATUS_OK;
    FILE *f = fopen(tmp, "wb");
    if (!f) rc = FNN_FAIL(FNN_STATUS_IO, "onnx: cannot open %s for writing: %s", tmp, strerror(errno));
    else {
        size_t put = fwrite(buf, 1, n, f);
        int closed = fclose(f);
        if (put != n || closed != 0) rc = FNN_FAIL(FNN_STATUS_IO, "onnx: cannot write %s: %s", tmp, strerror(errno));
        else if (rename(tmp, path) != 0) rc = FNN_FAIL(FNN_STATUS_IO, "onnx: cannot replace %s: %s", path, strerror(errno));
        if (rc) unlink(tmp);
    }
    free(tmp);
    free(buf);
    return rc;
}
