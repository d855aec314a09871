/* Scalar references: the tests' oracle and the CPU backend's implementation. */
#include "primes_ref.h"

#include "../../core/alloc.h" /* gpuws__malloc: allocations the fault tests can fail */

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t gpuws_primes_isqrt(uint64_t x)
{
    uint64_t r = (uint64_t)sqrt((double)x);
    while (r * r > x) r--;
    while ((r + 1) * (r + 1) <= x) r++;
    return r;
}

int gpuws_primes_ref_sieve(int32_t *out, size_t n, uint64_t *count)
{
    /* composite[j] describes the odd number 2j + 1 */
    size_t half = n / 2 + 1;
    unsigned char *composite = gpuws__calloc(half, 1);
    if (!composite) return -1;
    for (size_t p = 3; p * p < n; p += 2)
        if (!composite[p / 2])
            for (size_t m = p * p; m < n; m += 2 * p) composite[m / 2] = 1;
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++) {
        int prime = i == 2 || (i > 2 && (i & 1) && !composite[i / 2]);
        c += (uint64_t)prime;
        if (out) out[i] = prime ? (int32_t)i : 0;
    }
    gpuws__free(composite);
    *count = c;
    return 0;
}

void gpuws_primes_ref_trial(int32_t *out, size_t n, uint64_t *count)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++) {
        /* check_prime_gpu_kernel: result = num; for i in range(2, num // 2 + 1): if num % i == 0: result = 0; break */
        int32_t num = (int32_t)i, result = num;
        for (int32_t d = 2; d <= num / 2; d++) {
            if (num % d == 0) {
                result = 0;
                break;
            }
        }
        if (num < 2) result = 0; /* gpuws: 0 and 1 are not prime */
        c += result != 0;
        if (out) out[i] = result;
    }
    *count = c;
}
