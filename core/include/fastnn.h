/* fastnn.h: the one public C ABI of fastnn-lua.
 *
 * Tensors are immutable arrays of one dtype: float32 (the compute type, and the
 * default) or int64 (indices, ids, counts). A tensor is a small header (shape,
 * strides, offset, dtype) over a refcounted storage; tensors of at most
 * FNN_INLINE_BYTES of data (16 floats, 8 int64s) keep it inline in the header,
 * so a tiny result costs no allocation. The caller owns the header memory (a stack
 * variable in C, GC-managed cdata in Lua); every op writes its result into an
 * empty header passed first, and fnn_tensor_clear() drops what a header holds.
 *
 *     fnn_tensor a, b, c;
 *     fnn_tensor_init(&a); fnn_tensor_init(&b); fnn_tensor_init(&c);
 *     int64_t shape[2] = {2, 3};
 *     if (fnn_randn(&a, 2, shape) || fnn_ones(&b, 2, shape) || fnn_add(&c, &a, &b))
 *         fprintf(stderr, "%s\n", fnn_last_error());
 *     fnn_tensor_clear(&a); fnn_tensor_clear(&b); fnn_tensor_clear(&c);
 *
 * Every entry point returns FNN_STATUS_OK (0) or a negative fnn_status and
 * leaves a message in a thread-local slot (fnn_last_error). On failure the
 * output header is left empty. Dimensions are 0-based in C; messages print
 * them 1-based, as Lua users see them. Index values (gather/scatter indices,
 * class ids, argmax results) are 1-based, as Lua users see them: ops that
 * produce them return int64 tensors, and ops that take them accept int64
 * tensors or float32 tensors holding whole numbers. Float-only ops refuse an
 * int64 input with a message naming the op and the dtype.
 *
 * The build strips '#' lines and FNN_API from this file into
 * lua/fastnn/cdef.lua, so nothing here may need the preprocessor to parse.
 */
#ifndef FASTNN_H
#define FASTNN_H
#include <stdint.h>
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
#ifndef FNN_API
#define FNN_API __attribute__((visibility("default")))
#endif

/* ---- version and errors: core/error.c ---- */
FNN_API const char *fnn_version(void);

typedef enum fnn_status {
    FNN_STATUS_OK = 0, FNN_STATUS_SHAPE = -1, FNN_STATUS_ARG = -2, FNN_STATUS_OOM = -3,
    FNN_STATUS_DEVICE = -4, FNN_STATUS_IO = -5, FNN_STATUS_INTERNAL = -6, FNN_STATUS_GRAPH = -7
} fnn_status;

FNN_API const char *fnn_last_error(void);        /* thread-local; valid until the next failing call */
FNN_API const char *fnn_last_error_where(void);  /* C file:line of the last error, for bug reports */
FNN_API int fnn_last_status(void);

/* ---- types ---- */
enum { FNN_MAX_DIMS = 8, FNN_INLINE_FLOATS = 16, FNN_INLINE_BYTES = 64 };
/* element types. bfloat16 (the top half of a float32: 8 exponent bits, 7 mantissa bits; values round
 * to nearest, ties to even) is kept for compute with float32 sums; code 2 is kept for float16. A header
 * zeroed by its allocator is float32. */
typedef enum fnn_dtype { FNN_DTYPE_FLOAT32 = 0, FNN_DTYPE_INT64 = 1, FNN_DTYPE_BFLOAT16 = 3 } fnn_dtype;
typedef enum fnn_device_type { FNN_DEVICE_CPU = 0, FNN_DEVICE_CUDA = 1 } fnn_device_type;

typedef struct fnn_storage fnn_storage;  /* opaque, refcounted buffer on one device */
typedef struct fnn_node fnn_node;        /* opaque, refcounted autograd node (also a Param leaf) */

typedef struct fnn_tensor {
    int32_t ndim;                    /* -1: empty header (holds nothing) */
    int32_t device;                  /* fnn_device_type * 256 + ordinal */
    int64_t shape[8];
    int64_t stride[8];               /* in elements; 0 along broadcast (expanded) dims */
    int64_t offset;                  /* in elements, into storage or small */
    fnn_storage *storage;            /* NULL: data is small[] */
    fnn_node *node;                  /* NULL: plain data */
    int32_t output_index;            /* which output of node this tensor is */
    int32_t freed;                   /* 1 after fnn_tensor_free: every op refuses it */
    int32_t dtype;                   /* fnn_dtype */
    int32_t reserved;
    float small[16];                 /* inline data (FNN_INLINE_BYTES, 8-aligned) when storage is NULL */
} fnn_tensor;

/* ---- tensor lifecycle: core/tensor.c ---- */
FNN_API void fnn_tensor_init(fnn_tensor *t);             /* make an empty header */
FNN_API void fnn_tensor_clear(fnn_tensor *t);            /* drop storage and node; header becomes empty */
FNN_API void fnn_tensor_free(fnn_tensor *t);             /* drop the data now; later ops refuse t */
FNN_API int fnn_tensor_ref(fnn_tensor *out, const fnn_tensor *t);   /* out shares t (one more reference) */
FNN_API int fnn_tensor_needs_clear(const fnn_tensor *t); /* 1 when t holds a storage or node */
FNN_API int64_t fnn_tensor_numel(const fnn_tensor *t);
FNN_API int fnn_tensor_is_contiguous(const fnn_tensor *t);
FNN_API const float *fnn_tensor_data(const fnn_tensor *t); /* first element (CPU, float32), honours offset */
FNN_API const void *fnn_tensor_storage_id(const fnn_tensor *t); /* identifies the buffer (views share it) */
FNN_API int fnn_tensor_shape_str(const fnn_tensor *t, char *buf, int len); /* "[2,3]" */
FNN_API const char *fnn_dtype_name(int dtype);           /* "float32", "int64", "bfloat16"; "unknown" otherwise */
FNN_API int fnn_dtype_size(int dtype);                   /* bytes per element; 0 for an unknown code */

/* creation: shape is ndim sizes; data is copied */
FNN_API int fnn_tensor_from_data(fnn_tensor *out, int ndim, const int64_t *shape, const float *data);
FNN_API int fnn_tensor_from_doubles(fnn_tensor *out, int ndim, const int64_t *shape, const double *data);
/* as above into a tensor of dtype; int64 refuses a value that is not a whole number in range, naming it */
FNN_API int fnn_tensor_from_doubles_dtype(fnn_tensor *out, int ndim, const int64_t *shape, const double *data,
                                          int dtype);
FNN_API int fnn_tensor_from_int64(fnn_tensor *out, int ndim, const int64_t *shape, const int64_t *data);
FNN_API int fnn_empty(fnn_tensor *out, int ndim, const int64_t *shape);   /* uninitialised; for loaders */
FNN_API int fnn_empty_dtype(fnn_tensor *out, int ndim, const int64_t *shape, int dtype);
FNN_API int fnn_full_dtype(fnn_tensor *out, int ndim, const int64_t *shape, double value, int dtype);
/* the same on a device (type * 256 + ordinal, as fnn_to_device takes), made and filled there */
FNN_API int fnn_empty_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, int dtype);
FNN_API int fnn_full_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, double value, int dtype);
/* start, start + step, ... below stop (above it for a negative step); int64 takes whole numbers only */
FNN_API int fnn_arange_dtype(fnn_tensor *out, double start, double stop, double step, int dtype);
/* x as dtype (a new tensor; x itself when it has that dtype already). To int64: refuses a value that
 * is not a whole number, nan or outside +-2^63, naming the first one and its 1-based position */
FNN_API int fnn_to_dtype(fnn_tensor *out, const fnn_tensor *x, int dtype);
FNN_API float *fnn_tensor_mutable_data(fnn_tensor *t);   /* only for a tensor just made by fnn_empty */
FNN_API int fnn_full(fnn_tensor *out, int ndim, const int64_t *shape, double value);
FNN_API int fnn_zeros(fnn_tensor *out, int ndim, const int64_t *shape);
FNN_API int fnn_ones(fnn_tensor *out, int ndim, const int64_t *shape);
FNN_API int fnn_arange(fnn_tensor *out, double start, double stop, double step);
FNN_API int fnn_linspace(fnn_tensor *out, double start, double stop, int64_t n);
FNN_API int fnn_eye(fnn_tensor *out, int64_t n, int64_t m);
FNN_API int fnn_rand(fnn_tensor *out, int ndim, const int64_t *shape);      /* U[0,1) */
FNN_API int fnn_randn(fnn_tensor *out, int ndim, const int64_t *shape);     /* N(0,1) */
FNN_API int fnn_uniform(fnn_tensor *out, int ndim, const int64_t *shape, double lo, double hi);
FNN_API int fnn_normal(fnn_tensor *out, int ndim, const int64_t *shape, double mean, double std);
FNN_API int fnn_bernoulli(fnn_tensor *out, int ndim, const int64_t *shape, double p); /* 1 with prob p */
/* the same three drawn on a device (fnn_device_type * 256 + ordinal): on the CPU exactly the calls
 * above; on a GPU from cuRAND's Philox, seeded by one draw from this thread's stream (so
 * fnn_manual_seed makes them reproducible; the values differ from the CPU's) */
FNN_API int fnn_uniform_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, double lo, double hi);
FNN_API int fnn_normal_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, double mean, double std);
FNN_API int fnn_bernoulli_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, double p);
FNN_API int fnn_randperm(fnn_tensor *out, int64_t n);   /* int64 1-based permutation of 1..n */
/* a (semi-)orthogonal [rows, cols] matrix times gain (QR of a Gaussian matrix, signs fixed as PyTorch) */
FNN_API int fnn_orthogonal(fnn_tensor *out, int64_t rows, int64_t cols, double gain);
FNN_API void fnn_manual_seed(uint64_t seed);             /* this thread's random source */
FNN_API double fnn_random_uniform(void);                 /* one U[0,1) draw from it */
/* this thread's random stream as 6 words, and back (checkpoints resume it exactly) */
FNN_API void fnn_random_get_state(uint64_t *out6);
FNN_API int fnn_random_set_state(const uint64_t *in6);

/* reading values */
FNN_API int fnn_item(const fnn_tensor *t, double *value);                  /* one-element tensor */
FNN_API int fnn_copy_to_floats(const fnn_tensor *t, float *dst, int64_t n); /* row-major, n = numel */
FNN_API int fnn_copy_to_doubles(const fnn_tensor *t, double *dst, int64_t n); /* any dtype, row-major */
FNN_API int fnn_copy_to_int64(const fnn_tensor *t, int64_t *dst, int64_t n);  /* int64 tensors, row-major */
FNN_API int fnn_get(const fnn_tensor *t, const int64_t *index, double *value); /* 0-based index */

/* ---- memory: core/alloc.c ---- */
FNN_API const volatile int64_t *fnn_live_bytes_ptr(int device_type); /* read by Lua without a call */
FNN_API int64_t fnn_live_bytes(int device_type);
FNN_API int64_t fnn_peak_bytes(int device_type);
FNN_API void fnn_empty_cache(void);                      /* give cached CPU buffers back to the OS */

/* ---- devices: core/device.c (the CUDA backend registers itself from cuda/ when built) ---- */
FNN_API int fnn_cuda_built(void);                     /* 1 when built with -DFASTNN_CUDA=ON */
FNN_API int fnn_device_count(int device_type);        /* 0 when that backend is absent or has no device */
/* copy x to device (fnn_device_type * 256 + ordinal); differentiable (gradient copied back) */
FNN_API int fnn_to_device(fnn_tensor *out, const fnn_tensor *x, int device);
FNN_API int fnn_cuda_memory_stats(int64_t *live, int64_t *cached);
FNN_API void fnn_cuda_empty_cache(void);
/* the loader's transfers (core/device.c): out = x (a CPU tensor) on device, staged through a pinned
 * host buffer and copied on the device's copy stream; returns once the copy is queued (later work of
 * the calling thread on that device waits for it on the GPU; the host never waits). Not recorded for
 * autograd: for an x that needs a gradient, a CPU device, or a backend without async copies it is
 * fnn_to_device */
FNN_API int fnn_to_device_async(fnn_tensor *out, const fnn_tensor *x, int device);

/* ---- per-thread op timing (fnn.profile): start, run ops, stop, read the entries, release ---- */
/* start fails (FNN_STATUS_ARG) when this thread is profiling already; the entries stay readable
 * after stop until release or the next start. kind: 0 an op's forward call, 1 a backward rule
 * (with the accumulation of its input gradients), 2 an optimizer's update of one parameter.
 * begin/mark(kind) bracket one op's C call (the Lua bindings' new() and done()); brackets nest,
 * the first op named inside one owns it, and its time excludes the brackets inside it. */
FNN_API int fnn_profile_start(void);
FNN_API int fnn_profile_stop(void);   /* the number of entries */
FNN_API int fnn_profile_entry(int i, const char **name, int *kind, int64_t *calls, int64_t *ns);
FNN_API int fnn_profile_dropped(void);   /* spans not counted: more than 512 op names */
FNN_API void fnn_profile_release(void);
FNN_API void fnn_profile_begin(void);
FNN_API void fnn_profile_mark(int kind);
FNN_API int64_t fnn_profile_now(void);   /* a monotonic clock, ns */
/* wait until everything queued on device (every stream) has finished; a no-op on the CPU */
FNN_API int fnn_device_synchronize(int device);
/* the pinned host buffer cache: stats[0] live bytes, [1] cached bytes, [2] buffers allocated from
 * the driver, [3] reuses of a cached one (all 0 without the CUDA backend) */
FNN_API int fnn_cuda_pinned_stats(int64_t *stats);

/* ---- threads: core/threads.c ---- */
FNN_API void fnn_set_num_threads(int n);   /* the core's kernels, oneDNN and OpenBLAS together */
FNN_API int fnn_get_num_threads(void);
/* 1 in the child of a fork made after this process's OpenMP pool may have started (a forward pass
 * before nginx forks its workers): libgomp cannot rebuild its pool there, so the child's kernels
 * run on one thread (fnn_set_num_threads keeps 1). Build models after the fork for a pool each. */
FNN_API int fnn_threads_forked(void);

/* ---- the compute layer: core/blas.c ----
 * The GEMM-bound ops run oneDNN's kernels ("onednn", the default where the build has oneDNN) or
 * OpenBLAS's ("portable"); FASTNN_KERNELS picks at load. fnn_config writes what a bug report needs
 * (CPU, instruction sets, the BLAS and its core, oneDNN and its ISA, threads, build) as
 * "key<TAB>value" lines into buf, cut at cap, and returns the length it needed. */
FNN_API int fnn_set_kernels(const char *name);
FNN_API const char *fnn_get_kernels(void);
FNN_API int64_t fnn_config(char *buf, int64_t cap);
/* ---- float32 precision: core/precision.c ----
 * PyTorch's mkldnn fp32_precision per family: family "matmul" (matmul, linear, bmm, attention's
 * products), "conv" (the convolutions) or "rnn" (the recurrent cells), or NULL / "all" for every one;
 * mode "ieee" (float32, the default) or "bf16" (bfloat16 operands, float32 sums; tensors stay float32).
 * get returns the family's mode, NULL for an unknown family. */
FNN_API int fnn_set_float32_precision(const char *family, const char *mode);
FNN_API const char *fnn_get_float32_precision(const char *family);
/* which kernels compute bf16 precision's products: "auto" (the default) runs oneDNN's bf16 kernels where
 * the CPU's bf16 unit beats its float32 FMA (AMX; AVX512-BF16 measured once, core/bf16_units.c), and
 * elsewhere float32 products on bf16-rounded operands; "native" the first wherever the CPU has bf16 units,
 * "emulated" always the second. The values agree up to the order of the sums. FASTNN_BF16_PATH at load */
FNN_API int fnn_set_bf16_path(const char *path);
FNN_API const char *fnn_get_bf16_path(void);
/* the calling thread's autocast regions (fnn.autocast): while one is open every family computes its
 * products with bfloat16 operands, whatever the setting above; each returns the depth after it */
FNN_API int fnn_autocast_enter(void);
FNN_API int fnn_autocast_exit(void);
/* held (delta +1, released by -1; returns the count after): the ops that make autocast's bfloat16 output
 * themselves (linear) return float32 inside an open region, as every other op does; fastnn.precision
 * holds it while a wrapped op or layer runs on its widened inputs, since the wrapper narrows its results.
 * Their products still take bfloat16 operands */
FNN_API int fnn_autocast_hold(int delta);

/* ---- elementwise: core/ops/elementwise.c ----
 * int64 follows PyTorch's promotion: add, sub, mul (and neg) of int64 with int64 or a whole number
 * stay int64; other mixes with int64 compute in float32; unary float ops refuse int64 */
/* binary: a, b broadcast (NumPy rules) -> broadcast shape */
FNN_API int fnn_add(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_sub(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_mul(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_div(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_pow(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_maximum(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_minimum(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
/* comparisons: -> float32 1.0 / 0.0, not differentiable; int64 operands compare exactly */
FNN_API int fnn_eq(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_ne(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_lt(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_le(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_gt(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_ge(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
/* with a number on the right (s) or left (rsub, rdiv, rpow: s op a) */
FNN_API int fnn_add_scalar(fnn_tensor *out, const fnn_tensor *a, double s);
FNN_API int fnn_mul_scalar(fnn_tensor *out, const fnn_tensor *a, double s);
FNN_API int fnn_rsub_scalar(fnn_tensor *out, const fnn_tensor *a, double s);
FNN_API int fnn_rdiv_scalar(fnn_tensor *out, const fnn_tensor *a, double s);
FNN_API int fnn_pow_scalar(fnn_tensor *out, const fnn_tensor *a, double s);
FNN_API int fnn_rpow_scalar(fnn_tensor *out, const fnn_tensor *a, double s);
/* unary: x -> same shape */
FNN_API int fnn_neg(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_abs(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_exp(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_log(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_sqrt(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_rsqrt(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_sin(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_cos(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_tanh(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_sigmoid(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_relu(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_gelu(fnn_tensor *out, const fnn_tensor *x);       /* exact, erf */
FNN_API int fnn_gelu_tanh(fnn_tensor *out, const fnn_tensor *x);  /* tanh approximation */
FNN_API int fnn_silu(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_softplus(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_clamp(fnn_tensor *out, const fnn_tensor *x, double lo, double hi); /* +-inf: no bound */
/* activations (PyTorch's formulas): leaky_relu x > 0 ? x : slope x; elu x > 0 ? x : alpha (e^x - 1);
 * selu scale elu(x, alpha) with the fixed scale 1.0507..., alpha 1.6732...; celu x > 0 ? x :
 * alpha (e^(x/alpha) - 1), alpha != 0; mish x tanh(softplus x); hardsigmoid relu6(x + 3) / 6;
 * hardswish x hardsigmoid(x); softsign x / (1 + |x|) */
FNN_API int fnn_leaky_relu(fnn_tensor *out, const fnn_tensor *x, double negative_slope);
FNN_API int fnn_elu(fnn_tensor *out, const fnn_tensor *x, double alpha);
FNN_API int fnn_selu(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_celu(fnn_tensor *out, const fnn_tensor *x, double alpha);
FNN_API int fnn_mish(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_hardsigmoid(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_hardswish(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_softsign(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_erf(fnn_tensor *out, const fnn_tensor *x);   /* the error function */
FNN_API int fnn_logit(fnn_tensor *out, const fnn_tensor *x, double eps);   /* log(x/(1-x)); eps < 0: no clamp */
/* where: cond != 0 picks a, else b; all three broadcast */
FNN_API int fnn_where(fnn_tensor *out, const fnn_tensor *cond, const fnn_tensor *a, const fnn_tensor *b);

/* ---- reduction: core/ops/reduction.c ----
 * dim >= 0 reduces that dim (keepdim keeps it as size 1); dim = -1 reduces everything to a scalar [] */
FNN_API int fnn_sum(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim);   /* an int64 x sums exactly into int64 */
FNN_API int fnn_mean(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim);
FNN_API int fnn_prod(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim);
FNN_API int fnn_var(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim, int unbiased);
FNN_API int fnn_std(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim, int unbiased);
FNN_API int fnn_norm(fnn_tensor *out, const fnn_tensor *x, double p, int dim, int keepdim);
FNN_API int fnn_logsumexp(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim);
/* max/min: values (differentiable; ties split the gradient evenly when dim = -1, as PyTorch)
 * and int64 1-based indices (indices may be NULL); an int64 x gives int64 values, no gradient */
FNN_API int fnn_max(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int dim, int keepdim);
FNN_API int fnn_min(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int dim, int keepdim);
FNN_API int fnn_argmax(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim);
FNN_API int fnn_argmin(fnn_tensor *out, const fnn_tensor *x, int dim, int keepdim);
FNN_API int fnn_softmax(fnn_tensor *out, const fnn_tensor *x, int dim);
FNN_API int fnn_log_softmax(fnn_tensor *out, const fnn_tensor *x, int dim);
FNN_API int fnn_cumsum(fnn_tensor *out, const fnn_tensor *x, int dim);   /* running sums along dim */
FNN_API int fnn_logcumsumexp(fnn_tensor *out, const fnn_tensor *x, int dim);   /* running log-sum-exp along dim */

/* ---- linalg: core/ops/linalg.c ---- */
/* matmul: 1-D..N-D with batch broadcasting, PyTorch rules. matmul, bmm and outer take float32 operands, or
 * bfloat16 on the CPU (widened exactly; the sums in float32); the output is bfloat16 inside an autocast region
 * (not held) or when both operands are bfloat16, float32 otherwise; their gradients are float32 */
FNN_API int fnn_matmul(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);
FNN_API int fnn_bmm(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b);   /* [B,n,k]x[B,k,m] */
FNN_API int fnn_outer(fnn_tensor *out, const fnn_tensor *a, const fnn_tensor *b); /* [n]x[m] -> [n,m] */
/* linear: x [..., in], w [out, in], b [out] or NULL -> [..., out]. Each operand float32, or bfloat16 on
 * the CPU (widened exactly; the sums in float32). The output is bfloat16 inside an autocast region (not
 * held) or when every operand is bfloat16, float32 otherwise; its gradients are float32 */
FNN_API int fnn_linear(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b);
/* linear then an activation, as one node: act(x w^T + b) with activation "relu" or "gelu" (the exact, erf
 * GELU), NULL for none; the same values and gradients as fnn_linear followed by fnn_relu / fnn_gelu */
FNN_API int fnn_linear_act(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b,
                           const char *activation);
/* fnn_linear_act with the output's dtype chosen: FNN_DTYPE_FLOAT32, FNN_DTYPE_BFLOAT16 (the CPU only), or
 * -1 for the rule above (nn.Linear asks for bfloat16 from a bfloat16 x: a layer's output follows its input) */
FNN_API int fnn_linear_to(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b,
                          const char *activation, int dtype);

/* ---- conv: core/ops/conv.c ----
 * images are [N,C,H,W] (or unbatched [C,H,W]); sizes follow PyTorch:
 * Ho = floor((H + 2 pad_h - dil_h (kh - 1) - 1) / stride_h) + 1, likewise Wo */
/* conv: nd = 1, 2 or 3 spatial dims (conv1d, conv2d, conv3d): x [N,C,*in] or [C,*in],
 * w [O, C/groups, *k], b [O] or NULL -> [N,O,*out],
 * out = floor((in + pad_before + pad_after - dil (k - 1) - 1) / stride) + 1 per dim.
 * stride[nd], dilation[nd]; padding[2*nd] = {before, after} for each dim in turn; a NULL array
 * means the defaults (1, 0, 1). groups = C gives the direct depthwise kernels.
 * x, w and b each float32, or bfloat16 on the CPU (widened exactly; the sums in float32). The output is
 * bfloat16 inside an autocast region (not held) or when every operand is bfloat16, float32 otherwise;
 * its gradients are float32 */
FNN_API int fnn_conv(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd, const int *stride, const int *padding, const int *dilation, int groups);
/* conv_transpose: nd = 1, 2 or 3 (conv_transpose1d/2d/3d), the input gradient of conv:
 * x [N,Cin,*in] or [Cin,*in], w [Cin, Cout/groups, *k], b [Cout] or NULL -> [N,Cout,*out],
 * out = (in - 1) stride - pad_before - pad_after + dil (k - 1) + output_padding + 1;
 * output_padding[nd] must be smaller than the stride or the dilation of its dim; dtypes as conv */
FNN_API int fnn_conv_transpose(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd, const int *stride, const int *padding, const int *output_padding, const int *dilation, int groups);
/* fnn_conv and fnn_conv_transpose with the output's dtype chosen: FNN_DTYPE_FLOAT32, FNN_DTYPE_BFLOAT16 (the
 * CPU only), or -1 for the rule above (nn.Conv2d asks for bfloat16 from a bfloat16 x: a layer's output
 * follows its input) */
FNN_API int fnn_conv_to(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd, const int *stride, const int *padding, const int *dilation, int groups, int dtype);
FNN_API int fnn_conv_transpose_to(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd, const int *stride, const int *padding, const int *output_padding, const int *dilation, int groups, int dtype);
/* fnn_conv_to with an activation in the same node (Keras' Conv2D(..., activation = 'relu')): NULL or "none",
 * or "relu": y = relu(conv(x, w) + b), the values and gradients of conv then relu, with no tensor between
 * (the CPU's oneDNN kernels apply it as a post-op) */
FNN_API int fnn_conv_act_to(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int nd, const int *stride, const int *padding, const int *dilation, int groups, const char *activation, int dtype);
/* conv2d: x [N,C,H,W], w [O, C/groups, kh, kw], b [O] or NULL -> [N,O,Ho,Wo]; fnn_conv with
 * nd = 2 and the same padding on both sides */
FNN_API int fnn_conv2d(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b, int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups);
/* max_pool2d: x [N,C,H,W] -> [N,C,Ho,Wo], padding counts as -inf (at most half the kernel);
 * ceil_mode rounds the output size up while the last window starts inside the input or the
 * left padding; the gradient goes to each window's first maximum */
FNN_API int fnn_max_pool2d(fnn_tensor *out, const fnn_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, int ceil_mode);
/* avg_pool2d: as max_pool2d, the mean of each window; count_include_pad divides by the window
 * clipped to the padded input, else by its part inside the input */
FNN_API int fnn_avg_pool2d(fnn_tensor *out, const fnn_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, int ceil_mode, int count_include_pad);

/* ---- pool: core/ops/pool.c ----
 * pooling over 1 and 3 spatial dims (the 2-d pools are in conv), adaptive average pooling and
 * upsampling. Inputs are channels first and batched or not: [N,C,L] / [C,L], [N,C,H,W] / [C,H,W],
 * [N,C,D,H,W] / [C,D,H,W]. Kernel, stride and padding follow max_pool2d/avg_pool2d above. */
FNN_API int fnn_max_pool1d(fnn_tensor *out, const fnn_tensor *x, int k, int s, int p, int ceil_mode);
FNN_API int fnn_max_pool3d(fnn_tensor *out, const fnn_tensor *x, int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw, int ceil_mode);
FNN_API int fnn_avg_pool1d(fnn_tensor *out, const fnn_tensor *x, int k, int s, int p, int ceil_mode, int count_include_pad);
FNN_API int fnn_avg_pool3d(fnn_tensor *out, const fnn_tensor *x, int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw, int ceil_mode, int count_include_pad);
/* adaptive_avg_pool2d: x [N,C,H,W] -> [N,C,oh,ow]; output i averages input rows
 * floor(i H / oh) .. ceil((i + 1) H / oh) - 1 (windows may overlap), likewise columns */
FNN_API int fnn_adaptive_avg_pool2d(fnn_tensor *out, const fnn_tensor *x, int64_t oh, int64_t ow);
/* upsample_nearest: the last `dims` (1..3) dims of x resized to size[0..dims-1]; output index o
 * reads input floor(o * in / out) (exact integer arithmetic) */
FNN_API int fnn_upsample_nearest(fnn_tensor *out, const fnn_tensor *x, int dims, const int64_t *size);
/* upsample_bilinear2d: x [N,C,H,W] -> [N,C,oh,ow]. align_corners 0: half-pixel centres,
 * src = (o + 0.5) in / out - 0.5 clamped at 0; 1: src = o (in - 1) / (out - 1) */
FNN_API int fnn_upsample_bilinear2d(fnn_tensor *out, const fnn_tensor *x, int64_t oh, int64_t ow, int align_corners);

/* ---- shape: core/ops/shape.c (views share storage; no copies) ---- */
FNN_API int fnn_reshape(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape); /* one -1 allowed; copies only when not viewable */
FNN_API int fnn_view(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape);    /* refuses when a copy would be needed */
FNN_API int fnn_transpose(fnn_tensor *out, const fnn_tensor *x, int d1, int d2);
FNN_API int fnn_permute(fnn_tensor *out, const fnn_tensor *x, int ndim, const int *dims);
FNN_API int fnn_expand(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *shape);  /* -1 keeps a size */
FNN_API int fnn_narrow(fnn_tensor *out, const fnn_tensor *x, int dim, int64_t start, int64_t length); /* start 0-based */
FNN_API int fnn_select(fnn_tensor *out, const fnn_tensor *x, int dim, int64_t index);         /* index 0-based; drops dim */
FNN_API int fnn_squeeze(fnn_tensor *out, const fnn_tensor *x, int dim);  /* dim = -1: every size-1 dim */
FNN_API int fnn_unsqueeze(fnn_tensor *out, const fnn_tensor *x, int dim);
FNN_API int fnn_flatten(fnn_tensor *out, const fnn_tensor *x, int start_dim, int end_dim);
FNN_API int fnn_contiguous(fnn_tensor *out, const fnn_tensor *x);
FNN_API int fnn_cat(fnn_tensor *out, int n, const fnn_tensor *const *xs, int dim);
FNN_API int fnn_stack(fnn_tensor *out, int n, const fnn_tensor *const *xs, int dim);
FNN_API int fnn_repeat(fnn_tensor *out, const fnn_tensor *x, int ndim, const int64_t *repeats);
/* pad: pads[2*i], pads[2*i+1] = before/after for the LAST npairs dims, last dim first (PyTorch F.pad order) */
FNN_API int fnn_pad(fnn_tensor *out, const fnn_tensor *x, int npairs, const int64_t *pads, double value);
/* pad_mode: fnn_pad with the new places read from x (PyTorch F.pad's modes): reflect mirrors about the
 * edge element (width < the dim's size), replicate repeats the edge element (the dim non-empty),
 * circular wraps around (width <= the dim's size); widths >= 0; CONSTANT pads with zeros. The gradient
 * adds each output place back onto the input place it was read from. */
typedef enum fnn_pad_kind { FNN_PAD_CONSTANT = 0, FNN_PAD_REFLECT = 1, FNN_PAD_REPLICATE = 2, FNN_PAD_CIRCULAR = 3 } fnn_pad_kind;
FNN_API int fnn_pad_mode(fnn_tensor *out, const fnn_tensor *x, int npairs, const int64_t *pads, int mode);
FNN_API int fnn_tril(fnn_tensor *out, const fnn_tensor *x, int64_t k);
FNN_API int fnn_triu(fnn_tensor *out, const fnn_tensor *x, int64_t k);

/* ---- index: core/ops/index.c ----
 * index tensors hold 1-based ids: int64, or float32 holding whole numbers; index_select and gather
 * copy x of any dtype, scatter_add and masked_fill are float32 */
FNN_API int fnn_index_select(fnn_tensor *out, const fnn_tensor *x, int dim, const fnn_tensor *index); /* index 1-D */
FNN_API int fnn_gather(fnn_tensor *out, const fnn_tensor *x, int dim, const fnn_tensor *index);
FNN_API int fnn_scatter_add(fnn_tensor *out, const fnn_tensor *x, int dim, const fnn_tensor *index, const fnn_tensor *src);
FNN_API int fnn_masked_fill(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *mask, double value);

/* ---- loss: core/ops/loss.c (fused, for speed and numerical safety) ----
 * reduction: MEAN and SUM give a scalar [], NONE one loss per element (per prediction site for the
 * class losses). Class ids are 1-based (int64 or whole floats); with has_ignore, a site whose id is
 * ignore_index counts neither in the sum nor in the mean, and gets a zero gradient. Class losses
 * take logits [N, C] (targets [N]), [N, C, d...] (targets [N, d...]) or [C] (a target []). */
typedef enum fnn_reduction { FNN_REDUCTION_NONE = 0, FNN_REDUCTION_MEAN = 1, FNN_REDUCTION_SUM = 2 } fnn_reduction;
/* cross_entropy: logits [N, C], targets [N] -> scalar mean over the rows */
FNN_API int fnn_cross_entropy(fnn_tensor *out, const fnn_tensor *logits, const fnn_tensor *targets);
/* cross_entropy_loss: log-softmax over the class dim + nll in one pass. weight [C] or NULL: site
 * losses scaled by w[y], and MEAN divides by the sum of w[y] over the counted sites (a weighted
 * mean). label_smoothing e in [0, 1]: (1 - e) nll + e/C sum_c w[c] (-log p_c), as PyTorch */
FNN_API int fnn_cross_entropy_loss(fnn_tensor *out, const fnn_tensor *logits, const fnn_tensor *targets,
                                   const fnn_tensor *weight, int has_ignore, int64_t ignore_index,
                                   double label_smoothing, int reduction);
/* nll_loss: log_probs shaped like cross_entropy's logits: -w[y] log_probs[y] per site, reduced as there */
FNN_API int fnn_nll_loss(fnn_tensor *out, const fnn_tensor *log_probs, const fnn_tensor *targets,
                         const fnn_tensor *weight, int has_ignore, int64_t ignore_index, int reduction);
/* binary_cross_entropy: pred probabilities in [0, 1] (a value outside is refused, naming it and its
 * position), target pred's shape, weight NULL or broadcast to pred:
 * -w (t log p + (1 - t) log(1 - p)) with each log clamped at -100; MEAN divides by the element count.
 * Differentiable in pred and target. */
FNN_API int fnn_binary_cross_entropy(fnn_tensor *out, const fnn_tensor *pred, const fnn_tensor *target,
                                     const fnn_tensor *weight, int reduction);
/* bce_with_logits: x logits, target x's shape, weight and pos_weight NULL or broadcast to x:
 * w ((1 - t) x + (1 + (pw - 1) t) softplus(-x)), stable for any x. Differentiable in x and target. */
FNN_API int fnn_bce_with_logits(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *target,
                                const fnn_tensor *weight, const fnn_tensor *pos_weight, int reduction);
FNN_API int fnn_mse_loss(fnn_tensor *out, const fnn_tensor *pred, const fnn_tensor *target); /* mean */

/* ---- norm: core/ops/norm.c ---- */
/* layer_norm: normalize each row of the trailing `normalized` elements (the last dims whose
 * product is `normalized`) to mean 0, variance 1 (biased, eps inside the sqrt, as PyTorch),
 * then y = xhat * w + b; w and b have `normalized` elements (either may be NULL). out: x's shape */
FNN_API int fnn_layer_norm(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, const fnn_tensor *b,
                           int64_t normalized, double eps);
/* add_layer_norm: sum = x + r (r x's shape), out = layer_norm(sum, w, b, normalized, eps), from one pass
 * over the rows; the graph, values and gradients are those of fnn_add then fnn_layer_norm */
FNN_API int fnn_add_layer_norm(fnn_tensor *sum, fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *r,
                               const fnn_tensor *w, const fnn_tensor *b, int64_t normalized, double eps);
/* batch_norm's activation, applied in the pass that writes y (and its gradient inside the backward's) */
typedef enum fnn_norm_activation { FNN_NORM_ACT_NONE = 0, FNN_NORM_ACT_RELU = 1 } fnn_norm_activation;
/* batch_norm: x [N, C] or [N, C, *]; w, b, running_mean, running_var [C] (w, b may be NULL).
 * training: per channel the mean and biased variance over N and the spatial dims normalize x
 * (y = (x - mean) / sqrt(var + eps) * w + b); batch_mean and batch_var (either may be NULL) receive
 * the batch mean and the UNBIASED variance [C] for the caller's running-stat update; the running
 * stats are not read (may be NULL). eval (training = 0): normalizes with running_mean and
 * running_var, both required. activation FNN_NORM_ACT_RELU: out = max(y, 0), the same values and
 * gradients as relu(batch_norm(x)) (gradient 0 where out = 0) from one node, no tensor between.
 * out: x's shape; differentiable in x, w, b */
FNN_API int fnn_batch_norm(fnn_tensor *out, fnn_tensor *batch_mean, fnn_tensor *batch_var, const fnn_tensor *x,
                           const fnn_tensor *running_mean, const fnn_tensor *running_var, const fnn_tensor *w,
                           const fnn_tensor *b, int training, double eps, int activation);
/* group_norm: x [N, C, *], C divisible by groups; mean and biased variance per (sample, group)
 * over its C/groups channels and the spatial dims, then y = xhat * w + b per channel (w, b [C],
 * either NULL). groups = C is instance norm. out: x's shape */
FNN_API int fnn_group_norm(fnn_tensor *out, const fnn_tensor *x, int64_t groups, const fnn_tensor *w,
                           const fnn_tensor *b, double eps);
/* rms_norm: each row of the trailing `normalized` elements times 1 / sqrt(mean(x^2) + eps), then
 * * w (`normalized` elements, or NULL). out: x's shape */
FNN_API int fnn_rms_norm(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *w, int64_t normalized, double eps);

/* ---- rnn: core/ops/rnn.c ---- */
/* lstm_cell: z [N, 4H] gate pre-activations in PyTorch's order i, f, g, o; c [N, H] the previous
 * cell -> out [N, 2H] = (h, c'): i, f, o = sigmoid, g = tanh, c' = f c + i g, h = o tanh(c') */
FNN_API int fnn_lstm_cell(fnn_tensor *out, const fnn_tensor *z, const fnn_tensor *c);
/* whole-sequence layers, one node each (nn.SimpleRNN, nn.LSTM, nn.GRU): x [N, T, I] batch first,
 * T >= 1; h0, c0 [N, H] initial states or NULL (zeros); w_ih [G H, I], w_hh [G H, H], b_ih, b_hh
 * [G H] or NULL, in PyTorch's layouts: G = 1 for rnn_tanh (h' = tanh(W_ih x + b_ih + W_hh h + b_hh)),
 * 4 for lstm (gates i, f, g, o), 3 for gru (r, z, n; n = tanh(W_in x + b_in + r (W_hn h + b_hn)),
 * h' = (1 - z) n + z h). reverse = 1 reads x from its last step to its first (Keras go_backwards).
 * out [N, T, H]: the hidden state after each step in processing order, out[:, T-1] the final one;
 * lstm's out is [N, T+1, H], row T the final cell state. Differentiable in every tensor input
 * (backprop through time in C). */
FNN_API int fnn_rnn_tanh(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *h0, const fnn_tensor *w_ih,
                         const fnn_tensor *w_hh, const fnn_tensor *b_ih, const fnn_tensor *b_hh, int reverse);
FNN_API int fnn_lstm(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *h0, const fnn_tensor *c0,
                     const fnn_tensor *w_ih, const fnn_tensor *w_hh, const fnn_tensor *b_ih, const fnn_tensor *b_hh,
                     int reverse);
FNN_API int fnn_gru(fnn_tensor *out, const fnn_tensor *x, const fnn_tensor *h0, const fnn_tensor *w_ih,
                    const fnn_tensor *w_hh, const fnn_tensor *b_ih, const fnn_tensor *b_hh, int reverse);

/* ---- embedding: core/ops/embedding.c ---- */
/* embedding: weight [V, W]; ids (int64, or float32 holding whole numbers) of any shape, 1-based ->
 * [*ids, W], row k = weight row ids[k]. padding_idx: a 1-based id whose row gets no gradient, 0 for
 * none. An id outside 1..V is refused, naming it, its position and V. Differentiable in weight. */
FNN_API int fnn_embedding(fnn_tensor *out, const fnn_tensor *weight, const fnn_tensor *ids, int64_t padding_idx);

/* ---- attention: core/ops/attention.c ---- */
/* attention (fused scaled-dot-product): q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] -> [B,H,Tq,Dv],
 * per (batch, head) softmax(scale q k^T) v over the keys each query may see: with causal, query i
 * sees key j when j <= i + Tk - Tq (a cached step's new queries see the whole prefix);
 * key_padding_mask [B,Tk] (float32 or int64, nonzero = padding) or NULL hides keys. A query that
 * sees no key gets zeros. No mask tensor is made. Differentiable in q, k and v. The result is a
 * view of [B,Tq,H,Dv] storage, so transposing dims 2 and 3 back gives a contiguous tensor. q, k, v
 * float32, or bfloat16 on the CPU (widened exactly, computed in float32; a bfloat16 mask is read as its
 * values): the output is bfloat16 inside an autocast region (not held) or when q, k and v are all
 * bfloat16, float32 otherwise; the gradients are float32 */
FNN_API int fnn_attention(fnn_tensor *out, const fnn_tensor *q, const fnn_tensor *k, const fnn_tensor *v,
                          const fnn_tensor *key_padding_mask, int causal, double scale);
/* attention_cache_append: writes k [B,H,t,D] and v [B,H,t,Dv] IN PLACE into rows pos..pos+t-1
 * (0-based) of dim 3 of k_cache [B,H,cap,D] and v_cache [B,H,cap,Dv]: contiguous buffers without a
 * graph that the caller made for this (fnn_zeros) and shares with no one but its own views. Rows
 * below pos are never touched, so views of them stay valid. Not differentiable */
FNN_API int fnn_attention_cache_append(fnn_tensor *k_cache, fnn_tensor *v_cache, const fnn_tensor *k,
                                       const fnn_tensor *v, int64_t pos);

/* ---- sort: core/ops/sort.c ----
 * values are differentiable (the gradient goes back to the positions they came from); indices are
 * int64, 1-based along dim. Equal values keep their order (stable); nan sorts as the largest value */
FNN_API int fnn_sort(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int dim, int descending);
/* topk: the k largest (largest = 1) or smallest (largest = 0) along dim, best first */
FNN_API int fnn_topk(fnn_tensor *values, fnn_tensor *indices, const fnn_tensor *x, int64_t k, int dim, int largest);

/* ---- sample: core/ops/sample.c (decoding; not differentiable, not in the op registry) ----
 * sample: one token id from one position's logits ([V], [1, V] or [1, 1, V]; CPU, float32), with
 * Hugging Face's warpers in their order: logits / temperature, the top_k largest (0: all; logits
 * equal to the k-th stay too), the nucleus of what is left (a token stays while the probability
 * mass above it is below top_p, so at least one; 1: all), then one U[0,1) from this thread's random
 * source picks an id in proportion to softmax over what is kept (walking the ids in order).
 * temperature 0 is the argmax (the first of equal maxima) and draws nothing. -inf logits are never
 * drawn; nan or +inf is refused. *id is 1-based. */
FNN_API int fnn_sample(int64_t *id, const fnn_tensor *logits, double temperature, int64_t top_k, double top_p);

/* ---- serialize: core/io/serialize.c (checkpoints and safetensors files; docs/checkpoint-format.md) ----
 * One container: a safetensors file (8-byte little-endian header length, a JSON header of
 * {name: {dtype, shape, data_offsets}} and string __metadata__, then the data, little-endian).
 * A checksummed file (what fastnn writes, .fdl) also carries in __metadata__ the CRC-32 (zlib) of
 * the header ("fdl.header_crc32") and of every tensor ("fdl.crc32.<name>"); a file with any
 * "fdl." metadata key must have them all, and every one must match. Untrusted input: the header
 * is validated whole (offsets tile the data exactly, sizes agree with shapes) before any tensor
 * is allocated, so a corrupted or hostile file is refused with a message, never a crash. */
/* dtypes on disk; 0..3 share their codes with fnn_dtype and the codes it keeps for 16-bit floats.
 * Reading widens F16, BF16 and F64 to float32 and I32 to int64 */
typedef enum fnn_st_dtype {
    FNN_ST_F32 = 0, FNN_ST_I64 = 1, FNN_ST_F16 = 2, FNN_ST_BF16 = 3, FNN_ST_F64 = 4, FNN_ST_I32 = 5
} fnn_st_dtype;
typedef struct fnn_safetensors fnn_safetensors;   /* an opened, validated file */
/* write n tensors (CPU or GPU, any strides; names unique) and n_meta metadata strings to path
 * atomically: a temporary file beside it, fsync, rename, fsync of the directory. float32
 * tensors are stored as float_dtype (FNN_ST_F32, FNN_ST_F16 or FNN_ST_BF16, rounded to nearest
 * even), int64 ones as I64. checksums = 1 adds the CRC-32 keys (then no key of meta may start
 * with "fdl.crc32." or be "fdl.header_crc32"); checksums = 0 refuses any "fdl." key. On failure
 * the temporary file is removed and an earlier file at path is left as it was. */
FNN_API int fnn_safetensors_save(const char *path, int n, const char *const *names, const fnn_tensor *const *tensors,
                                 int n_meta, const char *const *meta_keys, const char *const *meta_values,
                                 int float_dtype, int checksums);
/* open and validate path (header and its checksum; tensor data is checked as it is read) */
FNN_API int fnn_safetensors_open(fnn_safetensors **out, const char *path);
FNN_API void fnn_safetensors_close(fnn_safetensors *f);
FNN_API int fnn_safetensors_count(const fnn_safetensors *f);        /* tensors, in file order */
FNN_API const char *fnn_safetensors_name(const fnn_safetensors *f, int i);
/* tensor i: its dtype on disk (fnn_st_dtype), ndim and shape (FNN_MAX_DIMS entries) */
FNN_API int fnn_safetensors_info(const fnn_safetensors *f, int i, int *st_dtype, int *ndim, int64_t *shape);
/* tensor i as a new CPU tensor (float32, or int64 for integer dtypes), its CRC-32 checked */
FNN_API int fnn_safetensors_read(fnn_tensor *out, fnn_safetensors *f, int i);
/* as fnn_safetensors_read, but a BF16 tensor stays bfloat16 (its bytes as stored) */
FNN_API int fnn_safetensors_read_kept(fnn_tensor *out, fnn_safetensors *f, int i);
FNN_API int fnn_safetensors_verify(fnn_safetensors *f, int i);      /* the CRC check alone */
FNN_API int fnn_safetensors_checksummed(const fnn_safetensors *f);  /* 1: header and tensors carry CRCs */
/* __metadata__ in file order, without the checksum keys */
FNN_API int fnn_safetensors_meta_count(const fnn_safetensors *f);
FNN_API const char *fnn_safetensors_meta_key(const fnn_safetensors *f, int i);
FNN_API const char *fnn_safetensors_meta_value(const fnn_safetensors *f, int i);
FNN_API const char *fnn_st_dtype_name(int st_dtype);              /* "F32", "BF16", ...; "unknown" */
/* JSON text read with cJSON, walked from Lua (the training state in a checkpoint's metadata):
 * fnn_json_parse returns the root or NULL with an error naming the position; free the root only.
 * Types: 0 null, 1 false, 2 true, 3 number, 4 string, 5 array, 6 object. A child of an object has
 * a key. Out-of-range positions give NULL. */
typedef struct fnn_json fnn_json;
FNN_API fnn_json *fnn_json_parse(const char *text, size_t len);
FNN_API void fnn_json_free(fnn_json *root);
FNN_API int fnn_json_type(const fnn_json *j);
FNN_API double fnn_json_number(const fnn_json *j);
FNN_API const char *fnn_json_string(const fnn_json *j);
FNN_API int fnn_json_size(const fnn_json *j);                    /* children of an array or object */
FNN_API const fnn_json *fnn_json_child(const fnn_json *j, int i);  /* 0-based */
FNN_API const char *fnn_json_key(const fnn_json *j);

/* ---- png: core/io/png.c (libpng; the pictures of fastnn.plot) ---- */
/* path <- a width x height image of 8-bit pixels, channels 1 (grey), 2 (grey + alpha), 3 (RGB) or 4 (RGBA),
 * rows top first, each width * channels bytes. Atomic: written to path.tmp.<pid>.<n>, then renamed. */
FNN_API int fnn_png_write(const char *path, int width, int height, int channels, const uint8_t *pixels);
/* read a PNG: its size and channels (palettes and low bit depths expanded to 8 bits, 16 bits stripped),
 * and with pixels != NULL its rows, top first, into pixels (cap bytes, at least width * height * channels) */
FNN_API int fnn_png_read(const char *path, int *width, int *height, int *channels, uint8_t *pixels, int64_t cap);

/* ---- images: core/io/image.c (PNG through libpng, JPEG through TurboJPEG) ---- */
/* out <- the picture at path (PNG or JPEG, told by its first bytes) as float32 [C, H, W] in [0, 1]:
 * C = 3 for colour, 1 for grey; an alpha channel is dropped. A file the decoders refuse (empty,
 * truncated, a broken checksum, not a picture) fails with FNN_STATUS_IO and a message naming it. */
FNN_API int fnn_image_load(fnn_tensor *out, const char *path);
/* path <- t ([C, H, W] with C 1 or 3, or [H, W]; values clamped to [0, 1], rounded to 8 bits), PNG or
 * JPEG by path's extension (.png, .jpg, .jpeg); quality 1..100 is JPEG's (4:2:0 colour) */
FNN_API int fnn_image_save(const char *path, const fnn_tensor *t, int quality);
/* out <- x resized to [C, h, w]: bilinear (half-pixel centres), antialiased when shrinking (the
 * triangle filter widened by the scale, as Pillow and torchvision's antialias) */
FNN_API int fnn_image_resize(fnn_tensor *out, const fnn_tensor *x, int64_t h, int64_t w);
/* out <- x[:, top : top + h, left : left + w] (0-based), a copy; the box must lie inside x */
FNN_API int fnn_image_crop(fnn_tensor *out, const fnn_tensor *x, int64_t top, int64_t left, int64_t h, int64_t w);
FNN_API int fnn_image_hflip(fnn_tensor *out, const fnn_tensor *x);     /* mirrored left to right */
FNN_API int fnn_image_to_gray(fnn_tensor *out, const fnn_tensor *x);   /* [1, H, W]: .299 R + .587 G + .114 B */

/* ---- picture transforms: core/io/transforms.c (fastnn.data.transforms) ---- */
enum {
    FNN_TRANSFORM_RESIZE = 1,              /* h, w (w 0: the shorter side to h) */
    FNN_TRANSFORM_CENTER_CROP = 2,         /* h, w */
    FNN_TRANSFORM_RANDOM_RESIZED_CROP = 3, /* h, w; p: scale lo, hi, ratio lo, hi */
    FNN_TRANSFORM_HFLIP = 4,               /* p[0]: the probability */
    FNN_TRANSFORM_COLOR_JITTER = 5,        /* p: brightness, contrast, saturation amounts */
    FNN_TRANSFORM_NORMALIZE = 6,           /* h: values given (1 or C); p[0..3] means, p[4..7] stds */
    FNN_TRANSFORM_GRAYSCALE = 7
};
typedef struct fnn_transform_step {
    int32_t kind;
    int32_t reserved;
    int64_t h, w;
    double p[8];
} fnn_transform_step;
/* out <- the steps applied in order to x (a float32 picture [C, H, W] or [H, W]; x is not changed).
 * The random steps draw from *rng, a splitmix64 state the caller owns and seeds. */
FNN_API int fnn_transform_apply(fnn_tensor *out, const fnn_tensor *x, int n, const fnn_transform_step *steps,
                                uint64_t *rng);

/* ---- ImageFolder's pictures: core/io/image_folder.c ---- */
/* a set of n picture files, paths[i] with class id labels[i], and the transform steps run on each
 * (copied). Reference-counted: fnn_image_set_free drops one reference, fnn_image_set_ref adds one. */
typedef struct fnn_image_set fnn_image_set;
FNN_API int fnn_image_set_new(fnn_image_set **out, int64_t n, const char *const *paths, const int64_t *labels,
                              int nsteps, const fnn_transform_step *steps);
FNN_API fnn_image_set *fnn_image_set_ref(fnn_image_set *s);
FNN_API void fnn_image_set_free(fnn_image_set *s);
/* inputs [m, C, H, W] <- pictures ids[0..m) (1-based) loaded and transformed, item k's random state
 * seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019 + k * 0xD1B54A32D192ED03 (splitmix64);
 * targets [m] (float32) their class ids. A picture that fails to load, or a size unlike the
 * first's, fails the batch, naming the file. */
FNN_API int fnn_image_take(fnn_tensor *inputs, fnn_tensor *targets, const fnn_image_set *s, int64_t m,
                           const int64_t *ids, uint64_t seed);

/* ---- op registry: core/registry.c ---- */
typedef struct fnn_op_info {
    const char *name;        /* as bound in Lua: "add", "gelu", ... */
    const char *family;      /* file in core/ops/ */
    int differentiable;      /* 1: has a backward rule */
    int has_cuda;            /* 1: this build's CUDA backend implements it (families on kernel rows:
                                it has the op's row); 0 in a build without the backend */
} fnn_op_info;
FNN_API int fnn_op_count(void);
FNN_API const fnn_op_info *fnn_op_at(int i);
/* the op of row i of a backend's kernel table for family (device_type FNN_DEVICE_CPU or _CUDA), NULL
 * past the end, or where that backend is not built or the family has no rows */
FNN_API const char *fnn_kernel_at(int device_type, const char *family, int i);
FNN_API const char *fnn_row_family_at(int i);   /* the families on kernel rows, NULL past the end */

/* ---- autograd: core/autograd/ ---- */
FNN_API int fnn_backward(const fnn_tensor *root, const fnn_tensor *grad); /* grad NULL: root must be scalar */
FNN_API int fnn_grad_enabled(void);                 /* per thread */
FNN_API void fnn_set_grad_enabled(int on);
FNN_API int fnn_anomaly_enabled(void);              /* per thread */
FNN_API void fnn_set_anomaly_enabled(int on);
FNN_API int fnn_detach(fnn_tensor *out, const fnn_tensor *x);
FNN_API const char *fnn_grad_fn_name(const fnn_tensor *x); /* NULL for plain data */
/* the recorded graph, read back: n's op name ("Param" for a leaf; NULL for NULL), its input count, the
 * node of input k (borrowed; NULL for plain data), input k's and the output's shape into shape
 * (FNN_MAX_DIMS entries) returning ndim (-1: no such input, or a leaf's output) */
FNN_API const char *fnn_node_op(const fnn_node *n);
FNN_API int fnn_node_inputs(const fnn_node *n);
FNN_API fnn_node *fnn_node_input(const fnn_node *n, int k);
FNN_API int fnn_node_input_shape(const fnn_node *n, int k, int64_t *shape);
FNN_API int fnn_node_output_shape(const fnn_node *n, int64_t *shape);
/* the number `name` a node recorded: elementwise nodes "k0", "k1" (the scalar of a scalar op, a
 * unary op's parameters: leaky_relu's slope, elu's alpha); reductions "dim" (0-based, -1: all),
 * "k0", "k1". FNN_STATUS_ARG for any other */
FNN_API int fnn_node_attr(const fnn_node *n, const char *name, double *value);
FNN_API void fnn_node_release(fnn_node *n);
FNN_API int64_t fnn_live_nodes(void);               /* for leak specs */

/* Param: a trainable leaf that owns its value and accumulates its gradient */
FNN_API fnn_node *fnn_param_new(const fnn_tensor *value);  /* NULL + error on failure */
FNN_API int fnn_param_tensor(fnn_tensor *out, fnn_node *p); /* frozen: detached */
FNN_API int fnn_param_grad(fnn_tensor *out, fnn_node *p);   /* no gradient yet: out left empty, returns 0 */
FNN_API void fnn_param_zero_grad(fnn_node *p);
FNN_API int fnn_param_set(fnn_node *p, const fnn_tensor *value);  /* same shape */
FNN_API void fnn_param_set_frozen(fnn_node *p, int frozen);
FNN_API int fnn_param_frozen(fnn_node *p);
FNN_API int fnn_param_set_grad(fnn_node *p, const fnn_tensor *grad); /* for clipping and data parallel */

/* ---- optim: core/optim.c (fused update per parameter, in place on the Param's value) ---- */
FNN_API int fnn_optim_sgd(fnn_node *p, fnn_tensor *momentum_buf, double lr, double momentum,
                          double dampening, double weight_decay, int nesterov, int first_step);
/* adam / adamw (decoupled = 1): m, v state tensors shaped like p (made by the caller with fnn_zeros);
 * vmax (amsgrad: the running max of v) or NULL */
FNN_API int fnn_optim_adam(fnn_node *p, fnn_tensor *m, fnn_tensor *v, fnn_tensor *vmax, double lr, double beta1,
                           double beta2, double eps, double weight_decay, int decoupled, int64_t step);
/* the same update of count parameters at once (PyTorch's multi-tensor apply): params[i] with its moments
 * m[i], v[i] (and vmax[i]; vmax itself NULL: no amsgrad) at its step steps[i]; a parameter with no
 * gradient is skipped. Each is checked as fnn_optim_adam checks it before any is updated; the CPU then
 * runs one parallel loop across all of their elements (one thread team, not one per parameter) */
FNN_API int fnn_optim_adam_many(int count, fnn_node *const *params, fnn_tensor *const *m, fnn_tensor *const *v,
                                fnn_tensor *const *vmax, double lr, double beta1, double beta2, double eps,
                                double weight_decay, int decoupled, const int64_t *steps);
/* The others, PyTorch's update rules (weight_decay is coupled: added to the gradient; decoupled decay
 * is fnn_optim_decay before the step). State tensors are shaped like p; optional ones may be NULL. */
/* rmsprop: square_avg; grad_avg when centered; momentum_buf when momentum > 0 */
FNN_API int fnn_optim_rmsprop(fnn_node *p, fnn_tensor *square_avg, fnn_tensor *grad_avg, fnn_tensor *momentum_buf,
                              double lr, double alpha, double eps, double weight_decay, double momentum);
/* adagrad: sum (starts at initial_accumulator_value); lr / (1 + (step - 1) lr_decay) */
FNN_API int fnn_optim_adagrad(fnn_node *p, fnn_tensor *sum, double lr, double lr_decay, double weight_decay,
                              double eps, int64_t step);
FNN_API int fnn_optim_adadelta(fnn_node *p, fnn_tensor *square_avg, fnn_tensor *acc_delta, double lr, double rho,
                               double eps, double weight_decay);
/* radam: rectified when rho_t > 5, else an SGD-with-momentum step on the bias-corrected m */
FNN_API int fnn_optim_radam(fnn_node *p, fnn_tensor *m, fnn_tensor *v, double lr, double beta1, double beta2,
                            double eps, double weight_decay, int64_t step);
/* lion: p *= 1 - lr wd; p -= lr sign(b1 m + (1 - b1) g); m = b2 m + (1 - b2) g */
FNN_API int fnn_optim_lion(fnn_node *p, fnn_tensor *m, double lr, double beta1, double beta2, double weight_decay);
/* p *= factor (decoupled weight decay: factor = 1 - lr wd), whether or not p has a gradient */
FNN_API int fnn_optim_decay(fnn_node *p, double factor);
/* state += weight (target - state), in place on an optimizer-owned tensor (Ema, Lookahead) */
FNN_API int fnn_optim_lerp(fnn_tensor *state, const fnn_tensor *target, double weight);
FNN_API int fnn_grad_all_finite(fnn_node *p);       /* 1 when p has no gradient or a finite one */
FNN_API double fnn_grad_sq_norm(fnn_node *p);
FNN_API int fnn_grad_scale(fnn_node *p, double s);

/* ---- data: core/io/data.c ---- */
/* read a gzipped (or plain) IDX file of unsigned bytes, scaled by `scale` -> [dims...] */
FNN_API int fnn_read_idx(fnn_tensor *out, const char *path, double scale);
/* gather rows: x [N, ...] of any dtype, ids 1-based -> [n, ...] (no autograd; batching) */
FNN_API int fnn_take_rows(fnn_tensor *out, const fnn_tensor *x, int64_t n, const int64_t *ids);

/* the order of one DataLoader pass: ids[0..n) = 1..n, then, when state is not NULL, shuffled by
 * Fisher-Yates (i = n-1 down to 1: swap ids[i] and ids[r % (i + 1)]) with r the splitmix64 stream
 * of *state, which is advanced past the draws (the loader draws its next numbers after them) */
FNN_API int fnn_loader_order(int64_t *ids, int64_t n, uint64_t *state);

/* one batch written into buffers the caller keeps and reuses (DataLoader's reuse): kind ROWS takes
 * rows of a (and of b unless NULL), WINDOWS fnn_take_windows of the tokens a, over ids[0..n); xbuf and
 * ybuf are kept when they are cpu buffers of the batch's dtype and row shape with >= n rows, else made
 * [max(cap, n), ...]; inputs and targets become views of their first n rows (targets empty when the
 * dataset has none). No node: the batch carries no autograd history. The dataset must be on the cpu. */
FNN_API int fnn_take_batch_into(fnn_tensor *inputs, fnn_tensor *targets, fnn_tensor *xbuf, fnn_tensor *ybuf, int kind,
                                const fnn_tensor *a, const fnn_tensor *b, int64_t context, int64_t stride, int64_t n,
                                const int64_t *ids, int64_t cap);

/* ---- data: core/io/download.c (libcurl, OpenSSL's libcrypto) ---- */
/* hex (len >= 2 * digest bytes + 1) = the lowercase hex digest of a file; algo "md5" or "sha256" */
FNN_API int fnn_file_digest(const char *path, const char *algo, char *hex, int len);
/* make dest a verified copy of a remote file. A dest already there that passes the digest is kept
 * (no network). Otherwise the n_urls mirrors are tried in order (http/https) into dest.part, which
 * an interrupted earlier run is resumed from (Range); the digest ("md5:<hex>", "sha256:<hex>", bare
 * hex of either length, or NULL for none) is checked before dest.part is renamed to dest. A mismatch
 * empties dest.part and tries the next mirror. Timeouts in seconds per mirror. progress: 0 quiet,
 * 1 auto (a bar on stderr when it is a terminal, else one line per file), 2 bar, 3 line. The error
 * names the file and every mirror with its reason. */
FNN_API int fnn_download(const char *dest, int n_urls, const char *const *urls, const char *digest,
                         double connect_timeout, double timeout, int progress);

/* ---- data: core/io/text.c (character-level text) ---- */
/* UTF-8 text -> ids [N] int64, 1-based. With given == NULL the vocabulary is built into *vocab: the
 * distinct code points, ascending ([V] int64), id k being the k-th. With a given vocabulary (vocab may
 * be NULL) a character outside it is refused, named with its byte offset. bytes = 1: every byte is a
 * token (vocabulary of byte values; no UTF-8 decoding). Invalid UTF-8 is refused at the first bad byte. */
FNN_API int fnn_text_encode(fnn_tensor *ids, fnn_tensor *vocab, const char *text, int64_t len,
                            const fnn_tensor *given, int bytes);
FNN_API int fnn_text_encode_file(fnn_tensor *ids, fnn_tensor *vocab, const char *path, const fnn_tensor *given,
                                 int bytes);
/* ids (int64, or float32 whole numbers, any shape, row-major) -> UTF-8 (or bytes) into buf[0..cap); *len =
 * the bytes the text takes (buf may be NULL to ask); refuses an id outside 1..V */
FNN_API int fnn_text_decode(const fnn_tensor *vocab, const fnn_tensor *ids, int bytes, char *buf, int64_t cap,
                            int64_t *len);
/* windows of tokens [N] int64 (contiguous): window i (1-based) starts at s = (i - 1) * stride; inputs
 * [n, context] = tokens[s .. s + context - 1], targets [n, context] = the same shifted by one */
FNN_API int fnn_take_windows(fnn_tensor *inputs, fnn_tensor *targets, const fnn_tensor *tokens, int64_t context,
                             int64_t stride, int64_t n, const int64_t *ids);

/* ---- data: core/io/prefetch.c (a loader's background threads) ---- */
/* `workers` threads (1..FNN_PREFETCH_MAX_WORKERS) assemble the next `depth` batches of one pass over
 * order[0..n) (1-based ids) in batches of `batch` (the last one short), with the functions above:
 * ROWS takes rows of a (and b unless NULL) by fnn_take_rows; WINDOWS takes fnn_take_windows of the
 * tokens a with context and stride. They never call back into the caller. fnn_prefetch_next hands
 * over the next batch, waiting for it, and leaves both headers empty (ndim -1) when the pass is over;
 * a failure of a worker arrives here, in order. The batches are the same for any number of workers.
 * fnn_prefetch_free stops the workers, joins them and drops the batches not taken (any time). */
typedef struct fnn_prefetch fnn_prefetch;
enum { FNN_PREFETCH_ROWS = 0, FNN_PREFETCH_WINDOWS = 1, FNN_PREFETCH_IMAGES = 2 };
enum { FNN_PREFETCH_MAX_WORKERS = 64 };
FNN_API int fnn_prefetch_new(fnn_prefetch **out, int kind, const fnn_tensor *a, const fnn_tensor *b, int64_t context,
                             int64_t stride, int64_t n, const int64_t *order, int64_t batch, int depth, int workers);
/* the same over a set of pictures (ImageFolder): batch k is fnn_image_take(..., seeds[k]); the
 * worker holds its own reference to set */
FNN_API int fnn_prefetch_new_images(fnn_prefetch **out, fnn_image_set *set, int64_t n, const int64_t *order,
                                    int64_t batch, int depth, int workers, const uint64_t *seeds);
/* the same (ROWS or WINDOWS) with reused buffers (DataLoader's reuse): each batch is written into one
 * of depth + 1 + workers buffers of the pass, which a later batch overwrites; a batch handed over
 * is views of its buffer and is not written again until the next fnn_prefetch_next */
FNN_API int fnn_prefetch_new_reuse(fnn_prefetch **out, int kind, const fnn_tensor *a, const fnn_tensor *b,
                                   int64_t context, int64_t stride, int64_t n, const int64_t *order, int64_t batch,
                                   int depth, int workers);
FNN_API int fnn_prefetch_next(fnn_prefetch *p, fnn_tensor *inputs, fnn_tensor *targets);
FNN_API void fnn_prefetch_free(fnn_prefetch *p);

/* ---- TensorBoard event files: core/io/tensorboard.c (protobuf-c), core/io/crc32c.c ---- */
/* CRC-32C (Castagnoli) of data[0..n), and TFRecord's masked form of it (rotated right 15, + 0xa282ead8) */
FNN_API uint32_t fnn_crc32c(const void *data, size_t n);
FNN_API uint32_t fnn_crc32c_masked(const void *data, size_t n);
/* a writer of one new event file in logdir (made when missing), named
 * events.out.tfevents.<time>.<host>.<pid>.<n>; its first record is file_version "brain.Event:2".
 * Records are queued and written when max_queue (>= 1) are queued, every flush_secs (> 0) by a
 * thread of the writer's, and on fnn_tb_flush (which also syncs the file to disk) and
 * fnn_tb_close (which frees the writer, even when its last flush fails). Each add takes the step
 * and stamps the wall time. Errors name the tag or the file. */
typedef struct fnn_tb_writer fnn_tb_writer;
FNN_API int fnn_tb_open(fnn_tb_writer **out, const char *logdir, double flush_secs, int max_queue);
FNN_API const char *fnn_tb_path(const fnn_tb_writer *w);     /* the event file's path */
FNN_API int fnn_tb_scalar(fnn_tb_writer *w, const char *tag, double value, int64_t step);
/* values[0..n), finite, in PyTorch's default bucket layout (+-1e-12 * 1.1^k below 1e20, and 0) */
FNN_API int fnn_tb_histogram(fnn_tb_writer *w, const char *tag, const double *values, int64_t n, int64_t step);
/* chw [c, h, w] in [0, 1] (c 1, 3 or 4), stored as PNG (libpng), each value rounded to 8 bits */
FNN_API int fnn_tb_image(fnn_tb_writer *w, const char *tag, const float *chw, int c, int h, int width, int64_t step);
/* text[0..len) for TensorBoard's text plugin (markdown) */
FNN_API int fnn_tb_text(fnn_tb_writer *w, const char *tag, const char *text, int64_t len, int64_t step);
FNN_API int fnn_tb_flush(fnn_tb_writer *w);
FNN_API int fnn_tb_close(fnn_tb_writer *w);

/* ---- ONNX model files: core/io/onnx.c (protobuf-c), for fnn.onnx.export ---- */
/* A model at opset `opset` (ONNX's default domain), built node by node and written by fnn_onnx_save.
 * fnn_onnx_node appends a node (an empty input name is an absent optional input); the attributes
 * added after it are its own. fnn_onnx_initializer copies a float32 or int64 tensor in as a weight.
 * fnn_onnx_value declares a graph input (output 0) or output (1) of elem_type 1 (float) or 7 (int64),
 * a dim < 0 being the free size dim_params[d]. fnn_onnx_save writes atomically; fnn_onnx_free frees. */
typedef struct fnn_onnx_model fnn_onnx_model;
FNN_API int fnn_onnx_new(fnn_onnx_model **out, const char *graph_name, int opset);
FNN_API int fnn_onnx_node(fnn_onnx_model *m, const char *op_type, const char *name, int n_in,
                          const char *const *inputs, int n_out, const char *const *outputs);
FNN_API int fnn_onnx_attr_int(fnn_onnx_model *m, const char *name, int64_t v);
FNN_API int fnn_onnx_attr_float(fnn_onnx_model *m, const char *name, double v);
FNN_API int fnn_onnx_attr_ints(fnn_onnx_model *m, const char *name, int n, const int64_t *v);
FNN_API int fnn_onnx_attr_string(fnn_onnx_model *m, const char *name, const char *v);
FNN_API int fnn_onnx_initializer(fnn_onnx_model *m, const char *name, const fnn_tensor *t);
FNN_API int fnn_onnx_value(fnn_onnx_model *m, int output, const char *name, int elem_type, int ndim,
                           const int64_t *dims, const char *const *dim_params);
FNN_API int fnn_onnx_save(fnn_onnx_model *m, const char *path);
FNN_API void fnn_onnx_free(fnn_onnx_model *m);
/* Reading (fnn.onnx.load): fnn_onnx_load unpacks a file; the accessors read its graph by index (nodes
 * in file order, which ONNX keeps topological). fnn_onnx_count: what 0 nodes, 1 initializers, 2 graph
 * inputs, 3 graph outputs. fnn_onnx_node_text: field 0 op_type, 1 name, 2 domain. fnn_onnx_attr: an
 * attribute's name, type (1 float, 2 int, 3 string, 4 tensor, 6 floats, 7 ints), number and list
 * length, NULL past the last; fnn_onnx_attr_at reads a list's element. Tensors (initializers,
 * Constant values) come out as new CPU tensors: float32, or int64 from ONNX's int64 and int32. */
FNN_API int fnn_onnx_load(fnn_onnx_model **out, const char *path);
FNN_API int64_t fnn_onnx_opset(const fnn_onnx_model *m);
FNN_API int fnn_onnx_count(const fnn_onnx_model *m, int what);
FNN_API const char *fnn_onnx_node_text(const fnn_onnx_model *m, int i, int field);
FNN_API int fnn_onnx_node_arity(const fnn_onnx_model *m, int i, int output);
FNN_API const char *fnn_onnx_node_value(const fnn_onnx_model *m, int i, int output, int k);
FNN_API int fnn_onnx_node_attrs(const fnn_onnx_model *m, int i);
FNN_API const char *fnn_onnx_attr(const fnn_onnx_model *m, int i, int a, int *type, double *number, int64_t *count);
FNN_API double fnn_onnx_attr_at(const fnn_onnx_model *m, int i, int a, int64_t k);
FNN_API int fnn_onnx_attr_tensor(fnn_tensor *out, const fnn_onnx_model *m, int i, int a);
FNN_API int fnn_onnx_init_tensor(fnn_tensor *out, const fnn_onnx_model *m, int k, const char **name);
FNN_API const char *fnn_onnx_graph_value(const fnn_onnx_model *m, int output, int k);

#ifdef __cplusplus
}
#endif
#endif
