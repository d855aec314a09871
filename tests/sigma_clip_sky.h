/* The κσ suites' synthetic data (test_sigma_clip, test_sigma_clip_parts). */
#ifndef GPUWS_TEST_SIGMA_CLIP_SKY_H
#define GPUWS_TEST_SIGMA_CLIP_SKY_H

#include "support.h"

#include <math.h>
#include <stdlib.h>

static inline double sky_gauss(uint64_t *s)
{
    double u1 = test_rand_uniform(s), u2 = test_rand_uniform(s);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

/* A radio sky of n values: noise (σ = 1e-3) around `offset`, `sources` bright point sources, a NaN every
 * `nan_every` values (0: none). malloc'd, with room for one more float. */
static inline float *make_sky(size_t n, uint64_t seed, double offset, size_t sources, size_t nan_every)
{
    float *x = malloc(n * sizeof *x + 4);
    cr_assert(x);
    for (size_t i = 0; i < n; i++) x[i] = (float)(offset + 1e-3 * sky_gauss(&seed));
    for (size_t j = 0; j < sources && n; j++)
        x[test_rand_u64(&seed) % n] += (float)(0.005 + 0.5 * test_rand_uniform(&seed));
    if (nan_every)
        for (size_t i = 0; i < n; i += nan_every) x[i] = NAN;
    return x;
}

#endif
