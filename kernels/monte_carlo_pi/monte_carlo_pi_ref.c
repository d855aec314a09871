/* Scalar reference: the tests' oracle and the CPU backend's implementation. */
#include "monte_carlo_pi_ref.h"

#include "philox.h"

void gpuws_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    gpuws__philox(counter[0], counter[1], counter[2], counter[3], key[0], key[1], out);
}

uint64_t gpuws_monte_carlo_pi_ref(uint64_t first, uint64_t n, uint64_t seed)
{
    const uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    uint64_t hits = 0;
    if (n == 0) return 0;
    const uint64_t last = first + n - 1; /* one Philox call per pair of samples 2j, 2j + 1 */
    for (uint64_t j = first / 2; j <= last / 2; j++) {
        const uint32_t ctr[4] = { (uint32_t)j, (uint32_t)(j >> 32), 0, 0 };
        uint32_t r[4];
        gpuws_philox4x32_10(ctr, key, r);
        if (2 * j >= first) hits += gpuws__pi_inside(r[0], r[1]);
        if (2 * j + 1 <= last) hits += gpuws__pi_inside(r[2], r[3]);
    }
    return hits;
}
