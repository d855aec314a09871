// Monte Carlo pi: grid-stride over Philox4x32-10 calls (two samples each), per-thread 64-bit hit counts, a block
// sum per block (monte_carlo_pi_partial), then one block adds the partials (monte_carlo_pi_final). No samples are
// stored. Counts are exact integers, so every backend gives the same hits for the same (n, seed).
#include "../common/gpuws_cuda.cuh"

namespace {

constexpr unsigned M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;

// x^2 + y^2 < 1 for x = (rx >> 8) * 2^-24, y = (ry >> 8) * 2^-24, exactly: two 32x32->64 multiply-adds.
// (A float test with this exact one as a fallback near the circle was slower on the H100, 0.265 against 0.235 ms
// for 10^8 samples on 2026-11-21: the int-to-float conversions cost more than the multiplies they saved.)
__device__ __forceinline__ unsigned inside(unsigned rx, unsigned ry)
{
    const unsigned a = rx >> 8, b = ry >> 8;
    return (unsigned long long)a * a + (unsigned long long)b * b < (1ull << 48);
}

} // namespace

// Philox4x32-10 of counter (c0, c1, 0, 0) and key (k0, k1): out[0..3].
__device__ __forceinline__ void philox(unsigned long long j, unsigned k0, unsigned k1, unsigned (&out)[4])
{
    unsigned c0 = (unsigned)j, c1 = (unsigned)(j >> 32), c2 = 0, c3 = 0;
#pragma unroll
    for (int r = 0; r < 10; r++) {
        const unsigned long long p0 = (unsigned long long)M0 * c0, p1 = (unsigned long long)M1 * c2;
        const unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0, n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (unsigned)p1;
        c2 = n2;
        c3 = (unsigned)p0;
        k0 += W0;
        k1 += W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

// Samples first..last (inclusive); Philox call j gives samples 2j and 2j + 1, so the calls first/2..last/2 are
// made and the two end calls may contribute one sample only. Each thread makes two calls per step of its
// grid-stride loop (j and j + stride): a Philox call is a chain of ten dependent rounds, and two independent
// chains keep the multipliers busy where one leaves them waiting on the previous round (bench/NOTES.md).
extern "C" __global__ void monte_carlo_pi_partial(unsigned long long *partials, unsigned long long first,
                                                  unsigned long long last, unsigned key0, unsigned key1,
                                                  gpuws_local scratch)
{
    (void)scratch;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x, jlast = last / 2;
    unsigned long long hits = 0;
    for (unsigned long long j = first / 2 + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j <= jlast;
         j += 2 * stride) {
        const unsigned long long j2 = j + stride;
        unsigned u[4], v[4];
        philox(j, key0, key1, u);
        philox(j2, key0, key1, v);
        hits += (2 * j >= first ? inside(u[0], u[1]) : 0u) + (2 * j + 1 <= last ? inside(u[2], u[3]) : 0u);
        if (j2 <= jlast) hits += inside(v[0], v[1]) + (2 * j2 + 1 <= last ? inside(v[2], v[3]) : 0u);
    }
    const unsigned long long total = gpuws_block_sum(hits);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

extern "C" __global__ void monte_carlo_pi_final(const unsigned long long *partials, unsigned long long *hits,
                                                unsigned count, gpuws_local scratch)
{
    (void)scratch;
    unsigned long long s = 0;
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
    s = gpuws_block_sum(s);
    if (threadIdx.x == 0) hits[0] = s;
}

GPUWS_CUDA_KERNELS(monte_carlo_pi, GPUWS_CUDA_KERNEL(monte_carlo_pi_partial), GPUWS_CUDA_KERNEL(monte_carlo_pi_final))
