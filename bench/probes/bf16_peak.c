/* bf16_peak.c -- the roofline for bf16 products on this CPU: how many FLOP/s the AVX512-BF16 dot-product
 * instruction (vdpbf16ps: 32 bf16 products summed pairwise into 16 float32 lanes) retires, against the
 * float32 FMA (vfmadd231ps) on the same core, both on 512-bit registers with 12 independent chains, on 1
 * and on 2 threads, best of 5. A bf16 GEMM can go past the float32 peak only where the first is larger:
 * on AMD Zen 4 it is about 2x; on some Intel cores the dot product issues on one port where the FMA
 * issues on two, which makes bf16 products no faster than float32 ones (AMX tiles are the bf16 unit there).
 *
 * Build:  gcc -O3 -mavx512f -mavx512bf16 -fopenmp -o bf16_peak bench/probes/bf16_peak.c
 * Run:    ./bf16_peak        prints `RESULT fma_f32_t<n> gflops=..`, `RESULT dot_bf16_t<n> gflops=..`
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <time.h>

enum { CHAINS = 12, ITERS = 20000000 };

static double now(void) {
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* 12 chains of ITERS float32 FMAs on 16 lanes: 2 FLOP x 16 lanes each */
static float fma_chains(void) {
   __m512 acc[CHAINS];
   const __m512 a = _mm512_set1_ps(1.0000001f), b = _mm512_set1_ps(0.9999999f);
   for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
   for (long i = 0; i < ITERS; i++) {
#pragma GCC unroll 12
      for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(a, acc[c], b);
   }
   __m512 s = acc[0];
   for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
   return _mm512_reduce_add_ps(s);
}

/* 12 chains of ITERS bf16 dot products on 16 lanes: 2 products and 2 sums a lane, 4 FLOP x 16 lanes each */
static float dot_chains(void) {
   __m512 acc[CHAINS];
   const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3c00);
   for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
   for (long i = 0; i < ITERS; i++) {
#pragma GCC unroll 12
      for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
   }
   __m512 s = acc[0];
   for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
   return _mm512_reduce_add_ps(s);
}

static double gflops(float (*chains)(void), double flop_per_op, int threads) {
   double best = 0;
   volatile float sink = 0;
   for (int rep = 0; rep < 5; rep++) {
      double t0 = now();
#pragma omp parallel num_threads(threads)
      {
         float r = chains();
#pragma omp atomic
         sink += r;
      }
      double rate = threads * flop_per_op * CHAINS * (double)ITERS / (now() - t0) / 1e9;
      if (rate > best) best = rate;
   }
   (void)sink;
   return best;
}

int main(void) {
   if (!__builtin_cpu_supports("avx512bf16")) {
      printf("RESULT no_avx512_bf16\n");
      return 0;
   }
   int max = omp_get_num_procs() < 2 ? 1 : 2;
   for (int t = 1; t <= max; t++) {
      double f = gflops(fma_chains, 32, t), d = gflops(dot_chains, 64, t);
      printf("RESULT fma_f32_t%d gflops=%.1f GFLOP/s\n", t, f);
      printf("RESULT dot_bf16_t%d gflops=%.1f GFLOP/s (x%.2f)\n", t, d, d / f);
   }
   return 0;
}
