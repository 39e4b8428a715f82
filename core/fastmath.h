/* fastmath.h: branch-free float exp, log, log1p, tanh, sigmoid and erf for the elementwise row
 * kernels (core/ops/elementwise.c) and any other float loop.
 *
 * glibc's expf/logf/tanhf/erff are scalar calls (tanhf goes through __expm1f, ~25 ns per
 * element), so a loop over them never vectorizes. These are static inline and use no branches:
 * every lane computes each case and a bit-mask select (fnn_sel) keeps the right one, so
 * `for (i...) y[i] = fnn_tanhf(x[i])` compiles to SSE/AVX code at -O3 with no call.
 *
 * Accuracy, measured against double-precision libm on every 7th float of the ranges that matter
 * ([-100, 100], (0, 1e30] for log), with and without FMA: max 1.0 ulp for exp, 0.8 log, 1.4 log1p,
 * 1.3 tanh, 2.4 sigmoid, 1.3 erf (absolute error below 8e-8); a result in the denormal range is
 * within one denormal spacing. inf, -inf, nan, +-0 and denormal inputs give what libm gives,
 * sign of zero included. spec/fastmath_spec.lua checks them through the unary ops.
 *
 * Method (Cephes' single-precision polynomials; erf's fitted here by Lawson's minimax):
 *   exp    x = n ln2 + r, |r| <= ln2/2 (ln2 split in two so n ln2 is exact); e^r by a degree-6
 *          polynomial; 2^n built in the exponent bits, applied in two halves so that a result in
 *          the denormal range is rounded once.
 *   log    x = 2^k m, m in [sqrt(1/2), sqrt(2)) from the bits; log(m) = f - f^2/2 + f^3 P(f).
 *   log1p  log(1+x) plus the rounding error of 1+x: (x - ((1+x) - 1)) / (1+x).
 *   tanh   |x| < 0.625: x + x^3 P(x^2); else 1 - 2/(e^(2|x|) + 1), sign copied from x.
 *   sigmoid  e = e^-|x| (never overflows): 1/(1+e) for x >= 0, e/(1+e) below.
 *   erf    |x| < 1: x + x P(x^2); 1 <= |x| < 4: 1 - e^(-x^2) R(1/|x|), R fitted for the absolute
 *          error of erfc; |x| >= 4 rounds to +-1.
 *
 * The magic-number rounding and split constants rely on IEEE float evaluation without
 * reassociation (no -ffast-math); FMA contraction only makes them more accurate. */
#ifndef FNN_FASTMATH_H
#define FNN_FASTMATH_H

#include <stdint.h>
#include <string.h>

/* Every function here must inline into its loop, or the loop cannot vectorize (a gelu row ran 12x
 * slower when GCC's unit-growth limit stopped inlining fnn_erff into it): force it. */
#define FNN_MATH static inline __attribute__((always_inline))

/* float <-> bits; memcpy compiles to nothing and vectorizes */
FNN_MATH uint32_t fnn_f2u(float x) { uint32_t u; memcpy(&u, &x, sizeof u); return u; }
FNN_MATH float fnn_u2f(uint32_t u) { float x; memcpy(&x, &u, sizeof x); return x; }
FNN_MATH float fnn_absf(float x) { return fnn_u2f(fnn_f2u(x) & 0x7fffffffu); }
/* c ? a : b through a bit mask: with a float ternary GCC (under its default -ftrapping-math)
 * may move arithmetic into one arm and then refuses to if-convert, so the loop stays scalar */
FNN_MATH float fnn_sel(int c, float a, float b) {
    uint32_t m = 0u - (uint32_t)(c != 0);
    return fnn_u2f((fnn_f2u(a) & m) | (fnn_f2u(b) & ~m));
}
/* |r| with the sign of s */
FNN_MATH float fnn_signf(float r, float s) {
    return fnn_u2f((fnn_f2u(r) & 0x7fffffffu) | (fnn_f2u(s) & 0x80000000u));
}

#define FNN_INFF __builtin_inff()
#define FNN_NANF __builtin_nanf("")

/* e^x: overflow to inf above 88.72, gradual underflow to 0 below -87.3, nan stays nan */
FNN_MATH float fnn_expf(float x) {
    /* past these bounds the result is already inf or 0; clamping keeps n in int range (nan passes) */
    x = fnn_sel(x > 100.0f, 100.0f, x);
    x = fnn_sel(x < -110.0f, -110.0f, x);
    /* n = round(x / ln2): adding 1.5*2^23 leaves the integer in the low mantissa bits */
    const float magic = 12582912.0f;
    float t = x * 1.44269504088896341f + magic;
    float n = t - magic;
    int32_t ni = (int32_t)(fnn_f2u(t) - fnn_f2u(magic));
    /* r = x - n ln2 with ln2 = 0.693359375 (9 bits, so n * it is exact) - 2.12194440e-4 */
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float r2 = r * r;
    float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r
                + 1.6666665459e-1f) * r + 5.0000001201e-1f) * r2 + r + 1.0f;
    /* 2^n as two normal powers 2^n1 * 2^n2 (n in [-159, 145]): the last product rounds once */
    int32_t n1 = ni / 2, n2 = ni - n1;
    float s1 = fnn_u2f((uint32_t)(n1 + 127) << 23), s2 = fnn_u2f((uint32_t)(n2 + 127) << 23);
    return p * s1 * s2;
}

/* natural log: log(+-0) = -inf, log(x < 0) = nan, log(inf) = inf, denormals exact in exponent */
FNN_MATH float fnn_logf(float x) {
    /* scale denormals by 2^23 into the normal range */
    int tiny = x < 1.17549435e-38f;
    float xs = fnn_sel(tiny, x * 8388608.0f, x);
    /* split xs = 2^k m with m in [sqrt(1/2), sqrt(2)): offset the bits by those of sqrt(1/2) */
    uint32_t ix = fnn_f2u(xs) - 0x3f3504f3u;
    int32_t k = (int32_t)ix >> 23;
    float m = fnn_u2f((ix & 0x007fffffu) + 0x3f3504f3u);
    float e = (float)(k - (tiny ? 23 : 0));
    float f = m - 1.0f, z = f * f;
    float y = ((((((((7.0376836292e-2f * f - 1.1514610310e-1f) * f + 1.1676998740e-1f) * f - 1.2420140846e-1f) * f
                  + 1.4249322787e-1f) * f - 1.6668057665e-1f) * f + 2.0000714765e-1f) * f - 2.4999993993e-1f) * f
              + 3.3333331174e-1f) * f * z;
    /* ln2 split as in fnn_expf, small part first */
    y = y + e * -2.12194440e-4f;
    y = y - 0.5f * z;
    float r = (f + y) + e * 0.693359375f;
    /* nan for x < 0 and nan; & rather than &&, which would be a branch */
    return fnn_sel((x > 0) & (x < FNN_INFF), r, fnn_sel(x == 0, -FNN_INFF, fnn_sel(x == FNN_INFF, x, FNN_NANF)));
}

/* log(1 + x), accurate for tiny x */
FNN_MATH float fnn_log1pf(float x) {
    float u = 1.0f + x;
    /* the rounding error of 1 + x, to first order: log(u + d) = log(u) + d/u */
    float c = (x - (u - 1.0f)) / u;
    float r = fnn_logf(u) + c;
    return fnn_sel(x == FNN_INFF, x, r);
}

/* tanh: odd, +-1 beyond |x| = 9.01, exact sign of zero */
FNN_MATH float fnn_tanhf(float x) {
    float a = fnn_absf(x), z = a * a;
    /* near 0: x + x^3 P(x^2), no cancellation */
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z
                    + 1.33314422036e-1f) * z - 3.33332819422e-1f) * z * a + a;
    /* elsewhere 1 - 2/(e^2a + 1): e^2a overflows to inf for large a, giving exactly 1 */
    float big = 1.0f - 2.0f / (fnn_expf(2.0f * a) + 1.0f);
    return fnn_signf(fnn_sel(a < 0.625f, small, big), x);
}

/* 1 / (1 + e^-x), computed from e^-|x| so nothing overflows; tiny results keep their precision */
FNN_MATH float fnn_sigmoidf(float x) {
    float e = fnn_expf(-fnn_absf(x));
    return fnn_sel(x >= 0, 1.0f, e) / (1.0f + e);
}

/* erf(x) given e = e^(-x^2), for callers that need e as well (gelu's gradient): |x| < 1 from the
 * polynomial, beyond from e; the same values as fnn_erff */
FNN_MATH float fnn_erff_with(float x, float e) {
    float a = fnn_absf(x);
    a = fnn_sel(a > 4.0f, 4.0f, a); /* erf(4) rounds to 1 (nan passes); e beyond it only shrinks */
    /* |x| < 1: erf(x) = x + x P(x^2), adding x last keeps the rounding of P small */
    float u = a * a;
    float small = ((((((7.853861461626366e-05f * u - 8.010193705558777e-04f) * u + 5.188327748328447e-03f) * u
                      - 2.6853812858462334e-02f) * u + 1.128358542919159e-01f) * u - 3.761262595653534e-01f) * u
                   + 1.2837916612625122e-01f) * a + a;
    /* 1 <= |x| <= 4: erfc(x) = e^(-x^2) R(1/x) */
    float t = 1.0f / a;
    float R = (((((2.5378325954079628e-02f * t - 1.3875170052051544e-01f) * t + 3.086557686328888e-01f) * t
                 - 3.099701404571533e-01f) * t - 3.3942483365535736e-02f) * t + 5.778751373291016e-01f) * t
              - 1.6613201005384326e-03f;
    float big = 1.0f - e * R;
    return fnn_signf(fnn_sel(a < 1.0f, small, big), x);
}

/* erf: odd, +-1 beyond |x| = 3.92; absolute error below 8e-8 */
FNN_MATH float fnn_erff(float x) {
    float a = fnn_absf(x);
    a = fnn_sel(a > 4.0f, 4.0f, a);
    return fnn_erff_with(x, fnn_expf(-(a * a)));
}

#endif
