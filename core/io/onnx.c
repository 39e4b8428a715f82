/* onnx.c: ONNX model files (fnn.onnx.export), built node by node and encoded by the code protoc-c
 * generates from onnx.proto (ONNX's own field numbers).
 *
 * The model is a tree of protobuf-c messages whose every part (strings, arrays, sub-messages) is
 * malloc'ed, so protobuf_c_message_free_unpacked, which frees with the same allocator, frees it
 * whole. Tensors go in as raw_data (little-endian, as ONNX defines it; this is x86-64/aarch64 only).
 * defines: fnn_onnx_new, fnn_onnx_node, fnn_onnx_attr_int, fnn_onnx_attr_float, fnn_onnx_attr_ints, fnn_onnx_attr_string,
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

int fnn_onnx_attr_string(fnn_onnx_model *m, const char *name, const char *v) {
    FNN_CHECK(v, FNN_STATUS_ARG, "onnx: attribute %s: no string", name ? name : "?");
    Onnx__AttributeProto *a = NULL;
    FNN_TRY(attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, &a));
    size_t len = strlen(v);
    a->s.data = malloc(len > 0 ? len : 1);
    if (!a->s.data) return OOM(name);
    memcpy(a->s.data, v, len);
    a->s.len = len;
    a->has_s = 1;
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

/* ================= reading (fnn.onnx.load) ================= */
/* A file's model is unpacked whole (protobuf-c skips the fields onnx.proto leaves out) and read back
 * through the accessors below, which take indices the caller got from fnn_onnx_count: the graph's
 * nodes in file order (ONNX requires them sorted topologically), its initializers, inputs and
 * outputs. Tensor data may be raw_data or the typed lists; data in an external file is refused. */
enum { ONNX_MAX_BYTES = 1 << 30 };   /* a model file past 1 GiB is refused (ONNX keeps such weights external) */

int fnn_onnx_load(fnn_onnx_model **out, const char *path) {
    FNN_CHECK(out && path && *path, FNN_STATUS_ARG, "onnx.load: no path");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    FNN_CHECK(f, FNN_STATUS_IO, "onnx.load: cannot open %s: %s", path, strerror(errno));
    int rc = FNN_STATUS_OK;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    uint8_t *buf = NULL;
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) rc = FNN_FAIL(FNN_STATUS_IO, "onnx.load: cannot read %s: %s", path, strerror(errno));
    else if (size > ONNX_MAX_BYTES) rc = FNN_FAIL(FNN_STATUS_ARG, "onnx.load: %s is %ld bytes (at most 1 GiB is read)", path, size);
    else if (!(buf = malloc(size > 0 ? (size_t)size : 1))) rc = FNN_FAIL(FNN_STATUS_OOM, "onnx.load: %s: out of memory", path);
    else if (fread(buf, 1, (size_t)size, f) != (size_t)size)
        rc = FNN_FAIL(FNN_STATUS_IO, "onnx.load: cannot read %s: %s", path, strerror(errno));
    fclose(f);
    if (rc) { free(buf); return rc; }
    Onnx__ModelProto *model = onnx__model_proto__unpack(NULL, (size_t)size, buf);
    free(buf);
    FNN_CHECK(model, FNN_STATUS_ARG, "onnx.load: %s is not an ONNX model (the protocol buffer does not decode)", path);
    fnn_onnx_model *m = calloc(1, sizeof *m);
    if (!m) { protobuf_c_message_free_unpacked(&model->base, NULL); return OOM(path); }
    m->model = model;
    if (!model->graph) { fnn_onnx_free(m); return FNN_FAIL(FNN_STATUS_ARG, "onnx.load: %s holds no graph", path); }
    *out = m;
    return FNN_STATUS_OK;
}

/* the version of ONNX's default domain the model imports (0 when it declares none) */
int64_t fnn_onnx_opset(const fnn_onnx_model *m) {
    if (!m) return 0;
    for (size_t i = 0; i < m->model->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *s = m->model->opset_import[i];
        if (!s->domain || !*s->domain || !strcmp(s->domain, "ai.onnx")) return s->has_version ? s->version : 0;
    }
    return 0;
}

/* what: 0 nodes, 1 initializers, 2 graph inputs, 3 graph outputs */
int fnn_onnx_count(const fnn_onnx_model *m, int what) {
    if (!m) return 0;
    const Onnx__GraphProto *g = m->model->graph;
    size_t n = what == 0 ? g->n_node : what == 1 ? g->n_initializer : what == 2 ? g->n_input : what == 3 ? g->n_output : 0;
    return (int)n;
}

static const Onnx__NodeProto *node_at(const fnn_onnx_model *m, int i) {
    return m && i >= 0 && (size_t)i < m->model->graph->n_node ? m->model->graph->node[i] : NULL;
}

/* node i's op_type (field 0), name (1) or domain (2); "" when absent */
const char *fnn_onnx_node_text(const fnn_onnx_model *m, int i, int field) {
    const Onnx__NodeProto *n = node_at(m, i);
    const char *s = !n ? NULL : field == 0 ? n->op_type : field == 1 ? n->name : n->domain;
    return s ? s : "";
}

/* node i's number of inputs (output 0) or outputs (1), and the k-th name ("" is an absent optional input) */
int fnn_onnx_node_arity(const fnn_onnx_model *m, int i, int output) {
    const Onnx__NodeProto *n = node_at(m, i);
    return !n ? 0 : (int)(output ? n->n_output : n->n_input);
}
const char *fnn_onnx_node_value(const fnn_onnx_model *m, int i, int output, int k) {
    const Onnx__NodeProto *n = node_at(m, i);
    if (!n || k < 0 || (size_t)k >= (output ? n->n_output : n->n_input)) return "";
    const char *s = output ? n->output[k] : n->input[k];
    return s ? s : "";
}

static const Onnx__AttributeProto *attr_at(const fnn_onnx_model *m, int i, int a) {
    const Onnx__NodeProto *n = node_at(m, i);
    return n && a >= 0 && (size_t)a < n->n_attribute ? n->attribute[a] : NULL;
}

/* node i's number of attributes */
int fnn_onnx_node_attrs(const fnn_onnx_model *m, int i) {
    const Onnx__NodeProto *n = node_at(m, i);
    return n ? (int)n->n_attribute : 0;
}

/* attribute a of node i: its name and type (AttributeProto's: 1 float, 2 int, 3 string, 4 tensor, 6 floats,
 * 7 ints), its number (f or i) and, for lists, their length; NULL when there is no such attribute */
const char *fnn_onnx_attr(const fnn_onnx_model *m, int i, int a, int *type, double *number, int64_t *count) {
    const Onnx__AttributeProto *at = attr_at(m, i, a);
    if (!at) return NULL;
    *type = at->has_type ? (int)at->type : 0;
    *number = *type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT ? (double)at->f : (double)at->i;
    *count = *type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS ? (int64_t)at->n_floats
           : *type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS   ? (int64_t)at->n_ints
           : *type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING ? (int64_t)at->s.len : 0;
    return at->name ? at->name : "";
}

/* element k of a list attribute (ints or floats), or of a string's bytes */
double fnn_onnx_attr_at(const fnn_onnx_model *m, int i, int a, int64_t k) {
    const Onnx__AttributeProto *at = attr_at(m, i, a);
    if (!at || k < 0) return 0;
    if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS && (size_t)k < at->n_floats) return at->floats[k];
    if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS && (size_t)k < at->n_ints) return (double)at->ints[k];
    if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING && (size_t)k < at->s.len) return at->s.data[k];
    return 0;
}

/* a TensorProto as a new CPU tensor: float (1) as float32, int64 (7) and int32 (6) as int64 */
static int tensor_of(fnn_tensor *out, const Onnx__TensorProto *p, const char *what) {
    const char *name = p->name ? p->name : "";
    FNN_CHECK(p->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL, FNN_STATUS_ARG,
              "onnx.load: %s '%s' keeps its data in an external file (not supported)", what, name);
    FNN_CHECK(p->n_dims <= FNN_MAX_DIMS, FNN_STATUS_SHAPE, "onnx.load: %s '%s' has %zu dims (at most %d)", what, name,
              p->n_dims, FNN_MAX_DIMS);
    int64_t shape[FNN_MAX_DIMS], n = 1;
    for (size_t d = 0; d < p->n_dims; d++) {
        FNN_CHECK(p->dims[d] >= 0 && (p->dims[d] == 0 || n <= INT64_MAX / 4 / p->dims[d]), FNN_STATUS_SHAPE,
                  "onnx.load: %s '%s' has dim %zu of size %lld", what, name, d, (long long)p->dims[d]);
        shape[d] = p->dims[d];
        n *= p->dims[d];
    }
    int type = p->data_type;
    FNN_CHECK(type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
              type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32, FNN_STATUS_ARG,
              "onnx.load: %s '%s' has ONNX data type %d (float, int64 and int32 are read)", what, name, type);
    size_t elem = type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? 8 : 4;
    size_t typed = type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ? p->n_float_data
                 : type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? p->n_int64_data : p->n_int32_data;
    bool raw = p->has_raw_data;
    FNN_CHECK(raw ? p->raw_data.len == (size_t)n * elem : typed == (size_t)n, FNN_STATUS_ARG,
              "onnx.load: %s '%s': %lld elements in its shape, %zu in its data", what, name, (long long)n,
              raw ? p->raw_data.len / elem : typed);
    bool f32 = type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    FNN_TRY(fnn_new_output_dtype(out, FNN_DEVICE_CPU, f32 ? FNN_DTYPE_FLOAT32 : FNN_DTYPE_INT64, (int)p->n_dims, shape));
    if (n == 0) return FNN_STATUS_OK;
    if (f32) {
        memcpy(fnn_data(out), raw ? (const void *)p->raw_data.data : (const void *)p->float_data, (size_t)n * 4);
    } else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        memcpy(fnn_data_i64(out), raw ? (const void *)p->raw_data.data : (const void *)p->int64_data, (size_t)n * 8);
    } else {
        int64_t *d = fnn_data_i64(out);
        for (int64_t k = 0; k < n; k++) {
            int32_t v;
            if (raw) memcpy(&v, p->raw_data.data + 4 * k, 4); else v = p->int32_data[k];
            d[k] = v;
        }
    }
    return FNN_STATUS_OK;
}

/* initializer k as a new CPU tensor, and its name */
int fnn_onnx_init_tensor(fnn_tensor *out, const fnn_onnx_model *m, int k, const char **name) {
    FNN_CHECK(m && k >= 0 && (size_t)k < m->model->graph->n_initializer, FNN_STATUS_ARG, "onnx.load: no initializer %d", k);
    const Onnx__TensorProto *p = m->model->graph->initializer[k];
    *name = p->name ? p->name : "";
    return tensor_of(out, p, "initializer");
}

/* the tensor attribute a of node i (Constant's value) as a new CPU tensor */
int fnn_onnx_attr_tensor(fnn_tensor *out, const fnn_onnx_model *m, int i, int a) {
    const Onnx__AttributeProto *at = attr_at(m, i, a);
    FNN_CHECK(at && at->t, FNN_STATUS_ARG, "onnx.load: node %d's attribute %d holds no tensor", i, a);
    return tensor_of(out, at->t, "constant");
}

/* the name of graph input (output 0) or output (1) k */
const char *fnn_onnx_graph_value(const fnn_onnx_model *m, int output, int k) {
    if (!m) return "";
    const Onnx__GraphProto *g = m->model->graph;
    if (k < 0 || (size_t)k >= (output ? g->n_output : g->n_input)) return "";
    const Onnx__ValueInfoProto *v = output ? g->output[k] : g->input[k];
    return v->name ? v->name : "";
}
