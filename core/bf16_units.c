/* core/bf16_units.c: whether this CPU's bfloat16 unit beats its float32 FMA, measured once.
 *
 * Having AVX512-BF16 does not make bf16 products faster. Its dot product (vdpbf16ps: 32 bf16 products
 * summed pairwise into 16 float32 lanes) retires about 2x the float32 FMA's FLOPs on AMD Zen 4, and
 * 0.5x on Intel Sapphire/Emerald Rapids cores, whose bf16 unit is AMX (hidden by some hypervisors).
 * There oneDNN's bf16 matmul runs at half the float32 one, and rounding the operands to bfloat16 in
 * float32 buffers for the float32 GEMM (the emulated path) gives the same values faster. So the bf16
 * path (blas.c's fnn_bf16_native) asks this file: twelve independent chains of each instruction on
 * 512-bit registers, timed alternately on the calling thread, best of several, once per process.
 * About 0.3 ms. bench/probes/bf16_peak.c is the same measurement at length. */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the dot product's FLOP rate over the FMA's at which the bf16 path pays for its operand conversions */
#define BF16_DOT_PAYS 1.25

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_PROBE 1

enum { CHAINS = 12, ITERS = 4096, REPS = 7 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* one lane of the sum, so the chains are not optimized away */
__attribute__((target("avx512f"))) static float fma_chains(void) {
    __m512 acc[CHAINS];
    const __m512 a = _mm512_set1_ps(1.0000001f), b = _mm512_set1_ps(0.9999999f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    for (int i = 0; i < ITERS; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(a, acc[c], b);
    }
    __m512 s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
    return _mm_cvtss_f32(_mm512_castps512_ps128(s));
}

__attribute__((target("avx512f,avx512bf16"))) static float dot_chains(void) {
    __m512 acc[CHAINS];
    const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3c00);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    for (int i = 0; i < ITERS; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    }
    __m512 s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
    return _mm_cvtss_f32(_mm512_castps512_ps128(s));
}
#endif

static double ratio;   /* written once under `once`, read after it */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void measure(void) {
    ratio = 0;
#ifdef HAVE_PROBE
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) return;
    volatile float sink = 0;
    double fma = 1e30, dot = 1e30;
    for (int r = 0; r < REPS; r++) {   /* alternated, so a slow moment costs both alike */
        double t0 = now();
        sink += fma_chains();
        double t1 = now();
        sink += dot_chains();
        double t2 = now();
        if (t1 - t0 < fma) fma = t1 - t0;
        if (t2 - t1 < dot) dot = t2 - t1;
    }
    (void)sink;
    /* FLOPs per instruction: 32 for the FMA (16 lanes x 2), 64 for the dot product (16 lanes x 2 x 2) */
    if (dot > 0) ratio = (64.0 / dot) / (32.0 / fma);
#endif
}

double fnn_bf16_dot_ratio(void) {
    pthread_once(&once, measure);
    return ratio;
}

/* ================= the path: fnn_set_bf16_path, FASTNN_BF16_PATH at load ================= */

enum { PATH_AUTO, PATH_NATIVE, PATH_EMULATED };
static const char *const PATH_NAMES[] = {"auto", "native", "emulated"};
/* read by every bf16-precision GEMM from any host thread: process-wide, as the precision setting is */
static atomic_int path;

int fnn_set_bf16_path(const char *name) {
    for (int p = 0; p < 3; p++)
        if (name && strcmp(name, PATH_NAMES[p]) == 0) {
            atomic_store_explicit(&path, p, memory_order_relaxed);
            return FNN_STATUS_OK;
        }
    return FNN_FAIL(FNN_STATUS_ARG, "set_bf16_path: path '%s' unknown (expected 'auto', 'native' or 'emulated')",
                    name ? name : "(null)");
}

const char *fnn_get_bf16_path(void) { return PATH_NAMES[atomic_load_explicit(&path, memory_order_relaxed)]; }

/* the CPU has bf16 units (the caller knows; amx: oneDNN would run AMX tiles); should bf16 precision use them */
bool fnn_bf16_units_pay(bool amx) {
    switch (atomic_load_explicit(&path, memory_order_relaxed)) {
    case PATH_NATIVE: return true;
    case PATH_EMULATED: return false;
    default: return amx || fnn_bf16_dot_ratio() >= BF16_DOT_PAYS;
    }
}

__attribute__((constructor)) static void bf16_path_load(void) {
    const char *env = getenv("FASTNN_BF16_PATH");
    if (env && *env && fnn_set_bf16_path(env) != FNN_STATUS_OK)
        fprintf(stderr, "fastnn: FASTNN_BF16_PATH=%s ignored: %s\n", env, fnn_last_error());
}
