/* internal.h: what core/ and cuda/ share and users never see: storage and
 * node layouts, the error macros, the backend table, op definitions, and the
 * helpers every op family uses (shape checks, broadcasting, output making). */
#ifndef FASTNN_INTERNAL_H
#define FASTNN_INTERNAL_H
#include "fastnn.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* FNN_LAYER: an internal helper the I/O layer (core/io/, built into libfastnn) calls across the
 * library boundary, so libfastnn_core exports it. Not public API: fastnn.h does not declare it and
 * it may change; everything else here stays hidden (-fvisibility=hidden). */
#define FNN_LAYER __attribute__((visibility("default")))

/* ---- errors ---- */
FNN_LAYER int fnn_set_error(int status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define FNN_FAIL(status, ...) fnn_set_error((status), __FILE__, __LINE__, __VA_ARGS__)
#define FNN_CHECK(cond, status, ...) \
    do { if (!(cond)) return FNN_FAIL((status), __VA_ARGS__); } while (0)
/* an invariant of the core itself; reaching it is a bug */
#define FNN_ASSERT(cond) FNN_CHECK(cond, FNN_STATUS_INTERNAL, \
    "internal error: %s failed (please report)", #cond)
#define FNN_TRY(call) do { int rc_ = (call); if (rc_ != FNN_STATUS_OK) return rc_; } while (0)

/* a shape as text, "[2,3]", in a struct so it can sit inside a format call */
typedef struct { char s[112]; } fnn_shape_text;
FNN_LAYER fnn_shape_text fnn_shape_of(const fnn_tensor *t);
FNN_LAYER fnn_shape_text fnn_shape_dims(int ndim, const int64_t *shape);

/* ---- devices ---- */
static inline int fnn_device_type_of(int device) { return device >> 8; }
static inline int fnn_device_ordinal(int device) { return device & 255; }
static inline int fnn_make_device(int type, int ordinal) { return type * 256 + ordinal; }
const char *fnn_device_name(int device, char *buf, int len);
/* device.c: registers the built backends (once); an error naming op unless device is available here */
void fnn_ensure_backends(void);
int fnn_check_device(const char *op, int device);

/* ---- storage: one refcounted buffer on one device ---- */
struct fnn_storage {
    atomic_long refcount;
    int device;
    int size_class;      /* >= 0: a small CPU block from a per-thread free list (alloc.c) */
    int64_t bytes;
    void *data;
};
fnn_storage *fnn_storage_new(int device, int64_t bytes);   /* NULL + error (OOM) */
void fnn_storage_retain(fnn_storage *s);
void fnn_storage_release(fnn_storage *s);

/* ---- backends: a table of function pointers per device type ---- */
/* ---- a family's kernels by op name: the backend contract of the families that have one ----
 * A family on rows declares, in its header core/ops/<family>.h, its arguments and its row type: a
 * struct whose first member is `const char *op` (the registry name; NULL ends a table) followed by
 * the family's kernels. An op's entry point (checks, output shape, allocation, node) is written once
 * in core/ops/<family>.c; it calls the row its registry name selects in its tensor's backend, so a
 * new op of such a family is a row in each backend's table and nothing here. The CPU rows sit beside
 * the entry points, the CUDA rows in cuda/<family>.cu (compiled for the host too, by
 * spec/gpu/emulate.sh); a backend without a row for an op refuses it by name, and the registry
 * derives has_cuda from the CUDA rows. Each backend lists its families' tables in `rows`:
 * fnn_cpu_row_tables (core/registry.c; every family on rows has one there) and
 * fnn_cuda_row_tables (cuda/backend.cu). */
typedef struct fnn_row_table {
    const char *family;     /* the registry's family name (a kernel family's own name); NULL ends a list */
    const void *rows;       /* the family's row type [], ended by a row whose op is NULL */
    size_t row_size;        /* sizeof that row type */
    bool by_kernel;         /* rows named by kernel, not by registry op: the kernel families below */
} fnn_row_table;
/* a registry family's table: its rows are named by the ops' registry names (registry_spec checks them) */
#define FNN_ROW_TABLE(family, rows) {family, rows, sizeof rows[0], false}
/* a kernel family's table: rows named by kernel or rule, not ops of the registry: optim (core/optim.h:
 * one row per update rule), elementwise (core/ops/elementwise.h: the map engine) and int64
 * (core/ops/int64.h: integer arithmetic, comparisons, reductions and the dtype cast) */
#define FNN_KERNEL_TABLE(family, rows) {family, rows, sizeof rows[0], true}
extern const fnn_row_table fnn_cpu_row_tables[];    /* core/registry.c */
extern const fnn_row_table fnn_cuda_row_tables[];   /* cuda/backend.cu */
/* the row (of family's row type) for op in device's backend, or NULL */
FNN_LAYER const void *fnn_row_for(int device, const char *family, const char *op);
/* the refusal of op on device, whose backend has no row for it (or no kernel for this pass):
 * "op: [backward ]not implemented on <device>", FNN_STATUS_DEVICE; FNN_ROW_REFUSED names the caller's line */
FNN_LAYER int fnn_row_refused(const char *op, int device, bool backward, const char *file, int line);
#define FNN_ROW_REFUSED(op, device, backward) fnn_row_refused((op), (device), (backward), __FILE__, __LINE__)
#ifndef __cplusplus   /* C only (C++17 has no _Atomic); cuda/ looks up no rows */
/* fnn_row_for behind a cache of one row per device type that the call site keeps (a static
 * fnn_row_cache): for the hottest lookup (every elementwise op), which then skips the per-thread
 * cache's TLS access (a few ns of an add's ~150). Safe shared: a row, once found, never changes (a
 * miss is not kept, as a backend may register later). */
typedef _Atomic(const void *) fnn_row_cache[4];
static inline const void *fnn_row_cached(fnn_row_cache *cache, int device, const char *family, const char *op) {
    const unsigned type = (unsigned)fnn_device_type_of(device);
    const void *row = type < 4 ? atomic_load_explicit(&(*cache)[type], memory_order_relaxed) : NULL;
    if (row) return row;
    row = fnn_row_for(device, family, op);
    if (row && type < 4) atomic_store_explicit(&(*cache)[type], row, memory_order_relaxed);
    return row;
}
#endif
/* the name of row i of a row table (the row types' first member) */
static inline const char *fnn_row_name(const fnn_row_table *t, size_t i) {
    return *(const char *const *)(const void *)((const char *)t->rows + i * t->row_size);
}

/* A backend: the device's mechanics (memory, copies, streams, pinned buffers, the random generator) and
 * its kernels, which are all rows (`rows`). fill and strided_copy count as memory and copies: the spine
 * fills new device tensors (core/device.c) and makes views contiguous (fnn_materialize) with them. The
 * CPU's table (core/alloc.c) sets only its name, device_count, alloc, free, copy and rows. */
typedef struct fnn_backend {
    const char *name;
    int (*device_count)(void);
    void *(*alloc)(int ordinal, size_t bytes);            /* NULL on failure */
    void (*free)(int ordinal, void *p, size_t bytes);
    /* bytes between devices; either side may be the CPU */
    int (*copy)(void *dst, int dst_device, const void *src, int src_device, size_t bytes);
    /* y[n] = value, float32 (cuda/backend.cu); NULL on the CPU */
    int (*fill)(int ordinal, float *y, int64_t n, float value);
    /* ---- copies and the generator on the device (cuda/copy.cu, random.cu); NULL on the CPU ---- */
    /* dst (contiguous) = src's elements in row-major order, elements of esize bytes (2, 4 or 8) */
    int (*strided_copy)(int ordinal, void *dst, const void *src, int esize, int ndim, const int64_t *shape,
                        const int64_t *stride);
    /* y[n] = FNN_RNG_* draws from the Philox stream (seed, subsequence offset): uniform in [k0, k1),
     * normal (mean k0, std k1), bernoulli (1 with probability k0) */
    int (*random)(int ordinal, int op, float *y, int64_t n, uint64_t seed, uint64_t offset, double k0, double k1);
    /* ---- pinned host buffers and streams (cuda/backend.cu) ---- */
    /* wait on the host until the operations queued on the device are done: every stream of every thread
     * (thread_only 0: fnn.cuda.synchronize), or the calling thread's own stream (1) */
    int (*synchronize)(int ordinal, int thread_only);
    /* page-locked host memory (cudaHostAlloc), cached by rounded size like alloc; NULL on failure */
    void *(*host_alloc)(size_t bytes);
    /* p (from host_alloc) back to the cache; it is handed out again only once every copy_async that
     * read it has finished (a poll of the copy's event, never a wait) */
    void (*host_free)(void *p, size_t bytes);
    /* the pinned cache: s[0] live bytes, s[1] cached bytes, s[2] buffers from the driver, s[3] reuses */
    int (*host_stats)(int64_t *s);
    /* device dst (on ordinal) = host src (bytes; a host_alloc buffer's start, or pageable memory),
     * queued on the device's copy stream; returns once queued. The calling thread's stream waits for the
     * copy on the GPU (an event), so its later kernels read the new data; src must stay unchanged and
     * allocated until then (host_free takes care of that for a pinned src) */
    int (*copy_async)(int ordinal, void *dst, const void *src, size_t bytes);
    /* on (1) / off (0): this thread's device allocations come from the copy pool, whose blocks the
     * copy stream writes after waiting for the streams that used them (bracket copy_async's dst) */
    void (*copy_pool)(int on);
    /* (end of xfer) */
    /* ---- the families' kernels by op name (see fnn_row_table above) ---- */
    const fnn_row_table *rows;
} fnn_backend;
/* the int64 family's binary ops (core/ops/int64.h) */
enum { FNN_INT_ADD, FNN_INT_SUB, FNN_INT_MUL, FNN_INT_EQ, FNN_INT_NE, FNN_INT_LT, FNN_INT_LE, FNN_INT_GT, FNN_INT_GE };
/* the reduction line engine's ops (cuda/kernels.h's fnn_cuda_reduce; mean is SUM with k0 = 1/R; var: k0 ddof, k1 1 for std; norm: k0 = p;
 * TIES and SELECT are gradients only: max/min over everything, and along a dim through idx) */
enum { FNN_RED_SUM, FNN_RED_PROD, FNN_RED_VAR, FNN_RED_NORM, FNN_RED_LSE, FNN_RED_MAX, FNN_RED_MIN,
       FNN_RED_TIES, FNN_RED_SELECT, FNN_RED_SOFTMAX, FNN_RED_LOG_SOFTMAX };
enum { FNN_RNG_UNIFORM, FNN_RNG_NORMAL, FNN_RNG_BERNOULLI };
void fnn_register_backend(int device_type, const fnn_backend *b);
#ifdef FASTNN_WITH_CUDA
void fnn_cuda_register(void);   /* cuda/backend.cu: registers the CUDA backend table */
#endif
FNN_LAYER const fnn_backend *fnn_backend_for(int device);  /* NULL when that device type is not built */

/* ---- allocation: counted per device type ---- */
FNN_LAYER void *fnn_alloc(int device, int64_t bytes);       /* NULL + error (OOM) */
/* The op an allocation is for, named in out-of-memory errors ("matmul: cannot allocate N bytes
 * (X live): out of memory"): set by fnn_check_input(_any), the creators and the engine (per
 * backward rule); per thread; op must be a string that lives forever (a literal, an op's name). */
void fnn_set_op(const char *op);
/* ---- profile.c: fnn.profile's per-thread op timing (off unless a thread started it) ---- */
#ifndef __cplusplus   /* C only: cuda/ never profiles (and C++17 has no C11 atomic_int) */
extern atomic_int fnn_profilers;   /* threads profiling now */
bool fnn_profiling(void);          /* this thread is */
static inline bool fnn_profile_maybe(void) { return atomic_load_explicit(&fnn_profilers, memory_order_relaxed) != 0; }
void fnn_profile_add(const char *name, int kind, int64_t ns);   /* kind as fnn_profile_mark's */
void fnn_profile_op_named(const char *op);
void fnn_profile_failed(void);   /* from fnn_set_error */
#endif
/* the engine, around each node's gradient: op (NULL: unpin) until unpinned, whatever the rule calls */
void fnn_pin_op(const char *op);
/* the out-of-memory error for bytes on device (a double: a shape's bytes may pass int64); returns its status */
int fnn_alloc_failed(int device, double bytes, const char *why);
FNN_LAYER void fnn_free(int device, void *p, int64_t bytes);

/* ---- tensor helpers ---- */
static inline int fnn_elem_size(const fnn_tensor *t) {
    return t->dtype == FNN_DTYPE_INT64 ? 8 : t->dtype == FNN_DTYPE_BFLOAT16 ? 2 : 4;
}
static inline bool fnn_is_bf16(const fnn_tensor *t) { return t->dtype == FNN_DTYPE_BFLOAT16; }
static inline bool fnn_is_int64(const fnn_tensor *t) { return t->dtype == FNN_DTYPE_INT64; }
/* t's data is host memory, which the CPU may read directly (a host read such as sample's needs it) */
static inline bool fnn_in_host_memory(const fnn_tensor *t) { return fnn_device_type_of(t->device) == FNN_DEVICE_CPU; }
/* the first element as raw bytes (any dtype) */
static inline void *fnn_bytes(const fnn_tensor *t) {
    char *base = t->storage ? (char *)t->storage->data : (char *)t->small;
    return base + t->offset * fnn_elem_size(t);
}
/* the first element of a float32 tensor (what every float kernel reads; the entry checks refuse
 * other dtypes before a kernel runs) */
static inline float *fnn_data(const fnn_tensor *t) {
    float *base = t->storage ? (float *)t->storage->data : (float *)t->small;
    return base + t->offset;
}
static inline int64_t *fnn_data_i64(const fnn_tensor *t) {
    int64_t *base = t->storage ? (int64_t *)t->storage->data : (int64_t *)(void *)t->small;
    return base + t->offset;
}
FNN_LAYER int64_t fnn_numel_of(int ndim, const int64_t *shape);
/* a result's dim count, checked against FNN_MAX_DIMS */
static inline int fnn_check_ndim(const char *op, int ndim) {
    FNN_CHECK(ndim >= 0 && ndim <= FNN_MAX_DIMS, FNN_STATUS_SHAPE, "%s: %d dims, at most %d supported", op, ndim,
              FNN_MAX_DIMS);
    return FNN_STATUS_OK;
}
void fnn_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride);
/* make out a new contiguous float32 tensor of this shape on this device (inline when small, CPU only) */
int fnn_new_output(fnn_tensor *out, int device, int ndim, const int64_t *shape);
FNN_LAYER int fnn_new_output_dtype(fnn_tensor *out, int device, int dtype, int ndim, const int64_t *shape);
/* out = host bytes src as a new tensor on device, without a host wait where the backend can (core/device.c) */
FNN_LAYER int fnn_upload(fnn_tensor *out, int device, int dtype, int ndim, const int64_t *shape, const void *src);
/* out := a view of x's data (shares storage, no node) with given shape/strides/offset */
int fnn_make_view(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape,
                  const int64_t *stride, int64_t offset);
/* out := x narrowed to [start, start + length) of dim d / x at position i of dim d (dim gone): views with
 * no checks and no node */
int fnn_narrow_view(fnn_tensor *out, const fnn_tensor *x, int d, int64_t start, int64_t length);
int fnn_select_view(fnn_tensor *out, const fnn_tensor *x, int d, int64_t i);
/* the usable-input check every op runs first: not empty, not freed, float32. Ops that take any
 * dtype (views, copies, indexing, integer arithmetic) run fnn_check_input_any instead, so a new op
 * refuses int64 until someone writes its int64 kernel */
int fnn_check_input(const char *op, const fnn_tensor *t);
FNN_LAYER int fnn_check_input_any(const char *op, const fnn_tensor *t);
int fnn_check_same_dtype(const char *op, const fnn_tensor *a, const fnn_tensor *b);
/* a 1-based id read from an index tensor (int64, or float32 holding a whole number) at element
 * offset off, as a 0-based position checked against 0..size-1; the error names the op, the
 * 1-based value, the valid range, and `dim` of `x` (the tensor indexed) */
int fnn_index_at(const char *op, const fnn_tensor *index, int64_t off, int64_t size, int dim,
                 const fnn_tensor *x, int64_t *pos);
/* v as an int64, or an error naming op, v and its 1-based position pos + 1 in `where` (2^63 is out of range) */
int fnn_whole_number(const char *op, double v, int64_t pos, const char *where, int64_t *out);
/* x's values as dtype with no node (ops/to_dtype.c; fnn_to_dtype is the op, with its node) */
int fnn_cast(fnn_tensor *out, const fnn_tensor *x, int dtype);
/* an index tensor must be int64 or float32 (not a freed or empty header) */
FNN_LAYER int fnn_check_index(const char *op, const char *what, const fnn_tensor *index);
int fnn_check_same_device(const char *op, const fnn_tensor *a, const fnn_tensor *b);
/* copy x into a fresh contiguous tensor of its dtype (no node) */
FNN_LAYER int fnn_materialize(fnn_tensor *out, const fnn_tensor *x);
/* dst (contiguous) = src's elements in row-major order, for elements of esize bytes (2, 4 or 8) */
FNN_LAYER void fnn_strided_copy(void *dst, const void *src, int esize, int ndim, const int64_t *shape, const int64_t *stride);
/* y's m rows of row bytes = x's rows ids[j] - base (rows stride bytes apart): a gather of dataset rows.
 * stream: y is fresh memory the caller will not read soon (a loader's new batch), written with
 * non-temporal stores where its rows allow (core/ops/index.c) */
FNN_LAYER void fnn_gather_rows(char *y, const char *x, int64_t stride, size_t row, const int64_t *ids, int64_t m, int64_t base,
                               bool stream);
/* borrow x's data contiguous: *tmp is filled only when a copy was needed (clear it after);
 * _data for float32 tensors, _bytes for any dtype */
const float *fnn_contiguous_data(const fnn_tensor *x, fnn_tensor *tmp, int *rc);
FNN_LAYER const void *fnn_contiguous_bytes(const fnn_tensor *x, fnn_tensor *tmp, int *rc);
/* normalise a 0-based dim (negative counts from the end) and check it */
int fnn_wrap_dim(const char *op, const fnn_tensor *x, int dim, int ndim_plus, int *out_dim);
/* NumPy broadcasting: shape of a op b */
int fnn_broadcast_shapes(const char *op, int na, const int64_t *sa, int nb, const int64_t *sb,
                         int *nout, int64_t *out);
/* strides of t seen through the broadcast shape (0 along broadcast dims) */
void fnn_broadcast_strides(const fnn_tensor *t, int nout, const int64_t *out_shape, int64_t *stride);
/* sum g down to shape (undo broadcasting), by the reduction family's "sum" row with no node
 * (autograd/sum_to_shape.c) */
int fnn_sum_to_shape(fnn_tensor *out, const fnn_tensor *g, int ndim, const int64_t *shape);
static inline bool fnn_same_shape(const fnn_tensor *a, const fnn_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++) if (a->shape[i] != b->shape[i]) return false;
    return true;
}

/* ---- random: per-thread source ---- */
uint64_t fnn_random_u64(void);
float fnn_random_float(void);     /* U[0,1) */
float fnn_random_normal(void);    /* N(0,1) */
void fnn_random_normals(float *y, int64_t n, float mean, float std);   /* n draws of N(mean, std^2) */
void fnn_random_uniforms(float *y, int64_t n, double lo, double hi);  /* n draws of U[lo, hi) */
void fnn_random_bernoullis(float *y, int64_t n, double p);             /* n draws of 1 with probability p */

/* ---- threads ---- */
/* How many threads a loop of this much work should use. Work counts elements of a memory-bound
 * loop (an add, a copy, a sum); kernels with costlier elements count each as several. Below
 * FNN_PARALLEL_MIN_WORK one thread is faster than waking a second (measured in threads.c). */
enum { FNN_PARALLEL_MIN_WORK = 1 << 18 };
static inline int fnn_threads_for(int64_t work) {
    return work < FNN_PARALLEL_MIN_WORK ? 1 : fnn_get_num_threads();
}
/* the calling thread runs every kernel on one thread from now on (fnn_get_num_threads says 1 there):
 * for the core's background threads (core/io/prefetch.c's workers) */
FNN_LAYER void fnn_thread_serial(void);
/* fn(ctx, lo, hi) over [0, n): one plain call when threads <= 1 or n <= 1 (no OpenMP region is
 * entered: even a false if() clause costs a team setup), else an OpenMP team where thread t of T
 * gets the t-th of T contiguous, near-equal ranges (fixed by n and T, never by timing) */
typedef void (*fnn_range_fn)(void *ctx, int64_t lo, int64_t hi);
/* before a team of `threads` may start (threads.c: a fork's child then runs on one thread);
 * fnn_onednn_team_mark before a oneDNN call, which starts a team of OpenMP's max-threads */
FNN_LAYER void fnn_omp_team_mark(int threads);
FNN_LAYER void fnn_onednn_team_mark(void);
FNN_LAYER void fnn_parallel_team(int64_t n, int threads, fnn_range_fn fn, void *ctx);   /* the team part */
static inline void fnn_parallel_for(int64_t n, int threads, fnn_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (threads <= 1 || n == 1) fn(ctx, 0, n);   /* inline: fn is usually known here and inlined */
    else fnn_parallel_team(n, threads, fn, ctx);
}

/* ---- CPU variants picked at load time (GCC function multiversioning on x86-64 glibc) ----
 * FNN_CLONES_V3: the baseline and x86-64-v3 (AVX2 + FMA, 8 lanes); FNN_CLONES_V4 adds x86-64-v4
 * (AVX-512, 16 lanes). For hot loops that gain from wider lanes where the CPU has them; the build
 * stays runnable on any x86-64. -DFASTNN_NO_CLONES (or another compiler) builds the baseline only;
 * -DFASTNN_CLONES_MAX_V3 (CMake's FASTNN_MAX_CLONE=v3) stops at v3, so that an AVX-512 machine runs
 * the core's own kernels as an AVX2-only CPU would (bench/run.sh --avx2, beside ONEDNN_MAX_CPU_ISA). */
#if defined(__x86_64__) && defined(__GLIBC__) && !defined(__clang__) && __GNUC__ >= 11 && !defined(FASTNN_NO_CLONES)
#define FNN_HAVE_CLONES 1   /* code that only pays off in the v3 and v4 variants asks for it at run time */
#define FNN_CLONES_V3 __attribute__((target_clones("arch=x86-64-v3", "default")))
#ifdef FASTNN_CLONES_MAX_V3
#define FNN_CLONES_V4 FNN_CLONES_V3
#else
#define FNN_CLONES_V4 __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#else
#define FNN_CLONES_V3
#define FNN_CLONES_V4
#endif

/* ---- the CPU GEMM (blas.c): row-major C = alpha op(A) op(B) + beta C, through oneDNN or OpenBLAS ---- */
void fnn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* fnn_parallel_for over parts that call fnn_sgemm themselves: each such GEMM runs on its part's thread */
void fnn_sgemm_parallel_for(int64_t n, int threads, fnn_range_fn fn, void *ctx);
/* row-major C = op(A) op(B) + bias[n] (NULL: none; dense) + beta C (beta 0 or 1), as fnn_sgemm, through
 * oneDNN's matmul primitive with the bias and C added inside the kernel; false when it did not run
 * (portable kernels, a small product, inside a parallel region, no primitive for the shape): the
 * caller then takes fnn_sgemm */
bool fnn_gemm_fused(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                    int64_t ldb, const float *bias, float beta, float *c, int64_t ldc);
/* one B for many products (a recurrent layer's W_hh, step after step): op(B) [k, n] (tb: b is [n, k] at ldb)
 * copied once into the layout oneDNN's matmul picks for products C [m, n] (at ldc) = A [m, k] (at lda)
 * op(B) + beta C, beta 0 or 1; round_bf16: B rounded to bfloat16 values once and each A per product (bf16
 * precision off the bf16 units, as fnn_gemm_prec rounds); serial: the products run on one thread, inside
 * a parallel region too (a block of rows per thread), else on the pool outside one. NULL where
 * fnn_gemm_fused would refuse the shape (then nothing is copied). fnn_gemm_packed runs one such product,
 * false when it did not (the caller takes the plain GEMM). */
typedef struct fnn_packed_b fnn_packed_b;
fnn_packed_b *fnn_gemm_pack_b(bool tb, int64_t m, int64_t n, int64_t k, const float *b, int64_t ldb, int64_t lda,
                              float beta, int64_t ldc, bool round_bf16, bool serial);
bool fnn_gemm_packed(const fnn_packed_b *p, const float *a, float *c);
void fnn_gemm_packed_free(fnn_packed_b *p);
/* the activation a GEMM may end in (linear's activation option, core/ops/linalg.h) */
enum { FNN_ACT_NONE, FNN_ACT_RELU, FNN_ACT_GELU };
bool fnn_blas_portable(void);         /* the OpenBLAS kernels run (no oneDNN, or fnn_set_kernels) */
bool fnn_in_parallel(void);           /* inside an OpenMP parallel region (threads.c) */
/* ---- float32 precision per GEMM-bound family (precision.c; fnn_set_float32_precision) ---- */
enum { FNN_PREC_MATMUL, FNN_PREC_CONV, FNN_PREC_RNN, FNN_PREC_FAMILIES };
bool fnn_prec_bf16(int family);       /* the family may compute with bfloat16 operands */
bool fnn_autocast_on(void);           /* fnn.autocast has a region open on this thread, not held */
int fnn_autocast_depth(void);         /* this thread's autocast regions; set_depth returns the old */
int fnn_check_float_or_host_bf16(const char *op, const fnn_tensor *t, const char *what);   /* precision.c */
int fnn_autocast_set_depth(int depth);
/* fnn_sgemm under the family's precision: under bf16 the operands are rounded to bfloat16 (oneDNN's
 * bf16 matmul where the CPU has bf16 units, else rounded float32 copies through fnn_sgemm) */
/* fnn_gemm_prec with operands known to hold bfloat16 values (exact: bit 0 a, bit 1 b; widened from bf16
 * tensors), which it uses as they are without scanning them */
void fnn_gemm_prec_exact(int family, unsigned exact, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void fnn_gemm_prec(int family, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* fnn_gemm_fused under the family's precision (bf16: fnn_gemm_bf16 on the units, else the float32 primitive on
 * operands rounded as fnn_gemm_prec_exact rounds them, exact as there); false: the caller takes fnn_gemm_prec */
bool fnn_gemm_fused_prec(int family, unsigned exact, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                         int64_t lda, const float *b, int64_t ldb, const float *bias, float beta, float *c, int64_t ldc);
/* as fnn_gemm_fused_prec, C = act(op(A) op(B) + bias) with act (FNN_ACT_RELU or _NONE) as oneDNN's eltwise
 * post-op inside the kernel (beta 0); false: nothing done, the caller takes fnn_gemm_prec and its own pass */
bool fnn_gemm_fused_act_prec(int family, int act, unsigned exact, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                             const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias, float *c,
                             int64_t ldc);
/* as fnn_gemm_fused with bfloat16 copies of A and B (float32 bias, C and sums) through oneDNN's matmul;
 * false where the CPU has no bf16 units (fnn_bf16_native), in a parallel region or on a refused shape */
bool fnn_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                   int64_t ldb, const float *bias, float beta, float *c, int64_t ldc);
bool fnn_bf16_native(void);           /* oneDNN runs bf16 products on this CPU's units (AVX512-BF16, AMX) */
/* core/bf16_units.c: the AVX512-BF16 dot product's FLOP rate over the float32 FMA's on this core, measured
 * once (0 without it); whether bf16 precision should run on the units the CPU has (fnn_set_bf16_path) */
double fnn_bf16_dot_ratio(void);
bool fnn_bf16_units_pay(bool amx);
/* a rows x cols float32 matrix at leading dimension ld into a dense one: bfloat16 bits, or rounded float32 */
void fnn_to_bf16_matrix(uint16_t *dst, const float *src, int64_t rows, int64_t cols, int64_t ld);
void fnn_round_bf16_matrix(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld);
void fnn_from_bf16(float *dst, const uint16_t *src, int64_t n);   /* n bf16 values widened, exactly */
/* x (bfloat16, in host memory) widened, exactly, into a new contiguous float32 tensor: a view's rows read
 * in place through its strides, with no bfloat16 copy first; anything else as fnn_cast to float32 */
int fnn_bf16_widen_view(fnn_tensor *out, const fnn_tensor *x);
/* the same, and n floats rounded to bf16 bits, serially: for loops already split over the threads */
void fnn_bf16_widen_run(float *dst, const uint16_t *src, int64_t n);
void fnn_bf16_narrow_run(uint16_t *dst, const float *src, int64_t n);
/* the same over rows x cols at leading dimensions dld (dst) and sld (src), one call for many short rows */
void fnn_bf16_widen_rows(float *dst, int64_t dld, const uint16_t *src, int64_t sld, int64_t rows, int64_t cols);
void fnn_bf16_narrow_rows(uint16_t *dst, int64_t dld, const float *src, int64_t sld, int64_t rows, int64_t cols);
/* x's n values as bfloat16 values held in float32, for a float32 kernel standing in for bf16 units:
 * x itself when every value is one already (autocast's activations), else a rounded copy that *owned
 * holds (the caller fnn_frees it, n floats); NULL with an error set when out of memory */
const float *fnn_bf16_values(const float *x, int64_t n, float **owned);

/* ---- autograd ---- */
typedef int (*fnn_backward_fn)(fnn_node *n, const fnn_tensor *dout, fnn_tensor *dins);
/* ops whose gradient is the incoming one placed into zeros of the input's shape (a slice along
 * dim from position start, their node's fnn_slice_attrs): the engine adds it into the input's
 * accumulator in place instead of materialising the zeros, so 50 narrows of one big tensor cost
 * 50 small adds */
enum { FNN_EMBEDS_NONE = 0, FNN_EMBEDS_NARROW = 1, FNN_EMBEDS_SELECT = 2 };
typedef struct fnn_op_def {
    fnn_op_info info;
    fnn_backward_fn backward;   /* NULL: not differentiable */
    int embeds;                 /* FNN_EMBEDS_*: the engine may bypass backward for input 0 */
} fnn_op_def;
#define FNN_NODE_SAVED 4
/* A node's attributes: the numbers its backward rule needs besides the saved tensors (dims,
 * kernel sizes, scalars, flags). Each op kind declares a small struct of them next to its forward
 * and backward (ops of one family that need the same numbers share one), with fields named for
 * what they hold and typed exactly: int64_t for sizes and positions, int for dims (as the API and
 * fnn_wrap_dim give them), double or float as the forward had the scalar, bool for flags.
 * The node keeps them in one untyped, maximally aligned byte area that FNN_ATTRS(node, T) views as
 * a T. The check is at compile time: a T larger than the area, or more strictly aligned, does not
 * compile (so a new op cannot overflow into out_ndim). A union of every op's struct here would
 * also check it, but would put each family's private struct in this header; the byte area keeps
 * them beside the code that reads them. The area is as large as the two 8-slot arrays (doubles
 * and int64s) it replaces, so the node is no larger than before, and node_alloc zeroes it: a field
 * a forward leaves unset reads as 0 (0.0, false). A node's attributes are written by its op's
 * forward and read by its op's backward (and, for narrow and select, by the engine through
 * fnn_slice_attrs), always through the same T: nothing else may read them. */
#define FNN_NODE_ATTR_BYTES 128
#ifdef __cplusplus
#define FNN_ATTRS_ALIGN alignas(max_align_t)
#define FNN_ATTRS(node, T) \
    ((void)[] { static_assert(sizeof(T) <= FNN_NODE_ATTR_BYTES && alignof(T) <= alignof(max_align_t), \
                              "FNN_ATTRS: " #T " is too big or too aligned for fnn_node.attrs"); }, \
     reinterpret_cast<T *>((node)->attrs))
#else
#define FNN_ATTRS_ALIGN _Alignas(max_align_t)
#define FNN_ATTRS(node, T) \
    ((void)sizeof(struct { _Static_assert(sizeof(T) <= FNN_NODE_ATTR_BYTES && _Alignof(T) <= _Alignof(max_align_t), \
                                          "FNN_ATTRS: " #T " is too big or too aligned for fnn_node.attrs"); char c_; }), \
     (T *)(void *)(node)->attrs)
#endif
/* narrow and select: the slice of the input the output is (read by the engine's embeds path) */
typedef struct { int dim; int64_t start; } fnn_slice_attrs;
struct fnn_node {
    atomic_long refcount;
    const fnn_op_def *op;
    int n_inputs;
    fnn_node **next;            /* next[k]: node of input k, NULL for plain data (owned refs) */
    int *in_ndim;               /* shape of input k */
    int64_t (*in_shape)[FNN_MAX_DIMS];
    fnn_tensor saved[FNN_NODE_SAVED];   /* detached tensors the rule needs */
    FNN_ATTRS_ALIGN unsigned char attrs[FNN_NODE_ATTR_BYTES];   /* the rule's numbers: FNN_ATTRS */
    int out_ndim;
    int64_t out_shape[FNN_MAX_DIMS];
    int autocast;               /* made inside an autocast region: the rule runs with one open (bf16 products) */
    /* backward-time state */
    fnn_tensor grad;            /* gradient flowing into this node's output */
    int pending;                /* consumers not yet processed */
    int visited;
    int freed;                  /* 1 once backward has run through it */
    /* leaves (Param) only */
    int is_leaf, frozen;
    fnn_tensor value, leaf_grad;
};
/* true when an op on these inputs must record a node */
bool fnn_needs_node(int n, const fnn_tensor *const *inputs);
/* attach a new node for op to out, taking edges from inputs; returns the node (to save
 * tensors and attributes into) or NULL with an error set */
fnn_node *fnn_attach_node(fnn_tensor *out, const fnn_op_def *op, int n, const fnn_tensor *const *inputs);
/* attach def's node to out when any input needs one (the views' and shape ops' record); on failure out
 * is cleared. *node (when not NULL) gets the node, or NULL when none was needed */
int fnn_record(const fnn_op_def *def, fnn_tensor *out, int n, const fnn_tensor *const *ins, fnn_node **node);
/* keep a detached reference of t in n->saved[slot] */
int fnn_save(fnn_node *n, int slot, const fnn_tensor *t);
void fnn_node_retain(fnn_node *n);

/* ---- the op families, declared once ----
 * FNN_OP_FAMILIES: every family of the registry: core/ops/<family>.c defines its op table
 * fnn_ops_<family>[] (NULL-terminated), spec/cases/<family>.lua its cases. FNN_ROW_FAMILIES: those
 * whose kernels are rows named by registry op (fnn_row_table above); FNN_KERNEL_FAMILIES: kernel tables
 * named by kernel or rule (optim, int64, the map engine). Each family on rows declares its row type
 * and FNN_ROW_GLUE in core/ops/<family>.h; core/registry.c and cuda/backend.cu build the backends'
 * lists of tables from these lists, so a family is added here and nowhere else in the plumbing. */
#define FNN_OP_FAMILIES(X) X(elementwise) X(reduction) X(linalg) X(conv) X(shape) X(view) X(index) X(loss) \
    X(norm) X(device) X(rnn) X(embedding) X(attention) X(sort) X(pool)
#define FNN_ROW_FAMILIES(X) X(reduction) X(norm) X(pool) X(sort) X(index) X(loss) X(rnn) X(attention) X(conv) \
    X(shape) X(embedding) X(linalg)
#define FNN_KERNEL_FAMILIES(X) X(optim) X(int64) X(elementwise)
#define FNN_COUNT_ONE_(family) + 1
enum {
    FNN_OP_FAMILY_COUNT = 0 FNN_OP_FAMILIES(FNN_COUNT_ONE_),
    FNN_ROW_FAMILY_COUNT = 0 FNN_ROW_FAMILIES(FNN_COUNT_ONE_),
    FNN_KERNEL_FAMILY_COUNT = 0 FNN_KERNEL_FAMILIES(FNN_COUNT_ONE_),
};
#define FNN_DECLARE_OPS_(family) extern const fnn_op_def *const fnn_ops_##family[];
FNN_OP_FAMILIES(FNN_DECLARE_OPS_)
/* A family's row glue, in core/ops/<family>.h after its row type: the CPU's table (beside the entry
 * points), the CUDA backend's (cuda/), and the lookup fnn_<family>_row_for(device, op): the row for op
 * in device's backend, or NULL (the caller refuses it by name, FNN_ROW_REFUSED) */
#define FNN_ROW_GLUE(family, row_type) \
    extern const row_type fnn_cpu_##family##_rows[]; \
    extern const row_type fnn_cuda_##family##_rows[]; \
    static inline const row_type *fnn_##family##_row_for(int device, const char *op) { \
        return (const row_type *)fnn_row_for(device, #family, op); \
    }
/* a family's attribute reader (fnn_node_attr, registry.c): the number `name` of a node of the family
 * into *value, or FNN_STATUS_ARG with a message naming what the family's nodes hold */
typedef int (*fnn_attr_reader)(const fnn_node *n, const char *name, double *value);
int fnn_elementwise_attr(const fnn_node *n, const char *name, double *value);
int fnn_reduction_attr(const fnn_node *n, const char *name, double *value);
int fnn_conv_attr(const fnn_node *n, const char *name, double *value);
int fnn_pool_attr(const fnn_node *n, const char *name, double *value);
int fnn_norm_attr(const fnn_node *n, const char *name, double *value);
int fnn_attention_attr(const fnn_node *n, const char *name, double *value);
int fnn_view_attr(const fnn_node *n, const char *name, double *value);
int fnn_shape_attr(const fnn_node *n, const char *name, double *value);
int fnn_linalg_attr(const fnn_node *n, const char *name, double *value);

#ifdef __cplusplus
}
#endif
#endif
