/* κ-σ clipping, scalar reference: the tests' oracle and the CPU backend's implementation. */
#ifndef GPUWS_SIGMA_CLIP_REF_H
#define GPUWS_SIGMA_CLIP_REF_H

#include "gpuws.h"
#include "gpuws/algorithms.h"

#include <stdint.h>
#include <string.h>

/* Order-preserving map of f32 bit patterns to uint32 (the radix-select keys of the GPU kernels): for non-NaN a < b
 * implies key(a) < key(b); -0.0 sits just below +0.0; NaNs with the sign bit clear land above key(+inf), those
 * with it set below key(-inf), so the kept interval [key(-inf), key(+inf)] never holds a NaN. */
static inline uint32_t gpuws_sigma_clip_key(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static inline float gpuws_sigma_clip_unkey(uint32_t k)
{
    uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The NumPy loop on the non-NaN values, literally: sort once (by key), then repeat { median, mean and population
 * std of the kept range (f64, compensated sums); keep values v with (double)v > m - κs and (double)v < m + κs }
 * until nothing is removed or max_iterations passes were made; the result describes the final kept set.
 * Returns GPUWS_OK, GPUWS_ERR_INVALID_ARGUMENT when no value is non-NaN (n == 0 included), or
 * GPUWS_ERR_OUT_OF_MEMORY (it needs n floats of temporary memory). Writes *r only on success. */
gpuws_status gpuws_sigma_clip_ref(const float *x, size_t n, double kappa, int max_iterations,
                                  gpuws_sigma_clip_result *r);

/* Statistics of sorted f32 values v[0..m): NumPy's median (mean of the two middle values for even m), mean and
 * population std, each NaN when m == 0. Exposed for the tests. */
void gpuws_sigma_clip_ref_stats(const float *v, size_t m, double *median, double *mean, double *std);

#endif
