/* random.c: the per-thread random source (xoshiro256**, seeded by splitmix64),
 * so every draw (init, dropout, shuffling, sampling) is reproducible per thread;
 * the random creators (rand, randn, uniform, normal, bernoulli, randperm, and
 * orthogonal's Householder QR of a Gaussian matrix); and draws on a device
 * (fnn_*_on), seeded from it (cuda/random.cu). */
#include "internal.h"
#include "fastmath.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local uint64_t state[4];
static _Thread_local int seeded;
static _Thread_local int has_spare;
static _Thread_local float spare;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void fnn_manual_seed(uint64_t seed) {
    for (int i = 0; i < 4; i++) state[i] = splitmix64(&seed);
    seeded = 1;
    has_spare = 0;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* n draws at once: the state in locals (a thread-local in a shared library costs a call per access) */
static void random_u64s(uint64_t *out, int64_t n) {
    if (!seeded) fnn_manual_seed(0x5eed);
    uint64_t s0 = state[0], s1 = state[1], s2 = state[2], s3 = state[3];
    for (int64_t i = 0; i < n; i++) {
        out[i] = rotl(s1 * 5, 7) * 9;
        uint64_t t = s1 << 17;
        s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3;
        s2 ^= t; s3 = rotl(s3, 45);
    }
    state[0] = s0; state[1] = s1; state[2] = s2; state[3] = s3;
}

uint64_t fnn_random_u64(void) {
    uint64_t r;
    random_u64s(&r, 1);
    return r;
}

/* a draw as U[0,1): 24 bits as a float, 53 as a double */
static inline float float_of(uint64_t bits) { return (float)(bits >> 40) * (1.0f / 16777216.0f); }
static inline double double_of(uint64_t bits) { return (double)(bits >> 11) * (1.0 / 9007199254740992.0); }

float fnn_random_float(void) { return float_of(fnn_random_u64()); }
double fnn_random_uniform(void) { return double_of(fnn_random_u64()); }

/* y[0..n) = lo + (hi - lo) U[0,1), and masks of p: the values of fnn_random_float and
 * fnn_random_uniform, drawn a block at a time */
enum { DRAW_BLOCK = 256 };
void fnn_random_uniforms(float *y, int64_t n, double lo, double hi) {
    uint64_t bits[DRAW_BLOCK];
    for (int64_t i = 0; i < n; i += DRAW_BLOCK) {
        int64_t m = n - i < DRAW_BLOCK ? n - i : DRAW_BLOCK;
        random_u64s(bits, m);
        for (int64_t j = 0; j < m; j++)
            y[i + j] = (float)(lo + (hi - lo) * float_of(bits[j]));
    }
}
void fnn_random_bernoullis(float *y, int64_t n, double p) {
    uint64_t bits[DRAW_BLOCK];
    for (int64_t i = 0; i < n; i += DRAW_BLOCK) {
        int64_t m = n - i < DRAW_BLOCK ? n - i : DRAW_BLOCK;
        random_u64s(bits, m);
        for (int64_t j = 0; j < m; j++)
            y[i + j] = double_of(bits[j]) < p ? 1.0f : 0.0f;
    }
}

/* Normals by Box-Muller in float, a pair from one 64-bit draw:
 *   radius  R = sqrt(-2 log u), u = k 2^-31 + 2^-32 in (0, 1] from 31 of the low 32 bits, so the
 *           tails reach 6.7 sigma (24-bit uniforms would stop at 5.8);
 *   angle   the top two bits pick a quadrant q, the next 30 an angle r in [-pi/4, pi/4) within
 *           it: q pi/2 + r is uniform on the circle, and r's sine and cosine need only Cephes'
 *           short sinf/cosf polynomials (no range reduction); the quadrant rotates the pair.
 * Branch-free, so a block of pairs vectorizes (built for x86-64-v3 too, as elementwise.c). */
static inline void normal_pair(uint64_t bits, float *z0, float *z1) {
    const uint32_t k = (uint32_t)bits, h = (uint32_t)(bits >> 32);
    const float u = (float)(int32_t)(k >> 1) * 4.6566128730773926e-10f + 2.3283064365386963e-10f;
    const float radius = sqrtf(-2.0f * fnn_logf(u));
    const float r = ((float)(int32_t)(h & 0x3fffffffu) * 9.3132257461547852e-10f - 0.5f) * 1.5707963267948966f;
    const float z = r * r;
    const float s = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
    const float c = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z
                    - 0.5f * z + 1.0f;
    /* (cos, sin) of q pi/2 + r: q = 0 (c, s), 1 (-s, c), 2 (-c, -s), 3 (s, -c) */
    const uint32_t q = h >> 30;
    const float x = fnn_sel(q & 1, s, c), y = fnn_sel(q & 1, c, s);
    *z0 = radius * fnn_sel((q == 1) | (q == 2), -x, x);
    *z1 = radius * fnn_sel(q >= 2, -y, y);
}

float fnn_random_normal(void) {   /* one of a pair; the other waits as the spare */
    if (has_spare) { has_spare = 0; return spare; }
    float z0, z1;
    normal_pair(fnn_random_u64(), &z0, &z1);
    spare = z1;
    has_spare = 1;
    return z0;
}

/* y[0..n) = mean + std z: the spare first, then blocks of pairs (the draws serial, the transform
 * in vector lanes), an odd last one leaving its pair's other half as the spare */
FNN_CLONES_V3 static void normal_block(float *restrict y, const uint64_t *restrict bits, int64_t pairs, float mean,
                                      float std) {
    for (int64_t i = 0; i < pairs; i++) {
        float z0, z1;
        normal_pair(bits[i], &z0, &z1);
        y[i] = mean + std * z0;            /* the first halves, then the second: both stores dense */
        y[pairs + i] = mean + std * z1;
    }
}
void fnn_random_normals(float *y, int64_t n, float mean, float std) {
    int64_t i = 0;
    if (n > 0 && has_spare) { y[i++] = mean + std * fnn_random_normal(); }
    uint64_t bits[DRAW_BLOCK];
    while (n - i >= 2) {
        int64_t pairs = (n - i) / 2 < DRAW_BLOCK ? (n - i) / 2 : DRAW_BLOCK;
        random_u64s(bits, pairs);
        normal_block(y + i, bits, pairs, mean, std);
        i += 2 * pairs;
    }
    if (i < n) y[i] = mean + std * fnn_random_normal();
}

/* the whole state as 6 words (xoshiro's 4, seeded, and the spare normal's flag and bits), so a
 * checkpoint can resume the stream exactly */
void fnn_random_get_state(uint64_t *out) {
    if (!seeded) fnn_manual_seed(0x5eed);
    for (int i = 0; i < 4; i++) out[i] = state[i];
    uint32_t bits;
    memcpy(&bits, &spare, sizeof bits);
    out[4] = (uint64_t)has_spare;
    out[5] = bits;
}

int fnn_random_set_state(const uint64_t *in) {
    FNN_CHECK((in[0] | in[1] | in[2] | in[3]) != 0 && in[4] <= 1 && in[5] <= 0xffffffffu, FNN_STATUS_ARG,
              "random state: not a state from fnn_random_get_state (all-zero words or bad flags)");
    for (int i = 0; i < 4; i++) state[i] = in[i];
    uint32_t bits = (uint32_t)in[5];
    memcpy(&spare, &bits, sizeof spare);
    has_spare = (int)in[4];
    seeded = 1;
    return FNN_STATUS_OK;
}

/* ---- creators of random tensors on the CPU (fnn_*_on below for devices) ----
 * Each names itself for out-of-memory errors, as tensor.c's creators do. */
static int empty_as(const char *op, fnn_tensor *out, int ndim, const int64_t *shape, int dtype) {
    fnn_set_op(op);
    return fnn_new_output_dtype(out, fnn_make_device(FNN_DEVICE_CPU, 0), dtype, ndim, shape);
}

static int uniform_as(const char *op, fnn_tensor *out, int ndim, const int64_t *shape, double lo, double hi) {
    FNN_TRY(empty_as(op, out, ndim, shape, FNN_DTYPE_FLOAT32));
    float *y = fnn_data(out);
    int64_t n = fnn_numel_of(ndim, shape);
    fnn_random_uniforms(y, n, lo, hi);
    return FNN_STATUS_OK;
}
int fnn_uniform(fnn_tensor *out, int ndim, const int64_t *shape, double lo, double hi) {
    return uniform_as("uniform", out, ndim, shape, lo, hi);
}
int fnn_rand(fnn_tensor *out, int ndim, const int64_t *shape) { return uniform_as("rand", out, ndim, shape, 0, 1); }

static int normal_as(const char *op, fnn_tensor *out, int ndim, const int64_t *shape, double mean, double std) {
    FNN_TRY(empty_as(op, out, ndim, shape, FNN_DTYPE_FLOAT32));
    float *y = fnn_data(out);
    int64_t n = fnn_numel_of(ndim, shape);
    fnn_random_normals(y, n, (float)mean, (float)std);
    return FNN_STATUS_OK;
}
int fnn_normal(fnn_tensor *out, int ndim, const int64_t *shape, double mean, double std) {
    return normal_as("normal", out, ndim, shape, mean, std);
}
int fnn_randn(fnn_tensor *out, int ndim, const int64_t *shape) { return normal_as("randn", out, ndim, shape, 0, 1); }

int fnn_bernoulli(fnn_tensor *out, int ndim, const int64_t *shape, double p) {
    FNN_CHECK(p >= 0 && p <= 1, FNN_STATUS_ARG, "bernoulli: p must be in [0, 1], got %g", p);
    FNN_TRY(empty_as("bernoulli", out, ndim, shape, FNN_DTYPE_FLOAT32));
    float *y = fnn_data(out);
    int64_t n = fnn_numel_of(ndim, shape);
    fnn_random_bernoullis(y, n, p);
    return FNN_STATUS_OK;
}

int fnn_randperm(fnn_tensor *out, int64_t n) {
    FNN_CHECK(n >= 0, FNN_STATUS_ARG, "randperm: n must be >= 0, got %lld", (long long)n);
    FNN_TRY(empty_as("randperm", out, 1, &n, FNN_DTYPE_INT64));
    int64_t *y = fnn_data_i64(out);
    for (int64_t i = 0; i < n; i++) y[i] = i + 1;
    for (int64_t i = n - 1; i > 0; i--) {   /* Fisher-Yates */
        int64_t j = (int64_t)(fnn_random_u64() % (uint64_t)(i + 1));
        int64_t t = y[i]; y[i] = y[j]; y[j] = t;
    }
    return FNN_STATUS_OK;
}

/* orthogonal: Householder QR in doubles of a [max, min] Gaussian matrix; Q's columns are
 * scaled by sign(diag R) so the result is uniformly distributed, then transposed if rows < cols */
int fnn_orthogonal(fnn_tensor *out, int64_t rows, int64_t cols, double gain) {
    FNN_CHECK(rows > 0 && cols > 0 && rows * cols <= ((int64_t)1 << 26), FNN_STATUS_ARG,
              "orthogonal: shape [%lld,%lld] must be non-empty and at most 2^26 elements",
              (long long)rows, (long long)cols);
    int64_t m = rows > cols ? rows : cols, n = rows > cols ? cols : rows;  /* m >= n */
    double *a = malloc(sizeof(double) * (size_t)(m * n)), *v = malloc(sizeof(double) * (size_t)m);
    double *q = calloc((size_t)(m * n), sizeof(double)), *diag = malloc(sizeof(double) * (size_t)n);
    if (!a || !v || !q || !diag) {
        free(a); free(v); free(q); free(diag);
        return FNN_FAIL(FNN_STATUS_OOM, "orthogonal: out of memory for [%lld,%lld]", (long long)rows, (long long)cols);
    }
    for (int64_t i = 0; i < m * n; i++) a[i] = fnn_random_normal();       /* a: m x n, row-major */
    for (int64_t i = 0; i < n; i++) q[i * n + i] = 1.0;                   /* q starts as I (m x n) */
    /* reflections H_k = I - 2 v v^T / (v^T v) zeroing a's column k below the diagonal */
    double *vs = malloc(sizeof(double) * (size_t)(m * n));
    if (!vs) { free(a); free(v); free(q); free(diag); return FNN_FAIL(FNN_STATUS_OOM, "orthogonal: out of memory"); }
    for (int64_t k = 0; k < n; k++) {
        double norm = 0;
        for (int64_t i = k; i < m; i++) norm += a[i * n + k] * a[i * n + k];
        norm = sqrt(norm);
        double alpha = a[k * n + k] > 0 ? -norm : norm;
        for (int64_t i = 0; i < m; i++) v[i] = i < k ? 0 : a[i * n + k];
        v[k] -= alpha;
        double vv = 0;
        for (int64_t i = k; i < m; i++) vv += v[i] * v[i];
        for (int64_t i = 0; i < m; i++) vs[k * m + i] = vv > 0 ? v[i] / sqrt(vv) : 0;
        for (int64_t j = k; j < n; j++) {             /* a = H a */
            double d = 0;
            for (int64_t i = k; i < m; i++) d += vs[k * m + i] * a[i * n + j];
            for (int64_t i = k; i < m; i++) a[i * n + j] -= 2 * d * vs[k * m + i];
        }
        diag[k] = a[k * n + k];
    }
    for (int64_t k = n - 1; k >= 0; k--) {            /* q = H_0 ... H_{n-1} [I; 0] */
        for (int64_t j = 0; j < n; j++) {
            double d = 0;
            for (int64_t i = k; i < m; i++) d += vs[k * m + i] * q[i * n + j];
            for (int64_t i = k; i < m; i++) q[i * n + j] -= 2 * d * vs[k * m + i];
        }
    }
    int64_t shape[2] = {rows, cols};
    int rc = fnn_empty(out, 2, shape);
    if (!rc) {
        float *y = fnn_data(out);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double val = gain * q[i * n + j] * (diag[j] < 0 ? -1.0 : 1.0);
                if (rows >= cols) y[i * cols + j] = (float)val;
                else y[j * cols + i] = (float)val;
            }
    }
    free(a); free(v); free(q); free(diag); free(vs);
    return rc;
}

/* ---- draws on a device: the backend's generator, seeded by one draw of this thread's stream ---- */
static int random_on(const char *op, int kind, fnn_tensor *out, int device, int ndim, const int64_t *shape,
                     double k0, double k1) {
    int count = fnn_device_count(fnn_device_type_of(device));   /* registers the backend on first use */
    const fnn_backend *be = fnn_backend_for(device);
    char name[32];
    FNN_CHECK(be && device >= 0 && fnn_device_ordinal(device) < count, FNN_STATUS_DEVICE,
              "%s: %s is not available", op, fnn_device_name(device, name, (int)sizeof name));
    if (!be->random) return FNN_ROW_REFUSED(op, device, false);
    FNN_TRY(fnn_new_output(out, device, ndim, shape));
    int rc = be->random(fnn_device_ordinal(device), kind, fnn_data(out), fnn_tensor_numel(out), fnn_random_u64(), 0,
                        k0, k1);
    if (rc) fnn_tensor_clear(out);
    return rc;
}
int fnn_uniform_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, double lo, double hi) {
    if (fnn_device_type_of(device) == FNN_DEVICE_CPU) return fnn_uniform(out, ndim, shape, lo, hi);
    return random_on("uniform", FNN_RNG_UNIFORM, out, device, ndim, shape, lo, hi);
}
int fnn_normal_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, double mean, double std) {
    if (fnn_device_type_of(device) == FNN_DEVICE_CPU) return fnn_normal(out, ndim, shape, mean, std);
    return random_on("normal", FNN_RNG_NORMAL, out, device, ndim, shape, mean, std);
}
int fnn_bernoulli_on(fnn_tensor *out, int device, int ndim, const int64_t *shape, double p) {
    if (fnn_device_type_of(device) == FNN_DEVICE_CPU) return fnn_bernoulli(out, ndim, shape, p);
    FNN_CHECK(p >= 0 && p <= 1, FNN_STATUS_ARG, "bernoulli: p must be in [0, 1], got %g", p);
    return random_on("bernoulli", FNN_RNG_BERNOULLI, out, device, ndim, shape, p, 0);
}
