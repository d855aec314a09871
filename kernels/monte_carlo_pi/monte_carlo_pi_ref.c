/* Scalar reference: the tests' oracle and the CPU backend's implementation. */
#include "monte_carlo_pi_ref.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void gpuws_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3], k0 = key[0], k1 = key[1];
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

static int inside(uint32_t rx, uint32_t ry)
{
    const uint64_t a = rx >> 8, b = ry >> 8; /* x = a * 2^-24, y = b * 2^-24 */
    return a * a + b * b < ((uint64_t)1 << 48);
}

uint64_t gpuws_monte_carlo_pi_ref(uint64_t first, uint64_t n, uint64_t seed)
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint64_t hits = 0;
    if (n == 0) return 0;
    const uint64_t last = first + n - 1; /* one Philox call per pair of samples 2j, 2j + 1 */
    for (uint64_t j = first / 2; j <= last / 2; j++) {
        const uint32_t ctr[4] = {(uint32_t)j, (uint32_t)(j >> 32), 0, 0};
        uint32_t r[4];
        gpuws_philox4x32_10(ctr, key, r);
        if (2 * j >= first) hits += (uint64_t)inside(r[0], r[1]);
        if (2 * j + 1 <= last) hits += (uint64_t)inside(r[2], r[3]);
    }
    return hits;
}
