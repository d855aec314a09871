#ifndef GPUWS_MONTE_CARLO_PI_REF_H
#define GPUWS_MONTE_CARLO_PI_REF_H
#include <stdint.h>
/* Philox4x32-10 (Random123): out = bijection of counter under key. */
void gpuws_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);
/* Samples k in [first, first + n) inside the quarter circle (see gpuws/algorithms/monte_carlo_pi.h). */
uint64_t gpuws_monte_carlo_pi_ref(uint64_t first, uint64_t n, uint64_t seed);
#endif
