/* random.c: the per-thread random source (xoshiro256**, seeded by splitmix64),
 * so every draw (init, dropout, shuffling, sampling) is reproducible per thread;
 * and draws on a device (fnn_*_on), seeded from it (cuda/random.cu). */
#include "internal.h"
#include "fastmath.h"
#include <math.h>
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

/* ---- draws on a device: the backend's generator, seeded by one draw of this thread's stream ---- */
static int random_on(const char *op, int kind, fnn_tensor *out, int device, int ndim, const int64_t *shape,
                     double k0, double k1) {
    int count = fnn_device_count(fnn_device_type_of(device));   /* registers the backend on first use */
    const fnn_backend *be = fnn_backend_for(device);
    char name[32];
    FNN_CHECK(be && device >= 0 && fnn_device_ordinal(device) < count, FNN_STATUS_DEVICE,
              "%s: %s is not available", op, fnn_device_name(device, name, (int)sizeof name));
    FNN_CHECK(be->random, FNN_STATUS_DEVICE, "%s: not implemented on this device", op);
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
