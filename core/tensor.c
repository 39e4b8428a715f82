/* tensor.c: tensor headers (lifecycle, views), creation ops, reading values,
 * and the shape helpers every op family uses (dims, broadcasting, outputs). */
#include "bf16.h"
#include "internal.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- lifecycle ---- */
/* an empty header holds nothing; the other fields are only read once ndim >= 0 */
void fnn_tensor_init(fnn_tensor *t) {
    t->ndim = -1;
    t->device = 0;
    t->offset = 0;
    t->storage = NULL;
    t->node = NULL;
    t->output_index = 0;
    t->freed = 0;
    t->dtype = FNN_DTYPE_FLOAT32;
    t->reserved = 0;
}

void fnn_tensor_clear(fnn_tensor *t) {
    if (!t) return;
    fnn_storage_release(t->storage);
    if (t->node) fnn_node_release(t->node);
    fnn_tensor_init(t);
}

void fnn_tensor_free(fnn_tensor *t) {
    if (!t || t->ndim < 0) return;
    fnn_storage_release(t->storage);
    t->storage = NULL;
    if (t->node) fnn_node_release(t->node);
    t->node = NULL;
    t->freed = 1;
}

int fnn_tensor_needs_clear(const fnn_tensor *t) { return t->storage != NULL || t->node != NULL; }

int fnn_tensor_ref(fnn_tensor *out, const fnn_tensor *t) {
    FNN_TRY(fnn_check_input_any("ref", t));
    memcpy(out, t, sizeof *out);
    if (out->storage) fnn_storage_retain(out->storage);
    if (out->node) fnn_node_retain(out->node);
    return FNN_STATUS_OK;
}

int64_t fnn_numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}
int64_t fnn_tensor_numel(const fnn_tensor *t) { return t->ndim < 0 ? 0 : fnn_numel_of(t->ndim, t->shape); }

void fnn_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) { stride[i] = s; s *= shape[i] > 0 ? shape[i] : 1; }
}

int fnn_tensor_is_contiguous(const fnn_tensor *t) {
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->stride[i] != s) return 0;
        s *= t->shape[i];
    }
    return 1;
}

const float *fnn_tensor_data(const fnn_tensor *t) {
    if (t->ndim < 0 || t->freed || t->dtype != FNN_DTYPE_FLOAT32) return NULL;
    return fnn_data(t);
}

const char *fnn_dtype_name(int dtype) {
    switch (dtype) {
    case FNN_DTYPE_FLOAT32: return "float32";
    case FNN_DTYPE_INT64: return "int64";
    case FNN_DTYPE_BFLOAT16: return "bfloat16";
    default: return "unknown";
    }
}
int fnn_dtype_size(int dtype) {
    switch (dtype) {
    case FNN_DTYPE_FLOAT32: return 4;
    case FNN_DTYPE_INT64: return 8;
    case FNN_DTYPE_BFLOAT16: return 2;
    default: return 0;
    }
}
_Static_assert(offsetof(fnn_tensor, small) % 8 == 0, "inline data must be 8-aligned for int64");
_Static_assert(sizeof(((fnn_tensor *)0)->small) == FNN_INLINE_BYTES, "inline data is FNN_INLINE_BYTES");
const void *fnn_tensor_storage_id(const fnn_tensor *t) { return t->storage ? (const void *)t->storage : (const void *)t; }

int fnn_check_input_any(const char *op, const fnn_tensor *t) {
    fnn_set_op(op);
    FNN_CHECK(t != NULL, FNN_STATUS_ARG, "%s: expected a tensor, got nil", op);
    FNN_CHECK(!t->freed, FNN_STATUS_ARG, "%s: tensor was freed", op);
    FNN_CHECK(t->ndim >= 0 && t->ndim <= FNN_MAX_DIMS, FNN_STATUS_ARG, "%s: tensor is empty (never set)", op);
    FNN_CHECK(fnn_dtype_size(t->dtype) > 0, FNN_STATUS_ARG, "%s: tensor %s has unknown dtype code %d", op,
              fnn_shape_of(t).s, (int)t->dtype);
    return FNN_STATUS_OK;
}

int fnn_check_input(const char *op, const fnn_tensor *t) {
    FNN_TRY(fnn_check_input_any(op, t));
    FNN_CHECK(t->dtype == FNN_DTYPE_FLOAT32, FNN_STATUS_ARG,
              "%s: expected a float32 tensor, got %s %s tensor %s; convert it with :float()", op,
              t->dtype == FNN_DTYPE_INT64 ? "an" : "a", fnn_dtype_name(t->dtype), fnn_shape_of(t).s);
    return FNN_STATUS_OK;
}

int fnn_check_same_dtype(const char *op, const fnn_tensor *a, const fnn_tensor *b) {
    FNN_CHECK(a->dtype == b->dtype, FNN_STATUS_ARG,
              "%s: tensors of different dtypes (%s %s and %s %s); convert one with :float() or :long()", op,
              fnn_shape_of(a).s, fnn_dtype_name(a->dtype), fnn_shape_of(b).s, fnn_dtype_name(b->dtype));
    return FNN_STATUS_OK;
}

int fnn_check_index(const char *op, const char *what, const fnn_tensor *index) {
    FNN_TRY(fnn_check_input_any(op, index));
    FNN_CHECK(fnn_device_type_of(index->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "%s: %s %s is on a GPU; indices are read on the CPU", op, what, fnn_shape_of(index).s);
    return FNN_STATUS_OK;
}

int fnn_index_at(const char *op, const fnn_tensor *index, int64_t off, int64_t size, int dim, const fnn_tensor *x,
                 int64_t *pos) {
    if (index->dtype == FNN_DTYPE_INT64) {
        int64_t v = fnn_data_i64(index)[off];
        if (v >= 1 && v <= size) { *pos = v - 1; return FNN_STATUS_OK; }
        return FNN_FAIL(FNN_STATUS_ARG, "%s: index %lld outside 1..%lld in dim %d of %s", op, (long long)v,
                        (long long)size, dim + 1, fnn_shape_of(x).s);
    }
    float v = fnn_data(index)[off];
    /* (float)size rounds up past 2^24, so the position is checked again after the conversion */
    if (v >= 1.0f && v <= (float)size && v == floorf(v) && (int64_t)v <= size) {
        *pos = (int64_t)v - 1;
        return FNN_STATUS_OK;
    }
    if (v == floorf(v) || isnan(v) || isinf(v))
        return FNN_FAIL(FNN_STATUS_ARG, "%s: index %g outside 1..%lld in dim %d of %s", op, (double)v,
                        (long long)size, dim + 1, fnn_shape_of(x).s);
    return FNN_FAIL(FNN_STATUS_ARG, "%s: index %g is not a whole number (dim %d of %s)", op, (double)v, dim + 1,
                    fnn_shape_of(x).s);
}

int fnn_check_same_device(const char *op, const fnn_tensor *a, const fnn_tensor *b) {
    if (a->device == b->device) return FNN_STATUS_OK;
    char da[32], db[32];
    return FNN_FAIL(FNN_STATUS_DEVICE, "%s: tensors on different devices (%s %s and %s %s); move one with :to()",
                    op, fnn_shape_of(a).s, fnn_device_name(a->device, da, 32),
                    fnn_shape_of(b).s, fnn_device_name(b->device, db, 32));
}

int fnn_new_output(fnn_tensor *out, int device, int ndim, const int64_t *shape) {
    return fnn_new_output_dtype(out, device, FNN_DTYPE_FLOAT32, ndim, shape);
}

int fnn_new_output_dtype(fnn_tensor *out, int device, int dtype, int ndim, const int64_t *shape) {
    int esize = fnn_dtype_size(dtype);
    FNN_CHECK(esize > 0, FNN_STATUS_ARG, "tensor: unknown dtype code %d", dtype);
    FNN_CHECK(ndim >= 0 && ndim <= FNN_MAX_DIMS, FNN_STATUS_SHAPE,
              "tensor: %d dims, at most %d supported", ndim, FNN_MAX_DIMS);
    int64_t n = 1;
    double need = esize;   /* in double: the product may pass int64 */
    double span = 1;       /* what the strides multiply up to, a size 0 counted as 1 */
    for (int i = 0; i < ndim; i++) {
        FNN_CHECK(shape[i] >= 0, FNN_STATUS_SHAPE, "tensor: negative size %lld in %s",
                  (long long)shape[i], fnn_shape_dims(ndim, shape).s);
        need *= (double)shape[i];
        span *= shape[i] > 0 ? (double)shape[i] : 1.0;
    }
    /* with a size 0 the count is 0 whatever the others are, but the strides still multiply them */
    FNN_CHECK(span < 4611686018427387904.0, FNN_STATUS_SHAPE, "tensor: sizes %s multiply past 2^62 (strides overflow)",
              fnn_shape_dims(ndim, shape).s);
    /* past 2^40 bytes no machine here has the memory: refused before the OS is asked */
    if (need > (double)((int64_t)1 << 40)) return fnn_alloc_failed(device, need, "too large to allocate");
    for (int i = 0; i < ndim; i++) n *= shape[i];
    fnn_tensor_init(out);
    if (fnn_device_type_of(device) != FNN_DEVICE_CPU || n * esize > FNN_INLINE_BYTES) {
        fnn_storage *s = fnn_storage_new(device, n * (int64_t)esize);
        if (!s) return fnn_last_status();
        out->storage = s;
    }
    out->ndim = ndim;
    out->device = device;
    out->dtype = dtype;
    if (ndim > 0) memcpy(out->shape, shape, sizeof(int64_t) * (size_t)ndim);
    fnn_contiguous_strides(ndim, shape, out->stride);
    return FNN_STATUS_OK;
}

int fnn_make_view(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape,
                  const int64_t *stride, int64_t offset) {
    fnn_tensor_init(out);
    out->ndim = ndim;
    out->device = x->device;
    out->dtype = x->dtype;
    if (ndim > 0) {
        memcpy(out->shape, shape, sizeof(int64_t) * (size_t)ndim);
        memcpy(out->stride, stride, sizeof(int64_t) * (size_t)ndim);
    }
    out->offset = offset;
    out->storage = x->storage;
    if (out->storage) fnn_storage_retain(out->storage);
    else memcpy(out->small, x->small, sizeof out->small);  /* inline data is copied: tensors are immutable */
    return FNN_STATUS_OK;
}

/* the views narrow and select make, without checks or a node (view.c's ops check and record; cat's and
 * stack's backward rules slice their gradient with them) */
int fnn_narrow_view(fnn_tensor *out, const fnn_tensor *x, int d, int64_t start, int64_t length) {
    int64_t shape[FNN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = length;
    return fnn_make_view(out, x, x->ndim, shape, x->stride, x->offset + start * x->stride[d]);
}
int fnn_select_view(fnn_tensor *out, const fnn_tensor *x, int d, int64_t i) {
    int64_t shape[FNN_MAX_DIMS], stride[FNN_MAX_DIMS];
    for (int k = 0, j = 0; k < x->ndim; k++) {
        if (k == d) continue;
        shape[j] = x->shape[k];
        stride[j++] = x->stride[k];
    }
    return fnn_make_view(out, x, x->ndim - 1, shape, stride, x->offset + i * x->stride[d]);
}

/* ---- strided copy into a contiguous buffer ---- */

/* [rows, cols] with source strides (rs, 1-not-required cs): 32x32 tiles, so a transposed
 * source (cs large, rs == 1) is read in cache-friendly blocks */
static void copy_tiled_2d(float *dst, const float *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    enum { TILE = 32 };
    for (int64_t i0 = 0; i0 < rows; i0 += TILE)
        for (int64_t j0 = 0; j0 < cols; j0 += TILE) {
            int64_t i1 = i0 + TILE < rows ? i0 + TILE : rows, j1 = j0 + TILE < cols ? j0 + TILE : cols;
            for (int64_t i = i0; i < i1; i++)
                for (int64_t j = j0; j < j1; j++) dst[i * cols + j] = src[i * rs + j * cs];
        }
}

static void strided_copy_f32(float *dst, const float *src, int ndim, const int64_t *shape, const int64_t *stride) {
    if (ndim == 0) { dst[0] = src[0]; return; }
    int64_t n = fnn_numel_of(ndim, shape);
    if (n == 0) return;
    int64_t inner = shape[ndim - 1], is = stride[ndim - 1];
    /* transposed last two dims: copy each [rows, cols] plane in tiles */
    if (ndim >= 2 && is != 1 && stride[ndim - 2] == 1 && inner >= 8 && shape[ndim - 2] >= 8) {
        int64_t rows = shape[ndim - 2], plane = rows * inner;
        int64_t idx[FNN_MAX_DIMS] = {0};
        for (int64_t done = 0; done < n; done += plane) {
            int64_t off = 0;
            for (int d = 0; d < ndim - 2; d++) off += idx[d] * stride[d];
            copy_tiled_2d(dst + done, src + off, rows, inner, stride[ndim - 2], is);
            for (int d = ndim - 3; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
        }
        return;
    }
    int64_t idx[FNN_MAX_DIMS] = {0};
    for (int64_t done = 0; done < n; done += inner) {
        int64_t off = 0;
        for (int d = 0; d < ndim - 1; d++) off += idx[d] * stride[d];
        const float *s = src + off;
        if (is == 1) memcpy(dst + done, s, sizeof(float) * (size_t)inner);
        else for (int64_t i = 0; i < inner; i++) dst[done + i] = s[i * is];
        for (int d = ndim - 2; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
    }
}

/* int64 elements (indices: copied rarely and in small amounts, so one plain loop) */
static void strided_copy_i64(int64_t *dst, const int64_t *src, int ndim, const int64_t *shape, const int64_t *stride) {
    int64_t n = fnn_numel_of(ndim, shape), idx[FNN_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < ndim; d++) off += idx[d] * stride[d];
        dst[k] = src[off];
        for (int d = ndim - 1; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
    }
}

/* 2-byte elements (bfloat16) */
static void strided_copy_u16(uint16_t *dst, const uint16_t *src, int ndim, const int64_t *shape, const int64_t *stride) {
    int64_t n = fnn_numel_of(ndim, shape), idx[FNN_MAX_DIMS] = {0};
    if (ndim == 0) { if (n) dst[0] = src[0]; return; }
    int64_t inner = shape[ndim - 1], is = stride[ndim - 1];
    for (int64_t k = 0; k < n; k += inner) {
        int64_t off = 0;
        for (int d = 0; d < ndim - 1; d++) off += idx[d] * stride[d];
        if (is == 1) memcpy(dst + k, src + off, sizeof(uint16_t) * (size_t)inner);   /* dense rows: a view's */
        else for (int64_t i = 0; i < inner; i++) dst[k + i] = src[off + i * is];
        for (int d = ndim - 2; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
    }
}

void fnn_strided_copy(void *dst, const void *src, int esize, int ndim, const int64_t *shape, const int64_t *stride) {
    if (esize == 8) strided_copy_i64(dst, src, ndim, shape, stride);
    else if (esize == 2) strided_copy_u16(dst, src, ndim, shape, stride);
    else strided_copy_f32(dst, src, ndim, shape, stride);
}

int fnn_materialize(fnn_tensor *out, const fnn_tensor *x) {
    if (fnn_device_type_of(x->device) != FNN_DEVICE_CPU) {   /* a device-side copy (cuda/copy.cu) */
        const fnn_backend *be = fnn_backend_for(x->device);
        if (!be || !be->strided_copy) return FNN_ROW_REFUSED("contiguous", x->device, false);
        FNN_TRY(fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, x->shape));
        int rc = be->strided_copy(fnn_device_ordinal(x->device), fnn_bytes(out), fnn_bytes(x), fnn_elem_size(x),
                                  x->ndim, x->shape, x->stride);
        if (rc) fnn_tensor_clear(out);
        return rc;
    }
    FNN_TRY(fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, x->shape));
    fnn_strided_copy(fnn_bytes(out), fnn_bytes(x), fnn_elem_size(x), x->ndim, x->shape, x->stride);
    return FNN_STATUS_OK;
}

const void *fnn_contiguous_bytes(const fnn_tensor *x, fnn_tensor *tmp, int *rc) {
    fnn_tensor_init(tmp);
    *rc = FNN_STATUS_OK;
    if (fnn_tensor_is_contiguous(x)) return fnn_bytes(x);
    *rc = fnn_materialize(tmp, x);
    return *rc ? NULL : fnn_bytes(tmp);
}
const float *fnn_contiguous_data(const fnn_tensor *x, fnn_tensor *tmp, int *rc) {
    return fnn_contiguous_bytes(x, tmp, rc);
}

/* ---- dims and broadcasting ---- */
int fnn_wrap_dim(const char *op, const fnn_tensor *x, int dim, int ndim_plus, int *out_dim) {
    int n = x->ndim + ndim_plus;
    int d = dim < 0 ? dim + n : dim;
    if (d < 0 || d >= n || n == 0)
        return FNN_FAIL(FNN_STATUS_ARG, "%s: dim %d out of range for %s (dims are 1..%d or -%d..-1)",
                        op, dim >= 0 ? dim + 1 : dim, fnn_shape_of(x).s, n, n);
    *out_dim = d;
    return FNN_STATUS_OK;
}

int fnn_broadcast_shapes(const char *op, int na, const int64_t *sa, int nb, const int64_t *sb,
                         int *nout, int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t x = i < n - na ? 1 : sa[i - (n - na)];
        int64_t y = i < n - nb ? 1 : sb[i - (n - nb)];
        if (x != y && x != 1 && y != 1)
            return FNN_FAIL(FNN_STATUS_SHAPE, "%s: shapes %s and %s do not broadcast (dim %d: %lld vs %lld)",
                            op, fnn_shape_dims(na, sa).s, fnn_shape_dims(nb, sb).s, i + 1,
                            (long long)x, (long long)y);
        out[i] = x == 1 ? y : x;
    }
    *nout = n;
    return FNN_STATUS_OK;
}

void fnn_broadcast_strides(const fnn_tensor *t, int nout, const int64_t *out_shape, int64_t *stride) {
    int lead = nout - t->ndim;
    for (int i = 0; i < nout; i++) {
        if (i < lead) stride[i] = 0;
        else stride[i] = (t->shape[i - lead] == 1 && out_shape[i] != 1) ? 0 : t->stride[i - lead];
    }
}

/* ---- creation ----
 * Each public creator names itself (fnn_set_op) for out-of-memory errors; creators built on others
 * call the static fillers, so the name stays the one the caller used. */
static int empty_as(const char *op, fnn_tensor *out, int ndim, const int64_t *shape, int dtype) {
    fnn_set_op(op);
    return fnn_new_output_dtype(out, fnn_make_device(FNN_DEVICE_CPU, 0), dtype, ndim, shape);
}
int fnn_empty(fnn_tensor *out, int ndim, const int64_t *shape) {
    return empty_as("empty", out, ndim, shape, FNN_DTYPE_FLOAT32);
}
int fnn_empty_dtype(fnn_tensor *out, int ndim, const int64_t *shape, int dtype) {
    return empty_as("empty", out, ndim, shape, dtype);
}

float *fnn_tensor_mutable_data(fnn_tensor *t) {
    return (t->ndim < 0 || t->freed || t->dtype != FNN_DTYPE_FLOAT32) ? NULL : fnn_data(t);
}

int fnn_whole_number(const char *op, double v, int64_t pos, const char *where, int64_t *out) {
    if (v == floor(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0) {
        *out = (int64_t)v;
        return FNN_STATUS_OK;
    }
    if (v != v)
        return FNN_FAIL(FNN_STATUS_ARG, "%s: element %lld of %s is nan, which int64 cannot hold", op,
                        (long long)pos + 1, where);
    if (v == floor(v))
        return FNN_FAIL(FNN_STATUS_ARG, "%s: element %lld of %s is %g, outside the int64 range", op,
                        (long long)pos + 1, where, v);
    return FNN_FAIL(FNN_STATUS_ARG, "%s: element %lld of %s is %.17g, not a whole number (int64 holds whole numbers)",
                    op, (long long)pos + 1, where, v);
}

int fnn_tensor_from_int64(fnn_tensor *out, int ndim, const int64_t *shape, const int64_t *data) {
    FNN_TRY(empty_as("tensor", out, ndim, shape, FNN_DTYPE_INT64));
    memcpy(fnn_data_i64(out), data, sizeof(int64_t) * (size_t)fnn_numel_of(ndim, shape));
    return FNN_STATUS_OK;
}

int fnn_tensor_from_doubles_dtype(fnn_tensor *out, int ndim, const int64_t *shape, const double *data, int dtype) {
    if (dtype == FNN_DTYPE_FLOAT32) return fnn_tensor_from_doubles(out, ndim, shape, data);
    FNN_TRY(empty_as("tensor", out, ndim, shape, dtype));
    if (dtype == FNN_DTYPE_BFLOAT16) {
        uint16_t *y = fnn_bytes(out);
        for (int64_t i = 0, n = fnn_numel_of(ndim, shape); i < n; i++) y[i] = fnn_bf16_from_f32((float)data[i]);
        return FNN_STATUS_OK;
    }
    int64_t *y = fnn_data_i64(out), n = fnn_numel_of(ndim, shape);
    fnn_shape_text where = fnn_shape_dims(ndim, shape);
    for (int64_t i = 0; i < n; i++) {
        int rc = fnn_whole_number("tensor", data[i], i, where.s, &y[i]);
        if (rc) { fnn_tensor_clear(out); return rc; }
    }
    return FNN_STATUS_OK;
}

static int fill_as(const char *op, fnn_tensor *out, int ndim, const int64_t *shape, double value);

int fnn_full_dtype(fnn_tensor *out, int ndim, const int64_t *shape, double value, int dtype) {
    if (dtype == FNN_DTYPE_FLOAT32) return fill_as("full", out, ndim, shape, value);
    if (dtype == FNN_DTYPE_BFLOAT16) {
        FNN_TRY(empty_as("full", out, ndim, shape, dtype));
        uint16_t *y = fnn_bytes(out), v = fnn_bf16_from_f32((float)value);
        for (int64_t i = 0, n = fnn_numel_of(ndim, shape); i < n; i++) y[i] = v;
        return FNN_STATUS_OK;
    }
    int64_t v = 0;
    FNN_TRY(fnn_whole_number("full", value, 0, "the fill value", &v));
    FNN_TRY(empty_as("full", out, ndim, shape, dtype));
    int64_t *y = fnn_data_i64(out), n = fnn_numel_of(ndim, shape);
    for (int64_t i = 0; i < n; i++) y[i] = v;
    return FNN_STATUS_OK;
}

int fnn_tensor_from_data(fnn_tensor *out, int ndim, const int64_t *shape, const float *data) {
    FNN_TRY(empty_as("tensor", out, ndim, shape, FNN_DTYPE_FLOAT32));
    memcpy(fnn_data(out), data, sizeof(float) * (size_t)fnn_numel_of(ndim, shape));
    return FNN_STATUS_OK;
}

int fnn_tensor_from_doubles(fnn_tensor *out, int ndim, const int64_t *shape, const double *data) {
    FNN_TRY(empty_as("tensor", out, ndim, shape, FNN_DTYPE_FLOAT32));
    float *y = fnn_data(out);
    int64_t n = fnn_numel_of(ndim, shape);
    for (int64_t i = 0; i < n; i++) y[i] = (float)data[i];
    return FNN_STATUS_OK;
}

static int fill_as(const char *op, fnn_tensor *out, int ndim, const int64_t *shape, double value) {
    FNN_TRY(empty_as(op, out, ndim, shape, FNN_DTYPE_FLOAT32));
    float *y = fnn_data(out), v = (float)value;
    int64_t n = fnn_numel_of(ndim, shape);
    for (int64_t i = 0; i < n; i++) y[i] = v;
    return FNN_STATUS_OK;
}
int fnn_full(fnn_tensor *out, int ndim, const int64_t *shape, double value) {
    return fill_as("full", out, ndim, shape, value);
}
int fnn_zeros(fnn_tensor *out, int ndim, const int64_t *shape) { return fill_as("zeros", out, ndim, shape, 0.0); }
int fnn_ones(fnn_tensor *out, int ndim, const int64_t *shape) { return fill_as("ones", out, ndim, shape, 1.0); }

int fnn_arange_dtype(fnn_tensor *out, double start, double stop, double step, int dtype) {
    if (dtype == FNN_DTYPE_FLOAT32) return fnn_arange(out, start, stop, step);
    int64_t a = 0, b = 0, s = 0;
    FNN_CHECK(fnn_whole_number("arange", start, 0, "", &a) == FNN_STATUS_OK &&
              fnn_whole_number("arange", stop, 1, "", &b) == FNN_STATUS_OK &&
              fnn_whole_number("arange", step, 2, "", &s) == FNN_STATUS_OK && s != 0,
              FNN_STATUS_ARG, "arange: an int64 range takes whole numbers and a non-zero step (got start %.17g, stop %.17g, step %.17g)",
              start, stop, step);
    /* the count without overflow: ceil((b - a) / s) in exact integers */
    int64_t n = 0;
    if (s > 0 && b > a) n = (int64_t)(((uint64_t)b - (uint64_t)a + (uint64_t)s - 1) / (uint64_t)s);
    if (s < 0 && b < a) n = (int64_t)(((uint64_t)a - (uint64_t)b + (uint64_t)(-s) - 1) / (uint64_t)(-s));
    FNN_TRY(empty_as("arange", out, 1, &n, FNN_DTYPE_INT64));
    int64_t *y = fnn_data_i64(out);
    for (int64_t i = 0; i < n; i++) y[i] = a + i * s;
    return FNN_STATUS_OK;
}

int fnn_arange(fnn_tensor *out, double start, double stop, double step) {
    FNN_CHECK(step != 0 && isfinite(step) && isfinite(start) && isfinite(stop), FNN_STATUS_ARG,
              "arange: step must be a finite non-zero number (got start %g, stop %g, step %g)", start, stop, step);
    double count = ceil((stop - start) / step);
    int64_t n = count > 0 ? (int64_t)count : 0;
    FNN_TRY(empty_as("arange", out, 1, &n, FNN_DTYPE_FLOAT32));
    float *y = fnn_data(out);
    for (int64_t i = 0; i < n; i++) y[i] = (float)(start + (double)i * step);
    return FNN_STATUS_OK;
}

int fnn_linspace(fnn_tensor *out, double start, double stop, int64_t n) {
    FNN_CHECK(n >= 0, FNN_STATUS_ARG, "linspace: number of points must be >= 0, got %lld", (long long)n);
    FNN_TRY(empty_as("linspace", out, 1, &n, FNN_DTYPE_FLOAT32));
    float *y = fnn_data(out);
    for (int64_t i = 0; i < n; i++)
        y[i] = n == 1 ? (float)start : (float)(start + (stop - start) * (double)i / (double)(n - 1));
    return FNN_STATUS_OK;
}

int fnn_eye(fnn_tensor *out, int64_t n, int64_t m) {
    int64_t shape[2] = {n, m < 0 ? n : m};
    FNN_TRY(fill_as("eye", out, 2, shape, 0.0));
    float *y = fnn_data(out);
    for (int64_t i = 0; i < shape[0] && i < shape[1]; i++) y[i * shape[1] + i] = 1.0f;
    return FNN_STATUS_OK;
}

/* ---- reading values ---- */
static int to_host(const char *op, const fnn_tensor *t) {
    FNN_TRY(fnn_check_input_any(op, t));
    FNN_CHECK(fnn_device_type_of(t->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "%s: tensor %s is on a GPU; move it with :to('cpu') first", op, fnn_shape_of(t).s);
    return FNN_STATUS_OK;
}

int fnn_item(const fnn_tensor *t, double *value) {
    FNN_TRY(to_host("item", t));
    FNN_CHECK(fnn_tensor_numel(t) == 1, FNN_STATUS_SHAPE,
              "item: tensor %s has %lld elements, expected exactly 1", fnn_shape_of(t).s,
              (long long)fnn_tensor_numel(t));
    *value = fnn_is_int64(t) ? (double)fnn_data_i64(t)[0]
             : fnn_is_bf16(t) ? fnn_bf16_to_f32(*(const uint16_t *)fnn_bytes(t)) : fnn_data(t)[0];
    return FNN_STATUS_OK;
}

static int check_count(const fnn_tensor *t, int64_t n) {
    FNN_CHECK(n == fnn_tensor_numel(t), FNN_STATUS_ARG, "to_table: buffer of %lld for %lld elements",
              (long long)n, (long long)fnn_tensor_numel(t));
    return FNN_STATUS_OK;
}

int fnn_copy_to_floats(const fnn_tensor *t, float *dst, int64_t n) {
    FNN_TRY(to_host("to_table", t));
    FNN_TRY(check_count(t, n));
    if (t->dtype == FNN_DTYPE_FLOAT32) { strided_copy_f32(dst, fnn_data(t), t->ndim, t->shape, t->stride); return FNN_STATUS_OK; }
    fnn_tensor tmp;
    int rc;
    const void *src = fnn_contiguous_bytes(t, &tmp, &rc);
    FNN_TRY(rc);
    if (fnn_is_bf16(t)) for (int64_t i = 0; i < n; i++) dst[i] = fnn_bf16_to_f32(((const uint16_t *)src)[i]);
    else for (int64_t i = 0; i < n; i++) dst[i] = (float)((const int64_t *)src)[i];
    fnn_tensor_clear(&tmp);
    return FNN_STATUS_OK;
}

int fnn_copy_to_doubles(const fnn_tensor *t, double *dst, int64_t n) {
    FNN_TRY(to_host("to_table", t));
    FNN_TRY(check_count(t, n));
    fnn_tensor tmp;
    int rc;
    const void *src = fnn_contiguous_bytes(t, &tmp, &rc);
    FNN_TRY(rc);
    if (fnn_is_int64(t)) for (int64_t i = 0; i < n; i++) dst[i] = (double)((const int64_t *)src)[i];
    else if (fnn_is_bf16(t)) for (int64_t i = 0; i < n; i++) dst[i] = fnn_bf16_to_f32(((const uint16_t *)src)[i]);
    else for (int64_t i = 0; i < n; i++) dst[i] = ((const float *)src)[i];
    fnn_tensor_clear(&tmp);
    return FNN_STATUS_OK;
}

int fnn_copy_to_int64(const fnn_tensor *t, int64_t *dst, int64_t n) {
    FNN_TRY(to_host("to_table", t));
    FNN_TRY(check_count(t, n));
    FNN_CHECK(fnn_is_int64(t), FNN_STATUS_ARG, "to_table: tensor %s is %s, expected int64", fnn_shape_of(t).s,
              fnn_dtype_name(t->dtype));
    strided_copy_i64(dst, fnn_data_i64(t), t->ndim, t->shape, t->stride);
    return FNN_STATUS_OK;
}

int fnn_get(const fnn_tensor *t, const int64_t *index, double *value) {
    FNN_TRY(to_host("get", t));
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) {
        FNN_CHECK(index[d] >= 0 && index[d] < t->shape[d], FNN_STATUS_ARG,
                  "get: index %lld out of range 1..%lld in dim %d of %s", (long long)index[d] + 1,
                  (long long)t->shape[d], d + 1, fnn_shape_of(t).s);
        off += index[d] * t->stride[d];
    }
    *value = fnn_is_int64(t) ? (double)fnn_data_i64(t)[off]
             : fnn_is_bf16(t) ? fnn_bf16_to_f32(((const uint16_t *)fnn_bytes(t))[off]) : fnn_data(t)[off];
    return FNN_STATUS_OK;
}
