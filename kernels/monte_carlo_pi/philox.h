/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the quarter-circle test,
 * one definition for the scalar reference (C) and the CUDA kernel (C++): the reference's known-answer test (Random123's
 * vectors, tests/test_monte_carlo_pi.c) then covers both. monte_carlo_pi.cl writes the rounds with OpenCL's mul_hi
 * and the same constants (philox_constants.h); the tests compare its hit counts with the reference's, bit for bit. */
#ifndef GPUWS_PHILOX_H
#define GPUWS_PHILOX_H
#include "philox_constants.h"

#include <stdint.h>

#ifdef __CUDACC__
#define GPUWS_PHILOX_FN static __host__ __device__ __forceinline__
#else
#define GPUWS_PHILOX_FN static inline
#endif

/* out = Philox4x32-10 of counter (c0, c1, c2, c3) under key (k0, k1) */
GPUWS_PHILOX_FN void gpuws__philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                                   uint32_t out[4])
{
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int r = 0; r < 10; r++) {
        const uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* 1 when x^2 + y^2 < 1 for x = (rx >> 8) * 2^-24, y = (ry >> 8) * 2^-24, decided exactly in integers: two 32x32->64
 * multiply-adds. (A float test with this one as a fallback near the circle is slower: the int-to-float conversions
 * cost more than the multiplies they save.) */
GPUWS_PHILOX_FN uint32_t gpuws__pi_inside(uint32_t rx, uint32_t ry)
{
    const uint32_t a = rx >> 8, b = ry >> 8;
    return (uint64_t)a * a + (uint64_t)b * b < ((uint64_t)1 << 48);
}

#ifdef __CUDACC__
/* The same test as gpuws__pi_inside, on the FP64 pipe instead of the integer multiplier (which the Philox rounds
 * keep busy): a = rx >> 8 and b = ry >> 8 (< 2^24) become doubles exactly (2^52 + a is built from its bits, then
 * 2^52 subtracted), a*a and b*b (< 2^48) and their sum (< 2^49) are exact in a double, so the comparison with 2^48
 * is the integer one, bit for bit, and the kernel runs faster with the integer pipe left to Philox. */
static __device__ __forceinline__ uint32_t gpuws__pi_inside_f64(uint32_t rx, uint32_t ry)
{
    const double two52 = 4503599627370496.0, two48 = 281474976710656.0;
    const double x = __hiloint2double(0x43300000, (int)(rx >> 8)) - two52;
    const double y = __hiloint2double(0x43300000, (int)(ry >> 8)) - two52;
    return fma(x, x, y * y) < two48;
}
#endif

#endif
