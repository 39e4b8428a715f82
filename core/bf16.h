/* bfloat16: the top half of a float32 (8 exponent bits, 7 mantissa bits). Converting rounds to
 * nearest, ties to even (PyTorch's c10::BFloat16 and oneDNN's reorders do the same); a NaN stays a
 * NaN (quieted), infinities stay infinities, and a finite value past bf16's largest rounds to inf.
 * Written once here for the compute layer (core/precision.c, core/blas.c), the CPU's casts
 * (core/ops/int64.c) and the GPU's (cuda/cast.cu; the host emulation compiles the same). */
#ifndef FASTNN_BF16_H
#define FASTNN_BF16_H
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define FNN_BF16_FN static __host__ __device__ __forceinline__
#else
#define FNN_BF16_FN static inline
#endif

FNN_BF16_FN uint16_t fnn_bf16_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                   /* ties to even */
    /* a NaN stays one (quieted); a select, not a branch, so loops over arrays vectorize */
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x0040u : rounded);
}

FNN_BF16_FN float fnn_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* f rounded to the nearest bfloat16, as a float32: fnn_bf16_to_f32(fnn_bf16_from_f32(f)) bit for bit,
 * computed in 32-bit lanes (no narrowing to 16 bits and back, half the vector work in the GEMMs'
 * operand rounding). The sum may wrap only for u >= 0xffff8000, a NaN, which takes the other side */
FNN_BF16_FN float fnn_bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    uint32_t r = (u & 0x7fffffffu) > 0x7f800000u ? (u & 0xffff0000u) | 0x00400000u : rounded;
    float out;
    memcpy(&out, &r, sizeof out);
    return out;
}

#endif
