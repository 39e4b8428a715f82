/* pool.c: max_pool1d/2d/3d and avg_pool1d/2d/3d (stride, padding, ceil_mode; count_include_pad),
 * adaptive_avg_pool2d, upsample_nearest over 1..3 spatial dims and upsample_bilinear2d
 * (align_corners either way), CPU, PyTorch's semantics and output sizes. Inputs are channels
 * first, batched [N,C,...] or unbatched [C,...].
 *
 * Every op sees its input as N*C planes of three spatial dims [D,H,W], a 1-d input being a plane
 * [1,1,L] and a 2-d one [1,H,W], so one kernel serves every rank. Pools split the planes over the
 * threads; max pooling saves the argmax of each output (int32 offsets into its plane) for
 * backward. A 2x2 stride-2 unpadded pool over [H,W] planes, the common case, has kernels of its
 * own, branch-free so that rows vectorize, whose backward writes every input gradient once.
 * Upsampling splits rows (plane, depth, row) instead, so that a few large planes still
 * use every thread, and writes its backward as a gather: each input row sums the output rows that
 * read it, then each input element the output columns that read it, so no two threads (and no
 * two iterations) ever add into the same element. The kernels are the CPU's rows of the family
 * (pool.h); the entry points and backward rules call the row of the tensor's backend (a cuda
 * input: cuda/pool.cu's, same geometry, the argmax offsets staying on the device). */
#include "pool.h"
#include "../bf16.h"
#include "../fastmath.h"
#include <limits.h>
#include <math.h>
#include <string.h>

/* ================= shared ================= */

/* the layouts an op of `dims` spatial dims takes, for messages */
static const char *layouts(int dims) {
    switch (dims) {
    case 1: return "3-D [N,C,L] or 2-D [C,L]";
    case 2: return "4-D [N,C,H,W] or 3-D [C,H,W]";
    default: return "5-D [N,C,D,H,W] or 4-D [C,D,H,W]";
    }
}

/* the usable-input checks of every op here: float32 (or bfloat16 where the row has a forward_bf16)
 * on a device whose backend has the op's row (*row), batched or unbatched rank */
static int check_spatial(const char *op, const fnn_tensor *x, int dims, const fnn_pool_row **row) {
    if (x && !x->freed && x->dtype == FNN_DTYPE_BFLOAT16) FNN_TRY(fnn_check_input_any(op, x));
    else FNN_TRY(fnn_check_input(op, x));
    *row = fnn_pool_row_for(x->device, op);
    if (!*row || !(*row)->forward) return FNN_ROW_REFUSED(op, x->device, false);
    if (x->dtype == FNN_DTYPE_BFLOAT16 && !(*row)->forward_bf16) {
        char dev[32];
        return FNN_FAIL(FNN_STATUS_ARG, "%s: the %s backend takes float32 only, got a bfloat16 tensor %s; convert it "
                        "with :float()", op, fnn_device_name(x->device, dev, sizeof dev), fnn_shape_of(x).s);
    }
    FNN_CHECK(x->ndim == dims + 2 || x->ndim == dims + 1, FNN_STATUS_SHAPE, "%s: input %s must be %s", op,
              fnn_shape_of(x).s, layouts(dims));
    return FNN_STATUS_OK;
}

/* the last `dims` of v[3] as "3x3", "2" ... (v holds D, H, W with unused leading entries) */
typedef struct { char s[80]; } dims_text;
static dims_text dims_str(int dims, const int64_t *v) {
    dims_text t;
    int at = 0;
    for (int i = 3 - dims; i < 3; i++)
        at += snprintf(t.s + at, sizeof t.s - (size_t)at, i > 3 - dims ? "x%lld" : "%lld", (long long)v[i]);
    return t;
}

/* a tensor's trailing `dims` sizes as D, H, W (1 where it has fewer), and the planes before them */
static void spatial_of(int dims, int ndim, const int64_t *shape, int64_t sp[3], int64_t *planes) {
    sp[0] = sp[1] = sp[2] = 1;
    for (int i = 0; i < dims; i++) sp[3 - dims + i] = shape[ndim - dims + i];
    *planes = fnn_numel_of(ndim - dims, shape);
}

/* make out x's shape with the trailing `dims` sizes replaced by sp's last `dims` */
static int new_spatial_output(fnn_tensor *out, const fnn_tensor *x, int dims, const int64_t sp[3]) {
    int64_t shape[FNN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    for (int i = 0; i < dims; i++) shape[x->ndim - dims + i] = sp[3 - dims + i];
    return fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, shape);
}

/* split [0, n) into `parts` near-equal ranges; range t */
static inline void split_range(int64_t n, int64_t parts, int64_t t, int64_t *lo, int64_t *hi) {
    int64_t q = n / parts, r = n % parts;
    *lo = t * q + (t < r ? t : r);
    *hi = *lo + q + (t < r);
}

/* how many slots (threads, each with its own scratch) split `units` rows costing `work` in all */
static int slots_for(int64_t units, int64_t work) {
    int t = fnn_threads_for(work);
    return units < t ? (int)units : t;
}

/* a node's planes and trailing `dims` sizes, input's and output's, as D, H, W into a */
static void node_sizes(fnn_pool_args *a, int dims, const fnn_node *n) {
    spatial_of(dims, n->in_ndim[0], n->in_shape[0], a->in, &a->planes);
    int64_t unused;
    spatial_of(dims, n->out_ndim, n->out_shape, a->out, &unused);
}

/* ================= through the backends' rows (pool.h's fnn_pool_row) =================
 * the entry points check, shape and allocate, then call the row of the tensor's backend: the CPU's
 * rows sit beside each op's kernels below, cuda/pool.cu's there */

/* a's forward through row into out, x made contiguous (the kernels read whole planes); a bfloat16 x
 * (check_spatial: the row has forward_bf16) goes to it, with out bfloat16 as well */
static int row_forward(const fnn_pool_row *row, const fnn_tensor *x, fnn_tensor *out, fnn_pool_args *a) {
    fnn_tensor xt;
    int rc;
    if (x->dtype == FNN_DTYPE_BFLOAT16) {
        a->xh = fnn_contiguous_bytes(x, &xt, &rc);
        a->yh = fnn_bytes(out);
        if (!rc) rc = row->forward_bf16(fnn_device_ordinal(x->device), a);
        fnn_tensor_clear(&xt);
        return rc;
    }
    a->x = fnn_contiguous_data(x, &xt, &rc);
    a->y = fnn_data(out);
    if (!rc) rc = row->forward(fnn_device_ordinal(x->device), a);
    fnn_tensor_clear(&xt);
    return rc;
}

/* din of n's input from dout through the backward of its op's row in dout's backend; a holds the
 * node's sizes and numbers (and, for max pools, the saved argmax offsets) */
static int row_backward(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din, fnn_pool_args *a) {
    const fnn_pool_row *row = fnn_pool_row_for(dout->device, n->op->info.name);
    if (!row || !row->backward) return FNN_ROW_REFUSED(n->op->info.name, dout->device, true);
    fnn_tensor dyt;
    int rc;
    a->dy = fnn_contiguous_data(dout, &dyt, &rc);   /* float32: a bfloat16 output's gradient is (to_dtype.c) */
    if (!rc) rc = fnn_new_output(&din[0], dout->device, n->in_ndim[0], n->in_shape[0]);
    if (!rc) {
        a->dx = fnn_data(&din[0]);
        if ((rc = row->backward(fnn_device_ordinal(dout->device), a))) fnn_tensor_clear(&din[0]);
    }
    fnn_tensor_clear(&dyt);
    return rc;
}

/* ================= max and avg pooling over 1, 2 and 3 spatial dims ================= */

typedef struct {
    int dims;                     /* 1, 2 or 3 */
    int64_t planes;               /* N*C */
    int64_t in[3], out[3];        /* D, H, W and Do, Ho, Wo (1 along dims the op lacks) */
    int64_t k[3], s[3], p[3];     /* kernel, stride, padding (1, 1, 0 along dims the op lacks) */
    bool count_include_pad;
    bool fast;                    /* 2x2, stride 2, no padding over [1,H,W] planes: the kernels below */
} pool_geom;

static bool pool_fast(const pool_geom *g) {
    return g->in[0] == 1 && g->k[0] == 1 && g->s[0] == 1 && g->p[0] == 0 && g->k[1] == 2 && g->k[2] == 2 &&
           g->s[1] == 2 && g->s[2] == 2 && g->p[1] == 0 && g->p[2] == 0 && 2 * g->out[1] <= g->in[1] &&
           2 * g->out[2] <= g->in[2];
}

/* PyTorch's pooling output size: floor((in + 2p - k) / s) + 1, or ceil in ceil_mode, where the
 * last window must start inside the input or the left padding */
static int64_t out_size(int64_t in, int64_t pad, int64_t k, int64_t stride, bool ceil_mode) {
    int64_t span = in + 2 * pad - k;   /* >= 0: checked by the caller */
    int64_t o = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    if (ceil_mode && (o - 1) * stride >= in + pad) o--;
    return o;
}

/* checks shared by the pools, then the geometry; out gets [..., Do, Ho, Wo]. kp/sp/pp hold the
 * op's `dims` values */
static int pool_setup(const char *op, pool_geom *g, fnn_tensor *out, const fnn_tensor *x, int dims, const int *kp,
                      const int *sp, const int *pp, int ceil_mode, const fnn_pool_row **row) {
    fnn_tensor_init(out);
    FNN_TRY(check_spatial(op, x, dims, row));
    g->dims = dims;
    for (int i = 0; i < 3; i++) { g->k[i] = 1; g->s[i] = 1; g->p[i] = 0; }
    bool kpos = true, spos = true, pok = true;
    for (int i = 0; i < dims; i++) {
        g->k[3 - dims + i] = kp[i]; g->s[3 - dims + i] = sp[i]; g->p[3 - dims + i] = pp[i];
        kpos = kpos && kp[i] >= 1;
        spos = spos && sp[i] >= 1;
        pok = pok && pp[i] >= 0 && pp[i] <= kp[i] / 2;
    }
    FNN_CHECK(kpos, FNN_STATUS_ARG, "%s: kernel %s must be positive", op, dims_str(dims, g->k).s);
    FNN_CHECK(spos, FNN_STATUS_ARG, "%s: stride %s must be positive", op, dims_str(dims, g->s).s);
    FNN_CHECK(pok, FNN_STATUS_ARG, "%s: padding %s must be between 0 and half the kernel %s", op,
              dims_str(dims, g->p).s, dims_str(dims, g->k).s);
    spatial_of(dims, x->ndim, x->shape, g->in, &g->planes);
    FNN_CHECK(g->in[0] >= 1 && g->in[1] >= 1 && g->in[2] >= 1, FNN_STATUS_SHAPE, "%s: input %s has an empty %s plane",
              op, fnn_shape_of(x).s, dims_str(dims, g->in).s);
    int64_t padded[3];
    bool fits = true;
    for (int i = 0; i < 3; i++) {
        padded[i] = g->in[i] + 2 * g->p[i];
        fits = fits && g->k[i] <= padded[i];
    }
    FNN_CHECK(fits, FNN_STATUS_SHAPE, "%s: kernel %s is larger than the padded input %s (input %s, padding %s)", op,
              dims_str(dims, g->k).s, dims_str(dims, padded).s, fnn_shape_of(x).s, dims_str(dims, g->p).s);
    for (int i = 0; i < 3; i++) g->out[i] = out_size(g->in[i], g->p[i], g->k[i], g->s[i], ceil_mode != 0);
    g->count_include_pad = false;
    g->fast = pool_fast(g);
    return new_spatial_output(out, x, dims, g->out);
}

/* a pooling node's geometry (max and avg, 1d to 3d), as pool_geom has it: the three spatial dims
 * (a 1d or 2d pool has kernel 1, stride 1, padding 0 in the leading ones); the input and output
 * shapes are the node's own */
typedef struct {
    int64_t kernel[3], stride[3], padding[3];
    int dims;                 /* 1, 2 or 3 */
    bool count_include_pad;   /* avg */
} pool_attrs;

typedef struct { int dims; } upsample_nearest_attrs;
typedef struct { bool align_corners; } upsample_bilinear_attrs;

/* fnn_node_attr's reader for the family (fnn.onnx.export): max and avg pooling's nodes: dims,
 * count_include_pad, and kernel<i>, stride<i>, padding<i> for spatial dim i = 0 .. dims-1;
 * upsample_nearest's dims; upsample_bilinear2d's align_corners */
int fnn_pool_attr(const fnn_node *n, const char *name, double *value) {
    const char *op = n->op->info.name;
    if (!strcmp(op, "upsample_nearest") && !strcmp(name, "dims")) {
        *value = FNN_ATTRS((fnn_node *)n, upsample_nearest_attrs)->dims;
        return FNN_STATUS_OK;
    }
    if (!strcmp(op, "upsample_bilinear2d") && !strcmp(name, "align_corners")) {
        *value = FNN_ATTRS((fnn_node *)n, upsample_bilinear_attrs)->align_corners;
        return FNN_STATUS_OK;
    }
    FNN_CHECK(!strncmp(op, "max_pool", 8) || !strncmp(op, "avg_pool", 8), FNN_STATUS_ARG,
              "node_attr: %s nodes have no attribute '%s'", op, name);
    const pool_attrs *a = FNN_ATTRS((fnn_node *)n, pool_attrs);
    if (!strcmp(name, "dims")) { *value = a->dims; return FNN_STATUS_OK; }
    if (!strcmp(name, "count_include_pad")) { *value = a->count_include_pad; return FNN_STATUS_OK; }
    const char *digit = name + strcspn(name, "012");
    int i = digit[0] && !digit[1] && digit[0] - '0' < a->dims ? digit[0] - '0' : -1;
    int at = 3 - a->dims + i;   /* a 1d or 2d pool keeps its dims last of the three */
    size_t stem = (size_t)(digit - name);
    if (i >= 0 && stem == 6 && !strncmp(name, "kernel", 6)) *value = (double)a->kernel[at];
    else if (i >= 0 && stem == 6 && !strncmp(name, "stride", 6)) *value = (double)a->stride[at];
    else if (i >= 0 && stem == 7 && !strncmp(name, "padding", 7)) *value = (double)a->padding[at];
    else return FNN_FAIL(FNN_STATUS_ARG, "node_attr: %s has dims, count_include_pad and kernel<i>, stride<i>, "
                         "padding<i> (i < %d), not '%s'", op, a->dims, name);
    return FNN_STATUS_OK;
}

static void pool_record(fnn_node *n, const pool_geom *g) {
    pool_attrs *a = FNN_ATTRS(n, pool_attrs);
    for (int i = 0; i < 3; i++) { a->kernel[i] = g->k[i]; a->stride[i] = g->s[i]; a->padding[i] = g->p[i]; }
    a->dims = g->dims;
    a->count_include_pad = g->count_include_pad;
}

/* a row's arguments of a pool's geometry */
static void pool_args_of(fnn_pool_args *a, const pool_geom *g) {
    a->planes = g->planes;
    for (int i = 0; i < 3; i++) {
        a->in[i] = g->in[i]; a->out[i] = g->out[i]; a->k[i] = g->k[i]; a->s[i] = g->s[i]; a->p[i] = g->p[i];
    }
    a->count_include_pad = g->count_include_pad;
}
/* the backward's arguments of a pooling node */
static void pool_args_of_node(fnn_pool_args *a, const fnn_node *n) {
    const pool_attrs *at = FNN_ATTRS(n, pool_attrs);
    node_sizes(a, at->dims, n);
    for (int i = 0; i < 3; i++) { a->k[i] = at->kernel[i]; a->s[i] = at->stride[i]; a->p[i] = at->padding[i]; }
    a->count_include_pad = at->count_include_pad;
}
/* the CPU kernels' geometry of a row's arguments (dims: not read by the kernels) */
static void pool_geom_of_args(pool_geom *g, const fnn_pool_args *a) {
    g->dims = 0;
    g->planes = a->planes;
    for (int i = 0; i < 3; i++) {
        g->in[i] = a->in[i]; g->out[i] = a->out[i]; g->k[i] = a->k[i]; g->s[i] = a->s[i]; g->p[i] = a->p[i];
    }
    g->count_include_pad = a->count_include_pad != 0;
    g->fast = pool_fast(g);
}

/* window o along axis a: [*lo, *hi) inside the input; returns its extent clipped to the padded
 * input (what count_include_pad divides by) */
static inline int64_t window(const pool_geom *g, int a, int64_t o, int64_t *lo, int64_t *hi) {
    int64_t start = o * g->s[a] - g->p[a], end = start + g->k[a];
    int64_t padded_end = end < g->in[a] + g->p[a] ? end : g->in[a] + g->p[a];
    *lo = start < 0 ? 0 : start;
    *hi = end < g->in[a] ? end : g->in[a];
    return padded_end - start;
}

/* int32 argmax offsets live in a float tensor's buffer (same width); memcpy keeps the accesses typed */
static inline void put_i32(float *p, int64_t i, int32_t v) { memcpy(p + i, &v, sizeof v); }
static inline int32_t get_i32(const float *p, int64_t i) { int32_t v; memcpy(&v, p + i, sizeof v); return v; }

typedef struct {
    const pool_geom *g;
    const float *x, *dy;
    float *y, *dx, *idx;       /* idx: int32 argmax offsets (max), or NULL */
} pool_job;

/* ---- the 2x2 stride-2 kernels over one [H, W] plane (every window inside it) ---- */

/* GCC vector extensions shared by the 2x2 max pool and bilinear upsampling: unaligned loads and
 * stores (no vector-valued functions: those change the ABI of the baseline variant), and a two-vector
 * shuffle by an index vector (GCC's builtin; elsewhere, as the fuzzers' clang, lane by lane: the
 * same values) */
#define VEC_LOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define VEC_STORE(p, v) memcpy((p), &(v), sizeof(v))
#if defined(__GNUC__) && !defined(__clang__)
#define VEC_SHUFFLE(lo, hi, k) __builtin_shuffle((lo), (hi), (k))
#else
#define VEC_SHUFFLE(lo, hi, k) ({ __typeof__(lo) s_; const int n_ = (int)(sizeof(s_) / sizeof(s_[0]));   \
    for (int l_ = 0; l_ < n_; l_++) s_[l_] = (k)[l_] < n_ ? (lo)[(k)[l_]] : (hi)[(k)[l_] - n_]; s_; })
#endif

/* whether vectors of 8 floats pay: in the v3 and v4 variants (the baseline's SSE lowers their
 * shuffles to scalar moves, slower than the scalar loop; vectors of 4 map onto SSE's own) */
static bool vectors8(void) {
#ifdef FNN_HAVE_CLONES
    return __builtin_cpu_supports("x86-64-v3");
#else
    return false;
#endif
}

/* c ? a : b for a mask c of all ones or zeros: branch-free, so the rows vectorize */
static inline int32_t isel(uint32_t mask, int32_t a, int32_t b) { return (int32_t)(((uint32_t)a & mask) | ((uint32_t)b & ~mask)); }
static inline float fsel(uint32_t mask, float a, float b) { return fnn_u2f((fnn_f2u(a) & mask) | (fnn_f2u(b) & ~mask)); }

/* The 2x2 kernels run a row in blocks of 8 outputs (4 where a row has fewer than 8), the last block
 * moved back to end at the row's end (it recomputes a few outputs, with the same bits; blocks of 4 in
 * the baseline variant, vectors8): a block's 16
 * (8) inputs of a row are two loads, split into the even and odd columns by two constant shuffles
 * (vpermt2ps; shufps). Rows under 4 outputs run the scalar loop. The lanes compute what the scalar
 * loop does (candidates in order a b / c d; the first maximum wins ties and a nan wins over numbers,
 * as the general loop below), so the bits and offsets do not depend on the path. */
typedef float mp_v8 __attribute__((vector_size(32)));
typedef int32_t mp_i8 __attribute__((vector_size(32)));
typedef float mp_v4 __attribute__((vector_size(16)));
typedef int32_t mp_i4 __attribute__((vector_size(16)));
#define MP_SEL(t, a, b, VI) ((((VI)(a)) & (t)) | (((VI)(b)) & ~(t)))   /* lanes of a where t, else b (bits) */

/* one block of L outputs at column o0 of a row: the maxima into yr, their offsets into ir (or not) */
#define MP_MAX_BLOCK(VF, VI, L, EVEN, ODD, IOTA2)                                                        \
    do {                                                                                                \
        VF l0, h0, l1, h1;                                                                              \
        VEC_LOAD(l0, r0 + 2 * o0); VEC_LOAD(h0, r0 + 2 * o0 + L);                                         \
        VEC_LOAD(l1, r1 + 2 * o0); VEC_LOAD(h1, r1 + 2 * o0 + L);                                         \
        VF m = VEC_SHUFFLE(l0, h0, EVEN), c1 = VEC_SHUFFLE(l0, h0, ODD);                     \
        VF c2 = VEC_SHUFFLE(l1, h1, EVEN), c3 = VEC_SHUFFLE(l1, h1, ODD);                    \
        VI t1 = (c1 > m) | (c1 != c1);                                                                  \
        m = (VF)MP_SEL(t1, c1, m, VI);                                                                  \
        VI t2 = (c2 > m) | (c2 != c2);                                                                  \
        m = (VF)MP_SEL(t2, c2, m, VI);                                                                  \
        VI t3 = (c3 > m) | (c3 != c3);                                                                  \
        m = (VF)MP_SEL(t3, c3, m, VI);                                                                  \
        VEC_STORE(yr + o0, m);                                                                           \
        if (ir) {                                                                                       \
            const VI a0 = (base + 2 * (int32_t)o0) + IOTA2;   /* candidate a's offsets */               \
            VI at = MP_SEL(t1, a0 + 1, a0, VI);                                                         \
            at = MP_SEL(t2, a0 + w1, at, VI);                                                           \
            at = MP_SEL(t3, a0 + (w1 + 1), at, VI);                                                     \
            VEC_STORE(ir + o0, at);                                                                      \
        }                                                                                               \
    } while (0)

/* the scalar loop over outputs lo..hi-1 of a row (the general case's order and nan rule) */
static inline void max_2x2_scalar(const float *r0, const float *r1, float *yr, float *ir, int32_t base, int32_t w1,
                                  int64_t lo, int64_t hi) {
    for (int64_t ox = lo; ox < hi; ox++) {
        float m = r0[2 * ox], c1 = r0[2 * ox + 1], c2 = r1[2 * ox], c3 = r1[2 * ox + 1];
        int32_t at = base + 2 * (int32_t)ox;
        uint32_t t = -(uint32_t)((c1 > m) | (c1 != c1));   /* c != c: nan wins, as PyTorch */
        m = fsel(t, c1, m); at = isel(t, base + 2 * (int32_t)ox + 1, at);
        t = -(uint32_t)((c2 > m) | (c2 != c2));
        m = fsel(t, c2, m); at = isel(t, base + w1 + 2 * (int32_t)ox, at);
        t = -(uint32_t)((c3 > m) | (c3 != c3));
        m = fsel(t, c3, m); at = isel(t, base + w1 + 2 * (int32_t)ox + 1, at);
        yr[ox] = m;
        if (ir) put_i32(ir, ox, at);
    }
}

/* y = the maxima, idx (or NULL) their offsets */
static FNN_CLONES_V4 void max_2x2_plane(const float *x, float *y, float *idx, int64_t W, int64_t Ho, int64_t Wo) {
    static const mp_i8 even8 = {0, 2, 4, 6, 8, 10, 12, 14}, odd8 = {1, 3, 5, 7, 9, 11, 13, 15};
    static const mp_i8 iota8 = {0, 2, 4, 6, 8, 10, 12, 14};
    static const mp_i4 even4 = {0, 2, 4, 6}, odd4 = {1, 3, 5, 7}, iota4 = {0, 2, 4, 6};
    const bool wide = vectors8();
    for (int64_t oy = 0; oy < Ho; oy++) {
        const float *r0 = x + 2 * oy * W, *r1 = r0 + W;
        float *yr = y + oy * Wo, *ir = idx ? idx + oy * Wo : NULL;
        const int32_t base = (int32_t)(2 * oy * W), w1 = (int32_t)W;
        if (Wo >= 8 && wide) {
            for (int64_t o = 0; o < Wo; o += 8) {
                const int64_t o0 = o + 8 <= Wo ? o : Wo - 8;
                MP_MAX_BLOCK(mp_v8, mp_i8, 8, even8, odd8, iota8);
            }
        } else if (Wo >= 4) {
            for (int64_t o = 0; o < Wo; o += 4) {
                const int64_t o0 = o + 4 <= Wo ? o : Wo - 4;
                MP_MAX_BLOCK(mp_v4, mp_i4, 4, even4, odd4, iota4);
            }
        } else {
            max_2x2_scalar(r0, r1, yr, ir, base, w1, 0, Wo);
        }
    }
}
#undef MP_MAX_BLOCK

/* one block of L outputs' gradients at column o0: each lane's dy to the one of its four inputs its
 * offset names, 0 to the other three; the two rows' even and odd columns interleaved back by two
 * constant shuffles each (vpermt2ps; unpcklps/unpckhps) */
#define MP_GRAD_BLOCK(VF, VI, L, LO, HI)                                                                 \
    do {                                                                                                \
        VF d;                                                                                           \
        VI at;                                                                                          \
        VEC_LOAD(d, dr + o0); VEC_LOAD(at, ir + o0);                                                      \
        at -= (base + 2 * (int32_t)o0) + iota;                                                          \
        const VI z = {0}, dv = (VI)d;                                                                   \
        VF e0 = (VF)MP_SEL(at == 0, dv, z, VI), e1 = (VF)MP_SEL(at == 1, dv, z, VI);                    \
        VF e2 = (VF)MP_SEL(at == w1, dv, z, VI), e3 = (VF)MP_SEL(at == w1 + 1, dv, z, VI);              \
        VF q0 = VEC_SHUFFLE(e0, e1, LO), q1 = VEC_SHUFFLE(e0, e1, HI);                       \
        VF q2 = VEC_SHUFFLE(e2, e3, LO), q3 = VEC_SHUFFLE(e2, e3, HI);                       \
        VEC_STORE(g0 + 2 * o0, q0); VEC_STORE(g0 + 2 * o0 + L, q1);                                        \
        VEC_STORE(g1 + 2 * o0, q2); VEC_STORE(g1 + 2 * o0 + L, q3);                                        \
    } while (0)

/* dx = dy at each window's argmax, 0 elsewhere: the windows tile the plane, so every element is
 * written once (no zero fill first) */
static FNN_CLONES_V4 void max_2x2_plane_grad(float *dx, const float *dy, const float *idx, int64_t H, int64_t W,
                                             int64_t Ho, int64_t Wo) {
    static const mp_i8 lo8 = {0, 8, 1, 9, 2, 10, 3, 11}, hi8 = {4, 12, 5, 13, 6, 14, 7, 15};
    static const mp_i4 lo4 = {0, 4, 1, 5}, hi4 = {2, 6, 3, 7};
    const bool wide = vectors8();
    for (int64_t oy = 0; oy < Ho; oy++) {
        float *g0 = dx + 2 * oy * W, *g1 = g0 + W;
        const float *dr = dy + oy * Wo, *ir = idx + oy * Wo;
        const int32_t base = (int32_t)(2 * oy * W), w1 = (int32_t)W;
        int64_t done = 0;
        if (Wo >= 8 && wide) {
            const mp_i8 iota = {0, 2, 4, 6, 8, 10, 12, 14};
            for (int64_t o = 0; o < Wo; o += 8) {
                const int64_t o0 = o + 8 <= Wo ? o : Wo - 8;
                MP_GRAD_BLOCK(mp_v8, mp_i8, 8, lo8, hi8);
            }
            done = Wo;
        } else if (Wo >= 4) {
            const mp_i4 iota = {0, 2, 4, 6};
            for (int64_t o = 0; o < Wo; o += 4) {
                const int64_t o0 = o + 4 <= Wo ? o : Wo - 4;
                MP_GRAD_BLOCK(mp_v4, mp_i4, 4, lo4, hi4);
            }
            done = Wo;
        }
        for (int64_t ox = done; ox < Wo; ox++) {
            int32_t at = get_i32(ir, ox) - (base + 2 * (int32_t)ox);
            float d = dr[ox];
            g0[2 * ox] = fsel(-(uint32_t)(at == 0), d, 0.0f);
            g0[2 * ox + 1] = fsel(-(uint32_t)(at == 1), d, 0.0f);
            g1[2 * ox] = fsel(-(uint32_t)(at == w1), d, 0.0f);
            g1[2 * ox + 1] = fsel(-(uint32_t)(at == w1 + 1), d, 0.0f);
        }
        for (int64_t ix = 2 * Wo; ix < W; ix++) g0[ix] = g1[ix] = 0;
    }
    if (2 * Ho < H) memset(dx + 2 * Ho * W, 0, sizeof(float) * (size_t)((H - 2 * Ho) * W));
}
#undef MP_GRAD_BLOCK

static void avg_2x2_plane(const float *x, float *y, int64_t W, int64_t Ho, int64_t Wo) {
    for (int64_t oy = 0; oy < Ho; oy++) {
        const float *r0 = x + 2 * oy * W, *r1 = r0 + W;
        for (int64_t ox = 0; ox < Wo; ox++)
            y[oy * Wo + ox] = 0.25f * ((r0[2 * ox] + r0[2 * ox + 1]) + (r1[2 * ox] + r1[2 * ox + 1]));
    }
}

static void avg_2x2_plane_grad(float *dx, const float *dy, int64_t H, int64_t W, int64_t Ho, int64_t Wo) {
    for (int64_t oy = 0; oy < Ho; oy++) {
        float *r0 = dx + 2 * oy * W, *r1 = r0 + W;
        for (int64_t ox = 0; ox < Wo; ox++) {
            float d = 0.25f * dy[oy * Wo + ox];
            r0[2 * ox] = r0[2 * ox + 1] = r1[2 * ox] = r1[2 * ox + 1] = d;
        }
        for (int64_t ix = 2 * Wo; ix < W; ix++) r0[ix] = r1[ix] = 0;
    }
    if (2 * Ho < H) memset(dx + 2 * Ho * W, 0, sizeof(float) * (size_t)((H - 2 * Ho) * W));
}

/* ---- max_pool1d, max_pool2d, max_pool3d ---- */

/* the maximum of x [D,H,W] over a window (-inf for none) and its offset: the first in row-major
 * order wins ties, a nan wins over numbers */
static inline int64_t window_max(const float *x, int64_t H, int64_t W, int64_t d0, int64_t d1, int64_t h0, int64_t h1,
                                 int64_t w0, int64_t w1, float *max) {
    float m = -INFINITY;
    int64_t at = (d0 * H + h0) * W + w0;
    for (int64_t id = d0; id < d1; id++)
        for (int64_t ih = h0; ih < h1; ih++) {
            const float *xr = x + (id * H + ih) * W;
            for (int64_t iw = w0; iw < w1; iw++)
                if (xr[iw] > m || isnan(xr[iw])) { m = xr[iw]; at = (id * H + ih) * W + iw; }
        }
    *max = m;
    return at;
}

/* one output row of a max pool: the windows along W of depth rows [d0, d1) and rows [h0, h1)
 * (the W axis' numbers in locals keep the loop's values in registers); idx may be NULL */
static inline void max_row(const pool_geom *g, const float *x, float *yr, float *ir, int64_t H, int64_t W,
                           int64_t d0, int64_t d1, int64_t h0, int64_t h1) {
    const int64_t sw = g->s[2], pw = g->p[2], kw = g->k[2], Wo = g->out[2];
    for (int64_t ow = 0; ow < Wo; ow++) {
        const int64_t start = ow * sw - pw, end = start + kw;
        float m;
        int64_t at = window_max(x, H, W, d0, d1, h0, h1, start < 0 ? 0 : start, end < W ? end : W, &m);
        yr[ow] = m;
        if (ir) put_i32(ir, ow, (int32_t)at);
    }
}

/* planes [lo, hi): y [Do,Ho,Wo] = max over each window of x [D,H,W] (padding is -inf), idx = its
 * offset in the plane; the first maximum in row-major window order wins ties, a nan wins over
 * numbers (as PyTorch) */
static void max_forward_planes(void *ctx, int64_t lo, int64_t hi) {
    const pool_job *j = ctx;
    const pool_geom *g = j->g;
    const int64_t H = g->in[1], W = g->in[2], plane = g->in[0] * H * W;
    const int64_t Do = g->out[0], Ho = g->out[1], Wo = g->out[2], oplane = Do * Ho * Wo;
    for (int64_t p = lo; p < hi; p++) {
        const float *x = j->x + p * plane;
        float *y = j->y + p * oplane, *idx = j->idx ? j->idx + p * oplane : NULL;
        if (g->fast) { max_2x2_plane(x, y, idx, W, Ho, Wo); continue; }
        for (int64_t od = 0; od < Do; od++) {
            int64_t d0, d1;
            window(g, 0, od, &d0, &d1);
            for (int64_t oh = 0; oh < Ho; oh++) {
                int64_t h0, h1;
                window(g, 1, oh, &h0, &h1);
                const int64_t o = (od * Ho + oh) * Wo;
                /* a plane of one depth (the 2-d pools) gets the depth loop compiled away */
                if (g->in[0] == 1) max_row(g, x, y + o, idx ? idx + o : NULL, H, W, 0, 1, h0, h1);
                else max_row(g, x, y + o, idx ? idx + o : NULL, H, W, d0, d1, h0, h1);
            }
        }
    }
}

/* planes [lo, hi): dx [D,H,W] = dy routed to each window's argmax (summed where windows overlap) */
static void max_backward_planes(void *ctx, int64_t lo, int64_t hi) {
    const pool_job *j = ctx;
    const pool_geom *g = j->g;
    const int64_t plane = g->in[0] * g->in[1] * g->in[2], oplane = g->out[0] * g->out[1] * g->out[2];
    for (int64_t p = lo; p < hi; p++) {
        float *dx = j->dx + p * plane;
        const float *dy = j->dy + p * oplane, *idx = j->idx + p * oplane;
        if (g->fast) { max_2x2_plane_grad(dx, dy, idx, g->in[1], g->in[2], g->out[1], g->out[2]); continue; }
        memset(dx, 0, sizeof(float) * (size_t)plane);
        for (int64_t o = 0; o < oplane; o++) dx[get_i32(idx, o)] += dy[o];
    }
}

/* both pools' backward on the CPU: dx of the input's shape, filled plane by plane by `planes_fn` */
static int pool_grad_cpu(const fnn_pool_args *a, fnn_range_fn planes_fn) {
    pool_geom g;
    pool_geom_of_args(&g, a);
    pool_job j = {&g, NULL, a->dy, NULL, a->dx, (float *)(void *)a->idx};
    int64_t work = g.planes * (g.in[0] * g.in[1] * g.in[2] + g.out[0] * g.out[1] * g.out[2]);
    fnn_parallel_for(g.planes, fnn_threads_for(work), planes_fn, &j);
    return FNN_STATUS_OK;
}

/* both pools' forward on the CPU: y plane by plane by `planes_fn` (max's argmax offsets into a->idx, when
 * kept; avg's a->idx is NULL) */
static int pool_forward_cpu(const fnn_pool_args *a, fnn_range_fn planes_fn) {
    pool_geom g;
    pool_geom_of_args(&g, a);
    pool_job j = {&g, a->x, NULL, a->y, NULL, (float *)(void *)a->idx};
    int64_t nout = g.planes * g.out[0] * g.out[1] * g.out[2];
    fnn_parallel_for(g.planes, fnn_threads_for(nout * g.k[0] * g.k[1] * g.k[2]), planes_fn, &j);
    return FNN_STATUS_OK;
}

/* both pools' bfloat16 forward on the CPU: each plane widened (exactly) into a slot's float32 scratch,
 * pooled there by the float32 plane function, and its result rounded into yh: the numbers of
 * widen -> float32 pool -> round, without two full-size float32 tensors between (autocast's
 * max_pool2d on a conv's bfloat16 output). Slot t owns planes split_range(t) and its scratch */
typedef struct {
    pool_job j;               /* the geometry and the whole output's argmax offsets (or NULL) */
    fnn_range_fn planes_fn;   /* the float32 kernel */
    const uint16_t *xh;
    uint16_t *yh;
    float *scratch;           /* slots x (plane + oplane) floats */
    int64_t slots;
} bf16_job;

static void bf16_forward_slots(void *ctx, int64_t lo, int64_t hi) {
    const bf16_job *b = ctx;
    const pool_geom *g = b->j.g;
    const int64_t plane = g->in[0] * g->in[1] * g->in[2], oplane = g->out[0] * g->out[1] * g->out[2];
    for (int64_t t = lo; t < hi; t++) {
        int64_t p0, p1;
        split_range(g->planes, b->slots, t, &p0, &p1);
        float *xs = b->scratch + t * (plane + oplane), *ys = xs + plane;
        for (int64_t p = p0; p < p1; p++) {
            const uint16_t *xh = b->xh + p * plane;
            uint16_t *yh = b->yh + p * oplane;
            fnn_bf16_widen_run(xs, xh, plane);
            pool_job one = b->j;
            one.x = xs;
            one.y = ys;
            one.idx = b->j.idx ? b->j.idx + p * oplane : NULL;
            b->planes_fn(&one, 0, 1);
            fnn_bf16_narrow_run(yh, ys, oplane);
        }
    }
}

static int pool_forward_bf16_cpu(const fnn_pool_args *a, fnn_range_fn planes_fn) {
    pool_geom g;
    pool_geom_of_args(&g, a);
    const int64_t plane = g.in[0] * g.in[1] * g.in[2], oplane = g.out[0] * g.out[1] * g.out[2];
    int slots = slots_for(g.planes, g.planes * (plane + oplane * g.k[0] * g.k[1] * g.k[2]));
    if (slots < 1) return FNN_STATUS_OK;   /* no planes */
    int64_t bytes = (int64_t)sizeof(float) * slots * (plane + oplane);
    float *scratch = fnn_alloc(FNN_DEVICE_CPU, bytes);
    if (!scratch) return fnn_last_status();
    bf16_job b = {.j = {&g, NULL, NULL, NULL, NULL, (float *)(void *)a->idx}, .planes_fn = planes_fn, .xh = a->xh,
                  .yh = a->yh, .scratch = scratch, .slots = slots};
    fnn_parallel_for(slots, slots, bf16_forward_slots, &b);
    fnn_free(FNN_DEVICE_CPU, scratch, bytes);
    return FNN_STATUS_OK;
}

/* max and avg pool's rule: a max pool's saved[0] holds the argmax offsets [planes * Do * Ho * Wo] (int32
 * bits); an avg pool saves nothing */
static int pool_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    const fnn_tensor *idx = &n->saved[0];
    fnn_pool_args a = {.idx = idx->ndim >= 0 ? (int32_t *)(void *)fnn_data(idx) : NULL};
    pool_args_of_node(&a, n);
    return row_backward(n, dout, din, &a);
}
/* has_cuda (0 here): the registry derives it from cuda/pool.cu's rows */
static const fnn_op_def MAX_POOL1D = {.info = {.name = "max_pool1d", .family = "pool", .differentiable = 1},
    .backward = pool_rule};
static const fnn_op_def MAX_POOL2D = {.info = {.name = "max_pool2d", .family = "pool", .differentiable = 1},
    .backward = pool_rule};
static const fnn_op_def MAX_POOL3D = {.info = {.name = "max_pool3d", .family = "pool", .differentiable = 1},
    .backward = pool_rule};

static int max_pool(const fnn_op_def *def, fnn_tensor *out, const fnn_tensor *x, int dims, const int *k,
                    const int *s, const int *p, int ceil_mode) {
    const char *op = def->info.name;
    const fnn_pool_row *row;
    pool_geom g;
    FNN_TRY(pool_setup(op, &g, out, x, dims, k, s, p, ceil_mode, &row));
    if (g.in[0] * g.in[1] * g.in[2] > INT32_MAX) {   /* the argmax offsets are int32 */
        fnn_tensor_clear(out);
        return FNN_FAIL(FNN_STATUS_SHAPE, "%s: input %s has planes of over 2^31 elements", op, fnn_shape_of(x).s);
    }
    fnn_tensor idx;
    fnn_tensor_init(&idx);
    int rc = FNN_STATUS_OK;
    int64_t nout = g.planes * g.out[0] * g.out[1] * g.out[2];
    const fnn_tensor *ins[1] = {x};
    bool node = fnn_needs_node(1, ins);
    fnn_pool_args a = {.y = NULL};   /* row_forward points it (or yh) at out */
    pool_args_of(&a, &g);
    if (node) rc = fnn_new_output(&idx, x->device, 1, &nout);   /* argmax offsets, for backward only */
    if (!rc && node) a.idx = (int32_t *)(void *)fnn_data(&idx);
    if (!rc) rc = row_forward(row, x, out, &a);
    if (!rc && node) {
        fnn_node *n = fnn_attach_node(out, def, 1, ins);
        if (!n || fnn_save(n, 0, &idx)) rc = fnn_last_status();
        else pool_record(n, &g);
    }
    fnn_tensor_clear(&idx);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

int fnn_max_pool1d(fnn_tensor *out, const fnn_tensor *x, int k, int s, int p, int ceil_mode) {
    return max_pool(&MAX_POOL1D, out, x, 1, &k, &s, &p, ceil_mode);
}

int fnn_max_pool2d(fnn_tensor *out, const fnn_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, int ceil_mode) {
    int k[2] = {kh, kw}, s[2] = {sh, sw}, p[2] = {ph, pw};
    return max_pool(&MAX_POOL2D, out, x, 2, k, s, p, ceil_mode);
}

int fnn_max_pool3d(fnn_tensor *out, const fnn_tensor *x, int kd, int kh, int kw, int sd, int sh, int sw, int pd,
                   int ph, int pw, int ceil_mode) {
    int k[3] = {kd, kh, kw}, s[3] = {sd, sh, sw}, p[3] = {pd, ph, pw};
    return max_pool(&MAX_POOL3D, out, x, 3, k, s, p, ceil_mode);
}

/* ---- avg_pool1d, avg_pool2d, avg_pool3d ---- */

/* the sum of x [D,H,W] over a window, and d added to dx over one, in row-major order */
static inline float window_sum(const float *x, int64_t H, int64_t W, int64_t d0, int64_t d1, int64_t h0, int64_t h1,
                               int64_t w0, int64_t w1) {
    float s = 0;
    for (int64_t id = d0; id < d1; id++)
        for (int64_t ih = h0; ih < h1; ih++) {
            const float *xr = x + (id * H + ih) * W;
            for (int64_t iw = w0; iw < w1; iw++) s += xr[iw];
        }
    return s;
}
static inline void window_add(float *dx, int64_t H, int64_t W, int64_t d0, int64_t d1, int64_t h0, int64_t h1,
                              int64_t w0, int64_t w1, float d) {
    for (int64_t id = d0; id < d1; id++)
        for (int64_t ih = h0; ih < h1; ih++) {
            float *xr = dx + (id * H + ih) * W;
            for (int64_t iw = w0; iw < w1; iw++) xr[iw] += d;
        }
}

/* window ow along W: [*w0, *w1) inside the input, and its divisor, given the extents over D and H
 * multiplied: edh clipped to the padded input (count_include_pad), ndh to the input itself */
static inline float avg_w_window(int64_t ow, int64_t sw, int64_t pw, int64_t kw, int64_t W, bool include_pad,
                                 int64_t edh, int64_t ndh, int64_t *w0, int64_t *w1) {
    const int64_t start = ow * sw - pw, end = start + kw, padded_end = end < W + pw ? end : W + pw;
    *w0 = start < 0 ? 0 : start;
    *w1 = end < W ? end : W;
    return (float)(include_pad ? edh * (padded_end - start) : ndh * (*w1 - *w0));
}

/* one output row of an avg pool (the windows along W of depth rows [d0, d1) and rows [h0, h1)),
 * forward or, with grad, backward (each window's dy / divisor added over it); the W axis'
 * numbers in locals keep the loop's values in registers */
static inline void avg_row(const pool_geom *g, bool grad, const float *x, float *yr, float *dx, const float *dyr,
                           int64_t H, int64_t W, int64_t d0, int64_t d1, int64_t h0, int64_t h1, int64_t edh,
                           int64_t ndh) {
    const int64_t sw = g->s[2], pw = g->p[2], kw = g->k[2], Wo = g->out[2];
    const bool include_pad = g->count_include_pad;
    for (int64_t ow = 0; ow < Wo; ow++) {
        int64_t w0, w1;
        const float div = avg_w_window(ow, sw, pw, kw, W, include_pad, edh, ndh, &w0, &w1);
        if (grad) window_add(dx, H, W, d0, d1, h0, h1, w0, w1, dyr[ow] / div);
        else yr[ow] = window_sum(x, H, W, d0, d1, h0, h1, w0, w1) / div;
    }
}

/* planes [lo, hi): y [Do,Ho,Wo] = mean of each window of x [D,H,W] (each axis' window found once
 * per position along it) */
static void avg_forward_planes(void *ctx, int64_t plo, int64_t phi) {
    const pool_job *j = ctx;
    const pool_geom *g = j->g;
    const int64_t H = g->in[1], W = g->in[2], plane = g->in[0] * H * W;
    const int64_t Do = g->out[0], Ho = g->out[1], Wo = g->out[2], oplane = Do * Ho * Wo;
    for (int64_t p = plo; p < phi; p++) {
        const float *x = j->x + p * plane;
        float *y = j->y + p * oplane;
        if (g->fast) { avg_2x2_plane(x, y, W, Ho, Wo); continue; }
        for (int64_t od = 0; od < Do; od++) {
            int64_t d0, d1, ed = window(g, 0, od, &d0, &d1);
            for (int64_t oh = 0; oh < Ho; oh++) {
                int64_t h0, h1, eh = window(g, 1, oh, &h0, &h1);
                float *yr = y + (od * Ho + oh) * Wo;
                /* a plane of one depth (the 2-d pools) gets the depth loop compiled away */
                if (g->in[0] == 1) avg_row(g, false, x, yr, NULL, NULL, H, W, 0, 1, h0, h1, eh, h1 - h0);
                else avg_row(g, false, x, yr, NULL, NULL, H, W, d0, d1, h0, h1, ed * eh, (d1 - d0) * (h1 - h0));
            }
        }
    }
}

/* planes [lo, hi): dx [D,H,W] = each window's dy / divisor spread over the window */
static void avg_backward_planes(void *ctx, int64_t plo, int64_t phi) {
    const pool_job *j = ctx;
    const pool_geom *g = j->g;
    const int64_t H = g->in[1], W = g->in[2], plane = g->in[0] * H * W;
    const int64_t Do = g->out[0], Ho = g->out[1], Wo = g->out[2], oplane = Do * Ho * Wo;
    for (int64_t p = plo; p < phi; p++) {
        float *dx = j->dx + p * plane;
        const float *dy = j->dy + p * oplane;
        if (g->fast) { avg_2x2_plane_grad(dx, dy, H, W, Ho, Wo); continue; }
        memset(dx, 0, sizeof(float) * (size_t)plane);
        for (int64_t od = 0; od < Do; od++) {
            int64_t d0, d1, ed = window(g, 0, od, &d0, &d1);
            for (int64_t oh = 0; oh < Ho; oh++) {
                int64_t h0, h1, eh = window(g, 1, oh, &h0, &h1);
                const float *dyr = dy + (od * Ho + oh) * Wo;
                if (g->in[0] == 1) avg_row(g, true, NULL, NULL, dx, dyr, H, W, 0, 1, h0, h1, eh, h1 - h0);
                else avg_row(g, true, NULL, NULL, dx, dyr, H, W, d0, d1, h0, h1, ed * eh, (d1 - d0) * (h1 - h0));
            }
        }
    }
}

static const fnn_op_def AVG_POOL1D = {.info = {.name = "avg_pool1d", .family = "pool", .differentiable = 1},
    .backward = pool_rule};
static const fnn_op_def AVG_POOL2D = {.info = {.name = "avg_pool2d", .family = "pool", .differentiable = 1},
    .backward = pool_rule};
static const fnn_op_def AVG_POOL3D = {.info = {.name = "avg_pool3d", .family = "pool", .differentiable = 1},
    .backward = pool_rule};

static int avg_pool(const fnn_op_def *def, fnn_tensor *out, const fnn_tensor *x, int dims, const int *k,
                    const int *s, const int *p, int ceil_mode, int count_include_pad) {
    const fnn_pool_row *row;
    pool_geom g;
    FNN_TRY(pool_setup(def->info.name, &g, out, x, dims, k, s, p, ceil_mode, &row));
    g.count_include_pad = count_include_pad != 0;
    fnn_pool_args a = {.y = NULL};   /* row_forward points it (or yh) at out */
    pool_args_of(&a, &g);
    int rc = row_forward(row, x, out, &a);
    const fnn_tensor *ins[1] = {x};
    if (!rc && fnn_needs_node(1, ins)) {
        fnn_node *n = fnn_attach_node(out, def, 1, ins);
        if (!n) rc = fnn_last_status();
        else pool_record(n, &g);
    }
    if (rc) fnn_tensor_clear(out);
    return rc;
}

int fnn_avg_pool1d(fnn_tensor *out, const fnn_tensor *x, int k, int s, int p, int ceil_mode, int count_include_pad) {
    return avg_pool(&AVG_POOL1D, out, x, 1, &k, &s, &p, ceil_mode, count_include_pad);
}

int fnn_avg_pool2d(fnn_tensor *out, const fnn_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, int ceil_mode,
                   int count_include_pad) {
    int k[2] = {kh, kw}, s[2] = {sh, sw}, p[2] = {ph, pw};
    return avg_pool(&AVG_POOL2D, out, x, 2, k, s, p, ceil_mode, count_include_pad);
}

int fnn_avg_pool3d(fnn_tensor *out, const fnn_tensor *x, int kd, int kh, int kw, int sd, int sh, int sw, int pd,
                   int ph, int pw, int ceil_mode, int count_include_pad) {
    int k[3] = {kd, kh, kw}, s[3] = {sd, sh, sw}, p[3] = {pd, ph, pw};
    return avg_pool(&AVG_POOL3D, out, x, 3, k, s, p, ceil_mode, count_include_pad);
}

/* ================= adaptive_avg_pool2d: x [N,C,H,W] -> [N,C,oh,ow] ================= */

/* output i of n along an input of size L averages [floor(i L / n), ceil((i + 1) L / n)) */
static inline void adaptive_window(int64_t i, int64_t L, int64_t n, int64_t *lo, int64_t *hi) {
    *lo = i * L / n;
    *hi = ((i + 1) * L + n - 1) / n;
}

typedef struct {
    int64_t H, W, Ho, Wo;
    const float *x, *dy;
    float *y, *dx;
} adaptive_job;

static void adaptive_forward_planes(void *ctx, int64_t lo, int64_t hi) {
    const adaptive_job *j = ctx;
    const int64_t H = j->H, W = j->W, Ho = j->Ho, Wo = j->Wo;
    for (int64_t p = lo; p < hi; p++) {
        const float *x = j->x + p * H * W;
        float *y = j->y + p * Ho * Wo;
        int64_t h0, h1, w0, w1;   /* the window [h0, h1) x [w0, w1) of output (oy, ox) */
        for (int64_t oy = 0; oy < Ho; oy++) {
            adaptive_window(oy, H, Ho, &h0, &h1);
            for (int64_t ox = 0; ox < Wo; ox++) {
                adaptive_window(ox, W, Wo, &w0, &w1);
                float s = 0;
                for (int64_t iy = h0; iy < h1; iy++)
                    for (int64_t ix = w0; ix < w1; ix++) s += x[iy * W + ix];
                y[oy * Wo + ox] = s / (float)((h1 - h0) * (w1 - w0));
            }
        }
    }
}

/* dx: each window's dy / its area spread over the window (overlapping windows add) */
static void adaptive_backward_planes(void *ctx, int64_t lo, int64_t hi) {
    const adaptive_job *j = ctx;
    const int64_t H = j->H, W = j->W, Ho = j->Ho, Wo = j->Wo;
    for (int64_t p = lo; p < hi; p++) {
        float *dx = j->dx + p * H * W;
        const float *dy = j->dy + p * Ho * Wo;
        memset(dx, 0, sizeof(float) * (size_t)(H * W));
        int64_t h0, h1, w0, w1;   /* the window [h0, h1) x [w0, w1) of output (oy, ox) */
        for (int64_t oy = 0; oy < Ho; oy++) {
            adaptive_window(oy, H, Ho, &h0, &h1);
            for (int64_t ox = 0; ox < Wo; ox++) {
                adaptive_window(ox, W, Wo, &w0, &w1);
                float d = dy[oy * Wo + ox] / (float)((h1 - h0) * (w1 - w0));
                for (int64_t iy = h0; iy < h1; iy++)
                    for (int64_t ix = w0; ix < w1; ix++) dx[iy * W + ix] += d;
            }
        }
    }
}

/* the CPU's adaptive_avg_pool2d row */
static int adaptive_avg_pool_cpu(int ordinal, const fnn_pool_args *a) {
    (void)ordinal;
    adaptive_job j = {a->in[1], a->in[2], a->out[1], a->out[2], a->x, NULL, a->y, NULL};
    const int64_t planes = a->planes, H = j.H, W = j.W, oh = j.Ho, ow = j.Wo;
    int64_t work = planes * (H * W + oh * ow * ((H + oh - 1) / oh) * ((W + ow - 1) / ow));
    fnn_parallel_for(planes, fnn_threads_for(work), adaptive_forward_planes, &j);
    return FNN_STATUS_OK;
}
static int adaptive_avg_pool_grad_cpu(int ordinal, const fnn_pool_args *a) {
    (void)ordinal;
    adaptive_job j = {a->in[1], a->in[2], a->out[1], a->out[2], NULL, a->dy, NULL, a->dx};
    const int64_t planes = a->planes;
    /* each window's elements are visited once: about H*W + Ho*Wo per plane, more where they overlap */
    int64_t work = planes * (j.H * j.W + j.Ho * j.Wo * ((j.H + j.Ho - 1) / j.Ho) * ((j.W + j.Wo - 1) / j.Wo));
    fnn_parallel_for(planes, fnn_threads_for(work), adaptive_backward_planes, &j);
    return FNN_STATUS_OK;
}

static int adaptive_avg_pool2d_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    fnn_pool_args a = {.idx = NULL};
    node_sizes(&a, 2, n);
    return row_backward(n, dout, din, &a);
}
static const fnn_op_def ADAPTIVE_AVG_POOL2D = {.info = {.name = "adaptive_avg_pool2d", .family = "pool", .differentiable = 1},
    .backward = adaptive_avg_pool2d_rule};

int fnn_adaptive_avg_pool2d(fnn_tensor *out, const fnn_tensor *x, int64_t oh, int64_t ow) {
    const char *op = "adaptive_avg_pool2d";
    fnn_tensor_init(out);
    const fnn_pool_row *row;
    FNN_TRY(check_spatial(op, x, 2, &row));
    int nd = x->ndim;
    int64_t H = x->shape[nd - 2], W = x->shape[nd - 1];
    FNN_CHECK(oh >= 1 && ow >= 1, FNN_STATUS_ARG, "%s: output size %lldx%lld must be positive (input %s)", op,
              (long long)oh, (long long)ow, fnn_shape_of(x).s);
    FNN_CHECK(H >= 1 && W >= 1, FNN_STATUS_SHAPE, "%s: input %s has an empty %lldx%lld plane", op, fnn_shape_of(x).s,
              (long long)H, (long long)W);
    int64_t sp[3] = {1, oh, ow};
    FNN_TRY(new_spatial_output(out, x, 2, sp));
    fnn_pool_args a = {.y = fnn_data(out), .planes = fnn_numel_of(nd - 2, x->shape), .in = {1, H, W},
                       .out = {1, oh, ow}};
    int rc = row_forward(row, x, out, &a);
    const fnn_tensor *ins[1] = {x};
    if (!rc && fnn_needs_node(1, ins) && !fnn_attach_node(out, &ADAPTIVE_AVG_POOL2D, 1, ins)) rc = fnn_last_status();
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ================= upsampling ================= */

/* checks shared by the resizes, then the sizes (the planes, x's trailing dims and the requested
 * ones, as D, H, W) into g; out gets [..., size] */
static int resize_setup(const char *op, fnn_pool_args *g, fnn_tensor *out, const fnn_tensor *x, int dims,
                        const int64_t *size, const fnn_pool_row **row) {
    fnn_tensor_init(out);
    FNN_CHECK(dims >= 1 && dims <= 3, FNN_STATUS_ARG, "%s: %d spatial dims, expected 1, 2 or 3", op, dims);
    FNN_TRY(check_spatial(op, x, dims, row));
    spatial_of(dims, x->ndim, x->shape, g->in, &g->planes);
    bool positive = true;
    g->out[0] = g->out[1] = g->out[2] = 1;
    for (int i = 0; i < dims; i++) {
        g->out[3 - dims + i] = size[i];
        positive = positive && size[i] >= 1;
    }
    FNN_CHECK(g->in[0] >= 1 && g->in[1] >= 1 && g->in[2] >= 1, FNN_STATUS_SHAPE, "%s: input %s has an empty %s plane",
              op, fnn_shape_of(x).s, dims_str(dims, g->in).s);
    FNN_CHECK(positive, FNN_STATUS_ARG, "%s: output size %s of input %s is empty", op, dims_str(dims, g->out).s,
              fnn_shape_of(x).s);
    return new_spatial_output(out, x, dims, g->out);
}

/* ---- upsample_nearest: [..., D, H, W] -> [..., Do, Ho, Wo] ---- */

/* per axis: src[o] = floor(o * in / out), the input each output reads; and for the backward,
 * first[i] .. first[i + 1] - 1, the outputs that read input i (src is nondecreasing) */
typedef struct {
    int64_t *src[3], *first[3];
} nearest_maps;

static void nearest_fill(const fnn_pool_args *g, nearest_maps *m, int64_t *buf) {
    for (int a = 0; a < 3; a++) {
        const int64_t in = g->in[a], out = g->out[a];
        m->src[a] = buf; buf += out;
        m->first[a] = buf; buf += in + 1;
        for (int64_t o = 0; o < out; o++) m->src[a][o] = o * in / out;
        int64_t o = 0;
        for (int64_t i = 0; i <= in; i++) {
            while (o < out && m->src[a][o] < i) o++;
            m->first[a][i] = o;
        }
    }
}
static int64_t nearest_ints(const fnn_pool_args *g) {
    return g->in[0] + g->in[1] + g->in[2] + g->out[0] + g->out[1] + g->out[2] + 3;
}

typedef struct {
    const fnn_pool_args *g;
    nearest_maps m;
    int slots;
    const float *x, *dy;
    float *y, *dx, *rows;      /* rows: per slot, one output row of scratch (backward) */
} nearest_job;

/* output rows (plane, od, oh) of slot s: y[ow] = x[src row][src[ow]] */
static void nearest_forward_slot(void *ctx, int64_t s0, int64_t s1) {
    const nearest_job *j = ctx;
    const fnn_pool_args *g = j->g;
    const int64_t Do = g->out[0], Ho = g->out[1], Wo = g->out[2], D = g->in[0], H = g->in[1], W = g->in[2];
    const int64_t *sd = j->m.src[0], *sh = j->m.src[1], *sw = j->m.src[2];
    for (int64_t s = s0; s < s1; s++) {
        int64_t lo, hi;
        split_range(g->planes * Do * Ho, j->slots, s, &lo, &hi);
        for (int64_t u = lo; u < hi; u++) {
            int64_t p = u / (Do * Ho), od = u / Ho % Do, oh = u % Ho;
            const float *xr = j->x + ((p * D + sd[od]) * H + sh[oh]) * W;
            float *yr = j->y + u * Wo;
            for (int64_t ow = 0; ow < Wo; ow++) yr[ow] = xr[sw[ow]];
        }
    }
}

/* input rows (plane, id, ih) of slot s: t = the sum of the output rows that read this row, then
 * dx[iw] = the sum of t over the columns that read iw (zero where none does) */
static void nearest_backward_slot(void *ctx, int64_t s0, int64_t s1) {
    const nearest_job *j = ctx;
    const fnn_pool_args *g = j->g;
    const int64_t D = g->in[0], H = g->in[1], W = g->in[2], Do = g->out[0], Ho = g->out[1], Wo = g->out[2];
    const int64_t *fd = j->m.first[0], *fh = j->m.first[1], *fw = j->m.first[2];
    for (int64_t s = s0; s < s1; s++) {
        int64_t lo, hi;
        split_range(g->planes * D * H, j->slots, s, &lo, &hi);
        float *t = j->rows + s * Wo;
        for (int64_t u = lo; u < hi; u++) {
            int64_t p = u / (D * H), id = u / H % D, ih = u % H;
            float *dxr = j->dx + u * W;
            const float *src = NULL;
            int64_t count = 0;
            for (int64_t od = fd[id]; od < fd[id + 1]; od++)
                for (int64_t oh = fh[ih]; oh < fh[ih + 1]; oh++) {
                    const float *dyr = j->dy + ((p * Do + od) * Ho + oh) * Wo;
                    if (count == 0) src = dyr;
                    else {
                        if (count == 1) memcpy(t, src, sizeof(float) * (size_t)Wo);
                        for (int64_t ow = 0; ow < Wo; ow++) t[ow] += dyr[ow];
                        src = t;
                    }
                    count++;
                }
            if (count == 0) { memset(dxr, 0, sizeof(float) * (size_t)W); continue; }
            for (int64_t iw = 0; iw < W; iw++) {
                float acc = 0;
                for (int64_t ow = fw[iw]; ow < fw[iw + 1]; ow++) acc += src[ow];
                dxr[iw] = acc;
            }
        }
    }
}

/* run a resize kernel: scratch = the index maps (ints) then per-slot rows (floats) */
static int run_resize(int device, int64_t ints, int64_t floats_per_slot, int slots, void **block, int64_t *bytes,
                      int64_t **ibuf, float **rows) {
    *bytes = (int64_t)sizeof(int64_t) * ints + (int64_t)sizeof(float) * floats_per_slot * (slots > 0 ? slots : 1);
    *block = fnn_alloc(device, *bytes);
    if (!*block) return fnn_last_status();
    *ibuf = *block;
    *rows = (float *)(*ibuf + ints);
    return FNN_STATUS_OK;
}

/* the CPU's upsample_nearest row: the index maps in scratch */
static int upsample_nearest_cpu(int ordinal, const fnn_pool_args *a) {
    const fnn_pool_args *g = a;
    const int cpu = fnn_make_device(FNN_DEVICE_CPU, ordinal);
    int64_t units = g->planes * g->out[0] * g->out[1];
    nearest_job j = {g, {{NULL}, {NULL}}, slots_for(units, units * g->out[2]), a->x, NULL, a->y, NULL, NULL};
    void *block = NULL;
    int64_t bytes = 0, *ibuf = NULL;
    float *unused;
    FNN_TRY(run_resize(cpu, nearest_ints(g), 0, j.slots, &block, &bytes, &ibuf, &unused));
    nearest_fill(g, &j.m, ibuf);
    fnn_parallel_for(j.slots, j.slots, nearest_forward_slot, &j);
    fnn_free(cpu, block, bytes);
    return FNN_STATUS_OK;
}
/* its backward: the maps and a row per slot in scratch */
static int upsample_nearest_grad_cpu(int ordinal, const fnn_pool_args *a) {
    const fnn_pool_args *g = a;
    const int cpu = fnn_make_device(FNN_DEVICE_CPU, ordinal);
    int64_t units = g->planes * g->in[0] * g->in[1];
    int64_t nout = g->planes * g->out[0] * g->out[1] * g->out[2];
    nearest_job j = {g, {{NULL}, {NULL}}, slots_for(units, nout + g->planes * g->in[0] * g->in[1] * g->in[2]), NULL,
                     a->dy, NULL, a->dx, NULL};
    void *block = NULL;
    int64_t bytes = 0, *ibuf = NULL;
    FNN_TRY(run_resize(cpu, nearest_ints(g), g->out[2], j.slots, &block, &bytes, &ibuf, &j.rows));
    nearest_fill(g, &j.m, ibuf);
    fnn_parallel_for(j.slots, j.slots, nearest_backward_slot, &j);
    fnn_free(cpu, block, bytes);
    return FNN_STATUS_OK;
}

/* upsample_nearest: 1, 2 or 3 spatial dims (the shapes are the node's; upsample_nearest_attrs above) */

static int upsample_nearest_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    fnn_pool_args a = {.idx = NULL};
    node_sizes(&a, FNN_ATTRS(n, upsample_nearest_attrs)->dims, n);
    return row_backward(n, dout, din, &a);
}
static const fnn_op_def UPSAMPLE_NEAREST = {.info = {.name = "upsample_nearest", .family = "pool", .differentiable = 1},
    .backward = upsample_nearest_rule};

int fnn_upsample_nearest(fnn_tensor *out, const fnn_tensor *x, int dims, const int64_t *size) {
    const fnn_pool_row *row;
    fnn_pool_args a = {.idx = NULL};
    FNN_TRY(resize_setup("upsample_nearest", &a, out, x, dims, size, &row));
    a.y = fnn_data(out);
    int rc = row_forward(row, x, out, &a);
    const fnn_tensor *ins[1] = {x};
    if (!rc && fnn_needs_node(1, ins)) {
        fnn_node *n = fnn_attach_node(out, &UPSAMPLE_NEAREST, 1, ins);
        if (!n) rc = fnn_last_status();
        else FNN_ATTRS(n, upsample_nearest_attrs)->dims = dims;
    }
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* ---- upsample_bilinear2d: [..., H, W] -> [..., Ho, Wo] ---- */

/* one axis: output o blends inputs i0[o] and i1[o] (i1 = i0 + 1, or i0 at the last input) with
 * weights w0[o] + w1[o] = 1; the adjoint as lists: input i gets the sum over k in
 * first[i] .. first[i + 1] - 1 of wt[k] * dy[from[k]]. The same lists padded to K per input, laid
 * out by reader rank (entry r of input i at r * in + i: pfrom, pwt), so that a vector of inputs
 * reads its r-th readers together; a pad reads the zero one past the outputs (index out) with
 * weight 0, adding +0 after the real terms, which leaves every sum's bits as the lists give them.
 * Indices are 32-bit (the sizes are checked), the lanes' width in the shuffles below. */
typedef struct {
    int32_t *i0, *i1, *first, *from, *pfrom;
    float *w0, *w1, *wt, *pwt;
    int32_t K;
} linear_axis;

/* int32s and floats one axis needs */
static int64_t axis_ints(int64_t in, int64_t out, int64_t K) { return 2 * out + (in + 1) + 2 * out + K * in; }
static int64_t axis_floats(int64_t in, int64_t out, int64_t K) { return 2 * out + 2 * out + K * in; }

/* output o's inputs and second weight. PyTorch's source index in float: align_corners maps the
 * corner centres onto each other ((in - 1) / (out - 1), 0 for one output); otherwise half-pixel
 * centres, clamped at 0 */
static void axis_map(int64_t o, int64_t in, float scale, bool align_corners, int32_t *i0, int32_t *i1, float *w1) {
    float src = align_corners ? scale * (float)o : scale * ((float)o + 0.5f) - 0.5f;
    if (src < 0) src = 0;
    int64_t i = (int64_t)src;
    if (i > in - 1) i = in - 1;
    *i0 = (int32_t)i;
    *i1 = (int32_t)(i < in - 1 ? i + 1 : i);
    *w1 = src - (float)i;
}
/* the source index's step (IEEE division, as cuda/pool.cu's pool_linear_scale) */
static float axis_scale(int64_t in, int64_t out, bool align_corners) {
    return align_corners ? (out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f) : (float)in / (float)out;
}

/* the most readers of one input along an axis of in -> out (the padded lists' K, at least 1) */
static int32_t axis_readers(int64_t in, int64_t out, bool align_corners) {
    /* i0 and i1 are nondecreasing in o, so the readers of input i are a run: from the first o with
     * i1 >= i while i0 <= i */
    const float scale = axis_scale(in, out, align_corners);
    int32_t K = 1, a0, a1;
    float w;
    int64_t lo = 0;
    for (int64_t i = 0; i < in; i++) {
        while (lo < out && (axis_map(lo, in, scale, align_corners, &a0, &a1, &w), a1 < i)) lo++;
        int32_t run = 0;
        for (int64_t o = lo; o < out && (axis_map(o, in, scale, align_corners, &a0, &a1, &w), a0 <= i); o++) run++;
        if (run > K) K = run;
    }
    return K;
}

static void axis_fill(linear_axis *a, int64_t in, int64_t out, int32_t K, bool align_corners, int32_t **ib,
                      float **fb) {
    a->K = K;
    a->i0 = *ib; a->i1 = a->i0 + out; a->first = a->i1 + out; a->from = a->first + in + 1; a->pfrom = a->from + 2 * out;
    *ib = a->pfrom + (int64_t)K * in;
    a->w0 = *fb; a->w1 = a->w0 + out; a->wt = a->w1 + out; a->pwt = a->wt + 2 * out; *fb = a->pwt + (int64_t)K * in;
    const float scale = axis_scale(in, out, align_corners);
    for (int64_t o = 0; o < out; o++) {
        axis_map(o, in, scale, align_corners, &a->i0[o], &a->i1[o], &a->w1[o]);
        a->w0[o] = 1.0f - a->w1[o];
    }
    /* the lists: outputs read input i as i0 or i1, both nondecreasing in o, so each input's
     * readers are found in order by counting, then filling; an output with i0 == i1 is one entry */
    for (int64_t i = 0; i <= in; i++) a->first[i] = 0;
    for (int64_t o = 0; o < out; o++) {
        a->first[a->i0[o] + 1]++;
        if (a->i1[o] != a->i0[o]) a->first[a->i1[o] + 1]++;
    }
    for (int64_t i = 0; i < in; i++) a->first[i + 1] += a->first[i];
    /* fill in input order: input i's readers are the o with i1 = i (then w1) or i0 = i (w0) */
    int64_t k = 0, o0 = 0;
    for (int64_t i = 0; i < in; i++) {
        while (o0 < out && a->i1[o0] < i) o0++;
        for (int64_t o = o0; o < out && a->i0[o] <= i; o++) {
            if (a->i0[o] == i && a->i1[o] == i) { a->from[k] = (int32_t)o; a->wt[k++] = 1.0f; }
            else if (a->i0[o] == i) { a->from[k] = (int32_t)o; a->wt[k++] = a->w0[o]; }
            else if (a->i1[o] == i) { a->from[k] = (int32_t)o; a->wt[k++] = a->w1[o]; }
        }
    }
    for (int64_t i = 0; i < in; i++)
        for (int64_t r = 0; r < K; r++) {
            const int64_t e = a->first[i] + r;
            const bool real = e < a->first[i + 1];
            a->pfrom[r * in + i] = real ? a->from[e] : (int32_t)out;
            a->pwt[r * in + i] = real ? a->wt[e] : 0.0f;
        }
}

/* The W axis in vectors of 8 without gathers (slow where they exist: GCC does not emit them for
 * Intel since the GDS microcode): a block of 8 outputs (forward) or of 8 inputs' r-th readers
 * (backward) whose indices lie in a window of 16 consecutive floats takes its operands from two
 * loads and a two-vector shuffle (vpermi2ps; vpermps twice and a blend on AVX2). Blocks whose
 * indices spread wider (downsampling past 2), rows under 16 and the tails run the scalar loop. The
 * lanes compute what the scalar loop does, so the bits do not depend on the path. */
#define BIL_LANES 8
#define BIL_WINDOW 16
typedef float bil_v8 __attribute__((vector_size(32)));
typedef int32_t bil_i8 __attribute__((vector_size(32)));


typedef struct {
    int64_t nf, nb;           /* forward blocks Wo / 8, backward blocks W / 8 */
    int32_t *fbase;           /* [nf] window start in the input row, -1: scalar */
    int32_t *frel0, *frel1;   /* [nf * 8] i0, i1 less the window start */
    int32_t *bbase;           /* [K * nb] window start in t for readers of rank r, -1: scalar */
    int32_t *brel;            /* [K * W] reader less the window start (a pad: 0) */
} bil_plan;

static int64_t plan_ints(int64_t W, int64_t Wo, int64_t K) {
    return Wo / BIL_LANES + 2 * Wo + K * (W / BIL_LANES) + K * W;
}

static void plan_fill(bil_plan *pl, const linear_axis *a, int64_t W, int64_t Wo, int32_t **ib) {
    const int64_t K = a->K;
    const bool vectors = vectors8();
    pl->nf = Wo / BIL_LANES; pl->nb = W / BIL_LANES;
    pl->fbase = *ib; pl->frel0 = pl->fbase + pl->nf; pl->frel1 = pl->frel0 + Wo;
    pl->bbase = pl->frel1 + Wo; pl->brel = pl->bbase + K * pl->nb;
    *ib = pl->brel + K * W;
    for (int64_t f = 0; f < pl->nf; f++) {   /* i0 <= i1 are nondecreasing: the window is [i0 first, i1 last] */
        const int64_t o0 = f * BIL_LANES;
        int64_t base = a->i0[o0];
        if (base > W - BIL_WINDOW) base = W - BIL_WINDOW;
        const bool fits = vectors && base >= 0 && a->i1[o0 + BIL_LANES - 1] - base < BIL_WINDOW;
        pl->fbase[f] = fits ? (int32_t)base : -1;
        for (int64_t l = 0; l < BIL_LANES; l++) {
            pl->frel0[o0 + l] = fits ? (int32_t)(a->i0[o0 + l] - base) : 0;
            pl->frel1[o0 + l] = fits ? (int32_t)(a->i1[o0 + l] - base) : 0;
        }
    }
    for (int64_t r = 0; r < K; r++)
        for (int64_t b = 0; b < pl->nb; b++) {
            const int32_t *from = a->pfrom + r * W + b * BIL_LANES;
            int32_t lo = INT32_MAX, hi = -1;
            for (int64_t l = 0; l < BIL_LANES; l++)
                if (from[l] < Wo) { lo = from[l] < lo ? from[l] : lo; hi = from[l] > hi ? from[l] : hi; }
            const bool fits = vectors && (hi < 0 || hi - lo < BIL_WINDOW);
            pl->bbase[r * pl->nb + b] = fits ? (hi < 0 ? 0 : lo) : -1;
            for (int64_t l = 0; l < BIL_LANES; l++) pl->brel[r * W + b * BIL_LANES + l] = fits && from[l] < Wo ? from[l] - lo : 0;
        }
}

typedef struct {
    int64_t planes, H, W, Ho, Wo;
    linear_axis ah, aw;
    bil_plan plan;            /* the W axis in vectors */
    int slots;
    const float *x, *dy;
    float *y, *dx, *rows;     /* rows: per slot, two rows of Wo + 16 floats */
} bilinear_job;


/* row r of the input planes interpolated along W into buf [Wo] */
static inline void bilinear_hrow(const bilinear_job *j, int64_t r, float *restrict buf) {
    const float *restrict xr = j->x + r * j->W;
    const int32_t *restrict i0 = j->aw.i0, *restrict i1 = j->aw.i1;
    const float *restrict w0 = j->aw.w0, *restrict w1 = j->aw.w1;
    const bil_plan *pl = &j->plan;
    for (int64_t f = 0; f < pl->nf; f++) {
        const int64_t o0 = f * BIL_LANES;
        if (pl->fbase[f] < 0) {
            for (int64_t o = o0; o < o0 + BIL_LANES; o++) buf[o] = w0[o] * xr[i0[o]] + w1[o] * xr[i1[o]];
            continue;
        }
        bil_v8 lo, hi, u0, u1, v;
        bil_i8 k0, k1;
        VEC_LOAD(lo, xr + pl->fbase[f]); VEC_LOAD(hi, xr + pl->fbase[f] + BIL_LANES);
        VEC_LOAD(k0, pl->frel0 + o0); VEC_LOAD(k1, pl->frel1 + o0);
        VEC_LOAD(u0, w0 + o0); VEC_LOAD(u1, w1 + o0);
        v = u0 * VEC_SHUFFLE(lo, hi, k0) + u1 * VEC_SHUFFLE(lo, hi, k1);
        VEC_STORE(buf + o0, v);
    }
    for (int64_t o = pl->nf * BIL_LANES; o < j->Wo; o++) buf[o] = w0[o] * xr[i0[o]] + w1[o] * xr[i1[o]];
}

/* output rows (plane, oy) of slot s: y = h0 * row(i0) + h1 * row(i1), each row interpolated along W
 * once and kept while consecutive output rows read it (two rows of cache) */
static FNN_CLONES_V4 void bilinear_forward_slot(void *ctx, int64_t s0, int64_t s1) {
    const bilinear_job *j = ctx;
    const int64_t H = j->H, Ho = j->Ho, Wo = j->Wo;
    for (int64_t s = s0; s < s1; s++) {
        int64_t lo, hi;
        split_range(j->planes * Ho, j->slots, s, &lo, &hi);
        float *buf[2] = {j->rows + s * 2 * (Wo + BIL_WINDOW), j->rows + s * 2 * (Wo + BIL_WINDOW) + Wo + BIL_WINDOW};
        int64_t key[2] = {-1, -1};   /* input row (plane * H + i) each buffer holds */
        for (int64_t u = lo; u < hi; u++) {
            int64_t p = u / Ho, oy = u % Ho;
            int64_t k0 = p * H + j->ah.i0[oy], k1 = p * H + j->ah.i1[oy];
            const float *r[2];
            int64_t want[2] = {k0, k1};
            for (int t = 0; t < 2; t++) {
                int at = key[0] == want[t] ? 0 : key[1] == want[t] ? 1 : -1;
                if (at < 0) {   /* evict the buffer the other row does not need */
                    at = key[0] == want[1 - t] ? 1 : 0;
                    bilinear_hrow(j, want[t], buf[at]);
                    key[at] = want[t];
                }
                r[t] = buf[at];
            }
            const float a = j->ah.w0[oy], b = j->ah.w1[oy];
            const float *restrict r0 = r[0], *restrict r1 = r[1];
            float *restrict yr = j->y + u * Wo;
            for (int64_t o = 0; o < Wo; o++) yr[o] = a * r0[o] + b * r1[o];
        }
    }
}

/* dxr [W] = the weighted sum of t over the columns that read each input, the r-th readers of a
 * block of inputs at once (a pad, index Wo, adds +0: t[Wo] = 0 on the scalar path, masked in
 * vectors; a sum that starts at +0 never holds -0, so +0 leaves it as it is) */
static inline void bilinear_wsum(const bilinear_job *j, const float *restrict t, float *restrict dxr) {
    const int64_t W = j->W, K = j->aw.K;
    const bil_plan *pl = &j->plan;
    for (int64_t r = 0; r < K; r++) {
        const int32_t *restrict fr = j->aw.pfrom + r * W;
        const float *restrict wr = j->aw.pwt + r * W;
        for (int64_t b = 0; b < pl->nb; b++) {
            const int64_t i0 = b * BIL_LANES, base = pl->bbase[r * pl->nb + b];
            if (base < 0) {
                for (int64_t iw = i0; iw < i0 + BIL_LANES; iw++) dxr[iw] = (r ? dxr[iw] : 0.0f) + wr[iw] * t[fr[iw]];
                continue;
            }
            bil_v8 lo, hi, w, acc = {0};
            bil_i8 k, f;
            VEC_LOAD(lo, t + base); VEC_LOAD(hi, t + base + BIL_LANES);
            VEC_LOAD(w, wr + i0); VEC_LOAD(k, pl->brel + r * W + i0); VEC_LOAD(f, fr + i0);
            if (r) VEC_LOAD(acc, dxr + i0);
            acc += (bil_v8)((bil_i8)(w * VEC_SHUFFLE(lo, hi, k)) & (f < (int32_t)j->Wo));   /* a pad reads Wo */
            VEC_STORE(dxr + i0, acc);
        }
        for (int64_t iw = pl->nb * BIL_LANES; iw < W; iw++) dxr[iw] = (r ? dxr[iw] : 0.0f) + wr[iw] * t[fr[iw]];
    }
}

/* input rows (plane, i) of slot s: t [Wo] = the sum of the dy rows that read row i, weighted;
 * then dx[i] from t along W (bilinear_wsum), one row behind: the windows' loads then find t's
 * stores in cache, not in flight (an unaligned load across two pending stores waits for both) */
static FNN_CLONES_V4 void bilinear_backward_slot(void *ctx, int64_t s0, int64_t s1) {
    const bilinear_job *j = ctx;
    const int64_t H = j->H, W = j->W, Wo = j->Wo, Ho = j->Ho;
    const int32_t *hf = j->ah.first, *hfrom = j->ah.from;
    const float *hwt = j->ah.wt;
    for (int64_t s = s0; s < s1; s++) {
        int64_t lo, hi;
        split_range(j->planes * H, j->slots, s, &lo, &hi);
        float *tb[2] = {j->rows + s * 2 * (Wo + BIL_WINDOW), j->rows + s * 2 * (Wo + BIL_WINDOW) + Wo + BIL_WINDOW};
        for (int64_t o = Wo; o < Wo + BIL_WINDOW; o++) tb[0][o] = tb[1][o] = 0.0f;   /* the pads' reader, the windows' tail */
        int cur = 0;
        int64_t pending = -1;   /* the row whose t waits in tb[cur ^ 1] */
        for (int64_t u = lo; u < hi; u++) {
            int64_t p = u / H, i = u % H;
            if (hf[i] == hf[i + 1]) { memset(j->dx + u * W, 0, sizeof(float) * (size_t)W); continue; }
            float *restrict t = tb[cur];
            for (int64_t k = hf[i]; k < hf[i + 1]; k++) {
                const float *restrict dyr = j->dy + (p * Ho + hfrom[k]) * Wo;
                const float c = hwt[k];
                if (k == hf[i]) for (int64_t o = 0; o < Wo; o++) t[o] = c * dyr[o];
                else for (int64_t o = 0; o < Wo; o++) t[o] += c * dyr[o];
            }
            if (pending >= 0) bilinear_wsum(j, tb[cur ^ 1], j->dx + pending * W);
            pending = u;
            cur ^= 1;
        }
        if (pending >= 0) bilinear_wsum(j, tb[cur ^ 1], j->dx + pending * W);
    }
}

/* scratch of a bilinear job: both axes' maps, the W axis' plan, then two rows per slot; the maps'
 * 32-bit indices bound the sizes */
static int bilinear_scratch(bilinear_job *j, int device, bool align_corners, void **block, int64_t *bytes) {
    const int64_t lim = INT32_MAX / 4;
    FNN_CHECK(j->H <= lim && j->W <= lim && j->Ho <= lim && j->Wo <= lim, FNN_STATUS_SHAPE,
              "upsample_bilinear2d: plane %lldx%lld -> %lldx%lld has a side past %lld", (long long)j->H,
              (long long)j->W, (long long)j->Ho, (long long)j->Wo, (long long)lim);
    const int32_t kw = axis_readers(j->W, j->Wo, align_corners);   /* rows sum through the lists: no pads */
    int64_t ints = axis_ints(j->H, j->Ho, 0) + axis_ints(j->W, j->Wo, kw) + plan_ints(j->W, j->Wo, kw);
    int64_t floats = axis_floats(j->H, j->Ho, 0) + axis_floats(j->W, j->Wo, kw);
    *bytes = (int64_t)sizeof(int32_t) * ints +
             (int64_t)sizeof(float) * (floats + 2 * (j->Wo + BIL_WINDOW) * (j->slots > 0 ? j->slots : 1));
    *block = fnn_alloc(device, *bytes);
    if (!*block) return fnn_last_status();
    int32_t *ib = *block;
    float *fb = (float *)(ib + ints);
    axis_fill(&j->ah, j->H, j->Ho, 0, align_corners, &ib, &fb);
    axis_fill(&j->aw, j->W, j->Wo, kw, align_corners, &ib, &fb);
    plan_fill(&j->plan, &j->aw, j->W, j->Wo, &ib);
    j->rows = fb;
    return FNN_STATUS_OK;
}

/* the CPU's upsample_bilinear2d row: both axes' maps and two rows per slot in scratch */
static int upsample_bilinear_cpu(int ordinal, const fnn_pool_args *a) {
    const int cpu = fnn_make_device(FNN_DEVICE_CPU, ordinal);
    bilinear_job j = {a->planes, a->in[1], a->in[2], a->out[1], a->out[2], {0}, {0}, {0}, 0, a->x, NULL, a->y, NULL, NULL};
    j.slots = slots_for(j.planes * j.Ho, j.planes * 3 * j.Ho * j.Wo);
    void *block = NULL;
    int64_t bytes = 0;
    FNN_TRY(bilinear_scratch(&j, cpu, a->align_corners != 0, &block, &bytes));
    fnn_parallel_for(j.slots, j.slots, bilinear_forward_slot, &j);
    fnn_free(cpu, block, bytes);
    return FNN_STATUS_OK;
}
static int upsample_bilinear_grad_cpu(int ordinal, const fnn_pool_args *a) {
    const int cpu = fnn_make_device(FNN_DEVICE_CPU, ordinal);
    bilinear_job j = {a->planes, a->in[1], a->in[2], a->out[1], a->out[2], {0}, {0}, {0}, 0, NULL, a->dy, NULL, a->dx, NULL};
    j.slots = slots_for(j.planes * j.H, j.planes * (3 * j.Ho * j.Wo + j.H * j.W));
    void *block = NULL;
    int64_t bytes = 0;
    FNN_TRY(bilinear_scratch(&j, cpu, a->align_corners != 0, &block, &bytes));
    fnn_parallel_for(j.slots, j.slots, bilinear_backward_slot, &j);
    fnn_free(cpu, block, bytes);
    return FNN_STATUS_OK;
}

/* upsample_bilinear2d: the corners' alignment (the shapes are the node's; upsample_bilinear_attrs above) */
static int upsample_bilinear2d_rule(fnn_node *n, const fnn_tensor *dout, fnn_tensor *din) {
    fnn_pool_args a = {.align_corners = FNN_ATTRS(n, upsample_bilinear_attrs)->align_corners};
    node_sizes(&a, 2, n);
    return row_backward(n, dout, din, &a);
}
static const fnn_op_def UPSAMPLE_BILINEAR2D = {.info = {.name = "upsample_bilinear2d", .family = "pool", .differentiable = 1},
    .backward = upsample_bilinear2d_rule};

int fnn_upsample_bilinear2d(fnn_tensor *out, const fnn_tensor *x, int64_t oh, int64_t ow, int align_corners) {
    int64_t size[2] = {oh, ow};
    const fnn_pool_row *row;
    fnn_pool_args a = {.align_corners = align_corners != 0};
    FNN_TRY(resize_setup("upsample_bilinear2d", &a, out, x, 2, size, &row));
    a.y = fnn_data(out);
    int rc = row_forward(row, x, out, &a);
    const fnn_tensor *ins[1] = {x};
    if (!rc && fnn_needs_node(1, ins)) {
        fnn_node *n = fnn_attach_node(out, &UPSAMPLE_BILINEAR2D, 1, ins);
        if (!n) rc = fnn_last_status();
        else FNN_ATTRS(n, upsample_bilinear_attrs)->align_corners = align_corners != 0;
    }
    if (rc) fnn_tensor_clear(out);
    return rc;
}

/* The CPU's rows: every op of the family (the CUDA rows: cuda/pool.cu); the max and avg pools take
 * bfloat16 too (forward_bf16), the others float32 only. The 1-d, 2-d and 3-d pools
 * share their kernels, the geometry telling them apart. */
/* the CPU rows of max and avg pool: the shared drivers with each kind's plane functions */
static int max_pool_cpu(int ord, const fnn_pool_args *a) { (void)ord; return pool_forward_cpu(a, max_forward_planes); }
static int max_pool_grad_cpu(int ord, const fnn_pool_args *a) { (void)ord; return pool_grad_cpu(a, max_backward_planes); }
static int avg_pool_cpu(int ord, const fnn_pool_args *a) { (void)ord; return pool_forward_cpu(a, avg_forward_planes); }
static int avg_pool_grad_cpu(int ord, const fnn_pool_args *a) { (void)ord; return pool_grad_cpu(a, avg_backward_planes); }
static int max_pool_bf16_cpu(int ord, const fnn_pool_args *a) { (void)ord; return pool_forward_bf16_cpu(a, max_forward_planes); }
static int avg_pool_bf16_cpu(int ord, const fnn_pool_args *a) { (void)ord; return pool_forward_bf16_cpu(a, avg_forward_planes); }

const fnn_pool_row fnn_cpu_pool_rows[] = {
    {"max_pool1d", max_pool_cpu, max_pool_grad_cpu, max_pool_bf16_cpu},
    {"max_pool2d", max_pool_cpu, max_pool_grad_cpu, max_pool_bf16_cpu},
    {"max_pool3d", max_pool_cpu, max_pool_grad_cpu, max_pool_bf16_cpu},
    {"avg_pool1d", avg_pool_cpu, avg_pool_grad_cpu, avg_pool_bf16_cpu},
    {"avg_pool2d", avg_pool_cpu, avg_pool_grad_cpu, avg_pool_bf16_cpu},
    {"avg_pool3d", avg_pool_cpu, avg_pool_grad_cpu, avg_pool_bf16_cpu},
    {"adaptive_avg_pool2d", adaptive_avg_pool_cpu, adaptive_avg_pool_grad_cpu, NULL},
    {"upsample_nearest", upsample_nearest_cpu, upsample_nearest_grad_cpu, NULL},
    {"upsample_bilinear2d", upsample_bilinear_cpu, upsample_bilinear_grad_cpu, NULL},
    {NULL, NULL, NULL, NULL},
};

const fnn_op_def *const fnn_ops_pool[] = {&MAX_POOL1D, &MAX_POOL2D, &MAX_POOL3D, &AVG_POOL1D, &AVG_POOL2D,
                                          &AVG_POOL3D, &ADAPTIVE_AVG_POOL2D, &UPSAMPLE_NEAREST, &UPSAMPLE_BILINEAR2D, NULL};
