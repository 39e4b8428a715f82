/* node.c: autograd nodes: attaching one to an op's output, saving detached
 * tensors, refcounting, and releasing a graph without recursion (an LSTM
 * unrolled over many steps makes chains thousands of nodes deep). */
#include "../internal.h"
#include <stdlib.h>
#include <string.h>

static _Thread_local int grad_disabled;
static _Thread_local int anomaly_on;
static atomic_long live_nodes;

int fnn_grad_enabled(void) { return !grad_disabled; }
void fnn_set_grad_enabled(int on) { grad_disabled = !on; }
int fnn_anomaly_enabled(void) { return anomaly_on; }
void fnn_set_anomaly_enabled(int on) { anomaly_on = on != 0; }
int64_t fnn_live_nodes(void) { return atomic_load(&live_nodes); }

bool fnn_needs_node(int n, const fnn_tensor *const *inputs) {
    if (grad_disabled) return false;
    for (int i = 0; i < n; i++) if (inputs[i] && inputs[i]->node) return true;
    return false;
}

static fnn_node *node_alloc(int n_inputs) {
    size_t base = sizeof(fnn_node);
    size_t bytes = base + (size_t)n_inputs * (sizeof(fnn_node *) + sizeof(int) + sizeof(int64_t[FNN_MAX_DIMS]));
    /* malloc, not calloc: a node is ~2 KB, mostly tensor headers that only need their empty marks */
    fnn_node *n = malloc(bytes);
    if (!n) { FNN_FAIL(FNN_STATUS_OOM, "autograd: out of memory for a graph node"); return NULL; }
    n->op = NULL;
    n->out_ndim = 0;
    n->pending = n->visited = n->freed = 0;
    n->is_leaf = n->frozen = n->autocast = 0;
    memset(n->attrs, 0, sizeof n->attrs);   /* an attribute a forward leaves unset reads as 0 */
    /* the per-input arrays live in the same block: shapes first (8-byte aligned), then pointers, then ints */
    n->in_shape = (int64_t (*)[FNN_MAX_DIMS])((char *)n + base);
    n->next = (fnn_node **)((char *)n->in_shape + (size_t)n_inputs * sizeof(int64_t[FNN_MAX_DIMS]));
    n->in_ndim = (int *)((char *)n->next + (size_t)n_inputs * sizeof(fnn_node *));
    n->n_inputs = n_inputs;
    for (int i = 0; i < n_inputs; i++) { n->next[i] = NULL; n->in_ndim[i] = 0; }
    atomic_init(&n->refcount, 1);
    for (int i = 0; i < FNN_NODE_SAVED; i++) fnn_tensor_init(&n->saved[i]);
    fnn_tensor_init(&n->grad);
    fnn_tensor_init(&n->value);
    fnn_tensor_init(&n->leaf_grad);
    atomic_fetch_add(&live_nodes, 1);
    return n;
}

fnn_node *fnn_attach_node(fnn_tensor *out, const fnn_op_def *op, int count, const fnn_tensor *const *inputs) {
    fnn_node *n = node_alloc(count);
    if (!n) return NULL;
    n->op = op;
    n->autocast = fnn_autocast_depth() > 0;
    for (int i = 0; i < count; i++) {
        const fnn_tensor *t = inputs[i];
        if (!t) continue;
        n->next[i] = t->node;
        if (t->node) fnn_node_retain(t->node);
        n->in_ndim[i] = t->ndim;
        memcpy(n->in_shape[i], t->shape, sizeof(int64_t) * (size_t)t->ndim);
    }
    n->out_ndim = out->ndim;
    memcpy(n->out_shape, out->shape, sizeof(int64_t) * (size_t)out->ndim);
    out->node = n;   /* out owns the one reference */
    return n;
}

int fnn_record(const fnn_op_def *def, fnn_tensor *out, int n, const fnn_tensor *const *ins, fnn_node **node) {
    if (node) *node = NULL;
    if (!fnn_needs_node(n, ins)) return FNN_STATUS_OK;
    fnn_node *nd = fnn_attach_node(out, def, n, ins);
    if (!nd) { fnn_tensor_clear(out); return fnn_last_status(); }
    if (node) *node = nd;
    return FNN_STATUS_OK;
}

int fnn_save(fnn_node *n, int slot, const fnn_tensor *t) {
    FNN_ASSERT(slot >= 0 && slot < FNN_NODE_SAVED);
    fnn_tensor_clear(&n->saved[slot]);
    FNN_TRY(fnn_tensor_ref(&n->saved[slot], t));
    if (n->saved[slot].node) { fnn_node_release(n->saved[slot].node); n->saved[slot].node = NULL; }
    return FNN_STATUS_OK;
}

void fnn_node_retain(fnn_node *n) { atomic_fetch_add_explicit(&n->refcount, 1, memory_order_relaxed); }

/* drop what a node holds besides its edges */
static void node_drop_tensors(fnn_node *n) {
    for (int i = 0; i < FNN_NODE_SAVED; i++) fnn_tensor_clear(&n->saved[i]);
    fnn_tensor_clear(&n->grad);
    fnn_tensor_clear(&n->value);
    fnn_tensor_clear(&n->leaf_grad);
}

void fnn_node_release(fnn_node *n) {
    if (!n || atomic_fetch_sub_explicit(&n->refcount, 1, memory_order_acq_rel) != 1) return;
    /* worklist of nodes whose count reached zero */
    size_t cap = 64, len = 0;
    fnn_node **stack = malloc(cap * sizeof *stack);
    fnn_node *local[1];
    if (!stack) { stack = local; cap = 1; }
    stack[len++] = n;
    while (len) {
        fnn_node *cur = stack[--len];
        node_drop_tensors(cur);
        for (int i = 0; i < cur->n_inputs; i++) {
            fnn_node *nx = cur->next[i];
            if (!nx || atomic_fetch_sub_explicit(&nx->refcount, 1, memory_order_acq_rel) != 1) continue;
            if (len == cap && stack != local) {
                fnn_node **grown = realloc(stack, 2 * cap * sizeof *stack);
                if (grown) { stack = grown; cap *= 2; }
            }
            if (len < cap) stack[len++] = nx;
            else { atomic_fetch_add(&nx->refcount, 1); fnn_node_release(nx); } /* no memory: recurse */
        }
        free(cur);
        atomic_fetch_sub(&live_nodes, 1);
    }
    if (stack != local) free(stack);
}

int fnn_detach(fnn_tensor *out, const fnn_tensor *x) {
    FNN_TRY(fnn_check_input_any("detach", x));
    FNN_TRY(fnn_tensor_ref(out, x));
    if (out->node) { fnn_node_release(out->node); out->node = NULL; }
    return FNN_STATUS_OK;
}

const char *fnn_grad_fn_name(const fnn_tensor *x) {
    if (!x || !x->node) return NULL;
    return x->node->is_leaf ? "Param" : x->node->op->info.name;
}

/* the recorded graph, read back (fnn.onnx traces a module through it): a node's op name ("Param" for a
 * leaf), its inputs (the node of input k, NULL for plain data) and their shapes, its output's shape */
const char *fnn_node_op(const fnn_node *n) { return !n ? NULL : n->is_leaf ? "Param" : n->op->info.name; }
int fnn_node_inputs(const fnn_node *n) { return n ? n->n_inputs : 0; }
fnn_node *fnn_node_input(const fnn_node *n, int k) { return n && k >= 0 && k < n->n_inputs ? n->next[k] : NULL; }
int fnn_node_input_shape(const fnn_node *n, int k, int64_t *shape) {
    if (!n || k < 0 || k >= n->n_inputs) return -1;
    for (int d = 0; d < n->in_ndim[k]; d++) shape[d] = n->in_shape[k][d];
    return n->in_ndim[k];
}
int fnn_node_output_shape(const fnn_node *n, int64_t *shape) {
    if (!n || n->is_leaf) return -1;
    for (int d = 0; d < n->out_ndim; d++) shape[d] = n->out_shape[d];
    return n->out_ndim;
}

/* ---- Param: a leaf node that owns its value and gradient ---- */
static const fnn_op_def PARAM_DEF = {.info = {.name = "Param", .family = "autograd", .differentiable = 1, .has_cuda = 1}};

fnn_node *fnn_param_new(const fnn_tensor *value) {
    if (fnn_check_input("Param", value)) return NULL;
    fnn_node *n = node_alloc(0);
    if (!n) return NULL;
    n->op = &PARAM_DEF;
    n->is_leaf = 1;
    /* a Param owns a private contiguous copy: optimizers update it in place */
    if (fnn_materialize(&n->value, value)) { fnn_node_release(n); return NULL; }
    n->out_ndim = value->ndim;
    memcpy(n->out_shape, value->shape, sizeof(int64_t) * (size_t)value->ndim);
    return n;
}

int fnn_param_tensor(fnn_tensor *out, fnn_node *p) {
    FNN_TRY(fnn_tensor_ref(out, &p->value));
    if (!p->frozen) { out->node = p; fnn_node_retain(p); }
    return FNN_STATUS_OK;
}

int fnn_param_grad(fnn_tensor *out, fnn_node *p) {
    fnn_tensor_init(out);
    if (p->leaf_grad.ndim < 0) return FNN_STATUS_OK;
    return fnn_tensor_ref(out, &p->leaf_grad);
}

void fnn_param_zero_grad(fnn_node *p) { fnn_tensor_clear(&p->leaf_grad); }

int fnn_param_set(fnn_node *p, const fnn_tensor *value) {
    FNN_TRY(fnn_check_input("Param:set", value));
    FNN_CHECK(fnn_same_shape(value, &p->value), FNN_STATUS_SHAPE, "Param:set: new value %s, param is %s",
              fnn_shape_of(value).s, fnn_shape_of(&p->value).s);
    fnn_tensor fresh;
    FNN_TRY(fnn_materialize(&fresh, value));
    fnn_tensor_clear(&p->value);
    p->value = fresh;
    return FNN_STATUS_OK;
}

void fnn_param_set_frozen(fnn_node *p, int frozen) {
    p->frozen = frozen != 0;
    if (p->frozen) fnn_tensor_clear(&p->leaf_grad);
}
int fnn_param_frozen(fnn_node *p) { return p->frozen; }

int fnn_param_set_grad(fnn_node *p, const fnn_tensor *grad) {
    FNN_TRY(fnn_check_input("Param:set_grad", grad));
    FNN_CHECK(fnn_same_shape(grad, &p->value), FNN_STATUS_SHAPE, "Param:set_grad: gradient %s, param is %s",
              fnn_shape_of(grad).s, fnn_shape_of(&p->value).s);
    fnn_tensor fresh;
    FNN_TRY(fnn_materialize(&fresh, grad));
    fnn_tensor_clear(&p->leaf_grad);
    p->leaf_grad = fresh;
    return FNN_STATUS_OK;
}
