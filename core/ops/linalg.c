/* linalg.c: matmul (PyTorch rules: 1-D . 1-D dot, 1-D promoted to a row or
 * a column, batch dims broadcast), bmm, outer, and linear (x w^T + b as one
 * node).
 *
 * Every product goes through one engine, gemm_views(). Operands are strided
 * matrix views (mview) over a broadcast batch shape; a transpose is a swap of
 * the view's strides (no copy); a view BLAS can read (row- or column-major
 * with a valid leading dimension) goes to fnn_sgemm (blas.c) as is, transposed
 * for column-major, and only truly strided operands are copied. Batch dims
 * fold into one big sgemm where the strides allow it: into the rows of A
 * (x [B,T,F] @ w [F,G]) or into the inner dim (a weight gradient summed over
 * the batch). The gradient of a broadcast operand accumulates in place
 * (beta = 1) instead of materializing [B,...] and summing it afterwards.
 *
 * The engine is the same for every backend; each GEMM it asks for runs through the row of the
 * output's backend (linalg.h): the CPU's at the end of this file (blas.c), cuda/linalg.cu's on a
 * device (cuBLAS). linear's forward is one GEMM with its bias, handed to its row directly (the CPU
 * row fuses the bias through oneDNN where it can), and its activation option ({activation = 'relu' |
 * 'gelu'}, Keras's Dense(units, activation)) goes with it: relu inside oneDNN's kernel as a post-op,
 * gelu in a pass right after; the backward makes dz = g act'(.) and the bias gradient in one pass over
 * g, then the two GEMMs read dz. The formulas are the elementwise family's (its map row's codes). */
#include "linalg.h"
#include "elementwise.h"
#include "elementwise_ops.h"
#include <limits.h>
#include <string.h>

/* ================= matrix views ================= */

/* a batch of matrices: element (b..., i, j) at p + sum_d bs[d] * b[d] + i * s0 + j * s1 */
typedef struct {
    float *p;
    int64_t r, c, s0, s1;
    int64_t bs[FNN_MAX_DIMS];   /* over the broadcast batch shape; 0 where this operand broadcasts */
} mview;

/* how a tensor's trailing dims read as a matrix; its leading dims are its batch dims */
enum { AS_MATRIX, AS_ROW /* [..., k] as [..., 1, k] */, AS_COL /* [..., k] as [..., k, 1] */, AS_SCALAR /* [] as [1, 1] */ };

static int own_batch_dims(int ndim, int as) {
    return as == AS_MATRIX ? ndim - 2 : as == AS_SCALAR ? ndim : ndim - 1;
}

static void view_of(mview *v, const fnn_tensor *t, int as, int nb, const int64_t *bshape) {
    int nd = t->ndim;
    v->p = fnn_data(t);
    switch (as) {
    case AS_ROW: v->r = 1; v->c = t->shape[nd - 1]; v->s0 = v->c; v->s1 = t->stride[nd - 1]; break;
    case AS_COL: v->r = t->shape[nd - 1]; v->c = 1; v->s0 = t->stride[nd - 1]; v->s1 = 1; break;
    case AS_SCALAR: v->r = v->c = 1; v->s0 = v->s1 = 1; break;
    default:
        v->r = t->shape[nd - 2]; v->c = t->shape[nd - 1];
        v->s0 = t->stride[nd - 2]; v->s1 = t->stride[nd - 1];
    }
    int lead = nb - own_batch_dims(nd, as);
    for (int i = 0; i < nb; i++) {
        int j = i - lead;
        v->bs[i] = (j < 0 || (t->shape[j] == 1 && bshape[i] != 1)) ? 0 : t->stride[j];
    }
}

static void transpose(mview *v) {
    int64_t t = v->r; v->r = v->c; v->c = t;
    t = v->s0; v->s0 = v->s1; v->s1 = t;
}

static inline int64_t max1(int64_t x) { return x > 1 ? x : 1; }

/* can BLAS read one matrix of v as is? Row-major: NoTrans, ld = row stride; column-major:
 * Trans, ld = column stride. A single row or column may have any stride along its one line. */
static bool blas_layout(const mview *v, bool *trans, int64_t *ld) {
    if ((v->s1 == 1 || v->c <= 1) && (v->r <= 1 || v->s0 >= max1(v->c))) {
        *trans = false;
        *ld = v->r <= 1 ? max1(v->c) : v->s0;
        return *ld <= INT_MAX;
    }
    if ((v->s0 == 1 || v->r <= 1) && (v->c <= 1 || v->s1 >= max1(v->r))) {
        *trans = true;
        *ld = v->c <= 1 ? max1(v->r) : v->s1;
        return *ld <= INT_MAX;
    }
    return false;
}

/* fold the batch dims into the rows: possible when row (b..., i) advances by one stride */
static bool fold_rows(mview *out, const mview *v, int nb, const int64_t *bshape) {
    int64_t rows = v->r, s = v->r > 1 ? v->s0 : -1;   /* -1: not fixed yet (one row has no stride) */
    for (int i = nb - 1; i >= 0; i--) {
        if (bshape[i] == 1) continue;
        if (bshape[i] == 0) rows = 0;
        else if (s < 0) s = v->bs[i];
        else if (v->bs[i] != rows * s) return false;
        rows *= bshape[i];
    }
    *out = *v;
    out->r = rows;
    if (rows == 0) { out->s0 = max1(v->c); out->s1 = 1; }   /* empty: any valid layout */
    else if (s >= 0) out->s0 = s;
    return true;
}

/* a contiguous copy of t (no node), on any device (its strided_copy there) */
static int copy_contiguous(fnn_tensor *out, const fnn_tensor *t) { return fnn_materialize(out, t); }

/* view t (as `as`, transposed when trans) over the batch shape; copies t into *tmp only
 * when BLAS cannot read its matrices (clear *tmp after) */
static int operand(mview *v, const fnn_tensor *t, int as, bool trans, int nb, const int64_t *bshape,
                   fnn_tensor *tmp) {
    fnn_tensor_init(tmp);
    bool tr;
    int64_t ld;
    view_of(v, t, as, nb, bshape);
    if (trans) transpose(v);
    if (blas_layout(v, &tr, &ld)) return FNN_STATUS_OK;
    FNN_TRY(copy_contiguous(tmp, t));
    view_of(v, tmp, as, nb, bshape);
    if (trans) transpose(v);
    return FNN_STATUS_OK;
}

/* view t [..., c] as one matrix [rows, c] with the leading dims folded into the rows;
 * copies t into *tmp only when the strides do not allow it */
static int rows_operand(mview *v, const fnn_tensor *t, fnn_tensor *tmp) {
    fnn_tensor_init(tmp);
    for (int attempt = 0; attempt < 2; attempt++) {
        const fnn_tensor *s = attempt ? tmp : t;
        int as = s->ndim >= 2 ? AS_MATRIX : s->ndim == 1 ? AS_ROW : AS_SCALAR;
        int nb = own_batch_dims(s->ndim, as);
        mview full;
        bool tr;
        int64_t ld;
        view_of(&full, s, as, nb, s->shape);
        if (fold_rows(v, &full, nb, s->shape) && blas_layout(v, &tr, &ld)) return FNN_STATUS_OK;
        if (attempt == 0) FNN_TRY(copy_contiguous(tmp, t));
    }
    fnn_tensor_clear(tmp);
    return FNN_FAIL(FNN_STATUS_INTERNAL, "internal error: a contiguous copy is not BLAS-readable (please report)");
}

/* ================= the gemm engine ================= */

/* the kernel a product runs: its op's row (forward or backward) in the output's backend */
typedef struct {
    const char *op;
    fnn_mm_fn fn;
    int ordinal;
    unsigned exact;   /* fnn_mm_args' exact for its products */
} kernel;

/* the kernel of op's row on device; an error naming the device when that backend has none */
static int kernel_of(kernel *kn, const char *op, int device, bool backward) {
    const fnn_mm_row *row = fnn_linalg_row_for(device, op);
    *kn = (kernel){op, row ? (backward ? row->backward : row->forward) : NULL, fnn_device_ordinal(device), 0};
    if (kn->fn) return FNN_STATUS_OK;
    return FNN_ROW_REFUSED(op, device, backward);
}

/* the batched GEMM description (linalg.h), checked to fit BLAS's ints */
static int gemm_args(fnn_mm_args *g, const char *op, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                     const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb, int64_t sb, float beta,
                     float *c, int64_t ldc, int64_t sc, int64_t batch) {
    FNN_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX &&
              ldc <= INT_MAX && batch <= INT_MAX, FNN_STATUS_SHAPE,
              "%s: matrices of %lldx%lld by %lldx%lld are too large for BLAS", op,
              (long long)m, (long long)k, (long long)k, (long long)n);
    /* field by field: only what a plain GEMM's row reads (per-call cost on the CPU hot path) */
    g->op = op, g->zero = NULL, g->ta = ta, g->tb = tb, g->m = m, g->n = n, g->k = k;
    g->a = a, g->lda = lda, g->sa = sa, g->b = b, g->ldb = ldb, g->sb = sb, g->beta = beta;
    g->c = c, g->ldc = ldc, g->sc = sc, g->batch = batch, g->bias = NULL, g->db = NULL;
    g->act = FNN_ACT_NONE, g->y = NULL, g->dz = NULL, g->yh = NULL, g->exact = 0;
    return FNN_STATUS_OK;
}

/* row-major C[i] = op(A[i]) op(B[i]) + beta C[i] for i < batch, through the kernel */
static int gemm_call(const kernel *kn, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                     const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb, int64_t sb,
                     float beta, float *c, int64_t ldc, int64_t sc, int64_t batch) {
    fnn_mm_args g;
    FNN_TRY(gemm_args(&g, kn->op, ta, tb, m, n, k, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch));
    g.exact = kn->exact;
    return kn->fn(kn->ordinal, &g);
}

static int zero_fill(const kernel *kn, fnn_tensor *t) {
    int64_t n = fnn_tensor_numel(t);
    if (n == 0) return FNN_STATUS_OK;
    fnn_mm_args g = {.op = kn->op, .zero = fnn_data(t), .zero_n = n};
    return kn->fn(kn->ordinal, &g);
}

/* one gemm over whole 2-D views (no batch) */
static int gemm_2d(const kernel *kn, const mview *A, const mview *B, const mview *C, float beta) {
    bool ta, tb, tc;
    int64_t lda, ldb, ldc;
    FNN_ASSERT(blas_layout(A, &ta, &lda) && blas_layout(B, &tb, &ldb) && blas_layout(C, &tc, &ldc) && !tc);
    return gemm_call(kn, ta, tb, C->r, C->c, A->c, A->p, lda, 0, B->p, ldb, 0, beta, C->p, ldc, 0, 1);
}

/* C = A @ B over the batch shape. C is the fresh contiguous tensor ct seen through the view C;
 * where C's batch stride is 0 (the gradient of a broadcast operand) the products are summed.
 * A and B must be BLAS-readable. */
static int gemm_views(const kernel *kn, fnn_tensor *ct, int nb, const int64_t *bshape_in, mview *A, mview *B,
                      mview *C) {
    int64_t m = A->r, k = A->c, n = B->c, total = 1;
    FNN_ASSERT(B->r == k && C->r == m && C->c == n);
    /* drop size-1 batch dims: their strides do not matter */
    int nbk = 0;
    int64_t bshape[FNN_MAX_DIMS];
    bool accumulate = false, b_shared = true;
    for (int i = 0; i < nb; i++) {
        if (bshape_in[i] == 1) continue;
        bshape[nbk] = bshape_in[i];
        A->bs[nbk] = A->bs[i]; B->bs[nbk] = B->bs[i]; C->bs[nbk] = C->bs[i];
        accumulate = accumulate || C->bs[nbk] == 0;
        b_shared = b_shared && B->bs[nbk] == 0;
        total *= bshape_in[i];
        nbk++;
    }
    if (m == 0 || n == 0) return FNN_STATUS_OK;
    float beta = 0.0f;

    /* the whole product summed into one C: fold the batch into the inner dim, one gemm */
    if (accumulate && k > 0 && total > 0) {
        bool all = true;
        for (int i = 0; i < nbk; i++) all = all && C->bs[i] == 0;
        mview At, A2, B2;
        bool t;
        int64_t ld;
        At = *A;
        transpose(&At);
        if (all && fold_rows(&A2, &At, nbk, bshape) && fold_rows(&B2, B, nbk, bshape)) {
            transpose(&A2);
            if (blas_layout(&A2, &t, &ld) && blas_layout(&B2, &t, &ld)) return gemm_2d(kn, &A2, &B2, C, 0.0f);
        }
    }
    if (accumulate || k == 0 || total == 0) {
        FNN_TRY(zero_fill(kn, ct));
        beta = 1.0f;
    }
    if (k == 0 || total == 0) return FNN_STATUS_OK;

    /* B shared by the whole batch: fold the batch into the rows of A and C, one gemm */
    if (b_shared && !accumulate && nbk > 0) {
        mview A2, C2;
        bool t;
        int64_t ld;
        if (fold_rows(&A2, A, nbk, bshape) && fold_rows(&C2, C, nbk, bshape) && blas_layout(&A2, &t, &ld))
            return gemm_2d(kn, &A2, B, &C2, beta);
    }

    /* general: loop the outer batch dims, one batched call over the last */
    bool ta, tb, tc;
    int64_t lda, ldb, ldc;
    FNN_ASSERT(blas_layout(A, &ta, &lda) && blas_layout(B, &tb, &ldb) && blas_layout(C, &tc, &ldc) && !tc);
    if (nbk == 0)
        return gemm_call(kn, ta, tb, m, n, k, A->p, lda, 0, B->p, ldb, 0, beta, C->p, ldc, 0, 1);
    int last = nbk - 1;
    int64_t idx[FNN_MAX_DIMS] = {0}, outer = total / bshape[last];
    for (int64_t o = 0; o < outer; o++) {
        int64_t oa = 0, ob = 0, oc = 0;
        for (int d = 0; d < last; d++) { oa += idx[d] * A->bs[d]; ob += idx[d] * B->bs[d]; oc += idx[d] * C->bs[d]; }
        FNN_TRY(gemm_call(kn, ta, tb, m, n, k, A->p + oa, lda, A->bs[last], B->p + ob, ldb, B->bs[last],
                          beta, C->p + oc, ldc, C->bs[last], bshape[last]));
        for (int d = last - 1; d >= 0; d--) { if (++idx[d] < bshape[d]) break; idx[d] = 0; }
    }
    return FNN_STATUS_OK;
}

/* c (fresh, contiguous, read as as_c) = x (as_x, transposed when tx) @ y (as_y, ty) over the batch shape */
static int product(const kernel *kn, fnn_tensor *c, int as_c, const fnn_tensor *x, int as_x, bool tx,
                   const fnn_tensor *y, int as_y, bool ty, int nb, const int64_t *bshape) {
    mview A, B, C;
    fnn_tensor tx_copy, ty_copy;
    fnn_tensor_init(&ty_copy);
    int rc = operand(&A, x, as_x, tx, nb, bshape, &tx_copy);
    if (!rc) rc = operand(&B, y, as_y, ty, nb, bshape, &ty_copy);
    if (!rc) {
        view_of(&C, c, as_c, nb, bshape);
        rc = gemm_views(kn, c, nb, bshape, &A, &B, &C);
    }
    fnn_tensor_clear(&tx_copy);
    fnn_tensor_clear(&ty_copy);
    return rc;
}

/* ================= matmul, bmm, outer ================= */

/* how a product reads its operands and output: a [..., n, k] @ b [..., k, m] -> [batch..., n, m] */
typedef struct {
    int as_a, as_b, as_out;
    int nb;
    int64_t bshape[FNN_MAX_DIMS];
    int out_ndim;
    int64_t out_shape[FNN_MAX_DIMS];
} mm_plan;

static int plan(const char *op, mm_plan *p, const fnn_tensor *a, int as_a, const fnn_tensor *b, int as_b) {
    p->as_a = as_a;
    p->as_b = as_b;
    p->as_out = as_a == AS_MATRIX ? (as_b == AS_MATRIX ? AS_MATRIX : AS_COL)
                                  : (as_b == AS_MATRIX ? AS_ROW : AS_SCALAR);
    if (as_a == AS_COL && as_b == AS_ROW) p->as_out = AS_MATRIX;   /* outer */
    int64_t ka = as_a == AS_COL ? 1 : a->shape[a->ndim - 1];
    int64_t kb = as_b == AS_ROW ? 1 : b->shape[b->ndim - (as_b == AS_MATRIX ? 2 : 1)];
    FNN_CHECK(ka == kb, FNN_STATUS_SHAPE, "%s: shapes %s and %s do not agree", op, fnn_shape_of(a).s,
              fnn_shape_of(b).s);
    int na = own_batch_dims(a->ndim, as_a), nbb = own_batch_dims(b->ndim, as_b);
    if (fnn_broadcast_shapes(op, na, a->shape, nbb, b->shape, &p->nb, p->bshape))
        return FNN_FAIL(FNN_STATUS_SHAPE, "%s: batch dims of %s and %s do not broadcast", op, fnn_shape_of(a).s,
                        fnn_shape_of(b).s);
    p->out_ndim = p->nb;
    memcpy(p->out_shape, p->bshape, sizeof(int64_t) * (size_t)p->nb);
    if (as_a == AS_MATRIX) p->out_shape[p->out_ndim++] = a->shape[a->ndim - 2];
    if (as_a == AS_COL) p->out_shape[p->out_ndim++] = a->shape[a->ndim - 1];
    if (as_b == AS_MATRIX || as_b == AS_ROW) p->out_shape[p->out_ndim++] = b->shape[b->ndim - 1];
    return FNN_STATUS_OK;
}

/* a product's node (matmul, bmm, outer): how each operand was seen (AS_*) */
typedef struct { int as_a, as_b; } mm_attrs;

/* backward of every product: da = g b^T, db = a^T g, each summed over the batch dims its
 * operand was broadcast along (the engine accumulates there) */
static int mm_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const char *op = n->op->info.name;
    const fnn_tensor *a = &n->saved[0], *b = &n->saved[1];
    const mm_attrs *at = FNN_ATTRS(n, mm_attrs);
    mm_plan p;
    kernel kn;
    FNN_TRY(plan(op, &p, a, at->as_a, b, at->as_b));
    FNN_TRY(kernel_of(&kn, op, g->device, true));
    /* a bfloat16 a or b (saved as given) widened, exactly, where a product reads it: da = g b^T (b second),
     * db = a^T g (a first), each flagged exact there (the float32 GEMMs of the widened composition) */
    fnn_tensor aw, bw;
    fnn_tensor_init(&aw);
    fnn_tensor_init(&bw);
    kernel kda = kn, kdb = kn;
    int rc = FNN_STATUS_OK;
    if (n->next[0] && fnn_is_bf16(b)) rc = fnn_cast(&bw, b, FNN_DTYPE_FLOAT32), b = &bw, kda.exact = 2u;
    if (!rc && n->next[1] && fnn_is_bf16(a)) rc = fnn_cast(&aw, a, FNN_DTYPE_FLOAT32), a = &aw, kdb.exact = 1u;
    fnn_set_op(op);   /* the casts named themselves */
    if (!rc && n->next[0]) {
        rc = fnn_new_output(&din[0], a->device, a->ndim, a->shape);
        if (!rc) rc = product(&kda, &din[0], p.as_a, g, p.as_out, false, b, p.as_b, true, p.nb, p.bshape);
    }
    if (!rc && n->next[1]) {
        rc = fnn_new_output(&din[1], b->device, b->ndim, b->shape);
        if (!rc) rc = product(&kdb, &din[1], p.as_b, a, p.as_a, true, g, p.as_out, false, p.nb, p.bshape);
    }
    fnn_tensor_clear(&aw);
    fnn_tensor_clear(&bw);
    if (rc) for (int i = 0; i < 2; i++) fnn_tensor_clear(&din[i]);
    return rc;
}

static const fnn_op_def MATMUL = {.info = {.name = "matmul", .family = "linalg", .differentiable = 1},
    .backward = mm_rule};
static const fnn_op_def BMM = {.info = {.name = "bmm", .family = "linalg", .differentiable = 1}, .backward = mm_rule};
static const fnn_op_def OUTER = {.info = {.name = "outer", .family = "linalg", .differentiable = 1},
    .backward = mm_rule};

/* out (bfloat16, contiguous) = y (float32, contiguous, out's shape) rounded, by the row (its yh): the CPU's,
 * since only the CPU takes or makes bfloat16 here */
static int round_into(const kernel *kn, const fnn_tensor *y, fnn_tensor *out) {
    const int64_t n = fnn_tensor_numel(y);
    if (n == 0) return FNN_STATUS_OK;
    fnn_mm_args g = {.op = kn->op, .m = 1, .n = n, .c = fnn_data(y), .ldc = n, .yh = fnn_bytes(out)};
    return kn->fn(kn->ordinal, &g);
}

/* forward of every product: out [batch..., n?, m?] = a @ b, one node saving a and b (as given: a bfloat16
 * operand's half the bytes, widened again by the rule) */
static int mm_forward(const fnn_op_def *def, fnn_tensor *out, const fnn_tensor *a, int as_a, const fnn_tensor *b,
                      int as_b) {
    const char *op = def->info.name;
    mm_plan p;
    kernel kn;
    FNN_TRY(plan(op, &p, a, as_a, b, as_b));
    FNN_TRY(kernel_of(&kn, op, a->device, false));
    /* bfloat16 out by precision.lua's rule (linear's): inside an autocast region not held, or when both
     * operands are bfloat16; float32 otherwise. The products are the float32 op's on the widened operands
     * (flagged exact: fnn_gemm_prec_exact rounds no copy of them under bf16 precision or autocast), into a
     * float32 scratch the row then rounds into out */
    const bool narrow = fnn_in_host_memory(a) && ((fnn_is_bf16(a) && fnn_is_bf16(b)) || fnn_autocast_on());
    FNN_TRY(fnn_new_output_dtype(out, a->device, narrow ? FNN_DTYPE_BFLOAT16 : FNN_DTYPE_FLOAT32, p.out_ndim,
                                 p.out_shape));
    fnn_tensor aw, bw, y32;
    fnn_tensor_init(&aw);
    fnn_tensor_init(&bw);
    fnn_tensor_init(&y32);
    const fnn_tensor *af = a, *bf = b;
    int rc = FNN_STATUS_OK;
    if (fnn_is_bf16(a)) rc = fnn_cast(&aw, a, FNN_DTYPE_FLOAT32), af = &aw, kn.exact |= 1u;
    if (!rc && fnn_is_bf16(b)) rc = fnn_cast(&bw, b, FNN_DTYPE_FLOAT32), bf = &bw, kn.exact |= 2u;
    if (!rc && narrow) rc = fnn_new_output(&y32, a->device, p.out_ndim, p.out_shape);
    fnn_set_op(op);   /* the casts named themselves: the errors after are the product's */
    if (!rc) rc = product(&kn, narrow ? &y32 : out, p.as_out, af, as_a, false, bf, as_b, false, p.nb, p.bshape);
    if (!rc && narrow) rc = round_into(&kn, &y32, out);
    fnn_tensor_clear(&aw);
    fnn_tensor_clear(&bw);
    fnn_tensor_clear(&y32);
    if (rc) { fnn_tensor_clear(out); return rc; }
    const fnn_tensor *ins[2] = {a, b};
    if (!fnn_needs_node(2, ins)) return FNN_STATUS_OK;
    fnn_node *n = fnn_attach_node(out, def, 2, ins);
    if (!n || fnn_save(n, 0, a) || fnn_save(n, 1, b)) { fnn_tensor_clear(out); return fnn_last_status(); }
    *FNN_ATTRS(n, mm_attrs) = (mm_attrs){.as_a = as_a, .as_b = as_b};
    return FNN_STATUS_OK;
}

static int check_pair(const char *op, const fnn_tensor *a, const fnn_tensor *b) {
    FNN_TRY(fnn_check_float_or_host_bf16(op, a, "argument 1"));
    FNN_TRY(fnn_check_float_or_host_bf16(op, b, "argument 2"));
    return fnn_check_same_device(op, a, b);
}

/* a [..., n, k] @ b [..., k, m] -> [batch..., n, m]; a 1-D a is a row [1, k] and a 1-D b a
 * column [k, 1], their added dim removed from the result; 1-D . 1-D is the dot product [] */
int fnn_matmul(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) {
    FNN_TRY(check_pair("matmul", a, b));
    FNN_CHECK(a->ndim >= 1 && b->ndim >= 1, FNN_STATUS_SHAPE,
              "matmul: shapes %s and %s: both need at least 1 dim", fnn_shape_of(a).s, fnn_shape_of(b).s);
    return mm_forward(&MATMUL, out, a, a->ndim == 1 ? AS_ROW : AS_MATRIX, b, b->ndim == 1 ? AS_COL : AS_MATRIX);
}

/* a [B, n, k] @ b [B, k, m] -> [B, n, m], no broadcasting */
int fnn_bmm(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) {
    FNN_TRY(check_pair("bmm", a, b));
    FNN_CHECK(a->ndim == 3 && b->ndim == 3 && a->shape[0] == b->shape[0] && a->shape[2] == b->shape[1],
              FNN_STATUS_SHAPE, "bmm: shapes %s and %s do not agree (expected [B,n,k] and [B,k,m])",
              fnn_shape_of(a).s, fnn_shape_of(b).s);
    return mm_forward(&BMM, out, a, AS_MATRIX, b, AS_MATRIX);
}

/* a [n] x b [m] -> [n, m]: a column times a row, k = 1 */
int fnn_outer(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b) {
    FNN_TRY(check_pair("outer", a, b));
    FNN_CHECK(a->ndim == 1 && b->ndim == 1, FNN_STATUS_SHAPE, "outer: shapes %s and %s: expected two 1-D tensors",
              fnn_shape_of(a).s, fnn_shape_of(b).s);
    return mm_forward(&OUTER, out, a, AS_COL, b, AS_ROW);
}

/* ================= linear: x [..., in] w^T [in, out] + b [out] -> [..., out] ================= */

/* linear's node: its activation (FNN_ACT_*) and x_rounded, whether saved[0] is x rounded to bf16 values
 * (autocast off the bf16 units), which the rule's dW takes as exact (the node is autocast's, so its
 * backward runs in bf16 precision too); saved: x, w, and what the activation's gradient reads (relu: the
 * output y; gelu: the pre-activation z) */
typedef struct { int act, x_rounded; } linear_attrs;

/* backward: dx = g w (sgemm), dw = g^T x (one sgemm over the flattened batch), db = column sums of g;
 * with an activation, G is dz = g act'(.) first, made with db in one pass by the row */
static int linear_rule(fnn_node *n, const fnn_tensor *g, fnn_tensor *din) {
    const fnn_tensor *x = &n->saved[0], *w = &n->saved[1];
    const int act = FNN_ATTRS(n, linear_attrs)->act;
    fnn_tensor gtmp, xtmp, ctmp, dz, xw, ww, grd;
    mview G, G0, X, W, C;   /* G0: G before it is rounded (the bias gradient sums the gradient itself) */
    kernel kn;
    FNN_TRY(kernel_of(&kn, "linear", g->device, true));
    fnn_tensor_init(&gtmp);
    fnn_tensor_init(&xtmp);
    fnn_tensor_init(&ctmp);
    fnn_tensor_init(&dz);
    fnn_tensor_init(&xw);
    fnn_tensor_init(&ww);
    fnn_tensor_init(&grd);
    /* a bfloat16 x or w (saved as given) widened, exactly: the float32 GEMMs of the widened composition */
    int rc = FNN_STATUS_OK;
    kernel kdx = kn, kdw = kn;   /* dx = G W, dw = G^T X: W, X the second operands, exact when widened */
    if (fnn_is_bf16(w) && n->next[0]) rc = fnn_cast(&ww, w, FNN_DTYPE_FLOAT32), w = &ww, kdx.exact = 2u;
    if (!rc && fnn_is_bf16(x) && n->next[1]) rc = fnn_cast(&xw, x, FNN_DTYPE_FLOAT32), x = &xw, kdw.exact = 2u;
    if (FNN_ATTRS(n, linear_attrs)->x_rounded) kdw.exact = 2u;
    if (!rc) rc = rows_operand(&G, g, &gtmp);          /* G [M, out] */
    if (!rc && act) {                                  /* dz [M, out] (and db), then G = dz */
        int64_t shape[2] = {G.r, w->shape[0]};
        rc = fnn_new_output(&dz, g->device, 2, shape);
        if (!rc) {
            fnn_mm_args a = {.op = "linear", .m = shape[0], .n = shape[1], .act = act, .saved = fnn_data(&n->saved[2]),
                             .dz = &dz, .db = n->next[2] ? &din[2] : NULL, .g = g, .gp = G.p, .g_s0 = G.s0,
                             .g_s1 = G.s1};
            rc = kn.fn(kn.ordinal, &a);
        }
        fnn_tensor_clear(&gtmp);
        if (!rc) rc = rows_operand(&G, &dz, &gtmp);    /* dense: never copied */
    }
    G0 = G;
    /* under bf16 precision (autocast) both products would round G into a copy of their own: rounded once
     * here instead (the same values, fnn_round_bf16_matrix as theirs) and flagged exact to both. Not where
     * oneDNN's bf16 matmul converts the operands itself (bf16 units), nor off the host */
    if (!rc && n->next[0] && n->next[1] && G.r > 0 && G.c > 0 && (G.s1 == 1 || G.c == 1) &&
        fnn_in_host_memory(g) && fnn_prec_bf16(FNN_PREC_MATMUL) && !fnn_bf16_native()) {
        int64_t shape[2] = {G.r, G.c};
        rc = fnn_new_output(&grd, g->device, 2, shape);
        if (!rc) {
            fnn_round_bf16_matrix(fnn_data(&grd), G.p, G.r, G.c, G.r > 1 ? G.s0 : G.c);
            G.p = fnn_data(&grd), G.s0 = G.c, G.s1 = 1;
            kdx.exact |= 1u, kdw.exact |= 1u;   /* G (and G^T) is the first operand of both */
        }
    }
    if (!rc && n->next[0]) {                           /* dx [M, in] = G [M, out] @ W [out, in] */
        view_of(&W, w, AS_MATRIX, 0, NULL);
        rc = fnn_new_output(&din[0], x->device, x->ndim, x->shape);
        if (!rc) rc = rows_operand(&C, &din[0], &ctmp);  /* fresh and contiguous: never copied */
        if (!rc) rc = gemm_views(&kdx, &din[0], 0, NULL, &G, &W, &C);
    }
    if (!rc && n->next[1]) {                           /* dw [out, in] = G^T [out, M] @ X [M, in] */
        rc = rows_operand(&X, x, &xtmp);
        if (!rc) rc = fnn_new_output(&din[1], w->device, 2, w->shape);
        if (!rc) {
            mview Gt = G;
            transpose(&Gt);
            view_of(&C, &din[1], AS_MATRIX, 0, NULL);
            rc = gemm_views(&kdw, &din[1], 0, NULL, &Gt, &X, &C);
        }
    }
    if (!rc && n->next[2] && !act) {                   /* db [out] = sum over the rows of G, made by the row */
        fnn_mm_args a = {.op = "linear", .m = G0.r, .n = w->shape[0], .db = &din[2], .g = g, .gp = G0.p, .g_s0 = G0.s0,
                         .g_s1 = G0.s1};
        rc = kn.fn(kn.ordinal, &a);
    }
    fnn_tensor_clear(&gtmp);
    fnn_tensor_clear(&xtmp);
    fnn_tensor_clear(&ctmp);
    fnn_tensor_clear(&dz);
    fnn_tensor_clear(&xw);
    fnn_tensor_clear(&ww);
    fnn_tensor_clear(&grd);
    if (rc) for (int i = 0; i < 3; i++) fnn_tensor_clear(&din[i]);
    return rc;
}
static const fnn_op_def LINEAR = {.info = {.name = "linear", .family = "linalg", .differentiable = 1},
    .backward = linear_rule};

/* fnn_node_attr's reader: a linear node's activation (FNN_ACT_*: 0 none, 1 relu, 2 gelu), for fnn.onnx */
int fnn_linalg_attr(const fnn_node *n, const char *name, double *value) {
    FNN_CHECK(n->op == &LINEAR && !strcmp(name, "activation"), FNN_STATUS_ARG,
              "node_attr: %s has %s, not '%s'", n->op->info.name, n->op == &LINEAR ? "activation" : "no numbers", name);
    *value = FNN_ATTRS((fnn_node *)n, linear_attrs)->act;
    return FNN_STATUS_OK;
}

/* the activation's code by its name: NULL is none */
static int activation_of(const char *name, int *act) {
    *act = FNN_ACT_NONE;
    if (!name) return FNN_STATUS_OK;
    if (!strcmp(name, "relu")) *act = FNN_ACT_RELU;
    else if (!strcmp(name, "gelu")) *act = FNN_ACT_GELU;
    else return FNN_FAIL(FNN_STATUS_ARG, "linear: activation '%s' is not one of 'relu', 'gelu'", name);
    return FNN_STATUS_OK;
}

int fnn_linear(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b) {
    return fnn_linear_to(out, x, w, b, NULL, -1);
}

int fnn_linear_act(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b,
                   const char *activation) {
    return fnn_linear_to(out, x, w, b, activation, -1);
}

int fnn_linear_to(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b,
                  const char *activation, int dtype) {
    int act;
    FNN_TRY(activation_of(activation, &act));
    FNN_CHECK(dtype == -1 || dtype == FNN_DTYPE_FLOAT32 || dtype == FNN_DTYPE_BFLOAT16, FNN_STATUS_ARG,
              "linear: output dtype code %d is not float32 (%d), bfloat16 (%d) or -1 (the rule)", dtype,
              FNN_DTYPE_FLOAT32, FNN_DTYPE_BFLOAT16);
    FNN_TRY(fnn_check_float_or_host_bf16("linear", x, "input"));
    FNN_TRY(fnn_check_float_or_host_bf16("linear", w, "weight"));
    FNN_TRY(fnn_check_same_device("linear", x, w));
    if (b) {
        FNN_TRY(fnn_check_float_or_host_bf16("linear", b, "bias"));
        FNN_TRY(fnn_check_same_device("linear", x, b));
    }
    FNN_CHECK(w->ndim == 2, FNN_STATUS_SHAPE, "linear: weight %s must be 2-D [out, in]", fnn_shape_of(w).s);
    FNN_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] == w->shape[1], FNN_STATUS_SHAPE,
              "linear: input %s and weight %s do not agree (the input's last dim must be %lld)",
              fnn_shape_of(x).s, fnn_shape_of(w).s, (long long)w->shape[1]);
    FNN_CHECK(!b || (b->ndim == 1 && b->shape[0] == w->shape[0]), FNN_STATUS_SHAPE,
              "linear: bias %s does not match weight %s (expected [%lld])", b ? fnn_shape_of(b).s : "",
              fnn_shape_of(w).s, (long long)w->shape[0]);
    const fnn_mm_row *row = fnn_linalg_row_for(x->device, "linear");
    if (!row || !row->forward) {
        kernel kn;
        return kernel_of(&kn, "linear", x->device, false);
    }
    int64_t shape[FNN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = w->shape[0];
    /* bfloat16 out (precision.lua's rule, so the wrapper's numbers): inside an autocast region (a GEMM-bound
     * op there returns bfloat16), or when every float input is bfloat16 (promotion); float32 otherwise.
     * The products are the float32 op's on the widened operands (fnn_gemm_prec rounds them under bf16
     * precision or autocast), and the row rounds its float32 result into out (a.yh) */
    const bool all_bf16 = fnn_is_bf16(x) && fnn_is_bf16(w) && (!b || fnn_is_bf16(b));
    const bool narrow = dtype == -1 ? fnn_in_host_memory(x) && (all_bf16 || fnn_autocast_on())
                                    : dtype == FNN_DTYPE_BFLOAT16;
    if (narrow && !fnn_in_host_memory(x)) {
        char dev[32];
        return FNN_FAIL(FNN_STATUS_ARG, "linear: the %s backend makes a float32 output only, not bfloat16",
                        fnn_device_name(x->device, dev, sizeof dev));
    }
    FNN_TRY(fnn_new_output_dtype(out, x->device, narrow ? FNN_DTYPE_BFLOAT16 : FNN_DTYPE_FLOAT32, x->ndim, shape));
    const fnn_tensor *ins[3] = {x, w, b};
    const bool node = fnn_needs_node(3, ins);

    mview X, Wt, C;
    fnn_tensor xtmp, wtmp, ctmp, z, xw, ww, bw, y32;
    fnn_tensor_init(&xtmp);
    fnn_tensor_init(&wtmp);
    fnn_tensor_init(&ctmp);
    fnn_tensor_init(&z);
    fnn_tensor_init(&xw);
    fnn_tensor_init(&ww);
    fnn_tensor_init(&bw);
    fnn_tensor_init(&y32);
    /* gelu's gradient reads z = x w^T + b: kept beside y when a gradient may be asked for (relu's reads y) */
    const bool keep_z = act == FNN_ACT_GELU && node;
    int rc = keep_z ? fnn_new_output(&z, x->device, x->ndim, shape) : FNN_STATUS_OK;
    /* bfloat16 operands widened (exact, and flagged so: fnn_gemm_prec_exact uses them without a scan or a copy),
     * and the float32 result the row rounds into out (relu's gradient reads it, as it read the float32 y) */
    const fnn_tensor *xf = x, *wf = w, *bf = b;
    if (!rc && fnn_is_bf16(x)) rc = fnn_cast(&xw, x, FNN_DTYPE_FLOAT32), xf = &xw;
    /* inside autocast off the bf16 units a float32 x is rounded once, here: the product takes the copy as
     * exact, and the node saves it for dW in place of x (the same bytes; x itself may be freed), where the
     * rule would round x a second time */
    const bool round_x = !rc && node && fnn_autocast_depth() > 0 && !fnn_is_bf16(x) && fnn_in_host_memory(x) &&
                         !fnn_bf16_native() && fnn_tensor_numel(x) > 0;
    if (round_x) {
        const float *src = fnn_contiguous_data(x, &xtmp, &rc);
        if (!rc) rc = fnn_new_output(&xw, x->device, x->ndim, x->shape);
        if (!rc) fnn_round_bf16_matrix(fnn_data(&xw), src, 1, fnn_tensor_numel(x), fnn_tensor_numel(x));
        fnn_tensor_clear(&xtmp);
        xf = &xw;
    }
    if (!rc && fnn_is_bf16(w)) rc = fnn_cast(&ww, w, FNN_DTYPE_FLOAT32), wf = &ww;
    if (!rc && b && fnn_is_bf16(b)) rc = fnn_cast(&bw, b, FNN_DTYPE_FLOAT32), bf = &bw;
    if (!rc && narrow) rc = fnn_new_output(&y32, x->device, x->ndim, shape);
    fnn_set_op("linear");   /* the casts named themselves: the errors after are linear's */
    if (!rc) rc = rows_operand(&X, xf, &xtmp);                       /* X [M, in] */
    if (!rc) rc = operand(&Wt, wf, AS_MATRIX, true, 0, NULL, &wtmp); /* W^T [in, out]: CblasTrans, no copy */
    if (!rc) rc = rows_operand(&C, narrow ? &y32 : out, &ctmp);      /* C [M, out] */
    if (!rc && C.r > 0 && C.c > 0) {
        /* one GEMM, C = X W^T (+ b), the bias added by the row; an empty inner dim: C zeroed (+ b).
         * With an activation C is z (a buffer of its own when kept, else y itself) and y = act(z) */
        bool ta, tb, tc;
        int64_t lda, ldb, ldc;
        FNN_ASSERT(blas_layout(&X, &ta, &lda) && blas_layout(&Wt, &tb, &ldb) && blas_layout(&C, &tc, &ldc) && !tc);
        float *pre = keep_z ? fnn_data(&z) : C.p;   /* z is dense as out: the same ldc */
        fnn_mm_args a;
        rc = gemm_args(&a, "linear", ta, tb, C.r, C.c, X.c, X.p, lda, 0, Wt.p, ldb, 0, 0.0f, pre, ldc, 0,
                       X.c > 0 ? 1 : 0);
        if (!rc) {
            if (X.c == 0) a.zero = pre, a.zero_n = C.r * C.c;
            if (bf) a.bias = fnn_data(bf), a.bias_stride = bf->stride[0];
            if (act) a.act = act, a.y = C.p;
            if (narrow) a.yh = fnn_bytes(out);
            a.exact = (fnn_is_bf16(x) || round_x ? 1u : 0u) | (fnn_is_bf16(w) ? 2u : 0u);   /* widened or rounded */
            rc = row->forward(fnn_device_ordinal(x->device), &a);
        }
    }
    fnn_tensor_clear(&xtmp);
    fnn_tensor_clear(&wtmp);
    fnn_tensor_clear(&ctmp);
    fnn_tensor_clear(&ww);
    fnn_tensor_clear(&bw);
    if (rc || !node) {
        fnn_tensor_clear(&xw);
        fnn_tensor_clear(&z);
        fnn_tensor_clear(&y32);
        if (rc) fnn_tensor_clear(out);
        return rc;
    }

    /* x and w saved as given (a bfloat16 x: half the bytes), widened again by the rule; or x's rounded copy */
    fnn_node *n = fnn_attach_node(out, &LINEAR, 3, ins);
    if (!n || fnn_save(n, 0, round_x ? &xw : x) || fnn_save(n, 1, w) ||
        (act == FNN_ACT_RELU && fnn_save(n, 2, narrow ? &y32 : out)) || (keep_z && fnn_save(n, 2, &z))) {
        fnn_tensor_clear(&xw);
        fnn_tensor_clear(&z);
        fnn_tensor_clear(&y32);
        fnn_tensor_clear(out);
        return fnn_last_status();
    }
    FNN_ATTRS(n, linear_attrs)->act = act;
    FNN_ATTRS(n, linear_attrs)->x_rounded = round_x;
    fnn_tensor_clear(&xw);
    fnn_tensor_clear(&z);
    fnn_tensor_clear(&y32);
    return FNN_STATUS_OK;
}

/* ================= the CPU rows (blas.c) ================= */

/* linear's float32 result y [m, n] (at ldc) rounded into its bfloat16 output, when it has one: one pass
 * over the threads (the GEMM writes whole C; a GEMM per block of rows would repack W for each). matmul,
 * bmm and outer round their whole scratch in a call of its own (round_into: the engine may have run the
 * products as several batched calls) */
static int narrow_output(const fnn_mm_args *a, const float *y) {
    if (a->yh && a->m > 0 && a->n > 0) fnn_to_bf16_matrix(a->yh, y, a->m, a->n, a->ldc);
    return FNN_STATUS_OK;
}

/* zero, then the batched GEMM as a loop of fnn_sgemm (each threaded by the BLAS library) */
/* A times a transposed B (x:matmul(w:t()), a linear's forward written out) runs in oneDNN's matmul
 * primitive: dnnl_sgemm packs a transposed B at a third of the product's time (char_gpt's qkv shape,
 * 2048 x 128 x 384: 1.04 against 0.65 ms at 2 threads, Emerald Rapids), the primitive reads it as it is.
 * The other layouts stay with the GEMM, which is as fast or faster there (the backward's dx and dW) */
static int cpu_gemm(int ordinal, const fnn_mm_args *a) {
    (void)ordinal;
    if (a->zero) memset(a->zero, 0, sizeof(float) * (size_t)a->zero_n);
    for (int64_t i = 0; i < a->batch; i++) {
        const float *ai = a->a + i * a->sa, *bi = a->b + i * a->sb;
        float *ci = a->c + i * a->sc;
        if (a->tb && !a->ta && fnn_gemm_fused_prec(FNN_PREC_MATMUL, a->exact, false, true, a->m, a->n, a->k, ai,
                                                    a->lda, bi, a->ldb, NULL, a->beta, ci, a->ldc))
            continue;
        fnn_gemm_prec_exact(FNN_PREC_MATMUL, a->exact, a->ta, a->tb, a->m, a->n, a->k, 1.0f, ai, a->lda, bi, a->ldb,
                            a->beta, ci, a->ldc);
    }
    return narrow_output(a, a->c);   /* matmul's bfloat16 output: a call of its own (batch 0) */
}

/* ---- linear's activation on the CPU: passes over blocks of rows, each step of a block done while
 * it is in cache, through the elementwise family's CPU map row (its vectorized formulas) ---- */
/* a block of the passes: about 32 KB of each matrix it reads or writes */
enum { ACT_BLOCK = 8192, DB_PARTS = 32 };
static int64_t block_rows(int64_t n) { return max1(ACT_BLOCK / max1(n)); }

/* y [rows, n] (dense) = the formula `code` of x0 (at strides s0, s1) and x1 (dense), by the map row */
static void map_block(const fnn_map_row *map, int code, float *y, const float *x0, int64_t s0, int64_t s1,
                      const float *x1, int64_t rows, int64_t n) {
    int64_t shape[FNN_MAX_DIMS] = {rows, n}, st[3][FNN_MAX_DIMS] = {{s0, s1}, {n, 1}, {s0, s1}};
    fnn_map_args m = {.dtype = FNN_DTYPE_FLOAT32, .code = code, .nin = 2, .y = y, .x = {x0, x1, x0},
                      .stride = &st[0][0], .ndim = 2, .shape = shape};
    map->run(0, &m);   /* the CPU's row: float32 never fails; one block is below the parallel threshold */
}

static const fnn_map_row *cpu_map_row(void) {
    static fnn_row_cache cache;
    return fnn_row_cached(&cache, FNN_DEVICE_CPU, "elementwise", "map");
}

typedef struct {
    const fnn_map_row *map;
    int code;                   /* the activation's forward formula */
    float *z, *y;               /* dense [m, n]; y == z: in place */
    const float *bias;          /* added to z first (the GEMM left it out); NULL: in z already */
    int64_t bias_stride, m, n, rows;
    uint16_t *yh;               /* y rounded into it, block by block (linear's bfloat16 output); NULL: none */
} act_fwd;

static void act_fwd_blocks(void *ctx, int64_t lo, int64_t hi) {
    const act_fwd *p = ctx;
    const int64_t n = p->n;
    for (int64_t blk = lo; blk < hi; blk++) {
        int64_t r0 = blk * p->rows, r1 = r0 + p->rows < p->m ? r0 + p->rows : p->m;
        float *z = p->z + r0 * n;
        if (p->bias)
            for (int64_t i = 0; i < r1 - r0; i++) {
                float *zi = z + i * n;
                if (p->bias_stride == 1) for (int64_t j = 0; j < n; j++) zi[j] += p->bias[j];
                else for (int64_t j = 0; j < n; j++) zi[j] += p->bias[j * p->bias_stride];
            }
        map_block(p->map, p->code, p->y + r0 * n, z, n, 1, z, r1 - r0, n);
        if (p->yh) fnn_bf16_narrow_run(p->yh + r0 * n, p->y + r0 * n, (r1 - r0) * n);   /* while in cache */
    }
}

/* linear with an activation: z = X W^T + b in C, y = act(z). relu with y in place of z goes inside
 * oneDNN's kernel (bias and relu as the primitive's post-ops); gelu keeps z for its gradient, and no
 * post-op can write z and y both, so the GEMM (bias inside) writes z and one pass makes y (measured at
 * char_gpt's fc1, [2048,128] x [512,128]^T, one thread: a GEMM per block of 64 or 256 rows with gelu
 * right after it, while the block is in cache, ran 2-5% slower: each block repacks W and loses the
 * primitive's bias, and gelu's erf is compute-bound at ~1.4 ns an element, not memory-bound). Otherwise
 * (the portable kernels, a small or refused product) the GEMM, then one pass adds the bias and
 * applies the activation block by block. */
static int cpu_linear_act(const fnn_mm_args *a) {
    const bool w_rows = a->tb || (a->n == 1 && a->ldb == 1);   /* as cpu_linear */
    bool in_kernel = false;                                      /* the bias went in inside the GEMM */
    if (a->batch && !a->ta && w_rows && (!a->bias || a->bias_stride == 1)) {
        const int post = a->act == FNN_ACT_RELU && a->y == a->c ? FNN_ACT_RELU : FNN_ACT_NONE;
        in_kernel = fnn_gemm_fused_act_prec(FNN_PREC_MATMUL, post, a->exact, false, true, a->m, a->n, a->k, a->a,
                                            a->lda, a->b, a->tb ? a->ldb : max1(a->k), a->bias, a->c, a->ldc);
        if (in_kernel && post) return narrow_output(a, a->c);
    }
    if (!in_kernel) {
        if (a->zero) memset(a->zero, 0, sizeof(float) * (size_t)a->zero_n);
        if (a->batch)
            fnn_gemm_prec_exact(FNN_PREC_MATMUL, a->exact, a->ta, a->tb, a->m, a->n, a->k, 1.0f, a->a, a->lda, a->b,
                                a->ldb, 0.0f, a->c, a->ldc);
    }
    FNN_ASSERT(a->ldc == a->n || a->m <= 1);
    act_fwd p = {cpu_map_row(), a->act == FNN_ACT_RELU ? FNN_MAP_relu_f : FNN_MAP_gelu_f, a->c, a->y,
                 in_kernel ? NULL : a->bias, a->bias_stride, a->m, a->n, block_rows(a->n), a->yh};
    FNN_ASSERT(p.map != NULL);
    fnn_parallel_for((a->m + p.rows - 1) / p.rows, fnn_threads_for(a->m * a->n), act_fwd_blocks, &p);
    return FNN_STATUS_OK;
}

typedef struct {
    const fnn_map_row *map;
    int code;                   /* the activation's gradient formula: g act'(saved) */
    const float *g, *saved;     /* g at g_s0 / g_s1; saved dense [m, n] */
    int64_t g_s0, g_s1;
    float *dz;                  /* dense [m, n] */
    float *part;                /* [parts, n]: part p's column sums of dz; NULL: no db */
    int64_t m, n, rows, per_part;
} act_bwd;

/* parts lo..hi-1, each a fixed range of rows (by m alone, never by the thread count), block by block:
 * dz, then its columns added into the part's sums while the block is in cache */
static void act_bwd_parts(void *ctx, int64_t lo, int64_t hi) {
    const act_bwd *p = ctx;
    const int64_t n = p->n;
    for (int64_t part = lo; part < hi; part++) {
        const int64_t end = (part + 1) * p->per_part < p->m ? (part + 1) * p->per_part : p->m;
        float *sum = p->part ? p->part + part * n : NULL;
        if (sum) memset(sum, 0, sizeof(float) * (size_t)n);
        for (int64_t r0 = part * p->per_part; r0 < end; r0 += p->rows) {
            const int64_t r1 = r0 + p->rows < end ? r0 + p->rows : end;
            float *dz = p->dz + r0 * n;
            map_block(p->map, p->code, dz, p->g + r0 * p->g_s0, p->g_s0, p->g_s1, p->saved + r0 * n, r1 - r0, n);
            if (sum)
                for (int64_t i = 0; i < r1 - r0; i++)
                    for (int64_t j = 0; j < n; j++) sum[j] += dz[i * n + j];
        }
    }
}

/* linear's db from DB_PARTS fixed parts of G's m rows (by m alone, never by the thread count): db_begin
 * makes db (zeroed) and the parts' scratch when a->db is asked for; db_end adds the parts into db in part
 * order (the same bits at any thread count, on both backward paths below) and frees the scratch */
typedef struct { float *db, *part; int64_t per_part, used, bytes; } db_split;
static int db_begin(const fnn_mm_args *a, db_split *s) {
    const int64_t m = a->m, n = a->n, parts = m < DB_PARTS ? m : DB_PARTS;
    *s = (db_split){.per_part = parts ? (m + parts - 1) / parts : 0};
    s->used = s->per_part ? (m + s->per_part - 1) / s->per_part : 0;
    if (!a->db) return FNN_STATUS_OK;
    FNN_TRY(fnn_new_output(a->db, a->g->device, 1, &n));
    s->db = fnn_data(a->db);
    memset(s->db, 0, sizeof(float) * (size_t)n);
    s->bytes = (int64_t)sizeof(float) * s->used * n;
    if (s->bytes > 0 && !(s->part = fnn_alloc(FNN_DEVICE_CPU, s->bytes))) {
        fnn_tensor_clear(a->db);
        return FNN_FAIL(FNN_STATUS_OOM, "linear: out of memory for the bias gradient's partial sums");
    }
    return FNN_STATUS_OK;
}
static void db_end(const fnn_mm_args *a, db_split *s) {
    if (!s->part) return;
    for (int64_t k = 0; k < s->used; k++)
        for (int64_t j = 0; j < a->n; j++) s->db[j] += s->part[k * a->n + j];
    fnn_free(FNN_DEVICE_CPU, s->part, s->bytes);
}

/* linear's backward with an activation: dz = g act'(saved) and db = dz's column sums in one pass over g */
static int cpu_linear_act_backward(const fnn_mm_args *a) {
    const int64_t m = a->m, n = a->n;
    db_split s;
    FNN_TRY(db_begin(a, &s));
    act_bwd p = {cpu_map_row(), a->act == FNN_ACT_RELU ? FNN_MAP_relu_g : FNN_MAP_gelu_g, a->gp, a->saved, a->g_s0,
                 a->g_s1, fnn_data(a->dz), s.part, m, n, block_rows(n), s.per_part};
    FNN_ASSERT(p.map != NULL);
    if (s.used > 0 && n > 0) fnn_parallel_for(s.used, fnn_threads_for(m * n), act_bwd_parts, &p);
    db_end(a, &s);
    return FNN_STATUS_OK;
}

/* linear's forward: oneDNN's matmul primitive adds the bias inside the product (row-major X, W read
 * as W^T through Trans, a dense bias); else the bias goes into C first and the GEMM adds onto it
 * (beta = 1): one pass over C */
static int cpu_linear(int ordinal, const fnn_mm_args *a) {
    (void)ordinal;
    if (a->act) return cpu_linear_act(a);
    /* a single column of W^T [k, 1] at ldb 1 is the row-major W [1, k] too */
    bool w_rows = a->tb || (a->n == 1 && a->ldb == 1);
    if (!a->ta && w_rows && (!a->bias || a->bias_stride == 1) &&
        fnn_gemm_fused_prec(FNN_PREC_MATMUL, a->exact, false, true, a->m, a->n, a->k, a->a, a->lda, a->b,
                            a->tb ? a->ldb : max1(a->k), a->bias, 0.0f, a->c, a->ldc))
        return narrow_output(a, a->c);
    if (a->zero) memset(a->zero, 0, sizeof(float) * (size_t)a->zero_n);
    if (a->bias) {
        for (int64_t i = 0; i < a->m; i++) {
            float *ci = a->c + i * a->ldc;
            if (a->bias_stride == 1) memcpy(ci, a->bias, sizeof(float) * (size_t)a->n);
            else for (int64_t j = 0; j < a->n; j++) ci[j] = a->bias[j * a->bias_stride];
        }
    }
    if (a->batch)
        fnn_gemm_prec_exact(FNN_PREC_MATMUL, a->exact, a->ta, a->tb, a->m, a->n, a->k, 1.0f, a->a, a->lda, a->b,
                            a->ldb, a->bias ? 1.0f : a->beta, a->c, a->ldc);
    return narrow_output(a, a->c);
}

/* parts lo..hi-1 of db's partial sums: part k adds G's rows [k per_part, (k + 1) per_part) in order */
typedef struct { const float *g; int64_t g_s0, g_s1, m, n, per_part; float *part; } db_sums;
static void db_parts(void *ctx, int64_t lo, int64_t hi) {
    const db_sums *p = ctx;
    const int64_t n = p->n;
    for (int64_t k = lo; k < hi; k++) {
        float *sum = p->part + k * n;
        memset(sum, 0, sizeof(float) * (size_t)n);
        const int64_t end = (k + 1) * p->per_part < p->m ? (k + 1) * p->per_part : p->m;
        for (int64_t i = k * p->per_part; i < end; i++) {
            const float *gi = p->g + i * p->g_s0;
            if (p->g_s1 == 1) for (int64_t j = 0; j < n; j++) sum[j] += gi[j];
            else for (int64_t j = 0; j < n; j++) sum[j] += gi[j * p->g_s1];
        }
    }
}

/* linear's backward: its GEMMs, or db = the column sums of G by db_begin's parts over the pool (serial,
 * char_gpt's nine bias gradients read 19 MB a step on one thread, ~1.5 ms of ~30) */
static int cpu_linear_backward(int ordinal, const fnn_mm_args *a) {
    if (a->dz) return cpu_linear_act_backward(a);
    if (!a->db) return cpu_gemm(ordinal, a);
    db_split s;
    FNN_TRY(db_begin(a, &s));
    db_sums p = {a->gp, a->g_s0, a->g_s1, a->m, a->n, s.per_part, s.part};
    if (s.part) fnn_parallel_for(s.used, fnn_threads_for(a->m * a->n), db_parts, &p);
    db_end(a, &s);
    return FNN_STATUS_OK;
}

const fnn_mm_row fnn_cpu_linalg_rows[] = {
    {"matmul", cpu_gemm, cpu_gemm},
    {"bmm", cpu_gemm, cpu_gemm},
    {"outer", cpu_gemm, cpu_gemm},
    {"linear", cpu_linear, cpu_linear_backward},
    {NULL, NULL, NULL},
};

const fnn_op_def *const fnn_ops_linalg[] = {&MATMUL, &BMM, &OUTER, &LINEAR, NULL};
