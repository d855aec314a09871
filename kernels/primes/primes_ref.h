#ifndef GPUWS_PRIMES_REF_H
#define GPUWS_PRIMES_REF_H
#include <stddef.h>
#include <stdint.h>
/* out[i] = i if i is prime else 0 for i < n (out may be NULL); *count = primes below n.
 * sieve: odd-only sieve of Eratosthenes (the oracle). Returns 0, or -1 when its n/2-byte table cannot be allocated.
 * trial: the workshop's algorithm, literally (trial division by 2..num/2); only for small n. */
int gpuws_primes_ref_sieve(int32_t *out, size_t n, uint64_t *count);
void gpuws_primes_ref_trial(int32_t *out, size_t n, uint64_t *count);
/* floor(sqrt(x)) exactly, for x < 2^62. */
uint64_t gpuws_primes_isqrt(uint64_t x);
#endif
