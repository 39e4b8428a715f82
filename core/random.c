/* random.c: the per-thread random source (xoshiro256**, seeded by splitmix64),
 * so every draw (init, dropout, shuffling, sampling) is reproducible per thread;
 * and draws on a device (fnn_*_on), seeded from it (cuda/random.cu). */
#include "internal.h"
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

uint64_t fnn_random_u64(void) {
    if (!seeded) fnn_manual_seed(0x5eed);
    uint64_t r = rotl(state[1] * 5, 7) * 9, t = state[1] << 17;
    state[2] ^= state[0]; state[3] ^= state[1]; state[1] ^= state[2]; state[0] ^= state[3];
    state[2] ^= t; state[3] = rotl(state[3], 45);
    return r;
}

float fnn_random_float(void) { return (float)(fnn_random_u64() >> 40) * (1.0f / 16777216.0f); }
double fnn_random_uniform(void) { return (double)(fnn_random_u64() >> 11) * (1.0 / 9007199254740992.0); }

float fnn_random_normal(void) {   /* Box-Muller, two draws per pair */
    if (has_spare) { has_spare = 0; return spare; }
    double u1 = fnn_random_uniform(), u2 = fnn_random_uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
    spare = (float)(r * sin(th));
    has_spare = 1;
    return (float)(r * cos(th));
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
